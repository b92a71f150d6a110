//! Anomalies, grouped by kind with the RFC section and an explanation;
//! Enter jumps to the transaction (by XID) or shows the frames.
//!
//! ```text
//! ┌ Anomalies 3 (Enter: transaction or frames) ──────────────────────────────┐
//! │ ▸ credit_overrun  2  error  RFC 8166 3.3.1                               │
//! │     c1 xid 0x12345678 frames 40,41  4 calls outstanding, 2 granted       │
//! └───────────────────────────────────────────────────────────────────────────┘
//! ┌ credit_overrun ────────────────────────────────────────────────────────────┐
//! │ explanation, then the selected anomaly's full message                    │
//! └───────────────────────────────────────────────────────────────────────────┘
//! ```

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{List, ListItem, ListState, Paragraph, Wrap};
use ratatui::Frame;

use super::model::{AnomRow, Model};
use super::state::{Action, Screen, UiState};
use super::widgets::{block, selected_style, severity_style};
use crate::engine::{Anomaly, Kind};

fn frames(a: &Anomaly) -> String {
    if a.count() > 1 {
        let f = |f: Option<u64>| f.map_or("?".to_string(), |f| f.to_string());
        return format!(
            "×{} {}–{}",
            a.count(),
            f(a.first_frame()),
            f(a.last_frame())
        );
    }
    let v: Vec<String> = a.frames.iter().take(6).map(u64::to_string).collect();
    let more = a.frames.len().saturating_sub(6);
    if more > 0 {
        format!("{} +{more}", v.join(","))
    } else {
        v.join(",")
    }
}

/// Draws the grouped list and the explanation box.
pub fn draw(f: &mut Frame<'_>, area: Rect, m: &Model, ui: &UiState) {
    let [list, info] = Layout::vertical([Constraint::Min(4), Constraint::Length(7)]).areas(area);
    let i = Screen::Anomalies.index();
    // The state counts every anomaly, the model keeps the first ones; a test
    // (or a source without counts) may only have the latter.
    let total: u64 = m
        .state
        .anomaly_counts
        .values()
        .sum::<u64>()
        .max(m.anomalies.len() as u64 + m.counters.anomalies_not_kept);
    let acked = match (m.acked_hidden, ui.show_acked) {
        (0, false) => String::new(),
        (n, false) => format!("; {n} acknowledged hidden, a: show"),
        (_, true) if !m.acks.is_empty() => "; acknowledged shown, a: hide".to_string(),
        (_, true) => String::new(),
    };
    let title = format!(
        " Anomalies {} ({} shown{acked}; Enter: transaction or frames) ",
        total,
        m.anom_view
            .iter()
            .filter(|r| matches!(r, AnomRow::Item(_)))
            .count()
    );
    if m.anom_view.is_empty() {
        let msg = if total == 0 {
            "No anomalies: every check of RFC 8166 / RFC 8797 passed on what the capture shows."
        } else if m.acked_hidden > 0 {
            "Every finding is acknowledged (--ignore, --ack): a shows them."
        } else {
            "No anomaly passes the filter (Esc clears it)."
        };
        f.render_widget(Paragraph::new(msg).block(block(title)), list);
        f.render_widget(
            Paragraph::new("").block(block(" Explanation ".into())),
            info,
        );
        return;
    }
    let page = usize::from(list.height.saturating_sub(2));
    let sel = ui.selected[i].min(m.anom_view.len() - 1);
    let top = super::widgets::window(ui.top[i], sel, page);
    let end = (top + page).min(m.anom_view.len());
    let items = m.anom_view[top..end].iter().map(|r| match *r {
        AnomRow::Kind(k, n) => ListItem::new(Line::from(vec![
            Span::styled(
                format!("▸ {} ", k.as_str()),
                severity_style(k.severity()).add_modifier(Modifier::BOLD),
            ),
            Span::raw(format!("{n}  {}  {}", k.severity().as_str(), k.rfc())),
        ])),
        AnomRow::Item(ai) => {
            let a = &m.anomalies[ai as usize];
            ListItem::new(format!(
                "    {} {} frames {}  {}",
                a.connection.map_or("-".into(), |c| c.to_string()),
                a.xid.map_or("no xid".into(), |x| format!("xid {x:#010x}")),
                frames(a),
                a.message
            ))
        }
    });
    let l = List::new(items)
        .highlight_style(selected_style())
        .highlight_symbol("▶ ")
        .block(block(title));
    let mut st = ListState::default().with_selected(Some(sel - top));
    f.render_stateful_widget(l, list, &mut st);
    let (kind, detail) = match m.anom_view[sel] {
        AnomRow::Kind(k, _) => (k, None),
        AnomRow::Item(ai) => {
            let a = &m.anomalies[ai as usize];
            (a.kind, Some(a))
        }
    };
    draw_info(f, info, kind, detail);
}

fn draw_info(f: &mut Frame<'_>, area: Rect, k: Kind, a: Option<&Anomaly>) {
    let mut lines = vec![Line::from(vec![
        Span::styled(
            format!("{} ({}): ", k.as_str(), k.rfc()),
            severity_style(k.severity()),
        ),
        Span::raw(k.explanation()),
    ])];
    lines.push(Line::from(crate::output::lines::guide_line(k)));
    if let Some(a) = a {
        lines.push(Line::from(format!("frames {}: {}", frames(a), a.message)));
    }
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: true })
            .block(block(" Explanation ".into()).style(Style::new())),
        area,
    );
}

/// What Enter on the selected row means: the transaction of its XID, or a
/// box with its frames when no transaction is known.
pub fn activate(m: &Model, ui: &UiState) -> Option<Action> {
    let row = m.anom_view.get(ui.selected[Screen::Anomalies.index()])?;
    let AnomRow::Item(ai) = *row else {
        return None;
    };
    let a = m.anomalies.get(ai as usize)?;
    if let Some(x) = a.xid {
        if let Some(r) = m.find_txn(a.connection, x) {
            return Some(Action::ShowTxn(r));
        }
    }
    Some(Action::Message(format!(
        "{} ({})\nframes {}\n{}\n\nShow them with: rdma-analyzer frames FILE (frame numbers as in tshark)",
        a.kind.as_str(),
        a.kind.rfc(),
        frames(a),
        a.message
    )))
}
