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

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::sleep;
use std::time::{Duration, Instant};

#[path = "common/live_veth.rs"]
mod live_veth;
#[path = "common/prereq.rs"]
mod prereq;

use live_veth::{capture, inject_loop, signal, start_live, stop_live, Veth};

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
    let veth = Veth::new("rsk");
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = dir.path().join("dumps");
    let err = dir.path().join("stderr");
    // RDMA_RECORDER_SOAK_BASELINE=1: the same run without the recorder,
    // to tell its memory from the engine's.
    let baseline = std::env::var_os("RDMA_RECORDER_SOAK_BASELINE").is_some_and(|v| v == "1");
    let mut args: Vec<std::ffi::OsString> = vec!["--memory-limit".into(), "16M".into()];
    if !baseline {
        args.extend(["--record-size".into(), "4M".into(), "--record".into()]);
        args.push(rec.clone().into_os_string());
        for a in ["--record-before", "2s", "--record-after", "1s"] {
            args.push(a.into());
        }
        args.extend(["--record-keep".into(), "3".into()]);
    }
    args.extend(["--duration".into(), (secs + 30).to_string().into()]);
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let child = start_live(&veth.0, &args, &err);
    let pid = child.id();
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let injector = {
        let (peer, stop, sent) = (veth.peer(), stop.clone(), sent.clone());
        let pcap = capture("v42-ddp.pcap");
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
            signal(&child, libc::SIGUSR1);
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
    let said = stop_live(child, &err);

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
