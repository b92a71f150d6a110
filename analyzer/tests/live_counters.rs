//! `live`'s counter sampler feeding its diagnosis: a capture's findings go
//! through the live sink while the sampler reads a mountstats that changes
//! between samples (the lab's own `xprt: rdma` line for the window), and
//! the causes only the kernel sees are named as `report --mountstats`
//! names them; and the sampler's deltas, resets, bad files and bounds.

use std::path::{Path, PathBuf};
use std::time::Duration;

#[path = "common/analyze.rs"]
mod analyze;

use rdma_analyzer::engine::{Config, Finding};
use rdma_analyzer::output::live::LiveSink;
use rdma_analyzer::output::live_counters::{CounterSampler, CounterValue, CountersLine};
use rdma_analyzer::pipeline::{Flow, Progress, Sink, Stop};
use rdma_analyzer::sources::counters::{
    read, served_device_counters, served_mountstats, spawn, CounterPaths, MAX_MOUNTSTATS_BYTES,
};

const LAB: &str = include_str!("../../captures/nconnect.mountstats.txt");

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

/// The lab's nconnect mountstats with every `xprt: rdma` field that is a
/// count raised by `add` (the 4 transports move together).
fn grown(add: u64) -> String {
    LAB.lines()
        .map(|l| match l.trim_start().strip_prefix("xprt:") {
            Some(rest) => {
                let mut w: Vec<String> = rest.split_whitespace().map(String::from).collect();
                // w[0] is "rdma", w[1] the port, w[2..] the counts.
                for v in w.iter_mut().skip(2) {
                    *v = (v.parse::<u64>().unwrap() + add).to_string();
                }
                format!("\txprt:\t{}", w.join(" "))
            }
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

fn set_counter(root: &Path, name: &str, v: u64) {
    let dir = root.join("rxe0/ports/1/hw_counters");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), format!("{v}\n")).unwrap();
}

/// Reads the files under `dir` into `s` at `at_ns`, as the sampler's
/// thread and the live sink do in turn.
struct Sampled {
    paths: CounterPaths,
    s: CounterSampler,
}

impl Sampled {
    fn sample(&mut self, at_ns: u64) -> CountersLine {
        self.s.sample(&read(&self.paths, at_ns))
    }

    fn kernel_view(&self) -> Option<rdma_analyzer::diagnosis::KernelView> {
        self.s.kernel_view()
    }
}

fn sampler(dir: &Path) -> Sampled {
    Sampled {
        paths: CounterPaths {
            mountstats: dir.join("mountstats"),
            sysfs_root: dir.join("sys"),
        },
        s: CounterSampler::default(),
    }
}

fn field(l: &CountersLine, t: usize, name: &str) -> CounterValue {
    l.mounts[0].transports[t].fields[name]
}

#[test]
fn deltas_follow_files_that_change_between_samples() {
    let d = tempfile::tempdir().unwrap();
    let ms = d.path().join("mountstats");
    std::fs::write(&ms, LAB).unwrap();
    set_counter(&d.path().join("sys"), "rcvd_seq_err", 5);
    let mut s = sampler(d.path());
    let first = s.sample(1_000_000_000);
    assert!(first.mountstats_readable, "{:?}", first.notes);
    assert_eq!(first.mounts.len(), 1);
    assert_eq!(first.mounts[0].transports.len(), 4, "nconnect=4");
    let sends = field(&first, 0, "sends");
    assert_eq!(
        (sends.total, sends.delta, sends.since_start),
        (59, None, Some(0))
    );
    assert_eq!(first.interval_s, None);
    assert_eq!(first.devices[0].value.total, 5);

    std::fs::write(&ms, grown(10)).unwrap();
    set_counter(&d.path().join("sys"), "rcvd_seq_err", 8);
    let second = s.sample(6_000_000_000);
    assert_eq!(second.interval_s, Some(5.0));
    let sends = field(&second, 2, "sends");
    assert_eq!(
        (sends.total, sends.delta, sends.since_start),
        (70, Some(10), Some(10))
    );
    assert!(!sends.reset);
    let dev = &second.devices[0];
    assert_eq!(
        (dev.name.as_str(), dev.value.delta),
        ("rcvd_seq_err", Some(3))
    );

    std::fs::write(&ms, grown(15)).unwrap();
    let third = s.sample(11_000_000_000);
    let sends = field(&third, 2, "sends");
    assert_eq!((sends.delta, sends.since_start), (Some(5), Some(15)));
    let v = s.kernel_view().unwrap();
    assert!(!v.since_mount, "the first sample is the BEFORE");
    assert_eq!(v.transports, 4);
    assert_eq!(v.local_inv_needed, Some(60), "15 more on each of 4");
}

#[test]
fn a_counter_that_goes_backwards_is_a_reset_not_a_huge_delta() {
    let d = tempfile::tempdir().unwrap();
    let ms = d.path().join("mountstats");
    std::fs::write(&ms, grown(100)).unwrap();
    set_counter(&d.path().join("sys"), "duplicate_request", 1000);
    let mut s = sampler(d.path());
    s.sample(0);
    std::fs::write(&ms, grown(120)).unwrap();
    s.sample(1);
    // A remount: the counters start again below where they were.
    std::fs::write(&ms, LAB).unwrap();
    set_counter(&d.path().join("sys"), "duplicate_request", 4);
    let l = s.sample(2);
    let sends = field(&l, 0, "sends");
    assert!(sends.reset);
    assert_eq!(sends.delta, None);
    // What it counted between the sample before and the reset is lost:
    // the growth since start is unknown, not 20 + 59 nor 20.
    assert_eq!((sends.since_start, sends.resets), (None, 1));
    let dev = &l.devices[0].value;
    assert!(dev.reset);
    assert_eq!((dev.delta, dev.since_start, dev.resets), (None, None, 1));
    std::fs::write(&ms, grown(1)).unwrap();
    let l = s.sample(3);
    let sends = field(&l, 0, "sends");
    assert_eq!((sends.delta, sends.reset), (Some(1), false));
    // Still unknown since start, and still said why.
    assert_eq!((sends.since_start, sends.resets), (None, 1));
    let v = s.kernel_view().unwrap();
    // The diagnosis, as `report --mountstats-before`, leaves a transport
    // that went backwards out and says so.
    assert_eq!((v.reset_transports, v.transports), (4, 0));
}

/// A 27-field `xprt: rdma` line with `sends` (6th field) and `recvs`
/// (7th) set, the other counts 1.
fn xprt_with(sends: u64, recvs: u64) -> String {
    let mut w = vec!["1".to_string(); 27];
    w[0] = "0".into();
    w[5] = sends.to_string();
    w[6] = recvs.to_string();
    format!("rdma {}", w.join(" "))
}

#[test]
fn a_reset_makes_only_that_fields_growth_since_start_unknown() {
    let d = tempfile::tempdir().unwrap();
    let ms = d.path().join("mountstats");
    let mut s = sampler(d.path());
    for (i, (sends, recvs)) in [(100, 100), (150, 140), (7, 180), (9, 200)]
        .iter()
        .enumerate()
    {
        std::fs::write(&ms, mountstats(&xprt_with(*sends, *recvs))).unwrap();
        let l = s.sample(i as u64);
        let (sends, recvs) = (field(&l, 0, "sends"), field(&l, 0, "recvs"));
        match i {
            1 => assert_eq!(sends.since_start, Some(50)),
            2 => {
                // sends went from 150 to 7: a reset, said as one.
                assert!(sends.reset, "{sends:?}");
                assert_eq!((sends.delta, sends.since_start), (None, None));
                // recvs did not: its growth is whole.
                assert!(!recvs.reset);
                assert_eq!((recvs.delta, recvs.since_start), (Some(40), Some(80)));
            }
            3 => {
                assert_eq!(
                    (sends.delta, sends.reset, sends.resets),
                    (Some(2), false, 1)
                );
                assert_eq!(sends.since_start, None, "unknown for the rest of the run");
                assert_eq!((recvs.since_start, recvs.resets), (Some(100), 0));
            }
            _ => {}
        }
    }
    // The JSON says null, not 0, and the reset count.
    std::fs::write(&ms, mountstats(&xprt_with(10, 210))).unwrap();
    let v = serde_json::to_value(s.sample(4)).unwrap();
    let f = &v["mounts"][0]["transports"][0]["fields"];
    assert!(f["sends"]["since_start"].is_null(), "{f}");
    assert_eq!(f["sends"]["resets"], 1);
    assert_eq!(f["recvs"]["since_start"], "110");
}

#[test]
fn a_missing_or_garbage_file_is_said_and_survived() {
    let d = tempfile::tempdir().unwrap();
    let ms = d.path().join("mountstats");
    let mut s = sampler(d.path());
    let l = s.sample(0);
    assert!(!l.mountstats_readable);
    assert!(l.mounts.is_empty() && l.devices.is_empty());
    assert!(l.notes[0].contains("cannot be read"), "{:?}", l.notes);
    assert!(l.notes[0].contains(&ms.display().to_string()));
    assert_eq!(s.kernel_view(), None, "unknown, not zeros");

    std::fs::write(
        &ms,
        "device x mounted on /m with fstype nfs\n\txprt:\trdma 1 2 x\n",
    )
    .unwrap();
    let l = s.sample(1);
    assert!(!l.mountstats_readable);
    assert!(l.notes[0].contains("not a mountstats"), "{:?}", l.notes);
    std::fs::write(&ms, [0xff_u8, 0xfe, 0x00]).unwrap();
    assert!(!s.sample(2).mountstats_readable);

    // Readable again: the first readable sample is the baseline.
    std::fs::write(&ms, LAB).unwrap();
    let l = s.sample(3);
    assert!(l.mountstats_readable && l.notes.is_empty(), "{:?}", l.notes);
    let v = s.kernel_view().unwrap();
    assert_eq!(v.local_inv_needed, Some(0));
}

#[test]
fn a_huge_file_is_read_up_to_the_bound() {
    let d = tempfile::tempdir().unwrap();
    let ms = d.path().join("mountstats");
    let mut text = String::new();
    while text.len() <= MAX_MOUNTSTATS_BYTES {
        text.push_str(LAB);
    }
    std::fs::write(&ms, &text).unwrap();
    let mut s = sampler(d.path());
    let l = s.sample(0);
    assert!(
        l.notes.iter().any(|n| n.contains("larger than 4 MiB")),
        "{:?}",
        l.notes
    );
    let r = read(&s.paths, 0);
    assert_eq!(r.cut_at, Some(MAX_MOUNTSTATS_BYTES));
    let text = r.mountstats.unwrap();
    assert!(text.len() <= MAX_MOUNTSTATS_BYTES && text.ends_with('\n'));
    assert!(l.mountstats_readable, "the whole mounts read are kept");
}

#[test]
fn the_record_is_a_tagged_json_line() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("mountstats"), LAB).unwrap();
    set_counter(&d.path().join("sys"), "rcvd_seq_err", 2);
    let mut s = sampler(d.path());
    s.sample(0);
    let v = serde_json::to_value(s.sample(5_000_000_000)).unwrap();
    assert_eq!(v["type"], "counters");
    assert_eq!(v["sample"], 1);
    assert_eq!(v["mountstats_readable"], true);
    assert_eq!(v["mounts"][0]["mount"], "/mnt/lab");
    assert_eq!(v["mounts"][0]["export"], "10.99.0.1:/srv/export");
    let sends = &v["mounts"][0]["transports"][1]["fields"]["sends"];
    assert_eq!(sends["total"], "53");
    assert_eq!(sends["delta"], "0");
    assert_eq!(sends["since_start"], "0");
    assert_eq!(sends["resets"], 0);
    assert_eq!(v["devices"][0]["device"], "rxe0");
    assert_eq!(v["devices"][0]["group"], "hw_counters");
    assert_eq!(v["devices"][0]["delta"], "0");
    assert!(v["mounts"][0]["transports"][0]["fields"]["port"].is_null());
}

#[test]
fn the_metrics_serve_the_running_samplers_latest_sample() {
    let d = tempfile::tempdir().unwrap();
    let ms = d.path().join("mountstats");
    std::fs::write(&ms, LAB).unwrap();
    set_counter(&d.path().join("sys"), "rcvd_seq_err", 7);
    let stop = Stop::new();
    let rx = spawn(
        CounterPaths {
            mountstats: ms.clone(),
            sysfs_root: d.path().join("sys"),
        },
        Duration::from_secs(60),
        stop.clone(),
    )
    .unwrap();
    rx.recv().unwrap();
    // The files change; a scrape still serves the sample, reading nothing.
    std::fs::write(&ms, grown(1)).unwrap();
    assert_eq!(served_mountstats().as_deref(), Some(LAB));
    let devs = served_device_counters();
    assert_eq!((devs[0].name.as_str(), devs[0].value), ("rcvd_seq_err", 7));
    stop.request();
}

/// A window's kernel view: the latest sample less the last one taken at or
/// before the window's start, so a diagnosis over the last minutes judges
/// the kernel's growth over those minutes, not since the run began.
#[test]
fn a_windows_kernel_view_starts_at_the_sample_before_it() {
    let d = tempfile::tempdir().unwrap();
    let ms = d.path().join("mountstats");
    let mut s = Sampled {
        paths: CounterPaths {
            mountstats: ms.clone(),
            sysfs_root: d.path().join("sys"),
        },
        s: CounterSampler::default().keeping(10_000_000_000),
    };
    // local_inv_needed (the 25th field) grows by 100 every 5 s.
    for i in 0..5u64 {
        let mut w = vec!["1".to_string(); 27];
        w[0] = "0".into();
        w[24] = (100 * i).to_string();
        std::fs::write(&ms, mountstats(&format!("rdma {}", w.join(" ")))).unwrap();
        s.sample(i * 5_000_000_000);
    }
    let since = |from_s: u64| {
        s.s.kernel_view_since(from_s * 1_000_000_000)
            .and_then(|v| v.local_inv_needed)
    };
    // Samples at 0, 5, 10, 15, 20 s; the latest reads 400.
    assert_eq!(since(12), Some(400 - 200), "from the sample at 10 s");
    assert_eq!(since(15), Some(400 - 300), "a sample right at the start");
    // Older than the history keeps (a width back from the latest, 10 s):
    // its oldest sample (a window never starts that far back).
    assert_eq!(since(1), Some(400 - 200), "the sample at 10 s");
    assert_eq!(s.kernel_view().and_then(|v| v.local_inv_needed), Some(400));
}

/// The causes of `live --json-out`'s last `diagnosis` record when the
/// scenario's findings go through a JSON Lines sink with a window, its
/// sampler reading `before` first and `after` from then on (`None`: no
/// sampler).
fn json_window_causes(dir: &Path, scenario: &str, counters: Option<(&str, &str)>) -> String {
    let ms = dir.join("mountstats");
    let out = dir.join("live.jsonl");
    let stop = Stop::new();
    let file = std::fs::File::create(&out).unwrap();
    let mut sink = LiveSink::new(file, true).with_window(300_000_000_000);
    let progress = Progress::default();
    if let Some((before, _)) = counters {
        std::fs::write(&ms, mountstats(before)).unwrap();
        let paths = CounterPaths {
            mountstats: ms.clone(),
            sysfs_root: dir.join("no-sysfs"),
        };
        let rx = spawn(paths, Duration::from_millis(100), stop.clone()).unwrap();
        sink = sink.with_counters(rx);
        while sink.counter_samples == 0 {
            std::thread::sleep(Duration::from_millis(20));
            assert_eq!(sink.tick(None, &progress), Flow::Continue);
        }
    }
    // The window's first look at the engine is before any traffic, as in
    // a live run that starts before the traffic does.
    let empty = rdma_analyzer::engine::Engine::new(Config::default());
    assert_eq!(sink.tick(Some(&empty), &progress), Flow::Continue);
    let (all, engine) = findings(scenario);
    for f in all {
        assert_eq!(sink.finding(f), Flow::Continue);
    }
    if let Some((_, after)) = counters {
        std::fs::write(&ms, mountstats(after)).unwrap();
        let taken = sink.counter_samples;
        while sink.counter_samples < taken + 2 {
            std::thread::sleep(Duration::from_millis(50));
            assert_eq!(sink.tick(None, &progress), Flow::Continue);
        }
    }
    stop.request();
    sink.end(
        Some(&engine),
        &progress,
        &rdma_analyzer::pipeline::End::Complete,
    );
    let text = std::fs::read_to_string(&out).unwrap();
    let last = text
        .lines()
        .rev()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["type"] == "diagnosis")
        .expect("a diagnosis record at the end");
    last["causes"].to_string()
}

/// Headless `live --json-out`'s `diagnosis` records take the kernel's
/// counters over their window as the TUI's diagnosis does: v3-ddp's
/// server invalidates none of the 52 segments, so the window names
/// no_remote_invalidation; without a sampler it cannot.
#[test]
fn the_json_lines_diagnosis_records_use_the_sampled_counters() {
    let dir = tempfile::tempdir().unwrap();
    let after = lab_xprt("v3-ddp");
    let with = json_window_causes(dir.path(), "v3-ddp", Some((&zeroed(&after), &after)));
    assert!(with.contains("no_remote_invalidation"), "{with}");
    assert!(with.contains("52 of 52 chunk segments"), "{with}");
    let without = json_window_causes(dir.path(), "v3-ddp", None);
    assert!(!without.contains("no_remote_invalidation"), "{without}");
}
