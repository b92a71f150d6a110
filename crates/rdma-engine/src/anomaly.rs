//! Anomalies: every place a peer broke RFC 8166 or RFC 8797, or the capture
//! shows something a user must know about.
//!
//! Kinds are stable strings (scripts match on them): add new ones, never
//! rename existing ones.

use serde::Serialize;

use super::keys::{ConnId, Origin};

/// What was found. The `as_str` names are a stable interface.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
// Not `non_exhaustive`: the front ends match every kind (the TUI explains
// each), and a new kind should stop their build until it is handled.
pub enum Kind {
    /// More calls outstanding than the responder granted (RFC 8166 §3.3.1).
    CreditOverrun,
    /// A reply granted zero credits (RFC 8166 §3.3.1).
    ZeroCreditGrant,
    /// A Send larger than the receiver's inline threshold (RFC 8166 §3.3.2, RFC 8797 §4.2).
    InlineThresholdExceeded,
    /// Send With Invalidate on a connection where not both peers set R (RFC 8797 §4.1).
    RemoteInvalidationNotNegotiated,
    /// Send With Invalidate naming an STag that is not one of that XID's (RFC 8797 §4.1).
    InvalidatedForeignStag,
    /// RPC-over-RDMA message shorter than 28 bytes (RFC 8166 §4.5).
    ShortHeader,
    /// rdma_vers other than 1 (RFC 8166 §4.5.1).
    VersionMismatch,
    /// RDMA_ERROR with ERR_VERS (RFC 8166 §4.5).
    ErrVers,
    /// RDMA_ERROR with ERR_CHUNK (RFC 8166 §4.5).
    ErrChunk,
    /// rdma_xid differs from the XID of the RPC message it carries (RFC 8166 §4.5.2).
    XidMismatch,
    /// Unknown rdma_proc (RFC 8166 §4.5.2).
    BadProc,
    /// RDMA_NOMSG whose Payload stream is in no chunk that can carry it: a
    /// call without a position-zero read chunk, a reply without a reply
    /// chunk (RFC 8166 §3.5.3, §4.2.4).
    NomsgWithoutChunks,
    /// RDMA_MSGP, which RFC 8166 no longer supports (§4.6).
    MsgpUsed,
    /// RDMA_DONE, which RFC 8166 no longer supports (§4.6).
    DoneUsed,
    /// A reply carrying a read list (RFC 8166 §4.3.1).
    ReadListInReply,
    /// RDMA_ERROR sent by the requester (RFC 8166 §4.5).
    ErrorFromRequester,
    /// RDMA Read or Write to an R_Key/VA range no outstanding call advertised (RFC 8166 §8.1).
    RdmaOutsideChunk,
    /// The ICRC does not match the frame (IBA 7.8.1 / RoCEv2 annex A17).
    IcrcMismatch,
    /// A header the dissectors could not parse.
    Malformed,
    /// A call still unanswered at the end of the capture.
    CallWithoutReply,
    /// A reply whose call was not seen.
    ReplyWithoutCall,
    /// A request PSN seen again: a retransmission (IBA 9.7.5).
    Retransmission,
    /// A NAK in an AETH (PSN sequence error, remote access error, ...) (IBA 9.7.5.2).
    Nak,
    /// A table reached its cap and dropped its oldest entry.
    StateEvicted,
    /// An RDMA-CM connection request was rejected (IBA 12.6.7).
    ConnectionRejected,
    /// A CM message the connection manager's state machine does not allow
    /// in the state its connection is in (IBA 12.9): an RTU before the REP,
    /// a DREP without a DREQ, a message from the wrong side, ...
    CmBadTransition,
    /// An XID sent again on a connection while its earlier call was still
    /// outstanding: an XID is retired only by its reply (RFC 8166 §3, RFC 5531 §9).
    XidReused,
    /// A reply stamped before its call: the capture's clock went backwards,
    /// so the latency is unknown.
    TimeWentBackwards,
    /// A request packet whose PSN is far from its queue pair's sequence and
    /// that the packets after it do not follow: another incarnation of the
    /// QP, or a stray frame (IBA 9.7.1). Reported, not followed.
    PsnOutOfSequence,
    /// A frame addressed to a known queue pair by a host that is not its
    /// connection's peer: in RoCEv2 the addresses, not the QP number alone,
    /// say which connection a frame belongs to.
    WrongPeer,
    /// A RoCEv2 packet in IPv4 fragments, which RoCEv2 does not allow (its
    /// packets are sent with Don't Fragment set).
    IpFragment,
    /// A request whose PSN the RDMA READ before it still holds: a READ
    /// takes one PSN per response packet, and the next request comes after
    /// them all (IBA 9.7.1).
    ReadSpanPsnReused,
    /// An ACK for a PSN no request was sent with: before the first request
    /// of the queue pair (its starting PSN, when the CM exchange gave it),
    /// or past the last one sent (IBA 9.7.5.1).
    AckPsnNotSent,
    /// A call sent again on a new connection after the connection it was
    /// waiting on was torn down without its reply: one operation, several
    /// transmissions, and the application waited across the outage (RFC 8166 4.5.5).
    CallRetransmitted,
}

impl Kind {
    /// The stable name, as in JSON output and `--filter`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Kind::CreditOverrun => "credit_overrun",
            Kind::ZeroCreditGrant => "zero_credit_grant",
            Kind::InlineThresholdExceeded => "inline_threshold_exceeded",
            Kind::RemoteInvalidationNotNegotiated => "remote_invalidation_not_negotiated",
            Kind::InvalidatedForeignStag => "invalidated_foreign_stag",
            Kind::ShortHeader => "short_header",
            Kind::VersionMismatch => "version_mismatch",
            Kind::ErrVers => "err_vers",
            Kind::ErrChunk => "err_chunk",
            Kind::XidMismatch => "xid_mismatch",
            Kind::BadProc => "bad_proc",
            Kind::NomsgWithoutChunks => "nomsg_without_chunks",
            Kind::MsgpUsed => "msgp_used",
            Kind::DoneUsed => "done_used",
            Kind::ReadListInReply => "read_list_in_reply",
            Kind::ErrorFromRequester => "error_from_requester",
            Kind::RdmaOutsideChunk => "rdma_outside_chunk",
            Kind::IcrcMismatch => "icrc_mismatch",
            Kind::Malformed => "malformed",
            Kind::CallWithoutReply => "call_without_reply",
            Kind::ReplyWithoutCall => "reply_without_call",
            Kind::Retransmission => "retransmission",
            Kind::Nak => "nak",
            Kind::StateEvicted => "state_evicted",
            Kind::ConnectionRejected => "connection_rejected",
            Kind::CmBadTransition => "cm_bad_transition",
            Kind::XidReused => "xid_reused",
            Kind::TimeWentBackwards => "time_went_backwards",
            Kind::PsnOutOfSequence => "psn_out_of_sequence",
            Kind::WrongPeer => "wrong_peer",
            Kind::IpFragment => "ip_fragment",
            Kind::ReadSpanPsnReused => "read_span_psn_reused",
            Kind::AckPsnNotSent => "ack_psn_not_sent",
            Kind::CallRetransmitted => "call_retransmitted",
        }
    }

    /// Every kind, in a stable order.
    pub const ALL: [Kind; 34] = [
        Kind::CreditOverrun,
        Kind::ZeroCreditGrant,
        Kind::InlineThresholdExceeded,
        Kind::RemoteInvalidationNotNegotiated,
        Kind::InvalidatedForeignStag,
        Kind::ShortHeader,
        Kind::VersionMismatch,
        Kind::ErrVers,
        Kind::ErrChunk,
        Kind::XidMismatch,
        Kind::BadProc,
        Kind::NomsgWithoutChunks,
        Kind::MsgpUsed,
        Kind::DoneUsed,
        Kind::ReadListInReply,
        Kind::ErrorFromRequester,
        Kind::RdmaOutsideChunk,
        Kind::IcrcMismatch,
        Kind::Malformed,
        Kind::CallWithoutReply,
        Kind::ReplyWithoutCall,
        Kind::Retransmission,
        Kind::Nak,
        Kind::StateEvicted,
        Kind::ConnectionRejected,
        Kind::CmBadTransition,
        Kind::XidReused,
        Kind::TimeWentBackwards,
        Kind::PsnOutOfSequence,
        Kind::WrongPeer,
        Kind::IpFragment,
        Kind::ReadSpanPsnReused,
        Kind::AckPsnNotSent,
        Kind::CallRetransmitted,
    ];

    /// Parses a stable name.
    pub fn from_name(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The RFC (or spec) and section the kind refers to.
    pub const fn rfc(self) -> &'static str {
        match self {
            Kind::CreditOverrun | Kind::ZeroCreditGrant => "RFC 8166 3.3.1",
            Kind::InlineThresholdExceeded => "RFC 8166 3.3.2; RFC 8797 4.2",
            Kind::RemoteInvalidationNotNegotiated | Kind::InvalidatedForeignStag => "RFC 8797 4.1",
            Kind::ShortHeader | Kind::ErrVers | Kind::ErrChunk | Kind::ErrorFromRequester => {
                "RFC 8166 4.5"
            }
            Kind::VersionMismatch => "RFC 8166 4.5.1",
            Kind::XidMismatch | Kind::BadProc => "RFC 8166 4.5.2",
            Kind::NomsgWithoutChunks => "RFC 8166 3.5.3; 4.2.4",
            Kind::MsgpUsed | Kind::DoneUsed => "RFC 8166 4.6",
            Kind::ReadListInReply => "RFC 8166 4.3.1",
            Kind::RdmaOutsideChunk => "RFC 8166 8.1",
            Kind::IcrcMismatch => "IBA 7.8.1; RoCEv2 A17.3.3",
            Kind::Malformed => "-",
            Kind::CallWithoutReply | Kind::ReplyWithoutCall => "RFC 5531 9",
            Kind::Retransmission | Kind::Nak => "IBA 9.7.5",
            Kind::StateEvicted => "-",
            Kind::ConnectionRejected => "IBA 12.6.7",
            Kind::CmBadTransition => "IBA 12.9",
            Kind::XidReused => "RFC 8166 3; RFC 5531 9",
            Kind::TimeWentBackwards => "-",
            Kind::PsnOutOfSequence => "IBA 9.7.1",
            Kind::WrongPeer => "IBA 9.7 (RC); RoCEv2 A17.4",
            Kind::IpFragment => "RoCEv2 A17.4",
            Kind::ReadSpanPsnReused => "IBA 9.7.1",
            Kind::AckPsnNotSent => "IBA 9.7.5.1",
            Kind::CallRetransmitted => "RFC 8166 4.5.5; RFC 5531 9",
        }
    }

    /// How much it matters.
    pub const fn severity(self) -> Severity {
        match self {
            Kind::CreditOverrun
            | Kind::ZeroCreditGrant
            | Kind::InlineThresholdExceeded
            | Kind::RemoteInvalidationNotNegotiated
            | Kind::InvalidatedForeignStag
            | Kind::RdmaOutsideChunk
            | Kind::XidMismatch
            | Kind::BadProc
            | Kind::ErrorFromRequester
            | Kind::ReadListInReply
            | Kind::ReadSpanPsnReused
            | Kind::AckPsnNotSent
            | Kind::NomsgWithoutChunks => Severity::Error,
            Kind::ShortHeader
            | Kind::VersionMismatch
            | Kind::ErrVers
            | Kind::ErrChunk
            | Kind::MsgpUsed
            | Kind::DoneUsed
            | Kind::IcrcMismatch
            | Kind::Malformed
            | Kind::Nak
            | Kind::ConnectionRejected
            | Kind::CmBadTransition
            | Kind::XidReused
            | Kind::TimeWentBackwards
            | Kind::PsnOutOfSequence
            | Kind::WrongPeer
            | Kind::IpFragment
            | Kind::CallRetransmitted
            | Kind::StateEvicted => Severity::Warning,
            Kind::CallWithoutReply | Kind::ReplyWithoutCall | Kind::Retransmission => {
                Severity::Info
            }
        }
    }
}

/// How much an anomaly matters.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Worth knowing; often a capture artefact.
    Info,
    /// Unusual or degraded, but within what peers may do.
    Warning,
    /// A peer broke a MUST of the RFCs.
    Error,
}

impl Severity {
    /// Stable name (text and JSON).
    pub const fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One finding, with everything needed to locate it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Anomaly {
    /// Stable kind.
    pub kind: Kind,
    /// Who saw it: the wire, or one side's kernel (whose "frames" are
    /// probe record numbers).
    pub origin: Origin,
    /// When it was found: the time of the frame, probe record or tick that
    /// revealed it (ns since the epoch); `None` when the engine had seen no
    /// time yet.
    pub ts_ns: Option<u64>,
    /// Frame numbers involved (1-based, as tshark counts).
    pub frames: Vec<u64>,
    /// Connection, when known.
    pub connection: Option<ConnId>,
    /// RPC XID, when the anomaly belongs to one transaction.
    pub xid: Option<u32>,
    /// A sentence a user understands.
    pub message: String,
}
