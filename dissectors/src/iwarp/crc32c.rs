//! CRC32c (Castagnoli, reflected polynomial 0x82F63B78), the MPA FPDU CRC
//! (RFC 5044 section 4.4, which takes iSCSI's definition: RFC 3720
//! appendix B.4, RFC 3385).
//!
//! Not the ICRC of [`crate::ib::icrc`]: that is the Ethernet polynomial.
//! One 256-entry table, built at compile time, one byte per step: an FPDU is
//! at most 64 KiB, and the analyzer checks a CRC only when it was
//! negotiated, so a slicing or SIMD variant would buy little here.
//!
//! On the wire the CRC is sent least significant byte first, as iSCSI does
//! (the RFC 3720 B.4 vector for 32 zero octets reads `aa 36 91 8a`) and as
//! Linux `siw` writes the crypto layer's output; [`wire_value`] reads it so.

/// The reflected Castagnoli polynomial.
pub const POLYNOMIAL: u32 = 0x82F6_3B78;

// The loop bound keeps `i` inside the table; a const fn cannot use iterators.
#[allow(clippy::indexing_slicing)]
const fn table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ POLYNOMIAL
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static TABLE: [u32; 256] = table();

/// A running CRC32c, for data that arrives in pieces (an FPDU split by
/// markers or by TCP segments).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crc32c(u32);

impl Default for Crc32c {
    fn default() -> Self {
        Self::new()
    }
}

impl Crc32c {
    /// A CRC over no bytes yet (initial value all ones).
    pub const fn new() -> Self {
        Crc32c(!0)
    }

    /// Adds `data`.
    pub fn update(&mut self, data: &[u8]) {
        let mut c = self.0;
        for &b in data {
            // A u8 index always hits the 256-entry table; the `get` folds away.
            let t = TABLE.get(usize::from((c as u8) ^ b)).copied().unwrap_or(0);
            c = (c >> 8) ^ t;
        }
        self.0 = c;
    }

    /// The CRC of everything added (final complement).
    pub const fn value(&self) -> u32 {
        !self.0
    }
}

/// The CRC32c of `data`.
pub fn checksum(data: &[u8]) -> u32 {
    let mut c = Crc32c::new();
    c.update(data);
    c.value()
}

/// The CRC value of the four octets that carry it on the wire
/// (least significant first, see the module documentation).
pub const fn wire_value(octets: [u8; 4]) -> u32 {
    u32::from_le_bytes(octets)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 3720 appendix B.4: the four 32-octet vectors, with the CRC as
    /// its octets appear on the wire.
    #[test]
    fn rfc3720_b4_vectors() {
        let zeros = [0u8; 32];
        let ones = [0xffu8; 32];
        let mut up = [0u8; 32];
        let mut down = [0u8; 32];
        for i in 0..32u8 {
            up[usize::from(i)] = i;
            down[usize::from(i)] = 31 - i;
        }
        assert_eq!(checksum(&zeros), wire_value([0xaa, 0x36, 0x91, 0x8a]));
        assert_eq!(checksum(&ones), wire_value([0x43, 0xab, 0xa8, 0x62]));
        assert_eq!(checksum(&up), wire_value([0x4e, 0x79, 0xdd, 0x46]));
        assert_eq!(checksum(&down), wire_value([0x5c, 0xdb, 0x3f, 0x11]));
    }

    #[test]
    fn check_value_and_pieces() {
        // The catalogue's check value for "123456789" (CRC-32C/iSCSI).
        assert_eq!(checksum(b"123456789"), 0xe306_9283);
        let mut c = Crc32c::new();
        c.update(b"1234");
        c.update(b"");
        c.update(b"56789");
        assert_eq!(c.value(), 0xe306_9283);
        assert_eq!(checksum(b""), 0);
    }
}
