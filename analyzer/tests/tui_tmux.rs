//! End to end: the real binary's TUI driven through tmux over a lab capture.
//!
//! Skipped (with a message) when tmux is not installed.

use std::path::PathBuf;
use std::process::{Command, Stdio};

#[path = "common/tmux.rs"]
mod tmux;
use tmux::Tmux;

#[path = "common/prereq.rs"]
mod prereq;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

fn capture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("captures")
        .join(name)
}

#[test]
fn tui_end_to_end_in_tmux() {
    if !prereq::tmux() {
        return;
    }
    let cap = capture("v3-ddp.pcap");
    let shell = format!("'{BIN}' open '{}'; echo EXITED $?; sleep 60", cap.display());
    let t = Tmux::start(format!("rdma-analyzer-test-{}", std::process::id()), &shell);

    // Overview: the connection, its negotiated parameters and the totals.
    let p = t.wait_for("done");
    for want in [
        "Connections (1)",
        "10.99.0.2",
        "4096/4096",
        "44 calls, 44 replies",
    ] {
        assert!(p.contains(want), "overview lacks {want:?}:\n{p}");
    }
    assert_eq!(
        t.cmd(&["display", "-p", "-t", "t", "#{alternate_on}"])
            .stdout,
        b"1\n"
    );

    // Transactions: the first XID of the capture.
    let p = t.step(&["2"], "Transactions 44/44");
    assert!(p.contains("0xec7da3d4") && p.contains("NFS NULL"), "{p}");

    // Sort by the next column (conn) and back, reversed order shows the last call first.
    let p = t.step(&["S"], "time s▼");
    assert!(
        !p.contains("0xec7da3d4"),
        "reversed order still shows the first call:\n{p}"
    );
    t.step(&["S"], "time s▲");

    // Filter on a procedure.
    t.send(&["/"]);
    t.wait_for("filter: ");
    let p = t.step(&["WRITE", "Enter"], "Transactions 8/44");
    assert!(p.contains("0xf97da3d4") && !p.contains("NFS NULL"), "{p}");

    // The ladder of the first WRITE: call, RDMA Reads with their R_Keys, reply.
    let p = t.step(&["Enter"], "xid 0xf97da3d4 NFS WRITE");
    for want in [
        "call Send 208 bytes",
        "RDMA READ request rkey 0x30a3",
        "RDMA READ response",
        "reply Send",
        "RPC-over-RDMA  RDMA_MSG xid 0xf97da3d4",
        "NFS v3 proc 7 WRITE",
    ] {
        assert!(p.contains(want), "ladder lacks {want:?}:\n{p}");
    }
    // Esc back to the list, Esc again clears the filter.
    t.step(&["Escape"], "Transactions 8/44");
    t.step(&["Escape"], "Transactions 44/44");

    // Filter by XID.
    t.send(&["/"]);
    t.wait_for("filter: ");
    let p = t.step(&["0xf77da3d4", "Enter"], "Transactions 1/44");
    assert!(p.contains("NFSACL GETACL"), "{p}");
    t.step(&["Escape"], "Transactions 44/44");

    // Chunks: segments with their handles.
    let p = t.step(&["4"], "Segments 52");
    assert!(
        p.contains("0x2f0a") && p.contains("not visible on wire"),
        "{p}"
    );

    // Credits.
    let p = t.step(&["5"], "at the limit");
    assert!(p.contains("granted 64..64"), "{p}");

    // Anomalies: the lab capture is clean.
    t.step(&["6"], "No anomalies");

    // Help lists the keys; Esc closes it.
    let p = t.step(&["?"], "Keys (Esc or ? closes)");
    assert!(p.contains("pause") && p.contains("Shift-Tab"), "{p}");
    t.send(&["Escape"]);
    t.wait_gone("Keys (Esc");

    // Pause shows in the status line.
    t.step(&["p"], "PAUSED");
    t.send(&["p"]);
    t.wait_gone("PAUSED");

    // Tab goes on to the last screen (the kernel's counters, which a file
    // has none of) and wraps to the first (the diagnosis, which names no
    // cause here); Shift-Tab goes back.
    t.step(&["Tab"], "No kernel counters: a capture file");
    t.step(
        &["Tab"],
        "no cause found — looked at 44 RPCs on 1 connection",
    );
    t.step(&["BTab"], "No kernel counters");
    t.step(&["3"], "xid 0xf97da3d4 NFS WRITE");

    // Quit: the program exits 0 and the terminal leaves the alternate screen.
    let p = t.step(&["q"], "EXITED 0");
    assert!(!p.contains("Transactions 44"), "screen not restored:\n{p}");
    assert_eq!(
        t.cmd(&["display", "-p", "-t", "t", "#{alternate_on}"])
            .stdout,
        b"0\n"
    );
}

#[test]
fn open_without_a_terminal_points_to_report() {
    let o = Command::new(BIN)
        .arg("open")
        .arg(capture("v3-inline.pcap"))
        .stdin(Stdio::null())
        .output()
        .expect("running rdma-analyzer");
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("not a terminal") && err.contains("report"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn resize_and_ctrl_c_in_tmux() {
    if !prereq::tmux() {
        return;
    }
    let cap = capture("v3-inline.pcap");
    let shell = format!("'{BIN}' open '{}'; echo EXITED $?; sleep 60", cap.display());
    let t = Tmux::start(
        format!("rdma-analyzer-test-rs-{}", std::process::id()),
        &shell,
    );
    t.wait_for("done");
    t.step(&["2"], "Transactions 41/41");
    // Shrink below 80×24, then to it, then grow: the program keeps drawing.
    for (w, h, want) in [
        ("40", "10", "Transactions"),
        ("80", "24", "Transactions 41/41"),
        // Only the wide table has this column: the new size has been drawn.
        ("200", "60", "invalidated"),
    ] {
        let o = t.cmd(&["resize-window", "-t", "t", "-x", w, "-y", h]);
        assert!(o.status.success(), "resize-window: {o:?}");
        t.wait_for(want);
    }
    // Anomalies of the capture, grouped with their RFC section; Enter on one
    // opens its transaction's ladder, which shows the offending invalidation.
    let p = t.step(&["6"], "Anomalies 1 (");
    assert!(
        p.contains("remote_invalidation_not_negotiated")
            && p.contains("RFC 8797 4.1")
            && p.contains("xid 0xcaa07afe"),
        "{p}"
    );
    let p = t.step(&["j", "Enter"], "xid 0xcaa07afe NFS READ");
    assert!(p.contains("reply Send with Invalidate rkey 0xc63"), "{p}");
    assert!(p.contains("RDMA WRITE rkey 0xc63"), "{p}");
    assert!(p.contains("remote_invalidation_not_negotiated"), "{p}");

    // Ctrl-C quits cleanly like q.
    t.step(&["C-c"], "EXITED 0");
    assert_eq!(
        t.cmd(&["display", "-p", "-t", "t", "#{alternate_on}"])
            .stdout,
        b"0\n"
    );
}

/// A tmux session of its own, `w`×`h`, running `open` on a capture.
fn open_in_tmux(tag: &str, name: &str, w: u16, h: u16) -> Tmux {
    let cap = capture(name);
    let shell = format!("'{BIN}' open '{}'; echo EXITED $?; sleep 60", cap.display());
    let t = Tmux::start_sized(
        format!("rdma-analyzer-test-{tag}-{}", std::process::id()),
        &shell,
        w,
        h,
    );
    let size = t.cmd(&[
        "display",
        "-p",
        "-t",
        "t",
        "#{window_width}x#{window_height}",
    ]);
    assert_eq!(
        String::from_utf8_lossy(&size.stdout).trim(),
        format!("{w}x{h}")
    );
    t
}

/// Whether `a` comes before `b` on the screen.
fn before(p: &str, a: &str, b: &str) -> bool {
    matches!((p.find(a), p.find(b)), (Some(x), Some(y)) if x < y)
}

#[test]
fn reconnect_opens_on_the_stall_and_drills_to_its_ladder() {
    if !prereq::tmux() {
        return;
    }
    let t = open_in_tmux("diag", "reconnect.pcap", 160, 48);
    // The first screen: the diagnosis, the stall first with its 21.9 s, the
    // outage in the client's timeline.
    let p = t.wait_for("done");
    assert!(
        p.contains("Diagnosis: 2 causes, largest impact first"),
        "{p}"
    );
    assert!(
        before(&p, "1  reconnect_stall", "2  network_loss"),
        "the stall is not ranked first:\n{p}"
    );
    for want in [
        "21.908 s of application-visible time lost",
        "92.5%",
        "xids 0xcb7cd736",
        "5.313 s .. 27.264 s",
        "outage 21.907 s: 1 call(s) unanswered on c1",
        "c2 up at 27.220 s (6.409 s without a connection)",
        "c2: REQ 20.863 s, 1 request(s) unanswered, established 27.220 s",
    ] {
        assert!(p.contains(want), "the diagnosis lacks {want:?}:\n{p}");
    }
    // Enter: the cause's transaction.
    let p = t.step(&["Enter"], "Transactions 1/36");
    assert!(
        p.contains("0xcb7cd736") && p.contains("NFS GETATTR") && p.contains("back to Diagnosis"),
        "{p}"
    );
    // Enter: its ladder, on the connection that answered it.
    let p = t.step(&["Enter"], "c2 xid 0xcb7cd736 NFS GETATTR");
    for want in ["call Send 140 bytes", "reply Send 140 bytes"] {
        assert!(p.contains(want), "the ladder lacks {want:?}:\n{p}");
    }
    // Esc: the list; Esc: the cause, the filter gone.
    t.step(&["Escape"], "Transactions 1/36");
    let p = t.step(&["Escape"], "Diagnosis: 2 causes");
    assert!(!p.contains("filter 0x"), "{p}");
    // The second cause drills to the same call, its retransmissions' XID.
    t.step(&["j"], "2. network_loss: fix the fabric");
    t.step(&["Enter"], "Transactions 1/36");
    t.step(&["Escape"], "Diagnosis: 2 causes");
    // d returns to the diagnosis from anywhere.
    t.step(&["4"], "Segments");
    t.step(&["d"], "Diagnosis: 2 causes");
    t.step(&["3"], "c2 xid 0xcb7cd736 NFS GETATTR");
    t.step(&["d"], "Diagnosis: 2 causes");
    let p = t.step(&["q"], "EXITED 0");
    assert!(!p.contains("Diagnosis: 2"), "screen not restored:\n{p}");
}

#[test]
fn reconnect_at_80x24_keeps_its_keys_readable() {
    if !prereq::tmux() {
        return;
    }
    let t = open_in_tmux("diag80", "reconnect.pcap", 80, 24);
    let p = t.wait_for("done");
    let lines: Vec<&str> = p.lines().collect();
    assert!(lines.len() <= 24, "{p}");
    // The tab bar, the status line's keys and the pane titles' keys are whole.
    assert!(
        lines[0].contains("0 Diagnosis") && lines[0].contains("6 Anomalies"),
        "{p}"
    );
    assert!(p.contains("? help  q quit"), "{p}");
    assert!(p.contains("(Enter: its transactions)"), "{p}");
    assert!(before(&p, "1  reconnect_stall", "2  network_loss"), "{p}");
    assert!(p.contains("outage 21.907 s"), "{p}");
    // The help fits and names the diagnosis keys.
    let p = t.step(&["?"], "Keys (Esc or ? closes)");
    assert!(p.contains("d  0") && p.contains("the diagnosis"), "{p}");
    assert!(
        p.contains("back up (ladder, a cause's or connection's list)"),
        "{p}"
    );
    t.send(&["Escape"]);
    t.wait_gone("Keys (Esc");
    // The drill works as at full size.
    let p = t.step(&["Enter"], "Transactions 1/36");
    assert!(p.contains("0xcb7cd736"), "{p}");
    t.step(&["Enter"], "c2 xid 0xcb7cd736 NFS GETATTR");
    t.step(&["Escape"], "Transactions 1/36");
    t.step(&["Escape"], "(Enter: its transactions)");
    t.step(&["q"], "EXITED 0");
}

#[test]
fn a_clean_capture_says_no_cause_then_shows_the_overview() {
    if !prereq::tmux() {
        return;
    }
    let t = open_in_tmux("clean", "v3-inline.pcap", 80, 24);
    let p = t.wait_for("done");
    assert!(
        p.contains("no cause found — looked at 41 RPCs on") && p.contains("Connections (1)"),
        "{p}"
    );
    // The diagnosis screen says it too, over the client's timeline.
    let p = t.step(
        &["d"],
        "Connections of each client in time order: 0 outages",
    );
    assert!(
        p.contains("no cause found — looked at 41 RPCs on 1 connection"),
        "{p}"
    );
    assert!(p.contains("c1: REQ"), "{p}");
    t.step(&["q"], "EXITED 0");
}

/// A screen whose terminal goes away (an SSH session closed, tmux killed)
/// exits: it does not stay behind spinning on the dead terminal.
#[test]
fn the_screen_exits_when_its_terminal_goes_away() {
    if !prereq::tmux() {
        return;
    }
    let cap = capture("v3-ddp.pcap");
    let t = Tmux::start(
        format!("rdma-analyzer-test-hup-{}", std::process::id()),
        &format!("exec '{BIN}' open '{}'", cap.display()),
    );
    t.wait_for("Diagnosis");
    let pid = String::from_utf8_lossy(&t.cmd(&["display", "-p", "-t", "t", "#{pane_pid}"]).stdout)
        .trim()
        .to_string();
    assert!(!pid.is_empty(), "no pane pid");
    let _ = t.cmd(&["kill-server"]);
    let alive = |pid: &str| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s.split_whitespace().nth(2) != Some("Z"))
    };
    let start = std::time::Instant::now();
    while alive(&pid) && start.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(
        !alive(&pid),
        "rdma-analyzer open (pid {pid}) still runs 10 s after its terminal went away"
    );
}

/// From a transaction to Wireshark: `f` shows the selected ladder step's
/// frame, `w` writes the transaction's frames to a pcapng in the current
/// folder, which tshark (the independent reader) opens with the same
/// frames.
#[test]
fn a_transactions_frames_reach_tshark() {
    if !prereq::tmux()
        || !prereq::require(
            "tshark",
            prereq::have_command("tshark", "-v"),
            "apt-get install tshark",
        )
    {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let cap = capture("reconnect.pcap");
    let shell = format!(
        "cd '{}' && '{BIN}' open '{}'; echo EXITED $?; sleep 60",
        dir.path().display(),
        cap.display()
    );
    let t = Tmux::start_sized(
        format!("rdma-analyzer-test-frames-{}", std::process::id()),
        &shell,
        160,
        48,
    );
    t.wait_for("done");
    t.step(&["Enter"], "Transactions 1/36");
    t.step(&["Enter"], "c2 xid 0xcb7cd736 NFS GETATTR");
    // The ladder's first step is the call; f dissects its frame.
    let p = t.step(&["f"], "RPC-over-RDMA");
    assert!(
        p.contains("xid 0xcb7cd736") || p.contains("RDMA_MSG"),
        "{p}"
    );
    t.step(&["Escape"], "c2 xid 0xcb7cd736");
    let p = t.step(&["w"], "rdma-c2-xid-cb7cd736.pcapng");
    assert!(p.contains("wrote "), "{p}");
    t.step(&["Escape"], "c2 xid 0xcb7cd736");
    t.step(&["q"], "EXITED 0");
    let file = dir.path().join("rdma-c2-xid-cb7cd736.pcapng");
    let out = Command::new("tshark")
        .args(["-r"])
        .arg(&file)
        .args([
            "-T",
            "fields",
            "-e",
            "frame.number",
            "-e",
            "infiniband.bth.opcode",
        ])
        .output()
        .expect("tshark");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = String::from_utf8_lossy(&out.stdout);
    let n = lines.lines().count();
    assert!(n >= 2, "the call and the reply at least:\n{lines}");
    assert!(
        lines
            .lines()
            .all(|l| l.split('\t').nth(1).is_some_and(|o| !o.is_empty())),
        "every frame is RoCE:\n{lines}"
    );
}

/// `live` on a terminal runs the counter sampler: its Counters screen (7)
/// shows the numbers of a mountstats file (the lab's nconnect mount, 4
/// transports) and of a sysfs tree the test writes, and their growth once
/// the files change; the diagnosis gets the kernel's view.
#[test]
fn live_shows_the_kernels_counters_in_tmux() {
    if !prereq::root("live -i lo needs CAP_NET_RAW") || !prereq::tmux() {
        return;
    }
    let d = tempfile::tempdir().expect("tempdir");
    let ms = d.path().join("mountstats");
    let lab = std::fs::read_to_string(capture("nconnect.mountstats.txt")).expect("sample");
    std::fs::write(&ms, &lab).expect("mountstats");
    let hw = d.path().join("sys/rxe0/ports/1/hw_counters");
    std::fs::create_dir_all(&hw).expect("sysfs");
    std::fs::write(hw.join("rcvd_seq_err"), "5\n").expect("counter");
    let shell = format!(
        "'{BIN}' live -i lo --counters-interval 0.3 --mountstats-file '{}' --sysfs-root '{}'; echo EXITED $?; sleep 60",
        ms.display(),
        d.path().join("sys").display()
    );
    let t = Tmux::start(
        format!("rdma-analyzer-test-live-counters-{}", std::process::id()),
        &shell,
    );
    t.wait_for("capturing on lo");
    let p = t.step(
        &["7"],
        "/mnt/lab (10.99.0.1:/srv/export): 4 RDMA transports",
    );
    let words = |p: &str, name: &str| -> Vec<String> {
        let l = p
            .lines()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("no {name} in\n{p}"));
        l.split(['│', '▶', ' '])
            .filter(|w| !w.is_empty())
            .map(String::from)
            .collect()
    };
    // Transport 0's line of the file: 59 sends, 1114112 bytes offered.
    // (The first sample has no delta yet: "unknown", not 0.)
    assert_eq!(words(&p, "sends ")[..2], ["sends", "59"], "{p}");
    assert_eq!(words(&p, "total_rdma_request")[1], "1114112", "{p}");
    assert!(
        p.contains("the diagnosis checks no_remote_invalidation and mr_exhaustion"),
        "{p}"
    );

    // The kernel counts on: 10 more sends on transport 0, 3 more errors.
    let grown = lab.replacen("rdma 0 0 1 0 0 59 59", "rdma 0 0 1 0 0 69 69", 1);
    std::fs::write(&ms, grown).expect("mountstats");
    std::fs::write(hw.join("rcvd_seq_err"), "8\n").expect("counter");
    let p = t.wait_for("+10");
    assert_eq!(
        words(&p, "sends ")[..4],
        ["sends", "69", "+10", "+10"],
        "{p}"
    );
    // The end of the list: READ's per-op counters, the device's counter.
    let p = t.step(&["G"], "rxe0 port 1");
    assert_eq!(words(&p, "READ ")[..2], ["READ", "80"], "{p}");
    let seq = words(&p, "rcvd_seq_err");
    assert_eq!(seq[..3], ["hw_counters", "rcvd_seq_err", "8"], "{p}");
    assert_eq!(seq[4], "+3", "{p}");
    t.step(&["q"], "EXITED 0");
}

/// The unfiltered `transactions --json` of a bundled capture.
fn transactions_json(name: &str) -> Vec<serde_json::Value> {
    let out = Command::new(BIN)
        .args(["transactions", "--json"])
        .arg(capture(name))
        .output()
        .expect("transactions");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// Issue 24's TUI points through the real binary at 80×24: slowest first
/// in one key (`L`), search by frame and by R_Key (`/`), a ladder step's
/// frame dissected (`f`). What each must show is taken from
/// `transactions --json`, not written in.
#[test]
fn slowest_first_search_by_frame_and_rkey_and_a_steps_frame_at_80x24() {
    if !prereq::tmux() {
        return;
    }
    let all = transactions_json("v3-ddp.pcap");
    let slowest = all
        .iter()
        .max_by(|a, b| {
            let l = |t: &serde_json::Value| t["latency_us"].as_f64().unwrap_or(0.0);
            l(a).total_cmp(&l(b))
        })
        .expect("transactions");
    let xid = |t: &serde_json::Value| format!("{:#010x}", t["xid"].as_u64().unwrap());
    let write = all
        .iter()
        .find(|t| t["procedure"] == "WRITE" && t["chunks"][0]["frames"][0].is_u64())
        .expect("a WRITE whose chunk moved on the wire");
    let chunk_frame = write["chunks"][0]["frames"][0].as_u64().unwrap();
    let handle = write["chunks"][0]["handle"].as_str().unwrap().to_string();
    let with_handle = all
        .iter()
        .filter(|t| {
            t["chunks"]
                .as_array()
                .is_some_and(|c| c.iter().any(|s| s["handle"] == handle.as_str()))
                || t["remote_invalidated_rkey"] == handle.as_str()
        })
        .count();
    let n = all.len();

    let t = open_in_tmux("search80", "v3-ddp.pcap", 80, 24);
    t.wait_for("done");
    let p = t.step(&["L"], &format!("Transactions {n}/{n}"));
    let selected = p.lines().find(|l| l.contains('▶')).unwrap_or_default();
    assert!(
        selected.contains(&xid(slowest)),
        "L: the slowest first:\n{p}"
    );

    t.send(&["/"]);
    t.wait_for("filter: ");
    let p = t.step(
        &[&format!("frame == {chunk_frame}"), "Enter"],
        &format!("Transactions 1/{n}"),
    );
    assert!(p.contains(&xid(write)), "frame {chunk_frame}:\n{p}");
    t.step(&["Escape"], &format!("Transactions {n}/{n}"));

    t.send(&["/"]);
    t.wait_for("filter: ");
    let p = t.step(
        &[&format!("rkey == {handle}"), "Enter"],
        &format!("Transactions {with_handle}/{n}"),
    );
    assert!(p.contains(&xid(write)), "rkey {handle}:\n{p}");

    // Its ladder, the second step, and that step's frame dissected.
    t.step(&["Enter"], &format!("xid {} NFS WRITE", xid(write)));
    let step = write["ladder"][1]["frame"].as_u64().unwrap();
    t.send(&["j"]);
    let p = t.step(&["f"], &format!("frame {step}: "));
    assert!(
        p.contains(&format!("frame.number == {step}")),
        "the frame view names its tshark filter:\n{p}"
    );
    t.send(&["Escape"]);
    t.step(&["q"], "EXITED 0");
}

/// `open --ignore KIND`: the findings screen hides the acknowledged kind,
/// says how many it hid, and `a` shows them again.
#[test]
fn open_ignore_keeps_acknowledged_findings_apart() {
    if !prereq::tmux() {
        return;
    }
    let cap = capture("v42-reminv.pcap");
    let shell = format!(
        "'{BIN}' open --ignore remote_invalidation_not_negotiated '{}'; echo EXITED $?; sleep 60",
        cap.display()
    );
    let t = Tmux::start(
        format!("rdma-analyzer-test-acks-{}", std::process::id()),
        &shell,
    );
    t.wait_for("done");
    let p = t.step(&["6"], "28 acknowledged hidden, a: show");
    assert!(!p.contains("remote_invalidation_not_negotiated"), "{p}");
    let p = t.step(&["a"], "acknowledged shown, a: hide");
    assert!(p.contains("remote_invalidation_not_negotiated"), "{p}");
    t.step(&["q"], "EXITED 0");
}

/// Every 24-bit QPN (`0xabcNNN`) on `pane` whole or visibly cut.
fn qpns_whole_or_cut(pane: &str) -> Vec<String> {
    pane.split(|c: char| !c.is_ascii_alphanumeric() && c != '…')
        .filter(|w| w.starts_with("0xabc"))
        .filter(|w| w.len() != "0xabc000".len() && !w.ends_with('…'))
        .map(String::from)
        .collect()
}

/// Through the real binary, each screen at 80×24 and 200×50 of 120
/// connections with 24-bit QPNs (`synth --qpn-base 0xabc000`): no QPN cut
/// without an ellipsis, and the last connection's id whole (`c120`).
#[test]
fn every_screen_keeps_qpns_and_connection_ids_whole_at_80x24_and_200x50() {
    if !prereq::tmux() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let many = dir.path().join("many.pcap");
    let out = Command::new(BIN)
        .args(["synth", "--connections", "120", "--calls", "600"])
        .args(["--qpn-base", "0xabc000", "-o"])
        .arg(&many)
        .output()
        .expect("synth");
    assert!(out.status.success(), "{out:?}");
    for (w, h) in [(80u16, 24u16), (200, 50)] {
        let shell = format!(
            "'{BIN}' open '{}'; echo EXITED $?; sleep 60",
            many.display()
        );
        let t = Tmux::start_sized(
            format!("rdma-analyzer-test-many-{w}-{}", std::process::id()),
            &shell,
            w,
            h,
        );
        t.wait_for("done");
        // The overview's last row: the 120th connection, whole.
        let p = t.step(&["1", "G"], "c120 ");
        assert!(qpns_whole_or_cut(&p).is_empty(), "{w}×{h}:\n{p}");
        // A transaction of c120 (the longest host, 10.99.0.121) and its
        // ladder, whose header names both sides.
        t.step(&["2"], "Transactions 600/600");
        t.send(&["/"]);
        t.wait_for("filter: ");
        t.step(&["c120", "Enter"], "/600");
        t.step(&["Enter"], "c120 xid 0x");
        for (key, title) in [
            ("3", "xid 0x"),
            ("4", "Segments"),
            ("5", "at the limit"),
            ("6", "No anomalies"),
            ("7", "No kernel counters"),
            ("d", "no cause found"),
        ] {
            let p = t.step(&[key], title);
            let cut = qpns_whole_or_cut(&p);
            assert!(cut.is_empty(), "{w}×{h} screen {key}: {cut:?}\n{p}");
        }
        t.step(&["q"], "EXITED 0");
    }
}
