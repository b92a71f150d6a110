//! Findings judged through their transaction: `anomalies --filter READ`
//! keeps the findings of READ transactions. A finding and its transaction
//! reach the sinks in either order, so whichever comes first waits (in
//! bounded memory) for the other.

use std::collections::{HashMap, VecDeque};

use super::Filter;
use crate::engine::{Anomaly, Finding, Transaction};

/// Transactions with findings kept to judge findings that come after them.
const KEPT_TRANSACTIONS: usize = 4096;
/// Findings held waiting for their transaction; past this the oldest is
/// judged without it (its transaction's fields unknown).
const HELD_FINDINGS: usize = 4096;

type Key = (u32, u32);

/// Decides findings against a filter that names transaction fields.
#[derive(Debug, Default)]
pub struct Join {
    txns: HashMap<Key, Transaction>,
    order: VecDeque<Key>,
    held: VecDeque<Anomaly>,
}

fn key_of(a: &Anomaly) -> Option<Key> {
    Some((a.connection?.0, a.xid?))
}

impl Join {
    /// Takes a finding; calls `out` with each finding decided now, and
    /// whether it passes. Without a filter that needs it, that is `f` at once.
    pub fn take(&mut self, filter: &Filter, f: Finding, out: &mut dyn FnMut(Finding, bool)) {
        if !filter.needs_transaction() {
            let pass = match &f {
                Finding::Transaction(t) => filter.txn(t),
                Finding::Anomaly(a) => filter.anomaly(a),
            };
            return out(f, pass);
        }
        match f {
            Finding::Transaction(t) => self.transaction(filter, t, out),
            Finding::Anomaly(a) => {
                let Some(k) = key_of(&a) else {
                    let pass = filter.anomaly(&a);
                    return out(Finding::Anomaly(a), pass);
                };
                if let Some(t) = self.txns.get(&k) {
                    let pass = filter.anomaly_in(&a, Some(t));
                    return out(Finding::Anomaly(a), pass);
                }
                self.held.push_back(*a);
                if self.held.len() > HELD_FINDINGS {
                    if let Some(a) = self.held.pop_front() {
                        let pass = filter.anomaly(&a);
                        out(Finding::Anomaly(Box::new(a)), pass);
                    }
                }
            }
        }
    }

    fn transaction(
        &mut self,
        filter: &Filter,
        t: Box<Transaction>,
        out: &mut dyn FnMut(Finding, bool),
    ) {
        let k = (t.connection.0, t.xid);
        let mut i = 0;
        while i < self.held.len() {
            if key_of(&self.held[i]) == Some(k) {
                if let Some(a) = self.held.remove(i) {
                    let pass = filter.anomaly_in(&a, Some(&t));
                    out(Finding::Anomaly(Box::new(a)), pass);
                }
            } else {
                i += 1;
            }
        }
        if !t.anomalies.is_empty() {
            if self.txns.insert(k, (*t).clone()).is_none() {
                self.order.push_back(k);
            }
            if self.order.len() > KEPT_TRANSACTIONS {
                if let Some(old) = self.order.pop_front() {
                    self.txns.remove(&old);
                }
            }
        }
        let pass = filter.txn(&t);
        out(Finding::Transaction(t), pass);
    }

    /// The end: findings still waiting are judged without their transaction.
    pub fn finish(&mut self, filter: &Filter, out: &mut dyn FnMut(Finding, bool)) {
        for a in self.held.drain(..) {
            let pass = filter.anomaly(&a);
            out(Finding::Anomaly(Box::new(a)), pass);
        }
    }
}
