//! HTTP/2 connections, with the h2 crate: negotiated by ALPN on https, or spoken from the first
//! byte (h2c with prior knowledge) on http://.
//!
//! The connection belongs to one virtual user, and so does its driver: h2's `Connection` future,
//! which reads and writes frames, is polled in the user's own task alongside the stream it
//! waits on, never spawned as a second task. That is the same choice as the HTTP/1.1 client
//! (`client.rs`) and for the same reason: no task switch and no wake-up between the frame that
//! arrives and the user that wants it. While the user thinks, nobody polls the connection;
//! frames that arrive meanwhile (a PING, a GOAWAY) are read at its next request, and a
//! connection the server ended is found then and replaced.
//!
//! Bytes are counted on the transport (frames, headers and control frames included), so a
//! request's bytes are what crossed the connection while it was in flight.

use super::client::{
    KeepHeaders, KeptBody, OpenedTransport, RequestHead, Response, Transport, WireTiming, MAX_HEAD_BYTES,
};
use crate::descriptors::DescriptorPermit;
use crate::failure::Failure;
use bytes::Bytes;
use http::header::{HeaderMap, CONNECTION, HOST, TE, TRANSFER_ENCODING, UPGRADE};
use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

/// Flow-control windows announced to the server, as large as browsers' order of magnitude, so
/// a large response is not paced by window updates on a fast link.
const STREAM_WINDOW: u32 = 1024 * 1024;
const CONNECTION_WINDOW: u32 = 4 * 1024 * 1024;

/// Bytes moved on one connection, and the first bytes it received (to tell an HTTP/1 answer
/// to the HTTP/2 preface from a broken HTTP/2 server).
#[derive(Default)]
struct WireCounts {
    sent: Cell<u64>,
    received: Cell<u64>,
    first_received: Cell<[u8; 5]>,
    /// `received` when the exchange under way began: what came since tells a header block too
    /// large from other errors h2 detects.
    exchange_start: Cell<u64>,
    /// A read or write that failed for a reason TLS knows (the server refused the client
    /// certificate, say): h2 keeps only the error's text.
    transport_failure: RefCell<Option<Failure>>,
}

/// The connection's transport, counting what crosses it.
struct CountedTransport {
    inner: Transport,
    counts: Rc<WireCounts>,
    authority: Arc<str>,
}

impl CountedTransport {
    /// Keeps what a failed read or write means, when TLS says more than h2 will keep.
    fn note_failure<T>(&self, result: &Poll<io::Result<T>>) {
        if let Poll::Ready(Err(err)) = result {
            if let Some(failure) = super::tls::failure_after_handshake(&self.authority, err) {
                *self.counts.transport_failure.borrow_mut() = Some(failure);
            }
        }
    }
}

impl AsyncRead for CountedTransport {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let result = Pin::new(&mut this.inner).poll_read(cx, buf);
        let read = &buf.filled()[before..];
        if !read.is_empty() {
            let received = this.counts.received.get();
            if received < 5 {
                let mut first = this.counts.first_received.get();
                for (slot, byte) in first[received as usize..].iter_mut().zip(read) {
                    *slot = *byte;
                }
                this.counts.first_received.set(first);
            }
            this.counts.received.set(received + read.len() as u64);
        }
        this.note_failure(&result);
        result
    }
}

impl AsyncWrite for CountedTransport {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(written)) = result {
            this.counts.sent.set(this.counts.sent.get() + written as u64);
        }
        this.note_failure(&result);
        result
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

type Driver = h2::client::Connection<CountedTransport, Bytes>;

/// One HTTP/2 connection of a virtual user.
pub struct Http2Connection {
    pub authority: Arc<str>,
    pub tls: bool,
    send: h2::client::SendRequest<Bytes>,
    driver: Driver,
    /// Why the connection ended, once its driver returned; nothing more can be sent on it.
    ended: Option<Failure>,
    counts: Rc<WireCounts>,
    _descriptor: DescriptorPermit,
}

/// What a poll of the driver leaves behind: the connection's end, if it ended.
fn poll_driver(driver: &mut Driver, ended: &mut Option<Failure>, counts: &WireCounts, cx: &mut Context<'_>) {
    if ended.is_some() {
        return;
    }
    if let Poll::Ready(result) = Pin::new(driver).poll(cx) {
        *ended = Some(match result {
            // The connection's end: after a GOAWAY, or a close without one. Streams a GOAWAY
            // refused have their own `goaway`; what this one cut, the server may have begun.
            Ok(()) => Failure::closed(),
            Err(err) => failure(&err, counts),
        });
    }
}

/// Polls `exchange` (one stream or several) while driving the connection, in the same task:
/// the driver first (frames that arrived are read and wake their streams), then the streams,
/// then the driver again when they are still waiting (it writes what they queued now rather
/// than at the next wake-up). The wire counts are brought up to date at every wake-up, so an
/// exchange that times out still has its bytes. None when the connection ended while the
/// exchange was still waiting on it.
async fn driven<F: Future>(
    driver: &mut Driver,
    ended: &mut Option<Failure>,
    counts: &WireCounts,
    wire: &mut WireTiming,
    baseline: (u64, u64),
    mut exchange: Pin<&mut F>,
) -> Option<F::Output> {
    poll_fn(|cx| {
        poll_driver(driver, ended, counts, cx);
        let mut polled = exchange.as_mut().poll(cx);
        if polled.is_pending() && ended.is_none() {
            poll_driver(driver, ended, counts, cx);
            if ended.is_some() {
                // h2 has told the streams why: let them say it.
                polled = exchange.as_mut().poll(cx);
            }
        }
        wire.bytes_sent = counts.sent.get() - baseline.0;
        wire.bytes_received = counts.received.get() - baseline.1;
        match polled {
            Poll::Ready(output) => Poll::Ready(Some(output)),
            Poll::Pending if ended.is_some() => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// A request made ready for h2: pseudo-headers in the URI, connection headers removed.
pub struct StreamRequest {
    head: http::Request<()>,
    body: Bytes,
}

/// When one stream's phases ended and how much response body it carried: several streams
/// share a connection, so their bytes on the wire are apportioned from these.
#[derive(Debug, Default, Clone, Copy)]
pub struct StreamProgress {
    pub sent_at: Option<Instant>,
    pub first_byte_at: Option<Instant>,
    pub data_received: u64,
    pub body_sent: u64,
    /// When the whole response had arrived.
    pub done_at: Option<Instant>,
}

/// One stream's exchange: opens the stream (when the server's stream limit allows), queues the
/// request, then reads the response. It never polls the connection's driver: whoever awaits it
/// drives the connection alongside ([`driven`]), so several streams can wait at once.
async fn exchange_on_stream(
    mut send: h2::client::SendRequest<Bytes>,
    request: StreamRequest,
    keep_body: bool,
    max_body_bytes: u64,
    counts: Rc<WireCounts>,
    progress: &mut StreamProgress,
) -> Result<Response, Failure> {
    let h2_failure = |err: h2::Error| failure(&err, &counts);
    poll_fn(|cx| send.poll_ready(cx)).await.map_err(h2_failure)?;
    let has_body = !request.body.is_empty();
    let (response, mut stream) = send.send_request(request.head, !has_body).map_err(h2_failure)?;
    if has_body {
        progress.body_sent = request.body.len() as u64;
        // Queued whole; h2 sends it as the server's flow-control window allows.
        stream.send_data(request.body, true).map_err(h2_failure)?;
    }
    progress.sent_at = Some(Instant::now());
    let response = response.await.map_err(h2_failure)?;
    progress.first_byte_at = Some(Instant::now());
    let (parts, mut body_stream) = response.into_parts();
    let mut body = KeptBody::new(keep_body, max_body_bytes);
    while let Some(chunk) = body_stream.data().await {
        let chunk = chunk.map_err(h2_failure)?;
        progress.data_received += chunk.len() as u64;
        body.extend(&chunk);
        // Read: the server may send as much again.
        let _ = body_stream.flow_control().release_capacity(chunk.len());
    }
    progress.done_at = Some(Instant::now());
    Ok(Response { status: parts.status, headers: parts.headers, body: Bytes::from(body.into_bytes()?) })
}

/// What one of several concurrent streams ended with. `result` is None when the exchange was
/// cut before this stream finished (the connection ended, or the caller's time ran out).
#[derive(Default)]
pub struct StreamOutcome {
    pub result: Option<Result<Response, Failure>>,
    pub progress: StreamProgress,
    pub wire: WireTiming,
}

/// An h2 error as a KO of a stable kind: the server's GOAWAY or stream reset (a refused stream
/// apart: the server did not process it), a read or write that failed, an HTTP/1 server that
/// does not speak HTTP/2, a response head over the limit HTTP/1.1 has too, or a protocol
/// violation h2 found in what the server sent (it then resets the stream or ends the
/// connection with a GOAWAY of its own, which is not the server's).
fn failure(err: &h2::Error, counts: &WireCounts) -> Failure {
    use h2::Reason;
    let first = counts.first_received.get();
    if counts.received.get() >= 5 && &first == b"HTTP/" {
        return Failure::new(
            "http2_not_supported",
            "the server answered the HTTP/2 connection preface in HTTP/1: it does not speak HTTP/2 with prior \
             knowledge (h2c); leave HTTP/2 off, or use https where it is negotiated",
        );
    }
    if let Some(io) = err.get_io() {
        if let Some(failure) = counts.transport_failure.borrow().as_ref() {
            return failure.clone();
        }
        return Failure::io(io);
    }
    let reason = err.reason().unwrap_or(Reason::PROTOCOL_ERROR);
    if err.is_remote() {
        return if err.is_go_away() {
            Failure::new(
                "goaway",
                format!("the server ended the HTTP/2 connection (GOAWAY {reason:?}) before the response"),
            )
        } else if reason == Reason::REFUSED_STREAM {
            Failure::new(
                "stream_refused",
                "the server refused the stream (RST_STREAM REFUSED_STREAM): it did not process it",
            )
        } else {
            Failure::new("stream_reset", format!("the server reset the stream (RST_STREAM {reason:?})"))
        };
    }
    let since_exchange = counts.received.get().saturating_sub(counts.exchange_start.get());
    let header_block_reasons =
        matches!(reason, Reason::ENHANCE_YOUR_CALM | Reason::COMPRESSION_ERROR | Reason::PROTOCOL_ERROR);
    if err.is_library() && header_block_reasons && since_exchange >= MAX_HEAD_BYTES as u64 {
        // h2 stops a header block at `max_header_list_size`, with a reset, or a GOAWAY when it
        // runs over more CONTINUATION frames than that size needs.
        return Failure::new(
            "invalid_response",
            format!("response head larger than {MAX_HEAD_BYTES} bytes (HTTP/2 {reason:?})"),
        );
    }
    if err.is_library() {
        let what = match reason {
            Reason::FRAME_SIZE_ERROR => "a frame larger than the client allows".to_string(),
            Reason::ENHANCE_YOUR_CALM => {
                "too many frames of a kind (CONTINUATION frames without end, empty DATA frames, resets)".to_string()
            }
            _ => err.to_string(),
        };
        let ended = if err.is_go_away() { "ended the connection" } else { "reset the stream" };
        return Failure::new(
            "http2_protocol",
            format!("the server broke the HTTP/2 protocol ({reason:?}: {what}); horde's client {ended}"),
        );
    }
    Failure::new("http2_protocol", format!("HTTP/2: {err}"))
}

/// Headers HTTP/2 forbids (RFC 9113 8.2.2): the connection's business, not the request's.
/// Host becomes the `:authority` pseudo-header.
fn strip_connection_headers(headers: &mut HeaderMap) {
    for name in [CONNECTION, TRANSFER_ENCODING, UPGRADE, HOST] {
        headers.remove(name);
    }
    headers.remove("keep-alive");
    headers.remove("proxy-connection");
    if headers.get(TE).is_some_and(|te| te != "trailers") {
        headers.remove(TE);
    }
}

impl Http2Connection {
    /// Starts HTTP/2 on a transport just opened (the preface and settings are written).
    pub async fn handshake(opened: OpenedTransport, authority: Arc<str>) -> Result<Http2Connection, Failure> {
        let counts = Rc::new(WireCounts::default());
        let io = CountedTransport { inner: opened.stream, counts: counts.clone(), authority: authority.clone() };
        let (send, driver) = h2::client::Builder::new()
            .max_header_list_size(MAX_HEAD_BYTES as u32)
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW)
            .enable_push(false)
            .handshake::<_, Bytes>(io)
            .await
            .map_err(|err| failure(&err, &counts))?;
        Ok(Http2Connection {
            authority,
            tls: opened.tls,
            send,
            driver,
            ended: None,
            counts,
            _descriptor: opened.descriptor,
        })
    }

    pub fn is_usable_for(&self, authority: &str, tls: bool) -> bool {
        self.ended.is_none() && self.tls == tls && &*self.authority == authority
    }

    /// Whether the server ended the connection (GOAWAY, a close) while the user was idle:
    /// reads what arrived meanwhile without waiting.
    pub fn closed_while_idle(&mut self) -> bool {
        let mut context = Context::from_waker(Waker::noop());
        poll_driver(&mut self.driver, &mut self.ended, &self.counts, &mut context);
        self.ended.is_some()
    }

    /// The request as h2 takes it: the URI carries the pseudo-headers; connection headers go.
    fn stream_request(&self, request: &RequestHead<'_>) -> Result<StreamRequest, Failure> {
        // :authority is the Host header of the user's own when it has one.
        let host = match request.host {
            Some(host) => host,
            None => request.headers.get(HOST).and_then(|h| h.to_str().ok()).unwrap_or(&self.authority),
        };
        let uri = http::Uri::builder()
            .scheme(if self.tls { "https" } else { "http" })
            .authority(host)
            .path_and_query(request.target)
            .build()
            // Not `unsent`: the exchange that asks for it was counted as begun.
            .map_err(|err| Failure::new("invalid_url", format!("{host}{}: {err}", request.target)))?;
        let mut head = http::Request::new(());
        *head.method_mut() = request.method.clone();
        *head.uri_mut() = uri;
        *head.version_mut() = http::Version::HTTP_2;
        let mut headers = request.headers.clone();
        strip_connection_headers(&mut headers);
        *head.headers_mut() = headers;
        Ok(StreamRequest { head, body: Bytes::copy_from_slice(request.body) })
    }

    /// Sends the request on a new stream and reads the whole response.
    pub async fn round_trip(
        &mut self,
        request: RequestHead<'_>,
        keep_body: bool,
        max_body_bytes: u64,
        _keep_headers: KeepHeaders,
        wire: &mut WireTiming,
    ) -> Result<Response, Failure> {
        let stream_request = self.stream_request(&request)?;
        let Http2Connection { send, driver, ended, counts, .. } = self;
        let baseline = (counts.sent.get(), counts.received.get());
        counts.exchange_start.set(baseline.1);
        let mut progress = StreamProgress::default();
        let result = {
            let exchange = std::pin::pin!(exchange_on_stream(
                send.clone(),
                stream_request,
                keep_body,
                max_body_bytes,
                counts.clone(),
                &mut progress
            ));
            driven(driver, ended, counts, wire, baseline, exchange).await
        };
        wire.sent_at = progress.sent_at;
        wire.first_byte_at = progress.first_byte_at;
        // The window updates and the stream's end go out now, not at the next request.
        poll_driver(driver, ended, counts, &mut Context::from_waker(Waker::noop()));
        wire.bytes_sent = counts.sent.get() - baseline.0;
        wire.bytes_received = counts.received.get() - baseline.1;
        let end = || ended.clone().expect("driven returns None only once the connection ended");
        match result {
            None => Err(end()),
            // What the server sent about the stream (a GOAWAY, a reset) says why; otherwise the
            // connection's end says it better than the stream's error (a broken pipe).
            Some(Err(failure)) if matches!(failure.kind, "goaway" | "stream_reset" | "stream_refused") => Err(failure),
            Some(Err(failure)) => Err(ended.clone().unwrap_or(failure)),
            Some(Ok(response)) => Ok(response),
        }
    }

    /// Sends `requests` on concurrent streams of this connection and reads their responses,
    /// filling `outcomes` (one per request, in order) as they complete. The connection's
    /// bytes during the exchange are shared out: each stream gets the body it carried, plus an
    /// equal share of the rest (headers, control frames). Streams unfinished after `timeout`
    /// fail with `timed_out`.
    pub async fn round_trips(
        &mut self,
        requests: Vec<(RequestHead<'_>, bool)>,
        max_body_bytes: u64,
        timeout: std::time::Duration,
        timed_out: &Failure,
        outcomes: &mut [StreamOutcome],
    ) {
        let prepared: Vec<Result<StreamRequest, Failure>> =
            requests.iter().map(|(request, _)| self.stream_request(request)).collect();
        let Http2Connection { send, driver, ended, counts, .. } = self;
        let baseline = (counts.sent.get(), counts.received.get());
        counts.exchange_start.set(baseline.1);
        let mut wire = WireTiming::default();
        {
            let streams = prepared.into_iter().zip(&requests).zip(outcomes.iter_mut()).map(
                |((stream_request, (_, keep_body)), outcome)| {
                    let send = send.clone();
                    let counts = counts.clone();
                    let keep_body = *keep_body;
                    async move {
                        let result = match stream_request {
                            Err(failure) => Err(failure),
                            Ok(stream_request) => {
                                exchange_on_stream(
                                    send,
                                    stream_request,
                                    keep_body,
                                    max_body_bytes,
                                    counts,
                                    &mut outcome.progress,
                                )
                                .await
                            }
                        };
                        outcome.result = Some(result);
                        // A stream that failed ended now, not with the batch.
                        outcome.progress.done_at.get_or_insert_with(Instant::now);
                    }
                },
            );
            let all = std::pin::pin!(futures_util::future::join_all(streams));
            let _ = tokio::time::timeout(timeout, driven(driver, ended, counts, &mut wire, baseline, all)).await;
        }
        poll_driver(driver, ended, counts, &mut Context::from_waker(Waker::noop()));
        share_wire_bytes(counts, baseline, ended, timed_out, outcomes);
    }
}

/// Gives each stream of a concurrent exchange its share of the connection's bytes, and the
/// connection's end as the reason of those it cut.
fn share_wire_bytes(
    counts: &WireCounts,
    baseline: (u64, u64),
    ended: &Option<Failure>,
    timed_out: &Failure,
    outcomes: &mut [StreamOutcome],
) {
    let sent = counts.sent.get() - baseline.0;
    let received = counts.received.get() - baseline.1;
    let streams = outcomes.len().max(1) as u64;
    let bodies_sent: u64 = outcomes.iter().map(|o| o.progress.body_sent).sum();
    let bodies_received: u64 = outcomes.iter().map(|o| o.progress.data_received).sum();
    let (overhead_sent, overhead_received) =
        (sent.saturating_sub(bodies_sent) / streams, received.saturating_sub(bodies_received) / streams);
    for outcome in outcomes.iter_mut() {
        let progress = outcome.progress;
        outcome.wire = WireTiming {
            sent_at: progress.sent_at,
            first_byte_at: progress.first_byte_at,
            bytes_sent: progress.body_sent + overhead_sent,
            bytes_received: progress.data_received + overhead_received,
        };
        // A stream that ended keeps its own outcome (a reset stays a reset, never turned into
        // a GOAWAY that would send it again); one cut short gets the connection's end, or the
        // timeout.
        if outcome.result.is_none() {
            outcome.result = Some(Err(ended.clone().unwrap_or_else(|| timed_out.clone())));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(body_sent: u64, data_received: u64, result: Option<Result<Response, Failure>>) -> StreamOutcome {
        StreamOutcome {
            result,
            progress: StreamProgress { body_sent, data_received, ..StreamProgress::default() },
            wire: WireTiming::default(),
        }
    }

    fn ok() -> Option<Result<Response, Failure>> {
        Some(Ok(Response { status: http::StatusCode::OK, headers: HeaderMap::new(), body: Bytes::new() }))
    }

    #[test]
    fn streams_share_the_connections_bytes_and_keep_their_own_failures() {
        let counts = WireCounts::default();
        counts.sent.set(1_000 + 300);
        counts.received.set(2_000 + 5_000);
        let reset = Failure::new("stream_reset", "reset");
        let mut outcomes = [outcome(100, 4_000, ok()), outcome(0, 1_000, Some(Err(reset))), outcome(0, 0, None)];
        let timed_out = Failure::new("request_timeout", "late");
        share_wire_bytes(&counts, (1_000, 2_000), &None, &timed_out, &mut outcomes);
        // Bodies go to their streams; the rest (headers, control frames) is split evenly.
        let sent: Vec<u64> = outcomes.iter().map(|o| o.wire.bytes_sent).collect();
        let received: Vec<u64> = outcomes.iter().map(|o| o.wire.bytes_received).collect();
        assert_eq!(sent, [100 + 66, 66, 66]);
        assert_eq!(received, [4_000, 1_000, 0]);
        let kinds: Vec<&str> =
            outcomes.iter().map(|o| o.result.as_ref().unwrap().as_ref().err().map_or("ok", |f| f.kind)).collect();
        assert_eq!(kinds, ["ok", "stream_reset", "request_timeout"]);
        // A connection that ended explains the streams it cut, never those that ended.
        let mut outcomes = [outcome(0, 0, Some(Err(Failure::new("stream_reset", "reset")))), outcome(0, 0, None)];
        let goaway = Some(Failure::new("goaway", "bye"));
        share_wire_bytes(&counts, (1_300, 7_000), &goaway, &timed_out, &mut outcomes);
        let kinds: Vec<&str> =
            outcomes.iter().map(|o| o.result.as_ref().unwrap().as_ref().err().map_or("ok", |f| f.kind)).collect();
        assert_eq!(kinds, ["stream_reset", "goaway"]);
    }
}
