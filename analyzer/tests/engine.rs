//! Engine scenario tests: real captures replayed through `Engine::handle`
//! (read with `pcap-parser`, not the analyzer's own readers), and hostile
//! input built with the dissectors' emitters (through the synth generator's
//! `Wire`) to prove the tables stay within their caps and say so.

#[path = "common/pcap.rs"]
mod pcap;

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use rdma_analyzer::engine::{
    Anomaly, ChunkKind, CmState, Config, ConnId, Engine, Event, Finding, Kind, Origin, StepWhat,
    Transaction, Transfer,
};
use rdma_analyzer::output::view::{EvictionsView, KindView, TotalsView};
use rdma_analyzer::synth::prng::SplitMix64;
use rdma_analyzer::synth::wire::{Node, Wire};
use rdma_dissectors::ib::bth::{Bth, Opcode, Operation, Position};
use rdma_dissectors::ib::{PKey, Psn, Qpn, Transport};
use rdma_dissectors::oncrpc::{AuthFlavor, Call, MsgBody, OpaqueAuth, RpcMsg};
use rdma_dissectors::rpcrdma::{Body, Chunks, Proc, RpcRdmaHeader, Xid};
use rdma_dissectors::stack;

use pcap::{capture, capture_frames, frames, Frame};

/// Every frame of `frames` through a new engine, then the end.
fn replay(frames: &[Frame], config: Config) -> (Engine, Vec<Finding>) {
    let mut engine = Engine::new(config);
    let mut out = Vec::new();
    for f in frames {
        engine.handle(f.event(), &mut out);
    }
    engine.handle(Event::End, &mut out);
    (engine, out)
}

/// A whole capture file in memory (one the test wrote).
fn run(bytes: &[u8], config: Config) -> (Engine, Vec<Finding>) {
    let (frames, cut) = frames(bytes);
    assert!(!cut, "the capture ends in the middle of a record");
    replay(&frames, config)
}

fn kinds(out: &[Finding]) -> BTreeMap<Kind, usize> {
    let mut m = BTreeMap::new();
    for f in out {
        if let Finding::Anomaly(a) = f {
            *m.entry(a.kind).or_default() += 1;
        }
    }
    m
}

#[test]
fn real_inline_capture() {
    let (engine, out) = replay(&capture_frames("v3-inline.pcap"), Config::default());
    let s = engine.state();
    assert_eq!(s.connections.len(), 1);
    let c = s.connections.values().next().unwrap();
    assert_eq!(c.cm_state, CmState::Closed);
    assert_eq!(c.port, Some(20049));
    let n = c.negotiated.unwrap();
    // Linux client R set, server R clear; 4 KiB both ways (the private
    // data of the REQ and the REP).
    assert!(!n.remote_invalidation);
    assert_eq!((n.inline_send, n.inline_recv), (4096, 4096));
    assert_eq!((c.calls, c.replies), (41, 41));
    assert_eq!(s.totals.icrc_invalid, 0);
    // The server's Send With Invalidate (frame 145) breaks RFC 8797 4.1.
    // Nothing else.
    let k = kinds(&out);
    assert_eq!(
        k.get(&Kind::RemoteInvalidationNotNegotiated),
        Some(&1),
        "{k:?}"
    );
    assert_eq!(k.len(), 1, "{k:?}");
    let inv: Vec<&Transaction> = out
        .iter()
        .filter_map(|f| match f {
            Finding::Transaction(t) if t.remote_invalidated_rkey.is_some() => Some(&**t),
            _ => None,
        })
        .collect();
    assert_eq!(inv.len(), 1);
    assert_eq!(inv[0].reply_frame, Some(145));
    assert_eq!(inv[0].remote_invalidated_rkey, Some(0xc63));
    assert!(inv[0]
        .chunks
        .iter()
        .any(|s| s.handle == 0xc63 && s.remotely_invalidated));
}

#[test]
fn real_ddp_capture_round_trips_and_phases() {
    let (_, out) = replay(&capture_frames("v3-ddp.pcap"), Config::default());
    assert!(kinds(&out).is_empty(), "{:?}", kinds(&out));
    let txns: Vec<&Transaction> = out
        .iter()
        .filter_map(|f| match f {
            Finding::Transaction(t) => Some(&**t),
            _ => None,
        })
        .collect();
    let writes: Vec<_> = txns
        .iter()
        .filter(|t| t.call_transfer == Transfer::ReadChunks)
        .collect();
    assert_eq!(writes.len(), 8);
    for w in &writes {
        // RDMA Read of the call data: one extra round trip, and every byte moved.
        assert_eq!(w.round_trips, 2);
        assert!(w.phases.read_ns.is_some());
        assert!(w
            .chunks
            .iter()
            .filter(|s| s.kind == ChunkKind::Read)
            .all(|s| s.bytes_moved == u64::from(s.length)));
        assert!(w
            .ladder
            .iter()
            .any(|s| matches!(s.what, StepWhat::RdmaReadRequest { .. })));
    }
    let reads: Vec<_> = txns
        .iter()
        .filter(|t| t.reply_transfer == Transfer::WriteChunks)
        .collect();
    assert_eq!(reads.len(), 8);
    for r in &reads {
        assert_eq!(r.round_trips, 2);
        let moved: u64 = r
            .chunks
            .iter()
            .filter(|s| s.kind == ChunkKind::Write)
            .map(|s| s.bytes_moved)
            .sum();
        let reported: u64 = r
            .chunks
            .iter()
            .filter_map(|s| s.reported_length)
            .map(u64::from)
            .sum();
        assert_eq!(
            moved, reported,
            "bytes written equal what the reply's write list reports"
        );
    }
}

#[test]
fn truncated_capture_keeps_what_came_before() {
    let bytes = capture("v3-ddp.pcap");
    let (frames, cut) = frames(&bytes[..bytes.len() / 2 + 7]);
    assert!(cut, "a cut file must not end cleanly");
    assert!(frames.len() > 1000);
    let (_, out) = replay(&frames, Config::default());
    assert!(out
        .iter()
        .any(|f| matches!(f, Finding::Transaction(t) if t.reply_frame.is_some())));
}

const CLIENT: Node = Node {
    mac: [0x52, 0x54, 0, 0, 0, 2],
    ip: Ipv4Addr::new(10, 99, 0, 2),
};
const SERVER: Node = Node {
    mac: [0x52, 0x54, 0, 0, 0, 1],
    ip: Ipv4Addr::new(10, 99, 0, 1),
};

/// An acknowledged RC packet header.
fn bth(opcode: Opcode, qpn: u32, psn: u32) -> Bth {
    Bth {
        opcode,
        se: false,
        m: false,
        pad_count: 0,
        tver: 0,
        p_key: PKey::DEFAULT,
        fecn: false,
        becn: false,
        dest_qp: Qpn::try_new(qpn & 0xff_ffff).unwrap(),
        ack_req: true,
        psn: Psn::try_new(psn & 0xff_ffff).unwrap(),
    }
}

/// An RDMA_MSG NFSv3 GETATTR call with `xid`, as bytes of a Send payload.
fn call_payload(xid: u32, buf: &mut [u8]) -> usize {
    let hdr = RpcRdmaHeader {
        xid: Xid(xid),
        vers: 1,
        credits: 128,
        proc: Proc::Msg,
        body: Body::Msg(Chunks::EMPTY),
    };
    let n = hdr.emit(buf).unwrap();
    let fh = [0u8; 36];
    let msg = RpcMsg {
        xid,
        body: MsgBody::Call(Call {
            rpcvers: 2,
            prog: 100003,
            vers: 3,
            proc: 1,
            cred: OpaqueAuth {
                flavor: AuthFlavor::from(0),
                body: &[],
            },
            verf: OpaqueAuth::NONE,
            args: &fh,
        }),
    };
    n + msg.emit(&mut buf[n..]).unwrap()
}

#[test]
fn a_flood_of_unanswered_calls_stays_within_the_cap() {
    let mut wire = Wire::new(Vec::new(), 1_700_000_000_000_000_000, false).unwrap();
    let mut payload = [0u8; 256];
    let calls = 200_000u32;
    for i in 0..calls {
        let n = call_payload(0x1000_0000 + i, &mut payload);
        let t = Transport::new(bth(Opcode::RC_SEND_ONLY, 0x11, i), &payload[..n]);
        wire.packet(&CLIENT, &SERVER, 49152, &t).unwrap();
    }
    let bytes = wire.finish().unwrap();
    let config = Config {
        max_outstanding: 1000,
        ..Config::default()
    };
    let (engine, out) = run(&bytes, config);
    let s = engine.state();
    assert_eq!(s.totals.calls, u64::from(calls));
    // Only the cap's worth is ever held; the rest were evicted, counted and reported.
    assert_eq!(s.evictions.calls, u64::from(calls) - 1000);
    let k = kinds(&out);
    assert_eq!(k.get(&Kind::StateEvicted), Some(&(calls as usize - 1000)));
    assert_eq!(k.get(&Kind::CallWithoutReply), Some(&1000));
    assert_eq!(engine.outstanding_calls(), 0, "closed out at the end");
}

#[test]
fn a_flood_of_queue_pairs_stays_within_the_cap() {
    let mut wire = Wire::new(Vec::new(), 1_700_000_000_000_000_000, false).unwrap();
    let mut payload = [0u8; 256];
    let qps = 50_000u32;
    for i in 0..qps {
        let n = call_payload(i, &mut payload);
        // Every call to a different QP: each makes a connection from traffic.
        let t = Transport::new(bth(Opcode::RC_SEND_ONLY, 0x100 + i, 1), &payload[..n]);
        wire.packet(&CLIENT, &SERVER, 49152, &t).unwrap();
        // And an ACK to a QP nobody introduced.
        let mut ack = Transport::new(bth(Opcode(0x11), 0x20_0000 + i, 1), &[]);
        ack.aeth = Some(rdma_dissectors::ib::Aeth {
            syndrome: 0x1f,
            msn: 1,
        });
        wire.packet(&SERVER, &CLIENT, 49152, &ack).unwrap();
    }
    let bytes = wire.finish().unwrap();
    let config = Config {
        max_qps: 512,
        max_connections: 256,
        ..Config::default()
    };
    let (engine, out) = run(&bytes, config);
    assert!(engine.tracked_qps() <= 512, "{}", engine.tracked_qps());
    assert!(engine.state().connections.len() <= 256);
    assert_eq!(engine.state().evictions.connections, u64::from(qps) - 256);
    assert!(engine.state().evictions.qps > 0);
    assert!(kinds(&out).get(&Kind::StateEvicted).copied().unwrap_or(0) > 0);
}

#[test]
fn short_header_on_a_known_connection_is_reported() {
    let mut wire = Wire::new(Vec::new(), 1_700_000_000_000_000_000, false).unwrap();
    let mut payload = [0u8; 256];
    // A call makes the QP an RPC-over-RDMA one; then a 8-byte Send arrives.
    let n = call_payload(7, &mut payload);
    wire.packet(
        &CLIENT,
        &SERVER,
        49152,
        &Transport::new(bth(Opcode::RC_SEND_ONLY, 0x11, 1), &payload[..n]),
    )
    .unwrap();
    let short = Transport::new(
        bth(Opcode::RC_SEND_ONLY, 0x11, 2),
        &[0, 0, 0, 7, 0, 0, 0, 1],
    );
    wire.packet(&CLIENT, &SERVER, 49152, &short).unwrap();
    let bytes = wire.finish().unwrap();
    let (_, out) = run(&bytes, Config::default());
    let short: Vec<&Anomaly> = out
        .iter()
        .filter_map(|f| match f {
            Finding::Anomaly(a) if a.kind == Kind::ShortHeader => Some(&**a),
            _ => None,
        })
        .collect();
    assert_eq!(short.len(), 1);
    assert_eq!(short[0].frames, vec![2]);
}

/// The findings and the final state of a replay, as text, with the Middle
/// packets of transfers deferred or not.
fn replay_text(frames: &[Frame], defer: bool) -> (String, String) {
    let config = Config {
        defer_middle_packets: defer,
        ..Config::default()
    };
    let (engine, out) = replay(frames, config);
    (format!("{out:#?}"), format!("{:#?}", engine.state()))
}

/// Whether the frame is the Middle of an RDMA Write or Read Response: a
/// packet the engine defers.
fn is_middle(f: &Frame) -> bool {
    let d = stack::dissect(f.link, &f.data, &stack::Config::default());
    d.bth().is_some_and(|b| {
        matches!(
            b.opcode.operation(),
            Operation::RdmaWrite | Operation::RdmaReadResponse
        ) && b.opcode.position() == Some(Position::Middle)
    })
}

/// Deferring the Middle packets of Writes and Read Responses (`DeferredMiddle`)
/// must give exactly what adding each at once gives: on every real capture,
/// and on damaged copies where packets are lost, repeated and reordered, so
/// that transfers break off, interleave and outlive their transactions.
#[test]
fn deferred_middle_packets_give_the_same_results() {
    let mut middles = 0;
    for name in [
        "v3-ddp.pcap",
        "v42-ddp.pcap",
        "parallel.pcap",
        "reconnect.pcap",
        "v42-reminv.pcap",
        "inline-thresholds.pcap",
    ] {
        let frames = capture_frames(name);
        middles += frames.iter().filter(|f| is_middle(f)).count();
        assert_eq!(
            replay_text(&frames, true),
            replay_text(&frames, false),
            "{name}"
        );
        let mut rng = SplitMix64::new(0x5eed ^ frames.len() as u64);
        for round in 0..4 {
            let mut damaged = Vec::with_capacity(frames.len());
            for f in &frames {
                match rng.below(100) {
                    0..=3 => {}                                      // lost
                    4..=5 => damaged.extend([f.clone(), f.clone()]), // repeated
                    _ => damaged.push(f.clone()),
                }
            }
            // Reordered: neighbours in the first rounds, up to 16 apart in
            // the last, so that transfers interleave.
            let reach = if round < 2 { 1 } else { 16 };
            for i in reach..damaged.len() {
                if rng.below(100) < 4 {
                    let j = i - 1 - rng.below(reach as u64) as usize;
                    damaged.swap(j, i);
                }
            }
            assert_eq!(
                replay_text(&damaged, true),
                replay_text(&damaged, false),
                "{name}, damaged copy {round}"
            );
        }
    }
    assert!(
        middles > 1000,
        "the captures hold only {middles} Middle packets"
    );
}

/// The CM message a frame carries (`"REQ"`, `"DREP"`, ...).
fn cm_message(f: &Frame) -> Option<&'static str> {
    let d = stack::dissect(f.link, &f.data, &stack::Config::default());
    d.cm().map(|m| m.name())
}

fn cm_bad_transitions(out: &[Finding]) -> Vec<&Anomaly> {
    out.iter()
        .filter_map(|f| match f {
            Finding::Anomaly(a) if a.kind == Kind::CmBadTransition => Some(&**a),
            _ => None,
        })
        .collect()
}

/// A DREP whose DREQ the capture lost: the connection is closed all the
/// same, and the broken exchange is reported, by the wire.
#[test]
fn a_drep_without_its_dreq_is_a_bad_cm_transition() {
    let all = capture_frames("v3-inline.pcap");
    let (_, out) = replay(&all, Config::default());
    assert!(cm_bad_transitions(&out).is_empty());
    let frames: Vec<Frame> = all
        .into_iter()
        .filter(|f| cm_message(f) != Some("DREQ"))
        .collect();
    let (engine, out) = replay(&frames, Config::default());
    let bad = cm_bad_transitions(&out);
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert_eq!(bad[0].origin, Origin::Wire);
    assert_eq!(bad[0].connection, Some(ConnId(1)));
    assert!(
        bad[0].message.starts_with(
            "CM DREP from the server (10.99.0.1) while the connection was established"
        ),
        "{}",
        bad[0].message
    );
    let c = engine.state().connections.values().next().unwrap();
    assert_eq!(c.cm_state, CmState::Closed);
    assert_eq!(
        engine.state().anomaly_counts.get(&Kind::CmBadTransition),
        Some(&1)
    );
}

/// An RTU ahead of its REP (reordered by the capture or sent too early):
/// reported once, and the connection is set up all the same.
#[test]
fn an_rtu_before_its_rep_is_a_bad_cm_transition() {
    let mut frames = capture_frames("v3-inline.pcap");
    let rep = frames
        .iter()
        .position(|f| cm_message(f) == Some("REP"))
        .unwrap();
    let rtu = frames
        .iter()
        .position(|f| cm_message(f) == Some("RTU"))
        .unwrap();
    frames.swap(rep, rtu);
    let (engine, out) = replay(&frames, Config::default());
    let bad = cm_bad_transitions(&out);
    // The late REP then finds the connection established, where a REP
    // sent again is allowed.
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(
        bad[0]
            .message
            .starts_with("CM RTU from the client (10.99.0.2) while the connection was requested"),
        "{}",
        bad[0].message
    );
    let c = engine.state().connections.values().next().unwrap();
    assert_eq!(c.cm_state, CmState::Closed);
    assert!(
        c.negotiated.is_some(),
        "the REP still set up the connection"
    );
}

/// What a snapshot keeps of a connection: identity, the CM exchange, what
/// was negotiated, the credit picture and the counters.
#[derive(serde::Serialize)]
struct ConnectionSummary {
    id: String,
    client: Option<String>,
    server: Option<String>,
    cm_state: &'static str,
    port: Option<u16>,
    cm_frames: Vec<u64>,
    negotiated: Option<NegotiatedSummary>,
    calls: u64,
    replies: u64,
    chunk_bytes: u64,
    remote_invalidations: u64,
    credits: CreditSummary,
    anomalies: u64,
    /// Non-empty latency buckets: log2 of µs -> replies.
    latency_log2_us: BTreeMap<usize, u64>,
}

/// What the CM private data negotiated, seen from the client.
#[derive(serde::Serialize)]
struct NegotiatedSummary {
    inline_send: u32,
    inline_recv: u32,
    remote_invalidation: bool,
}

#[derive(serde::Serialize)]
struct CreditSummary {
    requested: Option<u32>,
    granted: Option<u32>,
    granted_min: Option<u32>,
    granted_max: Option<u32>,
    in_flight: u32,
    peak_in_flight: u32,
    at_limit_ns: u64,
    points: usize,
}

/// A compact, deterministic account of `engine.state()`, its counters as
/// `report --json` writes them.
#[derive(serde::Serialize)]
struct StateSummary {
    totals: TotalsView,
    connections: Vec<ConnectionSummary>,
    anomaly_counts: BTreeMap<KindView, u64>,
    evictions: EvictionsView,
}

fn summary(engine: &Engine) -> StateSummary {
    let s = engine.state();
    let connections = s
        .connections
        .values()
        .map(|c| ConnectionSummary {
            id: c.id.to_string(),
            client: c.client.map(|q| q.to_string()),
            server: c.server.map(|q| q.to_string()),
            cm_state: c.cm_state.as_str(),
            port: c.port,
            cm_frames: c.cm_frames().collect(),
            negotiated: c.negotiated.map(|n| NegotiatedSummary {
                inline_send: n.inline_send,
                inline_recv: n.inline_recv,
                remote_invalidation: n.remote_invalidation,
            }),
            calls: c.calls,
            replies: c.replies,
            chunk_bytes: c.chunk_bytes,
            remote_invalidations: c.remote_invalidations,
            credits: CreditSummary {
                requested: c.requested,
                granted: c.granted,
                granted_min: c.granted_min,
                granted_max: c.granted_max,
                in_flight: c.in_flight,
                peak_in_flight: c.peak_in_flight,
                at_limit_ns: c.at_limit_ns,
                points: c.credit_series.len(),
            },
            anomalies: c.anomalies,
            latency_log2_us: c
                .latency_log2_us
                .iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(|(i, &n)| (i, n))
                .collect(),
        })
        .collect();
    StateSummary {
        totals: TotalsView::from(&s.totals),
        connections,
        anomaly_counts: s
            .anomaly_counts
            .iter()
            .map(|(k, n)| (KindView::from(*k), *n))
            .collect(),
        evictions: EvictionsView::from(&s.evictions),
    }
}

/// The engine's state after each bundled capture, against its reviewed
/// snapshot (`tests/snapshots/engine__state_*.snap`): any change in what
/// the engine makes of a capture shows here, field by field.
#[test]
fn state_of_every_bundled_capture() {
    let names = pcap::bundled_pcaps();
    assert!(names.len() >= 9, "{names:?}");
    for name in names {
        let (engine, _) = replay(&capture_frames(&name), Config::default());
        let snapshot = format!("state_{}", name.trim_end_matches(".pcap"));
        insta::assert_yaml_snapshot!(snapshot, summary(&engine));
    }
}

/// The engine's state after each iWARP capture (NFS over siw), against its
/// reviewed snapshot (`tests/snapshots/engine__state_iwarp-*.snap`).
#[test]
fn state_of_every_iwarp_capture() {
    for name in ["v3-ddp", "v42-reminv", "parallel", "reconnect"] {
        let (engine, _) = replay(
            &capture_frames(&format!("iwarp/{name}.pcap")),
            Config::default(),
        );
        insta::assert_yaml_snapshot!(format!("state_iwarp-{name}"), summary(&engine));
    }
}

/// A capture of iWARP that begins mid-connection (here `iwarp/v3-ddp.pcap`
/// from its frame 1001, inside the READs' Write traffic): no MPA exchange
/// and no SYN, so each direction's framing is found again in its stream
/// (by FPDU length and DDP/RDMAP headers: not certain, and counted so), and
/// from there the calls and replies are read as from the start. The
/// frames before framing was found are not counted as not decoded once it
/// is, and nothing is left there at the end.
#[test]
fn an_iwarp_capture_begun_mid_stream_is_framed_again() {
    let frames = capture_frames("iwarp/v3-ddp.pcap");
    let (engine, out) = replay(&frames[1000..], Config::default());
    let s = engine.state();
    let n = &s.totals.iwarp;
    assert_eq!(n.mpa_requests, 0);
    assert!(n.resyncs >= 2 && n.resyncs_uncertain == n.resyncs, "{n:?}");
    assert!(
        s.totals.not_decoded.is_empty(),
        "{:?}",
        s.totals.not_decoded
    );
    assert!(
        s.totals.calls >= 20 && s.totals.replies >= 20,
        "{:?}",
        s.totals
    );
    assert_eq!(s.connections.len(), 1);
    let c = s.connections.values().next().unwrap();
    assert_eq!(c.fabric(), Some("iWARP"));
    // No MPA exchange, so nothing negotiated is known; the FINs at the end
    // still close it.
    assert!(c.negotiated.is_none());
    assert!(c.cm_events.iter().all(|e| !e.message.requests()));
    assert_eq!(c.cm_state, CmState::Closed);
    let kinds = kinds(&out);
    assert!(
        !kinds.contains_key(&Kind::IwarpViolation) && !kinds.contains_key(&Kind::Malformed),
        "{kinds:?}"
    );
}

/// With views joined (live with probes), a capture's transactions still
/// all come out, once each, in the same order, each saying the wire saw it.
#[test]
fn joining_views_passes_the_wires_transactions_through() {
    let frames = capture_frames("v3-ddp.pcap");
    let txns = |out: Vec<Finding>| -> Vec<Transaction> {
        out.into_iter()
            .filter_map(|f| match f {
                Finding::Transaction(t) => Some(*t),
                Finding::Anomaly(_) => None,
            })
            .collect()
    };
    let (_, plain) = replay(&frames, Config::default());
    let (_, joined) = replay(
        &frames,
        Config {
            merge: Some(rdma_analyzer::engine::MergeConfig::default()),
            ..Config::default()
        },
    );
    let (plain, joined) = (txns(plain), txns(joined));
    assert!(!plain.is_empty());
    assert_eq!(plain.len(), joined.len());
    for (a, b) in plain.iter().zip(&joined) {
        assert_eq!((a.xid, a.call_frame), (b.xid, b.call_frame));
        assert_eq!(b.sources().collect::<Vec<_>>(), vec![Origin::Wire]);
    }
}

/// The transactions of `out` with XID `xid`.
fn txns_of(out: &[Finding], xid: u32) -> Vec<&Transaction> {
    out.iter()
        .filter_map(|f| match f {
            Finding::Transaction(t) if t.xid == xid => Some(&**t),
            _ => None,
        })
        .collect()
}

fn anomalies_of(out: &[Finding], kind: Kind) -> Vec<&Anomaly> {
    out.iter()
        .filter_map(|f| match f {
            Finding::Anomaly(a) if a.kind == kind => Some(&**a),
            _ => None,
        })
        .collect()
}

/// reconnect.pcap: xid 0xcb7cd736 sent in frame 230 on c1, c1 torn down
/// (DREQ/DREP), sent again in frame 244 on c2 and answered in frame 246.
const STALLED: u32 = 0xcb7c_d736;

#[test]
fn a_call_sent_again_after_a_reconnect_is_one_operation() {
    let (_, out) = replay(&capture_frames("reconnect.pcap"), Config::default());
    let t = txns_of(&out, STALLED);
    assert_eq!(t.len(), 1, "one operation");
    let t = t[0];
    assert_eq!(
        (t.first_call_frame, t.call_frame, t.reply_frame),
        (230, 244, Some(246))
    );
    assert_eq!(t.transmissions, 2);
    assert_eq!(t.earlier_connections.len(), 1);
    assert_ne!(t.earlier_connections[0], t.connection);
    let app = t.app_latency_us.expect("answered");
    let wire = t.latency_us.expect("answered");
    assert!((21.9e6..22.0e6).contains(&app), "{app}");
    assert!(wire < 100e3, "{wire}");
    assert!(anomalies_of(&out, Kind::CallWithoutReply).is_empty());
    let again = anomalies_of(&out, Kind::CallRetransmitted);
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].frames, [230, 244]);
}

#[test]
fn a_call_never_sent_again_is_unanswered_as_of_its_teardown() {
    // The capture without the reconnection: c1's DREP (frame 241) is the last.
    let frames: Vec<Frame> = capture_frames("reconnect.pcap")
        .into_iter()
        .filter(|f| f.number <= 241 && f.number != 238 && f.number != 240)
        .collect();
    let drep_ts = frames.last().unwrap().ts_ns;
    let (_, out) = replay(&frames, Config::default());
    let lost = anomalies_of(&out, Kind::CallWithoutReply);
    assert_eq!(lost.len(), 1, "{lost:?}");
    assert_eq!(lost[0].frames, [230]);
    assert_eq!(
        lost[0].ts_ns,
        Some(drep_ts),
        "dated when its connection gave it up"
    );
    assert!(lost[0].message.contains("DREQ/DREP"), "{}", lost[0].message);
    assert_eq!(txns_of(&out, STALLED)[0].transmissions, 1);
}

#[test]
fn parked_calls_stay_within_their_share_of_the_budget_and_their_time() {
    // A budget whose parked share holds no call: the call goes out
    // unanswered when parked, and its retransmission is a new operation.
    let tiny = Config {
        memory_limit: 16 << 10,
        ..Config::default()
    };
    let (engine, out) = replay(&capture_frames("reconnect.pcap"), tiny);
    assert!(engine.limits().parked_bytes < 1024);
    assert_eq!(anomalies_of(&out, Kind::CallWithoutReply).len(), 1);
    assert!(anomalies_of(&out, Kind::CallRetransmitted).is_empty());
    assert!(txns_of(&out, STALLED).iter().all(|t| t.transmissions == 1));
    // The reconnection 11 minutes later instead of 22 s: past the time a
    // parked call waits, so the old call is unanswered and the new one
    // its own operation.
    let frames: Vec<Frame> = capture_frames("reconnect.pcap")
        .into_iter()
        .map(|mut f| {
            if f.number >= 242 {
                f.ts_ns += 660_000_000_000;
            }
            f
        })
        .collect();
    let (_, out) = replay(&frames, Config::default());
    assert_eq!(anomalies_of(&out, Kind::CallWithoutReply).len(), 1);
    assert!(anomalies_of(&out, Kind::CallRetransmitted).is_empty());
}

/// `diag-rnr.pcap` (the lab's userspace peer posting its receive late):
/// each reply Send is RNR-NAKed (frames 8 and 19), then sent again after
/// the RNR timer (frames 9 and 20). Those resends retry what the NAK
/// refused; without the NAKs in the capture they are retransmissions.
#[test]
fn a_send_again_after_an_rnr_nak_is_a_retry_not_a_retransmission() {
    let frames = capture_frames("diag/diag-rnr.pcap");
    let (engine, out) = replay(&frames, Config::default());
    assert_eq!(engine.state().totals.retransmissions, 0);
    assert_eq!(kinds(&out).get(&Kind::Nak), Some(&2));
    assert!(anomalies_of(&out, Kind::Retransmission).is_empty());

    let without_naks: Vec<Frame> = frames
        .into_iter()
        .filter(|f| f.number != 8 && f.number != 19)
        .collect();
    let (engine, out) = replay(&without_naks, Config::default());
    assert_eq!(engine.state().totals.retransmissions, 2);
    let again = anomalies_of(&out, Kind::Retransmission);
    assert_eq!(again.len(), 2);
    assert_eq!(
        (again[0].frames.clone(), again[1].frames.clone()),
        (vec![9], vec![20])
    );
}
