//! The diagnosis: from the engine's findings to the causes a user chases
//! ("why is this mount slow, which peer do I fix, and how?"), ranked by
//! what each cost. Pure: it reads findings as they come, in bounded memory
//! (counters, a fixed histogram and a few capped examples per cause), and
//! the engine's final state (connections, totals); it does no I/O and
//! imports nothing but the engine, so every front end can use it.
//!
//! Each rule, its threshold and how its impact is measured are documented
//! in `docs/diagnosis.md`; a healthy capture gets no cause at all.

mod kernel;
mod rules;
pub mod timeline;
pub mod window;

use std::collections::BTreeMap;

use serde::Serialize;

pub use kernel::KernelView;
pub use window::Window;

use crate::engine::{Anomaly, ConnId, Finding, Kind, LogLinear, State, Transaction, Transfer};

/// Examples kept per cause (XIDs, frames, sentences): enough to go and
/// look, bounded whatever the capture's size.
const EXAMPLES: usize = 5;

/// (NFS status, operation) pairs counted apart for `nfs_errors`; replies
/// beyond them are still counted in the total.
const NFS_PAIRS: usize = 32;

/// The causes the diagnosis can name. The names are a stable interface.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum CauseName {
    /// Application-visible time lost across a disconnection.
    ReconnectStall,
    /// The server held the calls: from the call's data in its hands to its first reply data.
    ServerTime,
    /// The credit window ran full: calls waited for a credit.
    CreditWindowFull,
    /// Packets lost and sent again (RC retransmissions, PSN sequence NAKs).
    NetworkLoss,
    /// Receiver-not-ready NAKs: a Send arrived before a receive buffer was posted.
    RnrRetry,
    /// Calls outstanding on a live connection, no reply.
    ServerUnresponsive,
    /// Replies (or calls) pushed into chunks by the inline threshold: an extra round trip each.
    ReplyChunksInlineThreshold,
    /// A Send larger than the receiver's negotiated inline size.
    ReceiveBufferOverrun,
    /// Local invalidations that remote invalidation would save (kernel view).
    NoRemoteInvalidation,
    /// RDMA_ERROR replies (ERR_CHUNK, ERR_VERS).
    RdmaError,
    /// RPC replies that reject the call (SYSTEM_ERR, GARBAGE_ARGS, ...).
    RpcErrors,
    /// NFS status codes other than OK.
    NfsErrors,
    /// The fabric's congestion control at work (ECN, CNP, FECN/BECN).
    Congestion,
    /// Memory registrations exhausted (kernel view).
    MrExhaustion,
}

impl CauseName {
    /// The stable name.
    pub const fn as_str(self) -> &'static str {
        match self {
            CauseName::ReconnectStall => "reconnect_stall",
            CauseName::ServerTime => "server_time",
            CauseName::CreditWindowFull => "credit_window_full",
            CauseName::NetworkLoss => "network_loss",
            CauseName::RnrRetry => "rnr_retry",
            CauseName::ServerUnresponsive => "server_unresponsive",
            CauseName::ReplyChunksInlineThreshold => "reply_chunks_inline_threshold",
            CauseName::ReceiveBufferOverrun => "receive_buffer_overrun",
            CauseName::NoRemoteInvalidation => "no_remote_invalidation",
            CauseName::RdmaError => "rdma_error",
            CauseName::RpcErrors => "rpc_errors",
            CauseName::NfsErrors => "nfs_errors",
            CauseName::Congestion => "congestion",
            CauseName::MrExhaustion => "mr_exhaustion",
        }
    }
}

/// Which peer a cause is to be fixed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Peer {
    /// The NFS client (requester).
    Client,
    /// The NFS server (responder).
    Server,
    /// The network between them.
    Fabric,
    /// The capture does not say.
    Unknown,
}

impl Peer {
    /// The stable name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Peer::Client => "client",
            Peer::Server => "server",
            Peer::Fabric => "fabric",
            Peer::Unknown => "unknown",
        }
    }
}

/// What a cause cost, as measured.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Impact {
    /// What was measured, in words, with the numbers.
    pub measured: String,
    /// Time the cause cost, ms (`null` when it is counted in RPCs, not time).
    pub time_ms: Option<f64>,
    /// That time as a share (0..1) of what it is compared with (`null` when not in time).
    pub share_of_time: Option<f64>,
    /// RPCs it affected (`null` when it is measured in time alone).
    pub rpcs_affected: Option<u64>,
    /// RPCs in the capture (operations, not transmissions).
    pub rpcs_total: u64,
    /// The ranking key: the share of time, or of RPCs affected, whichever is larger.
    pub score: f64,
}

/// Where to look: a few examples of the cause, capped.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Evidence {
    /// Connections involved (`c1`, ...).
    pub connections: Vec<String>,
    /// XIDs involved (hex), the first few.
    pub xids: Vec<String>,
    /// Frames to look at, the first few.
    pub frames: Vec<u64>,
    /// Seconds since the capture's start of the first occurrence (`null`: not known).
    pub from_s: Option<f64>,
    /// Seconds since the capture's start of the last occurrence (`null`: not known).
    pub to_s: Option<f64>,
    /// Examples in words.
    pub examples: Vec<String>,
}

/// One cause the diagnosis names.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Cause {
    /// Which cause.
    pub cause: CauseName,
    /// What it cost.
    pub impact: Impact,
    /// Which peer to fix.
    pub peer: Peer,
    /// Where to look.
    pub evidence: Evidence,
    /// What to change: the tunable, or the RFC section the peer breaks.
    pub advice: String,
}

/// A power-of-two histogram of nanoseconds: a median within a factor of
/// two is all a threshold needs, in 32 counters (the last holds 1 s and up).
#[derive(Debug, Clone, Default)]
struct Log2 {
    buckets: LogLinear<1>,
    count: u64,
}

impl Log2 {
    /// Samples from 2^30 ns (1.07 s) up share the last of the 32 buckets.
    const LARGEST: u64 = (1 << 31) - 1;

    fn record(&mut self, ns: u64) {
        self.buckets.record(ns.min(Self::LARGEST));
        self.count += 1;
    }

    fn merge(&mut self, o: &Log2) {
        self.buckets.merge(&o.buckets);
        self.count += o.count;
    }

    /// The lower bound of the bucket holding the median (`None`: no sample).
    fn median_low_ns(&self) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let b = self.buckets.bucket_of_rank(self.count.div_ceil(2))?;
        Some(LogLinear::<1>::low(b))
    }
}

/// Capped lists of examples.
#[derive(Debug, Clone, Default)]
struct Examples {
    connections: Vec<ConnId>,
    xids: Vec<u32>,
    frames: Vec<u64>,
    first_ts: Option<u64>,
    last_ts: Option<u64>,
    sentences: Vec<String>,
}

impl Examples {
    fn conn(&mut self, c: ConnId) {
        if !self.connections.contains(&c) && self.connections.len() < EXAMPLES {
            self.connections.push(c);
        }
    }
    fn xid(&mut self, x: u32) {
        if !self.xids.contains(&x) && self.xids.len() < EXAMPLES {
            self.xids.push(x);
        }
    }
    fn frames(&mut self, f: impl IntoIterator<Item = u64>) {
        for f in f {
            if self.frames.len() >= 2 * EXAMPLES {
                break;
            }
            if !self.frames.contains(&f) {
                self.frames.push(f);
            }
        }
    }
    fn at(&mut self, ts: Option<u64>) {
        if let Some(ts) = ts {
            self.first_ts = Some(self.first_ts.map_or(ts, |f| f.min(ts)));
            self.last_ts = Some(self.last_ts.map_or(ts, |l| l.max(ts)));
        }
    }
    /// Takes in another set's examples, each within this set's caps.
    fn merge(&mut self, other: &Examples) {
        for c in &other.connections {
            self.conn(*c);
        }
        for x in &other.xids {
            self.xid(*x);
        }
        self.frames(other.frames.iter().copied());
        self.at(other.first_ts);
        self.at(other.last_ts);
        for s in &other.sentences {
            self.say(|| s.clone());
        }
    }
    /// Keeps a sentence if there is room and it says something new; `make`
    /// is only called when there is room.
    fn say(&mut self, make: impl FnOnce() -> String) {
        if self.sentences.len() < EXAMPLES {
            let s = make();
            if !self.sentences.contains(&s) {
                self.sentences.push(s);
            }
        }
    }

    fn evidence(&self, start: Option<u64>) -> Evidence {
        let rel = |ts: Option<u64>| ts.zip(start).map(|(t, s)| t.saturating_sub(s) as f64 / 1e9);
        Evidence {
            connections: self.connections.iter().map(ToString::to_string).collect(),
            xids: self.xids.iter().map(|x| format!("{x:#010x}")).collect(),
            frames: self.frames.clone(),
            from_s: rel(self.first_ts),
            to_s: rel(self.last_ts),
            examples: self.sentences.clone(),
        }
    }
}

/// A counted cause: how many, how long, and examples.
#[derive(Debug, Clone, Default)]
struct Tally {
    count: u64,
    ns: u64,
    ex: Examples,
}

impl Tally {
    fn merge(&mut self, o: &Tally) {
        self.count += o.count;
        self.ns += o.ns;
        self.ex.merge(&o.ex);
    }
}

/// Unanswered calls of one connection.
#[derive(Debug, Clone, Default)]
struct Unanswered {
    count: u64,
    oldest_ts: Option<u64>,
    ex: Examples,
}

fn min_ts(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The diagnosis, built from findings in bounded memory.
#[derive(Debug, Clone, Default)]
pub struct Diagnosis {
    /// Operations (an operation sent on several connections counts once).
    ops: u64,
    /// Transmissions of them.
    transmissions: u64,
    /// Operations answered with a known latency.
    answered: u64,
    /// Sum of the application-visible latencies, ns.
    app_wait_ns: u64,
    /// Sum of the wire latencies (last transmission to reply), ns.
    wire_wait_ns: u64,
    reconnect: Tally,
    /// Server time per answered RPC (wire latency less data movement).
    server: Log2,
    server_ns: u64,
    /// Server time of the RPCs the server held at least
    /// [`rules::SERVER_SLOW_NS`] each, and how many.
    server_slow_ns: u64,
    server_slow_rpcs: u64,
    data_ns: u64,
    server_ex: Examples,
    slowest_server: Vec<(u64, u32, u64, String)>,
    retransmitted: Tally,
    /// Answered RPCs outstanding while a packet of their connection was
    /// lost, and their wire time.
    loss_rpcs: u64,
    loss_wait_ns: u64,
    loss_ex: Examples,
    psn_naks: Tally,
    rnr: Tally,
    /// Who sent the RNR NAKs (connection, address as printed), the first
    /// few: the receiver that was not ready is the peer to fix.
    rnr_senders: Vec<(ConnId, String)>,
    unanswered: BTreeMap<ConnId, Unanswered>,
    chunked: Tally,
    largest_chunked: u64,
    overrun: Tally,
    /// Of those oversized Sends, how many the client sent (calls that
    /// should have been Long Calls) and how many the server (replies that
    /// should have gone in the reply chunk): the sender is the peer to fix.
    overrun_by: (u64, u64),
    rdma_error: Tally,
    /// RDMA_ERROR findings: a reply matched to its call is also a
    /// transaction in `rdma_error`, so the larger count is the number.
    rdma_error_found: u64,
    rpc_errors: BTreeMap<String, Tally>,
    first_rpc_error_ts: Option<u64>,
    /// Replies with an NFS error that is not routine, all of them...
    nfs_errors: u64,
    /// ... and by (status, operation), for the first few pairs.
    nfs_by_status: BTreeMap<(String, String), Tally>,
    /// Calls that retried one answered NFS3ERR_JUKEBOX / NFS4ERR_DELAY
    /// (`retry_of_xid`): count, the waits before them (ns), examples.
    nfs_retries: Tally,
    /// RPCs in flight while their connection was marked congested.
    congested: Tally,
    /// Chunks on the wire, set against the kernel's local invalidations.
    wire_chunks: kernel::WireChunks,
    /// The client kernel's counters, when given: without them the causes
    /// only the kernel sees are not checked.
    kernel: Option<KernelView>,
}

impl Diagnosis {
    /// Takes one finding.
    pub fn add(&mut self, f: &Finding) {
        match f {
            Finding::Transaction(t) => self.txn(t),
            Finding::Anomaly(a) => self.anomaly(a),
        }
    }

    /// Takes the client kernel's counters over the same window: the causes
    /// only the kernel sees are checked from then on.
    pub fn set_kernel(&mut self, view: KernelView) {
        self.kernel = Some(view);
    }

    /// The causes that could not be checked for want of an input (the
    /// kernel's counters); said beside the causes, never silently absent.
    pub fn not_checked(&self) -> Vec<CauseName> {
        match &self.kernel {
            Some(k) if k.transports > 0 => Vec::new(),
            _ => vec![CauseName::NoRemoteInvalidation, CauseName::MrExhaustion],
        }
    }

    /// What the diagnosis was given beyond the wire, in words, for the
    /// text that lists the causes.
    pub fn input_notes(&self) -> Vec<String> {
        let names = || {
            let n: Vec<&str> = self.not_checked().iter().map(|c| c.as_str()).collect();
            n.join(", ")
        };
        let Some(k) = &self.kernel else {
            return vec![format!(
                "kernel view not given: {} not checked (report --mountstats AFTER [--mountstats-before BEFORE])",
                names()
            )];
        };
        let mut v = Vec::new();
        if k.transports > 0 {
            v.push(format!(
                "kernel view: {} RDMA transport(s) of {} mount(s), {}",
                k.transports,
                k.mounts.len(),
                if k.since_mount {
                    "counters since each mount's start (no BEFORE)"
                } else {
                    "counters over the window (AFTER less BEFORE)"
                }
            ));
        } else {
            v.push(format!(
                "kernel view given but empty (no RDMA transport with a known window): {} not checked",
                names()
            ));
        }
        if k.reset_transports > 0 {
            v.push(format!(
                "{} transport(s) left out of the kernel view: their counters went backwards between BEFORE and AFTER (a remount or reconnect that rebuilt the transport)",
                k.reset_transports
            ));
        }
        v
    }

    fn txn(&mut self, t: &Transaction) {
        self.ops += 1;
        self.wire_chunks.note(t);
        self.transmissions += u64::from(t.transmissions.max(1));
        let wire = t.reply_ts_ns.and_then(|r| r.checked_sub(t.call_ts_ns));
        let app = t
            .reply_ts_ns
            .and_then(|r| r.checked_sub(t.first_call_ts_ns));
        if let (Some(wire), Some(app)) = (wire, app) {
            self.answered += 1;
            self.app_wait_ns += app;
            self.wire_wait_ns += wire;
            self.server_time(t, wire);
            if t.loss_delayed {
                self.loss_rpcs += 1;
                self.loss_wait_ns += wire;
                self.loss_ex.conn(t.connection);
                self.loss_ex.xid(t.xid);
            }
        }
        if t.transmissions > 1 && !t.earlier_connections.is_empty() {
            rules::note_reconnect(&mut self.reconnect, t, app, wire);
        }
        if t.reply_frame.is_none() {
            let u = self.unanswered.entry(t.connection).or_default();
            u.count += 1;
            u.oldest_ts = Some(u.oldest_ts.map_or(t.call_ts_ns, |o| o.min(t.call_ts_ns)));
            u.ex.xid(t.xid);
            u.ex.frames([t.call_frame]);
            u.ex.at(Some(t.call_ts_ns));
        }
        if t.reply_frame.is_some()
            && (t.reply_transfer == Transfer::ReplyChunk || t.call_transfer == Transfer::LongCall)
        {
            let c = &mut self.chunked;
            c.count += 1;
            let moved: u64 = t
                .chunks
                .iter()
                .filter(|s| {
                    (t.reply_transfer == Transfer::ReplyChunk
                        && s.kind == crate::engine::ChunkKind::Reply)
                        || (t.call_transfer == Transfer::LongCall && s.position == Some(0))
                })
                .map(|s| s.bytes_moved)
                .sum();
            self.largest_chunked = self.largest_chunked.max(moved);
            c.ex.conn(t.connection);
            c.ex.xid(t.xid);
            c.ex.frames([t.call_frame]);
            c.ex.at(Some(t.call_ts_ns));
        }
        if t.reply_transfer == Transfer::Error {
            let e = &mut self.rdma_error;
            e.count += 1;
            e.ex.conn(t.connection);
            e.ex.xid(t.xid);
            e.ex.frames(t.reply_frame);
            e.ex.at(t.reply_ts_ns);
        }
        if let Some(s) = t.reply_status.as_deref().filter(|s| *s != "SUCCESS") {
            if self.rpc_errors.len() < 16 || self.rpc_errors.contains_key(s) {
                let e = self.rpc_errors.entry(s.to_string()).or_default();
                e.count += 1;
                e.ex.conn(t.connection);
                e.ex.xid(t.xid);
                e.ex.frames(t.reply_frame);
                e.ex.at(t.reply_ts_ns);
                let label = t.procedure_label();
                e.ex.say(|| format!("{label} xid {:#010x} answered {s}", t.xid));
            }
            let ts = t.reply_ts_ns.unwrap_or(t.call_ts_ns);
            self.first_rpc_error_ts = Some(self.first_rpc_error_ts.map_or(ts, |f| f.min(ts)));
        }
        if t.congested {
            let c = &mut self.congested;
            c.count += 1;
            c.ex.xid(t.xid);
        }
        if let Some(s) = t.nfs_status.as_deref().filter(|s| rules::nfs_error(s)) {
            self.nfs_error(t, s);
        }
        if let Some(of) = t.retry_of_xid {
            rules::note_retry(&mut self.nfs_retries, t, of);
        }
    }

    /// Counts a reply with an NFS error that is not routine, under its
    /// status and the operation that failed.
    fn nfs_error(&mut self, t: &Transaction, status: &str) {
        self.nfs_errors += 1;
        // NFSv4: the op that failed; NFSv3: the procedure; a COMPOUND
        // whose failing op the walk could not reach is just "COMPOUND".
        let op = match (&t.nfs_failed_op, &t.procedure) {
            (Some(op), _) => op.clone(),
            (None, Some(p)) => p.split('(').next().unwrap_or(p).to_string(),
            (None, None) => "?".to_string(),
        };
        let key = (status.to_string(), op);
        if self.nfs_by_status.len() >= NFS_PAIRS && !self.nfs_by_status.contains_key(&key) {
            return;
        }
        let label = t.procedure_label();
        let e = self.nfs_by_status.entry(key).or_default();
        e.count += 1;
        e.ex.conn(t.connection);
        e.ex.xid(t.xid);
        e.ex.frames(t.reply_frame);
        e.ex.at(t.reply_ts_ns);
        let in_op = t
            .nfs_failed_op
            .as_deref()
            .map_or(String::new(), |op| format!(" in {op}"));
        let frame = t.reply_frame.map_or("-".to_string(), |f| f.to_string());
        e.ex.say(|| {
            format!(
                "{label} xid {:#010x} answered {status}{in_op} (frame {frame})",
                t.xid
            )
        });
    }

    /// The server's share of an answered RPC: its wire latency less the
    /// time its data moved (the RDMA Reads and Writes).
    fn server_time(&mut self, t: &Transaction, wire: u64) {
        let data = t.phases.read_ns.unwrap_or(0) + t.phases.write_ns.unwrap_or(0);
        let server = wire.saturating_sub(data);
        self.server.record(server);
        self.server_ns += server;
        if server >= rules::SERVER_SLOW_NS {
            self.server_slow_ns += server;
            self.server_slow_rpcs += 1;
        }
        self.data_ns += data;
        self.server_ex.conn(t.connection);
        // The slowest few, kept sorted (smallest first) in a capped list.
        let s = &mut self.slowest_server;
        if s.len() < EXAMPLES || s.first().is_some_and(|f| f.0 < server) {
            if s.len() >= EXAMPLES {
                s.remove(0);
            }
            let at = s.partition_point(|x| x.0 < server);
            s.insert(at, (server, t.xid, t.call_frame, t.procedure_label()));
        }
    }

    /// Keeps the sender of an RNR NAK ("NAK from ADDR for PSN ..."), the
    /// first [`EXAMPLES`] distinct ones.
    fn note_rnr_sender(&mut self, a: &Anomaly) {
        let (Some(c), Some(from)) = (
            a.connection,
            a.message
                .strip_prefix("NAK from ")
                .and_then(|r| r.split(" for PSN").next()),
        ) else {
            return;
        };
        let key = (c, from.to_string());
        if self.rnr_senders.len() < EXAMPLES && !self.rnr_senders.contains(&key) {
            self.rnr_senders.push(key);
        }
    }

    fn anomaly(&mut self, a: &Anomaly) {
        if a.kind == Kind::Nak && a.message.contains("RNR") {
            self.note_rnr_sender(a);
        }
        let tally = match a.kind {
            Kind::Retransmission => &mut self.retransmitted,
            Kind::Nak if a.message.contains("RNR") => &mut self.rnr,
            Kind::Nak if a.message.contains("PSN sequence error") => &mut self.psn_naks,
            Kind::InlineThresholdExceeded => {
                if a.message.contains("a Long Call") {
                    self.overrun_by.0 += 1;
                } else if a.message.contains("Long Reply") {
                    self.overrun_by.1 += 1;
                }
                &mut self.overrun
            }
            Kind::ErrChunk | Kind::ErrVers => {
                self.rdma_error_found += 1;
                &mut self.rdma_error
            }
            _ => return,
        };
        if !matches!(a.kind, Kind::ErrChunk | Kind::ErrVers) {
            tally.count += 1;
        }
        if let Some(c) = a.connection {
            tally.ex.conn(c);
        }
        if let Some(x) = a.xid {
            tally.ex.xid(x);
        }
        tally.ex.frames(a.frames.iter().copied());
        tally.ex.at(a.ts_ns);
        tally.ex.say(|| a.message.clone());
    }

    /// Adds `o`'s findings, as if they had been added here: the sum of a
    /// sliding window's buckets. The caps hold across the sum (the keyed
    /// tables take no key beyond them); the kernel view stays this one's.
    pub fn merge(&mut self, o: &Diagnosis) {
        self.ops += o.ops;
        self.transmissions += o.transmissions;
        self.answered += o.answered;
        self.app_wait_ns += o.app_wait_ns;
        self.wire_wait_ns += o.wire_wait_ns;
        self.reconnect.merge(&o.reconnect);
        self.server.merge(&o.server);
        self.server_ns += o.server_ns;
        self.server_slow_ns += o.server_slow_ns;
        self.server_slow_rpcs += o.server_slow_rpcs;
        self.data_ns += o.data_ns;
        self.server_ex.merge(&o.server_ex);
        self.slowest_server.extend(o.slowest_server.iter().cloned());
        self.slowest_server.sort_by_key(|x| x.0);
        let extra = self.slowest_server.len().saturating_sub(EXAMPLES);
        self.slowest_server.drain(..extra);
        self.retransmitted.merge(&o.retransmitted);
        self.loss_rpcs += o.loss_rpcs;
        self.loss_wait_ns += o.loss_wait_ns;
        self.loss_ex.merge(&o.loss_ex);
        self.psn_naks.merge(&o.psn_naks);
        self.rnr.merge(&o.rnr);
        for s in &o.rnr_senders {
            if self.rnr_senders.len() < EXAMPLES && !self.rnr_senders.contains(s) {
                self.rnr_senders.push(s.clone());
            }
        }
        for (id, u) in &o.unanswered {
            let mine = self.unanswered.entry(*id).or_default();
            mine.count += u.count;
            mine.oldest_ts = min_ts(mine.oldest_ts, u.oldest_ts);
            mine.ex.merge(&u.ex);
        }
        self.chunked.merge(&o.chunked);
        self.largest_chunked = self.largest_chunked.max(o.largest_chunked);
        self.overrun.merge(&o.overrun);
        self.overrun_by.0 += o.overrun_by.0;
        self.overrun_by.1 += o.overrun_by.1;
        self.rdma_error.merge(&o.rdma_error);
        self.rdma_error_found += o.rdma_error_found;
        for (status, t) in &o.rpc_errors {
            if self.rpc_errors.len() < 16 || self.rpc_errors.contains_key(status) {
                self.rpc_errors.entry(status.clone()).or_default().merge(t);
            }
        }
        self.first_rpc_error_ts = min_ts(self.first_rpc_error_ts, o.first_rpc_error_ts);
        self.nfs_errors += o.nfs_errors;
        for (key, t) in &o.nfs_by_status {
            if self.nfs_by_status.len() < NFS_PAIRS || self.nfs_by_status.contains_key(key) {
                self.nfs_by_status.entry(key.clone()).or_default().merge(t);
            }
        }
        self.nfs_retries.merge(&o.nfs_retries);
        self.congested.merge(&o.congested);
        self.wire_chunks.merge(&o.wire_chunks);
    }

    /// Entries of the keyed tables and capped lists (what a bucket of a
    /// [`Window`] holds beyond its fixed size).
    fn entries(&self) -> usize {
        let tallies = [
            &self.reconnect,
            &self.retransmitted,
            &self.psn_naks,
            &self.rnr,
            &self.chunked,
            &self.overrun,
            &self.rdma_error,
            &self.nfs_retries,
            &self.congested,
        ];
        let examples =
            |e: &Examples| e.connections.len() + e.xids.len() + e.frames.len() + e.sentences.len();
        tallies.iter().map(|t| examples(&t.ex)).sum::<usize>()
            + examples(&self.server_ex)
            + examples(&self.loss_ex)
            + self.server.buckets.counts().len()
            + self.slowest_server.len()
            + self
                .unanswered
                .values()
                .map(|u| 1 + examples(&u.ex))
                .sum::<usize>()
            + self
                .rpc_errors
                .values()
                .map(|t| 1 + examples(&t.ex))
                .sum::<usize>()
            + self
                .nfs_by_status
                .values()
                .map(|t| 1 + examples(&t.ex))
                .sum::<usize>()
    }

    /// Operations seen (a call sent on several connections counts once).
    pub fn operations(&self) -> u64 {
        self.ops
    }

    /// Transmissions of those operations.
    pub fn transmissions(&self) -> u64 {
        self.transmissions
    }

    /// The causes found, largest impact first; empty for a healthy capture.
    pub fn causes(&self, state: &State) -> Vec<Cause> {
        let mut v = rules::all(self, state);
        v.sort_by(|a, b| {
            b.impact
                .score
                .total_cmp(&a.impact.score)
                .then(a.cause.cmp(&b.cause))
        });
        v
    }
}

#[cfg(test)]
mod tests;
