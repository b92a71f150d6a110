//! Overview: one row per connection, capture totals, latency histogram.
//!
//! ```text
//! ┌ Connections ─────────────────────────────────────────────────────────┐
//! │ conn client  server  QPNs  inline  R  calls/s  bytes/s  credits  anom │
//! │ c1   10.0.0.2 10.0.0.1 0x12/0x12 4096/4096 no 21.6 159 KiB 64/0(4) 0  │
//! └──────────────────────────────────────────────────────────────────────┘
//! ┌ Totals ──────────────────┐┌ Latency, c1 ───────────────────────────┐
//! │ frames, calls, ICRC, ... ││ 4.1 ms ████                        12 │
//! └──────────────────────────┘└────────────────────────────────────────┘
//! ```

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Row, Table, TableState};
use ratatui::Frame;

use rdma_dissectors::rpcrdma_cm::CmPrivateData;

use super::model::Model;
use super::state::{Screen, UiState};
use super::widgets::{block, bytes, dur, header_style, rate, selected_style};
use crate::engine::{Carries, CmState, Connection};

/// Draws the overview.
pub fn draw(f: &mut Frame<'_>, area: Rect, m: &Model, ui: &UiState) {
    let n = m.state.connections.len() as u16;
    let table_h = (n + 3).clamp(4, area.height.saturating_sub(10).max(4));
    let [top, bottom] =
        Layout::vertical([Constraint::Length(table_h), Constraint::Min(0)]).areas(area);
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(bottom);
    draw_connections(f, top, m, ui);
    draw_totals(f, left, m);
    let sel = m
        .state
        .connections
        .values()
        .nth(ui.selected[Screen::Overview.index()]);
    draw_latency(f, right, sel);
}

fn private(p: Option<CmPrivateData>) -> String {
    match p {
        Some(CmPrivateData::V1(v)) => format!(
            "R={} {}/{}",
            u8::from(v.remote_invalidate),
            v.send_size,
            v.recv_size
        ),
        Some(CmPrivateData::UnknownVersion { version, .. }) => format!("v{version}?"),
        Some(_) => "?".into(),
        None => "none".into(),
    }
}

/// A connection's set-up state, in its fabric's words (iWARP's MPA
/// exchange and FIN stand for the CM's REQ, REP and DREQ).
fn cm_name(s: CmState, iwarp: bool) -> &'static str {
    match (s, iwarp) {
        (CmState::NotSeen, _) => "not seen",
        (CmState::Requested, false) => "REQ",
        (CmState::Requested, true) => "MPA-REQ",
        (CmState::Replied, false) => "REP",
        (CmState::Replied, true) => "MPA-REP",
        (CmState::Established, _) => "established",
        (CmState::Rejected, _) => "rejected",
        (CmState::Disconnecting, false) => "DREQ",
        (CmState::Disconnecting, true) => "FIN",
        (CmState::Closed, _) => "closed",
    }
}

fn draw_connections(f: &mut Frame<'_>, area: Rect, m: &Model, ui: &UiState) {
    let wide = area.width >= 140;
    let mut header = vec![
        "conn",
        "client",
        "server",
        "QPNs c/s",
        "inline",
        "R",
        "call/s",
        "chunk B/s",
        "credits",
        "anom",
    ];
    // The caps keep one long address from taking the table; anything wider
    // than its column is cut with a visible `…`.
    let mut max = vec![6, 40, 40, 19, 11, 3, 7, 10, 16, 6];
    if wide {
        header.extend(["CM", "private data client / server"]);
        max.extend([11, 72]);
    }
    let page = usize::from(area.height.saturating_sub(3));
    let sel = ui.selected[Screen::Overview.index()];
    let top = super::widgets::window(ui.top[Screen::Overview.index()], sel, page);
    let cells: Vec<Vec<String>> = m
        .state
        .connections
        .values()
        .skip(top)
        .take(page)
        .map(|c| conn_cells(c, wide))
        .collect();
    // The borders take two columns.
    let avail = area.width.saturating_sub(2);
    let w = super::widgets::content_widths(&header, &cells, &max, avail);
    let rows = cells.into_iter().map(|r| {
        Row::new(
            r.iter()
                .zip(&w)
                .map(|(c, &cw)| super::widgets::cut(c, cw))
                .collect::<Vec<_>>(),
        )
    });
    let widths: Vec<Constraint> = w.iter().map(|&x| Constraint::Length(x)).collect();
    let t = Table::new(rows, widths)
        .header(Row::new(header).style(header_style()))
        .row_highlight_style(selected_style())
        .block(block(format!(
            " Connections ({}) ",
            m.state.connections.len()
        )));
    let mut st = TableState::default().with_selected(Some(sel - top));
    f.render_stateful_widget(t, area, &mut st);
}

fn conn_cells(c: &Connection, wide: bool) -> Vec<String> {
    let span = c.last_ts_ns.saturating_sub(c.first_ts_ns);
    let addr = |q: Option<crate::engine::QpKey>| q.map_or("?".into(), |q| q.addr.to_string());
    let qpn = |q: Option<crate::engine::QpKey>| q.map_or("?".into(), |q| format!("{:#x}", q.qpn));
    let rpcrdma = c.is_rpcrdma();
    let inline = match (c.call_inline_threshold(), c.reply_inline_threshold()) {
        (Some(a), Some(b)) if rpcrdma => format!("{a}/{b}"),
        _ => "-".into(),
    };
    let r = c.negotiated.filter(|_| rpcrdma).map_or("-", |n| {
        if n.remote_invalidation {
            "yes"
        } else {
            "no"
        }
    });
    // Credits are RPC-over-RDMA's: other traffic says what it is instead.
    let credits = match c.carries {
        Some(Carries::RpcRdma) => format!(
            "{}/{} pk{}",
            c.granted.map_or("-".into(), |g| g.to_string()),
            c.in_flight,
            c.peak_in_flight
        ),
        Some(Carries::Other) => "not RPC".into(),
        None => "?".into(),
    };
    let mut v = vec![
        c.id.to_string(),
        addr(c.client),
        addr(c.server),
        format!("{}/{}", qpn(c.client), qpn(c.server)),
        inline,
        r.into(),
        short_rate(rate(c.calls, span)),
        bytes(rate(c.chunk_bytes, span) as u64),
        credits,
        c.anomalies.to_string(),
    ];
    if wide {
        v.push(cm_name(c.cm_state, c.is_iwarp()).into());
        // iWARP's MPA exchange gives each side's RDMA Read queue depths too.
        let ird_ord = |x: Option<crate::engine::IrdOrd>| {
            x.map_or(String::new(), |x| format!(" IRD/ORD {}/{}", x.ird, x.ord))
        };
        v.push(format!(
            "{}{} / {}{}",
            private(c.client_private),
            ird_ord(c.client_ird_ord),
            private(c.server_private),
            ird_ord(c.server_ird_ord)
        ));
    }
    v
}

fn draw_totals(f: &mut Frame<'_>, area: Rect, m: &Model) {
    let t = &m.state.totals;
    let span = t.span_ns();
    let anomalies: u64 = m.state.anomaly_counts.values().sum();
    let causes = &m.causes;
    let mut lines = Vec::new();
    // Traffic it recognised and could not read comes first, and stops a
    // capture of nothing else from looking healthy.
    let not_decoded = crate::output::not_decoded::rows(&t.not_decoded);
    for r in &not_decoded {
        lines.push(Line::from(Span::styled(
            format!("NOT DECODED: {} frames: {}", r.frames, r.what_to_do),
            Style::new().fg(Color::Yellow),
        )));
    }
    if causes.is_empty() && not_decoded.is_empty() {
        lines.push(Line::from(Span::styled(
            super::diagnosis::no_cause(m),
            Style::new().fg(Color::Green),
        )));
    }
    // The causes first, largest impact first (docs/diagnosis.md); the
    // diagnosis screen has their evidence and advice.
    for (i, c) in causes.iter().take(3).enumerate() {
        lines.push(Line::from(Span::styled(
            format!(
                "{}. {} ({}, {:.1}%): {}",
                i + 1,
                c.cause.as_str(),
                c.peer.as_str(),
                100.0 * c.impact.score,
                c.impact.measured
            ),
            Style::new().fg(Color::Red),
        )));
    }
    if causes.len() > 3 {
        lines.push(Line::from(format!(
            "and {} more causes: d shows them all",
            causes.len() - 3
        )));
    }
    let [transport0, transport1] = transport_lines(t);
    lines.extend([
        Line::from(format!(
            "{} frames ({} RDMA), {} over {}",
            t.frames,
            t.rdma_frames,
            bytes(t.bytes),
            dur(span)
        )),
        Line::from(format!(
            "{} calls, {} replies, {} RPC-over-RDMA msgs",
            t.calls, t.replies, t.rpcrdma_messages
        )),
        Line::from(format!(
            "chunks moved {}; {} remote invalidations",
            bytes(t.chunk_bytes),
            t.remote_invalidations
        )),
        transport0,
        transport1,
        Line::from(vec![
            Span::raw("anomalies "),
            Span::styled(
                anomalies.to_string(),
                if anomalies > 0 {
                    Style::new().fg(Color::Red)
                } else {
                    Style::new().fg(Color::Green)
                },
            ),
            Span::raw(format!(
                "; evicted conns {} calls {}",
                m.state.evictions.connections, m.state.evictions.calls
            )),
        ]),
    ]);
    f.render_widget(
        Paragraph::new(lines)
            .wrap(ratatui::widgets::Wrap { trim: true })
            .block(block(" Totals ".into())),
        area,
    );
}

/// Label of histogram bucket `i`: its lower bound, 2^i µs.
fn bucket_label(i: usize) -> String {
    dur(1_000u64 << i.min(40))
}

fn draw_latency(f: &mut Frame<'_>, area: Rect, c: Option<&Connection>) {
    let title = match c {
        Some(c) => format!(" Latency, {} (call to reply) ", c.id),
        None => " Latency ".into(),
    };
    let Some(c) = c else {
        f.render_widget(
            Paragraph::new("no connection yet").block(block(title)),
            area,
        );
        return;
    };
    let h = &c.latency_log2_us;
    let (Some(lo), Some(hi)) = (
        h.iter().position(|n| *n > 0),
        h.iter().rposition(|n| *n > 0),
    ) else {
        f.render_widget(Paragraph::new("no replies yet").block(block(title)), area);
        return;
    };
    let max = h.iter().copied().max().unwrap_or(1).max(1);
    let inner_w = usize::from(area.width.saturating_sub(2));
    let bar_w = inner_w.saturating_sub(10 + 8).max(1);
    let rows = usize::from(area.height.saturating_sub(2));
    // Widest buckets first if they do not all fit: keep the busiest window.
    let (mut lo, mut hi) = (lo, hi);
    while hi + 1 - lo > rows && rows > 0 {
        if h[lo] <= h[hi] {
            lo += 1;
        } else {
            hi -= 1;
        }
    }
    let lines: Vec<Line<'_>> = (lo..=hi)
        .map(|i| {
            let n = h[i];
            let w = ((n as f64 / max as f64) * bar_w as f64).ceil() as usize;
            Line::from(vec![
                Span::raw(format!("{:>9} ", bucket_label(i))),
                Span::styled("█".repeat(w.min(bar_w)), Style::new().fg(Color::Cyan)),
                Span::raw(format!(" {n}")),
            ])
        })
        .collect();
    f.render_widget(Paragraph::new(lines).block(block(title)), area);
}

/// A rate in at most six characters: `22.1`, `15290`, `1.2M`.
fn short_rate(v: f64) -> String {
    if v < 1000.0 {
        format!("{v:.1}")
    } else if v < 1e6 {
        format!("{v:.0}")
    } else {
        format!("{:.1}M", v / 1e6)
    }
}

/// The transport's integrity counters: the ICRC and PSNs of RoCE and
/// InfiniBand, or on a capture of iWARP alone (no BTH, so zeros there would
/// read as "checked, all well") its FPDUs' CRC32c and stream holes.
fn transport_lines(t: &crate::engine::Totals) -> [Line<'static>; 2] {
    if t.iwarp_only() {
        let n = &t.iwarp;
        return [
            Line::from(format!(
                "iWARP {} FPDUs, {} CRC32c bad, {} stream holes",
                n.fpdus, n.crc_invalid, n.gaps
            )),
            Line::from(format!(
                "ICRC, PSNs n/a; {} MPA Requests, {} Replies",
                n.mpa_requests, n.mpa_replies
            )),
        ];
    }
    [
        Line::from(format!(
            "ICRC {} ok {} bad {} unchecked",
            t.icrc_valid, t.icrc_invalid, t.icrc_unchecked
        )),
        Line::from(format!(
            "{} retransmissions, {} PSN gaps, {} CM msgs",
            t.retransmissions, t.psn_gaps, t.cm_messages
        )),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_up_states_are_named_by_fabric() {
        assert_eq!(cm_name(CmState::Requested, false), "REQ");
        assert_eq!(cm_name(CmState::Requested, true), "MPA-REQ");
        assert_eq!(cm_name(CmState::Replied, true), "MPA-REP");
        assert_eq!(cm_name(CmState::Disconnecting, false), "DREQ");
        assert_eq!(cm_name(CmState::Disconnecting, true), "FIN");
        assert_eq!(cm_name(CmState::Closed, true), "closed");
    }
}
