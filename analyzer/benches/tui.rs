//! TUI benchmarks.
//!
//! - `transactions_frame_1m`: one frame of the Transactions screen at
//!   160×48 with a million transactions loaded (target < 10 ms);
//! - `transactions_resort_1m`: re-sorting the million-row view (a key press
//!   on `s`, paid once per press, not per frame);
//! - `first_screen`: with `RDMA_TUI_BIG_CAPTURE=FILE`, time from starting the
//!   source to the first drawn screen with data (once, printed);
//! - `diagnosis_refresh_parallel`: one refresh of the diagnosis screen's
//!   data (the causes and each client's timeline) over `parallel.pcap`'s
//!   final state: what the view pays, at most once per frame, when
//!   something came in (in `live`, every state snapshot);
//! - `idle_cpu`: with tmux installed and `RDMA_TUI_IDLE_SECS` set, CPU used by
//!   `open` on a lab capture over that many seconds after analysis is done.
//!
//! `cargo bench -p rdma-analyzer --bench tui`

use std::hint::black_box;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use rdma_analyzer::diagnosis::timeline::timeline;
use rdma_analyzer::engine::{Config, ConnId};
use rdma_analyzer::pipeline::Stop;
use rdma_analyzer::sources::pcap::FileSource;
use rdma_analyzer::tui::feed::{self, Msg};
use rdma_analyzer::tui::model::{Caps, Model};
use rdma_analyzer::tui::state::{Action, Screen, SortCol, UiState};

fn capture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("captures")
        .join(name)
}

/// A million transactions, cloned from the lab capture's 578 and spread
/// over 8 connections and successive copies of the capture's time span.
fn million() -> Model {
    let mut real = Model::new("v3-ddp.pcap", Caps::default());
    let config = Config::default();
    let source = FileSource::open(&capture("v3-ddp.pcap"), &config.stack).expect("capture");
    real.load(Box::new(source), config)
        .expect("pipeline thread");
    let base: Vec<_> = (0..real.rows.len())
        .filter_map(|r| real.detail(r).cloned())
        .collect();
    let span = real.state.totals.span_ns() + 1;
    let mut m = Model::new("synthetic 1M", Caps::default());
    m.state = real.state.clone();
    m.done = true;
    for i in 0..1_000_000usize {
        let mut t = base[i % base.len()].clone();
        let round = (i / base.len()) as u64;
        t.xid = t.xid.wrapping_add(round as u32 * 0x1000);
        t.connection = ConnId(1 + (i % 8) as u32);
        t.call_ts_ns += round * span;
        t.reply_ts_ns = t.reply_ts_ns.map(|r| r + round * span);
        m.push_txn(Box::new(t));
    }
    m
}

fn bench_transactions(c: &mut Criterion) {
    let mut m = million();
    let mut ui = UiState::default();
    ui.apply(Action::Go(Screen::Transactions));
    ui.apply(Action::Resize(48));
    ui.sort.col = SortCol::Latency;
    ui.sort.desc = true;
    m.refresh(&mut ui);
    assert_eq!(m.view.len(), 1_000_000);
    ui.selected[Screen::Transactions.index()] = 500_000;
    ui.top[Screen::Transactions.index()] = 499_990;
    let mut term = Terminal::new(TestBackend::new(160, 48)).expect("terminal");
    c.bench_function("transactions_frame_1m_160x48", |b| {
        b.iter(|| {
            // Force a full redraw: the diff against the last frame is part of the cost.
            term.clear().expect("clear");
            term.draw(|f| rdma_analyzer::tui::draw(f, black_box(&m), &ui))
                .expect("draw");
        })
    });
    let mut group = c.benchmark_group("resort");
    group.sample_size(10);
    group.bench_function("transactions_resort_1m", |b| {
        b.iter(|| {
            ui.sort.col = ui.sort.col.next();
            m.refresh(&mut ui);
        })
    });
    group.finish();
}

/// One refresh of the causes and the client timelines, as
/// `Model::refresh` does when a message came in.
fn bench_diagnosis(c: &mut Criterion) {
    let mut m = Model::new("parallel.pcap", Caps::default());
    let config = Config::default();
    let source = FileSource::open(&capture("parallel.pcap"), &config.stack).expect("capture");
    m.load(Box::new(source), config).expect("pipeline thread");
    c.bench_function("diagnosis_refresh_parallel", |b| {
        b.iter(|| {
            black_box(m.diagnosis.causes(black_box(&m.state)));
            black_box(timeline(black_box(&m.state), |_| true));
        })
    });
}

/// Time from starting the source to the first screen drawn with data.
fn first_screen(_c: &mut Criterion) {
    let Ok(path) = std::env::var("RDMA_TUI_BIG_CAPTURE") else {
        eprintln!("first_screen: skipped (set RDMA_TUI_BIG_CAPTURE=FILE)");
        return;
    };
    let start = Instant::now();
    let config = Config::default();
    let source = FileSource::open(path.as_ref(), &config.stack).expect("capture");
    let (tap, _h) = feed::spawn(Box::new(source), config, Stop::new()).expect("spawn");
    let mut m = Model::new(path, Caps::default());
    let mut ui = UiState::default();
    let mut term = Terminal::new(TestBackend::new(160, 48)).expect("terminal");
    while let Ok(msg) = tap.rx.recv() {
        let snap = matches!(msg, Msg::Snapshot { .. } | Msg::Done { .. });
        m.apply(msg);
        if snap {
            m.refresh(&mut ui);
            term.draw(|f| rdma_analyzer::tui::draw(f, &m, &ui))
                .expect("draw");
            break;
        }
    }
    eprintln!(
        "first_screen: {:?} ({} frames, {} transactions in it)",
        start.elapsed(),
        m.progress.frames,
        m.rows.len()
    );
    tap.stop();
}

/// CPU (user + system) the real binary spends idle after analysis.
fn idle_cpu(_c: &mut Criterion) {
    let Some(secs) = std::env::var("RDMA_TUI_IDLE_SECS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    else {
        eprintln!("idle_cpu: skipped (set RDMA_TUI_IDLE_SECS=10)");
        return;
    };
    let sock = format!("rdma-tui-bench-{}", std::process::id());
    let tmux = |args: &[&str]| {
        Command::new("tmux")
            .arg("-L")
            .arg(&sock)
            .args(args)
            .output()
            .expect("tmux")
    };
    let cmd = format!(
        "exec '{}' open '{}'",
        env!("CARGO_BIN_EXE_rdma-analyzer"),
        capture("v3-ddp.pcap").display()
    );
    tmux(&[
        "new-session",
        "-d",
        "-s",
        "b",
        "-x",
        "160",
        "-y",
        "48",
        &cmd,
    ]);
    let pid = String::from_utf8_lossy(&tmux(&["display", "-p", "-t", "b", "#{pane_pid}"]).stdout)
        .trim()
        .to_string();
    let start = Instant::now();
    while !String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-t", "b"]).stdout)
        .contains(" done ")
    {
        assert!(start.elapsed() < Duration::from_secs(60), "never finished");
        std::thread::sleep(Duration::from_millis(50));
    }
    let ticks = || -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // utime and stime are fields 14 and 15; the command name may hold spaces.
        let rest = s.rsplit(')').next().unwrap_or("");
        let f: Vec<&str> = rest.split_whitespace().collect();
        f.get(11).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0)
            + f.get(12).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0)
    };
    let before = ticks();
    std::thread::sleep(Duration::from_secs(secs));
    let used = ticks() - before;
    // Clock ticks are 1/100 s on Linux.
    eprintln!(
        "idle_cpu: {used} ticks (1/100 s) in {secs} s = {:.3}% of a core",
        used as f64 / secs as f64
    );
    tmux(&["kill-server"]);
}

criterion_group!(
    benches,
    bench_transactions,
    bench_diagnosis,
    first_screen,
    idle_cpu
);
criterion_main!(benches);
