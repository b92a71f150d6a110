//! Per-procedure call counts and response times against `tshark -z
//! rpc,srt,100003,3` on the real captures.
//!
//! Where tshark differs, it is tshark (checked against the kernel's own
//! trace in `kernel_trace.rs`):
//! - A READ reply whose data went by write chunk is decoded twice by tshark
//!   4.0 (the frame, and the reassembled reply), so it counts that reply
//!   twice: its READ count is ours plus the number of such replies; min and
//!   max still agree.
//! - A reply the sender retransmitted (same PSN again on the wire) is a
//!   second sample for tshark; the engine counts the transaction once.
//! - A call whose data went by read chunk (NFS WRITE) is reassembled by
//!   tshark at the last RDMA Read response, so its SRT starts there instead
//!   of at the call's Send: only the count is compared.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

#[path = "common/analyze.rs"]
mod analyze;
#[path = "common/prereq.rs"]
mod prereq;
use rdma_analyzer::engine::{Config, Finding, Kind, Transfer};

#[derive(Debug, Default)]
struct Row {
    calls: u64,
    min: f64,
    max: f64,
    avg: f64,
}

fn tshark_srt(pcap: &Path) -> BTreeMap<String, Row> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(pcap)
        .args(["-q", "-z", "rpc,srt,100003,3"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut rows = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() == 7 && f[0].parse::<u32>().is_ok() {
            rows.insert(
                f[1].to_string(),
                Row {
                    calls: f[2].parse().unwrap(),
                    min: f[3].parse().unwrap(),
                    max: f[4].parse().unwrap(),
                    avg: f[5].parse().unwrap(),
                },
            );
        }
    }
    rows
}

#[test]
fn response_times_agree_with_tshark_rpc_srt() {
    if !prereq::tshark() {
        return;
    }
    let pcaps = prereq::bundled_pcaps();
    let mut compared = 0;
    for pcap in pcaps {
        let theirs = tshark_srt(&pcap);
        // (count, min s, max s, sum s, replies by write chunk, calls by read chunk)
        let mut ours: BTreeMap<String, (u64, f64, f64, f64, u64, u64)> = BTreeMap::new();
        let mut dups: Vec<(u32, u64)> = Vec::new();
        let mut reply_frames: BTreeMap<u32, (String, u64)> = BTreeMap::new();
        analyze::run_file(&pcap, Config::default(), |f| {
            let t = match f {
                Finding::Transaction(t) => t,
                Finding::Anomaly(a) => {
                    if let (Kind::Retransmission, Some(x)) = (a.kind, a.xid) {
                        dups.push((x, a.frames[0]));
                    }
                    return;
                }
            };
            if t.program != Some(100_003) || t.version != Some(3) || t.backchannel {
                return;
            }
            let (Some(lat), Some(name)) = (t.latency_us, t.procedure.clone()) else {
                return;
            };
            let s = lat / 1e6;
            let e = ours.entry(name).or_insert((0, f64::MAX, 0.0, 0.0, 0, 0));
            e.0 += 1;
            e.1 = e.1.min(s);
            e.2 = e.2.max(s);
            e.3 += s;
            e.4 += u64::from(t.reply_transfer == Transfer::WriteChunks);
            e.5 += u64::from(t.call_transfer != Transfer::Inline);
            if let (Some(r), Some(p)) = (t.reply_frame, t.procedure.clone()) {
                reply_frames.insert(t.xid, (p, r));
            }
        })
        .unwrap();
        // Retransmitted replies: duplicates that came after the reply.
        let mut dup_replies: BTreeMap<String, u64> = BTreeMap::new();
        for (x, frame) in dups {
            if let Some((p, r)) = reply_frames.get(&x) {
                if frame > *r {
                    *dup_replies.entry(p.clone()).or_default() += 1;
                }
            }
        }
        let name = pcap.file_name().unwrap().to_string_lossy().to_string();
        assert_eq!(
            ours.keys().collect::<Vec<_>>(),
            theirs.keys().collect::<Vec<_>>(),
            "{name}: procedures seen"
        );
        for (proc, (n, min, max, sum, by_write_chunk, by_read_chunk)) in &ours {
            let t = &theirs[proc];
            let dup = dup_replies.get(proc).copied().unwrap_or(0);
            assert_eq!(
                t.calls,
                n + by_write_chunk + dup,
                "{name} {proc}: calls (tshark counts write-chunk and retransmitted replies twice)"
            );
            if dup > 0 {
                continue;
            }
            if *by_read_chunk > 0 {
                continue;
            }
            let close = |a: f64, b: f64| (a - b).abs() < 2e-6;
            assert!(
                close(t.min, *min) && close(t.max, *max),
                "{name} {proc}: min/max tshark {}/{} ours {min}/{max}",
                t.min,
                t.max
            );
            if *by_write_chunk == 0 {
                assert!(
                    close(t.avg, sum / *n as f64),
                    "{name} {proc}: mean tshark {} ours {}",
                    t.avg,
                    sum / *n as f64
                );
            }
            compared += 1;
        }
    }
    assert!(compared > 5, "compared only {compared} procedures");
}
