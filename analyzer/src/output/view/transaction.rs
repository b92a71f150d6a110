//! A transaction as `transactions --json`, `live` and the JSON Schema see
//! it: the engine's [`Transaction`] borrowed field by field, with the
//! ladder and the call header put into words. The doc comments are the
//! schema's descriptions, so they read as the record's, not the view's.

use schemars::JsonSchema;
use serde::Serialize;

use crate::engine::{LadderStep, NfsIo, Phases, SegmentUse, Transaction};
use crate::output::describe::{HeaderWords, StepWords};
use crate::output::view::{
    ChunkKindView, ConnIdView, FileHandleView, KindView, StableView, TransferView,
};

/// A completed (or abandoned) RPC transaction.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename = "Transaction")]
pub struct TransactionView<'a> {
    /// Connection.
    pub connection: ConnIdView,
    /// RPC XID.
    pub xid: &'a u32,
    /// Whether the call went server to client (NFSv4.1 backchannel).
    pub backchannel: &'a bool,
    /// Frame of the call Send (its last packet).
    pub call_frame: &'a u64,
    /// Time of the call (ns since the epoch).
    #[serde(serialize_with = "super::exact::decimal")]
    #[schemars(with = "String")]
    pub call_ts_ns: &'a u64,
    /// Frame of the reply Send.
    pub reply_frame: &'a Option<u64>,
    /// Time of the reply.
    #[serde(serialize_with = "super::exact::decimal")]
    #[schemars(with = "Option<String>")]
    pub reply_ts_ns: &'a Option<u64>,
    /// RPC program number (None for a Long Call whose RPC header was not seen).
    pub program: &'a Option<u32>,
    /// Program name (nfs, mount, nlm, ...).
    pub program_name: &'a Option<&'static str>,
    /// Program version.
    pub version: &'a Option<u32>,
    /// NFSv4 minor version from the COMPOUND (0, 1, 2; `procedure_label`
    /// and the report's rows say `NFSv4.1`). `null` for other programs and
    /// versions, and when the capture cut the call before it.
    pub minorversion: &'a Option<u32>,
    /// Procedure name (NFSv4 COMPOUND lists its operations).
    pub procedure: &'a Option<String>,
    /// Procedure number.
    pub proc: &'a Option<u32>,
    /// How the call travelled.
    pub call_transfer: TransferView,
    /// How the reply travelled.
    pub reply_transfer: TransferView,
    /// Bytes of the call Send.
    pub call_len: &'a u32,
    /// Bytes of the reply Send.
    pub reply_len: &'a Option<u32>,
    /// Call to reply, µs: this transmission's time on the wire.
    pub latency_us: &'a Option<f64>,
    /// Times the client sent this operation: 1, or more when it sent the
    /// call again on a new connection after the one it was waiting on was
    /// torn down (same XID, same client address; RFC 8166 4.5.5).
    pub transmissions: &'a u32,
    /// Frame of the operation's first transmission (`call_frame` when it was sent once).
    pub first_call_frame: &'a u64,
    /// Time of the operation's first transmission (ns since the epoch).
    #[serde(serialize_with = "super::exact::decimal")]
    #[schemars(with = "String")]
    pub first_call_ts_ns: &'a u64,
    /// Connections the earlier transmissions were sent on, oldest first
    /// (empty when it was sent once).
    pub earlier_connections: Vec<ConnIdView>,
    /// First transmission to the reply that completed the operation, µs:
    /// the latency the application saw (equal to `latency_us` when it was sent once).
    pub app_latency_us: &'a Option<f64>,
    /// Credits the call requested (`None` where the view cannot see them:
    /// the client's kernel probes do not carry them).
    pub credits_requested: &'a Option<u32>,
    /// Credits the reply granted.
    pub credits_granted: &'a Option<u32>,
    /// Calls outstanding on the connection when this one was sent (itself included).
    pub in_flight_at_call: &'a u32,
    /// Advertised segments and their use.
    pub chunks: Vec<SegmentUseView<'a>>,
    /// R_Key the reply invalidated (Send With Invalidate).
    #[serde(serialize_with = "super::exact::hex")]
    #[schemars(with = "Option<String>")]
    pub remote_invalidated_rkey: &'a Option<u32>,
    /// Bytes the RDMA Reads and Writes moved through its chunks; null when
    /// the capture's snap length cut its chunk lists (`cut`).
    pub bytes_moved: Option<u64>,
    /// Internode round trips (1 inline; +1 for RDMA Read; +1 for RDMA Write);
    /// null when the capture's snap length cut a header (`cut`).
    pub round_trips: Option<u8>,
    /// Responder interrupts (1, +1 per RDMA phase it waited for).
    pub responder_interrupts: &'a u8,
    /// Measured phases.
    pub phases: PhasesView<'a>,
    /// RPC reply status (accept_stat, or denied).
    pub reply_status: &'a Option<String>,
    /// NFS status of the reply, by name (`NFS3_OK`, `NFS3ERR_JUKEBOX`,
    /// `NFS4ERR_DELAY`, ...; `nfsstat4 N` for a code no RFC names): the
    /// `nfsstat3` of an NFSv3 result, the status of an NFSv4 COMPOUND.
    /// `None` when the reply carries none (NULL, other programs), came in
    /// a reply chunk, or was not seen.
    pub nfs_status: &'a Option<String>,
    /// The NFSv4 operation that failed (the first result whose status is
    /// not NFS4_OK); `None` when the COMPOUND succeeded, for NFSv3 (the
    /// procedure is the operation), or when the walk could not reach it.
    pub nfs_failed_op: &'a Option<String>,
    /// The file handle the NFS call names: an NFSv3 call's first argument;
    /// for an NFSv4 COMPOUND the current filehandle (set by PUTFH) when its
    /// READ/WRITE/COMMIT is evaluated, or, with no such op, its first
    /// PUTFH's. `None` when the call carries none or it was not seen.
    pub nfs_fh: Option<FileHandleView<'a>>,
    /// The CRC-32 of `nfs_fh`: the hash Wireshark shows for the handle
    /// (`nfs.fh.hash`), its short name in the text output.
    pub nfs_fh_hash: &'a Option<u32>,
    /// The byte range of an NFS READ, WRITE or COMMIT and what the reply
    /// said of the data; `None` for other calls.
    pub nfs_io: Option<NfsIoView<'a>>,
    /// This call retries one the server answered NFS3ERR_JUKEBOX or
    /// NFS4ERR_DELAY: that call's XID (same client, procedure, file handle
    /// and byte range, sent within 30 s of the error reply).
    pub retry_of_xid: &'a Option<u32>,
    /// The connection the retried call was answered on.
    pub retry_of_connection: Option<ConnIdView>,
    /// The error reply to this retry's call, µs: the time the client waited.
    pub retry_wait_us: &'a Option<f64>,
    /// A congestion mark (ECN CE, CNP, FECN, BECN) was seen on its
    /// connection while it was outstanding, between its call and its reply.
    pub congested: &'a bool,
    /// A packet on its connection was sent again (an RC retransmission) or
    /// NAKed as out of sequence while it was outstanding: RC delivers in
    /// order, so everything behind the lost packet on the QP waited for it.
    pub loss_delayed: &'a bool,
    /// Anomalies that concern this transaction.
    pub anomalies: Vec<KindView>,
    /// The ladder diagram, in time order (capped at the first steps).
    pub ladder: Vec<LadderStepView<'a>>,
    /// Ladder steps left out by the cap.
    pub ladder_omitted: &'a u32,
    /// The decoded RPC-over-RDMA header of the call (shown in words).
    pub call_header: HeaderWords<'a>,
    /// Write chunks the call offered (`None`: its chunk lists were not
    /// seen, as when the capture cut them, or the kernel's view).
    pub write_chunks: &'a Option<u32>,
    /// Of those, chunks with no segments (RFC 8166 3.4.6 "empty").
    pub empty_write_chunks: &'a Option<u32>,
    /// Of those, chunks the reply left unused (every segment length 0, or
    /// nothing written); `None` when either header's chunk lists were not seen.
    pub unused_write_chunks: &'a Option<u32>,
    /// The capture cut the call's or the reply's RPC-over-RDMA header (a
    /// snap length): what it would have said is `None` or `unknown` here.
    pub cut: &'a bool,
    /// The client's RPC layer: the task's start to its call's transmission,
    /// µs (`sunrpc:rpc_stats_latency` backlog): queue time for a slot, a
    /// credit or the connection, which no wire shows. `null` without the
    /// client's probes (or on a kernel without the event).
    pub kernel_backlog_us: &'a Option<u64>,
    /// The client's RPC layer: transmission to reply, µs
    /// (`rpc_stats_latency` rtt). `null` without the client's probes.
    pub kernel_rtt_us: &'a Option<u64>,
    /// The client's RPC layer: the task's start to its end, µs
    /// (`rpc_stats_latency` execute). `null` without the client's probes.
    pub kernel_execute_us: &'a Option<u64>,
    /// The server's RPC layer: its thread taking the call to the reply
    /// handed to the transport, µs (`sunrpc:svc_stats_latency` execute).
    /// `null` without the server's probes.
    pub kernel_server_execute_us: &'a Option<u64>,
}

impl<'a> From<&'a Transaction> for TransactionView<'a> {
    fn from(t: &'a Transaction) -> Self {
        TransactionView {
            connection: ConnIdView(t.connection),
            xid: &t.xid,
            backchannel: &t.backchannel,
            call_frame: &t.call_frame,
            call_ts_ns: &t.call_ts_ns,
            reply_frame: &t.reply_frame,
            reply_ts_ns: &t.reply_ts_ns,
            program: &t.program,
            program_name: &t.program_name,
            version: &t.version,
            minorversion: &t.minorversion,
            procedure: &t.procedure,
            proc: &t.proc,
            call_transfer: t.call_transfer.into(),
            reply_transfer: t.reply_transfer.into(),
            call_len: &t.call_len,
            reply_len: &t.reply_len,
            latency_us: &t.latency_us,
            transmissions: &t.transmissions,
            first_call_frame: &t.first_call_frame,
            first_call_ts_ns: &t.first_call_ts_ns,
            earlier_connections: t
                .earlier_connections
                .iter()
                .copied()
                .map(ConnIdView)
                .collect(),
            app_latency_us: &t.app_latency_us,
            credits_requested: &t.credits_requested,
            credits_granted: &t.credits_granted,
            in_flight_at_call: &t.in_flight_at_call,
            chunks: t.chunks.iter().map(SegmentUseView::from).collect(),
            remote_invalidated_rkey: &t.remote_invalidated_rkey,
            bytes_moved: t.bytes_moved_known(),
            round_trips: t.round_trips_known(),
            responder_interrupts: &t.responder_interrupts,
            phases: PhasesView::from(&t.phases),
            reply_status: &t.reply_status,
            nfs_status: &t.nfs_status,
            nfs_failed_op: &t.nfs_failed_op,
            nfs_fh: t.nfs_fh.as_ref().map(FileHandleView),
            nfs_fh_hash: &t.nfs_fh_hash,
            nfs_io: t.nfs_io.as_ref().map(NfsIoView::from),
            retry_of_xid: &t.retry_of_xid,
            retry_of_connection: t.retry_of_connection.map(ConnIdView),
            retry_wait_us: &t.retry_wait_us,
            congested: &t.congested,
            loss_delayed: &t.loss_delayed,
            anomalies: t.anomalies.iter().copied().map(KindView::from).collect(),
            ladder: t.ladder.iter().map(LadderStepView::from).collect(),
            ladder_omitted: &t.ladder_omitted,
            call_header: HeaderWords(&t.call_header),
            write_chunks: &t.write_chunks,
            empty_write_chunks: &t.empty_write_chunks,
            unused_write_chunks: &t.unused_write_chunks,
            cut: &t.cut,
            kernel_backlog_us: &t.kernel_times.backlog_us,
            kernel_rtt_us: &t.kernel_times.rtt_us,
            kernel_execute_us: &t.kernel_times.execute_us,
            kernel_server_execute_us: &t.kernel_times.server_execute_us,
        }
    }
}

/// One step of the ladder diagram.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename = "LadderStep")]
#[schemars(deny_unknown_fields)]
pub struct LadderStepView<'a> {
    /// Frame number.
    pub frame: u64,
    /// Nanoseconds since the call.
    pub offset_ns: u64,
    /// True when the requester (client) sent it.
    pub from_client: bool,
    /// What it was; shown as e.g. `RDMA READ request rkey 0x1234 va 0x... len 4096`.
    pub what: StepWords<'a>,
}

impl<'a> From<&'a LadderStep> for LadderStepView<'a> {
    fn from(s: &'a LadderStep) -> Self {
        LadderStepView {
            frame: s.frame,
            offset_ns: s.offset_ns,
            from_client: s.from_client,
            what: StepWords(&s.what),
        }
    }
}

/// One advertised segment and what happened to it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename = "SegmentUse")]
#[schemars(deny_unknown_fields)]
pub struct SegmentUseView<'a> {
    /// Which list.
    pub kind: ChunkKindView,
    /// Chunk index within its list (write list); 0 otherwise.
    pub chunk: &'a u32,
    /// Read chunk position (read list only).
    pub position: &'a Option<u32>,
    /// STag / R_Key.
    #[serde(serialize_with = "super::exact::hex")]
    #[schemars(with = "String")]
    pub handle: &'a u32,
    /// Advertised length.
    pub length: &'a u32,
    /// Advertised offset (VA).
    #[serde(serialize_with = "super::exact::hex")]
    #[schemars(with = "String")]
    pub offset: &'a u64,
    /// Bytes moved by RDMA Read or Write into or out of it.
    pub bytes_moved: &'a u64,
    /// Length the responder reported in its reply's write list or reply chunk.
    pub reported_length: &'a Option<u32>,
    /// Frames of the RDMA operations that moved it (first ones, capped).
    pub frames: &'a Vec<u64>,
    /// Whether the reply's Send With Invalidate named this handle.
    pub remotely_invalidated: &'a bool,
}

impl<'a> From<&'a SegmentUse> for SegmentUseView<'a> {
    fn from(x: &'a SegmentUse) -> Self {
        SegmentUseView {
            kind: x.kind.into(),
            chunk: &x.chunk,
            position: &x.position,
            handle: &x.handle,
            length: &x.length,
            offset: &x.offset,
            bytes_moved: &x.bytes_moved,
            reported_length: &x.reported_length,
            frames: &x.frames,
            remotely_invalidated: &x.remotely_invalidated,
        }
    }
}

/// Time spent in each phase of a transaction (see the round-trips draft).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename = "Phases")]
#[schemars(deny_unknown_fields)]
pub struct PhasesView<'a> {
    /// Call received to the responder's first RDMA operation (or to the reply).
    pub until_first_rdma_ns: &'a Option<u64>,
    /// First RDMA Read request to last Read response.
    pub read_ns: &'a Option<u64>,
    /// First to last RDMA Write.
    pub write_ns: &'a Option<u64>,
    /// Last RDMA operation to the reply.
    pub reply_after_rdma_ns: &'a Option<u64>,
}

impl<'a> From<&'a Phases> for PhasesView<'a> {
    fn from(x: &'a Phases) -> Self {
        PhasesView {
            until_first_rdma_ns: &x.until_first_rdma_ns,
            read_ns: &x.read_ns,
            write_ns: &x.write_ns,
            reply_after_rdma_ns: &x.reply_after_rdma_ns,
        }
    }
}

/// An NFS READ, WRITE or COMMIT (NFSv3 procedure, or the first such op of
/// an NFSv4 COMPOUND): the byte range and what the reply said of the data.
/// Each field is `None` when the bytes that carry it were not seen (a snap
/// length, a Long Call or Reply, no reply) or the reply failed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename = "NfsIo")]
#[schemars(deny_unknown_fields)]
pub struct NfsIoView<'a> {
    /// `READ`, `READ_PLUS`, `WRITE` or `COMMIT`.
    pub op: &'a &'static str,
    /// The first byte of the range.
    #[serde(serialize_with = "super::exact::decimal")]
    #[schemars(with = "Option<String>")]
    pub offset: &'a Option<u64>,
    /// Bytes asked for (READ), sent (WRITE: the data's length, inline or
    /// in a Read chunk), or to commit (COMMIT: 0 is to the end of the file).
    pub count: &'a Option<u32>,
    /// WRITE: how stable the client asked the data to be made.
    pub stable: Option<StableView>,
    /// READ, WRITE: bytes the reply says were read or written.
    pub reply_count: &'a Option<u32>,
    /// READ: the reply says the end of the file was reached.
    pub eof: &'a Option<bool>,
    /// WRITE: how stable the server says it made the data.
    pub committed: Option<StableView>,
}

impl<'a> From<&'a NfsIo> for NfsIoView<'a> {
    fn from(x: &'a NfsIo) -> Self {
        NfsIoView {
            op: &x.op,
            offset: &x.offset,
            count: &x.count,
            stable: x.stable.map(StableView),
            reply_count: &x.reply_count,
            eof: &x.eof,
            committed: x.committed.map(StableView),
        }
    }
}
