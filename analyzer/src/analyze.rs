//! Drives the engine over a capture file: the one loop every offline front
//! end shares.
//!
//! [`run_file`] splits the work over two threads: one reads the file, copies
//! frames into batches and checks their RoCEv2 ICRC (the largest per-byte
//! cost); the calling thread dissects the rest and runs the engine. Batches
//! are recycled, so memory stays at a few batches whatever the file size.

use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use rdma_dissectors::ib::icrc::IcrcStatus;
use rdma_dissectors::link::LinkType;
use rdma_dissectors::stack;

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

/// Frames per batch handed from the reading thread to the engine.
const BATCH_FRAMES: usize = 1024;
/// Bytes per batch (a batch closes at whichever limit comes first).
const BATCH_BYTES: usize = 1 << 20;
/// Batches in flight between the threads.
const BATCH_DEPTH: usize = 4;

struct FrameMeta {
    number: u64,
    ts_ns: u64,
    link: LinkType,
    orig_len: u32,
    start: usize,
    len: usize,
    icrc: Option<IcrcStatus>,
}

#[derive(Default)]
struct Batch {
    data: Vec<u8>,
    frames: Vec<FrameMeta>,
}

enum Msg {
    Batch(Batch),
    End {
        frames: u64,
        error: Option<ReadError>,
    },
}

/// Runs `path` through a new engine, handing every finding to `sink` as it
/// happens (nothing is buffered beyond one batch of frames).
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
    let (tx, rx) = sync_channel::<Msg>(BATCH_DEPTH);
    let (recycle, spare) = sync_channel::<Batch>(BATCH_DEPTH + 2);
    let stack_config = config.stack;
    let worker = std::thread::Builder::new()
        .name("pcap-read-icrc".into())
        .spawn(move || read_batches(&mut reader, &stack_config, &tx, &spare));
    let Ok(worker) = worker else {
        // No second thread to be had: do it all here.
        let mut reader = PcapReader::open(path)?;
        return run_reader(&mut reader, config, &mut sink);
    };
    let outcome = consume_batches(config, &rx, &recycle, &mut sink);
    drop(rx);
    let _ = worker.join();
    Ok(outcome)
}

fn read_batches<R: std::io::Read>(
    reader: &mut PcapReader<R>,
    config: &stack::Config,
    tx: &SyncSender<Msg>,
    spare: &Receiver<Batch>,
) {
    let mut batch = spare.try_recv().unwrap_or_default();
    loop {
        let error = match reader.next_packet() {
            Ok(Some(p)) => {
                let start = batch.data.len();
                batch.data.extend_from_slice(p.data);
                let icrc = if config.verify_icrc {
                    stack::rocev2_icrc_status(p.link_type, p.data, config)
                } else {
                    None
                };
                batch.frames.push(FrameMeta {
                    number: p.number,
                    ts_ns: p.ts_ns,
                    link: p.link_type,
                    orig_len: p.orig_len,
                    start,
                    len: p.data.len(),
                    icrc,
                });
                if batch.frames.len() < BATCH_FRAMES && batch.data.len() < BATCH_BYTES {
                    continue;
                }
                let next = spare.try_recv().unwrap_or_default();
                if tx
                    .send(Msg::Batch(std::mem::replace(&mut batch, next)))
                    .is_err()
                {
                    return;
                }
                continue;
            }
            Ok(None) => None,
            Err(e) => Some(e),
        };
        if !batch.frames.is_empty() && tx.send(Msg::Batch(batch)).is_err() {
            return;
        }
        let _ = tx.send(Msg::End {
            frames: reader.frames_read(),
            error,
        });
        return;
    }
}

fn consume_batches(
    config: Config,
    rx: &Receiver<Msg>,
    recycle: &SyncSender<Batch>,
    sink: &mut impl FnMut(Finding),
) -> Outcome {
    let mut engine = Engine::new(config);
    let mut findings = Vec::with_capacity(16);
    let (mut frames, mut error) = (0, None);
    while let Ok(msg) = rx.recv() {
        match msg {
            Msg::Batch(mut b) => {
                for f in &b.frames {
                    let data = &b.data[f.start..f.start + f.len];
                    let event = match f.icrc {
                        Some(icrc) => Event::CheckedFrame {
                            number: f.number,
                            ts_ns: f.ts_ns,
                            link: f.link,
                            orig_len: f.orig_len,
                            data,
                            icrc,
                        },
                        None => Event::Frame {
                            number: f.number,
                            ts_ns: f.ts_ns,
                            link: f.link,
                            orig_len: f.orig_len,
                            data,
                        },
                    };
                    engine.handle(event, &mut findings);
                    for x in findings.drain(..) {
                        sink(x);
                    }
                }
                b.data.clear();
                b.frames.clear();
                let _ = recycle.try_send(b);
            }
            Msg::End {
                frames: n,
                error: e,
            } => {
                frames = n;
                error = e;
                break;
            }
        }
    }
    engine.handle(Event::End, &mut findings);
    for x in findings.drain(..) {
        sink(x);
    }
    Outcome {
        engine,
        frames,
        error,
    }
}

/// As [`run_file`], over an already opened reader, on the calling thread alone.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_truncated_file_is_analyzed_up_to_the_damage_on_both_paths() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures/v3-ddp.pcap");
        let bytes = std::fs::read(&src).unwrap();
        let cut = std::env::temp_dir().join(format!("cut-{}.pcap", std::process::id()));
        std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3 + 5]).unwrap();
        let mut threaded = Vec::new();
        let a = run_file(&cut, Config::default(), |f| threaded.push(f)).unwrap();
        let mut reader = PcapReader::open(&cut).unwrap();
        let mut single = Vec::new();
        let b = run_reader(&mut reader, Config::default(), &mut |f| single.push(f)).unwrap();
        std::fs::remove_file(&cut).unwrap();
        let (ea, eb) = (a.error.unwrap(), b.error.unwrap());
        assert_eq!(ea.frame, eb.frame);
        assert_eq!(ea.frame, Some(a.frames + 1));
        assert_eq!(a.frames, b.frames);
        assert_eq!(threaded.len(), single.len());
        assert_eq!(
            a.engine.state().totals.icrc_valid,
            b.engine.state().totals.icrc_valid
        );
        assert_eq!(a.engine.state().totals.calls, b.engine.state().totals.calls);
    }
}
