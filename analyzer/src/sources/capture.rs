//! Live packet capture with libpcap, on a thread of its own: frames go to
//! the live source in batches (and to a pcapng file with `--write`).
//!
//! As a capture file's reader does, the thread checks a batch's RoCEv2
//! ICRCs (the largest per-byte cost) before sending it when the engine
//! already has batches queued: the engine is then the bottleneck, and a
//! full channel would stall the capture until the kernel drops frames.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use anyhow::Context;
use rdma_dissectors::link::LinkType;
use rdma_dissectors::stack;

use super::pcap::{Batch, CaptureWriter, Format, Frame, Resolution};
use super::sys;

/// Kernel capture buffer by default (memory is bounded by it).
pub const CAPTURE_BUFFER_BYTES: usize = 32 << 20;
/// Batches of captured frames in flight to the engine at most; with
/// [`BATCH_BYTES`] this bounds the memory between capture and engine.
const CHANNEL_DEPTH: usize = 16;
/// A batch is sent when it holds this many bytes (or frames, or every 50 ms).
const BATCH_BYTES: usize = 1 << 20;
const BATCH_FRAMES: usize = 1024;
/// The capture thread checks a batch's ICRCs itself when at least this many
/// batches wait for the engine (the file reader's rule).
const ICRC_BACKLOG: usize = 2;
/// How often the thread asks libpcap for its drop counters while it runs
/// (a system call; the metrics exporter reads the figure).
const DROPS_EVERY: Duration = Duration::from_secs(1);

/// An empty batch with room for a full one: no reallocation before it is
/// sent, even for a frame past [`BATCH_BYTES`]. Captured frames share one
/// buffer (an allocation per batch, not per frame), owned: they cross from
/// the capture thread.
fn new_batch() -> Batch {
    Batch {
        data: Vec::with_capacity(BATCH_BYTES + 65536),
        frames: Vec::with_capacity(BATCH_FRAMES),
        ..Batch::default()
    }
}

/// What the capture thread sends.
pub enum FromCapture {
    /// Frames, in order.
    Frames(Batch),
    /// Writing `--write`'s pcapng failed: the file is truncated, the
    /// capture and the analysis go on. Said when it happens.
    WriteFailed(String),
    /// The capture ended (asked to, or it failed).
    Done {
        /// Frames captured.
        frames: u64,
        /// Frames libpcap or the kernel dropped.
        dropped: u64,
        /// Why it ended, when it failed.
        error: Option<String>,
        /// Why `--write`'s pcapng is incomplete, when it is.
        write_error: Option<String>,
    },
}

/// A running capture.
pub struct Capture {
    /// Frames and the end: taken through [`Capture::try_recv`] and
    /// [`Capture::recv`], which keep the backlog's count.
    rx: mpsc::Receiver<FromCapture>,
    /// The capture thread.
    pub thread: Option<JoinHandle<()>>,
    /// The interface's link type.
    pub link: LinkType,
    /// Ends the capture thread.
    pub stop: Arc<AtomicBool>,
    /// Frames libpcap or the kernel dropped so far (refreshed every
    /// second; the final figure comes with [`FromCapture::Done`]).
    pub dropped: Arc<AtomicU64>,
    /// Signalled after every message on `rx`: the live source waits on it
    /// with the probes' ring, so a batch is taken at once (a full channel
    /// stalls the capture thread).
    pub wake: Arc<sys::Wakeup>,
    /// Batches the engine is done with go back to the capture thread, to
    /// be filled again (no allocation and first-touch faults per batch).
    pub recycle: mpsc::Sender<Batch>,
    /// Batches sent and not yet taken: whether the engine is behind.
    backlog: Arc<AtomicUsize>,
}

impl Capture {
    /// The next message, if one is there.
    ///
    /// # Errors
    /// None yet, or the thread is gone.
    pub fn try_recv(&self) -> Result<FromCapture, mpsc::TryRecvError> {
        self.rx.try_recv().inspect(|m| self.taken(m))
    }

    /// The next message, waiting for it.
    ///
    /// # Errors
    /// The thread is gone.
    pub fn recv(&self) -> Result<FromCapture, mpsc::RecvError> {
        self.rx.recv().inspect(|m| self.taken(m))
    }

    fn taken(&self, m: &FromCapture) {
        if let FromCapture::Frames(_) = m {
            self.backlog.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Whether `iface` exists and this process may capture on it.
///
/// # Errors
/// What is missing, in words the user can act on.
pub fn preflight(iface: &str) -> anyhow::Result<()> {
    if !Path::new("/sys/class/net").join(iface).exists() {
        let mut have: Vec<String> = std::fs::read_dir("/sys/class/net")
            .map(|d| {
                d.filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
                    .collect()
            })
            .unwrap_or_default();
        have.sort();
        anyhow::bail!(
            "live -i {iface}: no such interface (this host has: {})",
            have.join(", ")
        );
    }
    if !sys::has_cap(sys::cap::NET_RAW) {
        anyhow::bail!(
            "live -i {iface}: not permitted: run as root or grant CAP_NET_RAW \
             (setcap cap_net_raw+ep rdma-analyzer)"
        );
    }
    Ok(())
}

/// Starts capturing on `iface` with the BPF `filter`, saving to `write`
/// (pcapng) when given, with a kernel ring of `buffer` bytes (default
/// [`CAPTURE_BUFFER_BYTES`]; at most 2 GiB); ICRCs are checked ahead with
/// `config` (see the module's documentation).
///
/// # Errors
/// When libpcap cannot open the interface, the filter does not compile,
/// the file cannot be created or the thread cannot start.
pub fn start(
    iface: &str,
    filter: &str,
    write: Option<&Path>,
    buffer: Option<usize>,
    config: &stack::Config,
) -> anyhow::Result<Capture> {
    let buffer = i32::try_from(buffer.unwrap_or(CAPTURE_BUFFER_BYTES))
        .context("live: --capture-buffer: at most 2G")?;
    let cap = pcap::Capture::from_device(iface)
        .and_then(|c| {
            // A large kernel buffer and 100 ms batches rather than a wakeup
            // per packet: in the lab's TCG guests immediate mode dropped
            // most frames of the RDMA Read/Write bursts.
            c.promisc(true)
                .snaplen(65535)
                .buffer_size(buffer)
                .timeout(100)
                .open()
        })
        .with_context(|| format!("live -i {iface}: opening the capture"))?;
    let mut cap = cap;
    cap.filter(filter, true)
        .with_context(|| format!("live: capture filter {filter:?}"))?;
    // Non-blocking, polled with a timeout: a blocking read can wait forever
    // on a quiet link, and the thread must see its stop flag.
    let cap = cap
        .setnonblock()
        .with_context(|| format!("live -i {iface}: non-blocking mode"))?;
    let link = LinkType(cap.get_datalink().0 as u32);
    let writer = match write {
        Some(p) => Some(
            crate::files::create_in_place(p)
                .and_then(|f| {
                    CaptureWriter::new(BufWriter::new(f), Format::Pcapng, link, Resolution::Nano)
                })
                .with_context(|| format!("live --write: creating {}", p.display()))?,
        ),
        None => None,
    };
    let written_to = write.map(Path::to_path_buf).unwrap_or_default();
    let (tx, rx) = mpsc::sync_channel(CHANNEL_DEPTH);
    let stop = Arc::new(AtomicBool::new(false));
    let dropped = Arc::new(AtomicU64::new(0));
    let wake = Arc::new(sys::Wakeup::new().context("live: eventfd")?);
    let (their_stop, their_dropped) = (stop.clone(), dropped.clone());
    let (recycle, recycled) = mpsc::channel();
    let backlog = Arc::new(AtomicUsize::new(0));
    let tx = Sender {
        tx,
        wake: wake.clone(),
        recycled,
        backlog: backlog.clone(),
        config: *config,
    };
    let thread = thread::Builder::new()
        .name("live-capture".into())
        .spawn(move || {
            let writer = writer.map(|w| (w, written_to));
            capture_loop(cap, link, writer, &tx, &their_stop, &their_dropped);
        })
        .context("live: starting the capture thread")?;
    Ok(Capture {
        rx,
        thread: Some(thread),
        link,
        stop,
        dropped,
        wake,
        recycle,
        backlog,
    })
}

/// The capture thread's end of the channel: every send signals the wakeup.
struct Sender {
    tx: mpsc::SyncSender<FromCapture>,
    wake: Arc<sys::Wakeup>,
    recycled: mpsc::Receiver<Batch>,
    backlog: Arc<AtomicUsize>,
    config: stack::Config,
}

impl Sender {
    /// An empty batch: one the engine gave back, or a new one.
    fn empty(&self) -> Batch {
        match self.recycled.try_recv() {
            Ok(mut b) => {
                b.clear();
                b
            }
            Err(_) => new_batch(),
        }
    }

    /// Sends `batch`, its ICRCs checked first when the engine is behind.
    fn frames(&self, mut batch: Batch) -> Result<(), mpsc::SendError<FromCapture>> {
        if self.config.verify_icrc && self.backlog.load(Ordering::Relaxed) >= ICRC_BACKLOG {
            batch.check_icrcs(&self.config);
        }
        // Counted before it can be taken, so the count never goes below 0.
        self.backlog.fetch_add(1, Ordering::Relaxed);
        self.send(FromCapture::Frames(batch))
    }

    fn send(&self, m: FromCapture) -> Result<(), mpsc::SendError<FromCapture>> {
        self.tx.send(m)?;
        self.wake.signal();
        Ok(())
    }
}

/// `--write`'s pcapng, while it can be written.
struct Saving {
    writer: Option<(CaptureWriter<BufWriter<File>>, PathBuf)>,
    /// Why the file is incomplete, once it is.
    error: Option<String>,
}

impl Saving {
    /// Writes frame `number`; the first failure is said at once (and again
    /// at the end) and writing stops there.
    fn packet(&mut self, tx: &Sender, number: u64, ts: u64, orig_len: u32, data: &[u8]) {
        let Some((w, path)) = self.writer.as_mut() else {
            return;
        };
        if let Err(e) = w.packet(ts, orig_len, data) {
            let msg = truncated(path, number, &e);
            let _ = tx.send(FromCapture::WriteFailed(msg.clone()));
            self.error = Some(msg);
            self.writer = None;
        }
    }

    /// Closes the file after frame `number`: why it is incomplete, if it is.
    fn finish(self, number: u64) -> Option<String> {
        match self.writer {
            Some((w, path)) => match w.finish() {
                Ok(_) => self.error,
                Err(e) => Some(truncated(&path, number, &e)),
            },
            None => self.error,
        }
    }
}

fn truncated(path: &Path, number: u64, e: &dyn std::fmt::Display) -> String {
    format!(
        "writing {}: {e}: the capture file is truncated (it ends at or before frame {number}); the analysis went on over every frame",
        path.display()
    )
}

fn capture_loop(
    mut cap: pcap::Capture<pcap::Active>,
    link: LinkType,
    writer: Option<(CaptureWriter<BufWriter<File>>, PathBuf)>,
    tx: &Sender,
    stop: &AtomicBool,
    dropped_so_far: &AtomicU64,
) {
    // libpcap adds the kernel's counters up itself (Linux resets them on
    // every read), so each figure is the total since the capture started.
    let drops = |cap: &mut pcap::Capture<pcap::Active>| {
        cap.stats()
            .map_or(0, |s| u64::from(s.dropped) + u64::from(s.if_dropped))
    };
    let mut last_drops = Instant::now();
    let mut number = 0u64;
    let mut error = None;
    let mut saving = Saving {
        writer,
        error: None,
    };
    let mut batch = tx.empty();
    let mut last_send = Instant::now();
    while !stop.load(Ordering::SeqCst) {
        match cap.next_packet() {
            Ok(p) => {
                number += 1;
                let ts =
                    p.header.ts.tv_sec as u64 * 1_000_000_000 + p.header.ts.tv_usec as u64 * 1_000;
                saving.packet(tx, number, ts, p.header.len, p.data);
                batch.push(&Frame {
                    number,
                    ts_ns: ts,
                    link,
                    orig_len: p.header.len,
                    data: p.data,
                    icrc: None,
                });
            }
            Err(pcap::Error::TimeoutExpired) => {
                use std::os::fd::AsRawFd;
                sys::poll_readable(cap.as_raw_fd(), 50);
            }
            Err(e) => {
                error = Some(e.to_string());
                break;
            }
        }
        if last_drops.elapsed() >= DROPS_EVERY {
            last_drops = Instant::now();
            dropped_so_far.store(drops(&mut cap), Ordering::Relaxed);
        }
        if !batch.frames.is_empty()
            && (batch.data.len() >= BATCH_BYTES
                || batch.frames.len() >= BATCH_FRAMES
                || last_send.elapsed() >= Duration::from_millis(50))
        {
            // A full channel means the engine is behind: wait (the kernel's
            // capture buffer absorbs the burst and counts what it drops).
            last_send = Instant::now();
            let full = std::mem::replace(&mut batch, tx.empty());
            if tx.frames(full).is_err() {
                break;
            }
        }
    }
    if !batch.frames.is_empty() {
        let _ = tx.frames(batch);
    }
    let write_error = saving.finish(number);
    let dropped = drops(&mut cap);
    dropped_so_far.store(dropped, Ordering::Relaxed);
    let _ = tx.send(FromCapture::Done {
        frames: number,
        dropped,
        error,
        write_error,
    });
}

#[cfg(test)]
mod tests {
    use rdma_dissectors::ib::icrc::IcrcStatus;

    use super::*;

    use crate::test_support::ROCE_ACK as ACK;

    fn one_ack() -> Batch {
        let mut b = new_batch();
        b.push(&Frame {
            number: 1,
            ts_ns: 1,
            link: LinkType::ETHERNET,
            orig_len: ACK.len() as u32,
            data: ACK,
            icrc: None,
        });
        b
    }

    /// The two ends of a capture's channel, without libpcap.
    fn ends() -> (Sender, Capture) {
        let (tx, rx) = mpsc::sync_channel(CHANNEL_DEPTH);
        let (recycle, recycled) = mpsc::channel();
        let wake = Arc::new(sys::Wakeup::new().expect("eventfd"));
        let backlog = Arc::new(AtomicUsize::new(0));
        let sender = Sender {
            tx,
            wake: wake.clone(),
            recycled,
            backlog: backlog.clone(),
            config: stack::Config::default(),
        };
        let capture = Capture {
            rx,
            thread: None,
            link: LinkType::ETHERNET,
            stop: Arc::default(),
            dropped: Arc::default(),
            wake,
            recycle,
            backlog,
        };
        (sender, capture)
    }

    fn icrc_of_next(c: &Capture) -> Option<IcrcStatus> {
        match c.try_recv() {
            Ok(FromCapture::Frames(b)) => b.iter().next().and_then(|f| f.icrc),
            _ => panic!("a batch was sent"),
        }
    }

    #[test]
    fn the_capture_thread_checks_icrcs_only_while_the_engine_is_behind() {
        let (tx, c) = ends();
        // Nothing queued: the engine checks (while dissecting).
        tx.frames(one_ack()).unwrap();
        tx.frames(one_ack()).unwrap();
        // Two queued: the engine is behind, the capture thread checks.
        tx.frames(one_ack()).unwrap();
        assert_eq!(icrc_of_next(&c), None);
        assert_eq!(icrc_of_next(&c), None);
        assert_eq!(icrc_of_next(&c), Some(IcrcStatus::Valid));
        // Every batch taken: the engine has caught up.
        tx.frames(one_ack()).unwrap();
        assert_eq!(icrc_of_next(&c), None);
    }
}
