//! `live --record` for a long run: the real binary captures a veth pair
//! while a bundled capture is injected into its peer in a loop, with a
//! ring small enough (`--record-size 4M` of `--memory-limit 16M`) to wrap
//! hundreds of times and a
//! SIGUSR1 dump every 10 s (written by the writer thread while the capture
//! goes on). Resident memory, sampled every second from `/proc/PID/status`,
//! must stay flat after warm-up (a third of the run, at least 20 s: the
//! engine's tables fill to their share first): within 10% (at least
//! 4 MiB) of what it was when warm-up ended.
//!
//! 60 s here; `scripts/recorder-soak.sh` runs the same test for 10
//! minutes (`RDMA_RECORDER_SOAK_SECS=600`) and prints the RSS curve.
//! Needs root (a veth pair, a capture); skipped with a message otherwise.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::sleep;
use std::time::{Duration, Instant};

use rdma_analyzer::sources::pcap::PcapReader;

#[path = "common/prereq.rs"]
mod prereq;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

/// A veth pair, deleted when dropped.
struct Veth(String);

impl Veth {
    fn new() -> Veth {
        let a = format!("rsk{}", std::process::id() % 100_000);
        let b = format!("{a}p");
        let ip = |args: &[&str]| {
            let s = Command::new("ip").args(args).status().expect("running ip");
            assert!(s.success(), "ip {args:?} failed");
        };
        ip(&["link", "add", &a, "type", "veth", "peer", "name", &b]);
        ip(&["link", "set", &a, "up"]);
        ip(&["link", "set", &b, "up"]);
        Veth(a)
    }

    fn peer(&self) -> String {
        format!("{}p", self.0)
    }
}

impl Drop for Veth {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["link", "del", &self.0]).status();
    }
}

/// Sends `pcap`'s frames out of `iface` in a loop until `stop`; counts them.
fn inject_loop(iface: String, pcap: PathBuf, stop: Arc<AtomicBool>, sent: Arc<AtomicU64>) {
    let mut out = pcap::Capture::from_device(iface.as_str())
        .and_then(|c| c.open())
        .expect("opening the veth peer for injection");
    let mut frames = Vec::new();
    let mut r = PcapReader::open(&pcap).expect("capture");
    while let Some(p) = r.next_packet().expect("frame") {
        frames.push(p.data.to_vec());
    }
    while !stop.load(Ordering::Relaxed) {
        for (i, f) in frames.iter().enumerate() {
            // A dropped frame (the veth's queue full) is the capture's
            // business, not the test's.
            if out.sendpacket(f.as_slice()).is_ok() {
                sent.fetch_add(1, Ordering::Relaxed);
            }
            if i % 64 == 63 {
                sleep(Duration::from_millis(2));
            }
            if stop.load(Ordering::Relaxed) {
                return;
            }
        }
    }
}

/// VmRSS of `pid`, KiB.
fn rss_kib(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

fn dumps(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| {
        d.filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".pcapng"))
            .count()
    })
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

#[test]
fn memory_stays_flat_while_the_recorder_wraps_its_ring_and_writes_dumps() {
    if !prereq::require(
        "root",
        prereq::is_root(),
        "run as root: a veth pair and a capture",
    ) {
        return;
    }
    let secs: u64 = std::env::var("RDMA_RECORDER_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60)
        .max(20);
    // The engine's tables fill to their share of --memory-limit first.
    let warmup = (secs / 3).max(20);
    let veth = Veth::new();
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = dir.path().join("dumps");
    let err = dir.path().join("stderr");
    // RDMA_RECORDER_SOAK_BASELINE=1: the same run without the recorder,
    // to tell its memory from the engine's.
    let baseline = std::env::var_os("RDMA_RECORDER_SOAK_BASELINE").is_some_and(|v| v == "1");
    let mut cmd = Command::new(BIN);
    cmd.args(["live", "-i", &veth.0, "--no-tui", "--json-out", "/dev/null"])
        .args(["--memory-limit", "16M"]);
    if !baseline {
        cmd.args(["--record-size", "4M", "--record"])
            .arg(&rec)
            .args(["--record-before", "2s", "--record-after", "1s"])
            .args(["--record-keep", "3"]);
    }
    let mut child = cmd
        .args(["--duration", &(secs + 30).to_string()])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).expect("stderr file"))
        .spawn()
        .expect("starting live");
    let pid = child.id();
    let start = Instant::now();
    while !std::fs::read_to_string(&err)
        .unwrap_or_default()
        .contains("capturing on")
    {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "live never listened: {}",
            std::fs::read_to_string(&err).unwrap_or_default()
        );
        sleep(Duration::from_millis(100));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let injector = {
        let (peer, stop, sent) = (veth.peer(), stop.clone(), sent.clone());
        let pcap = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../captures/v42-ddp.pcap");
        std::thread::spawn(move || inject_loop(peer, pcap, stop, sent))
    };
    let begin = Instant::now();
    let mut curve: Vec<(u64, u64)> = Vec::new();
    for s in 1..=secs {
        let due = begin + Duration::from_secs(s);
        sleep(due.saturating_duration_since(Instant::now()));
        let rss = rss_kib(pid).unwrap_or_else(|| {
            panic!(
                "live ended early: {}",
                std::fs::read_to_string(&err).unwrap_or_default()
            )
        });
        curve.push((s, rss));
        if s % 10 == 0 && !baseline {
            #[allow(unsafe_code)]
            // SAFETY: kill(2) on the child we started; no memory is passed.
            unsafe {
                libc::kill(pid as i32, libc::SIGUSR1);
            }
        }
        if s % 5 == 0 || s == 1 {
            eprintln!(
                "t={s:>4} s  rss {:7.1} MiB  frames sent {}  dumps in DIR {}",
                mib(rss),
                sent.load(Ordering::Relaxed),
                dumps(&rec)
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    injector.join().expect("the injector");
    #[allow(unsafe_code)]
    // SAFETY: as above.
    unsafe {
        libc::kill(pid as i32, libc::SIGINT);
    }
    let status = child.wait().expect("live ends");
    let said = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(status.success(), "live failed: {said}");

    let at = |s: u64| curve.iter().find(|(t, _)| *t == s).map_or(0, |c| c.1);
    let (first, warm, end) = (at(1), at(warmup), at(secs));
    let max = curve.iter().map(|c| c.1).max().unwrap_or(0);
    let max_after = curve
        .iter()
        .filter(|(t, _)| *t >= warmup)
        .map(|c| c.1)
        .max()
        .unwrap_or(0);
    let tolerance = (warm / 10).max(4 * 1024);
    eprintln!(
        "RSS: start {:.1} MiB, after warm-up ({warmup} s) {:.1} MiB, end ({secs} s) {:.1} MiB, max {:.1} MiB (after warm-up {:.1} MiB; tolerance {:.1} MiB); {} frames sent",
        mib(first),
        mib(warm),
        mib(end),
        mib(max),
        mib(max_after),
        mib(tolerance),
        sent.load(Ordering::Relaxed)
    );
    for line in said
        .lines()
        .filter(|l| l.starts_with("live --record:"))
        .rev()
        .take(3)
    {
        eprintln!("{line}");
    }
    assert!(
        max_after <= warm + tolerance,
        "resident memory grew after warm-up: {:.1} MiB at {warmup} s, {:.1} MiB at most later",
        mib(warm),
        mib(max_after)
    );
    if baseline {
        return;
    }
    // The ring wrapped many times and dumps were written, retention held.
    assert!(
        sent.load(Ordering::Relaxed) > 100_000,
        "too little traffic to wrap the ring"
    );
    let written: usize = said
        .lines()
        .find_map(|l| {
            l.strip_prefix("live --record: ")?
                .split_once(" dumps written")?
                .0
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no summary line in:\n{said}"));
    assert!(
        written >= (secs / 10) as usize / 2,
        "{written} dumps written in {secs} s:\n{said}"
    );
    assert!(dumps(&rec) <= 3, "retention kept {} dumps", dumps(&rec));
}
