//! RDMA Extended Transport Header (IBA 9.3.3): the remote buffer of an RDMA
//! WRITE (First or Only), an RDMA READ Request or an ATOMIC WRITE.
//!
//! ```text
//!  0                 8         12          16
//! +-----------------+---------+-----------+
//! | VA (64)         | R_Key   | DMALength |
//! +-----------------+---------+-----------+
//! ```

use super::{out, split};
use crate::bytes::{put_u32, put_u64, u32_at, u64_at};
use crate::{Layer, Result};

mod field {
    use core::ops::Range;
    pub const VA: Range<usize> = 0..8;
    pub const R_KEY: Range<usize> = 8..12;
    pub const DMA_LENGTH: Range<usize> = 12..16;
}

/// Length of the RETH in bytes.
pub const HEADER_LEN: usize = 16;

/// RDMA Extended Transport Header (IBA 9.3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Reth {
    /// Virtual Address of the remote buffer (IBA 9.3.3.1).
    pub va: u64,
    /// R_Key authorising access to it (IBA 9.3.3.2).
    pub r_key: u32,
    /// DMA Length: bytes of the whole RDMA operation (IBA 9.3.3.3).
    pub dma_length: u32,
}

impl Reth {
    /// Parses a RETH from the start of `input`; returns it and the bytes after it.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Truncated`] if `input` is shorter than [`HEADER_LEN`].
    pub fn parse(input: &[u8]) -> Result<(Reth, &[u8])> {
        let (h, rest) = split(input, Layer::Reth, HEADER_LEN)?;
        Ok((
            Reth {
                va: u64_at(h, field::VA.start),
                r_key: u32_at(h, field::R_KEY.start),
                dma_length: u32_at(h, field::DMA_LENGTH.start),
            },
            rest,
        ))
    }

    /// Writes the RETH to the start of `buf`; returns [`HEADER_LEN`].
    ///
    /// # Errors
    ///
    /// [`crate::Error::Truncated`] if `buf` is shorter than [`HEADER_LEN`].
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let h = out(buf, Layer::Reth, HEADER_LEN)?;
        put_u64(h, field::VA.start, self.va);
        put_u32(h, field::R_KEY.start, self.r_key);
        put_u32(h, field::DMA_LENGTH.start, self.dma_length);
        Ok(HEADER_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::testutil::{emits, truncated_at_every_offset};
    use hex_literal::hex;
    use proptest::prelude::*;

    // IBA 9.3.3 layout: VA, R_Key, DMALength, all big-endian.
    const BYTES: [u8; 16] = hex!("0000 7f12 3456 8000 1234 abcd 0000 1000");
    const RETH: Reth = Reth {
        va: 0x0000_7f12_3456_8000,
        r_key: 0x1234_abcd,
        dma_length: 4096,
    };

    #[test]
    fn parse_reth() {
        let mut b = BYTES.to_vec();
        b.push(0x99);
        assert_eq!(Reth::parse(&b), Ok((RETH, &[0x99u8][..])));
    }

    #[test]
    fn emit_reth() {
        emits(&BYTES, Layer::Reth, |b| RETH.emit(b));
    }

    #[test]
    fn truncated() {
        truncated_at_every_offset(&BYTES, HEADER_LEN, Layer::Reth, Reth::parse);
    }

    proptest! {
        #[test]
        fn round_trip(va: u64, r_key: u32, dma_length: u32) {
            let r = Reth { va, r_key, dma_length };
            let mut buf = [0u8; HEADER_LEN];
            r.emit(&mut buf).unwrap();
            prop_assert_eq!(Reth::parse(&buf).unwrap().0, r);
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = Reth::parse(&b);
        }
    }
}
