use std::path::Path;

use super::*;

const LAB: &str = include_str!("../../../captures/nconnect.mountstats.txt");

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

fn sampler(dir: &Path) -> CounterSampler {
    CounterSampler::new(CounterPaths {
        mountstats: dir.join("mountstats"),
        sysfs_root: dir.join("sys"),
    })
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
    assert_eq!((sends.total, sends.delta, sends.since_start), (59, None, 0));
    assert_eq!(first.interval_s, None);
    assert_eq!(first.devices[0].value.total, 5);

    std::fs::write(&ms, grown(10)).unwrap();
    set_counter(&d.path().join("sys"), "rcvd_seq_err", 8);
    let second = s.sample(6_000_000_000);
    assert_eq!(second.interval_s, Some(5.0));
    let sends = field(&second, 2, "sends");
    assert_eq!(
        (sends.total, sends.delta, sends.since_start),
        (70, Some(10), 10)
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
    assert_eq!((sends.delta, sends.since_start), (Some(5), 15));
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
    assert_eq!(sends.since_start, 20 + 59, "the new count is added");
    let dev = &l.devices[0].value;
    assert!(dev.reset);
    assert_eq!((dev.delta, dev.since_start), (None, 4));
    std::fs::write(&ms, grown(1)).unwrap();
    let l = s.sample(3);
    let sends = field(&l, 0, "sends");
    assert_eq!((sends.delta, sends.reset), (Some(1), false));
    let v = s.kernel_view().unwrap();
    // The diagnosis, as `report --mountstats-before`, leaves a transport
    // that went backwards out and says so.
    assert_eq!((v.reset_transports, v.transports), (4, 0));
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
    assert!(s.latest_mountstats().unwrap().len() <= MAX_MOUNTSTATS_BYTES);
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
    assert_eq!(sends["total"], 53);
    assert_eq!(sends["delta"], 0);
    assert_eq!(v["devices"][0]["device"], "rxe0");
    assert_eq!(v["devices"][0]["group"], "hw_counters");
    assert_eq!(v["devices"][0]["delta"], 0);
    assert!(v["mounts"][0]["transports"][0]["fields"]["port"].is_null());
}

#[test]
fn the_metrics_serve_the_running_samplers_latest_sample() {
    let d = tempfile::tempdir().unwrap();
    let ms = d.path().join("mountstats");
    std::fs::write(&ms, LAB).unwrap();
    set_counter(&d.path().join("sys"), "rcvd_seq_err", 7);
    let stop = crate::pipeline::Stop::new();
    let rx = spawn(
        CounterPaths {
            mountstats: ms.clone(),
            sysfs_root: d.path().join("sys"),
        },
        std::time::Duration::from_secs(60),
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
