//! A probe record as a dump's custom block holds it, and read back.
//!
//! The text is `cpu C tid T: EVENT`, EVENT the decoded event as Rust's
//! `Debug` writes it (`Marshal { task: TaskKey { task_id: 7, client_id: 1 },
//! xid: 305419896, .. }`): a person reading the block sees every field by
//! name, and [`parse`] turns it back into the [`Probe`] the engine merges,
//! so `report DUMP.pcapng` shows the kernel's view as `live --probes` did.
//! A field a later version adds to an event is read as unknown (`None`)
//! when an older dump lacks it; a record this version cannot read is
//! counted and said, never guessed.

use std::net::SocketAddr;

use ebpf_common::KprobeId;

use crate::engine::kernel::event::{
    ChunkType, Cid, Completion, ConnectStep, Probe, ProbeEvent, ProbeMeta, SegKind, TaskKey,
};

/// The text of `p` for a dump (its time and sequence number are the
/// block's own fields).
pub fn format(p: &Probe) -> String {
    format!("cpu {} tid {}: {:?}", p.meta.cpu, p.meta.tid, p.event)
}

/// A record's text read back, at `ts_ns` with sequence number `seq`; the
/// error says what could not be read.
pub fn parse(text: &str, ts_ns: u64, seq: u64) -> Result<Probe, String> {
    let (cpu, tid, event) = split_prefix(text)?;
    let mut p = Parser {
        s: event,
        at: 0,
        depth: 0,
    };
    let v = p.value()?;
    p.skip_ws();
    if p.at != p.s.len() {
        return Err(format!("unexpected text at byte {}: {:?}", p.at, p.rest()));
    }
    Ok(Probe {
        meta: ProbeMeta {
            seq,
            ts_ns,
            cpu,
            tid,
        },
        event: event_of(&v)?,
    })
}

fn split_prefix(text: &str) -> Result<(u32, u32, &str), String> {
    let err = || format!("not `cpu C tid T: EVENT`: {:?}", cut(text));
    let rest = text.strip_prefix("cpu ").ok_or_else(err)?;
    let (cpu, rest) = rest.split_once(" tid ").ok_or_else(err)?;
    let (tid, event) = rest.split_once(": ").ok_or_else(err)?;
    Ok((
        cpu.parse().map_err(|_| err())?,
        tid.parse().map_err(|_| err())?,
        event,
    ))
}

fn cut(s: &str) -> &str {
    let mut end = s.len().min(80);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// `Debug` text, as a tree.
#[derive(Debug, Clone, PartialEq)]
enum V {
    /// A number, an address, or a unit variant (`None`, `Write`).
    Atom(String),
    /// A quoted string, unescaped.
    Str(String),
    /// `Name { field: value, .. }`.
    Struct(String, Vec<(String, V)>),
    /// `Name(value, ..)`.
    Tuple(String, Vec<V>),
    /// `[value, ..]`.
    List(Vec<V>),
}

struct Parser<'a> {
    s: &'a str,
    at: usize,
    /// How deep `value` is nested: a dump is input like any other, and
    /// `[[[[…` must be an error, not a stack overflow.
    depth: usize,
}

/// Deeper than any record the recorder writes (a struct in a list in a
/// struct), far below what the stack holds.
const MAX_DEPTH: usize = 32;

impl<'a> Parser<'a> {
    fn rest(&self) -> &'a str {
        cut(&self.s[self.at..])
    }

    fn skip_ws(&mut self) {
        let rest = &self.s[self.at..];
        self.at += rest.len() - rest.trim_start().len();
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_ws();
        if self.s[self.at..].starts_with(c) {
            self.at += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!(
                "expected {c:?} at byte {}: {:?}",
                self.at,
                self.rest()
            ))
        }
    }

    /// An identifier, number or address: up to a delimiter.
    fn atom(&mut self) -> Result<&'a str, String> {
        self.skip_ws();
        let rest = &self.s[self.at..];
        let mut end = 0;
        let mut bracket = 0i32;
        for (i, c) in rest.char_indices() {
            match c {
                '[' => bracket += 1,
                ']' if bracket > 0 => bracket -= 1,
                ',' | '(' | ')' | '{' | '}' | ']' | ' ' if bracket == 0 => break,
                _ => {}
            }
            end = i + c.len_utf8();
        }
        if end == 0 {
            return Err(format!(
                "expected a value at byte {}: {:?}",
                self.at,
                self.rest()
            ));
        }
        self.at += end;
        Ok(&rest[..end])
    }

    fn string(&mut self) -> Result<String, String> {
        self.expect('"')?;
        let mut out = String::new();
        let mut chars = self.s[self.at..].char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.at += i + 1;
                    return Ok(out);
                }
                '\\' => match chars.next().map(|(_, c)| c) {
                    Some('n') => out.push('\n'),
                    Some('r') => out.push('\r'),
                    Some('t') => out.push('\t'),
                    Some('0') => out.push('\0'),
                    Some(c @ ('\\' | '"' | '\'')) => out.push(c),
                    Some('u') => {
                        let hex: String = chars
                            .by_ref()
                            .map(|(_, c)| c)
                            .skip(1)
                            .take_while(|c| *c != '}')
                            .collect();
                        let c = u32::from_str_radix(&hex, 16)
                            .ok()
                            .and_then(char::from_u32)
                            .ok_or_else(|| format!("bad escape \\u{{{hex}}}"))?;
                        out.push(c);
                    }
                    other => return Err(format!("bad escape \\{other:?} in a string")),
                },
                c => out.push(c),
            }
        }
        Err("a string that does not end".into())
    }

    fn value(&mut self) -> Result<V, String> {
        if self.depth >= MAX_DEPTH {
            return Err(format!(
                "values nested deeper than {MAX_DEPTH} levels at byte {}",
                self.at
            ));
        }
        self.depth += 1;
        let v = self.value_at_depth();
        self.depth -= 1;
        v
    }

    fn value_at_depth(&mut self) -> Result<V, String> {
        self.skip_ws();
        let rest = &self.s[self.at..];
        if rest.starts_with('"') {
            return self.string().map(V::Str);
        }
        // A list, unless it is an IPv6 socket address (`[::1]:20049`).
        if rest.starts_with('[') && !rest.split(']').nth(1).is_some_and(|t| t.starts_with(':')) {
            self.at += 1;
            let mut items = Vec::new();
            while !self.eat(']') {
                items.push(self.value()?);
                if !self.eat(',') {
                    self.expect(']')?;
                    break;
                }
            }
            return Ok(V::List(items));
        }
        let name = self.atom()?.to_string();
        if self.eat('{') {
            let mut fields = Vec::new();
            while !self.eat('}') {
                let field = self.atom()?.trim_end_matches(':').to_string();
                self.eat(':');
                fields.push((field, self.value()?));
                if !self.eat(',') {
                    self.expect('}')?;
                    break;
                }
            }
            return Ok(V::Struct(name, fields));
        }
        if self.eat('(') {
            let mut items = Vec::new();
            while !self.eat(')') {
                items.push(self.value()?);
                if !self.eat(',') {
                    self.expect(')')?;
                    break;
                }
            }
            return Ok(V::Tuple(name, items));
        }
        Ok(V::Atom(name))
    }
}

/// A type read from a [`V`].
trait FromV: Sized {
    fn from_v(v: &V) -> Result<Self, String>;
    /// What a field absent from the text reads as (an older dump).
    fn absent() -> Option<Self> {
        None
    }
}

fn atom(v: &V) -> Result<&str, String> {
    match v {
        V::Atom(a) => Ok(a),
        other => Err(format!("expected a number or name, found {other:?}")),
    }
}

macro_rules! from_str_types {
    ($($t:ty),*) => {$(
        impl FromV for $t {
            fn from_v(v: &V) -> Result<Self, String> {
                let a = atom(v)?;
                a.parse().map_err(|_| format!("{a:?} is not a {}", stringify!($t)))
            }
        }
    )*};
}
from_str_types!(u32, u64, i32, i64, u8, SocketAddr);

impl FromV for String {
    fn from_v(v: &V) -> Result<Self, String> {
        match v {
            V::Str(s) => Ok(s.clone()),
            other => Err(format!("expected a string, found {other:?}")),
        }
    }
}

impl<T: FromV> FromV for Option<T> {
    fn from_v(v: &V) -> Result<Self, String> {
        match v {
            V::Atom(a) if a == "None" => Ok(None),
            V::Tuple(n, items) if n == "Some" && items.len() == 1 => T::from_v(&items[0]).map(Some),
            other => Err(format!("expected Some(..) or None, found {other:?}")),
        }
    }
    fn absent() -> Option<Self> {
        Some(None)
    }
}

impl<T: FromV> FromV for Vec<T> {
    fn from_v(v: &V) -> Result<Self, String> {
        match v {
            V::List(items) => items.iter().map(T::from_v).collect(),
            other => Err(format!("expected a list, found {other:?}")),
        }
    }
}

/// A struct's or variant's named fields.
struct Fields<'v>(&'v [(String, V)]);

impl Fields<'_> {
    fn get<T: FromV>(&self, name: &str) -> Result<T, String> {
        match self.0.iter().find(|(f, _)| f == name) {
            Some((_, v)) => T::from_v(v).map_err(|e| format!("{name}: {e}")),
            None => T::absent().ok_or_else(|| format!("no field {name}")),
        }
    }
}

fn fields<'v>(v: &'v V, want: &str) -> Result<Fields<'v>, String> {
    match v {
        V::Struct(n, f) if n == want => Ok(Fields(f)),
        other => Err(format!("expected {want} {{ .. }}, found {other:?}")),
    }
}

impl FromV for TaskKey {
    fn from_v(v: &V) -> Result<Self, String> {
        let f = fields(v, "TaskKey")?;
        Ok(TaskKey {
            task_id: f.get("task_id")?,
            client_id: f.get("client_id")?,
        })
    }
}

impl FromV for Cid {
    fn from_v(v: &V) -> Result<Self, String> {
        let f = fields(v, "Cid")?;
        Ok(Cid {
            cq_id: f.get("cq_id")?,
            cid: f.get("cid")?,
        })
    }
}

impl FromV for Completion {
    fn from_v(v: &V) -> Result<Self, String> {
        let f = fields(v, "Completion")?;
        Ok(Completion {
            cid: f.get("cid")?,
            status: f.get("status")?,
            bytes: f.get("bytes")?,
        })
    }
}

impl FromV for SegKind {
    fn from_v(v: &V) -> Result<Self, String> {
        match v {
            V::Atom(a) if a == "Write" => Ok(SegKind::Write),
            V::Atom(a) if a == "Reply" => Ok(SegKind::Reply),
            V::Struct(n, f) if n == "Read" => Ok(SegKind::Read {
                position: Fields(f).get("position")?,
            }),
            other => Err(format!("not a segment kind: {other:?}")),
        }
    }
}

impl FromV for ChunkType {
    fn from_v(v: &V) -> Result<Self, String> {
        Ok(match v {
            V::Tuple(n, items) if n == "Unknown" && items.len() == 1 => {
                ChunkType::Unknown(i64::from_v(&items[0])?)
            }
            V::Atom(a) => match a.as_str() {
                "Inline" => ChunkType::Inline,
                "Pullup" => ChunkType::Pullup,
                "Mapped" => ChunkType::Mapped,
                "ReadList" => ChunkType::ReadList,
                "LongCall" => ChunkType::LongCall,
                "WriteList" => ChunkType::WriteList,
                "ReplyChunk" => ChunkType::ReplyChunk,
                _ => return Err(format!("not a chunk type: {a}")),
            },
            other => return Err(format!("not a chunk type: {other:?}")),
        })
    }
}

impl FromV for ConnectStep {
    fn from_v(v: &V) -> Result<Self, String> {
        Ok(match atom(v)? {
            "Requested" => ConnectStep::Requested,
            "Connected" => ConnectStep::Connected,
            "Disconnected" => ConnectStep::Disconnected,
            "Closed" => ConnectStep::Closed,
            a => return Err(format!("not a connection step: {a}")),
        })
    }
}

impl FromV for KprobeId {
    fn from_v(v: &V) -> Result<Self, String> {
        Ok(match atom(v)? {
            "Connect" => KprobeId::Connect,
            "Accept" => KprobeId::Accept,
            a => return Err(format!("not a kprobe: {a}")),
        })
    }
}

/// `ProbeEvent::$name { field, .. }` from the text's fields of the same names.
macro_rules! named {
    ($f:expr, $name:ident { $($field:ident),* }) => {
        ProbeEvent::$name { $($field: $f.get(stringify!($field))?),* }
    };
}

fn event_of(v: &V) -> Result<ProbeEvent, String> {
    let completion = |name: &str, items: &[V]| -> Result<Completion, String> {
        match items {
            [c] => Completion::from_v(c),
            _ => Err(format!("{name}(..) holds one completion")),
        }
    };
    let f = match v {
        V::Atom(a) if a == "Other" => return Ok(ProbeEvent::Other),
        V::Tuple(n, items) => {
            let c = completion(n, items)?;
            return match n.as_str() {
                "RecvCompleted" => Ok(ProbeEvent::RecvCompleted(c)),
                "ReadCompleted" => Ok(ProbeEvent::ReadCompleted(c)),
                "WriteCompleted" => Ok(ProbeEvent::WriteCompleted(c)),
                "Completed" => Ok(ProbeEvent::Completed(c)),
                _ => Err(format!("not a probe event: {n}(..)")),
            };
        }
        V::Struct(_, f) => Fields(f),
        other => return Err(format!("not a probe event: {other:?}")),
    };
    let V::Struct(name, _) = v else {
        unreachable!("matched above")
    };
    let e = match name.as_str() {
        "Marshal" => named!(
            f,
            Marshal {
                task,
                xid,
                rtype,
                wtype,
                hdrlen,
                xdrlen
            }
        ),
        "MarshalFailed" => named!(f, MarshalFailed { task, xid, ret }),
        "ClientChunk" => named!(
            f,
            ClientChunk {
                task,
                kind,
                handle,
                length,
                offset
            }
        ),
        "ClientPostSend" => named!(f, ClientPostSend { task, cid }),
        "Reply" => named!(f, Reply { task, xid, credits }),
        "DecodeSeg" => named!(
            f,
            DecodeSeg {
                handle,
                length,
                offset
            }
        ),
        "RemoteInv" => named!(f, RemoteInv { task, handle }),
        "LocalInv" => named!(f, LocalInv { task, handle }),
        "ClientConnect" => named!(f, ClientConnect { step, peer, rc }),
        "InlineThresh" => named!(f, InlineThresh { send, recv }),
        "DecodeRqst" => named!(
            f,
            DecodeRqst {
                cid,
                xid,
                vers,
                proc,
                credits,
                hdrlen
            }
        ),
        "ServerDecodeSeg" => named!(
            f,
            ServerDecodeSeg {
                cid,
                kind,
                handle,
                length,
                offset
            }
        ),
        "EncodeWseg" => named!(
            f,
            EncodeWseg {
                cid,
                handle,
                length,
                offset
            }
        ),
        "ServerPostSend" => named!(f, ServerPostSend { cid, inv_rkey }),
        "PostChunk" => named!(
            f,
            PostChunk {
                kind,
                cid,
                sqecount
            }
        ),
        "Cm" => named!(
            f,
            Cm {
                cm_id,
                src,
                dst,
                cm_event,
                status,
                qpn
            }
        ),
        "IbCm" => named!(
            f,
            IbCm {
                local_id,
                remote_id,
                local_qpn,
                remote_qpn
            }
        ),
        "RpcRequest" => named!(
            f,
            RpcRequest {
                task,
                version,
                program,
                procedure
            }
        ),
        "SvcProcess" => named!(
            f,
            SvcProcess {
                xid,
                version,
                proc,
                service,
                procedure
            }
        ),
        "RpcStats" => named!(
            f,
            RpcStats {
                task,
                xid,
                version,
                program,
                procedure,
                backlog_us,
                rtt_us,
                execute_us
            }
        ),
        "SvcStats" => named!(f, SvcStats { xid, execute_us }),
        "PrivateData" => named!(f, PrivateData { which, bytes }),
        "Error" => named!(f, Error { status }),
        n => return Err(format!("not a probe event this version reads: {n}")),
    };
    Ok(e)
}

#[cfg(test)]
mod tests;
