//! Bounds-checked readers for fixed header layouts.
//!
//! Fixed-size headers (BTH, RETH, MADs) are clearer as a table of field
//! offsets than as nom bit parsers; these helpers keep those reads panic-free.
//! Each returns `None` past the end of the slice, which callers turn into
//! [`crate::Error::Truncated`] after checking the whole header length once.

/// Reads a big-endian `u8` at `at`.
#[inline]
pub(crate) fn u8_at(b: &[u8], at: usize) -> u8 {
    b.get(at).copied().unwrap_or(0)
}

/// Reads a big-endian `u16` at `at`, or 0 past the end.
#[inline]
pub(crate) fn u16_at(b: &[u8], at: usize) -> u16 {
    match b.get(at..at.wrapping_add(2)) {
        Some(&[x, y]) => u16::from_be_bytes([x, y]),
        _ => 0,
    }
}

/// Reads a big-endian 24-bit value at `at`, or 0 past the end.
#[inline]
pub(crate) fn u24_at(b: &[u8], at: usize) -> u32 {
    match b.get(at..at.wrapping_add(3)) {
        Some(&[x, y, z]) => u32::from_be_bytes([0, x, y, z]),
        _ => 0,
    }
}

/// Reads a big-endian `u32` at `at`, or 0 past the end.
#[inline]
pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    match b.get(at..at.wrapping_add(4)) {
        Some(&[a, c, d, e]) => u32::from_be_bytes([a, c, d, e]),
        _ => 0,
    }
}

/// Reads a big-endian `u64` at `at`, or 0 past the end.
#[inline]
pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    match b.get(at..at.wrapping_add(8)) {
        Some(s) => {
            let mut a = [0u8; 8];
            a.copy_from_slice(s);
            u64::from_be_bytes(a)
        }
        None => 0,
    }
}

/// Copies `N` bytes at `at`, or zeros past the end.
#[inline]
pub(crate) fn array_at<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut a = [0u8; N];
    if let Some(s) = b.get(at..at.wrapping_add(N)) {
        a.copy_from_slice(s);
    }
    a
}

/// Writes `v` big-endian at `at` if it fits; returns whether it did.
#[inline]
pub(crate) fn put_u16(b: &mut [u8], at: usize, v: u16) -> bool {
    put(b, at, &v.to_be_bytes())
}

/// Writes the low 24 bits of `v` big-endian at `at` if they fit.
#[inline]
pub(crate) fn put_u24(b: &mut [u8], at: usize, v: u32) -> bool {
    let [_, x, y, z] = v.to_be_bytes();
    put(b, at, &[x, y, z])
}

/// Writes `v` big-endian at `at` if it fits.
#[inline]
pub(crate) fn put_u32(b: &mut [u8], at: usize, v: u32) -> bool {
    put(b, at, &v.to_be_bytes())
}

/// Writes `v` big-endian at `at` if it fits.
#[inline]
pub(crate) fn put_u64(b: &mut [u8], at: usize, v: u64) -> bool {
    put(b, at, &v.to_be_bytes())
}

/// Copies `src` to `at` if it fits.
#[inline]
pub(crate) fn put(b: &mut [u8], at: usize, src: &[u8]) -> bool {
    match b.get_mut(at..at.wrapping_add(src.len())) {
        Some(d) => {
            d.copy_from_slice(src);
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_big_endian_and_bounded() {
        let b = [1u8, 2, 3, 4, 5, 6, 7, 8];
        assert_eq!(u16_at(&b, 0), 0x0102);
        assert_eq!(u24_at(&b, 1), 0x020304);
        assert_eq!(u32_at(&b, 4), 0x05060708);
        assert_eq!(u64_at(&b, 0), 0x0102030405060708);
        assert_eq!(u32_at(&b, 5), 0);
        assert_eq!(u16_at(&b, usize::MAX), 0);
        assert_eq!(array_at::<3>(&b, 6), [0, 0, 0]);
    }

    #[test]
    fn writes_are_bounded() {
        let mut b = [0u8; 4];
        assert!(put_u24(&mut b, 1, 0xabcdef));
        assert_eq!(b, [0, 0xab, 0xcd, 0xef]);
        assert!(!put_u32(&mut b, 1, 1));
        assert!(!put_u64(&mut b, 0, 1));
        assert!(put_u16(&mut b, 2, 0x1234));
        assert_eq!(b, [0, 0xab, 0x12, 0x34]);
    }
}
