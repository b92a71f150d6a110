//! Where anomalies are made: each is stamped with the time of the event
//! that revealed it and with its origin, and counted, when it is created,
//! so no later pass over the output has to find and fix them.

use crate::keys::{ConnId, Origin};
use crate::{Anomaly, Event, Finding, Frame, Kind, State, Transaction};

/// What an anomaly is about, apart from its kind and sentence.
#[derive(Debug, Clone, Default)]
pub(crate) struct About {
    /// Frame numbers (or probe record numbers) involved.
    pub frames: Vec<u64>,
    pub connection: Option<ConnId>,
    pub xid: Option<u32>,
    /// When it was found, if earlier than the event being handled (a call
    /// whose connection went away long before its loss was told).
    pub at: Option<u64>,
}

/// The time of the event being handled: what every finding it reveals is
/// stamped with.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Collector {
    now: Option<u64>,
}

impl Collector {
    /// Starts on `event`; the end of the input has the latest time seen,
    /// `last_ts_ns`.
    #[inline]
    pub fn start(&mut self, event: Event<'_>, last_ts_ns: Option<u64>) {
        self.now = match event {
            Event::Frame(Frame { ts_ns, .. }) | Event::Tick(ts_ns) => Some(ts_ns),
            Event::Probe(p) => Some(p.meta.ts_ns),
            Event::End => last_ts_ns,
        };
    }

    /// A new anomaly of `kind` seen by `origin`, counted in `state` (and in
    /// its connection's count when the wire saw it there).
    pub fn anomaly(
        &self,
        state: &mut State,
        (kind, origin): (Kind, Origin),
        about: About,
        message: String,
    ) -> Finding {
        // A message that began and ended in one frame names it once.
        let mut frames = about.frames;
        frames.dedup();
        *state.anomaly_counts.entry(kind).or_insert(0) += 1;
        // The kernels' connections have ids of their own, never the wire's.
        let wire = origin == Origin::Wire;
        if let Some(c) = about
            .connection
            .filter(|_| wire)
            .and_then(|c| state.connections.get_mut(&c))
        {
            c.anomalies += 1;
        }
        Finding::Anomaly(Box::new(Anomaly {
            kind,
            origin,
            ts_ns: about.at.or(self.now),
            frames,
            connection: about.connection,
            xid: about.xid,
            message,
            repeated: None,
        }))
    }
}

/// Where a part that makes findings of its own puts them: the collector
/// stamps and counts each as it is made, and it goes out in order.
pub(crate) struct Sink<'a> {
    pub out: &'a mut Vec<Finding>,
    pub state: &'a mut State,
    pub collector: Collector,
}

impl Sink<'_> {
    /// A new anomaly of `kind` seen by `origin`, stamped, counted and out.
    pub fn anomaly(&mut self, kind: (Kind, Origin), about: About, message: String) {
        let f = self.collector.anomaly(self.state, kind, about, message);
        self.out.push(f);
    }

    /// A transaction the kernel probes completed, counted and out.
    pub fn probe_transaction(&mut self, t: Transaction) {
        self.state.totals.probe_transactions += 1;
        self.out.push(Finding::Transaction(Box::new(t)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Connection;

    fn frame_at(ts_ns: u64) -> Event<'static> {
        Event::Frame(Frame {
            number: 1,
            ts_ns,
            link: rdma_dissectors::link::LinkType::ETHERNET,
            orig_len: 0,
            data: &[],
            icrc: None,
        })
    }

    fn anomaly(f: &Finding) -> &Anomaly {
        match f {
            Finding::Anomaly(a) => a,
            Finding::Transaction(_) => panic!("not an anomaly: {f:?}"),
        }
    }

    #[test]
    fn an_anomaly_is_stamped_and_counted_when_made() {
        let mut state = State::default();
        state
            .connections
            .insert(ConnId(1), Connection::new(ConnId(1), 0));
        let mut c = Collector::default();
        c.start(frame_at(500), Some(100));
        let about = About {
            frames: vec![7, 7],
            connection: Some(ConnId(1)),
            xid: Some(3),
            at: None,
        };
        let f = c.anomaly(&mut state, (Kind::Nak, Origin::Wire), about, "m".into());
        let a = anomaly(&f);
        assert_eq!((a.ts_ns, a.frames.as_slice()), (Some(500), &[7][..]));
        assert_eq!(state.anomaly_counts.get(&Kind::Nak), Some(&1));
        assert_eq!(state.connections[&ConnId(1)].anomalies, 1);
    }

    #[test]
    fn an_earlier_time_wins_and_the_end_has_the_latest_seen() {
        let mut state = State::default();
        let mut c = Collector::default();
        c.start(Event::End, Some(900));
        let at = About {
            at: Some(40),
            ..About::default()
        };
        let f = c.anomaly(
            &mut state,
            (Kind::CallWithoutReply, Origin::Wire),
            at,
            String::new(),
        );
        assert_eq!(anomaly(&f).ts_ns, Some(40));
        let f = c.anomaly(
            &mut state,
            (Kind::CallWithoutReply, Origin::Wire),
            About::default(),
            String::new(),
        );
        assert_eq!(anomaly(&f).ts_ns, Some(900));
        assert_eq!(state.anomaly_counts.get(&Kind::CallWithoutReply), Some(&2));
    }

    #[test]
    fn a_sinks_findings_are_stamped_and_counted_when_made() {
        let mut state = State::default();
        state
            .connections
            .insert(ConnId(1), Connection::new(ConnId(1), 0));
        let mut collector = Collector::default();
        collector.start(Event::Tick(77), None);
        let mut out = Vec::new();
        let mut sink = Sink {
            out: &mut out,
            state: &mut state,
            collector,
        };
        let about = |at| About {
            connection: Some(ConnId(1)),
            at,
            ..About::default()
        };
        let kind = (Kind::CallWithoutReply, Origin::ServerProbes);
        sink.anomaly(kind, about(None), String::new());
        sink.anomaly(kind, about(Some(5)), String::new());
        let header = crate::CallHeader::Text(String::new());
        let t = Transaction::new(Origin::ServerProbes, ConnId(2), 1, 1, 0, header);
        sink.probe_transaction(t);
        assert_eq!(anomaly(&out[0]).ts_ns, Some(77));
        assert_eq!(anomaly(&out[1]).ts_ns, Some(5));
        assert!(matches!(out[2], Finding::Transaction(_)));
        assert_eq!(state.anomaly_counts.get(&Kind::CallWithoutReply), Some(&2));
        assert_eq!(state.totals.probe_transactions, 1);
        // A kernel's connection id is not the wire's connection 1.
        assert_eq!(state.connections[&ConnId(1)].anomalies, 0);
    }
}
