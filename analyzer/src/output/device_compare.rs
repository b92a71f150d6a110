//! A host's RDMA device counters (soft-RoCE's `hw_counters`) against a
//! capture taken on that host over the same window: what a fabric engineer
//! reads first, checked against the packets themselves.
//!
//! What each rxe counter counts (drivers/infiniband/sw/rxe, Linux 5.10 to
//! 6.12), and what the capture counts for it, on the host's address:
//! - `sent_pkts`: every packet `rxe_xmit_packet` handed to the network
//!   (requests, responses, ACKs, the CM's MADs) — frames from the host;
//! - `rcvd_pkts`: every packet `rxe_rcv` accepted — frames to the host;
//! - `duplicate_request`: requests whose PSN is behind the one expected
//!   (`check_psn`, rxe_resp.c) — frames to the host the engine found sent
//!   again (a capture on the host sees what reached it);
//! - `out_of_seq_request`: the first request past the PSN expected, once
//!   per gap until the sequence is whole again — PSN gaps to the host;
//! - `rcvd_seq_err`, `rcvd_rnr_err`: NAKs (PSN sequence error) and RNR
//!   NAKs the host's requester received; `send_rnr_err`: RNR NAKs its
//!   responder sent;
//! - `completer_retry_err`: the requester's retries (a timeout or a
//!   sequence NAK restarts the send queue from the first unacknowledged
//!   PSN) — runs of packets the host sent again, one per run; a run starts
//!   where the PSN rewinds (a timeout retries one packet up to 7 times,
//!   each a retry of its own).
//!
//! A host whose peer stops answering ARP (its neighbour entry expired
//! during an outage) holds its packets in IP until the address resolves or
//! the hold is dropped: rxe counted them sent, the wire never saw them. The
//! capture shows the unanswered ARP requests, and a note says so.
//!
//! `retry_exceeded_err`, `rdma_sends`, `rdma_recvs` and the rest are shown
//! with the kernel's value only: the wire has no one-to-one count for them.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::IpAddr;

use rdma_dissectors::ib::aeth::{AckKind, NakCode};
use rdma_dissectors::ib::bth::Position;
use rdma_dissectors::stack::{self, Dissection};
use serde::Serialize;

use super::kernel_counters::Row;
use crate::engine::device_counters::Snapshot;
use crate::engine::{Engine, Finding, Frame, Kind};
use crate::pipeline::{End, Flow, Progress, Sink};

/// The counters compared with the capture, in the order they print.
const COMPARED: [&str; 8] = [
    "sent_pkts",
    "rcvd_pkts",
    "duplicate_request",
    "out_of_seq_request",
    "rcvd_seq_err",
    "rcvd_rnr_err",
    "send_rnr_err",
    "completer_retry_err",
];

/// Distinct addresses counted; more (a hostile or huge capture) go uncounted
/// and are said to be.
const MAX_HOSTS: usize = 4096;

/// Frames whose direction a finding may still ask for: the engine reports a
/// retransmission or a gap on the frame it is looking at.
const RECENT: usize = 64;

/// What the capture counts for one address.
#[derive(Debug, Clone, Default)]
struct HostCounts {
    sent: u64,
    rcvd: u64,
    dup_in: u64,
    gaps_in: u64,
    seq_naks_in: u64,
    rnr_in: u64,
    rnr_out: u64,
    retry_runs_out: u64,
    /// Whether the request this host sent before the current one, and the
    /// current one, were sent again: a run counts once.
    prev_resent: bool,
    cur_resent: bool,
    /// The PSN of the last packet it sent again: one sent again at or
    /// before it is the requester rewinding once more, a retry of its own
    /// (a timeout retries the same packet up to seven times).
    last_resent_psn: Option<u32>,
    /// ARP requests it sent and replies it got: rxe counts a packet sent
    /// when it hands it to IP, and one waiting for a neighbour that never
    /// answers is dropped there, before the wire (and the capture) see it.
    arp_asked: u64,
    arp_answered: u64,
}

/// A sink that counts per address, inside a window of capture time.
#[derive(Debug)]
pub struct DeviceWire {
    since_ns: Option<u64>,
    until_ns: Option<u64>,
    config: stack::Config,
    hosts: HashMap<IpAddr, HostCounts>,
    hosts_over: bool,
    recent: VecDeque<(u64, IpAddr, IpAddr, u32)>,
}

impl DeviceWire {
    /// Counts frames stamped in `[since, until)` (open-ended where `None`).
    pub fn within(since_ns: Option<u64>, until_ns: Option<u64>, config: stack::Config) -> Self {
        DeviceWire {
            since_ns,
            until_ns,
            config,
            hosts: HashMap::new(),
            hosts_over: false,
            recent: VecDeque::with_capacity(RECENT),
        }
    }

    /// The addresses that sent or received RoCE frames (not those seen in
    /// ARP alone: a LAN's broadcasts name every host on it).
    pub fn addresses(&self) -> impl Iterator<Item = IpAddr> + '_ {
        self.hosts
            .iter()
            .filter(|(_, h)| h.sent > 0 || h.rcvd > 0)
            .map(|(a, _)| *a)
    }

    fn host(&mut self, a: IpAddr) -> Option<&mut HostCounts> {
        if !self.hosts.contains_key(&a) && self.hosts.len() >= MAX_HOSTS {
            self.hosts_over = true;
            return None;
        }
        Some(self.hosts.entry(a).or_default())
    }

    fn inside(&self, ts: u64) -> bool {
        self.since_ns.is_none_or(|s| ts >= s) && self.until_ns.is_none_or(|u| ts < u)
    }

    fn direction(&self, frame: u64) -> Option<(IpAddr, IpAddr, u32)> {
        self.recent
            .iter()
            .rev()
            .find(|(n, ..)| *n == frame)
            .map(|&(_, s, d, p)| (s, d, p))
    }
}

impl Sink for DeviceWire {
    fn finding(&mut self, f: Finding) -> Flow {
        self.observe(&f)
    }

    fn observe(&mut self, f: &Finding) -> Flow {
        let Finding::Anomaly(a) = f else {
            return Flow::Continue;
        };
        if !matches!(a.kind, Kind::Retransmission | Kind::PsnOutOfSequence) {
            return Flow::Continue;
        }
        let Some((src, dst, psn)) = a.frames.first().and_then(|&n| self.direction(n)) else {
            return Flow::Continue;
        };
        let retransmission = a.kind == Kind::Retransmission;
        if let Some(h) = self.host(dst) {
            if retransmission {
                h.dup_in += 1;
            } else {
                h.gaps_in += 1;
            }
        }
        if let (true, Some(h)) = (retransmission, self.host(src)) {
            let in_run = h.prev_resent || h.cur_resent;
            let rewound = h.last_resent_psn.is_none_or(|last| !psn_after(psn, last));
            if !in_run || rewound {
                h.retry_runs_out += 1;
            }
            h.cur_resent = true;
            h.last_resent_psn = Some(psn);
        }
        Flow::Continue
    }

    fn wants_frames(&self) -> bool {
        true
    }

    fn end(&mut self, _: Option<&Engine>, _: &Progress, _: &End) {}

    fn frame(&mut self, f: &Frame<'_>) -> Flow {
        if !self.inside(f.ts_ns) {
            return Flow::Continue;
        }
        if let Some((request, sender, target)) = arp(f) {
            let (who, asked) = if request {
                (sender, true)
            } else {
                (target, false)
            };
            if let Some(h) = self.host(IpAddr::from(who)) {
                if asked {
                    h.arp_asked += 1;
                } else {
                    h.arp_answered += 1;
                }
            }
            return Flow::Continue;
        }
        let mut d = Dissection::default();
        f.dissect_into(&self.config, &mut d);
        let (Some(ip), Some(bth)) = (d.ip, d.bth()) else {
            return Flow::Continue;
        };
        let request = !bth.opcode.is_response();
        let (src, dst) = (ip.source(), ip.destination());
        if self.recent.len() == RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back((f.number, src, dst, bth.psn.get()));
        let nak = d.aeth().map(|a| a.kind());
        let psn = bth.psn.get();
        let mut resent_packet = false;
        if let Some(h) = self.host(src) {
            h.sent += 1;
            // The engine marks a retransmission after this, on this frame,
            // once per message (on its first packet). The packets after it
            // in a message sent again are duplicates too, and rxe counts
            // each (`duplicate_request` is per packet): one that goes on
            // from the packet just sent again continues it. Any other
            // request ends the run.
            if request {
                resent_packet = h.cur_resent
                    && matches!(
                        bth.opcode.position(),
                        Some(Position::Middle | Position::Last)
                    )
                    && h.last_resent_psn
                        .is_some_and(|p| psn == (p + 1) & 0x00ff_ffff);
                h.prev_resent = h.cur_resent;
                h.cur_resent = resent_packet;
                if resent_packet {
                    h.last_resent_psn = Some(psn);
                }
            }
            if matches!(nak, Some(AckKind::RnrNak { .. })) {
                h.rnr_out += 1;
            }
        }
        if let Some(h) = self.host(dst) {
            h.rcvd += 1;
            if resent_packet {
                h.dup_in += 1;
            }
            match nak {
                Some(AckKind::RnrNak { .. }) => h.rnr_in += 1,
                Some(AckKind::Nak(NakCode::PsnSequenceError)) => h.seq_naks_in += 1,
                _ => {}
            }
        }
        Flow::Continue
    }
}

/// An Ethernet ARP request (`true`) or reply for IPv4: the sender's and the
/// target's protocol addresses (RFC 826).
fn arp(f: &Frame<'_>) -> Option<(bool, [u8; 4], [u8; 4])> {
    if f.link != rdma_dissectors::link::LinkType::ETHERNET {
        return None;
    }
    let b = f.data;
    if b.get(12..14)? != [0x08, 0x06] || b.get(16..18)? != [0x08, 0x00] {
        return None;
    }
    let op = u16::from_be_bytes(b.get(20..22)?.try_into().ok()?);
    let sender: [u8; 4] = b.get(28..32)?.try_into().ok()?;
    let target: [u8; 4] = b.get(38..42)?.try_into().ok()?;
    match op {
        1 => Some((true, sender, target)),
        2 => Some((false, sender, target)),
        _ => None,
    }
}

/// Whether 24-bit PSN `a` comes after `b` (IBA 9.7.1: half the space ahead).
fn psn_after(a: u32, b: u32) -> bool {
    let d = a.wrapping_sub(b) & 0x00ff_ffff;
    d != 0 && d < 0x0080_0000
}

/// One device port against the capture.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceComparison {
    /// `rxe0 port 1`.
    pub device: String,
    /// The address whose frames were counted.
    pub host: String,
    /// The readings compared (their labels), first and last.
    pub between: (String, String),
    /// The counters the wire can count, and the others with the kernel's
    /// value only (`capture` 0, verdict `kernel only`).
    pub rows: Vec<Row>,
    /// What limits the comparison.
    pub notes: Vec<String>,
}

impl DeviceComparison {
    /// Rows that differ.
    pub fn disagreements(&self) -> usize {
        self.rows.iter().filter(|r| r.verdict == "differ").count()
    }
}

fn capture_value(c: &HostCounts, name: &str) -> Option<u64> {
    Some(match name {
        "sent_pkts" => c.sent,
        "rcvd_pkts" => c.rcvd,
        "duplicate_request" => c.dup_in,
        "out_of_seq_request" => c.gaps_in,
        "rcvd_seq_err" => c.seq_naks_in,
        "rcvd_rnr_err" => c.rnr_in,
        "send_rnr_err" => c.rnr_out,
        "completer_retry_err" => c.retry_runs_out,
        _ => return None,
    })
}

/// The window the readings bound: from the first to the last reading's time.
pub fn window(snapshots: &[Snapshot]) -> (Option<u64>, Option<u64>) {
    let first = snapshots.first().and_then(|s| s.at_ns);
    let last = snapshots.last().and_then(|s| s.at_ns);
    if snapshots.len() < 2 {
        (None, last)
    } else {
        (first, last)
    }
}

/// Compares each device port of the readings (last less first) with the
/// capture's count for `host`.
pub fn compare(snapshots: &[Snapshot], wire: &DeviceWire, host: IpAddr) -> Vec<DeviceComparison> {
    let (Some(last), first) = (snapshots.last(), snapshots.first()) else {
        return Vec::new();
    };
    let before = |dev: &str, port: u32, name: &str| -> u64 {
        if snapshots.len() < 2 {
            return 0;
        }
        first
            .and_then(|f| {
                f.counters
                    .iter()
                    .find(|c| c.device == dev && c.port == port && c.name == name)
            })
            .map_or(0, |c| c.value)
    };
    let counts = wire.hosts.get(&host).cloned().unwrap_or_default();
    let mut ports: BTreeMap<(String, u32), Vec<Row>> = BTreeMap::new();
    let mut went_back = Vec::new();
    for c in last
        .counters
        .iter()
        .filter(|c| c.is_counter() && c.group == "hw_counters")
    {
        let was = before(&c.device, c.port, &c.name);
        let Some(kernel) = c.value.checked_sub(was) else {
            went_back.push(format!(
                "{} {} went from {was} to {}: the device was reset or added again between the readings, so it is not compared",
                c.device, c.name, c.value
            ));
            ports.entry((c.device.clone(), c.port)).or_default();
            continue;
        };
        let row = match capture_value(&counts, &c.name) {
            Some(capture) => Row {
                field: c.name.clone(),
                kernel: Some(kernel),
                capture,
                verdict: if capture == kernel { "agree" } else { "differ" },
                detail: None,
            },
            None => Row {
                field: c.name.clone(),
                kernel: Some(kernel),
                capture: 0,
                verdict: "kernel only",
                detail: None,
            },
        };
        ports
            .entry((c.device.clone(), c.port))
            .or_default()
            .push(row);
    }
    ports
        .into_iter()
        .map(|((dev, port), mut rows)| {
            rows.sort_by_key(|r| {
                COMPARED
                    .iter()
                    .position(|n| *n == r.field)
                    .unwrap_or(COMPARED.len())
            });
            let mut notes = went_back.clone();
            let sent_short = rows
                .iter()
                .any(|r| r.field == "sent_pkts" && r.kernel.is_some_and(|k| k > r.capture));
            if sent_short && counts.arp_asked > counts.arp_answered {
                notes.push(format!(
                    "the host asked for a neighbour's address {} times and had {} answers: rxe counts a packet sent when it hands it to IP, and packets waiting for an unresolved neighbour are dropped there, never on the wire; its retries then show as fewer runs",
                    counts.arp_asked, counts.arp_answered
                ));
            }
            if snapshots.len() < 2 {
                notes.push("one reading only: its counters are taken from the device's start, so the capture must hold the device's whole life".into());
            }
            if wire.hosts_over {
                notes.push(format!("the capture has more than {MAX_HOSTS} addresses; frames of the others were not counted"));
            }
            DeviceComparison {
                device: format!("{dev} port {port}"),
                host: host.to_string(),
                between: (
                    first.map_or(String::new(), |f| f.label.clone()),
                    last.label.clone(),
                ),
                rows,
                notes,
            }
        })
        .collect()
}

/// The comparison as text.
pub fn text(devices: &[DeviceComparison]) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    for d in devices {
        let _ = writeln!(
            s,
            "device {} (host {}), {} to {}: {} disagreement(s)",
            d.device,
            d.host,
            d.between.0,
            d.between.1,
            d.disagreements()
        );
        let _ = writeln!(
            s,
            "  {:<22} {:>12} {:>12}  verdict",
            "counter", "kernel", "capture"
        );
        for r in &d.rows {
            let capture = if r.verdict == "kernel only" {
                "-".to_string()
            } else {
                r.capture.to_string()
            };
            let _ = writeln!(
                s,
                "  {:<22} {:>12} {:>12}  {}",
                r.field,
                r.kernel.map_or("-".into(), |k| k.to_string()),
                capture,
                r.verdict
            );
        }
        for n in &d.notes {
            let _ = writeln!(s, "  note: {n}");
        }
    }
    s
}
