//! `live --metrics ADDR`: the metrics over HTTP, for Prometheus to scrape.
//! One thread answers one request at a time (a scrape encodes a snapshot
//! the pipeline published, so it never waits for the pipeline, nor the
//! pipeline for it).
//!
//! `GET /metrics` gives OpenMetrics text when the scraper asks for it (as
//! Prometheus does), the Prometheus text format otherwise (curl, older
//! scrapers); `GET /` says where the metrics are.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::Context;

use super::metrics::{Exposition, Format};

/// A running exporter; stops serving when dropped.
pub struct Exporter {
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
    addr: SocketAddr,
}

impl Exporter {
    /// Listens on `addr` and serves `exposition` there.
    ///
    /// # Errors
    /// When the address cannot be bound (in use, not this host's, not
    /// permitted) or the thread cannot start.
    pub fn start(addr: SocketAddr, exposition: Exposition) -> anyhow::Result<Exporter> {
        let server = tiny_http::Server::http(addr).map_err(|e| {
            anyhow::anyhow!(
                "--metrics {addr}: cannot listen there: {e}; give a free port on one of this host's addresses (127.0.0.1:9464, 0.0.0.0:9464)"
            )
        })?;
        // Port 0 asks for any free port: say which one was given.
        let addr = server
            .server_addr()
            .to_ip()
            .context("--metrics: the server is not on an IP address")?;
        let server = Arc::new(server);
        let theirs = server.clone();
        let thread = std::thread::Builder::new()
            .name("metrics-http".into())
            .spawn(move || serve(&theirs, &exposition))
            .context("--metrics: starting the HTTP thread")?;
        Ok(Exporter {
            server,
            thread: Some(thread),
            addr,
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(server: &tiny_http::Server, exposition: &Exposition) {
    for request in server.incoming_requests() {
        let get = matches!(
            request.method(),
            tiny_http::Method::Get | tiny_http::Method::Head
        );
        let path = request.url().split('?').next().unwrap_or("");
        let (status, body, content_type) = match (get, path) {
            (true, "/metrics") => {
                let openmetrics = request.headers().iter().any(|h| {
                    h.field.equiv("Accept")
                        && h.value.as_str().contains("application/openmetrics-text")
                });
                let format = if openmetrics {
                    Format::OpenMetrics
                } else {
                    Format::PrometheusText
                };
                (200, exposition.encode(format), format.content_type())
            }
            (true, "/") => (
                200,
                "rdma-analyzer: metrics at /metrics\n".to_string(),
                "text/plain; charset=utf-8",
            ),
            (true, _) => (
                404,
                format!("no {path} here: metrics are at /metrics\n"),
                "text/plain; charset=utf-8",
            ),
            (false, _) => (
                405,
                "only GET (and HEAD) are served\n".to_string(),
                "text/plain; charset=utf-8",
            ),
        };
        let mut response = tiny_http::Response::from_string(body).with_status_code(status);
        if let Ok(h) = tiny_http::Header::from_bytes(&b"Content-Type"[..], content_type.as_bytes())
        {
            response = response.with_header(h);
        }
        // A scraper that hung up is its own business; the next one is served.
        let _ = request.respond(response);
    }
}
