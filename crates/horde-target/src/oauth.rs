//! `/oauth/*`: OAuth 2.0's authorization code grant, reduced to what a load test meets. A
//! redirect carries a one-time code that the next page's script exchanges for a bearer token,
//! so a recorded journey replays only if the code is read from the redirect's `Location`
//! (a recorder that lets the client follow redirects unseen never sees it).
//!
//! - `GET /oauth/authorize?client_id=C&redirect_uri=/path&state=S`: 302 to
//!   `{redirect_uri}?code={code}&state={S}`, a new 24-hex-digit code remembered for one use.
//! - `GET /oauth/callback?code=..&state=..`: the page the browser lands on (its script posts
//!   the code; a simulation does it itself).
//! - `POST /oauth/token` with the form `grant_type=authorization_code&code=..`: a bearer token
//!   for `/api/orders` (a login of the user `oauth`) for a code given and not yet used, else
//!   400 `{"error": "invalid_grant"}`.
//!
//! At most [`MAX_CODES`] unused codes are remembered; beyond, the oldest is forgotten.

use crate::server::{full, json, Body, Shared};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE, LOCATION};
use hyper::{Method, Request, Response, StatusCode};
use rand::Rng;
use serde_json::json;
use std::collections::{HashSet, VecDeque};

/// Unused codes remembered at once.
pub(crate) const MAX_CODES: usize = 100_000;
/// The largest token request read: a form with a code, not a document.
const MAX_FORM_BYTES: usize = 16 << 10;

/// The codes given and not yet exchanged.
#[derive(Debug, Default)]
pub(crate) struct Codes {
    unused: HashSet<String>,
    given: VecDeque<String>,
}

impl Codes {
    fn give(&mut self) -> String {
        while self.given.len() >= MAX_CODES {
            if let Some(oldest) = self.given.pop_front() {
                self.unused.remove(&oldest);
            }
        }
        let code = format!("{:024x}", rand::rng().random::<u128>() >> 32);
        self.given.push_back(code.clone());
        self.unused.insert(code.clone());
        code
    }

    /// Whether `code` was given and not used; it is used from now on.
    fn redeem(&mut self, code: &str) -> bool {
        self.unused.remove(code)
    }
}

/// Whether the path is one of this module's.
pub(crate) fn serves(path: &str) -> bool {
    path.starts_with("/oauth/")
}

/// Serves a request under `/oauth/`, counting it.
pub(crate) async fn respond(request: Request<Incoming>, path: &str, state: &Shared) -> Response<Body> {
    let method = request.method().clone();
    state.count(|stats| {
        stats.total += 1;
        *stats.by_route.entry(format!("{method} {path}")).or_default() += 1;
    });
    let query: Vec<(String, String)> =
        form_urlencoded::parse(request.uri().query().unwrap_or("").as_bytes()).into_owned().collect();
    let param = |name: &str| query.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str());
    match (method, path) {
        (Method::GET, "/oauth/authorize") => {
            let (Some(client), Some(redirect_uri)) = (param("client_id"), param("redirect_uri")) else {
                return invalid_request("send client_id and redirect_uri (a path on this server)");
            };
            if client.is_empty() || !redirect_uri.starts_with('/') || redirect_uri.starts_with("//") {
                return invalid_request("redirect_uri is a path on this server, such as /oauth/callback");
            }
            let code = state.oauth.lock().expect("oauth lock").give();
            state.count(|stats| stats.oauth_codes_given += 1);
            let mut location = form_urlencoded::Serializer::new(format!("{redirect_uri}?"));
            location.append_pair("code", &code);
            if let Some(client_state) = param("state") {
                location.append_pair("state", client_state);
            }
            let mut response = Response::new(full(""));
            *response.status_mut() = StatusCode::FOUND;
            let location = location.finish().replacen("?&", "?", 1);
            response.headers_mut().insert(LOCATION, HeaderValue::from_str(&location).expect("an encoded URL"));
            response
        }
        (Method::GET, "/oauth/callback") => {
            let mut response = Response::new(full(
                "<!doctype html><title>Signing in</title><p>Finishing the sign-in...</p>\
                 <script>/* posts the code of the URL to /oauth/token */</script>",
            ));
            response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
            response
        }
        (Method::POST, "/oauth/token") => token(request, state).await,
        _ => json(
            StatusCode::NOT_FOUND,
            json!({"error": "not_found", "message": "GET /oauth/authorize, GET /oauth/callback, POST /oauth/token"}),
        ),
    }
}

async fn token(request: Request<Incoming>, state: &Shared) -> Response<Body> {
    let Ok(body) = http_body_util::Limited::new(request.into_body(), MAX_FORM_BYTES).collect().await else {
        return invalid_request("a token request is a small form");
    };
    let form: Vec<(String, String)> = form_urlencoded::parse(&body.to_bytes()).into_owned().collect();
    let field = |name: &str| form.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str());
    if field("grant_type") != Some("authorization_code") {
        return invalid_request("grant_type must be authorization_code");
    }
    let redeemed = field("code").is_some_and(|code| state.oauth.lock().expect("oauth lock").redeem(code));
    if !redeemed {
        state.count(|stats| stats.oauth_invalid_grants += 1);
        return json(
            StatusCode::BAD_REQUEST,
            json!({"error": "invalid_grant", "message": "the code was not given by /oauth/authorize, or was used"}),
        );
    }
    let access_token = format!("{:032x}", rand::rng().random::<u128>());
    state.orders.lock().expect("orders lock").login("oauth", access_token.clone());
    state.count(|stats| stats.oauth_tokens_given += 1);
    json(StatusCode::OK, json!({"access_token": access_token, "token_type": "Bearer"}))
}

fn invalid_request(message: &str) -> Response<Body> {
    json(StatusCode::BAD_REQUEST, json!({"error": "invalid_request", "message": message}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_is_redeemed_once() {
        let mut codes = Codes::default();
        let code = codes.give();
        assert_eq!(code.len(), 24);
        assert!(codes.redeem(&code));
        assert!(!codes.redeem(&code), "a code is good once");
        assert!(!codes.redeem("0123456789abcdef01234567"));
    }
}
