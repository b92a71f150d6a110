use super::*;
use crate::engine::mountstats::{parse, OpStats};

fn mount(text: &str) -> Mount {
    parse(text).unwrap().remove(0)
}

#[test]
fn the_server_is_addr_or_the_devices_host() {
    let with_addr =
        mount("device srv:/e mounted on /m with fstype nfs\n\topts:\trw,addr=10.0.0.9\n");
    assert_eq!(server_of(&with_addr).as_deref(), Some("10.0.0.9"));
    let v4 = mount("device 10.99.0.1:/srv/export mounted on /m with fstype nfs\n");
    assert_eq!(server_of(&v4).as_deref(), Some("10.99.0.1"));
    let v6 = mount("device [fe80::1]:/e mounted on /m with fstype nfs4\n");
    assert_eq!(server_of(&v6).as_deref(), Some("fe80::1"));
    let name = mount("device filer:/e mounted on /m with fstype nfs\n");
    assert_eq!(
        server_of(&name),
        None,
        "a name cannot be matched to an address"
    );
}

#[test]
fn a_field_this_kernel_does_not_print_is_not_a_disagreement() {
    let r = row("reply_waits_for_send".into(), None, 3);
    assert_eq!(r.verdict, "not printed by this kernel");
    assert_eq!(row("sends".into(), Some(3), 3).verdict, "agree");
    assert_eq!(row("sends".into(), Some(3), 4).verdict, "differ");
}

#[test]
fn a_delta_subtracts_the_earlier_snapshot_per_field() {
    let after = mount("device s:/e mounted on /m with fstype nfs\n\txprt:\trdma 0 0 1 0 0 10 10 0 10 0 1 2 3 0 0 0 0 0 0 0 0 0 0 11 0 0 0\n");
    let before = mount("device s:/e mounted on /m with fstype nfs\n\txprt:\trdma 0 0 1 0 0 4 4 0 4 0 1 0 0 0 0 0 0 0 0 0 0 0 0 11 0 0 0\n");
    let (a, b) = (rdma_transports(&after), rdma_transports(&before));
    assert_eq!(kernel_field(&a, &b, "sends"), Some(6));
    assert_eq!(kernel_field(&a, &b, "write_chunk_count"), Some(2));
    assert_eq!(kernel_field(&a, &[], "sends"), Some(10));
}

/// Linux 6.12 in the lab ran out of MRs once on v3-ddp
/// (`xprtrdma_nomrs_err`): one call failed to marshal after its first read
/// segment was counted, so the kernel's read_chunk_count was 17 against 16
/// segments sent. The note names the cause only when the kernel says it
/// failed to marshal.
#[test]
fn segments_of_a_failed_marshal_are_explained() {
    let rows = vec![
        row("read_chunk_count".into(), Some(17), 16),
        row("write_chunk_count".into(), Some(24), 24),
    ];
    let note = failed_marshal(&rows, 1).expect("a note");
    assert!(
        note.contains("failed to marshal 1 call(s)") && note.contains("1 segment(s)"),
        "{note}"
    );
    assert_eq!(failed_marshal(&rows, 0), None);
    let agree = vec![row("read_chunk_count".into(), Some(16), 16)];
    assert_eq!(failed_marshal(&agree, 1), None);
}

fn one(xprts: &[&str]) -> Vec<Mount> {
    let mut text = String::from(
        "device 10.99.0.1:/srv/export mounted on /m with fstype nfs statvers=1.1\n\topts:\trw,vers=3,proto=rdma,nconnect=2\n",
    );
    for x in xprts {
        text.push_str(&format!("\txprt:\trdma {x}\n"));
    }
    parse(&text).unwrap()
}

#[test]
fn the_kernel_view_is_the_window_of_every_transport() {
    // Two transports (nconnect): the second refilled its MR pool (11 more
    // without a reconnect), the first reconnected (its 11 more are a connect's).
    let before = one(&[
        "0 0 1 0 0 10 10 0 10 0 4 4 0 0 0 0 0 0 0 0 0 0 0 11 2 0 0",
        "0 0 1 0 0 10 10 0 10 0 4 4 0 0 0 0 0 0 0 0 0 0 0 11 2 0 0",
    ]);
    let after = one(&[
        "0 0 2 0 0 20 20 0 20 0 8 8 1 0 0 0 0 0 0 0 0 0 0 22 5 0 0",
        "0 0 1 0 0 30 30 0 30 0 9 9 0 0 0 0 0 0 0 0 0 0 1 22 12 0 0",
    ]);
    let v = kernel_view(&after, &before);
    assert!(!v.since_mount);
    assert_eq!(v.transports, 2);
    assert_eq!(v.local_inv_needed, Some(3 + 10));
    assert_eq!(v.chunk_segments, Some((4 + 4 + 1) + (5 + 5)));
    assert_eq!(v.mrs_allocated, Some(22));
    assert_eq!(v.mrs_orphaned, Some(1));
    assert_eq!(v.refilled_transports, Some(1));
    assert_eq!(v.reset_transports, 0);
    assert_eq!(v.mounts, ["10.99.0.1:/srv/export on /m"]);
}

#[test]
fn without_before_the_counters_run_from_the_mount_and_refills_are_unknown() {
    let after = one(&["0 0 1 0 0 20 20 0 20 0 8 8 1 0 0 0 0 0 0 0 0 0 0 22 5 0 0"]);
    let v = kernel_view(&after, &[]);
    assert!(v.since_mount);
    assert_eq!(v.local_inv_needed, Some(5));
    assert_eq!(v.mrs_allocated, Some(22));
    assert_eq!(
        v.refilled_transports, None,
        "since mount, a connect's allocation and a refill look alike"
    );
}

#[test]
fn a_remount_between_the_snapshots_is_left_out_not_a_negative_delta() {
    let before = one(&["0 0 1 0 0 90 90 0 90 0 8 8 1 0 0 0 0 0 0 0 0 0 0 22 50 0 0"]);
    let after = one(&["0 0 1 0 0 20 20 0 20 0 8 8 1 0 0 0 0 0 0 0 0 0 0 11 5 0 0"]);
    let v = kernel_view(&after, &before);
    assert_eq!(v.reset_transports, 1);
    assert_eq!(v.transports, 0);
    assert_eq!(v.local_inv_needed, None, "no transport's window is known");
}

#[test]
fn a_kernel_without_the_mr_fields_leaves_them_unknown() {
    // The oldest layout (20 fields) prints no MR counts.
    let after = one(&["0 0 1 0 0 20 20 0 20 0 8 8 1 0 0 0 0 0 0 0"]);
    let v = kernel_view(&after, &[]);
    assert_eq!(v.transports, 1);
    assert_eq!(v.chunk_segments, Some(17));
    assert_eq!(v.local_inv_needed, None);
    assert_eq!(v.mrs_allocated, None);
}

/// A 6.1 transport line with the fields the new rows read: `sends`,
/// `recvs`, `req_u`, the three segment counts, `bad_reply_count` and
/// `local_inv_needed`; the rest 0.
fn xprt(sends: u64, recvs: u64, req_u: u64, bad_replies: u64, local_inv: u64) -> String {
    format!("0 0 1 0 0 {sends} {recvs} 0 {req_u} 0 2 2 1 0 0 0 0 0 0 {bad_replies} 0 0 0 11 {local_inv} 0 0")
}

fn field<'a>(rows: &'a [Row], name: &str) -> &'a Row {
    rows.iter().find(|r| r.field == name).expect(name)
}

/// Two calls sent together, answered, then a third: outstanding 1, 2, 1.
fn three_calls() -> ConnCounts {
    let us = 1000;
    ConnCounts {
        server: Some("10.99.0.1".into()),
        established: true,
        sends: 3,
        recvs: 3,
        events: vec![
            (10 * us, true),
            (20 * us, true),
            (30 * us, false),
            (40 * us, false),
            (50 * us, true),
            (60 * us, false),
        ],
        ..ConnCounts::default()
    }
}

/// The transport rows of `after`'s one mount over its whole life (no
/// BEFORE), judged with the fixed reply-lag bound.
fn rows_of(after: &Mount, conns: &[&ConnCounts]) -> Vec<Row> {
    transport_rows(&rdma_transports(after), &[], conns, &Lateness::default())
}

#[test]
fn the_in_flight_sum_is_the_kernels_rule_at_each_send() {
    let c = three_calls();
    let after = one(&[&xprt(3, 3, 4, 0, 5)]);
    let rows = rows_of(&after[0], &[&c]);
    let r = field(&rows, "req_u");
    assert_eq!((r.kernel, r.capture, r.verdict), (Some(4), 4, "agree"));
    let detail = r.detail.as_deref().unwrap();
    assert!(detail.contains("kernel 1.33, capture 1.33"), "{detail}");
}

#[test]
fn a_call_outstanding_at_before_counts_in_every_later_send() {
    // BEFORE: 5 sent, 4 answered (one call never was): each send in the
    // window counts it too, 2 + 3 + 2.
    let c = three_calls();
    let before = one(&[&xprt(5, 4, 9, 0, 0)]);
    let after = one(&[&xprt(8, 7, 16, 0, 5)]);
    let (a, b) = (rdma_transports(&after[0]), rdma_transports(&before[0]));
    let r = field(
        &transport_rows(&a, &b, &[&c], &Lateness::default()),
        "req_u",
    )
    .clone();
    assert_eq!((r.kernel, r.capture, r.verdict), (Some(7), 7, "agree"));
}

#[test]
fn a_kernel_counting_replies_late_agrees_within_the_lag_bound() {
    // The reply at 40 µs completed in the kernel only after the send at
    // 50 µs: that send counts 2, not 1 (a 10 µs lag).
    let c = three_calls();
    let after = one(&[&xprt(3, 3, 5, 0, 5)]);
    let rows = rows_of(&after[0], &[&c]);
    let r = field(&rows, "req_u");
    assert_eq!((r.kernel, r.capture), (Some(5), 4));
    assert_eq!(r.verdict, "agree, replies counted later");
    assert!(r.detail.as_deref().unwrap().contains("counted 10 µs after"));
    // Fewer in flight than the wire shows is no lag: a different count.
    let fewer = one(&[&xprt(3, 3, 3, 0, 5)]);
    let rows = rows_of(&fewer[0], &[&c]);
    assert_eq!(field(&rows, "req_u").verdict, "differ");
    // More than every send outstanding from the start cannot be a lag.
    let more = one(&[&xprt(3, 3, 7, 0, 5)]);
    let rows = rows_of(&more[0], &[&c]);
    let r = field(&rows, "req_u");
    assert_eq!(r.verdict, "differ");
    assert!(
        r.detail.as_deref().unwrap().contains("no reply lag"),
        "{r:?}"
    );
}

/// The lab's siw run under host load: `req_u` needed replies counted
/// 16.8 ms after the wire, and the kernel's own per-op rtt said it
/// completed them 43 ms after on average. Past the fixed bound, but the kernel
/// itself shows it that late: agree, saying why; without per-op counters
/// the fixed bound holds.
#[test]
fn a_kernel_whose_own_rtt_shows_it_late_agrees_up_to_that_lag() {
    let ms = 1_000_000;
    // A sent at 0, answered on the wire at 10 ms; B sent at 25 ms, answered
    // at 40 ms. The kernel's 3 has B's send still counting A: a lag of
    // over 15 ms.
    let c = ConnCounts {
        sends: 2,
        recvs: 2,
        events: vec![
            (0, true),
            (10 * ms, false),
            (25 * ms, true),
            (40 * ms, false),
        ],
        wire_rtt_ns: 25 * ms,
        wire_rtts: 2,
        ..ConnCounts::default()
    };
    let mut after = one(&[&xprt(2, 2, 3, 0, 0)]);
    let rows = rows_of(&after[0], &[&c]);
    assert_eq!(field(&rows, "req_u").verdict, "differ");
    // Its per-op counters: two calls of 34.5 ms on average against the
    // wire's 12.5 ms, 22 ms later.
    after[0].ops = vec![OpStats {
        name: "WRITE".into(),
        ops: 2,
        ntrans: 2,
        timeouts: 0,
        bytes_sent: 0,
        bytes_recv: 0,
        queue_ms: 0,
        rtt_ms: 69,
        execute_ms: 70,
        errors: None,
    }];
    let late = Lateness::of(&after[0], None, &[&c]);
    assert_eq!(late.kernel_rtt_above_wire_ns, Some(22 * ms as i64));
    let rows = transport_rows(&rdma_transports(&after[0]), &[], &[&c], &late);
    let r = field(&rows, "req_u");
    assert_eq!(r.verdict, "agree, replies counted later");
    let detail = r.detail.as_deref().unwrap();
    assert!(
        detail.contains("averages 22000 µs above the wire's"),
        "{detail}"
    );
    // A kernel no later than the wire gets the fixed bound, not less.
    let early = Lateness {
        kernel_rtt_above_wire_ns: Some(-3 * ms as i64),
    };
    assert_eq!(early.allowance_ns(), REPLY_LAG_MAX_NS);
}

#[test]
fn the_in_flight_sum_runs_per_transport_across_its_connections() {
    // One transport, reconnected: its two connections are one sequence.
    let mut first = three_calls();
    first.events.truncate(4);
    let mut second = three_calls();
    second.events.drain(..4);
    let after = one(&[&xprt(3, 3, 4, 0, 5)]);
    let rows = rows_of(&after[0], &[&first, &second]);
    assert_eq!(field(&rows, "req_u").capture, 4);
    // Two transports and three connections do not pair: no row.
    let two = one(&[&xprt(3, 3, 4, 0, 5), &xprt(0, 0, 0, 0, 0)]);
    let rows = rows_of(&two[0], &[&first, &second, &first]);
    assert!(rows.iter().all(|r| r.field != "req_u"));
}

#[test]
fn bad_replies_are_rdma_errors_and_local_invalidations_the_segments_left() {
    // 5 segments (2 read, 2 write, 1 reply); one reply's Send With
    // Invalidate released one MR; 2 RDMA_ERROR replies.
    let c = ConnCounts {
        segments: 5,
        remotely_invalidated: 1,
        rdma_errors: 2,
        ..three_calls()
    };
    let after = one(&[&xprt(3, 3, 4, 2, 4)]);
    let rows = rows_of(&after[0], &[&c]);
    assert_eq!(field(&rows, "bad_reply_count").verdict, "agree");
    assert_eq!(field(&rows, "local_inv_needed").capture, 4);
    assert_eq!(field(&rows, "local_inv_needed").verdict, "agree");
    // A 20-field kernel prints neither.
    let old = one(&["0 0 1 0 0 3 3 0 4 0 2 2 1 0 0 0 0 0 0 2"]);
    let rows = rows_of(&old[0], &[&c]);
    assert_eq!(field(&rows, "bad_reply_count").verdict, "agree");
    assert_eq!(
        field(&rows, "local_inv_needed").verdict,
        "not printed by this kernel"
    );
}

#[test]
fn the_shared_write_pad_mr_is_never_invalidated_per_call() {
    // Two calls padded their write chunk with the transport's one pad MR
    // (handle 0x77, 4 bytes): neither use is a local invalidation. A
    // 4-byte segment seen once is an ordinary MR.
    let c = ConnCounts {
        segments: 7,
        pad_handles: BTreeMap::from([(0x77, 2), (0x12, 1)]),
        ..ConnCounts::default()
    };
    assert_eq!(c.local_inv_needed(), 5);
}

fn op(name: &str, ops: u64, ntrans: u64) -> OpStats {
    OpStats {
        name: name.into(),
        ops,
        ntrans,
        timeouts: 0,
        bytes_sent: 0,
        bytes_recv: 0,
        queue_ms: 0,
        rtt_ms: 0,
        execute_ms: 0,
        errors: Some(0),
    }
}

#[test]
fn operations_count_each_xid_once_and_transmissions_each_send() {
    // READ: 3 operations, one sent again after a reconnect (4 transmissions).
    let after = Mount {
        program: Some((100_003, 3)),
        ops: vec![op("READ", 3, 4), op("GETATTR", 1, 1)],
        ..Mount::default()
    };
    let c = ConnCounts {
        ops: BTreeMap::from([("READ".into(), 4), ("GETATTR".into(), 1)]),
        op_calls: BTreeMap::from([("READ".into(), 3), ("GETATTR".into(), 2)]),
        ..ConnCounts::default()
    };
    let rows = op_rows(&after, None, &[&c]);
    assert_eq!(field(&rows, "READ ntrans").verdict, "agree");
    let r = field(&rows, "READ ops");
    assert_eq!((r.kernel, r.capture, r.verdict), (Some(3), 3, "agree"));
    let r = field(&rows, "GETATTR ops");
    assert_eq!((r.kernel, r.capture, r.verdict), (Some(1), 2, "differ"));
}
