//! MPA: setup frames, FPDUs with and without CRC, and marker removal at
//! every stream offset; none may panic, and what they report must agree
//! with the input's size.
#![no_main]

use rdma_dissectors::iwarp::mpa::{strip_markers, Fpdu, RequestReply};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok((f, rest)) = RequestReply::parse(data) {
        assert_eq!(data.len(), 20 + usize::from(f.pd_length) + rest.len());
        let _ = f.rpcrdma();
    }
    for crc in [false, true] {
        if let Ok((f, rest)) = Fpdu::parse(data, crc) {
            assert_eq!(f.len() + rest.len(), data.len());
        }
    }
    let offset = data.first().map_or(0, |&b| u64::from(b) * 3);
    let mut out = vec![0u8; data.len()];
    let s = strip_markers(offset, data, &mut out).expect("output as long as input");
    // Up to three octets of a marker the input starts inside are skipped uncounted.
    assert!(s.written + 4 * s.markers + 3 >= data.len() && s.written <= data.len());
});
