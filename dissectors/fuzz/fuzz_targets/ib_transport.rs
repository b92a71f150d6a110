//! BTH + extension headers + payload/pad on arbitrary bytes, and the ICRC
//! over the same bytes: never panic; parse→emit→parse is the identity; the
//! one-buffer ICRC check agrees with the three-slice one.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rdma_dissectors::ib::{icrc, parse_transport};

fuzz_target!(|data: &[u8]| {
    if let Ok(t) = parse_transport(data) {
        assert!(t.payload.len() + t.pad.len() <= data.len());
        let mut buf = vec![0u8; t.wire_len()];
        assert_eq!(t.emit(&mut buf), Ok(buf.len()));
        assert_eq!(parse_transport(&buf), Ok(t));
        let _ = (t.bth.opcode.name(), t.aeth.map(|a| a.kind()));
    }
    // Split the input as IPv4 header | UDP header | IBA packet.
    if data.len() >= 28 {
        let (ip, rest) = data.split_at(20);
        let (udp, ib) = rest.split_at(8);
        let three = icrc::check_rocev2(ip, udp, ib, true);
        assert_eq!(icrc::check_rocev2_packet(data, 20, true), three);
    }
    // And as IPv6 header | UDP header | IBA packet.
    if data.len() >= 48 {
        let (ip, rest) = data.split_at(40);
        let (udp, ib) = rest.split_at(8);
        let three = icrc::check_rocev2(ip, udp, ib, true);
        assert_eq!(icrc::check_rocev2_packet(data, 40, true), three);
    }
    let _ = icrc::check_rocev1(data, true);
});
