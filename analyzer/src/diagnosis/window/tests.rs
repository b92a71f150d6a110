//! The window on real captures, its clock moved on by the engine's live
//! ticks (`Event::Tick`, what `live` sends when no frame comes).

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::{Window, BUCKETS};
use crate::diagnosis::{CauseName, Diagnosis};
use crate::engine::{Config, Engine, Event, Finding};
use crate::output::live::LiveSink;
use crate::output::metrics::{Format, Metrics, MetricsConfig};
use crate::pipeline::{self, End, Flow, Progress, Source, Stop};
use crate::test_support::capture_source;

const MINUTE: u64 = 60_000_000_000;

/// A capture through the engine into a 5-minute window and a whole-run
/// diagnosis, the window looking at the engine after every pump as the
/// metrics sink does.
struct Run {
    engine: Engine,
    window: Window,
    run: Diagnosis,
}

impl Run {
    fn of(name: &str) -> Self {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../captures")
            .join(name);
        let config = Config::default();
        let mut source = capture_source(&path, &config.stack);
        let mut r = Run {
            engine: Engine::new(config),
            window: Window::new(5 * MINUTE),
            run: Diagnosis::default(),
        };
        loop {
            let mut out = Vec::new();
            let engine = &mut r.engine;
            let done = source
                .pump(&mut |ev| {
                    engine.handle(ev, &mut out);
                    Flow::Continue
                })
                .is_some();
            r.take(&out);
            if done {
                break;
            }
        }
        let mut out = Vec::new();
        r.engine.finish(&mut |f| out.push(f));
        r.take(&out);
        r
    }

    fn take(&mut self, out: &[Finding]) {
        for f in out {
            self.window.add(f);
            self.run.add(f);
        }
        self.window.observe(self.engine.state());
    }

    /// The capture clock moved to `at` past the capture's first frame.
    fn tick(&mut self, at: u64) {
        let first = self.engine.state().totals.first_ts_ns.expect("a frame");
        let mut out = Vec::new();
        self.engine.handle(Event::Tick(first + at), &mut out);
        self.take(&out);
    }

    fn names(&self) -> (Vec<CauseName>, Vec<CauseName>) {
        let state = self.engine.state();
        let names = |c: Vec<crate::diagnosis::Cause>| c.into_iter().map(|c| c.cause).collect();
        (
            names(self.window.causes(state)),
            names(self.run.causes(state)),
        )
    }
}

#[test]
fn a_stall_in_minute_one_leaves_the_window_but_not_the_run() {
    // reconnect.pcap: a 22 s stall across a reconnect, all in its first 30 s.
    let mut r = Run::of("reconnect.pcap");
    r.tick(2 * MINUTE);
    let (window, run) = r.names();
    assert!(window.contains(&CauseName::ReconnectStall), "{window:?}");
    assert!(run.contains(&CauseName::ReconnectStall), "{run:?}");
    assert_eq!(window, run, "the window still holds the whole capture");

    r.tick(7 * MINUTE);
    let (window, run) = r.names();
    assert_eq!(window, [], "nothing happened in the last 5 minutes");
    assert!(run.contains(&CauseName::ReconnectStall), "{run:?}");
    let (from, to) = r.window.span_ns().expect("a clock");
    let first = r.engine.state().totals.first_ts_ns.expect("a frame");
    assert_eq!(to - first, 7 * MINUTE);
    // Cut in 30 s intervals: the window reaches back 5 min to 5.5 min.
    let back = to - from;
    assert!(
        (5 * MINUTE..=5 * MINUTE + MINUTE / 2).contains(&back),
        "{back}"
    );
}

#[test]
fn a_clean_capture_names_nothing_in_either() {
    for name in ["v3-inline.pcap", "parallel.pcap", "v42-ddp.pcap"] {
        let mut r = Run::of(name);
        for at in [0, 2 * MINUTE, 7 * MINUTE] {
            r.tick(at);
            assert_eq!(r.names(), (vec![], vec![]), "{name} at {at} ns");
        }
    }
}

#[test]
fn the_window_does_not_grow_with_the_transactions() {
    // parallel.pcap's findings again and again, 10 s apart, for 3 hours:
    // the window holds at most BUCKETS + 1 intervals, and their tables and
    // lists stop growing once a window's worth has been seen.
    let out: Vec<Finding> = crate::diagnosis::tests::findings("parallel.pcap").0;
    let txns = out
        .iter()
        .filter(|f| matches!(f, Finding::Transaction(_)))
        .count() as u64;
    assert!(txns > 100, "{txns}");

    let mut window = Window::new(5 * MINUTE);
    let mut most_in_first_window = 0;
    let mut added = 0;
    for copy in 0..1080u64 {
        for f in &out {
            window.add(&shifted(f, copy * 10_000_000_000));
            added += 1;
        }
        let (buckets, entries) = window.held();
        assert!(buckets as u64 <= BUCKETS + 1, "{buckets} intervals");
        if copy < 60 {
            most_in_first_window = most_in_first_window.max(entries);
        } else {
            assert!(
                entries <= most_in_first_window,
                "{entries} entries after {added} findings, at most {most_in_first_window} before"
            );
        }
    }
    assert!(added > 1000 * txns);
}

/// `f` as if it had happened `by` ns later.
fn shifted(f: &Finding, by: u64) -> Finding {
    match f {
        Finding::Transaction(t) => {
            let mut t = t.clone();
            t.call_ts_ns += by;
            t.first_call_ts_ns += by;
            t.reply_ts_ns = t.reply_ts_ns.map(|r| r + by);
            Finding::Transaction(t)
        }
        Finding::Anomaly(a) => {
            let mut a = a.clone();
            a.ts_ns = a.ts_ns.map(|t| t + by);
            Finding::Anomaly(a)
        }
    }
}

/// A capture file, then the live clock ticking at `ticks` past its first
/// frame: `live`'s own path (its sinks, the pipeline, the engine's ticks)
/// with a file for its frames.
struct Replay {
    inner: Box<dyn Source>,
    first_ns: u64,
    ticks: Vec<u64>,
    ended: Option<End>,
}

impl Replay {
    fn of(name: &str, ticks: &[u64]) -> Self {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../captures")
            .join(name);
        // The first record's time, from the classic pcap's header (µs).
        let bytes = std::fs::read(&path).expect("capture");
        assert_eq!(bytes[..4], [0xd4, 0xc3, 0xb2, 0xa1], "{name}: µs pcap");
        let word = |at: usize| u64::from(u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()));
        let first_ns = word(24) * 1_000_000_000 + word(28) * 1000;
        Replay {
            inner: capture_source(&path, &Config::default().stack),
            first_ns,
            ticks: ticks.iter().rev().copied().collect(),
            ended: None,
        }
    }
}

impl Source for Replay {
    fn describe(&self) -> String {
        format!("{} and the live clock", self.inner.describe())
    }

    fn pump(&mut self, emit: &mut dyn FnMut(Event<'_>) -> Flow) -> Option<End> {
        if self.ended.is_none() {
            self.ended = self.inner.pump(emit);
            return None;
        }
        match self.ticks.pop() {
            Some(at) => {
                let _ = emit(Event::Tick(self.first_ns + at));
                None
            }
            None => self.ended.take(),
        }
    }

    fn stop(&mut self) {
        self.inner.stop();
    }

    fn progress(&self) -> Progress {
        self.inner.progress()
    }
}

/// The Prometheus exposition at the end of `name` replayed up to `at`.
fn metrics_at(name: &str, at: u64) -> String {
    let mut metrics = Metrics::new(MetricsConfig::default()).with_window(5 * MINUTE);
    let mut replay = Replay::of(name, &[at]);
    let config = Config::default();
    pipeline::run(
        &mut replay,
        Some(Engine::new(config)),
        &mut metrics,
        &mut |_| {},
        &Stop::new(),
    );
    metrics.exposition(None).encode(Format::PrometheusText)
}

fn names_in(text: &str, family: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix(family)?.strip_prefix("{cause=\""))
        .filter_map(|l| l.split('"').next().map(str::to_string))
        .collect()
}

#[test]
fn the_window_series_clears_when_the_stall_is_gone_and_the_run_series_stays() {
    let at2 = metrics_at("reconnect.pcap", 2 * MINUTE);
    let at7 = metrics_at("reconnect.pcap", 7 * MINUTE);
    for text in [&at2, &at7] {
        assert!(
            text.contains("\nrdma_diagnosis_window_seconds 300"),
            "{text}"
        );
        let run = names_in(text, "rdma_diagnosis_cause_impact");
        assert!(run.iter().any(|c| c == "reconnect_stall"), "{run:?}");
    }
    let window = names_in(&at2, "rdma_diagnosis_window_cause_impact");
    assert!(window.iter().any(|c| c == "reconnect_stall"), "{window:?}");
    let window = names_in(&at7, "rdma_diagnosis_window_cause_impact");
    assert_eq!(window, Vec::<String>::new());
}

#[test]
fn a_clean_capture_has_neither_series() {
    for at in [2 * MINUTE, 7 * MINUTE] {
        let text = metrics_at("v3-inline.pcap", at);
        assert!(
            text.contains("\nrdma_diagnosis_window_seconds 300"),
            "{text}"
        );
        assert_eq!(
            names_in(&text, "rdma_diagnosis_cause_impact"),
            Vec::<String>::new()
        );
        assert_eq!(
            names_in(&text, "rdma_diagnosis_window_cause_impact"),
            Vec::<String>::new()
        );
    }
}

/// A `Write` the test can read back after the sink is done with it.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn json_out_writes_the_window_as_it_moves_on() {
    let out = Shared::default();
    let mut sink = LiveSink::new(out.clone(), true).with_window(5 * MINUTE);
    let mut replay = Replay::of("reconnect.pcap", &[2 * MINUTE, 7 * MINUTE]);
    let first = replay.first_ns;
    let config = Config::default();
    pipeline::run(
        &mut replay,
        Some(Engine::new(config)),
        &mut sink,
        &mut |_| {},
        &Stop::new(),
    );
    let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .filter(|l: &serde_json::Value| l["type"] == "diagnosis")
        .collect();
    let at = |ns: u64| {
        let to = (first + ns).to_string();
        let line = lines
            .iter()
            .find(|l| l["to_ts_ns"] == to.as_str())
            .unwrap_or_else(|| panic!("no diagnosis line at {ns} ns: {lines:#?}"));
        assert_eq!(line["window_s"], 300.0);
        let causes: Vec<String> = line["causes"]
            .as_array()
            .expect("causes")
            .iter()
            .map(|c| c["cause"].as_str().expect("name").to_string())
            .collect();
        causes
    };
    assert!(at(2 * MINUTE).iter().any(|c| c == "reconnect_stall"));
    assert_eq!(at(7 * MINUTE), Vec::<String>::new());
    // The last line is the end's, over the same window.
    assert_eq!(
        lines.last().expect("a line")["causes"],
        serde_json::json!([])
    );
}

/// Frames a second through the metrics sink on `path`, with and without
/// the window: the median of 5 interleaved runs each.
fn frames_per_second(path: &std::path::Path) -> (f64, f64, u64) {
    let once = |window: bool| {
        let config = Config::default();
        let mut source = capture_source(path, &config.stack);
        let mut m = Metrics::new(MetricsConfig::default());
        if window {
            m = m.with_window(5 * MINUTE);
        }
        let t = std::time::Instant::now();
        let outcome = pipeline::run(
            &mut *source,
            Some(Engine::new(config)),
            &mut m,
            &mut |_| {},
            &Stop::new(),
        );
        let frames = outcome.progress.frames;
        (frames as f64 / t.elapsed().as_secs_f64(), frames)
    };
    let (mut without, mut with) = (Vec::new(), Vec::new());
    let mut frames = 0;
    for _ in 0..5 {
        without.push(once(false).0);
        let (rate, n) = once(true);
        with.push(rate);
        frames = n;
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    (median(&mut without), median(&mut with), frames)
}

/// The window's cost per frame stays a constant share: a timing, so not
/// run by default. `RDMA_WINDOW_BENCH=FILE` measures on FILE (a large
/// synth capture); the default is `parallel.pcap`.
#[test]
#[ignore = "timing: RDMA_WINDOW_BENCH=FILE cargo nextest run -p rdma-analyzer --lib --run-ignored only -E 'test(window_costs)' --no-capture"]
fn window_costs_a_constant_share_per_frame() {
    let path = std::env::var_os("RDMA_WINDOW_BENCH").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../captures/parallel.pcap"),
        PathBuf::from,
    );
    let (without, with, frames) = frames_per_second(&path);
    eprintln!(
        "{}: {frames} frames; metrics without the window {without:.0} frames/s, with it {with:.0} frames/s ({:+.1}%)",
        path.display(),
        100.0 * (with / without - 1.0)
    );
    assert!(
        with >= 0.8 * without,
        "{with:.0} against {without:.0} frames/s"
    );
}
