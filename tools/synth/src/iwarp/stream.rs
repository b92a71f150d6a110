//! One end of an iWARP connection as its TCP segments show it: the MPA
//! frame, then FPDUs with CRCs and markers placed as RFC 5044 sections
//! 4.3 and 4.4 place them, each FPDU in one segment (section 8: senders
//! align FPDUs with segments, as iWARP NICs and `siw` do).

use std::net::Ipv4Addr;

use rdma_dissectors::ip::Ipv4;
use rdma_dissectors::iwarp::{crc32c, mpa};
use rdma_dissectors::link::{ether_type, Ethernet};

use crate::Error;

/// Octets between markers (RFC 5044 section 4.3).
const INTERVAL: u64 = mpa::MARKER_INTERVAL;
/// TCP header without options.
pub(super) const TCP_LEN: usize = 20;
/// Ethernet, IPv4 and TCP in front of a payload.
pub(super) const HEADERS: usize = Ethernet::HEADER_LEN + 20 + TCP_LEN;
const PROTO_TCP: u8 = 6;

/// TCP flags.
pub(super) const FIN: u8 = 0x01;
pub(super) const SYN: u8 = 0x02;
pub(super) const PSH: u8 = 0x08;
pub(super) const ACK: u8 = 0x10;

/// An FPDU as sent: its octets on the wire (markers in), and what a
/// receiver delivers (markers out).
#[derive(Debug, Clone)]
pub(super) struct Built {
    pub raw: Vec<u8>,
    pub clean: Vec<u8>,
}

/// One end: its address, and what it has sent.
#[derive(Debug, Clone)]
pub(super) struct End {
    pub mac: [u8; 6],
    pub ip: Ipv4Addr,
    pub port: u16,
    pub isn: u32,
    /// Stream octets sent after the SYN.
    pub sent: u64,
    /// Where its first FPDU starts (markers count from there).
    pub base: Option<u64>,
    pub markers: bool,
    pub crc: bool,
    ip_id: u16,
}

impl End {
    pub fn new(mac: [u8; 6], ip: Ipv4Addr, port: u16, isn: u32) -> Self {
        End {
            mac,
            ip,
            port,
            isn,
            sent: 0,
            base: None,
            markers: false,
            crc: false,
            ip_id: 1,
        }
    }

    /// The sequence number of stream octet `off`.
    pub fn seq_at(&self, off: u64) -> u32 {
        // Sequence numbers are the offset mod 2^32 past the SYN's.
        self.isn.wrapping_add(1).wrapping_add(off as u32)
    }

    /// The next sequence number this end sends.
    pub fn next_seq(&self) -> u32 {
        self.seq_at(self.sent)
    }

    /// Builds the FPDU of `ulpdu` starting at stream offset `self.sent`
    /// (not yet counted as sent), with a CRC made wrong on request.
    pub fn fpdu(&self, ulpdu: &[u8], bad_crc: bool) -> Result<Built, Error> {
        let Ok(ulen) = u16::try_from(ulpdu.len()) else {
            return Err(Error::Options(format!(
                "a {}-octet DDP segment does not fit an FPDU",
                ulpdu.len()
            )));
        };
        let mut clean = ulen.to_be_bytes().to_vec();
        clean.extend_from_slice(ulpdu);
        clean.resize(clean.len() + usize::from(mpa::pad_len(ulen)), 0);
        let mut raw = Vec::with_capacity(clean.len() + 16);
        for &b in &clean {
            self.marker_if_due(&mut raw);
            raw.push(b);
        }
        {
            // A marker due before the CRC lies inside the FPDU: covered.
            self.marker_if_due(&mut raw);
            // Without CRCs the field is still there (RFC 5044 section
            // 4.1), sent as zeros as siw does.
            let sum = if self.crc {
                crc32c::checksum(&raw) ^ u32::from(bad_crc)
            } else {
                0
            };
            let octets = sum.to_le_bytes();
            clean.extend_from_slice(&octets);
            for b in octets {
                self.marker_if_due(&mut raw);
                raw.push(b);
            }
        }
        Ok(Built { raw, clean })
    }

    /// A marker goes here when the stream position is a multiple of 512
    /// from the first FPDU (RFC 5044 section 4.3), its FPDUPTR the octets
    /// back to the start of the FPDU (0 when the FPDU starts after it).
    fn marker_if_due(&self, raw: &mut Vec<u8>) {
        let Some(base) = self.base.filter(|_| self.markers) else {
            return;
        };
        let pos = self.sent + raw.len() as u64;
        if (pos - base).is_multiple_of(INTERVAL) {
            let ptr = raw.len() as u16;
            raw.extend_from_slice(&[0, 0]);
            raw.extend_from_slice(&ptr.to_be_bytes());
        }
    }

    /// An Ethernet/IPv4/TCP frame from this end to `to` carrying
    /// `payload` at stream offset `off` (the SYN is at offset -1).
    pub fn frame(
        &mut self,
        to: &End,
        off: Option<u64>,
        flags: u8,
        payload: &[u8],
    ) -> Result<Vec<u8>, Error> {
        let seq = off.map_or(self.isn, |o| self.seq_at(o));
        let ack = if flags & ACK != 0 { to.next_seq() } else { 0 };
        let mut f = vec![0u8; HEADERS + payload.len()];
        let eth = Ethernet {
            destination: to.mac,
            source: self.mac,
            ether_type: ether_type::IPV4,
        };
        let n = eth.emit(&mut f)?;
        let ip = Ipv4 {
            dscp: 0,
            ecn: 0,
            total_len: 0,
            identification: self.ip_id,
            dont_fragment: true,
            more_fragments: false,
            fragment_offset: 0,
            ttl: 64,
            protocol: PROTO_TCP,
            header_checksum: 0,
            source: self.ip,
            destination: to.ip,
            header_len: 20,
        };
        self.ip_id = self.ip_id.wrapping_add(1);
        let tcp_len = TCP_LEN + payload.len();
        ip.emit(tcp_len, f.get_mut(n..).unwrap_or_default())?;
        let t = n + 20;
        let tcp = f.get_mut(t..).unwrap_or_default();
        tcp_header(tcp, self.port, to.port, seq, ack, flags);
        if let Some(d) = tcp.get_mut(TCP_LEN..) {
            d.copy_from_slice(payload);
        }
        let sum = tcp_checksum(self.ip, to.ip, tcp);
        if let Some(c) = tcp.get_mut(16..18) {
            c.copy_from_slice(&sum.to_be_bytes());
        }
        Ok(f)
    }
}

fn tcp_header(b: &mut [u8], sport: u16, dport: u16, seq: u32, ack: u32, flags: u8) {
    let mut h = [0u8; TCP_LEN];
    h[0..2].copy_from_slice(&sport.to_be_bytes());
    h[2..4].copy_from_slice(&dport.to_be_bytes());
    h[4..8].copy_from_slice(&seq.to_be_bytes());
    h[8..12].copy_from_slice(&ack.to_be_bytes());
    h[12] = 5 << 4;
    h[13] = flags;
    h[14..16].copy_from_slice(&65_535u16.to_be_bytes());
    if let Some(d) = b.get_mut(..TCP_LEN) {
        d.copy_from_slice(&h);
    }
}

/// The TCP checksum over the IPv4 pseudo-header and the segment (RFC 793).
fn tcp_checksum(src: Ipv4Addr, dst: Ipv4Addr, seg: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut add = |b: &[u8]| {
        for pair in b.chunks(2) {
            let hi = u32::from(pair.first().copied().unwrap_or(0));
            let lo = u32::from(pair.get(1).copied().unwrap_or(0));
            sum += hi << 8 | lo;
        }
    };
    add(&src.octets());
    add(&dst.octets());
    add(&[0, PROTO_TCP]);
    add(&(seg.len() as u16).to_be_bytes());
    add(seg);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}
