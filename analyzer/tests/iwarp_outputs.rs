//! iWARP in the outputs, through the real binary: what does not apply to
//! iWARP (the BTH's ICRC, PSNs, CNPs, FECN/BECN) is null in the JSON and
//! the Parquet tables and has no metrics sample, per connection on a
//! capture that mixes fabrics, while RoCE's stays a count.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

fn captures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures")
}

fn iwarp_capture() -> PathBuf {
    captures().join("iwarp/v3-ddp.pcap")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rdma-iwarp-outputs-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

fn run(args: &[&str], files: &[&Path]) -> String {
    let o = Command::new(BIN)
        .args(args)
        .args(files)
        .output()
        .expect("run rdma-analyzer");
    assert!(
        o.status.code().is_some_and(|c| c <= 1),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("UTF-8")
}

fn report_json(files: &[&Path], extra: &[&str]) -> Value {
    let mut args = vec!["report", "--json"];
    args.extend_from_slice(extra);
    serde_json::from_str(&run(&args, files)).expect("report JSON")
}

/// The same capture with the IP ECN field of the given frames (1-based)
/// set to CE, as a switch marking them would.
fn with_ce_marks(src: &Path, frames: &[u64], out: &Path) {
    let mut b = std::fs::read(src).expect("read capture");
    assert_eq!(&b[..4], &[0xd4, 0xc3, 0xb2, 0xa1], "a little-endian pcap");
    let (mut at, mut n) = (24usize, 0u64);
    while at + 16 <= b.len() {
        n += 1;
        let caplen = u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap()) as usize;
        let frame = at + 16;
        // Ethernet II then IPv4 (the lab's captures): the TOS octet's low bits.
        if frames.contains(&n) && b[frame + 12..frame + 14] == [0x08, 0x00] {
            b[frame + 15] |= 0b11;
        }
        at = frame + caplen;
    }
    std::fs::write(out, b).expect("write capture");
}

const BTH_ONLY_TOTALS: [&str; 5] = [
    "retransmissions",
    "psn_gaps",
    "icrc_valid",
    "icrc_invalid",
    "icrc_unchecked",
];

#[test]
fn iwarp_only_capture_has_null_icrc_and_psn_totals() {
    let r = report_json(&[&iwarp_capture()], &[]);
    let t = &r["totals"];
    assert!(t["rdma_frames"].as_u64().unwrap() > 5000, "{t}");
    for k in BTH_ONLY_TOTALS {
        assert!(
            t[k].is_null(),
            "totals.{k} on an iWARP-only capture: {}",
            t[k]
        );
    }
    let c = &r["connections"][0];
    assert_eq!(c["fabric"], "iWARP");
    let g = &c["congestion"];
    assert_eq!(g["ecn_ce"], 0, "{g}");
    for k in ["cnps", "fecn", "becn"] {
        assert!(g[k].is_null(), "congestion.{k} on iWARP: {g}");
    }
}

#[test]
fn mixed_capture_nulls_per_connection_and_counts_roce() {
    let roce = captures().join("v3-ddp.pcap");
    let r = report_json(&[&roce, &iwarp_capture()], &[]);
    let t = &r["totals"];
    // RoCE frames are in it: the ICRC was checked on them.
    assert!(t["icrc_valid"].as_u64().unwrap() > 4000, "{t}");
    for k in BTH_ONLY_TOTALS {
        assert!(t[k].is_u64(), "totals.{k} on a mixed capture: {}", t[k]);
    }
    let conns = r["connections"].as_array().unwrap();
    let by = |f: &str| {
        conns
            .iter()
            .find(|c| c["fabric"] == f)
            .unwrap_or_else(|| panic!("a {f} connection"))
    };
    for k in ["cnps", "fecn", "becn"] {
        assert_eq!(by("RoCEv2")["congestion"][k], 0, "RoCE's {k}");
        assert!(by("iWARP")["congestion"][k].is_null(), "iWARP's {k}");
    }
}

#[test]
fn metrics_have_no_icrc_or_psn_sample_on_iwarp_only() {
    let d = scratch("metrics");
    let families = |files: &[&Path]| {
        let m = d.join("m.prom");
        run(&["report", "--metrics-out", m.to_str().unwrap()], files);
        let text = std::fs::read_to_string(&m).expect("metrics file");
        [
            "rdma_icrc_checks_total",
            "rdma_psn_gaps_total",
            "rdma_retransmissions_total",
        ]
        .iter()
        .filter(|f| text.lines().any(|l| l.starts_with(*f)))
        .count()
    };
    assert_eq!(families(&[&iwarp_capture()]), 0);
    let roce = captures().join("v3-ddp.pcap");
    assert_eq!(families(&[&roce, &iwarp_capture()]), 3);
    let _ = std::fs::remove_dir_all(&d);
}

/// IP's CE mark applies to iWARP as to RoCE (TCP answers it): counted on
/// the connection, in the report and the diagnosis, without BTH signals.
#[test]
fn ce_marks_on_iwarp_frames_are_counted() {
    let d = scratch("ce");
    let marked = d.join("marked.pcap");
    // Frames of c1's stream after its MPA exchange (frames 29, 31).
    with_ce_marks(&iwarp_capture(), &[100, 101, 200], &marked);
    let r = report_json(&[&marked], &[]);
    let g = &r["connections"][0]["congestion"];
    assert_eq!(g["ecn_ce"], 3, "{g}");
    assert_eq!(g["frames"], serde_json::json!([100, 101, 200]));
    assert!(g["cnps"].is_null() && g["fecn"].is_null(), "{g}");
    assert_eq!(r["totals"]["congestion_frames"], 3);
    let text = run(&["report"], &[&marked]);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("congestion:"))
        .unwrap_or_else(|| panic!("a congestion line in\n{text}"));
    assert!(line.contains("3 ECN CE from"), "{line}");
    assert!(!line.contains("CNP"), "{line}");
    let _ = std::fs::remove_dir_all(&d);
}

/// The Parquet files under `dir` (a table's partitions).
fn parquet_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(parquet_files(&p));
        } else if p.extension().is_some_and(|x| x == "parquet") {
            out.push(p);
        }
    }
    out
}

/// Each connection row's fabric and its congestion's (cnps, fecn, becn).
type CongestionRow = (String, [Option<i64>; 3]);

fn connection_rows(dir: &Path) -> Vec<CongestionRow> {
    use arrow_array::{Array, Int64Array, StringArray, StructArray};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let mut out = Vec::new();
    for f in parquet_files(&dir.join("connections")) {
        let file = std::fs::File::open(&f).expect("open Parquet");
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .expect("a Parquet file")
            .build()
            .expect("a reader");
        for batch in reader {
            let batch = batch.expect("a batch");
            let fabric = batch.column_by_name("fabric").expect("fabric");
            let fabric = fabric.as_any().downcast_ref::<StringArray>().expect("text");
            let g = batch.column_by_name("congestion").expect("congestion");
            let g = g.as_any().downcast_ref::<StructArray>().expect("struct");
            let col = |k: &str| {
                g.column_by_name(k)
                    .unwrap_or_else(|| panic!("congestion.{k}"))
                    .as_any()
                    .downcast_ref::<Int64Array>()
                    .expect("Int64")
                    .clone()
            };
            let (c, f, b) = (col("cnps"), col("fecn"), col("becn"));
            let at = |a: &Int64Array, i: usize| (!a.is_null(i)).then(|| a.value(i));
            for i in 0..batch.num_rows() {
                let row = [at(&c, i), at(&f, i), at(&b, i)];
                out.push((fabric.value(i).to_string(), row));
            }
        }
    }
    out
}

#[test]
fn parquet_connections_have_null_bth_signals_on_iwarp() {
    let d = scratch("parquet");
    // Another name than the iWARP capture's: export names a capture by its file.
    let roce = captures().join("v3-inline.pcap");
    let out = d.join("ds");
    let o = Command::new(BIN)
        .args(["export", "--host", "h1", "--out"])
        .arg(&out)
        .arg(&roce)
        .arg(iwarp_capture())
        .output()
        .expect("run export");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = connection_rows(&out);
    assert!(rows.iter().any(|r| r.0 == "RoCEv2"), "{rows:?}");
    assert!(rows.iter().any(|r| r.0 == "iWARP"), "{rows:?}");
    for (fabric, signals) in rows {
        if fabric == "iWARP" {
            assert_eq!(signals, [None; 3], "{fabric}");
        } else {
            assert_eq!(signals, [Some(0); 3], "{fabric}");
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}
