//! The sockets' part of the Program: their steps as lowered, and the names of the sockets a
//! user holds. Lowering them is `lower.rs`'s.

use crate::checks::{CheckProgram, NoSource};
use crate::protocol::http::program::HeaderProgram;
use crate::session::expression::Template;
use bytes::Bytes;
use std::time::Duration;
use url::Url;

/// What the sockets need for the whole run.
pub struct SocketsProgram {
    /// Names of the sockets (WebSockets, event streams) steps use; each user has a slot for each.
    pub names: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketKind {
    WebSocket,
    EventStream,
}

impl SocketKind {
    pub fn describe(self) -> &'static str {
        match self {
            SocketKind::WebSocket => "WebSocket",
            SocketKind::EventStream => "event stream",
        }
    }
}

/// A step on a socket a virtual user holds, by name.
pub struct SocketStepProgram {
    pub kind: SocketKind,
    /// Index of the socket's name in [`SocketsProgram::names`]: the user's slot for it.
    pub socket: usize,
    /// The step's row: the opening's timing, and errors of the step itself.
    pub row_id: usize,
    pub action: SocketAction,
    pub await_messages: Option<AwaitProgram>,
}

pub enum SocketAction {
    Connect {
        url: Template,
        base: Option<Url>,
        headers: Vec<HeaderProgram>,
    },
    SendText(Template),
    SendBinary(Bytes),
    /// Wait only.
    Await,
    Close,
}

pub struct AwaitProgram {
    pub timeout: Duration,
    pub messages: Vec<MessageProgram>,
}

pub struct MessageProgram {
    pub row_id: usize,
    pub matching: Vec<CheckProgram<NoSource>>,
    pub checks: Vec<CheckProgram<NoSource>>,
}
