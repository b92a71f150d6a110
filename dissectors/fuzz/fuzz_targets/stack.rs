//! The whole stack on arbitrary frames of every link type: never panics,
//! and every error it reports points inside the frame. With iWARP per
//! segment on (any TCP port, each CRC assumption), every FPDU is walked and
//! its offsets stay inside the frame too.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rdma_dissectors::link::LinkType;
use rdma_dissectors::iwarp::frame::{IwarpLayer, MpaCrc};
use rdma_dissectors::stack::{dissect, Config, RpcRdmaDecode};

fuzz_target!(|data: &[u8]| {
    let always = Config::default().with_rpcrdma(RpcRdmaDecode::Always);
    // The fuzzer's TCP ports rarely hit 20049: take the frame's own
    // destination port (raw IPv4 with a 20-byte header) as the iWARP port.
    let port = data.get(22..24).map_or(0, |p| u16::from_be_bytes([p[0], p[1]]));
    let iwarp = |crc| Config::default().with_iwarp_frames(true).with_iwarp_port(port).with_mpa_crc(crc);
    let configs = [Config::default(), always, iwarp(MpaCrc::Unknown), iwarp(MpaCrc::On), iwarp(MpaCrc::Off)];
    for link in [LinkType::ETHERNET, LinkType::RAW, LinkType::LINUX_SLL, LinkType::LINUX_SLL2, LinkType::INFINIBAND] {
        for config in &configs {
            let d = dissect(link, data, config);
            if let Some(e) = d.stop {
                assert!(e.offset() <= data.len(), "{e} past the end of a {}-byte frame", data.len());
            }
            assert!(d.payload().len() <= data.len());
            if let Some(IwarpLayer::Fpdus(f)) = d.iwarp {
                for item in f.iter() {
                    match item {
                        Ok(fpdu) => assert!(fpdu.offset < data.len()),
                        Err(e) => assert!(e.offset() <= data.len(), "{e} past the end"),
                    }
                }
            }
        }
    }
});
