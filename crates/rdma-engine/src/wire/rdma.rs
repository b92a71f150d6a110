//! RC packets other than Sends: RDMA Write and Read matched to the chunk
//! segments that calls advertised, ACK/NAK, and PSN bookkeeping.

use std::collections::VecDeque;

use rdma_dissectors::ib::aeth::{AckKind, NakCode};
use rdma_dissectors::ib::bth::{Operation, Position, Transport};
use rdma_dissectors::ib::Psn;
use rdma_dissectors::oncrpc::{MsgBody, RpcMsg};
use rdma_dissectors::stack::Dissection;

use super::index::Tag;
use super::qp::{is_request, read_span, Packet, Placed, Refused, Sequence};
use super::state::{Message, ReadReq, ReplyHead, SegmentRef, Txn, WriteCtx, SEGMENT_FRAME_CAP};
use super::transfer::{Middle, Offered};
use crate::checks::{self, iba, rfc8166};
use crate::fill::fill_call;
use crate::keys::{Addr, ConnId, QpKey};
use crate::model::{ChunkKind, CmState, StepWhat};
use crate::{Engine, Finding};

/// Keeps the start of the reply chunk when this Write is to its first
/// byte (the first segment of the reply chunk, at its offset).
pub(super) fn keep_reply_head(t: &mut Txn, target: SegmentRef, va: u64, payload: &[u8]) {
    if t.reply_head.is_some() {
        return;
    }
    let first_reply = t.rec.chunks.iter().position(|s| s.kind == ChunkKind::Reply);
    let Some(s) = t.rec.chunks.get(target.index()) else {
        return;
    };
    if first_reply == Some(target.index()) && s.offset == va && !payload.is_empty() {
        t.reply_head = Some(ReplyHead::new(payload));
    }
}

/// The packet's payload length on the wire: all of it, even where the
/// capture's snap length kept only the headers.
fn wire_payload(d: &Dissection<'_>) -> usize {
    d.transport
        .as_ref()
        .map_or(0, rdma_dissectors::ib::Transport::payload_len_on_wire)
}

/// What a read response said of the READ it answers ([`answer_read`]).
struct Answered {
    target: Option<SegmentRef>,
    rkey: u32,
    /// The READ's first response.
    first: bool,
    /// The READ's last response: it is done.
    done: bool,
    /// The READ's PSN and the one the request after it took, when that
    /// request numbered itself inside the READ's span.
    reused: Option<(Psn, Psn)>,
}

/// Finds the READ among `reads` that a response of `psn` carrying `bytes`
/// (the READ's `last`, when its opcode says so) answers, and moves it on.
/// Responses come in PSN order: the first request whose range reaches this
/// PSN; a finished READ goes, and the older ones the responses skipped
/// with it (they will get no more data).
fn answer_read(
    reads: &mut VecDeque<ReadReq>,
    psn: Psn,
    bytes: u32,
    last: bool,
) -> Option<Answered> {
    let idx = reads.iter().position(|r| {
        let start = Psn::try_new(r.psn).unwrap_or_default();
        let next = Psn::try_new(r.next_psn).unwrap_or_default();
        (psn == start || start.is_before(psn)) && (psn == next || psn.is_before(next.add(1)))
    })?;
    let r = reads.get_mut(idx)?;
    // The READ's span was not known when the next request came: this
    // response says whether that request took one of its PSNs.
    let reused = r
        .followed_by
        .and_then(Psn::try_new)
        .filter(|&x| psn == x || x.is_before(psn))
        .map(|x| (Psn::try_new(r.psn).unwrap_or_default(), x));
    if reused.is_some() {
        r.followed_by = None;
    }
    r.received = r.received.saturating_add(bytes);
    r.next_psn = psn.add(1).get();
    let done = r.received >= r.len || last;
    let answered = Answered {
        target: r.target,
        rkey: r.rkey,
        first: r.received == bytes,
        done,
        reused,
    };
    if done {
        reads.remove(idx);
        let _ = reads.drain(..idx.min(reads.len()));
    }
    Some(answered)
}

impl Engine {
    /// A frame to `dest` from a host that is not its connection's peer.
    #[cold]
    fn wrong_peer(
        &mut self,
        number: u64,
        src: Addr,
        dest: QpKey,
        conn: Option<ConnId>,
        peer: Option<Addr>,
        out: &mut Vec<Finding>,
    ) {
        let v = iba::wrong_peer(src, dest, conn, peer);
        self.raise(out, v, vec![number], conn, None);
    }

    /// The path MTU between `dest` and its peer: the connection's (from the
    /// CM REQ, or learnt), or what full packets to `dest` said.
    fn path_mtu_at(&self, dest: &QpKey) -> Option<u32> {
        let q = self.qps.get(dest)?;
        q.conn
            .and_then(|c| self.state.connections.get(&c))
            .and_then(|c| c.path_mtu)
            .or(q.mtu)
    }

    /// A full packet said the path MTU of `conn`, which did not know it.
    #[cold]
    fn learnt_mtu(&mut self, conn: Option<ConnId>, mtu: u32) {
        if let Some(c) = conn.and_then(|c| self.state.connections.get_mut(&c)) {
            c.path_mtu.get_or_insert(mtu);
        }
    }

    /// The requests an ACK to `dest` on `conn` answers: those the other
    /// side of the connection sent, as far as their QP's sequence knows.
    fn sent_requests(&self, conn: Option<ConnId>, dest: QpKey) -> Option<checks::SentRequests> {
        let c = self.state.connections.get(&conn?)?;
        let requests = if c.client == Some(dest) {
            c.server
        } else if c.server == Some(dest) {
            c.client
        } else {
            None
        }?;
        let q = self.qps.get(&requests)?;
        Some(checks::SentRequests {
            requests,
            first: q.first_psn.and_then(Psn::try_new)?,
            last: q.last_psn.and_then(Psn::try_new)?,
            last_span: q.last_span,
            first_from_cm: q.first_from_cm,
            headers_cut: self.state.totals.headers_cut != 0,
        })
    }

    /// An ACK or NAK from `src` to `dest` on `conn`.
    fn ack(
        &mut self,
        number: u64,
        (src, dest): (Addr, QpKey),
        conn: Option<ConnId>,
        ts: u64,
        d: &Dissection<'_>,
        out: &mut Vec<Finding>,
    ) {
        let (Some(bth), Some(aeth)) = (d.bth(), d.aeth()) else {
            return;
        };
        if matches!(aeth.kind(), AckKind::Nak(NakCode::PsnSequenceError)) {
            self.note_loss(conn, ts);
        }
        self.track_rnr(conn, src, bth.psn, aeth.kind());
        let a = checks::Ack {
            src,
            dest,
            psn: bth.psn,
            kind: aeth.kind(),
            sent: self.sent_requests(conn, dest),
        };
        for v in checks::on_ack(&a) {
            self.raise(out, v, vec![number], conn, None);
        }
    }

    /// A request numbered inside the span of the READ before it.
    #[cold]
    #[allow(clippy::too_many_arguments)]
    fn read_span_reused(
        &mut self,
        number: u64,
        what: &str,
        psn: Psn,
        read: Psn,
        next: Psn,
        dest: QpKey,
        conn: Option<ConnId>,
        out: &mut Vec<Finding>,
    ) {
        let v = iba::read_span_reused(what, psn, read, next, dest);
        self.raise(out, v, vec![number], conn, None);
    }

    /// A request far from its QP's PSN sequence, held until the next one
    /// says whether the sequence moved.
    #[cold]
    fn far_psn(
        &mut self,
        number: u64,
        psn: u32,
        (last, cm_start): (Option<u32>, Option<u32>),
        dest: QpKey,
        conn: Option<ConnId>,
        out: &mut Vec<Finding>,
    ) {
        let v = iba::far_psn(psn, last, cm_start, dest);
        self.raise(out, v, vec![number], conn, None);
    }

    /// A request well before the first one seen: that one was a stray.
    #[cold]
    fn reseated(
        &mut self,
        number: u64,
        stray: Psn,
        cur: Psn,
        dest: QpKey,
        conn: Option<ConnId>,
        out: &mut Vec<Finding>,
    ) {
        let v = iba::reseated(stray, cur, dest, number);
        self.raise(out, v, vec![number], conn, None);
    }

    /// Places a packet to `dest` in its queue pair's state, in one lookup so
    /// that its key (address and QPN) is hashed once: the QP's peer and
    /// PSN sequence, the path MTU a full packet says, the Write a RETH-less
    /// packet continues. `None` for a packet left out (from a host that is
    /// not the peer, or a request far from the sequence), reported here.
    fn place(
        &mut self,
        number: u64,
        ts: u64,
        (src, dest): (Addr, QpKey),
        d: &Dissection<'_>,
        span: Option<u32>,
        out: &mut Vec<Finding>,
    ) -> Option<Placed> {
        let bth = d.bth()?;
        let packet = Packet {
            src,
            ts,
            opcode: bth.opcode,
            psn: bth.psn,
            span,
            payload: wire_payload(d),
            has_reth: d.reth().is_some(),
        };
        let q = self.qp_mut(&dest, out);
        let conn = q.conn;
        match q.place(&packet) {
            Ok(placed) => Some(placed),
            Err(Refused::WrongPeer { peer }) => {
                self.wrong_peer(number, src, dest, conn, peer, out);
                None
            }
            Err(Refused::Far { last, cm_start }) => {
                self.far_psn(number, bth.psn.get(), (last, cm_start), dest, conn, out);
                None
            }
        }
    }

    /// The request of PSN `psn` came after the READ of PSN `read` on `conn`,
    /// whose span was not known: its responses will tell whether it reused
    /// one of the READ's PSNs.
    fn followed_by(&mut self, conn: ConnId, read: u32, psn: u32) {
        let corr = self.conns.corr.get_mut(&conn);
        if let Some(r) = corr.and_then(|c| c.reads.iter_mut().rev().find(|r| r.psn == read)) {
            r.followed_by = Some(psn);
        }
    }

    /// Handles any RC/UC/UD packet that is not a CM MAD.
    pub(crate) fn rc_frame(
        &mut self,
        number: u64,
        ts: u64,
        src: Addr,
        dest: QpKey,
        d: &Dissection<'_>,
        out: &mut Vec<Finding>,
    ) {
        let Some(bth) = d.bth() else { return };
        let op = bth.opcode;
        if !matches!(
            op.transport(),
            Transport::Rc | Transport::Uc | Transport::Xrc
        ) {
            // Datagrams (subnet management, IPoIB, CNPs) belong to no
            // connection, and their PSNs are no sequence of one QP's.
            self.state.totals.unassociated_frames += 1;
            return;
        }
        let operation = op.operation();
        // The PSNs this request takes: one, or a READ's response count,
        // which needs the path MTU.
        let span = if operation == Operation::RdmaReadRequest {
            let mtu = self.path_mtu_at(&dest);
            d.reth()
                .zip(mtu)
                .map(|(r, mtu)| read_span(r.dma_length, mtu))
        } else {
            Some(1)
        };
        let Some(placed) = self.place(number, ts, (src, dest), d, span, out) else {
            return;
        };
        let conn = placed.conn;
        self.sequence_findings(number, dest, d, &placed, out);
        match placed.seq {
            Some(Sequence::Again) => return self.retransmitted(number, ts, dest, conn, d, out),
            Some(Sequence::Next { gap: true }) => self.state.totals.psn_gaps += 1,
            _ => {}
        }
        let conn = match conn {
            Some(c) => Some(c),
            None => self.owner_from_traffic((src, dest), ts, d, out),
        };
        if let Some(c) = conn.and_then(|c| self.state.connections.get_mut(&c)) {
            c.last_ts_ns = ts;
        }
        self.carried(number, ts, (src, dest), conn, placed.write, d, out);
        // Whether a connection owns the QP now: the message or request this
        // frame carried may have found (or made) one.
        let owned = conn.is_some() || self.qps.get(&dest).is_some_and(|q| q.conn.is_some());
        if !owned {
            self.state.totals.unassociated_frames += 1;
        }
    }

    /// What a packet's place in its QP's sequence shows: the path MTU it
    /// taught, a sequence that started from a stray, a PSN a READ holds.
    fn sequence_findings(
        &mut self,
        number: u64,
        dest: QpKey,
        d: &Dissection<'_>,
        placed: &Placed,
        out: &mut Vec<Finding>,
    ) {
        let (Some(bth), conn) = (d.bth(), placed.conn) else {
            return;
        };
        if let Some(m) = placed.learnt_mtu {
            self.learnt_mtu(conn, m);
        }
        match placed.seq {
            Some(Sequence::Reseated { stray }) => {
                self.reseated(number, stray, bth.psn, dest, conn, out);
            }
            Some(Sequence::InReadSpan { read, next }) => {
                let what = bth.opcode.name();
                self.read_span_reused(number, what, bth.psn, read, next, dest, conn, out);
            }
            _ => {}
        }
        if let (Some(read), Some(c), Some(seq)) = (placed.after_unknown_read, conn, &placed.seq) {
            if !matches!(seq, Sequence::Again | Sequence::InReadSpan { .. }) {
                self.followed_by(c, read, bth.psn.get());
            }
        }
    }

    /// Remembers an RNR NAK's PSN until an ACK from the same responder
    /// covers it, so the retries in between are not taken for losses.
    fn track_rnr(&mut self, conn: Option<ConnId>, src: Addr, psn: Psn, kind: AckKind) {
        let Some(c) = conn.and_then(|c| self.conns.corr.get_mut(&c)) else {
            return;
        };
        match (kind, c.rnr_naked) {
            (AckKind::RnrNak { .. }, _) => c.rnr_naked = Some((src, psn)),
            (AckKind::Ack { .. }, Some((by, naked))) if by == src && !psn.is_before(naked) => {
                c.rnr_naked = None;
            }
            _ => {}
        }
    }

    /// Whether a request sent again to `dest` retries one its responder
    /// refused with an RNR NAK (the PSN NAKed, or a later packet of the
    /// same message, which the requester resends with it).
    fn rnr_retry(&self, conn: Option<ConnId>, dest: QpKey, psn: Psn) -> bool {
        conn.and_then(|c| self.conns.corr.get(&c))
            .and_then(|c| c.rnr_naked)
            .is_some_and(|(by, naked)| by == dest.addr && !psn.is_before(naked))
    }

    /// A request sent again: counted, its connection's calls marked as
    /// waiting on a loss, and reported once (on its first packet); unless
    /// it retries after an RNR NAK, which `rnr_retry` reports instead.
    fn retransmitted(
        &mut self,
        number: u64,
        ts: u64,
        dest: QpKey,
        conn: Option<ConnId>,
        d: &Dissection<'_>,
        out: &mut Vec<Finding>,
    ) {
        let Some(bth) = d.bth() else { return };
        if self.rnr_retry(conn, dest, bth.psn) {
            return;
        }
        let op = bth.opcode;
        self.state.totals.retransmissions += 1;
        self.note_loss(conn, ts);
        if !matches!(op.position(), Some(Position::First | Position::Only)) {
            return;
        }
        // Name the RPC it carried, so a duplicated reply can be told
        // from a new one (tshark counts it twice).
        let xid = (op.operation() == Operation::Send)
            .then(|| rdma_dissectors::rpcrdma::RpcRdmaHeader::parse_fixed(d.payload()).ok())
            .flatten()
            .map(|f| f.xid.0);
        let v = iba::retransmission(op.name(), bth.psn.get(), dest, xid);
        self.raise(out, v, vec![number], conn, xid);
    }

    /// The connection of a packet on a QP none owns yet: a request waits
    /// for its response to pair the QPs; a response pairs them.
    fn owner_from_traffic(
        &mut self,
        (src, dest): (Addr, QpKey),
        ts: u64,
        d: &Dissection<'_>,
        out: &mut Vec<Finding>,
    ) -> Option<ConnId> {
        let bth = d.bth()?;
        match bth.opcode.operation() {
            o if is_request(o) => {
                self.await_response(src, dest, bth.psn.get());
                None
            }
            Operation::Acknowledge | Operation::RdmaReadResponse | Operation::AtomicAcknowledge => {
                self.pair_by_response(src, dest, bth.psn, ts, out)
            }
            _ => None,
        }
    }

    /// Hands the packet to what its operation carries: a Send's message, an
    /// RDMA Write's or Read's chunk data, an ACK.
    #[allow(clippy::too_many_arguments)]
    fn carried(
        &mut self,
        number: u64,
        ts: u64,
        (src, dest): (Addr, QpKey),
        conn: Option<ConnId>,
        write: Option<WriteCtx>,
        d: &Dissection<'_>,
        out: &mut Vec<Finding>,
    ) {
        let Some(bth) = d.bth() else { return };
        match bth.opcode.operation() {
            Operation::Send => {
                let Some(position) = bth.opcode.position() else {
                    return;
                };
                let m = Message {
                    bytes: d.payload(),
                    total: wire_payload(d),
                    cut: d.cut,
                    first_frame: number,
                    frame: number,
                    ts,
                    src,
                    dest,
                    invalidate: d.ieth().map(|i| i.r_key),
                };
                self.send_packet(m, position, out);
            }
            Operation::RdmaWrite => self.write_packet(number, ts, dest, conn, write, d, out),
            Operation::RdmaReadRequest => self.read_request(number, ts, dest, conn, d, out),
            Operation::RdmaReadResponse => self.read_response(number, ts, conn, d, out),
            Operation::Acknowledge | Operation::AtomicAcknowledge => {
                self.ack(number, (src, dest), conn, ts, d, out);
            }
            _ => {}
        }
    }

    /// A packet on `conn` was lost: the calls outstanding on it wait.
    fn note_loss(&mut self, conn: Option<ConnId>, ts: u64) {
        if let Some(c) = conn.and_then(|c| self.state.connections.get_mut(&c)) {
            c.last_loss_ts_ns = Some(c.last_loss_ts_ns.map_or(ts, |l| l.max(ts)));
        }
    }

    /// Finds the outstanding call and segment an (R_Key, VA, length) falls in.
    pub(super) fn find_segment(
        &self,
        conn: ConnId,
        rkey: u32,
        va: u64,
        len: u32,
        kind_ok: impl Fn(ChunkKind) -> bool,
    ) -> Option<SegmentRef> {
        let corr = self.conns.corr.get(&conn)?;
        let keys = corr.stags.get(&rkey)?;
        for key in keys {
            let Some(t) = corr.calls.latest(key) else {
                continue;
            };
            for (i, s) in t.rec.chunks.iter().enumerate() {
                if s.handle != rkey || !kind_ok(s.kind) {
                    continue;
                }
                let start = s.offset;
                let end = s.offset.saturating_add(u64::from(s.length));
                if va >= start && va.saturating_add(u64::from(len)) <= end {
                    return SegmentRef::new(*key, i);
                }
            }
        }
        None
    }

    pub(super) fn outside_chunk(
        &mut self,
        out: &mut Vec<Finding>,
        number: u64,
        conn: ConnId,
        what: &str,
        reth: rdma_dissectors::ib::Reth,
    ) {
        let rpcrdma = self.conns.corr.get(&conn).is_some_and(|c| c.rpcrdma);
        let cm_seen = self
            .state
            .connections
            .get(&conn)
            .is_some_and(|c| c.cm_state != CmState::NotSeen);
        // Mid-capture, calls sent before the capture began are unknown: only a
        // connection seen from its start can prove the access was not advertised.
        if !rpcrdma || !cm_seen {
            return;
        }
        // Nor can it while a call whose chunk lists the capture cut is
        // outstanding: the access may be in one of them.
        let unknown_chunks = self
            .conns
            .corr
            .get(&conn)
            .is_some_and(|c| c.calls.all().any(|t| t.rec.cut));
        if unknown_chunks {
            return;
        }
        let v = rfc8166::rdma_outside_chunk(what, reth);
        self.raise(out, v, vec![number], Some(conn), None);
    }

    /// Adds a Middle packet's payload to its transfer's
    /// [`DeferredMiddle`](super::transfer::DeferredMiddle).
    fn defer_middle(&mut self, conn: ConnId, target: SegmentRef, read: bool, m: Middle) {
        if !self.config.defer_middle_packets {
            self.add_to_segment(conn, target, m.bytes, m.frame, m.ts, read);
            return;
        }
        match self.deferred.offer(conn, target, read, m) {
            Offered::Absorbed => return,
            Offered::WriteFirst => self.flush_deferred(),
            Offered::Room => {}
        }
        self.deferred.push(conn, target, read, m);
    }

    /// Writes every deferred Middle into its transaction.
    pub(crate) fn flush_deferred(&mut self) {
        let mut deferred = self.deferred.take();
        for d in deferred.drain(..) {
            if let Some(t) = self.note_transfer(d.conn, d.target, d.first_ts, d.last_ts, d.read) {
                d.write_into(t);
            }
        }
        self.deferred.give_back(deferred);
    }

    /// The transaction of `target`, with the times of a transfer into it.
    fn note_transfer(
        &mut self,
        conn: ConnId,
        target: SegmentRef,
        first_ts: u64,
        last_ts: u64,
        read: bool,
    ) -> Option<&mut Txn> {
        let t = self
            .conns
            .corr
            .get_mut(&conn)?
            .calls
            .latest_mut(&target.txn())?;
        if read {
            t.first_read_ts.get_or_insert(first_ts);
            t.last_read_ts = Some(last_ts);
        } else {
            t.first_write_ts.get_or_insert(first_ts);
            t.last_write_ts = Some(last_ts);
        }
        Some(t)
    }

    /// Adds one packet's payload to `target` now (the deferred ones first).
    pub(super) fn add_to_segment(
        &mut self,
        conn: ConnId,
        target: SegmentRef,
        bytes: u32,
        frame: u64,
        ts: u64,
        read: bool,
    ) -> Option<&mut Txn> {
        if !self.deferred.is_empty() {
            self.flush_deferred();
        }
        let t = self.note_transfer(conn, target, ts, ts, read)?;
        let s = t.rec.chunks.get_mut(target.index())?;
        s.bytes_moved += u64::from(bytes);
        if s.frames.len() < SEGMENT_FRAME_CAP {
            s.frames.push(frame);
        }
        Some(t)
    }

    /// `write` is the context of the Write a packet without RETH continues.
    #[allow(clippy::too_many_arguments)]
    fn write_packet(
        &mut self,
        number: u64,
        ts: u64,
        dest: QpKey,
        conn: Option<ConnId>,
        write: Option<WriteCtx>,
        d: &Dissection<'_>,
        out: &mut Vec<Finding>,
    ) {
        let Some(bth) = d.bth() else { return };
        // What moved on the wire, whatever the capture kept of it.
        let bytes = wire_payload(d) as u32;
        let position = bth.opcode.position();
        let cap = self.config.max_ladder_steps;
        if let Some(reth) = d.reth() {
            // First or Only: the RETH says where.
            let conn = match conn {
                Some(c) => Some(c),
                None => self.pair_by_rkey(dest, d, reth.r_key, out),
            };
            let Some(conn) = conn else { return };
            let target = self.find_segment(conn, reth.r_key, reth.va, reth.dma_length, |k| {
                k != ChunkKind::Read
            });
            if target.is_none() {
                self.outside_chunk(out, number, conn, "RDMA WRITE", reth);
            }
            if matches!(position, Some(Position::First)) {
                let q = self.qp_mut(&dest, out);
                q.write = Some(WriteCtx {
                    conn,
                    target,
                    rkey: reth.r_key,
                });
            }
            if let Some(tg) = target {
                if let Some(t) = self.add_to_segment(conn, tg, bytes, number, ts, false) {
                    keep_reply_head(t, tg, reth.va, d.payload());
                    t.rec.responder_step(
                        cap,
                        number,
                        ts,
                        StepWhat::RdmaWrite {
                            rkey: reth.r_key,
                            va: reth.va,
                            len: reth.dma_length,
                        },
                    );
                }
            }
        } else {
            let Some(w) = write else { return };
            if let Some(tg) = w.target {
                let _ = w.rkey;
                if position == Some(Position::Middle) {
                    self.defer_middle(
                        w.conn,
                        tg,
                        false,
                        Middle {
                            bytes,
                            frame: number,
                            ts,
                        },
                    );
                } else {
                    self.add_to_segment(w.conn, tg, bytes, number, ts, false);
                }
            }
        }
    }

    /// A Write or Read request to a QP no connection owns yet: find the
    /// connection whose outstanding call advertised this R_Key.
    fn pair_by_rkey(
        &mut self,
        dest: QpKey,
        d: &Dissection<'_>,
        rkey: u32,
        out: &mut Vec<Finding>,
    ) -> Option<ConnId> {
        let (src, _) = Addr::of_frame(d)?;
        let id = self.half_open_conn(src, dest.addr, Tag::Rkey(rkey))?;
        self.set_client(id, dest);
        self.bind_qp(dest, id, src, out);
        Some(id)
    }

    /// An RDMA Read request for `reth` on `conn` (RoCE's READ Request or
    /// iWARP's Read Request, `what` naming it): the read chunk segment it
    /// pulls, or an outside-chunk finding; the call's first read time and
    /// its ladder step. Returns the segment.
    pub(super) fn read_requested(
        &mut self,
        out: &mut Vec<Finding>,
        (frame, ts): (u64, u64),
        conn: ConnId,
        what: &str,
        reth: rdma_dissectors::ib::Reth,
    ) -> Option<SegmentRef> {
        let target = self.find_segment(conn, reth.r_key, reth.va, reth.dma_length, |k| {
            k == ChunkKind::Read
        });
        let Some(tg) = target else {
            self.outside_chunk(out, frame, conn, what, reth);
            return None;
        };
        let cap = self.config.max_ladder_steps;
        if let Some(t) = self
            .conns
            .corr
            .get_mut(&conn)
            .and_then(|c| c.calls.latest_mut(&tg.txn()))
        {
            t.first_read_ts.get_or_insert(ts);
            let step = StepWhat::RdmaReadRequest {
                rkey: reth.r_key,
                va: reth.va,
                len: reth.dma_length,
            };
            t.rec.responder_step(cap, frame, ts, step);
        }
        target
    }

    fn read_request(
        &mut self,
        number: u64,
        ts: u64,
        dest: QpKey,
        conn: Option<ConnId>,
        d: &Dissection<'_>,
        out: &mut Vec<Finding>,
    ) {
        let (Some(bth), Some(reth)) = (d.bth(), d.reth()) else {
            return;
        };
        let conn = match conn {
            Some(c) => Some(c),
            None => self.pair_by_rkey(dest, d, reth.r_key, out),
        };
        let Some(conn) = conn else { return };
        let target = self.read_requested(out, (number, ts), conn, "RDMA READ", reth);
        let max = self.limits.reads_per_connection;
        let mut evicted = false;
        if let Some(corr) = self.conns.corr.get_mut(&conn) {
            if corr.reads.len() >= max {
                corr.reads.pop_front();
                evicted = true;
            }
            let psn = bth.psn.get();
            corr.reads.push_back(ReadReq {
                psn,
                followed_by: None,
                next_psn: psn,
                rkey: reth.r_key,
                len: reth.dma_length,
                received: 0,
                target,
            });
        }
        if evicted {
            self.state.evictions.reads += 1;
        }
    }

    /// Adds a read response's data to the segment of the READ it answers:
    /// the READ completed, and a Long Call's RPC header in its first response.
    pub(super) fn read_data(
        &mut self,
        number: u64,
        ts: u64,
        conn: ConnId,
        tg: SegmentRef,
        (bytes, first, done, rkey): (u32, bool, bool, u32),
        payload: &[u8],
    ) {
        let cap = self.config.max_ladder_steps;
        let Some(t) = self.add_to_segment(conn, tg, bytes, number, ts, true) else {
            return;
        };
        if done {
            let from_client = !t.rec.backchannel;
            t.rec.step(
                cap,
                number,
                ts,
                from_client,
                StepWhat::RdmaReadResponseComplete { rkey },
            );
        }
        // A Long Call's RPC header travels in the first read response.
        let pos0 = t
            .rec
            .chunks
            .get(tg.index())
            .is_some_and(|s| s.kind == ChunkKind::Read && s.position == Some(0));
        if first && pos0 && t.rec.program.is_none() {
            if let Ok((
                RpcMsg {
                    body: MsgBody::Call(c),
                    ..
                },
                _,
            )) = RpcMsg::parse(payload)
            {
                fill_call(
                    &mut t.rec,
                    c.prog,
                    c.vers,
                    c.proc,
                    c.args,
                    rdma_dissectors::nfs::Ddp::NONE,
                );
            }
        }
    }

    fn read_response(
        &mut self,
        number: u64,
        ts: u64,
        conn: Option<ConnId>,
        d: &Dissection<'_>,
        out: &mut Vec<Finding>,
    ) {
        let Some(bth) = d.bth() else { return };
        let Some(conn) = conn else { return };
        let psn = bth.psn;
        // What moved on the wire, whatever the capture kept of it.
        let bytes = wire_payload(d) as u32;
        let last = matches!(bth.opcode.position(), Some(Position::Last | Position::Only));
        let Some(corr) = self.conns.corr.get_mut(&conn) else {
            return;
        };
        let Some(Answered {
            target,
            rkey,
            first,
            done,
            reused,
        }) = answer_read(&mut corr.reads, psn, bytes, last)
        else {
            return;
        };
        if let Some((read, x)) = reused {
            let v = iba::read_answered_in_reused_span(read, psn, x, conn);
            self.raise(out, v, vec![number], Some(conn), None);
        }
        let Some(tg) = target else { return };
        if !done && !first && bth.opcode.position() == Some(Position::Middle) {
            self.defer_middle(
                conn,
                tg,
                true,
                Middle {
                    bytes,
                    frame: number,
                    ts,
                },
            );
            return;
        }
        self.read_data(
            number,
            ts,
            conn,
            tg,
            (bytes, first, done, rkey),
            d.payload(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(psn: u32, len: u32, rkey: u32) -> ReadReq {
        ReadReq {
            psn,
            followed_by: None,
            next_psn: psn,
            rkey,
            len,
            received: 0,
            target: None,
        }
    }

    /// A READ's responses are found by PSN and counted; the last one ends
    /// it, and the READs before it that got no response go with it.
    #[test]
    fn read_responses_answer_the_read_their_psn_reaches() {
        let psn = |p: u32| Psn::try_new(p).unwrap();
        let mut reads = VecDeque::from([read(0x10, 4096, 1), read(0x20, 2048, 2)]);
        let a = answer_read(&mut reads, psn(0x20), 1024, false).unwrap();
        assert_eq!((a.rkey, a.first, a.done), (2, true, false));
        let a = answer_read(&mut reads, psn(0x21), 1024, false).unwrap();
        assert_eq!((a.rkey, a.first, a.done), (2, false, true));
        assert!(reads.is_empty(), "{reads:?}");
        assert!(answer_read(&mut reads, psn(0x22), 1024, true).is_none());
    }

    /// A response at or past the PSN the request after a READ of unknown
    /// span took says that request reused one of the READ's PSNs, once.
    #[test]
    fn a_response_past_the_next_request_says_it_reused_the_reads_psn() {
        let psn = |p: u32| Psn::try_new(p).unwrap();
        let mut reads = VecDeque::from([ReadReq {
            followed_by: Some(0x11),
            ..read(0x10, 3000, 7)
        }]);
        let a = answer_read(&mut reads, psn(0x10), 1024, false).unwrap();
        assert_eq!(a.reused, None);
        let a = answer_read(&mut reads, psn(0x11), 1024, false).unwrap();
        assert_eq!(a.reused, Some((psn(0x10), psn(0x11))));
        let a = answer_read(&mut reads, psn(0x12), 952, true).unwrap();
        assert_eq!((a.reused, a.done), (None, true));
    }
}
