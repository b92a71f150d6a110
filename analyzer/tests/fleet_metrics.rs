//! The Prometheus metrics of a capture (`report --metrics-out`) against
//! `report --json` on every bundled capture, checked by Prometheus' own
//! linter (`promtool check metrics`); the cardinality caps; and the fleet
//! files (`fleet/`: the scrape configuration, the alerting rules, the
//! Grafana dashboard) use only metric names the exporter serves and pass
//! `promtool check config`, `check rules` and `test rules` (the dashboard's
//! queries too, as recording rules).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rdma_analyzer::engine::device_counters::{parse_dump, DeviceCounter};
use rdma_analyzer::output::metrics::{Format, Metrics, MetricsConfig, Process};
use rdma_analyzer::pipeline::{End, Progress, Sink};
use serde_json::Value;

#[path = "common/exposition.rs"]
mod exposition;
use exposition::{procedure_label, samples, sum, Sample};

#[path = "common/prereq.rs"]
mod prereq;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rdma-metrics-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// `report --json` of `capture` and the textfile `--metrics-out` wrote.
fn report_with_metrics(capture: &Path, out: &Path, extra: &[&str]) -> (Value, String) {
    let o = Command::new(BIN)
        .args(["report", "--json", "--metrics-out"])
        .arg(out)
        .args(extra)
        .arg(capture)
        .output()
        .expect("report");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc = serde_json::from_slice(&o.stdout).expect("report JSON");
    let text = std::fs::read_to_string(out).expect("the metrics file");
    (doc, text)
}

fn promtool() -> bool {
    prereq::require(
        "promtool",
        prereq::have_command("promtool", "--version"),
        "Debian's prometheus package; scripts/setup-fleet.sh installs it",
    )
}

/// Sums `name` by procedure label and one more label.
fn by_label_and(s: &[Sample], name: &str, other: &str) -> BTreeMap<(String, String), u64> {
    let mut m = BTreeMap::new();
    for x in s.iter().filter(|x| x.name == name) {
        let k = (
            procedure_label(&x.labels),
            x.labels.get(other).cloned().unwrap_or_default(),
        );
        *m.entry(k).or_default() += x.value as u64;
    }
    m
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn check_capture(capture: &Path, dir: &Path) {
    let name = capture.file_name().expect("name").to_string_lossy();
    let out = dir.join(format!("{name}.prom"));
    let (r, text) = report_with_metrics(capture, &out, &[]);
    let s = samples(&text);
    let here = |what: &str| format!("{name}: {what}");

    // Replies by procedure and reply transfer; calls by procedure and call
    // transfer; the latency histograms' counts and sums.
    let mut replies: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut calls: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut answered: BTreeMap<String, (u64, f64)> = BTreeMap::new();
    for row in r["response_times"].as_array().expect("rows") {
        let p = row["procedure"].as_str().expect("label").to_string();
        let n = u(&row["latency"]["count"]);
        let rt = row["reply_transfer"].as_str().expect("mode").to_string();
        let ct = row["call_transfer"].as_str().expect("mode").to_string();
        *replies.entry((p.clone(), rt)).or_default() += n;
        *calls.entry((p.clone(), ct)).or_default() += n;
        let a = answered.entry(p).or_default();
        a.0 += n;
        a.1 += row["latency"]["mean_us"].as_f64().expect("mean") * n as f64;
    }
    let unanswered: BTreeMap<String, u64> = r["unanswered"]
        .as_object()
        .expect("unanswered")
        .iter()
        .map(|(k, v)| (k.clone(), u(v)))
        .collect();
    assert_eq!(
        by_label_and(&s, "rdma_rpc_replies_total", "transfer"),
        replies,
        "{}",
        here("replies by procedure and transfer")
    );
    let got_calls = by_label_and(&s, "rdma_rpc_calls_total", "transfer");
    let mut calls_by_proc: BTreeMap<String, u64> = BTreeMap::new();
    for ((p, t), n) in &got_calls {
        *calls_by_proc.entry(p.clone()).or_default() += n;
        // Where nothing went unanswered, each call's transfer is the report's.
        if !unanswered.contains_key(p) {
            assert_eq!(
                Some(n),
                calls.get(&(p.clone(), t.clone())),
                "{}",
                here(&format!("calls of {p} by {t}"))
            );
        }
    }
    let mut want_calls: BTreeMap<String, u64> =
        answered.iter().map(|(p, a)| (p.clone(), a.0)).collect();
    for (p, n) in &unanswered {
        *want_calls.entry(p.clone()).or_default() += n;
    }
    assert_eq!(calls_by_proc, want_calls, "{}", here("calls by procedure"));
    for (p, (n, sum_us)) in &answered {
        let count: f64 = s
            .iter()
            .filter(|x| {
                x.name == "rdma_rpc_latency_seconds_count" && procedure_label(&x.labels) == *p
            })
            .map(|x| x.value)
            .sum();
        assert_eq!(
            count as u64,
            *n,
            "{}",
            here(&format!("latency count of {p}"))
        );
        let got_sum: f64 = s
            .iter()
            .filter(|x| {
                x.name == "rdma_rpc_latency_seconds_sum" && procedure_label(&x.labels) == *p
            })
            .map(|x| x.value)
            .sum();
        // The report's mean is whole nanoseconds: n of them at most apart.
        assert!(
            (got_sum - sum_us / 1e6).abs() <= *n as f64 * 1e-9 + 1e-9,
            "{}",
            here(&format!("latency sum of {p}: {got_sum} s vs {sum_us} µs"))
        );
        // Buckets are cumulative and end at the count.
        let mut buckets: Vec<(f64, f64)> = s
            .iter()
            .filter(|x| {
                x.name == "rdma_rpc_latency_seconds_bucket" && procedure_label(&x.labels) == *p
            })
            .map(|x| {
                (
                    x.labels["le"].parse::<f64>().unwrap_or(f64::INFINITY),
                    x.value,
                )
            })
            .collect();
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert!(
            buckets.windows(2).all(|w| w[0].1 <= w[1].1),
            "{p}: cumulative"
        );
        assert_eq!(
            buckets.last().map(|b| (b.0, b.1 as u64)),
            Some((f64::INFINITY, *n))
        );
    }

    // Anomalies by kind (every kind is there, at 0 when absent).
    for a in r["anomalies"].as_array().expect("anomalies") {
        let k = a["kind"].as_str().expect("kind");
        assert_eq!(
            sum(&s, "rdma_anomalies_total", &[("kind", k)]) as u64,
            u(&a["count"]),
            "{}",
            here(&format!("anomalies of kind {k}"))
        );
    }
    let total_anomalies: u64 = r["anomalies"]
        .as_array()
        .expect("anomalies")
        .iter()
        .map(|a| u(&a["count"]))
        .sum();
    assert_eq!(sum(&s, "rdma_anomalies_total", &[]) as u64, total_anomalies);
    assert_eq!(
        s.iter()
            .filter(|x| x.name == "rdma_anomalies_total")
            .count(),
        rdma_analyzer::engine::Kind::ALL.len()
    );

    // Chunks, totals, evictions.
    for (kind, c) in r["chunks"].as_object().expect("chunks") {
        for (metric, key) in [
            ("rdma_chunk_segments_total", "segments"),
            ("rdma_chunk_advertised_bytes_total", "advertised_bytes"),
            ("rdma_chunk_moved_bytes_total", "moved_bytes"),
        ] {
            assert_eq!(
                sum(&s, metric, &[("kind", kind)]) as u64,
                u(&c[key]),
                "{}",
                here(&format!("{metric} {kind}"))
            );
        }
    }
    let t = &r["totals"];
    for (metric, key) in [
        ("rdma_frames_total", "frames"),
        ("rdma_frame_bytes_total", "bytes"),
        ("rdma_transport_frames_total", "rdma_frames"),
        ("rdma_cm_messages_total", "cm_messages"),
        ("rdma_rpcrdma_messages_total", "rpcrdma_messages"),
        ("rdma_retransmissions_total", "retransmissions"),
        ("rdma_psn_gaps_total", "psn_gaps"),
        ("rdma_remote_invalidations_total", "remote_invalidations"),
        ("rdma_unassociated_frames_total", "unassociated_frames"),
    ] {
        assert_eq!(sum(&s, metric, &[]) as u64, u(&t[key]), "{}", here(metric));
    }
    assert_eq!(
        sum(&s, "rdma_icrc_checks_total", &[("result", "valid")]) as u64,
        u(&t["icrc_valid"])
    );
    for (table, n) in r["evictions"].as_object().expect("evictions") {
        assert_eq!(
            sum(&s, "rdma_engine_evictions_total", &[("table", table)]) as u64,
            u(n),
            "{}",
            here(&format!("evictions of {table}"))
        );
    }
    // A capture has no live losses: those series are absent, not 0.
    assert!(
        !text.contains("rdma_capture_dropped_frames"),
        "{}",
        here("no capture drops")
    );

    // Connections.
    for c in r["connections"].as_array().expect("connections") {
        let id = c["id"].as_str().expect("id");
        let one = |m: &str| sum(&s, m, &[("connection", id)]);
        for (m, key) in [
            ("rdma_connection_calls_total", "calls"),
            ("rdma_connection_replies_total", "replies"),
            ("rdma_connection_chunk_bytes_total", "chunk_bytes"),
            (
                "rdma_connection_remote_invalidations_total",
                "remote_invalidations",
            ),
            ("rdma_connection_anomalies_total", "anomalies"),
        ] {
            assert_eq!(one(m) as u64, u(&c[key]), "{}", here(&format!("{id} {m}")));
        }
        let k = &c["credits"];
        let granted = s.iter().find(|x| {
            x.name == "rdma_connection_credits_granted"
                && x.labels.get("connection").map(String::as_str) == Some(id)
        });
        match k["last_granted"].as_u64() {
            Some(g) => assert_eq!(granted.map(|x| x.value as u64), Some(g)),
            None => assert!(granted.is_none(), "an unknown grant is absent, not 0"),
        }
        assert_eq!(
            one("rdma_connection_credits_in_flight_peak") as u64,
            u(&k["peak_in_flight"])
        );
        let at_limit = one("rdma_connection_credit_limit_seconds_total");
        let want = k["at_limit_ms"].as_f64().expect("ms") / 1e3;
        assert!(
            (at_limit - want).abs() < 1e-9,
            "{id}: {at_limit} s at the limit vs {want}"
        );
    }
}

#[test]
fn report_metrics_out_agrees_with_report_on_every_bundled_capture() {
    let dir = temp_dir("report");
    let lint = promtool();
    for c in prereq::bundled_pcaps() {
        check_capture(&c, &dir);
        if lint {
            let name = c.file_name().expect("name").to_string_lossy();
            let file = std::fs::File::open(dir.join(format!("{name}.prom"))).expect("file");
            let o = Command::new("promtool")
                .args(["check", "metrics"])
                .stdin(file)
                .output()
                .expect("promtool");
            assert!(
                o.status.success(),
                "promtool check metrics on {name}'s textfile:\n{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
    // Written aside and renamed: nothing else is left in the folder.
    let left: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".prom"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn label_caps_bound_the_series_and_count_what_they_leave_out() {
    let dir = temp_dir("caps");
    // reconnect.pcap: two connections; v42-ddp.pcap: 20 procedures.
    let (r, text) = report_with_metrics(
        &repo().join("captures/reconnect.pcap"),
        &dir.join("a.prom"),
        &["--metrics-max-connections", "1"],
    );
    let s = samples(&text);
    assert_eq!(r["connections"].as_array().map(Vec::len), Some(2));
    assert_eq!(sum(&s, "rdma_metrics_connections_unlabelled", &[]), 1.0);
    let shown: BTreeSet<&String> = s
        .iter()
        .filter(|x| x.name == "rdma_connection_calls_total")
        .filter_map(|x| x.labels.get("connection"))
        .collect();
    // The one with the latest traffic.
    assert_eq!(shown.into_iter().collect::<Vec<_>>(), vec!["c2"]);

    let (r, text) = report_with_metrics(
        &repo().join("captures/v42-ddp.pcap"),
        &dir.join("b.prom"),
        &["--metrics-max-procedures", "3"],
    );
    let s = samples(&text);
    let procedures: BTreeSet<String> = s
        .iter()
        .filter(|x| x.name == "rdma_rpc_calls_total")
        .map(|x| x.labels["procedure"].clone())
        .collect();
    assert_eq!(procedures.len(), 4, "3 and (other): {procedures:?}");
    assert!(procedures.contains("(other)"));
    let calls = u(&r["totals"]["calls"]);
    assert_eq!(
        sum(&s, "rdma_rpc_calls_total", &[]) as u64,
        calls,
        "every call still counted"
    );
    let other = sum(&s, "rdma_rpc_calls_total", &[("procedure", "(other)")]);
    assert_eq!(
        sum(&s, "rdma_metrics_procedures_over_cap_total", &[]),
        other
    );
    assert!(other > 0.0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `promtool check metrics` accepts `text` (when promtool is there; the
/// test command requires it).
fn promtool_accepts(text: &str) {
    if !promtool() {
        return;
    }
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("writing to promtool");
    let out = child.wait_with_output().expect("promtool");
    assert!(
        out.status.success(),
        "promtool: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The lab's nconnect=4 client's mountstats (captures/nconnect.*).
fn nconnect_mountstats() -> Option<String> {
    Some(include_str!("../../captures/nconnect.mountstats.txt").to_string())
}

/// The NFS client's own counters, as a live exporter on that client serves
/// them: every transport field by its print-order name, per transport, and
/// the per-op statistics; promtool accepts the exposition.
#[test]
fn the_nfs_clients_counters_are_series_named_in_print_order() {
    let m = Metrics::new(MetricsConfig::default());
    let exposition = |mountstats| {
        let process = Process {
            cpu_seconds: || 1.0,
            resident_bytes: || None,
            mountstats,
            device_counters: Vec::new,
        };
        m.exposition(Some(process)).encode(Format::PrometheusText)
    };
    let text = exposition(nconnect_mountstats);
    let s = samples(&text);
    let one = |name: &str, labels: &[(&str, &str)]| -> f64 {
        let hits: Vec<&Sample> = s
            .iter()
            .filter(|x| {
                x.name == name
                    && labels
                        .iter()
                        .all(|(k, v)| x.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .collect();
        assert_eq!(hits.len(), 1, "{name} {labels:?}:\n{text}");
        hits[0].value
    };
    let t = |n: &'static str| {
        [
            ("mount", "/mnt/lab"),
            ("export", "10.99.0.1:/srv/export"),
            ("transport", n),
        ]
    };
    assert_eq!(one("rdma_nfs_mountstats_readable", &[]), 1.0);
    assert_eq!(one("rdma_nfs_xprt_sends_total", &t("0")), 59.0);
    assert_eq!(one("rdma_nfs_xprt_sends_total", &t("2")), 60.0);
    // Slot 24 in print order; a struct-order reading names another field.
    assert_eq!(one("rdma_nfs_xprt_local_inv_needed_total", &t("2")), 3.0);
    assert_eq!(one("rdma_nfs_xprt_reply_chunk_count_total", &t("2")), 3.0);
    assert_eq!(
        one("rdma_nfs_xprt_total_rdma_request_total", &t("1")),
        1_441_792.0
    );
    assert_eq!(one("rdma_nfs_xprt_idle_time", &t("3")), 0.0);
    let op = |o: &'static str| [("mount", "/mnt/lab"), ("op", o)];
    assert_eq!(one("rdma_nfs_op_transmissions_total", &op("READ")), 80.0);
    assert_eq!(one("rdma_nfs_op_errors_total", &op("LOOKUP")), 16.0);
    assert_eq!(one("rdma_nfs_op_rtt_seconds_total", &op("WRITE")), 3.961);
    assert!(
        !s.iter()
            .any(|x| x.labels.get("op").map(String::as_str) == Some("SETATTR")),
        "an operation never used gives no series"
    );
    assert_eq!(
        s.iter()
            .filter(|x| x.name == "rdma_nfs_xprt_sends_total")
            .count(),
        4
    );
    promtool_accepts(&text);
    // A host that is no NFS client, or a text this analyzer cannot read.
    for absent in [(|| None) as fn() -> Option<String>, || {
        Some("device s:/e mounted on /m with fstype nfs\n\txprt:\trdma x\n".into())
    }] {
        let text = exposition(absent);
        assert!(text.contains("rdma_nfs_mountstats_readable 0"), "{text}");
        assert!(!text.contains("rdma_nfs_xprt_"));
    }
}

/// The lab client's rxe counters just before the umount of a reconnect run
/// (analyzer/testdata/device-counters).
fn rxe_counters() -> Vec<DeviceCounter> {
    let dump = include_str!("../testdata/device-counters/rxe-6.1-reconnect.txt");
    let last = dump.rfind("# before-umount").expect("the umount's section");
    parse_dump(&dump[last..])
}

/// The RDMA devices' own counters, read from a sysfs tree laid out as the
/// kernel's (built from the lab's real dump), served as series; promtool
/// accepts them. The reconnect run's rxe counted the 6 retransmissions the
/// capture shows and the one QP that gave up.
#[test]
fn the_rdma_devices_counters_are_series_read_from_sysfs() {
    let want = rxe_counters();
    let root = tempfile::tempdir().unwrap();
    for c in &want {
        let dir = root
            .path()
            .join(&c.device)
            .join("ports")
            .join(c.port.to_string())
            .join(&c.group);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(&c.name), format!("{}\n", c.value)).unwrap();
    }
    let mut read = rdma_analyzer::sources::sys::device_counters_in(root.path());
    let mut sorted = want.clone();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    read.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(read, sorted);
    let m = Metrics::new(MetricsConfig::default());
    let process = Process {
        cpu_seconds: || 1.0,
        resident_bytes: || None,
        mountstats: || None,
        device_counters: rxe_counters,
    };
    let text = m.exposition(Some(process)).encode(Format::PrometheusText);
    let s = samples(&text);
    let value = |counter: &str| {
        s.iter()
            .find(|x| {
                x.name == "rdma_device_stat_total"
                    && x.labels.get("counter").map(String::as_str) == Some(counter)
                    && x.labels.get("device").map(String::as_str) == Some("rxe0")
                    && x.labels.get("port").map(String::as_str) == Some("1")
                    && x.labels.get("group").map(String::as_str) == Some("hw_counters")
            })
            .map(|x| x.value)
    };
    assert_eq!(value("completer_retry_err"), Some(6.0), "{text}");
    assert_eq!(value("retry_exceeded_err"), Some(1.0));
    assert_eq!(value("sent_pkts"), Some(283.0));
    assert_eq!(value("lifespan"), None, "a setting, not a count");
    promtool_accepts(&text);
}

/// Every metric name the exporter can serve, as queries name them
/// (`x_total` for counters; `x_bucket`, `x_sum`, `x_count` for histograms),
/// with the live-only families (capture drops, probe losses, the process)
/// present.
fn served_names() -> BTreeSet<String> {
    // As `live --metrics` serves them: with the diagnosis's window.
    let mut m = Metrics::new(MetricsConfig::default()).with_window(300_000_000_000);
    let progress = Progress {
        capture_dropped: Some(0),
        probe_lost: Some(0),
        probe_undecodable: Some(0),
        ..Progress::default()
    };
    m.end(None, &progress, &End::Complete);
    let process = Process {
        cpu_seconds: || 1.0,
        resident_bytes: || Some(1),
        mountstats: nconnect_mountstats,
        device_counters: Vec::new,
    };
    let text = m.exposition(Some(process)).encode(Format::PrometheusText);
    let mut names = BTreeSet::new();
    for (name, kind) in exposition::families(&text) {
        if kind == "histogram" {
            for suffix in ["_bucket", "_sum", "_count"] {
                names.insert(format!("{name}{suffix}"));
            }
        } else {
            names.insert(name);
        }
    }
    assert!(
        names.contains("rdma_frames_total") && names.contains("rdma_capture_dropped_frames_total")
    );
    names
}

/// Metric names in a PromQL expression: identifiers of this exporter's
/// namespaces.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let bytes = expr.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let starts_word = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        if starts_word && (expr[i..].starts_with("rdma_") || expr[i..].starts_with("process_")) {
            let end = expr[i..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .map_or(expr.len(), |e| i + e);
            out.insert(expr[i..end].to_string());
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

/// Every string under `key` anywhere in `v`.
fn strings_under<'a>(v: &'a Value, key: &str, out: &mut Vec<&'a str>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match x.as_str() {
                    Some(s) if k == key => out.push(s),
                    _ => strings_under(x, key, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| strings_under(x, key, out)),
        _ => {}
    }
}

/// The `expr:` of every rule in a rules file, block scalars (`expr: |`)
/// included.
fn rule_expressions(yaml: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = yaml.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(rest) = line.trim_start().strip_prefix("expr:") else {
            continue;
        };
        let rest = rest.trim();
        if rest != "|" && rest != ">" {
            out.push(rest.to_string());
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let mut block = Vec::new();
        while let Some(next) = lines.peek() {
            if !next.trim().is_empty() && next.len() - next.trim_start().len() <= indent {
                break;
            }
            block.push(next.trim());
            lines.next();
        }
        out.push(block.join(" "));
    }
    out
}

#[test]
fn the_dashboard_and_the_alerts_use_only_served_metrics() {
    let served = served_names();
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("fleet/grafana-dashboard.json")).expect("dashboard"),
    )
    .expect("the dashboard is JSON");
    let mut exprs = Vec::new();
    strings_under(&dashboard, "expr", &mut exprs);
    // Template variables query Prometheus too.
    strings_under(&dashboard["templating"], "query", &mut exprs);
    assert!(
        exprs.len() >= 8,
        "the dashboard has {} queries",
        exprs.len()
    );
    let rules = std::fs::read_to_string(repo().join("fleet/alerts.yml")).expect("rules");
    let rule_exprs = rule_expressions(&rules);
    assert!(rule_exprs.len() >= 2, "alerting rules");
    let mut unknown = BTreeMap::new();
    let mut used = BTreeSet::new();
    for e in exprs
        .iter()
        .copied()
        .chain(rule_exprs.iter().map(String::as_str))
    {
        let names = metric_names(e);
        // The datasource variable's query is the data source's type.
        assert!(
            !names.is_empty() || e == "prometheus",
            "a query without this exporter's metrics: {e:?}"
        );
        for n in names {
            if !served.contains(&n) {
                unknown.insert(n.clone(), e.to_string());
            }
            used.insert(n);
        }
    }
    assert!(
        unknown.is_empty(),
        "metric names the exporter does not serve (name: query): {unknown:#?}"
    );
    assert!(
        used.contains("rdma_connection_credit_limit_seconds_total")
            && used.contains("rdma_anomalies_total")
    );
}

#[test]
fn promtool_accepts_the_scrape_configuration_and_the_rules() {
    if !promtool() {
        return;
    }
    for args in [
        &["check", "config", "fleet/prometheus.yml"][..],
        &["check", "rules", "fleet/alerts.yml"][..],
    ] {
        let o = Command::new("promtool")
            .args(args)
            .current_dir(repo())
            .output()
            .expect("promtool");
        assert!(
            o.status.success(),
            "promtool {args:?}:\n{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    // The dashboard's queries parse as PromQL (Grafana's variables given
    // values): each becomes a recording rule promtool checks.
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("fleet/grafana-dashboard.json")).expect("dashboard"),
    )
    .expect("JSON");
    let mut exprs = Vec::new();
    strings_under(&dashboard, "expr", &mut exprs);
    let mut rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (i, e) in exprs.iter().enumerate() {
        let e = e
            .replace("$__rate_interval", "5m")
            .replace("$instance", ".*");
        rules.push_str(&format!(
            "      - record: dashboard_query_{i}\n        expr: |\n          {e}\n"
        ));
    }
    let dir = temp_dir("promql");
    let file = dir.join("dashboard.rules.yml");
    std::fs::write(&file, rules).expect("rules file");
    let o = Command::new("promtool")
        .args(["check", "rules"])
        .arg(&file)
        .output()
        .expect("promtool");
    assert!(
        o.status.success(),
        "the dashboard's queries:\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);

    // The rules' unit tests: the alerts fire on the series they are about.
    let o = Command::new("promtool")
        .args(["test", "rules", "fleet/alerts.test.yml"])
        .current_dir(repo())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("promtool");
    let mut msg = Vec::new();
    let _ = msg.write_all(&o.stdout);
    let _ = msg.write_all(&o.stderr);
    assert!(
        o.status.success(),
        "promtool test rules:\n{}",
        String::from_utf8_lossy(&msg)
    );
}

#[test]
#[cfg(feature = "metrics-server")]
fn a_busy_metrics_port_is_said_before_anything_starts() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let addr = taken.local_addr().expect("its address");
    let o = Command::new(BIN)
        .args([
            "live",
            "-i",
            "lo",
            "--no-tui",
            "--duration",
            "1",
            "--metrics",
        ])
        .arg(addr.to_string())
        .output()
        .expect("live");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("--metrics {addr}: cannot listen there"))
            && err.contains("give a free port"),
        "says what, where and what to do:\n{err}"
    );
    assert!(!err.contains("capturing on"), "nothing started:\n{err}");
}
