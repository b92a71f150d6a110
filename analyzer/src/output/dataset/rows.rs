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
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_arrow::schema::{SchemaLike, TracingOptions};

use super::Rows;
use crate::diagnosis::Cause;
use crate::engine::{Anomaly, Carries, QpKey};
use crate::output::schema::{ConnectionView, PrivateData};

/// A table whose rows are a view type.
pub(super) trait View {
    /// The table's folder name.
    const TABLE: &'static str;
    /// Top-level columns whose values hardly repeat (written without a
    /// dictionary).
    const UNIQUE: &'static [&'static str];
    /// The row type, as traced for the schema (the `'static` borrow is
    /// never used: tracing reads the type, not a value).
    type Row: Deserialize<'static>;
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
        DataType::List(item) => super::list_of(dataset_field(item).data_type().clone()),
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
        let schema = schema_of::<V::Row>()?;
        let builder = serde_arrow::ArrayBuilder::from_arrow(schema.fields())
            .map_err(std::io::Error::other)?;
        Ok(ViewRows {
            builder,
            len: 0,
            error: None,
            view: PhantomData,
        })
    }

    /// Adds one row; `row` is `V::Row` borrowing from a record.
    pub(super) fn push(&mut self, row: impl Serialize) {
        match self.builder.push(row) {
            Ok(()) => self.len += 1,
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
    }
}

impl<V: View> Rows for ViewRows<V> {
    const TABLE: &'static str = V::TABLE;
    const UNIQUE: &'static [&'static str] = V::UNIQUE;

    fn schema() -> std::io::Result<SchemaRef> {
        schema_of::<V::Row>()
    }

    fn len(&self) -> usize {
        self.len
    }

    fn finish(&mut self) -> std::io::Result<RecordBatch> {
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
    type Row = AnomalyRow<'static>;
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
}

impl<'a> From<&'a Anomaly> for AnomalyRow<'a> {
    fn from(a: &'a Anomaly) -> Self {
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
        }
    }
}

/// The `diagnosis` table: a capture's causes (`report --json`'s
/// `diagnosis`, one row per cause; `impact.score` orders them).
pub(super) struct Causes;

impl View for Causes {
    const TABLE: &'static str = "diagnosis";
    const UNIQUE: &'static [&'static str] = &["impact"];
    type Row = CauseRow<'static>;
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
    type Row = ConnRow<'static>;
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
    chunk_bytes: i64,
    remote_invalidations: i64,
    credits: Option<CreditsRow>,
    anomalies: i64,
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
    fn of(q: &'a Option<QpKey>) -> Option<Self> {
        q.as_ref().map(|q| QpRow {
            addr: Some(Shown(&q.addr)),
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
}

/// A connection's congestion marks, as the report's JSON has them (less
/// the example frames).
#[derive(Serialize, Deserialize)]
struct CongestionRow {
    ecn_ce: i64,
    cnps: i64,
    fecn: i64,
    becn: i64,
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
            carries: c.carries.map(Carries::as_str),
            cm_state: c.cm_state.as_str(),
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
            chunk_bytes: i64_of(c.chunk_bytes),
            remote_invalidations: i64_of(c.remote_invalidations),
            credits: c.credits.as_ref().map(|k| CreditsRow {
                granted_min: k.granted_min,
                granted_max: k.granted_max,
                last_granted: k.last_granted,
                last_requested: k.last_requested,
                peak_in_flight: Some(k.peak_in_flight),
                at_limit_ms: Some(k.at_limit_ms),
            }),
            anomalies: i64_of(c.anomalies),
            congestion: CongestionRow {
                ecn_ce: i64_of(g.ecn_ce),
                cnps: i64_of(g.cnps),
                fecn: i64_of(g.fecn),
                becn: i64_of(g.becn),
                first_ts_ns: g.first_ts_ns.map(i64_of),
                last_ts_ns: g.last_ts_ns.map(i64_of),
            },
        }
    }
}
