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
        _ if field == "infiniband.ieth" || field == "infiniband.immdt" => {
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
    for f in ["se", "m", "ack_req"] {
        if let Some(b) = v.pointer(&format!("/bth/{f}")).and_then(Value::as_bool) {
            v["bth"][f] = Value::from(u64::from(b));
        }
    }
    v
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

#[test]
fn frames_json_agrees_with_tshark_on_real_captures() {
    if !prereq::tshark() {
        return;
    }
    let pcaps = prereq::bundled_pcaps();
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
                let later_packet = v
                    .pointer("/bth/opcode_name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| n.contains("Last") || n.contains("Middle"));
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
    ] {
        assert!(
            compared.get(must).copied().unwrap_or(0) > 0,
            "no frame compared {must}"
        );
    }
}
