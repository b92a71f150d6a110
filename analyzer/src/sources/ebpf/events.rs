//! The tracepoints the analyzer knows, in one table: what each is called on
//! each kernel, how its records decode, what the engine does with them,
//! whether the probes leave it in the kernel, and what stays unknown on a
//! kernel without it.
//!
//! A kernel that renames an event, or adds one, is one row here (and its
//! format files under `ebpf-probes/testdata/`): the engine only ever sees
//! the [`ProbeEvent`] a row's decode fn makes.

use super::decode::{RawRecord, F};
use super::format::FormatSet;
use super::load::Missing;
use crate::engine::kernel::event::Use::{Client, Counted, Server};
use crate::engine::kernel::event::{ChunkType, Completion, ConnectStep, ProbeEvent, SegKind, Use};

/// Tracepoint systems the live mode attaches to, in order (the systems of
/// [`TRACEPOINTS`]; a test keeps the two in step).
pub const SYSTEMS: [&str; 4] = ["rpcrdma", "rdma_cma", "ib_cma", "sunrpc"];

/// A row's decode fn: `None` when the record lacks a field the event
/// cannot do without (it is then counted as [`ProbeEvent::Other`]).
pub type Decode = fn(&RawRecord<'_>) -> Option<ProbeEvent>;

/// Which events a row stands for.
#[derive(Debug, Clone, Copy)]
pub enum Names {
    /// These names, across kernel versions (Linux 5.10 calls
    /// `svcrdma_wc_recv` `svcrdma_wc_receive`).
    Exact(&'static [&'static str]),
    /// Any event whose name passes `test` (`rule` says which, in words):
    /// families the decoder reads alike, new members included.
    Like {
        /// The rule, for people.
        rule: &'static str,
        /// The rule, for the decoder.
        test: fn(&str) -> bool,
    },
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct Tracepoint {
    /// Its tracepoint system (`*`: any).
    pub system: &'static str,
    /// Its names.
    pub names: Names,
    /// How a record of it becomes a [`ProbeEvent`].
    pub decode: Decode,
    /// What the engine uses it for (the decoded event's
    /// [`ProbeEvent::use_`]; a test holds the two equal).
    pub use_: Use,
    /// An event that fires on the normal path of every RPC (or memory
    /// registration, receive, send or chunk segment) and that the engine
    /// has no use for, or whose content another attached event carries:
    /// [`ProbeEvents::Used`](super::ProbeEvents::Used) leaves it in the
    /// kernel, where it costs nothing. Any other unused
    /// event is rare (connections, errors, device changes) or new, and is
    /// attached whole, so that an unknown event is counted, not missed.
    pub per_rpc_unused: bool,
    /// What the kernel view relies on it for: what stays unknown on a
    /// kernel with none of its names (rows saying the same thing of one
    /// system are one need: any of their names will do).
    pub unknown_without: Option<&'static str>,
}

const fn row(
    system: &'static str,
    names: &'static [&'static str],
    decode: Decode,
    use_: Use,
    unknown_without: Option<&'static str>,
) -> Tracepoint {
    Tracepoint {
        system,
        names: Names::Exact(names),
        decode,
        use_,
        per_rpc_unused: false,
        unknown_without,
    }
}

const fn unused(names: &'static [&'static str], decode: Decode) -> Tracepoint {
    Tracepoint {
        system: "rpcrdma",
        names: Names::Exact(names),
        decode,
        use_: Use::Counted,
        per_rpc_unused: true,
        unknown_without: None,
    }
}

const fn like(
    system: &'static str,
    rule: &'static str,
    test: fn(&str) -> bool,
    decode: Decode,
) -> Tracepoint {
    Tracepoint {
        system,
        names: Names::Like { rule, test },
        decode,
        use_: Use::Counted,
        per_rpc_unused: false,
        unknown_without: None,
    }
}

/// Every tracepoint the analyzer knows, in the order a format finds its
/// row: the first that matches.
#[rustfmt::skip]
pub static TRACEPOINTS: &[Tracepoint] = &[
    //  system     names (across kernel versions)                   decode              use      what stays unknown without it
    // The client (rpcrdma), by RPC task.
    row("rpcrdma", &["xprtrdma_marshal"],                           marshal,            Client,  Some("the client's calls (XIDs, how each was sent)")),
    row("rpcrdma", &["xprtrdma_marshal_failed"],                    marshal_failed,     Client,  None),
    row("rpcrdma", &["xprtrdma_chunk_read"],                        chunk_read,         Client,  Some("the client's chunk segments")),
    row("rpcrdma", &["xprtrdma_chunk_write"],                       chunk_write,        Client,  Some("the client's chunk segments")),
    row("rpcrdma", &["xprtrdma_chunk_reply"],                       chunk_reply,        Client,  Some("the client's chunk segments")),
    row("rpcrdma", &["xprtrdma_chunk_wp"],                          chunk_write,        Client,  None),
    row("rpcrdma", &["xprtrdma_post_send"],                         client_post_send,   Client,  Some("when the client sent each call")),
    row("rpcrdma", &["xprtrdma_reply"],                             reply,              Client,  Some("the client's replies and the credits granted")),
    row("rpcrdma", &["xprtrdma_mr_reminv"],                         remote_inv,         Client,  Some("which R_Key the server invalidated remotely, on the client")),
    row("rpcrdma", &["xprtrdma_decode_seg"],                        decode_seg,         Client,  Some("the bytes the server wrote into the client's write and reply chunks")),
    row("rpcrdma", &["xprtrdma_mr_localinv"],                       local_inv,          Client,  None),
    row("rpcrdma", &["xprtrdma_connect"],                           connected,          Counted, None),
    row("rpcrdma", &["xprtrdma_disconnect"],                        disconnected,       Counted, None),
    row("rpcrdma", &["xprtrdma_op_connect"],                        connect_requested,  Counted, None),
    row("rpcrdma", &["xprtrdma_op_close"],                          closed,             Counted, None),
    row("rpcrdma", &["xprtrdma_inline_thresh"],                     inline_thresh,      Counted, None),
    // The server (rpcrdma), by receive completion, then nfsd thread.
    row("rpcrdma", &["svcrdma_wc_recv", "svcrdma_wc_receive"],      recv_completed,     Server,  Some("when each call reached the server")),
    row("rpcrdma", &["svcrdma_decode_rqst"],                        decode_rqst,        Server,  Some("the server's calls (XIDs, credits requested)")),
    row("rpcrdma", &["svcrdma_decode_rseg"],                        decode_rseg,        Server,  Some("the Read chunk segments of the server's calls (their handles; the bytes still show)")),
    row("rpcrdma", &["svcrdma_decode_wseg"],                        decode_wseg,        Server,  Some("the write and reply chunk segments of the server's calls")),
    row("rpcrdma", &["svcrdma_encode_wseg"],                        encode_wseg,        Server,  None),
    row("rpcrdma", &["svcrdma_post_read_chunk"],                    post_read_chunk,    Server,  Some("when the server pulled Read chunks")),
    // Linux 5.10: one event for the Reads and the Writes.
    row("rpcrdma", &["svcrdma_post_chunk"],                         post_chunk,         Server,  Some("when the server pulled Read chunks")),
    row("rpcrdma", &["svcrdma_post_write_chunk"],                   post_write_chunk,   Server,  None),
    row("rpcrdma", &["svcrdma_post_reply_chunk"],                   post_reply_chunk,   Server,  None),
    row("rpcrdma", &["svcrdma_wc_read"],                            read_completed,     Server,  Some("when the server's Reads completed")),
    row("rpcrdma", &["svcrdma_wc_write"],                           write_completed,    Server,  None),
    row("rpcrdma", &["svcrdma_post_send"],                          server_post_send,   Server,  Some("the server's replies and the R_Keys they invalidate")),
    // sunrpc: the only events that name a call's program and procedure,
    // and the RPC layer's own timing of each RPC (the client's queue time,
    // its backlog, which no wire shows; the server's execute time). The
    // system has over a hundred events, most of them for every RPC over TCP
    // too: only these are attached. rpc_stats_latency names the client's
    // call as rpc_request does, so rpc_request stays in the kernel (one
    // event fewer per RPC). Linux 6.12 adds `xprt_id` to rpc_stats_latency;
    // the task already names the transport, so it is not read (nor copied).
    row("sunrpc",  &["rpc_stats_latency"],                          rpc_stats,          Client,  Some("the client's procedure names and RPC layer times (backlog, rtt, execute)")),
    row("sunrpc",  &["svc_process"],                                svc_process,        Server,  Some("the procedure names of the server's calls")),
    // svc_stats_latency is one more event per RPC on the server: attached,
    // the server's probes cost 1.18 µs per RPC on 6.1, past the 1 µs budget
    // (ebpf-probes/README.md). The wire's server time (docs/diagnosis.md)
    // stands in; --all-probe-events attaches it for the kernel's own figure.
    Tracepoint { per_rpc_unused: true, ..row("sunrpc", &["svc_stats_latency"], svc_stats, Server, None) },
    Tracepoint { per_rpc_unused: true, ..row("sunrpc", &["rpc_request"], rpc_request, Client, None) },
    // Per-RPC events the engine has no use for (rpcrdma), left in the
    // kernel. The client: receives, sends, memory registration and
    // invalidation.
    unused(&["xprtrdma_post_recv"],               other),
    unused(&["xprtrdma_post_recvs"],              other),
    unused(&["xprtrdma_wc_receive"],              completed),
    unused(&["xprtrdma_wc_send"],                 completed),
    unused(&["xprtrdma_wc_fastreg"],              completed),
    unused(&["xprtrdma_wc_li"],                   completed),
    unused(&["xprtrdma_wc_li_done"],              completed),
    unused(&["xprtrdma_wc_li_wake"],              completed),
    unused(&["xprtrdma_mr_get"],                  other),
    unused(&["xprtrdma_mr_map"],                  other),
    unused(&["xprtrdma_mr_unmap"],                other),
    unused(&["xprtrdma_mr_fastreg"],              other),
    unused(&["xprtrdma_mr_recycle"],              other),
    unused(&["xprtrdma_post_linv"],               other),
    unused(&["xprtrdma_fixup"],                   other),
    unused(&["xprtrdma_defer_cmp"],               other),
    unused(&["xprtrdma_cb_call"],                 other),
    unused(&["xprtrdma_cb_reply"],                other),
    // The server: receives, sends, DMA mapping, contexts.
    unused(&["svcrdma_post_recv"],                other),
    unused(&["svcrdma_wc_send"],                  completed),
    unused(&["svcrdma_wc_reply"],                 completed),
    unused(&["svcrdma_dma_map_page"],             other),
    unused(&["svcrdma_dma_unmap_page"],           other),
    unused(&["svcrdma_send_pullup"],              other),
    unused(&["svcrdma_cc_release"],               other),
    unused(&["svcrdma_read_finished"],            other),
    // Linux 5.10's server, one per chunk or segment it encodes or sends.
    unused(&["svcrdma_encode_read_chunk"],        other),
    unused(&["svcrdma_encode_rseg"],              other),
    unused(&["svcrdma_encode_write_chunk"],       other),
    unused(&["svcrdma_send_pzr"],                 other),
    unused(&["svcrdma_send_read_chunk"],          other),
    unused(&["svcrdma_send_reply_chunk"],         other),
    unused(&["svcrdma_send_rseg"],                other),
    unused(&["svcrdma_send_write_chunk"],         other),
    unused(&["svcrdma_send_wseg"],                other),
    // Families, by a rule on the name: counted, whole. Then anything else.
    like("*", "*_err*, *flush*, *_error", is_error, error),
    like("*", "svcrdma_wc_*, xprtrdma_wc_*", is_completion, completed),
    like("rdma_cma", "*", any, cm),
    like("ib_cma", "*", any, ib_cm),
    like("*", "*", any, other),
];

/// The row of the event `system:name`: the first that matches.
pub fn row_of(system: &str, name: &str) -> &'static Tracepoint {
    TRACEPOINTS
        .iter()
        .find(|t| (t.system == "*" || t.system == system) && t.matches(name))
        .unwrap_or(&TRACEPOINTS[TRACEPOINTS.len() - 1])
}

impl Tracepoint {
    /// Whether the row stands for the event `name` (of its system).
    pub fn matches(&self, name: &str) -> bool {
        match self.names {
            Names::Exact(names) => names.contains(&name),
            Names::Like { test, .. } => test(name),
        }
    }

    /// The names, when the row lists them.
    pub fn exact(&self) -> &'static [&'static str] {
        match self.names {
            Names::Exact(names) => names,
            Names::Like { .. } => &[],
        }
    }
}

/// Whether live mode may attach to `system:event`: of `sunrpc`, only the
/// events the table names (and of those, [`ProbeEvents::Used`](super::ProbeEvents::Used)
/// leaves the per-RPC ones it does without in the kernel).
pub fn wanted(system: &str, event: &str) -> bool {
    system != "sunrpc"
        || TRACEPOINTS
            .iter()
            .any(|t| t.system == "sunrpc" && t.exact().contains(&event))
}

/// The per-RPC events the probes leave in the kernel.
pub fn per_rpc_unused() -> impl Iterator<Item = &'static str> {
    TRACEPOINTS
        .iter()
        .filter(|t| t.per_rpc_unused)
        .flat_map(|t| t.exact().iter().copied())
}

/// What the kernel view relies on: `(system, names, what stays unknown
/// without them)`, one entry per need, in table order.
pub fn relied_on() -> Vec<(&'static str, Vec<&'static str>, &'static str)> {
    let mut needs: Vec<(&str, Vec<&str>, &str)> = Vec::new();
    for t in TRACEPOINTS {
        let Some(lost) = t.unknown_without else {
            continue;
        };
        match needs.iter_mut().find(|n| n.0 == t.system && n.2 == lost) {
            Some(n) => n.1.extend(t.exact()),
            None => needs.push((t.system, t.exact().to_vec(), lost)),
        }
    }
    needs
}

/// What the kernel view cannot see on a kernel with these `formats`: each
/// need of [`relied_on`] whose system is there but none of whose events is.
pub fn blind_spots(formats: &FormatSet, absent_systems: &[String]) -> Vec<Missing> {
    relied_on()
        .into_iter()
        .filter(|(sys, names, _)| {
            !absent_systems.iter().any(|a| a == sys)
                && !names.iter().any(|n| formats.by_name(sys, n).is_some())
        })
        .map(|(sys, names, lost)| Missing {
            what: format!("{sys}:{}", names.join("|")),
            why: format!("not on this kernel: {lost} stay unknown"),
        })
        .collect()
}

// ------------------------------------------------------------ the families

fn is_error(n: &str) -> bool {
    n.contains("_err") || n.contains("flush") || n.ends_with("_error") || n.contains("qp_error")
}

fn is_completion(n: &str) -> bool {
    n.starts_with("svcrdma_wc_") || n.starts_with("xprtrdma_wc_")
}

fn any(_: &str) -> bool {
    true
}

// ------------------------------------------------------------ decode fns

fn marshal(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    Some(ProbeEvent::Marshal {
        task: r.task()?,
        xid: r.u32(F::Xid)?,
        rtype: ChunkType::from_kernel(r.i64(F::Rtype)?),
        wtype: ChunkType::from_kernel(r.i64(F::Wtype)?),
        hdrlen: r.u32(F::Hdrlen),
        xdrlen: match (r.u32(F::Headlen), r.u32(F::Pagelen), r.u32(F::Taillen)) {
            // Sizes that overflow are not sizes: unknown.
            (Some(a), Some(b), Some(c)) => a.checked_add(b).and_then(|ab| ab.checked_add(c)),
            _ => None,
        },
    })
}

fn marshal_failed(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    Some(ProbeEvent::MarshalFailed {
        task: r.task()?,
        xid: r.u32(F::Xid),
        ret: r.i64(F::Ret),
    })
}

fn client_chunk(r: &RawRecord<'_>, kind: impl FnOnce() -> SegKind) -> Option<ProbeEvent> {
    let (handle, length, offset) = r.seg()?;
    let kind = kind();
    Some(ProbeEvent::ClientChunk {
        task: r.task()?,
        kind,
        handle,
        length,
        offset,
    })
}

fn chunk_read(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    client_chunk(r, || SegKind::Read {
        position: r.u32(F::Pos).unwrap_or(0),
    })
}

fn chunk_write(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    client_chunk(r, || SegKind::Write)
}

fn chunk_reply(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    client_chunk(r, || SegKind::Reply)
}

fn client_post_send(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    Some(ProbeEvent::ClientPostSend {
        task: r.task(),
        cid: r.cid(),
    })
}

fn reply(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    Some(ProbeEvent::Reply {
        task: r.task()?,
        xid: r.u32(F::Xid)?,
        credits: r.u32(F::Credits)?,
    })
}

fn decode_seg(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    let (handle, length, offset) = r.seg()?;
    Some(ProbeEvent::DecodeSeg {
        handle,
        length,
        offset,
    })
}

fn remote_inv(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    Some(ProbeEvent::RemoteInv {
        task: r.task(),
        handle: r.u32(F::Handle)?,
    })
}

fn local_inv(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    Some(ProbeEvent::LocalInv {
        task: r.task(),
        handle: r.u32(F::Handle)?,
    })
}

fn client_connect(r: &RawRecord<'_>, step: ConnectStep) -> Option<ProbeEvent> {
    let peer = match (r.string(F::Addr), r.string(F::Port)) {
        (Some(a), Some(p)) => Some(format!("{a}:{p}")),
        (Some(a), None) => Some(a),
        _ => None,
    };
    Some(ProbeEvent::ClientConnect {
        step,
        peer,
        rc: r.i64(F::Rc),
    })
}

fn connect_requested(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    client_connect(r, ConnectStep::Requested)
}

fn connected(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    client_connect(r, ConnectStep::Connected)
}

fn disconnected(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    client_connect(r, ConnectStep::Disconnected)
}

fn closed(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    client_connect(r, ConnectStep::Closed)
}

fn inline_thresh(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    Some(ProbeEvent::InlineThresh {
        send: r.u32(F::InlineSend),
        recv: r.u32(F::InlineRecv),
    })
}

fn rpc_request(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    Some(ProbeEvent::RpcRequest {
        task: r.task()?,
        version: r.u32(F::Version),
        program: r.string(F::Progname),
        procedure: r.string(F::Procname),
    })
}

fn svc_process(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    Some(ProbeEvent::SvcProcess {
        xid: r.u32(F::Xid)?,
        version: r.u32(F::Vers),
        proc: r.u32(F::Proc),
        service: r.string(F::Service),
        procedure: r.string(F::Procedure),
    })
}

fn rpc_stats(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    Some(ProbeEvent::RpcStats {
        task: r.task()?,
        xid: r.u32(F::Xid)?,
        version: r.u32(F::Version),
        program: r.string(F::Progname),
        procedure: r.string(F::Procname),
        backlog_us: r.u64(F::Backlog),
        rtt_us: r.u64(F::Rtt),
        execute_us: r.u64(F::Execute),
    })
}

fn svc_stats(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    Some(ProbeEvent::SvcStats {
        xid: r.u32(F::Xid)?,
        execute_us: r.u64(F::Execute),
    })
}

fn decode_rqst(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    Some(ProbeEvent::DecodeRqst {
        cid: r.cid()?,
        xid: r.u32(F::Xid)?,
        vers: r.u32(F::Vers)?,
        proc: r.u32(F::Proc)?,
        credits: r.u32(F::Credits)?,
        hdrlen: r.u32(F::Hdrlen),
    })
}

fn server_decode_seg(r: &RawRecord<'_>, kind: impl FnOnce() -> SegKind) -> Option<ProbeEvent> {
    let (handle, length, offset) = r.seg()?;
    let kind = kind();
    Some(ProbeEvent::ServerDecodeSeg {
        cid: r.cid(),
        kind,
        handle,
        length,
        offset,
    })
}

fn decode_rseg(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    server_decode_seg(r, || SegKind::Read {
        position: r.u32(F::Position).unwrap_or(0),
    })
}

fn decode_wseg(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    server_decode_seg(r, || SegKind::Write)
}

fn encode_wseg(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    let (handle, length, offset) = r.seg()?;
    Some(ProbeEvent::EncodeWseg {
        cid: r.cid(),
        handle,
        length,
        offset,
    })
}

fn server_post_send(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    Some(ProbeEvent::ServerPostSend {
        cid: r.cid()?,
        inv_rkey: r.u32(F::InvRkey).filter(|&k| k != 0),
    })
}

fn chunk_posted(r: &RawRecord<'_>, kind: Option<SegKind>) -> Option<ProbeEvent> {
    Some(ProbeEvent::PostChunk {
        kind,
        cid: r.cid()?,
        sqecount: r.u32(F::Sqecount),
    })
}

fn post_read_chunk(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    chunk_posted(r, Some(SegKind::Read { position: 0 }))
}

fn post_write_chunk(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    chunk_posted(r, Some(SegKind::Write))
}

fn post_reply_chunk(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    chunk_posted(r, Some(SegKind::Reply))
}

fn post_chunk(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    chunk_posted(r, None)
}

/// A work completion: an [`ProbeEvent::Error`] when its status says it
/// failed, else `ok` of it.
fn completion(r: &RawRecord<'_>, ok: fn(Completion) -> ProbeEvent) -> Option<ProbeEvent> {
    let status = r.i64(F::Status);
    if status.is_some_and(|s| s != 0) {
        return Some(ProbeEvent::Error { status });
    }
    Some(ok(Completion {
        cid: r.cid()?,
        status,
        bytes: r
            .u64(F::TotalBytes)
            .or_else(|| r.u64(F::Received))
            .or_else(|| r.u64(F::ByteLen)),
    }))
}

fn recv_completed(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    completion(r, ProbeEvent::RecvCompleted)
}

fn read_completed(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    completion(r, ProbeEvent::ReadCompleted)
}

fn write_completed(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    completion(r, ProbeEvent::WriteCompleted)
}

fn completed(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    completion(r, ProbeEvent::Completed)
}

fn error(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    Some(ProbeEvent::Error {
        status: r.i64(F::Status).or_else(|| r.i64(F::Rc)),
    })
}

fn cm(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    Some(ProbeEvent::Cm {
        cm_id: r.u32(F::CmId),
        src: r.sockaddr(F::SrcAddr),
        dst: r.sockaddr(F::DstAddr),
        cm_event: r.u32(F::Event),
        status: r.i64(F::Status),
        qpn: r.u32(F::QpNum),
    })
}

fn ib_cm(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    Some(ProbeEvent::IbCm {
        local_id: r.u32(F::LocalId),
        remote_id: r.u32(F::RemoteId),
        local_qpn: r.u32(F::LocalQpn),
        remote_qpn: r.u32(F::RemoteQpn),
    })
}

fn other(_: &RawRecord<'_>) -> Option<ProbeEvent> {
    Some(ProbeEvent::Other)
}
