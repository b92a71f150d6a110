//! `--filter` through the real binary on `captures/parallel.pcap`: a
//! filtered report is computed on what the filter keeps (its counts equal
//! the kept transactions, found here independently from the unfiltered
//! `transactions --json`), `anomalies --filter READ` gives the findings of
//! READ transactions, the JSON records the filter, and a mistake is a usage
//! error that says where and what was meant.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

fn parallel() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../captures/parallel.pcap")
        .to_string_lossy()
        .into_owned()
}

fn output(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("run the binary")
}

fn run(args: &[&str]) -> String {
    let out = output(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn json_lines(args: &[&str]) -> Vec<Value> {
    run(args)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

fn label(t: &Value) -> String {
    format!(
        "{} {}",
        t["program_name"].as_str().unwrap_or(""),
        t["procedure"].as_str().unwrap_or("")
    )
    .to_ascii_uppercase()
}

fn bytes(t: &Value) -> u64 {
    t["chunks"].as_array().map_or(0, |c| {
        c.iter().filter_map(|s| s["bytes_moved"].as_u64()).sum()
    })
}

/// (filter, the same selection written over the unfiltered JSON lines).
type Case = (&'static str, fn(&Value) -> bool);

const CASES: &[Case] = &[
    ("READ", |t| label(t).contains("READ")),
    ("c1 && latency > 20ms", |t| {
        t["connection"] == "c1" && t["latency_us"].as_f64().is_some_and(|l| l > 20_000.0)
    }),
    ("proc == WRITE || bytes >= 4KiB", |t| {
        t["procedure"] == "WRITE" || bytes(t) >= 4096
    }),
    ("!READ && latency <= 1ms", |t| {
        !label(t).contains("READ") && t["latency_us"].as_f64().is_some_and(|l| l <= 1000.0)
    }),
    ("mode == write_chunks", |t| {
        t["call_transfer"] == "write_chunks" || t["reply_transfer"] == "write_chunks"
    }),
];

#[test]
fn a_filtered_report_counts_what_the_filter_keeps() {
    let p = parallel();
    let all = json_lines(&["transactions", "--json", &p]);
    assert!(all.len() > 500, "parallel.pcap has its transactions");
    for (filter, keep) in CASES {
        let want = all.iter().filter(|t| keep(t)).count() as u64;
        assert!(
            want > 0 && want < all.len() as u64,
            "{filter}: {want} of {}",
            all.len()
        );
        let doc: Value = serde_json::from_str(&run(&["report", "--json", "--filter", filter, &p]))
            .expect("report JSON");
        assert_eq!(doc["filter"]["expression"], *filter);
        assert_eq!(doc["filter"]["transactions"], want, "{filter}");
        // The tables are the kept transactions, not the capture's.
        let timed: u64 = doc["response_times"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["latency"]["count"].as_u64().unwrap())
            .sum();
        let untimed: u64 = ["unanswered", "latency_unknown"]
            .iter()
            .flat_map(|k| doc[k].as_object().unwrap().values())
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(timed + untimed, want, "{filter}");
        let lines = json_lines(&["transactions", "--json", "--filter", filter, &p]);
        assert_eq!(lines.len() as u64, want, "{filter}: transactions --filter");
    }
}

#[test]
fn anomalies_of_read_are_the_findings_of_read_transactions() {
    let p = parallel();
    // Each transaction names the kinds found on it: the occurrences a
    // filtered `anomalies` must count, however they fold.
    let want: u64 = json_lines(&["transactions", "--json", &p])
        .iter()
        .filter(|t| label(t).contains("READ"))
        .map(|t| t["anomalies"].as_array().unwrap().len() as u64)
        .sum();
    let got = json_lines(&["anomalies", "--json", "--filter", "READ", &p]);
    assert!(!got.is_empty(), "the issue counts 288 READs with an error");
    let occurrences: u64 = got.iter().map(|a| a["count"].as_u64().unwrap()).sum();
    assert_eq!(occurrences, want);
    assert_eq!(want, 288);
    let doc: Value =
        serde_json::from_str(&run(&["report", "--json", "--filter", "READ", &p])).unwrap();
    let counted: u64 = doc["anomalies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["count"].as_u64().unwrap())
        .sum();
    assert_eq!(
        counted, want,
        "the report keeps the findings of what it keeps"
    );
    assert_eq!(doc["filter"]["findings"], want);
}

#[test]
fn the_report_says_it_was_filtered() {
    let p = parallel();
    let doc: Value = serde_json::from_str(&run(&["report", "--json", &p])).unwrap();
    assert!(doc["filter"].is_null(), "unfiltered: null");
    let text = run(&["report", "--filter", "c1 && READ", &p]);
    assert!(text.contains("\nfilter: c1 && READ\n"), "{text}");
    let none = run(&["report", "--filter", "c7", &p]);
    assert!(none.contains("kept 0 transactions"), "{none}");
    assert!(!none.contains("\n  c1 "), "no connection is kept: {none}");
}

#[test]
fn the_old_one_term_filters_keep_working() {
    let p = parallel();
    let all = json_lines(&["transactions", "--json", &p]);
    let xid = all[3]["xid"].as_u64().unwrap();
    let one = json_lines(&[
        "transactions",
        "--json",
        "--filter",
        &format!("{xid:#x}"),
        &p,
    ]);
    assert!(!one.is_empty() && one.iter().all(|t| t["xid"] == xid));
    let either = json_lines(&["transactions", "--json", "--filter", "c1|c2", &p]);
    assert_eq!(either.len(), all.len(), "parallel.pcap has one connection");
    let kind = json_lines(&[
        "anomalies",
        "--json",
        "--filter",
        "remote_invalidation_not_negotiated",
        &p,
    ]);
    assert!(!kind.is_empty());
}

#[test]
fn a_mistake_is_a_usage_error_that_says_where_and_what_was_meant() {
    let p = parallel();
    for (filter, says) in [
        (
            "latncy > 10ms",
            "column 1: unknown field `latncy`; did you mean `latency`?",
        ),
        (
            "c1 && REED",
            "column 7: unknown field, kind or procedure `REED`; did you mean `READ`?",
        ),
        ("kind == credit_overun", "did you mean `credit_overrun`?"),
        ("(c1", "column 1: this `(` is never closed"),
    ] {
        for cmd in ["report", "transactions", "anomalies"] {
            let out = output(&[cmd, "--filter", filter, &p]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{cmd} {filter}: {err}");
            assert!(err.contains(says), "{cmd} {filter}: {err}");
        }
    }
}
