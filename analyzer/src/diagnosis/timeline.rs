//! Each client's connections in time order: when each was requested,
//! established, torn down and closed (from its CM messages), the requests
//! that went unanswered, and the outages between them. One computation for
//! every front end: `report` prints and writes it, the TUI draws it.
//!
//! An outage is named after a connection that was left with calls
//! unanswered and then torn down or replaced: it runs from that
//! connection's last message (the last time an RPC moved on it) to the
//! next connection's establishment (RTU; its first sight when the capture
//! missed its CM exchange), or to the capture's end when none came (then
//! only if that is a second or more: a connection torn down as the capture
//! ends is a capture that stopped).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::rules::UNRESPONSIVE_NS;
use crate::engine::{CmEvent, CmMsg, CmState, ConnId, Connection, Role, State};

/// One connection on a client's timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineEntry {
    /// The connection.
    pub connection: ConnId,
    /// Where its CM exchange ended.
    pub cm_state: CmState,
    /// When it was first seen (its CM REQ when the capture has it).
    pub first_ts_ns: u64,
    /// Its last RPC-over-RDMA message or RDMA operation.
    pub last_ts_ns: u64,
    /// Its CM frames (REQ, REP, RTU, DREQ, DREP, REJ, retries included;
    /// on iWARP its MPA Request and Reply and TCP FIN and RST).
    pub cm_frames: Vec<u64>,
    /// Time from the previous connection's last message to this one's
    /// first sight, ms (`null` for the client's first).
    pub gap_before_ms: Option<f64>,
    /// Its CM messages, oldest first: which, when, in which frame, from whom
    /// (the first 32; `cm` and `cm_frames` leave out the rest).
    pub cm: Vec<CmEvent>,
    /// CM messages past the first 32, counted, not kept.
    pub cm_not_kept: u32,
    /// When it was established: its RTU (its REP when no RTU was seen);
    /// `null` when never, or before the capture started.
    pub established_ts_ns: Option<u64>,
    /// When it was torn down: its first DREQ or REJ (`null`: not seen).
    pub torn_down_ts_ns: Option<u64>,
    /// Who tore it down (`null`: not seen).
    pub torn_down_by: Option<Role>,
    /// When it was closed: its first DREP (`null`: not seen).
    pub closed_ts_ns: Option<u64>,
    /// Connection requests that got no REP: sent again after the CM's
    /// timeout, never answered, or rejected (REJ).
    pub failed_requests: u32,
    /// Calls it carried that no reply answered on it.
    pub unanswered_calls: u64,
    /// It is an iWARP connection: its set-up is the MPA exchange, its
    /// teardown TCP's FIN or RST (the words its descriptions use).
    pub iwarp: bool,
}

/// A time a client's RPCs could not move: a connection left with calls
/// unanswered, until the next one was established.
#[derive(Debug, Clone, PartialEq)]
pub struct Outage {
    /// The connection that stopped answering.
    pub connection: ConnId,
    /// Its last message: the start of the outage.
    pub from_ts_ns: u64,
    /// Calls left unanswered on it.
    pub unanswered_calls: u64,
    /// When it was torn down (`null`: not seen).
    pub torn_down_ts_ns: Option<u64>,
    /// The connection that replaced it (`null`: none before the capture ended).
    pub next: Option<ConnId>,
    /// When that one was established: the end of the outage (`null`: never).
    pub reestablished_ts_ns: Option<u64>,
    /// From the last message to the re-establishment, or to the capture's
    /// end when there was none, ms.
    pub duration_ms: f64,
    /// From the teardown to the re-establishment, ms: the time without a
    /// connection (`null` when either is not seen).
    pub without_connection_ms: Option<f64>,
}

/// A client's connections in time order.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientTimeline {
    /// The client's address (IP, GID or LID), `unknown` when not seen.
    pub client: String,
    /// Its connections, oldest first.
    pub connections: Vec<TimelineEntry>,
    /// Its outages, oldest first.
    pub outages: Vec<Outage>,
}

/// Each client's connections (those `keep` keeps) in time order, with the
/// outages between them.
pub fn timeline(state: &State, keep: impl Fn(&Connection) -> bool) -> Vec<ClientTimeline> {
    let mut by_client: BTreeMap<String, Vec<&Connection>> = BTreeMap::new();
    for c in state.connections.values().filter(|c| keep(c)) {
        let client = c
            .client
            .map_or_else(|| "unknown".to_string(), |q| q.addr.to_string());
        by_client.entry(client).or_default().push(c);
    }
    let end = state.totals.last_ts_ns;
    by_client
        .into_iter()
        .map(|(client, mut cs)| {
            cs.sort_by_key(|c| (c.first_ts_ns, c.id));
            let mut prev_last: Option<u64> = None;
            let connections: Vec<TimelineEntry> = cs
                .into_iter()
                .map(|c| {
                    let gap = prev_last.map(|l| c.first_ts_ns.saturating_sub(l) as f64 / 1e6);
                    prev_last = Some(prev_last.map_or(c.last_ts_ns, |l| l.max(c.last_ts_ns)));
                    entry(c, gap)
                })
                .collect();
            let outages = outages(&connections, end);
            ClientTimeline {
                client,
                connections,
                outages,
            }
        })
        .collect()
}

fn entry(c: &Connection, gap_before_ms: Option<f64>) -> TimelineEntry {
    let first = |is: fn(CmMsg) -> bool| c.cm_events.iter().find(|e| is(e.message));
    // iWARP's MPA and TCP messages stand for the CM's: MPA Request for REQ,
    // MPA Reply for REP and RTU, FIN for DREQ, RST or the second FIN for DREP.
    let teardown = first(CmMsg::ends);
    let established = first(CmMsg::establishes).or_else(|| first(CmMsg::accepts));
    let reqs = |before: Option<u64>| {
        c.cm_events
            .iter()
            .filter(|e| e.message.requests() && before.is_none_or(|b| e.ts_ns <= b))
            .count() as u32
    };
    // Every REQ before the answered one went unanswered; without a REP
    // none was answered.
    let failed_requests = match first(CmMsg::accepts) {
        Some(rep) => reqs(Some(rep.ts_ns)).saturating_sub(1),
        None => reqs(None),
    };
    let closed = first(|m| matches!(m, CmMsg::Drep | CmMsg::Rst)).or_else(|| {
        c.cm_events
            .iter()
            .filter(|e| e.message == CmMsg::Fin)
            .nth(1)
    });
    TimelineEntry {
        iwarp: c.is_iwarp(),
        connection: c.id,
        cm_state: c.cm_state,
        first_ts_ns: c.first_ts_ns,
        last_ts_ns: c.last_ts_ns,
        cm_frames: c.cm_frames().collect(),
        gap_before_ms,
        cm: c.cm_events.clone(),
        cm_not_kept: c.cm_events_not_kept,
        established_ts_ns: established.map(|e| e.ts_ns),
        torn_down_ts_ns: teardown.map(|e| e.ts_ns),
        torn_down_by: teardown.map(|e| e.from),
        closed_ts_ns: closed.map(|e| e.ts_ns),
        failed_requests,
        unanswered_calls: c.calls.saturating_sub(c.replies),
    }
}

/// The outages among one client's connections (oldest first); `end` is
/// the capture's last frame.
fn outages(cs: &[TimelineEntry], end: Option<u64>) -> Vec<Outage> {
    let mut v = Vec::new();
    for (i, a) in cs.iter().enumerate() {
        // The next connection started after this one's last message (one
        // running beside it, as with nconnect, is not its replacement).
        let next = cs
            .iter()
            .skip(i + 1)
            .find(|b| b.first_ts_ns >= a.last_ts_ns);
        if a.unanswered_calls == 0 || (a.torn_down_ts_ns.is_none() && next.is_none()) {
            continue;
        }
        // A connection whose CM exchange the capture missed was up when
        // first seen.
        let up = next.and_then(|b| {
            b.established_ts_ns
                .or((b.cm_state == CmState::NotSeen).then_some(b.first_ts_ns))
        });
        let until = up.or(end).unwrap_or(a.last_ts_ns);
        // Torn down at the capture's end, nothing after: the capture
        // stopped, as for a call unanswered at the end (`server_unresponsive`
        // takes the same second to tell them apart).
        if next.is_none() && until.saturating_sub(a.last_ts_ns) < UNRESPONSIVE_NS {
            continue;
        }
        v.push(Outage {
            connection: a.connection,
            from_ts_ns: a.last_ts_ns,
            unanswered_calls: a.unanswered_calls,
            torn_down_ts_ns: a.torn_down_ts_ns,
            next: next.map(|b| b.connection),
            reestablished_ts_ns: up,
            duration_ms: until.saturating_sub(a.last_ts_ns) as f64 / 1e6,
            without_connection_ms: a
                .torn_down_ts_ns
                .zip(up)
                .map(|(d, u)| u.saturating_sub(d) as f64 / 1e6),
        });
    }
    v
}

/// Seconds since `start` (the capture's first frame), `?` when unknown.
fn rel(ts: u64, start: Option<u64>) -> String {
    start.map_or_else(
        || "?".to_string(),
        |s| format!("{:.3} s", ts.saturating_sub(s) as f64 / 1e9),
    )
}

fn side(r: Role) -> &'static str {
    match r {
        Role::Client => "the client",
        Role::Server => "the server",
    }
}

impl TimelineEntry {
    /// How its set-up and teardown are named on its fabric.
    pub fn words(&self) -> SetupWords {
        setup_words(self.iwarp)
    }

    /// Its life in one line: requested, established, last message, torn
    /// down, closed, with times since `start` (the capture's first frame).
    pub fn describe(&self, start: Option<u64>) -> String {
        let mut s = format!("{}:", self.connection);
        let at = |ts| rel(ts, start);
        match self.cm.iter().find(|e| e.message.requests()) {
            Some(req) => {
                let _ = write!(s, " {} {}", req.message.as_str(), at(req.ts_ns));
            }
            None => {
                let _ = write!(
                    s,
                    " up before the capture (first seen {})",
                    at(self.first_ts_ns)
                );
            }
        }
        if self.failed_requests > 0 {
            let how = if self.cm_state == CmState::Rejected {
                "rejected"
            } else {
                "unanswered"
            };
            let _ = write!(s, ", {} request(s) {how}", self.failed_requests);
        }
        if let Some(e) = self.established_ts_ns {
            let _ = write!(s, ", established {}", at(e));
        } else if !matches!(self.cm_state, CmState::NotSeen | CmState::Rejected) {
            // A rejected one says so in its count of requests.
            let _ = write!(s, ", never established");
        }
        let _ = write!(s, ", last message {}", at(self.last_ts_ns));
        if let Some(d) = self.torn_down_ts_ns {
            let by = self.torn_down_by.map_or("", side);
            let what = self
                .cm
                .iter()
                .find(|e| e.message.ends())
                .map_or(self.words().teardown, |e| e.message.as_str());
            let _ = write!(s, ", torn down {} ({what} from {by})", at(d));
        }
        if let Some(c) = self.closed_ts_ns {
            let _ = write!(s, ", closed {}", at(c));
        }
        if self.unanswered_calls > 0 {
            let _ = write!(s, "; {} call(s) unanswered", self.unanswered_calls);
        }
        s
    }
}

impl Outage {
    /// The outage in one line, times since `start` (the capture's first frame).
    pub fn describe(&self, start: Option<u64>) -> String {
        let at = |ts| rel(ts, start);
        let mut s = format!(
            "outage {:.3} s: {} call(s) unanswered on {} after its last message at {}",
            self.duration_ms / 1e3,
            self.unanswered_calls,
            self.connection,
            at(self.from_ts_ns)
        );
        if let Some(d) = self.torn_down_ts_ns {
            let _ = write!(s, ", torn down at {}", at(d));
        }
        match (self.next, self.reestablished_ts_ns) {
            (Some(n), Some(u)) => {
                let _ = write!(s, ", {n} up at {}", at(u));
            }
            (Some(n), None) => {
                let _ = write!(s, ", {n} never established");
            }
            (None, _) => {
                let _ = write!(s, ", no new connection before the capture ended");
            }
        }
        if let Some(w) = self.without_connection_ms {
            let _ = write!(s, " ({:.3} s without a connection)", w / 1e3);
        }
        s
    }
}

/// How a connection's set-up and teardown are named on its fabric: the
/// InfiniBand CM's messages (on RoCE too), or on iWARP the MPA exchange
/// that stands for them and TCP's FIN and RST that end it (RFC 5044 7.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetupWords {
    /// The set-up as a whole: `CM exchange`, `MPA exchange`.
    pub exchange: &'static str,
    /// Its messages: `CM messages`, `MPA frames`.
    pub messages: &'static str,
    /// The frames of set-up and teardown: `CM frames`, `MPA/TCP frames`.
    pub frames: &'static str,
    /// The client's request: `REQ`, `MPA Request`.
    pub request: &'static str,
    /// The server's answer: `REP`, `MPA Reply`.
    pub reply: &'static str,
    /// What a side tears the connection down with: `DREQ`, `FIN`.
    pub teardown: &'static str,
}

const CM_WORDS: SetupWords = SetupWords {
    exchange: "CM exchange",
    messages: "CM messages",
    frames: "CM frames",
    request: "REQ",
    reply: "REP",
    teardown: "DREQ",
};

const MPA_WORDS: SetupWords = SetupWords {
    exchange: "MPA exchange",
    messages: "MPA frames",
    frames: "MPA/TCP frames",
    request: "MPA Request",
    reply: "MPA Reply",
    teardown: "FIN",
};

/// The words for a connection's set-up on iWARP (`iwarp`) or on the CM's
/// fabrics (InfiniBand, RoCE).
pub const fn setup_words(iwarp: bool) -> SetupWords {
    if iwarp {
        MPA_WORDS
    } else {
        CM_WORDS
    }
}
