//! `export`'s Parquet dataset: its columns are the JSON Schema's keys with
//! the right types, its row groups stream, a capture that cannot be read
//! whole is reported without losing the others, and real query engines
//! (DuckDB, and Spark in local mode) reading the dataset of every bundled
//! capture compute the per-procedure counts, p50 and p99 that `report`
//! prints for each capture.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use arrow_schema::{DataType, Field};
use rdma_analyzer::output::dataset;
use serde_json::Value;

#[path = "common/exact.rs"]
mod exact;
#[path = "common/prereq.rs"]
mod prereq;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rdma-fleet-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn json_schema(name: &str) -> Value {
    let p = repo().join("schema").join(format!("{name}.schema.json"));
    serde_json::from_str(&std::fs::read_to_string(&p).expect("schema file")).expect("JSON")
}

/// The object schemas `node` may be (through `$ref`, `anyOf`, `oneOf`,
/// array items), null left out.
fn objects<'a>(root: &'a Value, node: &'a Value) -> Vec<&'a Value> {
    if let Some(r) = node.get("$ref").and_then(Value::as_str) {
        let name = r.trim_start_matches("#/$defs/");
        return objects(root, &root["$defs"][name]);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(alts) = node.get(key).and_then(Value::as_array) {
            return alts.iter().flat_map(|a| objects(root, a)).collect();
        }
    }
    if let Some(items) = node.get("items") {
        return objects(root, items);
    }
    if node.get("properties").is_some() {
        return vec![node];
    }
    Vec::new()
}

/// Every column (and nested field) of `fields` missing from the JSON
/// schema `node` describes, as paths.
fn not_in_schema(root: &Value, node: &Value, fields: &[&Field], path: &str, out: &mut Vec<String>) {
    let objs = objects(root, node);
    for f in fields {
        let here = format!("{path}{}", f.name());
        let Some(sub) = objs.iter().find_map(|o| o["properties"].get(f.name())) else {
            out.push(here);
            continue;
        };
        let inner = match f.data_type() {
            DataType::List(item) => item.data_type(),
            t => t,
        };
        if let DataType::Struct(children) = inner {
            let children: Vec<&Field> = children.iter().map(|c| c.as_ref()).collect();
            not_in_schema(root, sub, &children, &format!("{here}."), out);
        }
    }
}

#[test]
fn columns_are_the_json_schemas_keys_and_times_are_timestamps() {
    for (table, schema) in dataset::schemas().unwrap() {
        let (doc, node) = match table {
            "transactions" => (json_schema("transaction"), None),
            "anomalies" => (json_schema("anomaly"), None),
            "frames" => (json_schema("frame"), None),
            "connections" => (json_schema("report"), Some("ConnectionView")),
            "diagnosis" => (json_schema("report"), Some("Cause")),
            other => panic!("a table the test does not know: {other}"),
        };
        let node = match node {
            Some(def) => doc["$defs"][def].clone(),
            None => doc.clone(),
        };
        // A connection (or cause) row is one of a report's connections (or
        // causes): the report's schema_version is the one it follows.
        let fields: Vec<&Field> = schema
            .fields()
            .iter()
            .map(|f| f.as_ref())
            .filter(|f| {
                !(matches!(table, "connections" | "diagnosis") && f.name() == "schema_version")
            })
            .collect();
        let mut missing = Vec::new();
        not_in_schema(&doc, &node, &fields, "", &mut missing);
        assert!(
            missing.is_empty(),
            "{table}: columns the JSON schema does not have: {missing:?}"
        );
        for f in schema.fields() {
            let is_ts = matches!(f.data_type(), DataType::Timestamp(_, _));
            assert_eq!(
                f.name().ends_with("ts_ns"),
                is_ts,
                "{table}.{}: times since the epoch are timestamps, and only they",
                f.name()
            );
            assert!(
                !["host", "capture", "date"].contains(&f.name().as_str()),
                "{table}.{}: partition values belong in the paths only",
                f.name()
            );
        }
    }
}

fn export(out: &Path, extra: &[&str], files: &[PathBuf]) -> std::process::Output {
    Command::new(BIN)
        .arg("export")
        .arg("--out")
        .arg(out)
        .args(extra)
        .args(files)
        .output()
        .expect("running export")
}

fn parquet_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn row_groups_stream_and_files_match_the_declared_schema() {
    let dir = temp_dir("rowgroups");
    let capture = repo().join("captures/parallel.pcap");
    let o = export(
        &dir,
        &["--host", "h1", "--frames", "--row-group-rows", "100"],
        std::slice::from_ref(&capture),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let files = parquet_files(&dir);
    // No temporary file is left; every table has its partition.
    assert!(files
        .iter()
        .all(|f| f.extension().is_some_and(|e| e == "parquet")));
    let declared: BTreeMap<_, _> = dataset::schemas().unwrap().into_iter().collect();
    for table in ["transactions", "anomalies", "connections", "frames"] {
        let f = dir
            .join(table)
            .join("host=h1/capture=parallel/date=2026-11-20/part-0.parquet");
        let file = std::fs::File::open(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let b = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .expect("a Parquet file");
        assert_eq!(
            b.schema().fields(),
            declared[table].fields(),
            "{table}: the file's columns"
        );
        let rows = b.metadata().file_metadata().num_rows();
        let groups = b.metadata().num_row_groups() as i64;
        // 100 rows per row group at most: the writer flushed as it went.
        assert_eq!(groups, (rows + 99) / 100, "{table}: {rows} rows");
        if table == "transactions" {
            assert_eq!(rows, 1050, "parallel.pcap's transactions");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_damaged_capture_is_reported_and_the_others_exported() {
    let dir = temp_dir("damaged");
    let inputs = dir.join("in");
    std::fs::create_dir_all(&inputs).expect("dir");
    // A capture cut inside its last frame, a file that is no capture at all,
    // and a whole one.
    let whole = std::fs::read(repo().join("captures/v3-inline.pcap")).expect("capture");
    let cut = inputs.join("cut.pcap");
    std::fs::write(&cut, &whole[..whole.len() - 10]).expect("write");
    let junk = inputs.join("notes.pcap");
    std::fs::write(&junk, "these are notes, not a capture\n").expect("write");
    let good = repo().join("captures/v42-ddp.pcap");
    let out = dir.join("ds");
    let o = export(&out, &["--host", "h1"], &[cut.clone(), junk.clone(), good]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "exit status; stderr:\n{err}");
    assert!(
        err.contains("cut.pcap") && err.contains("notes.pcap"),
        "both named:\n{err}"
    );
    assert!(err.contains("2 of 3 captures"), "{err}");
    let txn = |c: &str| {
        out.join("transactions/host=h1")
            .join(format!("capture={c}"))
            .join("date=2026-11-20/part-0.parquet")
    };
    assert!(txn("v42-ddp").is_file(), "the whole capture was exported");
    assert!(
        txn("cut").is_file(),
        "what came before the damage was exported"
    );
    assert!(!out.join("transactions/host=h1/capture=notes").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn two_files_with_one_name_are_refused_before_anything_is_written() {
    let dir = temp_dir("samename");
    let copy = dir.join("v42-ddp.pcap");
    std::fs::copy(repo().join("captures/v42-ddp.pcap"), &copy).expect("copy");
    let out = dir.join("ds");
    let o = export(&out, &[], &[repo().join("captures/v42-ddp.pcap"), copy]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("capture=v42-ddp"), "{err}");
    assert!(!out.exists(), "nothing written");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `Transaction::procedure_label`, from the columns the query returns.
fn label(row: &Value) -> String {
    match (row["program_name"].as_str(), row["procedure"].as_str()) {
        (Some(p), Some(q)) => match (row["version"].as_u64(), row["minorversion"].as_u64()) {
            (Some(v), Some(m)) => format!("{p}v{v}.{m} {q}"),
            _ => format!("{p} {q}"),
        },
        (None, Some(q)) => q.to_string(),
        _ => match (row["program"].as_u64(), row["proc"].as_u64()) {
            (Some(p), Some(n)) => format!("prog {p} proc {n}"),
            _ => "?".to_string(),
        },
    }
}

fn report(capture: &Path) -> Value {
    let o = Command::new(BIN)
        .args(["report", "--json"])
        .arg(capture)
        .output()
        .expect("report");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("report JSON")
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .expect("a file name")
        .to_string_lossy()
        .into_owned()
}

type Key = (String, String, String, String);

#[test]
fn duckdb_and_spark_over_the_dataset_agree_with_report() {
    let python = repo().join("target/fleet-venv/bin/python");
    if !prereq::require(
        "DuckDB and PySpark in target/fleet-venv, and Java",
        python.is_file() && prereq::have_command("java", "-version"),
        "scripts/setup-fleet.sh installs them",
    ) {
        return;
    }
    let dir = temp_dir("engines");
    let captures = prereq::bundled_pcaps();
    let o = export(&dir, &["--host", "test-host"], &captures);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // What report says of each capture.
    let mut want_rt: BTreeMap<Key, (u64, f64, f64)> = BTreeMap::new();
    let mut want_unanswered: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut want_anomalies: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut want_dates = BTreeSet::new();
    for c in &captures {
        let r = report(c);
        let name = stem(c);
        for row in r["response_times"].as_array().expect("rows") {
            let l = &row["latency"];
            want_rt.insert(
                (
                    name.clone(),
                    row["procedure"].as_str().expect("label").to_string(),
                    row["call_transfer"].as_str().expect("mode").to_string(),
                    row["reply_transfer"].as_str().expect("mode").to_string(),
                ),
                (
                    l["count"].as_u64().expect("count"),
                    l["p50_us"].as_f64().expect("p50"),
                    l["p99_us"].as_f64().expect("p99"),
                ),
            );
        }
        for (label, n) in r["unanswered"].as_object().expect("unanswered") {
            want_unanswered.insert((name.clone(), label.clone()), n.as_u64().expect("n"));
        }
        for k in r["anomalies"].as_array().expect("anomalies") {
            want_anomalies.insert(
                (name.clone(), k["kind"].as_str().expect("kind").to_string()),
                k["count"].as_u64().expect("count"),
            );
        }
        let first = exact::num(&r["totals"]["first_ts_ns"]).expect("a first frame");
        want_dates.insert((name, dataset::utc_date(first)));
    }

    let q = Command::new(&python)
        .arg(repo().join("analyzer/tests/fleet/query.py"))
        .arg(&dir)
        .output()
        .expect("running the queries");
    assert!(
        q.status.success(),
        "the queries failed:\n{}",
        String::from_utf8_lossy(&q.stderr)
    );
    let got: Value = serde_json::from_slice(&q.stdout).expect("the queries' JSON");
    let mut by_engine = BTreeMap::new();
    for engine in ["duckdb", "spark"] {
        let e = &got[engine];
        let mut rt = BTreeMap::new();
        for row in e["response_times"].as_array().expect("rows") {
            let key = (
                row["capture"].as_str().expect("capture").to_string(),
                label(row),
                row["call_transfer"].as_str().expect("mode").to_string(),
                row["reply_transfer"].as_str().expect("mode").to_string(),
            );
            let v = (
                row["count"].as_u64().expect("count"),
                row["p50_us"].as_f64().expect("p50"),
                row["p99_us"].as_f64().expect("p99"),
            );
            assert!(rt.insert(key, v).is_none(), "{engine}: a group twice");
        }
        let keys: BTreeSet<_> = rt.keys().cloned().collect();
        let want_keys: BTreeSet<_> = want_rt.keys().cloned().collect();
        assert_eq!(
            keys, want_keys,
            "{engine}: the (capture, procedure, transfer) groups"
        );
        for (k, (n, p50, p99)) in &rt {
            let (wn, w50, w99) = want_rt[k];
            assert_eq!(*n, wn, "{engine} {k:?}: count");
            // Exact quantiles against the report's histogram: within its
            // bucket error (1/64 of the value).
            for (q, got, want) in [("p50", *p50, w50), ("p99", *p99, w99)] {
                assert!(
                    (got - want).abs() <= got / 64.0 + 1e-6,
                    "{engine} {k:?}: {q} {got} µs, report {want} µs"
                );
            }
        }
        let count_rows = |name: &str, key: &dyn Fn(&Value) -> (String, String)| {
            e[name]
                .as_array()
                .expect("rows")
                .iter()
                .map(|r| (key(r), r["count"].as_u64().expect("count")))
                .collect::<BTreeMap<_, _>>()
        };
        let unanswered = count_rows("unanswered", &|r| {
            (r["capture"].as_str().expect("c").to_string(), label(r))
        });
        assert_eq!(unanswered, want_unanswered, "{engine}: unanswered calls");
        let anomalies = count_rows("anomalies", &|r| {
            (
                r["capture"].as_str().expect("c").to_string(),
                r["kind"].as_str().expect("kind").to_string(),
            )
        });
        assert_eq!(anomalies, want_anomalies, "{engine}: anomalies by kind");
        let partitions: BTreeSet<(String, String)> = e["partitions"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| {
                assert_eq!(r["host"], "test-host", "{engine}: {r}");
                (
                    r["capture"].as_str().expect("c").to_string(),
                    r["date"].as_str().expect("date").to_string(),
                )
            })
            .collect();
        assert_eq!(
            partitions, want_dates,
            "{engine}: capture and date partitions"
        );
        by_engine.insert(engine, rt);
    }
    // Both compute the same exact figures.
    assert_eq!(by_engine["duckdb"], by_engine["spark"], "DuckDB and Spark");
    let _ = std::fs::remove_dir_all(&dir);
}
