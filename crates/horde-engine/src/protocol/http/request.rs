//! HTTP requests of a virtual user: rendering a request from its session, sending it on the
//! user's connection, following redirects, running the checks, and recording the outcome.

use super::check::{run_checks, ResponseView};
use super::client::{
    closed_before_response, never_processed, Destination, KeepHeaders, OpenTimeouts, OpenTiming, RequestHead, Response,
    WireTiming,
};
use super::connection::UserConnection;
use super::program::{BodyProgram, HeaderProgram, PartProgram, RequestProgram, Target, UrlProgram};
use super::{ConnectionSlot, HttpSession};
use crate::failure::Failure;
use crate::user::{Flow, VirtualUser};
use crate::worker::WorkerContext;
use bytes::Bytes;
use horde_metrics::RequestTiming;
use http::header::{HeaderMap, HeaderValue, CONTENT_ENCODING, CONTENT_TYPE, COOKIE, HOST, LOCATION, SET_COOKIE};
use http::{Method, StatusCode};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_rustls::TlsConnector;
use url::Url;

/// A keep-alive connection idle this long is checked for a close by the server before it is
/// written on. The check usually costs a read syscall (the socket still reads as ready from
/// the last response), which back-to-back requests should not pay: servers close idle
/// connections after seconds, and the rare close that races a request is retried.
const IDLE_CHECK_AFTER: Duration = Duration::from_millis(1);

/// What a response led to.
pub(crate) enum Answer {
    /// A redirect, recorded; the request now goes to its location.
    Redirect,
    /// A KO, recorded.
    Failed,
    /// Recorded OK; with the HTML of a page whose resources are to be inferred.
    Done(Option<scraper::Html>),
}

/// A request ready to go on the wire.
pub(crate) struct Prepared {
    pub method: Method,
    pub target: Arc<Target>,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// The headers hold a Host of their own, which replaces the URL's.
    pub sets_host: bool,
    /// Redirects this request follows in a row; 0: a redirect is its response.
    pub max_redirects: u32,
}

/// Whether a request that failed on a reused connection before any byte of a response may go
/// once more on a fresh one: when the server cannot have acted on it (writing it failed), or
/// when acting on it twice is harmless (an idempotent method, RFC 9110 9.2.2), as browsers do.
/// A POST that was written whole is a KO instead: the server may have done it.
pub(crate) fn may_resend(method: &Method, wire: &WireTiming) -> bool {
    wire.bytes_sent == 0
        || matches!(
            *method,
            Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE | Method::PUT | Method::DELETE
        )
}

/// The next hop of a redirect, as browsers make it: 303, and 301/302 after a POST, become a
/// GET without a body; otherwise the same request (and the same body) goes to the new
/// location. Applied once the hop that led to it is recorded, with its own URL.
pub(crate) struct Redirect {
    target: Arc<Target>,
    becomes_get: bool,
}

pub(crate) fn redirect(prepared: &Prepared, status: StatusCode, location: &HeaderValue) -> Result<Redirect, Failure> {
    let location = location.to_str().map_err(|_| Failure::new("invalid_redirect", "Location is not text"))?;
    let url = prepared
        .target
        .url
        .join(location)
        .map_err(|err| Failure::new("invalid_redirect", format!("Location {location:?}: {err}")))?;
    let target = Target::from_url(url).map_err(|m| Failure::new("invalid_redirect", m))?;
    let becomes_get = status == StatusCode::SEE_OTHER
        || (matches!(status, StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND) && prepared.method == Method::POST);
    Ok(Redirect { target: Arc::new(target), becomes_get })
}

impl Redirect {
    pub(crate) fn apply(self, prepared: &mut Prepared) {
        if self.becomes_get {
            prepared.method = Method::GET;
            prepared.body = Bytes::new();
            prepared.headers.remove(CONTENT_TYPE);
        }
        prepared.target = self.target;
    }
}

/// A response to answer, and what it answers: the request's checks and needs, and the
/// exchange it came from (its row, start, redirect hop, the request as sent, its timing).
pub(crate) struct Exchange<'a> {
    pub(crate) checks: &'a [super::check::HttpCheck],
    /// A check reads the body: it is kept, and decoded when encoded.
    pub(crate) needs_body: bool,
    /// The resources of an HTML page are fetched after it (`infer_resources`).
    pub(crate) infers_resources: bool,
    pub(crate) row_id: usize,
    pub(crate) started: Instant,
    /// The redirect this response answers: 0 for the request itself.
    pub(crate) hop: u32,
    /// The request as sent; a redirect makes it the next hop's.
    pub(crate) prepared: &'a mut Prepared,
    pub(crate) timing: &'a mut RequestTiming,
}

impl VirtualUser {
    /// One request step: its share of the run's budget and throttle, the request rendered
    /// from the session, sent, its redirects followed, checked and recorded.
    pub(super) async fn request(&mut self, request: &RequestProgram) -> Flow {
        if !self.ctx.limits.take_request() {
            return Flow::Exhausted;
        }
        let held_since = self.throttle_slot().await;
        let mut prepared = match self.prepare(request) {
            Ok(prepared) => prepared,
            Err((failure, detail)) => {
                self.record_unsent(request.row_id, &failure, detail, None);
                return self.after_failure();
            }
        };
        let mut hop = 0u32;
        let mut row_id = request.row_id;
        loop {
            let started = Instant::now();
            let from = if hop == 0 { self.latency_origin(held_since, started) } else { started };
            let (result, mut timing) = self.exchange(row_id, &mut prepared, from, started, request.needs_body).await;
            let response = match result {
                Ok(response) => response,
                Err(failure) => {
                    self.record_failure(row_id, started, &timing, &failure, 0, Some(prepared.target.url.as_str()));
                    return self.after_failure();
                }
            };
            let exchange = Exchange {
                checks: &request.checks,
                needs_body: request.needs_body,
                infers_resources: request.infers_resources,
                row_id,
                started,
                hop,
                prepared: &mut prepared,
                timing: &mut timing,
            };
            let answer = self.answer(exchange, response);
            match answer {
                Answer::Redirect => {
                    hop += 1;
                    row_id = self.ctx.metrics.borrow_mut().redirect_row(request.row_id, hop);
                }
                Answer::Failed => return self.after_failure(),
                Answer::Done(_) if request.resources.is_empty() && !request.infers_resources => return Flow::Next,
                Answer::Done(html) => {
                    // Boxed: a page with resources is rare next to plain requests, and every
                    // user's task would otherwise carry the size of a concurrent fetch.
                    return Box::pin(self.fetch_page_resources(request, &prepared.target.url, html.as_ref())).await;
                }
            }
        }
    }

    /// What a response leads to: its cookies stored, then a redirect to follow (`prepared`
    /// now goes there; the hop is recorded), or its body decoded when it is read, its checks
    /// run and its outcome recorded. `Done` holds the body of an HTML page whose resources are
    /// inferred.
    pub(super) fn answer(&mut self, exchange: Exchange<'_>, response: Response) -> Answer {
        let Exchange { checks, needs_body, infers_resources, row_id, started, hop, prepared, timing } = exchange;
        let max_redirects = prepared.max_redirects;
        timing.status = Some(response.status.as_u16());
        self.store_cookies(&response.headers, &prepared.target.url);
        let location = response.headers.get(LOCATION).filter(|_| response.status.is_redirection());
        if let (Some(location), true) = (location, max_redirects > 0) {
            // The hop is one exchange with one outcome: OK when it can be followed.
            let followed = if hop < max_redirects {
                redirect(prepared, response.status, location)
            } else {
                Err(Failure::new("too_many_redirects", format!("more than {max_redirects} redirects in a row")))
            };
            let url = Some(prepared.target.url.as_str());
            return match followed {
                Err(failure) => {
                    self.record_failure(row_id, started, timing, &failure, 0, url);
                    Answer::Failed
                }
                Ok(next) => {
                    self.record_ok(row_id, started, timing, url);
                    next.apply(prepared);
                    Answer::Redirect
                }
            };
        }
        // A body is kept only when a check reads it; only then is it decoded.
        let body = match response.headers.get(CONTENT_ENCODING).filter(|_| needs_body) {
            None => response.body,
            Some(coding) => {
                let limit = self.ctx.program.protocols.http.max_body_bytes;
                match super::encoding::decode(response.body, coding, limit) {
                    Ok(decoded) => {
                        timing.bytes_decoded = Some(decoded.len() as u64);
                        decoded
                    }
                    Err(failure) => {
                        self.record_failure(row_id, started, timing, &failure, 0, Some(prepared.target.url.as_str()));
                        return Answer::Failed;
                    }
                }
            }
        };
        let response_time_ms = timing.latency_us / 1000;
        let mut view = ResponseView::new(response.status, &response.headers, &body)
            .with_exchange(&prepared.target.url, response_time_ms);
        match run_checks(checks, &mut view, &mut self.session) {
            Ok(()) => {
                self.record_ok(row_id, started, timing, Some(prepared.target.url.as_str()));
                // Looked at only for pages whose resources are inferred: not on every request.
                let is_html = || {
                    response
                        .headers
                        .get(CONTENT_TYPE)
                        .and_then(|t| t.to_str().ok())
                        .is_some_and(|t| t.trim_start().to_ascii_lowercase().starts_with("text/html"))
                };
                let html = (infers_resources && response.status.is_success() && is_html()).then(|| view.into_html());
                Answer::Done(html)
            }
            Err(failure) => {
                let failure_detail = failure.detail;
                let failure = Failure::new("check_failed", failure.message);
                self.record_failure(
                    row_id,
                    started,
                    timing,
                    &failure,
                    failure_detail,
                    Some(prepared.target.url.as_str()),
                );
                Answer::Failed
            }
        }
    }

    /// Renders everything the request needs; an unset variable fails it before it is sent.
    pub(in crate::protocol) fn prepare(&mut self, request: &RequestProgram) -> Result<Prepared, (Failure, u32)> {
        let target = self.target(request)?;
        let mut headers = self.render_headers(&request.headers)?;
        let (body, content_type) = self.body(&request.body)?;
        if let Some(content_type) = content_type {
            if !headers.contains_key(CONTENT_TYPE) {
                headers.insert(CONTENT_TYPE, content_type);
            }
        }
        Ok(Prepared {
            method: request.method.clone(),
            target,
            headers,
            body,
            sets_host: request.sets_host,
            max_redirects: request.max_redirects,
        })
    }

    /// The request's headers, their variables filled in.
    pub(in crate::protocol) fn render_headers(
        &mut self,
        programs: &[HeaderProgram],
    ) -> Result<HeaderMap, (Failure, u32)> {
        // Sized for what it holds (plus Content-Type and Cookie): a map that grows on its first
        // insert reserves room for 6 headers, about 650 bytes per request in flight.
        let mut headers = HeaderMap::with_capacity(programs.len() + 2);
        for header in programs {
            let value = match &header.fixed {
                Some(value) => value.clone(),
                None => {
                    let text = header.value.render(&mut self.session).map_err(|e| self.expression_failure(e))?;
                    HeaderValue::from_str(&text).map_err(|_| {
                        (
                            Failure::new(
                                "invalid_header",
                                format!("header {} has an invalid value {text:?}", header.name),
                            ),
                            0,
                        )
                    })?
                }
            };
            // Host is one value (RFC 9110 7.2): set twice (in two cases, say), the later one
            // goes, which is the request's own over the protocol's. Others may repeat.
            if header.name == HOST {
                headers.insert(HOST, value);
            } else {
                headers.append(header.name.clone(), value);
            }
        }
        Ok(headers)
    }

    fn target(&mut self, request: &RequestProgram) -> Result<Arc<Target>, (Failure, u32)> {
        let invalid = |message: String| (Failure::new("invalid_url", message), 0);
        let mut url = match &request.url {
            UrlProgram::Static(target) if request.query.is_empty() => return Ok(target.clone()),
            UrlProgram::Static(target) => target.url.clone(),
            UrlProgram::Dynamic { template, base } => {
                let text = template.render(&mut self.session).map_err(|e| self.expression_failure(e))?;
                let parsed = match base {
                    Some(base) => base.join(&text),
                    None => Url::parse(&text),
                };
                parsed.map_err(|err| invalid(format!("{text:?}: {err}")))?
            }
        };
        if !request.query.is_empty() {
            let mut pairs = url.query_pairs_mut();
            for (name, value) in &request.query {
                let name = name.render(&mut self.session).map_err(|e| self.expression_failure(e))?;
                let value = value.render(&mut self.session).map_err(|e| self.expression_failure(e))?;
                pairs.append_pair(&name, &value);
            }
        }
        Target::from_url(url).map(Arc::new).map_err(invalid)
    }

    fn body(&mut self, body: &BodyProgram) -> Result<(Bytes, Option<HeaderValue>), (Failure, u32)> {
        if let BodyProgram::Generated { id, schema, bulk } = body {
            let generator = self.generator(*id, schema);
            let document = match bulk {
                None => generator.document(),
                Some(count) => {
                    let docs: Vec<serde_json::Value> = (0..*count).map(|_| generator.document()).collect();
                    serde_json::json!({ "docs": docs })
                }
            };
            let bytes = serde_json::to_vec(&document).expect("generated documents serialize");
            return Ok((Bytes::from(bytes), Some(HeaderValue::from_static("application/json"))));
        }
        self.render_body(body)
    }

    fn render_body(&mut self, body: &BodyProgram) -> Result<(Bytes, Option<HeaderValue>), (Failure, u32)> {
        let mut render =
            |t: &crate::lower::Template| t.render(&mut self.session).map_err(|e| self.expression_failure(e));
        Ok(match body {
            BodyProgram::None => (Bytes::new(), None),
            BodyProgram::Static { bytes, content_type } => (bytes.clone(), content_type.clone()),
            BodyProgram::Raw { text, content_type } => (Bytes::from(render(text)?), content_type.clone()),
            BodyProgram::Form(params) => {
                let mut form = form_urlencoded::Serializer::new(String::new());
                for (name, value) in params {
                    form.append_pair(&render(name)?, &render(value)?);
                }
                let content_type = HeaderValue::from_static("application/x-www-form-urlencoded");
                (Bytes::from(form.finish()), Some(content_type))
            }
            BodyProgram::Multipart { boundary, parts } => self.multipart_body(boundary, parts)?,
            BodyProgram::Generated { .. } => unreachable!("generated by body()"),
        })
    }

    fn multipart_body(
        &mut self,
        boundary: &str,
        parts: &[PartProgram],
    ) -> Result<(Bytes, Option<HeaderValue>), (Failure, u32)> {
        // A file named by the session is read through the worker, beside the session that
        // rendering borrows.
        let worker = self.ctx.clone();
        let mut render =
            |t: &crate::lower::Template| t.render(&mut self.session).map_err(|e| self.expression_failure(e));
        let mut out = Vec::new();
        for part in parts {
            out.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
            match part {
                PartProgram::Text { name, value } => {
                    let value = render(value)?;
                    out.extend_from_slice(
                        format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n").as_bytes(),
                    );
                }
                PartProgram::File { name, file_name, content_type, data } => {
                    let file_name = part_file_name(name, render(file_name)?)?;
                    file_part(&mut out, name, &file_name, content_type, data);
                }
                PartProgram::FileNamedBySession { name, path, base_dir, file_name, content_type } => {
                    let resolved =
                        crate::lower::resolve_against(base_dir.as_deref(), std::path::Path::new(&render(path)?));
                    let data = worker.protocols.http_part_files.read(&resolved).map_err(|err| {
                        let message = format!("multipart part {name:?}: cannot read {}: {err}", resolved.display());
                        (Failure::unsent("unreadable_file", message), 0)
                    })?;
                    let file_name = match file_name {
                        Some(template) => render(template)?,
                        None => resolved.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
                    };
                    let file_name = part_file_name(name, file_name)?;
                    file_part(&mut out, name, &file_name, content_type, &data);
                }
            }
        }
        out.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
        let content_type = HeaderValue::from_str(&format!("multipart/form-data; boundary={boundary}"))
            .expect("the boundary is a valid header value");
        Ok((Bytes::from(out), Some(content_type)))
    }

    fn store_cookies(&mut self, headers: &HeaderMap, url: &Url) {
        for value in headers.get_all(SET_COOKIE) {
            if let Ok(text) = value.to_str() {
                if self.protocols.http.jar_mut().parse(text, url).is_ok() {
                    self.protocols.http.has_cookies = true;
                }
            }
        }
    }

    /// Sends one request on the user's connection (opening it if needed) and reads the whole
    /// response: [`exchange_on`] the user's main connection, with the user's cookies.
    pub(in crate::protocol) async fn exchange(
        &mut self,
        row_id: usize,
        prepared: &mut Prepared,
        intended: Instant,
        started: Instant,
        keep_body: bool,
    ) -> (Result<Response, Failure>, RequestTiming) {
        if self.protocols.http.has_cookies {
            self.set_cookie_header(prepared);
        }
        let keep_headers = self.protocols.http.keep_headers();
        let HttpSession { tls, main, .. } = &mut self.protocols.http;
        let tls = tls_connector(tls, &self.ctx, prepared.target.tls);
        let outgoing = Outgoing { row_id, prepared, intended, started, keep_body, keep_headers };
        exchange_on(&self.ctx, tls, main, outgoing).await
    }

    /// The Cookie header for the request's URL from the user's jar.
    pub(in crate::protocol) fn set_cookie_header(&self, prepared: &mut Prepared) {
        let Some(jar) = self.protocols.http.jar() else { return };
        let mut cookie = String::new();
        for (name, value) in jar.get_request_values(&prepared.target.url) {
            if !cookie.is_empty() {
                cookie.push_str("; ");
            }
            cookie.push_str(name);
            cookie.push('=');
            cookie.push_str(value);
        }
        match (cookie.is_empty(), HeaderValue::from_str(&cookie)) {
            (false, Ok(value)) => {
                prepared.headers.insert(COOKIE, value);
            }
            _ => {
                prepared.headers.remove(COOKIE);
            }
        }
    }
}

/// The user's TLS connector (with its own session store), made at its first https request.
pub(crate) fn tls_connector<'a>(
    connector: &'a mut Option<TlsConnector>,
    ctx: &WorkerContext,
    tls: bool,
) -> Option<&'a TlsConnector> {
    tls.then(|| &*connector.get_or_insert_with(|| ctx.program.protocols.http.tls.connector_for_user()))
}

/// One request to send on a connection: its row, the request, when it was due and when it
/// went, and what of the response to keep.
pub(crate) struct Outgoing<'a> {
    pub(crate) row_id: usize,
    pub(crate) prepared: &'a Prepared,
    /// Where its latency is measured from (its throttle slot, or `started`).
    pub(crate) intended: Instant,
    pub(crate) started: Instant,
    pub(crate) keep_body: bool,
    pub(crate) keep_headers: KeepHeaders,
}

/// Sends one request on a connection of the user (opening it if needed) and reads the whole
/// response. The timing is filled in whatever happens.
///
/// A keep-alive connection the server closed while it sat idle is not written on (its
/// idle timeout would otherwise fail a request the server never saw), and a request that
/// fails on a reused connection before any byte of a response arrived is sent once more
/// on a fresh connection, as browsers and hyper do; so is one the server said it did not
/// process (HTTP/2's GOAWAY and REFUSED_STREAM), on whatever connection. Both are counted.
pub(crate) async fn exchange_on(
    ctx: &WorkerContext,
    tls: Option<&TlsConnector>,
    slot: &mut ConnectionSlot,
    outgoing: Outgoing<'_>,
) -> (Result<Response, Failure>, RequestTiming) {
    let Outgoing { row_id, prepared, intended, started, keep_body, keep_headers } = outgoing;
    let protocol = &ctx.program.protocols.http;
    let (request_timeout, max_body_bytes) = (protocol.request_timeout, protocol.max_body_bytes);
    let measured = ctx.measures(started);
    let Prepared { method, target, headers, body, sets_host, .. } = prepared;
    let mut timing = RequestTiming::default();
    let mut retried = false;
    let result = loop {
        let mut reused = slot.connection.as_ref().is_some_and(|c| c.is_usable_for(&target.authority, target.tls));
        if reused && started.saturating_duration_since(slot.idle_since) >= IDLE_CHECK_AFTER {
            let connection = slot.connection.as_mut().expect("checked above");
            if connection.closed_while_idle() {
                reused = false;
                if measured {
                    ctx.metrics.borrow_mut().connections.closed_while_idle += 1;
                }
            }
        }
        let send_started = if reused {
            // A reused connection sends at once: the start of the request is the start
            // of sending.
            started
        } else {
            match open_on(ctx, tls, slot, target, measured).await {
                Ok(opening) => {
                    opening.charge(&mut timing);
                    Instant::now()
                }
                // A request already sent once is not "unsent" because its resending
                // could not connect.
                Err(failure) => break Err(Failure { unsent: failure.unsent && !retried, ..failure }),
            }
        };
        if measured && !retried {
            // Begun: from here until its outcome it is in flight.
            ctx.metrics.borrow_mut().row(row_id).started += 1;
        }
        let host = (!*sets_host).then_some(target.host_header.as_str());
        let head = RequestHead { method, target: &target.origin_form, host, headers, body };
        let mut wire = WireTiming::default();
        let connection = slot.connection.as_mut().expect("opened above");
        let exchange = connection.round_trip(head, keep_body, max_body_bytes, keep_headers, &mut wire);
        let result = match tokio::time::timeout(request_timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(request_timed_out(request_timeout)),
        };
        let end = Instant::now();
        wire_phases(&mut timing, send_started, &wire, end);
        match result {
            Err(failure)
                if !retried
                    && closed_before_response(&failure, &wire)
                    && (never_processed(&failure) || (reused && may_resend(method, &wire))) =>
            {
                retried = true;
                slot.connection = None;
                if measured {
                    ctx.metrics.borrow_mut().connections.retried += 1;
                }
            }
            Err(failure) => {
                // The connection is in an unknown state; the next request opens a fresh one.
                slot.connection = None;
                break Err(failure);
            }
            Ok(response) => {
                slot.idle_since = end;
                break Ok(response);
            }
        }
    };
    let end = Instant::now();
    timing.latency_us = end.duration_since(intended).as_micros() as u64;
    timing.uncorrected_us = end.duration_since(started).as_micros() as u64;
    (result, timing)
}

pub(crate) fn request_timed_out(timeout: Duration) -> Failure {
    Failure::new("request_timeout", format!("no complete response within {} ms", timeout.as_millis()))
}

/// The send, wait and receive phases of an exchange that began sending at `send_started` and
/// ended at `end`; bytes add up (those of a failed first attempt did cross the wire).
pub(crate) fn wire_phases(timing: &mut RequestTiming, send_started: Instant, wire: &WireTiming, end: Instant) {
    let sent_at = wire.sent_at.unwrap_or(end);
    timing.send_us = sent_at.saturating_duration_since(send_started).as_micros() as u64;
    timing.wait_us = wire.first_byte_at.unwrap_or(end).saturating_duration_since(sent_at).as_micros() as u64;
    timing.receive_us = wire.first_byte_at.map_or(0, |at| end.saturating_duration_since(at).as_micros() as u64);
    timing.bytes_sent += wire.bytes_sent;
    timing.bytes_received += wire.bytes_received;
}

/// Opens a connection to `target` in `slot` (dropping the one it held), speaking what the plan
/// and the server agree on, and counts it.
pub(crate) async fn open_on(
    ctx: &WorkerContext,
    tls: Option<&TlsConnector>,
    slot: &mut ConnectionSlot,
    target: &Target,
    measured: bool,
) -> Result<OpenTiming, Failure> {
    slot.connection = None;
    let protocol = &ctx.program.protocols.http;
    let destination =
        Destination { authority: &target.authority, host: &target.host, tls, resolver: &protocol.resolver };
    let (connection, opening) = UserConnection::open(&destination, OpenTimeouts::of(protocol), protocol.http2).await?;
    // Counted now: the request on it may never complete.
    if measured {
        let events = &mut ctx.metrics.borrow_mut().connections;
        events.opened += 1;
        if connection.is_http2() {
            events.http2 += 1;
        } else if target.tls && protocol.http2 != horde_plan::Http2Mode::Off {
            events.http2_declined += 1;
        }
    }
    slot.connection = Some(connection);
    Ok(opening)
}

/// A file name a part's header can carry: a quote or a line break from a session would end
/// the header early.
fn part_file_name(part: &str, file_name: String) -> Result<String, (Failure, u32)> {
    if file_name.contains(['"', '\r', '\n']) {
        let message = format!("multipart part {part:?}: the file name {file_name:?} has a quote or a line break");
        return Err((Failure::unsent("invalid_header", message), 0));
    }
    Ok(file_name)
}

/// One file part of a multipart body, its delimiter written before.
fn file_part(out: &mut Vec<u8>, name: &str, file_name: &str, content_type: &str, data: &[u8]) {
    out.extend_from_slice(
        format!(
            "Content-Disposition: form-data; name=\"{name}\"; filename=\"{file_name}\"\r\n\
             Content-Type: {content_type}\r\n\r\n"
        )
        .as_bytes(),
    );
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn posted(status: u16, location: &'static str) -> Result<Prepared, Failure> {
        let url = Url::parse("http://127.0.0.1:1/app/form").unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let mut prepared = Prepared {
            method: Method::POST,
            target: Arc::new(Target::from_url(url).unwrap()),
            headers,
            body: Bytes::from("{}"),
            sets_host: false,
            max_redirects: 10,
        };
        redirect(&prepared, StatusCode::from_u16(status).unwrap(), &HeaderValue::from_static(location))?
            .apply(&mut prepared);
        Ok(prepared)
    }

    #[test]
    fn redirects_keep_or_drop_the_body_as_browsers_do() {
        let same = posted(307, "next").unwrap();
        assert_eq!(
            (same.method, &same.body[..], same.target.origin_form.as_str()),
            (Method::POST, &b"{}"[..], "/app/next")
        );
        assert!(same.headers.contains_key(CONTENT_TYPE));
        for status in [302, 303] {
            let get = posted(status, "/done?x=1").unwrap();
            assert_eq!((get.method, get.body.len(), get.target.origin_form.as_str()), (Method::GET, 0, "/done?x=1"));
            assert!(!get.headers.contains_key(CONTENT_TYPE));
        }
        assert_eq!(posted(302, "ftp://elsewhere/").err().unwrap().kind, "invalid_redirect");
    }
}
