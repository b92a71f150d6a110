//! The kernel side of the engine: transactions from kernel probe events,
//! the twin of the wire's correlation, pure and deterministic (time only
//! from events).
//!
//! ```text
//!  Event::Probe ──► Correlator::handle ──┬─ Use::Client ──► client.rs (by RPC task)
//!                                        ├─ Use::Server ──► server.rs (by receive completion, then nfsd thread)
//!                                        └─ PrivateData (kprobe: CM private data) ──► Correlator::private_data
//! ```
//!
//! It emits the engine's own [`Finding`](crate::Finding) types, through the
//! engine's findings collector (which stamps and counts them as they are
//! made), so the reports, the JSON schemas and the TUI take them unchanged. Frame numbers in these
//! transactions are probe record sequence numbers. What the probes cannot
//! know stays unknown: the client side never sees the credits it requested
//! (0), the server side never sees the credits it granted (`None`).

pub mod event;

mod client;
pub(crate) mod names;
mod server;

use std::collections::VecDeque;

use rdma_dissectors::rpcrdma::Segment;

use client::ClientCall;
use event::{Cid, Probe, ProbeEvent, SegKind, TaskKey, Use};
use names::RpcName;
use server::ServerCall;

use crate::findings::Sink;
use crate::keys::{ConnIds, KernelConnKey, Map};
use crate::{ChunkKind, ConnId, SegmentUse};

/// Bytes of a call the kernel side follows (task state and the transaction
/// it becomes).
pub(crate) const KERNEL_CALL_BYTES: usize = std::mem::size_of::<crate::Transaction>() + 512;

/// Bytes of a procedure name the kernel side holds until its call is
/// marshalled: the entry, its hash slot at up to twice the room, and the
/// two short name strings.
const KERNEL_NAME_BYTES: usize = 2 * std::mem::size_of::<(TaskKey, RpcName)>() + 64;

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
    /// Once `rpc_stats_latency` events flow, how long after a reply a call
    /// waits for its task's, which names and times it, ns of the kernel's
    /// own clock: the stamps of the records that come after the reply.
    /// The task ends once its reply is decoded, but under load its thread
    /// runs late (the lab's TCG guests: over 20 ms for one call in
    /// fifteen; a single-vCPU guest once made no rpcrdma record at all for
    /// 618 ms after a reply, then ended the task). A kernel that makes no
    /// records does not run the task either, so only records that come
    /// show the task late; the analyzer's own clock (ticks) would give up
    /// on a stalled guest, or on records it has not read yet.
    pub stats_wait_ns: u64,
    /// The bound on the analyzer's clock (ticks) for a task's end that
    /// never comes while no later record does either, ns: a call does not
    /// wait longer than this after its reply. The merger holds the wire's
    /// view of the XID as long (`Correlator::holds_answered`).
    pub stats_give_up_ns: u64,
}

impl Default for CorrelateConfig {
    fn default() -> Self {
        CorrelateConfig {
            max_outstanding: 65536,
            close_grace_ns: 20_000_000,
            max_ladder_steps: 64,
            stats_wait_ns: 2_000_000_000,
            stats_give_up_ns: 10_000_000_000,
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

/// The probe-side correlator.
#[derive(Debug, Default)]
pub struct Correlator {
    cfg: CorrelateConfig,
    conns: Map<KernelConnKey, ConnId>,
    tasks: Map<TaskKey, ClientCall>,
    task_order: VecDeque<TaskKey>,
    /// Names from `rpc_request`, held until the task's marshal. Every RPC
    /// of the host has one, TCP ones too, which never marshal here: the
    /// table is capped like the calls and the oldest go first.
    task_names: Map<TaskKey, RpcName>,
    names_order: VecDeque<TaskKey>,
    recv_ts: Map<Cid, u64>,
    recv_order: VecDeque<Cid>,
    recv_segs: Map<Cid, Vec<SegmentUse>>,
    threads: Map<u32, ServerCall>,
    /// Calls whose nfsd thread moved on while their Read chunk was being
    /// pulled (Linux 6.12: another thread resumes the call once the Reads
    /// complete), by XID, until a thread's `svc_process` takes them up.
    parked: Map<u32, ServerCall>,
    parked_order: VecDeque<u32>,
    /// The XID of the call each posted chunk context serves.
    chunk_ctx: Map<Cid, u32>,
    chunk_order: VecDeque<Cid>,
    /// A `rpc_stats_latency` was seen: answered calls wait for their own
    /// (up to `stats_wait_ns`). Without it they go after the grace period.
    rpc_stats_flow: bool,
    /// When the first reply came: until `stats_wait_ns` after it, calls
    /// wait for their task's end even before one was seen (the first
    /// calls of a run end their tasks late too, before the flow is known).
    first_reply_ts: Option<u64>,
    /// The kernel's clock: the latest stamp of the records handled so far
    /// (`stats_wait_ns` runs on it).
    probe_now: u64,
    /// The analyzer's clock: the latest tick (`stats_give_up_ns` runs on it).
    tick_now: u64,
    /// XIDs of the answered calls still held (their grace or their task's
    /// end), with how many: the merger keeps their wire views meanwhile.
    answered: Map<u32, u32>,
    /// Counters.
    pub stats: CorrelateStats,
    /// CM private data seen by the kprobes: (connect or accept, bytes).
    pub private_data: Vec<(ebpf_common::KprobeId, Vec<u8>)>,
}

/// A segment a kernel's tracepoint reports, as the call advertised it.
fn advertised(kind: SegKind, handle: u32, length: u32, offset: u64, chunk: u32) -> SegmentUse {
    let (kind, position) = match kind {
        SegKind::Read { position } => (ChunkKind::Read, Some(position)),
        SegKind::Write => (ChunkKind::Write, None),
        SegKind::Reply => (ChunkKind::Reply, None),
    };
    let segment = Segment {
        handle,
        length,
        offset,
    };
    SegmentUse::advertised(kind, chunk, position, segment)
}

impl Correlator {
    /// Calls and receives followed right now, both sides together (the
    /// memory budget counts them).
    pub fn tracked(&self) -> usize {
        self.tasks.len()
            + self.threads.len()
            + self.parked.len()
            + self.recv_ts.len()
            + self.chunk_ctx.len()
    }

    /// Procedure names waiting for their task's marshal (counted apart:
    /// they are much smaller than calls).
    pub fn names_held(&self) -> usize {
        self.task_names.len()
    }

    /// Bytes the correlator holds, as the budget counts them.
    pub(crate) fn bytes(&self) -> usize {
        self.tracked() * KERNEL_CALL_BYTES + self.names_held() * KERNEL_NAME_BYTES
    }

    /// A correlator with `cfg`.
    pub fn new(cfg: CorrelateConfig) -> Correlator {
        Correlator {
            cfg,
            ..Correlator::default()
        }
    }

    /// The engine's id for the connection a kernel names `key`.
    fn conn(&mut self, ids: &mut ConnIds, key: KernelConnKey) -> ConnId {
        // Every reconnect brings new completion queues: over days the map
        // would only grow. Ids are labels, so forgetting them all is safe
        // (a connection seen again gets a new id).
        if self.conns.len() >= MAX_KERNEL_CONNS && !self.conns.contains_key(&key) {
            self.conns.clear();
        }
        *self.conns.entry(key).or_insert_with(|| ids.new_id())
    }

    /// Handles one probe event; findings go to `out` as they complete.
    pub(crate) fn handle(&mut self, ids: &mut ConnIds, p: &Probe, out: &mut Sink<'_>) {
        self.stats.events += 1;
        // The kernel's clock moves after the record is handled: a task's
        // end that is the first record after a stall of the whole guest
        // still finds its call.
        self.expire(ids, p.meta.ts_ns, out);
        match (p.event.use_(), &p.event) {
            (Use::Client, e) => self.client_event(ids, p.meta, e, out),
            (Use::Server, e) => self.server_event(ids, p.meta, e, out),
            (_, ProbeEvent::PrivateData { which, bytes }) if self.private_data.len() < 1024 => {
                self.private_data.push((*which, bytes.clone()));
            }
            _ => {}
        }
        self.probe_now = self.probe_now.max(p.meta.ts_ns);
    }

    /// Time passes (live mode): replies whose grace period ended are emitted.
    pub(crate) fn tick(&mut self, ids: &mut ConnIds, ts_ns: u64, out: &mut Sink<'_>) {
        self.tick_now = self.tick_now.max(ts_ns);
        self.expire(ids, ts_ns, out);
    }

    /// Whether an answered call of `xid` is still held here (for its grace
    /// period or its task's end): its wire view waits for it.
    pub(crate) fn holds_answered(&self, xid: u32) -> bool {
        self.answered.contains_key(&xid)
    }

    /// The source ended: everything still open is emitted, unanswered calls
    /// with a `call_without_reply` anomaly.
    pub(crate) fn end(&mut self, ids: &mut ConnIds, out: &mut Sink<'_>) {
        let keys: Vec<TaskKey> = self.task_order.drain(..).collect();
        for k in keys {
            if let Some(c) = self.take_task(k) {
                self.finish_client(ids, k, c, out);
            }
        }
        let mut threads: Vec<ServerCall> = self.threads.drain().map(|(_, s)| s).collect();
        threads.extend(self.parked.drain().map(|(_, s)| s));
        self.parked_order.clear();
        threads.sort_by_key(|s| s.seq);
        for s in threads {
            self.finish_server(ids, s, None, out);
        }
    }
}

#[cfg(test)]
mod tests;
