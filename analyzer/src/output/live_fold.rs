//! `live`'s one finding per repeated fact. A stream has no end where a
//! count would be final, so a finding that repeats per connection is
//! written once, at its first occurrence, and then as `anomaly_update`
//! records carrying its count, last frame and last time: every
//! [`UPDATE_EVERY`] while it grows, and once more when the run ends.
//!
//! Memory is bounded by [`HELD`] findings, not by the occurrences or the
//! connections a long run sees: past it, the finding whose last occurrence
//! is the oldest is let go (its final update written first), and a later
//! occurrence of its fact starts a new finding.

use std::collections::HashMap;
use std::time::Duration;

use crate::engine::{Anomaly, CollapseKey, Collapser};

/// Findings held for folding at most (each a few hundred bytes).
pub const HELD: usize = 4096;

/// How often a growing finding's count is written again.
pub const UPDATE_EVERY: Duration = Duration::from_secs(10);

struct Held {
    /// The first occurrence, with the later ones folded in.
    finding: Anomaly,
    /// The count the last record written of it carried.
    written: u64,
}

/// The findings `live` folds, and what of them was written.
pub struct LiveFold {
    held: HashMap<CollapseKey, Held>,
    cap: usize,
}

impl Default for LiveFold {
    fn default() -> Self {
        Self::with_cap(HELD)
    }
}

impl LiveFold {
    /// Holding at most `cap` findings (at least one).
    pub fn with_cap(cap: usize) -> Self {
        LiveFold {
            held: HashMap::new(),
            cap: cap.max(1),
        }
    }

    /// Takes one occurrence. Gives it back when it is to be written as an
    /// `anomaly` record now (it stands alone, or is the first of its fact);
    /// a later occurrence is folded and nothing is written yet. A finding
    /// let go to make room goes to `evicted` when it has grown since its
    /// last record.
    pub fn take(&mut self, a: Anomaly, evicted: &mut Vec<Anomaly>) -> Option<Anomaly> {
        let Some(key) = Collapser::key(&a) else {
            return Some(a);
        };
        if let Some(h) = self.held.get_mut(&key) {
            Collapser::fold(&mut h.finding, &a);
            return None;
        }
        if self.held.len() >= self.cap {
            evicted.extend(self.evict_oldest());
        }
        self.held.insert(
            key,
            Held {
                finding: a.clone(),
                written: a.count(),
            },
        );
        Some(a)
    }

    /// The finding whose last occurrence is the oldest, let go; returned
    /// when its last record did not carry its whole count.
    fn evict_oldest(&mut self) -> Option<Anomaly> {
        let key = *self
            .held
            .iter()
            .min_by_key(|(_, h)| (h.finding.last_ts_ns(), h.finding.last_frame()))?
            .0;
        let h = self.held.remove(&key)?;
        (h.finding.count() > h.written).then_some(h.finding)
    }

    /// The findings that grew since their last record, as they stand now,
    /// in the order of their first occurrence; each counts as written.
    pub fn updates(&mut self) -> Vec<Anomaly> {
        let mut out: Vec<Anomaly> = self
            .held
            .values_mut()
            .filter(|h| h.finding.count() > h.written)
            .map(|h| {
                h.written = h.finding.count();
                h.finding.clone()
            })
            .collect();
        out.sort_by_key(|a| (a.ts_ns, a.first_frame(), a.kind, a.connection));
        out
    }

    /// Findings held.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{ConnId, Kind, Origin};

    fn occurrence(kind: Kind, conn: u32, frame: u64) -> Anomaly {
        Anomaly {
            kind,
            origin: Origin::Wire,
            ts_ns: Some(frame * 1000),
            frames: vec![frame],
            connection: Some(ConnId(conn)),
            xid: Some(frame as u32),
            message: format!("m{frame}"),
            repeated: None,
        }
    }

    const FACT: Kind = Kind::RemoteInvalidationNotNegotiated;

    #[test]
    fn the_first_occurrence_is_written_and_the_rest_come_as_one_update() {
        let mut f = LiveFold::default();
        let mut evicted = Vec::new();
        let first = f.take(occurrence(FACT, 1, 10), &mut evicted);
        assert_eq!(first.map(|a| a.frames), Some(vec![10]));
        for frame in 11..40 {
            assert!(f.take(occurrence(FACT, 1, frame), &mut evicted).is_none());
        }
        let u = f.updates();
        assert_eq!(u.len(), 1);
        assert_eq!(u[0].count(), 30);
        assert_eq!(
            (u[0].first_frame(), u[0].last_frame()),
            (Some(10), Some(39))
        );
        assert_eq!(u[0].last_ts_ns(), Some(39_000));
        // Nothing grew since: no second update.
        assert!(f.updates().is_empty());
        f.take(occurrence(FACT, 1, 50), &mut evicted);
        assert_eq!(f.updates()[0].count(), 31);
        assert!(evicted.is_empty());
    }

    #[test]
    fn a_finding_seen_once_has_no_update() {
        let mut f = LiveFold::default();
        let mut evicted = Vec::new();
        assert!(f.take(occurrence(FACT, 1, 10), &mut evicted).is_some());
        assert!(f.take(occurrence(FACT, 2, 11), &mut evicted).is_some());
        assert!(f.updates().is_empty());
    }

    #[test]
    fn a_per_event_kind_is_written_every_time() {
        let mut f = LiveFold::default();
        let mut evicted = Vec::new();
        for frame in 1..5 {
            assert!(f
                .take(occurrence(Kind::Retransmission, 1, frame), &mut evicted)
                .is_some());
        }
        assert!(f.is_empty());
    }

    #[test]
    fn memory_is_bounded_and_the_oldest_goes_with_its_final_count() {
        let mut f = LiveFold::with_cap(3);
        let mut evicted = Vec::new();
        for conn in 1..=3 {
            f.take(occurrence(FACT, conn, u64::from(conn)), &mut evicted);
        }
        // c1 grows, then goes quiet; c2 and c3 are more recent.
        f.take(occurrence(FACT, 1, 4), &mut evicted);
        f.take(occurrence(FACT, 2, 5), &mut evicted);
        f.take(occurrence(FACT, 3, 6), &mut evicted);
        let _ = f.updates();
        f.take(occurrence(FACT, 2, 7), &mut evicted);
        // A fourth fact: c1 (last seen at frame 4) is let go; it had been
        // written whole, so no record of it is due.
        assert!(f.take(occurrence(FACT, 4, 8), &mut evicted).is_some());
        assert!(evicted.is_empty());
        assert_eq!(f.len(), 3);
        // c3 (last at 6) is the oldest now; it grew since its update.
        f.take(occurrence(FACT, 3, 9), &mut evicted);
        f.take(occurrence(FACT, 2, 10), &mut evicted);
        f.take(occurrence(FACT, 4, 11), &mut evicted);
        let _ = f.updates();
        f.take(occurrence(FACT, 3, 12), &mut evicted);
        f.take(occurrence(FACT, 2, 13), &mut evicted);
        f.take(occurrence(FACT, 4, 14), &mut evicted);
        assert!(f.take(occurrence(FACT, 5, 15), &mut evicted).is_some());
        assert_eq!(evicted.len(), 1);
        assert_eq!(evicted[0].connection, Some(ConnId(3)));
        assert_eq!(evicted[0].count(), 4);
        assert_eq!(f.len(), 3);
        // c1 comes back: a new finding, written as a first occurrence.
        assert!(f.take(occurrence(FACT, 1, 16), &mut evicted).is_some());
    }
}
