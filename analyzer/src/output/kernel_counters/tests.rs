use super::*;
use crate::engine::mountstats::parse;

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
