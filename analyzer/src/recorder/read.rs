//! A recorder dump read back: `report`, `open`, `transactions` and
//! `anomalies` on `rdma-*.pcapng` see its probe records as `live --probes`
//! saw them. The capture reader skips custom blocks; this reads them
//! ([`DumpRecords::read`]), and [`WithProbes`] puts each probe record back
//! among the frames, by time, for the engine to join the kernel's view of
//! each XID with the wire's (`Config::merge`).
//!
//! Only files whose section says the flight recorder wrote them are read a
//! second time: an ordinary capture costs one block header.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

use super::dump::{self, Record, CUSTOM_BLOCK, PEN};
use super::probe_text;
use crate::engine::kernel::event::Probe;
use crate::engine::Event;
use crate::pipeline::{End, Flow, Notice, Progress, Source};

/// pcapng's other Custom Block type (not to be copied): read alike.
const CUSTOM_BLOCK_NOCOPY: u32 = 0x4000_0BAD;
const SHB: u32 = 0x0A0D_0D0A;
/// Blocks larger than this are not ours (ours hold one record): skipped.
const MAX_BLOCK: u32 = 64 << 20;

/// What the dumps among the inputs hold beside their frames.
#[derive(Debug, Default)]
pub struct DumpRecords {
    /// Their probe records, by time.
    pub probes: Vec<Probe>,
    /// Their newest mountstats snapshot (at most one): the file, the time,
    /// the text.
    pub mountstats: Vec<(PathBuf, u64, String)>,
    /// What could not be read, one sentence each (file, block, why).
    pub problems: Vec<String>,
    /// The dumps read.
    pub dumps: Vec<PathBuf>,
}

impl DumpRecords {
    /// Reads the records of every input that is a recorder dump; other
    /// inputs (captures, folders, standard input) are left to the capture
    /// reader.
    pub fn read(paths: &[PathBuf]) -> DumpRecords {
        let mut out = DumpRecords::default();
        for path in paths {
            match read_one(path, &mut out) {
                Ok(true) => out.dumps.push(path.clone()),
                Ok(false) => {}
                Err(e) => out.problems.push(format!(
                    "{}: reading its probe records: {e}; the report has its frames only",
                    path.display()
                )),
            }
        }
        // Several dumps, or a record a CPU stamped late: the engine wants
        // them in time order, as the live run handed them over.
        out.probes.sort_by_key(|p| (p.meta.ts_ns, p.meta.seq));
        out
    }
}

/// A little- or big-endian reader of 32-bit words.
#[derive(Clone, Copy)]
struct Order(bool);

impl Order {
    fn u32(self, b: &[u8]) -> u32 {
        let a: [u8; 4] = b[..4].try_into().unwrap_or([0; 4]);
        if self.0 {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        }
    }
}

/// Whether the section header `body` says the flight recorder wrote it.
fn written_by_recorder(body: &[u8]) -> bool {
    body.windows(b"flight recorder".len())
        .any(|w| w == b"flight recorder")
        && body
            .windows(b"rdma-analyzer".len())
            .any(|w| w == b"rdma-analyzer")
}

/// Reads `path`'s records into `out`; `Ok(false)` when it is no dump of ours.
fn read_one(path: &Path, out: &mut DumpRecords) -> io::Result<bool> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(false);
    };
    if !meta.is_file() {
        return Ok(false);
    }
    let mut r = BufReader::new(File::open(path)?);
    let mut head = [0u8; 12];
    if r.read_exact(&mut head).is_err() || head[..4] != SHB.to_le_bytes() {
        return Ok(false);
    }
    let order = Order(head[8..12] == [0x1A, 0x2B, 0x3C, 0x4D]);
    let mut offset = 0u64;
    let mut total = order.u32(&head[4..8]);
    let mut first = true;
    loop {
        if !(12..=MAX_BLOCK).contains(&total) || !total.is_multiple_of(4) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a block at byte {offset} says it is {total} bytes long"),
            ));
        }
        let mut body = vec![0u8; total as usize - 8];
        // The section header's first word (its byte-order magic) is read.
        let from = if first { 4 } else { 0 };
        body[..from].copy_from_slice(&head[8..8 + from]);
        r.read_exact(&mut body[from..]).map_err(|e| {
            io::Error::new(e.kind(), format!("the block at byte {offset} is cut: {e}"))
        })?;
        let kind = order.u32(&head[..4]);
        if first && !written_by_recorder(&body) {
            return Ok(false);
        }
        first = false;
        if matches!(kind, CUSTOM_BLOCK | CUSTOM_BLOCK_NOCOPY) && order.u32(&body) == PEN {
            take(path, offset, &body[4..], out);
        }
        offset += u64::from(total);
        match r.read_exact(&mut head[..8]) {
            Ok(()) => total = order.u32(&head[4..8]),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(true),
            Err(e) => return Err(e),
        }
    }
}

/// One custom block's record, into `out`.
fn take(path: &Path, offset: u64, data: &[u8], out: &mut DumpRecords) {
    let Some(Record {
        kind,
        ts_ns,
        seq,
        text,
    }) = dump::parse_custom(data)
    else {
        // Another tool's block under the documentation number: not ours.
        return;
    };
    match kind {
        dump::KIND_PROBE => match probe_text::parse(&text, ts_ns, seq) {
            Ok(p) => out.probes.push(p),
            Err(e) => {
                // One sentence per file: a damaged dump says it once.
                if !out
                    .problems
                    .iter()
                    .any(|p| p.starts_with(&path.display().to_string()))
                {
                    out.problems.push(format!(
                        "{}: the probe record at byte {offset} (sequence number {seq}) does not read: {e}; such records are left out of the report",
                        path.display()
                    ));
                }
            }
        },
        // Only the newest snapshot is shown: older ones are not kept, so a
        // dump of many snapshots (each up to a block's 64 MiB) costs one.
        dump::KIND_MOUNTSTATS if out.mountstats.iter().all(|(_, t, _)| *t <= ts_ns) => {
            out.mountstats.clear();
            out.mountstats.push((path.to_path_buf(), ts_ns, text));
        }
        // A later version's record: nothing this one can show.
        _ => {}
    }
}

/// A source with a dump's probe records put back among its frames.
pub struct WithProbes<S: Source> {
    inner: S,
    probes: VecDeque<Probe>,
    notices: Vec<Notice>,
}

impl<S: Source> WithProbes<S> {
    /// `inner` with `probes` (in time order) handed out before the first
    /// frame later than each; `notices` said once, at the start.
    pub fn new(inner: S, probes: Vec<Probe>, notices: Vec<Notice>) -> Self {
        WithProbes {
            inner,
            probes: probes.into(),
            notices,
        }
    }
}

/// Hands `emit` the probes up to `until_ns`; false once it says stop.
fn emit_probes(
    probes: &mut VecDeque<Probe>,
    until_ns: u64,
    emit: &mut dyn FnMut(Event<'_>) -> Flow,
) -> bool {
    while probes.front().is_some_and(|p| p.meta.ts_ns <= until_ns) {
        let Some(p) = probes.pop_front() else {
            break;
        };
        if emit(Event::Probe(&p)) == Flow::Stop {
            return false;
        }
    }
    true
}

impl<S: Source> Source for WithProbes<S> {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn pump(&mut self, emit: &mut dyn FnMut(Event<'_>) -> Flow) -> Option<End> {
        let probes = &mut self.probes;
        let mut stopped = false;
        let end = self.inner.pump(&mut |ev| {
            if stopped {
                return Flow::Stop;
            }
            if let Event::Frame(f) = &ev {
                if !emit_probes(probes, f.ts_ns, &mut *emit) {
                    stopped = true;
                    return Flow::Stop;
                }
            }
            emit(ev)
        });
        if end.is_some() && !stopped {
            // The frames are over: the records after the last one.
            emit_probes(probes, u64::MAX, emit);
        }
        end
    }

    fn stop(&mut self) {
        self.inner.stop();
    }

    fn progress(&self) -> Progress {
        self.inner.progress()
    }

    fn notices(&mut self, out: &mut Vec<Notice>) {
        out.append(&mut self.notices);
        self.inner.notices(out);
    }
}
