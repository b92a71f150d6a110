//! The thread that writes dumps. The pipeline hands it a dump's window as a
//! [`Snapshot`] (shared with the ring, not copied) and goes on at once: a
//! dump of a full ring takes a disk's time, during which a capture on the
//! pipeline's thread would queue and drop frames.
//!
//! At most two dumps are outstanding: the one being written and one
//! waiting. A third is refused ([`Writer::submit`]), and the recorder says
//! so; memory never grows with a slow disk, and what the snapshots hold is
//! counted in the ring's bytes until they are written.

use std::io::{self, BufWriter};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::dump::{self, DumpWriter};
use super::ring::{Item, Snapshot};
use super::{dumps_in, rdma_mountstats, utc, Pending, RecordConfig};
use crate::files::AtomicFile;

/// Dumps handed to the writer and not yet written, at most: the one
/// being written and one waiting.
const MAX_OUTSTANDING: usize = 2;

/// One dump to write.
#[derive(Debug)]
pub(super) struct Job {
    /// Its window's entries.
    pub entries: Snapshot,
    /// The window's start, ns.
    pub from: u64,
    /// The window's end as the section comment says it, ns.
    pub shown_until: u64,
    /// Cut short by the end of the run.
    pub ending: bool,
    /// Entries of the window pushed out of the ring before it was written.
    pub lost: u64,
    /// Entries not kept since the last dump while dumps were being written.
    pub lost_busy: u64,
    /// The triggers.
    pub pending: Pending,
}

/// The writer thread and its two channels.
pub(super) struct Writer {
    jobs: Option<SyncSender<Job>>,
    /// Dumps handed over and not yet written (the queue's own length
    /// cannot say whether the thread has taken one out yet).
    outstanding: Arc<AtomicUsize>,
    done: Receiver<Result<PathBuf, String>>,
    thread: Option<JoinHandle<()>>,
}

impl Writer {
    /// Starts the thread.
    pub fn start(cfg: RecordConfig) -> Writer {
        let (jobs, rx) = mpsc::sync_channel::<Job>(MAX_OUTSTANDING);
        let (tx, done) = mpsc::channel();
        let outstanding = Arc::new(AtomicUsize::new(0));
        let left = outstanding.clone();
        let thread = std::thread::Builder::new()
            .name("rdma-recorder".into())
            .spawn(move || {
                for mut job in rx {
                    let out = write(&cfg, &mut job).map_err(|e| {
                        format!(
                            "live --record: writing the dump of {} into {}: {e}",
                            job.pending.said.join("; "),
                            cfg.dir.display()
                        )
                    });
                    // The window's memory goes back before the next dump.
                    drop(job);
                    left.fetch_sub(1, Ordering::SeqCst);
                    match &out {
                        Ok(path) => eprintln!("live --record: wrote {}", path.display()),
                        Err(e) => eprintln!("{e}"),
                    }
                    let ok = out.is_ok();
                    if tx.send(out).is_err() {
                        return;
                    }
                    if ok {
                        for e in retain(&cfg) {
                            let _ = tx.send(Err(e));
                        }
                    }
                }
            });
        match thread {
            Ok(t) => Writer {
                jobs: Some(jobs),
                outstanding,
                done,
                thread: Some(t),
            },
            // No thread (out of threads or memory): every dump says why.
            Err(e) => {
                let (tx, done) = mpsc::channel();
                let _ = tx.send(Err(format!(
                    "live --record: no thread to write dumps with: {e}; no dump will be written"
                )));
                Writer {
                    jobs: None,
                    outstanding,
                    done,
                    thread: None,
                }
            }
        }
    }

    /// Hands `job` over; `wait` blocks while two are outstanding, otherwise
    /// the job comes back (not written).
    pub fn submit(&mut self, job: Job, wait: bool) -> Result<(), Box<Job>> {
        let Some(jobs) = self.jobs.as_ref() else {
            return Err(Box::new(job));
        };
        if !wait && self.outstanding.load(Ordering::SeqCst) >= MAX_OUTSTANDING {
            return Err(Box::new(job));
        }
        self.outstanding.fetch_add(1, Ordering::SeqCst);
        // Never blocks unless waiting was asked: the queue holds as many
        // as may be outstanding.
        jobs.send(job).map_err(|e| {
            self.outstanding.fetch_sub(1, Ordering::SeqCst);
            Box::new(e.0)
        })
    }

    /// What the thread has done so far; with `wait`, everything, once it
    /// has finished (the thread is joined).
    pub fn outcomes(&mut self, wait: bool) -> Vec<Result<PathBuf, String>> {
        if wait {
            self.jobs = None;
            if let Some(t) = self.thread.take() {
                if t.join().is_err() {
                    return vec![Err("live --record: the dump writer stopped on an internal error; dumps after it were not written".into())];
                }
            }
        }
        self.done.try_iter().collect()
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // A dump being written is finished, not cut: the run waits for it.
        self.jobs = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `DIR/rdma-<time>-<tag>.pcapng`, `-2`, `-3` when taken.
fn file_name(cfg: &RecordConfig, p: &Pending) -> PathBuf {
    let stamp: String = utc(p.first_ns)
        .chars()
        .take(19)
        .filter(|c| *c != '-' && *c != ':')
        .collect();
    let base = format!("rdma-{stamp}Z-{}", p.tag);
    let mut path = cfg.dir.join(format!("{base}.pcapng"));
    let mut n = 2;
    while std::fs::symlink_metadata(&path).is_ok() {
        path = cfg.dir.join(format!("{base}-{n}.pcapng"));
        n += 1;
    }
    path
}

fn write(cfg: &RecordConfig, job: &mut Job) -> io::Result<PathBuf> {
    let p = &job.pending;
    let path = file_name(cfg, p);
    let (frames, probes) = job
        .entries
        .iter()
        .fold((0u64, 0u64), |(f, r), e| match e.item {
            Item::Frame { .. } => (f + 1, r),
            Item::Probe(_) => (f, r + 1),
        });
    let mut comment = format!(
        "rdma-analyzer flight recorder: {}\nwindow {} to {} ({} s before the first trigger, {} s after the last{}): {frames} frames, {probes} probe records",
        p.said.join("\n"),
        utc(job.from),
        utc(job.shown_until),
        cfg.before_ns as f64 / 1e9,
        cfg.after_ns as f64 / 1e9,
        if job.ending { "; cut short: the run ended" } else { "" },
    );
    if job.lost > 0 {
        comment.push_str(&format!(
            "\n{} frames and probe records of the window are missing: --record-size was full",
            job.lost
        ));
    }
    if job.lost_busy > 0 {
        comment.push_str(&format!(
            "\n{} frames and probe records before this dump were not kept: an earlier dump being written held --record-size",
            job.lost_busy
        ));
    }
    let file = AtomicFile::create(&path)?;
    let snaplen = cfg.snaplen.unwrap_or(rdma_capture::write::SNAPLEN);
    let mut w = DumpWriter::new(BufWriter::new(file), &comment, snaplen)?;
    if let Some(m) = rdma_mountstats() {
        w.custom(dump::KIND_MOUNTSTATS, p.first_ns, 0, &m)?;
    }
    job.entries.drain(|e| w.entry(e))?;
    let file = w
        .finish()?
        .into_inner()
        .map_err(io::IntoInnerError::into_error)?;
    file.commit()?;
    Ok(path)
}

/// Deletes the oldest dumps of ours beyond `--record-keep` and
/// `--record-max-bytes`; the newest always stays. Returns what went wrong.
fn retain(cfg: &RecordConfig) -> Vec<String> {
    let mut ours = dumps_in(&cfg.dir);
    let mut total: u64 = ours.iter().map(|(_, len)| len).sum();
    while ours.len() > 1 && (ours.len() > cfg.keep || cfg.max_total.is_some_and(|m| total > m)) {
        let (path, len) = ours.remove(0);
        if let Err(e) = std::fs::remove_file(&path) {
            return vec![format!(
                "live --record: removing the old dump {}: {e}",
                path.display()
            )];
        }
        total -= len;
    }
    Vec::new()
}
