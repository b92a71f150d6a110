//! Link, IP and UDP parsers on arbitrary bytes: never panic; emit round-trips.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rdma_dissectors::{ip::Ip, link, udp::Udp};

fuzz_target!(|data: &[u8]| {
    if let Ok((eth, _)) = link::Ethernet::parse(data) {
        let mut buf = [0u8; 14];
        assert_eq!(eth.emit(&mut buf), Ok(14));
        assert_eq!(link::Ethernet::parse(&buf).map(|p| p.0), Ok(eth));
    }
    if let Ok((v, _)) = link::Vlan::parse(data) {
        let mut buf = [0u8; 4];
        assert_eq!(v.emit(&mut buf), Ok(4));
        assert_eq!(link::Vlan::parse(&buf).map(|p| p.0), Ok(v));
    }
    if let Ok((h, _)) = link::LinuxSll::parse(data) {
        let mut buf = [0u8; 16];
        assert_eq!(h.emit(&mut buf), Ok(16));
        assert_eq!(link::LinuxSll::parse(&buf).map(|p| p.0), Ok(h));
    }
    if let Ok((h, _)) = link::LinuxSll2::parse(data) {
        let mut buf = [0u8; 20];
        assert_eq!(h.emit(&mut buf), Ok(20));
        assert_eq!(link::LinuxSll2::parse(&buf).map(|p| p.0), Ok(h));
    }
    if let Ok((ip, payload)) = Ip::parse(data) {
        assert!(payload.len() <= data.len());
        let _ = (ip.source(), ip.destination(), ip.protocol());
        assert!(ip.ecn() <= rdma_dissectors::ip::ECN_CE);
    }
    let _ = Udp::parse(data);
});
