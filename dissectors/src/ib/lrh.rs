//! Local Route Header (IBA 7.7): the link-level header of every native
//! InfiniBand packet. RoCE has none (its ICRC uses 8 bytes of ones in its place).
//!
//! ```text
//!  byte 0          1              2..4    4..6                 6..8
//!      +----+-----+----+----+---+--------+-----+--------------+--------+
//!      | VL |LVer | SL |rsv2|LNH| DLID   |resv5| PktLen (11)  | SLID   |
//!      +----+-----+----+----+---+--------+-----+--------------+--------+
//!        4    4     4    2   2    16       5      11             16
//! ```

use core::fmt;

use super::{out, split};
use crate::bytes::{put_u16, u16_at, u8_at};
use crate::{Error, Layer, Result};

mod field {
    use core::ops::Range;
    pub const VL_LVER: usize = 0;
    pub const SL_LNH: usize = 1;
    pub const DLID: Range<usize> = 2..4;
    pub const PKT_LEN: Range<usize> = 4..6;
    pub const SLID: Range<usize> = 6..8;
}

/// Length of the LRH in bytes.
pub const HEADER_LEN: usize = 8;

/// Local Route Header (IBA 7.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Lrh {
    /// VL, virtual lane, 4 bits; 15 is the management lane (IBA 7.7.1).
    pub vl: u8,
    /// LVer, link version, 4 bits, 0 today (IBA 7.7.2).
    pub lver: u8,
    /// SL, service level, 4 bits (IBA 7.7.3).
    pub sl: u8,
    /// LNH, link next header, 2 bits; see [`Lrh::next_header`] (IBA 7.7.4).
    pub lnh: u8,
    /// DLID, destination local identifier (IBA 7.7.5).
    pub dlid: u16,
    /// PktLen: LRH through ICRC in 4-byte words, 11 bits (IBA 7.7.6).
    pub packet_length: u16,
    /// SLID, source local identifier (IBA 7.7.7).
    pub slid: u16,
}

/// What follows the LRH (IBA 7.7.4, LNH).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkNextHeader {
    /// 0b00: raw packet with a non-IBA header.
    Raw,
    /// 0b01: raw IPv6 packet.
    RawIpv6,
    /// 0b10: IBA local: BTH follows.
    IbaLocal,
    /// 0b11: IBA global: GRH then BTH follow.
    IbaGlobal,
}

impl LinkNextHeader {
    /// Whether this is an IBA transport packet (which carries an ICRC).
    pub const fn is_iba(self) -> bool {
        matches!(self, LinkNextHeader::IbaLocal | LinkNextHeader::IbaGlobal)
    }
}

impl fmt::Display for LinkNextHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LinkNextHeader::Raw => "Raw",
            LinkNextHeader::RawIpv6 => "Raw IPv6",
            LinkNextHeader::IbaLocal => "IBA Local",
            LinkNextHeader::IbaGlobal => "IBA Global",
        })
    }
}

impl Lrh {
    /// Parses an LRH from the start of `input`; returns it and the bytes
    /// after it. Reserved bits are ignored.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] if `input` is shorter than [`HEADER_LEN`].
    pub fn parse(input: &[u8]) -> Result<(Lrh, &[u8])> {
        let (h, rest) = split(input, Layer::Lrh, HEADER_LEN)?;
        let b0 = u8_at(h, field::VL_LVER);
        let b1 = u8_at(h, field::SL_LNH);
        Ok((
            Lrh {
                vl: b0 >> 4,
                lver: b0 & 0x0f,
                sl: b1 >> 4,
                lnh: b1 & 0x03,
                dlid: u16_at(h, field::DLID.start),
                packet_length: u16_at(h, field::PKT_LEN.start) & 0x07ff,
                slid: u16_at(h, field::SLID.start),
            },
            rest,
        ))
    }

    /// Writes the LRH (reserved bits zero) to the start of `buf`; returns [`HEADER_LEN`].
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] if `buf` is shorter than [`HEADER_LEN`];
    /// [`Error::BadField`] if a field is wider than its slot.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let checks: [(&'static str, usize, u64, u64, &'static str); 5] = [
            ("vl", field::VL_LVER, self.vl.into(), 0xf, "0..=15"),
            ("lver", field::VL_LVER, self.lver.into(), 0xf, "0..=15"),
            ("sl", field::SL_LNH, self.sl.into(), 0xf, "0..=15"),
            ("lnh", field::SL_LNH, self.lnh.into(), 0x3, "0..=3"),
            (
                "packet_length",
                field::PKT_LEN.start,
                self.packet_length.into(),
                0x7ff,
                "0..=2047",
            ),
        ];
        for (name, offset, value, max, expected) in checks {
            if value > max {
                return Err(Error::BadField {
                    layer: Layer::Lrh,
                    offset,
                    field: name,
                    value,
                    expected,
                });
            }
        }
        let h = out(buf, Layer::Lrh, HEADER_LEN)?;
        if let Some(b) = h.get_mut(field::VL_LVER) {
            *b = (self.vl << 4) | self.lver;
        }
        if let Some(b) = h.get_mut(field::SL_LNH) {
            *b = (self.sl << 4) | self.lnh;
        }
        put_u16(h, field::DLID.start, self.dlid);
        put_u16(h, field::PKT_LEN.start, self.packet_length);
        put_u16(h, field::SLID.start, self.slid);
        Ok(HEADER_LEN)
    }

    /// Decodes LNH.
    pub const fn next_header(&self) -> LinkNextHeader {
        match self.lnh & 0x3 {
            0 => LinkNextHeader::Raw,
            1 => LinkNextHeader::RawIpv6,
            2 => LinkNextHeader::IbaLocal,
            _ => LinkNextHeader::IbaGlobal,
        }
    }

    /// PktLen in bytes: LRH through ICRC, without the VCRC.
    pub const fn packet_bytes(&self) -> usize {
        (self.packet_length as usize) * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::testutil::{emits, truncated_at_every_offset};
    use hex_literal::hex;
    use proptest::prelude::*;

    // VL 0, SL 0, LNH IBA local, DLID 1, 28 words, SLID 4: the values
    // Wireshark shows for infiniband.pcap frame 10 (an RC SEND Only).
    const BYTES: [u8; 8] = hex!("00 02 0001 001c 0004");
    const LRH: Lrh = Lrh {
        vl: 0,
        lver: 0,
        sl: 0,
        lnh: 2,
        dlid: 1,
        packet_length: 28,
        slid: 4,
    };

    #[test]
    fn parse_local_lrh() {
        let (l, rest) = Lrh::parse(&BYTES).unwrap();
        assert!(rest.is_empty());
        assert_eq!(l, LRH);
        assert_eq!(l.next_header(), LinkNextHeader::IbaLocal);
        assert_eq!(l.packet_bytes(), 112);
        // Management VL, SL 3, global, reserved bits set.
        let (l, _) = Lrh::parse(&hex!("f0 3f ffff ffff c000")).unwrap();
        assert_eq!((l.vl, l.sl, l.lnh, l.packet_length), (15, 3, 3, 0x7ff));
        assert_eq!(l.next_header(), LinkNextHeader::IbaGlobal);
    }

    #[test]
    fn emit_lrh() {
        emits(&BYTES, Layer::Lrh, |b| LRH.emit(b));
        let bad = Lrh {
            packet_length: 0x800,
            ..LRH
        };
        assert!(matches!(
            bad.emit(&mut [0; 8]),
            Err(Error::BadField {
                field: "packet_length",
                ..
            })
        ));
    }

    #[test]
    fn truncated() {
        truncated_at_every_offset(&BYTES, HEADER_LEN, Layer::Lrh, Lrh::parse);
    }

    proptest! {
        #[test]
        fn round_trip(vl in 0u8..16, lver in 0u8..16, sl in 0u8..16, lnh in 0u8..4,
                      dlid: u16, packet_length in 0u16..0x800, slid: u16) {
            let l = Lrh { vl, lver, sl, lnh, dlid, packet_length, slid };
            let mut buf = [0u8; HEADER_LEN];
            l.emit(&mut buf).unwrap();
            prop_assert_eq!(Lrh::parse(&buf).unwrap().0, l);
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..16)) {
            let _ = Lrh::parse(&b);
        }
    }
}
