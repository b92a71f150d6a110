//! `live`'s counter sampler feeding its diagnosis: a capture's findings go
//! through the live sink while the sampler reads a mountstats that changes
//! between samples (the lab's own `xprt: rdma` line for the window), and
//! the causes only the kernel sees are named as `report --mountstats`
//! names them.

use std::path::{Path, PathBuf};
use std::time::Duration;

#[path = "common/analyze.rs"]
mod analyze;

use rdma_analyzer::engine::{Config, Finding};
use rdma_analyzer::output::live::LiveSink;
use rdma_analyzer::pipeline::{Flow, Progress, Sink, Stop};
use rdma_analyzer::sources::counters::{spawn, CounterPaths};

fn capture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../captures")
        .join(name)
}

/// A mountstats of the lab's one mount whose transport is `xprt`.
fn mountstats(xprt: &str) -> String {
    format!(
        "device 10.99.0.1:/srv/export mounted on /mnt/lab with fstype nfs statvers=1.1\n\topts:\trw,vers=3,proto=rdma\n\txprt:\t{xprt}\n"
    )
}

/// The scenario's `xprt: rdma` line at the end of its run.
fn lab_xprt(scenario: &str) -> String {
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(capture(&format!("{scenario}.json"))).unwrap(),
    )
    .unwrap();
    json["xprt_rdma_mountstats"][0]
        .as_str()
        .unwrap()
        .to_string()
}

/// The same line with every count zero: the transport before the window.
fn zeroed(xprt: &str) -> String {
    let n = xprt.split_whitespace().count() - 1;
    format!("rdma{}", " 0".repeat(n))
}

fn findings(scenario: &str) -> (Vec<Finding>, rdma_analyzer::engine::Engine) {
    let mut all = Vec::new();
    let run = analyze::run_file(
        &capture(&format!("{scenario}.pcap")),
        Config::default(),
        |f| {
            all.push(f);
        },
    )
    .expect("reading the capture");
    (all, run.engine)
}

/// Runs the scenario's findings through a live sink whose sampler reads
/// `before` first and `after` from then on.
fn live_diagnosis(dir: &Path, scenario: &str, before: &str, after: &str) -> String {
    let ms = dir.join("mountstats");
    std::fs::write(&ms, mountstats(before)).unwrap();
    let stop = Stop::new();
    let rx = spawn(
        CounterPaths {
            mountstats: ms.clone(),
            sysfs_root: dir.join("no-sysfs"),
        },
        Duration::from_millis(100),
        stop.clone(),
    )
    .unwrap();
    let mut sink = LiveSink::<Vec<u8>>::counting().with_counters(rx);
    let progress = Progress::default();
    // The first sample (BEFORE) is taken at once; the file then changes.
    while sink.counter_samples == 0 {
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(sink.tick(None, &progress), Flow::Continue);
    }
    let (all, engine) = findings(scenario);
    for f in all {
        assert_eq!(sink.finding(f), Flow::Continue);
    }
    std::fs::write(&ms, mountstats(after)).unwrap();
    let taken = sink.counter_samples;
    while sink.counter_samples < taken + 2 {
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(sink.tick(None, &progress), Flow::Continue);
    }
    stop.request();
    sink.diagnosis_text(engine.state())
}

#[test]
fn the_live_diagnosis_names_no_remote_invalidation_from_the_sampled_counters() {
    let dir = tempfile::tempdir().unwrap();
    // v3-ddp: a 256 KiB rsize gives each READ two R_keys; the server
    // invalidates none and the client all 52 segments itself.
    let after = lab_xprt("v3-ddp");
    let text = live_diagnosis(dir.path(), "v3-ddp", &zeroed(&after), &after);
    assert!(text.contains("no_remote_invalidation"), "{text}");
    assert!(text.contains("52 of 52 chunk segments"), "{text}");
    assert!(
        text.contains("counters over the window (AFTER less BEFORE)"),
        "{text}"
    );
}

#[test]
fn remote_invalidation_is_not_named_and_without_counters_the_causes_are_not_checked() {
    let dir = tempfile::tempdir().unwrap();
    let after = lab_xprt("v42-reminv");
    let text = live_diagnosis(dir.path(), "v42-reminv", &zeroed(&after), &after);
    assert!(!text.contains("no_remote_invalidation"), "{text}");
    assert!(text.contains("kernel view: 1 RDMA transport(s)"), "{text}");

    // No sampler: as `report` without --mountstats.
    let mut sink = LiveSink::<Vec<u8>>::counting();
    let (all, engine) = findings("v3-ddp");
    for f in all {
        assert_eq!(sink.finding(f), Flow::Continue);
    }
    let text = sink.diagnosis_text(engine.state());
    assert!(
        text.contains("no_remote_invalidation, mr_exhaustion not checked"),
        "{text}"
    );
}
