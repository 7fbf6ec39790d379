//! The connection a virtual user keeps: HTTP/1.1 (`client`) or HTTP/2 (`http2`), chosen when it
//! is opened, by ALPN on https or by the plan's prior knowledge on http://.

use super::client::{
    open_transport, Connection, Destination, KeepHeaders, OpenTimeouts, OpenTiming, RequestHead, Response, WireTiming,
};
use super::http2::Http2Connection;
use crate::failure::Failure;
use horde_plan::Http2Mode;

/// Prior knowledge over TLS offered h2 alone, and the server would not have it.
fn not_over_tls(authority: &str) -> Failure {
    Failure::new(
        "http2_not_supported",
        format!(
            "{authority} did not pick h2 by ALPN: it does not speak HTTP/2 over TLS (http2 negotiate falls back to \
             HTTP/1.1)"
        ),
    )
}

pub enum UserConnection {
    Http1(Connection),
    /// Boxed: h2's connection state is large, and the HTTP/1.1 user should not carry its size.
    Http2(Box<Http2Connection>),
}

impl UserConnection {
    /// Opens a connection to `destination` speaking what `http2` and the server agree on.
    pub async fn open(
        destination: &Destination<'_>,
        timeouts: OpenTimeouts,
        http2: Http2Mode,
    ) -> Result<(UserConnection, OpenTiming), Failure> {
        let authority = destination.authority.clone();
        let opened = open_transport(destination, timeouts).await.map_err(|failure| match failure.kind {
            "alpn_refused" if http2 == Http2Mode::PriorKnowledge => not_over_tls(&authority),
            _ => failure,
        })?;
        let timing = opened.timing;
        let speaks_http2 = opened.negotiated_http2() || (http2 == Http2Mode::PriorKnowledge && !opened.tls);
        if http2 == Http2Mode::PriorKnowledge && opened.tls && !speaks_http2 {
            return Err(not_over_tls(&authority));
        }
        let connection = if speaks_http2 {
            // The handshake only writes the preface; it is part of opening the connection.
            // Boxed, as the TLS handshake: its state would be part of every opening.
            UserConnection::Http2(Box::new(Box::pin(Http2Connection::handshake(opened, authority)).await?))
        } else {
            UserConnection::Http1(Connection::new(opened, authority))
        };
        Ok((connection, timing))
    }

    pub fn is_http2(&self) -> bool {
        matches!(self, UserConnection::Http2(_))
    }

    pub fn is_usable_for(&self, authority: &str, tls: bool) -> bool {
        match self {
            UserConnection::Http1(c) => c.is_usable_for(authority, tls),
            UserConnection::Http2(c) => c.is_usable_for(authority, tls),
        }
    }

    pub fn closed_while_idle(&mut self) -> bool {
        match self {
            UserConnection::Http1(c) => c.closed_while_idle(),
            UserConnection::Http2(c) => c.closed_while_idle(),
        }
    }

    pub async fn round_trip(
        &mut self,
        request: RequestHead<'_>,
        keep_body: bool,
        max_body_bytes: u64,
        keep_headers: KeepHeaders,
        wire: &mut WireTiming,
    ) -> Result<Response, Failure> {
        match self {
            UserConnection::Http1(c) => c.round_trip(request, keep_body, max_body_bytes, keep_headers, wire).await,
            // Boxed: an HTTP/2 exchange's state (the request as h2 takes it, the stream) is
            // large, and HTTP/1.1 users should not carry its size in their tasks. One
            // allocation beside h2's own per stream.
            UserConnection::Http2(c) => {
                Box::pin(c.round_trip(request, keep_body, max_body_bytes, keep_headers, wire)).await
            }
        }
    }
}
