//! The file handle and the byte range of NFS calls, and what READ, WRITE and
//! COMMIT replies say of the data: what a storage engineer asks first of an
//! I/O ("which file, where, how much, how stable").
//!
//! NFSv3 (RFC 1813 sections 3.3.6, 3.3.7, 3.3.21): every procedure 1-21
//! starts its arguments with the object's `nfs_fh3`; then
//!
//! ```text
//! READ3args   file (opaque<64>) | offset (u64) | count (u32)
//! WRITE3args  file (opaque<64>) | offset (u64) | count (u32) | stable (u32) | data<>
//! COMMIT3args file (opaque<64>) | offset (u64) | count (u32)
//! READ3resok  post_op_attr | count (u32) | eof (bool) | data<>
//! WRITE3resok wcc_data | count (u32) | committed (u32) | verf (8)
//! ```
//!
//! NFSv4.x COMPOUND (RFC 7530 sections 16.23, 16.36, 16.3; RFC 8881 18.22,
//! 18.32, 18.3; RFC 7862 15.10): the file is the current filehandle, which
//! PUTFH sets; the stateid is skipped:
//!
//! ```text
//! PUTFH4args  object (opaque<128>)
//! READ4args   stateid (16) | offset (u64) | count (u32)
//! WRITE4args  stateid (16) | offset (u64) | stable (u32) | data<>   (count: data's length)
//! COMMIT4args offset (u64) | count (u32)
//! READ4resok  eof (bool) | data<>                                    (count: data's length)
//! WRITE4resok count (u32) | committed (u32) | writeverf (8)
//! ```
//!
//! With RPC-over-RDMA, WRITE's and READ's data may travel in a chunk; the
//! length word stays inline (RFC 8166 section 3.4.4.1), so the count is
//! known either way. A capture cut by a snap length keeps the fields before
//! the cut: each field that is not in the bytes is `None`, never 0.

use super::{op, skip_args, Ddp, NFS4_FHSIZE};
use crate::layer::Layer;
use crate::xdr::Cursor;

/// Largest NFSv3 file handle (RFC 1813 section 2.4, `NFS3_FHSIZE`).
pub const NFS3_FHSIZE: u32 = 64;

/// The CRC-32 (IEEE 802.3, as zlib's) of a file handle's bytes: the
/// "hash" Wireshark shows for a handle (`nfs.fh.hash`), a short name that
/// tells the handles of a capture apart where their first bytes (the
/// export's) are all the same.
pub fn fh_hash(fh: &[u8]) -> u32 {
    crc32_fold::update(0, fh)
}

/// The I/O operations whose byte range [`call_io`] decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IoOp {
    /// NFSv3 READ, NFSv4 READ.
    Read,
    /// NFSv4.2 READ_PLUS (RFC 7862 section 15.10): READ's arguments.
    ReadPlus,
    /// NFSv3 WRITE, NFSv4 WRITE.
    Write,
    /// NFSv3 COMMIT, NFSv4 COMMIT.
    Commit,
}

impl IoOp {
    /// The operation's name as the RFCs spell it.
    pub const fn name(self) -> &'static str {
        match self {
            IoOp::Read => "READ",
            IoOp::ReadPlus => "READ_PLUS",
            IoOp::Write => "WRITE",
            IoOp::Commit => "COMMIT",
        }
    }
}

/// `stable_how` (RFC 1813 section 3.3.7, RFC 7530 section 16.36): how far
/// a WRITE asks (or the server says it went) towards stable storage. An
/// open enum: a value no RFC defines is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StableHow {
    /// `UNSTABLE` (0): the server may keep the data in memory until COMMIT.
    Unstable,
    /// `DATA_SYNC` (1): data on stable storage, metadata perhaps not.
    DataSync,
    /// `FILE_SYNC` (2): data and metadata on stable storage.
    FileSync,
    /// A value no RFC defines.
    Unknown(u32),
}

impl From<u32> for StableHow {
    fn from(v: u32) -> Self {
        match v {
            0 => StableHow::Unstable,
            1 => StableHow::DataSync,
            2 => StableHow::FileSync,
            v => StableHow::Unknown(v),
        }
    }
}

impl From<StableHow> for u32 {
    fn from(s: StableHow) -> u32 {
        match s {
            StableHow::Unstable => 0,
            StableHow::DataSync => 1,
            StableHow::FileSync => 2,
            StableHow::Unknown(v) => v,
        }
    }
}

impl StableHow {
    /// `UNSTABLE`, `DATA_SYNC`, `FILE_SYNC`; `None` for a value no RFC defines.
    pub const fn name(self) -> Option<&'static str> {
        match self {
            StableHow::Unstable => Some("UNSTABLE"),
            StableHow::DataSync => Some("DATA_SYNC"),
            StableHow::FileSync => Some("FILE_SYNC"),
            StableHow::Unknown(_) => None,
        }
    }
}

/// What a call's arguments say of its file and byte range. Every field is
/// `None` when it is not in the bytes (cut by the capture, past an op the
/// COMPOUND walker cannot step over) or does not apply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallIo<'a> {
    /// The file handle: NFSv3's first argument; for an NFSv4 COMPOUND the
    /// current filehandle PUTFH set when the READ/WRITE/COMMIT is
    /// evaluated, or (no such op) the first PUTFH's. At most
    /// [`NFS3_FHSIZE`] / [`NFS4_FHSIZE`] bytes (longer is a bad message).
    pub fh: Option<&'a [u8]>,
    /// The I/O operation, when the call is (or its COMPOUND holds) one; a
    /// COMPOUND's first.
    pub op: Option<IoOp>,
    /// The first byte of the range.
    pub offset: Option<u64>,
    /// Bytes asked for (READ), written (WRITE: the data's length), or to
    /// commit (COMMIT; 0 means to the end of the file).
    pub count: Option<u32>,
    /// WRITE's `stable`.
    pub stable: Option<StableHow>,
}

/// What a READ, WRITE or COMMIT reply says of the data; `None` where the
/// reply does not carry it, failed, or was cut.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplyIo {
    /// Bytes read or written.
    pub count: Option<u32>,
    /// READ: the end of the file was reached.
    pub eof: Option<bool>,
    /// WRITE: how stable the server made the data.
    pub committed: Option<StableHow>,
}

/// Decodes the file handle and byte range of an NFS call (program 100003)
/// of version `vers`, procedure `proc`, from its `args`, as far as the
/// bytes go. Never fails: what cannot be decoded is `None`. `ddp` (the
/// call's read list) lets a COMPOUND walk step over WRITE data moved to a
/// Read chunk before the op it looks for.
pub fn call_io<'a>(vers: u32, proc: u32, args: &'a [u8], ddp: Ddp<'a>) -> CallIo<'a> {
    let mut io = CallIo::default();
    let mut c = Cursor::with_base(args, Layer::Nfs, ddp.base);
    match (vers, proc) {
        (3, 1..=21) => {
            let Ok(fh) = c.opaque("nfs_fh3 length", NFS3_FHSIZE) else {
                return io;
            };
            io.fh = Some(fh);
            io.op = match proc {
                6 => Some(IoOp::Read),
                7 => Some(IoOp::Write),
                21 => Some(IoOp::Commit),
                _ => None,
            };
            if io.op.is_some() {
                v3_range(&mut c, &mut io);
            }
        }
        (4, 1) => compound_io(&mut c, ddp, &mut io),
        _ => {}
    }
    io
}

/// offset, count and (WRITE) stable of an NFSv3 READ/WRITE/COMMIT.
fn v3_range(c: &mut Cursor<'_>, io: &mut CallIo<'_>) {
    io.offset = c.u64().ok();
    if io.offset.is_none() {
        return;
    }
    io.count = c.u32().ok();
    if io.count.is_some() && io.op == Some(IoOp::Write) {
        io.stable = c.u32().ok().map(StableHow::from);
    }
}

/// Walks a COMPOUND's ops, following the current (and saved) filehandle,
/// up to the first READ/WRITE/COMMIT.
fn compound_io<'a>(c: &mut Cursor<'a>, ddp: Ddp<'a>, io: &mut CallIo<'a>) {
    let head = c
        .opaque("tag length", super::MAX_TAG_LEN)
        .and_then(|_| c.skip(4))
        .and_then(|()| c.u32());
    let Ok(numops) = head else { return };
    let mut current: Option<&'a [u8]> = None;
    let mut saved: Option<&'a [u8]> = None;
    let mut first_putfh: Option<&'a [u8]> = None;
    let mut removed = 0usize;
    let walk = (numops as usize).min(super::MAX_COMPOUND_OPS);
    for _ in 0..walk {
        let Ok(opnum) = c.u32() else { break };
        let decoded = match opnum {
            op::PUTFH => c.opaque("nfs_fh4 length", NFS4_FHSIZE).map(|fh| {
                current = Some(fh);
                first_putfh = first_putfh.or(Some(fh));
                true
            }),
            op::READ | op::READ_PLUS | op::WRITE | op::COMMIT => {
                io.fh = current;
                v4_range(c, opnum, io);
                return;
            }
            op::SAVEFH => {
                saved = current;
                Ok(true)
            }
            op::RESTOREFH => {
                current = saved;
                Ok(true)
            }
            other => {
                // These set a current filehandle whose bytes the call does
                // not carry: unknown from here on, not the old one.
                if matches!(
                    other,
                    op::LOOKUP
                        | op::LOOKUPP
                        | op::OPEN
                        | op::CREATE
                        | op::OPENATTR
                        | op::PUTROOTFH
                        | op::PUTPUBFH
                ) {
                    current = None;
                }
                skip_args(c, other, &ddp, &mut removed)
            }
        };
        if !matches!(decoded, Ok(true)) {
            break;
        }
    }
    io.fh = first_putfh;
}

/// offset, count and stable of an NFSv4 READ/READ_PLUS/WRITE/COMMIT.
fn v4_range(c: &mut Cursor<'_>, opnum: u32, io: &mut CallIo<'_>) {
    io.op = Some(match opnum {
        op::READ => IoOp::Read,
        op::READ_PLUS => IoOp::ReadPlus,
        op::WRITE => IoOp::Write,
        _ => IoOp::Commit,
    });
    if opnum != op::COMMIT && c.skip(16).is_err() {
        return;
    }
    io.offset = c.u64().ok();
    if io.offset.is_none() {
        return;
    }
    if opnum == op::WRITE {
        io.stable = c.u32().ok().map(StableHow::from);
        if io.stable.is_some() {
            io.count = c.u32().ok();
        }
    } else {
        io.count = c.u32().ok();
    }
}

/// Decodes what a successful RPC reply's `results` to an NFS READ, WRITE or
/// COMMIT call of version `vers`, procedure `proc` say of the data: count
/// and eof (READ), count and committed (WRITE). Empty for other calls,
/// failed ones and bytes cut before the fields. `ddp` (the reply's write
/// list) lets a COMPOUND walk step over data in Write chunks.
pub fn reply_io(vers: u32, proc: u32, results: &[u8], ddp: Ddp<'_>) -> ReplyIo {
    let mut io = ReplyIo::default();
    let mut c = Cursor::with_base(results, Layer::Nfs, ddp.base);
    match (vers, proc) {
        (3, 6 | 7) => {
            if c.u32() != Ok(0) {
                return io;
            }
            let attrs = if proc == 6 {
                post_op_attr(&mut c)
            } else {
                pre_op_attr(&mut c).and_then(|()| post_op_attr(&mut c))
            };
            if attrs.is_err() {
                return io;
            }
            io.count = c.u32().ok();
            if io.count.is_none() {
                return io;
            }
            if proc == 6 {
                io.eof = c.bool("eof").ok();
            } else {
                io.committed = c.u32().ok().map(StableHow::from);
            }
        }
        (4, 1) => compound_reply_io(&mut c, ddp, &mut io),
        _ => {}
    }
    io
}

/// `post_op_attr` (RFC 1813 section 2.6): a bool, then a 84-byte `fattr3`.
fn post_op_attr(c: &mut Cursor<'_>) -> crate::Result<()> {
    if c.bool("attributes_follow")? {
        c.skip(84)?;
    }
    Ok(())
}

/// `pre_op_attr`: a bool, then a 24-byte `wcc_attr` (size, mtime, ctime).
fn pre_op_attr(c: &mut Cursor<'_>) -> crate::Result<()> {
    if c.bool("attributes_follow")? {
        c.skip(24)?;
    }
    Ok(())
}

/// Walks a COMPOUND reply's results up to the first READ/WRITE result.
fn compound_reply_io(c: &mut Cursor<'_>, ddp: Ddp<'_>, io: &mut ReplyIo) {
    let head = c
        .skip(4)
        .and_then(|()| c.opaque("tag length", super::MAX_TAG_LEN))
        .and_then(|_| c.u32());
    let Ok(numres) = head else { return };
    let mut used = 0usize;
    for _ in 0..(numres as usize).min(super::MAX_COMPOUND_OPS) {
        let Ok(opnum) = c.u32() else { return };
        if c.u32() != Ok(super::NFS4_OK) {
            return;
        }
        match opnum {
            op::READ => {
                io.eof = c.bool("eof").ok();
                if io.eof.is_some() {
                    io.count = c.u32().ok();
                }
                return;
            }
            op::WRITE => {
                io.count = c.u32().ok();
                if io.count.is_some() {
                    io.committed = c.u32().ok().map(StableHow::from);
                }
                return;
            }
            op::COMMIT | op::READ_PLUS => return,
            other => {
                if !matches!(super::skip_results(c, other, &ddp, &mut used), Ok(true)) {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oncrpc::RpcMsg;
    use crate::rpcrdma::RpcRdmaHeader;
    use hex_literal::hex;
    use proptest::prelude::*;

    // RDMA Send payloads (after the BTH, before the ICRC) from the lab
    // captures; the frame numbers are those tshark and `frames` print.

    /// captures/v3-ddp.pcap frame 82: NFSv3 WRITE xid 0xfa7da3d4, its 262144
    /// data bytes in a Read chunk at position 132.
    const V3_WRITE_CALL: [u8; 208] = hex!(
        "fa7da3d4000000010000008000000000000000010000008400002d3400020000fa7da3d48d23d000"
        "000000010000008400002cef00020000fa7da3d48c09a000000000000000000000000000fa7da3d4"
        "0000000000000002000186a30000000300000007000000010000002000000000000000096c616263"
        "6c69656e7400000000000000000000000000000000000000000000000000002401000701793d0000"
        "00000000279bec6c4ba24bbf919f1c0d51f9c452b43e0000d5034c5e000000000004000000040000"
        "0000000000040000"
    );
    /// captures/v3-ddp.pcap frame 1169: its reply.
    const V3_WRITE_REPLY: [u8; 164] = hex!(
        "fa7da3d4000000010000004000000000000000000000000000000000fa7da3d40000000100000000"
        "00000000000000000000000000000000000000000000000100000001000001a40000000100000000"
        "00000000000000000009900000000000000590000000000000000000ed8f5b1a61f004b600000000"
        "00003eb46b00d8f0003d11126b00d8f006ad04146b00d8f006ad04140004000000000000b8e73e3a"
        "bfe09b69"
    );
    /// captures/v3-ddp.pcap frame 1177: NFSv3 COMMIT xid 0xfd7da3d4 (offset 0, count 0).
    const V3_COMMIT_CALL: [u8; 152] = hex!(
        "fd7da3d4000000010000008000000000000000000000000000000000fd7da3d40000000000000002"
        "000186a30000000300000015000000010000002000000000000000096c6162636c69656e74000000"
        "00000000000000000000000000000000000000000000002401000701793d000000000000279bec6c"
        "4ba24bbf919f1c0d51f9c452b43e0000d5034c5e000000000000000000000000"
    );
    /// captures/v3-ddp.pcap frame 2289: NFSv3 READ xid 0x057ea3d4, a Write chunk for the data.
    const V3_READ_CALL: [u8; 192] = hex!(
        "057ea3d400000001000000800000000000000000000000010000000200002d3600020000057ea3d4"
        "8bb9c00000002cf100020000057ea3d48c4730000000000000000000057ea3d40000000000000002"
        "000186a30000000300000006000000010000002000000000000000096c6162636c69656e74000000"
        "00000000000000000000000000000000000000000000002401000701793d000000000000279bec6c"
        "4ba24bbf919f1c0d51f9c452b43e0000d5034c5e000000000000000000040000"
    );
    /// captures/v42-ddp.pcap frame 146: COMPOUND(SEQUENCE,PUTFH,WRITE) xid
    /// 0xbf7f8bf2, the data in a Read chunk at position 200.
    const V42_WRITE_CALL: [u8; 276] = hex!(
        "bf7f8bf200000001000000800000000000000001000000c800003c1100020000bf7f8bf2fdd99000"
        "00000001000000c800003b6000020000bf7f8bf28aded000000000000000000000000000bf7f8bf2"
        "0000000000000002000186a30000000400000001000000010000002000000000000000096c616263"
        "6c69656e740000000000000000000000000000000000000000000000000000000000000200000003"
        "00000035a3d8006bc6be2bff03000000000000000000001f00000000000000000000000000000016"
        "0000002401000701793d000000000000279bec6c4ba24bbf919f1c0d51f9c452e43f0000ce19ac63"
        "0000002600000000a3d8006bc6be2bff0100000000000000000000000000000000040000"
    );
    /// captures/v42-ddp.pcap frame 1166: its reply.
    const V42_WRITE_REPLY: [u8; 140] = hex!(
        "bf7f8bf2000000010000004000000000000000000000000000000000bf7f8bf20000000100000000"
        "0000000000000000000000000000000000000000000000030000003500000000a3d8006bc6be2bff"
        "03000000000000000000001f000000000000001d0000001d00000000000000160000000000000026"
        "000000000004000000000000b8e73e3abfe09b69"
    );
    /// captures/v42-ddp.pcap frame 1242: COMPOUND(SEQUENCE,PUTFH,COMMIT) xid 0xc37f8bf2.
    const V42_COMMIT_CALL: [u8; 208] = hex!(
        "c37f8bf2000000010000008000000000000000000000000000000000c37f8bf20000000000000002"
        "000186a30000000400000001000000010000002000000000000000096c6162636c69656e74000000"
        "000000000000000000000000000000000000000000000000000000020000000300000035a3d8006b"
        "c6be2bff030000000000000000000020000000000000000000000001000000160000002401000701"
        "793d000000000000279bec6c4ba24bbf919f1c0d51f9c452e43f0000ce19ac630000000500000000"
        "0000000000000000"
    );
    /// captures/v42-ddp.pcap frame 2356: COMPOUND(SEQUENCE,PUTFH,READ) xid 0xcb7f8bf2.
    const V42_READ_CALL: [u8; 264] = hex!(
        "cb7f8bf2000000010000008000000000000000000000000100000002000038dd00020000cb7f8bf2"
        "8bc35000000037cb00020000cb7f8bf28af790000000000000000000cb7f8bf20000000000000002"
        "000186a30000000400000001000000010000002000000000000000096c6162636c69656e74000000"
        "000000000000000000000000000000000000000000000000000000020000000300000035a3d8006b"
        "c6be2bff030000000000000000000025000000000000000000000000000000160000002401000701"
        "793d000000000000279bec6c4ba24bbf919f1c0d51f9c452e43f0000ce19ac630000001900000000"
        "a3d8006bc6be2bff02000000000000000000000000040000"
    );
    /// captures/v42-ddp.pcap frame 2633: its reply, the data in the Write chunk.
    const V42_READ_REPLY: [u8; 172] = hex!(
        "cb7f8bf2000000010000004000000000000000000000000100000002000038dd00020000cb7f8bf2"
        "8bc35000000037cb00020000cb7f8bf28af790000000000000000000cb7f8bf20000000100000000"
        "0000000000000000000000000000000000000000000000030000003500000000a3d8006bc6be2bff"
        "030000000000000000000025000000000000001d0000001d00000000000000160000000000000019"
        "000000000000000000040000"
    );

    const V3_FH: [u8; 36] =
        hex!("01000701793d000000000000279bec6c4ba24bbf919f1c0d51f9c452b43e0000d5034c5e");
    const V4_FH: [u8; 36] =
        hex!("01000701793d000000000000279bec6c4ba24bbf919f1c0d51f9c452e43f0000ce19ac63");

    fn call(frame: &[u8]) -> CallIo<'_> {
        let (h, payload) = RpcRdmaHeader::parse(frame).unwrap();
        let (m, args) = RpcMsg::parse(payload).unwrap();
        let c = m.call().unwrap();
        call_io(
            c.vers,
            c.proc,
            args,
            Ddp::new(h.chunks().unwrap(), m.header_len()),
        )
    }

    fn reply(frame: &[u8], vers: u32, proc: u32) -> ReplyIo {
        let (h, payload) = RpcRdmaHeader::parse(frame).unwrap();
        let (m, results) = RpcMsg::parse(payload).unwrap();
        assert!(m.call().is_none());
        reply_io(
            vers,
            proc,
            results,
            Ddp::new(h.chunks().unwrap(), m.header_len()),
        )
    }

    // tshark 4.x agrees on each: nfs.fhandle, nfs.offset3/4, nfs.count3/4,
    // nfs.write.stable, nfs.write.committed, nfs.eof.
    #[test]
    fn real_v3_write_commit_read() {
        let w = call(&V3_WRITE_CALL);
        assert_eq!(w.fh, Some(&V3_FH[..]));
        assert_eq!(w.op, Some(IoOp::Write));
        assert_eq!((w.offset, w.count), (Some(262_144), Some(262_144)));
        assert_eq!(w.stable, Some(StableHow::Unstable));
        let r = reply(&V3_WRITE_REPLY, 3, 7);
        assert_eq!(r.count, Some(262_144));
        assert_eq!(r.committed, Some(StableHow::Unstable));
        assert_eq!(r.eof, None);
        let c = call(&V3_COMMIT_CALL);
        assert_eq!((c.op, c.fh), (Some(IoOp::Commit), Some(&V3_FH[..])));
        assert_eq!((c.offset, c.count, c.stable), (Some(0), Some(0), None));
        let r = call(&V3_READ_CALL);
        assert_eq!((r.op, r.fh), (Some(IoOp::Read), Some(&V3_FH[..])));
        assert_eq!(
            (r.offset, r.count, r.stable),
            (Some(0), Some(262_144), None)
        );
    }

    #[test]
    fn real_v42_compounds() {
        let w = call(&V42_WRITE_CALL);
        assert_eq!((w.op, w.fh), (Some(IoOp::Write), Some(&V4_FH[..])));
        assert_eq!((w.offset, w.count), (Some(0), Some(262_144)));
        assert_eq!(w.stable, Some(StableHow::Unstable));
        let r = reply(&V42_WRITE_REPLY, 4, 1);
        assert_eq!(
            (r.count, r.committed, r.eof),
            (Some(262_144), Some(StableHow::Unstable), None)
        );
        let c = call(&V42_COMMIT_CALL);
        assert_eq!((c.op, c.fh), (Some(IoOp::Commit), Some(&V4_FH[..])));
        assert_eq!((c.offset, c.count, c.stable), (Some(0), Some(0), None));
        let r = call(&V42_READ_CALL);
        assert_eq!((r.op, r.fh), (Some(IoOp::Read), Some(&V4_FH[..])));
        assert_eq!((r.offset, r.count), (Some(0), Some(262_144)));
        let r = reply(&V42_READ_REPLY, 4, 1);
        assert_eq!(
            (r.count, r.eof, r.committed),
            (Some(262_144), Some(false), None)
        );
    }

    /// A snap length cuts the arguments anywhere: what is before the cut is
    /// decoded, what is after is `None`, in order, never a 0.
    #[test]
    fn every_cut_keeps_the_fields_before_it() {
        let (h, payload) = RpcRdmaHeader::parse(&V3_WRITE_CALL).unwrap();
        let (m, args) = RpcMsg::parse(payload).unwrap();
        let ddp = Ddp::new(h.chunks().unwrap(), m.header_len());
        for cut in 0..=args.len() {
            let io = call_io(3, 7, &args[..cut], ddp);
            assert_eq!(io.fh.is_some(), cut >= 40, "cut {cut}");
            assert_eq!(io.op.is_some(), cut >= 40, "cut {cut}");
            assert_eq!(io.offset, (cut >= 48).then_some(262_144), "cut {cut}");
            assert_eq!(io.count, (cut >= 52).then_some(262_144), "cut {cut}");
            assert_eq!(
                io.stable,
                (cut >= 56).then_some(StableHow::Unstable),
                "cut {cut}"
            );
        }
        let (h, payload) = RpcRdmaHeader::parse(&V42_WRITE_CALL).unwrap();
        let (m, args) = RpcMsg::parse(payload).unwrap();
        let ddp = Ddp::new(h.chunks().unwrap(), m.header_len());
        let whole = call_io(4, 1, args, ddp);
        assert!(whole.fh.is_some() && whole.offset.is_some() && whole.stable.is_some());
        for cut in 0..args.len() {
            let io = call_io(4, 1, &args[..cut], ddp);
            // The count is the data's length word, the last inline word.
            assert_eq!(io.count, None, "cut {cut}");
            assert!(
                io.offset.is_none() || io.offset == whole.offset,
                "cut {cut}"
            );
            assert!(
                io.stable.is_none() || io.stable == whole.stable,
                "cut {cut}"
            );
            assert!(io.fh.is_none() || io.fh == whole.fh, "cut {cut}");
        }
    }

    #[test]
    fn oversized_handles_and_failures_say_nothing() {
        // NFSv3 handle longer than NFS3_FHSIZE.
        let mut args = [0u8; 8 + 68];
        args[..4].copy_from_slice(&68u32.to_be_bytes());
        assert_eq!(call_io(3, 6, &args, Ddp::NONE), CallIo::default());
        // A failed READ (NFS3ERR_IO, no attributes).
        let res = hex!("00000005 00000000");
        assert_eq!(reply_io(3, 6, &res, Ddp::NONE), ReplyIo::default());
        // Other programs' versions and procedures.
        assert_eq!(call_io(2, 6, &V3_FH, Ddp::NONE), CallIo::default());
        assert_eq!(reply_io(3, 1, &res, Ddp::NONE), ReplyIo::default());
        // A COMPOUND whose current filehandle came from LOOKUP: the READ's
        // file is not in the call, so it is unknown, not the PUTFH's.
        let args = hex!(
            "00000000 00000000 00000003"
            "00000016 00000004 aabbccdd"
            "0000000f 00000001 61000000"
            "00000019 00000000 00000000 00000000 00000000 0000000000001000 00000200"
        );
        let io = call_io(4, 1, &args, Ddp::NONE);
        assert_eq!(io.op, Some(IoOp::Read));
        assert_eq!((io.fh, io.offset, io.count), (None, Some(4096), Some(512)));
    }

    #[test]
    fn fh_hash_is_wiresharks() {
        // tshark -r captures/v3-ddp.pcap -Y frame.number==1177 -e nfs.fh.hash
        assert_eq!(fh_hash(&V3_FH), 0x4fec_2610);
    }

    #[test]
    fn stable_how_round_trips() {
        for v in [0u32, 1, 2, 3, u32::MAX] {
            assert_eq!(u32::from(StableHow::from(v)), v);
        }
        assert_eq!(StableHow::from(2).name(), Some("FILE_SYNC"));
        assert_eq!(StableHow::from(7).name(), None);
    }

    proptest! {
        #[test]
        fn any_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            for (vers, proc) in [(3, 6), (3, 7), (3, 21), (3, 1), (4, 1), (2, 8)] {
                let io = call_io(vers, proc, &bytes, Ddp::NONE);
                prop_assert!(io.fh.map_or(0, <[u8]>::len) <= NFS4_FHSIZE as usize);
                let _ = reply_io(vers, proc, &bytes, Ddp::NONE);
            }
        }
    }
}
