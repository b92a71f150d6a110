//! Diagnosis: the causes the diagnosis names, largest impact first; the
//! selected one's evidence and advice; each client's connections in time
//! order with its outages. Enter on a cause lists its transactions (the
//! transactions screen, filtered to its XIDs, else its connections, the
//! first call of its time range selected); Esc comes back here.
//!
//! ```text
//! ┌ Diagnosis: 2 causes, largest impact first ─────────────────────────────┐
//! │ # cause            peer   impact measured                              │
//! │ 1 reconnect_stall  fabric  92.5% 1 operation(s) sent again after ...   │
//! └────────────────────────────────────────────────────────────────────────┘
//! ┌ 1. reconnect_stall: fix the fabric (Enter: its transactions) ──────────┐
//! │ measured, when, evidence, advice, examples                             │
//! └────────────────────────────────────────────────────────────────────────┘
//! ┌ Connections of each client ────────────────────────────────────────────┐
//! │ client 10.99.0.2                                                       │
//! │   c1: REQ 0.206 s, established 0.219 s, ... torn down 20.811 s ...     │
//! │   outage 21.907 s: ...                                                 │
//! └────────────────────────────────────────────────────────────────────────┘
//! ```
//!
//! The causes and the timeline are computed by [`Model::refresh`] when
//! something came in, never while drawing; drawing formats only what fits.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, TableState, Wrap};
use ratatui::Frame;

use super::model::Model;
use super::state::{Action, Screen, UiState};
use super::widgets::{block, header_style, selected_style};
use crate::diagnosis::Cause;
use crate::output::report::count;

/// What the diagnosis has judged so far: `N RPCs on M connections`.
fn looked_at(m: &Model) -> String {
    format!(
        "{} on {}",
        count(m.diagnosis.operations(), "RPC"),
        count(m.state.connections.len() as u64, "connection")
    )
}

/// The line that says the diagnosis named nothing, and over what.
pub fn no_cause(m: &Model) -> String {
    if m.diagnosis.operations() == 0 {
        return format!(
            "nothing to judge{} — no RPC-over-RDMA call on {}",
            if m.done { "" } else { " yet" },
            count(m.state.connections.len() as u64, "connection"),
        );
    }
    format!(
        "no cause found{} — looked at {}",
        if m.done { "" } else { " so far" },
        looked_at(m)
    )
}

/// The screen to settle on once the source is done: the diagnosis when it
/// names a cause, else the overview.
pub fn first_screen(m: &Model) -> Screen {
    if m.causes.is_empty() {
        Screen::Overview
    } else {
        Screen::Diagnosis
    }
}

/// What Enter on a cause means: its transactions (its XIDs, else its
/// connections), the first one of its time range selected.
pub fn activate(m: &Model, ui: &UiState) -> Option<Action> {
    let c = m.causes.get(ui.selected[Screen::Diagnosis.index()])?;
    let e = &c.evidence;
    let terms = if e.xids.is_empty() {
        &e.connections
    } else {
        &e.xids
    };
    // A microsecond early: from_s went through a float and back.
    let seek_ns = e
        .from_s
        .zip(m.state.totals.first_ts_ns)
        .map(|(s, t0)| (t0 + (s * 1e9) as u64).saturating_sub(1_000));
    Some(Action::FilterTo {
        filter: terms.join("|"),
        seek_ns,
    })
}

/// Rows `lines` take wrapped in `width` columns (an estimate: word
/// wrapping can take a row more now and then).
fn rows(lines: &[Line<'_>], width: u16) -> u16 {
    let w = usize::from(width.saturating_sub(2)).max(1);
    let n: usize = lines.iter().map(|l| l.width().div_ceil(w).max(1)).sum();
    u16::try_from(n).unwrap_or(u16::MAX)
}

/// Draws the screen.
pub fn draw(f: &mut Frame<'_>, area: Rect, m: &Model, ui: &UiState) {
    let sel = ui.selected[Screen::Diagnosis.index()].min(m.causes.len().saturating_sub(1));
    let cause = m.causes.get(sel);
    let table_h = if m.causes.is_empty() {
        5
    } else {
        (m.causes.len() as u16 + 3).clamp(4, (area.height / 3).max(4))
    };
    let detail = cause.map_or_else(Vec::new, detail_lines);
    let detail_h = if m.causes.is_empty() {
        0
    } else {
        rows(&detail, area.width).saturating_add(2)
    };
    // The timeline gets what the causes leave, and at least 40% of the
    // height when they would take more (the detail pane is cut then).
    let left = area.height.saturating_sub(table_h + detail_h);
    let most = left.max(area.height * 2 / 5).max(3);
    let tl = timeline_lines(m, cause, usize::from(most.saturating_sub(2)));
    let tl_h = rows(&tl.lines, area.width).saturating_add(2).clamp(3, most);
    if m.causes.is_empty() {
        let [top, bottom] =
            Layout::vertical([Constraint::Length(table_h), Constraint::Min(tl_h)]).areas(area);
        draw_none(f, top, m);
        draw_timeline(f, bottom, tl);
        return;
    }
    let [table, middle, bottom] = Layout::vertical([
        Constraint::Length(table_h),
        Constraint::Min(3),
        Constraint::Length(tl_h),
    ])
    .areas(area);
    draw_table(f, table, m, ui, sel);
    if let Some(c) = cause {
        draw_detail(f, middle, c, sel + 1, detail);
    }
    draw_timeline(f, bottom, tl);
}

/// Which stretch the causes are over, for the screen's title: empty for a
/// file (the whole capture); in `live`, the window and the count since the start.
fn scope(m: &Model) -> String {
    let Some(w) = &m.window else {
        return String::new();
    };
    let ns = w.width_ns();
    let width = if ns % 60_000_000_000 == 0 {
        format!("{}m", ns / 60_000_000_000)
    } else {
        format!("{}s", ns as f64 / 1e9)
    };
    format!(
        " over the last {width} of the capture clock (since the start: {} cause{})",
        m.run_causes,
        if m.run_causes == 1 { "" } else { "s" }
    )
}

fn draw_none(f: &mut Frame<'_>, area: Rect, m: &Model) {
    // With none since the start either, the run's sentence is true of the
    // window too, and says what was looked at.
    let first = if m.window.is_some() && m.run_causes > 0 {
        format!("no cause in the window (looked at {} so far)", looked_at(m))
    } else {
        no_cause(m)
    };
    let lines = vec![
        Line::from(Span::styled(first, Style::new().fg(Color::Green))),
        Line::from(
            "nothing costs the RPCs time or fails them beyond the rules' thresholds (docs/diagnosis.md)",
        ),
    ];
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: true })
            .block(block(format!(" Diagnosis{} ", scope(m)))),
        area,
    );
}

fn draw_table(f: &mut Frame<'_>, area: Rect, m: &Model, ui: &UiState, sel: usize) {
    let page = usize::from(area.height.saturating_sub(3)).max(1);
    let top = super::widgets::window(ui.top[Screen::Diagnosis.index()], sel, page);
    let rows = m
        .causes
        .iter()
        .enumerate()
        .skip(top)
        .take(page)
        .map(|(i, c)| {
            Row::new(vec![
                Cell::from((i + 1).to_string()),
                Cell::from(Span::styled(c.cause.as_str(), Style::new().fg(Color::Red))),
                Cell::from(c.peer.as_str()),
                Cell::from(format!("{:>5.1}%", 100.0 * c.impact.score)),
                Cell::from(c.impact.measured.as_str()),
            ])
        });
    // As wide as the longest name listed: the measure gets the rest.
    let name_w = m
        .causes
        .iter()
        .map(|c| c.cause.as_str().len())
        .max()
        .unwrap_or(5)
        .max(5);
    let widths = [
        Constraint::Length(2),
        Constraint::Length(u16::try_from(name_w).unwrap_or(29)),
        Constraint::Length(7),
        Constraint::Length(6),
        Constraint::Min(10),
    ];
    let title = format!(
        " Diagnosis: {} cause{}, largest impact first{}{} ",
        m.causes.len(),
        if m.causes.len() == 1 { "" } else { "s" },
        if m.done || m.window.is_some() {
            ""
        } else {
            " (so far)"
        },
        scope(m)
    );
    let t = Table::new(rows, widths)
        .header(Row::new(["#", "cause", "peer", "impact", "measured"]).style(header_style()))
        .row_highlight_style(selected_style())
        .block(block(title));
    let mut st = TableState::default().with_selected(Some(sel - top));
    f.render_stateful_widget(t, area, &mut st);
}

/// `label` in the key colour, then `text`.
fn field<'a>(label: &'static str, text: String) -> Line<'a> {
    Line::from(vec![
        Span::styled(label, Style::new().fg(Color::Cyan)),
        Span::raw(text),
    ])
}

/// The selected cause's measure, time range, evidence, advice, examples.
fn detail_lines<'a>(c: &Cause) -> Vec<Line<'a>> {
    let e = &c.evidence;
    let mut lines = vec![field("measured  ", c.impact.measured.clone())];
    let secs = |s: Option<f64>| s.map_or("?".to_string(), |s| format!("{s:.3} s"));
    if e.from_s.is_some() || e.to_s.is_some() {
        lines.push(field(
            "when      ",
            format!(
                "{} .. {} since the capture's start",
                secs(e.from_s),
                secs(e.to_s)
            ),
        ));
    }
    let mut ev = Vec::new();
    if !e.connections.is_empty() {
        ev.push(format!("connections {}", e.connections.join(", ")));
    }
    if !e.xids.is_empty() {
        ev.push(format!("xids {}", e.xids.join(", ")));
    }
    if !e.frames.is_empty() {
        let fr: Vec<String> = e.frames.iter().map(u64::to_string).collect();
        ev.push(format!("frames {}", fr.join(",")));
    }
    if !ev.is_empty() {
        lines.push(field("evidence  ", ev.join("; ")));
    }
    lines.push(field("advice    ", c.advice.clone()));
    for x in &e.examples {
        lines.push(field("e.g.      ", x.clone()));
    }
    lines
}

fn draw_detail(f: &mut Frame<'_>, area: Rect, c: &Cause, n: usize, lines: Vec<Line<'_>>) {
    let title = format!(
        " {n}. {}: fix the {} (Enter: its transactions) ",
        c.cause.as_str(),
        c.peer.as_str()
    );
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: true })
            .block(block(title)),
        area,
    );
}

/// The lines of the timeline pane, and what did not fit in them.
struct TimelineLines<'a> {
    lines: Vec<Line<'a>>,
    /// Clients shown.
    clients: usize,
    /// Clients of the cause (or in all) not shown for lack of room.
    more: usize,
    /// Outages of the clients of the cause (or of all).
    outages: usize,
}

/// The timeline of the clients of `cause`'s connections (every client's
/// when it names none), outages in red, at most `max` lines: only what
/// fits is formatted, however many clients there are.
fn timeline_lines<'a>(m: &Model, cause: Option<&Cause>, max: usize) -> TimelineLines<'a> {
    let start = m.state.totals.first_ts_ns;
    let named = cause.map_or(&[][..], |c| &c.evidence.connections[..]);
    let mut t = TimelineLines {
        lines: Vec::new(),
        clients: 0,
        more: 0,
        outages: 0,
    };
    for tl in &m.timeline {
        let mine = named.is_empty()
            || tl
                .connections
                .iter()
                .any(|e| named.contains(&e.connection.to_string()));
        if !mine {
            continue;
        }
        t.outages += tl.outages.len();
        if t.lines.len() >= max {
            t.more += 1;
            continue;
        }
        t.clients += 1;
        t.lines.push(Line::from(Span::styled(
            format!("client {}", tl.client),
            Style::new().add_modifier(Modifier::BOLD),
        )));
        // Outages first: they are what the screen is for.
        for o in &tl.outages {
            t.lines.push(Line::from(Span::styled(
                format!("  {}", o.describe(start)),
                Style::new().fg(Color::Red),
            )));
        }
        for e in &tl.connections {
            if t.lines.len() >= max {
                break;
            }
            t.lines.push(Line::from(format!("  {}", e.describe(start))));
        }
    }
    t
}

fn draw_timeline(f: &mut Frame<'_>, area: Rect, t: TimelineLines<'_>) {
    let more = if t.more > 0 {
        format!(", {} more client(s): report lists all", t.more)
    } else {
        String::new()
    };
    let title = format!(
        " Connections of each client in time order: {} outage{}{more} ",
        t.outages,
        if t.outages == 1 { "" } else { "s" }
    );
    let body = if t.lines.is_empty() && t.clients == 0 {
        vec![Line::from("no connection yet")]
    } else {
        t.lines
    };
    f.render_widget(
        Paragraph::new(body)
            .wrap(Wrap { trim: false })
            .block(block(title)),
        area,
    );
}
