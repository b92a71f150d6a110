//! The recorder's memory: the last seconds of frames and probe records,
//! bounded by time and by bytes, with the findings that point at them.
//!
//! Entries are shared (`Arc`) so that a dump's window is handed to the
//! writer thread without copying it ([`Ring::snapshot`]). An entry that
//! leaves the ring while a snapshot still holds it stays in memory, so its
//! bytes still count: [`Ring::bytes`] adds what only snapshots hold, and
//! the ring lets go of more of its own to stay inside its bound.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;

use rdma_dissectors::link::LinkType;

use crate::engine::kernel::event::{Probe, ProbeEvent};

/// What each entry costs beside its bytes: the entry itself, its `Arc`'s
/// counts, the allocator's headers for it and its buffer, and its slot in
/// a snapshot's list (paid ahead, so that taking a snapshot of the whole
/// ring stays inside the bound).
pub const ENTRY_OVERHEAD: usize =
    std::mem::size_of::<Entry>() + 16 + 32 + std::mem::size_of::<Arc<Entry>>();

/// One thing the ring holds, in arrival order.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A frame, cut at the snap length.
    Frame {
        /// Its number in the live run (1-based).
        number: u64,
        /// Its link type.
        link: LinkType,
        /// Its length on the wire.
        orig_len: u32,
        /// The bytes kept.
        data: Box<[u8]>,
        /// The findings on it, one sentence each.
        comments: Vec<String>,
    },
    /// A probe record, decoded: written as text only when a dump is
    /// (`probe_text`), off the pipeline's thread.
    Probe(Probe),
}

/// An item and when it happened.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// ns since the epoch.
    pub ts_ns: u64,
    /// What.
    pub item: Item,
}

impl Entry {
    /// The bytes it holds, overhead included.
    pub fn cost(&self) -> usize {
        ENTRY_OVERHEAD
            + match &self.item {
                Item::Frame { data, comments, .. } => {
                    data.len() + comments.iter().map(|c| c.len() + 24).sum::<usize>()
                }
                Item::Probe(p) => probe_heap_bytes(&p.event),
            }
    }
}

/// What a probe record holds beside itself: its strings and bytes, each
/// with the allocator's header.
fn probe_heap_bytes(e: &ProbeEvent) -> usize {
    let s = |o: &Option<String>| o.as_ref().map_or(0, |s| s.capacity() + 16);
    match e {
        ProbeEvent::ClientConnect { peer, .. } => s(peer),
        ProbeEvent::RpcRequest {
            program, procedure, ..
        }
        | ProbeEvent::RpcStats {
            program, procedure, ..
        } => s(program) + s(procedure),
        ProbeEvent::SvcProcess {
            service, procedure, ..
        } => s(service) + s(procedure),
        ProbeEvent::PrivateData { bytes, .. } => bytes.capacity() + 16,
        _ => 0,
    }
}

/// The ring: entries newer than `keep_ns` behind the newest, at most
/// `max_bytes` of them all told.
#[derive(Debug)]
pub struct Ring {
    entries: VecDeque<Arc<Entry>>,
    bytes: usize,
    /// Bytes held only by snapshots (entries the ring let go of while a
    /// writer still had them). Signed: a
    /// writer may let go of an entry before the ring has counted it here.
    outside: Arc<AtomicIsize>,
    max_bytes: usize,
    keep_ns: u64,
    /// While a dump is pending, nothing after this time leaves by age.
    pinned_from: Option<u64>,
    /// Entries pushed out by the byte bound while a dump wanted them.
    pub lost_pinned: u64,
    /// Entries not kept because dumps being written held the memory.
    pub lost_busy: u64,
}

impl Ring {
    /// An empty ring keeping `keep_ns` of time in at most `max_bytes`.
    pub fn new(keep_ns: u64, max_bytes: usize) -> Ring {
        Ring {
            entries: VecDeque::new(),
            bytes: 0,
            outside: Arc::new(AtomicIsize::new(0)),
            max_bytes,
            keep_ns,
            pinned_from: None,
            lost_pinned: 0,
            lost_busy: 0,
        }
    }

    /// Bytes held now, as [`Entry::cost`] counts them, snapshots included.
    pub fn bytes(&self) -> usize {
        // The deque's own slots count too: it never shrinks by itself.
        self.bytes
            + self.entries.capacity() * std::mem::size_of::<Arc<Entry>>()
            + self.outside_bytes()
    }

    /// Bytes only the snapshots being written hold.
    pub fn outside_bytes(&self) -> usize {
        self.outside.load(Ordering::Relaxed).max(0) as usize
    }

    /// Drops the ring's hold on `e`; when a snapshot still holds it, its
    /// bytes move to `outside` until the snapshot lets go.
    fn release(&self, e: Arc<Entry>) {
        let cost = e.cost();
        // Exactly one of the ring and the snapshot gets the entry back
        // from `into_inner`: the last one to let go frees it.
        if Arc::into_inner(e).is_none() {
            self.outside.fetch_add(cost as isize, Ordering::Relaxed);
        }
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Adds `e` and lets go of what falls out of the bounds.
    pub fn push(&mut self, e: Entry) {
        let cost = e.cost();
        if cost > self.max_bytes {
            // One frame larger than the whole ring: kept by nothing.
            return;
        }
        self.bytes += cost;
        let newest = e.ts_ns;
        self.entries.push_back(Arc::new(e));
        let mut age_limit = newest.saturating_sub(self.keep_ns);
        if let Some(p) = self.pinned_from {
            age_limit = age_limit.min(p);
        }
        while let Some(front) = self.entries.front() {
            let over = self.bytes() > self.max_bytes;
            let old = front.ts_ns < age_limit;
            // A front a writer still holds frees nothing when let go: the
            // bound waits for the writer (it goes through the window in
            // this order) instead of emptying the ring for no memory.
            if !old && (!over || Arc::strong_count(front) > 1) {
                break;
            }
            if over && !old && self.pinned_from.is_some_and(|p| front.ts_ns >= p) {
                self.lost_pinned += 1;
            }
            self.bytes -= front.cost();
            if let Some(e) = self.entries.pop_front() {
                self.release(e);
            }
        }
        if self.bytes() > self.max_bytes {
            // Full of what a dump being written holds: the newest is not
            // kept until the writer catches up.
            if let Some(e) = self.entries.pop_back() {
                self.bytes -= e.cost();
                self.release(e);
            }
            self.lost_busy += 1;
        }
        // A burst's slots are given back once the ring is a quarter used.
        if self.entries.capacity() > 1024 && self.entries.len() < self.entries.capacity() / 4 {
            self.entries.shrink_to(self.entries.len() * 2);
        }
    }

    /// Adds `comment` to frame `number`, when the ring still holds it;
    /// false otherwise.
    pub fn comment(&mut self, number: u64, comment: &str) -> bool {
        // Findings are mostly about recent frames: look from the newest
        // back, and stop at the first frame older than the one asked for.
        let found = self.entries.iter().rposition(|e| match &e.item {
            Item::Frame { number: n, .. } => *n <= number,
            Item::Probe(_) => false,
        });
        let Some(at) = found else {
            return false;
        };
        if !matches!(&self.entries[at].item, Item::Frame { number: n, .. } if *n == number) {
            return false;
        }
        // A frame a snapshot is writing is copied: the dump keeps what it
        // was handed, the ring the comment.
        let slot = &mut self.entries[at];
        let shared = Arc::get_mut(slot).is_none();
        let old = shared.then(|| {
            let copy = Arc::new(Entry::clone(slot));
            std::mem::replace(slot, copy)
        });
        if let Some(Item::Frame { comments, .. }) = Arc::get_mut(slot).map(|e| &mut e.item) {
            comments.push(comment.to_string());
        }
        self.bytes += comment.len() + 24;
        if let Some(old) = old {
            self.release(old);
        }
        true
    }

    /// Keeps everything from `ts_ns` on until [`Ring::unpin`], memory
    /// allowing: the window of a pending dump.
    pub fn pin(&mut self, ts_ns: u64) {
        self.pinned_from = Some(self.pinned_from.map_or(ts_ns, |p| p.min(ts_ns)));
    }

    /// Lets the pinned entries go by age again.
    pub fn unpin(&mut self) {
        self.pinned_from = None;
    }

    /// The entries from `from_ns` to `to_ns`, in order.
    pub fn window(&self, from_ns: u64, to_ns: u64) -> impl Iterator<Item = &Entry> {
        self.entries
            .iter()
            .map(|e| &**e)
            .filter(move |e| (from_ns..=to_ns).contains(&e.ts_ns))
    }

    /// The entries from `from_ns` to `to_ns`, shared with whoever writes
    /// them: no entry is copied, and what the snapshot holds counts in
    /// [`Ring::bytes`] until it is dropped.
    pub fn snapshot(&self, from_ns: u64, to_ns: u64) -> Snapshot {
        // One slot per entry of the ring at most: each is paid for in its
        // entry's cost. One pass: this runs on the pipeline's thread.
        let mut entries = Vec::with_capacity(self.entries.len());
        entries.extend(
            self.entries
                .iter()
                .filter(|e| (from_ns..=to_ns).contains(&e.ts_ns))
                .cloned(),
        );
        Snapshot {
            entries,
            outside: self.outside.clone(),
        }
    }
}

/// A dump's window, shared with the ring (see [`Ring::snapshot`]).
#[derive(Debug)]
pub struct Snapshot {
    entries: Vec<Arc<Entry>>,
    outside: Arc<AtomicIsize>,
}

impl Snapshot {
    /// The entries, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().map(|e| &**e)
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl Snapshot {
    /// Hands each entry to `f` in order and lets go of it right after, so
    /// that the ring can reuse its memory while the rest is written.
    ///
    /// # Errors
    /// `f`'s first error; the entries after it are let go unwritten.
    pub fn drain<E>(&mut self, mut f: impl FnMut(&Entry) -> Result<(), E>) -> Result<(), E> {
        let mut entries = std::mem::take(&mut self.entries).into_iter();
        let mut out = Ok(());
        for e in entries.by_ref() {
            out = f(&e);
            self.let_go(e);
            if out.is_err() {
                break;
            }
        }
        entries.for_each(|e| self.let_go(e));
        out
    }

    fn let_go(&self, e: Arc<Entry>) {
        let cost = e.cost();
        // Back from `into_inner`: the ring let go first and counted it as
        // outside.
        if Arc::into_inner(e).is_some() {
            self.outside.fetch_sub(cost as isize, Ordering::Relaxed);
        }
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        for e in std::mem::take(&mut self.entries) {
            self.let_go(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(number: u64, ts_ns: u64, len: usize) -> Entry {
        Entry {
            ts_ns,
            item: Item::Frame {
                number,
                link: LinkType::ETHERNET,
                orig_len: len as u32,
                data: vec![0; len].into_boxed_slice(),
                comments: Vec::new(),
            },
        }
    }

    #[test]
    fn the_ring_keeps_the_last_seconds_and_no_more() {
        let mut r = Ring::new(1_000, 1 << 20);
        for i in 0..100u64 {
            r.push(frame(i + 1, i * 100, 64));
        }
        // Newest at 9900: from 8900 on.
        let first = r.window(0, u64::MAX).next().map(|e| e.ts_ns);
        assert_eq!(first, Some(8_900));
        assert_eq!(r.len(), 11);
    }

    #[test]
    fn the_ring_never_holds_more_than_its_bytes_however_long_it_runs() {
        let max = 256 * 1024;
        let mut r = Ring::new(u64::MAX, max);
        let mut highest = 0;
        for i in 0..200_000u64 {
            r.push(frame(i + 1, i, (i % 1500) as usize + 60));
            highest = highest.max(r.bytes());
        }
        assert!(highest <= max, "{highest} > {max}");
        // Most of it is used: the bound is not met by keeping nothing.
        assert!(r.bytes() > max / 2, "{}", r.bytes());
        let held: usize = r.window(0, u64::MAX).map(Entry::cost).sum();
        assert!(held <= r.bytes());
    }

    #[test]
    fn a_pinned_window_outlives_its_age_but_not_the_memory_bound() {
        let mut r = Ring::new(1_000, 64 * 1024);
        for i in 0..10u64 {
            r.push(frame(i + 1, i * 100, 64));
        }
        r.pin(500);
        for i in 10..50u64 {
            r.push(frame(i + 1, i * 100, 64));
        }
        assert_eq!(r.window(0, u64::MAX).next().map(|e| e.ts_ns), Some(500));
        assert_eq!(r.lost_pinned, 0);
        for i in 50..5_000u64 {
            r.push(frame(i + 1, i * 100, 64));
        }
        assert!(r.bytes() <= 64 * 1024);
        assert!(
            r.lost_pinned > 0,
            "the bound pushed pinned entries out, counted"
        );
        r.unpin();
        r.push(frame(5_001, 500_000, 64));
        assert_eq!(r.window(0, u64::MAX).next().map(|e| e.ts_ns), Some(499_000));
    }

    #[test]
    fn a_comment_lands_on_its_frame_between_probe_records() {
        let mut r = Ring::new(u64::MAX, 1 << 20);
        r.push(frame(1, 10, 60));
        r.push(Entry {
            ts_ns: 11,
            item: Item::Probe(Probe {
                meta: crate::engine::kernel::event::ProbeMeta {
                    seq: 1,
                    ts_ns: 11,
                    cpu: 0,
                    tid: 1,
                },
                event: ProbeEvent::Other,
            }),
        });
        r.push(frame(2, 12, 60));
        assert!(r.comment(2, "late"));
        assert!(!r.comment(3, "never seen"));
        let commented: Vec<u64> = r
            .window(0, u64::MAX)
            .filter_map(|e| match &e.item {
                Item::Frame {
                    number, comments, ..
                } if !comments.is_empty() => Some(*number),
                _ => None,
            })
            .collect();
        assert_eq!(commented, [2]);
    }

    #[test]
    fn a_snapshot_being_written_counts_inside_the_bound_and_its_memory_comes_back_as_it_is_written()
    {
        let max = 64 * 1024;
        let mut r = Ring::new(u64::MAX, max);
        let mut n = 0u64;
        while r.lost_busy == 0 && n < 10_000 && r.bytes() + 2 * frame(0, 0, 64).cost() < max {
            n += 1;
            r.push(frame(n, n, 64));
        }
        let mut snap = r.snapshot(0, u64::MAX);
        let held = snap.len();
        assert_eq!(held, r.len());
        // The ring fills to its bound and past it: what the writer holds
        // is not let go for nothing, the newest are not kept, and counted.
        for i in 0..2_000u64 {
            r.push(frame(n + i + 1, n + i + 1, 64));
            assert!(r.bytes() <= max, "{} > {max}", r.bytes());
        }
        assert!(r.lost_busy > 0);
        assert_eq!(
            r.window(0, u64::MAX).next().map(|e| e.ts_ns),
            Some(1),
            "the entries being written stay"
        );
        // Written one by one: each let go makes room for a new one.
        let mut written = 0;
        let out: Result<(), ()> = snap.drain(|_| {
            written += 1;
            Ok(())
        });
        assert_eq!(out, Ok(()));
        assert_eq!(written, held);
        let lost = r.lost_busy;
        for i in 0..held as u64 {
            r.push(frame(100_000 + i, 100_000 + i, 64));
            assert!(r.bytes() <= max);
        }
        assert_eq!(r.lost_busy, lost, "room again once written");
        assert_eq!(r.outside_bytes(), 0);
    }

    #[test]
    fn an_entry_the_ring_drops_while_a_snapshot_holds_it_counts_until_the_snapshot_goes() {
        let mut r = Ring::new(100, 1 << 20);
        r.push(frame(1, 0, 64));
        let cost = frame(1, 0, 64).cost();
        let snap = r.snapshot(0, u64::MAX);
        // Out by age: the snapshot still holds it.
        r.push(frame(2, 1_000, 64));
        assert_eq!(r.len(), 1);
        assert_eq!(r.outside_bytes(), cost);
        // A comment on a frame being written copies it for the ring.
        r.push(frame(3, 1_001, 64));
        let snap2 = r.snapshot(0, u64::MAX);
        assert!(r.comment(3, "late"));
        assert!(r.outside_bytes() >= 2 * cost);
        drop(snap);
        drop(snap2);
        assert_eq!(r.outside_bytes(), 0);
        let comments: Vec<usize> = r
            .window(0, u64::MAX)
            .map(|e| match &e.item {
                Item::Frame { comments, .. } => comments.len(),
                Item::Probe(_) => 0,
            })
            .collect();
        assert_eq!(comments, [0, 1]);
    }
}
