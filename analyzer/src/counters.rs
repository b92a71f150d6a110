//! Counters that one layer of the application keeps and another reports:
//! plain data, so `sources` (whose `live --stats-out` document carries them)
//! and `output` (whose exporter counts them) can both name them without an
//! arrow between the two.

/// What the exporter cut off in a run, in `live --stats-out`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ExporterStats {
    /// Connections accepted and served.
    pub accepted: u64,
    /// Connections closed to make room for a new one (the oldest goes).
    pub evicted: u64,
    /// Connections dropped at the end of their lifetime, still busy.
    pub timed_out: u64,
    /// Connections that ended in an HTTP error (a header too slow or too
    /// large, a malformed request, a client gone mid-response).
    pub http_errors: u64,
    /// `accept` calls that failed (out of descriptors, say).
    pub accept_errors: u64,
}
