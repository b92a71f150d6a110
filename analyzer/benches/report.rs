//! What the diagnosis, the phase tables and the slowest list cost `report`
//! (issue 28 allows them 10% of its time): `report` as the CLI runs it
//! (file, engine, `Report`, text and JSON documents) with them and without
//! them (`Report::without_diagnosis`), alternated so that a noisy neighbour
//! hurts both alike; the medians and their ratio are printed.
//!
//! `cargo bench -p rdma-analyzer --bench report [-- CAPTURE [RUNS]]`
//!
//! CAPTURE defaults to `target/bench/big.pcap`, the capture
//! `scripts/bench-report.sh` measures (made by `synth --size 2G
//! --connections 4` when missing); RUNS to 7.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rdma_analyzer::engine::{Config, Engine};
use rdma_analyzer::output::filter::Filter;
use rdma_analyzer::output::report::Report;
use rdma_analyzer::pipeline::{self, Stop};
use rdma_analyzer::sources::pcap::FileSource;
use rdma_analyzer::synth;

/// One `report`, both documents rendered; its seconds.
fn report(capture: &Path, lean: bool) -> f64 {
    let t0 = Instant::now();
    // The budget split as `report` splits it (main.rs, REPORT_SHARE).
    let mut config = Config::default();
    let tables = config.memory_limit / 16;
    config.memory_limit -= tables;
    let mut source = FileSource::open(capture, &config.stack).expect("the benchmark capture");
    let mut rep = Report::new(Filter::All).within(tables);
    if lean {
        rep = rep.without_diagnosis();
    }
    let outcome = pipeline::run(
        &mut source,
        Some(Engine::new(config)),
        &mut rep,
        &mut |n| eprintln!("rdma-analyzer: {}", n.text),
        &Stop::new(),
    );
    let engine = outcome.engine.expect("the engine");
    black_box(rep.to_text(engine.state(), "bench", None));
    black_box(serde_json::to_string(&rep.to_doc(engine.state(), "bench", None)).unwrap());
    t0.elapsed().as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    // `cargo bench` passes `--bench`; the rest are ours.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let capture = args
        .first()
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/bench/big.pcap"));
    let runs: usize = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(7);
    if !capture.exists() {
        eprintln!(
            "making {} (synth --size 2G --connections 4)",
            capture.display()
        );
        std::fs::create_dir_all(capture.parent().unwrap()).unwrap();
        let opts = synth::Options {
            size: Some(2 << 30),
            connections: 4,
            ..synth::Options::default()
        };
        synth::write_files(&opts, &capture).expect("synth");
    }
    let bytes = std::fs::metadata(&capture).unwrap().len();
    report(&capture, false); // page cache and allocator warm
    let (mut full, mut lean) = (vec![], vec![]);
    for _ in 0..runs {
        full.push(report(&capture, false));
        lean.push(report(&capture, true));
    }
    let (f, l) = (median(full), median(lean));
    println!(
        "report of {} ({:.0} MB), median of {runs} runs each, alternated:\n  \
         with the diagnosis, phase tables and slowest list: {f:.3} s ({:.0} MB/s)\n  \
         without them: {l:.3} s ({:.0} MB/s)\n  \
         ratio {:.3} (issue 28: at most 1.10)",
        capture.display(),
        bytes as f64 / 1e6,
        bytes as f64 / 1e6 / f,
        bytes as f64 / 1e6 / l,
        f / l
    );
}
