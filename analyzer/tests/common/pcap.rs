//! Classic pcap files read with the `pcap-parser` crate, for tests that
//! feed the engine directly rather than through the analyzer's own readers.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use pcap_parser::pcap::{parse_pcap_frame, parse_pcap_frame_be, parse_pcap_header};
use rdma_analyzer::engine::Event;
use rdma_dissectors::link::LinkType;

/// One captured frame, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// 1-based frame number.
    pub number: u64,
    /// Capture time, ns since the epoch.
    pub ts_ns: u64,
    /// Link type of the capture.
    pub link: LinkType,
    /// Length on the wire.
    pub orig_len: u32,
    /// Captured bytes.
    pub data: Vec<u8>,
}

impl Frame {
    /// The frame as the engine takes it.
    pub fn event(&self) -> Event<'_> {
        Event::Frame(rdma_dissectors::frame::Frame {
            number: self.number,
            ts_ns: self.ts_ns,
            link: self.link,
            orig_len: self.orig_len,
            data: &self.data,
            icrc: None,
        })
    }
}

/// `captures/NAME` in the repository.
pub fn capture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../captures")
        .join(name)
}

/// The bytes of `captures/NAME`.
pub fn capture(name: &str) -> Vec<u8> {
    let path = capture_path(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The names of every classic pcap under `captures/`, sorted.
pub fn bundled_pcaps() -> Vec<String> {
    let dir = capture_path("");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".pcap"))
        .collect();
    names.sort();
    names
}

/// The frames of a classic pcap file in `bytes`, and whether the file was
/// cut short (a record header or its data incomplete): reading stops there.
///
/// # Panics
/// When `bytes` is not a classic pcap file.
pub fn frames(bytes: &[u8]) -> (Vec<Frame>, bool) {
    let (mut rest, header) = parse_pcap_header(bytes).expect("a classic pcap header");
    let link = LinkType(header.network.0 as u32);
    let nanos = header.is_nanosecond_precision();
    let mut out = Vec::new();
    while !rest.is_empty() {
        let parsed = if header.is_bigendian() {
            parse_pcap_frame_be(rest)
        } else {
            parse_pcap_frame(rest)
        };
        let Ok((next, block)) = parsed else {
            return (out, true);
        };
        let frac = if nanos {
            u64::from(block.ts_usec)
        } else {
            u64::from(block.ts_usec) * 1000
        };
        out.push(Frame {
            number: out.len() as u64 + 1,
            ts_ns: u64::from(block.ts_sec) * 1_000_000_000 + frac,
            link,
            orig_len: block.origlen,
            data: block.data.to_vec(),
        });
        rest = next;
    }
    (out, false)
}

/// The frames of `captures/NAME`, which must be whole.
pub fn capture_frames(name: &str) -> Vec<Frame> {
    let (frames, cut) = frames(&capture(name));
    assert!(!cut, "{name} ends in the middle of a record");
    frames
}
