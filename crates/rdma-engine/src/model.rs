//! The engine's output model: what a front end reads of a connection and
//! of a transaction. Plain data, with the few rules that keep it consistent
//! (a capped ladder, a thinned credit series); the words it is shown in are
//! the output layer's (`analyzer/src/output/describe.rs`).

use rdma_dissectors::rpcrdma::Segment;
use rdma_dissectors::rpcrdma_cm::{CmPrivateData, Negotiated, RpcRdmaCmPrivate};

use super::kernel::event::{ChunkType, SegKind};
use super::keys::{ConnId, Origin, QpKey};
use super::nfsio::{FileHandle, NfsIo};
use super::Kind;

/// How a call or a reply travelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Transfer {
    /// The whole message in one Send.
    Inline,
    /// Call with read chunks (DDP of call data by RDMA Read).
    ReadChunks,
    /// Call in a position-zero read chunk (Long Call), RDMA_NOMSG.
    LongCall,
    /// Reply with data moved into write chunks by RDMA Write.
    WriteChunks,
    /// Reply in the reply chunk (Long Reply), RDMA_NOMSG.
    ReplyChunk,
    /// RDMA_ERROR instead of a reply.
    Error,
    /// Not seen (no reply).
    None,
    /// Not known: the capture cut the header that says (a snap length).
    Unknown,
}

impl Transfer {
    /// Stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Transfer::Inline => "inline",
            Transfer::ReadChunks => "read_chunks",
            Transfer::LongCall => "long_call",
            Transfer::WriteChunks => "write_chunks",
            Transfer::ReplyChunk => "reply_chunk",
            Transfer::Error => "error",
            Transfer::None => "none",
            Transfer::Unknown => "unknown",
        }
    }
}

/// Which list a segment was advertised in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChunkKind {
    /// Read list (the responder RDMA Reads it).
    Read,
    /// Write list (the responder RDMA Writes into it).
    Write,
    /// Reply chunk.
    Reply,
}

/// One advertised segment and what happened to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentUse {
    /// Which list.
    pub kind: ChunkKind,
    /// Chunk index within its list (write list); 0 otherwise.
    pub chunk: u32,
    /// Read chunk position (read list only).
    pub position: Option<u32>,
    /// STag / R_Key.
    pub handle: u32,
    /// Advertised length.
    pub length: u32,
    /// Advertised offset (VA).
    pub offset: u64,
    /// Bytes moved by RDMA Read or Write into or out of it.
    pub bytes_moved: u64,
    /// Length the responder reported in its reply's write list or reply chunk.
    pub reported_length: Option<u32>,
    /// Frames of the RDMA operations that moved it (first ones, capped).
    pub frames: Vec<u64>,
    /// Whether the reply's Send With Invalidate named this handle.
    pub remotely_invalidated: bool,
}

impl SegmentUse {
    /// A segment as the call advertised it, before anything moved: the one
    /// way the wire and the kernel side make one.
    pub(super) fn advertised(
        kind: ChunkKind,
        chunk: u32,
        position: Option<u32>,
        s: Segment,
    ) -> Self {
        SegmentUse {
            kind,
            chunk,
            position,
            handle: s.handle,
            length: s.length,
            offset: s.offset,
            bytes_moved: 0,
            reported_length: None,
            frames: Vec::new(),
            remotely_invalidated: false,
        }
    }
}

/// One step of the ladder diagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LadderStep {
    /// Frame number.
    pub frame: u64,
    /// Nanoseconds since the call (its first transmission, for an operation
    /// sent again on a new connection).
    pub offset_ns: u64,
    /// True when the requester (client) sent it.
    pub from_client: bool,
    /// What it was; shown as e.g. `RDMA READ request rkey 0x1234 va 0x... len 4096`.
    pub what: StepWhat,
}

/// What a ladder step was. Kept as numbers and put into words only when
/// shown (TUI, JSON), so that following a transaction formats nothing.
/// Exhaustive on purpose: the output layer words every variant, and a new
/// one should fail to build there rather than fall into a wildcard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepWhat {
    /// The call's Send (its last packet).
    CallSend {
        /// Bytes of the whole Send.
        bytes: usize,
        /// R_Key of a Send With Invalidate.
        invalidate: Option<u32>,
    },
    /// The reply's Send.
    ReplySend {
        /// Bytes of the whole Send.
        bytes: usize,
        /// R_Key of a Send With Invalidate.
        invalidate: Option<u32>,
    },
    /// The operation sent again on a new connection, the one it waited on
    /// torn down (RFC 8166 4.5.5): the steps before are the earlier
    /// transmission's.
    SentAgain {
        /// The connection the earlier transmission waited on.
        from: ConnId,
        /// The connection it was sent again on.
        on: ConnId,
    },
    /// The first packet of an RDMA WRITE into one of the call's segments.
    RdmaWrite {
        /// R_Key from the RETH.
        rkey: u32,
        /// Virtual address from the RETH.
        va: u64,
        /// DMA length from the RETH.
        len: u32,
    },
    /// An RDMA READ request for one of the call's segments.
    RdmaReadRequest {
        /// R_Key from the RETH.
        rkey: u32,
        /// Virtual address from the RETH.
        va: u64,
        /// DMA length from the RETH.
        len: u32,
    },
    /// The last response to an RDMA READ.
    RdmaReadResponseComplete {
        /// R_Key the read named.
        rkey: u32,
    },
    /// Client `xprtrdma_marshal`: the call was encoded.
    Marshal {
        /// RPC XID.
        xid: u32,
        /// How the call travels.
        rtype: ChunkType,
        /// How the reply is to travel.
        wtype: ChunkType,
        /// Segments advertised.
        segments: usize,
    },
    /// `xprtrdma_post_send` or `svcrdma_post_send`: the Send was posted.
    PostSend {
        /// R_Key of a Send With Invalidate (the server's reply).
        invalidate: Option<u32>,
    },
    /// Client `xprtrdma_reply`: the reply matched its call.
    Reply {
        /// Credits the server granted.
        credits: u32,
    },
    /// Client `xprtrdma_mr_reminv`: the server's Send With Invalidate
    /// invalidated one of the call's memory regions.
    RemoteInvalidation {
        /// R_Key invalidated.
        rkey: u32,
    },
    /// Client `xprtrdma_mr_localinv`: the client invalidated a memory region itself.
    LocalInvalidation {
        /// R_Key invalidated.
        rkey: u32,
    },
    /// Server `svcrdma_decode_rqst`: the call's transport header was decoded.
    DecodeRqst {
        /// RPC XID.
        xid: u32,
        /// rdma_vers.
        vers: u32,
        /// rdma_proc.
        proc: u32,
        /// Credits requested.
        credits: u32,
    },
    /// Server `svcrdma_post_{read,write,reply}_chunk`: RDMA Reads or Writes posted.
    PostChunk {
        /// Read list, write list or reply chunk.
        kind: SegKind,
        /// Work requests posted, when traced.
        work_requests: Option<u32>,
    },
    /// Server `svcrdma_wc_read` / `svcrdma_wc_write`: the RDMA Reads or
    /// Writes of a chunk completed.
    ChunkDone {
        /// Reads (true) or Writes.
        read: bool,
        /// Bytes, when traced.
        bytes: Option<u64>,
    },
}

/// The call's RPC-over-RDMA header, shown in words. A wire call keeps the
/// header's bytes and decodes them again when shown, so that following a
/// call writes out none of its chunk lists.
///
/// Exhaustive for the same reason as [`StepWhat`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallHeader {
    /// The transport header as it came off the wire (fixed part and chunk lists).
    Wire(Box<[u8]>),
    /// A description in words (the kernel probes' view).
    Text(String),
}

/// Time spent in each phase of a transaction (see the round-trips draft).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Phases {
    /// Call received to the responder's first RDMA operation (or to the reply).
    pub until_first_rdma_ns: Option<u64>,
    /// First RDMA Read request to last Read response.
    pub read_ns: Option<u64>,
    /// First to last RDMA Write.
    pub write_ns: Option<u64>,
    /// Last RDMA operation to the reply.
    pub reply_after_rdma_ns: Option<u64>,
}

/// What the kernel's RPC layer measured of one RPC (`sunrpc` statistics
/// tracepoints), µs: each `None` when the view has no kernel probes, the
/// kernel lacks the event, or it fired after the view let the call go.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelTimes {
    /// The client's task start to its call's transmission
    /// (`rpc_stats_latency` backlog): queued for a slot, a credit or the
    /// connection, before the wire saw anything.
    pub backlog_us: Option<u64>,
    /// The call's transmission to its reply's arrival, as the client's
    /// RPC layer timed it (`rpc_stats_latency` rtt).
    pub rtt_us: Option<u64>,
    /// The client's task start to its end, reply decoded
    /// (`rpc_stats_latency` execute).
    pub execute_us: Option<u64>,
    /// The server's thread taking the call to its reply being handed to the
    /// transport (`svc_stats_latency` execute).
    pub server_execute_us: Option<u64>,
}

/// A completed (or abandoned) RPC transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct Transaction {
    /// Who saw it. Probe transactions number their "frames" by probe record.
    /// (In JSON, `live` says who saw a line in `sources`.)
    pub origin: Origin,
    /// Connection.
    pub connection: ConnId,
    /// RPC XID.
    pub xid: u32,
    /// Whether the call went server to client (NFSv4.1 backchannel).
    pub backchannel: bool,
    /// Frame of the call Send (its last packet).
    pub call_frame: u64,
    /// Time of the call (ns since the epoch).
    pub call_ts_ns: u64,
    /// Frame of the reply Send.
    pub reply_frame: Option<u64>,
    /// Time of the reply.
    pub reply_ts_ns: Option<u64>,
    /// RPC program number (None for a Long Call whose RPC header was not seen).
    pub program: Option<u32>,
    /// Program name (nfs, mount, nlm, ...).
    pub program_name: Option<&'static str>,
    /// Program version.
    pub version: Option<u32>,
    /// NFSv4 minor version, from the COMPOUND's `minorversion` (0, 1, 2):
    /// NFSv4.0, 4.1 and 4.2 calls differ (sessions, new operations), so
    /// the output keeps them apart. `None` for other programs and
    /// versions (a CB_COMPOUND's is not kept), and when the capture cut
    /// the call before it.
    pub minorversion: Option<u32>,
    /// Procedure name (NFSv4 COMPOUND lists its operations).
    pub procedure: Option<String>,
    /// Procedure number.
    pub proc: Option<u32>,
    /// How the call travelled.
    pub call_transfer: Transfer,
    /// How the reply travelled.
    pub reply_transfer: Transfer,
    /// Bytes of the call Send.
    pub call_len: u32,
    /// Bytes of the reply Send.
    pub reply_len: Option<u32>,
    /// Call to reply, µs: this transmission's time on the wire.
    pub latency_us: Option<f64>,
    /// Times the client sent this operation: 1, or more when it sent the
    /// call again on a new connection after the one it was waiting on was
    /// torn down (same XID, same client address; RFC 8166 4.5.5).
    pub transmissions: u32,
    /// Frame of the operation's first transmission (`call_frame` when it was sent once).
    pub first_call_frame: u64,
    /// Time of the operation's first transmission (ns since the epoch).
    pub first_call_ts_ns: u64,
    /// Connections the earlier transmissions were sent on, oldest first
    /// (empty when it was sent once).
    pub earlier_connections: Vec<ConnId>,
    /// First transmission to the reply that completed the operation, µs:
    /// the latency the application saw (equal to `latency_us` when it was sent once).
    pub app_latency_us: Option<f64>,
    /// Credits the call requested (`None` where the view cannot see them:
    /// the client's kernel probes do not carry them).
    pub credits_requested: Option<u32>,
    /// Credits the reply granted.
    pub credits_granted: Option<u32>,
    /// Calls outstanding on the connection when this one was sent (itself included).
    pub in_flight_at_call: u32,
    /// Advertised segments and their use.
    pub chunks: Vec<SegmentUse>,
    /// R_Key the reply invalidated (Send With Invalidate).
    pub remote_invalidated_rkey: Option<u32>,
    /// Internode round trips (1 inline; +1 for RDMA Read; +1 for RDMA Write).
    pub round_trips: u8,
    /// Responder interrupts (1, +1 per RDMA phase it waited for).
    pub responder_interrupts: u8,
    /// Measured phases.
    pub phases: Phases,
    /// RPC reply status (accept_stat, or denied).
    pub reply_status: Option<String>,
    /// NFS status of the reply, by name (`NFS3_OK`, `NFS3ERR_JUKEBOX`,
    /// `NFS4ERR_DELAY`, ...; `nfsstat4 N` for a code no RFC names): the
    /// `nfsstat3` of an NFSv3 result, the status of an NFSv4 COMPOUND.
    /// `None` when the reply carries none (NULL, other programs), came in
    /// a reply chunk, or was not seen.
    pub nfs_status: Option<String>,
    /// The NFSv4 operation that failed (the first result whose status is
    /// not NFS4_OK); `None` when the COMPOUND succeeded, for NFSv3 (the
    /// procedure is the operation), or when the walk could not reach it.
    pub nfs_failed_op: Option<String>,
    /// The file handle the NFS call names: an NFSv3 call's first argument;
    /// for an NFSv4 COMPOUND the current filehandle (set by PUTFH) when its
    /// READ/WRITE/COMMIT is evaluated, or, with no such op, its first
    /// PUTFH's. `None` when the call carries none or it was not seen.
    pub nfs_fh: Option<FileHandle>,
    /// The CRC-32 of `nfs_fh`: the hash Wireshark shows for the handle
    /// (`nfs.fh.hash`), its short name in the text output.
    pub nfs_fh_hash: Option<u32>,
    /// The byte range of an NFS READ, WRITE or COMMIT and what the reply
    /// said of the data; `None` for other calls.
    pub nfs_io: Option<NfsIo>,
    /// This call retries one the server answered NFS3ERR_JUKEBOX or
    /// NFS4ERR_DELAY: that call's XID (same client, procedure, file handle
    /// and byte range, sent within 30 s of the error reply).
    pub retry_of_xid: Option<u32>,
    /// The connection the retried call was answered on.
    pub retry_of_connection: Option<ConnId>,
    /// The error reply to this retry's call, µs: the time the client waited.
    pub retry_wait_us: Option<f64>,
    /// A congestion mark (ECN CE, CNP, FECN, BECN) was seen on its
    /// connection while it was outstanding, between its call and its reply.
    pub congested: bool,
    /// A packet on its connection was sent again (an RC retransmission) or
    /// NAKed as out of sequence while it was outstanding: RC delivers in
    /// order, so everything behind the lost packet on the QP waited for it.
    pub loss_delayed: bool,
    /// Anomalies that concern this transaction.
    pub anomalies: Vec<Kind>,
    /// The ladder diagram, in time order (capped at the first steps).
    pub ladder: Vec<LadderStep>,
    /// Ladder steps left out by the cap.
    pub ladder_omitted: u32,
    /// The decoded RPC-over-RDMA header of the call (shown in words).
    pub call_header: CallHeader,
    /// Write chunks the call offered (`None`: its chunk lists were not
    /// seen, as when the capture cut them, or the kernel's view).
    pub write_chunks: Option<u32>,
    /// Of those, chunks with no segments (RFC 8166 3.4.6 "empty").
    pub empty_write_chunks: Option<u32>,
    /// Of those, chunks the reply left unused (every segment length 0, or
    /// nothing written); `None` when either header's chunk lists were not seen.
    pub unused_write_chunks: Option<u32>,
    /// The capture cut the call's or the reply's RPC-over-RDMA header (a
    /// snap length): what it would have said is `None` or `unknown` here.
    pub cut: bool,
    /// What the kernel's RPC layer measured of it (the probes' views).
    pub kernel_times: KernelTimes,
    /// The other views of this XID joined into this one (live mode with
    /// probes): each kernel's, when this is the wire's (see `Config::merge`).
    /// (In JSON, `live` writes them under `probes`.)
    pub views: Vec<Transaction>,
}

impl Transaction {
    /// Who saw this transaction: its own origin, then those of the views
    /// joined into it.
    pub fn sources(&self) -> impl Iterator<Item = Origin> + '_ {
        std::iter::once(self.origin).chain(self.views.iter().map(|v| v.origin))
    }

    /// `NFS READ`, `NFSv4.1 COMPOUND(...)`, or `?` when not known. An
    /// NFSv4 call names its minor version so that 4.0, 4.1 and 4.2 calls,
    /// which behave differently (sessions, new operations), land in
    /// separate rows of every table keyed by this label.
    pub fn procedure_label(&self) -> String {
        match (&self.program_name, &self.procedure) {
            (Some(p), Some(q)) => match (self.version, self.minorversion) {
                (Some(v), Some(m)) => format!("{p}v{v}.{m} {q}"),
                _ => format!("{p} {q}"),
            },
            (None, Some(q)) => q.clone(),
            _ => match (self.program, self.proc) {
                (Some(p), Some(n)) => format!("prog {p} proc {n}"),
                _ => "?".to_string(),
            },
        }
    }

    /// Bytes moved through chunks.
    pub fn bytes_moved(&self) -> u64 {
        self.chunks.iter().map(|c| c.bytes_moved).sum()
    }

    /// Bytes moved through chunks, `None` when a snap length cut the chunk
    /// lists: the RDMA operations are seen but not which segments they
    /// filled, so a sum would undercount (0 for a cut READ that moved 1 MiB).
    pub fn bytes_moved_known(&self) -> Option<u64> {
        (!self.cut).then(|| self.bytes_moved())
    }

    /// Round trips, `None` when a snap length cut a header: how the call or
    /// reply travelled is then not known, and a count from the RDMA
    /// operations alone would be off by one either way.
    pub fn round_trips_known(&self) -> Option<u8> {
        (!self.cut).then_some(self.round_trips)
    }

    /// A call as it was sent, with nothing known of its reply: what is not
    /// given here is empty, but one round trip and one responder interrupt
    /// (an inline call's).
    pub(super) fn new(
        origin: Origin,
        connection: ConnId,
        xid: u32,
        call_frame: u64,
        call_ts_ns: u64,
        call_header: CallHeader,
    ) -> Self {
        Transaction {
            origin,
            connection,
            xid,
            backchannel: false,
            call_frame,
            call_ts_ns,
            reply_frame: None,
            reply_ts_ns: None,
            program: None,
            program_name: None,
            version: None,
            minorversion: None,
            procedure: None,
            proc: None,
            call_transfer: Transfer::Inline,
            reply_transfer: Transfer::None,
            call_len: 0,
            reply_len: None,
            latency_us: None,
            transmissions: 1,
            first_call_frame: call_frame,
            first_call_ts_ns: call_ts_ns,
            earlier_connections: Vec::new(),
            app_latency_us: None,
            credits_requested: None,
            credits_granted: None,
            in_flight_at_call: 0,
            chunks: Vec::new(),
            remote_invalidated_rkey: None,
            round_trips: 1,
            responder_interrupts: 1,
            phases: Phases::default(),
            reply_status: None,
            nfs_status: None,
            nfs_failed_op: None,
            nfs_fh: None,
            nfs_fh_hash: None,
            nfs_io: None,
            retry_of_xid: None,
            retry_of_connection: None,
            retry_wait_us: None,
            congested: false,
            loss_delayed: false,
            anomalies: Vec::new(),
            ladder: Vec::new(),
            ladder_omitted: 0,
            call_header,
            write_chunks: None,
            empty_write_chunks: None,
            unused_write_chunks: None,
            cut: false,
            kernel_times: KernelTimes::default(),
            views: Vec::new(),
        }
    }

    /// Adds a step the responder took (an RDMA Read or Write): the server,
    /// or the client for a backchannel call.
    pub(super) fn responder_step(&mut self, cap: usize, frame: u64, ts: u64, what: StepWhat) {
        let from_client = self.backchannel;
        self.step(cap, frame, ts, from_client, what);
    }

    /// Adds a ladder step at `ts`, unless the ladder holds `cap` steps already.
    pub(super) fn step(
        &mut self,
        cap: usize,
        frame: u64,
        ts: u64,
        from_client: bool,
        what: StepWhat,
    ) {
        // From the first transmission: one ladder for an operation sent
        // again (equal to the call's time when it was sent once).
        let step = LadderStep {
            frame,
            offset_ns: ts.saturating_sub(self.first_call_ts_ns),
            from_client,
            what,
        };
        Ladder::add(&mut self.ladder, &mut self.ladder_omitted, cap, step);
    }
}

/// The ladder of a call still being followed, before its [`Transaction`]
/// exists (the kernel side builds one only when the call is done).
#[derive(Debug, Clone, Default)]
pub(super) struct Ladder {
    /// The steps, in time order.
    pub steps: Vec<LadderStep>,
    /// Steps left out by the cap.
    pub omitted: u32,
}

impl Ladder {
    /// Adds a step at `ts`, `base_ts` being the call's time, unless the
    /// ladder holds `cap` steps already.
    pub(super) fn step(
        &mut self,
        cap: usize,
        base_ts: u64,
        frame: u64,
        ts: u64,
        from_client: bool,
        what: StepWhat,
    ) {
        let step = LadderStep {
            frame,
            offset_ns: ts.saturating_sub(base_ts),
            from_client,
            what,
        };
        Self::add(&mut self.steps, &mut self.omitted, cap, step);
    }

    /// The cap, for every ladder: `step` joins `steps` unless they number
    /// `cap` already, in which case `omitted` counts it.
    pub(super) fn add(
        steps: &mut Vec<LadderStep>,
        omitted: &mut u32,
        cap: usize,
        step: LadderStep,
    ) {
        if steps.len() >= cap {
            *omitted += 1;
            return;
        }
        steps.push(step);
    }
}

/// Which end of an RPC-over-RDMA connection a queue pair is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// The requester (NFS client): sent the CM REQ, sends calls.
    Client,
    /// The responder (NFS server).
    Server,
}

impl Role {
    /// The other end.
    pub fn peer(self) -> Role {
        match self {
            Role::Client => Role::Server,
            Role::Server => Role::Client,
        }
    }
}

/// A CM message the connection's state follows (IBA 12.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmMsg {
    /// ConnectRequest.
    Req,
    /// ConnectReply.
    Rep,
    /// ReadyToUse.
    Rtu,
    /// ConnectReject.
    Rej,
    /// DisconnectRequest.
    Dreq,
    /// DisconnectReply.
    Drep,
    /// iWARP: the MPA Request that opens the connection (RFC 5044 7.1),
    /// iWARP's REQ.
    MpaRequest,
    /// iWARP: the MPA Reply that accepts it (its REP and RTU in one).
    MpaReply,
    /// iWARP: an MPA Reply with the Reject flag (its REJ).
    MpaReject,
    /// iWARP: a TCP FIN (the first is its DREQ, the second its DREP).
    Fin,
    /// iWARP: a TCP RST (the connection is gone at once).
    Rst,
}

impl CmMsg {
    /// Whether the message asks for a connection (REQ, MPA Request).
    pub const fn requests(self) -> bool {
        matches!(self, CmMsg::Req | CmMsg::MpaRequest)
    }

    /// Whether the message makes the connection usable (RTU, MPA Reply).
    pub const fn establishes(self) -> bool {
        matches!(self, CmMsg::Rtu | CmMsg::MpaReply)
    }

    /// Whether the message accepts a request (REP, MPA Reply).
    pub const fn accepts(self) -> bool {
        matches!(self, CmMsg::Rep | CmMsg::MpaReply)
    }

    /// Whether the message starts the end of the connection or refuses it
    /// (DREQ, REJ, FIN, RST, MPA Reject).
    pub const fn ends(self) -> bool {
        matches!(
            self,
            CmMsg::Dreq | CmMsg::Rej | CmMsg::Fin | CmMsg::Rst | CmMsg::MpaReject
        )
    }

    /// The message's short name, as IBA 12.6 abbreviates it.
    pub const fn as_str(self) -> &'static str {
        match self {
            CmMsg::Req => "REQ",
            CmMsg::Rep => "REP",
            CmMsg::Rtu => "RTU",
            CmMsg::Rej => "REJ",
            CmMsg::Dreq => "DREQ",
            CmMsg::Drep => "DREP",
            CmMsg::MpaRequest => "MPA-REQ",
            CmMsg::MpaReply => "MPA-REP",
            CmMsg::MpaReject => "MPA-REJ",
            CmMsg::Fin => "FIN",
            CmMsg::Rst => "RST",
        }
    }
}

/// One CM message of a connection: which, when, in which frame, from whom.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CmEvent {
    /// Frame number.
    pub frame: u64,
    /// Capture time, ns since the epoch.
    pub ts_ns: u64,
    /// The message.
    pub message: CmMsg,
    /// Who sent it.
    pub from: Role,
}

/// CM messages kept per connection: a connection's life takes six (REQ,
/// REP, RTU, DREQ, DREP and a retry or two); a peer retrying without end
/// must not grow the table, so later ones are counted, not kept.
pub const CM_EVENTS: usize = 32;

/// Where the CM exchange of a connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmState {
    /// The capture started after the CM exchange: parameters are unknown.
    NotSeen,
    /// REQ seen.
    Requested,
    /// REP seen.
    Replied,
    /// RTU seen.
    Established,
    /// REJ seen.
    Rejected,
    /// DREQ seen.
    Disconnecting,
    /// DREP seen.
    Closed,
}

impl CmState {
    /// Stable name (JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            CmState::NotSeen => "not_seen",
            CmState::Requested => "requested",
            CmState::Replied => "replied",
            CmState::Established => "established",
            CmState::Rejected => "rejected",
            CmState::Disconnecting => "disconnecting",
            CmState::Closed => "closed",
        }
    }
}

/// One point of a connection's credit history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreditPoint {
    /// When (ns since the epoch).
    pub ts_ns: u64,
    /// Credits granted by the latest reply (0 before any).
    pub granted: u32,
    /// Calls outstanding.
    pub in_flight: u32,
}

/// What a connection carries, as far as the capture tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carries {
    /// RPC-over-RDMA: said by the CM exchange (RDMA-CM port 20049, RFC 8797
    /// private data) or by a message that decoded as one.
    RpcRdma,
    /// Something else: another RDMA-CM port and no RFC 8797 private data,
    /// or Sends that are not RPC-over-RDMA version 1.
    Other,
}

impl Carries {
    /// Stable name (JSON, datasets).
    pub fn as_str(self) -> &'static str {
        match self {
            Carries::RpcRdma => "rpc_rdma",
            Carries::Other => "other",
        }
    }
}

/// An MPA revision 2 peer's RDMA Read queue depths (RFC 6581 section 5,
/// its enhanced connection data): how many RDMA Reads it takes in at once
/// (IRD) and has outstanding at once (ORD). A peer's ORD above the other's
/// IRD is more Reads than the other can serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IrdOrd {
    /// Inbound RDMA Read queue depth.
    pub ird: u16,
    /// Outbound RDMA Read queue depth.
    pub ord: u16,
}

/// Frames kept as examples of a connection's congestion marks.
pub const CONGESTION_FRAMES: usize = 5;

/// The fabric's congestion signals on one connection's frames: counters,
/// the time range and the first few frames; a fixed size, whatever the
/// number of marks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Congestion {
    /// Frames whose IP ECN field is CE (RFC 3168 5): a switch marked them
    /// instead of dropping them.
    pub ecn_ce: u64,
    /// RoCEv2 Congestion Notification Packets (BTH opcode 0x81, IBA annex
    /// A17.9.2) to one of its QPs: its peer saw CE marks and asks it to slow down.
    pub cnps: u64,
    /// Frames with the BTH FECN bit (IBA 9.2.7, InfiniBand congestion control).
    pub fecn: u64,
    /// Frames with the BTH BECN bit: the responder echoing a FECN back.
    pub becn: u64,
    /// Time of the first marked frame (ns since the epoch; `null`: none).
    pub first_ts_ns: Option<u64>,
    /// Time of the last marked frame (`null`: none).
    pub last_ts_ns: Option<u64>,
    /// The first marked frames (at most 5).
    pub frames: Vec<u64>,
}

impl Congestion {
    /// Marks of all kinds (a frame with several counts once per kind).
    pub fn marks(&self) -> u64 {
        self.ecn_ce + self.cnps + self.fecn + self.becn
    }

    /// Counts one marked frame.
    pub(crate) fn note(
        &mut self,
        frame: u64,
        ts: u64,
        ce: bool,
        cnp: bool,
        fecn: bool,
        becn: bool,
    ) {
        self.ecn_ce += u64::from(ce);
        self.cnps += u64::from(cnp);
        self.fecn += u64::from(fecn);
        self.becn += u64::from(becn);
        self.first_ts_ns = Some(self.first_ts_ns.map_or(ts, |f| f.min(ts)));
        self.last_ts_ns = Some(self.last_ts_ns.map_or(ts, |l| l.max(ts)));
        if self.frames.len() < CONGESTION_FRAMES {
            self.frames.push(frame);
        }
    }
}

/// A connection: two queue pairs and what was negotiated.
#[derive(Debug, Clone)]
pub struct Connection {
    /// Stable id.
    pub id: ConnId,
    /// What it carries; `None` until the CM exchange or a Send says.
    pub carries: Option<Carries>,
    /// The requester's QP, when known.
    pub client: Option<QpKey>,
    /// The responder's QP, when known.
    pub server: Option<QpKey>,
    /// CM state.
    pub cm_state: CmState,
    /// CM service ID of the REQ.
    pub service_id: Option<u64>,
    /// RDMA-CM port (20049 for NFS), from the service ID.
    pub port: Option<u16>,
    /// Client's CM communication ID.
    pub client_comm_id: Option<u32>,
    /// Server's CM communication ID.
    pub server_comm_id: Option<u32>,
    /// Starting PSN the client announced in its REQ.
    pub client_start_psn: Option<u32>,
    /// Starting PSN the server announced in its REP.
    pub server_start_psn: Option<u32>,
    /// RFC 8797 private data in the REQ (`None`: absent or unknown).
    pub client_private: Option<CmPrivateData>,
    /// RFC 8797 private data in the REP.
    pub server_private: Option<CmPrivateData>,
    /// iWARP: the RDMA Read queue depths the client's MPA Request gave
    /// (RFC 6581 5); `None` when it was revision 1 or not seen.
    pub client_ird_ord: Option<IrdOrd>,
    /// iWARP: the depths the server's MPA Reply gave.
    pub server_ird_ord: Option<IrdOrd>,
    /// What the CM exchange negotiated, seen from the client: `inline_send` is
    /// the call inline threshold, `inline_recv` the reply inline threshold.
    /// `None` when the capture has no CM exchange for this connection.
    pub negotiated: Option<Negotiated>,
    /// The CM messages, oldest first (the first [`CM_EVENTS`]).
    pub cm_events: Vec<CmEvent>,
    /// CM messages past [`CM_EVENTS`], counted only.
    pub cm_events_not_kept: u32,
    /// The capture's snap length cut the CM messages: their private data,
    /// and what it negotiates, are not known.
    pub cm_cut: bool,
    /// For a connection found from traffic: CM messages between its hosts
    /// that a snap length cut before their QP numbers (so which connection
    /// they set up is not known), and the first frames of them.
    pub cm_cut_messages: u64,
    /// See `cm_cut_messages`.
    pub cm_cut_frames: Vec<u64>,
    /// Path MTU in bytes: from the CM REQ, or learnt from the first full
    /// (First or Middle) packet; `None` until either.
    pub path_mtu: Option<u32>,
    /// First frame time.
    pub first_ts_ns: u64,
    /// Time of the last frame that moved the connection forward: an
    /// RPC-over-RDMA message or a first transmission of RDMA data. A
    /// retransmission or a CM message after it (a dying connection's
    /// retries, its DREQ) does not move it, so on `reconnect.pcap` c1 ends
    /// at its last call, not at its teardown.
    pub last_ts_ns: u64,
    /// Calls seen.
    pub calls: u64,
    /// Replies seen.
    pub replies: u64,
    /// Bytes moved by RDMA Read/Write into or out of chunks (of the
    /// transactions whose chunk lists were seen: see [`Connection::chunk_bytes_known`]).
    pub chunk_bytes: u64,
    /// Replies whose transaction's chunk lists a snap length cut: their
    /// bytes are not in `chunk_bytes`.
    pub chunk_bytes_cut: u64,
    /// Replies sent with Send With Invalidate.
    pub remote_invalidations: u64,
    /// Latest credit grant.
    pub granted: Option<u32>,
    /// Smallest grant seen.
    pub granted_min: Option<u32>,
    /// Largest grant seen.
    pub granted_max: Option<u32>,
    /// Latest credit request.
    pub requested: Option<u32>,
    /// Calls outstanding now.
    pub in_flight: u32,
    /// Most calls outstanding at once.
    pub peak_in_flight: u32,
    /// Time spent with as many calls outstanding as granted (ns), the wait
    /// on the implicit first credit left out (`first_grant_wait_ns`).
    pub at_limit_ns: u64,
    /// Time the first call waited on the single credit RFC 8166 3.3.1 grants
    /// before the first reply says how many (ns): not a full window, so not
    /// in `at_limit_ns`. `None` until a call waited so.
    pub first_grant_wait_ns: Option<u64>,
    /// Since when the limit is reached, and whether the limit is the
    /// implicit first credit.
    at_limit_since: Option<(u64, bool)>,
    /// The grant is the implicit first credit (set by a seen CM REP), not
    /// one a reply sent.
    pub(super) granted_implicit: bool,
    /// Credit history (thinned to the configured number of points).
    pub credit_series: Vec<CreditPoint>,
    credit_stride: u32,
    credit_skip: u32,
    /// Anomalies on this connection.
    pub anomalies: u64,
    /// Latency histogram: bucket `i` counts replies with latency in [2^i, 2^(i+1)) µs
    /// ([`log2_us_slot`](crate::histogram::log2_us_slot), a `LogLinear<1>` layout).
    pub latency_log2_us: [u64; 32],
    /// Congestion marks on its frames (ECN CE, CNPs, FECN/BECN).
    pub congestion: Congestion,
    /// When a packet was last sent again or NAKed as out of sequence on it
    /// (the transactions outstanding then are `loss_delayed`).
    pub last_loss_ts_ns: Option<u64>,
}

impl Connection {
    pub(super) fn new(id: ConnId, ts: u64) -> Self {
        Connection {
            id,
            carries: None,
            client: None,
            server: None,
            cm_state: CmState::NotSeen,
            service_id: None,
            port: None,
            client_comm_id: None,
            server_comm_id: None,
            client_start_psn: None,
            server_start_psn: None,
            client_private: None,
            server_private: None,
            client_ird_ord: None,
            server_ird_ord: None,
            negotiated: None,
            cm_events: Vec::new(),
            cm_events_not_kept: 0,
            cm_cut: false,
            cm_cut_messages: 0,
            cm_cut_frames: Vec::new(),
            path_mtu: None,
            first_ts_ns: ts,
            last_ts_ns: ts,
            calls: 0,
            replies: 0,
            chunk_bytes: 0,
            chunk_bytes_cut: 0,
            remote_invalidations: 0,
            granted: None,
            granted_min: None,
            granted_max: None,
            requested: None,
            in_flight: 0,
            peak_in_flight: 0,
            at_limit_ns: 0,
            first_grant_wait_ns: None,
            at_limit_since: None,
            granted_implicit: false,
            credit_series: Vec::new(),
            credit_stride: 1,
            credit_skip: 0,
            anomalies: 0,
            latency_log2_us: [0; 32],
            congestion: Congestion::default(),
            last_loss_ts_ns: None,
        }
    }

    /// Frames of the CM exchange (those kept in [`Connection::cm_events`]).
    pub fn cm_frames(&self) -> impl Iterator<Item = u64> + '_ {
        self.cm_events.iter().map(|e| e.frame)
    }

    /// Records a CM message, within [`CM_EVENTS`].
    pub(super) fn cm_event(&mut self, e: CmEvent) {
        if self.cm_events.len() < CM_EVENTS {
            self.cm_events.push(e);
        } else {
            self.cm_events_not_kept = self.cm_events_not_kept.saturating_add(1);
        }
    }

    /// The fabric its queue pairs' addresses name (RoCEv2, InfiniBand,
    /// RoCEv1, iWARP), once one is known.
    pub fn fabric(&self) -> Option<&'static str> {
        self.client.or(self.server).map(|q| q.addr.fabric())
    }

    /// Whether its addresses are iWARP's: what only a BTH carries (PSNs,
    /// FECN/BECN, CNPs) does not apply to it.
    pub fn is_iwarp(&self) -> bool {
        self.client
            .or(self.server)
            .is_some_and(|q| matches!(q.addr, crate::keys::Addr::Iwarp(_)))
    }

    /// Whether it is known to carry RPC-over-RDMA: what only RPC-over-RDMA
    /// defines (credits, inline thresholds, remote invalidation) is shown
    /// only then.
    pub fn is_rpcrdma(&self) -> bool {
        self.carries == Some(Carries::RpcRdma)
    }

    /// A one-line name: `client/qpn <-> server/qpn`.
    pub fn label(&self) -> String {
        let side = |q: Option<QpKey>| q.map_or_else(|| "?".to_string(), |q| q.to_string());
        format!("{} <-> {}", side(self.client), side(self.server))
    }

    /// The call (client to server) inline threshold, when negotiated.
    pub fn call_inline_threshold(&self) -> Option<u32> {
        self.negotiated.map(|n| n.inline_send)
    }

    /// The reply (server to client) inline threshold, when negotiated.
    pub fn reply_inline_threshold(&self) -> Option<u32> {
        self.negotiated.map(|n| n.inline_recv)
    }

    /// Records the credit state after a call or a reply.
    pub(super) fn credit_update(&mut self, ts: u64, max_points: usize) {
        let granted = self.granted.unwrap_or(0);
        // Time at the limit: in flight has reached the grant.
        let at_limit = granted > 0 && self.in_flight >= granted;
        match (at_limit, self.at_limit_since) {
            (true, None) => self.at_limit_since = Some((ts, self.granted_implicit)),
            (false, Some(since)) => {
                self.close_at_limit(since, ts);
                self.at_limit_since = None;
            }
            _ => {}
        }
        self.credit_skip += 1;
        if self.credit_skip < self.credit_stride {
            return;
        }
        self.credit_skip = 0;
        if self.credit_series.len() >= max_points.max(2) {
            // Thin out: keep every other point and sample half as often.
            let mut i = 0;
            self.credit_series.retain(|_| {
                i += 1;
                i % 2 == 1
            });
            self.credit_stride = self.credit_stride.saturating_mul(2);
        }
        self.credit_series.push(CreditPoint {
            ts_ns: ts,
            granted,
            in_flight: self.in_flight,
        });
    }

    /// Time spent at the limit up to `now` (ns), the interval still open
    /// included: a live view's figure for a connection that is at its
    /// limit right now (`at_limit_ns` counts closed intervals only).
    pub fn at_limit_ns_until(&self, now: u64) -> u64 {
        let open = match self.at_limit_since {
            Some((s, false)) => now.saturating_sub(s),
            _ => 0,
        };
        self.at_limit_ns + open
    }

    /// Time at the limit (ns), `None` when no grant was ever seen (a snap
    /// length cut every reply's credit field, or no reply yet): the limit
    /// is then unknown, and 0 would say the window never filled.
    pub fn at_limit_known(&self) -> Option<u64> {
        self.granted_max.map(|_| self.at_limit_ns)
    }

    /// [`Connection::at_limit_known`] up to `now`, the open interval included.
    pub fn at_limit_known_until(&self, now: u64) -> Option<u64> {
        self.granted_max.map(|_| self.at_limit_ns_until(now))
    }

    /// Bytes moved through chunks, `None` when a snap length cut some
    /// transaction's chunk lists on it (their bytes are not counted).
    pub fn chunk_bytes_known(&self) -> Option<u64> {
        (self.chunk_bytes_cut == 0).then_some(self.chunk_bytes)
    }

    /// Adds a closed interval at the limit to the figure it belongs to.
    fn close_at_limit(&mut self, (since, implicit): (u64, bool), ts: u64) {
        let d = ts.saturating_sub(since);
        if implicit {
            self.first_grant_wait_ns = Some(self.first_grant_wait_ns.unwrap_or(0) + d);
        } else {
            self.at_limit_ns += d;
        }
    }

    /// Closes the at-limit interval at `ts` (end of capture).
    pub(super) fn finish(&mut self, ts: u64) {
        if let Some(since) = self.at_limit_since.take() {
            self.close_at_limit(since, ts);
        }
    }
}

/// The RFC 8797 parameters of a side, when it sent version 1 private data.
pub(super) fn v1(p: Option<CmPrivateData>) -> Option<RpcRdmaCmPrivate> {
    p.and_then(|p| p.v1())
}
