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
#[non_exhaustive]
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
    /// RDMA_NOMSG without a position-zero read chunk or a reply chunk (RFC 8166 §4.5.2).
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
        }
    }

    /// Every kind, in a stable order.
    pub const ALL: [Kind; 26] = [
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
            Kind::XidMismatch | Kind::BadProc | Kind::NomsgWithoutChunks => "RFC 8166 4.5.2",
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
