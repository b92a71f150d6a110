//! iWARP's own findings, each from a hand-built stream whose expected
//! outcome is stated here: an MPA Reject, an FPDU whose CRC32c does not
//! match, a Send in a tagged DDP segment, and a Terminate with its layer,
//! type and code named (RFC 5044, 5041, 5040). The real siw captures have
//! none of them (`iwarp_captures.rs` checks they stay clean).

#[path = "common/analyze.rs"]
mod analyze;
#[path = "common/tcp_pcap.rs"]
mod tcp_pcap;

use std::path::PathBuf;

use rdma_analyzer::engine::{CmState, Config, Finding, Kind};
use rdma_dissectors::iwarp::{crc32c, mpa};
use tcp_pcap::{tcp, write_pcap, SYN};

/// An MPA Request or Reply, revision 1, CRC asked for, no private data.
fn mpa_frame(key: &[u8; 16], flags: u8) -> Vec<u8> {
    let mut v = key.to_vec();
    v.extend_from_slice(&[flags, 1, 0, 0]);
    v
}

/// An FPDU around `ulpdu` with its CRC32c (wrong on purpose with `bad`).
fn fpdu(ulpdu: &[u8], bad: bool) -> Vec<u8> {
    let mut v = (ulpdu.len() as u16).to_be_bytes().to_vec();
    v.extend_from_slice(ulpdu);
    v.extend(std::iter::repeat_n(
        0,
        usize::from(mpa::pad_len(ulpdu.len() as u16)),
    ));
    let crc = crc32c::checksum(&v) ^ u32::from(bad);
    v.extend_from_slice(&crc.to_le_bytes());
    v
}

/// An untagged DDP segment (last, queue `qn`, MSN 1, MO 0) with RDMAP
/// opcode `op`, then `body`.
fn untagged(op: u8, qn: u32, body: &[u8]) -> Vec<u8> {
    let mut v = vec![0x41, 0x40 | op, 0, 0, 0, 0];
    v.extend_from_slice(&qn.to_be_bytes());
    v.extend_from_slice(&1u32.to_be_bytes());
    v.extend_from_slice(&0u32.to_be_bytes());
    v.extend_from_slice(body);
    v
}

fn scratch(name: &str) -> PathBuf {
    tcp_pcap::scratch("iwarp", name)
}

#[test]
fn iwarp_findings_name_what_broke_and_where() {
    let (c, s) = ((40000, 20049), (20049, 40000));
    let (c2, s2) = ((40001, 20049), (20049, 40001));
    let request = mpa_frame(mpa::KEY_REQUEST, 0x40);
    let reply = mpa_frame(mpa::KEY_REPLY, 0x40);
    let send = untagged(3, 0, &[0; 28]);
    let mut tagged_send = send.clone();
    tagged_send[0] = 0xc1; // T bit set: a Send must be untagged (RFC 5040 4.2)
    tagged_send.truncate(14 + 28);
    // DDP error (layer 1), type 1 (tagged buffer), code 0 (invalid STag).
    let terminate = untagged(7, 2, &[0x11, 0x00, 0x00, 0x00]);
    let a = fpdu(&send, true);
    let b = fpdu(&tagged_send, false);
    let t = fpdu(&terminate, false);
    let mut seq = 101 + request.len() as u32;
    let mut frames = vec![
        tcp(2, c, 100, SYN, &[]),
        tcp(1, s, 500, SYN, &[]),
        tcp(2, c, 101, 0, &request),
        tcp(1, s, 501, 0, &reply),
    ];
    for p in [&a, &b] {
        frames.push(tcp(2, c, seq, 0, p));
        seq += p.len() as u32;
    }
    frames.push(tcp(1, s, 501 + reply.len() as u32, 0, &t));
    // A second connection, rejected.
    frames.push(tcp(2, c2, 900, SYN, &[]));
    frames.push(tcp(2, c2, 901, 0, &request));
    frames.push(tcp(1, s2, 1, SYN, &[]));
    frames.push(tcp(1, s2, 2, 0, &mpa_frame(mpa::KEY_REPLY, 0x60)));
    let path = scratch("findings");
    write_pcap(&path, &frames);

    let mut found: Vec<(Kind, Vec<u64>, String)> = Vec::new();
    let run = analyze::run_file(&path, Config::default(), |f| {
        if let Finding::Anomaly(a) = f {
            found.push((a.kind, a.frames.clone(), a.message.clone()));
        }
    })
    .unwrap();
    std::fs::remove_file(&path).unwrap();
    let kinds: Vec<Kind> = found.iter().map(|f| f.0).collect();
    assert_eq!(
        kinds,
        [
            Kind::MpaCrcMismatch,
            Kind::IwarpViolation,
            Kind::IwarpTerminate,
            Kind::MpaReject
        ],
        "{found:#?}"
    );
    assert_eq!(found[0].1, [5], "the FPDU's frame");
    assert!(found[0].2.contains("CRC32c"), "{}", found[0].2);
    assert!(found[1].2.contains("frame 6"), "{}", found[1].2);
    assert!(
        found[2].2.contains("DDP error") && found[2].2.contains("10.99.0.1:20049"),
        "{}",
        found[2].2
    );
    assert_eq!(found[3].1, [11]);
    let st = run.engine.state();
    assert_eq!(st.totals.iwarp.crc_invalid, 1);
    assert_eq!(st.totals.iwarp.mpa_rejects, 1);
    let states: Vec<CmState> = st.connections.values().map(|c| c.cm_state).collect();
    assert_eq!(states, [CmState::Established, CmState::Rejected]);
}

/// Flows to port 20049 that never close (a SYN flood, or a host with many
/// mounts) cannot grow the iWARP table past the QP cap: each new flow at
/// the cap forgets the stalest one, counted as a QP evicted, and the last
/// flows are still followed (the newest connection is read whole).
#[test]
fn iwarp_flows_stay_under_the_qp_cap() {
    let config = Config {
        max_qps: 64,
        ..Config::default()
    };
    let flows = 3000u16;
    let mut frames = Vec::new();
    for i in 0..flows {
        // A data segment without MPA framing: followed for port 20049.
        frames.push(tcp(2, (10_000 + i, 20049), 7, 0, &[0x55; 40]));
    }
    // Then one whole connection: its MPA exchange must still be read.
    let (c, s) = ((40000, 20049), (20049, 40000));
    let request = mpa_frame(mpa::KEY_REQUEST, 0x40);
    let reply = mpa_frame(mpa::KEY_REPLY, 0x40);
    frames.push(tcp(2, c, 100, SYN, &[]));
    frames.push(tcp(1, s, 500, SYN, &[]));
    frames.push(tcp(2, c, 101, 0, &request));
    frames.push(tcp(1, s, 501, 0, &reply));
    let path = scratch("flood");
    write_pcap(&path, &frames);
    let run = analyze::run_file(&path, config, |_| {}).unwrap();
    std::fs::remove_file(&path).unwrap();
    let cap = run.engine.limits().qps as u64;
    let evicted = run.engine.state().evictions.qps;
    assert!(cap < u64::from(flows), "cap {cap}");
    // Every flow past the cap pushed one out: flows + the 2 directions of
    // the last connection, less what the table holds at the end.
    assert_eq!(evicted, u64::from(flows) + 2 - cap, "cap {cap}");
    let conns = &run.engine.state().connections;
    assert!(
        conns.values().any(|c| c.cm_state == CmState::Established),
        "the last connection is followed: {:?}",
        conns.values().map(|c| c.cm_state).collect::<Vec<_>>()
    );
}
