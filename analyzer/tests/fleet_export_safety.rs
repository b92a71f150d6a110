//! `export` never silently loses data (issue 23): a capture already in the
//! dataset is refused unless `--replace`, which replaces all its tables and
//! days together; a failed write (a full file system, a real tmpfs) leaves
//! no partial capture and keeps the one it was replacing; a capture over
//! hundreds of UTC days is written with a bounded number of open files
//! (run under a 64-descriptor limit) and every row is there, as the real
//! DuckDB reads it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "common/prereq.rs"]
mod prereq;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rdma-export-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn export(out: &Path, extra: &[&str], file: &Path) -> Output {
    Command::new(BIN)
        .args(["export", "--host", "h1", "--out"])
        .arg(out)
        .args(extra)
        .arg(file)
        .output()
        .expect("running export")
}

/// Every file under `dir` with its bytes.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                let bytes = std::fs::read(&p).expect("read");
                out.insert(p.strip_prefix(dir).expect("under").to_path_buf(), bytes);
            }
        }
    }
    out
}

fn rows(file: &Path) -> i64 {
    let f = std::fs::File::open(file).expect("open");
    let b = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
        .expect("a Parquet file");
    b.metadata().file_metadata().num_rows()
}

#[test]
fn a_capture_already_there_is_refused_and_replace_replaces_every_table() {
    let dir = temp_dir("replace");
    let out = dir.join("ds");
    let capture = repo().join("captures/v42-inline.pcap");
    let o = export(&out, &["--frames"], &capture);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let first = tree(&out);
    assert!(first.keys().any(|p| p.starts_with("frames")));

    // Again: refused, nothing touched.
    let o = export(&out, &[], &capture);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("already in")
            && err.contains("capture=v42-inline")
            && err.contains("--replace"),
        "{err}"
    );
    assert_eq!(tree(&out), first, "a refused export changed the dataset");

    // --replace without --frames: the frames of the earlier export go too,
    // the other tables are the new export's, nothing hidden is left.
    let o = export(&out, &["--replace"], &capture);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let second = tree(&out);
    assert!(
        !second.keys().any(|p| p.starts_with("frames")),
        "the earlier frames are left beside the new tables: {:?}",
        second.keys().collect::<Vec<_>>()
    );
    for table in ["transactions", "anomalies", "connections"] {
        assert!(
            second.keys().any(|p| p.starts_with(table)),
            "{table} missing"
        );
    }
    let hidden: Vec<_> = std::fs::read_dir(&out)
        .expect("dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "left behind: {hidden:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn tmpfs(at: &Path, size: &str) -> Option<Mounted> {
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(at)
        .status()
        .is_ok_and(|s| s.success());
    ok.then(|| Mounted(at.to_path_buf()))
}

/// A full file system mid-export: the export says it could not write (not
/// that the capture could not be read), exits 2, and leaves no part of the
/// capture; with --replace, the earlier export is kept whole.
#[test]
fn a_failed_write_leaves_no_partial_capture() {
    if !prereq::root("mounting a small tmpfs needs root") {
        return;
    }
    let dir = temp_dir("full");
    let fs = dir.join("fs");
    std::fs::create_dir_all(&fs).expect("dir");
    let Some(_mounted) = tmpfs(&fs, "200k") else {
        eprintln!("SKIP: cannot mount a tmpfs here");
        return;
    };
    let out = fs.join("ds");
    let small = repo().join("captures/v42-inline.pcap");
    let o = export(&out, &[], &small);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let before = tree(&out);

    // A large capture under the same name, with its frames: does not fit.
    let big = dir.join("v42-inline.pcap");
    std::fs::copy(repo().join("captures/parallel.pcap"), &big).expect("copy");
    let o = export(&out, &["--replace", "--frames"], &big);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("could not be written"), "{err}");
    assert!(!err.contains("could not be read whole"), "{err}");
    assert!(err.contains("earlier export is kept"), "{err}");
    assert_eq!(tree(&out), before, "the earlier export was not kept whole");

    // A new name that does not fit: nothing of it is left.
    let other = dir.join("other.pcap");
    std::fs::copy(repo().join("captures/parallel.pcap"), &other).expect("copy");
    let o = export(&out, &["--frames"], &other);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("could not be written"), "{err}");
    assert_eq!(tree(&out), before, "a partial capture was left");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A classic pcap with frame i moved i days later: one UTC day per frame.
fn spread_over_days(src: &Path, dst: &Path) -> usize {
    let b = std::fs::read(src).expect("capture");
    assert_eq!(
        &b[..4],
        &[0xd4, 0xc3, 0xb2, 0xa1],
        "a little-endian classic pcap"
    );
    let mut out = b[..24].to_vec();
    let mut at = 24;
    let mut i = 0u32;
    while at + 16 <= b.len() {
        let sec = u32::from_le_bytes(b[at..at + 4].try_into().expect("4"));
        let len = u32::from_le_bytes(b[at + 8..at + 12].try_into().expect("4")) as usize;
        out.extend_from_slice(&(sec + i * 86_400).to_le_bytes());
        out.extend_from_slice(&b[at + 4..at + 16 + len]);
        at += 16 + len;
        i += 1;
    }
    std::fs::write(dst, out).expect("write");
    i as usize
}

#[test]
fn hundreds_of_days_are_written_with_a_bounded_number_of_open_files() {
    if !prereq::require(
        "prlimit",
        prereq::have_command("prlimit", "--version"),
        "util-linux",
    ) {
        return;
    }
    let dir = temp_dir("days");
    let capture = dir.join("days.pcap");
    let frames = spread_over_days(&repo().join("captures/v42-inline.pcap"), &capture);
    let out = dir.join("ds");
    // 64 descriptors: before, every (table, day) kept a file open and this
    // export needed more than 278 of them.
    let o = Command::new("prlimit")
        .args(["--nofile=64:64", "--"])
        .arg(BIN)
        .args(["export", "--host", "h1", "--frames", "--out"])
        .arg(&out)
        .arg(&capture)
        .output()
        .expect("export");
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let count = |what: &str| -> i64 {
        said.split(", ")
            .find_map(|p| {
                p.trim()
                    .strip_suffix(what)?
                    .split(' ')
                    .next_back()?
                    .parse()
                    .ok()
            })
            .unwrap_or_else(|| panic!("no {what} in {said}"))
    };
    let files = tree(&out);
    for (table, want) in [
        ("transactions", count(" transactions")),
        ("anomalies", count(" anomalies")),
        ("frames", frames as i64),
    ] {
        let parts: Vec<_> = files.keys().filter(|p| p.starts_with(table)).collect();
        let days: std::collections::BTreeSet<_> = parts.iter().filter_map(|p| p.parent()).collect();
        let got: i64 = parts.iter().map(|p| rows(&out.join(p))).sum();
        assert_eq!(got, want, "{table}: rows in the dataset");
        if table == "frames" {
            assert_eq!(days.len(), frames, "one day per frame");
        }
    }
    assert!(count(" transactions") > 0);
    // The real DuckDB reads the same rows (hive partitions, every part).
    let python = repo().join("target/fleet-venv/bin/python");
    if prereq::require(
        "DuckDB in target/fleet-venv",
        python.is_file(),
        "scripts/setup-fleet.sh installs it",
    ) {
        let q = Command::new(&python)
            .arg("-c")
            .arg(
                "import duckdb,sys\n\
                 d=sys.argv[1]\n\
                 for t in ['transactions','frames']:\n\
                 \x20   print(duckdb.sql(f\"select count(*), count(distinct date) from read_parquet('{d}/{t}/**/*.parquet', hive_partitioning=true)\").fetchone())",
            )
            .arg(&out)
            .output()
            .expect("duckdb");
        let text = String::from_utf8_lossy(&q.stdout);
        assert!(q.status.success(), "{}", String::from_utf8_lossy(&q.stderr));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines.first().copied(),
            Some(format!("({}, {})", count(" transactions"), {
                let days: std::collections::BTreeSet<_> = files
                    .keys()
                    .filter(|p| p.starts_with("transactions"))
                    .filter_map(|p| p.parent())
                    .collect();
                days.len()
            }))
            .as_deref(),
            "{text}"
        );
        assert_eq!(
            lines.get(1).copied(),
            Some(format!("({frames}, {frames})").as_str()),
            "{text}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
