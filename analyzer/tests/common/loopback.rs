//! For the tests where the real binary captures the loopback interface
//! (`live -i lo`): a bundled capture's frames sent out of `lo` with
//! libpcap's `pcap_inject`, and waiting for the binary to say it listens.
//!
//! Two captures of `lo` at once would each see the other's frames: the
//! tests that use this run one at a time (`.config/nextest.toml`, test
//! group `loopback`).
#![allow(dead_code)]

use std::path::Path;
use std::thread::sleep;
use std::time::{Duration, Instant};

use rdma_analyzer::sources::pcap::PcapReader;

/// Sends every frame of `pcap` out of `lo`; returns how many.
pub fn inject(pcap: &Path) -> u64 {
    let mut out = pcap::Capture::from_device("lo")
        .and_then(|c| c.open())
        .expect("opening lo for injection");
    let mut r = PcapReader::open(pcap).expect("capture");
    let mut n = 0;
    while let Some(p) = r.next_packet().expect("frame") {
        out.sendpacket(p.data).expect("pcap_inject on lo");
        n += 1;
        // soft-RoCE bursts are what the lab recorded; the loopback queue
        // is shorter than a NIC's, so pace a little.
        if n % 64 == 0 {
            sleep(Duration::from_millis(2));
        }
    }
    n
}

/// The text of `path` once it contains `what`; fails after `limit`.
pub fn wait_for_file_text(path: &Path, what: &str, limit: Duration) -> String {
    let start = Instant::now();
    loop {
        let s = std::fs::read_to_string(path).unwrap_or_default();
        if s.contains(what) {
            return s;
        }
        assert!(
            start.elapsed() < limit,
            "{} never said {what:?}; it says:\n{s}",
            path.display()
        );
        sleep(Duration::from_millis(100));
    }
}
