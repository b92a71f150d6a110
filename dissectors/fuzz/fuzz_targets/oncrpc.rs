//! RFC 5531 messages: parse, emit, re-parse; AUTH_SYS and record marks too.
#![no_main]

use rdma_dissectors::oncrpc::{RecordMark, RpcMsg};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = RecordMark::parse(data);
    if let Ok((m, rest)) = RpcMsg::parse(data) {
        assert_eq!(m.header_len() + rest.len(), data.len());
        if let Some(c) = m.call() {
            let _ = c.auth_sys().map(|a| a.gids().count());
        }
        let mut buf = vec![0xa5u8; m.buffer_len()];
        // Not byte-identical: XDR padding is ignored on parse and zeroed on emit.
        m.emit(&mut buf).expect("parsed message emits");
        let (again, _) = RpcMsg::parse(&buf).expect("emitted message parses");
        assert_eq!(again, m);
    }
});
