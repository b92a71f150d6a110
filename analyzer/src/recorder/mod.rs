//! `live --record DIR`: a flight recorder. The last seconds of frames and
//! probe records stay in a bounded ring ([`ring`]); when a trigger fires
//! ([`trigger`]) recording goes on for `--record-after`, then the window
//! is written to `DIR` as a pcapng Wireshark opens ([`dump`]), and the
//! oldest dumps go once there are more than `--record-keep` or more than
//! `--record-max-bytes` of them.
//!
//! ```text
//!  frames, probe records ──► Ring (time- and byte-bounded) ──┐
//!  findings ──► comments on their frames; triggers ─────────┼─► after the after-window: DIR/rdma-<time>-<trigger>.pcapng
//!  SIGUSR1 ──► a flag looked at every tick ──────────────────┘
//! ```
//!
//! A trigger that fires while a dump is pending extends it: one dump per
//! incident, naming every trigger in its section comment.

pub mod dump;
pub mod probe_text;
pub mod read;
pub mod ring;
pub mod trigger;
mod writer;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::diagnosis::Diagnosis;
use crate::engine::kernel::event::Probe;
use crate::engine::{Addr, CmState, ConnId, Engine, Finding, Frame};
use crate::output::clock::{Clock, TimeFormat};
use crate::pipeline::{End, Flow, Progress, Sink};
use ring::{Entry, Item, Ring};
pub use trigger::Trigger;
use writer::Job;

/// How long past its after-window a dump waits for the traffic's clock
/// (frames still queued in the capture) before the wall clock writes it.
const GRACE_NS: u64 = 2_000_000_000;

/// How often the diagnosis is asked for its causes (`cause:` triggers).
const DIAGNOSE_EVERY_MS: u128 = 1000;

/// What `--record*` asked for.
#[derive(Debug, Clone)]
pub struct RecordConfig {
    /// Where dumps go.
    pub dir: PathBuf,
    /// Kept before a trigger, ns.
    pub before_ns: u64,
    /// Recorded after the last trigger, ns.
    pub after_ns: u64,
    /// The ring's bytes at most.
    pub ring_bytes: usize,
    /// Bytes of each frame kept; `None`: whole frames.
    pub snaplen: Option<u32>,
    /// What fires a dump.
    pub triggers: Vec<Trigger>,
    /// Dumps kept in `dir` at most.
    pub keep: usize,
    /// Bytes of dumps kept in `dir` at most.
    pub max_total: Option<u64>,
}

/// A dump whose after-window is still being recorded.
#[derive(Debug)]
pub(crate) struct Pending {
    /// When the first trigger fired (ns since the epoch).
    first_ns: u64,
    /// Written once the clock passes this.
    until_ns: u64,
    /// The file name's trigger.
    tag: String,
    /// Every trigger, with its time and reason.
    said: Vec<String>,
}

/// The flight recorder, a [`Sink`] beside the run's output.
pub struct Recorder {
    cfg: RecordConfig,
    ring: Ring,
    /// Set by the SIGUSR1 handler.
    signal: Arc<AtomicBool>,
    /// Set by the exporter's `POST /record`, when it serves one.
    http: Option<Arc<AtomicBool>>,
    pending: Option<Pending>,
    /// The latest time seen in the run (frames, probe records, wall clock).
    now_ns: u64,
    /// The latest frame's or probe record's time.
    traffic_ns: u64,
    diagnosis: Option<Diagnosis>,
    causes_seen: BTreeSet<String>,
    last_diagnosis: Option<Instant>,
    /// Each connection's last CM state, and the clients seen (reconnects).
    conns: BTreeMap<ConnId, CmState>,
    clients: BTreeSet<Addr>,
    /// The thread that writes dumps, from the first one on.
    writer: Option<writer::Writer>,
    /// The dumps this run wrote, in order (as far as the writer has said).
    pub written: Vec<PathBuf>,
    /// `ring.lost_busy` as of the last dump.
    lost_busy_said: u64,
    /// Dumps not written because the writer was two dumps behind.
    pub skipped: u64,
    /// What went wrong writing, for the run's messages.
    pub errors: Vec<String>,
    /// The ring's highest memory (snapshots being written included), bytes.
    pub peak_bytes: usize,
}

fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

fn utc(ts_ns: u64) -> String {
    Clock::new(TimeFormat::Utc).at(Some(ts_ns)).to_string()
}

impl Recorder {
    /// A recorder for `cfg`; `signal` is the flag SIGUSR1 sets.
    pub fn new(cfg: RecordConfig, signal: Arc<AtomicBool>) -> Recorder {
        let diagnosis = cfg
            .triggers
            .iter()
            .any(|t| matches!(t, Trigger::Cause(_)))
            .then(Diagnosis::default);
        Recorder {
            ring: Ring::new(cfg.before_ns.saturating_add(cfg.after_ns), cfg.ring_bytes),
            cfg,
            signal,
            http: None,
            pending: None,
            now_ns: 0,
            traffic_ns: 0,
            diagnosis,
            causes_seen: BTreeSet::new(),
            last_diagnosis: None,
            conns: BTreeMap::new(),
            clients: BTreeSet::new(),
            writer: None,
            lost_busy_said: 0,
            written: Vec::new(),
            skipped: 0,
            errors: Vec::new(),
            peak_bytes: 0,
        }
    }

    /// Takes `POST /record`'s flag: the `http` trigger.
    pub fn with_http(mut self, flag: Arc<AtomicBool>) -> Recorder {
        if !self.cfg.triggers.contains(&Trigger::Http) {
            self.cfg.triggers.push(Trigger::Http);
        }
        self.http = Some(flag);
        self
    }

    /// The ring's bytes now (snapshots being written included).
    pub fn ring_bytes(&self) -> usize {
        self.ring.bytes()
    }

    /// Frames and probe records not kept because dumps being written held
    /// the ring's memory.
    pub fn lost_while_writing(&self) -> u64 {
        self.ring.lost_busy
    }

    fn push(&mut self, e: Entry) {
        self.now_ns = self.now_ns.max(e.ts_ns);
        self.traffic_ns = self.traffic_ns.max(e.ts_ns);
        // At rate the loop may drain the capture for long between ticks:
        // the after-window ends, and SIGUSR1 is seen, by the traffic's
        // clock too, so the ring still holds the window when it is written.
        if self.signal.load(Ordering::Relaxed)
            || self
                .http
                .as_ref()
                .is_some_and(|h| h.load(Ordering::Relaxed))
        {
            self.check_signal();
        }
        if self.pending.as_ref().is_some_and(|p| e.ts_ns > p.until_ns) {
            self.maybe_write(false);
        }
        self.ring.push(e);
        self.peak_bytes = self.peak_bytes.max(self.ring.bytes());
    }

    /// A probe record, kept decoded: its text is made when a dump is
    /// written, on the writer's thread.
    pub fn probe(&mut self, p: &Probe) {
        self.push(Entry {
            ts_ns: p.meta.ts_ns,
            item: Item::Probe(p.clone()),
        });
    }

    fn check_signal(&mut self) {
        if self.signal.swap(false, Ordering::SeqCst) && self.cfg.triggers.contains(&Trigger::Signal)
        {
            self.fire(&Trigger::Signal, self.now_ns, "SIGUSR1 received");
        }
        if self
            .http
            .as_ref()
            .is_some_and(|h| h.swap(false, Ordering::SeqCst))
        {
            self.fire(
                &Trigger::Http,
                self.now_ns,
                "POST /record on the metrics server",
            );
        }
    }

    /// Fires `t` at `at_ns` for `why`: starts a dump or extends the pending one.
    pub fn fire(&mut self, t: &Trigger, at_ns: u64, why: &str) {
        let until = at_ns.saturating_add(self.cfg.after_ns);
        let said = format!("{t} at {}: {why}", utc(at_ns));
        match self.pending.as_mut() {
            Some(p) => {
                p.until_ns = p.until_ns.max(until);
                // A flood of findings names the first few; the dump's
                // window is what matters.
                if p.said.len() < 32 {
                    p.said.push(said);
                }
            }
            None => {
                self.ring.pin(at_ns.saturating_sub(self.cfg.before_ns));
                self.pending = Some(Pending {
                    first_ns: at_ns,
                    until_ns: until,
                    tag: t.file_tag(),
                    said: vec![said],
                });
            }
        }
    }

    fn check_finding(&mut self, f: &Finding) {
        let at = match f {
            Finding::Anomaly(a) => a.ts_ns,
            Finding::Transaction(t) => t.reply_ts_ns.or(Some(t.call_ts_ns)),
        }
        .unwrap_or(self.now_ns);
        if let Finding::Anomaly(a) = f {
            let comment = format!(
                "{} ({}): {}",
                a.kind.as_str(),
                a.kind.severity().as_str(),
                a.message
            );
            for n in &a.frames {
                self.ring.comment(*n, &comment);
            }
        }
        if let Some(d) = self.diagnosis.as_mut() {
            d.add(f);
        }
        let fired: Vec<Trigger> = self
            .cfg
            .triggers
            .iter()
            .filter(|t| t.fired_by(f))
            .cloned()
            .collect();
        for t in fired {
            let why = match f {
                Finding::Anomaly(a) => a.message.clone(),
                Finding::Transaction(tr) => format!(
                    "{} xid {:#010x} on {}{}",
                    tr.procedure_label(),
                    tr.xid,
                    tr.connection,
                    tr.latency_us
                        .map_or(String::new(), |l| format!(", {:.3} s", l / 1e6))
                ),
            };
            self.fire(&t, at, &why);
        }
    }

    /// Connections torn down (DREQ) and clients connecting again, from the
    /// engine's table.
    fn check_connections(&mut self, engine: &Engine) {
        let mut fired = Vec::new();
        for (id, c) in &engine.state().connections {
            let before = self.conns.insert(*id, c.cm_state);
            let down = matches!(c.cm_state, CmState::Disconnecting | CmState::Closed);
            match before {
                Some(was) if down && !matches!(was, CmState::Disconnecting | CmState::Closed) => {
                    fired.push(format!("{id} torn down (CM {})", c.cm_state.as_str()));
                }
                None => {
                    if let Some(client) = c.client.map(|q| q.addr) {
                        if !self.clients.insert(client) {
                            fired
                                .push(format!("{id}: a new connection from a client that had one"));
                        }
                    }
                }
                _ => {}
            }
        }
        // Evicted connections leave the table: keep the map as small as it.
        if self.conns.len() > engine.state().connections.len() * 2 + 64 {
            let live = &engine.state().connections;
            self.conns.retain(|k, _| live.contains_key(k));
        }
        for why in fired {
            self.fire(&Trigger::Reconnect, self.now_ns, &why);
        }
    }

    fn check_causes(&mut self, engine: &Engine) {
        let Some(d) = self.diagnosis.as_ref() else {
            return;
        };
        if self
            .last_diagnosis
            .is_some_and(|t| t.elapsed().as_millis() < DIAGNOSE_EVERY_MS)
        {
            return;
        }
        self.last_diagnosis = Some(Instant::now());
        let causes = d.causes(engine.state());
        for c in causes {
            let name = c.cause.as_str().to_string();
            let t = Trigger::Cause(name.clone());
            if self.cfg.triggers.contains(&t) && self.causes_seen.insert(name) {
                self.fire(&t, self.now_ns, &c.impact.measured);
            }
        }
    }

    /// Hands the pending dump to the writer when its after-window is
    /// over (or `now` when the run ends).
    fn maybe_write(&mut self, ending: bool) {
        let due = self.pending.as_ref().is_some_and(|p| {
            ending
                || self.traffic_ns > p.until_ns
                || self.now_ns >= p.until_ns.saturating_add(GRACE_NS)
        });
        if !due {
            return;
        }
        let Some(p) = self.pending.take() else {
            return;
        };
        let from = p.first_ns.saturating_sub(self.cfg.before_ns);
        let to = if ending { u64::MAX } else { p.until_ns };
        let job = Job {
            entries: self.ring.snapshot(from, to),
            from,
            shown_until: p.until_ns.min(self.now_ns),
            ending,
            lost: self.ring.lost_pinned,
            lost_busy: self.ring.lost_busy - self.lost_busy_said,
            pending: p,
        };
        self.lost_busy_said = self.ring.lost_busy;
        self.ring.unpin();
        self.ring.lost_pinned = 0;
        let writer = self
            .writer
            .get_or_insert_with(|| writer::Writer::start(self.cfg.clone()));
        // At the end the run waits for its last dump; while it runs, a
        // writer that still has two dumps to write is not waited for.
        if let Err(job) = writer.submit(job, ending) {
            let e = format!(
                "live --record: skipped the dump of {}: the writer is still writing the two before it (a disk slower than the triggers); raise --record-after to gather triggers into fewer dumps",
                job.pending.said.join("; ")
            );
            eprintln!("{e}");
            self.skipped += 1;
            self.errors.push(e);
        }
        self.collect(false);
    }

    /// Takes in what the writer did; with `wait`, once it has written
    /// everything handed to it.
    fn collect(&mut self, wait: bool) {
        let Some(w) = self.writer.as_mut() else {
            return;
        };
        for done in w.outcomes(wait) {
            match done {
                Ok(path) => self.written.push(path),
                Err(e) => self.errors.push(e),
            }
        }
        if wait {
            self.writer = None;
        }
    }

    /// Blocks until every dump handed to the writer is on disk (or
    /// failed), then takes in the outcomes.
    pub fn wait_idle(&mut self) {
        self.collect(true);
    }
}

/// Whether `name` is a dump this recorder writes: `rdma-YYYYmmddTHHMMSSZ-TAG.pcapng`.
pub fn is_dump_name(name: &str) -> bool {
    let Some(rest) = name
        .strip_prefix("rdma-")
        .and_then(|r| r.strip_suffix(".pcapng"))
    else {
        return false;
    };
    let b = rest.as_bytes();
    b.len() > 17
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'T'
        && b[9..15].iter().all(u8::is_ascii_digit)
        && b[15] == b'Z'
        && b[16] == b'-'
        && b[17..]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-'))
}

/// The dumps of ours in `dir` (regular files only, never through a link),
/// oldest first, with their sizes.
fn dumps_in(dir: &Path) -> Vec<(PathBuf, u64)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<(SystemTime, String, PathBuf, u64)> = rd
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let m = std::fs::symlink_metadata(e.path()).ok()?;
            (is_dump_name(&name) && m.file_type().is_file())
                .then(|| (m.modified().unwrap_or(UNIX_EPOCH), name, e.path(), m.len()))
        })
        .collect();
    // Written last is newest (a `-2` twin of the same second sorts before
    // its first by name); the name breaks a tie.
    v.sort();
    v.into_iter().map(|(_, _, p, len)| (p, len)).collect()
}

/// The RDMA mounts' blocks of `/proc/self/mountstats`, as printed; `None`
/// when there are none (or no such file).
fn rdma_mountstats() -> Option<String> {
    let text = std::fs::read_to_string("/proc/self/mountstats").ok()?;
    let mut out = String::new();
    let mut keep = false;
    for line in text.lines() {
        if line.starts_with("device ") {
            keep = line.contains("proto=rdma") || text_has_rdma_xprt(&text, line);
        }
        if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    (!out.is_empty()).then_some(out)
}

/// Whether the block that starts with `device_line` has an `xprt: rdma`
/// line (the `device` line does not say the transport).
fn text_has_rdma_xprt(text: &str, device_line: &str) -> bool {
    let Some(start) = text.find(device_line) else {
        return false;
    };
    let block = &text[start + device_line.len()..];
    let end = block.find("\ndevice ").unwrap_or(block.len());
    block[..end].contains("xprt:\trdma") || block[..end].contains("xprt: rdma")
}

impl Sink for Recorder {
    fn finding(&mut self, f: Finding) -> Flow {
        self.check_finding(&f);
        Flow::Continue
    }

    fn observe(&mut self, f: &Finding) -> Flow {
        self.check_finding(f);
        Flow::Continue
    }

    fn wants_frames(&self) -> bool {
        true
    }

    fn frame(&mut self, f: &Frame<'_>) -> Flow {
        let keep = self
            .cfg
            .snaplen
            .map_or(f.data.len(), |s| f.data.len().min(s as usize));
        self.push(Entry {
            ts_ns: f.ts_ns,
            item: Item::Frame {
                number: f.number,
                link: f.link,
                orig_len: f.orig_len,
                data: f.data.get(..keep).unwrap_or(f.data).into(),
                comments: Vec::new(),
            },
        });
        Flow::Continue
    }

    fn probe(&mut self, p: &Probe) -> Flow {
        Recorder::probe(self, p);
        Flow::Continue
    }

    fn tick(&mut self, engine: Option<&Engine>, _: &Progress) -> Flow {
        self.now_ns = self.now_ns.max(wall_ns());
        self.check_signal();
        if let Some(e) = engine {
            if self.cfg.triggers.contains(&Trigger::Reconnect) {
                self.check_connections(e);
            }
            self.check_causes(e);
        }
        self.maybe_write(false);
        self.collect(false);
        Flow::Continue
    }

    fn end(&mut self, engine: Option<&Engine>, _: &Progress, _: &End) {
        if let Some(e) = engine {
            if self.cfg.triggers.contains(&Trigger::Reconnect) {
                self.check_connections(e);
            }
            self.last_diagnosis = None;
            self.check_causes(e);
        }
        self.maybe_write(true);
        self.collect(true);
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use rdma_dissectors::link::LinkType;

    use super::*;
    use crate::engine::{Anomaly, Kind, Origin};
    use crate::sources::pcap::PcapReader;
    use crate::test_support::ROCE_ACK;

    fn config(dir: &Path) -> RecordConfig {
        RecordConfig {
            dir: dir.to_path_buf(),
            before_ns: 60_000_000_000,
            after_ns: 0,
            ring_bytes: 1 << 20,
            snaplen: Some(40),
            triggers: vec![Trigger::Signal, Trigger::Kind(Kind::IcrcMismatch)],
            keep: 2,
            max_total: None,
        }
    }

    fn frames(r: &mut Recorder, from: u64, n: u64) {
        for number in from..from + n {
            let f = Frame {
                number,
                ts_ns: wall_ns(),
                link: LinkType::ETHERNET,
                orig_len: ROCE_ACK.len() as u32,
                data: ROCE_ACK,
                icrc: None,
            };
            assert_eq!(r.frame(&f), Flow::Continue);
        }
    }

    fn read(path: &Path) -> Vec<(u64, usize, u32)> {
        let mut reader = PcapReader::open(path).expect("the dump reads back");
        let mut v = Vec::new();
        while let Some(f) = reader.next_packet().expect("no damage") {
            v.push((f.number, f.data.len(), f.orig_len));
        }
        v
    }

    #[test]
    fn a_finding_of_a_chosen_kind_writes_its_window_cut_at_the_snap_length_with_its_comment() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut r = Recorder::new(config(dir.path()), Arc::new(AtomicBool::new(false)));
        frames(&mut r, 1, 5);
        let anomaly = Anomaly {
            kind: Kind::IcrcMismatch,
            origin: Origin::Wire,
            ts_ns: Some(wall_ns()),
            frames: vec![3],
            connection: None,
            xid: None,
            message: "bad ICRC in frame 3".into(),
            repeated: None,
        };
        assert_eq!(
            r.finding(Finding::Anomaly(Box::new(anomaly))),
            Flow::Continue
        );
        assert_eq!(r.tick(None, &Progress::default()), Flow::Continue);
        assert!(
            r.written.is_empty(),
            "written when the traffic passes its window"
        );
        frames(&mut r, 6, 1);
        r.wait_idle();
        assert_eq!(r.written.len(), 1, "{:?}", r.errors);
        let path = &r.written[0];
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        assert!(is_dump_name(name), "{name}");
        assert!(name.ends_with("-finding-icrc_mismatch.pcapng"), "{name}");
        let got = read(path);
        assert_eq!(got.len(), 5);
        assert!(got
            .iter()
            .all(|&(_, len, orig)| len == 40 && orig == ROCE_ACK.len() as u32));
        if std::process::Command::new("tshark")
            .arg("-v")
            .output()
            .is_ok()
        {
            let out = std::process::Command::new("tshark")
                .arg("-r")
                .arg(path)
                .args(["-T", "fields", "-e", "frame.comment"])
                .output()
                .expect("tshark");
            let text = String::from_utf8_lossy(&out.stdout);
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines.len(), 5, "{text}");
            assert!(
                lines[2].contains("icrc_mismatch (warning): bad ICRC in frame 3"),
                "{text}"
            );
            assert!(lines
                .iter()
                .enumerate()
                .all(|(i, l)| i == 2 || l.is_empty()));
        }
    }

    #[test]
    fn retention_deletes_the_oldest_of_our_dumps_and_nothing_else() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let outside = tempfile::tempdir().expect("tempdir");
        let target = outside.path().join("precious.pcapng");
        std::fs::write(&target, b"keep me").expect("write");
        for old in [
            "rdma-20200101T000000Z-sigusr1.pcapng",
            "rdma-20200101T000001Z-reconnect.pcapng",
        ] {
            std::fs::write(d.join(old), b"old").expect("write");
        }
        std::fs::write(d.join("rdma-notes.pcapng"), b"not ours").expect("write");
        symlink(&target, d.join("rdma-20190101T000000Z-sigusr1.pcapng")).expect("symlink");
        std::fs::create_dir(d.join("rdma-20180101T000000Z-sigusr1.pcapng")).expect("mkdir");
        let flag = Arc::new(AtomicBool::new(false));
        let mut r = Recorder::new(config(d), flag.clone());
        for round in 0..2 {
            frames(&mut r, round * 10 + 1, 3);
            flag.store(true, Ordering::SeqCst);
            assert_eq!(r.tick(None, &Progress::default()), Flow::Continue);
        }
        frames(&mut r, 100, 1);
        r.wait_idle();
        assert_eq!(r.written.len(), 2, "{:?}", r.errors);
        assert_ne!(r.written[0], r.written[1], "same second: a second name");
        let mut left: Vec<String> = std::fs::read_dir(d)
            .expect("dir")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .collect();
        left.sort();
        let mut want: Vec<String> = r
            .written
            .iter()
            .filter_map(|p| p.file_name()?.to_str().map(str::to_string))
            .collect();
        want.extend([
            "rdma-20180101T000000Z-sigusr1.pcapng".to_string(),
            "rdma-20190101T000000Z-sigusr1.pcapng".to_string(),
            "rdma-notes.pcapng".to_string(),
        ]);
        want.sort();
        assert_eq!(left, want);
        assert_eq!(std::fs::read(&target).expect("still there"), b"keep me");
    }

    #[test]
    fn overlapping_triggers_extend_one_dump() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cfg = config(dir.path());
        cfg.after_ns = 3_600_000_000_000;
        let flag = Arc::new(AtomicBool::new(false));
        let mut r = Recorder::new(cfg, flag.clone());
        frames(&mut r, 1, 3);
        flag.store(true, Ordering::SeqCst);
        assert_eq!(r.tick(None, &Progress::default()), Flow::Continue);
        r.fire(&Trigger::Reconnect, wall_ns(), "c2: a new connection");
        frames(&mut r, 4, 3);
        assert!(r.written.is_empty(), "still recording its after-window");
        r.end(None, &Progress::default(), &End::Stopped);
        assert_eq!(r.written.len(), 1);
        assert_eq!(read(&r.written[0]).len(), 6);
    }

    #[test]
    fn only_our_names_are_dumps() {
        assert!(is_dump_name("rdma-20261126T183410Z-sigusr1.pcapng"));
        assert!(is_dump_name(
            "rdma-20261126T183410Z-finding-icrc_mismatch-2.pcapng"
        ));
        assert!(!is_dump_name("rdma-20261126T183410Z-.pcapng"));
        assert!(!is_dump_name("rdma-2026112T183410Z-x.pcapng"));
        assert!(!is_dump_name("rdma-20261126T183410Z-x.pcap"));
        assert!(!is_dump_name("capture.pcapng"));
        assert!(!is_dump_name("rdma-20261126T183410Z-../x.pcapng"));
    }
}
