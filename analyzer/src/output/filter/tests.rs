//! The parser and the matcher: one test per operator and per field type.

use super::{Expr, Field, Filter, Lit, Op, Record, Val};
use crate::engine::{ConnId, Kind, Transaction, Transfer};

fn p(s: &str) -> Expr {
    Filter::parse(s)
        .unwrap_or_else(|e| panic!("{s:?}: {e}"))
        .expr()
        .cloned()
        .unwrap_or_else(|| panic!("{s:?} parsed to everything"))
}

fn cmp(f: Field, op: Op, n: u64) -> Expr {
    Expr::Cmp(f, op, Lit::Num(n))
}

fn e(s: &str) -> String {
    Filter::parse(s).expect_err(s).to_string()
}

/// A record with given values, to test the matcher alone.
struct R(Vec<(Field, Vec<Val>)>);

impl Record for R {
    fn get(&self, f: Field, out: &mut Vec<Val>) -> bool {
        match self.0.iter().find(|(g, _)| *g == f) {
            Some((_, v)) => {
                out.extend(v.iter().cloned());
                true
            }
            None => false,
        }
    }
}

fn rec() -> R {
    R(vec![
        (Field::Conn, vec![Val::Num(1)]),
        (Field::Xid, vec![Val::Num(0xec7d_a3d4)]),
        (Field::Proc, vec![Val::Text("NFSv3 READ".into())]),
        (Field::Latency, vec![Val::Num(12_000_000)]),
        (Field::Bytes, vec![Val::Num(65_536)]),
        (Field::Frame, vec![Val::Num(147), Val::Num(150)]),
        (Field::Severity, vec![Val::Num(1)]),
        (Field::Status, vec![]),
    ])
}

fn m(s: &str) -> bool {
    Filter::parse(s).unwrap().matches(&rec())
}

#[test]
fn blank_is_everything() {
    assert!(Filter::parse("  ").unwrap().is_all());
    assert!(Filter::All.is_all());
}

#[test]
fn old_shorthands_keep_their_meaning() {
    assert_eq!(p("c3"), cmp(Field::Conn, Op::Eq, 3));
    assert_eq!(p(" 0xcb7cd736 "), cmp(Field::Xid, Op::Eq, 0xcb7c_d736));
    assert_eq!(
        p("credit_overrun"),
        Expr::Cmp(Field::Kind, Op::Eq, Lit::Text("CREDIT_OVERRUN".into()))
    );
    assert_eq!(
        p("read"),
        Expr::Cmp(Field::Proc, Op::Contains, Lit::Text("READ".into()))
    );
    assert_eq!(
        p("c1|c2"),
        Expr::Or(
            Box::new(cmp(Field::Conn, Op::Eq, 1)),
            Box::new(cmp(Field::Conn, Op::Eq, 2))
        )
    );
    assert_eq!(
        p("SEQUENCE,PUTFH"),
        Expr::Cmp(
            Field::Proc,
            Op::Contains,
            Lit::Text("SEQUENCE,PUTFH".into())
        )
    );
}

#[test]
fn each_comparison_operator() {
    assert_eq!(p("frame == 147"), cmp(Field::Frame, Op::Eq, 147));
    assert_eq!(p("frame = 147"), cmp(Field::Frame, Op::Eq, 147));
    assert_eq!(p("frame != 147"), cmp(Field::Frame, Op::Ne, 147));
    assert_eq!(p("frame<147"), cmp(Field::Frame, Op::Lt, 147));
    assert_eq!(p("frame <= 147"), cmp(Field::Frame, Op::Le, 147));
    assert_eq!(p("frame > 147"), cmp(Field::Frame, Op::Gt, 147));
    assert_eq!(p("frame >= 147"), cmp(Field::Frame, Op::Ge, 147));
    assert!(m("frame == 150") && !m("frame == 149"));
    assert!(!m("frame != 150") && m("frame != 149"));
    assert!(m("frame < 148") && !m("frame < 147"));
    assert!(m("frame <= 147") && !m("frame <= 146"));
    assert!(m("frame > 149") && !m("frame > 150"));
    assert!(m("frame >= 150") && !m("frame >= 151"));
    assert!(m("proc contains EA") && !m("proc contains WRITE"));
    assert!(m("proc matches nfsv3"));
}

#[test]
fn each_logical_operator_and_parentheses() {
    assert!(m("c1 && READ") && m("c1 and READ"));
    assert!(!m("c2 && READ"));
    assert!(m("c2 || READ") && m("c2 or READ") && !m("c2 || WRITE"));
    assert!(m("!c2") && m("not c2") && !m("!c1"));
    assert!(m("!(c2 || WRITE)") && !m("!c2 && WRITE"));
    assert!(m("(c1 || c2) && (latency > 10ms)"));
    // && binds tighter than ||.
    assert!(m("c2 && WRITE || READ"));
}

#[test]
fn each_value_type() {
    // Numbers: decimal, hex, the c prefix for connections.
    assert!(m("xid == 0xec7da3d4") && m("xid == 3967656916") && m("conn == c1"));
    // Durations: ns, us, ms, s; a bare latency is µs.
    assert!(m("latency > 10ms") && !m("latency > 12ms") && m("latency >= 12ms"));
    assert!(m("latency == 12000us") && m("latency == 12000000ns") && m("latency < 0.5s"));
    assert!(m("latency == 12000"));
    // Sizes: B, k, KiB, MiB.
    assert!(m("bytes >= 64KiB") && !m("bytes > 64KiB") && m("bytes > 64k"));
    assert!(m("bytes < 1MiB") && m("bytes == 65536"));
    // Severities are ordered.
    assert!(m("severity >= warning") && !m("severity >= error") && m("severity > info"));
    // Procedures: exact word, case-insensitive.
    assert!(m("proc == read") && !m("procedure == WRITE"));
    // A bare field: it has a known value.
    assert!(m("latency") && !m("status"));
}

#[test]
fn unknown_never_matches_and_not_applicable_is_maybe() {
    // `status` is known to apply but has no value: no comparison holds.
    assert!(!m("status == NFS3_OK") && !m("status != NFS3_OK"));
    assert!(m("!(status == NFS3_OK)"));
    // `peer` does not apply to this record: undecided.
    let f = Filter::parse("peer == 10.0.0.1").unwrap();
    assert_eq!(f.maybe(&rec()), None);
    assert!(!f.matches(&rec()));
    let f = Filter::parse("peer == 10.0.0.1 || c1").unwrap();
    assert_eq!(f.maybe(&rec()), Some(true));
    let f = Filter::parse("peer == 10.0.0.1 && c2").unwrap();
    assert_eq!(f.maybe(&rec()), Some(false));
}

#[test]
fn errors_say_where_and_suggest() {
    assert_eq!(
        e("latncy > 10ms"),
        "column 1: unknown field `latncy`; did you mean `latency`? (see docs/filters.md)"
    );
    assert_eq!(
        e("c1 && kind == credit_overun"),
        "column 15: unknown kind `credit_overun`; did you mean `credit_overrun`? (see docs/filters.md)"
    );
    assert_eq!(
        e("proc == REED"),
        "column 9: unknown procedure `REED`; did you mean `READ`? (see docs/filters.md)"
    );
    assert!(
        e("REDDIR").contains("did you mean `READDIR`?"),
        "{}",
        e("REDDIR")
    );
    assert!(e("severity >= fatal").starts_with("column 13: unknown severity `fatal`"));
    assert!(e("(c1 || c2").starts_with("column 1: this `(` is never closed"));
    assert!(e("c1 )").starts_with("column 4: a `)`"));
    assert!(e("c1 &&").starts_with("column 6: the filter ends"));
    assert!(e("latency > fast").contains("is not a duration"));
    assert!(e("bytes > 3 parsecs").starts_with("column 11: more after"));
    assert!(e("147").contains("frame == 147"));
    assert!(e("proc > READ").contains("take a number"));
    assert!(e("frame contains 1").contains("takes a text field"));
    assert!(e("\"READ").contains("never closed"));
    assert!(e("0xZZ").contains("not a 32-bit hex XID"));
}

/// A real transaction (the engine's constructor is private), made into an
/// unanswered NFSv3 WRITE with a credit overrun.
fn txn() -> Transaction {
    let path =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../captures/parallel.pcap");
    let config = crate::engine::Config::default();
    let mut source = crate::test_support::capture_source(&path, &config.stack);
    let mut engine = crate::engine::Engine::new(config);
    let mut out = Vec::new();
    while source
        .pump(&mut |ev| {
            engine.handle(ev, &mut out);
            crate::pipeline::Flow::Continue
        })
        .is_none()
    {}
    let mut t = out
        .into_iter()
        .find_map(|f| match f {
            crate::engine::Finding::Transaction(t) => Some(*t),
            crate::engine::Finding::Anomaly(_) => None,
        })
        .expect("parallel.pcap has transactions");
    t.connection = ConnId(2);
    t.xid = 7;
    t.call_frame = 10;
    t.first_call_frame = 10;
    t.call_ts_ns = 1_000_000_000;
    t.reply_frame = None;
    t.reply_ts_ns = None;
    t.program_name = Some("NFSv3");
    t.procedure = Some("WRITE".into());
    t.call_transfer = Transfer::ReadChunks;
    t.reply_transfer = Transfer::None;
    t.anomalies = vec![Kind::CreditOverrun];
    t.chunks.clear();
    t
}

#[test]
fn transactions_and_their_findings() {
    let t = txn();
    let f = |s: &str| Filter::parse(s).unwrap();
    assert!(f("c2 && WRITE && xid == 7 && frame == 10").txn(&t));
    assert!(f("mode == read_chunks && kind == credit_overrun").txn(&t));
    // Unanswered: its latency is unknown and never compares.
    assert!(!f("latency > 0").txn(&t) && !f("latency <= 0").txn(&t));
    assert!(f("!latency").txn(&t));
    let mut time = f("time >= 1s && time < 1.5s");
    time.saw(0);
    assert!(time.txn(&t));
    let a = crate::engine::Anomaly {
        kind: Kind::CreditOverrun,
        origin: crate::engine::Origin::Wire,
        ts_ns: Some(5),
        frames: vec![10],
        connection: Some(ConnId(2)),
        xid: Some(7),
        message: String::new(),
        repeated: None,
    };
    // A finding matches `proc` through its transaction, and not without it.
    assert!(f("WRITE && severity >= warning").anomaly_in(&a, Some(&t)));
    assert!(!f("WRITE").anomaly_in(&a, None));
    assert!(
        f("WRITE").needs_transaction() && !f("c1 || kind == credit_overrun").needs_transaction()
    );
}

#[test]
fn deep_or_long_input_is_refused_not_a_stack_overflow() {
    assert!(e(&"(".repeat(500)).contains("nested deeper than 64"));
    assert!(e(&"!".repeat(500)).contains("nested deeper than 64"));
    assert!(e(&"(".repeat(100_000)).contains("at most 1024"));
    assert!(e(&vec!["c1"; 100_000].join(" && ")).contains("at most 1024"));
    assert!(Filter::parse(&vec!["c1"; 300].join(" && ")).is_ok());
}
