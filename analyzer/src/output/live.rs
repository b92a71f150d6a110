//! `live` without a screen: transactions and anomalies as JSON Lines (or
//! text) as the engine finds them. With probes on, the engine has joined
//! the wire's and each kernel's view of an XID into one transaction
//! (`engine::Config::merge`): each line says who saw it (`sources`) and
//! what each kernel saw (`probes`).

use std::io::{self, Write};

use super::lines::{anomaly_line, transaction_line};
use super::out::Out;
use super::schema::{AnomalyLine, TransactionLine};
use crate::engine::{Anomaly, Engine, Finding, Transaction};
use crate::pipeline::{End, Flow, Notice, Progress, Sink};

/// Writes a live run's findings as they come, to a file or standard output.
pub struct LiveSink<W: Write> {
    out: Out<W>,
    json_lines: bool,
    /// Transactions written.
    pub transactions: u64,
    /// Anomalies written.
    pub anomalies: u64,
}

impl<W: Write> LiveSink<W> {
    /// A sink writing JSON Lines (or text when not `json_lines`) to `out`.
    pub fn new(out: W, json_lines: bool) -> Self {
        LiveSink {
            out: Out::new(out),
            json_lines,
            transactions: 0,
            anomalies: 0,
        }
    }

    /// The first write that failed, if one did.
    pub fn take_error(&mut self) -> Option<io::Error> {
        self.out.take_error()
    }

    fn transaction(&mut self, t: &Transaction) -> Flow {
        self.transactions += 1;
        if self.json_lines {
            return self.out.json_line(&TransactionLine::live(t));
        }
        let sources: Vec<&str> = t.sources().map(|o| o.as_str()).collect();
        self.out.text_line(format_args!(
            "[{}] {}",
            sources.join("+"),
            transaction_line(t)
        ))
    }

    fn anomaly(&mut self, a: &Anomaly) -> Flow {
        self.anomalies += 1;
        if self.json_lines {
            return self.out.json_line(&AnomalyLine::live(a));
        }
        self.out.text_line(anomaly_line(a))
    }
}

impl<W: Write> Sink for LiveSink<W> {
    fn finding(&mut self, f: Finding) -> Flow {
        match f {
            Finding::Transaction(t) => self.transaction(&t),
            Finding::Anomaly(a) => self.anomaly(&a),
        }
    }

    /// Live lines reach a file or a pipe within a tick, not when a buffer fills.
    fn tick(&mut self, _: Option<&Engine>, _: &Progress) -> Flow {
        self.out.flush()
    }

    fn notice(&mut self, n: Notice) {
        eprintln!("{}", n.text);
    }

    fn end(&mut self, _: Option<&Engine>, _: &Progress, _: &End) {
        let _ = self.out.flush();
    }
}
