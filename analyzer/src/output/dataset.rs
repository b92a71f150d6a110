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
//! Each table is a row type in `rows.rs`, the only place its columns are
//! written: the Arrow schema is traced from it and `serde_arrow` fills the
//! columns. Columns are named as the JSON keys of the same records
//! (`schema/`, [`schema`](super::schema)), so a query reads as the JSON
//! does; nested objects are structs, arrays are lists. Times since the epoch (`*_ts_ns`)
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
use std::io;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;
use rdma_dissectors::stack::{self, Dissection};
use rdma_dissectors::view::FrameView;

use super::filter::{Filter, Join};
use super::schema::{ConnectionView, SCHEMA_VERSION};
use crate::diagnosis::Diagnosis;
use crate::engine::{Anomaly, Engine, Finding, Frame, Transaction};
use crate::files::AtomicFile;
use crate::pipeline::{End, Flow, Progress, Sink};
use rows::{
    Anomalies, AnomalyRow, CauseRow, Causes, ConnRow, Connections, FrameRow, Frames, Transactions,
    TxnRow, View, ViewRows,
};

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
    /// `export --filter`: the expression that chose the rows, recorded in
    /// every file's metadata ([`FILTER_KEY`]).
    pub filter: Option<String>,
}

/// The Parquet key-value metadata key that holds `export --filter`'s
/// expression: a reader can tell a filtered dataset from a whole one.
pub const FILTER_KEY: &str = "rdma_analyzer.filter";

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

/// One table of one capture: its open files, one per date, at most
/// [`MAX_OPEN_PARTITIONS`] at once.
struct Table<V: View> {
    dir: PathBuf,
    row_group_rows: usize,
    open: BTreeMap<String, Open<V>>,
    /// The next part number of each date a file was opened for: a date
    /// whose file was closed to make room gets a new part when its rows
    /// come back.
    parts: BTreeMap<String, u32>,
    /// Files closed and renamed into place so far.
    done: Vec<PathBuf>,
    /// Ticks for least-recently-used order.
    clock: u64,
    /// The `--filter` expression, for each file's metadata.
    filter: Option<String>,
    view: PhantomData<V>,
}

/// A date's file being written, its rows not yet written, and when it was
/// last written to.
struct Open<V: View> {
    rows: ViewRows<V>,
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

impl<V: View> Table<V> {
    fn new(d: &Dataset) -> Self {
        Table {
            dir: d.capture_dir(V::TABLE),
            row_group_rows: d.row_group_rows.max(1),
            open: BTreeMap::new(),
            parts: BTreeMap::new(),
            done: Vec::new(),
            clock: 0,
            filter: d.filter.clone(),
            view: PhantomData,
        }
    }

    /// Adds `row` to the rows of `date` (opening its file if new), and
    /// writes them out as a batch when there are enough.
    fn add(&mut self, date: &str, row: V::Row<'_>) -> io::Result<()> {
        self.clock += 1;
        if !self.open.contains_key(date) {
            if self.open.len() >= MAX_OPEN_PARTITIONS {
                self.close_least_recent()?;
            }
            let file = self.open_file(date)?;
            let open = Open {
                rows: ViewRows::new()?,
                file,
                used: self.clock,
            };
            self.open.insert(date.to_string(), open);
        }
        let Some(open) = self.open.get_mut(date) else {
            return Err(io::Error::other("a partition file just opened is gone"));
        };
        open.used = self.clock;
        open.rows.push(row);
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
            ))
            .set_key_value_metadata(
                self.filter
                    .as_ref()
                    .map(|f| vec![KeyValue::new(FILTER_KEY.to_string(), f.clone())]),
            );
        // A dictionary of values that hardly repeat (frame numbers, times,
        // XIDs) is built only to be thrown away: plain encoding for those.
        for col in V::UNIQUE {
            props = props.set_column_dictionary_enabled(ColumnPath::from(col.to_string()), false);
        }
        let writer = ArrowWriter::try_new(
            AtomicFile::create(&path)?,
            V::schema()?,
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
fn finish_part<V: View>(mut open: Open<V>) -> io::Result<PathBuf> {
    write_batch(&mut open.rows, &mut open.file)?;
    let file = open.file.writer.into_inner().map_err(io::Error::other)?;
    let path = file.target().to_path_buf();
    file.commit_unsynced()?;
    Ok(path)
}

fn write_batch<V: View>(rows: &mut ViewRows<V>, file: &mut PartFile) -> io::Result<()> {
    if rows.len() == 0 {
        return Ok(());
    }
    let batch = rows.finish()?;
    file.writer.write(&batch).map_err(io::Error::other)
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
    transactions: Table<Transactions>,
    anomalies: Table<Anomalies>,
    connections: Table<Connections>,
    causes: Table<Causes>,
    /// The capture's causes, from its findings as they come.
    diagnosis: Diagnosis,
    error: Option<io::Error>,
    /// Rows so far.
    pub written: Written,
    day: Day,
    /// `export --filter`: the rows kept (and diagnosed).
    filter: Filter,
    join: Join,
    /// Connections a kept transaction or finding is on: kept when the
    /// filter says nothing a connection has (`proc == READ`).
    kept_connections: std::collections::BTreeSet<u32>,
    /// With a filter: the frames its kept rows name, for `--frames`.
    kept_frames: FrameSet,
    /// `--ignore`/`--ack`: the rows they cover are kept, marked.
    acks: super::ack::Acks,
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
            transactions: Table::new(dataset),
            anomalies: Table::new(dataset),
            connections: Table::new(dataset),
            causes: Table::new(dataset),
            diagnosis: Diagnosis::default(),
            error: None,
            written: Written::default(),
            day: Day::new(),
            filter: Filter::parse(dataset.filter.as_deref().unwrap_or("")).unwrap_or(Filter::All),
            join: Join::default(),
            kept_connections: std::collections::BTreeSet::new(),
            kept_frames: FrameSet::default(),
            acks: super::ack::Acks::default(),
        }
    }

    /// The rows `--filter` kept, as [`Sink::observe`] takes every one.
    fn decided(&mut self, decided: Vec<(Finding, bool)>) -> Flow {
        for (f, pass) in decided {
            if pass {
                let on = match &f {
                    Finding::Transaction(t) => Some(t.connection.0),
                    Finding::Anomaly(a) => a.connection.map(|c| c.0),
                };
                self.kept_connections.extend(on);
                self.kept_frames.add_of(&f);
                if self.observe(&f) == Flow::Stop {
                    return Flow::Stop;
                }
            }
        }
        Flow::Continue
    }

    /// Marks the findings `acks` covers `acknowledged` in the anomalies
    /// table: a dataset keeps every row, so that a query chooses (the
    /// report and the TUI hide them instead).
    pub fn with_acks(mut self, acks: super::ack::Acks) -> Self {
        self.acks = acks;
        self
    }

    /// The frames the rows a filter kept name: those `frame == N` keeps
    /// them by (a transaction's call, reply and chunk frames; a finding's
    /// frames). Empty without a filter.
    pub fn kept_frames(&self) -> &FrameSet {
        &self.kept_frames
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
        self.transactions.add(date, TxnRow::from(t))?;
        self.written.transactions += 1;
        Ok(())
    }

    fn anomaly(&mut self, a: &Anomaly) -> io::Result<()> {
        let date = a.ts_ns.map_or(NO_DATE, |ts| self.day.of(ts));
        let acknowledged = self.acks.covers(a);
        self.anomalies.add(date, AnomalyRow::new(a, acknowledged))?;
        self.written.anomalies += 1;
        Ok(())
    }

    fn connections_of(&mut self, engine: &Engine) -> io::Result<()> {
        for c in engine.state().connections.values() {
            let keep = match self.filter.connection(c) {
                _ if self.filter.is_all() => true,
                Some(pass) => pass,
                None => self.kept_connections.contains(&c.id.0),
            };
            if !keep {
                continue;
            }
            let date = self.day.of(c.first_ts_ns);
            let view = ConnectionView::from(c);
            self.connections.add(date, ConnRow::from(&view))?;
            self.written.connections += 1;
        }
        // The causes, dated by the capture's first frame.
        let state = engine.state();
        let date = state
            .totals
            .first_ts_ns
            .map_or(NO_DATE.to_string(), |ts| self.day.of(ts).to_string());
        for c in &self.diagnosis.causes(state) {
            self.causes.add(&date, CauseRow::from(c))?;
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
        if self.filter.is_all() {
            return self.observe(&f);
        }
        let mut decided = Vec::new();
        self.join
            .take(&self.filter, f, &mut |f, pass| decided.push((f, pass)));
        self.decided(decided)
    }

    fn wants_frames(&self) -> bool {
        self.filter.uses(super::filter::Field::Time)
    }

    fn frame(&mut self, f: &Frame<'_>) -> Flow {
        self.filter.saw(f.ts_ns);
        Flow::Continue
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

    fn end(&mut self, engine: Option<&Engine>, _: &Progress, _: &End) {
        let mut decided = Vec::new();
        self.join
            .finish(&self.filter, &mut |f, pass| decided.push((f, pass)));
        let _ = self.decided(decided);
        if let Some(engine) = engine {
            if self.error.is_none() {
                let r = self.connections_of(engine);
                let _ = self.keep(r);
            }
        }
    }
}

/// Frame numbers, one bit each: frames are numbered from 1 in capture
/// order, so a filter that keeps every transaction of a 10-million-frame
/// capture costs 1.2 MiB, not a tree node per frame.
#[derive(Debug, Default, Clone)]
pub struct FrameSet {
    bits: Vec<u64>,
}

impl FrameSet {
    /// Adds frame `n`.
    pub fn insert(&mut self, n: u64) {
        let (word, bit) = ((n / 64) as usize, n % 64);
        if self.bits.len() <= word {
            self.bits.resize(word + 1, 0);
        }
        self.bits[word] |= 1 << bit;
    }

    /// Whether frame `n` is in.
    pub fn contains(&self, n: u64) -> bool {
        self.bits
            .get((n / 64) as usize)
            .is_some_and(|w| w & (1 << (n % 64)) != 0)
    }

    /// Adds the frames a finding names, as the filter's `frame` field
    /// reads them.
    fn add_of(&mut self, f: &Finding) {
        match f {
            Finding::Transaction(t) => {
                for n in [t.call_frame, t.first_call_frame]
                    .into_iter()
                    .chain(t.reply_frame)
                    .chain(t.chunks.iter().flat_map(|s| s.frames.iter().copied()))
                {
                    self.insert(n);
                }
            }
            Finding::Anomaly(a) => a.frames.iter().for_each(|n| self.insert(*n)),
        }
    }
}

/// The engine's stack reading iWARP per TCP segment too: the engine reads
/// it from its reassembled streams, a frame's row from the segment itself
/// (its MPA setup frame or FPDUs), as `frames` does.
fn per_segment(config: stack::Config) -> stack::Config {
    config.with_iwarp_frames(true)
}

/// `export --frames`'s sink for one capture: every frame, beside the
/// findings' sink in the same run; or, with a filter, in a second run, the
/// frames the first run's kept rows name.
pub struct ExportFrames {
    frames: Table<Frames>,
    day: Day,
    config: stack::Config,
    error: Option<io::Error>,
    /// With a filter: the frames to write.
    only: Option<FrameSet>,
    /// Frames written.
    pub written: u64,
}

impl ExportFrames {
    /// A sink writing into `dataset`, dissecting with `config`.
    pub fn new(dataset: &Dataset, config: stack::Config) -> Self {
        // Every frame, whatever `--filter` says: a frame is judged by its
        // transaction, which completes after most of its frames went by
        // (so its files record no filter either).
        let whole = Dataset {
            filter: None,
            ..dataset.clone()
        };
        ExportFrames {
            frames: Table::new(&whole),
            day: Day::new(),
            config: per_segment(config),
            error: None,
            only: None,
            written: 0,
        }
    }

    /// A sink writing into `dataset` only the frames in `only` (those of
    /// the rows `dataset`'s filter kept, which its files record).
    pub fn only(dataset: &Dataset, config: stack::Config, only: FrameSet) -> Self {
        ExportFrames {
            frames: Table::new(dataset),
            day: Day::new(),
            config: per_segment(config),
            error: None,
            only: Some(only),
            written: 0,
        }
    }

    fn write(&mut self, f: &Frame<'_>) -> io::Result<()> {
        let mut d = Dissection::default();
        f.dissect_into(&self.config, &mut d);
        let date = self.day.of(f.ts_ns);
        let view = FrameView::new(f.number, f.ts_ns, f.orig_len, &d);
        self.frames.add(date, FrameRow::from(&view))?;
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

    fn observe(&mut self, _: &Finding) -> Flow {
        Flow::Continue
    }

    fn wants_frames(&self) -> bool {
        true
    }

    fn frame(&mut self, f: &Frame<'_>) -> Flow {
        if self.error.is_some() {
            return Flow::Stop;
        }
        if self.only.as_ref().is_some_and(|o| !o.contains(f.number)) {
            return Flow::Continue;
        }
        match self.write(f) {
            Ok(()) => Flow::Continue,
            Err(e) => {
                self.error = Some(e);
                Flow::Stop
            }
        }
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
        (Transactions::TABLE, Transactions::schema()?),
        (Anomalies::TABLE, Anomalies::schema()?),
        (Connections::TABLE, Connections::schema()?),
        (Causes::TABLE, Causes::schema()?),
        (Frames::TABLE, Frames::schema()?),
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
    Transactions::TABLE,
    Anomalies::TABLE,
    Connections::TABLE,
    Frames::TABLE,
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
                filter: None,
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
