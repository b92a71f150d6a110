//! Inputs as the command line opens them, on arbitrary bytes: compression
//! recognised by magic (gzip, zstd, or none), then the capture reader over
//! the decompressed stream. Never panics; a decompressor that gives up is
//! an error that names its format and a compressed offset within the input.
#![no_main]
use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use rdma_analyzer::sources::pcap::input::Input;
use rdma_analyzer::sources::pcap::{Batch, ReadErrorKind};

/// Decompressed bytes read before giving up on an input (a small input
/// may inflate a lot; this bounds one run, not a property checked).
const MAX_OUT: u64 = 64 << 20;

fuzz_target!(|data: &[u8]| {
    let Ok(input) = Input::from_stream(
        "fuzz".into(),
        Box::new(Cursor::new(data.to_vec())),
        Some(data.len() as u64),
    ) else {
        return;
    };
    let compressed = input.compression.name().is_some();
    let Ok(mut r) = input.reader() else {
        return;
    };
    let mut b = Batch::default();
    let mut n = 0u64;
    loop {
        let more = r.fill(&mut b);
        for f in &b.frames {
            n += 1;
            assert_eq!(f.number, n);
        }
        match more {
            Ok(true) if r.position() < MAX_OUT => {}
            Ok(_) => break,
            Err(e) => {
                if let ReadErrorKind::Decompress(d) = &e.kind {
                    assert!(compressed);
                    assert!(d.compressed_offset <= data.len() as u64, "{e}");
                }
                if !compressed {
                    assert!(e.offset <= data.len() as u64, "{e}");
                }
                let _ = e.to_string();
                break;
            }
        }
    }
});
