//! `live -i lo` with its default capture filter takes NFS/RDMA over iWARP
//! (TCP port 20049) as well as RoCEv2: the frames of the soft-iWARP lab
//! capture are injected onto the loopback interface while the real binary
//! captures them, and every transaction of the capture comes out.
//!
//! Needs root (CAP_NET_RAW); skipped with a message otherwise. Runs in the
//! `loopback` test group (`.config/nextest.toml`): two captures of `lo` at
//! once would see each other's frames.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::Duration;

use serde_json::Value;

#[path = "common/prereq.rs"]
mod prereq;

#[path = "common/loopback.rs"]
mod loopback;
use loopback::{inject, wait_for_file_text};

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

fn capture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../captures/iwarp/v3-ddp.pcap")
}

/// The XIDs of the capture's transactions, as `transactions` reads the file.
fn file_xids() -> BTreeSet<u64> {
    let o = Command::new(BIN)
        .args(["transactions", "--json"])
        .arg(capture())
        .output()
        .expect("transactions");
    assert!(o.status.success());
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a JSON line");
            v["xid"].as_u64().expect("xid")
        })
        .collect()
}

#[test]
fn live_default_filter_takes_iwarp() {
    let help = Command::new(BIN)
        .args(["live", "--help"])
        .output()
        .expect("help");
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains(r#"[default: "udp port 4791 or tcp port 20049"]"#),
        "live --help:\n{help}"
    );
    if !prereq::root("live -i lo needs CAP_NET_RAW") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("rdma-live-iwarp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (jsonl, err) = (dir.join("live.jsonl"), dir.join("live.err"));
    let mut child = Command::new(BIN)
        .args(["live", "-i", "lo", "--duration", "8", "--json-out"])
        .arg(&jsonl)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).expect("stderr file"))
        .spawn()
        .expect("starting live");
    wait_for_file_text(&err, "capturing on lo", Duration::from_secs(20));
    sleep(Duration::from_millis(300));
    inject(&capture());
    let status = child.wait().expect("live");
    let err_text = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(status.success(), "live failed: {status}\n{err_text}");
    let mut got = BTreeSet::new();
    for line in std::fs::read_to_string(&jsonl).expect("json lines").lines() {
        let v: Value = serde_json::from_str(line).expect("a JSON line");
        if v["type"] == "transaction" {
            got.insert(v["xid"].as_u64().expect("xid"));
        }
    }
    let want = file_xids();
    assert_eq!(want.len(), 44);
    let missing: Vec<_> = want.difference(&got).collect();
    assert!(missing.is_empty(), "live missed {missing:x?}\n{err_text}");
    let _ = std::fs::remove_dir_all(&dir);
}
