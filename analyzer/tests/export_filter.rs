//! `export --filter`: the dataset holds the rows the display filter keeps
//! (as `transactions`/`anomalies --filter` print them) and every file's
//! Parquet metadata says which filter made it.

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
        said.contains(" anomalies, 1 connection, 0 causes, 7716 frames -> "),
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
    // Every frame, and no filter claimed for them.
    assert_eq!(table(&dir, "frames"), (7716, None));
    let _ = std::fs::remove_dir_all(&dir);
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
