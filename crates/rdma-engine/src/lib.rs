//! The correlation engine: a pure state machine over events.
//!
//! No clock, no I/O, no terminal: time arrives inside events, so replaying a
//! capture always gives the same result, and the TUI, the reports and the
//! tests share one implementation.
//!
//! ```text
//!  Event::Frame ──► stack::dissect (wire/frame.rs) ──► CM MAD? ──► connections (wire/conn.rs)
//!                                 └──► BTH ──┬─ SEND ──► reassembly ──► RPC-over-RDMA message (wire/call.rs)
//!                                            ├─ RDMA WRITE / READ ──► chunk segments (wire/rdma.rs, wire/transfer.rs)
//!                                            └─ ACK / NAK ──► anomalies
//!  Event::Probe ──► kernel/ ──► transactions as the client's or the server's kernel saw them
//!  Event::End ──► unanswered calls
//! ```
//!
//! `keys`, `model`, `fill`, `histogram`, `anomaly`, `cm` and `kernel/event` are
//! leaves that `wire/` and `kernel/` share; neither of those two imports
//! the other. Inside `wire/`, the `impl Engine` files share `wire/state` and
//! the parts that own their state (see `wire/mod.rs`). `checks/` judges
//! (pure functions of the facts `wire/` gathers); `findings` stamps and
//! counts what they and the kernel correlator find. This file coordinates:
//! the public types and the dispatch of each event.
//!
//! Output comes two ways: [`Finding`]s (completed transactions and
//! anomalies) pushed to the caller's vector as they happen, and aggregate
//! [`State`] (connections, counters, credit series) read at any time.
//! Every table is capped by [`Config`]; what a cap pushes out is counted in
//! [`Evictions`] and reported as a `state_evicted` anomaly, never dropped silently.

pub mod anomaly;
pub mod budget;
mod checks;
mod cm;
pub mod collapse;
mod config;
pub mod device_counters;
mod fill;
mod findings;
pub mod guide;
pub mod histogram;
pub mod kernel;
pub mod keys;
mod merge;
pub mod model;
pub mod mountstats;
mod nfsio;
mod wire;

use std::collections::BTreeMap;

pub use anomaly::{Anomaly, Kind, Repeated, Repeats, Severity};
pub use budget::{Limits, DEFAULT_MEMORY_LIMIT};
pub use collapse::{Collapser, Key as CollapseKey};
pub use config::Config;
pub use guide::{AtFault, Guide, Harm};
pub use histogram::LogLinear;
use keys::ConnIds;
pub use keys::{Addr, ConnId, Origin, QpKey};
pub use merge::MergeConfig;
pub use model::{
    CallHeader, Carries, ChunkKind, CmEvent, CmMsg, CmState, Congestion, Connection, CreditPoint,
    IrdOrd, KernelTimes, LadderStep, Phases, Role, SegmentUse, StepWhat, Transaction, Transfer,
};
pub use nfsio::{asks_for_retry, FileHandle, NfsIo, Stable, RECENT_ERRORS, RETRY_WINDOW_NS};
pub use rdma_dissectors::frame::Frame;
#[doc(hidden)]
pub use wire::tcp::fuzz_tcp_stream;

/// Why the calls still outstanding at the end got no reply.
const CAPTURE_ENDED: &str = "the capture ended before a reply";

/// What the engine consumes.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// A captured frame; its `icrc`, when a source already checked it (on
    /// another thread), is not verified again.
    Frame(Frame<'a>),
    /// A kernel probe record (live mode with `--probes`): correlated into
    /// transactions of the client's or the server's kernel
    /// ([`Origin`]), alongside those of the wire.
    Probe(&'a kernel::event::Probe),
    /// Time passes without traffic (live mode): ns since the epoch.
    Tick(u64),
    /// The source is exhausted: close out what is still open.
    End,
}

/// What the engine reports as it goes.
#[derive(Debug, Clone)]
pub enum Finding {
    /// A transaction completed (or was closed out unanswered).
    Transaction(Box<Transaction>),
    /// An anomaly.
    Anomaly(Box<Anomaly>),
}

/// What the caps pushed out.
#[derive(Debug, Clone, Copy, Default)]
pub struct Evictions {
    /// Connections dropped to stay under `max_connections`.
    pub connections: u64,
    /// Queue pairs forgotten to stay under `max_qps`.
    pub qps: u64,
    /// Outstanding calls dropped to stay under `max_outstanding`.
    pub calls: u64,
    /// RDMA Read requests dropped to stay under `max_reads`.
    pub reads: u64,
    /// Bytes of long Sends not kept beyond `max_message_prefix`.
    pub truncated_messages: u64,
    /// Calls answered NFS3ERR_JUKEBOX / NFS4ERR_DELAY forgotten (the
    /// oldest, beyond the 256 remembered at once) before a retry was seen:
    /// a retry of one of them is not linked (`retry_of_xid`).
    pub nfs_errors_unlinked: u64,
}

/// Frames the analyzer recognised as RDMA traffic it cannot decode yet: a
/// capture of them must not read as a clean, empty one. Bounded: three
/// counters and the last port seen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NotDecoded {
    /// TCP frames to or from port 20049, where iWARP carries NFS/RDMA.
    pub tcp_20049: u64,
    /// TCP frames that open an MPA connection ("MPA ID Req Frame",
    /// "MPA ID Rep Frame"): iWARP on any port.
    pub mpa_setup: u64,
    /// UDP frames to a port other than the configured RoCEv2 one whose
    /// payload is a RoCEv2 packet with a valid ICRC.
    pub rocev2_other_port: u64,
    /// The UDP destination port of the last of those.
    pub rocev2_port: Option<u16>,
}

impl NotDecoded {
    /// Nothing recognised.
    pub fn is_empty(&self) -> bool {
        *self == NotDecoded::default()
    }
}

/// What the iWARP streams carried (RFC 5044, 5041, 5040): counted as the
/// stream layer delivered it, so that tshark's counts can check them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IwarpCounts {
    /// TCP frames of iWARP connections (setup, data and acknowledgements).
    pub frames: u64,
    /// MPA Requests.
    pub mpa_requests: u64,
    /// MPA Replies (rejects included).
    pub mpa_replies: u64,
    /// MPA Replies with the Reject flag.
    pub mpa_rejects: u64,
    /// FPDUs delivered.
    pub fpdus: u64,
    /// FPDUs whose CRC32c did not match.
    pub crc_invalid: u64,
    /// DDP segments, tagged and untagged.
    pub ddp_tagged_segments: u64,
    /// See `ddp_tagged_segments`.
    pub ddp_untagged_segments: u64,
    /// DDP segments by RDMAP opcode (RFC 5040 table 2, by its 4-bit value).
    pub segments: [u64; 8],
    /// RDMAP messages (segments with the L bit) by opcode.
    pub messages: [u64; 8],
    /// Holes in the streams: stream octets the capture lacks (lost
    /// segments, snap lengths), and how many; what fell in them is unknown
    /// and the checks that needed it were skipped.
    pub gaps: u64,
    /// See `gaps`.
    pub gap_bytes: u64,
    /// Times framing was found again after a hole or a mid-stream start,
    /// and of those, by FPDU plausibility alone (not certain).
    pub resyncs: u64,
    /// See `resyncs`.
    pub resyncs_uncertain: u64,
    /// Captured stream octets passed over before framing was found again
    /// (a capture that began mid-FPDU, what followed a hole).
    pub resync_skipped_bytes: u64,
}

/// Capture-wide counters.
#[derive(Debug, Clone, Default)]
pub struct Totals {
    /// Frames seen.
    pub frames: u64,
    /// Frames recognised as RDMA traffic this version cannot decode.
    pub not_decoded: NotDecoded,
    /// Bytes seen (captured).
    pub bytes: u64,
    /// Frames with a BTH (RoCE or InfiniBand), and TCP frames of iWARP
    /// flows (opened by an MPA frame, or to or from port 20049).
    pub rdma_frames: u64,
    /// CM MADs seen.
    pub cm_messages: u64,
    /// RPC-over-RDMA messages decoded.
    pub rpcrdma_messages: u64,
    /// Calls seen.
    pub calls: u64,
    /// Replies matched to calls.
    pub replies: u64,
    /// Frames on queue pairs no connection could be found for.
    pub unassociated_frames: u64,
    /// Retransmitted request packets (PSN seen again).
    pub retransmissions: u64,
    /// PSN gaps (packets the capture missed).
    pub psn_gaps: u64,
    /// ICRC: frames verified good.
    pub icrc_valid: u64,
    /// ICRC: frames verified bad.
    pub icrc_invalid: u64,
    /// ICRC: frames that could not be checked (cut by snaplen).
    pub icrc_unchecked: u64,
    /// Frames the capture's snap length cut: their ICRC is not checked, and
    /// what they carried past the cut (chunk lists, RPC and NFS, the rest
    /// of a CM message) is not known.
    pub cut_frames: u64,
    /// Of those, frames cut inside their transport headers (BTH and its
    /// extension headers): they are in no queue pair's PSN sequence, so
    /// the PSN gaps they leave are counted and ACK checks past them skipped.
    pub headers_cut: u64,
    /// Bytes moved by RDMA Read and Write that matched a chunk segment.
    pub chunk_bytes: u64,
    /// Replies whose transaction's chunk lists a snap length cut: their
    /// bytes are not in `chunk_bytes`, which is then a lower bound.
    pub chunk_bytes_cut: u64,
    /// Replies sent with Send With Invalidate.
    pub remote_invalidations: u64,
    /// Frames carrying a congestion signal (IP ECN CE, a CNP, BTH FECN or
    /// BECN), whether or not their connection is known (each connection
    /// counts its own in `Connection::congestion`).
    pub congestion_frames: u64,
    /// Kernel probe records handled.
    pub probe_records: u64,
    /// Transactions the probes completed (both sides).
    pub probe_transactions: u64,
    /// What the iWARP streams carried.
    pub iwarp: IwarpCounts,
    /// Time of the first frame (ns since the epoch); `None` before it.
    pub first_ts_ns: Option<u64>,
    /// The latest time seen (frames, live ticks); `None` before any.
    pub last_ts_ns: Option<u64>,
}

impl Totals {
    /// From the first frame to the latest time seen, ns (0 before any).
    pub fn span_ns(&self) -> u64 {
        match (self.first_ts_ns, self.last_ts_ns) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => 0,
        }
    }

    /// Every RDMA frame was iWARP's: the BTH's counters (ICRC, PSN gaps,
    /// retransmissions) did not apply to any, and their zeros mean nothing.
    pub fn iwarp_only(&self) -> bool {
        self.iwarp.frames > 0 && self.rdma_frames == self.iwarp.frames
    }

    fn saw(&mut self, ts: u64) {
        self.last_ts_ns = Some(self.last_ts_ns.map_or(ts, |l| l.max(ts)));
    }
}

/// Everything the front ends draw.
#[derive(Debug, Clone, Default)]
pub struct State {
    /// Counters over the whole capture.
    pub totals: Totals,
    /// Connections by id (evicted ones are gone; see `evictions`).
    pub connections: BTreeMap<ConnId, Connection>,
    /// Anomalies by kind.
    pub anomaly_counts: BTreeMap<Kind, u64>,
    /// What the caps pushed out.
    pub evictions: Evictions,
}

/// The correlation engine.
pub struct Engine {
    config: Config,
    /// What the memory budget gives each table.
    limits: Limits,
    state: State,
    qps: wire::qp_table::QpTable,
    ids: ConnIds,
    conns: wire::state::Table,
    kernel: kernel::Correlator,
    /// Middle packets of RDMA Writes and Read Responses not yet added to
    /// their transactions (see [`wire::transfer::DeferredMiddle`]).
    deferred: wire::transfer::Deferred,
    /// The iWARP side: TCP streams and what their FPDUs are in the middle of.
    iwarp: wire::iwarp::Iwarp,
    /// The views waiting to be joined (`Config::merge`).
    merger: Option<merge::Merger>,
    /// Stamps and counts anomalies as they are made.
    findings: findings::Collector,
}

impl Engine {
    /// A new engine with `config`'s caps.
    pub fn new(config: Config) -> Self {
        let limits = Limits::of(&config);
        let merger = config.merge.map(|m| {
            merge::Merger::new(MergeConfig {
                max_held: m.max_held.min(limits.joins),
                ..m
            })
        });
        let kernel = kernel::Correlator::new(kernel::CorrelateConfig {
            max_outstanding: config.max_outstanding.min(limits.kernel_calls),
            max_ladder_steps: config.max_ladder_steps,
            ..kernel::CorrelateConfig::default()
        });
        Engine {
            config,
            limits,
            state: State::default(),
            qps: wire::qp_table::QpTable::default(),
            ids: ConnIds::default(),
            conns: wire::state::Table::default(),
            merger,
            kernel,
            deferred: wire::transfer::Deferred::default(),
            // A stream holds at most a partial FPDU per direction, the
            // counterpart of a Send prefix: it shares their budget.
            iwarp: wire::iwarp::Iwarp::new(limits.prefix_bytes),
            findings: findings::Collector::default(),
        }
    }

    /// The probe-side correlation (counters, CM private data the kprobes saw).
    pub fn kernel(&self) -> &kernel::Correlator {
        &self.kernel
    }

    /// The aggregate state (connections, counters).
    pub fn state(&self) -> &State {
        &self.state
    }

    /// What the memory budget gives each table.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Bytes the engine's tables hold now, as the budget counts them.
    pub fn memory_used(&self) -> usize {
        wire::cost::connections_bytes(&self.state.connections)
            + self.qps.bytes()
            + self.conns.bytes()
            + self.iwarp.bytes()
            + self.kernel.bytes()
            + self.merger.as_ref().map_or(0, merge::Merger::bytes)
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Calls outstanding right now, over all connections.
    pub fn outstanding_calls(&self) -> usize {
        self.conns.outstanding()
    }

    /// Queue pairs tracked right now (at most `max_qps`).
    pub fn tracked_qps(&self) -> usize {
        self.qps.len()
    }

    /// Consumes one event; findings are appended to `out`.
    pub fn handle(&mut self, event: Event<'_>, out: &mut Vec<Finding>) {
        let from = out.len();
        self.findings.start(event, self.state.totals.last_ts_ns);
        self.correlate(event, out);
        if self.merger.is_some() {
            self.merge(event, from, out);
        }
    }

    /// Ends the run as [`Event::End`] does, handing the findings to `emit`
    /// a connection at a time: closing thousands of connections with their
    /// outstanding calls would otherwise hold every one of those calls
    /// twice (the table's and the findings') at the moment of the end.
    pub fn finish(&mut self, emit: &mut dyn FnMut(Finding)) {
        let mut out = Vec::new();
        self.flush_deferred();
        self.findings
            .start(Event::End, self.state.totals.last_ts_ns);
        for id in self.conns.ids() {
            self.close_out(id, CAPTURE_ENDED, false, &mut out);
            if self.merger.is_some() {
                self.merge_found(0, &mut out);
            }
            out.drain(..).for_each(&mut *emit);
        }
        self.handle(Event::End, &mut out);
        out.into_iter().for_each(emit);
    }

    /// Live mode with probes: the transactions `event` completed wait for
    /// their other views; those whose window has passed go out.
    #[cold]
    fn merge(&mut self, event: Event<'_>, from: usize, out: &mut Vec<Finding>) {
        // The window runs on the live source's ticks alone: frames and
        // probe records carry the clocks of their sources (the capture's,
        // each kernel's, corrected by an offset measured once), and one
        // record stamped far ahead would close every window at once.
        if let (Event::Tick(ts_ns), Some(m)) = (event, self.merger.as_mut()) {
            m.advance(ts_ns);
        }
        match (event, self.merger.as_mut()) {
            (Event::Frame(f), Some(m)) => m.saw(true, f.ts_ns),
            (Event::Probe(p), Some(m)) => m.saw(false, p.meta.ts_ns),
            _ => {}
        }
        self.merge_found(from, out);
        let Some(m) = self.merger.as_mut() else {
            return;
        };
        let kernel = &self.kernel;
        match event {
            Event::End => m.drain(out),
            Event::Tick(_) => m.expire(out, |k| !k.backchannel && kernel.holds_answered(k.xid.0)),
            Event::Probe(_) | Event::Frame(_) => {}
        }
    }

    /// The transactions found since `from` wait for their other views.
    fn merge_found(&mut self, from: usize, out: &mut Vec<Finding>) {
        let Some(m) = self.merger.as_mut() else {
            return;
        };
        if out.len() > from {
            let found: Vec<Finding> = out.drain(from..).collect();
            for f in found {
                match f {
                    Finding::Transaction(t) => m.add(t, out),
                    Finding::Anomaly(_) => out.push(f),
                }
            }
        }
    }

    fn correlate(&mut self, event: Event<'_>, out: &mut Vec<Finding>) {
        if !matches!(event, Event::Frame(_)) {
            self.flush_deferred();
        }
        match event {
            Event::Frame(f) => self.frame(&f, out),
            Event::Probe(p) => {
                self.state.totals.probe_records += 1;
                let (kernel, ids, mut sink) = self.kernel_sink(out);
                kernel.handle(ids, p, &mut sink);
            }
            Event::Tick(ts) => {
                self.state.totals.saw(ts);
                let (kernel, ids, mut sink) = self.kernel_sink(out);
                kernel.tick(ids, ts, &mut sink);
            }
            Event::End => {
                self.end(out);
                let (kernel, ids, mut sink) = self.kernel_sink(out);
                kernel.end(ids, &mut sink);
            }
        }
    }

    /// The kernel correlator, the ids it labels connections with, and where
    /// its findings go: out, stamped and counted as they are made.
    fn kernel_sink<'a>(
        &'a mut self,
        out: &'a mut Vec<Finding>,
    ) -> (
        &'a mut kernel::Correlator,
        &'a mut ConnIds,
        findings::Sink<'a>,
    ) {
        let sink = findings::Sink {
            out,
            state: &mut self.state,
            collector: self.findings,
        };
        (&mut self.kernel, &mut self.ids, sink)
    }

    fn end(&mut self, out: &mut Vec<Finding>) {
        // Also what `finish` leaves: connections whose calls it has
        // already closed out have none left.
        let ids: Vec<ConnId> = self.conns.ids();
        for id in ids {
            self.close_out(id, CAPTURE_ENDED, false, out);
        }
        // Calls of torn-down connections that were never sent again.
        while let Some(p) = self.conns.parked.oldest() {
            self.unanswered(p.txn, &p.why, p.at, out);
        }
    }
}
