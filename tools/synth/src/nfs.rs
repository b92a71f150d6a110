//! NFSv3 arguments and results (RFC 1813), and one NFSv4.1 COMPOUND
//! (RFC 8881), for the procedures the generator uses, written with the dissectors' XDR writer. Only the shapes matter:
//! file handles, attributes and names are plausible constants.

use rdma_dissectors::xdr::Writer;
use rdma_dissectors::{Layer, Result};

/// NFS program number (RFC 1813).
pub const NFS_PROGRAM: u32 = 100_003;
/// NFS version 3.
pub const NFS_V3: u32 = 3;
/// NFS version 4 (COMPOUND is procedure 1; the minor version is inside).
pub const NFS_V4: u32 = 4;

/// AUTH_SYS credentials body (RFC 5531 appendix A): stamp 0, machine name
/// "synth", uid 0, gid 0, no auxiliary groups.
pub const AUTH_SYS_BODY: [u8; 28] = [
    0, 0, 0, 0, 0, 0, 0, 5, b's', b'y', b'n', b't', b'h', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0,
];

/// A 32-byte file handle, as Linux knfsd hands out.
const FH: [u8; 32] = [
    0x01, 0x00, 0x07, 0x01, 0x7d, 0x3d, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2c, 0x79, 0x0e, 0x12,
    0xe5, 0x01, 0x41, 0xa8, 0xbe, 0x34, 0x1c, 0x4f, 0xbe, 0xd3, 0x43, 0x2e, 0xb0, 0x3e, 0x00, 0x00,
];

/// An NFSv3 procedure with what the generator needs to build it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proc3 {
    /// GETATTR (1).
    Getattr,
    /// LOOKUP (3).
    Lookup,
    /// ACCESS (4).
    Access,
    /// READ (6) of `count` bytes; the data travels in a write chunk.
    Read {
        /// File offset.
        offset: u64,
        /// Bytes asked for (and returned).
        count: u32,
    },
    /// WRITE (7) of `count` bytes; the data travels in a read chunk unless
    /// `inline` (then it is in the Send itself).
    Write {
        /// File offset.
        offset: u64,
        /// Bytes written.
        count: u32,
        /// Data inline in the call rather than in a read chunk.
        inline: bool,
    },
    /// READDIR (16) answered with `entries` names, through a reply chunk.
    Readdir {
        /// Directory entries in the reply.
        entries: u32,
    },
    /// NFSv4.1 COMPOUND (procedure 1) of SEQUENCE, PUTFH, GETATTR(size),
    /// inline both ways (RFC 8881 sections 16.2, 18).
    Compound41 {
        /// The SEQUENCE op's sequence ID.
        seqid: u32,
    },
}

impl Proc3 {
    /// The RPC program version: 3, or 4 for COMPOUND.
    pub const fn version(self) -> u32 {
        match self {
            Proc3::Compound41 { .. } => NFS_V4,
            _ => NFS_V3,
        }
    }

    /// The procedure number.
    pub const fn number(self) -> u32 {
        match self {
            Proc3::Compound41 { .. } => 1,
            Proc3::Getattr => 1,
            Proc3::Lookup => 3,
            Proc3::Access => 4,
            Proc3::Read { .. } => 6,
            Proc3::Write { .. } => 7,
            Proc3::Readdir { .. } => 16,
        }
    }
}

/// NFSv4.1 session ID the COMPOUNDs run in.
const SESSION_ID: [u8; 16] = *b"synth-session-01";
/// NFSv4 op numbers (RFC 8881 section 18).
const OP_GETATTR: u32 = 9;
const OP_PUTFH: u32 = 22;
const OP_SEQUENCE: u32 = 53;
/// FATTR4_SIZE is attribute 4: bit 4 of the first bitmap word.
const BITMAP_SIZE: u32 = 1 << 4;

/// Writes the call arguments. For a WRITE with a read chunk the data is
/// left out after its length word (RFC 8267 section 4: the read chunk's
/// position is where the data would start); `data` supplies inline bytes.
///
/// # Errors
/// When `buf` is too small.
pub fn call_args(p: Proc3, data: &[u8], buf: &mut [u8]) -> Result<usize> {
    let mut w = Writer::new(buf, Layer::OncRpc);
    match p {
        Proc3::Getattr => w.opaque(&FH)?,
        Proc3::Lookup => {
            w.opaque(&FH)?;
            w.opaque(b"data.bin")?;
        }
        Proc3::Access => {
            w.opaque(&FH)?;
            w.u32(0x1f)?;
        }
        Proc3::Read { offset, count } => {
            w.opaque(&FH)?;
            w.u64(offset)?;
            w.u32(count)?;
        }
        Proc3::Write {
            offset,
            count,
            inline,
        } => {
            w.opaque(&FH)?;
            w.u64(offset)?;
            w.u32(count)?;
            w.u32(2)?; // FILE_SYNC
            if inline {
                let n = (count as usize).min(data.len());
                w.opaque(data.get(..n).unwrap_or_default())?;
            } else {
                w.u32(count)?;
            }
        }
        Proc3::Compound41 { seqid } => {
            w.opaque(b"")?; // tag
            w.u32(1)?; // minorversion
            w.u32(3)?; // numops
            w.u32(OP_SEQUENCE)?;
            w.fixed_opaque(&SESSION_ID)?;
            w.u32(seqid)?;
            w.u32(0)?; // slotid
            w.u32(0)?; // highest_slotid
            w.bool(false)?; // cachethis
            w.u32(OP_PUTFH)?;
            w.opaque(&FH)?;
            w.u32(OP_GETATTR)?;
            w.u32(1)?; // bitmap4 words
            w.u32(BITMAP_SIZE)?;
        }
        Proc3::Readdir { .. } => {
            w.opaque(&FH)?;
            w.u64(0)?; // cookie
            w.fixed_opaque(&[0; 8])?; // cookieverf
            w.u32(32_768)?; // count
        }
    }
    Ok(w.position())
}

/// fattr3 (RFC 1813 section 2.6): 84 bytes.
fn fattr3(w: &mut Writer<'_>, dir: bool, size: u64, fileid: u64) -> Result<()> {
    w.u32(if dir { 2 } else { 1 })?; // type
    w.u32(if dir { 0o755 } else { 0o644 })?; // mode
    w.u32(1)?; // nlink
    w.u32(0)?; // uid
    w.u32(0)?; // gid
    w.u64(size)?;
    w.u64(size)?; // used
    w.u64(0)?; // rdev
    w.u64(0x3eb0_6b00_ce57_29b9)?; // fsid
    w.u64(fileid)?;
    for _ in 0..3 {
        w.u32(0x6b00_ce57)?; // seconds
        w.u32(0x11a4_9dd9)?; // nseconds
    }
    Ok(())
}

fn post_op_attr(w: &mut Writer<'_>, dir: bool, size: u64, fileid: u64) -> Result<()> {
    w.bool(true)?;
    fattr3(w, dir, size, fileid)
}

/// `NFS3ERR_JUKEBOX` (RFC 1813 2.6): the server cannot answer now, retry later.
pub const NFS3ERR_JUKEBOX: u32 = 10_008;

/// Writes the results of a reply that failed with `status` (an `nfsstat3`
/// other than NFS3_OK): for GETATTR, whose `GETATTR3resfail` is void
/// (RFC 1813 3.3.1), the status alone.
///
/// # Errors
/// When `buf` is too small.
pub fn error_results(status: u32, buf: &mut [u8]) -> Result<usize> {
    let mut w = Writer::new(buf, Layer::OncRpc);
    w.u32(status)?;
    Ok(w.position())
}

/// Writes the results of a successful reply. A READ's data is left out
/// after its length word, as Linux does when it goes in a write chunk.
///
/// # Errors
/// When `buf` is too small.
pub fn reply_results(p: Proc3, buf: &mut [u8]) -> Result<usize> {
    let mut w = Writer::new(buf, Layer::OncRpc);
    w.u32(0)?; // NFS3_OK, NFS4_OK
    match p {
        Proc3::Compound41 { seqid } => {
            w.opaque(b"")?; // tag
            w.u32(3)?; // numres
            w.u32(OP_SEQUENCE)?;
            w.u32(0)?;
            w.fixed_opaque(&SESSION_ID)?;
            w.u32(seqid)?;
            w.u32(0)?; // slotid
            w.u32(63)?; // highest_slotid
            w.u32(63)?; // target_highest_slotid
            w.u32(0)?; // status_flags
            w.u32(OP_PUTFH)?;
            w.u32(0)?;
            w.u32(OP_GETATTR)?;
            w.u32(0)?;
            w.u32(1)?; // bitmap4 words
            w.u32(BITMAP_SIZE)?;
            w.u32(8)?; // attrlist4 length
            w.u64(1 << 20)?; // size
        }
        Proc3::Getattr => fattr3(&mut w, false, 1 << 20, 0x30)?,
        Proc3::Lookup => {
            w.opaque(&FH)?;
            post_op_attr(&mut w, false, 1 << 20, 0x31)?;
            post_op_attr(&mut w, true, 4096, 0x2)?;
        }
        Proc3::Access => {
            post_op_attr(&mut w, false, 1 << 20, 0x31)?;
            w.u32(0x1f)?;
        }
        Proc3::Read { count, .. } => {
            post_op_attr(&mut w, false, 1 << 30, 0x31)?;
            w.u32(count)?;
            w.bool(false)?; // eof
            w.u32(count)?;
        }
        Proc3::Write { count, .. } => {
            w.bool(false)?; // wcc_data.before
            post_op_attr(&mut w, false, 1 << 30, 0x31)?;
            w.u32(count)?;
            w.u32(2)?; // FILE_SYNC
            w.fixed_opaque(&[0x5d, 0x12, 0x4d, 0x92, 0, 0, 0, 0])?; // writeverf3
        }
        Proc3::Readdir { entries } => {
            post_op_attr(&mut w, true, 4096, 0x2)?;
            w.fixed_opaque(&[0; 8])?; // cookieverf
            let mut name = *b"file-00000000.dat";
            for i in 0..entries {
                w.bool(true)?;
                w.u64(0x1000 + u64::from(i))?; // fileid
                for (k, d) in name.iter_mut().skip(5).take(8).enumerate() {
                    let nib = (i >> (28 - 4 * k as u32)) & 0xf;
                    *d = b"0123456789abcdef"[nib as usize];
                }
                w.opaque(&name)?;
                w.u64(u64::from(i) + 1)?; // cookie
            }
            w.bool(false)?;
            w.bool(true)?; // eof
        }
    }
    Ok(w.position())
}
