//! `--metrics ADDRESS`: serves the run's live metrics (OpenMetrics text, rendered by
//! horde_report every interval) at `/metrics` while the run goes, for Prometheus or any
//! scraper, from a [`LocalServer`].

use crate::local_server::LocalServer;
use anyhow::Context;
use bytes::Bytes;
use horde_report::LiveMetrics;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use std::net::SocketAddr;

const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The endpoint, serving until dropped.
pub(crate) struct MetricsEndpoint {
    pub address: SocketAddr,
    _server: LocalServer,
}

impl MetricsEndpoint {
    /// Binds `address` now, so that a port in use is found before the run starts.
    pub fn start(address: SocketAddr, live: LiveMetrics) -> anyhow::Result<MetricsEndpoint> {
        let listener =
            std::net::TcpListener::bind(address).with_context(|| format!("--metrics: cannot listen on {address}"))?;
        listener.set_nonblocking(true)?;
        let address = listener.local_addr()?;
        let server = LocalServer::start(listener, "horde-metrics", move |request: Request<Incoming>| {
            let response = answer(&request, &live);
            async move { response }
        })?;
        Ok(MetricsEndpoint { address, _server: server })
    }
}

fn answer(request: &Request<Incoming>, live: &LiveMetrics) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match (request.method().as_str(), request.uri().path()) {
        ("GET" | "HEAD", "/metrics") => (StatusCode::OK, CONTENT_TYPE, Bytes::from(live.current().to_string())),
        ("GET" | "HEAD", _) => (StatusCode::NOT_FOUND, "text/plain", Bytes::from_static(b"horde serves /metrics\n")),
        _ => (StatusCode::METHOD_NOT_ALLOWED, "text/plain", Bytes::from_static(b"GET /metrics\n")),
    };
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Full::new(body))
        .expect("a valid response")
}
