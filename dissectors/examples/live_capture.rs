//! The dissectors on a live interface, with the `pcap` crate (libpcap):
//! prints one line per RoCEv2 / InfiniBand frame, RPC-over-RDMA and RPC
//! layers included.
//!
//! ```text
//! cargo build -p rdma-dissectors --example live_capture
//! sudo target/debug/examples/live_capture eth0 100     # stop after 100 RDMA frames
//! ```
//!
//! The capture filter keeps RoCEv2 (UDP port 4791) and RoCEv1 (EtherType
//! 0x8915); the link type libpcap reports is handed to the stack as is, so
//! the same code works on Ethernet, `any` (Linux cooked) and IPoIB captures.

use rdma_dissectors::link::LinkType;
use rdma_dissectors::stack::{self, Dissection};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let device = args.next().ok_or("usage: live_capture INTERFACE [COUNT]")?;
    let count: u64 = args.next().map_or(Ok(u64::MAX), |s| s.parse())?;

    let mut cap = pcap::Capture::from_device(device.as_str())?
        .snaplen(65_535)
        .immediate_mode(true)
        .open()?;
    cap.filter("udp port 4791 or ether proto 0x8915", true)?;
    let link = LinkType(cap.get_datalink().0 as u32);
    let config = stack::Config::default();

    let mut seen = 0;
    while seen < count {
        let packet = match cap.next_packet() {
            Ok(p) => p,
            Err(pcap::Error::TimeoutExpired) => continue,
            Err(e) => return Err(e.into()),
        };
        // The Dissection borrows the packet's bytes: no copy.
        let d: Dissection<'_> = stack::dissect(link, packet.data, &config);
        let Some(bth) = d.bth() else { continue };
        seen += 1;
        let mut line = format!(
            "{}.{:06} {} qp {:#x} psn {:#x}",
            packet.header.ts.tv_sec,
            packet.header.ts.tv_usec,
            bth.opcode.name(),
            bth.dest_qp.get(),
            bth.psn.get()
        );
        if let Some(a) = d.aeth() {
            line += &format!(" | AETH {}", a.kind());
        }
        if let Some(h) = d.rpcrdma() {
            line += &format!(
                " | {} xid {} credits {}",
                h.proc.name().unwrap_or("?"),
                h.xid,
                h.credits
            );
        }
        if let Some(n) = d.nfs() {
            line += &format!(" | {}", n.procedure.unwrap_or("?"));
        }
        if let Some(e) = d.stop {
            line += &format!(" | {e}");
        }
        println!("{line}");
    }
    Ok(())
}
