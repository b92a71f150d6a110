//! The rules: when each cause is named, and how its impact is measured.
//! `docs/diagnosis.md` says the same in words; the thresholds are here.

use super::{Cause, CauseName, Diagnosis, Examples, Impact, Peer, Tally};
use crate::engine::{CmState, State, Transaction};

/// `server_time`: an RPC the server holds this long is slow for any NFS
/// server (local storage answers in well under 10 ms; the lab's emulated
/// guests take 40-60 ms per RPC, transport included, and stay below it).
pub(super) const SERVER_SLOW_NS: u64 = 100_000_000;
/// `server_time`: named when the slow RPCs' server time is at least this
/// share of all the RPCs' wire time. A share, not a median: a mount's
/// quick metadata calls outnumber the few WRITEs a slow disk holds for
/// most of the time (`captures/diag/diag-slow-server.pcap`: 16 WRITEs of
/// 43 RPCs, 85% of the time).
pub(super) const SERVER_SHARE: f64 = 0.5;
/// `credit_window_full`: the window full for at least this share of the
/// connection's life (calls beyond it wait in the client, unseen on the
/// wire: the time at the limit is what the wire can measure of them).
pub(super) const CREDIT_TIME_SHARE: f64 = 0.05;
/// `server_unresponsive`: a call on a live connection unanswered for at
/// least this long at the capture's end (shorter is a capture that stopped
/// right after a call).
pub(super) const UNRESPONSIVE_NS: u64 = 1_000_000_000;
/// `network_loss`: packets sent again (or NAKed as out of sequence) are at
/// least this share of the RDMA frames. Below it they are the odd
/// duplicate (soft-RoCE sends a few twice within a microsecond, as in
/// `v42-reminv.pcap`), which costs no time.
pub(super) const LOSS_SHARE: f64 = 0.005;
/// `reply_chunks_inline_threshold`: at least this share of the RPCs...
pub(super) const CHUNKED_SHARE: f64 = 0.25;
/// ... and at least this many (a mount's few READDIRs and ACL reads go
/// through reply chunks by design, and that is not a cause).
pub(super) const CHUNKED_MIN: u64 = 20;

/// Every rule over `d` and the final `state`.
pub(super) fn all(d: &Diagnosis, state: &State) -> Vec<Cause> {
    let start = state.totals.first_ts_ns;
    let mut v = Vec::new();
    v.extend(reconnect_stall(d, state, start));
    v.extend(server_time(d, start));
    v.extend(credit_window_full(d, state, start));
    v.extend(network_loss(d, state, start));
    v.extend(rnr_retry(d, state, start));
    v.extend(server_unresponsive(d, state, start));
    v.extend(reply_chunks(d, state, start));
    v.extend(counted(
        d,
        &d.overrun,
        CauseName::ReceiveBufferOverrun,
        match d.overrun_by {
            (c, 0) if c > 0 => Peer::Client,
            (0, s) if s > 0 => Peer::Server,
            _ => Peer::Unknown,
        },
        start,
        "Sends larger than the receiver's negotiated inline size",
        "the sender broke RFC 8166 3.3.2 / RFC 8797 4.2: a Send may not exceed the receive size its peer advertised (the peer's receive fails with a local length error and the connection is lost). Fix the sender's inline threshold (Linux client: /proc/sys/sunrpc/rdma_max_inline_write; server: it must honour the client's RFC 8797 receive size)",
    ));
    let rdma_error = Tally {
        count: d.rdma_error.count.max(d.rdma_error_found),
        ..d.rdma_error.clone()
    };
    v.extend(counted(
        d,
        &rdma_error,
        CauseName::RdmaError,
        Peer::Client,
        start,
        "RDMA_ERROR replies instead of RPC replies",
        "the server refused the transport header (RFC 8166 4.5): ERR_VERS means the client spoke another RPC-over-RDMA version; ERR_CHUNK a chunk list the server could not use (too many segments, a reply chunk too small, or after a reconnect a reply that can no longer be sent, RFC 8166 4.5.3). See the examples' calls",
    ));
    v.extend(rpc_errors(d, state, start));
    v.extend(nfs_errors(d, start));
    v.extend(congestion(d, state, start));
    v.extend(super::kernel::causes(d));
    v
}

pub(super) fn impact(
    d: &Diagnosis,
    measured: String,
    time_ns: Option<u64>,
    of_ns: u64,
    rpcs: Option<u64>,
) -> Impact {
    let share_of_time = time_ns
        .filter(|_| of_ns > 0)
        .map(|t| (t as f64 / of_ns as f64).min(1.0));
    // Calls that got no RPC reply (an RDMA_ERROR instead, a Send the
    // server could not receive) are not among the answered operations:
    // the RPCs are at least those affected, so a capture where every call
    // failed scores 100%, not 0.
    let total = rpcs.map_or(d.ops, |n| d.ops.max(n));
    let share_of_rpcs = rpcs
        .filter(|_| total > 0)
        .map(|n| (n as f64 / total as f64).min(1.0));
    Impact {
        measured,
        time_ms: time_ns.map(|t| t as f64 / 1e6),
        share_of_time,
        rpcs_affected: rpcs,
        rpcs_total: total,
        score: share_of_time
            .unwrap_or(0.0)
            .max(share_of_rpcs.unwrap_or(0.0)),
    }
}

fn secs(ts: u64, start: Option<u64>) -> String {
    start.map_or_else(
        || "?".to_string(),
        |s| format!("{:.3} s", ts.saturating_sub(s) as f64 / 1e9),
    )
}

/// Notes a call that retried `of`, a call the server answered "not now":
/// the wait before it is time the application lost to the error.
pub(super) fn note_retry(r: &mut Tally, t: &Transaction, of: u32) {
    r.count += 1;
    // Whole µs from the engine; the sum is kept in ns like the others.
    let wait_ns = t.retry_wait_us.map_or(0, |w| (w * 1000.0).round() as u64);
    r.ns += wait_ns;
    r.ex.conn(t.connection);
    r.ex.xid(t.xid);
    r.ex.frames([t.call_frame]);
    r.ex.at(Some(t.call_ts_ns));
    let label = t.procedure_label();
    r.ex.say(|| {
        format!(
            "{label} xid {:#010x} (frame {}) retried xid {of:#010x} after {:.3} s",
            t.xid,
            t.call_frame,
            wait_ns as f64 / 1e9
        )
    });
}

/// Notes an operation sent on more than one connection: the time before
/// its last transmission is what the reconnect cost the application.
pub(super) fn note_reconnect(r: &mut Tally, t: &Transaction, app: Option<u64>, wire: Option<u64>) {
    r.count += 1;
    let lost = match (app, wire) {
        (Some(a), Some(w)) => a.saturating_sub(w),
        // Still unanswered: what it waited before its last transmission.
        _ => t.call_ts_ns.saturating_sub(t.first_call_ts_ns),
    };
    r.ns += lost;
    for c in &t.earlier_connections {
        r.ex.conn(*c);
    }
    r.ex.conn(t.connection);
    r.ex.xid(t.xid);
    r.ex.frames([t.first_call_frame, t.call_frame]);
    r.ex.frames(t.reply_frame);
    r.ex.at(Some(t.first_call_ts_ns));
    r.ex.at(t.reply_ts_ns.or(Some(t.call_ts_ns)));
    let conns: Vec<String> = t
        .earlier_connections
        .iter()
        .map(ToString::to_string)
        .collect();
    let label = t.procedure_label();
    let xid = t.xid;
    let (first_frame, frame, conn, n) = (
        t.first_call_frame,
        t.call_frame,
        t.connection,
        t.transmissions,
    );
    let reply = t
        .reply_frame
        .map_or("no reply".to_string(), |f| format!("answered in frame {f}"));
    let waited = app.map_or("still waiting".to_string(), |a| {
        format!("the application waited {:.3} s", a as f64 / 1e9)
    });
    r.ex.say(|| {
        format!(
            "{label} xid {xid:#010x}: sent in frame {first_frame} on {}, that connection torn down, sent again in frame {frame} on {conn} ({n} transmissions), {reply}: {waited}",
            conns.join(", ")
        )
    });
}

fn reconnect_stall(d: &Diagnosis, state: &State, start: Option<u64>) -> Option<Cause> {
    let r = &d.reconnect;
    if r.count == 0 {
        return None;
    }
    // An operation still unanswered when the capture ends is in the stall
    // but not in the answered operations' wait: the whole is at least it.
    let of_ns = d.app_wait_ns.max(r.ns);
    let measured = format!(
        "{} operation(s) sent again after their connection was torn down: {:.3} s of application-visible time lost across the disconnection ({:.1}% of the time all RPCs waited)",
        r.count,
        r.ns as f64 / 1e9,
        100.0 * r.ns as f64 / of_ns.max(1) as f64
    );
    let peer = if d.retransmitted.count > 0 {
        Peer::Fabric
    } else {
        Peer::Unknown
    };
    let advice = if d.retransmitted.count > 0 {
        "the connection was lost after RC retransmissions went unanswered (see network_loss): the requester's QP exhausted its retry count and the client reconnected. Fix the loss on the path (the peer's port, PFC/ECN on RoCE, link errors); the stall is the QP's retry time (retry_cnt x local ACK timeout) plus the reconnect"
    } else if iwarp_only(state, &r.ex.connections) {
        // iWARP has no CM DREQ: TCP's FIN or RST tore it down.
        "the connection was torn down with calls outstanding and the client sent them again on a new connection (RFC 8166 4.5.5): find what closed it (the side that sent the FIN or RST, the kernel log); the stall is the time until the new connection carried the call"
    } else {
        "the connection was torn down with calls outstanding and the client sent them again on a new connection (RFC 8166 4.5.5): find what closed it (the DREQ's sender, the kernel log); the stall is the time until the new connection carried the call"
    };
    Some(Cause {
        cause: CauseName::ReconnectStall,
        impact: impact(d, measured, Some(r.ns), of_ns, Some(r.count)),
        peer,
        evidence: r.ex.evidence(start),
        advice: advice.to_string(),
    })
}

fn server_time(d: &Diagnosis, start: Option<u64>) -> Option<Cause> {
    let median = d.server.median_low_ns()?;
    let share = d.server_slow_ns as f64 / d.wire_wait_ns.max(1) as f64;
    if share < SERVER_SHARE {
        return None;
    }
    let measured = format!(
        "{} RPCs the server held at least {:.0} ms each took {:.1}% of the RPCs' time on the wire ({:.3} s of {:.3} s); the server's share of all RPCs: {:.3} s (median at least {:.0} ms per RPC); their data moved for {:.3} s",
        d.server_slow_rpcs,
        SERVER_SLOW_NS as f64 / 1e6,
        100.0 * share,
        d.server_slow_ns as f64 / 1e9,
        d.wire_wait_ns as f64 / 1e9,
        d.server_ns as f64 / 1e9,
        median as f64 / 1e6,
        d.data_ns as f64 / 1e9
    );
    let mut ex: Examples = d.server_ex.clone();
    for (ns, xid, frame, label) in d.slowest_server.iter().rev() {
        ex.xid(*xid);
        ex.frames([*frame]);
        ex.say(|| {
            format!(
                "{label} xid {xid:#010x} (frame {frame}): {:.3} ms in the server",
                *ns as f64 / 1e6
            )
        });
    }
    Some(Cause {
        cause: CauseName::ServerTime,
        impact: impact(
            d,
            measured,
            Some(d.server_slow_ns),
            d.wire_wait_ns,
            Some(d.server_slow_rpcs),
        ),
        peer: Peer::Server,
        evidence: ex.evidence(start),
        advice: "the time is spent in the server between the call's data arriving and its reply data: its nfsd threads (/proc/fs/nfsd/threads), its storage (the export's device latency), its locks; the network and the transfer mode are not the bottleneck".to_string(),
    })
}

fn credit_window_full(d: &Diagnosis, state: &State, start: Option<u64>) -> Option<Cause> {
    let mut ex = Examples::default();
    let mut worst: Option<(f64, String, Peer, String)> = None;
    let mut time_ns = 0;
    let mut span_ns = 0;
    for c in state.connections.values().filter(|c| c.is_rpcrdma()) {
        let Some(granted) = c.granted_max.filter(|g| *g >= 2) else {
            continue;
        };
        if c.peak_in_flight < granted {
            continue;
        }
        let span = c.last_ts_ns.saturating_sub(c.first_ts_ns);
        let share = c.at_limit_ns as f64 / span.max(1) as f64;
        if share < CREDIT_TIME_SHARE {
            continue;
        }
        time_ns += c.at_limit_ns;
        span_ns += span;
        ex.conn(c.id);
        ex.at(Some(c.first_ts_ns));
        ex.at(Some(c.last_ts_ns));
        let (peer, who) = match c.requested {
            Some(r) if r > granted => (
                Peer::Server,
                format!("the server's grant limits: it grants {granted} credits while the client asks for {r}. Raise the server's /proc/sys/sunrpc/svc_rdma/max_requests (RFC 8166 3.3.1)"),
            ),
            Some(r) => (
                Peer::Client,
                format!("the client's request limits: it asks for {r} credits and the server grants {granted}. Raise the client's /proc/sys/sunrpc/rdma_slot_table_entries"),
            ),
            None => (
                Peer::Unknown,
                format!("the window of {granted} credits ran full; which side limits is not known (no credit request seen)"),
            ),
        };
        ex.say(|| {
            format!(
                "{}: {} of {} in flight, at the limit {:.3} ms of {:.3} ms ({:.1}%)",
                c.id,
                c.peak_in_flight,
                granted,
                c.at_limit_ns as f64 / 1e6,
                span as f64 / 1e6,
                100.0 * share
            )
        });
        if worst.as_ref().is_none_or(|w| share > w.0) {
            worst = Some((share, c.id.to_string(), peer, who));
        }
    }
    let (_, conn, peer, advice) = worst?;
    let measured = format!(
        "the credit window was full {:.3} ms of {:.3} ms of the connections' life ({:.1}%; worst {conn}): calls beyond it waited in the client for a credit",
        time_ns as f64 / 1e6,
        span_ns as f64 / 1e6,
        100.0 * time_ns as f64 / span_ns.max(1) as f64
    );
    Some(Cause {
        cause: CauseName::CreditWindowFull,
        impact: impact(d, measured, Some(time_ns), span_ns, None),
        peer,
        evidence: ex.evidence(start),
        advice,
    })
}

fn network_loss(d: &Diagnosis, state: &State, start: Option<u64>) -> Option<Cause> {
    let (r, n) = (&d.retransmitted, &d.psn_naks);
    let lost = r.count + n.count;
    if lost == 0 || (lost as f64) < LOSS_SHARE * state.totals.rdma_frames as f64 {
        return None;
    }
    let mut ex = r.ex.clone();
    for c in &n.ex.connections {
        ex.conn(*c);
    }
    ex.frames(n.ex.frames.iter().copied());
    ex.at(n.ex.first_ts);
    ex.at(n.ex.last_ts);
    for s in &n.ex.sentences {
        ex.say(|| s.clone());
    }
    // Calls whose own Send was sent again count even when their reply came
    // on another connection (the loss that ended the first one).
    let rpcs = d.loss_rpcs.max(r.ex.xids.len() as u64);
    for x in &d.loss_ex.xids {
        ex.xid(*x);
    }
    for c in &d.loss_ex.connections {
        ex.conn(*c);
    }
    let delayed = if d.loss_rpcs > 0 {
        format!(
            "{} RPC(s) were outstanding on a connection while its packets were lost (RC delivers in order: they waited for the resend) and waited {:.3} s on the wire, of the {:.3} s all RPCs waited",
            d.loss_rpcs,
            d.loss_wait_ns as f64 / 1e9,
            d.wire_wait_ns as f64 / 1e9
        )
    } else {
        format!("no reply came on a connection after its packets were lost; {rpcs} call(s) had their own Send resent")
    };
    let measured = format!(
        "{} request packets sent again and {} PSN sequence error NAKs ({} PSN gaps in the capture) over {} RDMA frames; {delayed}",
        r.count, n.count, state.totals.psn_gaps, state.totals.rdma_frames,
    );
    Some(Cause {
        cause: CauseName::NetworkLoss,
        impact: impact(
            d,
            measured,
            Some(d.loss_wait_ns),
            d.wire_wait_ns,
            Some(rpcs),
        ),
        peer: Peer::Fabric,
        evidence: ex.evidence(start),
        advice: "packets were lost between the peers and the RC transport sent them again (IBA 9.7.5): a lossless RoCE fabric loses none. Check PFC and ECN on the switches and NICs, the ports' error and discard counters (ethtool -S, perfquery), and MTU mismatches on the path".to_string(),
    })
}

/// Which side of its connection sent each RNR NAK: the one that had no
/// receive posted. `Unknown` when they differ or a connection's roles are
/// not known.
fn rnr_peer(d: &Diagnosis, state: &State) -> Peer {
    let mut peer = None;
    for (c, from) in &d.rnr_senders {
        let Some(conn) = state.connections.get(c) else {
            return Peer::Unknown;
        };
        let is =
            |k: Option<crate::engine::keys::QpKey>| k.is_some_and(|k| k.addr.to_string() == *from);
        let this = match (is(conn.client), is(conn.server)) {
            (true, false) => Peer::Client,
            (false, true) => Peer::Server,
            _ => return Peer::Unknown,
        };
        if peer.is_some_and(|p| p != this) {
            return Peer::Unknown;
        }
        peer = Some(this);
    }
    peer.unwrap_or(Peer::Unknown)
}

fn rnr_retry(d: &Diagnosis, state: &State, start: Option<u64>) -> Option<Cause> {
    let r = &d.rnr;
    if r.count == 0 {
        return None;
    }
    let measured = format!(
        "{} RNR NAKs: Sends arrived before the receiver had a receive buffer posted, each retried after the RNR timer",
        r.count
    );
    Some(Cause {
        cause: CauseName::RnrRetry,
        impact: impact(d, measured, None, 0, Some(r.count)),
        peer: rnr_peer(d, state),
        evidence: r.ex.evidence(start),
        advice: "the NAK's sender posts too few receives for what its peer sends: RPC-over-RDMA's credits are to prevent exactly this (RFC 8166 3.3.1), so a peer sending beyond its credits, or one granting more than it posted, breaks it; see credit_overrun findings and the sender's receive queue depth".to_string(),
    })
}

fn server_unresponsive(d: &Diagnosis, state: &State, start: Option<u64>) -> Option<Cause> {
    let end = state.totals.last_ts_ns?;
    let mut ex = Examples::default();
    let mut count = 0;
    let mut waited = 0;
    for (id, u) in &d.unanswered {
        let live = state
            .connections
            .get(id)
            .is_some_and(|c| !matches!(c.cm_state, CmState::Closed | CmState::Disconnecting));
        let Some(oldest) = u.oldest_ts else { continue };
        if !live || end.saturating_sub(oldest) < UNRESPONSIVE_NS {
            continue;
        }
        count += u.count;
        waited += end.saturating_sub(oldest);
        ex.conn(*id);
        for x in &u.ex.xids {
            ex.xid(*x);
        }
        ex.frames(u.ex.frames.iter().copied());
        ex.at(u.ex.first_ts);
        ex.at(Some(end));
        ex.say(|| {
            format!(
                "{id}: {} call(s) unanswered, the oldest sent at {} and waiting {:.3} s when the capture ended",
                u.count,
                secs(oldest, start),
                end.saturating_sub(oldest) as f64 / 1e9
            )
        });
    }
    if count == 0 {
        return None;
    }
    let measured = format!(
        "{count} call(s) on connections still up got no reply, the oldest waiting {:.3} s at the capture's end",
        waited as f64 / 1e9
    );
    let of = d.app_wait_ns + waited;
    Some(Cause {
        cause: CauseName::ServerUnresponsive,
        impact: impact(d, measured, Some(waited), of, Some(count)),
        peer: Peer::Server,
        evidence: ex.evidence(start),
        advice: "the server stopped answering while the connection stayed up: look at the server (nfsd threads blocked on storage or a lock: its kernel log, /proc/<nfsd pid>/stack); the client waits its RPC timeout (timeo=) before it retransmits or reconnects".to_string(),
    })
}

fn reply_chunks(d: &Diagnosis, state: &State, start: Option<u64>) -> Option<Cause> {
    let c = &d.chunked;
    if c.count < CHUNKED_MIN || (c.count as f64) < CHUNKED_SHARE * d.ops as f64 {
        return None;
    }
    let threshold = state
        .connections
        .values()
        .filter_map(|c| c.reply_inline_threshold())
        .min();
    let measured = format!(
        "{} of {} RPCs ({:.1}%) had their call or reply moved through a chunk by the inline threshold ({}): one more round trip and responder interrupt each (draft-dnoveck-nfsv4-rpcrdma-rtissues 2.2); the largest such message was {} B",
        c.count,
        d.ops,
        100.0 * c.count as f64 / d.ops.max(1) as f64,
        threshold.map_or("not known".to_string(), |t| format!("{t} B")),
        d.largest_chunked
    );
    Some(Cause {
        cause: CauseName::ReplyChunksInlineThreshold,
        impact: impact(d, measured, None, 0, Some(c.count)),
        peer: Peer::Client,
        evidence: c.ex.evidence(start),
        advice: format!(
            "an inline threshold of at least {} B would keep these messages inline: raise the client's /proc/sys/sunrpc/rdma_max_inline_read (replies) or rdma_max_inline_write (calls) and the server's matching size; both ends advertise it in the RFC 8797 private data, and the smaller one wins",
            d.largest_chunked.next_power_of_two().max(1024) + 1024
        ),
    })
}

fn counted(
    d: &Diagnosis,
    t: &Tally,
    cause: CauseName,
    peer: Peer,
    start: Option<u64>,
    what: &str,
    advice: &str,
) -> Option<Cause> {
    if t.count == 0 {
        return None;
    }
    let measured = format!("{} {what}", t.count);
    Some(Cause {
        cause,
        impact: impact(d, measured, None, 0, Some(t.count)),
        peer,
        evidence: t.ex.evidence(start),
        advice: advice.to_string(),
    })
}

fn rpc_errors(d: &Diagnosis, state: &State, start: Option<u64>) -> Option<Cause> {
    if d.rpc_errors.is_empty() {
        return None;
    }
    let mut ex = Examples::default();
    let mut count = 0;
    let mut parts = Vec::new();
    for (status, t) in &d.rpc_errors {
        count += t.count;
        parts.push(format!("{} {status}", t.count));
        ex.merge(&t.ex);
    }
    // What the client did next: connections made after the first error.
    let after = d.first_rpc_error_ts.map_or(0, |e| {
        state
            .connections
            .values()
            .filter(|c| c.cm_state != CmState::NotSeen && c.first_ts_ns > e)
            .count()
    });
    let next = if after > 0 {
        format!("; the client made {after} new connection(s) after the first one")
    } else {
        String::new()
    };
    let measured = format!(
        "{count} RPC replies rejected their calls ({}){next}",
        parts.join(", ")
    );
    Some(Cause {
        cause: CauseName::RpcErrors,
        impact: impact(d, measured, None, 0, Some(count)),
        peer: Peer::Server,
        evidence: ex.evidence(start),
        advice: "the server answered at the RPC level with an error (RFC 5531 9): SYSTEM_ERR is the server failing to build the reply (on Linux often a reply larger than its reply chunk or inline limit: large ACLs, READDIR), GARBAGE_ARGS a call it could not decode; a client that reconnects after each is in a loop, fix the server side first".to_string(),
    })
}

/// NFS statuses that are answers, not trouble: a lookup of a name that is
/// not there (the shell's PATH walk, a compiler's include search), a create
/// of one that is, a permission the user lacks, a directory not empty, a
/// lock held by someone else, a feature or attribute the server does not
/// offer (clients probe for them), VERIFY/NVERIFY's SAME/NOT_SAME, SECINFO
/// negotiation, a layout or directory delegation refused (the client falls
/// back to plain I/O). Healthy mounts return these all day; the application
/// gets the errno it asked about. Everything else (DELAY/JUKEBOX, STALE,
/// IO, SERVERFAULT, GRACE, RESOURCE, state and session errors, NOSPC, ...)
/// is the server or the protocol state in trouble.
const NFS_ROUTINE: [&str; 19] = [
    "NOENT",
    "EXIST",
    "NOTDIR",
    "ISDIR",
    "NOTEMPTY",
    "NAMETOOLONG",
    "ACCES",
    "ACCESS",
    "PERM",
    "NOTSUPP",
    "ATTRNOTSUPP",
    "SAME",
    "NOT_SAME",
    "DENIED",
    "SYMLINK",
    "NOXATTR",
    "WRONGSEC",
    "LAYOUTUNAVAILABLE",
    "DIRDELEG_UNAVAIL",
];

/// The NFS status name less its `NFS3ERR_` / `NFS4ERR_` prefix; `None` for
/// a success, the name as is for one no RFC names (`nfsstat4 N`).
fn nfs_err_suffix(status: &str) -> Option<&str> {
    if status == "NFS3_OK" || status == "NFS4_OK" {
        return None;
    }
    Some(
        status
            .strip_prefix("NFS3ERR_")
            .or_else(|| status.strip_prefix("NFS4ERR_"))
            .unwrap_or(status),
    )
}

/// True for an NFS status the `nfs_errors` rule counts: an error that is
/// not routine (see [`NFS_ROUTINE`]). An unnamed code counts: a server
/// answering with codes no RFC defines is itself a finding.
pub(super) fn nfs_error(status: &str) -> bool {
    nfs_err_suffix(status).is_some_and(|e| !NFS_ROUTINE.contains(&e))
}

/// What to do about one NFS status, and which peer it points at.
fn nfs_advice(status: &str) -> (Peer, &'static str) {
    match nfs_err_suffix(status).unwrap_or(status) {
        "JUKEBOX" | "DELAY" => (
            Peer::Server,
            "DELAY/JUKEBOX: the server could not answer now (a file being recalled from HSM or tape, a delegation being recalled from another client, nfsd out of memory or threads) and told the client to retry; the Linux client waits before each retry (NFSv3 JUKEBOX 5 s, NFSv4 DELAY from 0.1 s doubling to 15 s), so each costs far more than its round trip: find what the server waited for (delegation conflicts between clients, the HSM, nfsd threads)",
        ),
        "STALE" | "BADHANDLE" | "FHEXPIRED" => (
            Peer::Server,
            "STALE/BADHANDLE: the file handle no longer names a file on the server (the file was removed by another client, the export was re-created or moved to another filesystem, fsid changed after a server restart or failover); give the export a fixed fsid= and remount the clients",
        ),
        "IO" | "SERVERFAULT" | "NXIO" | "NODEV" | "REMOTE" => (
            Peer::Server,
            "IO/SERVERFAULT: the server's filesystem or storage failed the operation: look at the server's kernel log and the export's device",
        ),
        "GRACE" | "NO_GRACE" | "RECLAIM_BAD" | "RECLAIM_CONFLICT" => (
            Peer::Server,
            "GRACE: the server restarted and is in its grace period (RFC 8881 8.4.2): clients wait until it ends (nfsd's grace time, 90 s by default) before opening or locking",
        ),
        "RESOURCE" | "REQ_TOO_BIG" | "REP_TOO_BIG" | "REP_TOO_BIG_TO_CACHE" | "TOO_MANY_OPS" => (
            Peer::Server,
            "RESOURCE/REP_TOO_BIG: a request or reply beyond what the server's session or memory allows (RFC 8881 2.10.6.4): compare the session's negotiated ca_maxrequestsize/ca_maxresponsesize with the client's rsize/wsize",
        ),
        "NOSPC" | "DQUOT" | "FBIG" | "ROFS" | "MLINK" => (
            Peer::Server,
            "NOSPC/DQUOT/ROFS: the export is full, over quota or read-only",
        ),
        "EXPIRED" | "STALE_CLIENTID" | "STALE_STATEID" | "OLD_STATEID" | "BAD_STATEID"
        | "BAD_SEQID" | "ADMIN_REVOKED" | "DELEG_REVOKED" | "BADSESSION" | "DEADSESSION"
        | "BADSLOT" | "SEQ_MISORDERED" | "SEQ_FALSE_RETRY" | "BAD_HIGH_SLOT"
        | "CONN_NOT_BOUND_TO_SESSION" | "CB_PATH_DOWN" | "LEASE_MOVED" => (
            Peer::Client,
            "state and session errors (EXPIRED, BAD_STATEID, BADSESSION, SEQ_MISORDERED, ...): the client's lease, state or session is not what the server holds: a lease that expired while the client could not reach the server (a partition longer than the lease time), a server restart, or a client bug; each sends the client into state recovery (RFC 8881 8.6, 2.10.6)",
        ),
        _ => (
            Peer::Server,
            "see the status's definition (RFC 1813 2.6 for NFSv3, RFC 8881 15.1 for NFSv4.x) and the server's log",
        ),
    }
}

fn nfs_errors(d: &Diagnosis, start: Option<u64>) -> Option<Cause> {
    if d.nfs_errors == 0 {
        return None;
    }
    // The largest first; ties by status and op.
    let mut pairs: Vec<(&(String, String), &Tally)> = d.nfs_by_status.iter().collect();
    pairs.sort_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.cmp(b.0)));
    let mut ex = Examples::default();
    let mut parts = Vec::new();
    let mut advice: Vec<&str> = Vec::new();
    let mut peer = None;
    for ((status, op), t) in &pairs {
        parts.push(format!("{} {status} in {op}", t.count));
        let (p, a) = nfs_advice(status);
        // The most frequent status says which peer to fix first.
        peer.get_or_insert(p);
        if !advice.contains(&a) {
            advice.push(a);
        }
        ex.merge(&t.ex);
    }
    let counted: u64 = pairs.iter().map(|(_, t)| t.count).sum();
    let more = d.nfs_errors.saturating_sub(counted);
    if more > 0 {
        parts.push(format!("{more} more of other statuses"));
    }
    let mut measured = format!(
        "{} of {} RPCs ({:.1}%) were answered with an NFS error that is not routine ({})",
        d.nfs_errors,
        d.ops,
        100.0 * d.nfs_errors as f64 / d.ops.max(1) as f64,
        parts.join(", ")
    );
    // The client's waits before retrying DELAY/JUKEBOX are time the
    // application lost, on top of the RPCs' own: the share is of both.
    let r = &d.nfs_retries;
    let waited = (r.count > 0).then_some(r.ns);
    let of_ns = d.app_wait_ns.saturating_add(r.ns);
    if r.count > 0 {
        measured.push_str(&format!(
            "; {} retr{} after DELAY/JUKEBOX, waited {:.3} s in total before them ({:.1}% of the time the RPCs and those waits took)",
            r.count,
            if r.count == 1 { "y" } else { "ies" },
            r.ns as f64 / 1e9,
            100.0 * r.ns as f64 / of_ns.max(1) as f64
        ));
        ex.merge(&r.ex);
    }
    Some(Cause {
        cause: CauseName::NfsErrors,
        impact: impact(d, measured, waited, of_ns, Some(d.nfs_errors)),
        peer: peer.unwrap_or(Peer::Server),
        evidence: ex.evidence(start),
        advice: advice.join("; "),
    })
}

/// Whether every one of `conns` that the state still holds is iWARP's
/// (and one is): its set-up and teardown are then named by MPA and TCP.
fn iwarp_only(state: &State, conns: &[crate::engine::ConnId]) -> bool {
    let mut known = conns
        .iter()
        .filter_map(|c| state.connections.get(c))
        .peekable();
    known.peek().is_some() && known.all(|c| c.is_iwarp())
}

/// `congestion`: named at the first mark. A lossless RoCE fabric marks
/// (ECN) before it pauses (PFC) or drops, so a mark is the earliest sign
/// of a queue building up; on a healthy, uncongested path there are none.
fn congestion(d: &Diagnosis, state: &State, start: Option<u64>) -> Option<Cause> {
    let mut ex = Examples::default();
    let (mut ce, mut cnps, mut fecn, mut becn, mut iwarp) = (0, 0, 0, 0, 0);
    // Counted apart from the examples, which keep only the first few.
    let mut marked: u64 = 0;
    for c in state.connections.values() {
        let g = &c.congestion;
        if g.marks() == 0 {
            continue;
        }
        marked += 1;
        ce += g.ecn_ce;
        cnps += g.cnps;
        fecn += g.fecn;
        becn += g.becn;
        ex.conn(c.id);
        ex.frames(g.frames.iter().copied());
        ex.at(g.first_ts_ns);
        ex.at(g.last_ts_ns);
        let (from, to) = (
            g.first_ts_ns.map_or("?".to_string(), |t| secs(t, start)),
            g.last_ts_ns.map_or("?".to_string(), |t| secs(t, start)),
        );
        // iWARP has no BTH: only the IP header's CE mark applies there.
        iwarp += u64::from(c.is_iwarp());
        ex.say(|| {
            if c.is_iwarp() {
                return format!("{}: {} ECN CE from {from} to {to}", c.id, g.ecn_ce);
            }
            format!(
                "{}: {} ECN CE, {} CNPs, {} FECN, {} BECN from {from} to {to}",
                c.id, g.ecn_ce, g.cnps, g.fecn, g.becn
            )
        });
    }
    if marked == 0 {
        // Marked frames whose connection is not known are in
        // totals.congestion_frames; with no connection they hit no RPC.
        return None;
    }
    for x in &d.congested.ex.xids {
        ex.xid(*x);
    }
    let n = d.congested.count;
    let marks = if iwarp == marked {
        format!("{ce} ECN CE marks")
    } else {
        format!("{ce} ECN CE marks, {cnps} CNPs, {fecn} FECN, {becn} BECN")
    };
    let measured = format!(
        "the fabric signalled congestion on {marked} connection(s): {marks}; {n} of {} RPCs were in flight on a connection while it was marked",
        d.ops
    );
    let mut advice = CONGESTION_ADVICE.to_string();
    if iwarp > 0 {
        advice.push_str(IWARP_CONGESTION_ADVICE);
    }
    Some(Cause {
        cause: CauseName::Congestion,
        impact: impact(d, measured, None, 0, Some(n)),
        peer: Peer::Fabric,
        evidence: ex.evidence(start),
        advice,
    })
}

const CONGESTION_ADVICE: &str = "switch queues on the path filled up and the congestion control slowed the senders down (RoCEv2 DCQCN: a CE mark makes the receiver send a CNP and the sender cut its rate; InfiniBand: FECN/BECN). A few marks under a burst are the control working; sustained marks mean a hot link or an incast (many senders into one port): check the switches' ECN marking thresholds (min/max of the WRED/ECN profile) and queue occupancy, that PFC is on the same priority as the RoCE traffic (without it a congested queue drops), and the NICs' DCQCN settings (ethtool -S rp_cnp_handled/np_cnp_sent, np_ecn_marked_roce_packets)";

/// On iWARP the CE mark is answered by TCP, not DCQCN.
const IWARP_CONGESTION_ADVICE: &str = "; on iWARP the receiver's TCP echoes a CE mark (ECE) and the sender's TCP halves its window: check that ECN is negotiated on the connection (net.ipv4.tcp_ecn on a software stack such as siw) and the same switch thresholds";
