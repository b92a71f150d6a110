//! `frames --json` against tshark, an independent dissector, on every frame
//! of the real captures: every field both decode must agree.
//!
//! Skipped (with a message) when tshark is not installed; the README's test
//! command installs it, so CI always runs it.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

#[path = "common/exact.rs"]
mod exact;
#[path = "common/prereq.rs"]
mod prereq;

/// (tshark field, JSON pointer into our frame object). tshark's value is
/// parsed as a number (decimal, 0x-hex or bare hex for IETH) or a boolean.
const FIELDS: &[(&str, &str)] = &[
    ("infiniband.bth.opcode", "/bth/opcode"),
    ("infiniband.bth.se", "/bth/se"),
    ("infiniband.bth.m", "/bth/m"),
    ("infiniband.bth.padcnt", "/bth/pad_count"),
    ("infiniband.bth.tver", "/bth/tver"),
    ("infiniband.bth.p_key", "/bth/p_key"),
    ("infiniband.bth.destqp", "/bth/dest_qp"),
    ("infiniband.bth.a", "/bth/ack_req"),
    ("infiniband.bth.psn", "/bth/psn"),
    ("infiniband.deth.q_key", "/deth/q_key"),
    ("infiniband.deth.srcqp", "/deth/src_qp"),
    ("infiniband.reth.va", "/reth/va"),
    ("infiniband.reth.r_key", "/reth/r_key"),
    ("infiniband.reth.dmalen", "/reth/dma_length"),
    ("infiniband.aeth.syndrome", "/aeth/syndrome"),
    ("infiniband.aeth.msn", "/aeth/msn"),
    ("infiniband.ieth", "/ieth/r_key"),
    ("infiniband.immdt", "/immdt/imm"),
    ("infiniband.mad.mgmtclass", "/mad/mgmt_class"),
    ("infiniband.mad.method", "/mad/method"),
    ("infiniband.mad.transactionid", "/mad/transaction_id"),
    ("infiniband.mad.attributeid", "/mad/attribute_id"),
    ("infiniband.cm.req.serviceid", "/cm/service_id"),
    ("infiniband.cm.req.localqpn", "/cm/local_qpn"),
    ("infiniband.cm.req.startpsn", "/cm/starting_psn"),
    ("infiniband.cm.rep.localqpn", "/cm/local_qpn"),
    ("infiniband.cm.rep.remotecommid", "/cm/remote_comm_id"),
    ("infiniband.cm.rep.startpsn", "/cm/starting_psn"),
    ("infiniband.cm.rtu.localcommid", "/cm/local_comm_id"),
    ("infiniband.cm.rtu.remotecommid", "/cm/remote_comm_id"),
    ("infiniband.cm.dreq.localcommid", "/cm/local_comm_id"),
    ("infiniband.cm.dreq.remotecommid", "/cm/remote_comm_id"),
    ("infiniband.cm.drsp.localcommid", "/cm/local_comm_id"),
    ("infiniband.cm.drsp.remotecommid", "/cm/remote_comm_id"),
    ("rpcordma.xid", "/rpcrdma/xid"),
    ("rpcordma.version", "/rpcrdma/vers"),
    ("rpcordma.flow_control", "/rpcrdma/credits"),
    ("rpcordma.msg_type", "/rpcrdma/proc_num"),
    ("rpcordma.rdma_handle", "/rpcrdma/handles"),
    ("rpcordma.rdma_length", "/rpcrdma/lengths"),
    ("rpcordma.rdma_offset", "/rpcrdma/offsets"),
    ("rpcordma.position", "/rpcrdma/positions"),
    ("rpc.xid", "/rpc/xid"),
    ("rpc.msgtyp", "/rpc/msg_type_num"),
    ("rpc.program", "/rpc/program"),
    ("rpc.programversion", "/rpc/version"),
    ("rpc.procedure", "/rpc/procedure"),
    // iWARP. MPA setup frames are one per frame; the FPDU fields are
    // lists, one value per FPDU of the segment (normalise builds /iw).
    ("iwarp_mpa.marker_flag", "/iwarp/mpa/markers"),
    ("iwarp_mpa.crc_flag", "/iwarp/mpa/crc"),
    ("iwarp_mpa.rej_flag", "/iwarp/mpa/reject"),
    ("iwarp_mpa.res", "/iwarp/mpa/res"),
    ("iwarp_mpa.rev", "/iwarp/mpa/rev"),
    ("iwarp_mpa.pdlength", "/iwarp/mpa/pd_length"),
    ("iwarp_mpa.ulpdulength", "/iw/ulpdu_length"),
    ("iwarp_mpa.crc", "/iw/crc_value"),
    ("iwarp_ddp.tagged_flag", "/iw/tagged"),
    ("iwarp_ddp.last_flag", "/iw/last"),
    ("iwarp_ddp.rsvd", "/iw/rsvd"),
    ("iwarp_ddp.dv", "/iw/dv"),
    ("iwarp_ddp.rsvdulp", "/iw/rsvdulp"),
    ("iwarp_ddp.stag", "/iw/stag"),
    ("iwarp_ddp.tagged_offset", "/iw/to"),
    ("iwarp_ddp.qn", "/iw/qn"),
    ("iwarp_ddp.msn", "/iw/msn"),
    ("iwarp_ddp.mo", "/iw/mo"),
    ("iwarp_rdma.version", "/iw/version"),
    ("iwarp_rdma.rsv", "/iw/rsv"),
    ("iwarp_rdma.opcode", "/iw/opcode"),
    ("iwarp_rdma.inval_stag", "/iw/inval_stag"),
    ("iwarp_rdma.sinkstag", "/iw/sink_stag"),
    ("iwarp_rdma.sinkto", "/iw/sink_to"),
    ("iwarp_rdma.rdmardsz", "/iw/rdmardsz"),
    ("iwarp_rdma.srcstag", "/iw/src_stag"),
    ("iwarp_rdma.srcto", "/iw/src_to"),
    ("iwarp_rdma.term_layer", "/iw/term_layer"),
    ("iwarp_rdma.term_etype", "/iw/term_etype"),
    ("iwarp_rdma.term_errcode", "/iw/term_errcode"),
];

/// Fields whose layer tshark also decodes inside reassembled data that is
/// not the frame's own header (RPC messages rebuilt from read/reply chunks):
/// only the first occurrence is the frame's own.
const FIRST_ONLY: &[&str] = &[
    "rpc.xid",
    "rpc.msgtyp",
    "rpc.program",
    "rpc.programversion",
    "rpc.procedure",
    "infiniband.ieth",
];

fn parse_num(field: &str, s: &str) -> Option<Value> {
    let s = s.trim();
    match s {
        "" => None,
        "True" | "true" => Some(Value::from(1u64)),
        "False" | "false" => Some(Value::from(0u64)),
        _ if field == "infiniband.ieth"
            || field == "infiniband.immdt"
            || field == "iwarp_ddp.rsvdulp" =>
        {
            u64::from_str_radix(s.trim_start_matches("0x"), 16)
                .ok()
                .map(Value::from)
        }
        _ => match s.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).ok().map(Value::from),
            None => s.parse::<u64>().ok().map(Value::from),
        },
    }
}

/// Our JSON, with the derived lists the comparison needs.
fn normalise(mut v: Value) -> Value {
    if let Some(r) = v.get("rpcrdma").cloned() {
        let procs = [
            "RDMA_MSG",
            "RDMA_NOMSG",
            "RDMA_MSGP",
            "RDMA_DONE",
            "RDMA_ERROR",
        ];
        let proc_num = procs.iter().position(|p| r["proc"] == *p).map(|n| n as u64);
        let mut handles = vec![];
        let mut lengths = vec![];
        let mut offsets = vec![];
        let mut positions = vec![];
        let mut push = |s: &Value| {
            handles.push(s["handle"].clone());
            lengths.push(s["length"].clone());
            offsets.push(s["offset"].clone());
        };
        for s in r["read_list"].as_array().into_iter().flatten() {
            positions.push(s["position"].clone());
            push(s);
        }
        for c in r["write_list"].as_array().into_iter().flatten() {
            for s in c.as_array().into_iter().flatten() {
                push(s);
            }
        }
        for s in r["reply_chunk"].as_array().into_iter().flatten() {
            push(s);
        }
        let o = v["rpcrdma"].as_object_mut().unwrap();
        o.insert("proc_num".into(), proc_num.map_or(Value::Null, Value::from));
        o.insert("handles".into(), Value::from(handles));
        o.insert("lengths".into(), Value::from(lengths));
        o.insert("offsets".into(), Value::from(offsets));
        o.insert("positions".into(), Value::from(positions));
    }
    if let Some(r) = v.get_mut("rpc").and_then(Value::as_object_mut) {
        let t = if r.get("msg_type").and_then(Value::as_str) == Some("call") {
            0u64
        } else {
            1
        };
        r.insert("msg_type_num".into(), Value::from(t));
    }
    if let Some(fpdus) = v.pointer("/iwarp/fpdus").and_then(Value::as_array) {
        let iw = iwarp_lists(fpdus);
        v["iw"] = iw;
    }
    for f in ["markers", "crc", "reject"] {
        if let Some(b) = v
            .pointer(&format!("/iwarp/mpa/{f}"))
            .and_then(Value::as_bool)
        {
            v["iwarp"]["mpa"][f] = Value::from(u64::from(b));
        }
    }
    for f in ["se", "m", "ack_req"] {
        if let Some(b) = v.pointer(&format!("/bth/{f}")).and_then(Value::as_bool) {
            v["bth"][f] = Value::from(u64::from(b));
        }
    }
    v
}

/// One list per FPDU field, in FPDU order, as tshark's `occurrence=a`
/// gives them: a field an FPDU lacks (a tagged one's MSN) is left out.
fn iwarp_lists(fpdus: &[Value]) -> Value {
    let mut lists = serde_json::Map::new();
    let mut push = |k: &str, x: Option<&Value>| {
        let x = match x {
            Some(Value::Bool(b)) => Value::from(u64::from(*b)),
            Some(Value::Null) | None => return,
            Some(x) => x.clone(),
        };
        lists
            .entry(k)
            .or_insert_with(|| Value::Array(vec![]))
            .as_array_mut()
            .unwrap()
            .push(x);
    };
    for f in fpdus {
        push("ulpdu_length", f.get("ulpdu_length"));
        push("crc_value", f.get("crc_value"));
        let ddp = &f["ddp"];
        for k in [
            "tagged", "last", "rsvd", "dv", "stag", "to", "qn", "msn", "mo",
        ] {
            push(k, ddp.get(k));
        }
        let rdmap = &f["rdmap"];
        for k in ["version", "rsv", "opcode", "inval_stag"] {
            push(k, rdmap.get(k));
        }
        // tshark shows the RDMAP control octet and the four octets after
        // it as one byte string.
        if let (Some(ulp), Some(rv), Some(rsv), Some(op)) = (
            ddp.get("rsvd_ulp").and_then(exact::num),
            rdmap["version"].as_u64(),
            rdmap["rsv"].as_u64(),
            rdmap["opcode"].as_u64(),
        ) {
            let control = rv << 6 | rsv << 4 | op;
            push("rsvdulp", Some(&Value::from(control << 32 | ulp)));
        }
        let rr = &rdmap["read_request"];
        for k in ["sink_stag", "sink_to", "rdmardsz", "src_stag", "src_to"] {
            push(k, rr.get(k));
        }
        let t = &rdmap["terminate"];
        push("term_layer", t.get("layer"));
        push("term_etype", t.get("etype"));
        push("term_errcode", t.get("code"));
    }
    Value::Object(lists)
}

fn tshark_rows(pcap: &Path) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(pcap).args([
        "-T",
        "fields",
        "-E",
        "separator=\t",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=,",
        "-e",
        "frame.number",
    ]);
    for (f, _) in FIELDS {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("run tshark");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

fn ours(pcap: &Path) -> BTreeMap<u64, Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_rdma-analyzer"))
        .arg("frames")
        .arg("--json")
        .arg(pcap)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "frames --json failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["frame"].as_u64().unwrap(), normalise(v))
        })
        .collect()
}

/// The real NFS-over-siw captures (captures/iwarp/).
fn iwarp_pcaps() -> Vec<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures/iwarp");
    let mut pcaps: Vec<_> = std::fs::read_dir(&dir)
        .expect("captures/iwarp/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcap"))
        .collect();
    pcaps.sort();
    assert!(!pcaps.is_empty(), "no captures in {}", dir.display());
    pcaps
}

#[test]
fn frames_json_agrees_with_tshark_on_real_captures() {
    if !prereq::tshark() {
        return;
    }
    let mut pcaps = prereq::bundled_pcaps();
    pcaps.extend(iwarp_pcaps());
    let mut compared = BTreeMap::<&str, u64>::new();
    let mut failures = Vec::new();
    for pcap in &pcaps {
        let ours = ours(pcap);
        for row in tshark_rows(pcap) {
            let frame: u64 = row[0].parse().unwrap();
            let Some(v) = ours.get(&frame) else {
                failures.push(format!(
                    "{}: frame {frame} missing from frames --json",
                    pcap.display()
                ));
                continue;
            };
            for (i, (field, ptr)) in FIELDS.iter().enumerate() {
                let raw = row.get(i + 1).map(String::as_str).unwrap_or("");
                if raw.is_empty() {
                    continue;
                }
                let mut theirs: Vec<Value> =
                    raw.split(',').filter_map(|s| parse_num(field, s)).collect();
                if FIRST_ONLY.contains(field) {
                    theirs.truncate(1);
                }
                let mine = v.pointer(ptr);
                let mine: Vec<Value> = match mine {
                    Some(Value::Array(a)) => a.clone(),
                    Some(Value::Null) | None => vec![],
                    Some(x) => vec![x.clone()],
                };
                // VAs, R_Keys and the like are strings in our JSON (exact
                // for readers that use doubles): compare them as numbers.
                let mine: Vec<Value> = mine
                    .into_iter()
                    .map(|x| match &x {
                        Value::String(_) => exact::num(&x).map_or(x, Value::from),
                        _ => x,
                    })
                    .collect();
                if mine.is_empty() && field.starts_with("rpc.") {
                    // tshark reassembles RPC messages we deliberately leave
                    // to the engine (multi-packet Sends, chunk data).
                    continue;
                }
                if mine.is_empty()
                    && field.starts_with("iwarp_")
                    && v.pointer("/iwarp/kind").and_then(Value::as_str) == Some("continuation")
                {
                    // tshark reassembles an FPDU that spans segments and
                    // shows it on the segment that ends it; one frame alone
                    // cannot, and says it continues an earlier FPDU.
                    *compared
                        .entry("iwarp (FPDU across segments: continuation)")
                        .or_default() += 1;
                    continue;
                }
                let later_packet = v
                    .pointer("/bth/opcode_name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| n.contains("Last") || n.contains("Middle"))
                    || v.pointer("/iw/mo/0")
                        .and_then(Value::as_u64)
                        .is_some_and(|mo| mo > 0);
                if mine.is_empty() && field.starts_with("rpcordma.") && later_packet {
                    // tshark shows a multi-packet Send's header on its last
                    // packet (after reassembly); the stateless stack decodes
                    // it on the first, where it is on the wire.
                    *compared
                        .entry("rpcordma (on the first packet instead)")
                        .or_default() += 1;
                    continue;
                }
                *compared.entry(field).or_default() += 1;
                if mine != theirs {
                    failures.push(format!(
                        "{} frame {frame}: {field}: tshark {theirs:?}, ours {mine:?}",
                        pcap.file_name().unwrap().to_string_lossy()
                    ));
                }
            }
        }
    }
    eprintln!("fields compared: {compared:?}");
    assert!(
        failures.is_empty(),
        "{} disagreements, first ones:\n{}",
        failures.len(),
        failures
            .iter()
            .take(30)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    for must in [
        "infiniband.bth.psn",
        "infiniband.reth.r_key",
        "infiniband.aeth.msn",
        "infiniband.ieth",
        "infiniband.cm.req.localqpn",
        "rpcordma.xid",
        "rpcordma.rdma_handle",
        "rpc.program",
        "iwarp_mpa.rev",
        "iwarp_mpa.pdlength",
        "iwarp_mpa.ulpdulength",
        "iwarp_mpa.crc",
        "iwarp_ddp.stag",
        "iwarp_ddp.tagged_offset",
        "iwarp_ddp.msn",
        "iwarp_ddp.mo",
        "iwarp_ddp.rsvdulp",
        "iwarp_rdma.opcode",
        "iwarp_rdma.inval_stag",
        "iwarp_rdma.sinkstag",
        "iwarp_rdma.srcto",
        "iwarp_rdma.rdmardsz",
    ] {
        assert!(
            compared.get(must).copied().unwrap_or(0) > 0,
            "no frame compared {must}"
        );
    }
}
