//! Formatting helpers shared by the screens.

use ratatui::style::{Color, Modifier, Style};
use ratatui::widgets::{Block, Borders};

use crate::engine::{ChunkKind, Severity, Transfer};

/// The block every screen draws its main table in.
pub fn block(title: String) -> Block<'static> {
    Block::default().borders(Borders::ALL).title(title)
}

/// Style of the header row.
pub fn header_style() -> Style {
    Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD)
}

/// Style of the selected row.
pub fn selected_style() -> Style {
    Style::new()
        .bg(Color::DarkGray)
        .add_modifier(Modifier::BOLD)
}

/// `1.5 KiB`, `12 MiB`: as the text views write them.
pub fn bytes(n: u64) -> String {
    crate::output::units::bytes(n)
}

/// A duration in ns as `812 ns`, `41.8 µs`, `43.25 ms`, `1.234 s`.
pub fn dur(ns: u64) -> String {
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.1} µs", ns as f64 / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2} ms", ns as f64 / 1e6)
    } else {
        format!("{:.3} s", ns as f64 / 1e9)
    }
}

/// `per second` rate of `n` over `ns`.
pub fn rate(n: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        n as f64 * 1e9 / ns as f64
    }
}

/// Short transfer names for narrow tables.
pub fn transfer_short(t: Transfer) -> &'static str {
    match t {
        Transfer::Inline => "inline",
        Transfer::ReadChunks => "read",
        Transfer::LongCall => "long",
        Transfer::WriteChunks => "write",
        Transfer::ReplyChunk => "reply",
        Transfer::Error => "error",
        Transfer::Unknown => "?",
        Transfer::None => "-",
    }
}

/// Name of a chunk list.
pub fn chunk_kind(k: ChunkKind) -> &'static str {
    match k {
        ChunkKind::Read => "read",
        ChunkKind::Write => "write",
        ChunkKind::Reply => "reply",
    }
}

/// Colour of a severity.
pub fn severity_style(s: Severity) -> Style {
    match s {
        Severity::Error => Style::new().fg(Color::Red),
        Severity::Warning => Style::new().fg(Color::Yellow),
        Severity::Info => Style::new().fg(Color::Gray),
    }
}

/// First row to show so that `sel` is visible in `page` rows, starting from
/// the remembered `top` (the terminal may be smaller than `UiState` thinks).
pub fn window(top: usize, sel: usize, page: usize) -> usize {
    top.min(sel).max((sel + 1).saturating_sub(page.max(1)))
}

/// `s` in at most `w` columns: whole when it fits, else cut with a `…` so a
/// cut never passes for a value (`c112` must not show as `c11`).
pub fn cut(s: &str, w: u16) -> String {
    let w = usize::from(w);
    if s.chars().count() <= w {
        return s.to_string();
    }
    if w == 0 {
        return String::new();
    }
    let mut out: String = s.chars().take(w - 1).collect();
    out.push('…');
    out
}

/// Column widths from the content: each column as wide as its header and its
/// widest cell in `rows`, capped at `max`; then, while the columns and their
/// one-space gaps exceed `avail`, the widest column that can shrink gives up
/// a column (cells are then cut with [`cut`], visibly).
pub fn content_widths(header: &[&str], rows: &[Vec<String>], max: &[u16], avail: u16) -> Vec<u16> {
    let mut w: Vec<u16> = header
        .iter()
        .zip(max)
        .enumerate()
        .map(|(i, (h, &m))| {
            let widest = rows
                .iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .chain([h.chars().count()])
                .max()
                .unwrap_or(0);
            // No column is wider than the table: a huge cell costs no more
            // shrinking than the screen is wide.
            u16::try_from(widest).unwrap_or(u16::MAX).min(m).min(avail)
        })
        .collect();
    let gaps = u32::try_from(w.len().saturating_sub(1)).unwrap_or(u32::MAX);
    let floor = |i: usize| {
        u16::try_from(header[i].chars().count())
            .unwrap_or(u16::MAX)
            .max(3)
    };
    while w
        .iter()
        .map(|&x| u32::from(x))
        .sum::<u32>()
        .saturating_add(gaps)
        > u32::from(avail)
    {
        let Some(i) = (0..w.len())
            .filter(|&i| w[i] > floor(i))
            .max_by_key(|&i| w[i])
        else {
            break;
        };
        w[i] -= 1;
    }
    w
}

/// `rows` fitted to `avail` columns ([`content_widths`]): the widths as
/// constraints, and every cell whole or cut with `…`.
pub fn fit_rows(
    header: &[&str],
    rows: Vec<Vec<String>>,
    max: &[u16],
    avail: u16,
) -> (Vec<ratatui::layout::Constraint>, Vec<Vec<String>>) {
    let w = content_widths(header, &rows, max, avail);
    let rows = rows
        .into_iter()
        .map(|r| r.iter().zip(&w).map(|(c, &x)| cut(c, x)).collect())
        .collect();
    (
        w.into_iter()
            .map(ratatui::layout::Constraint::Length)
            .collect(),
        rows,
    )
}
