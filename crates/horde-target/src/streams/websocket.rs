//! WebSockets over HTTP/1.1's upgrade: `/ws/echo` sends every text and binary message back
//! unchanged; `/ws/ticker` pushes a cadence of messages, then closes. tungstenite checks the
//! handshake, frames the messages and answers pings and closes itself.

use super::{tick, Cadence};
use crate::server::{full, Body, Shared};
use futures_util::{SinkExt, StreamExt};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode, Version};
use hyper_util::rt::TokioIo;
use std::time::Duration;
use tokio::time::{sleep_until, timeout, Instant};
use tokio_tungstenite::tungstenite::handshake::server::create_response_with_body;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// A peer silent for this long is let go, so an abandoned socket does not stay open for ever.
const IDLE: Duration = Duration::from_secs(300);
/// How long a closing socket waits for the peer's answer to its Close.
const CLOSING: Duration = Duration::from_secs(5);
/// Messages (and frames) larger than this end the connection: memory per socket is bounded.
const MAX_MESSAGE_BYTES: usize = 16 << 20;

type Socket = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

/// What a socket does once it is open.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Behaviour {
    Echo,
    Ticker(Cadence),
}

/// Answers the upgrade request (101, or 400 saying what is wrong with it) and, once hyper has
/// handed over the connection, runs the socket in a task of its own.
pub(crate) fn upgrade(request: &mut Request<Incoming>, behaviour: Behaviour, state: Shared) -> Response<Body> {
    // tungstenite would take an HTTP/2 request (its check is "at least 1.1"), but a WebSocket
    // over HTTP/2 needs extended CONNECT (RFC 8441), which is not served.
    if request.version() != Version::HTTP_11 {
        return refused(format!("a WebSocket needs an HTTP/1.1 upgrade, not {:?}", request.version()));
    }
    let response = match create_response_with_body(request, || full("")) {
        Ok(response) => response,
        Err(err) => return refused(format!("not a WebSocket handshake: {err}")),
    };
    let on_upgrade = hyper::upgrade::on(request);
    tokio::spawn(async move {
        // The client went away before the switch, or the upgrade failed: nothing to serve.
        let Ok(upgraded) = on_upgrade.await else {
            return;
        };
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_MESSAGE_BYTES))
            .max_frame_size(Some(MAX_MESSAGE_BYTES));
        let socket = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(config)).await;
        state.count(|stats| stats.ws_connections += 1);
        match behaviour {
            Behaviour::Echo => echo(socket, &state).await,
            Behaviour::Ticker(cadence) => ticker(socket, cadence, &state).await,
        }
    });
    response
}

fn refused(message: String) -> Response<Body> {
    let mut response = Response::new(full(message));
    *response.status_mut() = StatusCode::BAD_REQUEST;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

/// Sends back every text and binary message until the peer closes, fails or stays silent for
/// `IDLE`. Pings are answered, and a Close is answered, by tungstenite as the socket is read.
async fn echo(mut socket: Socket, state: &Shared) {
    loop {
        let message = match timeout(IDLE, socket.next()).await {
            Ok(Some(Ok(message))) => message,
            // The stream ends once the closing handshake is done, or the connection failed.
            Ok(None) | Ok(Some(Err(_))) => return,
            Err(_) => return close(socket, CloseCode::Away, "idle").await,
        };
        if message.is_text() || message.is_binary() {
            if socket.send(message).await.is_err() {
                return;
            }
            state.count(|stats| stats.ws_messages_echoed += 1);
        }
    }
}

/// Pushes `cadence.count` ticks, the first at once, then closes normally. Meanwhile it reads
/// what the peer sends, so pings are answered and a Close from the peer ends it early. The
/// count bounds it; no idle limit is needed.
async fn ticker(mut socket: Socket, cadence: Cadence, state: &Shared) {
    let mut sent = 0;
    let mut next = Instant::now();
    while sent < cadence.count {
        tokio::select! {
            () = sleep_until(next) => {
                sent += 1;
                if socket.send(Message::text(tick(sent))).await.is_err() {
                    return;
                }
                state.count(|stats| stats.ws_messages_pushed += 1);
                next += cadence.interval;
            }
            incoming = socket.next() => match incoming {
                Some(Ok(Message::Close(_))) => return drain(socket).await,
                Some(Ok(_)) => {}
                None | Some(Err(_)) => return,
            },
        }
    }
    close(socket, CloseCode::Normal, "").await;
}

/// Sends a Close and waits (bounded) for the peer's, so the closing handshake completes.
async fn close(mut socket: Socket, code: CloseCode, reason: &'static str) {
    let frame = CloseFrame { code, reason: reason.into() };
    if socket.close(Some(frame)).await.is_ok() {
        drain(socket).await;
    }
}

/// Reads until the socket ends, which sends tungstenite's queued answer to a Close, for at
/// most `CLOSING`.
async fn drain(mut socket: Socket) {
    let _ = timeout(CLOSING, async { while let Some(Ok(_)) = socket.next().await {} }).await;
}
