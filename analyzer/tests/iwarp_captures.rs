//! The bundled iWARP captures (`captures/iwarp/*.pcap`, NFS over soft-iWARP
//! from the lab: `captures/lab/run.sh --fabric siw`) against their committed
//! facts (`*.tshark-facts`): what tshark, an independent dissector, counts in
//! each (MPA Request/Reply, FPDUs, DDP segments, RDMAP opcodes, RPC-over-RDMA
//! messages). The facts are what the analyzer's iWARP dissectors and engine
//! are checked against; this test keeps them true to the capture, so a
//! capture replaced without its facts, or facts edited by hand, fail here.
//!
//! tshark is a prerequisite (`scripts/test.sh` requires it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "common/prereq.rs"]
mod prereq;

/// RDMAP opcodes (RFC 5040 section 4.3, RFC 7306's atomics left out: siw does
/// not send them), by the names the facts files use.
const OPCODES: &[(u8, &str)] = &[
    (0, "rdma_write"),
    (1, "rdma_read_request"),
    (2, "rdma_read_response"),
    (3, "send"),
    (4, "send_invalidate"),
    (5, "send_se"),
    (6, "send_se_invalidate"),
    (7, "terminate"),
];

/// The fields read per frame, in this order (`-E occurrence=a`: every DDP
/// segment of a frame, comma-separated, in wire order).
const FIELDS: &[&str] = &[
    "iwarp_mpa.key.req",
    "iwarp_mpa.key.rep",
    "iwarp_mpa.rej_flag",
    "iwarp_mpa.ulpdulength",
    "iwarp_ddp.tagged_flag",
    "iwarp_ddp.last_flag",
    "iwarp_rdma.opcode",
    "rpcordma.msg_type",
    "iwarp_mpa.rev",
    "iwarp_mpa.crc_flag",
    "iwarp_mpa.marker_flag",
];

fn iwarp_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures/iwarp")
}

/// `tshark -r PCAP` counted into facts. tshark finds MPA by its heuristic
/// (a stream from its MPA Request on; iwarp_mpa cannot be forced with
/// `-d tcp.port==`), so the lab's captures start before the mount.
fn tshark_facts(pcap: &Path) -> BTreeMap<String, u64> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-n").arg("-r").arg(pcap);
    cmd.args(["-T", "fields"]);
    cmd.args([
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=,",
        "-E",
        "separator=/t",
    ]);
    for f in FIELDS {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("run tshark");
    assert!(
        out.status.success(),
        "tshark failed on {}: {}",
        pcap.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut facts: BTreeMap<String, u64> = BTreeMap::new();
    let mut add = |k: &str, n: u64| *facts.entry(k.to_string()).or_default() += n;
    for (_, name) in OPCODES {
        add(&format!("segments.{name}"), 0);
        add(&format!("messages.{name}"), 0);
    }
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let cols: Vec<Vec<&str>> = line
            .split('\t')
            .map(|c| c.split(',').filter(|v| !v.is_empty()).collect())
            .collect();
        let col = |i: usize| cols.get(i).cloned().unwrap_or_default();
        add("frames", 1);
        add("mpa_requests", col(0).len() as u64);
        add("mpa_replies", col(1).len() as u64);
        add("mpa_rejects", count_true(&col(2)));
        add("mpa_crc_flags", count_true(&col(9)));
        add("mpa_marker_flags", count_true(&col(10)));
        // One MPA Request or Reply per frame at most (each opens its stream).
        for (kind, present) in [
            ("requests", !col(0).is_empty()),
            ("replies", !col(1).is_empty()),
        ] {
            if present {
                for rev in col(8) {
                    add(&format!("mpa_{kind}_rev{rev}"), 1);
                }
            }
        }
        add("fpdus", col(3).len() as u64);
        let (tagged, last, opcode) = (col(4), col(5), col(6));
        assert_eq!(
            (tagged.len(), last.len()),
            (opcode.len(), opcode.len()),
            "{}: a DDP segment without its RDMAP opcode in: {line}",
            pcap.display()
        );
        let n_tagged = count_true(&tagged);
        add("ddp_tagged_segments", n_tagged);
        add("ddp_untagged_segments", tagged.len() as u64 - n_tagged);
        for (op, l) in opcode.iter().zip(&last) {
            let name = opcode_name(op, pcap);
            add(&format!("segments.{name}"), 1);
            if is_true(l) {
                add(&format!("messages.{name}"), 1);
            }
        }
        add("rpcrdma_messages", col(7).len() as u64);
    }
    facts
}

fn is_true(v: &str) -> bool {
    matches!(v, "1" | "True" | "true")
}

fn count_true(vals: &[&str]) -> u64 {
    vals.iter().filter(|v| is_true(v)).count() as u64
}

fn opcode_name(v: &str, pcap: &Path) -> &'static str {
    let n = v
        .strip_prefix("0x")
        .map_or_else(|| v.parse::<u8>(), |h| u8::from_str_radix(h, 16))
        .unwrap_or_else(|_| panic!("{}: tshark opcode {v:?} is not a number", pcap.display()));
    OPCODES
        .iter()
        .find(|(o, _)| *o == n)
        .map(|(_, name)| *name)
        .unwrap_or_else(|| panic!("{}: RDMAP opcode {n} outside RFC 5040's", pcap.display()))
}

/// `name value` lines; `#` starts a comment.
fn read_facts(path: &Path) -> BTreeMap<String, u64> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (every iWARP capture has its facts)",
            path.display()
        )
    });
    let mut facts = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let (k, v) = line
            .split_once(char::is_whitespace)
            .unwrap_or_else(|| panic!("{}:{}: expected 'name value'", path.display(), i + 1));
        let v = v
            .trim()
            .parse::<u64>()
            .unwrap_or_else(|_| panic!("{}:{}: '{v}' is not a count", path.display(), i + 1));
        assert!(
            facts.insert(k.to_string(), v).is_none(),
            "{}:{}: {k} given twice",
            path.display(),
            i + 1
        );
    }
    facts
}

fn iwarp_pcaps() -> Vec<PathBuf> {
    let mut pcaps: Vec<_> = std::fs::read_dir(iwarp_dir())
        .expect("captures/iwarp/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcap"))
        .collect();
    pcaps.sort();
    assert!(!pcaps.is_empty(), "no captures in captures/iwarp/");
    pcaps
}

#[test]
fn iwarp_captures_hold_the_facts_tshark_counts() {
    if !prereq::tshark() {
        return;
    }
    for pcap in iwarp_pcaps() {
        let expected = read_facts(&pcap.with_extension("tshark-facts"));
        let counted = tshark_facts(&pcap);
        assert_eq!(
            counted,
            expected,
            "{}: tshark's counts differ from the committed facts",
            pcap.display()
        );
    }
}

/// The captures are what the lab's NFS-over-siw runs are about: one MPA
/// exchange per connection, RPC-over-RDMA in untagged Sends, and the bulk
/// data by RDMA Read and Write (the chunks). A capture of the wrong fabric or
/// of a failed run would still "agree with itself" above.
#[test]
fn iwarp_captures_carry_nfs_over_rdma_with_chunks() {
    for pcap in iwarp_pcaps() {
        let f = read_facts(&pcap.with_extension("tshark-facts"));
        let get = |k: &str| {
            *f.get(k)
                .unwrap_or_else(|| panic!("{}: no {k}", pcap.display()))
        };
        let name = pcap.display();
        assert!(get("mpa_requests") >= 1, "{name}: no MPA Request");
        assert_eq!(
            get("mpa_requests"),
            get("mpa_replies"),
            "{name}: an MPA Request unanswered"
        );
        assert_eq!(get("mpa_rejects"), 0, "{name}: a rejected connection");
        let sends: u64 = ["send", "send_invalidate", "send_se", "send_se_invalidate"]
            .iter()
            .map(|s| get(&format!("messages.{s}")))
            .sum();
        assert_eq!(
            sends,
            get("rpcrdma_messages"),
            "{name}: a Send that is not RPC-over-RDMA"
        );
        assert!(
            get("messages.rdma_write") + get("messages.rdma_read_request") > 0,
            "{name}: no chunk moved"
        );
        assert_eq!(
            get("messages.rdma_read_request"),
            get("messages.rdma_read_response"),
            "{name}: an RDMA Read Request without its response"
        );
        assert_eq!(
            get("messages.terminate"),
            0,
            "{name}: a Terminate in a clean run"
        );
        let stem = pcap
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        match stem {
            // One-segment write chunks: the server answers READs with Send
            // with Invalidate (remote invalidation).
            "v42-reminv" => assert!(
                get("messages.send_invalidate") > 0,
                "{name}: no remote invalidation"
            ),
            // The client's siw0 deleted and added again: a second MPA exchange.
            "reconnect" => assert!(get("mpa_requests") >= 2, "{name}: no second connection"),
            _ => {}
        }
    }
}

/// The folder's files are the committed ones (`captures/iwarp/SHA256SUMS`),
/// and every capture is listed there, as for the RoCE captures.
#[test]
fn iwarp_captures_match_their_published_sha256() {
    let out = Command::new("sha256sum")
        .args(["--strict", "-c", "SHA256SUMS"])
        .current_dir(iwarp_dir())
        .output()
        .expect("run sha256sum (coreutils)");
    assert!(
        out.status.success(),
        "captures/iwarp differs from its SHA256SUMS:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = std::fs::read_to_string(iwarp_dir().join("SHA256SUMS")).unwrap();
    for pcap in iwarp_pcaps() {
        let name = pcap.file_name().unwrap().to_string_lossy().to_string();
        let facts = format!(
            "{}.tshark-facts",
            pcap.file_stem().unwrap().to_string_lossy()
        );
        for f in [&name, &facts] {
            assert!(
                listed.lines().any(|l| l.ends_with(&format!(" {f}"))),
                "{f} is not listed in captures/iwarp/SHA256SUMS"
            );
        }
    }
}

#[path = "common/analyze.rs"]
mod analyze;

use rdma_analyzer::engine::{CmState, Config, Engine, Finding, Kind};

/// Each capture through the analyzer's pipeline: the engine and its anomalies.
fn analyzed(pcap: &Path) -> (Engine, Vec<Kind>) {
    let mut kinds = Vec::new();
    let run = analyze::run_file(pcap, Config::default(), |f| {
        if let Finding::Anomaly(a) = f {
            kinds.push(a.kind);
        }
    })
    .unwrap_or_else(|e| panic!("{}: {e}", pcap.display()));
    assert!(
        run.error().is_none(),
        "{}: {:?}",
        pcap.display(),
        run.error()
    );
    (run.engine, kinds)
}

/// The engine's own count of what tshark counts: every MPA, FPDU, DDP and
/// RDMAP figure of the facts, and the RPC-over-RDMA messages it decoded,
/// equal tshark's (an independent dissector) on every iWARP capture.
#[test]
fn the_engine_counts_what_tshark_counts() {
    for pcap in iwarp_pcaps() {
        let facts = read_facts(&pcap.with_extension("tshark-facts"));
        let (engine, _) = analyzed(&pcap);
        let t = &engine.state().totals;
        let n = &t.iwarp;
        let mut counted: BTreeMap<String, u64> = BTreeMap::new();
        for (k, v) in [
            ("mpa_requests", n.mpa_requests),
            ("mpa_replies", n.mpa_replies),
            ("mpa_rejects", n.mpa_rejects),
            ("fpdus", n.fpdus),
            ("ddp_tagged_segments", n.ddp_tagged_segments),
            ("ddp_untagged_segments", n.ddp_untagged_segments),
            ("rpcrdma_messages", t.rpcrdma_messages),
        ] {
            counted.insert(k.to_string(), v);
        }
        for (op, name) in OPCODES {
            let i = usize::from(*op);
            counted.insert(format!("segments.{name}"), n.segments[i]);
            counted.insert(format!("messages.{name}"), n.messages[i]);
        }
        let expected: BTreeMap<String, u64> = facts
            .iter()
            .filter(|(k, _)| counted.contains_key(*k))
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        assert_eq!(
            counted.len(),
            expected.len(),
            "{}: a counted figure missing from the facts",
            pcap.display()
        );
        assert_eq!(counted, expected, "{}: engine vs tshark", pcap.display());
        // Decoded, so not in the "recognised but not decoded" count, and
        // no stream octet went missing.
        assert!(
            t.not_decoded.is_empty(),
            "{}: {:?}",
            pcap.display(),
            t.not_decoded
        );
        assert_eq!((n.gaps, n.crc_invalid), (0, 0), "{}", pcap.display());
    }
}

/// A clean siw run reports clean: every connection iWARP, set up by its
/// MPA exchange and closed by FIN, no iWARP finding and no RPC-over-RDMA
/// finding beyond what the RoCE captures of the same lab show too (Linux
/// servers send Send with Invalidate without advertising R), every call
/// answered; the reconnect capture tells its story as two connections of
/// one client, one after the other.
#[test]
fn iwarp_reports_are_clean_where_roce_ones_are() {
    for pcap in iwarp_pcaps() {
        let name = pcap.display().to_string();
        let (engine, kinds) = analyzed(&pcap);
        let unexpected: Vec<_> = kinds
            .iter()
            .filter(|k| **k != Kind::RemoteInvalidationNotNegotiated)
            .collect();
        assert!(unexpected.is_empty(), "{name}: {unexpected:?}");
        let s = engine.state();
        assert_eq!(s.totals.calls, s.totals.replies, "{name}: unanswered calls");
        assert_eq!(
            s.totals.unassociated_frames, 0,
            "{name}: frames of no connection"
        );
        for c in s.connections.values() {
            assert_eq!(c.fabric(), Some("iWARP"), "{name}: {}", c.id);
            assert_eq!(c.cm_state, CmState::Closed, "{name}: {}", c.id);
            assert_eq!(c.port, Some(20049), "{name}: {}", c.id);
            let n = c.negotiated.expect("negotiated from the MPA private data");
            assert_eq!((n.inline_send, n.inline_recv), (4096, 4096), "{name}");
            assert!(c.calls > 0 && c.calls == c.replies, "{name}: {}", c.id);
        }
        let conns: Vec<_> = s.connections.values().collect();
        if name.ends_with("reconnect.pcap") {
            assert_eq!(conns.len(), 2, "{name}: a reconnect is two connections");
            let (a, b) = (conns[0], conns[1]);
            assert_eq!(a.client.map(|q| q.addr), b.client.map(|q| q.addr));
            assert_ne!(a.client, b.client, "{name}: the new connection's own port");
            assert!(b.first_ts_ns > a.last_ts_ns, "{name}: one after the other");
        } else {
            assert_eq!(conns.len(), 1, "{name}");
        }
    }
}

/// The report of `v3-ddp.pcap` (NFSv3 with read, write and reply chunks
/// over siw), against its reviewed snapshot: every section the RoCE report
/// has, with the connection's fabric iWARP and its MPA/FIN timeline.
#[test]
fn report_of_the_iwarp_v3_ddp_capture() {
    let out = Command::new(env!("CARGO_BIN_EXE_rdma-analyzer"))
        .current_dir(iwarp_dir())
        .args(["report", "v3-ddp.pcap"])
        .output()
        .expect("run rdma-analyzer");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8 report");
    insta::assert_snapshot!("report_iwarp_v3-ddp", text);
}
