//! One finding per repeated fact, and acknowledgements, through the real
//! binary: a fact repeated per reply is one finding whose count is the
//! number of occurrences the report and the metrics count; `--ignore` and
//! `--ack` hide findings from the text, mark them in JSON, move them to
//! their own metric, and leave the exit status alone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");
const REMINV: &str = "remote_invalidation_not_negotiated";

fn capture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../captures")
        .join(name)
        .display()
        .to_string()
}

fn output(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn run(args: &[&str]) -> String {
    let out = output(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn json_lines(args: &[&str]) -> Vec<Value> {
    run(args)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("findings-dedup-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Removes a scratch file, and its directory once empty.
fn cleanup(file: &Path) {
    let _ = std::fs::remove_file(file);
    let _ = file.parent().map(std::fs::remove_dir);
}

/// `rdma_anomalies_total` (or another family) by kind, from `report
/// --metrics-out` with `extra` arguments.
fn metric(pcap: &str, family: &str, extra: &[&str]) -> BTreeMap<String, u64> {
    let prom = scratch(&format!("{}.prom", extra.len()));
    let prom_s = prom.display().to_string();
    let mut args = vec!["report", "--metrics-out", &prom_s];
    args.extend_from_slice(extra);
    args.push(pcap);
    run(&args);
    let text = std::fs::read_to_string(&prom).unwrap();
    cleanup(&prom);
    text.lines()
        .filter(|l| l.starts_with(&format!("{family}{{")))
        .map(|l| {
            let kind = l
                .split("kind=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            let n = l.rsplit(' ').next().unwrap().parse().unwrap();
            (kind.to_string(), n)
        })
        .collect()
}

#[test]
fn a_repeated_fact_is_one_finding_counting_every_occurrence() {
    let p = capture("parallel.pcap");
    let lines = json_lines(&["anomalies", "--json", &p]);
    let mut counted: BTreeMap<String, u64> = BTreeMap::new();
    for l in &lines {
        *counted
            .entry(l["kind"].as_str().unwrap().into())
            .or_default() += l["count"].as_u64().unwrap();
    }
    let reminv: Vec<&Value> = lines.iter().filter(|l| l["kind"] == REMINV).collect();
    assert_eq!(reminv.len(), 1, "one connection, one fact");
    let r = reminv[0];
    assert_eq!(r["count"], 480);
    assert_eq!(
        (r["first_frame"].as_u64(), r["last_frame"].as_u64()),
        (Some(798), Some(7683))
    );
    assert_eq!(r["frames"], serde_json::json!([798]));
    assert_eq!(r["xids"].as_array().unwrap().len(), 8, "bounded");
    assert!(r["first_ts_ns"].as_str().unwrap() < r["last_ts_ns"].as_str().unwrap());
    // The report and the metrics count occurrences, as before the fold.
    let doc: Value = serde_json::from_str(&run(&["report", "--json", &p])).unwrap();
    let report: BTreeMap<String, u64> = doc["anomalies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["kind"].as_str().unwrap().into(),
                k["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(counted, report);
    assert_eq!(metric(&p, "rdma_anomalies_total", &[])[REMINV], 480);
    let text = run(&["anomalies", &p]);
    assert!(
        text.contains("×480, frames 798–7683, 10.898025–19.109993 s c1 xids 0x5a5ed101,"),
        "{text}"
    );
}

#[test]
fn events_stay_one_finding_each() {
    let p = capture("reconnect.pcap");
    let retrans: Vec<Value> = json_lines(&["anomalies", "--json", &p])
        .into_iter()
        .filter(|l| l["kind"] == "retransmission")
        .collect();
    assert_eq!(retrans.len(), 6);
    assert!(retrans
        .iter()
        .all(|l| l["count"] == 1 && l["first_frame"] == l["last_frame"]));
    // Two connections: the fact is told once for each.
    let reminv: Vec<u64> = json_lines(&["anomalies", "--json", &p])
        .iter()
        .filter(|l| l["kind"] == REMINV)
        .map(|l| l["count"].as_u64().unwrap())
        .collect();
    assert_eq!(reminv, [6, 5]);
}

#[test]
fn ignore_changes_the_report_and_the_metrics_not_the_exit_status() {
    let p = capture("parallel.pcap");
    let plain = output(&["report", &p]);
    let ignored = output(&["report", "--ignore", REMINV, &p]);
    assert_eq!(plain.status.code(), Some(0));
    assert_eq!(
        ignored.status.code(),
        plain.status.code(),
        "findings never set the status"
    );
    let (plain, ignored) = (
        String::from_utf8(plain.stdout).unwrap(),
        String::from_utf8(ignored.stdout).unwrap(),
    );
    assert!(plain.contains(&format!("  {REMINV} (error")), "{plain}");
    assert!(
        !ignored.contains(&format!("  {REMINV} (error")),
        "{ignored}"
    );
    assert!(
        ignored.contains(&format!("480 acknowledged findings hidden ({REMINV})")),
        "{ignored}"
    );
    let total = metric(&p, "rdma_anomalies_total", &["--ignore", REMINV]);
    let acked = metric(
        &p,
        "rdma_anomalies_acknowledged_total",
        &["--ignore", REMINV],
    );
    assert_eq!((total[REMINV], acked[REMINV]), (0, 480));
    assert!(
        metric(&p, "rdma_anomalies_acknowledged_total", &[]).is_empty(),
        "no acks, no family"
    );
    // JSON keeps them, marked.
    let doc: Value =
        serde_json::from_str(&run(&["report", "--json", "--ignore", REMINV, &p])).unwrap();
    let row = doc["anomalies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kind"] == REMINV)
        .unwrap();
    assert_eq!(
        (row["count"].as_u64(), row["acknowledged"].as_bool()),
        (Some(480), Some(true))
    );
    let lines = json_lines(&["anomalies", "--json", "--ignore", REMINV, &p]);
    assert!(lines
        .iter()
        .all(|l| l["acknowledged"] == (l["kind"] == REMINV)));
    let out = output(&["anomalies", "--ignore", REMINV, &p]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains(REMINV));
    assert!(String::from_utf8_lossy(&out.stderr).contains("480 acknowledged findings hidden"));
}

#[test]
fn an_ack_file_can_name_one_connection() {
    let p = capture("reconnect.pcap");
    let ack = scratch("one-connection.ack");
    std::fs::write(
        &ack,
        format!("# c1 is the old mount\n{REMINV} c1  # known\n"),
    )
    .unwrap();
    let ack_s = ack.display().to_string();
    let lines = json_lines(&["anomalies", "--json", "--ack", &ack_s, &p]);
    let marks: Vec<(String, bool)> = lines
        .iter()
        .filter(|l| l["kind"] == REMINV)
        .map(|l| {
            (
                l["connection"].as_str().unwrap().into(),
                l["acknowledged"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(marks, [("c1".into(), true), ("c2".into(), false)]);
    let text = run(&["report", "--ack", &ack_s, &p]);
    assert!(
        text.contains(&format!("6 acknowledged findings hidden ({REMINV})")),
        "{text}"
    );
    assert!(
        text.contains(&format!("  {REMINV} (error, RFC 8797 4.1): 5 ")),
        "{text}"
    );
    cleanup(&ack);
}

#[test]
fn ack_file_errors_name_the_file_and_line() {
    let p = capture("reconnect.pcap");
    let ack = scratch("bad.ack");
    std::fs::write(&ack, "# fine\nnak\nretransmision\n").unwrap();
    let ack_s = ack.display().to_string();
    for cmd in ["report", "anomalies", "transactions", "open"] {
        let out = output(&[cmd, "--ack", &ack_s, &p]);
        assert_eq!(out.status.code(), Some(2), "{cmd}: a usage error");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!(
                "{ack_s}:3: unknown kind `retransmision`; did you mean `retransmission`?"
            )),
            "{cmd}: {err}"
        );
        assert!(out.stdout.is_empty(), "{cmd}: nothing ran");
    }
    std::fs::write(&ack, "nak c1 extra\n").unwrap();
    let err = output(&["report", "--ack", &ack_s, &p]).stderr;
    assert!(String::from_utf8_lossy(&err).contains(":1: unexpected `extra`"));
    let out = output(&["report", "--ignore", "nak,credit_overun", &p]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("did you mean `credit_overrun`?"));
    let out = output(&["transactions", "--ignore", "nak", &p]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "transactions lists no findings to hide"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("use them with report, anomalies or open")
    );
    let missing = output(&["report", "--ack", "/nonexistent/acks", &p]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr)
        .contains("--ack /nonexistent/acks: cannot read it"));
    cleanup(&ack);
}
