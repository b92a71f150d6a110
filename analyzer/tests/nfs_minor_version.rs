//! NFSv4.0, 4.1 and 4.2 behave differently (sessions, new operations): a
//! table that mixes them averages unlike things. The COMPOUND's
//! `minorversion` keeps them apart in the report's rows, the
//! transactions (text and JSON), the filter and the Parquet dataset.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

fn capture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../captures")
        .join(name)
}

fn run(args: &[&str], files: &[&str]) -> String {
    let o = Command::new(BIN)
        .args(args)
        .args(files.iter().map(|f| capture(f)))
        .output()
        .expect("running rdma-analyzer");
    assert!(o.status.success(), "{args:?}: {o:?}");
    String::from_utf8(o.stdout).expect("UTF-8")
}

#[test]
fn report_rows_keep_minor_versions_apart() {
    // Both captures run the same workload: the same COMPOUNDs, one on
    // NFSv4.1 and one on NFSv4.2.
    let files = ["v41-inline.pcap", "v42-inline.pcap"];
    let doc: serde_json::Value =
        serde_json::from_str(&run(&["report", "--json"], &files)).expect("a JSON report");
    let rows: BTreeMap<&str, u64> = doc["response_times"]
        .as_array()
        .expect("response_times")
        .iter()
        .filter(|r| {
            r["procedure"]
                .as_str()
                .unwrap()
                .contains("SEQUENCE,PUTFH,GETATTR)")
        })
        .map(|r| {
            (
                r["procedure"].as_str().unwrap(),
                r["latency"]["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        BTreeMap::from([
            ("NFSv4.1 COMPOUND(SEQUENCE,PUTFH,GETATTR)", 20),
            ("NFSv4.2 COMPOUND(SEQUENCE,PUTFH,GETATTR)", 20),
        ])
    );
    let text = run(&["report"], &files);
    assert!(
        text.contains("  NFSv4.1 COMPOUND(SEQUENCE,PUTFH,GETATTR)  ")
            && text.contains("  NFSv4.2 COMPOUND(SEQUENCE,PUTFH,GETATTR)  "),
        "{text}"
    );
    // NFSv3 has no minor version: its label is unchanged.
    let v3 = run(&["transactions"], &["v3-inline.pcap"]);
    assert!(
        v3.contains(" NFS GETATTR ") && !v3.contains("NFSv3"),
        "{v3}"
    );
}

#[test]
fn transactions_json_carry_the_minor_version_and_null_without_one() {
    let out = run(&["transactions", "--json"], &["v41-inline.pcap"]);
    let mut seen = BTreeMap::<String, usize>::new();
    for l in out.lines() {
        let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
        let key = match (v["version"].as_u64(), &v["minorversion"]) {
            (Some(4), serde_json::Value::Number(m)) => {
                assert!(
                    v["procedure"].as_str().unwrap().starts_with("COMPOUND("),
                    "{l}"
                );
                format!("4.{m}")
            }
            (_, serde_json::Value::Null) => {
                // Only the NULL procedure carries no COMPOUND here.
                assert_eq!(v["procedure"], "NULL", "{l}");
                "none".into()
            }
            _ => panic!("unexpected version/minorversion: {l}"),
        };
        *seen.entry(key).or_default() += 1;
    }
    assert_eq!(seen.get("4.1"), Some(&62), "{seen:?}");
    assert_eq!(seen.get("none"), Some(&1), "{seen:?}");
    assert_eq!(seen.len(), 2, "{seen:?}");
}

#[test]
fn filter_selects_a_minor_version() {
    let files = ["v41-inline.pcap", "v42-inline.pcap"];
    let all = run(&["transactions"], &files).lines().count();
    let v41 = run(&["transactions", "--filter", "\"NFSv4.1\""], &files);
    let v42 = run(
        &["transactions", "--filter", "proc contains \"NFSv4.2\""],
        &files,
    );
    assert_eq!(v41.lines().count(), 62, "{v41}");
    assert_eq!(v42.lines().count(), 62, "{v42}");
    assert!(
        v41.lines().all(|l| l.contains(" NFSv4.1 COMPOUND(")),
        "{v41}"
    );
    assert!(
        v42.lines().all(|l| l.contains(" NFSv4.2 COMPOUND(")),
        "{v42}"
    );
    // The rest are the NULL pings of the two mounts.
    assert_eq!(all, 62 + 62 + 2);
}

#[test]
fn the_dataset_has_a_minorversion_column() {
    let dir = std::env::temp_dir().join(format!("rdma-minorversion-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = Command::new(BIN)
        .args(["export", "--host", "h1", "--out"])
        .arg(&dir)
        .arg(capture("v42-inline.pcap"))
        .output()
        .expect("running export");
    assert!(o.status.success(), "{o:?}");
    let values = minorversions(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    let count = |m: Option<u32>| values.iter().filter(|v| **v == m).count();
    assert_eq!(count(Some(2)), 62, "{values:?}");
    assert_eq!(count(None), 1, "{values:?}");
    assert_eq!(values.len(), 63);
}

/// Every `minorversion` of the transactions table under `dir`.
fn minorversions(dir: &Path) -> Vec<Option<u32>> {
    use arrow_array::{Array, UInt32Array};
    let part = walk(&dir.join("transactions"));
    let file = std::fs::File::open(&part).expect("the transactions file");
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("a Parquet file")
        .build()
        .expect("a reader");
    let mut out = Vec::new();
    for batch in reader {
        let batch = batch.expect("a batch");
        let col = batch
            .column_by_name("minorversion")
            .expect("a minorversion column");
        let col = col
            .as_any()
            .downcast_ref::<UInt32Array>()
            .expect("minorversion is UInt32");
        out.extend((0..col.len()).map(|i| col.is_valid(i).then(|| col.value(i))));
    }
    out
}

/// The one Parquet file below `dir`.
fn walk(dir: &Path) -> PathBuf {
    let mut at = dir.to_path_buf();
    loop {
        let entry = std::fs::read_dir(&at)
            .unwrap_or_else(|e| panic!("{}: {e}", at.display()))
            .next()
            .expect("a partition")
            .expect("a directory entry");
        at = entry.path();
        if at.is_file() {
            return at;
        }
    }
}
