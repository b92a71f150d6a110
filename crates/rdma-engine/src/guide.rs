//! What a user does about each kind of finding: whether it harms anything,
//! which peer is at fault, what to do, and whether a shipping stack does it
//! as a matter of course.
//!
//! Beside the table of kinds rather than in it so the table's rows stay the
//! protocol's facts; the match below is exhaustive, so a new kind does not
//! build until it says what a user should do about it. `docs/findings.md`
//! is generated from this and [`Kind`]'s table (`findings_markdown`).

use std::fmt::Write;

use crate::Kind;

/// What a finding costs when it is real.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Harm {
    /// Nothing: worth knowing, or an artefact of the capture.
    None,
    /// Slower I/O, nothing lost.
    Performance,
    /// Data or replies may be wrong, lost, or the connection may die.
    Correctness,
    /// Peers that follow the RFC to the letter may not work together.
    Interoperability,
}

impl Harm {
    /// Stable name (text and JSON).
    pub const fn as_str(self) -> &'static str {
        match self {
            Harm::None => "none",
            Harm::Performance => "performance",
            Harm::Correctness => "correctness",
            Harm::Interoperability => "interoperability",
        }
    }
}

/// Where the fix belongs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AtFault {
    /// The requester (the NFS client).
    Client,
    /// The responder (the NFS server).
    Server,
    /// Either peer: the frames say which.
    Either,
    /// The network between them (links, switches, NICs' wire side).
    Fabric,
    /// No peer: how or where the capture was taken, or this tool's limits.
    Capture,
}

impl AtFault {
    /// Stable name (text and JSON).
    pub const fn as_str(self) -> &'static str {
        match self {
            AtFault::Client => "client",
            AtFault::Server => "server",
            AtFault::Either => "either",
            AtFault::Fabric => "fabric",
            AtFault::Capture => "capture",
        }
    }
}

/// What a user does about one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Guide {
    /// What it costs when it is real.
    pub harm: Harm,
    /// Where the fix belongs.
    pub at_fault: AtFault,
    /// What to do, one sentence.
    pub action: &'static str,
    /// The shipping stack that does this as it is built, with the kernel
    /// versions seen doing it (`Linux 6.1`); `None` when no shipping stack
    /// is known to.
    pub known_behaviour: Option<&'static str>,
}

const fn g(harm: Harm, at_fault: AtFault, action: &'static str) -> Guide {
    Guide {
        harm,
        at_fault,
        action,
        known_behaviour: None,
    }
}

impl Kind {
    /// What a user does about this kind.
    pub const fn guide(self) -> Guide {
        use AtFault as F;
        use Harm as H;
        match self {
            Kind::CreditOverrun => g(H::Correctness, F::Client, "Find why the client ignores the credit grant (its xprtrdma version, max_requests); until fixed, expect dropped calls and reconnects."),
            Kind::ZeroCreditGrant => g(H::Correctness, F::Server, "Check the server's credit limit (svcrdma max_requests) and its memory pressure at that time."),
            Kind::InlineThresholdExceeded => g(H::Correctness, F::Either, "Compare the sender's inline size with the threshold in the receiver's CM private data; fix the sender's inline setting."),
            Kind::RemoteInvalidationNotNegotiated => Guide {
                known_behaviour: Some("Linux 6.1"),
                ..g(H::Interoperability, F::Server, "Nothing between Linux peers; with a client that did not set R, fix the server.")
            },
            Kind::InvalidatedForeignStag => g(H::Correctness, F::Server, "Look at the server's reply path for the XID: it invalidated a region another call may still use."),
            Kind::ShortHeader => g(H::Correctness, F::Either, "Look at the sender of the frame: its RPC-over-RDMA encoder, or a capture cut by the snap length."),
            Kind::VersionMismatch => g(H::Interoperability, F::Either, "Check that both peers speak RPC-over-RDMA version 1."),
            Kind::ErrVers => g(H::Interoperability, F::Client, "The client sent a version the server does not speak; configure the client for version 1."),
            Kind::ErrChunk => g(H::Correctness, F::Client, "Look at the chunk lists of the call the error answers: the server could not process them."),
            Kind::XidMismatch => g(H::Correctness, F::Either, "Look at the sender's RPC-over-RDMA encoder for the frame."),
            Kind::BadProc => g(H::Correctness, F::Either, "Look at the sender of the frame; a non-NFS protocol on the port also shows this."),
            Kind::NomsgWithoutChunks => g(H::Correctness, F::Either, "Look at the sender's encoder: an RDMA_NOMSG needs a position-zero read chunk (call) or a reply chunk (reply)."),
            Kind::MsgpUsed => g(H::Interoperability, F::Either, "Update the sender: RDMA_MSGP went with RFC 5666."),
            Kind::DoneUsed => g(H::Interoperability, F::Either, "Update the sender: RDMA_DONE went with RFC 5666."),
            Kind::ReadListInReply => g(H::Correctness, F::Server, "Look at the server's reply encoder for the XID."),
            Kind::ErrorFromRequester => g(H::Correctness, F::Client, "Look at the client's transport: requesters do not send RDMA_ERROR."),
            Kind::RdmaOutsideChunk => g(H::Correctness, F::Either, "Look at the RDMA operation's R_Key and address against the calls outstanding; a capture that started late also shows this."),
            Kind::IcrcMismatch => g(H::Correctness, F::Fabric, "Check the link (cables, optics, switch error counters); a capture taken on the host before the NIC computes the ICRC also shows this."),
            Kind::Malformed => g(H::None, F::Capture, "Check the snap length and the capture point; if the frame is whole, report it with the frame."),
            Kind::CallWithoutReply => g(H::None, F::Capture, "Usually the capture stopped first; if the call is old, look at the server for that XID."),
            Kind::ReplyWithoutCall => g(H::None, F::Capture, "Usually the capture started late; otherwise look for a lost call."),
            Kind::Retransmission => g(H::Performance, F::Fabric, "Check the fabric for drops (PFC/ECN configuration, switch counters) around that time."),
            Kind::Nak => g(H::Performance, F::Either, "The NAK's code says which: a PSN sequence error points at the fabric, an access error at the peer that sent the request."),
            Kind::StateEvicted => g(H::None, F::Capture, "Raise the cap the message names to keep everything."),
            Kind::ConnectionRejected => g(H::Correctness, F::Server, "Read the reject reason and the private data; check the server's RDMA listener and its limits."),
            Kind::CmBadTransition => g(H::None, F::Capture, "Usually MADs the capture missed; if the capture saw both sides, look at the peer that sent the message."),
            Kind::XidReused => g(H::Correctness, F::Client, "Look at the client's XID allocation for that connection."),
            Kind::TimeWentBackwards => g(H::None, F::Capture, "Fix the capture host's clock, or merge captures with the right time offsets."),
            Kind::PsnOutOfSequence => g(H::None, F::Either, "Usually a QP re-used after a reconnect in the same capture; otherwise look at the sender's PSNs."),
            Kind::WrongPeer => g(H::None, F::Capture, "Usually another host's traffic to a QP number in use here; check the capture filter."),
            Kind::IpFragment => g(H::Correctness, F::Fabric, "Find the hop that fragments: an MTU below the RoCE MTU, or a tunnel."),
            Kind::ReadSpanPsnReused => g(H::Correctness, F::Either, "Look at the requester's PSN accounting around the RDMA READ."),
            Kind::AckPsnNotSent => g(H::Correctness, F::Either, "Look at the responder's ACK for that QP; a capture that missed requests also shows this."),
            Kind::CallRetransmitted => g(H::Performance, F::Either, "Find why the first connection was torn down (the findings and the report's connections before it)."),
            Kind::UnalignedReadPosition => g(H::Correctness, F::Client, "Look at the client's chunk encoder for the XID."),
            Kind::IwarpTerminate => g(H::Correctness, F::Either, "Read the layer, type and code: an LLP or MPA error points at the path or the capture point, a DDP or RDMAP one at the peer that sent the terminated segment."),
            Kind::MpaCrcMismatch => g(H::Correctness, F::Fabric, "Check the path (NIC offloads, middleboxes rewriting TCP); a capture taken before the NIC computes the CRC also shows this."),
            Kind::IwarpViolation => g(H::Correctness, F::Either, "Look at the sender of the segment: its iWARP stack (driver and firmware version); a capture that lost TCP segments can also misframe."),
            Kind::MpaReject => g(H::Correctness, F::Server, "Read the server's MPA private data and its RDMA listener's limits (IRD/ORD, revision, CRC and marker settings)."),
        }
    }
}

/// `docs/findings.md`: every kind, generated from the two tables, so the
/// reference cannot drift from what the tool prints.
pub fn findings_markdown() -> String {
    let mut s = String::from(
        "# Findings\n\n\
         <!-- Generated from crates/rdma-engine/src/anomaly.rs and guide.rs by \
         `UPDATE_DOCS=1 cargo test -p rdma-analyzer --test findings_doc`; do not edit. -->\n\n\
         Every kind of finding `anomalies`, `report`, the TUI and the metrics name. \
         **Harm**: what it costs when it is real (none, performance, correctness, \
         interoperability). **At fault**: where the fix belongs (client, server, either, \
         fabric, or capture: no peer, how the capture was taken). **Known behaviour**: a \
         shipping stack does this as built, with the kernel versions seen; such findings \
         are named as such under each finding. **Repeats**: *per connection* when \
         the occurrences on one connection say one fact again (a flag the peers \
         negotiated): the outputs that list findings show one, with a count, its first \
         and last frames and times and its first XIDs; *per event* when each occurrence \
         is news of its own. The metrics and the dataset count every occurrence either way.\n\n\
         | Kind | Severity | Harm | At fault | Section | Known behaviour | Repeats |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for k in Kind::ALL {
        let gd = k.guide();
        let _ = writeln!(
            s,
            "| [`{0}`](#{0}) | {1} | {2} | {3} | {4} | {5} | {6} |",
            k.as_str(),
            k.severity().as_str(),
            gd.harm.as_str(),
            gd.at_fault.as_str(),
            k.rfc(),
            gd.known_behaviour.unwrap_or("-"),
            k.repeats().as_str(),
        );
    }
    for k in Kind::ALL {
        let gd = k.guide();
        let _ = write!(
            s,
            "\n## {}\n\n{}\n\n- Severity: {}; harm: {}; at fault: {}; section: {}; repeats: {}\n- What to do: {}\n",
            k.as_str(),
            k.explanation(),
            k.severity().as_str(),
            gd.harm.as_str(),
            gd.at_fault.as_str(),
            k.rfc(),
            k.repeats().as_str(),
            gd.action,
        );
        if let Some(known) = gd.known_behaviour {
            let _ = writeln!(s, "- Known behaviour of a shipping stack: {known}");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_is_a_sentence() {
        for k in Kind::ALL {
            let a = k.guide().action;
            assert!(a.ends_with('.') && a.len() > 20, "{k:?}: {a}");
        }
    }

    #[test]
    fn the_reference_has_a_row_and_a_section_per_kind() {
        let md = findings_markdown();
        for k in Kind::ALL {
            assert!(
                md.contains(&format!("| [`{0}`](#{0}) |", k.as_str())),
                "{k:?}"
            );
            assert!(md.contains(&format!("\n## {}\n", k.as_str())), "{k:?}");
        }
    }
}
