//! A flight recorder dump read back: a real lab capture and kernel probe
//! records for its XIDs (both sides, as `live --probes` hands them over)
//! go through the recorder, which writes a dump; `transactions --json` and
//! `report --json` on the dump must show the kernel's view of each XID
//! exactly as the live run's engine joined it.
//!
//! Two sets of probe records: the lab's own (both guests' recorder dumps
//! of one run, `ebpf-probes/testdata/lab-records/`), and a set made from a
//! capture's transactions that carries what the lab's does not (procedure
//! names with quotes and non-ASCII, the server's `svc_stats_latency`):
//! client `xprtrdma_marshal` before the call, `xprtrdma_reply` and
//! `rpc_stats_latency` after the reply; server `svcrdma_decode_rqst`,
//! `svc_stats_latency` and its Send, each XID on a thread of its own.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use rdma_analyzer::engine::kernel::event::{ChunkType, Cid, Probe, ProbeEvent, ProbeMeta, TaskKey};
use rdma_analyzer::engine::{
    Config, Engine, Event, Finding, Frame, MergeConfig, Origin, Transaction,
};
use rdma_analyzer::pipeline::{End, Progress, Sink};
use rdma_analyzer::recorder::read::DumpRecords;
use rdma_analyzer::recorder::{RecordConfig, Recorder, Trigger};
use rdma_analyzer::sources::pcap::PcapReader;
use rdma_dissectors::link::LinkType;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

struct Owned {
    number: u64,
    ts_ns: u64,
    link: LinkType,
    orig_len: u32,
    data: Vec<u8>,
}

impl Owned {
    fn frame(&self) -> Frame<'_> {
        Frame {
            number: self.number,
            ts_ns: self.ts_ns,
            link: self.link,
            orig_len: self.orig_len,
            data: &self.data,
            icrc: None,
        }
    }
}

enum Ev {
    Frame(Owned),
    Probe(Probe),
}

impl Ev {
    fn ts(&self) -> u64 {
        match self {
            Ev::Frame(f) => f.ts_ns,
            Ev::Probe(p) => p.meta.ts_ns,
        }
    }
}

fn frames(path: &Path) -> Vec<Owned> {
    let mut r = PcapReader::open(path).expect("the lab capture");
    let mut out = Vec::new();
    while let Some(f) = r.next_packet().expect("no damage") {
        out.push(Owned {
            number: f.number,
            ts_ns: f.ts_ns,
            link: f.link,
            orig_len: f.orig_len,
            data: f.data.to_vec(),
        });
    }
    out
}

fn transactions(config: Config, events: &[Ev]) -> Vec<Transaction> {
    let mut engine = Engine::new(config);
    let mut found = Vec::new();
    for e in events {
        match e {
            Ev::Frame(f) => engine.handle(Event::Frame(f.frame()), &mut found),
            Ev::Probe(p) => engine.handle(Event::Probe(p), &mut found),
        }
    }
    engine.finish(&mut |f| found.push(f));
    found
        .into_iter()
        .filter_map(|f| match f {
            Finding::Transaction(t) => Some(*t),
            Finding::Anomaly(_) => None,
        })
        .collect()
}

/// Both kernels' records for each of the capture's answered calls.
fn probes_for(wire: &[Transaction]) -> Vec<Probe> {
    let mut out = Vec::new();
    let mut at = |ts_ns: u64, tid: u32, event: ProbeEvent| {
        out.push(Probe {
            meta: ProbeMeta {
                seq: 0,
                ts_ns,
                cpu: tid % 2,
                tid,
            },
            event,
        });
    };
    for (i, t) in wire.iter().enumerate() {
        let Some(reply) = t.reply_ts_ns else { continue };
        let i = i as u32;
        let task = TaskKey {
            task_id: 100 + i,
            client_id: 1,
        };
        let (client, server) = (10_000 + 2 * i, 10_001 + 2 * i);
        let call = t.call_ts_ns;
        let rtt_us = (reply - call) / 1000 + 5;
        at(
            call.saturating_sub(2_000),
            client,
            ProbeEvent::Marshal {
                task,
                xid: t.xid,
                rtype: ChunkType::Inline,
                wtype: ChunkType::Inline,
                hdrlen: Some(28),
                xdrlen: None,
            },
        );
        let cid = Cid {
            cq_id: 2,
            cid: i as i32,
        };
        at(
            call + 1_000,
            server,
            ProbeEvent::DecodeRqst {
                cid,
                xid: t.xid,
                vers: 1,
                proc: 0,
                credits: 32,
                hdrlen: None,
            },
        );
        at(
            reply.saturating_sub(1_500),
            server,
            ProbeEvent::SvcStats {
                xid: t.xid,
                execute_us: Some(u64::from(i % 50) + 1),
            },
        );
        at(
            reply.saturating_sub(1_000),
            server,
            ProbeEvent::ServerPostSend {
                cid: Cid {
                    cq_id: 3,
                    cid: i as i32,
                },
                inv_rkey: None,
            },
        );
        at(
            reply + 2_000,
            client,
            ProbeEvent::Reply {
                task,
                xid: t.xid,
                credits: 32,
            },
        );
        at(
            reply + 3_000,
            client,
            ProbeEvent::RpcStats {
                task,
                xid: t.xid,
                version: Some(3),
                program: Some("nfs".into()),
                procedure: Some("GETATTR \"quoted\" ü".into()),
                backlog_us: Some(u64::from(i % 7)),
                rtt_us: Some(rtt_us),
                execute_us: Some(rtt_us + u64::from(i % 7)),
            },
        );
    }
    out.sort_by_key(|p| p.meta.ts_ns);
    for (n, p) in out.iter_mut().enumerate() {
        p.meta.seq = n as u64 + 1;
    }
    out
}

/// Each kernel's view of one XID: who, and its RPC layer's times.
type Kernel = Vec<(String, [Option<u64>; 4])>;

fn kernel_of(t: &Transaction) -> (u32, Kernel) {
    let mut views: Kernel = std::iter::once(t)
        .chain(&t.views)
        .filter(|v| v.origin != Origin::Wire)
        .map(|v| {
            let k = &v.kernel_times;
            (
                v.origin.as_str().to_string(),
                [k.backlog_us, k.rtt_us, k.execute_us, k.server_execute_us],
            )
        })
        .collect();
    views.sort();
    (t.xid, views)
}

fn kernel_of_json(v: &serde_json::Value) -> (u32, Kernel) {
    let mut views: Kernel = v["probes"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(origin, p)| {
            let n = |f: &str| p[f].as_u64();
            (
                origin.clone(),
                [
                    n("kernel_backlog_us"),
                    n("kernel_rtt_us"),
                    n("kernel_execute_us"),
                    n("kernel_server_execute_us"),
                ],
            )
        })
        .collect();
    views.sort();
    (v["xid"].as_u64().expect("an xid") as u32, views)
}

fn record(events: &[Ev], dir: &Path) -> PathBuf {
    let mut r = Recorder::new(
        RecordConfig {
            dir: dir.to_path_buf(),
            before_ns: 3_600_000_000_000,
            after_ns: 0,
            ring_bytes: 64 << 20,
            snaplen: None,
            triggers: vec![Trigger::Signal],
            keep: 5,
            max_total: None,
        },
        Arc::new(AtomicBool::new(false)),
    );
    for e in events {
        let flow = match e {
            Ev::Frame(f) => r.frame(&f.frame()),
            Ev::Probe(p) => Sink::probe(&mut r, p),
        };
        assert_eq!(flow, rdma_analyzer::pipeline::Flow::Continue);
    }
    let last = events.last().map_or(0, Ev::ts);
    r.fire(&Trigger::Signal, last, "recorder_dump test");
    r.end(None, &Progress::default(), &End::Stopped);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.written.len(), 1);
    r.written[0].clone()
}

#[test]
fn a_dump_reads_back_with_the_kernels_view_of_each_xid_as_the_live_run_joined_it() {
    let capture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../captures/v3-inline.pcap");
    let owned = frames(&capture);
    let wire_events: Vec<Ev> = owned.into_iter().map(Ev::Frame).collect();
    let wire = transactions(Config::default(), &wire_events);
    let probes = probes_for(&wire);
    assert!(probes.len() > 100, "{} probe records", probes.len());
    let mut events: Vec<Ev> = wire_events;
    events.extend(probes.into_iter().map(Ev::Probe));
    // Stable: a frame stays before the records stamped the same ns.
    events.sort_by_key(Ev::ts);

    // What `live --probes` makes of the same stream.
    let live_config = Config {
        merge: Some(MergeConfig::default()),
        ..Config::default()
    };
    let mut live: Vec<(u32, Kernel)> = transactions(live_config, &events)
        .iter()
        .map(kernel_of)
        .collect();
    live.sort();
    // Both kernels, every time each measures: the client's backlog, rtt
    // and execute, the server's execute.
    let known = live
        .iter()
        .filter(|(_, k)| {
            k.len() == 2 && k[0].1[..3].iter().all(Option::is_some) && k[1].1[3].is_some()
        })
        .count();
    assert!(
        known * 10 >= wire.len() * 9,
        "the live run joined both kernels' times on {known} of {} calls",
        wire.len()
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let dump = record(&events, dir.path());
    let out = Command::new(BIN)
        .args(["transactions", "--json"])
        .arg(&dump)
        .output()
        .expect("running transactions");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("probe records from the flight recorder's dump"),
        "{stderr}"
    );
    let mut read: Vec<(u32, Kernel)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a JSON line"))
        .map(|v| kernel_of_json(&v))
        .collect();
    read.sort();
    assert_eq!(read.len(), live.len());
    assert_eq!(
        read, live,
        "the dump's kernel view differs from the live run's"
    );

    let out = Command::new(BIN)
        .args(["report", "--json"])
        .arg(&dump)
        .output()
        .expect("running report");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a report");
    assert_eq!(
        doc["complete"],
        serde_json::Value::Bool(true),
        "{doc:.2000}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("joined with the wire's view"));
}

/// The lab's own records (`ebpf-probes/testdata/lab-records/`: both
/// guests' `live --probes --record` dumps of one v3-inline run, the client's
/// with its live capture): the client's frames and both kernels' probe
/// records, as the live runs handed them over, go through the recorder
/// again; the new dump reads back with the kernel views the live engine
/// joins from them, every XID of the wire seen by both kernels.
#[test]
fn real_lab_probe_records_read_back_as_the_live_run_joined_them() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ebpf-probes/testdata/lab-records");
    let (client, server) = (
        dir.join("v3-inline.client.pcapng"),
        dir.join("v3-inline.server.pcapng"),
    );
    let recorded = DumpRecords::read(&[client.clone(), server]);
    assert!(recorded.problems.is_empty(), "{:?}", recorded.problems);
    assert_eq!(recorded.dumps.len(), 2);
    let mut events: Vec<Ev> = frames(&client).into_iter().map(Ev::Frame).collect();
    let wire = transactions(Config::default(), &events);
    assert!(wire.len() >= 30, "{} wire transactions", wire.len());
    events.extend(recorded.probes.into_iter().map(Ev::Probe));
    events.sort_by_key(Ev::ts);
    let live_config = Config {
        merge: Some(MergeConfig::default()),
        ..Config::default()
    };
    let mut live: Vec<(u32, Kernel)> = transactions(live_config, &events)
        .iter()
        .map(kernel_of)
        .collect();
    live.sort();
    for t in wire.iter().filter(|t| t.reply_frame.is_some()) {
        let views = live.iter().find(|(x, _)| *x == t.xid).map(|(_, k)| k);
        let origins: Vec<&str> = views
            .into_iter()
            .flatten()
            .map(|(o, _)| o.as_str())
            .collect();
        assert_eq!(
            origins,
            ["client_probes", "server_probes"],
            "xid {:#010x}",
            t.xid
        );
        // The client's RPC layer timed each call (rpc_stats_latency).
        let client = &views.expect("views")[0].1;
        assert!(client[1].is_some(), "xid {:#010x}: no rtt", t.xid);
    }

    let out_dir = tempfile::tempdir().expect("tempdir");
    let dump = record(&events, out_dir.path());
    let out = Command::new(BIN)
        .args(["transactions", "--json"])
        .arg(&dump)
        .output()
        .expect("running transactions");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut read: Vec<(u32, Kernel)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a JSON line"))
        .map(|v| kernel_of_json(&v))
        .collect();
    read.sort();
    assert_eq!(
        read, live,
        "the dump's kernel view differs from the live run's"
    );
}

#[test]
fn a_capture_that_is_no_dump_reads_as_before_and_a_damaged_record_is_said() {
    let dir = tempfile::tempdir().expect("tempdir");
    let capture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../captures/v3-inline.pcap");
    let mut events: Vec<Ev> = frames(&capture).into_iter().map(Ev::Frame).collect();
    let ts = events.first().map_or(0, Ev::ts);
    events.insert(
        0,
        Ev::Probe(Probe {
            meta: ProbeMeta {
                seq: 1,
                ts_ns: ts,
                cpu: 0,
                tid: 1,
            },
            event: ProbeEvent::Other,
        }),
    );
    let dump = record(&events, dir.path());
    // Damage the record's text in place: `Other` becomes `Otter`.
    let mut bytes = std::fs::read(&dump).expect("the dump");
    let at = bytes
        .windows(5)
        .position(|w| w == b"Other")
        .expect("the record's text");
    bytes[at + 2] = b't';
    std::fs::write(&dump, &bytes).expect("rewrite");
    let out = Command::new(BIN)
        .args(["report"])
        .arg(&dump)
        .output()
        .expect("running report");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("does not read") && stderr.contains("sequence number 1"),
        "{stderr}"
    );
    // The frames are all there.
    let plain = Command::new(BIN)
        .arg("report")
        .arg(&capture)
        .output()
        .expect("running report");
    assert!(plain.status.success());
    assert!(!String::from_utf8_lossy(&plain.stderr).contains("flight recorder"));
}

/// A live run (views joined, the source ticking every 100 ms) where one
/// task's `rpc_stats_latency` comes 618 ms (kernel time) after its reply,
/// as on the stalled single-vCPU guest of `/work/logs/probes-flake-s6`,
/// while the other calls' records and frames go on: the XID still comes
/// out once, with the wire's and both kernels' views and the RPC layer's
/// rtt.
#[test]
fn a_task_end_618_ms_late_still_joins_its_wire_view_in_a_live_run() {
    let capture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../captures/v3-inline.pcap");
    let wire_events: Vec<Ev> = frames(&capture).into_iter().map(Ev::Frame).collect();
    let wire = transactions(Config::default(), &wire_events);
    let mut probes = probes_for(&wire);
    let late = wire
        .iter()
        .filter(|t| t.reply_ts_ns.is_some())
        .nth(10)
        .expect("calls")
        .xid;
    let stats = probes
        .iter_mut()
        .find(|p| matches!(p.event, ProbeEvent::RpcStats { xid, .. } if xid == late))
        .expect("its task's end");
    stats.meta.ts_ns += 618_000_000;
    let mut events = wire_events;
    events.extend(probes.into_iter().map(Ev::Probe));
    events.sort_by_key(Ev::ts);
    let mut engine = Engine::new(Config {
        merge: Some(MergeConfig::default()),
        ..Config::default()
    });
    let mut found = Vec::new();
    let mut next_tick = events.first().map_or(0, Ev::ts);
    for e in &events {
        while next_tick <= e.ts() {
            engine.handle(Event::Tick(next_tick), &mut found);
            next_tick += 100_000_000;
        }
        match e {
            Ev::Frame(f) => engine.handle(Event::Frame(f.frame()), &mut found),
            Ev::Probe(p) => engine.handle(Event::Probe(p), &mut found),
        }
    }
    engine.finish(&mut |f| found.push(f));
    let out: Vec<&Transaction> = found
        .iter()
        .filter_map(|f| match f {
            Finding::Transaction(t) if t.xid == late => Some(&**t),
            _ => None,
        })
        .collect();
    assert_eq!(out.len(), 1, "one transaction for xid {late:#010x}");
    let t = out[0];
    assert_eq!(
        t.sources().collect::<Vec<_>>(),
        [Origin::Wire, Origin::ClientProbes, Origin::ServerProbes]
    );
    let client = t
        .views
        .iter()
        .find(|v| v.origin == Origin::ClientProbes)
        .expect("client view");
    assert!(
        client.kernel_times.rtt_us.is_some(),
        "{:?}",
        client.kernel_times
    );
}
