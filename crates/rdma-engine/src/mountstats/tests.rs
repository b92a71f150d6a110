use super::*;

/// A Linux 6.1 client after the lab's `parallel` scenario: the `xprt:` line
/// is the one that run recorded (captures/parallel.json), the options are
/// the mount's as /proc/mounts gave them there (in mountstats' longer form),
/// the rest is written in the kernel's layout.
const V3_RDMA_61: &str = "\
device sysfs mounted on /sys with fstype sysfs
device proc mounted on /proc with fstype proc
device 10.99.0.1:/srv/export mounted on /mnt/lab with fstype nfs statvers=1.1
\topts:\trw,vers=3,rsize=262144,wsize=262144,namlen=255,acregmin=3,acregmax=60,acdirmin=30,acdirmax=60,hard,proto=rdma,port=20049,timeo=600,retrans=2,sec=sys,mountaddr=10.99.0.1,mountvers=3,mountport=20048,mountproto=tcp,local_lock=none
\tage:\t41
\tcaps:\tcaps=0x3fef,wtmult=4096,dtsize=32768,bsize=0,namlen=255
\tsec:\tflavor=1,pseudoflavor=1
\tevents:\t3 12 0 0 2 4 17 96 0 0 96 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
\tbytes:\t1572864 1572864 0 0 1572864 1572864 384 384
\tRPC iostats version: 1.1  p/v: 100003/3 (nfs)
\txprt:\trdma 0 0 1 0 0 1050 1050 0 5338 0 192 288 3 2388228 1573000 0 0 0 1 0 0 0 0 22 3 0 0
\tper-op statistics
\t        NULL: 1 1 0 40 24 0 0 0 0
\t     GETATTR: 4 4 0 416 448 0 3 3 0
\t      LOOKUP: 2 2 0 236 240 0 1 1 1
\t        READ: 288 288 0 34560 1595904 12 4010 4030 0
\t       WRITE: 192 192 0 1598976 30720 9 3800 3815 0
\t      COMMIT: 0 0 0 0 0 0 0 0 0

device tmpfs mounted on /run with fstype tmpfs
";

#[test]
fn a_61_rdma_mount_is_read_with_its_fields_named_in_print_order() {
    let mounts = parse(V3_RDMA_61).unwrap();
    assert_eq!(mounts.len(), 4, "every device line is a mount");
    let m = &mounts[2];
    assert_eq!(m.device, "10.99.0.1:/srv/export");
    assert_eq!(m.mountpoint, "/mnt/lab");
    assert_eq!(m.fstype, "nfs");
    assert_eq!(m.statvers.as_deref(), Some("1.1"));
    assert_eq!(m.opt("proto"), Some("rdma"));
    assert_eq!(m.opt("vers"), Some("3"));
    assert!(m.is_rdma());
    assert_eq!(m.age, Some(41));
    assert_eq!(m.program, Some((100_003, 3)));
    assert_eq!(m.transports.len(), 1);
    let t = &m.transports[0];
    assert!(matches!(
        t,
        Transport::Rdma {
            layout: RdmaLayout::Fields27,
            ..
        }
    ));
    for (name, want) in [
        ("connect_count", 1),
        ("sends", 1050),
        ("recvs", 1050),
        ("req_u", 5338),
        ("read_chunk_count", 192),
        ("write_chunk_count", 288),
        ("reply_chunk_count", 3),
        ("total_rdma_request", 2_388_228),
        ("total_rdma_reply", 1_573_000),
        ("failed_marshal_count", 1),
        ("nomsg_call_count", 0),
        ("mrs_recycled", 0),
        ("mrs_allocated", 22),
        ("local_inv_needed", 3),
        ("reply_waits_for_send", 0),
    ] {
        assert_eq!(t.rdma(name), Some(want), "{name}");
    }
    assert_eq!(t.rdma("mrs_recovered"), None, "slot 21 is mrs_recycled now");
    let read = m.op("READ").unwrap();
    assert_eq!((read.ops, read.ntrans, read.rtt_ms), (288, 288, 4010));
    assert_eq!(m.op("LOOKUP").unwrap().errors, Some(1));
    assert_eq!(m.ops.len(), 6);
    assert!(!mounts[0].is_rdma());
}

/// Every field name of the current layout is distinct and the table has
/// the length the newest kernels print.
#[test]
fn the_names_are_distinct_and_as_many_as_printed() {
    let names: Vec<_> = RdmaLayout::Fields27.names().collect();
    assert_eq!(names.len(), 27);
    let mut sorted = names.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), 27);
    assert_eq!(RdmaLayout::Fields25.names().nth(21), Some("mrs_recovered"));
    assert_eq!(RdmaLayout::Fields20.names().last(), Some("bad_reply_count"));
}

#[test]
fn nconnect_gives_one_transport_per_xprt_line() {
    let text = "\
device srv:/e mounted on /m with fstype nfs statvers=1.1
\topts:\trw,vers=3,nconnect=4,proto=rdma
\tRPC iostats version: 1.1  p/v: 100003/3 (nfs)
\txprt:\trdma 0 0 1 0 0 10 10 0 10 0 0 0 0 0 0 0 0 0 0 0 0 0 0 11 0 0 0
\txprt:\trdma 0 0 1 0 0 11 11 0 11 0 0 0 0 0 0 0 0 0 0 0 0 0 0 11 0 0 0
\txprt:\trdma 0 0 1 0 0 12 12 0 12 0 0 0 0 0 0 0 0 0 0 0 0 0 0 11 0 0 0
\txprt:\trdma 0 0 3 0 0 13 12 0 13 0 0 0 0 0 0 0 0 0 0 0 0 0 0 11 0 0 0
\tper-op statistics
\t     GETATTR: 46 46 0 0 0 0 0 0 0
";
    let m = &parse(text).unwrap()[0];
    assert_eq!(m.opt("nconnect"), Some("4"));
    let sends: Vec<_> = m.transports.iter().map(|t| t.rdma("sends")).collect();
    assert_eq!(sends, [Some(10), Some(11), Some(12), Some(13)]);
    assert_eq!(m.transports[3].rdma("connect_count"), Some(3));
    assert_eq!(m.op("GETATTR").unwrap().ops, 46);
}

#[test]
fn older_layouts_name_what_they_print_and_nothing_more() {
    let text = "\
device srv:/e mounted on /m with fstype nfs4 statvers=1.0
\topts:\trw,vers=4.1,proto=rdma
\txprt:\trdma 0 0 2 1 0 30 29 1 31 0 4 8 1 100 90 0 0 0 0 1 2 5 0 40 12 7
\tper-op statistics
\t        READ: 8 9 1 960 4096 0 10 11
";
    let m = &parse(text).unwrap()[0];
    let t = &m.transports[0];
    assert!(matches!(
        t,
        Transport::Rdma {
            layout: RdmaLayout::Fields26,
            ..
        }
    ));
    assert_eq!(t.rdma("mrs_recovered"), Some(5));
    assert_eq!(t.rdma("mrs_recycled"), None);
    assert_eq!(t.rdma("empty_sendctx_q"), Some(7));
    assert_eq!(t.rdma("reply_waits_for_send"), None, "not printed");
    assert_eq!(t.rdma("bad_xids"), Some(1));
    let read = m.op("READ").unwrap();
    assert_eq!(read.errors, None, "statvers 1.0 prints no error count");
    assert_eq!((read.ops, read.ntrans, read.timeouts), (8, 9, 1));
}

#[test]
fn a_line_of_a_length_no_kernel_prints_is_kept_unnamed() {
    let text = "\
device srv:/e mounted on /m with fstype nfs
\txprt:\trdma 1 2 3
\txprt:\ttcp 871 1 1 0 0 5 5 0 5 0 2 0 0
";
    let m = &parse(text).unwrap()[0];
    assert_eq!(
        m.transports[0],
        Transport::Other {
            proto: "rdma".into(),
            values: vec![1, 2, 3]
        }
    );
    assert_eq!(m.transports[0].rdma("sends"), None);
    assert!(matches!(&m.transports[1], Transport::Other { proto, .. } if proto == "tcp"));
}

#[test]
fn a_counter_that_is_not_a_number_is_an_error_naming_its_line() {
    let text = "\
device srv:/e mounted on /m with fstype nfs
\txprt:\trdma 0 0 x
";
    let e = parse(text).unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.to_string().contains("\"x\" is not a counter"), "{e}");
    let short = "device srv:/e mounted on /m with fstype nfs\n\tper-op statistics\n\t READ: 1 2\n";
    let e = parse(short).unwrap_err();
    assert_eq!(e.line, 3);
    assert!(e.what.contains("READ: 2 counters"), "{e}");
    let bad = parse("device nowhere\n").unwrap_err();
    assert_eq!(bad.line, 1);
}

/// Mount points with spaces are printed escaped (`\040`) by the kernel, but
/// a device line is split at its last ` with fstype ` all the same.
#[test]
fn a_mount_point_is_taken_whole() {
    let m =
        &parse("device s:/e mounted on /mnt/a with b with fstype nfs statvers=1.1\n").unwrap()[0];
    assert_eq!(m.mountpoint, "/mnt/a with b");
    assert!(m.transports.is_empty() && m.ops.is_empty());
}

#[test]
fn empty_and_foreign_input_give_no_mounts() {
    assert!(parse("").unwrap().is_empty());
    assert!(parse("not mountstats at all\n\n").unwrap().is_empty());
}
