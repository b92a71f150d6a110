//! Transfers' Middle packets, added up before they are written to their
//! transactions: the part of RDMA Write and Read matching (`rdma`) that
//! holds state between packets.

use rdma_dissectors::ib::bth::{Operation, Position};
use rdma_dissectors::stack::Dissection;

use super::state::{SegmentRef, Txn, SEGMENT_FRAME_CAP};
use crate::keys::ConnId;

/// The Middle packets of one transfer (an RDMA Write, or the responses to
/// one RDMA Read) into one chunk segment, added up before they are written
/// to the segment's transaction.
///
/// Most packets of a bulk NFS transfer are Middles, and writing each into
/// its transaction costs two table lookups and a large entry that the frame
/// data has pushed out of the cache. A Middle only adds to its segment's
/// bytes and frames and to its transaction's first/last times, so the sums
/// can wait as long as nothing else looks at that transaction: every other
/// packet and event, and every Middle that is not deferred, writes all of
/// them first (`flush_deferred`), and there is one entry per transaction
/// and direction, so the order in which they are written does not matter.
/// The result is the same as writing each packet at once (the integration
/// test `deferred_middle_packets_give_the_same_results` holds it to that).
#[derive(Debug, Clone, Copy)]
pub(crate) struct DeferredMiddle {
    pub conn: ConnId,
    pub target: SegmentRef,
    /// Responses to an RDMA Read (true) or an RDMA Write.
    pub read: bool,
    bytes: u64,
    pub first_ts: u64,
    pub last_ts: u64,
    /// The first frames (the segment keeps at most this many).
    frames: [u64; SEGMENT_FRAME_CAP],
    n_frames: usize,
}

/// Transfers deferred at once; one more writes them all.
pub(crate) const MAX_DEFERRED: usize = 16;

impl DeferredMiddle {
    fn new(conn: ConnId, target: SegmentRef, read: bool, m: Middle) -> Self {
        let mut frames = [0; SEGMENT_FRAME_CAP];
        frames[0] = m.frame;
        DeferredMiddle {
            conn,
            target,
            read,
            bytes: u64::from(m.bytes),
            first_ts: m.ts,
            last_ts: m.ts,
            frames,
            n_frames: 1,
        }
    }

    /// Adds `m`, a later packet to the same segment.
    fn absorb(&mut self, m: Middle) {
        self.bytes += u64::from(m.bytes);
        self.last_ts = m.ts;
        if let Some(f) = self.frames.get_mut(self.n_frames) {
            *f = m.frame;
            self.n_frames += 1;
        }
    }

    /// Adds what was deferred to its segment of `t`, the transaction it
    /// was deferred for.
    pub fn write_into(&self, t: &mut Txn) {
        let Some(s) = t.rec.chunks.get_mut(self.target.index()) else {
            return;
        };
        s.bytes_moved += self.bytes;
        for &f in self.frames.get(..self.n_frames).unwrap_or_default() {
            if s.frames.len() < SEGMENT_FRAME_CAP {
                s.frames.push(f);
            }
        }
    }
}

/// One Middle packet offered to [`Deferred::offer`]: three words, where
/// a one-packet [`DeferredMiddle`] would be built in full for every packet
/// only to have three of its fields added to an entry.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Middle {
    pub bytes: u32,
    pub frame: u64,
    pub ts: u64,
}

/// Whether the packet is the Middle of an RDMA Write or Read Response: the
/// packets [`DeferredMiddle`] defers.
pub(crate) fn continues_transfer(d: &Dissection<'_>) -> bool {
    d.bth().is_some_and(|b| {
        matches!(
            b.opcode.operation(),
            Operation::RdmaWrite | Operation::RdmaReadResponse
        ) && b.opcode.position() == Some(Position::Middle)
    })
}

/// The Middles deferred now: one entry per transaction and direction.
#[derive(Debug)]
pub(crate) struct Deferred {
    entries: Vec<DeferredMiddle>,
}

impl Default for Deferred {
    fn default() -> Self {
        Deferred {
            entries: Vec::with_capacity(MAX_DEFERRED),
        }
    }
}

/// What [`Deferred::offer`] made of a Middle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Offered {
    /// Added to its segment's entry.
    Absorbed,
    /// It needs an entry of its own and there is room: `push` it.
    Room,
    /// It needs an entry of its own, but the entries must be written first:
    /// one is of another segment of its transaction (whose first and last
    /// times must stay in order), or there is no room.
    WriteFirst,
}

impl Deferred {
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Adds `m`, a Middle into `target` of `conn`, to its segment's entry
    /// if there is one; says what to do otherwise.
    pub fn offer(&mut self, conn: ConnId, target: SegmentRef, read: bool, m: Middle) -> Offered {
        let same_txn =
            |e: &DeferredMiddle| e.conn == conn && e.target.txn() == target.txn() && e.read == read;
        let full = self.entries.len() >= MAX_DEFERRED;
        match self.entries.iter_mut().find(|e| same_txn(e)) {
            Some(e) if e.target.index() == target.index() => {
                e.absorb(m);
                Offered::Absorbed
            }
            Some(_) => Offered::WriteFirst,
            None if full => Offered::WriteFirst,
            None => Offered::Room,
        }
    }

    /// A new entry for `m`, once [`offer`](Self::offer) said there is room.
    pub fn push(&mut self, conn: ConnId, target: SegmentRef, read: bool, m: Middle) {
        self.entries
            .push(DeferredMiddle::new(conn, target, read, m));
    }

    /// The entries, to be written; [`give_back`](Self::give_back) returns
    /// the emptied buffer, so that its room is kept for the next ones.
    pub fn take(&mut self) -> Vec<DeferredMiddle> {
        std::mem::take(&mut self.entries)
    }

    pub fn give_back(&mut self, mut emptied: Vec<DeferredMiddle>) {
        emptied.clear();
        self.entries = emptied;
    }
}

#[cfg(test)]
mod tests {
    use super::{Deferred, Middle, Offered, MAX_DEFERRED};
    use crate::keys::{CallKey, ConnId};
    use crate::wire::state::SegmentRef;
    use rdma_dissectors::rpcrdma::Xid;

    fn segment(xid: u32, index: usize) -> SegmentRef {
        let key = CallKey {
            backchannel: false,
            xid: Xid(xid),
        };
        SegmentRef::new(key, index).unwrap()
    }

    fn middle(frame: u64) -> Middle {
        Middle {
            bytes: 100,
            frame,
            ts: frame * 10,
        }
    }

    #[test]
    fn middles_of_one_segment_add_up_in_one_entry() {
        let mut d = Deferred::default();
        let c = ConnId(1);
        assert_eq!(d.offer(c, segment(7, 0), true, middle(1)), Offered::Room);
        d.push(c, segment(7, 0), true, middle(1));
        for f in 2..4 {
            assert_eq!(
                d.offer(c, segment(7, 0), true, middle(f)),
                Offered::Absorbed
            );
        }
        let entries = d.take();
        assert!(d.is_empty());
        let e = &entries[..];
        assert_eq!(e.len(), 1);
        assert_eq!((e[0].first_ts, e[0].last_ts, e[0].bytes), (10, 30, 300));
        assert_eq!(e[0].frames.get(..e[0].n_frames), Some(&[1, 2, 3][..]));
        d.give_back(entries);
        assert!(d.is_empty());
    }

    #[test]
    fn another_segment_of_the_transaction_or_no_room_writes_first() {
        let mut d = Deferred::default();
        let c = ConnId(1);
        d.push(c, segment(7, 0), false, middle(1));
        let next = segment(7, 1);
        assert_eq!(d.offer(c, next, false, middle(2)), Offered::WriteFirst);
        // The other direction and other transactions have entries of their own.
        assert_eq!(d.offer(c, next, true, middle(2)), Offered::Room);
        for x in 1..MAX_DEFERRED as u32 {
            assert_eq!(
                d.offer(c, segment(100 + x, 0), false, middle(3)),
                Offered::Room
            );
            d.push(c, segment(100 + x, 0), false, middle(3));
        }
        assert_eq!(
            d.offer(c, segment(999, 0), false, middle(4)),
            Offered::WriteFirst
        );
    }
}
