//! InfiniBand and RoCE layers: routing headers, the transport headers, the
//! invariant and variant CRCs, MADs, Communication Management and RDMA-CM.
//!
//! Spec: InfiniBand Architecture Specification volume 1 (IBA): chapter 7
//! (LRH, ICRC, VCRC), chapter 8 (GRH), chapter 9 (BTH and the extension
//! headers), chapter 12 (CM), chapter 13 (MADs), annex A11 (RDMA IP CM
//! service) and annex A17 (RoCEv2).
//!
//! Where each header sits:
//!
//! ```text
//! native IB : LRH(8) [GRH(40)] BTH(12) ext… payload pad ICRC(4) VCRC(2)
//! RoCEv1    : Eth 0x8915 GRH(40) BTH(12) ext… payload pad ICRC(4)
//! RoCEv2    : Eth IPv4/IPv6 UDP(dport 4791) BTH(12) ext… payload pad ICRC(4)
//! QP1 (CM)  : … BTH DETH MAD(24 + 232)
//! ```
//!
//! Every header type has `parse(input) -> Result<(Header, rest)>`, which
//! consumes exactly its own bytes, and `emit(&self, buf) -> Result<usize>`.
//! [`parse_transport`] walks BTH and the extension headers its opcode calls
//! for; the `icrc` module checks the ICRC and VCRC.
//!
//! This module also holds the protocol quantities shared by the layers:
//! [`Qpn`], [`Psn`] and [`PKey`].
//!
//! ```
//! use rdma_dissectors::ib::{icrc, parse_transport, Opcode};
//!
//! // A RoCEv2 CNP as a ConnectX-4 Lx sent it: IPv4 header, UDP header,
//! // then BTH, 16 reserved bytes and the ICRC.
//! let ip = [0x45, 0xc2, 0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11,
//!           0x91, 0x61, 10, 0, 0x11, 1, 10, 0, 0x12, 1];
//! let udp = [0x00, 0x00, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00];
//! let mut ib = vec![0x81, 0x00, 0xff, 0xff, 0x40, 0x00, 0x01, 0x18, 0, 0, 0, 0];
//! ib.extend_from_slice(&[0; 16]);
//! ib.extend_from_slice(&[0x82, 0xfd, 0x00, 0x2a]);
//!
//! assert_eq!(icrc::check_rocev2(&ip, &udp, &ib, true), icrc::IcrcStatus::Valid);
//! let t = parse_transport(&ib[..ib.len() - icrc::ICRC_LEN])?;
//! assert_eq!(t.bth.opcode, Opcode::CNP);
//! assert!(t.bth.becn);
//! assert_eq!(t.bth.dest_qp.get(), 0x118);
//! # Ok::<(), rdma_dissectors::Error>(())
//! ```

pub mod aeth;
pub mod atomic;
pub mod bth;
pub mod cm;
pub mod cma;
pub mod deth;
pub mod grh;
pub mod icrc;
pub mod ieth;
pub mod immdt;
pub mod lrh;
pub mod mad;
pub mod rdeth;
pub mod reth;
pub mod transport;
pub mod xrceth;

pub use aeth::{AckKind, Aeth, NakCode};
pub use atomic::{AtomicAckEth, AtomicEth};
pub use bth::{
    Bth, ExtHeader, ExtHeaders, Opcode, Operation, Position, Transport as TransportService,
};
pub use cm::{parse_cm, CmMessage, ServiceId};
pub use cma::{CmaHeader, PortSpace};
pub use deth::Deth;
pub use grh::Grh;
pub use icrc::{IcrcStatus, VcrcStatus};
pub use ieth::Ieth;
pub use immdt::ImmDt;
pub use lrh::Lrh;
pub use mad::Mad;
pub use rdeth::Rdeth;
pub use reth::Reth;
pub use transport::{parse_transport, parse_transport_cut, Transport};
pub use xrceth::XrcEth;

use crate::{Error, Layer, Result};

/// Largest value of a 24-bit field (QPN, PSN, EE context, XRC SRQ).
const MASK24: u32 = 0x00ff_ffff;

/// A queue pair number: 24 bits (IBA 9.2, BTH:DestQP; 9.3.2, DETH:SrcQP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Qpn(u32);

impl Qpn {
    /// QP0, the subnet management QP (IBA 3.9.1).
    pub const QP0: Qpn = Qpn(0);
    /// QP1, the general services QP that carries CM MADs (IBA 3.9.1).
    pub const QP1: Qpn = Qpn(1);
    /// 0xFFFFFF, the multicast QPN (IBA 10.5.2.1).
    pub const MULTICAST: Qpn = Qpn(MASK24);

    /// `Some` if `v` fits in 24 bits.
    pub const fn try_new(v: u32) -> Option<Qpn> {
        if v <= MASK24 {
            Some(Qpn(v))
        } else {
            None
        }
    }

    /// The low 24 bits of `v`, for fields read from 24-bit wire slots.
    pub(crate) const fn from_bits(v: u32) -> Qpn {
        Qpn(v & MASK24)
    }

    /// The number.
    pub const fn get(self) -> u32 {
        self.0
    }
}

impl core::fmt::Display for Qpn {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:#08x}", self.0)
    }
}

/// A packet sequence number: 24 bits, compared modulo 2^24 (IBA 9.7.1).
///
/// There is no `Ord`: like smoltcp's `SeqNumber`, order only makes sense
/// within half the number space, so use [`Psn::is_before`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Psn(u32);

impl Psn {
    /// Number of distinct PSNs, 2^24.
    pub const MODULUS: u32 = 1 << 24;

    /// `Some` if `v` fits in 24 bits.
    pub const fn try_new(v: u32) -> Option<Psn> {
        if v <= MASK24 {
            Some(Psn(v))
        } else {
            None
        }
    }

    /// The low 24 bits of `v`, for fields read from 24-bit wire slots.
    pub(crate) const fn from_bits(v: u32) -> Psn {
        Psn(v & MASK24)
    }

    /// The number.
    pub const fn get(self) -> u32 {
        self.0
    }

    /// `self + n`, wrapping at 2^24.
    #[must_use]
    pub const fn add(self, n: u32) -> Psn {
        Psn(self.0.wrapping_add(n) & MASK24)
    }

    /// How far `later` is ahead of `self`, modulo 2^24 (0 when equal).
    pub const fn distance(self, later: Psn) -> u32 {
        later.0.wrapping_sub(self.0) & MASK24
    }

    /// Whether `self` comes before `other` within half the number space
    /// (2^23). Exactly half a space apart, each is "before" the other, as with
    /// TCP sequence numbers.
    pub const fn is_before(self, other: Psn) -> bool {
        // Shift the 24-bit values to the top of an i32 so that the sign of
        // the wrapped difference gives the order.
        ((self.0 << 8).wrapping_sub(other.0 << 8) as i32) < 0
    }

    /// Whether `self` comes after `other` (see [`Psn::is_before`]).
    pub const fn is_after(self, other: Psn) -> bool {
        other.is_before(self)
    }
}

impl core::fmt::Display for Psn {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A partition key (IBA 10.9.1): membership bit and 15-bit base.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct PKey(pub u16);

impl PKey {
    /// 0xFFFF, the default partition with full membership.
    pub const DEFAULT: PKey = PKey(0xffff);

    /// Every 16-bit value is a P_Key; this exists for symmetry with the
    /// other newtypes.
    pub const fn try_new(v: u16) -> Option<PKey> {
        Some(PKey(v))
    }

    /// The raw value.
    pub const fn get(self) -> u16 {
        self.0
    }

    /// Bit 15: full (rather than limited) membership.
    pub const fn is_full_member(self) -> bool {
        self.0 & 0x8000 != 0
    }

    /// The low 15 bits that name the partition.
    pub const fn base(self) -> u16 {
        self.0 & 0x7fff
    }
}

impl core::fmt::Display for PKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:#06x}", self.0)
    }
}

/// Splits `len` header bytes off `input`, or says how short it was.
#[inline]
pub(crate) fn split(input: &[u8], layer: Layer, len: usize) -> Result<(&[u8], &[u8])> {
    if input.len() < len {
        return Err(Error::truncated(layer, 0, len, input.len()));
    }
    Ok(input.split_at(len))
}

/// The first `len` bytes of `buf` for emitting a header, or `Truncated`.
#[inline]
pub(crate) fn out(buf: &mut [u8], layer: Layer, len: usize) -> Result<&mut [u8]> {
    let avail = buf.len();
    buf.get_mut(..len)
        .ok_or(Error::truncated(layer, 0, len, avail))
}

/// Test helpers shared by the header modules.
#[cfg(test)]
pub(crate) mod testutil {
    use crate::{Error, Layer, Result};

    /// A RoCEv2 frame from a capture: its number, IP header, UDP header,
    /// the IBA packet (BTH through ICRC) and whether it was captured whole.
    pub(crate) struct RoceFrame {
        pub(crate) number: usize,
        pub(crate) ip: Vec<u8>,
        pub(crate) udp: Vec<u8>,
        pub(crate) ib: Vec<u8>,
        pub(crate) whole: bool,
    }

    /// The RoCEv2 (UDP port 4791) frames of a classic little-endian
    /// Ethernet pcap under `captures/`. Test code: panics on a bad file.
    pub(crate) fn roce_frames(name: &str) -> Vec<RoceFrame> {
        let path = format!("{}/../captures/{name}", env!("CARGO_MANIFEST_DIR"));
        let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(
            &data[..4],
            &[0xd4, 0xc3, 0xb2, 0xa1],
            "{path}: not a LE pcap"
        );
        assert_eq!(
            u32::from_le_bytes(data[20..24].try_into().unwrap()),
            1,
            "not Ethernet"
        );
        let le = |b: &[u8]| u32::from_le_bytes(b.try_into().unwrap()) as usize;
        let mut out = Vec::new();
        let mut at = 24;
        let mut number = 0;
        while at + 16 <= data.len() {
            number += 1;
            let incl = le(&data[at + 8..at + 12]);
            let orig = le(&data[at + 12..at + 16]);
            let frame = &data[at + 16..at + 16 + incl];
            at += 16 + incl;
            let mut l3 = 14;
            let mut ethertype = u16::from_be_bytes([frame[12], frame[13]]);
            if ethertype == 0x8100 {
                ethertype = u16::from_be_bytes([frame[16], frame[17]]);
                l3 = 18;
            }
            let (ip_len, proto) = match ethertype {
                0x0800 => (usize::from(frame[l3] & 0x0f) * 4, frame[l3 + 9]),
                0x86dd => (40, frame[l3 + 6]),
                _ => continue,
            };
            let udp_at = l3 + ip_len;
            if proto != 17 || frame.len() < udp_at + 8 {
                continue;
            }
            if u16::from_be_bytes([frame[udp_at + 2], frame[udp_at + 3]]) != 4791 {
                continue;
            }
            out.push(RoceFrame {
                number,
                ip: frame[l3..udp_at].to_vec(),
                udp: frame[udp_at..udp_at + 8].to_vec(),
                ib: frame[udp_at + 8..].to_vec(),
                whole: incl == orig,
            });
        }
        out
    }

    /// Every cut of `bytes` shorter than `len` gives `Truncated` for `layer`
    /// with `needed` and `available` counted from `offset_of(cut)`.
    pub(crate) fn truncated_at_every_offset<T: core::fmt::Debug>(
        bytes: &[u8],
        len: usize,
        layer: Layer,
        parse: impl for<'a> Fn(&'a [u8]) -> Result<(T, &'a [u8])>,
    ) {
        for cut in 0..len {
            let e = parse(&bytes[..cut]).unwrap_err();
            assert_eq!(
                e,
                Error::Truncated {
                    layer,
                    offset: 0,
                    needed: len,
                    available: cut
                },
                "cut at {cut}"
            );
        }
    }

    /// Emitting into a buffer one byte too short gives `Truncated`; into a
    /// 0xa5-filled buffer of exactly `expected.len()` gives `expected`.
    pub(crate) fn emits(expected: &[u8], layer: Layer, emit: impl Fn(&mut [u8]) -> Result<usize>) {
        let mut buf = vec![0xa5u8; expected.len()];
        assert_eq!(emit(&mut buf), Ok(expected.len()));
        assert_eq!(buf, expected);
        let mut short = vec![0xa5u8; expected.len() - 1];
        assert_eq!(
            emit(&mut short),
            Err(Error::Truncated {
                layer,
                offset: 0,
                needed: expected.len(),
                available: expected.len() - 1
            })
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn qpn_range() {
        assert_eq!(Qpn::try_new(0xff_ffff).map(Qpn::get), Some(0xff_ffff));
        assert_eq!(Qpn::try_new(0x100_0000), None);
        assert_eq!(Qpn::QP1.get(), 1);
        assert_eq!(Qpn::from_bits(0xab12_3456).get(), 0x12_3456);
    }

    #[test]
    fn psn_wraps() {
        let top = Psn::try_new(0xff_fffe).unwrap();
        assert_eq!(top.add(3).get(), 1);
        assert_eq!(top.distance(Psn::try_new(1).unwrap()), 3);
        assert_eq!(Psn::try_new(1).unwrap().distance(top), 0xff_fffd);
        assert!(top.is_before(Psn::try_new(1).unwrap()));
        assert!(!Psn::try_new(1).unwrap().is_before(top));
        assert!(Psn::try_new(1).unwrap().is_after(top));
        assert!(!top.is_before(top));
        assert_eq!(Psn::try_new(1 << 24), None);
    }

    #[test]
    fn pkey_bits() {
        assert!(PKey::DEFAULT.is_full_member());
        assert_eq!(PKey(0x7fff).base(), 0x7fff);
        assert!(!PKey(0x7fff).is_full_member());
        assert_eq!(PKey::DEFAULT.to_string(), "0xffff");
    }

    proptest! {
        #[test]
        fn psn_order_is_antisymmetric(a in 0u32..1 << 24, d in 1u32..(1 << 23)) {
            let a = Psn::try_new(a).unwrap();
            let b = a.add(d);
            prop_assert!(a.is_before(b));
            prop_assert!(!b.is_before(a));
            prop_assert_eq!(a.distance(b), d);
        }
    }
}
