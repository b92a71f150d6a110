//! Invalidate Extended Transport Header (IBA 9.3.7): the R_Key the responder
//! invalidates on a SEND with Invalidate (RPC-over-RDMA remote invalidation).
//!
//! ```text
//!  0         4
//! +---------+
//! | R_Key   |
//! +---------+
//! ```

use super::{out, split};
use crate::bytes::{put_u32, u32_at};
use crate::{Layer, Result};

mod field {
    use core::ops::Range;
    pub const R_KEY: Range<usize> = 0..4;
}

/// Length of the IETH in bytes.
pub const HEADER_LEN: usize = 4;

/// Invalidate Extended Transport Header (IBA 9.3.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ieth {
    /// R_Key to invalidate at the responder (IBA 9.3.7).
    pub r_key: u32,
}

impl Ieth {
    /// Parses an IETH from the start of `input`; returns it and the bytes after it.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Truncated`] if `input` is shorter than [`HEADER_LEN`].
    pub fn parse(input: &[u8]) -> Result<(Ieth, &[u8])> {
        let (h, rest) = split(input, Layer::Ieth, HEADER_LEN)?;
        Ok((
            Ieth {
                r_key: u32_at(h, field::R_KEY.start),
            },
            rest,
        ))
    }

    /// Writes the IETH to the start of `buf`; returns [`HEADER_LEN`].
    ///
    /// # Errors
    ///
    /// [`crate::Error::Truncated`] if `buf` is shorter than [`HEADER_LEN`].
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let h = out(buf, Layer::Ieth, HEADER_LEN)?;
        put_u32(h, field::R_KEY.start, self.r_key);
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
    const IETH: Ieth = Ieth { r_key: 0x0012_3401 };

    #[test]
    fn parse_ieth() {
        assert_eq!(Ieth::parse(&BYTES), Ok((IETH, &[][..])));
    }

    #[test]
    fn emit_ieth() {
        emits(&BYTES, Layer::Ieth, |b| IETH.emit(b));
    }

    #[test]
    fn truncated() {
        truncated_at_every_offset(&BYTES, HEADER_LEN, Layer::Ieth, Ieth::parse);
    }

    proptest! {
        #[test]
        fn round_trip(r_key: u32) {
            let mut buf = [0u8; HEADER_LEN];
            Ieth { r_key }.emit(&mut buf).unwrap();
            prop_assert_eq!(Ieth::parse(&buf).unwrap().0, Ieth { r_key });
        }
    }
}
