//! `transactions` and `anomalies`: one line (or JSON object) per finding,
//! written as the engine finds it.

use std::io::{self, Write};

use super::filter::Filter;
use super::json::{anomaly_json, transaction_json};
use crate::engine::{Anomaly, Engine, Finding, Transaction};
use crate::pipeline::{End, Flow, Notice, Progress, Sink};

/// What a [`Lines`] sink writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// Transactions.
    Transactions,
    /// Anomalies.
    Anomalies,
}

/// Writes transactions or anomalies as they are found, text or JSON Lines.
pub struct Lines<W: Write> {
    out: W,
    which: Which,
    json: bool,
    filter: Filter,
    /// Lines written.
    pub written: u64,
    /// The first write that failed; nothing is written after it.
    pub error: Option<io::Error>,
}

impl<W: Write> Lines<W> {
    /// A sink writing `which` to `out`.
    pub fn new(out: W, which: Which, json: bool, filter: Filter) -> Self {
        Lines {
            out,
            which,
            json,
            filter,
            written: 0,
            error: None,
        }
    }

    fn write(&mut self, f: &Finding) -> io::Result<bool> {
        let out = &mut self.out;
        match (f, self.which) {
            (Finding::Transaction(t), Which::Transactions) if self.filter.txn(t) => {
                if self.json {
                    serde_json::to_writer(&mut *out, &transaction_json(t))?;
                    writeln!(out)?;
                } else {
                    writeln!(out, "{}", transaction_line(t))?;
                }
            }
            (Finding::Anomaly(a), Which::Anomalies) if self.filter.anomaly(a) => {
                if self.json {
                    serde_json::to_writer(&mut *out, &anomaly_json(a))?;
                    writeln!(out)?;
                } else {
                    writeln!(out, "{}", anomaly_line(a))?;
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Flushes and hands back the output.
    ///
    /// # Errors
    /// The first write or flush that failed.
    pub fn finish(mut self) -> io::Result<W> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

impl<W: Write> Sink for Lines<W> {
    fn finding(&mut self, f: Finding) -> Flow {
        match self.write(&f) {
            Ok(w) => {
                self.written += u64::from(w);
                Flow::Continue
            }
            Err(e) => {
                self.error = Some(e);
                Flow::Stop
            }
        }
    }

    fn notice(&mut self, n: Notice) {
        eprintln!("rdma-analyzer: {}", n.text);
    }

    fn end(&mut self, _: Option<&Engine>, _: &Progress, _: &End) {
        if self.error.is_none() {
            if let Err(e) = self.out.flush() {
                self.error = Some(e);
            }
        }
    }
}

/// One transaction as a line of text.
pub fn transaction_line(t: &Transaction) -> String {
    let lat = t
        .latency_us
        .map_or_else(|| "no reply".to_string(), |l| format!("{l:.1} µs"));
    let inv = t
        .remote_invalidated_rkey
        .map_or(String::new(), |k| format!(" inv {k:#x}"));
    let an = if t.anomalies.is_empty() {
        String::new()
    } else {
        format!(
            " [{}]",
            t.anomalies
                .iter()
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
                .join(",")
        )
    };
    format!(
        "{} xid {:#010x} frames {}->{} {} call {} reply {} {} credits {}/{} in flight {} moved {} B rt {}{inv}{an}",
        t.connection,
        t.xid,
        t.call_frame,
        t.reply_frame.map_or("-".to_string(), |f| f.to_string()),
        t.procedure_label(),
        t.call_transfer.as_str(),
        t.reply_transfer.as_str(),
        lat,
        t.credits_requested,
        t.credits_granted.map_or("-".to_string(), |g| g.to_string()),
        t.in_flight_at_call,
        t.bytes_moved(),
        t.round_trips,
    )
}

/// One anomaly as a line of text.
pub fn anomaly_line(a: &Anomaly) -> String {
    let frames: Vec<String> = a.frames.iter().map(u64::to_string).collect();
    format!(
        "{} [{:?}, {}] frames {} {}{}: {}",
        a.kind.as_str(),
        a.kind.severity(),
        a.kind.rfc(),
        frames.join(","),
        a.connection.map_or(String::new(), |c| c.to_string()),
        a.xid.map_or(String::new(), |x| format!(" xid {x:#010x}")),
        a.message
    )
}
