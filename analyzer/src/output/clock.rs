//! Times in text output: seconds since the capture's first frame (what
//! tshark prints by default), or absolute UTC (tshark's `-t u`), the one to
//! line up with dmesg, mountstats snapshots and application logs.

use std::fmt;

/// How a text line gives its time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum TimeFormat {
    /// Seconds since the capture's first frame.
    #[default]
    Relative,
    /// Date and time, UTC, to the microsecond.
    Utc,
}

/// How `frames` gives each frame's time, as tshark's `-t r|u|d`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum FrameTime {
    /// Seconds since the capture's first frame.
    #[default]
    Relative,
    /// Date and time, UTC, to the microsecond.
    Utc,
    /// Seconds since the previous frame.
    Delta,
}

/// Turns capture times (ns since the epoch) into the words a line starts with.
#[derive(Debug, Clone, Copy, Default)]
pub struct Clock {
    /// The format.
    pub format: TimeFormat,
    /// The capture's first frame, once seen (relative times count from it).
    pub start_ns: Option<u64>,
}

impl Clock {
    /// A clock in `format`, its start not yet known.
    pub fn new(format: TimeFormat) -> Self {
        Clock {
            format,
            start_ns: None,
        }
    }

    /// Notes a frame's time: the first one is the start.
    pub fn saw(&mut self, ts_ns: u64) {
        self.start_ns.get_or_insert(ts_ns);
    }

    /// `ts_ns` as this clock prints it; `-` when the time is not known (an
    /// anomaly of the end of the input with no frame before it).
    pub fn at(&self, ts_ns: Option<u64>) -> Stamp {
        Stamp {
            clock: *self,
            ts_ns,
        }
    }
}

/// A time, formatted when displayed.
#[derive(Debug, Clone, Copy)]
pub struct Stamp {
    clock: Clock,
    ts_ns: Option<u64>,
}

impl fmt::Display for Stamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(ts) = self.ts_ns else {
            return write!(f, "{:>10}", "-");
        };
        match self.clock.format {
            TimeFormat::Relative => {
                let start = self.clock.start_ns.unwrap_or(ts);
                // A time before the first frame (timestamps that go back)
                // prints negative rather than wrapping.
                let d = ts as i128 - start as i128;
                let sign = if d < 0 { "-" } else { "" };
                let d = d.unsigned_abs();
                let secs = format!(
                    "{sign}{}.{:06}",
                    d / 1_000_000_000,
                    d % 1_000_000_000 / 1000
                );
                write!(f, "{secs:>10}")
            }
            TimeFormat::Utc => {
                let secs = ts / 1_000_000_000;
                let (y, mo, d) = civil_from_days((secs / 86_400) as i64);
                let s = secs % 86_400;
                write!(
                    f,
                    "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{:06}Z",
                    s / 3600,
                    s / 60 % 60,
                    s % 60,
                    ts % 1_000_000_000 / 1000
                )
            }
        }
    }
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_times_count_from_the_first_frame() {
        let mut c = Clock::new(TimeFormat::Relative);
        c.saw(1_000_000_000_000);
        c.saw(5);
        assert_eq!(c.at(Some(1_005_313_421_999)).to_string(), "  5.313421");
        assert_eq!(c.at(Some(999_500_000_000)).to_string(), " -0.500000");
        assert_eq!(c.at(None).to_string(), "         -");
    }

    #[test]
    fn utc_times_are_calendar_dates() {
        let c = Clock::new(TimeFormat::Utc);
        // 2026-11-20T23:34:36.522104Z, as `date -u -d @1795217676.522104` says.
        assert_eq!(
            c.at(Some(1_795_217_676_522_104_123)).to_string(),
            "2026-11-20T23:34:36.522104Z"
        );
        assert_eq!(c.at(Some(0)).to_string(), "1970-01-01T00:00:00.000000Z");
        // A leap day.
        assert_eq!(
            c.at(Some(951_782_400_000_000_000)).to_string(),
            "2000-02-29T00:00:00.000000Z"
        );
    }
}
