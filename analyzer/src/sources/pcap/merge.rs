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
//! Memory is each input's batch buffer plus the merged batch.
//!
//! An input that is damaged stops there: its frames before the damage are
//! merged, the damage is told at once, and the others go on; the merged
//! stream then ends damaged, naming every input that was.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::input::Stream;
use super::read::{Batch, BatchReader, FrameMeta, PcapReader, ReadError, ReadErrorKind};

/// Bytes of frames per merged batch.
const OUT_CHUNK: usize = 512 << 10;

/// Read size per input: all the inputs' buffers together stay near this
/// however many there are, each between [`MIN_INPUT_CHUNK`] and the
/// reader's own maximum.
const TOTAL_INPUT_CHUNKS: usize = 8 << 20;

/// The smallest read per input.
const MIN_INPUT_CHUNK: usize = 64 << 10;

/// One input of the merge.
struct Slot {
    reader: PcapReader<Stream>,
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
    /// Merges `readers`, in the order the inputs were named; `unopened`
    /// are inputs that failed before their first record (told, and the
    /// stream ends damaged).
    pub fn new(readers: Vec<PcapReader<Stream>>, unopened: Vec<ReadError>) -> Merge {
        let per_input = (TOTAL_INPUT_CHUNKS / readers.len().max(1)).max(MIN_INPUT_CHUNK);
        let slots: Vec<Slot> = readers
            .into_iter()
            .map(|r| Slot {
                reader: r.max_chunk(per_input),
                batch: Batch::default(),
                next: 0,
                done: false,
                taken: 0,
                first: None,
                last: 0,
                one_run: true,
                damaged: false,
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

    /// Makes input `i` hold a frame to take, reading on as needed; false
    /// once it has no more. Its notes and damage go to `notes`.
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
            let r = s.reader.fill(&mut s.batch);
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
        }
    }

    /// The time of input `i`'s next frame.
    fn head_ts(&self, i: usize) -> u64 {
        self.slots
            .get(i)
            .and_then(|s| s.batch.frames.get(s.next))
            .map_or(0, |f| f.ts_ns)
    }

    /// Where each input's frames went in the merged stream, one line each.
    fn frame_map(&self) -> Vec<String> {
        self.slots
            .iter()
            .map(|s| {
                let name = s.reader.path().display();
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
            for i in 0..self.slots.len() {
                if self.ready(i, &mut notes) {
                    self.heap.push(Reverse((self.head_ts(i), i)));
                }
            }
        }
        let mut w = 0usize;
        while w < OUT_CHUNK {
            let Some(Reverse((_, i))) = self.heap.pop() else {
                break;
            };
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
        out.end_offset = self.slots.iter().map(|s| s.reader.position()).sum();
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
        })
    }
}
