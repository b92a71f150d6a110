//! RDMA-CM service IDs and the CMA header on arbitrary bytes: never panic;
//! parse→emit→parse is the identity.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rdma_dissectors::ib::{CmaHeader, ServiceId};

fuzz_target!(|data: &[u8]| {
    if let Some(b) = data.get(..8) {
        let sid = ServiceId(u64::from_be_bytes(b.try_into().unwrap_or_default()));
        if let Some((ps, port)) = sid.rdma_cm() {
            assert_eq!(ServiceId::for_rdma_cm(ps, port), sid);
        }
    }
    if let Ok((h, rest)) = CmaHeader::parse(data) {
        assert_eq!(rest.len() + 36, data.len());
        let mut buf = [0u8; 36];
        assert_eq!(h.emit(&mut buf), Ok(36));
        assert_eq!(CmaHeader::parse(&buf).map(|p| p.0), Ok(h));
    }
});
