//! NFSv4 COMPOUND walks and NFS reply status decoding over arbitrary bytes,
//! with and without a DDP hint taken from an RPC-over-RDMA header at the
//! front of the input.
#![no_main]

use rdma_dissectors::nfs::{
    describe_call_with, reply_status, Compound, CompoundReply, Ddp, NFS_PROGRAM,
};
use rdma_dissectors::rpcrdma::RpcRdmaHeader;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    // Optionally: an RPC-over-RDMA header first, whose chunks are the hint.
    let (ddp, args) = match RpcRdmaHeader::parse(data) {
        Ok((h, rest)) => match h.chunks() {
            Some(c) => (Ddp::new(c, h.header_len()), rest),
            None => (Ddp::NONE, data),
        },
        Err(_) => (Ddp::NONE, data),
    };
    let s = describe_call_with(NFS_PROGRAM, 4, 1, args, ddp);
    assert!(s.ops().len() <= s.ops.len());
    if let Ok(mut c) = Compound::parse_with(args, ddp) {
        for _ in c.ops.by_ref() {}
        let _ = (c.ops.is_complete(), c.ops.stop());
    }
    if let Ok(mut c) = Compound::parse_callback(args) {
        for _ in c.ops.by_ref() {}
    }
    if let Ok(mut r) = CompoundReply::parse_with(args, ddp) {
        for _ in r.ops.by_ref() {}
        let _ = r.ops.is_complete();
    }
    // Every version and procedure the status decoder knows, and some it does not.
    for (vers, proc) in [(3, 0), (3, 1), (3, 21), (3, 22), (4, 1), (4, 0), (2, 1)] {
        if let Ok(Some(st)) = reply_status(vers, proc, args, ddp) {
            let _ = (st.name(), st.is_ok());
        }
    }
});
