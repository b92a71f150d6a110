//! Live mode with probes: the wire's and each kernel's view of one XID
//! joined into one transaction.
//!
//! ```text
//!  wire transaction ───┐                               ┌─► one Transaction, origin = the wire's
//!  client kernel's ────┼─► held by XID for a window ───┤    (else the first to come), the others
//!  server kernel's ────┘   (engine time, bounded)      └─►  in `views`, gaps filled from them
//! ```
//!
//! The sides see the same call at nearly the same time, but not in an order
//! anyone can promise, so each XID is held for a window of the live
//! source's ticks before it goes out with whatever views arrived. It waits
//! longer while a kernel still holds its answered call, or while the
//! stream of its missing view (the capture, or the probes) has not come
//! as far as the XID's own stamp: an analyzer behind its inputs reads one
//! of them seconds late (`Stream`, bounded). A second view from the same
//! side (a retransmitted or reused XID) sends the held one out first. At
//! most `max_held` XIDs are held; past that the oldest go out early.

use std::collections::VecDeque;

use rdma_dissectors::rpcrdma::Xid;

use super::keys::{CallKey, Map};
use super::model::Transaction;
use super::{Finding, Origin};

/// Bytes of a transaction waiting for its other views.
pub(crate) const JOIN_BYTES: usize = std::mem::size_of::<Transaction>() + 512;

/// How the views are joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergeConfig {
    /// How long an XID waits for its other views, ns of tick time, before
    /// it is looked at (and again after each further wait).
    pub window_ns: u64,
    /// XIDs held at once at most.
    pub max_held: usize,
}

impl Default for MergeConfig {
    fn default() -> Self {
        MergeConfig {
            window_ns: 1_000_000_000,
            max_held: 65_536,
        }
    }
}

/// A stream settles an XID once its own stamps are this far past the
/// XID's: its view of the call (the wire's reply, the kernel's reply
/// record) would have come. The two stamp one reply at most 23 ms apart
/// in the lab, but on iWARP the wire's view of a reply behind a lost TCP
/// segment waits for its retransmission (the siw lab's 96 writers start
/// with 91 of them; with 250 ms here 33 of 1034 XIDs still went out
/// split). Only a view whose other never comes waits this long.
const SETTLE_NS: u64 = 2_000_000_000;
/// A stream with nothing for this long (of ticks) has nothing waiting
/// either: the live source turns to each input every pump. Not less: as
/// the lab's 96 writers started, the guest's capture thread delivered
/// nothing for over a second while its frames waited in the kernel (55 of
/// 1033 XIDs went out split with 1 s).
const IDLE_NS: u64 = 3_000_000_000;
/// The longest an XID waits for a stream that lags (ticks).
const MAX_WAIT_NS: u64 = 10_000_000_000;

/// How far one input (the capture, or the probes) has come.
#[derive(Debug, Default, Clone, Copy)]
struct Stream {
    /// Its latest stamp; 0 while it has sent nothing.
    stamp_ns: u64,
    /// The tick time its latest item came at.
    at_ns: u64,
}

impl Stream {
    /// Whether its view of a call stamped `ts_ns` may still be on its way:
    /// it runs, its stamps have not passed the call's, and it is not idle.
    fn behind(&self, ts_ns: u64, now_ns: u64) -> bool {
        self.stamp_ns != 0
            && self.stamp_ns < ts_ns.saturating_add(SETTLE_NS)
            && now_ns.saturating_sub(self.at_ns) < IDLE_NS
    }
}

struct Held {
    /// Engine time its current wait began (first held, or last looked at).
    since_ns: u64,
    /// Engine time it was first held (`since_ns` moves when it waits again).
    first_ns: u64,
    /// The first view's reply (else call) stamp.
    ts_ns: u64,
    /// The findings' boxes, kept: a transaction is several hundred bytes,
    /// moved in and out of here whole otherwise.
    #[allow(clippy::vec_box)]
    views: Vec<Box<Transaction>>,
}

/// The transactions waiting for their other views.
pub(super) struct Merger {
    config: MergeConfig,
    held: Map<CallKey, Held>,
    /// XIDs in the order they were first held, with that time: the front
    /// is the next to go out. An entry whose XID went out early is stale.
    order: VecDeque<(u64, CallKey)>,
    /// The latest engine time seen.
    now_ns: u64,
    /// The capture's progress and the probes': an XID one of them has not
    /// reached yet waits for it (an analyzer behind its inputs takes one
    /// of them seconds late).
    wire: Stream,
    probes: Stream,
}

impl Merger {
    pub(super) fn new(config: MergeConfig) -> Self {
        Merger {
            config,
            held: Map::default(),
            order: VecDeque::new(),
            now_ns: 0,
            wire: Stream::default(),
            probes: Stream::default(),
        }
    }

    /// An item of the capture (`wire`) or of the probes came, stamped `ts_ns`.
    pub(super) fn saw(&mut self, wire: bool, ts_ns: u64) {
        let s = if wire {
            &mut self.wire
        } else {
            &mut self.probes
        };
        s.stamp_ns = s.stamp_ns.max(ts_ns);
        s.at_ns = self.now_ns;
    }

    /// Whether `h` lacks the view of a stream that has not reached it yet,
    /// and has not waited for it `MAX_WAIT_NS`.
    fn lagged(&self, h: &Held) -> bool {
        if h.first_ns.saturating_add(MAX_WAIT_NS) <= self.now_ns {
            return false;
        }
        let has_wire = h.views.iter().any(|v| v.origin == Origin::Wire);
        let has_probes = h.views.iter().any(|v| v.origin != Origin::Wire);
        (!has_wire && self.wire.behind(h.ts_ns, self.now_ns))
            || (!has_probes && self.probes.behind(h.ts_ns, self.now_ns))
    }

    /// Bytes the held transactions cost, as the budget counts them.
    pub(super) fn bytes(&self) -> usize {
        self.held.len() * JOIN_BYTES
    }

    /// Engine time passes.
    pub(super) fn advance(&mut self, ts_ns: u64) {
        self.now_ns = self.now_ns.max(ts_ns);
    }

    /// Takes a view of a transaction; what must go out goes to `out`.
    pub(super) fn add(&mut self, t: Box<Transaction>, out: &mut Vec<Finding>) {
        let key = CallKey {
            backchannel: t.backchannel,
            xid: Xid(t.xid),
        };
        let since_ns = self.now_ns;
        match self.held.get_mut(&key) {
            Some(h) if !h.views.iter().any(|v| v.origin == t.origin) => {
                h.views.push(t);
                return;
            }
            Some(_) => {
                // The same side saw this XID again: what is held goes out first.
                if let Some(h) = self.held.remove(&key) {
                    out.push(Finding::Transaction(join(h.views)));
                }
            }
            None => {}
        }
        let ts_ns = t.reply_ts_ns.unwrap_or(t.call_ts_ns);
        self.held.insert(
            key,
            Held {
                since_ns,
                first_ns: since_ns,
                ts_ns,
                views: vec![t],
            },
        );
        self.order.push_back((since_ns, key));
        while self.held.len() > self.config.max_held {
            let Some((t0, k)) = self.order.pop_front() else {
                break;
            };
            self.release(t0, k, out);
        }
    }

    /// Sends out every XID held longer than the window, but for those
    /// `awaited` says a view of is still on its way (a kernel holding the
    /// answered call for its task's end), or whose missing view's stream
    /// has not reached them yet: they wait another window. The kernel's
    /// wait is bounded, and so is the wait for a stream.
    pub(super) fn expire(&mut self, out: &mut Vec<Finding>, awaited: impl Fn(CallKey) -> bool) {
        // Those that wait again join the queue after this pass: with a
        // window of 0 they would otherwise come round again at once, for
        // as long as the kernel holds their call.
        let mut again = Vec::new();
        while let Some(&(t0, k)) = self.order.front() {
            if t0.saturating_add(self.config.window_ns) > self.now_ns {
                break;
            }
            self.order.pop_front();
            let now = self.now_ns;
            let wait = self
                .held
                .get(&k)
                .is_some_and(|h| h.since_ns == t0 && (awaited(k) || self.lagged(h)));
            match self.held.get_mut(&k) {
                Some(h) if wait => {
                    h.since_ns = now;
                    again.push((now, k));
                }
                _ => self.release(t0, k, out),
            }
        }
        self.order.extend(again);
    }

    /// Sends out everything held (the end of the run).
    pub(super) fn drain(&mut self, out: &mut Vec<Finding>) {
        while let Some((t0, k)) = self.order.pop_front() {
            self.release(t0, k, out);
        }
    }

    /// Sends out `k` if it is still the one held since `t0` (a stale order
    /// entry names an XID that went out and was held again since).
    fn release(&mut self, t0: u64, k: CallKey, out: &mut Vec<Finding>) {
        if self.held.get(&k).is_some_and(|h| h.since_ns == t0) {
            if let Some(h) = self.held.remove(&k) {
                out.push(Finding::Transaction(join(h.views)));
            }
        }
    }
}

/// One transaction of several views: the wire's (else the first) is the
/// base; what it could not see, the kernels' fill in; each other view is
/// kept in `views`.
#[allow(clippy::vec_box)]
fn join(mut views: Vec<Box<Transaction>>) -> Box<Transaction> {
    let base = views
        .iter()
        .position(|v| v.origin == Origin::Wire)
        .unwrap_or(0);
    let mut t = views.swap_remove(base);
    views.sort_by_key(|v| v.origin);
    for v in &views {
        // The client's kernel knows the grant, the server's the request;
        // either knows the R_Key it invalidated.
        if t.credits_granted.is_none() {
            t.credits_granted = v.credits_granted;
        }
        if t.credits_requested.is_none() {
            t.credits_requested = v.credits_requested;
        }
        if t.remote_invalidated_rkey.is_none() {
            t.remote_invalidated_rkey = v.remote_invalidated_rkey;
        }
        if t.procedure.is_none() {
            t.program = t.program.or(v.program);
            t.program_name = t.program_name.or(v.program_name);
            t.version = t.version.or(v.version);
            t.procedure.clone_from(&v.procedure);
            t.proc = t.proc.or(v.proc);
        }
    }
    t.views = views.into_iter().map(|v| *v).collect();
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::CallHeader;
    use crate::ConnId;

    fn txn(origin: Origin, xid: u32) -> Box<Transaction> {
        Box::new(Transaction::new(
            origin,
            ConnId(1),
            xid,
            1,
            0,
            CallHeader::Text(String::new()),
        ))
    }

    fn out_xids(out: &[Finding]) -> Vec<(u32, Vec<Origin>)> {
        out.iter()
            .filter_map(|f| match f {
                Finding::Transaction(t) => Some((t.xid, t.sources().collect())),
                Finding::Anomaly(_) => None,
            })
            .collect()
    }

    #[test]
    fn the_views_of_one_xid_become_one_transaction_with_the_wire_as_base() {
        let mut m = Merger::new(MergeConfig::default());
        let mut out = Vec::new();
        let mut client = txn(Origin::ClientProbes, 7);
        client.credits_granted = Some(64);
        let mut server = txn(Origin::ServerProbes, 7);
        server.credits_requested = Some(128);
        m.advance(10);
        m.add(client, &mut out);
        m.add(server, &mut out);
        m.add(txn(Origin::Wire, 7), &mut out);
        m.add(txn(Origin::Wire, 8), &mut out);
        assert!(out.is_empty(), "held for the window");
        m.advance(10 + 999_999_999);
        m.expire(&mut out, |_| false);
        assert!(out.is_empty());
        m.advance(10 + 1_000_000_000);
        m.expire(&mut out, |_| false);
        assert_eq!(
            out_xids(&out),
            vec![
                (
                    7,
                    vec![Origin::Wire, Origin::ClientProbes, Origin::ServerProbes]
                ),
                (8, vec![Origin::Wire])
            ]
        );
        let Finding::Transaction(t) = &out[0] else {
            panic!("a transaction")
        };
        assert_eq!(
            (t.credits_granted, t.credits_requested),
            (Some(64), Some(128))
        );
    }

    /// The wire's view of an XID whose client kernel still holds the
    /// answered call (for its task's end) waits another window, and goes
    /// with the kernel's view once that comes; others go on time.
    #[test]
    fn an_xid_a_kernel_still_holds_waits_for_its_view() {
        let mut m = Merger::new(MergeConfig::default());
        let mut out = Vec::new();
        m.add(txn(Origin::Wire, 7), &mut out);
        m.add(txn(Origin::Wire, 8), &mut out);
        let awaited = |k: CallKey| k.xid.0 == 7;
        m.advance(1_000_000_000);
        m.expire(&mut out, awaited);
        assert_eq!(out_xids(&out), vec![(8, vec![Origin::Wire])]);
        out.clear();
        m.advance(1_700_000_000);
        m.expire(&mut out, awaited);
        m.add(txn(Origin::ClientProbes, 7), &mut out);
        assert!(out.is_empty());
        m.advance(2_000_000_000);
        m.expire(&mut out, |_| false);
        assert_eq!(
            out_xids(&out),
            vec![(7, vec![Origin::Wire, Origin::ClientProbes])]
        );
        assert_eq!(m.bytes(), 0);
    }

    /// With a window of 0, an XID the kernel still holds waits for the
    /// next pass: one pass looks at it once and returns.
    #[test]
    fn a_zero_window_with_an_awaited_xid_returns() {
        let mut m = Merger::new(MergeConfig {
            window_ns: 0,
            max_held: 8,
        });
        let mut out = Vec::new();
        m.add(txn(Origin::Wire, 7), &mut out);
        m.add(txn(Origin::Wire, 8), &mut out);
        m.advance(5);
        m.expire(&mut out, |k: CallKey| k.xid.0 == 7);
        assert_eq!(out_xids(&out), vec![(8, vec![Origin::Wire])]);
        out.clear();
        m.advance(6);
        m.expire(&mut out, |_| false);
        assert_eq!(out_xids(&out), vec![(7, vec![Origin::Wire])]);
    }

    /// The lab's siw parallel run: the analyzer took the frames seconds
    /// after the probe records, and 847 of 965 XIDs went out twice, a
    /// probe view and then a wire view. The probe view now waits while
    /// the capture's stamps have not reached it; a capture that never
    /// does (or goes quiet) lets it go, bounded.
    #[test]
    fn a_view_waits_for_a_stream_that_has_not_reached_it_bounded() {
        const S: u64 = 1_000_000_000;
        let t = 100 * S;
        let probe_view = |xid| {
            let mut v = txn(Origin::ClientProbes, xid);
            v.reply_ts_ns = Some(t);
            v
        };
        // The capture 3 s behind, catching up a second per second.
        let mut m = Merger::new(MergeConfig::default());
        let mut out = Vec::new();
        m.advance(S);
        m.saw(false, t + 10_000_000);
        m.add(probe_view(7), &mut out);
        for i in 1..=3 {
            m.advance(S + i * S);
            m.saw(true, t - 3 * S + i * S - 1);
            m.expire(&mut out, |_| false);
            assert!(out.is_empty(), "held while the capture is behind ({i} s)");
        }
        let mut wire = txn(Origin::Wire, 7);
        wire.reply_ts_ns = Some(t - 1_000_000);
        m.add(wire, &mut out);
        m.advance(6 * S);
        m.saw(true, t + S);
        m.expire(&mut out, |_| false);
        assert_eq!(
            out_xids(&out),
            vec![(7, vec![Origin::Wire, Origin::ClientProbes])]
        );
        // A capture that stays behind: out after MAX_WAIT_NS, alone.
        let mut m = Merger::new(MergeConfig::default());
        let mut out = Vec::new();
        m.advance(S);
        m.add(probe_view(8), &mut out);
        let mut now = S;
        while out.is_empty() {
            now += S / 10;
            m.advance(now);
            m.saw(true, t - 60 * S);
            m.expire(&mut out, |_| false);
            assert!(now <= S + MAX_WAIT_NS + S, "still held at {now}");
        }
        assert!(now >= S + MAX_WAIT_NS);
        // A capture that goes quiet has nothing on its way: out once idle.
        let mut m = Merger::new(MergeConfig::default());
        let mut out = Vec::new();
        m.advance(S);
        m.saw(true, t - 60 * S);
        m.add(probe_view(9), &mut out);
        m.advance(S + IDLE_NS - 1);
        m.expire(&mut out, |_| false);
        assert!(out.is_empty(), "the capture may still deliver");
        // Looked at again a window after it last was.
        m.advance(S + IDLE_NS - 1 + MergeConfig::default().window_ns);
        m.expire(&mut out, |_| false);
        assert_eq!(out_xids(&out), vec![(9, vec![Origin::ClientProbes])]);
    }

    /// A wire view waits for probes that lag the same way, and goes alone
    /// once their stamps are `SETTLE_NS` past its own without a view of
    /// it (an XID the kernels never saw).
    #[test]
    fn a_wire_view_waits_for_lagging_probes_until_they_pass_it() {
        const S: u64 = 1_000_000_000;
        let t = 100 * S;
        let mut m = Merger::new(MergeConfig::default());
        let mut out = Vec::new();
        m.advance(S);
        m.saw(false, t - 5 * S);
        let mut wire = txn(Origin::Wire, 7);
        wire.reply_ts_ns = Some(t);
        m.add(wire, &mut out);
        m.advance(2 * S);
        m.saw(false, t + SETTLE_NS - 1);
        m.expire(&mut out, |_| false);
        assert!(out.is_empty(), "the probes have not passed it by SETTLE_NS");
        m.advance(3 * S);
        m.saw(false, t + SETTLE_NS);
        m.expire(&mut out, |_| false);
        assert_eq!(out_xids(&out), vec![(7, vec![Origin::Wire])]);
    }

    #[test]
    fn a_second_view_from_the_same_side_sends_the_first_out_and_stays_bounded() {
        let mut m = Merger::new(MergeConfig {
            window_ns: 1_000,
            max_held: 2,
        });
        let mut out = Vec::new();
        m.add(txn(Origin::Wire, 1), &mut out);
        m.add(txn(Origin::Wire, 1), &mut out);
        assert_eq!(out_xids(&out), vec![(1, vec![Origin::Wire])]);
        m.add(txn(Origin::Wire, 2), &mut out);
        m.add(txn(Origin::Wire, 3), &mut out);
        assert_eq!(out.len(), 2, "over max_held the oldest goes out");
        m.drain(&mut out);
        assert_eq!(
            out_xids(&out).iter().map(|x| x.0).collect::<Vec<_>>(),
            vec![1, 1, 2, 3]
        );
    }
}
