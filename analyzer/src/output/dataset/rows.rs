//! The dataset's rows as view types: each table's Arrow schema is traced
//! from its row type and its columns are built by `serde_arrow`, so a
//! column is declared once, as a field, instead of as a field, a builder,
//! a push and a finish.
//!
//! The rules the module documentation states are applied to what is
//! traced ([`dataset_field`]), not written per column:
//! - a Rust `i64` is INT64, `u64` UINT64 (addresses only), `u32` UINT32;
//! - an `Option` is nullable, anything else is not;
//! - a field named `*ts_ns` is a timestamp (ns, UTC);
//! - a list is an Arrow `List` of nullable `item`s, a string `Utf8`.

use std::fmt::Display;
use std::marker::PhantomData;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, FieldRef, Schema, SchemaRef, TimeUnit};
use rdma_dissectors::view::{ErrorView, FpduView, FrameView, IpView, IwarpView, RpcRdmaView};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_arrow::schema::{SchemaLike, TracingOptions};

use crate::diagnosis::Cause;
use crate::engine::{
    Anomaly, Carries, ChunkKind, CmState, ConnId, Kind, NfsIo, SegmentUse, Transaction,
};
use crate::output::schema::{ConnectionView, IrdOrdView, PrivateData};
use crate::output::view::QpKeyView;

/// A table whose rows are a view type.
pub(super) trait View {
    /// The table's folder name.
    const TABLE: &'static str;
    /// Top-level columns whose values hardly repeat (written without a
    /// dictionary).
    const UNIQUE: &'static [&'static str];
    /// The row type, borrowing from the record it shows. It derives
    /// `Deserialize` only for the schema to be traced from it.
    type Row<'a>: Serialize + Deserialize<'a>;

    /// The table's columns.
    fn schema() -> std::io::Result<SchemaRef> {
        schema_of::<Self::Row<'static>>()
    }
}

/// The dataset's schema of `T`: traced, then given the dataset's rules.
pub(super) fn schema_of<T: Deserialize<'static>>() -> std::io::Result<SchemaRef> {
    let options = TracingOptions::default()
        .sequence_as_large_list(false)
        .strings_as_large_utf8(false);
    let traced = Vec::<FieldRef>::from_type::<T>(options).map_err(std::io::Error::other)?;
    let fields: Vec<Field> = traced.iter().map(|f| dataset_field(f)).collect();
    Ok(Arc::new(Schema::new(fields)))
}

/// A traced field with the dataset's rules (see the module documentation).
fn dataset_field(f: &Field) -> Field {
    let t = match f.data_type() {
        DataType::Int64 if f.name().ends_with("ts_ns") => {
            DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()))
        }
        DataType::List(item) => {
            let item = Field::new("item", dataset_field(item).data_type().clone(), true);
            DataType::List(Arc::new(item))
        }
        DataType::Struct(fields) => {
            DataType::Struct(fields.iter().map(|f| dataset_field(f)).collect())
        }
        t => t.clone(),
    };
    Field::new(f.name(), t, f.is_nullable())
}

/// A table's rows in the making, serialized into Arrow builders as they
/// come.
pub(super) struct ViewRows<V: View> {
    builder: serde_arrow::ArrayBuilder,
    len: usize,
    /// The first row that did not fit the schema (a bug: the schema is the
    /// row type's), reported when the batch is finished.
    error: Option<serde_arrow::Error>,
    view: PhantomData<V>,
}

impl<V: View> ViewRows<V> {
    pub(super) fn new() -> std::io::Result<Self> {
        let schema = V::schema()?;
        let builder = serde_arrow::ArrayBuilder::from_arrow(schema.fields())
            .map_err(std::io::Error::other)?;
        Ok(ViewRows {
            builder,
            len: 0,
            error: None,
            view: PhantomData,
        })
    }

    /// Adds one row.
    pub(super) fn push(&mut self, row: V::Row<'_>) {
        match self.builder.push(row) {
            Ok(()) => self.len += 1,
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
    }

    /// Rows held.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The rows held as a batch; empties the builders.
    pub(super) fn finish(&mut self) -> std::io::Result<RecordBatch> {
        if let Some(e) = self.error.take() {
            return Err(std::io::Error::other(e));
        }
        self.len = 0;
        self.builder
            .to_record_batch()
            .map_err(std::io::Error::other)
    }
}

/// A value written as its text (a connection's `c3`), with no `String`
/// per row.
pub(super) struct Shown<'a>(pub &'a dyn Display);

impl Serialize for Shown<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self.0)
    }
}

impl<'de> Deserialize<'de> for Shown<'_> {
    /// For tracing only: a string.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?;
        Ok(Shown(&""))
    }
}

/// Counts, frame numbers and times, as INT64 (Spark reads UINT64 as a
/// decimal): far below 2^63, and saturated if not.
pub(super) fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A list of 64-bit counts as INT64s, borrowed.
pub(super) struct I64s<'a>(pub &'a [u64]);

impl Serialize for I64s<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|v| i64_of(*v)))
    }
}

impl<'de> Deserialize<'de> for I64s<'_> {
    /// For tracing only: a list of INT64.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<i64>::deserialize(d)?;
        Ok(I64s(&[]))
    }
}

/// A borrowed list.
pub(super) struct Seq<'a, T>(pub &'a [T]);

impl<T: Serialize> Serialize for Seq<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Seq<'_, T> {
    /// For tracing only: a list of `T`.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<T>::deserialize(d)?;
        Ok(Seq(&[]))
    }
}

/// The `anomalies` table.
pub(super) struct Anomalies;

impl View for Anomalies {
    const TABLE: &'static str = "anomalies";
    const UNIQUE: &'static [&'static str] = &["ts_ns", "xid", "message"];
    type Row<'a> = AnomalyRow<'a>;
}

/// A row of `anomalies`: the anomaly's JSON keys, with its kind's
/// severity and RFC.
#[derive(Serialize, Deserialize)]
pub(super) struct AnomalyRow<'a> {
    schema_version: u32,
    kind: &'a str,
    origin: &'a str,
    ts_ns: Option<i64>,
    #[serde(borrow)]
    frames: I64s<'a>,
    #[serde(borrow)]
    connection: Option<Shown<'a>>,
    xid: Option<u32>,
    message: &'a str,
    severity: &'a str,
    rfc: &'a str,
    acknowledged: bool,
}

impl<'a> AnomalyRow<'a> {
    /// The row of `a`, `acknowledged` by `--ignore`/`--ack` or not.
    pub(super) fn new(a: &'a Anomaly, acknowledged: bool) -> Self {
        AnomalyRow {
            schema_version: super::SCHEMA_VERSION,
            kind: a.kind.as_str(),
            origin: a.origin.as_str(),
            ts_ns: a.ts_ns.map(i64_of),
            frames: I64s(&a.frames),
            connection: a.connection.as_ref().map(|c| Shown(c)),
            xid: a.xid,
            message: &a.message,
            severity: a.kind.severity().as_str(),
            rfc: a.kind.rfc(),
            acknowledged,
        }
    }
}

/// The `diagnosis` table: a capture's causes (`report --json`'s
/// `diagnosis`, one row per cause; `impact.score` orders them).
pub(super) struct Causes;

impl View for Causes {
    const TABLE: &'static str = "diagnosis";
    const UNIQUE: &'static [&'static str] = &["impact"];
    type Row<'a> = CauseRow<'a>;
}

/// A row of `diagnosis`.
#[derive(Serialize, Deserialize)]
pub(super) struct CauseRow<'a> {
    schema_version: u32,
    cause: &'a str,
    impact: ImpactRow<'a>,
    peer: &'a str,
    #[serde(borrow)]
    evidence: EvidenceRow<'a>,
    advice: &'a str,
}

#[derive(Serialize, Deserialize)]
struct ImpactRow<'a> {
    measured: &'a str,
    time_ms: Option<f64>,
    share_of_time: Option<f64>,
    rpcs_affected: Option<i64>,
    rpcs_total: i64,
    score: f64,
}

#[derive(Serialize, Deserialize)]
struct EvidenceRow<'a> {
    #[serde(borrow)]
    connections: Seq<'a, String>,
    #[serde(borrow)]
    xids: Seq<'a, String>,
    #[serde(borrow)]
    frames: I64s<'a>,
    from_s: Option<f64>,
    to_s: Option<f64>,
    #[serde(borrow)]
    examples: Seq<'a, String>,
}

impl<'a> From<&'a Cause> for CauseRow<'a> {
    fn from(c: &'a Cause) -> Self {
        let (i, e) = (&c.impact, &c.evidence);
        CauseRow {
            schema_version: super::SCHEMA_VERSION,
            cause: c.cause.as_str(),
            impact: ImpactRow {
                measured: &i.measured,
                time_ms: i.time_ms,
                share_of_time: i.share_of_time,
                rpcs_affected: i.rpcs_affected.map(i64_of),
                rpcs_total: i64_of(i.rpcs_total),
                score: i.score,
            },
            peer: c.peer.as_str(),
            evidence: EvidenceRow {
                connections: Seq(&e.connections),
                xids: Seq(&e.xids),
                frames: I64s(&e.frames),
                from_s: e.from_s,
                to_s: e.to_s,
                examples: Seq(&e.examples),
            },
            advice: &c.advice,
        }
    }
}

/// The `connections` table: each connection as the report's JSON has it.
pub(super) struct Connections;

impl View for Connections {
    const TABLE: &'static str = "connections";
    const UNIQUE: &'static [&'static str] = &["id", "first_ts_ns", "last_ts_ns"];
    type Row<'a> = ConnRow<'a>;
}

/// A row of `connections`. The fields of its structs are nullable, even
/// those always present with their struct, as the dataset has had them.
#[derive(Serialize, Deserialize)]
pub(super) struct ConnRow<'a> {
    schema_version: u32,
    #[serde(borrow)]
    id: Shown<'a>,
    #[serde(borrow)]
    client: Option<QpRow<'a>>,
    #[serde(borrow)]
    server: Option<QpRow<'a>>,
    fabric: Option<&'a str>,
    carries: Option<&'a str>,
    cm_state: &'a str,
    port: Option<u16>,
    path_mtu: Option<u32>,
    first_ts_ns: i64,
    last_ts_ns: i64,
    client_private: Option<PrivateRow>,
    server_private: Option<PrivateRow>,
    remote_invalidation: Option<bool>,
    call_inline_threshold: Option<u32>,
    reply_inline_threshold: Option<u32>,
    calls: i64,
    replies: i64,
    chunk_bytes: Option<i64>,
    remote_invalidations: i64,
    credits: Option<CreditsRow>,
    anomalies: i64,
    /// iWARP's MPA negotiation; null on other fabrics.
    iwarp: Option<IwarpConnRow>,
    congestion: CongestionRow,
}

/// A queue pair (`{addr, qpn}`).
#[derive(Serialize, Deserialize)]
struct QpRow<'a> {
    #[serde(borrow)]
    addr: Option<Shown<'a>>,
    qpn: Option<u32>,
}

impl<'a> QpRow<'a> {
    fn of(q: &'a Option<QpKeyView>) -> Option<Self> {
        q.as_ref().map(|q| QpRow {
            addr: Some(Shown(&q.addr.0)),
            qpn: Some(q.qpn),
        })
    }
}

/// RFC 8797 private data.
#[derive(Serialize, Deserialize)]
struct PrivateRow {
    version: Option<u8>,
    remote_invalidate: Option<bool>,
    send_size: Option<u32>,
    recv_size: Option<u32>,
}

impl From<&PrivateData> for PrivateRow {
    fn from(p: &PrivateData) -> Self {
        PrivateRow {
            version: p.version,
            remote_invalidate: p.remote_invalidate,
            send_size: p.send_size,
            recv_size: p.recv_size,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct CreditsRow {
    granted_min: Option<u32>,
    granted_max: Option<u32>,
    last_granted: Option<u32>,
    last_requested: Option<u32>,
    peak_in_flight: Option<u32>,
    at_limit_ms: Option<f64>,
    first_grant_wait_ms: Option<f64>,
}

/// An iWARP connection's MPA negotiation, as the report's JSON has it
/// (the struct is null on other fabrics).
#[derive(Serialize, Deserialize)]
struct IwarpConnRow {
    client_ird_ord: Option<IrdOrdRow>,
    server_ird_ord: Option<IrdOrdRow>,
}

/// RDMA Read queue depths (RFC 6581 5).
#[derive(Serialize, Deserialize)]
struct IrdOrdRow {
    ird: u16,
    ord: u16,
}

impl From<IrdOrdView> for IrdOrdRow {
    fn from(x: IrdOrdView) -> Self {
        IrdOrdRow {
            ird: x.ird,
            ord: x.ord,
        }
    }
}

/// A connection's congestion marks, as the report's JSON has them (less
/// the example frames).
#[derive(Serialize, Deserialize)]
struct CongestionRow {
    ecn_ce: i64,
    /// Null on iWARP (no BTH), as in the report's JSON.
    cnps: Option<i64>,
    fecn: Option<i64>,
    becn: Option<i64>,
    first_ts_ns: Option<i64>,
    last_ts_ns: Option<i64>,
}

impl<'a> From<&'a ConnectionView> for ConnRow<'a> {
    fn from(c: &'a ConnectionView) -> Self {
        let g = &c.congestion;
        ConnRow {
            schema_version: super::SCHEMA_VERSION,
            id: Shown(&c.id),
            client: QpRow::of(&c.client),
            server: QpRow::of(&c.server),
            fabric: c.fabric,
            carries: c.carries.map(|k| Carries::from(k).as_str()),
            cm_state: CmState::from(c.cm_state).as_str(),
            port: c.port,
            path_mtu: c.path_mtu,
            first_ts_ns: i64_of(c.first_ts_ns),
            last_ts_ns: i64_of(c.last_ts_ns),
            client_private: c.client_private.as_ref().map(PrivateRow::from),
            server_private: c.server_private.as_ref().map(PrivateRow::from),
            remote_invalidation: c.remote_invalidation,
            call_inline_threshold: c.call_inline_threshold,
            reply_inline_threshold: c.reply_inline_threshold,
            calls: i64_of(c.calls),
            replies: i64_of(c.replies),
            chunk_bytes: c.chunk_bytes.map(i64_of),
            remote_invalidations: i64_of(c.remote_invalidations),
            credits: c.credits.as_ref().map(|k| CreditsRow {
                granted_min: k.granted_min,
                granted_max: k.granted_max,
                last_granted: k.last_granted,
                last_requested: k.last_requested,
                peak_in_flight: Some(k.peak_in_flight),
                at_limit_ms: k.at_limit_ms,
                first_grant_wait_ms: k.first_grant_wait_ms,
            }),
            anomalies: i64_of(c.anomalies),
            iwarp: c.iwarp.as_ref().map(|w| IwarpConnRow {
                client_ird_ord: w.client_ird_ord.map(IrdOrdRow::from),
                server_ird_ord: w.server_ird_ord.map(IrdOrdRow::from),
            }),
            congestion: CongestionRow {
                ecn_ce: i64_of(g.ecn_ce),
                cnps: g.cnps.map(i64_of),
                fecn: g.fecn.map(i64_of),
                becn: g.becn.map(i64_of),
                first_ts_ns: g.first_ts_ns.map(i64_of),
                last_ts_ns: g.last_ts_ns.map(i64_of),
            },
        }
    }
}

/// A borrowed list written as its items' text (connection ids).
pub(super) struct ShownSeq<'a, T>(pub &'a [T]);

impl<T: Display> Serialize for ShownSeq<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|v| Shown(v)))
    }
}

impl<'de, T> Deserialize<'de> for ShownSeq<'_, T> {
    /// For tracing only: a list of strings.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<String>::deserialize(d)?;
        Ok(ShownSeq(&[]))
    }
}

/// A transaction's anomaly kinds, by name.
struct KindNames<'a>(&'a [Kind]);

impl Serialize for KindNames<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|k| k.as_str()))
    }
}

impl<'de> Deserialize<'de> for KindNames<'_> {
    /// For tracing only: a list of strings.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<String>::deserialize(d)?;
        Ok(KindNames(&[]))
    }
}

/// A transaction's chunk segments.
struct Segments<'a>(&'a [SegmentUse]);

impl Serialize for Segments<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(SegmentRow::from))
    }
}

impl<'de> Deserialize<'de> for Segments<'_> {
    /// For tracing only: a list of segments.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<SegmentRow<'de>>::deserialize(d)?;
        Ok(Segments(&[]))
    }
}

/// One chunk segment of a transaction.
#[derive(Serialize, Deserialize)]
struct SegmentRow<'a> {
    kind: &'a str,
    chunk: u32,
    position: Option<u32>,
    handle: u32,
    length: u32,
    /// An address: it may exceed INT64.
    offset: u64,
    bytes_moved: i64,
    reported_length: Option<u32>,
    remotely_invalidated: bool,
}

impl From<&SegmentUse> for SegmentRow<'static> {
    fn from(s: &SegmentUse) -> Self {
        SegmentRow {
            kind: match s.kind {
                ChunkKind::Read => "read",
                ChunkKind::Write => "write",
                ChunkKind::Reply => "reply",
            },
            chunk: s.chunk,
            position: s.position,
            handle: s.handle,
            length: s.length,
            offset: s.offset,
            bytes_moved: i64_of(s.bytes_moved),
            reported_length: s.reported_length,
            remotely_invalidated: s.remotely_invalidated,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct PhasesRow {
    until_first_rdma_ns: Option<i64>,
    read_ns: Option<i64>,
    write_ns: Option<i64>,
    reply_after_rdma_ns: Option<i64>,
}

/// An NFS READ/WRITE/COMMIT's range and reply (`nfs_io`); its fields are
/// nullable, `op` too, as the dataset has had them.
#[derive(Serialize, Deserialize)]
struct NfsIoRow<'a> {
    op: Option<&'a str>,
    /// An address: it may exceed INT64.
    offset: Option<u64>,
    count: Option<u32>,
    #[serde(borrow)]
    stable: Option<Shown<'a>>,
    reply_count: Option<u32>,
    eof: Option<bool>,
    #[serde(borrow)]
    committed: Option<Shown<'a>>,
}

impl<'a> From<&'a NfsIo> for NfsIoRow<'a> {
    fn from(i: &'a NfsIo) -> Self {
        NfsIoRow {
            op: Some(i.op),
            offset: i.offset,
            count: i.count,
            stable: i.stable.as_ref().map(|s| Shown(s)),
            reply_count: i.reply_count,
            eof: i.eof,
            committed: i.committed.as_ref().map(|s| Shown(s)),
        }
    }
}

/// The `transactions` table.
pub(super) struct Transactions;

impl View for Transactions {
    const TABLE: &'static str = "transactions";
    const UNIQUE: &'static [&'static str] = &[
        "xid",
        "call_frame",
        "call_ts_ns",
        "reply_frame",
        "reply_ts_ns",
        "latency_us",
    ];
    type Row<'a> = TxnRow<'a>;
}

/// A row of `transactions`: the transaction's JSON keys less the ladder,
/// the call's header in words and each segment's frames (see the module
/// documentation of `dataset`).
#[derive(Serialize, Deserialize)]
pub(super) struct TxnRow<'a> {
    schema_version: u32,
    #[serde(borrow)]
    connection: Shown<'a>,
    xid: u32,
    backchannel: bool,
    call_frame: i64,
    call_ts_ns: i64,
    reply_frame: Option<i64>,
    reply_ts_ns: Option<i64>,
    program: Option<u32>,
    program_name: Option<&'a str>,
    version: Option<u32>,
    minorversion: Option<u32>,
    procedure: Option<&'a str>,
    proc: Option<u32>,
    call_transfer: &'a str,
    reply_transfer: &'a str,
    call_len: u32,
    reply_len: Option<u32>,
    latency_us: Option<f64>,
    transmissions: u32,
    first_call_frame: i64,
    first_call_ts_ns: i64,
    #[serde(borrow)]
    earlier_connections: ShownSeq<'a, ConnId>,
    app_latency_us: Option<f64>,
    credits_requested: Option<u32>,
    credits_granted: Option<u32>,
    in_flight_at_call: u32,
    #[serde(borrow)]
    chunks: Segments<'a>,
    remote_invalidated_rkey: Option<u32>,
    bytes_moved: Option<i64>,
    round_trips: Option<u8>,
    responder_interrupts: u8,
    phases: PhasesRow,
    reply_status: Option<&'a str>,
    #[serde(borrow)]
    anomalies: KindNames<'a>,
    write_chunks: Option<u32>,
    empty_write_chunks: Option<u32>,
    unused_write_chunks: Option<u32>,
    cut: bool,
    nfs_status: Option<&'a str>,
    nfs_failed_op: Option<&'a str>,
    #[serde(borrow)]
    nfs_fh: Option<Shown<'a>>,
    nfs_fh_hash: Option<u32>,
    #[serde(borrow)]
    nfs_io: Option<NfsIoRow<'a>>,
    retry_of_xid: Option<u32>,
    #[serde(borrow)]
    retry_of_connection: Option<Shown<'a>>,
    retry_wait_us: Option<f64>,
    congested: bool,
}

impl<'a> From<&'a Transaction> for TxnRow<'a> {
    fn from(t: &'a Transaction) -> Self {
        let p = &t.phases;
        TxnRow {
            schema_version: super::SCHEMA_VERSION,
            connection: Shown(&t.connection),
            xid: t.xid,
            backchannel: t.backchannel,
            call_frame: i64_of(t.call_frame),
            call_ts_ns: i64_of(t.call_ts_ns),
            reply_frame: t.reply_frame.map(i64_of),
            reply_ts_ns: t.reply_ts_ns.map(i64_of),
            program: t.program,
            program_name: t.program_name,
            version: t.version,
            minorversion: t.minorversion,
            procedure: t.procedure.as_deref(),
            proc: t.proc,
            call_transfer: t.call_transfer.as_str(),
            reply_transfer: t.reply_transfer.as_str(),
            call_len: t.call_len,
            reply_len: t.reply_len,
            latency_us: t.latency_us,
            transmissions: t.transmissions,
            first_call_frame: i64_of(t.first_call_frame),
            first_call_ts_ns: i64_of(t.first_call_ts_ns),
            earlier_connections: ShownSeq(&t.earlier_connections),
            app_latency_us: t.app_latency_us,
            credits_requested: t.credits_requested,
            credits_granted: t.credits_granted,
            in_flight_at_call: t.in_flight_at_call,
            chunks: Segments(&t.chunks),
            remote_invalidated_rkey: t.remote_invalidated_rkey,
            bytes_moved: t.bytes_moved_known().map(i64_of),
            round_trips: t.round_trips_known(),
            responder_interrupts: t.responder_interrupts,
            phases: PhasesRow {
                until_first_rdma_ns: p.until_first_rdma_ns.map(i64_of),
                read_ns: p.read_ns.map(i64_of),
                write_ns: p.write_ns.map(i64_of),
                reply_after_rdma_ns: p.reply_after_rdma_ns.map(i64_of),
            },
            reply_status: t.reply_status.as_deref(),
            anomalies: KindNames(&t.anomalies),
            write_chunks: t.write_chunks,
            empty_write_chunks: t.empty_write_chunks,
            unused_write_chunks: t.unused_write_chunks,
            cut: t.cut,
            nfs_status: t.nfs_status.as_deref(),
            nfs_failed_op: t.nfs_failed_op.as_deref(),
            nfs_fh: t.nfs_fh.as_ref().map(|h| Shown(h)),
            nfs_fh_hash: t.nfs_fh_hash,
            nfs_io: t.nfs_io.as_ref().map(NfsIoRow::from),
            retry_of_xid: t.retry_of_xid,
            retry_of_connection: t.retry_of_connection.as_ref().map(|c| Shown(c)),
            retry_wait_us: t.retry_wait_us,
            congested: t.congested,
        }
    }
}

/// The `frames` table: the headers a dataset query filters on, named as
/// `frames --json` names them (the whole dissection is `frames --json`).
/// Every field of its structs is nullable, as the dataset has had them.
pub(super) struct Frames;

impl View for Frames {
    const TABLE: &'static str = "frames";
    const UNIQUE: &'static [&'static str] = &["frame", "ts_ns"];
    type Row<'a> = FrameRow<'a>;
}

/// A row of `frames`.
#[derive(Serialize, Deserialize)]
pub(super) struct FrameRow<'a> {
    schema_version: u32,
    frame: i64,
    ts_ns: i64,
    len: u32,
    payload_len: Option<u32>,
    icrc: Option<&'a str>,
    #[serde(borrow)]
    ip: Option<IpRow<'a>>,
    udp: Option<UdpRow>,
    #[serde(borrow)]
    bth: Option<BthRow<'a>>,
    reth: Option<RethRow>,
    #[serde(borrow)]
    aeth: Option<AethRow<'a>>,
    #[serde(borrow)]
    rpcrdma: Option<RpcRdmaRow<'a>>,
    /// iWARP's MPA setup frame or FPDUs the TCP segment starts with.
    #[serde(borrow)]
    iwarp: Option<IwarpRow<'a>>,
    #[serde(borrow)]
    error: Option<ErrorRow<'a>>,
}

/// The iWARP of one TCP segment, as `frames --json`'s `iwarp` has it.
#[derive(Serialize, Deserialize)]
struct IwarpRow<'a> {
    /// `setup`, `fpdus` or `continuation`.
    kind: Option<&'a str>,
    /// The MPA Request or Reply (kind `setup`).
    #[serde(borrow)]
    mpa: Option<MpaRow<'a>>,
    /// The FPDUs, in order (kind `fpdus`).
    #[serde(borrow)]
    fpdus: Option<Vec<FpduRow<'a>>>,
}

#[derive(Serialize, Deserialize)]
struct MpaRow<'a> {
    kind: Option<&'a str>,
    rev: Option<u8>,
    markers: Option<bool>,
    crc: Option<bool>,
    reject: Option<bool>,
    pd_length: Option<u16>,
    /// Revision 2's enhanced data; null in revision 1.
    ird: Option<u16>,
    ord: Option<u16>,
}

#[derive(Serialize, Deserialize)]
struct FpduRow<'a> {
    offset: Option<u32>,
    ulpdu_length: Option<u16>,
    /// `valid`, `invalid` or `none`.
    crc: Option<&'a str>,
    crc_value: Option<u32>,
    ddp: Option<DdpRow>,
    #[serde(borrow)]
    rdmap: Option<RdmapRow<'a>>,
    /// The RPC-over-RDMA header of the Send this FPDU starts.
    #[serde(borrow)]
    rpcrdma: Option<RpcRdmaRow<'a>>,
    /// Why the FPDU or its DDP/RDMAP did not parse.
    #[serde(borrow)]
    error: Option<FpduErrorRow<'a>>,
    /// Why its Send's RPC-over-RDMA did not parse.
    #[serde(borrow)]
    send_error: Option<FpduErrorRow<'a>>,
}

#[derive(Serialize, Deserialize)]
struct DdpRow {
    tagged: Option<bool>,
    last: Option<bool>,
    /// Tagged: the STag and Tagged Offset (an offset may exceed INT64).
    stag: Option<u32>,
    to: Option<u64>,
    /// Untagged: the queue, message sequence number and message offset.
    qn: Option<u32>,
    msn: Option<u32>,
    mo: Option<u32>,
}

#[derive(Serialize, Deserialize)]
struct RdmapRow<'a> {
    opcode: Option<u8>,
    opcode_name: Option<&'a str>,
    /// The STag a Send with Invalidate invalidates.
    inval_stag: Option<u32>,
}

/// An error of one FPDU: its message is made as the row is (the FPDU's
/// view does not outlive it).
#[derive(Serialize, Deserialize)]
struct FpduErrorRow<'a> {
    layer: Option<&'a str>,
    message: Option<String>,
    offset: Option<u32>,
}

impl<'a> FpduErrorRow<'a> {
    fn of(e: &ErrorView) -> Self {
        FpduErrorRow {
            layer: Some(e.layer),
            message: Some(e.message.0.to_string()),
            offset: Some(u32_of(e.offset)),
        }
    }
}

impl<'a> IwarpRow<'a> {
    fn of(v: &IwarpView<'a>) -> Self {
        IwarpRow {
            kind: Some(v.kind),
            mpa: v.mpa.map(|m| MpaRow {
                kind: Some(m.kind),
                rev: Some(m.rev),
                markers: Some(m.markers),
                crc: Some(m.crc),
                reject: Some(m.reject),
                pd_length: Some(m.pd_length),
                ird: m.ird,
                ord: m.ord,
            }),
            fpdus: v.fpdus.map(|l| l.iter().map(|f| FpduRow::of(&f)).collect()),
        }
    }
}

impl<'a> FpduRow<'a> {
    fn of(f: &FpduView<'a>) -> Self {
        FpduRow {
            offset: f.offset.map(u32_of),
            ulpdu_length: f.ulpdu_length,
            crc: f.crc,
            crc_value: f.crc_value,
            ddp: f.ddp.map(|d| DdpRow {
                tagged: Some(d.tagged),
                last: Some(d.last),
                stag: d.stag,
                to: d.to,
                qn: d.qn,
                msn: d.msn,
                mo: d.mo,
            }),
            rdmap: f.rdmap.map(|r| RdmapRow {
                opcode: Some(r.opcode),
                opcode_name: Some(r.opcode_name),
                inval_stag: r.inval_stag,
            }),
            rpcrdma: f.rpcrdma.as_ref().map(RpcRdmaRow::of),
            error: f.error.as_ref().map(FpduErrorRow::of),
            send_error: f.send_error.as_ref().map(FpduErrorRow::of),
        }
    }
}

#[derive(Serialize, Deserialize)]
struct IpRow<'a> {
    version: Option<u8>,
    #[serde(borrow)]
    src: Option<Shown<'a>>,
    #[serde(borrow)]
    dst: Option<Shown<'a>>,
    proto: Option<u8>,
}

#[derive(Serialize, Deserialize)]
struct UdpRow {
    src_port: Option<u16>,
    dst_port: Option<u16>,
    length: Option<u16>,
}

#[derive(Serialize, Deserialize)]
struct BthRow<'a> {
    opcode: Option<u8>,
    opcode_name: Option<&'a str>,
    dest_qp: Option<u32>,
    psn: Option<u32>,
    ack_req: Option<bool>,
    se: Option<bool>,
    p_key: Option<u16>,
}

#[derive(Serialize, Deserialize)]
struct RethRow {
    /// An address: it may exceed INT64.
    va: Option<u64>,
    r_key: Option<u32>,
    dma_length: Option<u32>,
}

#[derive(Serialize, Deserialize)]
struct AethRow<'a> {
    kind: Option<&'a str>,
    syndrome: Option<u8>,
    msn: Option<u32>,
    nak_name: Option<&'a str>,
}

#[derive(Serialize, Deserialize)]
struct RpcRdmaRow<'a> {
    xid: Option<u32>,
    vers: Option<u32>,
    credits: Option<u32>,
    proc: Option<&'a str>,
}

#[derive(Serialize, Deserialize)]
struct ErrorRow<'a> {
    layer: Option<&'a str>,
    #[serde(borrow)]
    message: Option<Shown<'a>>,
    offset: Option<u32>,
}

fn u32_of(v: usize) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

impl<'a> From<&'a FrameView<'_>> for FrameRow<'a> {
    fn from(v: &'a FrameView<'_>) -> Self {
        FrameRow {
            schema_version: super::SCHEMA_VERSION,
            frame: i64_of(v.frame),
            ts_ns: i64_of(v.ts_ns),
            len: v.len,
            payload_len: v.payload_len.map(u32_of),
            icrc: v.icrc,
            ip: v.ip.as_ref().and_then(IpRow::of),
            udp: v.udp.map(|u| UdpRow {
                src_port: Some(u.src_port),
                dst_port: Some(u.dst_port),
                length: Some(u.length),
            }),
            bth: v.bth.map(|b| BthRow {
                opcode: Some(b.opcode),
                opcode_name: Some(b.opcode_name),
                dest_qp: Some(b.dest_qp),
                psn: Some(b.psn),
                ack_req: Some(b.ack_req),
                se: Some(b.se),
                p_key: Some(b.p_key),
            }),
            reth: v.reth.map(|r| RethRow {
                va: Some(r.va),
                r_key: Some(r.r_key),
                dma_length: Some(r.dma_length),
            }),
            aeth: v.aeth.map(|a| AethRow {
                kind: Some(a.kind),
                syndrome: Some(a.syndrome),
                msn: Some(a.msn),
                nak_name: a.nak_name,
            }),
            rpcrdma: v.rpcrdma.as_ref().map(RpcRdmaRow::of),
            iwarp: v.iwarp.as_ref().map(IwarpRow::of),
            error: v.error.as_ref().map(ErrorRow::of),
        }
    }
}

impl<'a> RpcRdmaRow<'a> {
    fn of(r: &RpcRdmaView<'a>) -> Self {
        RpcRdmaRow {
            xid: Some(r.xid),
            vers: Some(r.vers),
            credits: Some(r.credits),
            proc: Some(r.proc),
        }
    }
}

impl<'a> ErrorRow<'a> {
    fn of(e: &'a ErrorView) -> Self {
        ErrorRow {
            layer: Some(e.layer),
            message: Some(Shown(&e.message.0)),
            offset: Some(u32_of(e.offset)),
        }
    }
}

impl<'a> IpRow<'a> {
    fn of(ip: &'a IpView) -> Option<Self> {
        let (version, src, dst, proto): (u8, &'a dyn Display, &'a dyn Display, u8) = match ip {
            IpView::V4(h) => (4, &h.src, &h.dst, h.proto),
            IpView::V6(h) => (6, &h.src, &h.dst, h.proto),
            // A kind of IP header this build does not know: null, not a guess.
            _ => return None,
        };
        Some(IpRow {
            version: Some(version),
            src: Some(Shown(src)),
            dst: Some(Shown(dst)),
            proto: Some(proto),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;

    fn render(out: &mut String, depth: usize, f: &Field) {
        let null = if f.is_nullable() { "" } else { " not null" };
        let (name, t) = (f.name(), f.data_type());
        let children: Vec<&Field> = match t {
            DataType::Struct(fs) => fs.iter().map(|f| f.as_ref()).collect(),
            DataType::List(item) => vec![item.as_ref()],
            _ => Vec::new(),
        };
        let shown = match t {
            DataType::Struct(_) => "Struct".to_string(),
            DataType::List(_) => "List".to_string(),
            t => format!("{t:?}"),
        };
        let _ = writeln!(out, "{:w$}{name}: {shown}{null}", "", w = depth * 2);
        for c in children {
            render(out, depth + 1, c);
        }
    }

    /// The dataset's columns, pinned: a change to a row type that changes
    /// a column (name, type, nullability, list item) shows here first.
    /// Taken when the row types replaced the hand-written builders, whose
    /// files they write byte for byte.
    #[test]
    fn columns_are_pinned() {
        let mut out = String::new();
        for (table, schema) in super::super::schemas().unwrap() {
            let _ = writeln!(out, "{table}");
            for f in schema.fields() {
                render(&mut out, 1, f);
            }
        }
        insta::assert_snapshot!(out);
    }

    #[test]
    fn the_dataset_rules_apply_at_any_depth() {
        #[derive(Deserialize)]
        #[allow(dead_code)]
        struct Inner {
            last_ts_ns: Option<i64>,
            count: i64,
        }
        #[derive(Deserialize)]
        #[allow(dead_code)]
        struct Row {
            ts_ns: i64,
            inner: Vec<Inner>,
            names: Vec<String>,
            va: u64,
        }
        let s = schema_of::<Row>().unwrap();
        let ts = DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()));
        assert_eq!(s.field(0).data_type(), &ts);
        assert!(!s.field(0).is_nullable());
        let DataType::List(item) = s.field(1).data_type() else {
            panic!("{:?}", s.field(1));
        };
        assert_eq!((item.name().as_str(), item.is_nullable()), ("item", true));
        let DataType::Struct(inner) = item.data_type() else {
            panic!("{item:?}");
        };
        assert_eq!(inner[0].data_type(), &ts);
        assert!(inner[0].is_nullable());
        assert_eq!(inner[1].data_type(), &DataType::Int64);
        let DataType::List(names) = s.field(2).data_type() else {
            panic!("{:?}", s.field(2));
        };
        assert_eq!(names.data_type(), &DataType::Utf8);
        assert_eq!(s.field(3).data_type(), &DataType::UInt64);
    }
}
