//! Key mapping, UI state transitions and snapshots of every screen drawn
//! from the lab captures (no wall-clock time reaches a snapshot: the model
//! holds capture times only).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::feed::{self, Feed, Msg};
use super::keys::{map, map_mouse};
use super::model::{Caps, Model};
use super::state::{Action, Screen, SortCol, UiState};
use super::{app, draw};
use crate::engine::{Anomaly, Config, Finding, Kind, Transfer};
use crate::pipeline::{Progress, Stop};
use crate::test_support::capture_source;

fn key(c: KeyCode) -> KeyEvent {
    KeyEvent::new(c, KeyModifiers::NONE)
}

fn ch(c: char) -> KeyEvent {
    key(KeyCode::Char(c))
}

#[test]
fn keys_navigation() {
    let ui = UiState::default();
    assert_eq!(map(ch('q'), &ui), Some(Action::Quit));
    assert_eq!(
        map(
            KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
            &ui
        ),
        Some(Action::Quit)
    );
    assert_eq!(map(key(KeyCode::Tab), &ui), Some(Action::NextScreen));
    assert_eq!(map(key(KeyCode::BackTab), &ui), Some(Action::PrevScreen));
    assert_eq!(map(ch('1'), &ui), Some(Action::Go(Screen::Overview)));
    assert_eq!(map(ch('6'), &ui), Some(Action::Go(Screen::Anomalies)));
    assert_eq!(map(ch('7'), &ui), Some(Action::Go(Screen::Counters)));
    assert_eq!(map(ch('8'), &ui), None);
    assert_eq!(map(ch('0'), &ui), Some(Action::Go(Screen::Diagnosis)));
    assert_eq!(map(ch('d'), &ui), Some(Action::Go(Screen::Diagnosis)));
    assert_eq!(map(ch('j'), &ui), Some(Action::Down(1)));
    assert_eq!(map(key(KeyCode::Down), &ui), Some(Action::Down(1)));
    assert_eq!(map(ch('k'), &ui), Some(Action::Up(1)));
    assert_eq!(map(key(KeyCode::Up), &ui), Some(Action::Up(1)));
    assert_eq!(map(ch('g'), &ui), Some(Action::Home));
    assert_eq!(map(ch('G'), &ui), Some(Action::End));
    assert_eq!(map(key(KeyCode::Home), &ui), Some(Action::Home));
    assert_eq!(map(key(KeyCode::End), &ui), Some(Action::End));
    assert_eq!(map(key(KeyCode::PageDown), &ui), Some(Action::PageDown));
    assert_eq!(map(key(KeyCode::PageUp), &ui), Some(Action::PageUp));
    assert_eq!(
        map(
            KeyEvent::new(KeyCode::Char('f'), KeyModifiers::CONTROL),
            &ui
        ),
        Some(Action::PageDown)
    );
    assert_eq!(map(key(KeyCode::Enter), &ui), Some(Action::Activate));
    assert_eq!(map(key(KeyCode::Esc), &ui), Some(Action::Back));
    assert_eq!(map(ch('s'), &ui), Some(Action::SortNext));
    assert_eq!(map(ch('S'), &ui), Some(Action::SortReverse));
    assert_eq!(map(ch('/'), &ui), Some(Action::FilterStart));
    assert_eq!(map(ch('p'), &ui), Some(Action::TogglePause));
    assert_eq!(map(ch('?'), &ui), Some(Action::ToggleHelp));
    assert_eq!(map(ch('x'), &ui), None);
    let mut release = ch('q');
    release.kind = KeyEventKind::Release;
    assert_eq!(map(release, &ui), None);
}

#[test]
fn keys_while_typing_a_filter() {
    let ui = UiState {
        editing: Some("RE".into()),
        ..UiState::default()
    };
    // Letters that are commands elsewhere are text here.
    assert_eq!(map(ch('q'), &ui), Some(Action::FilterChar('q')));
    assert_eq!(map(ch('j'), &ui), Some(Action::FilterChar('j')));
    assert_eq!(
        map(key(KeyCode::Backspace), &ui),
        Some(Action::FilterBackspace)
    );
    assert_eq!(map(key(KeyCode::Enter), &ui), Some(Action::FilterApply));
    assert_eq!(map(key(KeyCode::Esc), &ui), Some(Action::FilterCancel));
    assert_eq!(
        map(
            KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
            &ui
        ),
        Some(Action::Quit)
    );
}

#[test]
fn keys_with_an_overlay() {
    let help = UiState {
        help: true,
        ..UiState::default()
    };
    assert_eq!(map(key(KeyCode::Esc), &help), Some(Action::ToggleHelp));
    assert_eq!(map(ch('?'), &help), Some(Action::ToggleHelp));
    assert_eq!(map(ch('j'), &help), None);
    assert_eq!(map(ch('q'), &help), Some(Action::Quit));
    let msg = UiState {
        message: Some("x".into()),
        ..UiState::default()
    };
    assert_eq!(map(key(KeyCode::Enter), &msg), Some(Action::Back));
    assert_eq!(map(ch('2'), &msg), None);
}

#[test]
fn mouse_wheel_scrolls() {
    let ui = UiState::default();
    let ev = |kind| MouseEvent {
        kind,
        column: 0,
        row: 0,
        modifiers: KeyModifiers::NONE,
    };
    assert_eq!(
        map_mouse(ev(MouseEventKind::ScrollDown), &ui),
        Some(Action::Down(3))
    );
    assert_eq!(
        map_mouse(ev(MouseEventKind::ScrollUp), &ui),
        Some(Action::Up(3))
    );
    assert_eq!(map_mouse(ev(MouseEventKind::Moved), &ui), None);
}

#[test]
fn apply_screens_and_back() {
    let mut ui = UiState::default();
    ui.apply(Action::NextScreen);
    assert_eq!(ui.screen, Screen::Transactions);
    ui.apply(Action::PrevScreen);
    ui.apply(Action::PrevScreen);
    assert_eq!(ui.screen, Screen::Diagnosis);
    ui.apply(Action::PrevScreen);
    assert_eq!(ui.screen, Screen::Counters, "Shift-Tab wraps around");
    ui.apply(Action::Go(Screen::Transactions));
    ui.apply(Action::ShowTxn(7));
    assert_eq!((ui.screen, ui.detail), (Screen::Detail, Some(7)));
    ui.apply(Action::Back);
    assert_eq!(
        ui.screen,
        Screen::Transactions,
        "Esc returns where Enter came from"
    );
    ui.apply(Action::Go(Screen::Overview));
    ui.apply(Action::FilterTo {
        filter: "c2".into(),
        seek_ns: None,
    });
    assert_eq!(
        (ui.screen, ui.filter.as_str()),
        (Screen::Transactions, "c2")
    );
    // Down to a ladder and back, then back up to where the list came from,
    // with the filter it had there.
    ui.apply(Action::ShowTxn(1));
    ui.apply(Action::Back);
    assert_eq!(ui.screen, Screen::Transactions);
    ui.apply(Action::Back);
    assert_eq!((ui.screen, ui.filter.as_str()), (Screen::Overview, ""));
    // A typed filter is cleared by Esc, as before.
    ui.apply(Action::Go(Screen::Transactions));
    ui.filter = "READ".into();
    ui.apply(Action::Back);
    assert_eq!((ui.screen, ui.filter.as_str()), (Screen::Transactions, ""));
    // d (or 0) reaches the diagnosis from anywhere, and leaves the drill.
    ui.apply(Action::Go(Screen::Diagnosis));
    ui.apply(Action::FilterTo {
        filter: "0x1".into(),
        seek_ns: None,
    });
    ui.apply(Action::Go(Screen::Credits));
    assert_eq!(ui.up, None);
    ui.apply(Action::Quit);
    assert!(ui.quit);
}

#[test]
fn apply_selection_is_clamped_and_visible() {
    let mut ui = UiState::default();
    let t = Screen::Transactions.index();
    ui.apply(Action::Resize(24));
    assert_eq!(ui.page, 19);
    ui.apply(Action::Go(Screen::Transactions));
    ui.set_len(Screen::Transactions, 100);
    ui.apply(Action::Up(1));
    assert_eq!(ui.sel(), 0);
    ui.apply(Action::Down(5));
    assert_eq!(ui.sel(), 5);
    ui.apply(Action::PageDown);
    assert_eq!(ui.sel(), 24);
    assert_eq!(ui.top[t], 24 + 1 - 19, "the selection stays on screen");
    ui.apply(Action::End);
    assert_eq!(ui.sel(), 99);
    assert_eq!(ui.top[t], 81);
    ui.apply(Action::Down(10));
    assert_eq!(ui.sel(), 99);
    ui.apply(Action::PageUp);
    assert_eq!(ui.sel(), 80);
    assert_eq!(ui.top[t], 80);
    ui.apply(Action::Home);
    assert_eq!((ui.sel(), ui.top[t]), (0, 0));
    // The list shrinking (a filter) pulls the selection in.
    ui.apply(Action::End);
    ui.set_len(Screen::Transactions, 3);
    assert_eq!((ui.sel(), ui.top[t]), (2, 0));
    ui.set_len(Screen::Transactions, 0);
    assert_eq!(ui.sel(), 0);
    ui.apply(Action::Down(1));
    assert_eq!(ui.sel(), 0);
}

#[test]
fn apply_sort_filter_help_pause() {
    let mut ui = UiState::default();
    ui.set_len(Screen::Transactions, 10);
    ui.screen = Screen::Transactions;
    ui.apply(Action::Down(4));
    ui.apply(Action::SortNext);
    assert_eq!(ui.sort.col, SortCol::Conn);
    assert_eq!(ui.sel(), 0, "a new order starts at the top");
    ui.apply(Action::SortReverse);
    assert!(ui.sort.desc);
    for _ in 0..SortCol::ALL.len() - 1 {
        ui.apply(Action::SortNext);
    }
    assert_eq!(ui.sort.col, SortCol::Time, "s cycles through every column");
    ui.apply(Action::FilterStart);
    for c in "READX".chars() {
        ui.apply(Action::FilterChar(c));
    }
    ui.apply(Action::FilterBackspace);
    assert_eq!(ui.editing.as_deref(), Some("READ"));
    assert_eq!(ui.filter, "", "nothing applies before Enter");
    ui.apply(Action::FilterApply);
    assert_eq!((ui.filter.as_str(), ui.editing.clone()), ("READ", None));
    ui.apply(Action::FilterStart);
    ui.apply(Action::FilterChar('x'));
    ui.apply(Action::FilterCancel);
    assert_eq!(ui.filter, "READ", "Esc keeps the filter in force");
    ui.apply(Action::Back);
    assert_eq!(ui.filter, "", "Esc on a list clears the filter");
    ui.apply(Action::ToggleHelp);
    assert!(ui.help);
    ui.apply(Action::Back);
    assert!(!ui.help);
    ui.apply(Action::TogglePause);
    assert!(ui.paused);
    ui.apply(Action::TogglePause);
    assert!(!ui.paused);
    ui.apply(Action::Message("m".into()));
    ui.apply(Action::Back);
    assert_eq!(ui.message, None);
}

fn capture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("captures")
        .join(name)
}

/// The model of a lab capture, built the way the screen builds it.
pub(crate) fn model_of(name: &str) -> Model {
    let path = capture(name);
    let mut m = Model::new(name, Caps::default());
    let config = Config::default();
    let source = capture_source(&path, &config.stack);
    m.load(source, config).expect("pipeline thread");
    m
}

fn render(m: &mut Model, ui: &mut UiState, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
    ui.apply(Action::Resize(h));
    m.refresh(ui);
    t.draw(|f| draw(f, m, ui)).expect("draw");
    t
}

/// Snapshots every screen of `capture` at 80×24 and 160×48.
fn snapshot_all(capture: &str, tag: &str) {
    let mut m = model_of(capture);
    assert!(m.done && m.error.is_none(), "{capture} read to the end");
    // The detail screen shows the first transaction that moved data by RDMA
    // (or the first one when none did).
    let row = m
        .rows
        .iter()
        .position(|r| r.call != Transfer::Inline || r.reply != Transfer::Inline)
        .unwrap_or(0);
    for (w, h) in [(80u16, 24u16), (160, 48)] {
        for s in Screen::ALL {
            let mut ui = UiState::default();
            ui.apply(Action::ShowTxn(row));
            ui.apply(Action::Go(s));
            let t = render(&mut m, &mut ui, w, h);
            let name = format!("{tag}_{}_{w}x{h}", s.title().to_lowercase());
            insta::assert_snapshot!(name, t.backend());
        }
    }
}

#[test]
fn snapshots_v3_ddp() {
    snapshot_all("v3-ddp.pcap", "ddp");
}

#[test]
fn snapshots_v3_inline() {
    snapshot_all("v3-inline.pcap", "inline");
}

#[test]
fn snapshots_with_filter_sort_help_and_anomalies() {
    let mut m = model_of("v3-ddp.pcap");
    // The lab captures are clean; add anomalies as the engine would report
    // them, on real transactions, to draw the grouped list.
    let xid = m.rows[3].xid;
    for (kind, xid, frames) in [
        (Kind::CreditOverrun, Some(xid), vec![38]),
        (Kind::CreditOverrun, None, vec![90, 91]),
        (Kind::RdmaOutsideChunk, None, vec![500]),
    ] {
        m.push(Finding::Anomaly(Box::new(Anomaly {
            kind,
            origin: crate::engine::Origin::Wire,
            ts_ns: None,
            frames,
            connection: Some(crate::engine::ConnId(1)),
            xid,
            message: format!("{} (injected by the test)", kind.as_str()),
            repeated: None,
        })));
    }
    let mut ui = UiState::default();
    ui.apply(Action::Go(Screen::Anomalies));
    m.refresh(&mut ui);
    ui.apply(Action::Down(1));
    insta::assert_snapshot!(
        "ddp_anomalies_injected_160x48",
        render(&mut m, &mut ui, 160, 48).backend()
    );
    // Enter on the first item jumps to its transaction.
    let a = app::resolve(Action::Activate, &m, &ui).expect("an action");
    assert_eq!(a, Action::ShowTxn(3));
    // Enter on one without an XID shows its frames.
    ui.apply(Action::Down(1));
    match app::resolve(Action::Activate, &m, &ui) {
        Some(Action::Message(s)) => assert!(s.contains("90,91"), "{s}"),
        other => panic!("expected a message, got {other:?}"),
    }
    // Enter on a connection lists its transactions.
    let mut ui = UiState::default();
    m.refresh(&mut ui);
    assert_eq!(
        app::resolve(Action::Activate, &m, &ui),
        Some(Action::FilterTo {
            filter: "c1".into(),
            seek_ns: None
        })
    );
    let mut ui = UiState::default();
    ui.apply(Action::Go(Screen::Transactions));
    ui.filter = "READ".into();
    for _ in 0..6 {
        ui.apply(Action::SortNext);
    }
    assert_eq!(ui.sort.col, SortCol::Latency);
    ui.apply(Action::SortReverse);
    insta::assert_snapshot!(
        "ddp_transactions_read_by_latency_desc_160x48",
        render(&mut m, &mut ui, 160, 48).backend()
    );
    let mut ui = UiState::default();
    ui.apply(Action::ToggleHelp);
    insta::assert_snapshot!("help_80x24", render(&mut m, &mut ui, 80, 24).backend());
}

#[test]
fn tiny_and_odd_sizes_do_not_panic() {
    let mut m = model_of("v3-inline.pcap");
    for (w, h) in [(1, 1), (10, 3), (20, 5), (79, 23), (300, 100), (80, 7)] {
        for s in Screen::ALL {
            let mut ui = UiState::default();
            ui.apply(Action::ShowTxn(0));
            ui.apply(Action::Go(s));
            ui.apply(Action::End);
            let _ = render(&mut m, &mut ui, w, h);
        }
    }
}

#[test]
fn views_filter_and_sort() {
    let mut m = model_of("v3-ddp.pcap");
    let mut ui = UiState::default();
    m.refresh(&mut ui);
    assert_eq!(m.view.len(), 44);
    ui.filter = "WRITE".into();
    m.refresh(&mut ui);
    assert_eq!(m.view.len(), 8);
    assert!(m
        .view
        .iter()
        .all(|r| m.label(&m.rows[*r as usize]) == "NFS WRITE"));
    let xid = m.rows[10].xid;
    ui.filter = format!("{xid:#x}");
    m.refresh(&mut ui);
    assert_eq!(m.view.len(), 1);
    ui.filter = "c1".into();
    m.refresh(&mut ui);
    assert_eq!(m.view.len(), 44);
    ui.filter = "c2".into();
    m.refresh(&mut ui);
    assert!(m.view.is_empty());
    ui.filter.clear();
    ui.sort.col = SortCol::Latency;
    ui.sort.desc = true;
    m.refresh(&mut ui);
    let lat: Vec<u64> = m
        .view
        .iter()
        .map(|r| m.rows[*r as usize].latency_ns)
        .collect();
    assert!(lat.windows(2).all(|w| w[0] >= w[1]));
    ui.sort.col = SortCol::Procedure;
    ui.sort.desc = false;
    m.refresh(&mut ui);
    let labels: Vec<&str> = m
        .view
        .iter()
        .map(|r| m.label(&m.rows[*r as usize]))
        .collect();
    assert!(labels.windows(2).all(|w| w[0] <= w[1]));
}

/// A source that waits for `go`, then sends `n` one-anomaly batches.
struct Burst {
    n: usize,
    live: bool,
    go: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
}

impl Burst {
    /// Sends from a thread of its own, as the pipeline thread would.
    fn run(self, feed: Feed) {
        while !self.go.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(1));
        }
        for i in 0..self.n {
            let m = Msg::Findings(vec![Finding::Anomaly(Box::new(Anomaly {
                kind: Kind::Retransmission,
                origin: crate::engine::Origin::Wire,
                ts_ns: None,
                frames: vec![i as u64 + 1],
                connection: None,
                xid: None,
                message: String::new(),
                repeated: None,
            }))]);
            if self.live {
                feed.offer(m);
            } else {
                feed.send(m);
            }
        }
        drop(feed);
        self.done.store(true, Ordering::SeqCst);
    }

    fn session(self) -> app::Session {
        let (feed, tap) = feed::channel(Stop::new());
        let live = self.live;
        let worker = std::thread::spawn(move || self.run(feed));
        app::Session {
            tap,
            worker: Some(worker),
            describe: "burst".into(),
            live,
            caps: Caps::default(),
            reopen: None,
            stack: Config::default().stack,
            acks: crate::output::ack::Acks::default(),
            sampling: super::counters::Sampling::File,
            counters: None,
        }
    }
}

enum Step {
    Key(char),
    /// Sets a flag; no event.
    Signal(Arc<AtomicBool>),
    /// Waits for a flag; no event.
    WaitFor(Arc<AtomicBool>),
    /// No event: lets the loop turn once.
    Idle,
}

/// Scripted input: the loop's `Input` without a terminal.
struct Script(std::collections::VecDeque<Step>);

impl app::Input for Script {
    fn next(&mut self, _timeout: Duration) -> std::io::Result<Option<crossterm::event::Event>> {
        Ok(match self.0.pop_front() {
            Some(Step::Key(c)) => Some(crossterm::event::Event::Key(ch(c))),
            Some(Step::Signal(f)) => {
                f.store(true, Ordering::SeqCst);
                None
            }
            Some(Step::WaitFor(f)) => {
                while !f.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                None
            }
            Some(Step::Idle) => None,
            None => Some(crossterm::event::Event::Key(ch('q'))),
        })
    }
}

/// Runs the real event loop over a `Burst`: pause, let the source send
/// everything, optionally unpause, quit.
fn paused_run(n: usize, live: bool, unpause: bool) -> (Model, UiState) {
    let go = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    let src = Burst {
        n,
        live,
        go: go.clone(),
        done: done.clone(),
    };
    let mut steps = vec![
        Step::Key('p'),
        Step::Signal(go),
        Step::WaitFor(done),
        Step::Idle,
    ];
    if unpause {
        steps.extend([Step::Key('p'), Step::Idle, Step::Idle]);
    }
    let mut t = Terminal::new(TestBackend::new(80, 24)).expect("test terminal");
    app::run(
        &mut t,
        src.session(),
        UiState::default(),
        &mut Script(steps.into()),
    )
    .expect("loop")
}

#[test]
fn pause_freezes_a_file_source_without_losing_anything() {
    let (m, ui) = paused_run(10, false, false);
    assert!(ui.paused);
    assert_eq!((m.counters.events, m.counters.dropped), (0, 0));
    let (m, ui) = paused_run(10, false, true);
    assert!(!ui.paused);
    assert_eq!((m.counters.events, m.counters.dropped), (10, 0));
}

#[test]
fn pause_freezes_a_live_source_and_counts_what_it_drops() {
    let (m, _) = paused_run(6000, true, false);
    assert_eq!(m.counters.events, 0, "the view stays frozen");
    let (m, ui) = paused_run(6000, true, true);
    assert!(!ui.paused);
    assert_eq!(
        m.counters.events + m.counters.dropped,
        6000,
        "every message is either shown or counted as dropped"
    );
}

#[test]
fn live_status_line_shows_rates_and_drops() {
    use crate::engine::State;
    use crate::pipeline::Progress;
    let mut m = Model::new("eth0", Caps::default());
    for (frames, ts) in [(0u64, 1_000_000_000u64), (500, 1_500_000_000)] {
        let mut st = State::default();
        st.totals.last_ts_ns = Some(ts);
        m.apply(Msg::Snapshot {
            state: Box::new(st),
            progress: Progress {
                frames,
                ..Progress::default()
            },
        });
    }
    m.counters.dropped = 7;
    let mut ui = UiState {
        paused: true,
        ..UiState::default()
    };
    let t = render(&mut m, &mut ui, 120, 24);
    let buf = t.backend().buffer();
    let last: String = (0..120)
        .map(|x| buf[(x, 23)].symbol().to_string())
        .collect();
    assert!(last.contains("live 1000 frames/s"), "{last}");
    assert!(
        last.contains("dropped 7") && last.contains("PAUSED"),
        "{last}"
    );
}

#[test]
fn model_caps_keep_newest_details_and_anomalous_ones() {
    let real = model_of("v3-inline.pcap");
    let base = real.detail(0).expect("kept").clone();
    let caps = Caps {
        rows: 8,
        details: 2,
        anomalous_details: 5,
        ..Caps::default()
    };
    let mut m = Model::new("t", caps);
    for i in 0..10u32 {
        let mut t = base.clone();
        t.xid = i;
        if i == 1 {
            t.anomalies.push(Kind::CreditOverrun);
        }
        m.push_txn(Box::new(t));
    }
    assert_eq!(m.rows.len(), 8, "rows are capped");
    assert_eq!(
        m.counters.rows_not_kept, 2,
        "and what the cap refused is counted"
    );
    assert!(m.detail(0).is_none(), "old details go");
    assert_eq!(
        m.detail(1).map(|t| t.xid),
        Some(1),
        "unless they have anomalies"
    );
    assert_eq!(m.detail(7).map(|t| t.xid), Some(7), "the newest stay");
}

#[test]
fn kernel_rows_say_whose_view_they_are() {
    // `live --probes`: the kernels' transactions arrive beside the wire's.
    let config = Config::default();
    let mut source = capture_source(&capture("v3-ddp.pcap"), &config.stack);
    let mut sink = crate::pipeline::Collect::default();
    crate::pipeline::run(
        source.as_mut(),
        Some(crate::engine::Engine::new(config)),
        &mut sink,
        &mut |_| {},
        &Stop::new(),
    );
    let wire = sink
        .findings
        .into_iter()
        .find_map(|f| match f {
            Finding::Transaction(t) => Some(t),
            Finding::Anomaly(_) => None,
        })
        .expect("a transaction");
    use crate::engine::Origin;
    // The engine joined the three views of the first XID into one row...
    let mut joined = wire.clone();
    for o in [Origin::ClientProbes, Origin::ServerProbes] {
        let mut v = (*wire).clone();
        v.origin = o;
        v.latency_us = Some(12.5);
        // What each side's RPC layer timed (rpc_stats_latency, svc_stats_latency).
        v.kernel_times = match o {
            Origin::ClientProbes => crate::engine::KernelTimes {
                backlog_us: Some(250),
                rtt_us: Some(14),
                execute_us: Some(270),
                server_execute_us: None,
            },
            _ => crate::engine::KernelTimes {
                server_execute_us: Some(6),
                ..Default::default()
            },
        };
        joined.views.push(v);
    }
    // ...and the client's kernel alone saw another.
    let mut alone = wire.clone();
    alone.origin = Origin::ClientProbes;
    alone.xid ^= 0xffff;
    let mut m = Model::new("live", Caps::default());
    m.apply(Msg::Findings(vec![
        Finding::Transaction(joined.clone()),
        Finding::Transaction(alone.clone()),
    ]));
    let mut ui = UiState::default();
    ui.apply(Action::Go(Screen::Transactions));
    let text = screen_text(&render(&mut m, &mut ui, 160, 24));
    assert_eq!(
        text.matches(&format!("{:#010x}", wire.xid)).count(),
        1,
        "{text}"
    );
    assert!(text.contains("[wire+client+server] NFS NULL"), "{text}");
    assert!(text.contains("[client kernel] NFS NULL"), "{text}");
    // The detail of the joined row shows each kernel's numbers.
    ui.apply(Action::ShowTxn(0));
    let text = screen_text(&render(&mut m, &mut ui, 160, 48));
    assert!(
        text.contains("client kernel  NFS NULL, latency 12.5 µs"),
        "{text}"
    );
    assert!(
        text.contains("server kernel  NFS NULL, latency 12.5 µs"),
        "{text}"
    );
    // The kernels' own timing, the client's queue time (backlog) first.
    assert!(
        text.contains("kernel backlog 250 µs rtt 14 µs execute 270 µs"),
        "{text}"
    );
    assert!(text.contains("kernel server execute 6 µs"), "{text}");
}

#[test]
fn kernel_rows_name_their_procedure() {
    // The client's kernel alone (an RNIC that hides the traffic): the
    // procedure comes from `sunrpc:rpc_request`, through the engine.
    use crate::engine::kernel::event::{ChunkType, Probe, ProbeEvent, ProbeMeta, TaskKey};
    use crate::engine::{Engine, Event};
    let task = TaskKey {
        task_id: 7,
        client_id: 1,
    };
    let events = [
        ProbeEvent::RpcRequest {
            task,
            version: Some(3),
            program: Some("nfs".into()),
            procedure: Some("READDIRPLUS".into()),
        },
        ProbeEvent::Marshal {
            task,
            xid: 0x1234_5678,
            rtype: ChunkType::Inline,
            wtype: ChunkType::ReplyChunk,
            hdrlen: Some(28),
            xdrlen: Some(120),
        },
        ProbeEvent::Reply {
            task,
            xid: 0x1234_5678,
            credits: 32,
        },
    ];
    let mut engine = Engine::new(Config::default());
    let mut out = Vec::new();
    for (i, event) in events.into_iter().enumerate() {
        let p = Probe {
            meta: ProbeMeta {
                seq: i as u64 + 1,
                ts_ns: 1_000 * i as u64,
                cpu: 0,
                tid: 9,
            },
            event,
        };
        engine.handle(Event::Probe(&p), &mut out);
    }
    engine.finish(&mut |f| out.push(f));
    let mut m = Model::new("live", Caps::default());
    m.apply(Msg::Findings(out));
    let mut ui = UiState::default();
    ui.apply(Action::Go(Screen::Transactions));
    let text = screen_text(&render(&mut m, &mut ui, 160, 24));
    assert!(text.contains("[client kernel] NFS READDIRPLUS"), "{text}");
}

fn screen_text(t: &Terminal<TestBackend>) -> String {
    let b = t.backend().buffer();
    let w = usize::from(b.area.width).max(1);
    let cells: Vec<&str> = b.content().iter().map(|c| c.symbol()).collect();
    cells
        .chunks(w)
        .map(|row| row.concat())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_overview_leads_with_the_diagnosis() {
    let mut m = model_of("reconnect.pcap");
    let mut ui = UiState::default();
    ui.apply(Action::Go(Screen::Overview));
    let t = render(&mut m, &mut ui, 160, 48);
    let text = t.backend().to_string();
    let first = text.find("1. reconnect_stall (fabric, 92.5%)");
    let second = text.find("2. network_loss (fabric");
    assert!(first.is_some() && first < second, "{text}");
    assert!(
        first < text.find("frames ("),
        "the causes come before the totals"
    );
}

#[test]
fn the_diagnosis_screen_drills_from_a_cause_to_its_ladder_and_back() {
    let mut m = model_of("reconnect.pcap");
    let mut ui = UiState::opening();
    let t = render(&mut m, &mut ui, 160, 48);
    let text = screen_text(&t);
    let first = text
        .find("1  reconnect_stall")
        .expect("the stall ranked first");
    assert!(
        first < text.find("2  network_loss").expect("loss second"),
        "{text}"
    );
    assert!(
        text.contains("21.908 s") && text.contains("92.5%"),
        "{text}"
    );
    assert!(
        text.contains("outage 21.907 s: 1 call(s) unanswered on c1"),
        "{text}"
    );
    insta::assert_snapshot!("reconnect_diagnosis_160x48", t.backend());
    insta::assert_snapshot!(
        "reconnect_diagnosis_80x24",
        render(&mut m, &mut ui, 80, 24).backend()
    );
    // Enter: the cause's XIDs, in the transaction list.
    let a = app::resolve(Action::Activate, &m, &ui).expect("Enter on a cause");
    assert!(
        matches!(&a, Action::FilterTo { filter, seek_ns: Some(_) } if filter == "0xcb7cd736"),
        "{a:?}"
    );
    ui.apply(a);
    let text = screen_text(&render(&mut m, &mut ui, 160, 48));
    assert!(
        text.contains("Transactions 1/36")
            && text.contains("Esc: back to Diagnosis  filter 0xcb7cd736"),
        "{text}"
    );
    // Enter: its ladder; Esc, Esc: back up to the cause.
    let a = app::resolve(Action::Activate, &m, &ui).expect("Enter on the transaction");
    ui.apply(a);
    let text = screen_text(&render(&mut m, &mut ui, 160, 48));
    assert!(text.contains("c2 xid 0xcb7cd736 NFS GETATTR"), "{text}");
    ui.apply(Action::Back);
    ui.apply(Action::Back);
    assert_eq!((ui.screen, ui.filter.as_str()), (Screen::Diagnosis, ""));
    // The first screen stays the diagnosis once the file is read.
    assert_eq!(super::diagnosis::first_screen(&m), Screen::Diagnosis);
}

#[test]
fn a_clean_capture_opens_on_the_overview_saying_no_cause() {
    let mut m = model_of("v3-inline.pcap");
    let mut ui = UiState::opening();
    m.refresh(&mut ui);
    assert_eq!(super::diagnosis::first_screen(&m), Screen::Overview);
    ui.apply(Action::FirstScreen(Screen::Overview));
    let text = screen_text(&render(&mut m, &mut ui, 160, 48));
    assert!(
        text.contains("no cause found — looked at 41 RPCs on 1 connection"),
        "{text}"
    );
    // Once the user has moved, the first screen is theirs.
    let mut ui = UiState::opening();
    ui.apply(Action::Down(1));
    ui.apply(Action::FirstScreen(Screen::Overview));
    assert_eq!(ui.screen, Screen::Diagnosis);
}

#[test]
fn a_cause_without_xids_lists_its_connections_from_its_first_time() {
    let mut m = model_of("v3-ddp.pcap");
    let mut ui = UiState::default();
    m.refresh(&mut ui);
    // The filter machinery takes alternatives: two connections, or XIDs.
    let xids = format!("{:#010x}|{:#010x}", m.rows[3].xid, m.rows[9].xid);
    ui.apply(Action::FilterTo {
        filter: xids,
        seek_ns: Some(m.rows[9].call_ts_ns),
    });
    m.refresh(&mut ui);
    assert_eq!(m.view.len(), 2);
    assert_eq!(
        ui.selected[Screen::Transactions.index()],
        1,
        "the first call at or after the cause's start is selected"
    );
}

/// The model of a synthetic capture with `connections` connections.
fn synth_model(connections: u32, calls: u64) -> Model {
    synth_model_from(
        connections,
        calls,
        crate::synth::Options::default().qpn_base,
    )
}

/// [`synth_model`] with the first connection's QPNs at `qpn_base`.
fn synth_model_from(connections: u32, calls: u64, qpn_base: u32) -> Model {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("many.pcap");
    let opts = crate::synth::Options {
        calls,
        connections,
        qpn_base,
        ..crate::synth::Options::default()
    };
    crate::synth::write_files(&opts, &path).expect("synth");
    let mut m = Model::new("many.pcap", Caps::default());
    let config = Config::default();
    m.load(capture_source(&path, &config.stack), config)
        .expect("pipeline thread");
    m
}

/// Issue 24: with 120 connections `c112` showed as `c11`, a peak of 16 in
/// flight as `pk1`. Every cell is whole or visibly cut, at any width.
#[test]
fn table_cells_are_whole_or_cut_with_an_ellipsis() {
    let mut m = synth_model(120, 2400);
    assert!(m.done && m.error.is_none());
    let mut ui = UiState::default();
    ui.apply(Action::Go(Screen::Overview));
    render(&mut m, &mut ui, 160, 48);
    ui.apply(Action::End);
    let t = render(&mut m, &mut ui, 160, 48);
    let text = screen_text(&t);
    assert!(text.contains("c120 "), "the last connection whole:\n{text}");
    assert!(text.contains("pk16"), "the peak whole:\n{text}");
    for w in [80, 100, 160] {
        ui.apply(Action::Go(Screen::Transactions));
        render(&mut m, &mut ui, w, 24);
        ui.apply(Action::End);
        let text = screen_text(&render(&mut m, &mut ui, w, 24));
        // The selected row's connection is whole: c1..c120, never cut to c12.
        let row = text
            .lines()
            .find(|l| l.contains('▶'))
            .unwrap_or_else(|| panic!("a selected row at {w}:\n{text}"));
        let conn = row
            .split_whitespace()
            .find(|c| c.starts_with('c') && c[1..].chars().all(|d| d.is_ascii_digit()))
            .unwrap_or_else(|| panic!("a connection cell at {w}: {row}"));
        let n: u32 = conn[1..].parse().expect("a number");
        assert!((1..=120).contains(&n), "{row}");
        assert!(n >= 10, "the last calls are on late connections: {row}");
    }
}

/// Issue 24: every screen at 80×24 and 200×50 with three-digit connection
/// ids and 24-bit QPNs (0xabc000 up), on a transaction of c1xx that moved
/// data: a cut number shows in the snapshot as a change.
#[test]
fn snapshots_with_three_digit_connections_and_24_bit_qpns() {
    let mut m = synth_model_from(120, 600, 0xabc000);
    assert!(m.done && m.error.is_none());
    let row = m
        .rows
        .iter()
        .position(|r| r.conn >= 100 && r.bytes > 0)
        .expect("a transaction on c100 or later that moved data");
    for (w, h) in [(80u16, 24u16), (200, 50)] {
        for s in Screen::ALL {
            let mut ui = UiState::default();
            ui.apply(Action::ShowTxn(row));
            ui.apply(Action::Go(s));
            let t = render(&mut m, &mut ui, w, h);
            let text = screen_text(&t);
            // Every 24-bit QPN on screen is whole or visibly cut.
            for q in text.split(|c: char| !c.is_ascii_alphanumeric() && c != '…') {
                if let Some(hex) = q.strip_prefix("0xabc") {
                    assert!(
                        hex.len() == 3 || q.ends_with('…'),
                        "{s:?} at {w}×{h}: QPN {q} cut:\n{text}"
                    );
                }
            }
            let name = format!("many_{}_{w}x{h}", s.title().to_lowercase());
            insta::assert_snapshot!(name, t.backend());
        }
    }
}

#[test]
fn cut_and_content_widths() {
    use super::widgets::{content_widths, cut};
    assert_eq!(cut("c112", 4), "c112");
    assert_eq!(cut("c112", 3), "c1…");
    assert_eq!(cut("abc", 0), "");
    let rows = vec![vec!["c112".to_string(), "10.99.0.2".to_string()]];
    assert_eq!(
        content_widths(&["conn", "client"], &rows, &[6, 40], 80),
        [4, 9]
    );
    // No room: the widest column gives way first, never below its header.
    assert_eq!(
        content_widths(&["conn", "client"], &rows, &[6, 40], 12),
        [4, 7]
    );
    // A table narrower than its headers: no column wider than the table.
    assert_eq!(
        content_widths(&["conn", "client"], &rows, &[6, 40], 2),
        [2, 2]
    );
    // A cell far wider than the screen is held to the screen, no overflow.
    let huge = vec![vec!["x".repeat(70_000), "y".repeat(70_000)]];
    let w = content_widths(&["a", "b"], &huge, &[u16::MAX, u16::MAX], 80);
    assert!(w.iter().map(|&x| u32::from(x)).sum::<u32>() < 80, "{w:?}");
}

/// The detail's lower pane scrolls to its last line (chunks, phases,
/// findings) at 80×24, and says there is more.
#[test]
fn the_detail_pane_scrolls_to_its_last_line() {
    let mut m = model_of("v3-ddp.pcap");
    let mut ui = UiState::default();
    let row = (0..m.rows.len())
        .find(|&r| m.detail(r).is_some_and(|t| !t.chunks.is_empty()))
        .expect("a transaction with chunks");
    ui.apply(Action::ShowTxn(row));
    let text = screen_text(&render(&mut m, &mut ui, 80, 24));
    assert!(text.contains("(J/K scroll)"), "{text}");
    assert!(
        !text.contains("phases"),
        "phases below the fold at first:\n{text}"
    );
    assert_eq!(map(ch('J'), &ui), Some(Action::ScrollInfo(1)));
    for _ in 0..50 {
        ui.apply(Action::ScrollInfo(1));
    }
    let text = screen_text(&render(&mut m, &mut ui, 80, 24));
    assert!(text.contains("phases"), "{text}");
    ui.apply(Action::ScrollInfo(-100));
    let text = screen_text(&render(&mut m, &mut ui, 80, 24));
    assert!(text.contains("lines 1-"), "{text}");
}

#[test]
fn one_key_lists_the_slowest_first() {
    let mut m = model_of("v3-ddp.pcap");
    let mut ui = UiState::default();
    ui.apply(map(ch('L'), &ui).expect("L is bound"));
    assert_eq!(ui.screen, Screen::Transactions);
    let text = screen_text(&render(&mut m, &mut ui, 160, 48));
    // v3-ddp's slowest is the WRITE of 130.03 ms (report, "Slowest operations").
    let first = text.lines().find(|l| l.contains('▶')).expect("a row");
    assert!(first.contains("130.03 ms"), "{first}");
}

fn reopen_of(name: &str) -> crate::pipeline::Reopen {
    let path = capture(name);
    Box::new(move || Ok(capture_source(&path, &Config::default().stack)))
}

/// `f` on a ladder step shows that frame dissected, read again from the
/// file; a live source says how to keep frames instead.
#[test]
fn the_frame_view_shows_the_selected_step() {
    let m = model_of("v3-ddp.pcap");
    let mut ui = UiState::default();
    let row = (0..m.rows.len())
        .find(|&r| m.detail(r).is_some_and(|t| !t.chunks.is_empty()))
        .expect("a transaction with RDMA steps");
    ui.apply(Action::ShowTxn(row));
    let mut m = m;
    render(&mut m, &mut ui, 160, 48);
    ui.apply(Action::Down(1));
    assert_eq!(map(ch('f'), &ui), Some(Action::ShowFrame));
    let n = super::frames::selected_step_frame(&m, &ui).expect("a step");
    let reopen = reopen_of("v3-ddp.pcap");
    let text = super::frames::show_frame(Some(&reopen), n, &Config::default().stack);
    assert!(text.starts_with(&format!("frame {n}: ")), "{text}");
    // The second step of a chunked transaction is an RDMA operation.
    assert!(text.contains("RDMA") && text.contains("RETH"), "{text}");
    ui.apply(Action::Home);
    let call = super::frames::selected_step_frame(&m, &ui).expect("the call");
    let text = super::frames::show_frame(Some(&reopen), call, &Config::default().stack);
    assert!(
        text.contains("RDMA_MSG xid"),
        "the RPC-over-RDMA header: {text}"
    );
    let live = super::frames::show_frame(None, n, &Config::default().stack);
    assert!(live.contains("live --write"), "{live}");
}

/// `w` writes the transaction's frames, byte for byte, as a pcapng; a
/// planted symlink is refused, not followed.
#[test]
fn the_transactions_frames_go_to_a_pcapng() {
    let m = model_of("v3-ddp.pcap");
    let mut ui = UiState::default();
    let row = (0..m.rows.len())
        .find(|&r| m.detail(r).is_some_and(|t| !t.chunks.is_empty()))
        .expect("a transaction with chunks");
    ui.apply(Action::ShowTxn(row));
    let (_, _, wanted) = super::frames::transaction_frames(&m, &ui).expect("frames");
    assert!(wanted.len() >= 3, "{wanted:?}");
    let dir = tempfile::tempdir().expect("temp dir");
    let target = dir.path().join("t.pcapng");
    let reopen = reopen_of("v3-ddp.pcap");
    let msg = super::frames::write_frames(Some(&reopen), &wanted, &target);
    assert!(
        msg.starts_with(&format!("wrote {} frames", wanted.len())),
        "{msg}"
    );
    // Read back: the same bytes as the frames of the original.
    let mut original = capture_source(&capture("v3-ddp.pcap"), &Config::default().stack);
    let expect = crate::pipeline::collect_frames(original.as_mut(), &wanted).expect("original");
    let input = rdma_capture::input::Input::open(&target).expect("written file");
    let mut reader = input.reader().expect("a capture");
    let mut batch = rdma_capture::Batch::default();
    let mut got = Vec::new();
    loop {
        let more = reader.fill(&mut batch).expect("reads");
        got.extend(batch.iter().map(|f| f.data.to_vec()));
        if !more {
            break;
        }
    }
    let want: Vec<Vec<u8>> = expect.into_iter().map(|f| f.data).collect();
    assert_eq!(got, want);
    let link = dir.path().join("link.pcapng");
    std::os::unix::fs::symlink("/etc/passwd", &link).expect("symlink");
    let msg = super::frames::write_frames(Some(&reopen), &wanted, &link);
    assert!(msg.starts_with("could not write"), "{msg}");
}

/// The 480 `remote_invalidation_not_negotiated` of parallel.pcap are one
/// row with its count; acknowledged, it hides until `a` shows it.
#[test]
fn acknowledged_findings_hide_until_a_shows_them() {
    let mut m = model_of("parallel.pcap");
    m.acks = crate::output::ack::Acks::new(&["remote_invalidation_not_negotiated".into()], None)
        .expect("a known kind");
    let mut ui = UiState::default();
    ui.apply(Action::Go(Screen::Anomalies));
    let hidden = screen_text(&render(&mut m, &mut ui, 160, 24));
    assert!(
        hidden.contains("480 acknowledged hidden, a: show"),
        "{hidden}"
    );
    assert!(hidden.contains("Every finding is acknowledged"), "{hidden}");
    let toggle = map(ch('a'), &ui).expect("a key");
    assert_eq!(toggle, Action::ToggleAcked);
    ui.apply(toggle);
    let shown = screen_text(&render(&mut m, &mut ui, 160, 24));
    assert!(shown.contains("acknowledged shown, a: hide"), "{shown}");
    assert!(
        shown.contains("▸ remote_invalidation_not_negotiated 480"),
        "{shown}"
    );
    assert!(
        shown.contains("×480 798–7683"),
        "one row for the fact: {shown}"
    );
    assert!(
        super::keys::HELP.iter().any(|(k, _)| *k == "a"),
        "in the help"
    );
}

#[test]
fn live_diagnosis_says_its_window_and_lets_a_gone_cause_go() {
    const MINUTE: u64 = 60_000_000_000;
    let caps = Caps {
        diagnosis_window: Some(5 * MINUTE),
        ..Caps::default()
    };
    let mut m = Model::new("live", caps);
    let config = Config::default();
    m.load(
        capture_source(&capture("reconnect.pcap"), &config.stack),
        config,
    )
    .expect("pipeline thread");
    let mut ui = UiState::default();
    ui.apply(Action::Go(Screen::Diagnosis));
    let text = screen_text(&render(&mut m, &mut ui, 160, 48));
    let runs = m.run_causes;
    assert!(runs > 0);
    let title = format!(
        "over the last 5m of the capture clock (since the start: {runs} cause{})",
        if runs == 1 { "" } else { "s" }
    );
    assert!(text.contains(&title), "{text}");
    assert!(text.contains("reconnect_stall"), "{text}");
    // The live clock 7 minutes on, no traffic since: the window is empty,
    // and the screen says so beside the count since the start.
    let mut state = m.state.clone();
    let first = state.totals.first_ts_ns.expect("a frame");
    state.totals.last_ts_ns = Some(first + 7 * MINUTE);
    m.apply(Msg::Snapshot {
        state: Box::new(state),
        progress: Progress::default(),
    });
    let text = screen_text(&render(&mut m, &mut ui, 160, 48));
    assert!(text.contains("no cause in the window"), "{text}");
    assert!(text.contains(&title), "{text}");
    assert!(!text.contains("reconnect_stall"), "{text}");
}

#[test]
fn the_overview_says_what_it_did_not_decode_before_any_verdict() {
    let mut m = model_of("v3-inline.pcap");
    let mut ui = UiState::default();
    ui.apply(Action::Go(Screen::Overview));
    let _ = render(&mut m, &mut ui, 160, 48);
    m.state.totals.not_decoded = crate::engine::NotDecoded {
        tcp_20049: 7,
        ..Default::default()
    };
    let t = render(&mut m, &mut ui, 160, 48);
    let text = screen_text(&t);
    let said = text.find("NOT DECODED: 7 frames: TCP frames to or from port 20049");
    assert!(said.is_some() && said < text.find("frames ("), "{text}");
}

/// The lab's nconnect mountstats (4 transports, NFSv3) with `add` added to
/// every count of each `xprt: rdma` line and of the READ line.
fn lab_mountstats(add: u64) -> String {
    include_str!("../../../captures/nconnect.mountstats.txt")
        .lines()
        .map(|l| {
            let t = l.trim_start();
            let (head, rest, skip) = if let Some(r) = t.strip_prefix("xprt:") {
                ("\txprt:\t", r, 2)
            } else if let Some(r) = t.strip_prefix("READ:") {
                ("\t        READ: ", r, 0)
            } else {
                return l.to_string();
            };
            let w: Vec<String> = rest
                .split_whitespace()
                .enumerate()
                .map(|(i, v)| match v.parse::<u64>() {
                    Ok(n) if i >= skip => (n + add).to_string(),
                    _ => v.to_string(),
                })
                .collect();
            format!("{head}{}", w.join(" "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn reading(at_s: u64, add: u64, dup: u64) -> crate::counters::CounterReading {
    use crate::engine::device_counters::DeviceCounter;
    let dev = |name: &str, value| DeviceCounter {
        device: "rxe0".into(),
        port: 1,
        group: "hw_counters".into(),
        name: name.into(),
        value,
    };
    crate::counters::CounterReading {
        at_ns: 1_795_708_095_000_000_000 + at_s * 1_000_000_000,
        mountstats_path: "/proc/self/mountstats".into(),
        mountstats: Ok(lab_mountstats(add)),
        cut_at: None,
        devices: vec![dev("duplicate_request", dup), dev("rcvd_seq_err", 3 + add)],
    }
}

/// `live`'s counters screen: the sampler's readings, each transport's
/// fields in print order with their growth, the per-op counters, the
/// devices' counters, a reset said as one; at 80×24 and 160×48.
#[test]
fn the_counters_screen_shows_each_transport_op_and_device() {
    use super::counters::{Pane, Sampling};
    let mut m = Model::new("lo", Caps::default());
    m.kernel = Pane::new(Sampling::Every(5.0), None);
    m.take_counters(&reading(0, 0, 40));
    m.take_counters(&reading(5, 10, 2));
    let mut ui = UiState::default();
    ui.apply(Action::Go(Screen::Counters));
    let text = screen_text(&render(&mut m, &mut ui, 160, 48));
    for want in [
        "Counters: sample 1 at 2026-11-26T15:48:20.000000Z, every 5 s",
        "/mnt/lab (10.99.0.1:/srv/export): 4 RDMA transports",
        "transport 0 of 4 (27 fields printed)",
        "field                   total    last 5.0 s  since start",
        "sends                   69       +10         +10",
        "the diagnosis checks no_remote_invalidation and mr_exhaustion",
    ] {
        assert!(text.contains(want), "{want:?} not in\n{text}");
    }
    // Print order: port first, reply_waits_for_send last.
    assert!(text.find("port ").unwrap() < text.find("bind_count").unwrap());
    // The diagnosis has the kernel's view: the causes it sees are checked.
    assert!(m.diagnosis.not_checked().is_empty());
    insta::assert_snapshot!(
        "live_counters_160x48",
        render(&mut m, &mut ui, 160, 48).backend()
    );
    insta::assert_snapshot!(
        "live_counters_80x24",
        render(&mut m, &mut ui, 80, 24).backend()
    );

    // The end of the list: READ's growth and times, the devices, the reset.
    ui.apply(Action::End);
    let text = screen_text(&render(&mut m, &mut ui, 160, 48));
    let words = |name: &str| -> Vec<String> {
        let l = text.lines().find(|l| l.contains(name)).expect(name);
        l.split(['│', '▶', ' '])
            .filter(|w| !w.is_empty())
            .map(String::from)
            .collect()
    };
    // 10 more ops, rtt_ms and execute_ms 10 more: 1 ms each over the
    // interval; since the start the same.
    let read = words("READ ");
    assert_eq!(
        read[..6],
        ["READ", "90", "+10", "+10", "90", "+10"],
        "{read:?}"
    );
    assert_eq!(
        read[10..],
        ["1.00", "ms", "1.00", "ms", "1.00", "ms", "1.00", "ms"],
        "{read:?}"
    );
    let dup = text
        .lines()
        .find(|l| l.contains("duplicate_request"))
        .expect("device counter");
    assert!(
        dup.contains("reset") && dup.contains("unknown (1 reset)"),
        "{dup}"
    );
    let seq = words("rcvd_seq_err");
    assert_eq!(seq[1..], ["rcvd_seq_err", "13", "+10", "+10"], "{seq:?}");
}

/// A capture file has no kernel counters, and the screen says where they
/// come from; a live run with the sampler off says it is off.
#[test]
fn the_counters_screen_says_why_it_has_none() {
    use super::counters::{Pane, Sampling};
    let mut m = Model::new("f.pcap", Caps::default());
    let mut ui = UiState::default();
    ui.apply(Action::Go(Screen::Counters));
    let text = screen_text(&render(&mut m, &mut ui, 160, 48));
    assert!(
        text.contains("a capture file has no kernel to read"),
        "{text}"
    );
    m.kernel = Pane::new(Sampling::Off, None);
    let text = screen_text(&render(&mut m, &mut ui, 160, 48));
    assert!(
        text.contains("The counter sampler is off (--counters-interval 0)"),
        "{text}"
    );
    m.kernel = Pane::new(Sampling::Every(5.0), None);
    let text = screen_text(&render(&mut m, &mut ui, 160, 48));
    assert!(
        text.contains("Waiting for the first sample (every 5 s)"),
        "{text}"
    );
    // An unreadable mountstats: said, and the kernel causes not checked.
    let mut r = reading(0, 0, 0);
    r.mountstats = Err("No such file or directory (os error 2)".into());
    m.take_counters(&r);
    let text = screen_text(&render(&mut m, &mut ui, 160, 48));
    assert!(
        text.contains("/proc/self/mountstats: cannot be read"),
        "{text}"
    );
    assert!(
        text.contains("mr_exhaustion not checked: mountstats not read"),
        "{text}"
    );
    assert!(!m.diagnosis.not_checked().is_empty());
}
