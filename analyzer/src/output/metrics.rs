//! Prometheus metrics: what the engine finds and holds, as an OpenMetrics
//! (or Prometheus text) exposition, for `live --metrics ADDR` (served by
//! [`exporter`](super::exporter)) and `report --metrics-out FILE` (a
//! node_exporter textfile).
//!
//! ```text
//!  pipeline thread: Finding ──► Metrics (plain counters and histograms, no locks)
//!                   tick, at most every 250 ms ──► Snapshot (+ the engine's state) ──► Published
//!  scrape (HTTP thread): Published ──► the latest Snapshot ──► exposition text
//! ```
//!
//! The pipeline never waits for a scrape: it swaps a new snapshot in (an
//! `Arc` under a lock held for the swap only), and a scrape encodes the one
//! it took.
//!
//! Label cardinality is bounded so a long-running exporter cannot grow
//! without bound: per-connection series cover the
//! [`MetricsConfig::max_connections`] connections with the latest traffic
//! (the others are counted in `rdma_metrics_connections_unlabelled`, and
//! every per-connection figure also has a total without the label);
//! procedures beyond [`MetricsConfig::max_procedures`] distinct ones are
//! counted under `procedure="(other)"` (and in
//! `rdma_metrics_procedures_over_cap_total`). Anomaly kinds, transfer modes
//! and chunk kinds are closed sets.
//!
//! Latency histograms use a fixed log-linear layout ([`LATENCY_BOUNDS_NS`]):
//! four buckets per power of two, upper bounds (4, 5, 6, 7) × 2^k µs for
//! k = 0..22, from 4 µs to 29.36 s, then +Inf. A bucket's upper bound is at
//! most 1.25 times its lower one, so `histogram_quantile` is off by less
//! than 25% of the value (the report's [`LogLinear`] histogram, with 4
//! sub-buckets per power of two instead of 64, to keep 93 series per
//! procedure).
//!
//! Unknown values are absent, never 0: a connection with no credit grant
//! yet has no `rdma_connection_credits_granted` sample; an unknown program
//! is an empty (absent) label.

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::diagnosis::{CauseName, Diagnosis, Peer, Window};
use crate::engine::device_counters::DeviceCounter;
use crate::engine::{
    ChunkKind, Engine, Evictions, Finding, Kind, LogLinear, Totals, Transaction, Transfer,
};
use crate::pipeline::{End, Flow, Progress, Sink};

/// Power-of-two steps of the latency layout.
const OCTAVES: usize = 23;
/// Buckets per power of two.
const SUB: usize = 4;
/// Finite latency buckets.
pub const LATENCY_BUCKETS: usize = OCTAVES * SUB;

/// The latency histogram, over whole µs rounded down after taking 1 ns
/// off: a sample of `ns` is under the `le = B` µs bucket iff `ns <= B`
/// µs, iff `(ns - 1) / 1000 < B` ([`micros_le`]), and `B` is the `high` of
/// a [`LogLinear`] bucket, so `le` counts are sums of whole buckets.
type Buckets = LogLinear<{ SUB as u64 }>;

/// The `LogLinear<4>` bucket whose `high` is the first `le` bound, 4 µs:
/// the samples up to 4 µs share Prometheus' first bucket.
const FIRST: usize = 3;

/// Upper bounds of the latency buckets, ns: (4 + j) × 2^k µs for k = 0..22,
/// j = 0..3 (4 µs, 5, 6, 7, 8, 10, 12, 14, 16, 20, ... 29.36 s), then +Inf.
pub const LATENCY_BOUNDS_NS: [u64; LATENCY_BUCKETS] = latency_bounds();

const fn latency_bounds() -> [u64; LATENCY_BUCKETS] {
    let mut b = [0u64; LATENCY_BUCKETS];
    let mut i = 0;
    while i < LATENCY_BUCKETS {
        b[i] = Buckets::high(FIRST + i) * 1000;
        i += 1;
    }
    b
}

/// The value a latency of `ns` is recorded as (see [`Buckets`]).
fn micros_le(ns: u64) -> u64 {
    ns.saturating_sub(1) / 1000
}

/// The bucket a latency of `ns` falls in (`LATENCY_BUCKETS` is +Inf):
/// the first whose upper bound is at least `ns`.
pub fn latency_bucket(ns: u64) -> usize {
    Buckets::bucket(micros_le(ns))
        .saturating_sub(FIRST)
        .min(LATENCY_BUCKETS)
}

/// Non-cumulative counts by `le` bucket, +Inf last.
fn le_counts(h: &Buckets) -> [u64; LATENCY_BUCKETS + 1] {
    let mut out = [0; LATENCY_BUCKETS + 1];
    for (b, &n) in h.counts().iter().enumerate() {
        out[b.saturating_sub(FIRST).min(LATENCY_BUCKETS)] += n;
    }
    out
}

/// Every transfer mode, in the order the counters keep them.
const TRANSFERS: [Transfer; 8] = [
    Transfer::Inline,
    Transfer::ReadChunks,
    Transfer::LongCall,
    Transfer::WriteChunks,
    Transfer::ReplyChunk,
    Transfer::Error,
    Transfer::None,
    Transfer::Unknown,
];

fn transfer_index(t: Transfer) -> usize {
    match t {
        Transfer::Inline => 0,
        Transfer::ReadChunks => 1,
        Transfer::LongCall => 2,
        Transfer::WriteChunks => 3,
        Transfer::ReplyChunk => 4,
        Transfer::Error => 5,
        Transfer::None => 6,
        Transfer::Unknown => 7,
    }
}

const CHUNK_KINDS: [&str; 3] = ["read", "write", "reply"];

fn chunk_index(k: ChunkKind) -> usize {
    match k {
        ChunkKind::Read => 0,
        ChunkKind::Write => 1,
        ChunkKind::Reply => 2,
    }
}

/// How far the labels may spread.
#[derive(Debug, Clone, Copy)]
pub struct MetricsConfig {
    /// Connections with series of their own (the most recently active).
    pub max_connections: usize,
    /// Distinct (program, version, procedure) label sets; later ones are
    /// counted under `procedure="(other)"`.
    pub max_procedures: usize,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            max_connections: 256,
            max_procedures: 256,
        }
    }
}

impl MetricsConfig {
    /// The same caps, lowered where `bytes` cannot hold them: half for the
    /// procedure rows, half for the connection rows. A procedure row is
    /// held three times (the counts, the published snapshot, the encoding
    /// being served) and a connection row twice; labels are counted at a
    /// generous length, since a COMPOUND's label names its operations.
    #[must_use]
    pub fn within(self, bytes: usize) -> Self {
        use std::mem::size_of;
        const LABEL: usize = 128;
        let proc_row = 3 * (size_of::<ProcRow>() + 3 * LABEL);
        let conn_row = 2 * (size_of::<ConnRow>() + 3 * LABEL);
        MetricsConfig {
            max_connections: self.max_connections.min(bytes / 2 / conn_row),
            max_procedures: self.max_procedures.min(bytes / 2 / proc_row).max(1),
        }
    }
}

/// A cause as a series: its name, its peer, its impact score.
type Scored = (CauseName, Peer, f64);

/// The engine's hash tables' hasher (keys come off the wire).
type Map<K, V> = HashMap<K, V, foldhash::quality::RandomState>;

/// A transaction's program, program name, version, NFSv4 minor version and
/// procedure number.
type ProcNumbers = (
    Option<u32>,
    Option<&'static str>,
    Option<u32>,
    Option<u32>,
    Option<u32>,
);

/// The label value of the procedures beyond the cap.
pub const OTHER_PROCEDURE: &str = "(other)";

/// One (program, version, procedure) and what was counted for it.
#[derive(Debug, Clone)]
struct ProcRow {
    /// Program name (`NFS`), or its number when it has no name; empty
    /// (an absent label) when not seen (a Long Call whose RPC header was
    /// not seen).
    program: String,
    /// Program version; empty when not seen.
    version: String,
    /// Procedure name (`READ`, `COMPOUND(SEQUENCE,PUTFH,READ)`), or
    /// `proc N` when it has no name; empty when not seen.
    procedure: String,
    /// Calls by call transfer mode (index of [`TRANSFERS`]).
    calls: [u64; TRANSFERS.len()],
    /// Replies by reply transfer mode.
    replies: [u64; TRANSFERS.len()],
    /// Latency, as [`latency_bucket`] places it.
    latency: Buckets,
    latency_sum_ns: u128,
}

impl ProcRow {
    fn new(program: String, version: String, procedure: String) -> Self {
        ProcRow {
            program,
            version,
            procedure,
            calls: [0; TRANSFERS.len()],
            replies: [0; TRANSFERS.len()],
            latency: Buckets::default(),
            latency_sum_ns: 0,
        }
    }
}

/// Segments and bytes of one chunk list.
#[derive(Debug, Clone, Copy, Default)]
struct ChunkRow {
    segments: u64,
    advertised_bytes: u64,
    moved_bytes: u64,
}

/// What the findings added up to: owned by the pipeline thread, no locks.
#[derive(Debug, Clone)]
struct Counts {
    procs: Vec<ProcRow>,
    procs_over_cap: u64,
    chunks: [ChunkRow; 3],
    anomalies: [u64; Kind::ALL.len()],
    /// Acknowledged occurrences, apart from `anomalies`; `None` when the
    /// run has no acknowledgements (no family is written then).
    acknowledged: Option<[u64; Kind::ALL.len()]>,
    transactions: u64,
}

/// One connection's series.
#[derive(Debug, Clone)]
struct ConnRow {
    id: String,
    client: Option<String>,
    server: Option<String>,
    port: Option<u16>,
    calls: u64,
    replies: u64,
    chunk_bytes: Option<u64>,
    remote_invalidations: u64,
    anomalies: u64,
    granted: Option<u32>,
    requested: Option<u32>,
    in_flight: u32,
    peak_in_flight: u32,
    at_limit_ns: Option<u64>,
}

/// The engine's state and the source's losses at one point, with the
/// findings' counts: everything one scrape shows.
#[derive(Debug, Clone)]
pub struct Snapshot {
    counts: Counts,
    totals: Totals,
    evictions: Evictions,
    tracked_connections: u64,
    tracked_qps: u64,
    outstanding_calls: u64,
    connections: Vec<ConnRow>,
    unlabelled_connections: u64,
    /// The diagnosis's causes (name, peer, impact score), largest first.
    causes: Vec<Scored>,
    /// The window's width (s) and its causes, when there is one (`live`).
    window: Option<(f64, Vec<Scored>)>,
    progress: Progress,
}

impl Snapshot {
    fn empty(max_procedures: usize) -> Self {
        Snapshot {
            counts: Counts {
                procs: Vec::with_capacity(max_procedures.min(64)),
                procs_over_cap: 0,
                chunks: [ChunkRow::default(); 3],
                anomalies: [0; Kind::ALL.len()],
                acknowledged: None,
                transactions: 0,
            },
            totals: Totals::default(),
            evictions: Evictions::default(),
            tracked_connections: 0,
            tracked_qps: 0,
            outstanding_calls: 0,
            connections: Vec::new(),
            unlabelled_connections: 0,
            causes: Vec::new(),
            window: None,
            progress: Progress::default(),
        }
    }
}

/// Figures of the process itself, read at scrape time; the wiring passes
/// the system calls in (this module does no system calls of its own).
#[derive(Debug, Clone, Copy)]
pub struct Process {
    /// CPU seconds used so far (user + system).
    pub cpu_seconds: fn() -> f64,
    /// Resident memory, bytes, when known.
    pub resident_bytes: fn() -> Option<u64>,
    /// This host's /proc/self/mountstats, when it can be read: its RDMA
    /// mounts' counters become series (`mountstats_metrics`).
    pub mountstats: fn() -> Option<String>,
    /// This host's RDMA devices' counters (sysfs).
    pub device_counters: fn() -> Vec<DeviceCounter>,
}

/// The latest snapshot, shared between the pipeline (which swaps new ones
/// in) and whoever encodes it (a scrape).
#[derive(Debug, Clone)]
pub struct Published(Arc<Mutex<Arc<Snapshot>>>);

impl Published {
    fn new(s: Snapshot) -> Self {
        Published(Arc::new(Mutex::new(Arc::new(s))))
    }

    /// The latest snapshot.
    pub fn latest(&self) -> Arc<Snapshot> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn publish(&self, s: Snapshot) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Arc::new(s);
    }
}

/// Which text format an exposition is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0 text (`application/openmetrics-text`), what
    /// Prometheus asks for first.
    OpenMetrics,
    /// The Prometheus text format 0.0.4 (`text/plain`), what
    /// node_exporter's textfile collector and older scrapers read.
    PrometheusText,
}

impl Format {
    /// The HTTP content type.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::PrometheusText => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

/// Encodes snapshots (a scrape, the textfile).
#[derive(Debug, Clone)]
pub struct Exposition {
    published: Published,
    process: Option<Process>,
}

impl Exposition {
    /// The exposition of the latest snapshot in `format`.
    pub fn encode(&self, format: Format) -> String {
        let snap = self.published.latest();
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Scrape {
            snap,
            process: self.process,
        }));
        let mut text = String::with_capacity(64 << 10);
        // Writing into a String cannot fail; an encoder error would be a
        // bug in a metric name, caught by the tests.
        let _ = prometheus_client::encoding::text::encode(&mut text, &registry);
        match format {
            Format::OpenMetrics => text,
            Format::PrometheusText => prometheus_text(&text),
        }
    }
}

/// The Prometheus text format 0.0.4 from OpenMetrics text (which is all
/// prometheus-client writes): the two differ, for what this module writes,
/// in the name a counter's HELP and TYPE lines give (`x` in OpenMetrics,
/// `x_total` in 0.0.4, where the family is named as its samples are) and in
/// the `# UNIT` and `# EOF` lines, which 0.0.4 does not have.
pub fn prometheus_text(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    let mut lines = openmetrics.lines().peekable();
    while let Some(line) = lines.next() {
        if line.starts_with("# EOF") || line.starts_with("# UNIT ") {
            continue;
        }
        // prometheus-client writes a family's TYPE line right after its HELP.
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            let counter = lines
                .peek()
                .and_then(|next| next.strip_prefix("# TYPE "))
                .and_then(|t| t.strip_prefix(name))
                == Some(" counter");
            if counter {
                lines.next();
                let _ = writeln!(out, "# HELP {name}_total {help}");
                let _ = writeln!(out, "# TYPE {name}_total counter");
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Writes the exposition of `exposition` to `path` the way node_exporter's
/// textfile collector expects it: Prometheus text format, into a temporary
/// file in the same directory that is then renamed over `path`, so the
/// collector never reads half a file (the temporary file is made safely
/// in a folder others may write: `crate::files`).
///
/// # Errors
/// When `path` is not a regular file or a new name, or the file cannot be
/// written or renamed.
pub fn write_textfile(exposition: &Exposition, path: &Path) -> io::Result<()> {
    let text = exposition.encode(Format::PrometheusText);
    crate::files::write_whole(path, text.as_bytes())
}

/// How often a new snapshot is published while a run goes on.
const PUBLISH_EVERY: Duration = Duration::from_millis(250);

/// The sink that counts: findings into plain counters, the engine's state into
/// a snapshot on a timer, for an [`Exposition`] to encode.
#[derive(Debug)]
pub struct Metrics {
    config: MetricsConfig,
    counts: Counts,
    /// A procedure's numbers, then its name, to its row in `counts.procs`:
    /// looked up for every transaction without formatting or allocating.
    proc_index: Map<ProcNumbers, Map<Box<str>, usize>>,
    /// Procedures in the index (the cap counts them).
    indexed: usize,
    /// The row `(other)` counts into, once the cap is reached.
    other_row: Option<usize>,
    published: Published,
    last_publish: Option<Instant>,
    /// The causes in the findings so far (bounded, like the counters).
    diagnosis: Diagnosis,
    /// Findings counted apart, so alerts on `rdma_anomalies_total` do not
    /// fire on what the user acknowledged.
    acks: super::ack::Acks,
    /// The causes over the last minutes of the capture clock (`live`).
    window: Option<Window>,
}

impl Metrics {
    /// Counts with `config`'s caps; `process` adds the process's own
    /// figures (CPU, memory) to every exposition.
    pub fn new(config: MetricsConfig) -> Self {
        let empty = Snapshot::empty(config.max_procedures);
        Metrics {
            config,
            counts: empty.counts.clone(),
            proc_index: Map::default(),
            indexed: 0,
            other_row: None,
            published: Published::new(empty),
            last_publish: None,
            diagnosis: Diagnosis::default(),
            acks: super::ack::Acks::default(),
            window: None,
        }
    }

    /// The same sink counting `acks`' findings in
    /// `rdma_anomalies_acknowledged_total` instead of `rdma_anomalies_total`.
    #[must_use]
    pub fn with_acks(mut self, acks: super::ack::Acks) -> Self {
        if !acks.is_empty() {
            self.counts.acknowledged = Some([0; Kind::ALL.len()]);
        }
        self.acks = acks;
        self
    }

    /// Also names the causes over a sliding window `width_ns` wide on the
    /// capture clock (`rdma_diagnosis_window_cause_impact`), beside those
    /// since the start.
    #[must_use]
    pub fn with_window(mut self, width_ns: u64) -> Self {
        self.window = Some(Window::new(width_ns));
        self
    }

    /// What encodes this sink's snapshots, with `process`'s figures.
    pub fn exposition(&self, process: Option<Process>) -> Exposition {
        Exposition {
            published: self.published.clone(),
            process,
        }
    }

    /// Takes one finding.
    pub fn add(&mut self, f: &Finding) {
        self.diagnosis.add(f);
        if let Some(w) = &mut self.window {
            w.add(f);
        }
        match f {
            Finding::Transaction(t) => self.transaction(t),
            Finding::Anomaly(a) => {
                let i = a.kind.index();
                match &mut self.counts.acknowledged {
                    Some(acked) if self.acks.covers(a) => acked[i] += 1,
                    _ => self.counts.anomalies[i] += 1,
                }
            }
        }
    }

    fn proc_row(&mut self, t: &Transaction) -> usize {
        let numbers = (t.program, t.program_name, t.version, t.minorversion, t.proc);
        // Names are never empty: "" stands for none.
        let name = t.procedure.as_deref().unwrap_or("");
        if let Some(&i) = self.proc_index.get(&numbers).and_then(|m| m.get(name)) {
            return i;
        }
        if self.indexed >= self.config.max_procedures {
            self.counts.procs_over_cap += 1;
            return *self.other_row.get_or_insert_with(|| {
                self.counts.procs.push(ProcRow::new(
                    String::new(),
                    String::new(),
                    OTHER_PROCEDURE.to_string(),
                ));
                self.counts.procs.len() - 1
            });
        }
        let program = match (t.program_name, t.program) {
            (Some(name), _) => name.to_string(),
            (None, Some(n)) => n.to_string(),
            (None, None) => String::new(),
        };
        let procedure = match (&t.procedure, t.proc) {
            (Some(p), _) => p.clone(),
            (None, Some(n)) => format!("proc {n}"),
            (None, None) => String::new(),
        };
        // NFSv4's minor version goes in the version label ("4.1"), as NFS
        // names it: at most three values of one label, not a new label on
        // every series.
        let version = match (t.version, t.minorversion) {
            (Some(v), Some(m)) => format!("{v}.{m}"),
            (Some(v), None) => v.to_string(),
            (None, _) => String::new(),
        };
        self.counts
            .procs
            .push(ProcRow::new(program, version, procedure));
        let i = self.counts.procs.len() - 1;
        self.proc_index
            .entry(numbers)
            .or_default()
            .insert(name.into(), i);
        self.indexed += 1;
        i
    }

    fn transaction(&mut self, t: &Transaction) {
        self.counts.transactions += 1;
        let i = self.proc_row(t);
        let Some(row) = self.counts.procs.get_mut(i) else {
            return;
        };
        row.calls[transfer_index(t.call_transfer)] += 1;
        // As the report counts them: a reply is a transaction with a reply
        // time; its latency is reply minus call, and a reply stamped before
        // its call (the clock went backwards) has none: a 0 s sample would
        // be a lie the report does not tell.
        if let Some(r) = t.reply_ts_ns {
            row.replies[transfer_index(t.reply_transfer)] += 1;
            if let Some(ns) = r.checked_sub(t.call_ts_ns) {
                row.latency.record(micros_le(ns));
                row.latency_sum_ns += u128::from(ns);
            }
        }
        for s in &t.chunks {
            let c = &mut self.counts.chunks[chunk_index(s.kind)];
            c.segments += 1;
            c.advertised_bytes += u64::from(s.length);
            c.moved_bytes += s.bytes_moved;
        }
    }

    /// Publishes a snapshot of the counts and `engine`'s state now.
    pub fn publish(&mut self, engine: Option<&Engine>, progress: &Progress) {
        self.last_publish = Some(Instant::now());
        let mut s = Snapshot::empty(0);
        s.counts = self.counts.clone();
        s.progress = *progress;
        if let Some(engine) = engine {
            let state = engine.state();
            s.totals = state.totals.clone();
            s.evictions = state.evictions;
            s.tracked_connections = state.connections.len() as u64;
            s.tracked_qps = engine.tracked_qps() as u64;
            s.outstanding_calls = engine.outstanding_calls() as u64;
            let now = state.totals.last_ts_ns.unwrap_or(0);
            // The most recently active connections get series; ties go to
            // the older connection so that the set stays put.
            let mut conns: Vec<_> = state.connections.values().collect();
            conns.sort_by_key(|c| (std::cmp::Reverse(c.last_ts_ns), c.id));
            let shown = conns.len().min(self.config.max_connections);
            s.unlabelled_connections = (conns.len() - shown) as u64;
            s.connections = conns
                .into_iter()
                .take(shown)
                .map(|c| ConnRow {
                    id: c.id.to_string(),
                    client: c.client.map(|q| q.to_string()),
                    server: c.server.map(|q| q.to_string()),
                    port: c.port,
                    calls: c.calls,
                    replies: c.replies,
                    chunk_bytes: c.chunk_bytes_known(),
                    remote_invalidations: c.remote_invalidations,
                    anomalies: c.anomalies,
                    granted: c.granted,
                    requested: c.requested,
                    in_flight: c.in_flight,
                    peak_in_flight: c.peak_in_flight,
                    at_limit_ns: c.at_limit_known_until(now),
                })
                .collect();
            s.connections.sort_by(|a, b| a.id.cmp(&b.id));
            s.causes = self
                .diagnosis
                .causes(state)
                .into_iter()
                .map(|c| (c.cause, c.peer, c.impact.score))
                .collect();
            if let Some(w) = &mut self.window {
                w.observe(state);
            }
            s.window = self.window.as_ref().map(|w| {
                let causes = w.causes(state);
                let causes = causes
                    .into_iter()
                    .map(|c| (c.cause, c.peer, c.impact.score))
                    .collect();
                (w.width_ns() as f64 / 1e9, causes)
            });
        }
        if s.window.is_none() {
            // Not looked at yet: the window is there, naming nothing.
            s.window = self
                .window
                .as_ref()
                .map(|w| (w.width_ns() as f64 / 1e9, Vec::new()));
        }
        self.published.publish(s);
    }
}

impl Sink for Metrics {
    fn finding(&mut self, f: Finding) -> Flow {
        self.add(&f);
        Flow::Continue
    }

    fn observe(&mut self, f: &Finding) -> Flow {
        self.add(f);
        Flow::Continue
    }

    fn tick(&mut self, engine: Option<&Engine>, progress: &Progress) -> Flow {
        if let (Some(w), Some(e)) = (&mut self.window, engine) {
            w.observe(e.state());
        }
        if self
            .last_publish
            .is_none_or(|t| t.elapsed() >= PUBLISH_EVERY)
        {
            self.publish(engine, progress);
        }
        Flow::Continue
    }

    fn end(&mut self, engine: Option<&Engine>, progress: &Progress, _: &End) {
        self.publish(engine, progress);
    }
}

/// One scrape's collector: encodes a snapshot.
#[derive(Debug)]
struct Scrape {
    snap: Arc<Snapshot>,
    process: Option<Process>,
}

/// Writes one metric family (a descriptor and its samples).
struct Families<'a, 'b> {
    enc: &'a mut DescriptorEncoder<'b>,
}

impl Families<'_, '_> {
    fn counter(&mut self, name: &str, help: &str, v: u64) -> fmt::Result {
        let m = self
            .enc
            .encode_descriptor(name, help, None, MetricType::Counter)?;
        ConstCounter::new(v).encode(m)
    }

    fn counter_f64(&mut self, name: &str, help: &str, v: f64) -> fmt::Result {
        let m = self
            .enc
            .encode_descriptor(name, help, None, MetricType::Counter)?;
        ConstCounter::new(v).encode(m)
    }

    fn gauge(&mut self, name: &str, help: &str, v: i64) -> fmt::Result {
        let m = self
            .enc
            .encode_descriptor(name, help, None, MetricType::Gauge)?;
        ConstGauge::new(v).encode(m)
    }

    /// A counter family with one label.
    fn counters<'v>(
        &mut self,
        name: &str,
        help: &str,
        label: &str,
        rows: impl IntoIterator<Item = (&'v str, u64)>,
    ) -> fmt::Result {
        let mut m = self
            .enc
            .encode_descriptor(name, help, None, MetricType::Counter)?;
        for (value, v) in rows {
            let labels = [(label, value)];
            ConstCounter::new(v).encode(m.encode_family(&labels)?)?;
        }
        Ok(())
    }

    /// A gauge family with one label.
    fn gauges<'v>(
        &mut self,
        name: &str,
        help: &str,
        label: &str,
        rows: impl IntoIterator<Item = (&'v str, i64)>,
    ) -> fmt::Result {
        let mut m = self
            .enc
            .encode_descriptor(name, help, None, MetricType::Gauge)?;
        for (value, v) in rows {
            let labels = [(label, value)];
            ConstGauge::new(v).encode(m.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

/// The RDMA devices' counters, one family, labelled as sysfs names them.
fn device_counters(f: &mut Families<'_, '_>, all: &[DeviceCounter]) -> fmt::Result {
    let mut m = f.enc.encode_descriptor(
        "rdma_device_stat",
        "The RDMA devices' own counters (sysfs hw_counters: the driver's, e.g. rxe's rcvd_seq_err, duplicate_request, retry_exceeded_err; counters: the port's), by device, port, group and counter name",
        None,
        MetricType::Counter,
    )?;
    for d in all.iter().filter(|d| d.is_counter()) {
        let port = d.port.to_string();
        let labels = [
            ("device", d.device.as_str()),
            ("port", port.as_str()),
            ("group", d.group.as_str()),
            ("counter", d.name.as_str()),
        ];
        ConstCounter::new(d.value).encode(m.encode_family(&labels)?)?;
    }
    Ok(())
}

/// The label set of one procedure row.
fn proc_labels(p: &ProcRow) -> [(&'static str, &str); 3] {
    [
        ("program", p.program.as_str()),
        ("version", p.version.as_str()),
        ("procedure", p.procedure.as_str()),
    ]
}

impl Collector for Scrape {
    fn encode(&self, mut enc: DescriptorEncoder) -> fmt::Result {
        let mut f = Families { enc: &mut enc };
        self.rpcs(&mut f)?;
        self.chunks(&mut f)?;
        self.anomalies(&mut f)?;
        self.wire(&mut f)?;
        self.sources(&mut f)?;
        self.tables(&mut f)?;
        // Connections (capped).
        self.connections(&mut f)?;

        self.diagnosis(&mut f)?;
        self.process(&mut f)
    }
}

impl Scrape {
    /// RPCs by procedure and transfer mode.
    fn rpcs(&self, f: &mut Families<'_, '_>) -> fmt::Result {
        let s = &*self.snap;
        let c = &s.counts;
        // RPCs, by procedure and transfer mode.
        for (name, help, by) in [
            (
                "rdma_rpc_calls",
                "RPC calls by program, version, procedure and how the call travelled (counted when the transaction completes: answered, or closed out unanswered)",
                true,
            ),
            (
                "rdma_rpc_replies",
                "RPC replies by program, version, procedure and how the reply travelled",
                false,
            ),
        ] {
            let mut m = f
                .enc
                .encode_descriptor(name, help, None, MetricType::Counter)?;
            for p in &c.procs {
                let counts = if by { &p.calls } else { &p.replies };
                let [a, b, d] = proc_labels(p);
                for (t, &n) in TRANSFERS.iter().zip(counts) {
                    if n == 0 {
                        continue;
                    }
                    let labels = [a, b, d, ("transfer", t.as_str())];
                    ConstCounter::new(n).encode(m.encode_family(&labels)?)?;
                }
            }
        }
        {
            let mut m = f.enc.encode_descriptor(
                "rdma_rpc_latency_seconds",
                "Call to reply, by program, version and procedure (buckets: (4..7) x 2^k us, k = 0..22)",
                None,
                MetricType::Histogram,
            )?;
            let mut buckets: Vec<(f64, u64)> = LATENCY_BOUNDS_NS
                .iter()
                .map(|&b| (b as f64 / 1e9, 0))
                .chain(std::iter::once((f64::INFINITY, 0)))
                .collect();
            for p in &c.procs {
                let count: u64 = p.latency.counts().iter().sum();
                if count == 0 {
                    continue;
                }
                for (b, n) in buckets.iter_mut().zip(le_counts(&p.latency)) {
                    b.1 = n;
                }
                let labels = proc_labels(p);
                m.encode_family(&labels)?.encode_histogram::<NoLabelSet>(
                    p.latency_sum_ns as f64 / 1e9,
                    count,
                    &buckets,
                    None,
                )?;
            }
        }
        f.counter(
            "rdma_rpc_transactions",
            "Transactions the engine completed (answered or closed out)",
            c.transactions,
        )?;
        f.gauge(
            "rdma_rpc_outstanding_calls",
            "Calls waiting for their reply now",
            s.outstanding_calls as i64,
        )?;
        f.counter(
            "rdma_metrics_procedures_over_cap",
            "Transactions counted under procedure=\"(other)\": more distinct procedures than the cap",
            c.procs_over_cap,
        )?;

        Ok(())
    }

    /// Chunks and invalidation.
    fn chunks(&self, f: &mut Families<'_, '_>) -> fmt::Result {
        let s = &*self.snap;
        let c = &s.counts;
        // Chunks and invalidation.
        for (name, help, get) in [
            (
                "rdma_chunk_segments",
                "Chunk segments advertised, by chunk list (read, write, reply)",
                (|r: &ChunkRow| r.segments) as fn(&ChunkRow) -> u64,
            ),
            (
                "rdma_chunk_advertised_bytes",
                "Bytes advertised in chunk segments, by chunk list",
                |r: &ChunkRow| r.advertised_bytes,
            ),
            (
                "rdma_chunk_moved_bytes",
                "Bytes moved by RDMA Read and Write into or out of chunk segments, by chunk list",
                |r: &ChunkRow| r.moved_bytes,
            ),
        ] {
            f.counters(
                name,
                help,
                "kind",
                CHUNK_KINDS.iter().zip(&c.chunks).map(|(k, r)| (*k, get(r))),
            )?;
        }
        let t = &s.totals;
        f.counter(
            "rdma_remote_invalidations",
            "Replies sent with Send With Invalidate (RFC 8797)",
            t.remote_invalidations,
        )?;

        Ok(())
    }

    /// Anomalies: every kind, so rates start at 0.
    fn anomalies(&self, f: &mut Families<'_, '_>) -> fmt::Result {
        let s = &*self.snap;
        let c = &s.counts;
        // Anomalies: every kind, so rates start at 0.
        {
            let mut m = f.enc.encode_descriptor(
                "rdma_anomalies",
                "Anomalies found, by kind and severity",
                None,
                MetricType::Counter,
            )?;
            for (k, &n) in Kind::ALL.iter().zip(&c.anomalies) {
                let labels = [("kind", k.as_str()), ("severity", k.severity().as_str())];
                ConstCounter::new(n).encode(m.encode_family(&labels)?)?;
            }
        }
        if let Some(acked) = &c.acknowledged {
            let mut m = f.enc.encode_descriptor(
                "rdma_anomalies_acknowledged",
                "Anomalies acknowledged (--ignore, --ack), by kind and severity; not in rdma_anomalies_total",
                None,
                MetricType::Counter,
            )?;
            for (k, &n) in Kind::ALL.iter().zip(acked) {
                let labels = [("kind", k.as_str()), ("severity", k.severity().as_str())];
                ConstCounter::new(n).encode(m.encode_family(&labels)?)?;
            }
        }
        let naks = Kind::ALL
            .iter()
            .position(|k| *k == Kind::Nak)
            .and_then(|i| c.anomalies.get(i))
            .copied()
            .unwrap_or(0);
        f.counter("rdma_naks", "NAKs in AETHs (IBA 9.7.5.2)", naks)?;

        Ok(())
    }

    /// The wire.
    fn wire(&self, f: &mut Families<'_, '_>) -> fmt::Result {
        let s = &*self.snap;
        let t = &s.totals;
        // The wire.
        f.counter("rdma_frames", "Frames the engine handled", t.frames)?;
        f.counter("rdma_frame_bytes", "Bytes of the frames handled", t.bytes)?;
        f.counter(
            "rdma_transport_frames",
            "Frames with a Base Transport Header (RoCE or InfiniBand)",
            t.rdma_frames,
        )?;
        f.counter("rdma_cm_messages", "CM MADs", t.cm_messages)?;
        f.counter(
            "rdma_rpcrdma_messages",
            "RPC-over-RDMA messages decoded",
            t.rpcrdma_messages,
        )?;
        f.counter(
            "rdma_unassociated_frames",
            "Frames on queue pairs no connection could be found for",
            t.unassociated_frames,
        )?;
        if t.iwarp.frames > 0 {
            iwarp(f, &t.iwarp)?;
        }
        if t.iwarp_only() {
            // No sample rather than zeros: iWARP has no PSNs or ICRC, and a
            // 0 would read as "checked, all well" on a dashboard.
            return Ok(());
        }
        f.counter(
            "rdma_retransmissions",
            "Retransmitted request packets (PSN seen again)",
            t.retransmissions,
        )?;
        f.counter(
            "rdma_psn_gaps",
            "PSN gaps: packets the capture missed",
            t.psn_gaps,
        )?;
        f.counters(
            "rdma_icrc_checks",
            "ICRC verdicts: valid, invalid, or unchecked (cut by snaplen)",
            "result",
            [
                ("valid", t.icrc_valid),
                ("invalid", t.icrc_invalid),
                ("unchecked", t.icrc_unchecked),
            ],
        )?;

        Ok(())
    }

    /// What the sources lost.
    fn sources(&self, f: &mut Families<'_, '_>) -> fmt::Result {
        let s = &*self.snap;
        let t = &s.totals;
        // The sources.
        let p = &s.progress;
        f.counter(
            "rdma_probe_records",
            "Kernel probe records handled",
            t.probe_records,
        )?;
        if let Some(n) = p.probe_lost {
            f.counter(
                "rdma_probe_records_lost",
                "Probe records the kernel dropped (ring buffer full)",
                n,
            )?;
        }
        if let Some(n) = p.probe_undecodable {
            f.counter(
                "rdma_probe_records_undecodable",
                "Probe records that did not decode",
                n,
            )?;
        }
        f.counter(
            "rdma_probe_transactions",
            "Transactions the probes completed (both sides)",
            t.probe_transactions,
        )?;
        if let Some(n) = p.capture_dropped {
            f.counter(
                "rdma_capture_dropped_frames",
                "Frames the live capture lost (libpcap's and the kernel's drops)",
                n,
            )?;
        }

        Ok(())
    }

    /// The engine's tables.
    fn tables(&self, f: &mut Families<'_, '_>) -> fmt::Result {
        let s = &*self.snap;
        // The engine's tables.
        let e = &s.evictions;
        f.counters(
            "rdma_engine_evictions",
            "Entries the engine's caps pushed out, by table",
            "table",
            [
                ("connections", e.connections),
                ("qps", e.qps),
                ("calls", e.calls),
                ("reads", e.reads),
                ("truncated_messages", e.truncated_messages),
                ("nfs_errors_unlinked", e.nfs_errors_unlinked),
            ],
        )?;
        f.gauges(
            "rdma_engine_tracked",
            "Entries the engine holds now, by table (its memory grows with these)",
            "table",
            [
                ("connections", s.tracked_connections as i64),
                ("qps", s.tracked_qps as i64),
                ("outstanding_calls", s.outstanding_calls as i64),
            ],
        )?;

        Ok(())
    }

    /// The causes the diagnosis names.
    fn diagnosis(&self, f: &mut Families<'_, '_>) -> fmt::Result {
        let s = &*self.snap;
        // The diagnosis: a closed set of causes, each present only while named.
        {
            let mut m = f.enc.encode_descriptor(
                "rdma_diagnosis_cause_impact",
                "Causes the diagnosis names (docs/diagnosis.md), by their impact score: the share (0..1) of the time RPCs waited, or of the RPCs affected, since the start; absent while not named",
                None,
                MetricType::Gauge,
            )?;
            for (cause, peer, score) in &s.causes {
                let labels = [("cause", cause.as_str()), ("peer", peer.as_str())];
                ConstGauge::new(*score).encode(m.encode_family(&labels)?)?;
            }
        }
        let Some((width_s, causes)) = &s.window else {
            return Ok(());
        };
        {
            let m = f.enc.encode_descriptor(
                "rdma_diagnosis_window_seconds",
                "The width of the sliding window rdma_diagnosis_window_cause_impact is over, seconds of the capture clock (live --diagnosis-window)",
                None,
                MetricType::Gauge,
            )?;
            ConstGauge::new(*width_s).encode(m)?;
        }
        {
            let mut m = f.enc.encode_descriptor(
                "rdma_diagnosis_window_cause_impact",
                "Causes the diagnosis names over the last rdma_diagnosis_window_seconds of the capture clock (docs/diagnosis.md), by their impact score in that window (0..1); absent while not named, so an alert on it clears when the cause is gone",
                None,
                MetricType::Gauge,
            )?;
            for (cause, peer, score) in causes {
                let labels = [("cause", cause.as_str()), ("peer", peer.as_str())];
                ConstGauge::new(*score).encode(m.encode_family(&labels)?)?;
            }
        }

        Ok(())
    }

    /// The process itself and this host's NFS mounts.
    fn process(&self, f: &mut Families<'_, '_>) -> fmt::Result {
        if let Some(proc) = self.process {
            f.counter_f64(
                "process_cpu_seconds",
                "CPU time this process used, user and system, seconds",
                (proc.cpu_seconds)(),
            )?;
            if let Some(rss) = (proc.resident_bytes)() {
                f.gauge(
                    "process_resident_memory_bytes",
                    "Resident memory of this process, bytes",
                    rss as i64,
                )?;
            }
            super::mountstats_metrics::encode(f.enc, (proc.mountstats)().as_deref())?;
            device_counters(f, &(proc.device_counters)())?;
        }
        Ok(())
    }

    fn connections(&self, f: &mut Families<'_, '_>) -> fmt::Result {
        let s = &*self.snap;
        f.gauge(
            "rdma_metrics_connections_unlabelled",
            "Connections the engine tracks that have no series of their own (beyond the cap of the most recently active)",
            s.unlabelled_connections as i64,
        )?;
        {
            let mut m = f.enc.encode_descriptor(
                "rdma_connection_info",
                "A connection's queue pairs (address/QPN) and RDMA-CM port; always 1",
                None,
                MetricType::Gauge,
            )?;
            for c in &s.connections {
                let labels = [
                    ("connection", c.id.clone()),
                    ("client", c.client.clone().unwrap_or_default()),
                    ("server", c.server.clone().unwrap_or_default()),
                    ("port", c.port.map(|p| p.to_string()).unwrap_or_default()),
                ];
                ConstGauge::new(1i64).encode(m.encode_family(&labels)?)?;
            }
        }
        // `None`: not known (a snap length cut it), so no sample rather than 0.
        type Count = fn(&ConnRow) -> Option<u64>;
        let counters: [(&str, &str, Count); 5] = [
            (
                "rdma_connection_calls",
                "Calls seen on the connection",
                |c| Some(c.calls),
            ),
            (
                "rdma_connection_replies",
                "Replies seen on the connection",
                |c| Some(c.replies),
            ),
            (
                "rdma_connection_chunk_bytes",
                "Bytes moved through chunks on the connection",
                |c| c.chunk_bytes,
            ),
            (
                "rdma_connection_remote_invalidations",
                "Replies sent with Send With Invalidate on the connection",
                |c| Some(c.remote_invalidations),
            ),
            (
                "rdma_connection_anomalies",
                "Anomalies on the connection",
                |c| Some(c.anomalies),
            ),
        ];
        for (name, help, get) in counters {
            let mut m = f
                .enc
                .encode_descriptor(name, help, None, MetricType::Counter)?;
            for c in &s.connections {
                let labels = [("connection", c.id.as_str())];
                if let Some(v) = get(c) {
                    ConstCounter::new(v).encode(m.encode_family(&labels)?)?;
                }
            }
        }
        {
            let mut m = f.enc.encode_descriptor(
                "rdma_connection_credit_limit_seconds",
                "Time the connection spent with as many calls outstanding as the server granted (its credit window full), seconds",
                None,
                MetricType::Counter,
            )?;
            for c in &s.connections {
                let labels = [("connection", c.id.as_str())];
                if let Some(ns) = c.at_limit_ns {
                    ConstCounter::new(ns as f64 / 1e9).encode(m.encode_family(&labels)?)?;
                }
            }
        }
        type Get = fn(&ConnRow) -> Option<u64>;
        let gauges: [(&str, &str, Get); 4] = [
            (
                "rdma_connection_credits_granted",
                "Credits the latest reply granted (absent before the first grant)",
                |c| c.granted.map(u64::from),
            ),
            (
                "rdma_connection_credits_requested",
                "Credits the latest call requested",
                |c| c.requested.map(u64::from),
            ),
            (
                "rdma_connection_credits_in_flight",
                "Calls outstanding on the connection now",
                |c| Some(u64::from(c.in_flight)),
            ),
            (
                "rdma_connection_credits_in_flight_peak",
                "Most calls outstanding at once on the connection",
                |c| Some(u64::from(c.peak_in_flight)),
            ),
        ];
        for (name, help, get) in gauges {
            let mut m = f
                .enc
                .encode_descriptor(name, help, None, MetricType::Gauge)?;
            for c in &s.connections {
                if let Some(v) = get(c) {
                    let labels = [("connection", c.id.as_str())];
                    ConstGauge::new(v as i64).encode(m.encode_family(&labels)?)?;
                }
            }
        }
        Ok(())
    }
}

/// iWARP's integrity counters, its counterpart of the ICRC and PSN ones:
/// only when the capture had iWARP frames.
fn iwarp(f: &mut Families<'_, '_>, n: &crate::engine::IwarpCounts) -> fmt::Result {
    f.counter(
        "rdma_iwarp_fpdus",
        "FPDUs the iWARP streams delivered (RFC 5044)",
        n.fpdus,
    )?;
    f.counter(
        "rdma_iwarp_crc_invalid",
        "iWARP FPDUs whose CRC32c did not match",
        n.crc_invalid,
    )?;
    f.counter(
        "rdma_iwarp_stream_gaps",
        "Holes in the iWARP TCP streams: what fell in them was not checked",
        n.gaps,
    )?;
    f.counter(
        "rdma_iwarp_stream_gap_bytes",
        "Stream octets in those holes",
        n.gap_bytes,
    )
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_text_names_counter_families_as_their_samples() {
        let om = "# HELP rdma_frames Frames.\n# TYPE rdma_frames counter\nrdma_frames_total 3\n\
                  # HELP rdma_x A gauge.\n# TYPE rdma_x gauge\n# UNIT rdma_x bytes\nrdma_x 1\n# EOF\n";
        assert_eq!(
            prometheus_text(om),
            "# HELP rdma_frames_total Frames.\n# TYPE rdma_frames_total counter\nrdma_frames_total 3\n\
             # HELP rdma_x A gauge.\n# TYPE rdma_x gauge\nrdma_x 1\n"
        );
    }

    #[test]
    fn latency_buckets_are_log_linear_and_tight() {
        assert_eq!(LATENCY_BOUNDS_NS[0], 4_000);
        assert_eq!(LATENCY_BOUNDS_NS[1], 5_000);
        assert_eq!(LATENCY_BOUNDS_NS[4], 8_000);
        assert_eq!(LATENCY_BOUNDS_NS[5], 10_000);
        assert_eq!(LATENCY_BOUNDS_NS[LATENCY_BUCKETS - 1], (7u64 << 22) * 1000);
        for w in LATENCY_BOUNDS_NS.windows(2) {
            assert!(w[0] < w[1]);
            assert!(w[1] as f64 / w[0] as f64 <= 1.25, "{w:?}");
        }
        assert_eq!(latency_bucket(0), 0);
        assert_eq!(latency_bucket(4_000), 0);
        assert_eq!(latency_bucket(4_001), 1);
        assert_eq!(latency_bucket(u64::MAX), LATENCY_BUCKETS);
        for (i, &b) in LATENCY_BOUNDS_NS.iter().enumerate() {
            assert_eq!(latency_bucket(b), i, "{b}");
            assert_eq!(latency_bucket(b + 1), i + 1, "{b}");
            assert_eq!(latency_bucket(b - 999), i, "{b}");
        }
        let mut h = Buckets::default();
        for ns in [0, 4_000, 4_001, 29_360_128_000, 29_360_128_001, u64::MAX] {
            h.record(micros_le(ns));
        }
        let le = le_counts(&h);
        assert_eq!((le[0], le[1], le[LATENCY_BUCKETS - 1]), (2, 1, 1));
        assert_eq!(le[LATENCY_BUCKETS], 2);
    }
}
