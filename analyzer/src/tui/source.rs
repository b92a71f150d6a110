//! Where the TUI's data comes from: a [`Source`] runs on its own thread,
//! feeds the engine and sends what it finds over a channel.
//!
//! ```text
//!  FileSource (pcap) ─┐                          ┌─► Model ─► draw
//!  live capture ──────┼─► Pump: Engine::handle ──┤ Msg::Findings / Snapshot / Done
//!  eBPF probes ───────┘       (worker thread)    └─ channel (bounded)
//! ```
//!
//! A file source blocks when the channel is full (nothing is lost; the
//! reader just waits for the screen). A live source cannot wait for the
//! wire, so it uses [`Feed::offer`], which drops and counts instead.

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::engine::{Config, Engine, Event, Finding, State};
use crate::sources::pcap::PcapReader;

/// How far a source has got.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Frames handed to the engine.
    pub frames: u64,
    /// Bytes of input consumed.
    pub bytes_read: u64,
    /// Total bytes, when known (a file); `None` for live sources.
    pub bytes_total: Option<u64>,
}

/// What a source sends.
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
    /// The source is exhausted: final state.
    Done {
        /// Aggregate state after `Event::End`.
        state: Box<State>,
        /// Final progress.
        progress: Progress,
        /// Why it stopped early, if it did.
        error: Option<String>,
    },
}

/// The sending end a source writes to.
#[derive(Clone)]
pub struct Feed {
    tx: SyncSender<Msg>,
    stop: Arc<AtomicBool>,
    dropped: Arc<AtomicU64>,
}

/// The receiving end the event loop reads.
pub struct Tap {
    /// Messages.
    pub rx: Receiver<Msg>,
    stop: Arc<AtomicBool>,
    dropped: Arc<AtomicU64>,
}

/// Messages the channel holds before a file source waits (or a live one drops).
pub const CHANNEL_DEPTH: usize = 64;

/// A connected feed and tap.
pub fn channel() -> (Feed, Tap) {
    let (tx, rx) = mpsc::sync_channel(CHANNEL_DEPTH);
    let stop = Arc::new(AtomicBool::new(false));
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
        self.stop.load(Ordering::Relaxed)
    }
}

impl Tap {
    /// Asks the source to stop.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Messages the source dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// Something that produces engine input on its own thread.
pub trait Source: Send + 'static {
    /// A short description for the status line.
    fn describe(&self) -> String;
    /// Whether the source cannot wait (live capture): it drops rather than blocks,
    /// and a paused view keeps draining it.
    fn live(&self) -> bool {
        false
    }
    /// Runs to exhaustion (or until `feed` says stop), sending as it goes.
    fn run(self: Box<Self>, feed: Feed);
}

/// How often a source sends findings and a state snapshot.
const FLUSH_EVERY: Duration = Duration::from_millis(100);
/// Findings per batch at most, so a burst does not wait for the timer.
const BATCH: usize = 4096;

/// Runs the engine for a source and batches what it finds: the part every
/// source (file, live capture, probes) shares.
pub struct Pump {
    engine: Engine,
    feed: Feed,
    batch: Vec<Finding>,
    scratch: Vec<Finding>,
    last_flush: Instant,
    /// Time between snapshots: grows when cloning the state gets slow (many
    /// connections with long credit histories) so the clone stays < 10% of the work.
    flush_every: Duration,
    /// Progress so far (the source updates `bytes_read`).
    pub progress: Progress,
    live: bool,
}

impl Pump {
    /// A pump over a new engine. `live` sources never wait for the screen.
    pub fn new(config: Config, feed: Feed, live: bool) -> Self {
        Pump {
            engine: Engine::new(config),
            feed,
            batch: Vec::with_capacity(BATCH),
            scratch: Vec::with_capacity(16),
            last_flush: Instant::now(),
            flush_every: FLUSH_EVERY,
            progress: Progress::default(),
            live,
        }
    }

    /// Handles one event. False once the UI is gone or asked to stop.
    pub fn handle(&mut self, e: Event<'_>) -> bool {
        if matches!(e, Event::Frame { .. }) {
            self.progress.frames += 1;
        }
        self.engine.handle(e, &mut self.scratch);
        self.batch.append(&mut self.scratch);
        // Findings go out in batches; the state (a clone) only on the timer.
        if self.batch.len() >= BATCH && !self.send_batch() {
            return false;
        }
        if self.last_flush.elapsed() >= self.flush_every {
            return self.flush();
        }
        !self.feed.stopped()
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

    /// Sends the pending findings and a snapshot.
    pub fn flush(&mut self) -> bool {
        self.last_flush = Instant::now();
        if !self.send_batch() {
            return false;
        }
        let t = Instant::now();
        let state = Box::new(self.engine.state().clone());
        self.flush_every = FLUSH_EVERY.max(t.elapsed() * 10);
        self.send(Msg::Snapshot {
            state,
            progress: self.progress,
        })
    }

    /// Ends the run: `Event::End`, the last findings and the final state.
    pub fn finish(mut self, error: Option<String>) {
        self.engine.handle(Event::End, &mut self.scratch);
        self.batch.append(&mut self.scratch);
        let fs = std::mem::take(&mut self.batch);
        if !fs.is_empty() && !self.feed.send(Msg::Findings(fs)) {
            return;
        }
        // The final state always goes through, even from a live source.
        let _ = self.feed.send(Msg::Done {
            state: Box::new(self.engine.state().clone()),
            progress: self.progress,
            error,
        });
    }
}

/// A pcap or pcapng file, read as fast as the screen takes it.
pub struct FileSource {
    /// The file.
    pub path: PathBuf,
    /// Engine configuration.
    pub config: Config,
}

impl Source for FileSource {
    fn describe(&self) -> String {
        self.path.display().to_string()
    }

    fn run(self: Box<Self>, feed: Feed) {
        let total = fs::metadata(&self.path).map(|m| m.len()).ok();
        let mut pump = Pump::new(self.config.clone(), feed, false);
        pump.progress.bytes_total = total;
        let mut reader = match PcapReader::open(&self.path) {
            Ok(r) => r,
            Err(e) => return pump.finish(Some(e.to_string())),
        };
        let mut error = None;
        loop {
            match reader.next_packet() {
                Ok(Some(p)) => {
                    let ev = Event::Frame {
                        number: p.number,
                        ts_ns: p.ts_ns,
                        link: p.link_type,
                        orig_len: p.orig_len,
                        data: p.data,
                    };
                    if !pump.handle(ev) {
                        return;
                    }
                    pump.progress.bytes_read = reader.position();
                }
                Ok(None) => break,
                Err(e) => {
                    error = Some(e.to_string());
                    break;
                }
            }
        }
        pump.progress.bytes_read = reader.position();
        pump.finish(error);
    }
}

/// Starts `source` on its own thread.
///
/// # Errors
/// When the thread cannot be started.
pub fn spawn(source: Box<dyn Source>) -> std::io::Result<(Tap, std::thread::JoinHandle<()>)> {
    let (feed, tap) = channel();
    let h = std::thread::Builder::new()
        .name("tui-source".into())
        .spawn(move || source.run(feed))?;
    Ok((tap, h))
}

/// Runs a source to the end on this thread and returns the model it builds
/// (tests, benchmarks and snapshots: the same path as the screen, no terminal).
///
/// # Errors
/// When the source thread cannot be started.
pub fn load(source: Box<dyn Source>, model: &mut super::model::Model) -> std::io::Result<()> {
    let (tap, h) = spawn(source)?;
    while let Ok(m) = tap.rx.recv() {
        model.apply(m);
    }
    let _ = h.join();
    model.counters.dropped = tap.dropped();
    Ok(())
}
