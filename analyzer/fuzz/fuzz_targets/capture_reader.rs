//! The pcap and pcapng readers on arbitrary bytes: never panic, every
//! frame lies within the input, frame numbers count up from 1, and an error
//! names an offset inside the input. ERF records (link type 197) are
//! reached through the same bytes: a frame carried in one lies within its
//! record, and a note names a frame that was read.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rdma_analyzer::sources::pcap::{Batch, PcapReader};

fuzz_target!(|data: &[u8]| {
    let Ok(mut r) = PcapReader::new(data, "fuzz".into()) else {
        return;
    };
    let mut n = 0u64;
    let mut b = Batch::default();
    loop {
        let more = r.fill(&mut b);
        for f in &b.frames {
            n += 1;
            assert_eq!(f.number, n);
            assert!(f.len <= data.len());
            assert!(b.bytes(f).len() == f.len);
        }
        for note in &b.notes {
            assert!(note.starts_with("fuzz: "), "{note}");
        }
        match more {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                assert!(e.offset <= data.len() as u64, "{e}");
                assert!(e.frame.is_none_or(|f| f <= n + 1), "{e}");
                let _ = e.to_string();
                break;
            }
        }
    }
    assert!(r.position() <= data.len() as u64);
});
