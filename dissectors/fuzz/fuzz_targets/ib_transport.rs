//! BTH + extension headers + payload/pad on arbitrary bytes, and the ICRC
//! over the same bytes: never panic; parse→emit→parse is the identity; the
//! one-buffer ICRC check agrees with the three-slice one. A packet cut at
//! any length parses as its whole self did, as far as it goes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rdma_dissectors::ib::{icrc, parse_transport, parse_transport_cut};

fuzz_target!(|data: &[u8]| {
    if let Ok(t) = parse_transport(data) {
        assert!(t.payload.len() + t.pad.len() <= data.len());
        let mut buf = vec![0u8; t.wire_len()];
        assert_eq!(t.emit(&mut buf), Ok(buf.len()));
        assert_eq!(parse_transport(&buf), Ok(t));
        let _ = (t.bth.opcode.name(), t.aeth.map(|a| a.kind()));
        // Cut at every length the fuzzer's first byte picks: the headers,
        // when kept, are the whole packet's; the payload a prefix of its
        // payload; its length on the wire the whole payload's.
        let keep = usize::from(data.first().copied().unwrap_or(0)) % (data.len() + 1);
        if let Ok(c) = parse_transport_cut(&data[..keep], data.len()) {
            assert_eq!((c.bth, c.reth, c.aeth, c.deth), (t.bth, t.reth, t.aeth, t.deth));
            assert!(t.payload.starts_with(c.payload));
            assert_eq!(c.payload_len_on_wire(), t.payload.len());
            assert!(c.is_cut());
        }
    }
    let _ = parse_transport_cut(data, usize::from(data.first().copied().unwrap_or(0)) * 16);
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
