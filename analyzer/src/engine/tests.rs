//! Engine scenario tests: real captures replayed, and hostile input built
//! with the dissectors' emitters (through the synth generator's `Wire`) to
//! prove the tables stay within their caps and say so.

use std::net::Ipv4Addr;
use std::path::Path;

use rdma_dissectors::ib::bth::{Bth, Opcode};
use rdma_dissectors::ib::Transport;
use rdma_dissectors::oncrpc::{AuthFlavor, Call, MsgBody, OpaqueAuth, RpcMsg};
use rdma_dissectors::rpcrdma::{Body, Chunks, Proc, RpcRdmaHeader, Xid};

use super::*;
use crate::sources::pcap::PcapReader;
use crate::synth::wire::{Node, Wire};

fn run(bytes: &[u8], config: Config) -> (Engine, Vec<Finding>) {
    let mut reader = PcapReader::new(bytes, "test.pcap".into()).unwrap();
    let mut out = Vec::new();
    let outcome = crate::analyze::run_reader(&mut reader, config, &mut |f| out.push(f)).unwrap();
    assert!(outcome.error.is_none());
    (outcome.engine, out)
}

fn capture(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../captures")
            .join(name),
    )
    .unwrap()
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
    let (engine, out) = run(&capture("v3-inline.pcap"), Config::default());
    let s = engine.state();
    assert_eq!(s.connections.len(), 1);
    let c = s.connections.values().next().unwrap();
    assert_eq!(c.cm_state, CmState::Closed);
    assert_eq!(c.port, Some(20049));
    let n = c.negotiated.unwrap();
    // Linux client R set, server R clear; 4 KiB both ways (LAB_NOTES).
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
    let (_, out) = run(&capture("v3-ddp.pcap"), Config::default());
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
            .any(|s| s.what.to_string().starts_with("RDMA READ request")));
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
    let cut = &bytes[..bytes.len() / 2 + 7];
    let mut reader = PcapReader::new(cut, "cut.pcap".into()).unwrap();
    let mut n = 0;
    let mut engine = Engine::new(Config::default());
    let mut out = Vec::new();
    let err = loop {
        match reader.next_packet() {
            Ok(Some(p)) => {
                n += 1;
                engine.handle(
                    Event::Frame {
                        number: p.number,
                        ts_ns: p.ts_ns,
                        link: p.link_type,
                        orig_len: p.orig_len,
                        data: p.data,
                    },
                    &mut out,
                );
            }
            Ok(None) => panic!("a cut file must not end cleanly"),
            Err(e) => break e,
        }
    };
    assert!(n > 1000);
    assert_eq!(err.frame, Some(n + 1));
    assert!(err.to_string().contains("cut.pcap: frame"), "{err}");
    engine.handle(Event::End, &mut out);
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

/// An acknowledged RC packet header (the synth generator's builder).
fn bth(opcode: Opcode, qpn: u32, psn: u32) -> Bth {
    crate::synth::gen::bth(opcode, qpn, psn, true)
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
    assert!(engine.qps.len() <= 512, "{}", engine.qps.len());
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

/// Every frame of `frames` through an engine, then the end; the findings
/// and the final state, as text.
fn replay(frames: &[(u64, u64, LinkType, u32, Vec<u8>)], defer: bool) -> (String, String) {
    let mut engine = Engine::new(Config::default());
    engine.defer_middles = defer;
    let mut out = Vec::new();
    for (number, ts_ns, link, orig_len, data) in frames {
        engine.handle(
            Event::Frame {
                number: *number,
                ts_ns: *ts_ns,
                link: *link,
                orig_len: *orig_len,
                data,
            },
            &mut out,
        );
    }
    engine.handle(Event::End, &mut out);
    (format!("{out:#?}"), format!("{:#?}", engine.state()))
}

/// Deferring the Middle packets of Writes and Read Responses (`rdma::DeferredMiddle`)
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
        let bytes = capture(name);
        let mut reader = PcapReader::new(&bytes[..], name.into()).unwrap();
        let mut frames = Vec::new();
        while let Some(p) = reader.next_packet().unwrap() {
            frames.push((p.number, p.ts_ns, p.link_type, p.orig_len, p.data.to_vec()));
        }
        middles += frames
            .iter()
            .filter(|f| {
                let d = stack::dissect(f.2, &f.4, &stack::Config::default());
                super::wire::rdma::continues_transfer(&d)
            })
            .count();
        assert_eq!(replay(&frames, true), replay(&frames, false), "{name}");
        let mut rng = crate::synth::prng::SplitMix64::new(0x5eed ^ frames.len() as u64);
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
                replay(&damaged, true),
                replay(&damaged, false),
                "{name}, damaged copy {round}"
            );
        }
    }
    assert!(
        middles > 1000,
        "the captures hold only {middles} Middle packets"
    );
}
