//! From transport headers to pcap records: Ethernet II, IPv4 (with its
//! header checksum), UDP to port 4791 (checksum 0, as RoCEv2 senders do) and
//! the ICRC, every header written by the dissectors' own `emit`, every
//! record by the analyzer's one capture writer.
//!
//! ```text
//! pcap record: ts_sec ts_frac incl_len orig_len | frame
//! frame:       Ethernet (14) | IPv4 (20) | UDP (8) | BTH + ext headers + payload + pad | ICRC (4, LE)
//! ```
//!
//! One frame buffer is reused for every packet and records go through one
//! large buffered writer, so the hot path allocates nothing.

use std::io::Write;
use std::net::Ipv4Addr;

use rdma_dissectors::ib::icrc::{rocev2_icrc, ICRC_LEN};
use rdma_dissectors::ib::Transport;
use rdma_dissectors::ip::{Ipv4, PROTO_UDP};
use rdma_dissectors::link::{ether_type, Ethernet, LinkType};
use rdma_dissectors::udp::{Udp, ROCEV2_PORT};

use super::Error;
use crate::sources::pcap::{CaptureWriter, Format, Resolution};

const ETH_LEN: usize = Ethernet::HEADER_LEN;
const IP_LEN: usize = 20;
const UDP_LEN: usize = Udp::HEADER_LEN;
/// Bytes in front of the BTH.
pub const OUTER_LEN: usize = ETH_LEN + IP_LEN + UDP_LEN;
/// Largest frame we build: a 4096-byte MTU packet with every header, rounded up.
const MAX_FRAME: usize = 8192;

/// One end of a connection as the wire shows it.
#[derive(Debug, Clone, Copy)]
pub struct Node {
    /// Ethernet address.
    pub mac: [u8; 6],
    /// IPv4 address.
    pub ip: Ipv4Addr,
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
    /// Nanoseconds one byte takes on the simulated link.
    ps_per_byte: u64,
}

impl<W: Write> Wire<W> {
    /// Starts a classic pcap file (link type Ethernet) on `out`:
    /// nanosecond timestamps unless `micro`.
    ///
    /// # Errors
    /// When writing the file header fails.
    pub fn new(out: W, start_ns: u64, micro: bool) -> Result<Self, Error> {
        let resolution = if micro {
            Resolution::Micro
        } else {
            Resolution::Nano
        };
        let out = CaptureWriter::new(out, Format::Pcap, LinkType::ETHERNET, resolution)?;
        Ok(Wire {
            bytes: out.bytes,
            out,
            frame_buf: vec![0; MAX_FRAME],
            frames: 0,
            ts_ns: start_ns,
            ip_id: 1,
            corrupt_next_icrc: false,
            // 25 Gb/s: 320 ps per byte.
            ps_per_byte: 320,
        })
    }

    /// Lets `ns` nanoseconds pass before the next frame.
    pub fn advance(&mut self, ns: u64) {
        self.ts_ns += ns;
    }

    /// Writes one RoCEv2 frame from `src` to `dst` carrying `t`; returns its
    /// frame number.
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
        Ipv4 {
            dscp: 0,
            ecn: 0,
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
        let mut crc = rocev2_icrc(ip, udp, ib);
        if self.corrupt_next_icrc {
            self.corrupt_next_icrc = false;
            crc ^= 0x5a5a_5a5a;
        }
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
