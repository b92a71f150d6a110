//! Reliable Datagram Extended Transport Header (IBA 9.3.1): the EE context
//! that carries a Reliable Datagram packet.
//!
//! ```text
//!  0        1                4
//! +--------+----------------+
//! | resv8  | EE-Context (24)|
//! +--------+----------------+
//! ```

use super::{out, split, MASK24};
use crate::bytes::{put_u24, u24_at};
use crate::{Error, Layer, Result};

mod field {
    use core::ops::Range;
    pub const EE_CONTEXT: Range<usize> = 1..4;
}

/// Length of the RDETH in bytes.
pub const HEADER_LEN: usize = 4;

/// Reliable Datagram Extended Transport Header (IBA 9.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rdeth {
    /// EE-Context: the end-to-end context of the RD channel, 24 bits (IBA 9.3.1).
    pub ee_context: u32,
}

impl Rdeth {
    /// Parses an RDETH from the start of `input`; returns it and the bytes
    /// after it. The reserved byte is ignored.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] if `input` is shorter than [`HEADER_LEN`].
    pub fn parse(input: &[u8]) -> Result<(Rdeth, &[u8])> {
        let (h, rest) = split(input, Layer::Rdeth, HEADER_LEN)?;
        Ok((
            Rdeth {
                ee_context: u24_at(h, field::EE_CONTEXT.start),
            },
            rest,
        ))
    }

    /// Writes the RDETH to the start of `buf`; returns [`HEADER_LEN`].
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] if `buf` is shorter than [`HEADER_LEN`];
    /// [`Error::BadField`] if `ee_context` does not fit in 24 bits.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        if self.ee_context > MASK24 {
            return Err(Error::BadField {
                layer: Layer::Rdeth,
                offset: field::EE_CONTEXT.start,
                field: "ee_context",
                value: u64::from(self.ee_context),
                expected: "24 bits",
            });
        }
        let h = out(buf, Layer::Rdeth, HEADER_LEN)?;
        h.fill(0);
        put_u24(h, field::EE_CONTEXT.start, self.ee_context);
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
    const RDETH: Rdeth = Rdeth { ee_context: 0x1234 };

    #[test]
    fn parse_rdeth() {
        assert_eq!(Rdeth::parse(&BYTES), Ok((RDETH, &[][..])));
        // The reserved byte does not leak into the context.
        assert_eq!(Rdeth::parse(&hex!("ff 00 12 34")).unwrap().0, RDETH);
    }

    #[test]
    fn emit_rdeth() {
        emits(&BYTES, Layer::Rdeth, |b| RDETH.emit(b));
        let bad = Rdeth {
            ee_context: 1 << 24,
        };
        assert!(matches!(
            bad.emit(&mut [0; 4]),
            Err(Error::BadField {
                field: "ee_context",
                ..
            })
        ));
    }

    #[test]
    fn truncated() {
        truncated_at_every_offset(&BYTES, HEADER_LEN, Layer::Rdeth, Rdeth::parse);
    }

    proptest! {
        #[test]
        fn round_trip(ee_context in 0u32..1 << 24) {
            let mut buf = [0u8; HEADER_LEN];
            Rdeth { ee_context }.emit(&mut buf).unwrap();
            prop_assert_eq!(Rdeth::parse(&buf).unwrap().0, Rdeth { ee_context });
        }
    }
}
