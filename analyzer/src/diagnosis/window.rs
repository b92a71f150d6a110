//! The diagnosis over a sliding window of the capture clock (`live
//! --diagnosis-window`): the causes named over the last few minutes, so
//! that a cause that is gone stops being named and an alert on it clears.
//!
//! Bounded memory: the window is cut into [`BUCKETS`] intervals, each a
//! [`Diagnosis`] of the findings that came in it (counters, a fixed
//! histogram, capped examples: bounded whatever the traffic) and, for the
//! rules that judge the engine's state, a snapshot of the few cumulative
//! counters they read (the connections at their credit limit or marked
//! congested, the RDMA frames and PSN gaps). The window's causes are the
//! sum of its buckets, set against the engine's state less the snapshot
//! taken when the window's oldest bucket began. So it holds
//! O(buckets × causes) plus O(connections) per bucket for the connections
//! that have been at their credit limit or congested: never O(transactions).
//!
//! Time is the capture's (frame timestamps), never the wall clock: a
//! replayed file rolls its window exactly as live traffic would.

use std::collections::{BTreeMap, VecDeque};

use super::{Cause, Diagnosis};
use crate::engine::{ConnId, Finding, State};

/// Intervals a window is cut into: it covers its width to within one of them.
pub const BUCKETS: u64 = 10;

/// The cumulative counters of one connection the state rules read.
#[derive(Debug, Clone, Copy, Default)]
struct ConnBase {
    at_limit_ns: u64,
    ecn_ce: u64,
    cnps: u64,
    fecn: u64,
    becn: u64,
}

/// The engine's cumulative counters when a bucket began.
#[derive(Debug, Clone, Default)]
struct Base {
    rdma_frames: u64,
    psn_gaps: u64,
    /// Only connections with a non-zero counter: an absent one had none.
    conns: BTreeMap<ConnId, ConnBase>,
}

impl Base {
    fn of(state: &State) -> Self {
        let conns = state
            .connections
            .values()
            .filter(|c| c.at_limit_ns > 0 || c.congestion.marks() > 0)
            .map(|c| {
                let g = &c.congestion;
                let base = ConnBase {
                    at_limit_ns: c.at_limit_ns,
                    ecn_ce: g.ecn_ce,
                    cnps: g.cnps,
                    fecn: g.fecn,
                    becn: g.becn,
                };
                (c.id, base)
            })
            .collect();
        Base {
            rdma_frames: state.totals.rdma_frames,
            psn_gaps: state.totals.psn_gaps,
            conns,
        }
    }
}

/// One interval of the window.
#[derive(Debug, Clone)]
struct Bucket {
    /// Its start on the capture clock (ns since the epoch); `None` until
    /// the first timestamp is seen.
    start_ns: Option<u64>,
    diag: Diagnosis,
    /// The engine's counters near its start (taken at the first look at
    /// the engine after it began).
    base: Option<Base>,
}

impl Bucket {
    fn new(start_ns: Option<u64>) -> Self {
        Bucket {
            start_ns,
            diag: Diagnosis::default(),
            base: None,
        }
    }
}

/// The diagnosis over the last `width` of the capture clock.
#[derive(Debug, Clone)]
pub struct Window {
    width_ns: u64,
    bucket_ns: u64,
    buckets: VecDeque<Bucket>,
    /// The latest timestamp seen.
    now_ns: Option<u64>,
    /// The client kernel's counters over the window, when a sampler gives
    /// them (`live`): the causes only the kernel sees are judged on them.
    kernel: Option<super::KernelView>,
}

impl Window {
    /// A window `width_ns` wide (at least one ns per bucket).
    pub fn new(width_ns: u64) -> Self {
        let width_ns = width_ns.max(BUCKETS);
        Window {
            width_ns,
            bucket_ns: width_ns / BUCKETS,
            buckets: VecDeque::new(),
            now_ns: None,
            kernel: None,
        }
    }

    /// The window's width, ns.
    pub fn width_ns(&self) -> u64 {
        self.width_ns
    }

    /// Where the window begins and ends on the capture clock (ns since the
    /// epoch; `None` before the first timestamp).
    pub fn span_ns(&self) -> Option<(u64, u64)> {
        let from = self.buckets.front()?.start_ns?;
        Some((from, self.now_ns?))
    }

    /// The start of the interval the clock is in (ns since the epoch;
    /// `None` before the first timestamp): it changes as the window moves on.
    pub fn interval_ns(&self) -> Option<u64> {
        self.buckets.back()?.start_ns
    }

    /// Takes one finding, in the interval of the latest time seen: findings
    /// come when they are known (a reply, the end of a call that got none),
    /// and that is when they belong to the window.
    pub fn add(&mut self, f: &Finding) {
        let ts = match f {
            Finding::Transaction(t) => Some(t.reply_ts_ns.unwrap_or(t.call_ts_ns)),
            Finding::Anomaly(a) => a.ts_ns,
        };
        if let Some(ts) = ts {
            self.advance(ts);
        }
        if self.buckets.is_empty() {
            self.buckets.push_back(Bucket::new(None));
        }
        if let Some(b) = self.buckets.back_mut() {
            b.diag.add(f);
        }
    }

    /// Moves the clock to `ts` (never back), opening a new interval when it
    /// crosses one's end and dropping those that fell out of the window.
    pub fn advance(&mut self, ts: u64) {
        if self.now_ns.is_some_and(|n| ts <= n) {
            return;
        }
        self.now_ns = Some(ts);
        // Aligned on the clock, so the same capture always cuts the same way.
        let start = ts - ts % self.bucket_ns;
        match self.buckets.back_mut() {
            Some(b) if b.start_ns.is_none() => b.start_ns = Some(start),
            Some(b) if b.start_ns.is_some_and(|s| s >= start) => {}
            _ => self.buckets.push_back(Bucket::new(Some(start))),
        }
        let from = ts.saturating_sub(self.width_ns);
        while self.buckets.len() > 1
            && self
                .buckets
                .front()
                .and_then(|b| b.start_ns)
                .is_some_and(|s| s + self.bucket_ns <= from)
        {
            self.buckets.pop_front();
        }
    }

    /// Looks at the engine: its clock moves the window on when no finding
    /// does (a quiet link still ages its causes out), and the intervals
    /// that began since the last look take their snapshot of its counters.
    pub fn observe(&mut self, state: &State) {
        if let Some(ts) = state.totals.last_ts_ns {
            self.advance(ts);
        }
        if self.buckets.iter().any(|b| b.base.is_none()) {
            let base = Base::of(state);
            for b in self.buckets.iter_mut().filter(|b| b.base.is_none()) {
                b.base = Some(base.clone());
            }
        }
    }

    /// Takes the client kernel's counters over the window (the caller
    /// picks the readings that bound it: see [`Window::span_ns`]).
    pub fn set_kernel(&mut self, view: super::KernelView) {
        self.kernel = Some(view);
    }

    /// The causes over the window, largest impact first, judged against
    /// `state` (the engine now) less its counters when the window began.
    pub fn causes(&self, state: &State) -> Vec<Cause> {
        let mut d = Diagnosis::default();
        for b in &self.buckets {
            d.merge(&b.diag);
        }
        if let Some(k) = &self.kernel {
            d.set_kernel(k.clone());
        }
        let from = self.buckets.front().and_then(|b| b.start_ns);
        let base = self.buckets.iter().find_map(|b| b.base.as_ref());
        d.causes(&windowed(state, &d, base, from))
    }

    /// Intervals held, and the entries of their keyed tables and capped
    /// lists: what the window's memory grows with.
    pub fn held(&self) -> (usize, usize) {
        let entries = self
            .buckets
            .iter()
            .map(|b| b.diag.entries() + b.base.as_ref().map_or(0, |s| s.conns.len()))
            .sum();
        (self.buckets.len(), entries)
    }
}

/// `state` as seen from inside the window: the cumulative counters less
/// their value when it began, the connections' lives cut at its start, and
/// only the connections active in it (or with calls it saw unanswered).
fn windowed(state: &State, d: &Diagnosis, base: Option<&Base>, from: Option<u64>) -> State {
    let none = Base::default();
    let base = base.unwrap_or(&none);
    let from = from.unwrap_or(0);
    let mut totals = state.totals.clone();
    totals.rdma_frames = totals.rdma_frames.saturating_sub(base.rdma_frames);
    totals.psn_gaps = totals.psn_gaps.saturating_sub(base.psn_gaps);
    let connections = state
        .connections
        .values()
        .filter(|c| c.last_ts_ns >= from || d.unanswered.contains_key(&c.id))
        .map(|c| {
            let b = base.conns.get(&c.id).copied().unwrap_or_default();
            let mut c = c.clone();
            c.at_limit_ns = c.at_limit_ns.saturating_sub(b.at_limit_ns);
            c.first_ts_ns = c.first_ts_ns.max(from).min(c.last_ts_ns);
            let g = &mut c.congestion;
            g.ecn_ce = g.ecn_ce.saturating_sub(b.ecn_ce);
            g.cnps = g.cnps.saturating_sub(b.cnps);
            g.fecn = g.fecn.saturating_sub(b.fecn);
            g.becn = g.becn.saturating_sub(b.becn);
            (c.id, c)
        })
        .collect();
    State {
        totals,
        connections,
        anomaly_counts: BTreeMap::new(),
        evictions: state.evictions,
    }
}

#[cfg(test)]
mod tests;
