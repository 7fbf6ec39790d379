//! The HTTP/1.1 client a virtual user owns: one keep-alive connection, metered so that each
//! request's time splits into connect, send, wait and receive, and its bytes are counted on
//! the wire (headers included).

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use std::cell::Cell;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// Why a request failed before a response could be judged. `kind` is the stable key the
/// error is counted under.
#[derive(Debug, Clone)]
pub struct Failure {
    pub kind: &'static str,
    pub message: String,
}

impl Failure {
    pub fn new(kind: &'static str, message: impl Into<String>) -> Failure {
        Failure { kind, message: message.into() }
    }
}

/// What the wire saw of the current request. Shared between the user and its connection's
/// IO; both live on the same worker thread.
#[derive(Default)]
pub struct Meter {
    pub bytes_read: Cell<u64>,
    pub bytes_written: Cell<u64>,
    pub first_read_at: Cell<Option<Instant>>,
    pub last_write_at: Cell<Option<Instant>>,
}

impl Meter {
    /// Forget the marks of the previous request.
    pub fn start_request(&self) {
        self.first_read_at.set(None);
        self.last_write_at.set(None);
    }
}

struct MeteredStream {
    inner: TcpStream,
    meter: Rc<Meter>,
}

impl AsyncRead for MeteredStream {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let read = (buf.filled().len() - before) as u64;
        if read > 0 {
            let meter = &self.meter;
            meter.bytes_read.set(meter.bytes_read.get() + read);
            if meter.first_read_at.get().is_none() {
                meter.first_read_at.set(Some(Instant::now()));
            }
        }
        polled
    }
}

impl MeteredStream {
    fn count_written(&self, polled: &Poll<io::Result<usize>>) {
        if let Poll::Ready(Ok(n)) = polled {
            if *n > 0 {
                self.meter.bytes_written.set(self.meter.bytes_written.get() + *n as u64);
                self.meter.last_write_at.set(Some(Instant::now()));
            }
        }
    }
}

impl AsyncWrite for MeteredStream {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.count_written(&polled);
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.count_written(&polled);
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// One open keep-alive connection.
pub struct Connection {
    pub authority: Arc<str>,
    pub sender: SendRequest<Full<Bytes>>,
    pub meter: Rc<Meter>,
}

impl Connection {
    pub fn is_usable_for(&self, authority: &str) -> bool {
        &*self.authority == authority && !self.sender.is_closed()
    }

    /// Opens a connection to `authority` (`host:port`). The connection's driver runs as a task
    /// of the current worker and ends when the connection is dropped or closed.
    pub async fn open(authority: &Arc<str>, timeout: Duration) -> Result<Connection, Failure> {
        let connecting = async {
            let stream = TcpStream::connect(&**authority).await.map_err(|err| connect_failure(authority, &err))?;
            // Requests are written whole; Nagle would only delay them.
            stream.set_nodelay(true).map_err(|err| connect_failure(authority, &err))?;
            Ok::<_, Failure>(stream)
        };
        let stream = match tokio::time::timeout(timeout, connecting).await {
            Ok(stream) => stream?,
            Err(_) => {
                return Err(Failure::new(
                    "connect_timeout",
                    format!("connecting to {authority} took more than {} ms", timeout.as_millis()),
                ))
            }
        };
        let meter = Rc::new(Meter::default());
        let io = TokioIo::new(MeteredStream { inner: stream, meter: meter.clone() });
        let (sender, driver) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(|err| Failure::new("connect_failed", format!("{authority}: {err}")))?;
        tokio::task::spawn_local(async move {
            // Errors surface on the request that was in flight; nothing to do here.
            let _ = driver.await;
        });
        Ok(Connection { authority: authority.clone(), sender, meter })
    }
}

fn connect_failure(authority: &str, err: &io::Error) -> Failure {
    let kind = match err.kind() {
        io::ErrorKind::ConnectionRefused => "connect_refused",
        io::ErrorKind::TimedOut => "connect_timeout",
        _ => "connect_failed",
    };
    Failure::new(kind, format!("connecting to {authority}: {err}"))
}

/// Maps a hyper error to a stable kind, looking through its causes for the IO error.
pub fn request_failure(err: &hyper::Error) -> Failure {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<io::Error>() {
            let kind = match io.kind() {
                io::ErrorKind::ConnectionReset => "connection_reset",
                io::ErrorKind::BrokenPipe => "connection_reset",
                io::ErrorKind::ConnectionAborted => "connection_reset",
                io::ErrorKind::UnexpectedEof => "connection_closed",
                _ => "io_error",
            };
            return Failure::new(kind, io.to_string());
        }
        source = cause.source();
    }
    if err.is_incomplete_message() || err.is_canceled() || err.is_closed() {
        return Failure::new("connection_closed", "the server closed the connection before responding in full");
    }
    if err.is_parse() {
        return Failure::new("invalid_response", format!("invalid HTTP response: {err}"));
    }
    Failure::new("http_error", err.to_string())
}

/// Reads a response body to its end: kept when a check needs it, otherwise only drained.
pub async fn read_body(body: hyper::body::Incoming, keep: bool) -> Result<Bytes, hyper::Error> {
    if keep {
        return Ok(body.collect().await?.to_bytes());
    }
    let mut body = body;
    while let Some(frame) = body.frame().await {
        frame?;
    }
    Ok(Bytes::new())
}
