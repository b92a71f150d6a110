//! The NFS client's own counters (`/proc/self/mountstats`) beside what a
//! capture of the same window shows: every field both can count, each
//! marked agree or differ, so a disagreement points at the capture (frames
//! it missed) or at one of the two counting wrong.
//!
//! What is compared, per RDMA mount, with the capture's connections to the
//! mount's server (`addr=`):
//! - transport fields summed over its transports (`nconnect` gives several):
//!   `connect_count` against connections established, `sends` and `recvs`
//!   against calls and replies transmitted, `bad_xids` against replies
//!   without a call, the read, write and reply chunk segment counts, the
//!   bytes offered in Write and Reply chunks (`total_rdma_request`) and
//!   written into them (`total_rdma_reply`), Long Calls (`nomsg_call_count`),
//!   bad replies (`bad_reply_count`, RDMA_ERROR included) against RDMA_ERROR
//!   replies, the MRs invalidated locally (`local_inv_needed`) against the
//!   segments less those a Send With Invalidate released, and the in-flight
//!   sum (`req_u`, with both means per send) against the same sum over the
//!   capture's calls and replies in time order;
//! - per transport, when the transports and connections pair one to one
//!   in order of their first use (the kernel prints them in that order);
//! - per NFSv3 operation, the kernel's transmissions (`ntrans`) against the
//!   capture's calls of that procedure, and its operations (`ops`) against
//!   the capture's XIDs of it (a call sent again is one operation). The
//!   per-op counters are the mount's, never a transport's.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::diagnosis::KernelView;
use crate::engine::mountstats::{Mount, Transport};
use crate::engine::{ChunkKind, ConnId, Engine, Finding, Kind, Transaction, Transfer};
use crate::pipeline::{End, Flow, Progress, Sink};

/// What the capture counted on one connection, in the kernel's terms.
#[derive(Debug, Clone, Default)]
struct ConnCounts {
    server: Option<String>,
    first_ts_ns: u64,
    established: bool,
    sends: u64,
    recvs: u64,
    bad_xids: u64,
    read_chunk_count: u64,
    write_chunk_count: u64,
    reply_chunk_count: u64,
    total_rdma_request: u64,
    total_rdma_reply: u64,
    nomsg_call_count: u64,
    /// Packets the capture saw sent again or missed (RC retransmissions,
    /// PSN gaps): bytes moved may be short where these are.
    lost_or_resent: u64,
    /// NFSv3 procedure name → transmissions.
    ops: BTreeMap<String, u64>,
    /// NFSv3 procedure name → operations: one per XID, however often sent.
    op_calls: BTreeMap<String, u64>,
    /// Each transmission (`true`) and matched reply (`false`) in the window
    /// with its time: the kernel's in-flight sum (`req_u`) is taken at sends.
    events: Vec<(u64, bool)>,
    /// The wire's round trips (last transmission to reply) of the calls
    /// answered in the window, summed, and how many: beside the kernel's
    /// per-op `rtt_ms` they say how late the kernel completes a reply.
    wire_rtt_ns: u64,
    wire_rtts: u64,
    /// Replies that were RDMA_ERROR (the kernel counts them bad replies).
    rdma_errors: u64,
    /// Headers on the connection the dissectors could not parse.
    malformed: u64,
    /// Chunk segments the calls advertised: one MR each on the client.
    segments: u64,
    /// Of those, the ones a reply's Send With Invalidate released.
    remotely_invalidated: u64,
    /// Write-list segments of 4 bytes (an XDR pad), by handle: one handle
    /// in several calls is the transport's one pad MR (kernels from 5.17,
    /// `re_write_pad_mr`), registered once and never invalidated per call.
    pad_handles: BTreeMap<u32, u64>,
}

impl ConnCounts {
    /// The MRs the client must invalidate itself: every segment's, less
    /// the shared pad MR's uses, less the one a Send With Invalidate
    /// released (`frwr_reminv` takes one MR per reply; `frwr_unmap_sync`
    /// and `frwr_unmap_async` count `local_inv_needed` per MR left).
    fn local_inv_needed(&self) -> u64 {
        let shared_pad: u64 = self.pad_handles.values().filter(|n| **n > 1).sum();
        self.segments
            .saturating_sub(shared_pad)
            .saturating_sub(self.remotely_invalidated)
    }
}

/// A sink that counts, per connection, what the kernel's counters count,
/// within a window of capture time (the moments the two snapshots were
/// taken; open-ended by default).
#[derive(Debug, Default)]
pub struct WireCounts {
    conns: BTreeMap<ConnId, ConnCounts>,
    since_ns: Option<u64>,
    until_ns: Option<u64>,
    /// The capture's first and last frame times.
    capture: Option<(u64, u64)>,
}

impl WireCounts {
    /// Counts only what happened from `since_ns` until `until_ns` (ns since
    /// the epoch, capture time).
    pub fn within(since_ns: Option<u64>, until_ns: Option<u64>) -> Self {
        WireCounts {
            since_ns,
            until_ns,
            ..WireCounts::default()
        }
    }

    fn inside(&self, ts: u64) -> bool {
        self.since_ns.is_none_or(|s| ts >= s) && self.until_ns.is_none_or(|u| ts < u)
    }

    fn transaction(&mut self, t: &Transaction) {
        if t.backchannel {
            return;
        }
        let (first, last) = (self.inside(t.first_call_ts_ns), self.inside(t.call_ts_ns));
        let replied = t.reply_ts_ns.is_some_and(|r| self.inside(r));
        let c = self.conns.entry(t.connection).or_default();
        // Every transmission is a send: the first, and the later ones at
        // the last's time (a call sent again after a reconnect is one
        // transaction of two transmissions).
        c.sends +=
            u64::from(first) + u64::from(last) * u64::from(t.transmissions.saturating_sub(1));
        c.recvs += u64::from(replied);
        if first {
            c.events.push((t.first_call_ts_ns, true));
        }
        if last {
            let again = t.transmissions.saturating_sub(1) as usize;
            c.events
                .extend(std::iter::repeat_n((t.call_ts_ns, true), again));
        }
        if let (true, Some(r)) = (replied, t.reply_ts_ns) {
            c.events.push((r, false));
            if last {
                c.wire_rtt_ns += r.saturating_sub(t.call_ts_ns);
                c.wire_rtts += 1;
            }
            c.rdma_errors += u64::from(t.reply_transfer == Transfer::Error);
        }
        if !last {
            return;
        }
        // The client invalidates a call's MRs when its reply arrives (or
        // the call is released): at AFTER, a call still unanswered holds
        // its MRs, counted in the segment counts but not invalidated yet.
        if replied {
            c.segments += t.chunks.len() as u64;
        }
        c.remotely_invalidated += u64::from(
            replied
                && t.remote_invalidated_rkey
                    .is_some_and(|k| t.chunks.iter().any(|s| s.handle == k)),
        );
        for s in t
            .chunks
            .iter()
            .filter(|s| replied && s.kind == ChunkKind::Write && s.length == 4)
        {
            *c.pad_handles.entry(s.handle).or_default() += 1;
        }
        for s in &t.chunks {
            match s.kind {
                ChunkKind::Read => c.read_chunk_count += 1,
                ChunkKind::Write => c.write_chunk_count += 1,
                ChunkKind::Reply => c.reply_chunk_count += 1,
            }
            if s.kind != ChunkKind::Read {
                c.total_rdma_request += u64::from(s.length);
                c.total_rdma_reply += s.bytes_moved;
            }
        }
        if t.call_transfer == Transfer::LongCall {
            c.nomsg_call_count += 1;
        }
        if t.program == Some(100_003) && t.version == Some(3) {
            if let Some(p) = &t.procedure {
                *c.ops.entry(p.clone()).or_default() += u64::from(t.transmissions.max(1));
                *c.op_calls.entry(p.clone()).or_default() += 1;
            }
        }
    }

    /// Fills in what the engine's connections know: who the server is,
    /// whether the connection was established, calls and replies sent.
    fn connections(&mut self, engine: &Engine) {
        let (since, until) = (self.since_ns, self.until_ns);
        let t = &engine.state().totals;
        self.capture = t.first_ts_ns.zip(t.last_ts_ns);
        for (id, conn) in &engine.state().connections {
            let c = self.conns.entry(*id).or_default();
            c.server = conn.server.map(|s| s.addr.to_string());
            c.first_ts_ns = conn.first_ts_ns;
            // Established: a REP or RTU seen; or no CM message in the
            // capture at all but traffic, so it was established before.
            c.established = conn
                .cm_events
                .iter()
                .find(|e| e.message.accepts() || e.message.establishes())
                .map_or(
                    conn.cm_events.is_empty() && conn.calls > 0 && since.is_none(),
                    |e| since.is_none_or(|s| e.ts_ns >= s) && until.is_none_or(|u| e.ts_ns < u),
                );
        }
    }
}

impl Sink for WireCounts {
    fn finding(&mut self, f: Finding) -> Flow {
        match &f {
            Finding::Transaction(t) => self.transaction(t),
            Finding::Anomaly(a)
                if matches!(a.kind, Kind::Retransmission | Kind::PsnOutOfSequence) =>
            {
                if let Some(c) = a.connection {
                    self.conns.entry(c).or_default().lost_or_resent += 1;
                }
            }
            Finding::Anomaly(a) if a.kind == Kind::Malformed => {
                let inside = a.ts_ns.is_none_or(|ts| self.inside(ts));
                if let (Some(c), true) = (a.connection, inside) {
                    self.conns.entry(c).or_default().malformed += 1;
                }
            }
            Finding::Anomaly(a) if a.kind == Kind::ReplyWithoutCall => {
                let inside = a.ts_ns.is_none_or(|ts| self.inside(ts));
                if let (Some(c), true) = (a.connection, inside) {
                    self.conns.entry(c).or_default().bad_xids += 1;
                }
            }
            Finding::Anomaly(_) => {}
        }
        Flow::Continue
    }

    fn end(&mut self, engine: Option<&Engine>, _: &Progress, _: &End) {
        if let Some(e) = engine {
            self.connections(e);
        }
    }
}

/// One field: the kernel's count, the capture's, and whether they agree.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The kernel's name for it (`sends`, `READ ntrans`).
    pub field: String,
    /// What the kernel counted; `None` when this kernel does not print it.
    pub kernel: Option<u64>,
    /// What the capture shows.
    pub capture: u64,
    /// `agree`, `differ`, or `not printed by this kernel`.
    pub verdict: &'static str,
    /// What the two counts mean beside the numbers (the in-flight sums'
    /// means per send).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// One mount against the capture.
#[derive(Debug, Clone, Serialize)]
pub struct MountComparison {
    /// `server:/export`.
    pub device: String,
    /// Where it is mounted.
    pub mountpoint: String,
    /// The server the mount talks to (`addr=`).
    pub server: Option<String>,
    /// The mount's transports (`xprt:` lines).
    pub transports: usize,
    /// The capture's connections to that server.
    pub connections: usize,
    /// The transports' fields summed, and the NFSv3 operations.
    pub rows: Vec<Row>,
    /// Per transport, when transports and connections pair one to one.
    pub per_transport: Vec<Vec<Row>>,
    /// Why the transports were not compared one by one, when they were not.
    pub per_transport_skipped: Option<String>,
    /// What explains the differences, where the capture shows it.
    pub notes: Vec<String>,
}

impl MountComparison {
    /// Rows that differ, over the sums, the operations and each transport.
    pub fn disagreements(&self) -> usize {
        self.rows
            .iter()
            .chain(self.per_transport.iter().flatten())
            .filter(|r| r.verdict == "differ")
            .count()
    }
}

const TRANSPORT_FIELDS: [&str; 12] = [
    "sends",
    "recvs",
    "bad_xids",
    "read_chunk_count",
    "write_chunk_count",
    "reply_chunk_count",
    "total_rdma_request",
    "total_rdma_reply",
    "nomsg_call_count",
    "connect_count",
    "bad_reply_count",
    "local_inv_needed",
];

fn capture_field(c: &ConnCounts, field: &str) -> u64 {
    match field {
        "sends" => c.sends,
        "recvs" => c.recvs,
        "bad_xids" => c.bad_xids,
        "read_chunk_count" => c.read_chunk_count,
        "write_chunk_count" => c.write_chunk_count,
        "reply_chunk_count" => c.reply_chunk_count,
        "total_rdma_request" => c.total_rdma_request,
        "total_rdma_reply" => c.total_rdma_reply,
        "nomsg_call_count" => c.nomsg_call_count,
        "connect_count" => u64::from(c.established),
        "bad_reply_count" => c.rdma_errors,
        "local_inv_needed" => c.local_inv_needed(),
        _ => 0,
    }
}

fn row(field: String, kernel: Option<u64>, capture: u64) -> Row {
    let verdict = match kernel {
        None => "not printed by this kernel",
        Some(k) if k == capture => "agree",
        Some(_) => "differ",
    };
    Row {
        field,
        kernel,
        capture,
        verdict,
        detail: None,
    }
}

/// The kernel's value of `field` over `transports`, less `before`'s; `None`
/// when a transport does not print it.
fn kernel_field(after: &[&Transport], before: &[&Transport], field: &str) -> Option<u64> {
    let sum = |ts: &[&Transport]| -> Option<u64> { ts.iter().map(|t| t.rdma(field)).sum() };
    let a = sum(after)?;
    let b = if before.is_empty() { 0 } else { sum(before)? };
    Some(a.saturating_sub(b))
}

fn transport_rows(
    after: &[&Transport],
    before: &[&Transport],
    conns: &[&ConnCounts],
    late: &Lateness,
) -> Vec<Row> {
    let mut rows: Vec<Row> = TRANSPORT_FIELDS
        .iter()
        .map(|f| {
            let capture = conns.iter().map(|c| capture_field(c, f)).sum();
            row((*f).to_string(), kernel_field(after, before, f), capture)
        })
        .collect();
    rows.extend(in_flight_row(after, before, conns, late));
    rows
}

/// The kernel's in-flight sum as `xprt_request_transmit` (net/sunrpc/xprt.c,
/// 5.10 to 6.12) keeps it: at each successful send it adds one to `sends`,
/// then `sends - recvs` to `req_u`, the calls outstanding with this one,
/// counted since the transport was created (`recvs` is added in
/// `xprt_complete_rqst`). `offset` is `sends - recvs` at the window's start;
/// each reply counts `lag_ns` after the capture saw it.
fn in_flight_sum(events: &[(u64, bool)], offset: u64, lag_ns: u64) -> u64 {
    let mut events: Vec<(u64, bool)> = events
        .iter()
        .map(|&(ts, send)| (if send { ts } else { ts.saturating_add(lag_ns) }, send))
        .collect();
    // At one instant a send goes first: the kernel counts a send before
    // the reply it provokes can complete.
    events.sort_by_key(|&(ts, send)| (ts, !send));
    let mut outstanding = i128::from(offset);
    let mut sum: i128 = 0;
    for (_, send) in events {
        if send {
            outstanding += 1;
            sum += outstanding.max(0);
        } else {
            outstanding -= 1;
        }
    }
    u64::try_from(sum).unwrap_or(0)
}

/// The longest a reply may take, after the capture saw it, to be counted
/// received by the kernel's in-flight sum before the verdict is `differ`.
/// The kernel counts a reply when its reply handler completes the RPC
/// (`xprt_complete_rqst`, from a work queue after the Receive completion),
/// so a call sent meanwhile counts that reply's call still outstanding.
/// In the VM lab (soft RoCE and siw, 5.10 to 6.12) `rpc_stats_latency`
/// put the kernel's rtt 1.9 to 4.0 ms (p50) above the wire's, and the
/// kernels' sums needed a lag of 0.4 to 5.0 ms; more than 10 ms over a
/// whole run is no longer a late count but a different count.
/// A kernel that completes its replies later than that says so itself:
/// its per-op `rtt_ms` (transmission to `xprt_complete_rqst`, the moment
/// `req_u` counts the reply) over the window exceeds the wire's round
/// trips by as much, and a lag up to that (plus 1 ms) agrees too. In the
/// lab's siw runs under host load `req_u` needed 15.7 and 16.8 ms while
/// the kernel's rtt averaged 36 and 43 ms above the wire's; unloaded runs
/// needed 2.9 to 3.1 ms against 4.9 to 11.5 ms.
const REPLY_LAG_MAX_NS: u64 = 10_000_000;

/// How late the kernel completes replies, as its own counters say.
#[derive(Debug, Default)]
struct Lateness {
    /// Mean of the kernel's rtt over the window less the capture's mean
    /// round trip, ns; `None` without per-op counters or answered calls.
    kernel_rtt_above_wire_ns: Option<i64>,
}

impl Lateness {
    fn of(after: &Mount, before: Option<&Mount>, conns: &[&ConnCounts]) -> Lateness {
        let sum = |m: &Mount| -> (u64, u64) {
            m.ops
                .iter()
                .fold((0, 0), |(r, n), o| (r + o.rtt_ms, n + o.ops))
        };
        let (ra, na) = sum(after);
        let (rb, nb) = before.map_or((0, 0), sum);
        let (rtt_ms, ops) = (ra.saturating_sub(rb), na.saturating_sub(nb));
        let (wire_ns, wire_n) = conns.iter().fold((0u64, 0u64), |(s, n), c| {
            (s + c.wire_rtt_ns, n + c.wire_rtts)
        });
        let kernel_rtt_above_wire_ns = (ops > 0 && wire_n > 0).then(|| {
            let kernel = rtt_ms as f64 * 1e6 / ops as f64;
            let wire = wire_ns as f64 / wire_n as f64;
            (kernel - wire) as i64
        });
        Lateness {
            kernel_rtt_above_wire_ns,
        }
    }

    /// The longest reply lag that still agrees, ns.
    fn allowance_ns(&self) -> u64 {
        let own = self.kernel_rtt_above_wire_ns.map_or(0, |ns| {
            u64::try_from(ns).unwrap_or(0).saturating_add(1_000_000)
        });
        REPLY_LAG_MAX_NS.max(own)
    }
}

/// The smallest lag, in µs, that brings the capture's sum to `kernel`
/// (the sum grows with the lag); `None` when no lag up to a second does.
fn reply_lag_us(sum: impl Fn(u64) -> u64, kernel: u64) -> Option<u64> {
    let (mut lo, mut hi) = (0u64, 1_000_000u64);
    if sum(hi * 1000) < kernel {
        return None;
    }
    while lo < hi {
        let mid = (lo + hi) / 2;
        if sum(mid * 1000) >= kernel {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some(lo)
}

/// `req_u` against the capture's in-flight sum, with both means per send.
/// The sum runs per transport (a reconnect keeps the transport and its
/// counters), so the capture's connections must be the transports' own:
/// all of them for one transport, one each for several; otherwise `None`
/// (the per-transport note says why).
fn in_flight_row(
    after: &[&Transport],
    before: &[&Transport],
    conns: &[&ConnCounts],
    late: &Lateness,
) -> Option<Row> {
    let groups: Vec<Vec<&ConnCounts>> = match after.len() {
        1 => vec![conns.to_vec()],
        n if n == conns.len() && (before.is_empty() || before.len() == n) => {
            conns.iter().map(|c| vec![*c]).collect()
        }
        _ => return None,
    };
    let groups: Vec<(Vec<(u64, bool)>, u64)> = groups
        .iter()
        .enumerate()
        .map(|(i, group)| {
            let offset = before.get(i).map_or(0, |t| {
                let (s, r) = (t.rdma("sends").unwrap_or(0), t.rdma("recvs").unwrap_or(0));
                s.saturating_sub(r)
            });
            let events = group.iter().flat_map(|c| c.events.iter().copied());
            (events.collect(), offset)
        })
        .collect();
    let sum = |lag: u64| -> u64 {
        groups
            .iter()
            .map(|(events, offset)| in_flight_sum(events, *offset, lag))
            .sum()
    };
    let capture = sum(0);
    let mut r = row(
        "req_u".to_string(),
        kernel_field(after, before, "req_u"),
        capture,
    );
    let mean = |sum: u64, sends: u64| match sends {
        0 => "none sent".to_string(),
        n => format!("{:.2}", sum as f64 / n as f64),
    };
    let wire_sends = conns.iter().map(|c| c.sends).sum();
    let kernel_sends = kernel_field(after, before, "sends");
    let mut detail = format!(
        "mean in flight per send: kernel {}, capture {}",
        r.kernel
            .zip(kernel_sends)
            .map_or("unknown".to_string(), |(k, s)| mean(k, s)),
        mean(capture, wire_sends)
    );
    if let Some(k) = r.kernel.filter(|k| *k > capture) {
        match reply_lag_us(sum, k) {
            Some(lag) => {
                let _ = std::fmt::Write::write_fmt(&mut detail, format_args!("; the kernel's sum is the capture's with each reply counted {lag} µs after it reached the wire"));
                if let Some(above) = late.kernel_rtt_above_wire_ns {
                    let _ = std::fmt::Write::write_fmt(
                        &mut detail,
                        format_args!(
                            "; the kernel's own rtt (mountstats) averages {} µs above the wire's",
                            above / 1000
                        ),
                    );
                }
                if lag * 1000 <= late.allowance_ns() {
                    r.verdict = "agree, replies counted later";
                }
            }
            None => detail.push_str("; no reply lag up to 1 s explains the kernel's sum"),
        }
    }
    r.detail = Some(detail);
    Some(r)
}

fn rdma_transports(m: &Mount) -> Vec<&Transport> {
    m.transports
        .iter()
        .filter(|t| matches!(t, Transport::Rdma { .. }))
        .collect()
}

/// The NFSv3 operations either side saw, kernel `ntrans` against calls.
fn op_rows(after: &Mount, before: Option<&Mount>, conns: &[&ConnCounts]) -> Vec<Row> {
    // NFSv4's per-op counters count the client's operations, each one
    // COMPOUND of several; only NFSv3's map one to one onto procedures. A
    // copy without the per-op section has nothing to compare.
    if after.program != Some((100_003, 3)) || after.ops.is_empty() {
        return Vec::new();
    }
    let mut names: Vec<&str> = after
        .ops
        .iter()
        .filter(|o| o.ntrans > 0)
        .map(|o| o.name.as_str())
        .collect();
    for c in conns {
        names.extend(c.ops.keys().map(String::as_str));
    }
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .flat_map(|name| {
            let k = after.op(name).map_or(0, |o| o.ntrans);
            let b = before.and_then(|m| m.op(name)).map_or(0, |o| o.ntrans);
            let capture = conns
                .iter()
                .map(|c| c.ops.get(name).copied().unwrap_or(0))
                .sum();
            let ntrans = row(format!("{name} ntrans"), Some(k.saturating_sub(b)), capture);
            // The kernel counts an operation once however often it sent it
            // (rpc_count_iostats_metrics adds 1 to om_ops, rq_ntrans to
            // om_ntrans): the capture's XIDs of that procedure.
            let k = after.op(name).map_or(0, |o| o.ops);
            let b = before.and_then(|m| m.op(name)).map_or(0, |o| o.ops);
            let calls = conns
                .iter()
                .map(|c| c.op_calls.get(name).copied().unwrap_or(0))
                .sum();
            [
                ntrans,
                row(format!("{name} ops"), Some(k.saturating_sub(b)), calls),
            ]
        })
        .collect()
}

/// The server's address: `addr=` where the options say it (/proc/mounts
/// does, mountstats' `opts:` line does not), else the device's host part
/// (`10.0.0.1:/export`, `[fe80::1]:/export`).
fn server_of(m: &Mount) -> Option<String> {
    if let Some(a) = m.opt("addr") {
        return Some(a.to_string());
    }
    let host = m.device.rsplit_once(":/").map(|(h, _)| h)?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.parse::<std::net::IpAddr>()
        .ok()
        .map(|ip| ip.to_string())
}

/// The same mount in an earlier snapshot.
fn earlier<'a>(m: &Mount, before: &'a [Mount]) -> Option<&'a Mount> {
    before
        .iter()
        .find(|b| b.device == m.device && b.mountpoint == m.mountpoint)
}

/// The client kernel's counters over the window, every RDMA transport of
/// every RDMA mount of `after` less the same transport in `before` (empty:
/// since each mount's start), for the diagnosis. A transport whose counters
/// went backwards (a remount between the snapshots) is left out and counted.
pub fn kernel_view(after: &[Mount], before: &[Mount]) -> KernelView {
    let mut v = KernelView {
        since_mount: before.is_empty(),
        refilled_transports: (!before.is_empty()).then_some(0),
        ..KernelView::default()
    };
    let mut first = true;
    for m in after.iter().filter(|m| m.is_rdma()) {
        v.mounts.push(format!("{} on {}", m.device, m.mountpoint));
        let before_t = earlier(m, before).map(rdma_transports).unwrap_or_default();
        for (i, t) in rdma_transports(m).into_iter().enumerate() {
            let b = before_t.get(i).copied();
            // A transport without a BEFORE line (a mount or an nconnect
            // line born in the window) counts from zero inside it.
            let delta = |f: &str| -> Option<u64> {
                let a = t.rdma(f)?;
                match b {
                    Some(b) => a.checked_sub(b.rdma(f)?),
                    None => Some(a),
                }
            };
            if delta("sends").is_none() && t.rdma("sends").is_some() {
                v.reset_transports += 1;
                continue;
            }
            v.transports += 1;
            let segs = ["read_chunk_count", "write_chunk_count", "reply_chunk_count"]
                .iter()
                .map(|f| delta(f))
                .sum::<Option<u64>>();
            let fields = [
                (&mut v.local_inv_needed, delta("local_inv_needed")),
                (&mut v.chunk_segments, segs),
                (&mut v.mrs_allocated, delta("mrs_allocated")),
                (&mut v.mrs_orphaned, delta("mrs_orphaned")),
            ];
            for (acc, x) in fields {
                *acc = if first {
                    x
                } else {
                    acc.zip(x).map(|(a, x)| a + x)
                };
            }
            first = false;
            if let (Some(r), Some(_)) = (v.refilled_transports.as_mut(), b) {
                if delta("mrs_allocated").unwrap_or(0) > 0 && delta("connect_count") == Some(0) {
                    *r += 1;
                }
            }
        }
    }
    v
}

/// Each RDMA mount of `after` (less `before`, the same mount in an earlier
/// snapshot) against the capture's connections to its server.
pub fn compare(after: &[Mount], before: &[Mount], wire: &WireCounts) -> Vec<MountComparison> {
    after
        .iter()
        .filter(|m| m.is_rdma())
        .map(|m| {
            let earlier = earlier(m, before);
            let server = server_of(m);
            let mut conns: Vec<&ConnCounts> = wire
                .conns
                .values()
                .filter(|c| c.server.is_some() && c.server == server)
                .collect();
            conns.sort_by_key(|c| c.first_ts_ns);
            let after_t = rdma_transports(m);
            let before_t = earlier.map(rdma_transports).unwrap_or_default();
            let late = Lateness::of(m, earlier, &conns);
            let mut rows = transport_rows(&after_t, &before_t, &conns, &late);
            rows.extend(op_rows(m, earlier, &conns));
            let (per_transport, per_transport_skipped) =
                per_transport(&after_t, &before_t, &conns, &late);
            let mut notes = notes(&rows, &conns, wire);
            let failed = kernel_field(&after_t, &before_t, "failed_marshal_count").unwrap_or(0);
            notes.extend(failed_marshal(&rows, failed));
            MountComparison {
                notes,
                device: m.device.clone(),
                mountpoint: m.mountpoint.clone(),
                server,
                transports: after_t.len(),
                connections: conns.len(),
                rows,
                per_transport,
                per_transport_skipped,
            }
        })
        .collect()
}

fn differs(rows: &[Row], field: &str) -> Option<(u64, u64)> {
    rows.iter()
        .find(|r| r.field == field && r.verdict == "differ")
        .and_then(|r| Some((r.kernel?, r.capture)))
}

/// What the capture itself says about the differences in `rows`.
/// A call whose marshaling failed (out of MRs or buffers: `xprtrdma_nomrs_err`
/// on the kernel's side) had its segments counted before it failed, and
/// again when it was marshaled anew and sent.
fn failed_marshal(rows: &[Row], failed: u64) -> Option<String> {
    let extra: u64 = ["reply_chunk_count", "read_chunk_count", "write_chunk_count"]
        .iter()
        .filter_map(|f| differs(rows, f))
        .map(|(k, c)| k.saturating_sub(c))
        .sum();
    (failed > 0 && extra > 0).then(|| format!(
        "the kernel failed to marshal {failed} call(s) (failed_marshal_count; out of MRs or buffers) after counting some of their chunk segments, then marshaled them again: {extra} segment(s) counted more than were sent"
    ))
}

fn notes(rows: &[Row], conns: &[&ConnCounts], wire: &WireCounts) -> Vec<String> {
    let mut notes = Vec::new();
    if let (Some((first, last)), Some(until)) = (wire.capture, wire.until_ns) {
        if last < until.saturating_sub(1_000_000_000) {
            notes.push(format!(
                "the capture ends {:.3} s before AFTER was taken (--until): what happened in between is in the kernel's counters only",
                (until - last) as f64 / 1e9
            ));
        }
        if let Some(since) = wire.since_ns.filter(|s| first > s + 1_000_000_000) {
            notes.push(format!(
                "the capture starts {:.3} s after BEFORE was taken (--since): what happened in between is in the kernel's counters only",
                (first - since) as f64 / 1e9
            ));
        }
    }
    if wire.until_ns.is_none() && differs(rows, "sends").is_some_and(|(k, c)| c > k) {
        notes.push("the capture holds calls the kernel had not sent when AFTER was taken: give --until (an unmount's RPCs, NFSv4's DESTROY_SESSION and DESTROY_CLIENTID, come after its last snapshot)".into());
    }
    let malformed: u64 = conns.iter().map(|c| c.malformed).sum();
    if malformed > 0 {
        notes.push(format!(
            "{malformed} header(s) on these connections could not be parsed: bad_reply_count counts a reply the kernel could not parse, the capture only its RDMA_ERROR replies"
        ));
    }
    let resent: u64 = conns.iter().map(|c| c.lost_or_resent).sum();
    if resent > 0 && differs(rows, "total_rdma_reply").is_some() {
        notes.push(format!(
            "{resent} packet(s) on these connections were sent again or missed by the capture: the bytes written are counted from the packets the capture holds, the kernel's from the replies' write lists"
        ));
    }
    let reconnected = conns.len() > 1 || conns.iter().any(|c| !c.established);
    let remarshaled = ["reply_chunk_count", "read_chunk_count", "write_chunk_count"]
        .iter()
        .any(|f| differs(rows, f).is_some_and(|(k, c)| k > c));
    if reconnected && remarshaled && differs(rows, "sends").is_none() {
        notes.push("the kernel counts more chunk segments than the capture with the same sends, on a connection that reconnected: it counts a call's segments each time it marshals the call, and a call it marshals but does not send (a retransmission on the same connection, which it refuses after marshaling and drops the connection instead; a Send that fails to post) counts without a Send".into());
    }
    notes
}

/// Transport by transport, when there is one connection per transport; a
/// reconnect gives a transport several connections, so then only the sums
/// are compared.
fn per_transport(
    after: &[&Transport],
    before: &[&Transport],
    conns: &[&ConnCounts],
    late: &Lateness,
) -> (Vec<Vec<Row>>, Option<String>) {
    if after.len() < 2 {
        return (Vec::new(), None);
    }
    if after.len() != conns.len() || (!before.is_empty() && before.len() != after.len()) {
        return (
            Vec::new(),
            Some(format!(
                "{} transports and {} connections in the capture: reconnects or connections outside the capture window, so only the sums are compared",
                after.len(),
                conns.len()
            )),
        );
    }
    let rows = after
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let b: Vec<&Transport> = before.get(i).copied().into_iter().collect();
            transport_rows(&[*t], &b, &[conns[i]], late)
        })
        .collect();
    (rows, None)
}

/// The comparison as text.
pub fn text(mounts: &[MountComparison]) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    if mounts.is_empty() {
        s.push_str(
            "no RDMA mount in the mountstats given (no proto=rdma mount, no xprt: rdma line)\n",
        );
    }
    for m in mounts {
        let _ = writeln!(
            s,
            "mount {} on {} (server {}): {} transport(s); {} connection(s) to it in the capture; {} disagreement(s)",
            m.device,
            m.mountpoint,
            m.server.as_deref().unwrap_or("unknown"),
            m.transports,
            m.connections,
            m.disagreements()
        );
        table(&mut s, &m.rows, "  ");
        for (i, rows) in m.per_transport.iter().enumerate() {
            let _ = writeln!(s, "  transport {} (xprt line {})", i + 1, i + 1);
            table(&mut s, rows, "    ");
        }
        if let Some(why) = &m.per_transport_skipped {
            let _ = writeln!(s, "  per transport: not compared: {why}");
        }
        for n in &m.notes {
            let _ = writeln!(s, "  note: {n}");
        }
    }
    s
}

fn table(s: &mut String, rows: &[Row], indent: &str) {
    use std::fmt::Write as _;
    let _ = writeln!(
        s,
        "{indent}{:<22} {:>12} {:>12}  verdict",
        "field", "kernel", "capture"
    );
    for r in rows {
        let kernel = r.kernel.map_or("-".to_string(), |k| k.to_string());
        let _ = write!(
            s,
            "{indent}{:<22} {:>12} {:>12}  {}",
            r.field, kernel, r.capture, r.verdict
        );
        let _ = match &r.detail {
            Some(d) => writeln!(s, " ({d})"),
            None => writeln!(s),
        };
    }
}

#[cfg(test)]
mod tests;
