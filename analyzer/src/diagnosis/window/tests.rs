//! The window on real captures, its clock moved on by the engine's live
//! ticks (`Event::Tick`, what `live` sends when no frame comes).

use std::path::PathBuf;

use super::{Window, BUCKETS};
use crate::diagnosis::{CauseName, Diagnosis};
use crate::engine::{Config, Engine, Event, Finding};
use crate::pipeline::Flow;
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
    let out: Vec<Finding> = {
        let config = Config::default();
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../captures/parallel.pcap");
        let mut source = capture_source(&path, &config.stack);
        let mut engine = Engine::new(config);
        let mut out = Vec::new();
        while source
            .pump(&mut |ev| {
                engine.handle(ev, &mut out);
                Flow::Continue
            })
            .is_none()
        {}
        engine.finish(&mut |f| out.push(f));
        out
    };
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
