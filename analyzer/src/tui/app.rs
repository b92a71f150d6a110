//! The event loop: source messages in, keys in, frames out.
//!
//! ```text
//!  source thread ──Msg──► drain (≤ 20 ms per turn) ──► Model ──► refresh views ──► draw (≤ 1 per 50 ms)
//!  Input (terminal, or a script in tests) ──key/mouse──► keys::map ──► resolve (Enter) ──► UiState::apply
//! ```
//!
//! Both ends are injected: any pipeline [`Source`] (a capture file; live
//! capture and kernel probes, which are `is_live()`) through a [`Session`],
//! and any [`Input`], so the same loop runs the file viewer, the live
//! monitor and the tests.
//!
//! While the source runs the loop wakes every 50 ms; once it is done and
//! nothing changes the loop sleeps in `event::poll` until input arrives (or
//! a long timeout), so an idle screen costs no CPU. Pausing freezes the
//! model: a file source is simply not read further (the channel fills and
//! the reader waits); a live source keeps capturing into a bounded queue
//! whose overflow is counted as dropped.

use std::collections::VecDeque;
use std::io;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossterm::event::{self, DisableMouseCapture, EnableMouseCapture, Event as TermEvent};
use crossterm::execute;
use ratatui::backend::Backend;
use ratatui::Terminal;

use super::counters::{Pane, Sampling};
use super::feed::{self, Msg, Tap};
use super::model::{Caps, Model};
use super::state::{Action, Screen, UiState};
use super::{anomalies, diagnosis, draw, frames, keys};
use crate::counters::CounterReading;
use crate::engine::Config;
use crate::output::ack::Acks;
use crate::pipeline::{Reopen, Sink, Source, Stop};
use rdma_dissectors::stack;

/// Shortest time between two frames.
const FRAME: Duration = Duration::from_millis(50);
/// Longest a turn spends draining source messages before looking at input.
const DRAIN_BUDGET: Duration = Duration::from_millis(20);
/// How long the loop sleeps when nothing can change but input.
const IDLE: Duration = Duration::from_secs(5);
/// Longest a wait for input lasts before the stop flag is looked at: a
/// SIGTERM's handler can only set the flag, and the terminal must be
/// restored soon after it, not at the end of an idle wait.
const STOP_CHECK: Duration = Duration::from_millis(200);
/// Messages a paused live view queues before dropping (bounded: a live
/// source goes on while the view is paused).
const PAUSE_QUEUE: usize = 256;

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

/// What feeds a screen: the channel from the pipeline thread, and that
/// thread.
pub struct Session {
    /// The receiving end.
    pub tap: Tap,
    /// The thread feeding it (joined on quit for a live source, so its
    /// probes are detached before the terminal is restored).
    pub worker: Option<JoinHandle<()>>,
    /// The source, in words (status line).
    pub describe: String,
    /// Whether the source is live (it drops rather than waits).
    pub live: bool,
    /// What the screen's model may keep.
    pub caps: Caps,
    /// How to read the input again for its frames (`f`, `w`); `None` for
    /// a live source.
    pub reopen: Option<Reopen>,
    /// How frames are dissected (the frame view).
    pub stack: stack::Config,
    /// Findings the findings screen hides until `a` shows them.
    pub acks: Acks,
    /// Where the counters screen's counters come from.
    pub sampling: Sampling,
    /// `live`'s counter sampler's readings, when it runs.
    pub counters: Option<Receiver<CounterReading>>,
}

impl Session {
    /// Starts the pipeline over `source` on its own thread; `stop` is what
    /// the quit key (and any signal handler holding it) sets.
    ///
    /// # Errors
    /// When the thread cannot be started.
    pub fn start(
        source: Box<dyn Source>,
        config: Config,
        caps: Caps,
        stop: Stop,
    ) -> io::Result<Session> {
        Self::start_beside(source, config, caps, stop, Vec::new())
    }

    /// [`Session::start`], with the sinks of `beside` looking at the run
    /// beside the screen ([`feed::spawn_beside`]).
    ///
    /// # Errors
    /// When the thread cannot be started.
    pub fn start_beside(
        source: Box<dyn Source>,
        config: Config,
        caps: Caps,
        stop: Stop,
        beside: Vec<Box<dyn Sink + Send>>,
    ) -> io::Result<Session> {
        let describe = source.describe();
        let live = source.is_live();
        let stack = config.stack;
        let (tap, worker) = feed::spawn_beside(source, config, stop, beside)?;
        Ok(Session {
            tap,
            worker: Some(worker),
            describe,
            live,
            caps,
            reopen: None,
            acks: Acks::default(),
            stack,
            sampling: if live { Sampling::Off } else { Sampling::File },
            counters: None,
        })
    }
}

/// Shows `source` on the terminal until the user quits (or `stop` is set):
/// sets the terminal up, runs, restores it. Returns the source's error, if
/// it ended with one, for the caller to report once the screen is gone.
/// The sinks of `beside` look at the run beside the screen (metrics);
/// `reopen` reads the input again for the frame keys (`f`, `w`).
///
/// # Errors
/// When the terminal cannot be set up, or terminal I/O fails.
pub fn show(
    source: Box<dyn Source>,
    config: Config,
    caps: Caps,
    stop: Stop,
    filter: Option<String>,
    beside: Vec<Box<dyn Sink + Send>>,
    reopen: Option<Reopen>,
) -> anyhow::Result<Option<String>> {
    let view = View {
        filter,
        reopen,
        counters: None,
    };
    let session = (source, config, caps, stop);
    show_acked(session, beside, view, Acks::default())
}

/// What the screen opens on: its filter, and how to read the input again.
pub struct View {
    /// The filter it opens with.
    pub filter: Option<String>,
    /// How to read the input again for its frames (`f`, `w`).
    pub reopen: Option<Reopen>,
    /// `live`'s counter sampler (its readings, every so many seconds), for
    /// the counters screen and the diagnosis.
    pub counters: Option<(Receiver<CounterReading>, f64)>,
}

/// [`show`], with `acks`' findings hidden on the findings screen until `a`
/// shows them.
///
/// # Errors
/// When the terminal cannot be set up, or terminal I/O fails.
pub fn show_acked(
    (source, config, caps, stop): (Box<dyn Source>, Config, Caps, Stop),
    beside: Vec<Box<dyn Sink + Send>>,
    View {
        filter,
        reopen,
        counters,
    }: View,
    acks: Acks,
) -> anyhow::Result<Option<String>> {
    let mut session = Session::start_beside(source, config, caps, stop, beside)?;
    session.reopen = reopen;
    session.acks = acks;
    if let Some((rx, every)) = counters {
        session.sampling = Sampling::Every(every);
        session.counters = Some(rx);
    }
    // try_init, not init: a terminal that cannot be set up is an error
    // message, not a panic. A half set up terminal is put back either way.
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
    let mut ui = UiState::opening();
    if let Some(f) = filter {
        ui.filter = f;
    }
    let r = run(&mut terminal, session, ui, &mut TermInput);
    let _ = execute!(io::stdout(), DisableMouseCapture);
    ratatui::restore();
    let (model, _) = r?;
    Ok(model.error)
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
        Screen::Diagnosis => diagnosis::activate(m, ui),
        Screen::Overview | Screen::Credits => m
            .state
            .connections
            .keys()
            .nth(ui.selected[ui.screen.index()])
            .map(|c| Action::FilterTo {
                filter: c.to_string(),
                seek_ns: None,
            }),
        Screen::Detail | Screen::Counters => None,
    }
}

/// The frame requests, done (they read the input again): each becomes the
/// message that says what came of it.
fn read_frames(
    a: Action,
    m: &Model,
    ui: &UiState,
    reopen: Option<&Reopen>,
    stack: &stack::Config,
) -> Action {
    match a {
        Action::ShowFrame => Action::Message(match frames::selected_step_frame(m, ui) {
            Some(n) => frames::show_frame(reopen, n, stack),
            None => "no ladder step selected: open a transaction (Enter) and choose a step".into(),
        }),
        Action::WriteFrames => Action::Message(match frames::transaction_frames(m, ui) {
            Some((xid, conn, wanted)) => {
                frames::write_frames(reopen, &wanted, &frames::target_for(xid, conn))
            }
            None => "no transaction chosen".into(),
        }),
        a => a,
    }
}

/// Input events taken between two looks at the source and the stop handle.
const EVENTS_PER_PASS: usize = 256;

/// Runs the UI over `session` on `terminal` until the user quits; returns
/// what was shown last (tests look at it).
///
/// # Errors
/// Terminal I/O failures.
pub fn run<B: Backend>(
    terminal: &mut Terminal<B>,
    session: Session,
    mut ui: UiState,
    input: &mut impl Input,
) -> io::Result<(Model, UiState)> {
    let term_err = |e: B::Error| io::Error::other(e.to_string());
    let Session {
        tap,
        worker,
        describe,
        live,
        caps,
        reopen,
        stack,
        acks,
        sampling,
        counters,
    } = session;
    let mut model = Model::new(describe, caps);
    model.acks = acks;
    model.kernel = Pane::new(sampling, caps.diagnosis_window);
    let size = terminal.size().map_err(term_err)?;
    ui.apply(Action::Resize(size.height));
    let mut queued: VecDeque<Msg> = VecDeque::new();
    let mut pause_dropped = 0u64;
    let mut held_reading = None;
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
        // The kernel's counters: one reading per interval, parsed here
        // (never on the pipeline thread). A paused view keeps only the
        // latest (the counts are cumulative: the next delta spans the
        // pause), so a long pause holds one reading, not one per interval.
        if let Some(rx) = counters.as_ref() {
            for r in rx.try_iter() {
                held_reading = Some(r);
            }
            if let Some(r) = held_reading.take_if(|_| !ui.paused) {
                model.take_counters(&r);
                dirty = true;
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
            if ui.settle && model.done {
                ui.apply(Action::FirstScreen(diagnosis::first_screen(&model)));
                model.refresh(&mut ui);
            }
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
        // Bounded, and the stop handle checked between events: a terminal
        // that went away (a closed SSH session, a killed tmux) can report
        // events without end, and the loop must still see SIGHUP/SIGTERM.
        let mut wait = timeout.min(STOP_CHECK);
        let mut taken = 0;
        while let Some(ev) = input.next(wait)? {
            wait = Duration::ZERO;
            taken += 1;
            let action = match ev {
                TermEvent::Key(k) => keys::map(k, &ui),
                TermEvent::Mouse(me) => keys::map_mouse(me, &ui),
                TermEvent::Resize(_, h) => Some(Action::Resize(h)),
                _ => None,
            };
            if let Some(a) = action.and_then(|a| resolve(a, &model, &ui)) {
                let a = read_frames(a, &model, &ui, reopen.as_ref(), &stack);
                ui.apply(a);
                dirty = true;
            }
            if ui.quit || taken >= EVENTS_PER_PASS || tap.stop_requested() {
                break;
            }
        }
        // SIGTERM/SIGINT reach the view here, through the stop handle
        // their handler sets (a terminal in raw mode sends Ctrl-C as a key
        // instead).
        if tap.stop_requested() {
            ui.quit = true;
        }
        if ui.quit {
            tap.stop();
            if live {
                // A live source notices within one poll (< 0.2 s) and
                // detaches its probes before returning.
                if let Some(w) = worker {
                    let _ = w.join();
                }
            }
            // The source's last word, if the screen quit before reading it.
            while let Ok(msg) = tap.rx.try_recv() {
                if matches!(msg, Msg::Done { .. } | Msg::Notice(_)) {
                    model.apply(msg);
                }
            }
            model.counters.dropped = tap.dropped() + pause_dropped;
            return Ok((model, ui));
        }
    }
}
