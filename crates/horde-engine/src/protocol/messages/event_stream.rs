//! The server-sent events client: a GET with `Accept: text/event-stream` over HTTP/1.1 (hyper's
//! client connection, on the same transport as HTTP), its body read as it arrives and parsed
//! into events by eventsource-stream. The connection's driver is polled in the user's own
//! task, alongside the body it feeds, as for HTTP/2.

use crate::failure::Failure;
use crate::protocol::http::client::{open_transport, Destination, OpenTiming, Transport};
use bytes::Bytes;
use eventsource_stream::{EventStream as EventParser, Eventsource};
use futures_util::Stream;
use http::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE, HOST};
use http::{HeaderMap, HeaderValue, Method};
use http_body_util::{BodyDataStream, BodyExt, Empty};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

type Driver = hyper::client::conn::http1::Connection<TokioIo<Transport>, Empty<Bytes>>;

pub struct EventStream {
    /// Kept, and polled, until it ends: it reads the body off the wire.
    driver: Option<Pin<Box<Driver>>>,
    events: EventParser<BodyDataStream<Incoming>>,
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

/// Polls `operation` while driving the connection.
async fn driven<T>(driver: &mut Option<Pin<Box<Driver>>>, mut operation: impl FnMut(&mut std::task::Context<'_>) -> Poll<T>) -> T {
    poll_fn(|cx| {
        if let Some(connection) = driver.as_mut() {
            if connection.as_mut().poll(cx).is_ready() {
                // Done or failed: the body says which, as it ends.
                *driver = None;
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
        timeout: Duration,
        url: &url::Url,
        headers: HeaderMap,
    ) -> Result<(EventStream, OpenTiming), Failure> {
        let opened = open_transport(destination, timeout).await?;
        let timing = opened.timing;
        let (mut sender, connection) = hyper::client::conn::http1::handshake::<_, Empty<Bytes>>(TokioIo::new(opened.stream))
            .await
            .map_err(hyper_failure)?;
        let mut driver = Some(Box::pin(connection));
        let target = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_string(),
        };
        let mut request = http::Request::new(Empty::<Bytes>::new());
        *request.method_mut() = Method::GET;
        *request.uri_mut() = target.parse().map_err(|err| Failure::unsent("invalid_url", format!("{url}: {err}")))?;
        let request_headers = request.headers_mut();
        request_headers.insert(HOST, HeaderValue::from_str(destination.authority).expect("an authority is a header value"));
        request_headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        request_headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        for (name, value) in headers {
            if let Some(name) = name {
                request_headers.insert(name, value);
            }
        }
        let mut response = std::pin::pin!(sender.send_request(request));
        let waiting = driven(&mut driver, |cx| response.as_mut().poll(cx));
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
        let events = response.into_body().into_data_stream().eventsource();
        Ok((EventStream { driver, events, _descriptor: opened.descriptor }, timing))
    }

    /// The next event, as checks read it: JSON `{"event", "id", "data"}` (Gatling's shape).
    pub async fn next(&mut self) -> Result<Bytes, Failure> {
        let EventStream { driver, events, .. } = self;
        let mut events = Pin::new(events);
        let event = driven(driver, |cx| events.as_mut().poll_next(cx)).await;
        match event {
            None => Err(Failure::new("socket_closed", "the server ended the event stream")),
            Some(Err(eventsource_stream::EventStreamError::Transport(err))) => Err(hyper_failure(err)),
            Some(Err(err)) => Err(Failure::new("invalid_response", format!("event stream: {err}"))),
            Some(Ok(event)) => {
                let json = serde_json::json!({ "event": event.event, "id": event.id, "data": event.data });
                Ok(Bytes::from(json.to_string()))
            }
        }
    }
}
