//! Synthetic RoCEv2 captures of NFSv3 over RPC-over-RDMA: what a real pair
//! of peers could exchange, with protocol violations injected on request at
//! known frames.
//!
//! Every header is written by the dissectors' `emit` functions, so the
//! generator exercises them as well as the engine. A run is a pure function
//! of its [`Options`]: the same seed gives the same bytes.
//!
//! ```text
//!  per connection:  REQ ──► REP ◄── RTU ──►        (UD to QP1, RFC 8797 private data)
//!  per batch:       client: W calls (Send Only)    server: one coalesced ACK
//!                   per call, server side:
//!                     inline   ─ reply Send
//!                     READ     ─ RDMA WRITE First/Middle/Last into the write chunk, reply
//!                     WRITE    ─ RDMA READ request, client READ responses, reply
//!                     READDIR  ─ RDMA WRITE of the reply into the reply chunk, RDMA_NOMSG
//!                     COMPOUND ─ (NFSv4.1, inline) reply Send
//!                     Long Call (RDMA_NOMSG + position-zero read chunk) ─ RDMA READ of the call, reply
//!                   (reply = Send With Invalidate of the call's first STag when both set R)
//!                   client: ACK per reply
//!  at the end:      DREQ ──► DREP ◄──
//! ```
//!
//! Injected violations run on the first connection right after its first
//! call (the `credit_overrun` one instead of it, since only then is a single
//! credit granted), except `remote_invalidation_not_negotiated`, which gets
//! a connection of its own whose server clears R, and `call_without_reply`,
//! the last call of the first connection.

pub mod cli;
pub(crate) mod gen;
pub mod hostile;
pub mod iwarp;
pub mod nfs;
pub mod prng;
pub mod wire;

use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::Serialize;

pub use gen::generate;
pub use iwarp::{generate_iwarp, Fault, IwarpOptions, IwarpSummary};

/// A protocol violation the generator can inject. The names are the
/// analyzer's anomaly kinds (`engine::Kind::as_str`), plus `psn_wrap`,
/// which is not a violation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Inject {
    /// Two calls outstanding while a single credit is granted.
    CreditOverrun,
    /// A reply granting 0 credits.
    ZeroCreditGrant,
    /// Send With Invalidate on a connection whose server cleared R.
    RemoteInvalidationNotNegotiated,
    /// Send With Invalidate naming another XID's STag.
    InvalidatedForeignStag,
    /// A call Send larger than the negotiated inline threshold.
    InlineThresholdExceeded,
    /// An RDMA_ERROR ERR_VERS reply.
    ErrVers,
    /// An RDMA_ERROR ERR_CHUNK reply.
    ErrChunk,
    /// A 20-byte Send.
    ShortHeader,
    /// rdma_xid differs from the RPC XID (answered ERR_CHUNK, RFC 8166 4.5.2).
    XidMismatch,
    /// An RDMA_MSGP call.
    MsgpUsed,
    /// An RDMA_DONE message.
    DoneUsed,
    /// A call with rdma_vers 2 (answered ERR_VERS, RFC 8166 4.5.1).
    VersionMismatch,
    /// A header with rdma_proc 7 (answered ERR_CHUNK, RFC 8166 4.5.2).
    BadProc,
    /// An RDMA WRITE to an R_Key and address no call advertised.
    RdmaOutsideChunk,
    /// Start every PSN a few packets before 2^24 so sequences wrap (not a violation).
    PsnWrap,
    /// A frame with a corrupted ICRC.
    IcrcMismatch,
    /// A reply carrying a read list.
    ReadListInReply,
    /// An RDMA_NOMSG reply without chunks.
    NomsgWithoutChunks,
    /// RDMA_ERROR (ERR_VERS) sent by the requester.
    ErrorFromRequester,
    /// A reply to an XID that was never called.
    ReplyWithoutCall,
    /// A call left unanswered when the connection closes.
    CallWithoutReply,
    /// A GETATTR answered NFS3ERR_JUKEBOX, then retried (not a protocol
    /// violation: the analyzer's `nfs_errors` cause).
    NfsError,
    /// Congestion marks on a READ's data (ECN CE, FECN) and the CNP that
    /// answers them (not a protocol violation: the `congestion` cause).
    Congestion,
    /// A WRITE whose read chunk sits at an XDR position that is not a
    /// multiple of four.
    UnalignedReadPosition,
}

impl Inject {
    /// Injections that are not protocol violations, so not anomaly kinds
    /// of the engine: what they produce shows elsewhere (the sequence
    /// numbers, the diagnosis).
    pub const NOT_ANOMALIES: [Inject; 3] = [Inject::PsnWrap, Inject::NfsError, Inject::Congestion];

    /// Every kind, in the order they are injected.
    pub const ALL: [Inject; 24] = [
        Inject::CreditOverrun,
        Inject::ZeroCreditGrant,
        Inject::RemoteInvalidationNotNegotiated,
        Inject::InvalidatedForeignStag,
        Inject::InlineThresholdExceeded,
        Inject::ErrVers,
        Inject::ErrChunk,
        Inject::ShortHeader,
        Inject::XidMismatch,
        Inject::MsgpUsed,
        Inject::DoneUsed,
        Inject::VersionMismatch,
        Inject::BadProc,
        Inject::RdmaOutsideChunk,
        Inject::PsnWrap,
        Inject::IcrcMismatch,
        Inject::ReadListInReply,
        Inject::NomsgWithoutChunks,
        Inject::ErrorFromRequester,
        Inject::ReplyWithoutCall,
        Inject::CallWithoutReply,
        Inject::NfsError,
        Inject::Congestion,
        Inject::UnalignedReadPosition,
    ];

    /// The name on the command line and in the sidecar.
    pub const fn as_str(self) -> &'static str {
        match self {
            Inject::CreditOverrun => "credit_overrun",
            Inject::ZeroCreditGrant => "zero_credit_grant",
            Inject::RemoteInvalidationNotNegotiated => "remote_invalidation_not_negotiated",
            Inject::InvalidatedForeignStag => "invalidated_foreign_stag",
            Inject::InlineThresholdExceeded => "inline_threshold_exceeded",
            Inject::ErrVers => "err_vers",
            Inject::ErrChunk => "err_chunk",
            Inject::ShortHeader => "short_header",
            Inject::XidMismatch => "xid_mismatch",
            Inject::MsgpUsed => "msgp_used",
            Inject::DoneUsed => "done_used",
            Inject::VersionMismatch => "version_mismatch",
            Inject::BadProc => "bad_proc",
            Inject::RdmaOutsideChunk => "rdma_outside_chunk",
            Inject::PsnWrap => "psn_wrap",
            Inject::IcrcMismatch => "icrc_mismatch",
            Inject::ReadListInReply => "read_list_in_reply",
            Inject::NomsgWithoutChunks => "nomsg_without_chunks",
            Inject::ErrorFromRequester => "error_from_requester",
            Inject::ReplyWithoutCall => "reply_without_call",
            Inject::CallWithoutReply => "call_without_reply",
            Inject::NfsError => "nfs_error",
            Inject::Congestion => "congestion",
            Inject::UnalignedReadPosition => "unaligned_read_position",
        }
    }
}

impl fmt::Display for Inject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Inject {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Inject::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Inject::ALL.iter().map(|k| k.as_str()).collect();
                format!("unknown injection {s:?}; choose from: {}", names.join(", "))
            })
    }
}

/// Relative weights of the call types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Mix {
    /// Inline calls and replies (GETATTR, LOOKUP, ACCESS).
    pub inline: u32,
    /// READ with a write chunk.
    pub read: u32,
    /// WRITE with a read chunk.
    pub write: u32,
    /// READDIR with a reply chunk.
    pub readdir: u32,
    /// NFSv4.1 COMPOUND (SEQUENCE, PUTFH, GETATTR), inline.
    pub compound: u32,
    /// Long Call: a WRITE whose whole call (inline threshold + 2 KiB) goes
    /// in a position-zero read chunk behind an RDMA_NOMSG.
    pub longcall: u32,
}

impl Default for Mix {
    fn default() -> Self {
        Mix {
            inline: 35,
            read: 30,
            write: 25,
            readdir: 5,
            compound: 3,
            longcall: 2,
        }
    }
}

impl FromStr for Mix {
    type Err = String;

    /// `inline=40,read=30,write=25,readdir=5,compound=0,longcall=0`; kinds left out weigh 0.
    fn from_str(s: &str) -> Result<Self, String> {
        let mut m = Mix {
            inline: 0,
            read: 0,
            write: 0,
            readdir: 0,
            compound: 0,
            longcall: 0,
        };
        for part in s.split(',').filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("mix entry {part:?} is not KIND=WEIGHT (e.g. read=30)"))?;
            let v: u32 = v
                .trim()
                .parse()
                .map_err(|_| format!("mix weight {v:?} of {k} is not a whole number"))?;
            match k.trim() {
                "inline" => m.inline = v,
                "read" => m.read = v,
                "write" => m.write = v,
                "readdir" => m.readdir = v,
                "compound" => m.compound = v,
                "longcall" => m.longcall = v,
                other => {
                    return Err(format!(
                        "unknown mix kind {other:?}; use inline, read, write, readdir, compound, longcall"
                    ))
                }
            }
        }
        if m.inline + m.read + m.write + m.readdir + m.compound + m.longcall == 0 {
            return Err("the mix weighs nothing: give at least one kind a weight above 0".into());
        }
        Ok(m)
    }
}

/// What to generate.
#[derive(Debug, Clone, Serialize)]
pub struct Options {
    /// RPC calls of clean traffic (ignored when `size` is set).
    pub calls: u64,
    /// Connections the calls are spread over.
    pub connections: u32,
    /// Call type weights.
    pub mix: Mix,
    /// Bytes per READ and WRITE.
    pub io_size: u32,
    /// Path MTU: 256, 512, 1024, 2048 or 4096.
    pub mtu: u32,
    /// Calls a client keeps in flight.
    pub window: u32,
    /// Credits each call asks for.
    pub credits_requested: u32,
    /// Credits each reply grants.
    pub credits_granted: u32,
    /// Inline threshold both peers advertise (RFC 8797 Send and Receive Size).
    pub inline_threshold: u32,
    /// Both peers set R (remote invalidation) in their CM private data.
    pub remote_invalidation: bool,
    /// Keep generating until the file reaches this many bytes.
    pub size: Option<u64>,
    /// PRNG seed.
    pub seed: u64,
    /// Violations to inject.
    pub inject: Vec<Inject>,
    /// Microsecond instead of nanosecond timestamps.
    pub microseconds: bool,
    /// How frames carry the IBA transport.
    pub framing: wire::Framing,
    /// The first connection's queue pair numbers (client and server); the
    /// next connections count up from it. A 24-bit value (0xabc000) shows
    /// whether an output keeps QPNs whole.
    pub qpn_base: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            calls: 100,
            connections: 1,
            mix: Mix::default(),
            io_size: 65_536,
            mtu: 1024,
            window: 16,
            credits_requested: 128,
            credits_granted: 64,
            inline_threshold: 4096,
            remote_invalidation: true,
            size: None,
            seed: 1,
            inject: Vec::new(),
            microseconds: false,
            framing: wire::Framing::Rocev2,
            qpn_base: 0x11,
        }
    }
}

/// One anomaly the analyzer must report.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ExpectedAnomaly {
    /// The analyzer's kind name.
    pub kind: String,
    /// Frame numbers the analyzer names (1-based).
    pub frames: Vec<u64>,
    /// The injection that caused it.
    pub injected_by: String,
}

/// What a run produced: the sidecar `FILE.expected.json`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    /// The options the capture was generated with (rerun them to get the same bytes).
    pub options: Option<Options>,
    /// Frames written.
    pub frames: u64,
    /// Bytes written, file header included.
    pub bytes: u64,
    /// Connections set up.
    pub connections: u32,
    /// RPC calls the analyzer can recognise as calls.
    pub calls: u64,
    /// Calls answered by a reply (RPC or RDMA_ERROR).
    pub replies: u64,
    /// Transactions: calls, each either answered or left open.
    pub transactions: u64,
    /// Bytes moved by RDMA Read and Write into advertised chunks of answered calls.
    pub chunk_bytes: u64,
    /// Replies sent with Send With Invalidate.
    pub remote_invalidations: u64,
    /// Every anomaly the traffic contains, by frame.
    pub anomalies: Vec<ExpectedAnomaly>,
}

/// Why generation failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The options contradict each other or are out of range.
    Options(String),
    /// Writing the output failed.
    Io(io::Error),
    /// A dissector's `emit` refused a header: a generator bug.
    Emit(rdma_dissectors::Error),
    /// A frame larger than the frame buffer: a generator bug.
    FrameTooLong(usize),
    /// A connection index past the table: a generator bug.
    NoConnection(usize),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Options(s) => write!(f, "synth: {s}"),
            Error::Io(e) => write!(f, "synth: writing the capture: {e}"),
            Error::Emit(e) => write!(f, "synth: building a packet failed (a generator bug): {e}"),
            Error::FrameTooLong(n) => {
                write!(
                    f,
                    "synth: a {n}-byte frame does not fit the frame buffer (a generator bug)"
                )
            }
            Error::NoConnection(i) => {
                write!(f, "synth: connection {i} does not exist (a generator bug)")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}

impl From<rdma_dissectors::Error> for Error {
    fn from(e: rdma_dissectors::Error) -> Self {
        Error::Emit(e)
    }
}

/// The sidecar path for a capture: `FILE.expected.json`.
pub fn sidecar_path(capture: &Path) -> PathBuf {
    let mut s = capture.as_os_str().to_owned();
    s.push(".expected.json");
    PathBuf::from(s)
}

/// Generates a capture into `path` and its sidecar next to it.
///
/// # Errors
/// Bad options, or a file that cannot be written.
pub fn write_files(opts: &Options, path: &Path) -> Result<Summary, Error> {
    let file = File::create(path)?;
    let out = BufWriter::with_capacity(8 << 20, file);
    let (summary, out) = generate(opts, out)?;
    drop(out.into_inner().map_err(|e| e.into_error())?);
    let side = File::create(sidecar_path(path))?;
    let mut side = BufWriter::new(side);
    serde_json::to_writer_pretty(&mut side, &summary).map_err(io::Error::from)?;
    io::Write::write_all(&mut side, b"\n")?;
    io::Write::flush(&mut side)?;
    Ok(summary)
}

/// Parses a byte count with an optional K, M or G suffix (powers of 1024).
///
/// # Errors
/// A message naming the value when it is not a count.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m = match c.to_ascii_uppercase() {
                'K' => 1u64 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                _ => {
                    return Err(format!(
                        "size {s:?}: use a number with an optional K, M or G suffix"
                    ))
                }
            };
            (t.get(..i).unwrap_or_default(), m)
        }
        _ => (t, 1),
    };
    let n: u64 = num
        .trim()
        .parse()
        .map_err(|_| format!("size {s:?}: use a number with an optional K, M or G suffix"))?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("size {s:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rdma_engine::Kind;

    #[test]
    fn injection_names_are_the_engines_kinds() {
        for k in Inject::ALL {
            if Inject::NOT_ANOMALIES.contains(&k) {
                assert!(Kind::from_name(k.as_str()).is_none());
                continue;
            }
            let kind = Kind::from_name(k.as_str());
            assert!(kind.is_some(), "{k} is not an anomaly kind of the engine");
            assert_eq!(k.as_str().parse::<Inject>(), Ok(k));
        }
        let e = "credit_overrunn".parse::<Inject>().unwrap_err();
        assert!(e.contains("credit_overrun, zero_credit_grant"), "{e}");
    }

    #[test]
    fn mix_parses_weights_and_refuses_nonsense() {
        let m: Mix = "read=3,readdir=1".parse().unwrap();
        assert_eq!(
            (m.inline, m.read, m.write, m.readdir, m.compound),
            (0, 3, 0, 1, 0)
        );
        assert!("read=x"
            .parse::<Mix>()
            .unwrap_err()
            .contains("not a whole number"));
        assert!("reads=1"
            .parse::<Mix>()
            .unwrap_err()
            .contains("unknown mix kind"));
        assert!("read=0"
            .parse::<Mix>()
            .unwrap_err()
            .contains("weighs nothing"));
    }

    #[test]
    fn sizes_take_binary_suffixes() {
        assert_eq!(parse_size("64K"), Ok(65_536));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert!(parse_size("2X").is_err());
        assert!(parse_size("").is_err());
    }

    #[test]
    fn sidecar_sits_next_to_the_capture() {
        assert_eq!(
            sidecar_path(Path::new("/tmp/a.pcap")),
            PathBuf::from("/tmp/a.pcap.expected.json")
        );
    }
}
