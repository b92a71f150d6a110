//! `/proc/self/mountstats`, the NFS client's own counters: per mount, one
//! `xprt:` line per transport (several with `nconnect`) and the per-operation
//! statistics. Pure, like the rest of the engine: the caller reads the file.
//!
//! The `xprt: rdma` line is printed by `xprt_rdma_print_stats`
//! (`net/sunrpc/xprtrdma/transport.c`) as ten generic fields, then the RDMA
//! ones; its length tells the kernel generation apart (see [`RDMA_FIELDS`]).
//! Tools that name its fields in the order of `struct rpcrdma_stats` rather
//! than in print order name them wrongly; here the names follow the print.

use std::fmt;

/// The `xprt: rdma` fields in the order the kernel prints them, with what
/// each counts. Older kernels print a prefix of this list (see
/// [`RdmaLayout`]); slot 21 was `mrs_recovered` before it became
/// `mrs_recycled`.
pub const RDMA_FIELDS: [(&str, &str); 27] = [
    ("port", "always 0 for RDMA"),
    ("bind_count", "rpcbind queries"),
    (
        "connect_count",
        "connections established (reconnects included)",
    ),
    (
        "connect_time",
        "time spent connecting: seconds (jiffies on older kernels)",
    ),
    ("idle_time", "seconds since the transport was last used"),
    ("sends", "RPC Calls transmitted (retransmissions included)"),
    ("recvs", "RPC Replies received"),
    ("bad_xids", "Replies that matched no outstanding Call"),
    ("req_u", "sum of the requests in flight at each send"),
    ("bklog_u", "sum of the backlog queue's length at each send"),
    ("read_chunk_count", "Read chunk segments sent"),
    (
        "write_chunk_count",
        "Write chunk segments sent (the XDR pad segment included)",
    ),
    ("reply_chunk_count", "Reply chunk segments sent"),
    (
        "total_rdma_request",
        "bytes offered in Write and Reply chunks",
    ),
    ("total_rdma_reply", "bytes the server wrote into them"),
    (
        "pullup_copy_count",
        "bytes copied to pull a Call up into its Send buffer",
    ),
    ("fixup_copy_count", "bytes copied to fix up a Reply"),
    (
        "hardway_register_count",
        "memory registrations done the hard way",
    ),
    ("failed_marshal_count", "Calls that could not be marshaled"),
    (
        "bad_reply_count",
        "Replies that could not be parsed, RDMA_ERROR included",
    ),
    ("nomsg_call_count", "Calls sent as RDMA_NOMSG (Long Calls)"),
    ("mrs_recycled", "MRs recycled after a flush"),
    ("mrs_orphaned", "MRs orphaned (lost to an error)"),
    ("mrs_allocated", "MRs allocated"),
    (
        "local_inv_needed",
        "chunk segments the client invalidated itself",
    ),
    ("empty_sendctx_q", "times no send context was free"),
    (
        "reply_waits_for_send",
        "Replies that waited for their Send to complete",
    ),
];

/// Which generation of `xprt_rdma_print_stats` printed a line, known by its
/// length (the kernel prints no version of its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RdmaLayout {
    /// 20 fields, the oldest: no NOMSG count, no MR counts.
    Fields20,
    /// 25 fields: `nomsg_call_count`, then `mrs_recovered`, orphaned,
    /// allocated and `local_inv_needed`.
    Fields25,
    /// 26 fields: `empty_sendctx_q` added.
    Fields26,
    /// 27 fields, current kernels (Linux 6.1 prints it): `reply_waits_for_send`
    /// added, slot 21 is `mrs_recycled`.
    Fields27,
}

impl RdmaLayout {
    fn of(fields: usize) -> Option<RdmaLayout> {
        match fields {
            20 => Some(RdmaLayout::Fields20),
            25 => Some(RdmaLayout::Fields25),
            26 => Some(RdmaLayout::Fields26),
            27 => Some(RdmaLayout::Fields27),
            _ => None,
        }
    }

    /// The names of the fields this generation prints, in print order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        let (n, recovered) = match self {
            RdmaLayout::Fields20 => (20, false),
            RdmaLayout::Fields25 => (25, true),
            RdmaLayout::Fields26 => (26, true),
            RdmaLayout::Fields27 => (27, false),
        };
        RDMA_FIELDS[..n]
            .iter()
            .enumerate()
            .map(move |(i, (name, _))| {
                if i == 21 && recovered {
                    "mrs_recovered"
                } else {
                    name
                }
            })
    }
}

/// One `xprt:` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// `xprt: rdma …`, named by its layout.
    Rdma {
        /// The generation the field count says.
        layout: RdmaLayout,
        /// The numbers, in print order.
        values: Vec<u64>,
    },
    /// Another transport (`tcp`, `udp`) or an RDMA line of a length no
    /// known kernel prints: its numbers, unnamed.
    Other {
        /// `tcp`, `udp`, or `rdma` with an unknown layout.
        proto: String,
        /// The numbers, in print order.
        values: Vec<u64>,
    },
}

impl Transport {
    /// A named field of an RDMA transport; `None` when this kernel does
    /// not print it (or the transport is not RDMA).
    pub fn rdma(&self, name: &str) -> Option<u64> {
        match self {
            Transport::Rdma { layout, values } => layout
                .names()
                .position(|n| n == name)
                .and_then(|i| values.get(i).copied()),
            Transport::Other { .. } => None,
        }
    }
}

/// One line of the per-op statistics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpStats {
    /// The operation (`READ`, `GETATTR`).
    pub name: String,
    /// Operations the application asked for.
    pub ops: u64,
    /// Transmissions (more than `ops` when the client retransmitted).
    pub ntrans: u64,
    /// Major timeouts.
    pub timeouts: u64,
    /// Bytes sent, headers included.
    pub bytes_sent: u64,
    /// Bytes received, headers included.
    pub bytes_recv: u64,
    /// Milliseconds queued before transmission, summed.
    pub queue_ms: u64,
    /// Milliseconds from transmission to reply, summed.
    pub rtt_ms: u64,
    /// Milliseconds from the request to its completion, summed.
    pub execute_ms: u64,
    /// Operations that ended in an error (statvers 1.1 on); `None` before.
    pub errors: Option<u64>,
}

/// One mount's statistics.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Mount {
    /// `server:/export`.
    pub device: String,
    /// Where it is mounted.
    pub mountpoint: String,
    /// `nfs` or `nfs4`.
    pub fstype: String,
    /// `statvers=`, when printed.
    pub statvers: Option<String>,
    /// The `opts:` line's options as printed (`proto=rdma`, `nconnect=4`).
    pub opts: Vec<String>,
    /// Seconds since the mount (`age:`).
    pub age: Option<u64>,
    /// `p/v:` program and version.
    pub program: Option<(u32, u32)>,
    /// One per transport, in print order.
    pub transports: Vec<Transport>,
    /// Per-operation statistics, in print order.
    pub ops: Vec<OpStats>,
}

impl Mount {
    /// The value of a mount option (`proto`, `vers`).
    pub fn opt(&self, key: &str) -> Option<&str> {
        self.opts
            .iter()
            .find_map(|o| o.strip_prefix(key)?.strip_prefix('='))
    }

    /// Whether the mount runs over RDMA.
    pub fn is_rdma(&self) -> bool {
        self.opt("proto") == Some("rdma")
            || self
                .transports
                .iter()
                .any(|t| matches!(t, Transport::Rdma { .. }))
    }

    /// The operation's statistics, by name.
    pub fn op(&self, name: &str) -> Option<&OpStats> {
        self.ops.iter().find(|o| o.name == name)
    }
}

/// What could not be read, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    /// What was wrong.
    pub what: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.what)
    }
}

fn numbers(words: &[&str], line: usize) -> Result<Vec<u64>, ParseError> {
    words
        .iter()
        .map(|w| {
            w.parse().map_err(|_| ParseError {
                line,
                what: format!("{w:?} is not a counter"),
            })
        })
        .collect()
}

/// `device D mounted on M with fstype T [statvers=V]`.
fn device_line(rest: &str, line: usize) -> Result<Mount, ParseError> {
    let bad = || ParseError {
        line,
        what: "a device line is `device DEV mounted on DIR with fstype TYPE`".into(),
    };
    let (device, rest) = rest.split_once(" mounted on ").ok_or_else(bad)?;
    let (mountpoint, rest) = rest.rsplit_once(" with fstype ").ok_or_else(bad)?;
    let mut words = rest.split_whitespace();
    let fstype = words.next().ok_or_else(bad)?.to_string();
    let statvers = words
        .find_map(|w| w.strip_prefix("statvers="))
        .map(str::to_string);
    Ok(Mount {
        device: device.to_string(),
        mountpoint: mountpoint.to_string(),
        fstype,
        statvers,
        ..Mount::default()
    })
}

fn transport(words: &[&str], line: usize) -> Result<Transport, ParseError> {
    let Some((proto, rest)) = words.split_first() else {
        return Err(ParseError {
            line,
            what: "an xprt: line names no transport".into(),
        });
    };
    let values = numbers(rest, line)?;
    Ok(match (*proto, RdmaLayout::of(values.len())) {
        ("rdma", Some(layout)) => Transport::Rdma { layout, values },
        _ => Transport::Other {
            proto: (*proto).to_string(),
            values,
        },
    })
}

fn op_line(name: &str, words: &[&str], line: usize) -> Result<OpStats, ParseError> {
    let v = numbers(words, line)?;
    if v.len() < 8 {
        return Err(ParseError {
            line,
            what: format!("{name}: {} counters where 8 or 9 are printed", v.len()),
        });
    }
    Ok(OpStats {
        name: name.to_string(),
        ops: v[0],
        ntrans: v[1],
        timeouts: v[2],
        bytes_sent: v[3],
        bytes_recv: v[4],
        queue_ms: v[5],
        rtt_ms: v[6],
        execute_ms: v[7],
        errors: v.get(8).copied(),
    })
}

/// Every NFS mount of a `/proc/self/mountstats` text (other file systems'
/// blocks are skipped). Lines this parser does not know (`events:`,
/// `bytes:`, `caps:`, `sec:`, the fscache ones) are passed over; a counter
/// that is not a number is an error naming its line.
pub fn parse(text: &str) -> Result<Vec<Mount>, ParseError> {
    let mut mounts: Vec<Mount> = Vec::new();
    let mut in_ops = false;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if let Some(rest) = raw.strip_prefix("device ") {
            let m = device_line(rest, line)?;
            in_ops = false;
            mounts.push(m);
            continue;
        }
        let Some(m) = mounts.last_mut().filter(|m| m.fstype.starts_with("nfs")) else {
            continue;
        };
        let words: Vec<&str> = raw.split_whitespace().collect();
        match words.as_slice() {
            [] => {}
            ["opts:", opts] => m.opts = opts.split(',').map(str::to_string).collect(),
            ["age:", age] => m.age = numbers(&[age], line)?.first().copied(),
            ["xprt:", rest @ ..] => m.transports.push(transport(rest, line)?),
            ["per-op", "statistics"] => in_ops = true,
            ["RPC", "iostats", "version:", _, "p/v:", pv, ..] => {
                m.program = pv
                    .split_once('/')
                    .and_then(|(p, v)| Some((p.parse().ok()?, v.parse().ok()?)));
            }
            [name, rest @ ..] if in_ops && name.ends_with(':') => {
                let name = name.trim_end_matches(':');
                m.ops.push(op_line(name, rest, line)?);
            }
            _ => {}
        }
    }
    Ok(mounts)
}

#[cfg(test)]
mod tests;
