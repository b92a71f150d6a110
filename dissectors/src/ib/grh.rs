//! Global Route Header (IBA 8.3): routes a native IB packet between subnets
//! and is the network header of RoCEv1 (EtherType 0x8915). It has the shape
//! of an IPv6 header, with GIDs for addresses.
//!
//! ```text
//!  0                    4        6       7       8        24       40
//! +----+--------+------+--------+-------+-------+--------+--------+
//! |IPVer|TClass |FlowLabel| PayLen |NxtHdr |HopLmt | SGID   | DGID   |
//! +----+--------+------+--------+-------+-------+--------+--------+
//!   4     8        20      16       8       8      128      128
//! ```

use super::{out, split};
use crate::bytes::{array_at, put, put_u16, put_u32, u16_at, u32_at, u8_at};
use crate::{Error, Layer, Result};

mod field {
    use core::ops::Range;
    pub const VER_TCLASS_FLOW: Range<usize> = 0..4;
    pub const PAY_LEN: Range<usize> = 4..6;
    pub const NXT_HDR: usize = 6;
    pub const HOP_LMT: usize = 7;
    pub const SGID: Range<usize> = 8..24;
    pub const DGID: Range<usize> = 24..40;
}

/// Length of the GRH in bytes.
pub const HEADER_LEN: usize = 40;

/// Global Route Header (IBA 8.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Grh {
    /// IPVer, 4 bits, 6 (IBA 8.3.1).
    pub ip_ver: u8,
    /// TClass, traffic class (IBA 8.3.2).
    pub tclass: u8,
    /// FlowLabel, 20 bits (IBA 8.3.3).
    pub flow_label: u32,
    /// PayLen: bytes from the BTH through the ICRC (IBA 8.3.4).
    pub pay_len: u16,
    /// NxtHdr: 0x1B for an IBA transport header (IBA 8.3.5).
    pub nxt_hdr: u8,
    /// HopLmt, hop limit (IBA 8.3.6).
    pub hop_lmt: u8,
    /// SGID, source GID (IBA 8.3.7).
    pub sgid: [u8; 16],
    /// DGID, destination GID (IBA 8.3.8).
    pub dgid: [u8; 16],
}

impl Grh {
    /// NxtHdr value for an IBA transport header (IBA 8.3.5).
    pub const NXT_HDR_IBA: u8 = 0x1b;

    /// Parses a GRH from the start of `input`; returns it and the bytes after it.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] if `input` is shorter than [`HEADER_LEN`].
    pub fn parse(input: &[u8]) -> Result<(Grh, &[u8])> {
        let (h, rest) = split(input, Layer::Grh, HEADER_LEN)?;
        let w = u32_at(h, field::VER_TCLASS_FLOW.start);
        Ok((
            Grh {
                ip_ver: (w >> 28) as u8,
                tclass: (w >> 20) as u8,
                flow_label: w & 0x000f_ffff,
                pay_len: u16_at(h, field::PAY_LEN.start),
                nxt_hdr: u8_at(h, field::NXT_HDR),
                hop_lmt: u8_at(h, field::HOP_LMT),
                sgid: array_at(h, field::SGID.start),
                dgid: array_at(h, field::DGID.start),
            },
            rest,
        ))
    }

    /// Writes the GRH to the start of `buf`; returns [`HEADER_LEN`].
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] if `buf` is shorter than [`HEADER_LEN`];
    /// [`Error::BadField`] if `ip_ver` > 15 or `flow_label` is wider than 20 bits.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        if self.ip_ver > 0xf {
            return Err(Error::BadField {
                layer: Layer::Grh,
                offset: 0,
                field: "ip_ver",
                value: self.ip_ver.into(),
                expected: "0..=15",
            });
        }
        if self.flow_label > 0x000f_ffff {
            return Err(Error::BadField {
                layer: Layer::Grh,
                offset: 1,
                field: "flow_label",
                value: self.flow_label.into(),
                expected: "20 bits",
            });
        }
        let h = out(buf, Layer::Grh, HEADER_LEN)?;
        let w = (u32::from(self.ip_ver) << 28) | (u32::from(self.tclass) << 20) | self.flow_label;
        put_u32(h, field::VER_TCLASS_FLOW.start, w);
        put_u16(h, field::PAY_LEN.start, self.pay_len);
        if let Some(b) = h.get_mut(field::NXT_HDR) {
            *b = self.nxt_hdr;
        }
        if let Some(b) = h.get_mut(field::HOP_LMT) {
            *b = self.hop_lmt;
        }
        put(h, field::SGID.start, &self.sgid);
        put(h, field::DGID.start, &self.dgid);
        Ok(HEADER_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::testutil::{emits, truncated_at_every_offset};
    use hex_literal::hex;
    use proptest::prelude::*;

    // RoCEv1-style GRH: version 6, TClass 0x02, flow 0x12345, PayLen 40,
    // NxtHdr IBA, HopLmt 64, link-local GIDs (IBA 8.3 layout).
    const BYTES: [u8; 40] = hex!(
        "6021 2345 0028 1b 40"
        "fe80 0000 0000 0000 0211 22ff fe33 4455"
        "fe80 0000 0000 0000 0266 77ff fe88 99aa"
    );
    fn grh() -> Grh {
        Grh {
            ip_ver: 6,
            tclass: 0x02,
            flow_label: 0x12345,
            pay_len: 40,
            nxt_hdr: Grh::NXT_HDR_IBA,
            hop_lmt: 64,
            sgid: hex!("fe80 0000 0000 0000 0211 22ff fe33 4455"),
            dgid: hex!("fe80 0000 0000 0000 0266 77ff fe88 99aa"),
        }
    }

    #[test]
    fn parse_grh() {
        assert_eq!(Grh::parse(&BYTES), Ok((grh(), &[][..])));
    }

    #[test]
    fn emit_grh() {
        emits(&BYTES, Layer::Grh, |b| grh().emit(b));
        let bad = Grh {
            flow_label: 1 << 20,
            ..grh()
        };
        assert!(matches!(
            bad.emit(&mut [0; 40]),
            Err(Error::BadField {
                field: "flow_label",
                ..
            })
        ));
    }

    #[test]
    fn truncated() {
        truncated_at_every_offset(&BYTES, HEADER_LEN, Layer::Grh, Grh::parse);
    }

    proptest! {
        #[test]
        fn round_trip(ip_ver in 0u8..16, tclass: u8, flow_label in 0u32..1 << 20, pay_len: u16,
                      nxt_hdr: u8, hop_lmt: u8, sgid: [u8; 16], dgid: [u8; 16]) {
            let g = Grh { ip_ver, tclass, flow_label, pay_len, nxt_hdr, hop_lmt, sgid, dgid };
            let mut buf = [0u8; HEADER_LEN];
            g.emit(&mut buf).unwrap();
            prop_assert_eq!(Grh::parse(&buf).unwrap().0, g);
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..48)) {
            let _ = Grh::parse(&b);
        }
    }
}
