//! Framing a stream whose MPA exchange the capture lacks (it started
//! mid-stream): nothing says whether markers run, nor where they count
//! from. Each FPDU is read without markers first; one whose reading fails
//! (its CRC, or without CRCs the header after it) is read again with the
//! marker it would carry (`markers::first_marker`: a word inside it whose
//! FPDUPTR points back to its start), and that reading wins when it holds.
//! A marker found fixes where all of them sit; a marker interval of FPDUs
//! read without one rules them out, since a marked stream has one in any
//! 516 octets.
//!
//! FPDUs read without markers are delivered at once, as in a stream known
//! to have none: a reader that waited for proof would hand one direction's
//! Sends to the engine after the other's replies.

use super::{markers, plausible_fpdu, plausible_header, Framer, NeedMore, INTERVAL, MARKER};
use rdma_dissectors::iwarp::crc32c;

/// Octets of the headers read past an FPDU to compare two readings.
const NEXT: u64 = 4;
/// How a hunt candidate's FPDU read: where it ends and the markers it
/// showed, or `None` when it does not hold.
pub(super) type Verdict = Option<(u64, Option<u64>)>;

/// Hunt candidates whose first FPDU's verdict is kept: as many as wait.
const JUDGED: usize = super::MAX_PENDING;

impl Framer {
    /// How the FPDU at `at` reads while markers are undecided: `Some(m)`
    /// with markers counted from `m`, `None` without.
    pub(super) fn reading(&mut self, at: u64, crc: bool) -> Result<Option<u64>, NeedMore> {
        let mut tried = self.tried;
        let r = self.judge(at, crc, true, &mut tried);
        self.tried = tried;
        r
    }

    /// `reading`, its last try kept in `tried` (where it was, the marker
    /// found): an FPDU waiting for the octets its markers add is not
    /// CRC'd and scanned again on every segment. `in_step`: `at` is known
    /// to be a boundary, so a zero word there may be taken for its marker
    /// (`led_by_marker`).
    fn judge(
        &self,
        at: u64,
        crc: bool,
        in_step: bool,
        tried: &mut Option<(u64, Option<u64>)>,
    ) -> Result<Option<u64>, NeedMore> {
        let led = !crc && in_step && self.led_by_marker(at);
        let (end, _) = self.span_with(None, at).ok_or(NeedMore)?;
        let plain = self
            .get(at, usize::try_from(end - at).unwrap_or(usize::MAX))
            .ok_or(NeedMore)?;
        let m = match *tried {
            Some((t, m)) if t == at => m,
            _ => {
                if crc {
                    self.worked(plain.len());
                    if plausible_fpdu(plain, true) {
                        return Ok(None);
                    }
                }
                let rest = self
                    .get(at, usize::try_from(self.end() - at).unwrap_or(0))
                    .unwrap_or_default();
                self.worked(rest.len().min(markers::SCAN));
                let m = if led {
                    Some(at)
                } else {
                    markers::first_marker(at, rest, crc)
                };
                *tried = Some((at, m));
                m
            }
        };
        let Some(m) = m else {
            return Ok(None);
        };
        let marked = self.marked_holds(at, m, crc)?;
        if crc || led {
            return Ok(marked.then_some(m));
        }
        // Without CRCs the reading with markers wins where the one
        // without lands on data, or a second marker in the FPDU agrees.
        let plain_next = self.get(end, NEXT as usize).ok_or(NeedMore)?;
        Ok((marked && (!plausible_header(plain_next) || self.second_marker(at, m))).then_some(m))
    }

    /// Without CRCs, whether the zero word at the boundary `at` is the
    /// marker its FPDU starts with (FPDUPTR 0): read without markers it is
    /// an FPDU of length 0, which no header allows, while the header after
    /// it is plausible (`marked_holds` then checks the one after that
    /// FPDU). `first_marker` cannot tell without a CRC unless a marker 512
    /// octets on points back, which an FPDU under 512 octets never holds.
    /// Only where `at` is known to be a boundary: to the hunt, the zero
    /// CRC field of an FPDU sent without CRCs, followed by the next
    /// header, looks the same, and would make it find markers in a stream
    /// without any (it finds the FPDU 4 octets on instead, and the first
    /// FPDU in step led by its marker shows them).
    fn led_by_marker(&self, at: u64) -> bool {
        self.get(at, 4) == Some(&[0, 0, 0, 0][..])
            && self.get(at + MARKER, 4).is_some_and(plausible_header)
    }

    /// Whether the FPDU at `at`, read with markers from `m`, holds a
    /// second marker 512 octets after `m` that points back to `at` too.
    fn second_marker(&self, at: u64, m: u64) -> bool {
        let next = m + INTERVAL;
        let Some((end, _)) = self.span_with(Some(m), at) else {
            return false;
        };
        let Ok(ptr) = u16::try_from(next - at) else {
            return false;
        };
        let [hi, lo] = ptr.to_be_bytes();
        next + MARKER <= end && self.get(next, 4) == Some(&[0, 0, hi, lo][..])
    }

    /// Whether the FPDU at `at`, read with markers from `m`, parses (and
    /// its CRC, over the octets as sent, checks when `crc`); without
    /// CRCs, also whether the header after it is plausible.
    ///
    /// Everything it reads must be here before the FPDU is copied out of
    /// its markers: a hunt candidate waiting for the header after it is
    /// tried again on every segment, and would copy up to 64 KiB each time.
    fn marked_holds(&self, at: u64, m: u64, crc: bool) -> Result<bool, NeedMore> {
        let base = Some(m);
        let (end, crc_at) = self.span_with(base, at).ok_or(NeedMore)?;
        let next_at = markers::advance(base, end, 0);
        let next_end = markers::advance(base, next_at, NEXT);
        if !crc {
            self.get(next_at, usize::try_from(next_end - next_at).unwrap_or(0))
                .ok_or(NeedMore)?;
        }
        let bytes = self.strip_with(base, at, end).ok_or(NeedMore)?;
        self.worked(bytes.len());
        if crc {
            let raw = self
                .get(at, usize::try_from(crc_at - at).unwrap_or(0))
                .ok_or(NeedMore)?;
            let field = bytes.last_chunk::<4>().ok_or(NeedMore)?;
            let ok = crc32c::wire_value(*field) == crc32c::checksum(raw);
            return Ok(ok && plausible_fpdu(&bytes, false));
        }
        let next = self.strip_with(base, next_at, next_end).ok_or(NeedMore)?;
        Ok(plausible_fpdu(&bytes, false) && plausible_header(&next))
    }

    /// Two FPDUs from `pos` while markers are undecided: `Some(base)`
    /// when they hold (`base`: the markers they showed).
    ///
    /// Each FPDU is parsed and CRC'd once, when it is buffered with room
    /// for the markers it may hold and the header after it: a candidate
    /// waiting for octets is looked at again on every segment, and must
    /// cost header reads only then. The first FPDU's verdict is kept
    /// (`judged`) while the second is awaited, since only its reading says
    /// where the second starts.
    pub(super) fn pair_undecided(
        &mut self,
        pos: u64,
        crc: bool,
    ) -> Result<Option<Option<u64>>, NeedMore> {
        let first = match self.judged.iter().find(|j| j.0 == pos && j.1 == crc) {
            Some(j) => j.2,
            None => {
                let need = self.fpdu_need(pos).ok_or(NeedMore)?;
                if need == 0 {
                    return Ok(None);
                }
                self.get(pos, usize::try_from(need).unwrap_or(usize::MAX))
                    .ok_or(NeedMore)?;
                let v = self.judge_remembered(pos, crc, None)?;
                if self.judged.len() >= JUDGED {
                    self.judged.remove(0);
                }
                self.judged.push((pos, crc, v));
                v
            }
        };
        let Some((next, base)) = first else {
            return Ok(None);
        };
        let need = self.fpdu_need(next).ok_or(NeedMore)?;
        if need == 0 {
            return Ok(None);
        }
        self.get(next, usize::try_from(need).unwrap_or(usize::MAX))
            .ok_or(NeedMore)?;
        let second = self.judge_remembered(next, crc, base)?;
        Ok(second.map(|(_, b)| base.or(b)))
    }

    /// `judge_fpdu` for a hunt candidate, what it tried kept (`hunt_tried`)
    /// when it must wait for the octets its markers add: the wait costs a
    /// header read on each segment, not the CRC and scan again.
    fn judge_remembered(
        &mut self,
        at: u64,
        crc: bool,
        base: Option<u64>,
    ) -> Result<Verdict, NeedMore> {
        let mut tried = self
            .hunt_tried
            .iter()
            .find(|t| t.0 == at && t.1 == crc)
            .map(|t| (t.0, t.2));
        let r = self.judge_fpdu(at, crc, base, &mut tried);
        if let (Err(NeedMore), Some((t, m))) = (&r, tried) {
            if !self.hunt_tried.iter().any(|x| x.0 == t && x.1 == crc) {
                if self.hunt_tried.len() >= JUDGED {
                    self.hunt_tried.remove(0);
                }
                self.hunt_tried.push((t, crc, m));
            }
        }
        r
    }

    /// The FPDU at `at` read as the hunt reads a candidate (markers from
    /// `base`, else found or not by `judge`): where it ends and the
    /// markers it showed, or `None` when it does not hold.
    fn judge_fpdu(
        &self,
        at: u64,
        crc: bool,
        base: Option<u64>,
        tried: &mut Option<(u64, Option<u64>)>,
    ) -> Result<Verdict, NeedMore> {
        let base = match base {
            Some(b) => Some(b),
            None => self.judge(at, crc, false, tried)?,
        };
        let (end, _) = self.span_with(base, at).ok_or(NeedMore)?;
        let bytes = self.strip_with(base, at, end).ok_or(NeedMore)?;
        let head = bytes.get(..4).ok_or(NeedMore)?;
        self.worked(bytes.len());
        if !plausible_header(head) || !plausible_fpdu(&bytes, crc && base.is_none()) {
            return Ok(None);
        }
        if let Some(m) = base.filter(|_| crc) {
            if !self.marked_holds(at, m, true)? {
                return Ok(None);
            }
        }
        Ok(Some((end, base)))
    }

    /// Octets from `at` that must be buffered before the FPDU there is
    /// judged (0: its header is not plausible), or `None` while its header
    /// is not here: its length without markers. Reading it with markers,
    /// when that is tried, may ask for a few more (`NeedMore`): an FPDU
    /// read without them is judged as soon as it is here, as in a stream
    /// known to have none, so a direction's Sends are not held back.
    pub(super) fn fpdu_need(&self, at: u64) -> Option<u64> {
        let word = self.get(at, 4)?;
        // An FPDU that starts with its marker (FPDUPTR 0): header after it.
        let lead = if word == [0, 0, 0, 0] { MARKER } else { 0 };
        let head = self.get(at + lead, 4)?;
        if !plausible_header(head) {
            return Some(0);
        }
        Some(lead + super::fpdu_len(head))
    }

    /// A marker at `m` fixes where they all sit.
    pub(super) fn learn_markers(&mut self, m: u64) {
        self.learned_markers = Some(true);
        self.base = Some(m);
        self.plain_since = None;
        self.tried = None;
    }

    /// The FPDU at `at` reads without markers: once such FPDUs cover a
    /// marker interval and a marker's own octets, there are none.
    pub(super) fn read_plain(&mut self, at: u64) {
        let since = *self.plain_since.get_or_insert(at);
        if at - since >= INTERVAL + MARKER {
            self.learned_markers = Some(false);
            self.plain_since = None;
        }
        self.tried = None;
    }
}
