//! The client's kernel (`xprtrdma_*` tracepoints), keyed by RPC task:
//!
//! ```text
//!  [RpcRequest(names)] ─► ClientChunk ─► Marshal(xid) ─► ClientPostSend ─► Reply(xid, credits)
//!    ─► RemoteInv(handle) ─► DecodeSeg(len) ─► RpcStats(names, times)
//!    ─► Transaction (after a grace period)
//!
//! The live probes leave `rpc_request` in the kernel (`rpc_stats_latency`
//! names the call too, one event fewer per RPC); recorded or `--probe-events
//! all` streams may still carry it, and its name is then the call's.
//! ```

use super::event::{ChunkType, ProbeEvent, ProbeMeta, SegKind, TaskKey};
use super::names::RpcName;
use super::{advertised, Correlator};
use crate::findings::{About, Sink};
use crate::keys::{ConnIds, KernelConnKey};
use crate::model::{KernelTimes, Ladder, StepWhat};
use crate::{CallHeader, ChunkKind, Kind, Origin, SegmentUse, Transaction, Transfer};

/// A call of one RPC task, from its chunks to its reply.
#[derive(Debug, Clone, Default)]
pub(super) struct ClientCall {
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
    /// Where the analyzer's clock stood when the reply was read: the give-up
    /// (`stats_give_up_ns`) counts from here, so records read late (an
    /// analyzer behind its inputs) still find their task's end.
    reply_read_at: u64,
    deadline: u64,
    remote_inv: Option<u32>,
    name: Option<RpcName>,
    times: KernelTimes,
    /// Its task ended (`rpc_stats_latency` seen).
    ended: bool,
    ladder: Ladder,
}

impl ClientCall {
    /// The line that stands for the call's header in the transaction.
    fn header(&self, task: TaskKey) -> CallHeader {
        CallHeader::Text(format!(
            "client probes: task {}@{} {}rtype {} wtype {}",
            task.task_id,
            task.client_id,
            self.name
                .as_ref()
                .map_or(String::new(), |n| format!("{} ", n.words())),
            self.rtype.unwrap_or(ChunkType::Inline).name(),
            self.wtype.unwrap_or(ChunkType::Inline).name()
        ))
    }

    /// How the call and its reply travelled.
    fn transfers(&self) -> (Transfer, Transfer) {
        let call = match self.rtype {
            Some(ChunkType::ReadList) => Transfer::ReadChunks,
            Some(ChunkType::LongCall) => Transfer::LongCall,
            _ => Transfer::Inline,
        };
        let reply = match (self.reply, self.wtype) {
            (None, _) => Transfer::None,
            (Some(_), Some(ChunkType::WriteList)) => Transfer::WriteChunks,
            (Some(_), Some(ChunkType::ReplyChunk)) => {
                // The server may answer inline when the reply fits.
                if self
                    .segs
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
        (call, reply)
    }

    /// What the client's kernel shows wrong with the call, in the order
    /// reported: an R_Key invalidated that is not the call's, no reply.
    fn anomalies(&self) -> Vec<(Kind, String)> {
        let xid = self.xid;
        let mut found = Vec::new();
        if let Some(k) = self
            .remote_inv
            .filter(|k| !self.segs.iter().any(|s| s.handle == *k))
        {
            found.push((
                Kind::InvalidatedForeignStag,
                format!("client probes: reply to xid {xid:#010x} invalidated rkey {k:#x}, not one of its segments"),
            ));
        }
        if self.reply.is_none() {
            found.push((
                Kind::CallWithoutReply,
                format!("client probes: call xid {xid:#010x} got no reply"),
            ));
        }
        found
    }

    /// The task advertised a segment; chunks after a marshal mean the task
    /// is being marshalled again, from scratch.
    fn advertise(&mut self, kind: SegKind, handle: u32, length: u32, offset: u64) {
        if self.marshal.is_some() {
            self.segs.clear();
            self.marshal = None;
            self.ladder = Ladder::default();
        }
        let chunk = if matches!(kind, SegKind::Write) {
            self.segs
                .iter()
                .filter(|s| s.kind == ChunkKind::Write)
                .count() as u32
        } else {
            0
        };
        self.segs
            .push(advertised(kind, handle, length, offset, chunk));
    }
}

impl Correlator {
    /// The call an R_Key was registered for (events without a task, Linux
    /// 5.10): a call answered and not yet finished holds it; R_Keys are
    /// reused only once their MR is invalidated, so one call at a time does.
    fn task_of_handle(&self, handle: u32) -> Option<TaskKey> {
        self.tasks
            .iter()
            .filter(|(_, c)| c.reply.is_some())
            .find(|(_, c)| c.segs.iter().any(|s| s.handle == handle))
            .map(|(k, _)| *k)
    }

    /// The arms of [`Correlator::handle`] for the client's events.
    pub(super) fn client_event(
        &mut self,
        ids: &mut ConnIds,
        meta: ProbeMeta,
        event: &ProbeEvent,
        out: &mut Sink<'_>,
    ) {
        let (seq, ts) = (meta.seq, meta.ts_ns);
        match event {
            ProbeEvent::RpcRequest {
                task,
                version,
                program,
                procedure,
            } => {
                let name = RpcName {
                    program: program.clone(),
                    version: *version,
                    proc: None,
                    procedure: procedure.clone(),
                };
                self.hold_name(*task, name);
            }
            ProbeEvent::ClientChunk {
                task,
                kind,
                handle,
                length,
                offset,
            } => {
                let c = self.task_entry(ids, *task, seq, out);
                c.advertise(*kind, *handle, *length, *offset);
            }
            ProbeEvent::MarshalFailed { task, .. } => {
                // The attempt's MRs were unmapped (Linux 6.12 under MR
                // exhaustion: -EAGAIN, then a new attempt registers new
                // segments); only the attempt that marshals is the call's.
                if let Some(c) = self.tasks.get_mut(task) {
                    if c.marshal.is_none() {
                        c.segs.clear();
                    }
                }
            }
            ProbeEvent::Marshal {
                task,
                xid,
                rtype,
                wtype,
                hdrlen,
                xdrlen,
            } => {
                let call_len = hdrlen.unwrap_or(0) + xdrlen.unwrap_or(0);
                self.marshalled(ids, meta, *task, *xid, (*rtype, *wtype, call_len), out);
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
                    let what = StepWhat::PostSend { invalidate: None };
                    c.ladder.step(cap, base, seq, ts, true, what);
                }
            }
            ProbeEvent::Reply { task, xid, credits } => {
                self.replied(ids, meta, *task, (*xid, *credits), out);
            }
            ProbeEvent::RemoteInv { task, handle } => self.invalidated(meta, *task, *handle, true),
            ProbeEvent::LocalInv { task, handle } => self.invalidated(meta, *task, *handle, false),
            ProbeEvent::DecodeSeg { handle, length, .. } => self.reply_wrote(*handle, *length),
            ProbeEvent::RpcStats {
                task,
                xid,
                version,
                program,
                procedure,
                backlog_us,
                rtt_us,
                execute_us,
            } => {
                // The task ends after its reply, while the call is held
                // for it (`stats_wait_ns`); a task of another transport,
                // or one whose call was already let go, is not ours to time.
                self.rpc_stats_flow = true;
                let grace = self.cfg.close_grace_ns;
                if let Some(c) = self
                    .tasks
                    .get_mut(task)
                    .filter(|c| c.marshal.is_some() && c.xid == *xid)
                {
                    c.ended = true;
                    // The task's local invalidations follow its end.
                    c.deadline = ts.saturating_add(grace);
                    c.times.backlog_us = *backlog_us;
                    c.times.rtt_us = *rtt_us;
                    c.times.execute_us = *execute_us;
                    // The live probes leave rpc_request in the kernel: this
                    // event names the call as well, at no extra event per RPC.
                    if c.name.is_none() {
                        c.name = Some(RpcName {
                            program: program.clone(),
                            version: *version,
                            proc: None,
                            procedure: procedure.clone(),
                        });
                    }
                }
            }
            _ => {}
        }
    }

    /// The reply says the server wrote `length` bytes into the segment
    /// `handle` of an answered call's write list or reply chunk.
    fn reply_wrote(&mut self, handle: u32, length: u32) {
        if let Some(s) = self
            .tasks
            .values_mut()
            .filter(|c| c.reply.is_some())
            .flat_map(|c| c.segs.iter_mut())
            .find(|s| {
                s.handle == handle && s.kind != ChunkKind::Read && s.reported_length.is_none()
            })
        {
            s.reported_length = Some(length);
            s.bytes_moved = u64::from(length);
        }
    }

    /// `task` marshalled the call `xid` (again, when retransmitted), sent
    /// as `how`: (rtype, wtype, header and message bytes).
    fn marshalled(
        &mut self,
        ids: &mut ConnIds,
        meta: ProbeMeta,
        task: TaskKey,
        xid: u32,
        (rtype, wtype, call_len): (ChunkType, ChunkType, u32),
        out: &mut Sink<'_>,
    ) {
        let (seq, ts) = (meta.seq, meta.ts_ns);
        let in_flight = self
            .tasks
            .iter()
            .filter(|(k, c)| {
                k.client_id == task.client_id && c.marshal.is_some() && c.reply.is_none()
            })
            .count() as u32
            + 1;
        let cap = self.cfg.max_ladder_steps;
        let remarshal = self.tasks.get(&task).is_some_and(|c| c.marshal.is_some());
        if remarshal {
            self.stats.remarshals += 1;
        }
        let held = self.task_names.remove(&task);
        let c = self.task_entry(ids, task, seq, out);
        // A re-marshal (retransmission) keeps the name it had.
        if held.is_some() {
            c.name = held;
        }
        c.marshal = Some((seq, ts));
        c.xid = xid;
        c.rtype = Some(rtype);
        c.wtype = Some(wtype);
        c.call_len = call_len;
        c.in_flight = in_flight;
        let what = StepWhat::Marshal {
            xid,
            rtype,
            wtype,
            segments: c.segs.len(),
        };
        c.ladder.step(cap, ts, seq, ts, true, what);
    }

    /// The reply to `task`'s call (`xid`, with the credits it grants).
    fn replied(
        &mut self,
        ids: &mut ConnIds,
        meta: ProbeMeta,
        task: TaskKey,
        (xid, credits): (u32, u32),
        out: &mut Sink<'_>,
    ) {
        let (seq, ts) = (meta.seq, meta.ts_ns);
        let cap = self.cfg.max_ladder_steps;
        let grace = self.cfg.close_grace_ns;
        match self.tasks.get_mut(&task) {
            Some(c) if c.marshal.is_some() && c.xid == xid => {
                self.first_reply_ts.get_or_insert(ts);
                if c.reply.is_none() {
                    *self.answered.entry(xid).or_insert(0) += 1;
                }
                c.reply = Some((seq, ts, credits));
                c.reply_read_at = ts.max(self.tick_now);
                c.deadline = ts.saturating_add(grace);
                let base = c.marshal.map_or(ts, |m| m.1);
                let what = StepWhat::Reply { credits };
                c.ladder.step(cap, base, seq, ts, false, what);
            }
            _ => {
                let connection = Some(self.conn(
                    ids,
                    KernelConnKey::Client {
                        client_id: task.client_id,
                    },
                ));
                let about = About {
                    frames: vec![seq],
                    connection,
                    xid: Some(xid),
                    at: None,
                };
                let message = format!(
                    "client probes: reply to xid {xid:#010x} (task {}@{}) whose marshal was not seen",
                    task.task_id, task.client_id
                );
                out.anomaly(
                    (Kind::ReplyWithoutCall, Origin::ClientProbes),
                    about,
                    message,
                );
            }
        }
    }

    /// The MR `handle` was invalidated, by the server's Send With
    /// Invalidate (`remote`) or by the client itself.
    fn invalidated(&mut self, meta: ProbeMeta, task: Option<TaskKey>, handle: u32, remote: bool) {
        let (seq, ts) = (meta.seq, meta.ts_ns);
        let cap = self.cfg.max_ladder_steps;
        let task = task.or_else(|| self.task_of_handle(handle));
        let Some(c) = task.and_then(|t| self.tasks.get_mut(&t)) else {
            return;
        };
        let base = c.marshal.map_or(ts, |m| m.1);
        if remote {
            c.remote_inv = Some(handle);
            for s in c.segs.iter_mut().filter(|s| s.handle == handle) {
                s.remotely_invalidated = true;
            }
            let what = StepWhat::RemoteInvalidation { rkey: handle };
            c.ladder.step(cap, base, seq, ts, false, what);
        } else {
            let what = StepWhat::LocalInvalidation { rkey: handle };
            c.ladder.step(cap, base, seq, ts, true, what);
        }
    }

    /// Holds a task's names until its marshal; the oldest go when the
    /// table is full (they belong to RPCs over other transports, or to
    /// tasks that never got to send).
    fn hold_name(&mut self, task: TaskKey, name: RpcName) {
        if !self.task_names.contains_key(&task) && self.task_names.len() >= self.cfg.max_outstanding
        {
            while let Some(old) = self.names_order.pop_front() {
                if self.task_names.remove(&old).is_some() {
                    break;
                }
            }
        }
        self.task_names.insert(task, name);
        self.names_order.push_back(task);
        // Marshals take names out of the table but not out of the order:
        // drop those keys before they outnumber the live ones.
        if self.names_order.len() > 2 * self.task_names.len() + 1024 {
            let names = &self.task_names;
            self.names_order.retain(|k| names.contains_key(k));
        }
    }

    fn task_entry(
        &mut self,
        ids: &mut ConnIds,
        task: TaskKey,
        seq: u64,
        out: &mut Sink<'_>,
    ) -> &mut ClientCall {
        if !self.tasks.contains_key(&task) {
            if self.tasks.len() >= self.cfg.max_outstanding {
                while let Some(old) = self.task_order.pop_front() {
                    if let Some(c) = self.take_task(old) {
                        self.stats.evicted += 1;
                        self.finish_client(ids, old, c, out);
                        break;
                    }
                }
            }
            self.task_order.push_back(task);
        }
        // A task that already has a reply and starts again is a new call.
        if self.tasks.get(&task).is_some_and(|c| c.reply.is_some()) {
            if let Some(c) = self.take_task(task) {
                self.finish_client(ids, task, c, out);
            }
            self.task_order.push_back(task);
        }
        self.tasks.entry(task).or_insert_with(|| ClientCall {
            first_seq: seq,
            ..ClientCall::default()
        })
    }

    /// Takes `task`'s call out of the table, and its XID out of the
    /// answered ones the merger waits for.
    pub(super) fn take_task(&mut self, task: TaskKey) -> Option<ClientCall> {
        let c = self.tasks.remove(&task)?;
        if c.reply.is_some() {
            if let Some(n) = self.answered.get_mut(&c.xid) {
                *n -= 1;
                if *n == 0 {
                    self.answered.remove(&c.xid);
                }
            }
        }
        Some(c)
    }

    /// Whether the answered call `c` is done at `now`: its grace period
    /// is over and, when `rpc_stats_latency` events flow, its task ended,
    /// or the kernel's later records show it waited `stats_wait_ns` in
    /// vain, or none came for `stats_give_up_ns` of the analyzer's ticks
    /// after the reply was read.
    fn client_due(&self, c: &ClientCall, now: u64) -> bool {
        let Some((_, reply_ts, _)) = c.reply else {
            return false;
        };
        let wait = self.cfg.stats_wait_ns;
        let may_flow = self.rpc_stats_flow
            || self
                .first_reply_ts
                .is_some_and(|f| self.probe_now <= f.saturating_add(wait));
        let waited = reply_ts.saturating_add(wait) < self.probe_now
            || c.reply_read_at.saturating_add(self.cfg.stats_give_up_ns) < self.tick_now;
        c.deadline < now && (c.ended || !may_flow || waited)
    }

    pub(super) fn expire(&mut self, ids: &mut ConnIds, now: u64, out: &mut Sink<'_>) {
        if !self.tasks.values().any(|c| self.client_due(c, now)) {
            return;
        }
        let mut done: Vec<TaskKey> = self
            .tasks
            .iter()
            .filter(|(_, c)| self.client_due(c, now))
            .map(|(k, _)| *k)
            .collect();
        done.sort_by_key(|k| self.tasks.get(k).map_or(0, |c| c.first_seq));
        for k in done {
            if let Some(c) = self.take_task(k) {
                self.task_order.retain(|t| *t != k);
                self.finish_client(ids, k, c, out);
            }
        }
    }

    pub(super) fn finish_client(
        &mut self,
        ids: &mut ConnIds,
        task: TaskKey,
        c: ClientCall,
        out: &mut Sink<'_>,
    ) {
        let Some((call_seq, call_ts)) = c.marshal else {
            return; // chunks registered, never marshalled: nothing to report
        };
        let connection = self.conn(
            ids,
            KernelConnKey::Client {
                client_id: task.client_id,
            },
        );
        self.stats.client_transactions += 1;
        let (call_transfer, reply_transfer) = c.transfers();
        let mut anomalies = Vec::new();
        for (kind, message) in c.anomalies() {
            anomalies.push(kind);
            let about = About {
                frames: vec![call_seq],
                connection: Some(connection),
                xid: Some(c.xid),
                at: None,
            };
            out.anomaly((kind, Origin::ClientProbes), about, message);
        }
        let reads = c.segs.iter().any(|s| s.kind == ChunkKind::Read);
        let writes = c
            .segs
            .iter()
            .any(|s| s.kind != ChunkKind::Read && s.bytes_moved > 0);
        let latency = c
            .reply
            .and_then(|r| r.1.checked_sub(c.sent_ts.unwrap_or(call_ts)))
            .map(|ns| ns as f64 / 1e3);
        let header = c.header(task);
        let mut t = Transaction {
            reply_frame: c.reply.map(|r| r.0),
            reply_ts_ns: c.reply.map(|r| r.1),
            call_transfer,
            reply_transfer,
            call_len: c.call_len,
            latency_us: latency,
            app_latency_us: latency,
            credits_granted: c.reply.map(|r| r.2),
            in_flight_at_call: c.in_flight,
            chunks: c.segs,
            remote_invalidated_rkey: c.remote_inv,
            round_trips: 1 + u8::from(reads) + u8::from(writes),
            responder_interrupts: 1 + u8::from(reads),
            anomalies,
            ladder: c.ladder.steps,
            ladder_omitted: c.ladder.omitted,
            kernel_times: c.times,
            ..Transaction::new(
                Origin::ClientProbes,
                connection,
                c.xid,
                call_seq,
                call_ts,
                header,
            )
        };
        if let Some(n) = &c.name {
            n.fill(&mut t);
        }
        out.probe_transaction(t);
    }
}
