//! The wire side's correlation state, which the front ends never see: per
//! queue pair, per connection and per outstanding call. Plain data that
//! `conn`, `call` and `rdma` share; the parts that keep their own
//! invariants (`calls`, `reassembly`, `transfer`, `conn_table`) are fields
//! of it.

use std::collections::VecDeque;

use rdma_dissectors::ib::Psn;
use rdma_dissectors::rpcrdma::Xid;

use crate::keys::{Addr, CallKey, ConnId, Map, QpKey};
use crate::model::Transaction;

/// Per-queue-pair receive state.
#[derive(Debug, Default)]
pub(crate) struct QpState {
    pub conn: Option<ConnId>,
    /// Last request PSN seen arriving at this QP (for duplicates and gaps).
    pub last_psn: Option<u32>,
    /// PSNs that request takes: one, or for an RDMA READ one per response
    /// packet (IBA 9.7.1): `None` when that count is not known (a READ
    /// whose path MTU is not known yet).
    pub last_span: Option<u32>,
    /// The first request PSN this QP can be sent: the starting PSN its
    /// peer announced in the CM exchange, or the first the capture shows.
    pub first_psn: Option<u32>,
    /// `first_psn` came from the CM exchange (exact), not the capture.
    pub first_from_cm: bool,
    /// Path MTU, learnt from a full (First or Middle) packet that arrived
    /// here, for QPs no connection owns (a connection keeps its own).
    pub mtu: Option<u32>,
    /// A multi-packet Send being reassembled.
    pub send: Option<super::reassembly::Reassembly>,
    /// An RDMA Write whose later packets carry no RETH.
    pub write: Option<WriteCtx>,
    pub last_ts_ns: u64,
    /// Seen since the eviction clock last passed (see `QpTable::evict`).
    pub referenced: bool,
    /// The address this QP's connection peer sends from: a frame from any
    /// other is not part of the connection (RoCEv2: the addresses, not the
    /// QP number alone, say which connection a frame belongs to).
    pub peer: Option<Addr>,
    /// A request PSN far from `last_psn` that is not followed yet: the next
    /// packet decides whether the sequence moved there (another incarnation
    /// of the QP) or it was a stray frame.
    pub far_psn: Option<u32>,
    /// The sequence rests on one request, the first the capture showed,
    /// without the CM's word for where it starts: a request well before it
    /// says that one was a stray frame ahead of the sequence.
    pub unconfirmed: bool,
}

/// Correlation state per connection that the front ends never see.
#[derive(Debug, Default)]
pub(crate) struct Corr {
    /// Its outstanding calls, by XID.
    pub calls: super::calls::ConnCalls,
    /// Advertised STags: handle -> calls whose chunks name it.
    pub stags: Map<u32, Vec<CallKey>>,
    /// RDMA Read requests awaiting responses, in PSN order.
    pub reads: VecDeque<ReadReq>,
    /// Whether RPC-over-RDMA was seen (or the CM port says so).
    pub rpcrdma: bool,
    /// For connections found from traffic: the client's address, learnt
    /// from the first call, before its QP number is known.
    pub peer_addr: Option<Addr>,
    /// The last RNR NAK not yet followed by an ACK past it: the address of
    /// the responder that sent it and the PSN it refused. The requester
    /// sends that PSN again after the RNR timer (IBA 9.7.5.2.8): a retry
    /// the NAK already explains, not a lost packet.
    pub rnr_naked: Option<(Addr, Psn)>,
}

/// All connections' private correlation state.
#[derive(Debug, Default)]
pub(crate) struct Table {
    /// Each connection's entry, opened and closed with its public view.
    pub corr: super::conn_table::ConnTable,
    /// CM REQs waiting for their REP: (client address, client comm id).
    pub pending: Map<(Addr, u32), ConnId>,
    /// Every outstanding call, all connections together.
    pub calls: super::calls::AllCalls,
    /// Bytes of Send prefixes held by queue pairs.
    pub prefixes: super::reassembly::Prefixes,
    /// Queue pairs no connection owns that requests were sent to, by
    /// (responder's address, requester's address): the QPN and the latest
    /// request PSN. A response or ACK to the requester whose PSN answers
    /// one of them pairs the two QPs into a connection without CM.
    pub awaiting: Map<(Addr, Addr), Vec<(u32, u32)>>,
    /// What finds a half-open connection or a CM comm id's connection
    /// without a walk of them all (see `index`).
    pub index: super::index::Index,
    /// Calls of torn-down connections waiting to be sent again.
    pub parked: super::calls::ParkedCalls,
    /// The connections each client address sent calls on, latest last (at
    /// most [`CLIENT_CONNS`]; entries of connections gone are skipped): where
    /// to look for a call sent again on a new connection while the old one
    /// was not seen to close (its DREQ unanswered, or cut by a snap length).
    pub by_client: Map<Addr, Vec<ConnId>>,
    /// Calls answered NFS3ERR_JUKEBOX / NFS4ERR_DELAY, waiting for the
    /// client's retry under a new XID.
    pub retries: crate::nfsio::Retries,
    /// CM messages a snap length cut before their QP numbers, by pair of
    /// hosts (lower address first): how many, and their first frames.
    pub cut_cm: Map<(Addr, Addr), (u64, Vec<u64>)>,
}

/// Connections remembered per client address in `Table::by_client`.
pub(crate) const CLIENT_CONNS: usize = 16;

/// A call of a torn-down connection waiting to be sent again.
#[derive(Debug)]
pub(crate) struct Parked {
    pub txn: Box<Txn>,
    /// Why its connection gave it up, for the finding it becomes if it is
    /// never sent again.
    pub why: Box<str>,
    /// When its connection gave it up: the time of that finding.
    pub at: Option<u64>,
}

/// How long a parked call waits to be sent again before it goes out
/// unanswered (so that `live` says so within minutes, not at its end):
/// longer than the Linux client's longest reconnect back-off (5 minutes).
pub(crate) const PARK_NS: u64 = 600_000_000_000;

impl Table {
    pub fn ids(&self) -> Vec<ConnId> {
        self.corr.ids()
    }

    pub fn outstanding(&self) -> usize {
        self.calls.count()
    }
}

/// An outstanding call with its correlation bookkeeping.
#[derive(Debug, Clone)]
pub(crate) struct Txn {
    pub rec: Transaction,
    /// Its place in the order calls were sent (connection and global).
    pub seq: u64,
    /// Bytes it is counted for in the budget.
    pub cost: usize,
    pub first_read_ts: Option<u64>,
    pub last_read_ts: Option<u64>,
    pub first_write_ts: Option<u64>,
    pub last_write_ts: Option<u64>,
    /// The first bytes the responder RDMA Wrote to the start of the reply
    /// chunk: an RDMA_NOMSG reply's RPC header (and NFS status) are there,
    /// not in its Send.
    pub reply_head: Option<ReplyHead>,
}

/// Bytes kept of a reply chunk's start: an RPC reply header with an
/// AUTH_NONE or AUTH_SYS verifier (24 bytes), a v3 status, or a COMPOUND's
/// status, tag and results far enough to name the op that failed. Linux
/// clients offer a reply chunk for every NFSv4 OPEN, so an OPEN answered
/// NFS4ERR_DELAY arrives this way: SEQUENCE (44 bytes), PUTFH (8) and
/// OPEN's own status (8) after the 36 of the headers are 96. Kept per
/// outstanding call, so the budget charges it (`cost.rs`).
pub(crate) const REPLY_HEAD: usize = 128;

/// The start of a reply chunk as written (fewer bytes when the capture cut
/// the packet).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReplyHead {
    pub bytes: [u8; REPLY_HEAD],
    pub len: u8,
}

impl ReplyHead {
    pub fn new(payload: &[u8]) -> Self {
        let len = payload.len().min(REPLY_HEAD);
        let mut bytes = [0; REPLY_HEAD];
        bytes[..len].copy_from_slice(&payload[..len]);
        ReplyHead {
            bytes,
            len: len as u8,
        }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// A whole RPC-over-RDMA message, as received.
pub(crate) struct Message<'a> {
    pub bytes: &'a [u8],
    pub total: usize,
    pub first_frame: u64,
    pub frame: u64,
    pub ts: u64,
    pub src: Addr,
    pub dest: QpKey,
    pub invalidate: Option<u32>,
    /// `bytes` is only a prefix of the message (the capture cut a packet
    /// of it, or the prefix cap did): what lies past it is not known.
    pub cut: bool,
}

/// Frames recorded per segment; the rest are counted in `bytes_moved` only.
pub(crate) const SEGMENT_FRAME_CAP: usize = 8;

/// A chunk segment of an outstanding call: the call's key in its
/// connection's `outstanding` table and the segment's index, in one word.
///
/// Every Middle packet copies one of these a few times, so it is one word,
/// stored and loaded whole: a `(CallKey, usize)` with a niche tag would be
/// read back in wider, overlapping loads than had stored it, which stalls
/// store forwarding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SegmentRef(std::num::NonZeroU64);

impl SegmentRef {
    /// `None` for an index past 2^31 - 2, which no chunk list reaches (a
    /// segment takes 16 bytes of a header of at most 16 MiB).
    pub fn new(txn: CallKey, index: usize) -> Option<Self> {
        let low = u32::try_from(index).ok()?.checked_add(1)?;
        if low >= 1 << 31 {
            return None;
        }
        let word = u64::from(txn.xid.0) << 32 | u64::from(txn.backchannel) << 31 | u64::from(low);
        std::num::NonZeroU64::new(word).map(SegmentRef)
    }

    /// The call's key in `outstanding`.
    pub fn txn(self) -> CallKey {
        let w = self.0.get();
        CallKey {
            backchannel: w >> 31 & 1 == 1,
            xid: Xid((w >> 32) as u32),
        }
    }

    /// The segment's index in the call's chunks.
    pub fn index(self) -> usize {
        ((self.0.get() & 0x7fff_ffff) - 1) as usize
    }
}

/// An RDMA Write in progress on a QP: its later packets carry no RETH.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WriteCtx {
    pub conn: ConnId,
    pub target: Option<SegmentRef>,
    pub rkey: u32,
}

/// An RDMA Read request waiting for its responses.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReadReq {
    pub psn: u32,
    /// The PSN of the request that followed this one when its span was not
    /// known: a response at or past it says that request reused a PSN the
    /// READ held.
    pub followed_by: Option<u32>,
    pub next_psn: u32,
    pub rkey: u32,
    pub len: u32,
    pub received: u32,
    pub target: Option<SegmentRef>,
}

#[cfg(test)]
mod tests {
    use super::{CallKey, SegmentRef, Xid};

    #[test]
    fn segment_ref_gives_back_what_it_was_made_of() {
        for (backchannel, xid) in [
            (false, 0),
            (true, 0),
            (false, u32::MAX),
            (true, 0x8000_0001),
        ] {
            let txn = CallKey {
                backchannel,
                xid: Xid(xid),
            };
            for index in [0, 1, 7, 0xffff, (1 << 31) - 2] {
                let r = SegmentRef::new(txn, index).unwrap();
                assert_eq!((r.txn(), r.index()), (txn, index));
            }
            assert_eq!(SegmentRef::new(txn, (1 << 31) - 1), None);
            assert_eq!(SegmentRef::new(txn, usize::MAX), None);
        }
    }
}
