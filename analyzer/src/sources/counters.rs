//! `live`'s counter sampler: the NFS client's `/proc/self/mountstats`
//! (RDMA mounts, one entry per `xprt:` line) and the RDMA devices' sysfs
//! counters, read on a timer beside the wire. Each counter keeps its
//! latest value, its delta since the previous sample and its growth since
//! the first; the first readable mountstats is the BEFORE of the live
//! diagnosis's kernel view, as `report --mountstats-before` would be.
//!
//! A counter that goes backwards (a remount, a module reload) is said as a
//! reset: its delta is null, never negative or wrapped, and its growth
//! since start carries on from the new count.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::diagnosis::KernelView;
use crate::engine::device_counters::DeviceCounter;
use crate::engine::mountstats::{self, Mount, Transport};
use crate::output::kernel_counters::kernel_view;

/// The most of a mountstats file read per sample (as `sys::mountstats`):
/// a host with thousands of mounts gives its first 4 MiB.
pub const MAX_MOUNTSTATS_BYTES: usize = 4 << 20;

/// Where the sampler reads; tests point both at files of their own.
#[derive(Debug, Clone)]
pub struct CounterPaths {
    /// `/proc/self/mountstats`.
    pub mountstats: PathBuf,
    /// `/sys/class/infiniband`.
    pub sysfs_root: PathBuf,
}

impl Default for CounterPaths {
    fn default() -> Self {
        CounterPaths {
            mountstats: PathBuf::from("/proc/self/mountstats"),
            sysfs_root: PathBuf::from("/sys/class/infiniband"),
        }
    }
}

/// One counter in a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CounterValue {
    /// The value read.
    pub total: u64,
    /// Growth since the previous sample; null at the first sample and at a
    /// reset.
    pub delta: Option<u64>,
    /// Growth since the first sample, resets bridged (after a reset the
    /// new count is added, as it counts from zero).
    pub since_start: u64,
    /// The counter went backwards since the previous sample.
    pub reset: bool,
}

#[derive(Debug, Clone, Copy)]
struct Track {
    latest: u64,
    since_start: u64,
    seen_at: u64,
}

/// Running deltas of counters keyed by name.
#[derive(Debug, Default)]
struct Tracker(BTreeMap<String, Track>);

impl Tracker {
    fn update(&mut self, key: String, value: u64, sample: u64) -> CounterValue {
        match self.0.get_mut(&key) {
            // Not read at the previous sample (a file that failed once, a
            // mount that came back): its growth in between is not known.
            Some(t) if t.seen_at + 1 != sample => {
                let reset = value < t.latest;
                if !reset {
                    t.since_start += value - t.latest;
                }
                t.latest = value;
                t.seen_at = sample;
                CounterValue {
                    total: value,
                    delta: None,
                    since_start: t.since_start,
                    reset,
                }
            }
            Some(t) => {
                let delta = value.checked_sub(t.latest);
                t.since_start += delta.unwrap_or(value);
                t.latest = value;
                t.seen_at = sample;
                CounterValue {
                    total: value,
                    delta,
                    since_start: t.since_start,
                    reset: delta.is_none(),
                }
            }
            None => {
                // Born after the first sample: it counted from zero since.
                let since_start = if sample == 0 { 0 } else { value };
                self.0.insert(
                    key,
                    Track {
                        latest: value,
                        since_start,
                        seen_at: sample,
                    },
                );
                CounterValue {
                    total: value,
                    delta: None,
                    since_start,
                    reset: false,
                }
            }
        }
    }
}

/// One RDMA transport (`xprt: rdma` line) of a mount in a record.
#[derive(Debug, Clone, Serialize)]
pub struct TransportCounters {
    /// 0-based, in print order (`nconnect` gives several).
    pub transport: usize,
    /// Each field this kernel prints, by its mountstats name.
    pub fields: BTreeMap<&'static str, CounterValue>,
}

/// One RDMA mount in a record.
#[derive(Debug, Clone, Serialize)]
pub struct MountCounters {
    /// Where it is mounted.
    pub mount: String,
    /// `server:/export`.
    pub export: String,
    /// Its RDMA transports.
    pub transports: Vec<TransportCounters>,
}

/// One device counter in a record.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceCounterValue {
    /// `rxe0`, `mlx5_0`.
    pub device: String,
    /// The port.
    pub port: u32,
    /// `hw_counters` or `counters`.
    pub group: String,
    /// The file's name.
    pub name: String,
    /// Its value and deltas.
    #[serde(flatten)]
    pub value: CounterValue,
}

/// `live --json-out`'s counter record, one per sample.
#[derive(Debug, Clone, Serialize)]
pub struct CountersLine {
    /// `"counters"`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// When it was read, ns since the epoch.
    pub at_ns: u64,
    /// 0 for the first sample.
    pub sample: u64,
    /// Seconds since the previous sample (null at the first).
    pub interval_s: Option<f64>,
    /// Whether mountstats was read and parsed.
    pub mountstats_readable: bool,
    /// RDMA mounts, in mountstats order (empty when unreadable).
    pub mounts: Vec<MountCounters>,
    /// The devices' counters (empty when sysfs has none).
    pub devices: Vec<DeviceCounterValue>,
    /// What went wrong reading, where, and what it means.
    pub notes: Vec<String>,
}

/// The sampler: paths, running deltas and the first and latest mountstats.
#[derive(Debug)]
pub struct CounterSampler {
    paths: CounterPaths,
    samples: u64,
    last_at_ns: Option<u64>,
    mounts: Tracker,
    devices: Tracker,
    /// The first readable mountstats: the kernel view's BEFORE.
    first: Option<Vec<Mount>>,
    /// The latest readable one.
    latest: Option<Vec<Mount>>,
    /// The latest sample's device counters (the metrics serve these).
    latest_devices: Vec<DeviceCounter>,
    /// The latest sample's mountstats text (the metrics serve it).
    latest_text: Option<String>,
}

impl CounterSampler {
    /// A sampler that has read nothing yet.
    pub fn new(paths: CounterPaths) -> Self {
        CounterSampler {
            paths,
            samples: 0,
            last_at_ns: None,
            mounts: Tracker::default(),
            devices: Tracker::default(),
            first: None,
            latest: None,
            latest_devices: Vec::new(),
            latest_text: None,
        }
    }

    /// Reads both sources now (`at_ns`: the wall clock) and gives the record.
    pub fn sample(&mut self, at_ns: u64) -> CountersLine {
        let n = self.samples;
        let mut notes = Vec::new();
        let parsed = match read_bounded(&self.paths.mountstats) {
            Ok((text, cut)) => {
                if cut {
                    notes.push(format!(
                        "{}: larger than {} MiB; only its first {} MiB were read (the mounts after it are left out)",
                        self.paths.mountstats.display(),
                        MAX_MOUNTSTATS_BYTES >> 20,
                        MAX_MOUNTSTATS_BYTES >> 20
                    ));
                }
                let parsed = mountstats::parse(&text);
                // As read, parsed or not: the metrics say a text that does
                // not parse as `rdma_nfs_mountstats_readable 0`.
                self.latest_text = Some(text);
                match parsed {
                    Ok(m) => Some(m),
                    Err(e) => {
                        notes.push(format!(
                            "{}: not a mountstats this analyzer reads ({e}); its counters are unknown for this sample",
                            self.paths.mountstats.display()
                        ));
                        None
                    }
                }
            }
            Err(e) => {
                self.latest_text = None;
                notes.push(format!(
                    "{}: cannot be read ({e}); the NFS client's counters are unknown for this sample (no NFS client here, or give --mountstats-file)",
                    self.paths.mountstats.display()
                ));
                None
            }
        };
        let readable = parsed.is_some();
        let mounts = match &parsed {
            Some(all) => self.mount_counters(all, n),
            None => Vec::new(),
        };
        if let Some(all) = parsed {
            self.first.get_or_insert_with(|| all.clone());
            self.latest = Some(all);
        }
        let devs = crate::sources::sys::device_counters_in(&self.paths.sysfs_root);
        let devices = devs
            .iter()
            .filter(|c| c.is_counter())
            .map(|c| DeviceCounterValue {
                device: c.device.clone(),
                port: c.port,
                group: c.group.clone(),
                name: c.name.clone(),
                value: self.devices.update(
                    format!("{}\0{}\0{}\0{}", c.device, c.port, c.group, c.name),
                    c.value,
                    n,
                ),
            })
            .collect();
        self.latest_devices = devs;
        let line = CountersLine {
            kind: "counters",
            at_ns,
            sample: n,
            interval_s: self
                .last_at_ns
                .map(|l| at_ns.saturating_sub(l) as f64 / 1e9),
            mountstats_readable: readable,
            mounts,
            devices,
            notes,
        };
        self.samples += 1;
        self.last_at_ns = Some(at_ns);
        line
    }

    fn mount_counters(&mut self, all: &[Mount], n: u64) -> Vec<MountCounters> {
        let mut out = Vec::new();
        for m in all.iter().filter(|m| m.is_rdma()) {
            let mut transports = Vec::new();
            let rdma = m
                .transports
                .iter()
                .filter(|t| matches!(t, Transport::Rdma { .. }));
            for (i, t) in rdma.enumerate() {
                let Transport::Rdma { layout, values } = t else {
                    continue;
                };
                let mut fields = BTreeMap::new();
                for (name, &v) in layout.names().zip(values) {
                    // The local port is always 0 and idle_time a gauge:
                    // neither has a delta worth saying.
                    if matches!(name, "port" | "idle_time") {
                        continue;
                    }
                    let key = format!("{}\0{}\0{i}\0{name}", m.device, m.mountpoint);
                    fields.insert(name, self.mounts.update(key, v, n));
                }
                transports.push(TransportCounters {
                    transport: i,
                    fields,
                });
            }
            out.push(MountCounters {
                mount: m.mountpoint.clone(),
                export: m.device.clone(),
                transports,
            });
        }
        out
    }

    /// The kernel view since the first readable sample (as
    /// `report --mountstats-before FIRST --mountstats LATEST`); `None`
    /// before any mountstats was read.
    pub fn kernel_view(&self) -> Option<KernelView> {
        let (first, latest) = (self.first.as_ref()?, self.latest.as_ref()?);
        Some(kernel_view(latest, first))
    }

    /// The latest sample's mountstats text (`None` when it could not be read).
    pub fn latest_mountstats(&self) -> Option<&str> {
        self.latest_text.as_deref()
    }

    /// The latest sample's device counters.
    pub fn latest_devices(&self) -> &[DeviceCounter] {
        &self.latest_devices
    }
}

/// One sample, as the sampler's thread hands it to `live`'s output.
#[derive(Debug, Clone)]
pub struct CounterUpdate {
    /// The record.
    pub line: CountersLine,
    /// The kernel view since the first readable sample, for the diagnosis.
    pub view: Option<KernelView>,
}

/// Samples every `interval` on a thread of its own (the reads of sysfs
/// and mountstats never wait in the capture's loop) until `stop` is
/// requested or the receiver is gone; the first sample is taken at once.
///
/// # Errors
/// When the thread cannot be started.
pub fn spawn(
    paths: CounterPaths,
    interval: std::time::Duration,
    stop: crate::pipeline::Stop,
) -> std::io::Result<std::sync::mpsc::Receiver<CounterUpdate>> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("live-counters".into())
        .spawn(move || {
            let mut s = CounterSampler::new(paths);
            // Short naps: a stop is seen within 200 ms whatever the interval.
            let nap = interval.min(std::time::Duration::from_millis(200));
            while !stop.requested() {
                let line = s.sample(now_ns());
                publish(&s);
                let next = std::time::Instant::now() + interval;
                if tx
                    .send(CounterUpdate {
                        line,
                        view: s.kernel_view(),
                    })
                    .is_err()
                {
                    return;
                }
                while !stop.requested() && std::time::Instant::now() < next {
                    std::thread::sleep(nap);
                }
            }
        })?;
    Ok(rx)
}

/// The running sampler's latest reading, for the metrics.
type Published = (Option<String>, Vec<DeviceCounter>);

static PUBLISHED: std::sync::Mutex<Option<Published>> = std::sync::Mutex::new(None);

fn published() -> std::sync::MutexGuard<'static, Option<Published>> {
    // A poisoned lock only means a reader panicked: the value is whole.
    PUBLISHED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn publish(s: &CounterSampler) {
    *published() = Some((
        s.latest_mountstats().map(String::from),
        s.latest_devices().to_vec(),
    ));
}

/// The mountstats the metrics serve: the running sampler's latest sample
/// (a scrape reads no file), else a read at most 5 s old.
pub fn served_mountstats() -> Option<String> {
    if let Some((text, _)) = published().as_ref() {
        return text.clone();
    }
    crate::sources::sys::mountstats_cached()
}

/// The device counters the metrics serve, as [`served_mountstats`].
pub fn served_device_counters() -> Vec<DeviceCounter> {
    if let Some((_, devices)) = published().as_ref() {
        return devices.clone();
    }
    crate::sources::sys::device_counters_cached()
}

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The file's first [`MAX_MOUNTSTATS_BYTES`], cut at the last whole line
/// when it is longer, and whether it was cut.
fn read_bounded(path: &Path) -> std::io::Result<(String, bool)> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_MOUNTSTATS_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    let cut = bytes.len() > MAX_MOUNTSTATS_BYTES;
    if cut {
        bytes.truncate(MAX_MOUNTSTATS_BYTES);
        // A half line would not parse.
        let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        bytes.truncate(end);
    }
    let text = String::from_utf8(bytes)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    Ok((text, cut))
}

#[cfg(test)]
#[path = "counters_tests.rs"]
mod tests;
