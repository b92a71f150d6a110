//! `transactions` and `anomalies`: one line (or JSON object) per finding,
//! written as the engine finds it.

use std::io::{self, Write};

use super::clock::{Clock, TimeFormat};
use super::filter::{Field, Filter, Join};
use super::out::Out;
use super::schema::{AnomalyLine, TransactionLine};
use crate::engine::{Anomaly, Engine, Finding, Frame, Transaction};
use crate::pipeline::{End, Flow, Progress, Sink};

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
    out: Out<W>,
    which: Which,
    json: bool,
    filter: Filter,
    /// Findings waiting for their transaction (`anomalies --filter READ`).
    join: Join,
    matched: u64,
    clock: Clock,
}

impl<W: Write> Lines<W> {
    /// A sink writing `which` to `out`, text lines starting with their
    /// time in `time`'s format.
    pub fn new(out: W, which: Which, json: bool, filter: Filter, time: TimeFormat) -> Self {
        Lines {
            out: Out::new(out),
            which,
            json,
            filter,
            join: Join::default(),
            matched: 0,
            clock: Clock::new(time),
        }
    }

    /// Lines that passed the filter.
    pub fn matched(&self) -> u64 {
        self.matched
    }

    /// The first write that failed, if one did.
    pub fn take_error(&mut self) -> Option<io::Error> {
        self.out.take_error()
    }
}

impl<W: Write> Lines<W> {
    /// Writes `f` if it is of the kind this sink writes and `pass`es.
    fn write(&mut self, f: &Finding, pass: bool) -> Flow {
        let pass = pass
            && matches!(
                (f, self.which),
                (Finding::Transaction(_), Which::Transactions)
                    | (Finding::Anomaly(_), Which::Anomalies)
            );
        if !pass {
            return Flow::Continue;
        }
        self.matched += 1;
        match (f, self.json) {
            (Finding::Transaction(t), true) => self.out.json_line(&TransactionLine::new(t)),
            (Finding::Transaction(t), false) => {
                let at = self.clock.at(Some(t.call_ts_ns));
                self.out
                    .text_line(format_args!("{at} {}", transaction_line(t)))
            }
            (Finding::Anomaly(a), true) => self.out.json_line(&AnomalyLine::new(a)),
            (Finding::Anomaly(a), false) => {
                let at = self.clock.at(a.ts_ns);
                self.out.text_line(format_args!("{at} {}", anomaly_line(a)))
            }
        }
    }

    fn write_all(&mut self, decided: Vec<(Finding, bool)>) -> Flow {
        let mut flow = Flow::Continue;
        for (f, pass) in decided {
            if self.write(&f, pass) != Flow::Continue {
                flow = Flow::Stop;
            }
        }
        flow
    }
}

impl<W: Write> Sink for Lines<W> {
    fn finding(&mut self, f: Finding) -> Flow {
        if self.filter.is_all() {
            return self.write(&f, true);
        }
        // A transaction is only needed to judge the anomalies.
        if self.which == Which::Transactions && matches!(f, Finding::Anomaly(_)) {
            return Flow::Continue;
        }
        let mut decided = Vec::new();
        self.join
            .take(&self.filter, f, &mut |f, pass| decided.push((f, pass)));
        self.write_all(decided)
    }

    /// Text lines count their time from the first frame, so the sink
    /// sees the frames (JSON lines carry absolute times of their own).
    fn wants_frames(&self) -> bool {
        (!self.json && self.clock.format == TimeFormat::Relative) || self.filter.uses(Field::Time)
    }

    fn frame(&mut self, f: &Frame<'_>) -> Flow {
        self.clock.saw(f.ts_ns);
        self.filter.saw(f.ts_ns);
        Flow::Continue
    }

    fn end(&mut self, _: Option<&Engine>, _: &Progress, _: &End) {
        let mut decided = Vec::new();
        self.join
            .finish(&self.filter, &mut |f, pass| decided.push((f, pass)));
        let _ = self.write_all(decided);
        let _ = self.out.flush();
    }
}

/// One transaction as a line of text.
pub fn transaction_line(t: &Transaction) -> String {
    let lat = match (t.latency_us, t.reply_frame) {
        (Some(l), _) => format!("{l:.1} µs"),
        (None, Some(_)) => "latency unknown".to_string(),
        (None, None) => "no reply".to_string(),
    };
    let inv = t
        .remote_invalidated_rkey
        .map_or(String::new(), |k| format!(" inv {k:#x}"));
    // Only an error is shown: a line per RPC saying SUCCESS or NFS3_OK adds nothing.
    let nfs = match (t.nfs_status.as_deref(), t.nfs_failed_op.as_deref()) {
        (Some("NFS3_OK" | "NFS4_OK") | None, _) => String::new(),
        (Some(s), Some(op)) => format!(" nfs {s} in {op}"),
        (Some(s), None) => format!(" nfs {s}"),
    };
    let rpc = match t.reply_status.as_deref() {
        Some("SUCCESS") | None => String::new(),
        Some(s) => format!(" rpc {s}"),
    };
    let io = nfs_io_words(t);
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
        "{} xid {:#010x} frames {}->{} {} call {} reply {} {} credits {}/{} in flight {} moved {} B rt {}{io}{rpc}{nfs}{inv}{an}",
        t.connection,
        t.xid,
        t.call_frame,
        t.reply_frame.map_or("-".to_string(), |f| f.to_string()),
        t.procedure_label(),
        t.call_transfer.as_str(),
        t.reply_transfer.as_str(),
        lat,
        t.credits_requested.map_or("-".to_string(), |r| r.to_string()),
        t.credits_granted.map_or("-".to_string(), |g| g.to_string()),
        t.in_flight_at_call,
        t.bytes_moved(),
        t.round_trips,
    )
}

/// ` fh 0x4fec2610/36 WRITE off 262144 cnt 262144 UNSTABLE retry of 0x… after 100.0 ms`:
/// the NFS file, byte range and retry link, each only when known.
fn nfs_io_words(t: &Transaction) -> String {
    let mut s = String::new();
    if let Some(fh) = &t.nfs_fh {
        s.push_str(" fh ");
        s.push_str(&fh.short());
    }
    if let Some(io) = &t.nfs_io {
        s.push(' ');
        s.push_str(&io.short());
    }
    if let Some(x) = t.retry_of_xid {
        s.push_str(&format!(" retry of {x:#010x}"));
        if let Some(w) = t.retry_wait_us {
            s.push_str(&format!(" after {:.1} ms", w / 1000.0));
        }
    }
    s
}

/// One anomaly as a line of text.
pub fn anomaly_line(a: &Anomaly) -> String {
    let frames: Vec<String> = a.frames.iter().map(u64::to_string).collect();
    format!(
        "{} [{}, {}] frames {} {}{}: {}",
        a.kind.as_str(),
        a.kind.severity().as_str(),
        a.kind.rfc(),
        frames.join(","),
        a.connection.map_or(String::new(), |c| c.to_string()),
        a.xid.map_or(String::new(), |x| format!(" xid {x:#010x}")),
        a.message
    )
}
