//! Presentation: ladder steps and call headers put into words. The engine
//! keeps numbers and bytes; these run only when a front end shows a
//! transaction (the TUI's detail screen, the JSON views).

use std::borrow::Cow;

use rdma_dissectors::rpcrdma::{self, RpcRdmaHeader};
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Serialize, Serializer};

use crate::engine::kernel::event::SegKind;
use crate::engine::{CallHeader, StepWhat};

/// A ladder step in words (`RDMA READ request rkey 0x1234 va 0x... len 4096`).
#[derive(Debug, Clone, Copy)]
pub struct StepWords<'a>(pub &'a StepWhat);

/// The call's RPC-over-RDMA header in words: procedure, credits, chunk lists.
#[derive(Debug, Clone, Copy)]
pub struct HeaderWords<'a>(pub &'a CallHeader);

impl std::fmt::Display for StepWords<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            StepWhat::CallSend { bytes, invalidate } => {
                write!(f, "call Send {bytes} bytes")?;
                if let Some(k) = invalidate {
                    write!(f, " with Invalidate rkey {k:#x}")?;
                }
                Ok(())
            }
            StepWhat::ReplySend {
                bytes,
                invalidate: Some(k),
            } => write!(f, "reply Send with Invalidate rkey {k:#x}, {bytes} bytes"),
            StepWhat::ReplySend {
                bytes,
                invalidate: None,
            } => write!(f, "reply Send {bytes} bytes"),
            StepWhat::SentAgain { from, on } => {
                write!(f, "sent again on {on} ({from} was torn down)")
            }
            StepWhat::RdmaWrite { rkey, va, len } => {
                write!(f, "RDMA WRITE rkey {rkey:#x} va {va:#x} len {len}")
            }
            StepWhat::RdmaReadRequest { rkey, va, len } => {
                write!(f, "RDMA READ request rkey {rkey:#x} va {va:#x} len {len}")
            }
            StepWhat::RdmaReadResponseComplete { rkey } => {
                write!(f, "RDMA READ response complete rkey {rkey:#x}")
            }
            StepWhat::Marshal {
                xid,
                rtype,
                wtype,
                segments,
            } => write!(
                f,
                "marshal xid {xid:#010x} rtype {} wtype {}, {segments} segments",
                rtype.name(),
                wtype.name()
            ),
            StepWhat::PostSend { invalidate: None } => f.write_str("post_send"),
            StepWhat::PostSend {
                invalidate: Some(k),
            } => write!(f, "post_send with invalidate rkey {k:#x}"),
            StepWhat::Reply { credits } => write!(f, "reply credits {credits}"),
            StepWhat::RemoteInvalidation { rkey } => {
                write!(f, "remote invalidation of rkey {rkey:#x}")
            }
            StepWhat::LocalInvalidation { rkey } => {
                write!(f, "local invalidation of rkey {rkey:#x}")
            }
            StepWhat::DecodeRqst {
                xid,
                vers,
                proc,
                credits,
            } => write!(
                f,
                "decode_rqst xid {xid:#010x} vers {vers} proc {proc} credits {credits}"
            ),
            StepWhat::PostChunk {
                kind,
                work_requests,
            } => {
                let what = match kind {
                    SegKind::Read { .. } => "RDMA Read",
                    SegKind::Write => "RDMA Write (write chunk)",
                    SegKind::Reply => "RDMA Write (reply chunk)",
                };
                write!(f, "post {what}")?;
                if let Some(n) = work_requests {
                    write!(f, " ({n} WRs)")?;
                }
                Ok(())
            }
            StepWhat::ChunkDone { read, bytes } => {
                let event = if *read {
                    "svcrdma_wc_read"
                } else {
                    "svcrdma_wc_write"
                };
                write!(f, "{event} done")?;
                if let Some(b) = bytes {
                    write!(f, " {b} bytes")?;
                }
                Ok(())
            }
        }
    }
}

impl Serialize for StepWords<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl JsonSchema for StepWords<'_> {
    fn schema_name() -> Cow<'static, str> {
        "StepWhat".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "What a ladder step was, in words (`RDMA READ request rkey 0x1234 va 0x... len 4096`).",
            "type": "string"
        })
    }
}

impl std::fmt::Display for HeaderWords<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            CallHeader::Wire(b) => match RpcRdmaHeader::parse(b) {
                Ok((h, _)) => describe_header(&h, f),
                // Kept only after it parsed once; say so rather than guess.
                Err(e) => write!(f, "(header no longer decodes: {e})"),
            },
            CallHeader::Text(s) => f.write_str(s),
        }
    }
}

impl Serialize for HeaderWords<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl JsonSchema for HeaderWords<'_> {
    fn schema_name() -> Cow<'static, str> {
        "CallHeader".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "The call's RPC-over-RDMA header in words: procedure, credits, chunk lists.",
            "type": "string"
        })
    }
}

/// The call's RPC-over-RDMA header in a line.
fn describe_header(h: &RpcRdmaHeader<'_>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    write!(
        f,
        "{} xid {:#010x} vers {} credits {}",
        h.proc.name().unwrap_or("?"),
        h.xid.0,
        h.vers,
        h.credits
    )?;
    if let Some(c) = h.chunks() {
        for r in c.read_list() {
            write!(f, "; read pos {} ", r.position)?;
            write_segment(f, &r.segment)?;
        }
        for (i, w) in c.write_list().enumerate() {
            write!(f, "; write[{i}]")?;
            for seg in w.segments() {
                f.write_str(" ")?;
                write_segment(f, &seg)?;
            }
        }
        if let Some(r) = c.reply_chunk() {
            f.write_str("; reply")?;
            for seg in r.segments() {
                f.write_str(" ")?;
                write_segment(f, &seg)?;
            }
        }
    }
    Ok(())
}

/// A segment as `handle:length@offset`, in hex but the length.
fn write_segment(f: &mut std::fmt::Formatter<'_>, s: &rpcrdma::Segment) -> std::fmt::Result {
    write!(f, "{:#x}:{}@{:#x}", s.handle, s.length, s.offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::kernel::event::ChunkType;

    /// The kernel side's steps read as they did when they were formatted
    /// as they happened (live JSON and the TUI show these words).
    #[test]
    fn kernel_steps_in_words() {
        let cases = [
            (
                StepWhat::Marshal {
                    xid: 0x9bc0454e,
                    rtype: ChunkType::Pullup,
                    wtype: ChunkType::WriteList,
                    segments: 2,
                },
                "marshal xid 0x9bc0454e rtype rpcrdma_noch_pullup wtype rpcrdma_writech, 2 segments",
            ),
            (StepWhat::PostSend { invalidate: None }, "post_send"),
            (
                StepWhat::PostSend {
                    invalidate: Some(0x18d7),
                },
                "post_send with invalidate rkey 0x18d7",
            ),
            (StepWhat::Reply { credits: 128 }, "reply credits 128"),
            (
                StepWhat::RemoteInvalidation { rkey: 0xc0b },
                "remote invalidation of rkey 0xc0b",
            ),
            (
                StepWhat::LocalInvalidation { rkey: 0xc0b },
                "local invalidation of rkey 0xc0b",
            ),
            (
                StepWhat::DecodeRqst {
                    xid: 0xa8c0454e,
                    vers: 1,
                    proc: 0,
                    credits: 128,
                },
                "decode_rqst xid 0xa8c0454e vers 1 proc 0 credits 128",
            ),
            (
                StepWhat::PostChunk {
                    kind: SegKind::Read { position: 0 },
                    work_requests: Some(14),
                },
                "post RDMA Read (14 WRs)",
            ),
            (
                StepWhat::PostChunk {
                    kind: SegKind::Write,
                    work_requests: None,
                },
                "post RDMA Write (write chunk)",
            ),
            (
                StepWhat::PostChunk {
                    kind: SegKind::Reply,
                    work_requests: Some(1),
                },
                "post RDMA Write (reply chunk) (1 WRs)",
            ),
            (
                StepWhat::ChunkDone {
                    read: true,
                    bytes: Some(131072),
                },
                "svcrdma_wc_read done 131072 bytes",
            ),
            (
                StepWhat::ChunkDone {
                    read: false,
                    bytes: None,
                },
                "svcrdma_wc_write done",
            ),
        ];
        for (step, words) in cases {
            assert_eq!(StepWords(&step).to_string(), words, "{step:?}");
        }
    }
}
