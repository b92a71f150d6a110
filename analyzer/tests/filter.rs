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

/// A severity's place in the language's order (`info` < `warning` < `error`).
fn rank(s: &str) -> Option<usize> {
    ["info", "warning", "error"].iter().position(|x| *x == s)
}

/// Whether a record is one a filter keeps, written over the JSON lines.
type Keep = Box<dyn Fn(&Value) -> bool>;

/// A transaction's latency in µs, when answered.
fn latency(t: &Value) -> Option<f64> {
    t["latency_us"].as_f64()
}

/// Each operator of `docs/filters.md`'s syntax table, in each of its
/// spellings, through the real binary: `transactions --json --filter`
/// keeps exactly what the same selection keeps of the unfiltered lines.
#[test]
fn every_operator_and_spelling_keeps_what_it_says() {
    let p = parallel();
    let all = json_lines(&["transactions", "--json", &p]);
    let x = all
        .iter()
        .find(|t| t["chunks"].as_array().is_some_and(|c| !c.is_empty()))
        .expect("a transaction with chunks");
    let xid = x["xid"].as_u64().expect("xid");
    let handle = x["chunks"][0]["handle"]
        .as_str()
        .expect("handle")
        .to_string();
    let has_handle = move |t: &Value| {
        t["chunks"]
            .as_array()
            .is_some_and(|c| c.iter().any(|s| s["handle"] == handle.as_str()))
            || t["remote_invalidated_rkey"] == handle.as_str()
    };
    // latency in ms minus `v`, NaN when unanswered: NaN fails every
    // comparison, as unknown never matches in the language.
    let ms = |v: f64| move |t: &Value| latency(t).map(|l| l / 1000.0).map_or(f64::NAN, |l| l) - v;
    let cases: Vec<(String, Keep)> = vec![
        (
            format!("xid == {xid:#x}"),
            Box::new(move |t| t["xid"] == xid),
        ),
        (format!("xid = {xid}"), Box::new(move |t| t["xid"] == xid)),
        (
            format!("xid eq {xid:#x}"),
            Box::new(move |t| t["xid"] == xid),
        ),
        (
            "proc != WRITE".into(),
            Box::new(|t| t["procedure"] != "WRITE"),
        ),
        (
            "proc ne WRITE".into(),
            Box::new(|t| t["procedure"] != "WRITE"),
        ),
        (
            "latency < 500us".into(),
            Box::new(move |t| ms(0.5)(t) < 0.0),
        ),
        (
            "latency lt 0.5ms".into(),
            Box::new(move |t| ms(0.5)(t) < 0.0),
        ),
        ("bytes <= 4KiB".into(), Box::new(|t| bytes(t) <= 4096)),
        ("bytes le 4096B".into(), Box::new(|t| bytes(t) <= 4096)),
        (
            "latency > 0.1s".into(),
            Box::new(move |t| ms(100.0)(t) > 0.0),
        ),
        // Without a unit, latency is in µs as in the JSON.
        (
            "latency gt 100000".into(),
            Box::new(move |t| ms(100.0)(t) > 0.0),
        ),
        ("bytes >= 4KiB".into(), Box::new(|t| bytes(t) >= 4096)),
        ("bytes ge 4k".into(), Box::new(|t| bytes(t) >= 4000)),
        (
            "proc contains rea".into(),
            Box::new(|t| label(t).contains("REA")),
        ),
        (
            "proc matches REA".into(),
            Box::new(|t| label(t).contains("REA")),
        ),
        ("latency".into(), Box::new(|t| latency(t).is_some())),
        (
            "READ && latency > 20ms".into(),
            Box::new(move |t| label(t).contains("READ") && ms(20.0)(t) > 0.0),
        ),
        (
            "READ and latency > 20ms".into(),
            Box::new(move |t| label(t).contains("READ") && ms(20.0)(t) > 0.0),
        ),
        (
            "READ & latency > 20ms".into(),
            Box::new(move |t| label(t).contains("READ") && ms(20.0)(t) > 0.0),
        ),
        (
            "proc == WRITE || proc == GETATTR".into(),
            Box::new(|t| t["procedure"] == "WRITE" || t["procedure"] == "GETATTR"),
        ),
        (
            "proc == WRITE or proc == GETATTR".into(),
            Box::new(|t| t["procedure"] == "WRITE" || t["procedure"] == "GETATTR"),
        ),
        (
            "WRITE | GETATTR".into(),
            Box::new(|t| label(t).contains("WRITE") || label(t).contains("GETATTR")),
        ),
        ("!READ".into(), Box::new(|t| !label(t).contains("READ"))),
        ("not READ".into(), Box::new(|t| !label(t).contains("READ"))),
        // && binds tighter than ||; parentheses change that.
        (
            "READ || WRITE && latency > 50ms".into(),
            Box::new(move |t| {
                label(t).contains("READ") || (label(t).contains("WRITE") && ms(50.0)(t) > 0.0)
            }),
        ),
        (
            "(READ || WRITE) && latency > 50ms".into(),
            Box::new(move |t| {
                (label(t).contains("READ") || label(t).contains("WRITE")) && ms(50.0)(t) > 0.0
            }),
        ),
        (
            "\"GETATTR\"".into(),
            Box::new(|t| label(t).contains("GETATTR")),
        ),
        (
            "rkey == ".to_string() + x["chunks"][0]["handle"].as_str().unwrap(),
            Box::new(has_handle),
        ),
    ];
    let mut counts = Vec::new();
    for (filter, keep) in &cases {
        let want: Vec<&Value> = all.iter().filter(|t| keep(t)).collect();
        let got = json_lines(&["transactions", "--json", "--filter", filter, &p]);
        let key = |t: &Value| t["call_frame"].as_u64();
        assert_eq!(
            got.iter().map(key).collect::<Vec<_>>(),
            want.iter().map(|t| key(t)).collect::<Vec<_>>(),
            "{filter}"
        );
        counts.push((filter.clone(), want.len()));
    }
    // Each case selects something, and (but presence on a capture where
    // every call was answered) not everything: none passes by accident.
    for (filter, n) in &counts {
        assert!(*n > 0, "{filter} keeps nothing: {counts:?}");
        assert!(
            *n < all.len()
                || filter == "latency"
                || filter.starts_with("proc !=")
                || filter.starts_with("proc ne"),
            "{filter} keeps everything: {counts:?}"
        );
    }
    let n = |f: &str| counts.iter().find(|(c, _)| c == f).map(|c| c.1);
    assert_ne!(
        n("READ || WRITE && latency > 50ms"),
        n("(READ || WRITE) && latency > 50ms"),
        "the parentheses must matter on this capture"
    );
}

/// The severity order and `kind` on findings of many kinds and all three
/// severities (`synth --inject all`), through `anomalies --json --filter`.
#[test]
fn severity_and_kind_operators_on_findings() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("all.pcap");
    let f = file.to_string_lossy().into_owned();
    run(&["synth", "-o", &f, "--inject", "all"]);
    let all = json_lines(&["anomalies", "--json", &f]);
    let count = |v: &[Value], keep: &dyn Fn(&Value) -> bool| -> u64 {
        v.iter()
            .filter(|a| keep(a))
            .map(|a| a["count"].as_u64().expect("count"))
            .sum()
    };
    let sev = |a: &Value| rank(a["severity"].as_str().unwrap_or_default());
    let kind = all[0]["kind"].as_str().expect("kind").to_string();
    let (k1, k2, k3) = (kind.clone(), kind.clone(), kind.clone());
    let (is, is_not) = (format!("kind == {kind}"), format!("kind != {kind}"));
    let cases: Vec<(&str, Keep)> = vec![
        (
            "severity >= warning",
            Box::new(move |a| sev(a) >= rank("warning")),
        ),
        (
            "severity > warning",
            Box::new(move |a| sev(a) > rank("warning")),
        ),
        (
            "severity < warning",
            Box::new(move |a| sev(a) < rank("warning")),
        ),
        (
            "severity <= warning",
            Box::new(move |a| sev(a) <= rank("warning")),
        ),
        (
            "severity == info",
            Box::new(move |a| sev(a) == rank("info")),
        ),
        (
            "severity != error",
            Box::new(move |a| sev(a) != rank("error")),
        ),
        (&is, Box::new(move |a| a["kind"] == k1.as_str())),
        (&is_not, Box::new(move |a| a["kind"] != k2.as_str())),
        // A kind's name alone is `kind == name`.
        (&kind, Box::new(move |a| a["kind"] == k3.as_str())),
    ];
    for (filter, keep) in cases {
        let want = count(&all, &keep);
        let got = json_lines(&["anomalies", "--json", "--filter", filter, &f]);
        assert!(want > 0, "{filter}: the capture has some");
        assert_eq!(count(&got, &|_| true), want, "{filter}");
        assert!(got.iter().all(&keep), "{filter}");
    }
}

/// `frames --filter` through the binary: each field its frames have
/// (`xid`, `qpn`, `opcode`, `frame`, `rkey`, `peer`) keeps exactly the frames the same
/// selection keeps of the unfiltered `frames --json`; a field only the
/// correlation engine knows is refused with the list of those it has.
#[test]
fn frames_filter_keeps_what_the_same_selection_keeps() {
    let ddp = Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures/v3-ddp.pcap");
    let p = ddp.to_str().expect("path");
    let all = json_lines(&["frames", "--json", p]);
    let xid = all
        .iter()
        .find_map(|f| f["rpcrdma"]["xid"].as_u64())
        .expect("an RPC-over-RDMA frame");
    let rkey = all
        .iter()
        .find_map(|f| f["reth"]["r_key"].as_str())
        .expect("a RETH")
        .to_string();
    let cases: Vec<(String, Keep)> = vec![
        (
            format!("xid == {xid:#x}"),
            Box::new(move |f| f["rpcrdma"]["xid"] == xid),
        ),
        ("qpn == 20".into(), Box::new(|f| f["bth"]["dest_qp"] == 20)),
        (
            "opcode contains \"RDMA WRITE\"".into(),
            Box::new(|f| {
                f["bth"]["opcode_name"]
                    .as_str()
                    .is_some_and(|o| o.contains("RDMA WRITE"))
            }),
        ),
        (
            "frame >= 1000".into(),
            Box::new(|f| f["frame"].as_u64() >= Some(1000)),
        ),
        (
            format!("rkey == {rkey}"),
            Box::new(move |f| f["reth"]["r_key"] == rkey.as_str()),
        ),
        (
            "peer == 10.99.0.2 && !qpn == 20".into(),
            Box::new(|f| {
                // `!` keeps what its operand cannot decide: the frames
                // without a BTH (TCP to the portmapper) have no QPN.
                (f["ip"]["src"] == "10.99.0.2" || f["ip"]["dst"] == "10.99.0.2")
                    && f["bth"]["dest_qp"] != 20
            }),
        ),
    ];
    for (filter, keep) in &cases {
        let want: Vec<u64> = all
            .iter()
            .filter(|f| keep(f))
            .filter_map(|f| f["frame"].as_u64())
            .collect();
        assert!(
            !want.is_empty() && want.len() < all.len(),
            "{filter}: {} of {}",
            want.len(),
            all.len()
        );
        let got: Vec<u64> = json_lines(&["frames", "--json", "--filter", filter, p])
            .iter()
            .filter_map(|f| f["frame"].as_u64())
            .collect();
        assert_eq!(got, want, "{filter}");
    }
    let out = output(&["frames", "--filter", "latency > 1ms", p]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("latency") && err.contains("xid"), "{err}");
}
