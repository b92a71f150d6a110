//! Reading pcap and pcapng from any byte stream, in batches.
//!
//! The stream is read in large chunks straight into a [`Batch`]'s buffer
//! and split into records where they lie ([`super::format`] says where), so
//! each byte is copied once, by the kernel; a record cut by the end of a
//! chunk is carried over to the next batch. [`PcapReader::next_packet`]
//! walks the same batches one frame at a time for callers that want that.
//!
//! A stream that ends inside a record, or holds a record that cannot be
//! right, gives a [`ReadError`] naming the frame and the byte offset; every
//! frame before it has been handed out.

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use rdma_dissectors::frame::Frame;
use rdma_dissectors::ib::icrc::IcrcStatus;
use rdma_dissectors::link::LinkType;
use rdma_dissectors::stack;

use super::erf;
use super::format::{Format, Note, Parser, Problem, Record, Section};
use super::input::DecompressError;

/// Bytes read per batch once a stream has shown it is large: small enough
/// that the kernel's copy lands in the reading core's cache, large enough
/// that syscalls cost nothing.
const CHUNK: usize = 512 << 10;

/// Bytes read into the first batch: a small stream (a pipe's first burst, a
/// short file) costs no more than it holds; each read that fills its room
/// doubles the next, up to [`CHUNK`].
const FIRST_CHUNK: usize = 16 << 10;

/// Frames of one input that get a note of their own; past this they are
/// counted, and the count is told at the end, so a capture of nothing but
/// unreadable records cannot bury the output in lines.
const MAX_FRAME_NOTES: u64 = 10;

/// Where one frame of a [`Batch`] lies, and what is known of it.
#[derive(Debug, Clone, Copy)]
pub struct FrameMeta {
    /// 1-based frame number.
    pub number: u64,
    /// Capture time, ns since the epoch.
    pub ts_ns: u64,
    /// Link type.
    pub link: LinkType,
    /// Length on the wire.
    pub orig_len: u32,
    /// Start of the frame in [`Batch::data`].
    pub start: usize,
    /// Captured bytes.
    pub len: usize,
    /// The RoCEv2 ICRC verdict, when a reading thread had time to check it.
    pub icrc: Option<IcrcStatus>,
}

/// Frames read together, in one buffer.
#[derive(Debug, Default)]
pub struct Batch {
    /// The bytes as read (only the frames' ranges mean anything; the buffer
    /// keeps its length when reused so it is zeroed once, not once per use).
    pub data: Vec<u8>,
    /// The frames, in order.
    pub frames: Vec<FrameMeta>,
    /// Input offset just past the last whole record in the batch.
    pub end_offset: u64,
    /// What the user should be told about the batch's frames or inputs
    /// that is not the end of the stream (one line each, naming the input,
    /// the frame and the offset).
    pub notes: Vec<String>,
    /// What the user may like to know that is no warning (where each
    /// input's frames went in a merge).
    pub info: Vec<String>,
}

/// What a reading thread runs: one capture ([`PcapReader`]) or several
/// merged ([`super::merge::Merge`]).
pub trait BatchReader: Send {
    /// Replaces `batch`'s frames with the next ones: `Ok(true)` while more
    /// may follow, `Ok(false)` at a clean end.
    ///
    /// # Errors
    /// The input is damaged or failed; the frames before it are in `batch`.
    fn fill(&mut self, batch: &mut Batch) -> Result<bool, ReadError>;
}

impl<R: Read + Send> BatchReader for PcapReader<R> {
    fn fill(&mut self, batch: &mut Batch) -> Result<bool, ReadError> {
        PcapReader::fill(self, batch)
    }
}

impl Batch {
    /// The bytes of `f`, one of this batch's frames.
    pub fn bytes(&self, f: &FrameMeta) -> &[u8] {
        self.data
            .get(f.start..f.start.saturating_add(f.len))
            .unwrap_or_default()
    }

    /// `f`, one of this batch's frames, with its bytes.
    #[inline]
    pub fn frame(&self, f: &FrameMeta) -> Frame<'_> {
        Frame {
            number: f.number,
            ts_ns: f.ts_ns,
            link: f.link,
            orig_len: f.orig_len,
            data: self.bytes(f),
            icrc: f.icrc,
        }
    }

    /// Each frame with its bytes, in order.
    pub fn iter(&self) -> impl Iterator<Item = Frame<'_>> {
        self.frames.iter().map(|f| self.frame(f))
    }

    /// Appends `f` (its bytes copied after the others): for a batch built
    /// a frame at a time, as a live capture's is, rather than read whole.
    pub fn push(&mut self, f: &Frame<'_>) {
        let start = self.data.len();
        self.data.extend_from_slice(f.data);
        self.frames.push(FrameMeta {
            number: f.number,
            ts_ns: f.ts_ns,
            link: f.link,
            orig_len: f.orig_len,
            start,
            len: f.data.len(),
            icrc: f.icrc,
        });
    }

    /// Empties a batch built with [`Batch::push`] for another use, keeping
    /// its allocations (a reader's batch keeps its buffer's length instead).
    pub fn clear(&mut self) {
        self.data.clear();
        self.frames.clear();
        self.end_offset = 0;
        self.notes.clear();
        self.info.clear();
    }

    /// Checks the RoCEv2 ICRC of every frame ([`Frame::check_icrc`]), for
    /// a reading thread that has time while the engine is behind.
    pub fn check_icrcs(&mut self, config: &stack::Config) {
        let Batch { data, frames, .. } = self;
        for f in frames.iter_mut() {
            let bytes = data
                .get(f.start..f.start.saturating_add(f.len))
                .unwrap_or_default();
            f.icrc = stack::rocev2_icrc_status(f.link, bytes, config);
        }
    }
}

/// Why a capture could not be read (further).
#[derive(Debug)]
pub struct ReadError {
    /// The file being read.
    pub path: PathBuf,
    /// The frame being read when it failed (1-based), if past the header.
    pub frame: Option<u64>,
    /// Byte offset in the file where the bad record starts (in the
    /// decompressed stream when `decompressed` names a format).
    pub offset: u64,
    /// The compression the file was read through, if any.
    pub decompressed: Option<&'static str>,
    /// What went wrong.
    pub kind: ReadErrorKind,
    /// After a read or decompression error: bytes of frame `frame` that
    /// came before it (`Some(0)`: the stream broke between records, and no
    /// frame was cut; every frame before was analyzed either way).
    pub partial: Option<u32>,
}

impl ReadError {
    /// An error about `path` before any record was read.
    pub fn at_start(path: PathBuf, kind: ReadErrorKind) -> ReadError {
        ReadError {
            path,
            frame: None,
            offset: 0,
            decompressed: None,
            kind,
            partial: None,
        }
    }
}

/// The kinds of [`ReadError`].
#[derive(Debug)]
#[non_exhaustive]
pub enum ReadErrorKind {
    /// An I/O error from the operating system.
    Io(io::Error),
    /// The input's decompressor gave up.
    Decompress(Box<DecompressError>),
    /// Several inputs were read as one and some could not be read whole
    /// (each with its own error; the error's own path, frame and offset
    /// are the first one's).
    Inputs {
        /// How many inputs there were.
        inputs: usize,
        /// The errors, in the order they were met.
        damaged: Vec<ReadError>,
    },
    /// The bytes are not (or no longer) a well-formed capture.
    Format(Problem),
    /// A capture of ERF records (link type 197) read to its end, some of
    /// whose records could not be read (`frame` and `offset` name the
    /// first), or none of which carries a frame the analyzer dissects.
    Erf {
        /// The ERF records in the capture.
        records: u64,
        /// Those that carried a frame.
        framed: u64,
        /// Those whose header cannot be right.
        malformed: u64,
        /// What was wrong with the first record named.
        first: Box<erf::Problem>,
    },
}

impl From<Problem> for ReadErrorKind {
    fn from(p: Problem) -> Self {
        ReadErrorKind::Format(p)
    }
}

impl From<io::Error> for ReadErrorKind {
    /// A decompressor's failure keeps its own kind (it says where).
    fn from(e: io::Error) -> Self {
        if !e.get_ref().is_some_and(|i| i.is::<DecompressError>()) {
            return ReadErrorKind::Io(e);
        }
        match e.into_inner().map(|i| i.downcast::<DecompressError>()) {
            Some(Ok(d)) => ReadErrorKind::Decompress(d),
            // The check above saw one: not reached.
            _ => ReadErrorKind::Io(io::Error::other("decompression failed")),
        }
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let ReadErrorKind::Inputs { inputs, damaged } = &self.kind {
            let n = damaged.len();
            write!(f, "{n} of {inputs} inputs could not be read whole: ")?;
            for (i, e) in damaged.iter().enumerate() {
                let sep = if i == 0 { "" } else { " | " };
                write!(f, "{sep}{e}")?;
            }
            return write!(f, " | every frame of the other inputs was analyzed");
        }
        let path = self.path.display();
        let of = match self.decompressed {
            Some(c) => format!(" of the decompressed {c} stream"),
            None => String::new(),
        };
        let between_records = self.partial == Some(0);
        match self.frame {
            // The stream broke where a record would start: no frame was
            // cut, so none is blamed.
            Some(n) if between_records => write!(
                f,
                "{path}: after frame {}, at byte offset {}{of}: ",
                n.saturating_sub(1),
                self.offset
            )?,
            Some(n) => write!(f, "{path}: frame {n} at byte offset {}{of}: ", self.offset)?,
            // Nothing was read yet (a file that is missing, unreadable or
            // not a capture): an offset would point at nothing.
            None if self.offset == 0 && self.decompressed.is_none() => write!(f, "{path}: ")?,
            None => write!(f, "{path}: at byte offset {}{of}: ", self.offset)?,
        }
        match &self.kind {
            // Said above, without a path of its own.
            ReadErrorKind::Inputs { .. } => Ok(()),
            ReadErrorKind::Io(e) => {
                write!(f, "read failed: {e}")?;
                match self.partial {
                    Some(0) => write!(f, "; every frame before this point was analyzed"),
                    Some(k) => write!(
                        f,
                        "; {k} bytes of this frame were read, too few to analyze it; every frame \
                         before it was analyzed"
                    ),
                    None => Ok(()),
                }
            }
            ReadErrorKind::Decompress(d) if d.window.is_some() => write!(f, "{d}"),
            ReadErrorKind::Decompress(d) => {
                write!(f, "{d}; ")?;
                match self.partial {
                    Some(0) => write!(f, "every frame before this point was analyzed")?,
                    Some(k) => write!(
                        f,
                        "{k} bytes of this frame were decompressed, too few to analyze it; \
                         every frame before it was analyzed"
                    )?,
                    None => write!(f, "frames before this one were analyzed")?,
                }
                write!(
                    f,
                    " (was the file still being written, or cut in transfer? `{} -t FILE` checks it)",
                    d.format
                )
            }
            ReadErrorKind::Format(Problem::NotACapture { magic }) => {
                let head = magic.to_be_bytes();
                if head
                    .iter()
                    .all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace())
                {
                    // Text (a README, a log, a tshark text dump): editcap
                    // cannot convert it, so do not send the user there.
                    let head: String = head.iter().map(|&b| char::from(b)).collect();
                    write!(
                        f,
                        "not a capture: the file starts with text ({head:?}); give a pcap or pcapng file (tcpdump -w, tshark -w, dumpcap)"
                    )
                } else {
                    write!(
                        f,
                        "not a pcap or pcapng file (magic {magic:#010x}); if it is another capture format, convert it with `editcap -F pcapng`"
                    )
                }
            }
            ReadErrorKind::Format(Problem::Truncated { needed, available }) => write!(
                f,
                "file ends inside a record (needs {needed} bytes, {available} left); the capture was cut short \
                 (was tcpdump stopped uncleanly?). Frames before this one were analyzed"
            ),
            ReadErrorKind::Format(Problem::Corrupt(what, value)) => write!(
                f,
                "corrupt record: {what} ({value}); frames before this one were analyzed"
            ),
            ReadErrorKind::Format(Problem::Empty) => {
                write!(f, "the file is empty: it holds no capture")
            }
            ReadErrorKind::Format(Problem::Compressed(how)) => write!(
                f,
                "the file is {how}-compressed, which rdma-analyzer does not unpack (it reads gzip and \
                 zstd as they are); decompress it first"
            ),
            ReadErrorKind::Erf {
                records,
                framed: 0,
                first,
                ..
            } => write!(
                f,
                "none of the {records} ERF records (link type 197, LINKTYPE_ERF) carries a frame \
                 rdma-analyzer dissects (this one is {}); if the capture is not ERF, its header names \
                 the wrong link type: rewrite it with `editcap -T ether`",
                erf_problem(first)
            ),
            ReadErrorKind::Erf {
                records,
                malformed,
                first,
                ..
            } => write!(
                f,
                "{malformed} of {records} ERF records (link type 197, LINKTYPE_ERF) are malformed, \
                 this one first ({}); they were counted as frames, not dissected, and every other \
                 frame was analyzed",
                erf_problem(first)
            ),
            ReadErrorKind::Format(Problem::UnsupportedLink { link }) => write!(
                f,
                "frames of link type {link} ({}), which rdma-analyzer does not dissect \
                 (it reads Ethernet, Linux cooked v1/v2, raw IP and InfiniBand); if the file's \
                 header names the wrong type, rewrite it with `editcap -T ether`",
                super::format::link_type_name(*link)
            ),
        }
    }
}

impl std::error::Error for ReadError {}

/// An ERF record's problem in words.
fn erf_problem(p: &erf::Problem) -> String {
    match *p {
        erf::Problem::UnsupportedType { record_type, .. } => format!(
            "an ERF record of type {record_type} ({}), which carries no frame rdma-analyzer dissects \
             (it reads ERF types ETH, INFINIBAND, IPV4 and IPV6)",
            erf::type_name(record_type)
        ),
        erf::Problem::Malformed(what, value) => {
            format!("a malformed ERF record: {what} ({value})")
        }
    }
}

/// Reads frames from a pcap or pcapng stream (a file, a pipe, any reader).
pub struct PcapReader<R> {
    inner: R,
    path: PathBuf,
    parser: Parser,
    /// Bytes of a record cut by the end of the last read.
    carry: Vec<u8>,
    /// Input offset of `carry[0]`: everything before it is parsed.
    offset: u64,
    /// Bytes the record at the start of `carry` needs, when known.
    pending: usize,
    eof: bool,
    frames: u64,
    /// Bytes the next read asks for (grows to `max_chunk`).
    chunk: usize,
    max_chunk: usize,
    /// What [`PcapReader::next_packet`] walks.
    cur: Batch,
    cur_next: usize,
    /// Set once the stream has ended or failed.
    finished: bool,
    failed: Option<ReadError>,
    /// Frames that got a note, and the record types of those past
    /// [`MAX_FRAME_NOTES`] that were only counted.
    noted: u64,
    unsaid: std::collections::BTreeMap<u8, u64>,
    /// The compression the stream was read through, for messages.
    decompressed: Option<&'static str>,
    /// ERF records without a frame, malformed ones, and the first of each
    /// (frame number, offset, problem): told at the end of the stream.
    erf_unframed: u64,
    erf_malformed: u64,
    erf_first_malformed: Option<(u64, u64, erf::Problem)>,
    erf_first_unframed: Option<(u64, u64, erf::Problem)>,
}

impl PcapReader<File> {
    /// Opens a capture file.
    ///
    /// # Errors
    /// When the file cannot be opened or does not start with a pcap/pcapng header.
    pub fn open(path: &Path) -> Result<Self, ReadError> {
        let file = File::open(path)
            .map_err(|e| ReadError::at_start(path.to_path_buf(), ReadErrorKind::Io(e)))?;
        Self::new(file, path.to_path_buf())
    }
}

/// Reads until `buf` is full or the stream ends; the bytes read.
pub(super) fn read_full(inner: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    match read_until_error(inner, buf) {
        (_, Some(e)) => Err(e),
        (n, None) => Ok(n),
    }
}

/// Reads until `buf` is full, the stream ends or a read fails: the bytes
/// read, and the failure. The bytes that came before a failure are kept:
/// a decompressor hands out everything it could decode before it finds a
/// cut or corrupt block, and those frames are as good as any.
pub(super) fn read_until_error(
    inner: &mut impl Read,
    buf: &mut [u8],
) -> (usize, Option<io::Error>) {
    let mut n = 0;
    while let Some(rest) = buf.get_mut(n..).filter(|r| !r.is_empty()) {
        match inner.read(rest) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (n, Some(e)),
        }
    }
    (n, None)
}

impl<R: Read> PcapReader<R> {
    /// Wraps a reader; `path` names it in error messages.
    ///
    /// # Errors
    /// When the stream does not start with a pcap/pcapng header.
    pub fn new(mut inner: R, path: PathBuf) -> Result<Self, ReadError> {
        let err = |offset, kind| ReadError {
            offset,
            ..ReadError::at_start(path.clone(), kind)
        };
        // The longest file header (classic pcap); a pcapng file's first
        // bytes are its first block, kept for the record loop.
        let mut head = [0u8; 24];
        let n = read_full(&mut inner, &mut head).map_err(|e| err(0, e.into()))?;
        let head = head.get(..n).unwrap_or_default();
        let (parser, skip) = Parser::start(head).map_err(|p| err(0, p.into()))?;
        let carry = head.get(skip..).unwrap_or_default().to_vec();
        Ok(PcapReader {
            inner,
            path,
            parser,
            carry,
            offset: skip as u64,
            pending: 0,
            eof: false,
            frames: 0,
            chunk: FIRST_CHUNK,
            max_chunk: CHUNK,
            cur: Batch::default(),
            cur_next: 0,
            finished: false,
            failed: None,
            noted: 0,
            unsaid: std::collections::BTreeMap::new(),
            decompressed: None,
            erf_unframed: 0,
            erf_malformed: 0,
            erf_first_malformed: None,
            erf_first_unframed: None,
        })
    }

    /// Says that the stream was decompressed from `format` (offsets in
    /// messages then count decompressed bytes, and say so).
    pub fn decompressed(mut self, format: Option<&'static str>) -> Self {
        self.decompressed = format;
        self
    }

    /// Reads at most `bytes` at a time (a merge of many inputs keeps
    /// their buffers small). Never less than the first read.
    pub fn max_chunk(mut self, bytes: usize) -> Self {
        self.max_chunk = bytes.clamp(FIRST_CHUNK, CHUNK);
        self
    }

    /// The container format.
    pub fn format(&self) -> Format {
        self.parser.format()
    }

    /// Bytes of the input parsed so far (for progress gauges).
    pub fn position(&self) -> u64 {
        self.offset
    }

    /// Frames read so far.
    pub fn frames_read(&self) -> u64 {
        self.frames
    }

    /// The name the reader reports errors under.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, offset: u64, kind: ReadErrorKind) -> ReadError {
        ReadError {
            path: self.path.clone(),
            frame: (self.frames > 0 || self.parser.has_interfaces()).then_some(self.frames + 1),
            offset,
            decompressed: self.decompressed,
            kind,
            partial: None,
        }
    }

    /// Replaces `batch`'s frames with the next ones: `Ok(true)` while more
    /// may follow, `Ok(false)` at a clean end of the stream.
    ///
    /// # Errors
    /// An I/O error, a stream that ends inside a record, or a corrupt
    /// record. The frames before the damage are in `batch` all the same.
    pub fn fill(&mut self, batch: &mut Batch) -> Result<bool, ReadError> {
        batch.frames.clear();
        batch.notes.clear();
        batch.info.clear();
        let rest = self.carry.len();
        let want = (rest + self.chunk).max(self.pending);
        if batch.data.len() < want {
            batch.data.resize(want, 0);
        }
        let (head, tail) = batch.data.split_at_mut(rest);
        head.copy_from_slice(&self.carry);
        let mut filled = rest;
        let mut io_error = None;
        if !self.eof {
            let room = tail.get_mut(..want - rest).unwrap_or_default();
            let (k, e) = read_until_error(&mut self.inner, room);
            filled += k;
            self.eof = e.is_some() || k < room.len();
            if !self.eof {
                self.chunk = (self.chunk * 2).min(self.max_chunk);
            }
            io_error = e;
        }
        let data = batch.data.get(..filled).unwrap_or_default();
        let mut at = 0;
        let mut problem = None;
        self.pending = 0;
        while let Some(rec) = data.get(at..) {
            // Per record: a capture joined on may be of the other format.
            let header = self.parser.header_len();
            if rec.len() < header {
                self.pending = header;
                break;
            }
            match self.parser.section_at(rec) {
                Section::No => {}
                Section::NeedMore(n) => {
                    self.pending = n;
                    break;
                }
                Section::Starts(Ok((next, skip))) => {
                    let offset = self.offset + at as u64;
                    batch.notes.push(format!(
                        "{}: another capture's file header at byte offset {offset}{}, after frame {}: \
                         captures joined end to end (as `cat a.pcap.gz b.pcap.gz` makes); its frames \
                         are read on as part of this one, numbered on from here",
                        self.path.display(),
                        self.decompressed
                            .map(|c| format!(" of the decompressed {c} stream"))
                            .unwrap_or_default(),
                        self.frames,
                    ));
                    self.parser.continue_with(next);
                    at += skip;
                    continue;
                }
                Section::Starts(Err(p)) => {
                    problem = Some(p);
                    break;
                }
            }
            let len = match self.parser.record_len(rec) {
                Ok(len) => len,
                Err(p) => {
                    problem = Some(p);
                    break;
                }
            };
            let Some(rec) = rec.get(..len) else {
                self.pending = len;
                break;
            };
            match self.parser.parse(rec) {
                Ok(Record::Packet {
                    ts_ns,
                    link,
                    orig_len,
                    data: range,
                    note,
                }) => {
                    self.frames += 1;
                    if let Some(note) = note {
                        self.note(&mut batch.notes, self.offset + at as u64, note);
                    }
                    batch.frames.push(FrameMeta {
                        number: self.frames,
                        ts_ns,
                        link,
                        orig_len,
                        start: at + range.start,
                        len: range.len(),
                        icrc: None,
                    });
                }
                Ok(Record::Other) => {}
                Err(p) => {
                    problem = Some(p);
                    break;
                }
            }
            at += len;
        }
        let here = self.offset + at as u64;
        batch.end_offset = here;
        self.carry.clear();
        self.carry
            .extend_from_slice(data.get(at..).unwrap_or_default());
        self.offset = here;
        if self.eof || problem.is_some() {
            self.say_unsaid(&mut batch.notes);
        }
        if let Some(p) = problem {
            return Err(self.err(here, p.into()));
        }
        if let Some(e) = io_error {
            let mut e = self.err(here, e.into());
            // A record is at most MAX_RECORD_LEN (16 MiB) long.
            e.partial = Some(u32::try_from(self.carry.len()).unwrap_or(u32::MAX));
            return Err(e);
        }
        if self.eof && !self.carry.is_empty() {
            let needed = self.pending.max(self.parser.header_len());
            let available = self.carry.len();
            return Err(self.err(here, Problem::Truncated { needed, available }.into()));
        }
        if self.eof {
            if let Some(e) = self.erf_verdict() {
                return Err(e);
            }
        }
        Ok(!self.eof)
    }

    /// Tells about the frame just counted (at `offset`), or counts it
    /// once enough were told.
    fn note(&mut self, notes: &mut Vec<String>, offset: u64, note: Note) {
        let Note::Erf(p) = note;
        self.erf_unframed += 1;
        let here = Some((self.frames, offset, p));
        self.erf_first_unframed = self.erf_first_unframed.or(here);
        if matches!(p, erf::Problem::Malformed(..)) {
            self.erf_malformed += 1;
            self.erf_first_malformed = self.erf_first_malformed.or(here);
        }
        if self.noted >= MAX_FRAME_NOTES {
            let t = match p {
                erf::Problem::UnsupportedType { record_type, .. } => record_type,
                // Counted under a type no record has.
                erf::Problem::Malformed(..) => u8::MAX,
            };
            *self.unsaid.entry(t).or_default() += 1;
            return;
        }
        self.noted += 1;
        let what = erf_problem(&p);
        notes.push(format!(
            "{}: frame {} at byte offset {offset}: {what}; counted as a frame, not dissected",
            self.path.display(),
            self.frames
        ));
    }

    /// At the clean end of an ERF capture: damage when records were
    /// malformed, or when none carried a frame (a capture of types the
    /// analyzer does not read, or a header naming the wrong link type):
    /// an empty report must not look like a clean one.
    fn erf_verdict(&self) -> Option<ReadError> {
        let records = self.parser.erf_records();
        let framed = records - self.erf_unframed.min(records);
        let (frame, offset, first) = if records > 0 && framed == 0 {
            self.erf_first_unframed?
        } else {
            self.erf_first_malformed?
        };
        Some(ReadError {
            path: self.path.clone(),
            frame: Some(frame),
            offset,
            decompressed: self.decompressed,
            kind: ReadErrorKind::Erf {
                records,
                framed,
                malformed: self.erf_malformed,
                first: Box::new(first),
            },
            partial: None,
        })
    }

    /// At the end: how many frames went uncommented past the first few.
    fn say_unsaid(&mut self, notes: &mut Vec<String>) {
        if self.unsaid.is_empty() {
            return;
        }
        let n: u64 = self.unsaid.values().sum();
        let kinds: Vec<String> = std::mem::take(&mut self.unsaid)
            .into_iter()
            .map(|(t, k)| match t {
                u8::MAX => format!("{k} malformed"),
                t => format!("{k} of type {t} ({})", erf::type_name(t)),
            })
            .collect();
        notes.push(format!(
            "{}: {n} more ERF records with no frame rdma-analyzer dissects ({}); counted as frames, not dissected",
            self.path.display(),
            kinds.join(", ")
        ));
    }

    /// Returns the next packet, `Ok(None)` at a clean end of the stream.
    ///
    /// # Errors
    /// An I/O error, a stream that ends inside a record, or a corrupt record.
    /// Packets returned before the error are good.
    pub fn next_packet(&mut self) -> Result<Option<Frame<'_>>, ReadError> {
        loop {
            if let Some(&m) = self.cur.frames.get(self.cur_next) {
                self.cur_next += 1;
                return Ok(Some(self.cur.frame(&m)));
            }
            if let Some(e) = self.failed.take() {
                return Err(e);
            }
            if self.finished {
                return Ok(None);
            }
            let mut cur = std::mem::take(&mut self.cur);
            match self.fill(&mut cur) {
                Ok(more) => self.finished = !more,
                Err(e) => {
                    self.failed = Some(e);
                    self.finished = true;
                }
            }
            self.cur = cur;
            self.cur_next = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A RoCEv2 RC Acknowledge whose ICRC is right (frame 30 of
    /// captures/v3-inline.pcap).
    const ACK: &[u8] = &[
        0x52, 0x54, 0x00, 0x99, 0x00, 0x02, 0x52, 0x54, 0x00, 0x99, 0x00, 0x01, 0x08, 0x00, 0x45,
        0x00, 0x00, 0x30, 0x23, 0xe8, 0x40, 0x00, 0x40, 0x11, 0x02, 0x0d, 0x0a, 0x63, 0x00, 0x01,
        0x0a, 0x63, 0x00, 0x02, 0xd9, 0xf2, 0x12, 0xb7, 0x00, 0x1c, 0x00, 0x00, 0x11, 0x00, 0xff,
        0xff, 0x00, 0x00, 0x00, 0x11, 0x00, 0x43, 0x0a, 0xc5, 0x1f, 0x00, 0x00, 0x01, 0xe0, 0xc4,
        0x06, 0x51,
    ];

    #[test]
    fn a_batch_built_a_frame_at_a_time_hands_them_back_with_their_icrcs() {
        let mut b = Batch::default();
        for (number, data) in [(1, ACK), (2, &ACK[..20])] {
            b.push(&Frame {
                number,
                ts_ns: number * 10,
                link: LinkType::ETHERNET,
                orig_len: 1500,
                data,
                icrc: None,
            });
        }
        b.check_icrcs(&stack::Config::default());
        let got: Vec<Frame<'_>> = b.iter().collect();
        assert_eq!(got.len(), 2);
        assert_eq!(
            (got[0].number, got[0].ts_ns, got[0].orig_len),
            (1, 10, 1500)
        );
        assert_eq!(got[0].data, ACK);
        assert_eq!(got[0].icrc, Some(IcrcStatus::Valid));
        assert_eq!(got[1].data, &ACK[..20]);
        assert_eq!(got[1].icrc, None, "not RoCEv2: left to the dissection");
        b.clear();
        assert!(b.iter().next().is_none() && b.data.is_empty());
    }

    fn pcap_file(records: &[(u32, u32, &[u8])]) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        f.extend_from_slice(&2u16.to_le_bytes());
        f.extend_from_slice(&4u16.to_le_bytes());
        f.extend_from_slice(&[0; 8]);
        f.extend_from_slice(&65535u32.to_le_bytes());
        f.extend_from_slice(&1u32.to_le_bytes());
        for (s, us, d) in records {
            f.extend_from_slice(&s.to_le_bytes());
            f.extend_from_slice(&us.to_le_bytes());
            f.extend_from_slice(&(d.len() as u32).to_le_bytes());
            f.extend_from_slice(&(d.len() as u32).to_le_bytes());
            f.extend_from_slice(d);
        }
        f
    }

    /// (frame number, timestamp, bytes) of every packet read.
    type Frames = Vec<(u64, u64, Vec<u8>)>;

    fn read_all(bytes: &[u8]) -> (Frames, Option<ReadError>) {
        let mut r = match PcapReader::new(bytes, "test.pcap".into()) {
            Ok(r) => r,
            Err(e) => return (vec![], Some(e)),
        };
        let mut out = vec![];
        loop {
            match r.next_packet() {
                Ok(Some(p)) => out.push((p.number, p.ts_ns, p.data.to_vec())),
                Ok(None) => return (out, None),
                Err(e) => return (out, Some(e)),
            }
        }
    }

    #[test]
    fn reads_pcap() {
        let f = pcap_file(&[(1, 500_000, b"abc"), (2, 0, b"defg")]);
        let (pkts, err) = read_all(&f);
        assert!(err.is_none());
        assert_eq!(
            pkts,
            vec![
                (1, 1_500_000_000, b"abc".to_vec()),
                (2, 2_000_000_000, b"defg".to_vec())
            ]
        );
    }

    #[test]
    fn records_straddling_reads_come_whole() {
        // Several chunks' worth, with records straddling chunk ends.
        let payloads: Vec<Vec<u8>> = (0..12_000u32)
            .map(|i| vec![(i % 251) as u8; 100 + (i % 900) as usize])
            .collect();
        let recs: Vec<(u32, u32, &[u8])> = payloads
            .iter()
            .enumerate()
            .map(|(i, p)| (i as u32, 0, p.as_slice()))
            .collect();
        let bytes = pcap_file(&recs);
        assert!(bytes.len() > 3 * CHUNK);
        let path = std::env::temp_dir().join(format!("straddle-{}.pcap", std::process::id()));
        std::fs::write(&path, &bytes).unwrap();
        let mut r = PcapReader::open(&path).unwrap();
        let mut n = 0;
        while let Some(p) = r.next_packet().unwrap() {
            assert_eq!(p.data, payloads[n].as_slice(), "frame {}", n + 1);
            n += 1;
        }
        assert_eq!(n, payloads.len());
        assert_eq!(r.position(), bytes.len() as u64);
        std::fs::remove_file(&path).unwrap();
    }

    /// A pcapng block may be longer than a read (a frame may not): it is
    /// carried over until it is whole.
    #[test]
    fn a_block_larger_than_a_read_is_read_whole() {
        let mut f = shb();
        f.extend(block(1, &[1, 0, 0, 0, 0, 0, 0, 0]));
        let epb = |b: u8| {
            let mut e = vec![0u8; 12];
            e.extend_from_slice(&3u32.to_le_bytes());
            e.extend_from_slice(&3u32.to_le_bytes());
            e.extend_from_slice(&[b; 3]);
            block(6, &e)
        };
        f.extend(epb(1));
        f.extend(block(0x0bad, &vec![7u8; 3 * CHUNK + 5]));
        f.extend(epb(2));
        let (pkts, err) = read_all(&f);
        assert!(err.is_none(), "{err:?}");
        let got: Vec<Vec<u8>> = pkts.into_iter().map(|p| p.2).collect();
        assert_eq!(got, vec![vec![1u8; 3], vec![2u8; 3]]);
    }

    #[test]
    fn truncated_pcap_names_frame_and_offset() {
        let f = pcap_file(&[(1, 0, b"abc"), (2, 0, b"defg")]);
        for cut in 25..f.len() {
            let (pkts, err) = read_all(&f[..cut]);
            if cut == 24 + 19 {
                assert!(err.is_none(), "clean cut after frame 1");
                continue;
            }
            let e = err.expect("truncation reported");
            assert!(matches!(
                e.kind,
                ReadErrorKind::Format(Problem::Truncated { .. })
            ));
            assert_eq!(e.frame, Some(pkts.len() as u64 + 1));
            let at = if pkts.is_empty() { 24 } else { 24 + 19 };
            assert_eq!(e.offset, at, "cut {cut}");
            assert!(e.to_string().contains("test.pcap: frame"), "{e}");
        }
    }

    /// Two pcaps end to end, read a few bytes at a time so the second file
    /// header is split at every place: its frames follow the first's, on
    /// the second's link type, with one note; cut inside that header, the
    /// stream is cut short there, not a corrupt record.
    #[test]
    fn a_second_file_header_starts_a_section_wherever_reads_split_it() {
        struct Dribble<'a>(&'a [u8], usize);
        impl Read for Dribble<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = buf.len().min(self.0.len()).min(self.1);
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let a = pcap_file(&[(1, 0, b"abc"), (2, 0, b"defg")]);
        let b = pcap_with(101, 65535, &[(3, 0, b"hij")]);
        let mut f = a.clone();
        f.extend(&b);
        for step in 1..=40 {
            let mut r = PcapReader::new(Dribble(&f, step), "joined".into()).unwrap();
            let mut got = vec![];
            let mut notes = vec![];
            let mut batch = Batch::default();
            loop {
                let more = r.fill(&mut batch).unwrap();
                notes.append(&mut batch.notes);
                got.extend(batch.frames.iter().map(|m| (m.number, m.ts_ns, m.link)));
                if !more {
                    break;
                }
            }
            assert_eq!(
                got,
                vec![
                    (1, 1_000_000_000, LinkType::ETHERNET),
                    (2, 2_000_000_000, LinkType::ETHERNET),
                    (3, 3_000_000_000, LinkType(101)),
                ],
                "reads of {step}"
            );
            assert_eq!(notes.len(), 1, "{notes:?}");
            assert!(
                notes[0].starts_with(&format!(
                    "joined: another capture's file header at byte offset {}, after frame 2",
                    a.len()
                )),
                "{}",
                notes[0]
            );
        }
        for cut in a.len() + 1..a.len() + 24 {
            let (pkts, err) = read_all(&f[..cut]);
            assert_eq!(pkts.len(), 2);
            let e = err.expect("cut inside the second header");
            assert!(
                matches!(e.kind, ReadErrorKind::Format(Problem::Truncated { .. })),
                "{cut}: {e}"
            );
            assert_eq!(e.offset, a.len() as u64);
        }
    }

    /// A read that fails part way (EIO from a disk or a network file
    /// system; no real device fails on demand here, so a reader stands in
    /// for it): every frame read before it is kept, and the error says
    /// whether it broke a frame (naming it and the bytes of it read) or
    /// fell between two ("after frame N").
    #[test]
    fn a_read_error_keeps_the_frames_before_it_and_names_where_it_fell() {
        struct FailsAt<'a>(&'a [u8], usize);
        impl Read for FailsAt<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                if self.1 == 0 {
                    return Err(io::Error::from_raw_os_error(5 /* EIO */));
                }
                let n = buf.len().min(self.0.len()).min(self.1);
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                self.1 -= n;
                Ok(n)
            }
        }
        let f = pcap_file(&[(1, 0, b"abc"), (2, 0, b"defg"), (3, 0, b"hij")]);
        let second = 24 + 19;
        let third = second + 20;
        for (fail_at, frames, msg) in [
            (
                third,
                2,
                format!("after frame 2, at byte offset {third}: read failed"),
            ),
            (
                third + 5,
                2,
                format!("frame 3 at byte offset {third}: read failed"),
            ),
        ] {
            let mut r = PcapReader::new(FailsAt(&f, fail_at), "eio".into()).unwrap();
            let mut n = 0;
            let e = loop {
                match r.next_packet() {
                    Ok(Some(_)) => n += 1,
                    Ok(None) => panic!("no error"),
                    Err(e) => break e,
                }
            };
            assert_eq!(n, frames);
            let text = e.to_string();
            assert!(text.starts_with(&format!("eio: {msg}")), "{text}");
            let partial = (fail_at - third) as u32;
            assert_eq!(e.partial, Some(partial));
            if partial > 0 {
                assert!(text.contains("5 bytes of this frame were read"), "{text}");
            } else {
                assert!(text.contains("every frame before this point"), "{text}");
            }
        }
    }

    #[test]
    fn garbage_is_not_a_capture() {
        let (_, err) = read_all(b"hello world, not a pcap");
        let e = err.unwrap();
        assert!(matches!(
            e.kind,
            ReadErrorKind::Format(Problem::NotACapture { .. })
        ));
        // Text: no editcap advice (it cannot convert text), and no
        // offset before anything was read.
        let said = e.to_string();
        assert!(
            said.contains("not a capture: the file starts with text (\"hell\")"),
            "{said}"
        );
        assert!(
            !said.contains("editcap") && !said.contains("byte offset"),
            "{said}"
        );
        let (_, err) = read_all(&[0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0, 0, 0, 0, 0]);
        let said = err.unwrap().to_string();
        assert!(
            said.contains("not a pcap or pcapng file (magic 0xdeadbeef)"),
            "{said}"
        );
        assert!(said.contains("editcap -F pcapng"), "{said}");
    }

    fn block(kind: u32, body: &[u8]) -> Vec<u8> {
        let mut body = body.to_vec();
        while !body.len().is_multiple_of(4) {
            body.push(0);
        }
        let total = (12 + body.len()) as u32;
        let mut b = kind.to_le_bytes().to_vec();
        b.extend_from_slice(&total.to_le_bytes());
        b.extend_from_slice(&body);
        b.extend_from_slice(&total.to_le_bytes());
        b
    }

    fn shb() -> Vec<u8> {
        block(
            0x0a0d_0d0a,
            &[
                0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            ],
        )
    }

    #[test]
    fn reads_pcapng_with_nanosecond_interface() {
        let mut f = shb();
        // IDB: Ethernet, snaplen 0, option if_tsresol = 9 (ns).
        let mut idb = vec![1, 0, 0, 0, 0, 0, 0, 0];
        idb.extend_from_slice(&[9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0]);
        f.extend(block(1, &idb));
        f.extend(block(0x0bad, b"skipped custom block"));
        let ts: u64 = 3_000_000_007;
        let mut epb = 0u32.to_le_bytes().to_vec();
        epb.extend_from_slice(&((ts >> 32) as u32).to_le_bytes());
        epb.extend_from_slice(&(ts as u32).to_le_bytes());
        epb.extend_from_slice(&5u32.to_le_bytes());
        epb.extend_from_slice(&60u32.to_le_bytes());
        epb.extend_from_slice(b"hello");
        f.extend(block(6, &epb));
        let (pkts, err) = read_all(&f);
        assert!(err.is_none(), "{err:?}");
        assert_eq!(pkts, vec![(1, 3_000_000_007, b"hello".to_vec())]);

        // A packet block naming an interface that was never declared.
        let mut bad = epb.clone();
        bad[0] = 7;
        let mut g = f.clone();
        g.extend(block(6, &bad));
        let (pkts, err) = read_all(&g);
        assert_eq!(pkts.len(), 1);
        assert!(err.unwrap().to_string().contains("frame 2"));
    }

    /// A simple packet block of 12 bytes has no room for its length field:
    /// it used to underflow (`total - 16`) and panic the reader.
    #[test]
    fn a_twelve_byte_simple_packet_block_is_corruption() {
        let mut f = shb();
        f.extend(block(1, &[1, 0, 0, 0, 0, 0, 0, 0]));
        f.extend(block(3, &[]));
        let (pkts, err) = read_all(&f);
        assert!(pkts.is_empty());
        let e = err.expect("damage reported");
        assert!(
            matches!(
                e.kind,
                ReadErrorKind::Format(Problem::Corrupt("simple packet block length", 12))
            ),
            "{e}"
        );
        assert_eq!(e.frame, Some(1));
    }

    #[test]
    fn reads_from_a_pipe_in_small_pieces() {
        // A reader that returns a few bytes at a time, as a pipe does.
        struct Dribble<'a>(&'a [u8]);
        impl Read for Dribble<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = buf.len().min(self.0.len()).min(7);
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let f = pcap_file(&[(1, 0, b"abc"), (2, 0, b"defg"), (3, 0, &[9; 3000])]);
        let mut r = PcapReader::new(Dribble(&f), "pipe".into()).unwrap();
        let mut n = 0;
        while let Some(p) = r.next_packet().unwrap() {
            n += 1;
            assert_eq!(p.number, n);
        }
        assert_eq!(n, 3);
    }

    fn pcap_with(link: u32, snaplen: u32, records: &[(u32, u32, &[u8])]) -> Vec<u8> {
        let mut f = pcap_file(records);
        f[16..20].copy_from_slice(&snaplen.to_le_bytes());
        f[20..24].copy_from_slice(&link.to_le_bytes());
        f
    }

    #[test]
    fn a_link_type_nothing_dissects_is_refused_with_its_number_and_name() {
        let (_, err) = read_all(&pcap_with(65535, 65535, &[(1, 0, b"abc")]));
        let e = err.expect("refused");
        assert!(
            matches!(
                e.kind,
                ReadErrorKind::Format(Problem::UnsupportedLink { link: 65535 })
            ),
            "{e}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains("link type 65535") && msg.contains("not a link type"),
            "{msg}"
        );
    }

    /// An ERF record per frame (link type 197): the frame inside comes out
    /// as what it is, stamped with the record's time; a record of a type
    /// nothing dissects is still a frame, with a note naming it.
    #[test]
    fn erf_frames_come_out_as_their_own_link_type_and_unknown_types_are_told() {
        let erf = |kind: u8, payload: &[u8]| {
            let mut r = (5u64 << 32).to_le_bytes().to_vec();
            r.extend_from_slice(&[kind, 0]);
            r.extend_from_slice(&((16 + payload.len()) as u16).to_be_bytes());
            r.extend_from_slice(&[0, 0]);
            r.extend_from_slice(&(payload.len() as u16).to_be_bytes());
            r.extend_from_slice(payload);
            r
        };
        let ib = erf(21, b"lrh-and-the-rest");
        let raw = erf(24, b"sdh");
        let recs: Vec<(u32, u32, &[u8])> = std::iter::once((1, 0, ib.as_slice()))
            .chain(std::iter::repeat_n((1, 0, raw.as_slice()), 12))
            .collect();
        let f = pcap_with(197, 65535, &recs);
        let mut r = PcapReader::new(f.as_slice(), "ib.erf.pcap".into()).unwrap();
        let mut b = Batch::default();
        assert!(!r.fill(&mut b).unwrap());
        assert_eq!(b.frames.len(), 13);
        let first = b.frames[0];
        assert_eq!(first.link, LinkType::INFINIBAND);
        assert_eq!(first.ts_ns, 5_000_000_000);
        assert_eq!(b.bytes(&first), b"lrh-and-the-rest");
        assert_eq!(b.frames[1].link, LinkType(197));
        // Ten frames told one by one, the other two counted at the end.
        assert_eq!(b.notes.len(), 11, "{:#?}", b.notes);
        assert!(
            b.notes[0].starts_with("ib.erf.pcap: frame 2 at byte offset ")
                && b.notes[0].contains("type 24 (RAW_LINK)"),
            "{}",
            b.notes[0]
        );
        assert!(
            b.notes[10].contains("2 more ERF records"),
            "{}",
            b.notes[10]
        );
    }

    /// libpcap's FCS bits (LT_FCS_LENGTH_PRESENT, length in 16-bit words)
    /// say each whole frame ends in a 4-byte FCS: it is not frame data.
    #[test]
    fn the_fcs_bits_of_the_link_type_take_the_fcs_off_whole_frames() {
        let link = 1 | 0x0400_0000 | (2 << 28);
        let f = pcap_with(link, 65535, &[(1, 0, b"framFCS!")]);
        let (pkts, err) = read_all(&f);
        assert!(err.is_none(), "{err:?}");
        assert_eq!(pkts[0].2, b"fram".to_vec());
    }

    #[test]
    fn a_record_longer_than_the_snap_length_or_256k_is_damage_at_that_record() {
        // 1000 good frames, then one whose length field says 1,000,000.
        let payloads: Vec<Vec<u8>> = (0..1000).map(|i| vec![i as u8; 60]).collect();
        let recs: Vec<(u32, u32, &[u8])> = payloads.iter().map(|p| (1, 0, p.as_slice())).collect();
        let mut f = pcap_with(1, 262_144, &recs);
        let bad_at = f.len();
        f.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]);
        f.extend_from_slice(&1_000_000u32.to_le_bytes());
        f.extend_from_slice(&1_000_000u32.to_le_bytes());
        f.extend_from_slice(&[0xee; 4096]);
        let (pkts, err) = read_all(&f);
        assert_eq!(pkts.len(), 1000, "nothing after the damage is a frame");
        let e = err.expect("damage");
        assert_eq!((e.frame, e.offset), (Some(1001), bad_at as u64), "{e}");
        assert!(e.to_string().contains("over 256 KiB"), "{e}");
        // Within 256 KiB but over the file's snap length of 128.
        let g = pcap_with(1, 128, &[(1, 0, &[0u8; 100]), (1, 0, &[0u8; 200])]);
        let (pkts, err) = read_all(&g);
        assert_eq!(pkts.len(), 1);
        let e = err.expect("damage");
        assert_eq!(e.frame, Some(2));
        assert!(e.to_string().contains("snap length"), "{e}");
    }

    #[test]
    fn empty_and_compressed_files_are_named_as_such() {
        let (_, err) = read_all(b"");
        assert!(err.unwrap().to_string().contains("the file is empty"));
        let (_, err) = read_all(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0]);
        assert!(err.unwrap().to_string().contains("gzip-compressed"));
        let (_, err) = read_all(&[0x28, 0xb5, 0x2f, 0xfd, 0, 0]);
        assert!(err.unwrap().to_string().contains("zstd-compressed"));
    }
}
