//! Header-only captures, as `tcpdump -s N` makes them: every bundled
//! capture cut at 64, 96, 128 and 256 bytes (by `editcap -s`, tshark's
//! package) against the whole capture. What the cut hides is left unknown,
//! never made up: no finding that the whole capture lacks, every XID
//! answered there answered in the cut one, and the latencies and credits
//! that survive the cut equal the whole capture's.

#[path = "common/analyze.rs"]
mod analyze;
#[path = "common/prereq.rs"]
mod prereq;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use rdma_analyzer::engine::{Config, Finding, Origin};

/// An answered call: its reply frame, latency and credits (requested,
/// granted).
type Answer = (u64, Option<f64>, Option<u32>, Option<u32>);

/// What one run found: anomalies (kind, frames), and the answered calls by
/// call frame.
#[derive(Default)]
struct Found {
    anomalies: BTreeSet<(String, Vec<u64>)>,
    answered: BTreeMap<u64, Answer>,
    cut_frames: u64,
}

fn run(path: &Path) -> Found {
    let mut f = Found::default();
    let run = analyze::run_file(path, Config::default(), |x| match x {
        Finding::Anomaly(a) => {
            f.anomalies
                .insert((a.kind.as_str().to_string(), a.frames.clone()));
        }
        Finding::Transaction(t) if t.origin == Origin::Wire => {
            if let Some(r) = t.reply_frame {
                f.answered.insert(
                    t.call_frame,
                    (r, t.latency_us, t.credits_requested, t.credits_granted),
                );
            }
        }
        Finding::Transaction(_) => {}
    })
    .expect("opens");
    assert!(
        run.error().is_none(),
        "{}: {:?}",
        path.display(),
        run.error()
    );
    f.cut_frames = run.engine.state().totals.cut_frames;
    f
}

fn cut(src: &Path, snap: u32, dir: &Path) -> PathBuf {
    let out = dir.join(format!(
        "{}.s{snap}.pcap",
        src.file_stem().unwrap().to_string_lossy()
    ));
    let st = Command::new("editcap")
        .arg("-s")
        .arg(snap.to_string())
        .arg(src)
        .arg(&out)
        .status()
        .expect("editcap runs (Debian package tshark)");
    assert!(st.success(), "editcap -s {snap} {}", src.display());
    out
}

#[test]
fn header_only_captures_find_nothing_the_whole_capture_lacks() {
    if !prereq::require(
        "editcap",
        prereq::have_command("editcap", "-h"),
        "apt install tshark",
    ) {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures");
    let mut captures: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
        .collect();
    captures.sort();
    assert!(captures.len() >= 9, "{captures:?}");
    let dir = std::env::temp_dir().join(format!("rdma-snaplen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut table = String::from("capture snap: cut frames, answered (whole), extra findings\n");
    let mut failures = Vec::new();
    for src in &captures {
        let whole = run(src);
        for snap in [64, 96, 128, 256] {
            let f = cut(src, snap, &dir);
            let c = run(&f);
            let name = format!("{} -s {snap}", src.file_name().unwrap().to_string_lossy());
            let extra: Vec<_> = c.anomalies.difference(&whole.anomalies).collect();
            let lost: Vec<_> = whole
                .answered
                .keys()
                .filter(|k| !c.answered.contains_key(k))
                .collect();
            let mut differ = Vec::new();
            for (call, (reply, lat, req, granted)) in &c.answered {
                let Some(w) = whole.answered.get(call) else {
                    differ.push(format!("call {call} answered only when cut"));
                    continue;
                };
                if *reply != w.0 || *lat != w.1 {
                    differ.push(format!(
                        "call {call}: reply {reply} {lat:?} vs {} {:?}",
                        w.0, w.1
                    ));
                }
                if req.is_some() && *req != w.2 || granted.is_some() && *granted != w.3 {
                    differ.push(format!(
                        "call {call}: credits {req:?}/{granted:?} vs {:?}/{:?}",
                        w.2, w.3
                    ));
                }
            }
            table.push_str(&format!(
                "{name}: {} cut, {}/{} answered, {} extra findings\n",
                c.cut_frames,
                c.answered.len(),
                whole.answered.len(),
                extra.len()
            ));
            if !extra.is_empty() || !lost.is_empty() || !differ.is_empty() {
                failures.push(format!(
                    "{name}: findings the whole capture lacks {extra:?}; answered calls lost {lost:?}; {differ:?}"
                ));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprint!("{table}");
    assert!(failures.is_empty(), "{}\n{table}", failures.join("\n"));
}
