//! Transactions from kernel probe events: the probe-side twin of the
//! engine's wire correlation, pure and deterministic (time only from events).
//!
//! ```text
//!  client (xprtrdma_*), keyed by RPC task:
//!    chunk_read/write/reply ─► marshal(xid) ─► post_send ─► reply(xid, credits)
//!                                                 ─► mr_reminv(handle) ─► decode_seg(len)  ─► Transaction
//!  server (svcrdma_*), keyed by receive completion, then by nfsd thread:
//!    wc_recv(cid) ─► decode_rseg/wseg(cid) ─► decode_rqst(cid, xid, credits)
//!      ─► post_read_chunk ─► wc_read ─► encode_wseg ─► post_write_chunk ─► post_send(inv_rkey) ─► Transaction
//! ```
//!
//! It emits the engine's own [`Finding`] types so the reports, the JSON
//! schemas and the TUI take them unchanged; the lead can fold this into
//! `engine` later. Frame numbers in these transactions are probe record
//! sequence numbers. What the probes cannot know stays unknown: the client
//! side never sees the credits it requested (0), the server side never sees
//! the credits it granted (`None`).

use std::collections::{HashMap, VecDeque};

use crate::engine::model::Phases;
use crate::engine::probe::{ChunkType, Cid, Probe, ProbeEvent, SegKind, TaskKey};
use crate::engine::{
    Anomaly, CallHeader, ChunkKind, ConnId, Finding, Kind, LadderStep, Origin, SegmentUse,
    Transaction, Transfer,
};

/// Kernel-side connection labels remembered at once.
const MAX_KERNEL_CONNS: usize = 4096;

/// Caps and timing.
#[derive(Debug, Clone, Copy)]
pub struct CorrelateConfig {
    /// Calls tracked at once per side (the oldest is closed out beyond this).
    pub max_outstanding: usize,
    /// After a reply, how long to wait for the invalidation and
    /// decode events that follow it before emitting the transaction, ns.
    pub close_grace_ns: u64,
    /// Ladder steps kept per transaction.
    pub max_ladder_steps: usize,
}

impl Default for CorrelateConfig {
    fn default() -> Self {
        CorrelateConfig {
            max_outstanding: 65536,
            close_grace_ns: 20_000_000,
            max_ladder_steps: 64,
        }
    }
}

/// Counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CorrelateStats {
    /// Events handled.
    pub events: u64,
    /// Transactions emitted from client probes.
    pub client_transactions: u64,
    /// Transactions emitted from server probes.
    pub server_transactions: u64,
    /// Calls closed out by the cap.
    pub evicted: u64,
    /// Client re-marshals of a task (retransmissions).
    pub remarshals: u64,
}

#[derive(Debug, Clone, Default)]
struct ClientCall {
    first_seq: u64,
    marshal: Option<(u64, u64)>, // (seq, ts)
    xid: u32,
    rtype: Option<ChunkType>,
    wtype: Option<ChunkType>,
    call_len: u32,
    in_flight: u32,
    segs: Vec<SegmentUse>,
    sent_ts: Option<u64>,
    reply: Option<(u64, u64, u32)>, // (seq, ts, credits)
    deadline: u64,
    remote_inv: Option<u32>,
    ladder: Ladder,
}

#[derive(Debug, Clone, Default)]
struct ServerCall {
    seq: u64,
    ts: u64,
    xid: u32,
    cq_id: u32,
    vers: u32,
    proc: u32,
    credits: u32,
    hdrlen: u32,
    segs: Vec<SegmentUse>,
    first_read: Option<u64>,
    last_read: Option<u64>,
    first_write: Option<u64>,
    last_write: Option<u64>,
    ladder: Ladder,
}

/// The probe-side correlator.
#[derive(Debug, Default)]
pub struct Correlator {
    cfg: CorrelateConfig,
    conns: HashMap<(bool, u32), ConnId>,
    tasks: HashMap<TaskKey, ClientCall>,
    task_order: VecDeque<TaskKey>,
    recv_ts: HashMap<Cid, u64>,
    recv_order: VecDeque<Cid>,
    recv_segs: HashMap<Cid, Vec<SegmentUse>>,
    threads: HashMap<u32, ServerCall>,
    chunk_ctx: HashMap<Cid, u32>,
    chunk_order: VecDeque<Cid>,
    /// Counters.
    pub stats: CorrelateStats,
    /// CM private data seen by the kprobes: (connect or accept, bytes).
    pub private_data: Vec<(ebpf_common::KprobeId, Vec<u8>)>,
    /// The id the next kernel-side connection gets; the engine shares its
    /// own counter through this so wire and probe connections never collide.
    pub(crate) next_conn: u32,
}

fn seg_use(kind: SegKind, handle: u32, length: u32, offset: u64, chunk: u32) -> SegmentUse {
    let (kind, position) = match kind {
        SegKind::Read { position } => (ChunkKind::Read, Some(position)),
        SegKind::Write => (ChunkKind::Write, None),
        SegKind::Reply => (ChunkKind::Reply, None),
    };
    SegmentUse {
        kind,
        chunk,
        position,
        handle,
        length,
        offset,
        bytes_moved: 0,
        reported_length: None,
        frames: Vec::new(),
        remotely_invalidated: false,
    }
}

/// Ladder steps of one call, capped.
#[derive(Debug, Clone, Default)]
struct Ladder {
    steps: Vec<LadderStep>,
    omitted: u32,
}

impl Ladder {
    fn step(
        &mut self,
        cap: usize,
        base_ts: u64,
        seq: u64,
        ts: u64,
        from_client: bool,
        what: String,
    ) {
        if self.steps.len() >= cap {
            self.omitted += 1;
            return;
        }
        self.steps.push(LadderStep {
            frame: seq,
            offset_ns: ts.saturating_sub(base_ts),
            from_client,
            what: what.into(),
        });
    }
}

impl Correlator {
    /// A correlator with `cfg`.
    pub fn new(cfg: CorrelateConfig) -> Correlator {
        Correlator {
            cfg,
            ..Correlator::default()
        }
    }

    fn conn(&mut self, server: bool, key: u32) -> ConnId {
        // Every reconnect brings new completion queues: over days the map
        // would only grow. Ids are labels, so forgetting them all is safe
        // (a connection seen again gets a new id).
        if self.conns.len() >= MAX_KERNEL_CONNS && !self.conns.contains_key(&(server, key)) {
            self.conns.clear();
        }
        let next = &mut self.next_conn;
        *self.conns.entry((server, key)).or_insert_with(|| {
            let id = ConnId(*next);
            *next += 1;
            id
        })
    }

    /// Handles one probe event; findings go to `out` as they complete.
    pub fn handle(&mut self, p: &Probe, out: &mut Vec<Finding>) {
        self.stats.events += 1;
        let (seq, ts, tid) = (p.meta.seq, p.meta.ts_ns, p.meta.tid);
        self.expire(ts, out);
        match &p.event {
            // ---------------------------------------------------- client
            ProbeEvent::ClientChunk {
                task,
                kind,
                handle,
                length,
                offset,
            } => {
                let c = self.task_entry(*task, seq, out);
                if c.marshal.is_some() {
                    // Chunks after a marshal: the task is being marshalled again.
                    c.segs.clear();
                    c.marshal = None;
                    c.ladder = Ladder::default();
                }
                let chunk = c.segs.iter().filter(|s| s.kind == ChunkKind::Write).count() as u32;
                let chunk = if matches!(kind, SegKind::Write) {
                    chunk
                } else {
                    0
                };
                c.segs
                    .push(seg_use(*kind, *handle, *length, *offset, chunk));
            }
            ProbeEvent::Marshal {
                task,
                xid,
                rtype,
                wtype,
                hdrlen,
                xdrlen,
            } => {
                let in_flight = self
                    .tasks
                    .iter()
                    .filter(|(k, c)| {
                        k.client_id == task.client_id && c.marshal.is_some() && c.reply.is_none()
                    })
                    .count() as u32
                    + 1;
                let cap = self.cfg.max_ladder_steps;
                let remarshal = self.tasks.get(task).is_some_and(|c| c.marshal.is_some());
                if remarshal {
                    self.stats.remarshals += 1;
                }
                let c = self.task_entry(*task, seq, out);
                c.marshal = Some((seq, ts));
                c.xid = *xid;
                c.rtype = Some(*rtype);
                c.wtype = Some(*wtype);
                c.call_len = hdrlen.unwrap_or(0) + xdrlen.unwrap_or(0);
                c.in_flight = in_flight;
                let segs = c.segs.len();
                c.ladder.step(
                    cap,
                    ts,
                    seq,
                    ts,
                    true,
                    format!(
                        "marshal xid {xid:#010x} rtype {rtype:?} wtype {wtype:?}, {segs} segments"
                    ),
                );
            }
            ProbeEvent::ClientPostSend {
                task: Some(task), ..
            } => {
                let cap = self.cfg.max_ladder_steps;
                if let Some(c) = self.tasks.get_mut(task) {
                    if c.sent_ts.is_none() {
                        c.sent_ts = Some(ts);
                    }
                    let base = c.marshal.map_or(ts, |m| m.1);
                    c.ladder.step(cap, base, seq, ts, true, "post_send".into());
                }
            }
            ProbeEvent::Reply { task, xid, credits } => {
                let cap = self.cfg.max_ladder_steps;
                let grace = self.cfg.close_grace_ns;
                match self.tasks.get_mut(task) {
                    Some(c) if c.marshal.is_some() && c.xid == *xid => {
                        c.reply = Some((seq, ts, *credits));
                        c.deadline = ts.saturating_add(grace);
                        let base = c.marshal.map_or(ts, |m| m.1);
                        c.ladder.step(
                            cap,
                            base,
                            seq,
                            ts,
                            false,
                            format!("reply credits {credits}"),
                        );
                    }
                    _ => {
                        let connection = Some(self.conn(false, task.client_id));
                        out.push(Finding::Anomaly(Box::new(Anomaly {
                            kind: Kind::ReplyWithoutCall,
                            frames: vec![seq],
                            connection,
                            xid: Some(*xid),
                            message: format!(
                                "client probes: reply to xid {xid:#010x} (task {}@{}) whose marshal was not seen",
                                task.task_id, task.client_id
                            ),
                        })));
                    }
                }
            }
            ProbeEvent::RemoteInv { task, handle } => {
                let cap = self.cfg.max_ladder_steps;
                if let Some(c) = self.tasks.get_mut(task) {
                    c.remote_inv = Some(*handle);
                    for s in c.segs.iter_mut().filter(|s| s.handle == *handle) {
                        s.remotely_invalidated = true;
                    }
                    let base = c.marshal.map_or(ts, |m| m.1);
                    c.ladder.step(
                        cap,
                        base,
                        seq,
                        ts,
                        false,
                        format!("remote invalidation of rkey {handle:#x}"),
                    );
                }
            }
            ProbeEvent::LocalInv { task, handle } => {
                let cap = self.cfg.max_ladder_steps;
                if let Some(c) = self.tasks.get_mut(task) {
                    let base = c.marshal.map_or(ts, |m| m.1);
                    c.ladder.step(
                        cap,
                        base,
                        seq,
                        ts,
                        true,
                        format!("local invalidation of rkey {handle:#x}"),
                    );
                }
            }
            ProbeEvent::DecodeSeg { handle, length, .. } => {
                if let Some(s) = self
                    .tasks
                    .values_mut()
                    .filter(|c| c.reply.is_some())
                    .flat_map(|c| c.segs.iter_mut())
                    .find(|s| {
                        s.handle == *handle
                            && s.kind != ChunkKind::Read
                            && s.reported_length.is_none()
                    })
                {
                    s.reported_length = Some(*length);
                    s.bytes_moved = u64::from(*length);
                }
            }
            // ---------------------------------------------------- server
            ProbeEvent::Completion {
                event, cid, bytes, ..
            } => match event.as_str() {
                "svcrdma_wc_recv" => {
                    if self.recv_order.len() >= self.cfg.max_outstanding {
                        if let Some(old) = self.recv_order.pop_front() {
                            self.recv_ts.remove(&old);
                            self.recv_segs.remove(&old);
                        }
                    }
                    self.recv_ts.insert(*cid, ts);
                    self.recv_order.push_back(*cid);
                }
                "svcrdma_wc_read" | "svcrdma_wc_write" => {
                    if let Some(t) = self.chunk_ctx.get(cid).copied() {
                        let cap = self.cfg.max_ladder_steps;
                        if let Some(s) = self.threads.get_mut(&t) {
                            let read = event == "svcrdma_wc_read";
                            if read {
                                s.last_read = Some(ts);
                            } else {
                                s.last_write = Some(ts);
                            }
                            let b = bytes.map(|b| format!(" {b} bytes")).unwrap_or_default();
                            s.ladder
                                .step(cap, s.ts, seq, ts, read, format!("{event} done{b}"));
                        }
                    }
                }
                _ => {}
            },
            ProbeEvent::ServerDecodeSeg {
                cid,
                kind,
                handle,
                length,
                offset,
            } => {
                let v = self.recv_segs.entry(*cid).or_default();
                let chunk = if matches!(kind, SegKind::Write) {
                    v.iter().filter(|s| s.kind == ChunkKind::Write).count() as u32
                } else {
                    0
                };
                if v.len() < 256 {
                    v.push(seg_use(*kind, *handle, *length, *offset, chunk));
                }
            }
            ProbeEvent::DecodeRqst {
                cid,
                xid,
                vers,
                proc,
                credits,
                hdrlen,
            } => {
                if let Some(prev) = self.threads.remove(&tid) {
                    self.finish_server(prev, None, out);
                }
                let call_ts = self.recv_ts.get(cid).copied().unwrap_or(ts);
                let segs = self.recv_segs.remove(cid).unwrap_or_default();
                let mut s = ServerCall {
                    seq,
                    ts: call_ts,
                    xid: *xid,
                    cq_id: cid.cq_id,
                    vers: *vers,
                    proc: *proc,
                    credits: *credits,
                    hdrlen: hdrlen.unwrap_or(0),
                    segs,
                    ..ServerCall::default()
                };
                let cap = self.cfg.max_ladder_steps;
                let what = format!(
                    "decode_rqst xid {xid:#010x} vers {vers} proc {proc} credits {credits}"
                );
                s.ladder.step(cap, call_ts, seq, ts, true, what);
                if self.threads.len() >= self.cfg.max_outstanding {
                    self.stats.evicted += 1;
                } else {
                    self.threads.insert(tid, s);
                }
            }
            ProbeEvent::PostChunk {
                kind,
                cid,
                sqecount,
            } => {
                let cap = self.cfg.max_ladder_steps;
                if let Some(s) = self.threads.get_mut(&tid) {
                    match kind {
                        SegKind::Read { .. } => {
                            s.first_read.get_or_insert(ts);
                        }
                        _ => {
                            s.first_write.get_or_insert(ts);
                        }
                    }
                    let n = sqecount.map(|n| format!(" ({n} WRs)")).unwrap_or_default();
                    let what = match kind {
                        SegKind::Read { .. } => "RDMA Read",
                        SegKind::Write => "RDMA Write (write chunk)",
                        SegKind::Reply => "RDMA Write (reply chunk)",
                    };
                    s.ladder
                        .step(cap, s.ts, seq, ts, false, format!("post {what}{n}"));
                    if self.chunk_order.len() >= self.cfg.max_outstanding {
                        if let Some(old) = self.chunk_order.pop_front() {
                            self.chunk_ctx.remove(&old);
                        }
                    }
                    self.chunk_ctx.insert(*cid, tid);
                    self.chunk_order.push_back(*cid);
                }
            }
            ProbeEvent::EncodeWseg { handle, length, .. } => {
                if let Some(s) = self.threads.get_mut(&tid) {
                    if let Some(seg) = s.segs.iter_mut().find(|g| {
                        g.handle == *handle
                            && g.kind != ChunkKind::Read
                            && g.reported_length.is_none()
                    }) {
                        seg.reported_length = Some(*length);
                        seg.bytes_moved = u64::from(*length);
                    }
                }
            }
            ProbeEvent::ServerPostSend { inv_rkey, .. } => {
                if let Some(s) = self.threads.remove(&tid) {
                    self.finish_server(s, Some((seq, ts, *inv_rkey)), out);
                }
            }
            ProbeEvent::PrivateData { which, bytes } if self.private_data.len() < 1024 => {
                self.private_data.push((*which, bytes.clone()));
            }
            _ => {}
        }
    }

    /// Time passes (live mode): replies whose grace period ended are emitted.
    pub fn tick(&mut self, ts_ns: u64, out: &mut Vec<Finding>) {
        self.expire(ts_ns, out);
    }

    /// The source ended: everything still open is emitted, unanswered calls
    /// with a `call_without_reply` anomaly.
    pub fn end(&mut self, out: &mut Vec<Finding>) {
        let keys: Vec<TaskKey> = self.task_order.drain(..).collect();
        for k in keys {
            if let Some(c) = self.tasks.remove(&k) {
                self.finish_client(k, c, out);
            }
        }
        let mut threads: Vec<(u32, ServerCall)> = self.threads.drain().collect();
        threads.sort_by_key(|(_, s)| s.seq);
        for (_, s) in threads {
            self.finish_server(s, None, out);
        }
    }

    fn task_entry(&mut self, task: TaskKey, seq: u64, out: &mut Vec<Finding>) -> &mut ClientCall {
        if !self.tasks.contains_key(&task) {
            if self.tasks.len() >= self.cfg.max_outstanding {
                while let Some(old) = self.task_order.pop_front() {
                    if let Some(c) = self.tasks.remove(&old) {
                        self.stats.evicted += 1;
                        self.finish_client(old, c, out);
                        break;
                    }
                }
            }
            self.task_order.push_back(task);
        }
        // A task that already has a reply and starts again is a new call.
        if self.tasks.get(&task).is_some_and(|c| c.reply.is_some()) {
            if let Some(c) = self.tasks.remove(&task) {
                self.finish_client(task, c, out);
            }
            self.task_order.push_back(task);
        }
        self.tasks.entry(task).or_insert_with(|| ClientCall {
            first_seq: seq,
            ..ClientCall::default()
        })
    }

    fn expire(&mut self, now: u64, out: &mut Vec<Finding>) {
        if !self
            .tasks
            .values()
            .any(|c| c.reply.is_some() && c.deadline < now)
        {
            return;
        }
        let mut done: Vec<TaskKey> = self
            .tasks
            .iter()
            .filter(|(_, c)| c.reply.is_some() && c.deadline < now)
            .map(|(k, _)| *k)
            .collect();
        done.sort_by_key(|k| self.tasks.get(k).map_or(0, |c| c.first_seq));
        for k in done {
            if let Some(c) = self.tasks.remove(&k) {
                self.task_order.retain(|t| *t != k);
                self.finish_client(k, c, out);
            }
        }
    }

    fn finish_client(&mut self, task: TaskKey, c: ClientCall, out: &mut Vec<Finding>) {
        let Some((call_seq, call_ts)) = c.marshal else {
            return; // chunks registered, never marshalled: nothing to report
        };
        let connection = self.conn(false, task.client_id);
        self.stats.client_transactions += 1;
        let call_transfer = match c.rtype {
            Some(ChunkType::ReadList) => Transfer::ReadChunks,
            Some(ChunkType::LongCall) => Transfer::LongCall,
            _ => Transfer::Inline,
        };
        let reply_transfer = match (c.reply, c.wtype) {
            (None, _) => Transfer::None,
            (Some(_), Some(ChunkType::WriteList)) => Transfer::WriteChunks,
            (Some(_), Some(ChunkType::ReplyChunk)) => {
                // The server may answer inline when the reply fits.
                if c.segs
                    .iter()
                    .any(|s| s.kind == ChunkKind::Reply && s.reported_length.unwrap_or(0) > 0)
                {
                    Transfer::ReplyChunk
                } else {
                    Transfer::Inline
                }
            }
            (Some(_), _) => Transfer::Inline,
        };
        let mut anomalies = Vec::new();
        if let Some(k) = c.remote_inv {
            if !c.segs.iter().any(|s| s.handle == k) {
                anomalies.push(Kind::InvalidatedForeignStag);
                out.push(Finding::Anomaly(Box::new(Anomaly {
                    kind: Kind::InvalidatedForeignStag,
                    frames: vec![call_seq],
                    connection: Some(connection),
                    xid: Some(c.xid),
                    message: format!("client probes: reply to xid {:#010x} invalidated rkey {k:#x}, not one of its segments", c.xid),
                })));
            }
        }
        if c.reply.is_none() {
            anomalies.push(Kind::CallWithoutReply);
            out.push(Finding::Anomaly(Box::new(Anomaly {
                kind: Kind::CallWithoutReply,
                frames: vec![call_seq],
                connection: Some(connection),
                xid: Some(c.xid),
                message: format!("client probes: call xid {:#010x} got no reply", c.xid),
            })));
        }
        let reads = c.segs.iter().any(|s| s.kind == ChunkKind::Read);
        let writes = c
            .segs
            .iter()
            .any(|s| s.kind != ChunkKind::Read && s.bytes_moved > 0);
        let latency = c
            .reply
            .map(|r| r.1.saturating_sub(c.sent_ts.unwrap_or(call_ts)) as f64 / 1e3);
        let t = Transaction {
            origin: Origin::ClientProbes,
            connection,
            xid: c.xid,
            backchannel: false,
            call_frame: call_seq,
            call_ts_ns: call_ts,
            reply_frame: c.reply.map(|r| r.0),
            reply_ts_ns: c.reply.map(|r| r.1),
            program: None,
            program_name: None,
            version: None,
            procedure: None,
            proc: None,
            call_transfer,
            reply_transfer,
            call_len: c.call_len,
            reply_len: None,
            latency_us: latency,
            credits_requested: 0,
            credits_granted: c.reply.map(|r| r.2),
            in_flight_at_call: c.in_flight,
            chunks: c.segs,
            remote_invalidated_rkey: c.remote_inv,
            round_trips: 1 + u8::from(reads) + u8::from(writes),
            responder_interrupts: 1 + u8::from(reads),
            phases: Phases::default(),
            reply_status: None,
            anomalies,
            ladder: c.ladder.steps,
            ladder_omitted: c.ladder.omitted,
            call_header: CallHeader::Text(format!(
                "client probes: task {}@{} rtype {:?} wtype {:?}",
                task.task_id,
                task.client_id,
                c.rtype.unwrap_or(ChunkType::Inline),
                c.wtype.unwrap_or(ChunkType::Inline)
            )),
            write_chunks: 0,
            empty_write_chunks: 0,
            unused_write_chunks: 0,
        };
        out.push(Finding::Transaction(Box::new(t)));
    }

    fn finish_server(
        &mut self,
        mut s: ServerCall,
        reply: Option<(u64, u64, Option<u32>)>,
        out: &mut Vec<Finding>,
    ) {
        let connection = self.conn(true, s.cq_id);
        self.stats.server_transactions += 1;
        let mut anomalies = Vec::new();
        let mut push = |kind: Kind, message: String, out: &mut Vec<Finding>| {
            anomalies.push(kind);
            out.push(Finding::Anomaly(Box::new(Anomaly {
                kind,
                frames: vec![s.seq],
                connection: Some(connection),
                xid: Some(s.xid),
                message,
            })));
        };
        if s.vers != 1 {
            push(
                Kind::VersionMismatch,
                format!(
                    "server probes: call xid {:#010x} has rdma_vers {}",
                    s.xid, s.vers
                ),
                out,
            );
        }
        match s.proc {
            2 => push(
                Kind::MsgpUsed,
                format!("server probes: call xid {:#010x} is RDMA_MSGP", s.xid),
                out,
            ),
            3 => push(
                Kind::DoneUsed,
                format!("server probes: call xid {:#010x} is RDMA_DONE", s.xid),
                out,
            ),
            4 => push(
                Kind::ErrorFromRequester,
                format!(
                    "server probes: RDMA_ERROR from the client, xid {:#010x}",
                    s.xid
                ),
                out,
            ),
            p if p > 4 => push(
                Kind::BadProc,
                format!("server probes: call xid {:#010x} has rdma_proc {p}", s.xid),
                out,
            ),
            _ => {}
        }
        let inv = reply.and_then(|r| r.2);
        if let Some(k) = inv {
            for g in s.segs.iter_mut().filter(|g| g.handle == k) {
                g.remotely_invalidated = true;
            }
            if !s.segs.iter().any(|g| g.handle == k) {
                push(
                    Kind::InvalidatedForeignStag,
                    format!("server probes: reply to xid {:#010x} invalidates rkey {k:#x}, not one of its segments", s.xid),
                    out,
                );
            }
        }
        if reply.is_none() {
            push(
                Kind::CallWithoutReply,
                format!("server probes: call xid {:#010x} was never answered", s.xid),
                out,
            );
        }
        for g in s.segs.iter_mut().filter(|g| g.kind == ChunkKind::Read) {
            if s.last_read.is_some() {
                g.bytes_moved = u64::from(g.length);
            }
        }
        let reply_ts = reply.map(|r| r.1);
        if let Some((seq, ts, inv)) = reply {
            let what = inv.map_or("post_send".to_string(), |k| {
                format!("post_send with invalidate rkey {k:#x}")
            });
            s.ladder
                .step(self.cfg.max_ladder_steps, s.ts, seq, ts, false, what);
        }
        let reads = s.first_read.is_some();
        let writes = s.first_write.is_some();
        let first_rdma = s.first_read.or(s.first_write);
        let last_rdma = s.last_write.or(s.last_read);
        let phases = Phases {
            until_first_rdma_ns: first_rdma.or(reply_ts).map(|t| t.saturating_sub(s.ts)),
            read_ns: s
                .first_read
                .zip(s.last_read)
                .map(|(a, b)| b.saturating_sub(a)),
            write_ns: s
                .first_write
                .zip(s.last_write)
                .map(|(a, b)| b.saturating_sub(a)),
            reply_after_rdma_ns: last_rdma.zip(reply_ts).map(|(a, b)| b.saturating_sub(a)),
        };
        let has_write_list = s
            .segs
            .iter()
            .any(|g| g.kind == ChunkKind::Write && g.reported_length.unwrap_or(0) > 0);
        let has_reply_chunk = s
            .segs
            .iter()
            .any(|g| g.kind == ChunkKind::Reply && g.reported_length.unwrap_or(0) > 0);
        let t = Transaction {
            origin: Origin::ServerProbes,
            connection,
            xid: s.xid,
            backchannel: false,
            call_frame: s.seq,
            call_ts_ns: s.ts,
            reply_frame: reply.map(|r| r.0),
            reply_ts_ns: reply_ts,
            program: None,
            program_name: None,
            version: None,
            procedure: None,
            proc: None,
            call_transfer: if s.proc == 1 && s.segs.iter().any(|g| g.position == Some(0)) {
                Transfer::LongCall
            } else if s.segs.iter().any(|g| g.kind == ChunkKind::Read) {
                Transfer::ReadChunks
            } else {
                Transfer::Inline
            },
            reply_transfer: match reply {
                None => Transfer::None,
                Some(_) if has_reply_chunk => Transfer::ReplyChunk,
                Some(_) if has_write_list => Transfer::WriteChunks,
                Some(_) => Transfer::Inline,
            },
            call_len: s.hdrlen,
            reply_len: None,
            latency_us: reply_ts.map(|r| r.saturating_sub(s.ts) as f64 / 1e3),
            credits_requested: s.credits,
            credits_granted: None,
            in_flight_at_call: 0,
            chunks: s.segs,
            remote_invalidated_rkey: inv,
            round_trips: 1 + u8::from(reads) + u8::from(writes),
            responder_interrupts: 1 + u8::from(reads),
            phases,
            reply_status: None,
            anomalies,
            ladder: s.ladder.steps,
            ladder_omitted: s.ladder.omitted,
            call_header: CallHeader::Text(format!(
                "server probes: rdma_vers {} rdma_proc {} rdma_credit {} hdrlen {}",
                s.vers, s.proc, s.credits, s.hdrlen
            )),
            write_chunks: 0,
            empty_write_chunks: 0,
            unused_write_chunks: 0,
        };
        out.push(Finding::Transaction(Box::new(t)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::ebpf::ProbeMeta;

    fn p(seq: u64, ts: u64, tid: u32, event: ProbeEvent) -> Probe {
        Probe {
            meta: ProbeMeta {
                seq,
                ts_ns: ts,
                cpu: 0,
                tid,
            },
            event,
        }
    }

    const T: TaskKey = TaskKey {
        task_id: 0x17,
        client_id: 4,
    };

    fn txns(out: &[Finding]) -> Vec<&Transaction> {
        out.iter()
            .filter_map(|f| match f {
                Finding::Transaction(t) => Some(&**t),
                Finding::Anomaly(_) => None,
            })
            .collect()
    }

    /// A READ with a write chunk answered by Send With Invalidate, as the
    /// client's tracepoints show it (v42-reminv lab scenario, abridged).
    #[test]
    fn client_read_with_remote_invalidation() {
        let mut c = Correlator::new(CorrelateConfig::default());
        let mut out = Vec::new();
        let evs = [
            ProbeEvent::ClientChunk {
                task: T,
                kind: SegKind::Write,
                handle: 0xc0b,
                length: 4096,
                offset: 0x85036f450c1e1000,
            },
            ProbeEvent::ClientChunk {
                task: T,
                kind: SegKind::Reply,
                handle: 0xc0c,
                length: 256,
                offset: 0x1000,
            },
            ProbeEvent::Marshal {
                task: T,
                xid: 0x9bc0454e,
                rtype: ChunkType::Pullup,
                wtype: ChunkType::WriteList,
                hdrlen: Some(64),
                xdrlen: Some(120),
            },
            ProbeEvent::ClientPostSend {
                task: Some(T),
                cid: None,
            },
            ProbeEvent::Reply {
                task: T,
                xid: 0x9bc0454e,
                credits: 128,
            },
            ProbeEvent::RemoteInv {
                task: T,
                handle: 0xc0b,
            },
            ProbeEvent::DecodeSeg {
                handle: 0xc0b,
                length: 4096,
                offset: 0x85036f450c1e1000,
            },
        ];
        for (i, e) in evs.into_iter().enumerate() {
            c.handle(
                &p(i as u64 + 1, 1_000_000 + i as u64 * 10_000, 40, e),
                &mut out,
            );
        }
        assert!(out.is_empty(), "held for the grace period");
        c.tick(1_000_000 + 30_000_000, &mut out);
        let t = txns(&out);
        assert_eq!(t.len(), 1);
        let t = t[0];
        assert_eq!(t.xid, 0x9bc0454e);
        assert_eq!(t.credits_granted, Some(128));
        assert_eq!(t.remote_invalidated_rkey, Some(0xc0b));
        assert_eq!(t.reply_transfer, Transfer::WriteChunks);
        assert_eq!(t.chunks.len(), 2);
        assert!(t.chunks[0].remotely_invalidated);
        assert_eq!(t.chunks[0].reported_length, Some(4096));
        assert_eq!(t.call_len, 184);
        // post_send at +30 µs, reply at +40 µs: 10 µs on the wire and in the server.
        assert_eq!(t.latency_us, Some(10.0));
        assert!(t.anomalies.is_empty());
        assert_eq!(c.stats.client_transactions, 1);
    }

    #[test]
    fn client_unanswered_and_foreign_invalidation() {
        let mut c = Correlator::new(CorrelateConfig::default());
        let mut out = Vec::new();
        let t2 = TaskKey {
            task_id: 2,
            client_id: 4,
        };
        c.handle(
            &p(
                1,
                10,
                1,
                ProbeEvent::Marshal {
                    task: T,
                    xid: 1,
                    rtype: ChunkType::Inline,
                    wtype: ChunkType::Inline,
                    hdrlen: None,
                    xdrlen: None,
                },
            ),
            &mut out,
        );
        c.handle(
            &p(
                2,
                20,
                1,
                ProbeEvent::Marshal {
                    task: t2,
                    xid: 2,
                    rtype: ChunkType::Inline,
                    wtype: ChunkType::Inline,
                    hdrlen: None,
                    xdrlen: None,
                },
            ),
            &mut out,
        );
        c.handle(
            &p(
                3,
                30,
                1,
                ProbeEvent::Reply {
                    task: t2,
                    xid: 2,
                    credits: 0,
                },
            ),
            &mut out,
        );
        c.handle(
            &p(
                4,
                31,
                1,
                ProbeEvent::RemoteInv {
                    task: t2,
                    handle: 0xdead,
                },
            ),
            &mut out,
        );
        c.handle(
            &p(
                5,
                40,
                1,
                ProbeEvent::Reply {
                    task: TaskKey {
                        task_id: 9,
                        client_id: 4,
                    },
                    xid: 9,
                    credits: 1,
                },
            ),
            &mut out,
        );
        c.end(&mut out);
        let kinds: Vec<Kind> = out
            .iter()
            .filter_map(|f| match f {
                Finding::Anomaly(a) => Some(a.kind),
                Finding::Transaction(_) => None,
            })
            .collect();
        assert!(kinds.contains(&Kind::ReplyWithoutCall));
        assert!(kinds.contains(&Kind::CallWithoutReply));
        assert!(kinds.contains(&Kind::InvalidatedForeignStag));
        let t = txns(&out);
        assert_eq!(t.len(), 2);
        assert_eq!(
            t[1].in_flight_at_call, 2,
            "task 2 was marshalled while task 0x17 was outstanding"
        );
    }

    /// A WRITE with a read chunk on the server: the nfsd thread decodes,
    /// pulls the data with RDMA Read, and replies.
    #[test]
    fn server_write_with_read_chunk() {
        let mut c = Correlator::new(CorrelateConfig::default());
        let mut out = Vec::new();
        let rc = Cid { cq_id: 4, cid: 51 };
        let sc = Cid { cq_id: 3, cid: 82 };
        let nfsd = 353;
        let evs = [
            (
                0,
                ProbeEvent::Completion {
                    event: "svcrdma_wc_recv".into(),
                    cid: rc,
                    status: None,
                    bytes: Some(200),
                },
            ),
            (
                nfsd,
                ProbeEvent::ServerDecodeSeg {
                    cid: rc,
                    kind: SegKind::Read { position: 132 },
                    handle: 0x18d8,
                    length: 131072,
                    offset: 0xa8c0454e0cf3a000,
                },
            ),
            (
                nfsd,
                ProbeEvent::DecodeRqst {
                    cid: rc,
                    xid: 0xa8c0454e,
                    vers: 1,
                    proc: 0,
                    credits: 128,
                    hdrlen: Some(52),
                },
            ),
            (
                nfsd,
                ProbeEvent::PostChunk {
                    kind: SegKind::Read { position: 0 },
                    cid: sc,
                    sqecount: Some(14),
                },
            ),
            (
                0,
                ProbeEvent::Completion {
                    event: "svcrdma_wc_read".into(),
                    cid: sc,
                    status: None,
                    bytes: Some(131072),
                },
            ),
            (
                nfsd,
                ProbeEvent::ServerPostSend {
                    cid: Cid { cq_id: 3, cid: 90 },
                    inv_rkey: None,
                },
            ),
        ];
        for (i, (tid, e)) in evs.into_iter().enumerate() {
            c.handle(&p(i as u64 + 1, 1_000 * (i as u64 + 1), tid, e), &mut out);
        }
        let t = txns(&out);
        assert_eq!(t.len(), 1);
        let t = t[0];
        assert_eq!(t.xid, 0xa8c0454e);
        assert_eq!(t.credits_requested, 128);
        assert_eq!(t.call_ts_ns, 1_000, "call time is the receive completion");
        assert_eq!(t.call_transfer, Transfer::ReadChunks);
        assert_eq!(t.chunks[0].handle, 0x18d8);
        assert_eq!(t.chunks[0].bytes_moved, 131072);
        assert_eq!(t.round_trips, 2);
        assert_eq!(t.phases.read_ns, Some(1_000));
        assert_eq!(t.latency_us, Some(5.0));
        assert_eq!(c.stats.server_transactions, 1);
    }

    #[test]
    fn server_reply_with_invalidate_and_write_chunk() {
        let mut c = Correlator::new(CorrelateConfig::default());
        let mut out = Vec::new();
        let rc = Cid { cq_id: 4, cid: 53 };
        let evs = [
            ProbeEvent::ServerDecodeSeg {
                cid: rc,
                kind: SegKind::Write,
                handle: 0x18d7,
                length: 131072,
                offset: 0x1000,
            },
            ProbeEvent::DecodeRqst {
                cid: rc,
                xid: 7,
                vers: 1,
                proc: 0,
                credits: 64,
                hdrlen: None,
            },
            ProbeEvent::EncodeWseg {
                cid: Cid { cq_id: 3, cid: 72 },
                handle: 0x18d7,
                length: 131072,
                offset: 0x1000,
            },
            ProbeEvent::PostChunk {
                kind: SegKind::Write,
                cid: Cid { cq_id: 3, cid: 106 },
                sqecount: None,
            },
            ProbeEvent::ServerPostSend {
                cid: Cid { cq_id: 3, cid: 72 },
                inv_rkey: Some(0x18d7),
            },
        ];
        for (i, e) in evs.into_iter().enumerate() {
            c.handle(&p(i as u64 + 1, 10 + i as u64, 352, e), &mut out);
        }
        let t = txns(&out);
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].remote_invalidated_rkey, Some(0x18d7));
        assert!(t[0].chunks[0].remotely_invalidated);
        assert_eq!(t[0].chunks[0].reported_length, Some(131072));
        assert_eq!(t[0].reply_transfer, Transfer::WriteChunks);
        assert!(t[0].anomalies.is_empty());
    }

    #[test]
    fn bounded_outstanding_calls() {
        let mut c = Correlator::new(CorrelateConfig {
            max_outstanding: 4,
            ..CorrelateConfig::default()
        });
        let mut out = Vec::new();
        for i in 0..100u32 {
            let task = TaskKey {
                task_id: i,
                client_id: 1,
            };
            c.handle(
                &p(
                    u64::from(i) + 1,
                    u64::from(i),
                    1,
                    ProbeEvent::Marshal {
                        task,
                        xid: i,
                        rtype: ChunkType::Inline,
                        wtype: ChunkType::Inline,
                        hdrlen: None,
                        xdrlen: None,
                    },
                ),
                &mut out,
            );
        }
        assert!(c.tasks.len() <= 4);
        assert_eq!(c.stats.evicted, 96);
    }
}
