//! Datagram Extended Transport Header (IBA 9.3.2): the Q_Key and source QP
//! of a UD or RD packet. CM MADs on QP1 travel as UD SEND Only + DETH.
//!
//! ```text
//!  0         4        5              8
//! +---------+--------+--------------+
//! | Q_Key   | resv8  | SrcQP (24)   |
//! +---------+--------+--------------+
//! ```

use super::{out, split, Qpn};
use crate::bytes::{put_u24, put_u32, u24_at, u32_at};
use crate::{Layer, Result};

mod field {
    use core::ops::Range;
    pub const Q_KEY: Range<usize> = 0..4;
    pub const SRC_QP: Range<usize> = 5..8;
}

/// Length of the DETH in bytes.
pub const HEADER_LEN: usize = 8;

/// Datagram Extended Transport Header (IBA 9.3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Deth {
    /// Q_Key: authorises access to the destination QP (IBA 9.3.2.1);
    /// 0x80010000 is the well-known GSI Q_Key.
    pub q_key: u32,
    /// SrcQP: the sender's queue pair (IBA 9.3.2.2).
    pub src_qp: Qpn,
}

impl Deth {
    /// The well-known Q_Key of QP1 (IBA 13.5.1.1).
    pub const GSI_Q_KEY: u32 = 0x8001_0000;

    /// Parses a DETH from the start of `input`; returns it and the bytes
    /// after it. The reserved byte is ignored.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Truncated`] if `input` is shorter than [`HEADER_LEN`].
    pub fn parse(input: &[u8]) -> Result<(Deth, &[u8])> {
        let (h, rest) = split(input, Layer::Deth, HEADER_LEN)?;
        Ok((
            Deth {
                q_key: u32_at(h, field::Q_KEY.start),
                src_qp: Qpn::from_bits(u24_at(h, field::SRC_QP.start)),
            },
            rest,
        ))
    }

    /// Writes the DETH (reserved byte zero) to the start of `buf`; returns [`HEADER_LEN`].
    ///
    /// # Errors
    ///
    /// [`crate::Error::Truncated`] if `buf` is shorter than [`HEADER_LEN`].
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let h = out(buf, Layer::Deth, HEADER_LEN)?;
        h.fill(0);
        put_u32(h, field::Q_KEY.start, self.q_key);
        put_u24(h, field::SRC_QP.start, self.src_qp.get());
        Ok(HEADER_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::testutil::{emits, truncated_at_every_offset};
    use hex_literal::hex;
    use proptest::prelude::*;

    // A CM MAD's DETH: GSI Q_Key, from QP1.
    const BYTES: [u8; 8] = hex!("8001 0000 00 000001");
    const DETH: Deth = Deth {
        q_key: Deth::GSI_Q_KEY,
        src_qp: Qpn::QP1,
    };

    #[test]
    fn parse_deth() {
        assert_eq!(Deth::parse(&BYTES), Ok((DETH, &[][..])));
        assert_eq!(Deth::parse(&hex!("8001 0000 ff 000001")).unwrap().0, DETH);
    }

    #[test]
    fn emit_deth() {
        emits(&BYTES, Layer::Deth, |b| DETH.emit(b));
    }

    #[test]
    fn truncated() {
        truncated_at_every_offset(&BYTES, HEADER_LEN, Layer::Deth, Deth::parse);
    }

    proptest! {
        #[test]
        fn round_trip(q_key: u32, qp in 0u32..1 << 24) {
            let d = Deth { q_key, src_qp: Qpn::try_new(qp).unwrap() };
            let mut buf = [0u8; HEADER_LEN];
            d.emit(&mut buf).unwrap();
            prop_assert_eq!(Deth::parse(&buf).unwrap().0, d);
        }
    }
}
