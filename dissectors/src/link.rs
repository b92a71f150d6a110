//! Link layers: Ethernet II with 802.1Q tags, Linux cooked capture v1 and v2,
//! and the pcap link-type numbers that select them.
//!
//! ```text
//! Ethernet II            Linux cooked v1 (SLL)      Linux cooked v2 (SLL2)
//!  0  destination (6)     0  packet_type (2)         0  protocol (2)
//!  6  source (6)          2  arphrd_type (2)         2  reserved (2)
//! 12  ether_type (2)      4  addr_len (2)            4  interface_index (4)
//!                         6  addr (8)                8  arphrd_type (2)
//! 802.1Q tag             14  protocol (2)           10  packet_type (1)
//!  0  pcp:3 dei:1 vid:12                            11  addr_len (1)
//!  2  ether_type (2)                                12  addr (8)
//! ```
//!
//! Ethernet and VLAN parsing is delegated to etherparse, which validates and
//! slices without copying; the cooked-capture headers are simple enough to
//! read from a field table.

use crate::bytes::{array_at, put, put_u16, put_u32, u16_at, u32_at, u8_at};
use crate::error::{Error, Result};
use crate::layer::Layer;

/// A pcap / pcapng link-layer type (tcpdump.org `LINKTYPE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LinkType(pub u32);

impl LinkType {
    /// `LINKTYPE_ETHERNET`: Ethernet II, possibly 802.1Q-tagged.
    pub const ETHERNET: LinkType = LinkType(1);
    /// `LINKTYPE_RAW`: a raw IPv4 or IPv6 packet, version from the first nibble.
    pub const RAW: LinkType = LinkType(101);
    /// `DLT_RAW` as numbered by some BSDs; treated like [`LinkType::RAW`].
    pub const RAW_BSD: LinkType = LinkType(12);
    /// `DLT_RAW` as numbered by OpenBSD; treated like [`LinkType::RAW`].
    pub const RAW_OPENBSD: LinkType = LinkType(14);
    /// `LINKTYPE_LINUX_SLL`: Linux cooked capture v1 (`tcpdump -i any` before libpcap 1.10).
    pub const LINUX_SLL: LinkType = LinkType(113);
    /// `LINKTYPE_IPV4`: a raw IPv4 packet.
    pub const IPV4: LinkType = LinkType(228);
    /// `LINKTYPE_IPV6`: a raw IPv6 packet.
    pub const IPV6: LinkType = LinkType(229);
    /// `LINKTYPE_INFINIBAND`: a native InfiniBand packet starting with the LRH.
    pub const INFINIBAND: LinkType = LinkType(247);
    /// `LINKTYPE_LINUX_SLL2`: Linux cooked capture v2 (`tcpdump -i any`, libpcap 1.10+).
    pub const LINUX_SLL2: LinkType = LinkType(276);

    /// A short name for messages, or `None` for a link type this crate cannot dissect.
    pub const fn name(self) -> Option<&'static str> {
        Some(match self {
            LinkType::ETHERNET => "ethernet",
            LinkType::RAW | LinkType::RAW_BSD | LinkType::RAW_OPENBSD => "raw ip",
            LinkType::LINUX_SLL => "linux cooked v1",
            LinkType::IPV4 => "ipv4",
            LinkType::IPV6 => "ipv6",
            LinkType::INFINIBAND => "infiniband",
            LinkType::LINUX_SLL2 => "linux cooked v2",
            _ => return None,
        })
    }
}

/// EtherType values this crate follows.
pub mod ether_type {
    /// IPv4.
    pub const IPV4: u16 = 0x0800;
    /// IPv6.
    pub const IPV6: u16 = 0x86dd;
    /// IEEE 802.1Q VLAN tag.
    pub const VLAN: u16 = 0x8100;
    /// IEEE 802.1ad service VLAN tag (QinQ outer tag).
    pub const QINQ: u16 = 0x88a8;
    /// RoCE version 1: a GRH follows directly (IBA annex A16).
    pub const ROCE_V1: u16 = 0x8915;
}

/// An Ethernet II header (IEEE 802.3 clause 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ethernet {
    /// Destination MAC address.
    pub destination: [u8; 6],
    /// Source MAC address.
    pub source: [u8; 6],
    /// EtherType of what follows (a VLAN tag, IPv4, IPv6, RoCEv1).
    pub ether_type: u16,
}

impl Ethernet {
    /// Length of the header on the wire.
    pub const HEADER_LEN: usize = 14;

    /// Parses an Ethernet II header and returns it with the rest of the frame.
    ///
    /// # Errors
    /// [`Error::Truncated`] when fewer than 14 bytes are given.
    pub fn parse(input: &[u8]) -> Result<(Ethernet, &[u8])> {
        let slice = etherparse::Ethernet2HeaderSlice::from_slice(input)
            .map_err(|_| Error::truncated(Layer::Ethernet, 0, Self::HEADER_LEN, input.len()))?;
        let eth = Ethernet {
            destination: slice.destination(),
            source: slice.source(),
            ether_type: slice.ether_type().0,
        };
        let rest = input.get(Self::HEADER_LEN..).unwrap_or_default();
        Ok((eth, rest))
    }

    /// Writes the header into `buf` and returns its length.
    ///
    /// # Errors
    /// [`Error::Truncated`] when `buf` is shorter than the header.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let h = etherparse::Ethernet2Header {
            source: self.source,
            destination: self.destination,
            ether_type: etherparse::EtherType(self.ether_type),
        };
        let out = buf
            .get_mut(..Self::HEADER_LEN)
            .ok_or_else(|| Error::truncated(Layer::Ethernet, 0, Self::HEADER_LEN, 0))?;
        out.copy_from_slice(&h.to_bytes());
        Ok(Self::HEADER_LEN)
    }
}

/// An IEEE 802.1Q VLAN tag (the 4 bytes after an EtherType of 0x8100 or 0x88a8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Vlan {
    /// Priority code point (3 bits).
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN identifier (12 bits).
    pub vid: u16,
    /// EtherType of what follows.
    pub ether_type: u16,
}

impl Vlan {
    /// Length of the tag on the wire.
    pub const HEADER_LEN: usize = 4;

    /// Parses a VLAN tag and returns it with the rest of the frame.
    ///
    /// # Errors
    /// [`Error::Truncated`] when fewer than 4 bytes are given.
    pub fn parse(input: &[u8]) -> Result<(Vlan, &[u8])> {
        let slice = etherparse::SingleVlanHeaderSlice::from_slice(input)
            .map_err(|_| Error::truncated(Layer::Vlan, 0, Self::HEADER_LEN, input.len()))?;
        let vlan = Vlan {
            pcp: slice.priority_code_point().value(),
            dei: slice.drop_eligible_indicator(),
            vid: slice.vlan_identifier().value(),
            ether_type: slice.ether_type().0,
        };
        Ok((vlan, input.get(Self::HEADER_LEN..).unwrap_or_default()))
    }

    /// Writes the tag into `buf` and returns its length.
    ///
    /// # Errors
    /// [`Error::Truncated`] when `buf` is too short; [`Error::BadField`] when
    /// `pcp` or `vid` do not fit their bit widths.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        if self.pcp > 7 {
            return Err(bad(Layer::Vlan, 0, "pcp", self.pcp.into(), "0..=7"));
        }
        if self.vid > 0x0fff {
            return Err(bad(Layer::Vlan, 0, "vid", self.vid.into(), "0..=4095"));
        }
        let tci = (u16::from(self.pcp) << 13) | (u16::from(self.dei) << 12) | self.vid;
        if buf.len() < Self::HEADER_LEN {
            return Err(Error::truncated(
                Layer::Vlan,
                0,
                Self::HEADER_LEN,
                buf.len(),
            ));
        }
        put_u16(buf, 0, tci);
        put_u16(buf, 2, self.ether_type);
        Ok(Self::HEADER_LEN)
    }
}

/// A Linux cooked capture v1 header (`LINKTYPE_LINUX_SLL`, 16 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LinuxSll {
    /// Who sent the packet: 0 to us, 1 broadcast, 2 multicast, 3 to another host, 4 sent by us.
    pub packet_type: u16,
    /// The `ARPHRD_*` type of the interface (1 for Ethernet).
    pub arphrd_type: u16,
    /// How many bytes of `addr` are the link-layer source address.
    pub addr_len: u16,
    /// Link-layer source address, zero-padded to 8 bytes.
    pub addr: [u8; 8],
    /// EtherType of the payload.
    pub protocol: u16,
}

impl LinuxSll {
    /// Length of the header on the wire.
    pub const HEADER_LEN: usize = 16;

    /// Parses the header and returns it with the rest of the frame.
    ///
    /// # Errors
    /// [`Error::Truncated`] when fewer than 16 bytes are given.
    pub fn parse(input: &[u8]) -> Result<(LinuxSll, &[u8])> {
        let Some(rest) = input.get(Self::HEADER_LEN..) else {
            return Err(Error::truncated(
                Layer::LinuxSll,
                0,
                Self::HEADER_LEN,
                input.len(),
            ));
        };
        let h = LinuxSll {
            packet_type: u16_at(input, 0),
            arphrd_type: u16_at(input, 2),
            addr_len: u16_at(input, 4),
            addr: array_at(input, 6),
            protocol: u16_at(input, 14),
        };
        Ok((h, rest))
    }

    /// Writes the header into `buf` and returns its length.
    ///
    /// # Errors
    /// [`Error::Truncated`] when `buf` is too short.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        if buf.len() < Self::HEADER_LEN {
            return Err(Error::truncated(
                Layer::LinuxSll,
                0,
                Self::HEADER_LEN,
                buf.len(),
            ));
        }
        put_u16(buf, 0, self.packet_type);
        put_u16(buf, 2, self.arphrd_type);
        put_u16(buf, 4, self.addr_len);
        put(buf, 6, &self.addr);
        put_u16(buf, 14, self.protocol);
        Ok(Self::HEADER_LEN)
    }
}

/// A Linux cooked capture v2 header (`LINKTYPE_LINUX_SLL2`, 20 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LinuxSll2 {
    /// EtherType of the payload.
    pub protocol: u16,
    /// Index of the interface the packet was seen on.
    pub interface_index: u32,
    /// The `ARPHRD_*` type of the interface.
    pub arphrd_type: u16,
    /// Who sent the packet (as in [`LinuxSll::packet_type`]).
    pub packet_type: u8,
    /// How many bytes of `addr` are the link-layer source address.
    pub addr_len: u8,
    /// Link-layer source address, zero-padded to 8 bytes.
    pub addr: [u8; 8],
}

impl LinuxSll2 {
    /// Length of the header on the wire.
    pub const HEADER_LEN: usize = 20;

    /// Parses the header and returns it with the rest of the frame.
    ///
    /// # Errors
    /// [`Error::Truncated`] when fewer than 20 bytes are given.
    pub fn parse(input: &[u8]) -> Result<(LinuxSll2, &[u8])> {
        let Some(rest) = input.get(Self::HEADER_LEN..) else {
            return Err(Error::truncated(
                Layer::LinuxSll2,
                0,
                Self::HEADER_LEN,
                input.len(),
            ));
        };
        let h = LinuxSll2 {
            protocol: u16_at(input, 0),
            interface_index: u32_at(input, 4),
            arphrd_type: u16_at(input, 8),
            packet_type: u8_at(input, 10),
            addr_len: u8_at(input, 11),
            addr: array_at(input, 12),
        };
        Ok((h, rest))
    }

    /// Writes the header into `buf` and returns its length.
    ///
    /// # Errors
    /// [`Error::Truncated`] when `buf` is too short.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        if buf.len() < Self::HEADER_LEN {
            return Err(Error::truncated(
                Layer::LinuxSll2,
                0,
                Self::HEADER_LEN,
                buf.len(),
            ));
        }
        put_u16(buf, 0, self.protocol);
        put_u16(buf, 2, 0);
        put_u32(buf, 4, self.interface_index);
        put_u16(buf, 8, self.arphrd_type);
        put(buf, 10, &[self.packet_type, self.addr_len]);
        put(buf, 12, &self.addr);
        Ok(Self::HEADER_LEN)
    }
}

/// The link-layer header a frame started with.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Link {
    /// Ethernet II.
    Ethernet(Ethernet),
    /// Linux cooked capture v1.
    LinuxSll(LinuxSll),
    /// Linux cooked capture v2.
    LinuxSll2(LinuxSll2),
    /// No link header: the frame starts at the network layer.
    Raw,
}

fn bad(
    layer: Layer,
    offset: usize,
    field: &'static str,
    value: u64,
    expected: &'static str,
) -> Error {
    Error::BadField {
        layer,
        offset,
        field,
        value,
        expected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hex_literal::hex;
    use proptest::prelude::*;

    // Ethernet II header of a RoCEv2 frame between the lab's two guests.
    const ETH: [u8; 14] = hex!("52 54 00 12 34 02 52 54 00 12 34 01 08 00");

    #[test]
    fn parse_ethernet() {
        let (eth, rest) = Ethernet::parse(&ETH).unwrap();
        assert_eq!(eth.destination, hex!("52 54 00 12 34 02"));
        assert_eq!(eth.source, hex!("52 54 00 12 34 01"));
        assert_eq!(eth.ether_type, ether_type::IPV4);
        assert!(rest.is_empty());
        let mut buf = [0xa5; 14];
        assert_eq!(eth.emit(&mut buf).unwrap(), 14);
        assert_eq!(buf, ETH);
    }

    #[test]
    fn truncated_at_every_offset() {
        for cut in 0..ETH.len() {
            assert_eq!(
                Ethernet::parse(&ETH[..cut]).unwrap_err(),
                Error::Truncated {
                    layer: Layer::Ethernet,
                    offset: 0,
                    needed: 14,
                    available: cut
                }
            );
        }
        let vlan = hex!("60 64 08 00");
        for cut in 0..vlan.len() {
            assert!(matches!(
                Vlan::parse(&vlan[..cut]),
                Err(Error::Truncated {
                    layer: Layer::Vlan,
                    ..
                })
            ));
        }
        let sll = [0u8; 16];
        for cut in 0..sll.len() {
            assert!(matches!(
                LinuxSll::parse(&sll[..cut]),
                Err(Error::Truncated {
                    layer: Layer::LinuxSll,
                    ..
                })
            ));
        }
        let sll2 = [0u8; 20];
        for cut in 0..sll2.len() {
            assert!(matches!(
                LinuxSll2::parse(&sll2[..cut]),
                Err(Error::Truncated {
                    layer: Layer::LinuxSll2,
                    ..
                })
            ));
        }
    }

    #[test]
    fn parse_vlan() {
        // PCP 3, DEI 0, VID 100, then IPv4.
        let (v, _) = Vlan::parse(&hex!("60 64 08 00")).unwrap();
        assert_eq!(
            v,
            Vlan {
                pcp: 3,
                dei: false,
                vid: 100,
                ether_type: 0x0800
            }
        );
        let mut buf = [0xa5; 4];
        v.emit(&mut buf).unwrap();
        assert_eq!(buf, hex!("60 64 08 00"));
        assert!(Vlan { vid: 4096, ..v }.emit(&mut buf).is_err());
    }

    #[test]
    fn parse_sll_and_sll2() {
        // `tcpdump -i any` on the lab client: an outgoing (4) Ethernet (1) frame.
        let sll = hex!("00 04 00 01 00 06 52 54 00 12 34 01 00 00 08 00");
        let (h, _) = LinuxSll::parse(&sll).unwrap();
        assert_eq!(
            (h.packet_type, h.arphrd_type, h.addr_len, h.protocol),
            (4, 1, 6, 0x0800)
        );
        let mut buf = [0xa5; 16];
        h.emit(&mut buf).unwrap();
        assert_eq!(buf, sll);

        let sll2 = hex!("08 00 00 00 00 00 00 02 00 01 04 06 52 54 00 12 34 01 00 00");
        let (h, _) = LinuxSll2::parse(&sll2).unwrap();
        assert_eq!(
            (
                h.protocol,
                h.interface_index,
                h.arphrd_type,
                h.packet_type,
                h.addr_len
            ),
            (0x0800, 2, 1, 4, 6)
        );
        let mut buf = [0xa5; 20];
        h.emit(&mut buf).unwrap();
        assert_eq!(buf, sll2);
    }

    proptest! {
        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = Ethernet::parse(&data);
            let _ = Vlan::parse(&data);
            let _ = LinuxSll::parse(&data);
            let _ = LinuxSll2::parse(&data);
        }

        #[test]
        fn vlan_round_trip(pcp in 0u8..8, dei: bool, vid in 0u16..4096, et: u16) {
            let v = Vlan { pcp, dei, vid, ether_type: et };
            let mut buf = [0u8; 4];
            v.emit(&mut buf).unwrap();
            prop_assert_eq!(Vlan::parse(&buf).unwrap().0, v);
        }

        #[test]
        fn sll2_round_trip(protocol: u16, interface_index: u32, arphrd_type: u16, packet_type: u8, addr_len: u8, addr: [u8; 8]) {
            let h = LinuxSll2 { protocol, interface_index, arphrd_type, packet_type, addr_len, addr };
            let mut buf = [0u8; 20];
            h.emit(&mut buf).unwrap();
            prop_assert_eq!(LinuxSll2::parse(&buf).unwrap().0, h);
        }
    }
}
