//! NFS and its side programs: names of programs, procedures and NFSv4
//! operations, and a zero-allocation walk over NFSv4 COMPOUND calls and
//! replies.
//!
//! Sources: RFC 1094 (NFSv2), RFC 1813 (NFSv3, MOUNT v3, NLM v4 in its
//! appendix), RFC 7530 (NFSv4.0), RFC 8881 (NFSv4.1), RFC 7862 (NFSv4.2),
//! RFC 8276 (xattr ops), the NFSACL side-band protocol (Solaris/Linux
//! `nfs_acl`), X/Open NLM.
//!
//! A COMPOUND call's arguments (RFC 7530 section 16.2, RFC 8881 section 18.2):
//!
//! ```text
//! tag (opaque<>) | minorversion | numops | { argop | args of that op }*
//! ```
//!
//! and its results:
//!
//! ```text
//! status | tag (opaque<>) | numres | { resop | status | results if OK }*
//! ```
//!
//! Ops are not self-delimiting: to reach op N+1 the walker must decode op
//! N's arguments. [`OpIter`] and [`ResOpIter`] know the arguments and
//! results of the operations Linux clients and servers actually send. On an
//! op they cannot step over they yield that op and stop, and
//! [`OpIter::is_complete`] says so; they never guess.
//!
//! # RPC-over-RDMA: data items removed from the Payload stream
//!
//! With RPC-over-RDMA, DDP-eligible data items travel in chunks and are
//! removed from the Payload stream (RFC 8166 section 3.4.4; NFSv4 binding
//! RFC 8267): for a counted array such as WRITE's `data`, the length word
//! stays inline and the bytes and their XDR padding go (RFC 8166 sections
//! 3.4.4.1, 3.4.4.4). In a call, the read list says where: a Read chunk's
//! position is the offset in the unreduced Payload stream (the RPC message,
//! from its XID) where the bytes would have been, i.e. just after the
//! length word (section 3.4.5). In a reply, Write chunks are filled in
//! order with the DDP-eligible results (section 4.3.2.1): READ's data (and
//! READLINK's link text). Pass the transport header's [`Chunks`] with
//! [`Ddp`] to let the walk skip correctly; without it a removed item looks
//! like a truncated message and the walk stops with an error.

use crate::error::{Error, Result};
use crate::layer::Layer;
use crate::rpcrdma::Chunks;
use crate::xdr::{padded_len, Cursor};

mod io;
pub use io::{call_io, fh_hash, reply_io, CallIo, IoOp, ReplyIo, StableHow, NFS3_FHSIZE};

/// NFS program number (RFC 1813 section 1.1, RFC 7530 section 16.1).
pub const NFS_PROGRAM: u32 = 100_003;
/// MOUNT program number (RFC 1813 appendix I).
pub const MOUNT_PROGRAM: u32 = 100_005;
/// Network Lock Manager program number (RFC 1813 appendix II).
pub const NLM_PROGRAM: u32 = 100_021;
/// NFSACL side-band program number (Solaris/Linux `nfs_acl`).
pub const NFSACL_PROGRAM: u32 = 100_227;
/// The NFSv4 callback program as Linux clients choose it.
///
/// NFSv4.0 clients choose their callback program number and send it in
/// SETCLIENTID (`cb_program`, RFC 7530 section 16.33), NFSv4.1 clients in
/// CREATE_SESSION/BACKCHANNEL_CTL (`csa_cb_program`, RFC 8881 section 18.36),
/// from the transient range 0x40000000-0x5fffffff. Linux always uses
/// 0x40000000 (`NFS4_CALLBACK`); other clients may not, so a correlating
/// engine should learn the number from those operations.
pub const NFS4_CALLBACK_PROGRAM_LINUX: u32 = 0x4000_0000;

/// NFSv4 status code for success (RFC 7530 section 13).
pub const NFS4_OK: u32 = 0;
/// `OP_ILLEGAL` / `OP_CB_ILLEGAL` (RFC 7530 section 16.1 / 15).
pub const OP_ILLEGAL: u32 = 10044;

/// Cap on ops walked in one COMPOUND ([`Error::LimitExceeded`] beyond).
pub const MAX_COMPOUND_OPS: usize = 256;
/// Cap on words of a `bitmap4` ([`Error::LimitExceeded`] beyond).
pub const MAX_BITMAP_WORDS: usize = 16;
/// Cap on entries of an array inside an op (READDIR entries, TEST_STATEID
/// stateids, SECINFO flavors, ...) ([`Error::LimitExceeded`] beyond).
pub const MAX_ARRAY_ENTRIES: usize = 4096;
/// Largest NFSv4 file handle (RFC 7530 section 2.2, `NFS4_FHSIZE`).
pub const NFS4_FHSIZE: u32 = 128;
/// Cap on the COMPOUND tag, in bytes (the XDR type is unbounded).
pub const MAX_TAG_LEN: u32 = 1024;
/// Capacity of [`CallSummary::ops`].
pub const SUMMARY_OPS: usize = 16;

/// The name of an ONC RPC program this module knows.
pub fn program_name(prog: u32) -> Option<&'static str> {
    Some(match prog {
        NFS_PROGRAM => "NFS",
        MOUNT_PROGRAM => "MOUNT",
        NLM_PROGRAM => "NLM",
        NFSACL_PROGRAM => "NFSACL",
        NFS4_CALLBACK_PROGRAM_LINUX => "NFSv4 callback",
        100_000 => "PORTMAP",
        100_024 => "STATUS",
        _ => return None,
    })
}

const NFS2_PROCS: [&str; 18] = [
    "NULL",
    "GETATTR",
    "SETATTR",
    "ROOT",
    "LOOKUP",
    "READLINK",
    "READ",
    "WRITECACHE",
    "WRITE",
    "CREATE",
    "REMOVE",
    "RENAME",
    "LINK",
    "SYMLINK",
    "MKDIR",
    "RMDIR",
    "READDIR",
    "STATFS",
];

const NFS3_PROCS: [&str; 22] = [
    "NULL",
    "GETATTR",
    "SETATTR",
    "LOOKUP",
    "ACCESS",
    "READLINK",
    "READ",
    "WRITE",
    "CREATE",
    "MKDIR",
    "SYMLINK",
    "MKNOD",
    "REMOVE",
    "RMDIR",
    "RENAME",
    "LINK",
    "READDIR",
    "READDIRPLUS",
    "FSSTAT",
    "FSINFO",
    "PATHCONF",
    "COMMIT",
];

// MOUNT v1 and v2 (v2 adds PATHCONF = 7), v3 (RFC 1813 appendix I: 0-5).
const MOUNT_PROCS: [&str; 8] = [
    "NULL",
    "MNT",
    "DUMP",
    "UMNT",
    "UMNTALL",
    "EXPORT",
    "EXPORTALL",
    "PATHCONF",
];

// NLM v1-v4 procedures 0-15; v3 and v4 add 20-23 (RFC 1813 appendix II).
const NLM_PROCS: [&str; 16] = [
    "NULL",
    "TEST",
    "LOCK",
    "CANCEL",
    "UNLOCK",
    "GRANTED",
    "TEST_MSG",
    "LOCK_MSG",
    "CANCEL_MSG",
    "UNLOCK_MSG",
    "GRANTED_MSG",
    "TEST_RES",
    "LOCK_RES",
    "CANCEL_RES",
    "UNLOCK_RES",
    "GRANTED_RES",
];
const NLM_SHARE_PROCS: [&str; 4] = ["SHARE", "UNSHARE", "NM_LOCK", "FREE_ALL"];

const NFSACL2_PROCS: [&str; 6] = [
    "NULL",
    "GETACL",
    "SETACL",
    "GETATTR",
    "ACCESS",
    "GETXATTRDIR",
];
const NFSACL3_PROCS: [&str; 4] = ["NULL", "GETACL", "SETACL", "GETXATTRDIR"];

fn table(t: &[&'static str], i: u32) -> Option<&'static str> {
    t.get(i as usize).copied()
}

/// The name of procedure `proc` of version `vers` of program `prog`, as the
/// specs spell it without prefix (e.g. `GETATTR`, `COMPOUND`, `CB_COMPOUND`).
pub fn proc_name(prog: u32, vers: u32, proc: u32) -> Option<&'static str> {
    match (prog, vers) {
        (NFS_PROGRAM, 2) => table(&NFS2_PROCS, proc),
        (NFS_PROGRAM, 3) => table(&NFS3_PROCS, proc),
        (NFS_PROGRAM, 4) => table(&["NULL", "COMPOUND"], proc),
        (MOUNT_PROGRAM, 1) => table(&MOUNT_PROCS[..7], proc),
        (MOUNT_PROGRAM, 2) => table(&MOUNT_PROCS, proc),
        (MOUNT_PROGRAM, 3) => table(&MOUNT_PROCS[..6], proc),
        (NLM_PROGRAM, 1..=4) => match proc {
            0..=15 => table(&NLM_PROCS, proc),
            20..=23 if vers >= 3 => table(&NLM_SHARE_PROCS, proc - 20),
            _ => None,
        },
        (NFSACL_PROGRAM, 2) => table(&NFSACL2_PROCS, proc),
        (NFSACL_PROGRAM, 3) => table(&NFSACL3_PROCS, proc),
        // Linux registers callback versions 1 (v4.0) and 4 (v4.1+).
        (NFS4_CALLBACK_PROGRAM_LINUX, _) => table(&["CB_NULL", "CB_COMPOUND"], proc),
        _ => None,
    }
}

const OPS: [&str; 73] = [
    "ACCESS",
    "CLOSE",
    "COMMIT",
    "CREATE",
    "DELEGPURGE",
    "DELEGRETURN",
    "GETATTR",
    "GETFH",
    "LINK",
    "LOCK",
    "LOCKT",
    "LOCKU",
    "LOOKUP",
    "LOOKUPP",
    "NVERIFY",
    "OPEN",
    "OPENATTR",
    "OPEN_CONFIRM",
    "OPEN_DOWNGRADE",
    "PUTFH",
    "PUTPUBFH",
    "PUTROOTFH",
    "READ",
    "READDIR",
    "READLINK",
    "REMOVE",
    "RENAME",
    "RENEW",
    "RESTOREFH",
    "SAVEFH",
    "SECINFO",
    "SETATTR",
    "SETCLIENTID",
    "SETCLIENTID_CONFIRM",
    "VERIFY",
    "WRITE",
    "RELEASE_LOCKOWNER",
    // NFSv4.1 (RFC 8881 section 18)
    "BACKCHANNEL_CTL",
    "BIND_CONN_TO_SESSION",
    "EXCHANGE_ID",
    "CREATE_SESSION",
    "DESTROY_SESSION",
    "FREE_STATEID",
    "GET_DIR_DELEGATION",
    "GETDEVICEINFO",
    "GETDEVICELIST",
    "LAYOUTCOMMIT",
    "LAYOUTGET",
    "LAYOUTRETURN",
    "SECINFO_NO_NAME",
    "SEQUENCE",
    "SET_SSV",
    "TEST_STATEID",
    "WANT_DELEGATION",
    "DESTROY_CLIENTID",
    "RECLAIM_COMPLETE",
    // NFSv4.2 (RFC 7862 section 15)
    "ALLOCATE",
    "COPY",
    "COPY_NOTIFY",
    "DEALLOCATE",
    "IO_ADVISE",
    "LAYOUTERROR",
    "LAYOUTSTATS",
    "OFFLOAD_CANCEL",
    "OFFLOAD_STATUS",
    "READ_PLUS",
    "SEEK",
    "WRITE_SAME",
    "CLONE",
    // Extended attributes (RFC 8276 section 8)
    "GETXATTR",
    "SETXATTR",
    "LISTXATTRS",
    "REMOVEXATTR",
];

/// NFSv4 operation numbers (RFC 7530 section 16, RFC 8881 section 18,
/// RFC 7862 section 15, RFC 8276 section 8).
#[allow(missing_docs)]
pub mod op {
    pub const ACCESS: u32 = 3;
    pub const CLOSE: u32 = 4;
    pub const COMMIT: u32 = 5;
    pub const CREATE: u32 = 6;
    pub const DELEGPURGE: u32 = 7;
    pub const DELEGRETURN: u32 = 8;
    pub const GETATTR: u32 = 9;
    pub const GETFH: u32 = 10;
    pub const LINK: u32 = 11;
    pub const LOCK: u32 = 12;
    pub const LOCKT: u32 = 13;
    pub const LOCKU: u32 = 14;
    pub const LOOKUP: u32 = 15;
    pub const LOOKUPP: u32 = 16;
    pub const NVERIFY: u32 = 17;
    pub const OPEN: u32 = 18;
    pub const OPENATTR: u32 = 19;
    pub const OPEN_CONFIRM: u32 = 20;
    pub const OPEN_DOWNGRADE: u32 = 21;
    pub const PUTFH: u32 = 22;
    pub const PUTPUBFH: u32 = 23;
    pub const PUTROOTFH: u32 = 24;
    pub const READ: u32 = 25;
    pub const READDIR: u32 = 26;
    pub const READLINK: u32 = 27;
    pub const REMOVE: u32 = 28;
    pub const RENAME: u32 = 29;
    pub const RENEW: u32 = 30;
    pub const RESTOREFH: u32 = 31;
    pub const SAVEFH: u32 = 32;
    pub const SECINFO: u32 = 33;
    pub const SETATTR: u32 = 34;
    pub const SETCLIENTID: u32 = 35;
    pub const SETCLIENTID_CONFIRM: u32 = 36;
    pub const VERIFY: u32 = 37;
    pub const WRITE: u32 = 38;
    pub const RELEASE_LOCKOWNER: u32 = 39;
    pub const BACKCHANNEL_CTL: u32 = 40;
    pub const BIND_CONN_TO_SESSION: u32 = 41;
    pub const EXCHANGE_ID: u32 = 42;
    pub const CREATE_SESSION: u32 = 43;
    pub const DESTROY_SESSION: u32 = 44;
    pub const FREE_STATEID: u32 = 45;
    pub const GET_DIR_DELEGATION: u32 = 46;
    pub const GETDEVICEINFO: u32 = 47;
    pub const GETDEVICELIST: u32 = 48;
    pub const LAYOUTCOMMIT: u32 = 49;
    pub const LAYOUTGET: u32 = 50;
    pub const LAYOUTRETURN: u32 = 51;
    pub const SECINFO_NO_NAME: u32 = 52;
    pub const SEQUENCE: u32 = 53;
    pub const SET_SSV: u32 = 54;
    pub const TEST_STATEID: u32 = 55;
    pub const WANT_DELEGATION: u32 = 56;
    pub const DESTROY_CLIENTID: u32 = 57;
    pub const RECLAIM_COMPLETE: u32 = 58;
    pub const ALLOCATE: u32 = 59;
    pub const COPY: u32 = 60;
    pub const COPY_NOTIFY: u32 = 61;
    pub const DEALLOCATE: u32 = 62;
    pub const IO_ADVISE: u32 = 63;
    pub const LAYOUTERROR: u32 = 64;
    pub const LAYOUTSTATS: u32 = 65;
    pub const OFFLOAD_CANCEL: u32 = 66;
    pub const OFFLOAD_STATUS: u32 = 67;
    pub const READ_PLUS: u32 = 68;
    pub const SEEK: u32 = 69;
    pub const WRITE_SAME: u32 = 70;
    pub const CLONE: u32 = 71;
    pub const GETXATTR: u32 = 72;
    pub const SETXATTR: u32 = 73;
    pub const LISTXATTRS: u32 = 74;
    pub const REMOVEXATTR: u32 = 75;
    pub const ILLEGAL: u32 = super::OP_ILLEGAL;
}

/// NFSv4 callback operation numbers (RFC 7530 section 18, RFC 8881
/// section 20, RFC 7862 section 16).
#[allow(missing_docs)]
pub mod cb_op {
    pub const CB_GETATTR: u32 = 3;
    pub const CB_RECALL: u32 = 4;
    pub const CB_LAYOUTRECALL: u32 = 5;
    pub const CB_NOTIFY: u32 = 6;
    pub const CB_PUSH_DELEG: u32 = 7;
    pub const CB_RECALL_ANY: u32 = 8;
    pub const CB_RECALLABLE_OBJ_AVAIL: u32 = 9;
    pub const CB_RECALL_SLOT: u32 = 10;
    pub const CB_SEQUENCE: u32 = 11;
    pub const CB_WANTS_CANCELLED: u32 = 12;
    pub const CB_NOTIFY_LOCK: u32 = 13;
    pub const CB_NOTIFY_DEVICEID: u32 = 14;
    pub const CB_OFFLOAD: u32 = 15;
    pub const CB_ILLEGAL: u32 = super::OP_ILLEGAL;
}

/// The name of NFSv4.0/4.1/4.2 operation `op` (3 to 75, and ILLEGAL).
pub fn op_name(op: u32) -> Option<&'static str> {
    match op {
        OP_ILLEGAL => Some("ILLEGAL"),
        3..=75 => table(&OPS, op - 3),
        _ => None,
    }
}

const CB_OPS: [&str; 13] = [
    "CB_GETATTR",
    "CB_RECALL",
    "CB_LAYOUTRECALL",
    "CB_NOTIFY",
    "CB_PUSH_DELEG",
    "CB_RECALL_ANY",
    "CB_RECALLABLE_OBJ_AVAIL",
    "CB_RECALL_SLOT",
    "CB_SEQUENCE",
    "CB_WANTS_CANCELLED",
    "CB_NOTIFY_LOCK",
    "CB_NOTIFY_DEVICEID",
    "CB_OFFLOAD",
];

/// The name of NFSv4 callback operation `op` (3 to 15, and CB_ILLEGAL).
pub fn cb_op_name(op: u32) -> Option<&'static str> {
    match op {
        OP_ILLEGAL => Some("CB_ILLEGAL"),
        3..=15 => table(&CB_OPS, op - 3),
        _ => None,
    }
}

/// Where DDP moved data items out of the Payload stream (see the module
/// docs). `Ddp::NONE` when the message came without chunks (TCP, or
/// RPC-over-RDMA with empty lists).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ddp<'a> {
    chunks: Option<Chunks<'a>>,
    base: usize,
}

impl<'a> Ddp<'a> {
    /// No data item was removed.
    pub const NONE: Ddp<'static> = Ddp {
        chunks: None,
        base: 0,
    };

    /// The chunk lists of the RPC-over-RDMA header that carried the message,
    /// and the offset of the COMPOUND arguments or results in the Payload
    /// stream (the RPC header length, [`crate::oncrpc::RpcMsg::header_len`]).
    /// For a call the read list is used; for a reply the write list.
    pub const fn new(chunks: Chunks<'a>, base: usize) -> Self {
        Ddp {
            chunks: Some(chunks),
            base,
        }
    }

    /// Total length of the Read chunk whose position is `pos`, if any
    /// (position zero is the Long Call chunk, never a removed item).
    fn read_chunk_at(&self, pos: usize) -> Option<u64> {
        let chunks = self.chunks?;
        let pos = u32::try_from(pos).ok().filter(|p| *p != 0)?;
        let mut found = false;
        let mut len = 0u64;
        for r in chunks.read_list().filter(|r| r.position == pos) {
            found = true;
            len = len.saturating_add(u64::from(r.segment.length));
        }
        found.then_some(len)
    }
}

/// Why an op walk stopped before the end.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The walker does not know how to step over this op's arguments or
    /// results; it was yielded, and the ones after it are unknown.
    Unsupported {
        /// The op number.
        op: u32,
    },
    /// The bytes do not decode (truncated, bad value, hostile count).
    Error(Error),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Fore,
    Back,
}

/// A COMPOUND or CB_COMPOUND call (RFC 7530 section 16.2, RFC 8881
/// sections 18.2 and 20.2).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compound<'a> {
    /// `tag`: opaque to the server, echoed in the reply.
    pub tag: &'a [u8],
    /// `minorversion`: 0, 1 or 2.
    pub minorversion: u32,
    /// `callback_ident` of a CB_COMPOUND (`CB_COMPOUND4args`, RFC 7530
    /// section 17.2, RFC 8881 section 19.2); `None` for a COMPOUND.
    pub callback_ident: Option<u32>,
    /// `numops` as sent.
    pub op_count: u32,
    /// The op numbers; see [`OpIter::is_complete`] after the walk.
    pub ops: OpIter<'a>,
}

impl<'a> Compound<'a> {
    /// Parses COMPOUND arguments (the RPC call's `args`) with no data
    /// removed by DDP.
    ///
    /// # Errors
    /// [`Error::Truncated`] or [`Error::BadField`] (tag over
    /// [`MAX_TAG_LEN`]) in the tag, minor version or op count.
    pub fn parse(args: &'a [u8]) -> Result<Self> {
        Self::parse_with(args, Ddp::NONE)
    }

    /// Parses COMPOUND arguments, using the transport's read list to step
    /// over WRITE data moved to a Read chunk. Error offsets count from the
    /// start of the Payload stream when `ddp` gives the base, else from the
    /// start of `args`.
    ///
    /// # Errors
    /// As [`Compound::parse`].
    pub fn parse_with(args: &'a [u8], ddp: Ddp<'a>) -> Result<Self> {
        Self::parse_kind(args, ddp, Kind::Fore)
    }

    /// Parses CB_COMPOUND arguments (the callback program's procedure 1).
    ///
    /// # Errors
    /// As [`Compound::parse`].
    pub fn parse_callback(args: &'a [u8]) -> Result<Self> {
        Self::parse_kind(args, Ddp::NONE, Kind::Back)
    }

    fn parse_kind(args: &'a [u8], ddp: Ddp<'a>, kind: Kind) -> Result<Self> {
        let mut c = Cursor::with_base(args, Layer::Nfs, ddp.base);
        let tag = c.opaque("tag length", MAX_TAG_LEN)?;
        let minorversion = c.u32()?;
        let callback_ident = match kind {
            Kind::Fore => None,
            Kind::Back => Some(c.u32()?),
        };
        let op_count = c.u32()?;
        Ok(Compound {
            tag,
            minorversion,
            callback_ident,
            op_count,
            ops: OpIter {
                c,
                ddp,
                kind,
                op_count,
                index: 0,
                removed: 0,
                done: false,
                stop: None,
            },
        })
    }
}

/// Iterator over the op numbers of a COMPOUND call.
///
/// Yields each op it reaches. When it meets an op whose arguments it cannot
/// step over, it yields that op and stops; [`OpIter::stop`] then says why
/// and [`OpIter::is_complete`] is false. Iterate with `by_ref()` to read
/// them afterwards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpIter<'a> {
    c: Cursor<'a>,
    ddp: Ddp<'a>,
    kind: Kind,
    op_count: u32,
    index: u32,
    /// Bytes removed by DDP before the cursor (unreduced minus reduced offset).
    removed: usize,
    done: bool,
    stop: Option<Stop>,
}

impl OpIter<'_> {
    /// True once every op of `numops` was walked.
    pub fn is_complete(&self) -> bool {
        self.done && self.stop.is_none()
    }

    /// Why the walk stopped early, if it did.
    pub const fn stop(&self) -> Option<Stop> {
        self.stop
    }

    /// Ops walked so far.
    pub const fn walked(&self) -> u32 {
        self.index
    }

    /// Bytes left after the last op walked (non-empty after a complete walk
    /// means trailing data).
    pub fn rest(&self) -> &[u8] {
        self.c.rest()
    }
}

impl Iterator for OpIter<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        if self.done {
            return None;
        }
        if self.index >= self.op_count {
            self.done = true;
            return None;
        }
        if self.index as usize >= MAX_COMPOUND_OPS {
            self.done = true;
            self.stop = Some(Stop::Error(self.c.limit("COMPOUND ops", MAX_COMPOUND_OPS)));
            return None;
        }
        let op = match self.c.u32() {
            Ok(op) => op,
            Err(e) => {
                self.done = true;
                self.stop = Some(Stop::Error(e));
                return None;
            }
        };
        self.index = self.index.saturating_add(1);
        let r = match self.kind {
            Kind::Fore => skip_args(&mut self.c, op, &self.ddp, &mut self.removed),
            Kind::Back => skip_cb_args(&mut self.c, op),
        };
        match r {
            Ok(true) => {}
            Ok(false) => {
                self.done = true;
                self.stop = Some(Stop::Unsupported { op });
            }
            Err(e) => {
                self.done = true;
                self.stop = Some(Stop::Error(e));
            }
        }
        Some(op)
    }
}

// ---- XDR helpers for NFSv4 types (RFC 7530 section 2, RFC 8881 section 3) ----

fn array_count(c: &mut Cursor<'_>, what: &'static str, cap: usize) -> Result<usize> {
    let n = c.u32()? as usize;
    if n > cap {
        return Err(Error::LimitExceeded {
            layer: c.layer(),
            offset: c.offset().saturating_sub(4),
            what,
            limit: cap,
        });
    }
    Ok(n)
}

/// `opaque<>` of any length (bounded by the message).
fn opaque(c: &mut Cursor<'_>) -> Result<()> {
    c.opaque("opaque length", u32::MAX).map(|_| ())
}

fn fh(c: &mut Cursor<'_>) -> Result<()> {
    c.opaque("nfs_fh4 length", NFS4_FHSIZE).map(|_| ())
}

fn stateid(c: &mut Cursor<'_>) -> Result<()> {
    c.skip(16)
}

fn bitmap(c: &mut Cursor<'_>) -> Result<()> {
    let n = array_count(c, "bitmap4 words", MAX_BITMAP_WORDS)?;
    c.skip(n.saturating_mul(4))
}

fn fattr(c: &mut Cursor<'_>) -> Result<()> {
    bitmap(c)?;
    opaque(c)
}

fn lock_owner(c: &mut Cursor<'_>) -> Result<()> {
    c.skip(8)?;
    opaque(c)
}

fn netaddr(c: &mut Cursor<'_>) -> Result<()> {
    opaque(c)?;
    opaque(c)
}

fn bool_(c: &mut Cursor<'_>) -> Result<bool> {
    c.bool("bool")
}

fn state_protect_ops(c: &mut Cursor<'_>) -> Result<()> {
    bitmap(c)?;
    bitmap(c)
}

fn channel_attrs(c: &mut Cursor<'_>) -> Result<()> {
    c.skip(24)?;
    let n = array_count(c, "ca_rdma_ird", 1)?;
    c.skip(n.saturating_mul(4))
}

/// `callback_sec_parms4<>` (RFC 8881 section 18.36).
fn callback_sec_parms(c: &mut Cursor<'_>) -> Result<Option<()>> {
    let n = array_count(c, "callback_sec_parms4", MAX_ARRAY_ENTRIES)?;
    for _ in 0..n {
        match c.u32()? {
            0 => {}
            1 => {
                // authsys_parms: stamp, machinename, uid, gid, gids<16>
                c.skip(4)?;
                opaque(c)?;
                c.skip(8)?;
                let g = array_count(c, "gids", 16)?;
                c.skip(g.saturating_mul(4))?;
            }
            6 => {
                c.skip(4)?;
                opaque(c)?;
                opaque(c)?;
            }
            _ => return Ok(None),
        }
    }
    Ok(Some(()))
}

fn netloc(c: &mut Cursor<'_>) -> Result<Option<()>> {
    match c.u32()? {
        1 | 2 => opaque(c)?,
        3 => netaddr(c)?,
        _ => return Ok(None),
    }
    Ok(Some(()))
}

/// Skips a counted opaque that DDP may have moved to a Read chunk.
fn ddp_opaque(c: &mut Cursor<'_>, ddp: &Ddp<'_>, removed: &mut usize) -> Result<()> {
    let len = c.u32()? as usize;
    let unreduced = ddp
        .base
        .saturating_add(c.position())
        .saturating_add(*removed);
    match ddp.read_chunk_at(unreduced) {
        Some(chunk) => {
            // RFC 8166 section 3.4.5.2: the chunk holds the data, with or
            // without its round-up; anything else is not this data item.
            if chunk != len as u64 && chunk != padded_len(len) as u64 {
                return Err(Error::BadField {
                    layer: Layer::Nfs,
                    offset: c.offset(),
                    field: "read chunk length",
                    value: chunk,
                    expected: "the length of the removed data item",
                });
            }
            *removed = removed.saturating_add(padded_len(len));
            Ok(())
        }
        None => c.skip(padded_len(len)),
    }
}

/// Steps over the arguments of `op`; `Ok(false)` when this op is not known.
fn skip_args(c: &mut Cursor<'_>, op: u32, ddp: &Ddp<'_>, removed: &mut usize) -> Result<bool> {
    use op::*;
    match op {
        GETFH | LOOKUPP | PUTPUBFH | PUTROOTFH | READLINK | RESTOREFH | SAVEFH | ILLEGAL => {}
        ACCESS | SECINFO_NO_NAME | OPENATTR | RECLAIM_COMPLETE => c.skip(4)?,
        CLOSE | OPEN_CONFIRM => c.skip(20)?,
        COMMIT => c.skip(12)?,
        DELEGPURGE | RENEW | DESTROY_CLIENTID => c.skip(8)?,
        DELEGRETURN | FREE_STATEID | OFFLOAD_CANCEL | OFFLOAD_STATUS => stateid(c)?,
        GETATTR => bitmap(c)?,
        LINK | LOOKUP | REMOVE | SECINFO | GETXATTR | REMOVEXATTR => opaque(c)?,
        RENAME => {
            opaque(c)?;
            opaque(c)?;
        }
        PUTFH => fh(c)?,
        NVERIFY | VERIFY => fattr(c)?,
        READ | READ_PLUS => c.skip(28)?,
        WRITE => {
            stateid(c)?;
            c.skip(12)?;
            ddp_opaque(c, ddp, removed)?;
        }
        READDIR => {
            c.skip(24)?;
            bitmap(c)?;
        }
        SETATTR => {
            stateid(c)?;
            fattr(c)?;
        }
        CREATE => {
            match c.u32()? {
                5 => opaque(c)?,
                3 | 4 => c.skip(8)?,
                _ => {}
            }
            opaque(c)?;
            fattr(c)?;
        }
        LOCK => {
            // locktype, reclaim, offset, length
            c.skip(24)?;
            if bool_(c)? {
                c.skip(4 + 16 + 4)?;
                lock_owner(c)?;
            } else {
                c.skip(16 + 4)?;
            }
        }
        LOCKT => {
            c.skip(4 + 16)?;
            lock_owner(c)?;
        }
        LOCKU => c.skip(4 + 4 + 16 + 16)?,
        RELEASE_LOCKOWNER => lock_owner(c)?,
        OPEN_DOWNGRADE => c.skip(16 + 12)?,
        OPEN => return skip_open(c),
        SETCLIENTID => {
            c.skip(8)?;
            opaque(c)?;
            c.skip(4)?;
            netaddr(c)?;
            c.skip(4)?;
        }
        SETCLIENTID_CONFIRM => c.skip(16)?,
        SEQUENCE => c.skip(16 + 12 + 4)?,
        DESTROY_SESSION => c.skip(16)?,
        BIND_CONN_TO_SESSION => c.skip(16 + 8)?,
        EXCHANGE_ID => {
            c.skip(8)?;
            opaque(c)?;
            c.skip(4)?;
            match c.u32()? {
                0 => {}
                1 => state_protect_ops(c)?,
                _ => return Ok(false),
            }
            let n = array_count(c, "eia_client_impl_id", 1)?;
            for _ in 0..n {
                opaque(c)?;
                opaque(c)?;
                c.skip(12)?;
            }
        }
        CREATE_SESSION => {
            c.skip(16)?;
            channel_attrs(c)?;
            channel_attrs(c)?;
            c.skip(4)?;
            if callback_sec_parms(c)?.is_none() {
                return Ok(false);
            }
        }
        BACKCHANNEL_CTL => {
            c.skip(4)?;
            if callback_sec_parms(c)?.is_none() {
                return Ok(false);
            }
        }
        TEST_STATEID => {
            let n = array_count(c, "stateids", MAX_ARRAY_ENTRIES)?;
            c.skip(n.saturating_mul(16))?;
        }
        GETDEVICEINFO => {
            c.skip(16 + 8)?;
            bitmap(c)?;
        }
        LAYOUTGET => c.skip(4 + 4 + 4 + 24 + 16 + 4)?,
        LAYOUTRETURN => {
            c.skip(12)?;
            if c.u32()? == 1 {
                c.skip(16 + 16)?;
                opaque(c)?;
            }
        }
        LAYOUTCOMMIT => {
            c.skip(16 + 4 + 16)?;
            if bool_(c)? {
                c.skip(8)?;
            }
            if bool_(c)? {
                c.skip(12)?;
            }
            c.skip(4)?;
            opaque(c)?;
        }
        ALLOCATE | DEALLOCATE => c.skip(16 + 16)?,
        SEEK => c.skip(16 + 12)?,
        CLONE => c.skip(32 + 24)?,
        IO_ADVISE => {
            c.skip(16 + 16)?;
            bitmap(c)?;
        }
        COPY => {
            c.skip(32 + 24 + 8)?;
            let n = array_count(c, "ca_source_server", MAX_ARRAY_ENTRIES)?;
            for _ in 0..n {
                if netloc(c)?.is_none() {
                    return Ok(false);
                }
            }
        }
        COPY_NOTIFY => {
            stateid(c)?;
            if netloc(c)?.is_none() {
                return Ok(false);
            }
        }
        SETXATTR => {
            c.skip(4)?;
            opaque(c)?;
            opaque(c)?;
        }
        LISTXATTRS => c.skip(12)?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// OPEN4args (RFC 7530 section 16.16, RFC 8881 section 18.16).
fn skip_open(c: &mut Cursor<'_>) -> Result<bool> {
    // seqid, share_access, share_deny, owner (clientid, opaque)
    c.skip(12)?;
    lock_owner(c)?;
    // openflag4: OPEN4_CREATE carries createhow4
    if c.u32()? == 1 {
        match c.u32()? {
            0 | 1 => fattr(c)?,
            2 => c.skip(8)?,
            3 => {
                c.skip(8)?;
                fattr(c)?;
            }
            _ => return Ok(false),
        }
    }
    // open_claim4
    match c.u32()? {
        0 | 3 => opaque(c)?,
        1 => c.skip(4)?,
        2 => {
            stateid(c)?;
            opaque(c)?;
        }
        4 | 5 => {}
        6 => stateid(c)?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// Steps over the arguments of callback op `op`.
fn skip_cb_args(c: &mut Cursor<'_>, op: u32) -> Result<bool> {
    use cb_op::*;
    match op {
        CB_ILLEGAL => {}
        CB_GETATTR => {
            fh(c)?;
            bitmap(c)?;
        }
        CB_RECALL => {
            c.skip(16 + 4)?;
            fh(c)?;
        }
        CB_RECALL_ANY => {
            c.skip(4)?;
            bitmap(c)?;
        }
        CB_RECALL_SLOT => c.skip(4)?,
        CB_SEQUENCE => {
            c.skip(16 + 12 + 4)?;
            let n = array_count(c, "csa_referring_call_lists", MAX_ARRAY_ENTRIES)?;
            for _ in 0..n {
                c.skip(16)?;
                let m = array_count(c, "rcl_referring_calls", MAX_ARRAY_ENTRIES)?;
                c.skip(m.saturating_mul(8))?;
            }
        }
        CB_NOTIFY_LOCK => {
            fh(c)?;
            lock_owner(c)?;
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// A COMPOUND reply (RFC 7530 section 16.2, RFC 8881 section 18.2).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompoundReply<'a> {
    /// `status`: the status of the last op evaluated.
    pub status: u32,
    /// `tag`, echoed from the call.
    pub tag: &'a [u8],
    /// `numres` as sent.
    pub op_count: u32,
    /// The results; see [`ResOpIter::is_complete`] after the walk.
    pub ops: ResOpIter<'a>,
}

/// One op's result header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ResOp {
    /// `resop`: the op number.
    pub op: u32,
    /// The op's `nfsstat4`.
    pub status: u32,
}

impl<'a> CompoundReply<'a> {
    /// Parses COMPOUND results (a successful RPC reply's `results`), with
    /// no data removed by DDP.
    ///
    /// # Errors
    /// [`Error::Truncated`] or [`Error::BadField`] in status, tag or count.
    pub fn parse(results: &'a [u8]) -> Result<Self> {
        Self::parse_with(results, Ddp::NONE)
    }

    /// Parses COMPOUND results, using the reply's write list to step over
    /// READ (and READLINK) data pushed into Write chunks.
    ///
    /// # Errors
    /// As [`CompoundReply::parse`].
    pub fn parse_with(results: &'a [u8], ddp: Ddp<'a>) -> Result<Self> {
        let mut c = Cursor::with_base(results, Layer::Nfs, ddp.base);
        let status = c.u32()?;
        let tag = c.opaque("tag length", MAX_TAG_LEN)?;
        let op_count = c.u32()?;
        Ok(CompoundReply {
            status,
            tag,
            op_count,
            ops: ResOpIter {
                c,
                ddp,
                op_count,
                index: 0,
                write_used: 0,
                done: false,
                stop: None,
            },
        })
    }
}

/// Iterator over the results of a COMPOUND reply; same contract as
/// [`OpIter`]. The walk ends normally after an op whose status is not
/// NFS4_OK (the server stops there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResOpIter<'a> {
    c: Cursor<'a>,
    ddp: Ddp<'a>,
    op_count: u32,
    index: u32,
    write_used: usize,
    done: bool,
    stop: Option<Stop>,
}

impl ResOpIter<'_> {
    /// True once every result was walked, or the walk ended at a failed op.
    pub fn is_complete(&self) -> bool {
        self.done && self.stop.is_none()
    }

    /// Why the walk stopped early, if it did.
    pub const fn stop(&self) -> Option<Stop> {
        self.stop
    }
}

impl Iterator for ResOpIter<'_> {
    type Item = ResOp;

    fn next(&mut self) -> Option<ResOp> {
        if self.done {
            return None;
        }
        if self.index >= self.op_count {
            self.done = true;
            return None;
        }
        if self.index as usize >= MAX_COMPOUND_OPS {
            self.done = true;
            self.stop = Some(Stop::Error(
                self.c.limit("COMPOUND results", MAX_COMPOUND_OPS),
            ));
            return None;
        }
        let head = self.c.u32().and_then(|op| Ok((op, self.c.u32()?)));
        let (op, status) = match head {
            Ok(v) => v,
            Err(e) => {
                self.done = true;
                self.stop = Some(Stop::Error(e));
                return None;
            }
        };
        self.index = self.index.saturating_add(1);
        if status != NFS4_OK {
            self.done = true;
            return Some(ResOp { op, status });
        }
        match skip_results(&mut self.c, op, &self.ddp, &mut self.write_used) {
            Ok(true) => {}
            Ok(false) => {
                self.done = true;
                self.stop = Some(Stop::Unsupported { op });
            }
            Err(e) => {
                self.done = true;
                self.stop = Some(Stop::Error(e));
            }
        }
        Some(ResOp { op, status })
    }
}

/// Skips a result opaque that may sit in the next Write chunk.
fn ddp_result(c: &mut Cursor<'_>, ddp: &Ddp<'_>, used: &mut usize) -> Result<()> {
    let len = c.u32()? as usize;
    let chunk = ddp.chunks.and_then(|ch| ch.write_list().nth(*used));
    match chunk {
        Some(w) => {
            *used = used.saturating_add(1);
            // RFC 8166 section 3.4.6.2: the returned chunk's length equals
            // the data item's.
            if w.total_length() != len as u64 {
                return Err(Error::BadField {
                    layer: Layer::Nfs,
                    offset: c.offset().saturating_sub(4),
                    field: "write chunk length",
                    value: w.total_length(),
                    expected: "the length of the removed data item",
                });
            }
            Ok(())
        }
        None => c.skip(padded_len(len)),
    }
}

fn secinfo_list(c: &mut Cursor<'_>) -> Result<()> {
    let n = array_count(c, "secinfo4", MAX_ARRAY_ENTRIES)?;
    for _ in 0..n {
        if c.u32()? == 6 {
            opaque(c)?;
            c.skip(8)?;
        }
    }
    Ok(())
}

fn nfsace(c: &mut Cursor<'_>) -> Result<()> {
    c.skip(12)?;
    opaque(c)
}

/// Steps over the results of a successful `op`; `Ok(false)` when unknown.
fn skip_results(c: &mut Cursor<'_>, op: u32, ddp: &Ddp<'_>, used: &mut usize) -> Result<bool> {
    use op::*;
    match op {
        PUTFH | PUTPUBFH | PUTROOTFH | RESTOREFH | SAVEFH | LOOKUP | LOOKUPP | DELEGPURGE
        | DELEGRETURN | RENEW | SETCLIENTID_CONFIRM | RELEASE_LOCKOWNER | DESTROY_SESSION
        | DESTROY_CLIENTID | RECLAIM_COMPLETE | FREE_STATEID | NVERIFY | VERIFY | LOCKT
        | OPENATTR | DEALLOCATE | ALLOCATE | OFFLOAD_CANCEL | CLONE | BACKCHANNEL_CTL => {}
        ACCESS => c.skip(8)?,
        CLOSE | OPEN_CONFIRM | OPEN_DOWNGRADE | LOCKU | LOCK => stateid(c)?,
        COMMIT => c.skip(8)?,
        REMOVEXATTR => c.skip(20)?,
        CREATE => {
            c.skip(20)?;
            bitmap(c)?;
        }
        GETATTR => fattr(c)?,
        GETFH => fh(c)?,
        LINK | REMOVE => c.skip(20)?,
        RENAME => c.skip(40)?,
        READ => {
            bool_(c)?;
            ddp_result(c, ddp, used)?;
        }
        READLINK => ddp_result(c, ddp, used)?,
        WRITE => c.skip(16)?,
        SETATTR => bitmap(c)?,
        SEQUENCE => c.skip(16 + 20)?,
        SECINFO | SECINFO_NO_NAME => secinfo_list(c)?,
        TEST_STATEID => {
            let n = array_count(c, "tsr_status_codes", MAX_ARRAY_ENTRIES)?;
            c.skip(n.saturating_mul(4))?;
        }
        SEEK => c.skip(12)?,
        GETXATTR => opaque(c)?,
        SETXATTR => c.skip(20)?,
        BIND_CONN_TO_SESSION => c.skip(16 + 8)?,
        SETCLIENTID => c.skip(16)?,
        CREATE_SESSION => {
            c.skip(16 + 8)?;
            channel_attrs(c)?;
            channel_attrs(c)?;
        }
        EXCHANGE_ID => {
            c.skip(16)?;
            match c.u32()? {
                0 => {}
                1 => state_protect_ops(c)?,
                _ => return Ok(false),
            }
            c.skip(8)?;
            opaque(c)?;
            opaque(c)?;
            let n = array_count(c, "eir_server_impl_id", 1)?;
            for _ in 0..n {
                opaque(c)?;
                opaque(c)?;
                c.skip(12)?;
            }
        }
        READDIR => {
            c.skip(8)?;
            let mut n = 0usize;
            while bool_(c)? {
                if n >= MAX_ARRAY_ENTRIES {
                    return Err(c.limit("READDIR entries", MAX_ARRAY_ENTRIES));
                }
                n = n.saturating_add(1);
                c.skip(8)?;
                opaque(c)?;
                fattr(c)?;
            }
            bool_(c)?;
        }
        OPEN => {
            c.skip(16 + 20 + 4)?;
            bitmap(c)?;
            match c.u32()? {
                0 => {}
                1 => {
                    c.skip(16)?;
                    bool_(c)?;
                    nfsace(c)?;
                }
                2 => {
                    c.skip(16)?;
                    bool_(c)?;
                    match c.u32()? {
                        1 => c.skip(8)?,
                        2 => c.skip(8)?,
                        _ => return Ok(false),
                    }
                    nfsace(c)?;
                }
                3 => {
                    if matches!(c.u32()?, 2 | 3) {
                        bool_(c)?;
                    }
                }
                _ => return Ok(false),
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// The `nfsstat3` name of an NFSv3 status code (RFC 1813 section 2.6),
/// `None` for a code the RFC does not define.
pub const fn nfsstat3_name(code: u32) -> Option<&'static str> {
    Some(match code {
        0 => "NFS3_OK",
        1 => "NFS3ERR_PERM",
        2 => "NFS3ERR_NOENT",
        5 => "NFS3ERR_IO",
        6 => "NFS3ERR_NXIO",
        13 => "NFS3ERR_ACCES",
        17 => "NFS3ERR_EXIST",
        18 => "NFS3ERR_XDEV",
        19 => "NFS3ERR_NODEV",
        20 => "NFS3ERR_NOTDIR",
        21 => "NFS3ERR_ISDIR",
        22 => "NFS3ERR_INVAL",
        27 => "NFS3ERR_FBIG",
        28 => "NFS3ERR_NOSPC",
        30 => "NFS3ERR_ROFS",
        31 => "NFS3ERR_MLINK",
        63 => "NFS3ERR_NAMETOOLONG",
        66 => "NFS3ERR_NOTEMPTY",
        69 => "NFS3ERR_DQUOT",
        70 => "NFS3ERR_STALE",
        71 => "NFS3ERR_REMOTE",
        10001 => "NFS3ERR_BADHANDLE",
        10002 => "NFS3ERR_NOT_SYNC",
        10003 => "NFS3ERR_BAD_COOKIE",
        10004 => "NFS3ERR_NOTSUPP",
        10005 => "NFS3ERR_TOOSMALL",
        10006 => "NFS3ERR_SERVERFAULT",
        10007 => "NFS3ERR_BADTYPE",
        10008 => "NFS3ERR_JUKEBOX",
        _ => return None,
    })
}

/// The `nfsstat4` name of an NFSv4.x status code (RFC 7530 section 13,
/// RFC 8881 section 15, RFC 7862 section 11, RFC 8276 section 8.4), `None`
/// for a code none of them defines.
pub const fn nfsstat4_name(code: u32) -> Option<&'static str> {
    Some(match code {
        0 => "NFS4_OK",
        1 => "NFS4ERR_PERM",
        2 => "NFS4ERR_NOENT",
        5 => "NFS4ERR_IO",
        6 => "NFS4ERR_NXIO",
        13 => "NFS4ERR_ACCESS",
        17 => "NFS4ERR_EXIST",
        18 => "NFS4ERR_XDEV",
        20 => "NFS4ERR_NOTDIR",
        21 => "NFS4ERR_ISDIR",
        22 => "NFS4ERR_INVAL",
        27 => "NFS4ERR_FBIG",
        28 => "NFS4ERR_NOSPC",
        30 => "NFS4ERR_ROFS",
        31 => "NFS4ERR_MLINK",
        63 => "NFS4ERR_NAMETOOLONG",
        66 => "NFS4ERR_NOTEMPTY",
        69 => "NFS4ERR_DQUOT",
        70 => "NFS4ERR_STALE",
        10001 => "NFS4ERR_BADHANDLE",
        10003 => "NFS4ERR_BAD_COOKIE",
        10004 => "NFS4ERR_NOTSUPP",
        10005 => "NFS4ERR_TOOSMALL",
        10006 => "NFS4ERR_SERVERFAULT",
        10007 => "NFS4ERR_BADTYPE",
        10008 => "NFS4ERR_DELAY",
        10009 => "NFS4ERR_SAME",
        10010 => "NFS4ERR_DENIED",
        10011 => "NFS4ERR_EXPIRED",
        10012 => "NFS4ERR_LOCKED",
        10013 => "NFS4ERR_GRACE",
        10014 => "NFS4ERR_FHEXPIRED",
        10015 => "NFS4ERR_SHARE_DENIED",
        10016 => "NFS4ERR_WRONGSEC",
        10017 => "NFS4ERR_CLID_INUSE",
        10018 => "NFS4ERR_RESOURCE",
        10019 => "NFS4ERR_MOVED",
        10020 => "NFS4ERR_NOFILEHANDLE",
        10021 => "NFS4ERR_MINOR_VERS_MISMATCH",
        10022 => "NFS4ERR_STALE_CLIENTID",
        10023 => "NFS4ERR_STALE_STATEID",
        10024 => "NFS4ERR_OLD_STATEID",
        10025 => "NFS4ERR_BAD_STATEID",
        10026 => "NFS4ERR_BAD_SEQID",
        10027 => "NFS4ERR_NOT_SAME",
        10028 => "NFS4ERR_LOCK_RANGE",
        10029 => "NFS4ERR_SYMLINK",
        10030 => "NFS4ERR_RESTOREFH",
        10031 => "NFS4ERR_LEASE_MOVED",
        10032 => "NFS4ERR_ATTRNOTSUPP",
        10033 => "NFS4ERR_NO_GRACE",
        10034 => "NFS4ERR_RECLAIM_BAD",
        10035 => "NFS4ERR_RECLAIM_CONFLICT",
        10036 => "NFS4ERR_BADXDR",
        10037 => "NFS4ERR_LOCKS_HELD",
        10038 => "NFS4ERR_OPENMODE",
        10039 => "NFS4ERR_BADOWNER",
        10040 => "NFS4ERR_BADCHAR",
        10041 => "NFS4ERR_BADNAME",
        10042 => "NFS4ERR_BAD_RANGE",
        10043 => "NFS4ERR_LOCK_NOTSUPP",
        10044 => "NFS4ERR_OP_ILLEGAL",
        10045 => "NFS4ERR_DEADLOCK",
        10046 => "NFS4ERR_FILE_OPEN",
        10047 => "NFS4ERR_ADMIN_REVOKED",
        10048 => "NFS4ERR_CB_PATH_DOWN",
        10049 => "NFS4ERR_BADIOMODE",
        10050 => "NFS4ERR_BADLAYOUT",
        10051 => "NFS4ERR_BAD_SESSION_DIGEST",
        10052 => "NFS4ERR_BADSESSION",
        10053 => "NFS4ERR_BADSLOT",
        10054 => "NFS4ERR_COMPLETE_ALREADY",
        10055 => "NFS4ERR_CONN_NOT_BOUND_TO_SESSION",
        10056 => "NFS4ERR_DELEG_ALREADY_WANTED",
        10057 => "NFS4ERR_BACK_CHAN_BUSY",
        10058 => "NFS4ERR_LAYOUTTRYLATER",
        10059 => "NFS4ERR_LAYOUTUNAVAILABLE",
        10060 => "NFS4ERR_NOMATCHING_LAYOUT",
        10061 => "NFS4ERR_RECALLCONFLICT",
        10062 => "NFS4ERR_UNKNOWN_LAYOUTTYPE",
        10063 => "NFS4ERR_SEQ_MISORDERED",
        10064 => "NFS4ERR_SEQUENCE_POS",
        10065 => "NFS4ERR_REQ_TOO_BIG",
        10066 => "NFS4ERR_REP_TOO_BIG",
        10067 => "NFS4ERR_REP_TOO_BIG_TO_CACHE",
        10068 => "NFS4ERR_RETRY_UNCACHED_REP",
        10069 => "NFS4ERR_UNSAFE_COMPOUND",
        10070 => "NFS4ERR_TOO_MANY_OPS",
        10071 => "NFS4ERR_OP_NOT_IN_SESSION",
        10072 => "NFS4ERR_HASH_ALG_UNSUPP",
        10074 => "NFS4ERR_CLIENTID_BUSY",
        10075 => "NFS4ERR_PNFS_IO_HOLE",
        10076 => "NFS4ERR_SEQ_FALSE_RETRY",
        10077 => "NFS4ERR_BAD_HIGH_SLOT",
        10078 => "NFS4ERR_DEADSESSION",
        10079 => "NFS4ERR_ENCR_ALG_UNSUPP",
        10080 => "NFS4ERR_PNFS_NO_LAYOUT",
        10081 => "NFS4ERR_NOT_ONLY_OP",
        10082 => "NFS4ERR_WRONG_CRED",
        10083 => "NFS4ERR_WRONG_TYPE",
        10084 => "NFS4ERR_DIRDELEG_UNAVAIL",
        10085 => "NFS4ERR_REJECT_DELEG",
        10086 => "NFS4ERR_RETURNCONFLICT",
        10087 => "NFS4ERR_DELEG_REVOKED",
        10088 => "NFS4ERR_PARTNER_NOTSUPP",
        10089 => "NFS4ERR_PARTNER_NO_AUTH",
        10090 => "NFS4ERR_UNION_NOTSUPP",
        10091 => "NFS4ERR_OFFLOAD_DENIED",
        10092 => "NFS4ERR_WRONG_LFS",
        10093 => "NFS4ERR_BADLABEL",
        10094 => "NFS4ERR_OFFLOAD_NO_REQS",
        10095 => "NFS4ERR_NOXATTR",
        10096 => "NFS4ERR_XATTR2BIG",
        _ => return None,
    })
}

/// The NFS status of a reply, decoded no further than needed to know it.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NfsStatus {
    /// NFSv3: the `nfsstat3` that every result but NULL's starts with
    /// (RFC 1813 section 3.3).
    V3 {
        /// The `nfsstat3`.
        status: u32,
    },
    /// NFSv4.x COMPOUND: the compound status (that of the last op the
    /// server evaluated) and, when it is not NFS4_OK, the op that failed.
    V4 {
        /// The COMPOUND's `nfsstat4`.
        status: u32,
        /// The first result whose status is not NFS4_OK; `None` when the
        /// compound succeeded, or when the walk could not reach it (an op
        /// before it this walker cannot step over, or a cut message).
        failed: Option<ResOp>,
    },
}

impl NfsStatus {
    /// The status code.
    pub const fn code(&self) -> u32 {
        match self {
            NfsStatus::V3 { status } | NfsStatus::V4 { status, .. } => *status,
        }
    }

    /// True when the status is NFS3_OK / NFS4_OK.
    pub const fn is_ok(&self) -> bool {
        self.code() == 0
    }

    /// The symbolic name (`NFS3ERR_JUKEBOX`, `NFS4ERR_DELAY`, ...), `None`
    /// for a code no RFC defines.
    pub const fn name(&self) -> Option<&'static str> {
        match self {
            NfsStatus::V3 { status } => nfsstat3_name(*status),
            NfsStatus::V4 { status, .. } => nfsstat4_name(*status),
        }
    }
}

/// Decodes the NFS status of a successful RPC reply's `results` to the
/// NFS program's call `(vers, proc)`: NFSv3 procedures 1-21 and NFSv4
/// COMPOUND. `Ok(None)` for replies that carry no status (NULL, other
/// versions and procedures). For a failed COMPOUND the results are walked
/// up to the failing op (with `ddp`, the reply's write list, to step over
/// READ data); the walk stops there, so the cost is the ops before it.
///
/// When a COMPOUND's results end (or are malformed) after its status, the
/// status is returned with no failed op: what could be read is not lost.
///
/// # Errors
/// [`Error::Truncated`] when the results end before the status word.
pub fn reply_status(
    vers: u32,
    proc: u32,
    results: &[u8],
    ddp: Ddp<'_>,
) -> Result<Option<NfsStatus>> {
    match (vers, proc) {
        (3, 1..=21) => {
            let mut c = Cursor::with_base(results, Layer::Nfs, ddp.base);
            Ok(Some(NfsStatus::V3 { status: c.u32()? }))
        }
        (4, 1) => {
            // The COMPOUND's status comes first: when the rest is cut (a
            // snap length, the start of a reply chunk kept by a
            // correlator), the status is still known, the failed op not.
            let mut r = match CompoundReply::parse_with(results, ddp) {
                Ok(r) => r,
                Err(e) => {
                    let mut c = Cursor::with_base(results, Layer::Nfs, ddp.base);
                    let Ok(status) = c.u32() else { return Err(e) };
                    return Ok(Some(NfsStatus::V4 {
                        status,
                        failed: None,
                    }));
                }
            };
            let failed = if r.status == NFS4_OK {
                None
            } else {
                r.ops.by_ref().find(|o| o.status != NFS4_OK)
            };
            Ok(Some(NfsStatus::V4 {
                status: r.status,
                failed,
            }))
        }
        _ => Ok(None),
    }
}

/// What [`describe_call`] found.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallSummary {
    /// [`program_name`] of the program.
    pub program: Option<&'static str>,
    /// [`proc_name`] of the procedure.
    pub procedure: Option<&'static str>,
    /// The first [`SUMMARY_OPS`] op numbers of a COMPOUND or CB_COMPOUND;
    /// see `ops_len`.
    pub ops: [u32; SUMMARY_OPS],
    /// How many entries of `ops` are filled.
    pub ops_len: usize,
    /// `numops` of a COMPOUND as sent (0 for other procedures).
    pub op_count: u32,
    /// True when every op was walked and all fit in `ops` (always true for
    /// procedures other than COMPOUND).
    pub ops_complete: bool,
    /// The `minorversion` of an NFSv4 COMPOUND or CB_COMPOUND (0, 1, 2);
    /// `None` for other procedures or when the arguments were cut before
    /// the op count that follows it.
    pub minorversion: Option<u32>,
}

impl CallSummary {
    /// The name of op number `op` of this call: a CB_COMPOUND's operations
    /// are the callback operations, numbered apart from a COMPOUND's.
    pub fn op_name(&self, op: u32) -> Option<&'static str> {
        if self.procedure == Some("CB_COMPOUND") {
            cb_op_name(op)
        } else {
            op_name(op)
        }
    }

    /// The op numbers found.
    pub fn ops(&self) -> &[u32] {
        self.ops.get(..self.ops_len).unwrap_or(&self.ops)
    }
}

/// Names a call and, for an NFSv4 COMPOUND or a Linux callback
/// CB_COMPOUND, lists its ops. No allocation; never fails (an undecodable
/// COMPOUND gives `ops_complete == false`).
pub fn describe_call(prog: u32, vers: u32, proc: u32, args: &[u8]) -> CallSummary {
    describe_call_with(prog, vers, proc, args, Ddp::NONE)
}

/// [`describe_call`] with the transport's chunk lists, so that WRITE data
/// moved to a Read chunk is stepped over (see the module docs).
pub fn describe_call_with(
    prog: u32,
    vers: u32,
    proc: u32,
    args: &[u8],
    ddp: Ddp<'_>,
) -> CallSummary {
    let mut s = CallSummary {
        program: program_name(prog),
        procedure: proc_name(prog, vers, proc),
        ops: [0; SUMMARY_OPS],
        ops_len: 0,
        op_count: 0,
        ops_complete: true,
        minorversion: None,
    };
    let compound = match (prog, vers, proc) {
        (NFS_PROGRAM, 4, 1) => Some(Compound::parse_with(args, ddp)),
        (NFS4_CALLBACK_PROGRAM_LINUX, _, 1) => Some(Compound::parse_callback(args)),
        _ => None,
    };
    match compound {
        None => {}
        Some(Err(_)) => s.ops_complete = false,
        Some(Ok(mut c)) => {
            s.op_count = c.op_count;
            s.minorversion = Some(c.minorversion);
            let mut overflow = false;
            for op in c.ops.by_ref() {
                match s.ops.get_mut(s.ops_len) {
                    Some(slot) => {
                        *slot = op;
                        s.ops_len = s.ops_len.saturating_add(1);
                    }
                    None => {
                        overflow = true;
                        break;
                    }
                }
            }
            s.ops_complete = !overflow && c.ops.is_complete();
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpcrdma::{ReadSegment, Segment};
    use hex_literal::hex;
    use proptest::prelude::*;

    #[test]
    fn real_v3_write_call() {
        use crate::oncrpc::RpcMsg;
        use crate::rpcrdma::real_frames::V3_WRITE_CALL;
        use crate::rpcrdma::RpcRdmaHeader;
        // captures/v3-ddp.pcap frame 80, through all three layers.
        let (h, payload) = RpcRdmaHeader::parse(&V3_WRITE_CALL).unwrap();
        let (m, args) = RpcMsg::parse(payload).unwrap();
        let c = m.call().unwrap();
        let s = describe_call_with(
            c.prog,
            c.vers,
            c.proc,
            args,
            Ddp::new(h.chunks().unwrap(), m.header_len()),
        );
        assert_eq!(s.program, Some("NFS"));
        assert_eq!(s.procedure, Some("WRITE"));
        assert!(s.ops_complete && s.ops().is_empty());
        // The WRITE3args data length word is the last inline word, and the
        // read chunk sits right after it (RFC 8166 3.4.4.1 / 3.4.5).
        assert_eq!(&args[args.len() - 4..], &262_144u32.to_be_bytes());
        let pos = h.chunks().unwrap().read_list().next().unwrap().position as usize;
        assert_eq!(pos, m.header_len() + args.len());
    }

    #[test]
    fn names() {
        assert_eq!(program_name(100_003), Some("NFS"));
        assert_eq!(program_name(0x4000_0000), Some("NFSv4 callback"));
        assert_eq!(program_name(7), None);
        assert_eq!(proc_name(NFS_PROGRAM, 3, 0), Some("NULL"));
        assert_eq!(proc_name(NFS_PROGRAM, 3, 17), Some("READDIRPLUS"));
        assert_eq!(proc_name(NFS_PROGRAM, 3, 21), Some("COMMIT"));
        assert_eq!(proc_name(NFS_PROGRAM, 3, 22), None);
        assert_eq!(proc_name(NFS_PROGRAM, 2, 17), Some("STATFS"));
        assert_eq!(proc_name(NFS_PROGRAM, 4, 1), Some("COMPOUND"));
        assert_eq!(proc_name(NFS_PROGRAM, 4, 2), None);
        assert_eq!(proc_name(MOUNT_PROGRAM, 3, 1), Some("MNT"));
        assert_eq!(proc_name(MOUNT_PROGRAM, 3, 6), None);
        assert_eq!(proc_name(MOUNT_PROGRAM, 1, 6), Some("EXPORTALL"));
        assert_eq!(proc_name(MOUNT_PROGRAM, 2, 7), Some("PATHCONF"));
        assert_eq!(proc_name(NLM_PROGRAM, 4, 2), Some("LOCK"));
        assert_eq!(proc_name(NLM_PROGRAM, 4, 23), Some("FREE_ALL"));
        assert_eq!(proc_name(NLM_PROGRAM, 1, 20), None);
        assert_eq!(proc_name(NLM_PROGRAM, 4, 16), None);
        assert_eq!(proc_name(NFSACL_PROGRAM, 3, 1), Some("GETACL"));
        assert_eq!(proc_name(NFSACL_PROGRAM, 2, 4), Some("ACCESS"));
        assert_eq!(
            proc_name(NFS4_CALLBACK_PROGRAM_LINUX, 1, 1),
            Some("CB_COMPOUND")
        );
        assert_eq!(op_name(3), Some("ACCESS"));
        assert_eq!(op_name(38), Some("WRITE"));
        assert_eq!(op_name(53), Some("SEQUENCE"));
        assert_eq!(op_name(58), Some("RECLAIM_COMPLETE"));
        assert_eq!(op_name(68), Some("READ_PLUS"));
        assert_eq!(op_name(71), Some("CLONE"));
        assert_eq!(op_name(75), Some("REMOVEXATTR"));
        assert_eq!(op_name(76), None);
        assert_eq!(op_name(2), None);
        assert_eq!(op_name(10044), Some("ILLEGAL"));
        assert_eq!(cb_op_name(11), Some("CB_SEQUENCE"));
        assert_eq!(cb_op_name(15), Some("CB_OFFLOAD"));
        assert_eq!(cb_op_name(16), None);
        // Spot-check the table against the op constants.
        for (n, name) in [
            (op::PUTFH, "PUTFH"),
            (op::GETATTR, "GETATTR"),
            (op::EXCHANGE_ID, "EXCHANGE_ID"),
            (op::ALLOCATE, "ALLOCATE"),
            (op::SEEK, "SEEK"),
            (op::GETXATTR, "GETXATTR"),
        ] {
            assert_eq!(op_name(n), Some(name));
        }
    }

    // NFSv4.1 COMPOUND "SEQUENCE PUTFH GETATTR" as a Linux client sends it
    // for a GETATTR (RFC 8881 section 18.46 / 18.19 / 18.7 layouts; tag
    // empty, 8-byte file handle, 2-word bitmap).
    const SEQ_PUTFH_GETATTR: [u8; 80] = hex!(
        "00000000 00000001 00000003"
        "00000035 0102030405060708090a0b0c0d0e0f10 00000005 00000000 00000000 00000000"
        "00000016 00000008 aabbccddeeff0011"
        "00000009 00000002 0010011a 00b0a23a"
    );

    #[test]
    fn compound_call_walk() {
        let mut c = Compound::parse(&SEQ_PUTFH_GETATTR).unwrap();
        assert_eq!(c.tag, b"");
        assert_eq!(c.minorversion, 1);
        assert_eq!(c.op_count, 3);
        let ops: Vec<u32> = c.ops.by_ref().collect();
        assert_eq!(ops, [op::SEQUENCE, op::PUTFH, op::GETATTR]);
        assert!(c.ops.is_complete());
        assert!(c.ops.rest().is_empty());
        let s = describe_call(NFS_PROGRAM, 4, 1, &SEQ_PUTFH_GETATTR);
        assert_eq!(s.program, Some("NFS"));
        assert_eq!(s.procedure, Some("COMPOUND"));
        assert_eq!(s.ops(), [53, 22, 9]);
        assert!(s.ops_complete);
        assert_eq!(s.op_count, 3);
        assert_eq!(s.minorversion, Some(1));
    }

    #[test]
    fn compound_truncated_at_every_offset() {
        for cut in 0..SEQ_PUTFH_GETATTR.len() {
            let b = &SEQ_PUTFH_GETATTR[..cut];
            match Compound::parse(b) {
                Err(e) => {
                    assert!(cut < 12);
                    assert!(matches!(
                        e,
                        Error::Truncated {
                            layer: Layer::Nfs,
                            ..
                        }
                    ));
                }
                Ok(mut c) => {
                    let n = c.ops.by_ref().count();
                    assert!(n <= 3);
                    assert!(!c.ops.is_complete(), "cut {cut}");
                    match c.ops.stop() {
                        Some(Stop::Error(Error::Truncated {
                            offset, available, ..
                        })) => {
                            assert!(offset <= cut);
                            assert_eq!(available, cut - offset);
                        }
                        other => panic!("cut {cut}: {other:?}"),
                    }
                }
            }
            let s = describe_call(NFS_PROGRAM, 4, 1, b);
            assert!(!s.ops_complete);
            // Unknown until the op count is there, never a guessed 0.
            assert_eq!(s.minorversion, (cut >= 12).then_some(1), "cut {cut}");
        }
    }

    #[test]
    fn unsupported_op_is_yielded_then_stops() {
        // GETDEVICELIST (48) has no skipper: walk yields it and stops.
        let b = hex!("00000000 00000001 00000002 00000030 00000000 00000018");
        let mut c = Compound::parse(&b).unwrap();
        assert_eq!(c.ops.by_ref().collect::<Vec<_>>(), [48]);
        assert!(!c.ops.is_complete());
        assert_eq!(c.ops.stop(), Some(Stop::Unsupported { op: 48 }));
        let s = describe_call(NFS_PROGRAM, 4, 1, &b);
        assert_eq!(s.ops(), [48]);
        assert!(!s.ops_complete);
    }

    #[test]
    fn hostile_counts() {
        let mut b = hex!("00000000 00000000 ffffffff").to_vec();
        for _ in 0..=MAX_COMPOUND_OPS {
            b.extend_from_slice(&hex!("00000020")); // SAVEFH, no args
        }
        let mut c = Compound::parse(&b).unwrap();
        assert_eq!(c.ops.by_ref().count(), MAX_COMPOUND_OPS);
        assert!(matches!(
            c.ops.stop(),
            Some(Stop::Error(Error::LimitExceeded {
                what: "COMPOUND ops",
                ..
            }))
        ));
        // A bitmap claiming 2^32-1 words.
        let b = hex!("00000000 00000000 00000001 00000009 ffffffff");
        let mut c = Compound::parse(&b).unwrap();
        assert_eq!(c.ops.by_ref().collect::<Vec<_>>(), [9]);
        assert!(matches!(
            c.ops.stop(),
            Some(Stop::Error(Error::LimitExceeded {
                offset: 16,
                what: "bitmap4 words",
                ..
            }))
        ));
        // An over-long tag.
        assert!(matches!(
            Compound::parse(&hex!("00000401")),
            Err(Error::BadField {
                field: "tag length",
                ..
            })
        ));
        // A file handle over NFS4_FHSIZE.
        let b = hex!("00000000 00000000 00000001 00000016 00000081");
        let mut c = Compound::parse(&b).unwrap();
        c.ops.by_ref().for_each(drop);
        assert!(matches!(
            c.ops.stop(),
            Some(Stop::Error(Error::BadField {
                field: "nfs_fh4 length",
                value: 129,
                ..
            }))
        ));
    }

    // SEQUENCE PUTFH WRITE(len 8192) GETATTR with the WRITE data moved to a
    // Read chunk: the 8192 bytes are absent and GETATTR follows the length
    // word directly. The RPC header before these args is 100 bytes long.
    const WRITE_DDP: [u8; 116] = hex!(
        "00000000 00000001 00000004"
        "00000035 0102030405060708090a0b0c0d0e0f10 00000005 00000000 00000000 00000000"
        "00000016 00000008 aabbccddeeff0011"
        "00000026 00000001 0000000000000000000000aa 0000000000010000 00000002 00002000"
        "00000009 00000002 0010011a 00b0a23a"
    );

    #[test]
    fn write_with_ddp_removed_data() {
        // The data would start at 100 + 100 = 200 in the Payload stream.
        let read = [ReadSegment {
            position: 200,
            segment: Segment {
                handle: 1,
                length: 8192,
                offset: 0x1000,
            },
        }];
        let chunks = Chunks::new(&read, &[], None);
        let mut c = Compound::parse_with(&WRITE_DDP, Ddp::new(chunks, 100)).unwrap();
        let ops: Vec<u32> = c.ops.by_ref().collect();
        assert_eq!(ops, [op::SEQUENCE, op::PUTFH, op::WRITE, op::GETATTR]);
        assert!(c.ops.is_complete());
        let s = describe_call_with(NFS_PROGRAM, 4, 1, &WRITE_DDP, Ddp::new(chunks, 100));
        assert!(s.ops_complete);
        assert_eq!(s.ops(), [53, 22, 38, 9]);

        // Without the hint the data looks missing: an honest stop.
        let mut c = Compound::parse(&WRITE_DDP).unwrap();
        assert_eq!(c.ops.by_ref().last(), Some(op::WRITE));
        assert!(matches!(
            c.ops.stop(),
            Some(Stop::Error(Error::Truncated { .. }))
        ));

        // A chunk at that position whose length is not the data's.
        let bad = [ReadSegment {
            position: 200,
            segment: Segment {
                handle: 1,
                length: 100,
                offset: 0,
            },
        }];
        let mut c =
            Compound::parse_with(&WRITE_DDP, Ddp::new(Chunks::new(&bad, &[], None), 100)).unwrap();
        c.ops.by_ref().for_each(drop);
        assert!(matches!(
            c.ops.stop(),
            Some(Stop::Error(Error::BadField {
                field: "read chunk length",
                ..
            }))
        ));
    }

    #[test]
    fn write_inline_data() {
        let b = hex!(
            "00000000 00000000 00000002"
            "00000026 00000001 0000000000000000000000aa 0000000000000000 00000002 00000003 616263 00"
            "0000000a"
        );
        let s = describe_call(NFS_PROGRAM, 4, 1, &b);
        assert_eq!(s.ops(), [op::WRITE, op::GETFH]);
        assert!(s.ops_complete);
    }

    #[test]
    fn open_create_and_claims() {
        // OPEN: seqid, access, deny, owner{clientid, "ab"}, CREATE UNCHECKED
        // fattr4{bitmap[1], attrs 4 bytes}, CLAIM_NULL "f"; then GETFH.
        let b = hex!(
            "00000000 00000000 00000002"
            "00000012 00000000 00000002 00000000 0000000000000001 00000002 61620000"
            "00000001 00000000 00000001 00000010 00000004 000001a4"
            "00000000 00000001 66000000"
            "0000000a"
        );
        let s = describe_call(NFS_PROGRAM, 4, 1, &b);
        assert_eq!(s.ops(), [op::OPEN, op::GETFH]);
        assert!(s.ops_complete);
    }

    #[test]
    fn callback_compound() {
        // CB_COMPOUND: tag "", minor 1, ident 0, CB_SEQUENCE (no referring
        // calls), CB_RECALL(stateid, truncate, fh 4 bytes).
        let b = hex!(
            "00000000 00000001 00000000 00000002"
            "0000000b 0102030405060708090a0b0c0d0e0f10 00000001 00000000 00000000 00000000 00000000"
            "00000004 000000010102030405060708090a0b0c 00000000 00000004 deadbeef"
        );
        let s = describe_call(NFS4_CALLBACK_PROGRAM_LINUX, 1, 1, &b);
        assert_eq!(s.procedure, Some("CB_COMPOUND"));
        assert_eq!(s.ops(), [cb_op::CB_SEQUENCE, cb_op::CB_RECALL]);
        assert!(s.ops_complete);
    }

    #[test]
    fn summary_capacity() {
        let mut b = hex!("00000000 00000000 00000014").to_vec();
        for _ in 0..20 {
            b.extend_from_slice(&hex!("00000020"));
        }
        let s = describe_call(NFS_PROGRAM, 4, 1, &b);
        assert_eq!(s.ops_len, SUMMARY_OPS);
        assert_eq!(s.op_count, 20);
        assert!(!s.ops_complete);
        let s = describe_call(NFS_PROGRAM, 3, 1, &[]);
        assert_eq!(s.procedure, Some("GETATTR"));
        assert!(s.ops_complete);
        assert_eq!(s.minorversion, None, "NFSv3 has no minor version");
        assert!(s.ops().is_empty());
    }

    // Reply to SEQUENCE PUTFH READ(eof, 4096 bytes in a Write chunk).
    const READ_REPLY_DDP: [u8; 80] = hex!(
        "00000000 00000000 00000003"
        "00000035 00000000 0102030405060708090a0b0c0d0e0f10 00000005 00000000 0000003f 0000003f 00000000"
        "00000016 00000000"
        "00000019 00000000 00000001 00001000"
    );

    #[test]
    fn compound_reply_walk() {
        let segs = [Segment {
            handle: 7,
            length: 4096,
            offset: 0,
        }];
        let write: [&[Segment]; 1] = [&segs];
        let chunks = Chunks::new(&[], &write, None);
        let mut r = CompoundReply::parse_with(&READ_REPLY_DDP, Ddp::new(chunks, 24)).unwrap();
        assert_eq!(r.status, 0);
        assert_eq!(r.op_count, 3);
        let ops: Vec<ResOp> = r.ops.by_ref().collect();
        assert_eq!(
            ops,
            [
                ResOp {
                    op: op::SEQUENCE,
                    status: 0
                },
                ResOp {
                    op: op::PUTFH,
                    status: 0
                },
                ResOp {
                    op: op::READ,
                    status: 0
                }
            ]
        );
        assert!(r.ops.is_complete());

        // Without the write list, the data looks truncated.
        let mut r = CompoundReply::parse(&READ_REPLY_DDP).unwrap();
        r.ops.by_ref().for_each(drop);
        assert!(matches!(
            r.ops.stop(),
            Some(Stop::Error(Error::Truncated { .. }))
        ));

        for cut in 0..READ_REPLY_DDP.len() {
            if let Ok(mut r) =
                CompoundReply::parse_with(&READ_REPLY_DDP[..cut], Ddp::new(chunks, 24))
            {
                r.ops.by_ref().for_each(drop);
                assert!(!r.ops.is_complete(), "cut {cut}");
            }
        }
    }

    #[test]
    fn compound_reply_stops_at_error() {
        // PUTFH ok, LOOKUP NFS4ERR_NOENT (2): walk ends, complete.
        let b = hex!("00000002 00000000 00000003 00000016 00000000 0000000f 00000002");
        let mut r = CompoundReply::parse(&b).unwrap();
        assert_eq!(r.ops.by_ref().count(), 2);
        assert!(r.ops.is_complete());
    }

    #[test]
    fn nfs3_reply_status_is_the_first_word() {
        // GETATTR3res with NFS3ERR_STALE (70): the status alone.
        let b = hex!("00000046");
        let s = reply_status(3, 1, &b, Ddp::NONE).unwrap().unwrap();
        assert_eq!(s, NfsStatus::V3 { status: 70 });
        assert_eq!(s.name(), Some("NFS3ERR_STALE"));
        assert!(!s.is_ok());
        // WRITE3res NFS3ERR_JUKEBOX (10008) and its wcc_data after it.
        let b = hex!("00002718 00000000 00000000");
        let s = reply_status(3, 7, &b, Ddp::NONE).unwrap().unwrap();
        assert_eq!(s.name(), Some("NFS3ERR_JUKEBOX"));
        // NFS3_OK.
        let s = reply_status(3, 21, &hex!("00000000"), Ddp::NONE)
            .unwrap()
            .unwrap();
        assert!(s.is_ok());
        assert_eq!(s.name(), Some("NFS3_OK"));
        // NULL has no status, nor do procedures beyond COMMIT or other versions.
        assert_eq!(reply_status(3, 0, &[], Ddp::NONE).unwrap(), None);
        assert_eq!(reply_status(3, 22, &b, Ddp::NONE).unwrap(), None);
        assert_eq!(reply_status(2, 1, &b, Ddp::NONE).unwrap(), None);
        assert_eq!(reply_status(4, 0, &[], Ddp::NONE).unwrap(), None);
        // A code no RFC defines is data, not an error; it has no name.
        let s = reply_status(3, 1, &hex!("0000ffff"), Ddp::NONE)
            .unwrap()
            .unwrap();
        assert_eq!((s.code(), s.name()), (0xffff, None));
        // Every cut before the status word is Truncated at its offset.
        for cut in 0..4 {
            match reply_status(3, 1, &hex!("00000046")[..cut], Ddp::NONE) {
                Err(Error::Truncated {
                    layer: Layer::Nfs,
                    offset: 0,
                    needed: 4,
                    available,
                }) => assert_eq!(available, cut),
                other => panic!("cut {cut}: {other:?}"),
            }
        }
    }

    #[test]
    fn nfs4_reply_status_names_the_failing_op() {
        // SEQUENCE ok, PUTFH NFS4ERR_STALE (70): compound status 70.
        let b = hex!(
            "00000046 00000000 00000002"
            "00000035 00000000 0102030405060708090a0b0c0d0e0f10 00000005 00000000 0000003f 0000003f 00000000"
            "00000016 00000046"
        );
        let s = reply_status(4, 1, &b, Ddp::NONE).unwrap().unwrap();
        assert_eq!(
            s,
            NfsStatus::V4 {
                status: 70,
                failed: Some(ResOp {
                    op: op::PUTFH,
                    status: 70
                })
            }
        );
        assert_eq!(s.name(), Some("NFS4ERR_STALE"));
        // SEQUENCE itself answered NFS4ERR_DELAY (10008).
        let b = hex!("00002718 00000000 00000001 00000035 00002718");
        let s = reply_status(4, 1, &b, Ddp::NONE).unwrap().unwrap();
        assert_eq!(s.name(), Some("NFS4ERR_DELAY"));
        assert!(matches!(
            s,
            NfsStatus::V4 {
                failed: Some(ResOp {
                    op: op::SEQUENCE,
                    status: 10008
                }),
                ..
            }
        ));
        // A successful COMPOUND is not walked: its READ data in a Write
        // chunk, absent here, does not matter.
        let s = reply_status(4, 1, &READ_REPLY_DDP, Ddp::NONE)
            .unwrap()
            .unwrap();
        assert_eq!(
            s,
            NfsStatus::V4 {
                status: 0,
                failed: None
            }
        );
        // Every cut: before the status word it is Truncated; from there on
        // the status is known (an RDMA_NOMSG reply's kept head, a snap
        // length) and the failing op only once it is whole.
        for cut in 0..=b.len() {
            match reply_status(4, 1, &b[..cut], Ddp::NONE) {
                Err(Error::Truncated {
                    layer: Layer::Nfs, ..
                }) => assert!(cut < 4, "cut {cut}"),
                Ok(Some(NfsStatus::V4 {
                    status: 10008,
                    failed,
                })) => {
                    assert!(cut >= 4, "cut {cut}");
                    assert_eq!(failed.is_some(), cut >= 20, "cut {cut}");
                }
                other => panic!("cut {cut}: {other:?}"),
            }
        }
    }

    #[test]
    fn nfsstat_names_cover_the_rfcs() {
        assert_eq!(nfsstat4_name(10013), Some("NFS4ERR_GRACE"));
        assert_eq!(nfsstat4_name(10096), Some("NFS4ERR_XATTR2BIG"));
        // 10073 is unassigned in RFC 8881, 10002 (NOT_SYNC) is v3 only.
        assert_eq!(nfsstat4_name(10073), None);
        assert_eq!(nfsstat4_name(10002), None);
        assert_eq!(nfsstat3_name(10002), Some("NFS3ERR_NOT_SYNC"));
        assert_eq!(nfsstat3_name(10009), None);
    }

    proptest! {
        #[test]
        fn walks_never_panic(data in proptest::collection::vec(any::<u8>(), 0..256), base in 0usize..200) {
            let read = [ReadSegment { position: 40, segment: Segment { handle: 1, length: 8, offset: 0 } }];
            let segs = [Segment { handle: 1, length: 8, offset: 0 }];
            let write: [&[Segment]; 1] = [&segs];
            let chunks = Chunks::new(&read, &write, None);
            if let Ok(mut c) = Compound::parse_with(&data, Ddp::new(chunks, base)) {
                prop_assert!(c.ops.by_ref().count() <= MAX_COMPOUND_OPS);
            }
            if let Ok(mut c) = Compound::parse_callback(&data) {
                c.ops.by_ref().for_each(drop);
            }
            if let Ok(mut r) = CompoundReply::parse_with(&data, Ddp::new(chunks, base)) {
                r.ops.by_ref().for_each(drop);
            }
            let _ = describe_call(NFS_PROGRAM, 4, 1, &data);
            let _ = reply_status(4, 1, &data, Ddp::new(chunks, base));
            let _ = reply_status(3, 6, &data, Ddp::NONE);
        }

        #[test]
        fn op_shaped_input(ops in proptest::collection::vec((0u32..80, proptest::collection::vec(0u32..3, 0..8)), 0..8)) {
            let mut data = hex!("00000000 00000001").to_vec();
            data.extend_from_slice(&(ops.len() as u32).to_be_bytes());
            for (op, words) in &ops {
                data.extend_from_slice(&op.to_be_bytes());
                for w in words { data.extend_from_slice(&w.to_be_bytes()); }
            }
            let s = describe_call(NFS_PROGRAM, 4, 1, &data);
            prop_assert!(s.ops_len <= SUMMARY_OPS);
        }
    }
}
