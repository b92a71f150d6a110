//! The JSON the tool writes, as types: one definition per document and
//! line, shared by every front end, with a [`SCHEMA_VERSION`]. The JSON
//! Schema in `schema/` is generated from these types
//! (`analyzer/tests/schema.rs` keeps it current).
//!
//! Conventions: keys are the specs' names in snake_case; times are integer
//! nanoseconds since the Unix epoch (`*_ts_ns`), durations say their unit
//! (`latency_us`, `at_limit_ms`); numbers are JSON numbers (QP numbers,
//! R_Keys, XIDs included); connections are named as everywhere else (`c1`);
//! what is unknown is `null`, never `0`.

use std::collections::BTreeMap;
use std::net::IpAddr;

use rdma_dissectors::rpcrdma_cm::CmPrivateData;
use schemars::JsonSchema;
use serde::Serialize;

use super::stats::Summary;
use crate::engine::{
    Anomaly, ChunkKind, CmState, Connection, Evictions, Kind, Origin, QpKey, SegmentUse, Severity,
    Totals, Transaction, Transfer, View,
};

/// Version of every document and line described here. It grows when a key
/// changes meaning or goes away; new keys may appear within a version.
pub const SCHEMA_VERSION: u32 = 1;

/// A queue pair as the wire names it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Qp {
    /// The node's address (IP for RoCEv2).
    pub addr: String,
    /// The QP number.
    pub qpn: u32,
}

impl From<&QpKey> for Qp {
    fn from(k: &QpKey) -> Self {
        Qp {
            addr: addr(k.addr),
            qpn: k.qpn,
        }
    }
}

fn addr(a: IpAddr) -> String {
    a.to_string()
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

/// One advertised chunk segment and what happened to it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Segment {
    /// Which list advertised it.
    pub kind: ChunkKind,
    /// Chunk index within its list (write list); 0 otherwise.
    pub chunk: u32,
    /// Read chunk position (read list only).
    pub position: Option<u32>,
    /// STag / R_Key.
    pub handle: u32,
    /// Advertised length, bytes.
    pub length: u32,
    /// Advertised offset (VA).
    pub offset: u64,
    /// Bytes moved by RDMA Read or Write into or out of it.
    pub bytes_moved: u64,
    /// Length the responder reported in its reply.
    pub reported_length: Option<u32>,
    /// Frames of the RDMA operations that moved it (the first ones).
    pub frames: Vec<u64>,
    /// Whether the reply's Send With Invalidate named this handle.
    pub remotely_invalidated: bool,
}

impl From<&SegmentUse> for Segment {
    fn from(s: &SegmentUse) -> Self {
        Segment {
            kind: s.kind,
            chunk: s.chunk,
            position: s.position,
            handle: s.handle,
            length: s.length,
            offset: s.offset,
            bytes_moved: s.bytes_moved,
            reported_length: s.reported_length,
            frames: s.frames.clone(),
            remotely_invalidated: s.remotely_invalidated,
        }
    }
}

/// Time in each phase of a transaction, ns (null when it did not happen).
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Phases {
    /// Call received to the responder's first RDMA operation (or to the reply).
    pub until_first_rdma_ns: Option<u64>,
    /// First RDMA Read request to the last Read response.
    pub read_ns: Option<u64>,
    /// First to last RDMA Write.
    pub write_ns: Option<u64>,
    /// Last RDMA operation to the reply.
    pub reply_after_rdma_ns: Option<u64>,
}

/// One RPC transaction: `transactions --json`, and the base of `live`'s lines.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TransactionLine {
    /// The version of the schema this follows (1).
    pub schema_version: u32,
    /// `live` only: `"transaction"`.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub line_type: Option<&'static str>,
    /// Connection (`c1`).
    pub connection: String,
    /// RPC XID.
    pub xid: u32,
    /// Whether the call went server to client (NFSv4.1 backchannel).
    pub backchannel: bool,
    /// Frame of the call (its last packet); a probe record number for a kernel's view.
    pub call_frame: u64,
    /// Frame of the reply.
    pub reply_frame: Option<u64>,
    /// Time of the call.
    pub call_ts_ns: u64,
    /// Time of the reply.
    pub reply_ts_ns: Option<u64>,
    /// RPC program number.
    pub program: Option<u32>,
    /// Program name (nfs, mount, nlm, ...).
    pub program_name: Option<&'static str>,
    /// Program version.
    pub version: Option<u32>,
    /// Procedure name (an NFSv4 COMPOUND lists its operations).
    pub procedure: Option<String>,
    /// Procedure number.
    pub proc: Option<u32>,
    /// How the call travelled.
    pub call_transfer: Transfer,
    /// How the reply travelled.
    pub reply_transfer: Transfer,
    /// Bytes of the call Send.
    pub call_len: u32,
    /// Bytes of the reply Send.
    pub reply_len: Option<u32>,
    /// Call to reply, µs.
    pub latency_us: Option<f64>,
    /// Credits the call requested (null when the view cannot see it).
    pub credits_requested: Option<u32>,
    /// Credits the reply granted.
    pub credits_granted: Option<u32>,
    /// Calls outstanding on the connection when this one was sent (itself included).
    pub in_flight_at_call: u32,
    /// Advertised segments and their use.
    pub chunks: Vec<Segment>,
    /// R_Key the reply invalidated (Send With Invalidate).
    pub remote_invalidated_rkey: Option<u32>,
    /// Internode round trips.
    pub round_trips: u8,
    /// Responder interrupts.
    pub responder_interrupts: u8,
    /// Measured phases.
    pub phases: Phases,
    /// RPC reply status.
    pub reply_status: Option<String>,
    /// Anomalies that concern this transaction.
    pub anomalies: Vec<Kind>,
    /// `live` only: who saw it (the wire, each kernel).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sources: Option<Vec<Origin>>,
    /// `live` only: each kernel's view, by origin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probes: Option<BTreeMap<Origin, KernelView>>,
}

impl From<&Transaction> for TransactionLine {
    fn from(t: &Transaction) -> Self {
        TransactionLine {
            schema_version: SCHEMA_VERSION,
            line_type: None,
            connection: t.connection.to_string(),
            xid: t.xid,
            backchannel: t.backchannel,
            call_frame: t.call_frame,
            reply_frame: t.reply_frame,
            call_ts_ns: t.call_ts_ns,
            reply_ts_ns: t.reply_ts_ns,
            program: t.program,
            program_name: t.program_name,
            version: t.version,
            procedure: t.procedure.clone(),
            proc: t.proc,
            call_transfer: t.call_transfer,
            reply_transfer: t.reply_transfer,
            call_len: t.call_len,
            reply_len: t.reply_len,
            latency_us: t.latency_us,
            credits_requested: t.credits_requested,
            credits_granted: t.credits_granted,
            in_flight_at_call: t.in_flight_at_call,
            chunks: t.chunks.iter().map(Segment::from).collect(),
            remote_invalidated_rkey: t.remote_invalidated_rkey,
            round_trips: t.round_trips,
            responder_interrupts: t.responder_interrupts,
            phases: Phases::from(&t.phases),
            reply_status: t.reply_status.clone(),
            anomalies: t.anomalies.clone(),
            sources: None,
            probes: None,
        }
    }
}

impl TransactionLine {
    /// The line `live` writes: tagged, with who saw it and each kernel's view.
    pub fn live(t: &Transaction) -> Self {
        TransactionLine {
            line_type: Some("transaction"),
            sources: Some(t.sources().collect()),
            probes: Some(
                t.views
                    .iter()
                    .map(|v| (v.origin, KernelView::from(v)))
                    .collect(),
            ),
            ..TransactionLine::from(t)
        }
    }
}

impl From<&crate::engine::Phases> for Phases {
    fn from(p: &crate::engine::Phases) -> Self {
        Phases {
            until_first_rdma_ns: p.until_first_rdma_ns,
            read_ns: p.read_ns,
            write_ns: p.write_ns,
            reply_after_rdma_ns: p.reply_after_rdma_ns,
        }
    }
}

/// What one side saw of a transaction, when another side's view is the
/// line's base (`live --probes`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct KernelView {
    /// Call to reply as this kernel saw it, µs.
    pub latency_us: Option<f64>,
    /// Credits the call requested (the server's kernel sees them).
    pub credits_requested: Option<u32>,
    /// Credits the reply granted.
    pub credits_granted: Option<u32>,
    /// R_Key the reply invalidated.
    pub remote_invalidated_rkey: Option<u32>,
    /// The chunk segments this kernel handled.
    pub chunks: Vec<Segment>,
    /// How the call travelled.
    pub call_transfer: Transfer,
    /// How the reply travelled.
    pub reply_transfer: Transfer,
    /// Measured phases.
    pub phases: Phases,
    /// Calls outstanding when this one was sent.
    pub in_flight_at_call: u32,
    /// Time of the call in this kernel.
    pub call_ts_ns: u64,
    /// Anomalies this kernel's view shows.
    pub anomalies: Vec<Kind>,
}

impl From<&View> for KernelView {
    fn from(v: &View) -> Self {
        KernelView {
            latency_us: v.latency_us,
            credits_requested: v.credits_requested,
            credits_granted: v.credits_granted,
            remote_invalidated_rkey: v.remote_invalidated_rkey,
            chunks: v.chunks.iter().map(Segment::from).collect(),
            call_transfer: v.call_transfer,
            reply_transfer: v.reply_transfer,
            phases: Phases::from(&v.phases),
            in_flight_at_call: v.in_flight_at_call,
            call_ts_ns: v.call_ts_ns,
            anomalies: v.anomalies.clone(),
        }
    }
}

/// One anomaly: `anomalies --json`, and `live`'s anomaly lines.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AnomalyLine {
    /// The version of the schema this follows (1).
    pub schema_version: u32,
    /// `live` only: `"anomaly"`.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub line_type: Option<&'static str>,
    /// Stable kind.
    pub kind: Kind,
    /// How much it matters.
    pub severity: Severity,
    /// The RFC (or IBA) section it breaks or concerns.
    pub rfc: &'static str,
    /// Frames involved (probe record numbers for a kernel's finding).
    pub frames: Vec<u64>,
    /// Connection, when known.
    pub connection: Option<String>,
    /// RPC XID, when it concerns one transaction.
    pub xid: Option<u32>,
    /// Who found it: the wire or a kernel's probes.
    pub origin: Origin,
    /// A sentence a user understands.
    pub message: String,
    /// `live` only: `[origin]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sources: Option<Vec<Origin>>,
}

impl From<&Anomaly> for AnomalyLine {
    fn from(a: &Anomaly) -> Self {
        AnomalyLine {
            schema_version: SCHEMA_VERSION,
            line_type: None,
            kind: a.kind,
            severity: a.kind.severity(),
            rfc: a.kind.rfc(),
            frames: a.frames.clone(),
            connection: a.connection.map(|c| c.to_string()),
            xid: a.xid,
            origin: a.origin,
            message: a.message.clone(),
            sources: None,
        }
    }
}

/// A connection in the report.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ConnectionView {
    /// `c1`.
    pub id: String,
    /// The requester's QP, when known.
    pub client: Option<Qp>,
    /// The responder's QP, when known.
    pub server: Option<Qp>,
    /// Where the CM exchange stands.
    pub cm_state: CmState,
    /// RDMA-CM port (20049 for NFS).
    pub port: Option<u16>,
    /// RFC 8797 private data of the REQ.
    pub client_private: Option<PrivateData>,
    /// RFC 8797 private data of the REP.
    pub server_private: Option<PrivateData>,
    /// Whether both peers agreed to Send With Invalidate (null without a CM exchange).
    pub remote_invalidation: Option<bool>,
    /// Call inline threshold, bytes.
    pub call_inline_threshold: Option<u32>,
    /// Reply inline threshold, bytes.
    pub reply_inline_threshold: Option<u32>,
    /// Calls seen.
    pub calls: u64,
    /// Replies seen.
    pub replies: u64,
    /// Bytes moved through chunks.
    pub chunk_bytes: u64,
    /// Replies sent with Send With Invalidate.
    pub remote_invalidations: u64,
    /// Credit flow.
    pub credits: CreditsView,
    /// Anomalies on this connection.
    pub anomalies: u64,
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
    /// Time with as many calls outstanding as granted, ms.
    pub at_limit_ms: f64,
}

impl From<&Connection> for ConnectionView {
    fn from(c: &Connection) -> Self {
        ConnectionView {
            id: c.id.to_string(),
            client: c.client.as_ref().map(Qp::from),
            server: c.server.as_ref().map(Qp::from),
            cm_state: c.cm_state,
            port: c.port,
            client_private: c.client_private.map(PrivateData::from),
            server_private: c.server_private.map(PrivateData::from),
            remote_invalidation: c.negotiated.map(|n| n.remote_invalidation),
            call_inline_threshold: c.call_inline_threshold(),
            reply_inline_threshold: c.reply_inline_threshold(),
            calls: c.calls,
            replies: c.replies,
            chunk_bytes: c.chunk_bytes,
            remote_invalidations: c.remote_invalidations,
            credits: CreditsView {
                granted_min: c.granted_min,
                granted_max: c.granted_max,
                last_granted: c.granted,
                last_requested: c.requested,
                peak_in_flight: c.peak_in_flight,
                at_limit_ms: c.at_limit_ns as f64 / 1e6,
            },
            anomalies: c.anomalies,
        }
    }
}

/// Capture-wide counters.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TotalsView {
    /// Frames seen.
    pub frames: u64,
    /// Bytes seen (captured).
    pub bytes: u64,
    /// Frames with a BTH.
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
    /// Retransmitted request packets.
    pub retransmissions: u64,
    /// PSN gaps (packets the capture missed).
    pub psn_gaps: u64,
    /// ICRC verified good.
    pub icrc_valid: u64,
    /// ICRC verified bad.
    pub icrc_invalid: u64,
    /// ICRC not checkable (cut by the snap length).
    pub icrc_unchecked: u64,
    /// Bytes moved by RDMA Read and Write that matched a chunk segment.
    pub chunk_bytes: u64,
    /// Replies sent with Send With Invalidate.
    pub remote_invalidations: u64,
    /// Kernel probe records handled.
    pub probe_records: u64,
    /// Transactions the probes completed.
    pub probe_transactions: u64,
    /// Time of the first frame (null when there was none).
    pub first_ts_ns: Option<u64>,
    /// Time of the last frame (null when there was none).
    pub last_ts_ns: Option<u64>,
}

impl From<&Totals> for TotalsView {
    fn from(t: &Totals) -> Self {
        let seen = t.frames + t.probe_records > 0;
        TotalsView {
            frames: t.frames,
            bytes: t.bytes,
            rdma_frames: t.rdma_frames,
            cm_messages: t.cm_messages,
            rpcrdma_messages: t.rpcrdma_messages,
            calls: t.calls,
            replies: t.replies,
            unassociated_frames: t.unassociated_frames,
            retransmissions: t.retransmissions,
            psn_gaps: t.psn_gaps,
            icrc_valid: t.icrc_valid,
            icrc_invalid: t.icrc_invalid,
            icrc_unchecked: t.icrc_unchecked,
            chunk_bytes: t.chunk_bytes,
            remote_invalidations: t.remote_invalidations,
            probe_records: t.probe_records,
            probe_transactions: t.probe_transactions,
            first_ts_ns: seen.then_some(t.first_ts_ns),
            last_ts_ns: seen.then_some(t.last_ts_ns),
        }
    }
}

/// What the tables' caps pushed out.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct EvictionsView {
    /// Connections dropped.
    pub connections: u64,
    /// Queue pairs forgotten.
    pub qps: u64,
    /// Outstanding calls dropped.
    pub calls: u64,
    /// RDMA Read requests dropped.
    pub reads: u64,
    /// Bytes of long Sends not kept.
    pub truncated_messages: u64,
}

impl From<&Evictions> for EvictionsView {
    fn from(e: &Evictions) -> Self {
        EvictionsView {
            connections: e.connections,
            qps: e.qps,
            calls: e.calls,
            reads: e.reads,
            truncated_messages: e.truncated_messages,
        }
    }
}

/// Latency of one (procedure, call transfer, reply transfer).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ResponseTimes {
    /// `NFSv3 READ`, `nfs4 COMPOUND(...)`.
    pub procedure: String,
    /// How the calls travelled.
    pub call_transfer: Transfer,
    /// How the replies travelled.
    pub reply_transfer: Transfer,
    /// The latency summary.
    pub latency: LatencySummary,
}

/// Latency statistics, µs (percentiles within 1.6%).
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct LatencySummary {
    /// Samples.
    pub count: u64,
    /// Smallest.
    pub min_us: f64,
    /// Mean.
    pub mean_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Largest.
    pub max_us: f64,
}

impl From<Summary> for LatencySummary {
    fn from(s: Summary) -> Self {
        LatencySummary {
            count: s.count,
            min_us: s.min_us,
            mean_us: s.mean_us,
            p50_us: s.p50_us,
            p90_us: s.p90_us,
            p99_us: s.p99_us,
            max_us: s.max_us,
        }
    }
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

/// Write chunks over the whole capture.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct WriteChunks {
    /// Offered by calls.
    pub offered: u64,
    /// With no segments (RFC 8166 3.4.6).
    pub empty: u64,
    /// Left unused by the reply.
    pub unused: u64,
}

/// One anomaly kind in the report.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct KindSummary {
    /// The kind.
    pub kind: Kind,
    /// The RFC (or IBA) section.
    pub rfc: &'static str,
    /// How much it matters.
    pub severity: Severity,
    /// How many.
    pub count: u64,
    /// The first frames.
    pub frames: Vec<u64>,
    /// The first one's message.
    pub example: Option<String>,
}

/// `report --json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ReportDoc {
    /// The version of the schema this follows (1).
    pub schema_version: u32,
    /// The capture, as named on the command line.
    pub file: String,
    /// Whether every byte of the capture was read.
    pub complete: bool,
    /// Why reading stopped early (the frame, the byte offset, what to do).
    pub read_error: Option<String>,
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
}
