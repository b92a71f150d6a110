//! What `rdma-analyzer live` watches, as one pipeline source: the kernel's
//! RPC-over-RDMA stack through eBPF probes, and packet capture on an
//! interface.
//!
//! ```text
//!  capture thread: libpcap ─► batches ─┐
//!  probes: ring buffer ─► Decoder ─────┼─► LiveInputs::pump ─► Event::Frame / Event::Probe / Event::Tick (100 ms)
//! ```
//!
//! Probes are detached on every way out: when the source ends (asked to,
//! or its inputs ended), when the `ProbeSet` drops (error, panic
//! unwinding), and the kernel closes them with the process's file
//! descriptors in any case (SIGKILL too).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::bail;
use schemars::JsonSchema;
use serde::Serialize;

use super::capture::{self, Capture, FromCapture};
use super::ebpf::{self, Decoder, FormatSet, Plan, ProbeSet, StartError};
use super::sys;
use crate::engine::Event;
use crate::pipeline::{End, Flow, Notice, Progress, Source};

/// What to watch.
#[derive(Debug, Clone, Default)]
pub struct LiveOptions {
    /// Attach the eBPF probes.
    pub probes: bool,
    /// Capture on this interface.
    pub iface: Option<String>,
    /// BPF capture filter.
    pub bpf: String,
    /// Save captured frames to this pcapng file.
    pub write: Option<PathBuf>,
    /// The kernel's capture ring, bytes (default: [`capture::CAPTURE_BUFFER_BYTES`]).
    pub capture_buffer: Option<usize>,
    /// Extra tracepoints (`system:event`).
    pub extra_tracepoints: Vec<String>,
    /// Leave the CM private-data kprobes out.
    pub no_kprobes: bool,
    /// Which tracepoints, and how much of each, the probes deliver.
    pub probe_events: ebpf::ProbeEvents,
    /// The engine's dissector settings: the capture thread checks ICRCs
    /// with them when the engine is behind.
    pub stack: rdma_dissectors::stack::Config,
}

/// A probe that could not be attached, and why.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct MissingProbe {
    /// The tracepoint, kprobe or group (`rpcrdma:*`).
    pub what: String,
    /// Why, and what the user can do.
    pub why: String,
}

/// What a live run counted: the `--stats-out` document, summarised on stderr.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct LiveStats {
    /// The version of the schema this follows (1).
    pub schema_version: u32,
    /// Tracepoints (and kprobes) attached.
    pub attached: Vec<String>,
    /// What could not be attached, and why.
    pub missing: Vec<MissingProbe>,
    /// Tracepoints present but left in the kernel on purpose: per-RPC events
    /// the analyzer has no use for (`--all-probe-events` attaches them).
    pub left_out: Vec<String>,
    /// Records read from the ring buffer.
    pub records: u64,
    /// Records read per second of the run.
    pub records_per_second: f64,
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
    /// With both the probes and a capture: how many of the transactions
    /// joined the wire's view with a kernel's, and how many went out with
    /// one side's only. Null when only one input ran.
    pub views: Option<crate::counters::ViewCounts>,
    /// Anomalies written.
    pub anomalies: u64,
    /// Seconds the run lasted.
    pub seconds: f64,
    /// CPU seconds this process used (user + system).
    pub cpu_seconds: f64,
    /// What the metrics exporter cut off (`--metrics`); null without it.
    pub exporter: Option<crate::counters::ExporterStats>,
}

impl Default for LiveStats {
    fn default() -> Self {
        LiveStats {
            schema_version: 1,
            attached: Vec::new(),
            missing: Vec::new(),
            left_out: Vec::new(),
            records: 0,
            records_per_second: 0.0,
            lost_in_kernel: 0,
            decode_errors: 0,
            first_decode_error: None,
            per_event: BTreeMap::new(),
            frames: 0,
            frames_dropped: 0,
            transactions: 0,
            views: None,
            anomalies: 0,
            seconds: 0.0,
            cpu_seconds: 0.0,
            exporter: None,
        }
    }
}

impl LiveStats {
    /// Closes the run's figures: its length and CPU time.
    pub fn finish(&mut self, seconds: f64, cpu_seconds: f64) {
        self.seconds = seconds;
        self.cpu_seconds = cpu_seconds;
        self.records_per_second = if seconds > 0.0 {
            self.records as f64 / seconds
        } else {
            0.0
        };
    }
}

/// Checks what probes need before touching the kernel; mounts tracefs
/// when it is missing and this process may (saying so in `notices`).
fn probe_preflight(notices: &mut Vec<Notice>) -> Result<PathBuf, String> {
    if ebpf::PROBES_OBJECT.is_empty() {
        let why = if ebpf::PROBES_BUILD_STATUS.is_empty() {
            "built without eBPF probes"
        } else {
            ebpf::PROBES_BUILD_STATUS
        };
        return Err(why.to_string());
    }
    use sys::cap;
    if !(sys::has_cap(cap::SYS_ADMIN) || (sys::has_cap(cap::BPF) && sys::has_cap(cap::PERFMON))) {
        return Err(
            "not permitted: run as root, or grant CAP_BPF and CAP_PERFMON \
             (setcap cap_bpf,cap_perfmon+ep rdma-analyzer)"
                .to_string(),
        );
    }
    if let Some(t) = ebpf::find_tracefs() {
        return Ok(t);
    }
    match sys::mount_tracefs() {
        Ok(()) => notices.push(Notice {
            warning: false,
            text: "live: tracefs was not mounted: mounted it on /sys/kernel/tracing".into(),
        }),
        Err(e) => {
            return Err(format!(
                "tracefs is not mounted and mounting it failed ({e}); mount it with: \
                 mount -t tracefs nodev /sys/kernel/tracing"
            ))
        }
    }
    ebpf::find_tracefs().ok_or_else(|| {
        "tracefs was mounted on /sys/kernel/tracing but holds no events; \
         is this kernel built with CONFIG_FTRACE?"
            .to_string()
    })
}

fn start_probes(
    o: &LiveOptions,
    notices: &mut Vec<Notice>,
) -> Result<(ProbeSet, Decoder), StartError> {
    let tracefs = probe_preflight(notices)
        .map_err(|e| StartError::NotBuilt(format!("live --probes: {e}")))?;
    let mut systems: Vec<String> = ebpf::SYSTEMS.iter().map(|s| (*s).to_string()).collect();
    let mut extra = Vec::new();
    for t in &o.extra_tracepoints {
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
    let mut plan = Plan::all_of(&formats, &rdma, &absent_rdma, o.probe_events);
    for (s, e) in extra {
        if let Some(f) = formats.by_name(&s, &e) {
            let copy = ebpf::whole_record(f);
            plan.tracepoints.push((s, e, copy));
        } else {
            plan.absent_systems.push(format!("{s}:{e}"));
        }
    }
    let kprobes = !o.no_kprobes && absent_rdma.len() < rdma.len();
    let mut set = ProbeSet::start(&plan, kprobes)?;
    set.missing
        .extend(ebpf::blind_spots(&formats, &plan.absent_systems));
    let offset = ebpf::clock_offset_ns().unwrap_or(0);
    Ok((set, Decoder::new(formats, offset)))
}

fn missing(m: &ebpf::Missing) -> MissingProbe {
    MissingProbe {
        what: m.what.clone(),
        why: m.why.clone(),
    }
}

/// How often a live source emits [`Event::Tick`].
const TICK_EVERY: Duration = Duration::from_millis(100);
/// Longest a pump waits for probe records.
const POLL_MS: i32 = 20;
/// Longest one pump spends on either input before it turns to the other
/// and to its ticks (checked between capture batches, so a pump takes at
/// least one whole batch). Without a bound an engine slower than the traffic
/// (a debug build in a TCG guest under 96 writers) took frames until the
/// traffic stopped: the probe records waited in their ring for the whole
/// burst, no wire view met its probe view, and calls were given up
/// before their task's end was read.
const INPUT_BUDGET: Duration = Duration::from_millis(20);
/// How often the loss counters in [`Progress`] are refreshed (reading the
/// probes' is a system call).
const COUNTERS_EVERY: Duration = Duration::from_secs(1);

fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The probes and the capture of a live run, as one [`Source`].
pub struct LiveInputs {
    probes: Option<(ProbeSet, Decoder)>,
    capture: Option<Capture>,
    capture_done: bool,
    /// Why the capture ended, when it failed.
    capture_error: Option<String>,
    /// Why `--write`'s file is truncated, when it is.
    write_error: Option<String>,
    /// What the run counted so far.
    pub stats: LiveStats,
    /// What is watched, in words (`probes + eth0`).
    what: String,
    notices: Vec<Notice>,
    last_tick: Instant,
    last_counters: Option<Instant>,
    /// An input still had work when its budget ran out: the next pump
    /// does not wait.
    backlog: bool,
    stopping: bool,
    ended: bool,
    progress: Progress,
}

impl LiveInputs {
    /// Starts what `o` asks for. Probes that find nothing to attach are a
    /// notice, not an error (see [`LiveInputs::is_empty`]); no permission,
    /// no tracefs, a build without probes and a missing interface are.
    ///
    /// # Errors
    /// As above, in words the user can act on.
    pub fn start(o: &LiveOptions) -> anyhow::Result<LiveInputs> {
        if !o.probes && o.iface.is_none() {
            bail!("live: say what to watch: --probes, -i IFACE, or both");
        }
        let mut inputs = LiveInputs {
            probes: None,
            capture: None,
            capture_done: true,
            capture_error: None,
            write_error: None,
            stats: LiveStats::default(),
            what: String::new(),
            notices: Vec::new(),
            last_tick: Instant::now(),
            last_counters: None,
            backlog: false,
            stopping: false,
            ended: false,
            progress: Progress::default(),
        };
        if o.probes {
            let mut probes_error = None;
            match start_probes(o, &mut inputs.notices) {
                Ok((set, dec)) => {
                    inputs.stats.attached.clone_from(&set.attached);
                    inputs.stats.left_out.clone_from(&set.left_out);
                    inputs.stats.missing = set.missing.iter().map(missing).collect();
                    inputs.probes = Some((set, dec));
                }
                // Not built with probes, no permission, no tracefs, or the
                // kernel refused the program: an error, said as it is.
                Err(e @ (StartError::NotBuilt(_) | StartError::Load(_))) => bail!("{e}"),
                Err(e) => {
                    if let StartError::NothingAttached(m) = &e {
                        inputs.stats.missing = m.iter().map(missing).collect();
                    }
                    probes_error = Some(e.to_string());
                }
            }
            let slots = matches!(&inputs.probes, Some((set, _)) if !set.cookies);
            let s = &inputs.stats;
            let summary = format!(
                "live: probes: {} attached, {} missing, {} left in the kernel (per-RPC events the analyzer does not use){}",
                s.attached.len(),
                s.missing.len(),
                s.left_out.len(),
                if slots {
                    " (this kernel has no BPF cookies: one program per tracepoint)"
                } else {
                    ""
                }
            );
            let warn = !s.missing.is_empty();
            let missing: Vec<String> = s
                .missing
                .iter()
                .map(|m| format!("live: probes: missing {}: {}", m.what, m.why))
                .collect();
            inputs.say(warn, summary);
            for m in missing {
                inputs.say(true, m);
            }
            if let Some(e) = probes_error {
                inputs.say(true, format!("live: probes: {e}"));
            }
        }
        if let Some(iface) = &o.iface {
            capture::preflight(iface)?;
            let c = capture::start(
                iface,
                &o.bpf,
                o.write.as_deref(),
                o.capture_buffer,
                &o.stack,
            )?;
            inputs.say(
                false,
                format!("live: capturing on {iface} (filter {:?})", o.bpf),
            );
            inputs.capture = Some(c);
            inputs.capture_done = false;
        }
        let mut what = Vec::new();
        if inputs.probes.is_some() {
            what.push("probes".to_string());
        }
        if let Some(i) = &o.iface {
            what.push(i.clone());
        }
        inputs.what = what.join(" + ");
        Ok(inputs)
    }

    fn say(&mut self, warning: bool, text: String) {
        self.notices.push(Notice { warning, text });
    }

    /// Nothing could be started: no RDMA tracepoints and no interface.
    pub fn is_empty(&self) -> bool {
        self.probes.is_none() && self.capture.is_none()
    }

    /// Hands what arrived to `emit`, waiting up to `wait_ms` for probe
    /// records. False once every input has ended.
    fn poll(&mut self, wait_ms: i32, emit: &mut dyn FnMut(Event<'_>) -> Flow) -> bool {
        // The probes wake the reader only when the ring is an eighth full
        // (otherwise records wait at most `wait_ms`); the capture thread
        // after every batch. Waiting on the batches too, rather than
        // sleeping, keeps its bounded channel from stalling it at rate.
        let mut fds = Vec::with_capacity(2);
        if let Some((set, _)) = self.probes.as_ref() {
            fds.push(set.ring_fd());
        }
        if let Some(c) = self.capture.as_ref() {
            fds.push(c.wake.fd());
        }
        sys::poll_any(&fds, if self.backlog { 0 } else { wait_ms });
        if let Some(c) = self.capture.as_ref() {
            c.wake.clear();
        }
        self.backlog = false;
        if let Some((set, dec)) = self.probes.as_mut() {
            let until = Some(Instant::now() + INPUT_BUDGET);
            self.backlog |=
                drain_probes(set, dec, &mut self.stats, &mut self.progress, until, emit);
        }
        let until = Instant::now() + INPUT_BUDGET;
        while let Some(c) = self.capture.as_ref() {
            if Instant::now() >= until {
                self.backlog = true;
                break;
            }
            match c.try_recv() {
                Ok(m) => {
                    if self.on_capture(m, emit) {
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
        if self
            .last_counters
            .is_none_or(|t| t.elapsed() >= COUNTERS_EVERY)
        {
            self.last_counters = Some(Instant::now());
            self.refresh_counters();
        }
        self.probes.is_some() || !self.capture_done
    }

    /// What was lost so far, into [`Progress`].
    fn refresh_counters(&mut self) {
        if let Some(c) = self.capture.as_ref() {
            self.progress.capture_dropped = Some(c.dropped.load(Ordering::Relaxed));
        }
        if let Some((set, _)) = self.probes.as_ref() {
            self.progress.probe_lost = Some(set.lost());
            self.progress.probe_undecodable = Some(self.stats.decode_errors);
        }
    }

    /// True on `Done`.
    fn on_capture(&mut self, m: FromCapture, emit: &mut dyn FnMut(Event<'_>) -> Flow) -> bool {
        match m {
            FromCapture::Frames(batch) => {
                for f in batch.iter() {
                    self.progress.frames += 1;
                    let _ = emit(Event::Frame(f));
                }
                if let Some(c) = self.capture.as_ref() {
                    let _ = c.recycle.send(batch);
                }
                false
            }
            FromCapture::WriteFailed(e) => {
                self.say(true, format!("live --write: {e}"));
                self.write_error = Some(e);
                false
            }
            FromCapture::Done {
                frames,
                dropped,
                error,
                write_error,
            } => {
                self.stats.frames = frames;
                self.stats.frames_dropped = dropped;
                self.progress.capture_dropped = Some(dropped);
                if let Some(e) = error {
                    self.say(true, format!("live: capture stopped: {e}"));
                    self.capture_error = Some(e);
                }
                if let Some(e) = write_error {
                    if self.write_error.is_none() {
                        self.say(true, format!("live --write: {e}"));
                    }
                    self.write_error = Some(e);
                }
                true
            }
        }
    }

    /// Stops every input: the last probe records and frames go to `emit`,
    /// the probes are detached, the capture thread is joined (its pcapng
    /// finished).
    fn finish(&mut self, emit: &mut dyn FnMut(Event<'_>) -> Flow) {
        if let Some(c) = self.capture.as_ref() {
            c.stop.store(true, Ordering::SeqCst);
        }
        if let Some((mut set, mut dec)) = self.probes.take() {
            drain_probes(
                &mut set,
                &mut dec,
                &mut self.stats,
                &mut self.progress,
                None,
                emit,
            );
            self.stats.lost_in_kernel = set.lost();
            self.progress.probe_lost = Some(self.stats.lost_in_kernel);
            self.progress.probe_undecodable = Some(self.stats.decode_errors);
            self.stats.per_event = dec.counts();
            set.detach();
        }
        if let Some(mut c) = self.capture.take() {
            // Draining unblocks the capture thread if the channel was full.
            while let Ok(m) = c.recv() {
                let _ = self.on_capture(m, emit);
            }
            if let Some(t) = c.thread.take() {
                let _ = t.join();
            }
            self.capture_done = true;
        }
    }
}

/// Decodes the records waiting in the ring into `emit`, counting what
/// does not decode, until the ring is empty or `until` passes; true when
/// records were left for the next pump.
fn drain_probes(
    set: &mut ProbeSet,
    dec: &mut Decoder,
    stats: &mut LiveStats,
    progress: &mut Progress,
    until: Option<Instant>,
    emit: &mut dyn FnMut(Event<'_>) -> Flow,
) -> bool {
    let (errors, first) = (&mut stats.decode_errors, &mut stats.first_decode_error);
    let (n, more) = set.drain(
        |raw| match dec.decode(raw) {
            Ok(p) => {
                let _ = emit(Event::Probe(&p));
            }
            Err(e) => {
                *errors += 1;
                first.get_or_insert_with(|| e.to_string());
            }
        },
        || until.is_some_and(|u| Instant::now() >= u),
    );
    stats.records += n;
    progress.frames += n;
    more
}

impl Source for LiveInputs {
    fn describe(&self) -> String {
        format!("live: {}", self.what)
    }

    fn is_live(&self) -> bool {
        true
    }

    fn pump(&mut self, emit: &mut dyn FnMut(Event<'_>) -> Flow) -> Option<End> {
        if self.ended {
            return Some(End::Stopped);
        }
        let alive = !self.stopping && self.poll(POLL_MS, emit);
        if alive && self.last_tick.elapsed() >= TICK_EVERY {
            self.last_tick = Instant::now();
            let _ = emit(Event::Tick(wall_ns()));
        }
        if alive {
            return None;
        }
        // Asked to stop, or every input ended: detach and join on every way out.
        self.finish(emit);
        self.ended = true;
        // A truncated --write file fails the run even when it was asked to
        // stop: the analysis is whole, the file the user asked for is not.
        if let Some(e) = self.write_error.take() {
            return Some(End::Failed(format!("live --write: {e}")));
        }
        Some(match (self.stopping, self.capture_error.take()) {
            (true, _) => End::Stopped,
            (false, Some(e)) => End::Failed(format!("live: capture stopped: {e}")),
            (false, None) => End::Complete,
        })
    }

    fn stop(&mut self) {
        self.stopping = true;
    }

    fn progress(&self) -> Progress {
        self.progress
    }

    fn notices(&mut self, out: &mut Vec<Notice>) {
        out.append(&mut self.notices);
    }
}
