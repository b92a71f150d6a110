//! Transactions: one row per XID, sortable and filterable.
//!
//! ```text
//! ┌ Transactions 578/578, sort time ▲ ─────────────────────────────────────────┐
//! │ time       conn xid        procedure    call   reply  latency  rt bytes  … │
//! │ 0.891234   c1   0x9bc0454e NFS NULL     inline inline 45.84 ms 1  0 B    … │
//! └─────────────────────────────────────────────────────────────────────────────┘
//! ```
//!
//! Only the visible window is formatted: drawing costs the same with ten
//! rows or a million (the view is a sorted vector of row indices).

use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::Span;
use ratatui::widgets::{Cell, Row, Table, TableState};
use ratatui::Frame;

use super::model::{origin_bit, Model, TxnRow, NONE32, NONE64};
use super::state::{Screen, SortCol, UiState};
use super::widgets::{block, bytes, dur, header_style, selected_style, transfer_short};
use crate::engine::{Kind, Origin};

/// A column: what it shows, how wide, how much it matters when space is short.
struct Col {
    sort: SortCol,
    name: &'static str,
    width: u16,
    priority: u8,
}

const fn col(sort: SortCol, name: &'static str, width: u16, priority: u8) -> Col {
    Col {
        sort,
        name,
        width,
        priority,
    }
}

fn columns(wide: bool) -> [Col; 11] {
    let tw = if wide { 12 } else { 6 };
    [
        col(SortCol::Time, "time s", 10, 0),
        col(SortCol::Conn, "conn", 4, 1),
        col(SortCol::Xid, "xid", 10, 0),
        col(SortCol::Procedure, "procedure", 14, 0),
        col(SortCol::Call, "call", tw, 1),
        col(SortCol::Reply, "reply", tw, 1),
        col(SortCol::Latency, "latency", 9, 0),
        col(SortCol::RoundTrips, "rt", 2, 2),
        col(SortCol::Bytes, "moved", 9, 2),
        col(SortCol::Invalidation, "invalidated", 11, 3),
        col(
            SortCol::Anomalies,
            "anomalies",
            if wide { 36 } else { 9 },
            1,
        ),
    ]
}

/// The columns that fit in `width`, in display order.
fn fit(width: u16) -> Vec<Col> {
    let cols = columns(width >= 120);
    let mut keep = [false; 11];
    let mut used = 0u16;
    for p in 0..=3 {
        for (i, c) in cols.iter().enumerate() {
            if c.priority == p && used + c.width < width {
                keep[i] = true;
                used += c.width + 1;
            }
        }
    }
    cols.into_iter()
        .zip(keep)
        .filter_map(|(c, k)| k.then_some(c))
        .collect()
}

/// Names of the anomaly kinds in a mask: the first one and how many more.
fn anomaly_cell(r: &TxnRow) -> String {
    if r.anomalies == 0 {
        return String::new();
    }
    let first = Kind::ALL
        .iter()
        .enumerate()
        .find(|(i, _)| r.anomaly_mask & (1u64 << i) != 0)
        .map_or("?", |(_, k)| k.as_str());
    if r.anomalies > 1 {
        format!("{first}+{}", r.anomalies - 1)
    } else {
        first.to_string()
    }
}

/// Who saw a row, in words; `None` for the wire alone.
fn sources_label(bits: u8) -> Option<String> {
    let wire = origin_bit(Origin::Wire);
    let (client, server) = (
        origin_bit(Origin::ClientProbes),
        origin_bit(Origin::ServerProbes),
    );
    match bits {
        b if b == wire => None,
        b if b == client => Some("client kernel".into()),
        b if b == server => Some("server kernel".into()),
        b => {
            let mut who = Vec::new();
            for (bit, name) in [(wire, "wire"), (client, "client"), (server, "server")] {
                if b & bit != 0 {
                    who.push(name);
                }
            }
            Some(who.join("+"))
        }
    }
}

/// A cell's text and, when it is not the row's, its colour.
fn cell(c: &Col, r: &TxnRow, m: &Model, wide: bool) -> (String, Option<Style>) {
    let warn = Some(Style::new().fg(Color::Yellow));
    let s: String = match c.sort {
        SortCol::Time => {
            let t = r.call_ts_ns.saturating_sub(m.t0());
            format!("{}.{:06}", t / 1_000_000_000, (t % 1_000_000_000) / 1_000)
        }
        SortCol::Conn => format!("c{}", r.conn),
        SortCol::Xid => format!("{:#010x}", r.xid),
        // Live with probes: say who saw the row when it is not the wire
        // alone (the engine joins the views of one XID into one row).
        SortCol::Procedure => {
            return match sources_label(r.sources) {
                None => (m.label(r).to_string(), None),
                Some(who) => (
                    format!("[{who}] {}", m.label(r)),
                    Some(Style::new().fg(Color::Magenta)),
                ),
            }
        }
        SortCol::Call if wide => r.call.as_str().into(),
        SortCol::Call => transfer_short(r.call).into(),
        SortCol::Reply if wide => r.reply.as_str().into(),
        SortCol::Reply => transfer_short(r.reply).into(),
        SortCol::Latency if r.latency_ns == NONE64 && r.reply_frame == 0 => {
            return ("no reply".into(), warn)
        }
        // Answered by a reply stamped before the call.
        SortCol::Latency if r.latency_ns == NONE64 => return ("unknown".into(), warn),
        SortCol::Latency => dur(r.latency_ns),
        SortCol::RoundTrips => r.round_trips.to_string(),
        SortCol::Bytes => bytes(r.bytes),
        SortCol::Invalidation if r.inval_rkey == NONE32 => String::new(),
        SortCol::Invalidation => format!("{:#x}", r.inval_rkey),
        SortCol::Anomalies => return (anomaly_cell(r), Some(Style::new().fg(Color::Red))),
    };
    (s, None)
}

/// Draws the transaction table.
pub fn draw(f: &mut Frame<'_>, area: Rect, m: &Model, ui: &UiState) {
    let inner_w = area.width.saturating_sub(2);
    let wide = inner_w >= 120;
    // Two columns go to the selection marker.
    let cols = fit(inner_w.saturating_sub(2));
    let page = usize::from(area.height.saturating_sub(3));
    let i = Screen::Transactions.index();
    let sel = ui.selected[i].min(m.view.len().saturating_sub(1));
    let top = super::widgets::window(ui.top[i], sel, page);
    let arrow = if ui.sort.desc { "▼" } else { "▲" };
    let header = Row::new(cols.iter().map(|c| {
        if c.sort == ui.sort.col {
            Cell::from(format!("{}{arrow}", c.name))
        } else {
            Cell::from(c.name)
        }
    }))
    .style(header_style());
    let end = (top + page).min(m.view.len());
    let cells: Vec<Vec<(String, Option<Style>)>> = m.view[top.min(end)..end]
        .iter()
        .map(|&r| {
            let r = &m.rows[r as usize];
            cols.iter().map(|c| cell(c, r, m, wide)).collect()
        })
        .collect();
    // Each column as wide as what it shows now, the procedure taking what is
    // left; what still does not fit is cut with a visible `…`.
    let texts: Vec<Vec<String>> = cells
        .iter()
        .map(|r| r.iter().map(|(s, _)| s.clone()).collect())
        .collect();
    let names: Vec<&str> = cols.iter().map(|c| c.name).collect();
    let max: Vec<u16> = cols
        .iter()
        .map(|c| match c.sort {
            SortCol::Procedure | SortCol::Anomalies => u16::MAX,
            _ => c.width.max(16),
        })
        .collect();
    let w = super::widgets::content_widths(&names, &texts, &max, inner_w.saturating_sub(2));
    let widths: Vec<Constraint> = cols
        .iter()
        .zip(&w)
        .map(|(c, &x)| {
            if c.sort == SortCol::Procedure {
                Constraint::Min(x)
            } else {
                Constraint::Length(x)
            }
        })
        .collect();
    let rows = cells
        .into_iter()
        .zip(m.view[top.min(end)..end].iter())
        .map(|(r, &i)| {
            let row = Row::new(r.into_iter().zip(&w).map(|((s, style), &x)| {
                let text = super::widgets::cut(&s, x);
                match style {
                    Some(st) => Cell::from(Span::styled(text, st)),
                    None => Cell::from(text),
                }
            }));
            if m.rows[i as usize].anomalies > 0 {
                row.style(Style::new().fg(Color::LightRed))
            } else {
                row
            }
        });
    let title = format!(
        " Transactions {}/{}  sort {} {}  {}",
        m.view.len(),
        m.rows.len(),
        cols.iter()
            .find(|c| c.sort == ui.sort.col)
            .map_or("time", |c| c.name),
        arrow,
        match (&ui.up, ui.filter.is_empty()) {
            // The key first: a cause's filter can be long.
            (Some((from, _)), _) => {
                format!("Esc: back to {}  filter {} ", from.title(), ui.filter)
            }
            (None, true) => "(/ filter, s sort, Enter ladder) ".to_string(),
            (None, false) => format!("filter {} ", ui.filter),
        }
    );
    let t = Table::new(rows, widths)
        .header(header)
        .row_highlight_style(selected_style())
        .highlight_symbol("▶ ")
        .highlight_spacing(ratatui::widgets::HighlightSpacing::Always)
        .column_spacing(1)
        .block(block(title));
    let mut st = TableState::default().with_selected((!m.view.is_empty()).then_some(sel - top));
    f.render_stateful_widget(t, area, &mut st);
}
