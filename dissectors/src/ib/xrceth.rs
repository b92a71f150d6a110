//! XRC Extended Transport Header (IBA 9.3.8; XRC annex): the shared receive
//! queue that receives an XRC request.
//!
//! ```text
//!  0        1                4
//! +--------+----------------+
//! | resv8  | XRCSRQ (24)    |
//! +--------+----------------+
//! ```

use super::{out, split, MASK24};
use crate::bytes::{put_u24, u24_at};
use crate::{Error, Layer, Result};

mod field {
    use core::ops::Range;
    pub const XRC_SRQ: Range<usize> = 1..4;
}

/// Length of the XRCETH in bytes.
pub const HEADER_LEN: usize = 4;

/// XRC Extended Transport Header (IBA 9.3.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct XrcEth {
    /// XRCSRQ: the destination XRC shared receive queue number, 24 bits (IBA 9.3.8).
    pub xrc_srq: u32,
}

impl XrcEth {
    /// Parses an XRCETH from the start of `input`; returns it and the bytes
    /// after it. The reserved byte is ignored.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] if `input` is shorter than [`HEADER_LEN`].
    pub fn parse(input: &[u8]) -> Result<(XrcEth, &[u8])> {
        let (h, rest) = split(input, Layer::XrcEth, HEADER_LEN)?;
        Ok((
            XrcEth {
                xrc_srq: u24_at(h, field::XRC_SRQ.start),
            },
            rest,
        ))
    }

    /// Writes the XRCETH to the start of `buf`; returns [`HEADER_LEN`].
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] if `buf` is shorter than [`HEADER_LEN`];
    /// [`Error::BadField`] if `xrc_srq` does not fit in 24 bits.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        if self.xrc_srq > MASK24 {
            return Err(Error::BadField {
                layer: Layer::XrcEth,
                offset: field::XRC_SRQ.start,
                field: "xrc_srq",
                value: u64::from(self.xrc_srq),
                expected: "24 bits",
            });
        }
        let h = out(buf, Layer::XrcEth, HEADER_LEN)?;
        h.fill(0);
        put_u24(h, field::XRC_SRQ.start, self.xrc_srq);
        Ok(HEADER_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::testutil::{emits, truncated_at_every_offset};
    use hex_literal::hex;
    use proptest::prelude::*;

    const BYTES: [u8; 4] = hex!("00 00 12 34");
    const XRCETH: XrcEth = XrcEth { xrc_srq: 0x1234 };

    #[test]
    fn parse_xrceth() {
        assert_eq!(XrcEth::parse(&BYTES), Ok((XRCETH, &[][..])));
        // The reserved byte does not leak into the SRQ number.
        assert_eq!(XrcEth::parse(&hex!("ff 00 12 34")).unwrap().0, XRCETH);
    }

    #[test]
    fn emit_xrceth() {
        emits(&BYTES, Layer::XrcEth, |b| XRCETH.emit(b));
        let bad = XrcEth { xrc_srq: 1 << 24 };
        assert!(matches!(
            bad.emit(&mut [0; 4]),
            Err(Error::BadField {
                field: "xrc_srq",
                ..
            })
        ));
    }

    #[test]
    fn truncated() {
        truncated_at_every_offset(&BYTES, HEADER_LEN, Layer::XrcEth, XrcEth::parse);
    }

    proptest! {
        #[test]
        fn round_trip(xrc_srq in 0u32..1 << 24) {
            let mut buf = [0u8; HEADER_LEN];
            XrcEth { xrc_srq }.emit(&mut buf).unwrap();
            prop_assert_eq!(XrcEth::parse(&buf).unwrap().0, XrcEth { xrc_srq });
        }
    }
}
