//! The filter language's lexer and recursive-descent parser.
//!
//! ```text
//! expr    = and { ("||" | "|" | "or") and }
//! and     = unary { ("&&" | "&" | "and") unary }
//! unary   = ("!" | "not") unary | "(" expr ")" | term
//! term    = field [op value] | c<N> | 0x<XID> | kind | procedure | "text"
//! ```
//! A single `|` is `||` so that the old `c1|c2` keeps its meaning.

use super::{kind_named, Expr, Field, Lit, Op, Type, FIELDS};
use crate::engine::Kind;
use rdma_dissectors::nfs;
use std::fmt;

/// Most tokens a filter may have: evaluation and dropping recurse once per
/// term, so a pasted megabyte of `c1 && c1 && ...` must not reach them.
const MAX_TOKENS: usize = 1024;
/// Deepest nesting of parentheses and `!`.
const MAX_DEPTH: usize = 64;

/// A filter that does not parse: what is wrong and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterError {
    /// 1-based column (in characters) of the offending token.
    pub column: usize,
    /// What is wrong, and what to write instead when there is a close name.
    pub message: String,
}

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: {}", self.column, self.message)
    }
}

impl std::error::Error for FilterError {}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    LParen,
    RParen,
    And,
    Or,
    Not,
    Op(Op),
    Word(String),
    Quoted(String),
}

/// Characters that end a word.
fn is_special(c: char) -> bool {
    c.is_whitespace() || "()!=<>&|\"".contains(c)
}

fn lex(s: &str) -> Result<Vec<(Tok, usize)>, FilterError> {
    let cs: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        let col = i + 1;
        let next = cs.get(i + 1).copied();
        let (tok, len) = match (c, next) {
            (c, _) if c.is_whitespace() => {
                i += 1;
                continue;
            }
            ('(', _) => (Tok::LParen, 1),
            (')', _) => (Tok::RParen, 1),
            ('&', Some('&')) => (Tok::And, 2),
            ('&', _) => (Tok::And, 1),
            ('|', Some('|')) => (Tok::Or, 2),
            ('|', _) => (Tok::Or, 1),
            ('!', Some('=')) => (Tok::Op(Op::Ne), 2),
            ('!', _) => (Tok::Not, 1),
            ('=', Some('=')) => (Tok::Op(Op::Eq), 2),
            ('=', _) => (Tok::Op(Op::Eq), 1),
            ('<', Some('=')) => (Tok::Op(Op::Le), 2),
            ('<', _) => (Tok::Op(Op::Lt), 1),
            ('>', Some('=')) => (Tok::Op(Op::Ge), 2),
            ('>', _) => (Tok::Op(Op::Gt), 1),
            ('"', _) => {
                let end = cs[i + 1..]
                    .iter()
                    .position(|&c| c == '"')
                    .ok_or(FilterError {
                        column: col,
                        message: "this quote is never closed".into(),
                    })?;
                let text: String = cs[i + 1..i + 1 + end].iter().collect();
                (Tok::Quoted(text), end + 2)
            }
            _ => {
                let len = cs[i..].iter().take_while(|&&c| !is_special(c)).count();
                let w: String = cs[i..i + len].iter().collect();
                let tok = match w.to_ascii_lowercase().as_str() {
                    "and" => Tok::And,
                    "or" => Tok::Or,
                    "not" => Tok::Not,
                    "contains" | "matches" => Tok::Op(Op::Contains),
                    "eq" => Tok::Op(Op::Eq),
                    "ne" => Tok::Op(Op::Ne),
                    "lt" => Tok::Op(Op::Lt),
                    "le" => Tok::Op(Op::Le),
                    "gt" => Tok::Op(Op::Gt),
                    "ge" => Tok::Op(Op::Ge),
                    _ => Tok::Word(w),
                };
                (tok, len)
            }
        };
        if out.len() >= MAX_TOKENS {
            return Err(FilterError {
                column: col,
                message: format!("a filter has at most {MAX_TOKENS} terms and operators"),
            });
        }
        out.push((tok, col));
        i += len;
    }
    Ok(out)
}

struct Parser {
    toks: Vec<(Tok, usize)>,
    at: usize,
    end: usize,
    depth: usize,
}

/// Parses a filter; `None` for a blank one (everything).
pub fn parse(s: &str) -> Result<Option<Expr>, FilterError> {
    let toks = lex(s)?;
    if toks.is_empty() {
        return Ok(None);
    }
    let mut p = Parser {
        toks,
        at: 0,
        end: s.chars().count() + 1,
        depth: 0,
    };
    let e = p.or()?;
    if let Some((t, col)) = p.toks.get(p.at) {
        let what = match t {
            Tok::RParen => "a `)` with no `(` before it".to_string(),
            _ => "more after a complete expression; join terms with && or ||".to_string(),
        };
        return Err(err(*col, what));
    }
    Ok(Some(e))
}

fn err(column: usize, message: String) -> FilterError {
    FilterError { column, message }
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at).map(|t| &t.0)
    }

    fn col(&self) -> usize {
        self.toks.get(self.at).map_or(self.end, |t| t.1)
    }

    fn or(&mut self) -> Result<Expr, FilterError> {
        let mut e = self.and()?;
        while self.peek() == Some(&Tok::Or) {
            self.at += 1;
            e = Expr::Or(Box::new(e), Box::new(self.and()?));
        }
        Ok(e)
    }

    fn and(&mut self) -> Result<Expr, FilterError> {
        let mut e = self.unary()?;
        while self.peek() == Some(&Tok::And) {
            self.at += 1;
            e = Expr::And(Box::new(e), Box::new(self.unary()?));
        }
        Ok(e)
    }

    fn unary(&mut self) -> Result<Expr, FilterError> {
        let col = self.col();
        if self.depth >= MAX_DEPTH {
            return Err(err(col, format!("nested deeper than {MAX_DEPTH} levels")));
        }
        self.depth += 1;
        let e = self.unary_inner(col);
        self.depth -= 1;
        e
    }

    fn unary_inner(&mut self, col: usize) -> Result<Expr, FilterError> {
        match self.toks.get(self.at).map(|t| t.0.clone()) {
            Some(Tok::Not) => {
                self.at += 1;
                Ok(Expr::Not(Box::new(self.unary()?)))
            }
            Some(Tok::LParen) => {
                self.at += 1;
                let e = self.or()?;
                if self.peek() != Some(&Tok::RParen) {
                    return Err(err(col, "this `(` is never closed".into()));
                }
                self.at += 1;
                Ok(e)
            }
            Some(Tok::Word(w)) => {
                self.at += 1;
                self.term(&w, col)
            }
            Some(Tok::Quoted(q)) => {
                self.at += 1;
                Ok(Expr::Cmp(
                    Field::Proc,
                    Op::Contains,
                    Lit::Text(q.to_ascii_uppercase()),
                ))
            }
            Some(t) => Err(err(
                col,
                format!("expected a field or a value, found {}", show(&t)),
            )),
            None => Err(err(
                col,
                "the filter ends where a field or value was expected".into(),
            )),
        }
    }

    fn term(&mut self, w: &str, col: usize) -> Result<Expr, FilterError> {
        let op = match self.peek() {
            Some(Tok::Op(op)) => Some(*op),
            _ => None,
        };
        if let Some(&(f, _, ty)) = field_named(w) {
            let Some(op) = op else {
                return Ok(Expr::Has(f));
            };
            self.at += 1;
            let vcol = self.col();
            let v = match self.toks.get(self.at).map(|t| t.0.clone()) {
                Some(Tok::Word(v) | Tok::Quoted(v)) => v,
                _ => {
                    return Err(err(
                        vcol,
                        format!("`{w}` {} needs a value after it", op_str(op)),
                    ))
                }
            };
            self.at += 1;
            check_op(w, f, ty, op, col)?;
            // A substring is any text; an exact procedure must be one we know.
            let ty = if op == Op::Contains { Type::Text } else { ty };
            return Ok(Expr::Cmp(f, op, value(f, ty, &v, vcol)?));
        }
        if op.is_some() {
            return Err(err(col, unknown("field", w, field_names())));
        }
        shorthand(w, col)
    }
}

/// A bare word that is not a field: `c3`, an XID, a kind, a procedure.
fn shorthand(w: &str, col: usize) -> Result<Expr, FilterError> {
    if let Some(n) = w
        .strip_prefix(['c', 'C'])
        .and_then(|n| n.parse::<u64>().ok())
    {
        return Ok(Expr::Cmp(Field::Conn, Op::Eq, Lit::Num(n)));
    }
    if let Some(h) = w.strip_prefix("0x").or_else(|| w.strip_prefix("0X")) {
        return u32::from_str_radix(h, 16)
            .map(|x| Expr::Cmp(Field::Xid, Op::Eq, Lit::Num(x.into())))
            .map_err(|_| err(col, format!("`{w}` is not a 32-bit hex XID")));
    }
    if let Some(k) = kind_named(w) {
        return Ok(Expr::Cmp(Field::Kind, Op::Eq, kind_lit(k)));
    }
    if w.chars().all(|c| c.is_ascii_digit()) {
        return Err(err(
            col,
            format!("a bare number means nothing here; write `frame == {w}` or `xid == {w}`"),
        ));
    }
    let up = w.to_ascii_uppercase();
    // As before the language: a procedure word matches a label that
    // contains it (`READ` also keeps READDIR); `proc == READ` is exact.
    if up.split(',').all(|p| procedure_names().any(|n| n == p)) {
        return Ok(Expr::Cmp(Field::Proc, Op::Contains, Lit::Text(up)));
    }
    let all = field_names()
        .chain(Kind::ALL.iter().map(|k| k.as_str()))
        .chain(procedure_names());
    Err(err(col, unknown("field, kind or procedure", w, all)))
}

fn kind_lit(k: Kind) -> Lit {
    Lit::Text(k.as_str().to_ascii_uppercase())
}

fn check_op(w: &str, f: Field, ty: Type, op: Op, col: usize) -> Result<(), FilterError> {
    let ordered = matches!(op, Op::Lt | Op::Le | Op::Gt | Op::Ge);
    let bad = match ty {
        Type::Number | Type::Duration | Type::Size | Type::Severity => op == Op::Contains,
        Type::Procedure | Type::Kind | Type::Text => ordered,
    };
    if bad {
        let what = if op == Op::Contains {
            "`contains` takes a text field (procedure, status, peer, mode, kind)"
        } else {
            "`<`, `<=`, `>`, `>=` take a number, duration, size or severity"
        };
        let _ = f;
        return Err(err(col, format!("`{w}` {}: {what}", op_str(op))));
    }
    Ok(())
}

/// Converts `v` to `ty`.
fn value(f: Field, ty: Type, v: &str, col: usize) -> Result<Lit, FilterError> {
    let bad = |what: &str| err(col, format!("`{v}` is not {what}"));
    match ty {
        Type::Number => {
            let v2 = if f == Field::Conn {
                v.strip_prefix(['c', 'C']).unwrap_or(v)
            } else {
                v
            };
            number(v2)
                .map(Lit::Num)
                .ok_or_else(|| bad("a number (decimal or 0x hex)"))
        }
        Type::Duration => {
            let default = if f == Field::Time { "s" } else { "us" };
            scaled(v, default, DURATIONS).map(Lit::Num).ok_or_else(|| {
                bad("a duration (a number with ns, us, ms or s; no unit: see docs/filters.md)")
            })
        }
        Type::Size => scaled(v, "b", SIZES)
            .map(Lit::Num)
            .ok_or_else(|| bad("a size (a number with B, k, KiB, M, MiB, G or GiB)")),
        Type::Severity => match v.to_ascii_lowercase().as_str() {
            "info" => Ok(Lit::Num(0)),
            "warning" | "warn" => Ok(Lit::Num(1)),
            "error" => Ok(Lit::Num(2)),
            _ => Err(err(
                col,
                unknown("severity", v, ["info", "warning", "error"].into_iter()),
            )),
        },
        Type::Kind => kind_named(v).map(kind_lit).ok_or_else(|| {
            err(
                col,
                unknown("kind", v, Kind::ALL.iter().map(|k| k.as_str())),
            )
        }),
        Type::Procedure => {
            let up = v.to_ascii_uppercase();
            let known = |p: &str| procedure_names().any(|n| n == p);
            // Program names (`NFSv3`, `nfs4`) and `prog N proc M` are part of labels too.
            let part = |p: &str| {
                known(p)
                    || p.starts_with("NFS")
                    || p.chars().all(|c| c.is_ascii_digit())
                    || matches!(p, "PROG" | "PROC" | "MOUNT" | "NLM" | "NFSACL")
            };
            if super::words(&up).all(part) {
                Ok(Lit::Text(up))
            } else {
                Err(err(col, unknown("procedure", v, procedure_names())))
            }
        }
        Type::Text => Ok(Lit::Text(v.to_ascii_uppercase())),
    }
}

const DURATIONS: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
];

const SIZES: &[(&str, u64)] = &[
    ("b", 1),
    ("k", 1_000),
    ("kb", 1_000),
    ("kib", 1 << 10),
    ("m", 1_000_000),
    ("mb", 1_000_000),
    ("mib", 1 << 20),
    ("g", 1_000_000_000),
    ("gb", 1_000_000_000),
    ("gib", 1 << 30),
];

fn number(v: &str) -> Option<u64> {
    match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => v.parse().ok(),
    }
}

/// `10ms` → 10_000_000 with `units`; a bare number takes `default`.
fn scaled(v: &str, default: &str, units: &[(&str, u64)]) -> Option<u64> {
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let unit = if unit.is_empty() { default } else { unit };
    let unit = unit.to_lowercase();
    let mul = units.iter().find(|(u, _)| *u == unit)?.1;
    if let Ok(n) = num.parse::<u64>() {
        return n.checked_mul(mul);
    }
    let x: f64 = num.parse().ok()?;
    let r = x * mul as f64;
    (x.is_finite() && r >= 0.0 && r < u64::MAX as f64).then(|| r.round() as u64)
}

fn field_named(w: &str) -> Option<&'static (Field, &'static [&'static str], Type)> {
    let w = w.to_ascii_lowercase();
    FIELDS
        .iter()
        .find(|(_, names, _)| names.contains(&w.as_str()))
}

fn field_names() -> impl Iterator<Item = &'static str> {
    FIELDS
        .iter()
        .flat_map(|(_, names, _)| names.iter().copied())
}

/// Every procedure and NFSv4 operation name the dissectors know.
pub(super) fn procedure_names() -> impl Iterator<Item = &'static str> {
    let progs = [
        nfs::NFS_PROGRAM,
        nfs::MOUNT_PROGRAM,
        nfs::NLM_PROGRAM,
        nfs::NFSACL_PROGRAM,
        nfs::NFS4_CALLBACK_PROGRAM_LINUX,
    ];
    let procs = progs.into_iter().flat_map(|p| {
        (1..=4).flat_map(move |v| (0..32).filter_map(move |n| nfs::proc_name(p, v, n)))
    });
    procs.chain(
        (0..=80)
            .filter_map(nfs::op_name)
            .chain([nfs::op_name(10044)].into_iter().flatten()),
    )
}

/// "unknown field `latncy`; did you mean `latency`?"
fn unknown<'a>(what: &str, w: &str, names: impl Iterator<Item = &'a str>) -> String {
    let lw = w.to_ascii_lowercase();
    let best = names
        .map(|n| (distance(&lw, &n.to_ascii_lowercase()), n))
        .min_by_key(|(d, _)| *d)
        .filter(|(d, n)| *d <= 2.max(n.len() / 3));
    match best {
        Some((_, n)) => format!("unknown {what} `{w}`; did you mean `{n}`? (see docs/filters.md)"),
        None => format!(
            "unknown {what} `{w}` (see docs/filters.md for the fields, kinds and procedures)"
        ),
    }
}

/// Levenshtein distance.
pub(crate) fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

fn op_str(op: Op) -> &'static str {
    match op {
        Op::Eq => "==",
        Op::Ne => "!=",
        Op::Lt => "<",
        Op::Le => "<=",
        Op::Gt => ">",
        Op::Ge => ">=",
        Op::Contains => "contains",
    }
}

fn show(t: &Tok) -> String {
    match t {
        Tok::LParen => "`(`".into(),
        Tok::RParen => "`)`".into(),
        Tok::And => "`&&`".into(),
        Tok::Or => "`||`".into(),
        Tok::Not => "`!`".into(),
        Tok::Op(op) => format!("`{}`", op_str(*op)),
        Tok::Word(w) => format!("`{w}`"),
        Tok::Quoted(q) => format!("\"{q}\""),
    }
}
