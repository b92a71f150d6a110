//! RPC-over-RDMA messages and the transactions they make: Sends reassembled,
//! headers decoded, calls matched to replies by XID, and the RFC checks that
//! one message can show.

use std::collections::HashMap;

use rdma_dissectors::nfs;
use rdma_dissectors::oncrpc::{AcceptStat, MsgBody, ReplyBody, RpcMsg};
use rdma_dissectors::rpcrdma::{Body, Chunks, Proc, RdmaError, RpcRdmaHeader, Xid};

use super::index::Tag;
use super::reassembly::SendPacket;
use super::state::{Message, Parked, Txn, CLIENT_CONNS};
use crate::checks::{self, rfc8166, rfc8797};
use crate::fill::{fill_call, fill_nfs_status, reply_status};
use crate::keys::{Addr, CallKey, ConnId, Origin};
use crate::model::{
    v1, CallHeader, Carries, ChunkKind, Ladder, LadderStep, Phases, SegmentUse, StepWhat,
    Transaction, Transfer,
};
use crate::{Engine, Finding, Kind};

/// An RPC-over-RDMA message decoded on a known connection: what a call or
/// a reply is correlated from.
#[derive(Clone, Copy)]
struct Decoded<'m, 'a> {
    m: &'m Message<'a>,
    conn: ConnId,
    /// Whether the call (of this message or of the call it answers) went
    /// server to client (NFSv4.1 backchannel).
    backchannel: bool,
    xid: u32,
    /// The header's fields as far as the capture kept them: all of them,
    /// unless a snap length cut the header.
    credits: Option<u32>,
    proc: Option<Proc>,
    /// The chunk lists and the header's length, when captured whole.
    chunks: Option<Chunks<'a>>,
    header_len: Option<usize>,
    rpc: Option<&'m RpcMsg<'a>>,
}

impl Engine {
    /// Handles one packet of an RC SEND.
    pub(crate) fn send_packet(
        &mut self,
        m: Message<'_>,
        position: rdma_dissectors::ib::bth::Position,
        out: &mut Vec<Finding>,
    ) {
        use rdma_dissectors::ib::bth::Position;
        let cap = self.config.max_message_prefix;
        let budget_room = self.conns.prefixes.room(self.limits.prefix_bytes);
        let packet = SendPacket {
            bytes: m.bytes,
            total: m.total,
            cut: m.cut,
        };
        match position {
            Position::Only => self.message(m, out),
            Position::First => {
                let keep = m.bytes.len().min(cap).min(budget_room);
                let (q, prefixes) = self.qp_and_prefixes(&m.dest, out);
                prefixes.start(&mut q.send, m.frame, packet, keep);
            }
            Position::Middle | Position::Last => {
                let (q, prefixes) = self.qp_and_prefixes(&m.dest, out);
                let Some(r) = q.send.as_mut() else {
                    // The capture started in the middle of this message.
                    return;
                };
                let room = cap.saturating_sub(r.prefix.len()).min(budget_room);
                if position != Position::Last {
                    return prefixes.extend(r, packet, room);
                }
                let Some(r) = prefixes.finish(&mut q.send, packet, room) else {
                    return;
                };
                if r.total > r.prefix.len() {
                    self.state.evictions.truncated_messages += 1;
                }
                let msg = Message {
                    bytes: &r.prefix,
                    total: r.total,
                    first_frame: r.first_frame,
                    cut: r.cut || r.total > r.prefix.len(),
                    ..m
                };
                self.message(msg, out);
            }
        }
    }

    /// Finds (or, from traffic alone, creates) the connection a message belongs to.
    fn conn_for_message(
        &mut self,
        m: &Message<'_>,
        is_call: Option<bool>,
        xid: u32,
        out: &mut Vec<Finding>,
    ) -> Option<ConnId> {
        if let Some(c) = self.qps.get(&m.dest).and_then(|q| q.conn) {
            return Some(c);
        }
        match is_call {
            Some(true) => {
                // A call to a QP nobody introduced: the capture started mid-connection.
                let id = self.new_conn(m.ts, out);
                if let Some(c) = self.state.connections.get_mut(&id) {
                    c.server = Some(m.dest);
                }
                if let Some(corr) = self.conns.corr.get_mut(&id) {
                    corr.peer_addr = Some(m.src);
                }
                self.carries(id, Carries::RpcRdma);
                self.bind_qp(m.dest, id, m.src, out);
                Some(id)
            }
            Some(false) => {
                // A reply: the connection whose server is the sender, whose
                // client QP is still unknown, and which awaits this XID.
                let id = self.half_open_conn(m.src, m.dest.addr, Tag::Xid(xid))?;
                self.set_client(id, m.dest);
                self.bind_qp(m.dest, id, m.src, out);
                Some(id)
            }
            None => None,
        }
    }

    /// Whether a message whose RPC message the capture cut is a call: a
    /// reply answers an outstanding call of its XID in the other direction,
    /// so a message to the client with no forward call of its XID
    /// outstanding is a backchannel call, and one to the server is a call
    /// unless it answers a backchannel call.
    fn cut_is_call(&self, conn: ConnId, dest_is_client: bool, xid: u32) -> bool {
        let answers = CallKey {
            backchannel: !dest_is_client,
            xid: Xid(xid),
        };
        !self
            .conns
            .corr
            .get(&conn)
            .is_some_and(|c| c.calls.contains(&answers))
    }

    /// The connection of a cut message on a QP no connection owns: the one
    /// whose outstanding call it answers, or a new one it is the call of.
    fn conn_for_cut_message(
        &mut self,
        m: &Message<'_>,
        xid: u32,
        out: &mut Vec<Finding>,
    ) -> Option<ConnId> {
        self.conn_for_message(m, Some(false), xid, out)
            .or_else(|| self.conn_for_message(m, Some(true), xid, out))
    }

    /// A message whose RPC-over-RDMA header the capture cut (a snap
    /// length): its XID pairs it, the credits and procedure count when they
    /// were captured, and what the cut hides (chunk lists, the RPC message)
    /// is left unknown, not guessed.
    fn cut_message(
        &mut self,
        m: &Message<'_>,
        known_conn: Option<ConnId>,
        known_rpcrdma: bool,
        out: &mut Vec<Finding>,
    ) {
        let word = |i: usize| match m.bytes.get(i * 4..i * 4 + 4) {
            Some(&[a, b, c, d]) => Some(u32::from_be_bytes([a, b, c, d])),
            _ => None,
        };
        let Some(xid) = word(0) else {
            return;
        };
        let proc = word(3).map(Proc::from);
        // Too little captured to tell it is RPC-over-RDMA at all, or it is not.
        let rpcrdma = match (word(1), proc) {
            (Some(1), Some(Proc::Unknown(_))) => known_rpcrdma,
            (Some(1), _) => true,
            (None, _) => known_rpcrdma,
            (Some(_), _) => false,
        };
        if !rpcrdma {
            if let (Some(c), Some(_)) = (known_conn, word(1)) {
                self.carries(c, Carries::Other);
            }
            return;
        }
        // An RDMA_ERROR or RDMA_DONE needs its words to mean anything.
        if matches!(proc, Some(Proc::Error | Proc::Done)) {
            return;
        }
        self.state.totals.rpcrdma_messages += 1;
        let conn = match known_conn {
            Some(c) => Some(c),
            None => self.conn_for_cut_message(m, xid, out),
        };
        // Its frame is counted unassociated by `rc_frame`, once.
        let Some(conn) = conn else {
            return;
        };
        self.carries(conn, Carries::RpcRdma);
        let Some(c) = self.state.connections.get_mut(&conn) else {
            return;
        };
        c.last_ts_ns = m.ts;
        let dest_is_client = c.client == Some(m.dest);
        let call = self.cut_is_call(conn, dest_is_client, xid);
        let d = Decoded {
            m,
            conn,
            backchannel: dest_is_client == call,
            xid,
            credits: word(2),
            proc,
            chunks: None,
            header_len: None,
            rpc: None,
        };
        if call {
            self.call(&d, out);
        } else {
            self.reply(&d, out);
        }
    }

    /// The RPC-over-RDMA header of a whole message, judged (RFC 8166 4.5,
    /// 4.6); `None` when it is not RPC-over-RDMA, or too broken to go on.
    fn decode_header<'a>(
        &mut self,
        m: &Message<'a>,
        known_conn: Option<ConnId>,
        known_rpcrdma: bool,
        out: &mut Vec<Finding>,
    ) -> Option<(RpcRdmaHeader<'a>, &'a [u8])> {
        // RFC 8166 4.5: a message shorter than the minimal 28-byte header
        // must be discarded. That minimum is RDMA_MSG's with three empty
        // lists; RDMA_ERROR/ERR_CHUNK (20 bytes, what Linux sends) and
        // RDMA_DONE (16) are complete in fewer by their own XDR (4.1.2), so
        // they are judged by that instead of being called short.
        let complete_short = matches!(
            RpcRdmaHeader::parse_fixed(m.bytes).map(|f| f.proc),
            Ok(Proc::Error | Proc::Done)
        ) && RpcRdmaHeader::parse(m.bytes).is_ok();
        if let Some(v) = rfc8166::short_header(m.bytes.len(), complete_short) {
            if let (Some(c), false) = (known_conn, known_rpcrdma) {
                self.carries(c, Carries::Other);
            }
            if known_rpcrdma {
                self.raise(out, v, vec![m.frame], known_conn, None);
            }
            return None;
        }
        let fixed = RpcRdmaHeader::parse_fixed(m.bytes).ok();
        let Some(fixed) =
            fixed.filter(|f| known_rpcrdma || (f.vers == 1 && !matches!(f.proc, Proc::Unknown(_))))
        else {
            // Not RPC-over-RDMA as far as anyone can tell (another upper layer).
            if let Some(c) = known_conn {
                self.carries(c, Carries::Other);
            }
            return None;
        };
        let xid = fixed.xid.0;
        self.state.totals.rpcrdma_messages += 1;
        if let Some(v) = rfc8166::version(fixed.vers, fixed.proc) {
            self.raise(out, v, vec![m.frame], known_conn, Some(xid));
            return None;
        }
        let (hdr, stream) = match RpcRdmaHeader::parse(m.bytes) {
            Ok(h) => h,
            Err(e) => {
                let v = rfc8166::undecodable(fixed.proc, &e);
                self.raise(out, v, vec![m.frame], known_conn, Some(xid));
                return None;
            }
        };
        if let Some(v) = rfc8166::obsolete(fixed.proc) {
            self.raise(out, v, vec![m.frame], known_conn, Some(xid));
            if fixed.proc == Proc::Done {
                return None;
            }
        }
        Some((hdr, stream))
    }

    /// Whether a message to `m.dest` is a call: its RPC message says so;
    /// an RDMA_ERROR is a reply; otherwise the QP's role on a known
    /// connection (`None` when neither tells).
    fn is_call(
        &self,
        m: &Message<'_>,
        known_conn: Option<ConnId>,
        xid: u32,
        (rpc, body): (Option<&RpcMsg<'_>>, Body<'_>),
    ) -> Option<bool> {
        let dest_is_client = known_conn
            .and_then(|c| self.state.connections.get(&c))
            .map(|c| c.client == Some(m.dest));
        match (rpc, body) {
            (Some(r), _) => Some(matches!(r.body, MsgBody::Call(_))),
            (None, Body::Error(_)) => Some(false),
            (None, _) if m.cut => known_conn
                .zip(dest_is_client)
                .map(|(c, to_client)| self.cut_is_call(c, to_client, xid)),
            (None, _) => dest_is_client.map(|to_client| !to_client),
        }
    }

    /// The connection an RPC-over-RDMA message belongs to (found or made
    /// from traffic), noted as carrying RPC-over-RDMA and as active.
    fn conn_of_message(
        &mut self,
        m: &Message<'_>,
        is_call: Option<bool>,
        xid: u32,
        out: &mut Vec<Finding>,
    ) -> Option<ConnId> {
        let conn = match (is_call, m.cut) {
            (None, true) => self.conn_for_cut_message(m, xid, out),
            _ => self.conn_for_message(m, is_call, xid, out),
        }?;
        self.carries(conn, Carries::RpcRdma);
        if let Some(c) = self.state.connections.get_mut(&conn) {
            c.last_ts_ns = m.ts;
        }
        Some(conn)
    }

    /// Handles one whole RPC-over-RDMA message.
    pub(crate) fn message(&mut self, m: Message<'_>, out: &mut Vec<Finding>) {
        let known_conn = self.qps.get(&m.dest).and_then(|q| q.conn);
        let known_rpcrdma = known_conn
            .and_then(|c| self.conns.corr.get(&c))
            .is_some_and(|c| c.rpcrdma);
        if m.cut
            && matches!(
                RpcRdmaHeader::parse(m.bytes),
                Err(rdma_dissectors::Error::Truncated { .. })
            )
        {
            return self.cut_message(&m, known_conn, known_rpcrdma, out);
        }
        let Some((hdr, stream)) = self.decode_header(&m, known_conn, known_rpcrdma, out) else {
            return;
        };
        let xid = hdr.xid.0;
        // Which way: an RPC message in the stream says so; otherwise the QP's role.
        let rpc = match hdr.body {
            Body::Msg(_) | Body::Msgp { .. } => RpcMsg::parse(stream).ok().map(|(r, _)| r),
            _ => None,
        };
        let is_call = self.is_call(&m, known_conn, xid, (rpc.as_ref(), hdr.body));
        // Its frame is counted unassociated by `rc_frame`, once.
        let Some(conn) = self.conn_of_message(&m, is_call, xid, out) else {
            return;
        };
        let dest_is_client = self
            .state
            .connections
            .get(&conn)
            .map(|c| c.client == Some(m.dest))
            .unwrap_or(false);
        if let (Some(r), Body::Msg(_) | Body::Msgp { .. }) = (&rpc, hdr.body) {
            if let Some(v) = rfc8166::xid_mismatch(xid, r.xid) {
                self.raise(out, v, vec![m.frame], Some(conn), Some(xid));
            }
        }
        if let Body::Error(err) = hdr.body {
            self.rdma_error(&m, conn, xid, err, dest_is_client, out);
            return;
        }
        let chunks = hdr.chunks().unwrap_or_default();
        // A backchannel call arrives at the client; a forward call at the server.
        let call = is_call.unwrap_or(!dest_is_client);
        if hdr.proc == Proc::Nomsg {
            let v = rfc8166::nomsg_without_chunks(rfc8166::NomsgChunks {
                call,
                position_zero: chunks.has_position_zero(),
                reply_chunk: chunks.reply_chunk().is_some(),
            });
            if let Some(v) = v {
                self.raise(out, v, vec![m.frame], Some(conn), Some(xid));
            }
        }
        let d = Decoded {
            m: &m,
            conn,
            // A backchannel call flows server to client, its reply back.
            backchannel: dest_is_client == call,
            xid,
            credits: Some(hdr.credits),
            proc: Some(hdr.proc),
            chunks: Some(chunks),
            header_len: Some(hdr.header_len()),
            rpc: rpc.as_ref(),
        };
        if call {
            self.call(&d, out);
        } else {
            self.reply(&d, out);
        }
    }

    fn rdma_error(
        &mut self,
        m: &Message<'_>,
        conn: ConnId,
        xid: u32,
        err: RdmaError,
        dest_is_client: bool,
        out: &mut Vec<Finding>,
    ) {
        let (from_requester, error) = checks::on_rdma_error(err, xid, dest_is_client);
        let kind = error.kind;
        for v in from_requester.into_iter().chain([error]) {
            self.raise(out, v, vec![m.frame], Some(conn), Some(xid));
        }
        // It answers the call: close the transaction.
        let key = CallKey {
            backchannel: false,
            xid: Xid(xid),
        };
        if let Some(mut t) = self.take_call(conn, key) {
            t.rec.reply_transfer = Transfer::Error;
            t.rec.anomalies.push(kind);
            self.finish_txn(t, m, None, out);
        }
    }

    fn call(&mut self, d: &Decoded<'_, '_>, out: &mut Vec<Finding>) {
        let Decoded {
            m,
            conn,
            backchannel,
            xid,
            ..
        } = *d;
        let key = CallKey {
            backchannel,
            xid: Xid(xid),
        };
        let mut anomalies = Vec::new();
        // A forward call flows client to server; a backchannel call the other way.
        if self.inline_exceeded(m, conn, xid, !backchannel, out) {
            anomalies.push(Kind::InlineThresholdExceeded);
        }
        let mut rec = call_record(d, anomalies, self.config.max_ladder_steps);
        self.state.totals.calls += 1;
        let positions = d.chunks.into_iter().flat_map(|c| c.read_list());
        if let Some(v) = rfc8166::unaligned_read_position(positions.map(|r| r.position)) {
            rec.anomalies.push(v.kind);
            self.raise(out, v, vec![m.frame], Some(conn), Some(xid));
        }
        // An XID sent again while its earlier call waits for a reply: RFC
        // 8166 section 3 (as RFC 5531 section 9) retires an XID only with
        // its reply. Both calls are kept and counted; replies pair in order.
        let earlier = self
            .conns
            .corr
            .get(&conn)
            .and_then(|c| c.calls.latest(&key))
            .map(|t| t.rec.call_frame);
        if let Some(v) = rfc8166::xid_reused(xid, earlier, m.frame, conn) {
            rec.anomalies.push(v.kind);
            let frames = vec![earlier.unwrap_or_default(), m.frame];
            self.raise(out, v, frames, Some(conn), Some(xid));
        }
        if !backchannel {
            self.forward_call_history(&mut rec, m, key, out);
        }
        self.make_room_for_call(conn, out);
        self.credits_at_call(&mut rec, d, out);
        self.insert_call(
            conn,
            key,
            Txn {
                rec,
                seq: 0,
                cost: 0,
                first_read_ts: None,
                last_read_ts: None,
                first_write_ts: None,
                last_write_ts: None,
                reply_head: None,
            },
        );
    }

    /// What came before a forward call `rec` of the same client: the same
    /// call left unanswered on a connection that went away (sent again),
    /// and the NFS error it may be the retry of.
    fn forward_call_history(
        &mut self,
        rec: &mut Transaction,
        m: &Message<'_>,
        key: CallKey,
        out: &mut Vec<Finding>,
    ) {
        if !self.conns.parked.is_empty() {
            self.expire_parked(m.ts, out);
        }
        let earlier = match self.conns.parked.take(m.src, key) {
            Some(p) => Some(p),
            None => self.outstanding_elsewhere(m.src, rec.connection, key),
        };
        if let Some(p) = earlier {
            self.sent_again(p, rec, m, out);
        }
        self.conns.retries.expire(m.ts);
        self.conns.retries.sent(m.src, rec);
    }

    /// The calls in flight with call `rec` and the credits they use: a
    /// forward call past the responder's grant overruns it (RFC 8166
    /// 3.3.1); a backchannel call is not one of the calls credits count.
    fn credits_at_call(
        &mut self,
        rec: &mut Transaction,
        d: &Decoded<'_, '_>,
        out: &mut Vec<Finding>,
    ) {
        let (conn, backchannel, credits) = (d.conn, d.backchannel, d.credits);
        let in_flight = self
            .conns
            .corr
            .get(&conn)
            .map_or(0, |c| c.calls.in_flight_on(backchannel) as u32 + 1);
        rec.in_flight_at_call = in_flight;
        let points = self.limits.credit_points;
        let mut overrun = None;
        if let Some(c) = self.state.connections.get_mut(&conn) {
            c.calls += 1;
            // Credits, the requests for them and the calls they bound are
            // the forward channel's.
            if !backchannel {
                if credits.is_some() {
                    c.requested = credits;
                }
                c.in_flight = in_flight;
                c.peak_in_flight = c.peak_in_flight.max(in_flight);
                overrun = rfc8166::credit_overrun(in_flight, c.granted);
                c.credit_update(d.m.ts, points);
            }
        }
        if let Some(v) = overrun {
            rec.anomalies.push(v.kind);
            self.raise(out, v, vec![d.m.frame], Some(conn), Some(d.xid));
        }
    }

    /// The call `key` still outstanding on another, older connection of
    /// the client at `client`, taken out of it: the client sent it again on
    /// `conn` without that connection being seen to close. Notes `conn` as
    /// one of the client's connections.
    fn outstanding_elsewhere(
        &mut self,
        client: Addr,
        conn: ConnId,
        key: CallKey,
    ) -> Option<Parked> {
        if !self.conns.by_client.contains_key(&client)
            && self.conns.by_client.len() >= self.limits.connections
        {
            self.conns.by_client.clear();
        }
        let conns = self.conns.by_client.entry(client).or_default();
        if conns.last() != Some(&conn) {
            conns.retain(|c| *c != conn);
            if conns.len() >= CLIENT_CONNS {
                conns.remove(0);
            }
            conns.push(conn);
        }
        let older = self
            .conns
            .by_client
            .get(&client)?
            .iter()
            .copied()
            .find(|c| {
                *c < conn
                    && self
                        .conns
                        .corr
                        .get(c)
                        .is_some_and(|x| x.calls.contains(&key))
            })?;
        let txn = self.take_call(older, key)?;
        Some(Parked {
            txn,
            why: format!("the client sent it again on {conn}").into(),
            at: None,
        })
    }

    /// Call `rec`, just sent in `m`, and `p`, the same client's call of the
    /// same XID that a torn-down connection left unanswered: the client
    /// sent its operation again on a new connection (RFC 8166 4.5.5), and
    /// `rec` becomes the operation's latest transmission. A different
    /// procedure is an XID reused for another call: `p` goes out unanswered.
    fn sent_again(
        &mut self,
        p: Parked,
        rec: &mut Transaction,
        m: &Message<'_>,
        out: &mut Vec<Finding>,
    ) {
        let first = &p.txn.rec;
        let same = |a: Option<u32>, b: Option<u32>| a.zip(b).is_none_or(|(a, b)| a == b);
        if first.connection == rec.connection
            || !same(first.program, rec.program)
            || !same(first.proc, rec.proc)
        {
            self.unanswered(p.txn, &p.why, p.at, out);
            return;
        }
        rec.transmissions = first.transmissions.saturating_add(1);
        rec.first_call_frame = first.first_call_frame;
        rec.first_call_ts_ns = first.first_call_ts_ns;
        rec.earlier_connections
            .clone_from(&first.earlier_connections);
        rec.earlier_connections.push(first.connection);
        rec.anomalies.push(Kind::CallRetransmitted);
        merge_ladders(first, rec, m, self.config.max_ladder_steps);
        let proc = rec.procedure_label();
        let v = rfc8166::call_retransmitted(&rfc8166::SentAgain {
            proc: &proc,
            xid: rec.xid,
            conn: rec.connection,
            frame: m.frame,
            waited_s: m.ts.saturating_sub(first.first_call_ts_ns) as f64 / 1e9,
            first_frame: first.first_call_frame,
            first_conn: first.connection,
            why: &p.why,
            transmissions: rec.transmissions,
        });
        let frames = vec![first.first_call_frame, m.frame];
        self.raise(out, v, frames, Some(rec.connection), Some(rec.xid));
    }

    /// Checks a Send against the inline threshold the CM exchange negotiated
    /// for its direction (RFC 8166 3.3.2, RFC 8797 4.2); unknown thresholds
    /// (no CM exchange in the capture) are not guessed.
    fn inline_exceeded(
        &mut self,
        m: &Message<'_>,
        conn: ConnId,
        xid: u32,
        client_to_server: bool,
        out: &mut Vec<Finding>,
    ) -> bool {
        let threshold = self.state.connections.get(&conn).and_then(|c| {
            if client_to_server {
                c.call_inline_threshold()
            } else {
                c.reply_inline_threshold()
            }
        });
        let Some(v) = rfc8797::inline_threshold(m.total, threshold, client_to_server) else {
            return false;
        };
        self.raise(out, v, vec![m.first_frame, m.frame], Some(conn), Some(xid));
        true
    }

    fn reply(&mut self, d: &Decoded<'_, '_>, out: &mut Vec<Finding>) {
        let Decoded {
            m,
            conn,
            backchannel,
            xid,
            credits,
            proc,
            chunks: seen,
            ..
        } = *d;
        let chunks = seen.unwrap_or_default();
        let mut kinds = Vec::new();
        let header = checks::ReplyHeader {
            read_segments: chunks.read_count(),
            backchannel,
            credits,
        };
        for v in checks::on_reply(header) {
            kinds.push(v.kind);
            self.raise(out, v, vec![m.frame], Some(conn), Some(xid));
        }
        if self.inline_exceeded(m, conn, xid, backchannel, out) {
            kinds.push(Kind::InlineThresholdExceeded);
        }
        if let (false, Some(granted)) = (backchannel, credits) {
            if let Some(c) = self.state.connections.get_mut(&conn) {
                c.granted = Some(granted);
                c.granted_implicit = false;
                c.granted_min = Some(c.granted_min.map_or(granted, |g| g.min(granted)));
                c.granted_max = Some(c.granted_max.map_or(granted, |g| g.max(granted)));
            }
        }
        let key = CallKey {
            backchannel,
            xid: Xid(xid),
        };
        let Some(mut t) = self.take_call(conn, key) else {
            let v = rfc8166::reply_without_call(xid);
            self.raise(out, v, vec![m.frame], Some(conn), Some(xid));
            return;
        };
        t.rec.anomalies.extend(kinds);
        t.rec.credits_granted = credits;
        t.rec.reply_transfer = match (proc, seen) {
            (Some(Proc::Nomsg), _) => Transfer::ReplyChunk,
            (_, Some(c)) if c.write_list().any(|w| !w.is_unused() && !w.is_empty()) => {
                Transfer::WriteChunks
            }
            (_, Some(_)) => Transfer::Inline,
            (_, None) => Transfer::Unknown,
        };
        if seen.is_none() {
            // What the reply's lists would say is not known; what the
            // RDMA Writes moved still is.
            t.rec.cut = true;
            t.rec.unused_write_chunks = None;
            self.finish_txn(t, m, m.invalidate, out);
            return;
        }
        reported_lengths(&mut t.rec, chunks);
        self.reply_results(&mut t, d);
        self.finish_txn(t, m, m.invalidate, out);
    }

    /// What the reply's RPC message says (its status, the NFS results),
    /// read from the message or, for RDMA_NOMSG, from its reply chunk.
    fn reply_results(&mut self, t: &mut Txn, d: &Decoded<'_, '_>) {
        let Decoded {
            m,
            backchannel,
            xid,
            proc,
            rpc,
            ..
        } = *d;
        let chunks = d.chunks.unwrap_or_default();
        // An RDMA_NOMSG reply's RPC message is in its reply chunk: its
        // header is read from the chunk's first RDMA Write, when the XID
        // there is the call's.
        let head = t.reply_head.take();
        let from_chunk = match (rpc, proc, &head) {
            (None, Some(Proc::Nomsg), Some(h)) => RpcMsg::parse(h.bytes())
                .ok()
                .map(|(msg, _)| msg)
                .filter(|msg| msg.xid == xid),
            _ => None,
        };
        if let Some(
            msg @ RpcMsg {
                body: MsgBody::Reply(r),
                ..
            },
        ) = rpc.or(from_chunk.as_ref())
        {
            t.rec.reply_status = Some(reply_status(r));
            if let ReplyBody::Accepted {
                stat: AcceptStat::Success,
                results,
                ..
            } = r
            {
                if !backchannel {
                    let ddp = nfs::Ddp::new(chunks, msg.header_len());
                    fill_nfs_status(&mut t.rec, results, ddp);
                    if self.conns.retries.answered(m.dest.addr, &t.rec, m.ts) {
                        self.state.evictions.nfs_errors_unlinked += 1;
                    }
                }
            }
        }
    }

    /// Counts a reply on its connection and in the totals: replies, chunk
    /// bytes, latency, remote invalidations and credits. Returns, for a
    /// remote invalidation the CM exchange did not negotiate, whether the
    /// client and the server set R.
    fn count_reply(
        &mut self,
        rec: &Transaction,
        lat_ns: Option<u64>,
        invalidate: Option<u32>,
        ts: u64,
    ) -> Option<(bool, bool)> {
        let chunk_bytes: u64 = rec.chunks.iter().map(|s| s.bytes_moved).sum();
        let conn = rec.connection;
        let backchannel = rec.backchannel;
        let bucket = lat_ns.map(crate::histogram::log2_us_slot);
        let points = self.limits.credit_points;
        let mut not_negotiated = None;
        if let Some(c) = self.state.connections.get_mut(&conn) {
            c.replies += 1;
            c.chunk_bytes += chunk_bytes;
            c.chunk_bytes_cut += u64::from(rec.cut);
            if let Some(slot) = bucket.and_then(|b| c.latency_log2_us.get_mut(b)) {
                *slot += 1;
            }
            if invalidate.is_some() {
                c.remote_invalidations += 1;
                if let Some(n) = c.negotiated {
                    if !n.remote_invalidation {
                        let client_r = v1(c.client_private).is_some_and(|p| p.remote_invalidate);
                        let server_r = v1(c.server_private).is_some_and(|p| p.remote_invalidate);
                        not_negotiated = Some((client_r, server_r));
                    }
                }
            }
            if !backchannel {
                c.credit_update(ts, points);
            }
        }
        self.state.totals.replies += 1;
        self.state.totals.chunk_bytes += chunk_bytes;
        self.state.totals.chunk_bytes_cut += u64::from(rec.cut);
        if invalidate.is_some() {
            self.state.totals.remote_invalidations += 1;
        }
        not_negotiated
    }

    /// Completes a transaction with its reply message.
    fn finish_txn(
        &mut self,
        mut t: Box<Txn>,
        m: &Message<'_>,
        invalidate: Option<u32>,
        out: &mut Vec<Finding>,
    ) {
        let conn = t.rec.connection;
        let xid = t.rec.xid;
        let rec = &mut t.rec;
        rec.reply_frame = Some(m.frame);
        rec.reply_ts_ns = Some(m.ts);
        // Every mark seen so far came before this reply: one at or after the
        // call came while the call was outstanding. O(1), whatever the marks.
        let c = self.state.connections.get(&conn);
        rec.congested = c
            .and_then(|c| c.congestion.last_ts_ns)
            .is_some_and(|l| l >= rec.call_ts_ns);
        rec.loss_delayed = c
            .and_then(|c| c.last_loss_ts_ns)
            .is_some_and(|l| l >= rec.call_ts_ns);
        rec.reply_len = Some(u32::try_from(m.total).unwrap_or(u32::MAX));
        // A reply stamped before its call: the clock went backwards, and no
        // latency can be told (0 would be a lie).
        let lat_ns = m.ts.checked_sub(rec.call_ts_ns);
        rec.latency_us = lat_ns.map(|l| l as f64 / 1000.0);
        rec.app_latency_us =
            m.ts.checked_sub(rec.first_call_ts_ns)
                .map(|l| l as f64 / 1000.0);
        let cap = self.config.max_ladder_steps;
        rec.step(
            cap,
            m.frame,
            m.ts,
            rec.backchannel,
            StepWhat::ReplySend {
                bytes: m.total,
                invalidate,
            },
        );
        round_trips_and_phases(&mut t, m.ts);
        let invalidated = invalidate.map(|rkey| invalidated(&mut t.rec, rkey));
        let not_negotiated = self.count_reply(&t.rec, lat_ns, invalidate, m.ts);
        let sent = checks::ReplySent {
            xid,
            call_frame: t.rec.call_frame,
            call_ts_ns: t.rec.call_ts_ns,
            reply_frame: m.frame,
            reply_ts_ns: m.ts,
            invalidated,
            not_negotiated,
        };
        for v in checks::on_reply_sent(&sent) {
            t.rec.anomalies.push(v.kind);
            self.raise(out, v, vec![m.frame], Some(conn), Some(xid));
        }
        out.push(Finding::Transaction(Box::new(t.rec)));
    }
}

/// Round trips (draft-dnoveck-nfsv4-rpcrdma-rtissues section 2.2) and the
/// phases of a transaction whose reply was sent at `reply_ts`.
fn round_trips_and_phases(t: &mut Txn, reply_ts: u64) {
    let rec = &mut t.rec;
    let read = t.first_read_ts.is_some() || rec.call_transfer != Transfer::Inline;
    let wrote = t.first_write_ts.is_some() || rec.reply_transfer == Transfer::ReplyChunk;
    rec.round_trips = 1 + u8::from(read) + u8::from(wrote);
    rec.responder_interrupts = 1 + u8::from(read) + u8::from(wrote);
    let first_op = [t.first_read_ts, t.first_write_ts]
        .into_iter()
        .flatten()
        .min();
    let last_op = [t.last_read_ts, t.last_write_ts]
        .into_iter()
        .flatten()
        .max();
    rec.phases = Phases {
        until_first_rdma_ns: first_op.unwrap_or(reply_ts).checked_sub(rec.call_ts_ns),
        read_ns: t
            .first_read_ts
            .zip(t.last_read_ts)
            .and_then(|(a, b)| b.checked_sub(a)),
        write_ns: t
            .first_write_ts
            .zip(t.last_write_ts)
            .and_then(|(a, b)| b.checked_sub(a)),
        reply_after_rdma_ns: last_op.and_then(|l| reply_ts.checked_sub(l)),
    };
}

/// Marks the segments of `rec` a Send With Invalidate of `rkey` released;
/// says whether one of them is that key's (`None`: the call's lists were
/// cut, and may hold it).
fn invalidated(rec: &mut Transaction, rkey: u32) -> (u32, Option<bool>) {
    rec.remote_invalidated_rkey = Some(rkey);
    let mut owned = false;
    for s in rec.chunks.iter_mut().filter(|s| s.handle == rkey) {
        s.remotely_invalidated = true;
        owned = true;
    }
    (rkey, (!rec.cut).then_some(owned))
}

/// The lengths a reply's lists report, lined up with the segments its call
/// advertised: the responder returns the write list with the lengths it
/// wrote (RFC 8166 3.4.6), and the reply chunk with the reply's.
fn reported_lengths(rec: &mut Transaction, chunks: Chunks<'_>) {
    // The responder returns the write list with the lengths it wrote
    // (RFC 8166 3.4.6); line them up with the call's segments.
    let reported: Vec<Vec<u32>> = chunks
        .write_list()
        .map(|w| w.segments().map(|s| s.length).collect())
        .collect();
    let mut index_in_chunk: HashMap<u32, usize> = HashMap::new();
    for s in rec.chunks.iter_mut().filter(|s| s.kind == ChunkKind::Write) {
        let j = index_in_chunk.entry(s.chunk).or_insert(0);
        s.reported_length = reported
            .get(s.chunk as usize)
            .and_then(|c| c.get(*j))
            .copied();
        *j += 1;
    }
    let mut moved_by_chunk: HashMap<u32, u64> = HashMap::new();
    for s in rec.chunks.iter().filter(|s| s.kind == ChunkKind::Write) {
        *moved_by_chunk.entry(s.chunk).or_default() +=
            s.bytes_moved + u64::from(s.reported_length.unwrap_or(0));
    }
    rec.unused_write_chunks = rec
        .write_chunks
        .map(|_| moved_by_chunk.values().filter(|&&v| v == 0).count() as u32);
    if let Some(rc) = chunks.reply_chunk() {
        let lens: Vec<u32> = rc.segments().map(|s| s.length).collect();
        for (s, len) in rec
            .chunks
            .iter_mut()
            .filter(|s| s.kind == ChunkKind::Reply)
            .zip(lens)
        {
            s.reported_length = Some(len);
        }
    }
}

/// The transaction a call message starts: how the call travelled, the
/// chunks it advertised, its RPC and NFS fields, its first ladder step.
fn call_record(d: &Decoded<'_, '_>, anomalies: Vec<Kind>, ladder_cap: usize) -> Transaction {
    let Decoded {
        m,
        conn,
        backchannel,
        xid,
        credits,
        proc,
        chunks: seen,
        header_len,
        rpc,
    } = *d;
    let chunks = seen.unwrap_or_default();
    let header_bytes = m.bytes.get(..header_len.unwrap_or(m.bytes.len()));
    let header = CallHeader::Wire(header_bytes.unwrap_or_default().into());
    let mut rec = Transaction {
        backchannel,
        call_transfer: match seen {
            Some(c) if c.has_position_zero() => Transfer::LongCall,
            Some(c) if c.read_count() > 0 => Transfer::ReadChunks,
            Some(_) => Transfer::Inline,
            // RDMA_NOMSG says where the call went even when its lists are cut.
            None if proc == Some(Proc::Nomsg) => Transfer::LongCall,
            None => Transfer::Unknown,
        },
        call_len: u32::try_from(m.total).unwrap_or(u32::MAX),
        credits_requested: credits,
        anomalies,
        write_chunks: seen.map(|c| c.write_count() as u32),
        empty_write_chunks: seen.map(|c| c.write_list().filter(|w| w.is_empty()).count() as u32),
        cut: seen.is_none(),
        ..Transaction::new(Origin::Wire, conn, xid, m.frame, m.ts, header)
    };
    if let Some(
        msg @ RpcMsg {
            body: MsgBody::Call(c),
            ..
        },
    ) = rpc
    {
        let ddp = nfs::Ddp::new(chunks, msg.header_len());
        fill_call(&mut rec, c.prog, c.vers, c.proc, c.args, ddp);
    }
    advertise(&mut rec, chunks);
    rec.step(
        ladder_cap,
        m.frame,
        m.ts,
        !backchannel,
        StepWhat::CallSend {
            bytes: m.total,
            invalidate: m.invalidate,
        },
    );
    rec
}

/// The operation's one ladder: the earlier transmission's steps, the step
/// that says it was sent again, then this transmission's, each from the
/// first transmission (as the application's wait is counted).
fn merge_ladders(first: &Transaction, rec: &mut Transaction, m: &Message<'_>, cap: usize) {
    let shift = m.ts.saturating_sub(first.first_call_ts_ns);
    let mine = std::mem::take(&mut rec.ladder);
    let mut omitted = first.ladder_omitted.saturating_add(rec.ladder_omitted);
    let mut ladder = first.ladder.clone();
    let again = LadderStep {
        frame: m.frame,
        offset_ns: shift,
        from_client: true,
        what: StepWhat::SentAgain {
            from: first.connection,
            on: rec.connection,
        },
    };
    let later = mine.into_iter().map(|mut s| {
        s.offset_ns = s.offset_ns.saturating_add(shift);
        s
    });
    for s in std::iter::once(again).chain(later) {
        Ladder::add(&mut ladder, &mut omitted, cap, s);
    }
    rec.ladder = ladder;
    rec.ladder_omitted = omitted;
}

/// The chunk segments a call offers, in list order: read, write, reply.
fn advertise(rec: &mut Transaction, chunks: Chunks<'_>) {
    for r in chunks.read_list() {
        rec.chunks.push(SegmentUse::advertised(
            ChunkKind::Read,
            0,
            Some(r.position),
            r.segment,
        ));
    }
    for (i, w) in chunks.write_list().enumerate() {
        for seg in w.segments() {
            rec.chunks.push(SegmentUse::advertised(
                ChunkKind::Write,
                i as u32,
                None,
                seg,
            ));
        }
    }
    if let Some(rc) = chunks.reply_chunk() {
        for seg in rc.segments() {
            rec.chunks
                .push(SegmentUse::advertised(ChunkKind::Reply, 0, None, seg));
        }
    }
}

#[cfg(test)]
mod tests {
    use rdma_dissectors::rpcrdma::Segment;

    use super::*;

    fn txn(call_transfer: Transfer, reply_transfer: Transfer) -> Txn {
        let header = CallHeader::Wire(Vec::new().into());
        Txn {
            rec: Transaction {
                call_transfer,
                reply_transfer,
                ..Transaction::new(Origin::Wire, ConnId(1), 7, 1, 1_000, header)
            },
            seq: 0,
            cost: 0,
            first_read_ts: None,
            last_read_ts: None,
            first_write_ts: None,
            last_write_ts: None,
            reply_head: None,
        }
    }

    /// An inline call and reply take one round trip; a Long Call's read
    /// and the reply's writes one each, and the phases split the latency
    /// at the RDMA operations.
    #[test]
    fn round_trips_and_phases_count_the_rdma_operations() {
        let mut t = txn(Transfer::Inline, Transfer::Inline);
        round_trips_and_phases(&mut t, 5_000);
        assert_eq!(
            (t.rec.round_trips, t.rec.phases.until_first_rdma_ns),
            (1, Some(4_000))
        );
        let mut t = txn(Transfer::LongCall, Transfer::WriteChunks);
        t.first_read_ts = Some(1_500);
        t.last_read_ts = Some(2_000);
        t.first_write_ts = Some(3_000);
        t.last_write_ts = Some(3_500);
        round_trips_and_phases(&mut t, 4_000);
        let p = t.rec.phases;
        assert_eq!(t.rec.round_trips, 3);
        assert_eq!(
            (
                p.until_first_rdma_ns,
                p.read_ns,
                p.write_ns,
                p.reply_after_rdma_ns
            ),
            (Some(500), Some(500), Some(500), Some(500))
        );
    }

    /// Send With Invalidate marks the segments of the key it names; a key
    /// none of them has is foreign unless the call's lists were cut.
    #[test]
    fn invalidation_marks_the_segments_of_its_key() {
        let mut t = txn(Transfer::Inline, Transfer::WriteChunks);
        let seg = Segment {
            handle: 0x42,
            length: 4096,
            offset: 0,
        };
        t.rec
            .chunks
            .push(SegmentUse::advertised(ChunkKind::Write, 0, None, seg));
        assert_eq!(invalidated(&mut t.rec, 0x42), (0x42, Some(true)));
        assert!(t.rec.chunks[0].remotely_invalidated);
        assert_eq!(invalidated(&mut t.rec, 0x43), (0x43, Some(false)));
        t.rec.cut = true;
        assert_eq!(invalidated(&mut t.rec, 0x43), (0x43, None));
        assert_eq!(t.rec.remote_invalidated_rkey, Some(0x43));
    }
}
