//! The `synth` subcommand: options and the run.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::Args;

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
}

fn parse_mix(s: &str) -> Result<Mix, String> {
    s.parse()
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
