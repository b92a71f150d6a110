use super::*;

/// The variant's name; no wildcard, so an event added to the engine fails
/// to compile here until [`every_event`] has one of it.
fn name_of(e: &ProbeEvent) -> &'static str {
    match e {
        ProbeEvent::Marshal { .. } => "Marshal",
        ProbeEvent::MarshalFailed { .. } => "MarshalFailed",
        ProbeEvent::ClientChunk { .. } => "ClientChunk",
        ProbeEvent::ClientPostSend { .. } => "ClientPostSend",
        ProbeEvent::Reply { .. } => "Reply",
        ProbeEvent::DecodeSeg { .. } => "DecodeSeg",
        ProbeEvent::RemoteInv { .. } => "RemoteInv",
        ProbeEvent::LocalInv { .. } => "LocalInv",
        ProbeEvent::ClientConnect { .. } => "ClientConnect",
        ProbeEvent::InlineThresh { .. } => "InlineThresh",
        ProbeEvent::DecodeRqst { .. } => "DecodeRqst",
        ProbeEvent::ServerDecodeSeg { .. } => "ServerDecodeSeg",
        ProbeEvent::EncodeWseg { .. } => "EncodeWseg",
        ProbeEvent::ServerPostSend { .. } => "ServerPostSend",
        ProbeEvent::PostChunk { .. } => "PostChunk",
        ProbeEvent::RecvCompleted(_) => "RecvCompleted",
        ProbeEvent::ReadCompleted(_) => "ReadCompleted",
        ProbeEvent::WriteCompleted(_) => "WriteCompleted",
        ProbeEvent::Completed(_) => "Completed",
        ProbeEvent::Cm { .. } => "Cm",
        ProbeEvent::IbCm { .. } => "IbCm",
        ProbeEvent::RpcRequest { .. } => "RpcRequest",
        ProbeEvent::SvcProcess { .. } => "SvcProcess",
        ProbeEvent::RpcStats { .. } => "RpcStats",
        ProbeEvent::SvcStats { .. } => "SvcStats",
        ProbeEvent::PrivateData { .. } => "PrivateData",
        ProbeEvent::Error { .. } => "Error",
        ProbeEvent::Other => "Other",
    }
}

const NAMES: usize = 28;

fn task() -> TaskKey {
    TaskKey {
        task_id: 4_000_000_000,
        client_id: 7,
    }
}

fn cid() -> Cid {
    Cid { cq_id: 3, cid: -17 }
}

fn completion(status: Option<i64>) -> Completion {
    Completion {
        cid: cid(),
        status,
        bytes: Some(u64::MAX),
    }
}

/// One of each event, with the values that are hardest to read back:
/// extremes, negatives, `None`s, strings with quotes and non-ASCII, IPv6.
fn every_event() -> Vec<ProbeEvent> {
    vec![
        ProbeEvent::Marshal {
            task: task(),
            xid: u32::MAX,
            rtype: ChunkType::LongCall,
            wtype: ChunkType::Unknown(-3),
            hdrlen: Some(28),
            xdrlen: None,
        },
        ProbeEvent::MarshalFailed {
            task: task(),
            xid: None,
            ret: Some(-5),
        },
        ProbeEvent::ClientChunk {
            task: task(),
            kind: SegKind::Read { position: 0 },
            handle: 0x1234_5678,
            length: 4096,
            offset: u64::MAX,
        },
        ProbeEvent::ClientPostSend {
            task: Some(task()),
            cid: None,
        },
        ProbeEvent::Reply {
            task: task(),
            xid: 1,
            credits: 128,
        },
        ProbeEvent::DecodeSeg {
            handle: 9,
            length: 0,
            offset: 0,
        },
        ProbeEvent::RemoteInv {
            task: None,
            handle: 2,
        },
        ProbeEvent::LocalInv {
            task: Some(task()),
            handle: 3,
        },
        ProbeEvent::ClientConnect {
            step: ConnectStep::Disconnected,
            peer: Some("10.99.0.2 \"port\" 20049, ünïcode\n\\".into()),
            rc: Some(-111),
        },
        ProbeEvent::InlineThresh {
            send: Some(4096),
            recv: None,
        },
        ProbeEvent::DecodeRqst {
            cid: cid(),
            xid: 77,
            vers: 1,
            proc: 0,
            credits: 32,
            hdrlen: None,
        },
        ProbeEvent::ServerDecodeSeg {
            cid: Some(cid()),
            kind: SegKind::Write,
            handle: 4,
            length: 5,
            offset: 6,
        },
        ProbeEvent::EncodeWseg {
            cid: None,
            handle: 4,
            length: 5,
            offset: 6,
        },
        ProbeEvent::ServerPostSend {
            cid: cid(),
            inv_rkey: Some(0xdead_beef),
        },
        ProbeEvent::PostChunk {
            kind: Some(SegKind::Reply),
            cid: cid(),
            sqecount: None,
        },
        ProbeEvent::RecvCompleted(completion(Some(0))),
        ProbeEvent::ReadCompleted(completion(None)),
        ProbeEvent::WriteCompleted(completion(Some(-1))),
        ProbeEvent::Completed(completion(Some(12))),
        ProbeEvent::Cm {
            cm_id: Some(1),
            src: Some("[fe80::1]:20049".parse().expect("an address")),
            dst: Some("10.99.0.2:20049".parse().expect("an address")),
            cm_event: None,
            status: Some(-110),
            qpn: Some(0x11),
        },
        ProbeEvent::IbCm {
            local_id: None,
            remote_id: Some(2),
            local_qpn: Some(3),
            remote_qpn: None,
        },
        ProbeEvent::RpcRequest {
            task: task(),
            version: Some(3),
            program: Some("nfs".into()),
            procedure: Some("READ".into()),
        },
        ProbeEvent::SvcProcess {
            xid: 5,
            version: Some(4),
            proc: Some(1),
            service: Some("nfsd".into()),
            procedure: None,
        },
        ProbeEvent::RpcStats {
            task: task(),
            xid: 6,
            version: Some(3),
            program: Some("nfs".into()),
            procedure: Some("WRITE".into()),
            backlog_us: Some(0),
            rtt_us: Some(1234),
            execute_us: None,
        },
        ProbeEvent::SvcStats {
            xid: 8,
            execute_us: Some(99),
        },
        ProbeEvent::PrivateData {
            which: KprobeId::Accept,
            bytes: vec![0xf6, 0, 1, 255],
        },
        ProbeEvent::Error { status: None },
        ProbeEvent::Other,
    ]
}

#[test]
fn every_event_reads_back_as_it_was_recorded() {
    let events = every_event();
    let mut names: Vec<&str> = events.iter().map(name_of).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), NAMES, "one of each event: {names:?}");
    for (i, event) in events.into_iter().enumerate() {
        let p = Probe {
            meta: ProbeMeta {
                seq: i as u64 + 1,
                ts_ns: 1_700_000_000_000_000_000 + i as u64,
                cpu: 3,
                tid: 4_242,
            },
            event,
        };
        let text = format(&p);
        assert_eq!(
            parse(&text, p.meta.ts_ns, p.meta.seq).as_ref(),
            Ok(&p),
            "{text}"
        );
    }
}

#[test]
fn a_field_an_older_dump_lacks_is_unknown_and_a_damaged_record_says_where() {
    let p = parse("cpu 0 tid 9: InlineThresh { send: Some(1024) }", 5, 6);
    assert_eq!(
        p.map(|p| p.event),
        Ok(ProbeEvent::InlineThresh {
            send: Some(1024),
            recv: None
        })
    );
    // A field that is not optional has to be there.
    let e = parse("cpu 0 tid 9: Reply { xid: 1, credits: 2 }", 5, 6).unwrap_err();
    assert!(e.contains("task"), "{e}");
    for bad in [
        "",
        "Marshal { }",
        "cpu 0 tid 9: Marshal {",
        "cpu 0 tid 9: Reply { task: TaskKey { task_id: 1, client_id: 2 }, xid: x, credits: 2 }",
        "cpu 0 tid 9: Teleport { at: 1 }",
        "cpu 0 tid 9: Other trailing",
        "cpu 0 tid 9: ClientConnect { step: Closed, peer: Some(\"unterminated), rc: None }",
    ] {
        assert!(parse(bad, 0, 0).is_err(), "{bad:?} read as a record");
    }
}

/// A dump is input: a record nested a million levels deep is an error that
/// says where, not a stack overflow that aborts the analyzer.
#[test]
fn a_record_nested_without_end_is_an_error() {
    for open in ["[", "Some(", "S { a: "] {
        let text = format!("cpu 0 tid 9: Reply {{ task: {} }}", open.repeat(1_000_000));
        let e = parse(&text, 0, 0).unwrap_err();
        assert!(e.contains("nested deeper than"), "{open}: {e}");
    }
}
