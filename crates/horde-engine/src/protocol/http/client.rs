//! The HTTP/1.1 client a virtual user owns: one keep-alive connection, reused buffers, and a
//! request's time split where it happens: connect, send (writing the request), wait (until the
//! first byte of the response) and receive (the rest of it). Bytes are counted on the wire,
//! headers included.
//!
//! Why not hyper's client: measured with callgrind on the same run (bench/RESULTS.md), hyper's
//! connection driver alone cost about 12,900 instructions per request, more than half of
//! horde's per-request work, because it runs as a second task with channels between it and
//! the caller. This client writes a request with one `write` and parses the response with
//! `httparse` in the user's own task, and allocates nothing for a response whose body and
//! headers no check needs.

use super::resolve::Resolver;
use crate::descriptors::DescriptorPermit;
use crate::failure::Failure;
use bytes::Bytes;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::{Method, StatusCode};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

/// A response that breaks the protocol.
fn invalid(message: impl Into<String>) -> Failure {
    Failure::new("invalid_response", message)
}

/// Whether a fresh connection may be tried: the request failed on a reused connection that
/// the server had closed (or reset) before any byte of a response arrived, the shape of a
/// keep-alive connection closed while idle; or the server said it did not process it.
pub fn closed_before_response(failure: &Failure, wire: &WireTiming) -> bool {
    (matches!(failure.kind, "connection_closed" | "connection_reset") || never_processed(failure))
        && wire.first_byte_at.is_none()
}

/// Whether the server said it did not process the request, which may then go again whatever
/// its method and on whatever connection it failed (RFC 9113 8.7): a GOAWAY names the last
/// stream the server will process, so later ones were not; REFUSED_STREAM says so of one.
pub fn never_processed(failure: &Failure) -> bool {
    matches!(failure.kind, "goaway" | "stream_refused")
}

/// Which response headers a caller wants kept. Framing headers are always read; the others
/// cost an allocation each, so only what checks, cookies and redirects use is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeepHeaders {
    All,
    /// Set-Cookie and Location only, and Content-Encoding (to decode a body that is read).
    CookiesAndLocation,
}

/// The request as the client writes it.
pub struct RequestHead<'a> {
    pub method: &'a Method,
    /// Origin form: `/path?query`.
    pub target: &'a str,
    /// The Host header from the URL; None when the request's headers carry their own.
    pub host: Option<&'a str>,
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
}

pub struct Response {
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// Empty unless the caller asked to keep it.
    pub body: Bytes,
}

/// When the phases of one exchange ended, and what crossed the wire.
#[derive(Debug, Clone, Copy, Default)]
pub struct WireTiming {
    pub sent_at: Option<Instant>,
    pub first_byte_at: Option<Instant>,
    pub bytes_sent: u64,
    pub bytes_received: u64,
}

/// Response headers parsed at most (httparse needs a fixed array; 64 covers real sites).
const MAX_HEADERS: usize = 64;
/// The largest response head read, on HTTP/1.1 and on HTTP/2 (its `max_header_list_size`): a
/// larger one is an `invalid_response`.
pub(super) const MAX_HEAD_BYTES: usize = 64 * 1024;
/// A connection's read buffer starts this small (a typical response fits) and doubles when a
/// read would have less than MIN_READ_SPACE: ten thousand idle users cost little memory.
const INITIAL_READ_BUFFER: usize = 2048;
const MIN_READ_SPACE: usize = 512;
/// A buffer that grew past this for a large response is shrunk back after it.
const MAX_KEPT_READ_BUFFER: usize = 64 * 1024;

/// The bytes of a connection: plain TCP, or TLS over it.
pub enum Transport {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl Transport {
    fn tcp(&self) -> &TcpStream {
        match self {
            Transport::Plain(tcp) => tcp,
            Transport::Tls(tls) => tls.get_ref().0,
        }
    }
}

impl AsyncRead for Transport {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(tcp) => Pin::new(tcp).poll_read(cx, buf),
            Transport::Tls(tls) => Pin::new(tls.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Transport {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Transport::Plain(tcp) => Pin::new(tcp).poll_write(cx, buf),
            Transport::Tls(tls) => Pin::new(tls.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(tcp) => Pin::new(tcp).poll_flush(cx),
            Transport::Tls(tls) => Pin::new(tls.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(tcp) => Pin::new(tcp).poll_shutdown(cx),
            Transport::Tls(tls) => Pin::new(tls.as_mut()).poll_shutdown(cx),
        }
    }
}

/// How long opening a connection took, by phase.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenTiming {
    /// Resolving the host name, when it was looked up (not an address, not in the cache).
    pub dns: Option<Duration>,
    pub connect: Duration,
    /// The TLS handshake, for https.
    pub tls: Option<Duration>,
}

impl OpenTiming {
    /// Puts the opening's phases on the request that waited for it.
    pub fn charge(&self, timing: &mut horde_metrics::RequestTiming) {
        let micros = |d: Duration| d.as_micros() as u64;
        timing.dns_us = self.dns.map(micros);
        timing.connect_us = Some(micros(self.connect));
        timing.tls_us = self.tls.map(micros);
    }
}

/// Where a connection goes: the authority, its addresses' source, TLS or not.
pub struct Destination<'a> {
    /// `host:port`.
    pub authority: &'a Arc<str>,
    /// The host alone (no port, no brackets): the server name TLS verifies.
    pub host: &'a str,
    /// The TLS connector, for https.
    pub tls: Option<&'a TlsConnector>,
    pub resolver: &'a Resolver,
}

/// A transport just opened, with what opening it took.
pub struct OpenedTransport {
    pub stream: Transport,
    pub tls: bool,
    pub descriptor: DescriptorPermit,
    pub timing: OpenTiming,
}

impl OpenedTransport {
    /// Whether the server picked HTTP/2 by ALPN in the TLS handshake.
    pub fn negotiated_http2(&self) -> bool {
        match &self.stream {
            Transport::Plain(_) => false,
            Transport::Tls(tls) => tls.get_ref().1.alpn_protocol() == Some(b"h2"),
        }
    }
}

/// How long opening a connection may take: the TCP connection (the name's lookup included),
/// then the TLS handshake, each on its own.
#[derive(Debug, Clone, Copy)]
pub struct OpenTimeouts {
    pub connect: Duration,
    pub tls_handshake: Duration,
}

impl OpenTimeouts {
    /// The protocol's: a TLS handshake may take as long as the connect timeout or the request
    /// timeout allow, whichever is shorter, so that a server which takes the connection and
    /// never answers the ClientHello holds a request no longer than its timeout says.
    pub fn of(protocol: &super::program::HttpProgram) -> OpenTimeouts {
        OpenTimeouts {
            connect: protocol.connect_timeout,
            tls_handshake: protocol.connect_timeout.min(protocol.request_timeout),
        }
    }

    /// The same bound for both.
    pub fn both(timeout: Duration) -> OpenTimeouts {
        OpenTimeouts { connect: timeout, tls_handshake: timeout }
    }
}

/// Opens a TCP connection to `destination`, and TLS over it when it says so.
pub async fn open_transport(destination: &Destination<'_>, timeouts: OpenTimeouts) -> Result<OpenedTransport, Failure> {
    let authority = destination.authority;
    let descriptor = DescriptorPermit::connection().ok_or_else(|| {
        Failure::unsent(
            "too_many_open_files",
            format!(
                "no file descriptor left to connect to {authority}: {} connections are open, the most the \
                 open-file limit allows while keeping some for the results (raise it with ulimit -n)",
                crate::descriptors::connection_capacity()
            ),
        )
    })?;
    let mut timing = OpenTiming::default();
    let connecting = async {
        let (addresses, dns) = destination.resolver.resolve(authority).await?;
        timing.dns = dns;
        let connect_started = Instant::now();
        let stream = connect_any(&addresses, authority).await?;
        timing.connect = connect_started.elapsed();
        // Requests are written whole; Nagle would only delay them.
        stream.set_nodelay(true).map_err(|err| connect_failure(authority, &err))?;
        Ok::<_, Failure>(stream)
    };
    let stream = match tokio::time::timeout(timeouts.connect, connecting).await {
        Ok(stream) => stream?,
        Err(_) => {
            return Err(Failure::new(
                "connect_timeout",
                format!("connecting to {authority} took more than {} ms", timeouts.connect.as_millis()),
            ))
        }
    };
    let stream = match destination.tls {
        None => Transport::Plain(stream),
        Some(connector) => {
            let handshake_started = Instant::now();
            let name = super::tls::server_name(destination.host)?;
            // Boxed: the handshake's state (a whole TLS connection) is large, and would
            // otherwise be part of every opening, cleartext ones included.
            let handshake = Box::pin(connector.connect(name, stream));
            let tls = match tokio::time::timeout(timeouts.tls_handshake, handshake).await {
                Ok(tls) => tls.map_err(|err| super::tls::handshake_failure(destination.host, &err))?,
                Err(_) => {
                    return Err(Failure::new(
                        "tls_handshake_timeout",
                        format!(
                            "no TLS handshake with {authority} within {} ms: the server took the connection but did \
                             not finish the handshake",
                            timeouts.tls_handshake.as_millis()
                        ),
                    ))
                }
            };
            timing.tls = Some(handshake_started.elapsed());
            Transport::Tls(Box::new(tls))
        }
    };
    Ok(OpenedTransport { stream, tls: destination.tls.is_some(), descriptor, timing })
}

/// One open keep-alive connection.
pub struct Connection {
    pub authority: Arc<str>,
    /// Over TLS (https).
    pub tls: bool,
    stream: Transport,
    /// This connection's file descriptor, counted against the process's budget.
    _descriptor: DescriptorPermit,
    /// Kept between requests to avoid allocating.
    write_buffer: Vec<u8>,
    read_buffer: Vec<u8>,
    /// False once the server said `Connection: close`, or the framing left the connection in
    /// an unknown state.
    reusable: bool,
}

/// A response's head as read: what reading its body and reusing the connection depend on.
struct ResponseHead {
    status: StatusCode,
    headers: HeaderMap,
    framing: Framing,
    /// Bytes of the read buffer the head takes; the body starts after them.
    head_len: usize,
    /// The server closes the connection after this response (`Connection: close`, HTTP/1.0).
    closes: bool,
}

impl Connection {
    pub fn is_usable_for(&self, authority: &str, tls: bool) -> bool {
        self.reusable && self.tls == tls && &*self.authority == authority
    }

    /// Whether the server closed this connection (or sent something nobody asked for) while
    /// it sat idle, so that a request must not be written on it. Asks the reactor first: a
    /// peek (which leaves any TLS record where TLS will read it) is made only when it saw
    /// the socket readable.
    pub fn closed_while_idle(&mut self) -> bool {
        let mut context = Context::from_waker(Waker::noop());
        let tcp = self.stream.tcp();
        match tcp.poll_read_ready(&mut context) {
            Poll::Pending => false,
            Poll::Ready(Err(_)) => true,
            Poll::Ready(Ok(())) => {
                let mut byte = [0u8; 1];
                let mut peeked = ReadBuf::new(&mut byte);
                match tcp.poll_peek(&mut context, &mut peeked) {
                    // Nothing to read after all: alive.
                    Poll::Pending => false,
                    // An end of stream or an error: closed.
                    Poll::Ready(Ok(0)) | Poll::Ready(Err(_)) => true,
                    // Bytes before any request: garbage on plain HTTP. Over TLS it may be a
                    // session ticket, which is fine; a close alert is caught by the retry.
                    Poll::Ready(Ok(_)) => !self.tls,
                }
            }
        }
    }

    /// Opens an HTTP/1.1 connection to `destination`.
    pub async fn open(
        destination: &Destination<'_>,
        timeouts: OpenTimeouts,
    ) -> Result<(Connection, OpenTiming), Failure> {
        let opened = open_transport(destination, timeouts).await?;
        let timing = opened.timing;
        Ok((Connection::new(opened, destination.authority.clone()), timing))
    }

    /// An HTTP/1.1 connection over a transport just opened.
    pub fn new(opened: OpenedTransport, authority: Arc<str>) -> Connection {
        Connection {
            authority,
            tls: opened.tls,
            stream: opened.stream,
            _descriptor: opened.descriptor,
            write_buffer: Vec::with_capacity(256),
            read_buffer: Vec::with_capacity(INITIAL_READ_BUFFER),
            reusable: true,
        }
    }

    /// Sends the request and reads the whole response. `wire` is filled in as the exchange
    /// goes, so it holds what happened even when the exchange fails.
    pub async fn round_trip(
        &mut self,
        request: RequestHead<'_>,
        keep_body: bool,
        max_body_bytes: u64,
        keep_headers: KeepHeaders,
        wire: &mut WireTiming,
    ) -> Result<Response, Failure> {
        // Whatever happens next, only a complete exchange leaves the connection reusable.
        self.reusable = false;
        self.write_request(&request);
        if let Err(err) = self.stream.write_all(&self.write_buffer).await {
            return Err(self.io_failure(&err));
        }
        wire.sent_at = Some(Instant::now());
        wire.bytes_sent = self.write_buffer.len() as u64;
        self.read_buffer.clear();

        // 1xx responses precede the real one; skip them. A 101 switches protocols, which
        // this client never asks for.
        let ResponseHead { status, headers, framing, head_len, closes } = loop {
            let head = self.read_head(keep_headers, wire).await?;
            if head.status == StatusCode::SWITCHING_PROTOCOLS {
                return Err(invalid("101 Switching Protocols, but no protocol switch was asked for"));
            }
            if head.status.is_informational() {
                self.read_buffer.drain(..head.head_len);
                continue;
            }
            break head;
        };
        let framing = if *request.method == Method::HEAD
            || status == StatusCode::NO_CONTENT
            || status == StatusCode::NOT_MODIFIED
        {
            Framing::Length(0)
        } else {
            framing
        };
        let mut body = KeptBody::new(keep_body, max_body_bytes);
        let complete = match framing {
            Framing::Length(length) => self.read_sized_body(head_len, length, &mut body, wire).await?,
            Framing::Chunked => self.read_chunked_body(head_len, &mut body, wire).await?,
            Framing::UntilClose => {
                self.read_until_close(head_len, &mut body, wire).await?;
                false
            }
        };
        self.reusable = complete && !closes;
        if self.read_buffer.capacity() > MAX_KEPT_READ_BUFFER {
            self.read_buffer = Vec::with_capacity(INITIAL_READ_BUFFER);
        }
        Ok(Response { status, headers, body: Bytes::from(body.into_bytes()?) })
    }

    /// A read or write that failed, as a KO: what TLS says of it over TLS (the server refused
    /// the client's certificate, under TLS 1.3), otherwise its kind. A TLS server that closes
    /// without a close_notify has closed the connection, in the usual words.
    fn io_failure(&self, err: &io::Error) -> Failure {
        if self.tls {
            if let Some(failure) = super::tls::failure_after_handshake(&self.authority, err) {
                return failure;
            }
            if err.kind() == io::ErrorKind::UnexpectedEof {
                return Failure::closed();
            }
        }
        Failure::io(err)
    }

    fn write_request(&mut self, request: &RequestHead<'_>) {
        let out = &mut self.write_buffer;
        out.clear();
        out.extend_from_slice(request.method.as_str().as_bytes());
        out.push(b' ');
        out.extend_from_slice(request.target.as_bytes());
        out.extend_from_slice(b" HTTP/1.1\r\n");
        // A Host header of the user's own replaces the one from the URL: two would be a 400.
        if let Some(host) = request.host {
            out.extend_from_slice(b"Host: ");
            out.extend_from_slice(host.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        for (name, value) in request.headers {
            out.extend_from_slice(name.as_str().as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        let sends_body =
            !request.body.is_empty() || matches!(*request.method, Method::POST | Method::PUT | Method::PATCH);
        if sends_body && !request.headers.contains_key(http::header::CONTENT_LENGTH) {
            out.extend_from_slice(b"Content-Length: ");
            out.extend_from_slice(itoa_u64(request.body.len() as u64, &mut [0; 20]));
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(request.body);
    }

    /// Reads more bytes into the buffer; an end of stream is an error here.
    async fn fill(&mut self, wire: &mut WireTiming) -> Result<(), Failure> {
        let filled = self.read_buffer.len();
        if self.read_buffer.capacity() - filled < MIN_READ_SPACE {
            self.read_buffer.reserve(self.read_buffer.capacity().max(INITIAL_READ_BUFFER));
        }
        let read = match self.stream.read_buf(&mut self.read_buffer).await {
            Ok(read) => read,
            Err(err) => return Err(self.io_failure(&err)),
        };
        if read == 0 {
            return Err(Failure::closed());
        }
        if wire.first_byte_at.is_none() {
            wire.first_byte_at = Some(Instant::now());
        }
        wire.bytes_received += read as u64;
        Ok(())
    }

    async fn read_head(&mut self, keep_headers: KeepHeaders, wire: &mut WireTiming) -> Result<ResponseHead, Failure> {
        loop {
            if !self.read_buffer.is_empty() {
                let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
                let mut response = httparse::Response::new(&mut slots);
                match response.parse(&self.read_buffer) {
                    Ok(httparse::Status::Complete(head_len)) => {
                        let status = StatusCode::from_u16(response.code.unwrap_or(0))
                            .map_err(|_| invalid(format!("invalid status {:?}", response.code)))?;
                        let http10 = response.version == Some(0);
                        let (headers, framing, closes) = read_headers(response.headers, keep_headers, http10)?;
                        return Ok(ResponseHead { status, headers, framing, head_len, closes });
                    }
                    Ok(httparse::Status::Partial) if self.read_buffer.len() > MAX_HEAD_BYTES => {
                        return Err(invalid(format!("response head larger than {MAX_HEAD_BYTES} bytes")));
                    }
                    Ok(httparse::Status::Partial) => {}
                    Err(httparse::Error::TooManyHeaders) => {
                        return Err(invalid(format!(
                            "the response has more than {MAX_HEADERS} headers, the most horde reads"
                        )))
                    }
                    Err(err) => return Err(invalid(format!("invalid HTTP response: {err}"))),
                }
            }
            self.fill(wire).await?;
        }
    }

    /// Returns whether the connection is still in a known state (no stray bytes).
    async fn read_sized_body(
        &mut self,
        start: usize,
        length: u64,
        body: &mut KeptBody,
        wire: &mut WireTiming,
    ) -> Result<bool, Failure> {
        let mut remaining = length;
        let mut position = start;
        loop {
            let available = (self.read_buffer.len() - position) as u64;
            let take = available.min(remaining) as usize;
            body.extend(&self.read_buffer[position..position + take]);
            remaining -= take as u64;
            position += take;
            if remaining == 0 {
                return Ok(position == self.read_buffer.len());
            }
            // Everything in the buffer was body: start it afresh so it does not grow.
            self.read_buffer.clear();
            position = 0;
            self.fill(wire).await?;
        }
    }

    async fn read_chunked_body(
        &mut self,
        start: usize,
        body: &mut KeptBody,
        wire: &mut WireTiming,
    ) -> Result<bool, Failure> {
        self.read_buffer.drain(..start);
        loop {
            // The chunk-size line.
            let line_end = loop {
                if let Some(end) = find_crlf(&self.read_buffer) {
                    break end;
                }
                if self.read_buffer.len() > 1024 {
                    return Err(invalid("chunk size line too long"));
                }
                self.fill(wire).await?;
            };
            let line = std::str::from_utf8(&self.read_buffer[..line_end]).map_err(|_| invalid("bad chunk size"))?;
            let size_text = line.split(';').next().unwrap_or("").trim();
            let size =
                u64::from_str_radix(size_text, 16).map_err(|_| invalid(format!("bad chunk size {size_text:?}")))?;
            self.read_buffer.drain(..line_end + 2);
            if size == 0 {
                // Trailers, then an empty line.
                loop {
                    if let Some(end) = find_crlf(&self.read_buffer) {
                        self.read_buffer.drain(..end + 2);
                        if end == 0 {
                            return Ok(self.read_buffer.is_empty());
                        }
                        continue;
                    }
                    self.fill(wire).await?;
                }
            }
            // The data, then the CRLF that ends it.
            let mut data_left = size as usize;
            let mut crlf_left = 2;
            loop {
                let take_data = self.read_buffer.len().min(data_left);
                body.extend(&self.read_buffer[..take_data]);
                data_left -= take_data;
                let take_crlf = (self.read_buffer.len() - take_data).min(crlf_left);
                crlf_left -= take_crlf;
                self.read_buffer.drain(..take_data + take_crlf);
                if data_left == 0 && crlf_left == 0 {
                    break;
                }
                self.fill(wire).await?;
            }
        }
    }

    async fn read_until_close(
        &mut self,
        start: usize,
        body: &mut KeptBody,
        wire: &mut WireTiming,
    ) -> Result<(), Failure> {
        body.extend(&self.read_buffer[start..]);
        loop {
            self.read_buffer.clear();
            match self.fill(wire).await {
                Ok(()) => body.extend(&self.read_buffer),
                Err(failure) if failure.kind == "connection_closed" => return Ok(()),
                Err(failure) => return Err(failure),
            }
        }
    }
}

/// The body a caller asked to keep, up to a limit: a body nobody reads is drained without
/// being kept, and one that is kept cannot use more memory than the plan allows.
pub(super) struct KeptBody {
    bytes: Vec<u8>,
    keep: bool,
    limit: u64,
    /// Bytes seen beyond the limit (the rest of the body is still read, to keep the
    /// connection in a known state, but not kept).
    over_limit: bool,
}

impl KeptBody {
    pub fn new(keep: bool, limit: u64) -> KeptBody {
        KeptBody { bytes: Vec::new(), keep, limit, over_limit: false }
    }

    pub fn extend(&mut self, data: &[u8]) {
        if !self.keep || data.is_empty() {
            return;
        }
        let room = self.limit.saturating_sub(self.bytes.len() as u64) as usize;
        if data.len() > room {
            self.over_limit = true;
        }
        self.bytes.extend_from_slice(&data[..data.len().min(room)]);
    }

    pub fn into_bytes(self) -> Result<Vec<u8>, Failure> {
        if self.over_limit {
            return Err(Failure::new(
                "body_too_large",
                format!(
                    "the response body is larger than {} bytes, the most a check may read (protocol max_body_bytes)",
                    self.limit
                ),
            ));
        }
        Ok(self.bytes)
    }
}

/// How the response body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Length(u64),
    Chunked,
    UntilClose,
}

/// The headers worth keeping, the body's framing, and whether the server closes afterwards.
fn read_headers(
    parsed: &[httparse::Header<'_>],
    keep: KeepHeaders,
    http10: bool,
) -> Result<(HeaderMap, Framing, bool), Failure> {
    let mut headers = HeaderMap::new();
    let mut content_length: Option<u64> = None;
    let mut chunked = false;
    let mut close = http10;
    for header in parsed {
        let name = header.name;
        if name.eq_ignore_ascii_case("content-length") {
            // `Content-Length: 5, 5` and repeated equal headers are one length (RFC 9110
            // 8.6); differing lengths leave the message's end unknown.
            for text in header.value.split(|b| *b == b',') {
                let text = std::str::from_utf8(text).unwrap_or("").trim();
                let length: u64 = text.parse().map_err(|_| invalid(format!("bad Content-Length {text:?}")))?;
                if content_length.is_some_and(|seen| seen != length) {
                    return Err(invalid(format!(
                        "conflicting Content-Length headers ({} and {length})",
                        content_length.unwrap_or_default()
                    )));
                }
                content_length = Some(length);
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            if header.value.split(|b| *b == b',').any(|v| v.trim_ascii().eq_ignore_ascii_case(b"chunked")) {
                chunked = true;
            }
        } else if name.eq_ignore_ascii_case("connection") {
            let value = header.value.trim_ascii();
            if value.eq_ignore_ascii_case(b"close") {
                close = true;
            } else if value.eq_ignore_ascii_case(b"keep-alive") {
                close = false;
            }
        }
        let wanted = match keep {
            KeepHeaders::All => true,
            KeepHeaders::CookiesAndLocation => {
                name.eq_ignore_ascii_case("set-cookie")
                    || name.eq_ignore_ascii_case("location")
                    || name.eq_ignore_ascii_case("content-encoding")
            }
        };
        if wanted {
            let name =
                HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid(format!("bad header name {name:?}")))?;
            let value = HeaderValue::from_bytes(header.value).map_err(|_| invalid("bad header value"))?;
            headers.append(name, value);
        }
    }
    let framing = match (chunked, content_length) {
        // Both: chunked decides, and the connection is not trusted with another request
        // (RFC 9112 6.3: a sign of request smuggling).
        (true, Some(_)) => {
            close = true;
            Framing::Chunked
        }
        (true, None) => Framing::Chunked,
        (false, Some(length)) => Framing::Length(length),
        (false, None) => Framing::UntilClose,
    };
    Ok((headers, framing, close))
}

fn find_crlf(buffer: &[u8]) -> Option<usize> {
    buffer.windows(2).position(|w| w == b"\r\n")
}

/// Decimal digits of `n` without allocating.
fn itoa_u64(mut n: u64, buffer: &mut [u8; 20]) -> &[u8] {
    let mut i = buffer.len();
    loop {
        i -= 1;
        buffer[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buffer[i..];
        }
    }
}

/// Connects to the first of `addresses` that answers, in order (IPv6 and IPv4 as the
/// resolver gave them); the error is the last one's.
async fn connect_any(addresses: &[SocketAddr], authority: &str) -> Result<TcpStream, Failure> {
    let mut last = None;
    for address in addresses {
        match TcpStream::connect(address).await {
            Ok(stream) => return Ok(stream),
            Err(err) => last = Some(connect_failure(authority, &err)),
        }
    }
    Err(last.unwrap_or_else(|| Failure::new("dns_failed", format!("{authority} has no address"))))
}

fn connect_failure(authority: &str, err: &io::Error) -> Failure {
    if matches!(err.raw_os_error(), Some(EMFILE | ENFILE)) {
        return Failure::unsent(
            "too_many_open_files",
            format!("connecting to {authority}: {err} (raise the open-file limit with ulimit -n)"),
        );
    }
    let kind = match err.kind() {
        io::ErrorKind::ConnectionRefused => "connect_refused",
        io::ErrorKind::TimedOut => "connect_timeout",
        _ => "connect_failed",
    };
    Failure::new(kind, format!("connecting to {authority}: {err}"))
}

/// errno values of a process (EMFILE) or a system (ENFILE) out of file descriptors.
const ENFILE: i32 = 23;
const EMFILE: i32 = 24;

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpListener;

    /// Serves each canned response in turn on one connection, after reading a request head.
    async fn canned(responses: Vec<&'static [u8]>) -> (Arc<str>, tokio::task::JoinHandle<Vec<Vec<u8>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let authority: Arc<str> = listener.local_addr().unwrap().to_string().into();
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut requests = Vec::new();
            for response in responses {
                let mut request = Vec::new();
                let mut byte = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    let n = socket.read(&mut byte).await.unwrap();
                    if n == 0 {
                        return requests;
                    }
                    request.extend_from_slice(&byte[..n]);
                }
                requests.push(request);
                // Split the response in two writes to exercise partial reads.
                let (a, b) = response.split_at(response.len() / 2);
                socket.write_all(a).await.unwrap();
                socket.flush().await.unwrap();
                tokio::task::yield_now().await;
                socket.write_all(b).await.unwrap();
            }
            requests
        });
        (authority, server)
    }

    /// A plain connection to `authority` (an address: nothing to resolve).
    async fn open(authority: &Arc<str>, timeout: Duration) -> Result<Connection, Failure> {
        let resolver = Resolver::default();
        let destination = Destination { authority, host: "127.0.0.1", tls: None, resolver: &resolver };
        Connection::open(&destination, OpenTimeouts::both(timeout)).await.map(|(connection, _)| connection)
    }

    async fn get(connection: &mut Connection, keep: KeepHeaders) -> Result<Response, Failure> {
        let headers = HeaderMap::new();
        let request =
            RequestHead { method: &Method::GET, target: "/x?y=1", host: Some("example"), headers: &headers, body: b"" };
        connection.round_trip(request, true, 1 << 20, keep, &mut WireTiming::default()).await
    }

    #[tokio::test]
    async fn sized_chunked_and_close_delimited_bodies() {
        let (authority, server) = canned(vec![
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nSet-Cookie: a=1\r\nX-Other: 2\r\n\r\nhello",
            b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nWiki\r\n6\r\npedia \r\n0\r\nTrailer: x\r\n\r\n",
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
        ])
        .await;
        let mut connection = open(&authority, Duration::from_secs(5)).await.unwrap();
        let first = get(&mut connection, KeepHeaders::CookiesAndLocation).await.unwrap();
        assert_eq!((first.status.as_u16(), &first.body[..]), (200, &b"hello"[..]));
        assert_eq!(first.headers.len(), 1, "only Set-Cookie is kept");
        assert!(connection.is_usable_for(&authority, false));
        let second = get(&mut connection, KeepHeaders::All).await.unwrap();
        assert_eq!((second.status.as_u16(), &second.body[..]), (201, &b"Wikipedia "[..]));
        assert!(connection.is_usable_for(&authority, false));
        let third = get(&mut connection, KeepHeaders::All).await.unwrap();
        assert_eq!((third.status.as_u16(), &third.body[..]), (200, &b"ok"[..]));
        assert!(!connection.is_usable_for(&authority, false), "Connection: close ends reuse");
        let requests = server.await.unwrap();
        assert_eq!(requests[0], b"GET /x?y=1 HTTP/1.1\r\nHost: example\r\n\r\n");
    }

    #[tokio::test]
    async fn a_body_until_close_and_an_early_close() {
        let (authority, _server) = canned(vec![b"HTTP/1.0 200 OK\r\n\r\nall of it"]).await;
        let mut connection = open(&authority, Duration::from_secs(5)).await.unwrap();
        let response = get(&mut connection, KeepHeaders::All).await.unwrap();
        assert_eq!(&response.body[..], b"all of it");
        assert!(!connection.is_usable_for(&authority, false));

        let (authority, _server) = canned(vec![b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort"]).await;
        let mut connection = open(&authority, Duration::from_secs(5)).await.unwrap();
        let failure = get(&mut connection, KeepHeaders::All).await.err().unwrap();
        assert_eq!(failure.kind, "connection_closed");
    }

    #[tokio::test]
    async fn garbage_is_an_invalid_response() {
        let (authority, _server) = canned(vec![b"SMTP ready\r\n\r\n"]).await;
        let mut connection = open(&authority, Duration::from_secs(5)).await.unwrap();
        let failure = get(&mut connection, KeepHeaders::All).await.err().unwrap();
        assert_eq!(failure.kind, "invalid_response");
    }

    #[test]
    fn request_heads_carry_a_length_when_a_body_is_sent() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let authority: Arc<str> = listener.local_addr().unwrap().to_string().into();
            let mut connection = open(&authority, Duration::from_secs(1)).await.unwrap();
            let mut headers = HeaderMap::new();
            headers.insert("content-type", HeaderValue::from_static("text/plain"));
            let request =
                RequestHead { method: &Method::POST, target: "/", host: Some("h:1"), headers: &headers, body: b"abc" };
            connection.write_request(&request);
            assert_eq!(
                connection.write_buffer,
                b"POST / HTTP/1.1\r\nHost: h:1\r\ncontent-type: text/plain\r\nContent-Length: 3\r\n\r\nabc"
            );
        });
    }

    /// Bytes a server might send: anything at all, or something shaped like a response with
    /// odd status codes, lengths, framings and bodies.
    fn response_bytes() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let header = prop_oneof![
            (0u64..200).prop_map(|n| format!("Content-Length: {n}")),
            Just("Content-Length: 99999999999999999999".to_string()),
            Just("Content-Length: 5, 6".to_string()),
            Just("Transfer-Encoding: chunked".to_string()),
            Just("Connection: close".to_string()),
            Just("Set-Cookie: a=b; Path=/".to_string()),
            Just("Location: /x".to_string()),
            "[A-Za-z-]{1,8}: [ -~]{0,12}",
        ];
        let shaped = (
            prop_oneof![Just("HTTP/1.1".to_string()), Just("HTTP/1.0".to_string()), "[A-Z/0-9.]{0,9}"],
            0u16..1000,
            proptest::collection::vec(header, 0..6),
            proptest::collection::vec(any::<u8>(), 0..300),
            prop_oneof![
                Just(String::new()),
                (0u32..0xffff_ffff).prop_map(|n| format!("{n:x}\r\nabc\r\n0\r\n\r\n")),
                "[0-9a-fx;\r\n]{0,30}",
            ],
        )
            .prop_map(|(version, status, headers, body, chunks)| {
                let mut out = format!("{version} {status} Reason\r\n").into_bytes();
                for header in headers {
                    out.extend_from_slice(header.as_bytes());
                    out.extend_from_slice(b"\r\n");
                }
                out.extend_from_slice(b"\r\n");
                out.extend_from_slice(chunks.as_bytes());
                out.extend_from_slice(&body);
                out
            });
        prop_oneof![proptest::collection::vec(any::<u8>(), 0..400), shaped]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 300, ..Default::default() })]

        /// Whatever a server sends, then closing the connection, the client ends with a
        /// response or a failure, quickly, and keeps no more body than it may.
        #[test]
        fn any_bytes_from_a_server_end_in_a_response_or_a_failure(bytes in response_bytes()) {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let outcome = runtime.block_on(async move {
                let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
                let authority: Arc<str> = listener.local_addr().unwrap().to_string().into();
                tokio::spawn(async move {
                    let (mut socket, _) = listener.accept().await.unwrap();
                    let mut request = [0u8; 1024];
                    let _ = socket.read(&mut request).await;
                    let _ = socket.write_all(&bytes).await;
                    // Dropped: the server closes.
                });
                let mut connection = open(&authority, Duration::from_secs(2)).await.unwrap();
                let headers = HeaderMap::new();
                let request = RequestHead { method: &Method::GET, target: "/", host: Some("h"), headers: &headers, body: b"" };
                let mut wire = WireTiming::default();
                tokio::time::timeout(
                    Duration::from_secs(5),
                    connection.round_trip(request, true, 64, KeepHeaders::All, &mut wire),
                )
                .await
            });
            let result = outcome.expect("the client never hangs on a closed connection");
            if let Ok(response) = result {
                proptest::prop_assert!(response.body.len() <= 64);
            }
        }
    }
}
