//! A damaged capture reaches every front end the same way: what came before
//! the damage is analyzed, the error names the frame and the byte offset,
//! and the exit status is 2, whichever command read it.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "common/prereq.rs"]
mod prereq;
#[path = "common/tmux.rs"]
mod tmux;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

fn block(kind: u32, body: &[u8]) -> Vec<u8> {
    let mut body = body.to_vec();
    while !body.len().is_multiple_of(4) {
        body.push(0);
    }
    let total = (12 + body.len()) as u32;
    let mut b = kind.to_le_bytes().to_vec();
    b.extend_from_slice(&total.to_le_bytes());
    b.extend_from_slice(&body);
    b.extend_from_slice(&total.to_le_bytes());
    b
}

/// A pcapng file: section, Ethernet interface, the first frame of a bundled
/// capture as an enhanced packet block, then a simple packet block of 12
/// bytes, which has no room for the length it must carry (it used to
/// underflow and panic the reader, while `report` said `"complete": true`).
fn twelve_byte_spb(dir: &Path) -> PathBuf {
    let capture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures/v3-inline.pcap");
    let bytes = std::fs::read(capture).unwrap();
    let caplen = u32::from_le_bytes(bytes[32..36].try_into().unwrap()) as usize;
    let frame = &bytes[40..40 + caplen];
    let mut f = block(
        0x0a0d_0d0a,
        &[
            0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        ],
    );
    f.extend(block(1, &[1, 0, 0, 0, 0, 0, 0, 0]));
    let mut epb = 0u32.to_le_bytes().to_vec();
    epb.extend_from_slice(&0u32.to_le_bytes());
    epb.extend_from_slice(&1_000_000u32.to_le_bytes());
    epb.extend_from_slice(&(frame.len() as u32).to_le_bytes());
    epb.extend_from_slice(&(frame.len() as u32).to_le_bytes());
    epb.extend_from_slice(frame);
    f.extend(block(6, &epb));
    let spb_at = f.len();
    f.extend(block(3, &[]));
    let p = dir.join("spb12.pcapng");
    std::fs::write(&p, &f).unwrap();
    assert_eq!(spb_at, 28 + 20 + 32 + frame.len().div_ceil(4) * 4);
    p
}

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("rdma-damaged-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_twelve_byte_simple_packet_block_is_exit_2_from_every_command() {
    let d = dir();
    let f = twelve_byte_spb(&d);
    let f = f.to_str().unwrap();
    for args in [
        vec!["frames", f],
        vec!["frames", "--json", f],
        vec!["report", f],
        vec!["report", "--json", f],
        vec!["transactions", f],
        vec!["transactions", "--json", f],
        vec!["anomalies", f],
        vec!["anomalies", "--json", f],
    ] {
        let out = Command::new(BIN).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("frame 2 at byte offset") && err.contains("simple packet block length"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        if args == ["report", "--json", f] {
            let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
            assert_eq!(v["complete"], false, "{stdout}");
            assert_eq!(v["totals"]["frames"], 1, "the frame before is analyzed");
        }
        if args == ["frames", f] {
            assert_eq!(stdout.lines().count(), 1, "the frame before is shown");
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn the_tui_shows_the_damage_and_exits_2() {
    if !prereq::tmux() {
        return;
    }
    let d = dir();
    let f = twelve_byte_spb(&d);
    let shell = format!("'{BIN}' open '{}'; echo EXITED $?; sleep 60", f.display());
    let t = tmux::Tmux::start(format!("rdma-damaged-{}", std::process::id()), &shell);
    let p = t.wait_for("stopped:");
    assert!(p.contains("simple packet block length"), "{p}");
    t.send(&["q"]);
    let p = t.wait_for("EXITED");
    assert!(p.contains("EXITED 2"), "{p}");
    assert!(p.contains("frame 2 at byte offset"), "{p}");
    let _ = std::fs::remove_dir_all(&d);
}
