//! What the flight recorder adds per frame and per probe record, for
//! `docs/recorder.md`'s table: run under `valgrind --tool=callgrind` (or
//! `perf stat`) once without and once with the recorder, and divide the
//! difference by the frames.
//!
//! ```text
//! recorder_cost CAPTURE frames none|record   # a capture through the engine
//! recorder_cost N probes none|record         # N probe records through the engine
//! ```

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use rdma_analyzer::engine::kernel::event::{ChunkType, Probe, ProbeEvent, ProbeMeta, TaskKey};
use rdma_analyzer::engine::{Config, Engine, Event, Finding};
use rdma_analyzer::pipeline::{self, Fanout, Sink, Stop};
use rdma_analyzer::recorder::{RecordConfig, Recorder, Trigger};
use rdma_analyzer::sources::pcap::FileSource;

fn recorder() -> Recorder {
    let dir = std::env::temp_dir().join(format!("recorder-cost-{}", std::process::id()));
    Recorder::new(
        RecordConfig {
            dir,
            before_ns: 30_000_000_000,
            after_ns: 10_000_000_000,
            ring_bytes: 64 << 20,
            snaplen: None,
            // A trigger that never fires here: the cost of recording, not of
            // writing a dump.
            triggers: vec![Trigger::Signal],
            keep: 20,
            max_total: None,
        },
        Arc::new(AtomicBool::new(false)),
    )
}

/// Counts findings and keeps none (the cost of the output is not ours).
struct Count(u64);

impl Sink for Count {
    fn finding(&mut self, _: Finding) -> pipeline::Flow {
        self.0 += 1;
        pipeline::Flow::Continue
    }
    fn end(&mut self, _: Option<&Engine>, _: &pipeline::Progress, _: &pipeline::End) {}
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (what, kind, mode) = match args.as_slice() {
        [_, w, k, m] => (w.clone(), k.clone(), m.clone()),
        _ => {
            eprintln!("usage: recorder_cost CAPTURE frames none|record | N probes none|record");
            std::process::exit(2);
        }
    };
    let mut rec = (mode == "record").then(recorder);
    let mut count = Count(0);
    let mut sinks: Vec<&mut dyn Sink> = Vec::new();
    if let Some(r) = rec.as_mut() {
        sinks.push(r);
    }
    sinks.push(&mut count);
    let mut fan = Fanout(sinks);
    if kind == "frames" {
        let config = Config::default();
        let mut source =
            FileSource::open_all(&[PathBuf::from(&what)], &config.stack).expect("capture");
        let out = pipeline::run(
            &mut source,
            Some(Engine::new(config)),
            &mut fan,
            &mut |_| {},
            &Stop::new(),
        );
        eprintln!("{} frames, {} findings", out.progress.frames, count.0);
    } else {
        let n: u64 = what.parse().expect("N");
        let mut engine = Engine::new(Config::default());
        let mut findings = Vec::new();
        for seq in 1..=n {
            let p = Probe {
                meta: ProbeMeta {
                    seq,
                    ts_ns: 1_700_000_000_000_000_000 + seq * 1000,
                    cpu: 0,
                    tid: 1,
                },
                event: ProbeEvent::Marshal {
                    task: TaskKey {
                        task_id: (seq % 64) as u32,
                        client_id: 1,
                    },
                    xid: seq as u32,
                    rtype: ChunkType::Inline,
                    wtype: ChunkType::Inline,
                    hdrlen: Some(28),
                    xdrlen: Some(120),
                },
            };
            if fan.wants_frames() {
                let _ = fan.probe(&p);
            }
            engine.handle(Event::Probe(&p), &mut findings);
            findings.clear();
        }
        eprintln!("{n} probe records");
    }
}
