//! `rdma-analyzer live`: kernel probes and live packet capture feeding the
//! correlation, headless (JSON Lines or text) until a duration, Ctrl-C or
//! SIGTERM.
//!
//! ```text
//!  capture thread: pcap ─► Engine (wire) ─► findings ─┐  (+ pcapng --write)
//!  main thread:    ring buffer ─► Decoder ─► Correlator ─┼─► Merger (by XID) ─► JSON Lines / text
//! ```
//!
//! Probes are detached on every exit path: the links are closed when the
//! `ProbeSet` drops (normal return, error, panic unwinding), and the kernel
//! closes them with the process's file descriptors in any case (SIGKILL too).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use clap::Args;
use rdma_dissectors::link::LinkType;
use serde_json::{json, Value};

use crate::engine::{Config, Engine, Event, Finding, Origin, Transaction};
use crate::report;
use crate::sources::ebpf::{self, Decoder, FormatSet, Plan, ProbeSet, StartError};

/// `rdma-analyzer live` options.
#[derive(Debug, Clone, Args)]
pub struct LiveArgs {
    /// Watch the kernel's RPC-over-RDMA stack through eBPF probes.
    #[arg(long)]
    pub probes: bool,
    /// Capture packets on this interface (soft-RoCE, port mirrors).
    #[arg(short = 'i', long = "interface")]
    pub iface: Option<String>,
    /// Capture filter.
    #[arg(long, default_value = "udp port 4791")]
    pub filter: String,
    /// Save captured frames to this pcapng file.
    #[arg(long)]
    pub write: Option<PathBuf>,
    /// Stop after this many seconds.
    #[arg(long)]
    pub duration: Option<f64>,
    /// Write transactions and anomalies as JSON Lines to this file (headless).
    #[arg(long)]
    pub json_out: Option<PathBuf>,
    /// Write the run's counters (records, losses, rates) as JSON to this file.
    #[arg(long)]
    pub stats_out: Option<PathBuf>,
    /// Also attach to this tracepoint (`system:event`); for benchmarks.
    #[arg(long = "tracepoint", value_name = "SYSTEM:EVENT")]
    pub extra_tracepoints: Vec<String>,
    /// Do not attach the CM private-data kprobes.
    #[arg(long)]
    pub no_kprobes: bool,
    /// UDP port that carries RoCEv2.
    #[arg(long, default_value_t = 4791)]
    pub rocev2_port: u16,
    /// Text output even on a terminal (the TUI is the default there).
    #[arg(long)]
    pub no_tui: bool,
}

/// Exit code when there is nothing to watch (no RDMA tracepoints, no interface).
pub const EXIT_NOTHING_TO_WATCH: u8 = 3;

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Signals that stop `live` cleanly. The TUI leaves SIGHUP alone: when its
/// terminal goes away the process must die, not spin on a dead tty (the
/// kernel closes the probes' links with the process's descriptors).
fn install_signal_handlers(tui: bool) {
    let sigs: &[libc::c_int] = if tui {
        &[libc::SIGINT, libc::SIGTERM]
    } else {
        &[libc::SIGINT, libc::SIGTERM, libc::SIGHUP]
    };
    for &sig in sigs {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        #[allow(unsafe_code)]
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Effective capabilities of this process (bit mask), from /proc/self/status.
fn cap_eff() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .unwrap_or(0)
}

const CAP_NET_RAW: u32 = 13;
const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

fn has_cap(c: u32) -> bool {
    cap_eff() & (1u64 << c) != 0
}

/// Checks what probes need before touching the kernel; `Err` is the message.
fn probe_preflight() -> Result<PathBuf, String> {
    if ebpf::PROBES_OBJECT.is_empty() {
        let why = if ebpf::PROBES_BUILD_STATUS.is_empty() {
            "built without eBPF probes"
        } else {
            ebpf::PROBES_BUILD_STATUS
        };
        return Err(why.to_string());
    }
    if !(has_cap(CAP_SYS_ADMIN) || (has_cap(CAP_BPF) && has_cap(CAP_PERFMON))) {
        return Err(
            "not permitted: run as root, or grant CAP_BPF and CAP_PERFMON \
             (setcap cap_bpf,cap_perfmon+ep rdma-analyzer)"
                .to_string(),
        );
    }
    ebpf::find_tracefs().ok_or_else(|| {
        "tracefs is not mounted; mount it with: \
         mount -t tracefs nodev /sys/kernel/tracing"
            .to_string()
    })
}

fn capture_preflight(iface: &str) -> Result<(), String> {
    if !Path::new("/sys/class/net").join(iface).exists() {
        let have: Vec<String> = std::fs::read_dir("/sys/class/net")
            .map(|d| {
                let mut v: Vec<String> = d
                    .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
                    .collect();
                v.sort();
                v
            })
            .unwrap_or_default();
        return Err(format!(
            "live -i {iface}: no such interface (this host has: {})",
            have.join(", ")
        ));
    }
    if !has_cap(CAP_NET_RAW) {
        return Err(format!(
            "live -i {iface}: not permitted: run as root or grant CAP_NET_RAW \
             (setcap cap_net_raw+ep rdma-analyzer)"
        ));
    }
    Ok(())
}

/// What the run counted; written by `--stats-out` and summarised on stderr.
#[derive(Debug, Default, Clone)]
pub struct LiveStats {
    /// Tracepoints (and kprobes) attached.
    pub attached: Vec<String>,
    /// What could not be attached, and why.
    pub missing: Vec<(String, String)>,
    /// Records read from the ring buffer.
    pub records: u64,
    /// Records the kernel dropped (ring full).
    pub lost_in_kernel: u64,
    /// Records that did not decode.
    pub decode_errors: u64,
    /// The first decode error, in words.
    pub first_decode_error: Option<String>,
    /// Records per event name.
    pub per_event: BTreeMap<String, u64>,
    /// Frames captured.
    pub frames: u64,
    /// Frames dropped by libpcap or the kernel.
    pub frames_dropped: u64,
    /// Transactions written.
    pub transactions: u64,
    /// Anomalies written.
    pub anomalies: u64,
    /// Seconds the run lasted.
    pub seconds: f64,
    /// CPU seconds this process used (user + system).
    pub cpu_seconds: f64,
}

impl LiveStats {
    fn to_json(&self) -> Value {
        json!({
            "attached": self.attached,
            "missing": self.missing.iter().map(|(w, y)| json!({"what": w, "why": y})).collect::<Vec<_>>(),
            "records": self.records,
            "records_per_second": if self.seconds > 0.0 { self.records as f64 / self.seconds } else { 0.0 },
            "lost_in_kernel": self.lost_in_kernel,
            "decode_errors": self.decode_errors,
            "first_decode_error": self.first_decode_error,
            "per_event": self.per_event,
            "frames": self.frames,
            "frames_dropped": self.frames_dropped,
            "transactions": self.transactions,
            "anomalies": self.anomalies,
            "seconds": self.seconds,
            "cpu_seconds": self.cpu_seconds,
        })
    }
}

fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we own.
    #[allow(unsafe_code)]
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// The views of one XID held by the [`Merger`].
type Views = Vec<(Origin, Box<Transaction>)>;

/// Joins the wire's and the probes' views of one XID into one record:
/// the wire transaction is the base (the probes' fill what it lacks), and
/// each side's kernel view is kept under `"probes"`. Holds each XID for a
/// short window so the other views can arrive; bounded.
pub struct Merger {
    window_ns: u64,
    max: usize,
    pending: HashMap<u32, (u64, Views)>,
    order: VecDeque<(u64, u32)>,
}

impl Merger {
    /// A merger holding each XID for `window_ns`, at most `max` XIDs at once.
    pub fn new(window_ns: u64, max: usize) -> Merger {
        Merger {
            window_ns,
            max,
            pending: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    /// Adds a transaction seen at (local, monotonic) time `now_ns`.
    pub fn add(&mut self, t: Box<Transaction>, now_ns: u64, out: &mut Vec<Value>) {
        let o = t.origin;
        let xid = t.xid;
        match self.pending.get_mut(&xid) {
            Some((_, v)) if !v.iter().any(|(oo, _)| *oo == o) => v.push((o, t)),
            Some(_) => {
                // The same side saw this XID again (a retransmission or
                // a reused XID): emit what is held and start over.
                if let Some((_, v)) = self.pending.remove(&xid) {
                    out.push(merge(v));
                }
                self.pending.insert(xid, (now_ns, vec![(o, t)]));
                self.order.push_back((now_ns, xid));
            }
            None => {
                self.pending.insert(xid, (now_ns, vec![(o, t)]));
                self.order.push_back((now_ns, xid));
            }
        }
        while self.pending.len() > self.max {
            let Some((_, x)) = self.order.pop_front() else {
                break;
            };
            if let Some((_, v)) = self.pending.remove(&x) {
                out.push(merge(v));
            }
        }
    }

    /// Emits every XID held longer than the window (all when `now_ns` is `u64::MAX`).
    pub fn flush(&mut self, now_ns: u64, out: &mut Vec<Value>) {
        while let Some(&(t0, x)) = self.order.front() {
            if now_ns != u64::MAX && t0.saturating_add(self.window_ns) > now_ns {
                break;
            }
            self.order.pop_front();
            if let Some((t1, v)) = self.pending.remove(&x) {
                if t1 != t0 {
                    // Re-inserted later under the same XID: keep waiting.
                    self.pending.insert(x, (t1, v));
                    continue;
                }
                out.push(merge(v));
            }
        }
    }
}

fn kernel_view(t: &Transaction) -> Value {
    json!({
        "latency_us": t.latency_us,
        "credits_requested": if t.origin == Origin::ServerProbes { Some(t.credits_requested) } else { None },
        "credits_granted": t.credits_granted,
        "remote_invalidated_rkey": t.remote_invalidated_rkey,
        "chunks": t.chunks.iter().map(|c| json!({
            "kind": c.kind, "handle": c.handle, "length": c.length, "offset": c.offset,
            "reported_length": c.reported_length, "remotely_invalidated": c.remotely_invalidated,
        })).collect::<Vec<_>>(),
        "call_transfer": t.call_transfer,
        "reply_transfer": t.reply_transfer,
        "phases": t.phases,
        "in_flight_at_call": t.in_flight_at_call,
        "call_ts": t.call_ts_ns as f64 / 1e9,
        "anomalies": t.anomalies,
    })
}

fn merge(mut v: Vec<(Origin, Box<Transaction>)>) -> Value {
    v.sort_by_key(|(o, _)| *o as u8);
    let sources: Vec<&str> = v.iter().map(|(o, _)| o.as_str()).collect();
    let probes: serde_json::Map<String, Value> = v
        .iter()
        .filter(|(o, _)| *o != Origin::Wire)
        .map(|(o, t)| (o.as_str().to_string(), kernel_view(t)))
        .collect();
    let base = v
        .iter()
        .find(|(o, _)| *o == Origin::Wire)
        .or_else(|| v.first())
        .map(|(_, t)| t);
    let mut j = base.map_or(Value::Null, |t| report::transaction_json(t));
    if let Value::Object(m) = &mut j {
        let client = v
            .iter()
            .find(|(o, _)| *o == Origin::ClientProbes)
            .map(|(_, t)| t);
        let server = v
            .iter()
            .find(|(o, _)| *o == Origin::ServerProbes)
            .map(|(_, t)| t);
        if m.get("credits_granted").is_none_or(Value::is_null) {
            if let Some(c) = client.and_then(|t| t.credits_granted) {
                m.insert("credits_granted".into(), json!(c));
            }
        }
        if m.get("credits_requested").is_none_or(|x| x == &json!(0)) {
            if let Some(s) = server {
                m.insert("credits_requested".into(), json!(s.credits_requested));
            }
        }
        if m.get("remote_invalidated_rkey").is_none_or(Value::is_null) {
            if let Some(k) = client
                .and_then(|t| t.remote_invalidated_rkey)
                .or(server.and_then(|t| t.remote_invalidated_rkey))
            {
                m.insert("remote_invalidated_rkey".into(), json!(k));
            }
        }
        m.insert("type".into(), json!("transaction"));
        m.insert("sources".into(), json!(sources));
        m.insert("probes".into(), Value::Object(probes));
    }
    j
}

/// One captured frame, owned: it crosses from the capture thread.
struct Captured {
    number: u64,
    ts_ns: u64,
    orig_len: u32,
    data: Vec<u8>,
}

enum FromCapture {
    Frames(Vec<Captured>),
    Done {
        frames: u64,
        dropped: u64,
        error: Option<String>,
    },
}

/// Batches of captured frames in flight to the engine at most; with
/// [`BATCH_BYTES`] this bounds the memory between capture and engine.
const CAPTURE_CHANNEL_DEPTH: usize = 16;
/// A batch is sent when it holds this many bytes (or frames, or every 50 ms).
const BATCH_BYTES: usize = 1 << 20;
const BATCH_FRAMES: usize = 1024;

/// What `live` watches: the probes (their ring buffer is read on the
/// caller's thread) and packet capture (on its own thread). Both turn into
/// engine events through [`LiveInputs::poll`], so the headless mode and the
/// TUI run one engine over the same events.
pub struct LiveInputs {
    probes: Option<(ProbeSet, Decoder)>,
    capture: Option<(
        mpsc::Receiver<FromCapture>,
        thread::JoinHandle<()>,
        LinkType,
    )>,
    capture_done: bool,
    /// Tells the capture thread to end (set by `finish`; a signal sets `STOP`).
    capture_stop: Arc<AtomicBool>,
    /// What the run counted so far.
    pub stats: LiveStats,
    /// Why the probes could not start (they were asked for), if they could not.
    pub probes_error: Option<String>,
    /// What is watched, in words (`probes + eth0`).
    pub what: String,
    /// Engine configuration for these inputs (the RoCEv2 port).
    pub config: Config,
}

impl LiveInputs {
    /// Starts what `args` asks for. A probe start that finds nothing to
    /// attach is not an error (see [`LiveInputs::is_empty`]); no permission,
    /// no tracefs, a build without probes and a missing interface are.
    ///
    /// # Errors
    /// As above, in words the user can act on.
    pub fn start(args: &LiveArgs) -> anyhow::Result<LiveInputs> {
        if !args.probes && args.iface.is_none() {
            bail!("live: say what to watch: --probes, -i IFACE, or both");
        }
        let mut config = Config::default();
        config.stack.rocev2_port = args.rocev2_port;
        let mut inputs = LiveInputs {
            probes: None,
            capture: None,
            capture_done: true,
            capture_stop: Arc::new(AtomicBool::new(false)),
            stats: LiveStats::default(),
            probes_error: None,
            what: String::new(),
            config,
        };
        if args.probes {
            match start_probes(args) {
                Ok((set, dec)) => {
                    inputs.stats.attached.clone_from(&set.attached);
                    inputs.stats.missing = set
                        .missing
                        .iter()
                        .map(|m| (m.what.clone(), m.why.clone()))
                        .collect();
                    inputs.probes = Some((set, dec));
                }
                // Not built with probes, no permission, no tracefs, or the
                // kernel refused the program: an error, said as it is.
                Err(e @ (StartError::NotBuilt(_) | StartError::Load(_))) => bail!("{e}"),
                Err(e) => {
                    if let StartError::NothingAttached(m) = &e {
                        inputs.stats.missing =
                            m.iter().map(|m| (m.what.clone(), m.why.clone())).collect();
                    }
                    inputs.probes_error = Some(e.to_string());
                }
            }
            report_probes(&inputs.stats, inputs.probes_error.as_deref());
        }
        if let Some(iface) = &args.iface {
            capture_preflight(iface).map_err(anyhow::Error::msg)?;
            let (cap, link) = open_capture(iface, &args.filter)?;
            let writer = match &args.write {
                Some(p) => Some(
                    PcapngWriter::create(p, link)
                        .with_context(|| format!("creating {}", p.display()))?,
                ),
                None => None,
            };
            eprintln!("live: capturing on {iface} (filter {:?})", args.filter);
            let (tx, rx) = mpsc::sync_channel(CAPTURE_CHANNEL_DEPTH);
            let stop = inputs.capture_stop.clone();
            let h = thread::Builder::new()
                .name("live-capture".into())
                .spawn(move || capture_loop(cap, writer, &tx, &stop))
                .context("live: starting the capture thread")?;
            inputs.capture = Some((rx, h, link));
            inputs.capture_done = false;
        }
        let mut what = Vec::new();
        if inputs.probes.is_some() {
            what.push("probes".to_string());
        }
        if let Some(i) = &args.iface {
            what.push(i.clone());
        }
        inputs.what = what.join(" + ");
        Ok(inputs)
    }

    /// Nothing could be started: no RDMA tracepoints and no interface.
    pub fn is_empty(&self) -> bool {
        self.probes.is_none() && self.capture.is_none()
    }

    /// Hands what arrived to `handle` as engine events, waiting up to
    /// `wait_ms` for probe records. False once every input has ended.
    pub fn poll(&mut self, wait_ms: i32, handle: &mut dyn FnMut(Event<'_>)) -> bool {
        if let Some((set, dec)) = self.probes.as_mut() {
            // The probes wake the reader only when the ring is an eighth
            // full; otherwise records wait at most `wait_ms`.
            poll_readable(set.ring_fd(), wait_ms);
            drain_probes(set, dec, &mut self.stats, handle);
        } else {
            thread::sleep(Duration::from_millis(u64::try_from(wait_ms).unwrap_or(0)));
        }
        if let Some((rx, _, link)) = &self.capture {
            loop {
                match rx.try_recv() {
                    Ok(m) => {
                        if Self::on_capture(m, *link, &mut self.stats, handle) {
                            self.capture_done = true;
                        }
                    }
                    Err(mpsc::TryRecvError::Empty) => break,
                    Err(mpsc::TryRecvError::Disconnected) => {
                        self.capture_done = true;
                        break;
                    }
                }
            }
        }
        self.probes.is_some() || !self.capture_done
    }

    /// True on `Done`.
    fn on_capture(
        m: FromCapture,
        link: LinkType,
        stats: &mut LiveStats,
        handle: &mut dyn FnMut(Event<'_>),
    ) -> bool {
        match m {
            FromCapture::Frames(v) => {
                for f in &v {
                    handle(Event::Frame {
                        number: f.number,
                        ts_ns: f.ts_ns,
                        link,
                        orig_len: f.orig_len,
                        data: &f.data,
                    });
                }
                false
            }
            FromCapture::Done {
                frames,
                dropped,
                error,
            } => {
                stats.frames = frames;
                stats.frames_dropped = dropped;
                if let Some(e) = error {
                    eprintln!("live: capture stopped: {e}");
                }
                true
            }
        }
    }

    /// Stops every input: the last probe records and frames go to `handle`,
    /// the probes are detached, the capture thread is joined (its pcapng
    /// finished).
    pub fn finish(&mut self, handle: &mut dyn FnMut(Event<'_>)) {
        self.capture_stop.store(true, Ordering::SeqCst);
        if let Some((mut set, mut dec)) = self.probes.take() {
            drain_probes(&mut set, &mut dec, &mut self.stats, handle);
            self.stats.lost_in_kernel = set.lost();
            self.stats.per_event.clone_from(&dec.counts);
            set.detach();
        }
        if let Some((rx, h, link)) = self.capture.take() {
            // Draining unblocks the capture thread if the channel was full.
            while let Ok(m) = rx.recv() {
                Self::on_capture(m, link, &mut self.stats, handle);
            }
            let _ = h.join();
            self.capture_done = true;
        }
    }
}

/// Decodes every record waiting in the ring into `handle`, counting what
/// does not decode.
fn drain_probes(
    set: &mut ProbeSet,
    dec: &mut Decoder,
    stats: &mut LiveStats,
    handle: &mut dyn FnMut(Event<'_>),
) {
    let (errors, first) = (&mut stats.decode_errors, &mut stats.first_decode_error);
    stats.records += set.drain(|raw| match dec.decode(raw) {
        Ok(p) => handle(Event::Probe(&p)),
        Err(e) => {
            *errors += 1;
            first.get_or_insert_with(|| e.to_string());
        }
    });
}

/// Whether a signal (SIGINT, SIGTERM, SIGHUP) asked `live` to stop.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Runs `live`: the TUI when standard output is a terminal (and no
/// `--json-out`, `--duration` or `--no-tui`), otherwise headless.
///
/// # Errors
/// Bad arguments, a source that cannot start, output that cannot be written.
pub fn run(args: &LiveArgs) -> anyhow::Result<ExitCode> {
    let tui = !args.no_tui
        && args.json_out.is_none()
        && args.duration.is_none()
        && std::io::IsTerminal::is_terminal(&io::stdout());
    install_signal_handlers(tui);
    let started = Instant::now();
    let mono0 = monotonic_ns();
    let mut inputs = LiveInputs::start(args)?;
    if inputs.is_empty() {
        eprintln!("live: nothing to watch on this host; exiting");
        write_stats(args, &mut inputs.stats, started)?;
        return Ok(ExitCode::from(EXIT_NOTHING_TO_WATCH));
    }
    if tui {
        return crate::tui::app::live(Box::new(LiveSource { inputs }));
    }

    let mut out: Box<dyn Write> = match &args.json_out {
        Some(p) => Box::new(BufWriter::new(
            File::create(p).with_context(|| format!("creating {}", p.display()))?,
        )),
        None => Box::new(BufWriter::new(io::stdout())),
    };
    let json_lines = args.json_out.is_some();
    let mut engine = Engine::new(inputs.config.clone());
    let mut merger = Merger::new(1_000_000_000, 65536);
    let mut findings = Vec::new();
    let mut values = Vec::new();
    let deadline = args
        .duration
        .map(|d| started + Duration::from_secs_f64(d.max(0.0)));
    let mut last_tick = Instant::now();
    let mut stats = LiveStats::default();
    loop {
        if STOP.load(Ordering::SeqCst) || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let alive = inputs.poll(20, &mut |e| engine.handle(e, &mut findings));
        if last_tick.elapsed() >= Duration::from_millis(100) {
            last_tick = Instant::now();
            engine.handle(Event::Tick(wall_ns()), &mut findings);
        }
        let now = monotonic_ns().saturating_sub(mono0);
        emit(
            &mut findings,
            &mut merger,
            now,
            &mut values,
            &mut stats,
            json_lines,
            &mut out,
        )?;
        merger.flush(now, &mut values);
        write_values(&mut values, json_lines, &mut out, &mut stats.transactions)?;
        if !alive {
            break;
        }
    }

    inputs.finish(&mut |e| engine.handle(e, &mut findings));
    engine.handle(Event::End, &mut findings);
    emit(
        &mut findings,
        &mut merger,
        u64::MAX,
        &mut values,
        &mut stats,
        json_lines,
        &mut out,
    )?;
    merger.flush(u64::MAX, &mut values);
    write_values(&mut values, json_lines, &mut out, &mut stats.transactions)?;
    out.flush()?;
    let mut stats = LiveStats {
        transactions: stats.transactions,
        anomalies: stats.anomalies,
        ..inputs.stats
    };
    write_stats(args, &mut stats, started)?;
    eprintln!(
        "live: {} probe records ({} lost in the kernel, {} undecodable), {} frames ({} dropped), {} transactions, {} anomalies in {:.1} s",
        stats.records,
        stats.lost_in_kernel,
        stats.decode_errors,
        stats.frames,
        stats.frames_dropped,
        stats.transactions,
        stats.anomalies,
        stats.seconds
    );
    if let Some(p) = engine.kernel().private_data.first() {
        eprintln!("live: CM private data ({:?}): {}", p.0, hex(&p.1));
    } else if args.probes {
        eprintln!(
            "live: CM private data (RFC 8797): unknown (no kprobe saw a connection being set up)"
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `live` in the TUI: the inputs polled on the source thread, through the
/// same [`Pump`](crate::tui::source::Pump) as a file.
pub struct LiveSource {
    inputs: LiveInputs,
}

impl crate::tui::source::Source for LiveSource {
    fn describe(&self) -> String {
        format!("live: {}", self.inputs.what)
    }

    fn live(&self) -> bool {
        true
    }

    fn run(mut self: Box<Self>, feed: crate::tui::source::Feed) {
        let mut pump = crate::tui::source::Pump::new(self.inputs.config.clone(), feed, true);
        let mut go = true;
        let mut last_tick = Instant::now();
        while go && !STOP.load(Ordering::SeqCst) {
            let alive = self.inputs.poll(20, &mut |e| {
                if go {
                    go = pump.handle(e);
                }
            });
            if go && last_tick.elapsed() >= Duration::from_millis(100) {
                last_tick = Instant::now();
                // Ticks also carry the periodic snapshot to the screen.
                go = pump.handle(Event::Tick(wall_ns()));
            }
            if !alive {
                break;
            }
        }
        // Detach and join on every way out (q, a signal, the inputs ending).
        self.inputs.finish(&mut |e| {
            pump.handle(e);
        });
        let error = self.inputs.probes_error.take();
        pump.finish(error);
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn emit(
    findings: &mut Vec<Finding>,
    merger: &mut Merger,
    now: u64,
    values: &mut Vec<Value>,
    stats: &mut LiveStats,
    json_lines: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    for f in findings.drain(..) {
        match f {
            Finding::Transaction(t) => merger.add(t, now.min(u64::MAX - 1), values),
            Finding::Anomaly(a) => {
                stats.anomalies += 1;
                if json_lines {
                    let mut j = report::anomaly_json(&a);
                    if let Value::Object(m) = &mut j {
                        m.insert("type".into(), json!("anomaly"));
                        let src = if a.message.starts_with("client probes") {
                            "client_probes"
                        } else if a.message.starts_with("server probes") {
                            "server_probes"
                        } else {
                            "wire"
                        };
                        m.insert("sources".into(), json!([src]));
                    }
                    serde_json::to_writer(&mut *out, &j)?;
                    writeln!(out)?;
                } else {
                    writeln!(out, "{}", report::anomaly_line(&a))?;
                }
            }
        }
    }
    Ok(())
}

fn write_values(
    values: &mut Vec<Value>,
    json_lines: bool,
    out: &mut dyn Write,
    written: &mut u64,
) -> io::Result<()> {
    *written += values.len() as u64;
    for v in values.drain(..) {
        if json_lines {
            serde_json::to_writer(&mut *out, &v)?;
            writeln!(out)?;
        } else {
            writeln!(
                out,
                "{} xid {:#010x} {} latency {} µs credits {}/{} inv {}",
                v["sources"],
                v["xid"].as_u64().unwrap_or(0),
                v["procedure"].as_str().unwrap_or("?"),
                v["latency_us"],
                v["credits_requested"],
                v["credits_granted"],
                v["remote_invalidated_rkey"]
            )?;
        }
    }
    out.flush()
}

fn write_stats(args: &LiveArgs, stats: &mut LiveStats, started: Instant) -> anyhow::Result<()> {
    stats.seconds = started.elapsed().as_secs_f64();
    stats.cpu_seconds = cpu_seconds();
    if let Some(p) = &args.stats_out {
        let mut f = File::create(p).with_context(|| format!("creating {}", p.display()))?;
        serde_json::to_writer_pretty(&mut f, &stats.to_json())?;
        writeln!(f)?;
    }
    Ok(())
}

fn report_probes(stats: &LiveStats, error: Option<&str>) {
    eprintln!(
        "live: probes: {} attached, {} missing",
        stats.attached.len(),
        stats.missing.len()
    );
    for (what, why) in &stats.missing {
        eprintln!("live: probes: missing {what}: {why}");
    }
    if let Some(e) = error {
        eprintln!("live: probes: {e}");
    }
}

fn start_probes(args: &LiveArgs) -> Result<(ProbeSet, Decoder), StartError> {
    let tracefs =
        probe_preflight().map_err(|e| StartError::NotBuilt(format!("live --probes: {e}")))?;
    let mut systems: Vec<String> = ebpf::SYSTEMS.iter().map(|s| (*s).to_string()).collect();
    let mut extra = Vec::new();
    for t in &args.extra_tracepoints {
        let Some((s, e)) = t.split_once(':') else {
            return Err(StartError::NotBuilt(format!(
                "--tracepoint {t}: expected SYSTEM:EVENT"
            )));
        };
        if !systems.iter().any(|x| x == s) {
            systems.push(s.to_string());
        }
        extra.push((s.to_string(), e.to_string()));
    }
    let sys_refs: Vec<&str> = systems.iter().map(String::as_str).collect();
    let (formats, absent, _bad) = FormatSet::load(&tracefs, &sys_refs);
    let rdma: Vec<&str> = ebpf::SYSTEMS.to_vec();
    let absent_rdma: Vec<String> = absent
        .iter()
        .filter(|s| rdma.contains(&s.as_str()))
        .cloned()
        .collect();
    let mut plan = Plan::all_of(&formats, &rdma, &absent_rdma);
    for (s, e) in extra {
        if formats.by_name(&s, &e).is_some() {
            plan.tracepoints.push((s, e));
        } else {
            plan.absent_systems.push(format!("{s}:{e}"));
        }
    }
    let kprobes = !args.no_kprobes && absent_rdma.len() < rdma.len();
    let set = ProbeSet::start(&plan, &formats, kprobes)?;
    let offset = ebpf::clock_offset_ns().unwrap_or(0);
    Ok((set, Decoder::new(formats, offset)))
}

fn poll_readable(fd: std::os::fd::RawFd, timeout_ms: i32) {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    #[allow(unsafe_code)]
    unsafe {
        libc::poll(&mut p, 1, timeout_ms);
    }
}

fn monotonic_ns() -> u64 {
    static T0: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    T0.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

// ------------------------------------------------------------------ capture

/// Kernel capture buffer (memory is bounded by it).
const CAPTURE_BUFFER_BYTES: i32 = 32 << 20;

fn open_capture(
    iface: &str,
    filter: &str,
) -> anyhow::Result<(pcap::Capture<pcap::Active>, LinkType)> {
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
    // on a quiet link, and the loop must see STOP.
    let cap = cap
        .setnonblock()
        .with_context(|| format!("live -i {iface}: non-blocking mode"))?;
    let link = LinkType(cap.get_datalink().0 as u32);
    Ok((cap, link))
}

fn capture_loop(
    mut cap: pcap::Capture<pcap::Active>,
    mut writer: Option<PcapngWriter>,
    tx: &mpsc::SyncSender<FromCapture>,
    stop: &AtomicBool,
) {
    let mut number = 0u64;
    let mut error = None;
    let mut batch: Vec<Captured> = Vec::new();
    let mut batch_bytes = 0usize;
    let mut last_send = Instant::now();
    while !STOP.load(Ordering::SeqCst) && !stop.load(Ordering::SeqCst) {
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
                poll_readable(cap.as_raw_fd(), 50);
            }
            Err(e) => {
                error = Some(e.to_string());
                break;
            }
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
    if let Some(mut w) = writer {
        if let Err(e) = w.finish() {
            error.get_or_insert(format!("writing pcapng: {e}"));
        }
    }
    let dropped = cap
        .stats()
        .map_or(0, |s| u64::from(s.dropped) + u64::from(s.if_dropped));
    let _ = tx.send(FromCapture::Done {
        frames: number,
        dropped,
        error,
    });
}

/// A minimal pcapng writer: section header, one interface, enhanced packet blocks.
pub struct PcapngWriter {
    out: BufWriter<File>,
}

impl PcapngWriter {
    /// Creates `path` and writes the section header and interface description.
    ///
    /// # Errors
    /// I/O errors.
    pub fn create(path: &Path, link: LinkType) -> io::Result<PcapngWriter> {
        let mut w = PcapngWriter {
            out: BufWriter::new(File::create(path)?),
        };
        // Section Header Block.
        let mut shb = Vec::new();
        shb.extend_from_slice(&0x1A2B_3C4Du32.to_le_bytes());
        shb.extend_from_slice(&1u16.to_le_bytes());
        shb.extend_from_slice(&0u16.to_le_bytes());
        shb.extend_from_slice(&(-1i64).to_le_bytes());
        w.block(0x0A0D_0D0A, &shb)?;
        // Interface Description Block, with if_tsresol = 9 (ns).
        let mut idb = Vec::new();
        idb.extend_from_slice(&(link.0 as u16).to_le_bytes());
        idb.extend_from_slice(&0u16.to_le_bytes());
        idb.extend_from_slice(&65535u32.to_le_bytes());
        idb.extend_from_slice(&9u16.to_le_bytes());
        idb.extend_from_slice(&1u16.to_le_bytes());
        idb.extend_from_slice(&[9, 0, 0, 0]);
        idb.extend_from_slice(&[0, 0, 0, 0]);
        w.block(1, &idb)?;
        Ok(w)
    }

    fn block(&mut self, kind: u32, body: &[u8]) -> io::Result<()> {
        let pad = (4 - body.len() % 4) % 4;
        let total = (12 + body.len() + pad) as u32;
        self.out.write_all(&kind.to_le_bytes())?;
        self.out.write_all(&total.to_le_bytes())?;
        self.out.write_all(body)?;
        self.out.write_all(&[0u8; 3][..pad])?;
        self.out.write_all(&total.to_le_bytes())
    }

    /// Appends one packet (timestamp in ns since the epoch).
    ///
    /// # Errors
    /// I/O errors.
    pub fn packet(&mut self, ts_ns: u64, orig_len: u32, data: &[u8]) -> io::Result<()> {
        let mut epb = Vec::with_capacity(20 + data.len());
        epb.extend_from_slice(&0u32.to_le_bytes());
        epb.extend_from_slice(&((ts_ns >> 32) as u32).to_le_bytes());
        epb.extend_from_slice(&(ts_ns as u32).to_le_bytes());
        epb.extend_from_slice(&(data.len() as u32).to_le_bytes());
        epb.extend_from_slice(&orig_len.to_le_bytes());
        epb.extend_from_slice(data);
        self.block(6, &epb)
    }

    /// Flushes the file.
    ///
    /// # Errors
    /// I/O errors.
    pub fn finish(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::pcap::PcapReader;

    #[test]
    fn pcapng_written_reads_back() {
        let dir = std::env::temp_dir().join(format!("rdma-live-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("w.pcapng");
        let mut w = PcapngWriter::create(&p, LinkType(1)).unwrap();
        w.packet(1_700_000_000_123_456_789, 60, &[0xaa; 42])
            .unwrap();
        w.packet(1_700_000_000_223_456_789, 43, &[0xbb; 43])
            .unwrap();
        w.finish().unwrap();
        drop(w);
        let mut r = PcapReader::open(&p).unwrap();
        let a = r.next_packet().unwrap().unwrap();
        assert_eq!(a.ts_ns, 1_700_000_000_123_456_789);
        assert_eq!(a.orig_len, 60);
        assert_eq!(a.data.len(), 42);
        let b = r.next_packet().unwrap().unwrap();
        assert_eq!(b.data, &[0xbb; 43][..]);
        assert!(r.next_packet().unwrap().is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
