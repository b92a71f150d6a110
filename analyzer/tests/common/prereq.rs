//! Tests that need root, tshark, tmux or a build with probes: in the
//! project's test command (`scripts/test.sh` sets `RDMA_ANALYZER_REQUIRE=1`)
//! a missing prerequisite fails the test; run alone, the test says loudly
//! that it skipped.
#![allow(dead_code)]

use std::process::{Command, Stdio};

/// True when `have`; otherwise fails under the test command, or says the
/// test is skipped and returns false.
pub fn require(what: &str, have: bool, how: &str) -> bool {
    if have {
        return true;
    }
    if std::env::var_os("RDMA_ANALYZER_REQUIRE").is_some_and(|v| v == "1") {
        panic!("missing prerequisite: {what} ({how}); scripts/test.sh requires it");
    }
    eprintln!("SKIPPED: missing {what} ({how}); under scripts/test.sh this fails");
    false
}

/// Whether `cmd --version` (or `-V`) runs.
pub fn have_command(cmd: &str, version_flag: &str) -> bool {
    Command::new(cmd)
        .arg(version_flag)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// True when the effective uid is 0 (`Uid:` in /proc/self/status lists
/// real, effective, saved and filesystem ids).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .map(|v| v.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

/// tshark, for the oracle tests.
pub fn tshark() -> bool {
    require(
        "tshark",
        have_command("tshark", "--version"),
        "apt-get install tshark; scripts/setup.sh does",
    )
}

/// tmux, for the TUI tests.
pub fn tmux() -> bool {
    require(
        "tmux",
        have_command("tmux", "-V"),
        "apt-get install tmux; scripts/setup.sh does",
    )
}

/// Root, for capture and BPF.
pub fn root(why: &str) -> bool {
    require("root", is_root(), why)
}

/// The bundled captures (`captures/*.pcap`), sorted.
pub fn bundled_pcaps() -> Vec<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures");
    let mut pcaps: Vec<_> = std::fs::read_dir(&dir)
        .expect("captures/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcap"))
        .collect();
    pcaps.sort();
    assert!(!pcaps.is_empty(), "no captures in {}", dir.display());
    pcaps
}
