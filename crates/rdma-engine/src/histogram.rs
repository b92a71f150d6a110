//! One latency histogram for every view of it: the report's percentiles
//! (64 sub-buckets per power of two, in ns), Prometheus' `le` buckets (4 per
//! power of two, in µs) and a connection's log₂ µs bars (1 per power of two).
//!
//! Log-linear: each value below `SUB` has a bucket of its own; above, each
//! power of two `[2^k, 2^(k+1))` is split into `SUB` equal buckets. A
//! bucket is then never wider than `1/SUB` of the values it holds, so a
//! quantile read from it is within that relative error, and the number of
//! buckets grows with the logarithm of the largest value, not with the
//! number of samples.

/// Counts of samples in log-linear buckets of `SUB` (a power of two) per
/// power of two. Bucket `b` holds the values in `[low(b), high(b))`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogLinear<const SUB: u64> {
    /// Grows to the largest bucket seen: a histogram of microsecond
    /// latencies stays a few hundred bytes however long the run.
    counts: Vec<u64>,
}

impl<const SUB: u64> LogLinear<SUB> {
    const SUB_BITS: u32 = {
        assert!(SUB.is_power_of_two(), "SUB must be a power of two");
        SUB.trailing_zeros()
    };

    /// The last bucket, `bucket(u64::MAX)`.
    pub const LAST: usize = Self::bucket(u64::MAX);

    /// Bytes of counts a histogram holds at its largest.
    pub const MAX_BYTES: usize = (Self::LAST + 1) * std::mem::size_of::<u64>();

    /// The bucket holding `v`.
    pub const fn bucket(v: u64) -> usize {
        if v < SUB {
            return v as usize;
        }
        let msb = 63 - v.leading_zeros();
        let shift = msb - Self::SUB_BITS;
        let sub = (v >> shift) - SUB;
        ((shift as u64 + 1) * SUB + sub) as usize
    }

    /// The smallest value bucket `b` holds.
    pub const fn low(b: usize) -> u64 {
        let b = b as u64;
        if b < SUB {
            return b;
        }
        let shift = b / SUB - 1;
        let sub = b % SUB;
        (SUB + sub) << shift
    }

    /// The first value past bucket `b`: `low(b + 1)`.
    pub const fn high(b: usize) -> u64 {
        Self::low(b + 1)
    }

    /// Counts one sample.
    pub fn record(&mut self, v: u64) {
        let b = Self::bucket(v);
        if self.counts.len() <= b {
            self.counts.resize(b + 1, 0);
        }
        self.counts[b] += 1;
    }

    /// Adds `other`'s samples: histograms of intervals sum into the
    /// histogram of their union (a sliding window's buckets).
    pub fn merge(&mut self, other: &Self) {
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
    }

    /// Samples by bucket, up to the last bucket with one.
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// The bucket holding the `rank`-th smallest sample (1-based), if there
    /// are that many.
    pub fn bucket_of_rank(&self, rank: u64) -> Option<usize> {
        let mut seen = 0;
        self.counts.iter().position(|&n| {
            seen += n;
            seen >= rank
        })
    }
}

/// A connection's latency bar in [`Connection::latency_log2_us`]: `i` for
/// `[2^i, 2^(i+1))` µs (below 1 µs counts as 1 µs, 2^31 µs and above go in
/// the last). It is [`LogLinear<1>`] over whole µs without its bucket for 0.
///
/// [`Connection::latency_log2_us`]: crate::model::Connection::latency_log2_us
pub const fn log2_us_slot(ns: u64) -> usize {
    let us = if ns < 1000 { 1 } else { ns / 1000 };
    let b = LogLinear::<1>::bucket(us) - 1;
    if b > 31 {
        31
    } else {
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_layout<const SUB: u64>(values: &[u64]) {
        let mut last = 0;
        for &v in values {
            let b = LogLinear::<SUB>::bucket(v);
            assert!(b >= last, "{v}");
            last = b;
            let (lo, hi) = (LogLinear::<SUB>::low(b), LogLinear::<SUB>::high(b));
            assert!(lo <= v && (v < hi || b == LogLinear::<SUB>::LAST), "{v}");
            assert!((hi - lo) as f64 <= (v as f64 / SUB as f64).max(1.0), "{v}");
        }
    }

    #[test]
    fn buckets_are_monotonic_and_tight() {
        let values = [0u64, 1, 3, 4, 5, 63, 64, 65, 127, 128, 1000, 123_456];
        check_layout::<1>(&values);
        check_layout::<4>(&values);
        check_layout::<64>(&[&values[..], &[9_999_999_999]].concat());
    }

    #[test]
    fn layouts_the_outputs_show() {
        // Prometheus' first `le` bounds, µs: 4, 5, 6, 7, 8, 10.
        let highs: Vec<u64> = (3..9).map(LogLinear::<4>::high).collect();
        assert_eq!(highs, [4, 5, 6, 7, 8, 10]);
        assert_eq!(LogLinear::<4>::high(94), 7 << 22);
        assert_eq!(LogLinear::<64>::LAST, (64 - 6) * 64 + 63);
        assert_eq!(LogLinear::<1>::bucket(0), 0);
        assert_eq!(LogLinear::<1>::bucket(1), 1);
        assert_eq!(LogLinear::<1>::bucket(3), 2);
    }

    #[test]
    fn log2_slots_match_the_connection_bars() {
        for (ns, slot) in [
            (0, 0),
            (999, 0),
            (1_999, 0),
            (2_000, 1),
            (3_999, 1),
            (4_000, 2),
            (1_000 << 31, 31),
            (u64::MAX, 31),
        ] {
            assert_eq!(log2_us_slot(ns), slot, "{ns}");
            let us = (ns / 1000).max(1);
            let old = (64 - us.leading_zeros() - 1).min(31) as usize;
            assert_eq!(log2_us_slot(ns), old, "{ns}");
        }
    }

    #[test]
    fn rank_finds_its_bucket() {
        let mut h = LogLinear::<4>::default();
        for v in [1, 1, 9, 100] {
            h.record(v);
        }
        assert_eq!(h.bucket_of_rank(1), Some(1));
        assert_eq!(h.bucket_of_rank(3), Some(LogLinear::<4>::bucket(9)));
        assert_eq!(h.bucket_of_rank(4), Some(LogLinear::<4>::bucket(100)));
        assert_eq!(h.bucket_of_rank(5), None);
        assert_eq!(h.counts().iter().sum::<u64>(), 4);
    }
}
