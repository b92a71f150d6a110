//! LRH, GRH and the native IB CRCs on arbitrary bytes: never panic;
//! parse→emit→parse is the identity.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rdma_dissectors::ib::{icrc, Grh, Lrh};

fuzz_target!(|data: &[u8]| {
    if let Ok((lrh, rest)) = Lrh::parse(data) {
        let mut buf = [0u8; 8];
        assert_eq!(lrh.emit(&mut buf), Ok(8));
        assert_eq!(Lrh::parse(&buf).map(|p| p.0), Ok(lrh));
        if let Ok((grh, _)) = Grh::parse(rest) {
            let mut buf = [0u8; 40];
            assert_eq!(grh.emit(&mut buf), Ok(40));
            assert_eq!(Grh::parse(&buf).map(|p| p.0), Ok(grh));
        }
    }
    let _ = icrc::check_ib(data, true);
    let _ = icrc::vcrc(data);
});
