//! MAD header and CM messages on arbitrary bytes: never panic;
//! parse→emit→parse is the identity.
#![no_main]
use libfuzzer_sys::fuzz_target;
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
    }
});
