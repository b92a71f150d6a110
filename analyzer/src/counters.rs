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

/// Transactions by the views they joined (`live --probes -i IFACE`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ViewCounts {
    /// The wire's view and at least one kernel's.
    pub joined: u64,
    /// The wire's alone: no kernel probe saw the XID in time.
    pub wire_only: u64,
    /// A kernel's alone: the capture did not show the XID in time.
    pub kernel_only: u64,
}

impl ViewCounts {
    /// Counts a transaction made of the views from `sources`.
    pub fn count(&mut self, sources: impl IntoIterator<Item = crate::engine::Origin>) {
        let (mut wire, mut kernel) = (false, false);
        for o in sources {
            match o {
                crate::engine::Origin::Wire => wire = true,
                _ => kernel = true,
            }
        }
        match (wire, kernel) {
            (true, true) => self.joined += 1,
            (true, false) => self.wire_only += 1,
            _ => self.kernel_only += 1,
        }
    }
}

#[cfg(test)]
mod view_tests {
    use super::ViewCounts;
    use crate::engine::Origin::{ClientProbes, ServerProbes, Wire};

    /// The stderr summary and `--stats-out`'s `views`: an XID joined from
    /// both sides counts once as joined; one each side saw alone, once per
    /// side.
    #[test]
    fn transactions_are_counted_by_the_views_they_joined() {
        let mut v = ViewCounts::default();
        for sources in [
            &[Wire, ClientProbes][..],
            &[Wire, ClientProbes, ServerProbes],
            &[Wire],
            &[ClientProbes],
            &[ServerProbes, ClientProbes],
        ] {
            v.count(sources.iter().copied());
        }
        assert_eq!(
            v,
            ViewCounts {
                joined: 2,
                wire_only: 1,
                kernel_only: 2,
            }
        );
    }
}
