//! Ring records into [`ProbeEvent`]s, by the running kernel's formats.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use ebpf_common::{KprobeId, RecordHeader, RecordKind, HEADER_LEN, RECORD_VERSION};

use super::format::{Field, Format, FormatSet};
// The decoded events are the engine's input types (`Event::Probe`); they
// live there so the engine stays free of any kernel or I/O code.
use crate::engine::kernel::event::{
    ChunkType, Cid, Completion, ConnectStep, Probe, ProbeEvent, ProbeMeta, SegKind, TaskKey,
};

/// A raw record paired with its format: typed field access by name.
#[derive(Debug, Clone, Copy)]
pub struct RawRecord<'a> {
    /// The event's format.
    pub format: &'a Format,
    /// The bytes the probe copied: a span of the record.
    pub data: &'a [u8],
    /// Offset in the record of `data[0]`.
    pub base: usize,
    /// When set, every field read is noted here (by index in
    /// `format.fields`): how the copy plans learn which fields the decoder
    /// reads, so that the two cannot drift apart.
    pub touched: Option<&'a std::cell::RefCell<Vec<usize>>>,
}

impl<'a> RawRecord<'a> {
    /// A whole record, from offset 0.
    pub fn new(format: &'a Format, data: &'a [u8]) -> RawRecord<'a> {
        RawRecord {
            format,
            data,
            base: 0,
            touched: None,
        }
    }

    fn field(&self, name: &str) -> Option<&'a Field> {
        let i = self.format.fields.iter().position(|f| f.name == name)?;
        if let Some(t) = self.touched {
            t.borrow_mut().push(i);
        }
        self.format.fields.get(i)
    }

    /// `len` bytes at record offset `off`: `None` outside the copied span,
    /// so a field the plan left out reads as unknown, never as 0.
    fn at(&self, off: usize, len: usize) -> Option<&'a [u8]> {
        let from = off.checked_sub(self.base)?;
        self.data.get(from..from.checked_add(len)?)
    }

    /// An integer field (1, 2, 4 or 8 bytes; sign-extended when signed).
    /// `None` when the kernel has no such field or the copy was cut short.
    pub fn int(&self, name: &str) -> Option<i128> {
        let f = self.field(name)?;
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
    pub fn u32(&self, name: &str) -> Option<u32> {
        self.int(name).and_then(|v| u32::try_from(v).ok())
    }

    /// An unsigned field as u64.
    pub fn u64(&self, name: &str) -> Option<u64> {
        self.int(name).and_then(|v| u64::try_from(v).ok())
    }

    /// A signed field as i64.
    pub fn i64(&self, name: &str) -> Option<i64> {
        self.int(name).and_then(|v| i64::try_from(v).ok())
    }

    /// The bytes of a fixed array or a `__data_loc` array.
    pub fn bytes(&self, name: &str) -> Option<&'a [u8]> {
        let f = self.field(name)?;
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
    pub fn string(&self, name: &str) -> Option<String> {
        let b = self.bytes(name)?;
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        Some(String::from_utf8_lossy(&b[..end]).into_owned())
    }

    /// A `struct sockaddr_storage`-style byte array (AF_INET or AF_INET6).
    pub fn sockaddr(&self, name: &str) -> Option<SocketAddr> {
        parse_sockaddr(self.bytes(name)?)
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
    /// CLOCK_REALTIME − CLOCK_MONOTONIC, ns.
    clock_offset_ns: i64,
    seq: u64,
    /// Records per event name (for the status line and tests).
    pub counts: BTreeMap<String, u64>,
}

impl Decoder {
    /// A decoder over `formats`, with the realtime − monotonic offset.
    pub fn new(formats: FormatSet, clock_offset_ns: i64) -> Decoder {
        Decoder {
            formats,
            clock_offset_ns,
            seq: 0,
            counts: BTreeMap::new(),
        }
    }

    /// The formats.
    pub fn formats(&self) -> &FormatSet {
        &self.formats
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
                let format = self
                    .formats
                    .get(h.event_id)
                    .ok_or(DecodeError::UnknownEvent(h.event_id))?;
                let ev = decode_tracepoint(RawRecord {
                    base: usize::from(h.base),
                    ..RawRecord::new(format, data)
                });
                *self.counts.entry(format.name.clone()).or_default() += 1;
                ev
            }
            Some(RecordKind::Kprobe) => {
                let which = if h.event_id == KprobeId::Accept as u16 {
                    KprobeId::Accept
                } else {
                    KprobeId::Connect
                };
                *self.counts.entry("kprobe_private_data".into()).or_default() += 1;
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

fn task(r: &RawRecord<'_>) -> Option<TaskKey> {
    Some(TaskKey {
        task_id: r.u32("task_id")?,
        client_id: r.u32("client_id")?,
    })
}

fn cid(r: &RawRecord<'_>) -> Option<Cid> {
    Some(Cid {
        cq_id: r.u32("cq_id")?,
        cid: i32::try_from(r.int("completion_id")?).ok()?,
    })
}

/// The typed meaning of one tracepoint record, by event name and field names.
pub fn decode_tracepoint(r: RawRecord<'_>) -> ProbeEvent {
    decode_known(&r).unwrap_or(ProbeEvent::Other)
}

fn decode_known(r: &RawRecord<'_>) -> Option<ProbeEvent> {
    let name = r.format.name.as_str();
    let seg = |r: &RawRecord<'_>| -> Option<(u32, u32, u64)> {
        Some((r.u32("handle")?, r.u32("length")?, r.u64("offset")?))
    };
    Some(match name {
        "xprtrdma_marshal" => ProbeEvent::Marshal {
            task: task(r)?,
            xid: r.u32("xid")?,
            rtype: ChunkType::from_kernel(r.i64("rtype")?),
            wtype: ChunkType::from_kernel(r.i64("wtype")?),
            hdrlen: r.u32("hdrlen"),
            xdrlen: match (r.u32("headlen"), r.u32("pagelen"), r.u32("taillen")) {
                // Sizes that overflow are not sizes: unknown.
                (Some(a), Some(b), Some(c)) => a.checked_add(b).and_then(|ab| ab.checked_add(c)),
                _ => None,
            },
        },
        "xprtrdma_marshal_failed" => ProbeEvent::MarshalFailed {
            task: task(r)?,
            xid: r.u32("xid"),
            ret: r.i64("ret"),
        },
        "xprtrdma_chunk_read"
        | "xprtrdma_chunk_write"
        | "xprtrdma_chunk_reply"
        | "xprtrdma_chunk_wp" => {
            let (handle, length, offset) = seg(r)?;
            let kind = match name {
                "xprtrdma_chunk_read" => SegKind::Read {
                    position: r.u32("pos").unwrap_or(0),
                },
                "xprtrdma_chunk_reply" => SegKind::Reply,
                _ => SegKind::Write,
            };
            ProbeEvent::ClientChunk {
                task: task(r)?,
                kind,
                handle,
                length,
                offset,
            }
        }
        "xprtrdma_post_send" => ProbeEvent::ClientPostSend {
            task: task(r),
            cid: cid(r),
        },
        "xprtrdma_reply" => ProbeEvent::Reply {
            task: task(r)?,
            xid: r.u32("xid")?,
            credits: r.u32("credits")?,
        },
        "xprtrdma_decode_seg" => {
            let (handle, length, offset) = seg(r)?;
            ProbeEvent::DecodeSeg {
                handle,
                length,
                offset,
            }
        }
        "xprtrdma_mr_reminv" => ProbeEvent::RemoteInv {
            task: task(r),
            handle: r.u32("handle")?,
        },
        "xprtrdma_mr_localinv" => ProbeEvent::LocalInv {
            task: task(r),
            handle: r.u32("handle")?,
        },
        "xprtrdma_connect"
        | "xprtrdma_disconnect"
        | "xprtrdma_op_connect"
        | "xprtrdma_op_close" => {
            let peer = match (r.string("addr"), r.string("port")) {
                (Some(a), Some(p)) => Some(format!("{a}:{p}")),
                (Some(a), None) => Some(a),
                _ => None,
            };
            ProbeEvent::ClientConnect {
                step: match name {
                    "xprtrdma_op_connect" => ConnectStep::Requested,
                    "xprtrdma_connect" => ConnectStep::Connected,
                    "xprtrdma_disconnect" => ConnectStep::Disconnected,
                    _ => ConnectStep::Closed,
                },
                peer,
                rc: r.i64("rc"),
            }
        }
        "rpc_request" if r.format.system == "sunrpc" => ProbeEvent::RpcRequest {
            task: task(r)?,
            version: r.u32("version"),
            program: r.string("progname"),
            procedure: r.string("procname"),
        },
        "svc_process" if r.format.system == "sunrpc" => ProbeEvent::SvcProcess {
            xid: r.u32("xid")?,
            version: r.u32("vers"),
            proc: r.u32("proc"),
            service: r.string("service"),
            procedure: r.string("procedure"),
        },
        "xprtrdma_inline_thresh" => ProbeEvent::InlineThresh {
            send: r.u32("inline_send"),
            recv: r.u32("inline_recv"),
        },
        "svcrdma_decode_rqst" => ProbeEvent::DecodeRqst {
            cid: cid(r)?,
            xid: r.u32("xid")?,
            vers: r.u32("vers")?,
            proc: r.u32("proc")?,
            credits: r.u32("credits")?,
            hdrlen: r.u32("hdrlen"),
        },
        "svcrdma_decode_rseg" | "svcrdma_decode_wseg" => {
            let (handle, length, offset) = seg(r)?;
            let kind = if name == "svcrdma_decode_rseg" {
                SegKind::Read {
                    position: r.u32("position").unwrap_or(0),
                }
            } else {
                SegKind::Write
            };
            ProbeEvent::ServerDecodeSeg {
                cid: cid(r),
                kind,
                handle,
                length,
                offset,
            }
        }
        "svcrdma_encode_wseg" => {
            let (handle, length, offset) = seg(r)?;
            ProbeEvent::EncodeWseg {
                cid: cid(r),
                handle,
                length,
                offset,
            }
        }
        "svcrdma_post_send" => ProbeEvent::ServerPostSend {
            cid: cid(r)?,
            inv_rkey: r.u32("inv_rkey").filter(|&k| k != 0),
        },
        "svcrdma_post_read_chunk"
        | "svcrdma_post_write_chunk"
        | "svcrdma_post_reply_chunk"
        | "svcrdma_post_chunk" => ProbeEvent::PostChunk {
            kind: match name {
                "svcrdma_post_read_chunk" => Some(SegKind::Read { position: 0 }),
                "svcrdma_post_write_chunk" => Some(SegKind::Write),
                "svcrdma_post_reply_chunk" => Some(SegKind::Reply),
                _ => None,
            },
            cid: cid(r)?,
            sqecount: r.u32("sqecount"),
        },
        n if n.contains("_err")
            || n.contains("flush")
            || n.ends_with("_error")
            || n.contains("qp_error") =>
        {
            ProbeEvent::Error {
                status: r.i64("status").or_else(|| r.i64("rc")),
            }
        }
        n if n.starts_with("svcrdma_wc_") || n.starts_with("xprtrdma_wc_") => {
            let status = r.i64("status");
            if status.is_some_and(|s| s != 0) {
                ProbeEvent::Error { status }
            } else {
                let c = Completion {
                    cid: cid(r)?,
                    status,
                    bytes: r
                        .u64("totalbytes")
                        .or_else(|| r.u64("received"))
                        .or_else(|| r.u64("byte_len")),
                };
                match n {
                    "svcrdma_wc_recv" | "svcrdma_wc_receive" => ProbeEvent::RecvCompleted(c),
                    "svcrdma_wc_read" => ProbeEvent::ReadCompleted(c),
                    "svcrdma_wc_write" => ProbeEvent::WriteCompleted(c),
                    _ => ProbeEvent::Completed(c),
                }
            }
        }
        _ if r.format.system == "rdma_cma" => ProbeEvent::Cm {
            cm_id: r.u32("cm_id"),
            src: r.sockaddr("srcaddr"),
            dst: r.sockaddr("dstaddr"),
            cm_event: r.u32("event"),
            status: r.i64("status"),
            qpn: r.u32("qp_num"),
        },
        _ if r.format.system == "ib_cma" => ProbeEvent::IbCm {
            local_id: r.u32("local_id"),
            remote_id: r.u32("remote_id"),
            local_qpn: r.u32("local_qpn"),
            remote_qpn: r.u32("remote_qpn"),
        },
        _ => return None,
    })
}
