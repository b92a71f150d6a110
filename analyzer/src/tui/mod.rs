//! The terminal UI (`rdma-analyzer open FILE`, `live` on a terminal): a thin
//! view over the engine.
//!
//! ```text
//! ┌ 0 Diagnosis │ 1 Overview │ 2 Transactions │ 3 Detail │ … │ 7 Counters ┐  tabs
//! │                                                                           │
//! │  the screen's render module (diagnosis.rs, overview.rs, transactions.rs,  │  body
//! │  detail.rs, chunks.rs, credits.rs, anomalies.rs, counters.rs)             │
//! │                                                                           │
//! └ status: source, progress gauge or live rates, frames, events, drops ──────┘  status
//! ```
//!
//! Data flows one way: the pipeline runs the engine over any
//! [`Source`](crate::pipeline::Source) on its own thread and [`feed::TuiSink`]
//! sends findings and state snapshots; [`model::Model`] accumulates them into
//! bounded tables; [`draw`] renders `&Model` and `&UiState` and nothing else.
//! Keys go through [`keys::map`] to an [`state::Action`] that
//! [`state::UiState::apply`] performs.

pub mod anomalies;
pub mod app;
pub mod chunks;
pub mod counters;
pub mod credits;
pub mod detail;
pub mod diagnosis;
pub mod feed;
pub mod frames;
pub mod keys;
pub mod model;
pub mod overview;
pub mod state;
pub mod transactions;
mod widgets;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::output::escape::escape;
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Tabs, Wrap};
use ratatui::Frame;

pub use app::{run, show, show_acked, View};
use model::Model;
use state::{Screen, UiState};

/// Draws the whole screen.
pub fn draw(f: &mut Frame<'_>, m: &Model, ui: &UiState) {
    let [tabs, body, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(f.area());
    draw_tabs(f, tabs, ui);
    match ui.screen {
        Screen::Diagnosis => diagnosis::draw(f, body, m, ui),
        Screen::Overview => overview::draw(f, body, m, ui),
        Screen::Transactions => transactions::draw(f, body, m, ui),
        Screen::Detail => detail::draw(f, body, m, ui),
        Screen::Chunks => chunks::draw(f, body, m, ui),
        Screen::Credits => credits::draw(f, body, m, ui),
        Screen::Anomalies => anomalies::draw(f, body, m, ui),
        Screen::Counters => counters::draw(f, body, m, ui),
    }
    draw_status(f, status, m, ui);
    if ui.help {
        draw_help(f, body);
    } else if let Some(msg) = &ui.message {
        draw_message(f, body, msg);
    }
}

fn draw_tabs(f: &mut Frame<'_>, area: Rect, ui: &UiState) {
    let full = |s: &Screen| format!("{} {}", s.key(), s.title());
    // Every title and a divider between each two: 88 columns; an 80-column
    // terminal gets the short titles rather than losing the last tab.
    let width: usize = Screen::ALL
        .iter()
        .map(|s| full(s).chars().count() + 1)
        .sum();
    let fits = width.saturating_sub(1) <= usize::from(area.width);
    let titles = Screen::ALL.iter().map(|s| {
        if fits {
            full(s)
        } else {
            format!("{} {}", s.key(), s.short_title())
        }
    });
    let t = Tabs::new(titles)
        .select(ui.screen.index())
        .style(Style::new().fg(Color::Gray))
        .highlight_style(Style::new().fg(Color::Black).bg(Color::Cyan))
        .divider("│")
        .padding("", "");
    f.render_widget(t, area);
}

fn draw_status(f: &mut Frame<'_>, area: Rect, m: &Model, ui: &UiState) {
    let mut spans: Vec<Span<'_>> = Vec::with_capacity(16);
    if let Some(e) = &ui.editing {
        spans.push(Span::styled(
            format!("filter: {e}█"),
            Style::new().fg(Color::Black).bg(Color::Yellow),
        ));
        match crate::output::Filter::parse(e) {
            Err(err) => spans.push(Span::styled(
                format!("  {err}"),
                Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
            )),
            Ok(_) => spans.push(Span::raw(
                "  Enter apply, Esc cancel; c1 && READ  latency > 10ms  frame == 147  severity >= warning",
            )),
        }
        f.render_widget(Paragraph::new(Line::from(spans)), area);
        return;
    }
    let name = m.source.rsplit('/').next().unwrap_or(&m.source);
    spans.push(Span::styled(
        escape(name).into_owned(),
        Style::new().add_modifier(Modifier::BOLD),
    ));
    spans.push(Span::raw(" "));
    match (m.done, m.progress.bytes_total) {
        (true, _) => spans.push(Span::styled("done", Style::new().fg(Color::Green))),
        (false, Some(total)) => {
            let pct = m
                .progress
                .bytes_read
                .saturating_mul(100)
                .checked_div(total)
                .unwrap_or(100)
                .min(100);
            let filled = (pct / 10) as usize;
            spans.push(Span::styled(
                format!("{}{}", "█".repeat(filled), "░".repeat(10 - filled)),
                Style::new().fg(Color::Cyan),
            ));
            spans.push(Span::raw(format!(" {pct:>3}%")));
        }
        (false, None) => {
            spans.push(Span::styled("live", Style::new().fg(Color::Green)));
            spans.push(Span::raw(format!(" {:.0} frames/s", m.frame_rate)));
        }
    }
    if let Some(e) = &m.error {
        spans.push(Span::styled(
            format!(" (stopped: {})", escape(e)),
            Style::new().fg(Color::Red),
        ));
    } else if let Some(n) = &m.notice {
        let color = if n.warning {
            Color::Yellow
        } else {
            Color::Reset
        };
        spans.push(Span::styled(
            format!(" ({})", escape(&n.text)),
            Style::new().fg(color),
        ));
    }
    let c = &m.counters;
    let dropped = c.dropped + c.rows_not_kept;
    spans.push(Span::raw(format!(
        "  frames {}  events {}  txns {}  dropped {}",
        m.progress.frames,
        c.events,
        m.rows.len(),
        dropped
    )));
    if !ui.filter.is_empty() {
        spans.push(Span::styled(
            format!("  filter {}", ui.filter),
            Style::new().fg(Color::Yellow),
        ));
    }
    if ui.paused {
        spans.push(Span::styled(
            "  PAUSED",
            Style::new().fg(Color::Black).bg(Color::Yellow),
        ));
    }
    spans.push(Span::styled(
        "  ? help  q quit",
        Style::new().fg(Color::DarkGray),
    ));
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// A rectangle `w`×`h` centred in `r` (clipped to it).
fn centered(r: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(r.width);
    let h = h.min(r.height);
    Rect {
        x: r.x + (r.width - w) / 2,
        y: r.y + (r.height - h) / 2,
        width: w,
        height: h,
    }
}

fn draw_help(f: &mut Frame<'_>, area: Rect) {
    let lines: Vec<Line<'_>> = keys::HELP
        .iter()
        .map(|(k, what)| {
            Line::from(vec![
                Span::styled(format!("{k:<17}"), Style::new().fg(Color::Cyan)),
                Span::raw(*what),
            ])
        })
        .collect();
    let h = u16::try_from(lines.len())
        .unwrap_or(u16::MAX)
        .saturating_add(2);
    let r = centered(area, 76, h);
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" Keys (Esc or ? closes) "),
        ),
        r,
    );
}

fn draw_message(f: &mut Frame<'_>, area: Rect, msg: &str) {
    let r = centered(area, 76, 9);
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(msg)
            .wrap(Wrap { trim: false })
            .block(Block::default().borders(Borders::ALL).title(" Esc closes ")),
        r,
    );
}

#[cfg(test)]
mod tests;
