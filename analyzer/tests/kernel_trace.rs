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
    // A task's chunks count once it is marshalled: after
    // `xprtrdma_marshal_failed` (-EAGAIN, out of MRs: seen on siw) the
    // client registers them again under new keys, and the first keys never
    // reach the wire.
    let mut pending: BTreeMap<String, Vec<(&'static str, u32)>> = BTreeMap::new();
    let task = |line: &str| field(line, "task:").unwrap_or_default().to_string();
    for line in fs::read_to_string(client).unwrap().lines() {
        if line.contains("xprtrdma_marshal:") {
            t.xids.insert(hex(field(line, "xid=").unwrap()));
            t.calls += 1;
            for (name, h) in pending.remove(&task(line)).unwrap_or_default() {
                t.handles.entry(name).or_default().insert(h);
            }
        } else if line.contains("xprtrdma_marshal_failed:") {
            pending.remove(&task(line));
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
            pending
                .entry(task(line))
                .or_default()
                .push((name, seg_handle(line).unwrap()));
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

/// The captures of `dir` with both guests' traces: (pcap, client, server).
fn traced(dir: &Path) -> Vec<(PathBuf, PathBuf, PathBuf)> {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcap"))
        .collect();
    entries.sort();
    entries
        .into_iter()
        .filter_map(|pcap| {
            let stem = pcap.file_stem()?.to_string_lossy().to_string();
            let client = dir.join(format!("{stem}.client.trace.txt"));
            let server = dir.join(format!("{stem}.server.trace.txt"));
            (client.exists() && server.exists()).then_some((pcap, client, server))
        })
        .collect()
}

/// RoCE (`captures/`) and iWARP (`captures/iwarp/`, NFS over siw) alike.
#[test]
fn every_capture_agrees_with_its_kernel_trace() {
    let mut checked = 0;
    let iwarp = traced(&captures().join("iwarp"));
    assert!(
        iwarp.len() >= 4,
        "expected the four iWARP captures with their traces"
    );
    for (pcap, client, server) in traced(&captures()).into_iter().chain(iwarp) {
        let stem = pcap
            .strip_prefix(captures())
            .unwrap_or(&pcap)
            .display()
            .to_string();
        let t = truth(&client, &server);
        let txns: Vec<Transaction> = engine_txns(&pcap)
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

/// The server's time per XID by its own trace: from the call's receive
/// completion (`svcrdma_wc_recv`) to the first reply work it posts
/// (`svcrdma_post_write_chunk`, `_post_reply_chunk` or `_post_send`), less
/// the time its RDMA Reads of the call's data took (`svcrdma_post_read_chunk`
/// to `svcrdma_wc_read`). The same definition as the diagnosis's wire-side
/// server time (wire latency less the data movement). Events are tied to an
/// XID by the nfsd thread that decoded it (one request at a time per thread)
/// and by completion id.
fn server_time_by_trace(server: &Path) -> BTreeMap<u32, u64> {
    let ts = |line: &str| -> Option<u64> {
        let head = line.split(": ").next()?;
        let t = head.split_whitespace().last()?;
        let (s, us) = t.split_once('.')?;
        Some(s.parse::<u64>().ok()? * 1_000_000_000 + us.parse::<u64>().ok()? * 1000)
    };
    let pid = |line: &str| -> Option<String> {
        Some(
            line.split_whitespace()
                .next()?
                .rsplit_once('-')?
                .1
                .to_string(),
        )
    };
    let cid = |line: &str| -> Option<String> {
        let q = field(line, "cq.id=").or_else(|| field(line, "cq_id="))?;
        Some(format!("{q}/{}", field(line, "cid=")?))
    };
    let mut recv_at: BTreeMap<String, u64> = BTreeMap::new(); // recv cid -> wc_recv
    let mut current: BTreeMap<String, (u32, u64)> = BTreeMap::new(); // pid -> (xid, start)
    let mut read_post: BTreeMap<String, (u32, u64)> = BTreeMap::new(); // read cid -> (xid, posted)
    let mut reads: BTreeMap<u32, u64> = BTreeMap::new(); // xid -> read time
    let mut out = BTreeMap::new();
    for line in fs::read_to_string(server).unwrap().lines() {
        let (Some(t), Some(c)) = (ts(line), cid(line)) else {
            continue;
        };
        if line.contains("svcrdma_wc_recv:") {
            recv_at.insert(c, t);
        } else if line.contains("svcrdma_decode_rqst:") {
            let xid = hex(field(line, "xid=").unwrap());
            let start = recv_at.get(&c).copied().unwrap_or(t);
            current.insert(pid(line).unwrap(), (xid, start));
        } else if line.contains("svcrdma_post_read_chunk:") {
            if let Some(&(xid, _)) = current.get(&pid(line).unwrap()) {
                read_post.insert(c, (xid, t));
            }
        } else if line.contains("svcrdma_wc_read:") {
            if let Some((xid, posted)) = read_post.remove(&c) {
                *reads.entry(xid).or_default() += t.saturating_sub(posted);
            }
        } else if [
            "svcrdma_post_write_chunk:",
            "svcrdma_post_reply_chunk:",
            "svcrdma_post_send:",
        ]
        .iter()
        .any(|e| line.contains(e))
        {
            if let Some((xid, start)) = current.remove(&pid(line).unwrap()) {
                let data = reads.remove(&xid).unwrap_or(0);
                out.insert(xid, t.saturating_sub(start).saturating_sub(data));
            }
        }
    }
    out
}

/// Issue 28: the server time measured on the wire, per XID, within a stated
/// bound of what the server's own trace recorded. The wire sees the call
/// before the server's receive completion and the reply after the server
/// posted it, so the wire's figure is the larger, by the time the call and
/// the reply spend in the two soft-RoCE stacks and the link between them —
/// under TCG, where every packet is emulated, up to tens of milliseconds
/// (the server's `svcrdma_wc_send` comes ~45 ms after its `post_send`).
#[test]
fn server_time_on_the_wire_agrees_with_the_servers_trace() {
    let mut cases = vec![];
    for stem in [
        "v3-inline",
        "v3-ddp",
        "v42-ddp",
        "parallel",
        "diag/diag-slow-server",
        "iwarp/v3-ddp",
        "iwarp/v42-reminv",
        "iwarp/parallel",
    ] {
        let pcap = captures().join(format!("{stem}.pcap"));
        let trace = captures().join(format!("{stem}.server.trace.txt"));
        let by_trace = server_time_by_trace(&trace);
        let mut diffs = vec![];
        for t in engine_txns(&pcap) {
            let (Some(reply), Some(&traced)) = (t.reply_ts_ns, by_trace.get(&t.xid)) else {
                continue;
            };
            let wire = reply.saturating_sub(t.call_ts_ns);
            let data = t.phases.read_ns.unwrap_or(0) + t.phases.write_ns.unwrap_or(0);
            let on_wire = wire.saturating_sub(data);
            diffs.push((on_wire as i64 - traced as i64, t.xid, on_wire, traced));
        }
        diffs.sort();
        let n = diffs.len();
        assert!(
            n > 0,
            "{stem}: no XID in both the capture and the server's trace"
        );
        let med = diffs[n / 2].0;
        let p95 = diffs[n * 95 / 100].0;
        eprintln!(
            "{stem}: {n} XIDs, wire - trace: min {:.1} ms, median {:.1} ms, p95 {:.1} ms, max {:.1} ms",
            diffs[0].0 as f64 / 1e6,
            med as f64 / 1e6,
            p95 as f64 / 1e6,
            diffs[n - 1].0 as f64 / 1e6
        );
        // The stated bound: never less than the trace (beyond the trace's
        // microsecond stamps), more by at most 50 ms at the median and
        // 150 ms at the 95th percentile.
        assert!(diffs[0].0 >= -1_000_000, "{stem}: {:?}", diffs[0]);
        // siw (iWARP) runs the same workloads over the guests' TCP: the
        // same bounds hold.
        assert!(med <= 50_000_000, "{stem}: median {med} ns");
        assert!(p95 <= 150_000_000, "{stem}: p95 {p95} ns");
        cases.push((stem, diffs));
    }
    // Where the server is slow the two agree in proportion: the slow disk's
    // WRITEs, held 0.5 s and more by the server, are seen so on the wire
    // within 10%.
    let (_, slow) = cases
        .iter()
        .find(|(s, _)| s.contains("slow-server"))
        .unwrap();
    let long: Vec<_> = slow.iter().filter(|d| d.3 >= 500_000_000).collect();
    assert!(long.len() >= 10, "{long:?}");
    for (diff, xid, wire, traced) in long {
        assert!(
            (*diff as f64) <= 0.1 * *traced as f64,
            "xid {xid:#010x}: wire {wire} ns, trace {traced} ns"
        );
    }
}
