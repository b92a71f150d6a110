//! Live packet capture with libpcap, on a thread of its own: frames go to
//! the live source in batches (and to a pcapng file with `--write`).

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use anyhow::Context;
use rdma_dissectors::link::LinkType;

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
    /// Frames and the end.
    pub rx: mpsc::Receiver<FromCapture>,
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
/// [`CAPTURE_BUFFER_BYTES`]; at most 2 GiB).
///
/// # Errors
/// When libpcap cannot open the interface, the filter does not compile,
/// the file cannot be created or the thread cannot start.
pub fn start(
    iface: &str,
    filter: &str,
    write: Option<&Path>,
    buffer: Option<usize>,
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
    let tx = Sender {
        tx,
        wake: wake.clone(),
        recycled,
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
    })
}

/// The capture thread's end of the channel: every send signals the wakeup.
struct Sender {
    tx: mpsc::SyncSender<FromCapture>,
    wake: Arc<sys::Wakeup>,
    recycled: mpsc::Receiver<Batch>,
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

    fn send(&self, m: FromCapture) -> Result<(), mpsc::SendError<FromCapture>> {
        self.tx.send(m)?;
        self.wake.signal();
        Ok(())
    }
}

fn capture_loop(
    mut cap: pcap::Capture<pcap::Active>,
    link: LinkType,
    mut writer: Option<(CaptureWriter<BufWriter<File>>, PathBuf)>,
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
    let mut write_error = None;
    // Said once, when it happens, and again at the end.
    let truncated = |path: &Path, number: u64, e: &dyn std::fmt::Display| {
        format!(
            "writing {}: {e}: the capture file is truncated (it ends at or before frame {number}); the analysis went on over every frame",
            path.display()
        )
    };
    let mut batch = tx.empty();
    let mut last_send = Instant::now();
    while !stop.load(Ordering::SeqCst) {
        match cap.next_packet() {
            Ok(p) => {
                number += 1;
                let ts =
                    p.header.ts.tv_sec as u64 * 1_000_000_000 + p.header.ts.tv_usec as u64 * 1_000;
                if let Some((w, path)) = writer.as_mut() {
                    if let Err(e) = w.packet(ts, p.header.len, p.data) {
                        let msg = truncated(path, number, &e);
                        let _ = tx.send(FromCapture::WriteFailed(msg.clone()));
                        write_error = Some(msg);
                        writer = None;
                    }
                }
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
            if tx.send(FromCapture::Frames(full)).is_err() {
                break;
            }
        }
    }
    if !batch.frames.is_empty() {
        let _ = tx.send(FromCapture::Frames(batch));
    }
    if let Some((w, path)) = writer {
        if let Err(e) = w.finish() {
            write_error = Some(truncated(&path, number, &e));
        }
    }
    let dropped = drops(&mut cap);
    dropped_so_far.store(dropped, Ordering::Relaxed);
    let _ = tx.send(FromCapture::Done {
        frames: number,
        dropped,
        error,
        write_error,
    });
}
