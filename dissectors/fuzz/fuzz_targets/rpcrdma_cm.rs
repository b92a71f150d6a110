//! RFC 8797 CM private data: parse at offset 0 and search at any offset;
//! whatever decodes must emit back to the same eight octets.
#![no_main]

use rdma_dissectors::rpcrdma_cm::{find, negotiate, CmPrivateData};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok((m, _)) = CmPrivateData::parse(data) {
        let mut buf = [0u8; 8];
        m.emit(&mut buf).expect("decoded message emits");
        assert_eq!(&buf[..], &data[..8]);
    }
    if let Some((off, m)) = find(data) {
        let mut buf = [0u8; 8];
        m.emit(&mut buf).expect("found message emits");
        assert_eq!(&buf[..], &data[off..off + 8]);
        let n = negotiate(m.v1(), m.v1());
        assert!(n.inline_send >= 1024 && n.inline_recv >= 1024);
    }
});
