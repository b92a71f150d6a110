//! The arrows between the analyzer's parts point down only (README,
//! "Architecture"). Between crates the compiler keeps them (the engine and
//! the capture reader are crates of their own, `crates/`); this test keeps
//! the rules inside the application, which reads the sources and fails on
//! an import that points up, and checks that the crates below it stay free
//! of I/O and of the front ends' dependencies.
//!
//! ```text
//!   main, cli, synth           (wiring and tools: may use anything)
//!   tui, output                (front ends and sinks)
//!   diagnosis                  (pure: the causes in the engine's findings)
//!   sources                    (I/O: files, capture, probes)
//!   pipeline                   (Source, Sink, run)
//!   rdma-engine (crate)        (pure state machine: dissectors and probe records only)
//!   rdma-capture (crate)       (capture file formats: dissectors, gzip, zstd)
//! ```
//!
//! Test code (`tests.rs`, `#[cfg(test)] mod tests`) may reach any part to
//! set up real inputs; the rule is about what the parts are built from.

use std::path::{Path, PathBuf};

/// (part, the parts it must never import).
const NEVER: &[(&str, &[&str])] = &[
    (
        "diagnosis",
        &["pipeline", "sources", "output", "tui", "cli", "synth"],
    ),
    // Leaves every layer may use: how files are written, and plain counters.
    (
        "files",
        &[
            "pipeline",
            "sources",
            "output",
            "tui",
            "cli",
            "synth",
            "diagnosis",
        ],
    ),
    (
        "counters",
        &[
            "pipeline",
            "sources",
            "output",
            "tui",
            "cli",
            "synth",
            "diagnosis",
            "files",
        ],
    ),
    ("pipeline", &["sources", "output", "tui", "cli", "synth"]),
    ("sources", &["output", "tui", "cli", "synth"]),
    ("output", &["sources", "tui", "cli", "synth"]),
    ("tui", &["sources", "cli", "synth"]),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The `src/` folder of one of the workspace's crates under `crates/`.
fn crate_src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates")
        .join(name)
        .join("src")
}

/// Every `.rs` file of a part: `src/<part>.rs` and everything under `src/<part>/`.
fn files(part: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let single = src().join(format!("{part}.rs"));
    if single.is_file() {
        out.push(single);
    }
    rs_files_under(src().join(part), &mut out);
    out.sort();
    out
}

/// Every `.rs` file under a folder.
fn rs_files_under(dir: PathBuf, out: &mut Vec<PathBuf>) {
    let mut dirs = vec![dir];
    while let Some(d) = dirs.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
}

/// The file's text without its test module.
fn production_code(path: &Path) -> String {
    if path.file_name().is_some_and(|n| n == "tests.rs") {
        return String::new();
    }
    let text = std::fs::read_to_string(path).expect("source file");
    match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

#[test]
fn arrows_point_down_only() {
    let mut wrong = Vec::new();
    for (part, never) in NEVER {
        let fs = files(part);
        assert!(!fs.is_empty(), "no sources for {part}");
        for f in fs {
            let code = production_code(&f);
            for (n, line) in code.lines().enumerate() {
                let line = line.trim_start();
                if line.starts_with("//") {
                    continue;
                }
                for up in *never {
                    for pat in [
                        format!("crate::{up}::"),
                        format!("crate::{up}}}"),
                        format!("crate::{up};"),
                    ] {
                        if line.contains(&pat) {
                            wrong.push(format!(
                                "{}:{}: {part} imports {up}: {line}",
                                f.strip_prefix(src()).unwrap_or(&f).display(),
                                n + 1
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that point up (see ARCHITECTURE.md):\n{}",
        wrong.join("\n")
    );
}

/// The engine is built from the dissectors and the probe record types
/// alone: no terminal, capture, BPF loader, async runtime or JSON.
#[test]
fn the_engine_uses_no_io_crates() {
    let banned = [
        "ratatui",
        "crossterm",
        "pcap::",
        "aya::",
        "libc::",
        "std::fs",
        "std::net::TcpStream",
        "std::thread",
        "serde_json",
        "std::time::Instant",
        "SystemTime",
    ];
    let mut wrong = Vec::new();
    let mut fs = Vec::new();
    rs_files_under(crate_src("rdma-engine"), &mut fs);
    assert!(!fs.is_empty(), "no sources for the engine");
    fs.extend(files("diagnosis"));
    for f in fs {
        let code = production_code(&f);
        for (n, line) in code.lines().enumerate() {
            for b in banned {
                if line.contains(b) && !line.trim_start().starts_with("//") {
                    wrong.push(format!("{}:{}: {line}", f.display(), n + 1));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "the engine reaches for I/O:\n{}",
        wrong.join("\n")
    );
}

/// The engine's records are plain data: their JSON keys, JSON Schema and
/// wording come from the output layer's views (`output/view/`,
/// `output/describe.rs`), so that renaming an engine field is not a schema
/// change.
#[test]
fn the_engines_records_have_no_output_format() {
    let plain = [
        "Transaction",
        "LadderStep",
        "StepWhat",
        "CallHeader",
        "SegmentUse",
        "Phases",
        "NfsIo",
        "Anomaly",
        "Totals",
        "Evictions",
        "Congestion",
        "CreditPoint",
        "Transfer",
        "ChunkKind",
        "Carries",
        "Severity",
        "Origin",
        "Kind",
        "Addr",
        "QpKey",
        "FileHandle",
        "Stable",
        "ConnId",
        "CmEvent",
        "CmMsg",
        "CmState",
        "Role",
    ];
    let mut fs = Vec::new();
    rs_files_under(crate_src("rdma-engine"), &mut fs);
    let mut wrong = Vec::new();
    let mut found = 0;
    for f in fs {
        let code = production_code(&f);
        let lines: Vec<&str> = code.lines().collect();
        for (n, line) in lines.iter().enumerate() {
            for t in plain {
                let defines = [
                    format!("pub struct {t} "),
                    format!("pub struct {t}("),
                    format!("pub enum {t} "),
                ]
                .iter()
                // `Kind` is written inside the macro that reads its table.
                .any(|d| line.trim_start().starts_with(d.as_str()));
                // The attributes right above the definition.
                let derives = defines.then(|| {
                    lines[..n]
                        .iter()
                        .rev()
                        // A derive list may span lines: `#[derive(`, indented names, `)]`.
                        .take_while(|l| ["#[", "///", ")]", " "].iter().any(|p| l.starts_with(p)))
                        .any(|l| l.contains("Serialize") || l.contains("JsonSchema"))
                });
                found += usize::from(defines);
                // Ids keep their `Display` (the engine's messages and the
                // text output write them); ladder steps and headers are
                // put into words by the output layer only.
                let worded = ["StepWhat", "CallHeader"].contains(&t);
                let implements = [" Serialize for ", "JsonSchema for ", "Display for "]
                    .iter()
                    .filter(|i| worded || !i.starts_with("Display"))
                    .any(|i| line.contains(&format!("{i}{t} ")));
                if derives == Some(true) || implements {
                    wrong.push(format!("{}:{}: {t}", f.display(), n + 1));
                }
            }
        }
    }
    assert_eq!(found, plain.len(), "every listed record is defined once");
    assert!(
        wrong.is_empty(),
        "engine records with an output format of their own:\n{}",
        wrong.join("\n")
    );
}

/// What each crate below the application may be built from, transitively:
/// the engine and the capture reader must build without the front ends'
/// and the live sources' crates (Arrow, Parquet, ratatui, aya, libpcap, the
/// HTTP server), so they test fast and can be used on their own; and
/// without serde or schemars, whose JSON and schema are the output layer's.
#[test]
fn the_crates_below_the_application_hold_no_front_end_or_io_crate() {
    let banned = [
        "arrow",
        "parquet",
        "ratatui",
        "crossterm",
        "aya",
        "pcap",
        "libc",
        "tiny_http",
        "prometheus",
        "clap",
        "tokio",
        "hyper",
        "serde",
        "schemars",
    ];
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut wrong = Vec::new();
    for krate in ["rdma-engine", "rdma-capture"] {
        let out = std::process::Command::new(&cargo)
            .args([
                "tree",
                "--offline",
                "-e",
                "normal",
                "--prefix",
                "none",
                "-p",
                krate,
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("cargo tree runs");
        assert!(
            out.status.success(),
            "cargo tree -p {krate}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let tree = String::from_utf8_lossy(&out.stdout);
        assert!(
            tree.contains(krate),
            "cargo tree -p {krate} lists nothing:\n{tree}"
        );
        for line in tree.lines() {
            let name = line.split_whitespace().next().unwrap_or("");
            // `pcap-parser` would be as bad as `pcap`: match by prefix.
            if banned.iter().any(|b| {
                name == *b
                    || name.starts_with(&format!("{b}-"))
                    || name.starts_with(&format!("{b}_"))
            }) {
                wrong.push(format!("{krate} depends on {line}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
