//! Each client's connection timeline as `report --json` and the JSON Schema
//! see it: the diagnosis's [`ClientTimeline`] with its ids and CM messages
//! named by the output layer. The doc comments are the schema's
//! descriptions.

use schemars::JsonSchema;
use serde::Serialize;

use crate::diagnosis::timeline::{ClientTimeline, Outage, TimelineEntry};
use crate::engine::CmEvent;
use crate::output::view::{CmMsgView, CmStateView, ConnIdView, RoleView};

/// One CM message of a connection: which, when, in which frame, from whom.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename = "CmEvent")]
pub struct CmEventView {
    /// Frame number.
    pub frame: u64,
    /// Capture time, ns since the epoch.
    #[serde(serialize_with = "super::exact::decimal")]
    #[schemars(with = "String")]
    pub ts_ns: u64,
    /// The message.
    pub message: CmMsgView,
    /// Who sent it.
    pub from: RoleView,
}

impl From<&CmEvent> for CmEventView {
    fn from(x: &CmEvent) -> Self {
        CmEventView {
            frame: x.frame,
            ts_ns: x.ts_ns,
            message: x.message.into(),
            from: x.from.into(),
        }
    }
}

/// One connection on a client's timeline.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename = "TimelineEntry")]
#[schemars(deny_unknown_fields)]
pub struct TimelineEntryView {
    /// The connection.
    pub connection: ConnIdView,
    /// Where its CM exchange ended.
    pub cm_state: CmStateView,
    /// When it was first seen (its CM REQ when the capture has it).
    #[serde(serialize_with = "super::exact::decimal")]
    #[schemars(with = "String")]
    pub first_ts_ns: u64,
    /// Its last RPC-over-RDMA message or RDMA operation.
    #[serde(serialize_with = "super::exact::decimal")]
    #[schemars(with = "String")]
    pub last_ts_ns: u64,
    /// Its CM frames (REQ, REP, RTU, DREQ, DREP, REJ, retries included;
    /// on iWARP its MPA Request and Reply and TCP FIN and RST).
    pub cm_frames: Vec<u64>,
    /// Time from the previous connection's last message to this one's
    /// first sight, ms (`null` for the client's first).
    pub gap_before_ms: Option<f64>,
    /// Its CM messages, oldest first: which, when, in which frame, from whom
    /// (the first 32; `cm` and `cm_frames` leave out the rest).
    pub cm: Vec<CmEventView>,
    /// CM messages past the first 32, counted, not kept.
    pub cm_not_kept: u32,
    /// When it was established: its RTU (its REP when no RTU was seen);
    /// `null` when never, or before the capture started.
    #[serde(serialize_with = "super::exact::decimal")]
    #[schemars(with = "Option<String>")]
    pub established_ts_ns: Option<u64>,
    /// When it was torn down: its first DREQ or REJ (`null`: not seen).
    #[serde(serialize_with = "super::exact::decimal")]
    #[schemars(with = "Option<String>")]
    pub torn_down_ts_ns: Option<u64>,
    /// Who tore it down (`null`: not seen).
    pub torn_down_by: Option<RoleView>,
    /// When it was closed: its first DREP (`null`: not seen).
    #[serde(serialize_with = "super::exact::decimal")]
    #[schemars(with = "Option<String>")]
    pub closed_ts_ns: Option<u64>,
    /// Connection requests that got no REP: sent again after the CM's
    /// timeout, never answered, or rejected (REJ).
    pub failed_requests: u32,
    /// Calls it carried that no reply answered on it.
    pub unanswered_calls: u64,
}

impl From<&TimelineEntry> for TimelineEntryView {
    fn from(x: &TimelineEntry) -> Self {
        TimelineEntryView {
            connection: ConnIdView(x.connection),
            cm_state: x.cm_state.into(),
            first_ts_ns: x.first_ts_ns,
            last_ts_ns: x.last_ts_ns,
            cm_frames: x.cm_frames.clone(),
            gap_before_ms: x.gap_before_ms,
            cm: x.cm.iter().map(CmEventView::from).collect(),
            cm_not_kept: x.cm_not_kept,
            established_ts_ns: x.established_ts_ns,
            torn_down_ts_ns: x.torn_down_ts_ns,
            torn_down_by: x.torn_down_by.map(RoleView::from),
            closed_ts_ns: x.closed_ts_ns,
            failed_requests: x.failed_requests,
            unanswered_calls: x.unanswered_calls,
        }
    }
}

/// A time a client's RPCs could not move: a connection left with calls
/// unanswered, until the next one was established.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename = "Outage")]
#[schemars(deny_unknown_fields)]
pub struct OutageView {
    /// The connection that stopped answering.
    pub connection: ConnIdView,
    /// Its last message: the start of the outage.
    #[serde(serialize_with = "super::exact::decimal")]
    #[schemars(with = "String")]
    pub from_ts_ns: u64,
    /// Calls left unanswered on it.
    pub unanswered_calls: u64,
    /// When it was torn down (`null`: not seen).
    #[serde(serialize_with = "super::exact::decimal")]
    #[schemars(with = "Option<String>")]
    pub torn_down_ts_ns: Option<u64>,
    /// The connection that replaced it (`null`: none before the capture ended).
    pub next: Option<ConnIdView>,
    /// When that one was established: the end of the outage (`null`: never).
    #[serde(serialize_with = "super::exact::decimal")]
    #[schemars(with = "Option<String>")]
    pub reestablished_ts_ns: Option<u64>,
    /// From the last message to the re-establishment, or to the capture's
    /// end when there was none, ms.
    pub duration_ms: f64,
    /// From the teardown to the re-establishment, ms: the time without a
    /// connection (`null` when either is not seen).
    pub without_connection_ms: Option<f64>,
}

impl From<&Outage> for OutageView {
    fn from(x: &Outage) -> Self {
        OutageView {
            connection: ConnIdView(x.connection),
            from_ts_ns: x.from_ts_ns,
            unanswered_calls: x.unanswered_calls,
            torn_down_ts_ns: x.torn_down_ts_ns,
            next: x.next.map(ConnIdView),
            reestablished_ts_ns: x.reestablished_ts_ns,
            duration_ms: x.duration_ms,
            without_connection_ms: x.without_connection_ms,
        }
    }
}

/// A client's connections in time order.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename = "ClientTimeline")]
#[schemars(deny_unknown_fields)]
pub struct ClientTimelineView {
    /// The client's address (IP, GID or LID), `unknown` when not seen.
    pub client: String,
    /// Its connections, oldest first.
    pub connections: Vec<TimelineEntryView>,
    /// Its outages, oldest first.
    pub outages: Vec<OutageView>,
}

impl From<&ClientTimeline> for ClientTimelineView {
    fn from(x: &ClientTimeline) -> Self {
        ClientTimelineView {
            client: x.client.clone(),
            connections: x.connections.iter().map(TimelineEntryView::from).collect(),
            outages: x.outages.iter().map(OutageView::from).collect(),
        }
    }
}
