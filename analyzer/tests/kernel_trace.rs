//! The engine against the kernel's own record of the same run.
//!
//! Every capture in `captures/` comes with the `rpcrdma` tracepoint output
//! of both lab guests (the ground truth: the kernel knows every XID, chunk
//! segment, credit value and invalidation it sent). What the engine
//! reconstructs from the wire alone must agree with it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

#[path = "common/analyze.rs"]
mod analyze;
use rdma_analyzer::engine::{ChunkKind, Config, Finding, Transaction};

fn captures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures")
}

/// What the kernel traces say about one scenario.
#[derive(Debug, Default)]
struct Truth {
    xids: BTreeSet<u32>,
    calls: usize,
    granted: BTreeMap<u32, u32>,
    requested: BTreeMap<u32, u32>,
    handles: BTreeMap<&'static str, BTreeSet<u32>>,
    invalidated: BTreeSet<u32>,
    reminv_client: BTreeSet<u32>,
}

fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let i = line.find(key)? + key.len();
    line[i..].split([' ', ',']).next()
}

fn hex(s: &str) -> u32 {
    u32::from_str_radix(s.trim_start_matches("0x"), 16)
        .unwrap_or_else(|e| panic!("bad hex {s:?}: {e}"))
}

/// `LEN@0xOFFSET:0xHANDLE` in chunk and MR events.
fn seg_handle(line: &str) -> Option<u32> {
    let at = line.find('@')?;
    let colon = line[at..].find(':')? + at;
    Some(hex(line[colon + 1..].split_whitespace().next()?))
}

fn truth(client: &Path, server: &Path) -> Truth {
    let mut t = Truth::default();
    for line in fs::read_to_string(client).unwrap().lines() {
        if line.contains("xprtrdma_marshal:") {
            t.xids.insert(hex(field(line, "xid=").unwrap()));
            t.calls += 1;
        } else if line.contains("xprtrdma_reply:") {
            let xid = hex(field(line, "xid=").unwrap());
            let credits: u32 = field(line, "credits=").unwrap().parse().unwrap();
            t.granted.insert(xid, credits);
        } else if let Some(kind) = ["chunk_read", "chunk_write", "chunk_reply"]
            .iter()
            .find(|k| line.contains(&format!("xprtrdma_{k}:")))
        {
            let name = match *kind {
                "chunk_read" => "read",
                "chunk_write" => "write",
                _ => "reply",
            };
            t.handles
                .entry(name)
                .or_default()
                .insert(seg_handle(line).unwrap());
        } else if line.contains("xprtrdma_mr_reminv:") {
            t.reminv_client.insert(seg_handle(line).unwrap());
        }
    }
    for line in fs::read_to_string(server).unwrap().lines() {
        if line.contains("svcrdma_decode_rqst:") {
            let xid = hex(field(line, "xid=").unwrap());
            t.requested
                .insert(xid, field(line, "credits=").unwrap().parse().unwrap());
        } else if line.contains("svcrdma_post_send:") {
            let k = hex(field(line, "inv_rkey=").unwrap());
            if k != 0 {
                t.invalidated.insert(k);
            }
        }
    }
    t
}

fn engine_txns(pcap: &Path) -> Vec<Transaction> {
    let mut txns = Vec::new();
    let outcome = analyze::run_file(pcap, Config::default(), |f| {
        if let Finding::Transaction(t) = f {
            txns.push(*t);
        }
    })
    .unwrap();
    assert!(outcome.error().is_none(), "{:?}", outcome.error());
    txns
}

#[test]
fn every_capture_agrees_with_its_kernel_trace() {
    let mut checked = 0;
    let mut entries: Vec<_> = fs::read_dir(captures())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for pcap in entries
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "pcap"))
    {
        let stem = pcap.file_stem().unwrap().to_string_lossy().to_string();
        let client = captures().join(format!("{stem}.client.trace.txt"));
        let server = captures().join(format!("{stem}.server.trace.txt"));
        if !client.exists() || !server.exists() {
            continue;
        }
        let t = truth(&client, &server);
        let txns: Vec<Transaction> = engine_txns(pcap)
            .into_iter()
            .filter(|t| !t.backchannel)
            .collect();
        let xids: BTreeSet<u32> = txns.iter().map(|t| t.xid).collect();
        assert_eq!(xids, t.xids, "{stem}: XIDs on the wire vs xprtrdma_marshal");
        // A retransmitted XID is one transaction per connection it was sent on.
        assert!(
            txns.len() >= t.xids.len() && txns.len() <= t.calls,
            "{stem}: {} transactions, trace has {} marshals",
            txns.len(),
            t.calls
        );
        for tx in &txns {
            if let (Some(g), Some(want)) = (tx.credits_granted, t.granted.get(&tx.xid)) {
                assert_eq!(g, *want, "{stem}: credits granted to xid {:#x}", tx.xid);
            }
            if let Some(want) = t.requested.get(&tx.xid) {
                assert_eq!(
                    tx.credits_requested,
                    Some(*want),
                    "{stem}: credits requested by xid {:#x}",
                    tx.xid
                );
            }
        }
        for (name, kind) in [
            ("read", ChunkKind::Read),
            ("write", ChunkKind::Write),
            ("reply", ChunkKind::Reply),
        ] {
            let wire: BTreeSet<u32> = txns
                .iter()
                .flat_map(|t| t.chunks.iter())
                .filter(|s| s.kind == kind)
                .map(|s| s.handle)
                .collect();
            let kernel = t.handles.get(name).cloned().unwrap_or_default();
            assert_eq!(wire, kernel, "{stem}: {name} chunk handles");
        }
        let inv: BTreeSet<u32> = txns
            .iter()
            .filter_map(|t| t.remote_invalidated_rkey)
            .collect();
        assert_eq!(
            inv, t.invalidated,
            "{stem}: R_Keys invalidated (svcrdma_post_send inv_rkey)"
        );
        assert_eq!(
            inv, t.reminv_client,
            "{stem}: R_Keys invalidated (xprtrdma_mr_reminv)"
        );
        eprintln!(
            "{stem}: {} transactions, {} XIDs, chunks read/write/reply {}/{}/{}, {} invalidated",
            txns.len(),
            xids.len(),
            t.handles.get("read").map_or(0, BTreeSet::len),
            t.handles.get("write").map_or(0, BTreeSet::len),
            t.handles.get("reply").map_or(0, BTreeSet::len),
            inv.len()
        );
        checked += 1;
    }
    assert!(
        checked >= 2,
        "expected at least two captures with kernel traces in {}",
        captures().display()
    );
}

#[test]
fn captures_match_their_published_sha256() {
    let out = std::process::Command::new("sha256sum")
        .args(["--strict", "-c", "SHA256SUMS"])
        .current_dir(captures())
        .output()
        .expect("run sha256sum (coreutils)");
    assert!(
        out.status.success(),
        "captures differ from captures/SHA256SUMS:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = fs::read_to_string(captures().join("SHA256SUMS")).unwrap();
    for entry in fs::read_dir(captures()).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if name.ends_with(".pcap") {
            assert!(
                listed.contains(&name),
                "{name} is not listed in captures/SHA256SUMS"
            );
        }
    }
}
