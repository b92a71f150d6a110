//! Live packet capture with libpcap, on a thread of its own: frames go to
//! the live source in batches (and to a pcapng file with `--write`).

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use anyhow::Context;
use rdma_dissectors::link::LinkType;

use super::pcap::{CaptureWriter, Format, Resolution};
use super::sys;

/// Kernel capture buffer (memory is bounded by it).
const CAPTURE_BUFFER_BYTES: i32 = 32 << 20;
/// Batches of captured frames in flight to the engine at most; with
/// [`BATCH_BYTES`] this bounds the memory between capture and engine.
const CHANNEL_DEPTH: usize = 16;
/// A batch is sent when it holds this many bytes (or frames, or every 50 ms).
const BATCH_BYTES: usize = 1 << 20;
const BATCH_FRAMES: usize = 1024;
/// How often the thread asks libpcap for its drop counters while it runs
/// (a system call; the metrics exporter reads the figure).
const DROPS_EVERY: Duration = Duration::from_secs(1);

/// One captured frame, owned: it crosses from the capture thread.
pub struct Captured {
    /// 1-based frame number.
    pub number: u64,
    /// Capture time, ns since the epoch.
    pub ts_ns: u64,
    /// Length on the wire.
    pub orig_len: u32,
    /// The captured bytes.
    pub data: Vec<u8>,
}

/// What the capture thread sends.
pub enum FromCapture {
    /// Frames, in order.
    Frames(Vec<Captured>),
    /// The capture ended (asked to, or it failed).
    Done {
        /// Frames captured.
        frames: u64,
        /// Frames libpcap or the kernel dropped.
        dropped: u64,
        /// Why it ended, when it failed.
        error: Option<String>,
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
/// (pcapng) when given.
///
/// # Errors
/// When libpcap cannot open the interface, the filter does not compile,
/// the file cannot be created or the thread cannot start.
pub fn start(iface: &str, filter: &str, write: Option<&Path>) -> anyhow::Result<Capture> {
    let cap = pcap::Capture::from_device(iface)
        .and_then(|c| {
            // A large kernel buffer and 100 ms batches rather than a wakeup
            // per packet: in the lab's TCG guests immediate mode dropped
            // most frames of the RDMA Read/Write bursts.
            c.promisc(true)
                .snaplen(65535)
                .buffer_size(CAPTURE_BUFFER_BYTES)
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
            File::create(p)
                .and_then(|f| {
                    CaptureWriter::new(BufWriter::new(f), Format::Pcapng, link, Resolution::Nano)
                })
                .with_context(|| format!("creating {}", p.display()))?,
        ),
        None => None,
    };
    let (tx, rx) = mpsc::sync_channel(CHANNEL_DEPTH);
    let stop = Arc::new(AtomicBool::new(false));
    let dropped = Arc::new(AtomicU64::new(0));
    let wake = Arc::new(sys::Wakeup::new().context("live: eventfd")?);
    let (their_stop, their_dropped) = (stop.clone(), dropped.clone());
    let tx = Sender {
        tx,
        wake: wake.clone(),
    };
    let thread = thread::Builder::new()
        .name("live-capture".into())
        .spawn(move || capture_loop(cap, writer, &tx, &their_stop, &their_dropped))
        .context("live: starting the capture thread")?;
    Ok(Capture {
        rx,
        thread: Some(thread),
        link,
        stop,
        dropped,
        wake,
    })
}

/// The capture thread's end of the channel: every send signals the wakeup.
struct Sender {
    tx: mpsc::SyncSender<FromCapture>,
    wake: Arc<sys::Wakeup>,
}

impl Sender {
    fn send(&self, m: FromCapture) -> Result<(), mpsc::SendError<FromCapture>> {
        self.tx.send(m)?;
        self.wake.signal();
        Ok(())
    }
}

fn capture_loop(
    mut cap: pcap::Capture<pcap::Active>,
    mut writer: Option<CaptureWriter<BufWriter<File>>>,
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
    let mut batch: Vec<Captured> = Vec::new();
    let mut batch_bytes = 0usize;
    let mut last_send = Instant::now();
    while !stop.load(Ordering::SeqCst) {
        match cap.next_packet() {
            Ok(p) => {
                number += 1;
                let ts =
                    p.header.ts.tv_sec as u64 * 1_000_000_000 + p.header.ts.tv_usec as u64 * 1_000;
                if let Some(w) = writer.as_mut() {
                    if let Err(e) = w.packet(ts, p.header.len, p.data) {
                        error = Some(format!("writing pcapng: {e}"));
                        writer = None;
                    }
                }
                batch_bytes += p.data.len();
                batch.push(Captured {
                    number,
                    ts_ns: ts,
                    orig_len: p.header.len,
                    data: p.data.to_vec(),
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
        if !batch.is_empty()
            && (batch_bytes >= BATCH_BYTES
                || batch.len() >= BATCH_FRAMES
                || last_send.elapsed() >= Duration::from_millis(50))
        {
            // A full channel means the engine is behind: wait (the kernel's
            // capture buffer absorbs the burst and counts what it drops).
            batch_bytes = 0;
            last_send = Instant::now();
            if tx
                .send(FromCapture::Frames(std::mem::take(&mut batch)))
                .is_err()
            {
                break;
            }
        }
    }
    if !batch.is_empty() {
        let _ = tx.send(FromCapture::Frames(batch));
    }
    if let Some(w) = writer {
        if let Err(e) = w.finish() {
            error.get_or_insert(format!("writing pcapng: {e}"));
        }
    }
    let dropped = drops(&mut cap);
    dropped_so_far.store(dropped, Ordering::Relaxed);
    let _ = tx.send(FromCapture::Done {
        frames: number,
        dropped,
        error,
    });
}
