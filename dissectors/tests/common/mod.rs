//! Frames from the real captures for tests and benchmarks.
// Each test crate uses a different subset of these helpers.
#![allow(dead_code)]

use std::path::Path;

use pcap_parser::{PcapBlockOwned, PcapError};
use rdma_dissectors::link::LinkType;
use rdma_dissectors::stack::{self, Config};

/// Every frame of a classic pcap under `captures/`.
pub fn frames(name: &str) -> Vec<Vec<u8>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../captures")
        .join(name);
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut reader = pcap_parser::create_reader(1 << 20, file).unwrap();
    let mut out = Vec::new();
    loop {
        match reader.next() {
            Ok((off, block)) => {
                if let PcapBlockOwned::Legacy(b) = block {
                    out.push(b.data.to_vec());
                }
                reader.consume(off);
            }
            Err(PcapError::Eof) => break,
            Err(PcapError::Incomplete(_)) => reader.refill().unwrap(),
            Err(e) => panic!("{e:?}"),
        }
    }
    out
}

/// The first frame of `name` for which `pred` holds on its dissection.
pub fn find(name: &str, pred: impl Fn(&stack::Dissection<'_>) -> bool) -> Vec<u8> {
    let config = Config::default();
    frames(name)
        .into_iter()
        .find(|f| pred(&stack::dissect(LinkType::ETHERNET, f, &config)))
        .expect("no such frame in the capture")
}

/// An RC SEND Only carrying an RPC-over-RDMA call (RDMA_MSG + RPC call + NFS).
pub fn rpc_call_send() -> Vec<u8> {
    find("v3-ddp.pcap", |d| {
        d.nfs().is_some() && d.bth().is_some_and(|b| b.opcode.0 == 0x04)
    })
}

/// An RC RDMA WRITE Middle (payload only).
pub fn write_middle() -> Vec<u8> {
    find("v3-ddp.pcap", |d| {
        d.bth().is_some_and(|b| b.opcode.0 == 0x07)
    })
}

/// An RC SEND Only carrying an RPC-over-RDMA reply whose header has a write
/// list (the server's answer to a READ whose data went by RDMA Write).
pub fn reply_with_write_list() -> Vec<u8> {
    find("v3-ddp.pcap", |d| {
        d.bth().is_some_and(|b| b.opcode.0 == 0x04)
            && d.rpcrdma()
                .and_then(|h| h.chunks())
                .is_some_and(|c| c.write_count() > 0)
            && d.rpc()
                .is_some_and(|m| matches!(m.body, rdma_dissectors::oncrpc::MsgBody::Reply(_)))
    })
}

/// A CM REQ MAD (RoCEv2, QP1) whose private data carries the RFC 8797
/// RPC-over-RDMA CM private message.
pub fn cm_req() -> Vec<u8> {
    find("v3-ddp.pcap", |d| {
        matches!(d.cm(), Some(rdma_dissectors::ib::cm::CmMessage::Req(_)))
            && d.rpcrdma_cm_private().is_some()
    })
}
