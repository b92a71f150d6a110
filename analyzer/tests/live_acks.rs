//! `live` folds a finding that repeats per connection (one `anomaly`
//! record, then `anomaly_update` records with its count) and takes
//! `--ignore`/`--ack` (JSON Lines marked, text hidden, metrics apart):
//! through the real binary on the loopback interface with a bundled
//! capture injected (root; skipped with a message otherwise), and the
//! command line's refusals without root.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use serde_json::Value;

#[path = "common/prereq.rs"]
mod prereq;

#[path = "common/loopback.rs"]
mod loopback;
use loopback::{inject, wait_for_file_text};

#[path = "common/exposition.rs"]
mod exposition;

#[path = "common/tmux.rs"]
mod tmux;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");
/// Linux's server: `remote_invalidation_not_negotiated` ×28 on c1, and two
/// retransmissions that stand alone.
const SCENARIO: &str = "v42-reminv.pcap";
const FACT: &str = "remote_invalidation_not_negotiated";

fn capture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../captures")
        .join(name)
}

/// A child process that is killed when the test is done with it.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rdma-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// `anomalies --json` on the capture: the folded finding of `FACT`.
fn offline_fact() -> Value {
    let out = Command::new(BIN)
        .args(["anomalies", "--json"])
        .arg(capture(SCENARIO))
        .output()
        .expect("anomalies");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .find(|v| v["kind"] == FACT)
        .expect("the capture's folded finding")
}

/// Starts `live -i lo ARGS` with stderr to `err`, waits until it captures,
/// injects the capture and returns the running child.
fn live_on_injected(args: &[&str], err: &Path, stdout: Stdio) -> Running {
    let child = Command::new(BIN)
        .args(["live", "-i", "lo", "--no-tui", "--counters-interval", "0"])
        .args(args)
        .stdout(stdout)
        .stderr(std::fs::File::create(err).expect("stderr file"))
        .spawn()
        .expect("starting live");
    let running = Running(child);
    wait_for_file_text(err, "capturing on lo", Duration::from_secs(20));
    sleep(Duration::from_millis(300));
    inject(&capture(SCENARIO));
    running
}

fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("json lines")
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .collect()
}

fn metrics(port: u16) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    body.split_once("\r\n\r\n").map(|(_, b)| b.to_string())
}

#[test]
fn live_folds_a_repeated_fact_into_one_anomaly_and_updates_of_its_count() {
    if !prereq::root("live -i lo needs CAP_NET_RAW") {
        return;
    }
    let dir = temp_dir("live-fold");
    let (jsonl, err) = (dir.join("live.jsonl"), dir.join("live.err"));
    let mut live = live_on_injected(
        &[
            "--duration",
            "8",
            "--json-out",
            jsonl.to_str().expect("path"),
        ],
        &err,
        Stdio::null(),
    );
    let status = live.0.wait().expect("live");
    let said = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(status.success(), "{status}\n{said}");
    let lines = json_lines(&jsonl);
    let of = |t: &str| -> Vec<&Value> {
        lines
            .iter()
            .filter(|v| v["type"] == t && v["kind"] == FACT)
            .collect()
    };
    let (first, updates) = (of("anomaly"), of("anomaly_update"));
    assert_eq!(first.len(), 1, "one record of the fact's first occurrence");
    assert_eq!(first[0]["count"], 1);
    assert_eq!(first[0]["acknowledged"], false);
    // The 8 s run is shorter than the update period: one update, the final.
    assert_eq!(updates.len(), 1, "{updates:?}");
    let (u, want) = (updates[0], offline_fact());
    assert_eq!(u["count"], want["count"], "live's count is the file's");
    assert_eq!(u["xids"], want["xids"]);
    assert_eq!(u["first_ts_ns"], first[0]["first_ts_ns"]);
    assert_eq!(u["first_frame"], first[0]["first_frame"]);
    assert!(u["last_frame"].as_u64() > u["first_frame"].as_u64(), "{u}");
    assert!(
        u["last_ts_ns"].as_str() > first[0]["last_ts_ns"].as_str(),
        "{u}"
    );
    // Findings that stand alone are each a record, as before.
    let retransmissions = lines
        .iter()
        .filter(|v| v["type"] == "anomaly" && v["kind"] == "retransmission")
        .count();
    assert_eq!(retransmissions, 2, "{said}");
    // The run's summary counts occurrences, as the metrics do.
    assert!(said.contains(", 30 anomalies in"), "{said}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn live_ack_file_marks_json_lines_and_keeps_the_fact_out_of_the_alerting_series() {
    if !prereq::root("live -i lo needs CAP_NET_RAW") {
        return;
    }
    let dir = temp_dir("live-ack");
    let (jsonl, err, acks) = (
        dir.join("live.jsonl"),
        dir.join("live.err"),
        dir.join("acks"),
    );
    std::fs::write(&acks, format!("# stock Linux\n{FACT} c1\n")).expect("ack file");
    let mut live = live_on_injected(
        &[
            "--duration",
            "10",
            "--metrics",
            "127.0.0.1:0",
            "--ack",
            acks.to_str().expect("path"),
            "--json-out",
            jsonl.to_str().expect("path"),
        ],
        &err,
        Stdio::null(),
    );
    let said = std::fs::read_to_string(&err).unwrap_or_default();
    let port: u16 = said
        .split("metrics at http://127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("live did not say where its metrics are:\n{said}"));
    let want = offline_fact()["count"].as_u64().expect("count") as f64;
    let start = Instant::now();
    let samples = loop {
        let s = exposition::samples(&metrics(port).unwrap_or_default());
        let acked = exposition::sum(&s, "rdma_anomalies_acknowledged_total", &[("kind", FACT)]);
        if acked == want {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "rdma_anomalies_acknowledged_total{{kind=\"{FACT}\"}} is {acked}, not {want}"
        );
        sleep(Duration::from_millis(200));
    };
    // What fleet/alerts.yml's RdmaProtocolErrors sums: nothing of the
    // acknowledged kind, while the unacknowledged ones are still counted.
    assert_eq!(
        exposition::sum(&samples, "rdma_anomalies_total", &[("kind", FACT)]),
        0.0
    );
    assert_eq!(
        exposition::sum(
            &samples,
            "rdma_anomalies_total",
            &[("kind", "retransmission")]
        ),
        2.0
    );
    let status = live.0.wait().expect("live");
    let said = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(status.success(), "{status}\n{said}");
    let lines = json_lines(&jsonl);
    let fact: Vec<&Value> = lines.iter().filter(|v| v["kind"] == FACT).collect();
    assert_eq!(
        fact.len(),
        2,
        "the first occurrence and its update: {fact:?}"
    );
    assert!(fact.iter().all(|v| v["acknowledged"] == true), "{fact:?}");
    assert!(lines
        .iter()
        .filter(|v| v["kind"] == "retransmission")
        .all(|v| v["acknowledged"] == false));
    assert!(
        said.contains(&format!(
            "live: {} acknowledged findings marked \"acknowledged\": true ({FACT})",
            want
        )),
        "{said}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn live_ignore_hides_the_fact_from_the_text_lines_and_says_so() {
    if !prereq::root("live -i lo needs CAP_NET_RAW") {
        return;
    }
    let dir = temp_dir("live-ignore");
    let (out, err) = (dir.join("live.out"), dir.join("live.err"));
    let mut live = live_on_injected(
        &["--duration", "8", "--ignore", FACT],
        &err,
        Stdio::from(std::fs::File::create(&out).expect("stdout file")),
    );
    let status = live.0.wait().expect("live");
    let said = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(status.success(), "{status}\n{said}");
    let text = std::fs::read_to_string(&out).expect("stdout");
    // Transactions still name the kinds found on them; no finding line of
    // the acknowledged kind is written.
    assert!(!text.contains(&format!(" {FACT} [")), "{text}");
    assert!(text.contains(&format!("[{FACT}]")), "{text}");
    assert_eq!(text.matches(" retransmission [").count(), 2, "{text}");
    let want = offline_fact()["count"].as_u64().expect("count");
    assert!(
        said.contains(&format!(
            "live: {want} acknowledged findings hidden ({FACT})"
        )),
        "{said}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn live_text_writes_the_first_occurrence_and_an_update_with_the_count() {
    if !prereq::root("live -i lo needs CAP_NET_RAW") {
        return;
    }
    let dir = temp_dir("live-fold-text");
    let (out, err) = (dir.join("live.out"), dir.join("live.err"));
    let mut live = live_on_injected(
        &["--duration", "8"],
        &err,
        Stdio::from(std::fs::File::create(&out).expect("stdout file")),
    );
    let status = live.0.wait().expect("live");
    assert!(status.success(), "{status}");
    let text = std::fs::read_to_string(&out).expect("stdout");
    let fact: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(&format!(" {FACT} [")))
        .collect();
    assert_eq!(fact.len(), 2, "{text}");
    assert!(!fact[0].contains(" update: "), "{}", fact[0]);
    let want = offline_fact()["count"].as_u64().expect("count");
    assert!(
        fact[1].contains(" update: ") && fact[1].contains(&format!("×{want}, frames ")),
        "{}",
        fact[1]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn live_refuses_an_unknown_kind_to_ignore_before_capturing() {
    let out = Command::new(BIN)
        .args([
            "live",
            "--no-tui",
            "-i",
            "no-such-if0",
            "--ignore",
            "retransmision",
        ])
        .output()
        .expect("live");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("did you mean `retransmission`"), "{err}");
    assert!(
        !err.contains("no-such-if0"),
        "refused before opening: {err}"
    );
}

#[test]
fn live_refuses_a_malformed_ack_file_naming_its_line() {
    let dir = temp_dir("live-ack-bad");
    let acks = dir.join("acks");
    std::fs::write(&acks, "# fine\nretransmission c2 extra\n").expect("ack file");
    let out = Command::new(BIN)
        .args(["live", "--no-tui", "-i", "no-such-if0", "--ack"])
        .arg(&acks)
        .output()
        .expect("live");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("{}:2:", acks.display())), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The live TUI keeps acknowledged findings apart as the capture TUI does:
/// hidden from the findings screen, counted in its title, `a` shows them.
#[test]
fn live_tui_keeps_acknowledged_findings_apart() {
    if !prereq::root("live -i lo needs CAP_NET_RAW") || !prereq::tmux() {
        return;
    }
    let shell = format!(
        "'{BIN}' live -i lo --counters-interval 0 --ignore {FACT}; echo EXITED $?; sleep 60"
    );
    let t = tmux::Tmux::start(
        format!("rdma-analyzer-test-live-acks-{}", std::process::id()),
        &shell,
    );
    t.wait_for("capturing on lo");
    sleep(Duration::from_millis(300));
    inject(&capture(SCENARIO));
    let want = offline_fact()["count"].as_u64().expect("count");
    let p = t.step(&["6"], &format!("{want} acknowledged hidden, a: show"));
    assert!(p.contains("retransmission"), "{p}");
    assert!(!p.contains(FACT), "{p}");
    // `a`: the acknowledged finding is back, one row for its occurrences
    // (×28 from its first frame to its last), not a row per occurrence.
    let p = t.step(&["a"], "acknowledged shown, a: hide");
    assert!(p.contains(FACT), "{p}");
    let fact = offline_fact();
    let row = format!(
        "×{want} {}–{}",
        fact["first_frame"].as_u64().expect("first frame"),
        fact["last_frame"].as_u64().expect("last frame")
    );
    assert_eq!(p.matches(&row).count(), 1, "{row}:\n{p}");
    t.step(&["q"], "EXITED 0");
}
