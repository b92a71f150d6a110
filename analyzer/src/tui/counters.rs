//! Counters: the kernel's own counters beside the wire, as `live`'s counter
//! sampler reads them every `--counters-interval`: per RDMA mount and per
//! transport (`xprt:` line; `nconnect` gives several) the `xprt: rdma`
//! fields in print order, the mount's per-op counters, and the RDMA
//! devices' counters, each with its growth over the last interval and
//! since the first sample.
//!
//! ```text
//! ┌ Counters: sample 12 at 10:41:07 UTC, every 5 s ─────────────────────────┐
//! │ kernel view: 1 mount, 4 transports: no_remote_invalidation, ... checked │
//! │ /mnt/lab (10.99.0.1:/srv/export): 4 transports                          │
//! │   transport 0 of 4 (27 fields printed)                                  │
//! │   field             total    last 5.0 s  since start  counts            │
//! │   sends             70       +10         +10          RPC Calls ...     │
//! │   ...                                                                   │
//! │   op       ops  last  since  ntrans  ...  rtt/op  exec/op  ...          │
//! │ rxe0 port 1                                                             │
//! │   hw_counters  rcvd_seq_err  8  +3  +3                                  │
//! └─────────────────────────────────────────────────────────────────────────┘
//! ```
//!
//! What could not be read says so: a delta or growth that is not known is
//! `unknown`, a counter that went backwards `reset` (never a 0 or a huge
//! wrapped number). The rows are formatted once per sample, their columns
//! as wide as their widest cell; drawing slices the visible ones and cuts a
//! line too wide for the terminal with an ellipsis.

use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{List, ListItem, ListState};
use ratatui::Frame;

use super::model::Model;
use super::state::{Screen, UiState};
use super::widgets::{block, cut, header_style, selected_style};
use crate::counters::CounterReading;
use crate::diagnosis::KernelView;
use crate::engine::mountstats::RDMA_FIELDS;
use crate::output::escape::escape;
use crate::output::live_counters::{
    CounterSampler, CounterValue, CountersLine, DeviceCounterValue, MountCounters, OpCounters,
    TransportCounters,
};

/// Where the screen's counters come from.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum Sampling {
    /// A capture file: no kernel to read.
    #[default]
    File,
    /// `live --counters-interval 0`.
    Off,
    /// `live`'s sampler, every this many seconds.
    Every(f64),
}

/// What a row of the screen is, for its style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    /// A mount or a device.
    Heading,
    /// A transport, the per-op table: a heading inside a mount.
    Sub,
    /// A table's column names.
    Header,
    /// Values.
    Cells,
    /// Something that went wrong reading, or what the counters are for.
    Note,
}

/// The screen's state: the sampler's deltas and the rows of its latest
/// sample.
#[derive(Debug, Default)]
pub struct Pane {
    /// Where the counters come from.
    pub sampling: Sampling,
    sampler: CounterSampler,
    /// The latest sample's record.
    pub latest: Option<CountersLine>,
    /// The screen's lines, formatted.
    pub rows: Vec<(RowKind, String)>,
}

impl Pane {
    /// A pane for counters that come as `sampling` says; `window_ns`: the
    /// diagnosis window the kernel view is to cover (`live`).
    pub fn new(sampling: Sampling, window_ns: Option<u64>) -> Self {
        let sampler = CounterSampler::default().keeping(window_ns.unwrap_or(0));
        Pane {
            sampling,
            sampler,
            ..Pane::default()
        }
    }

    /// Takes one reading of the sampler thread.
    pub fn take(&mut self, r: &CounterReading) {
        let line = self.sampler.sample(r);
        self.rows = rows(&line, self.kernel_view().as_ref());
        self.latest = Some(line);
    }

    /// The kernel view since the first sample, when it has an RDMA mount
    /// (a host with none has no client view to give: "not checked").
    pub fn kernel_view(&self) -> Option<KernelView> {
        self.sampler.kernel_view().filter(|v| !v.mounts.is_empty())
    }

    /// The kernel view since `from_ns` (a diagnosis window's start), as
    /// [`Pane::kernel_view`].
    pub fn kernel_view_since(&self, from_ns: u64) -> Option<KernelView> {
        self.sampler
            .kernel_view_since(from_ns)
            .filter(|v| !v.mounts.is_empty())
    }
}

/// `+12`, `reset` or `unknown`: a delta as the screen says it.
fn delta(v: &CounterValue) -> String {
    match v.delta {
        Some(d) => format!("+{d}"),
        None if v.reset => "reset".into(),
        None => "unknown".into(),
    }
}

/// Growth since the first sample: unknown once the counter has reset.
fn since(v: &CounterValue) -> String {
    match v.since_start {
        Some(d) => format!("+{d}"),
        None => format!("unknown ({} reset{})", v.resets, plural(v.resets)),
    }
}

fn plural(n: u32) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Milliseconds per operation: `ms` over `ops`, `-` without operations.
fn per_op(ms: Option<u64>, ops: Option<u64>) -> String {
    match (ms, ops) {
        (_, Some(0)) => "-".into(),
        (Some(ms), Some(ops)) => format!("{:.2} ms", ms as f64 / ops as f64),
        _ => "unknown".into(),
    }
}

/// A cell or a name from the file as the screen shows it: control
/// characters escaped, at most [`MAX_CELL`] columns (a hostile file's
/// names do not widen every row).
fn shown(s: &str) -> String {
    cut(&escape(s), MAX_CELL)
}

/// The widest a cell is shown.
const MAX_CELL: u16 = 64;

/// Rows of cells as lines, each column as wide as its widest cell.
fn table(out: &mut Vec<(RowKind, String)>, header: &[&str], cells: Vec<Vec<String>>) {
    let cells: Vec<Vec<String>> = cells
        .into_iter()
        .map(|r| r.iter().map(|c| shown(c)).collect())
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |row: &mut dyn Iterator<Item = &str>| {
        let mut s = String::from("  ");
        for (c, w) in row.zip(&widths) {
            s.push_str(&format!("{c:<w$}  "));
        }
        s.trim_end().to_string()
    };
    out.push((RowKind::Header, line(&mut header.iter().copied())));
    for row in &cells {
        out.push((RowKind::Cells, line(&mut row.iter().map(String::as_str))));
    }
}

/// The screen's lines for one sample.
pub fn rows(l: &CountersLine, kernel: Option<&KernelView>) -> Vec<(RowKind, String)> {
    let mut out = Vec::new();
    for n in &l.notes {
        out.push((RowKind::Note, escape(n).into_owned()));
    }
    out.push((RowKind::Note, kernel_words(l, kernel)));
    let interval = l
        .interval_s
        .map_or("last interval".to_string(), |s| format!("last {s:.1} s"));
    for m in &l.mounts {
        mount_rows(&mut out, m, &interval);
    }
    if l.devices.is_empty() {
        out.push((
            RowKind::Note,
            "no RDMA device counters (no /sys/class/infiniband/*/ports/*/hw_counters here, or give --sysfs-root)".into(),
        ));
    }
    device_rows(&mut out, &l.devices, &interval);
    out
}

/// Whether the diagnosis has the kernel's causes, and from what.
fn kernel_words(l: &CountersLine, kernel: Option<&KernelView>) -> String {
    match kernel {
        Some(k) if k.transports > 0 => format!(
            "the diagnosis checks no_remote_invalidation and mr_exhaustion on these: {} RDMA mount(s), {} transport(s), growth since the first sample",
            k.mounts.len(),
            k.transports
        ),
        Some(k) => format!(
            "no_remote_invalidation and mr_exhaustion not checked: {} RDMA mount(s), but no transport with a known growth ({} went backwards)",
            k.mounts.len(),
            k.reset_transports
        ),
        None if !l.mountstats_readable => {
            "no_remote_invalidation and mr_exhaustion not checked: mountstats not read (see above)".into()
        }
        None => "no_remote_invalidation and mr_exhaustion not checked: no NFS mount over RDMA in mountstats".into(),
    }
}

fn mount_rows(out: &mut Vec<(RowKind, String)>, m: &MountCounters, interval: &str) {
    out.push((
        RowKind::Heading,
        format!(
            "{} ({}): {} RDMA transport{}",
            shown(&m.mount),
            shown(&m.export),
            m.transports.len(),
            if m.transports.len() == 1 { "" } else { "s" }
        ),
    ));
    if m.transports.is_empty() {
        out.push((
            RowKind::Note,
            "  no xprt: rdma line this analyzer reads (a length no known kernel prints): its fields are unknown".into(),
        ));
    }
    for t in &m.transports {
        transport_rows(out, t, m.transports.len(), interval);
    }
    out.push((
        RowKind::Sub,
        format!(
            "  per-op counters ({} operation{} used; all transports together)",
            m.ops.len(),
            if m.ops.len() == 1 { "" } else { "s" }
        ),
    ));
    let cells = m.ops.iter().map(op_cells).collect();
    table(
        out,
        &[
            "op",
            "ops",
            interval,
            "since start",
            "ntrans",
            "+ntrans",
            "timeouts",
            "+timeouts",
            "errors",
            "+errors",
            "rtt/op last",
            "exec/op last",
            "rtt/op all",
            "exec/op all",
        ],
        cells,
    );
}

fn transport_rows(
    out: &mut Vec<(RowKind, String)>,
    t: &TransportCounters,
    n: usize,
    interval: &str,
) {
    out.push((
        RowKind::Sub,
        format!(
            "  transport {} of {n} ({} fields printed)",
            t.transport, t.fields_printed
        ),
    ));
    let cells = t
        .printed
        .iter()
        .map(|&(name, value)| {
            let counts = RDMA_FIELDS
                .iter()
                .find(|(f, _)| *f == name)
                .map_or("MRs recovered after a flush (older kernels)", |(_, w)| w);
            let (last, start) = match t.fields.get(name) {
                Some(v) => (delta(v), since(v)),
                // Not a count: the port is always 0, idle_time a gauge.
                None => ("-".into(), "-".into()),
            };
            vec![
                name.to_string(),
                value.to_string(),
                last,
                start,
                counts.to_string(),
            ]
        })
        .collect();
    table(
        out,
        &["field", "total", interval, "since start", "counts"],
        cells,
    );
}

fn op_cells(o: &OpCounters) -> Vec<String> {
    let total_delta = |v: &CounterValue| (v.total.to_string(), delta(v));
    let (ntrans, dntrans) = total_delta(&o.ntrans);
    let (timeouts, dtimeouts) = total_delta(&o.timeouts);
    let (errors, derrors) = o.errors.as_ref().map_or_else(
        // statvers 1.0 prints no error count.
        || ("unknown".to_string(), "unknown".to_string()),
        total_delta,
    );
    vec![
        o.op.clone(),
        o.ops.total.to_string(),
        delta(&o.ops),
        since(&o.ops),
        ntrans,
        dntrans,
        timeouts,
        dtimeouts,
        errors,
        derrors,
        per_op(o.rtt_ms.delta, o.ops.delta),
        per_op(o.execute_ms.delta, o.ops.delta),
        per_op(o.rtt_ms.since_start, o.ops.since_start),
        per_op(o.execute_ms.since_start, o.ops.since_start),
    ]
}

fn device_rows(out: &mut Vec<(RowKind, String)>, devices: &[DeviceCounterValue], interval: &str) {
    let mut start = 0;
    while start < devices.len() {
        let (dev, port) = (&devices[start].device, devices[start].port);
        let end = devices[start..]
            .iter()
            .position(|d| d.device != *dev || d.port != port)
            .map_or(devices.len(), |n| start + n);
        out.push((RowKind::Heading, format!("{} port {port}", shown(dev))));
        let cells = devices[start..end]
            .iter()
            .map(|d| {
                vec![
                    d.group.clone(),
                    d.name.clone(),
                    d.value.total.to_string(),
                    delta(&d.value),
                    since(&d.value),
                ]
            })
            .collect();
        table(
            out,
            &["group", "counter", "total", interval, "since start"],
            cells,
        );
        start = end;
    }
}

/// The lines a screen without a sample shows, and why it has none.
fn empty_words(m: &Model) -> Vec<String> {
    match m.kernel.sampling {
        Sampling::File => vec![
            "No kernel counters: a capture file has no kernel to read.".into(),
            "`live` reads /proc/self/mountstats and the RDMA devices' sysfs counters".into(),
            "every --counters-interval (default 5 s) and shows them here. For a".into(),
            "capture, set copies of mountstats beside it: rdma-analyzer mountstats".into(),
            "AFTER --before BEFORE --capture FILE (docs/kernel-counters.md).".into(),
        ],
        Sampling::Off => vec![
            "The counter sampler is off (--counters-interval 0): the kernel's".into(),
            "counters are not read, and the diagnosis's no_remote_invalidation".into(),
            "and mr_exhaustion are not checked.".into(),
        ],
        Sampling::Every(s) => vec![format!("Waiting for the first sample (every {s} s).")],
    }
}

fn title(m: &Model) -> String {
    let Some(l) = &m.kernel.latest else {
        return " Counters ".into();
    };
    let at =
        crate::output::clock::Clock::new(crate::output::clock::TimeFormat::Utc).at(Some(l.at_ns));
    let every = match m.kernel.sampling {
        Sampling::Every(s) => format!(", every {s} s"),
        _ => String::new(),
    };
    format!(" Counters: sample {} at {at}{every} ", l.sample)
}

fn style(k: RowKind) -> Style {
    match k {
        RowKind::Heading => Style::new().add_modifier(Modifier::BOLD),
        RowKind::Sub => Style::new().fg(Color::Gray).add_modifier(Modifier::BOLD),
        RowKind::Header => header_style(),
        RowKind::Cells => Style::new(),
        RowKind::Note => Style::new().fg(Color::Yellow),
    }
}

/// Draws the screen.
pub fn draw(f: &mut Frame<'_>, area: Rect, m: &Model, ui: &UiState) {
    let i = Screen::Counters.index();
    // Borders and the selection's mark.
    let width = area.width.saturating_sub(4);
    let words: Vec<(RowKind, String)>;
    let lines: &[(RowKind, String)] = if m.kernel.latest.is_some() {
        &m.kernel.rows
    } else {
        words = empty_words(m)
            .into_iter()
            .map(|s| (RowKind::Note, s))
            .collect();
        &words
    };
    if lines.is_empty() {
        return;
    }
    let page = usize::from(area.height.saturating_sub(2)).max(1);
    let sel = ui.selected[i].min(lines.len() - 1);
    let top = super::widgets::window(ui.top[i], sel, page);
    let end = (top + page).min(lines.len());
    let items = lines[top..end]
        .iter()
        .map(|(k, s)| ListItem::new(Line::styled(cut(s, width), style(*k))));
    let list = List::new(items)
        .highlight_style(selected_style())
        .highlight_symbol("▶ ")
        .block(block(title(m)));
    let mut st = ListState::default().with_selected(Some(sel - top));
    f.render_stateful_widget(list, area, &mut st);
}

/// The lines the screen lists (for scrolling).
pub fn len(m: &Model) -> usize {
    if m.kernel.latest.is_some() {
        m.kernel.rows.len()
    } else {
        empty_words(m).len()
    }
}
