//! The JSON the tool writes, as types: one definition per document and
//! line, shared by every front end, with a [`SCHEMA_VERSION`]. Records
//! (transactions, segments, anomalies, totals) are written through their
//! views in [`super::view`]; the documents here add the version and what
//! belongs to one output only. The JSON Schema in `schema/` is generated from these types
//! (`analyzer/tests/schema.rs` keeps it current and checks every output
//! against it).
//!
//! Conventions: keys are the specs' names in snake_case; times are integer
//! nanoseconds since the Unix epoch (`*_ts_ns`), durations say their unit
//! (`latency_us`, `at_limit_ms`); numbers are JSON numbers (QP numbers,
//! R_Keys, XIDs included); connections are named as everywhere else (`c1`);
//! what is unknown is `null`, never `0`.

use std::collections::BTreeMap;

use rdma_dissectors::rpcrdma_cm::CmPrivateData;
use schemars::JsonSchema;
use serde::Serialize;

use super::stats::Summary;
use super::view::{
    AnomalyView, AtFaultView, CarriesView, ClientTimelineView, CmStateView, CongestionView,
    ConnIdView, EvictionsView, HarmView, KindView, OriginView, QpKeyView, SeverityView, TotalsView,
    TransactionView, TransferView,
};
pub use crate::diagnosis::timeline::{ClientTimeline, Outage, TimelineEntry};
use crate::diagnosis::{Cause, CauseName};
use crate::engine::{Anomaly, Connection, IrdOrd, Origin, Transaction};

/// Version of every document and line described here. It grows when a key
/// changes meaning or goes away; new keys may appear within a version.
/// 2: timestamps since the epoch and 64-bit offsets are decimal strings,
/// VAs and R_Keys `"0x…"` hex strings ([`super::view::exact`]): as
/// numbers, above 2^53, JSON readers that use doubles changed them.
pub const SCHEMA_VERSION: u32 = 2;

/// `live --json-out`'s diagnosis over its sliding window (`type`
/// `"diagnosis"`): written each time the window moves on by one of its
/// intervals, and when the run ends.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct DiagnosisLine {
    /// The version of the schema this follows.
    pub schema_version: u32,
    /// `"diagnosis"`.
    #[serde(rename = "type")]
    pub line_type: &'static str,
    /// The window's width, seconds of the capture clock (`--diagnosis-window`).
    pub window_s: f64,
    /// Where the window begins: the start of its oldest interval (ns since
    /// the epoch); `null` before any timestamp.
    #[serde(serialize_with = "super::view::exact::decimal")]
    #[schemars(with = "Option<String>")]
    pub from_ts_ns: Option<u64>,
    /// Where it ends: the latest time seen.
    #[serde(serialize_with = "super::view::exact::decimal")]
    #[schemars(with = "Option<String>")]
    pub to_ts_ns: Option<u64>,
    /// The causes named over the window, largest impact first (as in
    /// `report --json`'s `diagnosis`; evidence times are seconds since the
    /// run's first frame). Empty: nothing to name in the window.
    pub causes: Vec<Cause>,
}

impl DiagnosisLine {
    /// The line for `causes` over a `window_s` wide window spanning `span`.
    pub fn new(window_s: f64, span: Option<(u64, u64)>, causes: Vec<Cause>) -> Self {
        DiagnosisLine {
            schema_version: SCHEMA_VERSION,
            line_type: "diagnosis",
            window_s,
            from_ts_ns: span.map(|s| s.0),
            to_ts_ns: span.map(|s| s.1),
            causes,
        }
    }
}

/// One RPC transaction: `transactions --json`, and `live`'s transaction lines.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TransactionLine<'a> {
    /// The version of the schema this follows (1).
    pub schema_version: u32,
    /// `live` only: `"transaction"`.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub line_type: Option<&'static str>,
    /// The transaction.
    #[serde(flatten)]
    pub transaction: TransactionView<'a>,
    /// `live`, and a flight recorder dump with probe records: who saw it
    /// (the wire, each kernel).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sources: Option<Vec<OriginView>>,
    /// `live`, and a flight recorder dump with probe records: what each
    /// kernel saw (the line's own fields are the wire's view when the wire
    /// saw it, else the first kernel's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probes: Option<BTreeMap<OriginView, TransactionView<'a>>>,
}

impl<'a> TransactionLine<'a> {
    /// The line `transactions --json` writes; with the kernels' views when
    /// it has them (a flight recorder dump's probe records).
    pub fn new(t: &'a Transaction) -> Self {
        let line = TransactionLine {
            schema_version: SCHEMA_VERSION,
            line_type: None,
            transaction: TransactionView::from(t),
            sources: None,
            probes: None,
        };
        if t.views.is_empty() && t.origin == Origin::Wire {
            line
        } else {
            line.with_views(t)
        }
    }

    /// The line `live` writes: tagged, with who saw it and each kernel's view.
    pub fn live(t: &'a Transaction) -> Self {
        TransactionLine {
            line_type: Some("transaction"),
            ..TransactionLine::new(t).with_views(t)
        }
    }

    fn with_views(self, t: &'a Transaction) -> Self {
        TransactionLine {
            sources: Some(t.sources().map(OriginView::from).collect()),
            // Every kernel's view, the line's own when no wire saw it.
            probes: Some(
                std::iter::once(t)
                    .chain(&t.views)
                    .filter(|v| v.origin != Origin::Wire)
                    .map(|v| (v.origin.into(), TransactionView::from(v)))
                    .collect(),
            ),
            ..self
        }
    }
}

/// One anomaly: `anomalies --json`, and `live`'s anomaly lines.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AnomalyLine<'a> {
    /// The version of the schema this follows (1).
    pub schema_version: u32,
    /// `live` only: `"anomaly"`, or `"anomaly_update"` for a finding that
    /// repeats per connection: `live` writes its first occurrence as an
    /// `anomaly` (count 1), then, every 10 s while it grows and once at the
    /// end of the run, an `anomaly_update` of the same finding (same kind,
    /// connection, `sources`, `first_frame` and `first_ts_ns`) with its
    /// count, last frame, last time and first XIDs so far. A reader
    /// counting findings counts `anomaly` records; an update replaces the
    /// count of the finding it names.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub line_type: Option<&'static str>,
    /// The anomaly.
    #[serde(flatten)]
    pub anomaly: AnomalyView<'a>,
    /// How much it matters.
    pub severity: SeverityView,
    /// The RFC (or IBA) section it breaks or concerns.
    pub rfc: &'static str,
    /// What the kind costs when it is real.
    pub harm: HarmView,
    /// Where the fix belongs.
    pub at_fault: AtFaultView,
    /// What to do, one sentence.
    pub action: &'static str,
    /// The shipping stack that does this as built, with the kernel
    /// versions seen (`Linux 6.1`); null when none is known to.
    pub known_behaviour: Option<&'static str>,
    /// `live` only: `[origin]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sources: Option<Vec<OriginView>>,
    /// Acknowledged (`--ignore`, `--ack`): the text hides it, JSON keeps it.
    pub acknowledged: bool,
}

impl<'a> AnomalyLine<'a> {
    /// The line `anomalies --json` writes.
    pub fn new(a: &'a Anomaly) -> Self {
        AnomalyLine {
            schema_version: SCHEMA_VERSION,
            line_type: None,
            anomaly: AnomalyView::from(a),
            severity: a.kind.severity().into(),
            rfc: a.kind.rfc(),
            harm: a.kind.guide().harm.into(),
            at_fault: a.kind.guide().at_fault.into(),
            action: a.kind.guide().action,
            known_behaviour: a.kind.guide().known_behaviour,
            sources: None,
            acknowledged: false,
        }
    }

    /// The line `live` writes.
    pub fn live(a: &'a Anomaly) -> Self {
        AnomalyLine {
            line_type: Some("anomaly"),
            sources: Some(vec![a.origin.into()]),
            ..AnomalyLine::new(a)
        }
    }
}

/// RFC 8797 private data of a CM REQ or REP.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct PrivateData {
    /// The version octet (1 is the only one RFC 8797 defines).
    pub version: Option<u8>,
    /// The R bit: this peer accepts Send With Invalidate (null for an unknown version).
    pub remote_invalidate: Option<bool>,
    /// The largest Send this peer makes, bytes (null for an unknown version).
    pub send_size: Option<u32>,
    /// The largest Send this peer can receive, bytes (null for an unknown version).
    pub recv_size: Option<u32>,
}

impl From<CmPrivateData> for PrivateData {
    fn from(p: CmPrivateData) -> Self {
        match p {
            CmPrivateData::V1(v) => PrivateData {
                version: Some(v.version),
                remote_invalidate: Some(v.remote_invalidate),
                send_size: Some(v.send_size),
                recv_size: Some(v.recv_size),
            },
            CmPrivateData::UnknownVersion { version, .. } => PrivateData {
                version: Some(version),
                remote_invalidate: None,
                send_size: None,
                recv_size: None,
            },
            // A kind of private data this build does not know: say nothing
            // of it rather than guess.
            #[allow(unreachable_patterns)]
            _ => PrivateData {
                version: None,
                remote_invalidate: None,
                send_size: None,
                recv_size: None,
            },
        }
    }
}

/// A connection in the report.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ConnectionView {
    /// The connection.
    pub id: ConnIdView,
    /// The fabric its addresses name: `RoCEv2`, `InfiniBand`, `RoCEv1` or `iWARP`.
    pub fabric: Option<&'static str>,
    /// What it carries (null until the CM exchange or a Send says).
    pub carries: Option<CarriesView>,
    /// The requester's QP, when known.
    pub client: Option<QpKeyView>,
    /// The responder's QP, when known.
    pub server: Option<QpKeyView>,
    /// Where the CM exchange stands (`not_seen`: the connection was found
    /// from its traffic; no CM exchange is in the capture).
    pub cm_state: CmStateView,
    /// The capture's snap length cut its CM messages: their private data
    /// (and what it negotiates) is not known; with `cm_state` `not_seen`,
    /// CM messages between its hosts were cut before their QP numbers.
    pub cm_cut: bool,
    /// Frames of those cut CM messages between its hosts (the first few;
    /// empty unless `cm_state` is `not_seen` and `cm_cut`).
    pub cm_cut_frames: Vec<u64>,
    /// RDMA-CM port (20049 for NFS).
    pub port: Option<u16>,
    /// Path MTU, bytes: from the CM REQ, or learnt from a full packet.
    pub path_mtu: Option<u32>,
    /// Time of its first frame (ns since the epoch).
    #[serde(serialize_with = "super::view::exact::decimal")]
    #[schemars(with = "String")]
    pub first_ts_ns: u64,
    /// Time of its latest frame.
    #[serde(serialize_with = "super::view::exact::decimal")]
    #[schemars(with = "String")]
    pub last_ts_ns: u64,
    /// RFC 8797 private data of the REQ.
    pub client_private: Option<PrivateData>,
    /// RFC 8797 private data of the REP.
    pub server_private: Option<PrivateData>,
    /// Whether both peers agreed to Send With Invalidate (null without a
    /// CM exchange, or when the connection is not known to carry
    /// RPC-over-RDMA; so are the thresholds and credits).
    pub remote_invalidation: Option<bool>,
    /// Call inline threshold, bytes.
    pub call_inline_threshold: Option<u32>,
    /// Reply inline threshold, bytes.
    pub reply_inline_threshold: Option<u32>,
    /// Calls seen.
    pub calls: u64,
    /// Replies seen.
    pub replies: u64,
    /// Bytes moved through chunks; null when the capture's snap length cut
    /// some transaction's chunk lists (their bytes are not known).
    pub chunk_bytes: Option<u64>,
    /// Replies sent with Send With Invalidate.
    pub remote_invalidations: u64,
    /// Credit flow.
    pub credits: Option<CreditsView>,
    /// Anomalies on this connection.
    pub anomalies: u64,
    /// The fabric's congestion signals on its frames (ECN CE, CNPs,
    /// FECN/BECN): counts, time range (ns since the epoch), first frames.
    pub congestion: CongestionView,
    /// What only iWARP connections have (absent on other fabrics).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iwarp: Option<IwarpConnectionView>,
}

/// An iWARP connection's MPA negotiation (RFC 5044 7.1, RFC 6581).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct IwarpConnectionView {
    /// The RDMA Read queue depths of the client's MPA Request (RFC 6581
    /// 5); null when it was MPA revision 1 (which has none) or not seen.
    pub client_ird_ord: Option<IrdOrdView>,
    /// The depths of the server's MPA Reply; null as for the client's.
    pub server_ird_ord: Option<IrdOrdView>,
}

/// An MPA revision 2 peer's RDMA Read queue depths.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct IrdOrdView {
    /// Inbound RDMA Read queue depth: Reads it serves at once.
    pub ird: u16,
    /// Outbound RDMA Read queue depth: Reads it has outstanding at once.
    pub ord: u16,
}

impl From<IrdOrd> for IrdOrdView {
    fn from(x: IrdOrd) -> Self {
        IrdOrdView {
            ird: x.ird,
            ord: x.ord,
        }
    }
}

/// A connection's credit flow.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CreditsView {
    /// Smallest grant seen.
    pub granted_min: Option<u32>,
    /// Largest grant seen.
    pub granted_max: Option<u32>,
    /// Latest grant.
    pub last_granted: Option<u32>,
    /// Latest request.
    pub last_requested: Option<u32>,
    /// Most calls outstanding at once.
    pub peak_in_flight: u32,
    /// Time with as many calls outstanding as granted, ms; null when no
    /// grant was seen (the limit is not known). The first call's wait on
    /// the implicit first credit is not in it: see `first_grant_wait_ms`.
    pub at_limit_ms: Option<f64>,
    /// Time the first call waited on the single credit RFC 8166 3.3.1
    /// grants before the first reply (ms); null when no call waited so or
    /// the CM exchange that starts the count was not seen.
    pub first_grant_wait_ms: Option<f64>,
}

impl From<&Connection> for ConnectionView {
    fn from(c: &Connection) -> Self {
        ConnectionView {
            id: ConnIdView(c.id),
            fabric: c.fabric(),
            carries: c.carries.map(CarriesView::from),
            client: c.client.map(QpKeyView::from),
            server: c.server.map(QpKeyView::from),
            cm_state: c.cm_state.into(),
            cm_cut: c.cm_cut,
            cm_cut_frames: c.cm_cut_frames.clone(),
            port: c.port,
            path_mtu: c.path_mtu,
            first_ts_ns: c.first_ts_ns,
            last_ts_ns: c.last_ts_ns,
            client_private: c.client_private.map(PrivateData::from),
            server_private: c.server_private.map(PrivateData::from),
            remote_invalidation: c
                .negotiated
                .filter(|_| c.is_rpcrdma())
                .map(|n| n.remote_invalidation),
            call_inline_threshold: c.call_inline_threshold().filter(|_| c.is_rpcrdma()),
            reply_inline_threshold: c.reply_inline_threshold().filter(|_| c.is_rpcrdma()),
            calls: c.calls,
            replies: c.replies,
            chunk_bytes: c.chunk_bytes_known(),
            remote_invalidations: c.remote_invalidations,
            credits: c.is_rpcrdma().then(|| CreditsView {
                granted_min: c.granted_min,
                granted_max: c.granted_max,
                last_granted: c.granted,
                last_requested: c.requested,
                peak_in_flight: c.peak_in_flight,
                at_limit_ms: c.at_limit_known().map(|ns| ns as f64 / 1e6),
                first_grant_wait_ms: c.first_grant_wait_ns.map(|ns| ns as f64 / 1e6),
            }),
            anomalies: c.anomalies,
            congestion: CongestionView::of(&c.congestion, c.is_iwarp()),
            iwarp: c.is_iwarp().then(|| IwarpConnectionView {
                client_ird_ord: c.client_ird_ord.map(IrdOrdView::from),
                server_ird_ord: c.server_ird_ord.map(IrdOrdView::from),
            }),
        }
    }
}

/// Latency of one (procedure, call transfer, reply transfer).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ResponseTimes {
    /// `NFS READ`, `NFSv4.1 COMPOUND(...)` (an NFSv4 call names its minor version).
    pub procedure: String,
    /// How the calls travelled.
    pub call_transfer: TransferView,
    /// How the replies travelled.
    pub reply_transfer: TransferView,
    /// The latency summary.
    pub latency: Summary,
}

/// The segments of one chunk list over the whole capture.
#[derive(Debug, Clone, Copy, Default, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ChunkTotals {
    /// Segments advertised.
    pub segments: u64,
    /// Bytes advertised.
    pub advertised_bytes: u64,
    /// Bytes moved.
    pub moved_bytes: u64,
    /// Segments of answered calls that nothing moved.
    pub unused_segments: u64,
}

/// What the per-procedure tables' cap folded away.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ProceduresOverCap {
    /// Rows each table (response times, unanswered, latency unknown) holds
    /// at most; 0: no cap.
    pub rows: usize,
    /// Transactions counted under `(other procedures)` because their
    /// procedure's row would have been past the cap.
    pub transactions: u64,
}

/// Write chunks over the whole capture.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct WriteChunks {
    /// Offered by calls; `null` when some transaction's chunk lists were
    /// not seen (cut by a snap length, or seen only by kernel probes): the
    /// total is then unknown; `of_seen` has the count of the others.
    pub offered: Option<u64>,
    /// With no segments (RFC 8166 3.4.6); `null` as `offered`.
    pub empty: Option<u64>,
    /// Left unused by the reply; `null` as `offered`.
    pub unused: Option<u64>,
    /// Transactions whose chunk lists were seen whole: `of_seen` and the
    /// `chunks` segment totals are of these.
    pub seen: u64,
    /// Transactions whose chunk lists the capture cut (a snap length):
    /// their chunks are in none of the counts above nor in `chunks`.
    pub not_seen: u64,
    /// The counts over the `seen` transactions only: a floor of the
    /// totals when `not_seen` is not 0.
    pub of_seen: WriteChunksSeen,
}

/// Write chunks of the transactions whose chunk lists were seen.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct WriteChunksSeen {
    /// Offered by calls.
    pub offered: u64,
    /// With no segments.
    pub empty: u64,
    /// Left unused by the reply.
    pub unused: u64,
}

/// One anomaly kind in the report.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct KindSummary {
    /// The kind.
    pub kind: KindView,
    /// The RFC (or IBA) section.
    pub rfc: &'static str,
    /// How much it matters.
    pub severity: SeverityView,
    /// How many.
    pub count: u64,
    /// The first frames.
    pub frames: Vec<u64>,
    /// The first one's message.
    pub example: Option<String>,
    /// Acknowledged (`--ignore`, `--ack`): hidden from the text report. A
    /// kind acknowledged on some connections only has a row of each.
    pub acknowledged: bool,
}

/// Operations and their transmissions for one procedure, as the kernel's
/// per-op statistics count them (`ops`, `trans`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Operations {
    /// The procedure.
    pub procedure: String,
    /// Operations (a call sent again on a new connection counts once).
    pub ops: u64,
    /// Transmissions (each Send of the call).
    pub trans: u64,
}

/// Where the time of one (procedure, call transfer, reply transfer) went,
/// phase by phase; a phase the capture cannot measure is `null`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct PhaseTimes {
    /// The procedure.
    pub procedure: String,
    /// How the calls travelled.
    pub call_transfer: TransferView,
    /// How the replies travelled.
    pub reply_transfer: TransferView,
    /// The server before the data moves: the call's arrival to its first
    /// RDMA Read or Write (to the reply when no data moved by RDMA).
    pub server_before_data: Option<Summary>,
    /// Data movement: first to last RDMA Read or Write.
    pub data_movement: Option<Summary>,
    /// The server after the data: the last RDMA operation to the reply.
    pub server_after_data: Option<Summary>,
    /// The whole, call to reply (the wire's latency).
    pub total: Summary,
}

/// One of the slowest operations, by the latency the application saw.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SlowOperation {
    /// The procedure.
    pub procedure: String,
    /// RPC XID.
    pub xid: u32,
    /// The connection of the last transmission.
    pub connection: ConnIdView,
    /// The connections of the earlier transmissions.
    pub earlier_connections: Vec<ConnIdView>,
    /// Transmissions.
    pub transmissions: u32,
    /// Frame of the first transmission.
    pub first_call_frame: u64,
    /// Frame of the last transmission.
    pub call_frame: u64,
    /// Frame of the reply.
    pub reply_frame: u64,
    /// Time of the first transmission.
    #[serde(serialize_with = "super::view::exact::decimal")]
    #[schemars(with = "String")]
    pub first_call_ts_ns: u64,
    /// Time of the reply.
    #[serde(serialize_with = "super::view::exact::decimal")]
    #[schemars(with = "String")]
    pub reply_ts_ns: u64,
    /// First transmission to reply, µs.
    pub app_latency_us: f64,
    /// Last transmission to reply, µs.
    pub latency_us: f64,
}

/// What a `--filter` kept (`docs/filters.md`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct FilterSummary {
    /// The expression, as given.
    pub expression: String,
    /// Transactions kept.
    pub transactions: u64,
    /// Of those, answered.
    pub answered: u64,
    /// Findings (anomalies) kept.
    pub findings: u64,
    /// Connections kept: those the filter selects, or that hold a kept
    /// transaction or finding.
    pub connections: u64,
}

/// `report --json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ReportDoc {
    /// The version of the schema this follows (1).
    pub schema_version: u32,
    /// The captures, as named on the command line (several: separated by spaces).
    pub file: String,
    /// Whether every byte of the capture was read.
    pub complete: bool,
    /// The `--filter` the report was computed under, and what it kept
    /// (`null`: unfiltered). Under a filter the tables, findings,
    /// connections and diagnosis are those of what it kept; `totals` stay
    /// the whole capture's frame counters.
    pub filter: Option<FilterSummary>,
    /// Why reading stopped early (the frame, the byte offset, what to do).
    pub read_error: Option<String>,
    /// Frames recognised as RDMA traffic this version cannot decode
    /// (iWARP, RoCEv2 on another UDP port), per kind, with what to do;
    /// absent when there were none. When present the exit status is 2.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_decoded: Vec<super::not_decoded::NotDecodedRow>,
    /// The causes found, largest impact first (`docs/diagnosis.md`); empty
    /// for a healthy capture.
    pub diagnosis: Vec<Cause>,
    /// Causes the diagnosis could not check for want of an input: without
    /// the client kernel's counters (`--mountstats`), `no_remote_invalidation`
    /// and `mr_exhaustion`.
    pub not_checked: Vec<CauseName>,
    /// Where the time went, phase by phase.
    pub phases: Vec<PhaseTimes>,
    /// The slowest operations, slowest first.
    pub slowest: Vec<SlowOperation>,
    /// Each client's connections in time order.
    pub timeline: Vec<ClientTimelineView>,
    /// Operations and transmissions by procedure.
    pub operations: Vec<Operations>,
    /// Counters over the whole capture.
    pub totals: TotalsView,
    /// What the caps pushed out.
    pub evictions: EvictionsView,
    /// Connections.
    pub connections: Vec<ConnectionView>,
    /// Latency by procedure and transfer mode.
    pub response_times: Vec<ResponseTimes>,
    /// Calls never answered, by procedure.
    pub unanswered: BTreeMap<String, u64>,
    /// Calls answered by a reply stamped before them (the capture's clock
    /// went backwards), by procedure: counted, not timed.
    pub latency_unknown: BTreeMap<String, u64>,
    /// The per-procedure tables' cap (from `--memory-limit`) and what it
    /// folded into the `(other procedures)` rows.
    pub procedures_over_cap: ProceduresOverCap,
    /// Chunk segments by list (`read`, `write`, `reply`).
    pub chunks: BTreeMap<&'static str, ChunkTotals>,
    /// Write chunks.
    pub write_chunks: WriteChunks,
    /// Transactions by internode round trips.
    pub round_trips: BTreeMap<String, u64>,
    /// Remote invalidations by connection.
    pub remote_invalidations_by_connection: BTreeMap<String, u64>,
    /// Anomalies by kind.
    pub anomalies: Vec<KindSummary>,
    /// What the findings could not be checked on, and why (the CM
    /// exchange's negotiation unknown, frames cut by the snap length):
    /// empty anomalies with entries here do not mean the peers behaved.
    /// Empty when everything was checked.
    pub anomalies_not_checked: Vec<super::unchecked::NotChecked>,
}
