//! The records as the JSON and its JSON Schema show them: views that
//! borrow or copy the engine's plain data (and the diagnosis's timeline)
//! and say how each field is written. Their doc comments are the schema's
//! descriptions. The engine has no serde or schemars, so a field's JSON
//! key, name and schema are decided here alone; the documents in
//! [`super::schema`] wrap these.

pub mod anomaly;
pub mod exact;
pub mod ids;
pub mod names;
pub mod state;
pub mod timeline;
pub mod transaction;

pub use anomaly::AnomalyView;
pub use ids::{AddrView, ConnIdView, FileHandleView, QpKeyView, StableView};
pub use names::{
    AtFaultView, CarriesView, ChunkKindView, CmMsgView, CmStateView, HarmView, KindView,
    OriginView, RoleView, SeverityView, TransferView,
};
pub use state::{CongestionView, EvictionsView, TotalsView};
pub use timeline::{ClientTimelineView, CmEventView, OutageView, TimelineEntryView};
pub use transaction::{LadderStepView, NfsIoView, PhasesView, SegmentUseView, TransactionView};
