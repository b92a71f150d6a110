//! MAD header and CM messages on arbitrary bytes: never panic;
//! parse→emit→parse is the identity; a message cut short parses, field for
//! field, as the whole one as far as it was kept.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rdma_dissectors::ib::cm::parse_cm_prefix;
use rdma_dissectors::ib::{parse_cm, Mad};

fuzz_target!(|data: &[u8]| {
    let Ok((mad, body)) = Mad::parse(data) else {
        return;
    };
    let mut hdr = [0u8; 24];
    assert_eq!(mad.emit(&mut hdr), Ok(24));
    assert_eq!(Mad::parse(&[&hdr[..], body].concat()).map(|p| p.0), Ok(mad));
    // Force the CM class so every attribute's decoder is reached.
    let cm = Mad { mgmt_class: 0x07, ..mad };
    if let Ok(msg) = parse_cm(&cm, body) {
        let mut buf = [0u8; 232];
        assert_eq!(msg.emit(&mut buf), Ok(232));
        assert_eq!(parse_cm(&cm, &buf), Ok(msg));
        let _ = (msg.name(), msg.private_data().len());
        // The same message cut: its private data is a prefix of the whole's.
        let keep = usize::from(body.first().copied().unwrap_or(0)) % 233;
        if let Ok(cut) = parse_cm_prefix(&cm, &body[..keep.min(body.len())]) {
            assert!(msg.private_data().starts_with(cut.private_data()));
            assert_eq!(cut.name(), msg.name());
        }
    }
    if let Ok((m, rest)) = Mad::parse_prefix(data) {
        assert_eq!(Some(m), Mad::parse(data).ok().map(|p| p.0).or(Some(m)));
        let _ = parse_cm_prefix(&Mad { mgmt_class: 0x07, ..m }, rest);
    }
});
