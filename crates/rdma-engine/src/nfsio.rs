//! The NFS side of a transaction beyond its status: the file handle and
//! byte range of the call, what the reply says of the data, and the link
//! from a call the server answered "not now" (NFS3ERR_JUKEBOX,
//! NFS4ERR_DELAY) to the call the client sent again for it.
//!
//! The Linux client retries such a call under a new XID after a wait
//! (`nfs3_rpc_wrapper`: 5 s for JUKEBOX; `nfs4_delay`: 100 ms doubling to
//! 15 s for DELAY), so the wire's XID matching does not join the two: the
//! engine keeps the last [`RECENT_ERRORS`] such calls and links the first
//! later call of the same client with the same procedure, file handle and
//! byte range, sent within [`RETRY_WINDOW_NS`] of the error reply.

use std::collections::VecDeque;

use rdma_dissectors::nfs::{self, CallIo, ReplyIo};
use serde::Serialize;

use super::keys::{Addr, ConnId};
use super::model::Transaction;

/// An NFS file handle, at most [`nfs::NFS4_FHSIZE`] bytes (the largest
/// either version allows); shown in hex.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileHandle(Box<[u8]>);

impl FileHandle {
    /// `None` for more than [`nfs::NFS4_FHSIZE`] bytes.
    pub fn new(bytes: &[u8]) -> Option<Self> {
        (bytes.len() <= nfs::NFS4_FHSIZE as usize).then(|| FileHandle(bytes.into()))
    }

    /// The handle's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// The CRC-32 Wireshark shows as the handle's hash (`nfs.fh.hash`).
    pub fn hash(&self) -> u32 {
        nfs::fh_hash(&self.0)
    }

    /// The hash and the length (`0x4fec2610/36`): the handles of one
    /// capture told apart in a line of text, by the name Wireshark gives
    /// them (their first bytes, the export's, are often all the same).
    pub fn short(&self) -> String {
        format!("{:#010x}/{}", self.hash(), self.0.len())
    }
}

impl std::fmt::Display for FileHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl Serialize for FileHandle {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl schemars::JsonSchema for FileHandle {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "FileHandle".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "An NFS file handle in lowercase hex (at most 128 bytes: NFSv3's are at most 64).",
            "type": "string",
            "pattern": "^([0-9a-f]{2}){0,128}$"
        })
    }
}

/// A `stable_how` (`UNSTABLE`, `DATA_SYNC`, `FILE_SYNC`; `stable_how N`
/// for a value no RFC defines).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stable(pub nfs::StableHow);

impl std::fmt::Display for Stable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "stable_how {}", u32::from(self.0)),
        }
    }
}

impl Serialize for Stable {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl schemars::JsonSchema for Stable {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "StableHow".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "`stable_how` (RFC 1813 3.3.7, RFC 7530 16.36): `UNSTABLE`, `DATA_SYNC`, `FILE_SYNC`, or `stable_how N` for a value no RFC defines.",
            "type": "string"
        })
    }
}

/// An NFS READ, WRITE or COMMIT (NFSv3 procedure, or the first such op of
/// an NFSv4 COMPOUND): the byte range and what the reply said of the data.
/// Each field is `None` when the bytes that carry it were not seen (a snap
/// length, a Long Call or Reply, no reply) or the reply failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct NfsIo {
    /// `READ`, `READ_PLUS`, `WRITE` or `COMMIT`.
    pub op: &'static str,
    /// The first byte of the range.
    pub offset: Option<u64>,
    /// Bytes asked for (READ), sent (WRITE: the data's length, inline or
    /// in a Read chunk), or to commit (COMMIT: 0 is to the end of the file).
    pub count: Option<u32>,
    /// WRITE: how stable the client asked the data to be made.
    pub stable: Option<Stable>,
    /// READ, WRITE: bytes the reply says were read or written.
    pub reply_count: Option<u32>,
    /// READ: the reply says the end of the file was reached.
    pub eof: Option<bool>,
    /// WRITE: how stable the server says it made the data.
    pub committed: Option<Stable>,
}

impl NfsIo {
    /// `WRITE off 262144 cnt 262144 UNSTABLE`: the call's side, short.
    pub fn short(&self) -> String {
        let mut s = self.op.to_string();
        if let Some(o) = self.offset {
            s.push_str(&format!(" off {o}"));
        }
        if let Some(c) = self.count {
            s.push_str(&format!(" cnt {c}"));
        }
        if let Some(st) = self.stable {
            s.push_str(&format!(" {st}"));
        }
        s
    }
}

/// Fills `nfs_fh` and `nfs_io` of an NFS call from its arguments.
pub(crate) fn fill_call(
    rec: &mut Transaction,
    vers: u32,
    proc: u32,
    args: &[u8],
    ddp: nfs::Ddp<'_>,
) {
    let io: CallIo<'_> = nfs::call_io(vers, proc, args, ddp);
    rec.nfs_fh = io.fh.and_then(FileHandle::new);
    rec.nfs_fh_hash = rec.nfs_fh.as_ref().map(FileHandle::hash);
    rec.nfs_io = io.op.map(|op| NfsIo {
        op: op.name(),
        offset: io.offset,
        count: io.count,
        stable: io.stable.map(Stable),
        reply_count: None,
        eof: None,
        committed: None,
    });
}

/// Fills the reply's side of `nfs_io` from a successful reply's results.
pub(crate) fn fill_reply(
    rec: &mut Transaction,
    vers: u32,
    proc: u32,
    results: &[u8],
    ddp: nfs::Ddp<'_>,
) {
    let Some(io) = rec.nfs_io.as_mut() else {
        return;
    };
    if !matches!(io.op, "READ" | "WRITE") {
        return;
    }
    let r: ReplyIo = nfs::reply_io(vers, proc, results, ddp);
    io.reply_count = r.count;
    io.eof = r.eof;
    io.committed = r.committed.map(Stable);
}

/// Calls answered "not now" remembered at once, waiting for their retry;
/// the oldest goes first.
pub const RECENT_ERRORS: usize = 256;
/// How long after the error reply a call may come and still be its retry:
/// longer than the Linux client's longest wait (15 s for NFS4ERR_DELAY,
/// 5 s for NFS3ERR_JUKEBOX), short enough not to join unrelated calls.
pub const RETRY_WINDOW_NS: u64 = 30_000_000_000;

/// True for the statuses after which a client retries the same call under
/// a new XID: NFS3ERR_JUKEBOX and NFS4ERR_DELAY (both 10008).
pub fn asks_for_retry(status: Option<&str>) -> bool {
    matches!(status, Some("NFS3ERR_JUKEBOX" | "NFS4ERR_DELAY"))
}

/// A call answered "not now".
#[derive(Debug, Clone)]
struct Errored {
    client: Addr,
    connection: ConnId,
    xid: u32,
    version: Option<u32>,
    procedure: Option<String>,
    fh: Option<FileHandle>,
    range: Option<(&'static str, Option<u64>, Option<u32>)>,
    reply_ts_ns: u64,
}

/// The recent calls answered NFS3ERR_JUKEBOX / NFS4ERR_DELAY, oldest first.
#[derive(Debug, Default)]
pub(crate) struct Retries {
    recent: VecDeque<Errored>,
    /// Entries pushed out by the cap before a retry came.
    pub forgotten: u64,
}

impl Retries {
    /// Notes `rec`, answered at `reply_ts_ns`, if its status asks the
    /// client to retry. `client` is the address of the client that sent it.
    pub fn answered(&mut self, client: Addr, rec: &Transaction, reply_ts_ns: u64) {
        if rec.program != Some(nfs::NFS_PROGRAM) || !asks_for_retry(rec.nfs_status.as_deref()) {
            return;
        }
        if self.recent.len() >= RECENT_ERRORS {
            self.recent.pop_front();
            self.forgotten += 1;
        }
        self.recent.push_back(Errored {
            client,
            connection: rec.connection,
            xid: rec.xid,
            version: rec.version,
            procedure: rec.procedure.clone(),
            fh: rec.nfs_fh.clone(),
            range: rec.nfs_io.map(|io| (io.op, io.offset, io.count)),
            reply_ts_ns,
        });
    }

    /// Links `rec`, a call `client` just sent, to the oldest remembered
    /// error it retries: sets `retry_of_xid` and `retry_wait_us` and
    /// forgets the error (one retry each).
    pub fn sent(&mut self, client: Addr, rec: &mut Transaction) {
        if rec.program != Some(nfs::NFS_PROGRAM) || self.recent.is_empty() {
            return;
        }
        let ts = rec.call_ts_ns;
        let range = rec.nfs_io.map(|io| (io.op, io.offset, io.count));
        let found = self.recent.iter().position(|e| {
            e.client == client
                && e.xid != rec.xid
                && ts >= e.reply_ts_ns
                && ts - e.reply_ts_ns <= RETRY_WINDOW_NS
                && e.version == rec.version
                && e.procedure == rec.procedure
                && e.fh == rec.nfs_fh
                && e.range == range
        });
        let Some(e) = found.and_then(|i| self.recent.remove(i)) else {
            return;
        };
        rec.retry_of_xid = Some(e.xid);
        rec.retry_of_connection = Some(e.connection);
        rec.retry_wait_us = Some(ts.saturating_sub(e.reply_ts_ns) as f64 / 1000.0);
    }

    /// Forgets errors older than the window at `now`, so that a quiet
    /// table holds nothing stale.
    pub fn expire(&mut self, now: u64) {
        while self
            .recent
            .front()
            .is_some_and(|e| now.saturating_sub(e.reply_ts_ns) > RETRY_WINDOW_NS)
        {
            self.recent.pop_front();
        }
    }
}
