//! RDMA-CM over IB CM: the IP-based service IDs (IBA annex A11, "RDMA IP CM
//! Service") and the CMA header that Linux `rdma_cm` puts at the start of a
//! REQ's (or SIDR_REQ's) private data.
//!
//! ```text
//! service ID (64 bits): 00 00 00 00 01 PS PORT(16)
//!   PS: 0x02 IPoIB, 0x06 TCP, 0x11 UDP, 0x3f IB (AF_IB, no CMA header)
//!
//! CMA header (36 bytes, Linux struct cma_hdr):
//!  0          1              2          4                20               36
//! +----------+--------------+----------+----------------+----------------+
//! | version  | IPVer(4)|rsv | src port | src addr (16)  | dst addr (16)  |
//! |  0x00    |   4 or 6     |          | IPv4: last 4   | IPv4: last 4   |
//! +----------+--------------+----------+----------------+----------------+
//! ```
//!
//! The destination port is the service ID's. A REP's private data has no
//! such header: it is the consumer's from its first byte.

use core::fmt;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::cm::ServiceId;
use super::{out, split};
use crate::bytes::{array_at, put, put_u16, u16_at, u8_at};
use crate::{Error, Layer, Result};

mod field {
    use core::ops::Range;
    pub const CMA_VERSION: usize = 0;
    pub const IP_VERSION: usize = 1;
    pub const SRC_PORT: Range<usize> = 2..4;
    pub const SRC_ADDR: Range<usize> = 4..20;
    pub const DST_ADDR: Range<usize> = 20..36;
}

/// Length of the CMA header in bytes.
pub const HEADER_LEN: usize = 36;

/// The only CMA header version (Linux `CMA_VERSION`).
pub const CMA_VERSION: u8 = 0x00;

/// Mask of the fixed part of an RDMA IP CM service ID (annex A11).
const RDMA_IP_PS_MASK: u64 = 0xffff_ffff_ff00_0000;
/// The fixed part: 0x0000000001 in the top five bytes.
const RDMA_IP_PREFIX: u64 = 0x0000_0000_0100_0000;

/// The port space of an RDMA IP CM service ID (annex A11.2, Linux `enum rdma_ucm_port_space`).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PortSpace {
    /// 0x02: IPoIB.
    Ipoib,
    /// 0x06: TCP (RC connections: NFS over RDMA, iSER, SMB Direct).
    Tcp,
    /// 0x11: UDP (UD QPs).
    Udp,
    /// 0x3f: IB native addressing (AF_IB; no CMA header).
    Ib,
}

impl PortSpace {
    /// The port space byte of the service ID.
    pub const fn code(self) -> u8 {
        match self {
            PortSpace::Ipoib => 0x02,
            PortSpace::Tcp => 0x06,
            PortSpace::Udp => 0x11,
            PortSpace::Ib => 0x3f,
        }
    }

    /// The port space for a service ID byte, if defined.
    pub const fn from_code(code: u8) -> Option<PortSpace> {
        match code {
            0x02 => Some(PortSpace::Ipoib),
            0x06 => Some(PortSpace::Tcp),
            0x11 => Some(PortSpace::Udp),
            0x3f => Some(PortSpace::Ib),
            _ => None,
        }
    }

    /// Whether REQs to this port space carry a CMA header in their private data.
    pub const fn has_cma_header(self) -> bool {
        !matches!(self, PortSpace::Ib)
    }
}

impl fmt::Display for PortSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PortSpace::Ipoib => "IPoIB",
            PortSpace::Tcp => "TCP",
            PortSpace::Udp => "UDP",
            PortSpace::Ib => "IB",
        })
    }
}

impl ServiceId {
    /// The port space and port of an RDMA IP CM service ID (annex A11:
    /// 0x0000_0000_01_PS_PORT), or `None` if this is not one.
    pub const fn rdma_cm(self) -> Option<(PortSpace, u16)> {
        if self.0 & RDMA_IP_PS_MASK != RDMA_IP_PREFIX {
            return None;
        }
        match PortSpace::from_code((self.0 >> 16) as u8) {
            Some(ps) => Some((ps, self.0 as u16)),
            None => None,
        }
    }

    /// The RDMA IP CM service ID for `ps` and `port`.
    pub const fn for_rdma_cm(ps: PortSpace, port: u16) -> ServiceId {
        ServiceId(RDMA_IP_PREFIX | ((ps.code() as u64) << 16) | port as u64)
    }
}

/// The CMA header at the start of an RDMA-CM REQ's private data (Linux
/// `struct cma_hdr`, `drivers/infiniband/core/cma.c`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CmaHeader {
    /// cma_version: 0x00.
    pub cma_version: u8,
    /// IP version from the upper nibble of the second byte: 4 or 6.
    pub ip_version: u8,
    /// The active side's source port (the destination port is the service ID's).
    pub src_port: u16,
    /// The active side's address.
    pub src_addr: IpAddr,
    /// The passive side's address.
    pub dst_addr: IpAddr,
}

fn addr(b: &[u8], at: usize, v4: bool) -> IpAddr {
    let raw: [u8; 16] = array_at(b, at);
    if v4 {
        let [.., a, b, c, d] = raw;
        IpAddr::V4(Ipv4Addr::new(a, b, c, d))
    } else {
        IpAddr::V6(Ipv6Addr::from(raw))
    }
}

impl CmaHeader {
    /// Parses the CMA header at the start of `private_data`; returns it and
    /// the consumer's private data after it.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] if `private_data` is shorter than [`HEADER_LEN`];
    /// [`Error::BadField`] if the version is not 0 or the IP version not 4 or 6
    /// (then the private data is probably not RDMA-CM's).
    pub fn parse(private_data: &[u8]) -> Result<(CmaHeader, &[u8])> {
        let (h, rest) = split(private_data, Layer::Cma, HEADER_LEN)?;
        let cma_version = u8_at(h, field::CMA_VERSION);
        if cma_version != CMA_VERSION {
            return Err(Error::BadField {
                layer: Layer::Cma,
                offset: field::CMA_VERSION,
                field: "cma_version",
                value: cma_version.into(),
                expected: "0",
            });
        }
        let ip_version = u8_at(h, field::IP_VERSION) >> 4;
        let v4 = match ip_version {
            4 => true,
            6 => false,
            _ => {
                return Err(Error::BadField {
                    layer: Layer::Cma,
                    offset: field::IP_VERSION,
                    field: "ip_version",
                    value: ip_version.into(),
                    expected: "4 or 6",
                })
            }
        };
        Ok((
            CmaHeader {
                cma_version,
                ip_version,
                src_port: u16_at(h, field::SRC_PORT.start),
                src_addr: addr(h, field::SRC_ADDR.start, v4),
                dst_addr: addr(h, field::DST_ADDR.start, v4),
            },
            rest,
        ))
    }

    /// Writes the header to the start of `buf`; returns [`HEADER_LEN`]. The
    /// IP version written is that of the addresses; IPv4 addresses go in the
    /// last four bytes of their 16-byte slots, the rest zero.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] if `buf` is shorter than [`HEADER_LEN`];
    /// [`Error::BadField`] if the two addresses are of different families.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let ip_version = match (self.src_addr, self.dst_addr) {
            (IpAddr::V4(_), IpAddr::V4(_)) => 4u8,
            (IpAddr::V6(_), IpAddr::V6(_)) => 6u8,
            _ => {
                return Err(Error::BadField {
                    layer: Layer::Cma,
                    offset: field::DST_ADDR.start,
                    field: "dst_addr",
                    value: 0,
                    expected: "the same address family as src_addr",
                })
            }
        };
        let h = out(buf, Layer::Cma, HEADER_LEN)?;
        h.fill(0);
        if let Some(b) = h.get_mut(field::CMA_VERSION) {
            *b = self.cma_version;
        }
        if let Some(b) = h.get_mut(field::IP_VERSION) {
            *b = ip_version << 4;
        }
        put_u16(h, field::SRC_PORT.start, self.src_port);
        for (a, at) in [
            (self.src_addr, field::SRC_ADDR.start),
            (self.dst_addr, field::DST_ADDR.start),
        ] {
            match a {
                IpAddr::V4(v4) => put(h, at + 12, &v4.octets()),
                IpAddr::V6(v6) => put(h, at, &v6.octets()),
            };
        }
        Ok(HEADER_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::cm::tests::REQ_MAD;
    use crate::ib::cm::{parse_cm, CmMessage};
    use crate::ib::mad::Mad;
    use crate::ib::testutil::{emits, truncated_at_every_offset};
    use hex_literal::hex;
    use proptest::prelude::*;

    // The CMA header of the REQ in captures/v3-inline.pcap frame 26.
    const BYTES: [u8; 36] = hex!(
        "00 40 b1ec"
        "00000000 00000000 00000000 0a630002"
        "00000000 00000000 00000000 0a630001"
    );
    fn hdr() -> CmaHeader {
        CmaHeader {
            cma_version: 0,
            ip_version: 4,
            src_port: 0xb1ec,
            src_addr: IpAddr::V4(Ipv4Addr::new(10, 99, 0, 2)),
            dst_addr: IpAddr::V4(Ipv4Addr::new(10, 99, 0, 1)),
        }
    }

    #[test]
    fn service_id_of_nfs_rdma() {
        // TCP port space, port 20049 (NFS over RDMA), from the same REQ.
        assert_eq!(
            ServiceId(0x0000_0000_0106_4e51).rdma_cm(),
            Some((PortSpace::Tcp, 20049))
        );
        assert_eq!(
            ServiceId::for_rdma_cm(PortSpace::Tcp, 20049),
            ServiceId(0x0106_4e51)
        );
        assert_eq!(
            ServiceId(0x0000_0000_0111_0001).rdma_cm(),
            Some((PortSpace::Udp, 1))
        );
        assert_eq!(
            ServiceId(0x0000_0000_013f_0001).rdma_cm(),
            Some((PortSpace::Ib, 1))
        );
        assert_eq!(
            ServiceId(0x0000_0000_0102_0001).rdma_cm(),
            Some((PortSpace::Ipoib, 1))
        );
        assert_eq!(ServiceId(0x0000_0000_0107_4e51).rdma_cm(), None);
        assert_eq!(ServiceId(0x1000_0000_0106_4e51).rdma_cm(), None);
        assert!(!PortSpace::Ib.has_cma_header());
    }

    #[test]
    fn parse_from_capture_req() {
        let (mad, data) = Mad::parse(&REQ_MAD).unwrap();
        let CmMessage::Req(req) = parse_cm(&mad, data).unwrap() else {
            panic!()
        };
        let (h, consumer) = CmaHeader::parse(req.private_data).unwrap();
        assert_eq!(h, hdr());
        assert_eq!(consumer.len(), 92 - 36);
        // RFC 8797 private data follows.
        assert_eq!(&consumer[..8], &hex!("f6ab0e18 01010303"));
    }

    #[test]
    fn emit_cma_header() {
        emits(&BYTES, Layer::Cma, |b| hdr().emit(b));
        let mixed = CmaHeader {
            dst_addr: IpAddr::V6(Ipv6Addr::LOCALHOST),
            ..hdr()
        };
        assert!(matches!(
            mixed.emit(&mut [0; 36]),
            Err(Error::BadField {
                field: "dst_addr",
                ..
            })
        ));
    }

    #[test]
    fn ipv6_and_bad_versions() {
        let mut b = [0u8; 36];
        b[1] = 0x60;
        b[4] = 0xfe;
        b[5] = 0x80;
        b[35] = 1;
        let (h, _) = CmaHeader::parse(&b).unwrap();
        assert_eq!(h.ip_version, 6);
        assert_eq!(h.src_addr, "fe80::".parse::<IpAddr>().unwrap());
        assert_eq!(h.dst_addr, "::1".parse::<IpAddr>().unwrap());
        b[1] = 0x50;
        assert!(matches!(
            CmaHeader::parse(&b),
            Err(Error::BadField {
                field: "ip_version",
                offset: 1,
                ..
            })
        ));
        b[1] = 0x40;
        b[0] = 1;
        assert!(matches!(
            CmaHeader::parse(&b),
            Err(Error::BadField {
                field: "cma_version",
                ..
            })
        ));
    }

    #[test]
    fn truncated() {
        truncated_at_every_offset(&BYTES, HEADER_LEN, Layer::Cma, CmaHeader::parse);
    }

    proptest! {
        #[test]
        fn round_trip_v4(port: u16, s: [u8; 4], d: [u8; 4]) {
            let h = CmaHeader { src_port: port, src_addr: IpAddr::from(s), dst_addr: IpAddr::from(d), ..hdr() };
            let mut buf = [0u8; HEADER_LEN];
            h.emit(&mut buf).unwrap();
            prop_assert_eq!(CmaHeader::parse(&buf).unwrap().0, h);
        }

        #[test]
        fn round_trip_v6(port: u16, s: [u8; 16], d: [u8; 16]) {
            let h = CmaHeader { cma_version: 0, ip_version: 6, src_port: port,
                                src_addr: IpAddr::from(s), dst_addr: IpAddr::from(d) };
            let mut buf = [0u8; HEADER_LEN];
            h.emit(&mut buf).unwrap();
            prop_assert_eq!(CmaHeader::parse(&buf).unwrap().0, h);
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..48)) {
            let _ = CmaHeader::parse(&b);
        }

        #[test]
        fn service_id_round_trip(ps in 0usize..4, port: u16) {
            let ps = [PortSpace::Ipoib, PortSpace::Tcp, PortSpace::Udp, PortSpace::Ib][ps];
            prop_assert_eq!(ServiceId::for_rdma_cm(ps, port).rdma_cm(), Some((ps, port)));
        }
    }
}
