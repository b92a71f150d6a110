//! iWARP: RPC-over-RDMA over MPA, DDP and RDMAP on TCP (RFC 5044, 5041,
//! 5040). A TCP frame of an iWARP flow goes to `tcp`'s stream of its
//! direction; what the stream delivers is read here and handed to the parts
//! RoCE uses: the MPA Request and Reply make the connection (as the CM REQ
//! and REP do), Sends become messages for `call`, and Writes, Read Requests
//! and Read Responses move chunk data through `rdma`'s segment bookkeeping,
//! matched by STag and offset (no PSNs on iWARP: a Read Request names its
//! source and sink buffers, and each response segment its sink offset).
//!
//! The TCP connection is the queue pair: an endpoint is
//! `QpKey { addr: Addr::Iwarp(ip), qpn: port }`.

use std::collections::{BTreeSet, VecDeque};
use std::net::SocketAddr;

use rdma_dissectors::ib::bth::Position;
use rdma_dissectors::iwarp::ddp::Placement;
use rdma_dissectors::iwarp::mpa::{self, CrcStatus, Fpdu, RequestReply};
use rdma_dissectors::iwarp::rdmap::{Body, Opcode, ReadRequest, Segment};
use rdma_dissectors::iwarp::NFS_RDMA_PORT;
use rdma_dissectors::rpcrdma_cm;
use rdma_dissectors::stack::Dissection;

use super::rdma::keep_reply_head;
use super::state::{Message, SegmentRef};
use super::tcp::{Delivery, FlowKey, Streams, TcpSegment};
use crate::keys::{Addr, ConnId, Map, QpKey};
use crate::model::{v1, Carries, ChunkKind, CmEvent, CmMsg, CmState, IrdOrd, Role, StepWhat};
use crate::{checks, Engine, Finding};

/// One direction of an iWARP connection, as far as this side follows it.
#[derive(Debug, Default)]
struct Direction {
    /// Inside a tagged message (an RDMA Write or Read Response) whose last
    /// segment has not come: the next tagged segment continues it.
    in_tagged: bool,
    /// The FIN was seen.
    fin: bool,
    /// Whether CRCs were negotiated for this direction.
    crc: bool,
    /// The M bit of the MPA frame this direction sent: its sender wants
    /// markers in the stream it receives, the other direction.
    wants_markers: bool,
    /// Whether the stream has delivered an MPA frame or an FPDU: until
    /// then its bytes are not known to be iWARP's.
    framed: bool,
    /// Data frames counted as not decoded while the stream had no framing:
    /// taken back when it finds some (they are then the octets a resync
    /// skipped, a capture that began mid-FPDU).
    unframed: u64,
    /// When its last segment came: the stalest direction is forgotten
    /// first when the table is full.
    last_seen: u64,
}

/// An RDMA Read Request waiting for its responses.
#[derive(Debug, Clone, Copy)]
struct PendingRead {
    req: ReadRequest,
    /// Octets of response placed so far.
    received: u64,
    target: Option<SegmentRef>,
}

/// The engine's iWARP state.
pub(crate) struct Iwarp {
    streams: Streams,
    dirs: Map<FlowKey, Direction>,
    /// The directions by the time of their last segment: the stalest is
    /// the one evicted at the cap, found without a scan.
    ages: BTreeSet<(u64, FlowKey)>,
    reads: Map<ConnId, VecDeque<PendingRead>>,
    /// What the stream delivered for the frame being handled.
    delivered: Vec<Delivery>,
}

impl Iwarp {
    /// The iWARP state, its streams holding at most `limit` octets.
    pub(crate) fn new(limit: usize) -> Self {
        let mut streams = Streams::new();
        streams.set_limit(limit);
        Iwarp {
            streams,
            dirs: Map::default(),
            ages: BTreeSet::new(),
            reads: Map::default(),
            delivered: Vec::new(),
        }
    }

    /// Octets the streams hold (for the budget's accounting).
    pub(crate) fn bytes(&self) -> usize {
        self.streams.bytes()
    }
}

/// The endpoint a socket address names.
fn endpoint(a: SocketAddr) -> QpKey {
    QpKey {
        addr: Addr::Iwarp(a.ip()),
        qpn: u32::from(a.port()),
    }
}

/// The RDMA Read queue depths of a revision 2 MPA frame (revision 1 has none).
fn ird_ord(f: &RequestReply<'_>) -> Option<IrdOrd> {
    f.enhanced.map(|e| IrdOrd {
        ird: e.ird,
        ord: e.ord,
    })
}

/// Where a DDP segment sits in its message, in the terms of an IB Send.
fn position(mo: u32, last: bool) -> Position {
    match (mo == 0, last) {
        (true, true) => Position::Only,
        (true, false) => Position::First,
        (false, true) => Position::Last,
        (false, false) => Position::Middle,
    }
}

/// What the handlers of one delivered unit need of where it came from.
#[derive(Clone, Copy)]
struct At {
    key: FlowKey,
    first_frame: u64,
    frame: u64,
    ts: u64,
}

impl Engine {
    /// A TCP frame: followed when it belongs to an iWARP flow (one opened
    /// by an MPA frame, or on NFS/RDMA's port 20049). Returns whether it did.
    pub(crate) fn iwarp_frame(
        &mut self,
        number: u64,
        ts: u64,
        d: &Dissection<'_>,
        out: &mut Vec<Finding>,
    ) -> bool {
        let (Some(ip), Some(tcp)) = (d.ip, d.tcp) else {
            return false;
        };
        let h = tcp.header;
        let key = FlowKey {
            src: SocketAddr::new(ip.source(), h.source_port),
            dst: SocketAddr::new(ip.destination(), h.destination_port),
        };
        if !self.iwarp.dirs.contains_key(&key) {
            let opens = mpa::frame_kind(tcp.payload).is_some();
            if !(opens || h.has_port(NFS_RDMA_PORT)) {
                return false;
            }
            self.make_room_for_flow();
            let d = Direction {
                last_seen: ts,
                ..Direction::default()
            };
            self.iwarp.dirs.insert(key, d);
            self.iwarp.ages.insert((ts, key));
        }
        if let Some(d) = self.iwarp.dirs.get_mut(&key) {
            if d.last_seen != ts {
                self.iwarp.ages.remove(&(d.last_seen, key));
                self.iwarp.ages.insert((ts, key));
                d.last_seen = ts;
            }
        }
        self.state.totals.rdma_frames += 1;
        self.state.totals.iwarp.frames += 1;
        let seg = TcpSegment {
            frame: number,
            ts,
            seq: h.seq,
            syn: h.syn,
            fin: h.fin,
            rst: h.rst,
            payload: tcp.payload,
            wire_len: tcp.wire_len,
        };
        if tcp.cut() {
            self.state.totals.cut_frames += 1;
        }
        let mut delivered = std::mem::take(&mut self.iwarp.delivered);
        self.iwarp.streams.segment(key, &seg, &mut delivered);
        let framed = delivered
            .iter()
            .any(|u| matches!(u, Delivery::Mpa { .. } | Delivery::Fpdu { .. }));
        let data = !tcp.payload.is_empty();
        if let Some(d) = self.iwarp.dirs.get_mut(&key) {
            let n = &mut self.state.totals.not_decoded;
            if framed && !d.framed {
                n.tcp_20049 = n.tcp_20049.saturating_sub(d.unframed);
                d.unframed = 0;
            } else if !(framed || d.framed) && data {
                // Data on port 20049 in which no MPA frame or FPDU was
                // found (yet): recognised, not decoded, and said so.
                n.tcp_20049 += 1;
                d.unframed += 1;
            }
            d.framed |= framed;
        }
        for unit in delivered.drain(..) {
            self.delivered(key, unit, out);
        }
        if h.ack {
            // What this segment acknowledges of the reverse stream: a hole
            // there below it was filled where the capture did not see it,
            // so it is a gap now rather than held until the bound.
            let reverse = key.reverse();
            self.iwarp
                .streams
                .acked(reverse, h.ack_number, number, ts, &mut delivered);
            for unit in delivered.drain(..) {
                self.delivered(reverse, unit, out);
            }
        }
        self.iwarp.delivered = delivered;
        let conn = self.qps.get(&endpoint(key.dst)).and_then(|q| q.conn);
        if conn.is_none() && data {
            self.state.totals.unassociated_frames += 1;
        }
        if ip.ecn() == rdma_dissectors::ip::ECN_CE {
            self.iwarp_congestion(number, ts, conn);
        }
        true
    }

    /// An IP CE mark on an iWARP frame, on the connection it was going to
    /// (as RoCE counts it): iWARP's only fabric signal, TCP answering it.
    #[cold]
    fn iwarp_congestion(&mut self, number: u64, ts: u64, conn: Option<ConnId>) {
        self.state.totals.congestion_frames += 1;
        let c = conn.and_then(|id| self.state.connections.get_mut(&id));
        if let Some(c) = c {
            c.congestion.note(number, ts, true, false, false, false);
        }
    }

    fn delivered(&mut self, key: FlowKey, unit: Delivery, out: &mut Vec<Finding>) {
        let n = &mut self.state.totals.iwarp;
        match unit {
            Delivery::Mpa {
                first_frame,
                frame,
                ts,
                bytes,
            } => {
                let at = At {
                    key,
                    first_frame,
                    frame,
                    ts,
                };
                self.mpa_frame(at, &bytes, out);
            }
            Delivery::Fpdu {
                first_frame,
                frame,
                ts,
                bytes,
                crc_with_markers,
            } => {
                n.fpdus += 1;
                let at = At {
                    key,
                    first_frame,
                    frame,
                    ts,
                };
                self.fpdu(at, &bytes, crc_with_markers, out);
            }
            Delivery::Gap { bytes, .. } => {
                n.gaps += 1;
                n.gap_bytes += bytes;
                self.lost_framing(key);
            }
            Delivery::Resync {
                certain, skipped, ..
            } => {
                n.resyncs += 1;
                n.resyncs_uncertain += u64::from(!certain);
                n.resync_skipped_bytes += skipped;
            }
            Delivery::Closed { frame, ts, reset } => self.tcp_closed(key, frame, ts, reset, out),
        }
    }

    /// A hole in a direction's stream: a Send it was in the middle of is
    /// not put together across it, nor a tagged message continued.
    fn lost_framing(&mut self, key: FlowKey) {
        if let Some(d) = self.iwarp.dirs.get_mut(&key) {
            d.in_tagged = false;
        }
        if let Some(q) = self.qps.get_mut(&endpoint(key.dst)) {
            let old = q.send.take();
            self.conns.prefixes.forget(old.as_ref());
        }
    }

    /// The MPA Request (a new connection, its initiator the client) or
    /// Reply (what the two sides negotiated, or a reject).
    fn mpa_frame(&mut self, at: At, bytes: &[u8], out: &mut Vec<Finding>) {
        let f = match RequestReply::parse(bytes) {
            Ok((f, _)) => f,
            Err(e) => {
                self.state.totals.not_decoded.mpa_setup += 1;
                let v = checks::iwarp::setup_malformed(at.key.src, &e);
                return self.raise(out, v, vec![at.frame], None, None);
            }
        };
        let private = f.rpcrdma().map(|(_, p)| p);
        match f.kind {
            mpa::FrameKind::Request => {
                self.state.totals.iwarp.mpa_requests += 1;
                self.mpa_request(at, &f, private, out);
            }
            mpa::FrameKind::Reply => {
                self.state.totals.iwarp.mpa_replies += 1;
                self.mpa_reply(at, &f, private, out);
            }
        }
    }

    fn mpa_request(
        &mut self,
        at: At,
        f: &RequestReply<'_>,
        private: Option<rpcrdma_cm::CmPrivateData>,
        out: &mut Vec<Finding>,
    ) {
        let (client, server) = (endpoint(at.key.src), endpoint(at.key.dst));
        let id = self.new_conn(at.ts, out);
        if let Some(c) = self.state.connections.get_mut(&id) {
            c.client = Some(client);
            c.server = Some(server);
            c.port = Some(at.key.dst.port());
            c.client_private = private;
            c.client_ird_ord = ird_ord(f);
            c.cm_state = CmState::Requested;
            c.cm_event(CmEvent {
                frame: at.first_frame,
                ts_ns: at.ts,
                message: CmMsg::MpaRequest,
                from: Role::Client,
            });
        }
        if at.key.dst.port() == NFS_RDMA_PORT || private.is_some() {
            self.carries(id, Carries::RpcRdma);
        }
        if let Some(d) = self.iwarp.dirs.get_mut(&at.key) {
            d.crc = f.crc;
            d.wants_markers = f.markers;
        }
        self.bind_qp(client, id, server.addr, out);
        self.bind_qp(server, id, client.addr, out);
    }

    fn mpa_reply(
        &mut self,
        at: At,
        f: &RequestReply<'_>,
        private: Option<rpcrdma_cm::CmPrivateData>,
        out: &mut Vec<Finding>,
    ) {
        let reverse = FlowKey {
            src: at.key.dst,
            dst: at.key.src,
        };
        // The Reply travels to the client: its endpoint owns the connection.
        let Some(id) = self.qps.get(&endpoint(at.key.dst)).and_then(|q| q.conn) else {
            return;
        };
        let Some(c) = self.state.connections.get_mut(&id) else {
            return;
        };
        c.server_private = private;
        c.server_ird_ord = ird_ord(f);
        let message = if f.reject {
            CmMsg::MpaReject
        } else {
            CmMsg::MpaReply
        };
        c.cm_event(CmEvent {
            frame: at.first_frame,
            ts_ns: at.ts,
            message,
            from: Role::Server,
        });
        if f.reject {
            c.cm_state = CmState::Rejected;
            self.state.totals.iwarp.mpa_rejects += 1;
            let v = checks::iwarp::mpa_reject(at.key.src, at.key.dst);
            return self.raise(out, v, vec![at.frame], Some(id), None);
        }
        c.cm_state = CmState::Established;
        c.negotiated = Some(rpcrdma_cm::negotiate(
            v1(c.client_private),
            v1(c.server_private),
        ));
        // RFC 8166 3.3.3: one credit until the first reply says otherwise.
        c.granted = Some(1);
        c.granted_implicit = true;
        if private.is_some() {
            self.carries(id, Carries::RpcRdma);
        }
        // RFC 5044 7.1: CRCs are used when either side asks for them; each
        // side asks for markers on what it receives.
        let request_crc = self.iwarp.dirs.get(&reverse).is_some_and(|d| d.crc);
        let crc = request_crc || f.crc;
        // The client's Request asked for markers on what the server sends
        // (`at.key`, this Reply's direction); the Reply for the client's.
        let client_wants = self
            .iwarp
            .dirs
            .get(&reverse)
            .is_some_and(|d| d.wants_markers);
        for (key, markers) in [(at.key, client_wants), (reverse, f.markers)] {
            if let Some(d) = self.iwarp.dirs.get_mut(&key) {
                d.crc = crc;
            }
            self.iwarp.streams.negotiated(key, markers, crc);
        }
    }

    /// One FPDU: its CRC checked, its DDP segment read as RDMAP and handed on.
    fn fpdu(
        &mut self,
        at: At,
        bytes: &[u8],
        crc_with_markers: Option<u32>,
        out: &mut Vec<Finding>,
    ) {
        let crc = self.iwarp.dirs.get(&at.key).is_some_and(|d| d.crc);
        let conn = self.qps.get(&endpoint(at.key.dst)).and_then(|q| q.conn);
        // With markers the CRC covered octets `bytes` lacks: the stream
        // computed it over the octets as sent.
        let fpdu = match Fpdu::parse(bytes, crc && crc_with_markers.is_none()) {
            Ok((mut f, _)) => {
                if let (true, Some(computed)) = (crc, crc_with_markers) {
                    f.crc = marked_crc(bytes, computed);
                }
                f
            }
            Err(e) => {
                let v = checks::iwarp::fpdu_malformed(at.key.src, &e);
                return self.raise(out, v, vec![at.frame], conn, None);
            }
        };
        if let Some(v) = checks::iwarp::crc(fpdu.crc, at.key.src, at.frame) {
            self.state.totals.iwarp.crc_invalid += 1;
            return self.raise(out, v, vec![at.frame], conn, None);
        }
        let seg = match Segment::parse(fpdu.ulpdu) {
            Ok(s) => s,
            Err(e) => {
                let v = checks::iwarp::segment_violation(at.key.src, at.frame, &e);
                return self.raise(out, v, vec![at.frame], conn, None);
            }
        };
        self.count_segment(&seg);
        self.segment(at, conn, &seg, out);
    }

    fn count_segment(&mut self, seg: &Segment<'_>) {
        let n = &mut self.state.totals.iwarp;
        if seg.ddp.tagged() {
            n.ddp_tagged_segments += 1;
        } else {
            n.ddp_untagged_segments += 1;
        }
        let op = opcode_index(seg.opcode);
        if let Some(s) = n.segments.get_mut(op) {
            *s += 1;
        }
        if seg.ddp.last {
            if let Some(m) = n.messages.get_mut(op) {
                *m += 1;
            }
        }
    }

    /// One DDP segment, by what its opcode moves.
    fn segment(&mut self, at: At, conn: Option<ConnId>, seg: &Segment<'_>, out: &mut Vec<Finding>) {
        let last = seg.ddp.last;
        match (seg.body, seg.ddp.placement) {
            (Body::Data(data), Placement::Untagged { mo, .. }) if seg.opcode.is_send() => {
                let m = Message {
                    bytes: data,
                    total: data.len(),
                    cut: false,
                    first_frame: at.first_frame,
                    frame: at.frame,
                    ts: at.ts,
                    src: endpoint(at.key.src).addr,
                    dest: endpoint(at.key.dst),
                    invalidate: seg.invalidate_stag,
                };
                self.send_packet(m, position(mo, last), out);
            }
            (Body::Data(data), Placement::Tagged { stag, to }) => {
                let first = self
                    .iwarp
                    .dirs
                    .get_mut(&at.key)
                    .map(|d| !std::mem::replace(&mut d.in_tagged, !last))
                    .unwrap_or(true);
                let Some(conn) = conn else { return };
                if seg.opcode == Opcode::Write {
                    self.iwarp_write(at, conn, (stag, to), data, first, out);
                } else {
                    self.iwarp_read_response(at, conn, (stag, to), data, last);
                }
            }
            (Body::ReadRequest(req), _) => {
                if let Some(conn) = conn {
                    self.iwarp_read_request(at, conn, req, out);
                }
            }
            (Body::Terminate(t), _) => {
                let v = checks::iwarp::terminate(at.key.src, &t);
                self.raise(out, v, vec![at.frame], conn, None);
            }
            _ => {}
        }
    }

    /// An RDMA Write segment: data placed into a chunk segment of an
    /// outstanding call, found by its STag and Tagged Offset.
    fn iwarp_write(
        &mut self,
        at: At,
        conn: ConnId,
        (stag, to): (u32, u64),
        data: &[u8],
        first: bool,
        out: &mut Vec<Finding>,
    ) {
        let len = data.len() as u32;
        let target = self.find_segment(conn, stag, to, len, |k| k != ChunkKind::Read);
        let Some(tg) = target else {
            if first {
                let reth = rdma_dissectors::ib::Reth {
                    va: to,
                    r_key: stag,
                    dma_length: len,
                };
                self.outside_chunk(out, at.frame, conn, "RDMA Write", reth);
            }
            return;
        };
        let cap = self.config.max_ladder_steps;
        if let Some(t) = self.add_to_segment(conn, tg, len, at.frame, at.ts, false) {
            keep_reply_head(t, tg, to, data);
            if first {
                let what = StepWhat::RdmaWrite {
                    rkey: stag,
                    va: to,
                    len,
                };
                t.rec.responder_step(cap, at.frame, at.ts, what);
            }
        }
    }

    /// An RDMA Read Request: the read chunk it fetches from (its source
    /// STag and offset), remembered until its responses come.
    fn iwarp_read_request(
        &mut self,
        at: At,
        conn: ConnId,
        req: ReadRequest,
        out: &mut Vec<Finding>,
    ) {
        let (stag, to, size) = (req.source_stag, req.source_to, req.size);
        let reth = rdma_dissectors::ib::Reth {
            va: to,
            r_key: stag,
            dma_length: size,
        };
        let target = self.read_requested(out, (at.frame, at.ts), conn, "RDMA Read", reth);
        let max = self.limits.reads_per_connection;
        if !self.iwarp.reads.contains_key(&conn)
            && self.iwarp.reads.len() >= self.limits.connections
        {
            // Connections evicted from the table leave their reads here:
            // dropped once the map is as large as the connection cap.
            let live = &self.state.connections;
            self.iwarp.reads.retain(|c, _| live.contains_key(c));
        }
        let reads = self.iwarp.reads.entry(conn).or_default();
        if reads.len() >= max {
            reads.pop_front();
            self.state.evictions.reads += 1;
        }
        reads.push_back(PendingRead {
            req,
            received: 0,
            target,
        });
    }

    /// A Read Response segment: tagged to the sink STag at the sink offset
    /// of the Read Request it answers.
    fn iwarp_read_response(
        &mut self,
        at: At,
        conn: ConnId,
        (stag, to): (u32, u64),
        data: &[u8],
        last: bool,
    ) {
        let Some(reads) = self.iwarp.reads.get_mut(&conn) else {
            return;
        };
        let answers = |r: &PendingRead| {
            r.req.sink_stag == stag
                && to >= r.req.sink_to
                && to < r.req.sink_to.saturating_add(u64::from(r.req.size.max(1)))
        };
        let Some(i) = reads.iter().position(answers) else {
            return;
        };
        let Some(r) = reads.get_mut(i) else { return };
        let first = r.received == 0;
        r.received += data.len() as u64;
        let (target, rkey) = (r.target, r.req.source_stag);
        if last {
            reads.remove(i);
        }
        if let Some(tg) = target {
            let bytes = (data.len() as u32, first, last, rkey);
            self.read_data(at.frame, at.ts, conn, tg, bytes, data);
        }
    }

    /// A FIN or RST: the first FIN starts the connection's end, the second
    /// (or a RST) ends it, and its outstanding calls are parked for the
    /// client's next connection, as after a DREP.
    fn tcp_closed(
        &mut self,
        key: FlowKey,
        frame: u64,
        ts: u64,
        reset: bool,
        out: &mut Vec<Finding>,
    ) {
        let reverse = FlowKey {
            src: key.dst,
            dst: key.src,
        };
        let peer_fin = self.iwarp.dirs.get(&reverse).is_some_and(|d| d.fin);
        if let Some(d) = self.iwarp.dirs.get_mut(&key) {
            d.fin = true;
        }
        let sender = endpoint(key.src);
        let Some(id) = self.qps.get(&sender).and_then(|q| q.conn) else {
            return self.forget_flow(key, reverse, reset || peer_fin);
        };
        let ended = reset || peer_fin;
        if let Some(c) = self.state.connections.get_mut(&id) {
            let from = if c.client == Some(sender) {
                Role::Client
            } else {
                Role::Server
            };
            let message = if reset { CmMsg::Rst } else { CmMsg::Fin };
            c.cm_event(CmEvent {
                frame,
                ts_ns: ts,
                message,
                from,
            });
            c.cm_state = if ended {
                CmState::Closed
            } else {
                CmState::Disconnecting
            };
        }
        if ended {
            let why = if reset {
                "the TCP connection was reset (RST) first"
            } else {
                "the TCP connection was closed (FIN) first"
            };
            self.close_out(id, why, true, out);
            self.iwarp.reads.remove(&id);
        }
        self.forget_flow(key, reverse, ended);
    }

    /// Keeps the directions followed under the QP cap (an iWARP endpoint
    /// stands where a QP does): at the cap, the direction whose last segment
    /// is oldest is forgotten, stream and all, and counted as a QP evicted.
    /// Flows that never close, or a flood of SYNs to port 20049, cannot grow
    /// the table; the stalest is the first of `ages`, no scan.
    fn make_room_for_flow(&mut self) {
        if self.iwarp.dirs.len() < self.limits.qps {
            return;
        }
        if let Some((_, k)) = self.iwarp.ages.pop_first() {
            self.iwarp.dirs.remove(&k);
            self.iwarp.streams.forget(k);
            // The stream state an MPA frame made for the other direction,
            // which may never have sent a segment of its own.
            if !self.iwarp.dirs.contains_key(&k.reverse()) {
                self.iwarp.streams.forget(k.reverse());
            }
            self.state.evictions.qps += 1;
        }
    }

    /// Forgets both directions' state once the connection ended.
    fn forget_flow(&mut self, key: FlowKey, reverse: FlowKey, ended: bool) {
        if ended {
            for k in [key, reverse] {
                self.iwarp.streams.forget(k);
                if let Some(d) = self.iwarp.dirs.remove(&k) {
                    self.iwarp.ages.remove(&(d.last_seen, k));
                }
            }
        }
    }
}

/// The opcode's 4-bit value (RFC 5040 table 2): the index of its counters.
fn opcode_index(op: Opcode) -> usize {
    match op {
        Opcode::Write => 0,
        Opcode::ReadRequest => 1,
        Opcode::ReadResponse => 2,
        Opcode::Send => 3,
        Opcode::SendInvalidate => 4,
        Opcode::SendSe => 5,
        Opcode::SendSeInvalidate => 6,
        Opcode::Terminate => 7,
    }
}

/// The verdict on an FPDU sent with markers: its CRC field (the last four
/// octets of `bytes`) against the CRC the stream computed over the octets
/// as sent, markers included (RFC 5044 section 4.4).
fn marked_crc(bytes: &[u8], computed: u32) -> CrcStatus {
    let Some(&field) = bytes.last_chunk::<{ mpa::CRC_LEN }>() else {
        return CrcStatus::NotNegotiated;
    };
    let found = rdma_dissectors::iwarp::crc32c::wire_value(field);
    if found == computed {
        CrcStatus::Valid
    } else {
        CrcStatus::Invalid { found, computed }
    }
}
