//! The decoder against the real format files of the lab's guest kernel
//! (Debian 6.1.0-50-amd64, copied from its tracefs into
//! `ebpf-probes/testdata/`): every event parses, and records laid out by
//! those formats decode to the values the guest's own trace printed
//! (`captures/v3-ddp.*.trace.txt`).

use std::path::PathBuf;

use rdma_analyzer::engine::kernel::event::{
    ChunkType, Cid, Completion, ProbeEvent, SegKind, TaskKey,
};
use rdma_analyzer::sources::ebpf::{Decoder, FormatSet, SYSTEMS};

fn formats() -> FormatSet {
    formats_of("linux-6.1.0-50-amd64")
}

/// The format files of one kernel of the lab's matrix (Debian 11, 12, 13).
fn formats_of(kernel: &str) -> FormatSet {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../ebpf-probes/testdata")
        .join(kernel);
    let (set, absent, bad) = FormatSet::load(&root, &SYSTEMS);
    assert!(absent.is_empty(), "{absent:?}");
    assert!(bad.is_empty(), "{bad:?}");
    set
}

/// A ring-buffer record: header + raw record laid out by `format`.
fn record(set: &FormatSet, name: &str, fields: &[(&str, u64)]) -> Vec<u8> {
    record_with_strings(set, name, fields, &[])
}

/// The same, with `__data_loc` strings stored after the fixed part, as the
/// kernel stores them.
fn record_with_strings(
    set: &FormatSet,
    name: &str,
    fields: &[(&str, u64)],
    strings: &[(&str, &str)],
) -> Vec<u8> {
    let f = set
        .sorted()
        .into_iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("{name}"));
    let mut data = vec![0u8; 256];
    for (n, v) in fields {
        let fd = f.field(n).unwrap_or_else(|| panic!("{name}.{n}"));
        data[fd.offset..fd.offset + fd.size].copy_from_slice(&v.to_ne_bytes()[..fd.size]);
    }
    let mut at = f.fixed_len();
    for (n, text) in strings {
        let fd = f.field(n).unwrap_or_else(|| panic!("{name}.{n}"));
        assert!(fd.data_loc, "{name}.{n} is not a __data_loc");
        let len = text.len() + 1;
        let loc = ((len as u32) << 16) | at as u32;
        data[fd.offset..fd.offset + 4].copy_from_slice(&loc.to_ne_bytes());
        data[at..at + text.len()].copy_from_slice(text.as_bytes());
        at += len;
    }
    let mut v = vec![0u8; ebpf_common::HEADER_LEN];
    v[0] = ebpf_common::RECORD_VERSION;
    v[1] = ebpf_common::RecordKind::Tracepoint as u8;
    v[2..4].copy_from_slice(&f.id.to_ne_bytes());
    v[24..26].copy_from_slice(&256u16.to_ne_bytes());
    v.extend_from_slice(&data);
    v
}

#[test]
fn every_guest_format_parses() {
    let set = formats();
    // rpcrdma 98, rdma_cma 19, ib_cma 34 (LAB_NOTES), sunrpc 127.
    assert_eq!(set.len(), 278);
    for f in set.sorted() {
        assert!(
            f.fixed_len() <= ebpf_common::RECORD_DATA_MAX,
            "{} is {} bytes",
            f.name,
            f.fixed_len()
        );
    }
}

#[test]
fn decode_client_and_server_events_by_the_guest_layout() {
    let set = formats();
    let mut d = Decoder::new(set.clone(), 0);
    // xprtrdma_marshal: task:00000001@00000000 xid=0x9bc0454e hdr=28 xdr=40/0/0 pullup/inline
    let p = d
        .decode(&record(
            &set,
            "xprtrdma_marshal",
            &[
                ("task_id", 1),
                ("xid", 0x9bc0454e),
                ("hdrlen", 28),
                ("headlen", 40),
                ("rtype", 1),
                ("wtype", 0),
            ],
        ))
        .unwrap();
    assert_eq!(
        p.event,
        ProbeEvent::Marshal {
            task: TaskKey {
                task_id: 1,
                client_id: 0
            },
            xid: 0x9bc0454e,
            rtype: ChunkType::Pullup,
            wtype: ChunkType::Inline,
            hdrlen: Some(28),
            xdrlen: Some(40)
        }
    );
    // xprtrdma_chunk_read: task:0000000b@00000004 pos=132 131072@0xa8c0454e0cf3a000:0x000018d8
    let p = d
        .decode(&record(
            &set,
            "xprtrdma_chunk_read",
            &[
                ("task_id", 0xb),
                ("client_id", 4),
                ("pos", 132),
                ("length", 131072),
                ("offset", 0xa8c0454e0cf3a000),
                ("handle", 0x18d8),
            ],
        ))
        .unwrap();
    assert_eq!(
        p.event,
        ProbeEvent::ClientChunk {
            task: TaskKey {
                task_id: 0xb,
                client_id: 4
            },
            kind: SegKind::Read { position: 132 },
            handle: 0x18d8,
            length: 131072,
            offset: 0xa8c0454e0cf3a000
        }
    );
    // xprtrdma_reply: xid=0x9bc0454e credits=64
    let p = d
        .decode(&record(
            &set,
            "xprtrdma_reply",
            &[("task_id", 1), ("xid", 0x9bc0454e), ("credits", 64)],
        ))
        .unwrap();
    assert!(matches!(
        p.event,
        ProbeEvent::Reply {
            xid: 0x9bc0454e,
            credits: 64,
            ..
        }
    ));
    // svcrdma_decode_rqst: cq.id=4 cid=64 xid=0x9bc0454e vers=1 credits=128 proc=RDMA_MSG hdrlen=28
    let p = d
        .decode(&record(
            &set,
            "svcrdma_decode_rqst",
            &[
                ("cq_id", 4),
                ("completion_id", 64),
                ("xid", 0x9bc0454e),
                ("vers", 1),
                ("credits", 128),
                ("proc", 0),
                ("hdrlen", 28),
            ],
        ))
        .unwrap();
    assert_eq!(
        p.event,
        ProbeEvent::DecodeRqst {
            cid: Cid { cq_id: 4, cid: 64 },
            xid: 0x9bc0454e,
            vers: 1,
            proc: 0,
            credits: 128,
            hdrlen: Some(28)
        }
    );
    // svcrdma_post_send: cq_id=3 cid=72 num_sge=1 inv_rkey=0x00000c0b
    let p = d
        .decode(&record(
            &set,
            "svcrdma_post_send",
            &[
                ("cq_id", 3),
                ("completion_id", 72),
                ("num_sge", 1),
                ("inv_rkey", 0xc0b),
            ],
        ))
        .unwrap();
    assert_eq!(
        p.event,
        ProbeEvent::ServerPostSend {
            cid: Cid { cq_id: 3, cid: 72 },
            inv_rkey: Some(0xc0b)
        }
    );
    // xprtrdma_mr_reminv: task:00000017@00000004 ... 4096@0x85036f450c1e1000:0x00000c0b
    let p = d
        .decode(&record(
            &set,
            "xprtrdma_mr_reminv",
            &[("task_id", 0x17), ("client_id", 4), ("handle", 0xc0b)],
        ))
        .unwrap();
    assert_eq!(
        p.event,
        ProbeEvent::RemoteInv {
            task: Some(TaskKey {
                task_id: 0x17,
                client_id: 4
            }),
            handle: 0xc0b
        }
    );
    // svcrdma_wc_read: totalbytes=262144
    let p = d
        .decode(&record(
            &set,
            "svcrdma_wc_read",
            &[("cq_id", 3), ("completion_id", 82), ("totalbytes", 262144)],
        ))
        .unwrap();
    assert!(
        matches!(
            p.event,
            ProbeEvent::ReadCompleted(Completion {
                bytes: Some(262144),
                ..
            })
        ),
        "{:?}",
        p.event
    );
    // cm_event_handler carries addresses.
    let p = d
        .decode(&record(
            &set,
            "cm_event_handler",
            &[("cm_id", 3), ("event", 4)],
        ))
        .unwrap();
    assert!(
        matches!(
            p.event,
            ProbeEvent::Cm {
                cm_id: Some(3),
                cm_event: Some(4),
                ..
            }
        ),
        "{:?}",
        p.event
    );
}

/// The two `sunrpc` events that name calls, by the guest's layout: the
/// client's (by task) and the server's (by XID, with the number).
#[test]
fn decode_procedure_names_by_the_guest_layout() {
    let set = formats();
    let mut d = Decoder::new(set.clone(), 0);
    let p = d
        .decode(&record_with_strings(
            &set,
            "rpc_request",
            &[("task_id", 0x2a), ("client_id", 4), ("version", 3)],
            &[("progname", "nfs"), ("procname", "READ")],
        ))
        .unwrap();
    assert_eq!(
        p.event,
        ProbeEvent::RpcRequest {
            task: TaskKey {
                task_id: 0x2a,
                client_id: 4
            },
            version: Some(3),
            program: Some("nfs".into()),
            procedure: Some("READ".into()),
        }
    );
    let p = d
        .decode(&record_with_strings(
            &set,
            "svc_process",
            &[("xid", 0x9bc0454e), ("vers", 4), ("proc", 1)],
            &[
                ("service", "nfsd"),
                ("procedure", "COMPOUND"),
                ("addr", "10.99.0.2:40007"),
            ],
        ))
        .unwrap();
    assert_eq!(
        p.event,
        ProbeEvent::SvcProcess {
            xid: 0x9bc0454e,
            version: Some(4),
            proc: Some(1),
            service: Some("nfsd".into()),
            procedure: Some("COMPOUND".into()),
        }
    );
}

#[test]
fn every_matrix_kernel_format_parses() {
    for kernel in [
        "linux-5.10.0-32-amd64",
        "linux-6.1.0-50-amd64",
        "linux-6.12.117+deb13-amd64",
    ] {
        let set = formats_of(kernel);
        assert!(set.len() > 200, "{kernel}: {}", set.len());
        for f in set.sorted() {
            assert!(
                f.fixed_len() <= ebpf_common::RECORD_DATA_MAX,
                "{kernel}: {}",
                f.name
            );
        }
    }
}

/// Linux 5.10 names some events differently and leaves fields out: segments
/// without a completion id, invalidations without a task, one post_chunk
/// event for Reads and Writes. They decode to what the correlator can tie
/// together by thread and R_Key.
#[test]
fn linux_5_10_events_decode_without_the_fields_it_lacks() {
    let set = formats_of("linux-5.10.0-32-amd64");
    let mut d = Decoder::new(set.clone(), 0);
    let mut dec =
        |name: &str, fields: &[(&str, u64)]| d.decode(&record(&set, name, fields)).unwrap().event;
    assert_eq!(
        dec(
            "svcrdma_decode_wseg",
            &[("handle", 0x2c05), ("length", 8192), ("offset", 0x1000)]
        ),
        ProbeEvent::ServerDecodeSeg {
            cid: None,
            kind: SegKind::Write,
            handle: 0x2c05,
            length: 8192,
            offset: 0x1000,
        }
    );
    assert_eq!(
        dec("xprtrdma_mr_reminv", &[("handle", 0x2c05)]),
        ProbeEvent::RemoteInv {
            task: None,
            handle: 0x2c05
        }
    );
    assert_eq!(
        dec(
            "svcrdma_post_chunk",
            &[("cq_id", 3), ("completion_id", 9), ("sqecount", 2)]
        ),
        ProbeEvent::PostChunk {
            kind: None,
            cid: Cid { cq_id: 3, cid: 9 },
            sqecount: Some(2),
        }
    );
    assert!(matches!(
        dec("svcrdma_wc_receive", &[("cq_id", 4), ("completion_id", 7)]),
        ProbeEvent::RecvCompleted(Completion {
            cid: Cid { cq_id: 4, cid: 7 },
            ..
        })
    ));
}

/// What each kernel of the matrix cannot show, from its format files alone.
#[test]
fn blind_spots_of_the_matrix_kernels() {
    use rdma_analyzer::sources::ebpf::blind_spots;
    let names = |k| {
        blind_spots(&formats_of(k), &[])
            .into_iter()
            .map(|m| m.what)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names("linux-5.10.0-32-amd64"),
        ["rpcrdma:svcrdma_decode_rseg"]
    );
    assert!(names("linux-6.1.0-50-amd64").is_empty());
    assert!(names("linux-6.12.117+deb13-amd64").is_empty());
}

/// The probes copy only the span each event's [`needed`] plan names. On
/// every matrix kernel, every attached event decodes from its span exactly
/// as from the whole record (fields filled with distinct bytes, strings
/// where the kernel puts them), no span is longer than its record, and the
/// per-RPC events the engine ignores are not attached.
#[test]
fn copy_plans_lose_nothing_the_decoder_reads() {
    use rdma_analyzer::sources::ebpf::{needed, whole_record, Plan, ProbeEvents};
    for kernel in [
        "linux-5.10.0-32-amd64",
        "linux-6.1.0-50-amd64",
        "linux-6.12.117+deb13-amd64",
    ] {
        let set = formats_of(kernel);
        let all = Plan::all_of(&set, &SYSTEMS, &[], ProbeEvents::All);
        let used = Plan::all_of(&set, &SYSTEMS, &[], ProbeEvents::Used);
        assert_eq!(
            all.tracepoints.len(),
            used.tracepoints.len() + used.left_out.len(),
            "{kernel}"
        );
        let (mut spans, mut wholes) = (0u32, 0u32);
        for (sys, ev, copy) in &used.tracepoints {
            let f = set.by_name(sys, ev).expect("planned from the set");
            assert_eq!(Some(*copy), needed(f));
            // Distinct bytes in every field, then valid strings.
            let mut data: Vec<u8> = (0..256u32).map(|i| (i * 7 + 3) as u8).collect();
            let mut at = f.fixed_len();
            for fd in f.fields.iter().filter(|x| x.data_loc) {
                let text = format!("{}-{}", fd.name, f.id);
                let len = text.len() + 1;
                let off = if fd.ctype.starts_with("__rel_loc") {
                    at - (fd.offset + 4)
                } else {
                    at
                };
                let loc = ((len as u32) << 16) | off as u32;
                data[fd.offset..fd.offset + 4].copy_from_slice(&loc.to_ne_bytes());
                data[at..at + text.len()].copy_from_slice(text.as_bytes());
                data[at + text.len()] = 0;
                at += len;
            }
            let word = copy.loc_at().map_or(0, |o| {
                let o = o as usize;
                u32::from_ne_bytes(data[o..o + 4].try_into().unwrap())
            });
            let (lo, n) = copy.span(word);
            let (lo, n) = (lo as usize, n as usize);
            let whole = frame(f.id, 0, &data);
            let cut = frame(f.id, lo, &data[lo..lo + n]);
            let mut d = Decoder::new(set.clone(), 0);
            let full = d.decode(&whole).expect("whole record decodes").event;
            let part = d.decode(&cut).expect("span decodes").event;
            assert_eq!(full, part, "{kernel}: {ev}: plan {copy:?}");
            spans += ebpf_common::CopyPlan::class(n as u32) as u32;
            let w = whole_record(f);
            let wword = w.loc_at().map_or(0, |o| {
                let o = o as usize;
                u32::from_ne_bytes(data[o..o + 4].try_into().unwrap())
            });
            let (wl, wn) = w.span(wword);
            if std::env::var_os("SHOW_PLANS").is_some() {
                eprintln!("{kernel} {ev}: {n} of {wn} bytes");
            }
            assert!(wl as usize <= lo || n == 0, "{kernel}: {ev}");
            assert!(n as u32 <= wn, "{kernel}: {ev}: {n} > {wn}");
            wholes += ebpf_common::CopyPlan::class(wn) as u32;
        }
        if std::env::var_os("SHOW_PLANS").is_some() {
            eprintln!("{kernel}: left in the kernel: {:?}", used.left_out);
        }
        let before = used.tracepoints.len() * ebpf_common::RECORD_DATA_MAX;
        eprintln!(
            "{kernel}: {} events attached, {} left in the kernel; data bytes of one record each: {spans} cut to the fields read, {wholes} whole, {before} at a fixed {}",
            used.tracepoints.len(),
            used.left_out.len(),
            ebpf_common::RECORD_DATA_MAX,
        );
        assert!(
            spans <= wholes && (spans as usize) < before / 3,
            "{kernel}: {spans} vs {wholes}"
        );
        // The per-RPC events the engine ignores stay detached.
        for ev in ["xprtrdma_wc_send", "svcrdma_post_recv", "xprtrdma_mr_map"] {
            if set.by_name("rpcrdma", ev).is_some() {
                assert!(
                    used.left_out.contains(&format!("rpcrdma:{ev}")),
                    "{kernel}: {ev}"
                );
            }
        }
    }
}

/// The per-RPC events the engine reads, on every kernel of the matrix
/// that has them: each must take a fixed-copy program (loads at constant
/// offsets, no copy helper), or the probes' cost per RPC goes back up.
const FIXED_PER_RPC: [&str; 16] = [
    "xprtrdma_marshal",
    "xprtrdma_post_send",
    "xprtrdma_reply",
    "xprtrdma_chunk_read",
    "xprtrdma_chunk_write",
    "xprtrdma_decode_seg",
    "xprtrdma_mr_reminv",
    "svcrdma_wc_recv",
    "svcrdma_wc_receive",
    "svcrdma_decode_rqst",
    "svcrdma_decode_rseg",
    "svcrdma_decode_wseg",
    "svcrdma_encode_wseg",
    "svcrdma_post_read_chunk",
    "svcrdma_post_send",
    "svcrdma_wc_read",
];

/// A fixed copy ([`ebpf_common::CopyPlan::fixed_copy`]) reads bytes `[8, 8 + n)` of the
/// record with plain loads. The kernel attaches such a program only if it
/// loads nothing past the event's last field, and the decoder must read
/// from those bytes exactly what it reads from the whole record; the
/// per-RPC events all take one.
#[test]
fn fixed_copies_stay_in_the_record_and_lose_nothing() {
    use rdma_analyzer::sources::ebpf::{Plan, ProbeEvents};
    for kernel in [
        "linux-5.10.0-32-amd64",
        "linux-6.1.0-50-amd64",
        "linux-6.12.117+deb13-amd64",
    ] {
        let set = formats_of(kernel);
        let used = Plan::all_of(&set, &SYSTEMS, &[], ProbeEvents::Used);
        let mut fixed = Vec::new();
        for (sys, ev, copy) in &used.tracepoints {
            let Some(n) = copy.fixed_copy() else {
                continue;
            };
            let f = set.by_name(sys, ev).expect("planned from the set");
            // perf_event_set_bpf_prog: the last field's end, in the
            // order the format file (the kernel's field list) gives them.
            let last = f.fields.last().map_or(0, |x| x.offset + x.size);
            let end = 8 + usize::from(n);
            assert!(
                end <= last,
                "{kernel}: {ev}: copies to {end}, record ends at {last}"
            );
            let data: Vec<u8> = (0..last.max(end) as u32)
                .map(|i| (i * 7 + 3) as u8)
                .collect();
            let mut d = Decoder::new(set.clone(), 0);
            let full = d
                .decode(&frame(f.id, 0, &data))
                .expect("whole record")
                .event;
            let part = d
                .decode(&frame(f.id, 8, &data[8..end]))
                .expect("fixed copy")
                .event;
            assert_eq!(full, part, "{kernel}: {ev}: fixed copy of {n} bytes");
            fixed.push(ev.as_str());
        }
        for ev in FIXED_PER_RPC {
            if set.by_name("rpcrdma", ev).is_some() {
                assert!(
                    fixed.contains(&ev),
                    "{kernel}: {ev} takes the helper's program"
                );
            }
        }
        eprintln!(
            "{kernel}: {} of {} attached events copied with fixed loads",
            fixed.len(),
            used.tracepoints.len()
        );
    }
}

/// Kernels without BPF cookies (Linux 5.10 of the matrix) copy with
/// fixed loads too: each per-RPC event the engine reads gets a fixed-copy
/// slot program of its span's length (`rdma_tpf_<n>_<k>`) and an entry of
/// its own in `FIXED_SLOT_IDS`, ahead of the dozens of rare events (CM,
/// errors) that would otherwise take the few programs of each length.
#[test]
fn slot_kernels_give_per_rpc_events_fixed_copies() {
    use rdma_analyzer::sources::ebpf::{Plan, ProbeEvents};
    for kernel in [
        "linux-5.10.0-32-amd64",
        "linux-6.1.0-50-amd64",
        "linux-6.12.117+deb13-amd64",
    ] {
        let set = formats_of(kernel);
        let plan = Plan::all_of(&set, &SYSTEMS, &[], ProbeEvents::Used);
        let slots = plan.fixed_slots();
        assert_eq!(slots.len(), plan.tracepoints.len());
        let mut entries = std::collections::HashSet::new();
        let mut fixed = Vec::new();
        for ((_, ev, copy), slot) in plan.tracepoints.iter().zip(&slots) {
            let Some((n, entry)) = *slot else {
                continue;
            };
            // The same bytes as the cookie kernels' fixed copy, which
            // fixed_copies_stay_in_the_record_and_lose_nothing checks.
            assert_eq!(copy.fixed_copy(), Some(n), "{kernel}: {ev}");
            assert!(entry < ebpf_common::FIXED_SLOTS, "{kernel}: {ev}");
            assert_eq!(
                ebpf_common::fixed_slot(usize::from(n), entry % ebpf_common::FIXED_SLOTS_PER_LEN),
                Some(entry),
                "{kernel}: {ev}: entry {entry} is not a program of length {n}"
            );
            assert!(entries.insert(entry), "{kernel}: {ev}: entry {entry} twice");
            fixed.push(ev.as_str());
        }
        for ev in FIXED_PER_RPC {
            if set.by_name("rpcrdma", ev).is_some() {
                assert!(
                    fixed.contains(&ev),
                    "{kernel}: {ev} takes a helper slot program"
                );
            }
        }
        eprintln!(
            "{kernel} without cookies: {} of {} attached events copied with fixed loads",
            fixed.len(),
            plan.tracepoints.len()
        );
    }
}

/// A ring record as the probe writes it: `data` is the record from `base`.
fn frame(id: u16, base: usize, data: &[u8]) -> Vec<u8> {
    let mut v = vec![0u8; ebpf_common::HEADER_LEN];
    v[0] = ebpf_common::RECORD_VERSION;
    v[1] = ebpf_common::RecordKind::Tracepoint as u8;
    v[2..4].copy_from_slice(&id.to_ne_bytes());
    v[24..26].copy_from_slice(&(data.len() as u16).to_ne_bytes());
    v[26..28].copy_from_slice(&(base as u16).to_ne_bytes());
    v.extend_from_slice(data);
    v
}

/// Every name the probes leave in the kernel is an event of a matrix kernel
/// (a misspelt name would attach a per-RPC event whole, silently costly).
#[test]
fn events_left_in_the_kernel_exist() {
    use rdma_analyzer::sources::ebpf::per_rpc_unused;
    let sets: Vec<FormatSet> = [
        "linux-5.10.0-32-amd64",
        "linux-6.1.0-50-amd64",
        "linux-6.12.117+deb13-amd64",
    ]
    .iter()
    .map(|k| formats_of(k))
    .collect();
    for name in per_rpc_unused() {
        assert!(
            // rpcrdma's, and sunrpc's rpc_request (rpc_stats_latency says it too).
            sets.iter()
                .any(|s| SYSTEMS.iter().any(|sys| s.by_name(sys, name).is_some())),
            "{name} is on no matrix kernel"
        );
    }
}

/// Each row of the tracepoint table says what the engine uses its event
/// for: on every matrix kernel, a record of each event the table names
/// decodes to an event the engine takes that way, and every event the
/// kernel view relies on is on some matrix kernel (a misspelt name would
/// make a blind spot out of nothing).
#[test]
fn the_table_says_what_its_events_decode_to() {
    use rdma_analyzer::sources::ebpf::{relied_on, row_of, Compiled};
    let sets: Vec<FormatSet> = [
        "linux-5.10.0-32-amd64",
        "linux-6.1.0-50-amd64",
        "linux-6.12.117+deb13-amd64",
    ]
    .iter()
    .map(|k| formats_of(k))
    .collect();
    let mut checked = 0;
    for set in &sets {
        for f in set.sorted() {
            let c = Compiled::new(f);
            assert!(std::ptr::eq(c.row, row_of(&f.system, &f.name)));
            let blank = vec![0u8; f.fixed_len()];
            let event = c.decode(&blank, 0, None);
            assert_eq!(
                event.use_(),
                c.row.use_,
                "{}:{}: {event:?}",
                f.system,
                f.name
            );
            checked += 1;
        }
    }
    assert!(checked > 800, "{checked}");
    for (sys, names, _) in relied_on() {
        for name in names {
            assert!(
                sets.iter().any(|s| s.by_name(sys, name).is_some()),
                "{sys}:{name} is on no matrix kernel"
            );
        }
    }
}

/// A kernel that renames an event the engine follows: the decoder, not the
/// engine, is where it shows. The renamed event falls to the table's
/// families (a completion the engine does not follow, counted), and the
/// blind spots name what the kernel view loses, until the new name joins
/// its row.
#[test]
fn a_renamed_event_shows_at_the_decoder() {
    use rdma_analyzer::engine::kernel::event::Use;
    use rdma_analyzer::sources::ebpf::{blind_spots, Compiled};
    let mut set = FormatSet::default();
    for f in formats_of("linux-6.12.117+deb13-amd64").sorted() {
        let mut f = f.clone();
        if f.name == "svcrdma_wc_recv" {
            f.name = "svcrdma_wc_recv_done".into();
        }
        set.insert(f);
    }
    let renamed = set.by_name("rpcrdma", "svcrdma_wc_recv_done").unwrap();
    let c = Compiled::new(renamed);
    assert_eq!(c.row.use_, Use::Counted);
    let event = c.decode(&vec![0u8; renamed.fixed_len()], 0, None);
    assert!(matches!(event, ProbeEvent::Completed(_)), "{event:?}");
    let lost: Vec<String> = blind_spots(&set, &[]).into_iter().map(|m| m.what).collect();
    assert_eq!(lost, ["rpcrdma:svcrdma_wc_recv|svcrdma_wc_receive"]);
}

/// The RPC layer's timing events on every matrix kernel: `rpc_stats_latency`
/// (Linux 6.12 adds `xprt_id`, not read) and `svc_stats_latency` (whose
/// fields moved in 6.1, behind the server's and client's addresses) decode
/// to the µs the kernel wrote and the names the client gave the call; the
/// server's copy is its fixed fields only (`svc_process` names the call).
#[test]
fn rpc_layer_times_decode_on_every_kernel_from_their_fixed_fields() {
    use rdma_analyzer::sources::ebpf::needed;
    for kernel in [
        "linux-5.10.0-32-amd64",
        "linux-6.1.0-50-amd64",
        "linux-6.12.117+deb13-amd64",
    ] {
        let set = formats_of(kernel);
        let mut d = Decoder::new(set.clone(), 0);
        let p = d
            .decode(&record_with_strings(
                &set,
                "rpc_stats_latency",
                &[
                    ("task_id", 0x51),
                    ("client_id", 2),
                    ("xid", 0x1c2d3e4f),
                    ("version", 3),
                    ("backlog", 17),
                    ("rtt", 412),
                    ("execute", 455),
                ],
                &[("progname", "nfs"), ("procname", "READ")],
            ))
            .unwrap();
        assert_eq!(
            p.event,
            ProbeEvent::RpcStats {
                task: TaskKey {
                    task_id: 0x51,
                    client_id: 2
                },
                xid: 0x1c2d3e4f,
                version: Some(3),
                program: Some("nfs".into()),
                procedure: Some("READ".into()),
                backlog_us: Some(17),
                rtt_us: Some(412),
                execute_us: Some(455),
            },
            "{kernel}"
        );
        let p = d
            .decode(&record(
                &set,
                "svc_stats_latency",
                &[("xid", 0x1c2d3e4f), ("execute", 96)],
            ))
            .unwrap();
        assert_eq!(
            p.event,
            ProbeEvent::SvcStats {
                xid: 0x1c2d3e4f,
                execute_us: Some(96)
            },
            "{kernel}"
        );
        let plan = |name: &str| needed(set.by_name("sunrpc", name).unwrap()).unwrap();
        let rpc = plan("rpc_stats_latency");
        // task_id (8) to execute's end (56), the names' strings (after
        // procname, at 28), not xprt_id.
        assert_eq!((rpc.lo, rpc.hi, rpc.loc & 0x7fff), (8, 56, 28), "{kernel}");
        // rpc_request, which says nothing more, stays in the kernel.
        assert_eq!(needed(set.by_name("sunrpc", "rpc_request").unwrap()), None);
        // svc_stats_latency too: one more event per RPC would take the
        // server's probes past the 1 µs budget; it is decoded when
        // --all-probe-events attaches it.
        assert_eq!(
            needed(set.by_name("sunrpc", "svc_stats_latency").unwrap()),
            None,
            "{kernel}"
        );
    }
}
