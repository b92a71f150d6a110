//! The synthetic capture generator against the analyzer's engine and tshark.
//!
//! - clean traffic gives no anomaly, and the engine counts exactly the
//!   calls, replies, chunk bytes and remote invalidations generated;
//! - each injected violation is reported with the kind and frames the
//!   sidecar names, and nothing else;
//! - tshark decodes the output as it decodes the lab captures;
//! - a seed reproduces a file byte for byte.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "common/analyze.rs"]
mod analyze;
#[path = "common/prereq.rs"]
mod prereq;
use rdma_analyzer::engine::{Config, Finding, Totals, Transfer};
use rdma_analyzer::sources::pcap::PcapReader;
use rdma_analyzer::synth::wire::Framing;
use rdma_analyzer::synth::{self, Inject, Mix, Options, Summary};
use rdma_dissectors::ib::bth::Opcode;
use rdma_dissectors::rpcrdma::RpcRdmaHeader;
use rdma_dissectors::stack;

/// A capture path unique to this test process and `name`; removed on drop.
struct TempCapture(PathBuf);

impl TempCapture {
    fn new(name: &str) -> Self {
        let p = std::env::temp_dir().join(format!(
            "rdma-synth-test-{}-{name}.pcap",
            std::process::id()
        ));
        TempCapture(p)
    }
}

impl Drop for TempCapture {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_file(synth::sidecar_path(&self.0));
    }
}

/// What the engine made of a file.
struct Analysis {
    /// (kind, frames) of every anomaly, sorted.
    anomalies: Vec<(String, Vec<u64>)>,
    transactions: u64,
    /// Reply frames of NFS READs whose data went in a write chunk.
    read_reply_frames: Vec<u64>,
    totals: Totals,
}

fn analyze(path: &Path) -> Analysis {
    let mut anomalies = Vec::new();
    let mut transactions = 0;
    let mut read_reply_frames = Vec::new();
    let outcome = analyze::run_file(path, Config::default(), |f| match f {
        Finding::Anomaly(a) => {
            let mut frames = a.frames.clone();
            frames.sort_unstable();
            anomalies.push((a.kind.as_str().to_string(), frames));
        }
        Finding::Transaction(t) => {
            transactions += 1;
            if t.program == Some(100_003)
                && t.proc == Some(6)
                && t.reply_transfer == Transfer::WriteChunks
            {
                read_reply_frames.extend(t.reply_frame);
            }
        }
    })
    .expect("the synthetic capture opens");
    assert!(
        outcome.error().is_none(),
        "reading stopped: {:?}",
        outcome.error()
    );
    anomalies.sort();
    read_reply_frames.sort_unstable();
    Analysis {
        anomalies,
        transactions,
        read_reply_frames,
        totals: outcome.engine.state().totals.clone(),
    }
}

fn generate(name: &str, opts: &Options) -> (TempCapture, Summary) {
    let f = TempCapture::new(name);
    let sum = synth::write_files(opts, &f.0).expect("generation succeeds");
    // The sidecar says the same as the summary.
    let side: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(synth::sidecar_path(&f.0)).expect("sidecar written"),
    )
    .expect("sidecar is JSON");
    assert_eq!(side["frames"], sum.frames);
    assert_eq!(
        side["anomalies"].as_array().map(Vec::len),
        Some(sum.anomalies.len())
    );
    (f, sum)
}

fn expected(sum: &Summary) -> Vec<(String, Vec<u64>)> {
    let mut v: Vec<(String, Vec<u64>)> = sum
        .anomalies
        .iter()
        .map(|a| {
            let mut f = a.frames.clone();
            f.sort_unstable();
            (a.kind.clone(), f)
        })
        .collect();
    v.sort();
    v
}

fn assert_clean(name: &str, opts: &Options) {
    let (f, sum) = generate(name, opts);
    let a = analyze(&f.0);
    assert_eq!(a.anomalies, vec![], "{name}: clean traffic gave anomalies");
    assert!(sum.anomalies.is_empty());
    assert_eq!(a.totals.frames, sum.frames, "{name}: frames");
    assert_eq!(a.totals.icrc_valid, sum.frames, "{name}: every ICRC valid");
    assert_eq!(a.totals.psn_gaps, 0, "{name}: PSN gaps");
    assert_eq!(a.totals.retransmissions, 0, "{name}: retransmissions");
    assert_eq!(a.totals.unassociated_frames, 0, "{name}: unassociated");
    assert_eq!(a.transactions, sum.transactions, "{name}: transactions");
    assert_eq!(a.totals.calls, sum.calls, "{name}: calls");
    assert_eq!(a.totals.replies, sum.replies, "{name}: replies");
    assert_eq!(a.totals.chunk_bytes, sum.chunk_bytes, "{name}: chunk bytes");
    assert_eq!(
        a.totals.remote_invalidations, sum.remote_invalidations,
        "{name}: remote invalidations"
    );
    assert_eq!(a.totals.cm_messages, 5 * u64::from(sum.connections));
}

#[test]
fn clean_default_traffic_has_no_anomalies() {
    assert_clean(
        "clean-default",
        &Options {
            calls: 200,
            ..Options::default()
        },
    );
}

#[test]
fn clean_traffic_over_many_connections_and_mtus() {
    for (i, mtu) in [256u32, 512, 2048, 4096].into_iter().enumerate() {
        assert_clean(
            &format!("clean-mtu{mtu}"),
            &Options {
                calls: 120,
                connections: 1 + i as u32 * 2,
                mtu,
                // Not a multiple of 4: the last packet of each transfer is padded.
                io_size: 200_001 + i as u32,
                window: 4 + i as u32,
                seed: 11 + i as u64,
                ..Options::default()
            },
        );
    }
}

#[test]
fn clean_traffic_without_remote_invalidation() {
    let opts = Options {
        calls: 80,
        remote_invalidation: false,
        microseconds: true,
        ..Options::default()
    };
    let (f, sum) = generate("clean-noinv", &opts);
    assert_eq!(sum.remote_invalidations, 0);
    drop(f);
    assert_clean("clean-noinv2", &opts);
}

#[test]
fn psn_wrap_is_not_an_anomaly() {
    assert_clean(
        "psn-wrap",
        &Options {
            calls: 60,
            connections: 2,
            inject: vec![Inject::PsnWrap],
            mix: Mix {
                inline: 1,
                read: 1,
                write: 1,
                readdir: 1,
                compound: 1,
                longcall: 1,
            },
            ..Options::default()
        },
    );
}

#[test]
fn same_seed_same_bytes() {
    let opts = Options {
        calls: 50,
        connections: 2,
        inject: Inject::ALL.to_vec(),
        seed: 42,
        ..Options::default()
    };
    let (a, _) = generate("repro-a", &opts);
    let (b, _) = generate("repro-b", &opts);
    let (c, _) = generate(
        "repro-c",
        &Options {
            seed: 43,
            ..opts.clone()
        },
    );
    let ba = std::fs::read(&a.0).unwrap();
    let bb = std::fs::read(&b.0).unwrap();
    let bc = std::fs::read(&c.0).unwrap();
    assert!(ba == bb, "same seed, different bytes");
    assert!(ba != bc, "another seed gave the same bytes");
}

#[test]
fn size_mode_reaches_the_size() {
    let (f, sum) = generate(
        "size",
        &Options {
            size: Some(3 << 20),
            ..Options::default()
        },
    );
    let len = std::fs::metadata(&f.0).unwrap().len();
    assert!(len >= 3 << 20, "file is {len} bytes");
    assert_eq!(len, sum.bytes);
}

#[test]
fn bad_options_are_refused_with_a_reason() {
    let e = synth::generate(
        &Options {
            mtu: 1500,
            ..Options::default()
        },
        Vec::new(),
    )
    .expect_err("MTU 1500 refused");
    assert!(e.to_string().contains("--mtu 1500"), "{e}");
    let e = synth::generate(
        &Options {
            window: 65,
            ..Options::default()
        },
        Vec::new(),
    )
    .expect_err("window above credits refused");
    assert!(e.to_string().contains("--window 65"), "{e}");
}

/// Generates with one injection and compares the engine's anomalies with the sidecar.
fn check_injection(k: Inject) {
    let (f, sum) = generate(
        &format!("inject-{k}"),
        &Options {
            calls: 40,
            connections: 2,
            inject: vec![k],
            seed: 5,
            ..Options::default()
        },
    );
    let want = expected(&sum);
    assert!(
        want.iter().any(|(kind, _)| kind == k.as_str()),
        "the sidecar names {k}"
    );
    let got = analyze(&f.0).anomalies;
    assert_eq!(
        got, want,
        "{k}: engine findings (left) differ from the sidecar (right)"
    );
}

macro_rules! injection_tests {
    ($($(#[$m:meta])* $name:ident => $kind:expr;)*) => {
        $(
            #[test]
            $(#[$m])*
            fn $name() {
                check_injection($kind);
            }
        )*
    };
}

injection_tests! {
    inject_credit_overrun => Inject::CreditOverrun;
    inject_zero_credit_grant => Inject::ZeroCreditGrant;
    inject_remote_invalidation_not_negotiated => Inject::RemoteInvalidationNotNegotiated;
    inject_invalidated_foreign_stag => Inject::InvalidatedForeignStag;
    inject_inline_threshold_exceeded => Inject::InlineThresholdExceeded;
    inject_err_vers => Inject::ErrVers;
    inject_err_chunk => Inject::ErrChunk;
    inject_short_header => Inject::ShortHeader;
    inject_xid_mismatch => Inject::XidMismatch;
    inject_msgp_used => Inject::MsgpUsed;
    inject_done_used => Inject::DoneUsed;
    inject_version_mismatch => Inject::VersionMismatch;
    inject_bad_proc => Inject::BadProc;
    inject_rdma_outside_chunk => Inject::RdmaOutsideChunk;
    inject_icrc_mismatch => Inject::IcrcMismatch;
    inject_read_list_in_reply => Inject::ReadListInReply;
    inject_nomsg_without_chunks => Inject::NomsgWithoutChunks;
    inject_error_from_requester => Inject::ErrorFromRequester;
    inject_reply_without_call => Inject::ReplyWithoutCall;
    inject_call_without_reply => Inject::CallWithoutReply;
    inject_unaligned_read_position => Inject::UnalignedReadPosition;
}

#[test]
fn inject_everything_at_once() {
    let (f, sum) = generate(
        "inject-all",
        &Options {
            calls: 60,
            connections: 3,
            inject: Inject::ALL.to_vec(),
            seed: 9,
            ..Options::default()
        },
    );
    // Injections must not disturb one another or the counts.
    let a = analyze(&f.0);
    assert_eq!(a.anomalies, expected(&sum));
    assert_eq!(a.totals.calls, sum.calls);
    assert_eq!(a.totals.replies, sum.replies);
    assert_eq!(a.transactions, sum.transactions);
    assert_eq!(a.totals.chunk_bytes, sum.chunk_bytes);
    assert_eq!(a.totals.remote_invalidations, sum.remote_invalidations);
}

/// The same NFS traffic framed as RoCEv1 and as native InfiniBand is
/// analysed exactly as RoCEv2 is: connections from CM over each, PSNs,
/// every transaction, and every injected violation at its frames.
#[test]
fn every_framing_is_correlated_like_rocev2() {
    for framing in [Framing::Rocev1, Framing::Ib] {
        let name = format!("{framing:?}");
        assert_clean(
            &format!("clean-{name}"),
            &Options {
                calls: 300,
                connections: 3,
                mtu: 512,
                framing,
                seed: 11,
                ..Options::default()
            },
        );
        let opts = Options {
            calls: 60,
            connections: 3,
            inject: Inject::ALL.to_vec(),
            seed: 9,
            framing,
            ..Options::default()
        };
        let (f, sum) = generate(&format!("inject-all-{name}"), &opts);
        let a = analyze(&f.0);
        assert_eq!(a.anomalies, expected(&sum), "{name}");
        assert_eq!(a.totals.calls, sum.calls, "{name}");
        assert_eq!(a.transactions, sum.transactions, "{name}");
        assert_eq!(a.totals.chunk_bytes, sum.chunk_bytes, "{name}");
        // And the findings equal RoCEv2's, frame for frame.
        let (g, _) = generate(
            &format!("inject-all-rocev2-vs-{name}"),
            &Options {
                framing: Framing::Rocev2,
                ..opts
            },
        );
        let b = analyze(&g.0);
        assert_eq!(a.anomalies, b.anomalies, "{name} against RoCEv2");
        assert_eq!(
            a.read_reply_frames, b.read_reply_frames,
            "{name} against RoCEv2"
        );
    }
}

// ---- tshark ----

fn tshark(args: &[&str]) -> Option<String> {
    let out = Command::new("tshark").args(args).output().ok()?;
    if !out.status.success() {
        panic!(
            "tshark {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Opcode, PSN and, for an RPC-over-RDMA Send, (xid, proc).
type FrameView = (u8, u32, Option<(u32, u32)>);

/// Every frame as the dissectors see it.
fn own_view(path: &Path) -> BTreeMap<u64, FrameView> {
    let mut r = PcapReader::open(path).unwrap();
    let cfg = stack::Config::default();
    let mut m = BTreeMap::new();
    while let Some(p) = r.next_packet().unwrap() {
        let d = stack::dissect(p.link, p.data, &cfg);
        let b = d.bth().expect("every frame has a BTH");
        let op = b.opcode;
        let rpc = if d.mad().is_none()
            && matches!(
                op,
                Opcode::RC_SEND_ONLY | Opcode::RC_SEND_ONLY_WITH_INVALIDATE | Opcode::RC_SEND_FIRST
            ) {
            RpcRdmaHeader::parse_fixed(d.payload())
                .ok()
                .map(|f| (f.xid.0, u32::from(f.proc)))
        } else {
            None
        };
        m.insert(p.number, (op.0, b.psn.get(), rpc));
    }
    m
}

#[test]
fn tshark_decodes_synthetic_traffic_like_the_lab_captures() {
    tshark_agrees_on(Framing::Rocev2);
}

/// RoCEv1 too (tshark 4.0 cannot open DLT 247, so native IB is checked
/// against RoCEv2 by the engine instead: `every_framing_is_correlated_like_rocev2`).
#[test]
fn tshark_decodes_synthetic_rocev1_like_the_lab_captures() {
    tshark_agrees_on(Framing::Rocev1);
}

fn tshark_agrees_on(framing: Framing) {
    if !prereq::tshark() {
        return;
    }
    let (f, sum) = generate(
        &format!("tshark-{framing:?}"),
        &Options {
            framing,
            calls: 40,
            seed: 3,
            mix: "inline=30,read=30,write=25,readdir=5,compound=10,longcall=5"
                .parse()
                .unwrap(),
            ..Options::default()
        },
    );
    let path = f.0.to_str().unwrap();
    let fields = tshark(&[
        "-r",
        path,
        "-T",
        "fields",
        "-e",
        "frame.number",
        "-e",
        "infiniband.bth.opcode",
        "-e",
        "infiniband.bth.psn",
        "-e",
        "rpcordma.xid",
        "-e",
        "rpcordma.msg_type",
    ])
    .unwrap();
    let own = own_view(&f.0);
    let mut lines = 0;
    let mut rpc_msgs = 0;
    for line in fields.lines() {
        let cols: Vec<&str> = line.split('\t').collect();
        let n: u64 = cols[0].parse().unwrap();
        let (op, psn, rpc) = own[&n];
        assert_eq!(cols[1].parse::<u8>().unwrap(), op, "frame {n} opcode");
        assert_eq!(cols[2].parse::<u32>().unwrap(), psn, "frame {n} psn");
        match rpc {
            Some((xid, proc)) => {
                let txid = u32::from_str_radix(cols[3].trim_start_matches("0x"), 16)
                    .unwrap_or_else(|_| {
                        panic!("frame {n}: tshark gave no RPC-over-RDMA xid: {line}")
                    });
                assert_eq!(txid, xid, "frame {n} xid");
                assert_eq!(cols[4].parse::<u32>().unwrap(), proc, "frame {n} msg type");
                rpc_msgs += 1;
            }
            None => assert!(
                cols.get(3).is_none_or(|c| c.is_empty()),
                "frame {n}: {line}"
            ),
        }
        lines += 1;
    }
    assert_eq!(lines, sum.frames);
    assert_eq!(rpc_msgs, sum.calls + sum.replies);

    // CM set-up and tear-down.
    let summary = tshark(&["-r", path]).unwrap();
    let info: Vec<&str> = summary.lines().collect();
    assert!(info[0].contains("CM: ConnectRequest"), "{}", info[0]);
    assert!(info[1].contains("CM: ConnectReply"), "{}", info[1]);
    assert!(info[2].contains("CM: ReadyToUse"), "{}", info[2]);
    assert!(info[info.len() - 2].contains("CM: DisconnectRequest"));
    assert!(info[info.len() - 1].contains("CM: DisconnectReply"));

    // tshark 4.0 flags NFSv3 READ replies whose data went in a write chunk
    // as malformed, on the lab captures too (v3-ddp.pcap frames 2565, 2837,
    // ...; not the EOF replies whose write chunk stayed unused): nothing
    // else may be, and the synthetic READ replies must fare as the lab's.
    let lab = Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures/v3-ddp.pcap");
    let (lab_malformed, lab_reads) = malformed_and_read_replies(&lab);
    assert!(
        lab_malformed.iter().all(|m| lab_reads.contains(m)),
        "tshark marks lab frames other than READ replies malformed: {lab_malformed:?}"
    );
    let (malformed, reads) = malformed_and_read_replies(&f.0);
    assert!(!reads.is_empty(), "the sample has READs");
    for m in &malformed {
        assert!(
            reads.contains(m),
            "tshark marks frame {m} malformed, and it is not a READ reply"
        );
    }
    assert_eq!(
        lab_malformed == lab_reads,
        malformed == reads,
        "tshark treats synthetic READ replies unlike the lab's (lab: {} of {} flagged; synthetic: {} of {})",
        lab_malformed.len(),
        lab_reads.len(),
        malformed.len(),
        reads.len()
    );
}

/// Frames tshark marks malformed, and the engine's NFSv3 READ reply frames.
fn malformed_and_read_replies(path: &Path) -> (Vec<u64>, Vec<u64>) {
    let p = path.to_str().unwrap();
    let mut malformed: Vec<u64> = tshark(&[
        "-r",
        p,
        "-Y",
        "_ws.malformed",
        "-T",
        "fields",
        "-e",
        "frame.number",
    ])
    .unwrap()
    .lines()
    .map(|l| l.trim().parse().unwrap())
    .collect();
    malformed.sort_unstable();
    (malformed, analyze(path).read_reply_frames)
}

#[test]
fn cli_writes_capture_and_sidecar() {
    let f = TempCapture::new("cli");
    let out = Command::new(env!("CARGO_BIN_EXE_rdma-analyzer"))
        .args(["synth", "--calls", "12", "--seed", "4", "--inject"])
        .arg("credit_overrun,err_vers")
        .arg("-o")
        .arg(&f.0)
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let side: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(synth::sidecar_path(&f.0)).unwrap()).unwrap();
    let kinds: Vec<&str> = side["anomalies"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["credit_overrun", "err_vers"]);
    let bad = Command::new(env!("CARGO_BIN_EXE_rdma-analyzer"))
        .args(["synth", "--inject", "no_such_thing", "-o"])
        .arg(&f.0)
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown injection"));
}
