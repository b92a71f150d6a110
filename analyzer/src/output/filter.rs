//! What `--filter` selects, shared by the reports, `frames`, `live` and the
//! TUI: an expression language in the spirit of Wireshark's display filters
//! (`c1 && proc == READ && latency > 10ms`), documented in `docs/filters.md`.
//!
//! Parsing lives in `parse.rs`; this file holds the fields, the
//! records they apply to, and evaluation.

mod join;
mod parse;
pub(crate) use parse::distance;
#[cfg(test)]
mod tests;

use crate::engine::{Anomaly, Connection, Kind, Severity, Transaction};

pub use join::Join;
pub use parse::FilterError;

/// A field a filter names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// Connection number (`c3`, `conn == 3`).
    Conn,
    /// RPC XID.
    Xid,
    /// Procedure label (`NFS READ`, `NFSv4.1 COMPOUND(SEQUENCE,PUTFH,READ)`).
    Proc,
    /// A frame the record involves.
    Frame,
    /// An R_Key (handle) the transaction advertised or had invalidated.
    Rkey,
    /// Call to reply, ns.
    Latency,
    /// Bytes moved through chunks.
    Bytes,
    /// RPC reply status or NFS status.
    Status,
    /// Severity of a finding (`info` < `warning` < `error`).
    Severity,
    /// Finding kind.
    Kind,
    /// A peer's address (client or server).
    Peer,
    /// A queue pair number of the connection.
    Qpn,
    /// Seconds since the capture's first frame.
    Time,
    /// How the call or reply travelled (`inline`, `read_chunks`, ...).
    Mode,
    /// A frame's InfiniBand opcode (`SEND_ONLY`, `RDMA_WRITE_FIRST`, ...).
    Opcode,
}

/// Every field, its names (the first is the canonical one, the JSON's where
/// it has one) and its value type, for parsing, suggestions and the docs.
pub const FIELDS: &[(Field, &[&str], Type)] = &[
    (Field::Conn, &["connection", "conn", "c"], Type::Number),
    (Field::Xid, &["xid"], Type::Number),
    (Field::Proc, &["procedure", "proc"], Type::Procedure),
    (Field::Frame, &["frame"], Type::Number),
    (Field::Rkey, &["rkey", "handle"], Type::Number),
    (Field::Latency, &["latency"], Type::Duration),
    (Field::Bytes, &["bytes"], Type::Size),
    (Field::Status, &["status", "nfs_status"], Type::Text),
    (Field::Severity, &["severity"], Type::Severity),
    (Field::Kind, &["kind"], Type::Kind),
    (Field::Peer, &["peer"], Type::Text),
    (Field::Qpn, &["qpn"], Type::Number),
    (Field::Time, &["time", "t"], Type::Duration),
    (Field::Mode, &["mode", "transfer"], Type::Text),
    (Field::Opcode, &["opcode"], Type::Text),
];

/// What a field's values are, which decides the literals it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    /// Decimal or `0x` hex.
    Number,
    /// A number with a unit (`us`, `ms`, `s`; none: seconds for `time`,
    /// microseconds for `latency`), held in ns.
    Duration,
    /// A number with a unit (`k`/`KiB`, `M`/`MiB`, `G`/`GiB`; none: bytes).
    Size,
    /// A procedure name, checked against the names the dissectors know.
    Procedure,
    /// A finding kind, checked against the kind table.
    Kind,
    /// `info`, `warning`, `error`.
    Severity,
    /// Free text, compared case-insensitively.
    Text,
}

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `contains`: a substring, case-insensitive.
    Contains,
}

/// A literal, already converted to the field's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lit {
    /// Numbers, durations (ns), sizes (bytes), severities (0..=2).
    Num(u64),
    /// Text, upper-cased.
    Text(String),
}

/// A parsed expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    /// `field op literal`.
    Cmp(Field, Op, Lit),
    /// A bare field: the record has a known value for it.
    Has(Field),
    /// `a && b`
    And(Box<Expr>, Box<Expr>),
    /// `a || b`
    Or(Box<Expr>, Box<Expr>),
    /// `!a`
    Not(Box<Expr>),
}

/// A value a record has for a field.
#[derive(Debug, Clone)]
pub enum Val {
    /// A number (ns for durations, bytes for sizes).
    Num(u64),
    /// Text (compared case-insensitively).
    Text(String),
}

/// Something a filter can be evaluated on. `get` pushes the record's known
/// values of `f` (none when unknown) and says whether the field applies to
/// this kind of record at all.
pub trait Record {
    /// Pushes `f`'s known values to `out`; `false` when `f` does not apply.
    fn get(&self, f: Field, out: &mut Vec<Val>) -> bool;
}

/// What `--filter` selects: everything, or what an expression keeps.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Filter {
    expr: Option<Expr>,
    text: String,
    /// The capture's first frame (ns since the epoch): `time` counts from it.
    origin: Option<u64>,
}

impl Filter {
    /// Everything.
    #[allow(non_upper_case_globals)]
    pub const All: Filter = Filter {
        expr: None,
        text: String::new(),
        origin: None,
    };

    /// Parses a `--filter` value (blank: everything).
    pub fn parse(s: &str) -> Result<Filter, FilterError> {
        let expr = parse::parse(s)?;
        Ok(Filter {
            text: if expr.is_some() {
                s.trim().to_string()
            } else {
                String::new()
            },
            expr,
            origin: None,
        })
    }

    /// Notes a frame's time: the first one is where `time` counts from,
    /// as the text lines' relative times do.
    pub fn saw(&mut self, ts_ns: u64) {
        if self.origin.is_none() && self.expr.is_some() {
            self.origin = Some(ts_ns);
        }
    }

    /// Whether it selects everything.
    pub fn is_all(&self) -> bool {
        self.expr.is_none()
    }

    /// The expression as given (empty for everything).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The parsed expression.
    pub fn expr(&self) -> Option<&Expr> {
        self.expr.as_ref()
    }

    /// Whether the expression names a field a finding takes from its
    /// transaction (a finding then waits for it, see [`Filter::anomaly_in`]).
    pub fn needs_transaction(&self) -> bool {
        fn walk(e: &Expr) -> bool {
            match e {
                Expr::Cmp(f, ..) | Expr::Has(f) => TXN_FIELDS.contains(f),
                Expr::And(a, b) | Expr::Or(a, b) => walk(a) || walk(b),
                Expr::Not(a) => walk(a),
            }
        }
        self.expr.as_ref().is_some_and(walk)
    }

    /// The fields the expression names.
    pub fn fields(&self) -> Vec<Field> {
        fn walk(e: &Expr, out: &mut Vec<Field>) {
            match e {
                Expr::Cmp(f, ..) | Expr::Has(f) => {
                    if !out.contains(f) {
                        out.push(*f);
                    }
                }
                Expr::And(a, b) | Expr::Or(a, b) => {
                    walk(a, out);
                    walk(b, out);
                }
                Expr::Not(a) => walk(a, out),
            }
        }
        let mut out = Vec::new();
        if let Some(e) = &self.expr {
            walk(e, &mut out);
        }
        out
    }

    /// The name a user writes for `f`.
    pub fn name(f: Field) -> &'static str {
        FIELDS
            .iter()
            .find(|(g, ..)| *g == f)
            .map_or("?", |(_, names, _)| names[0])
    }

    /// Whether the expression names `f` anywhere.
    pub fn uses(&self, f: Field) -> bool {
        fn walk(e: &Expr, f: Field) -> bool {
            match e {
                Expr::Cmp(g, ..) | Expr::Has(g) => *g == f,
                Expr::And(a, b) | Expr::Or(a, b) => walk(a, f) || walk(b, f),
                Expr::Not(a) => walk(a, f),
            }
        }
        self.expr.as_ref().is_some_and(|e| walk(e, f))
    }

    /// Whether `r` passes; a field that does not apply to it fails its
    /// comparison (use [`Filter::maybe`] for "fails only if it can tell").
    pub fn matches(&self, r: &dyn Record) -> bool {
        self.maybe(r).unwrap_or(false)
    }

    /// Whether `r` passes: `None` when the answer depends only on fields
    /// that do not apply to `r` (a connection under `proc == READ`).
    pub fn maybe(&self, r: &dyn Record) -> Option<bool> {
        match &self.expr {
            None => Some(true),
            Some(e) => eval(e, r, self.origin.unwrap_or(0), &mut Vec::new()),
        }
    }

    /// Whether a transaction passes.
    pub fn txn(&self, t: &Transaction) -> bool {
        self.is_all() || self.matches(t)
    }

    /// Whether a finding passes, its transaction unknown.
    pub fn anomaly(&self, a: &Anomaly) -> bool {
        self.anomaly_in(a, None)
    }

    /// Whether a finding passes, with the transaction it belongs to (for
    /// `proc`, `latency`, `status` ...; without it those are unknown).
    pub fn anomaly_in(&self, a: &Anomaly, t: Option<&Transaction>) -> bool {
        self.anomaly_with(a, t.map(|t| t as &dyn Record))
    }

    /// [`Filter::anomaly_in`] with the transaction as any record (the
    /// TUI's compact rows).
    pub fn anomaly_with(&self, a: &Anomaly, t: Option<&dyn Record>) -> bool {
        self.is_all() || self.matches(&InTxn(a, t))
    }

    /// Whether a connection passes on its own fields: `None` when the
    /// expression says nothing a connection has (keep it if it holds a
    /// transaction or finding that passes).
    pub fn connection(&self, c: &Connection) -> Option<bool> {
        self.maybe(c)
    }
}

/// Fields a finding takes from its transaction.
const TXN_FIELDS: &[Field] = &[
    Field::Proc,
    Field::Rkey,
    Field::Latency,
    Field::Bytes,
    Field::Status,
    Field::Mode,
];

/// Three-valued: `None` when `e` rests on fields `r` does not have.
fn eval(e: &Expr, r: &dyn Record, origin: u64, buf: &mut Vec<Val>) -> Option<bool> {
    match e {
        Expr::Cmp(f, op, lit) => {
            buf.clear();
            if !r.get(*f, buf) {
                return None;
            }
            if *f == Field::Time {
                for v in buf.iter_mut() {
                    if let Val::Num(n) = v {
                        *n = n.saturating_sub(origin);
                    }
                }
            }
            // Unknown (no value) never matches, as SQL's NULL; `!=` holds
            // when there are values and none is equal.
            Some(match op {
                Op::Ne => !buf.is_empty() && !buf.iter().any(|v| cmp(v, Op::Eq, lit)),
                _ => buf.iter().any(|v| cmp(v, *op, lit)),
            })
        }
        Expr::Has(f) => {
            buf.clear();
            let applies = r.get(*f, buf);
            applies.then_some(!buf.is_empty())
        }
        Expr::And(a, b) => match (eval(a, r, origin, buf), eval(b, r, origin, buf)) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        },
        Expr::Or(a, b) => match (eval(a, r, origin, buf), eval(b, r, origin, buf)) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        },
        Expr::Not(a) => eval(a, r, origin, buf).map(|x| !x),
    }
}

fn cmp(v: &Val, op: Op, lit: &Lit) -> bool {
    match (v, lit) {
        (Val::Num(a), Lit::Num(b)) => match op {
            Op::Eq => a == b,
            Op::Ne => a != b,
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Contains => false,
        },
        (Val::Text(a), Lit::Text(b)) => {
            let a = a.to_ascii_uppercase();
            match op {
                Op::Eq => a == *b || words(&a).any(|w| w == b),
                Op::Ne => a != *b,
                Op::Contains => a.contains(b.as_str()),
                Op::Lt => a < *b,
                Op::Le => a <= *b,
                Op::Gt => a > *b,
                Op::Ge => a >= *b,
            }
        }
        _ => false,
    }
}

/// The words of a label: `NFSV3 READ` is `READ`, `COMPOUND(SEQUENCE,READ)`
/// is also each operation, so `proc == READ` finds NFSv4 READs.
fn words(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

pub(crate) fn severity_rank(s: Severity) -> u64 {
    match s {
        Severity::Info => 0,
        Severity::Warning => 1,
        Severity::Error => 2,
    }
}

impl Record for Transaction {
    fn get(&self, f: Field, out: &mut Vec<Val>) -> bool {
        match f {
            Field::Conn => out.push(Val::Num(self.connection.0.into())),
            Field::Xid => out.push(Val::Num(self.xid.into())),
            Field::Proc => out.push(Val::Text(self.procedure_label())),
            Field::Frame => {
                out.push(Val::Num(self.call_frame));
                if self.first_call_frame != self.call_frame {
                    out.push(Val::Num(self.first_call_frame));
                }
                out.extend(self.reply_frame.map(Val::Num));
                for s in &self.chunks {
                    out.extend(s.frames.iter().map(|f| Val::Num(*f)));
                }
            }
            Field::Rkey => {
                out.extend(self.chunks.iter().map(|s| Val::Num(s.handle.into())));
                out.extend(self.remote_invalidated_rkey.map(|k| Val::Num(k.into())));
            }
            Field::Latency => out.extend(
                self.reply_ts_ns
                    .and_then(|r| r.checked_sub(self.call_ts_ns))
                    .map(Val::Num),
            ),
            // Unknown when the capture cut the headers that say.
            Field::Bytes => {
                if !self.cut {
                    out.push(Val::Num(self.chunks.iter().map(|s| s.bytes_moved).sum()));
                }
            }
            Field::Status => {
                out.extend(self.reply_status.clone().map(Val::Text));
                out.extend(self.nfs_status.clone().map(Val::Text));
            }
            Field::Severity => out.extend(
                self.anomalies
                    .iter()
                    .map(|k| Val::Num(severity_rank(k.severity()))),
            ),
            Field::Kind => out.extend(
                self.anomalies
                    .iter()
                    .map(|k| Val::Text(k.as_str().to_ascii_uppercase())),
            ),
            Field::Time => out.push(Val::Num(self.call_ts_ns)),
            Field::Mode => {
                out.push(Val::Text(self.call_transfer.as_str().into()));
                out.push(Val::Text(self.reply_transfer.as_str().into()));
            }
            Field::Peer | Field::Qpn | Field::Opcode => return false,
        }
        true
    }
}

/// A finding with the transaction it belongs to, when known.
struct InTxn<'a>(&'a Anomaly, Option<&'a dyn Record>);

impl Record for InTxn<'_> {
    fn get(&self, f: Field, out: &mut Vec<Val>) -> bool {
        let a = self.0;
        match f {
            Field::Conn => out.extend(a.connection.map(|c| Val::Num(c.0.into()))),
            Field::Xid => out.extend(a.xid.map(|x| Val::Num(x.into()))),
            Field::Frame => out.extend(a.frames.iter().map(|f| Val::Num(*f))),
            Field::Severity => out.push(Val::Num(severity_rank(a.kind.severity()))),
            Field::Kind => out.push(Val::Text(a.kind.as_str().to_ascii_uppercase())),
            Field::Time => out.extend(a.ts_ns.map(Val::Num)),
            Field::Peer | Field::Qpn | Field::Opcode => return false,
            _ => {
                // The transaction's own value; unknown without it.
                if let Some(t) = self.1 {
                    t.get(f, out);
                }
            }
        }
        true
    }
}

impl Record for Connection {
    fn get(&self, f: Field, out: &mut Vec<Val>) -> bool {
        match f {
            Field::Conn => out.push(Val::Num(self.id.0.into())),
            Field::Peer => {
                for q in [&self.client, &self.server].into_iter().flatten() {
                    out.push(Val::Text(q.addr.to_string()));
                }
            }
            Field::Qpn => {
                for q in [&self.client, &self.server].into_iter().flatten() {
                    out.push(Val::Num(q.qpn.into()));
                }
            }
            _ => return false,
        }
        true
    }
}

/// The kinds, for suggestions.
pub(crate) fn kind_named(s: &str) -> Option<Kind> {
    Kind::from_name(&s.to_ascii_lowercase())
}
