//! ERF records on arbitrary bytes: never panic; a frame found lies inside
//! the record and its link type is one the stack dissects.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rdma_dissectors::erf;

fuzz_target!(|data: &[u8]| {
    if let Ok(f) = erf::parse(data) {
        assert!(f.data.start <= f.data.end && f.data.end <= data.len());
        assert!(f.data.start >= erf::HEADER_LEN);
        let _ = rdma_dissectors::stack::dissect(
            f.link,
            &data[f.data.clone()],
            &rdma_dissectors::stack::Config::default(),
        );
    }
});
