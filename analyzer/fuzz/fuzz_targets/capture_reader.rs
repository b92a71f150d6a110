//! The pcap and pcapng readers on arbitrary bytes: never panic, every
//! frame lies within the input, frame numbers count up from 1, and an error
//! names an offset inside the input.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rdma_analyzer::sources::pcap::PcapReader;

fuzz_target!(|data: &[u8]| {
    let Ok(mut r) = PcapReader::new(data, "fuzz".into()) else {
        return;
    };
    let mut n = 0u64;
    loop {
        match r.next_packet() {
            Ok(Some(p)) => {
                n += 1;
                assert_eq!(p.number, n);
                assert!(p.data.len() <= data.len());
            }
            Ok(None) => break,
            Err(e) => {
                assert!(e.offset <= data.len() as u64, "{e}");
                assert!(e.frame.is_none_or(|f| f == n + 1), "{e}");
                break;
            }
        }
    }
    assert!(r.position() <= data.len() as u64);
});
