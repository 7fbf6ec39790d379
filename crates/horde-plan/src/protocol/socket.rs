//! WebSocket and server-sent events: sockets a user holds open, messages sent and awaited.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::validate::Validator;
use crate::{Check, NameValue};

/// The sockets' steps (WebSocket and server-sent events): one family of [`crate::Step`].
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum SocketStep {
    /// Open a WebSocket (`ws://`, `wss://`) the virtual user holds until `ws_close` or its end
    /// (Gatling's `ws(name).connect(url)`); the row `name` times the opening handshake.
    WsConnect(SocketConnect),
    /// Send a message on a WebSocket: `text` (templated) or `binary_base64`.
    WsSend(WsSend),
    /// Wait for messages on a WebSocket, with checks.
    WsAwait(SocketAwait),
    /// Close a WebSocket (a Close frame, then the server's).
    WsClose(SocketClose),
    /// Open a server-sent event stream (`GET` with `Accept: text/event-stream`, Gatling's
    /// `sse(name).get(url)`); the row `name` times it until the response's headers.
    SseConnect(SocketConnect),
    /// Wait for events on a stream, with checks.
    SseAwait(SocketAwait),
    /// Close an event stream.
    SseClose(SocketClose),
}

fn default_socket() -> String {
    "default".into()
}

/// Opening a WebSocket or an event stream.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SocketConnect {
    /// The row of the opening.
    pub name: String,
    /// Which of the user's sockets (a user may hold several, by name).
    #[serde(default = "default_socket")]
    pub socket: String,
    /// `ws://`, `wss://` (WebSocket) or `http://`, `https://` (event stream); or relative to
    /// the protocol's `base_url` (a WebSocket then swaps http for ws). May hold templates.
    pub url: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<NameValue>,
    /// Messages to wait for once open.
    #[serde(default, rename = "await", skip_serializing_if = "Option::is_none")]
    pub await_messages: Option<AwaitMessages>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WsSend {
    /// Names the step in errors (a socket that is not open).
    pub name: String,
    #[serde(default = "default_socket")]
    pub socket: String,
    /// A text message, templated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A binary message, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary_base64: Option<String>,
    /// Messages to wait for once sent; their latency counts from the end of sending.
    #[serde(default, rename = "await", skip_serializing_if = "Option::is_none")]
    pub await_messages: Option<AwaitMessages>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SocketAwait {
    pub name: String,
    #[serde(default = "default_socket")]
    pub socket: String,
    #[serde(rename = "await")]
    pub await_messages: AwaitMessages,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SocketClose {
    pub name: String,
    #[serde(default = "default_socket")]
    pub socket: String,
}

/// Messages expected, in order, within `timeout_ms` of the wait's start (Gatling's
/// `await(timeout)(checks...)`). Each gets a row: its latency from the wait's start.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AwaitMessages {
    pub timeout_ms: u64,
    pub messages: Vec<ExpectedMessage>,
}

/// One expected message: the first that passes `matching` (others are skipped), then checked by
/// `checks`. Checks read the message's text (a WebSocket message; an event as JSON
/// `{"event", "id", "data"}`): substring, regex, jsonpath, css.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ExpectedMessage {
    /// The row of this message.
    pub name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matching: Vec<Check>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Check>,
}

// Validation: every problem with its plan path, in the order the plan reads.

pub(crate) fn validate_step(v: &mut Validator, path: &str, step: &SocketStep) {
    // The handshake is HTTP: a relative URL takes the protocol's base_url.
    let has_base_url = v.plan.protocol.base_url.is_some();
    match step {
        SocketStep::WsConnect(step) => socket_connect(v, path, step, true, has_base_url),
        SocketStep::SseConnect(step) => socket_connect(v, path, step, false, has_base_url),
        SocketStep::WsSend(step) => {
            socket_name(v, path, &step.name, &step.socket);
            match (&step.text, &step.binary_base64) {
                (Some(text), None) => v.template(&format!("{path}.text"), text),
                (None, Some(data)) => {
                    if !is_base64(data) {
                        v.error(format!("{path}.binary_base64"), "is not base64");
                    }
                }
                _ => v.error(path, "a message is text or binary_base64, one of the two"),
            }
            if let Some(messages) = &step.await_messages {
                await_messages(v, &format!("{path}.await"), messages);
            }
        }
        SocketStep::WsAwait(step) | SocketStep::SseAwait(step) => {
            socket_name(v, path, &step.name, &step.socket);
            await_messages(v, &format!("{path}.await"), &step.await_messages);
        }
        SocketStep::WsClose(step) | SocketStep::SseClose(step) => socket_name(v, path, &step.name, &step.socket),
    }
}

fn socket_name(v: &mut Validator, path: &str, name: &str, socket: &str) {
    if name.trim().is_empty() {
        v.error(format!("{path}.name"), "a step needs a name");
    }
    if socket.trim().is_empty() {
        v.error(format!("{path}.socket"), "a socket needs a name");
    }
}

fn socket_connect(v: &mut Validator, path: &str, step: &SocketConnect, websocket: bool, has_base_url: bool) {
    socket_name(v, path, &step.name, &step.socket);
    socket_url(v, &format!("{path}.url"), &step.url, websocket, has_base_url);
    for (i, header) in step.headers.iter().enumerate() {
        super::http::validate_header(v, &format!("{path}.headers[{i}]"), &header.name, &header.value);
    }
    if let Some(messages) = &step.await_messages {
        await_messages(v, &format!("{path}.await"), messages);
    }
}

fn socket_url(v: &mut Validator, path: &str, url: &str, websocket: bool, has_base_url: bool) {
    let schemes: &[&str] = if websocket { &["ws://", "wss://"] } else { &["http://", "https://"] };
    let lower = url.to_ascii_lowercase();
    if url.is_empty() {
        v.error(path, "a URL is needed");
    } else if url.contains("://") {
        if !schemes.iter().any(|s| lower.starts_with(s)) {
            v.error(path, format!("{url:?}: only {} URLs are supported here", schemes.join(" and ")));
        }
    } else if !has_base_url && !super::http::starts_with_template(url) {
        v.error(path, format!("{url:?} is relative but the protocol has no base_url"));
    }
    v.template(path, url);
}

fn await_messages(v: &mut Validator, path: &str, messages: &AwaitMessages) {
    if messages.timeout_ms == 0 {
        v.error(format!("{path}.timeout_ms"), "must be more than 0");
    }
    if messages.messages.is_empty() {
        v.error(format!("{path}.messages"), "wait for at least one message");
    }
    for (i, message) in messages.messages.iter().enumerate() {
        let path = format!("{path}.messages[{i}]");
        if message.name.trim().is_empty() {
            v.error(format!("{path}.name"), "a message needs a name (its row)");
        }
        for (kind, checks) in [("matching", &message.matching), ("checks", &message.checks)] {
            for (j, check) in checks.iter().enumerate() {
                let path = format!("{path}.{kind}[{j}]");
                if !check.source.reads_body_only() {
                    v.error(
                        format!("{path}.source"),
                        "a message has no status, headers, location, response time or rows: check its text",
                    );
                }
                if kind == "matching" && check.save_as.is_some() {
                    // Skipped messages would save values too.
                    v.error(format!("{path}.save_as"), "matching checks only choose the message: save from checks");
                }
                v.check(&path, check);
            }
        }
    }
}

fn is_base64(text: &str) -> bool {
    let text = text.trim_end_matches('=');
    text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}
