//! `live -i IFACE` on the machine running the tests: the frames of a real
//! lab capture are injected onto the loopback interface (libpcap's
//! `pcap_inject`) while the real binary captures them, first headless (JSON
//! Lines and `--write` pcapng), then in the TUI inside tmux.
//!
//! One test, both phases in turn: two captures of `lo` at once would each
//! see the other's frames (so the loopback tests run one at a time:
//! `.config/nextest.toml`). Needs root (CAP_NET_RAW); skipped with a
//! message otherwise.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::Duration;

#[path = "common/analyze.rs"]
mod analyze;
#[path = "common/exact.rs"]
mod exact;
use rdma_analyzer::engine::{Config, Finding};
use rdma_analyzer::sources::pcap::PcapReader;
use serde_json::Value;

#[path = "common/tmux.rs"]
mod tmux;
use tmux::Tmux;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");
const SCENARIO: &str = "v42-reminv.pcap";

fn capture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../captures")
        .join(name)
}

#[path = "common/prereq.rs"]
mod prereq;

#[path = "common/loopback.rs"]
mod loopback;
use loopback::{inject, wait_for_file_text};

/// XID -> (chunk handles, remotely invalidated R_Key), as the wire engine
/// sees the original capture.
fn expected() -> BTreeMap<u64, (BTreeSet<u64>, Option<u64>)> {
    let mut m = BTreeMap::new();
    analyze::run_file(&capture(SCENARIO), Config::default(), |f| {
        if let Finding::Transaction(t) = f {
            m.insert(
                u64::from(t.xid),
                (
                    t.chunks.iter().map(|c| u64::from(c.handle)).collect(),
                    t.remote_invalidated_rkey.map(u64::from),
                ),
            );
        }
    })
    .expect("reading the capture");
    m
}

fn headless(dir: &Path) {
    let jsonl = dir.join("live.jsonl");
    let pcapng = dir.join("live.pcapng");
    let err = dir.join("live.err");
    let stats = dir.join("stats.json");
    let mut child = Command::new(BIN)
        .args(["live", "-i", "lo", "--duration", "10", "--json-out"])
        .arg(&jsonl)
        .arg("--write")
        .arg(&pcapng)
        .arg("--stats-out")
        .arg(&stats)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).expect("stderr file"))
        .spawn()
        .expect("starting live");
    wait_for_file_text(&err, "capturing on lo", Duration::from_secs(20));
    sleep(Duration::from_millis(300));
    let sent = inject(&capture(SCENARIO));
    let status = child.wait().expect("live");
    let err_text = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(status.success(), "live failed: {status}\n{err_text}");
    // The run ends with the diagnosis `report` gives what it saw (the
    // frames it wrote, with their live times: a replay's timing is not the
    // original capture's).
    let report = Command::new(BIN)
        .arg("report")
        .arg(&pcapng)
        .output()
        .expect("report");
    let diagnosis = |t: &str| -> Vec<String> {
        t.lines()
            .skip_while(|l| !l.starts_with("Diagnosis ("))
            .take_while(|l| l.starts_with("Diagnosis (") || l.starts_with("  "))
            .map(str::to_string)
            .collect()
    };
    let said = diagnosis(&err_text);
    assert!(said.len() >= 2, "live said no diagnosis:\n{err_text}");
    assert_eq!(said, diagnosis(&String::from_utf8_lossy(&report.stdout)));

    // Every transaction of the capture, with its chunks and invalidation.
    let want = expected();
    let mut got = BTreeMap::new();
    for line in std::fs::read_to_string(&jsonl).expect("json lines").lines() {
        let v: Value = serde_json::from_str(line).expect("a JSON line");
        if v["type"] != "transaction" {
            continue;
        }
        assert_eq!(v["sources"], serde_json::json!(["wire"]), "{v}");
        let handles = v["chunks"]
            .as_array()
            .map(|a| a.iter().filter_map(|c| exact::num(&c["handle"])).collect())
            .unwrap_or_default();
        got.insert(
            v["xid"].as_u64().expect("xid"),
            (handles, exact::num(&v["remote_invalidated_rkey"])),
        );
    }
    assert_eq!(
        got.len(),
        want.len(),
        "live saw {} transactions, the capture has {}\n{err_text}",
        got.len(),
        want.len()
    );
    assert_eq!(got, want, "live and report disagree");

    // --write kept every frame, byte for byte in count; stats agree.
    let mut r = PcapReader::open(&pcapng).expect("written pcapng");
    let mut written = 0u64;
    while r.next_packet().expect("frame").is_some() {
        written += 1;
    }
    assert_eq!(written, sent, "--write saved {written} of {sent} frames");
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("json");
    assert_eq!(s["frames"], sent, "{s}");
    assert_eq!(s["frames_dropped"], 0, "{s}");
    assert_eq!(s["transactions"], want.len(), "{s}");
}

fn in_tui() {
    let shell = format!("'{BIN}' live -i lo; echo EXITED $?; sleep 60");
    let t = Tmux::start(format!("rdma-analyzer-live-{}", std::process::id()), &shell);
    // The status line names the live source before any traffic.
    t.wait_for("live: lo");
    sleep(Duration::from_millis(300));
    inject(&capture(SCENARIO));
    let n = expected().len();
    // live starts on the diagnosis, which grows with the engine's state:
    // the clean scenario names no cause, over every RPC it saw.
    let p = t.wait_for(&format!(
        "no cause found so far — looked at {n} RPCs on 1 connection"
    ));
    assert!(p.contains("client 10.99.0.2"), "no client timeline:\n{p}");
    t.send(&["1"]);
    let p = t.wait_for(&format!("{n} calls, {n} replies"));
    assert!(p.contains("10.99.0.1"), "overview lacks the server:\n{p}");
    t.send(&["2"]);
    let p = t.wait_for(&format!("Transactions {n}/{n}"));
    assert!(
        p.contains("0xc72afd7f") && p.contains("COMPOUND(EXCHANGE_ID)"),
        "{p}"
    );
    t.send(&["q"]);
    t.wait_for("EXITED 0");
    assert_eq!(
        t.cmd(&["display", "-p", "-t", "t", "#{alternate_on}"])
            .stdout,
        b"0\n",
        "terminal left in the alternate screen"
    );
}

#[test]
fn live_capture_headless_and_in_the_tui() {
    if !prereq::root("live -i lo needs CAP_NET_RAW") || !prereq::tmux() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("rdma-live-capture-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    headless(&dir);
    in_tui();
    let _ = std::fs::remove_dir_all(&dir);
}
