//! The one loop every front end runs: a [`Source`]'s events through the
//! [`Engine`] into a [`Sink`].
//!
//! ```text
//!   Source ──Event──► Engine::handle ──Finding──► Sink::finding
//!   (file, live        (pure state                (report, JSON Lines,
//!    capture, probes)   machine)                    live output, TUI feed)
//!      │                                            ▲
//!      └── after every pump: Sink::tick(engine, progress), notices ──┘
//!   end: Event::End ──► last findings ──► Sink::end(engine, progress, End)
//! ```
//!
//! `frames` runs the same loop without an engine: the sink sees each event.
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

use crate::engine::{Engine, Event, Finding};

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

    /// Every event, when the run has no engine (`frames`).
    fn event(&mut self, e: &Event<'_>) -> Flow {
        let _ = e;
        Flow::Continue
    }

    /// A finding that another sink takes after this one (see [`Tee`]): a
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

    /// Something the source said.
    fn notice(&mut self, n: Notice);

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

/// Runs `source` to its end through `engine` (or straight to the sink when
/// there is none) into `sink`, until the source ends or `stop` is asked for.
pub fn run(
    source: &mut dyn Source,
    mut engine: Option<Engine>,
    sink: &mut dyn Sink,
    stop: &Stop,
) -> Outcome {
    let mut notices = Vec::new();
    // Set once the sink wants nothing more: later events are dropped unread.
    let mut halted = false;
    let mut stopping = false;
    let mut findings = Vec::with_capacity(16);
    let end = loop {
        if !stopping && (halted || stop.requested()) {
            source.stop();
            stopping = true;
        }
        let ended = match engine.as_mut() {
            Some(engine) => source.pump(&mut |e| {
                if halted {
                    return Flow::Stop;
                }
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
            }),
            None => source.pump(&mut |e| {
                if !halted && sink.event(&e) == Flow::Stop {
                    halted = true;
                }
                if halted {
                    Flow::Stop
                } else {
                    Flow::Continue
                }
            }),
        };
        source.notices(&mut notices);
        for n in notices.drain(..) {
            sink.notice(n);
        }
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

/// One run feeding two sinks: `watch` looks at every finding (by
/// reference, see [`Sink::observe`]), tick and end beside `main`, which
/// takes the findings and shows the notices (metrics beside a report, a
/// screen or JSON Lines). The run stops when either asks.
#[derive(Debug)]
pub struct Tee<W, M> {
    /// The sink that looks on (metrics).
    pub watch: W,
    /// The sink the user reads.
    pub main: M,
}

impl<W: Sink, M: Sink> Sink for Tee<W, M> {
    fn finding(&mut self, f: Finding) -> Flow {
        let watched = self.watch.observe(&f);
        let taken = self.main.finding(f);
        both(watched, taken)
    }

    fn event(&mut self, e: &Event<'_>) -> Flow {
        let watched = self.watch.event(e);
        both(watched, self.main.event(e))
    }

    fn tick(&mut self, engine: Option<&Engine>, progress: &Progress) -> Flow {
        let watched = self.watch.tick(engine, progress);
        both(watched, self.main.tick(engine, progress))
    }

    fn notice(&mut self, n: Notice) {
        self.main.notice(n);
    }

    fn end(&mut self, engine: Option<&Engine>, progress: &Progress, end: &End) {
        self.watch.end(engine, progress, end);
        self.main.end(engine, progress, end);
    }
}

fn both(a: Flow, b: Flow) -> Flow {
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

    fn event(&mut self, e: &Event<'_>) -> Flow {
        (**self).event(e)
    }

    fn tick(&mut self, engine: Option<&Engine>, progress: &Progress) -> Flow {
        (**self).tick(engine, progress)
    }

    fn notice(&mut self, n: Notice) {
        (**self).notice(n);
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

    fn event(&mut self, e: &Event<'_>) -> Flow {
        (**self).event(e)
    }

    fn tick(&mut self, engine: Option<&Engine>, progress: &Progress) -> Flow {
        (**self).tick(engine, progress)
    }

    fn notice(&mut self, n: Notice) {
        (**self).notice(n);
    }

    fn end(&mut self, engine: Option<&Engine>, progress: &Progress, end: &End) {
        (**self).end(engine, progress, end);
    }
}

/// A sink that keeps every finding and notice (tests, tools).
#[derive(Debug, Default)]
pub struct Collect {
    /// The findings, in order.
    pub findings: Vec<Finding>,
    /// What the source said.
    pub notices: Vec<Notice>,
}

impl Sink for Collect {
    fn finding(&mut self, f: Finding) -> Flow {
        self.findings.push(f);
        Flow::Continue
    }

    fn notice(&mut self, n: Notice) {
        self.notices.push(n);
    }

    fn end(&mut self, _: Option<&Engine>, _: &Progress, _: &End) {}
}
