//! What `--filter` selects, shared by the reports and the TUI.

use crate::engine::{Anomaly, Connection, Kind, Transaction};

/// What `--filter` selects: a connection (`c3`), an XID (`0x1234abcd`), a
/// procedure name (`READ`, case-insensitive, matched against the procedure
/// label) or an anomaly kind (`credit_overrun`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filter {
    /// Everything.
    All,
    /// One connection.
    Connection(u32),
    /// One XID.
    Xid(u32),
    /// One anomaly kind.
    Kind(Kind),
    /// A procedure name.
    Procedure(String),
}

impl Filter {
    /// Parses a `--filter` value.
    pub fn parse(s: &str) -> Filter {
        let t = s.trim();
        if let Some(n) = t.strip_prefix('c').and_then(|n| n.parse().ok()) {
            return Filter::Connection(n);
        }
        if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            if let Ok(x) = u32::from_str_radix(h, 16) {
                return Filter::Xid(x);
            }
        }
        if let Some(k) = Kind::from_name(t) {
            return Filter::Kind(k);
        }
        Filter::Procedure(t.to_ascii_uppercase())
    }

    /// Whether it selects everything.
    pub fn is_all(&self) -> bool {
        *self == Filter::All
    }

    /// Whether a transaction passes.
    pub fn txn(&self, t: &Transaction) -> bool {
        match self {
            Filter::All => true,
            Filter::Connection(c) => t.connection.0 == *c,
            Filter::Xid(x) => t.xid == *x,
            Filter::Kind(k) => t.anomalies.contains(k),
            Filter::Procedure(p) => t
                .procedure_label()
                .to_ascii_uppercase()
                .contains(p.as_str()),
        }
    }

    /// Whether an anomaly passes.
    pub fn anomaly(&self, a: &Anomaly) -> bool {
        match self {
            Filter::All => true,
            Filter::Connection(c) => a.connection.is_some_and(|x| x.0 == *c),
            Filter::Xid(x) => a.xid == Some(*x),
            Filter::Kind(k) => a.kind == *k,
            Filter::Procedure(p) => a.message.to_ascii_uppercase().contains(p.as_str()),
        }
    }

    /// Whether a connection passes.
    pub fn connection(&self, c: &Connection) -> bool {
        match self {
            Filter::Connection(id) => c.id.0 == *id,
            _ => true,
        }
    }
}
