//! Atomic Extended Transport Header (IBA 9.3.4) of CmpSwap and FetchAdd
//! requests, and the Atomic Acknowledge ETH (IBA 9.3.5.3) of their responses.
//!
//! ```text
//! AtomicETH
//!  0          8         12              20              28
//! +----------+---------+---------------+---------------+
//! | VA (64)  | R_Key   | SwapAddData   | CompareData   |
//! +----------+---------+---------------+---------------+
//!
//! AtomicAckETH
//!  0                   8
//! +-------------------+
//! | OrigRemData (64)  |
//! +-------------------+
//! ```

use super::{out, split};
use crate::bytes::{put_u32, put_u64, u32_at, u64_at};
use crate::{Layer, Result};

mod field {
    use core::ops::Range;
    pub const VA: Range<usize> = 0..8;
    pub const R_KEY: Range<usize> = 8..12;
    pub const SWAP_ADD_DATA: Range<usize> = 12..20;
    pub const COMPARE_DATA: Range<usize> = 20..28;
    pub const ORIG_REMOTE_DATA: Range<usize> = 0..8;
}

/// Length of the AtomicETH in bytes.
pub const HEADER_LEN: usize = 28;

/// Length of the AtomicAckETH in bytes.
pub const ACK_HEADER_LEN: usize = 8;

/// Atomic Extended Transport Header (IBA 9.3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AtomicEth {
    /// Virtual Address of the remote 64-bit operand (IBA 9.3.4.1).
    pub va: u64,
    /// R_Key authorising access to it (IBA 9.3.4.2).
    pub r_key: u32,
    /// SwapAddData: the value to swap in (CmpSwap) or to add (FetchAdd) (IBA 9.3.4.3).
    pub swap_add_data: u64,
    /// CompareData: the value to compare with (CmpSwap only) (IBA 9.3.4.4).
    pub compare_data: u64,
}

impl AtomicEth {
    /// Parses an AtomicETH from the start of `input`; returns it and the bytes after it.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Truncated`] if `input` is shorter than [`HEADER_LEN`].
    pub fn parse(input: &[u8]) -> Result<(AtomicEth, &[u8])> {
        let (h, rest) = split(input, Layer::AtomicEth, HEADER_LEN)?;
        Ok((
            AtomicEth {
                va: u64_at(h, field::VA.start),
                r_key: u32_at(h, field::R_KEY.start),
                swap_add_data: u64_at(h, field::SWAP_ADD_DATA.start),
                compare_data: u64_at(h, field::COMPARE_DATA.start),
            },
            rest,
        ))
    }

    /// Writes the AtomicETH to the start of `buf`; returns [`HEADER_LEN`].
    ///
    /// # Errors
    ///
    /// [`crate::Error::Truncated`] if `buf` is shorter than [`HEADER_LEN`].
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let h = out(buf, Layer::AtomicEth, HEADER_LEN)?;
        put_u64(h, field::VA.start, self.va);
        put_u32(h, field::R_KEY.start, self.r_key);
        put_u64(h, field::SWAP_ADD_DATA.start, self.swap_add_data);
        put_u64(h, field::COMPARE_DATA.start, self.compare_data);
        Ok(HEADER_LEN)
    }
}

/// Atomic Acknowledge Extended Transport Header (IBA 9.3.5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AtomicAckEth {
    /// OrigRemData: the remote operand's value before the atomic operation (IBA 9.3.5.3).
    pub orig_remote_data: u64,
}

impl AtomicAckEth {
    /// Parses an AtomicAckETH from the start of `input`; returns it and the bytes after it.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Truncated`] if `input` is shorter than [`ACK_HEADER_LEN`].
    pub fn parse(input: &[u8]) -> Result<(AtomicAckEth, &[u8])> {
        let (h, rest) = split(input, Layer::AtomicAckEth, ACK_HEADER_LEN)?;
        Ok((
            AtomicAckEth {
                orig_remote_data: u64_at(h, field::ORIG_REMOTE_DATA.start),
            },
            rest,
        ))
    }

    /// Writes the AtomicAckETH to the start of `buf`; returns [`ACK_HEADER_LEN`].
    ///
    /// # Errors
    ///
    /// [`crate::Error::Truncated`] if `buf` is shorter than [`ACK_HEADER_LEN`].
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let h = out(buf, Layer::AtomicAckEth, ACK_HEADER_LEN)?;
        put_u64(h, field::ORIG_REMOTE_DATA.start, self.orig_remote_data);
        Ok(ACK_HEADER_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::testutil::{emits, truncated_at_every_offset};
    use hex_literal::hex;
    use proptest::prelude::*;

    const ATOMIC: [u8; 28] = hex!(
        "0000 0000 dead 0008" // VA
        "0000 0042"           // R_Key
        "0000 0000 0000 0001" // SwapAddData
        "ffff ffff ffff fffe" // CompareData
    );
    const ATOMICETH: AtomicEth = AtomicEth {
        va: 0xdead_0008,
        r_key: 0x42,
        swap_add_data: 1,
        compare_data: 0xffff_ffff_ffff_fffe,
    };
    const ACK: [u8; 8] = hex!("0123 4567 89ab cdef");

    #[test]
    fn parse_atomiceth() {
        assert_eq!(AtomicEth::parse(&ATOMIC), Ok((ATOMICETH, &[][..])));
    }

    #[test]
    fn parse_atomicacketh() {
        let a = AtomicAckEth {
            orig_remote_data: 0x0123_4567_89ab_cdef,
        };
        assert_eq!(AtomicAckEth::parse(&ACK), Ok((a, &[][..])));
        emits(&ACK, Layer::AtomicAckEth, |b| a.emit(b));
    }

    #[test]
    fn emit_atomiceth() {
        emits(&ATOMIC, Layer::AtomicEth, |b| ATOMICETH.emit(b));
    }

    #[test]
    fn truncated() {
        truncated_at_every_offset(&ATOMIC, HEADER_LEN, Layer::AtomicEth, AtomicEth::parse);
        truncated_at_every_offset(
            &ACK,
            ACK_HEADER_LEN,
            Layer::AtomicAckEth,
            AtomicAckEth::parse,
        );
    }

    proptest! {
        #[test]
        fn round_trip(va: u64, r_key: u32, swap_add_data: u64, compare_data: u64) {
            let a = AtomicEth { va, r_key, swap_add_data, compare_data };
            let mut buf = [0u8; HEADER_LEN];
            a.emit(&mut buf).unwrap();
            prop_assert_eq!(AtomicEth::parse(&buf).unwrap().0, a);
            let k = AtomicAckEth { orig_remote_data: va };
            k.emit(&mut buf).unwrap();
            prop_assert_eq!(AtomicAckEth::parse(&buf).unwrap().0, k);
        }
    }
}
