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

use super::kernel::KERNEL_CALL_BYTES;
use super::merge::JOIN_BYTES;
use super::model::CreditPoint;
use super::wire::cost::{CONNECTION_BYTES, QP_BYTES, READ_BYTES};
use super::Config;

/// The default budget: 256 MiB for the engine and (when there is one) the
/// screen's model together.
pub const DEFAULT_MEMORY_LIMIT: usize = 256 << 20;

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
            reads_per_connection: cap(config.max_reads, share(5) / connections, READ_BYTES),
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
pub(crate) const MALLOC_OVERHEAD: usize = 16;
