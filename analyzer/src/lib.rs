//! rdma-analyzer: sources, correlation engine and front ends.
//!
//! - [`sources`] turn capture files (and later live capture and kernel probes)
//!   into frames;
//! - the front ends in the binary print or draw what they produce.

pub mod sources;
