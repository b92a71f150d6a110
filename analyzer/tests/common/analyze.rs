//! Runs a capture file through the analyzer's one pipeline, handing each
//! finding to a closure (the tests' view of what `report` sees).
#![allow(dead_code)]

use std::path::Path;

use rdma_analyzer::engine::{Config, Engine, Finding};
use rdma_analyzer::pipeline::{self, End, Flow, Progress, Sink, Stop};
use rdma_analyzer::sources::pcap::{FileSource, ReadError};

/// How a run ended.
pub struct Run {
    /// The engine with its final state.
    pub engine: Engine,
    /// How the source ended.
    pub end: End,
    /// Frames read.
    pub frames: u64,
}

impl Run {
    /// The source's error, when it ended with one.
    pub fn error(&self) -> Option<&str> {
        self.end.error()
    }
}

struct Each<F>(F);

impl<F: FnMut(Finding)> Sink for Each<F> {
    fn finding(&mut self, f: Finding) -> Flow {
        (self.0)(f);
        Flow::Continue
    }

    fn end(&mut self, _: Option<&Engine>, _: &Progress, _: &End) {}
}

/// Runs `path` through a new engine with `config`.
pub fn run_file(path: &Path, config: Config, f: impl FnMut(Finding)) -> Result<Run, ReadError> {
    let mut source = FileSource::open(path, &config.stack)?;
    let mut sink = Each(f);
    let o = pipeline::run(
        &mut source,
        Some(Engine::new(config)),
        &mut sink,
        &mut |n| eprintln!("{}", n.text),
        &Stop::new(),
    );
    Ok(Run {
        engine: o.engine.expect("an engine"),
        end: o.end,
        frames: o.progress.frames,
    })
}
