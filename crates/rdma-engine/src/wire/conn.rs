//! Connections: built from the CM exchange (REQ, REP, RTU, DREQ, DREP, REJ),
//! or from traffic alone when the capture starts mid-connection.

use crate::keys::Addr;

use rdma_dissectors::ib::cm::{self as ibcm, CmMessage};
use rdma_dissectors::ib::Psn;
use rdma_dissectors::rpcrdma_cm;
use rdma_dissectors::stack::Dissection;

use super::state::Txn;
use crate::checks::{iba, rfc8166};
use crate::cm;
use crate::keys::{ConnId, QpKey};
use crate::model::{v1, Carries, CmEvent, CmMsg, Role};
use crate::{Engine, Finding, Kind};

/// A CM message's frame, as far as the capture kept it.
struct CmFrame {
    /// Frame number and time.
    at: (u64, u64),
    src: Addr,
    dst: Addr,
    /// RFC 8797 private data (`None`: absent or cut).
    private: Option<rdma_dissectors::rpcrdma_cm::CmPrivateData>,
    /// Bytes of the CM message captured.
    cm_len: usize,
}

impl CmFrame {
    /// Whether the field at `offset` of `len` bytes was captured: a snap
    /// length may have cut the message, and fields past the cut read as
    /// zero and are not known (without the private data, nothing
    /// negotiated is known: its absence would mean the defaults).
    fn kept(&self, offset: usize, len: usize) -> bool {
        self.cm_len >= offset + len
    }

    /// Whether a snap length cut the message.
    fn cut(&self) -> bool {
        self.cm_len < ibcm::MESSAGE_LEN
    }
}

impl Engine {
    /// Creates a connection; at the cap, one goes: the eviction clock's
    /// next connection not seen since the clock last passed it.
    pub(crate) fn new_conn(&mut self, ts: u64, out: &mut Vec<Finding>) -> ConnId {
        if self.state.connections.len() >= self.limits.connections {
            if let Some(v) = self.conns.corr.next_to_evict(&self.state.connections) {
                self.close_out(
                    v,
                    "the connection table was full and this connection was the longest idle",
                    false,
                    out,
                );
                let c = self.conns.corr.close(&mut self.state.connections, v);
                if let Some(c) = &c {
                    self.unindex_comm_ids(c);
                }
                // Its queue pairs, found through the connection, not by a scan.
                for key in c.iter().flat_map(|c| [c.client, c.server]).flatten() {
                    if self.qps.get(&key).is_some_and(|q| q.conn == Some(v)) {
                        if let Some(q) = self.qps.remove(&key) {
                            self.drop_prefix(&q);
                        }
                    }
                }
                self.state.evictions.connections += 1;
                if self.state.evictions.connections.is_power_of_two() {
                    self.anomaly(
                        out,
                        Kind::StateEvicted,
                        vec![],
                        Some(v),
                        None,
                        format!(
                            "connection table full ({} entries, from --max-connections and --memory-limit): stopped tracking {v} ({} connections evicted so far); raise them",
                            self.limits.connections, self.state.evictions.connections
                        ),
                    );
                }
            }
        }
        let id = self.ids.new_id();
        self.conns.corr.open(&mut self.state.connections, id, ts);
        id
    }

    /// A request from `requester` to `dest`, a QP no connection owns:
    /// remembered, so that the response or ACK that answers it can pair
    /// the two QPs (connections set up out of band, as perftest, NCCL and
    /// MPI do, or whose CM exchange the capture missed).
    pub(crate) fn await_response(&mut self, requester: Addr, dest: QpKey, psn: u32) {
        /// Unpaired QPs remembered per pair of ports: QPs that never get an
        /// answer (their peer is not in the capture) must not pile up.
        const PER_PAIR: usize = 16;
        let awaiting = &mut self.conns.awaiting;
        if awaiting.len() >= self.limits.qps && !awaiting.contains_key(&(dest.addr, requester)) {
            awaiting.clear();
        }
        let v = awaiting.entry((dest.addr, requester)).or_default();
        match v.iter_mut().find(|(qpn, _)| *qpn == dest.qpn) {
            Some(e) => e.1 = psn,
            None => {
                if v.len() >= PER_PAIR {
                    v.remove(0);
                }
                v.push((dest.qpn, psn));
            }
        }
    }

    /// A response or ACK from `src` to `dest`, a QP no connection owns: if
    /// it answers a request `dest`'s port sent to one QP at `src` (its PSN
    /// is that request's, or within a READ's responses after it, and no
    /// other QP there is as close), the two QPs become one connection,
    /// without CM. Ambiguous answers pair nothing: the next one may not be.
    pub(crate) fn pair_by_response(
        &mut self,
        src: Addr,
        dest: QpKey,
        psn: Psn,
        ts: u64,
        out: &mut Vec<Finding>,
    ) -> Option<ConnId> {
        /// How far after a request its answers may run: the responses to
        /// one RDMA READ (4 MiB at a 256-byte MTU is 16384 packets).
        const SPAN: u32 = 1 << 14;
        let v = self.conns.awaiting.get(&(src, dest.addr))?;
        let mut best: Option<(u32, u32)> = None;
        let mut tie = false;
        for &(qpn, last) in v {
            let Some(last) = Psn::try_new(last) else {
                continue;
            };
            // An ACK names the latest request it covers; a READ's
            // responses run from its request's PSN on.
            let d = if psn == last || psn.is_before(last) {
                psn.distance(last)
            } else {
                last.distance(psn)
            };
            if d > SPAN {
                continue;
            }
            match best {
                Some((_, bd)) if bd == d => tie = true,
                Some((_, bd)) if bd < d => {}
                _ => {
                    best = Some((qpn, d));
                    tie = false;
                }
            }
        }
        let (qpn, _) = best.filter(|_| !tie)?;
        let responder = QpKey { addr: src, qpn };
        if let Some(v) = self.conns.awaiting.get_mut(&(src, dest.addr)) {
            v.retain(|(q, _)| *q != qpn);
            if v.is_empty() {
                self.conns.awaiting.remove(&(src, dest.addr));
            }
        }
        // The responder's QP may have a connection already (a call made
        // it, its client QP not yet known); otherwise this makes one.
        let id = match self.qps.get(&responder).and_then(|q| q.conn) {
            Some(id) => id,
            None => {
                let id = self.new_conn(ts, out);
                if let Some(c) = self.state.connections.get_mut(&id) {
                    c.server = Some(responder);
                }
                if let Some(corr) = self.conns.corr.get_mut(&id) {
                    corr.peer_addr = Some(dest.addr);
                }
                self.bind_qp(responder, id, dest.addr, out);
                id
            }
        };
        if self
            .state
            .connections
            .get(&id)
            .is_some_and(|c| c.client.is_some())
        {
            return None;
        }
        self.set_client(id, dest);
        self.bind_qp(dest, id, src, out);
        Some(id)
    }

    /// Says what `id` carries. RPC-over-RDMA, once known, stays: a Send
    /// that is not one (a stray, a damaged frame) does not undo it.
    pub(crate) fn carries(&mut self, id: ConnId, what: Carries) {
        if what == Carries::RpcRdma {
            if let Some(corr) = self.conns.corr.get_mut(&id) {
                corr.rpcrdma = true;
            }
        }
        if let Some(c) = self.state.connections.get_mut(&id) {
            if c.carries != Some(Carries::RpcRdma) {
                c.carries = Some(what);
            }
        }
    }

    /// Forgets the Send prefix a queue pair held, in the budget's count.
    pub(crate) fn drop_prefix(&mut self, q: &super::state::QpState) {
        self.conns.prefixes.forget(q.send.as_ref());
    }

    /// Points `key` at `conn`, whose other end sends from `peer` (a QP
    /// number reused by a new connection moves, and starts afresh).
    pub(crate) fn bind_qp(&mut self, key: QpKey, conn: ConnId, peer: Addr, out: &mut Vec<Finding>) {
        let q = self.qp_mut(&key, out);
        q.conn = Some(conn);
        q.peer = Some(peer);
        q.last_psn = None;
        q.last_span = None;
        q.first_psn = None;
        q.first_from_cm = false;
        q.mtu = None;
        q.far_psn = None;
        q.unconfirmed = false;
        q.write = None;
        let old = q.send.take();
        self.conns.prefixes.forget(old.as_ref());
        self.note_cut_cm(conn, key.addr, peer);
    }

    /// A CM message whose QP numbers a snap length cut cannot make its
    /// connection: it is remembered by its hosts, so that a connection found
    /// from traffic between them says its CM exchange was cut, not absent.
    pub(crate) fn cut_cm_frame(&mut self, number: u64, a: Addr, b: Addr) {
        /// Frames named per pair of hosts: enough to find them in Wireshark.
        const FRAMES: usize = 8;
        let cut = &mut self.conns.cut_cm;
        let key = (a.min(b), a.max(b));
        if cut.len() >= self.limits.connections && !cut.contains_key(&key) {
            cut.clear();
        }
        let (n, frames) = cut.entry(key).or_default();
        *n += 1;
        if frames.len() < FRAMES {
            frames.push(number);
        }
    }

    /// Marks `conn`, found from traffic between `a` and `b`, as having its
    /// CM exchange cut when cut CM messages passed between those hosts
    /// (which of them set it up is not known: they name no QP).
    fn note_cut_cm(&mut self, conn: ConnId, a: Addr, b: Addr) {
        let Some((n, frames)) = self.conns.cut_cm.get(&(a.min(b), a.max(b))) else {
            return;
        };
        if let Some(c) = self.state.connections.get_mut(&conn) {
            if c.cm_state == crate::model::CmState::NotSeen {
                c.cm_cut = true;
                c.cm_cut_messages = *n;
                c.cm_cut_frames.clone_from(frames);
            }
        }
    }

    /// Emits every outstanding call of `id` as unanswered; with
    /// `torn_down`, a call its client may send again on its next connection
    /// is parked instead, to be followed across the reconnect.
    pub(crate) fn close_out(
        &mut self,
        id: ConnId,
        why: &str,
        torn_down: bool,
        out: &mut Vec<Finding>,
    ) {
        let txns = self.drain_calls(id);
        let last_ts = self.state.totals.last_ts_ns.unwrap_or(0);
        let mut client = None;
        if let Some(c) = self.state.connections.get_mut(&id) {
            c.in_flight = 0;
            c.finish(last_ts);
            client = c.client.map(|q| q.addr);
        }
        for t in txns {
            match client {
                Some(addr) if torn_down && !t.rec.backchannel => self.park(addr, t, why, out),
                _ => self.unanswered(Box::new(t), why, None, out),
            }
        }
    }

    /// Hands out call `t` as one that got no reply, for the reason `why`,
    /// found at `at` (`None`: now).
    pub(crate) fn unanswered(
        &mut self,
        t: Box<Txn>,
        why: &str,
        at: Option<u64>,
        out: &mut Vec<Finding>,
    ) {
        let id = t.rec.connection;
        let xid = t.rec.xid;
        let frame = t.rec.call_frame;
        let proc = t.rec.procedure_label();
        let v = rfc8166::call_without_reply(&proc, xid, frame, why);
        let about = crate::findings::About {
            frames: vec![frame],
            connection: Some(id),
            xid: Some(xid),
            at,
        };
        self.raise_about(out, v, about);
        let mut rec = t.rec;
        rec.anomalies.push(Kind::CallWithoutReply);
        out.push(Finding::Transaction(Box::new(rec)));
    }

    pub(crate) fn cm_message(
        &mut self,
        number: u64,
        ts: u64,
        d: &Dissection<'_>,
        cm: CmMessage<'_>,
        out: &mut Vec<Finding>,
    ) {
        let Some((src, dst)) = Addr::of_frame(d) else {
            return;
        };
        let f = CmFrame {
            at: (number, ts),
            src,
            dst,
            private: d.rpcrdma_cm_private().map(|(_, p)| p),
            cm_len: d.mad_layers().map_or(ibcm::MESSAGE_LEN, |m| m.cm_len),
        };
        match cm {
            // Without the QP numbers there is no connection to make.
            CmMessage::Req(_) if !f.kept(ibcm::req::LOCAL_QPN, 3) => {
                self.cut_cm_frame(number, src, dst);
            }
            CmMessage::Rep(_) if !f.kept(ibcm::rep::LOCAL_QPN, 3) => {
                self.cut_cm_frame(number, src, dst);
            }
            CmMessage::Req(req) => self.cm_req(&f, &cm, &req, out),
            CmMessage::Rep(rep) => self.cm_rep(&f, &cm, &rep, out),
            CmMessage::Rtu(rtu) => {
                if let Some((id, sender)) = self.conn_by_comm_id(src, rtu.local_comm_id) {
                    self.cm_transition(id, f.at, &cm, sender, src, out);
                }
            }
            CmMessage::Rej(rej) => {
                // Sent to the side whose comm id it names: a pending REQ's
                // client, or either side of a known connection.
                let to = match self.conns.pending.get(&(dst, rej.remote_comm_id)) {
                    Some(&id) => Some((id, Role::Client)),
                    None => self.conn_by_comm_id(dst, rej.remote_comm_id),
                };
                let id = to.map(|(id, _)| id);
                if let Some((id, receiver)) = to {
                    self.cm_transition(id, f.at, &cm, receiver.peer(), src, out);
                }
                let v = iba::connection_rejected(src, dst, rej.reason.0, rej.reason.name());
                self.raise(out, v, vec![number], id, None);
            }
            CmMessage::Dreq(dreq) => {
                if let Some((id, sender)) = self.conn_by_comm_id(src, dreq.local_comm_id) {
                    self.cm_transition(id, f.at, &cm, sender, src, out);
                }
            }
            CmMessage::Drep(drep) => {
                if let Some((id, sender)) = self.conn_by_comm_id(src, drep.local_comm_id) {
                    self.cm_transition(id, f.at, &cm, sender, src, out);
                    self.close_out(id, "the connection was closed (DREQ/DREP) first", true, out);
                }
            }
            _ => {}
        }
    }

    /// A REQ: a new connection from its client's QP (or the retry of one).
    fn cm_req(
        &mut self,
        f: &CmFrame,
        cm: &CmMessage<'_>,
        req: &ibcm::CmReq<'_>,
        out: &mut Vec<Finding>,
    ) {
        let (src, ts) = (f.src, f.at.1);
        let key = (src, req.local_comm_id);
        if let Some(&id) = self.conns.pending.get(&key) {
            // A retransmitted REQ (the CM retries MADs).
            self.cm_transition(id, f.at, cm, Role::Client, src, out);
            return;
        }
        if self.conns.pending.len() >= self.limits.connections {
            self.conns.pending.clear();
        }
        let id = self.new_conn(ts, out);
        self.conns.pending.insert(key, id);
        self.cm_transition(id, f.at, cm, Role::Client, src, out);
        let client = QpKey {
            addr: src,
            qpn: req.local_qpn.get(),
        };
        let rdma_cm = req.service_id.rdma_cm();
        if let Some(c) = self.state.connections.get_mut(&id) {
            c.client = Some(client);
            c.service_id = Some(req.service_id.0);
            c.port = rdma_cm.map(|(_, port)| port);
            c.client_comm_id = Some(req.local_comm_id);
            c.client_start_psn = f
                .kept(ibcm::req::STARTING_PSN, 3)
                .then(|| req.starting_psn.get());
            c.client_private = f.private;
            c.cm_cut |= f.cut();
            c.path_mtu = f
                .kept(ibcm::req::MTU_RDC_RNR, 1)
                .then(|| ibcm::mtu_bytes(req.path_packet_payload_mtu))
                .flatten();
        }
        self.index_comm_id(id, src, req.local_comm_id);
        // The port says, when RDMA-CM made the connection: NFS
        // listens on 20049, and RFC 8797 private data is only
        // RPC-over-RDMA's. Another port may yet carry it: a
        // message that decodes as one says so.
        if rdma_cm.is_some_and(|(_, p)| p == 20049) || f.private.is_some() {
            self.carries(id, Carries::RpcRdma);
        } else if rdma_cm.is_some() {
            self.carries(id, Carries::Other);
        }
        self.bind_qp(client, id, f.dst, out);
    }

    /// A REP: the server's QP and what the peers negotiated.
    fn cm_rep(
        &mut self,
        f: &CmFrame,
        cm: &CmMessage<'_>,
        rep: &ibcm::CmRep<'_>,
        out: &mut Vec<Finding>,
    ) {
        let (src, dst) = (f.src, f.dst);
        let Some(&id) = self.conns.pending.get(&(dst, rep.remote_comm_id)) else {
            return;
        };
        let server = QpKey {
            addr: src,
            qpn: rep.local_qpn.get(),
        };
        self.cm_transition(id, f.at, cm, Role::Server, src, out);
        let server_start = f
            .kept(ibcm::rep::STARTING_PSN, 3)
            .then(|| rep.starting_psn.get());
        if let Some(c) = self.state.connections.get_mut(&id) {
            if c.server.is_some() {
                return;
            }
            c.server = Some(server);
            c.server_comm_id = Some(rep.local_comm_id);
            c.server_start_psn = server_start;
            c.server_private = f.private;
            c.cm_cut |= f.cut();
            c.negotiated = (!c.cm_cut)
                .then(|| rpcrdma_cm::negotiate(v1(c.client_private), v1(c.server_private)));
            // RFC 8166 3.3.3: one credit until the first reply says otherwise.
            c.granted = Some(1);
            c.granted_implicit = true;
        }
        self.index_comm_id(id, src, rep.local_comm_id);
        if f.private.is_some() {
            self.carries(id, Carries::RpcRdma);
        }
        self.bind_qp(server, id, dst, out);
        // A side's Starting PSN is where its receive queue starts:
        // the REQ's is the PSN of the server's first request (to
        // the client's QP), the REP's that of the client's first
        // (to the server's). So Linux's CM sets the QPs up, and so
        // every capture here shows it.
        let (client, client_start) = self
            .state
            .connections
            .get(&id)
            .map_or((None, None), |c| (c.client, c.client_start_psn));
        let starts = [(Some(server), server_start), (client, client_start)];
        for (key, start) in starts {
            if let (Some(key), Some(start)) = (key, start) {
                if let Some(q) = self.qps.get_mut(&key) {
                    q.first_psn = Some(start);
                    q.first_from_cm = true;
                }
            }
        }
    }

    /// Records `msg` from `sender` (at `src`) in frame `at.0` at time
    /// `at.1` on connection `id`, moves its CM state, and reports a message
    /// the state machine does not allow there.
    fn cm_transition(
        &mut self,
        id: ConnId,
        at: (u64, u64),
        msg: &CmMessage<'_>,
        sender: Role,
        src: Addr,
        out: &mut Vec<Finding>,
    ) {
        let (number, ts) = at;
        let Some(c) = self.state.connections.get_mut(&id) else {
            return;
        };
        if let Some(message) = cm_msg(msg) {
            c.cm_event(CmEvent {
                frame: number,
                ts_ns: ts,
                message,
                from: sender,
            });
        }
        match cm::next(c.cm_state, msg, sender) {
            Ok(s) => c.cm_state = s,
            Err(e) => {
                c.cm_state = e.then;
                let v = iba::cm_bad_transition(&e, sender, src);
                self.raise(out, v, vec![number], Some(id), None);
            }
        }
    }
}

/// The CM messages a connection's state follows; the others (MRA, SIDR,
/// LAP, APR) change nothing the timeline shows.
fn cm_msg(m: &CmMessage<'_>) -> Option<CmMsg> {
    Some(match m {
        CmMessage::Req(_) => CmMsg::Req,
        CmMessage::Rep(_) => CmMsg::Rep,
        CmMessage::Rtu(_) => CmMsg::Rtu,
        CmMessage::Rej(_) => CmMsg::Rej,
        CmMessage::Dreq(_) => CmMsg::Dreq,
        CmMessage::Drep(_) => CmMsg::Drep,
        _ => return None,
    })
}
