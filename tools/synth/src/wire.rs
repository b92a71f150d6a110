//! From transport headers to pcap records, in any of the three framings
//! that carry the IBA transport, every header written by the dissectors'
//! own `emit`, every record by the analyzer's one capture writer:
//!
//! ```text
//! RoCEv2 (Ethernet):     Ethernet (14) | IPv4 (20) | UDP (8) to 4791 | BTH ... pad | ICRC (4, LE)
//! RoCEv1 (Ethernet):     Ethernet (14, type 0x8915) | GRH (40) | BTH ... pad | ICRC
//! InfiniBand (DLT 247):  LRH (8) | BTH ... pad | ICRC | VCRC (2)
//! ```
//!
//! The same traffic in each, node for node: an IPv4 address names a node
//! on RoCEv2, its IPv4-mapped GID on RoCEv1, and its last two octets as a
//! LID on InfiniBand (10.99.0.2 is LID 2).
//!
//! One frame buffer is reused for every packet and records go through one
//! large buffered writer, so the hot path allocates nothing.

use std::io::Write;
use std::net::Ipv4Addr;

use rdma_dissectors::ib::grh::Grh;
use rdma_dissectors::ib::icrc::{ib_icrc, rocev1_icrc, rocev2_icrc, vcrc, ICRC_LEN};
use rdma_dissectors::ib::lrh::Lrh;
use rdma_dissectors::ib::Transport;
use rdma_dissectors::ip::{Ipv4, ECN_CE, PROTO_UDP};
use rdma_dissectors::link::{ether_type, Ethernet, LinkType};
use rdma_dissectors::udp::{Udp, ROCEV2_PORT};
use serde::Serialize;

use super::Error;
use rdma_capture::{CaptureWriter, Format, Resolution};

const ETH_LEN: usize = Ethernet::HEADER_LEN;
const IP_LEN: usize = 20;
const UDP_LEN: usize = Udp::HEADER_LEN;
const GRH_LEN: usize = 40;
const LRH_LEN: usize = 8;
const VCRC_LEN: usize = 2;
/// Bytes in front of the BTH on RoCEv2.
pub const OUTER_LEN: usize = ETH_LEN + IP_LEN + UDP_LEN;
/// Largest frame we build: a 4096-byte MTU packet with every header, rounded up.
const MAX_FRAME: usize = 8192;
/// LRH Link Next Header: an IBA transport header follows, no GRH (IBA 7.7.1).
const LNH_IBA_LOCAL: u8 = 2;

/// How frames carry the IBA transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Framing {
    /// RoCEv2: Ethernet, IPv4, UDP to port 4791.
    #[default]
    Rocev2,
    /// RoCEv1: Ethernet type 0x8915 and a GRH.
    Rocev1,
    /// Native InfiniBand, as ibdump's frames are (DLT_INFINIBAND, 247).
    Ib,
}

impl std::str::FromStr for Framing {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "rocev2" => Ok(Framing::Rocev2),
            "rocev1" => Ok(Framing::Rocev1),
            "ib" | "infiniband" => Ok(Framing::Ib),
            _ => Err(format!("unknown framing {s:?}: rocev2, rocev1 or ib")),
        }
    }
}

/// One end of a connection as the wire shows it.
#[derive(Debug, Clone, Copy)]
pub struct Node {
    /// Ethernet address.
    pub mac: [u8; 6],
    /// IPv4 address.
    pub ip: Ipv4Addr,
}

impl Node {
    /// The node's LID on InfiniBand: the address's last two octets.
    pub fn lid(&self) -> u16 {
        let [_, _, hi, lo] = self.ip.octets();
        u16::from_be_bytes([hi, lo])
    }

    /// The node's GID on RoCEv1: the IPv4-mapped address, as RoCE stacks
    /// make GIDs from IPv4 addresses.
    pub fn gid(&self) -> [u8; 16] {
        self.ip.to_ipv6_mapped().octets()
    }
}

/// Sets FECN in the BTH at the start of `ib` if `flag` asks to, and
/// clears it: in transit, after the sender built the packet (the ICRC
/// leaves the bit out, IBA 7.8.1, so it stays valid either way).
fn mark_fecn(flag: &mut bool, ib: &mut [u8]) {
    if std::mem::take(flag) {
        if let Some(b) = ib.get_mut(4) {
            *b |= 0x80;
        }
    }
}

/// Writes pcap records of RoCEv2 frames and keeps count of them.
pub struct Wire<W: Write> {
    out: CaptureWriter<W>,
    frame_buf: Vec<u8>,
    /// Frames written so far: the number of the last one (tshark counts from 1).
    pub frames: u64,
    /// Bytes written so far, file header included.
    pub bytes: u64,
    /// Timestamp of the next frame, ns since the epoch.
    pub ts_ns: u64,
    ip_id: u16,
    /// Corrupt the ICRC of the next frame (the `icrc_mismatch` injection).
    pub corrupt_next_icrc: bool,
    /// Mark the next this many RoCEv2 frames ECN CE, as a congested switch
    /// would (the `congestion` injection; RoCEv1 and InfiniBand have no IP
    /// header to mark).
    pub ce_next: u32,
    /// Set FECN in the next frame's BTH, as an InfiniBand switch would.
    pub fecn_next: bool,
    /// Nanoseconds one byte takes on the simulated link.
    ps_per_byte: u64,
    framing: Framing,
}

impl<W: Write> Wire<W> {
    /// Starts a classic pcap file of RoCEv2 frames on `out`: nanosecond
    /// timestamps unless `micro`.
    ///
    /// # Errors
    /// When writing the file header fails.
    pub fn new(out: W, start_ns: u64, micro: bool) -> Result<Self, Error> {
        Self::with_framing(out, start_ns, micro, Framing::Rocev2)
    }

    /// Starts a classic pcap file of frames in `framing` on `out` (link
    /// type Ethernet, or InfiniBand for native IB).
    ///
    /// # Errors
    /// When writing the file header fails.
    pub fn with_framing(
        out: W,
        start_ns: u64,
        micro: bool,
        framing: Framing,
    ) -> Result<Self, Error> {
        let resolution = if micro {
            Resolution::Micro
        } else {
            Resolution::Nano
        };
        let link = match framing {
            Framing::Ib => LinkType::INFINIBAND,
            Framing::Rocev2 | Framing::Rocev1 => LinkType::ETHERNET,
        };
        let out = CaptureWriter::new(out, Format::Pcap, link, resolution)?;
        Ok(Wire {
            bytes: out.bytes,
            out,
            frame_buf: vec![0; MAX_FRAME],
            frames: 0,
            ts_ns: start_ns,
            ip_id: 1,
            corrupt_next_icrc: false,
            ce_next: 0,
            fecn_next: false,
            // 25 Gb/s: 320 ps per byte.
            ps_per_byte: 320,
            framing,
        })
    }

    /// Lets `ns` nanoseconds pass before the next frame.
    pub fn advance(&mut self, ns: u64) {
        self.ts_ns += ns;
    }

    /// Writes one frame from `src` to `dst` carrying `t`; returns its frame
    /// number. `udp_source_port` is used on RoCEv2 only.
    ///
    /// # Errors
    /// When a header does not fit (a generator bug, reported rather than
    /// hidden) or the output fails.
    pub fn packet(
        &mut self,
        src: &Node,
        dst: &Node,
        udp_source_port: u16,
        t: &Transport<'_>,
    ) -> Result<u64, Error> {
        match self.framing {
            Framing::Rocev2 => self.rocev2(src, dst, udp_source_port, t),
            Framing::Rocev1 => self.rocev1(src, dst, t),
            Framing::Ib => self.ib(src, dst, t),
        }
    }

    fn rocev1(&mut self, src: &Node, dst: &Node, t: &Transport<'_>) -> Result<u64, Error> {
        let tl = t.wire_len();
        let total = ETH_LEN + GRH_LEN + tl + ICRC_LEN;
        let buf = self
            .frame_buf
            .get_mut(..total)
            .ok_or(Error::FrameTooLong(total))?;
        let (eth, rest) = buf.split_at_mut(ETH_LEN);
        Ethernet {
            destination: dst.mac,
            source: src.mac,
            ether_type: ether_type::ROCE_V1,
        }
        .emit(eth)?;
        let (grh_ib, icrc) = rest.split_at_mut(GRH_LEN + tl);
        let (grh, ib) = grh_ib.split_at_mut(GRH_LEN);
        Grh {
            ip_ver: 6,
            tclass: 0,
            flow_label: 0,
            pay_len: u16::try_from(tl + ICRC_LEN).map_err(|_| Error::FrameTooLong(total))?,
            nxt_hdr: Grh::NXT_HDR_IBA,
            hop_lmt: 1,
            sgid: src.gid(),
            dgid: dst.gid(),
        }
        .emit(grh)?;
        t.emit(ib)?;
        mark_fecn(&mut self.fecn_next, ib);
        let crc = corrupted(&mut self.corrupt_next_icrc, rocev1_icrc(grh_ib));
        icrc.copy_from_slice(&crc.to_le_bytes());
        self.record(total)
    }

    fn ib(&mut self, src: &Node, dst: &Node, t: &Transport<'_>) -> Result<u64, Error> {
        let tl = t.wire_len();
        // LRH PktLen: 4-byte words from the LRH through the ICRC (IBA 7.7.8).
        let words = (LRH_LEN + tl + ICRC_LEN) / 4;
        let total = LRH_LEN + tl + ICRC_LEN + VCRC_LEN;
        let buf = self
            .frame_buf
            .get_mut(..total)
            .ok_or(Error::FrameTooLong(total))?;
        let (covered, vcrc_out) = buf.split_at_mut(total - VCRC_LEN);
        let (body, icrc) = covered.split_at_mut(LRH_LEN + tl);
        let (lrh, ib) = body.split_at_mut(LRH_LEN);
        Lrh {
            vl: 0,
            lver: 0,
            sl: 0,
            lnh: LNH_IBA_LOCAL,
            dlid: dst.lid(),
            packet_length: u16::try_from(words).map_err(|_| Error::FrameTooLong(total))?,
            slid: src.lid(),
        }
        .emit(lrh)?;
        t.emit(ib)?;
        mark_fecn(&mut self.fecn_next, ib);
        let crc = corrupted(&mut self.corrupt_next_icrc, ib_icrc(body));
        icrc.copy_from_slice(&crc.to_le_bytes());
        vcrc_out.copy_from_slice(&vcrc(covered).to_le_bytes());
        self.record(total)
    }

    fn rocev2(
        &mut self,
        src: &Node,
        dst: &Node,
        udp_source_port: u16,
        t: &Transport<'_>,
    ) -> Result<u64, Error> {
        let tl = t.wire_len();
        let total = OUTER_LEN + tl + ICRC_LEN;
        let buf = self
            .frame_buf
            .get_mut(..total)
            .ok_or(Error::FrameTooLong(total))?;
        let (eth, rest) = buf.split_at_mut(ETH_LEN);
        let (ip, rest) = rest.split_at_mut(IP_LEN);
        let (udp, rest) = rest.split_at_mut(UDP_LEN);
        let (ib, icrc) = rest.split_at_mut(tl);
        Ethernet {
            destination: dst.mac,
            source: src.mac,
            ether_type: ether_type::IPV4,
        }
        .emit(eth)?;
        let ecn = if self.ce_next > 0 {
            self.ce_next -= 1;
            ECN_CE
        } else {
            0
        };
        Ipv4 {
            dscp: 0,
            ecn,
            total_len: 0,
            identification: self.ip_id,
            dont_fragment: true,
            more_fragments: false,
            fragment_offset: 0,
            ttl: 64,
            protocol: PROTO_UDP,
            header_checksum: 0,
            source: src.ip,
            destination: dst.ip,
            header_len: 20,
        }
        .emit(UDP_LEN + tl + ICRC_LEN, ip)?;
        self.ip_id = self.ip_id.wrapping_add(1);
        Udp {
            source_port: udp_source_port,
            destination_port: ROCEV2_PORT,
            length: 0,
            checksum: 0,
        }
        .emit(tl + ICRC_LEN, udp)?;
        t.emit(ib)?;
        mark_fecn(&mut self.fecn_next, ib);
        let crc = corrupted(&mut self.corrupt_next_icrc, rocev2_icrc(ip, udp, ib));
        icrc.copy_from_slice(&crc.to_le_bytes());
        self.record(total)
    }

    /// Writes the pcap record of the first `len` bytes of the frame buffer.
    fn record(&mut self, len: usize) -> Result<u64, Error> {
        let frame = self.frame_buf.get(..len).ok_or(Error::FrameTooLong(len))?;
        let orig_len = u32::try_from(len).map_err(|_| Error::FrameTooLong(len))?;
        self.out.packet(self.ts_ns, orig_len, frame)?;
        self.frames += 1;
        self.bytes = self.out.bytes;
        // The next frame leaves after this one is on the wire.
        self.ts_ns += (len as u64 * self.ps_per_byte).div_ceil(1000).max(1);
        Ok(self.frames)
    }

    /// Flushes and returns the output.
    ///
    /// # Errors
    /// When the final flush fails.
    pub fn finish(self) -> Result<W, Error> {
        Ok(self.out.finish()?)
    }
}

/// `crc`, corrupted when an injection asked for the next frame's to be
/// (the `icrc_mismatch` injection); the request is used up.
fn corrupted(corrupt_next: &mut bool, crc: u32) -> u32 {
    if std::mem::take(corrupt_next) {
        crc ^ 0x5a5a_5a5a
    } else {
        crc
    }
}
