//! One memory budget for all of the engine's state.
//!
//! Live capture runs for days on hosts that have other work to do, so the
//! engine's tables are bounded in bytes, not only in entries per table: a
//! per-connection cap times thousands of connections is no bound at all.
//! The budget (`--memory-limit`) is shared out to the tables below; each
//! share is either counted in bytes as entries come and go (outstanding
//! calls, whose size varies, and Send prefixes) or turned into an entry
//! cap from the entry's size (connections, queue pairs, RDMA Reads, credit
//! history, the kernel side's calls, views waiting to be joined). An
//! explicit `--max-*` cap still applies when it is the smaller.
//!
//! ```text
//!  share   what                      counted as
//!   36 %   outstanding calls          bytes of each call (header, chunks, ladder)
//!    4 %   calls of torn-down         bytes of each call, as above: kept until
//!          connections                the client sends them again on its next
//!                                     connection, or the end
//!   15 %   connections                entries × CONNECTION_BYTES
//!   10 %   credit history             points per connection × CreditPoint
//!   12 %   queue pairs                entries × QP_BYTES
//!    5 %   RDMA Reads awaited         per connection × ReadReq
//!    8 %   Send prefixes              bytes kept
//!    5 %   kernel-side calls          per side × KERNEL_CALL_BYTES (+ the names
//!                                     waiting for their marshal, as many at
//!                                     most, × KERNEL_NAME_BYTES, about a fifth)
//!    5 %   views waiting to be joined entries × JOIN_BYTES
//! ```
//!
//! What a share pushes out goes oldest (or longest idle) first, in constant
//! time per eviction, is counted in `Evictions` and reported as a
//! `state_evicted` anomaly, as the entry caps' evictions always were.

use std::mem::size_of;

use super::keys::{Addr, CallKey, ConnId, QpKey};
use super::model::{Connection, CreditPoint, LadderStep, SegmentUse, Transaction};
use super::wire::index::Tag;
use super::wire::state::{Corr, QpState, ReadReq, Txn, SEGMENT_FRAME_CAP};
use super::Config;

/// The default budget: 256 MiB for the engine and (when there is one) the
/// screen's model together.
pub const DEFAULT_MEMORY_LIMIT: usize = 256 << 20;

/// Bytes a connection costs besides its credit history and its calls: its
/// slots in the two tables (the public record, the correlation state),
/// which run up to twice what their entries need; its eviction clock's
/// entries; and the small tables it starts with (calls, STags, send order,
/// RDMA Reads) and its names.
pub(super) const CONNECTION_BYTES: usize = 2
    * (size_of::<(ConnId, Connection)>() + size_of::<(ConnId, Corr)>() + 2)
    + 4 * size_of::<(ConnId, u64)>()
    + 2 * COMM_ID_ENTRY_BYTES
    + 512;

/// Bytes of one side's entry in the CM comm id index: a slot, at up to
/// twice the room, and the list of connections it holds.
const COMM_ID_ENTRY_BYTES: usize =
    2 * (size_of::<((Addr, u32), Vec<ConnId>)>() + 1) + size_of::<ConnId>() + MALLOC_OVERHEAD;

/// Bytes of one entry in the half-open connections' index (an STag or XID
/// of a call on a connection whose client QP is not known yet): counted in
/// the call's cost while it is outstanding.
pub(super) const HALF_OPEN_ENTRY_BYTES: usize =
    2 * (size_of::<((Addr, Addr, Tag), Vec<ConnId>)>() + 1) + size_of::<ConnId>() + MALLOC_OVERHEAD;

/// Bytes a queue pair costs: its slot in the slab, its index entry, both
/// up to twice what they need.
pub(super) const QP_BYTES: usize =
    2 * (size_of::<(QpKey, QpState)>() + size_of::<(QpKey, u32)>() + 1);

/// Bytes of a call the kernel side follows (task state and the transaction
/// it becomes).
pub(super) const KERNEL_CALL_BYTES: usize = size_of::<Transaction>() + 512;

/// Bytes of a procedure name the kernel side holds until its call is
/// marshalled: the entry, its hash slot at up to twice the room, and the
/// two short name strings.
pub(super) const KERNEL_NAME_BYTES: usize =
    2 * size_of::<(super::kernel::event::TaskKey, super::kernel::names::RpcName)>() + 64;

/// Bytes of a transaction waiting for its other views.
pub(super) const JOIN_BYTES: usize = size_of::<Transaction>() + 512;

/// Fewest entries any table is allowed, however small the budget: below
/// this the analyzer would not be worth running.
const FLOOR: usize = 16;

/// The entry caps and byte shares a budget gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The budget they come from, bytes.
    pub memory_limit: usize,
    /// Connections tracked at once.
    pub connections: usize,
    /// Queue pairs tracked at once.
    pub qps: usize,
    /// Bytes of outstanding calls, all connections together.
    pub call_bytes: usize,
    /// Bytes of the unanswered calls of torn-down connections, kept to be
    /// followed when the client sends them again.
    pub parked_bytes: usize,
    /// Outstanding calls per connection.
    pub calls_per_connection: usize,
    /// RDMA Read requests awaited per connection.
    pub reads_per_connection: usize,
    /// Bytes of Send prefixes kept, all queue pairs together.
    pub prefix_bytes: usize,
    /// Points of credit history per connection.
    pub credit_points: usize,
    /// Calls each kernel side follows at once.
    pub kernel_calls: usize,
    /// Transactions waiting for their other views at once.
    pub joins: usize,
}

impl Limits {
    /// What `config`'s budget and caps give.
    pub fn of(config: &Config) -> Limits {
        let b = config.memory_limit;
        let share = |percent: usize| b / 100 * percent;
        let cap = |explicit: usize, bytes: usize, each: usize| {
            explicit.min(bytes / each.max(1)).max(FLOOR)
        };
        let connections = cap(config.max_connections, share(15), CONNECTION_BYTES);
        Limits {
            memory_limit: b,
            connections,
            qps: cap(config.max_qps, share(12), QP_BYTES),
            call_bytes: share(36),
            parked_bytes: share(4),
            calls_per_connection: config.max_outstanding.max(1),
            reads_per_connection: cap(
                config.max_reads,
                share(5) / connections,
                size_of::<ReadReq>(),
            ),
            prefix_bytes: share(8).max(config.max_message_prefix),
            credit_points: cap(
                config.max_credit_points,
                share(10) / connections,
                size_of::<CreditPoint>(),
            ),
            kernel_calls: cap(65_536, share(5) / 2, KERNEL_CALL_BYTES),
            joins: cap(config.merge.map_or(0, |m| m.max_held), share(5), JOIN_BYTES),
        }
    }
}

/// What a heap block costs beyond what was asked for (the allocator's
/// header and rounding).
const MALLOC_OVERHEAD: usize = 16;

/// What a call costs in the tables that find it, beyond its own record:
/// its slot in its connection's outstanding table and its entries in the
/// two send-order queues. Tables run up to twice the size their entries
/// need (they double when full; a queue holds entries of calls already gone
/// until a sweep), so each slot counts twice, queues' entries four times.
const CALL_TABLE_BYTES: usize = 2 * (size_of::<(CallKey, Box<Txn>)>() + 1)
    + 4 * size_of::<(CallKey, u64)>()
    + 4 * size_of::<(ConnId, CallKey, u64)>();

/// What a chunk segment costs in its connection's STag index: a slot and
/// the list of calls naming the handle.
const STAG_BYTES: usize =
    2 * (size_of::<(u32, Vec<CallKey>)>() + 1) + 4 * size_of::<CallKey>() + MALLOC_OVERHEAD;

/// What a call costs while it is outstanding: the record, its places in the
/// tables, its chunk list, its header bytes, name and file handle, and room for the
/// ladder it will grow to (the call and reply Sends, and about two steps
/// per chunk segment: an RDMA operation's first packet and its completion).
pub(super) fn call_bytes(t: &Txn, max_ladder_steps: usize) -> usize {
    let r = &t.rec;
    let steps = (2 + 2 * r.chunks.len()).min(max_ladder_steps);
    let heap = |bytes: usize| {
        if bytes == 0 {
            0
        } else {
            bytes + MALLOC_OVERHEAD
        }
    };
    size_of::<Txn>()
        + MALLOC_OVERHEAD
        + CALL_TABLE_BYTES
        + heap(r.chunks.capacity() * size_of::<SegmentUse>())
        + r.chunks.len() * (STAG_BYTES + heap(SEGMENT_FRAME_CAP * 8))
        + heap(steps * size_of::<LadderStep>())
        + heap(r.procedure.as_ref().map_or(0, String::capacity))
        + heap(r.nfs_fh.as_ref().map_or(0, |fh| fh.bytes().len()))
        + heap(match &r.call_header {
            super::model::CallHeader::Wire(b) => b.len(),
            super::model::CallHeader::Text(s) => s.capacity(),
        })
}
