//! From a transaction to its frames: the frame view (`f` on a ladder step)
//! and the transaction's frames written as a pcapng for Wireshark (`w`).
//!
//! The screen keeps no frame bytes (its memory is for transactions), so
//! both read the input again from its start, up to the last frame wanted
//! ([`pipeline::collect_frames`]): a second or two on a large capture, once
//! per key press. A live source cannot be read again; the message says how
//! to keep frames there (`live --write`).

use std::collections::BTreeSet;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use rdma_capture::{CaptureWriter, Format, Resolution};
use rdma_dissectors::stack::{self, Dissection, RpcRdmaDecode};

use super::model::Model;
use super::state::{Screen, UiState};
use crate::engine::Frame;
use crate::files::AtomicFile;
use crate::output::clock::{Clock, TimeFormat};
use crate::output::frames::frame_text;
use crate::pipeline::{self, OwnedFrame, Reopen};

/// What a frame request is about: a transaction's row in the model.
fn chosen_row(m: &Model, ui: &UiState) -> Option<usize> {
    match ui.screen {
        Screen::Detail => ui.detail,
        Screen::Transactions => m
            .view
            .get(ui.selected[Screen::Transactions.index()])
            .map(|&r| r as usize),
        _ => None,
    }
}

/// Every frame the screen knows of the chosen transaction: its call, its
/// reply and the steps of its ladder.
pub fn transaction_frames(m: &Model, ui: &UiState) -> Option<(u32, u32, BTreeSet<u64>)> {
    let row = chosen_row(m, ui)?;
    let r = m.rows.get(row)?;
    let mut frames: BTreeSet<u64> = [r.call_frame, r.reply_frame]
        .into_iter()
        .filter(|&f| f != 0)
        .collect();
    if let Some(t) = m.detail(row) {
        frames.extend(t.ladder.iter().map(|s| s.frame));
        frames.extend(t.reply_frame);
    }
    Some((r.xid, r.conn, frames))
}

/// The frame of the ladder step selected on the detail screen.
pub fn selected_step_frame(m: &Model, ui: &UiState) -> Option<u64> {
    let t = m.detail(ui.detail?)?;
    t.ladder
        .get(ui.selected[Screen::Detail.index()])
        .map(|s| s.frame)
}

fn reread(reopen: Option<&Reopen>, wanted: &BTreeSet<u64>) -> Result<Vec<OwnedFrame>, String> {
    let reopen = reopen.ok_or_else(|| {
        "this source cannot be read again (a live capture or a pipe): run `live --write FILE` to keep its frames, then `open FILE`".to_string()
    })?;
    let mut source = reopen()?;
    pipeline::collect_frames(source.as_mut(), wanted)
}

/// The frame view's text: the frame dissected, layer by layer.
pub fn show_frame(reopen: Option<&Reopen>, number: u64, config: &stack::Config) -> String {
    let wanted = BTreeSet::from([number]);
    let frames = match reread(reopen, &wanted) {
        Ok(f) => f,
        Err(e) => return format!("frame {number}: {e}"),
    };
    let Some(f) = frames.first() else {
        return format!("frame {number}: the input ended before it");
    };
    // The engine leaves RPC-over-RDMA to its own decoder (its stack says
    // Never) and reads iWARP from its reassembled streams; the frame view
    // shows both per frame, as `frames` does.
    let config = config
        .with_rpcrdma(RpcRdmaDecode::Heuristic)
        .with_iwarp_frames(true);
    let mut d = Dissection::default();
    Frame {
        number: f.number,
        ts_ns: f.ts_ns,
        link: f.link,
        orig_len: f.orig_len,
        data: &f.data,
        icrc: None,
    }
    .dissect_into(&config, &mut d);
    // Wall-clock time: the view has no capture start of its own.
    let mut clock = Clock::new(TimeFormat::Utc);
    clock.saw(f.ts_ns);
    let at = clock.at(Some(f.ts_ns)).to_string();
    let layers = frame_text(f.number, &at, f.orig_len, &d).replace(" | ", "\n  ");
    format!(
        "frame {number}: {} of {} bytes captured\n  {layers}\n(every field: tshark -V -Y 'frame.number == {number}'; `w` writes the transaction's frames to a pcapng)",
        f.data.len(),
        f.orig_len
    )
}

/// Where `w` writes: the current directory, named by the transaction.
pub fn target_for(xid: u32, conn: u32) -> PathBuf {
    PathBuf::from(format!("rdma-c{conn}-xid-{xid:08x}.pcapng"))
}

/// Writes `wanted` to `target` as a pcapng (created safely: never through
/// a symlink, never over what is not a regular file). Returns the message
/// for the screen.
pub fn write_frames(reopen: Option<&Reopen>, wanted: &BTreeSet<u64>, target: &Path) -> String {
    match try_write(reopen, wanted, target) {
        Ok(n) if n == wanted.len() => format!(
            "wrote {n} frames to {} (wireshark {})",
            target.display(),
            target.display()
        ),
        Ok(n) => format!(
            "wrote {n} of {} frames to {}: the input ended before the others",
            wanted.len(),
            target.display()
        ),
        Err(e) => format!("could not write {}: {e}", target.display()),
    }
}

fn try_write(
    reopen: Option<&Reopen>,
    wanted: &BTreeSet<u64>,
    target: &Path,
) -> Result<usize, String> {
    let frames = reread(reopen, wanted)?;
    let Some(first) = frames.first() else {
        return Err("the input ended before the transaction's frames".into());
    };
    // One interface per file: frames merged from captures of different link
    // types go to tshark's mergecap instead.
    if let Some(other) = frames.iter().find(|f| f.link != first.link) {
        return Err(format!(
            "frames {} and {} were captured on different link types; write them with `editcap -r`",
            first.number, other.number
        ));
    }
    let file = AtomicFile::create(target).map_err(|e| e.to_string())?;
    let mut w = CaptureWriter::new(
        BufWriter::new(file),
        Format::Pcapng,
        first.link,
        Resolution::Nano,
    )
    .map_err(|e| e.to_string())?;
    for f in &frames {
        w.packet(f.ts_ns, f.orig_len, &f.data)
            .map_err(|e| e.to_string())?;
    }
    let file = w
        .finish()
        .map_err(|e| e.to_string())?
        .into_inner()
        .map_err(|e| e.error().to_string())?;
    file.commit().map_err(|e| e.to_string())?;
    Ok(frames.len())
}
