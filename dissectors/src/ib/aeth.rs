//! ACK Extended Transport Header (IBA 9.3.5): the syndrome (ACK, RNR NAK or
//! NAK, with its credit count, timer or error code) and the message sequence
//! number of an Acknowledge, ATOMIC Acknowledge or RDMA READ Response.
//!
//! ```text
//!  0          1             4
//! +----------+-------------+
//! | Syndrome | MSN (24)    |
//! +----------+-------------+
//!
//! Syndrome: bit 7 reserved, bits 6-5 type (00 ACK, 01 RNR NAK,
//! 10 reserved, 11 NAK), bits 4-0 credit count, timer or NAK code.
//! ```

use super::{out, split, MASK24};
use crate::bytes::{put_u24, u24_at, u8_at};
use crate::{Error, Layer, Result};

mod field {
    use core::ops::Range;
    pub const SYNDROME: usize = 0;
    pub const MSN: Range<usize> = 1..4;
}

/// Length of the AETH in bytes.
pub const HEADER_LEN: usize = 4;

/// ACK Extended Transport Header (IBA 9.3.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Aeth {
    /// Syndrome, as on the wire; see [`Aeth::kind`] (IBA 9.3.5.1, table 42).
    pub syndrome: u8,
    /// MSN, message sequence number, 24 bits (IBA 9.3.5.2).
    pub msn: u32,
}

/// The decoded AETH syndrome (IBA 9.3.5.1, tables 42-44).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AckKind {
    /// A positive acknowledgement with the responder's end-to-end credits.
    Ack {
        /// The 5-bit credit count code (IBA table 43); see [`credits_from_code`].
        credit_count: u8,
    },
    /// Receiver Not Ready: retry after the timer (IBA 9.7.5.2.8).
    RnrNak {
        /// The 5-bit RNR timer code (IBA table 45); see [`rnr_timer_micros`].
        timer: u8,
    },
    /// A negative acknowledgement (IBA table 44).
    Nak(NakCode),
    /// The reserved syndrome type 0b10; holds the whole syndrome.
    Reserved(u8),
}

/// NAK codes (IBA 9.3.5.1, table 44).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NakCode {
    /// 0: PSN sequence error; the requester retransmits from the MSN's PSN.
    PsnSequenceError,
    /// 1: invalid request.
    InvalidRequest,
    /// 2: remote access error (bad R_Key, address or rights).
    RemoteAccessError,
    /// 3: remote operational error.
    RemoteOperationalError,
    /// 4: invalid RD request.
    InvalidRdRequest,
    /// 5-31: reserved.
    Unknown(u8),
}

impl AckKind {
    /// The syndrome type in snake_case: `"ack"`, `"rnr_nak"`, `"nak"` or
    /// `"reserved"` (IBA table 42).
    pub const fn name(self) -> &'static str {
        match self {
            AckKind::Ack { .. } => "ack",
            AckKind::RnrNak { .. } => "rnr_nak",
            AckKind::Nak(_) => "nak",
            AckKind::Reserved(_) => "reserved",
        }
    }
}

/// Words for a protocol trace: `ACK credit count 31`, `RNR NAK timer 14`,
/// `NAK PSN Sequence Error`, `reserved syndrome 0x40`.
impl core::fmt::Display for AckKind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            AckKind::Ack { credit_count } => write!(f, "ACK credit count {credit_count}"),
            AckKind::RnrNak { timer } => write!(f, "RNR NAK timer {timer}"),
            AckKind::Nak(code) => write!(f, "NAK {}", code.name()),
            AckKind::Reserved(s) => write!(f, "reserved syndrome {s:#04x}"),
        }
    }
}

impl NakCode {
    /// The code's name as the IBA writes it.
    pub const fn name(self) -> &'static str {
        match self {
            NakCode::PsnSequenceError => "PSN Sequence Error",
            NakCode::InvalidRequest => "Invalid Request",
            NakCode::RemoteAccessError => "Remote Access Error",
            NakCode::RemoteOperationalError => "Remote Operational Error",
            NakCode::InvalidRdRequest => "Invalid RD Request",
            NakCode::Unknown(_) => "Reserved",
        }
    }
}

impl From<u8> for NakCode {
    fn from(v: u8) -> Self {
        match v {
            0 => NakCode::PsnSequenceError,
            1 => NakCode::InvalidRequest,
            2 => NakCode::RemoteAccessError,
            3 => NakCode::RemoteOperationalError,
            4 => NakCode::InvalidRdRequest,
            x => NakCode::Unknown(x),
        }
    }
}

impl From<NakCode> for u8 {
    fn from(v: NakCode) -> Self {
        match v {
            NakCode::PsnSequenceError => 0,
            NakCode::InvalidRequest => 1,
            NakCode::RemoteAccessError => 2,
            NakCode::RemoteOperationalError => 3,
            NakCode::InvalidRdRequest => 4,
            NakCode::Unknown(x) => x,
        }
    }
}

/// Credit count code 31: "invalid", the responder does not limit credits
/// (IBA 9.7.7.2.5, table 43).
pub const CREDIT_COUNT_INVALID: u8 = 31;

/// Credits for each credit count code 0..=30 (IBA table 43).
const CREDITS: [u16; 31] = [
    0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536,
    2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768,
];

/// The number of message credits a credit count code stands for (IBA table
/// 43): `Some(0..=32768)` for codes 0..=30, `None` for 31 (invalid: no
/// credit limit) and for values that do not fit in five bits.
pub fn credits_from_code(code: u8) -> Option<u32> {
    CREDITS.get(usize::from(code)).map(|&c| u32::from(c))
}

/// RNR NAK timer values in microseconds for codes 0..=31 (IBA table 45;
/// code 0 is the longest, 655.36 ms).
const RNR_TIMER_MICROS: [u32; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840,
    5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122_880, 163_840, 245_760,
    327_680, 491_520,
];

/// The minimum RNR NAK delay in microseconds for a 5-bit timer code (IBA
/// table 45), or `None` if `code` does not fit in five bits.
pub fn rnr_timer_micros(code: u8) -> Option<u32> {
    RNR_TIMER_MICROS.get(usize::from(code)).copied()
}

impl Aeth {
    /// Parses an AETH from the start of `input`; returns it and the bytes after it.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] if `input` is shorter than [`HEADER_LEN`].
    pub fn parse(input: &[u8]) -> Result<(Aeth, &[u8])> {
        let (h, rest) = split(input, Layer::Aeth, HEADER_LEN)?;
        Ok((
            Aeth {
                syndrome: u8_at(h, field::SYNDROME),
                msn: u24_at(h, field::MSN.start),
            },
            rest,
        ))
    }

    /// Writes the AETH to the start of `buf`; returns [`HEADER_LEN`].
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] if `buf` is shorter than [`HEADER_LEN`];
    /// [`Error::BadField`] if `msn` does not fit in 24 bits.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        if self.msn > MASK24 {
            return Err(Error::BadField {
                layer: Layer::Aeth,
                offset: field::MSN.start,
                field: "msn",
                value: u64::from(self.msn),
                expected: "24 bits",
            });
        }
        let h = out(buf, Layer::Aeth, HEADER_LEN)?;
        if let Some(b) = h.get_mut(field::SYNDROME) {
            *b = self.syndrome;
        }
        put_u24(h, field::MSN.start, self.msn);
        Ok(HEADER_LEN)
    }

    /// Builds the syndrome byte for `kind` (the inverse of [`Aeth::kind`]).
    /// Values wider than five bits are masked.
    pub fn syndrome_of(kind: AckKind) -> u8 {
        match kind {
            AckKind::Ack { credit_count } => credit_count & 0x1f,
            AckKind::RnrNak { timer } => 0x20 | (timer & 0x1f),
            AckKind::Nak(code) => 0x60 | (u8::from(code) & 0x1f),
            AckKind::Reserved(s) => s,
        }
    }

    /// Decodes the syndrome (IBA table 42). The reserved top bit is ignored.
    pub fn kind(&self) -> AckKind {
        let value = self.syndrome & 0x1f;
        match (self.syndrome >> 5) & 0x3 {
            0b00 => AckKind::Ack {
                credit_count: value,
            },
            0b01 => AckKind::RnrNak { timer: value },
            0b11 => AckKind::Nak(NakCode::from(value)),
            _ => AckKind::Reserved(self.syndrome),
        }
    }

    /// Whether this is a positive acknowledgement.
    pub fn is_ack(&self) -> bool {
        matches!(self.kind(), AckKind::Ack { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::testutil::{emits, truncated_at_every_offset};
    use hex_literal::hex;
    use proptest::prelude::*;

    #[test]
    fn parse_ack_with_credits() {
        // ACK, credit count code 0x0f (192 credits), MSN 0x000102.
        let b = hex!("0f 000102");
        let (a, rest) = Aeth::parse(&b).unwrap();
        assert!(rest.is_empty());
        assert_eq!(
            a,
            Aeth {
                syndrome: 0x0f,
                msn: 0x102
            }
        );
        assert_eq!(a.kind(), AckKind::Ack { credit_count: 15 });
        assert_eq!(credits_from_code(15), Some(192));
        assert!(a.is_ack());
        emits(&b, Layer::Aeth, |buf| a.emit(buf));
    }

    #[test]
    fn syndromes() {
        let k = |s| {
            Aeth {
                syndrome: s,
                msn: 0,
            }
            .kind()
        };
        assert_eq!(k(0x1f), AckKind::Ack { credit_count: 31 });
        assert_eq!(k(0x2e), AckKind::RnrNak { timer: 14 });
        assert_eq!(k(0x60), AckKind::Nak(NakCode::PsnSequenceError));
        assert_eq!(k(0x61), AckKind::Nak(NakCode::InvalidRequest));
        assert_eq!(k(0x62), AckKind::Nak(NakCode::RemoteAccessError));
        assert_eq!(k(0x63), AckKind::Nak(NakCode::RemoteOperationalError));
        assert_eq!(k(0x64), AckKind::Nak(NakCode::InvalidRdRequest));
        assert_eq!(k(0x65), AckKind::Nak(NakCode::Unknown(5)));
        assert_eq!(k(0x41), AckKind::Reserved(0x41));
        assert_eq!(NakCode::RemoteAccessError.name(), "Remote Access Error");
    }

    #[test]
    fn credit_and_timer_tables() {
        assert_eq!(credits_from_code(0), Some(0));
        assert_eq!(credits_from_code(5), Some(6));
        assert_eq!(credits_from_code(30), Some(32768));
        assert_eq!(credits_from_code(CREDIT_COUNT_INVALID), None);
        assert_eq!(credits_from_code(200), None);
        assert_eq!(rnr_timer_micros(0), Some(655_360));
        assert_eq!(rnr_timer_micros(1), Some(10));
        assert_eq!(rnr_timer_micros(31), Some(491_520));
        assert_eq!(rnr_timer_micros(32), None);
    }

    #[test]
    fn emit_rejects_wide_msn() {
        let a = Aeth {
            syndrome: 0,
            msn: 1 << 24,
        };
        assert!(matches!(
            a.emit(&mut [0; 4]),
            Err(Error::BadField { field: "msn", .. })
        ));
    }

    #[test]
    fn truncated() {
        truncated_at_every_offset(&hex!("00 000001"), HEADER_LEN, Layer::Aeth, Aeth::parse);
    }

    proptest! {
        #[test]
        fn round_trip(syndrome: u8, msn in 0u32..1 << 24) {
            let a = Aeth { syndrome, msn };
            let mut buf = [0u8; HEADER_LEN];
            a.emit(&mut buf).unwrap();
            prop_assert_eq!(Aeth::parse(&buf).unwrap().0, a);
        }

        #[test]
        fn syndrome_of_inverts_kind(syndrome in 0u8..0x80) {
            let a = Aeth { syndrome, msn: 0 };
            prop_assert_eq!(Aeth::syndrome_of(a.kind()), syndrome);
        }
    }
}
