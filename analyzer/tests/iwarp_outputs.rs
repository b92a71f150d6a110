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
    // What stands for them on iWARP, as the text's `iWARP:` line says it.
    let w = &t["iwarp"];
    assert_eq!(w["fpdus"], 3190, "{w}");
    assert_eq!(w["mpa_requests"], 1, "{w}");
    assert_eq!(w["gaps"], 0, "{w}");
    let segments = |k: &str| w[k].as_u64().unwrap();
    assert_eq!(
        segments("ddp_tagged_segments") + segments("ddp_untagged_segments"),
        3190
    );
    assert!(w["segments"]["rdma_write"].as_u64().unwrap() > 0, "{w}");
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
    assert!(t["iwarp"]["fpdus"].as_u64().unwrap() > 0, "{t}");
    let roce_only = report_json(&[&roce], &[]);
    assert!(
        roce_only["totals"].get("iwarp").is_none(),
        "RoCE totals: iwarp"
    );
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
    // iWARP's own: present with iWARP frames, absent without.
    let fpdus = |files: &[&Path]| {
        let m = d.join("m.prom");
        run(&["report", "--metrics-out", m.to_str().unwrap()], files);
        let text = std::fs::read_to_string(&m).expect("metrics file");
        text.lines()
            .find_map(|l| l.strip_prefix("rdma_iwarp_fpdus_total "))
            .map(|v| v.trim().to_string())
    };
    assert_eq!(fpdus(&[&iwarp_capture()]).as_deref(), Some("3190"));
    assert_eq!(fpdus(&[&roce]), None);
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

/// Every record batch of the Parquet files under `dir`.
fn batches(dir: &Path) -> Vec<arrow_array::RecordBatch> {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    parquet_files(dir)
        .into_iter()
        .flat_map(|f| {
            let file = std::fs::File::open(&f).expect("open Parquet");
            ParquetRecordBatchReaderBuilder::try_new(file)
                .expect("a Parquet file")
                .build()
                .expect("a reader")
                .map(|b| b.expect("a batch"))
        })
        .collect()
}

/// A Parquet batch's or struct's column `name`, as the array type `T`.
trait Cols {
    fn col<T: 'static>(&self, name: &str) -> &T;
}

fn typed<'a, T: 'static>(c: Option<&'a arrow_array::ArrayRef>, name: &str) -> &'a T {
    c.unwrap_or_else(|| panic!("no column {name}"))
        .as_any()
        .downcast_ref::<T>()
        .unwrap_or_else(|| panic!("{name} is not a {}", std::any::type_name::<T>()))
}

impl Cols for arrow_array::RecordBatch {
    fn col<T: 'static>(&self, name: &str) -> &T {
        typed(self.column_by_name(name), name)
    }
}

impl Cols for arrow_array::StructArray {
    fn col<T: 'static>(&self, name: &str) -> &T {
        typed(self.column_by_name(name), name)
    }
}

/// Each connection row's fabric and its congestion's (cnps, fecn, becn).
type CongestionRow = (String, [Option<i64>; 3]);

fn connection_rows(dir: &Path) -> Vec<CongestionRow> {
    use arrow_array::{Array, Int64Array, StringArray, StructArray};
    let mut out = Vec::new();
    for batch in batches(&dir.join("connections")) {
        let fabric = batch.col::<StringArray>("fabric");
        let g = batch.col::<StructArray>("congestion");
        let col = |k: &str| g.col::<Int64Array>(k);
        let (c, f, b) = (col("cnps"), col("fecn"), col("becn"));
        let at = |a: &Int64Array, i: usize| (!a.is_null(i)).then(|| a.value(i));
        for i in 0..batch.num_rows() {
            let row = [at(c, i), at(f, i), at(b, i)];
            out.push((fabric.value(i).to_string(), row));
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

/// The frames of a little-endian Ethernet pcap: (record header, bytes).
fn pcap_records(b: &[u8]) -> Vec<([u8; 16], Vec<u8>)> {
    let mut out = Vec::new();
    let mut at = 24usize;
    while at + 16 <= b.len() {
        let caplen = u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap()) as usize;
        let head: [u8; 16] = b[at..at + 16].try_into().unwrap();
        out.push((head, b[at + 16..at + 16 + caplen].to_vec()));
        at += 16 + caplen;
    }
    out
}

/// Where an Ethernet/IPv4/TCP frame's payload starts.
fn tcp_payload_at(f: &[u8]) -> usize {
    let ihl = usize::from(f[14] & 0x0f) * 4;
    let tcp = 14 + ihl;
    tcp + usize::from(f[tcp + 12] >> 4) * 4
}

/// One TCP segment carrying the payloads of frames `a` and `b` (1-based,
/// the same direction, `b` next in its stream), as a sender that packs
/// small FPDUs (RFC 5044 8: several FPDUs may share a segment) would send.
fn coalesced(src: &Path, a: usize, b: usize, out: &Path) -> usize {
    let bytes = std::fs::read(src).expect("read capture");
    let recs = pcap_records(&bytes);
    let (head, mut first) = recs[a - 1].clone();
    let second = &recs[b - 1].1;
    let extra = &second[tcp_payload_at(second)..];
    let first_payload = first.len() - tcp_payload_at(&first);
    first.extend_from_slice(extra);
    let total = u16::from_be_bytes([first[16], first[17]]) + extra.len() as u16;
    first[16..18].copy_from_slice(&total.to_be_bytes());
    // The IPv4 header checksum, so that no reader takes the frame for damaged.
    first[24..26].copy_from_slice(&[0, 0]);
    let ihl = usize::from(first[14] & 0x0f) * 4;
    let mut sum: u32 = first[14..14 + ihl]
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    first[24..26].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    let mut pcap = bytes[..24].to_vec();
    let len = (first.len() as u32).to_le_bytes();
    pcap.extend_from_slice(&head[..8]);
    pcap.extend_from_slice(&len);
    pcap.extend_from_slice(&len);
    pcap.extend_from_slice(&first);
    std::fs::write(out, pcap).expect("write capture");
    tcp_payload_at(&first) + first_payload
}

fn frames_json(pcap: &Path) -> Vec<Value> {
    run(&["frames", "--json"], &[pcap])
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// A segment with two Sends: each FPDU gets its RPC-over-RDMA, RPC and NFS
/// decode, the second's the same as when it came in a segment of its own.
#[test]
fn frames_decodes_every_send_of_a_segment() {
    let d = scratch("two-sends");
    let src = captures().join("iwarp/parallel.pcap");
    // Frames 43 (FSINFO) and 45 (GETATTR): the client's consecutive calls.
    let merged = d.join("two-sends.pcap");
    let second_at = coalesced(&src, 43, 45, &merged);
    let alone = frames_json(&src);
    let (f43, f45) = (&alone[42], &alone[44]);
    assert_eq!(f45["nfs"]["procedure"], "GETATTR", "{f45}");
    let both = frames_json(&merged);
    assert_eq!(both.len(), 1);
    let fpdus = both[0]["iwarp"]["fpdus"].as_array().expect("FPDUs");
    assert_eq!(fpdus.len(), 2, "{}", both[0]);
    assert_eq!(fpdus[1]["offset"], second_at);
    for (fpdu, single) in [(&fpdus[0], f43), (&fpdus[1], f45)] {
        for k in ["rpcrdma", "rpc", "nfs"] {
            assert!(!single[k].is_null(), "{k} of {single}");
            assert_eq!(fpdu[k], single[k], "{k}");
        }
    }
    // The frame's own slot keeps the first Send's, as before.
    assert_eq!(both[0]["rpcrdma"], f43["rpcrdma"]);
    let text = run(&["frames"], &[&merged]);
    let line = text.lines().next().expect("a line");
    let fsinfo = line.find("xid 0x3f1e64b6").expect("the first Send's XID");
    let getattr = line.find("xid 0x401e64b6").expect("the second Send's XID");
    assert!(fsinfo < getattr, "{line}");
    assert!(
        line.contains("v3 FSINFO") && line.contains("v3 GETATTR"),
        "{line}"
    );
    assert_eq!(line.matches("RDMA_MSG").count(), 2, "{line}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Each frame row's number, its `iwarp.kind` and its FPDUs' opcode names
/// and RPC-over-RDMA XIDs (null: the dataset leaves RPC-over-RDMA to the
/// transactions table, as for RoCE), from the frames table.
type IwarpFrameRow = (i64, Option<String>, Vec<(String, Option<u32>)>);

fn iwarp_frame_rows(dir: &Path) -> Vec<IwarpFrameRow> {
    use arrow_array::{Array, Int64Array, ListArray, StringArray, StructArray, UInt32Array};
    let mut out = Vec::new();
    for batch in batches(&dir.join("frames")) {
        let frame = batch.col::<Int64Array>("frame");
        let iw = batch.col::<StructArray>("iwarp");
        let kind = iw.col::<StringArray>("kind");
        let fpdus = iw.col::<ListArray>("fpdus");
        for i in 0..batch.num_rows() {
            let k = (!iw.is_null(i) && !kind.is_null(i)).then(|| kind.value(i).to_string());
            let mut list = Vec::new();
            if !iw.is_null(i) && !fpdus.is_null(i) {
                let items = fpdus.value(i);
                let items = items.as_any().downcast_ref::<StructArray>().expect("FPDUs");
                let op = items
                    .col::<StructArray>("rdmap")
                    .col::<StringArray>("opcode_name");
                let r = items.col::<StructArray>("rpcrdma");
                let xid = r.col::<UInt32Array>("xid");
                for j in 0..items.len() {
                    let x = (!r.is_null(j) && !xid.is_null(j)).then(|| xid.value(j));
                    list.push((op.value(j).to_string(), x));
                }
            }
            out.push((frame.value(i), k, list));
        }
    }
    out.sort_by_key(|r| r.0);
    out
}

/// `export --frames` reads iWARP per segment as `frames` does: the MPA
/// setup frames and every FPDU's DDP/RDMAP, for all frames and for the
/// frames of the rows a filter keeps.
#[test]
fn export_frames_writes_iwarp_per_segment() {
    let d = scratch("export-frames");
    let export = |out: &Path, extra: &[&str]| {
        let o = Command::new(BIN)
            .args(["export", "--host", "h1", "--frames", "--out"])
            .arg(out)
            .args(extra)
            .arg(iwarp_capture())
            .output()
            .expect("run export");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        iwarp_frame_rows(out)
    };
    let all = export(&d.join("all"), &[]);
    let setup: Vec<i64> = all
        .iter()
        .filter(|r| r.1.as_deref() == Some("setup"))
        .map(|r| r.0)
        .collect();
    // v3-ddp.pcap's MPA Request and Reply (frames 29 and 31).
    assert_eq!(setup, [29, 31], "setup frames");
    let fpdus: usize = all.iter().map(|r| r.2.len()).sum();
    assert!(fpdus > 3000, "{fpdus} FPDUs");
    let writes = all
        .iter()
        .flat_map(|r| &r.2)
        .filter(|f| f.0 == "RDMA Write");
    assert!(writes.count() > 100, "RDMA Writes in the rows");
    let filtered = export(&d.join("reads"), &["--filter", "proc == READ"]);
    assert!(!filtered.is_empty() && filtered.len() < all.len());
    let frames = run(
        &["transactions", "--json", "--filter", "proc == READ"],
        &[&iwarp_capture()],
    );
    for l in frames.lines() {
        let t: Value = serde_json::from_str(l).expect("a JSON line");
        let call = t["call_frame"].as_i64().expect("call_frame");
        let row = filtered
            .iter()
            .find(|r| r.0 == call)
            .unwrap_or_else(|| panic!("call frame {call} not written"));
        assert_eq!(row.1.as_deref(), Some("fpdus"), "frame {call}");
        assert!(
            row.2.iter().any(|f| f.0 == "Send"),
            "frame {call}: {:?}",
            row.2
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// The report names an iWARP connection's set-up and teardown by MPA and
/// TCP, not by the CM's messages.
#[test]
fn report_names_iwarp_set_up_by_mpa_and_tcp() {
    let text = run(&["report"], &[&captures().join("iwarp/reconnect.pcap")]);
    assert!(
        text.contains("(FIN from the client), closed 4.327 s (MPA/TCP frames 27,29,221,222)"),
        "{text}"
    );
    for cm in ["CM frames", " REQ ", "DREQ", "CM exchange"] {
        assert!(!text.contains(cm), "{cm:?} in an iWARP report:\n{text}");
    }
    // A capture begun after the MPA exchange: none seen, said in its words.
    let d = scratch("mid-stream");
    let cap = d.join("mid.pcap");
    let o = Command::new(BIN)
        .args([
            "synth",
            "--fabric",
            "iwarp",
            "--iwarp-faults",
            "mid_stream",
            "-o",
        ])
        .arg(&cap)
        .output()
        .expect("run synth");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = run(&["report"], &[&cap]);
    assert!(
        text.contains("negotiated: unknown (the capture has no MPA exchange for this connection)"),
        "{text}"
    );
    assert!(
        !text.contains("CM exchange") && !text.contains("CM frames"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// The capture with its MPA Request (frame 29) made revision 1, which has
/// no IRD/ORD: its 12 octets of private data are left as they are.
fn with_revision_1_request(src: &Path, out: &Path) {
    let mut b = std::fs::read(src).expect("read capture");
    let (mut at, mut n) = (24usize, 0u64);
    while at + 16 <= b.len() {
        n += 1;
        let caplen = u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap()) as usize;
        let frame = at + 16;
        if n == 29 {
            let mpa = frame + tcp_payload_at(&b[frame..frame + caplen]);
            assert_eq!(&b[mpa..mpa + 16], b"MPA ID Req Frame", "frame 29");
            assert_eq!(b[mpa + 17], 2, "revision");
            b[mpa + 17] = 1;
        }
        at = frame + caplen;
    }
    std::fs::write(out, b).expect("write capture");
}

/// MPA revision 2's IRD/ORD are kept on the connection: the report's line,
/// its JSON and the Parquet connections table; null for revision 1.
#[test]
fn ird_ord_are_kept_on_the_connection() {
    let r = report_json(&[&iwarp_capture()], &[]);
    let w = &r["connections"][0]["iwarp"];
    assert_eq!(
        w["client_ird_ord"],
        serde_json::json!({"ird": 128, "ord": 0})
    );
    assert_eq!(
        w["server_ird_ord"],
        serde_json::json!({"ird": 0, "ord": 128})
    );
    let text = run(&["report"], &[&iwarp_capture()]);
    assert!(
        text.contains("RDMA Read queues (IRD/ORD, RFC 6581): client 128/0, server 0/128"),
        "{text}"
    );
    // RoCE connections have no iwarp object at all.
    let roce = report_json(&[&captures().join("v3-ddp.pcap")], &[]);
    assert!(roce["connections"][0].get("iwarp").is_none());

    let d = scratch("rev1");
    let rev1 = d.join("rev1.pcap");
    with_revision_1_request(&iwarp_capture(), &rev1);
    let r = report_json(&[&rev1], &[]);
    let w = &r["connections"][0]["iwarp"];
    assert!(w["client_ird_ord"].is_null(), "{w}");
    assert_eq!(
        w["server_ird_ord"],
        serde_json::json!({"ird": 0, "ord": 128})
    );
    let text = run(&["report"], &[&rev1]);
    assert!(
        text.contains("client none (MPA revision 1), server 0/128"),
        "{text}"
    );

    // The Parquet connections table: the same struct.
    use arrow_array::{Array, StructArray, UInt16Array};
    let out = d.join("ds");
    let o = Command::new(BIN)
        .args(["export", "--host", "h1", "--out"])
        .arg(&out)
        .arg(&rev1)
        .output()
        .expect("run export");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let batch = batches(&out.join("connections"))
        .into_iter()
        .next()
        .expect("a batch");
    let iw = batch.col::<StructArray>("iwarp");
    let side = |k: &str| {
        let s = iw.col::<StructArray>(k);
        let get = |f: &str| s.col::<UInt16Array>(f).value(0);
        (!s.is_null(0)).then(|| (get("ird"), get("ord")))
    };
    assert_eq!(side("client_ird_ord"), None);
    assert_eq!(side("server_ird_ord"), Some((0, 128)));
    let _ = std::fs::remove_dir_all(&d);
}
