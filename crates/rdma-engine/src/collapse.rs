//! One finding per repeated fact: the occurrences of a kind that repeats
//! per connection ([`Repeats::PerConnection`]) fold into the first, which
//! counts them and keeps the last frame and time and the first few XIDs.
//!
//! Apart from the engine's loop, which still makes one anomaly per
//! occurrence: the metrics and the dataset count occurrences, and a filter
//! judges each occurrence before the outputs that show findings fold them.

use std::collections::HashMap;

use crate::anomaly::{Repeated, Repeats};
use crate::keys::{ConnId, Origin};
use crate::{Anomaly, Kind};

/// What occurrences fold together: one fact, told by one source, about one
/// connection.
pub type Key = (Kind, Origin, ConnId);

/// Holds the folding findings until the end of the input; memory grows with
/// the connections and kinds, never with the occurrences.
#[derive(Debug, Default)]
pub struct Collapser {
    held: HashMap<Key, Anomaly>,
}

impl Collapser {
    /// The key `a` folds under; `None` when it stands alone (its kind is
    /// per event, or it names no connection).
    pub fn key(a: &Anomaly) -> Option<Key> {
        match a.kind.repeats() {
            Repeats::PerConnection => a.connection.map(|c| (a.kind, a.origin, c)),
            Repeats::PerEvent => None,
        }
    }

    /// Folds `a`'s occurrences into `into`, a finding of the same key seen
    /// before it.
    pub fn fold(into: &mut Anomaly, a: &Anomaly) {
        let r = into.repeated.get_or_insert_with(|| {
            Box::new(Repeated {
                count: 1,
                last_frame: into.frames.last().copied(),
                last_ts_ns: into.ts_ns,
                xids: into.xid.into_iter().collect(),
            })
        });
        r.count += a.count();
        r.last_frame = a.last_frame().or(r.last_frame);
        r.last_ts_ns = a.last_ts_ns().or(r.last_ts_ns);
        let theirs = match &a.repeated {
            Some(ar) => ar.xids.clone(),
            None => a.xid.into_iter().collect(),
        };
        for x in theirs {
            if r.xids.len() >= Repeated::XIDS {
                break;
            }
            r.xids.push(x);
        }
    }

    /// Takes `a`: gives it back when it stands alone, otherwise holds it
    /// (the first of its key) or folds it into the one held.
    pub fn take(&mut self, a: Anomaly) -> Option<Anomaly> {
        let Some(key) = Self::key(&a) else {
            return Some(a);
        };
        match self.held.get_mut(&key) {
            Some(first) => Self::fold(first, &a),
            None => {
                self.held.insert(key, a);
            }
        }
        None
    }

    /// Findings held.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// The findings held, in the order of their first occurrence; one seen
    /// once comes out as it went in.
    pub fn drain(&mut self) -> Vec<Anomaly> {
        let mut out: Vec<Anomaly> = self.held.drain().map(|(_, a)| a).collect();
        out.sort_by_key(|a| (a.ts_ns, a.first_frame(), a.kind, a.connection));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn occurrence(kind: Kind, conn: u32, frame: u64, xid: u32) -> Anomaly {
        Anomaly {
            kind,
            origin: Origin::Wire,
            ts_ns: Some(frame * 1000),
            frames: vec![frame],
            connection: Some(ConnId(conn)),
            xid: Some(xid),
            message: format!("m{frame}"),
            repeated: None,
        }
    }

    #[test]
    fn a_fact_per_connection_folds_into_its_first_occurrence() {
        let mut c = Collapser::default();
        let k = Kind::RemoteInvalidationNotNegotiated;
        for i in 0..100u64 {
            assert!(c.take(occurrence(k, 1, 10 + i, i as u32)).is_none());
        }
        assert!(c.take(occurrence(k, 2, 5000, 7)).is_none());
        assert_eq!(c.len(), 2, "one per connection");
        let out = c.drain();
        let first = &out[0];
        assert_eq!(first.count(), 100);
        assert_eq!(
            (first.first_frame(), first.last_frame()),
            (Some(10), Some(109))
        );
        assert_eq!(
            (first.ts_ns, first.last_ts_ns()),
            (Some(10_000), Some(109_000))
        );
        assert_eq!(first.message, "m10");
        let xids = &first.repeated.as_ref().unwrap().xids;
        assert_eq!(xids.as_slice(), &[0, 1, 2, 3, 4, 5, 6, 7]);
        // Seen once: out as it went in.
        assert_eq!(out[1], occurrence(k, 2, 5000, 7));
    }

    #[test]
    fn events_and_findings_without_a_connection_stand_alone() {
        let mut c = Collapser::default();
        let nak = occurrence(Kind::Nak, 1, 3, 1);
        assert_eq!(c.take(nak.clone()), Some(nak));
        let mut loose = occurrence(Kind::MsgpUsed, 1, 4, 1);
        loose.connection = None;
        assert_eq!(c.take(loose.clone()), Some(loose));
        assert!(c.is_empty());
    }

    #[test]
    fn folding_a_folded_finding_adds_its_count() {
        let k = Kind::MsgpUsed;
        let mut a = occurrence(k, 1, 1, 1);
        let mut b = occurrence(k, 1, 2, 2);
        Collapser::fold(&mut b, &occurrence(k, 1, 3, 3));
        Collapser::fold(&mut a, &b);
        assert_eq!(a.count(), 3);
        assert_eq!(a.last_frame(), Some(3));
        assert_eq!(a.repeated.unwrap().xids, vec![1, 2, 3]);
    }
}
