//! Several requests of one virtual user at once, as a browser fetches a page's resources:
//! a page's `resources` (declared, or found in its HTML), and batches.
//!
//! Requests are grouped by host. On a host whose connection speaks HTTP/2 they go as streams on
//! that one connection; on HTTP/1.1 they share up to `max_connections_per_host` connections
//! (browsers open 6), each taking the next request as it finishes the last. Everything runs in
//! the user's own task: the streams, the lanes of HTTP/1.1 connections and the HTTP/2 driver
//! are polled together, with no second task and no lock.
//!
//! Each request keeps its row, checks and redirects. The exchanges happen together; their
//! outcomes are then recorded, checked and their cookies stored one after another, in the
//! order the requests were given, so that a `save_as` of a later request wins as it would in
//! sequence. Redirects are followed in a next round, together.

use super::check::HttpCheck;
use super::client::{
    closed_before_response, never_processed, KeepHeaders, OpenTiming, RequestHead, Response, WireTiming,
};
use super::connection::UserConnection;
use super::http2::StreamOutcome;
use super::page_resources::page_resources;
use super::program::{RequestProgram, Target};
use super::request::{
    exchange_on, open_on, request_timed_out, tls_connector, wire_phases, Answer, Exchange, Outgoing, Prepared,
};
use super::ConnectionSlot;
use crate::failure::Failure;
use crate::user::{Flow, VirtualUser};
use crate::worker::WorkerContext;
use bytes::Bytes;
use horde_metrics::RequestTiming;
use http::Method;
use std::cell::{Cell, RefCell};
use std::sync::Arc;
use tokio::time::Instant;
use tokio_rustls::TlsConnector;
use url::Url;

/// One request of a concurrent fetch, through its redirect hops.
struct Fetch<'p> {
    /// Its checks; none for a resource found in a page's HTML.
    checks: &'p [HttpCheck],
    keep_body: bool,
    /// The request's own row; hops have rows of their own.
    first_row: usize,
    row_id: usize,
    hop: u32,
    prepared: Prepared,
    /// When the current hop was meant to start: latency is measured from it.
    intended: Instant,
    /// The current hop's exchange, once it happened.
    exchanged: Option<Exchanged>,
    done: bool,
}

struct Exchanged {
    result: Result<Response, Failure>,
    timing: RequestTiming,
    started: Instant,
}

impl<'p> Fetch<'p> {
    fn new(request: Option<&'p RequestProgram>, row_id: usize, prepared: Prepared, intended: Instant) -> Fetch<'p> {
        Fetch {
            checks: request.map_or(&[], |r| &r.checks),
            keep_body: request.is_some_and(|r| r.needs_body),
            first_row: row_id,
            row_id,
            hop: 0,
            prepared,
            intended,
            exchanged: None,
            done: false,
        }
    }
}

/// A fetch as one exchange sees it.
struct Job<'a> {
    index: usize,
    row_id: usize,
    prepared: &'a Prepared,
    keep_body: bool,
    intended: Instant,
}

/// Requests to one host, and the connections they may use.
struct HostGroup<'a> {
    jobs: Vec<Job<'a>>,
    slots: Vec<ConnectionSlot>,
    /// The first slot is the user's main connection, to be given back as such.
    has_main: bool,
}

impl VirtualUser {
    /// A batch step: every request rendered, sent at once, and recorded.
    pub(super) async fn batch(&mut self, requests: &[RequestProgram]) -> Flow {
        let mut held_since = None;
        let mut fetches = Vec::with_capacity(requests.len());
        let mut exhausted = false;
        let mut failed = false;
        for request in requests {
            if !self.ctx.limits.take_request() {
                exhausted = true;
                break;
            }
            // The batch goes out at once: measured from the earliest slot any of its requests
            // was held back from.
            if let Some(slot) = self.throttle_slot().await {
                held_since = held_since.or(Some(slot));
            }
            match self.prepare(request) {
                Ok(prepared) => fetches.push((request, prepared)),
                Err((failure, detail)) => {
                    self.record_unsent(request.row_id, &failure, detail, None);
                    failed = true;
                }
            }
        }
        let intended = self.latency_origin(held_since, Instant::now());
        let fetches = fetches
            .into_iter()
            .map(|(request, prepared)| Fetch::new(Some(request), request.row_id, prepared, intended))
            .collect();
        let flow = self.fetch_all(fetches).await;
        match (exhausted, failed) {
            (true, _) => Flow::Exhausted,
            (false, true) => self.after_failure(),
            (false, false) => flow,
        }
    }

    /// After a page: its declared resources and, with `infer_html_resources`, those its HTML
    /// names (`html`), fetched together. They are part of the page's load, not requests of the
    /// run's budget: a page counts once, as in Gatling.
    pub(super) async fn fetch_page_resources(
        &mut self,
        page: &RequestProgram,
        page_url: &Url,
        html: Option<&scraper::Html>,
    ) -> Flow {
        let intended = Instant::now();
        let mut fetches = Vec::new();
        for resource in &page.resources {
            match self.prepare(resource) {
                Ok(prepared) => fetches.push(Fetch::new(Some(resource), resource.row_id, prepared, intended)),
                Err((failure, detail)) => self.record_unsent(resource.row_id, &failure, detail, None),
            }
        }
        if let Some(html) = html {
            for url in page_resources(html, page_url) {
                if fetches.iter().any(|f| f.prepared.target.url == url) {
                    continue;
                }
                let Ok(target) = Target::from_url(url) else { continue };
                let ctx = self.ctx.clone();
                let headers = match self.render_headers(&ctx.program.protocols.http.inferred_resource_headers) {
                    Ok(headers) => headers,
                    Err(_) => continue,
                };
                let row_id = self.ctx.metrics.borrow_mut().resource_row(target.url.as_str());
                let sets_host = headers.contains_key(http::header::HOST);
                let prepared = Prepared {
                    method: Method::GET,
                    target: Arc::new(target),
                    headers,
                    body: Bytes::new(),
                    sets_host,
                    max_redirects: ctx.program.protocols.http.max_redirects,
                };
                fetches.push(Fetch::new(None, row_id, prepared, intended));
            }
        }
        self.fetch_all(fetches).await
    }

    /// Fetches everything concurrently, round after round of redirects, and records each
    /// outcome in order.
    async fn fetch_all(&mut self, mut fetches: Vec<Fetch<'_>>) -> Flow {
        let mut failures = 0;
        while fetches.iter().any(|f| !f.done) {
            if self.protocols.http.has_cookies {
                for fetch in fetches.iter_mut().filter(|f| !f.done) {
                    self.set_cookie_header(&mut fetch.prepared);
                }
            }
            self.exchange_concurrently(&mut fetches).await;
            for fetch in fetches.iter_mut().filter(|f| !f.done) {
                let Exchanged { result, mut timing, started } =
                    fetch.exchanged.take().expect("every fetch was exchanged");
                let response = match result {
                    Ok(response) => response,
                    Err(failure) => {
                        self.record_failure(
                            fetch.row_id,
                            started,
                            &timing,
                            &failure,
                            0,
                            Some(fetch.prepared.target.url.as_str()),
                        );
                        fetch.done = true;
                        failures += 1;
                        continue;
                    }
                };
                let exchange = Exchange {
                    checks: fetch.checks,
                    needs_body: fetch.keep_body,
                    infers_resources: false,
                    row_id: fetch.row_id,
                    started,
                    hop: fetch.hop,
                    prepared: &mut fetch.prepared,
                    timing: &mut timing,
                };
                let answer = self.answer(exchange, response);
                match answer {
                    Answer::Redirect => {
                        fetch.hop += 1;
                        fetch.row_id = self.ctx.metrics.borrow_mut().redirect_row(fetch.first_row, fetch.hop);
                        fetch.intended = Instant::now();
                    }
                    Answer::Failed => {
                        fetch.done = true;
                        failures += 1;
                    }
                    Answer::Done(_) => fetch.done = true,
                }
            }
        }
        if failures > 0 {
            self.after_failure()
        } else {
            Flow::Next
        }
    }

    /// One round: every unfinished fetch's current hop, exchanged at once, host by host.
    async fn exchange_concurrently(&mut self, fetches: &mut [Fetch<'_>]) {
        let ctx = self.ctx.clone();
        let keep_headers = self.protocols.http.keep_headers();
        let needs_tls = fetches.iter().any(|f| !f.done && f.prepared.target.tls);
        let tls = tls_connector(&mut self.protocols.http.tls, &ctx, needs_tls).cloned();
        let mut groups: Vec<HostGroup<'_>> = Vec::new();
        for (index, fetch) in fetches.iter().enumerate().filter(|(_, f)| !f.done) {
            let target = &fetch.prepared.target;
            let job = Job {
                index,
                row_id: fetch.row_id,
                prepared: &fetch.prepared,
                keep_body: fetch.keep_body,
                intended: fetch.intended,
            };
            match groups.iter_mut().find(|g| same_host(&g.jobs[0].prepared.target, target)) {
                Some(group) => group.jobs.push(job),
                None => {
                    // The host's connections: the main one if it goes there, and spares.
                    let mut slots = Vec::new();
                    let has_main = self.protocols.http.main.is_for(&target.authority, target.tls);
                    if has_main {
                        slots.push(std::mem::replace(&mut self.protocols.http.main, ConnectionSlot::empty()));
                    }
                    let mut i = 0;
                    while i < self.protocols.http.spares.len() {
                        if self.protocols.http.spares[i].is_for(&target.authority, target.tls) {
                            slots.push(self.protocols.http.spares.swap_remove(i));
                        } else {
                            i += 1;
                        }
                    }
                    groups.push(HostGroup { jobs: vec![job], slots, has_main });
                }
            }
        }
        // A host without a connection of the user's gets the main slot when it is free (no
        // group took it, and it holds no connection to another host), so a user whose pages and
        // resources share a host keeps one connection across pages.
        if self.protocols.http.main.connection.is_none() && !groups.iter().any(|g| g.has_main) {
            if let Some(group) = groups.iter_mut().find(|g| g.slots.is_empty()) {
                group.has_main = true;
            }
        }
        let max_lanes = ctx.program.protocols.http.max_connections_per_host;
        let outcomes: RefCell<Vec<Option<Exchanged>>> = RefCell::new((0..fetches.len()).map(|_| None).collect());
        let returned = futures_util::future::join_all(
            groups.into_iter().map(|group| fetch_host(&ctx, tls.as_ref(), group, max_lanes, keep_headers, &outcomes)),
        )
        .await;
        for (slots, has_main) in returned {
            let mut slots = slots.into_iter();
            if has_main {
                if let Some(main) = slots.next() {
                    self.protocols.http.main = main;
                }
            }
            self.protocols.http.spares.extend(slots.filter(|s| s.connection.is_some()));
        }
        // A browser keeps a few connections per host; a user that wandered over many hosts
        // keeps only the latest.
        let most = max_lanes * 4;
        if self.protocols.http.spares.len() > most {
            let excess = self.protocols.http.spares.len() - most;
            self.protocols.http.spares.drain(..excess);
        }
        for (fetch, exchanged) in fetches.iter_mut().zip(outcomes.into_inner()) {
            if let Some(exchanged) = exchanged {
                fetch.exchanged = Some(exchanged);
            }
        }
    }
}

fn same_host(a: &Target, b: &Target) -> bool {
    a.tls == b.tls && a.authority == b.authority
}

/// A host's share of a round: its first connection opened (or checked) to learn whether it
/// speaks HTTP/2, then every job as a stream on it, or over lanes of HTTP/1.1 connections.
/// Gives the connections back, with whether the first is the user's main one.
async fn fetch_host(
    ctx: &WorkerContext,
    tls: Option<&TlsConnector>,
    mut group: HostGroup<'_>,
    max_lanes: usize,
    keep_headers: KeepHeaders,
    outcomes: &RefCell<Vec<Option<Exchanged>>>,
) -> (Vec<ConnectionSlot>, bool) {
    let started = Instant::now();
    let measured = ctx.measures(started);
    let target = group.jobs[0].prepared.target.clone();
    if group.slots.is_empty() {
        group.slots.push(ConnectionSlot::empty());
    }
    let first = &mut group.slots[0];
    let mut usable = first.is_for(&target.authority, target.tls);
    if usable && first.connection.as_mut().is_some_and(|c| c.closed_while_idle()) {
        usable = false;
        if measured {
            ctx.metrics.borrow_mut().connections.closed_while_idle += 1;
        }
    }
    let mut opening = None;
    if !usable {
        match open_on(ctx, tls, first, &target, measured).await {
            Ok(opened) => opening = Some(opened),
            Err(failure) => {
                // Nothing went out for any of them.
                let mut outcomes = outcomes.borrow_mut();
                for job in &group.jobs {
                    let timing = finished_timing(RequestTiming::default(), job.intended, started, Instant::now());
                    outcomes[job.index] = Some(Exchanged { result: Err(failure.clone()), timing, started });
                }
                return (group.slots, group.has_main);
            }
        }
    }
    let speaks_http2 = group.slots[0].connection.as_ref().is_some_and(UserConnection::is_http2);
    let fetch = HostFetch { ctx, tls, jobs: &group.jobs, keep_headers, started, outcomes };
    if speaks_http2 && group.jobs.len() > 1 {
        fetch_as_streams(fetch, &mut group.slots[0], opening).await;
    } else {
        fetch_over_lanes(fetch, &mut group.slots, max_lanes, opening).await;
    }
    (group.slots, group.has_main)
}

fn finished_timing(mut timing: RequestTiming, intended: Instant, started: Instant, end: Instant) -> RequestTiming {
    timing.latency_us = end.saturating_duration_since(intended).as_micros() as u64;
    timing.uncorrected_us = end.saturating_duration_since(started).as_micros() as u64;
    timing
}

/// What the connections of a host's group share while they fetch its jobs.
#[derive(Clone, Copy)]
struct HostFetch<'a, 'j> {
    ctx: &'a WorkerContext,
    tls: Option<&'a TlsConnector>,
    jobs: &'a [Job<'j>],
    keep_headers: KeepHeaders,
    /// When the group began: a job that waited for the group's connection is measured from it.
    started: Instant,
    /// Each job's outcome, by the job's index in the round.
    outcomes: &'a RefCell<Vec<Option<Exchanged>>>,
}

/// HTTP/1.1: up to `max_lanes` connections, each sending the next job when its last is done.
async fn fetch_over_lanes(
    fetch: HostFetch<'_, '_>,
    slots: &mut Vec<ConnectionSlot>,
    max_lanes: usize,
    opening: Option<OpenTiming>,
) {
    let lanes = fetch.jobs.len().min(max_lanes).max(1);
    while slots.len() < lanes {
        slots.push(ConnectionSlot::empty());
    }
    let next_job = Cell::new(0);
    let opening = Cell::new(opening);
    let lanes = slots.iter_mut().take(lanes).map(|slot| {
        let lane = Lane { fetch, next_job: &next_job, opening: &opening };
        lane.run(slot)
    });
    futures_util::future::join_all(lanes).await;
}

/// One HTTP/1.1 connection of a host's group, taking jobs until none is left.
struct Lane<'a, 'j> {
    fetch: HostFetch<'a, 'j>,
    next_job: &'a Cell<usize>,
    /// What opening the group's first connection took, charged to the first job.
    opening: &'a Cell<Option<OpenTiming>>,
}

impl Lane<'_, '_> {
    async fn run(self, slot: &mut ConnectionSlot) {
        while let Some(job) = self.fetch.jobs.get(self.next_job.get()) {
            self.next_job.set(self.next_job.get() + 1);
            // The first job taken (by the first lane, on the connection the group opened)
            // waited for that connection.
            let opened = self.opening.take();
            let started = Instant::now();
            let outgoing = Outgoing {
                row_id: job.row_id,
                prepared: job.prepared,
                intended: job.intended,
                started,
                keep_body: job.keep_body,
                keep_headers: self.fetch.keep_headers,
            };
            let (result, mut timing) = exchange_on(self.fetch.ctx, self.fetch.tls, slot, outgoing).await;
            let started = match opened {
                Some(opened) => {
                    opened.charge(&mut timing);
                    timing = finished_timing(timing, job.intended, self.fetch.started, Instant::now());
                    self.fetch.started
                }
                None => started,
            };
            self.fetch.outcomes.borrow_mut()[job.index] = Some(Exchanged { result, timing, started });
        }
    }
}

/// HTTP/2: every job as a stream on the one connection, at once. Streams the server refused
/// with a GOAWAY before answering go once more on a fresh connection, as a browser does.
async fn fetch_as_streams(fetch: HostFetch<'_, '_>, slot: &mut ConnectionSlot, mut opening: Option<OpenTiming>) {
    let HostFetch { ctx, tls, jobs, keep_headers, started, outcomes } = fetch;
    let protocol = &ctx.program.protocols.http;
    let measured = ctx.measures(started);
    let timed_out = request_timed_out(protocol.request_timeout);
    // Indices into `jobs` (and `timings`) of the streams still to send.
    let mut pending: Vec<usize> = (0..jobs.len()).collect();
    let mut timings: Vec<RequestTiming> = vec![RequestTiming::default(); jobs.len()];
    if measured {
        let mut metrics = ctx.metrics.borrow_mut();
        for job in jobs {
            metrics.row(job.row_id).started += 1;
        }
    }
    for attempt in 0..2 {
        let send_started = Instant::now();
        let Some(UserConnection::Http2(connection)) = slot.connection.as_mut() else {
            unreachable!("fetch_as_streams runs on an HTTP/2 connection")
        };
        let heads = pending
            .iter()
            .map(|&index| {
                let job = &jobs[index];
                let target = &job.prepared.target;
                let host = (!job.prepared.sets_host).then_some(target.host_header.as_str());
                let head = RequestHead {
                    method: &job.prepared.method,
                    target: &target.origin_form,
                    host,
                    headers: &job.prepared.headers,
                    body: &job.prepared.body,
                };
                (head, job.keep_body)
            })
            .collect();
        let mut streams: Vec<StreamOutcome> = pending.iter().map(|_| StreamOutcome::default()).collect();
        connection
            .round_trips(heads, protocol.max_body_bytes, protocol.request_timeout, &timed_out, &mut streams)
            .await;
        let end = Instant::now();
        slot.idle_since = end;
        let mut resend = Vec::new();
        for (&index, stream) in pending.iter().zip(streams) {
            let job = &jobs[index];
            let timing = &mut timings[index];
            if let Some(opened) = opening.take() {
                opened.charge(timing);
            }
            let done_at = stream.progress.done_at.unwrap_or(end);
            wire_phases(timing, send_started, &stream.wire, done_at);
            // Counted as begun above: whatever happened, it is an outcome of a sent request.
            let result =
                stream.result.expect("round_trips fills every outcome").map_err(|f| Failure { unsent: false, ..f });
            if let Err(failure) = &result {
                if attempt == 0
                    && closed_before_response(failure, &stream.wire)
                    && may_resend_stream(job, failure, &stream.wire)
                {
                    resend.push(index);
                    continue;
                }
            }
            let timing = finished_timing(*timing, job.intended, started, done_at);
            outcomes.borrow_mut()[job.index] = Some(Exchanged { result, timing, started });
        }
        if resend.is_empty() {
            return;
        }
        if measured {
            ctx.metrics.borrow_mut().connections.retried += resend.len() as u64;
        }
        let target = jobs[resend[0]].prepared.target.clone();
        match open_on(ctx, tls, slot, &target, measured).await {
            Ok(opened) => opening = Some(opened),
            Err(failure) => {
                let failure = Failure { unsent: false, ..failure };
                let end = Instant::now();
                let mut outcomes = outcomes.borrow_mut();
                for index in resend {
                    let job = &jobs[index];
                    let timing = finished_timing(timings[index], job.intended, started, end);
                    outcomes[job.index] = Some(Exchanged { result: Err(failure.clone()), timing, started });
                }
                return;
            }
        }
        if !slot.connection.as_ref().is_some_and(UserConnection::is_http2) {
            // The server stopped speaking HTTP/2 between two connections: one at a time then,
            // on that HTTP/1.1 connection. `exchange_on` counts each as begun: they were already.
            for index in resend {
                let job = &jobs[index];
                if measured {
                    ctx.metrics.borrow_mut().row(job.row_id).started -= 1;
                }
                let attempt = Instant::now();
                let outgoing = Outgoing {
                    row_id: job.row_id,
                    prepared: job.prepared,
                    intended: job.intended,
                    started: attempt,
                    keep_body: job.keep_body,
                    keep_headers,
                };
                let (result, mut timing) = exchange_on(ctx, tls, slot, outgoing).await;
                if let Some(opened) = opening.take() {
                    opened.charge(&mut timing);
                }
                timing.bytes_sent += timings[index].bytes_sent;
                timing.bytes_received += timings[index].bytes_received;
                let timing = finished_timing(timing, job.intended, started, Instant::now());
                outcomes.borrow_mut()[job.index] = Some(Exchanged { result, timing, started });
            }
            return;
        }
        pending = resend;
    }
}

/// Whether a stream that got no response may go again: one the server did not process (a
/// GOAWAY names the last stream it processed; REFUSED_STREAM), or an idempotent request, as
/// for HTTP/1.1 (`request::may_resend`).
fn may_resend_stream(job: &Job<'_>, failure: &Failure, wire: &WireTiming) -> bool {
    never_processed(failure) || super::request::may_resend(&job.prepared.method, wire)
}
