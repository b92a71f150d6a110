//! Capture files as a pipeline [`Source`](crate::pipeline::Source)
//! ([`source`]). The formats, the reader, the merge and the writer are the
//! `rdma-capture` crate, re-exported here under their old paths.

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

pub use rdma_capture::{erf, format, input, merge, read, write};
pub mod source;

pub use format::{Format, Problem, MAX_RECORD_LEN};
pub use rdma_capture::Frame;
pub use read::{Batch, BatchReader, FrameMeta, PcapReader, ReadError, ReadErrorKind};
pub use source::FileSource;
pub use write::{CaptureWriter, Resolution};
