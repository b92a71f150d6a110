//! Capture files: the pcap and pcapng formats ([`mod@format`]), the ERF records
//! of link type 197 inside them ([`erf`]), reading them
//! from any stream ([`read`]), writing them ([`mod@write`]), and a capture file
//! as a pipeline [`Source`](crate::pipeline::Source) ([`source`]).

#![cfg_attr(
    not(test),
    deny(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::unreachable
    )
)]

pub use rdma_dissectors::erf;
pub mod format;
pub mod input;
pub mod merge;
pub mod read;
pub mod source;
pub mod write;

pub use format::{Format, Problem, MAX_RECORD_LEN};
pub use read::{Batch, BatchReader, FrameMeta, Packet, PcapReader, ReadError, ReadErrorKind};
pub use source::FileSource;
pub use write::{CaptureWriter, Resolution};
