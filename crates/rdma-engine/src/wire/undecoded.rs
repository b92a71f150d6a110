//! Frames that are RDMA traffic the analyzer cannot decode yet: iWARP
//! (RPC-over-RDMA over MPA/DDP/RDMAP on TCP) and RoCEv2 on a UDP port
//! other than the configured one. They are counted so that the report says
//! what it could not read instead of passing for a clean, empty capture.
//! Constant work per frame: a port compare, a 16-octet key compare, and for
//! UDP off the RoCEv2 port one more dissection with its ICRC checked.

use rdma_dissectors::ib::icrc::IcrcStatus;
use rdma_dissectors::iwarp::{mpa, NFS_RDMA_PORT};
use rdma_dissectors::stack;

use crate::{Engine, Frame};

/// IP protocol number of TCP.
const TCP: u8 = 6;

impl Engine {
    /// Counts `f` in [`crate::NotDecoded`] when it is recognised there.
    #[cold]
    pub(super) fn undecoded(&mut self, f: &Frame<'_>, d: &stack::Dissection<'_>) {
        let Some(ip) = d.ip else { return };
        if let Some(udp) = d.udp {
            let port = udp.destination_port;
            if port != self.config.stack.rocev2_port && self.rocev2_elsewhere(f, port) {
                let n = &mut self.state.totals.not_decoded;
                n.rocev2_other_port += 1;
                n.rocev2_port = Some(port);
            }
            return;
        }
        if ip.protocol() != TCP {
            return;
        }
        let header = ip.header();
        // The IP header is a slice of the frame: where it ends is where
        // TCP starts (safe pointer arithmetic, no dereference).
        let start = (header.as_ptr() as usize)
            .wrapping_sub(f.data.as_ptr() as usize)
            .saturating_add(header.len());
        let Some(tcp) = f.data.get(start..) else {
            return;
        };
        let Some(&[sp0, sp1, dp0, dp1]) = tcp.first_chunk::<4>() else {
            return;
        };
        let data_offset = tcp.get(12).map_or(0, |b| usize::from(b >> 4) * 4);
        let payload = tcp.get(data_offset.max(20)..).unwrap_or_default();
        let n = &mut self.state.totals.not_decoded;
        if mpa::frame_kind(payload).is_some() {
            n.mpa_setup += 1;
        } else if u16::from_be_bytes([sp0, sp1]) == NFS_RDMA_PORT
            || u16::from_be_bytes([dp0, dp1]) == NFS_RDMA_PORT
        {
            n.tcp_20049 += 1;
        }
    }

    /// Whether the frame, read as RoCEv2 on `port`, has a BTH and a valid
    /// ICRC: 32 bits of evidence, so DNS or QUIC never pass for it.
    fn rocev2_elsewhere(&self, f: &Frame<'_>, port: u16) -> bool {
        let mut config = self.config.stack;
        config.rocev2_port = port;
        config.verify_icrc = true;
        let d = stack::dissect(f.link, f.data, &config);
        d.bth().is_some() && d.icrc == Some(IcrcStatus::Valid)
    }
}
