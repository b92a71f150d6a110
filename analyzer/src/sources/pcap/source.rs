//! A capture file as a pipeline source: read on a thread of its own in
//! batches, while the pipeline's thread dissects and correlates.
//!
//! ```text
//!  reader thread: PcapReader::fill ─► (ICRC check if the engine is behind) ─► channel ─┐
//!  pipeline thread: FileSource::pump ◄──────────────────────────────────────────────────┘
//!                   └─► Event::Frame per frame (with the ICRC verdict if checked); batch recycled
//! ```
//!
//! The frames' RoCEv2 ICRC (the largest per-byte cost) goes to whichever
//! thread has time: the reader checks a batch when the engine already has
//! work queued, and otherwise hands it over unchecked so the engine checks
//! it while dissecting (the verdict is the same function's either way).
//! Batches are recycled, so memory stays at a few batches whatever the file
//! size. When no thread can be started, the same reader runs inline.
//!
//! The reading thread also runs the decompressor of a gzip or zstd input,
//! and the merge of several inputs ([`super::merge`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use rdma_dissectors::stack;

use super::input::{self, Input};
use super::merge::{self, Merge, MergeInput};
use super::read::{Batch, BatchReader, ReadError, ReadErrorKind};
use crate::engine::Event;
use crate::pipeline::{Damage, End, Flow, Notice, Progress, Source};

/// Batches in flight between the threads.
const BATCH_DEPTH: usize = 4;
/// The reader checks a batch's ICRCs itself when at least this many batches
/// wait for the engine; below it the engine is about to run dry and checks
/// them instead.
const ICRC_BACKLOG: usize = 2;

/// Batches sent and not yet taken by the engine, so the reader can tell
/// which of the two threads is behind.
#[derive(Clone, Default)]
struct Backlog(Arc<AtomicUsize>);

impl Backlog {
    fn reader_has_time(&self) -> bool {
        self.0.load(Ordering::Relaxed) >= ICRC_BACKLOG
    }

    fn sent(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    fn taken(&self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

enum Msg {
    Batch(Batch),
    End(End),
}

/// A reader's failure as the pipeline reports it.
fn damage(e: &ReadError) -> End {
    End::Damaged(Damage {
        frame: e.frame,
        offset: e.offset,
        message: e.to_string(),
    })
}

/// Reads every batch and sends it, until the end, damage, the stop flag or
/// a hung-up receiver.
fn read_loop(
    mut reader: Box<dyn BatchReader>,
    config: &stack::Config,
    tx: &SyncSender<Msg>,
    spare: &Receiver<Batch>,
    backlog: &Backlog,
    stop: &AtomicBool,
) {
    loop {
        if stop.load(Ordering::Relaxed) {
            let _ = tx.send(Msg::End(End::Stopped));
            return;
        }
        let mut batch = spare.try_recv().unwrap_or_default();
        let r = reader.fill(&mut batch);
        if !batch.frames.is_empty() || !batch.notes.is_empty() || !batch.info.is_empty() {
            if config.verify_icrc && backlog.reader_has_time() {
                batch.check_icrcs(config);
            }
            backlog.sent();
            if tx.send(Msg::Batch(batch)).is_err() {
                return;
            }
        }
        let end = match r {
            Ok(true) => continue,
            Ok(false) => End::Complete,
            Err(e) => damage(&e),
        };
        let _ = tx.send(Msg::End(end));
        return;
    }
}

enum Mode {
    /// The reader on its own thread.
    Threaded {
        rx: Receiver<Msg>,
        recycle: SyncSender<Batch>,
        backlog: Backlog,
        stop: Arc<AtomicBool>,
        worker: Option<JoinHandle<()>>,
    },
    /// No thread could be had: the reader runs in `pump`.
    Inline {
        reader: Box<dyn BatchReader>,
        batch: Batch,
        stopped: bool,
    },
    /// The end has been handed out.
    Ended,
}

/// Captures as a [`Source`]: a pcap or pcapng file or stream, plain or
/// compressed, or several of them merged by time.
pub struct FileSource {
    name: String,
    mode: Mode,
    progress: Progress,
    /// Raw bytes read from each input so far (the progress gauge).
    consumed: Vec<Arc<AtomicU64>>,
    /// The latest capture time handed out, and whether time went backwards
    /// yet (said once: it makes latencies across it unknown).
    clock: (u64, bool),
    notices: Vec<Notice>,
}

/// Whether an input that fails before its first record is one a directory
/// happened to hold next to the captures (any file that is not one).
fn not_a_capture(e: &ReadError) -> bool {
    matches!(e.kind, ReadErrorKind::Format(_))
}

impl FileSource {
    /// Opens `path` (`-`: standard input) and checks that it is a capture,
    /// before any thread starts (so a front end can refuse a non-capture
    /// before it takes the screen).
    ///
    /// # Errors
    /// When the file cannot be opened or is not a pcap/pcapng file.
    pub fn open(path: &Path, config: &stack::Config) -> Result<Self, ReadError> {
        Self::open_all(&[path.to_path_buf()], config)
    }

    /// Opens the inputs of a command line: files, `-` for standard input,
    /// directories (their files in name order), each plain, gzip or zstd;
    /// several are merged by time. An input that is not a capture is
    /// passed over with a notice when a directory held it, and is damage
    /// (told, the others read, the run ends damaged) when it was named.
    ///
    /// # Errors
    /// When no input can be read as a capture: the first input's error.
    pub fn open_all(paths: &[PathBuf], config: &stack::Config) -> Result<Self, ReadError> {
        let expanded = input::expand(paths)?;
        let mut notes = expanded.notes;
        let mut readers = Vec::new();
        let mut failed = Vec::new();
        let mut consumed = Vec::new();
        let mut total = Some(0u64);
        // A long rotated set: each file is checked now and closed, and
        // opened again when the merge reaches it.
        let close = expanded.paths.len() > merge::MAX_OPEN;
        // Files of a directory that are not captures: (path, why).
        let mut passed = Vec::new();
        for (path, from_dir) in &expanded.paths {
            let opened = Input::open(path).and_then(|i| {
                let (size, count) = (i.size, i.consumed.clone());
                i.reader().map(|r| (r, size, count))
            });
            match opened {
                Ok((r, size, count)) => {
                    let stdin = input::is_stdin(path);
                    readers.push(match (close, stdin) {
                        (true, false) => MergeInput::Closed(path.clone(), count.clone()),
                        (_, true) => MergeInput::Open(Box::new(r), None),
                        (false, false) => MergeInput::Open(Box::new(r), Some(path.clone())),
                    });
                    // A file read again counts twice its first bytes:
                    // progress is a gauge, kept under the total.
                    consumed.push(count);
                    total = total.zip(size).map(|(t, s)| t + s);
                }
                Err(e) if *from_dir && not_a_capture(&e) => {
                    passed.push((path.display().to_string(), e.to_string()));
                }
                Err(e) => failed.push(e),
            }
        }
        notes.extend(passed_over(passed));
        let name = paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" ");
        let reader: Box<dyn BatchReader> = match (readers.len(), failed.is_empty()) {
            (0, _) => {
                return Err(failed.into_iter().next().unwrap_or_else(|| {
                    ReadError::at_start(
                        PathBuf::from(name.clone()),
                        ReadErrorKind::Io(std::io::Error::new(
                            std::io::ErrorKind::NotFound,
                            "no capture to read there (pcap or pcapng, plain, gzip or zstd)",
                        )),
                    )
                }))
            }
            (1, true) => match readers.pop() {
                Some(MergeInput::Open(r, _)) => r,
                other => Box::new(Merge::of(other.into_iter().collect(), failed)),
            },
            _ => Box::new(Merge::of(readers, failed)),
        };
        let mut source = Self::start(name, reader, total, config);
        source.consumed = consumed;
        source.notices.extend(notes.into_iter().map(|text| Notice {
            warning: true,
            text,
        }));
        Ok(source)
    }

    /// Reads `reader` on a thread of its own (inline when none can be had).
    pub fn start(
        name: String,
        reader: Box<dyn BatchReader>,
        bytes_total: Option<u64>,
        config: &stack::Config,
    ) -> Self {
        let config = *config;
        let (tx, rx) = sync_channel::<Msg>(BATCH_DEPTH);
        let (recycle, spare) = sync_channel::<Batch>(BATCH_DEPTH + 2);
        let backlog = Backlog::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (theirs, their_stop) = (backlog.clone(), stop.clone());
        // Handed over through a slot so that it comes back if the thread
        // cannot be started.
        let slot = Arc::new(Mutex::new(Some(reader)));
        let their_slot = slot.clone();
        let worker = std::thread::Builder::new()
            .name("capture-read".into())
            .spawn(move || {
                let reader = their_slot.lock().ok().and_then(|mut r| r.take());
                if let Some(reader) = reader {
                    read_loop(reader, &config, &tx, &spare, &theirs, &their_stop);
                }
            });
        let mode = match worker {
            Ok(worker) => Mode::Threaded {
                rx,
                recycle,
                backlog,
                stop,
                worker: Some(worker),
            },
            Err(_) => match slot.lock().ok().and_then(|mut r| r.take()) {
                Some(reader) => Mode::Inline {
                    reader,
                    batch: Batch::default(),
                    stopped: false,
                },
                None => Mode::Ended,
            },
        };
        FileSource {
            name,
            mode,
            progress: Progress {
                bytes_total,
                ..Progress::default()
            },
            consumed: Vec::new(),
            clock: (0, false),
            notices: Vec::new(),
        }
    }

    /// Raw input bytes read so far, when counted (never past the total).
    fn raw_consumed(&self) -> Option<u64> {
        if self.consumed.is_empty() {
            return None;
        }
        let n: u64 = self
            .consumed
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum();
        Some(self.progress.bytes_total.map_or(n, |t| n.min(t)))
    }
}

/// Hands every frame of `batch` to `emit`; false when it wants no more.
/// The first frame stamped before the one it follows is noted in `notices`.
fn emit_batch(
    name: &str,
    batch: &Batch,
    progress: &mut Progress,
    clock: &mut (u64, bool),
    notices: &mut Vec<Notice>,
    emit: &mut dyn FnMut(Event<'_>) -> Flow,
) -> bool {
    notices.extend(batch.notes.iter().map(|text| Notice {
        warning: true,
        text: text.clone(),
    }));
    notices.extend(batch.info.iter().map(|text| Notice {
        warning: false,
        text: text.clone(),
    }));
    for f in &batch.frames {
        if f.ts_ns < clock.0 && !clock.1 {
            clock.1 = true;
            notices.push(Notice {
                warning: true,
                text: format!(
                    "{name}: frame {} is stamped {:.1} µs before the frame it follows: the capture's clock went backwards (said once); latencies across it are reported unknown",
                    f.number,
                    (clock.0 - f.ts_ns) as f64 / 1000.0
                ),
            });
        }
        clock.0 = clock.0.max(f.ts_ns);
        progress.frames = f.number;
        if emit(Event::Frame(batch.frame(f))) == Flow::Stop {
            return false;
        }
    }
    progress.bytes_read = batch.end_offset;
    true
}

/// Why a worker thread ended without saying how.
fn worker_failure(name: &str, worker: Option<JoinHandle<()>>) -> End {
    let why = match worker.map(JoinHandle::join) {
        Some(Err(panic)) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".into());
            format!("the reading thread panicked ({msg})")
        }
        _ => "the reading thread ended without a word".into(),
    };
    End::Failed(format!(
        "{name}: {why}; frames before it were analyzed. This is a bug: please report it with the capture"
    ))
}

impl Source for FileSource {
    fn describe(&self) -> String {
        self.name.clone()
    }

    fn pump(&mut self, emit: &mut dyn FnMut(Event<'_>) -> Flow) -> Option<End> {
        let end = match &mut self.mode {
            Mode::Threaded {
                rx,
                recycle,
                backlog,
                worker,
                ..
            } => match rx.recv() {
                Ok(Msg::Batch(mut b)) => {
                    backlog.taken();
                    let _ = emit_batch(
                        &self.name,
                        &b,
                        &mut self.progress,
                        &mut self.clock,
                        &mut self.notices,
                        emit,
                    );
                    b.frames.clear();
                    let _ = recycle.try_send(b);
                    return None;
                }
                Ok(Msg::End(end)) => {
                    if let Some(w) = worker.take() {
                        let _ = w.join();
                    }
                    end
                }
                // The thread hung up without an end: it panicked.
                Err(_) => worker_failure(&self.name, worker.take()),
            },
            Mode::Inline {
                reader,
                batch,
                stopped,
            } => {
                if *stopped {
                    End::Stopped
                } else {
                    let r = reader.fill(batch);
                    let _ = emit_batch(
                        &self.name,
                        batch,
                        &mut self.progress,
                        &mut self.clock,
                        &mut self.notices,
                        emit,
                    );
                    match r {
                        Ok(true) => return None,
                        Ok(false) => End::Complete,
                        Err(e) => damage(&e),
                    }
                }
            }
            Mode::Ended => End::Stopped,
        };
        self.mode = Mode::Ended;
        Some(end)
    }

    fn stop(&mut self) {
        match &mut self.mode {
            Mode::Threaded { stop, .. } => stop.store(true, Ordering::Relaxed),
            Mode::Inline { stopped, .. } => *stopped = true,
            Mode::Ended => {}
        }
    }

    fn progress(&self) -> Progress {
        let mut p = self.progress;
        if let Some(n) = self.raw_consumed() {
            p.bytes_read = n;
        }
        p
    }

    fn notices(&mut self, out: &mut Vec<Notice>) {
        out.append(&mut self.notices);
    }
}

impl Drop for FileSource {
    fn drop(&mut self) {
        // A source dropped before its end: let the thread go.
        if let Mode::Threaded {
            stop, rx, worker, ..
        } = &mut self.mode
        {
            stop.store(true, Ordering::Relaxed);
            while rx.try_recv().is_ok() {}
            if let Some(w) = worker.take() {
                // Unblocked: the channel is drained and the flag is set.
                drop(std::mem::replace(rx, sync_channel(1).1));
                let _ = w.join();
            }
        }
    }
}

/// The notices for a directory's files that are not captures: each on its
/// own line when there are few, one line with a count and the first names
/// when there are many (30 lines of them buried the report's first line).
fn passed_over(passed: Vec<(String, String)>) -> Vec<String> {
    /// At most this many get a line each.
    const EACH: usize = 3;
    if passed.len() <= EACH {
        return passed
            .into_iter()
            .map(|(_, why)| format!("{why}; passed over"))
            .collect();
    }
    let names: Vec<&str> = passed.iter().take(EACH).map(|(p, _)| p.as_str()).collect();
    let first = passed.first().map_or("", |(_, why)| why.as_str());
    vec![format!(
        "{} files in the directories given are not captures and were passed over: {}, … (the first: {first})",
        passed.len(),
        names.join(", "),
    )]
}
