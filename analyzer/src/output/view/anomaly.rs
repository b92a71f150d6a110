//! An anomaly as `anomalies --json`, `live` and the JSON Schema see it:
//! the engine's [`Anomaly`] borrowed field by field. The doc comments are
//! the schema's descriptions.

use schemars::JsonSchema;
use serde::Serialize;

use crate::engine::Anomaly;
use crate::output::view::{ConnIdView, KindView, OriginView};

/// One finding, with everything needed to locate it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename = "Anomaly")]
pub struct AnomalyView<'a> {
    /// Stable kind.
    pub kind: KindView,
    /// Who saw it: the wire, or one side's kernel (whose "frames" are
    /// probe record numbers).
    pub origin: OriginView,
    /// When it was found: the time of the frame, probe record or tick that
    /// revealed it (ns since the epoch); `None` when the engine had seen no
    /// time yet.
    #[serde(serialize_with = "super::exact::decimal")]
    #[schemars(with = "Option<String>")]
    pub ts_ns: &'a Option<u64>,
    /// Frame numbers involved (1-based, as tshark counts).
    pub frames: &'a Vec<u64>,
    /// Connection, when known.
    pub connection: Option<ConnIdView>,
    /// RPC XID, when the anomaly belongs to one transaction.
    pub xid: &'a Option<u32>,
    /// A sentence a user understands (the first occurrence's).
    pub message: &'a String,
    /// Occurrences this finding stands for: 1, or more when its kind
    /// repeats per connection and one fact was seen again (the other
    /// fields are then the first occurrence's).
    pub count: u64,
    /// The first occurrence's first frame; null when none is known.
    pub first_frame: Option<u64>,
    /// The last occurrence's last frame; null when none is known.
    pub last_frame: Option<u64>,
    /// The first occurrence's time (ns since the epoch): `ts_ns` again,
    /// beside `last_ts_ns`.
    #[serde(serialize_with = "super::exact::decimal")]
    #[schemars(with = "Option<String>")]
    pub first_ts_ns: Option<u64>,
    /// The last occurrence's time (ns since the epoch); null when unknown.
    #[serde(serialize_with = "super::exact::decimal")]
    #[schemars(with = "Option<String>")]
    pub last_ts_ns: Option<u64>,
    /// The XIDs of the first occurrences (8 at most), in order.
    pub xids: Vec<u32>,
}

impl<'a> From<&'a Anomaly> for AnomalyView<'a> {
    fn from(x: &'a Anomaly) -> Self {
        AnomalyView {
            kind: x.kind.into(),
            origin: x.origin.into(),
            ts_ns: &x.ts_ns,
            frames: &x.frames,
            connection: x.connection.map(ConnIdView),
            xid: &x.xid,
            message: &x.message,
            count: x.count(),
            first_frame: x.first_frame(),
            last_frame: x.last_frame(),
            first_ts_ns: x.ts_ns,
            last_ts_ns: x.last_ts_ns(),
            xids: match &x.repeated {
                Some(r) => r.xids.clone(),
                None => x.xid.into_iter().collect(),
            },
        }
    }
}
