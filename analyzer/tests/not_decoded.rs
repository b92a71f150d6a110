//! RDMA traffic the analyzer recognises but cannot decode (iWARP on TCP
//! 20049, MPA setup frames, RoCEv2 on another UDP port) is said in the
//! report's text and JSON and in the exit status, never passed off as an
//! empty, clean capture.

#[path = "common/tcp_pcap.rs"]
mod tcp_pcap;

use std::path::{Path, PathBuf};
use std::process::Command;

use rdma_dissectors::ib::icrc::rocev2_icrc;
use rdma_dissectors::iwarp::mpa;
use serde_json::Value;
use tcp_pcap::{write_pcap, PSH};

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

/// Frame 30 of captures/v3-inline.pcap: an RC Acknowledge to UDP 4791.
const ROCE_ACK: [u8; 62] = [
    0x52, 0x54, 0x00, 0x99, 0x00, 0x02, 0x52, 0x54, 0x00, 0x99, 0x00, 0x01, 0x08, 0x00, 0x45, 0x00,
    0x00, 0x30, 0x23, 0xe8, 0x40, 0x00, 0x40, 0x11, 0x02, 0x0d, 0x0a, 0x63, 0x00, 0x01, 0x0a, 0x63,
    0x00, 0x02, 0xd9, 0xf2, 0x12, 0xb7, 0x00, 0x1c, 0x00, 0x00, 0x11, 0x00, 0xff, 0xff, 0x00, 0x00,
    0x00, 0x11, 0x00, 0x43, 0x0a, 0xc5, 0x1f, 0x00, 0x00, 0x01, 0xe0, 0xc4, 0x06, 0x51,
];

/// The same acknowledgement sent to UDP `port`, its ICRC made anew.
fn roce_on_port(port: u16) -> Vec<u8> {
    let mut f = ROCE_ACK.to_vec();
    f[36..38].copy_from_slice(&port.to_be_bytes());
    let icrc = rocev2_icrc(&f[14..34], &f[34..42], &f[42..58]);
    f[58..62].copy_from_slice(&icrc.to_le_bytes());
    f
}

/// An Ethernet/IPv4/TCP frame from 10.99.0.1 port `sport` to 10.99.0.2
/// port `dport` carrying `payload` (sequence number 1, PSH and ACK).
fn tcp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    tcp_pcap::tcp(1, (sport, dport), 1, PSH, payload)
}

fn scratch(name: &str) -> PathBuf {
    tcp_pcap::scratch("not-decoded", name)
}

fn report(path: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(BIN)
        .arg("report")
        .args(extra)
        .arg(path)
        .output()
        .unwrap();
    (out.status.code(), String::from_utf8(out.stdout).unwrap())
}

/// iWARP the engine decodes (captures/iwarp/) is not in this count; what
/// stays is what it recognises and cannot read: an MPA frame it cannot
/// parse (here revision 3), and data on port 20049 in which no MPA frame or
/// FPDU is found.
#[test]
fn iwarp_and_rocev2_elsewhere_are_reported_not_decoded() {
    let mut request = mpa::KEY_REQUEST.to_vec();
    request.extend_from_slice(&[0x40, 3, 0, 0]);
    let frames = vec![
        tcp(40000, 20049, &[]),
        tcp(40000, 20049, &request),
        tcp(20049, 40000, &[0, 4, 1, 2, 3, 4]),
        roce_on_port(4792),
        roce_on_port(4792),
        tcp(40000, 22, b"ssh"),
    ];
    let path = scratch("mixed");
    write_pcap(&path, &frames);

    let (code, text) = report(&path, &[]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("NOT DECODED: 1 frames: iWARP MPA Request/Reply frames"),
        "{text}"
    );
    assert!(
        text.contains("NOT DECODED: 1 frames: TCP frames to or from port 20049"),
        "{text}"
    );
    assert!(
        text.contains("NOT DECODED: 2 frames: RoCEv2 packets (valid ICRC) on UDP port 4792"),
        "{text}"
    );
    assert!(text.contains("--rocev2-port 4792"), "{text}");

    let (code, json) = report(&path, &["--json"]);
    assert_eq!(code, Some(2));
    let doc: Value = serde_json::from_str(&json).unwrap();
    let rows: Vec<(String, u64)> = doc["not_decoded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap().to_string(),
                r["frames"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("iwarp_mpa_setup".to_string(), 1),
            ("iwarp_tcp_20049".to_string(), 1),
            ("rocev2_other_port".to_string(), 2)
        ]
    );

    // Told the port, the analyzer reads those packets and no longer lists them.
    let (_, json) = report(&path, &["--json", "--rocev2-port", "4792"]);
    let doc: Value = serde_json::from_str(&json).unwrap();
    // The two RoCEv2 packets, and the three TCP frames of the flow to 20049
    // (followed as iWARP, whatever could be read of it).
    assert_eq!(doc["totals"]["rdma_frames"].as_u64(), Some(5));
    assert!(!json.contains("rocev2_other_port"), "{json}");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn other_udp_and_tcp_are_not_taken_for_rdma() {
    // A DNS-shaped datagram and a broken RoCEv2 ICRC on another port, and TCP elsewhere.
    let mut dns = roce_on_port(53);
    dns[60] ^= 0xff;
    let frames = vec![dns, tcp(40000, 2049, b"nfs over tcp"), ROCE_ACK.to_vec()];
    let path = scratch("clean");
    write_pcap(&path, &frames);
    let (code, text) = report(&path, &[]);
    assert_eq!(code, Some(0), "{text}");
    assert!(!text.contains("NOT DECODED"), "{text}");
    let (_, json) = report(&path, &["--json"]);
    assert!(!json.contains("not_decoded"), "{json}");
    std::fs::remove_file(&path).unwrap();
}
