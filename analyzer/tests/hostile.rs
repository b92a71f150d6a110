//! The hostile corpus: captures built to hurt the analyzer (made by
//! `rdma_analyzer::synth::hostile` and by damaging bundled captures here,
//! never committed), run through the real binary. For every case: the exit
//! status, no panic, peak RSS under the memory budget, and the findings.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use rdma_analyzer::synth::hostile::{self, Case};
use serde_json::Value;

#[path = "common/exact.rs"]
mod exact;
#[path = "common/prereq.rs"]
mod prereq;
#[path = "common/tmux.rs"]
mod tmux;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

/// This test process's scratch folder. nextest runs each test in a process
/// of its own, and a process cannot remove its folder after its last use,
/// so the first use removes the folders of processes that are gone (their
/// captures run to 128 MB: 461 of them filled a disk).
fn dir() -> PathBuf {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    let tmp = std::env::temp_dir();
    SWEPT.call_once(|| {
        for e in std::fs::read_dir(&tmp).into_iter().flatten().flatten() {
            let name = e.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|n| n.strip_prefix("rdma-hostile-"))
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            if !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    });
    let d = tmp.join(format!("rdma-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn make(case: Case, connections: u32, calls: u64, name: &str) -> PathBuf {
    let p = dir().join(name);
    let f = std::fs::File::create(&p).unwrap();
    hostile::write(case, connections, calls, std::io::BufWriter::new(f)).unwrap();
    p
}

/// The binary's output, and its peak RSS in KiB (GNU time's `%M`).
fn run(args: &[&str]) -> (Output, u64) {
    let rss = dir().join(format!("rss-{}", args.join("_").replace('/', "_")));
    let out = Command::new("/usr/bin/time")
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&rss)
        .arg(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("/usr/bin/time runs the binary (Debian package time)");
    let kib = std::fs::read_to_string(&rss)
        .ok()
        .and_then(|s| s.lines().last()?.trim().parse().ok())
        .unwrap_or(0);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    (out, kib)
}

fn report(file: &Path, extra: &[&str]) -> (Value, u64) {
    let f = file.to_str().unwrap();
    let mut args = vec!["report", "--json", f];
    args.extend_from_slice(extra);
    let (out, kib) = run(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        serde_json::from_slice(&out.stdout).expect("report JSON"),
        kib,
    )
}

fn lines(file: &Path, what: &str) -> Vec<Value> {
    let (out, _) = run(&[what, "--json", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    out.stdout
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

fn kinds(anomalies: &[Value]) -> std::collections::BTreeMap<String, usize> {
    let mut m = std::collections::BTreeMap::new();
    for a in anomalies {
        *m.entry(a["kind"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    m
}

/// The process's own needs besides the analysis state: the binary, the
/// reading thread's batches, the allocator's slack.
const BASELINE_KIB: u64 = 40 << 10;

/// 256 connections x 200 unanswered calls (51,200 calls, each offering a
/// reply chunk: about 1.5 KiB of state each) under a 16 MiB budget: the
/// oldest calls go, every call is still counted, and the process stays
/// within the budget and its baseline.
#[test]
fn unanswered_calls_on_many_connections_stay_within_the_budget() {
    let f = make(Case::Unanswered, 256, 200, "unanswered.pcap");
    let (r, kib) = report(&f, &["--memory-limit", "16M"]);
    assert_eq!(r["totals"]["calls"], 256 * 200);
    assert!(r["evictions"]["calls"].as_u64().unwrap() > 0, "{r}");
    assert!(kib < (16 << 10) + BASELINE_KIB, "peak RSS {kib} KiB");
    // The same file under a budget with room for them keeps every call
    // (51,200 outstanding calls: more than the default 256M holds now that
    // the budget also pays for the report's tables, the lookup index and
    // the calls parked across reconnects).
    let (r, _) = report(&f, &["--memory-limit", "512M"]);
    assert_eq!(r["evictions"]["calls"], 0);
}

/// 20,000 queue pairs (a connection each) under a 4 MiB budget: the
/// tables' caps come from the budget, and evictions are counted.
#[test]
fn a_flood_of_queue_pairs_stays_within_the_budget() {
    let f = make(Case::QpFlood, 20_000, 1, "qp-flood.pcap");
    let (r, kib) = report(&f, &["--memory-limit", "4M"]);
    assert_eq!(r["totals"]["calls"], 20_000);
    assert!(
        r["evictions"]["connections"].as_u64().unwrap() > 10_000,
        "{r}"
    );
    assert!(kib < (4 << 10) + BASELINE_KIB, "peak RSS {kib} KiB");
}

/// Best of three CPU times (user and system) of `report` on `file`,
/// seconds: CPU, not wall, time, for the tests run beside one another.
fn best_cpu(file: &Path) -> f64 {
    (0..3)
        .map(|i| {
            let times = dir().join(format!("cpu-{i}"));
            let out = Command::new("/usr/bin/time")
                .args(["-f", "%U %S", "-o"])
                .arg(&times)
                .args([BIN, "report"])
                .arg(file)
                .stdout(Stdio::null())
                .output()
                .expect("/usr/bin/time runs the binary (Debian package time)");
            assert_eq!(out.status.code(), Some(0), "{out:?}");
            let text = std::fs::read_to_string(&times).unwrap();
            text.split_whitespace()
                .map(|s| s.parse::<f64>().unwrap())
                .sum::<f64>()
        })
        .fold(f64::INFINITY, f64::min)
}

/// Writes, Read requests and replies to queue pairs no connection owns
/// cost what they cost with one connection when 2048 connections made from
/// traffic are waiting for their client QP: the lookups are indexed, not a
/// walk of every connection (with the walk, 2048 connections made each
/// such frame about ten times dearer).
#[test]
fn frames_to_unowned_queue_pairs_cost_the_same_whatever_the_connections() {
    let frames = 60_000;
    let many = make(Case::UnownedFlood, 2048, frames, "unowned-2048.pcap");
    let one = make(Case::UnownedFlood, 1, frames, "unowned-1.pcap");
    let (r, _) = report(&many, &[]);
    assert_eq!(r["totals"]["calls"], 2048, "{r}");
    assert_eq!(r["totals"]["frames"], 2048 + frames, "{r}");
    assert_eq!(r["totals"]["unassociated_frames"], frames, "{r}");
    let (t_many, t_one) = (best_cpu(&many), best_cpu(&one));
    assert!(
        t_many < 2.0 * t_one,
        "2048 connections: {t_many:.3} s, one: {t_one:.3} s"
    );
}

/// Every frame is counted unassociated at most once: a reply to a QP no
/// connection owns was counted by its message and again by its frame, and
/// the call that made a connection from traffic as unassociated (the
/// count ran past the frames in the capture).
#[test]
fn unassociated_frames_never_exceed_the_frames() {
    let f = make(Case::UnownedFlood, 3, 300, "unassociated.pcap");
    let (r, _) = report(&f, &[]);
    let t = &r["totals"];
    assert_eq!(t["frames"], 303, "{r}");
    // The three calls made their connections; the 300 frames after them
    // (100 Writes, 100 Read requests, 100 replies) belong to none.
    assert_eq!(t["unassociated_frames"], 300, "{r}");
}

/// 5000 calls of distinct procedure numbers (a `NFS proc N` label each,
/// answered a second later) under a 16 MiB budget: the report's
/// per-procedure tables hold their share of the budget, the rest is counted
/// under `(other procedures)` and said, and every call is still counted.
/// Each label kept a 12 KiB histogram: 20,000 of them took 271 MB.
#[test]
fn many_procedure_labels_stay_within_the_budget() {
    let calls = 5000;
    let f = make(Case::ManyLabels, 1, calls, "labels.pcap");
    let (r, kib) = report(&f, &["--memory-limit", "16M"]);
    assert_eq!(r["totals"]["replies"], calls, "{r}");
    let cap = &r["procedures_over_cap"];
    let rows = cap["rows"].as_u64().unwrap();
    assert!((16..100).contains(&rows), "{cap}");
    let times = r["response_times"].as_array().unwrap();
    // The cap's rows, and the one they overflow into.
    assert_eq!(times.len() as u64, rows + 1, "{cap}");
    let other = times
        .iter()
        .find(|t| t["procedure"] == "(other procedures)")
        .expect("an (other procedures) row");
    assert_eq!(other["latency"]["count"], calls - rows, "{other}");
    assert_eq!(cap["transactions"], calls - rows, "{cap}");
    let sampled: u64 = times
        .iter()
        .map(|t| t["latency"]["count"].as_u64().unwrap())
        .sum();
    assert_eq!(sampled, calls);
    assert!(kib < (16 << 10) + BASELINE_KIB, "peak RSS {kib} KiB");
    let (out, _) = run(&["report", "--memory-limit", "16M", f.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "{} transactions of procedures past the tables' {rows} rows",
            calls - rows
        )) && text.contains("raise --memory-limit"),
        "{text}"
    );
    // The default budget (256 MiB) keeps about 135 rows apart (each holds
    // four histograms at most 30 KiB: the latency and three phases).
    let (r, _) = report(&f, &[]);
    let cap = &r["procedures_over_cap"];
    let rows = cap["rows"].as_u64().unwrap();
    assert!(rows > 100, "{cap}");
    assert_eq!(cap["transactions"], calls - rows, "{cap}");
}

/// One frame far ahead in a QP's PSN sequence (another incarnation, or a
/// stray): reported, and the eleven transactions around it all survive.
#[test]
fn one_stray_frame_does_not_poison_its_queue_pair() {
    let f = make(Case::StrayPsn, 1, 0, "stray.pcap");
    let (r, _) = report(&f, &[]);
    assert_eq!(
        (&r["totals"]["calls"], &r["totals"]["replies"]),
        (&11.into(), &11.into())
    );
    assert_eq!(r["totals"]["retransmissions"], 0);
    let k = kinds(&lines(&f, "anomalies"));
    assert_eq!(k.get("psn_out_of_sequence"), Some(&1), "{k:?}");
    assert_eq!(k.len(), 1, "{k:?}");
}

/// A frame 1000 PSNs ahead of the starting PSN the CM announced, before
/// any other request to that QP: it used to start the sequence, and every
/// call after it looked sent again (10 of 11 calls vanished, here all 11).
/// The CM's start decides: the stray is reported and left out, the eleven
/// transactions all survive.
#[test]
fn a_stray_frame_before_the_first_request_does_not_start_the_sequence() {
    let f = make(Case::StrayPsnAtStart, 1, 0, "stray-start.pcap");
    let (r, _) = report(&f, &[]);
    let t = &r["totals"];
    assert_eq!(
        (&t["calls"], &t["replies"]),
        (&11.into(), &11.into()),
        "{r}"
    );
    assert_eq!(t["retransmissions"], 0, "{r}");
    assert_eq!(t["psn_gaps"], 0, "{r}");
    let anomalies = lines(&f, "anomalies");
    let k = kinds(&anomalies);
    assert_eq!(k.get("psn_out_of_sequence"), Some(&1), "{k:?}");
    assert_eq!(k.len(), 1, "{k:?}");
    let msg = anomalies[0]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("PSN 0x44c") && msg.contains("starting PSN the CM exchange announced (0x64)"),
        "{msg}"
    );
}

/// A stray frame 1000 PSNs ahead on a connection from traffic, right after
/// the first call made it known: the first request of the QP's sequence
/// since. It was taken as the sequence, and the ten calls after it looked
/// sent again (10 of 11 vanished). The next request, 1000 PSNs behind it,
/// says it was a stray: reported, its call kept as read (no reply comes),
/// and all eleven calls survive.
#[test]
fn a_stray_first_request_gives_way_to_the_sequence_behind_it() {
    let f = make(Case::StrayPsnFirst, 1, 0, "stray-first.pcap");
    let (r, _) = report(&f, &[]);
    let t = &r["totals"];
    assert_eq!(
        (&t["calls"], &t["replies"]),
        (&12.into(), &11.into()),
        "{r}"
    );
    assert_eq!(t["retransmissions"], 0, "{r}");
    let anomalies = lines(&f, "anomalies");
    let k = kinds(&anomalies);
    assert_eq!(k.get("psn_out_of_sequence"), Some(&1), "{k:?}");
    assert_eq!(k.get("call_without_reply"), Some(&1), "{k:?}");
    let msg = anomalies
        .iter()
        .find(|a| a["kind"] == "psn_out_of_sequence")
        .and_then(|a| a["message"].as_str())
        .unwrap_or_default();
    assert!(
        msg.contains("PSN 0x44d") && msg.contains("1000 PSNs ahead") && msg.contains("PSN 0x65"),
        "{msg}"
    );
}

/// 1000 calls with one XID, all outstanding: reported (RFC 8166 3), every
/// one counted for credits, and the replies paired in the order sent.
#[test]
fn a_reused_xid_keeps_every_call_and_pairs_replies_in_order() {
    let f = make(Case::XidReuse, 1, 1000, "xid-reuse.pcap");
    let anomalies = lines(&f, "anomalies");
    let k = kinds(&anomalies);
    assert_eq!(k.get("xid_reused"), Some(&999), "{k:?}");
    // The first reply granted 32 credits: the 33rd call on overran them.
    assert_eq!(k.get("credit_overrun"), Some(&(1000 - 32)), "{k:?}");
    assert!(!k.contains_key("reply_without_call") && !k.contains_key("call_without_reply"));
    let txns = lines(&f, "transactions");
    assert_eq!(txns.len(), 1001);
    // Replies pair in order: call k (frame 3 + k) is answered by reply k
    // (frame 1003 + k), so every pair is 1000 frames apart.
    for t in txns.iter().skip(1) {
        let (c, r) = (
            t["call_frame"].as_u64().unwrap(),
            t["reply_frame"].as_u64().unwrap(),
        );
        assert_eq!(r - c, 1000, "{t}");
    }
    let in_flight: Vec<u64> = txns
        .iter()
        .skip(1)
        .map(|t| t["in_flight_at_call"].as_u64().unwrap())
        .collect();
    assert_eq!(in_flight, (1..=1000).collect::<Vec<_>>());
}

/// Replies stamped before their calls: a finding each, and the latency is
/// unknown (null), not 0; the report counts them apart.
#[test]
fn replies_stamped_before_their_calls_have_no_latency() {
    let f = make(Case::TimeBackwards, 1, 0, "backwards.pcap");
    let (out, _) = run(&["report", f.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("backwards.pcap: frame 4 is stamped")
            && err.contains("clock went backwards (said once)"),
        "{out:?}"
    );
    let txns = lines(&f, "transactions");
    let nulls = txns.iter().filter(|t| t["latency_us"].is_null()).count();
    assert_eq!(nulls, 2, "{txns:?}");
    assert_eq!(
        kinds(&lines(&f, "anomalies")).get("time_went_backwards"),
        Some(&2)
    );
    let (r, _) = report(&f, &[]);
    assert_eq!(r["latency_unknown"]["NFS GETATTR"], 2, "{r}");
    assert_eq!(r["response_times"][0]["latency"]["count"], 2, "{r}");
    // The metrics agree: four replies, two latency samples (they counted
    // the other two as 0 s).
    let prom = dir().join("backwards.prom");
    let (out, _) = run(&[
        "report",
        "--metrics-out",
        prom.to_str().unwrap(),
        f.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = std::fs::read_to_string(&prom).unwrap();
    let value = |prefix: &str| -> Option<f64> {
        text.lines()
            .find(|l| l.starts_with(prefix))?
            .rsplit(' ')
            .next()?
            .parse()
            .ok()
    };
    assert_eq!(
        value("rdma_rpc_replies_total{program=\"NFS\",version=\"3\",procedure=\"GETATTR\""),
        Some(4.0),
        "{text}"
    );
    assert_eq!(
        value("rdma_rpc_latency_seconds_count{program=\"NFS\",version=\"3\",procedure=\"GETATTR\""),
        Some(2.0),
        "{text}"
    );
}

/// A frame to a known QP from a third host is not part of the connection.
#[test]
fn a_frame_from_the_wrong_host_is_left_out() {
    let f = make(Case::WrongPeer, 1, 0, "wrong-peer.pcap");
    let (r, _) = report(&f, &[]);
    assert_eq!(
        (&r["totals"]["calls"], &r["totals"]["replies"]),
        (&1.into(), &1.into())
    );
    let k = kinds(&lines(&f, "anomalies"));
    assert_eq!(k.get("wrong_peer"), Some(&1), "{k:?}");
}

/// RFC 8166 4.2.4: "RDMA_NOMSG: ... the RPC Payload stream is conveyed
/// ... in a Position-Zero Read chunk (a call) or in the Reply chunk (a
/// reply)": a call with only a reply chunk carries its message nowhere.
#[test]
fn an_rdma_nomsg_call_with_only_a_reply_chunk_is_a_violation() {
    let f = make(Case::NomsgReplyChunkCall, 1, 0, "nomsg.pcap");
    let a = lines(&f, "anomalies");
    let nomsg: Vec<&Value> = a
        .iter()
        .filter(|a| a["kind"] == "nomsg_without_chunks")
        .collect();
    assert_eq!(nomsg.len(), 1, "{a:?}");
    assert!(nomsg[0]["message"]
        .as_str()
        .unwrap()
        .contains("only a reply chunk"));
    assert_eq!(nomsg[0]["severity"], "error");
}

// ------------------------------------------------------- damaged containers

fn bundled(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../captures")
            .join(name),
    )
    .unwrap()
}

fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir().join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Byte offsets of every record header of a classic pcap.
fn records(pcap: &[u8]) -> Vec<usize> {
    let mut at = 24;
    let mut v = Vec::new();
    while at + 16 <= pcap.len() {
        v.push(at);
        let caplen = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        at += 16 + caplen;
    }
    v
}

/// A length of 1,000,000 in record 1001: damage at that record, exit 2
/// naming frame 1001 and its offset, nothing after it read as frames.
#[test]
fn a_corrupt_record_length_is_damage_at_that_record() {
    let mut b = bundled("v3-ddp.pcap");
    let at = records(&b)[1000];
    b[at + 8..at + 12].copy_from_slice(&1_000_000u32.to_le_bytes());
    let f = write("corrupt-length.pcap", &b);
    let (out, _) = run(&["report", "--json", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("frame 1001 at byte offset {at}")),
        "{err}"
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["complete"], false);
    assert_eq!(r["totals"]["frames"], 1000);
}

/// A link type nothing dissects (65535), a wrong one (ERF's 197 on
/// Ethernet frames): exit 2 with the number and the name.
#[test]
fn an_unknown_link_type_is_refused_by_number_and_name() {
    for (link, name) in [(65535u32, "not a link type"), (197, "LINKTYPE_ERF")] {
        let mut b = bundled("v3-inline.pcap");
        b[20..24].copy_from_slice(&link.to_le_bytes());
        let f = write(&format!("link-{link}.pcap"), &b);
        for cmd in ["report", "frames", "anomalies"] {
            let (out, _) = run(&[cmd, f.to_str().unwrap()]);
            assert_eq!(out.status.code(), Some(2), "{cmd} {link}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains(&format!("link type {link}")) && err.contains(name),
                "{err}"
            );
        }
    }
}

/// libpcap's FCS bits: frames that end in a 4-byte FCS read as the same
/// frames without it (tshark honours the bits too).
#[test]
fn the_fcs_bits_are_honoured() {
    let b = bundled("v3-inline.pcap");
    let mut with_fcs = b[..24].to_vec();
    // LINKTYPE_ETHERNET, FCS present, 2 16-bit words.
    with_fcs[20..24].copy_from_slice(&(1u32 | 0x0400_0000 | 2 << 28).to_le_bytes());
    for at in records(&b) {
        let caplen = u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap());
        let orig = u32::from_le_bytes(b[at + 12..at + 16].try_into().unwrap());
        with_fcs.extend_from_slice(&b[at..at + 8]);
        with_fcs.extend_from_slice(&(caplen + 4).to_le_bytes());
        with_fcs.extend_from_slice(&(orig + 4).to_le_bytes());
        with_fcs.extend_from_slice(&b[at + 16..at + 16 + caplen as usize]);
        with_fcs.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    }
    let plain = write("plain.pcap", &b);
    let fcs = write("fcs.pcap", &with_fcs);
    let (a, _) = report(&plain, &[]);
    let (mut c, _) = report(&fcs, &[]);
    c["file"] = a["file"].clone();
    assert_eq!(a, c);
}

#[test]
fn empty_and_compressed_files_say_what_they_are() {
    let empty = write("empty.pcap", b"");
    let (out, _) = run(&["report", empty.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the file is empty") && !err.contains("cut short"),
        "{err}"
    );
    // The path is said once.
    assert_eq!(err.matches("empty.pcap").count(), 1, "{err}");
    // gzip is read through (tests/inputs.rs); a gzip header and nothing
    // more is a stream cut short, said as such.
    let gz = write("x.pcap.gz", &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]);
    let (out, _) = run(&["report", gz.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the gzip stream is corrupt or cut short after 10 compressed bytes"),
        "{err}"
    );
    // Formats it does not decompress are named, with what to do.
    let xz = write("x.pcap.xz", &[0xfd, b'7', b'z', b'X', b'Z', 0, 0, 4]);
    let (out, _) = run(&["report", xz.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("xz-compressed") && err.contains("decompress it first"),
        "{err}"
    );
}

/// `frames --json | head -1`: the output ends quietly at a closed pipe.
#[test]
fn a_closed_pipe_ends_output_quietly() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures/v3-ddp.pcap");
    let mut child = Command::new(BIN)
        .args(["frames", "--json", f.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read one line, then hang up.
    {
        use std::io::{BufRead, BufReader};
        let mut r = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        assert!(line.starts_with('{'));
    }
    let done = child.wait_with_output().unwrap();
    assert_eq!(done.status.code(), Some(0), "{done:?}");
    assert!(
        done.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
}

/// RoCEv2 in IPv4 fragments: the first fragment is flagged, a later one is
/// not read as UDP (it holds no UDP header).
#[test]
fn ipv4_fragments_are_flagged_not_misread() {
    let plain = Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures/v3-inline.pcap");
    // The first two RoCEv2 frames (0-based record numbers).
    let rocev2: Vec<usize> = lines(&plain, "frames")
        .iter()
        .enumerate()
        .filter(|(_, f)| f.get("bth").is_some())
        .map(|(i, _)| i)
        .take(2)
        .collect();
    let mut b = bundled("v3-inline.pcap");
    let recs = records(&b);
    // The first a first fragment (More Fragments), the second a later one
    // (offset 185 x 8 bytes).
    for (k, flags) in [(rocev2[0], 0x2000u16), (rocev2[1], 185)] {
        let ip = recs[k] + 16 + 14;
        b[ip + 6..ip + 8].copy_from_slice(&flags.to_be_bytes());
    }
    let f = write("fragments.pcap", &b);
    let a = lines(&f, "anomalies");
    let frag: Vec<&Value> = a.iter().filter(|a| a["kind"] == "ip_fragment").collect();
    assert_eq!(frag.len(), 1, "{a:?}");
    assert_eq!(frag[0]["frames"], serde_json::json!([rocev2[0] + 1]));
    let frames = lines(&f, "frames");
    let later = &frames[rocev2[1]];
    assert!(
        later.get("udp").is_none() && later.get("bth").is_none(),
        "{later}"
    );
}

/// A filter that matches nothing says so.
#[test]
fn a_filter_that_matches_nothing_says_so() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures/v3-ddp.pcap");
    let (out, _) = run(&["anomalies", "--filter", "c9", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--filter c9 matched nothing"));
}

/// `open` on something that is not a capture says so, as `report` does,
/// before the screen is taken.
#[test]
fn open_refuses_a_non_capture_before_taking_the_screen() {
    if !prereq::tmux() {
        return;
    }
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let shell = format!(
        "'{BIN}' open '{}'; echo EXITED $?; sleep 60",
        readme.display()
    );
    let t = tmux::Tmux::start(format!("rdma-hostile-open-{}", std::process::id()), &shell);
    let p = t.wait_for("EXITED");
    assert!(p.contains("EXITED 2"), "{p}");
    assert!(
        p.contains("not a capture: the file starts with text"),
        "{p}"
    );
    assert!(!p.contains("Overview"), "no dashboard: {p}");
}

// ------------------------------------------- compressed captures, damaged

fn gzip_of(b: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

/// zstd with a content checksum, as the `zstd` command writes it.
fn zstd_of(b: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    e.include_checksum(true).unwrap();
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

/// What `tool` (zcat, zstdcat) makes of `packed`: the bytes it wrote
/// before it gave up.
fn recovered_by(tool: &str, packed: &Path) -> Vec<u8> {
    let out = Command::new(tool)
        .arg(packed)
        .stderr(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    out.stdout
}

/// Every byte libzstd decodes from `packed` before it fails, read in
/// small pieces. `zstdcat` is no oracle for the last 128 KiB: it writes
/// only whole output buffers (131,072 bytes; zstd 1.5.4), so a cut stream
/// loses up to that much more through it than the decoder gave.
fn zstd_until_error(packed: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut d = zstd::stream::read::Decoder::new(packed).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n @ 1..) = d.read(&mut buf) {
        out.extend_from_slice(&buf[..n]);
    }
    out
}

/// The frames `report --json` reads from `file`, its exit status, stderr.
fn frames_read(file: &Path, extra: &[&str]) -> (u64, Option<i32>, String) {
    let mut args = vec!["report", "--json", file.to_str().unwrap()];
    args.extend_from_slice(extra);
    let (out, _) = run(&args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let r: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: no report document ({e}): {err}"));
    assert_eq!(r["complete"], out.status.code() == Some(0), "{err}");
    (
        r["totals"]["frames"].as_u64().unwrap(),
        out.status.code(),
        err,
    )
}

/// gzip and zstd of a bundled capture cut at several places, down to
/// inside the gzip trailer and the zstd checksum: every frame the stream
/// holds before the cut is analyzed (as many as `zcat` gives, the analyzer
/// counting its output; for zstd, as many as libzstd decodes, never fewer
/// than `zstdcat` gives), and the damage is named where it is:
/// the frame the cut falls in and its offset, or "after frame N" when the
/// cut falls between records. It used to drop the last read's 512 KiB
/// (4,126 of 4,680 frames with the gzip trailer cut).
#[test]
fn a_cut_compressed_capture_keeps_every_frame_before_the_cut() {
    if !prereq::require(
        "zcat and zstdcat",
        prereq::have_command("zcat", "--version") && prereq::have_command("zstdcat", "--version"),
        "apt-get install gzip zstd",
    ) {
        return;
    }
    let plain = bundled("v3-ddp.pcap");
    let starts = records(&plain);
    for (fmt, tool, packed) in [
        ("gzip", "zcat", gzip_of(&plain)),
        ("zstd", "zstdcat", zstd_of(&plain)),
    ] {
        let n = packed.len();
        // A third, two thirds, inside the last block, the trailer (gzip:
        // CRC32 then ISIZE; zstd: the 4-byte checksum), its last byte.
        for cut in [n / 3, n * 2 / 3, n - 100, n - 8, n - 6, n - 4, n - 2, n - 1] {
            let f = write(&format!("cut-{cut}.pcap.{fmt}"), &packed[..cut]);
            let by_tool = write(&format!("cut-{cut}-{tool}.pcap"), &recovered_by(tool, &f));
            let (by_tool, _, _) = frames_read(&by_tool, &[]);
            let decoded = match fmt {
                "gzip" => recovered_by(tool, &f),
                _ => zstd_until_error(&packed[..cut]),
            };
            let prefix = write(&format!("cut-{cut}-{fmt}.pcap"), &decoded);
            let (want, prefix_code, _) = frames_read(&prefix, &[]);
            let (got, code, err) = frames_read(&f, &[]);
            assert_eq!(got, want, "{fmt} cut at {cut} of {n}: {err}");
            assert!(
                got >= by_tool,
                "{fmt} {cut}: {got} frames, {tool} gives {by_tool}"
            );
            if fmt == "gzip" {
                assert_eq!(got, by_tool, "{fmt} {cut}");
            }
            assert_eq!(code, Some(2), "{fmt} {cut}: {err}");
            let whole = std::fs::metadata(&prefix).unwrap().len() as usize;
            let end = starts.get(got as usize).copied().unwrap_or(plain.len());
            let at = if prefix_code == Some(0) {
                // The recovered bytes end between records.
                assert_eq!(end, whole, "{fmt} {cut}");
                format!("after frame {got}, at byte offset {end} of the decompressed {fmt} stream")
            } else {
                format!(
                    "frame {} at byte offset {end} of the decompressed {fmt} stream",
                    got + 1
                )
            };
            assert!(err.contains(&at), "{fmt} {cut}: want {at:?} in {err}");
            assert!(
                err.contains(&format!("after {cut} compressed bytes")),
                "{fmt} {cut}: {err}"
            );
        }
    }
}

/// A zstd capture made with a 2 GiB window (`zstd --long=31` through a
/// pipe, so the frame does not say its size) is no corrupt stream: over
/// the memory limit it is refused naming `--memory-limit` and what to give
/// it, within a limit that holds the window it is read whole.
#[test]
fn a_zstd_long_window_is_read_within_the_memory_limit_and_refused_over_it() {
    use std::io::Write;
    let plain = bundled("v3-ddp.pcap");
    let mut e = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    e.window_log(31).unwrap();
    e.long_distance_matching(true).unwrap();
    e.write_all(&plain).unwrap();
    let f = write("long-window.pcap.zst", &e.finish().unwrap());
    let (frames, code, err) = frames_read(&f, &[]);
    assert_eq!((frames, code), (0, Some(2)), "{err}");
    assert!(
        err.contains("needs a 2G window")
            && err.contains("memory limit of 256M")
            && err.contains("--memory-limit 4G")
            && !err.contains("corrupt"),
        "{err}"
    );
    let p = write("long-window-plain.pcap", &plain);
    let (want, _, _) = frames_read(&p, &[]);
    let (got, code, err) = frames_read(&f, &["--memory-limit", "4G"]);
    assert_eq!((got, code), (want, Some(0)), "{err}");
    // `frames` holds no analysis, but the window all the same.
    let (out, _) = run(&["frames", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--memory-limit 4G"));
    let (out, _) = run(&[
        "frames",
        "--json",
        "--memory-limit",
        "4G",
        f.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        out.stdout
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .count() as u64,
        want
    );
}

/// `cat a.pcap.gz b.pcap.gz` (gzip members decompress as one stream) and
/// `cat a.pcap b.pcapng`: the second file's header starts a second
/// section, said once, never a phantom frame stamped in 2055 followed by
/// garbage; every frame of both is read.
#[test]
fn captures_joined_end_to_end_read_as_sections_not_phantom_frames() {
    let a = bundled("v3-inline.pcap");
    let b = bundled("v3-ddp.pcap");
    let ng = pcapng_of(&a);
    let count = |bytes: &[u8], name: &str| frames_read(&write(name, bytes), &[]).0;
    let (na, nb) = (count(&a, "join-a.pcap"), count(&b, "join-b.pcap"));
    let mut gz = gzip_of(&a);
    gz.extend(gzip_of(&b));
    let mut plain = a.clone();
    plain.extend(&b);
    for (name, bytes) in [("joined.pcap.gz", gz), ("joined.pcap", plain)] {
        let (got, code, err) = frames_read(&write(name, &bytes), &[]);
        assert_eq!((got, code), (na + nb, Some(0)), "{name}: {err}");
        assert!(
            err.contains(&format!(
                "another capture's file header at byte offset {}",
                a.len()
            )) && err.contains(&format!("after frame {na}")),
            "{name}: {err}"
        );
        let f = write(name, &bytes);
        let frames = lines(&f, "frames");
        assert_eq!(frames.len() as u64, na + nb);
        let latest = frames.iter().filter_map(|f| exact::num(&f["ts_ns"])).max();
        // 2030-01-01: a file header read as a record is stamped in 2055.
        assert!(
            latest < Some(1_893_456_000_000_000_000),
            "{name}: {latest:?}"
        );
    }
    // pcap then pcapng then pcap, through gzip: each header starts a section.
    let mut gz = gzip_of(&a);
    gz.extend(gzip_of(&ng));
    gz.extend(gzip_of(&a));
    let (got, code, err) = frames_read(&write("joined-ng.gz", &gz), &[]);
    assert_eq!((got, code), (3 * na, Some(0)), "{err}");
    assert_eq!(
        err.matches("another capture's file header").count(),
        2,
        "{err}"
    );
}

/// The frames of a classic little-endian pcap, as pcapng: a section
/// header, one interface (the same link type), an enhanced packet block
/// per frame.
fn pcapng_of(pcap: &[u8]) -> Vec<u8> {
    fn block(kind: u32, body: &[u8]) -> Vec<u8> {
        let mut body = body.to_vec();
        body.resize(body.len().div_ceil(4) * 4, 0);
        let total = (12 + body.len()) as u32;
        let mut b = kind.to_le_bytes().to_vec();
        b.extend_from_slice(&total.to_le_bytes());
        b.extend_from_slice(&body);
        b.extend_from_slice(&total.to_le_bytes());
        b
    }
    let word = |at: usize| u32::from_le_bytes(pcap[at..at + 4].try_into().unwrap());
    let mut shb = vec![0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0];
    shb.extend_from_slice(&[0xff; 8]);
    let mut out = block(0x0a0d_0d0a, &shb);
    let mut idb = (word(20) as u16).to_le_bytes().to_vec();
    idb.extend_from_slice(&[0, 0]);
    idb.extend_from_slice(&word(16).to_le_bytes());
    out.extend(block(1, &idb));
    for at in records(pcap) {
        // Microseconds, pcapng's default resolution.
        let us = u64::from(word(at)) * 1_000_000 + u64::from(word(at + 4));
        let caplen = word(at + 8) as usize;
        let mut epb = 0u32.to_le_bytes().to_vec();
        epb.extend_from_slice(&((us >> 32) as u32).to_le_bytes());
        epb.extend_from_slice(&(us as u32).to_le_bytes());
        epb.extend_from_slice(&pcap[at + 8..at + 16]);
        epb.extend_from_slice(&pcap[at + 16..at + 16 + caplen]);
        out.extend(block(6, &epb));
    }
    out
}

// ------------------------------------------------ hostile names, endings

/// A file named with a terminal escape and a newline: the report header,
/// the damage, the notices and the merge map say the name with escapes
/// (`\x1b`, `\n`), and no control character reaches the terminal; JSON
/// keeps the real name (serde escapes it).
#[test]
fn a_file_name_with_escape_sequences_never_reaches_the_terminal_raw() {
    let evil = "evil\x1b[2J\nname.pcap";
    let plain = bundled("v3-inline.pcap");
    let whole = write(evil, &plain);
    let cut = write(&format!("{evil}.cut"), &plain[..5000]);
    let shown = "evil\\x1b[2J\\nname.pcap";
    let raw = |b: &[u8]| b.iter().any(|&c| c == 0x1b || c == b'\r');
    for args in [
        vec!["report", whole.to_str().unwrap(), cut.to_str().unwrap()],
        vec!["report", cut.to_str().unwrap()],
        vec!["anomalies", whole.to_str().unwrap(), cut.to_str().unwrap()],
        vec!["frames", cut.to_str().unwrap()],
        // A valid filter that matches nothing: the notice echoes it escaped.
        vec![
            "report",
            "--filter",
            "proc contains \"\x1b[31m\"",
            whole.to_str().unwrap(),
        ],
    ] {
        let (out, _) = run(&args);
        assert!(!raw(&out.stdout) && !raw(&out.stderr), "{args:?}: {out:?}");
        let text = String::from_utf8_lossy(&out.stderr) + String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(shown), "{args:?}: {text}");
        // Every line that names the file names it whole, on one line.
        assert!(!text.lines().any(|l| l.starts_with("name.pcap")), "{text}");
    }
    // One that does not parse is a usage error, escaped too.
    let (out, _) = run(&["report", "--filter", "c9\x1b[31m", whole.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!raw(&out.stdout) && !raw(&out.stderr), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("c9\\x1b"),
        "{out:?}"
    );
    let (out, _) = run(&["report", whole.to_str().unwrap(), cut.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{shown}: 246 frames, interleaved")),
        "the merge map: {err}"
    );
    let (out, _) = run(&["report", "--json", cut.to_str().unwrap()]);
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["file"], cut.to_str().unwrap());
}

/// `report --json` prints its document, `"complete": false` with the
/// error, for an input unreadable from its first byte (missing, empty,
/// not a capture, a zstd window over the limit), and exits 2: a script
/// reading the document is never left with nothing to parse.
#[test]
fn report_json_says_incomplete_for_an_input_unreadable_at_byte_zero() {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let missing = dir().join("no-such-capture.pcap");
    let empty = write("empty-at-zero.pcap", b"");
    for (f, says) in [
        (readme.as_path(), "not a capture: the file starts with text"),
        (missing.as_path(), "No such file"),
        (empty.as_path(), "the file is empty"),
    ] {
        let (out, _) = run(&["report", "--json", f.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{f:?}");
        let r: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{f:?}: no document: {e}"));
        assert_eq!(r["complete"], false);
        assert_eq!(r["schema_version"], 2);
        assert_eq!(r["totals"]["frames"], 0);
        assert!(r["read_error"].as_str().unwrap().contains(says), "{r}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(says));
    }
}

/// SIGTERM, SIGINT or SIGHUP to `open` (a supervisor, `timeout`, a closed
/// ssh session's `kill -HUP`): the screen is restored (tmux's
/// `alternate_on` back to 0) before the process dies of the signal (exit
/// status 128 + its number, as the shell reports a killed process). It
/// used to die on the spot with the alternate screen on. The capture's
/// name holds an escape sequence and a newline: the status line shows it
/// escaped.
#[test]
fn a_signal_to_the_screen_restores_the_terminal_first() {
    if !prereq::tmux() {
        return;
    }
    let f = write("tui\x1b[2J\nname.pcap", &bundled("v3-inline.pcap"));
    for (sig, num) in [("TERM", 15), ("INT", 2), ("HUP", 1)] {
        let shell = format!(
            "'{BIN}' open \"$(printf 'tui\\033[2J\\nname.pcap')\"; echo EXITED $?; sleep 60"
        );
        let t = tmux::Tmux::start(
            format!("rdma-hostile-sig-{sig}-{}", std::process::id()),
            &format!("cd '{}' && {shell}", f.parent().unwrap().display()),
        );
        let p = t.wait_for("done");
        assert!(p.contains("tui\\x1b[2J\\nname.pcap"), "{p}");
        let alt = || {
            String::from_utf8_lossy(
                &t.cmd(&["display", "-p", "-t", "t", "#{alternate_on}"])
                    .stdout,
            )
            .trim()
            .to_string()
        };
        assert_eq!(alt(), "1");
        let sh =
            String::from_utf8_lossy(&t.cmd(&["display", "-p", "-t", "t", "#{pane_pid}"]).stdout)
                .trim()
                .to_string();
        let child = std::fs::read_to_string(format!("/proc/{sh}/task/{sh}/children"))
            .unwrap()
            .split_whitespace()
            .next()
            .expect("the analyzer runs under the pane's shell")
            .to_string();
        let k = Command::new("kill")
            .args([&format!("-{sig}"), &child])
            .status()
            .unwrap();
        assert!(k.success());
        let p = t.wait_for("EXITED");
        assert!(
            p.contains(&format!("EXITED {}", 128 + num)),
            "SIG{sig}: {p}"
        );
        assert_eq!(alt(), "0", "SIG{sig} left the alternate screen on:\n{p}");
    }
}

/// The generator's damaged containers (`synth --hostile gzip-no-trailer`,
/// `joined-gzip`, `zstd-long-window`) against the same clean traffic
/// written plain: every frame of it, twice for the joined pair, and the
/// long window read within a limit that holds it.
#[test]
fn the_generated_damaged_containers_read_as_their_clean_traffic() {
    let clean = dir().join("container-clean.pcap");
    let opts = rdma_analyzer::synth::Options {
        calls: 40,
        connections: 2,
        ..Default::default()
    };
    rdma_analyzer::synth::write_files(&opts, &clean).unwrap();
    let (n, code, _) = frames_read(&clean, &[]);
    assert_eq!(code, Some(0));
    let f = make(Case::GzipNoTrailer, 2, 40, "gen-no-trailer.pcap.gz");
    let (got, code, err) = frames_read(&f, &[]);
    assert_eq!((got, code), (n, Some(2)), "{err}");
    assert!(err.contains(&format!("after frame {n},")), "{err}");
    let f = make(Case::JoinedGzip, 2, 40, "gen-joined.pcap.gz");
    let (got, code, err) = frames_read(&f, &[]);
    assert_eq!((got, code), (2 * n, Some(0)), "{err}");
    assert_eq!(
        err.matches("another capture's file header").count(),
        1,
        "{err}"
    );
    let f = make(Case::ZstdLongWindow, 2, 40, "gen-long.pcap.zst");
    let (got, code, err) = frames_read(&f, &[]);
    assert_eq!((got, code), (0, Some(2)), "{err}");
    assert!(err.contains("--memory-limit 4G"), "{err}");
    let (got, code, err) = frames_read(&f, &["--memory-limit", "4G"]);
    assert_eq!((got, code), (n, Some(0)), "{err}");
}
