//! The `rdma-analyzer` command line: wiring only. Each command picks a
//! source and a sink, runs the one pipeline, and turns how it ended into
//! an exit status.

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use rdma_analyzer::cli::{
    engine_share, AnalyzeArgs, Cli, Command, ExportArgs, FramesArgs, LiveArgs, ReportArgs,
};
use rdma_analyzer::engine::Engine;
use rdma_analyzer::output::dataset::{Dataset, Export, ExportFrames, Written};
use rdma_analyzer::output::exporter::Exporter;
use rdma_analyzer::output::frames::Frames;
use rdma_analyzer::output::lines::{Lines, Which};
use rdma_analyzer::output::live::LiveSink;
use rdma_analyzer::output::metrics::{self, Metrics, Process};
use rdma_analyzer::output::Report;
use rdma_analyzer::pipeline::{self, End, Sink, Stop, Tee};
use rdma_analyzer::sources::live::LiveInputs;
use rdma_analyzer::sources::pcap::FileSource;
use rdma_analyzer::sources::sys;
use rdma_analyzer::tui::model::Caps;

/// The analysis could not read all of its input (README: exit status).
const EXIT_INCOMPLETE: u8 = 2;
/// `live` found nothing to watch on this host.
const EXIT_NOTHING_TO_WATCH: u8 = 3;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            // A closed pipe (`| head`) is not an error worth a message.
            if broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            eprintln!("rdma-analyzer: {e:#}");
            ExitCode::from(EXIT_INCOMPLETE)
        }
    }
}

fn broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Frames(a) => frames(&a),
        Command::Report(a) => report(&a),
        Command::Transactions(a) => lines(&a, Which::Transactions),
        Command::Anomalies(a) => lines(&a, Which::Anomalies),
        Command::Open(a) => open(&a),
        Command::Synth(a) => {
            rdma_analyzer::synth::cli::run(&a)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Live(a) => live(&a),
        Command::Export(a) => export(&a),
    }
}

/// The process's own figures for the metrics, read with `sys`.
fn process() -> Process {
    Process {
        cpu_seconds: sys::cpu_seconds,
        resident_bytes: sys::resident_bytes,
    }
}

/// The exit status for how the source ended, having said why on stderr.
fn finish(end: &End) -> ExitCode {
    match end.error() {
        Some(e) => {
            eprintln!("rdma-analyzer: {e}");
            ExitCode::from(EXIT_INCOMPLETE)
        }
        None => ExitCode::SUCCESS,
    }
}

/// A sink's write error: nothing for a closed pipe, an error otherwise.
fn output_error(e: Option<io::Error>) -> anyhow::Result<()> {
    match e {
        Some(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(e).context("writing the output"),
        _ => Ok(()),
    }
}

fn stdout() -> BufWriter<io::StdoutLock<'static>> {
    BufWriter::with_capacity(1 << 16, io::stdout().lock())
}

fn frames(a: &FramesArgs) -> anyhow::Result<ExitCode> {
    let config = rdma_dissectors::stack::Config::default().with_rocev2_port(a.rocev2_port);
    let mut source = FileSource::open_all(&a.files, &config)?;
    let mut sink = Frames::new(stdout(), a.json, config);
    let outcome = pipeline::run(&mut source, None, &mut sink, &Stop::new());
    output_error(sink.take_error())?;
    Ok(finish(&outcome.end))
}

fn report(r: &ReportArgs) -> anyhow::Result<ExitCode> {
    let a = &r.analyze;
    let config = a.config();
    let mut source = FileSource::open_all(&a.files, &config.stack)?;
    let mut rep = Report::new(a.filter());
    let engine = Some(Engine::new(config));
    // The metrics count the whole capture; --filter narrows the report only.
    let (outcome, metrics) = match &r.metrics_out {
        Some(_) => {
            let mut m = Metrics::new(r.metrics_caps.config());
            let mut tee = Tee {
                watch: &mut m,
                main: &mut rep,
            };
            (
                pipeline::run(&mut source, engine, &mut tee, &Stop::new()),
                Some(m),
            )
        }
        None => (
            pipeline::run(&mut source, engine, &mut rep, &Stop::new()),
            None,
        ),
    };
    let Some(engine) = outcome.engine else {
        anyhow::bail!("the run lost its engine");
    };
    let name = a.name();
    let err = outcome.end.error().map(str::to_string);
    let mut out = stdout();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &rep.to_doc(engine.state(), &name, err))?;
        writeln!(out)?;
    } else {
        write!(
            out,
            "{}",
            rep.to_text(engine.state(), &name, err.as_deref())
        )?;
    }
    out.flush()?;
    say_if_filtered_out(a, rep.matched());
    if let (Some(m), Some(path)) = (metrics, &r.metrics_out) {
        metrics::write_textfile(&m.exposition(None), path).with_context(|| {
            format!(
                "report --metrics-out: writing {} (is its folder there and writable?)",
                path.display()
            )
        })?;
    }
    Ok(finish(&outcome.end))
}

/// A filter that matched nothing says so, rather than leave an empty
/// output to look like a clean capture.
fn say_if_filtered_out(a: &AnalyzeArgs, matched: u64) {
    if let (Some(f), 0) = (&a.filter, matched) {
        if !a.filter().is_all() {
            eprintln!(
                "rdma-analyzer: --filter {f} matched nothing in {} (it takes a connection such as c3, an XID such as 0x1234abcd, a procedure such as READ, or an anomaly kind such as credit_overrun)",
                a.name()
            );
        }
    }
}

fn lines(a: &AnalyzeArgs, which: Which) -> anyhow::Result<ExitCode> {
    let config = a.config();
    let mut source = FileSource::open_all(&a.files, &config.stack)?;
    let mut sink = Lines::new(stdout(), which, a.json, a.filter());
    let outcome = pipeline::run(
        &mut source,
        Some(Engine::new(config)),
        &mut sink,
        &Stop::new(),
    );
    output_error(sink.take_error())?;
    say_if_filtered_out(a, sink.matched());
    Ok(finish(&outcome.end))
}

fn open(a: &AnalyzeArgs) -> anyhow::Result<ExitCode> {
    if !io::stdout().is_terminal() {
        eprintln!(
            "rdma-analyzer open: standard output is not a terminal; for text or JSON output use `rdma-analyzer report {}` (or transactions, anomalies)",
            a.name()
        );
        return Ok(ExitCode::from(EXIT_INCOMPLETE));
    }
    let mut config = a.config();
    config.memory_limit = engine_share(a.engine.memory_limit, true);
    let caps = Caps::within(a.engine.memory_limit - config.memory_limit);
    // Opened before the screen is taken, so a file that is not a capture is
    // said plainly, as `report` says it.
    let source = FileSource::open_all(&a.files, &config.stack)?;
    let error = rdma_analyzer::tui::show(
        Box::new(source),
        config,
        caps,
        Stop::new(),
        a.filter.clone(),
        None,
    )?;
    Ok(match error {
        Some(e) => {
            eprintln!("rdma-analyzer: {e}");
            ExitCode::from(EXIT_INCOMPLETE)
        }
        None => ExitCode::SUCCESS,
    })
}

fn live(a: &LiveArgs) -> anyhow::Result<ExitCode> {
    let tui =
        !a.no_tui && a.json_out.is_none() && a.duration.is_none() && io::stdout().is_terminal();
    let stop = Stop::new();
    sys::stop_on_signals(&stop, !tui);
    let started = Instant::now();
    // Listening first: a busy port is said before probes attach.
    let mut metrics = match a.metrics {
        Some(addr) => {
            let m = Metrics::new(a.metrics_caps.config());
            let exporter = Exporter::start(addr, m.exposition(Some(process())))
                .with_context(|| "live".to_string())?;
            eprintln!("live: metrics at http://{}/metrics", exporter.addr());
            Some((m, exporter))
        }
        None => None,
    };
    let mut inputs = LiveInputs::start(&a.options())?;
    if inputs.is_empty() {
        let mut notices = Vec::new();
        pipeline::Source::notices(&mut inputs, &mut notices);
        for n in notices {
            eprintln!("{}", n.text);
        }
        eprintln!("live: nothing to watch on this host; exiting");
        write_stats(a, &mut inputs.stats, started)?;
        return Ok(ExitCode::from(EXIT_NOTHING_TO_WATCH));
    }
    if tui {
        let mut config = a.config();
        config.memory_limit = engine_share(a.memory_limit, true);
        let caps = Caps::within(a.memory_limit - config.memory_limit);
        // The exporter serves until the screen is gone.
        let (watch, _exporter) = match metrics {
            Some((m, e)) => (Some(Box::new(m) as Box<dyn Sink + Send>), Some(e)),
            None => (None, None),
        };
        let error = rdma_analyzer::tui::show(Box::new(inputs), config, caps, stop, None, watch)?;
        return Ok(match error {
            Some(e) => {
                eprintln!("rdma-analyzer: {e}");
                ExitCode::from(EXIT_INCOMPLETE)
            }
            None => ExitCode::SUCCESS,
        });
    }
    if let Some(d) = a.duration {
        let stop = stop.clone();
        let d = Duration::from_secs_f64(d.max(0.0));
        std::thread::Builder::new()
            .name("live-duration".into())
            .spawn(move || {
                std::thread::sleep(d);
                stop.request();
            })
            .context("live: starting the --duration timer")?;
    }
    let mut sink = match (&a.json_out, &metrics) {
        (Some(p), _) => LiveSink::new(
            Box::new(BufWriter::new(
                File::create(p).with_context(|| format!("creating {}", p.display()))?,
            )) as Box<dyn Write>,
            true,
        ),
        // A metrics service: the exporter is the output.
        (None, Some(_)) => LiveSink::counting(),
        (None, None) => LiveSink::new(
            Box::new(BufWriter::new(io::stdout())) as Box<dyn Write>,
            false,
        ),
    };
    let engine = Some(Engine::new(a.config()));
    let outcome = match metrics.as_mut() {
        Some((m, _)) => {
            let mut tee = Tee {
                watch: m,
                main: &mut sink,
            };
            pipeline::run(&mut inputs, engine, &mut tee, &stop)
        }
        None => pipeline::run(&mut inputs, engine, &mut sink, &stop),
    };
    output_error(sink.take_error())?;
    let mut stats = inputs.stats.clone();
    stats.transactions = sink.transactions;
    stats.anomalies = sink.anomalies;
    write_stats(a, &mut stats, started)?;
    eprintln!(
        "live: {} probe records ({} lost in the kernel, {} undecodable), {} frames ({} dropped), {} transactions, {} anomalies in {:.1} s",
        stats.records,
        stats.lost_in_kernel,
        stats.decode_errors,
        stats.frames,
        stats.frames_dropped,
        stats.transactions,
        stats.anomalies,
        stats.seconds
    );
    match outcome
        .engine
        .as_ref()
        .and_then(|e| e.kernel().private_data.first())
    {
        Some(p) => {
            let hex: String = p.1.iter().map(|x| format!("{x:02x}")).collect();
            let side = match p.0 {
                ebpf_common::KprobeId::Connect => "the client's REQ (rdma_connect)",
                ebpf_common::KprobeId::Accept => "the server's REP (rdma_accept)",
            };
            eprintln!("live: CM private data in {side}: {hex}");
        }
        None if a.probes => eprintln!(
            "live: CM private data (RFC 8797): unknown (no kprobe saw a connection being set up)"
        ),
        None => {}
    }
    Ok(finish(&outcome.end))
}

fn write_stats(
    a: &LiveArgs,
    stats: &mut rdma_analyzer::sources::live::LiveStats,
    started: Instant,
) -> anyhow::Result<()> {
    stats.finish(started.elapsed().as_secs_f64(), sys::cpu_seconds());
    if let Some(p) = &a.stats_out {
        let mut f = File::create(p).with_context(|| format!("creating {}", p.display()))?;
        serde_json::to_writer_pretty(&mut f, &*stats)?;
        writeln!(f)?;
    }
    Ok(())
}

fn export(a: &ExportArgs) -> anyhow::Result<ExitCode> {
    let host = a
        .host
        .clone()
        .or_else(sys::hostname)
        .unwrap_or_else(|| "unknown".to_string());
    let datasets = Dataset::for_captures(&a.out, &host, a.row_group_rows, &a.files)
        .map_err(|e| anyhow::anyhow!("export: {e}"))?;
    std::fs::create_dir_all(&a.out).with_context(|| {
        format!(
            "export: creating the dataset folder {} (is its parent there and writable?)",
            a.out.display()
        )
    })?;
    let mut failed = 0;
    let mut out = stdout();
    for (f, dataset) in a.files.iter().zip(&datasets) {
        let (w, damage) = match export_one(a, dataset, f) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("rdma-analyzer: export: {}: {e:#}", f.display());
                failed += 1;
                continue;
            }
        };
        let frames = if a.frames {
            format!(", {} frames", w.frames)
        } else {
            String::new()
        };
        writeln!(
            out,
            "{}: {} transactions, {} anomalies, {} connections, {} causes{frames} -> host={}/capture={}",
            f.display(),
            w.transactions,
            w.anomalies,
            w.connections,
            w.causes,
            dataset.host,
            dataset.capture
        )?;
        if let Some(d) = damage {
            eprintln!(
                "rdma-analyzer: export: {}: {d} (what came before is in the dataset)",
                f.display()
            );
            failed += 1;
        }
    }
    out.flush()?;
    if failed > 0 {
        eprintln!(
            "rdma-analyzer: export: {failed} of {} captures could not be read whole; the others are in {}",
            a.files.len(),
            a.out.display()
        );
        return Ok(ExitCode::from(EXIT_INCOMPLETE));
    }
    Ok(ExitCode::SUCCESS)
}

/// One capture into the dataset: the findings' run, then (with `--frames`)
/// a run without an engine for the frames. Returns the rows written and
/// where the capture is damaged, if it is.
fn export_one(
    a: &ExportArgs,
    dataset: &Dataset,
    file: &std::path::Path,
) -> anyhow::Result<(Written, Option<String>)> {
    let config = a.engine.config();
    let mut source = FileSource::open(file, &config.stack)?;
    let mut sink = Export::new(dataset);
    let outcome = pipeline::run(
        &mut source,
        Some(Engine::new(config.clone())),
        &mut sink,
        &Stop::new(),
    );
    let mut written = sink.written;
    sink.finish()
        .with_context(|| format!("writing into {}", dataset.root.display()))?;
    if a.frames {
        let mut source = FileSource::open(file, &config.stack)?;
        let mut frames = ExportFrames::new(dataset, config.stack);
        pipeline::run(&mut source, None, &mut frames, &Stop::new());
        written.frames = frames.written;
        frames
            .finish()
            .with_context(|| format!("writing frames into {}", dataset.root.display()))?;
    }
    Ok((written, outcome.end.error().map(str::to_string)))
}
