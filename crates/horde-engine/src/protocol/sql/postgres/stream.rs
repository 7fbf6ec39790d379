//! The byte stream a PostgreSQL connection runs on: TCP, TCP inside TLS, or a Unix socket.
//! One enum rather than a boxed trait object: the hot path (TCP) stays a direct call.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};
use tokio_rustls::client::TlsStream;

pub enum PgStream {
    Tcp(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
    Unix(UnixStream),
}

impl PgStream {
    /// Writes what the socket takes now without waiting (the Terminate on drop). Over TLS the
    /// bytes go into a record, followed by the close_notify alert, so the server sees a clean
    /// end rather than an unexpected EOF.
    pub fn try_write_now(&mut self, bytes: &[u8]) {
        match self {
            PgStream::Tcp(tcp) => {
                let _ = tcp.try_write(bytes);
            }
            PgStream::Unix(unix) => {
                let _ = unix.try_write(bytes);
            }
            PgStream::Tls(tls) => {
                use std::io::Write;
                let (tcp, session) = tls.get_mut();
                if session.writer().write_all(bytes).is_ok() {
                    session.send_close_notify();
                }
                while session.wants_write() {
                    match session.write_tls(&mut WriteWithoutWaiting(tcp)) {
                        Ok(written) if written > 0 => {}
                        _ => break,
                    }
                }
            }
        }
    }

    /// Whether writes wait in a buffer until flushed (TLS records).
    pub fn buffers_writes(&self) -> bool {
        matches!(self, PgStream::Tls(_))
    }
}

impl AsyncRead for PgStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            PgStream::Tcp(tcp) => Pin::new(tcp).poll_read(cx, buf),
            PgStream::Tls(tls) => Pin::new(tls.as_mut()).poll_read(cx, buf),
            PgStream::Unix(unix) => Pin::new(unix).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for PgStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            PgStream::Tcp(tcp) => Pin::new(tcp).poll_write(cx, buf),
            PgStream::Tls(tls) => Pin::new(tls.as_mut()).poll_write(cx, buf),
            PgStream::Unix(unix) => Pin::new(unix).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            PgStream::Tcp(tcp) => Pin::new(tcp).poll_flush(cx),
            PgStream::Tls(tls) => Pin::new(tls.as_mut()).poll_flush(cx),
            PgStream::Unix(unix) => Pin::new(unix).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            PgStream::Tcp(tcp) => Pin::new(tcp).poll_shutdown(cx),
            PgStream::Tls(tls) => Pin::new(tls.as_mut()).poll_shutdown(cx),
            PgStream::Unix(unix) => Pin::new(unix).poll_shutdown(cx),
        }
    }
}

/// A socket written only as far as it takes bytes now: rustls's records on drop, outside any
/// task.
struct WriteWithoutWaiting<'a>(&'a TcpStream);

impl std::io::Write for WriteWithoutWaiting<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.try_write(bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
