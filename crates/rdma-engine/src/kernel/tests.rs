//! The correlator on abridged event sequences from the lab's tracepoints.

use super::event::{ChunkType, Cid, Completion, Probe, ProbeEvent, ProbeMeta, SegKind, TaskKey};
use super::{CorrelateConfig, Correlator};
use crate::findings::{Collector, Sink};
use crate::keys::ConnIds;
use crate::{Finding, Kind, Origin, State, Transaction, Transfer};

fn p(seq: u64, ts: u64, tid: u32, event: ProbeEvent) -> Probe {
    Probe {
        meta: ProbeMeta {
            seq,
            ts_ns: ts,
            cpu: 0,
            tid,
        },
        event,
    }
}

/// Hands `evs` to the correlator in order, record `i` (1-based sequence
/// number `i + 1`) at `t0 + i * step` ns on thread `tid`.
fn feed(
    c: &mut Correlator,
    ids: &mut ConnIds,
    evs: impl IntoIterator<Item = ProbeEvent>,
    (t0, step, tid): (u64, u64, u32),
    out: &mut Found,
) {
    for (i, e) in evs.into_iter().enumerate() {
        let i = i as u64;
        c.handle(ids, &p(i + 1, t0 + i * step, tid, e), &mut out.sink());
    }
}

/// What the correlator found, and the engine state its collector counted
/// it in.
#[derive(Debug, Default)]
struct Found {
    found: Vec<Finding>,
    state: State,
}

impl Found {
    fn sink(&mut self) -> Sink<'_> {
        Sink {
            out: &mut self.found,
            state: &mut self.state,
            collector: Collector::default(),
        }
    }
}

const T: TaskKey = TaskKey {
    task_id: 0x17,
    client_id: 4,
};

fn txns(out: &[Finding]) -> Vec<&Transaction> {
    out.iter()
        .filter_map(|f| match f {
            Finding::Transaction(t) => Some(&**t),
            Finding::Anomaly(_) => None,
        })
        .collect()
}

/// A READ with a write chunk answered by Send With Invalidate, as the
/// client's tracepoints show it (v42-reminv lab scenario, abridged).
#[test]
fn client_read_with_remote_invalidation() {
    client_read(Some(T));
}

/// Linux 5.10's `xprtrdma_mr_reminv` names no task: the R_Key finds it.
#[test]
fn client_remote_invalidation_without_a_task() {
    client_read(None);
}

fn client_read(reminv_task: Option<TaskKey>) {
    let mut c = Correlator::new(CorrelateConfig::default());
    let mut out = Found::default();
    let mut ids = ConnIds::default();
    let evs = [
        ProbeEvent::ClientChunk {
            task: T,
            kind: SegKind::Write,
            handle: 0xc0b,
            length: 4096,
            offset: 0x85036f450c1e1000,
        },
        ProbeEvent::ClientChunk {
            task: T,
            kind: SegKind::Reply,
            handle: 0xc0c,
            length: 256,
            offset: 0x1000,
        },
        ProbeEvent::Marshal {
            task: T,
            xid: 0x9bc0454e,
            rtype: ChunkType::Pullup,
            wtype: ChunkType::WriteList,
            hdrlen: Some(64),
            xdrlen: Some(120),
        },
        ProbeEvent::ClientPostSend {
            task: Some(T),
            cid: None,
        },
        ProbeEvent::Reply {
            task: T,
            xid: 0x9bc0454e,
            credits: 128,
        },
        ProbeEvent::RemoteInv {
            task: reminv_task,
            handle: 0xc0b,
        },
        ProbeEvent::DecodeSeg {
            handle: 0xc0b,
            length: 4096,
            offset: 0x85036f450c1e1000,
        },
    ];
    feed(&mut c, &mut ids, evs, (1_000_000, 10_000, 40), &mut out);
    assert!(out.found.is_empty(), "held for the grace period");
    // Past the grace, but a first call also waits for its task's end
    // (rpc_stats_latency) until the flow is known; no record came after
    // it, so only the analyzer's bound lets it go.
    c.tick(&mut ids, 1_000_000 + 30_000_000, &mut out.sink());
    assert!(out.found.is_empty(), "held for rpc_stats_latency");
    c.tick(&mut ids, 1_000_000 + 600_000_000, &mut out.sink());
    assert!(out.found.is_empty(), "ticks alone do not give up early");
    let give_up = CorrelateConfig::default().stats_give_up_ns;
    c.tick(&mut ids, 1_000_000 + 60_000 + give_up + 1, &mut out.sink());
    let t = txns(&out.found);
    assert_eq!(t.len(), 1);
    let t = t[0];
    assert_eq!(t.xid, 0x9bc0454e);
    assert_eq!(t.credits_granted, Some(128));
    assert_eq!(t.remote_invalidated_rkey, Some(0xc0b));
    assert_eq!(t.reply_transfer, Transfer::WriteChunks);
    assert_eq!(t.chunks.len(), 2);
    assert!(t.chunks[0].remotely_invalidated);
    assert_eq!(t.chunks[0].reported_length, Some(4096));
    assert_eq!(t.call_len, 184);
    // post_send at +30 µs, reply at +40 µs: 10 µs on the wire and in the server.
    assert_eq!(t.latency_us, Some(10.0));
    assert!(t.anomalies.is_empty());
    assert_eq!(c.stats.client_transactions, 1);
}

#[test]
fn client_unanswered_and_foreign_invalidation() {
    let mut c = Correlator::new(CorrelateConfig::default());
    let mut out = Found::default();
    let mut ids = ConnIds::default();
    let t2 = TaskKey {
        task_id: 2,
        client_id: 4,
    };
    c.handle(
        &mut ids,
        &p(
            1,
            10,
            1,
            ProbeEvent::Marshal {
                task: T,
                xid: 1,
                rtype: ChunkType::Inline,
                wtype: ChunkType::Inline,
                hdrlen: None,
                xdrlen: None,
            },
        ),
        &mut out.sink(),
    );
    c.handle(
        &mut ids,
        &p(
            2,
            20,
            1,
            ProbeEvent::Marshal {
                task: t2,
                xid: 2,
                rtype: ChunkType::Inline,
                wtype: ChunkType::Inline,
                hdrlen: None,
                xdrlen: None,
            },
        ),
        &mut out.sink(),
    );
    c.handle(
        &mut ids,
        &p(
            3,
            30,
            1,
            ProbeEvent::Reply {
                task: t2,
                xid: 2,
                credits: 0,
            },
        ),
        &mut out.sink(),
    );
    c.handle(
        &mut ids,
        &p(
            4,
            31,
            1,
            ProbeEvent::RemoteInv {
                task: Some(t2),
                handle: 0xdead,
            },
        ),
        &mut out.sink(),
    );
    c.handle(
        &mut ids,
        &p(
            5,
            40,
            1,
            ProbeEvent::Reply {
                task: TaskKey {
                    task_id: 9,
                    client_id: 4,
                },
                xid: 9,
                credits: 1,
            },
        ),
        &mut out.sink(),
    );
    c.end(&mut ids, &mut out.sink());
    let kinds: Vec<Kind> = out
        .found
        .iter()
        .filter_map(|f| match f {
            Finding::Anomaly(a) => {
                assert_eq!(a.origin, Origin::ClientProbes, "{a:?}");
                Some(a.kind)
            }
            Finding::Transaction(_) => None,
        })
        .collect();
    assert!(kinds.contains(&Kind::ReplyWithoutCall));
    assert!(kinds.contains(&Kind::CallWithoutReply));
    assert!(kinds.contains(&Kind::InvalidatedForeignStag));
    let t = txns(&out.found);
    assert_eq!(t.len(), 2);
    assert_eq!(
        t[1].in_flight_at_call, 2,
        "task 2 was marshalled while task 0x17 was outstanding"
    );
}

/// A WRITE with a read chunk on the server: the nfsd thread decodes,
/// pulls the data with RDMA Read, and replies.
#[test]
fn server_write_with_read_chunk() {
    let mut c = Correlator::new(CorrelateConfig::default());
    let mut out = Found::default();
    let mut ids = ConnIds::default();
    let rc = Cid { cq_id: 4, cid: 51 };
    let sc = Cid { cq_id: 3, cid: 82 };
    let nfsd = 353;
    let evs = [
        (
            0,
            ProbeEvent::RecvCompleted(Completion {
                cid: rc,
                status: None,
                bytes: Some(200),
            }),
        ),
        (
            nfsd,
            ProbeEvent::ServerDecodeSeg {
                cid: Some(rc),
                kind: SegKind::Read { position: 132 },
                handle: 0x18d8,
                length: 131072,
                offset: 0xa8c0454e0cf3a000,
            },
        ),
        (
            nfsd,
            ProbeEvent::DecodeRqst {
                cid: rc,
                xid: 0xa8c0454e,
                vers: 1,
                proc: 0,
                credits: 128,
                hdrlen: Some(52),
            },
        ),
        (
            nfsd,
            ProbeEvent::PostChunk {
                kind: Some(SegKind::Read { position: 0 }),
                cid: sc,
                sqecount: Some(14),
            },
        ),
        (
            0,
            ProbeEvent::ReadCompleted(Completion {
                cid: sc,
                status: None,
                bytes: Some(131072),
            }),
        ),
        (
            nfsd,
            ProbeEvent::ServerPostSend {
                cid: Cid { cq_id: 3, cid: 90 },
                inv_rkey: None,
            },
        ),
    ];
    for (i, (tid, e)) in evs.into_iter().enumerate() {
        c.handle(
            &mut ids,
            &p(i as u64 + 1, 1_000 * (i as u64 + 1), tid, e),
            &mut out.sink(),
        );
    }
    let t = txns(&out.found);
    assert_eq!(t.len(), 1);
    let t = t[0];
    assert_eq!(t.xid, 0xa8c0454e);
    assert_eq!(t.credits_requested, Some(128));
    assert_eq!(t.call_ts_ns, 1_000, "call time is the receive completion");
    assert_eq!(t.call_transfer, Transfer::ReadChunks);
    assert_eq!(t.chunks[0].handle, 0x18d8);
    assert_eq!(t.chunks[0].bytes_moved, 131072);
    assert_eq!(t.round_trips, 2);
    assert_eq!(t.phases.read_ns, Some(1_000));
    assert_eq!(t.latency_us, Some(5.0));
    assert_eq!(c.stats.server_transactions, 1);
}

#[test]
fn server_reply_with_invalidate_and_write_chunk() {
    let mut c = Correlator::new(CorrelateConfig::default());
    let mut out = Found::default();
    let mut ids = ConnIds::default();
    let rc = Cid { cq_id: 4, cid: 53 };
    let evs = [
        ProbeEvent::ServerDecodeSeg {
            cid: Some(rc),
            kind: SegKind::Write,
            handle: 0x18d7,
            length: 131072,
            offset: 0x1000,
        },
        ProbeEvent::DecodeRqst {
            cid: rc,
            xid: 7,
            vers: 1,
            proc: 0,
            credits: 64,
            hdrlen: None,
        },
        ProbeEvent::EncodeWseg {
            cid: Some(Cid { cq_id: 3, cid: 72 }),
            handle: 0x18d7,
            length: 131072,
            offset: 0x1000,
        },
        ProbeEvent::PostChunk {
            kind: Some(SegKind::Write),
            cid: Cid { cq_id: 3, cid: 106 },
            sqecount: None,
        },
        ProbeEvent::ServerPostSend {
            cid: Cid { cq_id: 3, cid: 72 },
            inv_rkey: Some(0x18d7),
        },
    ];
    feed(&mut c, &mut ids, evs, (10, 1, 352), &mut out);
    let t = txns(&out.found);
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].remote_invalidated_rkey, Some(0x18d7));
    assert!(t[0].chunks[0].remotely_invalidated);
    assert_eq!(t[0].chunks[0].reported_length, Some(131072));
    assert_eq!(t[0].reply_transfer, Transfer::WriteChunks);
    assert!(t[0].anomalies.is_empty());
}

#[test]
fn bounded_outstanding_calls() {
    let mut c = Correlator::new(CorrelateConfig {
        max_outstanding: 4,
        ..CorrelateConfig::default()
    });
    let mut out = Found::default();
    let mut ids = ConnIds::default();
    for i in 0..100u32 {
        let task = TaskKey {
            task_id: i,
            client_id: 1,
        };
        c.handle(
            &mut ids,
            &p(
                u64::from(i) + 1,
                u64::from(i),
                1,
                ProbeEvent::Marshal {
                    task,
                    xid: i,
                    rtype: ChunkType::Inline,
                    wtype: ChunkType::Inline,
                    hdrlen: None,
                    xdrlen: None,
                },
            ),
            &mut out.sink(),
        );
    }
    assert!(c.tasks.len() <= 4);
    assert_eq!(c.stats.evicted, 96);
}

#[test]
fn server_anomalies_say_they_come_from_the_server() {
    let mut c = Correlator::new(CorrelateConfig::default());
    let mut out = Found::default();
    let mut ids = ConnIds::default();
    // An RDMA_MSGP call (rdma_proc 2) the server never answers.
    let decode = ProbeEvent::DecodeRqst {
        cid: Cid { cq_id: 4, cid: 1 },
        xid: 9,
        vers: 1,
        proc: 2,
        credits: 8,
        hdrlen: None,
    };
    c.handle(&mut ids, &p(1, 10, 352, decode), &mut out.sink());
    c.end(&mut ids, &mut out.sink());
    let anomalies: Vec<(Kind, Origin)> = out
        .found
        .iter()
        .filter_map(|f| match f {
            Finding::Anomaly(a) => Some((a.kind, a.origin)),
            Finding::Transaction(_) => None,
        })
        .collect();
    assert_eq!(
        anomalies,
        [
            (Kind::MsgpUsed, Origin::ServerProbes),
            (Kind::CallWithoutReply, Origin::ServerProbes)
        ]
    );
    assert_eq!(txns(&out.found)[0].origin, Origin::ServerProbes);
    // Counted as they were made, not by a pass over the output.
    let counts = &out.state.anomaly_counts;
    assert_eq!(counts.get(&Kind::MsgpUsed), Some(&1));
    assert_eq!(counts.get(&Kind::CallWithoutReply), Some(&1));
    assert_eq!(out.state.totals.probe_transactions, 1);
}

fn rpc_request(task: TaskKey, procedure: &str) -> ProbeEvent {
    ProbeEvent::RpcRequest {
        task,
        version: Some(3),
        program: Some("nfs".into()),
        procedure: Some(procedure.into()),
    }
}

fn marshal(task: TaskKey, xid: u32) -> ProbeEvent {
    ProbeEvent::Marshal {
        task,
        xid,
        rtype: ChunkType::Inline,
        wtype: ChunkType::Inline,
        hdrlen: None,
        xdrlen: None,
    }
}

/// `rpc_request` names the task's call; a retransmission (a second marshal
/// of the task, no second `rpc_request`) keeps the name; a task that never
/// got `rpc_request` (the probes started after it) stays unnamed.
#[test]
fn client_calls_are_named_by_rpc_request() {
    let mut c = Correlator::new(CorrelateConfig::default());
    let (mut out, mut ids) = (Found::default(), ConnIds::default());
    let other = TaskKey {
        task_id: 0x18,
        client_id: 4,
    };
    let evs = [
        rpc_request(T, "READ"),
        marshal(T, 1),
        marshal(T, 1),
        marshal(other, 2),
        ProbeEvent::Reply {
            task: T,
            xid: 1,
            credits: 8,
        },
        ProbeEvent::Reply {
            task: other,
            xid: 2,
            credits: 8,
        },
    ];
    feed(&mut c, &mut ids, evs, (0, 1, 40), &mut out);
    c.end(&mut ids, &mut out.sink());
    let t = txns(&out.found);
    assert_eq!(t.len(), 2);
    assert_eq!((t[0].xid, t[0].procedure_label().as_str()), (1, "NFS READ"));
    assert_eq!((t[0].version, t[0].proc), (Some(3), Some(6)));
    assert!(
        matches!(&t[0].call_header, crate::model::CallHeader::Text(s) if s.contains("nfs v3 READ")),
        "{:?}",
        t[0].call_header
    );
    assert_eq!((t[1].xid, t[1].procedure.as_deref()), (2, None));
    assert_eq!(c.names_held(), 0);
}

/// Every RPC of the host has an `rpc_request`, those over TCP too, which
/// never marshal here: the names they leave are bounded.
#[test]
fn names_of_calls_that_never_marshal_are_bounded() {
    let cfg = CorrelateConfig {
        max_outstanding: 100,
        ..CorrelateConfig::default()
    };
    let mut c = Correlator::new(cfg);
    let (mut out, mut ids) = (Found::default(), ConnIds::default());
    for i in 0..10_000u32 {
        let task = TaskKey {
            task_id: i,
            client_id: 9,
        };
        c.handle(
            &mut ids,
            &p(u64::from(i), 0, 1, rpc_request(task, "GETATTR")),
            &mut out.sink(),
        );
    }
    assert_eq!(c.names_held(), 100);
    assert!(c.names_order.len() <= 2 * 100 + 1024 + 1);
    assert!(out.found.is_empty());
}

/// `svc_process` on the nfsd thread that decoded the call names it; one
/// with another XID (a call over TCP on the same thread) does not.
#[test]
fn server_calls_are_named_by_svc_process() {
    let mut c = Correlator::new(CorrelateConfig::default());
    let (mut out, mut ids) = (Found::default(), ConnIds::default());
    let rc = Cid { cq_id: 2, cid: 5 };
    let process = |xid: u32, procedure: Option<&str>| ProbeEvent::SvcProcess {
        xid,
        version: Some(3),
        proc: Some(7),
        service: Some("nfsd".into()),
        procedure: procedure.map(String::from),
    };
    let evs = [
        ProbeEvent::DecodeRqst {
            cid: rc,
            xid: 0x51,
            vers: 1,
            proc: 0,
            credits: 32,
            hdrlen: None,
        },
        process(0x99, Some("GETATTR")),
        process(0x51, None),
        ProbeEvent::ServerPostSend {
            cid: Cid { cq_id: 3, cid: 1 },
            inv_rkey: None,
        },
    ];
    feed(&mut c, &mut ids, evs, (0, 1, 352), &mut out);
    let t = txns(&out.found);
    assert_eq!(t.len(), 1);
    // This kernel's svc_process had no `procedure`: the number names it.
    assert_eq!(t[0].procedure_label(), "NFS WRITE");
    assert_eq!((t[0].program, t[0].proc), (Some(100_003), Some(7)));
}

/// Linux 6.12 pulls a call's Read chunk while its nfsd thread goes on to
/// the next call; another thread resumes the first once the Reads
/// complete. Each call keeps its own name and invalidated R_Key (the lab's
/// parallel scenario on 6.12 swapped them between calls).
#[test]
fn a_call_resumed_by_another_thread_keeps_its_own_reply() {
    let mut c = Correlator::new(CorrelateConfig::default());
    let (mut out, mut ids) = (Found::default(), ConnIds::default());
    let rc = |cid| Cid { cq_id: 4, cid };
    let sc = Cid { cq_id: 3, cid: 82 };
    let (a, b) = (353, 354);
    let decode = |cid, xid| ProbeEvent::DecodeRqst {
        cid: rc(cid),
        xid,
        vers: 1,
        proc: 0,
        credits: 16,
        hdrlen: Some(52),
    };
    let process = |xid, procedure: &str| ProbeEvent::SvcProcess {
        xid,
        version: Some(3),
        proc: Some(7),
        service: Some("nfsd".into()),
        procedure: Some(procedure.into()),
    };
    let send = |cid, rkey| ProbeEvent::ServerPostSend {
        cid: Cid { cq_id: 3, cid },
        inv_rkey: Some(rkey),
    };
    let reply_seg = |cid, handle| ProbeEvent::ServerDecodeSeg {
        cid: Some(rc(cid)),
        kind: SegKind::Reply,
        handle,
        length: 1024,
        offset: 0x2000,
    };
    let evs = [
        (
            a,
            ProbeEvent::ServerDecodeSeg {
                cid: Some(rc(1)),
                kind: SegKind::Read { position: 132 },
                handle: 0x18d8,
                length: 8192,
                offset: 0x1000,
            },
        ),
        (a, reply_seg(1, 0x206b)),
        (a, decode(1, 0x3663f769)),
        (
            a,
            ProbeEvent::PostChunk {
                kind: Some(SegKind::Read { position: 0 }),
                cid: sc,
                sqecount: Some(2),
            },
        ),
        // Thread a moves on to the next call before the Read completes.
        (a, reply_seg(2, 0x216d)),
        (a, decode(2, 0x3463f769)),
        (
            0,
            ProbeEvent::ReadCompleted(Completion {
                cid: sc,
                status: None,
                bytes: Some(8192),
            }),
        ),
        // Thread b resumes the first call and answers it.
        (b, process(0x3663f769, "WRITE")),
        (b, send(90, 0x206b)),
        (a, process(0x3463f769, "GETATTR")),
        (a, send(91, 0x216d)),
    ];
    for (i, (tid, e)) in evs.into_iter().enumerate() {
        c.handle(
            &mut ids,
            &p(i as u64 + 1, 1_000 * (i as u64 + 1), tid, e),
            &mut out.sink(),
        );
    }
    c.end(&mut ids, &mut out.sink());
    let t = txns(&out.found);
    assert_eq!(t.len(), 2, "{out:?}");
    let by = |xid| t.iter().find(|t| t.xid == xid).expect("both calls");
    let (w, g) = (by(0x3663f769), by(0x3463f769));
    assert_eq!(w.remote_invalidated_rkey, Some(0x206b));
    assert_eq!(w.procedure_label(), "NFS WRITE");
    let read = w
        .chunks
        .iter()
        .find(|c| c.handle == 0x18d8)
        .expect("read chunk");
    assert_eq!(read.bytes_moved, 8192);
    assert_eq!(g.remote_invalidated_rkey, Some(0x216d));
    assert!(
        g.procedure_label().contains("GETATTR"),
        "{}",
        g.procedure_label()
    );
    assert!(
        !out.found.iter().any(|f| matches!(f, Finding::Anomaly(_))),
        "{out:?}"
    );
}

/// The server's events as Linux 5.10 gives them: segments decoded on the
/// nfsd thread with no completion id, the receive completion named
/// `svcrdma_wc_receive`, and one `svcrdma_post_chunk` for Reads and Writes.
#[test]
fn server_call_from_linux_5_10_events() {
    let mut c = Correlator::new(CorrelateConfig::default());
    let (mut out, mut ids) = (Found::default(), ConnIds::default());
    let rc = Cid { cq_id: 4, cid: 51 };
    let nfsd = 353;
    let seg = |kind, handle| ProbeEvent::ServerDecodeSeg {
        cid: None,
        kind,
        handle,
        length: 8192,
        offset: 0x1000,
    };
    let evs = [
        (
            0,
            ProbeEvent::RecvCompleted(Completion {
                cid: rc,
                status: None,
                bytes: Some(200),
            }),
        ),
        (nfsd, seg(SegKind::Read { position: 132 }, 0x2d09)),
        (nfsd, seg(SegKind::Reply, 0x2c05)),
        (
            nfsd,
            ProbeEvent::DecodeRqst {
                cid: rc,
                xid: 0x5d83749c,
                vers: 1,
                proc: 0,
                credits: 16,
                hdrlen: Some(52),
            },
        ),
        (
            nfsd,
            ProbeEvent::PostChunk {
                kind: None,
                cid: Cid { cq_id: 3, cid: 9 },
                sqecount: Some(2),
            },
        ),
        (
            0,
            ProbeEvent::ReadCompleted(Completion {
                cid: Cid { cq_id: 3, cid: 9 },
                status: None,
                bytes: Some(8192),
            }),
        ),
        (
            nfsd,
            ProbeEvent::SvcProcess {
                xid: 0x5d83749c,
                version: Some(3),
                proc: Some(7),
                service: Some("nfsd".into()),
                procedure: Some("WRITE".into()),
            },
        ),
        (
            nfsd,
            ProbeEvent::ServerPostSend {
                cid: Cid { cq_id: 3, cid: 10 },
                inv_rkey: Some(0x2c05),
            },
        ),
    ];
    for (i, (tid, e)) in evs.into_iter().enumerate() {
        c.handle(
            &mut ids,
            &p(i as u64 + 1, 1_000 * (i as u64 + 1), tid, e),
            &mut out.sink(),
        );
    }
    let t = txns(&out.found);
    assert_eq!(t.len(), 1, "{out:?}");
    let t = t[0];
    assert_eq!(t.call_ts_ns, 1_000, "call time is the receive completion");
    let mut handles: Vec<u32> = t.chunks.iter().map(|c| c.handle).collect();
    handles.sort();
    assert_eq!(handles, [0x2c05, 0x2d09]);
    assert_eq!(t.phases.read_ns, Some(1_000), "the post_chunk was the Read");
    assert_eq!(t.remote_invalidated_rkey, Some(0x2c05));
    assert_eq!(t.procedure_label(), "NFS WRITE");
    assert!(t.anomalies.is_empty(), "{:?}", t.anomalies);
}

/// A call whose connection died while its Read chunk was being pulled, sent
/// again on a new connection (the lab's reconnect scenario): the first
/// attempt ends unanswered when the call is decoded again, before the
/// second is answered, so the answered one is the last word on the XID.
#[test]
fn a_call_sent_again_ends_its_stalled_first_attempt() {
    let mut c = Correlator::new(CorrelateConfig::default());
    let (mut out, mut ids) = (Found::default(), ConnIds::default());
    let xid = 0x68be1842;
    let decode = |cq_id| ProbeEvent::DecodeRqst {
        cid: Cid { cq_id, cid: 1 },
        xid,
        vers: 1,
        proc: 0,
        credits: 16,
        hdrlen: Some(52),
    };
    let evs = [
        (353, decode(4)),
        (
            353,
            ProbeEvent::PostChunk {
                kind: Some(SegKind::Read { position: 0 }),
                cid: Cid { cq_id: 3, cid: 9 },
                sqecount: Some(2),
            },
        ),
        // The connection is gone; the thread serves something else.
        (
            353,
            ProbeEvent::DecodeRqst {
                cid: Cid { cq_id: 4, cid: 2 },
                xid: 0x1234,
                vers: 1,
                proc: 0,
                credits: 16,
                hdrlen: None,
            },
        ),
        (354, decode(7)),
        (
            354,
            ProbeEvent::ServerPostSend {
                cid: Cid { cq_id: 8, cid: 1 },
                inv_rkey: None,
            },
        ),
    ];
    for (i, (tid, e)) in evs.into_iter().enumerate() {
        c.handle(
            &mut ids,
            &p(i as u64 + 1, 1_000 * (i as u64 + 1), tid, e),
            &mut out.sink(),
        );
    }
    let t = txns(&out.found);
    let attempts: Vec<_> = t.iter().filter(|t| t.xid == xid).collect();
    assert_eq!(attempts.len(), 2, "{out:?}");
    assert_eq!(
        attempts[0].reply_frame, None,
        "the first attempt, unanswered, first"
    );
    assert_eq!(attempts[1].reply_frame, Some(5));
}

/// Linux 6.12 under MR exhaustion (v3-ddp lab scenario, xid 0x0a373ccd): the
/// first attempt registers one segment, `xprtrdma_marshal_failed` (-EAGAIN)
/// releases it, and the retry registers two others. The call's chunks are
/// the retry's, as on the wire.
#[test]
fn a_failed_marshal_drops_its_segments() {
    let mut c = Correlator::new(CorrelateConfig::default());
    let mut out = Found::default();
    let mut ids = ConnIds::default();
    let read = |handle| ProbeEvent::ClientChunk {
        task: T,
        kind: SegKind::Read { position: 132 },
        handle,
        length: 131072,
        offset: 0x0a37_3ccd_8d2e_f000,
    };
    let evs = [
        read(0x3f3),
        ProbeEvent::MarshalFailed {
            task: T,
            xid: Some(0x0a37_3ccd),
            ret: Some(-11),
        },
        read(0x3f4),
        read(0x188e),
        ProbeEvent::Marshal {
            task: T,
            xid: 0x0a37_3ccd,
            rtype: ChunkType::ReadList,
            wtype: ChunkType::Inline,
            hdrlen: Some(76),
            xdrlen: Some(262276),
        },
        ProbeEvent::Reply {
            task: T,
            xid: 0x0a37_3ccd,
            credits: 128,
        },
    ];
    feed(&mut c, &mut ids, evs, (1_000_000, 10_000, 40), &mut out);
    c.end(&mut ids, &mut out.sink());
    let t = txns(&out.found);
    assert_eq!(t.len(), 1);
    let handles: Vec<u32> = t[0].chunks.iter().map(|s| s.handle).collect();
    assert_eq!(handles, [0x3f4, 0x188e]);
}

/// `rpc_stats_latency` comes as the task ends, after its reply: the call
/// keeps the RPC layer's backlog, rtt and execute, and its names (the live
/// probes leave `rpc_request` in the kernel). One for another XID
/// of the task (a later call) or for a task never marshalled here (an RPC
/// over TCP) times nothing; a call without one stays unknown, not 0.
#[test]
fn client_calls_keep_the_rpc_layers_times() {
    let mut c = Correlator::new(CorrelateConfig::default());
    let (mut out, mut ids) = (Found::default(), ConnIds::default());
    let other = TaskKey {
        task_id: 0x18,
        client_id: 4,
    };
    let tcp = TaskKey {
        task_id: 0x99,
        client_id: 1,
    };
    let stats = |task, xid, backlog| ProbeEvent::RpcStats {
        task,
        xid,
        version: Some(3),
        program: Some("nfs".into()),
        procedure: Some("GETATTR".into()),
        backlog_us: Some(backlog),
        rtt_us: Some(40),
        execute_us: Some(backlog + 45),
    };
    let reply = |task, xid| ProbeEvent::Reply {
        task,
        xid,
        credits: 8,
    };
    let evs = [
        marshal(T, 1),
        marshal(other, 2),
        reply(T, 1),
        reply(other, 2),
        stats(T, 1, 12),
        stats(other, 3, 7),
        stats(tcp, 9, 5),
    ];
    feed(&mut c, &mut ids, evs, (0, 1, 40), &mut out);
    c.end(&mut ids, &mut out.sink());
    let t = txns(&out.found);
    assert_eq!(t.len(), 2);
    let k = t[0].kernel_times;
    assert_eq!(
        (k.backlog_us, k.rtt_us, k.execute_us, k.server_execute_us),
        (Some(12), Some(40), Some(57), None)
    );
    assert_eq!(t[0].procedure_label(), "NFS GETATTR");
    assert_eq!((t[0].version, t[0].proc), (Some(3), Some(1)));
    assert_eq!(t[1].kernel_times, crate::KernelTimes::default());
    assert_eq!(t[1].procedure, None);
}

/// `svc_stats_latency` fires on the thread about to send the reply: its
/// call keeps the execute time; one for another XID (a call over TCP on
/// the same thread) is not its.
#[test]
fn server_calls_keep_the_rpc_layers_execute_time() {
    let mut c = Correlator::new(CorrelateConfig::default());
    let (mut out, mut ids) = (Found::default(), ConnIds::default());
    let rc = Cid { cq_id: 2, cid: 5 };
    let decode = |xid| ProbeEvent::DecodeRqst {
        cid: rc,
        xid,
        vers: 1,
        proc: 0,
        credits: 32,
        hdrlen: None,
    };
    let stats = |xid, execute| ProbeEvent::SvcStats {
        xid,
        execute_us: Some(execute),
    };
    let send = || ProbeEvent::ServerPostSend {
        cid: Cid { cq_id: 3, cid: 1 },
        inv_rkey: None,
    };
    let evs = [
        decode(0x51),
        stats(0x99, 1000),
        stats(0x51, 88),
        send(),
        decode(0x52),
        send(),
    ];
    feed(&mut c, &mut ids, evs, (0, 1, 352), &mut out);
    let t = txns(&out.found);
    assert_eq!(t.len(), 2);
    assert_eq!(t[0].kernel_times.server_execute_us, Some(88));
    assert_eq!(t[0].kernel_times.rtt_us, None);
    assert_eq!(t[1].kernel_times.server_execute_us, None);
}

/// Once `rpc_stats_latency` events flow, an answered call waits past the
/// grace period for its task's end (which names and times it; under load
/// the task runs late), and goes when it comes, or once later records are
/// `stats_wait_ns` past its reply.
#[test]
fn answered_calls_wait_for_their_tasks_end_once_it_flows() {
    let cfg = CorrelateConfig::default();
    let (grace, wait) = (cfg.close_grace_ns, cfg.stats_wait_ns);
    let mut c = Correlator::new(cfg);
    let (mut out, mut ids) = (Found::default(), ConnIds::default());
    let other = TaskKey {
        task_id: 0x18,
        client_id: 4,
    };
    let late = TaskKey {
        task_id: 0x19,
        client_id: 4,
    };
    let stats = |task, xid| ProbeEvent::RpcStats {
        task,
        xid,
        version: Some(3),
        program: Some("nfs".into()),
        procedure: Some("READ".into()),
        backlog_us: Some(1),
        rtt_us: Some(2),
        execute_us: Some(3),
    };
    let reply = |task, xid| ProbeEvent::Reply {
        task,
        xid,
        credits: 8,
    };
    let mut at = |c: &mut Correlator, out: &mut Found, seq: u64, ts: u64, e: ProbeEvent| {
        c.handle(&mut ids, &p(seq, ts, 1, e), &mut out.sink());
    };
    at(&mut c, &mut out, 1, 0, marshal(other, 1));
    at(&mut c, &mut out, 2, 10, reply(other, 1));
    at(&mut c, &mut out, 3, 20, stats(other, 1)); // the events flow
    at(&mut c, &mut out, 4, 30, marshal(T, 2));
    at(&mut c, &mut out, 5, 40, marshal(late, 3));
    at(&mut c, &mut out, 6, 50, reply(T, 2));
    at(&mut c, &mut out, 7, 60, reply(late, 3));
    at(&mut c, &mut out, 8, 70 + grace, stats(T, 2));
    // `other` ended: it goes after its grace. T ended late, inside the
    // wait; `late` is still waiting.
    at(
        &mut c,
        &mut out,
        9,
        80 + 2 * grace,
        marshal(
            TaskKey {
                task_id: 0x20,
                client_id: 4,
            },
            4,
        ),
    );
    let xids: Vec<u32> = txns(&out.found).iter().map(|t| t.xid).collect();
    assert_eq!(xids, [1, 2]);
    assert_eq!(txns(&out.found)[1].procedure.as_deref(), Some("READ"));
    at(
        &mut c,
        &mut out,
        10,
        61 + wait,
        marshal(
            TaskKey {
                task_id: 0x21,
                client_id: 4,
            },
            5,
        ),
    );
    c.tick(&mut ids, 62 + wait, &mut out.sink());
    let t = txns(&out.found);
    assert_eq!(t.len(), 3);
    assert_eq!(
        (
            t[2].xid,
            t[2].kernel_times.rtt_us,
            t[2].procedure.as_deref()
        ),
        (3, None, None)
    );
}

/// The task's end on the flow of a lab run (the first call's reply, its
/// task's end, then the call under test): `marshal` and `reply` of xid 2
/// for task `T` at 0 and `REPLY_TS`, the flow known from task 0x18's.
const REPLY_TS: u64 = 1_000_000_000;

fn stalled_guest_setup(c: &mut Correlator, ids: &mut ConnIds, out: &mut Found) {
    let other = TaskKey {
        task_id: 0x18,
        client_id: 4,
    };
    let evs = [
        (1, 0, marshal(other, 1)),
        (
            2,
            1_000,
            ProbeEvent::Reply {
                task: other,
                xid: 1,
                credits: 8,
            },
        ),
        (3, 2_000, rpc_stats(other, 1)),
        (4, REPLY_TS - 40_000_000, marshal(T, 2)),
        (
            5,
            REPLY_TS,
            ProbeEvent::Reply {
                task: T,
                xid: 2,
                credits: 8,
            },
        ),
    ];
    for (seq, ts, e) in evs {
        c.handle(ids, &p(seq, ts, 1, e), &mut out.sink());
    }
    assert!(c.holds_answered(2));
}

fn rpc_stats(task: TaskKey, xid: u32) -> ProbeEvent {
    ProbeEvent::RpcStats {
        task,
        xid,
        version: Some(3),
        program: Some("nfs".into()),
        procedure: Some("ACCESS".into()),
        backlog_us: Some(5),
        rtt_us: Some(45_000),
        execute_us: Some(663_000),
    }
}

/// The call under test (xid 2) as it went out: its rtt, or none.
fn xid2_rtt(out: &Found) -> Option<Option<u64>> {
    txns(&out.found)
        .iter()
        .find(|t| t.xid == 2)
        .map(|t| t.kernel_times.rtt_us)
}

/// `/work/logs/probes-flake-s6`: on a single-vCPU guest no rpcrdma record
/// came for 618 ms after a reply, then the task ended. Whether the
/// analyzer ticked through the stall (fast) or read the records only after
/// ticking far past it (slow), the call keeps its RPC layer's times.
#[test]
fn a_task_ending_618_ms_after_its_reply_keeps_its_times_fast_or_slow() {
    let end_ts = REPLY_TS + 618_000_000;
    for ticks in [
        // Fast: the analyzer ticks every 100 ms through the stall.
        (1..=6)
            .map(|i| REPLY_TS + i * 100_000_000)
            .collect::<Vec<_>>(),
        // Slow: it read the stalled guest's records seconds late.
        vec![REPLY_TS + 2_000_000_000, REPLY_TS + 5_000_000_000],
    ] {
        let mut c = Correlator::new(CorrelateConfig::default());
        let (mut out, mut ids) = (Found::default(), ConnIds::default());
        stalled_guest_setup(&mut c, &mut ids, &mut out);
        for t in ticks {
            c.tick(&mut ids, t, &mut out.sink());
        }
        assert_eq!(xid2_rtt(&out), None, "held through the stall");
        c.handle(&mut ids, &p(6, end_ts, 1, rpc_stats(T, 2)), &mut out.sink());
        // The same thread goes on with its next call.
        let next = TaskKey {
            task_id: 0x20,
            client_id: 4,
        };
        c.handle(
            &mut ids,
            &p(7, end_ts + 100, 1, marshal(next, 3)),
            &mut out.sink(),
        );
        c.tick(&mut ids, end_ts + 100_000_000, &mut out.sink());
        assert_eq!(xid2_rtt(&out), Some(Some(45_000)));
        assert!(!c.holds_answered(2));
    }
}

/// A task's end that never comes: when later records show the kernel
/// `stats_wait_ns` past the reply, the call goes without the RPC layer's
/// times (unknown, not 0); when no record comes at all, after
/// `stats_give_up_ns` of the analyzer's ticks. Either way nothing stays.
#[test]
fn a_task_end_that_never_comes_is_given_up_by_records_or_ticks() {
    let cfg = CorrelateConfig::default();
    // Records flow: other tasks run on, the call's task does not end.
    let mut c = Correlator::new(cfg);
    let (mut out, mut ids) = (Found::default(), ConnIds::default());
    stalled_guest_setup(&mut c, &mut ids, &mut out);
    let mut seq = 6;
    let mut ts = REPLY_TS;
    while ts <= REPLY_TS + cfg.stats_wait_ns + 100_000_000 {
        ts += 100_000_000;
        let task = TaskKey {
            task_id: 0x100 + seq as u32,
            client_id: 4,
        };
        c.handle(
            &mut ids,
            &p(seq, ts, 2, marshal(task, seq as u32 + 10)),
            &mut out.sink(),
        );
        seq += 1;
        if ts <= REPLY_TS + cfg.stats_wait_ns {
            assert_eq!(xid2_rtt(&out), None, "held at {ts}");
        }
    }
    assert_eq!(xid2_rtt(&out), Some(None));
    // A quiet kernel: only ticks, up to the bound.
    let mut c = Correlator::new(cfg);
    let (mut out, mut ids) = (Found::default(), ConnIds::default());
    stalled_guest_setup(&mut c, &mut ids, &mut out);
    c.tick(&mut ids, REPLY_TS + cfg.stats_give_up_ns, &mut out.sink());
    assert_eq!(xid2_rtt(&out), None);
    c.tick(
        &mut ids,
        REPLY_TS + cfg.stats_give_up_ns + 1,
        &mut out.sink(),
    );
    assert_eq!(xid2_rtt(&out), Some(None));
    assert!(!c.holds_answered(2));
    assert_eq!(c.tracked(), 0);
}

/// The lab's siw parallel run under host load (session 9): the live
/// analyzer read the guest's records seconds after the kernel wrote them,
/// so its ticks ran more than `stats_give_up_ns` ahead of the reply's
/// stamp when the reply was read. The task's end, 86 ms later in the
/// kernel and read right after, still finds its call: the give-up counts
/// from when the reply was read.
#[test]
fn records_read_late_still_find_their_tasks_end() {
    let cfg = CorrelateConfig::default();
    let mut c = Correlator::new(cfg);
    let (mut out, mut ids) = (Found::default(), ConnIds::default());
    let behind = cfg.stats_give_up_ns + 5_000_000_000;
    c.tick(&mut ids, REPLY_TS - 1_000_000_000 + behind, &mut out.sink());
    stalled_guest_setup(&mut c, &mut ids, &mut out);
    c.tick(&mut ids, REPLY_TS + behind + 100_000_000, &mut out.sink());
    assert_eq!(xid2_rtt(&out), None, "held for its task's end");
    let end_ts = REPLY_TS + 86_000_000;
    c.handle(&mut ids, &p(6, end_ts, 1, rpc_stats(T, 2)), &mut out.sink());
    c.tick(&mut ids, REPLY_TS + behind + 200_000_000, &mut out.sink());
    assert_eq!(xid2_rtt(&out), Some(Some(45_000)));
    // A task's end that never comes is still given up, on the same clock.
    let mut c = Correlator::new(cfg);
    let (mut out, mut ids) = (Found::default(), ConnIds::default());
    c.tick(&mut ids, REPLY_TS + behind, &mut out.sink());
    stalled_guest_setup(&mut c, &mut ids, &mut out);
    c.tick(
        &mut ids,
        REPLY_TS + behind + cfg.stats_give_up_ns,
        &mut out.sink(),
    );
    assert_eq!(xid2_rtt(&out), None);
    c.tick(
        &mut ids,
        REPLY_TS + behind + cfg.stats_give_up_ns + 1,
        &mut out.sink(),
    );
    assert_eq!(xid2_rtt(&out), Some(None));
    assert_eq!(c.tracked(), 0);
}
