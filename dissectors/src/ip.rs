//! IPv4 (RFC 791) and IPv6 (RFC 8200) headers, as far as RoCEv2 needs them.
//!
//! ```text
//! IPv4                                      IPv6
//!  0 ver:4 ihl:4  1 dscp:6 ecn:2  2 total_len   0 ver:4 tclass:8 flow_label:20
//!  4 identification  6 flags:3 frag_off:13      4 payload_len  6 next_header  7 hop_limit
//!  8 ttl  9 protocol  10 header_checksum        8 source (16)
//! 12 source (4)  16 destination (4)            24 destination (16)
//! 20 options (ihl*4 - 20)
//! ```
//!
//! Parsing and validation come from etherparse. The returned payload is cut
//! at the length the header announces, so Ethernet padding never reaches the
//! upper layers; a capture cut short by its snaplen gives a shorter payload and
//! [`Ip::captured_whole`] says so.

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::bytes::{array_at, put, put_u16, u16_at, u32_at, u8_at};
use crate::error::{Error, Result};
use crate::layer::Layer;

/// IP protocol number of UDP.
pub const PROTO_UDP: u8 = 17;

/// IP protocol number of TCP.
pub const PROTO_TCP: u8 = 6;

/// An IPv4 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4 {
    /// Differentiated services code point (6 bits).
    pub dscp: u8,
    /// Explicit congestion notification (2 bits); RoCEv2 congestion control marks CE here.
    pub ecn: u8,
    /// Total length of the datagram as announced by the header.
    pub total_len: u16,
    /// Identification.
    pub identification: u16,
    /// Don't fragment.
    pub dont_fragment: bool,
    /// More fragments.
    pub more_fragments: bool,
    /// Fragment offset in 8-byte units.
    pub fragment_offset: u16,
    /// Time to live.
    pub ttl: u8,
    /// Protocol of the payload (17 for UDP).
    pub protocol: u8,
    /// Header checksum as found.
    pub header_checksum: u16,
    /// Source address.
    pub source: Ipv4Addr,
    /// Destination address.
    pub destination: Ipv4Addr,
    /// Header length in bytes (20 without options).
    pub header_len: u8,
}

/// An IPv6 fixed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6 {
    /// Traffic class (DSCP and ECN).
    pub traffic_class: u8,
    /// Flow label (20 bits).
    pub flow_label: u32,
    /// Payload length as announced by the header.
    pub payload_len: u16,
    /// Next header (17 for UDP).
    pub next_header: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Source address.
    pub source: Ipv6Addr,
    /// Destination address.
    pub destination: Ipv6Addr,
}

/// ECN codepoint "Congestion Experienced" (RFC 3168 5): a switch on the
/// path marked the packet instead of dropping it (RoCEv2 DCQCN answers it
/// with a CNP, IBA annex A17.9).
pub const ECN_CE: u8 = 0b11;

/// An IPv4 or IPv6 header as found in a frame: a checked view of its
/// bytes whose fields are read when asked for. Building the typed
/// [`Ipv4`]/[`Ipv6`] for every frame cost more than the rest of a RoCEv2
/// packet's dissection; most frames only need the protocol and addresses.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ip<'a> {
    /// IPv4.
    V4(Ipv4Slice<'a>),
    /// IPv6.
    V6(Ipv6Slice<'a>),
}

impl core::fmt::Debug for Ip<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Ip::V4(h) => f.debug_tuple("V4").field(&h.fields()).finish(),
            Ip::V6(h) => f.debug_tuple("V6").field(&h.fields()).finish(),
        }
    }
}

/// The bytes of an IPv4 header that [`Ip::parse`] accepted: at least 20,
/// exactly the header length with its options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Slice<'a>(&'a [u8]);

impl<'a> Ipv4Slice<'a> {
    /// The header bytes, options included.
    #[inline]
    pub fn bytes(&self) -> &'a [u8] {
        self.0
    }

    /// Every field, typed.
    pub fn fields(&self) -> Ipv4 {
        let b = self.0;
        let flags = u16_at(b, 6);
        Ipv4 {
            dscp: u8_at(b, 1) >> 2,
            ecn: u8_at(b, 1) & 0x3,
            total_len: self.total_len(),
            identification: u16_at(b, 4),
            dont_fragment: flags & 0x4000 != 0,
            more_fragments: flags & 0x2000 != 0,
            fragment_offset: flags & 0x1fff,
            ttl: u8_at(b, 8),
            protocol: self.protocol(),
            header_checksum: u16_at(b, 10),
            source: self.source(),
            destination: self.destination(),
            header_len: b.len() as u8,
        }
    }

    /// Total length of the datagram as announced by the header.
    #[inline]
    pub fn total_len(&self) -> u16 {
        u16_at(self.0, 2)
    }

    /// Protocol of the payload (17 for UDP).
    #[inline]
    pub fn protocol(&self) -> u8 {
        u8_at(self.0, 9)
    }

    /// The fragment offset, in 8-byte units (RFC 791): not 0 for every
    /// fragment of a datagram but the first.
    #[inline]
    pub fn fragment_offset(&self) -> u16 {
        u16_at(self.0, 6) & 0x1fff
    }

    /// The More Fragments flag: set on every fragment but the last.
    #[inline]
    pub fn more_fragments(&self) -> bool {
        u16_at(self.0, 6) & 0x2000 != 0
    }

    /// Source address.
    #[inline]
    pub fn source(&self) -> Ipv4Addr {
        Ipv4Addr::from(array_at::<4>(self.0, 12))
    }

    /// Destination address.
    #[inline]
    pub fn destination(&self) -> Ipv4Addr {
        Ipv4Addr::from(array_at::<4>(self.0, 16))
    }
}

/// The 40 bytes of an IPv6 fixed header that [`Ip::parse`] accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6Slice<'a>(&'a [u8]);

impl<'a> Ipv6Slice<'a> {
    /// The header bytes.
    #[inline]
    pub fn bytes(&self) -> &'a [u8] {
        self.0
    }

    /// Every field, typed.
    pub fn fields(&self) -> Ipv6 {
        let first = u32_at(self.0, 0);
        Ipv6 {
            traffic_class: (first >> 20) as u8,
            flow_label: first & 0xf_ffff,
            payload_len: self.payload_len(),
            next_header: self.next_header(),
            hop_limit: u8_at(self.0, 7),
            source: self.source(),
            destination: self.destination(),
        }
    }

    /// Payload length as announced by the header.
    #[inline]
    pub fn payload_len(&self) -> u16 {
        u16_at(self.0, 4)
    }

    /// Next header (17 for UDP).
    #[inline]
    pub fn next_header(&self) -> u8 {
        u8_at(self.0, 6)
    }

    /// Source address.
    #[inline]
    pub fn source(&self) -> Ipv6Addr {
        Ipv6Addr::from(array_at::<16>(self.0, 8))
    }

    /// Destination address.
    #[inline]
    pub fn destination(&self) -> Ipv6Addr {
        Ipv6Addr::from(array_at::<16>(self.0, 24))
    }
}

impl<'a> Ip<'a> {
    /// Parses an IPv4 or IPv6 header, chosen by the version nibble, and returns
    /// it with the payload (cut at the announced length).
    ///
    /// # Errors
    /// [`Error::Truncated`] for a header cut short; [`Error::BadField`] for a
    /// version other than 4 or 6 or an inconsistent length.
    pub fn parse(input: &'a [u8]) -> Result<(Ip<'a>, &'a [u8])> {
        match input.first().map(|b| b >> 4) {
            Some(4) => Self::parse_v4(input),
            Some(6) => Self::parse_v6(input),
            Some(v) => Err(Error::BadField {
                layer: Layer::Ipv4,
                offset: 0,
                field: "version",
                value: v.into(),
                expected: "4 or 6",
            }),
            None => Err(Error::truncated(Layer::Ipv4, 0, 20, 0)),
        }
    }

    /// Parses an IPv4 header (see [`Ip::parse`]).
    ///
    /// # Errors
    /// As [`Ip::parse`].
    pub fn parse_v4(input: &'a [u8]) -> Result<(Ip<'a>, &'a [u8])> {
        use etherparse::err::ipv4::{HeaderError, HeaderSliceError};
        let h = etherparse::Ipv4HeaderSlice::from_slice(input).map_err(|e| match e {
            HeaderSliceError::Len(l) => {
                Error::truncated(Layer::Ipv4, 0, l.required_len, input.len())
            }
            HeaderSliceError::Content(HeaderError::UnexpectedVersion { version_number }) => {
                Error::BadField {
                    layer: Layer::Ipv4,
                    offset: 0,
                    field: "version",
                    value: version_number.into(),
                    expected: "4",
                }
            }
            HeaderSliceError::Content(HeaderError::HeaderLengthSmallerThanHeader { ihl }) => {
                Error::BadField {
                    layer: Layer::Ipv4,
                    offset: 0,
                    field: "ihl",
                    value: ihl.into(),
                    expected: "at least 5",
                }
            }
        })?;
        let header = h.slice();
        let header_len = header.len();
        let total_len = usize::from(h.total_len());
        if total_len < header_len {
            return Err(Error::BadField {
                layer: Layer::Ipv4,
                offset: 2,
                field: "total_len",
                value: total_len as u64,
                expected: "at least the header length",
            });
        }
        let end = total_len.min(input.len());
        let payload = input.get(header_len..end).unwrap_or_default();
        Ok((Ip::V4(Ipv4Slice(header)), payload))
    }

    /// Parses an IPv6 fixed header (see [`Ip::parse`]). Extension headers are
    /// not walked: the caller sees their number in `next_header`.
    ///
    /// # Errors
    /// As [`Ip::parse`].
    pub fn parse_v6(input: &'a [u8]) -> Result<(Ip<'a>, &'a [u8])> {
        use etherparse::err::ipv6::{HeaderError, HeaderSliceError};
        let h = etherparse::Ipv6HeaderSlice::from_slice(input).map_err(|e| match e {
            HeaderSliceError::Len(l) => {
                Error::truncated(Layer::Ipv6, 0, l.required_len, input.len())
            }
            HeaderSliceError::Content(HeaderError::UnexpectedVersion { version_number }) => {
                Error::BadField {
                    layer: Layer::Ipv6,
                    offset: 0,
                    field: "version",
                    value: version_number.into(),
                    expected: "6",
                }
            }
        })?;
        let header = h.slice();
        let end = (40 + usize::from(h.payload_length())).min(input.len());
        let payload = input.get(40..end).unwrap_or_default();
        Ok((Ip::V6(Ipv6Slice(header)), payload))
    }

    /// The raw header bytes (needed by the RoCEv2 ICRC).
    #[inline]
    pub fn header(&self) -> &'a [u8] {
        match self {
            Ip::V4(h) => h.bytes(),
            Ip::V6(h) => h.bytes(),
        }
    }

    /// The protocol of the payload (IPv4 protocol or IPv6 next header).
    #[inline]
    pub fn protocol(&self) -> u8 {
        match self {
            Ip::V4(h) => h.protocol(),
            Ip::V6(h) => h.next_header(),
        }
    }

    /// Source address.
    #[inline]
    pub fn source(&self) -> IpAddr {
        match self {
            Ip::V4(h) => IpAddr::V4(h.source()),
            Ip::V6(h) => IpAddr::V6(h.source()),
        }
    }

    /// Destination address.
    #[inline]
    pub fn destination(&self) -> IpAddr {
        match self {
            Ip::V4(h) => IpAddr::V4(h.destination()),
            Ip::V6(h) => IpAddr::V6(h.destination()),
        }
    }

    /// The ECN field (RFC 3168 5): the low two bits of the IPv4 TOS byte
    /// or the IPv6 traffic class. [`ECN_CE`] is a congestion mark.
    #[inline]
    pub fn ecn(&self) -> u8 {
        match self {
            Ip::V4(h) => u8_at(h.bytes(), 1) & 0x3,
            Ip::V6(h) => ((u32_at(h.bytes(), 0) >> 20) & 0x3) as u8,
        }
    }

    /// Whether this is a fragment of an IPv4 datagram rather than a whole
    /// one (IPv6 fragments ride in an extension header, which is not followed).
    #[inline]
    pub fn is_fragment(&self) -> bool {
        match self {
            Ip::V4(h) => h.more_fragments() || h.fragment_offset() != 0,
            Ip::V6(_) => false,
        }
    }

    /// Whether this is a fragment after the first: its payload starts in the
    /// middle of the datagram, so it holds no transport header.
    #[inline]
    pub fn is_later_fragment(&self) -> bool {
        match self {
            Ip::V4(h) => h.fragment_offset() != 0,
            Ip::V6(_) => false,
        }
    }

    /// Whether `captured` bytes (the header and what followed it in the
    /// frame) hold the whole datagram the header announces.
    #[inline]
    pub fn captured_whole(&self, captured: usize) -> bool {
        match self {
            Ip::V4(h) => captured >= usize::from(h.total_len()),
            Ip::V6(h) => captured >= 40 + usize::from(h.payload_len()),
        }
    }

    /// The layer this header belongs to.
    #[inline]
    pub fn layer(&self) -> Layer {
        match self {
            Ip::V4(..) => Layer::Ipv4,
            Ip::V6(..) => Layer::Ipv6,
        }
    }
}

impl Ipv4 {
    /// Writes a 20-byte header (no options) for a payload of `payload_len`
    /// bytes, computing the total length and the header checksum.
    ///
    /// # Errors
    /// [`Error::Truncated`] when `buf` is shorter than 20 bytes;
    /// [`Error::BadField`] when the payload cannot fit an IPv4 datagram.
    pub fn emit(&self, payload_len: usize, buf: &mut [u8]) -> Result<usize> {
        let total = payload_len + 20;
        let Ok(total) = u16::try_from(total) else {
            return Err(Error::BadField {
                layer: Layer::Ipv4,
                offset: 2,
                field: "total_len",
                value: total as u64,
                expected: "at most 65535",
            });
        };
        if buf.len() < 20 {
            return Err(Error::truncated(Layer::Ipv4, 0, 20, buf.len()));
        }
        let flags_frag = (u16::from(self.dont_fragment) << 14)
            | (u16::from(self.more_fragments) << 13)
            | (self.fragment_offset & 0x1fff);
        put(buf, 0, &[0x45, (self.dscp << 2) | (self.ecn & 3)]);
        put_u16(buf, 2, total);
        put_u16(buf, 4, self.identification);
        put_u16(buf, 6, flags_frag);
        put(buf, 8, &[self.ttl, self.protocol, 0, 0]);
        put(buf, 12, &self.source.octets());
        put(buf, 16, &self.destination.octets());
        let csum = checksum(buf.get(..20).unwrap_or_default());
        put_u16(buf, 10, csum);
        Ok(20)
    }
}

impl Ipv6 {
    /// Writes the 40-byte fixed header for a payload of `payload_len` bytes.
    ///
    /// # Errors
    /// [`Error::Truncated`] when `buf` is shorter than 40 bytes;
    /// [`Error::BadField`] when the payload is too long for the length field.
    pub fn emit(&self, payload_len: usize, buf: &mut [u8]) -> Result<usize> {
        let Ok(len) = u16::try_from(payload_len) else {
            return Err(Error::BadField {
                layer: Layer::Ipv6,
                offset: 4,
                field: "payload_len",
                value: payload_len as u64,
                expected: "at most 65535",
            });
        };
        if buf.len() < 40 {
            return Err(Error::truncated(Layer::Ipv6, 0, 40, buf.len()));
        }
        let first =
            (6u32 << 28) | (u32::from(self.traffic_class) << 20) | (self.flow_label & 0xf_ffff);
        put(buf, 0, &first.to_be_bytes());
        put_u16(buf, 4, len);
        put(buf, 6, &[self.next_header, self.hop_limit]);
        put(buf, 8, &self.source.octets());
        put(buf, 24, &self.destination.octets());
        Ok(40)
    }
}

/// The Internet checksum (RFC 1071) of `data`.
fn checksum(data: &[u8]) -> u16 {
    let mut sum = 0u32;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        if let &[a, b] = c {
            sum += u32::from(u16::from_be_bytes([a, b]));
        }
    }
    if let Some(&last) = chunks.remainder().first() {
        sum += u32::from(last) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hex_literal::hex;
    use proptest::prelude::*;

    // IPv4 header of a RoCEv2 frame, 10.99.0.1 -> 10.99.0.2, 48 bytes in all.
    const V4: [u8; 20] = hex!("45 00 00 30 12 34 40 00 40 11 00 00 0a 63 00 01 0a 63 00 02");

    fn v4_frame() -> Vec<u8> {
        let mut f = V4.to_vec();
        let c = checksum(&f);
        f[10..12].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(&[0xee; 28]);
        f
    }

    #[test]
    fn parse_ipv4() {
        let f = v4_frame();
        let (ip, payload) = Ip::parse(&f).unwrap();
        let Ip::V4(v) = ip else { panic!("not v4") };
        assert_eq!(v.bytes().len(), 20);
        let h = v.fields();
        assert_eq!(payload.len(), 28);
        assert_eq!(h.protocol, PROTO_UDP);
        assert_eq!(h.source, Ipv4Addr::new(10, 99, 0, 1));
        assert!(h.dont_fragment);
        assert!(ip.captured_whole(f.len()));
        assert!(!ip.captured_whole(f.len() - 1));
        let mut buf = [0xa5; 20];
        h.emit(28, &mut buf).unwrap();
        assert_eq!(&buf[..], &f[..20]);
    }

    #[test]
    fn ethernet_padding_is_cut() {
        let mut f = v4_frame();
        f.extend_from_slice(&[0; 6]);
        let (_, payload) = Ip::parse(&f).unwrap();
        assert_eq!(payload.len(), 28);
    }

    #[test]
    fn truncated_at_every_offset() {
        let f = v4_frame();
        for cut in 0..20 {
            let e = Ip::parse(&f[..cut]).unwrap_err();
            assert!(
                matches!(
                    e,
                    Error::Truncated {
                        layer: Layer::Ipv4,
                        offset: 0,
                        ..
                    }
                ),
                "cut {cut}: {e}"
            );
        }
        let mut v6 = [0u8; 40];
        v6[0] = 0x60;
        for cut in 1..40 {
            let e = Ip::parse(&v6[..cut]).unwrap_err();
            assert!(
                matches!(
                    e,
                    Error::Truncated {
                        layer: Layer::Ipv6,
                        offset: 0,
                        needed: 40,
                        ..
                    }
                ),
                "cut {cut}: {e}"
            );
        }
    }

    #[test]
    fn bad_version_and_lengths() {
        assert!(matches!(
            Ip::parse(&[0x55; 40]),
            Err(Error::BadField {
                field: "version",
                ..
            })
        ));
        let mut f = v4_frame();
        f[2..4].copy_from_slice(&10u16.to_be_bytes());
        assert!(matches!(
            Ip::parse(&f),
            Err(Error::BadField {
                field: "total_len",
                ..
            })
        ));
        let mut f = v4_frame();
        f[0] = 0x44;
        assert!(matches!(
            Ip::parse(&f),
            Err(Error::BadField { field: "ihl", .. })
        ));
    }

    #[test]
    fn ecn_of_both_versions() {
        let mut f = v4_frame();
        assert_eq!(Ip::parse(&f).unwrap().0.ecn(), 0);
        // TOS 0x6b: DSCP 26, ECN CE.
        f[1] = 0x6b;
        assert_eq!(Ip::parse(&f).unwrap().0.ecn(), ECN_CE);
        let h = Ipv6 {
            traffic_class: 0x69, // DSCP 26, ECN 01 (ECT(1))
            flow_label: 0xfffff,
            payload_len: 0,
            next_header: PROTO_UDP,
            hop_limit: 64,
            source: "fe80::1".parse().unwrap(),
            destination: "fe80::2".parse().unwrap(),
        };
        let mut buf = [0u8; 40];
        h.emit(0, &mut buf).unwrap();
        assert_eq!(Ip::parse(&buf).unwrap().0.ecn(), 1);
        let h = Ipv6 {
            traffic_class: 0x03,
            flow_label: 0,
            ..h
        };
        h.emit(0, &mut buf).unwrap();
        assert_eq!(Ip::parse(&buf).unwrap().0.ecn(), ECN_CE);
    }

    #[test]
    fn ipv6_round_trip() {
        let h = Ipv6 {
            traffic_class: 0x12,
            flow_label: 0xabcde,
            payload_len: 8,
            next_header: PROTO_UDP,
            hop_limit: 64,
            source: "fe80::1".parse().unwrap(),
            destination: "fe80::2".parse().unwrap(),
        };
        let mut buf = [0u8; 48];
        h.emit(8, &mut buf).unwrap();
        let (ip, payload) = Ip::parse(&buf).unwrap();
        let Ip::V6(v) = ip else { panic!("not v6") };
        assert_eq!(v.bytes(), &buf[..40]);
        assert_eq!(v.fields(), h);
        assert_eq!(payload.len(), 8);
    }

    proptest! {
        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..80)) {
            if let Ok((ip, _)) = Ip::parse(&data) {
                prop_assert!(ip.ecn() <= ECN_CE);
            }
        }

        #[test]
        fn ipv4_round_trip(dscp in 0u8..64, ecn in 0u8..4, id: u16, df: bool, ttl: u8, proto: u8, s: [u8; 4], d: [u8; 4], len in 0usize..100) {
            let h = Ipv4 {
                dscp, ecn, total_len: (len + 20) as u16, identification: id, dont_fragment: df, more_fragments: false,
                fragment_offset: 0, ttl, protocol: proto, header_checksum: 0, source: s.into(), destination: d.into(), header_len: 20,
            };
            let mut buf = vec![0u8; 20 + len];
            h.emit(len, &mut buf).unwrap();
            let (Ip::V4(p), payload) = Ip::parse(&buf).unwrap() else { panic!() };
            let p = p.fields();
            prop_assert_eq!(payload.len(), len);
            prop_assert_eq!(checksum(&buf[..20]), 0);
            prop_assert_eq!(Ipv4 { header_checksum: 0, ..p }, h);
        }
    }
}
