//! The protocol judgements: which `Kind` a message, an ACK or a CM
//! exchange shows, and the sentence that says why, as pure functions of
//! the facts the correlation found. Correlation (tables, reassembly, PSN
//! state) stays in `wire/`; a check sees only what it judges, so each one
//! is tested here with a few hand-made facts.
//!
//! Each check returns `Option<Violation>` (or a `Violation` when the fact
//! itself is the finding); the engine adds the frames, connection and XID
//! and raises it. Hook points, in the order the engine reaches them:
//!
//! | hook | where | checks |
//! |---|---|---|
//! | on_frame | `Engine::frame` | [`iba::icrc`], [`iba::ip_fragment`] |
//! | on_packet | `wire/rdma.rs` `rc_frame` | [`iba::wrong_peer`], [`iba::far_psn`], [`iba::reseated`], [`iba::read_span_reused`], [`iba::retransmission`] |
//! | [`on_ack`] | `wire/rdma.rs` `rc_frame` | [`iba::ack_psn_not_sent`], [`iba::nak`] |
//! | on_rdma | `wire/rdma.rs` | [`rfc8166::rdma_outside_chunk`], [`iba::read_answered_in_reused_span`] |
//! | on_message | `wire/call.rs` `message` | [`rfc8166::short_header`], [`rfc8166::version`], [`rfc8166::undecodable`], [`rfc8166::obsolete`], [`rfc8166::xid_mismatch`], [`rfc8166::nomsg_without_chunks`] |
//! | [`on_rdma_error`] | `wire/call.rs` `rdma_error` | [`rfc8166::error_from_requester`], [`rfc8166::rdma_error`] |
//! | on_call | `wire/call.rs` `call` | [`rfc8797::inline_threshold`], [`rfc8166::unaligned_read_position`], [`rfc8166::xid_reused`], [`rfc8166::call_retransmitted`], [`rfc8166::credit_overrun`] |
//! | [`on_reply`] | `wire/call.rs` `reply` | [`rfc8166::read_list_in_reply`], [`rfc8166::zero_credit_grant`], then [`rfc8797::inline_threshold`], [`rfc8166::reply_without_call`] |
//! | [`on_reply_sent`] | `wire/call.rs` `finish_txn` | [`rfc8166::time_went_backwards`], [`rfc8797::invalidated_foreign_stag`], [`rfc8797::remote_invalidation_not_negotiated`] |
//! | on_cm | `wire/conn.rs` | [`iba::cm_bad_transition`], [`iba::connection_rejected`] |
//! | on_close | `wire/conn.rs` `unanswered` | [`rfc8166::call_without_reply`] |
//! | on_mpa | `wire/iwarp.rs` `mpa_frame`, `mpa_reply` | [`iwarp::setup_malformed`], [`iwarp::mpa_reject`] |
//! | on_fpdu | `wire/iwarp.rs` `fpdu`, `segment` | [`iwarp::fpdu_malformed`], [`iwarp::crc`], [`iwarp::segment_violation`], [`iwarp::terminate`] |

pub(crate) mod iba;
pub(crate) mod iwarp;
pub(crate) mod rfc8166;
pub(crate) mod rfc8797;

use rdma_dissectors::ib::aeth::AckKind;
use rdma_dissectors::ib::Psn;
use rdma_dissectors::rpcrdma::RdmaError;

use crate::keys::{Addr, QpKey};
use crate::Kind;

/// A rule a peer (or the capture) broke: its kind and the sentence a user
/// reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Violation {
    pub kind: Kind,
    pub message: String,
}

impl Violation {
    fn new(kind: Kind, message: impl Into<String>) -> Self {
        Violation {
            kind,
            message: message.into(),
        }
    }
}

/// What an RDMA_ERROR shows: sent by the requester, and the error itself.
pub(crate) fn on_rdma_error(
    err: RdmaError,
    xid: u32,
    to_client: bool,
) -> (Option<Violation>, Violation) {
    (
        rfc8166::error_from_requester(err, to_client),
        rfc8166::rdma_error(err, xid),
    )
}

/// A reply's header, before it is paired with its call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReplyHeader {
    pub read_segments: usize,
    pub backchannel: bool,
    pub credits: Option<u32>,
}

/// What a reply's header shows, before the inline threshold and pairing.
pub(crate) fn on_reply(r: ReplyHeader) -> impl Iterator<Item = Violation> {
    [
        rfc8166::read_list_in_reply(r.read_segments),
        rfc8166::zero_credit_grant(r.backchannel, r.credits),
    ]
    .into_iter()
    .flatten()
}

/// A reply Send paired with its call: what it shows about the pair.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReplySent {
    pub xid: u32,
    pub call_frame: u64,
    pub call_ts_ns: u64,
    pub reply_frame: u64,
    pub reply_ts_ns: u64,
    /// The R_Key a Send With Invalidate named, and whether one of the
    /// call's chunks is that key's (`None`: the call's lists were cut).
    pub invalidated: Option<(u32, Option<bool>)>,
    /// Remote invalidation on a connection whose CM exchange did not
    /// negotiate it: whether the client and the server set R.
    pub not_negotiated: Option<(bool, bool)>,
}

/// What a reply paired with its call shows, in the order they are raised.
pub(crate) fn on_reply_sent(r: &ReplySent) -> impl Iterator<Item = Violation> {
    [
        rfc8166::time_went_backwards(r),
        r.invalidated
            .and_then(|(rkey, owned)| rfc8797::invalidated_foreign_stag(rkey, owned, r.xid)),
        r.not_negotiated
            .map(|(c, s)| rfc8797::remote_invalidation_not_negotiated(c, s)),
    ]
    .into_iter()
    .flatten()
}

/// The requests of a queue pair as far as its PSN sequence knows them:
/// what an ACK to their sender is held against.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SentRequests {
    /// The requester's QP.
    pub requests: QpKey,
    pub first: Psn,
    pub last: Psn,
    /// PSNs the last request took (`None`: a READ whose span is unknown).
    pub last_span: Option<u32>,
    /// Whether `first` is the starting PSN the CM exchange announced.
    pub first_from_cm: bool,
    /// Whether some request headers were cut (past the last proves nothing).
    pub headers_cut: bool,
}

/// An ACK or NAK to `dest` from `src` for `psn`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ack {
    pub src: Addr,
    pub dest: QpKey,
    pub psn: Psn,
    pub kind: AckKind,
    /// The requests the ACK answers, when its connection knows them.
    pub sent: Option<SentRequests>,
}

/// What an acknowledgement shows: a PSN no request took, a NAK.
pub(crate) fn on_ack(a: &Ack) -> impl Iterator<Item = Violation> {
    let plain = matches!(a.kind, AckKind::Ack { .. });
    [
        a.sent
            .filter(|_| plain)
            .and_then(|s| iba::ack_psn_not_sent(a.dest, a.psn, &s)),
        iba::nak(a.kind, a.src, a.psn),
    ]
    .into_iter()
    .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hooks raise their checks in the order the transactions' anomaly
    /// lists and the output have always had them.
    #[test]
    fn hooks_raise_in_a_fixed_order() {
        let header = ReplyHeader {
            read_segments: 1,
            backchannel: false,
            credits: Some(0),
        };
        let kinds: Vec<Kind> = on_reply(header).map(|v| v.kind).collect();
        assert_eq!(kinds, [Kind::ReadListInReply, Kind::ZeroCreditGrant]);
        let sent = ReplySent {
            xid: 1,
            call_frame: 2,
            call_ts_ns: 10,
            reply_frame: 3,
            reply_ts_ns: 5,
            invalidated: Some((0x9, Some(false))),
            not_negotiated: Some((false, false)),
        };
        let kinds: Vec<Kind> = on_reply_sent(&sent).map(|v| v.kind).collect();
        assert_eq!(
            kinds,
            [
                Kind::TimeWentBackwards,
                Kind::InvalidatedForeignStag,
                Kind::RemoteInvalidationNotNegotiated
            ]
        );
        let (from_requester, error) = on_rdma_error(RdmaError::Chunk, 1, false);
        assert_eq!(
            (from_requester.map(|v| v.kind), error.kind),
            (Some(Kind::ErrorFromRequester), Kind::ErrChunk)
        );
    }
}
