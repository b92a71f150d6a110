//! `live --write` onto a file system that fills up (a 64 KiB tmpfs mounted
//! for the test): the failed write is said when it happens and at the end,
//! the exit status is not 0, the message says the capture file is truncated
//! while the analysis went on, and the analysis did count every frame
//! (issue 23; before, exit 0 and "capture stopped").

use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

#[path = "common/prereq.rs"]
mod prereq;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rdma-livewrite-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn stats_frames(path: &Path) -> u64 {
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).expect("stats")).expect("stats JSON");
    v["frames"]
        .as_u64()
        .unwrap_or_else(|| panic!("no frames in {v}"))
}

#[test]
fn live_write_on_a_full_disk_says_the_file_is_truncated_and_fails() {
    if !prereq::root("live -i lo and mount need root") {
        return;
    }
    let dir = temp_dir("full");
    let fs = dir.join("fs");
    std::fs::create_dir_all(&fs).expect("dir");
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&fs)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("SKIP: cannot mount a tmpfs here");
        return;
    }
    let _mounted = Mounted(fs.clone());
    let pcapng = fs.join("cap.pcapng");
    let stats = dir.join("stats.json");
    // A port of our own: frames other tests send to 4791 are not counted.
    let port = 47_911u16;
    let live = Command::new(BIN)
        .args(["live", "-i", "lo", "--no-tui", "--duration", "4"])
        .args(["--bpf", &format!("udp port {port}")])
        .arg("--write")
        .arg(&pcapng)
        .arg("--stats-out")
        .arg(&stats)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("live");
    // Time for the capture to open before sending.
    std::thread::sleep(Duration::from_millis(1500));
    let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let payload = vec![0x5a_u8; 1400];
    let sent = 400u64;
    for _ in 0..sent {
        sock.send_to(&payload, ("127.0.0.1", port)).expect("send");
        std::thread::sleep(Duration::from_micros(500));
    }
    let o = live.wait_with_output().expect("live");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "exit status; stderr:\n{err}");
    assert!(
        err.contains("live --write")
            && err.contains(&pcapng.display().to_string())
            && err.contains("truncated")
            && err.contains("analysis went on"),
        "{err}"
    );
    assert!(!err.contains("capture stopped"), "{err}");
    let size = std::fs::metadata(&pcapng).expect("the pcapng").len();
    assert!(size <= 64 << 10, "{size}");
    // The analysis saw every frame (loopback shows each datagram once).
    assert!(
        stats_frames(&stats) >= sent,
        "the analysis stopped with the file: {} of {sent} frames",
        stats_frames(&stats)
    );
    drop(_mounted);
    let _ = std::fs::remove_dir_all(&dir);
}
