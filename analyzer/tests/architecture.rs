//! The arrows between the analyzer's parts point down only (README,
//! "Architecture"): this test reads the sources and fails on an import
//! that points up.
//!
//! ```text
//!   main, cli, synth           (wiring and tools: may use anything)
//!   tui, output                (front ends and sinks)
//!   diagnosis                  (pure: the causes in the engine's findings)
//!   sources                    (I/O: files, capture, probes)
//!   pipeline                   (Source, Sink, run)
//!   engine                     (pure state machine: dissectors and probe records only)
//! ```
//!
//! Test code (`tests.rs`, `#[cfg(test)] mod tests`) may reach any part to
//! set up real inputs; the rule is about what the parts are built from.

use std::path::{Path, PathBuf};

/// (part, the parts it must never import).
const NEVER: &[(&str, &[&str])] = &[
    (
        "engine",
        &["pipeline", "sources", "output", "tui", "cli", "synth"],
    ),
    (
        "diagnosis",
        &["pipeline", "sources", "output", "tui", "cli", "synth"],
    ),
    ("pipeline", &["sources", "output", "tui", "cli", "synth"]),
    ("sources", &["output", "tui", "cli", "synth"]),
    ("output", &["sources", "tui", "cli", "synth"]),
    ("tui", &["sources", "cli", "synth"]),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file of a part: `src/<part>.rs` and everything under `src/<part>/`.
fn files(part: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let single = src().join(format!("{part}.rs"));
    if single.is_file() {
        out.push(single);
    }
    let mut dirs = vec![src().join(part)];
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
    out.sort();
    out
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
        "imports that point up (see README, Architecture):\n{}",
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
    for f in files("engine").into_iter().chain(files("diagnosis")) {
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
