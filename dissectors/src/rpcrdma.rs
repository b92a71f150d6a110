//! RPC-over-RDMA version 1 transport header (RFC 8166 section 4).
//!
//! Every RDMA Send of RPC-over-RDMA starts with four fixed XDR words
//! (RFC 8166 section 4.2), then a body chosen by `rdma_proc` (section 4.1.2):
//!
//! ```text
//!  0          4          8          12         16
//! +----------+----------+----------+----------+------------------------
//! | rdma_xid | rdma_vers| credits  | rdma_proc| body ...
//! +----------+----------+----------+----------+------------------------
//!
//! RDMA_MSG (0) / RDMA_NOMSG (1) body: three chunk lists, then (MSG only)
//! the Payload stream, i.e. the RPC message without record marking:
//!   read list : { 1, position, handle, length, offset(8) }* 0
//!   write list: { 1, count, { handle, length, offset(8) }[count] }* 0
//!   reply     : 0 | 1, count, { handle, length, offset(8) }[count]
//! RDMA_MSGP (2, obsolete, RFC 8166 section 4.6.1, RFC 5666 section 3.9):
//!   rdma_align, rdma_thresh, then the three lists
//! RDMA_DONE (3, obsolete, section 4.6.2): no body
//! RDMA_ERROR (4): rdma_err: ERR_VERS (1), low, high | ERR_CHUNK (2)
//! ```
//!
//! The smallest well-formed RDMA_MSG/RDMA_NOMSG header is 28 bytes (four
//! fixed words and three empty lists); RFC 8166 section 4.5 says a receiver
//! silently discards anything shorter because it cannot trust the XID. This
//! module still parses what the bytes hold (an RDMA_ERROR with ERR_CHUNK is a
//! complete 20-byte message, and Linux sends exactly that), and leaves the
//! discard rule to the caller through [`MIN_HEADER_LEN`] and [`is_short`].
//!
//! The header is read by nom parsers over `&[u8]`, one per XDR structure of
//! section 4.1.2 (`fixed`, `read_list`, `write_list`, `reply_chunk`,
//! `rdma_error`, `body`), combining the XDR item parsers of [`crate::xdr`];
//! their small `Copy` failure becomes an [`Error`] with the offset from the
//! start of the message only in [`RpcRdmaHeader::parse`].
//!
//! Nothing here allocates: the chunk lists are validated once and kept as
//! the wire bytes they came from; [`Chunks`] iterators decode them on
//! demand. To build a header for emit, make [`Chunks`] from slices of
//! [`ReadSegment`] and [`Segment`] with [`Chunks::new`].

use core::fmt;

use nom::Parser;

use crate::error::{Error, Result};
use crate::layer::Layer;
use crate::parse::{self, Fail, PResult};
use crate::xdr::{self, Writer};

/// Length of the four fixed words: xid, vers, credits, proc (RFC 8166 section 4.2).
pub const FIXED_LEN: usize = 16;

/// Minimal size of an RPC-over-RDMA header (RFC 8166 section 4.5): a
/// message shorter than this must be discarded silently by a receiver
/// because its XID cannot be trusted. See [`is_short`].
pub const MIN_HEADER_LEN: usize = 28;

/// The only version this module decodes (RFC 8166 section 4.2.2).
pub const VERSION_1: u32 = 1;

/// Cap on read segments in one read list ([`Error::LimitExceeded`] beyond).
pub const MAX_READ_SEGMENTS: usize = 256;

/// Cap on write chunks in one write list ([`Error::LimitExceeded`] beyond).
pub const MAX_WRITE_CHUNKS: usize = 64;

/// Cap on segments in one write or reply chunk ([`Error::LimitExceeded`] beyond).
pub const MAX_CHUNK_SEGMENTS: usize = 256;

/// Wire size of a plain segment: handle, length, offset (RFC 8166 section 4.1.2).
pub const SEGMENT_LEN: usize = 16;

/// Wire size of a read segment: position then a plain segment.
pub const READ_SEGMENT_LEN: usize = 20;

/// Error code for a version mismatch (RFC 8166 section 4.1.2, 4.5.1).
pub const ERR_VERS: u32 = 1;
/// Error code for an XDR or chunk error (RFC 8166 section 4.1.2, 4.5.2).
pub const ERR_CHUNK: u32 = 2;

/// True when `msg` is shorter than [`MIN_HEADER_LEN`]: RFC 8166 section 4.5
/// tells a receiver to drop it without parsing, so an analyzer reports it.
pub const fn is_short(msg: &[u8]) -> bool {
    msg.len() < MIN_HEADER_LEN
}

/// An RPC transaction ID as carried in `rdma_xid` (RFC 8166 section 4.2.1);
/// it must equal the XID of the RPC message it carries (section 4.5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Xid(pub u32);

impl From<u32> for Xid {
    fn from(v: u32) -> Self {
        Xid(v)
    }
}

impl From<Xid> for u32 {
    fn from(x: Xid) -> Self {
        x.0
    }
}

impl fmt::Display for Xid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#010x}", self.0)
    }
}

/// The `rdma_proc` code point (RFC 8166 section 4.2.4). Open: unknown
/// values are kept.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Proc {
    /// RDMA_MSG = 0: the Payload stream follows the lists inline.
    Msg,
    /// RDMA_NOMSG = 1: the Payload stream is in a Position-Zero Read chunk or the Reply chunk.
    Nomsg,
    /// RDMA_MSGP = 2: padded message; no longer to be sent (section 4.6.1).
    Msgp,
    /// RDMA_DONE = 3: no longer to be sent (section 4.6.2).
    Done,
    /// RDMA_ERROR = 4 (section 4.5).
    Error,
    /// Any other value: an XDR error per section 4.5.2.
    Unknown(u32),
}

impl From<u32> for Proc {
    fn from(v: u32) -> Self {
        match v {
            0 => Proc::Msg,
            1 => Proc::Nomsg,
            2 => Proc::Msgp,
            3 => Proc::Done,
            4 => Proc::Error,
            v => Proc::Unknown(v),
        }
    }
}

impl From<Proc> for u32 {
    fn from(p: Proc) -> Self {
        match p {
            Proc::Msg => 0,
            Proc::Nomsg => 1,
            Proc::Msgp => 2,
            Proc::Done => 3,
            Proc::Error => 4,
            Proc::Unknown(v) => v,
        }
    }
}

impl Proc {
    /// RDMA_MSGP and RDMA_DONE, which RFC 8166 section 4.6 forbids sending.
    pub const fn is_obsolete(self) -> bool {
        matches!(self, Proc::Msgp | Proc::Done)
    }

    /// The RFC's name, e.g. `RDMA_MSG`, or `None` for an unknown value.
    pub const fn name(self) -> Option<&'static str> {
        match self {
            Proc::Msg => Some("RDMA_MSG"),
            Proc::Nomsg => Some("RDMA_NOMSG"),
            Proc::Msgp => Some("RDMA_MSGP"),
            Proc::Done => Some("RDMA_DONE"),
            Proc::Error => Some("RDMA_ERROR"),
            Proc::Unknown(_) => None,
        }
    }
}

/// The four fixed words (RFC 8166 section 4.2), readable whatever the
/// version or procedure: the engine needs them to match an RDMA_ERROR to its
/// call or to report a version mismatch (section 4.5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fixed {
    /// `rdma_xid` (section 4.2.1).
    pub xid: Xid,
    /// `rdma_vers` (section 4.2.2).
    pub vers: u32,
    /// `rdma_credit` (section 4.2.3): credits requested or granted.
    pub credits: u32,
    /// `rdma_proc` (section 4.2.4).
    pub proc: Proc,
}

impl Fixed {
    /// Reads the four fixed words.
    ///
    /// # Errors
    /// [`Error::Truncated`] if `msg` is shorter than [`FIXED_LEN`].
    pub fn parse(msg: &[u8]) -> Result<(Fixed, &[u8])> {
        parse::run(fixed, msg, Layer::RpcRdma, 0).map(|(rest, f)| (f, rest))
    }
}

/// The four fixed words (section 4.2).
#[inline]
fn fixed(i: &[u8]) -> PResult<'_, Fixed> {
    (xdr::u32, xdr::u32, xdr::u32, xdr::u32)
        .map(|(xid, vers, credits, proc)| Fixed {
            xid: Xid(xid),
            vers,
            credits,
            proc: Proc::from(proc),
        })
        .parse(i)
}

/// An XDR optional-data list (RFC 4506 4.19, the `*next` links of section
/// 4.1.2): `1, item` repeated, then `0`. The discriminator is the bad
/// `field` if it is neither; more than `limit` items is too many `what`, at
/// the discriminator of the first one over. Returns the list's wire bytes
/// (discriminators included) and its item count.
#[inline]
fn optional_list<'a>(
    field: &'static str,
    what: &'static str,
    limit: usize,
    mut item: impl Parser<&'a [u8], Output = (), Error = Fail>,
) -> impl FnMut(&'a [u8]) -> PResult<'a, (&'a [u8], usize)> {
    move |start| {
        let mut i = start;
        let mut count = 0usize;
        loop {
            let (after, more) = xdr::bool(field)(i)?;
            if !more {
                let len = start.len().saturating_sub(after.len());
                return Ok((after, (start.get(..len).unwrap_or(start), count)));
            }
            if count >= limit {
                return Err(Fail::limit(after, what, limit));
            }
            (i, ()) = item.parse(after)?;
            count = count.saturating_add(1);
        }
    }
}

/// A counted array of plain segments (`xdr_write_chunk`): the count, then
/// the segments, validated and kept as wire bytes. A count over
/// [`MAX_CHUNK_SEGMENTS`] fails at the count word.
#[inline]
fn segments(i: &[u8]) -> PResult<'_, WriteChunk<'_>> {
    let (rest, n) = xdr::u32(i)?;
    let n = n as usize;
    if n > MAX_CHUNK_SEGMENTS {
        return Err(Fail::limit(i, "segments in a chunk", MAX_CHUNK_SEGMENTS));
    }
    let (rest, bytes) = parse::take(n.saturating_mul(SEGMENT_LEN))(rest)?;
    Ok((
        rest,
        WriteChunk {
            repr: SegRepr::Wire { bytes, count: n },
        },
    ))
}

/// The read list (section 4.3.1): read segments of 20 bytes each.
#[inline]
fn read_list(i: &[u8]) -> PResult<'_, ReadRepr<'_>> {
    optional_list(
        "rdma_reads",
        "read list segments",
        MAX_READ_SEGMENTS,
        xdr::skip(READ_SEGMENT_LEN),
    )
    .map(|(bytes, count)| ReadRepr::Wire { bytes, count })
    .parse(i)
}

/// The write list (section 4.3.2): write chunks.
#[inline]
fn write_list(i: &[u8]) -> PResult<'_, WriteRepr<'_>> {
    optional_list(
        "rdma_writes",
        "write chunks",
        MAX_WRITE_CHUNKS,
        segments.map(|_| ()),
    )
    .map(|(bytes, count)| WriteRepr::Wire { bytes, count })
    .parse(i)
}

/// The reply chunk (section 4.3.3): an optional write chunk.
#[inline]
fn reply_chunk(i: &[u8]) -> PResult<'_, Option<WriteChunk<'_>>> {
    match xdr::bool("rdma_reply")(i)? {
        (rest, true) => segments.map(Some).parse(rest),
        (rest, false) => Ok((rest, None)),
    }
}

/// The three lists of RDMA_MSG, RDMA_NOMSG and RDMA_MSGP (section 4.3).
#[inline]
fn chunks(i: &[u8]) -> PResult<'_, Chunks<'_>> {
    (read_list, write_list, reply_chunk)
        .map(|(read, write, reply)| Chunks { read, write, reply })
        .parse(i)
}

/// The `rdma_err` body of RDMA_ERROR (section 4.5).
#[inline]
fn rdma_error(i: &[u8]) -> PResult<'_, RdmaError> {
    match xdr::u32(i)? {
        (rest, ERR_VERS) => (xdr::u32, xdr::u32)
            .map(|(low, high)| RdmaError::Vers { low, high })
            .parse(rest),
        (rest, ERR_CHUNK) => Ok((rest, RdmaError::Chunk)),
        (rest, v) => Ok((rest, RdmaError::Unknown(v))),
    }
}

/// The whole header (section 4.1.2 `rpcrdma1_header`); see
/// [`RpcRdmaHeader::parse`] for what fails.
#[inline]
fn header(msg: &[u8]) -> PResult<'_, RpcRdmaHeader<'_>> {
    let (i, f) = fixed(msg)?;
    if f.vers != VERSION_1 && f.proc != Proc::Error {
        let at_vers = msg.get(4..).unwrap_or(&[]);
        return Err(Fail::bad_field(
            at_vers,
            "rdma_vers",
            u64::from(f.vers),
            "1",
        ));
    }
    let (rest, body) = match f.proc {
        Proc::Msg => chunks.map(Body::Msg).parse(i)?,
        Proc::Nomsg => chunks.map(Body::Nomsg).parse(i)?,
        Proc::Msgp => (xdr::u32, xdr::u32, chunks)
            .map(|(align, thresh, chunks)| Body::Msgp {
                align,
                thresh,
                chunks,
            })
            .parse(i)?,
        Proc::Done => (i, Body::Done),
        Proc::Error => rdma_error.map(Body::Error).parse(i)?,
        Proc::Unknown(v) => {
            let at_proc = msg.get(12..).unwrap_or(&[]);
            return Err(Fail::bad_field(
                at_proc,
                "rdma_proc",
                u64::from(v),
                "0 to 4",
            ));
        }
    };
    Ok((
        rest,
        RpcRdmaHeader {
            xid: f.xid,
            vers: f.vers,
            credits: f.credits,
            proc: f.proc,
            body,
        },
    ))
}

/// A plain RDMA segment (RFC 8166 sections 3.4.3, 4.1.2 `xdr_rdma_segment`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Segment {
    /// Registered memory handle (STag / R_key) (section 3.4.3).
    pub handle: u32,
    /// Length of the segment in bytes (section 3.4.3).
    pub length: u32,
    /// Offset or address of the segment in the registered memory (section 3.4.3).
    pub offset: u64,
}

/// A read segment: a position and a plain segment (RFC 8166 sections 3.4.5, 4.1.2 `xdr_read_chunk`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ReadSegment {
    /// Byte offset in the unreduced Payload stream where the chunk's data
    /// belongs; 0 means a Position-Zero Read chunk (Long Call) (section 3.4.5).
    pub position: u32,
    /// The memory to read (section 3.4.5).
    pub segment: Segment,
}

fn segment_at(b: &[u8], at: usize) -> Segment {
    Segment {
        handle: crate::bytes::u32_at(b, at),
        length: crate::bytes::u32_at(b, at.saturating_add(4)),
        offset: crate::bytes::u64_at(b, at.saturating_add(8)),
    }
}

#[derive(Debug, Clone, Copy)]
enum SegRepr<'a> {
    /// Validated wire bytes: `count` segments of 16 bytes.
    Wire {
        bytes: &'a [u8],
        count: usize,
    },
    Slice(&'a [Segment]),
}

/// A write chunk or the reply chunk: a counted array of plain segments
/// (RFC 8166 sections 3.4.6, 4.1.2 `xdr_write_chunk`).
#[derive(Debug, Clone, Copy)]
pub struct WriteChunk<'a> {
    repr: SegRepr<'a>,
}

impl<'a> WriteChunk<'a> {
    /// A chunk made of `segments`, for emit.
    pub const fn from_segments(segments: &'a [Segment]) -> Self {
        WriteChunk {
            repr: SegRepr::Slice(segments),
        }
    }

    /// Number of segments (the XDR count).
    pub const fn len(&self) -> usize {
        match self.repr {
            SegRepr::Wire { count, .. } => count,
            SegRepr::Slice(s) => s.len(),
        }
    }

    /// True for an empty write chunk: zero segments (section 3.4.6).
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The segments in order.
    pub fn segments(&self) -> Segments<'a> {
        Segments {
            repr: self.repr,
            index: 0,
        }
    }

    /// Sum of segment lengths: the data item's size once the responder has
    /// updated them (section 3.4.6).
    pub fn total_length(&self) -> u64 {
        self.segments().map(|s| u64::from(s.length)).sum()
    }

    /// True for an unused write chunk: non-zero count, every segment of
    /// length zero (section 3.4.6).
    pub fn is_unused(&self) -> bool {
        !self.is_empty() && self.segments().all(|s| s.length == 0)
    }

    fn wire_len(&self) -> usize {
        4usize.saturating_add(SEGMENT_LEN.saturating_mul(self.len()))
    }

    fn emit(&self, w: &mut Writer<'_>) -> Result<()> {
        w.u32(u32::try_from(self.len()).unwrap_or(u32::MAX))?;
        for s in self.segments() {
            w.u32(s.handle)?;
            w.u32(s.length)?;
            w.u64(s.offset)?;
        }
        Ok(())
    }
}

impl<'a> IntoIterator for WriteChunk<'a> {
    type Item = Segment;
    type IntoIter = Segments<'a>;

    fn into_iter(self) -> Segments<'a> {
        self.segments()
    }
}

impl PartialEq for WriteChunk<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.segments().eq(other.segments())
    }
}

impl Eq for WriteChunk<'_> {}

/// Iterator over the segments of a [`WriteChunk`].
#[derive(Debug, Clone)]
pub struct Segments<'a> {
    repr: SegRepr<'a>,
    index: usize,
}

impl Iterator for Segments<'_> {
    type Item = Segment;

    fn next(&mut self) -> Option<Segment> {
        let item = match self.repr {
            SegRepr::Wire { bytes, count } => {
                if self.index >= count {
                    return None;
                }
                let at = self.index.checked_mul(SEGMENT_LEN)?;
                bytes.get(at..at.checked_add(SEGMENT_LEN)?)?;
                segment_at(bytes, at)
            }
            SegRepr::Slice(s) => *s.get(self.index)?,
        };
        self.index = self.index.saturating_add(1);
        Some(item)
    }
}

#[derive(Debug, Clone, Copy)]
enum ReadRepr<'a> {
    /// Validated wire bytes: `count` entries, each a read segment followed by
    /// the next discriminator (24 bytes apart).
    Wire {
        bytes: &'a [u8],
        count: usize,
    },
    Slice(&'a [ReadSegment]),
}

#[derive(Debug, Clone, Copy)]
enum WriteRepr<'a> {
    /// Validated wire bytes starting at the first discriminator.
    Wire {
        bytes: &'a [u8],
        count: usize,
    },
    Slice(&'a [&'a [Segment]]),
}

/// The read list, write list and reply chunk of an RDMA_MSG, RDMA_NOMSG or
/// RDMA_MSGP header (RFC 8166 section 4.3), without allocation.
///
/// From [`RpcRdmaHeader::parse`] it holds the validated wire bytes; from
/// [`Chunks::new`] it holds the caller's slices. Both compare equal when
/// they describe the same lists.
#[derive(Debug, Clone, Copy)]
pub struct Chunks<'a> {
    read: ReadRepr<'a>,
    write: WriteRepr<'a>,
    reply: Option<WriteChunk<'a>>,
}

impl Default for Chunks<'_> {
    fn default() -> Self {
        Chunks::EMPTY
    }
}

impl<'a> Chunks<'a> {
    /// All three lists not present (RFC 8166 section 4.3).
    pub const EMPTY: Chunks<'static> = Chunks {
        read: ReadRepr::Slice(&[]),
        write: WriteRepr::Slice(&[]),
        reply: None,
    };

    /// Lists built from slices, for emit: `read` is the read list (grouped
    /// into chunks by position, section 4.3.1), `write` one slice of
    /// segments per write chunk (section 4.3.2), `reply` the reply chunk
    /// if present (section 4.3.3).
    pub const fn new(
        read: &'a [ReadSegment],
        write: &'a [&'a [Segment]],
        reply: Option<&'a [Segment]>,
    ) -> Self {
        Chunks {
            read: ReadRepr::Slice(read),
            write: WriteRepr::Slice(write),
            reply: match reply {
                Some(s) => Some(WriteChunk::from_segments(s)),
                None => None,
            },
        }
    }

    /// The read segments in list order (section 4.3.1).
    pub fn read_list(&self) -> ReadList<'a> {
        ReadList {
            repr: self.read,
            index: 0,
        }
    }

    /// Number of read segments.
    pub const fn read_count(&self) -> usize {
        match self.read {
            ReadRepr::Wire { count, .. } => count,
            ReadRepr::Slice(s) => s.len(),
        }
    }

    /// The write chunks in list order (section 4.3.2).
    pub fn write_list(&self) -> WriteList<'a> {
        WriteList {
            repr: self.write,
            index: 0,
            pos: 0,
        }
    }

    /// Number of write chunks.
    pub const fn write_count(&self) -> usize {
        match self.write {
            WriteRepr::Wire { count, .. } => count,
            WriteRepr::Slice(s) => s.len(),
        }
    }

    /// The reply chunk, if present (section 4.3.3). A present chunk with
    /// zero segments is `Some` with `len() == 0`.
    pub const fn reply_chunk(&self) -> Option<WriteChunk<'a>> {
        self.reply
    }

    /// True when all three lists are not present: an RDMA_NOMSG like this
    /// is an XDR error (section 4.5.2).
    pub const fn is_empty(&self) -> bool {
        self.read_count() == 0 && self.write_count() == 0 && self.reply.is_none()
    }

    /// True when the read list has a Position-Zero Read chunk: the whole
    /// RPC Call travels by RDMA Read (Long Call, section 3.5.3).
    pub fn has_position_zero(&self) -> bool {
        self.read_list().any(|r| r.position == 0)
    }

    /// Bytes the three lists take on the wire.
    pub fn wire_len(&self) -> usize {
        let read = 4usize.saturating_add(self.read_count().saturating_mul(24));
        let write = self.write_list().fold(4usize, |n, c| {
            n.saturating_add(4).saturating_add(c.wire_len())
        });
        let reply = match self.reply {
            None => 4,
            Some(c) => 4usize.saturating_add(c.wire_len()),
        };
        read.saturating_add(write).saturating_add(reply)
    }

    fn emit(&self, w: &mut Writer<'_>) -> Result<()> {
        for r in self.read_list() {
            w.bool(true)?;
            w.u32(r.position)?;
            w.u32(r.segment.handle)?;
            w.u32(r.segment.length)?;
            w.u64(r.segment.offset)?;
        }
        w.bool(false)?;
        for c in self.write_list() {
            w.bool(true)?;
            c.emit(w)?;
        }
        w.bool(false)?;
        match self.reply {
            None => w.bool(false),
            Some(c) => {
                w.bool(true)?;
                c.emit(w)
            }
        }
    }
}

impl PartialEq for Chunks<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.read_count() == other.read_count()
            && self.write_count() == other.write_count()
            && self.read_list().eq(other.read_list())
            && self.write_list().eq(other.write_list())
            && self.reply == other.reply
    }
}

impl Eq for Chunks<'_> {}

/// Iterator over the read list (see [`Chunks::read_list`]).
#[derive(Debug, Clone)]
pub struct ReadList<'a> {
    repr: ReadRepr<'a>,
    index: usize,
}

impl Iterator for ReadList<'_> {
    type Item = ReadSegment;

    fn next(&mut self) -> Option<ReadSegment> {
        let item = match self.repr {
            ReadRepr::Wire { bytes, count } => {
                if self.index >= count {
                    return None;
                }
                // Entry i: discriminator at 24*i, position at 24*i + 4.
                let at = self.index.checked_mul(24)?.checked_add(4)?;
                bytes.get(at..at.checked_add(READ_SEGMENT_LEN)?)?;
                ReadSegment {
                    position: crate::bytes::u32_at(bytes, at),
                    segment: segment_at(bytes, at.saturating_add(4)),
                }
            }
            ReadRepr::Slice(s) => *s.get(self.index)?,
        };
        self.index = self.index.saturating_add(1);
        Some(item)
    }
}

/// Iterator over the write list (see [`Chunks::write_list`]).
#[derive(Debug, Clone)]
pub struct WriteList<'a> {
    repr: WriteRepr<'a>,
    index: usize,
    pos: usize,
}

impl<'a> Iterator for WriteList<'a> {
    type Item = WriteChunk<'a>;

    fn next(&mut self) -> Option<WriteChunk<'a>> {
        let item = match self.repr {
            WriteRepr::Wire { bytes, count } => {
                if self.index >= count {
                    return None;
                }
                // Discriminator, count, segments.
                let n = crate::bytes::u32_at(bytes, self.pos.checked_add(4)?) as usize;
                let start = self.pos.checked_add(8)?;
                let end = start.checked_add(n.checked_mul(SEGMENT_LEN)?)?;
                let seg_bytes = bytes.get(start..end)?;
                self.pos = end;
                WriteChunk {
                    repr: SegRepr::Wire {
                        bytes: seg_bytes,
                        count: n,
                    },
                }
            }
            WriteRepr::Slice(s) => WriteChunk::from_segments(s.get(self.index)?),
        };
        self.index = self.index.saturating_add(1);
        Some(item)
    }
}

/// The `rdma_err` body of RDMA_ERROR (RFC 8166 sections 4.1.2, 4.5).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RdmaError {
    /// ERR_VERS: the responder supports versions `low..=high` (section 4.5.1).
    Vers {
        /// Lowest version supported (`rdma_vers_low`).
        low: u32,
        /// Highest version supported (`rdma_vers_high`).
        high: u32,
    },
    /// ERR_CHUNK: XDR or chunk error (sections 4.5.2-4.5.4).
    Chunk,
    /// Another code: undecodable, to be discarded (section 4.5).
    Unknown(u32),
}

/// The body selected by `rdma_proc` (RFC 8166 section 4.1.2 `rdma_body`).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body<'a> {
    /// RDMA_MSG: the lists; the Payload stream follows them inline.
    Msg(Chunks<'a>),
    /// RDMA_NOMSG: the lists; the Payload stream is in a chunk.
    Nomsg(Chunks<'a>),
    /// RDMA_MSGP (RFC 5666 section 3.9; obsolete per RFC 8166 section 4.6.1).
    Msgp {
        /// `rdma_align`: alignment of the padded data.
        align: u32,
        /// `rdma_thresh`: threshold for padding.
        thresh: u32,
        /// The three lists.
        chunks: Chunks<'a>,
    },
    /// RDMA_DONE: no body (obsolete per RFC 8166 section 4.6.2).
    Done,
    /// RDMA_ERROR (section 4.5).
    Error(RdmaError),
}

impl<'a> Body<'a> {
    /// The procedure this body belongs to.
    pub const fn proc(&self) -> Proc {
        match self {
            Body::Msg(_) => Proc::Msg,
            Body::Nomsg(_) => Proc::Nomsg,
            Body::Msgp { .. } => Proc::Msgp,
            Body::Done => Proc::Done,
            Body::Error(_) => Proc::Error,
        }
    }

    /// The chunk lists, for MSG, NOMSG and MSGP.
    pub const fn chunks(&self) -> Option<Chunks<'a>> {
        match self {
            Body::Msg(c) | Body::Nomsg(c) | Body::Msgp { chunks: c, .. } => Some(*c),
            Body::Done | Body::Error(_) => None,
        }
    }

    fn wire_len(&self) -> usize {
        match self {
            Body::Msg(c) | Body::Nomsg(c) => c.wire_len(),
            Body::Msgp { chunks, .. } => 8usize.saturating_add(chunks.wire_len()),
            Body::Done => 0,
            Body::Error(RdmaError::Vers { .. }) => 12,
            Body::Error(_) => 4,
        }
    }
}

/// A decoded RPC-over-RDMA version 1 header (RFC 8166 section 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RpcRdmaHeader<'a> {
    /// `rdma_xid` (section 4.2.1).
    pub xid: Xid,
    /// `rdma_vers` (section 4.2.2): 1, or for RDMA_ERROR the version of the
    /// failing request (section 4.5).
    pub vers: u32,
    /// `rdma_credit` (section 4.2.3).
    pub credits: u32,
    /// `rdma_proc` (section 4.2.4); always `body.proc()` after parse.
    pub proc: Proc,
    /// The procedure's body (section 4.1.2).
    pub body: Body<'a>,
}

impl<'a> RpcRdmaHeader<'a> {
    /// Reads only the four fixed words, whatever the version and procedure
    /// (see [`Fixed`]).
    ///
    /// # Errors
    /// [`Error::Truncated`] if `msg` is shorter than [`FIXED_LEN`].
    pub fn parse_fixed(msg: &[u8]) -> Result<Fixed> {
        Fixed::parse(msg).map(|(f, _)| f)
    }

    /// Parses the header at the start of `msg` (the whole RDMA Send payload)
    /// and returns it with the bytes after it: for RDMA_MSG (and RDMA_MSGP)
    /// the Payload stream, the RPC message without record marking
    /// (RFC 8166 section 4); for other procedures whatever follows, normally
    /// nothing. Errors count offsets from the start of `msg`.
    ///
    /// Version: the body layout is only known for version 1, except that
    /// RDMA_ERROR keeps its layout across versions (section 4.5, whose
    /// `rdma_vers` echoes the failing request); so `vers != 1` fails unless
    /// the procedure is RDMA_ERROR. Use [`RpcRdmaHeader::parse_fixed`] to
    /// get the XID and version regardless.
    ///
    /// Length: this does not apply the 28-byte discard rule of section 4.5;
    /// check [`is_short`] first where that matters.
    ///
    /// # Errors
    /// - [`Error::Truncated`] when a word is missing, with its offset;
    /// - [`Error::BadField`] for `rdma_vers` (offset 4) other than 1,
    ///   an unknown `rdma_proc` (offset 12), or a list discriminator
    ///   (`rdma_reads`, `rdma_writes`, `rdma_reply`) other than 0 or 1;
    /// - [`Error::LimitExceeded`] past [`MAX_READ_SEGMENTS`],
    ///   [`MAX_WRITE_CHUNKS`] or [`MAX_CHUNK_SEGMENTS`].
    pub fn parse(msg: &'a [u8]) -> Result<(RpcRdmaHeader<'a>, &'a [u8])> {
        parse::run(header, msg, Layer::RpcRdma, 0).map(|(rest, h)| (h, rest))
    }

    /// The chunk lists, for MSG, NOMSG and MSGP.
    pub const fn chunks(&self) -> Option<Chunks<'a>> {
        self.body.chunks()
    }

    /// Length of the transport header on the wire: where the Payload
    /// stream starts in the message.
    pub fn header_len(&self) -> usize {
        FIXED_LEN.saturating_add(self.body.wire_len())
    }

    /// Same as [`RpcRdmaHeader::header_len`]: offset of the Payload stream.
    pub fn payload_offset(&self) -> usize {
        self.header_len()
    }

    /// Writes the transport header (not the payload) to the start of `buf`
    /// and returns its length.
    ///
    /// # Errors
    /// [`Error::Truncated`] if `buf` is too small; [`Error::BadField`] if
    /// `proc` does not match `body`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        if self.proc != self.body.proc() {
            return Err(Error::BadField {
                layer: Layer::RpcRdma,
                offset: 12,
                field: "rdma_proc",
                value: u64::from(u32::from(self.proc)),
                expected: "the procedure of the body",
            });
        }
        let mut w = Writer::new(buf, Layer::RpcRdma);
        w.u32(self.xid.0)?;
        w.u32(self.vers)?;
        w.u32(self.credits)?;
        w.u32(u32::from(self.proc))?;
        match &self.body {
            Body::Msg(c) | Body::Nomsg(c) => c.emit(&mut w)?,
            Body::Msgp {
                align,
                thresh,
                chunks,
            } => {
                w.u32(*align)?;
                w.u32(*thresh)?;
                chunks.emit(&mut w)?;
            }
            Body::Done => {}
            Body::Error(RdmaError::Vers { low, high }) => {
                w.u32(ERR_VERS)?;
                w.u32(*low)?;
                w.u32(*high)?;
            }
            Body::Error(RdmaError::Chunk) => w.u32(ERR_CHUNK)?,
            Body::Error(RdmaError::Unknown(v)) => w.u32(*v)?,
        }
        Ok(w.position())
    }
}

/// RPC-over-RDMA messages from the project's lab captures (RDMA Send
/// payloads: after the BTH, before the ICRC), shared by the tests of the
/// layers above.
#[cfg(test)]
pub(crate) mod real_frames {
    use hex_literal::hex;

    /// captures/v3-ddp.pcap frame 80: NFSv3 WRITE call (RDMA_MSG) whose
    /// 262144 data bytes travel in one Read chunk of two segments at
    /// position 132; the Payload stream is the 132-byte RPC call.
    pub(crate) const V3_WRITE_CALL: [u8; 208] = hex!(
        "a8c0454e000000010000008000000000"
        "0000000100000084000018d800020000a8c0454e0cf3a000"
        "00000001000000840000174d00020000a8c0454e0c293000"
        "00000000 00000000 00000000"
        "a8c0454e0000000000000002000186a30000000300000007000000010000002000000000"
        "000000096c6162636c69656e740000000000000000000000000000000000000000000000"
        "0000002401000701 7d3d0000000000002c790e12e50141a8be341c4fbed3432eb03e0000"
        "29ded2070000000000000000000400000000000000040000"
    );

    /// captures/v3-ddp.pcap frame 2288: NFSv3 READ call (RDMA_MSG) with one
    /// Write chunk of two 131072-byte segments for the reply's data.
    pub(crate) const V3_READ_CALL: [u8; 192] = hex!(
        "b4c0454e000000010000008000000000"
        "00000000"
        "00000001 00000002 000018da00020000b4c0454e0c64f000 0000174f00020000b4c0454e0d6fd000"
        "00000000 00000000"
        "b4c0454e0000000000000002000186a30000000300000006000000010000002000000000"
        "000000096c6162636c69656e740000000000000000000000000000000000000000000000"
        "00000024010007017d3d0000000000002c790e12e50141a8be341c4fbed3432eb03e0000"
        "29ded207000000000000000000040000"
    );

    /// captures/v3-ddp.pcap frame 2565: the reply to frame 2288; the Write
    /// chunk comes back with its segment lengths filled in and the READ data
    /// is absent from the Payload stream.
    pub(crate) const V3_READ_REPLY: [u8; 196] = hex!(
        "b4c0454e000000010000004000000000"
        "00000000"
        "00000001 00000002 000018da00020000b4c0454e0c64f000 0000174f00020000b4c0454e0d6fd000"
        "00000000 00000000"
        "b4c0454e000000010000000000000000000000000000000000000000"
        "00000001 00000001 000001a4 00000001 00000000 00000000 0000000000200000"
        "0000000000200000 0000000000000000 8602d25b5d124d92 0000000000003eb0"
        "6b00ce5729b92ae1 6b00ce5711a49dd9 6b00ce5711a49dd9"
        "00040000 00000000 00040000"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use hex_literal::hex;
    use proptest::prelude::*;

    // RDMA_MSG, no chunks, RPC call (first word of payload) after 28 bytes
    // (RFC 8166 section 4.1.2 layout; values as a Linux client sends them).
    const MSG_NO_CHUNKS: [u8; 32] = hex!(
        "6d7a4c01 00000001 00000080 00000000"
        "00000000 00000000 00000000"
        "6d7a4c01"
    );

    // RDMA_MSG carrying an NFS WRITE call: one read chunk of two segments at
    // position 0x8c, an empty write list and no reply chunk.
    const MSG_READ_CHUNK: [u8; 76] = hex!(
        "00000010 00000001 00000020 00000000"
        "00000001 0000008c 11223344 00001000 0000000012340000"
        "00000001 0000008c 11223355 00000200 0000000012350000"
        "00000000"
        "00000000"
        "00000000"
    );

    // RDMA_MSG reply for an NFS READ: one write chunk with one segment and a
    // reply chunk with zero segments (present, empty).
    const MSG_WRITE_REPLY: [u8; 56] = hex!(
        "00000011 00000001 00000020 00000000"
        "00000000"
        "00000001 00000001 aabbccdd 00002000 00007f0000001000"
        "00000000"
        "00000001 00000000"
    );

    #[test]
    fn real_write_call_read_list() {
        use super::real_frames::V3_WRITE_CALL;
        let (h, payload) = RpcRdmaHeader::parse(&V3_WRITE_CALL).unwrap();
        assert_eq!(h.xid, Xid(0xa8c0454e));
        assert_eq!((h.vers, h.credits, h.proc), (1, 128, Proc::Msg));
        let c = h.chunks().unwrap();
        assert_eq!(c.read_count(), 2);
        assert_eq!((c.write_count(), c.reply_chunk()), (0, None));
        let r: Vec<_> = c.read_list().collect();
        assert_eq!(r[0].position, 132);
        assert_eq!(r[1].position, 132);
        assert_eq!(r[0].segment.handle, 0x18d8);
        assert_eq!(r[1].segment.offset, 0xa8c0454e0c293000);
        assert_eq!(
            r.iter().map(|s| s.segment.length).sum::<u32>(),
            262_144,
            "the chunk holds the data without round-up"
        );
        // The chunk's position is the end of the inline payload: the WRITE
        // data's length word stays inline, its bytes are removed.
        assert_eq!(payload.len(), 132);
        assert_eq!(h.header_len(), 76);
        assert_eq!(&payload[..4], &0xa8c0454e_u32.to_be_bytes());
        emit_matches(&V3_WRITE_CALL);
    }

    #[test]
    fn real_read_call_and_reply_write_chunk() {
        use super::real_frames::{V3_READ_CALL, V3_READ_REPLY};
        let (call, _) = RpcRdmaHeader::parse(&V3_READ_CALL).unwrap();
        let (reply, payload) = RpcRdmaHeader::parse(&V3_READ_REPLY).unwrap();
        assert_eq!(call.xid, reply.xid);
        assert_eq!(reply.credits, 64);
        let wc = call.chunks().unwrap().write_list().next().unwrap();
        let wr = reply.chunks().unwrap().write_list().next().unwrap();
        assert_eq!(wc.len(), 2);
        assert_eq!(
            wc, wr,
            "the responder copies the chunk back (RFC 8166 3.4.6)"
        );
        assert_eq!(wr.total_length(), 262_144);
        assert_eq!(
            wr.into_iter().map(|s| s.length).collect::<Vec<_>>(),
            [131_072; 2]
        );
        assert!(!wr.is_unused());
        assert_eq!(call.header_len(), 68);
        assert_eq!(payload.len(), 196 - 68);
        emit_matches(&V3_READ_CALL);
        emit_matches(&V3_READ_REPLY);
    }

    #[test]
    fn parse_msg_no_chunks() {
        let (h, payload) = RpcRdmaHeader::parse(&MSG_NO_CHUNKS).unwrap();
        assert_eq!(h.xid, Xid(0x6d7a4c01));
        assert_eq!(h.vers, 1);
        assert_eq!(h.credits, 128);
        assert_eq!(h.proc, Proc::Msg);
        assert_eq!(h.body, Body::Msg(Chunks::EMPTY));
        assert_eq!(payload, &hex!("6d7a4c01"));
        assert_eq!(h.header_len(), 28);
        assert!(h.chunks().unwrap().is_empty());
    }

    #[test]
    fn parse_read_chunk() {
        let (h, payload) = RpcRdmaHeader::parse(&MSG_READ_CHUNK).unwrap();
        assert!(payload.is_empty());
        let c = h.chunks().unwrap();
        assert_eq!(c.read_count(), 2);
        let r: Vec<_> = c.read_list().collect();
        assert_eq!(
            r,
            [
                ReadSegment {
                    position: 0x8c,
                    segment: Segment {
                        handle: 0x11223344,
                        length: 0x1000,
                        offset: 0x12340000
                    }
                },
                ReadSegment {
                    position: 0x8c,
                    segment: Segment {
                        handle: 0x11223355,
                        length: 0x200,
                        offset: 0x12350000
                    }
                }
            ]
        );
        assert_eq!(c.write_count(), 0);
        assert_eq!(c.reply_chunk(), None);
        assert!(!c.has_position_zero());
        assert_eq!(h.header_len(), 76);
    }

    #[test]
    fn parse_write_and_reply_chunks() {
        let (h, _) = RpcRdmaHeader::parse(&MSG_WRITE_REPLY).unwrap();
        let c = h.chunks().unwrap();
        assert_eq!(c.write_count(), 1);
        let w = c.write_list().next().unwrap();
        assert_eq!(w.len(), 1);
        assert_eq!(w.total_length(), 0x2000);
        assert_eq!(
            w.segments().next(),
            Some(Segment {
                handle: 0xaabbccdd,
                length: 0x2000,
                offset: 0x7f0000001000
            })
        );
        let reply = c.reply_chunk().unwrap();
        assert!(reply.is_empty());
        assert_eq!(h.header_len(), 56);
    }

    fn emit_matches(bytes: &[u8]) {
        let (h, payload) = RpcRdmaHeader::parse(bytes).unwrap();
        let mut buf = vec![0xa5u8; bytes.len() + 4];
        let n = h.emit(&mut buf).unwrap();
        assert_eq!(n, h.header_len());
        assert_eq!(&buf[..n], &bytes[..n]);
        assert_eq!(n + payload.len(), bytes.len());
        assert!(buf[n..].iter().all(|&b| b == 0xa5));
    }

    #[test]
    fn emit_gives_the_bytes() {
        for b in [
            &MSG_NO_CHUNKS[..],
            &MSG_READ_CHUNK[..],
            &MSG_WRITE_REPLY[..],
            &ERR_VERS_MSG[..],
            &ERR_CHUNK_MSG[..],
        ] {
            emit_matches(b);
        }
    }

    #[test]
    fn emit_from_slices_equals_parsed() {
        let segs = [Segment {
            handle: 0xaabbccdd,
            length: 0x2000,
            offset: 0x7f0000001000,
        }];
        let write: [&[Segment]; 1] = [&segs];
        let h = RpcRdmaHeader {
            xid: Xid(0x11),
            vers: 1,
            credits: 32,
            proc: Proc::Msg,
            body: Body::Msg(Chunks::new(&[], &write, Some(&[]))),
        };
        let mut buf = [0xa5u8; 56];
        assert_eq!(h.emit(&mut buf), Ok(56));
        assert_eq!(buf, MSG_WRITE_REPLY);
        assert_eq!(RpcRdmaHeader::parse(&buf).unwrap().0, h);
    }

    const ERR_VERS_MSG: [u8; 28] =
        hex!("00000005 00000002 00000000 00000004 00000001 00000001 00000001");
    // Linux sends ERR_CHUNK as 5 words (RPCRDMA_HDRLEN_ERR), shorter than 28.
    const ERR_CHUNK_MSG: [u8; 20] = hex!("00000006 00000001 00000000 00000004 00000002");

    #[test]
    fn parse_errors_procs() {
        let (h, _) = RpcRdmaHeader::parse(&ERR_VERS_MSG).unwrap();
        assert_eq!(h.vers, 2, "an RDMA_ERROR echoes the failing version");
        assert_eq!(h.body, Body::Error(RdmaError::Vers { low: 1, high: 1 }));
        let (h, _) = RpcRdmaHeader::parse(&ERR_CHUNK_MSG).unwrap();
        assert_eq!(h.body, Body::Error(RdmaError::Chunk));
        assert!(is_short(&ERR_CHUNK_MSG));
        let (h, _) =
            RpcRdmaHeader::parse(&hex!("00000006 00000001 00000000 00000004 00000009")).unwrap();
        assert_eq!(h.body, Body::Error(RdmaError::Unknown(9)));
    }

    #[test]
    fn parse_obsolete_procs() {
        let (h, rest) = RpcRdmaHeader::parse(&hex!("00000007 00000001 00000001 00000003")).unwrap();
        assert_eq!(h.body, Body::Done);
        assert!(h.proc.is_obsolete());
        assert!(rest.is_empty());
        let b = hex!(
            "00000007 00000001 00000001 00000002 00000004 00000400 00000000 00000000 00000000 cafe"
        );
        let (h, rest) = RpcRdmaHeader::parse(&b).unwrap();
        assert_eq!(
            h.body,
            Body::Msgp {
                align: 4,
                thresh: 1024,
                chunks: Chunks::EMPTY
            }
        );
        assert_eq!(rest, &hex!("cafe"));
        emit_matches(&b);
    }

    #[test]
    fn version_mismatch_keeps_fixed_words() {
        let b = hex!("01020304 00000002 00000010 00000000 00000000 00000000 00000000");
        assert_eq!(
            RpcRdmaHeader::parse(&b),
            Err(Error::BadField {
                layer: Layer::RpcRdma,
                offset: 4,
                field: "rdma_vers",
                value: 2,
                expected: "1"
            })
        );
        assert_eq!(
            RpcRdmaHeader::parse_fixed(&b),
            Ok(Fixed {
                xid: Xid(0x01020304),
                vers: 2,
                credits: 16,
                proc: Proc::Msg
            })
        );
    }

    #[test]
    fn unknown_proc() {
        let b = hex!("01020304 00000001 00000010 00000005 00000000 00000000 00000000");
        assert!(matches!(
            RpcRdmaHeader::parse(&b),
            Err(Error::BadField {
                offset: 12,
                field: "rdma_proc",
                value: 5,
                ..
            })
        ));
        assert_eq!(
            RpcRdmaHeader::parse_fixed(&b).unwrap().proc,
            Proc::Unknown(5)
        );
    }

    #[test]
    fn bad_discriminators() {
        for (at, field) in [(16, "rdma_reads"), (20, "rdma_writes"), (24, "rdma_reply")] {
            let mut b = MSG_NO_CHUNKS;
            b[at + 3] = 2;
            assert_eq!(
                RpcRdmaHeader::parse(&b),
                Err(Error::BadField {
                    layer: Layer::RpcRdma,
                    offset: at,
                    field,
                    value: 2,
                    expected: "0 or 1"
                })
            );
        }
    }

    #[test]
    fn hostile_counts_hit_limits() {
        // A reply chunk claiming 2^32-1 segments.
        let b = hex!("00000001 00000001 00000001 00000001 00000000 00000000 00000001 ffffffff");
        assert_eq!(
            RpcRdmaHeader::parse(&b),
            Err(Error::LimitExceeded {
                layer: Layer::RpcRdma,
                offset: 28,
                what: "segments in a chunk",
                limit: MAX_CHUNK_SEGMENTS
            })
        );
        // A segment count within the cap that runs past the message.
        let b = hex!("00000001 00000001 00000001 00000001 00000000 00000001 00000002 00000000");
        assert_eq!(
            RpcRdmaHeader::parse(&b),
            Err(Error::Truncated {
                layer: Layer::RpcRdma,
                offset: 28,
                needed: 32,
                available: 4
            })
        );
        // More read segments than the cap.
        let mut v = hex!("00000001 00000001 00000001 00000001").to_vec();
        for _ in 0..=MAX_READ_SEGMENTS {
            v.extend_from_slice(&[0, 0, 0, 1]);
            v.extend_from_slice(&[0; 20]);
        }
        v.extend_from_slice(&[0; 12]);
        assert!(matches!(
            RpcRdmaHeader::parse(&v),
            Err(Error::LimitExceeded { what: "read list segments", offset, .. })
                if offset == 16 + 24 * MAX_READ_SEGMENTS + 4
        ));
        // More write chunks than the cap.
        let mut v = hex!("00000001 00000001 00000001 00000001 00000000").to_vec();
        for _ in 0..=MAX_WRITE_CHUNKS {
            v.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0]);
        }
        v.extend_from_slice(&[0; 8]);
        // Reported after the discriminator of the first chunk over the cap,
        // as the read list's limit is.
        assert_eq!(
            RpcRdmaHeader::parse(&v),
            Err(Error::LimitExceeded {
                layer: Layer::RpcRdma,
                offset: 20 + 8 * MAX_WRITE_CHUNKS + 4,
                what: "write chunks",
                limit: MAX_WRITE_CHUNKS,
            })
        );
    }

    #[test]
    fn truncated_at_every_offset() {
        for bytes in [&MSG_READ_CHUNK[..], &MSG_WRITE_REPLY[..], &ERR_VERS_MSG[..]] {
            let (h, _) = RpcRdmaHeader::parse(bytes).unwrap();
            let full = h.header_len();
            for cut in 0..full {
                match RpcRdmaHeader::parse(&bytes[..cut]) {
                    Err(Error::Truncated {
                        layer: Layer::RpcRdma,
                        offset,
                        needed,
                        available,
                    }) => {
                        assert!(offset <= cut, "cut {cut}: offset {offset}");
                        assert_eq!(available, cut - offset, "cut {cut}");
                        assert!(offset + needed > cut, "cut {cut}");
                    }
                    other => panic!("cut {cut}: {other:?}"),
                }
                assert!(h.emit(&mut vec![0; cut]).is_err());
            }
        }
        assert_eq!(
            RpcRdmaHeader::parse(&MSG_NO_CHUNKS[..9]),
            Err(Error::Truncated {
                layer: Layer::RpcRdma,
                offset: 8,
                needed: 4,
                available: 1
            })
        );
    }

    #[test]
    fn proc_round_trip_and_names() {
        for v in 0..8u32 {
            assert_eq!(u32::from(Proc::from(v)), v);
        }
        assert_eq!(Proc::Nomsg.name(), Some("RDMA_NOMSG"));
        assert_eq!(Proc::Unknown(9).name(), None);
        assert_eq!(Xid(0x1f).to_string(), "0x0000001f");
    }

    #[test]
    fn emit_rejects_mismatched_proc() {
        let h = RpcRdmaHeader {
            xid: Xid(1),
            vers: 1,
            credits: 1,
            proc: Proc::Nomsg,
            body: Body::Done,
        };
        assert!(matches!(
            h.emit(&mut [0; 64]),
            Err(Error::BadField {
                field: "rdma_proc",
                ..
            })
        ));
    }

    fn arb_segment() -> impl Strategy<Value = Segment> {
        (any::<u32>(), any::<u32>(), any::<u64>()).prop_map(|(handle, length, offset)| Segment {
            handle,
            length,
            offset,
        })
    }

    proptest! {
        #[test]
        fn emit_parse_round_trip(
            xid in any::<u32>(),
            credits in any::<u32>(),
            nomsg in any::<bool>(),
            read in proptest::collection::vec(
                (any::<u32>(), arb_segment()).prop_map(|(position, segment)| ReadSegment { position, segment }),
                0..6),
            write in proptest::collection::vec(proptest::collection::vec(arb_segment(), 0..4), 0..4),
            reply in proptest::option::of(proptest::collection::vec(arb_segment(), 0..4)),
            payload in proptest::collection::vec(any::<u8>(), 0..16),
        ) {
            let write_refs: Vec<&[Segment]> = write.iter().map(|w| w.as_slice()).collect();
            let chunks = Chunks::new(&read, &write_refs, reply.as_deref());
            let body = if nomsg { Body::Nomsg(chunks) } else { Body::Msg(chunks) };
            let h = RpcRdmaHeader { xid: Xid(xid), vers: 1, credits, proc: body.proc(), body };
            let mut buf = vec![0xa5u8; h.header_len() + payload.len()];
            let n = h.emit(&mut buf).unwrap();
            prop_assert_eq!(n, h.header_len());
            buf[n..].copy_from_slice(&payload);
            let (p, rest) = RpcRdmaHeader::parse(&buf).unwrap();
            prop_assert_eq!(p, h);
            prop_assert_eq!(rest, &payload[..]);
            prop_assert_eq!(p.header_len(), n);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..256)) {
            if let Ok((h, rest)) = RpcRdmaHeader::parse(&data) {
                prop_assert_eq!(h.header_len() + rest.len(), data.len());
                let mut buf = vec![0u8; h.header_len()];
                prop_assert_eq!(h.emit(&mut buf), Ok(h.header_len()));
                prop_assert_eq!(RpcRdmaHeader::parse(&buf).unwrap().0, h);
            }
        }

        #[test]
        fn parse_list_shaped_input(words in proptest::collection::vec(0u32..4, 0..64)) {
            let mut data = hex!("00000001 00000001 00000001 00000000").to_vec();
            for w in words { data.extend_from_slice(&w.to_be_bytes()); }
            if let Ok((h, _)) = RpcRdmaHeader::parse(&data) {
                let c = h.chunks().unwrap();
                prop_assert_eq!(c.read_list().count(), c.read_count());
                prop_assert_eq!(c.write_list().count(), c.write_count());
            }
        }
    }
}
