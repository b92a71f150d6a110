//! Records laid out by the lab kernels' own format files, through the
//! decoder and the engine, end to end: what the copy plans attach, what each
//! event decodes to, and the transactions and anomalies the engine makes of
//! a stream of them. The plans and the findings are snapshots, so a change
//! to the tracepoint table, the decoder or the kernel correlator that moves
//! any of them shows in review.
//!
//! The stream is pseudo-random but fixed: field values come from small
//! domains (a handful of XIDs, tasks, completion ids and threads) so that
//! calls, segments, replies and invalidations meet and correlate.
//! `PROBE_REPLAY_OUT=DIR` also writes each kernel's decoded events there.

use std::fmt::Write as _;
use std::path::PathBuf;

use rdma_analyzer::engine::kernel::event::Probe;
use rdma_analyzer::engine::{Config, Engine, Event};
use rdma_analyzer::sources::ebpf::{
    blind_spots, whole_record, Decoder, Format, FormatSet, Plan, ProbeEvents, SYSTEMS,
};

const KERNELS: [&str; 3] = [
    "linux-5.10.0-32-amd64",
    "linux-6.1.0-50-amd64",
    "linux-6.12.117+deb13-amd64",
];

fn formats_of(kernel: &str) -> FormatSet {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../ebpf-probes/testdata")
        .join(kernel);
    FormatSet::load(&root, &SYSTEMS).0
}

/// xorshift64: a fixed stream with no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const STRINGS: [&str; 6] = ["nfs", "READ", "nfsd", "COMPOUND", "10.99.0.2", "20049"];

/// One record of `f`, whole (fixed part, then its strings), values drawn
/// from `rng`.
fn record(f: &Format, rng: &mut Rng) -> Vec<u8> {
    let mut data = vec![0u8; 512];
    for fd in f.fields.iter().filter(|x| x.offset >= 8 && !x.data_loc) {
        let v: u64 = match fd.name.as_str() {
            "status" | "rc" | "ret" => u64::from(rng.below(8) == 0) * 5,
            "rtype" | "wtype" => rng.below(7),
            "vers" => 1 + u64::from(rng.below(16) == 0),
            "proc" => u64::from(rng.below(16) == 0) * rng.below(6),
            _ if fd.array => rng.next(),
            _ => 1 + rng.below(4),
        };
        let b = v.to_ne_bytes();
        for i in 0..fd.size {
            data[fd.offset + i] = b[i % 8];
        }
    }
    let mut at = f.fixed_len();
    for fd in f.fields.iter().filter(|x| x.data_loc) {
        let text = STRINGS[rng.below(STRINGS.len() as u64) as usize];
        let len = text.len() + 1;
        let off = if fd.ctype.starts_with("__rel_loc") {
            at - (fd.offset + 4)
        } else {
            at
        };
        let loc = ((len as u32) << 16) | off as u32;
        data[fd.offset..fd.offset + 4].copy_from_slice(&loc.to_ne_bytes());
        data[at..at + text.len()].copy_from_slice(text.as_bytes());
        at += len;
    }
    data.truncate(at.max(f.fixed_len()));
    data
}

/// The ring record the probe would send for `data`: the span its plan names.
fn framed(f: &Format, copy: ebpf_common::CopyPlan, data: &[u8], tid: u32, ts: u64) -> Vec<u8> {
    let word = copy.loc_at().map_or(0, |o| {
        let o = o as usize;
        u32::from_ne_bytes(data[o..o + 4].try_into().unwrap())
    });
    let (lo, n) = copy.span(word);
    let (lo, n) = (lo as usize, (n as usize).min(data.len() - lo as usize));
    let mut v = vec![0u8; ebpf_common::HEADER_LEN];
    v[0] = ebpf_common::RECORD_VERSION;
    v[1] = ebpf_common::RecordKind::Tracepoint as u8;
    v[2..4].copy_from_slice(&f.id.to_ne_bytes());
    v[8..16].copy_from_slice(&ts.to_ne_bytes());
    v[16..24].copy_from_slice(&((u64::from(tid) << 32) | u64::from(tid)).to_ne_bytes());
    v[24..26].copy_from_slice(&(n as u16).to_ne_bytes());
    v[26..28].copy_from_slice(&(lo as u16).to_ne_bytes());
    v.extend_from_slice(&data[lo..lo + n]);
    v
}

/// What the plans attach and leave out, and what the kernel cannot show.
fn plans(set: &FormatSet) -> String {
    let mut s = String::new();
    for events in [ProbeEvents::Used, ProbeEvents::All] {
        let p = Plan::all_of(set, &SYSTEMS, &[], events);
        writeln!(s, "{events:?}: left out {:?}", p.left_out).unwrap();
        for (sys, ev, c) in &p.tracepoints {
            writeln!(s, "  {sys}:{ev} {c:?}").unwrap();
        }
    }
    for m in blind_spots(set, &[]) {
        writeln!(s, "blind: {} ({})", m.what, m.why).unwrap();
    }
    s
}

/// `n` records of the attached events through the decoder and the engine:
/// the decoded events and the findings, as text.
fn replay(set: &FormatSet, n: usize) -> (String, String) {
    let plan = Plan::all_of(set, &SYSTEMS, &[], ProbeEvents::Used);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut dec = Decoder::new(set.clone(), 0);
    let mut engine = Engine::new(Config::default());
    let (mut events, mut out) = (String::new(), Vec::new());
    for i in 0..n {
        let (sys, ev, copy) = &plan.tracepoints[rng.below(plan.tracepoints.len() as u64) as usize];
        let f = set.by_name(sys, ev).unwrap();
        let data = record(f, &mut rng);
        let tid = 1 + rng.below(3) as u32;
        let raw = framed(f, *copy, &data, tid, 1_000_000 * i as u64);
        let p: Probe = dec.decode(&raw).unwrap();
        writeln!(events, "{} {sys}:{ev} {:?}", p.meta.seq, p.event).unwrap();
        engine.handle(Event::Probe(&p), &mut out);
    }
    engine.finish(&mut |f| out.push(f));
    // Every event of the systems once, whole, as `ProbeEvents::All` sends them.
    for f in set.sorted() {
        let whole = whole_record(f);
        let data = record(f, &mut rng);
        let p = dec.decode(&framed(f, whole, &data, 1, 0)).unwrap();
        writeln!(events, "all {}:{} {:?}", f.system, f.name, p.event).unwrap();
    }
    let mut findings = String::new();
    for f in &out {
        writeln!(findings, "{f:?}").unwrap();
    }
    (events, findings)
}

#[test]
fn matrix_kernels_replay_through_decoder_and_engine() {
    for kernel in KERNELS {
        let set = formats_of(kernel);
        let (events, findings) = replay(&set, 1200);
        if let Some(dir) = std::env::var_os("PROBE_REPLAY_OUT") {
            let dir = PathBuf::from(dir);
            std::fs::write(dir.join(format!("{kernel}.events")), &events).unwrap();
            std::fs::write(dir.join(format!("{kernel}.findings")), &findings).unwrap();
            std::fs::write(dir.join(format!("{kernel}.plans")), plans(&set)).unwrap();
        }
        assert!(
            findings.contains("ClientProbes"),
            "{kernel}: no client transaction"
        );
        assert!(
            findings.contains("ServerProbes"),
            "{kernel}: no server transaction"
        );
        insta::assert_snapshot!(format!("{kernel}-plans"), plans(&set));
        insta::assert_snapshot!(format!("{kernel}-findings"), findings);
    }
}

/// The decoder's cost per record, for measuring: `cargo nextest run -p
/// rdma-analyzer --test probe_replay --run-ignored only`, or the test
/// binary under `valgrind --tool=callgrind --toggle-collect='*Decoder*decode*'`
/// for instructions (divide by the records it prints).
#[test]
#[ignore = "a measurement, not a check"]
fn decode_cost() {
    let mut records = Vec::new();
    for kernel in KERNELS {
        let set = formats_of(kernel);
        let plan = Plan::all_of(&set, &SYSTEMS, &[], ProbeEvents::Used);
        let mut rng = Rng(7);
        for i in 0..1200 {
            let (sys, ev, copy) =
                &plan.tracepoints[rng.below(plan.tracepoints.len() as u64) as usize];
            let f = set.by_name(sys, ev).unwrap();
            let data = record(f, &mut rng);
            records.push((kernel, framed(f, *copy, &data, 1, i)));
        }
    }
    let decoders: Vec<Decoder> = KERNELS
        .iter()
        .map(|k| Decoder::new(formats_of(k), 0))
        .collect();
    let mut decoders = decoders;
    let rounds: u64 = 20;
    let start = std::time::Instant::now();
    let mut ok = 0u64;
    for _ in 0..rounds {
        for (kernel, raw) in &records {
            let i = KERNELS.iter().position(|k| k == kernel).unwrap();
            ok += u64::from(decoders[i].decode(raw).is_ok());
        }
    }
    let n = rounds * records.len() as u64;
    assert_eq!(ok, n);
    eprintln!(
        "{n} records, {:.0} ns each",
        start.elapsed().as_nanos() as f64 / n as f64
    );
}
