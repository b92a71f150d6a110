//! A streaming reader for pcap and pcapng files.
//!
//! Written for throughput: records are handed out as slices of one large read
//! buffer (no copy, no allocation per frame), and the buffer is refilled with
//! big sequential reads. Both file formats, both byte orders, micro- and
//! nanosecond pcap, and pcapng's per-interface link types and timestamp
//! resolutions are understood. A file that ends inside a record, or holds a
//! record that cannot be right, gives a [`ReadError`] that names the frame and
//! the byte offset; everything before it has already been returned.

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use rdma_dissectors::link::LinkType;

/// Records longer than this are treated as corruption rather than data: no
/// link type here carries frames anywhere near it, and it bounds the buffer.
pub const MAX_RECORD_LEN: usize = 16 << 20;

/// pcapng files may declare many interfaces; past this we stop believing them.
const MAX_INTERFACES: usize = 4096;

const READ_CHUNK: usize = 4 << 20;

/// One captured frame.
#[derive(Debug, Clone, Copy)]
pub struct Packet<'a> {
    /// 1-based frame number, as tshark counts them.
    pub number: u64,
    /// Capture time in nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    /// The link type of the interface it was captured on.
    pub link_type: LinkType,
    /// Length of the frame on the wire (may exceed `data.len()` when the
    /// capture's snaplen cut it).
    pub orig_len: u32,
    /// The captured bytes.
    pub data: &'a [u8],
}

/// Which container format the file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Classic libpcap.
    Pcap,
    /// pcapng.
    Pcapng,
}

/// Why a capture file could not be read (further).
#[derive(Debug)]
pub struct ReadError {
    /// The file being read.
    pub path: PathBuf,
    /// The frame being read when it failed (1-based), if past the header.
    pub frame: Option<u64>,
    /// Byte offset in the file where the bad record starts.
    pub offset: u64,
    /// What went wrong.
    pub kind: ReadErrorKind,
}

/// The kinds of [`ReadError`].
#[derive(Debug)]
#[non_exhaustive]
pub enum ReadErrorKind {
    /// An I/O error from the operating system.
    Io(io::Error),
    /// Not a pcap or pcapng file.
    NotACapture {
        /// The first four bytes found.
        magic: u32,
    },
    /// The file ends inside a header or a record.
    Truncated {
        /// Bytes the record needed.
        needed: usize,
        /// Bytes the file still had.
        available: usize,
    },
    /// A header or record field cannot be right.
    Corrupt(&'static str, u64),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match self.frame {
            Some(n) => write!(f, "{path}: frame {n} at byte offset {}: ", self.offset)?,
            None => write!(f, "{path}: at byte offset {}: ", self.offset)?,
        }
        match &self.kind {
            ReadErrorKind::Io(e) => write!(f, "read failed: {e}"),
            ReadErrorKind::NotACapture { magic } => write!(
                f,
                "not a pcap or pcapng file (magic {magic:#010x}); convert it with `editcap -F pcapng`"
            ),
            ReadErrorKind::Truncated { needed, available } => write!(
                f,
                "file ends inside a record (needs {needed} bytes, {available} left); the capture was cut short \
                 (was tcpdump stopped uncleanly?). Frames before this one were analyzed"
            ),
            ReadErrorKind::Corrupt(what, value) => write!(
                f,
                "corrupt record: {what} ({value}); frames before this one were analyzed"
            ),
        }
    }
}

impl std::error::Error for ReadError {}

#[derive(Clone, Copy)]
struct Interface {
    link_type: LinkType,
    /// Timestamp units per second.
    units_per_sec: u64,
    offset_secs: i64,
}

/// Streams packets from a pcap or pcapng file (or any reader).
pub struct PcapReader<R> {
    inner: R,
    path: PathBuf,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    /// File offset of `buf[start]`.
    file_offset: u64,
    format: Format,
    big_endian: bool,
    /// pcap: the one link type and resolution; pcapng: per interface.
    interfaces: Vec<Interface>,
    frames: u64,
}

impl PcapReader<Prefetch> {
    /// Opens a capture file. A helper thread reads ahead, so the kernel's
    /// copy of the next megabytes overlaps the parsing of the current ones
    /// (on two cores that hides most of the read cost).
    ///
    /// # Errors
    /// When the file cannot be opened or does not start with a pcap/pcapng header.
    pub fn open(path: &Path) -> Result<Self, ReadError> {
        let file = File::open(path).map_err(|e| ReadError {
            path: path.to_path_buf(),
            frame: None,
            offset: 0,
            kind: ReadErrorKind::Io(e),
        })?;
        Self::new(Prefetch::new(file), path.to_path_buf())
    }
}

/// Chunks a read-ahead thread holds ready (bounds the memory to this many
/// times [`PREFETCH_CHUNK`]).
const PREFETCH_DEPTH: usize = 3;
const PREFETCH_CHUNK: usize = 4 << 20;

/// A [`Read`] over a file that a helper thread reads ahead in large chunks.
/// The thread stops when the file ends, on an error (handed to the reader),
/// or when the `Prefetch` is dropped.
pub struct Prefetch {
    rx: Receiver<io::Result<(Vec<u8>, usize)>>,
    recycle: SyncSender<Vec<u8>>,
    cur: Vec<u8>,
    /// Bytes of `cur` that hold data (buffers keep their full size so a
    /// recycled one is never zeroed again).
    len: usize,
    pos: usize,
    done: bool,
}

impl Prefetch {
    /// Starts reading `file` ahead.
    pub fn new(mut file: File) -> Self {
        let (tx, rx) = sync_channel::<io::Result<(Vec<u8>, usize)>>(PREFETCH_DEPTH);
        let (recycle, spare) = sync_channel::<Vec<u8>>(PREFETCH_DEPTH + 2);
        let (rx, recycle) = std::thread::Builder::new()
            .name("pcap-prefetch".into())
            .spawn(move || loop {
                let mut buf = spare.try_recv().unwrap_or_else(|_| vec![0; PREFETCH_CHUNK]);
                let mut n = 0;
                while n < buf.len() {
                    match file.read(&mut buf[n..]) {
                        Ok(0) => break,
                        Ok(k) => n += k,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => {
                            let _ = tx.send(Err(e));
                            return;
                        }
                    }
                }
                let end = n == 0;
                // The reader hung up: nobody wants the rest.
                if tx.send(Ok((buf, n))).is_err() || end {
                    return;
                }
            })
            .map_or_else(
                |e| {
                    // No thread: hand the error to the first read.
                    let (tx, rx) = sync_channel(1);
                    let _ = tx.send(Err(e));
                    (rx, sync_channel(1).0)
                },
                |_| (rx, recycle),
            );
        Prefetch {
            rx,
            recycle,
            cur: Vec::new(),
            len: 0,
            pos: 0,
            done: false,
        }
    }
}

impl Read for Prefetch {
    fn read(&mut self, dst: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.len {
            if self.done {
                return Ok(0);
            }
            match self.rx.recv() {
                Ok(Ok((next, len))) => {
                    let old = std::mem::replace(&mut self.cur, next);
                    if !old.is_empty() {
                        let _ = self.recycle.try_send(old);
                    }
                    self.len = len;
                    self.pos = 0;
                    if len == 0 {
                        self.done = true;
                    }
                }
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                Err(_) => self.done = true,
            }
        }
        let n = dst.len().min(self.len - self.pos);
        dst[..n].copy_from_slice(&self.cur[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl<R: Read> PcapReader<R> {
    /// Wraps a reader; `path` is only used in error messages.
    ///
    /// # Errors
    /// When the stream does not start with a pcap/pcapng header.
    pub fn new(inner: R, path: PathBuf) -> Result<Self, ReadError> {
        let mut r = PcapReader {
            inner,
            path,
            buf: vec![0; READ_CHUNK * 2],
            start: 0,
            end: 0,
            eof: false,
            file_offset: 0,
            format: Format::Pcap,
            big_endian: false,
            interfaces: Vec::new(),
            frames: 0,
        };
        r.read_file_header()?;
        Ok(r)
    }

    /// The container format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Bytes of the file consumed so far (for progress gauges).
    pub fn position(&self) -> u64 {
        self.file_offset
    }

    /// How many frames have been returned.
    pub fn frames_read(&self) -> u64 {
        self.frames
    }

    fn err(&self, kind: ReadErrorKind) -> ReadError {
        ReadError {
            path: self.path.clone(),
            frame: (self.frames > 0 || !self.interfaces.is_empty()).then_some(self.frames + 1),
            offset: self.file_offset,
            kind,
        }
    }

    /// Makes at least `n` bytes available at `start`, unless the file ends first.
    /// Returns how many are available (at most `n` counted).
    fn fill(&mut self, n: usize) -> Result<usize, ReadError> {
        while self.end - self.start < n && !self.eof {
            if self.buf.len() - self.start < n {
                // Compact; grow only for a record bigger than the buffer.
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
                if self.buf.len() < n {
                    self.buf.resize(n.next_power_of_two(), 0);
                }
            }
            let want_end = self.buf.len().min(self.end + READ_CHUNK.max(n));
            let dst = &mut self.buf[self.end..want_end];
            match self.inner.read(dst) {
                Ok(0) => self.eof = true,
                Ok(k) => self.end += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.err(ReadErrorKind::Io(e))),
            }
        }
        Ok((self.end - self.start).min(n))
    }

    fn need(&mut self, n: usize) -> Result<(), ReadError> {
        let have = self.fill(n)?;
        if have < n {
            return Err(self.err(ReadErrorKind::Truncated {
                needed: n,
                available: have,
            }));
        }
        Ok(())
    }

    fn u16_at(&self, at: usize) -> u16 {
        let b = [self.buf[self.start + at], self.buf[self.start + at + 1]];
        if self.big_endian {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        }
    }

    fn u32_at(&self, at: usize) -> u32 {
        let s = self.start + at;
        let b = [
            self.buf[s],
            self.buf[s + 1],
            self.buf[s + 2],
            self.buf[s + 3],
        ];
        if self.big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        self.file_offset += n as u64;
    }

    fn read_file_header(&mut self) -> Result<(), ReadError> {
        let have = self.fill(4)?;
        if have < 4 {
            return Err(self.err(ReadErrorKind::Truncated {
                needed: 4,
                available: have,
            }));
        }
        let magic_le = self.u32_at(0);
        let (units, big) = match magic_le {
            0xa1b2_c3d4 => (1_000_000, false),
            0xd4c3_b2a1 => (1_000_000, true),
            0xa1b2_3c4d => (1_000_000_000, false),
            0x4d3c_b2a1 => (1_000_000_000, true),
            0x0a0d_0d0a => {
                self.format = Format::Pcapng;
                return Ok(());
            }
            m => {
                return Err(self.err(ReadErrorKind::NotACapture {
                    magic: m.swap_bytes(),
                }))
            }
        };
        self.big_endian = big;
        self.need(24)?;
        let link = self.u32_at(20) & 0x0fff_ffff;
        self.interfaces.push(Interface {
            link_type: LinkType(link),
            units_per_sec: units,
            offset_secs: 0,
        });
        self.consume(24);
        Ok(())
    }

    /// Returns the next packet, `Ok(None)` at a clean end of file.
    ///
    /// # Errors
    /// An I/O error, a file that ends inside a record, or a corrupt record.
    /// Packets returned before the error are good.
    pub fn next_packet(&mut self) -> Result<Option<Packet<'_>>, ReadError> {
        match self.format {
            Format::Pcap => self.next_pcap(),
            Format::Pcapng => self.next_pcapng(),
        }
    }

    fn next_pcap(&mut self) -> Result<Option<Packet<'_>>, ReadError> {
        let have = self.fill(16)?;
        if have == 0 {
            return Ok(None);
        }
        if have < 16 {
            return Err(self.err(ReadErrorKind::Truncated {
                needed: 16,
                available: have,
            }));
        }
        let secs = u64::from(self.u32_at(0));
        let frac = u64::from(self.u32_at(4));
        let caplen = self.u32_at(8) as usize;
        let orig_len = self.u32_at(12);
        if caplen > MAX_RECORD_LEN {
            return Err(self.err(ReadErrorKind::Corrupt(
                "captured length over 16 MiB",
                caplen as u64,
            )));
        }
        self.need(16 + caplen)?;
        let iface = self.interfaces[0];
        let ts_ns = secs * 1_000_000_000 + frac * (1_000_000_000 / iface.units_per_sec);
        self.frames += 1;
        let from = self.start + 16;
        self.consume(16 + caplen);
        Ok(Some(Packet {
            number: self.frames,
            ts_ns,
            link_type: iface.link_type,
            orig_len,
            data: &self.buf[from..from + caplen],
        }))
    }

    fn next_pcapng(&mut self) -> Result<Option<Packet<'_>>, ReadError> {
        loop {
            let have = self.fill(12)?;
            if have == 0 {
                return Ok(None);
            }
            if have < 8 {
                return Err(self.err(ReadErrorKind::Truncated {
                    needed: 12,
                    available: have,
                }));
            }
            let mut block_type = self.u32_at(0);
            if block_type == 0x0a0d_0d0a {
                // A section header: its byte-order magic decides how to read the rest.
                self.need(12)?;
                let bom = &self.buf[self.start + 8..self.start + 12];
                self.big_endian = match bom {
                    [0x1a, 0x2b, 0x3c, 0x4d] => true,
                    [0x4d, 0x3c, 0x2b, 0x1a] => false,
                    _ => {
                        let v = u32::from_be_bytes([bom[0], bom[1], bom[2], bom[3]]);
                        return Err(self.err(ReadErrorKind::Corrupt(
                            "section header byte-order magic",
                            v.into(),
                        )));
                    }
                };
                block_type = 0x0a0d_0d0a;
                self.interfaces.clear();
            }
            let total = self.u32_at(4) as usize;
            if total < 12 || total % 4 != 0 || total > MAX_RECORD_LEN {
                return Err(self.err(ReadErrorKind::Corrupt("block total length", total as u64)));
            }
            self.need(total)?;
            if self.u32_at(total - 4) as usize != total {
                return Err(self.err(ReadErrorKind::Corrupt(
                    "block trailing length differs from leading length",
                    u64::from(self.u32_at(total - 4)),
                )));
            }
            match block_type {
                1 => {
                    if total < 20 {
                        return Err(self.err(ReadErrorKind::Corrupt(
                            "interface description block length",
                            total as u64,
                        )));
                    }
                    if self.interfaces.len() >= MAX_INTERFACES {
                        return Err(self.err(ReadErrorKind::Corrupt(
                            "too many interfaces",
                            self.interfaces.len() as u64,
                        )));
                    }
                    let link = u32::from(self.u16_at(8));
                    let (units, offset) = self.idb_options(16, total - 4);
                    self.interfaces.push(Interface {
                        link_type: LinkType(link),
                        units_per_sec: units,
                        offset_secs: offset,
                    });
                    self.consume(total);
                }
                6 | 2 => {
                    // Enhanced packet block, or the obsolete packet block (16-bit interface id).
                    if total < 32 {
                        return Err(
                            self.err(ReadErrorKind::Corrupt("packet block length", total as u64))
                        );
                    }
                    let iface_id = if block_type == 6 {
                        self.u32_at(8) as usize
                    } else {
                        usize::from(self.u16_at(8))
                    };
                    let Some(iface) = self.interfaces.get(iface_id).copied() else {
                        return Err(self.err(ReadErrorKind::Corrupt(
                            "packet names an undeclared interface",
                            iface_id as u64,
                        )));
                    };
                    let ts = (u64::from(self.u32_at(12)) << 32) | u64::from(self.u32_at(16));
                    let caplen = self.u32_at(20) as usize;
                    let orig_len = self.u32_at(24);
                    if 28 + caplen > total - 4 {
                        return Err(self.err(ReadErrorKind::Corrupt(
                            "captured length runs past the block",
                            caplen as u64,
                        )));
                    }
                    self.frames += 1;
                    let from = self.start + 28;
                    let ts_ns = scale_ts(ts, iface);
                    self.consume(total);
                    return Ok(Some(Packet {
                        number: self.frames,
                        ts_ns,
                        link_type: iface.link_type,
                        orig_len,
                        data: &self.buf[from..from + caplen],
                    }));
                }
                3 => {
                    // Simple packet block: interface 0, no timestamp.
                    let Some(iface) = self.interfaces.first().copied() else {
                        return Err(self.err(ReadErrorKind::Corrupt(
                            "simple packet block before any interface",
                            0,
                        )));
                    };
                    let orig_len = self.u32_at(8);
                    let caplen = (orig_len as usize).min(total - 16);
                    self.frames += 1;
                    let from = self.start + 12;
                    self.consume(total);
                    return Ok(Some(Packet {
                        number: self.frames,
                        ts_ns: 0,
                        link_type: iface.link_type,
                        orig_len,
                        data: &self.buf[from..from + caplen],
                    }));
                }
                _ => self.consume(total),
            }
        }
    }

    /// Reads `if_tsresol` and `if_tsoffset` from an interface block's options.
    fn idb_options(&self, mut at: usize, end: usize) -> (u64, i64) {
        let mut units = 1_000_000u64;
        let mut offset = 0i64;
        while at + 4 <= end {
            let code = self.u16_at(at);
            let len = usize::from(self.u16_at(at + 2));
            let val = at + 4;
            if code == 0 || val + len > end {
                break;
            }
            match (code, len) {
                (9, 1) => {
                    let r = self.buf[self.start + val];
                    let exp = u32::from(r & 0x7f);
                    units = if r & 0x80 == 0 {
                        10u64.checked_pow(exp).unwrap_or(1_000_000_000)
                    } else {
                        1u64.checked_shl(exp).unwrap_or(1_000_000_000)
                    };
                }
                (14, 8) => {
                    let hi = u64::from(self.u32_at(val));
                    let lo = u64::from(self.u32_at(val + 4));
                    offset = if self.big_endian {
                        (hi << 32) | lo
                    } else {
                        (lo << 32) | hi
                    } as i64;
                }
                _ => {}
            }
            at = val + len.div_ceil(4) * 4;
        }
        (units.max(1), offset)
    }
}

fn scale_ts(ts: u64, iface: Interface) -> u64 {
    let secs = ts / iface.units_per_sec;
    let frac = ts % iface.units_per_sec;
    let ns = (u128::from(frac) * 1_000_000_000 / u128::from(iface.units_per_sec)) as u64;
    let secs = secs.saturating_add_signed(iface.offset_secs);
    secs.saturating_mul(1_000_000_000).saturating_add(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn prefetching_file_reader_returns_every_frame() {
        // Several read-ahead chunks' worth, with records straddling chunk ends.
        let payloads: Vec<Vec<u8>> = (0..40_000u32)
            .map(|i| vec![(i % 251) as u8; 100 + (i % 900) as usize])
            .collect();
        let recs: Vec<(u32, u32, &[u8])> = payloads
            .iter()
            .enumerate()
            .map(|(i, p)| (i as u32, 0, p.as_slice()))
            .collect();
        let bytes = pcap_file(&recs);
        assert!(bytes.len() > 3 * PREFETCH_CHUNK);
        let path = std::env::temp_dir().join(format!("prefetch-{}.pcap", std::process::id()));
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
            assert!(matches!(e.kind, ReadErrorKind::Truncated { .. }));
            assert_eq!(e.frame, Some(pkts.len() as u64 + 1));
            assert!(e.to_string().contains("test.pcap: frame"), "{e}");
        }
    }

    #[test]
    fn garbage_is_not_a_capture() {
        let (_, err) = read_all(b"hello world, not a pcap");
        let e = err.unwrap();
        assert!(matches!(e.kind, ReadErrorKind::NotACapture { .. }));
        assert!(e.to_string().contains("not a pcap or pcapng file"));
    }

    fn block(kind: u32, body: &[u8]) -> Vec<u8> {
        let mut body = body.to_vec();
        while body.len() % 4 != 0 {
            body.push(0);
        }
        let total = (12 + body.len()) as u32;
        let mut b = kind.to_le_bytes().to_vec();
        b.extend_from_slice(&total.to_le_bytes());
        b.extend_from_slice(&body);
        b.extend_from_slice(&total.to_le_bytes());
        b
    }

    #[test]
    fn reads_pcapng_with_nanosecond_interface() {
        let mut f = block(
            0x0a0d_0d0a,
            &[
                0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            ],
        );
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
}
