//! Why a request, a message or a statement failed: a stable kind, the key it is counted under
//! (never a formatted string: the number of keys stays bounded), the message of its first
//! occurrence, and whether anything went out at all. Every protocol fails this way; each names
//! its own kinds.

use std::io;

#[derive(Debug, Clone)]
pub struct Failure {
    pub kind: &'static str,
    pub message: String,
    /// Nothing went on the wire: the request is counted, but not in the latency statistics.
    pub unsent: bool,
}

impl Failure {
    pub fn new(kind: &'static str, message: impl Into<String>) -> Failure {
        Failure { kind, message: message.into(), unsent: false }
    }

    /// A request that failed before anything was sent.
    pub fn unsent(kind: &'static str, message: impl Into<String>) -> Failure {
        Failure { kind, message: message.into(), unsent: true }
    }

    /// A connection's read or write failed.
    pub fn io(err: &io::Error) -> Failure {
        let kind = match err.kind() {
            io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionAborted => {
                "connection_reset"
            }
            io::ErrorKind::UnexpectedEof => "connection_closed",
            _ => "io_error",
        };
        Failure::new(kind, err.to_string())
    }

    /// The peer closed the connection before the answer was whole.
    pub fn closed() -> Failure {
        Failure::new("connection_closed", "the server closed the connection before the response was complete")
    }
}
