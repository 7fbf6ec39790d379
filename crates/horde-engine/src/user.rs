//! A virtual user: one session (variables, cookie jar, keep-alive connection, random stream)
//! running a scenario's steps once.

mod couchdb_steps;

use crate::check::{run_checks, ResponseView};
use crate::client::{Connection, Failure, KeepHeaders, RequestHead, Response, WireTiming};
use crate::lower::{BodyProgram, PartProgram, PauseKind, RequestProgram, StepProgram, Target, UrlProgram};
use crate::precise_timer::PreciseTimer;
use crate::worker::{WorkerContext, WorkerMetrics};
use bytes::Bytes;
use cookie_store::CookieStore;
use horde_metrics::RequestTiming;
use horde_plan::OnCheckFailure;
use http::header::{HeaderMap, HeaderValue, CONTENT_TYPE, COOKIE, LOCATION, SET_COOKIE};
use http::{Method, StatusCode};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use url::Url;

/// The timer's resolution: a wake-up this late is the clock's granularity, not a stall.
const TIMER_RESOLUTION: Duration = Duration::from_millis(1);

/// A keep-alive connection idle this long is checked for a close by the server before it is
/// written on. The check usually costs a read syscall (the socket still reads as ready from
/// the last response), which back-to-back requests should not pay: servers close idle
/// connections after seconds, and the rare close that races a request is retried.
const IDLE_CHECK_AFTER: Duration = Duration::from_millis(1);

/// Where a request's corrected latency is measured from: its intended start, plus the timer's
/// resolution, which is the clock's granularity rather than a stall. Any lateness beyond it
/// counts, so a stalled worker or an overloaded schedule shows in the latency (coordinated
/// omission).
fn corrected_start(intended: Instant, started: Instant) -> Instant {
    (intended + TIMER_RESOLUTION).min(started)
}

/// Turns the request of one hop into the next hop of a redirect, as browsers do: 303, and
/// 301/302 after a POST, become a GET without a body; otherwise the same request (and the same
/// body) goes to the new location.
fn redirect(prepared: &mut Prepared, status: StatusCode, location: &HeaderValue) -> Result<(), Failure> {
    let location = location.to_str().map_err(|_| Failure::new("invalid_redirect", "Location is not text"))?;
    let url = prepared
        .target
        .url
        .join(location)
        .map_err(|err| Failure::new("invalid_redirect", format!("Location {location:?}: {err}")))?;
    let target = Target::from_url(url).map_err(|m| Failure::new("invalid_redirect", m))?;
    let becomes_get = status == StatusCode::SEE_OTHER
        || (matches!(status, StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND) && prepared.method == Method::POST);
    if becomes_get {
        prepared.method = Method::GET;
        prepared.body = Bytes::new();
        prepared.headers.remove(CONTENT_TYPE);
    }
    prepared.target = Arc::new(target);
    Ok(())
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
        };
        redirect(&mut prepared, StatusCode::from_u16(status).unwrap(), &HeaderValue::from_static(location))?;
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

    #[test]
    fn lateness_within_the_timer_resolution_is_forgiven() {
        let t = Instant::now() + Duration::from_secs(10);
        let ms = Duration::from_millis;
        assert_eq!(corrected_start(t, t + Duration::from_micros(600)), t + Duration::from_micros(600));
        assert_eq!(corrected_start(t, t + ms(5)), t + ms(1));
        assert_eq!(corrected_start(t + ms(1), t), t);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UserOutcome {
    Finished,
    /// The run's request limit was reached; no new user should start.
    Exhausted,
}

/// What the chain does after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Next,
    /// A request failed: abandon this iteration of the scenario.
    StopIteration,
    Exhausted,
}

pub(crate) struct VirtualUser {
    ctx: Rc<WorkerContext>,
    variables: Vec<Option<String>>,
    cookies: CookieStore,
    has_cookies: bool,
    connection: Option<Connection>,
    /// When the connection last finished an exchange.
    connection_idle_since: Instant,
    rng: SmallRng,
    /// When the next request was meant to start (arrival time, end of a pause). Latency is
    /// measured from it, so a late timer or a busy worker shows up in the figures.
    next_intended: Option<Instant>,
    /// KO requests so far: a group is OK when this did not change inside it.
    failures: u64,
    /// Some check of the scenario reads a response header, so all headers are kept.
    keep_all_headers: bool,
    /// When this user last passed each pace step.
    paces: Vec<Option<Instant>>,
    /// Waits for throttle slots; made on first use, so unthrottled users hold no timer.
    slot_timer: Option<PreciseTimer>,
    /// One document generator per schema of the plan, made on first use.
    documents: Vec<Option<horde_docgen::Generator>>,
    seed: u64,
    /// Unique within the scenario (the arrival's index in the open model).
    number: u64,
}

/// A request ready to go on the wire.
struct Prepared {
    method: Method,
    target: Arc<Target>,
    headers: HeaderMap,
    body: Bytes,
    /// The headers hold a Host of their own, which replaces the URL's.
    sets_host: bool,
}

/// Whether a request that failed on a reused connection before any byte of a response may go
/// once more on a fresh one: when the server cannot have acted on it (writing it failed), or
/// when acting on it twice is harmless (an idempotent method, RFC 9110 9.2.2), as browsers do.
/// A POST that was written whole is a KO instead: the server may have done it.
fn may_resend(method: &Method, wire: &WireTiming) -> bool {
    wire.bytes_sent == 0
        || matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE | Method::PUT | Method::DELETE)
}

impl VirtualUser {
    pub fn new(ctx: Rc<WorkerContext>, seed: u64, number: u64, intended_start: Option<Instant>) -> VirtualUser {
        let slots = ctx.program.variables.len();
        VirtualUser {
            keep_all_headers: ctx.program.reads_response_headers,
            paces: vec![None; ctx.program.paces],
            slot_timer: None,
            documents: (0..ctx.program.schemas.len()).map(|_| None).collect(),
            seed,
            number,
            ctx,
            variables: vec![None; slots],
            cookies: CookieStore::default(),
            has_cookies: false,
            connection: None,
            connection_idle_since: Instant::now(),
            rng: SmallRng::seed_from_u64(seed),
            next_intended: intended_start,
            failures: 0,
        }
    }

    pub async fn run(&mut self, steps: &[StepProgram]) -> UserOutcome {
        match self.chain(steps).await {
            Flow::Exhausted => UserOutcome::Exhausted,
            Flow::Next | Flow::StopIteration => UserOutcome::Finished,
        }
    }

    async fn chain(&mut self, steps: &[StepProgram]) -> Flow {
        for step in steps {
            let flow = match step {
                StepProgram::Request(request) => {
                    let failures = self.failures;
                    let flow = self.request(request).await;
                    if self.failures != failures {
                        // A failure can come without any wait (an unsent request, a descriptor
                        // limit): the worker's other tasks, its snapshot ticker and its stop
                        // signal get their turn now and then, or a loop of failures would hold
                        // the worker's thread for ever. Here, not in `request`, where the
                        // wait would keep its large locals in every user's future.
                        tokio::task::consume_budget().await;
                    }
                    flow
                }
                StepProgram::Pause(kind) => {
                    self.pause(*kind).await;
                    Flow::Next
                }
                StepProgram::Pace { id, duration } => {
                    self.pace(*id, *duration).await;
                    Flow::Next
                }
                // Boxed once per entry into a block (not per iteration), which is what lets
                // blocks nest.
                block => self.block(block).await,
            };
            if flow != Flow::Next {
                return flow;
            }
        }
        Flow::Next
    }

    fn block<'a>(&'a mut self, step: &'a StepProgram) -> Pin<Box<dyn Future<Output = Flow> + 'a>> {
        Box::pin(async move {
            match step {
                StepProgram::Repeat { times, counter, body } => {
                    for i in 0..*times {
                        if let Some(slot) = counter {
                            self.variables[*slot] = Some(i.to_string());
                        }
                        let flow = self.chain(body).await;
                        if flow != Flow::Next {
                            return flow;
                        }
                    }
                    Flow::Next
                }
                StepProgram::During { duration, counter, body } => {
                    let until = Instant::now() + *duration;
                    let mut i = 0u64;
                    while Instant::now() < until {
                        if let Some(slot) = counter {
                            self.variables[*slot] = Some(i.to_string());
                        }
                        let flow = self.chain(body).await;
                        if flow != Flow::Next {
                            return flow;
                        }
                        i += 1;
                    }
                    Flow::Next
                }
                StepProgram::Group { group, body } => {
                    let started = Instant::now();
                    let failures = self.failures;
                    let flow = self.chain(body).await;
                    let duration_us = started.elapsed().as_micros() as u64;
                    let ok = self.failures == failures;
                    if self.ctx.measures(started) {
                        self.ctx.metrics.borrow_mut().group(*group).record(duration_us, ok);
                    }
                    flow
                }
                StepProgram::CouchdbBulkInsert(step) => self.couchdb_bulk_insert(step).await,
                StepProgram::CouchdbCrud(step) => self.couchdb_crud(step).await,
                StepProgram::Request(_) | StepProgram::Pause(_) | StepProgram::Pace { .. } => {
                    unreachable!("handled by chain")
                }
            }
        })
    }

    async fn pause(&mut self, kind: PauseKind) {
        let duration = match kind {
            PauseKind::Fixed(d) => d,
            PauseKind::Uniform(min, max) => min + (max - min).mul_f64(self.rng.random::<f64>()),
            PauseKind::Exponential(mean) => mean.mul_f64(-(1.0 - self.rng.random::<f64>()).ln()),
        };
        let target = self.next_intended.unwrap_or_else(Instant::now) + duration;
        tokio::time::sleep_until(target).await;
        self.next_intended = Some(target);
    }

    /// Waits until `duration` after this user last passed this pace step, so the loop around
    /// it runs at most once per `duration`. A late pass is not caught up: the next one is
    /// measured from it.
    async fn pace(&mut self, id: usize, duration: std::time::Duration) {
        let now = Instant::now();
        let target = match self.paces[id] {
            Some(last) if last + duration > now => last + duration,
            _ => now,
        };
        tokio::time::sleep_until(target).await;
        self.paces[id] = Some(target);
        self.next_intended = Some(target);
    }

    async fn request(&mut self, request: &RequestProgram) -> Flow {
        if !self.ctx.limits.take_request() {
            return Flow::Exhausted;
        }
        let mut intended = self.next_intended.take();
        if let Some(slot) = self.ctx.limits.next_throttle_slot() {
            // Throttle slots are sub-millisecond apart at high rates: tokio's 1 ms timer would
            // start most of them late.
            self.slot_timer.get_or_insert_with(PreciseTimer::new).sleep_until(slot).await;
            self.ctx.record_start_lag(slot, Instant::now());
            intended = Some(slot);
        }
        let mut prepared = match self.prepare(request) {
            Ok(prepared) => prepared,
            Err((failure, detail)) => {
                self.record_unsent(request.row_id, &failure, detail);
                return self.after_failure();
            }
        };
        let max_redirects = self.ctx.program.protocol.max_redirects;
        let mut hop = 0u32;
        let mut row_id = request.row_id;
        loop {
            let started = Instant::now();
            let from = match (hop, intended) {
                (0, Some(intended)) => corrected_start(intended, started),
                _ => started,
            };
            let (result, timing) = self.exchange(row_id, &mut prepared, from, started, request.needs_body).await;
            let response = match result {
                Ok(response) => response,
                Err(failure) => {
                    self.record_failure(row_id, started, &timing, &failure, 0);
                    return self.after_failure();
                }
            };
            self.store_cookies(&response.headers, &prepared.target.url);
            let location = response.headers.get(LOCATION).filter(|_| response.status.is_redirection());
            if let (Some(location), true) = (location, max_redirects > 0) {
                // The hop is one exchange with one outcome: OK when it can be followed.
                let followed = if hop < max_redirects {
                    redirect(&mut prepared, response.status, location)
                } else {
                    Err(Failure::new("too_many_redirects", format!("more than {max_redirects} redirects in a row")))
                };
                if let Err(failure) = followed {
                    self.record_failure(row_id, started, &timing, &failure, 0);
                    return self.after_failure();
                }
                self.record_ok(row_id, started, &timing);
                hop += 1;
                row_id = self.ctx.metrics.borrow_mut().redirect_row(request.row_id, hop);
                continue;
            }
            let mut view = ResponseView::new(response.status, &response.headers, &response.body);
            return match run_checks(&request.checks, &mut view, &mut self.variables) {
                Ok(()) => {
                    self.record_ok(row_id, started, &timing);
                    Flow::Next
                }
                Err(failure) => {
                    let failure_detail = failure.detail;
                    let failure = Failure::new("check_failed", failure.message);
                    self.record_failure(row_id, started, &timing, &failure, failure_detail);
                    self.after_failure()
                }
            };
        }
    }

    /// What the chain does after a failed request.
    fn after_failure(&self) -> Flow {
        match self.ctx.program.plan.options.on_check_failure {
            OnCheckFailure::StopIteration => Flow::StopIteration,
            OnCheckFailure::Continue => Flow::Next,
        }
    }

    fn record_ok(&self, row_id: usize, started: Instant, timing: &RequestTiming) {
        if let Some(mut metrics) = self.measured(row_id, started, timing) {
            metrics.row(row_id).record(timing, true);
        }
    }

    /// The worker's recorders if the exchange on `row_id` that began at `started` and ends
    /// now is measured. What completes after the warm-up counts, wherever it began: a
    /// level's throughput is what completes in its window (requests queued in the warm-up
    /// and answered after it count; those cut at the end do not).
    fn measured(&self, row_id: usize, started: Instant, timing: &RequestTiming) -> Option<std::cell::RefMut<'_, WorkerMetrics>> {
        let ended = started + Duration::from_micros(timing.uncorrected_us);
        if !self.ctx.measures(ended) {
            return None;
        }
        let mut metrics = self.ctx.metrics.borrow_mut();
        if !self.ctx.measures(started) {
            // Its start, in the warm-up, was not counted: it is now, with its outcome.
            metrics.row(row_id).started += 1;
        }
        Some(metrics)
    }

    /// A failed exchange: counted with its timing. An unsent request goes to
    /// [`Self::record_unsent`] instead, so that it stays out of the latency statistics.
    fn record_failure(
        &mut self,
        row_id: usize,
        started: Instant,
        timing: &RequestTiming,
        failure: &Failure,
        detail: u32,
    ) {
        if failure.unsent {
            return self.record_unsent(row_id, failure, detail);
        }
        self.failures += 1;
        if let Some(mut metrics) = self.measured(row_id, started, timing) {
            metrics.row(row_id).record(timing, false);
            metrics.error(failure.kind, row_id, detail, || failure.message.clone());
        }
    }

    /// A request that failed before anything was sent: a KO, counted, with no latency.
    fn record_unsent(&mut self, row_id: usize, failure: &Failure, detail: u32) {
        self.failures += 1;
        if !self.ctx.measures(Instant::now()) {
            return;
        }
        let mut metrics = self.ctx.metrics.borrow_mut();
        metrics.row(row_id).record_unsent();
        metrics.error(failure.kind, row_id, detail, || failure.message.clone());
    }

    fn undefined(&self, slot: usize) -> (Failure, u32) {
        let name = &self.ctx.program.variables[slot];
        (Failure::new("undefined_variable", format!("undefined variable ${{{name}}}")), slot as u32)
    }

    /// Renders everything the request needs; an unset variable fails it before it is sent.
    fn prepare(&mut self, request: &RequestProgram) -> Result<Prepared, (Failure, u32)> {
        let target = self.target(request)?;
        let mut headers = HeaderMap::new();
        for header in &request.headers {
            let value = match &header.fixed {
                Some(value) => value.clone(),
                None => {
                    let text = header.value.render(&self.variables).map_err(|slot| self.undefined(slot))?;
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
            headers.append(header.name.clone(), value);
        }
        let (body, content_type) = self.body(&request.body)?;
        if let Some(content_type) = content_type {
            if !headers.contains_key(CONTENT_TYPE) {
                headers.insert(CONTENT_TYPE, content_type);
            }
        }
        Ok(Prepared { method: request.method.clone(), target, headers, body, sets_host: request.sets_host })
    }

    fn target(&self, request: &RequestProgram) -> Result<Arc<Target>, (Failure, u32)> {
        let invalid = |message: String| (Failure::new("invalid_url", message), 0);
        let mut url = match &request.url {
            UrlProgram::Static(target) if request.query.is_empty() => return Ok(target.clone()),
            UrlProgram::Static(target) => target.url.clone(),
            UrlProgram::Dynamic { template, base } => {
                let text = template.render(&self.variables).map_err(|slot| self.undefined(slot))?;
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
                let name = name.render(&self.variables).map_err(|slot| self.undefined(slot))?;
                let value = value.render(&self.variables).map_err(|slot| self.undefined(slot))?;
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

    /// The user's generator for a schema of the plan, seeded from the user's own seed, so a
    /// run's seed reproduces every document.
    fn generator(&mut self, id: usize, schema: &Arc<horde_docgen::Schema>) -> &mut horde_docgen::Generator {
        let seed = self.seed ^ (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.documents[id].get_or_insert_with(|| {
            horde_docgen::Generator::new(schema.clone(), horde_docgen::Dictionary::shared(), seed)
        })
    }

    fn render_body(&self, body: &BodyProgram) -> Result<(Bytes, Option<HeaderValue>), (Failure, u32)> {
        let render = |t: &crate::lower::Template| t.render(&self.variables).map_err(|slot| self.undefined(slot));
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
            BodyProgram::Multipart { boundary, parts } => {
                let mut out = Vec::new();
                for part in parts {
                    out.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
                    match part {
                        PartProgram::Text { name, value } => {
                            let value = render(value)?;
                            out.extend_from_slice(
                                format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n")
                                    .as_bytes(),
                            );
                        }
                        PartProgram::File { name, file_name, content_type, data } => {
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
                    }
                }
                out.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
                let content_type = HeaderValue::from_str(&format!("multipart/form-data; boundary={boundary}"))
                    .expect("the boundary is a valid header value");
                (Bytes::from(out), Some(content_type))
            }
            BodyProgram::Generated { .. } => unreachable!("generated by body()"),
        })
    }

    fn store_cookies(&mut self, headers: &HeaderMap, url: &Url) {
        for value in headers.get_all(SET_COOKIE) {
            if let Ok(text) = value.to_str() {
                if self.cookies.parse(text, url).is_ok() {
                    self.has_cookies = true;
                }
            }
        }
    }

    /// Sends one request on the user's connection (opening it if needed) and reads the whole
    /// response. The timing is filled in whatever happens.
    ///
    /// A keep-alive connection the server closed while it sat idle is not written on (its
    /// idle timeout would otherwise fail a request the server never saw), and a request that
    /// fails on a reused connection before any byte of a response arrived is sent once more
    /// on a fresh connection, as browsers and hyper do. Both are counted.
    async fn exchange(
        &mut self,
        row_id: usize,
        prepared: &mut Prepared,
        intended: Instant,
        started: Instant,
        keep_body: bool,
    ) -> (Result<Response, Failure>, RequestTiming) {
        let protocol = &self.ctx.program.protocol;
        let (connect_timeout, request_timeout, max_body_bytes) =
            (protocol.connect_timeout, protocol.request_timeout, protocol.max_body_bytes);
        let measured = self.ctx.measures(started);
        if self.has_cookies {
            self.set_cookie_header(prepared);
        }
        let Prepared { method, target, headers, body, sets_host } = prepared;
        // Without header checks, only the headers cookies and redirects need are kept.
        let keep_headers = if self.keep_all_headers { KeepHeaders::All } else { KeepHeaders::CookiesAndLocation };
        let mut timing = RequestTiming::default();
        let mut retried = false;
        let result = loop {
            let mut reused = self.connection.as_ref().is_some_and(|c| c.is_usable_for(&target.authority));
            if reused && started.saturating_duration_since(self.connection_idle_since) >= IDLE_CHECK_AFTER {
                let connection = self.connection.as_mut().expect("checked above");
                if connection.closed_while_idle() {
                    reused = false;
                    if measured {
                        self.ctx.metrics.borrow_mut().connections.closed_while_idle += 1;
                    }
                }
            }
            let send_started = if reused {
                // A reused connection sends at once: the start of the request is the start
                // of sending.
                started
            } else {
                self.connection = None;
                let connecting = Instant::now();
                match Connection::open(&target.authority, connect_timeout).await {
                    Ok(connection) => {
                        let connected = Instant::now();
                        timing.connect_us = Some(connected.duration_since(connecting).as_micros() as u64);
                        self.connection = Some(connection);
                        // Counted now: the request on it may never complete.
                        if measured {
                            self.ctx.metrics.borrow_mut().connections.opened += 1;
                        }
                        connected
                    }
                    // A request already sent once is not "unsent" because its resending
                    // could not connect.
                    Err(failure) => break Err(Failure { unsent: failure.unsent && !retried, ..failure }),
                }
            };
            if measured && !retried {
                // Begun: from here until its outcome it is in flight.
                self.ctx.metrics.borrow_mut().row(row_id).started += 1;
            }
            let host = (!*sets_host).then_some(target.host_header.as_str());
            let head = RequestHead { method, target: &target.origin_form, host, headers, body };
            let mut wire = WireTiming::default();
            let connection = self.connection.as_mut().expect("opened above");
            let exchange = connection.round_trip(head, keep_body, max_body_bytes, keep_headers, &mut wire);
            let result = match tokio::time::timeout(request_timeout, exchange).await {
                Ok(result) => result,
                Err(_) => Err(Failure::new(
                    "request_timeout",
                    format!("no complete response within {} ms", request_timeout.as_millis()),
                )),
            };
            let end = Instant::now();
            let sent_at = wire.sent_at.unwrap_or(end);
            timing.send_us = sent_at.saturating_duration_since(send_started).as_micros() as u64;
            timing.wait_us = wire.first_byte_at.unwrap_or(end).saturating_duration_since(sent_at).as_micros() as u64;
            timing.receive_us = wire.first_byte_at.map_or(0, |at| end.saturating_duration_since(at).as_micros() as u64);
            // Bytes of a failed first attempt did cross the wire: they count.
            timing.bytes_sent += wire.bytes_sent;
            timing.bytes_received += wire.bytes_received;
            match result {
                Err(failure) if reused && !retried && failure.closed_before_response(&wire) && may_resend(method, &wire) => {
                    retried = true;
                    self.connection = None;
                    if measured {
                        self.ctx.metrics.borrow_mut().connections.retried += 1;
                    }
                }
                Err(failure) => {
                    // The connection is in an unknown state; the next request opens a fresh one.
                    self.connection = None;
                    break Err(failure);
                }
                Ok(response) => {
                    self.connection_idle_since = end;
                    break Ok(response);
                }
            }
        };
        let end = Instant::now();
        timing.latency_us = end.duration_since(intended).as_micros() as u64;
        timing.uncorrected_us = end.duration_since(started).as_micros() as u64;
        (result, timing)
    }

    /// The Cookie header for the request's URL from the user's jar.
    fn set_cookie_header(&self, prepared: &mut Prepared) {
        let mut cookie = String::new();
        for (name, value) in self.cookies.get_request_values(&prepared.target.url) {
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
