//! Records and names shared by the eBPF probes (`ebpf-probes/probes`, BPF
//! target, `no_std`) and the analyzer (`analyzer/src/sources/ebpf/`).
//!
//! The probes do not decode anything: a tracepoint program copies one span
//! of the raw tracepoint record behind a small [`RecordHeader`] into the
//! [`MAP_EVENTS`] ring buffer. Which span is a per-tracepoint [`CopyPlan`]
//! that userspace works out at load time from the running kernel's `format`
//! files (the fields the analyzer reads, and nothing else), and hands to the
//! program as the attachment's BPF cookie (or, on kernels without cookies,
//! in the program's slot of [`MAP_SLOT_IDS`]). Userspace decodes the span
//! with the same format files, so nothing here depends on one kernel's layout.
//!
//! ```text
//!  offset  size  RecordHeader
//!       0     1  version  (RECORD_VERSION)
//!       1     1  kind     (RecordKind)
//!       2     2  event_id (tracepoint: its ID, from the plan; kprobe: KprobeId)
//!       4     4  cpu
//!       8     8  ts_ns    (bpf_ktime_get_ns: CLOCK_MONOTONIC)
//!      16     8  pid_tgid (bpf_get_current_pid_tgid: tgid << 32 | tid)
//!      24     2  len      (bytes of data that are valid)
//!      26     2  base     (offset in the raw tracepoint record of data[0])
//!      28     4  _pad
//!      32     N  data     (helper's program: N = 32, 64, 128 or 256, the smallest
//!                          class the span fits; fixed copy of n bytes: n rounded up to 8)
//! ```
#![cfg_attr(not(feature = "user"), no_std)]
#![deny(missing_docs)]

use core::mem::size_of;

/// Version of [`RecordHeader`]'s layout. Bump on any change.
pub const RECORD_VERSION: u8 = 2;

/// Most bytes of a tracepoint record one ring record carries. The fixed part
/// of every rpcrdma, rdma_cma and ib_cma event of Linux 5.10 to 6.12 fits (the
/// largest, `cm_event_handler`, is about 80 bytes); `__data_loc` strings past
/// this are reported as truncated by the decoder.
pub const RECORD_DATA_MAX: usize = 256;

/// The size classes of a ring record's data: the program reserves the
/// smallest that holds the span its plan asks for, so an event whose
/// fields take 20 bytes costs a 64-byte ring record, not a 288-byte one.
pub const DATA_CLASSES: [usize; 4] = [32, 64, 128, RECORD_DATA_MAX];

/// What a tracepoint program copies of one tracepoint's record, packed in
/// the 64 bits of a BPF cookie:
///
/// ```text
///  bits  0..16  event id (the format file's `ID:`)
///  bits 16..32  lo: first byte of the span (offset in the raw record)
///  bits 32..48  hi: end of the span's fixed part
///  bits 48..64  loc: 0, or the offset of a `__data_loc` field whose string
///               the span must reach (bit 15 set: a `__rel_loc`, whose
///               string offset counts from the end of the field)
/// ```
///
/// The program reads the `__data_loc` word at run time, since a string's
/// place depends on the strings before it, and stretches the span to the
/// string's end, up to `lo + RECORD_DATA_MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CopyPlan {
    /// The event's id.
    pub event_id: u16,
    /// First byte of the span.
    pub lo: u16,
    /// End of the span's fixed part.
    pub hi: u16,
    /// A `__data_loc` field to follow (0: none), [`CopyPlan::REL_LOC`] for `__rel_loc`.
    pub loc: u16,
}

impl CopyPlan {
    /// Flag of [`CopyPlan::loc`]: the field is a `__rel_loc`.
    pub const REL_LOC: u16 = 0x8000;

    /// The cookie this plan packs into.
    pub const fn to_cookie(self) -> u64 {
        self.event_id as u64
            | (self.lo as u64) << 16
            | (self.hi as u64) << 32
            | (self.loc as u64) << 48
    }

    /// The plan a cookie carries.
    pub const fn from_cookie(c: u64) -> CopyPlan {
        CopyPlan {
            event_id: c as u16,
            lo: (c >> 16) as u16,
            hi: (c >> 32) as u16,
            loc: (c >> 48) as u16,
        }
    }

    /// Offset of the `__data_loc` word the program must read first, if any.
    #[inline(always)]
    pub const fn loc_at(self) -> Option<u32> {
        if self.loc == 0 {
            None
        } else {
            Some((self.loc & !Self::REL_LOC) as u32 & 0x1ff)
        }
    }

    /// The span to copy, `(first byte, length)`, given the word at
    /// [`CopyPlan::loc_at`] (ignored without one). The length is at most
    /// [`RECORD_DATA_MAX`]; the masks keep every value small enough for
    /// the verifier to bound.
    #[inline(always)]
    pub const fn span(self, loc_word: u32) -> (u32, u32) {
        let lo = self.lo as u32 & 0x1ff;
        let mut hi = self.hi as u32 & 0x3ff;
        if let Some(at) = self.loc_at() {
            let mut end = (loc_word & 0xffff) + (loc_word >> 16);
            if self.loc & Self::REL_LOC != 0 {
                end += at + 4;
            }
            if end > hi {
                hi = end;
            }
        }
        let n = hi.saturating_sub(lo);
        let max = RECORD_DATA_MAX as u32;
        (lo, if n > max { max } else { n })
    }

    /// The copy program that takes this plan: `Some(n)` when the span is the
    /// record's fixed part from its first byte past the common fields, `n`
    /// bytes long, no string to follow and `n` at most [`FIXED_COPY_MAX`]
    /// ([`PROG_TRACEPOINT_FIXED`]`n` copies it); `None` for
    /// [`PROG_TRACEPOINT`], which reads the span through a helper.
    ///
    /// A fixed copy reads the record with plain loads at constant offsets,
    /// without the `bpf_probe_read_kernel` helper (about a third of the
    /// program's own time per event). The kernel lets a tracepoint program
    /// load from its context only up to the end of the attached event's
    /// last field (`perf_event_set_bpf_prog` compares the program's
    /// largest context offset with it), hence one program per length, each
    /// reading exactly `[8, 8 + n)`; `hi` never passes the last field.
    pub const fn fixed_copy(self) -> Option<u16> {
        if self.loc != 0 || self.hi as usize <= COMMON_LEN {
            return None;
        }
        let n = self.hi as usize - COMMON_LEN;
        if n > FIXED_COPY_MAX {
            None
        } else {
            Some(n as u16)
        }
    }

    /// The size class ([`DATA_CLASSES`]) a span of `n` bytes takes.
    #[inline(always)]
    pub const fn class(n: u32) -> usize {
        let n = n as usize;
        if n <= DATA_CLASSES[0] {
            DATA_CLASSES[0]
        } else if n <= DATA_CLASSES[1] {
            DATA_CLASSES[1]
        } else if n <= DATA_CLASSES[2] {
            DATA_CLASSES[2]
        } else {
            DATA_CLASSES[3]
        }
    }
}

/// The first bytes of every tracepoint record (`common_type`,
/// `common_flags`, `common_preempt_count`, `common_pid`), which BPF never
/// sees intact: a fixed copy ([`CopyPlan::fixed_copy`]) starts past them.
pub const COMMON_LEN: usize = 8;

/// Longest span a fixed-copy program copies ([`CopyPlan::fixed_copy`]):
/// every per-RPC event's fields fit (the largest, `xprtrdma_marshal`'s and
/// the chunk events', take 36 to 48 bytes on Linux 5.10 to 6.12).
pub const FIXED_COPY_MAX: usize = 64;

/// Ring buffer size in bytes (a power of two, a multiple of the page size).
/// 4 MiB holds about 14,000 records, i.e. some tens of milliseconds of a
/// saturated probe: enough to ride out a busy reader without loss.
pub const RING_BYTES: u32 = 4 << 20;

/// Name of the ring buffer map.
pub const MAP_EVENTS: &str = "EVENTS";
/// Name of the per-CPU array (one `u64` at index 0) counting records lost
/// because the ring buffer was full.
pub const MAP_LOST: &str = "LOST";
/// Name of the tracepoint program: copies any tracepoint's record. One
/// program is attached to every tracepoint the analyzer wants.
pub const PROG_TRACEPOINT: &str = "rdma_tracepoint";
/// Name prefix of the fixed-copy programs (`rdma_tp_copy_1` to
/// `rdma_tp_copy_64`): program `n` copies bytes `[8, 8 + n)` of the
/// record, for the plans whose [`CopyPlan::fixed_copy`] is `n` (kernels
/// with BPF cookies; the cookie carries the event id).
pub const PROG_TRACEPOINT_FIXED: &str = "rdma_tp_copy_";
/// Name of the program that does nothing, for the benchmark's floor.
pub const PROG_TRACEPOINT_FLOOR: &str = "rdma_bench_floor";
/// Name prefix of the slot programs (`rdma_tp_0` to `rdma_tp_255`), for
/// kernels without BPF cookies (before Linux 5.15): the tracepoint's id is
/// lost before BPF runs (see [`RecordHeader::event_id`]), so each attached
/// tracepoint gets a program of its own, which reads its id from slot N of
/// [`MAP_SLOT_IDS`].
pub const PROG_TRACEPOINT_SLOT: &str = "rdma_tp_";
/// Slot programs in the object: tracepoints attachable without cookies.
pub const TP_SLOTS: u32 = 256;
/// Name of the array (`u64` per slot) userspace fills with each slot
/// program's [`CopyPlan`] cookie before attaching it.
pub const MAP_SLOT_IDS: &str = "SLOT_IDS";
/// Name prefix of the fixed-copy slot programs, for kernels without BPF
/// cookies: `rdma_tpf_L_K` copies bytes `[8, 8 + L)` of the record with
/// plain loads, as `rdma_tp_copy_L` does, and reads its event id from
/// entry [`fixed_slot`]`(L, K)` of [`MAP_FIXED_SLOT_IDS`]. The kernel
/// refuses a program that loads past the event's last field, so `L` is
/// in the program, not in the map: one set of [`FIXED_SLOTS_PER_LEN`]
/// programs per length, `L` a multiple of [`FIXED_SLOT_STEP`] up to
/// [`FIXED_COPY_MAX`] (every per-RPC span of Linux 5.10 is one).
pub const PROG_TRACEPOINT_FIXED_SLOT: &str = "rdma_tpf_";
/// Step between the lengths of the fixed-copy slot programs.
pub const FIXED_SLOT_STEP: usize = 4;
/// Fixed-copy slot programs of each length: Linux 5.10's busiest length
/// (16 bytes) has 8 per-RPC events the analyzer reads (client and server
/// side together).
pub const FIXED_SLOTS_PER_LEN: u32 = 8;
/// Fixed-copy slot programs in the object.
pub const FIXED_SLOTS: u32 = (FIXED_COPY_MAX / FIXED_SLOT_STEP) as u32 * FIXED_SLOTS_PER_LEN;
/// Name of the array (`u64` per fixed-copy slot, the event id) userspace
/// fills before attaching a [`PROG_TRACEPOINT_FIXED_SLOT`] program.
pub const MAP_FIXED_SLOT_IDS: &str = "FIXED_SLOT_IDS";

/// Entry of [`MAP_FIXED_SLOT_IDS`] of the `k`th slot program of length
/// `len`; `None` when no such program exists (a length that is not a
/// multiple of [`FIXED_SLOT_STEP`], or out of range).
pub const fn fixed_slot(len: usize, k: u32) -> Option<u32> {
    if len == 0 || len > FIXED_COPY_MAX || len % FIXED_SLOT_STEP != 0 || k >= FIXED_SLOTS_PER_LEN {
        return None;
    }
    Some((len / FIXED_SLOT_STEP - 1) as u32 * FIXED_SLOTS_PER_LEN + k)
}
/// Name of the kprobe on `rdma_connect_locked` (client side): copies the
/// CM private data the caller passes (RFC 8797), which no tracepoint carries.
pub const PROG_KPROBE_CONNECT: &str = "rdma_connect_pdata";
/// Name of the kprobe on `rdma_accept` (server side): the same for the reply.
pub const PROG_KPROBE_ACCEPT: &str = "rdma_accept_pdata";
/// Kernel function [`PROG_KPROBE_CONNECT`] attaches to.
pub const FN_CONNECT: &str = "rdma_connect_locked";
/// Kernel function [`PROG_KPROBE_ACCEPT`] attaches to.
pub const FN_ACCEPT: &str = "rdma_accept";

/// What produced a record.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    /// A tracepoint: `data` is a span of the raw record starting at
    /// `base` (the first 8 bytes, the common fields, are never valid),
    /// `event_id` the event's id.
    Tracepoint = 1,
    /// A kprobe: `event_id` is a [`KprobeId`], `data` the private data bytes.
    Kprobe = 2,
}

impl RecordKind {
    /// From the header byte.
    pub const fn from_u8(v: u8) -> Option<RecordKind> {
        match v {
            1 => Some(RecordKind::Tracepoint),
            2 => Some(RecordKind::Kprobe),
            _ => None,
        }
    }
}

/// Which kprobe produced a [`RecordKind::Kprobe`] record.
#[repr(u16)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KprobeId {
    /// `rdma_connect_locked(id, conn_param)`: the client's CM REQ private data.
    Connect = 1,
    /// `rdma_accept(id, conn_param)`: the server's CM REP private data.
    Accept = 2,
}

/// Most private data bytes a kprobe copies (IBA CM REQ carries at most 92;
/// RFC 8797's message is 8).
pub const PDATA_MAX: usize = 96;

/// Fixed header in front of every record.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RecordHeader {
    /// [`RECORD_VERSION`].
    pub version: u8,
    /// [`RecordKind`] as a byte.
    pub kind: u8,
    /// Tracepoint: the event's `ID:` from its format file, which userspace
    /// passes in the [`CopyPlan`] (the record's own `common_type` is
    /// overwritten before BPF runs). Kprobe: a [`KprobeId`].
    pub event_id: u16,
    /// CPU the event fired on.
    pub cpu: u32,
    /// `bpf_ktime_get_ns()`: CLOCK_MONOTONIC, ns.
    pub ts_ns: u64,
    /// `bpf_get_current_pid_tgid()`: `tgid << 32 | tid`. Server-side events
    /// of one request share the nfsd thread, which is how they are tied together.
    pub pid_tgid: u64,
    /// Valid bytes in `data`.
    pub len: u16,
    /// Offset in the raw tracepoint record of `data[0]` (kprobes: 0).
    pub base: u16,
    /// Explicit padding.
    pub _pad: u32,
}

/// A header and the copied bytes: what the ring buffer carries, in one of
/// the [`DATA_CLASSES`] sizes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Record<const N: usize = RECORD_DATA_MAX> {
    /// Header.
    pub header: RecordHeader,
    /// A span of the raw tracepoint record (or private data), `header.len` bytes valid.
    pub data: [u8; N],
}

/// Size of [`RecordHeader`].
pub const HEADER_LEN: usize = 32;
/// Size of [`Record`].
pub const RECORD_LEN: usize = HEADER_LEN + RECORD_DATA_MAX;

const _: () = assert!(size_of::<RecordHeader>() == HEADER_LEN);
const _: () = assert!(size_of::<Record>() == RECORD_LEN);
const _: () = assert!(PDATA_MAX <= DATA_CLASSES[2]);

impl RecordHeader {
    /// Reads a header from the front of `bytes` (native endianness, as the
    /// kernel wrote it). `None` when `bytes` is shorter than [`HEADER_LEN`].
    pub fn from_bytes(bytes: &[u8]) -> Option<RecordHeader> {
        let b = bytes.get(..HEADER_LEN)?;
        let u16_at = |o: usize| u16::from_ne_bytes([b[o], b[o + 1]]);
        let u32_at = |o: usize| u32::from_ne_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let u64_at = |o: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[o..o + 8]);
            u64::from_ne_bytes(a)
        };
        Some(RecordHeader {
            version: b[0],
            kind: b[1],
            event_id: u16_at(2),
            cpu: u32_at(4),
            ts_ns: u64_at(8),
            pid_tgid: u64_at(16),
            len: u16_at(24),
            base: u16_at(26),
            _pad: u32_at(28),
        })
    }

    /// The thread id (low half of `pid_tgid`).
    pub const fn tid(&self) -> u32 {
        self.pid_tgid as u32
    }
}

#[cfg(feature = "user")]
mod pod {
    // SAFETY: both are #[repr(C)], made of plain integers and byte arrays,
    // with explicit padding, so every bit pattern is valid.
    #[allow(unsafe_code)]
    unsafe impl aya::Pod for super::RecordHeader {}
    #[allow(unsafe_code)]
    unsafe impl<const N: usize> aya::Pod for super::Record<N> {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_through_bytes() {
        let h = RecordHeader {
            version: RECORD_VERSION,
            kind: RecordKind::Tracepoint as u8,
            event_id: 1234,
            cpu: 1,
            ts_ns: 0x0102_0304_0506_0708,
            pid_tgid: (77 << 32) | 78,
            len: 200,
            base: 16,
            _pad: 0,
        };
        let mut b = [0u8; HEADER_LEN];
        b[0] = h.version;
        b[1] = h.kind;
        b[2..4].copy_from_slice(&h.event_id.to_ne_bytes());
        b[4..8].copy_from_slice(&h.cpu.to_ne_bytes());
        b[8..16].copy_from_slice(&h.ts_ns.to_ne_bytes());
        b[16..24].copy_from_slice(&h.pid_tgid.to_ne_bytes());
        b[24..26].copy_from_slice(&h.len.to_ne_bytes());
        b[26..28].copy_from_slice(&h.base.to_ne_bytes());
        assert_eq!(RecordHeader::from_bytes(&b), Some(h));
        assert_eq!(h.tid(), 78);
        assert_eq!(RecordHeader::from_bytes(&b[..31]), None);
    }

    #[test]
    fn plans_round_trip_through_cookies() {
        let p = CopyPlan {
            event_id: 1577,
            lo: 8,
            hi: 44,
            loc: 40 | CopyPlan::REL_LOC,
        };
        assert_eq!(CopyPlan::from_cookie(p.to_cookie()), p);
        assert_eq!(p.to_cookie() & 0xffff, 1577);
    }

    #[test]
    fn spans_follow_the_string() {
        let fixed = CopyPlan {
            event_id: 1,
            lo: 8,
            hi: 44,
            loc: 0,
        };
        assert_eq!(fixed.span(0xdead_beef), (8, 36));
        // `__data_loc` at 40: a 20-byte string at offset 60.
        let dl = CopyPlan { loc: 40, ..fixed };
        assert_eq!(dl.span(20 << 16 | 60), (8, 72));
        // A string inside the fixed span does not shrink it.
        assert_eq!(dl.span(2 << 16 | 10), (8, 36));
        // `__rel_loc` at 40: offset counts from 44.
        let rl = CopyPlan {
            loc: 40 | CopyPlan::REL_LOC,
            ..fixed
        };
        assert_eq!(rl.span(20 << 16 | 16), (8, 72));
        // A hostile word cannot stretch a record past the largest class.
        assert_eq!(dl.span(u32::MAX), (8, RECORD_DATA_MAX as u32));
        assert_eq!(
            CopyPlan {
                lo: 50,
                hi: 10,
                ..fixed
            }
            .span(0),
            (50, 0)
        );
        assert_eq!(CopyPlan::class(0), 32);
        assert_eq!(CopyPlan::class(33), 64);
        assert_eq!(CopyPlan::class(256), 256);
    }

    #[test]
    fn fixed_copies_take_the_fixed_part_from_byte_8() {
        let p = CopyPlan {
            event_id: 1,
            lo: 16,
            hi: 44,
            loc: 0,
        };
        // The span starts at 8 whatever `lo` says: loads at constant offsets.
        assert_eq!(p.fixed_copy(), Some(36));
        assert_eq!(CopyPlan { hi: 9, ..p }.fixed_copy(), Some(1));
        assert_eq!(CopyPlan { hi: 72, ..p }.fixed_copy(), Some(64));
        // Past the longest program, at or before byte 8, or a string to
        // follow: the helper's program.
        assert_eq!(CopyPlan { hi: 73, ..p }.fixed_copy(), None);
        assert_eq!(CopyPlan { hi: 8, ..p }.fixed_copy(), None);
        assert_eq!(CopyPlan { loc: 24, ..p }.fixed_copy(), None);
    }

    #[test]
    fn fixed_slots_are_distinct_and_in_range() {
        let mut seen = [false; FIXED_SLOTS as usize];
        for len in (FIXED_SLOT_STEP..=FIXED_COPY_MAX).step_by(FIXED_SLOT_STEP) {
            for k in 0..FIXED_SLOTS_PER_LEN {
                let i = fixed_slot(len, k).expect("a program of this length") as usize;
                assert!(i < seen.len() && !seen[i], "{len} {k} -> {i}");
                seen[i] = true;
            }
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(fixed_slot(6, 0), None);
        assert_eq!(fixed_slot(0, 0), None);
        assert_eq!(fixed_slot(FIXED_COPY_MAX + FIXED_SLOT_STEP, 0), None);
        assert_eq!(fixed_slot(16, FIXED_SLOTS_PER_LEN), None);
    }

    #[test]
    fn kinds_from_bytes() {
        assert_eq!(RecordKind::from_u8(1), Some(RecordKind::Tracepoint));
        assert_eq!(RecordKind::from_u8(2), Some(RecordKind::Kprobe));
        assert_eq!(RecordKind::from_u8(0), None);
    }
}
