//! `export`: captures as one Parquet dataset that Spark, DuckDB or Trino
//! read whole: transactions, anomalies and connections (and, on request,
//! every frame), one folder per table, hive-style partitions below.
//!
//! ```text
//!  DIR/transactions/host=H/capture=C/date=YYYY-MM-DD/part-0.parquet
//!  DIR/anomalies/...    DIR/connections/...    DIR/frames/... (--frames)
//!  DIR/diagnosis/...    (the causes `report` leads with, one row each)
//! ```
//!
//! Columns are named as the JSON keys of the same records (`schema/`,
//! [`schema`](super::schema)), so a query reads as the JSON does; nested
//! objects are structs, arrays are lists. Times since the epoch (`*_ts_ns`)
//! are Parquet timestamps (nanoseconds, UTC); other 64-bit unsigned JSON
//! integers are INT64 (Spark reads UINT64 as a decimal), except addresses
//! (`va`, `offset`), which can exceed INT64 and stay UINT64. Unknown is
//! null. The partition values (host, capture, date) are in the paths only,
//! as Spark and DuckDB expect: `date` is each row's UTC day (a
//! transaction's call, an anomaly's finding, a connection's first frame),
//! or `__HIVE_DEFAULT_PARTITION__` when it has no time.
//!
//! Left out of the transactions table, because a dataset query does not
//! read them and they would dominate its size: the ladder and the call's
//! header in words (`transactions --json` has them), and each chunk
//! segment's frame list.
//!
//! Memory stays bounded however long the capture: rows go out in batches
//! of [`BATCH_ROWS`] into the open file of their (table, date), which holds
//! at most one row group ([`Dataset::row_group_rows`]) before writing it.
//! Files are written under a hidden temporary name and renamed when
//! complete, so a reader never sees half a file; at most
//! [`MAX_OPEN_PARTITIONS`] per table are open at once, so a capture over
//! many days has several parts per day (`part-0.parquet`, `part-1...`).
//!
//! A capture already in the dataset is not written over: [`Dataset::claim`]
//! refuses it unless asked to replace it, and then sets the old one aside
//! until the new one is whole ([`Claim`]); an export that fails removes
//! what it wrote of the capture and puts back what it replaced.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{
    ArrayBuilder, BooleanBuilder, Float64Builder, Int64Builder, StringBuilder,
    TimestampNanosecondBuilder, UInt16Builder, UInt32Builder, UInt64Builder, UInt8Builder,
};
use arrow_array::{ArrayRef, ListArray, RecordBatch, StructArray};
use arrow_buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;
use rdma_dissectors::stack::{self, Dissection};
use rdma_dissectors::view::{FrameView, IpView};

use super::schema::{ConnectionView, SCHEMA_VERSION};
use crate::diagnosis::Diagnosis;
use crate::engine::{
    Anomaly, ChunkKind, ConnId, Engine, Event, Finding, NfsIo, SegmentUse, Transaction,
};
use crate::files::AtomicFile;
use crate::pipeline::{End, Flow, Notice, Progress, Sink};
use rows::{Anomalies, AnomalyRow, CauseRow, Causes, ConnRow, Connections, View, ViewRows};

mod rows;

/// Rows gathered before they go to a file as one Arrow batch.
pub const BATCH_ROWS: usize = 8192;

/// Where one capture's rows go: the dataset's folder and the partition
/// values every row of the capture shares.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// The dataset's folder (one folder per table below it).
    pub root: PathBuf,
    /// The host the capture comes from (`host=`).
    pub host: String,
    /// The capture's name (`capture=`).
    pub capture: String,
    /// Rows per row group at most.
    pub row_group_rows: usize,
}

/// A partition value as a path segment: letters, digits, `.`, `-` and `_`
/// stay; anything else (a `/`, a `=`, a space) becomes `_`, so a name can
/// neither leave its folder nor need escaping in a query.
pub fn partition_value(s: &str) -> String {
    let v: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    // `.` and `..` would name folders that are not this one; a leading dot
    // would hide the partition from readers.
    match v.trim_start_matches('.') {
        "" => "_".to_string(),
        t if t.len() == v.len() => v,
        t => format!("_{t}"),
    }
}

/// The UTC day of `ts_ns` (ns since the epoch) as `YYYY-MM-DD`.
pub fn utc_date(ts_ns: u64) -> String {
    let days = (ts_ns / 86_400_000_000_000) as i64;
    // Days since 1970-01-01 to a civil date, counting in 400-year eras of
    // 146097 days that start on 1 March (so the leap day is a year's last).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// The partition value of a row without a time (Hive's, which Spark reads
/// as null).
pub const NO_DATE: &str = "__HIVE_DEFAULT_PARTITION__";

fn ts_type() -> DataType {
    DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()))
}

fn field(name: &str, t: DataType, nullable: bool) -> Field {
    Field::new(name, t, nullable)
}

fn list_of(item: DataType) -> DataType {
    DataType::List(Arc::new(Field::new("item", item, true)))
}

/// One table's rows in the making: typed columns, turned into a batch.
trait Rows {
    /// The table's folder name.
    const TABLE: &'static str;
    /// Top-level columns whose values hardly repeat (written without a
    /// dictionary).
    const UNIQUE: &'static [&'static str];
    /// The columns.
    fn schema() -> io::Result<SchemaRef>;
    /// Rows held.
    fn len(&self) -> usize;
    /// The rows held as a batch; empties the builder.
    fn finish(&mut self) -> io::Result<RecordBatch>;
}

/// A batch of hand-built columns in `R`'s schema order.
fn batch_of<R: Rows>(columns: Vec<ArrayRef>) -> io::Result<RecordBatch> {
    RecordBatch::try_new(R::schema()?, columns).map_err(io::Error::other)
}

/// One table of one capture: its open files, one per date, at most
/// [`MAX_OPEN_PARTITIONS`] at once.
struct Table<R: Rows> {
    dir: PathBuf,
    row_group_rows: usize,
    open: BTreeMap<String, Open<R>>,
    /// The next part number of each date a file was opened for: a date
    /// whose file was closed to make room gets a new part when its rows
    /// come back.
    parts: BTreeMap<String, u32>,
    /// Files closed and renamed into place so far.
    done: Vec<PathBuf>,
    /// Ticks for least-recently-used order.
    clock: u64,
    new_rows: fn() -> io::Result<R>,
}

/// A date's file being written, its rows not yet written, and when it was
/// last written to.
struct Open<R> {
    rows: R,
    file: PartFile,
    used: u64,
}

/// Files a table keeps open at once. Each holds up to a row group in
/// memory and a descriptor, so without a bound a capture spanning 10,000
/// UTC days took 2.2 GB and 10,001 descriptors (issue 23); beyond it the
/// least recently written file is finished, and its date's later rows go
/// to a new part.
pub const MAX_OPEN_PARTITIONS: usize = 16;

/// A Parquet file being written under its temporary name.
struct PartFile {
    writer: ArrowWriter<AtomicFile>,
}

impl<R: Rows> Table<R> {
    fn new(d: &Dataset, new_rows: fn() -> io::Result<R>) -> Self {
        Table {
            dir: d.capture_dir(R::TABLE),
            row_group_rows: d.row_group_rows.max(1),
            open: BTreeMap::new(),
            parts: BTreeMap::new(),
            done: Vec::new(),
            clock: 0,
            new_rows,
        }
    }

    /// Adds a row to the rows of `date` (opening its file if new) with
    /// `push`, and writes them out as a batch when there are enough.
    fn add(&mut self, date: &str, push: impl FnOnce(&mut R)) -> io::Result<()> {
        self.clock += 1;
        if !self.open.contains_key(date) {
            if self.open.len() >= MAX_OPEN_PARTITIONS {
                self.close_least_recent()?;
            }
            let file = self.open_file(date)?;
            let open = Open {
                rows: (self.new_rows)()?,
                file,
                used: self.clock,
            };
            self.open.insert(date.to_string(), open);
        }
        let Some(open) = self.open.get_mut(date) else {
            return Err(io::Error::other("a partition file just opened is gone"));
        };
        open.used = self.clock;
        push(&mut open.rows);
        if open.rows.len() >= BATCH_ROWS {
            write_batch(&mut open.rows, &mut open.file)?;
        }
        Ok(())
    }

    fn close_least_recent(&mut self) -> io::Result<()> {
        let Some(date) = self
            .open
            .iter()
            .min_by_key(|(_, o)| o.used)
            .map(|(d, _)| d.clone())
        else {
            return Ok(());
        };
        if let Some(open) = self.open.remove(&date) {
            self.done.push(finish_part(open)?);
        }
        Ok(())
    }

    fn open_file(&mut self, date: &str) -> io::Result<PartFile> {
        let dir = self.dir.join(format!("date={date}"));
        std::fs::create_dir_all(&dir)?;
        let part = self.parts.entry(date.to_string()).or_insert(0);
        let path = dir.join(format!("part-{part}.parquet"));
        *part += 1;
        let mut props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_row_count(Some(self.row_group_rows))
            // Row-group statistics are what readers prune with; per-page
            // ones cost the writer more than they save a reader here.
            .set_statistics_enabled(EnabledStatistics::Chunk)
            .set_created_by(format!(
                "rdma-analyzer {} export (schema version {SCHEMA_VERSION})",
                env!("CARGO_PKG_VERSION")
            ));
        // A dictionary of values that hardly repeat (frame numbers, times,
        // XIDs) is built only to be thrown away: plain encoding for those.
        for col in R::UNIQUE {
            props = props.set_column_dictionary_enabled(ColumnPath::from(col.to_string()), false);
        }
        let writer = ArrowWriter::try_new(
            AtomicFile::create(&path)?,
            R::schema()?,
            Some(props.build()),
        )
        .map_err(io::Error::other)?;
        Ok(PartFile { writer })
    }

    /// Writes what is held, closes every file and gives it its name.
    /// Returns the files written.
    fn close(&mut self) -> io::Result<Vec<PathBuf>> {
        let mut first_error = None;
        for (_, open) in std::mem::take(&mut self.open) {
            match finish_part(open) {
                Ok(p) => self.done.push(p),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(std::mem::take(&mut self.done)),
        }
    }
}

/// Writes a file's last rows, closes it and renames it into place.
fn finish_part<R: Rows>(mut open: Open<R>) -> io::Result<PathBuf> {
    write_batch(&mut open.rows, &mut open.file)?;
    let file = open.file.writer.into_inner().map_err(io::Error::other)?;
    let path = file.target().to_path_buf();
    file.commit_unsynced()?;
    Ok(path)
}

fn write_batch<R: Rows>(rows: &mut R, file: &mut PartFile) -> io::Result<()> {
    if rows.len() == 0 {
        return Ok(());
    }
    let batch = rows.finish()?;
    file.writer.write(&batch).map_err(io::Error::other)
}

/// `connection` as its JSON string (`c3`).
fn conn_str(c: Option<ConnId>, b: &mut StringBuilder) {
    match c {
        Some(c) => {
            // Written into the builder's buffer: no String per row.
            let _ = write!(b, "{c}");
            b.append_value("");
        }
        None => b.append_null(),
    }
}

fn i64_of(v: u64) -> i64 {
    // Frame numbers, byte counts and durations stay far below 2^63.
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The `transactions` table.
struct TxnRows {
    schema_version: UInt32Builder,
    connection: StringBuilder,
    xid: UInt32Builder,
    backchannel: BooleanBuilder,
    call_frame: Int64Builder,
    call_ts_ns: TimestampNanosecondBuilder,
    reply_frame: Int64Builder,
    reply_ts_ns: TimestampNanosecondBuilder,
    program: UInt32Builder,
    program_name: StringBuilder,
    version: UInt32Builder,
    procedure: StringBuilder,
    proc: UInt32Builder,
    call_transfer: StringBuilder,
    reply_transfer: StringBuilder,
    call_len: UInt32Builder,
    reply_len: UInt32Builder,
    latency_us: Float64Builder,
    transmissions: UInt32Builder,
    first_call_frame: Int64Builder,
    first_call_ts_ns: TimestampNanosecondBuilder,
    earlier_connections: StringList,
    app_latency_us: Float64Builder,
    credits_requested: UInt32Builder,
    credits_granted: UInt32Builder,
    in_flight_at_call: UInt32Builder,
    chunks: Segments,
    remote_invalidated_rkey: UInt32Builder,
    round_trips: UInt8Builder,
    responder_interrupts: UInt8Builder,
    phases: [Int64Builder; 4],
    reply_status: StringBuilder,
    anomalies: StringList,
    write_chunks: UInt32Builder,
    empty_write_chunks: UInt32Builder,
    unused_write_chunks: UInt32Builder,
    cut: BooleanBuilder,
    nfs_status: StringBuilder,
    nfs_failed_op: StringBuilder,
    nfs_fh: StringBuilder,
    nfs_fh_hash: UInt32Builder,
    nfs_io: NfsIoColumn,
    retry_of_xid: UInt32Builder,
    retry_of_connection: StringBuilder,
    retry_wait_us: Float64Builder,
    congested: BooleanBuilder,
}

/// The offsets of a list column: where each row's items start, and the end.
struct Offsets(Vec<i32>);

impl Offsets {
    fn new() -> Self {
        Offsets(vec![0])
    }

    /// One more row of `len` items.
    fn push(&mut self, len: usize) {
        let last = self.0.last().copied().unwrap_or(0);
        // A batch holds at most BATCH_ROWS rows of capped lists: far below 2^31.
        self.0
            .push(last + i32::try_from(len).unwrap_or(i32::MAX - last));
    }

    fn take(&mut self) -> OffsetBuffer<i32> {
        OffsetBuffer::new(ScalarBuffer::from(std::mem::replace(&mut self.0, vec![0])))
    }
}

/// A list column from its offsets and its items.
fn list(offsets: &mut Offsets, item: DataType, values: ArrayRef) -> ArrayRef {
    Arc::new(ListArray::new(
        Arc::new(Field::new("item", item, true)),
        offsets.take(),
        values,
        None,
    ))
}

/// Which rows of a struct column that may be null are present.
#[derive(Default)]
struct Present(Vec<bool>);

impl Present {
    fn push(&mut self, present: bool) {
        self.0.push(present);
    }

    fn take(&mut self) -> Option<NullBuffer> {
        let v = std::mem::take(&mut self.0);
        if v.iter().all(|p| *p) {
            None
        } else {
            Some(NullBuffer::from(v))
        }
    }
}

fn struct_array(fields: Fields, arrays: Vec<ArrayRef>, nulls: Option<NullBuffer>) -> ArrayRef {
    Arc::new(StructArray::new(fields, arrays, nulls))
}

fn ts_builder() -> TimestampNanosecondBuilder {
    TimestampNanosecondBuilder::new().with_timezone("UTC")
}

fn ts_value(b: &mut TimestampNanosecondBuilder, ts_ns: Option<u64>) {
    b.append_option(ts_ns.map(i64_of));
}

fn finish<B: ArrayBuilder>(b: &mut B) -> ArrayRef {
    b.finish()
}

/// A list of strings per row (a transaction's anomaly kinds).
struct StringList {
    offsets: Offsets,
    values: StringBuilder,
}

impl StringList {
    fn new() -> Self {
        StringList {
            offsets: Offsets::new(),
            values: StringBuilder::new(),
        }
    }

    fn push<'s>(&mut self, items: impl IntoIterator<Item = &'s str>) {
        let mut n = 0;
        for s in items {
            self.values.append_value(s);
            n += 1;
        }
        self.offsets.push(n);
    }

    fn finish(&mut self) -> ArrayRef {
        let values = finish(&mut self.values);
        list(&mut self.offsets, DataType::Utf8, values)
    }
}

/// A transaction's chunk segments: a list of structs per row.
struct Segments {
    offsets: Offsets,
    kind: StringBuilder,
    chunk: UInt32Builder,
    position: UInt32Builder,
    handle: UInt32Builder,
    length: UInt32Builder,
    offset: UInt64Builder,
    bytes_moved: Int64Builder,
    reported_length: UInt32Builder,
    remotely_invalidated: BooleanBuilder,
}

impl Segments {
    fn fields() -> Fields {
        Fields::from(vec![
            field("kind", DataType::Utf8, false),
            field("chunk", DataType::UInt32, false),
            field("position", DataType::UInt32, true),
            field("handle", DataType::UInt32, false),
            field("length", DataType::UInt32, false),
            field("offset", DataType::UInt64, false),
            field("bytes_moved", DataType::Int64, false),
            field("reported_length", DataType::UInt32, true),
            field("remotely_invalidated", DataType::Boolean, false),
        ])
    }

    fn new() -> Self {
        Segments {
            offsets: Offsets::new(),
            kind: StringBuilder::new(),
            chunk: UInt32Builder::new(),
            position: UInt32Builder::new(),
            handle: UInt32Builder::new(),
            length: UInt32Builder::new(),
            offset: UInt64Builder::new(),
            bytes_moved: Int64Builder::new(),
            reported_length: UInt32Builder::new(),
            remotely_invalidated: BooleanBuilder::new(),
        }
    }

    fn push(&mut self, segs: &[SegmentUse]) {
        for s in segs {
            self.kind.append_value(match s.kind {
                ChunkKind::Read => "read",
                ChunkKind::Write => "write",
                ChunkKind::Reply => "reply",
            });
            self.chunk.append_value(s.chunk);
            self.position.append_option(s.position);
            self.handle.append_value(s.handle);
            self.length.append_value(s.length);
            self.offset.append_value(s.offset);
            self.bytes_moved.append_value(i64_of(s.bytes_moved));
            self.reported_length.append_option(s.reported_length);
            self.remotely_invalidated
                .append_value(s.remotely_invalidated);
        }
        self.offsets.push(segs.len());
    }

    fn finish(&mut self) -> ArrayRef {
        let values = struct_array(
            Self::fields(),
            vec![
                finish(&mut self.kind),
                finish(&mut self.chunk),
                finish(&mut self.position),
                finish(&mut self.handle),
                finish(&mut self.length),
                finish(&mut self.offset),
                finish(&mut self.bytes_moved),
                finish(&mut self.reported_length),
                finish(&mut self.remotely_invalidated),
            ],
            None,
        );
        list(&mut self.offsets, DataType::Struct(Self::fields()), values)
    }
}

fn phases_fields() -> Fields {
    Fields::from(vec![
        field("until_first_rdma_ns", DataType::Int64, true),
        field("read_ns", DataType::Int64, true),
        field("write_ns", DataType::Int64, true),
        field("reply_after_rdma_ns", DataType::Int64, true),
    ])
}

impl TxnRows {
    fn new() -> Self {
        TxnRows {
            schema_version: UInt32Builder::new(),
            connection: StringBuilder::new(),
            xid: UInt32Builder::new(),
            backchannel: BooleanBuilder::new(),
            call_frame: Int64Builder::new(),
            call_ts_ns: ts_builder(),
            reply_frame: Int64Builder::new(),
            reply_ts_ns: ts_builder(),
            program: UInt32Builder::new(),
            program_name: StringBuilder::new(),
            version: UInt32Builder::new(),
            procedure: StringBuilder::new(),
            proc: UInt32Builder::new(),
            call_transfer: StringBuilder::new(),
            reply_transfer: StringBuilder::new(),
            call_len: UInt32Builder::new(),
            reply_len: UInt32Builder::new(),
            latency_us: Float64Builder::new(),
            transmissions: UInt32Builder::new(),
            first_call_frame: Int64Builder::new(),
            first_call_ts_ns: ts_builder(),
            earlier_connections: StringList::new(),
            app_latency_us: Float64Builder::new(),
            credits_requested: UInt32Builder::new(),
            credits_granted: UInt32Builder::new(),
            in_flight_at_call: UInt32Builder::new(),
            chunks: Segments::new(),
            remote_invalidated_rkey: UInt32Builder::new(),
            round_trips: UInt8Builder::new(),
            responder_interrupts: UInt8Builder::new(),
            phases: std::array::from_fn(|_| Int64Builder::new()),
            reply_status: StringBuilder::new(),
            anomalies: StringList::new(),
            write_chunks: UInt32Builder::new(),
            empty_write_chunks: UInt32Builder::new(),
            unused_write_chunks: UInt32Builder::new(),
            cut: BooleanBuilder::new(),
            nfs_status: StringBuilder::new(),
            nfs_failed_op: StringBuilder::new(),
            nfs_fh: StringBuilder::new(),
            nfs_fh_hash: UInt32Builder::new(),
            nfs_io: NfsIoColumn::new(),
            retry_of_xid: UInt32Builder::new(),
            retry_of_connection: StringBuilder::new(),
            retry_wait_us: Float64Builder::new(),
            congested: BooleanBuilder::new(),
        }
    }

    fn push(&mut self, t: &Transaction) {
        self.schema_version.append_value(SCHEMA_VERSION);
        conn_str(Some(t.connection), &mut self.connection);
        self.xid.append_value(t.xid);
        self.backchannel.append_value(t.backchannel);
        self.call_frame.append_value(i64_of(t.call_frame));
        ts_value(&mut self.call_ts_ns, Some(t.call_ts_ns));
        self.reply_frame.append_option(t.reply_frame.map(i64_of));
        ts_value(&mut self.reply_ts_ns, t.reply_ts_ns);
        self.program.append_option(t.program);
        self.program_name.append_option(t.program_name);
        self.version.append_option(t.version);
        self.procedure.append_option(t.procedure.as_deref());
        self.proc.append_option(t.proc);
        self.call_transfer.append_value(t.call_transfer.as_str());
        self.reply_transfer.append_value(t.reply_transfer.as_str());
        self.call_len.append_value(t.call_len);
        self.reply_len.append_option(t.reply_len);
        self.latency_us.append_option(t.latency_us);
        self.transmissions.append_value(t.transmissions);
        self.first_call_frame
            .append_value(i64_of(t.first_call_frame));
        ts_value(&mut self.first_call_ts_ns, Some(t.first_call_ts_ns));
        let earlier: Vec<String> = t
            .earlier_connections
            .iter()
            .map(ToString::to_string)
            .collect();
        self.earlier_connections
            .push(earlier.iter().map(String::as_str));
        self.app_latency_us.append_option(t.app_latency_us);
        self.credits_requested.append_option(t.credits_requested);
        self.credits_granted.append_option(t.credits_granted);
        self.in_flight_at_call.append_value(t.in_flight_at_call);
        self.chunks.push(&t.chunks);
        self.remote_invalidated_rkey
            .append_option(t.remote_invalidated_rkey);
        self.round_trips.append_value(t.round_trips);
        self.responder_interrupts
            .append_value(t.responder_interrupts);
        let p = t.phases;
        for (b, v) in self.phases.iter_mut().zip([
            p.until_first_rdma_ns,
            p.read_ns,
            p.write_ns,
            p.reply_after_rdma_ns,
        ]) {
            b.append_option(v.map(i64_of));
        }
        self.reply_status.append_option(t.reply_status.as_deref());
        self.anomalies.push(t.anomalies.iter().map(|k| k.as_str()));
        self.write_chunks.append_option(t.write_chunks);
        self.empty_write_chunks.append_option(t.empty_write_chunks);
        self.unused_write_chunks
            .append_option(t.unused_write_chunks);
        self.cut.append_value(t.cut);
        self.nfs_status.append_option(t.nfs_status.as_deref());
        self.nfs_failed_op.append_option(t.nfs_failed_op.as_deref());
        self.nfs_fh
            .append_option(t.nfs_fh.as_ref().map(ToString::to_string));
        self.nfs_fh_hash.append_option(t.nfs_fh_hash);
        self.nfs_io.push(t.nfs_io.as_ref());
        self.retry_of_xid.append_option(t.retry_of_xid);
        self.retry_of_connection
            .append_option(t.retry_of_connection.map(|c| c.to_string()));
        self.retry_wait_us.append_option(t.retry_wait_us);
        self.congested.append_value(t.congested);
    }
}

impl Rows for TxnRows {
    const TABLE: &'static str = "transactions";
    const UNIQUE: &'static [&'static str] = &[
        "xid",
        "call_frame",
        "call_ts_ns",
        "reply_frame",
        "reply_ts_ns",
        "latency_us",
    ];

    fn schema() -> io::Result<SchemaRef> {
        let u32n = |n| field(n, DataType::UInt32, true);
        Ok(Arc::new(Schema::new(vec![
            field("schema_version", DataType::UInt32, false),
            field("connection", DataType::Utf8, false),
            field("xid", DataType::UInt32, false),
            field("backchannel", DataType::Boolean, false),
            field("call_frame", DataType::Int64, false),
            field("call_ts_ns", ts_type(), false),
            field("reply_frame", DataType::Int64, true),
            field("reply_ts_ns", ts_type(), true),
            u32n("program"),
            field("program_name", DataType::Utf8, true),
            u32n("version"),
            field("procedure", DataType::Utf8, true),
            u32n("proc"),
            field("call_transfer", DataType::Utf8, false),
            field("reply_transfer", DataType::Utf8, false),
            field("call_len", DataType::UInt32, false),
            u32n("reply_len"),
            field("latency_us", DataType::Float64, true),
            field("transmissions", DataType::UInt32, false),
            field("first_call_frame", DataType::Int64, false),
            field("first_call_ts_ns", ts_type(), false),
            field("earlier_connections", list_of(DataType::Utf8), false),
            field("app_latency_us", DataType::Float64, true),
            u32n("credits_requested"),
            u32n("credits_granted"),
            field("in_flight_at_call", DataType::UInt32, false),
            field(
                "chunks",
                list_of(DataType::Struct(Segments::fields())),
                false,
            ),
            u32n("remote_invalidated_rkey"),
            field("round_trips", DataType::UInt8, false),
            field("responder_interrupts", DataType::UInt8, false),
            field("phases", DataType::Struct(phases_fields()), false),
            field("reply_status", DataType::Utf8, true),
            field("anomalies", list_of(DataType::Utf8), false),
            u32n("write_chunks"),
            u32n("empty_write_chunks"),
            u32n("unused_write_chunks"),
            field("cut", DataType::Boolean, false),
            field("nfs_status", DataType::Utf8, true),
            field("nfs_failed_op", DataType::Utf8, true),
            field("nfs_fh", DataType::Utf8, true),
            u32n("nfs_fh_hash"),
            field("nfs_io", DataType::Struct(NfsIoColumn::fields()), true),
            u32n("retry_of_xid"),
            field("retry_of_connection", DataType::Utf8, true),
            field("retry_wait_us", DataType::Float64, true),
            field("congested", DataType::Boolean, false),
        ])))
    }

    fn len(&self) -> usize {
        self.xid.len()
    }

    fn finish(&mut self) -> io::Result<RecordBatch> {
        let phases = self.phases.iter_mut().map(|b| finish(b)).collect();
        batch_of::<Self>(vec![
            finish(&mut self.schema_version),
            finish(&mut self.connection),
            finish(&mut self.xid),
            finish(&mut self.backchannel),
            finish(&mut self.call_frame),
            finish(&mut self.call_ts_ns),
            finish(&mut self.reply_frame),
            finish(&mut self.reply_ts_ns),
            finish(&mut self.program),
            finish(&mut self.program_name),
            finish(&mut self.version),
            finish(&mut self.procedure),
            finish(&mut self.proc),
            finish(&mut self.call_transfer),
            finish(&mut self.reply_transfer),
            finish(&mut self.call_len),
            finish(&mut self.reply_len),
            finish(&mut self.latency_us),
            finish(&mut self.transmissions),
            finish(&mut self.first_call_frame),
            finish(&mut self.first_call_ts_ns),
            self.earlier_connections.finish(),
            finish(&mut self.app_latency_us),
            finish(&mut self.credits_requested),
            finish(&mut self.credits_granted),
            finish(&mut self.in_flight_at_call),
            self.chunks.finish(),
            finish(&mut self.remote_invalidated_rkey),
            finish(&mut self.round_trips),
            finish(&mut self.responder_interrupts),
            struct_array(phases_fields(), phases, None),
            finish(&mut self.reply_status),
            self.anomalies.finish(),
            finish(&mut self.write_chunks),
            finish(&mut self.empty_write_chunks),
            finish(&mut self.unused_write_chunks),
            finish(&mut self.cut),
            finish(&mut self.nfs_status),
            finish(&mut self.nfs_failed_op),
            finish(&mut self.nfs_fh),
            finish(&mut self.nfs_fh_hash),
            self.nfs_io.finish(),
            finish(&mut self.retry_of_xid),
            finish(&mut self.retry_of_connection),
            finish(&mut self.retry_wait_us),
            finish(&mut self.congested),
        ])
    }
}

/// An NFS READ/WRITE/COMMIT's range and reply (`nfs_io`), null for other calls.
struct NfsIoColumn {
    present: Present,
    op: StringBuilder,
    offset: UInt64Builder,
    count: UInt32Builder,
    stable: StringBuilder,
    reply_count: UInt32Builder,
    eof: BooleanBuilder,
    committed: StringBuilder,
}

impl NfsIoColumn {
    fn fields() -> Fields {
        Fields::from(vec![
            field("op", DataType::Utf8, true),
            field("offset", DataType::UInt64, true),
            field("count", DataType::UInt32, true),
            field("stable", DataType::Utf8, true),
            field("reply_count", DataType::UInt32, true),
            field("eof", DataType::Boolean, true),
            field("committed", DataType::Utf8, true),
        ])
    }

    fn new() -> Self {
        NfsIoColumn {
            present: Present::default(),
            op: StringBuilder::new(),
            offset: UInt64Builder::new(),
            count: UInt32Builder::new(),
            stable: StringBuilder::new(),
            reply_count: UInt32Builder::new(),
            eof: BooleanBuilder::new(),
            committed: StringBuilder::new(),
        }
    }

    fn push(&mut self, io: Option<&NfsIo>) {
        self.present.push(io.is_some());
        self.op.append_option(io.map(|i| i.op));
        self.offset.append_option(io.and_then(|i| i.offset));
        self.count.append_option(io.and_then(|i| i.count));
        self.stable
            .append_option(io.and_then(|i| i.stable).map(|s| s.to_string()));
        self.reply_count
            .append_option(io.and_then(|i| i.reply_count));
        self.eof.append_option(io.and_then(|i| i.eof));
        self.committed
            .append_option(io.and_then(|i| i.committed).map(|s| s.to_string()));
    }

    fn finish(&mut self) -> ArrayRef {
        struct_array(
            Self::fields(),
            vec![
                finish(&mut self.op),
                finish(&mut self.offset),
                finish(&mut self.count),
                finish(&mut self.stable),
                finish(&mut self.reply_count),
                finish(&mut self.eof),
                finish(&mut self.committed),
            ],
            self.present.take(),
        )
    }
}

/// The `frames` table: the headers a dataset query filters on, named as
/// `frames --json` names them (the whole dissection is `frames --json`).
struct FrameRows {
    schema_version: UInt32Builder,
    frame: Int64Builder,
    ts_ns: TimestampNanosecondBuilder,
    len: UInt32Builder,
    payload_len: UInt32Builder,
    icrc: StringBuilder,
    ip: (
        Present,
        UInt8Builder,
        StringBuilder,
        StringBuilder,
        UInt8Builder,
    ),
    udp: (Present, UInt16Builder, UInt16Builder, UInt16Builder),
    bth: (
        Present,
        UInt8Builder,
        StringBuilder,
        UInt32Builder,
        UInt32Builder,
        BooleanBuilder,
        BooleanBuilder,
        UInt16Builder,
    ),
    reth: (Present, UInt64Builder, UInt32Builder, UInt32Builder),
    aeth: (
        Present,
        StringBuilder,
        UInt8Builder,
        UInt32Builder,
        StringBuilder,
    ),
    rpcrdma: (
        Present,
        UInt32Builder,
        UInt32Builder,
        UInt32Builder,
        StringBuilder,
    ),
    error: (Present, StringBuilder, StringBuilder, UInt32Builder),
}

fn ip_fields() -> Fields {
    Fields::from(vec![
        field("version", DataType::UInt8, true),
        field("src", DataType::Utf8, true),
        field("dst", DataType::Utf8, true),
        field("proto", DataType::UInt8, true),
    ])
}

fn udp_fields() -> Fields {
    Fields::from(vec![
        field("src_port", DataType::UInt16, true),
        field("dst_port", DataType::UInt16, true),
        field("length", DataType::UInt16, true),
    ])
}

fn bth_fields() -> Fields {
    Fields::from(vec![
        field("opcode", DataType::UInt8, true),
        field("opcode_name", DataType::Utf8, true),
        field("dest_qp", DataType::UInt32, true),
        field("psn", DataType::UInt32, true),
        field("ack_req", DataType::Boolean, true),
        field("se", DataType::Boolean, true),
        field("p_key", DataType::UInt16, true),
    ])
}

fn reth_fields() -> Fields {
    Fields::from(vec![
        field("va", DataType::UInt64, true),
        field("r_key", DataType::UInt32, true),
        field("dma_length", DataType::UInt32, true),
    ])
}

fn aeth_fields() -> Fields {
    Fields::from(vec![
        field("kind", DataType::Utf8, true),
        field("syndrome", DataType::UInt8, true),
        field("msn", DataType::UInt32, true),
        field("nak_name", DataType::Utf8, true),
    ])
}

fn rpcrdma_fields() -> Fields {
    Fields::from(vec![
        field("xid", DataType::UInt32, true),
        field("vers", DataType::UInt32, true),
        field("credits", DataType::UInt32, true),
        field("proc", DataType::Utf8, true),
    ])
}

fn error_fields() -> Fields {
    Fields::from(vec![
        field("layer", DataType::Utf8, true),
        field("message", DataType::Utf8, true),
        field("offset", DataType::UInt32, true),
    ])
}

fn u32_of(v: usize) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

impl FrameRows {
    fn new() -> Self {
        FrameRows {
            schema_version: UInt32Builder::new(),
            frame: Int64Builder::new(),
            ts_ns: ts_builder(),
            len: UInt32Builder::new(),
            payload_len: UInt32Builder::new(),
            icrc: StringBuilder::new(),
            ip: Default::default(),
            udp: Default::default(),
            bth: Default::default(),
            reth: Default::default(),
            aeth: Default::default(),
            rpcrdma: Default::default(),
            error: Default::default(),
        }
    }

    fn push(&mut self, v: &FrameView<'_>) {
        self.schema_version.append_value(SCHEMA_VERSION);
        self.frame.append_value(i64_of(v.frame));
        ts_value(&mut self.ts_ns, Some(v.ts_ns));
        self.len.append_value(v.len);
        self.payload_len.append_option(v.payload_len.map(u32_of));
        self.icrc.append_option(v.icrc);

        let (present, version, src, dst, proto) = &mut self.ip;
        let ip = v.ip.and_then(|ip| match ip {
            IpView::V4(h) => Some((4u8, h.src.to_string(), h.dst.to_string(), h.proto)),
            IpView::V6(h) => Some((6u8, h.src.to_string(), h.dst.to_string(), h.proto)),
            // A kind of IP header this build does not know: null, not a guess.
            _ => None,
        });
        present.push(ip.is_some());
        version.append_option(ip.as_ref().map(|i| i.0));
        src.append_option(ip.as_ref().map(|i| i.1.as_str()));
        dst.append_option(ip.as_ref().map(|i| i.2.as_str()));
        proto.append_option(ip.as_ref().map(|i| i.3));

        let (present, src_port, dst_port, length) = &mut self.udp;
        present.push(v.udp.is_some());
        src_port.append_option(v.udp.map(|u| u.src_port));
        dst_port.append_option(v.udp.map(|u| u.dst_port));
        length.append_option(v.udp.map(|u| u.length));

        let (present, opcode, name, dest_qp, psn, ack_req, se, p_key) = &mut self.bth;
        let b = v.bth;
        present.push(b.is_some());
        opcode.append_option(b.map(|b| b.opcode));
        name.append_option(b.map(|b| b.opcode_name));
        dest_qp.append_option(b.map(|b| b.dest_qp));
        psn.append_option(b.map(|b| b.psn));
        ack_req.append_option(b.map(|b| b.ack_req));
        se.append_option(b.map(|b| b.se));
        p_key.append_option(b.map(|b| b.p_key));

        let (present, va, r_key, dma_length) = &mut self.reth;
        present.push(v.reth.is_some());
        va.append_option(v.reth.map(|r| r.va));
        r_key.append_option(v.reth.map(|r| r.r_key));
        dma_length.append_option(v.reth.map(|r| r.dma_length));

        let (present, kind, syndrome, msn, nak_name) = &mut self.aeth;
        let a = v.aeth;
        present.push(a.is_some());
        kind.append_option(a.map(|a| a.kind));
        syndrome.append_option(a.map(|a| a.syndrome));
        msn.append_option(a.map(|a| a.msn));
        nak_name.append_option(a.and_then(|a| a.nak_name));

        let (present, xid, vers, credits, proc) = &mut self.rpcrdma;
        let r = v.rpcrdma.as_ref();
        present.push(r.is_some());
        xid.append_option(r.map(|r| r.xid));
        vers.append_option(r.map(|r| r.vers));
        credits.append_option(r.map(|r| r.credits));
        proc.append_option(r.map(|r| r.proc));

        let (present, layer, message, offset) = &mut self.error;
        let e = v.error.as_ref();
        present.push(e.is_some());
        layer.append_option(e.map(|e| e.layer));
        message.append_option(e.map(|e| e.message.0.to_string()));
        offset.append_option(e.map(|e| u32_of(e.offset)));
    }
}

impl Rows for FrameRows {
    const TABLE: &'static str = "frames";
    const UNIQUE: &'static [&'static str] = &["frame", "ts_ns"];

    fn schema() -> io::Result<SchemaRef> {
        let s = |name, f: Fields| field(name, DataType::Struct(f), true);
        Ok(Arc::new(Schema::new(vec![
            field("schema_version", DataType::UInt32, false),
            field("frame", DataType::Int64, false),
            field("ts_ns", ts_type(), false),
            field("len", DataType::UInt32, false),
            field("payload_len", DataType::UInt32, true),
            field("icrc", DataType::Utf8, true),
            s("ip", ip_fields()),
            s("udp", udp_fields()),
            s("bth", bth_fields()),
            s("reth", reth_fields()),
            s("aeth", aeth_fields()),
            s("rpcrdma", rpcrdma_fields()),
            s("error", error_fields()),
        ])))
    }

    fn len(&self) -> usize {
        self.frame.len()
    }

    fn finish(&mut self) -> io::Result<RecordBatch> {
        let (p, a, b, c, d) = &mut self.ip;
        let ip = struct_array(
            ip_fields(),
            vec![finish(a), finish(b), finish(c), finish(d)],
            p.take(),
        );
        let (p, a, b, c) = &mut self.udp;
        let udp = struct_array(
            udp_fields(),
            vec![finish(a), finish(b), finish(c)],
            p.take(),
        );
        let (p, a, b, c, d, e, f, g) = &mut self.bth;
        let bth = struct_array(
            bth_fields(),
            vec![
                finish(a),
                finish(b),
                finish(c),
                finish(d),
                finish(e),
                finish(f),
                finish(g),
            ],
            p.take(),
        );
        let (p, a, b, c) = &mut self.reth;
        let reth = struct_array(
            reth_fields(),
            vec![finish(a), finish(b), finish(c)],
            p.take(),
        );
        let (p, a, b, c, d) = &mut self.aeth;
        let aeth = struct_array(
            aeth_fields(),
            vec![finish(a), finish(b), finish(c), finish(d)],
            p.take(),
        );
        let (p, a, b, c, d) = &mut self.rpcrdma;
        let rpcrdma = struct_array(
            rpcrdma_fields(),
            vec![finish(a), finish(b), finish(c), finish(d)],
            p.take(),
        );
        let (p, a, b, c) = &mut self.error;
        let error = struct_array(
            error_fields(),
            vec![finish(a), finish(b), finish(c)],
            p.take(),
        );
        batch_of::<Self>(vec![
            finish(&mut self.schema_version),
            finish(&mut self.frame),
            finish(&mut self.ts_ns),
            finish(&mut self.len),
            finish(&mut self.payload_len),
            finish(&mut self.icrc),
            ip,
            udp,
            bth,
            reth,
            aeth,
            rpcrdma,
            error,
        ])
    }
}

/// Rows written per table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Written {
    /// Transactions.
    pub transactions: u64,
    /// Anomalies.
    pub anomalies: u64,
    /// Connections.
    pub connections: u64,
    /// Frames (with `--frames`).
    pub frames: u64,
    /// Causes the diagnosis named.
    pub causes: u64,
}

/// `export`'s sink for one capture: its transactions and anomalies as
/// they come, its connections at the end.
pub struct Export {
    transactions: Table<TxnRows>,
    anomalies: Table<ViewRows<Anomalies>>,
    connections: Table<ViewRows<Connections>>,
    causes: Table<ViewRows<Causes>>,
    /// The capture's causes, from its findings as they come.
    diagnosis: Diagnosis,
    error: Option<io::Error>,
    /// Rows so far.
    pub written: Written,
    day: Day,
}

/// The date partition of the latest time asked for, computed once per day.
struct Day {
    day: u64,
    date: String,
}

impl Day {
    fn new() -> Self {
        Day {
            day: u64::MAX,
            date: String::new(),
        }
    }

    /// `YYYY-MM-DD` of `ts_ns`.
    fn of(&mut self, ts_ns: u64) -> &str {
        const DAY_NS: u64 = 86_400_000_000_000;
        if self.day != ts_ns / DAY_NS {
            self.day = ts_ns / DAY_NS;
            self.date = utc_date(ts_ns);
        }
        &self.date
    }
}

impl Export {
    /// A sink writing into `dataset`.
    pub fn new(dataset: &Dataset) -> Self {
        Export {
            transactions: Table::new(dataset, || Ok(TxnRows::new())),
            anomalies: Table::new(dataset, ViewRows::new),
            connections: Table::new(dataset, ViewRows::new),
            causes: Table::new(dataset, ViewRows::new),
            diagnosis: Diagnosis::default(),
            error: None,
            written: Written::default(),
            day: Day::new(),
        }
    }

    fn keep(&mut self, r: io::Result<()>) -> Flow {
        match r {
            Ok(()) => Flow::Continue,
            Err(e) => {
                self.error.get_or_insert(e);
                Flow::Stop
            }
        }
    }

    fn transaction(&mut self, t: &Transaction) -> io::Result<()> {
        let date = self.day.of(t.call_ts_ns);
        self.transactions.add(date, |rows| rows.push(t))?;
        self.written.transactions += 1;
        Ok(())
    }

    fn anomaly(&mut self, a: &Anomaly) -> io::Result<()> {
        let date = a.ts_ns.map_or(NO_DATE, |ts| self.day.of(ts));
        self.anomalies
            .add(date, |rows| rows.push(AnomalyRow::from(a)))?;
        self.written.anomalies += 1;
        Ok(())
    }

    fn connections_of(&mut self, engine: &Engine) -> io::Result<()> {
        for c in engine.state().connections.values() {
            let date = self.day.of(c.first_ts_ns);
            self.connections.add(date, |rows| {
                rows.push(ConnRow::from(&ConnectionView::from(c)))
            })?;
            self.written.connections += 1;
        }
        // The causes, dated by the capture's first frame.
        let state = engine.state();
        let date = state
            .totals
            .first_ts_ns
            .map_or(NO_DATE.to_string(), |ts| self.day.of(ts).to_string());
        for c in &self.diagnosis.causes(state) {
            self.causes
                .add(&date, |rows| rows.push(CauseRow::from(c)))?;
            self.written.causes += 1;
        }
        Ok(())
    }

    /// Closes every file (renaming each into place) and returns the files
    /// written.
    ///
    /// # Errors
    /// The first write that failed, during the run or now.
    pub fn finish(mut self) -> io::Result<Vec<PathBuf>> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let mut files = self.transactions.close()?;
        files.extend(self.anomalies.close()?);
        files.extend(self.connections.close()?);
        files.extend(self.causes.close()?);
        Ok(files)
    }
}

impl Sink for Export {
    fn finding(&mut self, f: Finding) -> Flow {
        self.observe(&f)
    }

    fn observe(&mut self, f: &Finding) -> Flow {
        if self.error.is_some() {
            return Flow::Stop;
        }
        self.diagnosis.add(f);
        let r = match f {
            Finding::Transaction(t) => self.transaction(t),
            Finding::Anomaly(a) => self.anomaly(a),
        };
        self.keep(r)
    }

    fn notice(&mut self, n: Notice) {
        eprintln!("rdma-analyzer: {}", crate::output::escape::escape(&n.text));
    }

    fn end(&mut self, engine: Option<&Engine>, _: &Progress, _: &End) {
        if let Some(engine) = engine {
            if self.error.is_none() {
                let r = self.connections_of(engine);
                let _ = self.keep(r);
            }
        }
    }
}

/// `export --frames`'s sink for one capture: every frame, from a run
/// without an engine (the engine's runs hand sinks findings, not frames).
pub struct ExportFrames {
    frames: Table<FrameRows>,
    day: Day,
    config: stack::Config,
    error: Option<io::Error>,
    /// Frames written.
    pub written: u64,
}

impl ExportFrames {
    /// A sink writing into `dataset`, dissecting with `config`.
    pub fn new(dataset: &Dataset, config: stack::Config) -> Self {
        ExportFrames {
            frames: Table::new(dataset, || Ok(FrameRows::new())),
            day: Day::new(),
            config,
            error: None,
            written: 0,
        }
    }

    fn frame(&mut self, f: crate::engine::FrameRef<'_>) -> io::Result<()> {
        let config = self
            .config
            .with_verify_icrc(f.icrc.is_none() && self.config.verify_icrc);
        let mut d = Dissection::default();
        stack::dissect_into(f.link, f.data, &config, &mut d);
        if f.icrc.is_some() {
            d.icrc = f.icrc;
        }
        let date = self.day.of(f.ts_ns);
        self.frames.add(date, |rows| {
            rows.push(&FrameView::new(f.number, f.ts_ns, f.orig_len, &d));
        })?;
        self.written += 1;
        Ok(())
    }

    /// Closes the files (renaming each into place) and returns them.
    ///
    /// # Errors
    /// The first write that failed, during the run or now.
    pub fn finish(mut self) -> io::Result<Vec<PathBuf>> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.frames.close()
    }
}

impl Sink for ExportFrames {
    fn finding(&mut self, _: Finding) -> Flow {
        Flow::Continue
    }

    fn event(&mut self, e: &Event<'_>) -> Flow {
        if self.error.is_some() {
            return Flow::Stop;
        }
        let Some(f) = e.frame() else {
            return Flow::Continue;
        };
        match self.frame(f) {
            Ok(()) => Flow::Continue,
            Err(e) => {
                self.error = Some(e);
                Flow::Stop
            }
        }
    }

    fn notice(&mut self, _: Notice) {
        // The findings' run said it already.
    }

    fn end(&mut self, _: Option<&Engine>, _: &Progress, _: &End) {}
}

/// The columns of every table, as (table, schema): for the tests that
/// check the names against the JSON Schema.
///
/// # Errors
/// A row type the schema cannot be traced from.
pub fn schemas() -> io::Result<Vec<(&'static str, SchemaRef)>> {
    Ok(vec![
        (TxnRows::TABLE, TxnRows::schema()?),
        (Anomalies::TABLE, ViewRows::<Anomalies>::schema()?),
        (Connections::TABLE, ViewRows::<Connections>::schema()?),
        (Causes::TABLE, ViewRows::<Causes>::schema()?),
        (FrameRows::TABLE, FrameRows::schema()?),
    ])
}

/// A capture's partition value: its file name without the extension.
pub fn capture_name(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    partition_value(&stem)
}

/// Every table a capture may have rows in.
pub const TABLES: [&str; 4] = [
    TxnRows::TABLE,
    Anomalies::TABLE,
    Connections::TABLE,
    FrameRows::TABLE,
];

/// A capture being written into the dataset: the folders it writes and
/// those of an earlier export of it set aside. Committed, the set-aside
/// ones are removed; dropped without a commit (the export failed), what
/// was written is removed and the set-aside ones are put back, so the
/// dataset holds the old capture whole or the new one whole.
#[derive(Debug)]
pub struct Claim {
    ours: Vec<PathBuf>,
    /// (where it was, where it is now).
    aside: Vec<(PathBuf, PathBuf)>,
    /// The folder the set-aside ones are in.
    aside_root: Option<PathBuf>,
    committed: bool,
}

impl Claim {
    /// The export is whole: the earlier one goes.
    ///
    /// # Errors
    /// When the earlier one cannot be removed (it stays, hidden, in the
    /// folder named).
    pub fn commit(mut self) -> io::Result<()> {
        self.committed = true;
        if let Some(root) = self.aside_root.take() {
            std::fs::remove_dir_all(&root).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "removing the replaced export in {}: {e} (remove it by hand)",
                        root.display()
                    ),
                )
            })?;
        }
        Ok(())
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        for d in &self.ours {
            let _ = std::fs::remove_dir_all(d);
        }
        for (was, now) in &self.aside {
            if let Err(e) = std::fs::rename(now, was) {
                eprintln!(
                    "rdma-analyzer: export: could not put the earlier export back from {} to {}: {e}; move it back by hand",
                    now.display(),
                    was.display()
                );
            }
        }
        if let Some(root) = &self.aside_root {
            // Empty now, unless a rename back failed (then it was said).
            let _ = std::fs::remove_dir(root);
        }
    }
}

impl Dataset {
    /// The folder of this capture's rows of `table`.
    pub fn capture_dir(&self, table: &str) -> PathBuf {
        self.root
            .join(table)
            .join(format!("host={}", self.host))
            .join(format!("capture={}", self.capture))
    }

    /// The folders of this capture already in the dataset.
    pub fn existing(&self) -> Vec<PathBuf> {
        TABLES
            .iter()
            .map(|t| self.capture_dir(t))
            .filter(|d| std::fs::symlink_metadata(d).is_ok())
            .collect()
    }

    /// Takes this capture's place in the dataset. An earlier export of it
    /// is refused unless `replace`; then every table's folder of it is set
    /// aside (one folder under the dataset's, hidden, outside every table)
    /// until the [`Claim`] is committed.
    ///
    /// # Errors
    /// When the capture is there and `replace` is not given (the message
    /// says what to do), or the earlier export cannot be set aside.
    pub fn claim(&self, replace: bool) -> io::Result<Claim> {
        let existing = self.existing();
        let ours = TABLES.iter().map(|t| self.capture_dir(t)).collect();
        if existing.is_empty() {
            return Ok(Claim {
                ours,
                aside: Vec::new(),
                aside_root: None,
                committed: false,
            });
        }
        if !replace {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "host={}/capture={} is already in {} ({}); give --replace to replace it (all its tables and days), or rename the capture file to export it beside",
                    self.host,
                    self.capture,
                    self.root.display(),
                    existing
                        .iter()
                        .filter_map(|d| d.strip_prefix(&self.root).ok())
                        .map(|d| d.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        let root = tempfile::Builder::new()
            .prefix(crate::files::TEMP_PREFIX)
            .suffix(".replaced")
            .rand_bytes(16)
            .tempdir_in(&self.root)?
            .keep();
        // Until every earlier folder is aside, none of the capture's folders
        // is ours to remove on failure.
        let mut claim = Claim {
            ours: Vec::new(),
            aside: Vec::new(),
            aside_root: Some(root.clone()),
            committed: false,
        };
        for d in existing {
            let Some(table) = d
                .strip_prefix(&self.root)
                .ok()
                .and_then(|r| r.components().next())
            else {
                continue;
            };
            let to = root.join(table);
            std::fs::rename(&d, &to).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("setting {} aside to replace it: {e}", d.display()),
                )
            })?;
            claim.aside.push((d, to));
        }
        claim.ours = ours;
        Ok(claim)
    }

    /// Where each of `files` goes under `root` for `host`, checked before
    /// anything is written.
    ///
    /// # Errors
    /// When two files would be one capture (the same partition), in words
    /// the user can act on.
    pub fn for_captures(
        root: &Path,
        host: &str,
        row_group_rows: usize,
        files: &[PathBuf],
    ) -> Result<Vec<Dataset>, String> {
        let mut seen: BTreeMap<String, &Path> = BTreeMap::new();
        let mut out = Vec::with_capacity(files.len());
        for f in files {
            let capture = capture_name(f);
            if let Some(other) = seen.insert(capture.clone(), f) {
                return Err(format!(
                    "{} and {} would both be capture={capture} (a capture is named by its file name without the extension): rename one, or export them in two runs",
                    other.display(),
                    f.display()
                ));
            }
            out.push(Dataset {
                root: root.to_path_buf(),
                host: partition_value(host),
                capture,
                row_group_rows,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc_date(0), "1970-01-01");
        // 2024-02-29 12:00 UTC (a leap day) and 2000-03-01 (after a 400-year leap day).
        assert_eq!(utc_date(1_709_208_000 * 1_000_000_000), "2024-02-29");
        assert_eq!(utc_date(951_868_800 * 1_000_000_000), "2000-03-01");
        assert_eq!(utc_date(951_868_799 * 1_000_000_000), "2000-02-29");
        // The bundled captures' first frame (captures/v42-ddp.pcap).
        assert_eq!(utc_date(1_795_217_659_832_594_000), "2026-11-20");
    }

    #[test]
    fn partition_values_stay_in_their_folder() {
        assert_eq!(partition_value("v42-ddp"), "v42-ddp");
        assert_eq!(partition_value("a/b=c d"), "a_b_c_d");
        assert_eq!(partition_value(".."), "_");
        assert_eq!(partition_value(".hidden"), "_hidden");
        assert_eq!(partition_value(""), "_");
    }
}
