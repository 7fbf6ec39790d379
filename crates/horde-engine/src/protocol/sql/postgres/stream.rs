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
    /// Writes what the socket takes now without waiting (the Terminate on drop); over TLS,
    /// which cannot write outside a task, nothing.
    pub fn try_write_now(&self, bytes: &[u8]) {
        let _ = match self {
            PgStream::Tcp(tcp) => tcp.try_write(bytes),
            PgStream::Unix(unix) => unix.try_write(bytes),
            PgStream::Tls(_) => return,
        };
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
