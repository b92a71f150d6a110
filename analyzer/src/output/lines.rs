//! `transactions` and `anomalies`: one line (or JSON object) per finding,
//! written as the engine finds it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Write};

use super::ack::Acks;
use super::clock::{Clock, TimeFormat};
use super::filter::{Field, Filter, Join};
use super::out::Out;
use super::schema::{AnomalyLine, TransactionLine};
use crate::engine::{Anomaly, Collapser, Engine, Finding, Frame, KernelTimes, Kind, Transaction};
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
    /// Transactions waiting for their turn: the engine reports each when its
    /// reply comes, but they print in call order (first transmission).
    waiting: BinaryHeap<Reverse<InCallOrder>>,
    /// The call-order key of the latest transaction printed.
    last_printed: Option<(u64, u64, u64)>,
    /// Transactions printed after one that was called later: answered after
    /// more than [`REORDER`] later calls had completed.
    out_of_order: u64,
    /// Findings of kinds that repeat per connection, printed once each at
    /// the end with their count.
    collapser: Collapser,
    /// Acknowledged findings: hidden from text, marked in JSON.
    acks: Acks,
}

/// Transactions held back to print in call order at most: a call answered
/// after this many later calls completed prints when it is answered (and
/// the run says how many did). About 1 KiB each.
pub const REORDER: usize = 16_384;

/// A transaction ordered by its first transmission: time, frame, then this
/// transmission's frame.
struct InCallOrder(Box<Transaction>);

impl InCallOrder {
    fn key(&self) -> (u64, u64, u64) {
        let t = &self.0;
        (t.first_call_ts_ns, t.first_call_frame, t.call_frame)
    }
}

impl PartialEq for InCallOrder {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl Eq for InCallOrder {}
impl PartialOrd for InCallOrder {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for InCallOrder {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.key().cmp(&o.key())
    }
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
            waiting: BinaryHeap::new(),
            last_printed: None,
            out_of_order: 0,
            collapser: Collapser::default(),
            acks: Acks::default(),
        }
    }

    /// Transactions printed out of call order (see [`REORDER`]).
    pub fn out_of_order(&self) -> u64 {
        self.out_of_order
    }

    /// Prints the earliest-called waiting transaction.
    fn print_next(&mut self) -> Flow {
        let Some(Reverse(t)) = self.waiting.pop() else {
            return Flow::Continue;
        };
        let key = t.key();
        if self.last_printed.is_some_and(|l| key < l) {
            self.out_of_order += 1;
        } else {
            self.last_printed = Some(key);
        }
        let t = &t.0;
        if self.json {
            self.out.json_line(&TransactionLine::new(t))
        } else {
            let at = self.clock.at(Some(t.call_ts_ns));
            self.out
                .text_line(format_args!("{at} {}", transaction_line(t)))
        }
    }

    /// The same sink with `acks`' findings hidden (text) or marked (JSON).
    #[must_use]
    pub fn with_acks(mut self, acks: Acks) -> Self {
        self.acks = acks;
        self
    }

    /// "N acknowledged findings hidden (kinds…)", when any were.
    pub fn acks_summary(&self) -> Option<String> {
        self.acks.summary()
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
    /// Writes `f` if it is of the kind this sink writes and `pass`es; a
    /// transaction is held back to print in call order, not as answered.
    fn write(&mut self, f: Finding, pass: bool) -> Flow {
        let pass = pass
            && matches!(
                (&f, self.which),
                (Finding::Transaction(_), Which::Transactions)
                    | (Finding::Anomaly(_), Which::Anomalies)
            );
        if !pass {
            return Flow::Continue;
        }
        self.matched += 1;
        match (f, self.json) {
            (Finding::Transaction(t), _) => {
                self.waiting.push(Reverse(InCallOrder(t)));
                if self.waiting.len() > REORDER {
                    self.print_next()
                } else {
                    Flow::Continue
                }
            }
            (Finding::Anomaly(a), _) => match self.collapser.take(*a) {
                Some(a) => self.print_anomaly(&a),
                None => Flow::Continue,
            },
        }
    }

    fn print_anomaly(&mut self, a: &Anomaly) -> Flow {
        let acknowledged = self.acks.hide(a);
        if self.json {
            let line = AnomalyLine {
                acknowledged,
                ..AnomalyLine::new(a)
            };
            return self.out.json_line(&line);
        }
        if acknowledged {
            return Flow::Continue;
        }
        let at = self.clock.at(a.ts_ns).to_string();
        let indent = " ".repeat(at.chars().count());
        let line = if a.count() > 1 {
            let until = self.clock.at(a.last_ts_ns()).to_string();
            let unit = if self.clock.format == TimeFormat::Relative {
                " s"
            } else {
                ""
            };
            let span = format!("{}–{}{unit}", at.trim(), until.trim());
            collapsed_line(a, &span)
        } else {
            anomaly_line(a)
        };
        self.out.text_line(format_args!(
            "{at} {line}\n{indent}   {}",
            guide_line(a.kind)
        ))
    }

    fn write_all(&mut self, decided: Vec<(Finding, bool)>) -> Flow {
        let mut flow = Flow::Continue;
        for (f, pass) in decided {
            if self.write(f, pass) != Flow::Continue {
                flow = Flow::Stop;
            }
        }
        flow
    }
}

impl<W: Write> Sink for Lines<W> {
    fn finding(&mut self, f: Finding) -> Flow {
        if self.filter.is_all() {
            return self.write(f, true);
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
        for a in self.collapser.drain() {
            if self.print_anomaly(&a) == Flow::Stop {
                break;
            }
        }
        while !self.waiting.is_empty() {
            if self.print_next() == Flow::Stop {
                self.waiting.clear();
            }
        }
        let _ = self.out.flush();
    }
}

/// One transaction as a line of text.
pub fn transaction_line(t: &Transaction) -> String {
    let lat = match (t.latency_us, t.reply_frame) {
        (Some(l), _) => format!("{} µs", super::report::micros(l)),
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
    let kt = kernel_times_words(&t.kernel_times);
    format!(
        "{} xid {:#010x} frames {}->{} {} call {} reply {} {} credits {}/{} in flight {} moved {} rt {}{io}{rpc}{nfs}{inv}{kt}{an}",
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
        t.bytes_moved_known()
            .map_or("unknown".to_string(), super::units::bytes_exact),
        t.round_trips_known()
            .map_or("unknown".to_string(), |r| r.to_string()),
    )
}

/// ` kernel backlog 12 µs rtt 340 µs execute 361 µs server execute 95 µs`:
/// what the kernel's RPC layer timed (the probes' views), each only when
/// known; empty when nothing is.
pub fn kernel_times_words(k: &KernelTimes) -> String {
    let parts: Vec<String> = [
        ("backlog", k.backlog_us),
        ("rtt", k.rtt_us),
        ("execute", k.execute_us),
        ("server execute", k.server_execute_us),
    ]
    .iter()
    .filter_map(|(name, v)| v.map(|v| format!("{name} {v} µs")))
    .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" kernel {}", parts.join(" "))
    }
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

/// What a kind harms, who is at fault and what to do, in one short line
/// under each anomaly (the full text is in `docs/findings.md`).
pub fn guide_line(k: Kind) -> String {
    let g = k.guide();
    let known = g
        .known_behaviour
        .map_or(String::new(), |v| format!("known behaviour ({v}); "));
    format!(
        "{known}harm: {}; at fault: {}; {}",
        g.harm.as_str(),
        g.at_fault.as_str(),
        g.action
    )
}

/// One finding that stands for several occurrences of one fact, as a line
/// of text: `×480, frames 798–9876, 10.898025–20.123456 s`, then the first
/// XIDs.
pub fn collapsed_line(a: &Anomaly, span: &str) -> String {
    let frame = |f: Option<u64>| f.map_or("?".to_string(), |f| f.to_string());
    let xids = a.repeated.as_ref().map_or(&[][..], |r| r.xids.as_slice());
    let mut x: Vec<String> = xids.iter().map(|x| format!("{x:#010x}")).collect();
    if (xids.len() as u64) < a.count() && !xids.is_empty() {
        x.push("…".into());
    }
    format!(
        "{} [{}, {}] ×{}, frames {}–{}, {span} {}{}: {}",
        a.kind.as_str(),
        a.kind.severity().as_str(),
        a.kind.rfc(),
        a.count(),
        frame(a.first_frame()),
        frame(a.last_frame()),
        a.connection.map_or(String::new(), |c| c.to_string()),
        if x.is_empty() {
            String::new()
        } else {
            format!(" xids {}", x.join(","))
        },
        a.message
    )
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
