//! DDP and RDMAP over any ULPDU, with the RPC-over-RDMA header of a Send:
//! no panic, and a parsed header never claims more octets than it had.
#![no_main]

use rdma_dissectors::iwarp::{ddp::DdpHeader, rdmap::Segment};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok((h, payload)) = DdpHeader::parse(data) {
        assert_eq!(h.len() + payload.len(), data.len());
    }
    if let Ok(seg) = Segment::parse(data) {
        let _ = seg.opcode.name();
        let _ = seg.rpcrdma();
    }
});
