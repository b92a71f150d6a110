//! What a capture can come as, through the real binary: the third-party
//! captures (read in place from `../shared/external-captures`, never
//! copied), ERF next to the same frames as DLT 247, standard input through
//! a pipe, gzip and zstd, several files and directories merged by time,
//! and damage in any of them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

#[path = "common/exact.rs"]
mod exact;
#[path = "common/prereq.rs"]
mod prereq;
#[path = "common/tmux.rs"]
mod tmux;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn bundled(name: &str) -> PathBuf {
    root().join("captures").join(name)
}

/// The third-party captures, where the project's shared folder keeps them
/// (`$RDMA_EXTERNAL_CAPTURES` for a clone made elsewhere: scripts/test.sh
/// sets it from the clone's origin).
fn external(name: &str) -> PathBuf {
    std::env::var_os("RDMA_EXTERNAL_CAPTURES")
        .map_or_else(|| root().join("../shared/external-captures"), PathBuf::from)
        .join(name)
}

fn dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rdma-inputs-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(args: &[&str]) -> Output {
    let out = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("panicked"),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs the binary with `input` written into its standard input through a
/// pipe (by a thread, as `cat FILE |` would).
fn run_piped(args: &[&str], input: Vec<u8>) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        // Written in pieces, as a pipe delivers them.
        for piece in input.chunks(7919) {
            if stdin.write_all(piece).is_err() {
                break;
            }
        }
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// `report --json` of `args`, which must exit `code`; `file` left out
/// (it names the inputs as given).
fn report(args: &[&str], code: i32) -> (Value, String) {
    let mut a = vec!["report", "--json"];
    a.extend_from_slice(args);
    let out = run(&a);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    let mut v = json(&out);
    v["file"] = Value::Null;
    (v, err)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// What the shared folder's README says of each file: frames, and the
/// frames with a BTH (RoCE or InfiniBand) and CM messages the analyzer
/// finds in them (tshark 4.0 agrees on the frame counts).
#[test]
fn every_third_party_capture_opens_and_is_read_whole() {
    let expected: &[(&str, u64, u64, u64)] = &[
        ("FirstSuccesfullRping.pcapng", 429, 17, 5),
        ("Frame_req_and_response.pcapng", 140, 10, 5),
        ("Frame_req_and_response_5000_bytes.pcapng", 166, 13, 5),
        ("Frame_req_and_response_htons_bytes.pcapng", 363, 19, 10),
        ("RoCE_capture_10_packets.pcapng", 176, 125, 5),
        ("RoCE_capture_1_packet_1.pcapng", 27, 17, 5),
        ("Roce_PacketSize_1400.pcapng", 54, 19, 5),
        ("Roce_PacketSize_2400_stall.pcapng", 935, 11, 3),
        ("Roce_PacketSize_5000_bytes.pcapng", 1229, 25, 5),
        ("capture_S10000_C1.pcapng", 18, 18, 5),
        ("infiniband.dlt247.pcap", 43, 43, 9),
        ("infiniband.pcap", 43, 43, 9),
        ("rdma_traffic_capture.pcap", 184, 0, 0),
        ("roce.pcap", 123, 105, 0),
        ("rping_3072_faillire.pcapng", 157, 13, 5),
    ];
    let dir = external("");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e} (the third-party captures)", dir.display()))
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".pcap") || n.ends_with(".pcapng"))
        .collect();
    names.sort();
    let mut listed: Vec<&str> = expected.iter().map(|e| e.0).collect();
    listed.sort();
    assert_eq!(
        names, listed,
        "a capture was added or removed: say what it holds here"
    );
    for &(name, frames, rdma, cm) in expected {
        let (r, _) = report(&[s(&external(name))], 0);
        assert_eq!(r["complete"], true, "{name}");
        let t = &r["totals"];
        let n = |k: &str| exact::num(&t[k]).unwrap();
        assert_eq!(
            (n("frames"), n("rdma_frames"), n("cm_messages")),
            (frames, rdma, cm),
            "{name}"
        );
    }
}

/// The negative control: no RDMA at all, and the report says it read
/// every frame and found none (not an empty report that could be a
/// failure to read).
#[test]
fn the_negative_control_reports_no_rdma_and_that_it_looked() {
    let f = external("rdma_traffic_capture.pcap");
    let (r, err) = report(&[s(&f)], 0);
    assert_eq!(r["complete"], true);
    assert_eq!(r["totals"]["frames"], 184);
    assert_eq!(r["totals"]["rdma_frames"], 0);
    assert_eq!(r["connections"], Value::Array(vec![]));
    assert!(err.is_empty(), "{err}");
    let out = run(&["report", s(&f)]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("184 frames (0 RDMA"), "{text}");
}

/// ibdump's ERF and the same frames as DLT 247 are one capture: every
/// frame dissects the same. What ERF adds is its own timestamp, in ns
/// where the pcap record header has µs: the times agree to the µs.
#[test]
fn erf_and_dlt_247_give_the_same_frames_and_report() {
    let erf = external("infiniband.pcap");
    let dlt = external("infiniband.dlt247.pcap");
    let frames = |f: &Path| -> Vec<Value> {
        let out = run(&["frames", "--json", s(f)]);
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let (a, b) = (frames(&erf), frames(&dlt));
    assert_eq!(a.len(), 43);
    assert_eq!(a.len(), b.len());
    let mut finer = 0;
    for (mut x, mut y) in a.into_iter().zip(b) {
        let (tx, ty) = (
            exact::num(&x["ts_ns"]).unwrap(),
            exact::num(&y["ts_ns"]).unwrap(),
        );
        assert_eq!(tx / 1000 * 1000, ty, "frame {}", x["frame"]);
        finer += usize::from(tx != ty);
        x["ts_ns"] = Value::Null;
        y["ts_ns"] = Value::Null;
        assert_eq!(x, y);
    }
    assert!(finer > 0, "the ERF timestamps carry ns");
    let (mut r, _) = report(&[s(&erf)], 0);
    let (mut q, _) = report(&[s(&dlt)], 0);
    for k in ["first_ts_ns", "last_ts_ns"] {
        let (x, y) = (
            exact::num(&r["totals"][k]).unwrap(),
            exact::num(&q["totals"][k]).unwrap(),
        );
        assert_eq!(x / 1000 * 1000, y, "{k}");
        r["totals"][k] = Value::Null;
        q["totals"][k] = Value::Null;
        let conns = r["connections"].as_array_mut().unwrap();
        for (c, d) in conns
            .iter_mut()
            .zip(q["connections"].as_array_mut().unwrap())
        {
            assert_eq!(
                exact::num(&c[k]).unwrap() / 1000 * 1000,
                exact::num(&d[k]).unwrap()
            );
            c[k] = Value::Null;
            d[k] = Value::Null;
        }
    }
    // The client timelines: the same times to the µs, and the gaps
    // between connections as close.
    for (a, b) in r["timeline"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .zip(q["timeline"].as_array_mut().unwrap())
    {
        for (c, d) in a["connections"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .zip(b["connections"].as_array_mut().unwrap())
        {
            for k in ["first_ts_ns", "last_ts_ns"] {
                assert_eq!(
                    exact::num(&c[k]).unwrap() / 1000 * 1000,
                    exact::num(&d[k]).unwrap()
                );
                c[k] = Value::Null;
                d[k] = Value::Null;
            }
            // The CM messages' times and those taken from them.
            let us = |v: &mut Value| {
                if let Some(t) = exact::num(v) {
                    *v = Value::from(t / 1000 * 1000);
                }
            };
            for (x, y) in c["cm"]
                .as_array_mut()
                .unwrap()
                .iter_mut()
                .zip(d["cm"].as_array_mut().unwrap())
            {
                us(&mut x["ts_ns"]);
                us(&mut y["ts_ns"]);
            }
            for k in ["established_ts_ns", "torn_down_ts_ns", "closed_ts_ns"] {
                us(&mut c[k]);
                us(&mut d[k]);
            }
            let gap = |v: &Value| v["gap_before_ms"].as_f64();
            if let (Some(x), Some(y)) = (gap(c), gap(d)) {
                assert!((x - y).abs() < 0.002, "{x} {y}");
            }
            c["gap_before_ms"] = Value::Null;
            d["gap_before_ms"] = Value::Null;
        }
    }
    assert_eq!(r, q);
    // tshark reads the ERF file (not DLT 247), with the same ns.
    if prereq::tshark() {
        let out = Command::new("tshark")
            .args(["-r", s(&erf), "-T", "fields", "-e", "frame.time_epoch"])
            .output()
            .unwrap();
        let first = String::from_utf8_lossy(&out.stdout);
        let first = first.lines().next().unwrap_or_default();
        assert_eq!(first, "1210794479.499693535", "{first}");
    }
}

/// A capture through a pipe reads as the file does: pcap and pcapng, by
/// every command.
#[test]
fn standard_input_through_a_pipe_reads_as_the_file() {
    for f in [
        bundled("v3-ddp.pcap"),
        external("FirstSuccesfullRping.pcapng"),
    ] {
        let bytes = std::fs::read(&f).unwrap();
        let (want, _) = report(&[s(&f)], 0);
        let out = run_piped(&["report", "--json", "-"], bytes.clone());
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut got = json(&out);
        assert_eq!(got["file"], "-");
        got["file"] = Value::Null;
        assert_eq!(got, want, "{}", f.display());
        for cmd in ["frames", "transactions", "anomalies"] {
            let file = run(&[cmd, "--json", s(&f)]);
            let piped = run_piped(&[cmd, "--json", "-"], bytes.clone());
            assert_eq!(piped.status.code(), Some(0), "{cmd}");
            assert_eq!(file.stdout, piped.stdout, "{cmd} {}", f.display());
        }
    }
    // Cut short in the pipe: damage, with what came before analyzed.
    let bytes = std::fs::read(bundled("v3-ddp.pcap")).unwrap();
    let cut = bytes[..bytes.len() / 2].to_vec();
    let out = run_piped(&["report", "--json", "-"], cut);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("standard input: frame "), "{err}");
    let r = json(&out);
    assert_eq!(r["complete"], false);
    assert!(r["totals"]["frames"].as_u64().unwrap() > 1000);
}

fn gzip(b: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

/// zstd with a content checksum, as the `zstd` command writes it by
/// default (without one, a flipped byte in literal data decompresses to a
/// flipped byte, and no reader can tell).
fn zstd(b: &[u8]) -> Vec<u8> {
    let mut e = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    e.include_checksum(true).unwrap();
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

/// gzip and zstd read as the plain file, from a file (whatever it is
/// named) and through a pipe.
#[test]
fn gzip_and_zstd_captures_read_as_the_plain_ones() {
    let d = dir("compressed");
    for name in ["v3-ddp.pcap", "v42-reminv.pcap"] {
        let plain = bundled(name);
        let bytes = std::fs::read(&plain).unwrap();
        let (want, _) = report(&[s(&plain)], 0);
        // The magic decides, not the name.
        for (packed, file) in [(gzip(&bytes), "a.gz"), (zstd(&bytes), "b.pcap")] {
            let p = d.join(file);
            std::fs::write(&p, &packed).unwrap();
            let (got, err) = report(&[s(&p)], 0);
            assert_eq!(got, want, "{name} {file}: {err}");
            let mut piped = json(&run_piped(&["report", "--json", "-"], packed));
            piped["file"] = Value::Null;
            assert_eq!(piped, want, "{name} {file} piped");
        }
    }
}

/// A compressed capture cut short or corrupted: the frames before are
/// analyzed, the damage is named with the file, the format and the
/// compressed bytes read, and the exit status is 2.
#[test]
fn a_damaged_compressed_capture_is_exit_2_with_what_came_before() {
    let d = dir("compressed-damage");
    let bytes = std::fs::read(bundled("v3-ddp.pcap")).unwrap();
    let (whole, _) = report(&[s(&bundled("v3-ddp.pcap"))], 0);
    let all = whole["totals"]["frames"].as_u64().unwrap();
    for (fmt, packed) in [("gzip", gzip(&bytes)), ("zstd", zstd(&bytes))] {
        let cut = &packed[..packed.len() * 2 / 3];
        let p = d.join(format!("cut.{fmt}"));
        std::fs::write(&p, cut).unwrap();
        let (r, err) = report(&[s(&p)], 2);
        assert!(
            err.contains(&format!(
                "cut.{fmt}: frame {}",
                r["totals"]["frames"].as_u64().unwrap() + 1
            )) && err.contains(&format!(
                "the {fmt} stream is corrupt or cut short after {} compressed bytes",
                cut.len()
            )) && err.contains("of the decompressed"),
            "{err}"
        );
        assert_eq!(r["complete"], false);
        let n = r["totals"]["frames"].as_u64().unwrap();
        assert!(n > all / 3 && n < all, "{fmt}: {n} of {all}");
        // A byte flipped in the middle of the compressed data.
        let mut bad = packed.clone();
        let mid = bad.len() / 2;
        bad[mid] ^= 0x55;
        let p = d.join(format!("flipped.{fmt}"));
        std::fs::write(&p, &bad).unwrap();
        let out = run(&["report", "--json", s(&p)]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{fmt}: {err}");
        assert!(err.contains(&format!("flipped.{fmt}")), "{err}");
    }
}

/// `editcap -c` splits a capture; the parts, named in any order or as a
/// directory, merge back to the original: same report, same frames.
#[test]
fn a_split_capture_merges_back_to_the_original() {
    if !prereq::tshark() {
        return;
    }
    let d = dir("split");
    let parts = d.join("parts");
    std::fs::create_dir_all(&parts).unwrap();
    let orig = bundled("v3-ddp.pcap");
    let st = Command::new("editcap")
        .args(["-c", "700", s(&orig), s(&parts.join("part.pcap"))])
        .status()
        .unwrap();
    assert!(st.success());
    let mut files: Vec<PathBuf> = std::fs::read_dir(&parts)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    // One compressed, one through standard input: all inputs are equal.
    let gz = d.join("first.pcap.gz");
    std::fs::write(&gz, gzip(&std::fs::read(&files[0]).unwrap())).unwrap();
    let (want, _) = report(&[s(&orig)], 0);
    let reversed: Vec<&str> = files.iter().rev().map(|p| s(p)).collect();
    let (got, err) = report(&reversed, 0);
    assert_eq!(got, want);
    // Where each part's frames went: part 2's frame 1 is merged frame 701.
    assert!(
        err.contains("merged frames 701-1400: merged frame = its frame + 700"),
        "{err}"
    );
    let (got, _) = report(&[s(&parts)], 0);
    assert_eq!(got, want);
    let mut mixed = vec![s(&gz), "-"];
    mixed.extend(files[2..].iter().map(|p| s(p)));
    let mut a = vec!["report", "--json"];
    a.extend(mixed);
    let mut got = json(&run_piped(&a, std::fs::read(&files[1]).unwrap()));
    got["file"] = Value::Null;
    assert_eq!(got, want);
    // Frame by frame, numbers included.
    let frames = |args: &[&str]| {
        let mut a = vec!["frames", "--json"];
        a.extend_from_slice(args);
        run(&a).stdout
    };
    assert_eq!(frames(&reversed), frames(&[s(&orig)]));
}

/// Inputs whose times interleave: the merge takes frames in the order
/// `mergecap` writes them, and numbers them as tshark numbers its output.
#[test]
fn interleaved_inputs_merge_in_mergecaps_order() {
    if !prereq::tshark() {
        return;
    }
    let d = dir("interleave");
    let (a, b) = (bundled("v3-inline.pcap"), bundled("v41-inline.pcap"));
    // The second capture moved in time so it overlaps the first.
    let first = |f: &Path| -> f64 {
        let o = Command::new("tshark")
            .args([
                "-r",
                s(f),
                "-c",
                "1",
                "-T",
                "fields",
                "-e",
                "frame.time_epoch",
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
    };
    let shift = first(&a) - first(&b) + 0.5;
    let moved = d.join("moved.pcapng");
    let st = Command::new("editcap")
        .args(["-t", &format!("{shift:.6}"), s(&b), s(&moved)])
        .status()
        .unwrap();
    assert!(st.success());
    let merged = d.join("merged.pcapng");
    let st = Command::new("mergecap")
        .args(["-w", s(&merged), s(&a), s(&moved)])
        .status()
        .unwrap();
    assert!(st.success());
    let ours = run(&["frames", "--json", s(&a), s(&moved)]);
    assert_eq!(ours.status.code(), Some(0));
    let theirs = run(&["frames", "--json", s(&merged)]);
    assert_eq!(
        String::from_utf8_lossy(&ours.stdout),
        String::from_utf8_lossy(&theirs.stdout)
    );
    let err = String::from_utf8_lossy(&ours.stderr);
    assert!(err.contains("interleaved with other inputs"), "{err}");
}

/// One damaged input among several: exit 2, the damage named with its
/// file and its own frame number, every other input analyzed; a file in
/// a directory that is no capture is passed over with a word, not damage;
/// inputs of different link types (Ethernet, native InfiniBand) merge.
#[test]
fn damage_in_one_input_spares_the_others() {
    let d = dir("damage");
    let sub = d.join("set");
    std::fs::create_dir_all(&sub).unwrap();
    let good = std::fs::read(bundled("v3-inline.pcap")).unwrap();
    std::fs::write(sub.join("a.pcap"), &good).unwrap();
    let dmg = std::fs::read(bundled("v42-inline.pcap")).unwrap();
    // Cut inside its last record.
    std::fs::write(sub.join("b.pcap"), &dmg[..dmg.len() - 10]).unwrap();
    std::fs::copy(external("infiniband.pcap"), sub.join("c.erf.pcap")).unwrap();
    std::fs::write(sub.join("notes.txt"), b"not a capture").unwrap();
    let frames = |f: &Path| report(&[s(f)], 0).0["totals"]["frames"].as_u64().unwrap();
    let (a, c) = (frames(&bundled("v3-inline.pcap")), 43);
    let (r, err) = report(&[s(&sub)], 2);
    let b_path = sub.join("b.pcap");
    assert!(
        err.contains(&format!("{}: frame ", b_path.display()))
            && err.contains("the other inputs go on")
            && err.contains("1 of 3 inputs could not be read whole"),
        "{err}"
    );
    assert!(
        err.contains("notes.txt") && err.contains("passed over"),
        "{err}"
    );
    assert_eq!(r["complete"], false);
    assert!(r["read_error"].as_str().unwrap().contains("b.pcap"));
    let n = r["totals"]["frames"].as_u64().unwrap();
    let (whole_b, _) = report(&[s(&bundled("v42-inline.pcap"))], 0);
    let b = whole_b["totals"]["frames"].as_u64().unwrap();
    assert_eq!(n, a + c + b - 1, "all of a and c, b up to its last frame");
    assert!(r["totals"]["rdma_frames"].as_u64().unwrap() >= 43);
    // A named file that is no capture is damage, and the rest is read.
    let (r, err) = report(&[s(&sub.join("a.pcap")), s(&sub.join("notes.txt"))], 2);
    assert_eq!(r["totals"]["frames"].as_u64().unwrap(), a);
    assert!(
        err.contains("notes.txt: not a capture: the file starts with text"),
        "{err}"
    );
    // Nothing to read at all: an error, not an empty report.
    let empty = d.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = run(&["report", s(&empty)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}

/// Every command that reads captures takes several, and `open` names
/// them when it has no terminal.
#[test]
fn every_command_takes_several_inputs() {
    let (a, b) = (bundled("v3-inline.pcap"), bundled("v41-inline.pcap"));
    for cmd in ["report", "transactions", "anomalies", "frames"] {
        let out = run(&[cmd, s(&a), s(&b)]);
        assert_eq!(out.status.code(), Some(0), "{cmd}");
        assert!(!out.stdout.is_empty(), "{cmd}");
    }
    let out = run(&["open", s(&a), s(&b)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("report {} {}", s(&a), s(&b))),
        "{err}"
    );
}

/// The TUI over a gzip capture through a pipe merged with a plain file:
/// it keys from the terminal while the capture comes on standard input.
#[test]
fn open_reads_a_pipe_and_a_file_merged() {
    if !prereq::tmux() {
        return;
    }
    let d = dir("tui");
    let gz = d.join("v3-inline.pcap.gz");
    std::fs::write(
        &gz,
        gzip(&std::fs::read(bundled("v3-inline.pcap")).unwrap()),
    )
    .unwrap();
    let shell = format!(
        "cat '{}' | '{BIN}' open - '{}'; echo EXITED $?; sleep 60",
        gz.display(),
        bundled("v41-inline.pcap").display()
    );
    let t = tmux::Tmux::start(format!("rdma-inputs-tui-{}", std::process::id()), &shell);
    let p = t.wait_for("done");
    assert!(p.contains("104 calls, 104 replies"), "{p}");
    t.send(&["q"]);
    t.wait_for("EXITED 0");
}

/// A rotated set longer than the merge keeps open (`editcap -c 100`: 47
/// files): read under a limit of 40 open files, which opening them all at
/// once would break, and still the original's report. Files wait closed
/// until the merge reaches their first frame.
#[test]
fn a_long_rotated_set_is_read_within_a_small_file_limit() {
    if !prereq::tshark() {
        return;
    }
    let d = dir("rotated");
    let orig = bundled("v3-ddp.pcap");
    let st = Command::new("editcap")
        .args(["-c", "100", s(&orig), s(&d.join("ring.pcap"))])
        .status()
        .unwrap();
    assert!(st.success());
    let n = std::fs::read_dir(&d).unwrap().count();
    assert!(n > 40, "{n} files");
    // One of them compressed: it is decompressed twice, the same both times.
    let third = {
        let mut f: Vec<PathBuf> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        f.sort();
        f[2].clone()
    };
    std::fs::write(
        third.with_extension("pcap.zst"),
        zstd(&std::fs::read(&third).unwrap()),
    )
    .unwrap();
    std::fs::remove_file(&third).unwrap();
    let (want, _) = report(&[s(&orig)], 0);
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n 40 && exec '{BIN}' report --json '{}'",
            d.display()
        ))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let mut got = json(&out);
    got["file"] = Value::Null;
    assert_eq!(got, want);
    assert_eq!(
        err.matches("merged frame = its frame + ").count(),
        n - 1,
        "{err}"
    );
}

/// Messages about what is not a capture say what is wrong and what to do,
/// without a byte offset that points at nothing or an editcap that cannot
/// help; a directory's many non-captures are one line; `open --json` is
/// refused, not ignored.
#[test]
fn non_captures_are_told_plainly() {
    let d = dir("non_captures");
    let missing = d.join("missing.pcap");
    let out = run(&["report", s(&missing)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        err.contains("missing.pcap: read failed: No such file") && !err.contains("byte offset"),
        "{err}"
    );
    let md = d.join("README.md");
    std::fs::write(&md, b"# Notes\n").unwrap();
    let out = run(&["report", s(&md)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("README.md: not a capture: the file starts with text (\"# No\")")
            && !err.contains("editcap"),
        "{err}"
    );
    // Binary that is no pcap: another capture format, perhaps.
    let bin2 = d.join("x.bin");
    std::fs::write(&bin2, [0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0]).unwrap();
    let err = String::from_utf8_lossy(&run(&["report", s(&bin2)]).stderr).to_string();
    assert!(err.contains("convert it with `editcap -F pcapng`"), "{err}");
    // A directory: a capture and five notes give one line for the notes.
    let many = d.join("many");
    std::fs::create_dir_all(&many).unwrap();
    std::fs::copy(bundled("v3-inline.pcap"), many.join("a.pcap")).unwrap();
    for i in 0..5 {
        std::fs::write(many.join(format!("n{i}.md")), b"# n\n").unwrap();
    }
    let out = run(&["report", s(&many)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("passed over").count(), 1, "{err}");
    assert!(
        err.contains("5 files in the directories given are not captures"),
        "{err}"
    );
    assert!(out.status.success(), "{err}");
    // open --json: refused before the screen is taken.
    let out = run(&["open", "--json", s(&bundled("v3-inline.pcap"))]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        err.contains("--json does not apply to the terminal UI"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// A capture with RDMA traffic but no RPC-over-RDMA (rping, perftest) gets
/// no cause, and the report says why: there was nothing to judge, which is
/// not the same result as RPCs judged healthy.
#[test]
fn a_capture_without_rpcs_says_there_was_nothing_to_judge() {
    let f = external("Roce_PacketSize_2400_stall.pcapng");
    let out = run(&["report", f.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("nothing to judge: no RPC-over-RDMA call in this capture (1 RDMA connection carrying other traffic)"),
        "{text}"
    );
    assert!(!text.contains("no cause found"), "{text}");
    let ddp = run(&["report", bundled("v3-ddp.pcap").to_str().unwrap()]);
    assert!(
        String::from_utf8_lossy(&ddp.stdout)
            .contains("no cause found: looked at 44 RPCs on 1 connection"),
        "{}",
        String::from_utf8_lossy(&ddp.stdout)
    );
}
