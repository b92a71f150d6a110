//! The whole stack on arbitrary frames of every link type: never panics,
//! and every error it reports points inside the frame.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rdma_dissectors::link::LinkType;
use rdma_dissectors::stack::{dissect, Config, RpcRdmaDecode};

fuzz_target!(|data: &[u8]| {
    let always = Config::default().with_rpcrdma(RpcRdmaDecode::Always);
    for link in [LinkType::ETHERNET, LinkType::RAW, LinkType::LINUX_SLL, LinkType::LINUX_SLL2, LinkType::INFINIBAND] {
        for config in [Config::default(), always] {
            let d = dissect(link, data, &config);
            if let Some(e) = d.stop {
                assert!(e.offset() <= data.len(), "{e} past the end of a {}-byte frame", data.len());
            }
            assert!(d.payload().len() <= data.len());
        }
    }
});
