//! The TUI over an iWARP capture, driven through tmux: the overview's
//! transport counters are iWARP's (no ICRC or PSN zeros), and a ladder
//! step's frame view shows the segment's MPA/DDP/RDMAP as `frames` does.
//!
//! Skipped (with a message) when tmux is not installed.

use std::path::PathBuf;

#[path = "common/tmux.rs"]
mod tmux;
use tmux::Tmux;

#[path = "common/prereq.rs"]
mod prereq;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

fn open(tag: &str, name: &str) -> Tmux {
    let cap = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../captures/iwarp")
        .join(name);
    let shell = format!("'{BIN}' open '{}'; echo EXITED $?; sleep 60", cap.display());
    Tmux::start_sized(
        format!("rdma-analyzer-test-{tag}-{}", std::process::id()),
        &shell,
        160,
        48,
    )
}

#[test]
fn iwarp_frames_in_the_tui_show_mpa_ddp_rdmap() {
    if !prereq::tmux() {
        return;
    }
    let t = open("iwarp-frames", "v3-ddp.pcap");
    t.wait_for("done");
    let p = t.step(&["1"], "Connections (1)");
    assert!(p.contains("ICRC, PSNs n/a"), "overview:\n{p}");
    assert!(!p.contains("ICRC 0 ok"), "overview:\n{p}");
    // The connection's MPA exchange: private data and IRD/ORD per side.
    assert!(
        p.contains("R=1 4096/4096 IRD/ORD 128/0 / R=0 4096/4096 IRD/ORD 0/128"),
        "overview:\n{p}"
    );
    t.step(&["2"], "Transactions 44/44");
    t.send(&["/"]);
    t.wait_for("filter: ");
    t.step(&["WRITE", "Enter"], "Transactions 8/44");
    t.step(&["Enter"], "xid 0xdd086ab9 NFS WRITE");
    // The call's Send: its FPDU and the RPC-over-RDMA in it.
    let p = t.step(&["f"], "frame 67:");
    for want in ["Send MSN", "MO 0", "RDMA_MSG xid 0xdd086ab9"] {
        assert!(p.contains(want), "frame 67 lacks {want:?}:\n{p}");
    }
    t.send(&["Escape"]);
    t.wait_gone("frame 67:");
    // The server's Read Request: both STags and offsets.
    let p = t.step(&["j", "f"], "frame 75:");
    assert!(
        p.contains("Read Request sink 0x26285b01") && p.contains("0x1d7ca102:0xdd086ab94d42d000"),
        "frame 75:\n{p}"
    );
    t.send(&["Escape"]);
    t.wait_gone("frame 75:");
    // The last Read Response segment: tagged, placed at the sink STag.
    let p = t.step(&["j", "f"], "frame 353:");
    assert!(
        p.contains("Read Response DDP T STag 0x26285b01"),
        "frame 353:\n{p}"
    );
    t.send(&["Escape"]);
    t.wait_gone("frame 353:");
    t.step(&["q"], "EXITED 0");
}
