//! `live --record`: the real binary captures a veth pair while the lab's
//! reconnect capture is injected into its peer; the reconnect fires a dump
//! on its own, SIGUSR1 another, a POST to the metrics server's `/record` a
//! third, and tshark opens them with the frames around the trigger and the
//! findings as packet comments.
//!
//! A veth pair of its own (not `lo`): the other loopback tests may run at
//! the same time. Needs root (CAP_NET_ADMIN for the pair, CAP_NET_RAW for
//! the capture) and tshark; skipped with a message otherwise.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread::sleep;
use std::time::{Duration, Instant};

#[path = "common/live_veth.rs"]
mod live_veth;
#[path = "common/prereq.rs"]
mod prereq;

use live_veth::{capture, inject, signal, start_live, stop_live, Veth};

/// The first dump in `dir` whose name ends with `-TAG.pcapng`, once there.
fn wait_for_dump(dir: &Path, tag: &str, limit: Duration) -> PathBuf {
    let start = Instant::now();
    loop {
        let found = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.ends_with(&format!("-{tag}.pcapng")))
            });
        if let Some(p) = found {
            return p;
        }
        assert!(
            start.elapsed() < limit,
            "no {tag} dump in {} after {limit:?}",
            dir.display()
        );
        sleep(Duration::from_millis(100));
    }
}

/// `tshark -r FILE -T fields -e FIELD`, one line per frame.
fn tshark_fields(file: &Path, field: &str) -> Vec<String> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(["-T", "fields", "-e", field])
        .output()
        .expect("running tshark");
    assert!(
        out.status.success(),
        "tshark -r {} failed: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// The section comment, as capinfos reads it.
fn section_comment(file: &Path) -> String {
    let out = Command::new("capinfos")
        .arg("-k")
        .arg(file)
        .output()
        .expect("running capinfos");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_reconnect_sigusr1_and_a_post_each_write_a_dump_tshark_opens_with_frames_and_comments() {
    if !prereq::require(
        "root",
        prereq::is_root(),
        "run as root: a veth pair and a capture",
    ) || !prereq::require(
        "tshark",
        prereq::have_command("tshark", "-v"),
        "apt install tshark",
    ) {
        return;
    }
    let veth = Veth::new("rrec");
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = dir.path().join("dumps");
    let err = dir.path().join("stderr");
    let args = [
        "--record".as_ref(),
        rec.as_os_str(),
        "--record-before".as_ref(),
        "60s".as_ref(),
        "--record-after".as_ref(),
        "1s".as_ref(),
        "--duration".as_ref(),
        "60".as_ref(),
        "--metrics".as_ref(),
        "127.0.0.1:0".as_ref(),
    ];
    let child = start_live(&veth.0, &args, &err);
    let sent = inject(&veth.peer(), &capture("reconnect.pcap"));

    // The client's second connection (and the call sent again on it).
    let reconnect = wait_for_dump(&rec, "reconnect", Duration::from_secs(20));
    signal(&child, libc::SIGUSR1);
    let signalled = wait_for_dump(&rec, "sigusr1", Duration::from_secs(20));
    // An Alertmanager webhook's POST to the metrics server.
    let said = std::fs::read_to_string(&err).unwrap_or_default();
    let addr = said
        .lines()
        .find_map(|l| {
            l.strip_prefix("live: metrics at http://")?
                .strip_suffix("/metrics")
        })
        .unwrap_or_else(|| panic!("no metrics address in:\n{said}"))
        .to_string();
    let body =
        r#"{"version":"4","status":"firing","alerts":[{"labels":{"alertname":"RdmaReconnects"}}]}"#;
    let mut http = std::net::TcpStream::connect(&addr).expect("the metrics server");
    write!(
        http,
        "POST /record HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("POST");
    let mut answer = String::new();
    http.read_to_string(&mut answer).expect("the answer");
    assert!(answer.starts_with("HTTP/1.1 202"), "{answer}");
    let posted = wait_for_dump(&rec, "http", Duration::from_secs(20));
    assert!(section_comment(&posted).contains("http POST /record at"));
    let said = stop_live(child, &err);

    // The SIGUSR1 dump's window (60 s before) holds every frame the run
    // captured.
    let captured: usize = said
        .lines()
        .find_map(|l| {
            let (_, rest) = l.split_once(" probe records (")?;
            let (_, rest) = rest.split_once("), ")?;
            rest.split_once(" frames (")?.0.parse().ok()
        })
        .unwrap_or_else(|| panic!("no summary line in:\n{said}"));
    let frames = tshark_fields(&signalled, "frame.number");
    assert!(
        captured > 0 && captured as u64 <= sent,
        "{captured} captured of {sent} sent"
    );
    assert_eq!(frames.len(), captured, "live said:\n{said}");
    let comments: Vec<String> = tshark_fields(&signalled, "frame.comment")
        .into_iter()
        .filter(|c| !c.is_empty())
        .collect();
    assert!(
        comments
            .iter()
            .any(|c| c.contains("remote_invalidation_not_negotiated")),
        "the findings are the frames' comments: {comments:?}"
    );
    let section = section_comment(&signalled);
    assert!(section.contains("sigusr1 at"), "{section}");

    // The reconnect dump: its trigger says which connection.
    let section = section_comment(&reconnect);
    assert!(section.contains("reconnect at"), "{section}");
    assert!(!tshark_fields(&reconnect, "frame.number").is_empty());
    assert!(said.contains("3 dumps written"), "{said}");
}
