//! Acknowledgements: findings a user has read and decided about
//! (`--ignore KIND`, `--ack FILE`). They are hidden from the lists, never
//! lost: the outputs say how many were hidden and of which kinds, and JSON
//! keeps them marked `acknowledged`.
//!
//! The file has one acknowledgement a line: a kind, optionally a
//! connection (`c3`), and a comment after `#`:
//!
//! ```text
//! # Linux servers invalidate remotely without negotiating it.
//! remote_invalidation_not_negotiated
//! retransmission c2   # the lab's lossy link
//! ```

use std::collections::BTreeMap;

use crate::engine::{Anomaly, ConnId, Kind};

/// What one acknowledgement covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rule {
    kind: Kind,
    /// `None`: every connection.
    connection: Option<ConnId>,
}

/// The acknowledgements of a run, and what they hid.
#[derive(Debug, Clone, Default)]
pub struct Acks {
    rules: Vec<Rule>,
    /// Occurrences hidden, per kind.
    hidden: BTreeMap<Kind, u64>,
}

impl Acks {
    /// From `--ignore` values (each `KIND[,KIND..]`) and an `--ack` file's
    /// text (`file` names it in errors).
    ///
    /// # Errors
    /// An unknown kind (with the nearest known one) or a malformed line,
    /// with its file and line number.
    pub fn new(ignore: &[String], ack: Option<(&str, &str)>) -> Result<Acks, String> {
        let mut rules = Vec::new();
        for v in ignore {
            for name in v.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                let kind = kind(name).map_err(|e| format!("--ignore: {e}"))?;
                rules.push(Rule {
                    kind,
                    connection: None,
                });
            }
        }
        if let Some((file, text)) = ack {
            for (i, line) in text.lines().enumerate() {
                let at = |e: String| format!("{file}:{}: {e}", i + 1);
                if let Some(r) = parse_line(line).map_err(at)? {
                    rules.push(r);
                }
            }
        }
        Ok(Acks {
            rules,
            hidden: BTreeMap::new(),
        })
    }

    /// Whether no acknowledgement was given.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether `a` is acknowledged.
    pub fn covers(&self, a: &Anomaly) -> bool {
        self.rules
            .iter()
            .any(|r| r.kind == a.kind && r.connection.is_none_or(|c| a.connection == Some(c)))
    }

    /// Whether `a` is acknowledged, counting its occurrences as hidden
    /// when it is.
    pub fn hide(&mut self, a: &Anomaly) -> bool {
        let covered = self.covers(a);
        if covered {
            *self.hidden.entry(a.kind).or_default() += a.count();
        }
        covered
    }

    /// Occurrences hidden, per kind.
    pub fn hidden(&self) -> &BTreeMap<Kind, u64> {
        &self.hidden
    }

    /// "12 acknowledged findings hidden (remote_invalidation_not_negotiated)",
    /// or `None` when nothing was hidden.
    pub fn summary(&self) -> Option<String> {
        let n: u64 = self.hidden.values().sum();
        if n == 0 {
            return None;
        }
        let kinds: Vec<&str> = self.hidden.keys().map(|k| k.as_str()).collect();
        let s = if n == 1 { "" } else { "s" };
        Some(format!(
            "{n} acknowledged finding{s} hidden ({})",
            kinds.join(", ")
        ))
    }
}

/// One line of an ack file: `None` for a blank or comment-only line.
fn parse_line(line: &str) -> Result<Option<Rule>, String> {
    let body = line.split_once('#').map_or(line, |(b, _)| b);
    let mut words = body.split_whitespace();
    let Some(name) = words.next() else {
        return Ok(None);
    };
    let kind = kind(name)?;
    let connection = match words.next() {
        None => None,
        Some(w) => Some(connection(w)?),
    };
    if let Some(extra) = words.next() {
        return Err(format!(
            "unexpected `{extra}`: a line is a kind, an optional connection (c3) and an optional # comment"
        ));
    }
    Ok(Some(Rule { kind, connection }))
}

fn connection(w: &str) -> Result<ConnId, String> {
    w.strip_prefix('c')
        .and_then(|n| n.parse().ok())
        .map(ConnId)
        .ok_or_else(|| {
            format!("`{w}` is not a connection: connections are written c1, c2, … as in the report")
        })
}

/// A kind by its stable name; an unknown one names the nearest.
fn kind(name: &str) -> Result<Kind, String> {
    if let Some(k) = Kind::from_name(name) {
        return Ok(k);
    }
    let lower = name.to_ascii_lowercase();
    let best = Kind::ALL
        .into_iter()
        .map(|k| (super::filter::distance(&lower, k.as_str()), k))
        .min_by_key(|(d, _)| *d)
        .filter(|(d, k)| *d <= 2.max(k.as_str().len() / 3));
    Err(match best {
        Some((_, k)) => format!(
            "unknown kind `{name}`; did you mean `{}`? (see docs/findings.md)",
            k.as_str()
        ),
        None => format!("unknown kind `{name}` (the kinds are in docs/findings.md)"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Origin;

    fn finding(kind: Kind, conn: u32) -> Anomaly {
        Anomaly {
            kind,
            origin: Origin::Wire,
            ts_ns: None,
            frames: vec![1],
            connection: Some(ConnId(conn)),
            xid: None,
            message: String::new(),
            repeated: None,
        }
    }

    #[test]
    fn a_file_acknowledges_kinds_everywhere_or_on_one_connection() {
        let text =
            "# stock Linux\nremote_invalidation_not_negotiated\n\n  retransmission c2 # lossy\n";
        let mut acks = Acks::new(&[], Some(("acks", text))).unwrap();
        assert!(acks.hide(&finding(Kind::RemoteInvalidationNotNegotiated, 5)));
        assert!(acks.hide(&finding(Kind::Retransmission, 2)));
        assert!(!acks.hide(&finding(Kind::Retransmission, 1)));
        assert!(!acks.hide(&finding(Kind::Nak, 2)));
        assert_eq!(
            acks.summary().unwrap(),
            "2 acknowledged findings hidden (remote_invalidation_not_negotiated, retransmission)"
        );
    }

    #[test]
    fn ignore_takes_lists_and_repeats() {
        let v = vec!["nak, retransmission".to_string(), "msgp_used".to_string()];
        let acks = Acks::new(&v, None).unwrap();
        for k in [Kind::Nak, Kind::Retransmission, Kind::MsgpUsed] {
            assert!(acks.covers(&finding(k, 1)), "{k:?}");
        }
        assert!(!acks.covers(&finding(Kind::DoneUsed, 1)));
        assert!(Acks::default().summary().is_none());
    }

    #[test]
    fn errors_name_the_line_and_the_nearest_kind() {
        let e = |t: &str| Acks::new(&[], Some(("acks.txt", t))).unwrap_err();
        assert_eq!(
            e("nak\nretransmision\n"),
            "acks.txt:2: unknown kind `retransmision`; did you mean `retransmission`? (see docs/findings.md)"
        );
        assert_eq!(
            e("\n\nnak 10.0.0.1"),
            "acks.txt:3: `10.0.0.1` is not a connection: connections are written c1, c2, … as in the report"
        );
        assert!(e("nak c1 c2").starts_with("acks.txt:1: unexpected `c2`"));
        assert_eq!(
            Acks::new(&["zzz".into()], None).unwrap_err(),
            "--ignore: unknown kind `zzz` (the kinds are in docs/findings.md)"
        );
    }
}
