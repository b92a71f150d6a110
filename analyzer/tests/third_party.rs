//! The engine on captures made by other people on other stacks and
//! sniffers (`../shared/external-captures/`, read in place; see its
//! README for where each comes from): native InfiniBand, QPs set up
//! without CM, connections that do not carry RPC-over-RDMA, an emulator's
//! own protocol errors, and a capture with no RDMA at all.

#[path = "common/analyze.rs"]
mod analyze;
#[path = "common/external.rs"]
mod external;

use std::collections::BTreeMap;

use rdma_analyzer::engine::{Carries, CmState, Config, Finding, State};

/// The engine's state and the anomalies (kind -> frames) of one capture.
fn run(name: &str) -> Option<(State, BTreeMap<String, Vec<u64>>)> {
    let path = external::capture(name)?;
    let mut anomalies: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let run = analyze::run_file(&path, Config::default(), |f| {
        if let Finding::Anomaly(a) = f {
            anomalies
                .entry(a.kind.as_str().to_string())
                .or_default()
                .extend(&a.frames);
        }
    })
    .expect("the capture opens");
    assert!(run.error().is_none(), "{name}: {:?}", run.error());
    Some((run.engine.state().clone(), anomalies))
}

/// ibdump's frames as DLT 247: the three IB CM exchanges (IPoIB connected
/// mode) are three connections between LIDs, their RC Sends and ACKs
/// follow the PSNs the CM exchange announced, and IPoIB is not taken for
/// RPC-over-RDMA.
#[test]
fn native_infiniband_cm_exchanges_are_connections() {
    let Some((s, anomalies)) = run("infiniband.dlt247.pcap") else {
        return;
    };
    assert_eq!(s.totals.frames, 43);
    assert_eq!(s.totals.cm_messages, 9, "three REQ/REP/RTU exchanges");
    let conns: Vec<String> = s.connections.values().map(|c| c.label()).collect();
    assert_eq!(
        conns,
        [
            "lid:4/0x870408 <-> lid:1/0xfc0407",
            "lid:2/0x6c004a <-> lid:4/0x890407",
            "lid:4/0x890408 <-> lid:2/0x6c004b",
        ]
    );
    for c in s.connections.values() {
        assert_eq!(c.fabric(), Some("InfiniBand"));
        assert_eq!(c.cm_state, CmState::Established);
        assert_eq!(c.carries, Some(Carries::Other), "{}", c.id);
    }
    assert_eq!((s.totals.psn_gaps, s.totals.retransmissions), (0, 0));
    assert_eq!(s.totals.icrc_valid, 43);
    assert!(anomalies.is_empty(), "{anomalies:?}");
}

/// RoCEv2 between hardware RNICs whose QPs were exchanged over TCP: no CM
/// at all, so the pair is found from the ACKs that answer the Sends.
#[test]
fn queue_pairs_set_up_without_cm_are_paired_from_their_acks() {
    let Some((s, anomalies)) = run("roce.pcap") else {
        return;
    };
    let conns: Vec<_> = s.connections.values().collect();
    assert_eq!(conns.len(), 1, "{conns:?}");
    let c = conns[0];
    assert_eq!(c.label(), "192.168.70.4/0x45 <-> 192.168.70.6/0x48");
    assert_eq!(c.cm_state, CmState::NotSeen);
    assert_eq!(c.carries, Some(Carries::Other));
    assert_eq!(c.fabric(), Some("RoCEv2"));
    // Every RDMA frame but the first request (sent before any ACK could
    // pair its QP) belongs to the connection.
    assert_eq!(s.totals.rdma_frames, 105);
    assert!(
        s.totals.unassociated_frames <= 2,
        "{}",
        s.totals.unassociated_frames
    );
    assert!(anomalies.is_empty(), "{anomalies:?}");
}

/// rping (RDMA-CM port 7174, no RFC 8797 private data) between soft-RoCE
/// peers: a connection, said not to carry RPC-over-RDMA, so no credits or
/// inline thresholds are made up for it; and the path MTU from the REQ.
#[test]
fn rping_is_a_connection_that_carries_something_else() {
    let Some((s, anomalies)) = run("FirstSuccesfullRping.pcapng") else {
        return;
    };
    let c = s.connections.values().next().expect("one connection");
    assert_eq!(s.connections.len(), 1);
    assert_eq!(c.port, Some(7174));
    assert_eq!(c.carries, Some(Carries::Other));
    assert!(!c.is_rpcrdma());
    assert_eq!(c.path_mtu, Some(1024));
    assert!(anomalies.is_empty(), "{anomalies:?}");
}

/// The user-space RoCE responder of sanderw71/SoftRoce gets RDMA READ
/// PSNs wrong, and rxe answers it with an ACK for a PSN nobody sent.
/// Worked out from the bytes and the rules:
///
/// - `Roce_PacketSize_2400_stall.pcapng`: frame 143 is the emulator's RDMA
///   READ request, PSN 0x7243ff, DMA length 2400; the CM REQ (frame 138)
///   set the path MTU to 1024 (code 3), so the READ takes
///   ceil(2400 / 1024) = 3 PSNs, 0x7243ff..0x724401 (its three responses,
///   frames 144-146, carry exactly those). The emulator's next request,
///   the SEND of frame 147, must then be 0x724402 (IBA 9.7.1), and is
///   0x724401. rxe takes it for a duplicate and answers in frame 148 with
///   an ACK for PSN 0xffffff: the emulator's requests start at 0x7243ff
///   (the REP's Starting PSN, frame 139), so no request had 0xffffff.
/// - `rping_3072_faillire.pcapng`: the same with 3072 bytes (3 PSNs from
///   0x43d6e6; the SEND of frame 70 reuses 0x43d6e8; frame 71 ACKs 0xffffff).
///
/// The other captures of the same emulator and of rxe alone break neither
/// rule.
#[test]
fn the_emulator_s_read_psn_errors_are_found_where_the_rules_put_them() {
    let expect = [
        ("Roce_PacketSize_2400_stall.pcapng", 147, 148),
        ("rping_3072_faillire.pcapng", 70, 71),
    ];
    for (name, reused, ack) in expect {
        let Some((_, anomalies)) = run(name) else {
            return;
        };
        assert_eq!(
            anomalies.get("read_span_psn_reused"),
            Some(&vec![reused]),
            "{name}: {anomalies:?}"
        );
        assert_eq!(
            anomalies.get("ack_psn_not_sent"),
            Some(&vec![ack]),
            "{name}: {anomalies:?}"
        );
    }
    for name in [
        "FirstSuccesfullRping.pcapng",
        "Frame_req_and_response.pcapng",
        "Frame_req_and_response_5000_bytes.pcapng",
        "Frame_req_and_response_htons_bytes.pcapng",
        "RoCE_capture_10_packets.pcapng",
        "RoCE_capture_1_packet_1.pcapng",
        "Roce_PacketSize_1400.pcapng",
        "Roce_PacketSize_5000_bytes.pcapng",
        "capture_S10000_C1.pcapng",
    ] {
        let Some((_, anomalies)) = run(name) else {
            return;
        };
        assert!(
            !anomalies.contains_key("read_span_psn_reused")
                && !anomalies.contains_key("ack_psn_not_sent"),
            "{name}: {anomalies:?}"
        );
    }
}

/// The negative control: SSH, TLS and DNS. Every frame is looked at and
/// none is RDMA: no connection, no anomaly.
#[test]
fn a_capture_without_rdma_gives_nothing_and_says_it_looked() {
    let Some((s, anomalies)) = run("rdma_traffic_capture.pcap") else {
        return;
    };
    assert_eq!(s.totals.frames, 184);
    assert_eq!(s.totals.rdma_frames, 0);
    assert!(s.connections.is_empty());
    assert!(anomalies.is_empty(), "{anomalies:?}");
}
