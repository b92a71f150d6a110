//! The iWARP generator against tshark, an independent MPA/DDP/RDMAP
//! dissector: every FPDU tshark decodes sits in the frame the sidecar
//! says, with the same ULPDU_Length, opcode and CRC verdict; the wrong CRC
//! and the Terminate are where the sidecar puts them.
//!
//! tshark 4.0's limits (docs/iwarp-streams.md) bound what is compared: it
//! needs the MPA Request, and stops at the first marker that
//! falls at a segment's end, so marked captures are compared up to there.
//! Skipped (with a message) when tshark is not installed.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use rdma_analyzer::synth::{generate_iwarp, Fault, IwarpOptions, IwarpSummary};

#[path = "common/analyze.rs"]
mod analyze;
#[path = "common/prereq.rs"]
mod prereq;

use rdma_analyzer::engine::{Config, Finding, Kind};

/// Per frame: ULPDU_Length, opcode, CRC verdict, as tshark decodes them.
fn tshark_fpdus(pcap: &Path) -> BTreeMap<u64, (u16, u8, Option<bool>)> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(pcap)
        .args(["-Y", "iwarp_ddp_rdmap", "-T", "fields"])
        .args(["-e", "frame.number", "-e", "iwarp_mpa.ulpdulength"])
        .args(["-e", "iwarp_rdma.opcode", "-e", "iwarp_mpa.crc_check"])
        .output()
        .expect("running tshark");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut rows = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let first = |i: usize| f.get(i).and_then(|v| v.split(',').next()).unwrap_or("");
        let num = |s: &str| {
            s.strip_prefix("0x").map_or_else(
                || s.parse::<u64>().ok(),
                |h| u64::from_str_radix(h, 16).ok(),
            )
        };
        let (Some(frame), Some(ulen), Some(op)) = (num(first(0)), num(first(1)), num(first(2)))
        else {
            panic!("tshark row {line:?} lacks a field");
        };
        rows.insert(frame, (ulen as u16, op as u8, None));
    }
    // The verdict is only in the detail: "Good CRC32" or "Bad CRC32".
    let detail = Command::new("tshark")
        .arg("-r")
        .arg(pcap)
        .args(["-Y", "iwarp_ddp_rdmap", "-V"])
        .output()
        .expect("running tshark");
    let mut frame = 0u64;
    for line in String::from_utf8_lossy(&detail.stdout).lines() {
        if let Some(rest) = line.strip_prefix("Frame ") {
            frame = rest
                .split(':')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
        } else if line.contains("Good CRC32") || line.contains("Bad CRC32") {
            if let Some(r) = rows.get_mut(&frame) {
                r.2 = Some(line.contains("Good CRC32"));
            }
        }
    }
    rows
}

fn opcode(name: &str) -> u8 {
    match name {
        "RDMA Write" => 0,
        "RDMA Read Request" => 1,
        "RDMA Read Response" => 2,
        "Send" => 3,
        "Send with Invalidate" => 4,
        "Terminate" => 7,
        other => panic!("the generator sent {other}"),
    }
}

/// Writes the capture, compares; returns how many FPDUs tshark decoded
/// and how many the sidecar lists.
fn compare(o: &IwarpOptions, dir: &Path, name: &str) -> (usize, usize, IwarpSummary) {
    let path = dir.join(name);
    let (sum, bytes) = generate_iwarp(o, Vec::new()).unwrap();
    std::fs::write(&path, bytes).unwrap();
    let got = tshark_fpdus(&path);
    let mut truth = BTreeMap::new();
    for d in &sum.directions {
        for f in &d.fpdus {
            truth.insert(f.frame, (f.ulpdu_length, opcode(f.opcode), f.crc_valid));
        }
    }
    for (frame, row) in &got {
        assert_eq!(truth.get(frame), Some(row), "{name} frame {frame}");
    }
    (got.len(), truth.len(), sum)
}

#[test]
fn tshark_agrees_with_the_generator() {
    if !prereq::tshark() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("synth-iwarp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let clean = IwarpOptions::default();
    let (seen, all, _) = compare(&clean, &dir, "clean.pcap");
    assert_eq!(seen, all, "tshark decodes every FPDU of a clean capture");
    // Without CRCs the CRC field is still sent (RFC 5044 section 4.1):
    // tshark frames the FPDUs the same way, and checks nothing.
    let plain = IwarpOptions {
        crc: false,
        ..IwarpOptions::default()
    };
    let (seen, all, _) = compare(&plain, &dir, "no-crc.pcap");
    assert_eq!(
        seen, all,
        "tshark decodes every FPDU of a capture without CRCs"
    );
    let faults = IwarpOptions {
        faults: Fault::ALL
            .into_iter()
            .filter(|f| *f != Fault::MidStream)
            .collect(),
        ..IwarpOptions::default()
    };
    let (seen, all, sum) = compare(&faults, &dir, "faults.pcap");
    // The reordered segment tshark calls a retransmission, and leaves.
    assert_eq!(seen + 1, all, "faults.pcap");
    assert_eq!(sum.bad_crc_frames.len(), 1);
    assert!(sum.terminate.is_some());
    let marked = IwarpOptions {
        markers: true,
        ..IwarpOptions::default()
    };
    let (seen, all, _) = compare(&marked, &dir, "markers.pcap");
    assert!(
        seen >= 20 && seen <= all,
        "markers.pcap: tshark decoded {seen} of {all}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Reads `path` through the engine: its transactions, the messages of its
/// CRC, framing and DDP findings, and the run.
fn read_counting(path: &Path) -> (u64, Vec<String>, analyze::Run) {
    let mut txns = 0u64;
    let mut bad = Vec::new();
    let run = analyze::run_file(path, Config::default(), |f| match f {
        Finding::Transaction(_) => txns += 1,
        Finding::Anomaly(a)
            if matches!(
                a.kind,
                Kind::MpaCrcMismatch | Kind::Malformed | Kind::IwarpViolation
            ) =>
        {
            bad.push(a.message.clone())
        }
        _ => {}
    })
    .unwrap();
    (txns, bad, run)
}

/// The engine reads a generated capture whole, whichever of markers and
/// CRCs the two ends asked for: every transaction the sidecar says a reader
/// can put together, and no CRC, framing or DDP finding (the generator
/// makes none without being asked). Markers are asked for by each end for
/// the stream it receives, so a marked capture also checks that the
/// client's Request is what frames the server's FPDUs.
#[test]
fn the_engine_reads_generated_captures_whole() {
    let dir = std::env::temp_dir().join(format!("synth-iwarp-engine-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (markers, crc) in [(false, true), (false, false), (true, true), (true, false)] {
        let o = IwarpOptions {
            markers,
            crc,
            ..IwarpOptions::default()
        };
        let (sum, bytes) = generate_iwarp(&o, Vec::new()).unwrap();
        let path = dir.join(format!("m{markers}-c{crc}.pcap"));
        std::fs::write(&path, bytes).unwrap();
        let (txns, bad, run) = read_counting(&path);
        let what = format!("markers {markers}, crc {crc}");
        assert!(bad.is_empty(), "{what}: {bad:#?}");
        assert_eq!(txns, sum.transactions, "{what}");
        let iw = &run.engine.state().totals.iwarp;
        assert_eq!(iw.gaps, 0, "{what}");
        assert_eq!(iw.crc_invalid, 0, "{what}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A capture that starts mid-stream on a connection with markers: the
/// engine finds them from the FPDUs (no MPA exchange announces them) and
/// reads every transaction the sidecar says a reader can put together,
/// with no CRC, framing or DDP finding; its two resynchronisations (one a
/// direction) are certain exactly when CRCs confirm them. tshark needs
/// the MPA Request to decode iWARP, so it decodes nothing of such a
/// capture and is not asked.
#[test]
fn the_engine_finds_the_markers_of_a_mid_stream_capture() {
    let dir = std::env::temp_dir().join(format!("synth-iwarp-mid-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for crc in [true, false] {
        let o = IwarpOptions {
            markers: true,
            crc,
            faults: vec![Fault::MidStream],
            ..IwarpOptions::default()
        };
        let (sum, bytes) = generate_iwarp(&o, Vec::new()).unwrap();
        let path = dir.join(format!("mid-c{crc}.pcap"));
        std::fs::write(&path, bytes).unwrap();
        let (replies, bad, run) = read_counting(&path);
        assert!(bad.is_empty(), "crc {crc}: {bad:#?}");
        let fpdus: usize = sum.directions.iter().map(|d| d.fpdus.len()).sum();
        let iw = &run.engine.state().totals.iwarp;
        assert_eq!(iw.fpdus, fpdus as u64, "crc {crc}");
        assert_eq!(iw.resyncs, 2, "crc {crc}");
        assert_eq!(iw.resyncs_uncertain, if crc { 0 } else { 2 }, "crc {crc}");
        assert_eq!(iw.crc_invalid, 0, "crc {crc}");
        assert_eq!(iw.gaps, 0, "crc {crc}");
        // The same capture without markers is read to the same end.
        let plain = IwarpOptions {
            markers: false,
            ..o.clone()
        };
        let (_, bytes) = generate_iwarp(&plain, Vec::new()).unwrap();
        let unmarked = dir.join(format!("mid-unmarked-c{crc}.pcap"));
        std::fs::write(&unmarked, bytes).unwrap();
        let mut plain_replies = 0u64;
        analyze::run_file(&unmarked, Config::default(), |f| {
            if let Finding::Transaction(_) = f {
                plain_replies += 1;
            }
        })
        .unwrap();
        assert_eq!(replies, plain_replies, "crc {crc}");
        assert!(replies > 0, "crc {crc}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
