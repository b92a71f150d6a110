//! Where capture bytes come from: a file or standard input (`-`), plain or
//! compressed with gzip or zstd, and the inputs of a command line with
//! directories expanded to the files in them.
//!
//! ```text
//!  file / stdin ─► Counted (raw bytes, for progress) ─► sniff 4 bytes (no seek)
//!        ─► plain │ gzip (flate2, multi-member) │ zstd (multi-frame) ─► PcapReader
//! ```
//!
//! Compression is recognised by its magic bytes, never by the file name,
//! so a pipe (`zcat` not needed) and a misnamed file read the same. The
//! sniffed bytes are put back in front of the stream rather than sought
//! back to, so nothing here needs a seekable input.

use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Cursor, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::read::{read_full, PcapReader, ReadError, ReadErrorKind};

/// What a command line says for standard input.
pub const STDIN: &str = "-";

/// The name standard input goes by in messages.
pub const STDIN_NAME: &str = "standard input";

/// Bytes the decompressors read from the input at a time.
const COMPRESSED_BUF: usize = 256 << 10;

/// A capture stream the analyzer can read.
pub type Stream = Box<dyn Read + Send>;

/// How the bytes of an input are packed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// As they are.
    None,
    /// gzip (RFC 1952), one member or several concatenated.
    Gzip,
    /// Zstandard (RFC 8878), one frame or several.
    Zstd,
}

impl Compression {
    /// Recognises the magic bytes at the start of a stream.
    pub fn sniff(head: &[u8]) -> Compression {
        match head {
            [0x1f, 0x8b, ..] => Compression::Gzip,
            [0x28, 0xb5, 0x2f, 0xfd, ..] => Compression::Zstd,
            _ => Compression::None,
        }
    }

    /// Its name, when it is one.
    pub fn name(self) -> Option<&'static str> {
        match self {
            Compression::None => None,
            Compression::Gzip => Some("gzip"),
            Compression::Zstd => Some("zstd"),
        }
    }
}

/// A decompressor that gave up: the stream is corrupt, or ends inside a
/// compressed block or before its trailer.
#[derive(Debug)]
pub struct DecompressError {
    /// `gzip` or `zstd`.
    pub format: &'static str,
    /// Compressed bytes the decompressor had taken from the input when it
    /// gave up (read ahead but not yet handed to it is not counted): a
    /// stream cut short ends here; corruption lies in the block before.
    pub compressed_offset: u64,
    /// What the decompressor said.
    pub detail: Box<str>,
    /// A zstd frame whose window is more than the memory limit allows.
    pub window: Option<Box<WindowOver>>,
}

/// A zstd window over the memory limit.
#[derive(Debug, Clone, Copy)]
pub struct WindowOver {
    /// The window the frame asks for, in bytes, when its header was read
    /// here (a later frame's is known to the decoder only).
    pub needed: Option<u64>,
    /// The memory limit, in bytes.
    pub limit: u64,
}

impl fmt::Display for DecompressError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(&WindowOver { needed, limit }) = self.window.as_deref() {
            let (window, rerun) = match needed {
                Some(w) => (
                    format!("a {} window", size_name(w)),
                    size_name(w.saturating_mul(2)),
                ),
                None => ("a window".to_string(), size_name(limit.saturating_mul(4))),
            };
            return write!(
                f,
                "the {} stream needs {window} to be decompressed (it was made with `zstd --long`), \
                 more than the memory limit of {} allows (a window may take up to the limit, on top \
                 of the analysis); rerun with `--memory-limit {rerun}`",
                self.format,
                size_name(limit),
            );
        }
        write!(
            f,
            "the {} stream is corrupt or cut short after {} compressed bytes ({})",
            self.format, self.compressed_offset, self.detail
        )
    }
}

/// A byte count as the `--memory-limit` flag takes it (`2G`, `384M`, `64K`).
fn size_name(b: u64) -> String {
    for (shift, unit) in [(30, "G"), (20, "M"), (10, "K")] {
        if b >= 1 << shift && b.is_multiple_of(1 << shift) {
            return format!("{}{unit}", b >> shift);
        }
    }
    format!("{b}")
}

/// The largest zstd window a stream may ask for: the memory limit of the
/// run (`--memory-limit`; [`set_memory_limit`]). A window is memory the
/// decompressor must hold whatever the capture's size, so it is bounded by
/// the same figure as the analysis rather than by zstd's own default
/// (128 MiB, which refuses every `zstd --long=28` or more stream).
static ZSTD_WINDOW_MAX: AtomicU64 = AtomicU64::new(256 << 20);

/// Sets the memory limit the inputs opened from now on decompress within
/// (set once, from the command line, before any input is opened; kept
/// here rather than passed down so that an input a merge reopens later
/// honours it too).
pub fn set_memory_limit(bytes: u64) {
    ZSTD_WINDOW_MAX.store(bytes, Ordering::Relaxed);
}

/// The window a zstd frame header asks for (RFC 8878 3.1.1.1.2), when the
/// frame says so: a single-segment frame's window is its content size,
/// which the decoder handles whatever it is.
fn zstd_window(head: &[u8]) -> Option<u64> {
    let descriptor = *head.get(4)?;
    if descriptor & 0x20 != 0 {
        return None;
    }
    let w = *head.get(5)?;
    let base = 1u64 << (10 + u32::from(w >> 3));
    Some(base + base / 8 * u64::from(w & 7))
}

/// The largest window log zstd's decoder takes (ZSTD_WINDOWLOG_MAX_64).
const ZSTD_WINDOWLOG_MAX: u32 = 31;

impl std::error::Error for DecompressError {}

/// Counts the raw bytes read from an input (progress, and where a
/// decompressor gave up).
struct Counted<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// The compressed bytes a decompressor over a [`BufReader`] has read
/// ahead but not yet taken.
trait ReadAhead {
    fn read_ahead(&self) -> usize;
}

type Raw = io::Chain<Cursor<Vec<u8>>, Counted<Stream>>;

impl ReadAhead for flate2::bufread::MultiGzDecoder<BufReader<Raw>> {
    fn read_ahead(&self) -> usize {
        self.get_ref().buffer().len()
    }
}

impl ReadAhead for zstd::stream::read::Decoder<'static, BufReader<Raw>> {
    fn read_ahead(&self) -> usize {
        self.get_ref().buffer().len()
    }
}

/// A decompressor whose errors say which format gave up, and where.
struct Decompressed<D> {
    inner: D,
    format: &'static str,
    count: Arc<AtomicU64>,
    /// The memory limit the zstd window was bounded by.
    window_max: u64,
}

impl<D: Read + ReadAhead> Read for Decompressed<D> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).map_err(|e| {
            if e.kind() == io::ErrorKind::Interrupted {
                return e;
            }
            let detail = e.to_string();
            // A later frame of a multi-frame stream can ask for more than
            // the first did; zstd says so in these words (ZSTD_error_
            // frameParameter_windowTooLarge).
            let window = detail.contains("too much memory").then(|| {
                Box::new(WindowOver {
                    needed: None,
                    limit: self.window_max,
                })
            });
            let read = self.count.load(Ordering::Relaxed);
            io::Error::other(DecompressError {
                format: self.format,
                compressed_offset: read.saturating_sub(self.inner.read_ahead() as u64),
                detail: detail.into(),
                window,
            })
        })
    }
}

/// One input, opened and recognised.
pub struct Input {
    /// The name in messages (`standard input` for `-`).
    pub name: PathBuf,
    /// How it is compressed.
    pub compression: Compression,
    /// Its size on disk, when it is a regular file.
    pub size: Option<u64>,
    /// Raw bytes read from it so far.
    pub consumed: Arc<AtomicU64>,
    /// The capture bytes, decompressed.
    pub stream: Stream,
}

/// Whether `path` names standard input.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == STDIN
}

/// The name `path` goes by in messages.
pub fn display_name(path: &Path) -> PathBuf {
    if is_stdin(path) {
        PathBuf::from(STDIN_NAME)
    } else {
        path.to_path_buf()
    }
}

impl Input {
    /// Opens `path` (`-`: standard input) and recognises its compression.
    ///
    /// # Errors
    /// When it cannot be opened or read.
    pub fn open(path: &Path) -> Result<Input, ReadError> {
        Input::open_counted(path, Arc::new(AtomicU64::new(0)))
    }

    /// Opens `path` as [`Input::open`] does, counting the raw bytes read
    /// into `consumed` (a file opened again adds to its first count).
    ///
    /// # Errors
    /// When it cannot be opened or read.
    pub fn open_counted(path: &Path, consumed: Arc<AtomicU64>) -> Result<Input, ReadError> {
        let name = display_name(path);
        let err = |e: io::Error| ReadError::at_start(name.clone(), e.into());
        let (raw, size): (Stream, Option<u64>) = if is_stdin(path) {
            (Box::new(io::stdin()), None)
        } else {
            let file = File::open(path).map_err(err)?;
            let meta = file.metadata().map_err(err)?;
            if meta.is_dir() {
                return Err(ReadError::at_start(
                    name.clone(),
                    ReadErrorKind::Io(io::Error::new(
                        io::ErrorKind::IsADirectory,
                        "is a directory (name it alone or with other inputs and its files are read)",
                    )),
                ));
            }
            (Box::new(file), meta.is_file().then_some(meta.len()))
        };
        Input::counted(name.clone(), raw, size, consumed).map_err(err)
    }

    /// Recognises the compression of `raw` (read from its start) without
    /// seeking: the sniffed bytes go back in front of the stream.
    ///
    /// # Errors
    /// When the first bytes cannot be read.
    pub fn from_stream(name: PathBuf, raw: Stream, size: Option<u64>) -> io::Result<Input> {
        Input::counted(name, raw, size, Arc::new(AtomicU64::new(0)))
    }

    fn counted(
        name: PathBuf,
        raw: Stream,
        size: Option<u64>,
        consumed: Arc<AtomicU64>,
    ) -> io::Result<Input> {
        let mut counted = Counted {
            inner: raw,
            count: consumed.clone(),
        };
        // Six bytes: the magic, and a zstd frame's window descriptor.
        let mut head = [0u8; 6];
        let n = read_full(&mut counted, &mut head)?;
        let head = head.get(..n).unwrap_or_default().to_vec();
        let compression = Compression::sniff(&head);
        let whole: Raw = Cursor::new(head.clone()).chain(counted);
        let window_max = ZSTD_WINDOW_MAX.load(Ordering::Relaxed);
        // zstd takes the bound as a log: the largest power of two within
        // the limit.
        let window_log = (63 - window_max.max(1 << 10).leading_zeros()).min(ZSTD_WINDOWLOG_MAX);
        let stream: Stream = match compression {
            Compression::None => Box::new(whole),
            Compression::Gzip => Box::new(Decompressed {
                inner: flate2::bufread::MultiGzDecoder::new(BufReader::with_capacity(
                    COMPRESSED_BUF,
                    whole,
                )),
                format: "gzip",
                count: consumed.clone(),
                window_max,
            }),
            Compression::Zstd => {
                // The first frame's header is at hand: a window over the
                // limit is refused now, before anything is read.
                if let Some(w) = zstd_window(&head).filter(|&w| w > 1 << window_log) {
                    return Err(io::Error::other(DecompressError {
                        format: "zstd",
                        compressed_offset: 0,
                        detail: format!("window of {w} bytes").into(),
                        window: Some(Box::new(WindowOver {
                            needed: Some(w),
                            limit: window_max,
                        })),
                    }));
                }
                let mut d = zstd::stream::read::Decoder::with_buffer(BufReader::with_capacity(
                    COMPRESSED_BUF,
                    whole,
                ))?;
                d.window_log_max(window_log)?;
                Box::new(Decompressed {
                    inner: d,
                    format: "zstd",
                    count: consumed.clone(),
                    window_max,
                })
            }
        };
        Ok(Input {
            name,
            compression,
            size,
            consumed,
            stream,
        })
    }

    /// A capture reader over the input.
    ///
    /// # Errors
    /// When it does not start with a pcap/pcapng header (after decompression).
    pub fn reader(self) -> Result<PcapReader<Stream>, ReadError> {
        PcapReader::new(self.stream, self.name).map(|r| r.decompressed(self.compression.name()))
    }
}

/// The inputs of a command line: files and `-` as given, each directory
/// replaced by its regular files in name order. What a directory holds
/// besides (subdirectories, sockets...) is told in `notes`, not read.
#[derive(Debug, Default)]
pub struct Expanded {
    /// Each input, and whether it came from a directory (one that turns
    /// out not to be a capture is then told about and passed over, not
    /// damage).
    pub paths: Vec<(PathBuf, bool)>,
    /// What was left out, in words.
    pub notes: Vec<String>,
}

/// Expands the command line's inputs.
///
/// # Errors
/// A directory that cannot be listed, or `-` named twice.
pub fn expand(args: &[PathBuf]) -> Result<Expanded, ReadError> {
    let mut out = Expanded::default();
    let mut stdin_seen = false;
    for a in args {
        if is_stdin(a) {
            if stdin_seen {
                return Err(ReadError::at_start(
                    PathBuf::from(STDIN_NAME),
                    ReadErrorKind::Io(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "`-` named twice: standard input can be read once",
                    )),
                ));
            }
            stdin_seen = true;
            out.paths.push((a.clone(), false));
            continue;
        }
        if !a.is_dir() {
            out.paths.push((a.clone(), false));
            continue;
        }
        let err = |e| ReadError::at_start(a.clone(), ReadErrorKind::Io(e));
        let mut entries: Vec<(PathBuf, std::fs::FileType)> = std::fs::read_dir(a)
            .map_err(err)?
            .map(|e| e.and_then(|e| Ok((e.path(), e.file_type()?))))
            .collect::<io::Result<_>>()
            .map_err(err)?;
        entries.sort_by(|x, y| x.0.cmp(&y.0));
        let before = out.paths.len();
        for (p, t) in entries {
            // A symbolic link counts as what it points to.
            let is_file = t.is_file() || (t.is_symlink() && p.is_file());
            if is_file {
                out.paths.push((p, true));
            } else {
                out.notes.push(format!(
                    "{}: not a regular file; skipped (the files directly in a directory are read, not its subdirectories)",
                    p.display()
                ));
            }
        }
        if out.paths.len() == before {
            out.notes
                .push(format!("{}: holds no files to read", a.display()));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn capture() -> Vec<u8> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../captures/v3-inline.pcap");
        std::fs::read(path).unwrap()
    }

    fn gzip(b: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(b).unwrap();
        e.finish().unwrap()
    }

    fn read_all(bytes: Vec<u8>) -> (Compression, Vec<u8>, io::Result<()>) {
        let mut i = Input::from_stream("t".into(), Box::new(Cursor::new(bytes)), None).unwrap();
        let mut out = Vec::new();
        let r = i.stream.read_to_end(&mut out).map(|_| ());
        (i.compression, out, r)
    }

    #[test]
    fn gzip_and_zstd_are_recognised_by_their_magic_and_read_whole() {
        let plain = capture();
        let (c, out, r) = read_all(plain.clone());
        assert_eq!(
            (c, out == plain, r.is_ok()),
            (Compression::None, true, true)
        );
        let (c, out, r) = read_all(gzip(&plain));
        assert_eq!(
            (c, out == plain, r.is_ok()),
            (Compression::Gzip, true, true)
        );
        let z = zstd::encode_all(plain.as_slice(), 3).unwrap();
        let (c, out, r) = read_all(z);
        assert_eq!(
            (c, out == plain, r.is_ok()),
            (Compression::Zstd, true, true)
        );
        // Concatenated members and frames, as `cat a.gz b.gz` makes.
        let mut two = gzip(&plain[..1000]);
        two.extend(gzip(&plain[1000..]));
        assert_eq!(read_all(two).1, plain);
        let mut two = zstd::encode_all(&plain[..1000], 1).unwrap();
        two.extend(zstd::encode_all(&plain[1000..], 1).unwrap());
        assert_eq!(read_all(two).1, plain);
    }

    /// A compressed stream cut anywhere gives an error that names the
    /// format, never a clean end that would pass for a whole capture.
    #[test]
    fn a_cut_compressed_stream_is_an_error_wherever_it_is_cut() {
        let plain = capture();
        let z = zstd::encode_all(plain.as_slice(), 3).unwrap();
        for (name, packed) in [("gzip", gzip(&plain)), ("zstd", z)] {
            for cut in (4..packed.len()).step_by(97) {
                let (_, _, r) = read_all(packed[..cut].to_vec());
                let e = r.expect_err(&format!("{name} cut at {cut}"));
                let d = e
                    .get_ref()
                    .and_then(|i| i.downcast_ref::<DecompressError>())
                    .unwrap_or_else(|| panic!("{name} {cut}: {e}"));
                assert_eq!(d.format, name);
                assert_eq!(d.compressed_offset, cut as u64, "{name}");
            }
        }
    }

    /// The window a frame header asks for (RFC 8878 3.1.1.1.2), and a
    /// window over the limit refused when the input is opened, naming the
    /// flag, never as corruption.
    #[test]
    fn a_zstd_window_over_the_limit_is_refused_at_open_naming_the_flag() {
        // Descriptor without Single_Segment; window byte: exponent, mantissa.
        let head = |w: u8| [0x28, 0xb5, 0x2f, 0xfd, 0x04, w];
        assert_eq!(zstd_window(&head(0)), Some(1 << 10));
        assert_eq!(zstd_window(&head(21 << 3)), Some(1 << 31));
        assert_eq!(zstd_window(&head(17 << 3 | 4)), Some((1 << 27) + (1 << 26)));
        assert_eq!(zstd_window(&[0x28, 0xb5, 0x2f, 0xfd, 0x24, 0]), None);
        assert_eq!(zstd_window(&[0x28, 0xb5, 0x2f, 0xfd]), None);
        let mut e = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
        e.window_log(31).unwrap();
        e.write_all(&capture()).unwrap();
        let packed = e.finish().unwrap();
        let Err(err) = Input::from_stream("w".into(), Box::new(Cursor::new(packed)), None) else {
            panic!("a 2 GiB window under a 256 MiB limit was taken");
        };
        let d = err
            .get_ref()
            .and_then(|i| i.downcast_ref::<DecompressError>())
            .expect("a decompression error");
        let w = d.window.as_deref().expect("the window named");
        assert_eq!((w.needed, w.limit), (Some(1 << 31), 256 << 20));
        let msg = d.to_string();
        assert!(
            msg.contains("--memory-limit 4G") && !msg.contains("corrupt"),
            "{msg}"
        );
        assert_eq!(size_name(3 << 29), "1536M");
        assert_eq!(size_name(1000), "1000");
    }

    #[test]
    fn directories_expand_to_their_files_in_name_order() {
        let d = std::env::temp_dir().join(format!("rdma-expand-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("sub")).unwrap();
        for n in ["b.pcap", "a.pcap.gz", "c"] {
            std::fs::write(d.join(n), b"x").unwrap();
        }
        let e = expand(&[d.clone(), PathBuf::from("-")]).unwrap();
        let names: Vec<_> = e
            .paths
            .iter()
            .map(|(p, _)| p.file_name().unwrap().to_str().unwrap().to_string())
            .collect();
        assert_eq!(names, ["a.pcap.gz", "b.pcap", "c", "-"]);
        assert_eq!(e.notes.len(), 1);
        assert!(
            e.notes[0].contains("sub: not a regular file"),
            "{:?}",
            e.notes
        );
        assert!(expand(&["-".into(), "-".into()]).is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
