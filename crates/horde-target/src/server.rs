//! The server: hyper on its own thread and runtime, sessions in memory. HTTP/1.1 and HTTP/2
//! (h2c with prior knowledge, or h2 by ALPN over TLS) from one listener.

use crate::stats::Stats;
use crate::streams::{sse, websocket, Cadence};
use crate::{compressed, eventual, oauth, orders, pages, tls};
use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE, COOKIE, LOCATION, SET_COOKIE};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode, Version};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rand::Rng;
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio_rustls::TlsAcceptor;

const SESSION_COOKIE: &str = "JSESSIONID";

/// A client that has not finished its TLS handshake by then is dropped, so half-open
/// connections cannot pile up.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Every response body: whole (pages, JSON) or streamed (server-sent events).
pub(crate) type Body = UnsyncBoxBody<Bytes, Infallible>;

pub(crate) fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed_unsync()
}

#[derive(Default)]
struct Session {
    view_state: Option<String>,
    user: Option<String>,
}

#[derive(Default)]
struct State {
    sessions: HashMap<String, Session>,
    stats: Stats,
}

/// What every connection shares.
pub(crate) struct Server {
    state: Mutex<State>,
    /// Bounds how many `/work` requests are served at once: with a fixed service time, the
    /// capacity is known by construction (slots / service time), for testing capacity search.
    work_slots: tokio::sync::Semaphore,
    /// `/eventual/{key}`'s bodies, apart from the sessions: its requests never wait for a page's.
    pub(crate) eventual: Mutex<eventual::Store>,
    /// `/api/orders`' logins and their orders, apart from the sessions too.
    pub(crate) orders: Mutex<orders::Sessions>,
    /// `/oauth/authorize`'s codes not yet exchanged.
    pub(crate) oauth: Mutex<oauth::Codes>,
}

pub(crate) type Shared = Arc<Server>;

impl Server {
    /// Updates the counts; the lock is held for `update` alone, never across an await.
    pub(crate) fn count(&self, update: impl FnOnce(&mut Stats)) {
        update(&mut self.state.lock().expect("state lock").stats);
    }
}

/// How the target is set up.
#[derive(Debug, Clone, Copy)]
pub struct TargetOptions {
    /// `/work/{ms}` requests served at once; more wait their turn.
    pub work_slots: usize,
    /// Serve HTTPS, with a self-signed certificate made at start (see
    /// [`TargetServer::cert_pem`]), instead of cleartext HTTP.
    pub tls: bool,
    /// How long a write to `/eventual/{key}` stays unseen when it does not say
    /// (`?delay_ms=N`); at most an hour.
    pub eventual_delay: Duration,
}

impl Default for TargetOptions {
    fn default() -> Self {
        TargetOptions { work_slots: 4, tls: false, eventual_delay: Duration::from_millis(500) }
    }
}

/// A running target. Dropping it stops the server.
pub struct TargetServer {
    addr: SocketAddr,
    state: Shared,
    certificate: Option<tls::Certificate>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TargetServer {
    /// Binds `addr` (port 0 for an ephemeral port) and serves on a thread of its own.
    pub fn start(addr: SocketAddr) -> std::io::Result<TargetServer> {
        TargetServer::start_with(addr, TargetOptions::default())
    }

    pub fn start_with(addr: SocketAddr, options: TargetOptions) -> std::io::Result<TargetServer> {
        let (certificate, acceptor) = if options.tls {
            let (certificate, acceptor) = tls::self_signed()?;
            (Some(certificate), Some(acceptor))
        } else {
            (None, None)
        };
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let state: Shared = Arc::new(Server {
            state: Mutex::new(State::default()),
            work_slots: tokio::sync::Semaphore::new(options.work_slots.max(1)),
            eventual: Mutex::new(eventual::Store::new(options.eventual_delay)),
            orders: Mutex::new(orders::Sessions::default()),
            oauth: Mutex::new(oauth::Codes::default()),
        });
        let (shutdown, stopped) = oneshot::channel();
        let serving = state.clone();
        let thread = std::thread::Builder::new().name("horde-target".into()).spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a current-thread runtime can always be built");
            runtime.block_on(async move {
                let listener = TcpListener::from_std(listener).expect("a bound listener");
                tokio::select! {
                    _ = serve(listener, serving, acceptor) => {}
                    _ = stopped => {}
                }
            });
        })?;
        Ok(TargetServer { addr, state, certificate, shutdown: Some(shutdown), thread: Some(thread) })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://` or, with TLS, `https://` and the address.
    pub fn base_url(&self) -> String {
        let scheme = if self.certificate.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// With TLS, the server's certificate in PEM, for a client to trust (horde's `--cacert`).
    pub fn cert_pem(&self) -> Option<&str> {
        self.certificate.as_ref().map(|c| c.pem.as_str())
    }

    /// With TLS, the server's certificate in DER.
    pub fn cert_der(&self) -> Option<&[u8]> {
        self.certificate.as_ref().map(|c| c.der.as_slice())
    }

    /// With TLS, the SHA-256 fingerprint of the certificate as openssl prints it
    /// (`AB:CD:...`, upper-case hex).
    pub fn fingerprint(&self) -> Option<&str> {
        self.certificate.as_ref().map(|c| c.fingerprint.as_str())
    }

    pub fn stats(&self) -> Stats {
        self.state.state.lock().expect("state lock").stats.clone()
    }
}

impl Drop for TargetServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(listener: TcpListener, state: Shared, tls: Option<TlsAcceptor>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let state = state.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let Some(acceptor) = tls else {
                return serve_connection(stream, state).await;
            };
            let Ok(Ok(stream)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await else {
                return;
            };
            state.count(|stats| stats.tls_connections += 1);
            serve_connection(stream, state).await;
        });
    }
}

/// Serves one connection, over TCP or TLS, in the protocol its first bytes show: the HTTP/2
/// preface (sent after ALPN chose h2, or at once by an h2c client with prior knowledge) makes
/// it HTTP/2, anything else HTTP/1.1. Upgrades are kept for WebSockets.
async fn serve_connection<I>(io: I, state: Shared)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    // Connections are counted by their first request, which is where hyper says the version.
    let first_request = AtomicBool::new(true);
    let service = service_fn(move |request: Request<Incoming>| {
        if first_request.swap(false, Ordering::Relaxed) && request.version() == Version::HTTP_2 {
            state.count(|stats| stats.http2_connections += 1);
        }
        let state = state.clone();
        async move { Ok::<_, Infallible>(handle(request, &state).await) }
    });
    let _ = auto::Builder::new(TokioExecutor::new()).serve_connection_with_upgrades(TokioIo::new(io), service).await;
}

fn html(status: StatusCode, body: String) -> Response<Body> {
    let mut response = Response::new(full(body));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    response
}

pub(crate) fn json(status: StatusCode, value: serde_json::Value) -> Response<Body> {
    let mut response = Response::new(full(value.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn redirect(to: &'static str) -> Response<Body> {
    let mut response = Response::new(full(Bytes::new()));
    *response.status_mut() = StatusCode::FOUND;
    response.headers_mut().insert(LOCATION, HeaderValue::from_static(to));
    response
}

fn session_id(request: &Request<Incoming>) -> Option<String> {
    request.headers().get_all(COOKIE).iter().filter_map(|v| v.to_str().ok()).find_map(|header| {
        header.split(';').find_map(|pair| {
            let (name, value) = pair.trim().split_once('=')?;
            (name == SESSION_COOKIE).then(|| value.to_string())
        })
    })
}

/// The cookies the request carried, as `{"cookies": {name: value}, "header": "..."}` (the
/// Cookie header as sent, null when there was none; HTTP/2's several joined with "; ").
fn cookies_echo(request: &Request<Incoming>) -> Response<Body> {
    let lines: Vec<&str> = request.headers().get_all(COOKIE).iter().filter_map(|v| v.to_str().ok()).collect();
    let header = lines.join("; ");
    let cookies: serde_json::Map<String, serde_json::Value> = header
        .split(';')
        .filter_map(|pair| pair.trim().split_once('='))
        .map(|(name, value)| (name.to_string(), serde_json::Value::from(value)))
        .collect();
    let header = if lines.is_empty() { serde_json::Value::Null } else { serde_json::Value::from(header) };
    json(StatusCode::OK, serde_json::json!({"cookies": cookies, "header": header}))
}

/// Sets a cookie (Path=/) for each query parameter, `name=value`; with `max_age` (seconds)
/// they are persistent, else session cookies. Answers with the Set-Cookie lines as JSON.
fn cookies_set(request: &Request<Incoming>) -> Response<Body> {
    let query = request.uri().query().unwrap_or_default();
    let pairs: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes()).into_owned().collect();
    let max_age = pairs.iter().find(|(name, _)| name == "max_age").and_then(|(_, v)| v.parse::<u64>().ok());
    let lines: Vec<String> = pairs
        .iter()
        .filter(|(name, _)| name != "max_age")
        .map(|(name, value)| match max_age {
            Some(seconds) => format!("{name}={value}; Path=/; Max-Age={seconds}"),
            None => format!("{name}={value}; Path=/"),
        })
        .collect();
    let mut response = json(StatusCode::OK, serde_json::json!({"set": lines}));
    for line in &lines {
        match HeaderValue::from_str(line) {
            Ok(value) => {
                response.headers_mut().append(SET_COOKIE, value);
            }
            Err(_) => {
                return json(
                    StatusCode::BAD_REQUEST,
                    serde_json::json!({"error": format!("{line:?} is no header value")}),
                )
            }
        }
    }
    response
}

fn new_token(rng: &mut impl Rng) -> String {
    format!("{}:{}", rng.random::<i64>(), rng.random::<u32>())
}

fn route_key(method: &Method, path: &str) -> String {
    let route = if path.starts_with("/api/items/") {
        "/api/items/{id}"
    } else if path.starts_with("/status/") {
        "/status/{code}"
    } else if path.starts_with("/delay/") {
        "/delay/{ms}"
    } else if path.starts_with("/work/") {
        "/work/{ms}"
    } else {
        path
    };
    format!("{method} {route}")
}

/// The routes beside the site, which need no session and no request body: the compressed
/// page, WebSockets and server-sent events. `None` for any other path.
fn serve_protocol_route(
    request: &mut Request<Incoming>,
    method: &Method,
    path: &str,
    state: &Shared,
) -> Option<Response<Body>> {
    if !matches!(path, "/compressed" | "/ws/echo" | "/ws/ticker" | "/sse/events" | "/cookies/echo" | "/cookies/set") {
        return None;
    }
    state.count(|stats| {
        stats.total += 1;
        *stats.by_route.entry(route_key(method, path)).or_default() += 1;
    });
    if *method != Method::GET && *method != Method::HEAD {
        let mut response = html(StatusCode::METHOD_NOT_ALLOWED, "<p>GET only</p>".into());
        response.headers_mut().insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return Some(response);
    }
    let cadence = || Cadence::from_query(request.uri().query());
    Some(match path {
        "/compressed" => compressed::response(request.headers()),
        "/cookies/echo" => cookies_echo(request),
        "/cookies/set" => cookies_set(request),
        "/ws/echo" => websocket::upgrade(request, websocket::Behaviour::Echo, state.clone()),
        "/ws/ticker" => match cadence() {
            Ok(cadence) => websocket::upgrade(request, websocket::Behaviour::Ticker(cadence), state.clone()),
            Err(message) => html(StatusCode::BAD_REQUEST, format!("<p>{}</p>", pages::escape(&message))),
        },
        _ => match cadence() {
            Ok(cadence) => sse::events(cadence, state.clone()),
            Err(message) => html(StatusCode::BAD_REQUEST, format!("<p>{}</p>", pages::escape(&message))),
        },
    })
}

async fn handle(mut request: Request<Incoming>, state: &Shared) -> Response<Body> {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    if path == "/stats" {
        return json(StatusCode::OK, state.state.lock().expect("state lock").stats.to_json());
    }
    if let Some(response) = serve_protocol_route(&mut request, &method, &path, state) {
        return response;
    }
    if let Some(key) = path.strip_prefix("/eventual/") {
        return eventual::respond(request, key, state).await;
    }
    if orders::serves(&path) {
        return orders::respond(request, &path, state).await;
    }
    if oauth::serves(&path) {
        return oauth::respond(request, &path, state).await;
    }
    if let Some(ms) = path.strip_prefix("/delay/") {
        // A slow endpoint, for timeouts: answers after the given milliseconds (at most 60 s).
        let ms = ms.parse::<u64>().unwrap_or(0).min(60_000);
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    if let Some(ms) = path.strip_prefix("/work/") {
        // Fixed service time in one of a bounded number of slots: a queue forms beyond them.
        let ms = ms.parse::<u64>().unwrap_or(0).min(60_000);
        let _slot = state.work_slots.acquire().await.expect("the semaphore is never closed");
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    let cookie_session = session_id(&request);
    let content_type = request.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_string);
    let body = request.into_body().collect().await.map(|c| c.to_bytes()).unwrap_or_default();
    // Parsed before the state is locked: the lock is never held across an await.
    let echo_body = if path == "/api/echo" { body.clone() } else { Bytes::new() };
    let form = if method == Method::POST && path != "/api/echo" {
        Some(parse_form(content_type.as_deref(), body).await)
    } else {
        None
    };

    let mut state = state.state.lock().expect("state lock");
    state.stats.total += 1;
    *state.stats.by_route.entry(route_key(&method, &path)).or_default() += 1;

    // API routes need no session.
    if path == "/api/echo" {
        // Answers with the JSON it was sent, or 400 when that is not JSON.
        return match serde_json::from_slice::<serde_json::Value>(&echo_body) {
            Ok(value) => {
                state.stats.json_documents += 1;
                json(StatusCode::OK, value)
            }
            Err(err) => json(StatusCode::BAD_REQUEST, serde_json::json!({"error": err.to_string()})),
        };
    }
    if let Some(rest) = path.strip_prefix("/api/items") {
        return api_items(rest);
    }
    if path.starts_with("/delay/") || path.starts_with("/work/") {
        return html(StatusCode::OK, "<p>done</p>".into());
    }
    if let Some(rest) = path.strip_prefix("/status/") {
        // Anything after the code is ignored, so a whole API can be pointed at /status/500.
        let code = rest.split('/').next().unwrap_or_default();
        let status =
            code.parse::<u16>().ok().and_then(|c| StatusCode::from_u16(c).ok()).unwrap_or(StatusCode::BAD_REQUEST);
        return html(status, format!("<p>status {}</p>", status.as_u16()));
    }

    // Anything else a browser asks for (its /favicon.ico) neither makes a session nor renews
    // the view: a request beside the page would make the page's ViewState stale.
    if !PAGES.contains(&(method.as_str(), path.as_str())) {
        return html(StatusCode::NOT_FOUND, "<p>not found</p>".into());
    }
    // Pages live in a session, created on first sight as JSF does.
    let mut rng = rand::rng();
    let (sid, new_session) = match cookie_session.filter(|s| state.sessions.contains_key(s)) {
        Some(sid) => (sid, false),
        None => {
            let sid = format!("{:032x}", rng.random::<u128>());
            state.sessions.insert(sid.clone(), Session::default());
            state.stats.sessions += 1;
            (sid, true)
        }
    };
    let mut response = page(&method, &path, form, &sid, &mut state, &mut rng);
    if new_session {
        let cookie = format!("{SESSION_COOKIE}={sid}; Path=/; HttpOnly");
        response.headers_mut().append(SET_COOKIE, HeaderValue::from_str(&cookie).expect("hex cookie"));
    }
    response
}

/// The site's pages, which live in a session and render a new view (a new ViewState) each.
const PAGES: [(&str, &str); 9] = [
    ("GET", "/"),
    ("POST", "/newsletter"),
    ("POST", "/search"),
    ("GET", "/login"),
    ("POST", "/login"),
    ("GET", "/account"),
    ("POST", "/account"),
    ("POST", "/upload"),
    ("GET", "/logout"),
];

/// A POSTed form: its fields, and the first file's name and size.
type Form = (HashMap<String, String>, Option<(String, usize)>);

async fn parse_form(content_type: Option<&str>, body: Bytes) -> Result<Form, String> {
    match content_type {
        Some(ct) if ct.starts_with("multipart/form-data") => parse_multipart(ct, body).await,
        _ => Ok((form_urlencoded::parse(&body).into_owned().collect(), None)),
    }
}

fn page(
    method: &Method,
    path: &str,
    form: Option<Result<Form, String>>,
    sid: &str,
    state: &mut State,
    rng: &mut impl Rng,
) -> Response<Body> {
    let (fields, upload) = match form {
        None => (HashMap::new(), None),
        Some(Ok(form)) => form,
        Some(Err(message)) => {
            return html(StatusCode::BAD_REQUEST, format!("<p>bad multipart body: {}</p>", pages::escape(&message)))
        }
    };
    if *method == Method::POST {
        // Every POST must carry the latest ViewState of its session.
        let expected = state.sessions.get(sid).and_then(|s| s.view_state.clone());
        let posted = fields.get("javax.faces.ViewState");
        if expected.is_none() || posted != expected.as_ref() {
            state.stats.view_state_rejections += 1;
            return html(StatusCode::INTERNAL_SERVER_ERROR, pages::view_expired());
        }
    }
    let view_state = new_token(rng);
    let session = state.sessions.get_mut(sid).expect("session exists");
    session.view_state = Some(view_state.clone());
    let user = session.user.clone();
    match (method.as_str(), path) {
        ("GET", "/") => html(StatusCode::OK, pages::home(&view_state, "")),
        ("POST", "/newsletter") => {
            let email = fields.get("email").cloned().unwrap_or_default();
            let message =
                if email.contains('@') { format!("Subscribed {email}") } else { "No email given".to_string() };
            html(StatusCode::OK, pages::home(&view_state, &message))
        }
        ("POST", "/search") => {
            let query = fields.get("q").cloned().unwrap_or_default();
            let needle = query.trim().to_lowercase();
            let found: Vec<&str> =
                ITEMS.iter().map(|(_, name, _)| *name).filter(|name| name.contains(needle.as_str())).collect();
            html(StatusCode::OK, pages::search(&view_state, &query, &found))
        }
        ("GET", "/login") => html(StatusCode::OK, pages::login(&view_state)),
        ("POST", "/login") => {
            let username = fields.get("username").cloned().unwrap_or_default();
            let password = fields.get("password").cloned().unwrap_or_default();
            if username.is_empty() || password.is_empty() {
                return html(
                    StatusCode::OK,
                    pages::login(&view_state)
                        .replace("<form id=\"loginForm\"", "<p class=\"error\">Wrong login</p><form id=\"loginForm\""),
                );
            }
            session.user = Some(username);
            state.stats.logins += 1;
            redirect("/account")
        }
        ("GET", "/account") | ("POST", "/account") | ("POST", "/upload") => {
            let Some(user) = user else {
                return redirect("/login");
            };
            let message = match (path, upload) {
                ("/upload", Some((name, size))) => {
                    state.stats.uploads += 1;
                    state.stats.upload_bytes += size as u64;
                    format!("Received {name} ({size} bytes)")
                }
                ("/upload", None) => return html(StatusCode::BAD_REQUEST, "<p>no file in the upload</p>".into()),
                (_, _) => match fields.get("comment") {
                    Some(comment) => format!("Saved: {comment}"),
                    None => String::new(),
                },
            };
            html(StatusCode::OK, pages::account(&view_state, &user, &message))
        }
        ("GET", "/logout") => {
            state.sessions.remove(sid);
            redirect("/")
        }
        _ => html(StatusCode::NOT_FOUND, "<p>not found</p>".into()),
    }
}

async fn parse_multipart(content_type: &str, body: Bytes) -> Result<Form, String> {
    let boundary = multer::parse_boundary(content_type).map_err(|e| e.to_string())?;
    let stream = futures_util::stream::once(async move { Ok::<_, Infallible>(body) });
    let mut multipart = multer::Multipart::new(stream, boundary);
    let mut fields = HashMap::new();
    let mut file = None;
    while let Some(field) = multipart.next_field().await.map_err(|e| e.to_string())? {
        let name = field.name().unwrap_or_default().to_string();
        match field.file_name().map(str::to_string) {
            Some(file_name) => {
                let data = field.bytes().await.map_err(|e| e.to_string())?;
                file.get_or_insert((file_name, data.len()));
            }
            None => {
                fields.insert(name, field.text().await.map_err(|e| e.to_string())?);
            }
        }
    }
    Ok((fields, file))
}

const ITEMS: [(u32, &str, f64); 3] = [(1, "oak plank", 12.5), (2, "ash frame", 40.0), (3, "planer stand", 85.25)];

fn api_items(rest: &str) -> Response<Body> {
    let item = |(id, name, price): (u32, &str, f64)| serde_json::json!({"id": id, "name": name, "price": price});
    match rest.trim_start_matches('/') {
        "" => json(StatusCode::OK, serde_json::json!({"items": ITEMS.map(item), "count": ITEMS.len()})),
        id => match ITEMS.iter().find(|(i, _, _)| id.parse() == Ok(*i)) {
            Some(found) => json(StatusCode::OK, item(*found)),
            None => json(StatusCode::NOT_FOUND, serde_json::json!({"error": "not_found", "id": id})),
        },
    }
}
