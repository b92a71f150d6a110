//! MPA markers (RFC 5044 section 4.3): where they sit in a stream, the
//! octets with them taken out, and, for a stream whose MPA exchange the
//! capture lacks, the marker an FPDU would carry if markers were on.
//!
//! A marker is four octets every 512 of the stream, counted from `base`
//! (the first FPDU after the MPA frames): a reserved half, zero, then
//! FPDUPTR, the octets back from the marker to the start of the FPDU it
//! falls in (0 when the FPDU starts right after it, so the marker is that
//! FPDU's first). The first marker after an FPDU's start is thus at most
//! 512 octets in and points back to exactly that start: 32 bits that data
//! matches by chance about once in 2^32 positions, which is what lets a
//! reader that never saw M find the markers from one FPDU.

use rdma_dissectors::iwarp::mpa;

/// Stream octets between markers.
pub(super) const INTERVAL: u64 = mpa::MARKER_INTERVAL;
/// Octets of a marker.
pub(super) const MARKER: u64 = mpa::MARKER_LEN as u64;
/// Octets `first_marker` reads at most: the first marker after an FPDU's
/// start is at most 512 octets in.
pub(super) const SCAN: usize = (INTERVAL + MARKER) as usize;

/// The stream position after `n` marker-free octets from `at`, markers
/// counted from `base` (none if `None`): a marker at `at` itself belongs
/// to the FPDU that starts there (FPDUPTR 0), one right after the last
/// octet to the next.
pub(super) fn advance(base: Option<u64>, at: u64, n: u64) -> u64 {
    let Some(base) = base else {
        return at + n;
    };
    let (mut pos, mut left) = (at, n);
    if pos < base {
        // Octets before the first marker known: none among them.
        let take = (base - pos).min(left);
        pos += take;
        left -= take;
        if left == 0 && pos < base {
            return pos;
        }
    }
    loop {
        let into = (pos - base) % INTERVAL;
        if into < MARKER && (left > 0 || pos == at) {
            pos += MARKER - into;
            continue;
        }
        if left == 0 {
            return pos;
        }
        let take = (INTERVAL - into).min(left);
        pos += take;
        left -= take;
    }
}

/// `raw`, the stream octets from `at`, with the markers counted from
/// `base` taken out.
pub(super) fn strip(base: Option<u64>, at: u64, raw: &[u8]) -> Vec<u8> {
    let Some(base) = base else {
        return raw.to_vec();
    };
    let mut out = Vec::with_capacity(raw.len());
    let mut pos = at;
    let mut rest = raw;
    while !rest.is_empty() {
        let (keep, n) = if pos < base {
            (true, base - pos)
        } else {
            let into = (pos - base) % INTERVAL;
            if into < MARKER {
                (false, MARKER - into)
            } else {
                (true, INTERVAL - into)
            }
        };
        let n = usize::try_from(n).unwrap_or(usize::MAX).min(rest.len());
        let (chunk, tail) = rest.split_at(n);
        if keep {
            out.extend_from_slice(chunk);
        }
        rest = tail;
        pos += n as u64;
    }
    out
}

/// The first marker of an FPDU starting at stream position `at`, were
/// markers on: `from` holds the stream octets from `at` (as many as are
/// buffered). With `zero`, a zero word at `at` is a marker with FPDUPTR
/// 0 (only a CRC can tell it from the zero CRC field of an FPDU sent
/// without CRCs, which ends right there); otherwise the first word within
/// the next 512 octets whose reserved half is zero and whose FPDUPTR is
/// its own distance from `at`. Reads at most 516 octets. A zero word at
/// `at` followed by a marker 512 octets on that points back to `at` is
/// the FPDU's own marker, CRC or not.
pub(super) fn first_marker(at: u64, from: &[u8], zero: bool) -> Option<u64> {
    let starts_zero = from.get(..4) == Some(&[0, 0, 0, 0]);
    if zero && starts_zero {
        return Some(at);
    }
    let window = from.get(..from.len().min(SCAN))?;
    window
        .windows(4)
        .enumerate()
        .skip(1)
        .find(|(i, w)| {
            let ptr = u16::try_from(*i).unwrap_or(u16::MAX).to_be_bytes();
            w.first_chunk::<4>() == Some(&[0, 0, ptr[0], ptr[1]])
        })
        .map(|(i, _)| {
            if i as u64 == INTERVAL && starts_zero {
                at
            } else {
                at + i as u64
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advance_and_strip_step_over_markers() {
        // Markers at 100, 612, 1124...
        let base = Some(100);
        assert_eq!(advance(None, 50, 10), 60);
        // An FPDU at the marker starts after it.
        assert_eq!(advance(base, 100, 0), 104);
        assert_eq!(advance(base, 90, 20), 114);
        // Ending right before a marker leaves it to the next FPDU.
        assert_eq!(advance(base, 104, 508), 612);
        let raw: Vec<u8> = (0..20u8).collect();
        assert_eq!(
            strip(base, 90, &raw),
            [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 14, 15, 16, 17, 18, 19]
        );
        assert_eq!(strip(None, 90, &raw), raw);
    }

    #[test]
    fn the_first_marker_points_back_to_the_fpdu() {
        let mut s = vec![0xaau8; 600];
        // FPDUPTR 300 at offset 300 from an FPDU at stream offset 1000.
        s[300..304].copy_from_slice(&[0, 0, 0x01, 0x2c]);
        assert_eq!(first_marker(1000, &s, true), Some(1300));
        // A marker-like word pointing elsewhere is data.
        s[300..304].copy_from_slice(&[0, 0, 0x01, 0x2d]);
        assert_eq!(first_marker(1000, &s, true), None);
        // A zero word at the start: the FPDU's own marker.
        s[..4].copy_from_slice(&[0, 0, 0, 0]);
        assert_eq!(first_marker(1000, &s, true), Some(1000));
        assert_eq!(first_marker(1000, &s, false), None);
        // ... unless the marker 512 octets on points back to it.
        let mut long = vec![0xaau8; 600];
        long[..4].copy_from_slice(&[0, 0, 0, 0]);
        long[512..516].copy_from_slice(&[0, 0, 0x02, 0x00]);
        assert_eq!(first_marker(1000, &long, false), Some(1000));
        // Nothing past 512 octets in: the first marker is never further.
        let mut far = vec![0xaau8; 800];
        far[600..604].copy_from_slice(&[0, 0, 0x02, 0x58]);
        assert_eq!(first_marker(0, &far, true), None);
    }
}
