//! The built-in target: a small site shaped like the JSF application of seed 000, for
//! `horde demo`, `horde target`, practice and tests; and the protocols beside it: HTTPS,
//! HTTP/2, compressed pages, WebSockets and server-sent events.
//!
//! ```no_run
//! let server = horde_target::TargetServer::start("127.0.0.1:0".parse().unwrap()).unwrap();
//! println!("serving on {}", server.base_url());
//! // ... run load against it ...
//! println!("{} requests served", server.stats().total);
//!
//! // HTTPS, with a certificate made at start that clients are given to trust.
//! let options = horde_target::TargetOptions { tls: true, ..Default::default() };
//! let server = horde_target::TargetServer::start_with("127.0.0.1:0".parse().unwrap(), options).unwrap();
//! std::fs::write("target.pem", server.cert_pem().unwrap()).unwrap();
//! println!("serving on {} (SHA-256 {})", server.base_url(), server.fingerprint().unwrap());
//! ```
//!
//! One listener serves HTTP/1.1 and HTTP/2: with TLS, HTTP/2 is chosen by ALPN (`h2`, then
//! `http/1.1`); in cleartext, a client speaking HTTP/2 from its first bytes (h2c with prior
//! knowledge) gets HTTP/2. The certificate is self-signed, for 127.0.0.1, ::1 and localhost.
//!
//! Every HTML page's forms each carry a hidden `javax.faces.ViewState`, as JSF renders them
//! (so a browser can be clicked through it, and recorded), that changes at each page load; a
//! POST must send back the latest one of its session, or it gets JSF's ViewExpiredException
//! page (status 500). Every page starts with a search form. Routes:
//!
//! | route | what |
//! |---|---|
//! | `GET /` | home page, public, with a newsletter form |
//! | `POST /newsletter` | the home page, saying `Subscribed {email}` |
//! | `POST /search` | the items whose name holds `q` |
//! | `GET /login`, `POST /login` | login form; username + any non-empty password; sets the session, 302 to `/account` |
//! | `GET /account`, `POST /account` | a form for a logged-in user (302 to `/login` otherwise) |
//! | `POST /upload` | multipart form: fields, the ViewState and a file; answers with the file's name and size |
//! | `GET /logout` | ends the session, 302 to `/` |
//! | `GET /api/items`, `GET /api/items/{id}` | a small JSON API |
//! | `POST /api/echo` | answers with the JSON document it was sent (400 if it is not JSON) |
//! | `ANY /status/{code}[/...]` | answers with that status (whatever follows the code) |
//! | `GET /delay/{ms}` | answers after that many milliseconds (at most 60 s) |
//! | `GET /work/{ms}` | takes one of `work_slots` slots (default 4) for that many milliseconds: capacity = slots / service time |
//! | `GET /compressed` | a 5 KiB HTML page containing [`COMPRESSED_PAGE_PHRASE`], gzip-encoded when Accept-Encoding allows gzip, plain otherwise; `Vary: Accept-Encoding` |
//! | `GET /cookies/echo` | the request's cookies as JSON: `{"cookies": {name: value}, "header": "a=1; b=2"}` (`header` null without a Cookie header) |
//! | `GET /cookies/set?name=value&...&max_age=N` | one `Set-Cookie: name=value; Path=/` per parameter, with `Max-Age=N` when given (persistent cookies), else session cookies; the lines as JSON `{"set": [...]}` |
//! | `GET /ws/echo` | WebSocket (HTTP/1.1 upgrade): text and binary messages sent back unchanged; pings get pongs; a Close is answered; 5 minutes of silence close it |
//! | `GET /ws/ticker?count=N&interval_ms=M` | WebSocket: N text messages `{"n": i}` (i from 1), the first at once, M ms apart, then a normal Close |
//! | `GET /sse/events?count=N&interval_ms=M` | server-sent events (`text/event-stream`, `Cache-Control: no-cache`): N events `id: i`, `event: tick`, `data: {"n": i}`, the first at once, M ms apart, then the body ends |
//! | `PUT /eventual/{key}?delay_ms=N` (or `POST`) | an eventually consistent store: keeps the body (at most 1 MiB) and answers 202 `{"key": ..., "visible_after_ms": N}`; reads see it only N ms later (default [`TargetOptions::eventual_delay`], 500 ms) |
//! | `GET /eventual/{key}` | the last visible body, with the content type it was written with (default `application/json`), or 404 `{"error": "not_found", ...}` while none is visible |
//! | `DELETE /eventual/{key}` | removes the key at once (204; 404 if it held nothing) |
//! | `POST /api/login` | JSON `{"user": "ann"}`: answers `{"token": "...", "user": "ann"}`, a random bearer token the server remembers (400 without a user) |
//! | `GET /api/orders` | with `Authorization: Bearer <token>` (401 otherwise): `{"count": 4, "orders": [{"id": .., "status": "open" \| "shipped" \| "cancelled", "total_cents": ..}, ...]}`, the same [`ORDERS_PER_USER`] orders for a user name at each login, odd ones open |
//! | `GET /api/orders/{id}` | bearer required: one of the login's orders (404 if it is not one) |
//! | `POST /api/orders/{id}/cancel` | bearer required: cancels an open order (200, the order now `cancelled`); 409 `{"error": "not_open", ...}` for any other |
//! | `GET /oauth/authorize?client_id=C&redirect_uri=/oauth/callback&state=S` | 302 to `redirect_uri?code=..&state=S`: a one-time code (OAuth's authorization code grant) |
//! | `GET /oauth/login?...` | 302 to `/oauth/authorize?...` with the same query: a sign-in link in front of the authorization, so a browser goes through two redirects |
//! | `GET /oauth/callback` | the page the authorization redirects to (its script would post the code) |
//! | `POST /oauth/token` | form `grant_type=authorization_code&code=..`: `{"access_token": .., "token_type": "Bearer"}` for a code given and unused (a token `/api/orders` takes, user `oauth`), else 400 `invalid_grant` |
//! | `GET /stats` | what the server saw, as JSON (not counted itself) |
//!
//! For the tickers and the events, N defaults to 10 and M to 1000; larger values than 10000
//! and 60000 are taken as those bounds. Besides requests, `/stats` counts WebSocket
//! connections and messages, event streams and events, TLS connections and HTTP/2
//! connections, the eventual store's writes and reads that found a body or not, and the
//! orders API's logins, lists, reads, cancellations and 401s (see [`Stats`]). Each login
//! holds its own copy of its orders: cancelling in one does not show in another. The eventual
//! store holds at most 100,000 keys and 256 MiB; beyond, writes get 507. At most 100,000
//! logins are remembered; beyond, the oldest is forgotten (its token then gets 401).

mod compressed;
mod eventual;
mod oauth;
mod orders;
mod pages;
mod server;
mod stats;
mod streams;
mod tls;

pub use compressed::PHRASE as COMPRESSED_PAGE_PHRASE;
pub use orders::ORDERS_PER_USER;
pub use server::{TargetOptions, TargetServer};
pub use stats::Stats;
