//! The server's kernel (`svcrdma_*` tracepoints), keyed by receive
//! completion, then by nfsd thread:
//!
//! ```text
//!  RecvCompleted(cid) ─► ServerDecodeSeg(cid) ─► DecodeRqst(cid, xid, credits)
//!    ─► SvcProcess(xid, names) ─► PostChunk(Read) ─► ReadCompleted ─► EncodeWseg
//!    ─► PostChunk(Write) ─► WriteCompleted ─► ServerPostSend(inv_rkey) ─► Transaction
//! ```

use super::event::{Cid, Completion, ProbeEvent, ProbeMeta, SegKind};
use super::names::RpcName;
use super::{advertised, Correlator};
use crate::findings::{About, Sink};
use crate::keys::{ConnIds, KernelConnKey};
use crate::model::{KernelTimes, Ladder, Phases, StepWhat};
use crate::{CallHeader, ChunkKind, ConnId, Kind, Origin, SegmentUse, Transaction, Transfer};

/// Where the segments an nfsd thread decodes wait for their call when the
/// kernel's events carry no completion id (Linux 5.10): a key no receive
/// completion has (cq ids are small counters).
fn by_thread(tid: u32) -> Cid {
    Cid {
        cq_id: u32::MAX,
        cid: tid as i32,
    }
}

/// A call an nfsd thread is serving, from its decoding to its reply.
#[derive(Debug, Clone, Default)]
pub(super) struct ServerCall {
    pub(super) seq: u64,
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
    name: Option<RpcName>,
    execute_us: Option<u64>,
    ladder: Ladder,
}

impl Correlator {
    /// The arms of [`Correlator::handle`] for the server's events.
    pub(super) fn server_event(
        &mut self,
        ids: &mut ConnIds,
        meta: ProbeMeta,
        event: &ProbeEvent,
        out: &mut Sink<'_>,
    ) {
        let (seq, ts, tid) = (meta.seq, meta.ts_ns, meta.tid);
        match event {
            ProbeEvent::RecvCompleted(c) => self.call_arrived(c.cid, ts),
            ProbeEvent::ReadCompleted(c) => self.chunk_done(c, true, seq, ts),
            ProbeEvent::WriteCompleted(c) => self.chunk_done(c, false, seq, ts),
            ProbeEvent::ServerDecodeSeg {
                cid,
                kind,
                handle,
                length,
                offset,
            } => {
                let key = cid.unwrap_or_else(|| by_thread(tid));
                self.call_segment(key, *kind, (*handle, *length, *offset));
            }
            ProbeEvent::DecodeRqst {
                cid,
                xid,
                vers,
                proc,
                credits,
                hdrlen,
            } => {
                let call = ServerCall {
                    seq,
                    xid: *xid,
                    cq_id: cid.cq_id,
                    vers: *vers,
                    proc: *proc,
                    credits: *credits,
                    hdrlen: hdrlen.unwrap_or(0),
                    ..ServerCall::default()
                };
                self.call_decoded(ids, meta, *cid, call, out);
            }
            ProbeEvent::PostChunk {
                kind,
                cid,
                sqecount,
            } => self.chunk_posted(meta, *kind, *cid, *sqecount),
            ProbeEvent::EncodeWseg { handle, length, .. } => {
                if let Some(s) = self.threads.get_mut(&tid) {
                    s.segment_filled(*handle, *length);
                }
            }
            ProbeEvent::SvcProcess {
                xid,
                version,
                proc,
                service,
                procedure,
            } => {
                let name = RpcName {
                    program: service.clone(),
                    version: *version,
                    proc: *proc,
                    procedure: procedure.clone(),
                };
                self.dispatched(ids, tid, *xid, name, out);
            }
            ProbeEvent::SvcStats { xid, execute_us } => {
                // Fired by the thread about to send the reply, before the
                // transport posts it: the thread's call, if the XID agrees.
                if let Some(s) = self.threads.get_mut(&tid).filter(|s| s.xid == *xid) {
                    s.execute_us = *execute_us;
                }
            }
            ProbeEvent::ServerPostSend { inv_rkey, .. } => {
                if let Some(s) = self.threads.remove(&tid) {
                    self.finish_server(ids, s, Some((seq, ts, *inv_rkey)), out);
                }
            }
            _ => {}
        }
    }

    /// A call arrived in the receive `cid`; its segments and its decoding follow.
    fn call_arrived(&mut self, cid: Cid, ts: u64) {
        if self.recv_order.len() >= self.cfg.max_outstanding {
            if let Some(old) = self.recv_order.pop_front() {
                self.recv_ts.remove(&old);
                self.recv_segs.remove(&old);
            }
        }
        self.recv_ts.insert(cid, ts);
        self.recv_order.push_back(cid);
    }

    /// A segment of the call in the receive `key` (or on the thread
    /// decoding it), as the call advertised it.
    fn call_segment(&mut self, key: Cid, kind: SegKind, (handle, length, offset): (u32, u32, u64)) {
        let v = self.recv_segs.entry(key).or_default();
        let chunk = if matches!(kind, SegKind::Write) {
            v.iter().filter(|s| s.kind == ChunkKind::Write).count() as u32
        } else {
            0
        };
        if v.len() < 256 {
            v.push(advertised(kind, handle, length, offset, chunk));
        }
    }

    /// The nfsd thread `meta.tid` decoded `call`'s transport header (from
    /// the receive `cid`): the thread serves it from now on.
    fn call_decoded(
        &mut self,
        ids: &mut ConnIds,
        meta: ProbeMeta,
        cid: Cid,
        mut call: ServerCall,
        out: &mut Sink<'_>,
    ) {
        let (seq, ts, tid) = (meta.seq, meta.ts_ns, meta.tid);
        if let Some(prev) = self.threads.remove(&tid) {
            self.set_aside(ids, prev, out);
        }
        // The same XID decoded again is the client sending the call
        // again (after a reconnect): an earlier attempt still
        // waiting for its Reads will not be answered.
        if let Some(stale) = self.take_server_call(call.xid) {
            self.finish_server(ids, stale, None, out);
        }
        call.ts = self.recv_ts.get(&cid).copied().unwrap_or(ts);
        call.segs = self.recv_segs.remove(&cid).unwrap_or_default();
        // Linux 5.10 decodes the segments on the nfsd thread with
        // no completion id: they are the thread's.
        if let Some(more) = self.recv_segs.remove(&by_thread(tid)) {
            call.segs.extend(more);
        }
        let what = StepWhat::DecodeRqst {
            xid: call.xid,
            vers: call.vers,
            proc: call.proc,
            credits: call.credits,
        };
        call.ladder
            .step(self.cfg.max_ladder_steps, call.ts, seq, ts, true, what);
        if self.threads.len() >= self.cfg.max_outstanding {
            self.stats.evicted += 1;
        } else {
            self.threads.insert(tid, call);
        }
    }

    /// The thread's call posted RDMA Reads or Writes, in the chunk context `cid`.
    fn chunk_posted(
        &mut self,
        meta: ProbeMeta,
        kind: Option<SegKind>,
        cid: Cid,
        sqecount: Option<u32>,
    ) {
        let (seq, ts) = (meta.seq, meta.ts_ns);
        let cap = self.cfg.max_ladder_steps;
        let Some(s) = self.threads.get_mut(&meta.tid) else {
            return;
        };
        // Linux 5.10 does not say which: Reads are pulled before
        // the call is dispatched, Writes after.
        let kind = kind.unwrap_or(if s.name.is_none() {
            SegKind::Read { position: 0 }
        } else {
            SegKind::Write
        });
        match kind {
            SegKind::Read { .. } => {
                s.first_read.get_or_insert(ts);
            }
            _ => {
                s.first_write.get_or_insert(ts);
            }
        }
        let what = StepWhat::PostChunk {
            kind,
            work_requests: sqecount,
        };
        s.ladder.step(cap, s.ts, seq, ts, false, what);
        let xid = s.xid;
        if self.chunk_order.len() >= self.cfg.max_outstanding {
            if let Some(old) = self.chunk_order.pop_front() {
                self.chunk_ctx.remove(&old);
            }
        }
        self.chunk_ctx.insert(cid, xid);
        self.chunk_order.push_back(cid);
    }

    /// The server dispatches the call `xid` on thread `tid`, which names it.
    fn dispatched(
        &mut self,
        ids: &mut ConnIds,
        tid: u32,
        xid: u32,
        name: RpcName,
        out: &mut Sink<'_>,
    ) {
        // The nfsd thread that decoded the call dispatches it, or
        // (6.12, a call that pulled a Read chunk) whichever thread
        // resumes it: the call moves to that thread. An XID found
        // nowhere is a call over another transport.
        if self.threads.get(&tid).is_none_or(|s| s.xid != xid) {
            if let Some(call) = self.take_server_call(xid) {
                if let Some(other) = self.threads.insert(tid, call) {
                    self.set_aside(ids, other, out);
                }
            }
        }
        if let Some(s) = self.threads.get_mut(&tid).filter(|s| s.xid == xid) {
            s.name = Some(name);
        }
    }

    /// A chunk context's RDMA Reads (`read`) or Writes completed: a step
    /// of the call the context serves.
    fn chunk_done(&mut self, c: &Completion, read: bool, seq: u64, ts: u64) {
        let Some(xid) = self.chunk_ctx.get(&c.cid).copied() else {
            return;
        };
        let cap = self.cfg.max_ladder_steps;
        if let Some(s) = self.server_call_mut(xid) {
            if read {
                s.last_read = Some(ts);
            } else {
                s.last_write = Some(ts);
            }
            let what = StepWhat::ChunkDone {
                read,
                bytes: c.bytes,
            };
            s.ladder.step(cap, s.ts, seq, ts, read, what);
        }
    }

    /// The call `xid` wherever it waits: parked, or still on a thread.
    fn server_call_mut(&mut self, xid: u32) -> Option<&mut ServerCall> {
        if self.parked.contains_key(&xid) {
            return self.parked.get_mut(&xid);
        }
        self.threads.values_mut().find(|s| s.xid == xid)
    }

    /// Takes the call `xid` out of wherever it waits.
    fn take_server_call(&mut self, xid: u32) -> Option<ServerCall> {
        if let Some(s) = self.parked.remove(&xid) {
            return Some(s);
        }
        let tid = self
            .threads
            .iter()
            .find_map(|(t, s)| (s.xid == xid).then_some(*t))?;
        self.threads.remove(&tid)
    }

    /// A thread leaves `call` without a reply: a call still pulling its
    /// Read chunk, not yet dispatched, waits for the thread that will
    /// resume it (Linux 6.12); any other was abandoned and ends now.
    fn set_aside(&mut self, ids: &mut ConnIds, call: ServerCall, out: &mut Sink<'_>) {
        if call.name.is_some() || call.first_read.is_none() {
            self.finish_server(ids, call, None, out);
            return;
        }
        while self.parked.len() >= self.cfg.max_outstanding {
            let Some(old) = self.parked_order.pop_front() else {
                break;
            };
            if let Some(s) = self.parked.remove(&old) {
                self.stats.evicted += 1;
                self.finish_server(ids, s, None, out);
            }
        }
        // Resumed calls leave their XID behind in the order; drop those
        // before the queue outgrows the table.
        if self.parked_order.len() >= 2 * self.cfg.max_outstanding.max(1) {
            let parked = &self.parked;
            self.parked_order.retain(|x| parked.contains_key(x));
        }
        self.parked_order.push_back(call.xid);
        if let Some(s) = self.parked.insert(call.xid, call) {
            self.finish_server(ids, s, None, out);
        }
    }

    /// `s` ends, answered by `reply` (`(seq, ts, R_Key invalidated)`) or
    /// not: its anomalies, then its transaction.
    pub(super) fn finish_server(
        &mut self,
        ids: &mut ConnIds,
        mut s: ServerCall,
        reply: Option<(u64, u64, Option<u32>)>,
        out: &mut Sink<'_>,
    ) {
        let connection = self.conn(ids, KernelConnKey::Server { cq_id: s.cq_id });
        self.stats.server_transactions += 1;
        let inv = reply.and_then(|r| r.2);
        if let Some(k) = inv {
            for g in s.segs.iter_mut().filter(|g| g.handle == k) {
                g.remotely_invalidated = true;
            }
        }
        let mut anomalies = Vec::new();
        for (kind, message) in s.anomalies(inv, reply.is_some()) {
            anomalies.push(kind);
            let about = About {
                frames: vec![s.seq],
                connection: Some(connection),
                xid: Some(s.xid),
                at: None,
            };
            out.anomaly((kind, Origin::ServerProbes), about, message);
        }
        for g in s.segs.iter_mut().filter(|g| g.kind == ChunkKind::Read) {
            if s.last_read.is_some() {
                g.bytes_moved = u64::from(g.length);
            }
        }
        if let Some((seq, ts, inv)) = reply {
            let what = StepWhat::PostSend { invalidate: inv };
            s.ladder
                .step(self.cfg.max_ladder_steps, s.ts, seq, ts, false, what);
        }
        let t = s.into_transaction(connection, reply, anomalies);
        out.probe_transaction(t);
    }
}

impl ServerCall {
    /// The reply filled `length` bytes of the write or reply segment `handle`.
    fn segment_filled(&mut self, handle: u32, length: u32) {
        if let Some(seg) = self.segs.iter_mut().find(|g| {
            g.handle == handle && g.kind != ChunkKind::Read && g.reported_length.is_none()
        }) {
            seg.reported_length = Some(length);
            seg.bytes_moved = u64::from(length);
        }
    }

    /// What the server's kernel shows wrong with the call, in the order
    /// reported: its version, its procedure, the R_Key its reply
    /// invalidates (`inv`), and no reply at all.
    fn anomalies(&self, inv: Option<u32>, replied: bool) -> Vec<(Kind, String)> {
        let xid = self.xid;
        let mut found = Vec::new();
        if self.vers != 1 {
            found.push((
                Kind::VersionMismatch,
                format!(
                    "server probes: call xid {xid:#010x} has rdma_vers {}",
                    self.vers
                ),
            ));
        }
        match self.proc {
            2 => found.push((
                Kind::MsgpUsed,
                format!("server probes: call xid {xid:#010x} is RDMA_MSGP"),
            )),
            3 => found.push((
                Kind::DoneUsed,
                format!("server probes: call xid {xid:#010x} is RDMA_DONE"),
            )),
            4 => found.push((
                Kind::ErrorFromRequester,
                format!("server probes: RDMA_ERROR from the client, xid {xid:#010x}"),
            )),
            p if p > 4 => found.push((
                Kind::BadProc,
                format!("server probes: call xid {xid:#010x} has rdma_proc {p}"),
            )),
            _ => {}
        }
        if let Some(k) = inv.filter(|k| !self.segs.iter().any(|g| g.handle == *k)) {
            found.push((
                Kind::InvalidatedForeignStag,
                format!("server probes: reply to xid {xid:#010x} invalidates rkey {k:#x}, not one of its segments"),
            ));
        }
        if !replied {
            found.push((
                Kind::CallWithoutReply,
                format!("server probes: call xid {xid:#010x} was never answered"),
            ));
        }
        found
    }

    /// How long each part of the call took, up to the reply at `reply_ts`.
    fn phases(&self, reply_ts: Option<u64>) -> Phases {
        let first_rdma = self.first_read.or(self.first_write);
        let last_rdma = self.last_write.or(self.last_read);
        Phases {
            until_first_rdma_ns: first_rdma.or(reply_ts).map(|t| t.saturating_sub(self.ts)),
            read_ns: self
                .first_read
                .zip(self.last_read)
                .map(|(a, b)| b.saturating_sub(a)),
            write_ns: self
                .first_write
                .zip(self.last_write)
                .map(|(a, b)| b.saturating_sub(a)),
            reply_after_rdma_ns: last_rdma.zip(reply_ts).map(|(a, b)| b.saturating_sub(a)),
        }
    }

    /// The transaction the server's kernel saw.
    fn into_transaction(
        mut self,
        connection: ConnId,
        reply: Option<(u64, u64, Option<u32>)>,
        anomalies: Vec<Kind>,
    ) -> Transaction {
        let reply_ts = reply.map(|r| r.1);
        let reads = self.first_read.is_some();
        let writes = self.first_write.is_some();
        let phases = self.phases(reply_ts);
        let written = |kind| {
            self.segs
                .iter()
                .any(|g| g.kind == kind && g.reported_length.unwrap_or(0) > 0)
        };
        let (has_write_list, has_reply_chunk) =
            (written(ChunkKind::Write), written(ChunkKind::Reply));
        let header = CallHeader::Text(format!(
            "server probes: {}rdma_vers {} rdma_proc {} rdma_credit {} hdrlen {}",
            self.name
                .as_ref()
                .map_or(String::new(), |n| format!("{} ", n.words())),
            self.vers,
            self.proc,
            self.credits,
            self.hdrlen
        ));
        let name = self.name.take();
        let latency_us = reply_ts
            .and_then(|r| r.checked_sub(self.ts))
            .map(|ns| ns as f64 / 1e3);
        let mut t = Transaction {
            reply_frame: reply.map(|r| r.0),
            reply_ts_ns: reply_ts,
            call_transfer: if self.proc == 1 && self.segs.iter().any(|g| g.position == Some(0)) {
                Transfer::LongCall
            } else if self.segs.iter().any(|g| g.kind == ChunkKind::Read) {
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
            call_len: self.hdrlen,
            latency_us,
            app_latency_us: latency_us,
            credits_requested: Some(self.credits),
            chunks: self.segs,
            remote_invalidated_rkey: reply.and_then(|r| r.2),
            round_trips: 1 + u8::from(reads) + u8::from(writes),
            responder_interrupts: 1 + u8::from(reads),
            phases,
            anomalies,
            ladder: self.ladder.steps,
            ladder_omitted: self.ladder.omitted,
            kernel_times: KernelTimes {
                server_execute_us: self.execute_us,
                ..KernelTimes::default()
            },
            ..Transaction::new(
                Origin::ServerProbes,
                connection,
                self.xid,
                self.seq,
                self.ts,
                header,
            )
        };
        if let Some(n) = &name {
            n.fill(&mut t);
        }
        t
    }
}
