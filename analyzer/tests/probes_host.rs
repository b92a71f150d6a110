//! `live --probes` on the machine running the tests.
//!
//! On a kernel without the RDMA stack (this project's CI host), the probes
//! must load, report each missing tracepoint group by name and why, and exit
//! with code 3 ("nothing to watch"), leaving nothing attached. Needs root
//! (CAP_BPF + CAP_PERFMON); skipped with a message otherwise.

use std::process::Command;

#[path = "common/prereq.rs"]
mod prereq;

fn rdma_tracepoints_present() -> bool {
    [
        "/sys/kernel/tracing/events/rpcrdma",
        "/sys/kernel/debug/tracing/events/rpcrdma",
    ]
    .iter()
    .any(|p| std::path::Path::new(p).is_dir())
}

#[test]
fn live_probes_reports_missing_tracepoints_and_exits() {
    if !prereq::root("live --probes needs CAP_BPF and CAP_PERFMON") {
        return;
    }
    if rdma_tracepoints_present() {
        eprintln!("skipped: this kernel has the rpcrdma tracepoints (the lab test covers it)");
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_rdma-analyzer"))
        .args(["live", "--probes", "--duration", "2"])
        .output()
        .expect("run rdma-analyzer");
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("{err}");
    let built = rdma_analyzer::sources::ebpf::PROBES_BUILD_STATUS.is_empty();
    if !built {
        assert!(err.contains("built without eBPF probes"), "{err}");
        return;
    }
    // A host that boots without tracefs gets it mounted by `live` itself.
    assert!(!err.contains("tracefs is not mounted"), "{err}");
    assert_eq!(
        out.status.code(),
        Some(3),
        "exit code: nothing to watch; stderr:\n{err}"
    );
    for sys in ["rpcrdma", "rdma_cma", "ib_cma"] {
        assert!(
            err.contains(&format!("missing {sys}:*: ")),
            "no line for {sys}:\n{err}"
        );
    }
    assert!(
        err.contains("modprobe rpcrdma") || err.contains("no kernel RDMA stack"),
        "{err}"
    );
    assert!(
        err.contains("passed the verifier"),
        "the program must load on this kernel:\n{err}"
    );
    assert!(
        err.contains("nothing to watch on this host; exiting"),
        "{err}"
    );
}

#[test]
fn live_probes_on_a_host_tracepoint_delivers_without_loss() {
    // The same program on a tracepoint every kernel has: records arrive,
    // decode with the format file, and the kernel loses none at low rate.
    host_tracepoints(false);
}

#[test]
fn slot_programs_name_each_tracepoint_like_cookies() {
    // What a kernel without BPF cookies (5.10) runs, forced on this one:
    // two tracepoints, each through its own slot program, each record
    // decoded as its own event.
    host_tracepoints(true);
}

fn host_tracepoints(no_cookies: bool) {
    if !prereq::root("live --probes needs CAP_BPF and CAP_PERFMON")
        || !prereq::require(
            "a build with the eBPF probes",
            rdma_analyzer::sources::ebpf::PROBES_BUILD_STATUS.is_empty(),
            rdma_analyzer::sources::ebpf::PROBES_BUILD_STATUS,
        )
    {
        return;
    }
    let dir = std::env::temp_dir().join(format!(
        "rdma-probes-host-{}-{no_cookies}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let stats = dir.join("stats.json");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rdma-analyzer"));
    cmd.args([
        "live",
        "--probes",
        "--no-kprobes",
        "--tracepoint",
        "sched:sched_switch",
    ]);
    if no_cookies {
        cmd.env("RDMA_ANALYZER_NO_COOKIES", "1")
            .args(["--tracepoint", "sched:sched_wakeup"]);
    }
    let out = cmd
        .args(["--duration", "1.5"])
        .arg("--stats-out")
        .arg(&stats)
        .arg("--json-out")
        .arg(dir.join("out.jsonl"))
        .output()
        .expect("run rdma-analyzer");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(err.contains("no BPF cookies"), no_cookies, "{err}");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let attached = s["attached"].as_array().unwrap();
    assert!(attached.iter().any(|a| a == "sched:sched_switch"), "{s}");
    assert!(s["records"].as_u64().unwrap() > 0, "{s}");
    assert_eq!(s["decode_errors"], 0, "{s}");
    assert_eq!(s["lost_in_kernel"], 0, "{s}");
    if no_cookies {
        assert!(attached.iter().any(|a| a == "sched:sched_wakeup"), "{s}");
        let (sw, wu) = (
            s["per_event"]["sched_switch"].as_u64().unwrap_or(0),
            s["per_event"]["sched_wakeup"].as_u64().unwrap_or(0),
        );
        assert!(sw > 0 && wu > 0, "{s}");
        assert_eq!(Some(sw + wu), s["records"].as_u64(), "{s}");
    } else {
        assert_eq!(s["per_event"]["sched_switch"], s["records"], "{s}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
