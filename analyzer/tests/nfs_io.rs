//! The file handle and byte range of every NFS READ, WRITE and COMMIT in
//! `transactions --json`, against tshark's NFS dissector on the bundled
//! captures; and the link from a call answered NFS3ERR_JUKEBOX to the
//! client's retry under a new XID (`synth --inject nfs_error`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

#[path = "common/exact.rs"]
mod exact;
#[path = "common/prereq.rs"]
mod prereq;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

fn capture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../captures")
        .join(name)
}

fn transactions(pcap: &Path) -> Vec<Value> {
    let out = Command::new(BIN)
        .arg("transactions")
        .arg("--json")
        .arg(pcap)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "transactions --json {}: {}",
        pcap.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// tshark's fields, in this order.
const FIELDS: &[&str] = &[
    "rpc.xid",
    "rpc.msgtyp",
    "nfs.procedure_v3",
    "nfs.opcode",
    "nfs.fh.hash",
    "nfs.offset3",
    "nfs.offset4",
    "nfs.count3",
    "nfs.count4",
    "nfs.write.data_length",
    "nfs.read.data_length",
    "nfs.write.stable",
    "nfs.write.committed",
    "nfs.stable_how4",
    "nfs.read.eof",
    "nfs.eof",
];

/// What tshark says of one call or reply, as our JSON would say it.
#[derive(Debug, Clone, PartialEq)]
struct Io {
    op: &'static str,
    fh_hash: Option<u64>,
    offset: Option<u64>,
    count: Option<u64>,
    stable: Option<String>,
    eof: Option<bool>,
}

fn num(s: &str) -> Option<u64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

fn stable_name(s: &str) -> Option<String> {
    num(s).map(|v| match v {
        0 => "UNSTABLE".to_string(),
        1 => "DATA_SYNC".to_string(),
        2 => "FILE_SYNC".to_string(),
        v => format!("stable_how {v}"),
    })
}

/// (xid, is_reply) -> what tshark decoded, for the READ/WRITE/COMMIT
/// calls and replies of `pcap`.
fn tshark_io(pcap: &Path) -> BTreeMap<(u64, bool), Io> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(pcap).args([
        "-Y",
        "nfs.procedure_v3 == 6 || nfs.procedure_v3 == 7 || nfs.procedure_v3 == 21 || nfs.opcode == 25 || nfs.opcode == 38 || nfs.opcode == 5",
        "-T",
        "fields",
        "-E",
        "separator=\t",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=,",
    ]);
    for f in FIELDS {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("run tshark");
    assert!(
        out.status.success(),
        "tshark: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut rows = BTreeMap::new();
    let text = String::from_utf8(out.stdout).unwrap();
    for line in text.lines() {
        let row = Row(line.split('\t').map(|f| f.split(',').collect()).collect());
        let xid = num(row.get("rpc.xid")).unwrap();
        let reply = row.get("rpc.msgtyp") == "1";
        let io = if row.get("nfs.procedure_v3").is_empty() {
            let op = row
                .all("nfs.opcode")
                .iter()
                .find_map(|o| match *o {
                    "25" => Some("READ"),
                    "38" => Some("WRITE"),
                    "5" => Some("COMMIT"),
                    _ => None,
                })
                .unwrap();
            v4_row(&row, op, reply)
        } else {
            v3_row(&row, reply)
        };
        rows.insert((xid, reply), io);
    }
    rows
}

/// One line of tshark's fields, each split at the aggregator.
struct Row<'a>(Vec<Vec<&'a str>>);

impl<'a> Row<'a> {
    fn all(&self, name: &str) -> &[&'a str] {
        let i = FIELDS.iter().position(|x| *x == name).unwrap();
        self.0.get(i).map_or(&[], Vec::as_slice)
    }

    /// The first occurrence: tshark decodes a reply reassembled from a
    /// chunk a second time.
    fn get(&self, name: &str) -> &'a str {
        self.all(name).first().copied().unwrap_or("")
    }
}

fn v3_row(r: &Row<'_>, reply: bool) -> Io {
    let get = |n| r.get(n);
    let op = match get("nfs.procedure_v3") {
        "6" => "READ",
        "7" => "WRITE",
        _ => "COMMIT",
    };
    if reply {
        return Io {
            op,
            fh_hash: None,
            offset: None,
            count: num(get("nfs.count3")).filter(|_| op != "COMMIT"),
            stable: stable_name(get("nfs.write.committed")),
            eof: num(get("nfs.read.eof")).map(|v| v != 0),
        };
    }
    Io {
        op,
        fh_hash: num(get("nfs.fh.hash")),
        offset: num(get("nfs.offset3")),
        count: num(get("nfs.count3")),
        stable: stable_name(get("nfs.write.stable")),
        eof: None,
    }
}

fn v4_row(r: &Row<'_>, op: &'static str, reply: bool) -> Io {
    let get = |n| r.get(n);
    let stable = stable_name(get("nfs.stable_how4"));
    if reply {
        return Io {
            op,
            fh_hash: None,
            offset: None,
            count: match op {
                "READ" => num(get("nfs.read.data_length")),
                "WRITE" => num(get("nfs.count4")),
                _ => None,
            },
            stable,
            eof: num(get("nfs.eof")).map(|v| v != 0),
        };
    }
    Io {
        op,
        fh_hash: num(get("nfs.fh.hash")),
        offset: num(get("nfs.offset4")),
        count: match op {
            "WRITE" => num(get("nfs.write.data_length")),
            _ => num(get("nfs.count4")),
        },
        stable,
        eof: None,
    }
}

/// Our call and reply sides of one transaction, as tshark's rows say them.
fn ours(t: &Value) -> Option<(Io, Io)> {
    let io = t.get("nfs_io").filter(|v| !v.is_null())?;
    let op: &'static str = match io["op"].as_str()? {
        "READ" => "READ",
        "WRITE" => "WRITE",
        "COMMIT" => "COMMIT",
        other => panic!("op {other} in {t}"),
    };
    let s = |v: &Value| v.as_str().map(str::to_string);
    let call = Io {
        op,
        fh_hash: t["nfs_fh_hash"].as_u64(),
        offset: exact::num(&io["offset"]),
        count: io["count"].as_u64(),
        stable: s(&io["stable"]),
        eof: None,
    };
    let reply = Io {
        op,
        fh_hash: None,
        offset: None,
        count: io["reply_count"].as_u64(),
        stable: s(&io["committed"]),
        eof: io["eof"].as_bool(),
    };
    Some((call, reply))
}

/// Compares every READ/WRITE/COMMIT tshark decodes in `pcap` with ours;
/// returns (compared, disagreements as sentences).
fn compare(pcap: &Path) -> (usize, Vec<String>) {
    let theirs = tshark_io(pcap);
    let mut mine: BTreeMap<u64, (Io, Io)> = BTreeMap::new();
    for t in transactions(pcap) {
        if let Some(io) = ours(&t) {
            mine.insert(t["xid"].as_u64().unwrap(), io);
        }
    }
    let mut bad = Vec::new();
    let mut compared = 0;
    for ((xid, reply), want) in &theirs {
        let Some((call, rep)) = mine.get(xid) else {
            bad.push(format!(
                "xid {xid:#010x}: tshark decodes a {}, we have no nfs_io",
                want.op
            ));
            continue;
        };
        let got = if *reply { rep } else { call };
        compared += 1;
        if got != want {
            bad.push(format!(
                "xid {xid:#010x} {}: tshark {want:?}, ours {got:?}",
                if *reply { "reply" } else { "call" }
            ));
        }
    }
    for xid in mine.keys() {
        if !theirs.contains_key(&(*xid, false)) {
            bad.push(format!(
                "xid {xid:#010x}: we decode an I/O call tshark does not"
            ));
        }
    }
    (compared, bad)
}

#[test]
fn every_read_write_commit_matches_tshark() {
    if !prereq::tshark() {
        return;
    }
    let mut total = 0;
    for name in [
        "v3-ddp.pcap",
        "v42-ddp.pcap",
        "v42-reminv.pcap",
        "parallel.pcap",
        "v3-inline.pcap",
        "v41-inline.pcap",
        "v42-inline.pcap",
        "reconnect.pcap",
        "inline-thresholds.pcap",
    ] {
        let (n, bad) = compare(&capture(name));
        assert!(
            bad.is_empty(),
            "{name}: {} disagreements:\n{}",
            bad.len(),
            bad.join("\n")
        );
        eprintln!("{name}: {n} READ/WRITE/COMMIT calls and replies agree with tshark");
        total += n;
        if matches!(name, "v3-ddp.pcap" | "v42-ddp.pcap") {
            assert!(n >= 40, "{name}: only {n} calls and replies compared");
        }
    }
    assert!(total > 0);
}

/// v3-ddp.pcap writes a 2 MiB file in 256 KiB WRITEs: each has its
/// offset, a multiple of 256 KiB, and the same handle.
#[test]
fn each_256k_write_has_its_handle_offset_and_count() {
    let ts = transactions(&capture("v3-ddp.pcap"));
    let writes: Vec<&Value> = ts.iter().filter(|t| t["nfs_io"]["op"] == "WRITE").collect();
    assert_eq!(writes.len(), 8);
    let mut offsets: Vec<u64> = writes
        .iter()
        .map(|t| exact::num(&t["nfs_io"]["offset"]).unwrap())
        .collect();
    offsets.sort_unstable();
    assert_eq!(offsets, (0..8).map(|i| i * 262_144).collect::<Vec<_>>());
    for w in &writes {
        assert_eq!(w["nfs_io"]["count"], 262_144);
        assert_eq!(w["nfs_io"]["reply_count"], 262_144);
        assert_eq!(w["nfs_fh"], writes[0]["nfs_fh"]);
        assert_eq!(w["nfs_fh"].as_str().unwrap().len(), 72, "a 36-byte handle");
        assert!(w["retry_of_xid"].is_null());
    }
}

#[test]
fn a_jukebox_retry_is_linked_to_its_error() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("jukebox.pcap");
    let st = Command::new(BIN)
        .args(["synth", "--inject", "nfs_error", "-o"])
        .arg(&pcap)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let ts = transactions(&pcap);
    let errored: Vec<&Value> = ts
        .iter()
        .filter(|t| t["nfs_status"] == "NFS3ERR_JUKEBOX")
        .collect();
    assert_eq!(errored.len(), 1);
    let e = errored[0];
    let retries: Vec<&Value> = ts.iter().filter(|t| !t["retry_of_xid"].is_null()).collect();
    assert_eq!(retries.len(), 1, "exactly the one retry is linked");
    let r = retries[0];
    assert_eq!(r["retry_of_xid"], e["xid"]);
    assert_ne!(r["xid"], e["xid"]);
    assert_eq!(r["retry_of_connection"], e["connection"]);
    assert_eq!(r["procedure"], "GETATTR");
    assert_eq!(r["nfs_fh"], e["nfs_fh"]);
    // synth waits 100 ms after the error reply before the retry.
    let wait = r["retry_wait_us"].as_f64().unwrap();
    let from_ts = (exact::num(&r["call_ts_ns"]).unwrap() - exact::num(&e["reply_ts_ns"]).unwrap())
        as f64
        / 1000.0;
    assert!((wait - from_ts).abs() < 0.01, "{wait} vs {from_ts}");
    assert!((99_000.0..=101_000.0).contains(&wait), "waited {wait} µs");
    // The text line says so.
    let out = Command::new(BIN)
        .arg("transactions")
        .arg(&pcap)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let want = format!(
        "retry of {:#010x} after 100.0 ms",
        e["xid"].as_u64().unwrap()
    );
    assert!(text.contains(&want), "no `{want}` in:\n{text}");
    // The diagnosis counts the retry and the wait, and takes its time.
    let out = Command::new(BIN)
        .args(["report", "--json"])
        .arg(&pcap)
        .output()
        .unwrap();
    let rep: Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &rep["diagnosis"][0];
    assert_eq!(c["cause"], "nfs_errors");
    let m = c["impact"]["measured"].as_str().unwrap();
    assert!(
        m.contains("1 retry after DELAY/JUKEBOX, waited 0.100 s in total"),
        "{m}"
    );
    let ms = c["impact"]["time_ms"].as_f64().unwrap();
    assert!((99.0..=101.0).contains(&ms), "time_ms {ms}");
    assert!(c["impact"]["share_of_time"].as_f64().unwrap() > 0.5);
}

/// A clean capture links no retry: the table only takes calls answered
/// DELAY/JUKEBOX.
#[test]
fn clean_captures_link_no_retry() {
    for name in [
        "v3-ddp.pcap",
        "v42-ddp.pcap",
        "parallel.pcap",
        "reconnect.pcap",
    ] {
        let n = transactions(&capture(name))
            .iter()
            .filter(|t| !t["retry_of_xid"].is_null())
            .count();
        assert_eq!(n, 0, "{name}");
    }
}

/// A snap length cuts the WRITE call of xid 0xfa7da3d4 (v3-ddp.pcap frame
/// 82, 266 bytes with the ICRC) inside its arguments: the fields before the cut are
/// kept, the ones after are null, never 0; the reply's side is whole.
#[test]
fn a_cut_call_keeps_the_fields_before_the_cut() {
    if !prereq::require(
        "editcap",
        prereq::have_command("editcap", "-h"),
        "apt install tshark",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // (snap length, fh known, offset, count, stable)
    // The arguments start at byte 202: the handle (4 + 36 bytes) ends at
    // 242, the offset at 250, the count at 254, stable at 258.
    let cases = [
        (230, false, None, None, None),
        (242, true, None, None, None),
        (250, true, Some(262_144), None, None),
        (253, true, Some(262_144), None, None),
        (254, true, Some(262_144), Some(262_144), None),
        (258, true, Some(262_144), Some(262_144), Some("UNSTABLE")),
    ];
    for (snap, fh, offset, count, stable) in cases {
        let out = dir.path().join(format!("s{snap}.pcap"));
        let st = Command::new("editcap")
            .arg("-s")
            .arg(snap.to_string())
            .arg(capture("v3-ddp.pcap"))
            .arg(&out)
            .status()
            .unwrap();
        assert!(st.success());
        let ts = transactions(&out);
        let t = ts.iter().find(|t| t["xid"] == 0xfa7d_a3d4_u64).unwrap();
        assert_eq!(t["nfs_fh"].is_string(), fh, "snap {snap}: {t}");
        let io = &t["nfs_io"];
        if !fh {
            assert!(io.is_null(), "snap {snap}: {io}");
            continue;
        }
        assert_eq!(io["op"], "WRITE");
        assert_eq!(exact::num(&io["offset"]), offset, "snap {snap}");
        assert_eq!(io["count"].as_u64(), count, "snap {snap}");
        assert_eq!(io["stable"].as_str(), stable, "snap {snap}");
        assert_eq!(io["reply_count"], 262_144, "snap {snap}");
        assert_eq!(io["committed"], "UNSTABLE", "snap {snap}");
    }
}
