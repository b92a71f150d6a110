//! The calls into the C library (and the few /proc files) live mode and
//! the metrics need: signals, `poll`, resource usage, capabilities, the
//! host's name. The unsafe blocks of the sources'
//! plumbing live here, each with the reason it is sound.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, OnceLock};

use crate::pipeline::Stop;

/// The flag the signal handler sets: the [`Stop`] of the run that asked.
static SIGNAL_STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// The last signal the handler took (0: none).
static SIGNAL_SEEN: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    // An atomic load of an initialised OnceLock and atomic stores: all
    // async-signal-safe.
    SIGNAL_SEEN.store(sig, Ordering::SeqCst);
    if let Some(flag) = SIGNAL_STOP.get() {
        flag.store(true, Ordering::SeqCst);
    }
}

/// Makes SIGINT and SIGTERM (and SIGHUP when `hangup`) set `stop` instead of
/// killing the process, so a live run detaches its probes and writes its
/// output. `live`'s screen leaves SIGHUP alone: when its terminal goes
/// away the process must die, not spin on a dead tty (the kernel closes the
/// probes' links with the process's descriptors). `open` takes SIGHUP too:
/// its screen looks at the flag at least every 200 ms, restores the
/// terminal and then dies of the signal ([`die_of`]).
///
/// Only the first run of a process gets the signals.
pub fn stop_on_signals(stop: &Stop, hangup: bool) {
    if SIGNAL_STOP.set(stop.flag()).is_err() {
        return;
    }
    let sigs: &[libc::c_int] = if hangup {
        &[libc::SIGINT, libc::SIGTERM, libc::SIGHUP]
    } else {
        &[libc::SIGINT, libc::SIGTERM]
    };
    for &sig in sigs {
        // SAFETY: a zeroed sigaction with a handler that only touches
        // atomics is a valid disposition; the pointers are ours.
        #[allow(unsafe_code)]
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// The flag SIGUSR1 sets: the flight recorder's trigger.
static SIGNAL_RECORD: OnceLock<Arc<AtomicBool>> = OnceLock::new();

extern "C" fn on_record_signal(_: libc::c_int) {
    // An atomic load of an initialised OnceLock and an atomic store: both
    // async-signal-safe.
    if let Some(flag) = SIGNAL_RECORD.get() {
        flag.store(true, Ordering::SeqCst);
    }
}

/// Makes SIGUSR1 set `flag` (`live --record`: write a dump now) instead of
/// killing the process. Only the first caller of a process gets it.
pub fn record_on_sigusr1(flag: Arc<AtomicBool>) {
    if SIGNAL_RECORD.set(flag).is_err() {
        return;
    }
    // SAFETY: as in `stop_on_signals`: a zeroed sigaction whose handler
    // only touches atomics; SA_RESTART so a read the signal interrupts is
    // not failed with EINTR.
    #[allow(unsafe_code)]
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_record_signal as *const () as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut());
    }
}

/// The signal that stopped the run, if one did.
pub fn signal_seen() -> Option<i32> {
    Some(SIGNAL_SEEN.load(Ordering::SeqCst)).filter(|&s| s != 0)
}

/// Dies of `sig` as if it had not been caught, once the run has cleaned
/// up (the terminal restored): whoever sent it sees the status it expects
/// (a shell's 128 + signal, systemd's "killed by SIGTERM"), not a clean exit.
pub fn die_of(sig: i32) -> ! {
    // SAFETY: restoring the default disposition and raising a signal are
    // plain libc calls with no pointers of ours.
    #[allow(unsafe_code)]
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
    // Not reached for a signal whose default is to terminate.
    std::process::exit(128 + sig)
}

/// Waits until `fd` is readable or `timeout_ms` passes.
pub fn poll_readable(fd: RawFd, timeout_ms: i32) {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd that lives across the call.
    #[allow(unsafe_code)]
    unsafe {
        libc::poll(&mut p, 1, timeout_ms);
    }
}

/// Waits until one of `fds` is readable or `timeout_ms` passes (with no
/// descriptor: sleeps `timeout_ms`).
pub fn poll_any(fds: &[RawFd], timeout_ms: i32) {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: `p.len()` valid pollfds that live across the call.
    #[allow(unsafe_code)]
    unsafe {
        libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, timeout_ms);
    }
}

/// An eventfd: one thread signals, another polls it with [`poll_any`]
/// among other descriptors.
pub struct Wakeup(OwnedFd);

impl Wakeup {
    /// A new, unsignalled eventfd (non-blocking).
    ///
    /// # Errors
    /// When the kernel refuses one (out of descriptors).
    pub fn new() -> std::io::Result<Wakeup> {
        // SAFETY: a plain system call; the descriptor is owned from here on.
        #[allow(unsafe_code)]
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` is a new descriptor nothing else owns.
        #[allow(unsafe_code)]
        Ok(Wakeup(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Makes the descriptor readable.
    pub fn signal(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: writes 8 bytes from a buffer that lives across the call.
        #[allow(unsafe_code)]
        unsafe {
            libc::write(self.0.as_raw_fd(), one.as_ptr().cast(), one.len());
        }
    }

    /// Makes the descriptor unreadable again (signals since are lost, so
    /// read what they announced after this).
    pub fn clear(&self) {
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a buffer we own; EAGAIN when
        // unsignalled is fine.
        #[allow(unsafe_code)]
        unsafe {
            libc::read(self.0.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len());
        }
    }

    /// The descriptor, for [`poll_any`].
    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// CPU seconds this process used (user + system).
pub fn cpu_seconds() -> f64 {
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

/// Most device counters read at once (a host with many RNICs and ports
/// has hundreds; this bounds a scrape whatever sysfs holds).
pub const MAX_DEVICE_COUNTERS: usize = 4096;

/// This host's RDMA devices' counters, from sysfs.
pub fn device_counters() -> Vec<rdma_engine::device_counters::DeviceCounter> {
    device_counters_in(std::path::Path::new("/sys/class/infiniband"))
}

/// The counters under `root` laid out as /sys/class/infiniband is
/// (`DEV/ports/N/{hw_counters,counters}/NAME`); unreadable files are left out.
pub fn device_counters_in(
    root: &std::path::Path,
) -> Vec<rdma_engine::device_counters::DeviceCounter> {
    use rdma_engine::device_counters::DeviceCounter;
    let mut out = Vec::new();
    let dirs = |p: &std::path::Path| -> Vec<std::fs::DirEntry> {
        let mut v: Vec<_> = std::fs::read_dir(p)
            .into_iter()
            .flatten()
            .flatten()
            .collect();
        v.sort_by_key(std::fs::DirEntry::file_name);
        v
    };
    for dev in dirs(root) {
        for port in dirs(&dev.path().join("ports")) {
            let Ok(n) = port.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            for group in ["hw_counters", "counters"] {
                for f in dirs(&port.path().join(group)) {
                    if out.len() >= MAX_DEVICE_COUNTERS {
                        return out;
                    }
                    let Some(value) = std::fs::read_to_string(f.path())
                        .ok()
                        .and_then(|v| v.trim().parse().ok())
                    else {
                        continue;
                    };
                    out.push(DeviceCounter {
                        device: dev.file_name().to_string_lossy().into_owned(),
                        port: n,
                        group: group.to_string(),
                        name: f.file_name().to_string_lossy().into_owned(),
                        value,
                    });
                }
            }
        }
    }
    out
}

/// How old a counters read a scrape may be served. A scrape is a request
/// anyone who reaches the metrics port can repeat at any rate; without a
/// floor each one would read all of mountstats and walk sysfs. 5 s is
/// below any Prometheus scrape interval worth having.
pub const COUNTERS_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(5);

/// The last read of something costly, served again while it is younger
/// than a maximum age.
#[derive(Debug, Default)]
pub struct Cached<T>(std::sync::Mutex<Option<(std::time::Instant, T)>>);

impl<T: Clone> Cached<T> {
    /// An empty cache (const: it lives in a static).
    pub const fn new() -> Self {
        Cached(std::sync::Mutex::new(None))
    }

    /// The value read at most `max_age` before `now`, or `read()`'s.
    pub fn get_at(
        &self,
        now: std::time::Instant,
        max_age: std::time::Duration,
        read: impl FnOnce() -> T,
    ) -> T {
        // A poisoned lock only means a reader panicked: the value is whole.
        let mut slot = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((at, v)) = slot.as_ref() {
            if now.saturating_duration_since(*at) < max_age {
                return v.clone();
            }
        }
        let v = read();
        *slot = Some((now, v.clone()));
        v
    }
}

/// [`mountstats`], read at most once per [`COUNTERS_MAX_AGE`] whatever the
/// scrape rate (`live --metrics`).
pub fn mountstats_cached() -> Option<String> {
    static LAST: Cached<Option<String>> = Cached::new();
    LAST.get_at(std::time::Instant::now(), COUNTERS_MAX_AGE, mountstats)
}

/// [`device_counters`], read at most once per [`COUNTERS_MAX_AGE`].
pub fn device_counters_cached() -> Vec<rdma_engine::device_counters::DeviceCounter> {
    static LAST: Cached<Vec<rdma_engine::device_counters::DeviceCounter>> = Cached::new();
    LAST.get_at(std::time::Instant::now(), COUNTERS_MAX_AGE, device_counters)
}

/// This host's /proc/self/mountstats (its NFS mounts' counters), bounded:
/// a host with thousands of mounts gives at most the first 4 MiB.
pub fn mountstats() -> Option<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open("/proc/self/mountstats")
        .ok()?
        .take(4 << 20)
        .read_to_string(&mut text)
        .ok()?;
    if text.len() == 4 << 20 {
        // Cut at the last whole line: a half line would not parse.
        text.truncate(text.rfind('\n').map_or(0, |i| i + 1));
    }
    Some(text)
}

/// Resident memory of this process, bytes (`VmRSS` of /proc/self/status);
/// `None` where there is no such file.
pub fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse::<u64>()
        .ok()?;
    Some(kb * 1024)
}

/// This host's name (the kernel's, as `hostname` prints it); `None` when
/// it cannot be read or is empty.
pub fn hostname() -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let name = name.trim();
    (!name.is_empty()).then(|| name.to_string())
}

/// Linux capability numbers live mode asks about.
pub mod cap {
    /// Raw sockets (packet capture).
    pub const NET_RAW: u32 = 13;
    /// The old catch-all (BPF and perf before 5.8).
    pub const SYS_ADMIN: u32 = 21;
    /// perf events.
    pub const PERFMON: u32 = 38;
    /// BPF programs and maps.
    pub const BPF: u32 = 39;
}

/// Whether this process has capability `c` in its effective set.
pub fn has_cap(c: u32) -> bool {
    let eff = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .unwrap_or(0);
    eff & (1u64 << c) != 0
}

/// Mounts tracefs on `/sys/kernel/tracing` (hosts that boot without it).
///
/// # Errors
/// The kernel's refusal (no CAP_SYS_ADMIN, no tracefs in the kernel).
pub fn mount_tracefs() -> std::io::Result<()> {
    let target = c"/sys/kernel/tracing";
    let fstype = c"tracefs";
    let source = c"nodev";
    // SAFETY: NUL-terminated strings that outlive the call, no data.
    #[allow(unsafe_code)]
    let r = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod cache_tests {
    use super::*;
    use std::cell::Cell;
    use std::time::{Duration, Instant};

    #[test]
    fn a_cached_read_is_served_until_it_is_older_than_its_age() {
        let cache: Cached<u32> = Cached::new();
        let reads = Cell::new(0);
        let read = || {
            reads.set(reads.get() + 1);
            reads.get()
        };
        let t0 = Instant::now();
        let age = Duration::from_secs(5);
        assert_eq!(cache.get_at(t0, age, read), 1);
        // A thousand scrapes inside the age: no read.
        for ms in 0..1000 {
            let v = cache.get_at(t0 + Duration::from_millis(ms * 4), age, || {
                reads.set(reads.get() + 1);
                reads.get()
            });
            assert_eq!(v, 1);
        }
        assert_eq!(reads.get(), 1);
        assert_eq!(
            cache.get_at(t0 + age, age, read),
            2,
            "read again once stale"
        );
        assert_eq!(reads.get(), 2);
    }
}
