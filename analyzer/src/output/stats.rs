//! Bounded-memory latency statistics: exact count, min, max and mean, and
//! percentiles from a log-linear histogram ([`LogLinear<64>`], within 1/64
//! relative error), so a days-long live run costs the same memory as a
//! short capture.

use serde::Serialize;

use crate::engine::LogLinear;

/// Sub-buckets per power of two: percentiles are within 1/64 (1.6%).
type Buckets = LogLinear<64>;

/// Latency summary in microseconds.
#[derive(Debug, Clone, Default)]
pub struct Latency {
    count: u64,
    sum_ns: u128,
    min_ns: u64,
    max_ns: u64,
    buckets: Buckets,
}

/// A printable summary of [`Latency`] (percentiles within 1.6%).
#[derive(Debug, Clone, Copy, Serialize, schemars::JsonSchema, PartialEq)]
#[schemars(deny_unknown_fields)]
pub struct Summary {
    /// Samples.
    pub count: u64,
    /// Smallest, µs.
    pub min_us: f64,
    /// Mean, µs.
    pub mean_us: f64,
    /// Median, µs.
    pub p50_us: f64,
    /// 90th percentile, µs.
    pub p90_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// Largest, µs.
    pub max_us: f64,
}

impl Latency {
    /// Bytes a histogram takes at its largest (a sample near 2^64 ns).
    pub const MAX_BYTES: usize = std::mem::size_of::<Latency>() + Buckets::MAX_BYTES;

    /// Records one sample in nanoseconds.
    pub fn record(&mut self, ns: u64) {
        if self.count == 0 || ns < self.min_ns {
            self.min_ns = ns;
        }
        self.max_ns = self.max_ns.max(ns);
        self.count += 1;
        self.sum_ns += u128::from(ns);
        self.buckets.record(ns);
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The `q` quantile (0..=1) in ns: the midpoint of its bucket, clamped to min/max.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        match self.buckets.bucket_of_rank(rank) {
            Some(b) => {
                let (lo, hi) = (Buckets::low(b), Buckets::high(b));
                (lo + (hi - lo) / 2).clamp(self.min_ns, self.max_ns)
            }
            None => self.max_ns,
        }
    }

    /// The summary in µs.
    pub fn summary(&self) -> Summary {
        let us = |ns: u64| ns as f64 / 1000.0;
        Summary {
            count: self.count,
            min_us: us(self.min_ns),
            mean_us: if self.count == 0 {
                0.0
            } else {
                (self.sum_ns / u128::from(self.count)) as f64 / 1000.0
            },
            p50_us: us(self.quantile_ns(0.5)),
            p90_us: us(self.quantile_ns(0.9)),
            p99_us: us(self.quantile_ns(0.99)),
            max_us: us(self.max_ns),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_within_two_percent() {
        let mut l = Latency::default();
        for i in 1..=10_000u64 {
            l.record(i * 1000);
        }
        let s = l.summary();
        assert_eq!(s.count, 10_000);
        assert_eq!(s.min_us, 1.0);
        assert_eq!(s.max_us, 10_000.0);
        assert!((s.mean_us - 5000.5).abs() < 0.01);
        for (got, want) in [(s.p50_us, 5000.0), (s.p90_us, 9000.0), (s.p99_us, 9900.0)] {
            assert!((got - want).abs() / want < 0.02, "{got} vs {want}");
        }
    }
}
