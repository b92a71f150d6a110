//! The JSON objects every front end writes: one place for each schema.

use serde_json::json;

use crate::engine::{Anomaly, Transaction};

pub(crate) fn private_json(p: rdma_dissectors::rpcrdma_cm::CmPrivateData) -> serde_json::Value {
    match p.v1() {
        Some(v) => {
            json!({"version": 1, "remote_invalidate": v.remote_invalidate, "send_size": v.send_size, "recv_size": v.recv_size})
        }
        None => json!({"version": format!("{p:?}")}),
    }
}

/// One transaction as a JSON object (the `transactions --json` schema).
pub fn transaction_json(t: &Transaction) -> serde_json::Value {
    json!({
        "connection": t.connection.to_string(),
        "xid": t.xid,
        "backchannel": t.backchannel,
        "call_frame": t.call_frame,
        "reply_frame": t.reply_frame,
        "call_ts": t.call_ts_ns as f64 / 1e9,
        "program": t.program,
        "program_name": t.program_name,
        "version": t.version,
        "procedure": t.procedure,
        "proc": t.proc,
        "call_transfer": t.call_transfer,
        "reply_transfer": t.reply_transfer,
        "call_len": t.call_len,
        "reply_len": t.reply_len,
        "latency_us": t.latency_us,
        "credits_requested": t.credits_requested,
        "credits_granted": t.credits_granted,
        "in_flight_at_call": t.in_flight_at_call,
        "chunks": t.chunks,
        "remote_invalidated_rkey": t.remote_invalidated_rkey,
        "round_trips": t.round_trips,
        "responder_interrupts": t.responder_interrupts,
        "phases": t.phases,
        "reply_status": t.reply_status,
        "anomalies": t.anomalies,
    })
}

/// One anomaly as a JSON object (the `anomalies --json` schema).
pub fn anomaly_json(a: &Anomaly) -> serde_json::Value {
    json!({
        "kind": a.kind,
        "severity": a.kind.severity(),
        "rfc": a.kind.rfc(),
        "frames": a.frames,
        "connection": a.connection.map(|c| c.to_string()),
        "xid": a.xid,
        "message": a.message,
    })
}
