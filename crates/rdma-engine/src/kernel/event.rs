//! Kernel probe events, decoded: what `sources::ebpf` turns ring-buffer
//! records into and the engine consumes as [`Event::Probe`](crate::Event::Probe).
//! Plain data, independent of kernel version: the decoder maps each kernel's
//! tracepoint names and layouts onto these, so no kernel event name reaches
//! the engine (the doc comments name the tracepoints only to say where
//! each event comes from).

use std::net::SocketAddr;

use ebpf_common::KprobeId;

/// Which list a segment belongs to (kernel-side view of RFC 8166 §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SegKind {
    /// Read list (with its position).
    Read {
        /// XDR position of the read chunk.
        position: u32,
    },
    /// Write list.
    Write,
    /// Reply chunk.
    Reply,
}

/// How the client marshalled one direction of a call (`enum rpcrdma_chunktype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChunkType {
    /// `rpcrdma_noch`: inline.
    Inline,
    /// `rpcrdma_noch_pullup`: inline, pulled up into one buffer.
    Pullup,
    /// `rpcrdma_noch_mapped`: inline, mapped pages.
    Mapped,
    /// `rpcrdma_readch`: read list.
    ReadList,
    /// `rpcrdma_areadch`: position-zero read chunk (Long Call).
    LongCall,
    /// `rpcrdma_writech`: write list.
    WriteList,
    /// `rpcrdma_replych`: reply chunk (Long Reply).
    ReplyChunk,
    /// A value this analyzer does not know.
    Unknown(i64),
}

impl ChunkType {
    /// The kernel's name for it (`enum rpcrdma_chunktype`).
    pub fn name(self) -> std::borrow::Cow<'static, str> {
        match self {
            ChunkType::Inline => "rpcrdma_noch".into(),
            ChunkType::Pullup => "rpcrdma_noch_pullup".into(),
            ChunkType::Mapped => "rpcrdma_noch_mapped".into(),
            ChunkType::ReadList => "rpcrdma_readch".into(),
            ChunkType::LongCall => "rpcrdma_areadch".into(),
            ChunkType::WriteList => "rpcrdma_writech".into(),
            ChunkType::ReplyChunk => "rpcrdma_replych".into(),
            ChunkType::Unknown(v) => format!("unknown chunk type {v}").into(),
        }
    }

    /// From the kernel's enum value (Linux 5.x–6.x numbering).
    pub fn from_kernel(v: i64) -> ChunkType {
        match v {
            0 => ChunkType::Inline,
            1 => ChunkType::Pullup,
            2 => ChunkType::Mapped,
            3 => ChunkType::ReadList,
            4 => ChunkType::LongCall,
            5 => ChunkType::WriteList,
            6 => ChunkType::ReplyChunk,
            v => ChunkType::Unknown(v),
        }
    }
}

/// An RPC task as the client's tracepoints name it (`task:ID@CLIENT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskKey {
    /// `task_id`.
    pub task_id: u32,
    /// `client_id` (the RPC client; one per mount and transport).
    pub client_id: u32,
}

/// A completion id (`cq.id` + `cid`) as the server's tracepoints name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cid {
    /// Completion queue id (one per connection and direction).
    pub cq_id: u32,
    /// Completion id within the CQ.
    pub cid: i32,
}

/// A work completion, as the completion tracepoints report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// Completion.
    pub cid: Cid,
    /// `ib_wc_status` (0 success), when traced.
    pub status: Option<i64>,
    /// Bytes, when traced.
    pub bytes: Option<u64>,
}

/// A step of the client transport's connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectStep {
    /// The RPC layer asked for a connection (`xprtrdma_op_connect`).
    Requested,
    /// A connection attempt ended, with its return code (`xprtrdma_connect`).
    Connected,
    /// The connection went down (`xprtrdma_disconnect`).
    Disconnected,
    /// The RPC layer closed the transport (`xprtrdma_op_close`).
    Closed,
}

/// What a probe saw, typed. Fields are `Option` where a kernel may lack them.
#[derive(Debug, Clone, PartialEq)]
pub enum ProbeEvent {
    /// Client `xprtrdma_marshal`: a call was encoded.
    Marshal {
        /// Task.
        task: TaskKey,
        /// RPC XID (on-wire value).
        xid: u32,
        /// How the call travels.
        rtype: ChunkType,
        /// How the reply is to travel.
        wtype: ChunkType,
        /// RPC-over-RDMA header bytes.
        hdrlen: Option<u32>,
        /// RPC message bytes (head + page + tail).
        xdrlen: Option<u32>,
    },
    /// Client `xprtrdma_marshal_failed`: encoding a call failed (out of
    /// MRs, -EAGAIN, is retried): the segments registered for this attempt
    /// were released and are not the call's.
    MarshalFailed {
        /// Task.
        task: TaskKey,
        /// RPC XID.
        xid: Option<u32>,
        /// The error.
        ret: Option<i64>,
    },
    /// Client `xprtrdma_chunk_read/write/reply/wp`: a segment advertised.
    ClientChunk {
        /// Task.
        task: TaskKey,
        /// List.
        kind: SegKind,
        /// R_Key.
        handle: u32,
        /// Length.
        length: u32,
        /// Offset (VA).
        offset: u64,
    },
    /// Client `xprtrdma_post_send`.
    ClientPostSend {
        /// Task (absent for a backchannel or a keepalive).
        task: Option<TaskKey>,
        /// Send completion id.
        cid: Option<Cid>,
    },
    /// Client `xprtrdma_reply`: a reply matched its call.
    Reply {
        /// Task.
        task: TaskKey,
        /// XID.
        xid: u32,
        /// Credits the server granted.
        credits: u32,
    },
    /// Client `xprtrdma_decode_seg`: a segment of the reply's write list or reply chunk.
    DecodeSeg {
        /// R_Key.
        handle: u32,
        /// Length the server wrote.
        length: u32,
        /// Offset.
        offset: u64,
    },
    /// Client `xprtrdma_mr_reminv`: the server's Send With Invalidate invalidated this MR.
    RemoteInv {
        /// Task (Linux 5.10's event has none: the call is found by R_Key).
        task: Option<TaskKey>,
        /// R_Key invalidated.
        handle: u32,
    },
    /// Client `xprtrdma_mr_localinv`: the client invalidates an MR itself.
    LocalInv {
        /// Task (none on Linux 5.10).
        task: Option<TaskKey>,
        /// R_Key.
        handle: u32,
    },
    /// Client `xprtrdma_op_connect`, `xprtrdma_connect`, `xprtrdma_disconnect`,
    /// `xprtrdma_op_close`: the transport's connection.
    ClientConnect {
        /// Which step of the connection.
        step: ConnectStep,
        /// Peer (`addr` and `port` strings).
        peer: Option<String>,
        /// Return code.
        rc: Option<i64>,
    },
    /// Client `xprtrdma_inline_thresh`: negotiated inline sizes.
    InlineThresh {
        /// Negotiated send / receive.
        send: Option<u32>,
        /// Receive.
        recv: Option<u32>,
    },
    /// Server `svcrdma_decode_rqst`: a call's transport header decoded.
    DecodeRqst {
        /// Receive completion.
        cid: Cid,
        /// XID.
        xid: u32,
        /// rdma_vers.
        vers: u32,
        /// rdma_proc.
        proc: u32,
        /// Credits requested.
        credits: u32,
        /// Header bytes.
        hdrlen: Option<u32>,
    },
    /// Server `svcrdma_decode_rseg/wseg`: a segment of the call's chunk lists.
    ServerDecodeSeg {
        /// Receive completion (none on Linux 5.10: the nfsd thread decoding
        /// the call is what ties the segment to it).
        cid: Option<Cid>,
        /// List.
        kind: SegKind,
        /// R_Key.
        handle: u32,
        /// Length.
        length: u32,
        /// Offset.
        offset: u64,
    },
    /// Server `svcrdma_encode_wseg`: a write segment of the reply, as filled.
    EncodeWseg {
        /// Send completion (none on Linux 5.10).
        cid: Option<Cid>,
        /// R_Key.
        handle: u32,
        /// Bytes written.
        length: u32,
        /// Offset.
        offset: u64,
    },
    /// Server `svcrdma_post_send`: the reply posted, with the R_Key it invalidates.
    ServerPostSend {
        /// Send completion.
        cid: Cid,
        /// R_Key of Send With Invalidate (None: plain Send).
        inv_rkey: Option<u32>,
    },
    /// Server `svcrdma_post_{read,write,reply}_chunk` (Linux 5.10: one
    /// `svcrdma_post_chunk` for all): RDMA Reads or Writes posted.
    PostChunk {
        /// Read, Write or Reply; none when the event does not say.
        kind: Option<SegKind>,
        /// The chunk context's completion.
        cid: Cid,
        /// Work requests posted.
        sqecount: Option<u32>,
    },
    /// Server `svcrdma_wc_recv` (Linux 5.10: `svcrdma_wc_receive`): a call
    /// arrived.
    RecvCompleted(Completion),
    /// Server `svcrdma_wc_read`: the RDMA Reads pulling a Read chunk completed.
    ReadCompleted(Completion),
    /// Server `svcrdma_wc_write`: the RDMA Writes of a reply's chunks completed.
    WriteCompleted(Completion),
    /// Any other successful work completion (a Send, the client's
    /// Receives, memory registration): counted, not followed.
    Completed(Completion),
    /// `rdma_cma` events with addresses (`cm_event_handler`, `cm_send_req`, ...).
    Cm {
        /// `cm.id`.
        cm_id: Option<u32>,
        /// Source address.
        src: Option<SocketAddr>,
        /// Destination address.
        dst: Option<SocketAddr>,
        /// `rdma_cm_event_type` (for `cm_event_handler`).
        cm_event: Option<u32>,
        /// Event status.
        status: Option<i64>,
        /// QP number, when the event carries it.
        qpn: Option<u32>,
    },
    /// `ib_cma` events (`icm_send_req`, ...): CM communication ids.
    IbCm {
        /// Local comm id.
        local_id: Option<u32>,
        /// Remote comm id.
        remote_id: Option<u32>,
        /// Local QPN, when carried.
        local_qpn: Option<u32>,
        /// Remote QPN, when carried.
        remote_qpn: Option<u32>,
    },
    /// `sunrpc:rpc_request`: the client starts an RPC; the only client event
    /// that names the program and procedure (the transport's events carry
    /// numbers only). It comes before the task's `xprtrdma_marshal`, and for
    /// every RPC of the host, over TCP too.
    RpcRequest {
        /// Task.
        task: TaskKey,
        /// Program version (`cl_vers`).
        version: Option<u32>,
        /// The client's name for the program (`nfs`, `nfsacl`, `lockd`, `mount`).
        program: Option<String>,
        /// The client's name for the procedure (`READ`; for NFSv4 the
        /// client's name for the COMPOUND: `READ`, `OPEN`, `SEQUENCE`).
        procedure: Option<String>,
    },
    /// `sunrpc:svc_process`: the server dispatches a call to its program.
    SvcProcess {
        /// RPC XID.
        xid: u32,
        /// Program version.
        version: Option<u32>,
        /// Procedure number.
        proc: Option<u32>,
        /// The server's name for the program (`nfsd`, `nfsacl`, `lockd`).
        service: Option<String>,
        /// Procedure name (`READ`, `COMPOUND`); older kernels lack it.
        procedure: Option<String>,
    },
    /// `sunrpc:rpc_stats_latency`: the client's RPC layer times a task
    /// as it ends, its reply decoded (for every RPC of the host, over TCP
    /// too), and names it as `rpc_request` does. Times in µs, as the
    /// kernel reports them.
    RpcStats {
        /// Task.
        task: TaskKey,
        /// RPC XID.
        xid: u32,
        /// Program version.
        version: Option<u32>,
        /// The client's name for the program.
        program: Option<String>,
        /// The client's name for the procedure.
        procedure: Option<String>,
        /// Task start to the call's transmission.
        backlog_us: Option<u64>,
        /// Transmission to the reply.
        rtt_us: Option<u64>,
        /// Task start to its end.
        execute_us: Option<u64>,
    },
    /// `sunrpc:svc_stats_latency`: the server's thread hands its reply
    /// to the transport (just before the reply's Send is posted).
    SvcStats {
        /// RPC XID.
        xid: u32,
        /// The thread taking the call to now, µs.
        execute_us: Option<u64>,
    },
    /// Kprobe: the CM private data passed to `rdma_connect_locked` or `rdma_accept`.
    PrivateData {
        /// Which call.
        which: KprobeId,
        /// The bytes (RFC 8797: `f6ab0e18 vers flags send recv`).
        bytes: Vec<u8>,
    },
    /// An error event (`*_err`, `*flush*`, failed completions, ...).
    Error {
        /// Status or rc, when carried.
        status: Option<i64>,
    },
    /// Any other event of the attached systems: counted (by the decoder,
    /// under its kernel name), not interpreted.
    Other,
}

/// Which side of the correlation consumes an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// The client side's correlation (by RPC task).
    Client,
    /// The server side's correlation (by receive completion, then thread).
    Server,
    /// Neither: the event is only counted (connections, CM, errors, and
    /// whatever this analyzer does not know).
    Counted,
}

impl ProbeEvent {
    /// Who consumes it; [`Correlator::handle`](super::Correlator) dispatches by this.
    pub fn use_(&self) -> Use {
        match self {
            ProbeEvent::ClientChunk { .. }
            | ProbeEvent::Marshal { .. }
            | ProbeEvent::MarshalFailed { .. }
            | ProbeEvent::ClientPostSend { .. }
            | ProbeEvent::Reply { .. }
            | ProbeEvent::RemoteInv { .. }
            | ProbeEvent::LocalInv { .. }
            | ProbeEvent::DecodeSeg { .. }
            | ProbeEvent::RpcRequest { .. }
            | ProbeEvent::RpcStats { .. } => Use::Client,
            ProbeEvent::RecvCompleted(_)
            | ProbeEvent::ReadCompleted(_)
            | ProbeEvent::WriteCompleted(_)
            | ProbeEvent::ServerDecodeSeg { .. }
            | ProbeEvent::DecodeRqst { .. }
            | ProbeEvent::PostChunk { .. }
            | ProbeEvent::EncodeWseg { .. }
            | ProbeEvent::ServerPostSend { .. }
            | ProbeEvent::SvcProcess { .. }
            | ProbeEvent::SvcStats { .. } => Use::Server,
            ProbeEvent::PrivateData { .. }
            | ProbeEvent::ClientConnect { .. }
            | ProbeEvent::InlineThresh { .. }
            | ProbeEvent::Completed(_)
            | ProbeEvent::Error { .. }
            | ProbeEvent::Cm { .. }
            | ProbeEvent::IbCm { .. }
            | ProbeEvent::Other => Use::Counted,
        }
    }

    /// The XID the event names directly, if any.
    pub fn xid(&self) -> Option<u32> {
        match self {
            ProbeEvent::Marshal { xid, .. }
            | ProbeEvent::Reply { xid, .. }
            | ProbeEvent::DecodeRqst { xid, .. }
            | ProbeEvent::SvcProcess { xid, .. }
            | ProbeEvent::RpcStats { xid, .. }
            | ProbeEvent::SvcStats { xid, .. } => Some(*xid),
            _ => None,
        }
    }
}

/// Where and when an event happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeMeta {
    /// 1-based record sequence number (stands for the frame number).
    pub seq: u64,
    /// Time, ns since the epoch (the probe's monotonic clock shifted by the
    /// offset measured when the probes started).
    pub ts_ns: u64,
    /// CPU.
    pub cpu: u32,
    /// Thread id.
    pub tid: u32,
}

/// A decoded record.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// Where and when.
    pub meta: ProbeMeta,
    /// What.
    pub event: ProbeEvent,
}
