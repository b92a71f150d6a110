//! The recorder's memory: the last seconds of frames and probe records,
//! bounded by time and by bytes, with the findings that point at them.

use std::collections::VecDeque;

use rdma_dissectors::link::LinkType;

/// What each entry costs beside its bytes: the entry itself and the
/// allocator's header for its buffer.
pub const ENTRY_OVERHEAD: usize = std::mem::size_of::<Entry>() + 16;

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
    /// A probe record, as its text (see `docs/recorder.md`).
    Probe {
        /// Its sequence number in the run.
        seq: u64,
        /// The record, one line.
        text: String,
    },
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
                Item::Probe { text, .. } => text.len(),
            }
    }
}

/// The ring: entries newer than `keep_ns` behind the newest, at most
/// `max_bytes` of them all told.
#[derive(Debug)]
pub struct Ring {
    entries: VecDeque<Entry>,
    bytes: usize,
    max_bytes: usize,
    keep_ns: u64,
    /// While a dump is pending, nothing after this time leaves by age.
    pinned_from: Option<u64>,
    /// Entries pushed out by the byte bound while a dump wanted them.
    pub lost_pinned: u64,
}

impl Ring {
    /// An empty ring keeping `keep_ns` of time in at most `max_bytes`.
    pub fn new(keep_ns: u64, max_bytes: usize) -> Ring {
        Ring {
            entries: VecDeque::new(),
            bytes: 0,
            max_bytes,
            keep_ns,
            pinned_from: None,
            lost_pinned: 0,
        }
    }

    /// Bytes held now, as [`Entry::cost`] counts them.
    pub fn bytes(&self) -> usize {
        // The deque's own slots count too: it never shrinks by itself.
        self.bytes + self.entries.capacity() * std::mem::size_of::<Entry>()
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
        self.entries.push_back(e);
        let mut age_limit = newest.saturating_sub(self.keep_ns);
        if let Some(p) = self.pinned_from {
            age_limit = age_limit.min(p);
        }
        while let Some(front) = self.entries.front() {
            let over = self.bytes() > self.max_bytes;
            if !over && front.ts_ns >= age_limit {
                break;
            }
            if over && self.pinned_from.is_some_and(|p| front.ts_ns >= p) {
                self.lost_pinned += 1;
            }
            self.bytes -= front.cost();
            self.entries.pop_front();
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
        let found = self
            .entries
            .iter_mut()
            .rev()
            .find_map(|e| match &mut e.item {
                Item::Frame {
                    number: n,
                    comments,
                    ..
                } if *n <= number => Some((*n, comments)),
                _ => None,
            });
        let Some((n, comments)) = found else {
            return false;
        };
        if n != number {
            return false;
        }
        comments.push(comment.to_string());
        self.bytes += comment.len() + 24;
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
            .filter(move |e| (from_ns..=to_ns).contains(&e.ts_ns))
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
            item: Item::Probe {
                seq: 1,
                text: "x".into(),
            },
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
}
