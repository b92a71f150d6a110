//! What the wire's entries cost, for the memory budget (`budget.rs`): the
//! budget shares bytes out and asks each table for what it holds; what an
//! entry of a table costs is the table's to say, since only it knows its
//! structs.

use std::collections::BTreeMap;
use std::mem::size_of;

use super::index::Tag;
use super::state::{Corr, QpState, ReadReq, Txn, SEGMENT_FRAME_CAP};
use crate::budget::MALLOC_OVERHEAD;
use crate::keys::{Addr, CallKey, ConnId, QpKey};
use crate::model::{CallHeader, Connection, CreditPoint, LadderStep, SegmentUse};

/// Bytes a connection costs besides its credit history and its calls: its
/// slots in the two tables (the public record, the correlation state),
/// which run up to twice what their entries need; its eviction clock's
/// entries; and the small tables it starts with (calls, STags, send order,
/// RDMA Reads) and its names.
pub(crate) const CONNECTION_BYTES: usize = 2
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
pub(crate) const HALF_OPEN_ENTRY_BYTES: usize =
    2 * (size_of::<((Addr, Addr, Tag), Vec<ConnId>)>() + 1) + size_of::<ConnId>() + MALLOC_OVERHEAD;

/// Bytes a queue pair costs: its slot in the slab, its index entry, both
/// up to twice what they need.
pub(crate) const QP_BYTES: usize =
    2 * (size_of::<(QpKey, QpState)>() + size_of::<(QpKey, u32)>() + 1);

/// Bytes of an RDMA Read request awaited.
pub(crate) const READ_BYTES: usize = size_of::<ReadReq>();

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
pub(crate) fn call_bytes(t: &Txn, max_ladder_steps: usize) -> usize {
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
            CallHeader::Wire(b) => b.len(),
            CallHeader::Text(s) => s.capacity(),
        })
}

/// What the connections' public records hold: each entry and its credit
/// history.
pub(crate) fn connections_bytes(connections: &BTreeMap<ConnId, Connection>) -> usize {
    let points: usize = connections
        .values()
        .map(|c| c.credit_series.capacity())
        .sum();
    connections.len() * CONNECTION_BYTES + points * size_of::<CreditPoint>()
}

impl super::qp_table::QpTable {
    /// Bytes the queue pairs hold, as the budget counts them.
    pub(crate) fn bytes(&self) -> usize {
        self.len() * QP_BYTES
    }
}

impl super::state::Table {
    /// Bytes the connections' correlation state holds, as the budget
    /// counts them: outstanding and parked calls, Send prefixes, and the
    /// RDMA Reads awaited.
    pub(crate) fn bytes(&self) -> usize {
        let reads: usize = self.corr.values().map(|c| c.reads.len()).sum();
        self.calls.bytes() + self.parked.bytes() + self.prefixes.bytes() + reads * READ_BYTES
    }
}
