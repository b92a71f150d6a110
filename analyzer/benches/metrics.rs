//! One scrape of an exporter holding 10,000 series (docs/fleet.md;
//! target < 10 ms):
//!
//! - `encode_10k_series`: the exposition of the latest snapshot, encoded
//!   as OpenMetrics (what a Prometheus scrape costs the exporter's thread);
//! - `encode_10k_series_prometheus_text`: the same in the text format
//!   (plain clients, and `report --metrics-out`);
//! - `scrape_http_10k_series`: a whole scrape over HTTP of a running
//!   exporter on loopback (connect, request, OpenMetrics body read to its
//!   end), as Prometheus does it.
//!
//! The series: 104 procedures, each with calls, replies and a latency
//! histogram over spread latencies (96 series apiece), plus the fixed
//! families. The count is printed.
//!
//! `cargo bench -p rdma-analyzer --bench metrics`

use std::hint::black_box;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion};
use rdma_analyzer::engine::{Config, Engine, Finding};
use rdma_analyzer::output::exporter::Exporter;
use rdma_analyzer::output::metrics::{Format, Metrics, MetricsConfig, Process};
use rdma_analyzer::pipeline::{self, Collect, End, Progress, Sink, Stop};
use rdma_analyzer::sources::pcap::FileSource;

const PROCEDURES: u32 = 104;

fn metrics_with_10k_series() -> (Metrics, String) {
    let capture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../captures/v3-ddp.pcap");
    let config = Config::default();
    let mut source = FileSource::open(&capture, &config.stack).expect("capture");
    let mut collect = Collect::default();
    pipeline::run(
        &mut source,
        Some(Engine::new(config)),
        &mut collect,
        &mut |_| {},
        &Stop::new(),
    );
    let base = collect
        .findings
        .iter()
        .find_map(|f| match f {
            Finding::Transaction(t) if t.reply_ts_ns.is_some() => Some(t.clone()),
            _ => None,
        })
        .expect("an answered transaction");
    let mut m = Metrics::new(MetricsConfig {
        max_procedures: 1024,
        ..MetricsConfig::default()
    });
    for p in 0..PROCEDURES {
        for i in 0..200u64 {
            let mut t = base.clone();
            t.procedure = Some(format!("PROC{p}"));
            t.proc = Some(p);
            // Latencies from 4 µs to 130 ms, log-spread over 15 powers of two.
            let ns = (4_000f64 * (i as f64 / 200.0 * 15.0).exp2()) as u64;
            t.reply_ts_ns = Some(t.call_ts_ns + ns);
            m.add(&Finding::Transaction(t));
        }
    }
    m.end(None, &Progress::default(), &End::Complete);
    let text = m.exposition(None).encode(Format::OpenMetrics);
    (m, text)
}

fn series(text: &str) -> usize {
    text.lines().filter(|l| !l.starts_with('#')).count()
}

fn scrape(port: u16) -> usize {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(
        s,
        "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: application/openmetrics-text; version=1.0.0\r\n\r\n"
    )
    .expect("request");
    let mut body = Vec::with_capacity(2 << 20);
    s.read_to_end(&mut body).expect("response");
    assert!(body.ends_with(b"# EOF\n"), "a whole exposition");
    body.len()
}

fn bench(c: &mut Criterion) {
    let (m, text) = metrics_with_10k_series();
    let n = series(&text);
    assert!(n >= 10_000, "{n} series");
    eprintln!(
        "exporter holds {n} series ({} bytes of OpenMetrics)",
        text.len()
    );
    let process = Process {
        cpu_seconds: rdma_analyzer::sources::sys::cpu_seconds,
        resident_bytes: rdma_analyzer::sources::sys::resident_bytes,
        mountstats: rdma_analyzer::sources::sys::mountstats,
        device_counters: rdma_analyzer::sources::sys::device_counters,
    };
    let exposition = m.exposition(Some(process));
    c.bench_function("encode_10k_series", |b| {
        b.iter(|| black_box(exposition.encode(Format::OpenMetrics)))
    });
    c.bench_function("encode_10k_series_prometheus_text", |b| {
        b.iter(|| black_box(exposition.encode(Format::PrometheusText)))
    });
    let exporter =
        Exporter::start("127.0.0.1:0".parse().expect("addr"), exposition).expect("exporter");
    let port = exporter.addr().port();
    c.bench_function("scrape_http_10k_series", |b| {
        b.iter(|| black_box(scrape(port)))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
