//! `--memory-limit`, split in one place over everything that holds state
//! growing with the input: the engine's tables, the screen's tables, the
//! report's per-procedure tables, the metrics' series and the exporter's
//! connections. Each part turns its share into caps of its own (the engine
//! in `Limits::of`, the screen in `Caps::within`, the report in
//! `Report::within`, the metrics in `MetricsConfig::within`); this module
//! only says how much each gets, so the whole is the flag and no part is
//! forgotten.
//!
//! What stays outside, and why: the queues between threads and the capture
//! ring are bounded by their depth (`--capture-buffer` for the ring), not by
//! what the traffic says; the zstd window is bounded by the flag itself in
//! `input::set_memory_limit`, held besides, because a decompressor cannot
//! give up part of its window.

#[cfg(feature = "metrics-server")]
use crate::output::exporter;

/// Who holds state in this run besides the engine.
#[derive(Debug, Clone, Copy, Default)]
pub struct Holders {
    /// The TUI's tables (`open`, `live` on a terminal).
    pub screen: bool,
    /// The report's per-procedure tables (`report`).
    pub report: bool,
    /// The Prometheus metrics' series (`--metrics`, `--metrics-out`).
    pub metrics: bool,
    /// The HTTP exporter's connections (`live --metrics`).
    pub exporter: bool,
    /// The flight recorder's ring, bytes (`live --record`, its
    /// `--record-size`); 0 without it.
    pub recorder: usize,
}

/// Bytes each holder may use; they add up to the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// The engine's tables (connections, queue pairs, calls, joins).
    pub engine: usize,
    /// The TUI's rows, details, segments, anomalies and labels.
    pub screen: usize,
    /// The report's per-procedure tables.
    pub report: usize,
    /// The metrics' per-connection and per-procedure series.
    pub metrics: usize,
    /// The exporter's connections, each with its header buffer and the
    /// response it is sending.
    pub exporter: usize,
    /// The flight recorder's ring: what `--record-size` asked for, at most
    /// a quarter of the limit ([`Budget::check_recorder`]).
    pub recorder: usize,
}

/// The recorder's ring may take a quarter of the limit: with a screen's
/// quarter and the metrics' share, the engine keeps nearly half.
const RECORDER_DIVISOR: usize = 4;

/// A screen keeps a quarter: its tables are what the user scrolls through,
/// and a quarter of the default 256 MiB holds two million rows.
const SCREEN_DIVISOR: usize = 4;
/// The report's tables take a sixteenth (16 MiB of the default 256: about
/// 135 procedure rows of four histograms each).
const REPORT_DIVISOR: usize = 16;
/// The metrics take a sixty-fourth (4 MiB of the default: thousands of
/// series rows, beyond the default cardinality caps of 256).
const METRICS_DIVISOR: usize = 64;

impl Budget {
    /// `limit` split over `holders`; the engine gets what the others leave.
    pub fn split(limit: usize, holders: Holders) -> Budget {
        let share = |on: bool, divisor: usize| if on { limit / divisor } else { 0 };
        // The screen's share is what the engine's three quarters leave, as
        // it was before this split had one place.
        let screen = if holders.screen {
            limit - limit / SCREEN_DIVISOR * 3
        } else {
            0
        };
        let report = share(holders.report, REPORT_DIVISOR);
        let metrics = share(holders.metrics, METRICS_DIVISOR);
        let exporter = if holders.exporter {
            exporter_bytes().min(limit / METRICS_DIVISOR)
        } else {
            0
        };
        let recorder = holders.recorder.min(limit / RECORDER_DIVISOR);
        Budget {
            engine: limit - screen - report - metrics - exporter - recorder,
            screen,
            report,
            metrics,
            exporter,
            recorder,
        }
    }

    /// Whether a recorder of `bytes` fits in `limit`: at most a quarter.
    ///
    /// # Errors
    /// When it does not, in words that say which flag to change.
    pub fn check_recorder(limit: usize, bytes: usize) -> Result<(), String> {
        if bytes > limit / RECORDER_DIVISOR {
            return Err(format!(
                "live: --record-size {} MiB is more than a quarter of --memory-limit {} MiB: lower --record-size or raise --memory-limit to {} MiB",
                bytes >> 20,
                limit >> 20,
                (bytes * RECORDER_DIVISOR).div_ceil(1 << 20)
            ));
        }
        Ok(())
    }

    /// The whole, as given.
    pub fn total(&self) -> usize {
        self.engine + self.screen + self.report + self.metrics + self.exporter + self.recorder
    }
}

/// What the HTTP exporter's connections can hold at most.
#[cfg(feature = "metrics-server")]
fn exporter_bytes() -> usize {
    exporter::Limits::default().bytes()
}

/// A build without the exporter never serves (`live --metrics` refuses).
#[cfg(not(feature = "metrics-server"))]
fn exporter_bytes() -> usize {
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: usize = 1 << 20;

    #[test]
    fn the_shares_add_up_to_the_limit_whoever_holds_state() {
        for limit in [M, 3 * M + 7, 256 * M, 64 << 30] {
            for bits in 0..32u8 {
                let h = Holders {
                    screen: bits & 1 != 0,
                    report: bits & 2 != 0,
                    metrics: bits & 4 != 0,
                    exporter: bits & 8 != 0,
                    recorder: if bits & 16 != 0 { limit / 4 } else { 0 },
                };
                let b = Budget::split(limit, h);
                assert_eq!(b.total(), limit, "{h:?} at {limit}");
                assert!(
                    b.engine >= limit / 2 - h.recorder,
                    "{h:?} at {limit}: {b:?}"
                );
                assert_eq!(b.recorder, h.recorder);
                assert_eq!(b.screen > 0, h.screen);
                assert_eq!(b.report > 0, h.report);
                assert_eq!(b.metrics > 0, h.metrics);
                assert_eq!(
                    b.exporter > 0,
                    h.exporter && cfg!(feature = "metrics-server")
                );
            }
        }
    }

    #[test]
    fn a_recorder_over_a_quarter_of_the_limit_is_refused_saying_what_to_change() {
        assert_eq!(Budget::check_recorder(256 * M, 64 * M), Ok(()));
        let e = Budget::check_recorder(256 * M, 100 * M).unwrap_err();
        assert!(e.contains("--memory-limit to 400 MiB"), "{e}");
    }

    #[test]
    fn the_engine_alone_gets_the_whole_limit() {
        let b = Budget::split(256 * M, Holders::default());
        assert_eq!(b.engine, 256 * M);
    }

    /// The shares `open` and `report` used before the split had one place,
    /// so the caps (and every output on a capture that reaches them) stay.
    #[test]
    fn a_screen_and_a_report_keep_the_shares_they_had() {
        let limit = 256 * M + 12_345;
        let screen = Budget::split(
            limit,
            Holders {
                screen: true,
                ..Holders::default()
            },
        );
        assert_eq!(screen.engine, limit / 4 * 3);
        let report = Budget::split(
            limit,
            Holders {
                report: true,
                ..Holders::default()
            },
        );
        assert_eq!(report.report, limit / 16);
        assert_eq!(report.engine, limit - limit / 16);
    }

    /// The default caps fit the default share, and a small limit lowers
    /// them instead of letting the series outgrow it.
    #[test]
    fn the_metrics_caps_follow_their_share() {
        use crate::output::metrics::MetricsConfig;
        let metrics = |limit| {
            let b = Budget::split(
                limit,
                Holders {
                    metrics: true,
                    ..Holders::default()
                },
            );
            MetricsConfig::default().within(b.metrics)
        };
        let d = MetricsConfig::default();
        let at_default = metrics(256 * M);
        assert_eq!(
            (at_default.max_connections, at_default.max_procedures),
            (d.max_connections, d.max_procedures)
        );
        let small = metrics(2 * M);
        assert!(small.max_connections < d.max_connections, "{small:?}");
        assert!(small.max_procedures < d.max_procedures, "{small:?}");
        assert!(small.max_procedures >= 1);
    }

    #[test]
    #[cfg(feature = "metrics-server")]
    fn the_exporter_is_held_to_its_connections_buffers() {
        let b = Budget::split(
            256 * M,
            Holders {
                metrics: true,
                exporter: true,
                ..Holders::default()
            },
        );
        assert_eq!(b.exporter, exporter::Limits::default().bytes());
        assert_eq!(b.metrics, 4 * M);
    }
}
