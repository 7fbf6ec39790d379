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

use super::client::{KeepHeaders, KeptBody, OpenedTransport, RequestHead, Response, Transport, WireTiming};
use crate::descriptors::DescriptorPermit;
use crate::failure::Failure;
use bytes::Bytes;
use http::header::{HeaderMap, CONNECTION, HOST, TE, TRANSFER_ENCODING, UPGRADE};
use std::cell::Cell;
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
}

/// The connection's transport, counting what crosses it.
struct CountedTransport {
    inner: Transport,
    counts: Rc<WireCounts>,
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
            Ok(()) => Failure::new("goaway", "the server ended the HTTP/2 connection (GOAWAY)"),
            Err(err) => failure(&err, counts),
        });
    }
}

/// Waits for `operation` while driving the connection; the wire counts are brought up to date
/// at every wake-up, so a request that times out still has its bytes.
async fn driven<T>(
    driver: &mut Driver,
    ended: &mut Option<Failure>,
    counts: &WireCounts,
    wire: &mut WireTiming,
    baseline: (u64, u64),
    mut operation: impl FnMut(&mut Context<'_>) -> Poll<Result<T, h2::Error>>,
) -> Result<T, Failure> {
    poll_fn(|cx| {
        poll_driver(driver, ended, counts, cx);
        wire.bytes_sent = counts.sent.get() - baseline.0;
        wire.bytes_received = counts.received.get() - baseline.1;
        match operation(cx) {
            Poll::Ready(result) => Poll::Ready(result.map_err(|err| ended.clone().unwrap_or_else(|| failure(&err, counts)))),
            Poll::Pending => match ended {
                Some(end) => Poll::Ready(Err(end.clone())),
                None => Poll::Pending,
            },
        }
    })
    .await
}

/// An h2 error as a KO of a stable kind: the server's GOAWAY or stream reset, a read or write
/// that failed, an HTTP/1 server that does not speak HTTP/2, or a protocol violation.
fn failure(err: &h2::Error, counts: &WireCounts) -> Failure {
    let first = counts.first_received.get();
    if counts.received.get() >= 5 && &first == b"HTTP/" {
        return Failure::new(
            "http2_not_supported",
            "the server answered the HTTP/2 connection preface in HTTP/1: it does not speak HTTP/2 with prior \
             knowledge (h2c); leave HTTP/2 off, or use https where it is negotiated",
        );
    }
    if let Some(io) = err.get_io() {
        return Failure::io(io);
    }
    let reason = err.reason().map(|r| format!("{r:?}")).unwrap_or_default();
    if err.is_go_away() {
        Failure::new("goaway", format!("the server ended the HTTP/2 connection (GOAWAY {reason}) before the response"))
    } else if err.is_reset() && err.is_remote() {
        Failure::new("stream_reset", format!("the server reset the stream (RST_STREAM {reason})"))
    } else {
        Failure::new("http2_protocol", format!("HTTP/2: {err}"))
    }
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
        let io = CountedTransport { inner: opened.stream, counts: counts.clone() };
        let (send, driver) = h2::client::Builder::new()
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW)
            .enable_push(false)
            .handshake::<_, Bytes>(io)
            .await
            .map_err(|err| failure(&err, &counts))?;
        Ok(Http2Connection { authority, tls: opened.tls, send, driver, ended: None, counts, _descriptor: opened.descriptor })
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

    /// Sends the request on a new stream and reads the whole response.
    pub async fn round_trip(
        &mut self,
        request: RequestHead<'_>,
        keep_body: bool,
        max_body_bytes: u64,
        _keep_headers: KeepHeaders,
        wire: &mut WireTiming,
    ) -> Result<Response, Failure> {
        let Http2Connection { send, driver, ended, counts, tls, authority, .. } = self;
        let baseline = (counts.sent.get(), counts.received.get());
        // :authority is the Host header of the user's own when it has one.
        let host = match request.host {
            Some(host) => host,
            None => request.headers.get(HOST).and_then(|h| h.to_str().ok()).unwrap_or(authority),
        };
        let uri = http::Uri::builder()
            .scheme(if *tls { "https" } else { "http" })
            .authority(host)
            .path_and_query(request.target)
            .build()
            .map_err(|err| Failure::unsent("invalid_url", format!("{host}{}: {err}", request.target)))?;
        let mut outgoing = http::Request::new(());
        *outgoing.method_mut() = request.method.clone();
        *outgoing.uri_mut() = uri;
        *outgoing.version_mut() = http::Version::HTTP_2;
        let mut headers = request.headers.clone();
        strip_connection_headers(&mut headers);
        *outgoing.headers_mut() = headers;

        driven(driver, ended, counts, wire, baseline, |cx| send.poll_ready(cx)).await?;
        let has_body = !request.body.is_empty();
        let (response, mut stream) =
            send.send_request(outgoing, !has_body).map_err(|err| ended.clone().unwrap_or_else(|| failure(&err, counts)))?;
        if has_body {
            // Queued whole; h2 sends it as the server's flow-control window allows.
            stream
                .send_data(Bytes::copy_from_slice(request.body), true)
                .map_err(|err| failure(&err, counts))?;
        }
        // One turn of the driver writes the request's frames: sending is done.
        poll_driver(driver, ended, counts, &mut Context::from_waker(Waker::noop()));
        wire.sent_at = Some(Instant::now());
        let mut response = std::pin::pin!(response);
        let response = driven(driver, ended, counts, wire, baseline, |cx| response.as_mut().poll(cx)).await?;
        wire.first_byte_at = Some(Instant::now());
        let (parts, mut body_stream) = response.into_parts();
        let mut body = KeptBody::new(keep_body, max_body_bytes);
        loop {
            let chunk = driven(driver, ended, counts, wire, baseline, |cx| match body_stream.poll_data(cx) {
                Poll::Ready(Some(result)) => Poll::Ready(result.map(Some)),
                Poll::Ready(None) => Poll::Ready(Ok(None)),
                Poll::Pending => Poll::Pending,
            })
            .await?;
            let Some(chunk) = chunk else { break };
            body.extend(&chunk);
            // Read: the server may send as much again.
            let _ = body_stream.flow_control().release_capacity(chunk.len());
        }
        // The window updates and the stream's end go out now, not at the next request.
        poll_driver(driver, ended, counts, &mut Context::from_waker(Waker::noop()));
        wire.bytes_sent = counts.sent.get() - baseline.0;
        wire.bytes_received = counts.received.get() - baseline.1;
        Ok(Response { status: parts.status, headers: parts.headers, body: Bytes::from(body.into_bytes()?) })
    }
}
