//! rdma-analyzer: sources, the correlation engine and the front ends.
//!
//! - [`sources`] turn capture files (and later live capture and kernel
//!   probes) into frames: the only code with I/O;
//! - [`engine`] is the pure state machine that correlates them;
//! - [`analyze`] drives the engine over a file;
//! - [`report`], [`frames`]: the text and JSON front ends;
//! - [`synth`] writes synthetic captures, with injected violations, for tests and benchmarks.

pub mod analyze;
pub mod engine;
pub mod frames;
pub mod report;
pub mod sources;
pub mod stats;
pub mod synth;
pub mod tui;
