//! Hand-built Ethernet/IPv4/TCP frames between two lab hosts, and classic
//! pcap files of them: what the iWARP and not-decoded tests feed the
//! analyzer, so each states its stream and nothing else.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub const SYN: u8 = 0x02;
pub const PSH: u8 = 0x08;
pub const ACK: u8 = 0x10;

/// An Ethernet/IPv4/TCP frame from 10.99.0.`from` (1 or 2) port `sport`
/// to the other host's `dport`, with sequence number `seq`, the TCP
/// `flags` (ACK always set, acknowledgement number 0) and `payload`.
pub fn tcp(from: u8, (sport, dport): (u16, u16), seq: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let to = if from == 1 { 2 } else { 1 };
    let mut f = vec![
        0x52, 0x54, 0, 0x99, 0, to, 0x52, 0x54, 0, 0x99, 0, from, 0x08, 0x00,
    ];
    let total = (20 + 20 + payload.len()) as u16;
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&total.to_be_bytes());
    f.extend_from_slice(&[0, 1, 0x40, 0, 64, 6, 0, 0, 10, 99, 0, from, 10, 99, 0, to]);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0, 0, 0x50, flags | ACK, 0xff, 0xff, 0, 0, 0, 0]);
    f.extend_from_slice(payload);
    f
}

/// A classic pcap (Ethernet, microseconds) of `frames`, one a millisecond.
pub fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let mut b = Vec::new();
    for w in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, 1] {
        b.extend_from_slice(&w.to_le_bytes());
    }
    for (i, f) in frames.iter().enumerate() {
        let len = f.len() as u32;
        for w in [1_700_000_000u32, (i as u32) * 1000, len, len] {
            b.extend_from_slice(&w.to_le_bytes());
        }
        b.extend_from_slice(f);
    }
    std::fs::write(path, b).unwrap();
}

/// A pcap path in the temporary directory for test `test`'s capture
/// `name`, apart from other processes' runs.
pub fn scratch(test: &str, name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("rdma-{test}-{}-{name}.pcap", std::process::id()))
}
