//! The queue-pair table, looked up once or more for every packet.
//!
//! Packets come in runs for one QP (the packets of a bulk transfer follow
//! one another), so the table remembers the slot of the last key it found:
//! a run costs one hash lookup, and the rest compare a key. The states live
//! in a slab so that a slot number stays valid until a removal, which
//! forgets the remembered one.

use super::state::QpState;
use crate::keys::{Map, QpKey};

/// Queue-pair states by key, with the last slot found.
#[derive(Debug, Default)]
pub(crate) struct QpTable {
    slots: Vec<(QpKey, QpState)>,
    index: Map<QpKey, u32>,
    last: Option<(QpKey, u32)>,
    /// The eviction clock's hand: a slot number.
    hand: usize,
}

impl QpTable {
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    fn slot_of(&self, key: &QpKey) -> Option<usize> {
        match self.last {
            Some((k, i)) if k == *key => Some(i as usize),
            _ => self.index.get(key).map(|&i| i as usize),
        }
    }

    pub(crate) fn get(&self, key: &QpKey) -> Option<&QpState> {
        let i = self.slot_of(key)?;
        self.slots.get(i).map(|(_, q)| q)
    }

    pub(crate) fn get_mut(&mut self, key: &QpKey) -> Option<&mut QpState> {
        let i = self.slot_of(key)?;
        self.slots.get_mut(i).map(|(_, q)| q)
    }

    pub(crate) fn contains_key(&self, key: &QpKey) -> bool {
        self.slot_of(key).is_some()
    }

    /// `key`'s state, made empty if new.
    ///
    /// The key is borrowed and a hit writes nothing: the caller has just
    /// built it field by field, and a copy reads it back in wider words,
    /// which stalls store forwarding for longer than the lookup takes.
    #[inline]
    pub(crate) fn get_or_default(&mut self, key: &QpKey) -> &mut QpState {
        let i = match self.last {
            Some((k, i)) if k == *key => i as usize,
            _ => {
                let key = *key;
                let i = match self.index.get(&key) {
                    Some(&i) => i as usize,
                    None => {
                        let i = self.slots.len();
                        // The caps keep the table far below 2^32 entries.
                        self.index.insert(key, i as u32);
                        self.slots.push((key, QpState::default()));
                        i
                    }
                };
                self.last = Some((key, i as u32));
                i
            }
        };
        &mut self.slots[i].1
    }

    pub(crate) fn remove(&mut self, key: &QpKey) -> Option<QpState> {
        let i = self.index.remove(key)? as usize;
        self.last = None;
        let (_, q) = self.slots.swap_remove(i);
        if let Some((moved, _)) = self.slots.get(i) {
            self.index.insert(*moved, i as u32);
        }
        Some(q)
    }

    /// Takes out the eviction clock's next QP: the hand sweeps the slots,
    /// giving a QP seen since it last passed (`referenced`) a second
    /// chance; after a bounded number of those the QP under the hand goes
    /// whatever it is, so an eviction is constant time.
    pub(crate) fn evict(&mut self) -> Option<(QpKey, QpState)> {
        const SECOND_CHANCES: usize = 16;
        let n = self.slots.len();
        if n == 0 {
            return None;
        }
        for _ in 0..SECOND_CHANCES {
            if self.hand >= self.slots.len() {
                self.hand = 0;
            }
            let Some((_, q)) = self.slots.get_mut(self.hand) else {
                break;
            };
            if !q.referenced {
                break;
            }
            q.referenced = false;
            self.hand += 1;
        }
        if self.hand >= self.slots.len() {
            self.hand = 0;
        }
        let key = self.slots.get(self.hand)?.0;
        // The last slot moves into the hand's place and is looked at next.
        self.remove(&key).map(|q| (key, q))
    }

    /// Keeps the QPs for which `keep` is true.
    #[cfg(test)]
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&QpKey, &QpState) -> bool) {
        let mut i = 0;
        while let Some((k, q)) = self.slots.get(i) {
            if keep(k, q) {
                i += 1;
            } else {
                // The last slot moves into `i`: look at `i` again.
                let k = *k;
                let _ = self.remove(&k);
            }
        }
    }

    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&QpKey, &QpState)> {
        self.slots.iter().map(|(k, q)| (k, q))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Addr;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    fn key(n: u32) -> QpKey {
        let addr = match n % 5 {
            0 => Addr::Ip(IpAddr::V6(Ipv6Addr::from(u128::from(n)))),
            1 => Addr::Lid((n % 11) as u16),
            2 => Addr::Gid(Ipv6Addr::from(u128::from(n % 13))),
            _ => Addr::Ip(IpAddr::V4(Ipv4Addr::from(n % 7))),
        };
        QpKey { addr, qpn: n }
    }

    /// Random inserts, lookups, removals and retains agree with a plain map,
    /// whatever the remembered slot.
    #[test]
    fn agrees_with_a_map() {
        let mut t = QpTable::default();
        let mut m: std::collections::HashMap<QpKey, u64> = Default::default();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for step in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = key((x % 97) as u32);
            match (x >> 32) % 8 {
                0..=3 => {
                    t.get_or_default(&k).last_ts_ns = step;
                    m.insert(k, step);
                }
                4 | 5 => {
                    assert_eq!(t.get(&k).map(|q| q.last_ts_ns), m.get(&k).copied());
                    assert_eq!(t.contains_key(&k), m.contains_key(&k));
                }
                6 => assert_eq!(t.remove(&k).map(|q| q.last_ts_ns), m.remove(&k)),
                _ => {
                    let cut = x % 5;
                    t.retain(|k, _| u64::from(k.qpn) % 5 != cut);
                    m.retain(|k, _| u64::from(k.qpn) % 5 != cut);
                }
            }
            assert_eq!(t.len(), m.len());
        }
        let mut all: Vec<_> = t.iter().map(|(k, q)| (*k, q.last_ts_ns)).collect();
        let mut want: Vec<_> = m.into_iter().collect();
        all.sort();
        want.sort();
        assert_eq!(all, want);
    }
}
