//! The front ends that write: text and JSON reports, JSON Lines streams,
//! frame dissections, Prometheus metrics (and their HTTP exporter), Parquet
//! datasets. Each is a pipeline [`Sink`](crate::pipeline::Sink).

pub mod ack;
pub mod clock;
#[cfg(feature = "export")]
pub mod dataset;
pub mod describe;
pub mod device_compare;
pub mod escape;
#[cfg(feature = "metrics-server")]
pub mod exporter;
pub mod filter;
pub mod frames;
pub mod kernel_counters;
pub mod lines;
pub mod live;
pub mod live_counters;
pub mod live_fold;
pub mod metrics;
pub mod mountstats_metrics;
pub mod not_decoded;
pub mod out;
pub mod report;
pub mod schema;
pub mod stats;
pub mod unchecked;
pub mod units;
pub mod view;

pub use filter::Filter;
pub use report::Report;
