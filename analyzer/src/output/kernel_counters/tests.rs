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
