//! `rategen`: replays the RoCEv2 frames of a pcap onto an interface, paced
//! or flat out, from several threads, to measure `rdma-analyzer live -i`
//! at rate (`scripts/bench-capture.sh`, `scripts/soak.sh`).
//!
//! Each thread owns the frames of some host pairs (their order kept) and
//! an AF_PACKET socket that bypasses the qdisc; it sends `--batch` frames
//! per `sendmmsg`. Paced, thread `i` of `n` sends its batch `k` at
//! `start + k * batch * n / rate` (deadlines from the start, so a late
//! wakeup is made up at once and the mean rate is exact). The capture is
//! looped until `--duration` or `--count`; `--vary` rewrites the IPv4
//! addresses on every pass (checksums and ICRC computed again) so that a
//! pass is new connections, not retransmissions of the last.
//!
//! Prints one JSON object at the end: frames, bytes, seconds, frames/s,
//! CPU seconds while sending (the kernel's work on the frames it sends
//! included), send errors, passes (and getppid calls with `--syscall-rate`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;

mod frames;
mod tx;

/// Replays the RoCEv2 frames of a pcap onto an interface, paced or flat out.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Interface to send on (e.g. the namespace's end of a veth pair).
    #[arg(short, long)]
    iface: String,
    /// Classic pcap with an Ethernet link (pcapng: `editcap -F pcap`).
    #[arg(short, long)]
    pcap: PathBuf,
    /// Frames per second, all threads together; 0 sends flat out.
    #[arg(short, long, default_value_t = 0)]
    rate: u64,
    /// Sender threads (host pairs are dealt out to them).
    #[arg(short, long, default_value_t = 1)]
    threads: usize,
    /// Frames per sendmmsg.
    #[arg(short, long, default_value_t = 32)]
    batch: usize,
    /// Stop after this many seconds (the capture is looped).
    #[arg(short, long)]
    duration: Option<f64>,
    /// Stop after this many frames (all threads; the capture is looped).
    /// Without --duration and --count: one pass.
    #[arg(short, long)]
    count: Option<u64>,
    /// Rewrite the IPv4 addresses on every pass (new connections each pass).
    #[arg(long)]
    vary: bool,
    /// Send every frame, not only RoCEv2 (UDP port 4791) ones.
    #[arg(long)]
    all: bool,
    /// Also call getppid() this many times per second (a steady event for
    /// `live --probes --tracepoint syscalls:sys_enter_getppid`).
    #[arg(long, default_value_t = 0)]
    syscall_rate: u64,
    /// Print frames sent per second every second on stderr.
    #[arg(long)]
    progress: bool,
}

/// Sleeps until `t` (no-op when it has passed).
fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}

/// What every thread of a run shares.
struct Run<'a> {
    args: &'a Args,
    start: Instant,
    stop: &'a AtomicBool,
    counters: &'a Counters,
}

#[derive(Default)]
struct Counters {
    frames: AtomicU64,
    bytes: AtomicU64,
    errors: AtomicU64,
    passes: AtomicU64,
}

/// What one sender thread does: its frames, paced to `rate` (0: flat out),
/// until `stop` or its share of `count` frames.
fn sender(mut f: frames::Frames, tx: &tx::Tx, rate: f64, limit: Option<u64>, run: &Run<'_>) {
    let (a, start, stop, c) = (run.args, run.start, run.stop, run.counters);
    tx::set_timer_slack(1_000);
    let one_pass = a.duration.is_none() && a.count.is_none();
    let (mut i, mut pass, mut sent) = (0usize, 0u64, 0u64);
    let mut batch: Vec<(usize, usize)> = Vec::with_capacity(a.batch);
    while !stop.load(Ordering::Relaxed) {
        batch.clear();
        while batch.len() < a.batch {
            if limit.is_some_and(|l| sent + batch.len() as u64 >= l) {
                break;
            }
            if i == f.len() {
                if one_pass {
                    break;
                }
                i = 0;
                if a.vary {
                    f.repass(pass, pass + 1);
                }
                pass += 1;
                c.passes.fetch_max(pass, Ordering::Relaxed);
            }
            batch.push(f.ranges[i]);
            i += 1;
        }
        if batch.is_empty() {
            break;
        }
        if rate > 0.0 {
            sleep_until(start + Duration::from_secs_f64(sent as f64 / rate));
        }
        let slices: Vec<&[u8]> = batch.iter().map(|&(o, l)| &f.data[o..o + l]).collect();
        let (n, err) = tx.send(&slices);
        if let Some(e) = err {
            // ENOBUFS and the like: count the batch's rest as not sent and go on.
            if c.errors.fetch_add(1, Ordering::Relaxed) == 0 {
                eprintln!("rategen: sendmmsg: {e}");
            }
        }
        sent += n as u64;
        c.frames.fetch_add(n as u64, Ordering::Relaxed);
        let bytes: usize = slices[..n].iter().map(|s| s.len()).sum();
        c.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
        if n < slices.len() {
            // The frames not taken are skipped: pacing stays on time.
            sent += (slices.len() - n) as u64;
        }
    }
}

/// Calls getppid() `rate` times a second in slices of 1 ms until `stop`.
fn syscalls(rate: u64, start: Instant, stop: &AtomicBool, calls: &AtomicU64) {
    tx::set_timer_slack(1_000);
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let due = (start.elapsed().as_secs_f64() * rate as f64) as u64;
        while n < due {
            tx::getppid();
            n += 1;
        }
        calls.store(n, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    anyhow::ensure!(
        a.threads >= 1 && a.batch >= 1,
        "--threads and --batch must be at least 1"
    );
    let groups = frames::load(&a.pcap, a.threads, a.all)?;
    let loaded: usize = groups.iter().map(frames::Frames::len).sum();
    let groups: Vec<frames::Frames> = groups.into_iter().filter(|g| !g.is_empty()).collect();
    if groups.len() < a.threads {
        eprintln!(
            "rategen: {} host pairs in {}: {} sender threads",
            groups.len(),
            a.pcap.display(),
            groups.len()
        );
    }
    let ifindex = tx::ifindex(&a.iface)?;
    let sockets: Vec<tx::Tx> = (0..groups.len())
        .map(|_| tx::Tx::open(ifindex))
        .collect::<Result<_, _>>()
        .with_context(|| format!("opening AF_PACKET on {} (root or CAP_NET_RAW)", a.iface))?;
    let n = groups.len();
    // Each thread's share of the rate and the count, by its share of frames.
    let share = |g: &frames::Frames| g.len() as f64 / loaded as f64;
    let stop = AtomicBool::new(false);
    let counters = Counters::default();
    let calls = AtomicU64::new(0);
    eprintln!(
        "rategen: {loaded} frames loaded, {n} senders: sending on {}",
        a.iface
    );
    let cpu0 = tx::cpu_seconds();
    let start = Instant::now();
    let run = Run {
        args: &a,
        start,
        stop: &stop,
        counters: &counters,
    };
    let secs = std::thread::scope(|s| {
        let mut senders = Vec::new();
        for (g, sock) in groups.into_iter().zip(&sockets) {
            let rate = a.rate as f64 * share(&g);
            let limit = a.count.map(|c| (c as f64 * share(&g)).round() as u64);
            let run = &run;
            senders.push(s.spawn(move || sender(g, sock, rate, limit, run)));
        }
        if a.syscall_rate > 0 {
            let (stop, calls) = (&stop, &calls);
            s.spawn(move || syscalls(a.syscall_rate, start, stop, calls));
        }
        let end = a.duration.map(|d| start + Duration::from_secs_f64(d));
        let mut last = (Instant::now(), 0u64);
        loop {
            std::thread::sleep(Duration::from_millis(100));
            if senders.iter().all(|h| h.is_finished()) || end.is_some_and(|e| Instant::now() >= e) {
                break;
            }
            if a.progress && last.0.elapsed() >= Duration::from_secs(1) {
                let f = counters.frames.load(Ordering::Relaxed);
                eprintln!(
                    "rategen: {:.0} frames/s",
                    (f - last.1) as f64 / last.0.elapsed().as_secs_f64()
                );
                last = (Instant::now(), f);
            }
        }
        let secs = start.elapsed().as_secs_f64();
        stop.store(true, Ordering::Relaxed);
        secs
    });
    let cpu = tx::cpu_seconds() - cpu0;
    let frames = counters.frames.load(Ordering::Relaxed);
    println!(
        "{{\"frames\":{frames},\"bytes\":{},\"seconds\":{secs:.3},\"frames_per_second\":{:.0},\"cpu_seconds\":{cpu:.3},\"send_errors\":{},\"passes\":{},\"threads\":{n},\"rate\":{},\"syscalls\":{}}}",
        counters.bytes.load(Ordering::Relaxed),
        frames as f64 / secs,
        counters.errors.load(Ordering::Relaxed),
        counters.passes.load(Ordering::Relaxed) + 1,
        a.rate,
        calls.load(Ordering::Relaxed),
    );
    Ok(())
}
