//! The `rdma-analyzer` command line: argument parsing and wiring only.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use rdma_analyzer::analyze;
use rdma_analyzer::engine::{Config, Finding};
use rdma_analyzer::frames;
use rdma_analyzer::report::{self, Filter, Report};

/// RPC-over-RDMA (NFS/RDMA) protocol analyzer for RoCEv2 and InfiniBand.
#[derive(Parser)]
#[command(version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print every frame's dissection (text, or JSON Lines with --json).
    Frames {
        /// pcap or pcapng file.
        file: PathBuf,
        /// One JSON object per frame.
        #[arg(long)]
        json: bool,
        /// UDP port that carries RoCEv2.
        #[arg(long, default_value_t = 4791)]
        rocev2_port: u16,
    },
    /// Connections, response times, chunks, invalidation, credits, round trips, anomalies.
    Report(AnalyzeArgs),
    /// One line (or JSON object) per RPC transaction.
    Transactions(AnalyzeArgs),
    /// One line (or JSON object) per anomaly.
    Anomalies(AnalyzeArgs),
    /// Explore a capture in a terminal UI (--filter sets the initial filter).
    Open(AnalyzeArgs),
    /// Write a synthetic RoCEv2 NFS/RDMA capture, optionally with injected violations.
    Synth(rdma_analyzer::synth::cli::SynthArgs),
    /// Watch live: kernel eBPF probes (--probes) and/or packet capture (-i IFACE).
    Live(rdma_analyzer::sources::live::LiveArgs),
}

#[derive(Args)]
struct AnalyzeArgs {
    /// pcap or pcapng file.
    file: PathBuf,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
    /// Only a connection (c3), an XID (0x1234abcd), a procedure (READ) or an anomaly kind (credit_overrun).
    #[arg(long)]
    filter: Option<String>,
    /// UDP port that carries RoCEv2.
    #[arg(long, default_value_t = 4791)]
    rocev2_port: u16,
    /// Most connections tracked at once.
    #[arg(long, default_value_t = 4096)]
    max_connections: usize,
    /// Most queue pairs tracked at once.
    #[arg(long, default_value_t = 16384)]
    max_qps: usize,
    /// Most outstanding calls per connection.
    #[arg(long, default_value_t = 65536)]
    max_outstanding: usize,
}

impl AnalyzeArgs {
    fn config(&self) -> Config {
        let mut c = Config::default();
        c.stack.rocev2_port = self.rocev2_port;
        c.max_connections = self.max_connections.max(1);
        c.max_qps = self.max_qps.max(2);
        c.max_outstanding = self.max_outstanding.max(1);
        c
    }

    fn filter(&self) -> Filter {
        self.filter.as_deref().map_or(Filter::All, Filter::parse)
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            // A closed pipe (`| head`) is not an error worth a message.
            if e.downcast_ref::<io::Error>()
                .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            eprintln!("rdma-analyzer: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    match cli.command {
        Command::Frames {
            file,
            json,
            rocev2_port,
        } => {
            let code = frames::print(&file, json, rocev2_port, &mut out)?;
            out.flush()?;
            Ok(code)
        }
        Command::Report(a) => {
            let filter = a.filter();
            let mut rep = Report::new(filter);
            let outcome = analyze::run_file(&a.file, a.config(), |f| rep.add(&f))
                .with_context(|| format!("reading {}", a.file.display()))?;
            let err = outcome.error.as_ref().map(ToString::to_string);
            let name = a.file.display().to_string();
            if a.json {
                serde_json::to_writer_pretty(
                    &mut out,
                    &rep.to_json(outcome.engine.state(), &name, err.clone()),
                )?;
                writeln!(out)?;
            } else {
                write!(
                    out,
                    "{}",
                    rep.to_text(outcome.engine.state(), &name, err.as_deref())
                )?;
            }
            out.flush()?;
            finish(err)
        }
        Command::Transactions(a) => stream(a, true, &mut out),
        Command::Anomalies(a) => stream(a, false, &mut out),
        Command::Synth(a) => rdma_analyzer::synth::cli::run(&a),
        Command::Open(a) => rdma_analyzer::tui::open(&a.file, a.config(), a.filter.clone()),
        Command::Live(a) => rdma_analyzer::sources::live::run(&a),
    }
}

/// Streams transactions or anomalies as the engine finds them.
fn stream(a: AnalyzeArgs, transactions: bool, out: &mut impl Write) -> anyhow::Result<ExitCode> {
    let filter = a.filter();
    let mut io_err: Option<io::Error> = None;
    let outcome = analyze::run_file(&a.file, a.config(), |f| {
        if io_err.is_some() {
            return;
        }
        let r = match (&f, transactions) {
            (Finding::Transaction(t), true) if filter.txn(t) => {
                if a.json {
                    serde_json::to_writer(&mut *out, &report::transaction_json(t))
                        .map_err(io::Error::from)
                        .and_then(|()| writeln!(out))
                } else {
                    writeln!(out, "{}", report::transaction_line(t))
                }
            }
            (Finding::Anomaly(an), false) if filter.anomaly(an) => {
                if a.json {
                    serde_json::to_writer(&mut *out, &report::anomaly_json(an))
                        .map_err(io::Error::from)
                        .and_then(|()| writeln!(out))
                } else {
                    writeln!(out, "{}", report::anomaly_line(an))
                }
            }
            _ => Ok(()),
        };
        if let Err(e) = r {
            io_err = Some(e);
        }
    })
    .with_context(|| format!("reading {}", a.file.display()))?;
    if let Some(e) = io_err {
        return Err(e.into());
    }
    out.flush()?;
    finish(outcome.error.map(|e| e.to_string()))
}

fn finish(err: Option<String>) -> anyhow::Result<ExitCode> {
    match err {
        Some(e) => {
            eprintln!("rdma-analyzer: {e}");
            Ok(ExitCode::from(2))
        }
        None => Ok(ExitCode::SUCCESS),
    }
}
