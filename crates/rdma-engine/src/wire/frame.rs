//! A captured frame's way in: counted, dissected once, its ICRC and
//! congestion marks noted, and handed to the part that follows what it
//! carries (a CM MAD to `conn`, the rest to `rdma`'s queue pairs).

use rdma_dissectors::ib::bth::{Bth, Opcode};
use rdma_dissectors::ib::icrc::IcrcStatus;
use rdma_dissectors::ib::Qpn;
use rdma_dissectors::stack;

use super::reassembly::Prefixes;
use super::state::QpState;
use crate::keys::{Addr, ConnId, QpKey};
use crate::{checks, Engine, Finding, Frame, Kind, Totals};

#[cold]
fn t_cut(t: &mut Totals) {
    t.cut_frames += 1;
}

impl Engine {
    /// One captured frame, from its counters to the part that follows it.
    pub(crate) fn frame(&mut self, f: &Frame<'_>, out: &mut Vec<Finding>) {
        let (number, ts) = (f.number, f.ts_ns);
        let t = &mut self.state.totals;
        t.frames += 1;
        t.bytes += f.data.len() as u64;
        t.first_ts_ns.get_or_insert(ts);
        t.saw(ts);
        // One dissection, built in place: it is large, and returning or
        // moving it would copy it for every frame.
        let mut d = stack::Dissection::default();
        f.dissect_into(&self.config.stack, &mut d);
        self.icrc_verdict(number, &d, out);
        if !self.deferred.is_empty() && !super::transfer::continues_transfer(&d) {
            // Anything else may read or end the transactions they belong to.
            self.flush_deferred();
        }
        if d.ip.is_some_and(|ip| ip.is_fragment())
            && d.udp
                .is_some_and(|u| u.destination_port == self.config.stack.rocev2_port)
        {
            return self.fragmented(number, &d, out);
        }
        let cut_short = self.count_cut(&d);
        let Some(bth) = d.bth() else {
            if d.tcp.is_some() && self.iwarp_frame(number, ts, &d, out) {
                return;
            }
            if d.ip.is_some() {
                self.undecoded(f, &d);
            }
            if let (Some(e), false) = (d.stop, cut_short) {
                self.not_rdma(number, &d, e, out);
            }
            return;
        };
        self.state.totals.rdma_frames += 1;
        if let (Some(e), false) = (d.stop, cut_short) {
            let conn = self.conn_of_dest(&d, bth.dest_qp);
            self.anomaly(
                out,
                Kind::Malformed,
                vec![number],
                conn,
                None,
                format!("{} frame could not be dissected: {e}", bth.opcode.name()),
            );
            return;
        }
        self.congestion(number, ts, &d, &bth);
        if let Some(&cm) = d.cm() {
            self.state.totals.cm_messages += 1;
            self.cm_message(number, ts, &d, cm, out);
            return;
        }
        // A MAD to the GSI QP (QP1, where the CM's go) cut before its CM
        // message: not known which, but a connection between these hosts
        // found from traffic must not say it had no CM exchange.
        if d.cut && bth.dest_qp.get() == 1 {
            if let Some((src, dst)) = Addr::of_frame(&d) {
                self.cut_cm_frame(number, src, dst);
            }
        }
        let Some((src, dst)) = Addr::of_frame(&d) else {
            self.state.totals.unassociated_frames += 1;
            return;
        };
        let dest = QpKey {
            addr: dst,
            qpn: bth.dest_qp.get(),
        };
        self.rc_frame(number, ts, src, dest, &d, out);
    }

    /// Counts the frame's ICRC verdict; a mismatch is an anomaly.
    fn icrc_verdict(&mut self, number: u64, d: &stack::Dissection<'_>, out: &mut Vec<Finding>) {
        let t = &mut self.state.totals;
        match d.icrc {
            Some(IcrcStatus::Valid) => t.icrc_valid += 1,
            Some(IcrcStatus::Invalid { found, computed }) => {
                t.icrc_invalid += 1;
                let conn = d.bth().and_then(|b| self.conn_of_dest(d, b.dest_qp));
                let v = checks::iba::icrc(found, computed);
                self.raise(out, v, vec![number], conn, None);
            }
            Some(_) => t.icrc_unchecked += 1,
            None => {}
        }
    }

    /// Counts a frame a snap length cut, and says whether a layer ran past
    /// the cut: that layer is not there, not malformed.
    fn count_cut(&mut self, d: &stack::Dissection<'_>) -> bool {
        if d.cut {
            t_cut(&mut self.state.totals);
        }
        let cut_short = d.cut && matches!(d.stop, Some(rdma_dissectors::Error::Truncated { .. }));
        if cut_short
            && d.transport.is_none()
            && (d.udp.is_some() || d.grh.is_some() || d.lrh.is_some())
        {
            self.state.totals.headers_cut += 1;
        }
        cut_short
    }

    /// A frame without a BTH that the dissectors stopped in: malformed when
    /// it got as far as UDP to the RoCEv2 port, a GRH or an LRH, but no further.
    #[cold]
    fn not_rdma(
        &mut self,
        number: u64,
        d: &stack::Dissection<'_>,
        e: rdma_dissectors::Error,
        out: &mut Vec<Finding>,
    ) {
        if d.udp
            .is_some_and(|u| u.destination_port == self.config.stack.rocev2_port)
            || d.grh.is_some()
            || d.lrh.is_some()
        {
            self.anomaly(
                out,
                Kind::Malformed,
                vec![number],
                None,
                None,
                format!("frame could not be dissected: {e}"),
            );
        }
    }

    /// Counts the fabric's congestion signals on a frame, on the connection
    /// of its destination QP: for a CE-marked or FECN packet the QP it
    /// congested on its way to, for a CNP or BECN the QP whose sending
    /// caused it (the one told to slow down). A hash lookup only for a
    /// marked frame; no allocation past a connection's first few.
    #[inline]
    fn congestion(&mut self, number: u64, ts: u64, d: &stack::Dissection<'_>, bth: &Bth) {
        let ce =
            d.ip.is_some_and(|ip| ip.ecn() == rdma_dissectors::ip::ECN_CE);
        let cnp = bth.opcode == Opcode::CNP;
        if !(ce || cnp || bth.fecn || bth.becn) {
            return;
        }
        self.state.totals.congestion_frames += 1;
        let Some(conn) = self.conn_of_dest(d, bth.dest_qp) else {
            return;
        };
        if let Some(c) = self.state.connections.get_mut(&conn) {
            c.congestion.note(number, ts, ce, cnp, bth.fecn, bth.becn);
        }
    }

    /// The first fragment of a RoCEv2 packet: reported, not followed (the
    /// rest of the packet is in other frames, and RoCEv2 never fragments).
    #[cold]
    fn fragmented(&mut self, number: u64, d: &stack::Dissection<'_>, out: &mut Vec<Finding>) {
        let conn = d.bth().and_then(|b| self.conn_of_dest(d, b.dest_qp));
        let (src, dst) = d.ip.map_or((String::new(), String::new()), |ip| {
            (ip.source().to_string(), ip.destination().to_string())
        });
        let v = checks::iba::ip_fragment(&src, &dst);
        self.raise(out, v, vec![number], conn, None);
    }

    pub(crate) fn conn_of_dest(&self, d: &stack::Dissection<'_>, qpn: Qpn) -> Option<ConnId> {
        let (_, addr) = Addr::of_frame(d)?;
        self.qps
            .get(&QpKey {
                addr,
                qpn: qpn.get(),
            })?
            .conn
    }

    /// The state of `key`'s QP, made if new. One lookup per packet; the
    /// eviction path is kept out of line so this stays short.
    #[inline]
    pub(crate) fn qp_mut(&mut self, key: &QpKey, out: &mut Vec<Finding>) -> &mut QpState {
        if self.qps.len() >= self.limits.qps {
            self.make_room_for_qp(*key, out);
        }
        self.qps.get_or_default(key)
    }

    /// The state of `key`'s QP, made if new, with the Send prefixes' count
    /// that its message in reassembly is held in.
    #[inline]
    pub(crate) fn qp_and_prefixes(
        &mut self,
        key: &QpKey,
        out: &mut Vec<Finding>,
    ) -> (&mut QpState, &mut Prefixes) {
        if self.qps.len() >= self.limits.qps {
            self.make_room_for_qp(*key, out);
        }
        (self.qps.get_or_default(key), &mut self.conns.prefixes)
    }

    /// At the cap, forgets a QP unless `key` already has its place: the
    /// eviction clock's next QP not seen since it last passed (see
    /// `QpTable::evict`), one owned by no connection first.
    #[cold]
    #[inline(never)]
    fn make_room_for_qp(&mut self, key: QpKey, out: &mut Vec<Finding>) {
        if self.qps.contains_key(&key) {
            return;
        }
        let Some((v, q)) = self.qps.evict() else {
            return;
        };
        self.conns.prefixes.forget(q.send.as_ref());
        self.state.evictions.qps += 1;
        if self.state.evictions.qps.is_power_of_two() {
            self.anomaly(
                out,
                Kind::StateEvicted,
                vec![],
                q.conn,
                None,
                format!(
                    "queue-pair table full ({} entries, from --max-qps and --memory-limit): forgot {v} ({} QPs forgotten so far); raise them",
                    self.limits.qps, self.state.evictions.qps
                ),
            );
        }
    }
}
