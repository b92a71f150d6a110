//! `live`'s counter sampler: reads the NFS client's `/proc/self/mountstats`
//! and the RDMA devices' sysfs counters on a timer, on a thread of its own
//! (the reads never wait in the capture's loop), bounded; the records and
//! deltas are the output layer's (`output::live_counters`). The latest
//! reading is what the metrics serve: a scrape reads no file.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::counters::CounterReading;
use crate::engine::device_counters::DeviceCounter;

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

/// Reads both sources now (`at_ns`: the wall clock).
pub fn read(paths: &CounterPaths, at_ns: u64) -> CounterReading {
    let (mountstats, cut_at) = match read_bounded(&paths.mountstats) {
        Ok((text, cut)) => (Ok(text), cut.then_some(MAX_MOUNTSTATS_BYTES)),
        Err(e) => (Err(e.to_string()), None),
    };
    CounterReading {
        at_ns,
        mountstats_path: paths.mountstats.display().to_string(),
        mountstats,
        cut_at,
        devices: super::sys::device_counters_in(&paths.sysfs_root),
    }
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
) -> std::io::Result<std::sync::mpsc::Receiver<CounterReading>> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("live-counters".into())
        .spawn(move || {
            // Short naps: a stop is seen within 200 ms whatever the interval.
            let nap = interval.min(std::time::Duration::from_millis(200));
            while !stop.requested() {
                let r = read(&paths, now_ns());
                publish(&r);
                let next = std::time::Instant::now() + interval;
                if tx.send(r).is_err() {
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

fn publish(r: &CounterReading) {
    *published() = Some((r.mountstats.clone().ok(), r.devices.clone()));
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

/// Whether this host has RDMA devices and every one is an RNIC (sysfs
/// `node_type` 4: iWARP, as siw, cxgb4 or irdma in iWARP mode): what names
/// the CM's messages in `live`'s words when no frame says the fabric.
pub fn devices_all_iwarp() -> bool {
    let Ok(devices) = std::fs::read_dir("/sys/class/infiniband") else {
        return false;
    };
    let mut types = devices
        .flatten()
        .map(|d| std::fs::read_to_string(d.path().join("node_type")).unwrap_or_default())
        .peekable();
    types.peek().is_some() && types.all(|t| t.trim_start().starts_with('4'))
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
