//! The NFS client's own counters as Prometheus series, read at scrape time:
//! every field of each RDMA mount's `xprt: rdma` lines, named as the kernel
//! prints them (node_exporter exports none of them, and libraries that map
//! them in struct order mislabel them), and the per-op statistics.
//!
//! Labels: `mount` (the mount point), `export` (`server:/path`),
//! `transport` (0-based, in print order: `nconnect` gives several) and `op`.
//! At most [`MAX_MOUNTS`] mounts and [`MAX_TRANSPORTS`] transports each get
//! series; what is left out is counted in `rdma_nfs_mounts_unlabelled`.

use std::fmt;

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

use crate::engine::mountstats::{self, Mount, Transport, RDMA_FIELDS};

/// RDMA mounts with series of their own, in the order mountstats lists them.
pub const MAX_MOUNTS: usize = 32;
/// Transports per mount with series (`nconnect` allows 16).
pub const MAX_TRANSPORTS: usize = 16;

/// Fields that are not running totals: the local port (always 0 for RDMA)
/// and the seconds since the transport was last used.
fn is_gauge(field: &str) -> bool {
    matches!(field, "port" | "idle_time")
}

/// The series of the RDMA mounts in `text` (a /proc/self/mountstats); a
/// text that does not parse gives `rdma_nfs_mountstats_readable 0` and no
/// other series, rather than a scrape error.
pub fn encode(enc: &mut DescriptorEncoder<'_>, text: Option<&str>) -> fmt::Result {
    let parsed = text.map(mountstats::parse);
    let readable = i64::from(matches!(parsed, Some(Ok(_))));
    let m = enc.encode_descriptor(
        "rdma_nfs_mountstats_readable",
        "Whether /proc/self/mountstats was read and parsed at its latest read (live: the counter sampler's, every --counters-interval; otherwise at most 5 s before this scrape) (0: no NFS client here, or a format this analyzer does not know)",
        None,
        MetricType::Gauge,
    )?;
    ConstGauge::new(readable).encode(m)?;
    let Some(Ok(all)) = parsed else {
        return Ok(());
    };
    let rdma: Vec<&Mount> = all.iter().filter(|m| m.is_rdma()).collect();
    let kept = &rdma[..rdma.len().min(MAX_MOUNTS)];
    let m = enc.encode_descriptor(
        "rdma_nfs_mounts_unlabelled",
        "RDMA mounts beyond the cap of mounts with series of their own",
        None,
        MetricType::Gauge,
    )?;
    ConstGauge::new((rdma.len() - kept.len()) as i64).encode(m)?;
    transports(enc, kept)?;
    ops(enc, kept)
}

fn transports(enc: &mut DescriptorEncoder<'_>, mounts: &[&Mount]) -> fmt::Result {
    for (i, (field, help)) in RDMA_FIELDS.iter().enumerate() {
        if *field == "port" {
            continue;
        }
        let name = format!("rdma_nfs_xprt_{field}");
        let help = format!("mountstats xprt: rdma field {} ({help})", i + 1);
        let kind = if is_gauge(field) {
            MetricType::Gauge
        } else {
            MetricType::Counter
        };
        let mut family = enc.encode_descriptor(&name, &help, None, kind)?;
        for m in mounts {
            let rdma = m
                .transports
                .iter()
                .filter(|t| matches!(t, Transport::Rdma { .. }))
                .take(MAX_TRANSPORTS);
            for (n, t) in rdma.enumerate() {
                // A field this kernel does not print gives no sample.
                let Some(v) = t.rdma(field) else { continue };
                let n = n.to_string();
                let labels = [
                    ("mount", m.mountpoint.as_str()),
                    ("export", m.device.as_str()),
                    ("transport", n.as_str()),
                ];
                let e = family.encode_family(&labels)?;
                if is_gauge(field) {
                    ConstGauge::new(v as i64).encode(e)?;
                } else {
                    ConstCounter::new(v).encode(e)?;
                }
            }
        }
    }
    Ok(())
}

/// The per-op columns: name, help, value (milliseconds become seconds).
type OpColumn = (
    &'static str,
    &'static str,
    fn(&mountstats::OpStats) -> Option<f64>,
);

const OP_COLUMNS: [OpColumn; 9] = [
    ("ops", "operations the application asked for", |o| {
        Some(o.ops as f64)
    }),
    (
        "transmissions",
        "transmissions, retransmissions included",
        |o| Some(o.ntrans as f64),
    ),
    ("timeouts", "major timeouts", |o| Some(o.timeouts as f64)),
    ("sent_bytes", "bytes sent, RPC headers included", |o| {
        Some(o.bytes_sent as f64)
    }),
    (
        "received_bytes",
        "bytes received, RPC headers included",
        |o| Some(o.bytes_recv as f64),
    ),
    (
        "queue_seconds",
        "time queued before transmission, summed",
        |o| Some(o.queue_ms as f64 / 1e3),
    ),
    (
        "rtt_seconds",
        "time from transmission to reply, summed",
        |o| Some(o.rtt_ms as f64 / 1e3),
    ),
    (
        "execute_seconds",
        "time from the request to its completion, summed",
        |o| Some(o.execute_ms as f64 / 1e3),
    ),
    (
        "errors",
        "operations that ended in an error (statvers 1.1 on)",
        |o| o.errors.map(|e| e as f64),
    ),
];

fn ops(enc: &mut DescriptorEncoder<'_>, mounts: &[&Mount]) -> fmt::Result {
    for (col, help, value) in OP_COLUMNS {
        let name = format!("rdma_nfs_op_{col}");
        let help = format!("mountstats per-op statistics: {help}");
        let mut family = enc.encode_descriptor(&name, &help, None, MetricType::Counter)?;
        for m in mounts {
            // An operation never used has only zeros: no series for it.
            for o in m.ops.iter().filter(|o| o.ops > 0 || o.ntrans > 0) {
                let Some(v) = value(o) else { continue };
                let labels = [
                    ("mount", m.mountpoint.as_str()),
                    ("export", m.device.as_str()),
                    ("op", o.name.as_str()),
                ];
                ConstCounter::new(v).encode(family.encode_family(&labels)?)?;
            }
        }
    }
    Ok(())
}
