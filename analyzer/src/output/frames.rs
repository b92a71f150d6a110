//! `rdma-analyzer frames`: every frame's dissection, as text or JSON Lines.
//!
//! The JSON shape is the dissector library's [`rdma_dissectors::view`]
//! (schema version 2): keys follow the specs' field names in snake_case;
//! numbers a double cannot hold exactly are strings (`ts_ns` decimal; VAs,
//! R_Keys, GUIDs `0x…` hex), the others JSON numbers.
//! Text lines give the time as `-t` says: relative (the default, as
//! tshark), UTC, or the delta from the previous frame.

use std::io::{self, Write};

use rdma_dissectors::ib::icrc::IcrcStatus;
use rdma_dissectors::iwarp::ddp::Placement;
use rdma_dissectors::iwarp::frame::{IwarpFpdu, IwarpLayer};
use rdma_dissectors::iwarp::mpa::CrcStatus;
use rdma_dissectors::iwarp::rdmap::Body;
use rdma_dissectors::nfs::CallSummary;
use rdma_dissectors::oncrpc::{MsgBody, RpcMsg};
use rdma_dissectors::rpcrdma::RpcRdmaHeader;
use rdma_dissectors::stack::{self, Dissection};
use rdma_dissectors::view::{CmView, FrameView};

use super::clock::{Clock, FrameTime, TimeFormat};
use super::filter::{Field, Filter, Record, Val};
use super::out::Out;
use crate::engine::{Engine, Finding, Frame};
use crate::pipeline::{End, Flow, Progress, Sink};

/// Writes every frame's dissection as it comes: one line of text or one
/// JSON object per frame (`frames` runs it without an engine).
pub struct Frames<W: Write> {
    out: Out<W>,
    json: bool,
    config: stack::Config,
    time: FrameTime,
    /// Relative and UTC times (its start is the first frame).
    clock: Clock,
    /// The previous frame's time, for deltas.
    previous_ns: Option<u64>,
    filter: Filter,
}

impl<W: Write> Frames<W> {
    /// A sink writing to `out`, dissecting with `config`.
    pub fn new(out: W, json: bool, config: stack::Config, time: FrameTime) -> Self {
        let format = match time {
            FrameTime::Utc => TimeFormat::Utc,
            FrameTime::Relative | FrameTime::Delta => TimeFormat::Relative,
        };
        Frames {
            out: Out::new(out),
            json,
            config,
            time,
            clock: Clock::new(format),
            previous_ns: None,
            filter: Filter::All,
        }
    }

    /// The same sink writing only the frames `filter` keeps.
    #[must_use]
    pub fn with_filter(mut self, filter: Filter) -> Self {
        self.filter = filter;
        self
    }

    /// The frame's time as `-t` asks; `previous_ns` is the frame before it
    /// in the capture (whether or not a filter printed it, as tshark's
    /// `-t d`).
    fn time_of(&self, ts_ns: u64, previous_ns: Option<u64>) -> String {
        match self.time {
            FrameTime::Delta => {
                // Deltas count from the previous frame (the first frame's is
                // 0): one before it in time prints negative, as relative
                // times do.
                let mut c = Clock::new(TimeFormat::Relative);
                c.saw(previous_ns.unwrap_or(ts_ns));
                c.at(Some(ts_ns)).to_string()
            }
            _ => self.clock.at(Some(ts_ns)).to_string(),
        }
    }

    /// The first write that failed, if one did.
    pub fn take_error(&mut self) -> Option<io::Error> {
        self.out.take_error()
    }
}

impl<W: Write> Sink for Frames<W> {
    fn finding(&mut self, _: Finding) -> Flow {
        Flow::Continue
    }

    fn observe(&mut self, _: &Finding) -> Flow {
        Flow::Continue
    }

    fn wants_frames(&self) -> bool {
        true
    }

    fn frame(&mut self, f: &Frame<'_>) -> Flow {
        // Every frame moves the clock, printed or not: relative times count
        // from the capture's first frame, deltas from the frame before.
        self.clock.saw(f.ts_ns);
        let previous = self.previous_ns.replace(f.ts_ns);
        let mut d = Dissection::default();
        f.dissect_into(&self.config, &mut d);
        if !self.filter.is_all() {
            self.filter.saw(f.ts_ns);
            if !self.filter.matches(&FrameRecord { f, d: &d }) {
                return Flow::Continue;
            }
        }
        if self.json {
            self.out
                .json_line(&FrameView::new(f.number, f.ts_ns, f.orig_len, &d))
        } else {
            let at = self.time_of(f.ts_ns, previous);
            self.out
                .text_line(frame_text(f.number, &at, f.orig_len, &d))
        }
    }

    fn end(&mut self, _: Option<&Engine>, _: &Progress, _: &End) {
        let _ = self.out.flush();
    }
}

/// Fields a frame has without the engine (`frames` runs none): no
/// connection, latency, status, severity, kind, bytes or transfer mode.
pub const FRAME_FIELDS: &[Field] = &[
    Field::Frame,
    Field::Time,
    Field::Qpn,
    Field::Peer,
    Field::Xid,
    Field::Proc,
    Field::Rkey,
    Field::Opcode,
];

/// A dissected frame as a filter sees it.
struct FrameRecord<'a, 'b> {
    f: &'a Frame<'b>,
    d: &'a Dissection<'b>,
}

impl Record for FrameRecord<'_, '_> {
    fn get(&self, f: Field, out: &mut Vec<Val>) -> bool {
        let d = self.d;
        match f {
            Field::Frame => out.push(Val::Num(self.f.number)),
            Field::Time => out.push(Val::Num(self.f.ts_ns)),
            Field::Qpn => out.extend(d.bth().map(|b| Val::Num(b.dest_qp.get().into()))),
            Field::Opcode => out.extend(d.bth().map(|b| Val::Text(b.opcode.name().to_string()))),
            Field::Peer => {
                if let Some(ip) = d.ip {
                    out.push(Val::Text(ip.source().to_string()));
                    out.push(Val::Text(ip.destination().to_string()));
                }
            }
            Field::Xid => out.extend(d.rpcrdma().map(|h| Val::Num(h.xid.0.into()))),
            Field::Proc => {
                if let Some(n) = &d.nfs() {
                    let name = n.procedure.unwrap_or("?");
                    out.push(Val::Text(format!("{name}{}", compound_ops(n))));
                }
            }
            Field::Rkey => {
                out.extend(d.reth().map(|r| Val::Num(r.r_key.into())));
                out.extend(d.ieth().map(|i| Val::Num(i.r_key.into())));
            }
            _ => return false,
        }
        true
    }
}

/// An NFSv4 COMPOUND's operations as `(SEQUENCE,PUTFH,READ)`; empty for a
/// call that has none.
fn compound_ops(n: &rdma_dissectors::nfs::CallSummary) -> String {
    if n.ops().is_empty() {
        return String::new();
    }
    let ops: Vec<&str> = n
        .ops()
        .iter()
        .map(|&o| n.op_name(o).unwrap_or("?"))
        .collect();
    format!("({})", ops.join(","))
}

/// The iWARP of a TCP segment: the MPA setup frame, or one summary per
/// FPDU (`DDP T STag .. TO .. len ..`, `Send MSN .. MO ..`, ...).
fn iwarp_text(layer: &IwarpLayer<'_>, s: &mut String) {
    use std::fmt::Write as _;
    let fpdus = match layer {
        IwarpLayer::Setup(setup) => {
            let Some(m) = setup.frame() else { return };
            let _ = write!(
                s,
                " | {} rev {} M={} C={} R={} pd {}",
                m.kind.name(),
                m.revision,
                u8::from(m.markers),
                u8::from(m.crc),
                u8::from(m.reject),
                m.pd_length
            );
            if let Some(e) = m.enhanced {
                let _ = write!(s, " ird {} ord {}", e.ird, e.ord);
            }
            if let Some((_, p)) = m.rpcrdma() {
                if let Some(v) = p.v1() {
                    let _ = write!(
                        s,
                        " | RPC/RDMA private v1 R={} send {} recv {}",
                        u8::from(v.remote_invalidate),
                        v.send_size,
                        v.recv_size
                    );
                }
            }
            return;
        }
        IwarpLayer::Fpdus(f) => f,
        _ => {
            s.push_str(" | iWARP continuation (FPDU begun in an earlier segment)");
            return;
        }
    };
    if !fpdus.crc_known() {
        s.push_str(" | MPA CRC unknown");
    }
    for item in fpdus.iter() {
        match item {
            Ok(f) => {
                fpdu_text(&f, s);
                // Each Send's RPC-over-RDMA after its FPDU: a segment can
                // carry several, and the frame's own slot holds the first.
                if let Some((l, stop)) = stack::iwarp_send_rpcrdma(&f, fpdus) {
                    upper_text(l.header.as_ref(), l.rpc.as_ref(), l.nfs.as_ref(), s);
                    if let Some(e) = stop {
                        let _ = write!(s, " | ERROR {e}");
                    }
                }
            }
            Err(e) => {
                let _ = write!(s, " | FPDU ERROR {e}");
            }
        }
    }
}

fn fpdu_text(f: &IwarpFpdu<'_>, s: &mut String) {
    use std::fmt::Write as _;
    let seg = match &f.segment {
        Ok(seg) => seg,
        Err(e) => {
            let _ = write!(s, " | FPDU len {} ERROR {e}", f.fpdu.ulpdu_length);
            return;
        }
    };
    let last = if seg.ddp.last { " L" } else { "" };
    match (seg.body, seg.ddp.placement) {
        (Body::ReadRequest(r), _) => {
            let _ = write!(
                s,
                " | Read Request sink {:#x}:{:#x} src {:#x}:{:#x} len {}",
                r.sink_stag, r.sink_to, r.source_stag, r.source_to, r.size
            );
        }
        (Body::Terminate(t), _) => {
            let _ = write!(
                s,
                " | Terminate {} type {} code {:#04x} ({})",
                t.layer.name(),
                t.etype,
                t.code,
                t.error_name().unwrap_or("unnamed")
            );
        }
        (Body::Data(d), Placement::Tagged { stag, to }) => {
            let _ = write!(
                s,
                " | {} DDP T STag {stag:#x} TO {to:#x} len {}{last}",
                seg.opcode.name(),
                d.len()
            );
        }
        (Body::Data(d), Placement::Untagged { msn, mo, .. }) => {
            let _ = write!(
                s,
                " | {} MSN {msn} MO {mo} len {}{last}",
                seg.opcode.name(),
                d.len()
            );
            if let Some(stag) = seg.invalidate_stag {
                let _ = write!(s, " inval {stag:#x}");
            }
        }
    }
    if let CrcStatus::Invalid { found, computed } = f.crc {
        let _ = write!(s, " BAD CRC {found:#010x} (expected {computed:#010x})");
    }
}

/// One line of text for a frame.
pub fn frame_text(number: u64, at: &str, orig_len: u32, d: &Dissection<'_>) -> String {
    let mut s = format!("{number:>6} {at} {orig_len:>5}");
    if let Some(ip) = d.ip {
        s.push_str(&format!(" {} > {}", ip.source(), ip.destination()));
    }
    if let Some(b) = d.bth() {
        s.push_str(&format!(
            " | {} qp {:#x} psn {:#x}",
            b.opcode.name(),
            b.dest_qp.get(),
            b.psn.get()
        ));
        if b.ack_req {
            s.push_str(" A");
        }
    }
    if let Some(layer) = &d.iwarp {
        iwarp_text(layer, &mut s);
    }
    if let Some(r) = d.reth() {
        s.push_str(&format!(
            " | RETH va {:#x} rkey {:#x} len {}",
            r.va, r.r_key, r.dma_length
        ));
    }
    if let Some(a) = d.aeth() {
        s.push_str(&format!(" | AETH {} msn {}", a.kind(), a.msn));
    }
    if let Some(i) = d.ieth() {
        s.push_str(&format!(" | IETH rkey {:#x}", i.r_key));
    }
    if let Some(cm) = d.cm() {
        let v = CmView::new(cm);
        s.push_str(&format!(" | CM {}", v.message()));
        if let Some(q) = v.local_qpn() {
            // A snap length may end the message before its QPN, which then
            // reads as 0: say it is not known.
            use rdma_dissectors::ib::cm::{self as ibcm, CmMessage};
            let at = match cm {
                CmMessage::Rep(_) => ibcm::rep::LOCAL_QPN,
                _ => ibcm::req::LOCAL_QPN,
            };
            if d.mad_layers().is_some_and(|m| m.cm_len < at + 3) {
                s.push_str(" qpn unknown (cut)");
            } else {
                s.push_str(&format!(" qpn {q}"));
            }
        }
    }
    if let Some(c) = d.cma() {
        s.push_str(&format!(
            " | CMA {}:{} > {}",
            c.src_addr, c.src_port, c.dst_addr
        ));
    }
    if let Some((_, p)) = d.rpcrdma_cm_private() {
        match p.v1() {
            Some(v) => s.push_str(&format!(
                " | RPC/RDMA private v1 R={} send {} recv {}",
                u8::from(v.remote_invalidate),
                v.send_size,
                v.recv_size
            )),
            None => s.push_str(" | RPC/RDMA private data of an unknown version"),
        }
    }
    // iWARP's FPDUs said their Sends' RPC-over-RDMA each in its place.
    let in_fpdus = matches!(d.iwarp, Some(IwarpLayer::Fpdus(_)));
    if !in_fpdus {
        upper_text(d.rpcrdma(), d.rpc(), d.nfs(), &mut s);
    }
    if let Some(IcrcStatus::Invalid { found, computed }) = d.icrc {
        s.push_str(&format!(
            " | BAD ICRC {found:#010x} (expected {computed:#010x})"
        ));
    }
    // The first Send's decode error was said beside its FPDU.
    if let (Some(e), false) = (d.stop, in_fpdus && d.rpcrdma_layers().is_some()) {
        s.push_str(&format!(" | ERROR {e}"));
    }
    s
}

/// A Send's RPC-over-RDMA header, and the RPC call or reply in it.
fn upper_text(
    h: Option<&RpcRdmaHeader<'_>>,
    rpc: Option<&RpcMsg<'_>>,
    nfs: Option<&CallSummary>,
    s: &mut String,
) {
    use std::fmt::Write as _;
    if let Some(h) = h {
        let _ = write!(
            s,
            " | {} xid {:#010x} credits {}",
            h.proc.name().unwrap_or("?"),
            h.xid.0,
            h.credits
        );
        if let Some(c) = h.chunks() {
            let (r, w, rc) = (c.read_count(), c.write_count(), c.reply_chunk().is_some());
            if r + w > 0 || rc {
                let _ = write!(
                    s,
                    " read {r} write {w} reply {}",
                    if rc { "yes" } else { "no" }
                );
            }
        }
    }
    if let Some(r) = rpc {
        match &r.body {
            MsgBody::Call(c) => {
                let name = nfs.and_then(|n| n.procedure).unwrap_or("?");
                let _ = write!(s, " | RPC call prog {} v{} {name}", c.prog, c.vers);
                if let Some(n) = nfs {
                    s.push_str(&compound_ops(n));
                }
            }
            _ => s.push_str(" | RPC reply"),
        }
    }
}
