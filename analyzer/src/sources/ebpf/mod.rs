//! The eBPF source: tracepoint `format` files, the records the probes send,
//! and their decoding into typed
//! [`ProbeEvent`](crate::engine::kernel::event::ProbeEvent)s.
//!
//! ```text
//!  kernel: tracepoint ─► rdma_tracepoint (BPF) ─► EVENTS ring ─┐  LOST (per-CPU)
//!                                                              ▼
//!  user:   RecordHeader + raw record ─► Decoder (format files) ─► Probe { meta, event }
//! ```
//!
//! The probes copy spans of raw records; the layout of each record is read
//! at run time from `/sys/kernel/tracing/events/<system>/<event>/format`, so
//! the same binary decodes Linux 5.10's rpcrdma events and 6.12's, as long
//! as the field *names* keep their meaning; the names of the events
//! themselves, across versions, are the rows of [`TRACEPOINTS`]. A field a kernel lacks, or the
//! span left out, decodes as `None`, never as a wrong number.
//!
//! What each probe copies is worked out here at load time ([`needed`]):
//! the decoder is run once over a blank record of each format, and the
//! fields it reads make the span. The events whose decoding the engine has
//! no use for are not attached at all ([`ProbeEvents::Used`]).
//!
//! [`ProbeSet`] loads the object embedded at build time, attaches what
//! exists, and reports what does not, by name and why.
//!
//! The parts: [`mod@format`] parses tracefs `format` files (pure); [`events`]
//! is the table of tracepoints; [`decode`] compiles each format once and
//! turns ring records into events; [`plan`] works out what each probe copies;
//! [`load`] loads and attaches the probes with aya; [`sys`] holds the raw
//! system calls aya does not make.

pub mod decode;
pub mod events;
pub mod format;
pub mod load;
pub mod plan;
pub mod sys;

pub use decode::{parse_sockaddr, Compiled, DecodeError, Decoder, RawRecord, F};
pub use events::{
    blind_spots, per_rpc_unused, relied_on, row_of, wanted, Names, Tracepoint, SYSTEMS, TRACEPOINTS,
};
pub use format::{Field, Format, FormatError, FormatSet};
pub use load::{
    chain, find_tracefs, why_absent, Missing, ProbeSet, StartError, PROBES_BUILD_STATUS,
    PROBES_OBJECT, TRACEFS_PATHS,
};
pub use plan::{needed, whole_record, Plan, ProbeEvents};
pub use sys::clock_offset_ns;

#[cfg(test)]
mod tests;
