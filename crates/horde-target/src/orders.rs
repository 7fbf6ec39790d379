//! `/api/login` and `/api/orders`: a JSON API behind a bearer token, for scenarios that log
//! in, list what they were given and act on each item (the newcomer's "JSON API flow").
//!
//! `POST /api/login` with `{"user": "ann"}` answers `{"token": "..."}`: a random token the
//! server remembers. Every `/api/orders` request must send it as `Authorization: Bearer
//! <token>` (401 otherwise). A login opens a session holding its own copy of the user's orders,
//! so that runs, and users logging in twice, do not meet each other's cancellations. The orders
//! are the same for a user name at every login: [`ORDERS_PER_USER`] of them, ids derived from
//! the name, the odd-numbered ones `open` and the others `shipped`. Only an open order can be
//! cancelled (409 otherwise); it is `cancelled` from then on.
//!
//! At most [`MAX_SESSIONS`] logins are remembered; beyond, the oldest is forgotten (its token
//! then gets 401), so memory stays bounded however long the target runs.

use crate::server::{json, Body, Shared};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, AUTHORIZATION, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};
use rand::Rng;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};

/// The orders each user has.
pub const ORDERS_PER_USER: u64 = 4;
/// Logins remembered at once; beyond, the oldest is forgotten.
pub(crate) const MAX_SESSIONS: usize = 100_000;
/// The largest login body read (413 beyond): a user name, not a document.
const MAX_LOGIN_BYTES: usize = 16 << 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Open,
    Shipped,
    Cancelled,
}

impl Status {
    fn name(self) -> &'static str {
        match self {
            Status::Open => "open",
            Status::Shipped => "shipped",
            Status::Cancelled => "cancelled",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Order {
    pub id: u64,
    pub status: Status,
    /// In cents, so that the JSON holds whole numbers.
    pub total_cents: u64,
}

impl Order {
    fn to_json(&self) -> Value {
        json!({"id": self.id, "status": self.status.name(), "total_cents": self.total_cents})
    }
}

/// The orders a user name has at each login: ids `N1` to `N4` for a five-digit `N` drawn from
/// the name (FNV-1a, stable across runs and platforms), odd ones open.
pub(crate) fn orders_of(user: &str) -> Vec<Order> {
    let hash = user.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    let base = (hash % 90_000 + 10_000) * 10;
    (1..=ORDERS_PER_USER)
        .map(|i| Order {
            id: base + i,
            status: if i % 2 == 1 { Status::Open } else { Status::Shipped },
            total_cents: 1_000 + (hash >> (8 * i)) % 9_000,
        })
        .collect()
}

/// Why an order was not cancelled.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CancelError {
    NotFound,
    NotOpen(Status),
}

/// The logins and their orders.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    by_token: HashMap<String, Vec<Order>>,
    /// Tokens in the order they were given, to forget the oldest first.
    given: VecDeque<String>,
}

impl Sessions {
    /// Remembers a login of `user` under `token`, forgetting the oldest beyond [`MAX_SESSIONS`].
    pub(crate) fn login(&mut self, user: &str, token: String) {
        while self.given.len() >= MAX_SESSIONS {
            if let Some(oldest) = self.given.pop_front() {
                self.by_token.remove(&oldest);
            }
        }
        self.given.push_back(token.clone());
        self.by_token.insert(token, orders_of(user));
    }

    pub(crate) fn orders(&self, token: &str) -> Option<&[Order]> {
        self.by_token.get(token).map(Vec::as_slice)
    }

    pub(crate) fn cancel(&mut self, token: &str, id: u64) -> Option<Result<Order, CancelError>> {
        let order = match self.by_token.get_mut(token)?.iter_mut().find(|o| o.id == id) {
            None => return Some(Err(CancelError::NotFound)),
            Some(order) => order,
        };
        Some(match order.status {
            Status::Open => {
                order.status = Status::Cancelled;
                Ok(order.clone())
            }
            other => Err(CancelError::NotOpen(other)),
        })
    }
}

/// Whether the path is one of this module's.
pub(crate) fn serves(path: &str) -> bool {
    path == "/api/login" || path == "/api/orders" || path.starts_with("/api/orders/")
}

/// What a path under `/api/orders` asks for.
#[derive(Debug, PartialEq)]
enum Route {
    List,
    Read(u64),
    Cancel(u64),
    /// An id that is not a number, or a path beyond the API's.
    Unknown,
}

fn route(path: &str) -> Route {
    let Some(rest) = path.strip_prefix("/api/orders").map(|r| r.trim_matches('/')) else {
        return Route::Unknown;
    };
    let mut parts = rest.split('/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(""), None, None) => Route::List,
        (Some(id), None, None) => id.parse().map_or(Route::Unknown, Route::Read),
        (Some(id), Some("cancel"), None) => id.parse().map_or(Route::Unknown, Route::Cancel),
        _ => Route::Unknown,
    }
}

fn route_key(method: &Method, path: &str) -> String {
    if path == "/api/login" {
        return format!("{method} /api/login");
    }
    let route = match route(path) {
        Route::List => "/api/orders",
        Route::Read(_) => "/api/orders/{id}",
        Route::Cancel(_) => "/api/orders/{id}/cancel",
        Route::Unknown => "/api/orders/...",
    };
    format!("{method} {route}")
}

/// Serves a request to `/api/login` or under `/api/orders`, counting it.
pub(crate) async fn respond(request: Request<Incoming>, path: &str, state: &Shared) -> Response<Body> {
    let method = request.method().clone();
    state.count(|stats| {
        stats.total += 1;
        *stats.by_route.entry(route_key(&method, path)).or_default() += 1;
    });
    if path == "/api/login" {
        if method != Method::POST {
            return not_allowed("POST");
        }
        return login(request, state).await;
    }
    let route = route(path);
    let allowed = match route {
        Route::List | Route::Read(_) => "GET, HEAD",
        Route::Cancel(_) => "POST",
        Route::Unknown => return error(StatusCode::NOT_FOUND, "not_found", format!("no route {path}")),
    };
    if !allowed.split(", ").any(|m| m == method.as_str()) {
        return not_allowed(allowed);
    }
    let token = bearer(&request).map(str::to_string);
    let mut sessions = state.orders.lock().expect("orders lock");
    let Some(orders) = token.as_deref().and_then(|token| sessions.orders(token)) else {
        drop(sessions);
        state.count(|stats| stats.unauthorized += 1);
        let mut response = error(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "send the token of POST /api/login as Authorization: Bearer <token>".into(),
        );
        response.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return response;
    };
    match route {
        Route::List => {
            let list: Vec<Value> = orders.iter().map(Order::to_json).collect();
            drop(sessions);
            state.count(|stats| stats.orders_listed += 1);
            json(StatusCode::OK, json!({"count": list.len(), "orders": list}))
        }
        Route::Read(id) => {
            let found = orders.iter().find(|o| o.id == id).map(Order::to_json);
            drop(sessions);
            match found {
                Some(order) => {
                    state.count(|stats| stats.orders_read += 1);
                    json(StatusCode::OK, order)
                }
                None => order_not_found(id),
            }
        }
        Route::Cancel(id) => {
            let token = token.expect("a session was found by it");
            let cancelled = sessions.cancel(&token, id).expect("the session exists: it was just found");
            drop(sessions);
            match cancelled {
                Ok(order) => {
                    state.count(|stats| stats.orders_cancelled += 1);
                    json(StatusCode::OK, order.to_json())
                }
                Err(CancelError::NotFound) => order_not_found(id),
                Err(CancelError::NotOpen(status)) => json(
                    StatusCode::CONFLICT,
                    json!({"error": "not_open", "id": id, "status": status.name(),
                           "message": format!("order {id} is {}: only open orders can be cancelled", status.name())}),
                ),
            }
        }
        Route::Unknown => unreachable!("answered 404 above"),
    }
}

async fn login(request: Request<Incoming>, state: &Shared) -> Response<Body> {
    let body = match http_body_util::Limited::new(request.into_body(), MAX_LOGIN_BYTES).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                format!("a login is at most {MAX_LOGIN_BYTES} bytes"),
            )
        }
    };
    let user = serde_json::from_slice::<Value>(&body).ok().and_then(|v| v.get("user")?.as_str().map(str::to_string));
    let Some(user) = user.filter(|u| !u.is_empty()) else {
        return error(StatusCode::BAD_REQUEST, "bad_login", r#"send {"user": "<a non-empty name>"} as JSON"#.into());
    };
    let token = format!("{:032x}", rand::rng().random::<u128>());
    state.orders.lock().expect("orders lock").login(&user, token.clone());
    state.count(|stats| stats.api_logins += 1);
    json(StatusCode::OK, json!({"token": token, "user": user}))
}

/// The token of an `Authorization: Bearer <token>` header (the scheme in any case, as RFC 6750).
fn bearer(request: &Request<Incoming>) -> Option<&str> {
    let value = request.headers().get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim()).filter(|t| !t.is_empty())
}

fn order_not_found(id: u64) -> Response<Body> {
    error(StatusCode::NOT_FOUND, "not_found", format!("no order {id} among this login's orders"))
}

fn not_allowed(allowed: &'static str) -> Response<Body> {
    let mut response =
        error(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", format!("this route answers {allowed}"));
    response.headers_mut().insert(ALLOW, HeaderValue::from_static(allowed));
    response
}

/// An error as JSON: a stable kind for programs, a sentence for people.
fn error(status: StatusCode, kind: &str, message: String) -> Response<Body> {
    json(status, json!({"error": kind, "message": message}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_has_the_same_orders_at_every_login_and_half_of_them_open() {
        let ann = orders_of("ann");
        assert_eq!(ann, orders_of("ann"));
        assert_eq!(ann.len() as u64, ORDERS_PER_USER);
        let statuses: Vec<_> = ann.iter().map(|o| o.status).collect();
        assert_eq!(statuses, [Status::Open, Status::Shipped, Status::Open, Status::Shipped]);
        assert!(ann.iter().all(|o| (100_000..1_000_000).contains(&o.id)));
        assert_ne!(ann[0].id, orders_of("bob")[0].id);
    }

    #[test]
    fn only_open_orders_of_the_session_are_cancelled_and_only_once() {
        let mut sessions = Sessions::default();
        sessions.login("ann", "t1".into());
        sessions.login("ann", "t2".into());
        let [open, shipped, ..] = &orders_of("ann")[..] else { unreachable!() };
        assert_eq!(sessions.cancel("t1", open.id).unwrap().unwrap().status, Status::Cancelled);
        assert_eq!(sessions.cancel("t1", open.id), Some(Err(CancelError::NotOpen(Status::Cancelled))));
        assert_eq!(sessions.cancel("t1", shipped.id), Some(Err(CancelError::NotOpen(Status::Shipped))));
        assert_eq!(sessions.cancel("t1", 7), Some(Err(CancelError::NotFound)));
        assert_eq!(sessions.cancel("unknown", open.id), None);
        // The other login's copy is untouched.
        assert_eq!(sessions.orders("t2").unwrap()[0].status, Status::Open);
    }

    #[test]
    fn the_oldest_login_is_forgotten_beyond_the_bound() {
        let mut sessions = Sessions::default();
        for i in 0..=MAX_SESSIONS {
            sessions.login("ann", i.to_string());
        }
        assert!(sessions.orders("0").is_none());
        assert!(sessions.orders("1").is_some());
        assert_eq!(sessions.by_token.len(), MAX_SESSIONS);
    }

    #[test]
    fn routes() {
        assert_eq!(route("/api/orders"), Route::List);
        assert_eq!(route("/api/orders/"), Route::List);
        assert_eq!(route("/api/orders/123451"), Route::Read(123451));
        assert_eq!(route("/api/orders/123451/cancel"), Route::Cancel(123451));
        assert_eq!(route("/api/orders/abc"), Route::Unknown);
        assert_eq!(route("/api/orders/1/ship"), Route::Unknown);
        assert_eq!(route_key(&Method::POST, "/api/orders/5/cancel"), "POST /api/orders/{id}/cancel");
        assert!(serves("/api/orders/5") && serves("/api/login") && !serves("/api/ordersx") && !serves("/api/items"));
    }
}
