//! Times in text output, through the real binary, against tshark's own
//! `frame.time_relative` and `frame.time_epoch` for the same frames: each
//! `transactions` line starts with its call frame's time, each `anomalies`
//! line with its finding's, relative by default and UTC with `-t utc`; the
//! report says when each connection was first and last seen.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "common/prereq.rs"]
mod prereq;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

fn capture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../captures")
        .join(name)
}

fn run(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// tshark's relative and epoch time of every frame, by frame number.
fn tshark_times(pcap: &Path) -> Option<BTreeMap<u64, (String, String)>> {
    if !prereq::require(
        "tshark",
        prereq::have_command("tshark", "--version"),
        "scripts/setup.sh installs it",
    ) {
        return None;
    }
    let out = Command::new("tshark")
        .arg("-r")
        .arg(pcap)
        .args([
            "-T",
            "fields",
            "-e",
            "frame.number",
            "-e",
            "frame.time_relative",
            "-e",
            "frame.time_epoch",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    Some(
        text.lines()
            .map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                (f[0].parse().unwrap(), (f[1].to_string(), f[2].to_string()))
            })
            .collect(),
    )
}

/// The first frame a line names (`frames 26->28`, `frames 99`).
fn first_frame(line: &str) -> u64 {
    let after = line.split("frames ").nth(1).expect("a frame number");
    after
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// `0.224823000` to microseconds, as the analyzer prints them.
fn micros(tshark: &str) -> String {
    let (s, frac) = tshark.split_once('.').unwrap();
    format!("{s}.{}", &frac[..6])
}

#[test]
fn every_transaction_line_starts_with_its_call_frames_time() {
    let pcap = capture("reconnect.pcap");
    let Some(times) = tshark_times(&pcap) else {
        return;
    };
    let text = run(&["transactions", pcap.to_str().unwrap()]);
    let mut lines = 0;
    for line in text.lines() {
        let (at, rest) = line.trim_start().split_once(' ').unwrap();
        let frame = first_frame(rest);
        assert_eq!(at, micros(&times[&frame].0), "{line}");
        lines += 1;
    }
    // 37 calls sent, one of them twice (across the reconnect): 36 lines.
    assert_eq!(lines, 36, "{text}");
}

/// The UTC time of `epoch` (tshark's `frame.time_epoch`), to the µs.
fn utc_of(epoch: &str) -> String {
    let out = Command::new("date")
        .args(["-u", "-d", &format!("@{epoch}"), "+%Y-%m-%dT%H:%M:%S.%6NZ"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn utc_transaction_lines_start_with_their_call_frames_epoch_time() {
    let pcap = capture("reconnect.pcap");
    let Some(times) = tshark_times(&pcap) else {
        return;
    };
    let text = run(&["transactions", "-t", "utc", pcap.to_str().unwrap()]);
    let mut lines = 0;
    for line in text.lines() {
        let (at, rest) = line.split_once(' ').unwrap();
        assert_eq!(at, utc_of(&times[&first_frame(rest)].1), "{line}");
        lines += 1;
    }
    assert_eq!(lines, 36, "{text}");
}

#[test]
fn utc_times_are_the_frames_epoch_times() {
    let pcap = capture("reconnect.pcap");
    let Some(times) = tshark_times(&pcap) else {
        return;
    };
    let text = run(&["anomalies", "-t", "utc", pcap.to_str().unwrap()]);
    let mut checked = 0;
    for line in text
        .lines()
        .filter(|l| l.starts_with("remote_invalidation") || l.contains(" remote_invalidation"))
    {
        let (at, rest) = line.split_once(' ').unwrap();
        let utc = |frame: u64| utc_of(&times[&frame].1);
        assert_eq!(at, utc(first_frame(rest)), "{line}");
        checked += 1;
        // A finding that folds repeats spans its first to its last frame.
        if let Some(span) = rest
            .split("frames ")
            .nth(1)
            .and_then(|r| r.split_once(", "))
        {
            let last: u64 = span.0.split('–').nth(1).unwrap().parse().unwrap();
            let until = span.1.split(' ').next().unwrap().split('–').nth(1).unwrap();
            assert_eq!(until, utc(last), "{line}");
            checked += 1;
        }
    }
    assert!(checked >= 4, "{text}");
}

#[test]
fn an_anomaly_line_has_a_relative_time_too() {
    let pcap = capture("reconnect.pcap");
    let text = run(&["anomalies", pcap.to_str().unwrap()]);
    // The six on c1 are one finding, printed at the end with its count;
    // its time is its first occurrence's, its span runs to the last's.
    let line = text
        .lines()
        .find(|l| l.contains(" remote_invalidation_not_negotiated "))
        .unwrap();
    assert!(
        line.trim_start()
            .starts_with("1.592642 remote_invalidation_not_negotiated"),
        "{line}"
    );
    assert!(
        line.contains("×6, frames 99–228, 1.592642–4.731324 s c1"),
        "{line}"
    );
}

#[test]
fn the_report_says_when_each_connection_was_first_and_last_seen() {
    let pcap = capture("reconnect.pcap");
    let text = run(&["report", pcap.to_str().unwrap()]);
    let seen: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("      first frame "))
        .collect();
    assert_eq!(
        seen,
        [
            "      first frame 0.206178 s, last message 5.312567 s",
            "      first frame 20.862979 s, last message 29.853948 s"
        ]
    );
    let utc = run(&["report", "-t", "utc", pcap.to_str().unwrap()]);
    assert!(
        utc.contains("first frame 2026-11-20T23:35:37.339496Z"),
        "{utc}"
    );
}

#[test]
fn json_lines_keep_their_absolute_nanoseconds() {
    let pcap = capture("reconnect.pcap");
    let text = run(&["transactions", "--json", pcap.to_str().unwrap()]);
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["call_ts_ns"], "1795217737358141000");
}

/// `transactions` prints in call order (the first transmission's time),
/// text and JSON alike, although the engine finds each at its reply: on
/// parallel.pcap replies overtake each other, on reconnect.pcap calls are
/// sent again on a new connection.
#[test]
fn transactions_print_in_call_order() {
    for name in ["parallel.pcap", "reconnect.pcap", "nconnect.pcap"] {
        let pcap = capture(name);
        let p = pcap.to_str().unwrap();
        let json = run(&["transactions", "--json", p]);
        let keys: Vec<(u64, u64, u64)> = json
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                let ts = v["first_call_ts_ns"].as_str().unwrap().parse().unwrap();
                let first = v["first_call_frame"].as_u64().unwrap();
                (ts, first, v["call_frame"].as_u64().unwrap())
            })
            .collect();
        assert!(keys.len() > 30, "{name}: {}", keys.len());
        assert!(keys.is_sorted(), "{name}: JSON not in call order");
        // Completion order differs from call order here: the test would
        // pass without the reordering otherwise.
        let reply_order: Vec<u64> = json
            .lines()
            .filter_map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                v["reply_frame"].as_u64()
            })
            .collect();
        if name == "parallel.pcap" {
            assert!(!reply_order.is_sorted(), "{name}: replies in call order");
        }
        // The text lines: the same transactions, in the same order.
        let text = run(&["transactions", p]);
        let frames: Vec<u64> = text
            .lines()
            .map(|l| {
                let w = l.split_whitespace().skip_while(|w| *w != "frames").nth(1);
                w.unwrap().split("->").next().unwrap().parse().unwrap()
            })
            .collect();
        let json_frames: Vec<u64> = keys.iter().map(|k| k.2).collect();
        assert_eq!(frames, json_frames, "{name}: text and JSON order");
    }
}

/// `frames -t relative|delta` print tshark's `frame.time_relative` and
/// `frame.time_delta` for every frame (to the µs); `-t utc` the epoch time
/// as a UTC date; relative is the default.
#[test]
fn frames_times_are_tsharks_relative_delta_and_utc() {
    let pcap = capture("reconnect.pcap");
    if !prereq::require(
        "tshark",
        prereq::have_command("tshark", "--version"),
        "scripts/setup.sh installs it",
    ) {
        return;
    }
    let out = Command::new("tshark")
        .arg("-r")
        .arg(&pcap)
        .args([
            "-T",
            "fields",
            "-e",
            "frame.time_relative",
            "-e",
            "frame.time_delta",
        ])
        .output()
        .unwrap();
    let theirs: Vec<(String, String)> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (r, d) = l.split_once('\t').unwrap();
            (micros(r), micros(d))
        })
        .collect();
    let p = pcap.to_str().unwrap();
    let time_of = |l: &str| l.split_whitespace().nth(1).unwrap().to_string();
    let default: Vec<String> = run(&["frames", p]).lines().map(time_of).collect();
    let relative: Vec<String> = run(&["frames", "-t", "relative", p])
        .lines()
        .map(time_of)
        .collect();
    let delta: Vec<String> = run(&["frames", "-t", "delta", p])
        .lines()
        .map(time_of)
        .collect();
    let utc: Vec<String> = run(&["frames", "-t", "utc", p])
        .lines()
        .map(time_of)
        .collect();
    assert_eq!(theirs.len(), relative.len());
    assert!(theirs.len() > 100);
    assert_eq!(default, relative);
    let rel: Vec<String> = theirs.iter().map(|t| t.0.clone()).collect();
    let del: Vec<String> = theirs.iter().map(|t| t.1.clone()).collect();
    assert_eq!(relative, rel);
    assert_eq!(delta, del);
    // UTC, against the transactions' UTC times of the same frames (checked
    // against tshark's epoch above): the first frame, and that they rise.
    assert!(
        utc[0].starts_with("20") && utc[0].ends_with('Z'),
        "{}",
        utc[0]
    );
    assert!(utc.windows(2).all(|w| w[0] <= w[1]), "UTC times in order");
}
