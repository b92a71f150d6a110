//! Drives the engine over a capture file: the one loop every offline front
//! end shares.
//!
//! [`run_file`] splits the work over two threads: one reads the file into
//! batches; the calling thread dissects and runs the engine. The frames'
//! RoCEv2 ICRC (the largest per-byte cost) goes to whichever thread has time:
//! the reader checks a batch when the engine already has work queued, and
//! otherwise hands it over unchecked so the engine checks it while
//! dissecting (the verdict is the same function's either way). Batches are
//! recycled, so memory stays at a few batches whatever the file size.
//!
//! A classic pcap file is read straight into the batches and split into
//! records where it lies, so each byte is copied once, by the kernel; any
//! other file goes through [`PcapReader`], whose frames are copied into the
//! batches.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;

use rdma_dissectors::ib::icrc::IcrcStatus;
use rdma_dissectors::link::LinkType;
use rdma_dissectors::stack;

use crate::engine::{Config, Engine, Event, Finding};
use crate::sources::pcap::{PcapReader, ReadError, ReadErrorKind, MAX_RECORD_LEN};

/// How a run over a file ended.
pub struct Outcome {
    /// The engine, holding the final state.
    pub engine: Engine,
    /// Frames read.
    pub frames: u64,
    /// Why reading stopped early, if it did (the frames before were analyzed).
    pub error: Option<ReadError>,
}

/// Frames per batch handed from the reading thread to the engine.
const BATCH_FRAMES: usize = 1024;
/// Bytes per batch (a batch closes at whichever limit comes first).
const BATCH_BYTES: usize = 1 << 20;
/// Batches in flight between the threads.
const BATCH_DEPTH: usize = 4;
/// Bytes read from a classic pcap file per batch: small enough that the
/// kernel's copy lands in the reading core's cache.
const PCAP_CHUNK: usize = 512 << 10;
/// The reader checks a batch's ICRCs itself when at least this many batches
/// wait for the engine; below it the engine is about to run dry and checks
/// them instead.
const ICRC_BACKLOG: usize = 2;

/// Batches sent and not yet taken by the engine, so the reader can tell
/// which of the two threads is behind.
#[derive(Clone, Default)]
struct Backlog(Arc<AtomicUsize>);

impl Backlog {
    fn reader_has_time(&self) -> bool {
        self.0.load(Ordering::Relaxed) >= ICRC_BACKLOG
    }

    fn sent(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    fn taken(&self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Checks the ICRC of every frame of `batch` (RoCEv2 frames get a verdict,
/// the others stay `None` and are left to the dissection).
fn check_icrcs(batch: &mut Batch, config: &stack::Config) {
    for f in &mut batch.frames {
        let data = batch.data.get(f.start..f.start + f.len).unwrap_or_default();
        f.icrc = stack::rocev2_icrc_status(f.link, data, config);
    }
}

/// Hands `batch` to the engine, checking its ICRCs first if the engine is
/// busy enough for that to cost nothing. False when the engine has gone.
fn send_batch(
    tx: &SyncSender<Msg>,
    backlog: &Backlog,
    config: &stack::Config,
    mut batch: Batch,
) -> bool {
    if config.verify_icrc && backlog.reader_has_time() {
        check_icrcs(&mut batch, config);
    }
    backlog.sent();
    tx.send(Msg::Batch(batch)).is_ok()
}

struct FrameMeta {
    number: u64,
    ts_ns: u64,
    link: LinkType,
    orig_len: u32,
    start: usize,
    len: usize,
    icrc: Option<IcrcStatus>,
}

#[derive(Default)]
struct Batch {
    data: Vec<u8>,
    frames: Vec<FrameMeta>,
}

enum Msg {
    Batch(Batch),
    End {
        frames: u64,
        error: Option<ReadError>,
    },
}

/// Runs `path` through a new engine, handing every finding to `sink` as it
/// happens (nothing is buffered beyond one batch of frames).
///
/// # Errors
/// When the file cannot be opened or is not a capture at all. A file that
/// breaks off part-way is not an error here: see [`Outcome::error`].
pub fn run_file(
    path: &Path,
    config: Config,
    mut sink: impl FnMut(Finding),
) -> Result<Outcome, ReadError> {
    let (tx, rx) = sync_channel::<Msg>(BATCH_DEPTH);
    let (recycle, spare) = sync_channel::<Batch>(BATCH_DEPTH + 2);
    let stack_config = config.stack;
    let backlog = Backlog::default();
    let theirs = backlog.clone();
    let worker = match ClassicPcap::open(path) {
        Some(classic) => std::thread::Builder::new()
            .name("pcap-read-icrc".into())
            .spawn(move || classic.read_batches(&stack_config, &tx, &spare, &theirs)),
        None => {
            let mut reader = PcapReader::open(path)?;
            std::thread::Builder::new()
                .name("pcap-read-icrc".into())
                .spawn(move || read_batches(&mut reader, &stack_config, &tx, &spare, &theirs))
        }
    };
    let Ok(worker) = worker else {
        // No second thread to be had: do it all here.
        let mut reader = PcapReader::open(path)?;
        return run_reader(&mut reader, config, &mut sink);
    };
    let outcome = consume_batches(config, &rx, &recycle, &backlog, &mut sink);
    drop(rx);
    let _ = worker.join();
    Ok(outcome)
}

/// A classic pcap file positioned after its header.
struct ClassicPcap {
    file: File,
    path: std::path::PathBuf,
    big_endian: bool,
    units_per_sec: u64,
    link: LinkType,
}

/// Length of a classic pcap file header and of a record header.
const PCAP_FILE_HEADER: usize = 24;
const PCAP_RECORD_HEADER: usize = 16;

impl ClassicPcap {
    /// The file, if it opens and starts with a whole classic pcap header;
    /// `None` leaves it (and any error) to [`PcapReader`].
    fn open(path: &Path) -> Option<Self> {
        let mut file = File::open(path).ok()?;
        let mut h = [0u8; PCAP_FILE_HEADER];
        file.read_exact(&mut h).ok()?;
        let (units_per_sec, big_endian) = match u32::from_le_bytes([h[0], h[1], h[2], h[3]]) {
            0xa1b2_c3d4 => (1_000_000, false),
            0xd4c3_b2a1 => (1_000_000, true),
            0xa1b2_3c4d => (1_000_000_000, false),
            0x4d3c_b2a1 => (1_000_000_000, true),
            _ => return None,
        };
        let link = read_u32(&h, 20, big_endian) & 0x0fff_ffff;
        Some(ClassicPcap {
            file,
            path: path.to_path_buf(),
            big_endian,
            units_per_sec,
            link: LinkType(link),
        })
    }

    /// The error [`PcapReader`] gives for the same damage, so that both
    /// paths report a broken file alike.
    fn err(&self, frame: u64, offset: u64, kind: ReadErrorKind) -> ReadError {
        ReadError {
            path: self.path.clone(),
            frame: Some(frame),
            offset,
            kind,
        }
    }

    /// Reads the records into batches and hands them to `tx` (see
    /// [`send_batch`] for who checks the ICRCs). A record cut by the end of
    /// a read is carried over to the start of the next batch. Batch buffers
    /// keep their length when recycled, so a buffer is zeroed once, not
    /// once per use.
    fn read_batches(
        mut self,
        config: &stack::Config,
        tx: &SyncSender<Msg>,
        spare: &Receiver<Batch>,
        backlog: &Backlog,
    ) {
        let mut batch = Batch::default();
        // Bytes of `batch.data` that hold file data.
        let mut filled = 0;
        // Bytes the record at the start of `batch.data` needs, when known.
        let mut pending = 0;
        // File offset of `batch.data[0]`.
        let mut offset = PCAP_FILE_HEADER as u64;
        let mut frames = 0u64;
        let mut eof = false;
        let mut io_error = None;
        let error = loop {
            let want = PCAP_CHUNK.max(pending);
            if batch.data.len() < want {
                batch.data.resize(want, 0);
            }
            while filled < want && !eof {
                match self.file.read(&mut batch.data[filled..want]) {
                    Ok(0) => eof = true,
                    Ok(k) => filled += k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        io_error = Some(e);
                        eof = true;
                    }
                }
            }
            let data = &batch.data[..filled];
            let (mut at, mut corrupt) = (0, None);
            pending = 0;
            while let Some(h) = data.get(at..at + PCAP_RECORD_HEADER) {
                let caplen = read_u32(h, 8, self.big_endian) as usize;
                if caplen > MAX_RECORD_LEN {
                    corrupt = Some(caplen as u64);
                    break;
                }
                let start = at + PCAP_RECORD_HEADER;
                if data.len() < start + caplen {
                    pending = PCAP_RECORD_HEADER + caplen;
                    break;
                }
                let secs = u64::from(read_u32(h, 0, self.big_endian));
                let frac = u64::from(read_u32(h, 4, self.big_endian));
                frames += 1;
                batch.frames.push(FrameMeta {
                    number: frames,
                    ts_ns: secs * 1_000_000_000 + frac * (1_000_000_000 / self.units_per_sec),
                    link: self.link,
                    orig_len: read_u32(h, 12, self.big_endian),
                    start,
                    len: caplen,
                    icrc: None,
                });
                at = start + caplen;
            }
            let rest = filled - at;
            let here = offset + at as u64;
            if let Some(caplen) = corrupt {
                break Some(self.err(
                    frames + 1,
                    here,
                    ReadErrorKind::Corrupt("captured length over 16 MiB", caplen),
                ));
            }
            if let Some(e) = io_error.take() {
                break Some(self.err(frames + 1, here, ReadErrorKind::Io(e)));
            }
            if eof && rest > 0 {
                let needed = if rest < PCAP_RECORD_HEADER {
                    PCAP_RECORD_HEADER
                } else {
                    pending
                };
                break Some(self.err(
                    frames + 1,
                    here,
                    ReadErrorKind::Truncated {
                        needed,
                        available: rest,
                    },
                ));
            }
            let mut next = spare.try_recv().unwrap_or_default();
            next.frames.clear();
            let len = PCAP_CHUNK.max(pending).max(rest);
            if next.data.len() < len {
                next.data.resize(len, 0);
            }
            next.data[..rest].copy_from_slice(&batch.data[at..filled]);
            (offset, filled) = (here, rest);
            if batch.frames.is_empty() {
                // Only part of one large record so far: keep reading.
                batch = next;
            } else if !send_batch(tx, backlog, config, std::mem::replace(&mut batch, next)) {
                return;
            }
            if eof {
                break None;
            }
        };
        if !batch.frames.is_empty() && !send_batch(tx, backlog, config, batch) {
            return;
        }
        let _ = tx.send(Msg::End { frames, error });
    }
}

/// The `u32` at `at` in a header the caller has bounds-checked.
fn read_u32(b: &[u8], at: usize, big_endian: bool) -> u32 {
    let w = [b[at], b[at + 1], b[at + 2], b[at + 3]];
    if big_endian {
        u32::from_be_bytes(w)
    } else {
        u32::from_le_bytes(w)
    }
}

fn read_batches<R: std::io::Read>(
    reader: &mut PcapReader<R>,
    config: &stack::Config,
    tx: &SyncSender<Msg>,
    spare: &Receiver<Batch>,
    backlog: &Backlog,
) {
    let mut batch = spare.try_recv().unwrap_or_default();
    loop {
        let error = match reader.next_packet() {
            Ok(Some(p)) => {
                let start = batch.data.len();
                batch.data.extend_from_slice(p.data);
                batch.frames.push(FrameMeta {
                    number: p.number,
                    ts_ns: p.ts_ns,
                    link: p.link_type,
                    orig_len: p.orig_len,
                    start,
                    len: p.data.len(),
                    icrc: None,
                });
                if batch.frames.len() < BATCH_FRAMES && batch.data.len() < BATCH_BYTES {
                    continue;
                }
                // The engine thread leaves the bytes for the classic pcap
                // path's sake (see ClassicPcap::read_batches).
                let mut next = spare.try_recv().unwrap_or_default();
                next.data.clear();
                if !send_batch(tx, backlog, config, std::mem::replace(&mut batch, next)) {
                    return;
                }
                continue;
            }
            Ok(None) => None,
            Err(e) => Some(e),
        };
        if !batch.frames.is_empty() && !send_batch(tx, backlog, config, batch) {
            return;
        }
        let _ = tx.send(Msg::End {
            frames: reader.frames_read(),
            error,
        });
        return;
    }
}

fn consume_batches(
    config: Config,
    rx: &Receiver<Msg>,
    recycle: &SyncSender<Batch>,
    backlog: &Backlog,
    sink: &mut impl FnMut(Finding),
) -> Outcome {
    let mut engine = Engine::new(config);
    let mut findings = Vec::with_capacity(16);
    let (mut frames, mut error) = (0, None);
    while let Ok(msg) = rx.recv() {
        match msg {
            Msg::Batch(mut b) => {
                backlog.taken();
                for f in &b.frames {
                    let data = &b.data[f.start..f.start + f.len];
                    let event = match f.icrc {
                        Some(icrc) => Event::CheckedFrame {
                            number: f.number,
                            ts_ns: f.ts_ns,
                            link: f.link,
                            orig_len: f.orig_len,
                            data,
                            icrc,
                        },
                        None => Event::Frame {
                            number: f.number,
                            ts_ns: f.ts_ns,
                            link: f.link,
                            orig_len: f.orig_len,
                            data,
                        },
                    };
                    engine.handle(event, &mut findings);
                    for x in findings.drain(..) {
                        sink(x);
                    }
                }
                // The bytes stay: refilling a buffer of the right length
                // costs no zeroing.
                b.frames.clear();
                let _ = recycle.try_send(b);
            }
            Msg::End {
                frames: n,
                error: e,
            } => {
                frames = n;
                error = e;
                break;
            }
        }
    }
    engine.handle(Event::End, &mut findings);
    for x in findings.drain(..) {
        sink(x);
    }
    Outcome {
        engine,
        frames,
        error,
    }
}

/// As [`run_file`], over an already opened reader, on the calling thread alone.
///
/// # Errors
/// Never at present; the signature leaves room for sources that can fail to start.
pub fn run_reader<R: std::io::Read>(
    reader: &mut PcapReader<R>,
    config: Config,
    sink: &mut impl FnMut(Finding),
) -> Result<Outcome, ReadError> {
    let mut engine = Engine::new(config);
    let mut findings = Vec::with_capacity(16);
    let mut error = None;
    loop {
        match reader.next_packet() {
            Ok(Some(p)) => {
                engine.handle(
                    Event::Frame {
                        number: p.number,
                        ts_ns: p.ts_ns,
                        link: p.link_type,
                        orig_len: p.orig_len,
                        data: p.data,
                    },
                    &mut findings,
                );
                for f in findings.drain(..) {
                    sink(f);
                }
            }
            Ok(None) => break,
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    engine.handle(Event::End, &mut findings);
    for f in findings.drain(..) {
        sink(f);
    }
    Ok(Outcome {
        engine,
        frames: reader.frames_read(),
        error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_truncated_file_is_analyzed_up_to_the_damage_on_both_paths() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures/v3-ddp.pcap");
        let bytes = std::fs::read(&src).unwrap();
        let cut = std::env::temp_dir().join(format!("cut-{}.pcap", std::process::id()));
        std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3 + 5]).unwrap();
        let mut threaded = Vec::new();
        let a = run_file(&cut, Config::default(), |f| threaded.push(f)).unwrap();
        let mut reader = PcapReader::open(&cut).unwrap();
        let mut single = Vec::new();
        let b = run_reader(&mut reader, Config::default(), &mut |f| single.push(f)).unwrap();
        std::fs::remove_file(&cut).unwrap();
        let (ea, eb) = (a.error.unwrap(), b.error.unwrap());
        assert_eq!(ea.frame, eb.frame);
        assert_eq!(ea.frame, Some(a.frames + 1));
        assert_eq!(a.frames, b.frames);
        assert_eq!(threaded.len(), single.len());
        assert_eq!(
            a.engine.state().totals.icrc_valid,
            b.engine.state().totals.icrc_valid
        );
        assert_eq!(a.engine.state().totals.calls, b.engine.state().totals.calls);
    }

    /// The classic pcap path reads records where they lie in its own
    /// buffers; a broken file must read exactly as [`PcapReader`] reads it.
    #[test]
    fn classic_pcap_path_reports_damage_as_the_reader_does() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures/v3-inline.pcap");
        let bytes = std::fs::read(&src).unwrap();
        let mut corrupt = bytes.clone();
        // The third record's caplen (24-byte file header, then records).
        let mut at = 24;
        for _ in 0..2 {
            let caplen = u32::from_le_bytes(corrupt[at + 8..at + 12].try_into().unwrap());
            at += 16 + caplen as usize;
        }
        corrupt[at + 8..at + 12].copy_from_slice(&(17u32 << 20).to_le_bytes());
        let cases = [
            ("tail", bytes[..bytes.len() - 3].to_vec()),
            ("record-header", bytes[..at + 7].to_vec()),
            ("record", bytes[..at + 30].to_vec()),
            ("corrupt", corrupt),
            ("whole", bytes.clone()),
        ];
        for (name, data) in cases {
            let path =
                std::env::temp_dir().join(format!("classic-{name}-{}.pcap", std::process::id()));
            std::fs::write(&path, &data).unwrap();
            let a = run_file(&path, Config::default(), |_| {}).unwrap();
            let mut reader = PcapReader::open(&path).unwrap();
            let b = run_reader(&mut reader, Config::default(), &mut |_| {}).unwrap();
            std::fs::remove_file(&path).unwrap();
            assert_eq!(a.frames, b.frames, "{name}");
            let (ea, eb) = (
                a.error.map(|e| e.to_string()),
                b.error.map(|e| e.to_string()),
            );
            assert_eq!(ea.is_some(), name != "whole", "{name}: {ea:?}");
            assert_eq!(ea, eb, "{name}");
            let (ta, tb) = (&a.engine.state().totals, &b.engine.state().totals);
            assert_eq!(
                (ta.frames, ta.bytes, ta.icrc_valid),
                (tb.frames, tb.bytes, tb.icrc_valid),
                "{name}"
            );
        }
    }
}
