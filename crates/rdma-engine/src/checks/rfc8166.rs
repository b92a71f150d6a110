//! RFC 8166 (RPC-over-RDMA version 1): the header, its procedures and
//! chunk lists, credits, and the pairing of calls with replies (RFC 5531).

use rdma_dissectors::rpcrdma::{Proc, RdmaError};

use super::{ReplySent, Violation};
use crate::keys::ConnId;
use crate::Kind;

/// A Send shorter than the 28-byte minimal header (4.5) that its own XDR
/// does not make complete (an RDMA_ERROR or RDMA_DONE, 4.1.2).
pub(crate) fn short_header(len: usize, complete_by_own_xdr: bool) -> Option<Violation> {
    (len < rdma_dissectors::rpcrdma::MIN_HEADER_LEN && !complete_by_own_xdr).then(|| {
        Violation::new(
            Kind::ShortHeader,
            format!("a {len}-byte Send is shorter than the 28-byte RPC-over-RDMA minimum; the receiver must discard it"),
        )
    })
}

/// An rdma_vers other than 1 (4.5.1); an RDMA_ERROR may carry another to
/// say which versions its sender speaks.
pub(crate) fn version(vers: u32, proc: Proc) -> Option<Violation> {
    (vers != 1 && proc != Proc::Error).then(|| {
        Violation::new(
            Kind::VersionMismatch,
            format!("RPC-over-RDMA version {vers} (only version 1 exists); the receiver should answer RDMA_ERROR/ERR_VERS"),
        )
    })
}

/// A header that did not decode: an unknown rdma_proc (4.5.2), or a
/// known one whose lists are broken.
pub(crate) fn undecodable(proc: Proc, e: &rdma_dissectors::Error) -> Violation {
    let kind = if matches!(proc, Proc::Unknown(_)) {
        Kind::BadProc
    } else {
        Kind::Malformed
    };
    Violation::new(
        kind,
        format!("RPC-over-RDMA header could not be decoded: {e}"),
    )
}

/// RDMA_MSGP or RDMA_DONE, which version 1 no longer has (4.6).
pub(crate) fn obsolete(proc: Proc) -> Option<Violation> {
    proc.is_obsolete().then(|| {
        let kind = if proc == Proc::Msgp {
            Kind::MsgpUsed
        } else {
            Kind::DoneUsed
        };
        Violation::new(
            kind,
            format!(
                "{} is no longer part of RPC-over-RDMA version 1 (RFC 8166 4.6)",
                proc.name().unwrap_or("?")
            ),
        )
    })
}

/// A read chunk placed at an XDR position that is not a multiple of four
/// (3.4.5): the first such position of the call's read list.
pub(crate) fn unaligned_read_position(
    positions: impl IntoIterator<Item = u32>,
) -> Option<Violation> {
    let p = positions.into_iter().find(|p| p % 4 != 0)?;
    Some(Violation::new(
        Kind::UnalignedReadPosition,
        format!("a read chunk at XDR position {p}, not a multiple of four: the responder cannot place its data in the Payload stream"),
    ))
}

/// The header's XID differs from the RPC message's it carries (4.5.2).
pub(crate) fn xid_mismatch(rdma_xid: u32, rpc_xid: u32) -> Option<Violation> {
    (rdma_xid != rpc_xid).then(|| {
        Violation::new(
            Kind::XidMismatch,
            format!("rdma_xid {rdma_xid:#010x} differs from the XID {rpc_xid:#010x} of the RPC message it carries"),
        )
    })
}

/// Where an RDMA_NOMSG's chunks could carry its RPC message.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NomsgChunks {
    pub call: bool,
    pub position_zero: bool,
    pub reply_chunk: bool,
}

/// RDMA_NOMSG leaves the Payload stream to a chunk: a call's goes in a
/// position-zero read chunk (3.5.3, a Long Call), a reply's in the reply
/// chunk the call offered. A reply chunk cannot carry a call: it is for the
/// responder to write the reply into (4.2.4).
pub(crate) fn nomsg_without_chunks(c: NomsgChunks) -> Option<Violation> {
    let why = match c {
        NomsgChunks {
            call: true,
            position_zero: false,
            reply_chunk: true,
        } => "RDMA_NOMSG call with only a reply chunk: a call's RPC message travels in a position-zero read chunk, and a reply chunk is for the reply",
        NomsgChunks {
            call: true,
            position_zero: false,
            reply_chunk: false,
        } => "RDMA_NOMSG call without a position-zero read chunk: its RPC message is nowhere",
        NomsgChunks {
            call: false,
            reply_chunk: false,
            ..
        } => "RDMA_NOMSG reply without a reply chunk: its RPC message is nowhere",
        _ => return None,
    };
    Some(Violation::new(Kind::NomsgWithoutChunks, why))
}

/// What an RDMA_ERROR says, in words.
fn error_what(err: RdmaError) -> (Kind, String) {
    match err {
        RdmaError::Vers { low, high } => (
            Kind::ErrVers,
            format!("ERR_VERS (the sender supports versions {low} to {high})"),
        ),
        RdmaError::Chunk => (
            Kind::ErrChunk,
            "ERR_CHUNK (the peer could not decode the header or its chunks)".to_string(),
        ),
        RdmaError::Unknown(v) => (Kind::Malformed, format!("an unknown error code {v}")),
        _ => (Kind::Malformed, "an unknown error".to_string()),
    }
}

/// An RDMA_ERROR sent toward the server: only a responder may send one (4.5).
pub(crate) fn error_from_requester(err: RdmaError, to_client: bool) -> Option<Violation> {
    (!to_client).then(|| {
        let (_, what) = error_what(err);
        Violation::new(
            Kind::ErrorFromRequester,
            format!("the requester sent RDMA_ERROR ({what}); only a responder may (RFC 8166 4.5)"),
        )
    })
}

/// The RDMA_ERROR itself: ERR_VERS, ERR_CHUNK, or an unknown code.
pub(crate) fn rdma_error(err: RdmaError, xid: u32) -> Violation {
    let (kind, what) = error_what(err);
    Violation::new(kind, format!("RDMA_ERROR for xid {xid:#010x}: {what}"))
}

/// An XID sent again while its earlier call (of frame `before`) waits for
/// a reply: section 3 (as RFC 5531 section 9) retires an XID only with
/// its reply.
pub(crate) fn xid_reused(
    xid: u32,
    before: Option<u64>,
    frame: u64,
    conn: ConnId,
) -> Option<Violation> {
    let before = before?;
    Some(Violation::new(
        Kind::XidReused,
        format!("xid {xid:#010x} sent again (frame {frame}) while its call of frame {before} is still outstanding on {conn}: an XID is retired only by its reply (RFC 8166 3); replies are paired with these calls in the order they were sent"),
    ))
}

/// More calls in flight than the responder granted (3.3.1).
pub(crate) fn credit_overrun(in_flight: u32, granted: Option<u32>) -> Option<Violation> {
    let g = granted.filter(|&g| in_flight > g)?;
    // One credit is the implicit first grant (3.3.1): said in the singular.
    let credits = if g == 1 { "credit" } else { "credits" };
    Some(Violation::new(
        Kind::CreditOverrun,
        format!("{in_flight} calls outstanding but the responder granted only {g} {credits}"),
    ))
}

/// One operation sent again on a new connection after the one it waited
/// on went away without its reply (4.5.5).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SentAgain<'a> {
    pub proc: &'a str,
    pub xid: u32,
    pub conn: ConnId,
    pub frame: u64,
    pub waited_s: f64,
    pub first_frame: u64,
    pub first_conn: ConnId,
    pub why: &'a str,
    pub transmissions: u32,
}

/// The call sent again: reported once per transmission after the first.
pub(crate) fn call_retransmitted(s: &SentAgain<'_>) -> Violation {
    Violation::new(
        Kind::CallRetransmitted,
        format!(
            "call {} (xid {:#010x}) sent again on {} (frame {}) {:.3} s after its first transmission (frame {}) on {}, unanswered there ({}): one operation, {} transmissions",
            s.proc, s.xid, s.conn, s.frame, s.waited_s, s.first_frame, s.first_conn, s.why, s.transmissions
        ),
    )
}

/// A reply with a read list: only calls may carry one (4.3.1).
pub(crate) fn read_list_in_reply(segments: usize) -> Option<Violation> {
    (segments > 0).then(|| {
        Violation::new(
            Kind::ReadListInReply,
            format!("reply carries a read list of {segments} segments; replies must not (RFC 8166 4.3.1)"),
        )
    })
}

/// A forward reply granting no credits: the requester may never send
/// again (3.3.1).
pub(crate) fn zero_credit_grant(backchannel: bool, credits: Option<u32>) -> Option<Violation> {
    (!backchannel && credits == Some(0)).then(|| {
        Violation::new(
            Kind::ZeroCreditGrant,
            "reply grants zero credits: the requester can never send again (deadlock)",
        )
    })
}

/// A reply whose call the capture does not hold.
pub(crate) fn reply_without_call(xid: u32) -> Violation {
    Violation::new(
        Kind::ReplyWithoutCall,
        format!("reply to xid {xid:#010x} whose call is not in the capture (sent before it started, or lost)"),
    )
}

/// A reply stamped before its call: no latency can be told (0 would be a lie).
pub(crate) fn time_went_backwards(r: &ReplySent) -> Option<Violation> {
    (r.reply_ts_ns < r.call_ts_ns).then(|| {
        Violation::new(
            Kind::TimeWentBackwards,
            format!(
                "the reply (frame {}) is stamped {:.1} µs before its call (frame {}): the capture's clock went backwards, so xid {:#010x}'s latency is unknown",
                r.reply_frame,
                r.call_ts_ns.saturating_sub(r.reply_ts_ns) as f64 / 1000.0,
                r.call_frame,
                r.xid
            ),
        )
    })
}

/// A call that got no reply, for the reason `why`.
pub(crate) fn call_without_reply(proc: &str, xid: u32, frame: u64, why: &str) -> Violation {
    Violation::new(
        Kind::CallWithoutReply,
        format!("call {proc} (xid {xid:#010x}, frame {frame}) got no reply: {why}"),
    )
}

/// An RDMA Read or Write to memory no outstanding call advertised (8.1).
pub(crate) fn rdma_outside_chunk(what: &str, reth: rdma_dissectors::ib::Reth) -> Violation {
    let (rkey, va, len) = (reth.r_key, reth.va, reth.dma_length);
    Violation::new(
        Kind::RdmaOutsideChunk,
        format!("{what} to rkey {rkey:#x} va {va:#x} length {len}, which no outstanding call advertised: the peer touched memory it was not offered"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is(v: Option<Violation>, kind: Kind, message: &str) {
        assert_eq!(v, Some(Violation::new(kind, message)));
    }

    #[test]
    fn short_header_unless_its_own_xdr_makes_it_whole() {
        is(
            short_header(20, false),
            Kind::ShortHeader,
            "a 20-byte Send is shorter than the 28-byte RPC-over-RDMA minimum; the receiver must discard it",
        );
        assert_eq!(short_header(20, true), None);
        assert_eq!(short_header(28, false), None);
    }

    #[test]
    fn version_mismatch_except_in_an_rdma_error() {
        is(
            version(2, Proc::Msg),
            Kind::VersionMismatch,
            "RPC-over-RDMA version 2 (only version 1 exists); the receiver should answer RDMA_ERROR/ERR_VERS",
        );
        assert_eq!(version(2, Proc::Error), None);
        assert_eq!(version(1, Proc::Msg), None);
    }

    #[test]
    fn an_undecodable_header_is_a_bad_proc_when_the_proc_is_unknown() {
        let e = rdma_dissectors::Error::Truncated {
            layer: rdma_dissectors::Layer::RpcRdma,
            offset: 54,
            needed: 4,
            available: 2,
        };
        let v = undecodable(Proc::Unknown(9), &e);
        assert_eq!(v.kind, Kind::BadProc);
        assert_eq!(
            v.message,
            format!("RPC-over-RDMA header could not be decoded: {e}")
        );
        assert_eq!(undecodable(Proc::Msg, &e).kind, Kind::Malformed);
    }

    #[test]
    fn msgp_and_done_are_obsolete() {
        is(
            obsolete(Proc::Msgp),
            Kind::MsgpUsed,
            "RDMA_MSGP is no longer part of RPC-over-RDMA version 1 (RFC 8166 4.6)",
        );
        is(
            obsolete(Proc::Done),
            Kind::DoneUsed,
            "RDMA_DONE is no longer part of RPC-over-RDMA version 1 (RFC 8166 4.6)",
        );
        assert_eq!(obsolete(Proc::Nomsg), None);
    }

    #[test]
    fn a_read_chunk_position_must_be_a_multiple_of_four() {
        assert_eq!(unaligned_read_position([0, 132, 132]), None);
        assert_eq!(unaligned_read_position([]), None);
        is(
            unaligned_read_position([132, 134, 135]),
            Kind::UnalignedReadPosition,
            "a read chunk at XDR position 134, not a multiple of four: the responder cannot place its data in the Payload stream",
        );
    }

    #[test]
    fn xid_mismatch_between_the_header_and_the_rpc_message() {
        is(
            xid_mismatch(0x1234, 0x1235),
            Kind::XidMismatch,
            "rdma_xid 0x00001234 differs from the XID 0x00001235 of the RPC message it carries",
        );
        assert_eq!(xid_mismatch(7, 7), None);
    }

    #[test]
    fn nomsg_needs_a_chunk_for_its_message() {
        let c = |call, position_zero, reply_chunk| {
            nomsg_without_chunks(NomsgChunks {
                call,
                position_zero,
                reply_chunk,
            })
        };
        is(
            c(true, false, true),
            Kind::NomsgWithoutChunks,
            "RDMA_NOMSG call with only a reply chunk: a call's RPC message travels in a position-zero read chunk, and a reply chunk is for the reply",
        );
        is(
            c(true, false, false),
            Kind::NomsgWithoutChunks,
            "RDMA_NOMSG call without a position-zero read chunk: its RPC message is nowhere",
        );
        is(
            c(false, true, false),
            Kind::NomsgWithoutChunks,
            "RDMA_NOMSG reply without a reply chunk: its RPC message is nowhere",
        );
        assert_eq!(c(true, true, false), None);
        assert_eq!(c(false, false, true), None);
    }

    #[test]
    fn rdma_errors_and_who_may_send_them() {
        let v = rdma_error(RdmaError::Vers { low: 1, high: 1 }, 0xab);
        assert_eq!(
            v,
            Violation::new(
                Kind::ErrVers,
                "RDMA_ERROR for xid 0x000000ab: ERR_VERS (the sender supports versions 1 to 1)"
            )
        );
        let v = rdma_error(RdmaError::Chunk, 0xab);
        assert_eq!(
            v,
            Violation::new(
                Kind::ErrChunk,
                "RDMA_ERROR for xid 0x000000ab: ERR_CHUNK (the peer could not decode the header or its chunks)"
            )
        );
        assert_eq!(rdma_error(RdmaError::Unknown(5), 1).kind, Kind::Malformed);
        is(
            error_from_requester(RdmaError::Chunk, false),
            Kind::ErrorFromRequester,
            "the requester sent RDMA_ERROR (ERR_CHUNK (the peer could not decode the header or its chunks)); only a responder may (RFC 8166 4.5)",
        );
        assert_eq!(error_from_requester(RdmaError::Chunk, true), None);
    }

    #[test]
    fn an_xid_reused_while_its_call_is_outstanding() {
        is(
            xid_reused(0x10, Some(3), 9, ConnId(2)),
            Kind::XidReused,
            "xid 0x00000010 sent again (frame 9) while its call of frame 3 is still outstanding on c2: an XID is retired only by its reply (RFC 8166 3); replies are paired with these calls in the order they were sent",
        );
        assert_eq!(xid_reused(0x10, None, 9, ConnId(2)), None);
    }

    #[test]
    fn credit_overrun_past_the_grant_only() {
        is(
            credit_overrun(33, Some(32)),
            Kind::CreditOverrun,
            "33 calls outstanding but the responder granted only 32 credits",
        );
        assert_eq!(credit_overrun(32, Some(32)), None);
        assert_eq!(credit_overrun(33, None), None);
        is(
            credit_overrun(2, Some(1)),
            Kind::CreditOverrun,
            "2 calls outstanding but the responder granted only 1 credit",
        );
    }

    #[test]
    fn a_call_sent_again_on_a_new_connection() {
        let v = call_retransmitted(&SentAgain {
            proc: "NFSv3 READ",
            xid: 0x99,
            conn: ConnId(4),
            frame: 120,
            waited_s: 1.5,
            first_frame: 7,
            first_conn: ConnId(1),
            why: "the connection was closed",
            transmissions: 2,
        });
        assert_eq!(
            v,
            Violation::new(
                Kind::CallRetransmitted,
                "call NFSv3 READ (xid 0x00000099) sent again on c4 (frame 120) 1.500 s after its first transmission (frame 7) on c1, unanswered there (the connection was closed): one operation, 2 transmissions"
            )
        );
    }

    #[test]
    fn a_reply_with_a_read_list() {
        is(
            read_list_in_reply(2),
            Kind::ReadListInReply,
            "reply carries a read list of 2 segments; replies must not (RFC 8166 4.3.1)",
        );
        assert_eq!(read_list_in_reply(0), None);
    }

    #[test]
    fn zero_credits_granted_on_the_forward_channel() {
        is(
            zero_credit_grant(false, Some(0)),
            Kind::ZeroCreditGrant,
            "reply grants zero credits: the requester can never send again (deadlock)",
        );
        assert_eq!(zero_credit_grant(true, Some(0)), None);
        assert_eq!(zero_credit_grant(false, None), None);
    }

    #[test]
    fn a_reply_whose_call_is_missing() {
        assert_eq!(
            reply_without_call(0xdead),
            Violation::new(
                Kind::ReplyWithoutCall,
                "reply to xid 0x0000dead whose call is not in the capture (sent before it started, or lost)"
            )
        );
    }

    #[test]
    fn a_reply_stamped_before_its_call() {
        let mut r = ReplySent {
            xid: 0x42,
            call_frame: 10,
            call_ts_ns: 5_000,
            reply_frame: 11,
            reply_ts_ns: 2_500,
            invalidated: None,
            not_negotiated: None,
        };
        is(
            time_went_backwards(&r),
            Kind::TimeWentBackwards,
            "the reply (frame 11) is stamped 2.5 µs before its call (frame 10): the capture's clock went backwards, so xid 0x00000042's latency is unknown",
        );
        r.reply_ts_ns = 5_000;
        assert_eq!(time_went_backwards(&r), None);
    }

    #[test]
    fn a_call_without_reply() {
        assert_eq!(
            call_without_reply("NFSv4.1 SEQUENCE", 0x5, 33, "the capture ended before a reply"),
            Violation::new(
                Kind::CallWithoutReply,
                "call NFSv4.1 SEQUENCE (xid 0x00000005, frame 33) got no reply: the capture ended before a reply"
            )
        );
    }

    #[test]
    fn rdma_outside_any_chunk() {
        let reth = rdma_dissectors::ib::Reth {
            va: 0x1000,
            r_key: 0xabc,
            dma_length: 4096,
        };
        assert_eq!(
            rdma_outside_chunk("RDMA WRITE", reth),
            Violation::new(
                Kind::RdmaOutsideChunk,
                "RDMA WRITE to rkey 0xabc va 0x1000 length 4096, which no outstanding call advertised: the peer touched memory it was not offered"
            )
        );
    }
}
