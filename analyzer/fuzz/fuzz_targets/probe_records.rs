//! The probes' side: tracepoint `format` files, and ring-buffer records
//! decoded with the matrix kernels' real formats, then handed to the engine.
//!
//! Records come from a grammar (an event id of the kernel's format set, a
//! span base, arbitrary bytes, sometimes a broken header), so most reach the
//! decoder's field reads and the kernel correlator instead of stopping at
//! the header check. Neither may panic, and the engine's tables stay within
//! its budget.
#![no_main]
use std::sync::OnceLock;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use rdma_analyzer::engine::{Config, Engine, Event, Finding, MergeConfig};
use rdma_analyzer::sources::ebpf::{Decoder, Format, FormatSet, SYSTEMS};

const KERNELS: [&str; 3] = [
    "linux-5.10.0-32-amd64",
    "linux-6.1.0-50-amd64",
    "linux-6.12.117+deb13-amd64",
];

fn kernels() -> &'static [(FormatSet, Vec<u16>)] {
    static SETS: OnceLock<Vec<(FormatSet, Vec<u16>)>> = OnceLock::new();
    SETS.get_or_init(|| {
        KERNELS
            .iter()
            .map(|k| {
                let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../../ebpf-probes/testdata")
                    .join(k);
                let (set, _, _) = FormatSet::load(&root, &SYSTEMS);
                let ids = set.sorted().iter().map(|f| f.id).collect();
                (set, ids)
            })
            .collect()
    })
}

#[derive(Arbitrary, Debug)]
struct Rec {
    /// Index into the kernel's event ids.
    event: u16,
    /// 0: a header with a wrong version or kind; 1: a tracepoint; 2: a kprobe.
    kind: u8,
    /// Where the copied span starts in the record.
    base: u8,
    /// Microseconds since the previous record.
    dt_us: u16,
    /// Thread: a few, so server calls share and move between threads.
    tid: u8,
    data: Vec<u8>,
}

#[derive(Arbitrary, Debug)]
struct Input {
    kernel: u8,
    /// A format file's text, parsed and thrown away.
    format_text: Option<String>,
    records: Vec<Rec>,
    /// The engine's budget, in KiB above 256 KiB.
    memory_kib: u8,
}

fn frame(r: &Rec, id: u16, ts: u64) -> Vec<u8> {
    let mut v = vec![0u8; ebpf_common::HEADER_LEN];
    let (version, kind) = match r.kind % 3 {
        0 => (r.base, r.tid),
        k => (ebpf_common::RECORD_VERSION, k),
    };
    v[0] = version;
    v[1] = kind;
    v[2..4].copy_from_slice(&id.to_ne_bytes());
    v[8..16].copy_from_slice(&ts.to_ne_bytes());
    let tid = u64::from(r.tid % 4) + 100;
    v[16..24].copy_from_slice(&(tid << 32 | tid).to_ne_bytes());
    let data = &r.data[..r.data.len().min(ebpf_common::RECORD_DATA_MAX)];
    v[24..26].copy_from_slice(&(data.len() as u16).to_ne_bytes());
    v[26..28].copy_from_slice(&u16::from(r.base % 64).to_ne_bytes());
    v.extend_from_slice(data);
    v
}

fuzz_target!(|input: Input| {
    if let Some(text) = &input.format_text {
        let _ = Format::parse("rpcrdma", text);
    }
    let (set, ids) = &kernels()[usize::from(input.kernel) % KERNELS.len()];
    if ids.is_empty() {
        return;
    }
    let mut decoder = Decoder::new(set.clone(), 0);
    let limit = (256 << 10) + usize::from(input.memory_kib) * 1024;
    let mut engine = Engine::new(Config {
        memory_limit: limit,
        merge: Some(MergeConfig::default()),
        ..Config::default()
    });
    let mut out: Vec<Finding> = Vec::new();
    let mut ts = 1_000_000_000u64;
    for (i, r) in input.records.iter().take(256).enumerate() {
        ts += u64::from(r.dt_us) * 1000;
        let id = ids[usize::from(r.event) % ids.len()];
        let raw = frame(r, id, ts);
        if let Ok(p) = decoder.decode(&raw) {
            engine.handle(Event::Probe(&p), &mut out);
            out.clear();
        }
        if i % 8 == 7 {
            let used = engine.memory_used();
            assert!(used <= limit + limit / 10 + (64 << 10), "{used} bytes of a {limit}-byte budget");
        }
    }
    engine.handle(Event::End, &mut out);
});
