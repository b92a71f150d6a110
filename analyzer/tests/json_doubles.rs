//! Every JSON document and line the binary writes, read by a reader that
//! holds every number as a double: jq 1.6, the one that turned the VA
//! 0xfa7da3d48d23d000 into 18049763014867145000 and rounded nanosecond
//! timestamps to 256 ns. What it reads back must be what was written:
//! every integer the same integer, every string the same string.

#[path = "common/prereq.rs"]
mod prereq;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

fn capture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../captures")
        .join(name)
}

/// Each JSON value `args` writes (a document, or one per line).
fn documents(args: &[&str]) -> Vec<Value> {
    let out = Command::new(BIN).args(args).output().expect("the binary");
    assert!(out.status.success(), "{args:?}: {out:?}");
    serde_json::Deserializer::from_slice(&out.stdout)
        .into_iter::<Value>()
        .map(|v| v.expect("JSON"))
        .collect()
}

/// `docs` as jq 1.6 reads and writes them back (`jq -c .`).
fn through_jq(docs: &[Value]) -> Vec<Value> {
    let mut child = Command::new("jq")
        .arg("-c")
        .arg(".")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("jq");
    let mut input = Vec::new();
    for d in docs {
        serde_json::to_writer(&mut input, d).expect("JSON");
        input.push(b'\n');
    }
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("jq runs");
    writer.join().expect("writer").expect("jq's input");
    assert!(out.status.success(), "jq: {out:?}");
    serde_json::Deserializer::from_slice(&out.stdout)
        .into_iter::<Value>()
        .map(|v| v.expect("jq's JSON"))
        .collect()
}

/// Where `read` (after a double-precision reader) differs from `written`.
fn changed(written: &Value, read: &Value, path: &str, out: &mut Vec<String>) {
    match (written, read) {
        (Value::Number(w), Value::Number(r)) => {
            let same = match (w.as_u64(), w.as_i64()) {
                (Some(u), _) => r.as_u64() == Some(u),
                (None, Some(i)) => r.as_i64() == Some(i),
                (None, None) => w.as_f64() == r.as_f64(),
            };
            if !same {
                out.push(format!("{path}: {w} read as {r}"));
            }
        }
        (Value::Array(w), Value::Array(r)) if w.len() == r.len() => {
            for (i, (a, b)) in w.iter().zip(r).enumerate() {
                changed(a, b, &format!("{path}[{i}]"), out);
            }
        }
        (Value::Object(w), Value::Object(r)) if w.len() == r.len() => {
            for (k, a) in w {
                match r.get(k) {
                    Some(b) => changed(a, b, &format!("{path}.{k}"), out),
                    None => out.push(format!("{path}.{k}: gone")),
                }
            }
        }
        (w, r) if w == r => {}
        (w, r) => out.push(format!("{path}: {w} read as {r}")),
    }
}

#[test]
fn every_output_reads_back_the_same_through_jq_1_6() {
    if !prereq::require(
        "jq",
        prereq::have_command("jq", "--version"),
        "apt install jq (scripts/setup.sh)",
    ) {
        return;
    }
    // v3-ddp: 64-bit VAs in its chunks and RETHs; parallel: 1050 RPCs.
    for name in ["v3-ddp.pcap", "parallel.pcap"] {
        let p = capture(name);
        let p = p.to_str().expect("path");
        for cmd in ["report", "transactions", "anomalies", "frames"] {
            let written = documents(&[cmd, "--json", p]);
            // v3-ddp has no findings; parallel has 480.
            assert!(
                !written.is_empty() || (cmd, name) == ("anomalies", "v3-ddp.pcap"),
                "{cmd} {name}"
            );
            let read = through_jq(&written);
            assert_eq!(read.len(), written.len(), "{cmd} {name}");
            let mut out = Vec::new();
            for (i, (w, r)) in written.iter().zip(&read).enumerate() {
                changed(w, r, &format!("{cmd} {name} #{i}"), &mut out);
            }
            assert!(out.is_empty(), "{}", out[..out.len().min(10)].join("\n"));
        }
    }
}

/// The comparison itself catches what jq 1.6 does to a bare 64-bit VA.
#[test]
fn a_bare_64_bit_integer_is_caught() {
    if !prereq::require(
        "jq",
        prereq::have_command("jq", "--version"),
        "apt install jq (scripts/setup.sh)",
    ) {
        return;
    }
    let written: Value =
        serde_json::json!({"va": 0xfa7d_a3d4_8d23_d000_u64, "ok": "0xfa7da3d48d23d000"});
    let read = through_jq(std::slice::from_ref(&written));
    let mut out = Vec::new();
    changed(&written, &read[0], "", &mut out);
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(
        out[0].starts_with(".va: 18049763014867144704 read as"),
        "{out:?}"
    );
}
