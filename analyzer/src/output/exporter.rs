//! `live --metrics ADDR`: the metrics over HTTP, for Prometheus to scrape.
//!
//! The exporter runs as root on production hosts and anything that reaches
//! its port is a client, so it must hold under clients that never read,
//! never finish a request, or open connections by the hundred (issue 23).
//! HTTP/1 is hyper's, on a current-thread tokio runtime in one thread: every
//! connection is its own task, so a client that stalls stalls only itself.
//! What bounds each client:
//!
//! - a request's header must arrive whole within [`Limits::header_timeout`]
//!   (slowloris) and fit in [`Limits::max_header_bytes`] (a header line
//!   without an end is cut off there, not buffered);
//! - a connection lives at most [`Limits::connection_lifetime`], then is
//!   asked to close and dropped [`Limits::grace`] later: a client that pipelines
//!   requests and never reads its responses (hyper has no write timeout)
//!   holds its slot no longer than that;
//! - at most [`Limits::max_connections`] at once: a new connection beyond
//!   that closes the oldest, counted (so connections held open by one
//!   client cannot keep a scrape out; a scrape needs milliseconds);
//! - an `accept` that fails (out of descriptors, out of memory) is counted,
//!   said on stderr, and retried after a growing pause: the listener never
//!   ends while `live` runs.
//!
//! Memory is then at most `max_connections` × (header buffer + one encoded
//! exposition). The exporter's own counters are served beside the rest
//! (`rdma_exporter_*`).
//!
//! `GET /metrics` gives OpenMetrics text when the scraper asks for it (as
//! Prometheus does), the Prometheus text format otherwise (curl, older
//! scrapers); `GET /` says where the metrics are. With `live --record`,
//! `POST /record` asks the flight recorder for a dump (an Alertmanager
//! webhook receiver can point there): its body is never read, so it costs
//! the exporter nothing whatever its size; without `--record` it is refused
//! as any other POST.

pub use crate::counters::ExporterStats;
use std::convert::Infallible;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ACCEPT, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::VecDeque;

use tokio::sync::watch;
use tokio::task::JoinHandle as Task;

use super::metrics::{prometheus_text, Exposition, Format};

/// What one client may take of the exporter.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections served at once; a new one beyond closes the oldest.
    pub max_connections: usize,
    /// From a connection's first byte of a request to the end of its header.
    pub header_timeout: Duration,
    /// Bytes a request's header may take (hyper's read buffer; at least 8 KiB).
    pub max_header_bytes: usize,
    /// Longest a connection is kept, keep-alive included.
    pub connection_lifetime: Duration,
    /// How long a connection asked to close at the end of its lifetime may
    /// take to finish the response it is sending before it is dropped.
    pub grace: Duration,
}

impl Default for Limits {
    /// A Prometheus server scrapes with one keep-alive connection and a
    /// header of a few hundred bytes; 64 leaves room for several servers,
    /// curl and a dashboard's probes. Prometheus' default scrape timeout is
    /// 10 s, so a scrape never needs the 60 s lifetime.
    fn default() -> Self {
        Limits {
            max_connections: 64,
            header_timeout: Duration::from_secs(5),
            max_header_bytes: 16 << 10,
            connection_lifetime: Duration::from_secs(60),
            grace: Duration::from_secs(5),
        }
    }
}

impl Limits {
    /// What the connections' header buffers may hold together: the part of
    /// the exporter's memory a client controls. (Each response is one
    /// encoding of the metrics, whose size their cardinality caps bound.)
    pub fn bytes(&self) -> usize {
        self.max_connections * self.max_header_bytes
    }
}

/// What the exporter has refused or cut off, for its own metrics.
#[derive(Debug, Default)]
pub struct Counters {
    /// Connections accepted and served.
    pub accepted: AtomicU64,
    /// Connections closed to make room for a new one: `max_connections`
    /// were being served, and the oldest went.
    pub evicted: AtomicU64,
    /// Connections dropped at the end of their lifetime, still busy.
    pub timed_out: AtomicU64,
    /// Connections that ended in an HTTP error: a header too slow or too
    /// large, a malformed request, a client gone mid-response.
    pub http_errors: AtomicU64,
    /// `accept` calls that failed (out of descriptors, say).
    pub accept_errors: AtomicU64,
}

impl Counters {
    /// The counters now.
    pub fn snapshot(&self) -> ExporterStats {
        ExporterStats {
            accepted: self.accepted.load(Ordering::Relaxed),
            evicted: self.evicted.load(Ordering::Relaxed),
            timed_out: self.timed_out.load(Ordering::Relaxed),
            http_errors: self.http_errors.load(Ordering::Relaxed),
            accept_errors: self.accept_errors.load(Ordering::Relaxed),
        }
    }

    /// The counters as OpenMetrics families, to go before `# EOF`.
    fn openmetrics(&self) -> String {
        let mut s = String::new();
        for (name, help, v) in [
            (
                "rdma_exporter_connections_accepted",
                "Connections the metrics exporter accepted and served",
                &self.accepted,
            ),
            (
                "rdma_exporter_connections_evicted",
                "Connections the metrics exporter closed to make room for a new one (it serves a bounded number at once; the oldest goes)",
                &self.evicted,
            ),
            (
                "rdma_exporter_connections_timed_out",
                "Connections the metrics exporter dropped at the end of their lifetime while still busy (a client that does not read)",
                &self.timed_out,
            ),
            (
                "rdma_exporter_http_errors",
                "Connections that ended in an HTTP error (a request header too slow or too large, a malformed request, a client gone mid-response)",
                &self.http_errors,
            ),
            (
                "rdma_exporter_accept_errors",
                "Failed accept calls of the metrics exporter (out of descriptors or memory); it retries after a pause",
                &self.accept_errors,
            ),
        ] {
            let _ = writeln!(s, "# HELP {name} {help}");
            let _ = writeln!(s, "# TYPE {name} counter");
            let _ = writeln!(s, "{name}_total {}", v.load(Ordering::Relaxed));
        }
        s
    }
}

/// A running exporter; stops serving when dropped.
pub struct Exporter {
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
    addr: SocketAddr,
    counters: Arc<Counters>,
    record: Arc<RecordRoute>,
}

/// `POST /record`: served once the flight recorder asked for it.
#[derive(Debug, Default)]
struct RecordRoute {
    served: AtomicBool,
    /// Set by a POST, taken by the recorder.
    requested: Arc<AtomicBool>,
}

impl Exporter {
    /// Listens on `addr` and serves `exposition` there, with the default
    /// [`Limits`].
    ///
    /// # Errors
    /// When the address cannot be bound (in use, not this host's, not
    /// permitted) or the thread cannot start.
    pub fn start(addr: SocketAddr, exposition: Exposition) -> anyhow::Result<Exporter> {
        Exporter::with_limits(addr, exposition, Limits::default())
    }

    /// [`Exporter::start`] with `limits`.
    ///
    /// # Errors
    /// As [`Exporter::start`].
    pub fn with_limits(
        addr: SocketAddr,
        exposition: Exposition,
        limits: Limits,
    ) -> anyhow::Result<Exporter> {
        // Bound here, not in the thread, so that a port in use is an error
        // of `live` at start-up.
        let listener = std::net::TcpListener::bind(addr).map_err(|e| {
            anyhow::anyhow!(
                "--metrics {addr}: cannot listen there: {e}; give a free port on one of this host's addresses (127.0.0.1:9464)"
            )
        })?;
        // Port 0 asks for any free port: say which one was given.
        let addr = listener
            .local_addr()
            .context("--metrics: the address the listener got")?;
        listener
            .set_nonblocking(true)
            .context("--metrics: a non-blocking listener")?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .context("--metrics: starting the HTTP runtime")?;
        let (stop, mut stopped) = watch::channel(false);
        let counters = Arc::new(Counters::default());
        let theirs = counters.clone();
        let record = Arc::new(RecordRoute::default());
        let route = record.clone();
        let exposition = Arc::new(exposition);
        let thread = std::thread::Builder::new()
            .name("metrics-http".into())
            .spawn(move || {
                runtime.block_on(async move {
                    match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => {
                            tokio::spawn(serve(l, exposition, limits, theirs, route));
                        }
                        Err(e) => eprintln!(
                            "live: --metrics {addr}: the listener: {e}; no metrics will be served"
                        ),
                    }
                    // Until the exporter is dropped; dropping the runtime
                    // then ends every task and closes every connection.
                    let _ = stopped.wait_for(|stop| *stop).await;
                });
            })
            .context("--metrics: starting the HTTP thread")?;
        Ok(Exporter {
            stop,
            thread: Some(thread),
            addr,
            counters,
            record,
        })
    }

    /// Serves `POST /record` from now on; the flag it sets (`live
    /// --record`'s `http` trigger).
    pub fn record_flag(&self) -> Arc<AtomicBool> {
        self.record.served.store(true, Ordering::SeqCst);
        self.record.requested.clone()
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// What it has refused or cut off so far.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The first pause after a failed `accept`, and the longest.
const ACCEPT_BACKOFF: (Duration, Duration) = (Duration::from_millis(10), Duration::from_secs(1));

async fn serve(
    listener: tokio::net::TcpListener,
    exposition: Arc<Exposition>,
    limits: Limits,
    counters: Arc<Counters>,
    record: Arc<RecordRoute>,
) {
    // Connections being served, oldest first.
    let mut live: VecDeque<Task<()>> = VecDeque::new();
    let mut backoff = ACCEPT_BACKOFF.0;
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => {
                backoff = ACCEPT_BACKOFF.0;
                stream
            }
            Err(e) => {
                let n = counters.accept_errors.fetch_add(1, Ordering::Relaxed) + 1;
                // Said on the first failure and then at each power of two:
                // a flood must not flood stderr too.
                if n.is_power_of_two() {
                    eprintln!(
                        "live: metrics exporter: accept failed ({e}; {n} failures so far); retrying in {} ms. Out of descriptors? Raise LimitNOFILE/ulimit -n, or bind --metrics to 127.0.0.1 and firewall the port",
                        backoff.as_millis()
                    );
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(ACCEPT_BACKOFF.1);
                continue;
            }
        };
        // At the cap, the oldest connection makes room: a client holding
        // connections open cannot keep a scrape out, it only churns its own
        // (a scrape needs its connection for milliseconds).
        live.retain(|t| !t.is_finished());
        while live.len() >= limits.max_connections.max(1) {
            if let Some(oldest) = live.pop_front() {
                oldest.abort();
                counters.evicted.fetch_add(1, Ordering::Relaxed);
            }
        }
        counters.accepted.fetch_add(1, Ordering::Relaxed);
        let (exposition, counters) = (exposition.clone(), counters.clone());
        live.push_back(tokio::spawn(connection(
            stream,
            exposition,
            limits,
            counters,
            record.clone(),
        )));
    }
}

async fn connection(
    stream: tokio::net::TcpStream,
    exposition: Arc<Exposition>,
    limits: Limits,
    counters: Arc<Counters>,
    record: Arc<RecordRoute>,
) {
    let theirs = counters.clone();
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let response = respond(&req, &exposition, &theirs, &record);
        async move { Ok::<_, Infallible>(response) }
    });
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(limits.max_header_bytes.max(8192));
    let conn = http.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    let result = match tokio::time::timeout(limits.connection_lifetime, conn.as_mut()).await {
        Ok(r) => r,
        Err(_) => {
            conn.as_mut().graceful_shutdown();
            match tokio::time::timeout(limits.grace, conn.as_mut()).await {
                Ok(r) => r,
                Err(_) => {
                    counters.timed_out.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            }
        }
    };
    if result.is_err() {
        counters.http_errors.fetch_add(1, Ordering::Relaxed);
    }
}

fn respond(
    req: &Request<Incoming>,
    exposition: &Exposition,
    counters: &Counters,
    record: &RecordRoute,
) -> Response<Full<Bytes>> {
    let get = matches!(*req.method(), Method::GET | Method::HEAD);
    let path = req.uri().path();
    let recording = record.served.load(Ordering::Relaxed);
    let (status, body, content_type) = match (get, path) {
        (false, "/record") if recording && req.method() == Method::POST => {
            record.requested.store(true, Ordering::SeqCst);
            (
                StatusCode::ACCEPTED,
                "rdma-analyzer: a flight recorder dump will be written after --record-after\n"
                    .to_string(),
                "text/plain; charset=utf-8",
            )
        }
        (true, "/metrics") => {
            let openmetrics = req.headers().get_all(ACCEPT).iter().any(|v| {
                v.to_str()
                    .is_ok_and(|v| v.contains("application/openmetrics-text"))
            });
            let format = if openmetrics {
                Format::OpenMetrics
            } else {
                Format::PrometheusText
            };
            let text = with_own(&exposition.encode(Format::OpenMetrics), counters, format);
            (StatusCode::OK, text, format.content_type())
        }
        (true, "/") => (
            StatusCode::OK,
            "rdma-analyzer: metrics at /metrics\n".to_string(),
            "text/plain; charset=utf-8",
        ),
        (true, _) => (
            StatusCode::NOT_FOUND,
            format!("no {path} here: metrics are at /metrics\n"),
            "text/plain; charset=utf-8",
        ),
        (false, _) => (
            StatusCode::METHOD_NOT_ALLOWED,
            "only GET (and HEAD) are served\n".to_string(),
            "text/plain; charset=utf-8",
        ),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// `openmetrics` (an exposition that ends in `# EOF`) with the exporter's
/// own counters before its end, in `format`.
fn with_own(openmetrics: &str, counters: &Counters, format: Format) -> String {
    let body = openmetrics.strip_suffix("# EOF\n").unwrap_or(openmetrics);
    let mut s = String::with_capacity(openmetrics.len() + 1024);
    s.push_str(body);
    s.push_str(&counters.openmetrics());
    s.push_str("# EOF\n");
    match format {
        Format::OpenMetrics => s,
        Format::PrometheusText => prometheus_text(&s),
    }
}
