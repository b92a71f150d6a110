//! Immediate data (IBA 9.3.6): four opaque bytes handed to the receiver with
//! the completion of a SEND or RDMA WRITE "with Immediate".
//!
//! ```text
//!  0         4
//! +---------+
//! | ImmDt   |
//! +---------+
//! ```

use super::{out, split};
use crate::bytes::{put_u32, u32_at};
use crate::{Layer, Result};

mod field {
    use core::ops::Range;
    pub const IMM: Range<usize> = 0..4;
}

/// Length of the ImmDt in bytes.
pub const HEADER_LEN: usize = 4;

/// Immediate Data header (IBA 9.3.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ImmDt {
    /// Immediate data, opaque to the transport (IBA 9.3.6).
    pub imm: u32,
}

impl ImmDt {
    /// Parses an ImmDt from the start of `input`; returns it and the bytes after it.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Truncated`] if `input` is shorter than [`HEADER_LEN`].
    pub fn parse(input: &[u8]) -> Result<(ImmDt, &[u8])> {
        let (h, rest) = split(input, Layer::ImmDt, HEADER_LEN)?;
        Ok((
            ImmDt {
                imm: u32_at(h, field::IMM.start),
            },
            rest,
        ))
    }

    /// Writes the ImmDt to the start of `buf`; returns [`HEADER_LEN`].
    ///
    /// # Errors
    ///
    /// [`crate::Error::Truncated`] if `buf` is shorter than [`HEADER_LEN`].
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let h = out(buf, Layer::ImmDt, HEADER_LEN)?;
        put_u32(h, field::IMM.start, self.imm);
        Ok(HEADER_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::testutil::{emits, truncated_at_every_offset};
    use hex_literal::hex;
    use proptest::prelude::*;

    const BYTES: [u8; 4] = hex!("0012 3401");
    const IMMDT: ImmDt = ImmDt { imm: 0x0012_3401 };

    #[test]
    fn parse_immdt() {
        assert_eq!(ImmDt::parse(&BYTES), Ok((IMMDT, &[][..])));
    }

    #[test]
    fn emit_immdt() {
        emits(&BYTES, Layer::ImmDt, |b| IMMDT.emit(b));
    }

    #[test]
    fn truncated() {
        truncated_at_every_offset(&BYTES, HEADER_LEN, Layer::ImmDt, ImmDt::parse);
    }

    proptest! {
        #[test]
        fn round_trip(imm: u32) {
            let mut buf = [0u8; HEADER_LEN];
            ImmDt { imm }.emit(&mut buf).unwrap();
            prop_assert_eq!(ImmDt::parse(&buf).unwrap().0, ImmDt { imm });
        }
    }
}
