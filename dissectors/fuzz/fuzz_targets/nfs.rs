//! NFSv4 COMPOUND walks, NFS reply status and I/O (file handle, offset,
//! count) decoding over arbitrary bytes,
//! with and without a DDP hint taken from an RPC-over-RDMA header at the
//! front of the input.
#![no_main]

use rdma_dissectors::nfs::{
    call_io, describe_call_with, reply_io, reply_status, Compound, CompoundReply, Ddp,
    NFS4_FHSIZE, NFS_PROGRAM,
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
        // File handle and byte range of calls, count/eof/committed of replies.
        let io = call_io(vers, proc, args, ddp);
        assert!(io.fh.map_or(0, <[u8]>::len) <= NFS4_FHSIZE as usize);
        let _ = reply_io(vers, proc, args, ddp);
    }
});
