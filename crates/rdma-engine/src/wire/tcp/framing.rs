//! MPA framing of one direction's in-order stream: the Request or Reply
//! frame that opens it, then FPDUs, markers taken out, and the search for
//! the next FPDU boundary after a gap or a mid-stream start (where
//! `framing/undecided.rs` also finds out whether markers run).
//!
//! Positions are stream offsets as the TCP layer counts them (octet 0 is
//! the first after the SYN, or the first captured). The framer keeps the
//! bytes of the frame it is assembling and nothing it has delivered.
//!
//! ```text
//!  Start ──MPA key──► Mpa ──frame──► Fpdu ◄─────────────┐
//!    └──no key──► Hunt ──two plausible FPDUs / marker───┤
//!  Fpdu ──gap inside a frame of known length──► Skip ───┘ (certain)
//!  Fpdu ──gap at a boundary──► Hunt
//! ```

use std::cell::Cell;
use std::collections::VecDeque;

mod undecided;

use rdma_dissectors::iwarp::{crc32c, ddp, mpa, rdmap};

use super::markers::{self, INTERVAL, MARKER};
use super::Delivery;
/// Buffered octets past which the consumed head of the buffer is dropped.
const COMPACT_AT: usize = 16 << 10;
/// Buffer room given back once the buffer empties.
const SHRINK_AT: usize = 64 << 10;
/// Hunt positions kept waiting for the rest of their FPDUs.
const MAX_PENDING: usize = 64;
/// Octets of the shortest DDP header.
const MIN_ULPDU: u16 = ddp::TAGGED_LEN as u16;

/// Where the framer is in the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Nothing read yet: an MPA key or not decides.
    Start,
    /// Reading the Request or Reply frame.
    Mpa,
    /// In step: an FPDU starts at the head of the buffer.
    Fpdu,
    /// The next FPDU starts at `to`, known from the length or marker of
    /// one a gap cut: octets before it are dropped unread.
    Skip { to: u64 },
    /// Looking for an FPDU boundary at or after `from`.
    Hunt { from: u64 },
    /// FIN or RST seen: nothing more is framed.
    Closed,
}

/// What one end asked for in its MPA frame (RFC 5044 section 7.1): M,
/// markers in the stream it receives; C, CRCs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Flags {
    pub markers: bool,
    pub crc: bool,
}

/// The framing state of one direction.
#[derive(Debug)]
pub(super) struct Framer {
    phase: Phase,
    /// Stream octets from `start`, the first `head` of them consumed.
    buf: Vec<u8>,
    head: usize,
    start: u64,
    /// The frame (number, timestamp) that brought the octets from each offset.
    sources: VecDeque<(u64, u64, u64)>,
    /// Where the first FPDU starts. Markers count from here, not from the
    /// ISN: RFC 5044 section 4.3 puts the first marker immediately before
    /// the first FPDU of full operation (its FPDUPTR 0) and one every 512
    /// octets of the stream after it, markers included. tshark places
    /// them the same way (its get_first_marker_offset counts from the
    /// sequence number after the MPA frame), and agrees on every CRC of
    /// the generator's marked captures it decodes.
    base: Option<u64>,
    /// `Streams::negotiated`'s word, which overrides the frames seen.
    explicit: Option<Flags>,
    /// This end's MPA frame, and its peer's.
    own: Option<Flags>,
    peer: Option<Flags>,
    /// What the hunt found when neither told: CRCs that check, or none.
    learned_crc: Option<bool>,
    /// Markers when no MPA frame told (a mid-stream start): found from
    /// a marker inside an FPDU that points back to its start, or ruled
    /// out after a marker interval of FPDUs read without one.
    learned_markers: Option<bool>,
    /// Where the run of FPDUs read without markers, while they were
    /// undecided, began: once it covers a marker interval, a marked
    /// stream would have shown one.
    plain_since: Option<u64>,
    /// The last FPDU read both ways while markers were undecided, and the
    /// marker it showed.
    tried: Option<(u64, Option<u64>)>,
    /// Hunt candidates' first FPDUs read while markers were undecided
    /// (position, CRC tried, where it ends and the markers it showed).
    judged: Vec<(u64, bool, undecided::Verdict)>,
    /// Hunt candidates' FPDUs whose reading with markers waits for octets:
    /// (position, CRC tried, the marker found).
    hunt_tried: Vec<(u64, bool, Option<u64>)>,
    /// Octets passed over unread since framing was last in step.
    skipped: u64,
    /// Hunt positions that look like an FPDU whose pair is not all here.
    pending: Vec<u64>,
    /// Octets the hunt may still parse and CRC: each octet received adds
    /// `HUNT_WORK_PER_OCTET`, each candidate pair takes its length. A stream
    /// in which every octet looks like an FPDU header would otherwise cost a
    /// CRC of up to 64 KiB per octet scanned.
    hunt_credit: u64,
    /// Work a waiting candidate did past the credit left, paid from the
    /// credit later octets bring before the hunt reads anything more.
    hunt_debt: u64,
    /// Octets parsed, CRC'd or scanned for a marker to find a boundary or
    /// whether markers run: what `hunt_credit` bounds, counted as done
    /// (a `Cell`: the candidates are read through `&self`).
    search_work: Cell<u64>,
}

/// Hunt work allowed per octet received (octets parsed and CRC'd): enough
/// for real streams, where few positions pass the header test, and linear in
/// the input for hostile ones.
const HUNT_WORK_PER_OCTET: u64 = 64;
/// The most credit saved up: two of the largest FPDUs.
const HUNT_CREDIT_CAP: u64 = 4 * 65_540;

/// A decision the hunt cannot take yet.
struct NeedMore;

impl Framer {
    pub fn new() -> Self {
        Framer {
            phase: Phase::Start,
            buf: Vec::new(),
            head: 0,
            start: 0,
            sources: VecDeque::new(),
            base: None,
            explicit: None,
            own: None,
            peer: None,
            learned_crc: None,
            learned_markers: None,
            plain_since: None,
            tried: None,
            judged: Vec::new(),
            hunt_tried: Vec::new(),
            skipped: 0,
            pending: Vec::new(),
            hunt_credit: 0,
            hunt_debt: 0,
            search_work: Cell::new(0),
        }
    }

    /// Octets parsed, CRC'd or scanned to find FPDU boundaries or markers
    /// so far (see `search_work`).
    #[cfg(test)]
    pub fn search_work(&self) -> u64 {
        self.search_work.get()
    }

    /// Counts `n` octets of search work.
    fn worked(&self, n: usize) {
        self.search_work
            .set(self.search_work.get().saturating_add(n as u64));
    }

    /// Octets held.
    pub fn held(&self) -> usize {
        self.buf.len() - self.head
    }

    /// Where the next octet fed must sit.
    pub fn end(&self) -> u64 {
        self.start + self.buf.len() as u64
    }

    pub fn is_closed(&self) -> bool {
        self.phase == Phase::Closed
    }

    pub fn set_explicit(&mut self, f: Flags) {
        self.explicit = Some(f);
    }

    pub fn set_peer(&mut self, f: Flags) {
        self.peer = Some(f);
    }

    /// Whether markers run in this direction: its receiver's MPA frame
    /// says, else what the stream showed; `None` while neither did.
    fn markers_known(&self) -> Option<bool> {
        self.explicit
            .or(self.peer)
            .map(|f| f.markers)
            .or(self.learned_markers)
    }

    /// Markers run in this direction when its receiver asked for them
    /// (or the stream showed them) and where they count from is known.
    fn markers(&self) -> bool {
        self.markers_known() == Some(true) && self.base.is_some()
    }

    /// The marker base framing reads with: `None` without markers.
    fn marker_base(&self) -> Option<u64> {
        self.base.filter(|_| self.markers())
    }

    /// CRCs run when either end asked (RFC 5044 section 7.1); `None`
    /// while one end's frame is unseen and the other did not ask.
    fn crc(&self) -> Option<bool> {
        if let Some(f) = self.explicit {
            return Some(f.crc);
        }
        match (self.own, self.peer) {
            (Some(a), Some(b)) => Some(a.crc || b.crc),
            (Some(f), None) | (None, Some(f)) if f.crc => Some(true),
            _ => self.learned_crc,
        }
    }

    /// Octets `[at, at + n)` of the stream, if buffered.
    fn get(&self, at: u64, n: usize) -> Option<&[u8]> {
        let from = usize::try_from(at.checked_sub(self.start)?).ok()?;
        self.buf.get(from..from.checked_add(n)?)
    }

    fn source(&self, at: u64) -> (u64, u64) {
        self.sources
            .iter()
            .rev()
            .find(|s| s.0 <= at)
            .or(self.sources.front())
            .map_or((0, 0), |s| (s.1, s.2))
    }

    /// Appends the octets at `at` (the framer's `end()`, else they are
    /// ignored: the TCP layer feeds it in order) and frames what they complete.
    pub fn push(&mut self, at: u64, data: &[u8], frame: u64, ts: u64, out: &mut Vec<Delivery>) {
        if at != self.end() || self.phase == Phase::Closed {
            return;
        }
        if let Phase::Skip { to } = self.phase {
            // Octets before the next boundary are dropped as they come.
            let drop = usize::try_from(to.saturating_sub(at))
                .unwrap_or(usize::MAX)
                .min(data.len());
            self.skipped += drop as u64;
            self.start += drop as u64;
            let rest = data.get(drop..).unwrap_or_default();
            if rest.is_empty() {
                return;
            }
            self.phase = Phase::Fpdu;
            self.resync(true, frame, ts, out);
            return self.push(at + drop as u64, rest, frame, ts, out);
        }
        if self.sources.back().is_none_or(|s| s.1 != frame) {
            self.sources.push_back((at, frame, ts));
        }
        self.buf.extend_from_slice(data);
        self.hunt_credit = (self.hunt_credit)
            .saturating_add(HUNT_WORK_PER_OCTET.saturating_mul(data.len() as u64))
            .min(HUNT_CREDIT_CAP);
        let pay = self.hunt_debt.min(self.hunt_credit);
        self.hunt_debt -= pay;
        self.hunt_credit -= pay;
        self.run(out);
    }

    /// The octets `[at, at + len)` are lost: says so, drops the frame
    /// in progress and finds out where framing resumes.
    pub fn gap(&mut self, at: u64, len: u64, frame: u64, ts: u64, out: &mut Vec<Delivery>) {
        if self.phase == Phase::Closed || len == 0 {
            return;
        }
        out.push(Delivery::Gap {
            frame,
            ts,
            bytes: len,
        });
        let resume = at + len;
        let boundary = match self.phase {
            Phase::Skip { to } => Some(to),
            Phase::Fpdu => self.fpdu_raw_len().map(|n| self.head_pos() + n),
            _ => None,
        };
        self.skipped += self.held() as u64;
        self.clear(resume);
        self.phase = match boundary {
            Some(to) if to >= resume => Phase::Skip { to },
            _ => Phase::Hunt { from: resume },
        };
        if self.phase == (Phase::Skip { to: resume }) {
            self.phase = Phase::Fpdu;
            self.resync(true, frame, ts, out);
        }
    }

    /// Gives up what is buffered to stay within the budget: the octets
    /// are passed over (counted in the next `Resync`), not lost.
    pub fn shed(&mut self) {
        let held = self.held() as u64;
        if held == 0 {
            return;
        }
        let end = self.end();
        let boundary = match self.phase {
            Phase::Fpdu => self.fpdu_raw_len().map(|n| self.head_pos() + n),
            _ => None,
        };
        self.skipped += held;
        self.clear(end);
        self.phase = match (self.phase, boundary) {
            (Phase::Closed, _) => Phase::Closed,
            (_, Some(to)) if to > end => Phase::Skip { to },
            _ => Phase::Hunt { from: end },
        };
    }

    /// FIN or RST: a frame left half-read lacks the rest of its octets.
    pub fn close(&mut self, frame: u64, ts: u64, reset: bool, out: &mut Vec<Delivery>) {
        if self.phase == Phase::Closed {
            return;
        }
        let missing = match self.phase {
            Phase::Fpdu | Phase::Mpa if self.held() > 0 => {
                let need = if self.phase == Phase::Mpa {
                    self.mpa_len()
                } else {
                    self.fpdu_raw_len()
                };
                need.map_or(1, |n| n.saturating_sub(self.held() as u64))
            }
            Phase::Skip { to } => to.saturating_sub(self.end()),
            _ => 0,
        };
        if missing > 0 {
            out.push(Delivery::Gap {
                frame,
                ts,
                bytes: missing,
            });
        }
        let end = self.end();
        self.clear(end);
        self.phase = Phase::Closed;
        out.push(Delivery::Closed { frame, ts, reset });
    }

    fn clear(&mut self, at: u64) {
        self.pending.clear();
        self.judged.clear();
        self.hunt_tried.clear();
        self.plain_since = None;
        self.buf = Vec::new();
        self.head = 0;
        self.start = at;
        self.sources.clear();
    }

    fn head_pos(&self) -> u64 {
        self.start + self.head as u64
    }

    fn consume_to(&mut self, pos: u64) {
        let n = usize::try_from(pos.saturating_sub(self.head_pos())).unwrap_or(usize::MAX);
        self.head = (self.head + n).min(self.buf.len());
        if self.head == self.buf.len() {
            let end = self.end();
            self.buf.clear();
            if self.buf.capacity() > SHRINK_AT {
                // A large FPDU's room is not kept for a connection at rest.
                self.buf = Vec::new();
            }
            self.head = 0;
            self.start = end;
        } else if self.head >= COMPACT_AT && self.head * 2 >= self.buf.len() {
            self.buf.drain(..self.head);
            self.start += self.head as u64;
            self.head = 0;
        }
        let at = self.head_pos();
        while self.sources.len() > 1 && self.sources.get(1).is_some_and(|s| s.0 <= at) {
            self.sources.pop_front();
        }
    }

    fn resync(&mut self, certain: bool, frame: u64, ts: u64, out: &mut Vec<Delivery>) {
        self.pending.clear();
        out.push(Delivery::Resync {
            frame,
            ts,
            skipped: std::mem::take(&mut self.skipped),
            certain,
        });
    }

    /// Frames whatever the buffer completes.
    fn run(&mut self, out: &mut Vec<Delivery>) {
        loop {
            let progressed = match self.phase {
                Phase::Start => self.start_phase(),
                Phase::Mpa => self.mpa_frame(out),
                Phase::Fpdu => self.fpdu(out),
                Phase::Hunt { from } => self.hunt(from, out),
                Phase::Skip { .. } | Phase::Closed => false,
            };
            if !progressed {
                return;
            }
        }
    }

    fn start_phase(&mut self) -> bool {
        let have = self.get(self.head_pos(), self.held()).unwrap_or_default();
        let key = mpa::KEY_REQUEST.len();
        let could_be =
            |k: &[u8; 16]| k.starts_with(have.get(..have.len().min(key)).unwrap_or_default());
        if have.len() >= key || !(could_be(mpa::KEY_REQUEST) || could_be(mpa::KEY_REPLY)) {
            self.phase = if mpa::frame_kind(have).is_some() {
                Phase::Mpa
            } else {
                Phase::Hunt {
                    from: self.head_pos(),
                }
            };
            return true;
        }
        false
    }

    /// Octets of the MPA frame at the head: 20 and PD_Length (section 7.1).
    fn mpa_len(&self) -> Option<u64> {
        let at = self.head_pos() + 18;
        let pd = self.get(at, 2)?.first_chunk::<2>()?;
        Some(mpa::FRAME_HEADER_LEN as u64 + u64::from(u16::from_be_bytes(*pd)))
    }

    fn mpa_frame(&mut self, out: &mut Vec<Delivery>) -> bool {
        let Some(len) = self.mpa_len() else {
            return false;
        };
        let at = self.head_pos();
        let Some(bytes) = self.get(at, len as usize).map(<[u8]>::to_vec) else {
            return false;
        };
        let (first_frame, _) = self.source(at);
        let (frame, ts) = self.source(at + len - 1);
        if let Some(&bits) = bytes.get(16) {
            self.own = Some(Flags {
                markers: bits & 0x80 != 0,
                crc: bits & 0x40 != 0,
            });
        }
        out.push(Delivery::Mpa {
            first_frame,
            frame,
            ts,
            bytes,
        });
        self.consume_to(at + len);
        self.base = Some(at + len);
        // The peer's frame, which completes the negotiation, comes before
        // this end's first FPDU; `fpdu` hunts if it never came.
        self.phase = Phase::Fpdu;
        true
    }

    /// The marker-free octets of `[at, end)`, if buffered.
    fn strip(&self, at: u64, end: u64) -> Option<Vec<u8>> {
        self.strip_with(self.marker_base(), at, end)
    }

    fn strip_with(&self, base: Option<u64>, at: u64, end: u64) -> Option<Vec<u8>> {
        let raw = self.get(at, usize::try_from(end.checked_sub(at)?).ok()?)?;
        Some(markers::strip(base, at, raw))
    }

    /// Stream octets of the FPDU at the head, markers included, once its
    /// ULPDU_Length is buffered.
    fn fpdu_raw_len(&self) -> Option<u64> {
        let at = self.head_pos();
        let crc = self.crc().unwrap_or(false);
        self.fpdu_span(at, crc).map(|(end, _)| end - at)
    }

    /// Where the FPDU at `at` ends and where its CRC starts.
    fn fpdu_span(&self, at: u64, crc: bool) -> Option<(u64, u64)> {
        // The CRC field ends every FPDU, negotiated or not (RFC 5044
        // section 4.1); only its check depends on `crc`.
        let _ = crc;
        self.span_with(self.marker_base(), at)
    }

    /// Where the FPDU at `at` ends and where its CRC starts, read with
    /// markers counted from `base` (none if `None`).
    fn span_with(&self, base: Option<u64>, at: u64) -> Option<(u64, u64)> {
        let hdr = self.strip_with(base, at, markers::advance(base, at, 2))?;
        let ulen = u16::from_be_bytes(*hdr.first_chunk::<2>()?);
        let body = 2 + u64::from(ulen) + u64::from(mpa::pad_len(ulen));
        let crc_at = markers::advance(base, at, body);
        let crc_at = markers::advance(base, crc_at, 0);
        Some((markers::advance(base, at, body + 4), crc_at))
    }

    fn fpdu(&mut self, out: &mut Vec<Delivery>) -> bool {
        let at = self.head_pos();
        if self.held() == 0 {
            return false;
        }
        let Some(crc) = self.crc() else {
            self.phase = Phase::Hunt { from: at };
            return true;
        };
        if self.markers_known().is_none() {
            // A mid-stream start: each FPDU may show markers the MPA
            // exchange would have announced.
            match self.reading(at, crc) {
                Err(NeedMore) => return false,
                Ok(Some(m)) => self.learn_markers(m),
                Ok(None) => self.read_plain(at),
            }
        }
        let Some((end, crc_at)) = self.fpdu_span(at, crc) else {
            return false;
        };
        let Some(bytes) = self.strip(at, end) else {
            return false;
        };
        let (first_frame, _) = self.source(at);
        let (frame, ts) = self.source(end - 1);
        // The CRC covers the markers inside the FPDU (RFC 5044 section
        // 4.4), which `bytes` lacks: computed here over the octets as sent.
        let crc_with_markers = (crc && self.markers())
            .then(|| self.get(at, usize::try_from(crc_at - at).unwrap_or(0)))
            .flatten()
            .map(crc32c::checksum);
        out.push(Delivery::Fpdu {
            first_frame,
            frame,
            ts,
            bytes,
            crc_with_markers,
        });
        self.consume_to(end);
        true
    }

    /// One step of the search for a boundary from `from`: true when it
    /// found one. Each position is looked at once as octets arrive; the
    /// few whose FPDUs are not all here yet wait in `pending`. A later
    /// position whose pair checks wins over a waiting earlier one: were
    /// both boundaries, the earlier FPDUs would lead to the later and be
    /// all here.
    fn hunt(&mut self, from: u64, out: &mut Vec<Delivery>) -> bool {
        let from = from.max(self.head_pos());
        if self.markers() {
            return self.hunt_marker(from, out);
        }
        let mut waiting = Vec::new();
        let mut found = None;
        for p in std::mem::take(&mut self.pending) {
            if found.is_some() {
                break;
            }
            if self.hunt_credit == 0 {
                // Out of work: it is tried again when octets bring credit.
                waiting.push(p);
                continue;
            }
            match self.charged(|f| f.candidate(p)) {
                Ok(Some(v)) => found = Some((p, v)),
                Err(NeedMore) => waiting.push(p),
                Ok(None) => {}
            }
        }
        let mut scan = from;
        while found.is_none() && scan + 4 <= self.end() {
            let cost = self.pair_len(scan);
            if cost > self.hunt_credit {
                // Out of work for now: the scan goes on from here when
                // more octets (and so more credit) come.
                break;
            }
            self.hunt_credit -= cost;
            match self.candidate(scan) {
                Ok(Some(v)) => found = Some((scan, v)),
                Ok(None) => {}
                Err(NeedMore) => waiting.push(scan),
            }
            scan += 1;
        }
        if let Some((pos, (crc, certain, base))) = found {
            self.skipped += pos - self.head_pos();
            self.consume_to(pos);
            if self.crc().is_none() {
                self.learned_crc = Some(crc);
            }
            if let Some(m) = base {
                self.learn_markers(m);
            }
            let (frame, ts) = self.source(pos);
            self.phase = Phase::Fpdu;
            self.resync(certain, frame, ts, out);
            return true;
        }
        if waiting.len() > MAX_PENDING {
            waiting.drain(..waiting.len() - MAX_PENDING);
        }
        let keep = waiting.first().copied().unwrap_or(scan).min(scan);
        self.skipped += keep - self.head_pos();
        self.consume_to(keep);
        self.pending = waiting;
        self.phase = Phase::Hunt { from: scan };
        false
    }

    /// With markers: the next marker's FPDUPTR names where its FPDU
    /// starts (RFC 5044 section 4.3); one that starts before `from` lies
    /// in the gap, so the marker after it is read.
    fn hunt_marker(&mut self, from: u64, out: &mut Vec<Delivery>) -> bool {
        let Some(base) = self.base else {
            return false;
        };
        let into = from.saturating_sub(base) % INTERVAL;
        let mut m = if into == 0 {
            from
        } else {
            from + INTERVAL - into
        };
        loop {
            let Some(mk) = self.get(m, MARKER as usize) else {
                self.skipped += m.min(self.end()) - self.head_pos();
                self.consume_to(m.min(self.end()));
                self.phase = Phase::Hunt { from: m };
                return false;
            };
            let ptr = u64::from(u16::from_be_bytes([mk[2], mk[3]]));
            if let Some(s) = m.checked_sub(ptr).filter(|&s| s >= from && s >= base) {
                self.skipped += s - self.head_pos();
                self.consume_to(s);
                let (frame, ts) = self.source(m);
                self.phase = Phase::Fpdu;
                // Markers found in the stream, not announced, confirm a
                // boundary only as far as a CRC confirmed them.
                let certain = self.explicit.or(self.peer).is_some() || self.crc() == Some(true);
                self.resync(certain, frame, ts, out);
                return true;
            }
            m += INTERVAL;
        }
    }

    /// `try_candidate` with the work it did taken from the credit: a
    /// waiting candidate is tried again on every segment, and when its
    /// octets come it is read whole (up to two 64 KiB FPDUs, both ways)
    /// without the scan's advance charge. Work past the credit left is
    /// owed (`hunt_debt`), so one candidate's overrun is all it can take.
    fn charged<T>(&mut self, try_candidate: impl FnOnce(&mut Self) -> T) -> T {
        let before = self.search_work.get();
        let r = try_candidate(self);
        let work = self.search_work.get().saturating_sub(before);
        let paid = work.min(self.hunt_credit);
        self.hunt_credit -= paid;
        self.hunt_debt = self.hunt_debt.saturating_add(work - paid);
        r
    }

    /// Octets a candidate pair at `pos` would have parsed and CRC'd: 0 when
    /// its first header is not plausible or the pair is not all here (then
    /// `candidate` reads headers only).
    fn pair_len(&self, pos: u64) -> u64 {
        if self.markers_known().is_none() {
            return self.undecided_pair_len(pos);
        }
        let Some(head) = self.get(pos, 4).filter(|h| plausible_header(h)) else {
            return 0;
        };
        let first = fpdu_len(head);
        let Some(next) = self.get(pos + first, 4) else {
            return 0;
        };
        let total = first + fpdu_len(next);
        if self.get(pos, total as usize).is_none() {
            return 0;
        }
        // CRCs are tried both ways when not known: twice the work.
        total * if self.crc().is_none() { 2 } else { 1 }
    }

    /// `pair_len` while markers are undecided: each FPDU may be read
    /// both ways, and scanned for its marker.
    fn undecided_pair_len(&self, pos: u64) -> u64 {
        let Some(need) = self.fpdu_need(pos).filter(|&n| n > 0) else {
            return 0;
        };
        if self
            .get(pos, usize::try_from(need).unwrap_or(usize::MAX))
            .is_none()
        {
            return 0;
        }
        // The second FPDU, where it starts without markers: its length
        // stands for what its reading will cost.
        let len = self.get(pos, 4).map_or(0, fpdu_len);
        let second = self.fpdu_need(pos + len).unwrap_or(0);
        let tries = if self.crc().is_none() { 2 } else { 1 };
        tries * 2 * (need + second + 2 * (INTERVAL + MARKER))
    }

    /// Whether an FPDU and the next one start at `pos`:
    /// `Some((crc, certain, base))` when they do (`base`: the markers
    /// the pair showed), CRCs tried first unless known absent.
    fn candidate(&mut self, pos: u64) -> Result<Option<(bool, bool, Option<u64>)>, NeedMore> {
        let head = self.get(pos, 4).ok_or(NeedMore)?;
        let undecided = self.markers_known().is_none();
        // Undecided, a zero word may be the marker an FPDU starts with.
        if !(plausible_header(head) || undecided && head == [0, 0, 0, 0]) {
            return Ok(None);
        }
        let tries: &[bool] = match self.crc() {
            Some(true) => &[true],
            Some(false) => &[false],
            None => &[true, false],
        };
        let mut wait = false;
        for &crc in tries {
            let pair = if undecided {
                self.pair_undecided(pos, crc)
            } else {
                self.pair(pos, crc).map(|ok| ok.then_some(None))
            };
            match pair {
                Ok(Some(base)) => return Ok(Some((crc, crc, base))),
                Ok(None) => {}
                Err(NeedMore) => wait = true,
            }
        }
        if wait {
            Err(NeedMore)
        } else {
            Ok(None)
        }
    }

    /// Two FPDUs in a row from `pos`, each plausible and, with `crc`,
    /// each with a CRC that checks.
    ///
    /// Both FPDUs must be buffered whole before either is parsed or its CRC
    /// computed: a candidate waiting for more octets is looked at again on
    /// every segment, and must cost a header read then, not a CRC over up to
    /// 64 KiB (a stream trickled in 1-octet segments would pay it each time).
    fn pair(&self, pos: u64, crc: bool) -> Result<bool, NeedMore> {
        let mut spans = [(0u64, 0u64); 2];
        let mut at = pos;
        for span in &mut spans {
            let head = self.get(at, 4).ok_or(NeedMore)?;
            if !plausible_header(head) {
                return Ok(false);
            }
            let len = fpdu_len(head);
            *span = (at, len);
            at += len;
        }
        self.get(pos, (at - pos) as usize).ok_or(NeedMore)?;
        for (at, len) in spans {
            let fpdu = self.get(at, len as usize).ok_or(NeedMore)?;
            self.worked(fpdu.len());
            if !plausible_fpdu(fpdu, crc) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// Marker-free octets of the FPDU whose first four octets are `head`:
/// its CRC field is there whether or not CRCs are checked (RFC 5044
/// section 4.1).
fn fpdu_len(head: &[u8]) -> u64 {
    let ulen = head
        .first_chunk::<2>()
        .map_or(0, |b| u16::from_be_bytes(*b));
    2 + u64::from(ulen) + u64::from(mpa::pad_len(ulen)) + mpa::CRC_LEN as u64
}

/// ULPDU_Length room for a DDP header, DDP version 1, RDMAP version 1, an
/// opcode RFC 5040 defines in the kind of segment it needs.
fn plausible_header(head: &[u8]) -> bool {
    let [l0, l1, ctl, ulp] = head.first_chunk::<4>().copied().unwrap_or_default();
    let tagged = ctl & 0x80 != 0;
    let ulen = u16::from_be_bytes([l0, l1]);
    let min = if tagged {
        MIN_ULPDU
    } else {
        ddp::UNTAGGED_LEN as u16
    };
    ctl & 0x03 == ddp::VERSION_1
        && ulp >> 6 == rdmap::VERSION_1
        && ulen >= min
        && rdmap::Opcode::from_bits(ulp & 0x0f).is_some_and(|op| op.tagged() == tagged)
}

/// The whole FPDU parses as DDP and RDMAP, and its CRC checks when there
/// is one.
fn plausible_fpdu(fpdu: &[u8], crc: bool) -> bool {
    match mpa::Fpdu::parse(fpdu, crc) {
        Ok((f, _)) => {
            !matches!(f.crc, mpa::CrcStatus::Invalid { .. })
                && rdmap::Segment::parse(f.ulpdu).is_ok()
        }
        Err(_) => false,
    }
}
