//! The event loop: source messages in, keys in, frames out.
//!
//! ```text
//!  source thread ──Msg──► drain (≤ 20 ms per turn) ──► Model ──► refresh views ──► draw (≤ 1 per 50 ms)
//!  Input (terminal, or a script in tests) ──key/mouse──► keys::map ──► resolve (Enter) ──► UiState::apply
//! ```
//!
//! Both ends are injected: any [`Source`] (a file today; live capture and
//! kernel probes later, with `live() == true`) and any [`Input`], so the
//! same loop runs the file viewer, the live monitor and the tests.
//!
//! While the source runs the loop wakes every 50 ms; once it is done and
//! nothing changes the loop sleeps in `event::poll` until input arrives (or
//! a long timeout), so an idle screen costs no CPU. Pausing freezes the
//! model: a file source is simply not read further (the channel fills and
//! the reader waits); a live source keeps capturing into a bounded queue
//! whose overflow is counted as dropped.

use std::collections::VecDeque;
use std::io::{self, IsTerminal};
use std::path::Path;
use std::process::ExitCode;
use std::sync::mpsc::TryRecvError;
use std::time::{Duration, Instant};

use crossterm::event::{self, DisableMouseCapture, EnableMouseCapture, Event as TermEvent};
use crossterm::execute;
use ratatui::backend::Backend;
use ratatui::Terminal;

use super::model::{Caps, Model};
use super::source::{self, FileSource, Msg, Source};
use super::state::{Action, Screen, UiState};
use super::{anomalies, draw, keys};
use crate::engine::Config;

/// Shortest time between two frames.
const FRAME: Duration = Duration::from_millis(50);
/// Longest a turn spends draining source messages before looking at input.
const DRAIN_BUDGET: Duration = Duration::from_millis(20);
/// How long the loop sleeps when nothing can change but input.
const IDLE: Duration = Duration::from_secs(5);
/// Messages a paused live view queues before dropping.
const PAUSE_QUEUE: usize = 4096;

/// Where keys come from: the terminal, or a script in tests.
pub trait Input {
    /// The next event, waiting at most `timeout`; `None` when none came.
    ///
    /// # Errors
    /// Terminal I/O failures.
    fn next(&mut self, timeout: Duration) -> io::Result<Option<TermEvent>>;
}

/// The terminal's keyboard, mouse and resize events (crossterm).
pub struct TermInput;

impl Input for TermInput {
    fn next(&mut self, timeout: Duration) -> io::Result<Option<TermEvent>> {
        if event::poll(timeout)? {
            event::read().map(Some)
        } else {
            Ok(None)
        }
    }
}

/// `rdma-analyzer open FILE`: checks for a terminal, sets it up, runs, restores it.
///
/// # Errors
/// Terminal I/O failures.
pub fn open(path: &Path, config: Config, filter: Option<String>) -> anyhow::Result<ExitCode> {
    if !io::stdout().is_terminal() {
        eprintln!(
            "rdma-analyzer open: standard output is not a terminal; for text or JSON output use `rdma-analyzer report {}` (or transactions, anomalies)",
            path.display()
        );
        return Ok(ExitCode::from(2));
    }
    if let Err(e) = std::fs::metadata(path) {
        anyhow::bail!("{}: {e}", path.display());
    }
    let source = Box::new(FileSource {
        path: path.to_path_buf(),
        config,
    });
    // try_init, not init: a terminal that cannot be set up is an error
    // message, not a panic. A half set up terminal is put back either way.
    in_terminal(source, filter)
}

/// `rdma-analyzer live` on a terminal: the same screens over a live source
/// (probes, capture or both). The source is stopped and joined before the
/// terminal is restored, so the probes are detached when this returns.
///
/// # Errors
/// When the terminal cannot be set up.
pub fn live(source: Box<dyn Source>) -> anyhow::Result<ExitCode> {
    in_terminal(source, None)
}

fn in_terminal(source: Box<dyn Source>, filter: Option<String>) -> anyhow::Result<ExitCode> {
    let mut terminal = match ratatui::try_init() {
        Ok(t) => t,
        Err(e) => {
            ratatui::restore();
            anyhow::bail!("cannot set up the terminal: {e}");
        }
    };
    // ratatui's panic hook restores the terminal but knows nothing of mouse
    // capture; switch that off first, then let its hook run.
    let _ = execute!(io::stdout(), EnableMouseCapture);
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = execute!(io::stdout(), DisableMouseCapture);
        previous(info);
    }));
    let mut ui = UiState::default();
    if let Some(f) = filter {
        ui.filter = f;
    }
    let r = run(&mut terminal, source, ui, &mut TermInput);
    let _ = execute!(io::stdout(), DisableMouseCapture);
    ratatui::restore();
    r?;
    Ok(ExitCode::SUCCESS)
}

/// Turns Enter into what it means on the screen shown.
pub fn resolve(a: Action, m: &Model, ui: &UiState) -> Option<Action> {
    if a != Action::Activate {
        return Some(a);
    }
    match ui.screen {
        Screen::Transactions => m
            .view
            .get(ui.selected[Screen::Transactions.index()])
            .map(|r| Action::ShowTxn(*r as usize)),
        Screen::Chunks => m
            .seg_view
            .get(ui.selected[Screen::Chunks.index()])
            .and_then(|s| m.segs.get(*s as usize))
            .map(|s| Action::ShowTxn(s.row as usize)),
        Screen::Anomalies => anomalies::activate(m, ui),
        Screen::Overview | Screen::Credits => m
            .state
            .connections
            .keys()
            .nth(ui.selected[ui.screen.index()])
            .map(|c| Action::FilterTo(c.to_string())),
        Screen::Detail => None,
    }
}

/// Runs the UI over `source` on `terminal` until the user quits; returns
/// what was shown last (tests look at it).
///
/// # Errors
/// Terminal I/O failures.
pub fn run<B: Backend>(
    terminal: &mut Terminal<B>,
    source: Box<dyn Source>,
    mut ui: UiState,
    input: &mut impl Input,
) -> io::Result<(Model, UiState)> {
    let term_err = |e: B::Error| io::Error::other(e.to_string());
    let live = source.live();
    let mut model = Model::new(source.describe(), Caps::default());
    let (tap, worker) = source::spawn(source)?;
    let size = terminal.size().map_err(term_err)?;
    ui.apply(Action::Resize(size.height));
    let mut queued: VecDeque<Msg> = VecDeque::new();
    let mut pause_dropped = 0u64;
    let mut disconnected = false;
    let mut dirty = true;
    let mut last_draw: Option<Instant> = None;
    loop {
        // Source messages: a frozen file view stops reading (back-pressure);
        // a frozen live view queues, bounded.
        if !ui.paused || live {
            let start = Instant::now();
            loop {
                match tap.rx.try_recv() {
                    Ok(msg) if ui.paused => {
                        if queued.len() < PAUSE_QUEUE {
                            queued.push_back(msg);
                        } else {
                            pause_dropped += 1;
                        }
                    }
                    Ok(msg) => {
                        model.apply(msg);
                        dirty = true;
                    }
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        disconnected = true;
                        break;
                    }
                }
                if start.elapsed() >= DRAIN_BUDGET {
                    break;
                }
            }
        }
        if !ui.paused && !queued.is_empty() {
            for msg in queued.drain(..) {
                model.apply(msg);
            }
            dirty = true;
        }
        let dropped = tap.dropped() + pause_dropped;
        if dropped != model.counters.dropped {
            model.counters.dropped = dropped;
            dirty = true;
        }
        let since = last_draw.map_or(FRAME, |t| t.elapsed());
        if dirty && since >= FRAME {
            model.refresh(&mut ui);
            terminal.draw(|f| draw(f, &model, &ui)).map_err(term_err)?;
            last_draw = Some(Instant::now());
            dirty = false;
        }
        let timeout = if dirty {
            FRAME.saturating_sub(last_draw.map_or(FRAME, |t| t.elapsed()))
        } else if disconnected || (ui.paused && !live) {
            IDLE
        } else {
            FRAME
        };
        // Take every pending input event before drawing again.
        let mut wait = timeout;
        while let Some(ev) = input.next(wait)? {
            wait = Duration::ZERO;
            let action = match ev {
                TermEvent::Key(k) => keys::map(k, &ui),
                TermEvent::Mouse(me) => keys::map_mouse(me, &ui),
                TermEvent::Resize(_, h) => Some(Action::Resize(h)),
                _ => None,
            };
            if let Some(a) = action.and_then(|a| resolve(a, &model, &ui)) {
                ui.apply(a);
                dirty = true;
            }
            if ui.quit {
                break;
            }
        }
        // SIGTERM/SIGINT/SIGHUP reach a live view here (a terminal in raw
        // mode sends Ctrl-C as a key instead).
        if live && crate::sources::live::stop_requested() {
            ui.quit = true;
        }
        if ui.quit {
            tap.stop();
            if live {
                // A live source notices within one poll (< 0.2 s) and
                // detaches its probes before returning.
                let _ = worker.join();
            }
            model.counters.dropped = tap.dropped() + pause_dropped;
            return Ok((model, ui));
        }
    }
}
