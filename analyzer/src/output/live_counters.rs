//! `live`'s counter records: the readings of the counter sampler
//! (`sources::counters`) turned into totals, deltas since the previous
//! sample and growth since the first, and the kernel view the live
//! diagnosis takes (the first readable mountstats is its BEFORE, as
//! `report --mountstats-before` would be).
//!
//! A counter that goes backwards (a remount, a module reload) is said as a
//! reset: its delta is null, never negative or wrapped, and its growth
//! since start is null from then on: what it counted between the sample
//! before the reset and the reset is lost, so any sum would be a guess.
//!
//! Every count is written as a decimal string (the JSON's rule for numbers
//! above 2^53, `view::exact`): byte counters and device data counters pass
//! 2^53 on a long-lived host, and a double-only reader would round them.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use super::kernel_counters::kernel_view;
use super::view::exact;
use crate::counters::CounterReading;
use crate::diagnosis::KernelView;
use crate::engine::mountstats::{self, Mount, OpStats, Transport};

/// One counter in a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CounterValue {
    /// The value read (a decimal string: it may exceed 2^53).
    #[serde(serialize_with = "exact::decimal")]
    #[schemars(with = "String")]
    pub total: u64,
    /// Growth since the previous sample; null at the first sample, at a
    /// reset, and after a sample that could not read it.
    #[serde(serialize_with = "exact::decimal")]
    #[schemars(with = "Option<String>")]
    pub delta: Option<u64>,
    /// Growth since the first sample; null once the counter has reset
    /// (`resets` > 0): what it counted before the reset is not known.
    #[serde(serialize_with = "exact::decimal")]
    #[schemars(with = "Option<String>")]
    pub since_start: Option<u64>,
    /// The counter went backwards since the previous sample (a remount, a
    /// reconnect that rebuilt the transport, a driver reload).
    pub reset: bool,
    /// Times it went backwards since the first sample.
    pub resets: u32,
}

#[derive(Debug, Clone, Copy)]
struct Track {
    latest: u64,
    /// `None` once a reset broke the count.
    since_start: Option<u64>,
    resets: u32,
    seen_at: u64,
}

/// Running deltas of counters keyed by name.
#[derive(Debug, Default)]
struct Tracker(BTreeMap<String, Track>);

impl Tracker {
    fn update(&mut self, key: String, value: u64, sample: u64) -> CounterValue {
        let Some(t) = self.0.get_mut(&key) else {
            // Born after the first sample: it counted from zero since.
            let since_start = Some(if sample == 0 { 0 } else { value });
            self.0.insert(
                key,
                Track {
                    latest: value,
                    since_start,
                    resets: 0,
                    seen_at: sample,
                },
            );
            return CounterValue {
                total: value,
                delta: None,
                since_start,
                reset: false,
                resets: 0,
            };
        };
        let grown = value.checked_sub(t.latest);
        let reset = grown.is_none();
        if reset {
            t.resets = t.resets.saturating_add(1);
        }
        // Growth over a gap (not read at the previous sample) is still
        // known while the counter did not go backwards; it is just not a
        // delta over one interval.
        t.since_start = t.since_start.zip(grown).map(|(s, g)| s.saturating_add(g));
        let delta = grown.filter(|_| t.seen_at + 1 == sample);
        t.latest = value;
        t.seen_at = sample;
        CounterValue {
            total: value,
            delta,
            since_start: t.since_start,
            reset,
            resets: t.resets,
        }
    }
}

/// One RDMA transport (`xprt: rdma` line) of a mount in a record.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TransportCounters {
    /// 0-based, in print order (`nconnect` gives several).
    pub transport: usize,
    /// How many fields this kernel prints on the line (20, 25, 26 or 27:
    /// the generation of `xprt_rdma_print_stats`).
    pub fields_printed: usize,
    /// `idle_time`: seconds since the transport was last used (a gauge,
    /// so no delta).
    #[serde(serialize_with = "exact::decimal")]
    #[schemars(with = "String")]
    pub idle_time_s: u64,
    /// Each count this kernel prints, by its mountstats name (`port`,
    /// always 0, and `idle_time` are not counts).
    #[schemars(with = "BTreeMap<String, CounterValue>")]
    pub fields: BTreeMap<&'static str, CounterValue>,
    /// Every field as printed, in print order, with its value (the TUI
    /// lists them so; the JSON has them in `fields`).
    #[serde(skip)]
    pub printed: Vec<(&'static str, u64)>,
}

/// One line of a mount's per-op statistics in a record: the mount's
/// transports together (the kernel does not split them).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct OpCounters {
    /// The operation (`READ`, `GETATTR`).
    pub op: String,
    /// Operations the application asked for.
    pub ops: CounterValue,
    /// Transmissions (more than `ops` when the client sent again).
    pub ntrans: CounterValue,
    /// Major timeouts.
    pub timeouts: CounterValue,
    /// Bytes sent, headers included.
    pub bytes_sent: CounterValue,
    /// Bytes received, headers included.
    pub bytes_recv: CounterValue,
    /// Milliseconds queued before transmission, summed.
    pub queue_ms: CounterValue,
    /// Milliseconds from transmission to reply, summed.
    pub rtt_ms: CounterValue,
    /// Milliseconds from the request to its completion, summed.
    pub execute_ms: CounterValue,
    /// Operations that ended in an error; null before statvers 1.1.
    pub errors: Option<CounterValue>,
}

/// One RDMA mount in a record.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct MountCounters {
    /// Where it is mounted.
    pub mount: String,
    /// `server:/export`.
    pub export: String,
    /// Its RDMA transports.
    pub transports: Vec<TransportCounters>,
    /// The operations it has sent at least once, in print order (an
    /// operation never used prints zeros and is left out).
    pub ops: Vec<OpCounters>,
}

/// One device counter in a record.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
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
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CountersLine {
    /// The version of the schema this follows.
    pub schema_version: u32,
    /// `"counters"`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// When it was read, ns since the epoch (a decimal string).
    #[serde(serialize_with = "exact::decimal")]
    #[schemars(with = "String")]
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
    /// Readable samples kept to bound a window's kernel view, oldest
    /// first, thinned to one per [`HISTORY_SPACING`]th of `keep_ns`.
    history: std::collections::VecDeque<(u64, Vec<Mount>)>,
    /// How far back `history` reaches (0: not kept).
    keep_ns: u64,
}

/// A window's kernel view is bounded by a sample at most this fraction of
/// its width before its start: the history holds about this many samples.
const HISTORY_SPACING: u64 = 32;

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
            self.remember(r.at_ns, &all);
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
            schema_version: super::schema::SCHEMA_VERSION,
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
            let rdma = m.transports.iter().filter_map(|t| match t {
                Transport::Rdma { layout, values } => Some((layout, values)),
                Transport::Other { .. } => None,
            });
            let mut transports = Vec::new();
            for (i, (layout, values)) in rdma.enumerate() {
                let printed: Vec<(&'static str, u64)> =
                    layout.names().zip(values.iter().copied()).collect();
                let mut fields = BTreeMap::new();
                let mut idle_time_s = 0;
                for &(name, v) in &printed {
                    // The local port is always 0 and idle_time a gauge:
                    // neither has a delta worth saying.
                    match name {
                        "port" => {}
                        "idle_time" => idle_time_s = v,
                        _ => {
                            let key = format!("{}\0{}\0{i}\0{name}", m.device, m.mountpoint);
                            fields.insert(name, self.mounts.update(key, v, n));
                        }
                    }
                }
                transports.push(TransportCounters {
                    transport: i,
                    fields_printed: printed.len(),
                    idle_time_s,
                    fields,
                    printed,
                });
            }
            let ops = m
                .ops
                .iter()
                .map(|o| (o, self.op_counters(m, o, n)))
                // Updated all the same, so an operation first used later
                // has its growth from the first sample.
                .filter(|(o, _)| o.ops > 0 || o.ntrans > 0)
                .map(|(_, c)| c)
                .collect();
            out.push(MountCounters {
                mount: m.mountpoint.clone(),
                export: m.device.clone(),
                transports,
                ops,
            });
        }
        out
    }

    fn op_counters(&mut self, m: &Mount, o: &OpStats, n: u64) -> OpCounters {
        let mut track = |what: &str, v: u64| {
            let key = format!("{}\0{}\0op\0{}\0{what}", m.device, m.mountpoint, o.name);
            self.mounts.update(key, v, n)
        };
        OpCounters {
            op: o.name.clone(),
            ops: track("ops", o.ops),
            ntrans: track("ntrans", o.ntrans),
            timeouts: track("timeouts", o.timeouts),
            bytes_sent: track("bytes_sent", o.bytes_sent),
            bytes_recv: track("bytes_recv", o.bytes_recv),
            queue_ms: track("queue_ms", o.queue_ms),
            rtt_ms: track("rtt_ms", o.rtt_ms),
            execute_ms: track("execute_ms", o.execute_ms),
            errors: o.errors.map(|e| track("errors", e)),
        }
    }

    /// Keeps the samples a window `width_ns` wide needs for
    /// [`CounterSampler::kernel_view_since`].
    #[must_use]
    pub fn keeping(mut self, width_ns: u64) -> Self {
        self.keep_ns = width_ns;
        self
    }

    fn remember(&mut self, at_ns: u64, all: &[Mount]) {
        if self.keep_ns == 0 {
            return;
        }
        let spacing = self.keep_ns / HISTORY_SPACING;
        if self
            .history
            .back()
            .is_some_and(|(t, _)| at_ns < t.saturating_add(spacing))
        {
            return;
        }
        // Only what a kernel view reads: a host's other mounts would
        // multiply a large mountstats by the samples kept.
        let rdma = all.iter().filter(|m| m.is_rdma()).cloned().collect();
        self.history.push_back((at_ns, rdma));
        // The oldest is dropped once the next one alone reaches back a
        // whole width: a window's start always has a sample at or before it.
        let from = at_ns.saturating_sub(self.keep_ns);
        while self.history.get(1).is_some_and(|(t, _)| *t <= from) {
            self.history.pop_front();
        }
    }

    /// The kernel view since `from_ns` (a window's start, ns since the
    /// epoch): the latest sample less the last one taken at or before
    /// `from_ns`, or the first kept when none was (the sampler started
    /// inside the window). `None` before any mountstats was read.
    pub fn kernel_view_since(&self, from_ns: u64) -> Option<KernelView> {
        let latest = self.latest.as_ref()?;
        let before = self
            .history
            .iter()
            .rev()
            .find(|(t, _)| *t <= from_ns)
            .or_else(|| self.history.front())
            .map(|(_, m)| m)
            .or(self.first.as_ref())?;
        Some(kernel_view(latest, before))
    }

    /// The kernel view since the first readable sample (as
    /// `report --mountstats-before FIRST --mountstats LATEST`); `None`
    /// before any mountstats was read.
    pub fn kernel_view(&self) -> Option<KernelView> {
        let (first, latest) = (self.first.as_ref()?, self.latest.as_ref()?);
        Some(kernel_view(latest, first))
    }
}
