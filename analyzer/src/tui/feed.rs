//! Where the screen's data comes from: the pipeline runs on a thread of its
//! own and [`TuiSink`] sends what it finds over a bounded channel.
//!
//! ```text
//!  pipeline thread: Source ─► Engine ─► TuiSink ──Msg──► channel ─► Tap ─► Model ─► draw
//!                                        (findings in batches, a state snapshot every 100 ms)
//! ```
//!
//! A file source blocks when the channel is full (nothing is lost; the
//! reader just waits for the screen). A live source cannot wait for the
//! wire, so its messages are offered instead: dropped and counted when the
//! channel is full.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::engine::{Config, Engine, Finding, State};
use crate::pipeline::{self, End, Fanout, Flow, Notice, Progress, Sink, Source, Stop};

/// What the pipeline thread sends.
#[derive(Debug)]
pub enum Msg {
    /// Findings, in the order the engine produced them.
    Findings(Vec<Finding>),
    /// The engine's state at some point.
    Snapshot {
        /// Aggregate state.
        state: Box<State>,
        /// Progress at that point.
        progress: Progress,
    },
    /// Something the source said (a capture that stopped, probes missing).
    Notice(Notice),
    /// The source is exhausted: final state.
    Done {
        /// Aggregate state after `Event::End`.
        state: Box<State>,
        /// Final progress.
        progress: Progress,
        /// Why it stopped early, if it did (damage or failure).
        error: Option<String>,
    },
}

/// The sending end.
#[derive(Clone)]
pub struct Feed {
    tx: SyncSender<Msg>,
    stop: Stop,
    dropped: Arc<AtomicU64>,
}

/// The receiving end the event loop reads.
pub struct Tap {
    /// Messages.
    pub rx: Receiver<Msg>,
    stop: Stop,
    dropped: Arc<AtomicU64>,
}

/// Messages the channel holds before a file source waits (or a live one
/// drops): with up to 1024 findings a message, this bounds what waits for
/// the screen outside the memory budget's count to some thousands.
pub const CHANNEL_DEPTH: usize = 16;

/// A connected feed and tap; `stop` is what quitting the screen sets.
pub fn channel(stop: Stop) -> (Feed, Tap) {
    let (tx, rx) = mpsc::sync_channel(CHANNEL_DEPTH);
    let dropped = Arc::new(AtomicU64::new(0));
    (
        Feed {
            tx,
            stop: stop.clone(),
            dropped: dropped.clone(),
        },
        Tap { rx, stop, dropped },
    )
}

impl Feed {
    /// Sends, waiting while the channel is full. False once nobody listens.
    pub fn send(&self, m: Msg) -> bool {
        !self.stopped() && self.tx.send(m).is_ok()
    }

    /// Sends if there is room; otherwise counts a drop (live sources).
    /// False once nobody listens or the UI asked to stop.
    pub fn offer(&self, m: Msg) -> bool {
        if self.stopped() {
            return false;
        }
        match self.tx.try_send(m) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(TrySendError::Disconnected(_)) => false,
        }
    }

    /// Whether the UI asked the source to stop.
    pub fn stopped(&self) -> bool {
        self.stop.requested()
    }
}

impl Tap {
    /// Asks the source to stop.
    pub fn stop(&self) {
        self.stop.request();
    }

    /// Whether a stop was asked for (the quit key, or a signal).
    pub fn stop_requested(&self) -> bool {
        self.stop.requested()
    }

    /// Messages the source dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// How often findings and a state snapshot go to the screen.
const FLUSH_EVERY: Duration = Duration::from_millis(100);
/// Findings per batch at most, so a burst does not wait for the timer.
const BATCH: usize = 1024;

/// The pipeline's sink for the screen: findings in batches, the engine's
/// state on a timer, the end with its error.
pub struct TuiSink {
    feed: Feed,
    live: bool,
    batch: Vec<Finding>,
    last_flush: Instant,
    /// Time between snapshots: grows when cloning the state gets slow (many
    /// connections with long credit histories) so the clone stays < 10% of the work.
    flush_every: Duration,
}

impl TuiSink {
    /// A sink sending to `feed`; `live` sources never wait for the screen.
    pub fn new(feed: Feed, live: bool) -> Self {
        TuiSink {
            feed,
            live,
            batch: Vec::with_capacity(BATCH),
            last_flush: Instant::now(),
            flush_every: FLUSH_EVERY,
        }
    }

    fn send(&self, m: Msg) -> bool {
        if self.live {
            self.feed.offer(m)
        } else {
            self.feed.send(m)
        }
    }

    fn send_batch(&mut self) -> bool {
        let fs = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        fs.is_empty() || self.send(Msg::Findings(fs))
    }

    fn flow(go: bool) -> Flow {
        if go {
            Flow::Continue
        } else {
            Flow::Stop
        }
    }
}

impl Sink for TuiSink {
    fn finding(&mut self, f: Finding) -> Flow {
        self.batch.push(f);
        if self.batch.len() >= BATCH {
            return Self::flow(self.send_batch());
        }
        Flow::Continue
    }

    fn tick(&mut self, engine: Option<&Engine>, progress: &Progress) -> Flow {
        if self.last_flush.elapsed() < self.flush_every {
            return Self::flow(!self.feed.stopped());
        }
        self.last_flush = Instant::now();
        if !self.send_batch() {
            return Flow::Stop;
        }
        let Some(engine) = engine else {
            return Flow::Continue;
        };
        let t = Instant::now();
        let state = Box::new(engine.state().clone());
        self.flush_every = FLUSH_EVERY.max(t.elapsed() * 10);
        Self::flow(self.send(Msg::Snapshot {
            state,
            progress: *progress,
        }))
    }

    fn end(&mut self, engine: Option<&Engine>, progress: &Progress, end: &End) {
        let fs = std::mem::take(&mut self.batch);
        if !fs.is_empty() {
            let _ = self.feed.send(Msg::Findings(fs));
        }
        let done = Msg::Done {
            state: Box::new(engine.map(|e| e.state().clone()).unwrap_or_default()),
            progress: *progress,
            error: end.error().map(str::to_string),
        };
        // The final state goes through even from a live source; once the
        // screen has quit it is left for whoever still reads (never waited on:
        // the screen may be joining this thread).
        if self.feed.stopped() {
            let _ = self.feed.tx.try_send(done);
        } else {
            let _ = self.feed.tx.send(done);
        }
    }
}

/// Runs `source` through a new engine on a thread of its own, feeding the
/// screen; `stop` ends it (the quit key, a signal).
///
/// # Errors
/// When the thread cannot be started.
pub fn spawn(
    source: Box<dyn Source>,
    config: Config,
    stop: Stop,
) -> std::io::Result<(Tap, std::thread::JoinHandle<()>)> {
    spawn_beside(source, config, stop, Vec::new())
}

/// [`spawn`], with the sinks of `beside` looking at the run beside the
/// screen (the metrics of `live --metrics`): each sees every finding, tick
/// and the end on the pipeline thread ([`pipeline::Fanout`]).
///
/// # Errors
/// When the thread cannot be started.
pub fn spawn_beside(
    mut source: Box<dyn Source>,
    config: Config,
    stop: Stop,
    beside: Vec<Box<dyn Sink + Send>>,
) -> std::io::Result<(Tap, std::thread::JoinHandle<()>)> {
    let (feed, tap) = channel(stop.clone());
    let live = source.is_live();
    let h = std::thread::Builder::new()
        .name("pipeline".into())
        .spawn(move || {
            // Notices go to the screen in turn with the findings, as
            // the screen's sink sends those: live sources never wait.
            let told = feed.clone();
            let mut report = |n| {
                let _ = if live {
                    told.offer(Msg::Notice(n))
                } else {
                    told.send(Msg::Notice(n))
                };
            };
            // The screen last: it takes the findings.
            let mut sinks = beside;
            sinks.push(Box::new(TuiSink::new(feed, live)));
            let engine = Some(Engine::new(config));
            pipeline::run(
                source.as_mut(),
                engine,
                &mut Fanout(sinks),
                &mut report,
                &stop,
            );
        })?;
    Ok((tap, h))
}
