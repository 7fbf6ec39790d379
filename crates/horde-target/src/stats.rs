//! What the target has seen, as `/stats` serves it.

use std::collections::BTreeMap;

/// What the server has seen. Tests compare it with what horde reports.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// Every request except those to `/stats`.
    pub total: u64,
    /// Requests per route, keyed `METHOD /route` (`GET /api/items/{id}`).
    pub by_route: BTreeMap<String, u64>,
    /// POSTs refused for a missing or stale ViewState.
    pub view_state_rejections: u64,
    pub logins: u64,
    pub uploads: u64,
    /// Bytes of the files received by `/upload`.
    pub upload_bytes: u64,
    pub sessions: u64,
    /// Valid JSON documents POSTed to /api/echo.
    pub json_documents: u64,
    /// WebSocket connections upgraded (echo and ticker).
    pub ws_connections: u64,
    /// Text and binary messages sent back by `/ws/echo`.
    pub ws_messages_echoed: u64,
    /// Messages pushed by `/ws/ticker`.
    pub ws_messages_pushed: u64,
    /// Event streams started by `/sse/events`.
    pub sse_streams: u64,
    /// Events sent on them.
    pub sse_events: u64,
    /// TLS handshakes completed (connections to `/stats` included: a connection is counted
    /// before anyone knows what it will ask).
    pub tls_connections: u64,
    /// Connections whose first request was HTTP/2 (by ALPN or h2c prior knowledge).
    pub http2_connections: u64,
    /// `/oauth/authorize`'s codes, `/oauth/token`'s tokens, and its refusals of a code not
    /// given or used already.
    pub oauth_codes_given: u64,
    pub oauth_tokens_given: u64,
    pub oauth_invalid_grants: u64,
    /// Token requests whose PKCE verifier answered their code's challenge, and authorizations
    /// that sent a challenge seen before.
    pub oauth_pkce_verified: u64,
    pub oauth_pkce_challenges_reused: u64,
    /// Writes accepted by `/eventual/{key}` (PUT or POST, 202).
    pub eventual_writes: u64,
    /// Reads of `/eventual/{key}` that found a visible body (200) ...
    pub eventual_reads_found: u64,
    /// ... and those that found none yet (404).
    pub eventual_reads_not_found: u64,
    /// Tokens given by `POST /api/login`.
    pub api_logins: u64,
    /// Lists of orders served by `GET /api/orders` ...
    pub orders_listed: u64,
    /// ... orders served by `GET /api/orders/{id}` ...
    pub orders_read: u64,
    /// ... and orders cancelled by `POST /api/orders/{id}/cancel` (200; not the 409s).
    pub orders_cancelled: u64,
    /// `/api/orders` requests refused for a missing, malformed or unknown bearer token (401).
    pub unauthorized: u64,
}

impl Stats {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "total": self.total,
            "by_route": self.by_route,
            "view_state_rejections": self.view_state_rejections,
            "logins": self.logins,
            "uploads": self.uploads,
            "upload_bytes": self.upload_bytes,
            "sessions": self.sessions,
            "json_documents": self.json_documents,
            "ws_connections": self.ws_connections,
            "ws_messages_echoed": self.ws_messages_echoed,
            "ws_messages_pushed": self.ws_messages_pushed,
            "sse_streams": self.sse_streams,
            "sse_events": self.sse_events,
            "tls_connections": self.tls_connections,
            "http2_connections": self.http2_connections,
            "eventual_writes": self.eventual_writes,
            "eventual_reads_found": self.eventual_reads_found,
            "eventual_reads_not_found": self.eventual_reads_not_found,
            "api_logins": self.api_logins,
            "orders_listed": self.orders_listed,
            "orders_read": self.orders_read,
            "orders_cancelled": self.orders_cancelled,
            "unauthorized": self.unauthorized,
            "oauth_codes_given": self.oauth_codes_given,
            "oauth_tokens_given": self.oauth_tokens_given,
            "oauth_invalid_grants": self.oauth_invalid_grants,
            "oauth_pkce_verified": self.oauth_pkce_verified,
            "oauth_pkce_challenges_reused": self.oauth_pkce_challenges_reused,
        })
    }
}
