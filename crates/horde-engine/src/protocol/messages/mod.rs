//! Message protocols: WebSockets (`websocket`) and server-sent event streams (`event_stream`),
//! sockets a virtual user opens, holds by name and closes, as in Gatling's `ws(...)` and
//! `sse(...)`. What both share lives here: the user's sockets, and waiting for expected
//! messages with checks and a timeout.
//!
//! Rows: a socket's opening is timed on its step's row (dns, connect and tls phases, then the
//! handshake); each expected message has its own row, whose latency runs from the start of the
//! wait (the end of the send or the opening it follows) to the message's arrival. A message that
//! does not come in time is a KO `message_timeout` on its row, and so are those expected after it.

mod event_parser;
mod event_stream;
pub(crate) mod lower;
pub(crate) mod program;
mod websocket;

use crate::checks::{run_checks_on, BodyExtractor, BodyView, CheckSubject, NoSource};
use crate::failure::Failure;
use crate::protocol::http::client::{Destination, OpenTimeouts};
use crate::protocol::http::program::Target;
use crate::user::{Flow, VirtualUser};
use bytes::Bytes;
use event_stream::EventStream;
use horde_metrics::RequestTiming;
use program::{AwaitProgram, SocketAction, SocketKind, SocketStepProgram};
use tokio::time::Instant;
use url::Url;
use websocket::WebSocket;

pub(crate) enum Message {
    Text(String),
    Binary(Bytes),
}

/// A socket a virtual user holds.
pub(crate) enum OpenSocket {
    WebSocket(Box<WebSocket>),
    Events(Box<EventStream>),
}

impl OpenSocket {
    fn kind(&self) -> SocketKind {
        match self {
            OpenSocket::WebSocket(_) => SocketKind::WebSocket,
            OpenSocket::Events(_) => SocketKind::EventStream,
        }
    }

    async fn next(&mut self) -> Result<Bytes, Failure> {
        match self {
            OpenSocket::WebSocket(socket) => socket.next().await,
            OpenSocket::Events(events) => events.next().await,
        }
    }
}

fn micros(from: Instant, to: Instant) -> u64 {
    to.saturating_duration_since(from).as_micros() as u64
}

/// The timing of an opening or a message: timed as a whole from `from` to `to`, without send,
/// wait and receive phases.
fn whole(from: Instant, to: Instant, bytes_received: u64) -> RequestTiming {
    let us = micros(from, to);
    RequestTiming { latency_us: us, uncorrected_us: us, bytes_received, without_phases: true, ..Default::default() }
}

impl VirtualUser {
    /// One step on a socket: open, send, wait or close; then wait for its expected messages.
    async fn socket_step(&mut self, step: &SocketStepProgram) -> Flow {
        let sends = matches!(
            step.action,
            SocketAction::Connect { .. } | SocketAction::SendText(_) | SocketAction::SendBinary(_)
        );
        if sends && self.ctx.limits.fenced() {
            return Flow::Exhausted;
        }
        if self.protocols.sockets.is_empty() {
            self.protocols.sockets.resize_with(self.ctx.program.protocols.sockets.names.len(), || None);
        }
        let since = match &step.action {
            SocketAction::Connect { .. } => match self.open_socket(step).await {
                Ok(opened_at) => opened_at,
                Err(()) => return self.after_failure(),
            },
            SocketAction::SendText(template) => {
                let text = match template.render(&mut self.session) {
                    Ok(text) => text,
                    Err(error) => {
                        let (failure, detail) = self.expression_failure(error);
                        self.record_unsent(step.row_id, &failure, detail, None);
                        return self.after_failure();
                    }
                };
                match self.send(step, Message::Text(text)).await {
                    Ok(sent_at) => sent_at,
                    Err(()) => return self.after_failure(),
                }
            }
            SocketAction::SendBinary(bytes) => match self.send(step, Message::Binary(bytes.clone())).await {
                Ok(sent_at) => sent_at,
                Err(()) => return self.after_failure(),
            },
            SocketAction::Await => Instant::now(),
            SocketAction::Close => {
                if let Some(OpenSocket::WebSocket(socket)) = self.protocols.sockets[step.socket].take() {
                    socket.close().await;
                }
                return Flow::Next;
            }
        };
        match &step.await_messages {
            Some(expected) => self.await_messages(step, expected, since).await,
            None => Flow::Next,
        }
    }

    /// The step's socket, open and of its kind; otherwise a KO on the step's row, unsent.
    fn open_socket_of(&mut self, step: &SocketStepProgram) -> Result<&mut OpenSocket, ()> {
        let name = &self.ctx.program.protocols.sockets.names[step.socket];
        let problem = match &self.protocols.sockets[step.socket] {
            None => format!("the {} {name:?} is not open", step.kind.describe()),
            Some(socket) if socket.kind() != step.kind => {
                format!("{name:?} is a {}, not a {}", socket.kind().describe(), step.kind.describe())
            }
            Some(_) => return Ok(self.protocols.sockets[step.socket].as_mut().expect("checked above")),
        };
        self.record_unsent(step.row_id, &Failure::unsent("socket_not_open", problem), 0, None);
        Err(())
    }

    async fn send(&mut self, step: &SocketStepProgram, message: Message) -> Result<Instant, ()> {
        let timeout = self.ctx.program.protocols.http.request_timeout;
        let Ok(OpenSocket::WebSocket(socket)) = self.open_socket_of(step) else { return Err(()) };
        // A server that stops reading would hold the send (and the user) for ever.
        let sent = tokio::time::timeout(timeout, socket.send(message))
            .await
            .unwrap_or_else(|_| Err(crate::protocol::http::request::request_timed_out(timeout)));
        match sent {
            Ok(()) => {
                if self.ctx.measures(Instant::now()) {
                    self.ctx.metrics.borrow_mut().connections.messages_sent += 1;
                }
                Ok(Instant::now())
            }
            Err(failure) => {
                // No latency to give it: a send has none. Counted as a KO of the step's row.
                self.protocols.sockets[step.socket] = None;
                self.record_unsent(step.row_id, &failure, 0, None);
                Err(())
            }
        }
    }

    /// Opens the step's socket (replacing one of the same name), timed on its row.
    async fn open_socket(&mut self, step: &SocketStepProgram) -> Result<Instant, ()> {
        let SocketAction::Connect { url, base, headers } = &step.action else { unreachable!("a connect step") };
        let rendered = url.render(&mut self.session).map_err(|e| self.expression_failure(e));
        let headers = rendered.and_then(|url| Ok((url, self.render_headers(headers)?)));
        let (url, headers) = match headers {
            Ok(rendered) => rendered,
            Err((failure, detail)) => {
                self.record_unsent(step.row_id, &failure, detail, None);
                return Err(());
            }
        };
        let (url, target) = match socket_url(&url, base.as_ref(), step.kind) {
            Ok(parsed) => parsed,
            Err(message) => {
                self.record_unsent(step.row_id, &Failure::unsent("invalid_url", message), 0, None);
                return Err(());
            }
        };
        self.protocols.sockets[step.socket] = None;
        let started = Instant::now();
        let measured = self.ctx.measures(started);
        if measured {
            self.ctx.metrics.borrow_mut().row(step.row_id).started += 1;
        }
        let protocol = &self.ctx.program.protocols.http;
        let connector = target.tls.then(|| protocol.tls.http1_connector());
        let destination = Destination {
            authority: &target.authority,
            host: &target.host,
            tls: connector.as_ref(),
            resolver: &protocol.resolver,
        };
        let opened = match step.kind {
            SocketKind::WebSocket => {
                WebSocket::connect(&destination, OpenTimeouts::of(protocol), url.as_str(), headers)
                    .await
                    .map(|(socket, timing)| (OpenSocket::WebSocket(Box::new(socket)), timing))
            }
            SocketKind::EventStream => {
                EventStream::connect(&destination, OpenTimeouts::of(protocol), &url, &target, headers)
                    .await
                    .map(|(events, timing)| (OpenSocket::Events(Box::new(events)), timing))
            }
        };
        let end = Instant::now();
        let mut timing = whole(started, end, 0);
        match opened {
            Ok((socket, opening)) => {
                opening.charge(&mut timing);
                if measured {
                    let mut metrics = self.ctx.metrics.borrow_mut();
                    metrics.connections.opened += 1;
                    match step.kind {
                        SocketKind::WebSocket => metrics.connections.websockets += 1,
                        SocketKind::EventStream => metrics.connections.event_streams += 1,
                    }
                }
                self.protocols.sockets[step.socket] = Some(socket);
                self.record_ok(step.row_id, started, &timing, Some(url.as_str()));
                Ok(end)
            }
            Err(failure) => {
                // Counted as begun above: an outcome with its timing, even if nothing was sent.
                let failure = Failure { unsent: false, ..failure };
                self.record_failure(step.row_id, started, &timing, &failure, 0, Some(url.as_str()));
                Err(())
            }
        }
    }

    /// Waits for the expected messages in order, each the first message passing its
    /// `matching` checks (others are skipped), then checked; all within the timeout.
    async fn await_messages(&mut self, step: &SocketStepProgram, expected: &AwaitProgram, since: Instant) -> Flow {
        if self.open_socket_of(step).is_err() {
            return self.after_failure();
        }
        let deadline = since + expected.timeout;
        if self.ctx.measures(since) {
            let mut metrics = self.ctx.metrics.borrow_mut();
            for message in &expected.messages {
                metrics.row(message.row_id).started += 1;
            }
        }
        for (index, message) in expected.messages.iter().enumerate() {
            let socket = self.protocols.sockets[step.socket].as_mut().expect("checked open above");
            let timed_out = || {
                Failure::new("message_timeout", format!("no such message within {} ms", expected.timeout.as_millis()))
            };
            let received = loop {
                let next = match tokio::time::timeout_at(deadline, socket.next()).await {
                    Err(_) => Err(timed_out()),
                    Ok(next) => next,
                };
                let text = match next {
                    Ok(text) => text,
                    Err(failure) => break Err(failure),
                };
                let now = Instant::now();
                if self.ctx.measures(now) {
                    self.ctx.metrics.borrow_mut().connections.messages_received += 1;
                }
                let mut view = MessageView(BodyView::new(&text));
                if run_checks_on(&message.matching, &mut view, &mut self.session).is_ok() {
                    break Ok(text);
                }
                // A socket whose messages come faster than they are read is always ready, and
                // the timeout above is only looked at when it is not: the deadline is checked
                // here too, and the worker's other tasks (its stop signal, its snapshots) get
                // their turn now and then.
                if now >= deadline {
                    break Err(timed_out());
                }
                tokio::task::consume_budget().await;
            };
            let end = Instant::now();
            let text = match received {
                Ok(text) => text,
                Err(failure) => {
                    if failure.kind != "message_timeout" {
                        // The socket is gone: a later step finds it closed.
                        self.protocols.sockets[step.socket] = None;
                    }
                    for missed in &expected.messages[index..] {
                        self.record_failure(missed.row_id, since, &whole(since, end, 0), &failure, 0, None);
                    }
                    return self.after_failure();
                }
            };
            let timing = whole(since, end, text.len() as u64);
            let mut view = MessageView(BodyView::new(&text));
            if let Err(failure) = run_checks_on(&message.checks, &mut view, &mut self.session) {
                let detail = failure.detail;
                let failure = Failure::new("check_failed", failure.message);
                self.record_failure(message.row_id, since, &timing, &failure, detail, None);
                for missed in &expected.messages[index + 1..] {
                    let failure =
                        Failure::new("message_not_awaited", "an earlier message of the wait failed its check");
                    self.record_failure(missed.row_id, since, &timing, &failure, 0, None);
                }
                return self.after_failure();
            }
            self.record_ok(message.row_id, since, &timing, None);
        }
        Flow::Next
    }
}

impl VirtualUser {
    /// Closes the WebSockets the user still holds at the end of its journey, politely (a
    /// Close frame, a bounded wait for the server's), as a browser leaving the page does;
    /// event streams are simply ended.
    pub(super) async fn close_sockets(&mut self) {
        for socket in self.protocols.sockets.iter_mut().filter_map(Option::take) {
            if let OpenSocket::WebSocket(socket) = socket {
                socket.close().await;
            }
        }
    }
}

/// The socket's URL, absolute, in its protocol's scheme (a WebSocket URL relative to an http
/// base becomes ws), and the target its connection goes to.
fn socket_url(text: &str, base: Option<&Url>, kind: SocketKind) -> Result<(Url, Target), String> {
    let mut url = match base {
        Some(base) => base.join(text),
        None => Url::parse(text),
    }
    .map_err(|err| format!("{text:?}: {err}"))?;
    let (http_scheme, socket_scheme) = match (url.scheme(), kind) {
        ("ws" | "http", SocketKind::WebSocket) => ("http", "ws"),
        ("wss" | "https", SocketKind::WebSocket) => ("https", "wss"),
        ("http", SocketKind::EventStream) => ("http", "http"),
        ("https", SocketKind::EventStream) => ("https", "https"),
        (scheme, kind) => return Err(format!("{text:?}: a {} cannot use {scheme}://", kind.describe())),
    };
    let _ = url.set_scheme(socket_scheme);
    let mut http_url = url.clone();
    let _ = http_url.set_scheme(http_scheme);
    let target = Target::from_url(http_url)?;
    Ok((url, target))
}

/// Runs a socket step.
pub(crate) async fn run_step(step: &SocketStepProgram, user: &mut VirtualUser) -> Flow {
    user.socket_step(step).await
}

/// A message as checks see it: its text, the only source a message has.
struct MessageView<'a>(BodyView<'a>);

impl CheckSubject for MessageView<'_> {
    type Own = NoSource;

    fn body_values(&mut self, source: &BodyExtractor, limit: usize) -> Result<Vec<crate::session::Value>, String> {
        self.0.values(source, limit)
    }

    fn own_values(&mut self, source: &NoSource, _limit: usize) -> Result<Vec<crate::session::Value>, String> {
        match *source {}
    }
}

/// The variables a socket step saves: its awaited messages' checks.
pub(crate) fn saved_variables(step: &horde_plan::SocketStep, save: &mut dyn FnMut(&str)) {
    use horde_plan::{SocketAwait, SocketConnect, SocketStep, WsSend};
    let messages = match step {
        SocketStep::WsConnect(SocketConnect { await_messages, .. })
        | SocketStep::SseConnect(SocketConnect { await_messages, .. })
        | SocketStep::WsSend(WsSend { await_messages, .. }) => await_messages.as_ref(),
        SocketStep::WsAwait(SocketAwait { await_messages, .. })
        | SocketStep::SseAwait(SocketAwait { await_messages, .. }) => Some(await_messages),
        SocketStep::WsClose(_) | SocketStep::SseClose(_) => None,
    };
    for message in messages.into_iter().flat_map(|m| &m.messages) {
        message.checks.iter().filter_map(|c| c.save_as.as_deref()).for_each(&mut *save);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_urls_take_their_protocol_scheme() {
        let base = Url::parse("https://site.example/app/").unwrap();
        let (url, target) = socket_url("chat", Some(&base), SocketKind::WebSocket).unwrap();
        assert_eq!(
            (url.as_str(), target.tls, &*target.authority),
            ("wss://site.example/app/chat", true, "site.example:443")
        );
        let (url, target) = socket_url("ws://127.0.0.1:9/echo", None, SocketKind::WebSocket).unwrap();
        assert_eq!((url.as_str(), target.tls), ("ws://127.0.0.1:9/echo", false));
        let (url, _) = socket_url("/events", Some(&base), SocketKind::EventStream).unwrap();
        assert_eq!(url.as_str(), "https://site.example/events");
        assert!(socket_url("ws://127.0.0.1:9/", None, SocketKind::EventStream).is_err());
    }
}
