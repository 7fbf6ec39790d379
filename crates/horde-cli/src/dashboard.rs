//! `--dashboard [ADDRESS]`: the run's report page served live while it goes, as k6's web
//! dashboard and Locust's web UI are, but the page is report.html itself (one page to keep).
//!
//! Three parts, none on the engine's path:
//! - the sink announces each interval it has written ([`ResultsWatch`]);
//! - a renderer thread renders the report from those files, as report.html is rendered, only
//!   while somebody looks, and at most a fifth of a core's time (the engine never waits). It
//!   keeps what it read ([`ReadCache`]): each rendering reads only what the sink appended, so
//!   a long run's updates do not slow down (an hour of 20 requests: 20 ms a rendering). The
//!   whole page is built from a rendering only when a browser opens the dashboard;
//! - a [`LocalServer`] (hyper on a thread of its own, as `--metrics`) serves the latest page at
//!   `/`, its updates as server-sent events at `/events` (every open page gets each update once;
//!   one that falls behind gets the newest), and with `--dashboard-control`, `POST /stop`.
//!
//! At the end the final report (the same content as report.html) is sent to every open page
//! before horde exits. Safety: on loopback, a request must name the dashboard's own host (no
//! DNS rebinding); beyond loopback, every request must carry the token printed with the
//! address. Stop always needs the token in a header, which another site's page cannot send.

use crate::local_server::LocalServer;
use crate::output::status;
use anyhow::Context;
use bytes::Bytes;
use horde_report::{LiveDocument, LivePage, ReadCache, ResultsWatch};
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// How long a new page waits for the first rendering before it is told to come back.
const FIRST_PAGE_WAIT: Duration = Duration::from_secs(10);
/// A comment line on every event stream this often: a closed browser is noticed when it
/// fails, and proxies do not time the stream out.
const KEEPALIVE: Duration = Duration::from_secs(15);
/// At the end, how long horde waits for the open pages to receive the final report.
const FINAL_DELIVERY: Duration = Duration::from_secs(3);
/// Rendering may take at most 1/RENDER_DUTY of the renderer thread's time.
const RENDER_DUTY: u32 = 5;

/// One rendering, as every page gets it.
struct Published {
    version: u64,
    /// What the page is built from, when a browser opens the dashboard: the open pages only
    /// need the event, and building the page costs a quarter of a rendering (6 ms of 26 for
    /// an hour of 20 requests).
    document: LiveDocument,
    /// The page, once a browser asked for it.
    page: OnceLock<Bytes>,
    /// The server-sent event (`id`, `event: report`, the parts as one JSON line).
    event: Bytes,
    finished: bool,
}

/// Who may use the dashboard.
struct Access {
    token: String,
    /// Listening beyond loopback: every request must carry the token.
    token_required: bool,
    /// The port, for the loopback host check.
    port: u16,
}

impl Access {
    /// On loopback, the Host a browser sends must be the dashboard's own: a page of another site
    /// whose name was made to resolve to 127.0.0.1 (DNS rebinding) sends its own name. Beyond
    /// loopback, the token (`?token=` or the `X-Horde-Token` header) is what admits.
    fn admits(&self, headers: &hyper::HeaderMap, query: Option<&str>) -> Result<(), &'static str> {
        if self.token_required {
            return match given_token(headers, query).as_deref() == Some(self.token.as_str()) {
                true => Ok(()),
                false => Err("horde's dashboard needs the token printed with its address (?token=...)\n"),
            };
        }
        let host = headers.get(hyper::header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("");
        let port = self.port;
        let own = [format!("127.0.0.1:{port}"), format!("localhost:{port}"), format!("[::1]:{port}")];
        match own.iter().any(|allowed| allowed == host) {
            true => Ok(()),
            false => Err("horde's dashboard answers only to its own address\n"),
        }
    }

    /// A stop needs the token in a header, which a page of another site cannot send.
    fn may_stop(&self, headers: &hyper::HeaderMap) -> bool {
        headers.get("x-horde-token").and_then(|v| v.to_str().ok()) == Some(self.token.as_str())
    }
}

/// The token a request gives: the `X-Horde-Token` header, or `?token=` in its URL.
fn given_token(headers: &hyper::HeaderMap, query: Option<&str>) -> Option<String> {
    if let Some(header) = headers.get("x-horde-token").and_then(|v| v.to_str().ok()) {
        return Some(header.to_string());
    }
    url::form_urlencoded::parse(query?.as_bytes())
        .find(|(name, _)| name == "token")
        .map(|(_, value)| value.into_owned())
}

/// What the server, the renderer and the command share.
struct Shared {
    page: LivePage,
    access: Access,
    latest: watch::Sender<Option<Arc<Published>>>,
    /// Open event streams: rendering happens only while somebody looks.
    viewers: AtomicUsize,
    /// A page was asked for since the last rendering.
    wanted: AtomicBool,
    closing: AtomicBool,
}

/// The dashboard, serving until [`Dashboard::close`] (or dropped).
pub(crate) struct Dashboard {
    watch: ResultsWatch,
    shared: Arc<Shared>,
    server: Option<LocalServer>,
    /// The renderer thread; it gives back what it read, for the final rendering.
    renderer: Option<std::thread::JoinHandle<ReadCache>>,
}

/// `--dashboard`'s value: `PORT` or `IP:PORT`.
pub(crate) fn parse_address(text: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    text.parse::<SocketAddr>().map_err(|_| {
        format!("--dashboard {text:?}: not an address; give PORT (5665) or IP:PORT (127.0.0.1:5665, 0.0.0.0:5665)")
    })
}

impl Dashboard {
    /// Binds `address` now (a port in use is found before the run starts) and starts serving
    /// what `watch` announces.
    pub fn start(args: &crate::args::DashboardArgs, watch: ResultsWatch) -> Result<Dashboard, crate::Failure> {
        let address =
            parse_address(args.dashboard.as_deref().unwrap_or("127.0.0.1:0")).map_err(crate::Failure::Invalid)?;
        let listener = std::net::TcpListener::bind(address)
            .with_context(|| format!("--dashboard: cannot listen on {address}"))
            .map_err(crate::Failure::Runtime)?;
        listener.set_nonblocking(true).map_err(|err| crate::Failure::Runtime(err.into()))?;
        let bound = listener.local_addr().map_err(|err| crate::Failure::Runtime(err.into()))?;
        let token = format!("{:032x}", rand::random::<u128>());
        let token_required = !bound.ip().is_loopback();
        let url = match token_required {
            true => format!("http://{bound}/?token={token}"),
            false => format!("http://{bound}/"),
        };
        let shared = Arc::new(Shared {
            page: LivePage { token: token.clone(), control: args.dashboard_control, version: 0 },
            access: Access { token, token_required, port: bound.port() },
            latest: watch::Sender::new(None),
            viewers: AtomicUsize::new(0),
            wanted: AtomicBool::new(false),
            closing: AtomicBool::new(false),
        });
        let server = {
            let shared = shared.clone();
            LocalServer::start(listener, "horde-dashboard", move |request: Request<Incoming>| {
                let shared = shared.clone();
                async move { answer(request, &shared).await }
            })
            .map_err(|err| crate::Failure::Runtime(err.into()))?
        };
        let renderer = {
            let (shared, watch) = (shared.clone(), watch.clone());
            std::thread::Builder::new()
                .name("horde-dashboard-render".into())
                .spawn(move || render_while_running(&watch, &shared))
                .map_err(|err| crate::Failure::Runtime(err.into()))?
        };
        status!("horde: dashboard at {url}");
        if args.open {
            open_in_browser(&url);
        }
        Ok(Dashboard { watch, shared, server: Some(server), renderer: Some(renderer) })
    }

    /// Sends the final report (the results directory as it is now, report.html written) to
    /// every open page, waits a little for them to receive it, and stops serving.
    pub fn close(mut self) {
        self.shared.closing.store(true, Ordering::SeqCst);
        let mut cache = self.renderer.take().and_then(|renderer| renderer.join().ok()).unwrap_or_default();
        let written = self.watch.current();
        let watched = self.shared.viewers.load(Ordering::SeqCst) > 0;
        if let Some(dir) = written.dir.as_ref().filter(|_| watched) {
            // Its own id: an open page that showed this state live still learns that it is final.
            match render(dir, written.generation + 1, true, &mut cache) {
                Ok(published) => {
                    self.shared.latest.send_replace(Some(Arc::new(published)));
                }
                Err(err) => status!("horde: dashboard: the final report could not be rendered: {err}"),
            }
        }
        let deadline = Instant::now() + FINAL_DELIVERY;
        while self.shared.viewers.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        self.shared.closing.store(true, Ordering::SeqCst);
        if let Some(renderer) = self.renderer.take() {
            let _ = renderer.join();
        }
        // Stops serving: open event streams end with it.
        drop(self.server.take());
    }
}

fn render(
    dir: &std::path::Path,
    version: u64,
    finished: bool,
    cache: &mut ReadCache,
) -> Result<Published, horde_report::ResultsError> {
    let report = horde_report::render_live(dir, finished, cache)?;
    let event = format!("id: {version}\nevent: report\ndata: {}\n\n", report.update);
    Ok(Published { version, document: report.page, page: OnceLock::new(), event: Bytes::from(event), finished })
}

/// The renderer thread: renders each new state of the results while somebody looks (an open
/// page, or one being opened), no sooner than its duty allows. Returns what it read.
fn render_while_running(watch: &ResultsWatch, shared: &Shared) -> ReadCache {
    let mut cache = ReadCache::default();
    let mut seen = 0;
    let mut rendered = 0;
    let mut rendered_dir: Option<PathBuf> = None;
    let mut next_allowed = Instant::now();
    while !shared.closing.load(Ordering::SeqCst) {
        let wait = next_allowed
            .saturating_duration_since(Instant::now())
            .clamp(Duration::from_millis(20), Duration::from_millis(200));
        let written = watch.wait_past(seen, wait);
        seen = written.generation;
        let Some(dir) = written.dir else { continue };
        let new_dir = rendered_dir.as_ref() != Some(&dir);
        let stale = written.generation > rendered || new_dir;
        let wanted = shared.viewers.load(Ordering::SeqCst) > 0
            || shared.wanted.load(Ordering::SeqCst)
            || shared.latest.borrow().is_none()
            || new_dir;
        if !stale || !wanted || Instant::now() < next_allowed {
            continue;
        }
        shared.wanted.store(false, Ordering::SeqCst);
        let started = Instant::now();
        // A directory being written can fail to read for a moment (a run that has not
        // written its first interval): the next announcement tries again.
        if let Ok(published) = render(&dir, written.generation, false, &mut cache) {
            shared.latest.send_replace(Some(Arc::new(published)));
            rendered = written.generation;
            rendered_dir = Some(dir);
        }
        next_allowed = Instant::now() + started.elapsed() * (RENDER_DUTY - 1);
    }
    cache
}

fn open_in_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    let opened = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if opened.is_err() {
        status!("horde: --open: no browser opener ({opener}) here; open {url} yourself");
    }
}

type Body = BoxBody<Bytes, Infallible>;

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "text/plain; charset=utf-8")
        .body(Full::new(Bytes::from_static(text.as_bytes())).boxed())
        .expect("a valid response")
}

async fn answer(request: Request<Incoming>, shared: &Arc<Shared>) -> Response<Body> {
    if let Err(refusal) = shared.access.admits(request.headers(), request.uri().query()) {
        return plain(StatusCode::FORBIDDEN, refusal);
    }
    match (request.method().as_str(), request.uri().path()) {
        ("GET" | "HEAD", "/") => page(shared).await,
        ("GET", "/events") => events(shared.clone()),
        ("POST", "/stop") => stop(&request, shared),
        ("GET" | "HEAD", _) => plain(StatusCode::NOT_FOUND, "horde's dashboard serves / and /events\n"),
        _ => plain(StatusCode::METHOD_NOT_ALLOWED, "GET / or /events, POST /stop\n"),
    }
}

/// The latest page; the first one is waited for (the run may not have written anything yet).
async fn page(shared: &Arc<Shared>) -> Response<Body> {
    shared.wanted.store(true, Ordering::SeqCst);
    let mut latest = shared.latest.subscribe();
    let published = tokio::time::timeout(FIRST_PAGE_WAIT, latest.wait_for(|p| p.is_some()))
        .await
        .ok()
        .and_then(|found| found.ok().map(|p| p.clone()))
        .flatten();
    let Some(published) = published else {
        return plain(StatusCode::SERVICE_UNAVAILABLE, "horde's run has no results yet; reload in a moment\n");
    };
    // Built once per rendering, by the first browser that asks, off the server's thread (the
    // open pages' event streams go on meanwhile).
    let live = LivePage { version: published.version, ..shared.page.clone() };
    let built = tokio::task::spawn_blocking(move || {
        published.page.get_or_init(|| Bytes::from(published.document.html(&live))).clone()
    })
    .await;
    let Ok(html) = built else {
        return plain(StatusCode::INTERNAL_SERVER_ERROR, "horde's dashboard could not build its page\n");
    };
    Response::builder()
        .header("content-type", "text/html; charset=utf-8")
        .header("cache-control", "no-store")
        .body(Full::new(html).boxed())
        .expect("a valid response")
}

/// Counts an open event stream for as long as it lives.
struct Viewer(Arc<Shared>);

impl Drop for Viewer {
    fn drop(&mut self) {
        self.0.viewers.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The page's stream of updates: the newest at once, then each new one; it ends after the
/// final report.
fn events(shared: Arc<Shared>) -> Response<Body> {
    shared.viewers.fetch_add(1, Ordering::SeqCst);
    let viewer = Viewer(shared.clone());
    let mut latest = shared.latest.subscribe();
    let (mut sender, body) = http_body_util::channel::Channel::<Bytes, Infallible>::new(1);
    tokio::spawn(async move {
        let _viewer = viewer;
        if sender.send_data(Bytes::from_static(b"retry: 2000\n\n")).await.is_err() {
            return;
        }
        let mut sent_version = None;
        loop {
            let current = latest.borrow_and_update().clone();
            if let Some(published) = current.filter(|p| sent_version != Some(p.version)) {
                if sender.send_data(published.event.clone()).await.is_err() {
                    return;
                }
                if published.finished {
                    return;
                }
                sent_version = Some(published.version);
            }
            // A comment each KEEPALIVE until something new: a closed browser fails the send.
            loop {
                tokio::select! {
                    changed = latest.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        break;
                    }
                    _ = tokio::time::sleep(KEEPALIVE) => {
                        if sender.send_data(Bytes::from_static(b":\n\n")).await.is_err() {
                            return;
                        }
                    }
                }
            }
        }
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-store")
        .body(body.boxed())
        .expect("a valid response")
}

/// The Stop button: as a first Ctrl-C, only with `--dashboard-control` and the token.
fn stop(request: &Request<Incoming>, shared: &Shared) -> Response<Body> {
    if !shared.page.control {
        return plain(
            StatusCode::FORBIDDEN,
            "this run's dashboard cannot stop it (start horde with --dashboard-control)\n",
        );
    }
    if !shared.access.may_stop(request.headers()) {
        return plain(StatusCode::FORBIDDEN, "a stop needs the dashboard's token in the X-Horde-Token header\n");
    }
    crate::signals::interrupt_from_dashboard();
    plain(StatusCode::ACCEPTED, "stopping: users finish and the results are written\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> hyper::HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| (hyper::header::HeaderName::from_static(name), value.parse().unwrap()))
            .collect()
    }

    #[test]
    fn on_loopback_only_the_dashboards_own_host_is_admitted() {
        let access = Access { token: "t0k".into(), token_required: false, port: 5665 };
        for host in ["127.0.0.1:5665", "localhost:5665", "[::1]:5665"] {
            assert!(access.admits(&headers(&[("host", host)]), None).is_ok(), "{host}");
        }
        for host in ["evil.example:5665", "127.0.0.1:80", ""] {
            assert!(access.admits(&headers(&[("host", host)]), None).is_err(), "{host}");
        }
        assert!(access.admits(&hyper::HeaderMap::new(), None).is_err(), "no Host at all");
    }

    #[test]
    fn beyond_loopback_the_token_admits_and_a_stop_needs_it_in_a_header() {
        let access = Access { token: "t0k".into(), token_required: true, port: 5665 };
        let any_host = headers(&[("host", "dashboard.example:5665")]);
        assert!(access.admits(&any_host, Some("token=t0k")).is_ok());
        assert!(access.admits(&any_host, Some("a=1&token=t0k")).is_ok());
        assert!(access.admits(&headers(&[("x-horde-token", "t0k")]), None).is_ok());
        assert!(access.admits(&any_host, Some("token=wrong")).is_err());
        assert!(access.admits(&any_host, None).is_err());
        assert!(access.may_stop(&headers(&[("x-horde-token", "t0k")])));
        assert!(!access.may_stop(&any_host), "the token in the URL does not stop a run");
    }

    #[test]
    fn an_address_is_a_port_or_an_ip_and_port() {
        assert_eq!(parse_address("5665").unwrap(), "127.0.0.1:5665".parse().unwrap());
        assert_eq!(parse_address("0.0.0.0:80").unwrap(), "0.0.0.0:80".parse().unwrap());
        let err = parse_address("localhost:5665").unwrap_err();
        assert!(err.contains("--dashboard") && err.contains("IP:PORT"), "{err}");
    }
}
