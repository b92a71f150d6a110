//! `live --record` on a disk that does not keep up: at most two dumps are
//! outstanding (the one being written and one waiting); a dump triggered
//! meanwhile is skipped, and the run says so, and still ends with the two
//! written once the disk moves again.
//!
//! The dump directory is on a small ext4 file system of its own, loop
//! mounted and frozen (`fsfreeze -f`): the writer thread blocks in the
//! kernel creating its first dump, as on a stalled disk, with no hook in
//! the binary and no sleep deciding the outcome (the test signals and
//! injects a capture until the skip is said, then thaws). Needs root (a veth pair, a capture, a
//! loop mount) and fsfreeze; skipped with a message otherwise.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread::sleep;
use std::time::{Duration, Instant};

#[path = "common/live_veth.rs"]
mod live_veth;
#[path = "common/prereq.rs"]
mod prereq;

use live_veth::{capture, inject, signal, start_live, stop_live, Veth};
use rdma_analyzer::sources::pcap::PcapReader;

/// The `live` run, killed if the test fails before it stops it. Not waited
/// for: it may be blocked in the frozen file system until the mount's own
/// drop thaws it, and then the kill takes it.
struct Live(Option<std::process::Child>);

impl Drop for Live {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
        }
    }
}

/// A loop-mounted ext4 file system; thawed and unmounted when dropped, so
/// a failing test never leaves writers blocked on it.
struct Mount {
    at: PathBuf,
    frozen: bool,
}

impl Mount {
    /// Makes and mounts one under `dir`; `None` when this host cannot.
    fn new(dir: &Path) -> Option<Mount> {
        let img = dir.join("fs.img");
        let at = dir.join("mnt");
        std::fs::create_dir(&at).ok()?;
        let run = |cmd: &str, args: &[&std::ffi::OsStr]| {
            Command::new(cmd)
                .args(args)
                .output()
                .is_ok_and(|o| o.status.success())
        };
        let ok = std::fs::File::create(&img)
            .and_then(|f| f.set_len(16 << 20))
            .is_ok()
            && run("mkfs.ext4", &["-q".as_ref(), "-F".as_ref(), img.as_ref()])
            && run(
                "mount",
                &["-o".as_ref(), "loop".as_ref(), img.as_ref(), at.as_ref()],
            );
        ok.then_some(Mount { at, frozen: false })
    }

    fn freeze(&mut self, on: bool) {
        let flag = if on { "-f" } else { "-u" };
        let s = Command::new("fsfreeze")
            .arg(flag)
            .arg(&self.at)
            .status()
            .expect("running fsfreeze");
        assert!(s.success(), "fsfreeze {flag} {} failed", self.at.display());
        self.frozen = on;
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if self.frozen {
            let _ = Command::new("fsfreeze").arg("-u").arg(&self.at).status();
        }
        let _ = Command::new("umount").arg("-l").arg(&self.at).status();
    }
}

/// The number in `said`'s line that ends with `tail` (`N dumps written`).
fn count_before(said: &str, tail: &str) -> Option<u64> {
    said.lines().find_map(|l| {
        l.strip_prefix("live --record: ")?
            .split_once(tail)?
            .0
            .parse()
            .ok()
    })
}

#[test]
fn a_third_dump_while_two_are_outstanding_is_skipped_and_said() {
    if !prereq::require(
        "root",
        prereq::is_root(),
        "run as root: a veth pair, a capture and a loop mount",
    ) || !prereq::require(
        "fsfreeze",
        prereq::have_command("fsfreeze", "--version"),
        "apt install util-linux",
    ) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mount = Mount::new(dir.path());
    if !prereq::require(
        "a loop-mounted ext4",
        mount.is_some(),
        "mkfs.ext4 (e2fsprogs) and a free loop device",
    ) {
        return;
    }
    let mut mount = mount.expect("checked");
    let rec = mount.at.join("dumps");
    std::fs::create_dir(&rec).expect("the dump directory");
    let err = dir.path().join("stderr");
    let veth = Veth::new("rbsy");
    let args = [
        "--record".as_ref(),
        rec.as_os_str(),
        "--record-after".as_ref(),
        "100ms".as_ref(),
        "--duration".as_ref(),
        "120".as_ref(),
    ];
    let mut live = Live(Some(start_live(&veth.0, &args, &err)));
    let child = live.0.as_ref().expect("just started");
    mount.freeze(true);
    // Each SIGUSR1 after the last dump was handed over starts the next,
    // handed over once a frame comes after its 100 ms after-window (the
    // injected capture); the first blocks in the frozen file system, the
    // second waits, and one after them must be skipped. A trigger that
    // comes while a dump gathers its window joins it, so go on until the
    // skip is said.
    let start = Instant::now();
    let said = loop {
        signal(child, libc::SIGUSR1);
        sleep(Duration::from_millis(200));
        inject(&veth.peer(), &capture("v3-inline.pcap"));
        let said = std::fs::read_to_string(&err).unwrap_or_default();
        if said.contains("live --record: skipped the dump of") {
            break said;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no dump skipped in 60 s of SIGUSR1 with the disk frozen:\n{said}"
        );
    };
    assert!(
        said.contains("the writer is still writing the two before it"),
        "{said}"
    );
    assert!(!said.contains("live --record: wrote"), "{said}");
    mount.freeze(false);
    let said = stop_live(live.0.take().expect("still running"), &err);
    let written = count_before(&said, " dumps written").expect("the summary line");
    let skipped = count_before(&said, " dumps skipped").expect("the skipped line");
    assert!(skipped >= 1, "{said}");
    // The two outstanding, and the one the end of the run may write.
    assert!((2..=3).contains(&written), "{said}");
    let dumps: Vec<PathBuf> = std::fs::read_dir(&rec)
        .expect("the dump directory")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    assert_eq!(dumps.len() as u64, written, "{dumps:?}\n{said}");
    for d in &dumps {
        let mut r = PcapReader::open(d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        while r.next_packet().expect("a whole dump").is_some() {}
    }
}
