//! `live` without a screen: transactions and anomalies as JSON Lines (or
//! text) as the engine finds them. With probes on, the engine has joined
//! the wire's and each kernel's view of an XID into one transaction
//! (`engine::Config::merge`): each line says who saw it (`sources`) and
//! what each kernel saw (`probes`).

use std::io::{self, Write};
use std::time::Instant;

use super::ack::Acks;
use super::clock::{Clock, TimeFormat};
use super::filter::{Field, Filter, Join};
use super::lines::{anomaly_line, collapsed_line, transaction_line};
use super::live_counters::{CounterSampler, CounterValue, CountersLine};
use super::live_fold::{LiveFold, UPDATE_EVERY};
use super::out::Out;
use super::schema::{AnomalyLine, DiagnosisLine, TransactionLine};
use crate::counters::CounterReading;
use crate::diagnosis::{Diagnosis, Window};
use crate::engine::{Anomaly, Engine, Finding, Frame, State, Transaction};
use crate::pipeline::{End, Flow, Progress, Sink};

/// Writes a live run's findings as they come, to a file or standard output
/// (or only counts them, beside the metrics).
pub struct LiveSink<W: Write> {
    /// `None` when only counting.
    out: Option<Out<W>>,
    json_lines: bool,
    /// Transactions written.
    pub transactions: u64,
    /// Of them, by the views they joined.
    pub views: crate::counters::ViewCounts,
    /// Anomalies written.
    pub anomalies: u64,
    /// The causes in what went by, said when the run ends.
    diagnosis: Diagnosis,
    /// `live --filter`: what is written (and diagnosed).
    filter: Filter,
    /// Findings judged through their transaction under `filter`.
    join: Join,
    /// JSON Lines only: the causes over the last minutes, written as a
    /// `diagnosis` line each time the window moves on by an interval.
    window: Option<Window>,
    /// The interval the last `diagnosis` line was written in.
    written_interval: Option<u64>,
    /// The counter sampler's samples (`--counters-interval`).
    counters: Option<(std::sync::mpsc::Receiver<CounterReading>, CounterSampler)>,
    /// Counter records taken.
    pub counter_samples: u64,
    /// `--ignore`, `--ack`: text hides these findings, JSON marks them.
    acks: Acks,
    /// The findings that repeat per connection, written once and then as
    /// updates of their count.
    fold: LiveFold,
    /// When the folded findings' counts were last written.
    updated: Instant,
}

impl<W: Write> LiveSink<W> {
    /// A sink writing JSON Lines (or text when not `json_lines`) to `out`.
    pub fn new(out: W, json_lines: bool) -> Self {
        Self::with_out(Some(Out::new(out)), json_lines)
    }

    /// With JSON Lines, also writes the diagnosis over a sliding window
    /// `width_ns` wide on the capture clock.
    #[must_use]
    pub fn with_window(mut self, width_ns: u64) -> Self {
        if self.json_lines && self.out.is_some() {
            self.window = Some(Window::new(width_ns));
        }
        self
    }

    /// A sink that writes nothing and counts (`live --no-tui --metrics`
    /// without `--json-out`: the metrics are the output).
    pub fn counting() -> Self {
        Self::with_out(None, false)
    }

    /// The sink's one constructor: nothing counted yet, no filter, window
    /// or counters until the `with_*` methods add them.
    fn with_out(out: Option<Out<W>>, json_lines: bool) -> Self {
        LiveSink {
            out,
            json_lines,
            transactions: 0,
            views: crate::counters::ViewCounts::default(),
            anomalies: 0,
            diagnosis: Diagnosis::default(),
            filter: Filter::All,
            join: Join::default(),
            window: None,
            written_interval: None,
            counters: None,
            counter_samples: 0,
            acks: Acks::default(),
            fold: LiveFold::default(),
            updated: Instant::now(),
        }
    }

    /// Hides (text) or marks (JSON) `acks`' findings.
    #[must_use]
    pub fn with_acks(mut self, acks: Acks) -> Self {
        self.acks = acks;
        self
    }

    /// What the acknowledgements set aside, for the run's summary.
    pub fn acks_summary(&self) -> Option<String> {
        let s = self.acks.summary()?;
        Some(if self.json_lines {
            // JSON keeps every record: nothing was hidden there.
            s.replace(" hidden (", " marked \"acknowledged\": true (")
        } else {
            s
        })
    }

    /// Writes, counts and diagnoses only what `filter` keeps (`live --filter`).
    pub fn with_filter(mut self, filter: Filter) -> Self {
        self.filter = filter;
        self
    }

    /// Takes the counter sampler's samples: each becomes a record and its
    /// kernel view the diagnosis's (the causes only the kernel sees are
    /// checked from the first readable mountstats on).
    pub fn with_counters(mut self, rx: std::sync::mpsc::Receiver<CounterReading>) -> Self {
        self.counters = Some((rx, CounterSampler::default()));
        self
    }

    fn drain_counters(&mut self) -> Flow {
        let Some((rx, sampler)) = self.counters.as_mut() else {
            return Flow::Continue;
        };
        // Parsed here, once per sample, not per frame.
        let lines: Vec<CountersLine> = rx.try_iter().map(|r| sampler.sample(&r)).collect();
        // A host with no NFS-over-RDMA mount (a server, a capture box)
        // has no client kernel view to give: "not given", as in `report`.
        if let Some(v) = sampler.kernel_view().filter(|v| !v.mounts.is_empty()) {
            self.diagnosis.set_kernel(v);
        }
        for line in lines {
            self.counter_samples += 1;
            if self.counter_line(&line) == Flow::Stop {
                return Flow::Stop;
            }
        }
        Flow::Continue
    }

    fn counter_line(&mut self, l: &CountersLine) -> Flow {
        let Some(out) = self.out.as_mut() else {
            return Flow::Continue;
        };
        if self.json_lines {
            return out.json_line(l);
        }
        let at = Clock::new(TimeFormat::Utc).at(Some(l.at_ns));
        let transports: usize = l.mounts.iter().map(|m| m.transports.len()).sum();
        let grown =
            |c: &[CounterValue]| -> Option<u64> { c.iter().map(|v| v.delta).sum::<Option<u64>>() };
        let sends: Vec<CounterValue> = l
            .mounts
            .iter()
            .flat_map(|m| &m.transports)
            .filter_map(|t| t.fields.get("sends").copied())
            .collect();
        let resets = l
            .mounts
            .iter()
            .flat_map(|m| &m.transports)
            .flat_map(|t| t.fields.values())
            .chain(l.devices.iter().map(|d| &d.value))
            .filter(|v| v.reset)
            .count();
        let sends = match grown(&sends) {
            Some(d) => format!("+{d}"),
            // The first sample, or a reset: the totals, not a growth.
            None => format!("{} in all", sends.iter().map(|v| v.total).sum::<u64>()),
        };
        let flow = out.text_line(format_args!(
            "{at} counters: {} RDMA mount(s), {transports} transport(s), sends {sends}, {} device counter(s){}",
            l.mounts.len(),
            l.devices.len(),
            if resets > 0 {
                format!(", {resets} reset (went backwards: a remount or a module reload)")
            } else {
                String::new()
            }
        ));
        for n in &l.notes {
            if out.text_line(format_args!("{at} counters: {}", super::escape::escape(n)))
                == Flow::Stop
            {
                return Flow::Stop;
            }
        }
        flow
    }

    /// The diagnosis of the run so far, as `report` prints it.
    pub fn diagnosis_text(&self, state: &State) -> String {
        let mut s = String::new();
        super::report::diagnosis_text(
            &mut s,
            &self.diagnosis.causes(state),
            &self.diagnosis.input_notes(),
            super::report::Judged::of(&self.diagnosis, state),
            (!self.filter.is_all()).then(|| self.filter.text()),
        );
        s
    }

    /// The first write that failed, if one did.
    pub fn take_error(&mut self) -> Option<io::Error> {
        self.out.as_mut().and_then(Out::take_error)
    }

    fn transaction(&mut self, t: &Transaction) -> Flow {
        self.transactions += 1;
        self.views.count(t.sources());
        let Some(out) = self.out.as_mut() else {
            return Flow::Continue;
        };
        if self.json_lines {
            return out.json_line(&TransactionLine::live(t));
        }
        let sources: Vec<&str> = t.sources().map(|o| o.as_str()).collect();
        // Live lines carry wall-clock UTC: what lines up with the host's
        // logs while it runs.
        out.text_line(format_args!(
            "{} [{}] {}",
            Clock::new(TimeFormat::Utc).at(Some(t.call_ts_ns)),
            sources.join("+"),
            transaction_line(t)
        ))
    }

    /// Writes the window's causes when it has moved on by an interval
    /// since the last line (or, at the end, always).
    fn window_line(&mut self, state: &State, last: bool) -> Flow {
        let (Some(w), Some(out)) = (self.window.as_mut(), self.out.as_mut()) else {
            return Flow::Continue;
        };
        w.observe(state);
        // The kernel's growth over the window, as the TUI's diagnosis
        // takes it: the causes only the kernel sees (no remote
        // invalidation, MR exhaustion) are named here too.
        if let Some(v) = self.counters.as_ref().and_then(|(_, sampler)| {
            let (from, _) = w.span_ns()?;
            sampler
                .kernel_view_since(from)
                .filter(|v| !v.mounts.is_empty())
        }) {
            w.set_kernel(v);
        }
        let interval = w.interval_ns();
        if !last && (interval == self.written_interval || self.written_interval.is_none()) {
            // The first interval is written once it is over: a line per
            // run start says nothing yet.
            self.written_interval = self.written_interval.or(interval);
            return Flow::Continue;
        }
        self.written_interval = interval;
        let line = DiagnosisLine::new(w.width_ns() as f64 / 1e9, w.span_ns(), w.causes(state));
        out.json_line(&line)
    }

    /// One occurrence: written when it stands alone or is the first of
    /// its fact, folded otherwise.
    fn anomaly(&mut self, a: Anomaly) -> Flow {
        self.anomalies += 1;
        // Every occurrence counts toward what was hidden, folded or not.
        self.acks.hide(&a);
        if self.out.is_none() {
            // Only counting (the metrics are the output): nothing to fold.
            return Flow::Continue;
        }
        let mut evicted = Vec::new();
        let first = self.fold.take(a, &mut evicted);
        for e in &evicted {
            if self.anomaly_record(e, true) == Flow::Stop {
                return Flow::Stop;
            }
        }
        match first {
            Some(a) => self.anomaly_record(&a, false),
            None => Flow::Continue,
        }
    }

    /// An `anomaly` record, or an `anomaly_update` of a folded finding's
    /// count so far.
    fn anomaly_record(&mut self, a: &Anomaly, update: bool) -> Flow {
        let acknowledged = self.acks.covers(a);
        let Some(out) = self.out.as_mut() else {
            return Flow::Continue;
        };
        if self.json_lines {
            let mut line = AnomalyLine::live(a);
            line.acknowledged = acknowledged;
            if update {
                line.line_type = Some("anomaly_update");
            }
            return out.json_line(&line);
        }
        if acknowledged {
            return Flow::Continue;
        }
        let clock = Clock::new(TimeFormat::Utc);
        let at = clock.at(a.ts_ns);
        if update {
            let span = format!("{}–{}", at, clock.at(a.last_ts_ns()));
            return out.text_line(format_args!(
                "{} update: {}",
                clock.at(a.last_ts_ns()),
                collapsed_line(a, &span)
            ));
        }
        out.text_line(format_args!("{at} {}", anomaly_line(a)))
    }

    /// Writes the folded findings that grew: every [`UPDATE_EVERY`], and
    /// at the end (`last`).
    fn fold_updates(&mut self, last: bool) -> Flow {
        if !last && self.updated.elapsed() < UPDATE_EVERY {
            return Flow::Continue;
        }
        self.updated = Instant::now();
        for a in self.fold.updates() {
            if self.anomaly_record(&a, true) == Flow::Stop {
                return Flow::Stop;
            }
        }
        Flow::Continue
    }

    /// A finding the filter kept: diagnosed and written.
    fn kept(&mut self, f: Finding) -> Flow {
        self.diagnosis.add(&f);
        if let Some(w) = &mut self.window {
            w.add(&f);
        }
        match f {
            Finding::Transaction(t) => self.transaction(&t),
            Finding::Anomaly(a) => self.anomaly(*a),
        }
    }

    fn decided(&mut self, decided: Vec<(Finding, bool)>) -> Flow {
        for (f, pass) in decided {
            if pass && self.kept(f) == Flow::Stop {
                return Flow::Stop;
            }
        }
        Flow::Continue
    }
}

impl<W: Write> Sink for LiveSink<W> {
    fn finding(&mut self, f: Finding) -> Flow {
        if self.filter.is_all() {
            return self.kept(f);
        }
        let mut decided = Vec::new();
        self.join
            .take(&self.filter, f, &mut |f, pass| decided.push((f, pass)));
        self.decided(decided)
    }

    /// `time` in a filter counts from the first frame.
    fn wants_frames(&self) -> bool {
        self.filter.uses(Field::Time)
    }

    fn frame(&mut self, f: &Frame<'_>) -> Flow {
        self.filter.saw(f.ts_ns);
        Flow::Continue
    }

    /// Live lines reach a file or a pipe within a tick, not when a buffer fills.
    fn tick(&mut self, engine: Option<&Engine>, _: &Progress) -> Flow {
        if self.drain_counters() == Flow::Stop {
            return Flow::Stop;
        }
        if let Some(e) = engine {
            if self.window_line(e.state(), false) == Flow::Stop {
                return Flow::Stop;
            }
        }
        if self.fold_updates(false) == Flow::Stop {
            return Flow::Stop;
        }
        self.out.as_mut().map_or(Flow::Continue, Out::flush)
    }

    fn end(&mut self, engine: Option<&Engine>, _: &Progress, _: &End) {
        let _ = self.drain_counters();
        let mut decided = Vec::new();
        self.join
            .finish(&self.filter, &mut |f, pass| decided.push((f, pass)));
        let _ = self.decided(decided);
        let _ = self.fold_updates(true);
        if let Some(e) = engine {
            let _ = self.window_line(e.state(), true);
        }
        if let Some(out) = self.out.as_mut() {
            let _ = out.flush();
        }
    }
}
