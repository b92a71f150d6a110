//! Drives the engine over a capture file: the one loop every offline front
//! end shares.

use std::path::Path;

use crate::engine::{Config, Engine, Event, Finding};
use crate::sources::pcap::{PcapReader, ReadError};

/// How a run over a file ended.
pub struct Outcome {
    /// The engine, holding the final state.
    pub engine: Engine,
    /// Frames read.
    pub frames: u64,
    /// Why reading stopped early, if it did (the frames before were analyzed).
    pub error: Option<ReadError>,
}

/// Runs `path` through a new engine, handing every finding to `sink` as it
/// happens (nothing is buffered beyond one frame's findings).
///
/// # Errors
/// When the file cannot be opened or is not a capture at all. A file that
/// breaks off part-way is not an error here: see [`Outcome::error`].
pub fn run_file(
    path: &Path,
    config: Config,
    mut sink: impl FnMut(Finding),
) -> Result<Outcome, ReadError> {
    let mut reader = PcapReader::open(path)?;
    run_reader(&mut reader, config, &mut sink)
}

/// As [`run_file`], over an already opened reader.
///
/// # Errors
/// Never at present; the signature leaves room for sources that can fail to start.
pub fn run_reader<R: std::io::Read>(
    reader: &mut PcapReader<R>,
    config: Config,
    sink: &mut impl FnMut(Finding),
) -> Result<Outcome, ReadError> {
    let mut engine = Engine::new(config);
    let mut findings = Vec::with_capacity(16);
    let mut error = None;
    loop {
        match reader.next_packet() {
            Ok(Some(p)) => {
                engine.handle(
                    Event::Frame {
                        number: p.number,
                        ts_ns: p.ts_ns,
                        link: p.link_type,
                        orig_len: p.orig_len,
                        data: p.data,
                    },
                    &mut findings,
                );
                for f in findings.drain(..) {
                    sink(f);
                }
            }
            Ok(None) => break,
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    engine.handle(Event::End, &mut findings);
    for f in findings.drain(..) {
        sink(f);
    }
    Ok(Outcome {
        engine,
        frames: reader.frames_read(),
        error,
    })
}
