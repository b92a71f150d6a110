//! The command line: what each subcommand takes, turned into the
//! configuration of the parts it runs.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::engine::{Config, MergeConfig};
use crate::output::clock::{FrameTime, TimeFormat};
use crate::output::metrics::MetricsConfig;
use crate::output::Filter;
use crate::sources::ebpf::ProbeEvents;
use crate::sources::live::LiveOptions;
use crate::synth::cli::SynthArgs;

/// RPC-over-RDMA (NFS/RDMA) protocol analyzer for RoCEv2 and InfiniBand.
#[derive(Parser)]
#[command(version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand)]
pub enum Command {
    /// Print every frame's dissection (text, or JSON Lines with --json).
    Frames(FramesArgs),
    /// Connections, response times, chunks, invalidation, credits, round trips, anomalies.
    Report(ReportArgs),
    /// One line (or JSON object) per RPC transaction, in call order (first transmission).
    Transactions(AnalyzeArgs),
    /// One line (or JSON object) per anomaly.
    Anomalies(AnalyzeArgs),
    /// Explore a capture in a terminal UI (--filter sets the initial filter).
    Open(AnalyzeArgs),
    /// Write a synthetic RoCEv2 NFS/RDMA capture, optionally with injected violations.
    Synth(SynthArgs),
    /// Watch live: kernel eBPF probes (--probes) and/or packet capture (-i IFACE).
    // Boxed: the largest arguments by far, and every other command pays for
    // the enum's size.
    Live(Box<LiveArgs>),
    /// Write captures as one Parquet dataset (transactions, anomalies, connections) for Spark, DuckDB, Trino.
    Export(ExportArgs),
    /// The NFS client's own counters (a copy of /proc/self/mountstats) beside a capture of the same window: every field both count, agree or differ (exit 1 when any differs).
    Mountstats(MountstatsArgs),
    /// Print the shell completion script for SHELL (bash: `rdma-analyzer completions bash > /etc/bash_completion.d/rdma-analyzer`).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print a man page, roff (`rdma-analyzer man > /usr/local/share/man/man1/rdma-analyzer.1`; `rdma-analyzer man report` for rdma-analyzer-report.1).
    Man {
        /// The subcommand whose page to print; without it, the main page.
        command: Option<String>,
    },
}

/// `rdma-analyzer frames`.
#[derive(Args)]
pub struct FramesArgs {
    /// Captures: pcap or pcapng files (plain, gzip or zstd), directories of
    /// them, `-` for standard input; several are merged by time.
    #[arg(required = true, value_name = "CAPTURE")]
    pub files: Vec<PathBuf>,
    /// One JSON object per frame.
    #[arg(long)]
    pub json: bool,
    /// How text lines give times, as tshark's -t: seconds since the first frame, UTC, or seconds since the previous frame.
    #[arg(short = 't', long = "time", value_enum, default_value = "relative")]
    pub time: FrameTime,
    /// Only the frames an expression selects: 'frame >= 100 && frame < 200', 'qpn == 0x17', 'opcode contains WRITE', 'xid == 0x9d5dd101', 'rkey == 0x1234', 'peer == 10.99.0.1', 'time < 2s', 'proc == READ'. Fields and examples: docs/filters.md.
    #[arg(long)]
    pub filter: Option<String>,
    /// UDP port that carries RoCEv2.
    #[arg(long, default_value_t = 4791)]
    pub rocev2_port: u16,
    /// TCP port whose segments are read as iWARP when they start with a plausible FPDU (an MPA Request/Reply is recognised on any port).
    #[arg(long, default_value_t = 20049)]
    pub iwarp_port: u16,
    /// Whether the iWARP connections negotiated MPA CRCs (a single frame cannot see the MPA exchange): unknown reads a matching CRC as valid and a zero one as none, and says CRC use is unknown; on checks every FPDU's CRC; off checks none.
    #[arg(long, value_enum, default_value = "unknown")]
    pub mpa_crc: MpaCrcArg,
    /// The run's memory.
    #[command(flatten)]
    pub memory: MemoryArgs,
}

/// `frames --mpa-crc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MpaCrcArg {
    /// Not known: a matching CRC is valid, a zero one none, and said so.
    Unknown,
    /// CRCs negotiated.
    On,
    /// No CRCs.
    Off,
}

impl FramesArgs {
    /// The dissector configuration `frames` runs with.
    pub fn stack_config(&self) -> rdma_dissectors::stack::Config {
        use rdma_dissectors::iwarp::frame::MpaCrc;
        rdma_dissectors::stack::Config::default()
            .with_rocev2_port(self.rocev2_port)
            .with_iwarp_frames(true)
            .with_iwarp_port(self.iwarp_port)
            .with_mpa_crc(match self.mpa_crc {
                MpaCrcArg::Unknown => MpaCrc::Unknown,
                MpaCrcArg::On => MpaCrc::On,
                MpaCrcArg::Off => MpaCrc::Off,
            })
    }
}

/// The options of the commands that analyze a capture file.
#[derive(Args)]
pub struct AnalyzeArgs {
    /// Captures: pcap or pcapng files (plain, gzip or zstd), directories of
    /// them, `-` for standard input; several are merged by time.
    #[arg(required = true, value_name = "CAPTURE")]
    pub files: Vec<PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
    /// Only what an expression selects, as Wireshark's display filters: 'c1 && proc == READ && latency > 10ms', 'frame == 147', 'severity >= warning', 'rkey == 0x1234'; a bare c3, XID, procedure or kind still works. Quote it for the shell. Fields and examples: docs/filters.md.
    #[arg(long)]
    pub filter: Option<String>,
    /// How text lines give times: seconds since the capture's first frame, or UTC (to line up with dmesg, mountstats snapshots, application logs).
    #[arg(short = 't', long = "time", value_enum, default_value = "relative")]
    pub time: TimeFormat,
    /// Acknowledge findings of these kinds (repeatable, or comma-separated): text hides them and says how many it hid, JSON marks them "acknowledged": true. See docs/reading-the-output.md.
    #[arg(long, value_name = "KIND[,KIND..]")]
    pub ignore: Vec<String>,
    /// A file of acknowledgements: a kind a line, optionally a connection (c3), a comment after #. See docs/reading-the-output.md.
    #[arg(long, value_name = "FILE")]
    pub ack: Option<PathBuf>,
    /// The engine's port and caps.
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// The engine's options for a capture file: the RoCEv2 port and the caps.
#[derive(Args)]
pub struct EngineArgs {
    /// UDP port that carries RoCEv2.
    #[arg(long, default_value_t = 4791)]
    pub rocev2_port: u16,
    /// Most connections tracked at once.
    #[arg(long, default_value_t = 4096)]
    pub max_connections: usize,
    /// Most queue pairs tracked at once.
    #[arg(long, default_value_t = 16384)]
    pub max_qps: usize,
    /// Most outstanding calls per connection.
    #[arg(long, default_value_t = 65536)]
    pub max_outstanding: usize,
    /// The run's memory.
    #[command(flatten)]
    pub memory: MemoryArgs,
}

/// `--memory-limit`, the one flag every command that analyzes takes; how it
/// is shared is `crate::budget`'s.
#[derive(Debug, Clone, Copy, Args)]
pub struct MemoryArgs {
    /// Memory all the analysis state may hold together (K, M, G suffixes):
    /// the engine's connections, queue pairs and outstanding calls, the
    /// TUI's tables, the report's per-procedure tables, the metrics' series
    /// and the exporter's connections. What it cannot hold goes oldest
    /// first, counted and reported. It also bounds the window a zstd input
    /// may ask for (held besides: a `zstd --long=31` stream needs 2G).
    #[arg(long = "memory-limit", value_name = "MEMORY_LIMIT", default_value = "256M", value_parser = parse_memory)]
    pub limit: usize,
}

/// Inputs as named on the command line, one string.
pub fn inputs_name(files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Seconds since the epoch, with a fraction (`date +%s.%N`), as ns.
fn parse_epoch(s: &str) -> Result<u64, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not seconds since the epoch (date +%s.%N gives one)"))?;
    if !(0.0..1.0e11).contains(&secs) {
        return Err(format!("{s:?} is not a time this capture can have"));
    }
    // A double keeps a present-day time to about 0.2 µs: finer than any
    // snapshot's moment is known.
    Ok((secs * 1e9).round() as u64)
}

fn parse_memory(s: &str) -> Result<usize, String> {
    let n = crate::synth::parse_size(s)?;
    let n =
        usize::try_from(n).map_err(|_| format!("{s:?} is more than this machine can address"))?;
    if n < 1 << 20 {
        return Err(format!(
            "{s:?} is less than 1M: too little to analyze anything"
        ));
    }
    Ok(n)
}

/// `--counters-interval`: seconds, 0 (off) or at least 0.1 (below, the
/// sampler would spend more on sysfs than the wire costs).
fn parse_interval(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if !v.is_finite() || v < 0.0 || (v > 0.0 && v < 0.1) {
        return Err(format!(
            "{s:?}: give 0 (the sampler off) or at least 0.1 seconds"
        ));
    }
    Ok(v)
}

impl EngineArgs {
    /// The engine's configuration.
    pub fn config(&self) -> Config {
        let mut c = Config::default();
        c.stack = c.stack.with_rocev2_port(self.rocev2_port);
        c.memory_limit = self.memory.limit;
        c.max_connections = self.max_connections.max(1);
        c.max_qps = self.max_qps.max(2);
        c.max_outstanding = self.max_outstanding.max(1);
        c
    }
}

impl AnalyzeArgs {
    /// The engine's configuration.
    pub fn config(&self) -> Config {
        self.engine.config()
    }

    /// The inputs as one name (`report`'s `file`, messages).
    pub fn name(&self) -> String {
        inputs_name(&self.files)
    }

    /// What `--filter` selects (checked by `main` before the run).
    pub fn filter(&self) -> Filter {
        parse_filter(self.filter.as_deref()).unwrap_or(Filter::All)
    }

    /// The acknowledgements of `--ignore` and `--ack`.
    ///
    /// # Errors
    /// An unreadable file, an unknown kind or a malformed line, said with
    /// the file and line.
    pub fn acks(&self) -> Result<crate::output::ack::Acks, String> {
        read_acks(&self.ignore, self.ack.as_deref())
    }
}

/// The acknowledgements of `--ignore` values and an `--ack` file.
///
/// # Errors
/// As [`AnalyzeArgs::acks`].
pub fn read_acks(
    ignore: &[String],
    ack: Option<&std::path::Path>,
) -> Result<crate::output::ack::Acks, String> {
    let text = match ack {
        Some(p) => Some(
            std::fs::read_to_string(p)
                .map_err(|e| format!("--ack {}: cannot read it: {e}", p.display()))?,
        ),
        None => None,
    };
    let file = ack.map(|p| p.display().to_string());
    let ack = file.as_deref().zip(text.as_deref());
    crate::output::ack::Acks::new(ignore, ack)
}

/// A `--filter` value: everything when absent. `main` checks it before
/// the run (a usage error, exit 2, its message escaped: clap would echo a
/// hostile value raw to the terminal).
pub fn parse_filter(s: Option<&str>) -> Result<Filter, crate::output::filter::FilterError> {
    s.map_or(Ok(Filter::All), Filter::parse)
}

/// `rdma-analyzer report`.
#[derive(Args)]
pub struct ReportArgs {
    /// The capture and how to analyze it.
    #[command(flatten)]
    pub analyze: AnalyzeArgs,
    /// Also write the capture's Prometheus metrics to this file (node_exporter's textfile collector format: written aside, then renamed into place).
    #[arg(long, value_name = "FILE")]
    pub metrics_out: Option<PathBuf>,
    /// The metrics' cardinality caps.
    #[command(flatten)]
    pub metrics_caps: MetricsArgs,
    /// The client's /proc/self/mountstats at the end of the capture (`cat /proc/self/mountstats > after`): the diagnosis then checks the causes only the kernel sees (no_remote_invalidation, mr_exhaustion).
    #[arg(long = "mountstats", value_name = "AFTER")]
    pub mountstats: Option<PathBuf>,
    /// mountstats at the capture's start (as `mountstats --before`); without it the counters run from each mount's start.
    #[arg(
        long = "mountstats-before",
        value_name = "BEFORE",
        requires = "mountstats"
    )]
    pub mountstats_before: Option<PathBuf>,
}

/// The cardinality caps of the metrics (docs/fleet.md).
#[derive(Debug, Clone, Args)]
pub struct MetricsArgs {
    /// Connections with series of their own in the metrics (the most recently active; the others are counted in rdma_metrics_connections_unlabelled).
    #[arg(long, default_value_t = 256, value_name = "N")]
    pub metrics_max_connections: usize,
    /// Distinct procedures with series of their own; later ones are counted under procedure="(other)".
    #[arg(long, default_value_t = 256, value_name = "N")]
    pub metrics_max_procedures: usize,
}

impl MetricsArgs {
    /// The metrics' configuration, within `bytes` of memory (their share
    /// of `--memory-limit`).
    pub fn config(&self, bytes: usize) -> MetricsConfig {
        MetricsConfig {
            max_connections: self.metrics_max_connections,
            max_procedures: self.metrics_max_procedures.max(1),
        }
        .within(bytes)
    }
}

/// `rdma-analyzer mountstats`.
#[derive(Args)]
pub struct MountstatsArgs {
    /// mountstats at the end of the window (`cat /proc/self/mountstats > after`).
    #[arg(value_name = "AFTER")]
    pub after: PathBuf,
    /// mountstats at the start of the window; without it every counter is
    /// taken from the mount's start, so the capture must hold the mount's
    /// whole life.
    #[arg(long, value_name = "BEFORE")]
    pub before: Option<PathBuf>,
    /// The capture of the window (pcap or pcapng; several are merged by time).
    #[arg(long = "capture", required = true, value_name = "CAPTURE")]
    pub captures: Vec<PathBuf>,
    /// When BEFORE was taken, seconds since the epoch (`date +%s.%N`): the
    /// capture counts from then. Default: from its start.
    #[arg(long, value_name = "SECONDS", value_parser = parse_epoch)]
    pub since: Option<u64>,
    /// When AFTER was taken, seconds since the epoch: the capture counts
    /// until then (an unmount's RPCs come after its last snapshot).
    /// Default: to its end.
    #[arg(long, value_name = "SECONDS", value_parser = parse_epoch)]
    pub until: Option<u64>,
    /// The RDMA device counters of the capturing host over the same window:
    /// a dump of `/sys/class/infiniband/*/ports/*/hw_counters` readings,
    /// each opened by a `# LABEL SECONDS` line (the lab's
    /// `device-counters.txt`). Compared between its first and last reading,
    /// with the capture's frames between those times.
    #[arg(long, value_name = "FILE")]
    pub device_counters: Option<PathBuf>,
    /// The address of the host whose device the counters are (default: the
    /// one address in the capture that is not the mount's server).
    #[arg(long, value_name = "ADDR", requires = "device_counters")]
    pub device_host: Option<std::net::IpAddr>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
    /// The engine's port and caps.
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// `rdma-analyzer export`.
#[derive(Args)]
pub struct ExportArgs {
    /// pcap or pcapng files; each is one capture of the dataset (`capture=` its file name without the extension).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The dataset's folder: transactions/, anomalies/, connections/ (and frames/) with host=/capture=/date= partitions below; created when missing.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: PathBuf,
    /// The host the captures come from (`host=`); default: this host's name.
    #[arg(long)]
    pub host: Option<String>,
    /// Also write every frame's headers (the frames table; as large as the capture's frame count).
    #[arg(long)]
    pub frames: bool,
    /// Replace a capture already in the dataset (all its tables and days, once the new export is whole); without it, a capture name already there is refused.
    #[arg(long)]
    pub replace: bool,
    /// Rows per Parquet row group at most (memory holds one row group per open file).
    #[arg(long, default_value_t = 131_072, value_name = "N")]
    pub row_group_rows: usize,
    /// Only the rows an expression selects, as `report --filter` takes it ('proc == WRITE && latency > 10ms'): transactions, findings, the causes computed on them, the connections they are on (with --frames, the frames of the kept rows, in a second read of the capture: a frame goes by before its transaction is judged). Every other file's Parquet metadata records it (key rdma_analyzer.filter). Fields: docs/filters.md.
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// Acknowledge findings of these kinds (repeatable, or comma-separated): their rows stay in the anomalies table with `acknowledged` true (query `WHERE NOT acknowledged`). See docs/reading-the-output.md.
    #[arg(long, value_name = "KIND[,KIND..]")]
    pub ignore: Vec<String>,
    /// A file of acknowledgements (a kind a line, optionally a connection, # comments), marked as --ignore marks them.
    #[arg(long, value_name = "FILE")]
    pub ack: Option<PathBuf>,
    /// The engine's port and caps.
    #[command(flatten)]
    pub engine: EngineArgs,
}

impl ExportArgs {
    /// The acknowledgements of `--ignore` and `--ack`.
    ///
    /// # Errors
    /// As [`AnalyzeArgs::acks`].
    pub fn acks(&self) -> Result<crate::output::ack::Acks, String> {
        read_acks(&self.ignore, self.ack.as_deref())
    }
}

/// `rdma-analyzer live` options.
#[derive(Debug, Clone, Args)]
pub struct LiveArgs {
    /// Watch the kernel's RPC-over-RDMA stack through eBPF probes.
    #[arg(long)]
    pub probes: bool,
    /// Capture packets on this interface (soft-RoCE, port mirrors).
    #[arg(short = 'i', long = "interface")]
    pub iface: Option<String>,
    /// Capture filter (BPF syntax, as tcpdump takes it): what the kernel hands over. The default takes RoCEv2 (UDP 4791) and NFS/RDMA over iWARP (TCP 20049, the port the server listens on); iWARP on another port needs its own, e.g. 'udp port 4791 or tcp port 4420'.
    #[arg(long = "bpf", default_value = LIVE_DEFAULT_BPF)]
    pub bpf: String,
    /// Only what an expression selects, as `report --filter` takes it: 'c1 && proc == READ', 'latency > 10ms', 'severity >= warning'. The lines, the counts and the diagnosis at the end are of what it keeps (the metrics and --record see everything); what is captured is --bpf. Fields and examples: docs/filters.md.
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// Save captured frames to this pcapng file.
    #[arg(long)]
    pub write: Option<PathBuf>,
    /// The kernel's capture ring (K, M, G suffixes; default 32M): what
    /// absorbs a burst, or a moment the analyzer is not scheduled, before
    /// frames are dropped. It is resident memory once filled.
    #[arg(long, value_name = "BYTES", value_parser = parse_memory)]
    pub capture_buffer: Option<usize>,
    /// Stop after this many seconds.
    #[arg(long)]
    pub duration: Option<f64>,
    /// Write transactions and anomalies as JSON Lines to this file (headless).
    #[arg(long)]
    pub json_out: Option<PathBuf>,
    /// Write the run's counters (records, losses, rates) as JSON to this file.
    #[arg(long)]
    pub stats_out: Option<PathBuf>,
    /// Also attach to this tracepoint (`system:event`); for benchmarks.
    #[arg(long = "tracepoint", value_name = "SYSTEM:EVENT")]
    pub extra_tracepoints: Vec<String>,
    /// Do not attach the CM private-data kprobes.
    #[arg(long)]
    pub no_kprobes: bool,
    /// Attach every tracepoint of the RDMA systems and copy each whole,
    /// not only the events the analyzer uses cut to the fields it reads:
    /// for counting what the kernel says (`per_event` in --stats-out), at
    /// several times the kernel CPU per RPC.
    #[arg(long)]
    pub all_probe_events: bool,
    /// UDP port that carries RoCEv2.
    #[arg(long, default_value_t = 4791)]
    pub rocev2_port: u16,
    /// Text output even on a terminal (the TUI is the default there).
    #[arg(long)]
    pub no_tui: bool,
    /// Acknowledge findings of these kinds (repeatable, or comma-separated): the text lines hide them, --json-out marks them "acknowledged": true, the TUI keeps them apart, --metrics counts them in rdma_anomalies_acknowledged_total instead of rdma_anomalies_total. See docs/reading-the-output.md.
    #[arg(long, value_name = "KIND[,KIND..]")]
    pub ignore: Vec<String>,
    /// A file of acknowledgements (a kind a line, optionally a connection, # comments), applied as --ignore applies them.
    #[arg(long, value_name = "FILE")]
    pub ack: Option<PathBuf>,
    /// Read the NFS client's counters (/proc/self/mountstats, RDMA mounts) and the RDMA devices' (sysfs hw_counters and counters) every SECONDS: `counters` records in --json-out (totals, deltas since the last sample and since start), the TUI's Counters screen (7), and the diagnosis checks no_remote_invalidation and mr_exhaustion from the growth since the first sample. 0 turns it off.
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0, value_parser = parse_interval)]
    pub counters_interval: f64,
    /// The mountstats the counter sampler reads (default /proc/self/mountstats).
    #[arg(long, value_name = "FILE")]
    pub mountstats_file: Option<PathBuf>,
    /// The sysfs directory of the RDMA devices the counter sampler reads, laid out as /sys/class/infiniband (DEV/ports/N/hw_counters/NAME).
    #[arg(long, value_name = "DIR")]
    pub sysfs_root: Option<PathBuf>,
    /// The run's memory.
    #[command(flatten)]
    pub memory: MemoryArgs,
    /// Serve Prometheus metrics at http://ADDR/metrics, beside the TUI or, with --no-tui, as a service until SIGTERM. Without ADDR: 127.0.0.1:9464, this host only; to be scraped from elsewhere, give an address of a firewalled interface or serve through a reverse proxy (docs/fleet.md).
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:9464")]
    pub metrics: Option<SocketAddr>,
    /// The metrics' cardinality caps.
    #[command(flatten)]
    pub metrics_caps: MetricsArgs,
    /// The sliding window of the diagnosis's live causes (30s, 5m, ...): --metrics' rdma_diagnosis_window_cause_impact and --json-out's "diagnosis" records name the causes over its last stretch of the capture clock, so a cause that is gone stops being named (docs/diagnosis.md).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_window)]
    pub diagnosis_window: u64,
    /// The flight recorder.
    #[command(flatten)]
    pub record: RecordArgs,
}

/// `live --record`: the flight recorder's options (docs/recorder.md).
#[derive(Debug, Clone, Args)]
pub struct RecordArgs {
    /// Keep the last seconds of frames and probe records in memory and, when a trigger fires, write them to a pcapng in DIR (rdma-YYYYmmddTHHMMSSZ-TRIGGER.pcapng): the frames, the findings as packet comments, the trigger as the section comment, the probe records and mountstats in custom blocks.
    #[arg(long, value_name = "DIR")]
    pub record: Option<PathBuf>,
    /// What fires a dump (repeatable): finding:KIND, severity>=info|warning|error, cause:NAME (a diagnosis cause), reconnect (a CM DREQ, or a client that connects again), latency>DURATION (latency>2s), sigusr1. Default: reconnect; sigusr1 always, and with --metrics a POST to http://ADDR/record (an Alertmanager webhook).
    #[arg(long = "record-on", value_name = "TRIGGER", value_parser = crate::recorder::trigger::parse)]
    pub record_on: Vec<crate::recorder::Trigger>,
    /// How much before a trigger a dump holds (2s, 500ms, 1m).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_ns)]
    pub record_before: u64,
    /// How long recording goes on after the last trigger before the dump is written.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_ns)]
    pub record_after: u64,
    /// The recorder's memory at most (K, M, G), counted inside --memory-limit (at most a quarter of it): the oldest frames go first when full.
    #[arg(long, value_name = "BYTES", default_value = "64M", value_parser = parse_memory)]
    pub record_size: usize,
    /// Bytes of each frame kept (default: whole frames).
    #[arg(long, value_name = "BYTES")]
    pub record_snaplen: Option<u32>,
    /// Dumps kept in DIR at most; the oldest of this recorder's dumps are deleted.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub record_keep: usize,
    /// Bytes of dumps kept in DIR at most (K, M, G); the oldest are deleted (the newest always stays).
    #[arg(long, value_name = "BYTES", default_value = "1G", value_parser = crate::synth::parse_size)]
    pub record_max_bytes: u64,
}

/// A window's width: a duration of at least a second, as ns (its ten
/// intervals are then at least 100 ms, a few of the pipeline's pumps).
fn parse_window(s: &str) -> Result<u64, String> {
    let ns = parse_ns(s)?;
    if ns < 1_000_000_000 {
        return Err(format!(
            "{s:?} is shorter than the 1s a window takes at least"
        ));
    }
    Ok(ns)
}

/// A duration with a unit (`30s`, `500ms`), as ns.
fn parse_ns(s: &str) -> Result<u64, String> {
    crate::recorder::trigger::parse_duration_us(s).map(|us| (us * 1e3) as u64)
}

impl RecordArgs {
    /// The recorder's configuration, when `--record` is given.
    pub fn config(&self) -> Option<crate::recorder::RecordConfig> {
        use crate::recorder::Trigger;
        let dir = self.record.clone()?;
        let mut triggers = self.record_on.clone();
        if triggers.is_empty() {
            triggers.push(Trigger::Reconnect);
        }
        if !triggers.contains(&Trigger::Signal) {
            triggers.push(Trigger::Signal);
        }
        Some(crate::recorder::RecordConfig {
            dir,
            before_ns: self.record_before,
            after_ns: self.record_after,
            ring_bytes: self.record_size,
            snaplen: self.record_snaplen.map(|s| s.max(1)),
            triggers,
            keep: self.record_keep.max(1),
            max_total: Some(self.record_max_bytes),
        })
    }
}

/// `live --bpf`'s default: RoCEv2's port, and NFS/RDMA's over iWARP (the
/// MPA exchange and the FPDUs of a connection to the server's port 20049).
const LIVE_DEFAULT_BPF: &str = "udp port 4791 or tcp port 20049";

/// Whether `s` reads as a BPF capture filter (tcpdump's primitives):
/// what `live --filter` took before it took the display filter language.
pub fn looks_like_bpf(s: &str) -> bool {
    const WORDS: &[&str] = &[
        "udp",
        "tcp",
        "port",
        "portrange",
        "host",
        "net",
        "ether",
        "ip",
        "ip6",
        "src",
        "dst",
        "vlan",
        "proto",
        "icmp",
        "arp",
        "and",
        "or",
        "not",
        "less",
        "greater",
    ];
    s.split(|c: char| c.is_whitespace() || "()[]".contains(c))
        .any(|w| WORDS.contains(&w.to_ascii_lowercase().as_str()))
}

impl LiveArgs {
    /// The acknowledgements of `--ignore` and `--ack`.
    ///
    /// # Errors
    /// As [`AnalyzeArgs::acks`].
    pub fn acks(&self) -> Result<crate::output::ack::Acks, String> {
        read_acks(&self.ignore, self.ack.as_deref())
    }

    /// `live --filter` was an alias of `--bpf`: a BPF expression given
    /// there (one the display filter language does not parse) still
    /// selects what it says, as a capture filter, when `--bpf` is not
    /// given too. The warning to print when that happened.
    pub fn take_bpf_from_filter(&mut self) -> Option<String> {
        let text = self.filter.clone()?;
        if Filter::parse(&text).is_ok() || !looks_like_bpf(&text) || self.bpf != LIVE_DEFAULT_BPF {
            return None;
        }
        self.bpf.clone_from(&text);
        self.filter = None;
        Some(format!(
            "live: --filter takes the display filter language now (as report does); '{text}' reads as a BPF capture filter and is used as one: write --bpf '{text}' (deprecated, to be refused in a later release)"
        ))
    }

    /// What to watch.
    pub fn options(&self) -> LiveOptions {
        LiveOptions {
            probes: self.probes,
            iface: self.iface.clone(),
            bpf: self.bpf.clone(),
            write: self.write.clone(),
            capture_buffer: self.capture_buffer,
            extra_tracepoints: self.extra_tracepoints.clone(),
            no_kprobes: self.no_kprobes,
            stack: self.config().stack,
            probe_events: if self.all_probe_events {
                ProbeEvents::All
            } else {
                ProbeEvents::Used
            },
        }
    }

    /// The engine's configuration: with probes, the wire's and the kernels'
    /// views of each XID are joined into one transaction.
    pub fn config(&self) -> Config {
        Config {
            stack: Config::default().stack.with_rocev2_port(self.rocev2_port),
            memory_limit: self.memory.limit,
            merge: self.probes.then(MergeConfig::default),
            ..Config::default()
        }
    }
}
