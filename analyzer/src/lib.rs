//! rdma-analyzer: sources, the correlation engine and the front ends, joined
//! by one pipeline.
//!
//! - [`sources`] turn capture files, live capture and kernel probes into
//!   engine events: the only code with I/O;
//! - [`engine`] is the pure state machine that correlates them;
//! - [`diagnosis`] names the causes in the engine's findings, ranked by
//!   what they cost (pure, like the engine, and built on it alone);
//! - [`pipeline`] is the one loop that drives a source through the engine
//!   into a sink;
//! - [`output`] (reports, JSON Lines, frame dissections) and [`tui`] are the
//!   sinks and front ends;
//! - [`cli`] says what each command takes, and [`budget`] how `--memory-limit`
//!   is shared;
//! - [`synth`] writes synthetic captures, with injected violations, for tests and benchmarks.

pub mod budget;
pub mod cli;
pub mod counters;
/// The correlation engine is the `rdma-engine` crate; its old path stays.
pub use rdma_engine as engine;
pub mod diagnosis;
pub mod files;
pub mod output;
pub mod pipeline;
pub mod recorder;
pub mod sources;
/// The synthetic capture generator is the `rdma-synth` crate (`tools/synth`); its old path stays.
pub use rdma_synth as synth;
#[cfg(test)]
mod test_support;
pub mod tui;
