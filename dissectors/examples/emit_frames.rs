//! Building frames with `emit`, the way the analyzer's synthetic capture
//! generator does: an NFSv3 NULL call over RPC-over-RDMA in an RC SEND Only,
//! on RoCEv2 (Ethernet, IPv4, UDP 4791, BTH, payload, ICRC). Every header
//! is written by its own `emit`, which computes lengths and checksums; the
//! frame is then dissected back to show it round-trips.
//!
//! ```text
//! cargo run -p rdma-dissectors --example emit_frames               # prints the frame
//! cargo run -p rdma-dissectors --example emit_frames -- out.pcap   # and writes a pcap
//! ```

use std::net::Ipv4Addr;

use rdma_dissectors::ib::bth::{Bth, Opcode};
use rdma_dissectors::ib::icrc::{rocev2_icrc, IcrcStatus, ICRC_LEN};
use rdma_dissectors::ib::transport::Transport;
use rdma_dissectors::ib::{PKey, Psn, Qpn};
use rdma_dissectors::ip::{Ipv4, PROTO_UDP};
use rdma_dissectors::link::{ether_type, Ethernet, LinkType};
use rdma_dissectors::oncrpc::{AuthFlavor, Call, MsgBody, OpaqueAuth, RpcMsg};
use rdma_dissectors::rpcrdma::{Body, Chunks, RpcRdmaHeader, Xid};
use rdma_dissectors::stack;
use rdma_dissectors::udp::{Udp, ROCEV2_PORT};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The upper layers first: the RPC call, then the RPC-over-RDMA header in
    // front of it, into one SEND payload.
    let auth_sys = [0u8; 20]; // stamp, empty machine name, uid 0, gid 0, no gids
    let call = RpcMsg {
        xid: 0x1234_5678,
        body: MsgBody::Call(Call {
            rpcvers: 2,
            prog: 100_003, // NFS
            vers: 3,
            proc: 0, // NULL
            cred: OpaqueAuth {
                flavor: AuthFlavor::Sys,
                body: &auth_sys,
            },
            verf: OpaqueAuth::NONE,
            args: &[],
        }),
    };
    let body = Body::Msg(Chunks::EMPTY);
    let rpcrdma = RpcRdmaHeader {
        xid: Xid(0x1234_5678),
        vers: 1,
        credits: 128,
        proc: body.proc(),
        body,
    };
    let mut send = [0u8; 256];
    let hlen = rpcrdma.emit(&mut send)?;
    let rlen = call.emit(&mut send[hlen..])?;
    let payload = &send[..hlen + rlen];

    // The transport: BTH plus payload (RC SEND Only has no extension header).
    let bth = Bth {
        opcode: Opcode::RC_SEND_ONLY,
        se: false,
        m: false,
        pad_count: 0,
        tver: 0,
        p_key: PKey::DEFAULT,
        fecn: false,
        becn: false,
        dest_qp: Qpn::try_new(0x11).ok_or("QPN over 24 bits")?,
        ack_req: true,
        psn: Psn::try_new(0x00_0100).ok_or("PSN over 24 bits")?,
    };
    let t = Transport::new(bth, payload);

    // The outer headers, each emitted into its own part of one buffer.
    let tl = t.wire_len();
    let mut frame = vec![0u8; Ethernet::HEADER_LEN + 20 + Udp::HEADER_LEN + tl + ICRC_LEN];
    let (eth, rest) = frame.split_at_mut(Ethernet::HEADER_LEN);
    let (ip, rest) = rest.split_at_mut(20);
    let (udp, rest) = rest.split_at_mut(Udp::HEADER_LEN);
    let (ib, icrc) = rest.split_at_mut(tl);
    Ethernet {
        destination: [0x52, 0x54, 0x00, 0x99, 0x00, 0x01],
        source: [0x52, 0x54, 0x00, 0x99, 0x00, 0x02],
        ether_type: ether_type::IPV4,
    }
    .emit(eth)?;
    Ipv4 {
        dscp: 0,
        ecn: 0,
        total_len: 0, // computed by emit
        identification: 1,
        dont_fragment: true,
        more_fragments: false,
        fragment_offset: 0,
        ttl: 64,
        protocol: PROTO_UDP,
        header_checksum: 0, // computed by emit
        source: Ipv4Addr::new(10, 99, 0, 2),
        destination: Ipv4Addr::new(10, 99, 0, 1),
        header_len: 20,
    }
    .emit(Udp::HEADER_LEN + tl + ICRC_LEN, ip)?;
    Udp {
        source_port: 49152,
        destination_port: ROCEV2_PORT,
        length: 0,   // computed by emit
        checksum: 0, // RoCEv2 senders leave it zero
    }
    .emit(tl + ICRC_LEN, udp)?;
    t.emit(ib)?;
    // The ICRC covers IP, UDP and the transport with the variant fields masked.
    icrc.copy_from_slice(&rocev2_icrc(ip, udp, ib).to_le_bytes());

    // Read it back.
    let d = stack::dissect(LinkType::ETHERNET, &frame, &stack::Config::default());
    assert!(d.stop.is_none(), "{:?}", d.stop);
    assert_eq!(d.icrc, Some(IcrcStatus::Valid));
    assert_eq!(d.rpcrdma().map(|h| h.xid), Some(Xid(0x1234_5678)));
    assert_eq!(d.nfs().and_then(|n| n.procedure), Some("NULL"));
    println!("{} bytes:", frame.len());
    for line in frame.chunks(16) {
        let hex: Vec<String> = line.iter().map(|b| format!("{b:02x}")).collect();
        println!("  {}", hex.join(" "));
    }
    println!(
        "dissected: {} | {} xid {} | NFS {} | ICRC valid",
        d.bth().map_or("?", |b| b.opcode.name()),
        d.rpcrdma().and_then(|h| h.proc.name()).unwrap_or("?"),
        Xid(0x1234_5678),
        d.nfs().and_then(|n| n.procedure).unwrap_or("?"),
    );

    if let Some(path) = std::env::args().nth(1) {
        // A classic pcap file: microsecond timestamps, link type Ethernet.
        let mut out = Vec::new();
        for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65_535, 1] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        let len = frame.len() as u32;
        for v in [1_700_000_000u32, 0, len, len] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&frame);
        std::fs::write(&path, out)?;
        println!("wrote {path}");
    }
    Ok(())
}
