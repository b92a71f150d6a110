//! The `synth` subcommand: options and the run.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::Args;

use super::iwarp::{generate_iwarp, Fault, IwarpOptions};
use super::{hostile, parse_size, sidecar_path, write_files, Inject, Mix, Options};

/// `rdma-analyzer synth`: write a synthetic RoCEv2 NFS/RDMA capture.
#[derive(Debug, Args)]
pub struct SynthArgs {
    /// Output pcap file (a FILE.expected.json sidecar is written next to it).
    #[arg(short = 'o', long = "output")]
    pub output: PathBuf,
    /// RPC calls of clean traffic (ignored with --size).
    #[arg(long, default_value_t = 100)]
    pub calls: u64,
    /// Connections the calls are spread over.
    #[arg(long, default_value_t = 1)]
    pub connections: u32,
    /// Call type weights: inline (NFSv3 GETATTR/LOOKUP/ACCESS), read, write, readdir, compound (NFSv4.1), longcall (position-zero read chunk).
    #[arg(long, default_value = "inline=35,read=30,write=25,readdir=5,compound=3,longcall=2", value_parser = parse_mix)]
    pub mix: Mix,
    /// Bytes per READ and WRITE (K, M suffixes allowed).
    #[arg(long, default_value = "64K", value_parser = parse_u32_size)]
    pub io_size: u32,
    /// Path MTU: 256, 512, 1024, 2048 or 4096.
    #[arg(long, default_value_t = 1024)]
    pub mtu: u32,
    /// Calls each client keeps in flight.
    #[arg(long, default_value_t = 16)]
    pub window: u32,
    /// Credits each reply grants.
    #[arg(long, default_value_t = 64)]
    pub credits: u32,
    /// Credits each call asks for.
    #[arg(long, default_value_t = 128)]
    pub credits_requested: u32,
    /// Inline threshold both peers advertise in their RFC 8797 private data.
    #[arg(long, default_value = "4K", value_parser = parse_u32_size)]
    pub inline_threshold: u32,
    /// Clear R in both peers' private data: no Send With Invalidate.
    #[arg(long)]
    pub no_remote_invalidation: bool,
    /// Keep generating until the file reaches this size (e.g. 2G).
    #[arg(long, value_parser = parse_size)]
    pub size: Option<u64>,
    /// PRNG seed: the same seed gives the same bytes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Violations to inject, comma-separated (e.g. credit_overrun,err_chunk), or "all".
    ///
    /// Kinds: credit_overrun, zero_credit_grant, remote_invalidation_not_negotiated,
    /// invalidated_foreign_stag, inline_threshold_exceeded, err_vers, err_chunk,
    /// short_header, xid_mismatch, msgp_used, done_used, version_mismatch, bad_proc,
    /// rdma_outside_chunk, psn_wrap (not a violation: PSNs start just below 2^24),
    /// icrc_mismatch, read_list_in_reply, nomsg_without_chunks, error_from_requester,
    /// reply_without_call, call_without_reply. Each anomaly they cause is listed with
    /// its frames in FILE.expected.json.
    #[arg(long, value_delimiter = ',')]
    pub inject: Vec<String>,
    /// Microsecond timestamps (default nanosecond).
    #[arg(long)]
    pub microseconds: bool,
    /// How frames carry the IBA transport: rocev2 (Ethernet, IPv4, UDP),
    /// rocev1 (Ethernet and a GRH) or ib (native InfiniBand, DLT 247).
    #[arg(long, default_value = "rocev2")]
    pub framing: super::wire::Framing,
    /// The first connection's queue pair numbers (hex with 0x, or decimal);
    /// the next connections count up from it. 0xabc000 gives 24-bit QPNs.
    #[arg(long, default_value = "0x11", value_parser = parse_qpn)]
    pub qpn_base: u32,
    /// Instead of NFS traffic, a capture built to hurt the analyzer:
    /// unanswered (--connections x --calls unanswered calls), qp-flood
    /// (--connections queue pairs), stray-psn, xid-reuse (--calls calls of
    /// one XID), time-backwards, wrong-peer, nomsg-reply-chunk-call,
    /// unowned-flood (--connections waiting for their client QP, then --calls
    /// frames to QPs no connection owns), stray-psn-at-start (after the CM
    /// exchange), stray-psn-first (the same without it), many-labels (--calls
    /// calls of distinct procedure numbers); and damaged containers of clean
    /// traffic (--connections, --calls): gzip-no-trailer, joined-gzip,
    /// zstd-long-window.
    #[arg(long, value_name = "CASE")]
    pub hostile: Option<hostile::Case>,
    /// The fabric: rocev2 (see --framing) or iwarp (NFS/RDMA over
    /// RDMAP/DDP/MPA on TCP port 20049, one connection; uses --calls,
    /// --seed, --io-size, --inline-threshold, --no-remote-invalidation).
    #[arg(long, default_value = "rocev2", value_parser = ["rocev2", "iwarp"])]
    pub fabric: String,
    /// iWARP: both ends ask for MPA markers (RFC 5044 section 4.3).
    #[arg(long)]
    pub markers: bool,
    /// iWARP: no CRC on the FPDUs (as siw negotiates by default).
    #[arg(long)]
    pub no_crc: bool,
    /// iWARP: faults, comma-separated, or "all": mid_stream (the capture
    /// starts inside call 1), lost_segment (2), reorder (3), retransmit
    /// (4), overlap (5), bad_crc (call 6's reply), terminate (after the
    /// last call). FILE.expected.json lists every FPDU, gap and
    /// resynchronisation a reader must report.
    #[arg(long, value_delimiter = ',')]
    pub iwarp_faults: Vec<String>,
}

fn parse_mix(s: &str) -> Result<Mix, String> {
    s.parse()
}

/// A queue pair number: `0x…` hex or decimal, at most 24 bits.
fn parse_qpn(s: &str) -> Result<u32, String> {
    let n = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => s.parse(),
    }
    .map_err(|e| format!("{s:?} is not a QPN ({e}): give 0x… hex or a decimal number"))?;
    if n > 0xff_ffff {
        return Err(format!("{s} is wider than a QPN's 24 bits"));
    }
    Ok(n)
}

fn parse_u32_size(s: &str) -> Result<u32, String> {
    let n = parse_size(s)?;
    u32::try_from(n).map_err(|_| format!("{s:?} is too large (at most 4G-1)"))
}

impl SynthArgs {
    /// The generator options these arguments describe.
    ///
    /// # Errors
    /// An unknown injection name.
    pub fn options(&self) -> Result<Options, String> {
        let mut inject = Vec::new();
        for name in self
            .inject
            .iter()
            .map(|s| s.trim())
            .filter(|s| !s.is_empty())
        {
            if name == "all" {
                inject.extend(Inject::ALL);
            } else {
                inject.push(name.parse::<Inject>()?);
            }
        }
        inject.sort();
        inject.dedup();
        Ok(Options {
            calls: self.calls,
            connections: self.connections,
            mix: self.mix,
            io_size: self.io_size,
            mtu: self.mtu,
            window: self.window,
            credits_requested: self.credits_requested,
            credits_granted: self.credits,
            inline_threshold: self.inline_threshold,
            remote_invalidation: !self.no_remote_invalidation,
            size: self.size,
            seed: self.seed,
            inject,
            microseconds: self.microseconds,
            framing: self.framing,
            qpn_base: self.qpn_base,
        })
    }
}

/// Runs the subcommand: writes the capture and its sidecar, then one line
/// of what was written to stderr.
///
/// # Errors
/// Bad options or an unwritable output.
pub fn run(a: &SynthArgs) -> anyhow::Result<()> {
    if let Some(case) = a.hostile {
        let f = std::fs::File::create(&a.output)
            .with_context(|| format!("creating {}", a.output.display()))?;
        hostile::write(case, a.connections, a.calls, std::io::BufWriter::new(f))
            .with_context(|| format!("writing {}", a.output.display()))?;
        return Ok(());
    }
    if a.fabric == "iwarp" {
        return run_iwarp(a);
    }
    let opts = a
        .options()
        .map_err(|e| anyhow::anyhow!("synth: --inject: {e}"))?;
    let t0 = Instant::now();
    let sum =
        write_files(&opts, &a.output).with_context(|| format!("writing {}", a.output.display()))?;
    let secs = t0.elapsed().as_secs_f64().max(1e-9);
    eprintln!(
        "rdma-analyzer synth: {} frames, {} bytes, {} calls, {} anomalies injected in {:.2}s ({:.0} MB/s); expectations in {}",
        sum.frames,
        sum.bytes,
        sum.calls,
        sum.anomalies.len(),
        secs,
        sum.bytes as f64 / secs / 1e6,
        sidecar_path(&a.output).display()
    );
    Ok(())
}

/// The iWARP options these arguments describe.
///
/// # Errors
/// An unknown fault name.
pub fn iwarp_options(a: &SynthArgs) -> Result<IwarpOptions, String> {
    let mut faults = Vec::new();
    for name in a
        .iwarp_faults
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
    {
        if name == "all" {
            faults.extend(Fault::ALL);
        } else {
            faults.push(name.parse::<Fault>()?);
        }
    }
    faults.sort();
    faults.dedup();
    Ok(IwarpOptions {
        calls: a.calls,
        seed: a.seed,
        markers: a.markers,
        crc: !a.no_crc,
        io_size: a.io_size,
        inline_threshold: a.inline_threshold,
        remote_invalidation: !a.no_remote_invalidation,
        faults,
    })
}

fn run_iwarp(a: &SynthArgs) -> anyhow::Result<()> {
    let opts = iwarp_options(a).map_err(|e| anyhow::anyhow!("synth: --iwarp-faults: {e}"))?;
    super::iwarp::validate(&opts)?;
    let file = std::fs::File::create(&a.output)
        .with_context(|| format!("creating {}", a.output.display()))?;
    let (sum, out) = generate_iwarp(&opts, std::io::BufWriter::new(file))
        .with_context(|| format!("writing {}", a.output.display()))?;
    out.into_inner()
        .map_err(|e| e.into_error())
        .with_context(|| format!("writing {}", a.output.display()))?;
    let side = sidecar_path(&a.output);
    let mut json = serde_json::to_string_pretty(&sum)?;
    json.push('\n');
    std::fs::write(&side, json).with_context(|| format!("writing {}", side.display()))?;
    let fpdus: usize = sum.directions.iter().map(|d| d.fpdus.len()).sum();
    eprintln!(
        "rdma-analyzer synth: iWARP, {} frames, {} bytes, {} calls, {} FPDUs; expectations in {}",
        sum.frames,
        sum.bytes,
        sum.calls,
        fpdus,
        side.display()
    );
    Ok(())
}
