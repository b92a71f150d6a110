//! `live` without a screen: transactions and anomalies as JSON Lines (or
//! text), the wire's and the kernels' views of each XID joined into one
//! record.

use std::collections::{HashMap, VecDeque};
use std::io::{self, Write};
use std::time::Instant;

use serde_json::{json, Value};

use super::json::{anomaly_json, transaction_json};
use super::lines::anomaly_line;
use crate::engine::{Engine, Finding, Origin, Transaction};
use crate::pipeline::{End, Flow, Notice, Progress, Sink};

/// The views of one XID held by the [`Merger`].
type Views = Vec<(Origin, Box<Transaction>)>;

/// Joins the wire's and the probes' views of one XID into one record:
/// the wire transaction is the base (the probes' fill what it lacks), and
/// each side's kernel view is kept under `"probes"`. Holds each XID for a
/// short window so the other views can arrive; bounded.
pub struct Merger {
    window_ns: u64,
    max: usize,
    pending: HashMap<u32, (u64, Views)>,
    order: VecDeque<(u64, u32)>,
}

impl Merger {
    /// A merger holding each XID for `window_ns`, at most `max` XIDs at once.
    pub fn new(window_ns: u64, max: usize) -> Merger {
        Merger {
            window_ns,
            max,
            pending: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    /// Adds a transaction seen at (local, monotonic) time `now_ns`.
    pub fn add(&mut self, t: Box<Transaction>, now_ns: u64, out: &mut Vec<Value>) {
        let o = t.origin;
        let xid = t.xid;
        match self.pending.get_mut(&xid) {
            Some((_, v)) if !v.iter().any(|(oo, _)| *oo == o) => v.push((o, t)),
            Some(_) => {
                // The same side saw this XID again (a retransmission or
                // a reused XID): emit what is held and start over.
                if let Some((_, v)) = self.pending.remove(&xid) {
                    out.push(merge(v));
                }
                self.pending.insert(xid, (now_ns, vec![(o, t)]));
                self.order.push_back((now_ns, xid));
            }
            None => {
                self.pending.insert(xid, (now_ns, vec![(o, t)]));
                self.order.push_back((now_ns, xid));
            }
        }
        while self.pending.len() > self.max {
            let Some((_, x)) = self.order.pop_front() else {
                break;
            };
            if let Some((_, v)) = self.pending.remove(&x) {
                out.push(merge(v));
            }
        }
    }

    /// Emits every XID held longer than the window (all when `now_ns` is `u64::MAX`).
    pub fn flush(&mut self, now_ns: u64, out: &mut Vec<Value>) {
        while let Some(&(t0, x)) = self.order.front() {
            if now_ns != u64::MAX && t0.saturating_add(self.window_ns) > now_ns {
                break;
            }
            self.order.pop_front();
            if let Some((t1, v)) = self.pending.remove(&x) {
                if t1 != t0 {
                    // Re-inserted later under the same XID: keep waiting.
                    self.pending.insert(x, (t1, v));
                    continue;
                }
                out.push(merge(v));
            }
        }
    }
}

fn kernel_view(t: &Transaction) -> Value {
    json!({
        "latency_us": t.latency_us,
        "credits_requested": if t.origin == Origin::ServerProbes { Some(t.credits_requested) } else { None },
        "credits_granted": t.credits_granted,
        "remote_invalidated_rkey": t.remote_invalidated_rkey,
        "chunks": t.chunks.iter().map(|c| json!({
            "kind": c.kind, "handle": c.handle, "length": c.length, "offset": c.offset,
            "reported_length": c.reported_length, "remotely_invalidated": c.remotely_invalidated,
        })).collect::<Vec<_>>(),
        "call_transfer": t.call_transfer,
        "reply_transfer": t.reply_transfer,
        "phases": t.phases,
        "in_flight_at_call": t.in_flight_at_call,
        "call_ts": t.call_ts_ns as f64 / 1e9,
        "anomalies": t.anomalies,
    })
}

fn merge(mut v: Vec<(Origin, Box<Transaction>)>) -> Value {
    v.sort_by_key(|(o, _)| *o as u8);
    let sources: Vec<&str> = v.iter().map(|(o, _)| o.as_str()).collect();
    let probes: serde_json::Map<String, Value> = v
        .iter()
        .filter(|(o, _)| *o != Origin::Wire)
        .map(|(o, t)| (o.as_str().to_string(), kernel_view(t)))
        .collect();
    let base = v
        .iter()
        .find(|(o, _)| *o == Origin::Wire)
        .or_else(|| v.first())
        .map(|(_, t)| t);
    let mut j = base.map_or(Value::Null, |t| transaction_json(t));
    if let Value::Object(m) = &mut j {
        let client = v
            .iter()
            .find(|(o, _)| *o == Origin::ClientProbes)
            .map(|(_, t)| t);
        let server = v
            .iter()
            .find(|(o, _)| *o == Origin::ServerProbes)
            .map(|(_, t)| t);
        if m.get("credits_granted").is_none_or(Value::is_null) {
            if let Some(c) = client.and_then(|t| t.credits_granted) {
                m.insert("credits_granted".into(), json!(c));
            }
        }
        if m.get("credits_requested").is_none_or(|x| x == &json!(0)) {
            if let Some(s) = server {
                m.insert("credits_requested".into(), json!(s.credits_requested));
            }
        }
        if m.get("remote_invalidated_rkey").is_none_or(Value::is_null) {
            if let Some(k) = client
                .and_then(|t| t.remote_invalidated_rkey)
                .or(server.and_then(|t| t.remote_invalidated_rkey))
            {
                m.insert("remote_invalidated_rkey".into(), json!(k));
            }
        }
        m.insert("type".into(), json!("transaction"));
        m.insert("sources".into(), json!(sources));
        m.insert("probes".into(), Value::Object(probes));
    }
    j
}

/// How long the merger holds an XID for its other views.
const MERGE_WINDOW_NS: u64 = 1_000_000_000;
/// XIDs held at once at most.
const MERGE_MAX: usize = 65536;

/// Writes a live run's findings as they come (merged by XID), to a file or
/// standard output.
pub struct LiveSink<W: Write> {
    out: W,
    json_lines: bool,
    merger: Merger,
    values: Vec<Value>,
    started: Instant,
    /// Transactions written.
    pub transactions: u64,
    /// Anomalies written.
    pub anomalies: u64,
    /// The first write that failed; nothing is written after it.
    pub error: Option<io::Error>,
}

impl<W: Write> LiveSink<W> {
    /// A sink writing JSON Lines (or text when not `json_lines`) to `out`.
    pub fn new(out: W, json_lines: bool) -> Self {
        LiveSink {
            out,
            json_lines,
            merger: Merger::new(MERGE_WINDOW_NS, MERGE_MAX),
            values: Vec::new(),
            started: Instant::now(),
            transactions: 0,
            anomalies: 0,
            error: None,
        }
    }

    /// Local time since the start: the merge window is about arrival, not
    /// the sources' clocks.
    fn now(&self) -> u64 {
        self.started.elapsed().as_nanos() as u64
    }

    fn anomaly(&mut self, a: &crate::engine::Anomaly) -> io::Result<()> {
        self.anomalies += 1;
        let out = &mut self.out;
        if self.json_lines {
            let mut j = anomaly_json(a);
            if let Value::Object(m) = &mut j {
                m.insert("type".into(), json!("anomaly"));
                let src = if a.message.starts_with("client probes") {
                    "client_probes"
                } else if a.message.starts_with("server probes") {
                    "server_probes"
                } else {
                    "wire"
                };
                m.insert("sources".into(), json!([src]));
            }
            serde_json::to_writer(&mut *out, &j)?;
            writeln!(out)
        } else {
            writeln!(out, "{}", anomaly_line(a))
        }
    }

    fn write_values(&mut self) -> io::Result<()> {
        self.transactions += self.values.len() as u64;
        for v in self.values.drain(..) {
            if self.json_lines {
                serde_json::to_writer(&mut self.out, &v)?;
                writeln!(self.out)?;
            } else {
                writeln!(
                    self.out,
                    "{} xid {:#010x} {} latency {} µs credits {}/{} inv {}",
                    v["sources"],
                    v["xid"].as_u64().unwrap_or(0),
                    v["procedure"].as_str().unwrap_or("?"),
                    v["latency_us"],
                    v["credits_requested"],
                    v["credits_granted"],
                    v["remote_invalidated_rkey"]
                )?;
            }
        }
        self.out.flush()
    }

    fn keep(&mut self, r: io::Result<()>) -> Flow {
        match r {
            Ok(()) => Flow::Continue,
            Err(e) => {
                self.error.get_or_insert(e);
                Flow::Stop
            }
        }
    }
}

impl<W: Write> Sink for LiveSink<W> {
    fn finding(&mut self, f: Finding) -> Flow {
        if self.error.is_some() {
            return Flow::Stop;
        }
        match f {
            Finding::Transaction(t) => {
                let now = self.now();
                self.merger.add(t, now, &mut self.values);
                Flow::Continue
            }
            Finding::Anomaly(a) => {
                let r = self.anomaly(&a);
                self.keep(r)
            }
        }
    }

    fn tick(&mut self, _: Option<&Engine>, _: &Progress) -> Flow {
        if self.error.is_some() {
            return Flow::Stop;
        }
        let now = self.now();
        self.merger.flush(now, &mut self.values);
        let r = self.write_values();
        self.keep(r)
    }

    fn notice(&mut self, n: Notice) {
        eprintln!("{}", n.text);
    }

    fn end(&mut self, _: Option<&Engine>, _: &Progress, _: &End) {
        if self.error.is_some() {
            return;
        }
        self.merger.flush(u64::MAX, &mut self.values);
        let r = self.write_values();
        let _ = self.keep(r);
    }
}
