//! Every file the tool writes, written safely (issue 23): the real binary
//! against a planted symlink at the temporary-name pattern, a symlink, a
//! device node and a FIFO as the target, a stale temporary file of a killed
//! run; and the same rules through the module for streams written in place
//! (a hard link too).

use std::fs::File;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use rdma_analyzer::files::{
    check_target, create_in_place, AtomicFile, STALE_AFTER, TEMP_PREFIX, TEMP_SUFFIX,
};

#[path = "common/prereq.rs"]
mod prereq;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rdma-safe-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn capture() -> PathBuf {
    repo().join("captures/v42-inline.pcap")
}

fn metrics_out(target: &Path) -> std::process::Output {
    Command::new(BIN)
        .args(["report", "--metrics-out"])
        .arg(target)
        .arg(capture())
        .output()
        .expect("report")
}

fn mknod(path: &Path, kind: &str) {
    let mut c = Command::new("mknod");
    c.arg(path).arg(kind);
    if kind == "c" {
        // /dev/null's numbers, made in our own folder: /dev is not touched.
        c.args(["1", "3"]);
    }
    let s = c.status().expect("mknod");
    assert!(s.success(), "mknod {kind}");
}

/// The refusal: a non-zero exit, a message naming the path and what it is,
/// and the thing itself untouched.
fn assert_refused(o: &std::process::Output, target: &Path, what: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "written to {what}: {err}");
    assert!(
        err.contains(&target.display().to_string()) && err.contains(what),
        "the message should name the path and say it is {what}:\n{err}"
    );
}

#[test]
fn a_symlink_as_target_is_refused_and_not_followed() {
    let d = temp_dir("symlink-target");
    let victim = d.join("victim");
    std::fs::write(&victim, "precious\n").expect("victim");
    let target = d.join("rdma.prom");
    std::os::unix::fs::symlink(&victim, &target).expect("symlink");
    let o = metrics_out(&target);
    assert_refused(&o, &target, "a symbolic link");
    assert_eq!(
        std::fs::read_to_string(&victim).expect("victim"),
        "precious\n"
    );
    assert!(std::fs::symlink_metadata(&target)
        .expect("still there")
        .file_type()
        .is_symlink());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn symlinks_planted_at_the_temporary_name_pattern_are_not_followed() {
    let d = temp_dir("planted");
    let victim = d.join("victim");
    std::fs::write(&victim, "precious\n").expect("victim");
    // The old predictable names (any PID near ours) and names with our
    // prefix: none can be the one chosen, none is followed or removed.
    let mut planted = Vec::new();
    let me = std::process::id();
    for pid in me..me + 200 {
        planted.push(d.join(format!(".rdma.prom.{pid}.tmp")));
    }
    for i in 0..50 {
        planted.push(d.join(format!("{TEMP_PREFIX}{i:016}{TEMP_SUFFIX}")));
    }
    for p in &planted {
        std::os::unix::fs::symlink(&victim, p).expect("plant");
    }
    let target = d.join("rdma.prom");
    let o = metrics_out(&target);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        std::fs::read_to_string(&victim).expect("victim"),
        "precious\n"
    );
    let text = std::fs::read_to_string(&target).expect("the metrics");
    assert!(text.contains("rdma_rpc_transactions_total"), "{text}");
    assert!(std::fs::symlink_metadata(&target)
        .expect("target")
        .is_file());
    for p in &planted {
        assert!(std::fs::symlink_metadata(p)
            .expect("planted")
            .file_type()
            .is_symlink());
    }
    // No temporary file of ours is left.
    let left: Vec<_> = std::fs::read_dir(&d)
        .expect("dir")
        .flatten()
        .filter(|e| std::fs::symlink_metadata(e.path()).is_ok_and(|m| m.is_file()))
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_device_node_as_target_is_refused_and_stays_a_device() {
    if !prereq::root("mknod needs root") {
        return;
    }
    let d = temp_dir("device");
    let target = d.join("null");
    mknod(&target, "c");
    let o = metrics_out(&target);
    assert_refused(&o, &target, "a character device");
    let m = std::fs::symlink_metadata(&target).expect("node");
    assert!(m.file_type().is_char_device(), "replaced: {m:?}");
    assert_eq!(m.rdev(), libc::makedev(1, 3));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_fifo_as_target_is_refused_without_blocking() {
    let d = temp_dir("fifo");
    let target = d.join("pipe");
    mknod(&target, "p");
    let t = Instant::now();
    let o = metrics_out(&target);
    assert_refused(&o, &target, "a FIFO");
    assert!(t.elapsed() < Duration::from_secs(20));
    // Streams too: opened in place, a FIFO is refused, not waited on.
    let t = Instant::now();
    let e = create_in_place(&target).expect_err("a FIFO");
    assert!(e.to_string().contains("a FIFO"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(1));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_folder_as_target_is_refused() {
    let d = temp_dir("folder");
    let target = d.join("sub");
    std::fs::create_dir(&target).expect("dir");
    let o = metrics_out(&target);
    assert_refused(&o, &target, "a folder");
    assert!(target.is_dir());
    let _ = std::fs::remove_dir_all(&d);
}

fn age(path: &Path, by: Duration) {
    let f = File::options().write(true).open(path).expect("open");
    f.set_modified(SystemTime::now() - by).expect("mtime");
}

/// A killed run's temporary file (ours: prefix, this user, regular, old,
/// unlocked) is removed by the next run into the folder; a young one, one
/// locked by a running writer, a symlink and someone else's are kept.
#[test]
fn stale_temporary_files_of_a_killed_run_are_removed_by_the_next() {
    let d = temp_dir("stale");
    let name = |s: &str| d.join(format!("{TEMP_PREFIX}{s}{TEMP_SUFFIX}"));
    let stale = name("killedrun0000000");
    std::fs::write(&stale, vec![0u8; 1 << 20]).expect("stale");
    age(&stale, STALE_AFTER * 2);
    let young = name("stillwriting0000");
    std::fs::write(&young, b"x").expect("young");
    let locked = name("lockedbywriter00");
    std::fs::write(&locked, b"x").expect("locked");
    age(&locked, STALE_AFTER * 2);
    let held = File::open(&locked).expect("open");
    #[allow(unsafe_code)]
    // SAFETY: flock on a descriptor `held` owns.
    let rc = unsafe {
        use std::os::fd::AsRawFd;
        libc::flock(held.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB)
    };
    assert_eq!(rc, 0, "flock");
    let other = name("someoneelses0000");
    std::fs::write(&other, b"x").expect("other");
    age(&other, STALE_AFTER * 2);
    let chowned = Command::new("chown")
        .args(["65534:65534"])
        .arg(&other)
        .status()
        .is_ok_and(|s| s.success());
    let unrelated = d.join("notes.tmp");
    std::fs::write(&unrelated, b"x").expect("unrelated");
    age(&unrelated, STALE_AFTER * 2);

    let o = metrics_out(&d.join("rdma.prom"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(!stale.exists(), "the stale one is still there");
    assert!(
        err.contains(&stale.display().to_string()) && err.contains("removed"),
        "the removal is said:\n{err}"
    );
    assert!(young.exists() && locked.exists() && unrelated.exists());
    if chowned {
        assert!(other.exists(), "another user's file was removed");
    }
    drop(held);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn streams_in_place_refuse_links_and_empty_a_regular_file() {
    let d = temp_dir("inplace");
    let victim = d.join("victim");
    std::fs::write(&victim, "precious\n").expect("victim");
    let link = d.join("link.pcapng");
    std::os::unix::fs::symlink(&victim, &link).expect("symlink");
    let e = create_in_place(&link).expect_err("a symlink");
    assert!(e.to_string().contains("a symbolic link"), "{e}");
    let hard = d.join("hard.pcapng");
    std::fs::hard_link(&victim, &hard).expect("hard link");
    let e = create_in_place(&hard).expect_err("a hard link");
    assert!(e.to_string().contains("hard link"), "{e}");
    assert_eq!(
        std::fs::read_to_string(&victim).expect("victim"),
        "precious\n"
    );
    let plain = d.join("old.jsonl");
    std::fs::write(&plain, "old run\n").expect("plain");
    let f = create_in_place(&plain).expect("a regular file");
    assert_eq!(f.metadata().expect("meta").len(), 0, "emptied");
    let new = d.join("new.jsonl");
    create_in_place(&new).expect("a new name");
    assert!(new.is_file());
    assert!(check_target(&d).is_err(), "a folder");
    let _ = std::fs::remove_dir_all(&d);
}

/// A file written whole is not visible under its name until committed, and
/// a dropped one leaves nothing.
#[test]
fn atomic_files_appear_whole_or_not_at_all() {
    use std::io::Write;
    let d = temp_dir("atomic");
    let target = d.join("out.json");
    std::fs::write(&target, "old\n").expect("old");
    let mut f = AtomicFile::create(&target).expect("create");
    f.write_all(b"new\n").expect("write");
    assert_eq!(std::fs::read_to_string(&target).expect("old"), "old\n");
    let tmp = f.temp_path().to_path_buf();
    let tmp_name = tmp
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    assert!(tmp_name.starts_with(TEMP_PREFIX) && tmp_name.ends_with(TEMP_SUFFIX));
    f.commit().expect("commit");
    assert_eq!(std::fs::read_to_string(&target).expect("new"), "new\n");
    assert!(!tmp.exists());
    let mut f = AtomicFile::create(&target).expect("create");
    f.write_all(b"never\n").expect("write");
    let tmp = f.temp_path().to_path_buf();
    drop(f);
    assert!(!tmp.exists(), "a dropped file was left");
    assert_eq!(std::fs::read_to_string(&target).expect("new"), "new\n");
    rdma_analyzer::files::write_whole(&d.join("whole"), b"x").expect("whole");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn stats_out_refuses_a_symlink() {
    if !prereq::root("live -i lo needs CAP_NET_RAW") {
        return;
    }
    let d = temp_dir("stats");
    let victim = d.join("victim");
    std::fs::write(&victim, "precious\n").expect("victim");
    let target = d.join("stats.json");
    std::os::unix::fs::symlink(&victim, &target).expect("symlink");
    let o = Command::new(BIN)
        .args([
            "live",
            "-i",
            "lo",
            "--no-tui",
            "--duration",
            "0.5",
            "--stats-out",
        ])
        .arg(&target)
        .output()
        .expect("live");
    assert_refused(&o, &target, "a symbolic link");
    assert_eq!(
        std::fs::read_to_string(&victim).expect("victim"),
        "precious\n"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn live_write_and_json_out_refuse_a_symlink_before_capturing() {
    if !prereq::root("live -i lo needs CAP_NET_RAW") {
        return;
    }
    let d = temp_dir("livewrite");
    let victim = d.join("victim");
    std::fs::write(&victim, "precious\n").expect("victim");
    for flag in ["--write", "--json-out"] {
        let target = d.join(format!("link{flag}"));
        std::os::unix::fs::symlink(&victim, &target).expect("symlink");
        let o = Command::new(BIN)
            .args(["live", "-i", "lo", "--no-tui", "--duration", "0.5", flag])
            .arg(&target)
            .output()
            .expect("live");
        assert_refused(&o, &target, "a symbolic link");
        assert_eq!(
            std::fs::read_to_string(&victim).expect("victim"),
            "precious\n",
            "{flag} wrote through the link"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// The null device is the one non-regular target a stream may have
/// (`--json-out /dev/null`, what the benchmarks use): written in place,
/// nothing is replaced. Any other device, or a link to the null device, is
/// still refused; files written whole refuse it too.
#[test]
fn streams_may_write_to_the_null_device_and_nothing_else_that_is_not_a_file() {
    if !prereq::root("mknod needs root") {
        return;
    }
    let d = temp_dir("null");
    let null = d.join("null");
    mknod(&null, "c");
    let mut f = create_in_place(&null).expect("the null device");
    std::io::Write::write_all(&mut f, b"discarded").expect("write");
    let zero = d.join("zero");
    let ok = Command::new("mknod")
        .arg(&zero)
        .args(["c", "1", "5"])
        .status()
        .expect("mknod");
    assert!(ok.success(), "mknod c 1 5");
    let e = create_in_place(&zero).expect_err("another device");
    assert!(e.to_string().contains("device"), "{e}");
    let link = d.join("link");
    std::os::unix::fs::symlink(&null, &link).unwrap();
    create_in_place(&link).expect_err("a link to the null device");
    assert!(
        check_target(&null).is_err(),
        "files written whole refuse it"
    );
    let _ = std::fs::remove_dir_all(&d);
}
