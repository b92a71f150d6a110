//! What `--filter` selects, shared by the reports and the TUI.

use crate::engine::{Anomaly, Connection, Kind, Transaction};

/// What `--filter` selects: a connection (`c3`), an XID (`0x1234abcd`), a
/// procedure name (`READ`, case-insensitive, matched against the procedure
/// label) or an anomaly kind (`credit_overrun`); several of them separated
/// by `|` select what any of them selects (`c1|c2`, `0x1234abcd|0x5678ef01`).
/// Not a comma: NFSv4 procedure labels have commas
/// (`COMPOUND(SEQUENCE,PUTFH,READ)`).
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
    /// What any of these selects (never nested, never fewer than two).
    AnyOf(Vec<Filter>),
}

impl Filter {
    /// Parses a `--filter` value.
    pub fn parse(s: &str) -> Filter {
        let mut terms: Vec<Filter> = s
            .split('|')
            .filter(|t| !t.trim().is_empty())
            .map(Filter::parse_one)
            .collect();
        match terms.len() {
            0 => Filter::parse_one(s),
            1 => terms.remove(0),
            _ => Filter::AnyOf(terms),
        }
    }

    fn parse_one(s: &str) -> Filter {
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
            Filter::AnyOf(v) => v.iter().any(|f| f.txn(t)),
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
            Filter::AnyOf(v) => v.iter().any(|f| f.anomaly(a)),
        }
    }

    /// Whether a connection passes.
    pub fn connection(&self, c: &Connection) -> bool {
        match self {
            Filter::Connection(id) => c.id.0 == *id,
            Filter::AnyOf(v) => v.iter().any(|f| f.connection(c)),
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Filter;
    use crate::engine::Kind;

    #[test]
    fn parse_one_term_and_alternatives() {
        assert_eq!(Filter::parse("c3"), Filter::Connection(3));
        assert_eq!(Filter::parse(" 0xcb7cd736 "), Filter::Xid(0xcb7c_d736));
        assert_eq!(
            Filter::parse("credit_overrun"),
            Filter::Kind(Kind::CreditOverrun)
        );
        assert_eq!(
            Filter::parse("c1|c2"),
            Filter::AnyOf(vec![Filter::Connection(1), Filter::Connection(2)])
        );
        assert_eq!(
            Filter::parse("0x1 | READ"),
            Filter::AnyOf(vec![Filter::Xid(1), Filter::Procedure("READ".into())])
        );
        // An empty alternative is no alternative; a comma is part of a label.
        assert_eq!(Filter::parse("c1|"), Filter::Connection(1));
        assert_eq!(
            Filter::parse("SEQUENCE,PUTFH"),
            Filter::Procedure("SEQUENCE,PUTFH".into())
        );
    }
}
