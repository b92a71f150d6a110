//! How the text writes values, through the real binary: microseconds
//! without a meaningless `.0`, and no p99 from fewer than 100 replies (it
//! would be the max under another name).

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

fn report(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../captures")
        .join(name);
    let o = Command::new(BIN).arg("report").arg(p).output().unwrap();
    assert!(o.status.success());
    String::from_utf8(o.stdout).unwrap()
}

/// The rows of the response-time table: (count, the six figures).
fn rows(text: &str) -> Vec<(u64, Vec<String>)> {
    text.lines()
        .skip_while(|l| !l.starts_with("Response times"))
        .skip(2)
        .take_while(|l| !l.is_empty())
        .filter(|l| !l.contains("unanswered") && !l.contains("latency unknown"))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let figures: Vec<String> = w[w.len() - 6..].iter().map(|s| s.to_string()).collect();
            (w[w.len() - 7].parse().unwrap(), figures)
        })
        .collect()
}

#[test]
fn p99_needs_100_replies_and_whole_microseconds_have_no_decimal() {
    let mut small = 0;
    let mut large = 0;
    for name in ["v3-ddp.pcap", "parallel.pcap", "reconnect.pcap"] {
        let text = report(name);
        let r = rows(&text);
        assert!(!r.is_empty(), "{name}: no response-time rows");
        for (count, f) in r {
            assert!(f.iter().all(|x| !x.ends_with(".0")), "{name}: {f:?}");
            if count < 100 {
                assert_eq!(f[4], "-", "{name}: p99 of {count} replies: {f:?}");
                small += 1;
            } else {
                assert!(f[4].parse::<f64>().is_ok(), "{name}: {f:?}");
                large += 1;
            }
        }
        // The transactions lines too.
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../captures")
            .join(name);
        let o = Command::new(BIN)
            .arg("transactions")
            .arg(p)
            .output()
            .unwrap();
        let t = String::from_utf8(o.stdout).unwrap();
        assert!(!t.contains(".0 µs"), "{name}");
    }
    assert!(
        small > 0 && large > 0,
        "both cases seen: {small} small, {large} large"
    );
}

/// Every procedure name in a section's rows, as the table prints it.
fn section<'a>(text: &'a str, heading: &str) -> Vec<&'a str> {
    text.lines()
        .skip_while(|l| !l.starts_with(heading))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect()
}

#[test]
fn compound_names_are_whole_in_every_procedure_table() {
    let text = report("v42-ddp.pcap");
    let whole = "NFSv4.2 COMPOUND(SEQUENCE,PUTFH,OPEN,GETFH,ACCESS,GETATTR)";
    for heading in [
        "Response times",
        "Where the time went",
        "Operations and transmissions",
    ] {
        let rows = section(&text, heading);
        assert!(
            rows.iter().any(|l| l.starts_with(&format!("  {whole} "))),
            "{heading}: {rows:#?}"
        );
        assert!(
            !rows.iter().any(|l| l.contains('…')),
            "{heading}: {rows:#?}"
        );
    }
    // The columns after the name line up with the header's.
    let rows = section(&text, "Response times");
    let at = |l: &str| l.find(" inline ").or_else(|| l.find(" call "));
    let header = rows.iter().find(|l| l.contains("procedure")).unwrap();
    assert_eq!(header.find(" call "), at(rows.last().unwrap()), "{rows:#?}");
}

#[test]
fn byte_counts_are_scaled_with_the_exact_count_where_rounded() {
    let text = report("parallel.pcap");
    assert!(
        text.contains("7716 frames (7663 RDMA, 3.8 MiB = 3966544 B) over"),
        "{text}"
    );
    assert!(text.contains("chunk bytes 3 MiB = 3145864 B"), "{text}");
    let read = text
        .lines()
        .find(|l| l.starts_with("  read   segments"))
        .expect("the Chunks section");
    // 1572864 B is exactly 1.5 MiB: nothing to add.
    assert!(
        read.contains("advertised                1.5 MiB  moved"),
        "{read}"
    );
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures/v3-ddp.pcap");
    let o = Command::new(BIN)
        .arg("transactions")
        .arg(p)
        .output()
        .unwrap();
    let lines = String::from_utf8(o.stdout).unwrap();
    assert!(lines.contains(" moved 256 KiB rt 2 "), "{lines}");
    assert!(!lines.contains(".0 KiB"), "{lines}");
}
