//! `/proc/self/mountstats` text, arbitrary bytes: the parser never panics,
//! an error names a line the text has, and every RDMA transport it names
//! has as many values as its layout has names.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rdma_analyzer::engine::mountstats::{parse, Transport};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse(text) {
        Ok(mounts) => {
            for m in &mounts {
                for t in &m.transports {
                    if let Transport::Rdma { layout, values } = t {
                        assert_eq!(layout.names().count(), values.len());
                    }
                }
                let _ = (m.is_rdma(), m.opt("proto"));
            }
        }
        Err(e) => {
            assert!(e.line >= 1 && e.line <= text.lines().count().max(1), "{e}");
            let _ = e.to_string();
        }
    }
});
