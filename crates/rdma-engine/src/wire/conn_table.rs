//! The connections' two halves, kept by one owner: the public view the
//! front ends read ([`State::connections`](crate::State::connections)) and
//! the wire's private correlation entry ([`Corr`]). A connection is opened,
//! looked up for eviction and closed in both at once, so that neither
//! outlives the other.

use std::collections::{BTreeMap, VecDeque};

use super::state::Corr;
use crate::keys::{ConnId, Map};
use crate::model::Connection;

/// The wire's correlation entries and the eviction clock over them.
#[derive(Debug, Default)]
pub(crate) struct ConnTable {
    corr: Map<ConnId, Corr>,
    /// Connections in the order they were made, with the time they were
    /// last looked at: the eviction clock (see [`ConnTable::next_to_evict`]).
    clock: VecDeque<(ConnId, u64)>,
}

impl ConnTable {
    pub fn get(&self, id: &ConnId) -> Option<&Corr> {
        self.corr.get(id)
    }

    pub fn get_mut(&mut self, id: &ConnId) -> Option<&mut Corr> {
        self.corr.get_mut(id)
    }

    /// Every connection's entry, in no particular order.
    pub fn values(&self) -> impl Iterator<Item = &Corr> {
        self.corr.values()
    }

    /// The connections' ids, in the order they were made.
    pub fn ids(&self) -> Vec<ConnId> {
        let mut v: Vec<ConnId> = self.corr.keys().copied().collect();
        v.sort();
        v
    }

    /// Opens connection `id`, first seen at `ts`, in `view` and here.
    pub fn open(&mut self, view: &mut BTreeMap<ConnId, Connection>, id: ConnId, ts: u64) {
        view.insert(id, Connection::new(id, ts));
        self.corr.insert(id, Corr::default());
        self.clock.push_back((id, ts));
    }

    /// Closes connection `id` in `view` and here; gives back its view.
    pub fn close(
        &mut self,
        view: &mut BTreeMap<ConnId, Connection>,
        id: ConnId,
    ) -> Option<Connection> {
        self.corr.remove(&id);
        view.remove(&id)
    }

    /// The connection to evict: the clock's next one idle since it was last
    /// passed (a connection seen since goes round again, with a bounded
    /// number of such second chances so that an eviction is constant time).
    pub fn next_to_evict(&mut self, view: &BTreeMap<ConnId, Connection>) -> Option<ConnId> {
        const SECOND_CHANCES: usize = 8;
        let mut chances = 0;
        while let Some((id, seen)) = self.clock.pop_front() {
            let Some(c) = view.get(&id) else {
                // Gone already: a stale entry.
                continue;
            };
            if c.last_ts_ns > seen && chances < SECOND_CHANCES {
                chances += 1;
                self.clock.push_back((id, c.last_ts_ns));
                continue;
            }
            return Some(id);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::ConnTable;
    use crate::keys::ConnId;
    use std::collections::BTreeMap;

    #[test]
    fn a_connection_opens_and_closes_in_both_halves() {
        let (mut t, mut view) = (ConnTable::default(), BTreeMap::new());
        t.open(&mut view, ConnId(2), 10);
        t.open(&mut view, ConnId(1), 20);
        assert_eq!(t.ids(), [ConnId(1), ConnId(2)]);
        assert!(view.contains_key(&ConnId(2)) && t.get(&ConnId(2)).is_some());
        assert_eq!(t.close(&mut view, ConnId(2)).map(|c| c.id), Some(ConnId(2)));
        assert!(!view.contains_key(&ConnId(2)) && t.get(&ConnId(2)).is_none());
        assert_eq!(t.ids(), [ConnId(1)]);
    }

    #[test]
    fn the_clock_passes_over_a_connection_seen_since_and_skips_those_gone() {
        let (mut t, mut view) = (ConnTable::default(), BTreeMap::new());
        for (id, ts) in [(1, 10), (2, 20), (3, 30)] {
            t.open(&mut view, ConnId(id), ts);
        }
        // 1 was seen after the clock last passed it; 2 is gone.
        view.get_mut(&ConnId(1)).unwrap().last_ts_ns = 50;
        t.close(&mut view, ConnId(2));
        assert_eq!(t.next_to_evict(&view), Some(ConnId(3)));
        // 1 went round again with its new time: idle since, it goes next.
        assert_eq!(t.next_to_evict(&view), Some(ConnId(1)));
        assert_eq!(t.next_to_evict(&view), None);
    }
}
