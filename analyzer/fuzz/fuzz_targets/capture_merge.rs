//! Several captures merged by time, on arbitrary bytes cut into up to four
//! inputs: never panics; merged frames are numbered 1, 2, ... and carry
//! exactly the frames the inputs give alone; when each input is in time
//! order, so is the merge; every damaged input is named in the end's error.
#![no_main]
use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use rdma_analyzer::sources::pcap::input::Stream;
use rdma_analyzer::sources::pcap::merge::Merge;
use rdma_analyzer::sources::pcap::{Batch, BatchReader, PcapReader, ReadErrorKind};

/// The frames (time, bytes) one input gives alone, and whether it ended damaged.
fn alone(bytes: &[u8]) -> Option<(Vec<(u64, Vec<u8>)>, bool)> {
    let mut r = PcapReader::new(bytes, "alone".into()).ok()?;
    let mut b = Batch::default();
    let mut out = Vec::new();
    loop {
        let more = r.fill(&mut b);
        out.extend(b.frames.iter().map(|f| (f.ts_ns, b.bytes(f).to_vec())));
        match more {
            Ok(true) => {}
            Ok(false) => return Some((out, false)),
            Err(_) => return Some((out, true)),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&k, rest)) = data.split_first() else {
        return;
    };
    let k = usize::from(k % 4) + 1;
    let size = rest.len().div_ceil(k).max(1);
    let parts: Vec<&[u8]> = rest.chunks(size).collect();
    let mut readers = Vec::new();
    let mut expected = Vec::new();
    let mut damaged = 0;
    for (i, p) in parts.iter().enumerate() {
        let stream: Stream = Box::new(Cursor::new(p.to_vec()));
        if let Ok(r) = PcapReader::new(stream, format!("in{i}").into()) {
            readers.push(r);
            let (frames, bad) = alone(p).unwrap_or_default();
            damaged += usize::from(bad);
            expected.push(frames);
        }
    }
    let inputs = readers.len();
    let mut m = Merge::new(readers, Vec::new());
    let mut b = Batch::default();
    let mut got = Vec::new();
    let mut n = 0u64;
    loop {
        let more = m.fill(&mut b);
        for f in &b.frames {
            n += 1;
            assert_eq!(f.number, n);
            got.push((f.ts_ns, b.bytes(f).to_vec()));
        }
        match more {
            Ok(true) => {}
            Ok(false) => {
                assert_eq!(damaged, 0);
                break;
            }
            Err(e) => {
                let ReadErrorKind::Inputs { inputs: i, damaged: d } = &e.kind else {
                    panic!("{e}");
                };
                assert_eq!((*i, d.len()), (inputs, damaged), "{e}");
                break;
            }
        }
    }
    let in_order = |v: &[(u64, Vec<u8>)]| v.windows(2).all(|w| w[0].0 <= w[1].0);
    if expected.iter().all(|e| in_order(e)) {
        assert!(in_order(&got));
    }
    // Every input's frames, and nothing else.
    let total: usize = expected.iter().map(Vec::len).sum();
    assert_eq!(got.len(), total);
    let mut sorted_got = got.clone();
    sorted_got.sort();
    let mut all: Vec<_> = expected.into_iter().flatten().collect();
    all.sort();
    assert_eq!(sorted_got, all);
});
