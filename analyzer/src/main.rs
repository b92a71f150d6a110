//! The `rdma-analyzer` command line: wiring only. Each command picks a
//! source and a sink, runs the one pipeline, and turns how it ended into
//! an exit status.

use std::io::{self, BufWriter, IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{CommandFactory, Parser};
use rdma_analyzer::budget::{Budget, Holders};
use rdma_analyzer::cli::{
    AnalyzeArgs, Cli, Command, ExportArgs, FramesArgs, LiveArgs, MountstatsArgs, ReportArgs,
};
use rdma_analyzer::engine::{mountstats, Engine};
use rdma_analyzer::files as safe_file;
#[cfg(feature = "export")]
use rdma_analyzer::output::dataset::{Dataset, Export, ExportFrames, Written};
use rdma_analyzer::output::escape::{escape, escaped};
#[cfg(feature = "metrics-server")]
use rdma_analyzer::output::exporter::Exporter;
use rdma_analyzer::output::frames::{self, Frames};
use rdma_analyzer::output::lines::{Lines, Which};
use rdma_analyzer::output::live::LiveSink;
use rdma_analyzer::output::metrics::{self, Metrics};
use rdma_analyzer::output::{device_compare, kernel_counters, unchecked};
use rdma_analyzer::output::{Filter, Report};
use rdma_analyzer::pipeline::{self, End, Fanout, Notice, Reopen, Sink, Source, Stop};
use rdma_analyzer::recorder::read::{DumpRecords, WithProbes};
use rdma_analyzer::recorder::Recorder;
use rdma_analyzer::sources::live::LiveInputs;
use rdma_analyzer::sources::pcap::{input, FileSource};
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
            eprintln!("rdma-analyzer: {}", escaped(format_args!("{e:#}")));
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

fn run(mut cli: Cli) -> anyhow::Result<ExitCode> {
    // A compressed input's window is bounded by the run's memory limit.
    let limit = match &cli.command {
        Command::Report(a) => Some(a.analyze.engine.memory.limit),
        Command::Transactions(a) | Command::Anomalies(a) | Command::Open(a) => {
            Some(a.engine.memory.limit)
        }
        Command::Export(a) => Some(a.engine.memory.limit),
        Command::Mountstats(a) => Some(a.engine.memory.limit),
        Command::Live(a) => Some(a.memory.limit),
        Command::Frames(a) => Some(a.memory.limit),
        Command::Synth(_) | Command::Completions { .. } | Command::Man { .. } => None,
    };
    if let Some(l) = limit {
        input::set_memory_limit(l as u64);
    }
    if let Command::Live(a) = &mut cli.command {
        if let Some(warning) = a.take_bpf_from_filter() {
            eprintln!("{}", escape(&warning));
        }
    }
    let filter = match &cli.command {
        Command::Live(a) => a.filter.as_deref(),
        Command::Export(a) => a.filter.as_deref(),
        Command::Report(a) => a.analyze.filter.as_deref(),
        Command::Transactions(a) | Command::Anomalies(a) | Command::Open(a) => a.filter.as_deref(),
        Command::Frames(a) => a.filter.as_deref(),
        _ => None,
    };
    if let Err(e) = rdma_analyzer::cli::parse_filter(filter) {
        let text = filter.unwrap_or("");
        // Both --filter and --bpf given: the BPF text cannot be taken over.
        let hint = if matches!(cli.command, Command::Live(_))
            && rdma_analyzer::cli::looks_like_bpf(text)
        {
            " (a BPF capture filter goes in --bpf)"
        } else {
            ""
        };
        eprintln!(
            "rdma-analyzer: --filter {}: {}{hint}",
            escape(text),
            escape(&e.to_string())
        );
        return Ok(ExitCode::from(2));
    }
    let analyze = match &cli.command {
        Command::Report(a) => Some(&a.analyze),
        Command::Transactions(a) | Command::Anomalies(a) | Command::Open(a) => Some(a),
        _ => None,
    };
    let acks = match &cli.command {
        Command::Export(a) => Some(a.acks()),
        Command::Live(a) => Some(a.acks()),
        _ => analyze.map(AnalyzeArgs::acks),
    };
    if let Some(Err(e)) = acks {
        eprintln!("rdma-analyzer: {}", escape(&e));
        return Ok(ExitCode::from(2));
    }
    match cli.command {
        Command::Frames(a) => frames(&a),
        Command::Report(a) => report(&a),
        Command::Transactions(a) => lines(&a, Which::Transactions),
        Command::Anomalies(a) => lines(&a, Which::Anomalies),
        Command::Open(a) => open(&a),
        Command::Completions { shell } => completions(shell),
        Command::Mountstats(a) => mountstats(&a),
        Command::Man { command } => man(command.as_deref()),
        Command::Synth(a) => {
            rdma_analyzer::synth::cli::run(&a)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Live(a) => live(&a),
        Command::Export(a) => export(&a),
    }
}

/// The process's own figures for the metrics, read with `sys`.
#[cfg(feature = "metrics-server")]
fn process() -> metrics::Process {
    metrics::Process {
        cpu_seconds: sys::cpu_seconds,
        resident_bytes: sys::resident_bytes,
        // The live sampler's latest sample, else cached: a scrape must
        // not make the host read files at the scraper's rate.
        mountstats: rdma_analyzer::sources::counters::served_mountstats,
        device_counters: rdma_analyzer::sources::counters::served_device_counters,
    }
}

/// The exit status for how the source ended, having said why on stderr.
fn finish(end: &End) -> ExitCode {
    match end.error() {
        Some(e) => {
            eprintln!("rdma-analyzer: {}", escaped(e));
            ExitCode::from(EXIT_INCOMPLETE)
        }
        None => ExitCode::SUCCESS,
    }
}

/// Tells a notice of a run on stderr (the one reporter of every command
/// but `live`, whose notices name themselves, and the screen).
fn say(n: Notice) {
    eprintln!("rdma-analyzer: {}", escape(&n.text));
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
    let config = a.stack_config();
    let mut source = FileSource::open_all(&a.files, &config)?;
    let filter = rdma_analyzer::cli::parse_filter(a.filter.as_deref()).unwrap_or(Filter::All);
    if let Some(f) = filter
        .fields()
        .into_iter()
        .find(|f| !frames::FRAME_FIELDS.contains(f))
    {
        eprintln!(
            "rdma-analyzer: frames --filter: `{}` is a field of transactions, findings or connections, not of a frame (frames runs without the correlation engine); a frame has {} (docs/filters.md)",
            Filter::name(f),
            frames::FRAME_FIELDS.iter().map(|f| Filter::name(*f)).collect::<Vec<_>>().join(", ")
        );
        return Ok(ExitCode::from(2));
    }
    let mut sink = Frames::new(stdout(), a.json, config, a.time).with_filter(filter);
    let outcome = pipeline::run(&mut source, None, &mut sink, &mut say, &Stop::new());
    output_error(sink.take_error())?;
    Ok(finish(&outcome.end))
}

/// Reads a mountstats copy, saying which file could not be read or parsed.
fn read_mountstats(path: &std::path::Path) -> anyhow::Result<Vec<mountstats::Mount>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("mountstats: reading {}", path.display()))?;
    mountstats::parse(&text).map_err(|e| {
        anyhow::anyhow!(
            "mountstats: {}: {e}; give a copy of /proc/self/mountstats",
            path.display()
        )
    })
}

/// AFTER and BEFORE (none: empty, the counters since each mount's start).
fn read_window(
    after: &std::path::Path,
    before: Option<&std::path::Path>,
) -> anyhow::Result<(Vec<mountstats::Mount>, Vec<mountstats::Mount>)> {
    let after = read_mountstats(after)?;
    let before = match before {
        Some(p) => read_mountstats(p)?,
        None => Vec::new(),
    };
    Ok((after, before))
}

/// The inputs, with the probe records of the flight recorder dumps among
/// them put back among the frames: the engine joins the kernel's view of
/// each XID with the wire's, as `live --probes` did. Also what the dumps
/// hold beside (their mountstats snapshots).
fn open_inputs(
    files: &[std::path::PathBuf],
    config: &mut rdma_analyzer::engine::Config,
) -> Result<(WithProbes<FileSource>, DumpRecords), rdma_analyzer::sources::pcap::ReadError> {
    let source = FileSource::open_all(files, &config.stack)?;
    let mut dumps = DumpRecords::read(files);
    let mut notices: Vec<Notice> = dumps
        .problems
        .iter()
        .map(|p| Notice {
            warning: true,
            text: format!("rdma-analyzer: {}", escape(p)),
        })
        .collect();
    let probes = std::mem::take(&mut dumps.probes);
    if !probes.is_empty() {
        config.merge = Some(rdma_analyzer::engine::MergeConfig::default());
        notices.push(Notice {
            warning: false,
            text: format!(
                "rdma-analyzer: {} probe records from the flight recorder's dump{}, joined with the wire's view of their XIDs as live --probes does",
                probes.len(),
                if dumps.dumps.len() == 1 { "" } else { "s" }
            ),
        });
    }
    Ok((WithProbes::new(source, probes, notices), dumps))
}

/// The last mountstats snapshot of the dumps, as the report's kernel view
/// (counters since each mount: a dump holds one snapshot).
fn dump_kernel_view(dumps: &DumpRecords) -> Option<rdma_analyzer::diagnosis::KernelView> {
    let (path, _, text) = dumps.mountstats.iter().max_by_key(|(_, ts, _)| *ts)?;
    match mountstats::parse(text) {
        Ok(after) => Some(kernel_counters::kernel_view(&after, &[])),
        Err(e) => {
            eprintln!(
                "rdma-analyzer: {}: its mountstats snapshot does not read: {e}; the report has no kernel counters",
                escape(&path.display().to_string())
            );
            None
        }
    }
}

/// `live`'s counter sampler, unless `--counters-interval 0`.
fn live_counters(
    a: &LiveArgs,
    stop: &rdma_analyzer::pipeline::Stop,
) -> anyhow::Result<Option<std::sync::mpsc::Receiver<rdma_analyzer::counters::CounterReading>>> {
    use rdma_analyzer::sources::counters::{spawn, CounterPaths};
    // The CLI has refused anything but 0 and 0.1 s or more.
    if a.counters_interval == 0.0 {
        return Ok(None);
    }
    let mut paths = CounterPaths::default();
    if let Some(p) = &a.mountstats_file {
        paths.mountstats = p.clone();
    }
    if let Some(p) = &a.sysfs_root {
        paths.sysfs_root = p.clone();
    }
    let every = Duration::from_secs_f64(a.counters_interval);
    let rx = spawn(paths, every, stop.clone()).context("live: starting the counter sampler")?;
    Ok(Some(rx))
}

/// The kernel's counters against a capture of the same window.
fn mountstats(a: &MountstatsArgs) -> anyhow::Result<ExitCode> {
    let (after, before) = read_window(&a.after, a.before.as_deref())?;
    let snapshots = match &a.device_counters {
        Some(p) => Some(read_device_counters(p)?),
        None => None,
    };
    let config = a.engine.config();
    let mut source = FileSource::open_all(&a.captures, &config.stack)?;
    let mut wire = kernel_counters::WireCounts::within(a.since, a.until);
    let (since, until) = snapshots
        .as_deref()
        .map_or((None, None), device_compare::window);
    let mut device = device_compare::DeviceWire::within(since, until, config.stack);
    let outcome = {
        let mut sinks: Vec<&mut dyn Sink> = vec![&mut wire];
        if snapshots.is_some() {
            sinks.push(&mut device);
        }
        pipeline::run(
            &mut source,
            Some(Engine::new(config)),
            &mut Fanout(sinks),
            &mut say,
            &Stop::new(),
        )
    };
    let mounts = kernel_counters::compare(&after, &before, &wire);
    let devices = match &snapshots {
        Some(s) => {
            let host = device_host(a, &mounts, &device)?;
            Some(device_compare::compare(s, &device, host))
        }
        None => None,
    };
    let mut out = stdout();
    if a.json {
        let doc = serde_json::json!({ "mounts": mounts, "devices": devices });
        serde_json::to_writer_pretty(&mut out, &doc)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", kernel_counters::text(&mounts))?;
        if let Some(d) = &devices {
            write!(out, "{}", device_compare::text(d))?;
        }
    }
    out.flush()?;
    if let Some(e) = outcome.end.error() {
        eprintln!(
            "rdma-analyzer mountstats: the capture could not be read whole: {}",
            escape(e)
        );
        return Ok(ExitCode::from(EXIT_INCOMPLETE));
    }
    let differ = mounts.iter().map(|m| m.disagreements()).sum::<usize>()
        + devices
            .iter()
            .flatten()
            .map(|d| d.disagreements())
            .sum::<usize>();
    Ok(if differ > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn read_device_counters(
    path: &std::path::Path,
) -> anyhow::Result<Vec<rdma_analyzer::engine::device_counters::Snapshot>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the device counters {}", path.display()))?;
    let s = rdma_analyzer::engine::device_counters::parse_snapshots(&text);
    if s.iter().all(|s| s.counters.is_empty()) {
        anyhow::bail!(
            "{}: no counter lines (`DEVICE PORT hw_counters NAME VALUE`) in it; dump them with `for f in /sys/class/infiniband/*/ports/*/hw_counters/*; do ...` as captures/lab/guest/scenarios.sh does",
            path.display()
        );
    }
    Ok(s)
}

/// Whose device the counters are: `--device-host`, else the one address of
/// the capture that is none of the mounts' servers.
fn device_host(
    a: &MountstatsArgs,
    mounts: &[kernel_counters::MountComparison],
    wire: &device_compare::DeviceWire,
) -> anyhow::Result<std::net::IpAddr> {
    if let Some(h) = a.device_host {
        return Ok(h);
    }
    let servers: Vec<std::net::IpAddr> = mounts
        .iter()
        .filter_map(|m| m.server.as_deref()?.parse().ok())
        .collect();
    let others: Vec<std::net::IpAddr> = wire.addresses().filter(|a| !servers.contains(a)).collect();
    match others.as_slice() {
        [one] => Ok(*one),
        _ => anyhow::bail!(
            "mountstats: the capture has {} addresses besides the servers; say whose device the counters are with --device-host ADDR",
            others.len()
        ),
    }
}

/// The completion script for `shell`.
fn completions(shell: clap_complete::Shell) -> anyhow::Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "rdma-analyzer", &mut script);
    let mut script = String::from_utf8(script)?;
    if shell == clap_complete::Shell::Bash {
        // clap_complete spells a hyphenated command's state two ways in bash
        // (`rdma__analyzer__subcmd__report` when walking the words,
        // `rdma__subcmd__analyzer__subcmd__report` in the case arms), so no
        // subcommand's options would ever complete (clap issue 6421, open in
        // 4.6.11). tests/cli_docs.rs completes through bash and sees it.
        script = script.replace("rdma__subcmd__analyzer", "rdma__analyzer");
    }
    let mut out = stdout();
    out.write_all(script.as_bytes())?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The man page of the command line, or of one subcommand
/// (`rdma-analyzer-report(1)`), rendered from the CLI definition.
fn man(sub: Option<&str>) -> anyhow::Result<ExitCode> {
    let cmd = Cli::command().name("rdma-analyzer");
    let page = match sub {
        None => cmd,
        Some(name) => {
            let names: Vec<String> = cmd
                .get_subcommands()
                .map(|c| c.get_name().to_string())
                .collect();
            match cmd.find_subcommand(name) {
                Some(c) => c
                    .clone()
                    .display_name(format!("rdma-analyzer-{name}"))
                    .bin_name(format!("rdma-analyzer {name}")),
                None => anyhow::bail!(
                    "man: no subcommand {name:?}; the subcommands are {}",
                    names.join(", ")
                ),
            }
        }
    };
    let mut out = stdout();
    clap_mangen::Man::new(page).render(&mut out)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn report(r: &ReportArgs) -> anyhow::Result<ExitCode> {
    let a = &r.analyze;
    let mut config = a.config();
    let budget = Budget::split(
        a.engine.memory.limit,
        Holders {
            report: true,
            metrics: r.metrics_out.is_some(),
            ..Holders::default()
        },
    );
    config.memory_limit = budget.engine;
    let tables = budget.report;
    let (mut source, dumps) = match open_inputs(&a.files, &mut config) {
        Ok(s) => s,
        // A script reading the document gets one whatever happened: the
        // README promises `"complete": false` for an unreadable input,
        // even one unreadable from its first byte.
        Err(e) if a.json => {
            let doc = Report::new(a.filter()).within(tables).to_doc(
                Engine::new(config).state(),
                &a.name(),
                Some(e.to_string()),
            );
            let mut out = stdout();
            serde_json::to_writer_pretty(&mut out, &doc)?;
            writeln!(out)?;
            out.flush()?;
            eprintln!("rdma-analyzer: {}", escaped(e));
            return Ok(ExitCode::from(EXIT_INCOMPLETE));
        }
        Err(e) => return Err(e.into()),
    };
    let mut rep = Report::new(a.filter())
        .within(tables)
        .with_time(a.time)
        .with_acks(a.acks().unwrap_or_default());
    if let Some(after) = &r.mountstats {
        let (after, before) = read_window(after, r.mountstats_before.as_deref())?;
        rep.set_kernel(kernel_counters::kernel_view(&after, &before));
    } else if let Some(v) = dump_kernel_view(&dumps) {
        rep.set_kernel(v);
    }
    // The metrics count the whole capture; --filter narrows the report only.
    let mut metrics = r.metrics_out.as_ref().map(|_| {
        Metrics::new(r.metrics_caps.config(budget.metrics)).with_acks(a.acks().unwrap_or_default())
    });
    let mut sinks: Vec<&mut dyn Sink> = metrics.iter_mut().map(|m| m as &mut dyn Sink).collect();
    sinks.push(&mut rep);
    let outcome = pipeline::run(
        &mut source,
        Some(Engine::new(config)),
        &mut Fanout(sinks),
        &mut say,
        &Stop::new(),
    );
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
        metrics::write_textfile(&m.exposition(None), path)
            .with_context(|| format!("report --metrics-out: writing {}", path.display()))?;
    }
    let not_decoded = &engine.state().totals.not_decoded;
    if !not_decoded.is_empty() && outcome.end.error().is_none() {
        // Traffic it recognised and could not read: not a clean capture.
        eprintln!(
            "rdma-analyzer: {} holds RDMA traffic this version does not decode (see NOT DECODED in the report)",
            escape(&name)
        );
        return Ok(ExitCode::from(EXIT_INCOMPLETE));
    }
    Ok(finish(&outcome.end))
}

/// A filter that matched nothing says so, rather than leave an empty
/// output to look like a clean capture.
fn say_if_filtered_out(a: &AnalyzeArgs, matched: u64) {
    if let (Some(f), 0) = (&a.filter, matched) {
        if !a.filter().is_all() {
            eprintln!(
                "rdma-analyzer: --filter {} matched nothing in {} (its fields and examples: docs/filters.md)",
                escape(f),
                escape(&a.name())
            );
        }
    }
}

fn lines(a: &AnalyzeArgs, which: Which) -> anyhow::Result<ExitCode> {
    let mut config = a.config();
    let (mut source, _) = open_inputs(&a.files, &mut config)?;
    let acks = a.acks().unwrap_or_default();
    if which == Which::Transactions && !acks.is_empty() {
        // Accepted here they would change nothing the command prints.
        eprintln!(
            "rdma-analyzer transactions: --ignore and --ack acknowledge findings, which transactions does not list; use them with report, anomalies or open"
        );
        return Ok(ExitCode::from(2));
    }
    let mut sink = Lines::new(stdout(), which, a.json, a.filter(), a.time).with_acks(acks);
    let outcome = pipeline::run(
        &mut source,
        Some(Engine::new(config)),
        &mut sink,
        &mut say,
        &Stop::new(),
    );
    output_error(sink.take_error())?;
    say_if_filtered_out(a, sink.matched());
    if let Some(hidden) = sink.acks_summary().filter(|_| !a.json) {
        eprintln!("rdma-analyzer: {hidden}");
    }
    if which == Which::Anomalies && !a.json {
        // An empty list is not a clean bill when checks could not be made
        // (report --json lists the same in anomalies_not_checked).
        if let Some(e) = outcome.engine.as_ref() {
            let state = e.state();
            for n in unchecked::not_checked(state.connections.values(), &state.totals) {
                eprintln!("rdma-analyzer: not checked: {}", n.text);
            }
        }
    }
    if sink.out_of_order() > 0 {
        eprintln!(
            "rdma-analyzer: {} transactions printed out of call order: each was answered after more than {} later calls had completed, and printed when answered",
            sink.out_of_order(),
            rdma_analyzer::output::lines::REORDER
        );
    }
    Ok(finish(&outcome.end))
}

fn open(a: &AnalyzeArgs) -> anyhow::Result<ExitCode> {
    if a.json {
        // The flag is shared with transactions and anomalies; accepted
        // here it would be silently ignored.
        eprintln!(
            "rdma-analyzer open: --json does not apply to the terminal UI; for JSON use `rdma-analyzer report --json {0}` (or transactions --json, anomalies --json)",
            escape(&a.name())
        );
        return Ok(ExitCode::from(2));
    }
    if !io::stdout().is_terminal() {
        eprintln!(
            "rdma-analyzer open: standard output is not a terminal; for text or JSON output use `rdma-analyzer report {}` (or transactions, anomalies)",
            escape(&a.name())
        );
        return Ok(ExitCode::from(EXIT_INCOMPLETE));
    }
    let mut config = a.config();
    let budget = Budget::split(
        a.engine.memory.limit,
        Holders {
            screen: true,
            ..Holders::default()
        },
    );
    config.memory_limit = budget.engine;
    let caps = Caps::within(budget.screen);
    // Opened before the screen is taken, so a file that is not a capture is
    // said plainly, as `report` says it.
    let (source, _) = open_inputs(&a.files, &mut config)?;
    // SIGTERM, SIGINT and SIGHUP quit the screen as `q` does, so the
    // terminal is restored (the normal screen back, the cursor shown)
    // before the process dies of them.
    let stop = Stop::new();
    sys::stop_on_signals(&stop, true);
    die_if_stuck_after_a_signal();
    // The frame keys read the files again; standard input cannot be.
    let reopen: Option<Reopen> = (!a.files.iter().any(|f| input::is_stdin(f))).then(|| {
        let (files, stack) = (a.files.clone(), config.stack);
        Box::new(move || {
            FileSource::open_all(&files, &stack)
                .map(|s| Box::new(s) as Box<dyn Source>)
                .map_err(|e| e.to_string())
        }) as Reopen
    });
    let view = rdma_analyzer::tui::View {
        filter: a.filter.clone(),
        reopen,
        counters: None,
    };
    let acks = a.acks().unwrap_or_default();
    let session = (Box::new(source) as Box<dyn Source>, config, caps, stop);
    let error = rdma_analyzer::tui::show_acked(session, Vec::new(), view, acks)?;
    if let Some(sig) = sys::signal_seen() {
        if let Some(e) = &error {
            eprintln!("rdma-analyzer: {}", escaped(e));
        }
        sys::die_of(sig);
    }
    Ok(match error {
        Some(e) => {
            eprintln!("rdma-analyzer: {}", escaped(e));
            ExitCode::from(EXIT_INCOMPLETE)
        }
        None => ExitCode::SUCCESS,
    })
}

/// A screen whose terminal went away (a closed SSH session, a killed
/// tmux) gets SIGHUP, but crossterm can be left reading the dead terminal
/// without end, so the quit the signal asks for never comes and the process
/// spins: 2 s after a stop signal, whatever is still running dies of it.
fn die_if_stuck_after_a_signal() {
    let _ = std::thread::Builder::new()
        .name("signal-watchdog".into())
        .spawn(|| loop {
            std::thread::sleep(Duration::from_millis(200));
            if let Some(sig) = sys::signal_seen() {
                std::thread::sleep(Duration::from_secs(2));
                sys::die_of(sig);
            }
        });
}

fn live(a: &LiveArgs) -> anyhow::Result<ExitCode> {
    let tui =
        !a.no_tui && a.json_out.is_none() && a.duration.is_none() && io::stdout().is_terminal();
    let stop = Stop::new();
    sys::stop_on_signals(&stop, !tui);
    let started = Instant::now();
    let record = a.record.config();
    if let Some(r) = &record {
        Budget::check_recorder(a.memory.limit, r.ring_bytes).map_err(anyhow::Error::msg)?;
        std::fs::create_dir_all(&r.dir)
            .with_context(|| format!("live --record: creating {}", r.dir.display()))?;
    }
    let budget = Budget::split(
        a.memory.limit,
        Holders {
            screen: tui,
            metrics: a.metrics.is_some(),
            exporter: a.metrics.is_some(),
            report: false,
            recorder: record.as_ref().map_or(0, |r| r.ring_bytes),
        },
    );
    let mut config = a.config();
    config.memory_limit = budget.engine;
    // Listening first: a busy port is said before probes attach.
    let mut metrics = match a.metrics {
        Some(addr) => {
            // Checked in `run`.
            let m = Metrics::new(a.metrics_caps.config(budget.metrics))
                .with_window(a.diagnosis_window)
                .with_acks(a.acks().unwrap_or_default());
            let exporter = serve_metrics(addr, &m)?;
            eprintln!("live: metrics at http://{}/metrics", exporter.addr());
            Some((m, exporter))
        }
        None => None,
    };
    let mut recorder = record.map(|r| {
        let flag = Arc::new(AtomicBool::new(false));
        sys::record_on_sigusr1(flag.clone());
        eprintln!(
            "live --record: recording into {} on {} (kill -USR1 {} writes a dump now)",
            r.dir.display(),
            r.triggers
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            std::process::id()
        );
        let recorder = Recorder::new(r, flag);
        match &metrics {
            Some((_, exporter)) => {
                eprintln!(
                    "live --record: POST http://{}/record writes a dump too (an Alertmanager webhook can point there)",
                    exporter.addr()
                );
                recorder.with_http(exporter.record_flag())
            }
            None => recorder,
        }
    });
    let mut inputs = LiveInputs::start(&a.options())?;
    if inputs.is_empty() {
        let mut notices = Vec::new();
        pipeline::Source::notices(&mut inputs, &mut notices);
        for n in notices {
            eprintln!("{}", escape(&n.text));
        }
        eprintln!("live: nothing to watch on this host; exiting");
        write_stats(a, &mut inputs.stats, started)?;
        return Ok(ExitCode::from(EXIT_NOTHING_TO_WATCH));
    }
    if tui {
        die_if_stuck_after_a_signal();
        let caps = Caps {
            diagnosis_window: Some(a.diagnosis_window),
            ..Caps::within(budget.screen)
        };
        // The exporter serves until the screen is gone.
        let (mut beside, _exporter) = match metrics {
            Some((m, e)) => (vec![Box::new(m) as Box<dyn Sink + Send>], Some(e)),
            None => (Vec::new(), None),
        };
        if let Some(r) = recorder {
            beside.push(Box::new(r));
        }
        // The sampler runs beside the screen as beside the lines: the
        // counters screen shows it, the diagnosis judges the kernel's causes.
        let view = rdma_analyzer::tui::View {
            filter: a.filter.clone(),
            reopen: None,
            counters: live_counters(a, &stop)?.map(|rx| (rx, a.counters_interval)),
        };
        let error = rdma_analyzer::tui::show_acked(
            (Box::new(inputs), config, caps, stop),
            beside,
            view,
            a.acks().unwrap_or_default(),
        )?;
        return Ok(match error {
            Some(e) => {
                eprintln!("rdma-analyzer: {}", escaped(e));
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
    let sink = match (&a.json_out, &metrics) {
        (Some(p), _) => LiveSink::new(
            Box::new(BufWriter::new(safe_file::create_in_place(p).with_context(
                || format!("live --json-out: creating {}", p.display()),
            )?)) as Box<dyn Write>,
            true,
        )
        .with_window(a.diagnosis_window),
        // A metrics service: the exporter is the output.
        (None, Some(_)) => LiveSink::counting(),
        (None, None) => LiveSink::new(
            Box::new(BufWriter::new(io::stdout())) as Box<dyn Write>,
            false,
        ),
    };
    // Checked in `run`.
    let mut sink = sink
        .with_filter(rdma_analyzer::cli::parse_filter(a.filter.as_deref())?)
        .with_acks(a.acks().unwrap_or_default());
    if let Some(rx) = live_counters(a, &stop)? {
        sink = sink.with_counters(rx);
    }
    let mut sinks: Vec<&mut dyn Sink> = metrics
        .iter_mut()
        .map(|(m, _)| m as &mut dyn Sink)
        .collect();
    if let Some(r) = recorder.as_mut() {
        sinks.push(r);
    }
    sinks.push(&mut sink);
    let outcome = pipeline::run(
        &mut inputs,
        Some(Engine::new(config)),
        &mut Fanout(sinks),
        // Live output's notices begin with what they are about (`live: ...`).
        &mut |n| eprintln!("{}", escape(&n.text)),
        &stop,
    );
    output_error(sink.take_error())?;
    if let Some(r) = &recorder {
        eprintln!(
            "live --record: {} dumps written, the ring's memory at most {} KiB",
            r.written.len(),
            r.peak_bytes >> 10
        );
        if r.skipped > 0 || r.lost_while_writing() > 0 {
            eprintln!(
                "live --record: {} dumps skipped (the writer was two behind), {} frames and probe records not kept while dumps were written (--record-size was held by them)",
                r.skipped,
                r.lost_while_writing()
            );
        }
    }
    let mut stats = inputs.stats.clone();
    stats.transactions = sink.transactions;
    // Joined views need both inputs; with one, every transaction is one side's.
    stats.views = (a.probes && a.iface.is_some()).then_some(sink.views);
    stats.anomalies = sink.anomalies;
    stats.exporter = metrics.as_ref().map(|(_, e)| e.counters().snapshot());
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
    if let Some(v) = stats.views {
        eprintln!("live: {}", views_summary(&v));
    }
    if let Some(acked) = sink.acks_summary() {
        eprintln!("live: {acked}");
    }
    // The causes, as `report` leads with them: on stderr, beside the
    // summary (stdout carries the lines).
    if let Some(e) = outcome.engine.as_ref() {
        eprint!("live:{}", sink.diagnosis_text(e.state()));
    }
    match outcome
        .engine
        .as_ref()
        .and_then(|e| e.kernel().private_data.first())
    {
        Some(p) => {
            let hex: String = p.1.iter().map(|x| format!("{x:02x}")).collect();
            // On iWARP (siw, an RNIC) rdma_connect's private data goes in
            // the MPA Request, rdma_accept's in the MPA Reply.
            let iwarp = live_is_iwarp(outcome.engine.as_ref().map(|e| e.state()));
            let side = match (p.0, iwarp) {
                (ebpf_common::KprobeId::Connect, false) => "the client's REQ (rdma_connect)",
                (ebpf_common::KprobeId::Accept, false) => "the server's REP (rdma_accept)",
                (ebpf_common::KprobeId::Connect, true) => "the client's MPA Request (rdma_connect)",
                (ebpf_common::KprobeId::Accept, true) => "the server's MPA Reply (rdma_accept)",
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

/// Whether what `live` watched is iWARP: the wire's connections are all
/// iWARP's, or with none seen, every RDMA device of this host is an RNIC
/// (sysfs `node_type` 4: siw, cxgb4, irdma in iWARP mode).
/// How the wire's and the kernels' views of the run's XIDs came together:
/// an XID out twice, once per side, is counted twice in the transactions.
fn views_summary(v: &rdma_analyzer::counters::ViewCounts) -> String {
    let mut s = format!(
        "{} joined the wire's view with a kernel's, {} only the wire's, {} only a kernel's",
        v.joined, v.wire_only, v.kernel_only
    );
    if v.wire_only + v.kernel_only > 0 {
        s.push_str(" (an XID one side did not see, or one input ran more than 10 s behind the other: the JSON's `sources` say which)");
    }
    s
}

fn live_is_iwarp(state: Option<&rdma_analyzer::engine::State>) -> bool {
    let conns = state.map(|s| &s.connections);
    if let Some(cs) = conns.filter(|cs| !cs.is_empty()) {
        return cs.values().all(|c| c.is_iwarp());
    }
    rdma_analyzer::sources::counters::devices_all_iwarp()
}

fn write_stats(
    a: &LiveArgs,
    stats: &mut rdma_analyzer::sources::live::LiveStats,
    started: Instant,
) -> anyhow::Result<()> {
    stats.finish(started.elapsed().as_secs_f64(), sys::cpu_seconds());
    if let Some(p) = &a.stats_out {
        let mut text = serde_json::to_vec_pretty(&*stats)?;
        text.push(b'\n');
        safe_file::write_whole(p, &text)
            .with_context(|| format!("live --stats-out: writing {}", p.display()))?;
    }
    Ok(())
}

#[cfg(feature = "export")]
fn export(a: &ExportArgs) -> anyhow::Result<ExitCode> {
    let host = a
        .host
        .clone()
        .or_else(sys::hostname)
        .unwrap_or_else(|| "unknown".to_string());
    let mut datasets = Dataset::for_captures(&a.out, &host, a.row_group_rows, &a.files)
        .map_err(|e| anyhow::anyhow!("export: {e}"))?;
    // Checked in `run`; blank is everything, and records nothing.
    let filter = rdma_analyzer::cli::parse_filter(a.filter.as_deref())?;
    for d in &mut datasets {
        d.filter = (!filter.is_all()).then(|| filter.text().to_string());
    }
    std::fs::create_dir_all(&a.out).with_context(|| {
        format!(
            "export: creating the dataset folder {} (is its parent there and writable?)",
            a.out.display()
        )
    })?;
    // Every capture checked before any is written: a name already in the
    // dataset is refused unless --replace.
    if !a.replace {
        let there: Vec<String> = a
            .files
            .iter()
            .zip(&datasets)
            .filter(|(_, d)| !d.existing().is_empty())
            .map(|(f, d)| format!("{} (host={}/capture={})", f.display(), d.host, d.capture))
            .collect();
        if !there.is_empty() {
            anyhow::bail!(
                "export: already in {}: {}; nothing was written. Give --replace to replace them (all their tables and days), or rename the capture files to export them beside",
                a.out.display(),
                there.join(", ")
            );
        }
    }
    let mut damaged = 0;
    let mut unwritten = 0;
    let mut out = stdout();
    for (f, dataset) in a.files.iter().zip(&datasets) {
        // A capture that cannot be opened is not read, not a failed write.
        let source = match FileSource::open(f, &a.engine.config().stack) {
            Ok(s) => s,
            Err(e) => {
                eprintln!(
                    "rdma-analyzer: export: {}: {}",
                    escaped(f.display()),
                    escaped(format_args!("{e:#}"))
                );
                damaged += 1;
                continue;
            }
        };
        let (w, damage) = match export_one(a, dataset, source, f) {
            Ok(r) => r,
            Err(e) => {
                eprintln!(
                    "rdma-analyzer: export: {}: {}; nothing of this capture is in the dataset{}",
                    escaped(f.display()),
                    escaped(format_args!("{e:#}")),
                    if dataset_had(a, dataset) {
                        " (its earlier export is kept)"
                    } else {
                        ""
                    }
                );
                unwritten += 1;
                continue;
            }
        };
        let frames = if a.frames {
            format!(", {}", plural(w.frames, "frame", "frames"))
        } else {
            String::new()
        };
        writeln!(
            out,
            "{}: {}, {}, {}, {}{frames} -> host={}/capture={}{}",
            escaped(f.display()),
            plural(w.transactions, "transaction", "transactions"),
            plural(w.anomalies, "anomaly", "anomalies"),
            plural(w.connections, "connection", "connections"),
            plural(w.causes, "cause", "causes"),
            dataset.host,
            dataset.capture,
            dataset.filter.as_deref().map_or(String::new(), |t| format!(
                " (kept by --filter '{}')",
                escape(t)
            ))
        )?;
        if let Some(d) = damage {
            eprintln!(
                "rdma-analyzer: export: {}: {} (what came before is in the dataset)",
                escaped(f.display()),
                escaped(d)
            );
            damaged += 1;
        }
    }
    out.flush()?;
    if unwritten > 0 {
        eprintln!(
            "rdma-analyzer: export: {unwritten} of {} captures could not be written (see above); the others are in {}",
            a.files.len(),
            escaped(a.out.display())
        );
    }
    if damaged > 0 {
        eprintln!(
            "rdma-analyzer: export: {damaged} of {} captures could not be read whole; what came before the damage is in {}",
            a.files.len(),
            escaped(a.out.display())
        );
    }
    if unwritten + damaged > 0 {
        return Ok(ExitCode::from(EXIT_INCOMPLETE));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(feature = "export")]
/// Whether `dataset`'s capture was in the dataset before this run (and so,
/// after a failed --replace, still is).
fn dataset_had(a: &ExportArgs, dataset: &Dataset) -> bool {
    a.replace && !dataset.existing().is_empty()
}

/// `1 connection`, `2 connections` (issue 24: no "1 credits").
#[cfg(feature = "export")]
fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// One capture into the dataset: the findings, and with `--frames` every
/// frame, in one run over the capture; with `--frames` and a filter, the
/// frames of the kept rows in a second run (a frame goes by before the
/// transaction it belongs to is complete and judged). Returns the rows
/// written and where the capture is damaged, if it is.
#[cfg(feature = "export")]
fn export_one(
    a: &ExportArgs,
    dataset: &Dataset,
    mut source: FileSource,
    path: &std::path::Path,
) -> anyhow::Result<(Written, Option<String>)> {
    let config = a.engine.config();
    let stack = config.stack;
    let claim = dataset
        .claim(a.replace)
        .with_context(|| format!("writing into {}", dataset.root.display()))?;
    let mut sink = Export::new(dataset).with_acks(a.acks().unwrap_or_default());
    let filtered = dataset.filter.is_some();
    let mut frames = (a.frames && !filtered).then(|| ExportFrames::new(dataset, config.stack));
    let mut sinks: Vec<&mut dyn Sink> = frames.iter_mut().map(|f| f as &mut dyn Sink).collect();
    sinks.push(&mut sink);
    let outcome = pipeline::run(
        &mut source,
        Some(Engine::new(config)),
        &mut Fanout(sinks),
        &mut say,
        &Stop::new(),
    );
    let mut written = sink.written;
    if a.frames && filtered {
        let mut again = FileSource::open(path, &stack)
            .with_context(|| format!("reading {} again for its frames", path.display()))?;
        let only = sink.kept_frames().clone();
        frames = Some(ExportFrames::only(dataset, stack, only));
        if let Some(f) = frames.as_mut() {
            pipeline::run(&mut again, None, f, &mut say, &Stop::new());
        }
    }
    sink.finish()
        .with_context(|| format!("writing into {}", dataset.root.display()))?;
    if let Some(frames) = frames {
        written.frames = frames.written;
        frames
            .finish()
            .with_context(|| format!("writing frames into {}", dataset.root.display()))?;
    }
    claim.commit()?;
    Ok((written, outcome.end.error().map(str::to_string)))
}

/// A build without `export` (issue 24's lean build) says what it lacks.
#[cfg(not(feature = "export"))]
fn export(_: &ExportArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!(
        "export: this rdma-analyzer was built without Parquet export (cargo feature `export`); \
         rebuild with the default features: cargo install --locked --path analyzer"
    )
}

/// Starts the HTTP exporter on `addr` for `m`.
#[cfg(feature = "metrics-server")]
fn serve_metrics(addr: std::net::SocketAddr, m: &Metrics) -> anyhow::Result<Exporter> {
    Exporter::start(addr, m.exposition(Some(process()))).with_context(|| "live".to_string())
}

/// A build without `metrics-server` refuses `--metrics` before anything
/// starts; `report --metrics-out` still writes the exposition.
#[cfg(not(feature = "metrics-server"))]
fn serve_metrics(_: std::net::SocketAddr, _: &Metrics) -> anyhow::Result<Exporter> {
    anyhow::bail!(
        "live --metrics: this rdma-analyzer was built without the HTTP exporter (cargo feature \
         `metrics-server`); rebuild with the default features: cargo install --locked --path \
         analyzer"
    )
}

/// No exporter can exist in a build without one: `serve_metrics` refuses.
#[cfg(not(feature = "metrics-server"))]
enum Exporter {}

#[cfg(not(feature = "metrics-server"))]
impl Exporter {
    fn addr(&self) -> std::net::SocketAddr {
        match *self {}
    }

    fn counters(&self) -> &Self {
        self
    }

    fn snapshot(&self) -> rdma_analyzer::counters::ExporterStats {
        match *self {}
    }

    fn record_flag(&self) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
        match *self {}
    }
}
