//! `live --filter` takes the display filter language (as `report`), and
//! `--bpf` the kernel's capture filter: through the real binary, on the
//! loopback interface with a bundled capture injected (root; skipped with
//! a message otherwise), and the command line's decisions without root.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
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
const SCENARIO: &str = "v42-reminv.pcap";
/// Keeps 4 of the capture's 64 transactions and their findings.
const FILTER: &str = "mode == reply_chunk";

fn capture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../captures")
        .join(name)
}

/// (type, xid, kind) of each JSON line.
fn rows(text: &str, kind: &str) -> BTreeSet<(String, u64, String)> {
    let mut all = BTreeSet::new();
    for v in text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
    {
        // `live` writes a repeated fact's first occurrence as an
        // `anomaly` and the rest in `anomaly_update`s of its count.
        let t = match v["type"].as_str().unwrap_or(kind) {
            "anomaly_update" => "anomaly",
            t => t,
        }
        .to_string();
        let k = v["kind"].as_str().unwrap_or("").to_string();
        // A fact repeated on a connection is one finding with the XIDs of
        // its occurrences.
        let xids: Vec<u64> = v["xids"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_u64).collect())
            .filter(|x: &Vec<u64>| !x.is_empty())
            .unwrap_or_else(|| vec![v["xid"].as_u64().unwrap_or(0)]);
        for x in xids {
            all.insert((t.clone(), x, k.clone()));
        }
    }
    all
}

/// What `transactions` and `anomalies` keep of the file under `FILTER`.
fn offline() -> BTreeSet<(String, u64, String)> {
    let mut all = BTreeSet::new();
    for (cmd, kind) in [("transactions", "transaction"), ("anomalies", "anomaly")] {
        let out = Command::new(BIN)
            .args([cmd, "--json", "--filter", FILTER])
            .arg(capture(SCENARIO))
            .output()
            .expect(cmd);
        assert!(out.status.success(), "{cmd}: {out:?}");
        all.extend(rows(&String::from_utf8_lossy(&out.stdout), kind));
    }
    all
}

fn live_filtered(dir: &Path) -> (BTreeSet<(String, u64, String)>, String) {
    let jsonl = dir.join("live.jsonl");
    let err = dir.join("live.err");
    let mut child = Command::new(BIN)
        .args(["live", "-i", "lo", "--duration", "10", "--filter", FILTER])
        .arg("--json-out")
        .arg(&jsonl)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).expect("stderr file"))
        .spawn()
        .expect("starting live");
    wait_for_file_text(&err, "capturing on lo", Duration::from_secs(20));
    sleep(Duration::from_millis(300));
    inject(&capture(SCENARIO));
    let status = child.wait().expect("live");
    let err_text = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(status.success(), "live failed: {status}\n{err_text}");
    let text = std::fs::read_to_string(&jsonl).expect("json lines");
    (rows(&text, ""), err_text)
}

#[test]
fn live_filter_writes_what_the_same_filter_keeps_offline() {
    if !prereq::root("live -i lo needs CAP_NET_RAW") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("rdma-live-filter-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (mut got, err) = live_filtered(&dir);
    // Beside the findings, live writes its periodic records (the window's
    // diagnosis, the kernel's counters): they are the run's, not a
    // transaction's, and no filter applies to them.
    assert!(got.iter().any(|r| r.0 == "diagnosis"), "{got:?}");
    got.retain(|r| r.0 == "transaction" || r.0 == "anomaly");
    let want = offline();
    assert_eq!(
        want.iter().filter(|r| r.0 == "transaction").count(),
        4,
        "{want:?}"
    );
    assert_eq!(
        got, want,
        "live --filter and transactions/anomalies --filter disagree\n{err}"
    );
    // The run's summary counts what the filter kept, not what went by.
    assert!(err.contains(", 4 transactions,"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn live(args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN)
        .args(["live", "--no-tui", "-i", "no-such-if0", "--duration", "1"])
        .args(args)
        .output()
        .expect("live");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn live_filter_with_bpf_text_is_used_as_bpf_with_a_warning() {
    let (_, err) = live(&["--filter", "udp port 4791"]);
    assert!(
        err.contains(
            "reads as a BPF capture filter and is used as one: write --bpf 'udp port 4791'"
        ),
        "{err}"
    );
    // It went on to open the interface: the capture filter was taken.
    assert!(err.contains("no such interface"), "{err}");
}

#[test]
fn live_filter_with_bpf_text_beside_bpf_is_refused_with_a_hint() {
    let (code, err) = live(&["--bpf", "udp", "--filter", "udp port 4791"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown field"), "{err}");
    assert!(
        err.contains("(a BPF capture filter goes in --bpf)"),
        "{err}"
    );
}

#[test]
fn live_filter_display_expression_is_not_taken_as_bpf() {
    let (_, err) = live(&["--filter", "proc == READ && latency > 1ms"]);
    assert!(!err.contains("BPF"), "{err}");
    assert!(err.contains("no such interface"), "{err}");
}
