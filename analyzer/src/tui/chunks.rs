//! Chunks and invalidations: every advertised segment, how much moved
//! through it and how its STag ended; RDMA outside any chunk below.
//!
//! ```text
//! ┌ Segments 955: read 16, write 24, reply 915; 4.2 MiB moved; 0 invalidated ┐
//! │ xid        conn list     handle  length  offset           moved  ended   │
//! │ 0xa8c0454e c1   read@132 0x18d8  131072  0xa8c0...        128 KiB wire…  │
//! └───────────────────────────────────────────────────────────────────────────┘
//! ┌ RDMA outside any chunk / foreign and non-negotiated invalidations ───────┐
//! │ none                                                                     │
//! └───────────────────────────────────────────────────────────────────────────┘
//! ```

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Paragraph, Row, Table, TableState};
use ratatui::Frame;

use super::model::{kind_bit, Model, SegRow};
use super::state::{Screen, UiState};
use super::widgets::{block, bytes, chunk_kind, header_style, selected_style};
use crate::engine::{ChunkKind, Kind};

/// Draws the segment table and the flags box.
pub fn draw(f: &mut Frame<'_>, area: Rect, m: &Model, ui: &UiState) {
    let [table, flags] = Layout::vertical([Constraint::Min(4), Constraint::Length(5)]).areas(area);
    draw_table(f, table, m, ui);
    draw_flags(f, flags, m);
}

fn ended(s: &SegRow, wide: bool) -> &'static str {
    // Local invalidation (or a reused registration) leaves no trace on the wire.
    match (s.remotely_invalidated, wide) {
        (true, true) => "remotely invalidated",
        (true, false) => "remote inval",
        (false, true) => "not visible on wire",
        (false, false) => "not on wire",
    }
}

fn flags(s: &SegRow, m: &Model) -> String {
    let mut v = Vec::new();
    let mask = m.rows.get(s.row as usize).map_or(0, |r| r.anomaly_mask);
    if mask & kind_bit(Kind::InvalidatedForeignStag) != 0 {
        v.push("FOREIGN-INVAL");
    }
    if mask & kind_bit(Kind::RemoteInvalidationNotNegotiated) != 0 && s.remotely_invalidated {
        v.push("INVAL-NOT-NEGOTIATED");
    }
    if mask & kind_bit(Kind::RdmaOutsideChunk) != 0 {
        v.push("RDMA-OUTSIDE");
    }
    if s.bytes_moved == 0 {
        v.push("unused");
    } else if s.bytes_moved < u64::from(s.length) && s.kind == ChunkKind::Read {
        v.push("partial");
    }
    v.join(" ")
}

fn draw_table(f: &mut Frame<'_>, area: Rect, m: &Model, ui: &UiState) {
    let wide = area.width >= 120;
    let i = Screen::Chunks.index();
    let page = usize::from(area.height.saturating_sub(3));
    let sel = ui.selected[i].min(m.seg_view.len().saturating_sub(1));
    let top = super::widgets::window(ui.top[i], sel, page);
    let end = (top + page).min(m.seg_view.len());
    let mut styles = Vec::new();
    let cells: Vec<Vec<String>> = m.seg_view[top.min(end)..end]
        .iter()
        .map(|&si| {
            let s = &m.segs[si as usize];
            let (xid, conn) = m
                .rows
                .get(s.row as usize)
                .map_or((0, 0), |r| (r.xid, r.conn));
            let list = match s.kind {
                ChunkKind::Read => format!("read@{}", s.index),
                ChunkKind::Write => format!("write#{}", s.index),
                ChunkKind::Reply => "reply".into(),
            };
            let fl = flags(s, m);
            let mut cells = vec![
                format!("{xid:#010x}"),
                format!("c{conn}"),
                list,
                format!("{:#x}", s.handle),
                s.length.to_string(),
            ];
            if wide {
                cells.push(format!("{:#018x}", s.offset));
            }
            cells.push(bytes(s.bytes_moved));
            cells.push(ended(s, wide).into());
            styles.push(if fl.contains("INVAL") || fl.contains("OUTSIDE") {
                Style::new().fg(Color::Red)
            } else {
                Style::new()
            });
            cells.push(fl);
            cells
        })
        .collect();
    let mut header = vec!["xid", "conn", "list", "handle", "length"];
    let mut max = vec![10, 8, 10, 10, 10];
    if wide {
        header.push("offset");
        max.push(18);
    }
    header.extend(["moved", "ended", "flags"]);
    max.extend([10, 20, u16::MAX]);
    // Borders and the selection marker take four columns.
    let (widths, cells) =
        super::widgets::fit_rows(&header, cells, &max, area.width.saturating_sub(4));
    let rows = cells
        .into_iter()
        .zip(styles)
        .map(|(c, st)| Row::new(c.into_iter().map(Cell::from)).style(st));
    let (n, moved, inval) = m.seg_totals;
    let title = format!(
        " Segments {}: {} {}, {} {}, {} {}; {} moved; {} remotely invalidated ",
        m.seg_view.len(),
        chunk_kind(ChunkKind::Read),
        n[ChunkKind::Read as usize],
        chunk_kind(ChunkKind::Write),
        n[ChunkKind::Write as usize],
        chunk_kind(ChunkKind::Reply),
        n[ChunkKind::Reply as usize],
        bytes(moved),
        inval
    );
    let t = Table::new(rows, widths)
        .header(Row::new(header).style(header_style()))
        .row_highlight_style(selected_style())
        .highlight_symbol("▶ ")
        .highlight_spacing(ratatui::widgets::HighlightSpacing::Always)
        .block(block(title));
    let mut st = TableState::default().with_selected((!m.seg_view.is_empty()).then_some(sel - top));
    f.render_stateful_widget(t, area, &mut st);
}

fn draw_flags(f: &mut Frame<'_>, area: Rect, m: &Model) {
    let count = |k: Kind| m.state.anomaly_counts.get(&k).copied().unwrap_or(0);
    let mut lines = vec![Line::from(format!(
        "foreign invalidations {}  non-negotiated invalidations {}  RDMA outside any chunk {}",
        count(Kind::InvalidatedForeignStag),
        count(Kind::RemoteInvalidationNotNegotiated),
        count(Kind::RdmaOutsideChunk)
    ))];
    let rows = usize::from(area.height.saturating_sub(3));
    lines.extend(
        m.anomalies
            .iter()
            .filter(|a| {
                matches!(
                    a.kind,
                    Kind::RdmaOutsideChunk
                        | Kind::InvalidatedForeignStag
                        | Kind::RemoteInvalidationNotNegotiated
                )
            })
            .take(rows)
            .map(|a| {
                Line::styled(
                    format!(
                        "frames {}: {}",
                        a.frames
                            .iter()
                            .map(u64::to_string)
                            .collect::<Vec<_>>()
                            .join(","),
                        a.message
                    ),
                    Style::new().fg(Color::Red),
                )
            }),
    );
    f.render_widget(
        Paragraph::new(lines)
            .wrap(ratatui::widgets::Wrap { trim: true })
            .block(block(" Invalidation and RDMA flags ".into())),
        area,
    );
}
