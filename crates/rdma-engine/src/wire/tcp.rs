//! TCP streams put back together for iWARP: per direction, segments in
//! stream order, each octet once, what the capture lacks said as a gap,
//! then MPA framing (`tcp/framing.rs`) into the frames the engine reads.
//!
//! ```text
//!  segment ──► stream offset (from the SYN's ISN + 1, or the first segment seen)
//!     ├─ before `next`: already delivered, dropped (retransmission, overlap)
//!     ├─ at `next`: to the framer, then every held piece it makes contiguous
//!     └─ after `next`: held (out of order), each octet once
//!  a hole given up (FIN past it, a segment too far ahead, the bound) ──► Gap
//! ```
//!
//! Memory: held pieces and the framer's partial frames count in
//! [`Streams::bytes`]. A direction holds at most its share of the limit
//! out of order; past it, or past the limit for all directions together,
//! the oldest hole is given up (a `Gap`), and a framer's partial frame is
//! passed over (counted in the next `Resync`). Nothing grows unbounded.

mod framing;
mod markers;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_synth;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;

use framing::{Flags, Framer};

/// One direction of a TCP connection.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub(crate) struct FlowKey {
    pub src: SocketAddr,
    pub dst: SocketAddr,
}

impl FlowKey {
    /// The other direction.
    pub(crate) fn reverse(self) -> FlowKey {
        FlowKey {
            src: self.dst,
            dst: self.src,
        }
    }
}

/// One TCP segment as its frame carried it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TcpSegment<'a> {
    pub frame: u64,
    pub ts: u64,
    pub seq: u32,
    pub syn: bool,
    pub fin: bool,
    pub rst: bool,
    /// What the capture kept of the payload.
    pub payload: &'a [u8],
    /// The payload's length on the wire (more than `payload.len()` when a snap length cut it).
    pub wire_len: u32,
}

/// What one direction's stream delivers, in stream order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// The MPA Request or Reply frame that opens the direction (header and private data, whole).
    Mpa {
        first_frame: u64,
        frame: u64,
        ts: u64,
        bytes: Vec<u8>,
    },
    /// One FPDU, markers removed: ULPDU_Length, ULPDU, pad and the CRC field (there even when CRCs were not negotiated, RFC 5044 section 4.1), as sent.
    Fpdu {
        first_frame: u64,
        frame: u64,
        ts: u64,
        bytes: Vec<u8>,
        /// With markers and CRCs: the CRC32c of the FPDU as sent, its
        /// markers included, as RFC 5044 section 4.4 computes it (so over
        /// octets `bytes` lacks); compare it with the CRC at the end of
        /// `bytes`. `None` without markers: check `bytes` itself.
        crc_with_markers: Option<u32>,
    },
    /// `bytes` octets of the stream the capture lacks; what they held is unknown.
    Gap { frame: u64, ts: u64, bytes: u64 },
    /// Framing found again after a gap or a mid-stream start; `certain` false when only length/CRC plausibility found it.
    /// `skipped`: captured octets passed over unread since framing was
    /// lost (what a gap cut of an FPDU on either side of it, what the hunt
    /// rejected), the gaps' own octets not included.
    Resync {
        frame: u64,
        ts: u64,
        skipped: u64,
        certain: bool,
    },
    /// FIN or RST.
    Closed { frame: u64, ts: u64, reset: bool },
}

/// The limit when no one sets one.
const DEFAULT_LIMIT: usize = 64 << 20;
/// The most one direction holds out of order, whatever the limit: more
/// than a scaled TCP window of a fast link over a LAN's round trip.
const DIRECTION_CAP: usize = 8 << 20;

/// What one held piece costs beside its octets: its map entry and the
/// allocator's share of the entry and of the octets' block.
const ENTRY_COST: usize = std::mem::size_of::<(u64, Held)>() + 2 * crate::budget::MALLOC_OVERHEAD;

/// A piece of the stream held out of order.
#[derive(Debug)]
struct Held {
    frame: u64,
    ts: u64,
    piece: Piece,
}

#[derive(Debug)]
enum Piece {
    /// Octets as captured.
    Data(Vec<u8>),
    /// Octets the segment carried but the snap length cut off.
    Lost(u64),
}

impl Piece {
    fn len(&self) -> u64 {
        match self {
            Piece::Data(d) => d.len() as u64,
            Piece::Lost(n) => *n,
        }
    }

    /// What holding it costs: its octets and its entry. Counting octets
    /// alone let a stream of 1-octet or snap-length-cut segments, each its
    /// own entry of ~100 bytes, hold a hundred times the limit.
    fn held(&self) -> usize {
        match self {
            Piece::Data(d) => d.len() + ENTRY_COST,
            Piece::Lost(_) => ENTRY_COST,
        }
    }
}

/// Where FIN or RST ends a stream, and the frame that carried it.
#[derive(Debug, Clone, Copy)]
struct End {
    at: u64,
    reset: bool,
    frame: u64,
    ts: u64,
}

/// One direction.
#[derive(Debug)]
struct Dir {
    /// The sequence number of stream offset 0.
    isn: Option<u32>,
    /// The stream offset of the next octet to deliver.
    next: u64,
    held: BTreeMap<u64, Held>,
    held_bytes: usize,
    /// The frame since which the direction has held a hole open.
    hole_since: Option<u64>,
    /// The FIN or RST that ends the stream.
    end: Option<End>,
    framer: Framer,
}

impl Dir {
    fn new() -> Self {
        Dir {
            isn: None,
            next: 0,
            held: BTreeMap::new(),
            held_bytes: 0,
            hole_since: None,
            end: None,
            framer: Framer::new(),
        }
    }

    fn bytes(&self) -> usize {
        self.held_bytes + self.framer.held()
    }

    /// The stream offset of `seq`, taken as the one nearest `next` (so
    /// sequence numbers wrap), negative before the stream's start.
    fn offset(&self, seq: u32) -> i64 {
        let isn = self.isn.unwrap_or(seq);
        let rel = seq.wrapping_sub(isn);
        // Truncation to the low 32 bits is the point: distances are mod 2^32.
        let d = rel.wrapping_sub(self.next as u32) as i32;
        self.next as i64 + i64::from(d)
    }

    /// Holds the octets from `at` on, each octet once: what `next` has
    /// passed and what a held piece covers already are left out.
    fn hold(&mut self, at: i64, piece: Piece, frame: u64, ts: u64) {
        let len = piece.len();
        let mut from = at.max(self.next as i64) as u64;
        let end = (at + len as i64).max(from as i64) as u64;
        while from < end {
            // The held piece at or before `from` may cover it.
            if let Some((&k, h)) = self.held.range(..=from).next_back() {
                let covered = k + h.piece.len();
                if covered > from {
                    from = covered;
                    continue;
                }
            }
            let stop = self.held.range(from..end).next().map_or(end, |(&k, _)| k);
            let skip = (from as i64 - at) as usize;
            let n = (stop - from) as usize;
            let part = match &piece {
                Piece::Data(d) => Piece::Data(d.get(skip..skip + n).unwrap_or_default().to_vec()),
                Piece::Lost(_) => Piece::Lost(n as u64),
            };
            self.held_bytes += part.held();
            self.held.insert(
                from,
                Held {
                    frame,
                    ts,
                    piece: part,
                },
            );
            from = stop;
        }
    }

    /// Feeds the framer every held piece that starts at `next`.
    fn advance(&mut self, out: &mut Vec<Delivery>) {
        while let Some(entry) = self.held.first_entry() {
            if *entry.key() > self.next {
                break;
            }
            let (at, h) = entry.remove_entry();
            self.held_bytes -= h.piece.held();
            let len = h.piece.len();
            if at + len <= self.next {
                continue;
            }
            match h.piece {
                Piece::Data(d) => {
                    let skip = (self.next - at) as usize;
                    let rest = d.get(skip..).unwrap_or_default();
                    self.framer.push(self.next, rest, h.frame, h.ts, out);
                }
                Piece::Lost(_) => {
                    let n = at + len - self.next;
                    self.framer.gap(self.next, n, h.frame, h.ts, out);
                }
            }
            self.next = at + len;
        }
        if self.held.is_empty() {
            self.hole_since = None;
        }
    }

    /// Gives up the first hole: its octets become a gap.
    fn give_up_hole(&mut self, out: &mut Vec<Delivery>) -> bool {
        let Some((&at, h)) = self.held.first_key_value() else {
            return false;
        };
        let (frame, ts) = (h.frame, h.ts);
        if at > self.next {
            self.framer.gap(self.next, at - self.next, frame, ts, out);
            self.next = at;
        }
        self.advance(out);
        true
    }

    /// FIN or RST: what is still held is given up (the stream moved past
    /// its holes), then the framer closes. A FIN's sequence number says
    /// where the stream ends, so octets missing before it are a gap; a
    /// RST's says nothing that matters.
    fn check_end(&mut self, out: &mut Vec<Delivery>) {
        let Some(e) = self.end else {
            return;
        };
        if self.framer.is_closed() {
            return;
        }
        while self.give_up_hole(out) {}
        if !e.reset && self.next < e.at {
            self.framer
                .gap(self.next, e.at - self.next, e.frame, e.ts, out);
            self.next = e.at;
        }
        self.framer.close(e.frame, e.ts, e.reset, out);
    }
}

/// Every direction's stream.
#[derive(Debug)]
pub(crate) struct Streams {
    dirs: HashMap<FlowKey, Dir>,
    /// Octets all directions hold.
    total: usize,
    limit: usize,
    /// Directions holding a hole open, oldest first.
    holes: BTreeSet<(u64, FlowKey)>,
}

impl Default for Streams {
    fn default() -> Self {
        Self::new()
    }
}

impl Streams {
    pub(crate) fn new() -> Self {
        Streams {
            dirs: HashMap::new(),
            total: 0,
            limit: DEFAULT_LIMIT,
            holes: BTreeSet::new(),
        }
    }

    /// What one direction may hold out of order.
    fn direction_cap(&self) -> usize {
        self.limit.min(DIRECTION_CAP)
    }

    /// Feeds one segment; pushes what it completes onto `out`, in stream order.
    pub(crate) fn segment(&mut self, key: FlowKey, seg: &TcpSegment<'_>, out: &mut Vec<Delivery>) {
        let cap = self.direction_cap();
        let dir = self.dirs.entry(key).or_insert_with(Dir::new);
        let before = (dir.bytes(), dir.hole_since);
        let first = out.len();
        feed(dir, seg, cap, out);
        self.settle(key, before);
        self.share_flags(key, out.get(first..).unwrap_or_default());
        self.enforce_limit(out);
    }

    /// After a direction changed: its bytes in the total, its entry in
    /// the holes' index.
    fn settle(&mut self, key: FlowKey, before: (usize, Option<u64>)) {
        let Some(dir) = self.dirs.get(&key) else {
            return;
        };
        self.total = (self.total + dir.bytes()).saturating_sub(before.0);
        if before.1 != dir.hole_since {
            if let Some(f) = before.1 {
                self.holes.remove(&(f, key));
            }
            if let Some(f) = dir.hole_since {
                self.holes.insert((f, key));
            }
        }
    }

    /// The MPA frame a direction delivered tells its peer's framer what
    /// this end asked for.
    fn share_flags(&mut self, key: FlowKey, out: &[Delivery]) {
        let Some(bits) = out.iter().rev().find_map(|d| match d {
            Delivery::Mpa { bytes, .. } => bytes.get(16).copied(),
            _ => None,
        }) else {
            return;
        };
        let flags = Flags {
            markers: bits & 0x80 != 0,
            crc: bits & 0x40 != 0,
        };
        self.dirs
            .entry(key.reverse())
            .or_insert_with(Dir::new)
            .framer
            .set_peer(flags);
    }

    /// Over the limit: the oldest hole of any direction is given up, then
    /// the framers' partial frames are passed over, largest first.
    fn enforce_limit(&mut self, out: &mut Vec<Delivery>) {
        while self.total > self.limit {
            let Some(&(since, key)) = self.holes.first() else {
                break;
            };
            let Some(dir) = self.dirs.get_mut(&key) else {
                self.holes.remove(&(since, key));
                continue;
            };
            let before = (dir.bytes(), dir.hole_since);
            if !dir.give_up_hole(out) {
                dir.hole_since = None;
            }
            dir.check_end(out);
            self.settle(key, before);
        }
        while self.total > self.limit {
            let Some((&key, _)) = self.dirs.iter().max_by_key(|(_, d)| d.framer.held()) else {
                break;
            };
            let Some(dir) = self.dirs.get_mut(&key) else {
                break;
            };
            let before = (dir.bytes(), dir.hole_since);
            if before.0 == 0 {
                break;
            }
            dir.framer.shed();
            self.settle(key, before);
        }
    }

    /// The receiver of `key`'s stream acknowledged every octet before
    /// `ack` (from a segment of the reverse direction with ACK set): a
    /// hole below it is one the receiver filled and the capture missed,
    /// so no retransmission will come. It is given up now, a `Gap`,
    /// rather than held until the bound or the FIN.
    pub(crate) fn acked(
        &mut self,
        key: FlowKey,
        ack: u32,
        frame: u64,
        ts: u64,
        out: &mut Vec<Delivery>,
    ) {
        let cap = self.direction_cap() as i64;
        let Some(dir) = self.dirs.get_mut(&key) else {
            return;
        };
        if dir.isn.is_none() || dir.framer.is_closed() {
            return;
        }
        let upto = dir.offset(ack);
        if upto <= dir.next as i64 || upto - dir.next as i64 > cap {
            return;
        }
        let upto = upto as u64;
        let before = (dir.bytes(), dir.hole_since);
        while dir.held.first_key_value().is_some_and(|(&k, _)| k < upto) {
            dir.give_up_hole(out);
        }
        if dir.next < upto {
            dir.framer.gap(dir.next, upto - dir.next, frame, ts, out);
            dir.next = upto;
        }
        dir.check_end(out);
        self.settle(key, before);
    }

    /// What the MPA exchange negotiated for this direction, so framing can use it.
    pub(crate) fn negotiated(&mut self, key: FlowKey, markers: bool, crc: bool) {
        self.dirs
            .entry(key)
            .or_insert_with(Dir::new)
            .framer
            .set_explicit(Flags { markers, crc });
    }

    /// Octets held now (for `wire/cost.rs` and the memory budget), and the cap on them.
    pub(crate) fn bytes(&self) -> usize {
        self.total
    }

    pub(crate) fn set_limit(&mut self, bytes: usize) {
        self.limit = bytes;
    }

    /// Octets `key`'s framer parsed, CRC'd or scanned to find boundaries
    /// or markers (the hunt's work, which its credit bounds).
    #[cfg(test)]
    pub(crate) fn search_work(&self, key: FlowKey) -> u64 {
        self.dirs.get(&key).map_or(0, |d| d.framer.search_work())
    }

    /// Drops a direction's state (connection closed or evicted).
    pub(crate) fn forget(&mut self, key: FlowKey) {
        if let Some(dir) = self.dirs.remove(&key) {
            self.total = self.total.saturating_sub(dir.bytes());
            if let Some(f) = dir.hole_since {
                self.holes.remove(&(f, key));
            }
        }
    }
}

/// One segment into its direction: sequence numbers to offsets, the
/// octets held once, what is in order to the framer, holes given up
/// past the direction's cap.
fn feed(dir: &mut Dir, seg: &TcpSegment<'_>, cap: usize, out: &mut Vec<Delivery>) {
    if seg.syn {
        let isn = seg.seq.wrapping_add(1);
        if dir.isn.is_some_and(|i| i != isn) {
            // A new connection on the same ports: the old stream is over.
            *dir = Dir::new();
        }
        dir.isn = Some(isn);
    }
    if dir.framer.is_closed() {
        return;
    }
    let data_seq = seg.seq.wrapping_add(u32::from(seg.syn));
    if dir.isn.is_none() {
        // A mid-stream start: the first octet seen is offset 0.
        dir.isn = Some(data_seq);
    }
    let at = dir.offset(data_seq);
    let payload = seg.payload;
    let kept = payload.len();
    // A wire length under what was captured is nonsense: the capture wins.
    let wire = u64::from(seg.wire_len).max(kept as u64);
    if !payload.is_empty() {
        dir.hold(at, Piece::Data(payload.to_vec()), seg.frame, seg.ts);
    }
    if wire > kept as u64 {
        dir.hold(
            at + kept as i64,
            Piece::Lost(wire - kept as u64),
            seg.frame,
            seg.ts,
        );
    }
    if (seg.fin || seg.rst) && dir.end.is_none() {
        dir.end = Some(End {
            at: (at + wire as i64).max(0) as u64,
            reset: seg.rst,
            frame: seg.frame,
            ts: seg.ts,
        });
    }
    dir.advance(out);
    if !dir.held.is_empty() && dir.hole_since.is_none() {
        dir.hole_since = Some(seg.frame);
    }
    // A segment far ahead, or more held than the cap: holes are given up,
    // oldest first, until the rest fits.
    while dir.held_bytes > cap
        || dir
            .held
            .last_key_value()
            .is_some_and(|(&k, _)| k - dir.next > cap as u64)
    {
        if !dir.give_up_hole(out) {
            break;
        }
    }
    dir.check_end(out);
}

/// A fuzzing entry point (`analyzer/fuzz`, target `tcp_stream`):
/// arbitrary segments of eight directions through [`Streams`] under a
/// limit of 4 KiB plus 64 times the first octet; panics if `bytes()`
/// ever exceeds it. After the first octet, each segment is eight octets
/// (direction, flags: SYN 1, FIN 2, RST 4, negotiate 8 with markers 16
/// and CRC 32, forget 64; sequence number; length / 4; octets the snap
/// length cut) and its payload.
#[doc(hidden)]
pub fn fuzz_tcp_stream(data: &[u8]) {
    let mut streams = Streams::new();
    let limit = 4096 + usize::from(data.first().copied().unwrap_or(0)) * 64;
    streams.set_limit(limit);
    let mut out = Vec::new();
    let mut rest = data.get(1..).unwrap_or_default();
    let mut frame = 0;
    while let Some((head, tail)) = rest.split_first_chunk::<8>() {
        let [d, flags, s0, s1, s2, s3, l0, cut] = *head;
        let len = usize::from(u16::from_be_bytes([l0, 0]) >> 6).min(tail.len());
        let (payload, tail) = tail.split_at(len);
        rest = tail;
        frame += 1;
        let port = 20049 + u16::from(d & 3);
        let src = SocketAddr::from(([10, 0, 0, 1], port));
        let dst = SocketAddr::from(([10, 0, 0, 2], 20049));
        let key = if d & 4 == 0 {
            FlowKey { src, dst }
        } else {
            FlowKey { src: dst, dst: src }
        };
        let seg = TcpSegment {
            frame,
            ts: frame,
            seq: u32::from_be_bytes([s0, s1, s2, s3]),
            syn: flags & 1 != 0,
            fin: flags & 2 != 0,
            rst: flags & 4 != 0,
            payload: payload
                .get(..payload.len().saturating_sub(usize::from(cut & 7)))
                .unwrap_or_default(),
            wire_len: len as u32,
        };
        if flags & 8 != 0 {
            streams.negotiated(key, flags & 16 != 0, flags & 32 != 0);
        }
        if flags & 64 != 0 {
            streams.forget(key);
        }
        out.clear();
        streams.segment(key, &seg, &mut out);
        assert!(
            streams.bytes() <= limit,
            "{} octets held over a limit of {limit}",
            streams.bytes()
        );
    }
}
