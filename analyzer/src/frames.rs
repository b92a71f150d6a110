//! `rdma-analyzer frames`: every frame's dissection, as text or JSON Lines.
//!
//! JSON keys follow the specs' field names in snake_case; numbers (R_Keys,
//! VAs, XIDs included) are JSON numbers so scripts can compare them.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use rdma_dissectors::ib::cm::CmMessage;
use rdma_dissectors::ib::icrc::IcrcStatus;
use rdma_dissectors::ip::Ip;
use rdma_dissectors::link::Link;
use rdma_dissectors::nfs;
use rdma_dissectors::oncrpc::{AcceptStat, MsgBody, RejectedReply, ReplyBody};
use rdma_dissectors::rpcrdma::{Body, RdmaError, RpcRdmaHeader};
use rdma_dissectors::rpcrdma_cm::CmPrivateData;
use rdma_dissectors::stack::{self, Dissection};
use serde_json::{json, Map, Value};

use crate::sources::pcap::PcapReader;

/// Prints every frame of `path`; returns exit status 2 when the file broke off.
///
/// # Errors
/// When the file cannot be opened or output cannot be written.
pub fn print(
    path: &Path,
    json: bool,
    rocev2_port: u16,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let mut reader =
        PcapReader::open(path).with_context(|| format!("reading {}", path.display()))?;
    let config = stack::Config::default().with_rocev2_port(rocev2_port);
    loop {
        match reader.next_packet() {
            Ok(Some(p)) => {
                let d = stack::dissect(p.link_type, p.data, &config);
                if json {
                    let v = frame_json(p.number, p.ts_ns, p.orig_len, &d);
                    serde_json::to_writer(&mut *out, &v)?;
                    writeln!(out)?;
                } else {
                    writeln!(out, "{}", frame_text(p.number, p.ts_ns, p.orig_len, &d))?;
                }
            }
            Ok(None) => return Ok(ExitCode::SUCCESS),
            Err(e) => {
                out.flush()?;
                eprintln!("rdma-analyzer: {e}");
                return Ok(ExitCode::from(2));
            }
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn gid(b: &[u8; 16]) -> String {
    std::net::Ipv6Addr::from(*b).to_string()
}

/// The JSON object of one frame.
pub fn frame_json(number: u64, ts_ns: u64, orig_len: u32, d: &Dissection<'_>) -> Value {
    let mut m = Map::new();
    m.insert("frame".into(), json!(number));
    m.insert("ts".into(), json!(ts_ns as f64 / 1e9));
    m.insert("len".into(), json!(orig_len));
    match d.link {
        Some(Link::Ethernet(e)) => {
            m.insert(
                "eth".into(),
                json!({"dst": mac(&e.destination), "src": mac(&e.source), "ether_type": e.ether_type,
                       "vlan": d.vlan.iter().flatten().map(|v| v.vid).collect::<Vec<_>>()}),
            );
        }
        Some(Link::LinuxSll(s)) => {
            m.insert(
                "sll".into(),
                json!({"packet_type": s.packet_type, "protocol": s.protocol}),
            );
        }
        Some(Link::LinuxSll2(s)) => {
            m.insert("sll2".into(), json!({"packet_type": s.packet_type, "protocol": s.protocol, "interface_index": s.interface_index}));
        }
        _ => {}
    }
    if let Some(ip) = d.ip {
        let v = match ip {
            Ip::V4(h) => {
                let h = h.fields();
                json!({"version": 4, "src": h.source.to_string(), "dst": h.destination.to_string(), "proto": h.protocol,
                                  "ttl": h.ttl, "dscp": h.dscp, "ecn": h.ecn, "len": h.total_len})
            }
            Ip::V6(h) => {
                let h = h.fields();
                json!({"version": 6, "src": h.source.to_string(), "dst": h.destination.to_string(), "proto": h.next_header,
                                  "hop_limit": h.hop_limit, "traffic_class": h.traffic_class, "flow_label": h.flow_label, "len": h.payload_len})
            }
        };
        m.insert("ip".into(), v);
    }
    if let Some(u) = d.udp {
        m.insert("udp".into(), json!({"src_port": u.source_port, "dst_port": u.destination_port, "length": u.length, "checksum": u.checksum}));
    }
    if let Some(l) = d.lrh {
        m.insert("lrh".into(), json!({"vl": l.vl, "lver": l.lver, "sl": l.sl, "lnh": l.lnh, "dlid": l.dlid, "packet_length": l.packet_length, "slid": l.slid}));
    }
    if let Some(g) = d.grh {
        m.insert(
            "grh".into(),
            json!({"ip_ver": g.ip_ver, "tclass": g.tclass, "flow_label": g.flow_label, "pay_len": g.pay_len, "nxt_hdr": g.nxt_hdr,
                   "hop_lmt": g.hop_lmt, "sgid": gid(&g.sgid), "dgid": gid(&g.dgid)}),
        );
    }
    if let Some(b) = d.bth() {
        m.insert(
            "bth".into(),
            json!({"opcode": b.opcode.0, "opcode_name": b.opcode.name(), "se": b.se, "m": b.m, "pad_count": b.pad_count, "tver": b.tver,
                   "p_key": b.p_key.get(), "fecn": b.fecn, "becn": b.becn, "dest_qp": b.dest_qp.get(), "ack_req": b.ack_req, "psn": b.psn.get()}),
        );
    }
    if let Some(h) = d.xrceth() {
        m.insert("xrceth".into(), json!({"xrc_srq": h.xrc_srq}));
    }
    if let Some(h) = d.deth() {
        m.insert(
            "deth".into(),
            json!({"q_key": h.q_key, "src_qp": h.src_qp.get()}),
        );
    }
    if let Some(h) = d.reth() {
        m.insert(
            "reth".into(),
            json!({"va": h.va, "r_key": h.r_key, "dma_length": h.dma_length}),
        );
    }
    if let Some(h) = d.atomiceth() {
        m.insert("atomiceth".into(), json!({"va": h.va, "r_key": h.r_key, "swap_add_data": h.swap_add_data, "compare_data": h.compare_data}));
    }
    if let Some(h) = d.aeth() {
        m.insert(
            "aeth".into(),
            json!({"syndrome": h.syndrome, "msn": h.msn, "kind": format!("{:?}", h.kind())}),
        );
    }
    if let Some(h) = d.atomicacketh() {
        m.insert(
            "atomicacketh".into(),
            json!({"orig_remote_data": h.orig_remote_data}),
        );
    }
    if let Some(h) = d.immdt() {
        m.insert("immdt".into(), json!({"imm": h.imm}));
    }
    if let Some(h) = d.ieth() {
        m.insert("ieth".into(), json!({"r_key": h.r_key}));
    }
    if d.bth().is_some() {
        m.insert("payload_len".into(), json!(d.payload().len()));
    }
    if let Some(mad) = d.mad() {
        m.insert(
            "mad".into(),
            json!({"base_version": mad.base_version, "mgmt_class": mad.mgmt_class, "class_version": mad.class_version, "method": mad.method,
                   "status": mad.status, "transaction_id": mad.transaction_id, "attribute_id": mad.attribute_id, "attribute_modifier": mad.attribute_modifier}),
        );
    }
    if let Some(cm) = d.cm() {
        m.insert("cm".into(), cm_json(cm));
    }
    if let Some(c) = d.cma() {
        m.insert(
            "cma".into(),
            json!({"cma_version": c.cma_version, "ip_version": c.ip_version, "src_port": c.src_port, "src_addr": c.src_addr.to_string(), "dst_addr": c.dst_addr.to_string()}),
        );
    }
    if let Some((off, p)) = d.rpcrdma_cm_private() {
        m.insert("rpcrdma_cm_private".into(), private_json(off, p));
    }
    if let Some(h) = &d.rpcrdma() {
        m.insert("rpcrdma".into(), rpcrdma_json(h));
    }
    if let Some(r) = &d.rpc() {
        let v = match &r.body {
            MsgBody::Call(c) => {
                let mut o = json!({"xid": r.xid, "msg_type": "call", "rpcvers": c.rpcvers, "program": c.prog, "version": c.vers, "procedure": c.proc,
                                   "cred_flavor": u32::from(c.cred.flavor), "cred_len": c.cred.body.len(),
                                   "verf_flavor": u32::from(c.verf.flavor), "verf_len": c.verf.body.len()});
                if let Some(a) = c.auth_sys() {
                    o["auth_sys"] = json!({"stamp": a.stamp, "machinename": String::from_utf8_lossy(a.machinename), "uid": a.uid, "gid": a.gid,
                                            "gids": a.gids().collect::<Vec<_>>()});
                }
                o
            }
            MsgBody::Reply(rb) => match rb {
                ReplyBody::Accepted { stat, .. } => {
                    let mut o = json!({"xid": r.xid, "msg_type": "reply", "reply_stat": "accepted", "accept_stat": format!("{:?}", stat.code())});
                    if let AcceptStat::ProgMismatch { low, high } = stat {
                        o["mismatch_low"] = json!(low);
                        o["mismatch_high"] = json!(high);
                    }
                    o
                }
                ReplyBody::Denied(rej) => match rej {
                    RejectedReply::RpcMismatch { low, high } => {
                        json!({"xid": r.xid, "msg_type": "reply", "reply_stat": "denied", "reject_stat": "rpc_mismatch", "mismatch_low": low, "mismatch_high": high})
                    }
                    RejectedReply::AuthError(a) => {
                        json!({"xid": r.xid, "msg_type": "reply", "reply_stat": "denied", "reject_stat": "auth_error", "auth_stat": format!("{a:?}")})
                    }
                    #[allow(unreachable_patterns)]
                    _ => json!({"xid": r.xid, "msg_type": "reply", "reply_stat": "denied"}),
                },
                #[allow(unreachable_patterns)]
                _ => json!({"xid": r.xid, "msg_type": "reply"}),
            },
            #[allow(unreachable_patterns)]
            _ => json!({"xid": r.xid}),
        };
        m.insert("rpc".into(), v);
    }
    if let Some(n) = &d.nfs() {
        let ops: Vec<&str> = n
            .ops()
            .iter()
            .map(|&o| nfs::op_name(o).unwrap_or("?"))
            .collect();
        m.insert(
            "nfs".into(),
            json!({"program": n.program, "procedure": n.procedure, "ops": ops, "op_count": n.op_count, "ops_complete": n.ops_complete}),
        );
    }
    if let Some(s) = d.icrc {
        m.insert(
            "icrc".into(),
            json!(match s {
                IcrcStatus::Valid => "valid",
                IcrcStatus::Invalid { .. } => "invalid",
                _ => "unchecked",
            }),
        );
    }
    if let Some(e) = d.stop {
        m.insert(
            "error".into(),
            json!({"layer": e.layer().name(), "offset": e.offset(), "message": e.to_string()}),
        );
    }
    Value::Object(m)
}

fn mac(b: &[u8; 6]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

fn private_json(offset: usize, p: CmPrivateData) -> Value {
    match p.v1() {
        Some(v) => {
            json!({"offset": offset, "version": v.version, "remote_invalidate": v.remote_invalidate, "send_size": v.send_size, "recv_size": v.recv_size})
        }
        None => json!({"offset": offset, "version": format!("{p:?}"), "unknown_version": true}),
    }
}

fn seg(h: u32, l: u32, o: u64) -> Value {
    json!({"handle": h, "length": l, "offset": o})
}

fn rpcrdma_json(h: &RpcRdmaHeader<'_>) -> Value {
    let mut o = json!({"xid": h.xid.0, "vers": h.vers, "credits": h.credits, "proc": h.proc.name().unwrap_or("unknown"), "header_len": h.header_len()});
    if let Some(c) = h.chunks() {
        o["read_list"] = Value::Array(
            c.read_list()
                .map(|r| json!({"position": r.position, "handle": r.segment.handle, "length": r.segment.length, "offset": r.segment.offset}))
                .collect(),
        );
        o["write_list"] = Value::Array(
            c.write_list()
                .map(|w| {
                    Value::Array(
                        w.segments()
                            .map(|s| seg(s.handle, s.length, s.offset))
                            .collect(),
                    )
                })
                .collect(),
        );
        o["reply_chunk"] = match c.reply_chunk() {
            Some(r) => Value::Array(
                r.segments()
                    .map(|s| seg(s.handle, s.length, s.offset))
                    .collect(),
            ),
            None => Value::Null,
        };
    }
    match h.body {
        Body::Msgp { align, thresh, .. } => {
            o["align"] = json!(align);
            o["thresh"] = json!(thresh);
            o["obsolete"] = json!(true);
        }
        Body::Done => o["obsolete"] = json!(true),
        Body::Error(e) => match e {
            RdmaError::Vers { low, high } => {
                o["err"] = json!("ERR_VERS");
                o["vers_low"] = json!(low);
                o["vers_high"] = json!(high);
            }
            RdmaError::Chunk => o["err"] = json!("ERR_CHUNK"),
            RdmaError::Unknown(v) => o["err"] = json!(v),
            #[allow(unreachable_patterns)]
            _ => {}
        },
        _ => {}
    }
    o
}

fn cm_json(cm: &CmMessage<'_>) -> Value {
    match cm {
        CmMessage::Req(r) => {
            json!({"message": "REQ", "local_comm_id": r.local_comm_id, "service_id": r.service_id.0,
            "local_ca_guid": r.local_ca_guid, "local_q_key": r.local_q_key, "local_qpn": r.local_qpn.get(),
            "responder_resources": r.responder_resources, "initiator_depth": r.initiator_depth,
            "remote_cm_response_timeout": r.remote_cm_response_timeout, "transport_service_type": r.transport_service_type,
            "end_to_end_flow_control": r.end_to_end_flow_control, "starting_psn": r.starting_psn.get(),
            "local_cm_response_timeout": r.local_cm_response_timeout, "retry_count": r.retry_count, "p_key": r.p_key.get(),
            "path_packet_payload_mtu": r.path_packet_payload_mtu, "rnr_retry_count": r.rnr_retry_count,
            "max_cm_retries": r.max_cm_retries, "srq": r.srq, "private_data": hex(r.private_data)})
        }
        CmMessage::Rep(r) => {
            json!({"message": "REP", "local_comm_id": r.local_comm_id, "remote_comm_id": r.remote_comm_id,
            "local_q_key": r.local_q_key, "local_qpn": r.local_qpn.get(), "starting_psn": r.starting_psn.get(),
            "responder_resources": r.responder_resources, "initiator_depth": r.initiator_depth, "target_ack_delay": r.target_ack_delay,
            "failover_accepted": r.failover_accepted, "end_to_end_flow_control": r.end_to_end_flow_control,
            "rnr_retry_count": r.rnr_retry_count, "srq": r.srq, "local_ca_guid": r.local_ca_guid, "private_data": hex(r.private_data)})
        }
        CmMessage::Rej(r) => {
            json!({"message": "REJ", "local_comm_id": r.local_comm_id, "remote_comm_id": r.remote_comm_id,
            "message_rejected": r.message_rejected, "reason": r.reason.0, "reason_name": r.reason.name(), "ari": hex(r.ari), "private_data": hex(r.private_data)})
        }
        CmMessage::Rtu(r) => {
            json!({"message": "RTU", "local_comm_id": r.local_comm_id, "remote_comm_id": r.remote_comm_id})
        }
        CmMessage::Dreq(r) => {
            json!({"message": "DREQ", "local_comm_id": r.local_comm_id, "remote_comm_id": r.remote_comm_id, "remote_qpn_eecn": r.remote_qpn_eecn})
        }
        CmMessage::Drep(r) => {
            json!({"message": "DREP", "local_comm_id": r.local_comm_id, "remote_comm_id": r.remote_comm_id})
        }
        CmMessage::Mra(r) => {
            json!({"message": "MRA", "local_comm_id": r.local_comm_id, "remote_comm_id": r.remote_comm_id,
            "message_mraed": r.message_mraed, "service_timeout": r.service_timeout})
        }
        CmMessage::SidrReq(r) => {
            json!({"message": "SIDR_REQ", "request_id": r.request_id, "service_id": r.service_id.0, "p_key": r.p_key.get()})
        }
        CmMessage::SidrRep(r) => {
            json!({"message": "SIDR_REP", "request_id": r.request_id, "status": r.status, "qpn": r.qpn.get(),
            "service_id": r.service_id.0, "q_key": r.q_key})
        }
        CmMessage::Lap(r) => {
            json!({"message": "LAP", "local_comm_id": r.local_comm_id, "remote_comm_id": r.remote_comm_id})
        }
        CmMessage::Apr(r) => {
            json!({"message": "APR", "local_comm_id": r.local_comm_id, "remote_comm_id": r.remote_comm_id, "ar_status": r.ar_status})
        }
        CmMessage::Unknown { attribute_id, .. } => {
            json!({"message": "unknown", "attribute_id": attribute_id})
        }
        #[allow(unreachable_patterns)]
        _ => json!({"message": "unknown"}),
    }
}

/// One line of text for a frame.
pub fn frame_text(number: u64, ts_ns: u64, orig_len: u32, d: &Dissection<'_>) -> String {
    let mut s = format!("{number:>6} {:.6} {orig_len:>5}", ts_ns as f64 / 1e9);
    if let Some(ip) = d.ip {
        s.push_str(&format!(" {} > {}", ip.source(), ip.destination()));
    }
    if let Some(b) = d.bth() {
        s.push_str(&format!(
            " | {} qp {:#x} psn {:#x}",
            b.opcode.name(),
            b.dest_qp.get(),
            b.psn.get()
        ));
        if b.ack_req {
            s.push_str(" A");
        }
    }
    if let Some(r) = d.reth() {
        s.push_str(&format!(
            " | RETH va {:#x} rkey {:#x} len {}",
            r.va, r.r_key, r.dma_length
        ));
    }
    if let Some(a) = d.aeth() {
        s.push_str(&format!(" | AETH {:?} msn {}", a.kind(), a.msn));
    }
    if let Some(i) = d.ieth() {
        s.push_str(&format!(" | IETH rkey {:#x}", i.r_key));
    }
    if let Some(cm) = d.cm() {
        let v = cm_json(cm);
        s.push_str(&format!(" | CM {}", v["message"].as_str().unwrap_or("?")));
        if let Some(q) = v.get("local_qpn") {
            s.push_str(&format!(" qpn {q}"));
        }
    }
    if let Some(c) = d.cma() {
        s.push_str(&format!(
            " | CMA {}:{} > {}",
            c.src_addr, c.src_port, c.dst_addr
        ));
    }
    if let Some((_, p)) = d.rpcrdma_cm_private() {
        match p.v1() {
            Some(v) => s.push_str(&format!(
                " | RPC/RDMA private v1 R={} send {} recv {}",
                u8::from(v.remote_invalidate),
                v.send_size,
                v.recv_size
            )),
            None => s.push_str(" | RPC/RDMA private data of an unknown version"),
        }
    }
    if let Some(h) = &d.rpcrdma() {
        s.push_str(&format!(
            " | {} xid {:#010x} credits {}",
            h.proc.name().unwrap_or("?"),
            h.xid.0,
            h.credits
        ));
        if let Some(c) = h.chunks() {
            let (r, w, rc) = (c.read_count(), c.write_count(), c.reply_chunk().is_some());
            if r + w > 0 || rc {
                s.push_str(&format!(
                    " read {r} write {w} reply {}",
                    if rc { "yes" } else { "no" }
                ));
            }
        }
    }
    if let Some(r) = &d.rpc() {
        match &r.body {
            MsgBody::Call(c) => {
                let name = d.nfs().as_ref().and_then(|n| n.procedure).unwrap_or("?");
                s.push_str(&format!(" | RPC call prog {} v{} {name}", c.prog, c.vers));
                if let Some(n) = &d.nfs() {
                    if !n.ops().is_empty() {
                        let ops: Vec<&str> = n
                            .ops()
                            .iter()
                            .map(|&o| nfs::op_name(o).unwrap_or("?"))
                            .collect();
                        s.push_str(&format!("({})", ops.join(",")));
                    }
                }
            }
            _ => s.push_str(" | RPC reply"),
        }
    }
    if let Some(IcrcStatus::Invalid { found, computed }) = d.icrc {
        s.push_str(&format!(
            " | BAD ICRC {found:#010x} (expected {computed:#010x})"
        ));
    }
    if let Some(e) = d.stop {
        s.push_str(&format!(" | ERROR {e}"));
    }
    s
}
