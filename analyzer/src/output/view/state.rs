//! The engine's aggregate state as `report --json` and the JSON Schema see
//! it: counters, evictions and a connection's congestion marks, copied out
//! of [`State`](crate::engine::State) when the report is written. The doc
//! comments are the schema's descriptions.

use schemars::JsonSchema;
use serde::Serialize;

use crate::engine::{Congestion, Evictions, IwarpCounts, Totals};

/// Capture-wide counters.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename = "Totals")]
#[schemars(deny_unknown_fields)]
pub struct TotalsView {
    /// Frames seen.
    pub frames: u64,
    /// Bytes seen (captured).
    pub bytes: u64,
    /// Frames with a BTH (RoCE or InfiniBand).
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
    /// Retransmitted request packets (PSN seen again); null when every
    /// RDMA frame is iWARP's, which has no PSNs (`iwarp.gaps` counts its
    /// stream holes instead).
    pub retransmissions: Option<u64>,
    /// PSN gaps (packets the capture missed); null when every RDMA frame
    /// is iWARP's.
    pub psn_gaps: Option<u64>,
    /// ICRC: frames verified good; null when every RDMA frame is iWARP's,
    /// which has no ICRC (`iwarp.crc_invalid` counts its FPDUs' bad CRC32c).
    pub icrc_valid: Option<u64>,
    /// ICRC: frames verified bad; null when every RDMA frame is iWARP's.
    pub icrc_invalid: Option<u64>,
    /// ICRC: frames that could not be checked (cut by snaplen); null when
    /// every RDMA frame is iWARP's.
    pub icrc_unchecked: Option<u64>,
    /// Frames the capture's snap length cut: their ICRC is not checked, and
    /// what they carried past the cut (chunk lists, RPC and NFS, the rest
    /// of a CM message) is not known.
    pub cut_frames: u64,
    /// Of those, frames cut inside their transport headers (BTH and its
    /// extension headers): they are in no queue pair's PSN sequence, so
    /// the PSN gaps they leave are counted and ACK checks past them skipped.
    pub headers_cut: u64,
    /// Bytes moved by RDMA Read and Write that matched a chunk segment;
    /// null when the capture's snap length cut some transaction's chunk lists.
    pub chunk_bytes: Option<u64>,
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
    /// What the iWARP streams carried (absent when no frame was iWARP's):
    /// the counterpart of the ICRC and PSN counters there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iwarp: Option<IwarpCountsView>,
    /// Time of the first frame (ns since the epoch); `None` before it.
    #[serde(serialize_with = "super::exact::decimal")]
    #[schemars(with = "Option<String>")]
    pub first_ts_ns: Option<u64>,
    /// The latest time seen (frames, live ticks); `None` before any.
    #[serde(serialize_with = "super::exact::decimal")]
    #[schemars(with = "Option<String>")]
    pub last_ts_ns: Option<u64>,
}

impl From<&Totals> for TotalsView {
    fn from(x: &Totals) -> Self {
        // Zeros would read as "checked, all well" where nothing could be.
        let ib = |n: u64| (!x.iwarp_only()).then_some(n);
        TotalsView {
            frames: x.frames,
            bytes: x.bytes,
            rdma_frames: x.rdma_frames,
            cm_messages: x.cm_messages,
            rpcrdma_messages: x.rpcrdma_messages,
            calls: x.calls,
            replies: x.replies,
            unassociated_frames: x.unassociated_frames,
            retransmissions: ib(x.retransmissions),
            psn_gaps: ib(x.psn_gaps),
            icrc_valid: ib(x.icrc_valid),
            icrc_invalid: ib(x.icrc_invalid),
            icrc_unchecked: ib(x.icrc_unchecked),
            cut_frames: x.cut_frames,
            headers_cut: x.headers_cut,
            chunk_bytes: (x.chunk_bytes_cut == 0).then_some(x.chunk_bytes),
            remote_invalidations: x.remote_invalidations,
            congestion_frames: x.congestion_frames,
            probe_records: x.probe_records,
            probe_transactions: x.probe_transactions,
            iwarp: (x.iwarp.frames > 0).then(|| IwarpCountsView::from(&x.iwarp)),
            first_ts_ns: x.first_ts_ns,
            last_ts_ns: x.last_ts_ns,
        }
    }
}

/// What the iWARP streams carried (RFC 5044, 5041, 5040), counted as the
/// stream layer delivered it (tshark's counts of the same check them).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename = "IwarpCounts")]
#[schemars(deny_unknown_fields)]
pub struct IwarpCountsView {
    /// TCP frames of iWARP connections (set-up, data and acknowledgements).
    pub frames: u64,
    /// MPA Requests.
    pub mpa_requests: u64,
    /// MPA Replies (rejects included).
    pub mpa_replies: u64,
    /// MPA Replies with the Reject flag.
    pub mpa_rejects: u64,
    /// FPDUs delivered.
    pub fpdus: u64,
    /// FPDUs whose CRC32c did not match (CRCs negotiated).
    pub crc_invalid: u64,
    /// Tagged DDP segments (RDMA Write, Read Response).
    pub ddp_tagged_segments: u64,
    /// Untagged DDP segments (Sends, Read Requests, Terminate).
    pub ddp_untagged_segments: u64,
    /// DDP segments by RDMAP opcode.
    pub segments: RdmapOpcodeCounts,
    /// RDMAP messages (segments with the L bit) by opcode.
    pub messages: RdmapOpcodeCounts,
    /// Holes in the streams: stretches the capture lacks; what fell in them
    /// is unknown and the checks that needed it were skipped.
    pub gaps: u64,
    /// Stream octets in those holes.
    pub gap_bytes: u64,
    /// Times framing was found again after a hole or a mid-stream start.
    pub resyncs: u64,
    /// Of those, found by FPDU length and header plausibility alone
    /// (neither a marker nor a CRC confirmed them).
    pub resyncs_uncertain: u64,
    /// Captured stream octets passed over before framing was found again.
    pub resync_skipped_bytes: u64,
}

/// A count per RDMAP opcode (RFC 5040 section 4.3).
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RdmapOpcodeCounts {
    /// RDMA Write (0).
    pub rdma_write: u64,
    /// RDMA Read Request (1).
    pub rdma_read_request: u64,
    /// RDMA Read Response (2).
    pub rdma_read_response: u64,
    /// Send (3).
    pub send: u64,
    /// Send with Invalidate (4).
    pub send_invalidate: u64,
    /// Send with Solicited Event (5).
    pub send_se: u64,
    /// Send with Solicited Event and Invalidate (6).
    pub send_se_invalidate: u64,
    /// Terminate (7).
    pub terminate: u64,
}

impl From<&[u64; 8]> for RdmapOpcodeCounts {
    /// From counts indexed by the opcode's value.
    fn from(n: &[u64; 8]) -> Self {
        RdmapOpcodeCounts {
            rdma_write: n[0],
            rdma_read_request: n[1],
            rdma_read_response: n[2],
            send: n[3],
            send_invalidate: n[4],
            send_se: n[5],
            send_se_invalidate: n[6],
            terminate: n[7],
        }
    }
}

impl From<&IwarpCounts> for IwarpCountsView {
    fn from(x: &IwarpCounts) -> Self {
        IwarpCountsView {
            frames: x.frames,
            mpa_requests: x.mpa_requests,
            mpa_replies: x.mpa_replies,
            mpa_rejects: x.mpa_rejects,
            fpdus: x.fpdus,
            crc_invalid: x.crc_invalid,
            ddp_tagged_segments: x.ddp_tagged_segments,
            ddp_untagged_segments: x.ddp_untagged_segments,
            segments: RdmapOpcodeCounts::from(&x.segments),
            messages: RdmapOpcodeCounts::from(&x.messages),
            gaps: x.gaps,
            gap_bytes: x.gap_bytes,
            resyncs: x.resyncs,
            resyncs_uncertain: x.resyncs_uncertain,
            resync_skipped_bytes: x.resync_skipped_bytes,
        }
    }
}

/// What the caps pushed out.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename = "Evictions")]
#[schemars(deny_unknown_fields)]
pub struct EvictionsView {
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

impl From<&Evictions> for EvictionsView {
    fn from(x: &Evictions) -> Self {
        EvictionsView {
            connections: x.connections,
            qps: x.qps,
            calls: x.calls,
            reads: x.reads,
            truncated_messages: x.truncated_messages,
            nfs_errors_unlinked: x.nfs_errors_unlinked,
        }
    }
}

/// The fabric's congestion signals on one connection's frames: counters,
/// the time range and the first few frames; a fixed size, whatever the
/// number of marks.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename = "Congestion")]
#[schemars(deny_unknown_fields)]
pub struct CongestionView {
    /// Frames whose IP ECN field is CE (RFC 3168 5): a switch marked them
    /// instead of dropping them.
    pub ecn_ce: u64,
    /// RoCEv2 Congestion Notification Packets (BTH opcode 0x81, IBA annex
    /// A17.9.2) to one of its QPs: its peer saw CE marks and asks it to
    /// slow down. Null on iWARP, which has no BTH (TCP's ECE echo stands in).
    pub cnps: Option<u64>,
    /// Frames with the BTH FECN bit (IBA 9.2.7, InfiniBand congestion
    /// control); null on iWARP.
    pub fecn: Option<u64>,
    /// Frames with the BTH BECN bit: the responder echoing a FECN back;
    /// null on iWARP.
    pub becn: Option<u64>,
    /// Time of the first marked frame (ns since the epoch; `null`: none).
    #[serde(serialize_with = "super::exact::decimal")]
    #[schemars(with = "Option<String>")]
    pub first_ts_ns: Option<u64>,
    /// Time of the last marked frame (`null`: none).
    #[serde(serialize_with = "super::exact::decimal")]
    #[schemars(with = "Option<String>")]
    pub last_ts_ns: Option<u64>,
    /// The first marked frames (at most 5).
    pub frames: Vec<u64>,
}

impl CongestionView {
    /// A connection's marks: the BTH's signals are null on iWARP
    /// (`Connection::is_iwarp`), where no frame has a BTH to carry them.
    pub fn of(x: &Congestion, iwarp: bool) -> Self {
        let bth = |n: u64| (!iwarp).then_some(n);
        CongestionView {
            ecn_ce: x.ecn_ce,
            cnps: bth(x.cnps),
            fecn: bth(x.fecn),
            becn: bth(x.becn),
            first_ts_ns: x.first_ts_ns,
            last_ts_ns: x.last_ts_ns,
            frames: x.frames.clone(),
        }
    }
}
