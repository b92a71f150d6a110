//! The diagnosis through the real binary: `report` on the bundled lab
//! captures (the reconnect leads with its stall, the clean ones give no
//! cause) and on synthetic captures each made to show one cause, which
//! must come first.

#[path = "common/exact.rs"]
mod exact;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_rdma-analyzer")
}

fn capture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("captures")
        .join(name)
}

fn run(args: &[&str]) -> String {
    let out = Command::new(bin()).args(args).output().expect("the binary");
    assert!(
        out.status.success(),
        "rdma-analyzer {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

fn report_json(path: &Path) -> Value {
    let p = path.to_str().expect("a UTF-8 path");
    serde_json::from_str(&run(&["report", "--json", p])).expect("report JSON")
}

fn causes(doc: &Value) -> Vec<String> {
    doc["diagnosis"]
        .as_array()
        .expect("a diagnosis array")
        .iter()
        .map(|c| c["cause"].as_str().expect("a cause name").to_string())
        .collect()
}

#[test]
fn reconnect_leads_with_the_stall_of_xid_cb7cd736() {
    let path = capture("reconnect.pcap");
    let doc = report_json(&path);
    let first = &doc["diagnosis"][0];
    assert_eq!(first["cause"], "reconnect_stall", "{:#}", doc["diagnosis"]);
    assert_eq!(first["evidence"]["xids"][0], "0xcb7cd736");
    assert_eq!(
        first["evidence"]["connections"],
        serde_json::json!(["c1", "c2"])
    );
    let ms = first["impact"]["time_ms"].as_f64().expect("time lost");
    assert!((21_800.0..22_000.0).contains(&ms), "{ms}");
    // Ordered by impact.
    let scores: Vec<f64> = doc["diagnosis"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["impact"]["score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    // One GETATTR operation, two transmissions.
    let getattr = doc["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["procedure"] == "NFS GETATTR")
        .expect("GETATTR");
    assert_eq!(
        (getattr["ops"].as_u64(), getattr["trans"].as_u64()),
        (Some(13), Some(14))
    );
    // The slowest operation is the one that waited across the reconnect.
    let slow = &doc["slowest"][0];
    assert_eq!(slow["xid"], 0xcb7cd736_u32);
    assert_eq!(slow["transmissions"], 2);
    assert_eq!(
        (
            slow["first_call_frame"].as_u64(),
            slow["call_frame"].as_u64()
        ),
        (Some(230), Some(244))
    );
    // The client's timeline: c1, then c2 after the outage.
    let tl = &doc["timeline"][0]["connections"];
    assert_eq!(
        (tl[0]["connection"].as_str(), tl[1]["connection"].as_str()),
        (Some("c1"), Some("c2"))
    );
    assert!(tl[1]["gap_before_ms"].as_f64().unwrap() > 10_000.0);
    // c1 torn down by the client (DREQ, frame 237); c2's first REQ
    // (frame 238) unanswered, the second answered: one failed request.
    assert_eq!(tl[0]["torn_down_by"], "client");
    assert_eq!(tl[0]["cm"][3]["frame"], 237);
    assert_eq!(tl[0]["cm"][3]["message"], "DREQ");
    assert_eq!(tl[1]["failed_requests"], 1);
    assert_eq!(tl[0]["unanswered_calls"], 1);
    // The outage: from c1's last message (5.313 s) to c2's RTU (27.220 s).
    let o = &doc["timeline"][0]["outages"];
    assert_eq!(o.as_array().map(Vec::len), Some(1), "{o}");
    assert_eq!(
        (o[0]["connection"].as_str(), o[0]["next"].as_str()),
        (Some("c1"), Some("c2"))
    );
    let ms = o[0]["duration_ms"].as_f64().unwrap();
    assert!((ms - 21_907.0).abs() < 2.0, "{ms}");
    let down = o[0]["without_connection_ms"].as_f64().unwrap();
    assert!((down - 6_409.0).abs() < 2.0, "{down}");
    // No longer an unrelated unanswered call.
    let kinds: Vec<&str> = doc["anomalies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"call_retransmitted") && !kinds.contains(&"call_without_reply"),
        "{kinds:?}"
    );

    let text = run(&["report", path.to_str().unwrap()]);
    let diag = text.find("\nDiagnosis").expect("a diagnosis section");
    assert!(
        diag < text.find("\nConnections").unwrap(),
        "the diagnosis comes first"
    );
    let line = text[diag..].lines().nth(2).unwrap();
    assert!(line.contains("1. reconnect_stall"), "{line}");
    assert!(
        text.contains("xids 0xcb7cd736") && text.contains("21.9"),
        "{text}"
    );
    // The timeline says when each connection came and went, and the outage.
    for want in [
        "c1: REQ 0.206 s, established 0.219 s, last message 5.313 s, torn down 20.811 s (DREQ from the client), closed 27.213 s",
        "c2: REQ 20.863 s, 1 request(s) unanswered, established 27.220 s",
        "outage 21.907 s: 1 call(s) unanswered on c1 after its last message at 5.313 s, torn down at 20.811 s, c2 up at 27.220 s (6.409 s without a connection)",
    ] {
        assert!(text.contains(want), "the report lacks {want:?}:\n{text}");
    }
}

#[test]
fn the_clean_lab_captures_give_no_cause() {
    // parallel.pcap is in: its credit window was full for 3 of its 1050
    // calls, under the threshold; the rest are the healthy scenarios of
    // captures/README.md.
    for name in [
        "v3-inline.pcap",
        "v41-inline.pcap",
        "v42-inline.pcap",
        "v3-ddp.pcap",
        "v42-ddp.pcap",
        "v42-reminv.pcap",
        "inline-thresholds.pcap",
        "parallel.pcap",
    ] {
        let doc = report_json(&capture(name));
        assert_eq!(
            causes(&doc),
            Vec::<String>::new(),
            "{name}: {:#}",
            doc["diagnosis"]
        );
        let text = run(&["report", capture(name).to_str().unwrap()]);
        assert!(text.contains("no cause found"), "{name}");
    }
}

#[test]
fn every_reply_carries_its_nfs_status() {
    // v41-inline.pcap's LOOKUP of an absent name: the COMPOUND fails in
    // LOOKUP with NFS4ERR_NOENT, routine, so no cause (see above).
    let p = capture("v41-inline.pcap");
    let out = run(&["transactions", "--json", p.to_str().unwrap()]);
    let txns: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let failed: Vec<&Value> = txns
        .iter()
        .filter(|t| t["nfs_status"] != "NFS4_OK" && !t["nfs_status"].is_null())
        .collect();
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert_eq!(failed[0]["nfs_status"], "NFS4ERR_NOENT");
    assert_eq!(failed[0]["nfs_failed_op"], "LOOKUP");
    let ok = txns.iter().filter(|t| t["nfs_status"] == "NFS4_OK").count();
    assert!(ok > 40, "{ok}");
    // NULL carries no status: null, never a made-up OK.
    let null = txns
        .iter()
        .find(|t| t["procedure"] == "NULL")
        .expect("the NULL ping");
    assert!(null["nfs_status"].is_null());
    // The text line shows the error, and only the error.
    let text = run(&["transactions", p.to_str().unwrap()]);
    assert_eq!(text.matches(" nfs NFS4ERR_NOENT in LOOKUP").count(), 1);
    assert!(!text.contains("NFS4_OK"));
}

#[test]
fn congestion_marks_are_counted_on_their_connection() {
    // The READ's RDMA Writes marked CE (3) and FECN (1), answered by a CNP
    // (with BECN) to the server's QP, all on connection c1; in every
    // framing but the IP-less ones, which have no ECN.
    // Frames: on RoCEv2 the first Write carries CE and FECN, two more CE,
    // and the CNP; elsewhere the FECN Write and the CNP.
    for (framing, ce, frames) in [("rocev2", 3, 4), ("rocev1", 0, 2), ("ib", 0, 2)] {
        let s = Synth::new(
            &format!("congestion-{framing}"),
            &[
                "--inject",
                "congestion",
                "--framing",
                framing,
                "--connections",
                "2",
            ],
        );
        let doc = report_json(&s.0);
        let c1 = &doc["connections"][0];
        assert_eq!(c1["id"], "c1");
        let g = &c1["congestion"];
        assert_eq!(
            (
                g["ecn_ce"].as_u64(),
                g["cnps"].as_u64(),
                g["fecn"].as_u64(),
                g["becn"].as_u64()
            ),
            (Some(ce), Some(1), Some(1), Some(1)),
            "{framing}: {g:#}"
        );
        assert!(exact::num(&g["first_ts_ns"]) <= exact::num(&g["last_ts_ns"]));
        assert_eq!(
            g["frames"].as_array().map(Vec::len),
            Some(frames),
            "{framing}"
        );
        assert_eq!(doc["totals"]["congestion_frames"], frames, "{framing}");
        assert_eq!(doc["diagnosis"][0]["cause"], "congestion", "{framing}");
        assert_eq!(doc["diagnosis"][0]["impact"]["rpcs_affected"], 1);
        // The other connections were not marked: zeros, and no text line.
        assert_eq!(doc["connections"][1]["congestion"]["cnps"], 0);
        let text = run(&["report", s.0.to_str().unwrap()]);
        assert_eq!(text.matches("      congestion: ").count(), 1, "{framing}");
    }
}

/// A synthetic capture made with `args`, removed on drop.
struct Synth(PathBuf);

impl Synth {
    fn new(tag: &str, args: &[&str]) -> Self {
        let p =
            std::env::temp_dir().join(format!("rdma-diagnosis-{}-{tag}.pcap", std::process::id()));
        let mut all = vec!["synth", "-o", p.to_str().unwrap(), "--calls", "300"];
        all.extend_from_slice(args);
        run(&all);
        Synth(p)
    }
}

impl Drop for Synth {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        // The sidecar is the capture's name with `.expected.json` appended.
        let _ = std::fs::remove_file(rdma_analyzer::synth::sidecar_path(&self.0));
    }
}

/// The lab scenarios that each induce one cause on real kernels
/// (`captures/lab/run.sh diag`, `DIAG_SCENARIOS` in
/// `captures/lab/guest/scenarios.sh`): the cause was written down before the
/// run, in the scenario's description ("induces CAUSE: ..."), which the lab
/// copies into the scenario's summary; the diagnosis must name it first.
#[test]
fn each_lab_scenario_gives_its_induced_cause_first() {
    let dir = capture("diag");
    let mut seen = vec![];
    let mut summaries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("captures/diag")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "json")
                && !p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("lab-run"))
        })
        .collect();
    summaries.sort();
    for summary in summaries {
        let meta: Value =
            serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
        let scenario = meta["scenario"].as_str().expect("a scenario name");
        let exercises = meta["exercises"].as_str().expect("what it exercises");
        let induced = exercises
            .strip_prefix("induces ")
            .and_then(|r| r.split(':').next())
            .unwrap_or_else(|| panic!("{scenario}: no \"induces CAUSE:\" in {exercises:?}"));
        assert_eq!(meta["status"], "ok", "{scenario}: the lab run failed");
        let doc = report_json(&dir.join(format!("{scenario}.pcap")));
        let got = causes(&doc);
        assert_eq!(
            got.first().map(String::as_str),
            Some(induced),
            "{scenario} induced {induced}: {:#}",
            doc["diagnosis"]
        );
        seen.push((scenario.to_string(), doc["diagnosis"][0].clone()));
    }
    // The lab's own list (scenarios.sh), so a scenario added there without
    // its capture here fails.
    let catalogue = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures/lab/guest/scenarios.sh"),
    )
    .unwrap();
    let line = catalogue
        .lines()
        .find_map(|l| l.strip_prefix("DIAG_SCENARIOS=\""))
        .expect("DIAG_SCENARIOS in scenarios.sh");
    let mut listed: Vec<&str> = line.trim_end_matches('"').split_whitespace().collect();
    listed.sort_unstable();
    let names: Vec<&str> = seen.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(
        names, listed,
        "every scenario of DIAG_SCENARIOS has its capture"
    );
    let first = |name: &str| &seen.iter().find(|(s, _)| s == name).unwrap().1;
    // The server granted 4 credits against the client's 128: the grant limits.
    assert_eq!(first("diag-credits")["peer"], "server");
    // The large ACL: SYSTEM_ERR in the reply chunk, and the client's
    // reconnect loop after it.
    let acl = first("diag-acl")["impact"]["measured"].as_str().unwrap();
    assert!(
        acl.contains("SYSTEM_ERR") && acl.contains("new connection"),
        "{acl}"
    );
    // A lease a server-local process holds: the v3 WRITE's JUKEBOX and the
    // v4.2 OPEN's DELAYs (answered in the reply chunk Linux offers for
    // every OPEN), each with the client's retry after it (tshark counts 6
    // `nfs.status == 10008` replies).
    let nfs = first("diag-nfs-errors")["impact"]["measured"]
        .as_str()
        .unwrap();
    assert!(
        nfs.contains("5 NFS4ERR_DELAY in OPEN")
            && nfs.contains("1 NFS3ERR_JUKEBOX in WRITE")
            && nfs.contains("6 retries after DELAY/JUKEBOX"),
        "{nfs}"
    );
    // The slow disk: the WRITEs, not the metadata calls.
    let slow = &first("diag-slow-server")["evidence"]["examples"][0];
    assert!(slow.as_str().unwrap().contains("WRITE"), "{slow}");
    // The userspace peer's refused headers: both codes the 6.1 server
    // sends, each on its own connection.
    let refused = first("diag-rdma-error")["evidence"]["examples"].to_string();
    assert!(
        refused.contains("ERR_VERS") && refused.contains("ERR_CHUNK"),
        "{refused}"
    );
    assert_eq!(first("diag-rdma-error")["peer"], "client");
    // The peer's 8 KiB Sends, one per connection (the server drops each).
    let overrun = &first("diag-overrun")["evidence"];
    assert_eq!(overrun["connections"].as_array().map(Vec::len), Some(3));
    assert!(
        overrun["examples"][0]
            .as_str()
            .unwrap()
            .contains("Send of 8192 bytes"),
        "{overrun}"
    );
    // Each RNR NAK is followed by the server's Send again after the RNR
    // timer: a retry the NAK explains, not a loss (no network_loss at all).
    let rnr = report_json(&dir.join("diag-rnr.pcap"));
    assert_eq!(causes(&rnr), ["rnr_retry"], "{:#}", rnr["diagnosis"]);
    // The oversized Sends were the client's calls: the client is to fix.
    assert_eq!(first("diag-overrun")["peer"], "client");
    // The NAKs came from the peer (the client side) that posted late.
    assert_eq!(rnr["diagnosis"][0]["peer"], "client");
}

#[test]
fn each_induced_cause_comes_first() {
    for (tag, args, cause) in [
        (
            "credits",
            &["--window", "16", "--credits", "16"][..],
            "credit_window_full",
        ),
        ("errchunk", &["--inject", "err_chunk"][..], "rdma_error"),
        ("errvers", &["--inject", "err_vers"][..], "rdma_error"),
        (
            "overrun",
            &["--inject", "inline_threshold_exceeded"][..],
            "receive_buffer_overrun",
        ),
        (
            "readdir",
            &["--mix", "readdir=100"][..],
            "reply_chunks_inline_threshold",
        ),
        (
            "longcall",
            &["--mix", "longcall=100"][..],
            "reply_chunks_inline_threshold",
        ),
        ("nfs", &["--inject", "nfs_error"][..], "nfs_errors"),
        ("congestion", &["--inject", "congestion"][..], "congestion"),
    ] {
        let s = Synth::new(tag, args);
        let doc = report_json(&s.0);
        let got = causes(&doc);
        assert_eq!(
            got.first().map(String::as_str),
            Some(cause),
            "{tag}: {:#}",
            doc["diagnosis"]
        );
    }
    // The same generator without an induced cause gives none.
    let clean = Synth::new("clean", &[]);
    assert_eq!(causes(&report_json(&clean.0)), Vec::<String>::new());
}

#[test]
fn the_causes_are_prometheus_series_while_named() {
    let series = |name: &str| -> Vec<String> {
        let out =
            std::env::temp_dir().join(format!("rdma-diagnosis-{}-{name}.prom", std::process::id()));
        run(&[
            "report",
            capture(name).to_str().unwrap(),
            "--metrics-out",
            out.to_str().unwrap(),
        ]);
        let text = std::fs::read_to_string(&out).expect("the metrics file");
        let _ = std::fs::remove_file(&out);
        text.lines()
            .filter(|l| l.starts_with("rdma_diagnosis_cause_impact{"))
            .map(str::to_string)
            .collect()
    };
    let reconnect = series("reconnect.pcap");
    assert!(
        reconnect[0].starts_with(
            r#"rdma_diagnosis_cause_impact{cause="reconnect_stall",peer="fabric"} 0.92"#
        ),
        "{reconnect:?}"
    );
    assert_eq!(series("v3-inline.pcap"), Vec::<String>::new());
}

#[test]
#[cfg(feature = "export")]
fn the_dataset_carries_the_operation_across_the_reconnect() {
    use arrow_array::{Array, Float64Array, Int64Array, UInt32Array};
    let dir = std::env::temp_dir().join(format!("rdma-diagnosis-{}-export", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    run(&[
        "export",
        "--out",
        dir.to_str().unwrap(),
        capture("reconnect.pcap").to_str().unwrap(),
    ]);
    let part = walk(&dir.join("transactions"))
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "parquet"));
    let file = std::fs::File::open(part.expect("a transactions file")).expect("open");
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("a Parquet file")
        .build()
        .expect("a reader");
    let mut found = Vec::new();
    for batch in reader {
        let b = batch.expect("a batch");
        let col = |n: &str| b.column_by_name(n).unwrap_or_else(|| panic!("{n}")).clone();
        let xid = col("xid");
        let xid = xid.as_any().downcast_ref::<UInt32Array>().unwrap();
        let trans = col("transmissions");
        let trans = trans.as_any().downcast_ref::<UInt32Array>().unwrap();
        let first = col("first_call_frame");
        let first = first.as_any().downcast_ref::<Int64Array>().unwrap();
        let app = col("app_latency_us");
        let app = app.as_any().downcast_ref::<Float64Array>().unwrap();
        for i in 0..b.num_rows() {
            if trans.value(i) > 1 {
                found.push((xid.value(i), trans.value(i), first.value(i), app.value(i)));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(found.len(), 1, "{found:?}");
    let (xid, trans, first, app) = found[0];
    assert_eq!((xid, trans, first), (0xcb7c_d736, 2, 230));
    assert!((21.9e6..22.0e6).contains(&app), "{app}");
}

/// Every file under `dir`.
#[cfg(feature = "export")]
fn walk(dir: &Path) -> Vec<PathBuf> {
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
    out
}

#[test]
#[cfg(feature = "export")]
fn the_dataset_has_the_causes_as_a_table() {
    use arrow_array::{Array, Float64Array, StringArray, StructArray};
    let dir = std::env::temp_dir().join(format!("rdma-diagnosis-{}-causes", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let said = run(&[
        "export",
        "--out",
        dir.to_str().unwrap(),
        capture("reconnect.pcap").to_str().unwrap(),
        capture("v3-inline.pcap").to_str().unwrap(),
    ]);
    assert!(
        said.contains("2 causes") && said.contains("0 causes"),
        "{said}"
    );
    let files = walk(&dir.join("diagnosis"));
    // v3-inline.pcap named none: only reconnect.pcap has a file.
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].to_string_lossy().contains("capture=reconnect"));
    let file = std::fs::File::open(&files[0]).expect("open");
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("a Parquet file")
        .build()
        .expect("a reader");
    let mut rows = Vec::new();
    for batch in reader {
        let b = batch.expect("a batch");
        let cause = b.column_by_name("cause").expect("cause").clone();
        let cause = cause.as_any().downcast_ref::<StringArray>().unwrap();
        let impact = b.column_by_name("impact").expect("impact").clone();
        let impact = impact.as_any().downcast_ref::<StructArray>().unwrap();
        let score = impact.column_by_name("score").expect("score").clone();
        let score = score.as_any().downcast_ref::<Float64Array>().unwrap();
        for i in 0..b.num_rows() {
            rows.push((cause.value(i).to_string(), score.value(i)));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(
        (rows[0].0.as_str(), rows[1].0.as_str()),
        ("reconnect_stall", "network_loss")
    );
    assert!(rows[0].1 > 0.9 && rows[1].1 < rows[0].1, "{rows:?}");
}

#[test]
fn a_connection_torn_down_as_the_capture_ends_is_no_outage() {
    // Every injection at once: c1 carries an unanswered call and is torn
    // down with the others as the capture ends; nothing replaces it, and
    // the capture stops there, so its timeline names no outage.
    let s = Synth::new("timeline", &["--connections", "3", "--inject", "all"]);
    let doc = report_json(&s.0);
    let tl = doc["timeline"].as_array().expect("a timeline");
    let c1 = tl
        .iter()
        .flat_map(|c| c["connections"].as_array().unwrap())
        .find(|e| e["connection"] == "c1")
        .expect("c1 on the timeline");
    assert!(c1["unanswered_calls"].as_u64().unwrap() >= 1, "{c1}");
    assert!(exact::num(&c1["torn_down_ts_ns"]).is_some(), "{c1}");
    for c in tl {
        assert_eq!(c["outages"], serde_json::json!([]), "{c}");
    }
}

/// A mountstats copy with the `xprt: rdma` lines the lab recorded for
/// `scenario` (its `SC.json`, taken at the umount: counters since mount).
fn lab_mountstats(dir: &Path, scenario: &str) -> PathBuf {
    let json: Value = serde_json::from_str(
        &std::fs::read_to_string(capture(&format!("{scenario}.json"))).unwrap(),
    )
    .unwrap();
    let mut text = String::from(
        "device 10.99.0.1:/srv/export mounted on /mnt/lab with fstype nfs statvers=1.1\n\topts:\trw,proto=rdma\n",
    );
    for x in json["xprt_rdma_mountstats"]
        .as_array()
        .expect("the lab's xprt lines")
    {
        text.push_str(&format!("\txprt:\t{}\n", x.as_str().unwrap()));
    }
    let path = dir.join(format!("{scenario}.mountstats"));
    std::fs::write(&path, text).unwrap();
    path
}

fn report_with(capture_path: &Path, args: &[&str]) -> Value {
    let mut all = vec!["report", "--json", capture_path.to_str().unwrap()];
    all.extend_from_slice(args);
    serde_json::from_str(&run(&all)).expect("report JSON")
}

#[test]
fn without_the_kernel_view_its_causes_are_said_not_checked() {
    let path = capture("v42-reminv.pcap");
    let doc = report_json(&path);
    assert_eq!(
        doc["not_checked"],
        serde_json::json!(["no_remote_invalidation", "mr_exhaustion"])
    );
    let text = run(&["report", path.to_str().unwrap()]);
    assert!(
        text.contains("kernel view not given: no_remote_invalidation, mr_exhaustion not checked"),
        "{text}"
    );
}

#[test]
fn the_bundled_mountstats_with_its_capture_gives_no_cause() {
    // nconnect: 3 local invalidations (the mount's multi-segment reply
    // chunks) of 147 segments; the other 144 were remotely invalidated.
    let doc = report_with(
        &capture("nconnect.pcap"),
        &[
            "--mountstats",
            capture("nconnect.mountstats.txt").to_str().unwrap(),
        ],
    );
    assert_eq!(causes(&doc), Vec::<String>::new(), "{:#}", doc["diagnosis"]);
    assert_eq!(doc["not_checked"], serde_json::json!([]));
    let text = run(&[
        "report",
        capture("nconnect.pcap").to_str().unwrap(),
        "--mountstats",
        capture("nconnect.mountstats.txt").to_str().unwrap(),
    ]);
    assert!(
        text.contains(
            "kernel view: 4 RDMA transport(s) of 1 mount(s), counters since each mount's start"
        ),
        "{text}"
    );
}

#[test]
fn local_invalidation_of_every_segment_is_named_and_remote_invalidation_is_not() {
    let dir = tempfile::tempdir().unwrap();
    // v42-reminv and parallel: one R_key per call, the server invalidates
    // remotely (0 of 28 and 3 of 483 segments invalidated locally).
    for name in ["v42-reminv", "parallel"] {
        let ms = lab_mountstats(dir.path(), name);
        let doc = report_with(
            &capture(&format!("{name}.pcap")),
            &["--mountstats", ms.to_str().unwrap()],
        );
        assert_eq!(
            causes(&doc),
            Vec::<String>::new(),
            "{name}: {:#}",
            doc["diagnosis"]
        );
    }
    // v3-ddp: a 256 KiB rsize gives each READ two R_keys; the server
    // invalidates none and the client all 52 segments itself.
    let ms = lab_mountstats(dir.path(), "v3-ddp");
    let doc = report_with(
        &capture("v3-ddp.pcap"),
        &["--mountstats", ms.to_str().unwrap()],
    );
    assert_eq!(
        causes(&doc),
        ["no_remote_invalidation"],
        "{:#}",
        doc["diagnosis"]
    );
    let c = &doc["diagnosis"][0];
    assert_eq!(c["peer"], "server");
    assert_eq!(c["impact"]["rpcs_affected"], 24, "{c:#}");
    let measured = c["impact"]["measured"].as_str().unwrap();
    assert!(measured.contains("52 of 52 chunk segments"), "{measured}");
    assert!(measured.contains("since the mount"), "{measured}");
}

#[test]
fn an_mr_pool_refilled_without_a_reconnect_is_mr_exhaustion() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, xprt: &str| {
        let p = dir.path().join(name);
        std::fs::write(
            &p,
            format!("device 10.99.0.1:/srv/export mounted on /mnt/lab with fstype nfs statvers=1.1\n\topts:\trw,proto=rdma\n\txprt:\trdma {xprt}\n"),
        )
        .unwrap();
        p
    };
    let before = write(
        "before",
        "0 0 1 0 0 4 4 0 4 0 0 0 0 0 0 0 0 0 0 0 0 0 0 11 0 0 0",
    );
    let after = write(
        "after",
        "0 0 1 0 0 66 66 0 150 0 8 16 4 0 0 0 0 0 0 0 0 0 0 22 0 0 0",
    );
    let doc = report_with(
        &capture("v42-reminv.pcap"),
        &[
            "--mountstats",
            after.to_str().unwrap(),
            "--mountstats-before",
            before.to_str().unwrap(),
        ],
    );
    assert_eq!(causes(&doc), ["mr_exhaustion"], "{:#}", doc["diagnosis"]);
    assert_eq!(doc["diagnosis"][0]["peer"], "client");
    // The same counters since mount cannot tell a refill from a connect.
    let doc = report_with(
        &capture("v42-reminv.pcap"),
        &["--mountstats", after.to_str().unwrap()],
    );
    assert_eq!(causes(&doc), Vec::<String>::new(), "{:#}", doc["diagnosis"]);
}
