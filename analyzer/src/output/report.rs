//! The `report`, `transactions` and `anomalies` front ends: aggregate the
//! engine's findings into what a user reads, as text or JSON.

use crate::output::escape::escape;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::filter::{Field, Filter, Join};
use super::schema::{
    ChunkTotals, ConnectionView, FilterSummary, KindSummary, Operations, PhaseTimes, PrivateData,
    ProceduresOverCap, ReportDoc, ResponseTimes, SlowOperation, WriteChunks, WriteChunksSeen,
    SCHEMA_VERSION,
};
use super::stats::{Latency, Summary};
use super::unchecked::NotChecked;
use super::view::{ClientTimelineView, ConnIdView, EvictionsView, TotalsView};
use crate::diagnosis::timeline::timeline;
use crate::diagnosis::{Cause, CauseName, Diagnosis, KernelView};
use crate::engine::{Carries, ConnId, Engine, Finding, Kind, Origin, State, Transaction, Transfer};
use crate::pipeline::{End, Flow, Progress, Sink};

/// Frames listed per anomaly kind in the report; the rest are counted.
const FRAMES_PER_KIND: usize = 20;

/// Where transactions of procedures past the report's row cap are counted.
pub const OTHER_PROCEDURES: &str = "(other procedures)";

/// Bytes a row of the per-procedure tables can cost: its four latency
/// histograms (the latency and three phases) at their largest (every bucket
/// up to 2^64 ns), its label (procedure labels run to a few hundred bytes:
/// COMPOUND operation lists), its operations count and its place in the maps.
pub const PROC_ROW_BYTES: usize = 4 * Latency::MAX_BYTES + 2 * 512;

/// Fewest rows the report keeps, however small the budget.
const MIN_PROC_ROWS: usize = 16;

/// Slowest operations kept for JSON; text shows the first [`SLOWEST_TEXT`].
const SLOWEST: usize = 10;
const SLOWEST_TEXT: usize = 5;

/// One (procedure, call transfer, reply transfer): its latency and its
/// phases, each in the report's bounded histogram.
#[derive(Debug, Default)]
struct ProcAgg {
    latency: Latency,
    before: Latency,
    data: Latency,
    after: Latency,
}

#[derive(Debug, Default)]
struct KindAgg {
    count: u64,
    frames: Vec<u64>,
    example: Option<String>,
}

/// `1 connection`, `2 connections`.
pub(crate) fn count(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// What a filter kept, counted apart from the tables.
#[derive(Debug, Default)]
struct Kept {
    transactions: u64,
    answered: u64,
    findings: u64,
    connections: std::collections::BTreeSet<u32>,
}

/// Everything the report needs, built from findings in bounded memory.
#[derive(Debug, Default)]
pub struct Report {
    filter: Option<Filter>,
    matched: u64,
    /// Under a filter: findings waiting for their transaction.
    join: Join,
    /// Under a filter: what it kept, for the header and `filter` in JSON.
    kept: Kept,
    by_proc: BTreeMap<(String, Transfer, Transfer), ProcAgg>,
    ops: BTreeMap<String, (u64, u64)>,
    slowest: Vec<SlowOperation>,
    diagnosis: Diagnosis,
    unanswered: BTreeMap<String, u64>,
    latency_unknown: BTreeMap<String, u64>,
    /// Round trips per RPC; `None`: a snap length cut a header, so not known.
    round_trips: BTreeMap<Option<u8>, u64>,
    chunks: BTreeMap<&'static str, ChunkTotals>,
    write_chunks: u64,
    empty_write_chunks: u64,
    unused_write_chunks: u64,
    /// Transactions whose chunk lists were seen whole: what the chunk
    /// counts are of.
    chunks_seen: u64,
    /// Transactions a snap length cut: in none of the chunk counts.
    chunks_not_seen: u64,
    /// Transactions seen only by a kernel probe, which sees no chunk lists.
    chunks_not_on_wire: u64,
    kinds: BTreeMap<Kind, KindAgg>,
    /// Acknowledged findings: kept apart, counted, not listed in text.
    acked: BTreeMap<Kind, KindAgg>,
    acks: super::ack::Acks,
    reminv_by_conn: BTreeMap<ConnId, u64>,
    /// Rows each per-procedure table may hold (`within`); 0: no cap.
    max_rows: usize,
    /// Transactions counted under [`OTHER_PROCEDURES`] for the cap.
    over_cap: u64,
    /// No diagnosis, phase tables or slowest list ([`Report::without_diagnosis`]).
    lean: bool,
    /// How the text gives a connection's first and last frame.
    time: super::clock::TimeFormat,
}

impl Report {
    /// A report over what `filter` selects.
    pub fn new(filter: Filter) -> Self {
        Report {
            filter: Some(filter),
            ..Report::default()
        }
    }

    /// The same report with its per-procedure tables held to `bytes`: each
    /// distinct procedure label (any procedure number, any COMPOUND list)
    /// would otherwise keep a latency histogram of its own, without bound.
    #[must_use]
    pub fn within(mut self, bytes: usize) -> Self {
        self.max_rows = (bytes / PROC_ROW_BYTES).max(MIN_PROC_ROWS);
        self
    }

    /// The same report with `acks`' findings kept apart and counted.
    #[must_use]
    pub fn with_acks(mut self, acks: super::ack::Acks) -> Self {
        self.acks = acks;
        self
    }

    /// The same report with its connections' times in `time`'s format.
    #[must_use]
    pub fn with_time(mut self, time: super::clock::TimeFormat) -> Self {
        self.time = time;
        self
    }

    /// The same report without the diagnosis, the phase tables and the
    /// slowest transactions: what `report` computed before them, kept so
    /// that their cost can be measured (`cargo bench --bench report`;
    /// issue 28 allows them 10% of `report`'s time).
    #[must_use]
    pub fn without_diagnosis(mut self) -> Self {
        self.lean = true;
        self
    }

    /// Rows each per-procedure table holds at most (0: no cap).
    pub fn max_rows(&self) -> usize {
        self.max_rows
    }

    /// `label`, or [`OTHER_PROCEDURES`] if `table` is full and has no row
    /// for it (counted).
    fn row_label<K: Ord>(
        max_rows: usize,
        over_cap: &mut u64,
        table: &BTreeMap<K, impl Sized>,
        key: &K,
        label: String,
    ) -> String {
        if max_rows == 0 || table.len() < max_rows || table.contains_key(key) {
            label
        } else {
            *over_cap += 1;
            OTHER_PROCEDURES.to_string()
        }
    }

    /// Takes one finding. Under a filter, a finding that names a
    /// transaction may wait for it (`proc == READ` is its transaction's),
    /// and is taken when it arrives or at [`Report::finish`].
    pub fn add(&mut self, f: &Finding) {
        let filter = self.filter.take().unwrap_or(Filter::All);
        if filter.is_all() {
            self.filter = Some(filter);
            return self.take(f);
        }
        let mut decided = Vec::new();
        self.join
            .take(&filter, f.clone(), &mut |f, pass| decided.push((f, pass)));
        self.filter = Some(filter);
        for (f, pass) in decided {
            if pass {
                self.keep(&f);
            }
        }
    }

    /// Takes the findings still waiting for their transaction (the end).
    pub fn finish(&mut self) {
        let filter = self.filter.take().unwrap_or(Filter::All);
        let mut decided = Vec::new();
        self.join
            .finish(&filter, &mut |f, pass| decided.push((f, pass)));
        self.filter = Some(filter);
        for (f, pass) in decided {
            if pass {
                self.keep(&f);
            }
        }
    }

    /// Counts a finding the filter kept, then takes it.
    fn keep(&mut self, f: &Finding) {
        let k = &mut self.kept;
        match f {
            Finding::Transaction(t) => {
                k.transactions += 1;
                k.answered += u64::from(t.reply_frame.is_some());
                k.connections.insert(t.connection.0);
            }
            Finding::Anomaly(a) => {
                k.findings += 1;
                k.connections.extend(a.connection.map(|c| c.0));
            }
        }
        self.take(f);
    }

    /// Whether the report shows connection `c`: the filter selects it, or
    /// says nothing of connections and kept something on it.
    fn shows(&self, filter: &Filter, c: &crate::engine::Connection) -> bool {
        match filter.connection(c) {
            Some(keep) => keep,
            None => self.kept.connections.contains(&c.id.0),
        }
    }

    /// What the filter kept (`None` unfiltered).
    fn filter_summary(&self, state: &State) -> Option<FilterSummary> {
        let filter = self.filter.as_ref().filter(|f| !f.is_all())?;
        Some(FilterSummary {
            expression: filter.text().to_string(),
            transactions: self.kept.transactions,
            answered: self.kept.answered,
            findings: self.kept.findings,
            connections: state
                .connections
                .values()
                .filter(|c| self.shows(filter, c))
                .count() as u64,
        })
    }

    fn take(&mut self, f: &Finding) {
        self.matched += 1;
        if !self.lean {
            self.diagnosis.add(f);
        }
        match f {
            Finding::Transaction(t) => self.txn(t),
            Finding::Anomaly(a) => {
                let table = if self.acks.hide(a) {
                    &mut self.acked
                } else {
                    &mut self.kinds
                };
                let k = table.entry(a.kind).or_default();
                k.count += 1;
                if k.frames.len() < FRAMES_PER_KIND {
                    k.frames
                        .extend(a.frames.iter().take(FRAMES_PER_KIND - k.frames.len()));
                }
                if k.example.is_none() {
                    k.example = Some(a.message.clone());
                }
            }
        }
    }

    /// Findings that passed the filter.
    pub fn matched(&self) -> u64 {
        self.matched
    }

    fn txn(&mut self, t: &Transaction) {
        let label = t.procedure_label();
        let (max, over) = (self.max_rows, &mut self.over_cap);
        // The operations table shares the row cap; a transaction past it is
        // counted once in `over_cap`, by the latency tables below.
        let ops_label = Self::row_label(max, &mut 0, &self.ops, &label, label.clone());
        match self.ops.get_mut(&ops_label) {
            Some(o) => {
                o.0 += 1;
                o.1 += u64::from(t.transmissions);
            }
            None => {
                self.ops.insert(ops_label, (1, u64::from(t.transmissions)));
            }
        }
        match t.reply_ts_ns.map(|r| r.checked_sub(t.call_ts_ns)) {
            Some(Some(latency)) => {
                let p = &t.phases;
                let key = (label, t.call_transfer, t.reply_transfer);
                let label = Self::row_label(max, over, &self.by_proc, &key, key.0.clone());
                let agg = self.by_proc.entry((label, key.1, key.2)).or_default();
                agg.latency.record(latency);
                *self.round_trips.entry(t.round_trips_known()).or_default() += 1;
                if !self.lean {
                    if let Some(b) = p.until_first_rdma_ns {
                        agg.before.record(b);
                    }
                    if p.read_ns.is_some() || p.write_ns.is_some() {
                        agg.data
                            .record(p.read_ns.unwrap_or(0) + p.write_ns.unwrap_or(0));
                    }
                    if let Some(a) = p.reply_after_rdma_ns {
                        agg.after.record(a);
                    }
                    self.slow(t, latency);
                }
            }
            // Answered, but stamped before its call: counted, not timed.
            Some(None) => {
                let label =
                    Self::row_label(max, over, &self.latency_unknown, &label, label.clone());
                *self.latency_unknown.entry(label).or_default() += 1;
                *self.round_trips.entry(t.round_trips_known()).or_default() += 1;
            }
            None => {
                let label = Self::row_label(max, over, &self.unanswered, &label, label.clone());
                *self.unanswered.entry(label).or_default() += 1;
            }
        }
        // A cut transaction's segments are what the capture kept of its
        // lists, and what they moved a guess: counting them would give a
        // number that is neither the total nor that of the whole ones.
        for s in t.chunks.iter().filter(|_| !t.cut) {
            let name = match s.kind {
                crate::engine::ChunkKind::Read => "read",
                crate::engine::ChunkKind::Write => "write",
                crate::engine::ChunkKind::Reply => "reply",
            };
            let a = self.chunks.entry(name).or_default();
            a.segments += 1;
            a.advertised_bytes += u64::from(s.length);
            a.moved_bytes += s.bytes_moved;
            if s.bytes_moved == 0 && t.reply_frame.is_some() {
                a.unused_segments += 1;
            }
        }
        if t.remote_invalidated_rkey.is_some() {
            *self.reminv_by_conn.entry(t.connection).or_default() += 1;
        }
        if t.cut {
            self.chunks_not_seen += 1;
        } else if t.origin != Origin::Wire {
            self.chunks_not_on_wire += 1;
        } else {
            self.chunks_seen += 1;
            self.write_chunks += u64::from(t.write_chunks.unwrap_or(0));
            self.empty_write_chunks += u64::from(t.empty_write_chunks.unwrap_or(0));
            if t.reply_frame.is_some() {
                self.unused_write_chunks += u64::from(t.unused_write_chunks.unwrap_or(0));
            }
        }
    }

    /// Keeps `t` among the slowest operations if it is one, by the time
    /// the application waited (`latency` is its wire latency).
    fn slow(&mut self, t: &Transaction, latency: u64) {
        let (Some(reply_frame), Some(reply_ts)) = (t.reply_frame, t.reply_ts_ns) else {
            return;
        };
        let app = reply_ts.checked_sub(t.first_call_ts_ns).unwrap_or(latency);
        let app_us = app as f64 / 1000.0;
        let v = &mut self.slowest;
        if v.len() >= SLOWEST && v.last().is_some_and(|l| l.app_latency_us >= app_us) {
            return;
        }
        let at = v.partition_point(|x| x.app_latency_us >= app_us);
        v.insert(
            at,
            SlowOperation {
                procedure: t.procedure_label(),
                xid: t.xid,
                connection: ConnIdView(t.connection),
                earlier_connections: t
                    .earlier_connections
                    .iter()
                    .copied()
                    .map(ConnIdView)
                    .collect(),
                transmissions: t.transmissions,
                first_call_frame: t.first_call_frame,
                call_frame: t.call_frame,
                reply_frame,
                first_call_ts_ns: t.first_call_ts_ns,
                reply_ts_ns: reply_ts,
                app_latency_us: app_us,
                latency_us: latency as f64 / 1000.0,
            },
        );
        v.truncate(SLOWEST);
    }

    fn proc_rows(&self) -> Vec<(String, Transfer, Transfer, Summary)> {
        self.by_proc
            .iter()
            .map(|((p, c, r), l)| (p.clone(), *c, *r, l.latency.summary()))
            .collect()
    }

    fn phase_rows(&self) -> Vec<PhaseTimes> {
        let some = |l: &Latency| (l.count() > 0).then(|| l.summary());
        self.by_proc
            .iter()
            .map(|((p, c, r), a)| PhaseTimes {
                procedure: p.clone(),
                call_transfer: (*c).into(),
                reply_transfer: (*r).into(),
                server_before_data: some(&a.before),
                data_movement: some(&a.data),
                server_after_data: some(&a.after),
                total: a.latency.summary(),
            })
            .collect()
    }

    fn operation_rows(&self) -> Vec<Operations> {
        self.ops
            .iter()
            .map(|(p, (ops, trans))| Operations {
                procedure: p.clone(),
                ops: *ops,
                trans: *trans,
            })
            .collect()
    }

    /// The causes the diagnosis finds in what the report took.
    pub fn causes(&self, state: &State) -> Vec<Cause> {
        if self.lean {
            return Vec::new();
        }
        self.diagnosis.causes(state)
    }

    /// Hands the client kernel's counters over the capture's window to
    /// the diagnosis (`report --mountstats`).
    pub fn set_kernel(&mut self, view: KernelView) {
        self.diagnosis.set_kernel(view);
    }

    /// The causes not checked for want of an input (none in a lean report,
    /// which checks none).
    pub fn not_checked(&self) -> Vec<CauseName> {
        if self.lean {
            return Vec::new();
        }
        self.diagnosis.not_checked()
    }

    fn input_notes(&self) -> Vec<String> {
        if self.lean {
            return Vec::new();
        }
        self.diagnosis.input_notes()
    }

    /// The report as JSON (`report --json`).
    pub fn to_doc(&self, state: &State, file: &str, read_error: Option<String>) -> ReportDoc {
        let filter = self.filter.clone().unwrap_or(Filter::All);
        ReportDoc {
            schema_version: SCHEMA_VERSION,
            file: file.to_string(),
            complete: read_error.is_none(),
            filter: self.filter_summary(state),
            read_error,
            not_decoded: super::not_decoded::rows(&state.totals.not_decoded),
            diagnosis: self.causes(state),
            not_checked: self.not_checked(),
            phases: self.phase_rows(),
            slowest: self.slowest.clone(),
            timeline: timeline(state, |c| self.shows(&filter, c))
                .iter()
                .map(ClientTimelineView::from)
                .collect(),
            operations: self.operation_rows(),
            totals: TotalsView::from(&state.totals),
            evictions: EvictionsView::from(&state.evictions),
            connections: state
                .connections
                .values()
                .filter(|c| self.shows(&filter, c))
                .map(ConnectionView::from)
                .collect(),
            response_times: self
                .proc_rows()
                .into_iter()
                .map(|(procedure, c, r, s)| ResponseTimes {
                    procedure,
                    call_transfer: c.into(),
                    reply_transfer: r.into(),
                    latency: s,
                })
                .collect(),
            unanswered: self.unanswered.clone(),
            latency_unknown: self.latency_unknown.clone(),
            procedures_over_cap: ProceduresOverCap {
                rows: self.max_rows,
                transactions: self.over_cap,
            },
            chunks: self.chunks.clone(),
            write_chunks: self.write_chunks_doc(),
            round_trips: self
                .round_trips
                .iter()
                .map(|(k, v)| (k.map_or("unknown".to_string(), |k| k.to_string()), *v))
                .collect(),
            remote_invalidations_by_connection: self
                .reminv_by_conn
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
            anomalies: (self.kinds.iter().map(|r| (r, false)))
                .chain(self.acked.iter().map(|r| (r, true)))
                .map(|((k, a), acknowledged)| KindSummary {
                    kind: (*k).into(),
                    rfc: k.rfc(),
                    severity: k.severity().into(),
                    count: a.count,
                    frames: a.frames.clone(),
                    example: a.example.clone(),
                    acknowledged,
                })
                .collect(),
            anomalies_not_checked: self.findings_not_checked(state, &filter),
        }
    }

    /// What the findings could not be checked on, over the connections
    /// the report shows.
    fn findings_not_checked(&self, state: &State, filter: &Filter) -> Vec<NotChecked> {
        super::unchecked::not_checked(
            state.connections.values().filter(|c| self.shows(filter, c)),
            &state.totals,
        )
    }

    /// The report as text for a terminal.
    pub fn to_text(&self, state: &State, file: &str, read_error: Option<&str>) -> String {
        let filter = self.filter.clone().unwrap_or(Filter::All);
        let mut s = String::new();
        self.text_header(&mut s, state, file, read_error);
        self.text_connections(&mut s, state, &filter);
        self.text_timeline(&mut s, state, &filter);
        self.text_times(&mut s, state);
        self.text_chunks_and_anomalies(&mut s, state);
        s
    }

    /// The totals, what could not be checked, and the diagnosis.
    fn text_header(&self, s: &mut String, state: &State, file: &str, read_error: Option<&str>) {
        let t = &state.totals;
        let secs = t.span_ns() as f64 / 1e9;
        let _ = writeln!(s, "rdma-analyzer report: {}", escape(file));
        let _ = writeln!(
            s,
            "{} frames ({} RDMA, {}) over {secs:.3} s; {} RPC-over-RDMA messages; {} calls, {} replies",
            t.frames,
            t.rdma_frames,
            super::units::bytes_exact(t.bytes),
            t.rpcrdma_messages,
            t.calls,
            t.replies
        );
        if t.iwarp_only() {
            // Zeros here would read as "checked, all well": iWARP has no
            // ICRC or PSNs, TCP's sequence and the FPDU's CRC32c stand in.
            let _ = writeln!(
                s,
                "ICRC and PSNs: not applicable (iWARP only: its CRC32c and stream holes are on the next line)"
            );
        } else {
            let _ = writeln!(
                s,
                "ICRC: {} valid, {} invalid, {} not checkable; {} retransmitted packets, {} PSN gaps",
                t.icrc_valid, t.icrc_invalid, t.icrc_unchecked, t.retransmissions, t.psn_gaps
            );
        }
        if t.iwarp.frames > 0 {
            let _ = writeln!(s, "{}", iwarp_line(&t.iwarp));
        }
        if t.cut_frames > 0 {
            let _ = writeln!(
                s,
                "{} frames cut by the capture's snap length: their ICRC, and what they carried past the cut (chunk lists, RPC and NFS, CM private data), were not checked",
                t.cut_frames
            );
        }
        if t.headers_cut > 0 {
            let _ = writeln!(
                s,
                "{} of them cut inside their transport headers: they could not be placed in their queue pair's PSN sequence, so the PSN gaps above include them",
                t.headers_cut
            );
        }
        if let Some(e) = read_error {
            let _ = writeln!(s, "INCOMPLETE: {}", escape(e));
        }
        s.push_str(&super::not_decoded::text(&t.not_decoded));
        if let Some(f) = self.filter_summary(state) {
            let _ = writeln!(
                s,
                "filter: {}\n  kept {}, {} answered, {}, {}; the counts above are the whole capture's, everything below is what the filter kept",
                escape(&f.expression),
                count(f.transactions, "transaction"),
                f.answered,
                count(f.findings, "finding"),
                count(f.connections, "connection")
            );
        }
        let filter = self
            .filter
            .as_ref()
            .filter(|f| !f.is_all())
            .map(Filter::text);
        diagnosis_text(
            s,
            &self.causes(state),
            &self.input_notes(),
            Judged::of(&self.diagnosis, state),
            filter,
        );
    }

    /// Each connection: its CM, private data, counts and credits.
    fn text_connections(&self, s: &mut String, state: &State, filter: &Filter) {
        let _ = writeln!(s, "\nConnections");
        for c in state.connections.values().filter(|c| self.shows(filter, c)) {
            let words = crate::diagnosis::timeline::setup_words(c.is_iwarp());
            let cm = if c.cm_state == crate::engine::CmState::NotSeen && c.cm_cut {
                "CM cut by the snap length".to_string()
            } else if c.cm_state == crate::engine::CmState::NotSeen && c.is_iwarp() {
                "no MPA exchange seen".to_string()
            } else if c.cm_state == crate::engine::CmState::NotSeen {
                "no CM seen".to_string()
            } else {
                format!(
                    "cm={} port={}",
                    c.cm_state.as_str(),
                    c.port.map_or("?".into(), |p| p.to_string())
                )
            };
            let fabric = c.fabric().unwrap_or("?");
            let mtu = c.path_mtu.map_or(String::new(), |m| format!(" mtu={m}"));
            let _ = writeln!(s, "  {} {}  {fabric} {cm}{mtu}", c.id, c.label());
            let carries = match (c.carries, c.port) {
                (Some(Carries::RpcRdma), _) => "RPC-over-RDMA".to_string(),
                (Some(Carries::Other), Some(p)) if p != 20049 => format!(
                    "not RPC-over-RDMA (RDMA-CM port {p}, no RFC 8797 private data, no RPC-over-RDMA message)"
                ),
                (Some(Carries::Other), _) => {
                    "not RPC-over-RDMA (its Sends are not RPC-over-RDMA version 1)".to_string()
                }
                (None, _) => "not known (no Send decoded)".to_string(),
            };
            let _ = writeln!(s, "      carries: {carries}");
            let clock = super::clock::Clock {
                format: self.time,
                start_ns: state.totals.first_ts_ns,
            };
            // The engine moves a connection's latest time with its
            // messages, not with its retransmissions or CM frames (the
            // timeline below has those).
            let unit = if self.time == super::clock::TimeFormat::Relative {
                " s"
            } else {
                ""
            };
            let _ = writeln!(
                s,
                "      first frame {}{unit}, last message {}{unit}",
                clock.at(Some(c.first_ts_ns)).to_string().trim_start(),
                clock.at(Some(c.last_ts_ns)).to_string().trim_start()
            );
            // Only when marked: a clean connection's report stays as it was.
            let g = &c.congestion;
            if g.marks() > 0 {
                let rel = |ts: Option<u64>| {
                    ts.zip(state.totals.first_ts_ns)
                        .map_or("?".to_string(), |(t, s)| {
                            format!("{:.3} s", t.saturating_sub(s) as f64 / 1e9)
                        })
                };
                let frames: Vec<String> = g.frames.iter().map(u64::to_string).collect();
                // iWARP has no BTH: its CNP, FECN and BECN zeros are not counts.
                let marks = if c.is_iwarp() {
                    format!("{} ECN CE", g.ecn_ce)
                } else {
                    format!(
                        "{} ECN CE, {} CNPs, {} FECN, {} BECN",
                        g.ecn_ce, g.cnps, g.fecn, g.becn
                    )
                };
                let _ = writeln!(
                    s,
                    "      congestion: {marks} from {} to {} (frames {})",
                    rel(g.first_ts_ns),
                    rel(g.last_ts_ns),
                    frames.join(",")
                );
            }
            if c.is_iwarp() && c.cm_state != crate::engine::CmState::NotSeen {
                let _ = writeln!(s, "      {}", ird_ord_line(c));
            }
            if c.carries != Some(Carries::RpcRdma) {
                continue;
            }
            let cm_cut = c.cm_cut;
            let private = |p: Option<rdma_dissectors::rpcrdma_cm::CmPrivateData>| match p {
                None if cm_cut => "not captured".to_string(),
                None => "none".to_string(),
                Some(p) => match p.v1() {
                    Some(v) => format!(
                        "v1 R={} send={} recv={}",
                        u8::from(v.remote_invalidate),
                        v.send_size,
                        v.recv_size
                    ),
                    None => match PrivateData::from(p).version {
                        Some(v) => format!("version {v} (unknown: its fields are not read)"),
                        None => "of a kind this build does not know".to_string(),
                    },
                },
            };
            if c.cm_state != crate::engine::CmState::NotSeen {
                let _ = writeln!(
                    s,
                    "      private data: client {} / server {}",
                    private(c.client_private),
                    private(c.server_private)
                );
            }
            match c.negotiated {
                Some(n) => {
                    let _ = writeln!(
                        s,
                        "      negotiated: remote invalidation {}, inline call {} B, reply {} B",
                        if n.remote_invalidation { "yes" } else { "no" },
                        n.inline_send,
                        n.inline_recv
                    );
                }
                None if c.cm_cut && c.cm_state == crate::engine::CmState::NotSeen => {
                    let frames: Vec<String> = c.cm_cut_frames.iter().map(u64::to_string).collect();
                    let _ = writeln!(
                        s,
                        "      negotiated: unknown (the capture's snap length cut {} CM messages between these hosts before their QP numbers, frames {}{}: which connection each set up is not known)",
                        c.cm_cut_messages,
                        frames.join(","),
                        if c.cm_cut_messages as usize > frames.len() { ",…" } else { "" }
                    );
                }
                None if c.cm_cut => {
                    let _ = writeln!(s, "      negotiated: unknown (the capture's snap length cut the CM messages' private data)");
                }
                None => {
                    let _ = writeln!(
                        s,
                        "      negotiated: unknown (the capture has no {} for this connection)",
                        words.exchange
                    );
                }
            }
            let chunk_bytes = c.chunk_bytes_known().map_or_else(
                || {
                    format!(
                        "unknown (the snap length cut {} replies' chunk lists)",
                        c.chunk_bytes_cut
                    )
                },
                super::units::bytes_exact,
            );
            let _ = writeln!(
                s,
                "      calls {} replies {} chunk bytes {chunk_bytes} remote invalidations {}/{}",
                c.calls, c.replies, c.remote_invalidations, c.replies
            );
            let opt = |v: Option<u32>| v.map_or("?".to_string(), |v| v.to_string());
            let _ = writeln!(
                s,
                "      credits: granted {}..{} (last {}), peak in flight {}, at the limit {}{}",
                opt(c.granted_min),
                opt(c.granted_max),
                opt(c.granted),
                c.peak_in_flight,
                ms_or_unknown(c.at_limit_known()),
                first_grant_words(c.first_grant_wait_ns)
            );
        }
    }

    /// Each client's connections in time order, and its outages.
    fn text_timeline(&self, s: &mut String, state: &State, filter: &Filter) {
        let start = state.totals.first_ts_ns;
        let _ = writeln!(s, "\nConnections of each client in time order");
        for tl in timeline(state, |c| self.shows(filter, c)) {
            let _ = writeln!(s, "  client {}", tl.client);
            for e in &tl.connections {
                let frames: Vec<String> = e.cm_frames.iter().map(u64::to_string).collect();
                let _ = writeln!(
                    s,
                    "    {} ({} {})",
                    e.describe(start),
                    e.words().frames,
                    if frames.is_empty() {
                        "none".to_string()
                    } else {
                        frames.join(",")
                    }
                );
            }
            for o in &tl.outages {
                let _ = writeln!(s, "    {}", o.describe(start));
            }
        }
    }

    /// Response times, where the time went, the slowest operations, and
    /// operations against transmissions.
    fn text_times(&self, s: &mut String, state: &State) {
        let start = state.totals.first_ts_ns;
        let _ = writeln!(
            s,
            "\nResponse times (µs) by procedure and transfer (p99 from {P99_SAMPLES} replies: with fewer it is the max)"
        );
        let rows = self.proc_rows();
        let w = proc_width(
            rows.iter()
                .map(|r| r.0.as_str())
                .chain(self.unanswered.keys().map(String::as_str))
                .chain(self.latency_unknown.keys().map(String::as_str)),
            40,
        );
        let _ = writeln!(
            s,
            "  {:<w$} {:<12} {:<12} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "procedure", "call", "reply", "count", "min", "mean", "p50", "p90", "p99", "max"
        );
        for (p, c, r, m) in rows {
            let p = proc_cell(&p, w);
            let p99 = if m.count >= P99_SAMPLES {
                micros(m.p99_us)
            } else {
                "-".to_string()
            };
            let _ = writeln!(
                s,
                "  {:<w$} {:<12} {:<12} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
                p,
                c.as_str(),
                r.as_str(),
                m.count,
                micros(m.min_us),
                micros(m.mean_us),
                micros(m.p50_us),
                micros(m.p90_us),
                p99,
                micros(m.max_us)
            );
        }
        for (p, n) in &self.unanswered {
            let _ = writeln!(s, "  {:<w$} unanswered: {n}", proc_cell(p, w));
        }
        for (p, n) in &self.latency_unknown {
            let _ = writeln!(
                s,
                "  {:<w$} answered, latency unknown (reply stamped before its call): {n}",
                proc_cell(p, w)
            );
        }
        if self.over_cap > 0 {
            let _ = writeln!(
                s,
                "  {} transactions of procedures past the tables' {} rows (their share of --memory-limit) are counted under {OTHER_PROCEDURES}; raise --memory-limit to see them apart",
                self.over_cap, self.max_rows
            );
        }
        let _ = writeln!(
            s,
            "\nWhere the time went (ms, median / p99) by procedure and transfer\n  (server before data: call to its first RDMA op, or to the reply when none; data: the RDMA Reads and Writes; server after data: last RDMA op to the reply; the call's and reply's own transfer and a wait for a credit are not measurable from one capture point)"
        );
        let phases = self.phase_rows();
        let w = proc_width(phases.iter().map(|p| p.procedure.as_str()), 30);
        let _ = writeln!(
            s,
            "  {:<w$} {:<12} {:<12} {:>7} {:>21} {:>21} {:>21} {:>21}",
            "procedure",
            "call",
            "reply",
            "count",
            "server before data",
            "data",
            "server after data",
            "total"
        );
        let ms = |m: Option<Summary>| {
            m.map_or("-".to_string(), |m| {
                if m.count >= P99_SAMPLES {
                    format!("{:.3} / {:.3}", m.p50_us / 1e3, m.p99_us / 1e3)
                } else {
                    format!("{:.3} / -", m.p50_us / 1e3)
                }
            })
        };
        for p in phases {
            let name = proc_cell(&p.procedure, w);
            let _ = writeln!(
                s,
                "  {:<w$} {:<12} {:<12} {:>7} {:>21} {:>21} {:>21} {:>21}",
                name,
                Transfer::from(p.call_transfer).as_str(),
                Transfer::from(p.reply_transfer).as_str(),
                p.total.count,
                ms(p.server_before_data),
                ms(p.data_movement),
                ms(p.server_after_data),
                ms(Some(p.total))
            );
        }
        let _ = writeln!(
            s,
            "\nSlowest operations (first transmission to reply; the {SLOWEST_TEXT} slowest)"
        );
        for o in self.slowest.iter().take(SLOWEST_TEXT) {
            let again = if o.transmissions > 1 {
                let earlier: Vec<String> = o
                    .earlier_connections
                    .iter()
                    .map(ToString::to_string)
                    .collect();
                format!(
                    ", {} transmissions (first frame {} on {})",
                    o.transmissions,
                    o.first_call_frame,
                    earlier.join(", ")
                )
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "  {:.3} ms  {} xid {:#010x} on {}: call frame {} at {}, reply frame {} at {}{again}",
                o.app_latency_us / 1e3,
                o.procedure,
                o.xid,
                o.connection,
                o.call_frame,
                rel(o.first_call_ts_ns, start),
                o.reply_frame,
                rel(o.reply_ts_ns, start)
            );
        }
        let _ = writeln!(
            s,
            "\nOperations and transmissions by procedure (a call sent again on a new connection is one operation)"
        );
        let ops = self.operation_rows();
        let w = proc_width(ops.iter().map(|o| o.procedure.as_str()), 40);
        for o in ops {
            let _ = writeln!(
                s,
                "  {:<w$} ops {:>7}  trans {:>7}",
                proc_cell(&o.procedure, w),
                o.ops,
                o.trans
            );
        }
    }

    /// The write chunk counts of the transactions whose lists were seen.
    fn write_chunks_seen(&self) -> (u64, u64, u64) {
        (
            self.write_chunks,
            self.empty_write_chunks,
            self.unused_write_chunks,
        )
    }

    /// The write chunk counts of every transaction, `None` when some
    /// transaction's lists were not seen: the count of the others is then
    /// a floor, and 0 of none seen would claim that none were offered.
    fn write_chunks_known(&self) -> Option<(u64, u64, u64)> {
        (self.chunks_not_seen + self.chunks_not_on_wire == 0).then(|| self.write_chunks_seen())
    }

    fn write_chunks_doc(&self) -> WriteChunks {
        let known = self.write_chunks_known();
        let (offered, empty, unused) = self.write_chunks_seen();
        WriteChunks {
            offered: known.map(|k| k.0),
            empty: known.map(|k| k.1),
            unused: known.map(|k| k.2),
            seen: self.chunks_seen,
            not_seen: self.chunks_not_seen,
            of_seen: WriteChunksSeen {
                offered,
                empty,
                unused,
            },
        }
    }

    /// Chunks, round trips, anomalies and the caps reached.
    fn text_chunks_and_anomalies(&self, s: &mut String, state: &State) {
        let _ = writeln!(s, "\nChunks");
        self.text_chunks(s);
        let _ = writeln!(s, "\nRound trips per RPC");
        self.text_round_trips_and_anomalies(s, state);
    }

    /// The segment totals and write chunks, unknown where the capture cut
    /// the chunk lists.
    fn text_chunks(&self, s: &mut String) {
        for (k, a) in &self.chunks {
            let _ = writeln!(
                s,
                "  {k:<6} segments {:>6}  advertised {:>22}  moved {:>22}  unused segments {}",
                a.segments,
                super::units::bytes_exact(a.advertised_bytes),
                super::units::bytes_exact(a.moved_bytes),
                a.unused_segments
            );
        }
        let (offered, empty, unused) = self.write_chunks_seen();
        let seen = self.chunks_seen;
        match self.write_chunks_known() {
            Some(_) => {
                let _ = writeln!(
                    s,
                    "  write chunks offered {offered}, empty {empty}, left unused by the reply {unused}"
                );
            }
            None if seen == 0 => {
                let _ = writeln!(
                    s,
                    "  segments and write chunks unknown: no transaction's chunk lists were seen"
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "  write chunks offered unknown, empty unknown, left unused by the reply unknown (in the {seen} {} whose chunk lists were seen: offered {offered}, empty {empty}, left unused {unused})",
                    plural(seen, "transaction", "transactions")
                );
            }
        }
        let cut = self.chunks_not_seen;
        if cut > 0 {
            let of = if seen > 0 {
                "; the segment rows are of the others"
            } else {
                ""
            };
            let _ = writeln!(
                s,
                "  {cut} {} chunk lists were cut by the capture's snap length: not counted{of}",
                plural(cut, "transaction's", "transactions'"),
            );
        }
    }

    /// Round trips, anomalies and the caps reached.
    fn text_round_trips_and_anomalies(&self, s: &mut String, state: &State) {
        for (k, v) in self.round_trips.iter().filter(|(k, _)| k.is_some()) {
            let _ = writeln!(s, "  {}: {v}", k.unwrap_or_default());
        }
        if let Some(v) = self.round_trips.get(&None) {
            let _ = writeln!(
                s,
                "  unknown: {v} (the capture's snap length cut their headers)"
            );
        }
        let _ = writeln!(s, "\nAnomalies");
        if self.kinds.is_empty() {
            let filter = self.filter.clone().unwrap_or(Filter::All);
            let unchecked = self.findings_not_checked(state, &filter);
            if unchecked.is_empty() {
                let _ = writeln!(s, "  none");
            } else {
                // "none" alone would read as "the peers behaved".
                let _ = writeln!(s, "  none found; not checked:");
                for n in unchecked {
                    let _ = writeln!(s, "    {}", n.text);
                }
            }
        }
        if let Some(hidden) = self.acks.summary() {
            let _ = writeln!(s, "  {hidden}");
        }
        for (k, a) in &self.kinds {
            let more = if a.count as usize > a.frames.len() {
                ", …"
            } else {
                ""
            };
            let frames: Vec<String> = a.frames.iter().map(u64::to_string).collect();
            let _ = writeln!(
                s,
                "  {} ({}, {}): {} — frames {}{more}",
                k.as_str(),
                k.severity().as_str(),
                k.rfc(),
                a.count,
                frames.join(",")
            );
            if let Some(e) = &a.example {
                let _ = writeln!(s, "      e.g. {e}");
            }
        }
        if state.evictions.connections
            + state.evictions.calls
            + state.evictions.qps
            + state.evictions.reads
            + state.evictions.nfs_errors_unlinked
            > 0
        {
            let e = state.evictions;
            let _ = writeln!(
                s,
                "\nCaps reached: {} connections, {} QPs, {} calls, {} reads evicted",
                e.connections, e.qps, e.calls, e.reads
            );
            if e.nfs_errors_unlinked > 0 {
                let _ = writeln!(
                    s,
                    "  {} calls answered DELAY/JUKEBOX forgotten before their retry (more than {} at once): their retries are not linked",
                    e.nfs_errors_unlinked,
                    crate::engine::RECENT_ERRORS
                );
            }
        }
    }
}

/// Seconds since the capture's first frame.
fn rel(ts: u64, start: Option<u64>) -> String {
    start.map_or_else(
        || "?".to_string(),
        |s| format!("{:.3} s", ts.saturating_sub(s) as f64 / 1e9),
    )
}

/// What the diagnosis looked at: "no cause found" means something only
/// when there were RPCs to judge.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Judged {
    pub operations: u64,
    pub connections: usize,
    pub rpc_connections: usize,
}

impl Judged {
    pub(crate) fn of(d: &crate::diagnosis::Diagnosis, state: &State) -> Self {
        Judged {
            operations: d.operations(),
            connections: state.connections.len(),
            rpc_connections: state
                .connections
                .values()
                .filter(|c| c.is_rpcrdma())
                .count(),
        }
    }
}

/// The diagnosis as text, largest impact first.
/// The widest a procedure column grows: a COMPOUND's whole operation
/// list up to here, beyond it cut with the count of its operations.
const PROC_WIDTH_MAX: usize = 100;

/// A procedure column's width: its longest name, at least `min`, at
/// most [`PROC_WIDTH_MAX`].
fn proc_width<'a>(names: impl Iterator<Item = &'a str>, min: usize) -> usize {
    names
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(min, PROC_WIDTH_MAX)
}

/// `p` in at most `w` characters: whole when it fits, else cut with `…`
/// and how many operations the COMPOUND has (`NFS COMPOUND(SEQUENCE,…; 14 ops)`),
/// so rows cut alike stay told apart by their count.
fn proc_cell(p: &str, w: usize) -> String {
    if p.chars().count() <= w {
        return p.to_string();
    }
    let suffix = match p.split_once('(') {
        Some((_, ops)) => format!("…; {} ops)", ops.split(',').count()),
        None => "…".to_string(),
    };
    let keep = w.saturating_sub(suffix.chars().count());
    format!("{}{suffix}", p.chars().take(keep).collect::<String>())
}

/// The connection-wide state a cause reads besides the findings it is
/// given: under a filter that part is not narrowed to what it kept.
fn connection_wide(c: CauseName) -> Option<&'static str> {
    Some(match c {
        CauseName::CreditWindowFull => "the credit window and the time at its limit",
        CauseName::NetworkLoss => "the frame and PSN-gap counts",
        CauseName::Congestion => "the ECN marks and CNPs",
        CauseName::ServerUnresponsive => "the connection state and the capture's end",
        CauseName::ReplyChunksInlineThreshold => "the negotiated inline threshold",
        CauseName::RpcErrors => "the client's later connections",
        _ => return None,
    })
}

/// The diagnosis in text: `filter` is the expression a filtered run kept
/// what it diagnosed by.
pub(crate) fn diagnosis_text(
    s: &mut String,
    causes: &[Cause],
    notes: &[String],
    judged: Judged,
    filter: Option<&str>,
) {
    let _ = writeln!(
        s,
        "\nDiagnosis{} (largest impact first; the rules: docs/diagnosis.md)",
        if filter.is_some() {
            " of what the filter kept"
        } else {
            ""
        }
    );
    let kept = if filter.is_some() {
        "what the filter kept"
    } else {
        "this capture"
    };
    if causes.is_empty() && judged.operations == 0 {
        let others = judged.connections.saturating_sub(judged.rpc_connections);
        let _ = writeln!(
            s,
            "  nothing to judge: no RPC-over-RDMA call in {kept}{}; the causes are measured on RPCs, so none is named (protocol findings on the other traffic are under Anomalies)",
            if others > 0 {
                format!(" ({} carrying other traffic)", count(others as u64, "RDMA connection"))
            } else {
                String::new()
            }
        );
    } else if causes.is_empty() {
        let _ = writeln!(
            s,
            "  no cause found: looked at {} on {} in {kept}; nothing costs them time or fails them beyond the rules' thresholds",
            count(judged.operations, "RPC"),
            count(judged.rpc_connections as u64, "connection")
        );
    }
    for (i, c) in causes.iter().enumerate() {
        let _ = writeln!(
            s,
            "  {}. {} (fix: {}; impact {:.1}%)",
            i + 1,
            c.cause.as_str(),
            c.peer.as_str(),
            100.0 * c.impact.score
        );
        let _ = writeln!(s, "     {}", c.impact.measured);
        if let (Some(_), Some(what)) = (filter, connection_wide(c.cause)) {
            let _ = writeln!(
                s,
                "     (from the whole connections, not only what the filter kept: {what})"
            );
        }
        let e = &c.evidence;
        let mut parts = Vec::new();
        if !e.connections.is_empty() {
            parts.push(format!("connections {}", e.connections.join(", ")));
        }
        if !e.xids.is_empty() {
            parts.push(format!("xids {}", e.xids.join(", ")));
        }
        if !e.frames.is_empty() {
            let f: Vec<String> = e.frames.iter().map(u64::to_string).collect();
            parts.push(format!("frames {}", f.join(",")));
        }
        if let (Some(a), Some(b)) = (e.from_s, e.to_s) {
            parts.push(format!("{a:.3} s .. {b:.3} s"));
        }
        if !parts.is_empty() {
            let _ = writeln!(s, "     evidence: {}", parts.join("; "));
        }
        for x in &e.examples {
            let _ = writeln!(s, "       - {x}");
        }
        let _ = writeln!(s, "     advice: {}", c.advice);
    }
    // After the causes: the first line under the heading is the cause
    // that matters most, or that there is none.
    for n in notes {
        let _ = writeln!(s, "  {n}");
    }
}

impl Sink for Report {
    fn finding(&mut self, f: Finding) -> Flow {
        self.add(&f);
        Flow::Continue
    }

    /// Only a filter on `time` needs the frames: it counts from the first.
    fn wants_frames(&self) -> bool {
        self.filter.as_ref().is_some_and(|f| f.uses(Field::Time))
    }

    fn frame(&mut self, f: &crate::engine::Frame<'_>) -> Flow {
        if let Some(filter) = &mut self.filter {
            filter.saw(f.ts_ns);
        }
        Flow::Continue
    }

    fn end(&mut self, _: Option<&Engine>, _: &Progress, _: &End) {
        self.finish();
    }
}

/// `12.345 ms`, or `unknown` when no credit grant was seen (the limit is
/// then not known: 0 would say the window never filled).
fn ms_or_unknown(ns: Option<u64>) -> String {
    ns.map_or_else(
        || "unknown".to_string(),
        |ns| format!("{:.3} ms", ns as f64 / 1e6),
    )
}

/// `, waiting for the first grant 46.391 ms`: the first call's wait on the
/// implicit single credit (RFC 8166 3.3.1) before any reply granted more,
/// which is how every connection starts and not a full window.
fn first_grant_words(ns: Option<u64>) -> String {
    ns.map_or_else(String::new, |ns| {
        format!(", waiting for the first grant {:.3} ms", ns as f64 / 1e6)
    })
}

/// Samples a p99 needs to be shown: with fewer, the 99th percentile is the
/// largest sample or between the largest two, which `max` already says;
/// printed as a percentile it would claim a tail that was not measured.
pub const P99_SAMPLES: u64 = 100;

/// Microseconds as text: whole ones without a `.0` (pcap's µs timestamps
/// give whole ones), a fraction to one decimal.
pub fn micros(us: f64) -> String {
    let tenths = (us * 10.0).round() / 10.0;
    if tenths.fract() == 0.0 {
        format!("{tenths:.0}")
    } else {
        format!("{tenths:.1}")
    }
}

/// What the iWARP streams carried and what of them the capture lacked: the
/// counterpart of the ICRC line (TCP retransmits under iWARP, so holes in a
/// stream are what the capture missed, and the checks that needed those
/// octets were skipped).
/// An iWARP connection's RDMA Read queue depths from its MPA exchange
/// (RFC 6581 5): each side's IRD/ORD, or why it is not known.
fn ird_ord_line(c: &crate::engine::Connection) -> String {
    use crate::engine::CmMsg;
    let sent = |m: fn(CmMsg) -> bool| c.cm_events.iter().any(|e| m(e.message));
    let side = |x: Option<crate::engine::IrdOrd>, seen: bool| match x {
        Some(x) => format!("{}/{}", x.ird, x.ord),
        None if seen => "none (MPA revision 1)".to_string(),
        None => "not seen".to_string(),
    };
    format!(
        "RDMA Read queues (IRD/ORD, RFC 6581): client {}, server {}",
        side(c.client_ird_ord, sent(|m| m == CmMsg::MpaRequest)),
        side(
            c.server_ird_ord,
            sent(|m| matches!(m, CmMsg::MpaReply | CmMsg::MpaReject))
        )
    )
}

fn iwarp_line(n: &crate::engine::IwarpCounts) -> String {
    let mut s = format!(
        "iWARP: {}, {}, {}",
        count(n.frames, "TCP frame"),
        count(n.mpa_requests, "MPA Request"),
        count(n.fpdus, "FPDU")
    );
    if n.crc_invalid > 0 {
        let _ = write!(s, " ({} with a wrong CRC32c)", n.crc_invalid);
    }
    if n.gaps == 0 {
        s.push_str("; no stream octet missing");
    } else {
        let _ = write!(
            s,
            "; {} ({} B the capture lacks: what they carried was not checked)",
            count(n.gaps, "stream hole"),
            n.gap_bytes
        );
    }
    if n.resyncs > 0 {
        let _ = write!(
            s,
            ", framing found again {} ({} by FPDU length and header plausibility alone; {} B passed over)",
            count(n.resyncs, "time"),
            n.resyncs_uncertain,
            n.resync_skipped_bytes
        );
    }
    s
}

/// `one` for 1, else `many`.
fn plural(n: u64, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 {
        one
    } else {
        many
    }
}

#[cfg(test)]
mod proc_column_tests {
    use super::{proc_cell, proc_width, PROC_WIDTH_MAX};

    #[test]
    fn a_compound_past_the_widest_column_is_cut_with_its_operation_count() {
        let ops: Vec<String> = (0..40).map(|i| format!("OP{i}")).collect();
        let long = format!("NFS COMPOUND({})", ops.join(","));
        let w = proc_width([long.as_str(), "NFS NULL"].into_iter(), 40);
        assert_eq!(w, PROC_WIDTH_MAX);
        let cell = proc_cell(&long, w);
        assert_eq!(cell.chars().count(), w, "{cell}");
        assert!(cell.starts_with("NFS COMPOUND(OP0,OP1,"), "{cell}");
        assert!(cell.ends_with("…; 40 ops)"), "{cell}");
        assert_eq!(proc_cell("NFS NULL", w), "NFS NULL");
        assert_eq!(proc_width(["NFS NULL"].into_iter(), 40), 40);
    }
}
