//! The InfiniBand Architecture (and RoCEv2 annex A17): the ICRC, the RC
//! transport's PSN sequence and acknowledgements, and the CM.

use rdma_dissectors::ib::aeth::{AckKind, NakCode};
use rdma_dissectors::ib::Psn;

use super::{SentRequests, Violation};
use crate::cm::BadTransition;
use crate::keys::{Addr, ConnId, QpKey};
use crate::model::Role;
use crate::Kind;

/// An ICRC that does not match the frame (IBA 7.8.1, RoCEv2 A17.3.3).
pub(crate) fn icrc(found: u32, computed: u32) -> Violation {
    Violation::new(
        Kind::IcrcMismatch,
        format!("ICRC is {found:#010x} but the frame's contents give {computed:#010x}: the frame was corrupted on the wire or by the capture"),
    )
}

/// The first fragment of a RoCEv2 packet: RoCEv2 never fragments (A17.4).
pub(crate) fn ip_fragment(src: &str, dst: &str) -> Violation {
    Violation::new(
        Kind::IpFragment,
        format!("RoCEv2 packet from {src} to {dst} in IPv4 fragments: RoCEv2 packets are sent whole (Don't Fragment); the fragment is left out, and its packet with it"),
    )
}

/// A frame to `dest` (of connection `conn`) from `src`, which is not the
/// QP's peer: in RoCEv2 the addresses say which connection it is (A17.4).
pub(crate) fn wrong_peer(
    src: Addr,
    dest: QpKey,
    conn: Option<ConnId>,
    peer: Option<Addr>,
) -> Violation {
    let of = conn.map_or(String::new(), |c| format!(" of {c}"));
    let peer = peer.map_or("?".to_string(), |p| p.to_string());
    Violation::new(
        Kind::WrongPeer,
        format!("frame from {src} to QP {dest}{of}, whose peer is {peer}: not part of the connection, left out"),
    )
}

/// A request far from its QP's sequence (last PSN `last`, or the CM's
/// starting PSN `cm_start` before any): held until the next one says
/// whether the sequence moved (9.7.1).
pub(crate) fn far_psn(
    psn: u32,
    last: Option<u32>,
    cm_start: Option<u32>,
    dest: QpKey,
) -> Violation {
    let from = match (last, cm_start) {
        (Some(l), _) => format!("far from its sequence (last {l:#x})"),
        (None, Some(s)) => format!(
            "the first request seen, far from the starting PSN the CM exchange announced ({s:#x})"
        ),
        (None, None) => "far from its sequence".to_string(),
    };
    Violation::new(
        Kind::PsnOutOfSequence,
        format!("PSN {psn:#x} to {dest} is {from}: a stray frame or another incarnation of the QP; left out, and followed only if the next packets follow it"),
    )
}

/// The request a QP's sequence started from (`stray`) was well ahead of
/// the sequence that follows it, from `cur` in frame `number`.
pub(crate) fn reseated(stray: Psn, cur: Psn, dest: QpKey, number: u64) -> Violation {
    Violation::new(
        Kind::PsnOutOfSequence,
        format!(
            "PSN {:#x} to {dest}, the request its sequence started from, was {} PSNs ahead of the sequence that follows it (from PSN {:#x}, frame {number}): a stray frame or another incarnation of the QP; the sequence starts here, and what that frame carried is kept as it was read",
            stray.get(),
            cur.distance(stray),
            cur.get()
        ),
    )
}

/// A request (`what`) numbered `psn` inside the span of the READ of PSN
/// `read`, whose next free PSN is `next` (9.7.1).
pub(crate) fn read_span_reused(
    what: &str,
    psn: Psn,
    read: Psn,
    next: Psn,
    dest: QpKey,
) -> Violation {
    let (read, psn, next) = (read.get(), psn.get(), next.get());
    Violation::new(
        Kind::ReadSpanPsnReused,
        format!("{what} to {dest} has PSN {psn:#x}, which the RDMA READ of PSN {read:#x} holds: a READ takes one PSN per response packet, so the next request is {next:#x}; the responder may take this one for a duplicate"),
    )
}

/// A READ of PSN `read` on `conn` answered with PSN `psn`, which the
/// request after it (of PSN `taken`) had numbered itself with (9.7.1).
pub(crate) fn read_answered_in_reused_span(
    read: Psn,
    psn: Psn,
    taken: Psn,
    conn: ConnId,
) -> Violation {
    Violation::new(
        Kind::ReadSpanPsnReused,
        format!("the RDMA READ of PSN {:#x} on {conn} is answered with PSN {:#x}, which the request after it had taken ({:#x}): a READ takes one PSN per response packet, so that request reused one of the READ's", read.get(), psn.get(), taken.get()),
    )
}

/// A request PSN sent again (9.7.5): `op` names it, `xid` the RPC it
/// carried when it is a Send that starts a message.
pub(crate) fn retransmission(op: &str, psn: u32, dest: QpKey, xid: Option<u32>) -> Violation {
    let carrying = xid.map_or(String::new(), |x| format!(" carrying xid {x:#010x}"));
    Violation::new(
        Kind::Retransmission,
        format!("{op} PSN {psn:#x} to {dest}{carrying} was sent again (a retransmission); it is not counted twice"),
    )
}

/// An ACK to `dest` must name a PSN a request from the other side was sent
/// with, between the first request's (the starting PSN of the CM exchange,
/// or a little before the first the capture shows) and the last one's (the
/// end of its span, for a READ) (9.7.5.1).
pub(crate) fn ack_psn_not_sent(dest: QpKey, psn: Psn, s: &SentRequests) -> Option<Violation> {
    /// How far before the first request in the capture an ACK may
    /// still name one the capture did not see (it started mid-flight).
    const SLACK: u32 = 1 << 12;
    /// Beyond half the PSN space, "before" and "after" mean nothing.
    const HALF: u32 = 1 << 23;
    let (first, last) = (s.first, s.last);
    let highest = s.last_span.map(|n| last.add(n.max(1) - 1));
    let before_first = psn.is_before(first)
        && psn.distance(first) <= HALF
        && (s.first_from_cm || psn.distance(first) > SLACK);
    // Requests whose headers a snap length cut were never placed in
    // the sequence: past the last one seen proves nothing then.
    let after_last =
        !s.headers_cut && highest.is_some_and(|h| h.is_before(psn) && h.distance(psn) <= HALF);
    if !(before_first || after_last) {
        return None;
    }
    let (p, f, l) = (psn.get(), first.get(), highest.unwrap_or(last).get());
    let from = if s.first_from_cm {
        "its starting PSN from the CM exchange"
    } else {
        "the first request in the capture"
    };
    let why = if before_first {
        format!("before {f:#x}, {from}")
    } else {
        format!("after {l:#x}, the last PSN requests to {} have taken (or the capture missed the requests in between)", s.requests)
    };
    Some(Violation::new(
        Kind::AckPsnNotSent,
        format!("ACK to {dest} for PSN {p:#x}, which no request was sent with: it is {why}"),
    ))
}

/// A NAK (9.7.5.2): what it says went wrong.
pub(crate) fn nak(kind: AckKind, src: Addr, psn: Psn) -> Option<Violation> {
    let what = match kind {
        AckKind::Nak(code) => match code {
            NakCode::PsnSequenceError => {
                "PSN sequence error (a packet was lost; the requester must resend)"
            }
            NakCode::InvalidRequest => "invalid request",
            NakCode::RemoteAccessError => {
                "remote access error (an R_Key or address the peer did not allow)"
            }
            NakCode::RemoteOperationalError => "remote operational error",
            NakCode::InvalidRdRequest => "invalid RD request",
            _ => "unknown NAK code",
        },
        AckKind::RnrNak { .. } => "RNR (receiver not ready): it had no receive buffer posted",
        _ => return None,
    };
    Some(Violation::new(
        Kind::Nak,
        format!("NAK from {src} for PSN {:#x}: {what}", psn.get()),
    ))
}

/// A CM message from `sender` (at `src`) that the connection's state did
/// not allow (12.9).
pub(crate) fn cm_bad_transition(e: &BadTransition, sender: Role, src: Addr) -> Violation {
    let side = match sender {
        Role::Client => "client",
        Role::Server => "server",
    };
    Violation::new(
        Kind::CmBadTransition,
        format!(
            "CM {} from the {side} ({src}) while the connection was {}: the CM state machine does not allow it there; taken as {}",
            e.message,
            e.from.as_str(),
            e.then.as_str()
        ),
    )
}

/// A connection request `src` rejected (12.6.7).
pub(crate) fn connection_rejected(src: Addr, dst: Addr, reason: u16, name: &str) -> Violation {
    Violation::new(
        Kind::ConnectionRejected,
        format!("{src} rejected the connection request from {dst}: reason {reason} ({name})"),
    )
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use super::*;
    use crate::model::CmState;

    fn ip(last: u8) -> Addr {
        Addr::Ip(IpAddr::V4(Ipv4Addr::new(10, 0, 0, last)))
    }

    fn qp(last: u8, qpn: u32) -> QpKey {
        QpKey {
            addr: ip(last),
            qpn,
        }
    }

    fn psn(v: u32) -> Psn {
        Psn::try_new(v).unwrap()
    }

    #[test]
    fn an_icrc_mismatch() {
        assert_eq!(
            icrc(0x1234_5678, 0x9abc_def0),
            Violation::new(
                Kind::IcrcMismatch,
                "ICRC is 0x12345678 but the frame's contents give 0x9abcdef0: the frame was corrupted on the wire or by the capture"
            )
        );
    }

    #[test]
    fn a_fragmented_rocev2_packet() {
        assert_eq!(
            ip_fragment("10.0.0.1", "10.0.0.2"),
            Violation::new(
                Kind::IpFragment,
                "RoCEv2 packet from 10.0.0.1 to 10.0.0.2 in IPv4 fragments: RoCEv2 packets are sent whole (Don't Fragment); the fragment is left out, and its packet with it"
            )
        );
    }

    #[test]
    fn a_frame_from_a_host_that_is_not_the_peer() {
        assert_eq!(
            wrong_peer(ip(9), qp(2, 0x11), Some(ConnId(1)), Some(ip(1))),
            Violation::new(
                Kind::WrongPeer,
                "frame from 10.0.0.9 to QP 10.0.0.2/0x11 of c1, whose peer is 10.0.0.1: not part of the connection, left out"
            )
        );
        assert_eq!(
            wrong_peer(ip(9), qp(2, 0x11), None, None).message,
            "frame from 10.0.0.9 to QP 10.0.0.2/0x11, whose peer is ?: not part of the connection, left out"
        );
    }

    #[test]
    fn psns_out_of_sequence() {
        let v = far_psn(0x80_0000, Some(0x10), None, qp(2, 0x11));
        assert_eq!(
            v,
            Violation::new(
                Kind::PsnOutOfSequence,
                "PSN 0x800000 to 10.0.0.2/0x11 is far from its sequence (last 0x10): a stray frame or another incarnation of the QP; left out, and followed only if the next packets follow it"
            )
        );
        assert_eq!(
            far_psn(0x80_0000, None, Some(0x5), qp(2, 0x11)).message,
            "PSN 0x800000 to 10.0.0.2/0x11 is the first request seen, far from the starting PSN the CM exchange announced (0x5): a stray frame or another incarnation of the QP; left out, and followed only if the next packets follow it"
        );
        assert_eq!(
            reseated(psn(0x500), psn(0x100), qp(2, 0x11), 42),
            Violation::new(
                Kind::PsnOutOfSequence,
                "PSN 0x500 to 10.0.0.2/0x11, the request its sequence started from, was 1024 PSNs ahead of the sequence that follows it (from PSN 0x100, frame 42): a stray frame or another incarnation of the QP; the sequence starts here, and what that frame carried is kept as it was read"
            )
        );
    }

    #[test]
    fn a_psn_the_read_before_it_holds() {
        assert_eq!(
            read_span_reused("SEND Only", psn(0x11), psn(0x10), psn(0x14), qp(2, 0x11)),
            Violation::new(
                Kind::ReadSpanPsnReused,
                "SEND Only to 10.0.0.2/0x11 has PSN 0x11, which the RDMA READ of PSN 0x10 holds: a READ takes one PSN per response packet, so the next request is 0x14; the responder may take this one for a duplicate"
            )
        );
        assert_eq!(
            read_answered_in_reused_span(psn(0x10), psn(0x12), psn(0x11), ConnId(3)),
            Violation::new(
                Kind::ReadSpanPsnReused,
                "the RDMA READ of PSN 0x10 on c3 is answered with PSN 0x12, which the request after it had taken (0x11): a READ takes one PSN per response packet, so that request reused one of the READ's"
            )
        );
    }

    #[test]
    fn a_retransmission_names_the_rpc_it_carried() {
        assert_eq!(
            retransmission("SEND Only", 0x20, qp(2, 0x11), Some(0xfeed)),
            Violation::new(
                Kind::Retransmission,
                "SEND Only PSN 0x20 to 10.0.0.2/0x11 carrying xid 0x0000feed was sent again (a retransmission); it is not counted twice"
            )
        );
    }

    fn sent(first_from_cm: bool) -> SentRequests {
        SentRequests {
            requests: qp(1, 0x22),
            first: psn(0x1000),
            last: psn(0x1010),
            last_span: Some(4),
            first_from_cm,
            headers_cut: false,
        }
    }

    #[test]
    fn an_ack_for_a_psn_no_request_took() {
        let dest = qp(1, 0x22);
        assert_eq!(
            ack_psn_not_sent(dest, psn(0x1014), &sent(false)),
            Some(Violation::new(
                Kind::AckPsnNotSent,
                "ACK to 10.0.0.1/0x22 for PSN 0x1014, which no request was sent with: it is after 0x1013, the last PSN requests to 10.0.0.1/0x22 have taken (or the capture missed the requests in between)"
            ))
        );
        assert_eq!(
            ack_psn_not_sent(dest, psn(0xfff), &sent(true)).map(|v| v.message),
            Some("ACK to 10.0.0.1/0x22 for PSN 0xfff, which no request was sent with: it is before 0x1000, its starting PSN from the CM exchange".to_string())
        );
        // Within the READ's span, and just before a first request the
        // capture joined mid-flight: both may have been sent.
        assert_eq!(ack_psn_not_sent(dest, psn(0x1013), &sent(false)), None);
        assert_eq!(ack_psn_not_sent(dest, psn(0xfff), &sent(false)), None);
        let cut = SentRequests {
            headers_cut: true,
            ..sent(false)
        };
        assert_eq!(ack_psn_not_sent(dest, psn(0x1014), &cut), None);
    }

    #[test]
    fn naks_say_what_went_wrong() {
        assert_eq!(
            nak(AckKind::Nak(NakCode::RemoteAccessError), ip(2), psn(0x30)),
            Some(Violation::new(
                Kind::Nak,
                "NAK from 10.0.0.2 for PSN 0x30: remote access error (an R_Key or address the peer did not allow)"
            ))
        );
        assert_eq!(
            nak(AckKind::RnrNak { timer: 1 }, ip(2), psn(0x30)).map(|v| v.message),
            Some("NAK from 10.0.0.2 for PSN 0x30: RNR (receiver not ready): it had no receive buffer posted".to_string())
        );
        assert_eq!(
            nak(AckKind::Ack { credit_count: 3 }, ip(2), psn(0x30)),
            None
        );
    }

    #[test]
    fn an_ack_hook_checks_plain_acks_against_the_requests_and_reports_naks() {
        let mut a = super::super::Ack {
            src: ip(2),
            dest: qp(1, 0x22),
            psn: psn(0x2000),
            kind: AckKind::Ack { credit_count: 0 },
            sent: Some(sent(false)),
        };
        let kinds: Vec<Kind> = super::super::on_ack(&a).map(|v| v.kind).collect();
        assert_eq!(kinds, [Kind::AckPsnNotSent]);
        a.kind = AckKind::Nak(NakCode::PsnSequenceError);
        let kinds: Vec<Kind> = super::super::on_ack(&a).map(|v| v.kind).collect();
        assert_eq!(kinds, [Kind::Nak]);
    }

    #[test]
    fn a_cm_message_the_state_does_not_allow() {
        let e = BadTransition {
            from: CmState::Requested,
            message: "RTU",
            sender: Role::Client,
            then: CmState::Established,
        };
        assert_eq!(
            cm_bad_transition(&e, Role::Client, ip(1)),
            Violation::new(
                Kind::CmBadTransition,
                "CM RTU from the client (10.0.0.1) while the connection was requested: the CM state machine does not allow it there; taken as established"
            )
        );
    }

    #[test]
    fn a_rejected_connection() {
        assert_eq!(
            connection_rejected(ip(2), ip(1), 28, "Consumer reject"),
            Violation::new(
                Kind::ConnectionRejected,
                "10.0.0.2 rejected the connection request from 10.0.0.1: reason 28 (Consumer reject)"
            )
        );
    }
}
