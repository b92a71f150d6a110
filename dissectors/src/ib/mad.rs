//! Common MAD header (IBA 13.4.3): the 24-byte header of every management
//! datagram, followed by 232 bytes of class data. CM MADs travel on QP1 as
//! UD SEND Only + DETH + MAD.
//!
//! ```text
//!  0        1         2         3       4       6             8
//! +--------+---------+---------+-+-----+-------+-------------+
//! |BaseVer |MgmtClass|ClassVer |R|Meth.| Status| ClassSpecific|
//! +--------+---------+---------+-+-----+-------+-------------+
//!  8                       16          18        20             24
//! +-----------------------+-----------+---------+--------------+
//! | TransactionID (64)    |AttributeID| Reserved| AttributeMod.|
//! +-----------------------+-----------+---------+--------------+
//!  24                                                          256
//! +------------------------------------------------------------+
//! | class data (232)                                           |
//! +------------------------------------------------------------+
//! ```

use super::{out, split};
use crate::bytes::{put_u16, put_u32, put_u64, u16_at, u32_at, u64_at, u8_at};
use crate::{Error, Layer, Result};

mod field {
    use core::ops::Range;
    pub const BASE_VERSION: usize = 0;
    pub const MGMT_CLASS: usize = 1;
    pub const CLASS_VERSION: usize = 2;
    pub const METHOD: usize = 3;
    pub const STATUS: Range<usize> = 4..6;
    pub const CLASS_SPECIFIC: Range<usize> = 6..8;
    pub const TRANSACTION_ID: Range<usize> = 8..16;
    pub const ATTRIBUTE_ID: Range<usize> = 16..18;
    pub const ATTRIBUTE_MODIFIER: Range<usize> = 20..24;
}

/// Length of the common MAD header in bytes.
pub const HEADER_LEN: usize = 24;

/// Length of the class data after the header.
pub const DATA_LEN: usize = 232;

/// Length of a whole MAD.
pub const MAD_LEN: usize = HEADER_LEN + DATA_LEN;

/// Management classes (IBA 13.4.4, table 133).
pub mod class {
    /// Subnet management, LID routed.
    pub const SUBN_LID_ROUTED: u8 = 0x01;
    /// Subnet management, directed route.
    pub const SUBN_DIRECTED_ROUTE: u8 = 0x81;
    /// Subnet administration.
    pub const SUBN_ADM: u8 = 0x03;
    /// Performance management.
    pub const PERF: u8 = 0x04;
    /// Baseboard management.
    pub const BM: u8 = 0x05;
    /// Device management.
    pub const DEV_MGT: u8 = 0x06;
    /// Communication management (IBA 12).
    pub const CM: u8 = 0x07;
    /// SNMP tunnelling.
    pub const SNMP: u8 = 0x08;
}

/// Methods (IBA 13.4.5, table 134); bit 7 is the R (response) bit.
pub mod method {
    /// Get.
    pub const GET: u8 = 0x01;
    /// Set.
    pub const SET: u8 = 0x02;
    /// Send: the only method CM uses.
    pub const SEND: u8 = 0x03;
    /// Trap.
    pub const TRAP: u8 = 0x05;
    /// Report.
    pub const REPORT: u8 = 0x06;
    /// TrapRepress.
    pub const TRAP_REPRESS: u8 = 0x07;
    /// GetResp.
    pub const GET_RESP: u8 = 0x81;
    /// ReportResp.
    pub const REPORT_RESP: u8 = 0x86;
}

/// Common MAD header (IBA 13.4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Mad {
    /// BaseVersion, 1 (IBA 13.4.3).
    pub base_version: u8,
    /// MgmtClass: which management class, see [`class`] (IBA 13.4.4).
    pub mgmt_class: u8,
    /// ClassVersion: CM uses 2 (IBA 13.4.3).
    pub class_version: u8,
    /// R bit and Method, as on the wire; see [`method`] (IBA 13.4.5).
    pub method: u8,
    /// Status (IBA 13.4.7).
    pub status: u16,
    /// ClassSpecific (IBA 13.4.3).
    pub class_specific: u16,
    /// TransactionID (IBA 13.4.6.4).
    pub transaction_id: u64,
    /// AttributeID: the message within the class (IBA 13.4.3; CM: 12.6).
    pub attribute_id: u16,
    /// AttributeModifier (IBA 13.4.3).
    pub attribute_modifier: u32,
}

impl Mad {
    /// A CM MAD header (base version 1, class 0x07, class version 2, Send)
    /// for `attribute_id` and `transaction_id`.
    pub const fn cm(attribute_id: u16, transaction_id: u64) -> Mad {
        Mad {
            base_version: 1,
            mgmt_class: class::CM,
            class_version: 2,
            method: method::SEND,
            status: 0,
            class_specific: 0,
            transaction_id,
            attribute_id,
            attribute_modifier: 0,
        }
    }

    /// Parses a MAD: the 24-byte header, then the 232 bytes of class data,
    /// which it returns. Bytes after the 256 of the MAD are ignored.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] if `input` is shorter than [`HEADER_LEN`], or
    /// than [`MAD_LEN`] (offset [`HEADER_LEN`], needed [`DATA_LEN`]).
    pub fn parse(input: &[u8]) -> Result<(Mad, &[u8])> {
        let (h, rest) = split(input, Layer::Mad, HEADER_LEN)?;
        let mad = Mad {
            base_version: u8_at(h, field::BASE_VERSION),
            mgmt_class: u8_at(h, field::MGMT_CLASS),
            class_version: u8_at(h, field::CLASS_VERSION),
            method: u8_at(h, field::METHOD),
            status: u16_at(h, field::STATUS.start),
            class_specific: u16_at(h, field::CLASS_SPECIFIC.start),
            transaction_id: u64_at(h, field::TRANSACTION_ID.start),
            attribute_id: u16_at(h, field::ATTRIBUTE_ID.start),
            attribute_modifier: u32_at(h, field::ATTRIBUTE_MODIFIER.start),
        };
        let data = rest.get(..DATA_LEN).ok_or(Error::truncated(
            Layer::Mad,
            HEADER_LEN,
            DATA_LEN,
            input.len(),
        ))?;
        Ok((mad, data))
    }

    /// [`Mad::parse`] of a MAD the capture cut short: the header must be
    /// there; the class data is what was captured of it (up to
    /// [`DATA_LEN`] bytes).
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] if `input` is shorter than [`HEADER_LEN`].
    pub fn parse_prefix(input: &[u8]) -> Result<(Mad, &[u8])> {
        if input.len() >= HEADER_LEN + DATA_LEN {
            return Mad::parse(input);
        }
        let (h, rest) = split(input, Layer::Mad, HEADER_LEN)?;
        let mut whole = [0u8; HEADER_LEN + DATA_LEN];
        if let Some(w) = whole.get_mut(..HEADER_LEN) {
            w.copy_from_slice(h);
        }
        let (mad, _) = Mad::parse(&whole)?;
        Ok((mad, rest))
    }

    /// Writes the 24-byte header (reserved bytes zero) to the start of `buf`;
    /// returns [`HEADER_LEN`]. The class data is the class's to write.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] if `buf` is shorter than [`HEADER_LEN`].
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let h = out(buf, Layer::Mad, HEADER_LEN)?;
        h.fill(0);
        for (at, v) in [
            (field::BASE_VERSION, self.base_version),
            (field::MGMT_CLASS, self.mgmt_class),
            (field::CLASS_VERSION, self.class_version),
            (field::METHOD, self.method),
        ] {
            if let Some(b) = h.get_mut(at) {
                *b = v;
            }
        }
        put_u16(h, field::STATUS.start, self.status);
        put_u16(h, field::CLASS_SPECIFIC.start, self.class_specific);
        put_u64(h, field::TRANSACTION_ID.start, self.transaction_id);
        put_u16(h, field::ATTRIBUTE_ID.start, self.attribute_id);
        put_u32(h, field::ATTRIBUTE_MODIFIER.start, self.attribute_modifier);
        Ok(HEADER_LEN)
    }

    /// The R bit: this MAD is a response.
    pub const fn is_response(&self) -> bool {
        self.method & 0x80 != 0
    }

    /// The method without the R bit.
    pub const fn method_code(&self) -> u8 {
        self.method & 0x7f
    }

    /// The method's name ("Get", "Send", "GetResp", …; "Unknown").
    pub const fn method_name(&self) -> &'static str {
        match self.method {
            method::GET => "Get",
            method::SET => "Set",
            method::SEND => "Send",
            method::TRAP => "Trap",
            method::REPORT => "Report",
            method::TRAP_REPRESS => "TrapRepress",
            method::GET_RESP => "GetResp",
            method::REPORT_RESP => "ReportResp",
            _ => "Unknown",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::testutil::emits;
    use hex_literal::hex;
    use proptest::prelude::*;

    // The MAD header of captures/v3-inline.pcap frame 26 (CM REQ from the
    // NFS client): CM class version 2, Send, TID 0x2ee7fef81, attribute REQ.
    const HDR: [u8; 24] = hex!("01 07 02 03 0000 0000 0000 0002 ee7f ef81 0010 0000 0000 0000");

    fn mad() -> Mad {
        Mad {
            transaction_id: 0x0000_0002_ee7f_ef81,
            ..Mad::cm(0x0010, 0)
        }
    }

    #[test]
    fn parse_cm_mad() {
        let mut b = HDR.to_vec();
        b.extend((0..DATA_LEN).map(|i| i as u8));
        b.push(0xee); // beyond the MAD: ignored
        let (m, data) = Mad::parse(&b).unwrap();
        assert_eq!(m, mad());
        assert_eq!(data.len(), DATA_LEN);
        assert_eq!(data[0], 0);
        assert_eq!(data[231], 231);
        assert!(!m.is_response());
        assert_eq!(m.method_name(), "Send");
        assert_eq!(Mad { method: 0x81, ..m }.method_code(), 1);
    }

    #[test]
    fn emit_mad_header() {
        emits(&HDR, Layer::Mad, |b| mad().emit(b));
    }

    #[test]
    fn truncated_at_every_offset() {
        let b = [0u8; MAD_LEN];
        for cut in 0..MAD_LEN {
            let want = if cut < HEADER_LEN {
                Error::Truncated {
                    layer: Layer::Mad,
                    offset: 0,
                    needed: 24,
                    available: cut,
                }
            } else {
                Error::Truncated {
                    layer: Layer::Mad,
                    offset: 24,
                    needed: 232,
                    available: cut - 24,
                }
            };
            assert_eq!(Mad::parse(&b[..cut]).unwrap_err(), want, "cut at {cut}");
        }
    }

    proptest! {
        #[test]
        fn round_trip(base_version: u8, mgmt_class: u8, class_version: u8, method: u8,
                      status: u16, class_specific: u16, transaction_id: u64,
                      attribute_id: u16, attribute_modifier: u32) {
            let m = Mad { base_version, mgmt_class, class_version, method, status,
                          class_specific, transaction_id, attribute_id, attribute_modifier };
            let mut buf = [0u8; MAD_LEN];
            m.emit(&mut buf).unwrap();
            prop_assert_eq!(Mad::parse(&buf).unwrap().0, m);
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = Mad::parse(&b);
        }
    }
}
