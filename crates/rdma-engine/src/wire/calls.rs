//! The outstanding calls' table: where a call waits for its reply, what it
//! costs in the memory budget, and who goes when room is needed.
//!
//! ```text
//!  call ──► insert_call ──► ConnCalls (per connection): the latest call of
//!                           an XID, the XID's earlier calls (oldest first),
//!                           the send order; Table.calls: the global order
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
use super::state::{Corr, Parked, Table, Txn, PARK_NS};
use crate::keys::{Addr, CallKey, ConnId, Map};
use crate::{Engine, Finding, Kind};

/// One connection's outstanding calls, by XID: where a call waits for its
/// reply. A reply answers the XID's calls in the order they were sent, so
/// a call sent again while outstanding moves behind the latest.
#[derive(Debug, Default)]
pub(crate) struct ConnCalls {
    /// The latest call of each XID.
    /// Boxed: a table's slots outlive its entries (it does not shrink by
    /// itself), and an empty slot should cost a pointer, not a call.
    latest: Map<CallKey, Box<Txn>>,
    /// Earlier calls of an XID sent again while they were outstanding,
    /// oldest first.
    earlier: Map<CallKey, VecDeque<Box<Txn>>>,
    /// Calls in `earlier`.
    earlier_count: usize,
    /// Of all the calls, those on the backchannel (server to client).
    backchannel: usize,
    /// The order the calls were sent (key, sequence number), for evicting
    /// the oldest at the per-connection cap; entries of calls already gone
    /// are skipped when met.
    order: VecDeque<(CallKey, u64)>,
}

impl ConnCalls {
    /// Calls outstanding, reused XIDs' earlier calls included.
    pub fn in_flight(&self) -> usize {
        self.latest.len() + self.earlier_count
    }

    /// Calls outstanding in one direction: the forward channel's (which the
    /// credits govern) or the backchannel's.
    pub fn in_flight_on(&self, backchannel: bool) -> usize {
        if backchannel {
            self.backchannel
        } else {
            self.in_flight() - self.backchannel
        }
    }

    /// Whether the call `seq` of `key` is still outstanding here.
    pub fn holds(&self, key: &CallKey, seq: u64) -> bool {
        held(&self.latest, &self.earlier, key, seq)
    }

    /// Whether a call of `key` is outstanding.
    pub fn contains(&self, key: &CallKey) -> bool {
        self.latest.contains_key(key)
    }

    /// The latest call of `key`.
    pub fn latest(&self, key: &CallKey) -> Option<&Txn> {
        self.latest.get(key).map(|t| &**t)
    }

    /// The latest call of `key`, to add what the wire shows of it.
    pub fn latest_mut(&mut self, key: &CallKey) -> Option<&mut Txn> {
        self.latest.get_mut(key).map(|t| &mut **t)
    }

    /// The keys of the calls outstanding.
    pub fn keys(&self) -> impl Iterator<Item = &CallKey> {
        self.latest.keys()
    }

    /// Every call outstanding, reused XIDs' earlier calls included.
    pub fn all(&self) -> impl Iterator<Item = &Txn> {
        let earlier = self.earlier.values().flatten();
        self.latest.values().chain(earlier).map(|t| &**t)
    }

    /// The calls of `key` still outstanding.
    pub fn of_xid(&self, key: CallKey) -> impl Iterator<Item = &Txn> {
        let earlier = self.earlier.get(&key).into_iter().flatten();
        self.latest
            .get(&key)
            .into_iter()
            .chain(earlier)
            .map(|t| &**t)
    }

    /// Puts `t` under `key`; an earlier call of the same XID still
    /// outstanding moves behind it.
    pub fn insert(&mut self, key: CallKey, t: Box<Txn>) {
        let seq = t.seq;
        if let Some(before) = self.latest.insert(key, t) {
            self.earlier.entry(key).or_default().push_back(before);
            self.earlier_count += 1;
        }
        self.order.push_back((key, seq));
        self.backchannel += usize::from(key.backchannel);
        if self.order.len() > 2 * self.in_flight() + 64 {
            let Self {
                order,
                latest,
                earlier,
                ..
            } = self;
            order.retain(|(k, s)| held(latest, earlier, k, *s));
        }
    }

    /// The oldest call of `key`, out of the table: the one a reply answers.
    pub fn take_oldest(&mut self, key: CallKey) -> Option<Box<Txn>> {
        let t = match self.earlier.get_mut(&key) {
            Some(q) => {
                let t = q.pop_front();
                if q.is_empty() {
                    self.earlier.remove(&key);
                }
                self.earlier_count -= usize::from(t.is_some());
                t
            }
            None => self.latest.remove(&key),
        }?;
        self.backchannel -= usize::from(key.backchannel);
        Some(t)
    }

    /// Call `seq` of `key`, out of the table, if it is still there.
    pub fn remove(&mut self, key: CallKey, seq: u64) -> Option<Box<Txn>> {
        let t = if self.latest.get(&key).is_some_and(|t| t.seq == seq) {
            // The latest call of its XID goes; the one before, if any, takes its place.
            let t = self.latest.remove(&key);
            if let Some(q) = self.earlier.get_mut(&key) {
                if let Some(prev) = q.pop_back() {
                    self.earlier_count -= 1;
                    self.latest.insert(key, prev);
                }
                if q.is_empty() {
                    self.earlier.remove(&key);
                }
            }
            t
        } else {
            let q = self.earlier.get_mut(&key)?;
            let at = q.iter().position(|t| t.seq == seq)?;
            let t = q.remove(at);
            if q.is_empty() {
                self.earlier.remove(&key);
            }
            self.earlier_count -= usize::from(t.is_some());
            t
        }?;
        self.backchannel -= usize::from(key.backchannel);
        Some(t)
    }

    /// The next entry of the send order, oldest first (its call may be gone).
    pub fn pop_order(&mut self) -> Option<(CallKey, u64)> {
        self.order.pop_front()
    }

    /// Every call, oldest first, out of the table.
    pub fn drain(&mut self) -> Vec<Txn> {
        let mut txns: Vec<Txn> = self.latest.drain().map(|(_, t)| *t).collect();
        txns.extend(self.earlier.drain().flat_map(|(_, q)| q).map(|t| *t));
        self.earlier_count = 0;
        self.backchannel = 0;
        self.order.clear();
        txns.sort_by_key(|t| t.seq);
        txns
    }

    /// Gives back what the table grew to in a burst and no longer uses.
    fn shrink(&mut self) {
        if sparse(self.latest.len(), self.latest.capacity()) {
            self.latest.shrink_to(self.latest.len() * 2);
        }
        if sparse(self.order.len(), self.order.capacity()) {
            self.order.shrink_to(self.order.len() * 2);
        }
    }
}

/// Whether call `seq` of `key` is among `latest` and `earlier`.
fn held(
    latest: &Map<CallKey, Box<Txn>>,
    earlier: &Map<CallKey, VecDeque<Box<Txn>>>,
    key: &CallKey,
    seq: u64,
) -> bool {
    latest.get(key).is_some_and(|t| t.seq == seq)
        || earlier
            .get(key)
            .is_some_and(|q| q.iter().any(|t| t.seq == seq))
}

/// Every outstanding call, all connections together: the order they were
/// sent, for the oldest to go first when the calls' share of the budget is
/// spent, and what they cost.
#[derive(Debug, Default)]
pub(crate) struct AllCalls {
    /// (connection, key, sequence number) of each call, oldest first.
    /// Entries of calls already gone are skipped when met, and swept out
    /// when they outnumber the live ones.
    order: VecDeque<(ConnId, CallKey, u64)>,
    count: usize,
    /// Bytes the calls cost (`cost::call_bytes`).
    bytes: usize,
    /// The next call's sequence number.
    next_seq: u64,
}

impl AllCalls {
    pub fn count(&self) -> usize {
        self.count
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// A sequence number for a new call: its place in the order calls
    /// were sent.
    pub fn next_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq - 1
    }

    /// Counts a call added (connection, key, sequence number) at `cost`;
    /// `holds` says whether an older entry's call is still outstanding.
    pub fn added(
        &mut self,
        call: (ConnId, CallKey, u64),
        cost: usize,
        holds: impl Fn(&ConnId, &CallKey, u64) -> bool,
    ) {
        self.order.push_back(call);
        self.count += 1;
        self.bytes += cost;
        if self.order.len() > 2 * self.count + 1024 {
            self.order.retain(|(c, k, s)| holds(c, k, *s));
        }
    }

    /// Counts `n` calls gone, which cost `bytes`.
    pub fn left(&mut self, n: usize, bytes: usize) {
        self.count -= n;
        self.bytes -= bytes;
    }

    /// The oldest entry of the order (its call may be gone).
    pub fn pop_oldest(&mut self) -> Option<(ConnId, CallKey, u64)> {
        self.order.pop_front()
    }

    /// Gives back what the order grew to in a burst.
    pub fn shrink(&mut self) {
        let order = &mut self.order;
        if order.capacity() > 1024 && order.len() * 4 < order.capacity() {
            order.shrink_to(order.len() * 2);
        }
    }
}

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
        let seq = self.conns.calls.next_seq();
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
        corr.calls.insert(key, Box::new(t));
        let Table { calls, corr, .. } = &mut self.conns;
        calls.added((conn, key, seq), cost, |c, k, s| {
            corr.get(c).is_some_and(|x| x.calls.holds(k, s))
        });
    }

    /// Takes the oldest outstanding call of `key` on `conn`: a reply
    /// answers the XID's calls in the order they were sent.
    pub(crate) fn take_call(&mut self, conn: ConnId, key: CallKey) -> Option<Box<Txn>> {
        let corr = self.conns.corr.get_mut(&conn)?;
        let t = corr.calls.take_oldest(key)?;
        let in_flight = release(corr, key, &t);
        self.call_left(conn, key, in_flight, &t);
        Some(t)
    }

    /// The table's counts once call `t` has left `conn`, which has
    /// `in_flight` calls left ([`release`]).
    fn call_left(&mut self, conn: ConnId, key: CallKey, in_flight: u32, t: &Txn) {
        self.unindex_call(conn, key, t);
        self.conns.calls.left(1, t.cost);
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
        let txns = corr.calls.drain();
        corr.stags.clear();
        corr.reads.clear();
        shrink(corr);
        let bytes = txns.iter().map(|t| t.cost).sum::<usize>();
        self.conns.calls.left(txns.len(), bytes);
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
            .is_some_and(|c| c.calls.in_flight() >= cap);
        if full {
            if let Some(t) = self.evict_oldest_of(conn) {
                self.evicted_call(conn, t, Evicted::Connection(cap), out);
            }
        }
        let budget = self.limits.call_bytes;
        while self.conns.calls.bytes() > budget {
            let Some((c, k, s)) = self.conns.calls.pop_oldest() else {
                break;
            };
            if let Some(t) = self.evict_call(c, k, s) {
                self.evicted_call(c, t, Evicted::Budget(budget), out);
            }
        }
        self.conns.calls.shrink();
    }

    /// The oldest call still outstanding on `conn`, out of the table.
    fn evict_oldest_of(&mut self, conn: ConnId) -> Option<Box<Txn>> {
        loop {
            let (k, s) = self.conns.corr.get_mut(&conn)?.calls.pop_order()?;
            if let Some(t) = self.evict_call(conn, k, s) {
                return Some(t);
            }
        }
    }

    /// Call `seq` of `key` on `conn`, out of the table, if it is still there.
    fn evict_call(&mut self, conn: ConnId, key: CallKey, seq: u64) -> Option<Box<Txn>> {
        let corr = self.conns.corr.get_mut(&conn)?;
        let t = corr.calls.remove(key, seq)?;
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
    corr.calls.in_flight_on(false) as u32
}

fn forget_stags(corr: &mut Corr, key: CallKey, t: &Txn) {
    let names = |o: &Txn, handle: u32| o.rec.chunks.iter().any(|s| s.handle == handle);
    for s in &t.rec.chunks {
        if corr.calls.of_xid(key).any(|o| names(o, s.handle)) {
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
    corr.calls.shrink();
    if sparse(corr.stags.len(), corr.stags.capacity()) {
        corr.stags.shrink_to(corr.stags.len() * 2);
    }
}

/// Whether a table of `capacity` slots holding `len` has grown sparse
/// enough to give back half of what it holds.
fn sparse(len: usize, capacity: usize) -> bool {
    capacity > 64 && len * 4 < capacity
}

#[cfg(test)]
mod tests {
    use super::{AllCalls, ConnCalls, ParkedCalls, PARK_NS};
    use crate::keys::{Addr, CallKey, ConnId, Origin};
    use crate::wire::state::{Parked, Txn};
    use crate::{CallHeader, Transaction};
    use rdma_dissectors::rpcrdma::Xid;

    const CLIENT: Addr = Addr::Lid(1);

    /// Call `xid`, sent as the `seq`th at `ts`, costing `cost`.
    fn txn(xid: u32, seq: u64, cost: usize, ts: u64) -> Box<Txn> {
        let header = CallHeader::Wire(Vec::new().into());
        Box::new(Txn {
            rec: Transaction::new(Origin::Wire, ConnId(1), xid, seq, ts, header),
            seq,
            cost,
            first_read_ts: None,
            last_read_ts: None,
            first_write_ts: None,
            last_write_ts: None,
            reply_head: None,
        })
    }

    /// Call `xid`, sent as the `seq`th, costing `cost`, given up at `at`.
    fn parked(xid: u32, seq: u64, cost: usize, at: u64) -> Parked {
        Parked {
            txn: txn(xid, seq, cost, at),
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

    fn seq(t: Option<Box<Txn>>) -> Option<u64> {
        t.map(|t| t.seq)
    }

    #[test]
    fn replies_answer_an_xids_calls_in_the_order_they_were_sent() {
        let mut c = ConnCalls::default();
        c.insert(key(7), txn(7, 1, 0, 0));
        c.insert(key(7), txn(7, 2, 0, 0));
        c.insert(key(8), txn(8, 3, 0, 0));
        assert_eq!(c.in_flight(), 3);
        assert_eq!(c.latest(&key(7)).map(|t| t.seq), Some(2));
        assert_eq!(c.of_xid(key(7)).count(), 2);
        assert_eq!(seq(c.take_oldest(key(7))), Some(1));
        assert_eq!(seq(c.take_oldest(key(7))), Some(2));
        assert_eq!(seq(c.take_oldest(key(7))), None);
        assert_eq!(c.in_flight(), 1);
    }

    #[test]
    fn evicting_the_latest_call_of_an_xid_brings_back_the_one_before() {
        let mut c = ConnCalls::default();
        c.insert(key(7), txn(7, 1, 0, 0));
        c.insert(key(7), txn(7, 2, 0, 0));
        assert_eq!(seq(c.remove(key(7), 2)), Some(2));
        assert_eq!(c.latest(&key(7)).map(|t| t.seq), Some(1));
        assert!(c.holds(&key(7), 1) && !c.holds(&key(7), 2));
        assert_eq!(seq(c.remove(key(7), 2)), None, "already gone");
        // The send order still names the evicted call: it is skipped by
        // whoever meets it.
        assert_eq!(c.pop_order(), Some((key(7), 1)));
        assert_eq!(c.pop_order(), Some((key(7), 2)));
    }

    #[test]
    fn the_backchannels_calls_are_counted_apart() {
        let mut c = ConnCalls::default();
        let back = CallKey {
            backchannel: true,
            xid: Xid(7),
        };
        c.insert(key(7), txn(7, 1, 0, 0));
        c.insert(back, txn(7, 2, 0, 0));
        assert_eq!((c.in_flight_on(false), c.in_flight_on(true)), (1, 1));
        assert_eq!(seq(c.take_oldest(back)), Some(2));
        assert_eq!((c.in_flight_on(false), c.in_flight_on(true)), (1, 0));
    }

    #[test]
    fn draining_hands_out_every_call_oldest_first() {
        let mut c = ConnCalls::default();
        for (s, x) in [(1, 9), (2, 7), (3, 9), (4, 8)] {
            c.insert(key(x), txn(x, s, 0, 0));
        }
        let seqs: Vec<u64> = c.drain().iter().map(|t| t.seq).collect();
        assert_eq!(seqs, [1, 2, 3, 4]);
        assert_eq!((c.in_flight(), c.pop_order()), (0, None));
    }

    #[test]
    fn all_calls_count_in_send_order_and_sweep_the_gone() {
        let mut a = AllCalls::default();
        let c = ConnId(1);
        for x in 0..3 {
            let s = a.next_seq();
            assert_eq!(s, u64::from(x));
            a.added((c, key(x), s), 10, |_, _, _| true);
        }
        assert_eq!((a.count(), a.bytes()), (3, 30));
        assert_eq!(a.pop_oldest(), Some((c, key(0), 0)));
        a.left(3, 30);
        // Calls answered at once leave entries behind: swept once they
        // outnumber the live ones, so the order stays bounded.
        for _ in 0..5000 {
            let s = a.next_seq();
            a.added((c, key(9), s), 10, |_, _, x| x == s);
            a.left(1, 10);
        }
        assert_eq!((a.count(), a.bytes()), (0, 0));
        // One live call at each sweep: at most 2 * 1 + 1024 entries.
        assert!(a.order.len() <= 1026, "{}", a.order.len());
    }
}
