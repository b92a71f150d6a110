//! Capture files for RDMA traffic: the pcap and pcapng formats
//! ([`mod@format`]), the ERF records of link type 197 inside them ([`erf`]),
//! reading them from any stream, plain or gzip/zstd-compressed ([`input`],
//! [`read`]), merging several files in time order ([`merge`]) and writing
//! them ([`mod@write`]).
//!
//! One reader for every program of the project: the analyzer, its Python
//! binding and the traffic replayer read captures through this crate, so a
//! lesson learnt on hostile input (damaged lengths, unknown link types, FCS
//! bits) reaches all of them.
//!
//! ```text
//!  Input::open ─► Stream (plain │ gzip │ zstd) ─► PcapReader::fill ─► Batch
//!                                   format::Parser (no I/O) ─┘   FrameMeta per frame
//! ```
//!
//! No frame is copied after the one read into a [`Batch`]: a [`FrameMeta`]
//! says where its bytes lie, and [`Batch::frame`] hands it out as the
//! [`Frame`] the engine and every per-frame output take.

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
pub mod write;

pub use format::{Format, Problem, MAX_RECORD_LEN};
pub use rdma_dissectors::frame::Frame;
pub use read::{Batch, BatchReader, FrameMeta, PcapReader, ReadError, ReadErrorKind};
pub use write::{CaptureWriter, Resolution};
