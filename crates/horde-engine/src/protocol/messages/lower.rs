//! Lowering the sockets' steps: each names a socket of the user (a slot per name), its action
//! (open, send, wait, close) and the messages it then awaits, with their checks.

use super::program::{AwaitProgram, MessageProgram, SocketAction, SocketKind, SocketStepProgram, SocketsProgram};
use crate::checks::{CheckProgram, NoSource};
use crate::lower::{LoweringContext, StepAt};
use crate::protocol::http::lower::{request_headers, HttpLowering};
use bytes::Bytes;
use horde_plan::{AwaitMessages, SocketStep};
use std::time::Duration;

/// The names of the sockets the plan's steps use, in the order they first appear.
#[derive(Default)]
pub(crate) struct SocketLowering {
    names: Vec<String>,
}

/// What every socket step has, beside its action.
struct SocketStepParts<'s> {
    kind: SocketKind,
    /// The step's name: its row.
    name: &'s str,
    /// The socket's name: the user's slot.
    socket: &'s str,
    messages: Option<&'s AwaitMessages>,
}

impl SocketLowering {
    /// `http`: the opening is an HTTP request, resolved against its base URL.
    pub(crate) fn lower_step(
        &mut self,
        cx: &mut LoweringContext,
        at: StepAt,
        step: &SocketStep,
        http: &HttpLowering,
    ) -> SocketStepProgram {
        let path = at.path;
        let (parts, action) = match step {
            SocketStep::WsConnect(connect) | SocketStep::SseConnect(connect) => {
                let kind = match step {
                    SocketStep::WsConnect(_) => SocketKind::WebSocket,
                    _ => SocketKind::EventStream,
                };
                let headers = request_headers(cx, path, &connect.headers);
                let action =
                    SocketAction::Connect { url: cx.template(&connect.url), base: http.base_url.clone(), headers };
                let parts = SocketStepParts {
                    kind,
                    name: &connect.name,
                    socket: &connect.socket,
                    messages: connect.await_messages.as_ref(),
                };
                (parts, action)
            }
            SocketStep::WsSend(send) => {
                let action = match (&send.text, &send.binary_base64) {
                    (Some(text), _) => SocketAction::SendText(cx.template(text)),
                    (None, Some(data)) => {
                        use base64::Engine;
                        let bytes = base64::engine::general_purpose::STANDARD.decode(data).unwrap_or_else(|err| {
                            cx.error(format!("{path}.binary_base64"), err.to_string());
                            Vec::new()
                        });
                        SocketAction::SendBinary(Bytes::from(bytes))
                    }
                    (None, None) => SocketAction::SendText(cx.template("")),
                };
                let parts = SocketStepParts {
                    kind: SocketKind::WebSocket,
                    name: &send.name,
                    socket: &send.socket,
                    messages: send.await_messages.as_ref(),
                };
                (parts, action)
            }
            SocketStep::WsAwait(wait) | SocketStep::SseAwait(wait) => {
                let kind = match step {
                    SocketStep::WsAwait(_) => SocketKind::WebSocket,
                    _ => SocketKind::EventStream,
                };
                let messages = Some(&wait.await_messages);
                (SocketStepParts { kind, name: &wait.name, socket: &wait.socket, messages }, SocketAction::Await)
            }
            SocketStep::WsClose(close) | SocketStep::SseClose(close) => {
                let kind = match step {
                    SocketStep::WsClose(_) => SocketKind::WebSocket,
                    _ => SocketKind::EventStream,
                };
                (
                    SocketStepParts { kind, name: &close.name, socket: &close.socket, messages: None },
                    SocketAction::Close,
                )
            }
        };
        self.socket_step(cx, at, parts, action)
    }

    fn socket_step(
        &mut self,
        cx: &mut LoweringContext,
        at: StepAt,
        parts: SocketStepParts,
        action: SocketAction,
    ) -> SocketStepProgram {
        let path = at.path;
        let socket = match self.names.iter().position(|s| s == parts.socket) {
            Some(slot) => slot,
            None => {
                self.names.push(parts.socket.to_string());
                self.names.len() - 1
            }
        };
        let row_id = cx.row(at.row_name(parts.name));
        let await_messages = parts.messages.map(|messages| AwaitProgram {
            timeout: Duration::from_millis(messages.timeout_ms),
            messages: messages
                .messages
                .iter()
                .enumerate()
                .map(|(i, message)| {
                    let path = format!("{path}.await.messages[{i}]");
                    let checks = |cx: &mut LoweringContext,
                                  kind: &str,
                                  checks: &[horde_plan::Check]|
                     -> Vec<CheckProgram<NoSource>> {
                        checks
                            .iter()
                            .enumerate()
                            .filter_map(|(j, check)| cx.check(&format!("{path}.{kind}[{j}]"), check))
                            .collect()
                    };
                    MessageProgram {
                        row_id: cx.row(at.row_name(&message.name)),
                        matching: checks(cx, "matching", &message.matching),
                        checks: checks(cx, "checks", &message.checks),
                    }
                })
                .collect(),
        });
        SocketStepProgram { kind: parts.kind, socket, row_id, action, await_messages }
    }

    pub(crate) fn finish(self) -> SocketsProgram {
        SocketsProgram { names: self.names }
    }
}
