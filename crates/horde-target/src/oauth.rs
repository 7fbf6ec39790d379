//! `/oauth/*`: OAuth 2.0's authorization code grant, reduced to what a load test meets. A
//! redirect carries a one-time code that the next page's script exchanges for a bearer token,
//! so a recorded journey replays only if the code is read from the redirect's `Location`
//! (a recorder that lets the client follow redirects unseen never sees it).
//!
//! - `GET /oauth/authorize?client_id=C&redirect_uri=/path&state=S`: 302 to
//!   `{redirect_uri}?code={code}&state={S}`, a new 24-hex-digit code remembered for one use.
//!   With PKCE (RFC 7636), `&code_challenge=X&code_challenge_method=S256`: the code is bound to
//!   the challenge, and a challenge seen before is counted (`oauth_pkce_challenges_reused`:
//!   a replayed recording's pair; a real client makes a new one per sign-in).
//! - `GET /oauth/login?...`: 302 to `/oauth/authorize?...` with the same query, a sign-in link in
//!   front of the authorization: the code then comes from the middle of a chain of redirects.
//! - `GET /oauth/callback?code=..&state=..`: the page the browser lands on (its script posts
//!   the code; a simulation does it itself).
//! - `POST /oauth/token` with the form `grant_type=authorization_code&code=..`: a bearer token
//!   for `/api/orders` (a login of the user `oauth`) for a code given and not yet used, else
//!   400 `{"error": "invalid_grant"}`; a code bound to a challenge also needs `code_verifier`,
//!   whose S256 must be that challenge.
//!
//! At most [`MAX_CODES`] unused codes are remembered; beyond, the oldest is forgotten.

use crate::server::{full, json, Body, Shared};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE, LOCATION};
use hyper::{Method, Request, Response, StatusCode};
use rand::Rng;
use serde_json::json;
use std::collections::{HashMap, HashSet, VecDeque};

/// Unused codes remembered at once.
pub(crate) const MAX_CODES: usize = 100_000;
/// The largest token request read: a form with a code, not a document.
const MAX_FORM_BYTES: usize = 16 << 10;

/// The codes given and not yet exchanged, each with the PKCE challenge it is bound to.
#[derive(Debug, Default)]
pub(crate) struct Codes {
    unused: HashMap<String, Option<String>>,
    given: VecDeque<String>,
    /// PKCE challenges seen (as many as codes are remembered).
    challenges: HashSet<String>,
    challenge_order: VecDeque<String>,
}

/// What a token request's code turned out to be.
#[derive(Debug, PartialEq)]
enum Redeemed {
    /// Not given, or used already.
    Unknown,
    /// Given with a PKCE challenge that the verifier does not answer (or no verifier).
    VerifierRefused,
    Good {
        with_pkce: bool,
    },
}

impl Codes {
    /// A new code, bound to `challenge` when there is one; the flag says whether that
    /// challenge was seen before.
    fn give(&mut self, challenge: Option<&str>) -> (String, bool) {
        while self.given.len() >= MAX_CODES {
            if let Some(oldest) = self.given.pop_front() {
                self.unused.remove(&oldest);
            }
        }
        let code = format!("{:024x}", rand::rng().random::<u128>() >> 32);
        self.given.push_back(code.clone());
        self.unused.insert(code.clone(), challenge.map(str::to_string));
        let reused = challenge.is_some_and(|challenge| !self.remember_challenge(challenge));
        (code, reused)
    }

    /// False when `challenge` was seen before.
    fn remember_challenge(&mut self, challenge: &str) -> bool {
        if !self.challenges.insert(challenge.to_string()) {
            return false;
        }
        self.challenge_order.push_back(challenge.to_string());
        while self.challenge_order.len() > MAX_CODES {
            if let Some(oldest) = self.challenge_order.pop_front() {
                self.challenges.remove(&oldest);
            }
        }
        true
    }

    /// Whether `code` was given and not used, and `verifier` answers its challenge; the code
    /// is used from now on either way (RFC 7636 4.6: a failed verification ends the grant).
    fn redeem(&mut self, code: &str, verifier: Option<&str>) -> Redeemed {
        match self.unused.remove(code) {
            None => Redeemed::Unknown,
            Some(None) => Redeemed::Good { with_pkce: false },
            Some(Some(challenge)) if verifier.is_some_and(|v| s256(v) == challenge) => {
                Redeemed::Good { with_pkce: true }
            }
            Some(Some(_)) => Redeemed::VerifierRefused,
        }
    }
}

/// PKCE's S256 transformation: BASE64URL(SHA-256(verifier)), no padding.
fn s256(verifier: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes()))
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
            let challenge = param("code_challenge");
            if challenge.is_some() && param("code_challenge_method") != Some("S256") {
                return invalid_request("code_challenge_method must be S256 (plain is not accepted)");
            }
            let (code, reused) = state.oauth.lock().expect("oauth lock").give(challenge);
            state.count(|stats| {
                stats.oauth_codes_given += 1;
                stats.oauth_pkce_challenges_reused += u64::from(reused);
            });
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
        (Method::GET, "/oauth/login") => {
            // An app's "Sign in" link: it hands its query to the authorization, so the browser
            // goes through two redirects before the callback (single sign-on's shape).
            let location = format!("/oauth/authorize?{}", request.uri().query().unwrap_or(""));
            let mut response = Response::new(full(""));
            *response.status_mut() = StatusCode::FOUND;
            let location = HeaderValue::from_str(&location).unwrap_or(HeaderValue::from_static("/oauth/authorize"));
            response.headers_mut().insert(LOCATION, location);
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
            json!({"error": "not_found", "message": "GET /oauth/login, GET /oauth/authorize, GET /oauth/callback, POST /oauth/token"}),
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
    let redeemed = match field("code") {
        Some(code) => state.oauth.lock().expect("oauth lock").redeem(code, field("code_verifier")),
        None => Redeemed::Unknown,
    };
    let refusal = match redeemed {
        Redeemed::Good { with_pkce } => {
            state.count(|stats| stats.oauth_pkce_verified += u64::from(with_pkce));
            None
        }
        Redeemed::Unknown => Some("the code was not given by /oauth/authorize, or was used"),
        Redeemed::VerifierRefused => Some("code_verifier does not answer the code's PKCE challenge"),
    };
    if let Some(message) = refusal {
        state.count(|stats| stats.oauth_invalid_grants += 1);
        return json(StatusCode::BAD_REQUEST, json!({"error": "invalid_grant", "message": message}));
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
        let (code, _) = codes.give(None);
        assert_eq!(code.len(), 24);
        assert_eq!(codes.redeem(&code, None), Redeemed::Good { with_pkce: false });
        assert_eq!(codes.redeem(&code, None), Redeemed::Unknown, "a code is good once");
        assert_eq!(codes.redeem("0123456789abcdef01234567", None), Redeemed::Unknown);
    }

    #[test]
    fn a_pkce_code_needs_the_verifier_of_its_challenge() {
        // RFC 7636 appendix B.
        let (verifier, challenge) =
            ("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
        assert_eq!(s256(verifier), challenge);
        let mut codes = Codes::default();
        let (code, reused) = codes.give(Some(challenge));
        assert!(!reused);
        assert_eq!(codes.redeem(&code, Some(verifier)), Redeemed::Good { with_pkce: true });
        let (code, reused) = codes.give(Some(challenge));
        assert!(reused, "the same challenge twice");
        assert_eq!(codes.redeem(&code, Some("another verifier")), Redeemed::VerifierRefused);
        let (code, _) = codes.give(Some(challenge));
        assert_eq!(codes.redeem(&code, None), Redeemed::VerifierRefused);
    }
}
