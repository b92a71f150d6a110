//! `live` under a frame flood faster than its engine: the inputs take
//! turns, so its periodic output (here the JSON Lines `counters` records,
//! asked for every 0.5 s) keeps coming while the frames do.
//!
//! Before the inputs had a time budget each, the capture's batches were
//! taken for as long as another one waited: in the lab's siw run (a debug
//! build in a TCG guest) the probe records waited in their ring for the
//! whole 96-writer burst, and here the output stood still until the flood
//! ended. Needs root (a veth pair, a capture).

use std::ffi::OsStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::sleep;
use std::time::{Duration, Instant};

#[path = "common/live_veth.rs"]
mod live_veth;
#[path = "common/prereq.rs"]
mod prereq;

use live_veth::{capture, flood, spawn_live, stop_live, Veth};

const FLOOD: Duration = Duration::from_secs(8);

#[test]
fn periodic_output_keeps_coming_through_a_frame_flood() {
    if !prereq::require(
        "root",
        prereq::is_root(),
        "run as root: a veth pair and a capture",
    ) {
        return;
    }
    let veth = Veth::new("lfl");
    let dir = tempfile::tempdir().expect("tempdir");
    let (json, err) = (dir.path().join("live.jsonl"), dir.path().join("stderr"));
    let args = [
        "live",
        "-i",
        &veth.0,
        "--no-tui",
        "--counters-interval",
        "0.5",
    ];
    let mut args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    args.extend([OsStr::new("--json-out"), json.as_os_str()]);
    let child = spawn_live(&args, &err);
    let counters = || {
        std::fs::read_to_string(&json)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(r#""type":"counters""#))
            .count()
    };
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    // Two senders: one alone on this 2-core machine is slower than the
    // debug engine on some captures.
    let senders: Vec<_> = (0..2)
        .map(|_| {
            let (peer, stop, sent) = (veth.peer(), stop.clone(), sent.clone());
            let pcap = capture("v42-ddp.pcap");
            std::thread::spawn(move || flood(peer, pcap, stop, sent))
        })
        .collect();
    // When each new counters record reached the file, from the flood's start.
    let begin = Instant::now();
    let mut seen = counters();
    let mut arrivals = Vec::new();
    while begin.elapsed() < FLOOD {
        sleep(Duration::from_millis(50));
        let n = counters();
        if n > seen {
            arrivals.push(begin.elapsed());
            seen = n;
        }
    }
    stop.store(true, Ordering::Relaxed);
    for s in senders {
        s.join().expect("a sender");
    }
    let said = stop_live(child, &err);
    let frames = said
        .lines()
        .rev()
        .find(|l| l.contains(" frames ("))
        .unwrap_or("no summary line");
    eprintln!(
        "{} frames sent in {FLOOD:?}; live: {frames}; counters records reached the file at {arrivals:.1?}",
        sent.load(Ordering::Relaxed)
    );
    // The flood must have outrun the engine, or the budget was not tested.
    let dropped: u64 = frames
        .split(" frames (")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no drop count in {frames:?}"));
    assert!(
        dropped > 0,
        "the flood did not outrun the engine ({frames}): nothing here tested the budget"
    );
    // The first second is the flood's start; from then on a record every
    // 0.5 s, allowing 2 s for a slow tick under load.
    let mut last = Duration::from_secs(1);
    for &a in &arrivals {
        if a <= last {
            continue;
        }
        assert!(
            a - last <= Duration::from_secs(2),
            "no counters record between {last:.1?} and {a:.1?} of the flood: {arrivals:.1?}"
        );
        last = a;
    }
    assert!(
        FLOOD.saturating_sub(last) <= Duration::from_secs(2),
        "no counters record after {last:.1?} of the {FLOOD:?} flood: {arrivals:.1?}"
    );
}
