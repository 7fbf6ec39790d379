//! The server-sent events client: a GET with `Accept: text/event-stream` over HTTP/1.1 (hyper's
//! client connection, on the same transport as HTTP), its body read as it arrives and parsed
//! into events (`event_parser`). The connection's driver is polled in the user's own task,
//! alongside the body it feeds, as for HTTP/2.

use super::event_parser::{EventParser, EventTooLarge};
use crate::failure::Failure;
use crate::protocol::http::client::{open_transport, Destination, OpenTimeouts, OpenTiming, Transport};
use bytes::Bytes;
use http::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE, HOST};
use http::{HeaderMap, HeaderValue, Method};
use http_body_util::Empty;
use hyper::body::{Body, Incoming};
use hyper_util::rt::TokioIo;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::Poll;

type Driver = hyper::client::conn::http1::Connection<TokioIo<Transport>, Empty<Bytes>>;

/// An event whose lines run past this without ending ends the stream (`sse_event_too_large`):
/// the parser holds an event until its blank line, and a server that never sends one must not
/// fill the memory. As large as WebSocket messages may be.
const MAX_EVENT_BYTES: u64 = 16 << 20;

pub struct EventStream {
    /// Kept, and polled, until it ends: it reads the body off the wire.
    driver: Option<Pin<Box<Driver>>>,
    /// Why the connection failed, when it did: the body then only says "connection error".
    driver_error: Option<hyper::Error>,
    body: Incoming,
    parser: EventParser,
    _descriptor: crate::descriptors::DescriptorPermit,
}

fn hyper_failure(err: hyper::Error) -> Failure {
    if err.is_incomplete_message() || err.is_closed() {
        return Failure::new("socket_closed", "the server closed the event stream");
    }
    match std::error::Error::source(&err).and_then(|e| e.downcast_ref::<std::io::Error>()) {
        Some(io) => Failure::io(io),
        None => Failure::new("invalid_response", format!("event stream: {err}")),
    }
}

/// Polls `operation` while driving the connection, keeping the connection's error.
async fn driven<T>(
    driver: &mut Option<Pin<Box<Driver>>>,
    driver_error: &mut Option<hyper::Error>,
    mut operation: impl FnMut(&mut std::task::Context<'_>) -> Poll<T>,
) -> T {
    poll_fn(|cx| {
        if let Some(connection) = driver.as_mut() {
            if let Poll::Ready(result) = connection.as_mut().poll(cx) {
                *driver = None;
                *driver_error = result.err();
            }
        }
        operation(cx)
    })
    .await
}

impl EventStream {
    /// Opens the connection, sends the GET and waits for the response's headers: a 2xx with
    /// Content-Type text/event-stream, or a KO saying what came instead.
    pub async fn connect(
        destination: &Destination<'_>,
        timeouts: OpenTimeouts,
        url: &url::Url,
        target: &crate::protocol::http::program::Target,
        headers: HeaderMap,
    ) -> Result<(EventStream, OpenTiming), Failure> {
        let opened = open_transport(destination, timeouts).await?;
        let timing = opened.timing;
        let timeout = timeouts.connect;
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake::<_, Empty<Bytes>>(TokioIo::new(opened.stream))
                .await
                .map_err(hyper_failure)?;
        let mut driver = Some(Box::pin(connection));
        let mut driver_error = None;
        let path_and_query = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_string(),
        };
        let mut request = http::Request::new(Empty::<Bytes>::new());
        *request.method_mut() = Method::GET;
        *request.uri_mut() =
            path_and_query.parse().map_err(|err| Failure::unsent("invalid_url", format!("{url}: {err}")))?;
        let request_headers = request.headers_mut();
        let host =
            HeaderValue::from_str(&target.host_header).map_err(|_| Failure::unsent("invalid_url", url.to_string()))?;
        request_headers.insert(HOST, host);
        request_headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        request_headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        // The user's own replace the defaults; repeated ones all go.
        for name in headers.keys() {
            request_headers.remove(name);
        }
        request_headers.extend(headers);
        let mut response = std::pin::pin!(sender.send_request(request));
        let waiting = driven(&mut driver, &mut driver_error, |cx| response.as_mut().poll(cx));
        let response = match tokio::time::timeout(timeout, waiting).await {
            Ok(result) => result.map_err(hyper_failure)?,
            Err(_) => {
                return Err(Failure::new(
                    "request_timeout",
                    format!("no answer to the event stream's request within {} ms", timeout.as_millis()),
                ))
            }
        };
        let status = response.status();
        if !status.is_success() {
            return Err(Failure::new("sse_refused", format!("the server answered {status}, not an event stream")));
        }
        let content_type = response.headers().get(CONTENT_TYPE).and_then(|t| t.to_str().ok()).unwrap_or("");
        if !content_type.trim_start().to_ascii_lowercase().starts_with("text/event-stream") {
            return Err(Failure::new(
                "sse_refused",
                format!("the server answered with Content-Type {content_type:?}, not text/event-stream"),
            ));
        }
        Ok((
            EventStream {
                driver,
                driver_error,
                body: response.into_body(),
                parser: EventParser::new(MAX_EVENT_BYTES),
                _descriptor: opened.descriptor,
            },
            timing,
        ))
    }

    /// The next event, as checks read it: JSON `{"event", "id", "data"}` (Gatling's shape).
    pub async fn next(&mut self) -> Result<Bytes, Failure> {
        let EventStream { driver, driver_error, body, parser, .. } = self;
        loop {
            match parser.next_event() {
                Err(EventTooLarge) => {
                    return Err(Failure::new(
                        "sse_event_too_large",
                        format!("more than {MAX_EVENT_BYTES} bytes of the stream without the end of an event"),
                    ))
                }
                Ok(Some(event)) => {
                    let json = serde_json::json!({ "event": event.event, "id": event.id, "data": event.data });
                    return Ok(Bytes::from(json.to_string()));
                }
                Ok(None) => {}
            }
            // A server may send without end lines that make no event (comments, empty
            // events), and the body is read from a channel that is always ready then: the
            // worker's other tasks and the wait's timeout get their turn now and then.
            tokio::task::consume_budget().await;
            let frame = driven(driver, driver_error, |cx| Pin::new(&mut *body).poll_frame(cx)).await;
            match frame {
                None => return Err(Failure::new("socket_closed", "the server ended the event stream")),
                // The connection's own error names the cause; the body's is generic.
                Some(Err(err)) => return Err(hyper_failure(driver_error.take().unwrap_or(err))),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        parser.feed(data);
                    }
                }
            }
        }
    }
}
