//! Records and names shared by the eBPF probes (`ebpf-probes/probes`, BPF
//! target, `no_std`) and the analyzer (`analyzer/src/sources/ebpf.rs`).
//!
//! The probes do not decode anything: a tracepoint program copies the raw
//! tracepoint record (its first [`RECORD_DATA_MAX`] bytes) behind a small
//! [`RecordHeader`] into the [`MAP_EVENTS`] ring buffer. Userspace decodes the
//! record with the running kernel's tracepoint `format` files, so nothing
//! here depends on one kernel's layout.
//!
//! ```text
//!  offset  size  RecordHeader
//!       0     1  version  (RECORD_VERSION)
//!       1     1  kind     (RecordKind)
//!       2     2  event_id (tracepoint: its ID, from the attach cookie; kprobe: KprobeId)
//!       4     4  cpu
//!       8     8  ts_ns    (bpf_ktime_get_ns: CLOCK_MONOTONIC)
//!      16     8  pid_tgid (bpf_get_current_pid_tgid: tgid << 32 | tid)
//!      24     4  len      (bytes of data that are valid)
//!      28     4  _pad
//!      32   256  data     (Record only)
//! ```
#![cfg_attr(not(feature = "user"), no_std)]
#![deny(missing_docs)]

use core::mem::size_of;

/// Version of [`RecordHeader`]'s layout. Bump on any change.
pub const RECORD_VERSION: u8 = 1;

/// Bytes of a tracepoint record copied into the ring buffer. The fixed part
/// of every rpcrdma, rdma_cma and ib_cma event of Linux 6.1 fits (the largest,
/// `cm_event_handler`, is about 80 bytes); `__data_loc` strings past this are
/// reported as truncated by the decoder.
pub const RECORD_DATA_MAX: usize = 256;

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
/// Name prefix of the slot programs (`rdma_tp_0` to `rdma_tp_255`), for
/// kernels without BPF cookies (before Linux 5.15): the tracepoint's id is
/// lost before BPF runs (see [`RecordHeader::event_id`]), so each attached
/// tracepoint gets a program of its own, which reads its id from slot N of
/// [`MAP_SLOT_IDS`].
pub const PROG_TRACEPOINT_SLOT: &str = "rdma_tp_";
/// Slot programs in the object: tracepoints attachable without cookies.
pub const TP_SLOTS: u32 = 256;
/// Name of the array (`u32` per slot) userspace fills with each slot
/// program's tracepoint id before attaching it.
pub const MAP_SLOT_IDS: &str = "SLOT_IDS";
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
    /// A tracepoint: `data` is the raw record (its first 8 bytes, the
    /// common fields, are not valid), `event_id` the event's id.
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
    /// passes as the BPF attach cookie (the record's own `common_type` is
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
    pub len: u32,
    /// Explicit padding.
    pub _pad: u32,
}

/// A header and the copied bytes: what the ring buffer carries.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Record {
    /// Header.
    pub header: RecordHeader,
    /// Raw tracepoint record (or private data), `header.len` bytes valid.
    pub data: [u8; RECORD_DATA_MAX],
}

/// Size of [`RecordHeader`].
pub const HEADER_LEN: usize = 32;
/// Size of [`Record`].
pub const RECORD_LEN: usize = HEADER_LEN + RECORD_DATA_MAX;

const _: () = assert!(size_of::<RecordHeader>() == HEADER_LEN);
const _: () = assert!(size_of::<Record>() == RECORD_LEN);
const _: () = assert!(PDATA_MAX <= RECORD_DATA_MAX);

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
            len: u32_at(24),
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
    unsafe impl aya::Pod for super::Record {}
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
            len: 256,
            _pad: 0,
        };
        let mut b = [0u8; HEADER_LEN];
        b[0] = h.version;
        b[1] = h.kind;
        b[2..4].copy_from_slice(&h.event_id.to_ne_bytes());
        b[4..8].copy_from_slice(&h.cpu.to_ne_bytes());
        b[8..16].copy_from_slice(&h.ts_ns.to_ne_bytes());
        b[16..24].copy_from_slice(&h.pid_tgid.to_ne_bytes());
        b[24..28].copy_from_slice(&h.len.to_ne_bytes());
        assert_eq!(RecordHeader::from_bytes(&b), Some(h));
        assert_eq!(h.tid(), 78);
        assert_eq!(RecordHeader::from_bytes(&b[..31]), None);
    }

    #[test]
    fn kinds_from_bytes() {
        assert_eq!(RecordKind::from_u8(1), Some(RecordKind::Tracepoint));
        assert_eq!(RecordKind::from_u8(2), Some(RecordKind::Kprobe));
        assert_eq!(RecordKind::from_u8(0), None);
    }
}
