//! `--metrics ADDRESS`: serves the run's live metrics (OpenMetrics text, rendered by
//! horde_report every interval) at `/metrics` while the run goes, for Prometheus or any
//! scraper. It runs on a thread of its own with a small runtime, away from the workers.

use anyhow::Context;
use bytes::Bytes;
use horde_report::LiveMetrics;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use tokio::sync::oneshot;

const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The endpoint, serving until dropped.
pub(crate) struct MetricsEndpoint {
    pub address: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MetricsEndpoint {
    /// Binds `address` now, so that a port in use is found before the run starts.
    pub fn start(address: SocketAddr, live: LiveMetrics) -> anyhow::Result<MetricsEndpoint> {
        let listener =
            std::net::TcpListener::bind(address).with_context(|| format!("--metrics: cannot listen on {address}"))?;
        listener.set_nonblocking(true)?;
        let address = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::Builder::new().name("horde-metrics".into()).spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_io().build().expect("a runtime");
            runtime.block_on(serve(listener, live, stopped));
        })?;
        Ok(MetricsEndpoint { address, stop: Some(stop), thread: Some(thread) })
    }
}

impl Drop for MetricsEndpoint {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(listener: std::net::TcpListener, live: LiveMetrics, mut stopped: oneshot::Receiver<()>) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return };
    loop {
        let stream = tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => continue,
            },
        };
        let live = live.clone();
        // One scrape at a time is plenty; a scraper that hangs is cut off by the next stop.
        let service = service_fn(move |request: Request<Incoming>| {
            let live = live.clone();
            async move { Ok::<_, std::convert::Infallible>(answer(&request, &live)) }
        });
        tokio::select! {
            _ = &mut stopped => return,
            _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service) => {}
        }
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
