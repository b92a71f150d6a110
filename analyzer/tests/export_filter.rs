//! `export --filter`: the dataset holds the rows the display filter keeps
//! (as `transactions`/`anomalies --filter` print them) and every file's
//! Parquet metadata says which filter made it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use rdma_analyzer::output::dataset::FILTER_KEY;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");
const FILTER: &str = "proc == READ && latency > 20ms";

fn capture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../captures/parallel.pcap")
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rdma-export-filter-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn export(out: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .args(["export", "--host", "h1", "--out"])
        .arg(out)
        .args(extra)
        .arg(capture())
        .output()
        .expect("running export")
}

/// Rows and the filter recorded, of one table's file.
fn table(dir: &Path, name: &str) -> (i64, Option<String>) {
    let f = dir
        .join(name)
        .join("host=h1/capture=parallel/date=2026-11-20/part-0.parquet");
    let file = std::fs::File::open(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
    let b = ParquetRecordBatchReaderBuilder::try_new(file).expect("a Parquet file");
    let meta = b.metadata().file_metadata();
    let filter = meta
        .key_value_metadata()
        .and_then(|kv| kv.iter().find(|k| k.key == FILTER_KEY))
        .and_then(|k| k.value.clone());
    (meta.num_rows(), filter)
}

/// Lines `cmd --json --filter FILTER` prints for the capture.
fn offline(cmd: &str) -> i64 {
    let o = Command::new(BIN)
        .args([cmd, "--json", "--filter", FILTER])
        .arg(capture())
        .output()
        .expect(cmd);
    assert!(o.status.success(), "{o:?}");
    // A finding repeated on a connection is one line with its `count`;
    // the Parquet table keeps a row per occurrence.
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).expect("a JSON line")["count"]
                .as_i64()
                .unwrap_or(1)
        })
        .sum()
}

#[test]
fn export_filter_keeps_what_the_filter_keeps_and_says_so() {
    let dir = temp_dir("kept");
    let o = export(&dir, &["--frames", "--filter", FILTER]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(
        said.contains(" anomalies, 1 connection, 0 causes, "),
        "{said}"
    );
    assert!(
        said.contains(&format!("(kept by --filter '{FILTER}')")),
        "{said}"
    );
    let (txns, f) = table(&dir, "transactions");
    assert_eq!(txns, offline("transactions"));
    assert!(
        txns > 0 && txns < 288,
        "{txns} of parallel.pcap's 288 READs"
    );
    assert_eq!(f.as_deref(), Some(FILTER));
    let (anomalies, f) = table(&dir, "anomalies");
    assert_eq!(anomalies, offline("anomalies"));
    assert_eq!(f.as_deref(), Some(FILTER));
    // The one connection the READs are on.
    assert_eq!(table(&dir, "connections"), (1, Some(FILTER.to_string())));
    // The frames of what the filter kept, exactly those `frame == N`
    // keeps it by, and the filter recorded for them too.
    let (n, f) = table(&dir, "frames");
    assert_eq!(f.as_deref(), Some(FILTER));
    let written = frame_numbers(&dir);
    assert_eq!(written.len() as i64, n);
    let named = named_frames();
    assert_eq!(
        written, named,
        "the frames table is not the kept rows' frames"
    );
    assert!(n > txns * 2 && n < 7716, "{n} frames for {txns} READs");
    assert!(said.contains(&format!(", {n} frames -> ")), "{said}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn export_frames_without_filter_writes_every_frame() {
    let dir = temp_dir("every-frame");
    let o = export(&dir, &["--frames"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(table(&dir, "frames"), (7716, None));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `frame` column of the frames table.
fn frame_numbers(dir: &Path) -> BTreeSet<u64> {
    use arrow_array::{Array, Int64Array};
    let f = dir.join("frames/host=h1/capture=parallel/date=2026-11-20/part-0.parquet");
    let file = std::fs::File::open(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("a Parquet file")
        .build()
        .expect("a reader");
    let mut out = BTreeSet::new();
    for batch in reader {
        let batch = batch.expect("a batch");
        let col = batch.column_by_name("frame").expect("a frame column");
        let col = col.as_any().downcast_ref::<Int64Array>().expect("Int64");
        out.extend((0..col.len()).map(|i| u64::try_from(col.value(i)).unwrap()));
    }
    out
}

/// The frames the filtered transactions and findings name, from their JSON.
fn named_frames() -> BTreeSet<u64> {
    let mut out = BTreeSet::new();
    for cmd in ["transactions", "anomalies"] {
        let o = Command::new(BIN)
            .args([cmd, "--json", "--filter", FILTER])
            .arg(capture())
            .output()
            .expect(cmd);
        for l in String::from_utf8_lossy(&o.stdout).lines() {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            let mut add = |x: &serde_json::Value| out.extend(x.as_u64());
            for k in ["call_frame", "first_call_frame", "reply_frame"] {
                add(&v[k]);
            }
            for s in v["chunks"].as_array().into_iter().flatten() {
                s["frames"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .for_each(&mut add);
            }
            v["frames"]
                .as_array()
                .into_iter()
                .flatten()
                .for_each(&mut add);
        }
    }
    out
}

#[test]
fn export_without_filter_records_none() {
    let dir = temp_dir("whole");
    let o = export(&dir, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(table(&dir, "transactions"), (1050, None));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn export_filter_that_does_not_parse_writes_nothing() {
    let dir = temp_dir("bad");
    let o = export(&dir, &["--filter", "latency >> 3"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("--filter latency >> 3"));
    assert!(!dir.exists(), "a dataset was written");
}

/// `kind` and `acknowledged` of every row of the anomalies table.
fn acknowledged(dir: &Path) -> Vec<(String, bool)> {
    use arrow_array::{Array, BooleanArray, LargeStringArray, StringArray};
    let f = dir.join("anomalies/host=h1/capture=parallel/date=2026-11-20/part-0.parquet");
    let file = std::fs::File::open(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("a Parquet file")
        .build()
        .expect("a reader");
    let mut out = Vec::new();
    for batch in reader {
        let batch = batch.expect("a batch");
        let kind = batch.column_by_name("kind").expect("kind").as_any();
        let kinds: Vec<String> = match kind.downcast_ref::<StringArray>() {
            Some(k) => k.iter().map(|v| v.unwrap_or("").to_string()).collect(),
            None => kind
                .downcast_ref::<LargeStringArray>()
                .expect("kind is text")
                .iter()
                .map(|v| v.unwrap_or("").to_string())
                .collect(),
        };
        let ack = batch
            .column_by_name("acknowledged")
            .expect("an acknowledged column");
        let ack = ack.as_any().downcast_ref::<BooleanArray>().expect("bool");
        out.extend(
            kinds
                .into_iter()
                .enumerate()
                .map(|(i, k)| (k, ack.value(i))),
        );
    }
    out
}

#[test]
fn export_marks_acknowledged_findings_and_keeps_their_rows() {
    let whole = temp_dir("acks-none");
    assert!(export(&whole, &[]).status.success());
    let before = acknowledged(&whole);
    assert!(
        before.iter().all(|(_, a)| !a),
        "nothing acknowledged without --ignore"
    );
    let dir = temp_dir("acks");
    let o = export(&dir, &["--ignore", "remote_invalidation_not_negotiated"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let after = acknowledged(&dir);
    // Every row kept, those of the kind marked, and only those.
    assert_eq!(after.len(), before.len());
    let marked = after.iter().filter(|(_, a)| *a).count();
    assert_eq!(marked, 480, "{after:?}");
    assert!(after
        .iter()
        .all(|(k, a)| *a == (k == "remote_invalidation_not_negotiated")));
    let _ = std::fs::remove_dir_all(&whole);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn export_with_an_unknown_kind_to_ignore_writes_nothing() {
    let dir = temp_dir("acks-bad");
    let o = export(&dir, &["--ignore", "remote_invalidation"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--ignore"), "{err}");
    assert!(!dir.exists(), "a dataset was written");
}
