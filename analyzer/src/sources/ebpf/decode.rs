//! Ring records into [`ProbeEvent`]s, by the running kernel's formats.
//!
//! Each format is compiled once, when the decoder is made: the event id
//! leads to its row of [`TRACEPOINTS`](super::events::TRACEPOINTS) (the
//! decode fn) and each field the decoders read ([`F`]) to its place in the
//! record. Decoding a record is then an index and a few reads: no name is
//! compared and nothing is allocated but the event's own strings.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use ebpf_common::{KprobeId, RecordHeader, RecordKind, HEADER_LEN, RECORD_VERSION};

use super::events::{row_of, Tracepoint};
use super::format::{Field, Format, FormatSet};
// The decoded events are the engine's input types (`Event::Probe`); they
// live there so the engine stays free of any kernel or I/O code.
use crate::engine::kernel::event::{Cid, Probe, ProbeEvent, ProbeMeta, TaskKey};

/// Declares [`F`], the fields the decoders read, with their names in the
/// kernel's format files, in one list.
macro_rules! fields {
    ($($(#[$doc:meta])* $v:ident = $name:literal,)*) => {
        /// A tracepoint field the decoders read, by its name in the format
        /// files. A kernel whose event lacks it reads it as `None`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum F {
            $(#[doc = concat!("`", $name, "`.")] $(#[$doc])* $v,)*
        }

        impl F {
            /// Every field, in declaration order (`F as usize` indexes it).
            pub const ALL: &'static [F] = &[$(F::$v,)*];

            /// The field's name in the format files.
            pub const fn name(self) -> &'static str {
                match self {
                    $(F::$v => $name,)*
                }
            }
        }
    };
}

fields! {
    TaskId = "task_id",
    ClientId = "client_id",
    Xid = "xid",
    Rtype = "rtype",
    Wtype = "wtype",
    Hdrlen = "hdrlen",
    Headlen = "headlen",
    Pagelen = "pagelen",
    Taillen = "taillen",
    Ret = "ret",
    Handle = "handle",
    Length = "length",
    Offset = "offset",
    /// The client's Read chunk position.
    Pos = "pos",
    /// The server's Read chunk position.
    Position = "position",
    CqId = "cq_id",
    CompletionId = "completion_id",
    Credits = "credits",
    Addr = "addr",
    Port = "port",
    Rc = "rc",
    Version = "version",
    Progname = "progname",
    Procname = "procname",
    Vers = "vers",
    Proc = "proc",
    Service = "service",
    Procedure = "procedure",
    InlineSend = "inline_send",
    InlineRecv = "inline_recv",
    InvRkey = "inv_rkey",
    Sqecount = "sqecount",
    Status = "status",
    /// Bytes of a completion (Linux 6.x).
    TotalBytes = "totalbytes",
    /// Bytes of a receive completion.
    Received = "received",
    /// Bytes of a completion (Linux 5.10).
    ByteLen = "byte_len",
    CmId = "cm_id",
    SrcAddr = "srcaddr",
    DstAddr = "dstaddr",
    Event = "event",
    QpNum = "qp_num",
    LocalId = "local_id",
    RemoteId = "remote_id",
    LocalQpn = "local_qpn",
    RemoteQpn = "remote_qpn",
    /// `rpc_stats_latency`: task start to transmission, µs.
    Backlog = "backlog",
    /// `rpc_stats_latency`: transmission to reply, µs.
    Rtt = "rtt",
    /// `rpc_stats_latency`, `svc_stats_latency`: the whole RPC, µs.
    Execute = "execute",
}

/// Where each [`F`] is in one format's fields (`NONE`: not in this kernel's event).
type Slots = [u16; F::ALL.len()];
const NONE: u16 = u16::MAX;

/// A format, compiled: its row of the table and where its fields are.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The format.
    pub format: Format,
    /// Its row of [`TRACEPOINTS`](super::events::TRACEPOINTS).
    pub row: &'static Tracepoint,
    slots: Slots,
}

impl Compiled {
    /// Finds `format`'s row and its fields, once.
    pub fn new(format: &Format) -> Compiled {
        let mut slots = [NONE; F::ALL.len()];
        for (slot, f) in slots.iter_mut().zip(F::ALL) {
            if let Some(i) = format.fields.iter().position(|x| x.name == f.name()) {
                *slot = u16::try_from(i).unwrap_or(NONE);
            }
        }
        Compiled {
            format: format.clone(),
            row: row_of(&format.system, &format.name),
            slots,
        }
    }

    /// The event a record of this format (`data`, from record offset
    /// `base`) says; fields read are noted in `touched` when given.
    pub fn decode(
        &self,
        data: &[u8],
        base: usize,
        touched: Option<&RefCell<Vec<usize>>>,
    ) -> ProbeEvent {
        let r = RawRecord {
            format: &self.format,
            slots: &self.slots,
            data,
            base,
            touched,
        };
        (self.row.decode)(&r).unwrap_or(ProbeEvent::Other)
    }
}

/// A raw record paired with its compiled format: typed field access.
#[derive(Debug, Clone, Copy)]
pub struct RawRecord<'a> {
    /// The event's format.
    pub format: &'a Format,
    slots: &'a Slots,
    /// The bytes the probe copied: a span of the record.
    pub data: &'a [u8],
    /// Offset in the record of `data[0]`.
    pub base: usize,
    /// When set, every field read is noted here (by index in
    /// `format.fields`): how the copy plans learn which fields the decoder
    /// reads, so that the two cannot drift apart.
    pub touched: Option<&'a RefCell<Vec<usize>>>,
}

impl<'a> RawRecord<'a> {
    fn field(&self, f: F) -> Option<&'a Field> {
        let i = usize::from(self.slots[f as usize]);
        let field = self.format.fields.get(i)?;
        if let Some(t) = self.touched {
            t.borrow_mut().push(i);
        }
        Some(field)
    }

    /// `len` bytes at record offset `off`: `None` outside the copied span,
    /// so a field the plan left out reads as unknown, never as 0.
    fn at(&self, off: usize, len: usize) -> Option<&'a [u8]> {
        let from = off.checked_sub(self.base)?;
        self.data.get(from..from.checked_add(len)?)
    }

    /// An integer field (1, 2, 4 or 8 bytes; sign-extended when signed).
    /// `None` when the kernel has no such field or the copy was cut short.
    pub fn int(&self, f: F) -> Option<i128> {
        let f = self.field(f)?;
        if f.array || f.data_loc {
            return None;
        }
        let b = self.at(f.offset, f.size)?;
        let v = match f.size {
            1 => {
                if f.signed {
                    i128::from(b[0] as i8)
                } else {
                    i128::from(b[0])
                }
            }
            2 => {
                let a = [b[0], b[1]];
                if f.signed {
                    i128::from(i16::from_ne_bytes(a))
                } else {
                    i128::from(u16::from_ne_bytes(a))
                }
            }
            4 => {
                let a = [b[0], b[1], b[2], b[3]];
                if f.signed {
                    i128::from(i32::from_ne_bytes(a))
                } else {
                    i128::from(u32::from_ne_bytes(a))
                }
            }
            8 => {
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                if f.signed {
                    i128::from(i64::from_ne_bytes(a))
                } else {
                    i128::from(u64::from_ne_bytes(a))
                }
            }
            _ => return None,
        };
        Some(v)
    }

    /// An unsigned field as u32 (values that do not fit give `None`).
    pub fn u32(&self, f: F) -> Option<u32> {
        self.int(f).and_then(|v| u32::try_from(v).ok())
    }

    /// An unsigned field as u64.
    pub fn u64(&self, f: F) -> Option<u64> {
        self.int(f).and_then(|v| u64::try_from(v).ok())
    }

    /// A signed field as i64.
    pub fn i64(&self, f: F) -> Option<i64> {
        self.int(f).and_then(|v| i64::try_from(v).ok())
    }

    /// The bytes of a fixed array or a `__data_loc` array.
    pub fn bytes(&self, f: F) -> Option<&'a [u8]> {
        let f = self.field(f)?;
        if f.data_loc {
            let b = self.at(f.offset, 4)?;
            let loc = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
            let off = (loc & 0xffff) as usize;
            let len = (loc >> 16) as usize;
            // `__rel_loc` offsets count from the end of the field itself.
            let off = if f.ctype.starts_with("__rel_loc") {
                f.offset + 4 + off
            } else {
                off
            };
            return self.at(off, len);
        }
        self.at(f.offset, f.size)
    }

    /// A string field (fixed `char[]` or `__data_loc char[]`), up to its NUL.
    pub fn string(&self, f: F) -> Option<String> {
        let b = self.bytes(f)?;
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        Some(String::from_utf8_lossy(&b[..end]).into_owned())
    }

    /// A `struct sockaddr_storage`-style byte array (AF_INET or AF_INET6).
    pub fn sockaddr(&self, f: F) -> Option<SocketAddr> {
        parse_sockaddr(self.bytes(f)?)
    }

    /// The RPC task a client event names.
    pub fn task(&self) -> Option<TaskKey> {
        Some(TaskKey {
            task_id: self.u32(F::TaskId)?,
            client_id: self.u32(F::ClientId)?,
        })
    }

    /// The completion a server event names.
    pub fn cid(&self) -> Option<Cid> {
        Some(Cid {
            cq_id: self.u32(F::CqId)?,
            cid: i32::try_from(self.int(F::CompletionId)?).ok()?,
        })
    }

    /// A chunk segment: handle, length, offset.
    pub fn seg(&self) -> Option<(u32, u32, u64)> {
        Some((
            self.u32(F::Handle)?,
            self.u32(F::Length)?,
            self.u64(F::Offset)?,
        ))
    }
}

/// `struct sockaddr_in` / `sockaddr_in6` as the kernel stores them.
pub fn parse_sockaddr(b: &[u8]) -> Option<SocketAddr> {
    let family = u16::from_ne_bytes([*b.first()?, *b.get(1)?]);
    let port = u16::from_be_bytes([*b.get(2)?, *b.get(3)?]);
    match family {
        2 => {
            let a = b.get(4..8)?;
            Some(SocketAddr::new(
                IpAddr::V4(Ipv4Addr::new(a[0], a[1], a[2], a[3])),
                port,
            ))
        }
        10 => {
            let a: [u8; 16] = b.get(8..24)?.try_into().ok()?;
            let v6 = Ipv6Addr::from(a);
            let ip = v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4);
            Some(SocketAddr::new(ip, port))
        }
        _ => None,
    }
}

/// Why a record could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// Shorter than its header or its stated length.
    Truncated {
        /// Bytes present.
        len: usize,
    },
    /// A header version this analyzer does not know.
    Version(u8),
    /// An unknown record kind.
    Kind(u8),
    /// A tracepoint id with no format loaded.
    UnknownEvent(u16),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Truncated { len } => write!(f, "probe record: truncated at {len} bytes"),
            DecodeError::Version(v) => {
                write!(f, "probe record: version {v}, expected {RECORD_VERSION}")
            }
            DecodeError::Kind(k) => write!(f, "probe record: unknown kind {k}"),
            DecodeError::UnknownEvent(id) => write!(f, "probe record: no format for event id {id}"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Turns raw ring-buffer records into [`Probe`]s.
#[derive(Debug, Clone)]
pub struct Decoder {
    formats: FormatSet,
    compiled: Vec<Compiled>,
    /// Event id → index in `compiled` (`u32::MAX`: no format).
    by_id: Vec<u32>,
    /// CLOCK_REALTIME − CLOCK_MONOTONIC, ns.
    clock_offset_ns: i64,
    seq: u64,
    /// Records per compiled format, then the kprobes' (the last entry).
    counts: Vec<u64>,
}

impl Decoder {
    /// A decoder over `formats`, with the realtime − monotonic offset:
    /// each format compiled here, once.
    pub fn new(formats: FormatSet, clock_offset_ns: i64) -> Decoder {
        let compiled: Vec<Compiled> = formats.sorted().into_iter().map(Compiled::new).collect();
        let top = compiled.iter().map(|c| usize::from(c.format.id)).max();
        let mut by_id = vec![u32::MAX; top.map_or(0, |t| t + 1)];
        for (i, c) in compiled.iter().enumerate() {
            by_id[usize::from(c.format.id)] = i as u32;
        }
        let counts = vec![0; compiled.len() + 1];
        Decoder {
            formats,
            compiled,
            by_id,
            clock_offset_ns,
            seq: 0,
            counts,
        }
    }

    /// The formats.
    pub fn formats(&self) -> &FormatSet {
        &self.formats
    }

    /// Records decoded per event name (for the status line and tests);
    /// the kprobes' as `kprobe_private_data`.
    pub fn counts(&self) -> BTreeMap<String, u64> {
        let mut by_name = BTreeMap::new();
        for (c, n) in self.compiled.iter().zip(&self.counts) {
            if *n > 0 {
                *by_name.entry(c.format.name.clone()).or_default() += n;
            }
        }
        if let Some(&n) = self.counts.last().filter(|n| **n > 0) {
            by_name.insert("kprobe_private_data".to_string(), n);
        }
        by_name
    }

    /// Decodes one record as the ring buffer delivered it.
    ///
    /// # Errors
    /// Short records, unknown versions or kinds, and event ids without a format.
    pub fn decode(&mut self, raw: &[u8]) -> Result<Probe, DecodeError> {
        let h = RecordHeader::from_bytes(raw).ok_or(DecodeError::Truncated { len: raw.len() })?;
        if h.version != RECORD_VERSION {
            return Err(DecodeError::Version(h.version));
        }
        let body = raw.get(HEADER_LEN..).unwrap_or(&[]);
        let data = body.get(..usize::from(h.len)).unwrap_or(body);
        self.seq += 1;
        let ts = i128::from(h.ts_ns) + i128::from(self.clock_offset_ns);
        let meta = ProbeMeta {
            seq: self.seq,
            ts_ns: u64::try_from(ts.max(0)).unwrap_or(u64::MAX),
            cpu: h.cpu,
            tid: h.tid(),
        };
        let event = match RecordKind::from_u8(h.kind) {
            Some(RecordKind::Tracepoint) => {
                let i = self
                    .by_id
                    .get(usize::from(h.event_id))
                    .map(|&i| i as usize)
                    .filter(|&i| i < self.compiled.len())
                    .ok_or(DecodeError::UnknownEvent(h.event_id))?;
                self.counts[i] += 1;
                self.compiled[i].decode(data, usize::from(h.base), None)
            }
            Some(RecordKind::Kprobe) => {
                let which = if h.event_id == KprobeId::Accept as u16 {
                    KprobeId::Accept
                } else {
                    KprobeId::Connect
                };
                if let Some(n) = self.counts.last_mut() {
                    *n += 1;
                }
                ProbeEvent::PrivateData {
                    which,
                    bytes: data.to_vec(),
                }
            }
            None => return Err(DecodeError::Kind(h.kind)),
        };
        Ok(Probe { meta, event })
    }
}
