//! `live` on a veth pair of its own: the pair, injecting a capture into
//! its peer, starting the real binary on it and waiting for what it says.
//! Shared by the flight recorder's tests (`recorder.rs`, `recorder_soak.rs`,
//! `recorder_busy.rs`). A pair per test (not `lo`): the other loopback
//! tests may run at the same time. Needs root (CAP_NET_ADMIN for the pair,
//! CAP_NET_RAW for the capture): the callers check with `prereq` first.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::sleep;
use std::time::{Duration, Instant};

use rdma_analyzer::sources::pcap::PcapReader;

pub const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

/// A bundled capture (`captures/NAME`).
pub fn capture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../captures")
        .join(name)
}

/// A veth pair named after `prefix` and the test process, deleted when
/// dropped.
pub struct Veth(pub String);

impl Veth {
    pub fn new(prefix: &str) -> Veth {
        let a = format!("{prefix}{}", std::process::id() % 100_000);
        let b = format!("{a}p");
        let ip = |args: &[&str]| {
            let s = Command::new("ip").args(args).status().expect("running ip");
            assert!(s.success(), "ip {args:?} failed");
        };
        ip(&["link", "add", &a, "type", "veth", "peer", "name", &b]);
        ip(&["link", "set", &a, "up"]);
        ip(&["link", "set", &b, "up"]);
        Veth(a)
    }

    /// The end frames are injected into.
    pub fn peer(&self) -> String {
        format!("{}p", self.0)
    }
}

impl Drop for Veth {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["link", "del", &self.0]).status();
    }
}

/// Every frame of `pcap`.
fn frames_of(pcap: &Path) -> Vec<Vec<u8>> {
    let mut frames = Vec::new();
    let mut r = PcapReader::open(pcap).expect("capture");
    while let Some(p) = r.next_packet().expect("frame") {
        frames.push(p.data.to_vec());
    }
    frames
}

fn injector(iface: &str) -> pcap::Capture<pcap::Active> {
    pcap::Capture::from_device(iface)
        .and_then(|c| c.open())
        .expect("opening the veth peer for injection")
}

/// Sends every frame of `pcap` out of `iface` once; returns how many.
pub fn inject(iface: &str, pcap: &Path) -> u64 {
    let mut out = injector(iface);
    let mut n = 0;
    for f in frames_of(pcap) {
        out.sendpacket(f.as_slice()).expect("pcap_inject");
        n += 1;
        if n % 64 == 0 {
            sleep(Duration::from_millis(2));
        }
    }
    n
}

/// Sends `pcap`'s frames out of `iface` in a loop until `stop`; counts them.
pub fn inject_loop(iface: String, pcap: PathBuf, stop: Arc<AtomicBool>, sent: Arc<AtomicU64>) {
    let mut out = injector(&iface);
    let frames = frames_of(&pcap);
    while !stop.load(Ordering::Relaxed) {
        for (i, f) in frames.iter().enumerate() {
            // A dropped frame (the veth's queue full) is the capture's
            // business, not the test's.
            if out.sendpacket(f.as_slice()).is_ok() {
                sent.fetch_add(1, Ordering::Relaxed);
            }
            if i % 64 == 63 {
                sleep(Duration::from_millis(2));
            }
            if stop.load(Ordering::Relaxed) {
                return;
            }
        }
    }
}

/// Sends `pcap`'s frames out of `iface` in a loop as fast as the veth
/// takes them, until `stop`; counts them.
pub fn flood(iface: String, pcap: PathBuf, stop: Arc<AtomicBool>, sent: Arc<AtomicU64>) {
    let mut out = injector(&iface);
    let frames = frames_of(&pcap);
    while !stop.load(Ordering::Relaxed) {
        for f in &frames {
            if out.sendpacket(f.as_slice()).is_ok() {
                sent.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Waits until the text of `file` contains `what` (within `limit`);
/// returns the text.
pub fn wait_for_text(file: &Path, what: &str, limit: Duration) -> String {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        if text.contains(what) {
            return text;
        }
        assert!(
            start.elapsed() < limit,
            "no {what:?} in {} after {limit:?}:\n{text}",
            file.display()
        );
        sleep(Duration::from_millis(50));
    }
}

/// Starts `rdma-analyzer live -i IFACE --no-tui --json-out /dev/null`
/// with `args` after, its standard error into `err`, and waits until it
/// captures.
pub fn start_live(iface: &str, args: &[&std::ffi::OsStr], err: &Path) -> Child {
    let head = ["live", "-i", iface, "--no-tui", "--json-out", "/dev/null"];
    let mut all: Vec<&std::ffi::OsStr> = head.iter().map(std::ffi::OsStr::new).collect();
    all.extend_from_slice(args);
    spawn_live(&all, err)
}

/// Starts `rdma-analyzer ARGS` (a `live` that captures), its standard
/// error into `err`, and waits until it captures.
pub fn spawn_live(args: &[&std::ffi::OsStr], err: &Path) -> Child {
    let child = Command::new(BIN)
        .args(args)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(err).expect("stderr file"))
        .spawn()
        .expect("starting live");
    wait_for_text(err, "capturing on", Duration::from_secs(20));
    child
}

/// Sends `sig` to the child.
pub fn signal(child: &Child, sig: i32) {
    #[allow(unsafe_code)]
    // SAFETY: kill(2) on the child we started; no memory is passed.
    unsafe {
        libc::kill(child.id() as i32, sig);
    }
}

/// Ends the child with SIGINT, as Ctrl-C does, and returns what it said;
/// it must end successfully.
pub fn stop_live(mut child: Child, err: &Path) -> String {
    signal(&child, libc::SIGINT);
    let status = child.wait().expect("live ends");
    let said = std::fs::read_to_string(err).unwrap_or_default();
    assert!(status.success(), "live failed: {said}");
    said
}
