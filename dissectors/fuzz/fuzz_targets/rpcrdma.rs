//! RFC 8166 transport header: parse, then emit and re-parse to the same value.
#![no_main]

use rdma_dissectors::rpcrdma::RpcRdmaHeader;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = RpcRdmaHeader::parse_fixed(data);
    if let Ok((h, rest)) = RpcRdmaHeader::parse(data) {
        assert_eq!(h.header_len() + rest.len(), data.len());
        if let Some(c) = h.chunks() {
            assert_eq!(c.read_list().count(), c.read_count());
            assert_eq!(c.write_list().count(), c.write_count());
        }
        let mut buf = vec![0xa5u8; h.header_len()];
        let n = h.emit(&mut buf).expect("parsed header emits");
        assert_eq!(&buf[..n], &data[..n]);
        let (again, _) = RpcRdmaHeader::parse(&buf).expect("emitted header parses");
        assert_eq!(again, h);
    }
});
