//! The pipeline's longest stall while the flight recorder writes a dump,
//! for `docs/recorder.md`: fills a ring of `--record-size` with frames,
//! fires a trigger, and times every `frame()` call the pipeline makes
//! around it (the call that hands the dump over is the one that stalled
//! when dumps were written on the pipeline's thread).
//!
//! ```text
//! recorder_stall [RING_MIB] [FRAME_BYTES]     # defaults: 64 MiB, 1024-byte frames
//! ```

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdma_analyzer::engine::Frame;
use rdma_analyzer::pipeline::{End, Progress, Sink};
use rdma_analyzer::recorder::{RecordConfig, Recorder, Trigger};
use rdma_dissectors::link::LinkType;

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a number"))
        .collect();
    let ring_mib = args.first().copied().unwrap_or(64);
    let frame_len = args.get(1).copied().unwrap_or(1024);
    let dir = std::env::temp_dir().join(format!("recorder-stall-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    let mut r = Recorder::new(
        RecordConfig {
            dir: dir.clone(),
            before_ns: 3_600_000_000_000,
            after_ns: 0,
            ring_bytes: ring_mib << 20,
            snaplen: None,
            triggers: vec![Trigger::Signal],
            keep: 2,
            max_total: None,
        },
        Arc::new(AtomicBool::new(false)),
    );
    let data = vec![0x5au8; frame_len];
    // Enough frames to fill the ring, then as many again after the trigger.
    let fill = (ring_mib << 20) / (frame_len + 64) + 1;
    let t0 = 1_700_000_000_000_000_000u64;
    let mut times = Vec::with_capacity(2 * fill);
    for i in 0..2 * fill as u64 {
        if i == fill as u64 {
            r.fire(&Trigger::Signal, t0 + i * 1000, "recorder_stall");
        }
        let f = Frame {
            number: i + 1,
            ts_ns: t0 + i * 1000 + 1,
            link: LinkType::ETHERNET,
            orig_len: frame_len as u32,
            data: &data,
            icrc: None,
        };
        let start = Instant::now();
        let _ = r.frame(&f);
        times.push(start.elapsed());
    }
    let end = Instant::now();
    r.end(None, &Progress::default(), &End::Stopped);
    let end_took = end.elapsed();
    let mut sorted = times.clone();
    sorted.sort();
    let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q) as usize];
    let (worst_at, worst) = times
        .iter()
        .enumerate()
        .max_by_key(|(_, d)| **d)
        .map_or((0, Duration::ZERO), |(i, d)| (i, *d));
    println!(
        "{} frames of {frame_len} bytes, ring {ring_mib} MiB (peak {} KiB), dumps {:?}, errors {:?}",
        times.len(),
        r.peak_bytes >> 10,
        r.written.len(),
        r.errors
    );
    println!(
        "frame(): p50 {:?}, p99 {:?}, max {worst:?} at frame {}; the frame after the trigger (hands the dump over) {:?}; end() (waits for the dump) {end_took:?}; not kept while writing {}",
        at(0.5),
        at(0.99),
        worst_at + 1,
        times[fill],
        r.lost_while_writing()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
