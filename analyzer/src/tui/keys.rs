//! Keys and mouse to actions: pure functions of the event and the UI state.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};

use super::state::{Action, Screen, UiState};

/// Rows one mouse-wheel notch scrolls.
const WHEEL_ROWS: usize = 3;

/// Every key, for the `?` help (kept next to `map` so the two agree).
pub const HELP: &[(&str, &str)] = &[
    ("q  Ctrl-C", "quit"),
    ("?", "show / hide this help"),
    ("Tab  Shift-Tab", "next / previous screen"),
    (
        "d  0",
        "the diagnosis: causes, their evidence, client timelines",
    ),
    (
        "1..6",
        "Overview Transactions Detail Chunks Credits Anomalies",
    ),
    ("7", "the kernel's counters (live): mountstats, devices"),
    ("Up Down k j wheel", "move the selection"),
    ("PgUp PgDn ^B ^F", "one page up / down"),
    ("Home End  g G", "first / last row"),
    ("Enter", "a cause's transactions; ladder of a transaction;"),
    ("", "an anomaly's transaction; a connection's transactions"),
    ("Esc", "back up (ladder, a cause's or connection's list),"),
    ("", "close a box, clear the filter"),
    ("s  S", "sort transactions by the next column / reverse"),
    ("L", "the transactions, slowest first"),
    (
        "J K  f",
        "on a ladder: scroll the pane below; the step's frame",
    ),
    ("w", "a transaction's frames to a pcapng (for Wireshark)"),
    ("/", "filter: c1 && READ  latency > 10ms  !frame == 147"),
    ("p", "pause: freeze the view, the source keeps running"),
    (
        "a",
        "findings: show / hide the acknowledged (--ignore, --ack)",
    ),
];

/// The action a key asks for, if any.
pub fn map(key: KeyEvent, ui: &UiState) -> Option<Action> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    if ctrl && key.code == KeyCode::Char('c') {
        return Some(Action::Quit);
    }
    if ui.editing.is_some() {
        return match key.code {
            KeyCode::Enter => Some(Action::FilterApply),
            KeyCode::Esc => Some(Action::FilterCancel),
            KeyCode::Backspace => Some(Action::FilterBackspace),
            KeyCode::Char(c) if !ctrl => Some(Action::FilterChar(c)),
            _ => None,
        };
    }
    if ui.help || ui.message.is_some() {
        // An overlay takes the keys that would close it; q still quits.
        return match key.code {
            KeyCode::Esc | KeyCode::Enter | KeyCode::Char('?') => Some(if ui.help {
                Action::ToggleHelp
            } else {
                Action::Back
            }),
            KeyCode::Char('q') => Some(Action::Quit),
            _ => None,
        };
    }
    let a = match key.code {
        KeyCode::Char('q') => Action::Quit,
        KeyCode::Char('?') => Action::ToggleHelp,
        KeyCode::Tab => Action::NextScreen,
        KeyCode::BackTab => Action::PrevScreen,
        KeyCode::Char(c @ '0'..='7') => Action::Go(Screen::ALL[usize::from(c as u8 - b'0')]),
        KeyCode::Char('d') => Action::Go(Screen::Diagnosis),
        KeyCode::Char('f') if ctrl => Action::PageDown,
        KeyCode::Char('b') if ctrl => Action::PageUp,
        KeyCode::Up | KeyCode::Char('k') => Action::Up(1),
        KeyCode::Down | KeyCode::Char('j') => Action::Down(1),
        KeyCode::PageUp => Action::PageUp,
        KeyCode::PageDown => Action::PageDown,
        KeyCode::Home | KeyCode::Char('g') => Action::Home,
        KeyCode::End | KeyCode::Char('G') => Action::End,
        KeyCode::Enter => Action::Activate,
        KeyCode::Esc => Action::Back,
        KeyCode::Char('s') => Action::SortNext,
        KeyCode::Char('S') => Action::SortReverse,
        KeyCode::Char('/') => Action::FilterStart,
        KeyCode::Char('p') => Action::TogglePause,
        KeyCode::Char('a') => Action::ToggleAcked,
        KeyCode::Char('L') => Action::SlowestFirst,
        KeyCode::Char('f') if ui.screen == Screen::Detail => Action::ShowFrame,
        KeyCode::Char('w') if matches!(ui.screen, Screen::Detail | Screen::Transactions) => {
            Action::WriteFrames
        }
        KeyCode::Char('J') if ui.screen == Screen::Detail => Action::ScrollInfo(1),
        KeyCode::Char('K') if ui.screen == Screen::Detail => Action::ScrollInfo(-1),
        _ => return None,
    };
    Some(a)
}

/// The action a mouse event asks for: the wheel scrolls.
pub fn map_mouse(m: MouseEvent, ui: &UiState) -> Option<Action> {
    if ui.help || ui.editing.is_some() {
        return None;
    }
    match m.kind {
        MouseEventKind::ScrollUp => Some(Action::Up(WHEEL_ROWS)),
        MouseEventKind::ScrollDown => Some(Action::Down(WHEEL_ROWS)),
        _ => None,
    }
}
