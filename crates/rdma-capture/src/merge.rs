//! Several captures read as one stream in timestamp order, as `mergecap`
//! merges them: a k-way merge over one reader per input.
//!
//! ```text
//!  a.pcap ─ PcapReader ─ batch ─┐
//!  b.pcapng.gz ─ PcapReader ─ batch ─┼─ heap of (next frame's time, input) ─► merged batch
//!  c.pcap.zst ─ PcapReader ─ batch ─┘        ties: the input named first
//! ```
//!
//! Each input's frames keep their order (a capture whose clock steps back
//! is not reordered); between inputs the earliest next frame goes first.
//! Frames are numbered 1, 2, ... in the merged stream, as `tshark` numbers
//! the output of `mergecap`; messages about one input name its own frame
//! numbers, and at the end each input's frames are mapped to merged ones.
//!
//! Memory is each open input's batch buffer (and decompressor) plus the
//! merged batch. With more than [`MAX_OPEN`] inputs (a long rotated set),
//! each file is opened once to learn when its first frame is, closed, and
//! opened again from its start when the merge reaches that time, and closed
//! at its end: only inputs whose times overlap are open together, which
//! bounds both memory and file descriptors. Standard input cannot be read
//! twice and stays open.
//!
//! An input that is damaged stops there: its frames before the damage are
//! merged, the damage is told at once, and the others go on; the merged
//! stream then ends damaged, naming every input that was.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use super::input::{Input, Stream};
use super::read::{Batch, BatchReader, FrameMeta, PcapReader, ReadError, ReadErrorKind};

/// Bytes of frames per merged batch.
const OUT_CHUNK: usize = 512 << 10;

/// Read size per input: all the inputs' buffers together stay near this
/// however many there are, each between [`MIN_INPUT_CHUNK`] and the
/// reader's own maximum.
const TOTAL_INPUT_CHUNKS: usize = 8 << 20;

/// The smallest read per input.
const MIN_INPUT_CHUNK: usize = 64 << 10;

/// Inputs kept open from the start; past this, files are closed until the
/// merge reaches their first frame.
pub const MAX_OPEN: usize = 32;

/// An input of the merge.
pub enum MergeInput {
    /// Opened: its reader, and the file to open it again from (none for
    /// standard input, or a stream that cannot be reopened).
    Open(Box<PcapReader<Stream>>, Option<PathBuf>),
    /// A file to open when needed (checked to be a capture already), and
    /// the count of its raw bytes read (progress).
    Closed(PathBuf, Arc<AtomicU64>),
}

/// One input of the merge.
struct Slot {
    /// The name in messages.
    name: PathBuf,
    /// Its reader, while open.
    reader: Option<PcapReader<Stream>>,
    /// Where to open it again, when it can be.
    reopen: Option<PathBuf>,
    /// Raw bytes read from it, across openings.
    consumed: Arc<AtomicU64>,
    /// The time of its next frame while closed before it was read (the
    /// merge opens it when that time comes).
    parked: Option<u64>,
    batch: Batch,
    next: usize,
    /// Its reader has ended (or failed): nothing more comes from it.
    done: bool,
    /// Frames taken from it.
    taken: u64,
    /// Merged numbers of its first and last frame.
    first: Option<u64>,
    last: u64,
    /// Whether its frames follow one another in the merged stream (then
    /// merged number = own number + a constant).
    one_run: bool,
    /// Whether it ended damaged.
    damaged: bool,
    /// Its read size.
    per_input: usize,
}

impl Slot {
    /// Opens the input (again) from its start.
    fn open(&mut self) -> Result<(), ReadError> {
        let path = self.reopen.clone().unwrap_or_else(|| self.name.clone());
        let r = Input::open_counted(&path, self.consumed.clone())?.reader()?;
        self.reader = Some(r.max_chunk(self.per_input));
        self.batch = Batch::default();
        self.next = 0;
        Ok(())
    }

    /// Closes a reopenable input, none of whose frames were taken, until
    /// the merge reaches `ts`, its first frame. One read whole already is
    /// left as it is (its frames are all in its batch).
    fn park(&mut self, ts: u64) -> bool {
        if self.reopen.is_none() || self.taken > 0 || self.done {
            return false;
        }
        self.reader = None;
        self.batch = Batch::default();
        self.parked = Some(ts);
        true
    }
}

/// Several captures as one, merged by timestamp.
pub struct Merge {
    slots: Vec<Slot>,
    /// Inputs that could not even be opened, counted among the damaged.
    unopened: Vec<ReadError>,
    inputs: usize,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    started: bool,
    number: u64,
    damaged: Vec<ReadError>,
    /// Told with the first batch (inputs passed over, inputs that failed to open).
    pending_notes: Vec<String>,
}

impl Merge {
    /// Merges `readers` (inputs that cannot be reopened), in order.
    pub fn new(readers: Vec<PcapReader<Stream>>, unopened: Vec<ReadError>) -> Merge {
        Merge::of(
            readers
                .into_iter()
                .map(|r| MergeInput::Open(Box::new(r), None))
                .collect(),
            unopened,
        )
    }

    /// Merges `inputs`, in the order they were named; `unopened` are inputs
    /// that failed before their first record (told, and the stream ends
    /// damaged).
    pub fn of(inputs: Vec<MergeInput>, unopened: Vec<ReadError>) -> Merge {
        let open = inputs.len().clamp(1, MAX_OPEN);
        let per_input = (TOTAL_INPUT_CHUNKS / open).max(MIN_INPUT_CHUNK);
        let slots: Vec<Slot> = inputs
            .into_iter()
            .map(|i| {
                let (name, reader, reopen, consumed) = match i {
                    MergeInput::Open(r, reopen) => (
                        r.path().to_path_buf(),
                        Some(r.max_chunk(per_input)),
                        reopen,
                        Arc::default(),
                    ),
                    MergeInput::Closed(p, c) => (p.clone(), None, Some(p), c),
                };
                Slot {
                    name,
                    reader,
                    reopen,
                    consumed,
                    parked: None,
                    batch: Batch::default(),
                    next: 0,
                    done: false,
                    taken: 0,
                    first: None,
                    last: 0,
                    one_run: true,
                    damaged: false,
                    per_input,
                }
            })
            .collect();
        let pending_notes = unopened
            .iter()
            .map(|e| format!("{e}; the other inputs go on"))
            .collect();
        Merge {
            inputs: slots.len() + unopened.len(),
            slots,
            unopened,
            heap: BinaryHeap::new(),
            started: false,
            number: 0,
            damaged: Vec::new(),
            pending_notes,
        }
    }

    /// Makes input `i` hold a frame to take, opening it (again) and
    /// reading on as needed; false once it has no more. Its notes and
    /// damage go to `notes`.
    fn ready(&mut self, i: usize, notes: &mut Vec<String>) -> bool {
        let Some(s) = self.slots.get_mut(i) else {
            return false;
        };
        loop {
            if s.next < s.batch.frames.len() {
                return true;
            }
            if s.done {
                return false;
            }
            if s.reader.is_none() {
                s.parked = None;
                if let Err(e) = s.open() {
                    notes.push(format!("{e}; the other inputs go on"));
                    self.damaged.push(e);
                    s.done = true;
                    s.damaged = true;
                    return false;
                }
            }
            let Some(reader) = s.reader.as_mut() else {
                return false;
            };
            let r = reader.fill(&mut s.batch);
            s.next = 0;
            notes.append(&mut s.batch.notes);
            match r {
                Ok(true) => {}
                Ok(false) => s.done = true,
                Err(e) => {
                    notes.push(format!("{e}; the other inputs go on"));
                    self.damaged.push(e);
                    s.done = true;
                    s.damaged = true;
                }
            }
            if s.done {
                // Its last frames are in the batch; the reader (its file,
                // its decompressor) is done with.
                s.reader = None;
            }
        }
    }

    /// The time of input `i`'s next frame.
    fn head_ts(&self, i: usize) -> u64 {
        self.slots
            .get(i)
            .and_then(|s| {
                s.parked
                    .or_else(|| s.batch.frames.get(s.next).map(|f| f.ts_ns))
            })
            .unwrap_or(0)
    }

    /// Where each input's frames went in the merged stream, one line each.
    fn frame_map(&self) -> Vec<String> {
        self.slots
            .iter()
            .map(|s| {
                let name = s.name.display();
                let whole = if s.damaged { " (up to its damage)" } else { "" };
                match s.first {
                    None => format!("{name}: no frames{whole}"),
                    Some(first) if s.one_run => {
                        let shift = first as i128 - 1;
                        let rule = match shift {
                            0 => "its frame numbers are the merged ones".to_string(),
                            k => format!("merged frame = its frame + {k}"),
                        };
                        format!(
                            "{name}: {} frames{whole}, merged frames {first}-{}: {rule}",
                            s.taken, s.last
                        )
                    }
                    Some(first) => format!(
                        "{name}: {} frames{whole}, interleaved with other inputs between merged frames {first} and {}",
                        s.taken, s.last
                    ),
                }
            })
            .collect()
    }
}

impl BatchReader for Merge {
    fn fill(&mut self, out: &mut Batch) -> Result<bool, ReadError> {
        out.frames.clear();
        out.notes.clear();
        out.info.clear();
        let mut notes = std::mem::take(&mut self.pending_notes);
        if !self.started {
            self.started = true;
            let park = self.slots.len() > MAX_OPEN;
            for i in 0..self.slots.len() {
                let said = notes.len();
                if self.ready(i, &mut notes) {
                    let ts = self.head_ts(i);
                    self.heap.push(Reverse((ts, i)));
                    // What its first batch said is said again when it is
                    // read for real.
                    if park && self.slots.get_mut(i).is_some_and(|s| s.park(ts)) {
                        notes.truncate(said);
                    }
                }
            }
        }
        let mut w = 0usize;
        while w < OUT_CHUNK {
            let Some(Reverse((_, i))) = self.heap.pop() else {
                break;
            };
            // A closed input whose time has come is opened here.
            if !self.ready(i, &mut notes) {
                continue;
            }
            let Some(s) = self.slots.get_mut(i) else {
                continue;
            };
            let Some(&f) = s.batch.frames.get(s.next) else {
                continue;
            };
            s.next += 1;
            let bytes = s.batch.bytes(&f);
            let end = w + bytes.len();
            if out.data.len() < end {
                out.data.resize(end.max(OUT_CHUNK), 0);
            }
            if let Some(dst) = out.data.get_mut(w..end) {
                dst.copy_from_slice(bytes);
            }
            self.number += 1;
            out.frames.push(FrameMeta {
                number: self.number,
                start: w,
                ..f
            });
            w = end;
            // Frame k of the input is merged frame first + k - 1 as long as
            // nothing else came between.
            match s.first {
                None => s.first = Some(self.number),
                Some(_) => s.one_run &= s.last + 1 == self.number,
            }
            s.last = self.number;
            s.taken += 1;
            if self.ready(i, &mut notes) {
                self.heap.push(Reverse((self.head_ts(i), i)));
            }
        }
        out.notes = notes;
        out.end_offset = self
            .slots
            .iter()
            .filter_map(|s| s.reader.as_ref())
            .map(PcapReader::position)
            .sum();
        if !self.heap.is_empty() {
            return Ok(true);
        }
        out.info = self.frame_map();
        let mut damaged = std::mem::take(&mut self.unopened);
        damaged.append(&mut self.damaged);
        let Some(first) = damaged.first() else {
            return Ok(false);
        };
        Err(ReadError {
            path: first.path.clone(),
            frame: first.frame,
            offset: first.offset,
            decompressed: first.decompressed,
            kind: ReadErrorKind::Inputs {
                inputs: self.inputs,
                damaged,
            },
            partial: None,
        })
    }
}
