use std::net::Ipv6Addr;

use ebpf_common::{KprobeId, HEADER_LEN, RECORD_VERSION};

use super::format::parse_field;
use super::*;
use crate::engine::kernel::event::{Cid, ProbeEvent, TaskKey};

/// `svcrdma_post_send` as Linux 6.1 lays it out (offsets computed from
/// the TRACE_EVENT in include/trace/events/rpcrdma.h).
const POST_SEND: &str = "name: svcrdma_post_send
ID: 1701
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:u32 cq_id;\toffset:8;\tsize:4;\tsigned:0;
\tfield:int completion_id;\toffset:12;\tsize:4;\tsigned:1;
\tfield:unsigned int num_sge;\toffset:16;\tsize:4;\tsigned:0;
\tfield:u32 inv_rkey;\toffset:20;\tsize:4;\tsigned:0;

print fmt: \"cq_id=%u cid=%d num_sge=%u inv_rkey=0x%08x\", REC->cq_id, REC->completion_id, REC->num_sge, REC->inv_rkey
";

fn record(id: u16, fields: &[(usize, &[u8])], len: usize) -> Vec<u8> {
    let mut data = vec![0u8; len];
    data[0..2].copy_from_slice(&id.to_ne_bytes());
    for (off, b) in fields {
        data[*off..*off + b.len()].copy_from_slice(b);
    }
    data
}

fn framed(kind: u8, id: u16, ts: u64, tid: u32, data: &[u8]) -> Vec<u8> {
    let mut v = vec![0u8; HEADER_LEN];
    v[0] = RECORD_VERSION;
    v[1] = kind;
    v[2..4].copy_from_slice(&id.to_ne_bytes());
    v[8..16].copy_from_slice(&ts.to_ne_bytes());
    v[16..24].copy_from_slice(&((u64::from(tid) << 32) | u64::from(tid)).to_ne_bytes());
    v[24..26].copy_from_slice(&(data.len() as u16).to_ne_bytes());
    v.extend_from_slice(data);
    v
}

#[test]
fn parse_format_file() {
    let f = Format::parse("rpcrdma", POST_SEND).unwrap();
    assert_eq!(f.name, "svcrdma_post_send");
    assert_eq!(f.id, 1701);
    assert_eq!(f.fields.len(), 8);
    let inv = f.field("inv_rkey").unwrap();
    assert_eq!((inv.offset, inv.size, inv.signed), (20, 4, false));
    assert_eq!(inv.ctype, "u32");
    assert!(f.field("completion_id").unwrap().signed);
    assert_eq!(f.fixed_len(), 24);
}

#[test]
fn parse_array_and_data_loc_fields() {
    let f = parse_field("field:__data_loc char[] addr;\toffset:16;\tsize:4;\tsigned:0;").unwrap();
    assert_eq!(
        (f.name.as_str(), f.data_loc, f.array),
        ("addr", true, false)
    );
    let f =
        parse_field("field:unsigned char srcaddr[28];\toffset:24;\tsize:28;\tsigned:0;").unwrap();
    assert_eq!(
        (f.name.as_str(), f.data_loc, f.array, f.size),
        ("srcaddr", false, true, 28)
    );
    assert!(parse_field("field:int x;\toffset:;\tsize:4;").is_none());
}

#[test]
fn bad_format_is_an_error() {
    assert!(Format::parse("x", "name: a\nformat:\n").is_err());
    let e = Format::parse("x", "ID: 9\n").unwrap_err();
    assert_eq!(e.to_string(), "tracepoint format: no name line");
}

#[test]
fn decode_server_post_send_with_invalidate() {
    let mut set = FormatSet::default();
    set.insert(Format::parse("rpcrdma", POST_SEND).unwrap());
    let mut d = Decoder::new(set, 1_000);
    let data = record(
        1701,
        &[
            (8, &3u32.to_ne_bytes()),
            (12, &72i32.to_ne_bytes()),
            (16, &1u32.to_ne_bytes()),
            (20, &0x1234u32.to_ne_bytes()),
        ],
        256,
    );
    let p = d.decode(&framed(1, 1701, 5_000, 353, &data)).unwrap();
    assert_eq!(p.meta.seq, 1);
    assert_eq!(p.meta.ts_ns, 6_000);
    assert_eq!(p.meta.tid, 353);
    assert_eq!(
        p.event,
        ProbeEvent::ServerPostSend {
            cid: Cid { cq_id: 3, cid: 72 },
            inv_rkey: Some(0x1234)
        }
    );
    // inv_rkey 0 is a plain Send.
    let data = record(1701, &[(8, &3u32.to_ne_bytes())], 256);
    let p = d.decode(&framed(1, 1701, 5_000, 353, &data)).unwrap();
    assert!(matches!(
        p.event,
        ProbeEvent::ServerPostSend { inv_rkey: None, .. }
    ));
    assert_eq!(d.counts().get("svcrdma_post_send"), Some(&2));
}

#[test]
fn missing_field_is_none_not_garbage() {
    // A kernel whose post_send has no inv_rkey still decodes.
    let text = POST_SEND.replace(
        "\tfield:u32 inv_rkey;\toffset:20;\tsize:4;\tsigned:0;\n",
        "",
    );
    let mut set = FormatSet::default();
    set.insert(Format::parse("rpcrdma", &text).unwrap());
    let mut d = Decoder::new(set, 0);
    let data = record(1701, &[(8, &3u32.to_ne_bytes())], 256);
    let p = d.decode(&framed(1, 1701, 0, 1, &data)).unwrap();
    assert!(matches!(
        p.event,
        ProbeEvent::ServerPostSend { inv_rkey: None, .. }
    ));
}

#[test]
fn decode_errors() {
    let mut d = Decoder::new(FormatSet::default(), 0);
    assert_eq!(d.decode(&[1, 2]), Err(DecodeError::Truncated { len: 2 }));
    let mut v = framed(1, 7, 0, 0, &[0; 8]);
    assert_eq!(d.decode(&v), Err(DecodeError::UnknownEvent(7)));
    v[0] = 9;
    assert_eq!(d.decode(&v), Err(DecodeError::Version(9)));
    v[0] = RECORD_VERSION;
    v[1] = 7;
    assert_eq!(d.decode(&v), Err(DecodeError::Kind(7)));
    assert_eq!(
        DecodeError::UnknownEvent(7).to_string(),
        "probe record: no format for event id 7"
    );
}

#[test]
fn decode_private_data_kprobe() {
    let mut d = Decoder::new(FormatSet::default(), 0);
    let pd = [0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3];
    let p = d
        .decode(&framed(2, KprobeId::Connect as u16, 0, 1, &pd))
        .unwrap();
    assert_eq!(
        p.event,
        ProbeEvent::PrivateData {
            which: KprobeId::Connect,
            bytes: pd.to_vec()
        }
    );
}

#[test]
fn sockaddrs() {
    let mut b = [0u8; 28];
    b[0..2].copy_from_slice(&2u16.to_ne_bytes());
    b[2..4].copy_from_slice(&20049u16.to_be_bytes());
    b[4..8].copy_from_slice(&[10, 99, 0, 1]);
    assert_eq!(parse_sockaddr(&b), Some("10.99.0.1:20049".parse().unwrap()));
    b[0..2].copy_from_slice(&10u16.to_ne_bytes());
    b[8..24].copy_from_slice(&Ipv6Addr::LOCALHOST.octets());
    assert_eq!(parse_sockaddr(&b), Some("[::1]:20049".parse().unwrap()));
    assert_eq!(parse_sockaddr(&[0; 3]), None);
}

/// `sunrpc:rpc_request` laid out as the TRACE_EVENT of Linux 5.10-6.12
/// declares it (two `__string`s after the fixed part).
const RPC_REQUEST: &str = "name: rpc_request
ID: 1800
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:unsigned int task_id;\toffset:8;\tsize:4;\tsigned:0;
\tfield:unsigned int client_id;\toffset:12;\tsize:4;\tsigned:0;
\tfield:int version;\toffset:16;\tsize:4;\tsigned:1;
\tfield:bool async;\toffset:20;\tsize:1;\tsigned:0;
\tfield:__data_loc char[] progname;\toffset:24;\tsize:4;\tsigned:0;
\tfield:__data_loc char[] procname;\toffset:28;\tsize:4;\tsigned:0;

print fmt: \"task:%u@%u %sv%d %s (%ssync)\", REC->task_id, REC->client_id, __get_str(progname), REC->version, __get_str(procname), REC->async ? \"a\": \"\"
";

#[test]
fn decode_rpc_request_names() {
    let mut set = FormatSet::default();
    set.insert(Format::parse("sunrpc", RPC_REQUEST).unwrap());
    let mut d = Decoder::new(set, 0);
    let loc = |off: u32, len: u32| ((len << 16) | off).to_ne_bytes();
    let data = record(
        1800,
        &[
            (8, &0x2au32.to_ne_bytes()),
            (12, &3u32.to_ne_bytes()),
            (16, &3i32.to_ne_bytes()),
            (24, &loc(32, 4)),
            (28, &loc(36, 5)),
            (32, b"nfs\0"),
            (36, b"READ\0"),
        ],
        256,
    );
    let p = d.decode(&framed(1, 1800, 0, 1, &data)).unwrap();
    assert_eq!(
        p.event,
        ProbeEvent::RpcRequest {
            task: TaskKey {
                task_id: 0x2a,
                client_id: 3
            },
            version: Some(3),
            program: Some("nfs".into()),
            procedure: Some("READ".into()),
        }
    );
    // A string that points past what was copied is unknown, not garbage.
    let data = record(1800, &[(8, &1u32.to_ne_bytes()), (28, &loc(250, 40))], 256);
    let p = d.decode(&framed(1, 1800, 0, 1, &data)).unwrap();
    assert!(matches!(
        p.event,
        ProbeEvent::RpcRequest {
            procedure: None,
            ..
        }
    ));
}

#[test]
fn only_the_naming_sunrpc_events_are_planned() {
    let mut set = FormatSet::default();
    set.insert(Format::parse("sunrpc", RPC_REQUEST).unwrap());
    set.insert(
        Format::parse(
            "sunrpc",
            &RPC_REQUEST
                .replace("name: rpc_request", "name: rpc_task_begin")
                .replace("ID: 1800", "ID: 1801"),
        )
        .unwrap(),
    );
    let p = Plan::all_of(&set, &SYSTEMS, &[], ProbeEvents::All);
    let names: Vec<_> = p
        .tracepoints
        .iter()
        .map(|(s, e, _)| format!("{s}:{e}"))
        .collect();
    assert_eq!(names, ["sunrpc:rpc_request"]);
}

#[test]
fn plan_and_absent_systems() {
    let mut set = FormatSet::default();
    set.insert(Format::parse("rpcrdma", POST_SEND).unwrap());
    let p = Plan::all_of(&set, &SYSTEMS, &["ib_cma".to_string()], ProbeEvents::Used);
    let names: Vec<_> = p
        .tracepoints
        .iter()
        .map(|(s, e, _)| format!("{s}:{e}"))
        .collect();
    assert_eq!(names, ["rpcrdma:svcrdma_post_send"]);
    assert_eq!(p.absent_systems, vec!["ib_cma".to_string()]);
    assert!(why_absent("ib_cma").contains("ib_cm"));
}

#[test]
fn systems_are_the_tables() {
    let mut from_table: Vec<&str> = Vec::new();
    for t in TRACEPOINTS.iter().filter(|t| t.system != "*") {
        if !from_table.contains(&t.system) {
            from_table.push(t.system);
        }
    }
    from_table.sort_unstable();
    let mut systems = SYSTEMS.to_vec();
    systems.sort_unstable();
    assert_eq!(from_table, systems);
}

#[test]
fn a_renamed_event_is_one_row() {
    // Linux 5.10's name for the server's receive completion finds the same
    // row, and so the same engine event, as 6.x's.
    let a = row_of("rpcrdma", "svcrdma_wc_recv");
    let b = row_of("rpcrdma", "svcrdma_wc_receive");
    assert!(std::ptr::eq(a, b));
    assert_eq!(a.use_, crate::engine::kernel::event::Use::Server);
    // An unknown event falls to the last row and is counted, whole.
    let other = row_of("rpcrdma", "svcrdma_something_new");
    assert!(std::ptr::eq(other, &TRACEPOINTS[TRACEPOINTS.len() - 1]));
    assert!(!other.per_rpc_unused);
    assert!(wanted("sunrpc", "svc_process") && !wanted("sunrpc", "rpc_task_begin"));
}
