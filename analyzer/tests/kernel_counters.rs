//! The kernel as judge: the NFS client's own counters (mountstats) against
//! what the analyzer counts in a capture of the same window, through the
//! real binary, on every bundled lab run.
//!
//! `nconnect` has the mount's whole mountstats block (four transports, the
//! per-op counts). The earlier runs kept only the `xprt: rdma` lines in
//! their `SC.json`; their mountstats is rebuilt from those lines and the
//! mount as /proc/mounts gave it. The window ends where the lab took the
//! snapshot: just before the umount, whose time `SC.json` logs.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "common/kernel_view.rs"]
mod kernel_view;
use kernel_view::{compare, compare_with_devices, differing, rebuilt_mountstats, umount_time, BIN};
use serde_json::Value;

fn captures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures")
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn nconnect_every_counter_agrees_transport_by_transport() {
    let c = captures();
    let summary = json(&c.join("nconnect.json"));
    let until = umount_time(&summary);
    let (code, doc) = compare(
        &c.join("nconnect.mountstats.txt"),
        &c.join("nconnect.pcap"),
        Some(&until),
    );
    let m = &doc["mounts"][0];
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(m["transports"], 4);
    assert_eq!(m["connections"], 4);
    assert_eq!(m["per_transport"].as_array().unwrap().len(), 4);
    let rows = m["rows"].as_array().unwrap();
    let field = |f: &str| rows.iter().find(|r| r["field"] == f).unwrap().clone();
    assert_eq!(field("sends")["kernel"], 225);
    assert_eq!(field("connect_count")["capture"], 4);
    assert_eq!(field("READ ntrans")["capture"], 80);
    assert!(
        rows.iter()
            .filter(|r| r["field"].as_str().unwrap().ends_with("ntrans"))
            .count()
            >= 9
    );
    // The kernel counts a reply when its handler completes the RPC, after
    // the wire saw it: its in-flight sum runs ahead by 6 on this run.
    let req_u = field("req_u");
    assert_eq!(
        (&req_u["kernel"], &req_u["capture"]),
        (&253.into(), &247.into())
    );
    assert_eq!(req_u["verdict"], "agree, replies counted later");
    assert!(req_u["detail"].as_str().unwrap().contains("1106 µs after"));
    assert_eq!(field("local_inv_needed")["capture"], 3);
    assert_eq!(field("READ ops")["capture"], 80);
    assert!(
        rows.iter()
            .all(|r| r["verdict"].as_str().unwrap().starts_with("agree")),
        "{rows:#?}"
    );
}

/// Every lab run whose summary kept the transport counters: they agree with
/// the capture, field for field, or differ where the capture says why.
#[test]
fn every_lab_run_agrees_with_the_kernel_or_says_why() {
    let c = captures();
    let tmp = tempfile::tempdir().unwrap();
    // Differences with their reasons, seen on these runs.
    let known: &[(&str, &[&str], &str)] = &[
        // A reconnect loop: calls marshaled and not sent.
        (
            "diag-acl",
            &["reply_chunk_count", "total_rdma_request"],
            "marshals",
        ),
        // Loss: the capture holds fewer RDMA Write bytes than were written.
        ("diag-loss", &["total_rdma_reply"], "sent again or missed"),
        // The capture was stopped before the snapshot.
        ("diag-unresponsive", &["recvs"], "the capture ends"),
    ];
    let mut checked = 0;
    let summaries = std::fs::read_dir(&c)
        .unwrap()
        .chain(std::fs::read_dir(c.join("diag")).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"));
    for path in summaries {
        let summary = json(&path);
        let pcap = path.with_extension("pcap");
        let Some(after) = rebuilt_mountstats(&summary, tmp.path()) else {
            continue;
        };
        let name = summary["scenario"].as_str().unwrap().to_string();
        let (code, doc) = compare(&after, &pcap, Some(&umount_time(&summary)));
        let m = &doc["mounts"][0];
        let differ = differing(m);
        match known.iter().find(|(n, ..)| *n == name) {
            None => {
                assert_eq!(code, 0, "{name}: {differ:?}");
                assert!(differ.is_empty(), "{name}: {differ:?}");
            }
            Some((_, fields, why)) => {
                assert_eq!(code, 1, "{name}");
                assert_eq!(differ, *fields, "{name}");
                let notes = m["notes"].to_string();
                assert!(notes.contains(why), "{name}: no note says {why:?}: {notes}");
            }
        }
        checked += 1;
    }
    assert!(checked >= 16, "only {checked} lab runs compared");
}

/// Without the snapshot's time the capture's last RPCs (NFSv4's
/// DESTROY_SESSION and DESTROY_CLIENTID at the unmount) are more sends than
/// the kernel had counted, and the output says to give --until.
#[test]
fn without_the_snapshot_time_the_unmounts_rpcs_show_and_are_named() {
    let c = captures();
    let tmp = tempfile::tempdir().unwrap();
    let summary = json(&c.join("v42-reminv.json"));
    let after = rebuilt_mountstats(&summary, tmp.path()).unwrap();
    let (code, doc) = compare(&after, &c.join("v42-reminv.pcap"), None);
    assert_eq!(code, 1);
    let m = &doc["mounts"][0];
    // The in-flight sum counts those sends too.
    assert_eq!(differing(m), ["sends", "recvs", "req_u"]);
    let sends = m["rows"][0].clone();
    assert_eq!(
        (sends["kernel"].clone(), sends["capture"].clone()),
        (62.into(), 64.into())
    );
    assert!(m["notes"].to_string().contains("DESTROY_SESSION"), "{m:#}");
}

#[test]
fn a_mountstats_that_is_not_one_is_refused_by_file_and_line() {
    let c = captures();
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("ms");
    std::fs::write(
        &bad,
        "device s:/e mounted on /m with fstype nfs\n\txprt:\trdma 0 1 x\n",
    )
    .unwrap();
    let out = Command::new(BIN)
        .arg("mountstats")
        .arg(&bad)
        .arg("--capture")
        .arg(c.join("v3-inline.pcap"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("line 2") && err.contains("\"x\" is not a counter"),
        "{err}"
    );
    assert!(err.contains(&bad.display().to_string()), "{err}");
    let none = tmp.path().join("none");
    std::fs::write(&none, "device proc mounted on /proc with fstype proc\n").unwrap();
    let out = Command::new(BIN)
        .arg("mountstats")
        .arg(&none)
        .arg("--capture")
        .arg(c.join("v3-inline.pcap"))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("no RDMA mount"));
}

/// The client's soft-RoCE counters against its own capture over the same
/// window (a lab reconnect run whose server dropped every frame for a
/// while: six timeout retries, then the QP gave up): every counter the wire
/// can count agrees, the rest are the kernel's alone.
#[test]
fn the_devices_counters_agree_with_the_capture() {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/device-counters");
    let (_, doc) = compare_with_devices(
        &d.join("rxe-6.1-reconnect.mountstats.txt"),
        &d.join("rxe-6.1-reconnect.pcap"),
        None,
        Some(&d.join("rxe-6.1-reconnect.txt")),
    );
    let dev = &doc["devices"][0];
    assert_eq!(dev["device"], "rxe0 port 1", "{doc:#}");
    assert_eq!(dev["host"], "10.99.0.2");
    let rows = dev["rows"].as_array().unwrap();
    let get = |f: &str| rows.iter().find(|r| r["field"] == f).unwrap().clone();
    for (field, n) in [
        ("sent_pkts", 283),
        ("rcvd_pkts", 92),
        ("completer_retry_err", 6),
        ("duplicate_request", 0),
    ] {
        let r = get(field);
        assert_eq!(
            (r["kernel"].as_u64(), r["capture"].as_u64()),
            (Some(n), Some(n)),
            "{r}"
        );
        assert_eq!(r["verdict"], "agree");
    }
    assert_eq!(get("retry_exceeded_err")["verdict"], "kernel only");
    assert!(rows.iter().all(|r| r["verdict"] != "differ"), "{rows:#?}");
    // Without the flag the document says no device was compared.
    let (_, doc) = compare(
        &d.join("rxe-6.1-reconnect.mountstats.txt"),
        &d.join("rxe-6.1-reconnect.pcap"),
        None,
    );
    assert!(doc["devices"].is_null(), "{doc:#}");
}

/// A counter that went backwards (the device was removed and added again)
/// is said, not turned into a huge or negative count.
#[test]
fn a_device_counter_that_went_backwards_is_said() {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/device-counters");
    let tmp = tempfile::tempdir().unwrap();
    let dump = tmp.path().join("reset.txt");
    std::fs::write(
        &dump,
        "# before 1795708095.5\nrxe0 1 hw_counters sent_pkts 500\n# after 1795708131.1\nrxe0 1 hw_counters sent_pkts 283\n",
    )
    .unwrap();
    let out = Command::new(BIN)
        .arg("mountstats")
        .arg(d.join("rxe-6.1-reconnect.mountstats.txt"))
        .arg("--capture")
        .arg(d.join("rxe-6.1-reconnect.pcap"))
        .arg("--device-counters")
        .arg(&dump)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("rxe0 sent_pkts went from 500 to 283"),
        "{text}"
    );
}

/// When the silent server stops answering ARP too, the client's retries
/// wait in IP for its address: rxe counted them sent (262), the wire saw
/// 256 and one run of retries. The comparison says so, from the capture's
/// own unanswered ARP requests, instead of leaving a bare difference.
#[test]
fn packets_held_for_an_unresolved_neighbour_are_explained() {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/device-counters");
    let (_, doc) = compare_with_devices(
        &d.join("rxe-6.1-reconnect-arp.mountstats.txt"),
        &d.join("rxe-6.1-reconnect-arp.pcap"),
        None,
        Some(&d.join("rxe-6.1-reconnect-arp.txt")),
    );
    let dev = &doc["devices"][0];
    let rows = dev["rows"].as_array().unwrap();
    let get = |f: &str| rows.iter().find(|r| r["field"] == f).unwrap().clone();
    assert_eq!(get("sent_pkts")["kernel"], 262);
    assert_eq!(get("sent_pkts")["capture"], 256);
    assert_eq!(get("rcvd_pkts")["verdict"], "agree");
    let notes = dev["notes"].to_string();
    assert!(
        notes.contains("asked for a neighbour's address 13 times and had 1 answers"),
        "{notes}"
    );
}
