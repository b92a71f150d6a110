//! Each rule on the bundled lab captures: as they are (the clean ones give
//! nothing), and with the one fact the rule reads changed in the engine's
//! real findings (a slower server, rejected replies, ...), so that each
//! rule is tested at its threshold on real transactions.

use std::path::PathBuf;

use super::{CauseName, Diagnosis, Log2, Peer};
use crate::engine::{Config, ConnId, Engine, Finding, State};
use crate::pipeline::Flow;
use crate::test_support::capture_source;

fn capture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("captures")
        .join(name)
}

/// The engine's findings and final state on a bundled capture.
pub(super) fn findings(name: &str) -> (Vec<Finding>, State) {
    let config = Config::default();
    let mut source = capture_source(&capture(name), &config.stack);
    let mut engine = Engine::new(config);
    let mut out = Vec::new();
    while source
        .pump(&mut |ev| {
            engine.handle(ev, &mut out);
            Flow::Continue
        })
        .is_none()
    {}
    engine.finish(&mut |f| out.push(f));
    (out, engine.state().clone())
}

fn diagnose(found: &[Finding], state: &State) -> Vec<super::Cause> {
    let mut d = Diagnosis::default();
    found.iter().for_each(|f| d.add(f));
    d.causes(state)
}

#[test]
fn the_clean_lab_captures_get_no_cause() {
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
        let (f, s) = findings(name);
        let causes = diagnose(&f, &s);
        assert!(causes.is_empty(), "{name}: {causes:#?}");
    }
}

#[test]
fn reconnect_leads_with_the_stall_of_its_retransmitted_call() {
    let (f, s) = findings("reconnect.pcap");
    let mut d = Diagnosis::default();
    f.iter().for_each(|x| d.add(x));
    // 37 transmissions on the wire, 36 operations: one was sent twice.
    assert_eq!((d.operations(), d.transmissions()), (36, 37));
    let causes = d.causes(&s);
    let first = &causes[0];
    assert_eq!(first.cause, CauseName::ReconnectStall, "{causes:#?}");
    assert_eq!(first.evidence.xids, ["0xcb7cd736"]);
    assert_eq!(first.evidence.connections, ["c1", "c2"]);
    assert_eq!(first.evidence.frames[..2], [230, 244]);
    let lost = first.impact.time_ms.expect("time lost");
    assert!((21_800.0..22_000.0).contains(&lost), "{lost}");
    assert_eq!(first.peer, Peer::Fabric);
    // The QP's retransmissions before the teardown are the loss behind it.
    assert!(causes.iter().any(|c| c.cause == CauseName::NetworkLoss));
    let from = first.evidence.from_s.expect("start");
    assert!((5.2..5.4).contains(&from), "{from}");
}

#[test]
fn a_slow_server_is_named_at_its_threshold_only() {
    let (f, s) = findings("v3-ddp.pcap");
    // Every reply later by a fixed delay: the server held each call longer.
    let slower = |delay: u64| -> Vec<Finding> {
        f.iter()
            .cloned()
            .map(|mut x| {
                if let Finding::Transaction(t) = &mut x {
                    t.reply_ts_ns = t.reply_ts_ns.map(|r| r + delay);
                }
                x
            })
            .collect()
    };
    let named = |found: &[Finding]| {
        diagnose(found, &s)
            .iter()
            .any(|c| c.cause == CauseName::ServerTime)
    };
    assert!(!named(&slower(10_000_000)));
    let causes = diagnose(&slower(300_000_000), &s);
    assert_eq!(causes[0].cause, CauseName::ServerTime, "{causes:#?}");
    assert_eq!(causes[0].peer, Peer::Server);
    assert!(causes[0].impact.share_of_time.unwrap() > 0.9);
}

#[test]
fn rejected_replies_are_rpc_errors_with_their_status() {
    let (mut f, s) = findings("v3-inline.pcap");
    let mut n = 0;
    for x in &mut f {
        if let Finding::Transaction(t) = x {
            if t.procedure.as_deref() == Some("GETATTR") && n < 3 {
                t.reply_status = Some("SYSTEM_ERR".into());
                n += 1;
            }
        }
    }
    let causes = diagnose(&f, &s);
    assert_eq!(causes.len(), 1, "{causes:#?}");
    assert_eq!(causes[0].cause, CauseName::RpcErrors);
    assert_eq!(causes[0].impact.rpcs_affected, Some(3));
    assert!(causes[0].impact.measured.contains("3 SYSTEM_ERR"));
}

#[test]
fn reply_chunks_are_named_only_past_a_quarter_of_the_rpcs() {
    let (f, s) = findings("v42-ddp.pcap");
    let base = diagnose(&f, &s);
    assert!(base.is_empty(), "{base:#?}");
    // The same RPCs, each counted as often as needed: the share, not the
    // count, is what the rule weighs.
    let chunked: Vec<Finding> = f
        .iter()
        .filter(|x| {
            matches!(x, Finding::Transaction(t)
                if t.reply_transfer == crate::engine::Transfer::ReplyChunk)
        })
        .cloned()
        .collect();
    let mut more = f.clone();
    for _ in 0..6 {
        more.extend(chunked.iter().cloned());
    }
    let causes = diagnose(&more, &s);
    assert_eq!(
        causes[0].cause,
        CauseName::ReplyChunksInlineThreshold,
        "{causes:#?}"
    );
    assert!(causes[0].advice.contains("rdma_max_inline_read"));
}

#[test]
fn an_unanswered_call_on_a_live_connection_is_an_unresponsive_server() {
    let (mut f, mut s) = findings("v3-inline.pcap");
    // The last call's reply never came, and the connection stayed up.
    let last = f
        .iter_mut()
        .filter_map(|x| match x {
            Finding::Transaction(t) => Some(t),
            Finding::Anomaly(_) => None,
        })
        .max_by_key(|t| t.call_ts_ns)
        .expect("a transaction");
    last.reply_frame = None;
    last.reply_ts_ns = None;
    let call = last.call_ts_ns;
    for c in s.connections.values_mut() {
        c.cm_state = crate::engine::CmState::Established;
    }
    s.totals.last_ts_ns = Some(call + 500_000_000);
    assert!(diagnose(&f, &s).is_empty());
    s.totals.last_ts_ns = Some(call + 5_000_000_000);
    let causes = diagnose(&f, &s);
    assert_eq!(
        causes[0].cause,
        CauseName::ServerUnresponsive,
        "{causes:#?}"
    );
    assert_eq!(causes[0].impact.rpcs_affected, Some(1));
}

#[test]
fn a_full_credit_window_names_the_side_that_limits() {
    let (f, mut s) = findings("parallel.pcap");
    assert!(diagnose(&f, &s).is_empty());
    // The same connection, full for a fifth of its life.
    let c = s.connections.values_mut().next().expect("a connection");
    c.at_limit_ns = (c.last_ts_ns - c.first_ts_ns) / 5;
    let causes = diagnose(&f, &s);
    assert_eq!(causes[0].cause, CauseName::CreditWindowFull, "{causes:#?}");
    // The client asked for 128, the server granted 16.
    assert_eq!(causes[0].peer, Peer::Server);
    assert!(causes[0].advice.contains("svc_rdma/max_requests"));
}

#[test]
fn routine_nfs_errors_are_not_a_cause() {
    use super::rules::nfs_error;
    // The bundled captures' LOOKUPs of absent names are NFS3ERR_NOENT and
    // NFS4ERR_NOENT, and give no cause (the_clean_lab_captures_get_no_cause).
    for s in [
        "NFS3_OK",
        "NFS4_OK",
        "NFS3ERR_NOENT",
        "NFS4ERR_EXIST",
        "NFS4ERR_DENIED",
    ] {
        assert!(!nfs_error(s), "{s}");
    }
    for s in [
        "NFS3ERR_JUKEBOX",
        "NFS4ERR_DELAY",
        "NFS3ERR_STALE",
        "NFS4ERR_GRACE",
        "NFS4ERR_SERVERFAULT",
        "nfsstat4 99999",
    ] {
        assert!(nfs_error(s), "{s}");
    }
}

#[test]
fn nfs_errors_are_counted_per_status_and_operation() {
    let (mut f, s) = findings("v3-inline.pcap");
    let (mut jukebox, mut stale, mut acces) = (0, 0, 0);
    for x in &mut f {
        if let Finding::Transaction(t) = x {
            match t.procedure.as_deref() {
                Some("GETATTR") if jukebox < 3 => {
                    t.nfs_status = Some("NFS3ERR_JUKEBOX".into());
                    jukebox += 1;
                }
                Some("GETATTR") if stale < 1 => {
                    t.nfs_status = Some("NFS3ERR_STALE".into());
                    stale += 1;
                }
                Some("ACCESS") => {
                    // Routine: not counted, whatever the number.
                    t.nfs_status = Some("NFS3ERR_ACCES".into());
                    acces += 1;
                }
                _ => {}
            }
        }
    }
    assert!(acces > 0);
    let causes = diagnose(&f, &s);
    assert_eq!(causes.len(), 1, "{causes:#?}");
    let c = &causes[0];
    assert_eq!(c.cause, CauseName::NfsErrors);
    assert_eq!(c.impact.rpcs_affected, Some(4));
    assert!(
        c.impact
            .measured
            .contains("3 NFS3ERR_JUKEBOX in GETATTR, 1 NFS3ERR_STALE in GETATTR"),
        "{}",
        c.impact.measured
    );
    // The most frequent status picks the peer and leads the advice.
    assert_eq!(c.peer, Peer::Server);
    assert!(c.advice.starts_with("DELAY/JUKEBOX"), "{}", c.advice);
    assert!(c.advice.contains("STALE/BADHANDLE"), "{}", c.advice);
    assert_eq!(c.evidence.xids.len(), 4);
    assert_eq!(c.evidence.frames.len(), 4);
    assert!(c.evidence.examples[0].contains("answered NFS3ERR_JUKEBOX (frame "));
}

#[test]
fn nfs4_errors_name_the_failing_operation() {
    let (mut f, s) = findings("v42-inline.pcap");
    let mut n = 0;
    for x in &mut f {
        if let Finding::Transaction(t) = x {
            if t.nfs_status.as_deref() == Some("NFS4_OK") && n < 2 {
                t.nfs_status = Some("NFS4ERR_BAD_STATEID".into());
                t.nfs_failed_op = Some("SEQUENCE".into());
                n += 1;
            }
        }
    }
    let causes = diagnose(&f, &s);
    assert_eq!(causes[0].cause, CauseName::NfsErrors, "{causes:#?}");
    assert!(causes[0]
        .impact
        .measured
        .contains("2 NFS4ERR_BAD_STATEID in SEQUENCE"));
    // A state error is the client's lease or session.
    assert_eq!(causes[0].peer, Peer::Client);
}

#[test]
fn congestion_is_named_at_the_first_mark() {
    let (mut f, mut s) = findings("v3-ddp.pcap");
    assert!(diagnose(&f, &s).is_empty());
    // One CE mark on the connection, two RPCs in flight while it came.
    let c = s.connections.values_mut().next().expect("a connection");
    let (id, at) = (c.id, c.first_ts_ns + 1_000);
    c.congestion.ecn_ce = 1;
    c.congestion.first_ts_ns = Some(at);
    c.congestion.last_ts_ns = Some(at);
    c.congestion.frames = vec![42];
    let mut n = 0;
    for x in &mut f {
        if let Finding::Transaction(t) = x {
            if n < 2 {
                t.congested = true;
                n += 1;
            }
        }
    }
    let causes = diagnose(&f, &s);
    assert_eq!(causes.len(), 1, "{causes:#?}");
    let c = &causes[0];
    assert_eq!(c.cause, CauseName::Congestion);
    assert_eq!(c.peer, Peer::Fabric);
    assert_eq!(c.impact.rpcs_affected, Some(2));
    assert!(
        c.impact.measured.contains("1 ECN CE marks, 0 CNPs"),
        "{}",
        c.impact.measured
    );
    assert_eq!(c.evidence.connections, [id.to_string()]);
    assert_eq!(c.evidence.frames, [42]);
    assert_eq!(c.evidence.xids.len(), 2);
    assert!(c.evidence.from_s.is_some_and(|f| f > 0.0));
    assert!(c.advice.contains("DCQCN"));
}

/// More marked iWARP connections than the evidence keeps examples of: the
/// count is of every marked connection, and no BTH-only count (CNPs,
/// FECN, BECN) is printed, since iWARP has none.
#[test]
fn congestion_on_many_iwarp_connections_counts_them_all_and_names_no_bth_signal() {
    let (mut f, mut s) = findings("iwarp/v3-ddp.pcap");
    let base = s.connections.values().next().expect("a connection").clone();
    assert!(base.is_iwarp());
    s.connections.clear();
    for i in 1..=7u32 {
        let mut c = base.clone();
        c.id = ConnId(i);
        let at = c.first_ts_ns + 1_000;
        c.congestion.ecn_ce = 1;
        c.congestion.first_ts_ns = Some(at);
        c.congestion.last_ts_ns = Some(at);
        c.congestion.frames = vec![u64::from(i)];
        s.connections.insert(c.id, c);
    }
    for x in &mut f {
        if let Finding::Transaction(t) = x {
            t.congested = true;
            break;
        }
    }
    let causes = diagnose(&f, &s);
    let c = causes
        .iter()
        .find(|c| c.cause == CauseName::Congestion)
        .expect("congestion named");
    let m = &c.impact.measured;
    assert!(
        m.contains("congestion on 7 connection(s): 7 ECN CE marks;"),
        "{m}"
    );
    assert!(!m.contains("CNPs") && !m.contains("FECN"), "{m}");
}

/// Calls retried after JUKEBOX: the waits before the retries are time
/// lost, counted in the measure and as the impact's share of time (of the
/// RPCs' time and those waits together).
#[test]
fn retries_after_jukebox_count_their_wait() {
    let (mut f, s) = findings("v3-inline.pcap");
    let mut app_ns = 0u64;
    let (mut errors, mut retries) = (0, 0);
    for x in &mut f {
        let Finding::Transaction(t) = x else { continue };
        if let Some(r) = t.reply_ts_ns {
            app_ns += r - t.first_call_ts_ns;
        }
        match t.procedure.as_deref() {
            Some("GETATTR") if errors < 2 => {
                t.nfs_status = Some("NFS3ERR_JUKEBOX".into());
                errors += 1;
            }
            Some("ACCESS") if retries < 2 => {
                // Two retries, 5 s after their errors each (NFSv3's wait).
                t.retry_of_xid = Some(0x1234_0000 + retries);
                t.retry_wait_us = Some(5_000_000.0);
                retries += 1;
            }
            _ => {}
        }
    }
    assert_eq!((errors, retries), (2, 2));
    let causes = diagnose(&f, &s);
    let c = &causes[0];
    assert_eq!(c.cause, CauseName::NfsErrors, "{causes:#?}");
    assert!(
        c.impact
            .measured
            .contains("2 retries after DELAY/JUKEBOX, waited 10.000 s in total before them"),
        "{}",
        c.impact.measured
    );
    assert_eq!(c.impact.time_ms, Some(10_000.0));
    let want = 10e9 / (10e9 + app_ns as f64);
    let got = c.impact.share_of_time.unwrap();
    assert!((got - want).abs() < 1e-9, "{got} vs {want}");
    assert_eq!(c.impact.score, got);
    assert!(c
        .evidence
        .examples
        .iter()
        .any(|e| e.contains("retried xid 0x12340000 after 5.000 s")));
}

/// The median bucket's low bound, as the 32 power-of-two counters gave it
/// before `Log2` was a `LogLinear<1>`.
fn median_low_as_before(samples: &[u64]) -> Option<u64> {
    let mut buckets = [0u64; 32];
    for &ns in samples {
        buckets[((64 - ns.leading_zeros()) as usize).min(31)] += 1;
    }
    let rank = (samples.len() as u64).div_ceil(2);
    let mut seen = 0;
    for (i, n) in buckets.iter().enumerate() {
        seen += n;
        if seen >= rank && *n > 0 {
            return Some(if i == 0 { 0 } else { 1u64 << (i - 1) });
        }
    }
    None
}

#[test]
fn server_median_buckets_are_as_before() {
    let cases: [&[u64]; 7] = [
        &[],
        &[0],
        &[0, 1, 2],
        &[999, 1_000, 1_001, 70_000],
        &[1 << 29, 1 << 30, (1 << 30) + 5],
        &[u64::MAX, 1 << 40, 3 << 31],
        &[5, 5, 5, 9_000_000_000, 9_000_000_000, 9_000_000_000],
    ];
    for samples in cases {
        let mut h = Log2::default();
        for &ns in samples {
            h.record(ns);
        }
        assert_eq!(
            h.median_low_ns(),
            median_low_as_before(samples),
            "{samples:?}"
        );
    }
}
