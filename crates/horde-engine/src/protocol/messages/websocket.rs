//! The WebSocket client, with tokio-tungstenite over the same transport as HTTP (the run's
//! resolver, TCP, rustls), so its opening has the same phases: dns, connect, tls, then the
//! upgrade handshake.

use super::Message;
use crate::failure::Failure;
use crate::protocol::http::client::{open_transport, Destination, OpenTimeouts, OpenTiming, Transport};
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http::HeaderMap;
use std::time::Duration;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{self, protocol::WebSocketConfig};
use tokio_tungstenite::WebSocketStream;

/// How long a close waits for the server's Close frame before dropping the connection.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// Messages larger than this end the socket (`ws_protocol`), so a runaway server cannot fill
/// memory: checks read whole messages.
const MAX_MESSAGE_BYTES: usize = 16 << 20;

pub struct WebSocket {
    stream: WebSocketStream<Transport>,
    _descriptor: crate::descriptors::DescriptorPermit,
}

/// A tungstenite error as a KO of a stable kind.
fn failure(err: tungstenite::Error) -> Failure {
    use tungstenite::Error;
    match err {
        Error::Http(response) => Failure::new(
            "ws_handshake",
            format!("the server answered {} instead of switching to the WebSocket protocol", response.status()),
        ),
        Error::Io(io) => Failure::io(&io),
        Error::ConnectionClosed | Error::AlreadyClosed => Failure::new("socket_closed", "the WebSocket was closed"),
        // The connection ended without a Close frame, between frames or in the middle of one.
        Error::Protocol(tungstenite::error::ProtocolError::ResetWithoutClosingHandshake) => Failure::new(
            "socket_closed",
            "the server closed the connection without closing the WebSocket (no Close frame, maybe in the middle of a \
             message)",
        ),
        Error::Capacity(err) => Failure::new("ws_protocol", format!("WebSocket message too large: {err}")),
        Error::Url(err) => Failure::unsent("invalid_url", err.to_string()),
        other => Failure::new("ws_protocol", format!("WebSocket: {other}")),
    }
}

impl WebSocket {
    /// Opens the connection and makes the opening handshake for `url` (ws:// or wss://).
    pub async fn connect(
        destination: &Destination<'_>,
        timeouts: OpenTimeouts,
        url: &str,
        headers: HeaderMap,
    ) -> Result<(WebSocket, OpenTiming), Failure> {
        let mut request = url.into_client_request().map_err(failure)?;
        request.headers_mut().extend(headers);
        let opened = open_transport(destination, timeouts).await?;
        let timeout = timeouts.connect;
        let config = WebSocketConfig::default().max_message_size(Some(MAX_MESSAGE_BYTES));
        let handshake = tokio_tungstenite::client_async_with_config(request, opened.stream, Some(config));
        let (stream, _response) = match tokio::time::timeout(timeout, handshake).await {
            Ok(result) => result.map_err(failure)?,
            Err(_) => {
                return Err(Failure::new(
                    "ws_handshake",
                    format!("no answer to the WebSocket handshake within {} ms", timeout.as_millis()),
                ))
            }
        };
        Ok((WebSocket { stream, _descriptor: opened.descriptor }, opened.timing))
    }

    pub async fn send(&mut self, message: Message) -> Result<(), Failure> {
        let message = match message {
            Message::Text(text) => tungstenite::Message::text(text),
            Message::Binary(bytes) => tungstenite::Message::binary(bytes),
        };
        self.stream.send(message).await.map_err(failure)
    }

    /// The next text or binary message; pings are answered by tungstenite as they are read.
    pub async fn next(&mut self) -> Result<Bytes, Failure> {
        loop {
            match self.stream.next().await {
                None => return Err(Failure::new("socket_closed", "the server closed the WebSocket")),
                Some(Err(err)) => return Err(failure(err)),
                Some(Ok(tungstenite::Message::Text(text))) => return Ok(Bytes::from(text)),
                Some(Ok(tungstenite::Message::Binary(bytes))) => return Ok(bytes),
                Some(Ok(tungstenite::Message::Close(frame))) => {
                    let reason =
                        frame.map(|f| format!(" ({} {})", f.code, f.reason).replace(" )", ")")).unwrap_or_default();
                    return Err(Failure::new("socket_closed", format!("the server closed the WebSocket{reason}")));
                }
                // Ping, pong, raw frame. A flood of them, read from a buffer, is always ready:
                // the worker's other tasks get their turn now and then.
                Some(Ok(_)) => tokio::task::consume_budget().await,
            }
        }
    }

    /// Sends a Close frame and waits (briefly) for the server's, as the protocol asks.
    pub async fn close(mut self) {
        let closing = async {
            if self.stream.close(None).await.is_ok() {
                while let Some(Ok(_)) = self.stream.next().await {}
            }
        };
        let _ = tokio::time::timeout(CLOSE_WAIT, closing).await;
    }
}
