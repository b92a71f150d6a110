//! Anomalies: every place a peer broke RFC 8166 or RFC 8797, or the capture
//! shows something a user must know about.
//!
//! Kinds are stable strings (scripts match on them): add new ones, never
//! rename existing ones.

use super::keys::{ConnId, Origin};

/// Writes `Kind` and everything known about each kind from one table, so a
/// new kind is one row: its stable name, the section it enforces, its
/// severity and the sentence the TUI explains it with cannot drift apart.
macro_rules! kinds {
    ($(
        $(#[doc = $doc:literal])*
        $kind:ident = $name:literal {
            section: $section:literal,
            severity: $severity:ident,
            repeats: $repeats:ident,
            explanation: $explanation:literal $(,)?
        }
    ),* $(,)?) => {
        /// What was found. The `as_str` names are a stable interface.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        // Not `non_exhaustive`: the front ends match kinds, and a new kind
        // should stop their build until it is handled.
        pub enum Kind {
            $(
                $(#[doc = $doc])*
                $kind,
            )*
        }

        impl Kind {
            /// Every kind, in a stable order (the table's).
            pub const ALL: [Kind; [$(stringify!($kind)),*].len()] = [$(Kind::$kind),*];

            /// The stable name, as in JSON output and `--filter`.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Kind::$kind => $name,)*
                }
            }

            /// The RFC (or spec) and section the kind refers to.
            pub const fn rfc(self) -> &'static str {
                match self {
                    $(Kind::$kind => $section,)*
                }
            }

            /// How much it matters.
            pub const fn severity(self) -> Severity {
                match self {
                    $(Kind::$kind => Severity::$severity,)*
                }
            }

            /// Whether a repeat on one connection is the same fact again
            /// (one finding with a count) or a new event.
            pub const fn repeats(self) -> Repeats {
                match self {
                    $(Kind::$kind => Repeats::$repeats,)*
                }
            }

            /// What the kind means, in a sentence for the user.
            pub const fn explanation(self) -> &'static str {
                match self {
                    $(Kind::$kind => $explanation,)*
                }
            }
        }
    };
}

/// The table of kinds, handed to a macro: `kinds!` writes [`Kind`] from it
/// here, and the output layer its JSON names and schema, so that a new kind
/// is still one row.
#[macro_export]
macro_rules! with_kind_table {
    ($m:ident) => {
        $m! {
    /// More calls outstanding than the responder granted (RFC 8166 §3.3.1).
    CreditOverrun = "credit_overrun" {
        section: "RFC 8166 3.3.1",
        severity: Error,
        repeats: PerEvent,
        explanation: "The requester had more calls outstanding than the responder granted credits; the responder may drop them or the connection.",
    },
    /// A reply granted zero credits (RFC 8166 §3.3.1).
    ZeroCreditGrant = "zero_credit_grant" {
        section: "RFC 8166 3.3.1",
        severity: Error,
        repeats: PerEvent,
        explanation: "A reply granted zero credits: the requester can send nothing more and the connection deadlocks.",
    },
    /// A Send larger than the receiver's inline threshold (RFC 8166 §3.3.2, RFC 8797 §4.2).
    InlineThresholdExceeded = "inline_threshold_exceeded" {
        section: "RFC 8166 3.3.2; RFC 8797 4.2",
        severity: Error,
        repeats: PerEvent,
        explanation: "A Send larger than the receiver's inline threshold (negotiated in the CM private data, 1024 B by default); the receive buffer overflows.",
    },
    /// Send With Invalidate on a connection where not both peers set R (RFC 8797 §4.1).
    RemoteInvalidationNotNegotiated = "remote_invalidation_not_negotiated" {
        section: "RFC 8797 4.1",
        severity: Error,
        repeats: PerConnection,
        explanation: "Send With Invalidate on a connection where the peers did not both set R in their CM private data. The responder (server) is at fault. Linux's NFS server does this as shipped (it clears R, then invalidates remotely anyway); a client that set R, as Linux's does, accepts the invalidation, so between Linux peers it costs nothing.",
    },
    /// Send With Invalidate naming an STag that is not one of that XID's (RFC 8797 §4.1).
    InvalidatedForeignStag = "invalidated_foreign_stag" {
        section: "RFC 8797 4.1",
        severity: Error,
        repeats: PerEvent,
        explanation: "Send With Invalidate named an STag that this XID did not advertise: a region still in use may have been invalidated.",
    },
    /// RPC-over-RDMA message shorter than 28 bytes (RFC 8166 §4.5).
    ShortHeader = "short_header" {
        section: "RFC 8166 4.5",
        severity: Warning,
        repeats: PerEvent,
        explanation: "An RPC-over-RDMA message shorter than the fixed 28-byte header.",
    },
    /// rdma_vers other than 1 (RFC 8166 §4.5.1).
    VersionMismatch = "version_mismatch" {
        section: "RFC 8166 4.5.1",
        severity: Warning,
        repeats: PerConnection,
        explanation: "rdma_vers is not 1.",
    },
    /// RDMA_ERROR with ERR_VERS (RFC 8166 §4.5).
    ErrVers = "err_vers" {
        section: "RFC 8166 4.5",
        severity: Warning,
        repeats: PerEvent,
        explanation: "The peer answered RDMA_ERROR ERR_VERS: it does not speak this version.",
    },
    /// RDMA_ERROR with ERR_CHUNK (RFC 8166 §4.5).
    ErrChunk = "err_chunk" {
        section: "RFC 8166 4.5",
        severity: Warning,
        repeats: PerEvent,
        explanation: "The peer answered RDMA_ERROR ERR_CHUNK: a chunk list could not be processed.",
    },
    /// rdma_xid differs from the XID of the RPC message it carries (RFC 8166 §4.5.2).
    XidMismatch = "xid_mismatch" {
        section: "RFC 8166 4.5.2",
        severity: Error,
        repeats: PerEvent,
        explanation: "The RPC-over-RDMA header's XID differs from the RPC message it carries.",
    },
    /// Unknown rdma_proc (RFC 8166 §4.5.2).
    BadProc = "bad_proc" {
        section: "RFC 8166 4.5.2",
        severity: Error,
        repeats: PerEvent,
        explanation: "Unknown rdma_proc value.",
    },
    /// RDMA_NOMSG whose Payload stream is in no chunk that can carry it: a
    /// call without a position-zero read chunk, a reply without a reply
    /// chunk (RFC 8166 §3.5.3, §4.2.4).
    NomsgWithoutChunks = "nomsg_without_chunks" {
        section: "RFC 8166 3.5.3; 4.2.4",
        severity: Error,
        repeats: PerEvent,
        explanation: "RDMA_NOMSG without a position-zero read chunk or a reply chunk: there is no message anywhere.",
    },
    /// RDMA_MSGP, which RFC 8166 no longer supports (§4.6).
    MsgpUsed = "msgp_used" {
        section: "RFC 8166 4.6",
        severity: Warning,
        repeats: PerConnection,
        explanation: "RDMA_MSGP, which RFC 8166 no longer supports.",
    },
    /// RDMA_DONE, which RFC 8166 no longer supports (§4.6).
    DoneUsed = "done_used" {
        section: "RFC 8166 4.6",
        severity: Warning,
        repeats: PerConnection,
        explanation: "RDMA_DONE, which RFC 8166 no longer supports.",
    },
    /// A reply carrying a read list (RFC 8166 §4.3.1).
    ReadListInReply = "read_list_in_reply" {
        section: "RFC 8166 4.3.1",
        severity: Error,
        repeats: PerEvent,
        explanation: "A reply carried a read list; only calls may.",
    },
    /// RDMA_ERROR sent by the requester (RFC 8166 §4.5).
    ErrorFromRequester = "error_from_requester" {
        section: "RFC 8166 4.5",
        severity: Error,
        repeats: PerEvent,
        explanation: "The requester sent RDMA_ERROR; only responders may.",
    },
    /// RDMA Read or Write to an R_Key/VA range no outstanding call advertised (RFC 8166 §8.1).
    RdmaOutsideChunk = "rdma_outside_chunk" {
        section: "RFC 8166 8.1",
        severity: Error,
        repeats: PerEvent,
        explanation: "An RDMA Read or Write touched an R_Key or address range no outstanding call advertised.",
    },
    /// The ICRC does not match the frame (IBA 7.8.1 / RoCEv2 annex A17).
    IcrcMismatch = "icrc_mismatch" {
        section: "IBA 7.8.1; RoCEv2 A17.3.3",
        severity: Warning,
        repeats: PerEvent,
        explanation: "The invariant CRC does not match: corruption on the wire or in the capture.",
    },
    /// A header the dissectors could not parse.
    Malformed = "malformed" {
        section: "-",
        severity: Warning,
        repeats: PerEvent,
        explanation: "A header the dissectors could not parse.",
    },
    /// A call still unanswered at the end of the capture.
    CallWithoutReply = "call_without_reply" {
        section: "RFC 5531 9",
        severity: Info,
        repeats: PerEvent,
        explanation: "A call still unanswered when the capture ended.",
    },
    /// A reply whose call was not seen.
    ReplyWithoutCall = "reply_without_call" {
        section: "RFC 5531 9",
        severity: Info,
        repeats: PerEvent,
        explanation: "A reply whose call is not in the capture (often: the capture started late).",
    },
    /// A request PSN seen again: a retransmission (IBA 9.7.5).
    Retransmission = "retransmission" {
        section: "IBA 9.7.5",
        severity: Info,
        repeats: PerEvent,
        explanation: "A request packet sequence number seen again: a transport retransmission.",
    },
    /// A NAK in an AETH (PSN sequence error, remote access error, ...) (IBA 9.7.5.2).
    Nak = "nak" {
        section: "IBA 9.7.5",
        severity: Warning,
        repeats: PerEvent,
        explanation: "The receiver NAKed a packet (PSN sequence error, remote access error, ...).",
    },
    /// A table reached its cap and dropped its oldest entry.
    StateEvicted = "state_evicted" {
        section: "-",
        severity: Warning,
        repeats: PerEvent,
        explanation: "A table reached its cap and forgot its oldest entry; raise the cap to keep everything.",
    },
    /// An RDMA-CM connection request was rejected (IBA 12.6.7).
    ConnectionRejected = "connection_rejected" {
        section: "IBA 12.6.7",
        severity: Warning,
        repeats: PerEvent,
        explanation: "The RDMA-CM connection request was rejected.",
    },
    /// A CM message the connection manager's state machine does not allow
    /// in the state its connection is in (IBA 12.9): an RTU before the REP,
    /// a DREP without a DREQ, a message from the wrong side, ...
    CmBadTransition = "cm_bad_transition" {
        section: "IBA 12.9",
        severity: Warning,
        repeats: PerEvent,
        explanation: "A CM message its connection's state did not allow (an RTU before the REP, a DREP without a DREQ, ...): MADs the capture missed, or a peer's CM gone wrong.",
    },
    /// An XID sent again on a connection while its earlier call was still
    /// outstanding: an XID is retired only by its reply (RFC 8166 §3, RFC 5531 §9).
    XidReused = "xid_reused" {
        section: "RFC 8166 3; RFC 5531 9",
        severity: Warning,
        repeats: PerEvent,
        explanation: "An XID sent again while its earlier call still waited for a reply: both are kept, and replies pair with them in order.",
    },
    /// A reply stamped before its call: the capture's clock went backwards,
    /// so the latency is unknown.
    TimeWentBackwards = "time_went_backwards" {
        section: "-",
        severity: Warning,
        repeats: PerEvent,
        explanation: "A reply stamped before its call: the capture's clock went backwards, so the latency is unknown.",
    },
    /// A request packet whose PSN is far from its queue pair's sequence and
    /// that the packets after it do not follow: another incarnation of the
    /// QP, or a stray frame (IBA 9.7.1). Reported, not followed.
    PsnOutOfSequence = "psn_out_of_sequence" {
        section: "IBA 9.7.1",
        severity: Warning,
        repeats: PerEvent,
        explanation: "A request packet far from its queue pair's PSN sequence that the next packets do not follow: another incarnation of the QP, or a stray frame.",
    },
    /// A frame addressed to a known queue pair by a host that is not its
    /// connection's peer: in RoCEv2 the addresses, not the QP number alone,
    /// say which connection a frame belongs to.
    WrongPeer = "wrong_peer" {
        section: "IBA 9.7 (RC); RoCEv2 A17.4",
        severity: Warning,
        repeats: PerEvent,
        explanation: "A frame to a known queue pair from a host that is not its connection's peer: not part of the connection.",
    },
    /// A RoCEv2 packet in IPv4 fragments, which RoCEv2 does not allow (its
    /// packets are sent with Don't Fragment set).
    IpFragment = "ip_fragment" {
        section: "RoCEv2 A17.4",
        severity: Warning,
        repeats: PerEvent,
        explanation: "A RoCEv2 packet in IPv4 fragments: RoCEv2 packets are not to be fragmented.",
    },
    /// A request whose PSN the RDMA READ before it still holds: a READ
    /// takes one PSN per response packet, and the next request comes after
    /// them all (IBA 9.7.1).
    ReadSpanPsnReused = "read_span_psn_reused" {
        section: "IBA 9.7.1",
        severity: Error,
        repeats: PerEvent,
        explanation: "A request numbered with a PSN that the RDMA READ before it still holds: a READ takes one PSN per response packet.",
    },
    /// An ACK for a PSN no request was sent with: before the first request
    /// of the queue pair (its starting PSN, when the CM exchange gave it),
    /// or past the last one sent (IBA 9.7.5.1).
    AckPsnNotSent = "ack_psn_not_sent" {
        section: "IBA 9.7.5.1",
        severity: Error,
        repeats: PerEvent,
        explanation: "An ACK for a PSN that no request of its queue pair was sent with.",
    },
    /// A call sent again on a new connection after the connection it was
    /// waiting on was torn down without its reply: one operation, several
    /// transmissions, and the application waited across the outage (RFC 8166 4.5.5).
    CallRetransmitted = "call_retransmitted" {
        section: "RFC 8166 4.5.5; RFC 5531 9",
        severity: Warning,
        repeats: PerEvent,
        explanation: "A call sent again on a new connection after the one it waited on was torn down: one operation, the application waited across the outage.",
    },
    /// A read chunk whose XDR position is not a multiple of four (RFC 8166 §3.4.5).
    UnalignedReadPosition = "unaligned_read_position" {
        section: "RFC 8166 3.4.5",
        severity: Error,
        repeats: PerEvent,
        explanation: "A read chunk's Position is not a multiple of four: XDR items start on four-byte boundaries, so the responder cannot put the chunk's data where it belongs in the Payload stream.",
    },
    /// An iWARP peer sent RDMAP Terminate: the connection failed at the
    /// layer, type and code it names (RFC 5040 §4.8, RFC 5041 §7.2, RFC 5044 §8).
    IwarpTerminate = "iwarp_terminate" {
        section: "RFC 5040 4.8; RFC 5041 7.2; RFC 5044 8",
        severity: Error,
        repeats: PerEvent,
        explanation: "An iWARP peer sent Terminate: it found an error (named by layer, type and code) and is tearing the connection down; the calls outstanding on it get no reply there.",
    },
    /// An FPDU whose CRC32c does not match its octets (RFC 5044 §4.1, §8).
    MpaCrcMismatch = "mpa_crc_mismatch" {
        section: "RFC 5044 4.1",
        severity: Warning,
        repeats: PerEvent,
        explanation: "An iWARP FPDU's CRC32c does not match its octets: corruption on the wire or in the capture (the receiver terminates the connection).",
    },
    /// A DDP segment or RDMAP message that breaks its protocol: a Send
    /// tagged, a Write untagged, a reserved opcode, a wrong version
    /// (RFC 5041 §4, RFC 5040 §4).
    IwarpViolation = "iwarp_violation" {
        section: "RFC 5041 4; RFC 5040 4",
        severity: Error,
        repeats: PerEvent,
        explanation: "A DDP segment or RDMAP message breaks its protocol (a Send in a tagged segment, a Write untagged, a reserved opcode or version): the receiver must terminate the connection.",
    },
    /// The MPA responder rejected the connection (RFC 5044 §7.1, the R flag).
    MpaReject = "mpa_reject" {
        section: "RFC 5044 7.1",
        severity: Warning,
        repeats: PerEvent,
        explanation: "The iWARP responder rejected the MPA Request: no RDMA connection was made.",
    },
        }
    };
}

with_kind_table!(kinds);

impl Kind {
    /// The kind's position in `ALL`: a bit or a slot per kind.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Parses a stable name.
    pub fn from_name(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// Whether a kind's repeats on one connection are one finding or many.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Repeats {
    /// Every occurrence is an event of its own (a NAK, a lost reply).
    PerEvent,
    /// The occurrences on one connection say one fact about it again (a
    /// flag the peers negotiated, a header version they speak): one
    /// finding with a count, its first and last frames and times.
    PerConnection,
}

impl Repeats {
    /// Stable name (docs and JSON).
    pub const fn as_str(self) -> &'static str {
        match self {
            Repeats::PerEvent => "per event",
            Repeats::PerConnection => "per connection",
        }
    }
}

/// How much an anomaly matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
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
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// Set on a finding that stands for several occurrences of one fact on
    /// one connection (see [`Repeats`]); the fields above are the first's.
    pub repeated: Option<Box<Repeated>>,
}

/// The occurrences after the first that one collapsed finding stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repeated {
    /// Occurrences, the first included.
    pub count: u64,
    /// The last occurrence's last frame.
    pub last_frame: Option<u64>,
    /// The last occurrence's time.
    pub last_ts_ns: Option<u64>,
    /// The first few XIDs, in order ([`Repeated::XIDS`] at most: memory
    /// does not grow with the count).
    pub xids: Vec<u32>,
}

impl Repeated {
    /// How many XIDs a collapsed finding keeps.
    pub const XIDS: usize = 8;
}

impl Anomaly {
    /// Occurrences this finding stands for.
    pub fn count(&self) -> u64 {
        self.repeated.as_ref().map_or(1, |r| r.count)
    }

    /// The first frame of its first occurrence.
    pub fn first_frame(&self) -> Option<u64> {
        self.frames.first().copied()
    }

    /// The last frame of its last occurrence.
    pub fn last_frame(&self) -> Option<u64> {
        match &self.repeated {
            Some(r) => r.last_frame,
            None => self.frames.last().copied(),
        }
    }

    /// The time of its last occurrence.
    pub fn last_ts_ns(&self) -> Option<u64> {
        match &self.repeated {
            Some(r) => r.last_ts_ns,
            None => self.ts_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snake_case(camel: &str) -> String {
        let mut s = String::new();
        for (i, c) in camel.chars().enumerate() {
            if c.is_ascii_uppercase() && i > 0 {
                s.push('_');
            }
            s.push(c.to_ascii_lowercase());
        }
        s
    }

    /// Before the table, `serde(rename_all = "snake_case")` named the kinds;
    /// a row whose name strays from its variant would rename a stable kind.
    #[test]
    fn names_are_the_variants_in_snake_case() {
        for k in Kind::ALL {
            assert_eq!(k.as_str(), snake_case(&format!("{k:?}")));
            assert_eq!(Kind::from_name(k.as_str()), Some(k));
        }
    }

    #[test]
    fn index_is_the_position_in_all() {
        for (i, k) in Kind::ALL.into_iter().enumerate() {
            assert_eq!(k.index(), i, "{k:?}");
        }
    }

    #[test]
    fn every_kind_has_a_section_and_an_explanation() {
        for k in Kind::ALL {
            assert!(!k.rfc().is_empty(), "{k:?}");
            assert!(k.explanation().ends_with('.'), "{k:?}");
        }
    }
}
