//! The one loop every front end runs: a [`Source`]'s events through the
//! [`Engine`] into a [`Sink`].
//!
//! ```text
//!   Source ──Event──► Engine::handle ──Finding──► Sink::finding
//!   (file, live        (pure state                (report, JSON Lines,
//!    capture, probes)   machine)                    live output, TUI feed)
//!      │                                            ▲
//!      └── after every pump: Sink::tick(engine, progress) ───────────┘
//!          and the source's notices to the run's one reporter
//!   end: Event::End ──► last findings ──► Sink::end(engine, progress, End)
//! ```
//!
//! A sink that asks for frames ([`Sink::wants_frames`]) gets each one before
//! the engine does, in the same run as the findings; `frames` runs the loop
//! without an engine, for the frames alone.
//!
//! Stopping has one path whoever asks: a [`Stop`] handle (set by a signal
//! handler, the TUI's quit key or a `--duration`) makes the loop call
//! [`Source::stop`]; the source then hands out what it still holds and ends.
//! A sink that wants nothing more (a closed pipe, a closed screen) returns
//! [`Flow::Stop`]; from then on events are dropped unread while the source
//! winds down.
//!
//! However a source ends, its [`End`] reaches the sink and the caller alike:
//! complete, stopped, damaged (the frame and byte offset where, and why) or
//! failed (an error, or a panic in one of its threads).

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::engine::kernel::event::Probe;
use crate::engine::{Engine, Event, Finding, Frame};

/// Asks a run to stop. Cloned into whatever may ask: a signal handler, the
/// TUI, a timer.
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    /// A handle nobody has set yet.
    pub fn new() -> Self {
        Stop::default()
    }

    /// Asks every run that holds this handle to stop.
    pub fn request(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether a stop was asked for.
    pub fn requested(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// The flag itself, for a signal handler (which may only store to an atomic).
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.0.clone()
    }
}

/// Whether the one who was called wants more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum Flow {
    /// Go on.
    Continue,
    /// Nothing more is wanted.
    Stop,
}

/// How far a source has got.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Frames (and probe records) handed to the engine.
    pub frames: u64,
    /// Bytes of input consumed.
    pub bytes_read: u64,
    /// Total bytes, when known (a file); `None` for live sources and pipes.
    pub bytes_total: Option<u64>,
    /// Frames the live capture lost so far (the kernel's or libpcap's
    /// drops); `None` for a source that cannot lose any (a file) or before
    /// the capture first said.
    pub capture_dropped: Option<u64>,
    /// Probe records the kernel dropped so far (its ring buffer was full);
    /// `None` without probes.
    pub probe_lost: Option<u64>,
    /// Probe records that did not decode so far; `None` without probes.
    pub probe_undecodable: Option<u64>,
}

/// Where a source's input is damaged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// The frame being read (1-based), when past the file header.
    pub frame: Option<u64>,
    /// Byte offset in the input where the bad record starts.
    pub offset: u64,
    /// What went wrong, where, and what the user can do (one line).
    pub message: String,
}

/// How a source ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// Every byte read, every record handed over.
    Complete,
    /// Stopped on request before its end (quit, signal, duration, closed output).
    Stopped,
    /// The input broke off or is corrupt: what came before was analyzed.
    Damaged(Damage),
    /// The source failed: an I/O error, or one of its threads panicked.
    Failed(String),
}

impl End {
    /// The error to show, for [`End::Damaged`] and [`End::Failed`].
    pub fn error(&self) -> Option<&str> {
        match self {
            End::Damaged(d) => Some(&d.message),
            End::Failed(e) => Some(e),
            End::Complete | End::Stopped => None,
        }
    }
}

impl fmt::Display for End {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            End::Complete => f.write_str("complete"),
            End::Stopped => f.write_str("stopped"),
            End::Damaged(d) => f.write_str(&d.message),
            End::Failed(e) => f.write_str(e),
        }
    }
}

/// Something a source wants the user to know that is not an event: a
/// capture that stopped while the probes go on, probes that could not attach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// Whether it means part of the picture is missing.
    pub warning: bool,
    /// In words, starting with what it is about (`live: capture stopped: ...`).
    pub text: String,
}

/// Turns bytes or kernel records into engine events.
pub trait Source: Send {
    /// A short description for status lines (the file name, `live: probes + eth0`).
    fn describe(&self) -> String;

    /// Whether the source cannot wait (live capture, probes): a consumer
    /// that falls behind drops and counts rather than blocks it.
    fn is_live(&self) -> bool {
        false
    }

    /// Hands the events that are ready to `emit`, waiting a short while for
    /// them (a live source at most a few tens of milliseconds, so the loop
    /// stays responsive). Live sources emit their own [`Event::Tick`]s.
    /// Returns `Some` once the source has ended (its threads joined), and
    /// stops handing out events early when `emit` returns [`Flow::Stop`].
    fn pump(&mut self, emit: &mut dyn FnMut(Event<'_>) -> Flow) -> Option<End>;

    /// Asks the source to end soon. What it already holds still comes out
    /// of [`Source::pump`], then its end ([`End::Stopped`] unless it failed).
    fn stop(&mut self);

    /// How far it has got.
    fn progress(&self) -> Progress;

    /// Moves what the source has to say (not events) into `out`.
    fn notices(&mut self, out: &mut Vec<Notice>) {
        let _ = out;
    }
}

/// Takes what the engine finds.
pub trait Sink {
    /// A finding, as the engine reports it.
    fn finding(&mut self, f: Finding) -> Flow;

    /// Whether the sink takes every frame ([`Sink::frame`]), in a run with
    /// an engine as in one without (`frames`, `export --frames`). Asked
    /// once, before the run.
    fn wants_frames(&self) -> bool {
        false
    }

    /// A frame, before the engine sees it (for a sink that wants frames).
    fn frame(&mut self, f: &Frame<'_>) -> Flow {
        let _ = f;
        Flow::Continue
    }

    /// A probe record, before the engine sees it (for a sink that wants
    /// frames: the flight recorder keeps both).
    fn probe(&mut self, p: &Probe) -> Flow {
        let _ = p;
        Flow::Continue
    }

    /// A finding that another sink takes after this one (see [`Fanout`]): a
    /// sink that only counts looks at it and leaves it; by default it
    /// takes a copy.
    fn observe(&mut self, f: &Finding) -> Flow {
        self.finding(f.clone())
    }

    /// Called after every pump of the source: a chance to flush output or
    /// send a snapshot to the screen.
    fn tick(&mut self, engine: Option<&Engine>, progress: &Progress) -> Flow {
        let _ = (engine, progress);
        Flow::Continue
    }

    /// The run is over: the engine after [`Event::End`], and how the source ended.
    fn end(&mut self, engine: Option<&Engine>, progress: &Progress, end: &End);
}

/// How a run ended.
pub struct Outcome {
    /// The engine with its final state (`None` for a run without one).
    pub engine: Option<Engine>,
    /// The source's progress at the end.
    pub progress: Progress,
    /// How the source ended.
    pub end: End,
}

/// Runs `source` to its end through `engine` into `sink` (and its frames
/// straight to `sink` when it asks for them), until the source ends or
/// `stop` is asked for. What the source says goes to `report`, the one
/// place a run's notices are told (stderr, the screen), whatever sinks it
/// feeds.
pub fn run(
    source: &mut dyn Source,
    mut engine: Option<Engine>,
    sink: &mut dyn Sink,
    report: &mut dyn FnMut(Notice),
    stop: &Stop,
) -> Outcome {
    let mut notices = Vec::new();
    // Set once the sink wants nothing more: later events are dropped unread.
    let mut halted = false;
    let mut stopping = false;
    let mut findings = Vec::with_capacity(16);
    let frames = sink.wants_frames();
    let end = loop {
        if !stopping && (halted || stop.requested()) {
            source.stop();
            stopping = true;
        }
        let ended = source.pump(&mut |e| {
            if halted {
                return Flow::Stop;
            }
            let flow = match (frames, &e) {
                (true, Event::Frame(f)) => sink.frame(f),
                (true, Event::Probe(p)) => sink.probe(p),
                _ => Flow::Continue,
            };
            if flow == Flow::Stop {
                halted = true;
                return Flow::Stop;
            }
            let Some(engine) = engine.as_mut() else {
                return Flow::Continue;
            };
            engine.handle(e, &mut findings);
            // Most frames find nothing: skip building a drain for them.
            if !findings.is_empty() {
                for f in findings.drain(..) {
                    if sink.finding(f) == Flow::Stop {
                        halted = true;
                    }
                }
            }
            if halted {
                Flow::Stop
            } else {
                Flow::Continue
            }
        });
        source.notices(&mut notices);
        notices.drain(..).for_each(&mut *report);
        if let Some(end) = ended {
            break end;
        }
        if !halted && sink.tick(engine.as_ref(), &source.progress()) == Flow::Stop {
            halted = true;
        }
    };
    if let Some(engine) = engine.as_mut() {
        engine.finish(&mut |f| {
            if !halted && sink.finding(f) == Flow::Stop {
                halted = true;
            }
        });
    }
    let progress = source.progress();
    sink.end(engine.as_ref(), &progress, &end);
    Outcome {
        engine,
        progress,
        end,
    }
}

/// One run feeding several sinks. The last is the one the user reads: it
/// takes each finding. Those before it look on:
/// each finding by reference ([`Sink::observe`]), every tick and the end,
/// in order before it (metrics beside a report, a screen or JSON Lines; the
/// frames table beside the export's findings). Frames go to the sinks that
/// ask for them. The run stops when any sink asks.
#[derive(Debug, Default)]
pub struct Fanout<S>(pub Vec<S>);

impl<S: Sink> Sink for Fanout<S> {
    fn finding(&mut self, f: Finding) -> Flow {
        let Some((main, watch)) = self.0.split_last_mut() else {
            return Flow::Continue;
        };
        let watched = watch
            .iter_mut()
            .fold(Flow::Continue, |flow, s| either(flow, s.observe(&f)));
        either(watched, main.finding(f))
    }

    fn observe(&mut self, f: &Finding) -> Flow {
        self.0
            .iter_mut()
            .fold(Flow::Continue, |flow, s| either(flow, s.observe(f)))
    }

    fn wants_frames(&self) -> bool {
        self.0.iter().any(Sink::wants_frames)
    }

    fn frame(&mut self, f: &Frame<'_>) -> Flow {
        self.0
            .iter_mut()
            .filter(|s| s.wants_frames())
            .fold(Flow::Continue, |flow, s| either(flow, s.frame(f)))
    }

    fn probe(&mut self, p: &Probe) -> Flow {
        self.0
            .iter_mut()
            .filter(|s| s.wants_frames())
            .fold(Flow::Continue, |flow, s| either(flow, s.probe(p)))
    }

    fn tick(&mut self, engine: Option<&Engine>, progress: &Progress) -> Flow {
        self.0.iter_mut().fold(Flow::Continue, |flow, s| {
            either(flow, s.tick(engine, progress))
        })
    }

    fn end(&mut self, engine: Option<&Engine>, progress: &Progress, end: &End) {
        for s in &mut self.0 {
            s.end(engine, progress, end);
        }
    }
}

/// Stop when either says stop (both have been called).
fn either(a: Flow, b: Flow) -> Flow {
    if a == Flow::Stop || b == Flow::Stop {
        Flow::Stop
    } else {
        Flow::Continue
    }
}

impl<S: Sink + ?Sized> Sink for &mut S {
    fn finding(&mut self, f: Finding) -> Flow {
        (**self).finding(f)
    }

    fn observe(&mut self, f: &Finding) -> Flow {
        (**self).observe(f)
    }

    fn wants_frames(&self) -> bool {
        (**self).wants_frames()
    }

    fn frame(&mut self, f: &Frame<'_>) -> Flow {
        (**self).frame(f)
    }

    fn probe(&mut self, p: &Probe) -> Flow {
        (**self).probe(p)
    }

    fn tick(&mut self, engine: Option<&Engine>, progress: &Progress) -> Flow {
        (**self).tick(engine, progress)
    }

    fn end(&mut self, engine: Option<&Engine>, progress: &Progress, end: &End) {
        (**self).end(engine, progress, end);
    }
}

impl<S: Sink + ?Sized> Sink for Box<S> {
    fn finding(&mut self, f: Finding) -> Flow {
        (**self).finding(f)
    }

    fn observe(&mut self, f: &Finding) -> Flow {
        (**self).observe(f)
    }

    fn wants_frames(&self) -> bool {
        (**self).wants_frames()
    }

    fn frame(&mut self, f: &Frame<'_>) -> Flow {
        (**self).frame(f)
    }

    fn probe(&mut self, p: &Probe) -> Flow {
        (**self).probe(p)
    }

    fn tick(&mut self, engine: Option<&Engine>, progress: &Progress) -> Flow {
        (**self).tick(engine, progress)
    }

    fn end(&mut self, engine: Option<&Engine>, progress: &Progress, end: &End) {
        (**self).end(engine, progress, end);
    }
}

/// A sink that keeps every finding (tests, tools).
#[derive(Debug, Default)]
pub struct Collect {
    /// The findings, in order.
    pub findings: Vec<Finding>,
}

impl Sink for Collect {
    fn finding(&mut self, f: Finding) -> Flow {
        self.findings.push(f);
        Flow::Continue
    }

    fn end(&mut self, _: Option<&Engine>, _: &Progress, _: &End) {}
}

#[cfg(test)]
mod tests {
    use rdma_dissectors::ib::icrc::IcrcStatus;
    use rdma_dissectors::link::LinkType;

    use super::*;
    use crate::engine::{Config, Kind};

    use crate::test_support::ROCE_ACK as ACK;

    /// Hands out frame 1 and frame 2 (whose ICRC the "reader" found bad,
    /// so the engine reports an anomaly on it), and a notice.
    struct TwoFrames {
        pumped: bool,
        told: bool,
    }

    impl Source for TwoFrames {
        fn describe(&self) -> String {
            "two frames".into()
        }

        fn pump(&mut self, emit: &mut dyn FnMut(Event<'_>) -> Flow) -> Option<End> {
            if self.pumped {
                return Some(End::Complete);
            }
            self.pumped = true;
            for (number, icrc) in [
                (1, None),
                (
                    2,
                    Some(IcrcStatus::Invalid {
                        found: 1,
                        computed: 2,
                    }),
                ),
            ] {
                let f = Frame {
                    number,
                    ts_ns: number * 1000,
                    link: LinkType::ETHERNET,
                    orig_len: ACK.len() as u32,
                    data: ACK,
                    icrc,
                };
                if emit(Event::Frame(f)) == Flow::Stop {
                    break;
                }
            }
            None
        }

        fn stop(&mut self) {}

        fn progress(&self) -> Progress {
            Progress::default()
        }

        fn notices(&mut self, out: &mut Vec<Notice>) {
            if self.pumped && !self.told {
                self.told = true;
                out.push(Notice {
                    warning: false,
                    text: "said".into(),
                });
            }
        }
    }

    /// Writes down what it was handed, in order.
    #[derive(Default)]
    struct Log {
        frames: bool,
        /// Stop after this many calls of any kind.
        stop_after: Option<usize>,
        seen: Vec<String>,
        ended: bool,
    }

    impl Log {
        fn saw(&mut self, what: String) -> Flow {
            self.seen.push(what);
            match self.stop_after {
                Some(n) if self.seen.len() >= n => Flow::Stop,
                _ => Flow::Continue,
            }
        }
    }

    impl Sink for Log {
        fn finding(&mut self, f: Finding) -> Flow {
            let what = match f {
                Finding::Anomaly(a) => format!("took {}", a.kind.as_str()),
                Finding::Transaction(t) => format!("took xid {:#x}", t.xid),
            };
            self.saw(what)
        }

        fn observe(&mut self, f: &Finding) -> Flow {
            let what = match f {
                Finding::Anomaly(a) => format!("looked at {}", a.kind.as_str()),
                Finding::Transaction(t) => format!("looked at xid {:#x}", t.xid),
            };
            self.saw(what)
        }

        fn wants_frames(&self) -> bool {
            self.frames
        }

        fn frame(&mut self, f: &Frame<'_>) -> Flow {
            self.saw(format!("frame {}", f.number))
        }

        fn end(&mut self, _: Option<&Engine>, _: &Progress, _: &End) {
            self.ended = true;
        }
    }

    /// The run over [`TwoFrames`], and the notices it reported.
    fn run_into(sinks: &mut [Log]) -> (Outcome, Vec<String>) {
        let mut fan = Fanout(sinks.iter_mut().collect());
        let engine = Some(Engine::new(Config::default()));
        let mut told = Vec::new();
        let outcome = run(
            &mut TwoFrames {
                pumped: false,
                told: false,
            },
            engine,
            &mut fan,
            &mut |n| told.push(n.text),
            &Stop::new(),
        );
        (outcome, told)
    }

    #[test]
    fn a_sink_that_asks_for_frames_gets_them_in_the_run_that_finds() {
        let mut sinks = [Log {
            frames: true,
            ..Log::default()
        }];
        let (outcome, told) = run_into(&mut sinks);
        assert_eq!(outcome.end, End::Complete);
        let kind = Kind::IcrcMismatch.as_str();
        assert_eq!(
            sinks[0].seen,
            ["frame 1", "frame 2", &format!("took {kind}")]
        );
        assert_eq!(told, ["said"], "the notice goes to the reporter, once");
        assert_eq!(outcome.engine.map(|e| e.state().totals.frames), Some(2));
    }

    #[test]
    fn a_fanout_gives_the_findings_to_the_last_and_frames_to_who_asks() {
        let mut sinks = [
            Log {
                frames: true,
                ..Log::default()
            },
            Log::default(),
        ];
        let (_, told) = run_into(&mut sinks);
        let kind = Kind::IcrcMismatch.as_str();
        assert_eq!(
            sinks[0].seen,
            ["frame 1", "frame 2", &format!("looked at {kind}")]
        );
        assert_eq!(sinks[1].seen, [format!("took {kind}")]);
        assert_eq!(told, ["said"], "told once, not once per sink");
        assert!(sinks.iter().all(|s| s.ended), "every sink sees the end");
    }

    #[test]
    fn a_fanout_stops_the_run_when_any_of_its_sinks_asks() {
        let mut sinks = [
            Log {
                frames: true,
                stop_after: Some(1),
                ..Log::default()
            },
            Log::default(),
        ];
        let (outcome, _) = run_into(&mut sinks);
        // Frame 2 is dropped unread, by the engine too.
        assert_eq!(sinks[0].seen, ["frame 1"]);
        assert_eq!(outcome.engine.map(|e| e.state().totals.frames), Some(0));
        assert!(sinks[1].seen.is_empty());
    }
}

/// Opens the same input again, from its start: how a front end that keeps
/// no frames (the TUI) gets the bytes of a few of them back on request.
/// `None` where the input cannot be read twice (live capture, a pipe).
pub type Reopen = Box<dyn Fn() -> Result<Box<dyn Source>, String> + Send>;

/// A frame kept whole, out of the source's buffers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedFrame {
    /// 1-based frame number.
    pub number: u64,
    /// Capture time, ns since the epoch.
    pub ts_ns: u64,
    /// The link type it was captured on.
    pub link: rdma_dissectors::link::LinkType,
    /// Length on the wire.
    pub orig_len: u32,
    /// The captured bytes.
    pub data: Vec<u8>,
}

/// The frames of `source` numbered in `wanted`, in order: read from the
/// start up to the last one wanted, then the source is stopped (a re-read
/// costs what reading that far costs, once per request). Frames the source
/// ended before are missing from the result, which the caller reports.
///
/// # Errors
/// The source's own error, when it failed before the last frame wanted.
pub fn collect_frames(
    source: &mut dyn Source,
    wanted: &std::collections::BTreeSet<u64>,
) -> Result<Vec<OwnedFrame>, String> {
    let Some(&last) = wanted.last() else {
        return Ok(Vec::new());
    };
    let mut got = Vec::new();
    let mut stopped = false;
    loop {
        let end = source.pump(&mut |e| {
            if let Event::Frame(f) = e {
                if wanted.contains(&f.number) {
                    got.push(OwnedFrame {
                        number: f.number,
                        ts_ns: f.ts_ns,
                        link: f.link,
                        orig_len: f.orig_len,
                        data: f.data.to_vec(),
                    });
                }
                if f.number >= last {
                    return Flow::Stop;
                }
            }
            Flow::Continue
        });
        if !stopped && got.last().is_some_and(|f| f.number >= last) {
            source.stop();
            stopped = true;
        }
        if let Some(end) = end {
            return match end.error() {
                Some(e) if got.len() < wanted.len() => Err(e.to_string()),
                _ => Ok(got),
            };
        }
    }
}
