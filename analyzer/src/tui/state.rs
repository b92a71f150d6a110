//! What the user has chosen: screen, selection, scroll, sort, filter text.
//!
//! `UiState` never looks at the engine or the model; actions that need the
//! model (Enter on a row) are resolved by the event loop into concrete ones
//! ([`Action::ShowTxn`], [`Action::Message`]) before they reach `apply`.

/// The screens, in tab order (number keys 0-7; `d` is the diagnosis too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Screen {
    /// The causes the diagnosis names, each client's connections in time order.
    Diagnosis,
    /// Connections, totals, latency histogram.
    Overview,
    /// One row per XID.
    Transactions,
    /// Ladder diagram of one transaction.
    Detail,
    /// Chunk segments and invalidations.
    Chunks,
    /// Credits over time per connection.
    Credits,
    /// Anomalies grouped by kind.
    Anomalies,
    /// The kernel's own counters (`live`'s sampler): mountstats per mount
    /// and transport, per-op counters, the devices' hw_counters.
    Counters,
}

impl Screen {
    /// Every screen, in tab order.
    pub const ALL: [Screen; SCREENS] = [
        Screen::Diagnosis,
        Screen::Overview,
        Screen::Transactions,
        Screen::Detail,
        Screen::Chunks,
        Screen::Credits,
        Screen::Anomalies,
        Screen::Counters,
    ];

    /// Position in [`Screen::ALL`].
    pub fn index(self) -> usize {
        Screen::ALL.iter().position(|s| *s == self).unwrap_or(0)
    }

    /// The number key that shows it (the tab bar shows it too): the
    /// diagnosis is 0 so the other screens keep the keys they had.
    pub fn key(self) -> char {
        char::from(b'0' + self.index() as u8)
    }

    /// Tab title.
    pub fn title(self) -> &'static str {
        match self {
            Screen::Diagnosis => "Diagnosis",
            Screen::Overview => "Overview",
            Screen::Transactions => "Transactions",
            Screen::Detail => "Detail",
            Screen::Chunks => "Chunks",
            Screen::Credits => "Credits",
            Screen::Anomalies => "Anomalies",
            Screen::Counters => "Counters",
        }
    }

    /// A shorter title, for a tab bar too narrow for every full one.
    pub fn short_title(self) -> &'static str {
        match self {
            Screen::Transactions => "Txns",
            s => s.title(),
        }
    }
}

/// Columns the transaction table can be sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SortCol {
    /// Call time (arrival order).
    Time,
    /// Connection id.
    Conn,
    /// XID.
    Xid,
    /// Procedure label.
    Procedure,
    /// How the call travelled.
    Call,
    /// How the reply travelled.
    Reply,
    /// Call to reply.
    Latency,
    /// Internode round trips.
    RoundTrips,
    /// Bytes moved through chunks.
    Bytes,
    /// Remotely invalidated R_Key.
    Invalidation,
    /// Number of anomalies.
    Anomalies,
}

impl SortCol {
    /// Every column, in `s` cycling order.
    pub const ALL: [SortCol; 11] = [
        SortCol::Time,
        SortCol::Conn,
        SortCol::Xid,
        SortCol::Procedure,
        SortCol::Call,
        SortCol::Reply,
        SortCol::Latency,
        SortCol::RoundTrips,
        SortCol::Bytes,
        SortCol::Invalidation,
        SortCol::Anomalies,
    ];

    /// The next column in cycling order.
    pub fn next(self) -> SortCol {
        let i = SortCol::ALL.iter().position(|c| *c == self).unwrap_or(0);
        SortCol::ALL[(i + 1) % SortCol::ALL.len()]
    }
}

/// How the transaction table is sorted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sort {
    /// Column.
    pub col: SortCol,
    /// Largest first.
    pub desc: bool,
}

/// What a key (or the event loop) asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Leave the program.
    Quit,
    /// Next screen (Tab).
    NextScreen,
    /// Previous screen (Shift-Tab).
    PrevScreen,
    /// A given screen (number keys).
    Go(Screen),
    /// Selection up by n rows.
    Up(usize),
    /// Selection down by n rows.
    Down(usize),
    /// One page up.
    PageUp,
    /// One page down.
    PageDown,
    /// First row.
    Home,
    /// Last row.
    End,
    /// Next sort column (`s`).
    SortNext,
    /// Reverse the sort (`S`).
    SortReverse,
    /// Start typing a filter (`/`).
    FilterStart,
    /// A character of the filter being typed.
    FilterChar(char),
    /// Delete the last character of the filter being typed.
    FilterBackspace,
    /// Apply the filter being typed (Enter).
    FilterApply,
    /// Abandon the filter being typed (Esc).
    FilterCancel,
    /// Enter on a row: the event loop resolves it against the model.
    Activate,
    /// Esc: close the overlay, or leave the detail screen.
    Back,
    /// Show or hide the key help (`?`).
    ToggleHelp,
    /// Freeze or unfreeze the view (`p`); the source keeps running.
    TogglePause,
    /// Show or hide the acknowledged findings (`a`).
    ToggleAcked,
    /// Open the detail screen on a transaction (row id in the model).
    ShowTxn(usize),
    /// Set the filter and show the transactions it selects (Enter on a
    /// connection or a cause); Esc goes back up to the screen it came from.
    FilterTo {
        /// The filter, as typed.
        filter: String,
        /// Select the first transaction called at or after this time (ns).
        seek_ns: Option<u64>,
    },
    /// The screen to settle on once the source is done, unless the user
    /// has moved already: the diagnosis when it names a cause, else the overview.
    FirstScreen(Screen),
    /// Show a message box (e.g. an anomaly's frames when no transaction matches).
    Message(String),
    /// Scroll the detail screen's lower pane (header, call, chunks, phases,
    /// findings) by this many lines, down when positive.
    ScrollInfo(i16),
    /// The transactions, slowest first: one key for the question users ask
    /// most.
    SlowestFirst,
    /// Show the frame of the ladder step selected ([`super::frames`]; the
    /// event loop reads it, then shows it as a message).
    ShowFrame,
    /// Write the chosen transaction's frames to a pcapng (as `ShowFrame`).
    WriteFrames,
    /// The terminal has this many rows (for paging and keeping the selection visible).
    Resize(u16),
}

/// Selection, scroll, focus and filter text: all the UI remembers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UiState {
    /// The screen shown.
    pub screen: Screen,
    /// Where Esc on the detail screen returns to.
    pub back_to: Screen,
    /// Selected row per screen (index into the screen's visible list).
    pub selected: [usize; SCREENS],
    /// First row shown per screen.
    pub top: [usize; SCREENS],
    /// Rows in each screen's list (set by the event loop from the model).
    pub lens: [usize; SCREENS],
    /// Table body rows that fit on screen (from the terminal height).
    pub page: usize,
    /// Transaction table order.
    pub sort: Sort,
    /// The filter in force (as typed; parsed with `report::Filter::parse`).
    pub filter: String,
    /// The filter being typed, while `/` is active.
    pub editing: Option<String>,
    /// Help overlay shown.
    pub help: bool,
    /// View frozen.
    pub paused: bool,
    /// Acknowledged findings shown (`a`).
    pub show_acked: bool,
    /// Transaction on the detail screen (row id in the model).
    pub detail: Option<usize>,
    /// A message box.
    pub message: Option<String>,
    /// Quit requested.
    pub quit: bool,
    /// Where Esc on the transactions goes back up to, and the filter it
    /// had there (set by Enter on a connection or a cause).
    pub up: Option<(Screen, String)>,
    /// A time (ns) the transaction list is to select the first call at or
    /// after, once its view is rebuilt (the model resolves it).
    pub seek_ns: Option<u64>,
    /// The first screen is still to be chosen ([`Action::FirstScreen`]).
    pub settle: bool,
    /// First line shown of the detail screen's lower pane.
    pub info_scroll: u16,
}

impl Default for UiState {
    fn default() -> Self {
        UiState {
            screen: Screen::Overview,
            back_to: Screen::Transactions,
            selected: [0; SCREENS],
            top: [0; SCREENS],
            lens: [0; SCREENS],
            page: 20,
            sort: Sort {
                col: SortCol::Time,
                desc: false,
            },
            filter: String::new(),
            editing: None,
            help: false,
            paused: false,
            show_acked: false,
            detail: None,
            message: None,
            quit: false,
            up: None,
            seek_ns: None,
            settle: false,
            info_scroll: 0,
        }
    }
}

/// How many screens there are.
pub const SCREENS: usize = 8;

/// Table body rows for a terminal `height` rows tall: tab bar, status line,
/// block borders and the header row take 5.
pub fn page_rows(height: u16) -> usize {
    usize::from(height.saturating_sub(5)).max(1)
}

impl UiState {
    /// The state `open` and `live` start in: on the diagnosis, which gives
    /// way to the overview once the source is done if it names no cause.
    pub fn opening() -> Self {
        UiState {
            screen: Screen::Diagnosis,
            settle: true,
            ..UiState::default()
        }
    }

    /// Records how many rows `screen` lists now, keeping the selection inside.
    pub fn set_len(&mut self, screen: Screen, len: usize) {
        let i = screen.index();
        self.lens[i] = len;
        if self.selected[i] >= len {
            self.selected[i] = len.saturating_sub(1);
        }
        self.scroll_into_view(i);
    }

    /// Selected row of the screen shown.
    pub fn sel(&self) -> usize {
        self.selected[self.screen.index()]
    }

    /// Moves the first shown row so the selection is visible.
    fn scroll_into_view(&mut self, i: usize) {
        let page = self.page.max(1);
        let sel = self.selected[i];
        if sel < self.top[i] {
            self.top[i] = sel;
        } else if sel >= self.top[i] + page {
            self.top[i] = sel + 1 - page;
        }
        let max_top = self.lens[i].saturating_sub(page);
        self.top[i] = self.top[i].min(max_top);
        if sel < self.top[i] {
            self.top[i] = sel;
        }
    }

    fn select(&mut self, f: impl FnOnce(usize, usize, usize) -> usize) {
        let i = self.screen.index();
        let len = self.lens[i];
        let new = f(self.selected[i], len, self.page.max(1));
        self.selected[i] = new.min(len.saturating_sub(1));
        self.scroll_into_view(i);
    }

    fn go(&mut self, s: Screen) {
        if s == Screen::Detail && self.screen != Screen::Detail {
            self.back_to = self.screen;
        }
        // Going elsewhere than down (to a ladder) or back leaves the drill.
        if !matches!(s, Screen::Detail | Screen::Transactions) {
            self.up = None;
        }
        self.screen = s;
    }

    /// Sets the filter in force, the lists it shapes starting from the top.
    fn set_filter(&mut self, f: String) {
        self.filter = f;
        for s in [Screen::Transactions, Screen::Chunks, Screen::Anomalies] {
            self.reset_list(s);
        }
    }

    /// Applies one action.
    pub fn apply(&mut self, a: Action) {
        // The user has moved: the first screen is theirs now.
        if !matches!(a, Action::Resize(_) | Action::FirstScreen(_)) {
            self.settle = false;
        }
        match a {
            Action::Quit => self.quit = true,
            Action::NextScreen => {
                let i = self.screen.index();
                self.go(Screen::ALL[(i + 1) % Screen::ALL.len()]);
            }
            Action::PrevScreen => {
                let i = self.screen.index();
                self.go(Screen::ALL[(i + Screen::ALL.len() - 1) % Screen::ALL.len()]);
            }
            Action::Go(s) => self.go(s),
            Action::Up(n) => self.select(|s, _, _| s.saturating_sub(n)),
            Action::Down(n) => self.select(|s, _, _| s.saturating_add(n)),
            Action::PageUp => self.select(|s, _, p| s.saturating_sub(p)),
            Action::PageDown => self.select(|s, _, p| s.saturating_add(p)),
            Action::Home => self.select(|_, _, _| 0),
            Action::End => self.select(|_, l, _| l.saturating_sub(1)),
            Action::SortNext => {
                self.sort.col = self.sort.col.next();
                self.reset_list(Screen::Transactions);
            }
            Action::SortReverse => {
                self.sort.desc = !self.sort.desc;
                self.reset_list(Screen::Transactions);
            }
            Action::FilterStart => self.editing = Some(self.filter.clone()),
            Action::FilterChar(c) => {
                if let Some(e) = self.editing.as_mut() {
                    e.push(c);
                }
            }
            Action::FilterBackspace => {
                if let Some(e) = self.editing.as_mut() {
                    e.pop();
                }
            }
            // A filter that does not parse stays in the prompt, its error
            // shown there, rather than silently select everything.
            Action::FilterApply => {
                if let Some(e) = self.editing.take() {
                    if crate::output::Filter::parse(&e).is_ok() {
                        self.set_filter(e.trim().to_string());
                    } else {
                        self.editing = Some(e);
                    }
                }
            }
            Action::FilterCancel => self.editing = None,
            Action::Activate => {}
            Action::Back => {
                if self.message.is_some() {
                    self.message = None;
                } else if self.help {
                    self.help = false;
                } else if self.screen == Screen::Detail {
                    self.screen = self.back_to;
                } else if let Some((s, f)) = self
                    .up
                    .take()
                    .filter(|_| self.screen == Screen::Transactions)
                {
                    // Back up to the cause or connection the list came from.
                    self.set_filter(f);
                    self.screen = s;
                } else if !self.filter.is_empty() {
                    // Esc on a list clears the filter, as in less and most pagers.
                    self.set_filter(String::new());
                }
            }
            Action::ToggleHelp => self.help = !self.help,
            Action::TogglePause => self.paused = !self.paused,
            Action::ToggleAcked => self.show_acked = !self.show_acked,
            Action::ShowTxn(row) => {
                self.detail = Some(row);
                self.info_scroll = 0;
                self.selected[Screen::Detail.index()] = 0;
                self.top[Screen::Detail.index()] = 0;
                self.go(Screen::Detail);
            }
            Action::FilterTo { filter, seek_ns } => {
                let from = (self.screen, std::mem::take(&mut self.filter));
                self.set_filter(filter);
                self.go(Screen::Transactions);
                self.up = Some(from);
                self.seek_ns = seek_ns;
            }
            Action::FirstScreen(s) => {
                if self.settle {
                    self.settle = false;
                    self.go(s);
                }
            }
            Action::Message(m) => self.message = Some(m),
            // The event loop turns these into messages; nothing to keep.
            Action::ShowFrame | Action::WriteFrames => {}
            // The pane clamps it to its content when drawn.
            Action::ScrollInfo(n) => {
                self.info_scroll = self.info_scroll.saturating_add_signed(n);
            }
            Action::SlowestFirst => {
                self.sort = Sort {
                    col: SortCol::Latency,
                    desc: true,
                };
                self.reset_list(Screen::Transactions);
                self.go(Screen::Transactions);
            }
            Action::Resize(h) => {
                self.page = page_rows(h);
                for i in 0..Screen::ALL.len() {
                    self.scroll_into_view(i);
                }
            }
        }
    }

    fn reset_list(&mut self, s: Screen) {
        let i = s.index();
        self.selected[i] = 0;
        self.top[i] = 0;
    }
}
