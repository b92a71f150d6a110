//! The JSON Schema of every document and line the tool writes lives in
//! `schema/`, generated from the output types. These tests keep it current
//! (`UPDATE_SCHEMA=1 cargo test --test schema` rewrites it) and check that
//! what the binary writes on every bundled capture follows it.

use std::path::{Path, PathBuf};
use std::process::Command;

use rdma_analyzer::output::live_counters::CountersLine;
use rdma_analyzer::output::schema::{AnomalyLine, DiagnosisLine, ReportDoc, TransactionLine};
use rdma_analyzer::sources::live::LiveStats;
use rdma_dissectors::view::FrameView;
use schemars::{schema_for, Schema};
use serde_json::Value;

#[path = "common/prereq.rs"]
mod prereq;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../schema")
}

/// (file name, schema) of every document.
fn schemas() -> Vec<(&'static str, Schema)> {
    vec![
        ("frame.schema.json", schema_for!(FrameView<'static>)),
        ("transaction.schema.json", schema_for!(TransactionLine)),
        ("anomaly.schema.json", schema_for!(AnomalyLine)),
        ("diagnosis-line.schema.json", schema_for!(DiagnosisLine)),
        ("report.schema.json", schema_for!(ReportDoc)),
        ("live-stats.schema.json", schema_for!(LiveStats)),
        ("counters.schema.json", schema_for!(CountersLine)),
    ]
}

fn pretty(s: &Schema) -> String {
    let mut t = serde_json::to_string_pretty(s).expect("schema as JSON");
    t.push('\n');
    t
}

#[test]
fn the_committed_schema_is_current() {
    let update = std::env::var_os("UPDATE_SCHEMA").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for (name, schema) in schemas() {
        let path = dir().join(name);
        let want = pretty(&schema);
        if update {
            std::fs::create_dir_all(dir()).expect("schema/");
            std::fs::write(&path, &want).expect("write schema");
            continue;
        }
        if std::fs::read_to_string(&path).ok().as_deref() != Some(want.as_str()) {
            stale.push(name);
        }
    }
    assert!(
        stale.is_empty(),
        "schema/{stale:?} differ from the output types: run UPDATE_SCHEMA=1 cargo test -p rdma-analyzer --test schema, and review the diff"
    );
}

fn validator(name: &str) -> jsonschema::Validator {
    let (_, schema) = schemas()
        .into_iter()
        .find(|(n, _)| *n == name)
        .expect("a schema");
    let v = serde_json::to_value(&schema).expect("schema as a value");
    jsonschema::validator_for(&v).expect("a valid schema")
}

/// Every object of `out` (one document, or JSON Lines) follows `name`.
fn check(name: &str, what: &str, out: &[u8], lines: bool) -> usize {
    let v = validator(name);
    let docs: Vec<Value> = if lines {
        out.split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).expect("a JSON line"))
            .collect()
    } else {
        vec![serde_json::from_slice(out).expect("a JSON document")]
    };
    for d in &docs {
        let errors: Vec<String> = v.iter_errors(d).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{what}: {errors:?}\n{d}");
        // Version 2 wrote big numbers as strings; the live stats hold none.
        let want = if name == "live-stats.schema.json" {
            1
        } else {
            2
        };
        assert_eq!(d["schema_version"], want, "{what}");
        let mut lossy = Vec::new();
        beyond_a_double(d, "", &mut lossy);
        assert!(
            lossy.is_empty(),
            "{what}: integers a double-precision JSON reader (jq 1.6, JavaScript) would change: {lossy:?}"
        );
    }
    docs.len()
}

/// The paths of the integers in `v` above 2^53, which a reader that parses
/// every number as a double (jq 1.6, JavaScript, python's json with
/// `parse_int=float`) rounds: what must be a string instead.
fn beyond_a_double(v: &Value, path: &str, out: &mut Vec<String>) {
    const EXACT: u64 = 1 << 53;
    match v {
        Value::Number(n) => {
            let big = n.as_u64().is_some_and(|x| x > EXACT)
                || n.as_i64().is_some_and(|x| x.unsigned_abs() > EXACT);
            if big {
                out.push(format!("{path} = {n}"));
            }
        }
        Value::Array(a) => a
            .iter()
            .for_each(|x| beyond_a_double(x, &format!("{path}[]"), out)),
        Value::Object(o) => o
            .iter()
            .for_each(|(k, x)| beyond_a_double(x, &format!("{path}.{k}"), out)),
        _ => {}
    }
}

#[test]
fn the_precision_walk_finds_a_big_integer_anywhere() {
    let mut out = Vec::new();
    let d = serde_json::json!({"a": [{"ts_ns": 1_795_217_646_495_692_000u64}], "b": 9_007_199_254_740_992u64});
    beyond_a_double(&d, "", &mut out);
    assert_eq!(out, vec![".a[].ts_ns = 1795217646495692000"]);
}

#[test]
fn every_output_on_every_bundled_capture_follows_the_schema() {
    let mut checked = 0;
    for pcap in prereq::bundled_pcaps() {
        let p = pcap.to_str().expect("utf-8 path");
        for (args, schema, lines) in [
            (vec!["report", "--json", p], "report.schema.json", false),
            (
                vec!["transactions", "--json", p],
                "transaction.schema.json",
                true,
            ),
            (vec!["anomalies", "--json", p], "anomaly.schema.json", true),
            (vec!["frames", "--json", p], "frame.schema.json", true),
        ] {
            let out = Command::new(BIN).args(&args).output().expect("run");
            assert!(out.status.success(), "{args:?}");
            checked += check(schema, &format!("{args:?}"), &out.stdout, lines);
        }
    }
    // iWARP frames (MPA, FPDUs, continuations) from the real siw captures.
    let iwarp = Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures/iwarp");
    for pcap in std::fs::read_dir(&iwarp)
        .expect("captures/iwarp/")
        .flatten()
    {
        let pcap = pcap.path();
        if pcap.extension().is_none_or(|e| e != "pcap") {
            continue;
        }
        let args = ["frames", "--json", pcap.to_str().expect("utf-8 path")];
        let out = Command::new(BIN).args(args).output().expect("run");
        assert!(out.status.success(), "{args:?}");
        checked += check("frame.schema.json", &format!("{args:?}"), &out.stdout, true);
    }
    assert!(checked > 10_000, "{checked}");
}

/// The schema is strict where it can be: an unknown key in a line is an
/// error, so the schema cannot silently fall behind what is written.
#[test]
fn the_schema_refuses_keys_it_does_not_describe() {
    let v = validator("anomaly.schema.json");
    let mut good = serde_json::json!({
        "schema_version": 2, "kind": "retransmission", "severity": "info", "rfc": "IBA 9.7",
        "frames": [1], "connection": "c1", "xid": 1, "origin": "wire", "message": "m",
        "harm": "performance", "at_fault": "fabric", "action": "a", "known_behaviour": null,
        "count": 1, "first_frame": 1, "last_frame": 1, "first_ts_ns": null, "last_ts_ns": null,
        "xids": [1], "acknowledged": false
    });
    // A folded finding: a count, a span of frames and times, its first XIDs.
    let mut folded = good.clone();
    folded["count"] = serde_json::json!(480);
    folded["last_frame"] = serde_json::json!(7683);
    folded["first_ts_ns"] = serde_json::json!("1795217699352806000");
    folded["last_ts_ns"] = serde_json::json!("1795217707564774000");
    folded["xids"] = serde_json::json!([1, 2, 3]);
    folded["acknowledged"] = serde_json::json!(true);
    assert!(v.is_valid(&folded));
    folded["count"] = serde_json::json!("480");
    assert!(!v.is_valid(&folded), "a count is a number");
    assert!(
        v.is_valid(&good),
        "{:?}",
        v.iter_errors(&good)
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
    );
    good["surprise"] = serde_json::json!(1);
    assert!(!v.is_valid(&good));
}

#[test]
fn live_stats_follow_the_schema() {
    let doc = serde_json::to_vec(&LiveStats::default()).expect("stats as JSON");
    check(
        "live-stats.schema.json",
        "LiveStats::default()",
        &doc,
        false,
    );
}

/// `live`'s `counters` records, from the binary: a capture of `lo` beside
/// a mountstats and a sysfs tree whose counts pass 2^53, each record
/// checked against its schema and for integers a double would round.
#[test]
fn live_counter_records_follow_the_schema_and_stay_exact() {
    if !prereq::root("live -i lo needs CAP_NET_RAW") {
        return;
    }
    let d = tempfile::tempdir().expect("tempdir");
    let big = (1u64 << 53) + 1;
    let ms = d.path().join("mountstats");
    let mut xprt = vec!["7".to_string(); 27];
    xprt[13] = big.to_string();
    std::fs::write(
        &ms,
        format!(
            "device 10.99.0.1:/srv/export mounted on /mnt/lab with fstype nfs statvers=1.1\n\topts:\trw,vers=3,proto=rdma\n\txprt:\trdma {}\n\tper-op statistics\n\t        READ: 5 5 0 {big} 4204544 27 2188 2231 0\n",
            xprt.join(" ")
        ),
    )
    .expect("mountstats");
    let hw = d.path().join("sys/rxe0/ports/1/hw_counters");
    std::fs::create_dir_all(&hw).expect("sysfs");
    std::fs::write(hw.join("rcvd_seq_err"), format!("{big}\n")).expect("counter");
    let out = d.path().join("live.jsonl");
    let status = Command::new(BIN)
        .args([
            "live",
            "-i",
            "lo",
            "--duration",
            "1.5",
            "--counters-interval",
            "0.2",
        ])
        .arg("--mountstats-file")
        .arg(&ms)
        .arg("--sysfs-root")
        .arg(d.path().join("sys"))
        .arg("--json-out")
        .arg(&out)
        .stderr(std::process::Stdio::null())
        .status()
        .expect("live");
    assert!(status.success());
    let text = std::fs::read(&out).expect("the records");
    let counters: Vec<u8> = text
        .split(|b| *b == b'\n')
        .filter(|l| l.starts_with(br#"{"schema_version":2,"type":"counters""#))
        .flat_map(|l| l.iter().copied().chain([b'\n']))
        .collect();
    let n = check("counters.schema.json", "live counters", &counters, true);
    assert!(n >= 2, "{n} counter records");
    // The numbers as a doubles-only reader (jq 1.6, JavaScript) has them:
    // every count still reads back whole.
    let first: Value =
        serde_json::from_slice(counters.split(|b| *b == b'\n').next().unwrap()).expect("a record");
    let as_doubles = doubles_only(&first);
    let t = &as_doubles["mounts"][0]["transports"][0]["fields"]["total_rdma_request"];
    assert_eq!(t["total"].as_str().and_then(|s| s.parse().ok()), Some(big));
    let read = &as_doubles["mounts"][0]["ops"][0]["bytes_sent"];
    assert_eq!(
        read["total"].as_str().and_then(|s| s.parse().ok()),
        Some(big)
    );
    let dev = &as_doubles["devices"][0];
    assert_eq!(
        dev["total"].as_str().and_then(|s| s.parse().ok()),
        Some(big)
    );
    // As a number it would not have: 2^53 + 1 is not a double.
    assert_ne!(big as f64 as u64, big);
}

/// `v` with every number made a double, as a reader without integers
/// parses it.
fn doubles_only(v: &Value) -> Value {
    match v {
        Value::Number(n) => n
            .as_f64()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::Null, Value::Number),
        Value::Array(a) => Value::Array(a.iter().map(doubles_only).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), doubles_only(x)))
                .collect(),
        ),
        other => other.clone(),
    }
}
