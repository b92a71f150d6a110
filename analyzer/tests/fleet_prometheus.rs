//! A real Prometheus server (Debian's) scraping `live -i lo --no-tui
//! --metrics` while a bundled capture is injected onto the loopback
//! interface: what Prometheus' HTTP API answers equals `report` on the same
//! capture. Counts are exact; latency quantiles (`histogram_quantile`) fall
//! in the bucket that holds `report`'s figure for the frames `live`
//! captured (`--write`: the same frames with the capture's timestamps).
//!
//! Prometheus runs from its binary with a configuration and data folder of
//! the test's own, on loopback ports of the test's choosing (no systemd, no
//! system service). Needs root (CAP_NET_RAW) and Prometheus.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use rdma_analyzer::output::metrics::LATENCY_BOUNDS_NS;
use serde_json::Value;

#[path = "common/prereq.rs"]
mod prereq;

#[path = "common/loopback.rs"]
mod loopback;

#[path = "common/exposition.rs"]
mod exposition;
use exposition::procedure_label;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-analyzer");
/// 1050 transactions on one connection, no call left unanswered.
const SCENARIO: &str = "parallel.pcap";

fn capture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../captures")
        .join(name)
}

/// A child process that is killed when the test is done with it, however
/// the test ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A loopback port nobody listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// `GET path` on 127.0.0.1:`port`: (status, body).
fn http_get(port: u16, path: &str, accept: Option<&str>) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
    write!(
        s,
        "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n{accept}Connection: close\r\n\r\n"
    )?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Ok((status, body.to_string()))
}

fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// An instant query against Prometheus' HTTP API: (labels, value) per series.
fn query(port: u16, q: &str) -> Vec<(BTreeMap<String, String>, f64)> {
    let (status, body) = http_get(
        port,
        &format!("/api/v1/query?query={}", url_encode(q)),
        None,
    )
    .unwrap_or_else(|e| panic!("querying Prometheus: {e}"));
    assert_eq!(status, 200, "{q}: {body}");
    let v: Value = serde_json::from_str(&body).expect("the API's JSON");
    assert_eq!(v["status"], "success", "{q}: {v}");
    v["data"]["result"]
        .as_array()
        .expect("a vector")
        .iter()
        .map(|r| {
            let labels = r["metric"]
                .as_object()
                .expect("labels")
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect();
            let value = r["value"][1]
                .as_str()
                .and_then(|x| match x {
                    "+Inf" => Some(f64::INFINITY),
                    "NaN" => Some(f64::NAN),
                    x => x.parse().ok(),
                })
                .expect("a value");
            (labels, value)
        })
        .collect()
}

fn scalar(port: u16, q: &str) -> Option<f64> {
    query(port, q).first().map(|x| x.1)
}

fn wait_until(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(start.elapsed() < limit, "waited {limit:?} for {what}");
        sleep(Duration::from_millis(200));
    }
}

fn report(path: &Path) -> Value {
    let o = Command::new(BIN)
        .args(["report", "--json"])
        .arg(path)
        .output()
        .expect("report");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("report JSON")
}

/// The bucket (lower, upper bound, seconds) that holds `v` seconds.
fn bucket_of(v: f64) -> (f64, f64) {
    let mut lower = 0.0;
    for &b in &LATENCY_BOUNDS_NS {
        let upper = b as f64 / 1e9;
        if v <= upper {
            return (lower, upper);
        }
        lower = upper;
    }
    (lower, f64::INFINITY)
}

#[test]
fn prometheus_scraping_live_agrees_with_report() {
    if !prereq::root("live -i lo needs CAP_NET_RAW")
        || !prereq::require(
            "prometheus",
            prereq::have_command("prometheus", "--version"),
            "Debian's prometheus package; scripts/setup-fleet.sh installs it",
        )
    {
        return;
    }
    let dir = std::env::temp_dir().join(format!("rdma-prometheus-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");

    // The exporter: port 0, it says which port it got.
    let err = dir.join("live.err");
    let pcapng = dir.join("live.pcapng");
    let live = Command::new(BIN)
        .args([
            "live",
            "-i",
            "lo",
            "--no-tui",
            "--metrics",
            "127.0.0.1:0",
            "--write",
        ])
        .arg(&pcapng)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).expect("stderr file"))
        .spawn()
        .expect("starting live");
    let mut live = Running(live);
    let said = loopback::wait_for_file_text(&err, "capturing on lo", Duration::from_secs(20));
    let exporter_port: u16 = said
        .split("metrics at http://127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("live did not say where its metrics are:\n{said}"));

    // Prometheus, scraping it every second.
    let prom_port = free_port();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
             scrape_configs:\n  - job_name: rdma-analyzer\n    static_configs:\n      - targets: ['127.0.0.1:{exporter_port}']\n"
        ),
    )
    .expect("config");
    let prom = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("prometheus.err")).expect("file"))
        .spawn()
        .expect("starting prometheus");
    let _prom = Running(prom);
    wait_until("Prometheus to be ready", Duration::from_secs(60), || {
        http_get(prom_port, "/-/ready", None).is_ok_and(|(s, _)| s == 200)
    });
    wait_until("Prometheus to scrape live", Duration::from_secs(30), || {
        scalar(prom_port, "up{job=\"rdma-analyzer\"}") == Some(1.0)
    });

    // The capture onto lo; then the exporter, then Prometheus, have every
    // RoCE frame of it (live's filter is `udp port 4791`: the capture's
    // TCP frames to the portmapper stay out).
    let want = report(&capture(SCENARIO));
    let roce = want["totals"]["rdma_frames"].as_u64().expect("RoCE frames");
    let sent = loopback::inject(&capture(SCENARIO));
    assert!(sent >= roce, "{sent} frames sent");
    let mut seen = 0;
    let counted = || {
        http_get(exporter_port, "/metrics", None).map_or(0, |(_, body)| {
            exposition::sum(&exposition::samples(&body), "rdma_frames_total", &[]) as u64
        })
    };
    wait_until(
        "live to count every RoCE frame",
        Duration::from_secs(30),
        || {
            seen = counted();
            seen == roce
        },
    );
    wait_until(
        "Prometheus to scrape every frame",
        Duration::from_secs(30),
        || scalar(prom_port, "rdma_frames_total") == Some(roce as f64),
    );
    // Prometheus asked for OpenMetrics; a plain client gets the text format.
    let (_, om) = http_get(
        exporter_port,
        "/metrics",
        Some("application/openmetrics-text"),
    )
    .expect("scrape");
    assert!(om.ends_with("# EOF\n"), "OpenMetrics ends with # EOF");

    let t = &want["totals"];
    // Totals and losses.
    for (metric, key) in [
        ("rdma_transport_frames_total", "rdma_frames"),
        ("rdma_rpcrdma_messages_total", "rpcrdma_messages"),
        ("rdma_retransmissions_total", "retransmissions"),
        ("rdma_psn_gaps_total", "psn_gaps"),
        ("rdma_remote_invalidations_total", "remote_invalidations"),
        ("rdma_cm_messages_total", "cm_messages"),
    ] {
        assert_eq!(
            scalar(prom_port, metric),
            t[key].as_u64().map(|v| v as f64),
            "{metric}"
        );
    }
    assert_eq!(
        scalar(prom_port, "rdma_capture_dropped_frames_total"),
        Some(0.0)
    );
    assert_eq!(scalar(prom_port, "rdma_rpc_outstanding_calls"), Some(0.0));

    // Replies by procedure and transfer mode; calls by procedure.
    let mut want_replies: BTreeMap<(String, String), f64> = BTreeMap::new();
    let mut want_calls: BTreeMap<String, f64> = BTreeMap::new();
    for r in want["response_times"].as_array().expect("rows") {
        let p = r["procedure"].as_str().expect("label").to_string();
        let n = r["latency"]["count"].as_f64().expect("count");
        *want_replies
            .entry((
                p.clone(),
                r["reply_transfer"].as_str().expect("t").to_string(),
            ))
            .or_default() += n;
        *want_calls.entry(p).or_default() += n;
    }
    let got_replies: BTreeMap<(String, String), f64> = query(
        prom_port,
        "sum by (program, procedure, transfer) (rdma_rpc_replies_total)",
    )
    .into_iter()
    .map(|(l, v)| ((procedure_label(&l), l["transfer"].clone()), v))
    .collect();
    assert_eq!(
        got_replies, want_replies,
        "replies by procedure and transfer"
    );
    let got_calls: BTreeMap<String, f64> = query(
        prom_port,
        "sum by (program, procedure) (rdma_rpc_calls_total)",
    )
    .into_iter()
    .map(|(l, v)| (procedure_label(&l), v))
    .collect();
    assert_eq!(got_calls, want_calls, "calls by procedure");

    // Chunks and anomalies.
    for (kind, c) in want["chunks"].as_object().expect("chunks") {
        assert_eq!(
            scalar(
                prom_port,
                &format!("rdma_chunk_moved_bytes_total{{kind=\"{kind}\"}}")
            ),
            c["moved_bytes"].as_f64(),
            "{kind} bytes moved"
        );
    }
    let got_anomalies: BTreeMap<String, f64> = query(prom_port, "rdma_anomalies_total > 0")
        .into_iter()
        .map(|(l, v)| (l["kind"].clone(), v))
        .collect();
    let want_anomalies: BTreeMap<String, f64> = want["anomalies"]
        .as_array()
        .expect("anomalies")
        .iter()
        .map(|a| {
            (
                a["kind"].as_str().expect("kind").to_string(),
                a["count"].as_f64().expect("count"),
            )
        })
        .collect();
    assert_eq!(got_anomalies, want_anomalies, "anomalies by kind");

    // Credits of the one connection.
    let conn = &want["connections"][0];
    assert_eq!(
        scalar(prom_port, "rdma_connection_credits_granted"),
        conn["credits"]["last_granted"].as_f64()
    );
    assert_eq!(
        scalar(prom_port, "rdma_connection_credits_in_flight_peak"),
        conn["credits"]["peak_in_flight"].as_f64()
    );

    // Latency: Prometheus' quantile estimates, by procedure, while live
    // still runs (a stopped target's series go stale).
    let estimates: Vec<(f64, &str, BTreeMap<String, f64>)> = [(0.5, "p50_us"), (0.99, "p99_us")]
        .into_iter()
        .map(|(q, key)| {
            let est = query(
                prom_port,
                &format!(
                    "histogram_quantile({q}, sum by (le, program, procedure) (rdma_rpc_latency_seconds_bucket))"
                ),
            )
            .into_iter()
            .map(|(l, v)| (procedure_label(&l), v))
            .collect();
            (q, key, est)
        })
        .collect();

    // SIGTERM ends the service cleanly (and finishes its pcapng).
    let killed = Command::new("kill")
        .args(["-TERM", &live.0.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success(), "SIGTERM to live");
    let status = live.0.wait().expect("live");
    let err_text = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(status.success(), "live after SIGTERM: {status}\n{err_text}");
    drop(live);

    // Each estimate lies in a bucket; the report's figure for the frames
    // live captured lies in that bucket too (give or take the report's own
    // 1/64).
    let captured = report(&pcapng);
    assert_eq!(
        captured["totals"]["frames"].as_u64(),
        Some(roce),
        "--write kept every frame"
    );
    let rows = captured["response_times"].as_array().expect("rows");
    let mut checked = 0;
    for r in rows {
        let label = r["procedure"].as_str().expect("label");
        // Rows by transfer mode share a procedure's histogram: compare
        // procedures with one row only.
        if rows.iter().filter(|x| x["procedure"] == label).count() != 1 {
            continue;
        }
        for (q, key, est) in &estimates {
            let got = est[label];
            let report_s = r["latency"][*key].as_f64().expect("quantile") / 1e6;
            let (lo, hi) = bucket_of(got);
            assert!(
                report_s >= lo * (1.0 - 1.0 / 64.0) && report_s <= hi * (1.0 + 1.0 / 64.0),
                "{label} q{q}: Prometheus {got} s in ({lo}, {hi}], report {report_s} s"
            );
            checked += 1;
        }
    }
    assert!(checked >= 4, "quantiles compared: {checked}");
    let _ = std::fs::remove_dir_all(&dir);
}
