//! Credits: per connection, credits granted and calls in flight over time,
//! overruns marked, time spent at the credit limit.
//!
//! ```text
//! ┌ Connections ─────┐┌ c1 credits over time (s since capture start) ──────┐
//! │ c1 64/pk4 45 ms  ││ 64 ⠉⠉⠉⠉⠉⠉⠉⠉⠉⠉⠉⠉⠉⠉ granted                         │
//! │                  ││  0 ⣀⣀⡠⣀⣀⣀⣀⣀⣀⣀  in flight   ✕ overrun               │
//! └──────────────────┘└────────────────────────────────────────────────────┘
//! ┌ c1: at the limit 45.84 ms (0.2%), peak 4, granted 64..64, overruns 0 ──┐
//! ```

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::text::Line;
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Paragraph, Row, Table, TableState};
use ratatui::Frame;

use super::model::Model;
use super::state::{Screen, UiState};
use super::widgets::{block, dur, header_style, selected_style};
use crate::engine::{Connection, Kind};

/// Draws the credit screen.
pub fn draw(f: &mut Frame<'_>, area: Rect, m: &Model, ui: &UiState) {
    let list_w = if area.width >= 120 { 34 } else { 27 };
    let [list, right] =
        Layout::horizontal([Constraint::Length(list_w), Constraint::Min(10)]).areas(area);
    let [chart, summary] =
        Layout::vertical([Constraint::Min(5), Constraint::Length(5)]).areas(right);
    let i = Screen::Credits.index();
    let sel = ui.selected[i].min(m.state.connections.len().saturating_sub(1));
    draw_list(f, list, m, ui, sel);
    let Some(c) = m.state.connections.values().nth(sel) else {
        f.render_widget(
            Paragraph::new("no connection yet").block(block(" Credits ".into())),
            right,
        );
        return;
    };
    draw_chart(f, chart, m, c);
    draw_summary(f, summary, m, c);
}

fn draw_list(f: &mut Frame<'_>, area: Rect, m: &Model, ui: &UiState, sel: usize) {
    let page = usize::from(area.height.saturating_sub(3));
    let top = super::widgets::window(ui.top[Screen::Credits.index()], sel, page);
    let cells: Vec<Vec<String>> = m
        .state
        .connections
        .values()
        .skip(top)
        .take(page)
        .map(|c| {
            vec![
                c.id.to_string(),
                c.granted
                    .filter(|_| c.is_rpcrdma())
                    .map_or("-".into(), |g| g.to_string()),
                c.peak_in_flight.to_string(),
                dur(c.at_limit_ns),
            ]
        })
        .collect();
    let header = ["conn", "grant", "peak", "at limit"];
    let (widths, cells) =
        super::widgets::fit_rows(&header, cells, &[8, 6, 6, 12], area.width.saturating_sub(2));
    let t = Table::new(cells.into_iter().map(Row::new), widths)
        .header(Row::new(header).style(header_style()))
        .row_highlight_style(selected_style())
        .block(block(" Connections ".into()));
    let mut st =
        TableState::default().with_selected((!m.state.connections.is_empty()).then_some(sel - top));
    f.render_stateful_widget(t, area, &mut st);
}

/// Overruns: points where more calls were in flight than granted.
fn overrun(p: &crate::engine::CreditPoint) -> bool {
    p.granted > 0 && p.in_flight > p.granted
}

fn draw_chart(f: &mut Frame<'_>, area: Rect, m: &Model, c: &Connection) {
    let t0 = m.t0();
    let secs = |ts: u64| ts.saturating_sub(t0) as f64 / 1e9;
    // Step lines: each value holds until the next point.
    let mut granted = Vec::with_capacity(c.credit_series.len() * 2);
    let mut flight = Vec::with_capacity(c.credit_series.len() * 2);
    let mut over = Vec::new();
    let mut prev: Option<&crate::engine::CreditPoint> = None;
    for p in &c.credit_series {
        let x = secs(p.ts_ns);
        if let Some(q) = prev {
            granted.push((x, f64::from(q.granted)));
            flight.push((x, f64::from(q.in_flight)));
        }
        granted.push((x, f64::from(p.granted)));
        flight.push((x, f64::from(p.in_flight)));
        if overrun(p) {
            over.push((x, f64::from(p.in_flight)));
        }
        prev = Some(p);
    }
    let x_max = secs(c.last_ts_ns.max(t0)).max(secs(c.first_ts_ns) + 1e-6);
    let x_min = secs(c.first_ts_ns);
    // A grant far above what is ever used would flatten the in-flight line
    // to the axis: then scale to the calls in flight and say so.
    let granted_max = c.granted_max.unwrap_or(0);
    let peak = c.peak_in_flight.max(1);
    let clipped = granted_max > 4 * peak;
    let y_max = f64::from(if clipped {
        2 * peak
    } else {
        granted_max.max(peak)
    }) * 1.1;
    let datasets = vec![
        Dataset::default()
            .name("granted")
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::new().fg(Color::Cyan))
            .data(&granted),
        Dataset::default()
            .name("in flight")
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::new().fg(Color::Yellow))
            .data(&flight),
        Dataset::default()
            .name("overrun")
            .marker(Marker::Dot)
            .graph_type(GraphType::Scatter)
            .style(Style::new().fg(Color::Red))
            .data(&over),
    ];
    let chart = Chart::new(datasets)
        .block(block(format!(
            " {} credits granted and calls in flight (time since capture start, {} points){} ",
            c.id,
            c.credit_series.len(),
            if clipped {
                format!("; grant {granted_max} is above the scale")
            } else {
                String::new()
            }
        )))
        .x_axis(
            Axis::default()
                .bounds([x_min, x_max])
                .labels([dur((x_min * 1e9) as u64), dur((x_max * 1e9) as u64)]),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, y_max])
                .labels(["0".to_string(), format!("{:.0}", y_max / 1.1)]),
        );
    f.render_widget(chart, area);
}

fn draw_summary(f: &mut Frame<'_>, area: Rect, m: &Model, c: &Connection) {
    let span = c.last_ts_ns.saturating_sub(c.first_ts_ns);
    let pct = if span == 0 {
        0.0
    } else {
        c.at_limit_ns as f64 * 100.0 / span as f64
    };
    let overruns_seen = c.credit_series.iter().filter(|p| overrun(p)).count();
    let overrun_anoms = m
        .anomalies
        .iter()
        .filter(|a| a.kind == Kind::CreditOverrun && a.connection == Some(c.id))
        .count();
    let lines = vec![
        Line::from(format!(
            "at the limit {} ({pct:.2}% of {}); peak in flight {}, now {}",
            dur(c.at_limit_ns),
            dur(span),
            c.peak_in_flight,
            c.in_flight
        )),
        Line::from(format!(
            "granted {}..{} (last {}), requested {}; overruns {} ({} points)",
            c.granted_min.map_or("-".into(), |g| g.to_string()),
            c.granted_max.map_or("-".into(), |g| g.to_string()),
            c.granted.map_or("-".into(), |g| g.to_string()),
            c.requested.map_or("-".into(), |g| g.to_string()),
            overrun_anoms,
            overruns_seen
        )),
    ];
    f.render_widget(
        Paragraph::new(lines)
            .wrap(ratatui::widgets::Wrap { trim: true })
            .block(block(format!(" {} ", c.id))),
        area,
    );
}
