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
use crate::engine::Anomaly;

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
