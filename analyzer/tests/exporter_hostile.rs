//! The metrics exporter (`live --metrics`) under hostile clients, on
//! loopback (issue 23): a client that pipelines requests and never reads,
//! hundreds of half-open connections under a 1024-descriptor limit (the
//! real binary, as systemd starts it), a header line without an end, a
//! slowloris, and `accept` failing for want of descriptors. Each test is
//! bounded in time; each ends with a scrape that works.

#![allow(unsafe_code)] // setrlimit for the descriptor-exhaustion test

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rdma_analyzer::output::exporter::{Exporter, Limits};
use rdma_analyzer::output::metrics::{Metrics, MetricsConfig};

#[path = "common/prereq.rs"]
mod prereq;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

fn exporter(limits: Limits) -> (Metrics, Exporter) {
    let m = Metrics::new(MetricsConfig::default());
    let e = Exporter::with_limits(
        "127.0.0.1:0".parse().expect("addr"),
        m.exposition(None),
        limits,
    )
    .expect("exporter");
    (m, e)
}

fn quick() -> Limits {
    Limits {
        max_connections: 64,
        header_timeout: Duration::from_secs(1),
        max_header_bytes: 16 << 10,
        connection_lifetime: Duration::from_secs(3),
        grace: Duration::from_secs(1),
    }
}

/// One scrape on a new connection: status and body, or why not.
fn scrape(addr: SocketAddr, within: Duration) -> Result<(u16, String), String> {
    let mut s = TcpStream::connect_timeout(&addr, within).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(within))
        .map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(within))
        .map_err(|e| e.to_string())?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .map_err(|e| format!("send: {e}"))?;
    let mut r = BufReader::new(s);
    let mut status = String::new();
    r.read_line(&mut status)
        .map_err(|e| format!("status line: {e}"))?;
    let code = status
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no status in {status:?}"))?;
    let mut rest = String::new();
    r.read_to_string(&mut rest)
        .map_err(|e| format!("body: {e}"))?;
    Ok((code, rest))
}

/// The value of a counter sample `name` in a scrape's body.
fn sample(body: &str, name: &str) -> Option<u64> {
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

fn vm_kb(pid: &str, field: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    s.lines()
        .find_map(|l| {
            l.strip_prefix(field)?
                .trim()
                .strip_suffix(" kB")?
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

/// (a) A client writes requests as fast as it can and never reads a
/// response: its own connection fills up, other clients' scrapes are
/// answered at once, and the connection is dropped at the end of its
/// lifetime.
#[test]
fn a_pipelining_client_that_never_reads_blocks_no_one() {
    let (_m, e) = exporter(quick());
    let addr = e.addr();
    let mut hog = TcpStream::connect(addr).expect("connect");
    hog.set_write_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    let req = b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n".repeat(64);
    let started = Instant::now();
    let mut sent = 0usize;
    // Until the kernel's buffers on both sides are full: the exporter has
    // stopped reading because its responses cannot be written.
    while started.elapsed() < Duration::from_secs(2) {
        match hog.write(&req) {
            Ok(n) => sent += n,
            Err(_) => break,
        }
    }
    assert!(sent > 0, "the hog could not send anything");
    for _ in 0..5 {
        let t = Instant::now();
        let (code, body) = scrape(addr, Duration::from_secs(2)).expect("a scrape beside the hog");
        assert_eq!(code, 200);
        assert!(
            body.contains("rdma_exporter_connections_accepted_total"),
            "{body}"
        );
        assert!(
            t.elapsed() < Duration::from_secs(1),
            "scrape took {:?}",
            t.elapsed()
        );
    }
    // Lifetime 3 s + grace 1 s: the hog is cut off, and counted.
    let deadline = Instant::now() + Duration::from_secs(10);
    while e.counters().timed_out.load(Ordering::Relaxed) == 0 {
        assert!(Instant::now() < deadline, "the hog was never dropped");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (_, body) = scrape(addr, Duration::from_secs(2)).expect("scrape");
    assert_eq!(
        sample(&body, "rdma_exporter_connections_timed_out_total"),
        Some(1),
        "{body}"
    );
    // The hog's socket was closed: reading drains what was sent, then ends.
    hog.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut buf = vec![0u8; 1 << 20];
    let closed = loop {
        match hog.read(&mut buf) {
            Ok(0) => break true,
            Ok(_) => {}
            Err(e) => break e.kind() == std::io::ErrorKind::ConnectionReset,
        }
    };
    assert!(closed, "the hog's connection is still open");
}

/// (c) A header line that never ends: the exporter stops reading it at its
/// buffer limit and closes the connection; its memory does not grow with
/// what the client tries to send (before: +518 MB for 512 MiB).
#[test]
fn a_header_without_an_end_is_cut_off_and_costs_no_memory() {
    let (_m, e) = exporter(quick());
    let addr = e.addr();
    let before = vm_kb("self", "VmRSS:");
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_write_timeout(Some(Duration::from_secs(3)))
        .expect("timeout");
    s.write_all(b"GET /metrics HTTP/1.1\r\nX-Long: ")
        .expect("start");
    let chunk = vec![b'a'; 1 << 20];
    let mut sent = 0usize;
    let cut = loop {
        match s.write(&chunk) {
            Ok(n) => sent += n,
            Err(e) => break Some(e),
        }
        if sent >= 256 << 20 {
            break None;
        }
    };
    assert!(
        cut.is_some(),
        "256 MiB of one header line were taken without the connection being closed"
    );
    let after = vm_kb("self", "VmRSS:");
    // The client's own 1 MiB chunk and socket buffers are all that may show.
    assert!(
        after.saturating_sub(before) < 16 << 10,
        "RSS grew from {before} kB to {after} kB after {sent} bytes of header"
    );
    assert!(sent < 64 << 20, "{sent} bytes were read before the cut");
    let (code, _) = scrape(addr, Duration::from_secs(2)).expect("a scrape afterwards");
    assert_eq!(code, 200);
    assert!(e.counters().http_errors.load(Ordering::Relaxed) >= 1);
}

/// (d) Slowloris: a byte of header every 200 ms is cut off by the header
/// timeout (1 s here, 5 s by default); so is a connection that sends
/// nothing at all.
#[test]
fn slowloris_and_silent_connections_are_timed_out() {
    let (_m, e) = exporter(quick());
    let addr = e.addr();
    let mut slow = TcpStream::connect(addr).expect("connect");
    let silent = TcpStream::connect(addr).expect("connect");
    let started = Instant::now();
    let mut closed_after = None;
    for b in b"GET /metrics HTTP/1.1\r\nHost: a-very-slow-client.example\r\n\r\n"
        .iter()
        .cycle()
    {
        if slow.write_all(&[*b]).is_err() {
            closed_after = Some(started.elapsed());
            break;
        }
        if started.elapsed() > Duration::from_secs(8) {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let closed_after = closed_after.expect("the slow client was never cut off");
    // Header timeout (1 s), then the write after the close notices it.
    assert!(
        closed_after < Duration::from_secs(4),
        "cut off after {closed_after:?}"
    );
    // The silent one is gone too: a read sees the end (or a reset).
    let mut silent = silent;
    silent
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut buf = [0u8; 512];
    let t = Instant::now();
    let r = silent.read(&mut buf);
    assert!(
        !matches!(&r, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut),
        "a silent connection was still open after {:?}",
        t.elapsed() + closed_after
    );
    let (code, _) = scrape(addr, Duration::from_secs(2)).expect("a scrape afterwards");
    assert_eq!(code, 200);
}

/// The connection cap: a new connection beyond it closes the oldest (held
/// open by a client that sends nothing), so the scrape is served at once,
/// and the eviction is counted.
#[test]
fn a_connection_beyond_the_cap_evicts_the_oldest_and_is_served() {
    let limits = Limits {
        max_connections: 8,
        header_timeout: Duration::from_secs(30),
        connection_lifetime: Duration::from_secs(60),
        ..quick()
    };
    let (_m, e) = exporter(limits);
    let addr = e.addr();
    let mut held: Vec<TcpStream> = Vec::new();
    for _ in 0..8 {
        held.push(TcpStream::connect(addr).expect("connect"));
        // In order: the first is the oldest.
        let deadline = Instant::now() + Duration::from_secs(5);
        while e.counters().accepted.load(Ordering::Relaxed) < held.len() as u64 {
            assert!(Instant::now() < deadline, "not accepted");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let t = Instant::now();
    let (code, body) = scrape(addr, Duration::from_secs(2)).expect("a ninth connection");
    assert_eq!(code, 200);
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    assert_eq!(
        sample(&body, "rdma_exporter_connections_evicted_total"),
        Some(1),
        "{body}"
    );
    // The oldest was closed; the second oldest is still open.
    let ended = |s: &mut TcpStream| {
        s.set_read_timeout(Some(Duration::from_millis(300)))
            .expect("timeout");
        let mut b = [0u8; 16];
        match s.read(&mut b) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
        }
    };
    assert!(ended(&mut held[0]), "the oldest is still open");
    assert!(!ended(&mut held[1]), "the second oldest was closed too");
}

fn nofile() -> (u64, u64) {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) };
    assert_eq!(rc, 0, "getrlimit");
    (r.rlim_cur, r.rlim_max)
}

fn set_nofile(cur: u64, max: u64) {
    let r = libc::rlimit {
        rlim_cur: cur,
        rlim_max: max,
    };
    // SAFETY: setrlimit reads the struct it is given.
    let rc = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) };
    assert_eq!(rc, 0, "setrlimit");
}

fn open_fds() -> u64 {
    std::fs::read_dir("/proc/self/fd").expect("fds").count() as u64
}

/// `accept` failing for want of descriptors (the process's limit reached,
/// as 510 half-open connections did under systemd's 1024 before): the
/// failures are counted and retried, the listener lives on, and once
/// descriptors are free again scrapes are served. The cap is set above
/// the descriptor limit so that the limit, not the cap, is what is hit.
#[test]
fn accept_out_of_descriptors_is_retried_and_the_listener_survives() {
    let limits = Limits {
        max_connections: 4096,
        connection_lifetime: Duration::from_secs(60),
        header_timeout: Duration::from_secs(60),
        ..quick()
    };
    let (_m, e) = exporter(limits);
    let addr = e.addr();
    let (cur, max) = nofile();
    let limit = open_fds() + 64;
    set_nofile(limit, max);
    let mut held = Vec::new();
    // Both ends share the limit: the client's sockets stop it first or the
    // exporter's accepts fail; either way the limit is reached.
    for _ in 0..limit {
        match TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
            Ok(s) => held.push(s),
            Err(_) => break,
        }
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while e.counters().accept_errors.load(Ordering::Relaxed) == 0 {
        if Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let errors = e.counters().accept_errors.load(Ordering::Relaxed);
    drop(held);
    set_nofile(cur, max);
    assert!(
        errors > 0,
        "accept never failed: the test did not reach the limit"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let body = loop {
        if let Ok((200, body)) = scrape(addr, Duration::from_secs(1)) {
            break body;
        }
        assert!(Instant::now() < deadline, "the listener did not come back");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        sample(&body, "rdma_exporter_accept_errors_total").is_some_and(|n| n >= errors),
        "{body}"
    );
}

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// (b) The real binary, started with a 1024-descriptor limit (systemd's
/// default): 600 half-open connections (connected, nothing sent) neither
/// stop it nor its listener, and once they close scrapes are served again.
/// A scrape is served while they are held; its RSS stays within a few MB
/// of what it was.
#[test]
fn live_survives_600_half_open_connections_under_1024_descriptors() {
    if !prereq::root("live -i lo needs CAP_NET_RAW")
        || !prereq::require(
            "prlimit",
            prereq::have_command("prlimit", "--version"),
            "util-linux",
        )
    {
        return;
    }
    let err = std::env::temp_dir().join(format!("rdma-exporter-b-{}.err", std::process::id()));
    let stats = std::env::temp_dir().join(format!("rdma-exporter-b-{}.json", std::process::id()));
    let live = Command::new("prlimit")
        .args(["--nofile=1024:1024", "--"])
        .arg(BIN)
        .args(["live", "-i", "lo", "--no-tui", "--metrics", "127.0.0.1:0"])
        // A small capture ring on a port nothing uses: its pages filling
        // with other tests' loopback traffic would show as RSS growth.
        .args(["--capture-buffer", "1M", "--bpf", "udp port 47913"])
        .arg("--stats-out")
        .arg(&stats)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).expect("stderr file"))
        .spawn()
        .expect("starting live");
    let mut live = Running(live);
    let pid = live.0.id().to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    let addr: SocketAddr = loop {
        let said = std::fs::read_to_string(&err).unwrap_or_default();
        if let Some(a) = said.lines().find_map(|l| {
            l.strip_prefix("live: metrics at http://")?
                .strip_suffix("/metrics")
        }) {
            break a.parse().expect("the address live gave");
        }
        assert!(
            live.0.try_wait().expect("wait").is_none(),
            "live ended: {said}"
        );
        assert!(Instant::now() < deadline, "live did not start: {said}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let (code, _) = scrape(addr, Duration::from_secs(5)).expect("first scrape");
    assert_eq!(code, 200);
    let rss_before = vm_kb(&pid, "VmRSS:");
    let mut held = Vec::new();
    for _ in 0..600 {
        if let Ok(s) = TcpStream::connect_timeout(&addr, Duration::from_millis(500)) {
            held.push(s);
        }
    }
    assert!(held.len() >= 500, "only {} connections made", held.len());
    let rss_during = vm_kb(&pid, "VmRSS:");
    // Served while they are held: the oldest make room.
    let (code, _) = scrape(addr, Duration::from_secs(2)).expect("a scrape beside 600 held");
    assert_eq!(code, 200);
    assert!(
        live.0.try_wait().expect("wait").is_none(),
        "live ended under 600 half-open connections"
    );
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(15);
    let body = loop {
        if let Ok((200, body)) = scrape(addr, Duration::from_secs(2)) {
            break body;
        }
        assert!(
            Instant::now() < deadline,
            "no scrape served after the connections closed"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let evicted =
        sample(&body, "rdma_exporter_connections_evicted_total").expect("evicted counter");
    assert!(
        evicted >= 400,
        "{evicted} evicted of 600 over a cap of 64\n{body}"
    );
    assert!(
        rss_during.saturating_sub(rss_before) < 32 << 10,
        "RSS {rss_before} kB -> {rss_during} kB under 600 connections"
    );
    let said = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(
        live.0.try_wait().expect("wait").is_none(),
        "live ended: {said}"
    );
    // Stopped as systemd stops it: the exporter's figures are in --stats-out.
    let term = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(term.success());
    let status = live.0.wait().expect("live");
    let said = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(status.success(), "live after SIGTERM: {status}\n{said}");
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&stats).expect("--stats-out")).expect("JSON");
    let ex = &doc["exporter"];
    assert!(
        ex["evicted"].as_u64().is_some_and(|n| n >= evicted) && ex["accepted"].as_u64() > Some(500),
        "{doc}"
    );
    let _ = std::fs::remove_file(&err);
    let _ = std::fs::remove_file(&stats);
}
