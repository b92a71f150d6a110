//! What the screens draw: the engine's latest [`State`] plus the findings,
//! accumulated into bounded, compact tables with sorted and filtered views.
//!
//! A million transactions must stay cheap to hold and to draw, so each is
//! kept as a [`TxnRow`] of fixed size (procedure labels interned); the full
//! [`Transaction`] (ladder, decoded header) is kept only for the most recent
//! [`Caps::details`] of them. Views are vectors of row indices, rebuilt only
//! when the sort or the filter changes and extended (then re-sorted, which
//! is near linear on already sorted input) when rows arrive.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use crate::diagnosis::timeline::{timeline, ClientTimeline};
use crate::diagnosis::Cause;
use crate::engine::{
    Anomaly, ChunkKind, CollapseKey, Collapser, ConnId, Finding, Kind, Origin, State, Transaction,
    Transfer,
};
use crate::output::ack::Acks;
use crate::output::filter::{Field, Record, Val};
use crate::output::Filter;
use crate::pipeline::{Notice, Progress, Source, Stop};

use super::feed::{self, Msg};
use super::state::{Screen, Sort, SortCol, UiState};

/// How much the model keeps.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    /// Transaction rows.
    pub rows: usize,
    /// Full transactions (ladder, header) kept for the detail screen, newest.
    pub details: usize,
    /// Full transactions with anomalies kept besides (the first ones), so
    /// Enter on an anomaly finds its ladder however old it is.
    pub anomalous_details: usize,
    /// Chunk segment rows.
    pub segments: usize,
    /// Anomalies.
    pub anomalies: usize,
    /// Distinct procedure labels (NFSv4 COMPOUNDs can make many).
    pub labels: usize,
    /// `live`: the diagnosis screen shows the causes over this last
    /// stretch of the capture clock, ns (`--diagnosis-window`); `None`
    /// (files): over the whole capture.
    pub diagnosis_window: Option<u64>,
}

impl Caps {
    /// What `bytes` hold: the rows and segments are fixed-size records, a
    /// kept transaction (ladder, header) and an anomaly (message) are
    /// counted at a few times their usual size so the share is not overrun.
    pub fn within(bytes: usize) -> Caps {
        use std::mem::size_of;
        let share = |percent: usize| bytes / 100 * percent;
        let d = Caps::default();
        let cap = |default: usize, b: usize, each: usize| default.min(b / each).max(16);
        Caps {
            rows: cap(d.rows, share(30), size_of::<TxnRow>() + 16),
            details: cap(d.details, share(25), 4096),
            anomalous_details: cap(d.anomalous_details, share(10), 4096),
            segments: cap(d.segments, share(20), size_of::<SegRow>()),
            anomalies: cap(d.anomalies, share(12), 512),
            labels: cap(d.labels, share(3), 128),
            diagnosis_window: d.diagnosis_window,
        }
    }
}

impl Default for Caps {
    fn default() -> Self {
        Caps {
            rows: 2_000_000,
            details: 20_000,
            anomalous_details: 10_000,
            segments: 2_000_000,
            anomalies: 100_000,
            labels: 65_536,
            diagnosis_window: None,
        }
    }
}

/// No value (latency of an unanswered call, no invalidation).
pub const NONE32: u32 = u32::MAX;
/// No value, 64-bit.
pub const NONE64: u64 = u64::MAX;

/// One transaction, compact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnRow {
    /// Call time, ns since the epoch.
    pub call_ts_ns: u64,
    /// Call to reply, ns ([`NONE64`] when unanswered).
    pub latency_ns: u64,
    /// Bytes moved through chunks.
    pub bytes: u64,
    /// Frame of the call.
    pub call_frame: u64,
    /// Frame of the reply (0 when none).
    pub reply_frame: u64,
    /// Bit `i` set: the transaction has an anomaly of kind `Kind::ALL[i]`.
    pub anomaly_mask: u64,
    /// RPC XID.
    pub xid: u32,
    /// Connection number.
    pub conn: u32,
    /// Interned procedure label.
    pub proc: u32,
    /// Interned RPC and NFS status (`Model::statuses`; [`NONE32`]: none).
    pub status: u32,
    /// R_Key the reply invalidated ([`NONE32`] when none).
    pub inval_rkey: u32,
    /// How the call travelled.
    pub call: Transfer,
    /// How the reply travelled.
    pub reply: Transfer,
    /// Internode round trips.
    pub round_trips: u8,
    /// Anomalies on it.
    pub anomalies: u8,
    /// Who saw it: a bit per [`Origin`] (the wire, each kernel through
    /// `live --probes`); see [`origin_bit`].
    pub sources: u8,
}

/// One advertised segment, compact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegRow {
    /// Transaction row it belongs to.
    pub row: u32,
    /// Which list.
    pub kind: ChunkKind,
    /// Write chunk index, or read position.
    pub index: u32,
    /// STag / R_Key.
    pub handle: u32,
    /// Advertised length.
    pub length: u32,
    /// Advertised offset.
    pub offset: u64,
    /// Bytes moved.
    pub bytes_moved: u64,
    /// Named by the reply's Send With Invalidate.
    pub remotely_invalidated: bool,
}

/// A row of the anomalies screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnomRow {
    /// A kind's heading, with how many anomalies of it pass the filter.
    Kind(Kind, u64),
    /// An anomaly (index into [`Model::anomalies`]).
    Item(u32),
}

/// Counters for the status line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Findings received.
    pub events: u64,
    /// Messages the source or a paused view had to drop.
    pub dropped: u64,
    /// Transactions not kept (row cap).
    pub rows_not_kept: u64,
    /// Segments not kept (segment cap).
    pub segments_not_kept: u64,
    /// Anomalies not kept (anomaly cap; still counted in the state).
    pub anomalies_not_kept: u64,
}

/// Everything the screens draw.
#[derive(Debug, Default)]
pub struct Model {
    /// Source description (file name, interface).
    pub source: String,
    /// Latest engine state.
    pub state: State,
    /// The causes in the findings so far (the overview lists them).
    pub diagnosis: crate::diagnosis::Diagnosis,
    /// The causes named so far, largest impact first (kept up to date by
    /// [`Model::refresh`], so drawing never computes them).
    pub causes: Vec<Cause>,
    /// `live`: the diagnosis over the last `Caps::diagnosis_window`, whose
    /// causes `causes` then holds.
    pub window: Option<crate::diagnosis::Window>,
    /// The causes named since the start (those of `causes` without a window).
    pub run_causes: usize,
    /// Each client's connections in time order, and its outages (same).
    pub timeline: Vec<ClientTimeline>,
    /// Bumped by every message and finding: what the causes were computed at.
    generation: u64,
    diagnosed: Option<u64>,
    /// When the causes were last computed, and what that took.
    diagnosed_at: Option<(Instant, Duration)>,
    /// How far the source has got.
    pub progress: Progress,
    /// Whether the source has finished.
    pub done: bool,
    /// Why the source stopped early, if it did.
    pub error: Option<String>,
    /// The last thing the source said (a capture that stopped, probes missing).
    pub notice: Option<Notice>,
    /// Status counters.
    pub counters: Counters,
    /// Frames per second of capture time between the last two snapshots
    /// (the live status line; capture time, so replays give the same figure).
    pub frame_rate: f64,
    caps: Caps,
    /// Transactions in arrival order.
    pub rows: Vec<TxnRow>,
    /// Interned procedure labels.
    pub labels: Vec<String>,
    label_ids: HashMap<String, u32>,
    /// Distinct status words of the rows ([`TxnRow::status`]).
    statuses: Vec<String>,
    label_rank: Vec<u32>,
    details: VecDeque<(u32, Box<Transaction>)>,
    anomalous: std::collections::BTreeMap<u32, Box<Transaction>>,
    /// Segments in arrival order.
    pub segs: Vec<SegRow>,
    /// Anomalies in arrival order.
    pub anomalies: Vec<Anomaly>,
    /// Transaction view: row indices, filtered and sorted.
    pub view: Vec<u32>,
    view_key: Option<(Sort, String)>,
    view_seen: usize,
    /// Segment view: indices into `segs`.
    pub seg_view: Vec<u32>,
    seg_key: Option<String>,
    seg_seen: usize,
    /// Totals over `seg_view`: segments per list (read, write, reply), bytes
    /// moved, remotely invalidated (kept here so drawing stays O(screen)).
    pub seg_totals: ([u64; 3], u64, u64),
    /// Anomaly view, grouped by kind.
    pub anom_view: Vec<AnomRow>,
    anom_key: Option<(String, u64, bool)>,
    /// Where each finding that repeats per connection is in `anomalies`:
    /// its next occurrences fold into it, so the screen lists one row per
    /// fact and memory does not grow with the occurrences.
    folded: HashMap<CollapseKey, usize>,
    /// Occurrences taken, folded or not: what the anomaly view is current to.
    anom_taken: u64,
    /// Findings hidden unless [`UiState::show_acked`].
    pub acks: Acks,
    /// Occurrences of acknowledged findings the anomaly view hides.
    pub acked_hidden: u64,
    /// The kernel's counters (`live`'s sampler) and their screen.
    pub kernel: super::counters::Pane,
}

/// A bit per origin, for [`TxnRow::sources`].
pub fn origin_bit(o: Origin) -> u8 {
    match o {
        Origin::Wire => 1,
        Origin::ClientProbes => 2,
        Origin::ServerProbes => 4,
    }
}

/// The kind masks are one `u64`: a 65th kind must widen them (to `u128` or a
/// bit set) rather than share a bit with the first, so the build stops here.
const _: () = assert!(
    Kind::ALL.len() <= 64,
    "more anomaly kinds than bits in the TUI's kind masks: widen them"
);

/// A bit per anomaly kind.
pub fn kind_bit(k: Kind) -> u64 {
    1u64 << k.index()
}

impl Model {
    /// An empty model for `source`.
    pub fn new(source: impl Into<String>, caps: Caps) -> Self {
        Model {
            source: source.into(),
            caps,
            window: caps.diagnosis_window.map(crate::diagnosis::Window::new),
            ..Model::default()
        }
    }

    /// Runs `source` to its end through the same pipeline and feed as the
    /// screen, without a terminal (tests, benchmarks, snapshots).
    ///
    /// # Errors
    /// When the pipeline thread cannot be started.
    pub fn load(
        &mut self,
        source: Box<dyn Source>,
        config: crate::engine::Config,
    ) -> std::io::Result<()> {
        let (tap, h) = feed::spawn(source, config, Stop::new())?;
        while let Ok(m) = tap.rx.recv() {
            self.apply(m);
        }
        if h.join().is_err() && self.error.is_none() {
            self.error = Some("the analysis thread panicked; this is a bug".into());
        }
        self.counters.dropped = tap.dropped();
        Ok(())
    }

    /// Takes one reading of `live`'s counter sampler: the counters screen
    /// shows it, and the diagnosis judges the causes only the kernel sees
    /// on the growth since the first sample.
    pub fn take_counters(&mut self, r: &crate::counters::CounterReading) {
        self.generation += 1;
        self.kernel.take(r);
        if let Some(v) = self.kernel.kernel_view() {
            self.diagnosis.set_kernel(v);
        }
    }

    /// Takes one message from the source.
    pub fn apply(&mut self, msg: Msg) {
        self.generation += 1;
        match msg {
            Msg::Findings(fs) => {
                for f in fs {
                    self.push(f);
                }
            }
            Msg::Snapshot { state, progress } => {
                let dt = state
                    .totals
                    .last_ts_ns
                    .unwrap_or(0)
                    .saturating_sub(self.state.totals.last_ts_ns.unwrap_or(0));
                let df = progress.frames.saturating_sub(self.progress.frames);
                if dt > 0 {
                    self.frame_rate = df as f64 * 1e9 / dt as f64;
                }
                self.state = *state;
                self.progress = progress;
            }
            Msg::Notice(n) => self.notice = Some(n),
            Msg::Done {
                state,
                progress,
                error,
            } => {
                self.state = *state;
                self.progress = progress;
                self.done = true;
                self.error = error;
            }
        }
    }

    /// Takes one finding.
    pub fn push(&mut self, f: Finding) {
        self.generation += 1;
        self.counters.events += 1;
        self.diagnosis.add(&f);
        if let Some(w) = &mut self.window {
            w.add(&f);
        }
        match f {
            Finding::Transaction(t) => self.push_txn(t),
            Finding::Anomaly(a) => self.push_anomaly(*a),
        }
    }

    fn push_anomaly(&mut self, a: Anomaly) {
        self.anom_taken += 1;
        let key = Collapser::key(&a);
        if let Some(&i) = key.as_ref().and_then(|k| self.folded.get(k)) {
            return Collapser::fold(&mut self.anomalies[i], &a);
        }
        if self.anomalies.len() >= self.caps.anomalies {
            self.counters.anomalies_not_kept += 1;
            return;
        }
        if let Some(k) = key {
            self.folded.insert(k, self.anomalies.len());
        }
        self.anomalies.push(a);
    }

    fn intern(&mut self, label: String) -> u32 {
        if let Some(id) = self.label_ids.get(&label) {
            return *id;
        }
        // Past the cap every new label shares one overflow entry, added once.
        let label = if self.labels.len() >= self.caps.labels {
            let other = "(other)".to_string();
            if let Some(id) = self.label_ids.get(&other) {
                return *id;
            }
            other
        } else {
            label
        };
        let id = u32::try_from(self.labels.len()).unwrap_or(NONE32);
        self.label_ids.insert(label.clone(), id);
        self.labels.push(label);
        // Ranks give sort order without string compares per row pair.
        let mut order: Vec<u32> = (0..self.labels.len() as u32).collect();
        order.sort_by(|a, b| self.labels[*a as usize].cmp(&self.labels[*b as usize]));
        self.label_rank = vec![0; order.len()];
        for (rank, id) in order.into_iter().enumerate() {
            self.label_rank[id as usize] = rank as u32;
        }
        // A new label invalidates a procedure sort.
        if self
            .view_key
            .as_ref()
            .is_some_and(|(s, _)| s.col == SortCol::Procedure)
        {
            self.view_key = None;
        }
        id
    }

    /// The row's status words (RPC, then NFS), interned: a handful of
    /// distinct values per capture, kept so `status ==` works on any row.
    fn intern_status(&mut self, t: &Transaction) -> u32 {
        let words: Vec<&str> = [t.reply_status.as_deref(), t.nfs_status.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        if words.is_empty() {
            return NONE32;
        }
        let s = words.join(" ");
        if let Some(i) = self.statuses.iter().position(|x| *x == s) {
            return i as u32;
        }
        if self.statuses.len() >= 4096 {
            return NONE32;
        }
        self.statuses.push(s);
        (self.statuses.len() - 1) as u32
    }

    /// Adds a transaction (also used by the benchmarks to load a million).
    pub fn push_txn(&mut self, t: Box<Transaction>) {
        if self.rows.len() >= self.caps.rows {
            self.counters.rows_not_kept += 1;
            return;
        }
        let row = self.rows.len() as u32;
        let proc = self.intern(t.procedure_label());
        let anomaly_mask = t.anomalies.iter().fold(0, |m, k| m | kind_bit(*k));
        let status = self.intern_status(&t);
        self.rows.push(TxnRow {
            call_ts_ns: t.call_ts_ns,
            latency_ns: t
                .reply_ts_ns
                .and_then(|r| r.checked_sub(t.call_ts_ns))
                .unwrap_or(NONE64),
            bytes: t.bytes_moved(),
            call_frame: t.call_frame,
            reply_frame: t.reply_frame.unwrap_or(0),
            anomaly_mask,
            xid: t.xid,
            conn: t.connection.0,
            proc,
            status,
            inval_rkey: t.remote_invalidated_rkey.unwrap_or(NONE32),
            call: t.call_transfer,
            reply: t.reply_transfer,
            round_trips: t.round_trips,
            anomalies: u8::try_from(t.anomalies.len()).unwrap_or(u8::MAX),
            sources: t.sources().fold(0, |m, o| m | origin_bit(o)),
        });
        for s in &t.chunks {
            if self.segs.len() >= self.caps.segments {
                self.counters.segments_not_kept += 1;
                continue;
            }
            self.segs.push(SegRow {
                row,
                kind: s.kind,
                index: s.position.unwrap_or(s.chunk),
                handle: s.handle,
                length: s.length,
                offset: s.offset,
                bytes_moved: s.bytes_moved,
                remotely_invalidated: s.remotely_invalidated,
            });
        }
        if self.caps.details > 0 {
            if self.details.len() >= self.caps.details {
                if let Some((r, old)) = self.details.pop_front() {
                    if !old.anomalies.is_empty()
                        && self.anomalous.len() < self.caps.anomalous_details
                    {
                        self.anomalous.insert(r, old);
                    }
                }
            }
            self.details.push_back((row, t));
        }
    }

    /// The full transaction of a row, while it is still kept.
    pub fn detail(&self, row: usize) -> Option<&Transaction> {
        let row = u32::try_from(row).ok()?;
        match self.details.binary_search_by_key(&row, |(r, _)| *r) {
            Ok(i) => self.details.get(i).map(|(_, t)| &**t),
            Err(_) => self.anomalous.get(&row).map(|t| &**t),
        }
    }

    /// A row's procedure label.
    pub fn label(&self, r: &TxnRow) -> &str {
        self.labels.get(r.proc as usize).map_or("?", String::as_str)
    }

    /// Capture time at the start (ns), for relative times.
    pub fn t0(&self) -> u64 {
        self.state.totals.first_ts_ns.unwrap_or(0)
    }

    /// Brings the views up to date with `ui`'s sort and filter, and tells
    /// `ui` how long each list is. Called before drawing, never while drawing.
    pub fn refresh(&mut self, ui: &mut UiState) {
        self.refresh_diagnosis();
        let mut filter = parse_filter(&ui.filter);
        filter.saw(self.t0());
        self.refresh_txns(ui.sort, &ui.filter, &filter);
        if let Some(ts) = ui.seek_ns.take() {
            self.seek(ui, ts);
        }
        ui.set_len(Screen::Diagnosis, self.causes.len());
        self.refresh_segs(&ui.filter, &filter);
        self.refresh_anomalies(&ui.filter, &filter, ui.show_acked);
        ui.set_len(Screen::Overview, self.state.connections.len());
        ui.set_len(Screen::Transactions, self.view.len());
        let ladder = ui
            .detail
            .and_then(|r| self.detail(r))
            .map_or(0, |t| t.ladder.len());
        ui.set_len(Screen::Detail, ladder);
        ui.set_len(Screen::Chunks, self.seg_view.len());
        ui.set_len(Screen::Credits, self.state.connections.len());
        ui.set_len(Screen::Anomalies, self.anom_view.len());
        ui.set_len(Screen::Counters, super::counters::len(self));
    }

    /// The causes and the timeline, recomputed only when something came
    /// in since. Their cost grows with the connections (the diagnosis's
    /// tallies are fixed-size), not the transactions: 2000 connections take
    /// ~10 ms in a debug build. So while the source runs they are
    /// recomputed at most once per ten times what the last took (at most
    /// a tenth of the loop's time); once it is done, on every change.
    fn refresh_diagnosis(&mut self) {
        if self.diagnosed == Some(self.generation) {
            return;
        }
        if let Some((at, took)) = self.diagnosed_at {
            if !self.done && at.elapsed() < took * 10 {
                return;
            }
        }
        let start = Instant::now();
        self.diagnosed = Some(self.generation);
        self.causes = self.diagnosis.causes(&self.state);
        self.run_causes = self.causes.len();
        if let Some(w) = &mut self.window {
            w.observe(&self.state);
            // The kernel's growth over the window, bounded by the sample
            // taken at or before its start.
            if let Some(v) = w
                .span_ns()
                .and_then(|(from, _)| self.kernel.kernel_view_since(from))
            {
                w.set_kernel(v);
            }
            self.causes = w.causes(&self.state);
        }
        self.timeline = timeline(&self.state, |_| true);
        self.diagnosed_at = Some((start, start.elapsed()));
    }

    /// Selects the first transaction of the view called at or after `ts`.
    fn seek(&self, ui: &mut UiState, ts: u64) {
        let at = self
            .view
            .iter()
            .enumerate()
            .filter(|(_, r)| self.rows[**r as usize].call_ts_ns >= ts)
            .min_by_key(|(i, r)| (self.rows[**r as usize].call_ts_ns, *i))
            .map_or(0, |(i, _)| i);
        ui.selected[Screen::Transactions.index()] = at;
        ui.set_len(Screen::Transactions, self.view.len());
    }

    fn row_passes(&self, i: usize, f: &Filter) -> bool {
        if f.is_all() {
            return true;
        }
        // The full transaction while it is kept, so that the screens judge
        // as `transactions --filter` does; else the compact row.
        match self.detail(i) {
            Some(t) => f.txn(t),
            None => self
                .rows
                .get(i)
                .is_some_and(|r| f.matches(&RowRecord { m: self, i, r })),
        }
    }

    fn refresh_txns(&mut self, sort: Sort, text: &str, f: &Filter) {
        let key = (sort, text.to_string());
        if self.view_key.as_ref() != Some(&key) {
            self.view.clear();
            self.view_seen = 0;
            self.view_key = Some(key);
        }
        if self.view_seen == self.rows.len() {
            return;
        }
        let start = self.view_seen;
        for i in start..self.rows.len() {
            if self.row_passes(i, f) {
                self.view.push(i as u32);
            }
        }
        self.view_seen = self.rows.len();
        let rows = &self.rows;
        let rank = &self.label_rank;
        let cmp = |a: &u32, b: &u32| {
            let (x, y) = (&rows[*a as usize], &rows[*b as usize]);
            let o = match sort.col {
                SortCol::Time => x.call_ts_ns.cmp(&y.call_ts_ns),
                SortCol::Conn => x.conn.cmp(&y.conn),
                SortCol::Xid => x.xid.cmp(&y.xid),
                SortCol::Procedure => rank.get(x.proc as usize).cmp(&rank.get(y.proc as usize)),
                SortCol::Call => x.call.cmp(&y.call),
                SortCol::Reply => x.reply.cmp(&y.reply),
                // Unanswered (NONE64) sorts last ascending, which is what one wants.
                SortCol::Latency => x.latency_ns.cmp(&y.latency_ns),
                SortCol::RoundTrips => x.round_trips.cmp(&y.round_trips),
                SortCol::Bytes => x.bytes.cmp(&y.bytes),
                SortCol::Invalidation => x.inval_rkey.cmp(&y.inval_rkey),
                SortCol::Anomalies => x.anomalies.cmp(&y.anomalies),
            };
            if sort.desc {
                o.reverse()
            } else {
                o
            }
        };
        // Stable and adaptive: an already sorted prefix plus a new tail
        // costs a merge, not a full sort; ties stay in arrival order.
        self.view.sort_by(cmp);
    }

    fn refresh_segs(&mut self, text: &str, f: &Filter) {
        if self.seg_key.as_deref() != Some(text) {
            self.seg_view.clear();
            self.seg_seen = 0;
            self.seg_totals = ([0; 3], 0, 0);
            self.seg_key = Some(text.to_string());
        }
        if self.seg_seen == self.segs.len() {
            return;
        }
        for i in self.seg_seen..self.segs.len() {
            let s = &self.segs[i];
            if (s.row as usize) < self.rows.len() && self.row_passes(s.row as usize, f) {
                self.seg_view.push(i as u32);
                let t = &mut self.seg_totals;
                t.0[s.kind as usize] += 1;
                t.1 += s.bytes_moved;
                t.2 += u64::from(s.remotely_invalidated);
            }
        }
        self.seg_seen = self.segs.len();
    }

    fn refresh_anomalies(&mut self, text: &str, f: &Filter, show_acked: bool) {
        let key = (text.to_string(), self.anom_taken, show_acked);
        if self.anom_key.as_ref() == Some(&key) {
            return;
        }
        self.anom_key = Some(key);
        self.anom_view.clear();
        self.acked_hidden = 0;
        let mut by_kind: Vec<Vec<u32>> = vec![Vec::new(); Kind::ALL.len()];
        // A finding is judged with its transaction (`READ` keeps the
        // findings of READs), as `anomalies --filter` does.
        let rows: HashMap<(u32, u32), usize> = if f.needs_transaction() {
            self.rows
                .iter()
                .enumerate()
                .map(|(i, r)| ((r.conn, r.xid), i))
                .collect()
        } else {
            HashMap::new()
        };
        for (i, a) in self.anomalies.iter().enumerate() {
            let row = a
                .connection
                .zip(a.xid)
                .and_then(|(c, x)| rows.get(&(c.0, x)).copied());
            let detail = row.and_then(|i| self.detail(i));
            let compact = row.and_then(|i| self.rows.get(i).map(|r| RowRecord { m: self, i, r }));
            let txn: Option<&dyn Record> = match (detail, &compact) {
                (Some(t), _) => Some(t),
                (None, Some(r)) => Some(r),
                (None, None) => None,
            };
            if !f.anomaly_with(a, txn) {
                continue;
            }
            if !show_acked && self.acks.covers(a) {
                self.acked_hidden += a.count();
            } else {
                by_kind[a.kind.index()].push(i as u32);
            }
        }
        for (k, items) in Kind::ALL.iter().zip(by_kind) {
            if items.is_empty() {
                continue;
            }
            // The kind's row counts occurrences, as the report does.
            let n = items
                .iter()
                .map(|&i| self.anomalies[i as usize].count())
                .sum();
            self.anom_view.push(AnomRow::Kind(*k, n));
            self.anom_view.extend(items.into_iter().map(AnomRow::Item));
        }
    }

    /// The newest row with this connection and XID.
    pub fn find_txn(&self, conn: Option<ConnId>, xid: u32) -> Option<usize> {
        self.rows
            .iter()
            .rposition(|r| r.xid == xid && conn.is_none_or(|c| c.0 == r.conn))
    }
}

/// The filter a typed text means (empty: everything; one that does not
/// parse: everything too, the screen showing the error where it is typed).
pub fn parse_filter(text: &str) -> Filter {
    Filter::parse(text).unwrap_or(Filter::All)
}

/// A compact row as a filter sees it, when its full transaction is no
/// longer kept: no chunk frames (its `frame` is the call's and reply's).
struct RowRecord<'a> {
    m: &'a Model,
    i: usize,
    r: &'a TxnRow,
}

impl Record for RowRecord<'_> {
    fn get(&self, f: Field, out: &mut Vec<Val>) -> bool {
        let r = self.r;
        match f {
            Field::Conn => out.push(Val::Num(r.conn.into())),
            Field::Xid => out.push(Val::Num(r.xid.into())),
            Field::Proc => out.push(Val::Text(self.m.label(r).to_string())),
            Field::Frame => {
                out.push(Val::Num(r.call_frame));
                if r.reply_frame != 0 {
                    out.push(Val::Num(r.reply_frame));
                }
            }
            Field::Rkey => {
                let row = self.i as u32;
                let at = self.m.segs.partition_point(|s| s.row < row);
                let segs = self.m.segs[at..].iter().take_while(|s| s.row == row);
                out.extend(segs.map(|s| Val::Num(s.handle.into())));
                if r.inval_rkey != NONE32 {
                    out.push(Val::Num(r.inval_rkey.into()));
                }
            }
            Field::Latency => {
                if r.latency_ns != NONE64 {
                    out.push(Val::Num(r.latency_ns));
                }
            }
            Field::Bytes => out.push(Val::Num(r.bytes)),
            Field::Status => {
                if let Some(s) = self.m.statuses.get(r.status as usize) {
                    out.extend(s.split(' ').map(|w| Val::Text(w.to_string())));
                }
            }
            Field::Severity | Field::Kind => {
                for k in Kind::ALL
                    .iter()
                    .filter(|k| r.anomaly_mask & kind_bit(**k) != 0)
                {
                    out.push(match f {
                        Field::Kind => Val::Text(k.as_str().to_ascii_uppercase()),
                        _ => Val::Num(crate::output::filter::severity_rank(k.severity())),
                    });
                }
            }
            Field::Time => out.push(Val::Num(r.call_ts_ns)),
            Field::Mode => {
                out.push(Val::Text(r.call.as_str().into()));
                out.push(Val::Text(r.reply.as_str().into()));
            }
            Field::Peer | Field::Qpn | Field::Opcode => return false,
        }
        true
    }
}
