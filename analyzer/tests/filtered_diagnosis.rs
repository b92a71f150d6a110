//! A filtered report's diagnosis is of what the filter kept, and a cause
//! that reads connection-wide state says so (issue 24).

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

/// The report's Diagnosis section.
fn diagnosis(capture: &str, filter: Option<&str>) -> String {
    let mut c = Command::new(BIN);
    c.arg("report").arg(format!(
        "{}/../captures/{capture}",
        env!("CARGO_MANIFEST_DIR")
    ));
    if let Some(f) = filter {
        c.args(["--filter", f]);
    }
    let o = c.output().expect("report");
    assert!(o.status.success(), "{o:?}");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .skip_while(|l| !l.starts_with("Diagnosis"))
        .take_while(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn filtered_diagnosis_is_of_what_the_filter_kept() {
    let whole = diagnosis("diag/diag-slow-server.pcap", None);
    assert!(whole.starts_with("Diagnosis (largest"), "{whole}");
    assert!(whole.contains("1. server_time"), "{whole}");
    // The slow RPCs are not kept: their server time is not a cause here.
    let fast = diagnosis("diag/diag-slow-server.pcap", Some("latency < 100ms"));
    assert!(
        fast.starts_with("Diagnosis of what the filter kept"),
        "{fast}"
    );
    assert!(!fast.contains("server_time"), "{fast}");
    assert!(
        fast.contains("no cause found: looked at") && fast.contains("in what the filter kept"),
        "{fast}"
    );
}

#[test]
fn filtered_diagnosis_names_the_connection_wide_state_a_cause_used() {
    let d = diagnosis("diag/diag-credits.pcap", Some("c1"));
    assert!(d.contains("1. credit_window_full"), "{d}");
    assert!(
        d.contains("(from the whole connections, not only what the filter kept: the credit window and the time at its limit)"),
        "{d}"
    );
    // Unfiltered, there is nothing to tell apart.
    let whole = diagnosis("diag/diag-credits.pcap", None);
    assert!(!whole.contains("from the whole connections"), "{whole}");
}
