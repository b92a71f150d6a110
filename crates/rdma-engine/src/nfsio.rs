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

/// An NFS READ, WRITE or COMMIT (NFSv3 procedure, or the first such op of
/// an NFSv4 COMPOUND): the byte range and what the reply said of the data.
/// Each field is `None` when the bytes that carry it were not seen (a snap
/// length, a Long Call or Reply, no reply) or the reply failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
}

impl Retries {
    /// Notes `rec`, answered at `reply_ts_ns`, if its status asks the
    /// client to retry. `client` is the address of the client that sent it.
    /// True when the cap pushed out the oldest error, whose retry can then
    /// no longer be linked.
    #[must_use]
    pub fn answered(&mut self, client: Addr, rec: &Transaction, reply_ts_ns: u64) -> bool {
        if rec.program != Some(nfs::NFS_PROGRAM) || !asks_for_retry(rec.nfs_status.as_deref()) {
            return false;
        }
        let full = self.recent.len() >= RECENT_ERRORS;
        if full {
            self.recent.pop_front();
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
        full
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

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use super::*;
    use crate::keys::Origin;
    use crate::model::CallHeader;

    const CLIENT: Addr = Addr::Ip(IpAddr::V4(Ipv4Addr::new(10, 99, 0, 2)));
    const OTHER: Addr = Addr::Ip(IpAddr::V4(Ipv4Addr::new(10, 99, 0, 3)));
    const S: u64 = 1_000_000_000;

    /// An NFSv3 READ of `fh` at `offset`, sent at `ts`.
    fn read(xid: u32, ts: u64, fh: u8, offset: u64) -> Transaction {
        let mut t = Transaction::new(
            Origin::Wire,
            ConnId(1),
            xid,
            1,
            ts,
            CallHeader::Text(String::new()),
        );
        t.program = Some(nfs::NFS_PROGRAM);
        t.version = Some(3);
        t.procedure = Some("READ".into());
        t.nfs_fh = FileHandle::new(&[fh; 32]);
        t.nfs_io = Some(NfsIo {
            op: "READ",
            offset: Some(offset),
            count: Some(4096),
            stable: None,
            reply_count: None,
            eof: None,
            committed: None,
        });
        t
    }

    fn jukebox(r: &mut Retries, xid: u32, reply_ts: u64) {
        let mut t = read(xid, reply_ts - 1000, 7, 0);
        t.nfs_status = Some("NFS3ERR_JUKEBOX".into());
        assert!(!r.answered(CLIENT, &t, reply_ts));
    }

    #[test]
    fn the_retry_is_linked_with_its_wait() {
        let mut r = Retries::default();
        jukebox(&mut r, 1, 10 * S);
        let mut t = read(2, 15 * S, 7, 0);
        r.sent(CLIENT, &mut t);
        assert_eq!(t.retry_of_xid, Some(1));
        assert_eq!(t.retry_of_connection, Some(ConnId(1)));
        assert_eq!(t.retry_wait_us, Some(5_000_000.0));
        // One retry per error: the next identical call is not another.
        let mut again = read(3, 16 * S, 7, 0);
        r.sent(CLIENT, &mut again);
        assert_eq!(again.retry_of_xid, None);
    }

    #[test]
    fn only_the_same_client_call_and_range_within_the_window() {
        let mut r = Retries::default();
        jukebox(&mut r, 1, 10 * S);
        let mut other_client = read(2, 11 * S, 7, 0);
        r.sent(OTHER, &mut other_client);
        let mut other_fh = read(3, 11 * S, 8, 0);
        r.sent(CLIENT, &mut other_fh);
        let mut other_offset = read(4, 11 * S, 7, 4096);
        r.sent(CLIENT, &mut other_offset);
        let mut before = read(5, 9 * S, 7, 0);
        r.sent(CLIENT, &mut before);
        let mut write = read(6, 11 * S, 7, 0);
        write.procedure = Some("WRITE".into());
        r.sent(CLIENT, &mut write);
        for t in [&other_client, &other_fh, &other_offset, &before, &write] {
            assert_eq!(t.retry_of_xid, None, "xid {}", t.xid);
        }
        let mut late = read(7, 10 * S + RETRY_WINDOW_NS + 1, 7, 0);
        r.sent(CLIENT, &mut late);
        assert_eq!(late.retry_of_xid, None);
        // The window's end is in it.
        let mut r = Retries::default();
        jukebox(&mut r, 1, 10 * S);
        let mut edge = read(8, 10 * S + RETRY_WINDOW_NS, 7, 0);
        r.sent(CLIENT, &mut edge);
        assert_eq!(edge.retry_of_xid, Some(1));
    }

    #[test]
    fn other_statuses_and_programs_are_not_remembered() {
        let mut r = Retries::default();
        for status in ["NFS3_OK", "NFS3ERR_STALE", "NFS4ERR_GRACE"] {
            let mut t = read(1, S, 7, 0);
            t.nfs_status = Some(status.into());
            assert!(!r.answered(CLIENT, &t, 2 * S));
        }
        let mut t = read(1, S, 7, 0);
        t.nfs_status = Some("NFS4ERR_DELAY".into());
        t.program = Some(100_005);
        assert!(!r.answered(CLIENT, &t, 2 * S));
        assert!(r.recent.is_empty());
    }

    /// Hostile traffic answered DELAY without end holds the table at its
    /// cap; the oldest go first and are counted.
    #[test]
    fn the_table_is_bounded() {
        let mut r = Retries::default();
        let mut pushed_out = 0;
        for i in 0..(RECENT_ERRORS as u32 + 10) {
            let mut t = read(i, 10 * S, 7, 0);
            t.nfs_status = Some("NFS4ERR_DELAY".into());
            pushed_out += u32::from(r.answered(CLIENT, &t, 10 * S + u64::from(i)));
        }
        assert_eq!(r.recent.len(), RECENT_ERRORS);
        assert_eq!(pushed_out, 10);
        assert_eq!(r.recent.front().map(|e| e.xid), Some(10));
        r.expire(10 * S + RETRY_WINDOW_NS + 10 * S);
        assert!(r.recent.is_empty());
    }

    #[test]
    fn handles_are_bounded_and_named_as_wireshark_does() {
        assert!(FileHandle::new(&[0; 129]).is_none());
        let fh = FileHandle::new(&[0xab; 128]).unwrap();
        assert_eq!(fh.to_string().len(), 256);
        let fh = FileHandle::new(&hex_literal_fh()).unwrap();
        assert_eq!(fh.short(), "0x4fec2610/36");
    }

    /// The handle of captures/v3-ddp.pcap (tshark: nfs.fh.hash 0x4fec2610).
    fn hex_literal_fh() -> Vec<u8> {
        let h = "01000701793d000000000000279bec6c4ba24bbf919f1c0d51f9c452b43e0000d5034c5e";
        (0..h.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
            .collect()
    }
}
