//! Transaction detail: the ladder diagram between requester and responder,
//! then the decoded RPC-over-RDMA header and the RPC call.
//!
//! ```text
//! ┌ c1 xid 0xa8c0454e NFS WRITE, 49.81 ms, 2 round trips ───────────────────┐
//! │   frame     +time  requester 10.99.0.2/0x12        responder 10.99.0.1  │
//! │      80  0.000 ms  │── SEND call RDMA_MSG ... ──────────────────────►│    │
//! │      91  3.139 ms  │◄──────── RDMA READ response rkey 0x18d8 ... ────│    │
//! └──────────────────────────────────────────────────────────────────────────┘
//! ┌ RPC-over-RDMA header and RPC call ───────────────────────────────────────┐
//! │ xid 0x... vers 1 credits 128 RDMA_MSG read[...] write[] reply[]         │
//! │ NFS v3 proc 7 WRITE; reply SUCCESS; call 208 B read_chunks, reply ...   │
//! └──────────────────────────────────────────────────────────────────────────┘
//! ```

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Row, Table, TableState, Wrap};
use ratatui::Frame;

use super::model::Model;
use super::state::{Screen, UiState};
use super::widgets::{block, bytes, chunk_kind, dur, header_style, selected_style};
use crate::engine::{LadderStep, Origin, StepWhat, Transaction};
use crate::output::describe::{HeaderWords, StepWords};

/// Draws the detail of the transaction chosen on another screen.
pub fn draw(f: &mut Frame<'_>, area: Rect, m: &Model, ui: &UiState) {
    let Some(row) = ui.detail else {
        f.render_widget(
            Paragraph::new(
                "No transaction chosen: press Enter on one in Transactions (2) or Anomalies (6).",
            )
            .wrap(Wrap { trim: true })
            .block(block(" Detail ".into())),
            area,
        );
        return;
    };
    let Some(t) = m.detail(row) else {
        let what = m.rows.get(row).map_or(String::new(), |r| {
            format!("c{} xid {:#010x} {}: ", r.conn, r.xid, m.label(r))
        });
        f.render_widget(
            Paragraph::new(format!(
                "{what}the ladder of this transaction is no longer kept (only the newest are, to bound memory). `rdma-analyzer transactions --json --filter <xid>` prints it."
            ))
            .wrap(Wrap { trim: true })
            .block(block(" Detail ".into())),
            area,
        );
        return;
    };
    let info_h = if area.height >= 30 { 10 } else { 7 };
    let [ladder, info] =
        Layout::vertical([Constraint::Min(4), Constraint::Length(info_h)]).areas(area);
    draw_ladder(f, ladder, m, ui, t);
    draw_info(f, info, t, ui.info_scroll);
}

fn title(t: &Transaction) -> String {
    let lat = match t.reply_ts_ns {
        Some(r) => r.checked_sub(t.call_ts_ns).map_or(
            "latency unknown (reply stamped before its call)".into(),
            dur,
        ),
        None => "no reply".into(),
    };
    format!(
        " {} xid {:#010x} {}, {}, {} round trip{} (Esc back) ",
        t.connection,
        t.xid,
        t.procedure_label(),
        lat,
        t.round_trips,
        if t.round_trips == 1 { "" } else { "s" }
    )
}

/// The arrow between the lifelines, `lane` columns wide, with `what` on it.
fn arrow(what: &str, to_right: bool, lane: usize) -> String {
    let inner = lane.saturating_sub(2);
    let room = inner.saturating_sub(6);
    let mut text: String = what.chars().take(room).collect();
    if what.chars().count() > room && room > 0 {
        text.pop();
        text.push('…');
    }
    let tlen = text.chars().count() + 2;
    let fill = inner.saturating_sub(tlen + 1);
    let (pre, post) = if to_right {
        (2, fill.saturating_sub(2))
    } else {
        (fill.saturating_sub(2), 2)
    };
    let mut s = String::with_capacity(lane * 3);
    s.push('│');
    if !to_right {
        s.push('◄');
    }
    s.push_str(&"─".repeat(pre));
    s.push(' ');
    s.push_str(&text);
    s.push(' ');
    s.push_str(&"─".repeat(post));
    if to_right {
        s.push('►');
    }
    // Pad to the responder's lifeline.
    let len = s.chars().count();
    if len + 1 < lane {
        s.push_str(&"─".repeat(lane - 1 - len));
    }
    s.push('│');
    s
}

/// A step in words, in `room` columns: an RDMA operation too long for the
/// lane drops its virtual address before anything else, so the length (what
/// the reader compares with the chunk) stays (the frame view has the VA).
fn step_words(what: &StepWhat, room: usize) -> String {
    let full = StepWords(what).to_string();
    if full.chars().count() <= room {
        return full;
    }
    match what {
        StepWhat::RdmaWrite { rkey, len, .. } => format!("RDMA WRITE rkey {rkey:#x} len {len}"),
        StepWhat::RdmaReadRequest { rkey, len, .. } => {
            format!("RDMA READ request rkey {rkey:#x} len {len}")
        }
        _ => full,
    }
}

/// "requester A … responder B" over a lane `lane` wide: the words go
/// first when both sides do not fit (three-digit hosts, 24-bit QPNs at 80
/// columns ran the requester into "responder"), then each side is cut
/// with an ellipsis; the two never touch.
fn lane_header(req: &str, resp: &str, lane: usize) -> String {
    let long = (format!("requester {req}"), format!("responder {resp}"));
    let (left, right) = if long.0.chars().count() + long.1.chars().count() < lane {
        long
    } else if req.chars().count() + resp.chars().count() < lane {
        (req.to_string(), resp.to_string())
    } else {
        let half = lane.saturating_sub(1) / 2;
        let width = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
        (
            super::widgets::cut(req, width(half)),
            super::widgets::cut(resp, width(lane.saturating_sub(1) - half)),
        )
    };
    let gap = lane
        .saturating_sub(left.chars().count() + right.chars().count())
        .max(1);
    format!("{left}{}{right}", " ".repeat(gap))
}

fn draw_ladder(f: &mut Frame<'_>, area: Rect, m: &Model, ui: &UiState, t: &Transaction) {
    let inner_w = usize::from(area.width.saturating_sub(2));
    let lane = inner_w.saturating_sub(7 + 1 + 10 + 2).max(10);
    let conn = m.state.connections.get(&t.connection);
    let side = |q: Option<crate::engine::QpKey>| q.map_or("?".to_string(), |q| q.to_string());
    let (req, resp) = conn.map_or(("?".into(), "?".into()), |c| {
        (side(c.client), side(c.server))
    });
    let (req, resp) = if t.backchannel {
        (resp, req)
    } else {
        (req, resp)
    };
    let header = Row::new(vec![
        "frame".to_string(),
        "+time".to_string(),
        lane_header(&req, &resp, lane),
    ])
    .style(header_style());
    let page = usize::from(area.height.saturating_sub(3));
    let i = Screen::Detail.index();
    let sel = ui.selected[i].min(t.ladder.len().saturating_sub(1));
    let top = super::widgets::window(ui.top[i], sel, page);
    let rows = t.ladder.iter().skip(top).take(page).map(|s: &LadderStep| {
        let what = step_words(&s.what, lane.saturating_sub(8));
        let style = if what.contains("Invalidate") {
            Style::new().fg(Color::Magenta)
        } else if s.from_client {
            Style::new().fg(Color::Cyan)
        } else {
            Style::new().fg(Color::Green)
        };
        Row::new(vec![
            format!("{:>7}", s.frame),
            format!("{:>10}", dur(s.offset_ns)),
            arrow(&what, s.from_client, lane),
        ])
        .style(style)
    });
    let mut title = title(t);
    if t.ladder_omitted > 0 {
        title.push_str(&format!("(+{} steps not kept) ", t.ladder_omitted));
    }
    let table = Table::new(
        rows,
        [
            Constraint::Length(7),
            Constraint::Length(10),
            Constraint::Min(10),
        ],
    )
    .header(header)
    .row_highlight_style(selected_style().remove_modifier(Modifier::BOLD))
    .block(block(title));
    let mut st = TableState::default().with_selected((!t.ladder.is_empty()).then_some(sel - top));
    f.render_stateful_widget(table, area, &mut st);
}

/// The NFS file handle, byte range and retry link in words, when known:
/// `fh 0100… (hash 0x4fec2610) WRITE off 262144 cnt 262144 UNSTABLE; reply cnt
/// 262144 UNSTABLE; retry of xid 0x… (c1) after 100.0 ms`.
fn nfs_file_words(t: &Transaction) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(fh) = &t.nfs_fh {
        parts.push(format!("fh {fh} (hash {:#010x})", fh.hash()));
    }
    if let Some(io) = &t.nfs_io {
        let mut s = io.short();
        if io.reply_count.is_some() || io.eof.is_some() || io.committed.is_some() {
            s.push_str("; reply");
            if let Some(c) = io.reply_count {
                s.push_str(&format!(" cnt {c}"));
            }
            if let Some(e) = io.eof {
                s.push_str(if e { " eof" } else { " not eof" });
            }
            if let Some(c) = io.committed {
                s.push_str(&format!(" {c}"));
            }
        }
        parts.push(s);
    }
    if let Some(x) = t.retry_of_xid {
        let on = t
            .retry_of_connection
            .map_or(String::new(), |c| format!(" ({c})"));
        let after = t
            .retry_wait_us
            .map_or(String::new(), |w| format!(" after {:.1} ms", w / 1000.0));
        parts.push(format!("retry of xid {x:#010x}{on}{after}"));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

fn draw_info(f: &mut Frame<'_>, area: Rect, t: &Transaction, scroll: u16) {
    let key = |s: &'static str| Span::styled(s, Style::new().fg(Color::Cyan));
    let mut lines = vec![
        Line::from(vec![
            key("RPC-over-RDMA  "),
            Span::raw(HeaderWords(&t.call_header).to_string()),
        ]),
        Line::from(vec![
            key("RPC call       "),
            Span::raw(format!(
                "{} v{} proc {} {}; call {} B {}, reply {} {}; status {}{}",
                t.program_name.map_or_else(
                    || t.program.map_or("?".into(), |p| p.to_string()),
                    str::to_string
                ),
                match (t.version, t.minorversion) {
                    (Some(v), Some(m)) => format!("{v}.{m}"),
                    (Some(v), None) => v.to_string(),
                    (None, _) => "?".into(),
                },
                t.proc.map_or("?".into(), |v| v.to_string()),
                t.procedure.as_deref().unwrap_or("?"),
                t.call_len,
                t.call_transfer.as_str(),
                t.reply_len.map_or("-".into(), |l| format!("{l} B")),
                t.reply_transfer.as_str(),
                t.reply_status.as_deref().unwrap_or("-"),
                // The NFS status when the reply carried one.
                match (t.nfs_status.as_deref(), t.nfs_failed_op.as_deref()) {
                    (Some(n), Some(op)) => format!(", NFS {n} in {op}"),
                    (Some(n), None) => format!(", NFS {n}"),
                    (None, _) => String::new(),
                },
            )),
        ]),
        Line::from(vec![
            key("credits        "),
            Span::raw(format!(
                "requested {}, granted {}, in flight at call {}; frames {} -> {}",
                t.credits_requested.map_or("-".into(), |r| r.to_string()),
                t.credits_granted.map_or("-".into(), |g| g.to_string()),
                t.in_flight_at_call,
                t.call_frame,
                t.reply_frame.map_or("-".into(), |r| r.to_string())
            )),
        ]),
    ];
    if let Some(words) = nfs_file_words(t) {
        lines.push(Line::from(vec![key("NFS file       "), Span::raw(words)]));
    }
    let segs: Vec<String> = t
        .chunks
        .iter()
        .map(|s| {
            format!(
                "{} {:#x} {}@{:#x} moved {}{}",
                chunk_kind(s.kind),
                s.handle,
                s.length,
                s.offset,
                bytes(s.bytes_moved),
                if s.remotely_invalidated {
                    " invalidated"
                } else {
                    ""
                }
            )
        })
        .collect();
    lines.push(Line::from(vec![
        key("chunks         "),
        Span::raw(if segs.is_empty() {
            "none".into()
        } else {
            segs.join("; ")
        }),
    ]));
    let p = &t.phases;
    let ph = |v: Option<u64>| v.map_or("-".into(), dur);
    lines.push(Line::from(vec![
        key("phases         "),
        Span::raw(format!(
            "to first RDMA {}, reads {}, writes {}, reply after RDMA {}; invalidated {}",
            ph(p.until_first_rdma_ns),
            ph(p.read_ns),
            ph(p.write_ns),
            ph(p.reply_after_rdma_ns),
            t.remote_invalidated_rkey
                .map_or("none".into(), |k| format!("{k:#x}"))
        )),
    ]));
    // Live with probes: what each kernel saw of this XID beside the wire.
    for v in &t.views {
        lines.push(Line::from(vec![
            key(match v.origin {
                Origin::ClientProbes => "client kernel  ",
                Origin::ServerProbes => "server kernel  ",
                Origin::Wire => "wire           ",
            }),
            Span::raw(format!(
                "{}, latency {}, requested {}, granted {}, invalidated {}, {} chunk segments{}{}",
                v.procedure_label(),
                v.latency_us.map_or("-".into(), |l| format!("{l:.1} µs")),
                v.credits_requested.map_or("-".into(), |r| r.to_string()),
                v.credits_granted.map_or("-".into(), |g| g.to_string()),
                v.remote_invalidated_rkey
                    .map_or("none".into(), |k| format!("{k:#x}")),
                v.chunks.len(),
                // The kernel's own timing; the backlog is queue time the
                // wire cannot see.
                crate::output::lines::kernel_times_words(&v.kernel_times),
                if v.anomalies.is_empty() {
                    String::new()
                } else {
                    let names: Vec<&str> = v.anomalies.iter().map(|k| k.as_str()).collect();
                    format!("; {}", names.join(", "))
                }
            )),
        ]));
    }
    if !t.anomalies.is_empty() {
        let names: Vec<&str> = t.anomalies.iter().map(|k| k.as_str()).collect();
        lines.push(Line::from(vec![
            key("anomalies      "),
            Span::styled(names.join(", "), Style::new().fg(Color::Red)),
        ]));
    }
    // What does not fit scrolls (J/K), and the title says there is more:
    // the chunks, phases and findings are last and on a small terminal
    // would otherwise never show.
    let text = Paragraph::new(lines).wrap(Wrap { trim: false });
    let total = text.line_count(area.width.saturating_sub(2));
    let shown = usize::from(area.height.saturating_sub(2));
    let top = usize::from(scroll).min(total.saturating_sub(shown));
    let title = if total > shown {
        format!(
            " RPC-over-RDMA header and RPC call: lines {}-{} of {} (J/K scroll) ",
            top + 1,
            (top + shown).min(total),
            total
        )
    } else {
        " RPC-over-RDMA header and RPC call ".into()
    };
    f.render_widget(
        text.scroll((u16::try_from(top).unwrap_or(u16::MAX), 0))
            .block(block(title)),
        area,
    );
}

#[cfg(test)]
mod lane_tests {
    use super::lane_header;

    #[test]
    fn the_lane_header_keeps_both_sides_apart_at_any_width() {
        let (req, resp) = ("10.99.0.101/0xabc063", "10.99.0.1/0xabc063");
        assert_eq!(
            lane_header(req, resp, 60),
            format!("requester {req}{}responder {resp}", " ".repeat(2))
        );
        // 80 columns: the words go, the addresses stay whole.
        assert_eq!(
            lane_header(req, resp, 58),
            format!("{req}{}{resp}", " ".repeat(20))
        );
        let narrow = lane_header(req, resp, 20);
        assert_eq!(narrow.chars().count(), 20, "{narrow}");
        assert!(narrow.contains("… "), "cut visibly: {narrow}");
    }
}
