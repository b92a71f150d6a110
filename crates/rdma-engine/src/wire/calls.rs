//! The outstanding calls' table: where a call waits for its reply, what it
//! costs in the memory budget, and who goes when room is needed.
//!
//! ```text
//!  call ──► insert_call ──► Corr.outstanding[key]      (the latest call of an XID)
//!                           Corr.earlier[key]           (the XID's earlier calls, oldest first)
//!                           Corr.order, Table.calls     (send order: per connection, global)
//!  reply ─► take_call ────► the oldest call of the XID (replies pair in order)
//!  room ──► the connection's oldest at --max-outstanding; the oldest of all
//!           when the calls' share of the budget is spent
//! ```
//!
//! The two orders are queues with lazy deletion: a call that got its reply
//! stays in them until met at the front (then skipped) or swept out when
//! such entries outnumber the live ones, so every operation is constant
//! time amortised, whatever the number of calls.

use std::collections::VecDeque;

use rdma_dissectors::rpcrdma::Xid;

use super::cost::call_bytes;
use super::state::{held, Corr, Parked, Txn, PARK_NS};
use crate::keys::{Addr, CallKey, ConnId, Map};
use crate::{Engine, Finding, Kind};

/// How a call left the table early.
enum Evicted {
    /// The connection's cap.
    Connection(usize),
    /// The budget's share for calls.
    Budget(usize),
}

impl Engine {
    /// Puts `t` in `conn`'s outstanding calls under `key`; an earlier call of
    /// the same XID still outstanding moves to `earlier`.
    pub(crate) fn insert_call(&mut self, conn: ConnId, key: CallKey, mut t: Txn) {
        let seq = self.conns.next_seq;
        self.conns.next_seq += 1;
        t.seq = seq;
        t.cost = call_bytes(&t, self.config.max_ladder_steps) + self.index_call(conn, key, &t);
        let cost = t.cost;
        let Some(corr) = self.conns.corr.get_mut(&conn) else {
            return;
        };
        for s in &t.rec.chunks {
            let v = corr.stags.entry(s.handle).or_default();
            if !v.contains(&key) && v.len() < 64 {
                v.push(key);
            }
        }
        if let Some(before) = corr.outstanding.insert(key, Box::new(t)) {
            corr.earlier.entry(key).or_default().push_back(before);
            corr.earlier_count += 1;
        }
        corr.order.push_back((key, seq));
        corr.backchannel_calls += usize::from(key.backchannel);
        let live = corr.in_flight();
        if corr.order.len() > 2 * live + 64 {
            let Corr {
                order,
                outstanding,
                earlier,
                ..
            } = corr;
            order.retain(|(k, s)| held(outstanding, earlier, k, *s));
        }
        self.conns.calls.push_back((conn, key, seq));
        self.conns.call_count += 1;
        self.conns.call_bytes += cost;
        if self.conns.calls.len() > 2 * self.conns.call_count + 1024 {
            let Self { conns, .. } = self;
            let corr = &conns.corr;
            conns
                .calls
                .retain(|(c, k, s)| corr.get(c).is_some_and(|x| x.holds(k, *s)));
        }
    }

    /// Takes the oldest outstanding call of `key` on `conn`: a reply
    /// answers the XID's calls in the order they were sent.
    pub(crate) fn take_call(&mut self, conn: ConnId, key: CallKey) -> Option<Box<Txn>> {
        let corr = self.conns.corr.get_mut(&conn)?;
        let t = match corr.earlier.get_mut(&key) {
            Some(q) => {
                let t = q.pop_front();
                if q.is_empty() {
                    corr.earlier.remove(&key);
                }
                corr.earlier_count -= usize::from(t.is_some());
                t
            }
            None => corr.outstanding.remove(&key),
        }?;
        let in_flight = release(corr, key, &t);
        self.call_left(conn, key, in_flight, &t);
        Some(t)
    }

    /// The table's counts once call `t` has left `conn`, which has
    /// `in_flight` calls left ([`release`]).
    fn call_left(&mut self, conn: ConnId, key: CallKey, in_flight: u32, t: &Txn) {
        self.unindex_call(conn, key, t);
        self.conns.call_count -= 1;
        self.conns.call_bytes -= t.cost;
        if let Some(c) = self.state.connections.get_mut(&conn) {
            c.in_flight = in_flight;
        }
    }

    /// Every call of `conn`, oldest first, out of the table (the connection
    /// closes or goes).
    pub(crate) fn drain_calls(&mut self, conn: ConnId) -> Vec<Txn> {
        self.unindex_half_open(conn);
        let Some(corr) = self.conns.corr.get_mut(&conn) else {
            return Vec::new();
        };
        let mut txns: Vec<Txn> = corr.outstanding.drain().map(|(_, t)| *t).collect();
        txns.extend(corr.earlier.drain().flat_map(|(_, q)| q).map(|t| *t));
        corr.earlier_count = 0;
        corr.backchannel_calls = 0;
        corr.order.clear();
        corr.stags.clear();
        corr.reads.clear();
        shrink(corr);
        txns.sort_by_key(|t| t.seq);
        self.conns.call_count -= txns.len();
        self.conns.call_bytes -= txns.iter().map(|t| t.cost).sum::<usize>();
        txns
    }

    /// Makes room for one more call on `conn`: its oldest goes at the
    /// connection's cap, the oldest of all while the calls' share of the
    /// budget is spent.
    pub(crate) fn make_room_for_call(&mut self, conn: ConnId, out: &mut Vec<Finding>) {
        let cap = self.limits.calls_per_connection;
        let full = self
            .conns
            .corr
            .get(&conn)
            .is_some_and(|c| c.in_flight() >= cap);
        if full {
            if let Some(t) = self.evict_oldest_of(conn) {
                self.evicted_call(conn, t, Evicted::Connection(cap), out);
            }
        }
        let budget = self.limits.call_bytes;
        while self.conns.call_bytes > budget {
            let Some((c, k, s)) = self.conns.calls.pop_front() else {
                break;
            };
            if let Some(t) = self.evict_call(c, k, s) {
                self.evicted_call(c, t, Evicted::Budget(budget), out);
            }
        }
        let calls = &mut self.conns.calls;
        if calls.capacity() > 1024 && calls.len() * 4 < calls.capacity() {
            calls.shrink_to(calls.len() * 2);
        }
    }

    /// The oldest call still outstanding on `conn`, out of the table.
    fn evict_oldest_of(&mut self, conn: ConnId) -> Option<Box<Txn>> {
        loop {
            let (k, s) = self.conns.corr.get_mut(&conn)?.order.pop_front()?;
            if let Some(t) = self.evict_call(conn, k, s) {
                return Some(t);
            }
        }
    }

    /// Call `seq` of `key` on `conn`, out of the table, if it is still there.
    fn evict_call(&mut self, conn: ConnId, key: CallKey, seq: u64) -> Option<Box<Txn>> {
        let corr = self.conns.corr.get_mut(&conn)?;
        let t = if corr.outstanding.get(&key).is_some_and(|t| t.seq == seq) {
            // The latest call of its XID goes; the one before, if any, takes its place.
            let t = corr.outstanding.remove(&key);
            if let Some(q) = corr.earlier.get_mut(&key) {
                if let Some(prev) = q.pop_back() {
                    corr.earlier_count -= 1;
                    corr.outstanding.insert(key, prev);
                }
                if q.is_empty() {
                    corr.earlier.remove(&key);
                }
            }
            t
        } else {
            let q = corr.earlier.get_mut(&key)?;
            let at = q.iter().position(|t| t.seq == seq)?;
            let t = q.remove(at);
            if q.is_empty() {
                corr.earlier.remove(&key);
            }
            corr.earlier_count -= usize::from(t.is_some());
            t
        }?;
        let in_flight = release(corr, key, &t);
        self.call_left(conn, key, in_flight, &t);
        Some(t)
    }

    /// Says that a call was given up on, and hands it out unanswered.
    fn evicted_call(&mut self, conn: ConnId, t: Box<Txn>, why: Evicted, out: &mut Vec<Finding>) {
        self.state.evictions.calls += 1;
        let xid = t.rec.xid;
        let msg = match why {
            Evicted::Connection(cap) => format!(
                "too many outstanding calls on {conn} (cap {cap}): stopped waiting for the reply to xid {xid:#010x}; raise --max-outstanding"
            ),
            Evicted::Budget(bytes) => format!(
                "outstanding calls fill their share of the memory budget ({} MiB of --memory-limit): stopped waiting for the reply to xid {xid:#010x} on {conn}, the oldest; raise --memory-limit",
                bytes >> 20
            ),
        };
        // One finding per power of two for the budget: a flood of
        // unanswered calls would otherwise double every call with a line.
        let say =
            matches!(why, Evicted::Connection(_)) || self.state.evictions.calls.is_power_of_two();
        if say {
            self.anomaly(
                out,
                Kind::StateEvicted,
                vec![t.rec.call_frame],
                Some(conn),
                Some(xid),
                msg,
            );
        }
        out.push(Finding::Transaction(Box::new(t.rec)));
    }
}

/// Calls a torn-down connection left unanswered, by the client's address
/// and the call's key: a client sends them again on its next connection
/// (RFC 8166 4.5.5), and the one operation is then followed across the
/// reconnect. Those never sent again go out unanswered at the end, after
/// [`PARK_NS`], or when the table's share of the budget is spent.
#[derive(Debug, Default)]
pub(crate) struct ParkedCalls {
    calls: Map<(Addr, CallKey), Parked>,
    /// `calls` in the order they came in (oldest goes first); entries of
    /// calls already taken are skipped when met.
    order: VecDeque<((Addr, CallKey), u64)>,
    /// Bytes the parked calls cost (`cost::call_bytes` each).
    bytes: usize,
}

impl ParkedCalls {
    /// Bytes the parked calls cost, as the budget counts them.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Parks `p`, a call of the client at `client`; gives back the call it
    /// displaced: two torn-down connections left the same client's XID
    /// unanswered, and the older is not the one the client will send again.
    pub fn put(&mut self, client: Addr, p: Parked) -> Option<Parked> {
        let key = (
            client,
            CallKey {
                backchannel: false,
                xid: Xid(p.txn.rec.xid),
            },
        );
        let seq = p.txn.seq;
        self.bytes += p.txn.cost;
        let old = self.calls.insert(key, p);
        if let Some(o) = &old {
            self.bytes -= o.txn.cost;
        }
        self.order.push_back((key, seq));
        old
    }

    /// Drops the order's entries of calls already taken once they
    /// outnumber the parked ones.
    pub fn sweep(&mut self) {
        let Self { calls, order, .. } = self;
        if order.len() > 2 * calls.len() + 64 {
            order.retain(|(k, s)| calls.get(k).is_some_and(|p| p.txn.seq == *s));
        }
    }

    /// The parked call `key` of the client at `client`, out of the table.
    pub fn take(&mut self, client: Addr, key: CallKey) -> Option<Parked> {
        let p = self.calls.remove(&(client, key))?;
        self.bytes -= p.txn.cost;
        Some(p)
    }

    /// The oldest parked call, out of the table.
    pub fn oldest(&mut self) -> Option<Parked> {
        while let Some((k, s)) = self.order.pop_front() {
            if self.holds(&k, s) {
                return self.take(k.0, k.1);
            }
        }
        None
    }

    /// The oldest parked call if it has waited longer than [`PARK_NS`] at
    /// `now` to be sent again, out of the table.
    pub fn expired(&mut self, now: u64) -> Option<Parked> {
        while let Some(&(k, s)) = self.order.front() {
            let stale = match self.calls.get(&k) {
                Some(p) if p.txn.seq == s => {
                    p.at.is_some_and(|at| now.saturating_sub(at) > PARK_NS)
                }
                // An entry of a call already taken: skip it.
                _ => true,
            };
            if !stale {
                return None;
            }
            self.order.pop_front();
            if self.holds(&k, s) {
                return self.take(k.0, k.1);
            }
        }
        None
    }

    fn holds(&self, k: &(Addr, CallKey), seq: u64) -> bool {
        self.calls.get(k).is_some_and(|p| p.txn.seq == seq)
    }
}

impl Engine {
    /// Keeps call `t` of a torn-down connection, whose client is at
    /// `client`, until the client sends it again; past the table's share of
    /// the budget the oldest goes out unanswered, as it would have without
    /// the table.
    pub(crate) fn park(&mut self, client: Addr, t: Txn, why: &str, out: &mut Vec<Finding>) {
        let parked = Parked {
            txn: Box::new(t),
            why: why.into(),
            at: self.state.totals.last_ts_ns,
        };
        if let Some(old) = self.conns.parked.put(client, parked) {
            self.unanswered(old.txn, &old.why, old.at, out);
        }
        while self.conns.parked.bytes() > self.limits.parked_bytes {
            let Some(p) = self.conns.parked.oldest() else {
                break;
            };
            self.unanswered(p.txn, &p.why, p.at, out);
        }
        self.conns.parked.sweep();
    }

    /// Hands out unanswered the parked calls that have waited longer than
    /// [`PARK_NS`] at `now` to be sent again.
    pub(crate) fn expire_parked(&mut self, now: u64, out: &mut Vec<Finding>) {
        while let Some(p) = self.conns.parked.expired(now) {
            self.unanswered(p.txn, &p.why, p.at, out);
        }
    }
}

/// Takes `key` off the STags that `t`'s chunks named, unless another call
/// of the same XID (a retransmission still outstanding) names them too.
/// What a connection's table owes call `t` of `key`, just taken out of it:
/// its STags go, the table may shrink. Returns the calls still in flight.
fn release(corr: &mut Corr, key: CallKey, t: &Txn) -> u32 {
    forget_stags(corr, key, t);
    shrink(corr);
    corr.backchannel_calls -= usize::from(key.backchannel);
    corr.in_flight_on(false) as u32
}

fn forget_stags(corr: &mut Corr, key: CallKey, t: &Txn) {
    let names = |o: &Txn, handle: u32| o.rec.chunks.iter().any(|s| s.handle == handle);
    for s in &t.rec.chunks {
        let kept = corr
            .outstanding
            .get(&key)
            .is_some_and(|o| names(o, s.handle))
            || corr
                .earlier
                .get(&key)
                .is_some_and(|q| q.iter().any(|o| names(o, s.handle)));
        if kept {
            continue;
        }
        if let Some(v) = corr.stags.get_mut(&s.handle) {
            v.retain(|k| *k != key);
            if v.is_empty() {
                corr.stags.remove(&s.handle);
            }
        }
    }
}

/// Gives back what a connection's tables grew to in a burst and no longer
/// use: hash tables never shrink by themselves, and a thousand connections
/// each keeping the slots of its busiest second would hold the budget's
/// worth of memory outside it.
fn shrink(corr: &mut Corr) {
    fn sparse(len: usize, capacity: usize) -> bool {
        capacity > 64 && len * 4 < capacity
    }
    if sparse(corr.outstanding.len(), corr.outstanding.capacity()) {
        corr.outstanding.shrink_to(corr.outstanding.len() * 2);
    }
    if sparse(corr.stags.len(), corr.stags.capacity()) {
        corr.stags.shrink_to(corr.stags.len() * 2);
    }
    if sparse(corr.order.len(), corr.order.capacity()) {
        corr.order.shrink_to(corr.order.len() * 2);
    }
}

#[cfg(test)]
mod tests {
    use super::{ParkedCalls, PARK_NS};
    use crate::keys::{Addr, CallKey, ConnId, Origin};
    use crate::wire::state::{Parked, Txn};
    use crate::{CallHeader, Transaction};
    use rdma_dissectors::rpcrdma::Xid;

    const CLIENT: Addr = Addr::Lid(1);

    /// Call `xid`, sent as the `seq`th, costing `cost`, given up at `at`.
    fn parked(xid: u32, seq: u64, cost: usize, at: u64) -> Parked {
        let header = CallHeader::Wire(Vec::new().into());
        let txn = Txn {
            rec: Transaction::new(Origin::Wire, ConnId(1), xid, seq, at, header),
            seq,
            cost,
            first_read_ts: None,
            last_read_ts: None,
            first_write_ts: None,
            last_write_ts: None,
            reply_head: None,
        };
        Parked {
            txn: Box::new(txn),
            why: "torn down".into(),
            at: Some(at),
        }
    }

    fn key(xid: u32) -> CallKey {
        CallKey {
            backchannel: false,
            xid: Xid(xid),
        }
    }

    fn xid(p: Option<Parked>) -> Option<u32> {
        p.map(|p| p.txn.rec.xid)
    }

    #[test]
    fn a_call_parked_again_gives_back_the_older_and_its_bytes() {
        let mut t = ParkedCalls::default();
        assert!(t.put(CLIENT, parked(7, 1, 100, 0)).is_none());
        let old = t.put(CLIENT, parked(7, 2, 30, 0));
        assert_eq!(old.map(|p| p.txn.seq), Some(1));
        assert_eq!(t.bytes(), 30);
        assert_eq!(t.take(CLIENT, key(7)).map(|p| p.txn.seq), Some(2));
        assert_eq!(t.bytes(), 0);
        // The displaced call's entry in the order is skipped, not handed out.
        assert!(t.oldest().is_none());
    }

    #[test]
    fn the_oldest_goes_first_and_those_taken_are_skipped() {
        let mut t = ParkedCalls::default();
        for (i, x) in [1, 2, 3].into_iter().enumerate() {
            t.put(CLIENT, parked(x, i as u64, 10, 0));
        }
        assert_eq!(xid(t.take(CLIENT, key(2))), Some(2));
        assert_eq!(xid(t.oldest()), Some(1));
        assert_eq!(xid(t.oldest()), Some(3));
        assert_eq!(xid(t.oldest()), None);
        assert_eq!(t.bytes(), 0);
    }

    #[test]
    fn a_call_expires_once_it_has_waited_longer_than_park_ns() {
        let mut t = ParkedCalls::default();
        t.put(CLIENT, parked(1, 1, 10, 0));
        t.put(CLIENT, parked(2, 2, 10, PARK_NS));
        assert_eq!(xid(t.expired(PARK_NS)), None, "waited exactly PARK_NS");
        assert_eq!(xid(t.expired(PARK_NS + 1)), Some(1));
        assert_eq!(xid(t.expired(PARK_NS + 1)), None);
        assert_eq!(xid(t.expired(2 * PARK_NS + 1)), Some(2));
        assert!(t.is_empty());
    }
}
