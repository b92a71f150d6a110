//! `live`'s counter records: the readings of the counter sampler
//! (`sources::counters`) turned into totals, deltas since the previous
//! sample and growth since the first, and the kernel view the live
//! diagnosis takes (the first readable mountstats is its BEFORE, as
//! `report --mountstats-before` would be).
//!
//! A counter that goes backwards (a remount, a module reload) is said as a
//! reset: its delta is null, never negative or wrapped, and its growth
//! since start carries on from the new count.

use std::collections::BTreeMap;

use serde::Serialize;

use super::kernel_counters::kernel_view;
use crate::counters::CounterReading;
use crate::diagnosis::KernelView;
use crate::engine::mountstats::{self, Mount, Transport};

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

/// The deltas' state: running deltas and the first and latest mountstats.
#[derive(Debug, Default)]
pub struct CounterSampler {
    samples: u64,
    last_at_ns: Option<u64>,
    mounts: Tracker,
    devices: Tracker,
    /// The first readable mountstats: the kernel view's BEFORE.
    first: Option<Vec<Mount>>,
    /// The latest readable one.
    latest: Option<Vec<Mount>>,
}

impl CounterSampler {
    /// Takes one reading and gives its record.
    pub fn sample(&mut self, r: &CounterReading) -> CountersLine {
        let n = self.samples;
        let mut notes = Vec::new();
        if let Some(bound) = r.cut_at {
            notes.push(format!(
                "{}: larger than {} MiB; only its first {} MiB were read (the mounts after it are left out)",
                r.mountstats_path,
                bound >> 20,
                bound >> 20
            ));
        }
        let parsed = self.parse(r, &mut notes);
        let mounts = match &parsed {
            Some(all) => self.mount_counters(all, n),
            None => Vec::new(),
        };
        let readable = parsed.is_some();
        if let Some(all) = parsed {
            self.first.get_or_insert_with(|| all.clone());
            self.latest = Some(all);
        }
        let devices = r
            .devices
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
        let line = CountersLine {
            kind: "counters",
            at_ns: r.at_ns,
            sample: n,
            interval_s: self
                .last_at_ns
                .map(|l| r.at_ns.saturating_sub(l) as f64 / 1e9),
            mountstats_readable: readable,
            mounts,
            devices,
            notes,
        };
        self.samples += 1;
        self.last_at_ns = Some(r.at_ns);
        line
    }

    fn parse(&self, r: &CounterReading, notes: &mut Vec<String>) -> Option<Vec<Mount>> {
        match &r.mountstats {
            Ok(text) => match mountstats::parse(text) {
                Ok(m) => Some(m),
                Err(e) => {
                    notes.push(format!(
                        "{}: not a mountstats this analyzer reads ({e}); its counters are unknown for this sample",
                        r.mountstats_path
                    ));
                    None
                }
            },
            Err(e) => {
                notes.push(format!(
                    "{}: cannot be read ({e}); the NFS client's counters are unknown for this sample (no NFS client here, or give --mountstats-file)",
                    r.mountstats_path
                ));
                None
            }
        }
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
}
