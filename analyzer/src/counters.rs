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

/// One read of the kernel's counters by `live`'s counter sampler: raw, so
/// `sources` (which reads) and `output` (which tracks the deltas and
/// writes the records) both name it without an arrow between the two.
#[derive(Debug, Clone)]
pub struct CounterReading {
    /// When it was read, ns since the epoch.
    pub at_ns: u64,
    /// The mountstats file read (for the notes).
    pub mountstats_path: String,
    /// Its text, or why it could not be read.
    pub mountstats: Result<String, String>,
    /// The text is the file's first bytes only (the file was larger than
    /// the bound, which is given).
    pub cut_at: Option<usize>,
    /// The devices' counters (sysfs).
    pub devices: Vec<crate::engine::device_counters::DeviceCounter>,
}
