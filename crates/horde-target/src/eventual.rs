//! `/eventual/{key}`: an eventually consistent store, for showing and testing
//! retry-until-consistent (seed 002). A write is accepted at once (202) but reads see it only
//! after a delay: the write's `?delay_ms=N`, or else the server's default
//! (`horde target --eventual-delay-ms`, 500 ms).
//!
//! A key keeps at most two bodies: the one reads see, and the latest write waiting for its
//! time. A write that comes while another still waits replaces it, and the replaced one is
//! never seen: the store converges on the last write, as last-writer-wins stores do. A DELETE
//! takes effect at once.
//!
//! Memory is bounded: at most [`MAX_KEYS`] keys, bodies of at most [`MAX_BODY_BYTES`] (413
//! beyond, a larger body being read and dropped, up to a bound, before the answer) and [`MAX_STORED_BYTES`] in all (507 beyond).

use crate::server::{json, Body, Shared};
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::json;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Keys held at once; a write of a new key beyond them is refused (507).
pub(crate) const MAX_KEYS: usize = 100_000;
/// The largest body a write may carry (413 beyond).
pub(crate) const MAX_BODY_BYTES: usize = 1 << 20;
/// Bodies, content types and keys held in all, visible or waiting (507 beyond).
pub(crate) const MAX_STORED_BYTES: usize = 256 << 20;
/// The longest delay: larger values are taken as this one, as `/delay/{ms}` does.
pub(crate) const MAX_DELAY: Duration = Duration::from_secs(3600);

/// A body as it was written, with the content type to answer it with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Value {
    pub body: Bytes,
    pub content_type: String,
}

impl Value {
    fn size(&self) -> usize {
        self.body.len() + self.content_type.len()
    }
}

#[derive(Debug)]
struct Waiting {
    value: Value,
    visible_at: Instant,
}

#[derive(Debug, Default)]
struct Entry {
    visible: Option<Value>,
    waiting: Option<Waiting>,
}

impl Entry {
    /// Makes the waiting write the visible one once its time has come; returns the bytes freed.
    fn settle(&mut self, now: Instant) -> usize {
        let Some(waiting) = self.waiting.take_if(|w| w.visible_at <= now) else {
            return 0;
        };
        self.visible.replace(waiting.value).map_or(0, |old| old.size())
    }

    fn size(&self) -> usize {
        self.visible.as_ref().map_or(0, Value::size) + self.waiting.as_ref().map_or(0, |w| w.value.size())
    }
}

/// Why a write was refused: the store is at one of its bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    TooManyKeys,
    StoreFull,
}

/// The keys and their bodies. Time is passed in, so that the rules can be tested without a clock.
#[derive(Debug)]
pub(crate) struct Store {
    default_delay: Duration,
    entries: HashMap<String, Entry>,
    /// What `entries` holds, by [`MAX_STORED_BYTES`]'s measure.
    stored_bytes: usize,
}

impl Store {
    pub(crate) fn new(default_delay: Duration) -> Store {
        Store { default_delay: default_delay.min(MAX_DELAY), entries: HashMap::new(), stored_bytes: 0 }
    }

    /// Accepts a write that reads will see `delay` (or the default delay) after `now`;
    /// returns that delay, bounded by [`MAX_DELAY`].
    pub(crate) fn write(
        &mut self,
        key: &str,
        value: Value,
        delay: Option<Duration>,
        now: Instant,
    ) -> Result<Duration, Refusal> {
        let delay = delay.unwrap_or(self.default_delay).min(MAX_DELAY);
        let (freed, held, new_key) = match self.entries.get_mut(key) {
            Some(entry) => {
                let freed = entry.settle(now);
                (freed, entry.waiting.as_ref().map_or(0, |w| w.value.size()), false)
            }
            None => (0, 0, true),
        };
        self.stored_bytes -= freed;
        if new_key && self.entries.len() >= MAX_KEYS {
            return Err(Refusal::TooManyKeys);
        }
        let added = value.size() + if new_key { key.len() } else { 0 };
        if self.stored_bytes - held + added > MAX_STORED_BYTES {
            return Err(Refusal::StoreFull);
        }
        self.stored_bytes = self.stored_bytes - held + added;
        let entry = self.entries.entry(key.to_string()).or_default();
        entry.waiting = Some(Waiting { value, visible_at: now + delay });
        Ok(delay)
    }

    /// The body reads see at `now`, if any write to `key` has become visible.
    pub(crate) fn read(&mut self, key: &str, now: Instant) -> Option<Value> {
        let entry = self.entries.get_mut(key)?;
        self.stored_bytes -= entry.settle(now);
        entry.visible.clone()
    }

    /// Removes `key` at once, visible body and waiting write alike; false if there was neither.
    pub(crate) fn delete(&mut self, key: &str) -> bool {
        match self.entries.remove(key) {
            Some(entry) => {
                self.stored_bytes -= entry.size() + key.len();
                true
            }
            None => false,
        }
    }
}

/// Serves a request to `/eventual/{key}`, counting it.
pub(crate) async fn respond(request: Request<Incoming>, key: &str, state: &Shared) -> Response<Body> {
    let method = request.method().clone();
    state.count(|stats| {
        stats.total += 1;
        *stats.by_route.entry(format!("{method} /eventual/{{key}}")).or_default() += 1;
    });
    if key.is_empty() {
        return error(StatusCode::BAD_REQUEST, "missing_key", "the path names no key: /eventual/{key}".into());
    }
    match method {
        Method::GET | Method::HEAD => read(key, state),
        Method::PUT | Method::POST => write(request, key, state).await,
        Method::DELETE => {
            if state.eventual.lock().expect("store lock").delete(key) {
                let mut response = Response::new(crate::server::full(Bytes::new()));
                *response.status_mut() = StatusCode::NO_CONTENT;
                response
            } else {
                not_found(key)
            }
        }
        _ => {
            let mut response = error(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                format!("{method} is not served here: GET, HEAD, PUT, POST or DELETE"),
            );
            response.headers_mut().insert(ALLOW, HeaderValue::from_static("GET, HEAD, PUT, POST, DELETE"));
            response
        }
    }
}

fn read(key: &str, state: &Shared) -> Response<Body> {
    let value = state.eventual.lock().expect("store lock").read(key, Instant::now());
    let Some(value) = value else {
        state.count(|stats| stats.eventual_reads_not_found += 1);
        return not_found(key);
    };
    state.count(|stats| stats.eventual_reads_found += 1);
    let mut response = Response::new(crate::server::full(value.body));
    let content_type = HeaderValue::from_str(&value.content_type).unwrap_or(HeaderValue::from_static(DEFAULT_TYPE));
    response.headers_mut().insert(CONTENT_TYPE, content_type);
    response
}

const DEFAULT_TYPE: &str = "application/json";

async fn write(request: Request<Incoming>, key: &str, state: &Shared) -> Response<Body> {
    let delay = match delay_from_query(request.uri().query()) {
        Ok(delay) => delay,
        Err(message) => return error(StatusCode::BAD_REQUEST, "bad_delay", message),
    };
    let declared = request.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    let content_type =
        request.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or(DEFAULT_TYPE).to_string();
    let body = match read_body(request.into_body(), declared).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let written =
        state.eventual.lock().expect("store lock").write(key, Value { body, content_type }, delay, Instant::now());
    match written {
        Ok(delay) => {
            state.count(|stats| stats.eventual_writes += 1);
            json(StatusCode::ACCEPTED, json!({"key": key, "visible_after_ms": delay.as_millis() as u64}))
        }
        Err(Refusal::TooManyKeys) => error(
            StatusCode::INSUFFICIENT_STORAGE,
            "too_many_keys",
            format!("the store holds at most {MAX_KEYS} keys: delete some first"),
        ),
        Err(Refusal::StoreFull) => error(
            StatusCode::INSUFFICIENT_STORAGE,
            "store_full",
            format!("the store holds at most {MAX_STORED_BYTES} bytes: delete some keys first"),
        ),
    }
}

/// Bodies too large to keep are still read, and dropped, up to this many bytes, so that the
/// client, still sending, gets the 413: closing a connection with unread bytes resets it, and
/// the client may never see the answer.
const DRAIN_BYTES: u64 = 16 << 20;

/// The body, or the answer refusing it: 413 beyond [`MAX_BODY_BYTES`].
async fn read_body(mut body: Incoming, declared: Option<u64>) -> Result<Bytes, Response<Body>> {
    let too_large = || {
        error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("a body may hold at most {MAX_BODY_BYTES} bytes"),
        )
    };
    if declared.is_some_and(|length| length > DRAIN_BYTES) {
        return Err(too_large());
    }
    let mut kept = BytesMut::new();
    let mut seen = 0;
    while let Some(frame) = body.frame().await {
        let frame = frame
            .map_err(|err| error(StatusCode::BAD_REQUEST, "bad_body", format!("the body could not be read: {err}")))?;
        let Ok(data) = frame.into_data() else { continue };
        seen += data.len() as u64;
        if seen > DRAIN_BYTES {
            break;
        }
        if seen <= MAX_BODY_BYTES as u64 {
            kept.extend_from_slice(&data);
        }
    }
    if seen > MAX_BODY_BYTES as u64 {
        return Err(too_large());
    }
    Ok(kept.freeze())
}

/// `?delay_ms=N`, if the query has it; a value that is not a whole number is refused.
fn delay_from_query(query: Option<&str>) -> Result<Option<Duration>, String> {
    let mut delay = None;
    for (name, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        if name == "delay_ms" {
            let ms = value
                .parse::<u64>()
                .map_err(|_| format!("delay_ms must be a whole number of milliseconds, not {value:?}"))?;
            delay = Some(Duration::from_millis(ms));
        }
    }
    Ok(delay)
}

fn not_found(key: &str) -> Response<Body> {
    json(StatusCode::NOT_FOUND, json!({"error": "not_found", "key": key, "message": "no write to this key is visible"}))
}

/// An error as JSON: a stable kind for programs, a sentence for people.
fn error(status: StatusCode, kind: &str, message: String) -> Response<Body> {
    json(status, json!({"error": kind, "message": message}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str) -> Value {
        Value { body: Bytes::from(text.to_string()), content_type: DEFAULT_TYPE.into() }
    }

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_write_is_seen_only_once_its_delay_has_passed() {
        let start = Instant::now();
        let mut store = Store::new(500 * MS);
        assert_eq!(store.write("k", value("1"), None, start), Ok(500 * MS));
        assert_eq!(store.read("k", start), None);
        assert_eq!(store.read("k", start + 499 * MS), None);
        assert_eq!(store.read("k", start + 500 * MS), Some(value("1")));
        // A write's own delay overrides the default.
        assert_eq!(store.write("j", value("2"), Some(20 * MS), start), Ok(20 * MS));
        assert_eq!(store.read("j", start + 19 * MS), None);
        assert_eq!(store.read("j", start + 20 * MS), Some(value("2")));
        assert_eq!(store.read("missing", start + 20 * MS), None);
    }

    #[test]
    fn reads_see_the_old_body_until_the_new_one_is_visible_and_a_replaced_write_never() {
        let start = Instant::now();
        let mut store = Store::new(100 * MS);
        store.write("k", value("old"), None, start).unwrap();
        store.write("k", value("new"), None, start + 200 * MS).unwrap();
        assert_eq!(store.read("k", start + 250 * MS), Some(value("old")));
        assert_eq!(store.read("k", start + 300 * MS), Some(value("new")));
        // Two writes in one delay: the first is replaced before anyone could see it.
        store.write("k", value("lost"), None, start + 400 * MS).unwrap();
        store.write("k", value("last"), None, start + 450 * MS).unwrap();
        assert_eq!(store.read("k", start + 520 * MS), Some(value("new")));
        assert_eq!(store.read("k", start + 550 * MS), Some(value("last")));
    }

    #[test]
    fn a_delete_is_immediate_and_frees_what_the_key_held() {
        let start = Instant::now();
        let mut store = Store::new(100 * MS);
        store.write("k", value("seen"), None, start).unwrap();
        assert!(store.read("k", start + 100 * MS).is_some());
        store.write("k", value("waiting"), None, start + 100 * MS).unwrap();
        assert!(store.delete("k"));
        assert_eq!(store.read("k", start + 300 * MS), None);
        assert!(!store.delete("k"));
        assert_eq!(store.stored_bytes, 0);
        assert!(store.entries.is_empty());
    }

    #[test]
    fn delays_are_bounded() {
        let start = Instant::now();
        let mut store = Store::new(Duration::from_secs(7200));
        assert_eq!(store.write("k", value(""), None, start), Ok(MAX_DELAY));
        assert_eq!(store.write("k", value(""), Some(Duration::MAX), start), Ok(MAX_DELAY));
        assert_eq!(delay_from_query(Some("delay_ms=250&x=1")), Ok(Some(250 * MS)));
        assert_eq!(delay_from_query(None), Ok(None));
        assert!(delay_from_query(Some("delay_ms=soon")).unwrap_err().contains("\"soon\""));
    }

    #[test]
    fn the_store_refuses_keys_and_bytes_beyond_its_bounds_and_counts_what_it_holds() {
        let start = Instant::now();
        let mut store = Store::new(Duration::ZERO);
        let big = Value { body: Bytes::from(vec![b'x'; MAX_BODY_BYTES]), content_type: String::new() };
        let fits = MAX_STORED_BYTES / (MAX_BODY_BYTES + 8);
        for i in 0..fits {
            store.write(&format!("key{i:05}"), big.clone(), None, start).unwrap();
        }
        assert_eq!(store.write("one more", big.clone(), None, start), Err(Refusal::StoreFull));
        // A delete makes room; a body that becomes visible frees the one it replaces.
        assert!(store.delete("key00001"));
        store.write("key00000", big.clone(), None, start).unwrap();
        assert_eq!(store.stored_bytes, (fits - 1) * (MAX_BODY_BYTES + 8) + MAX_BODY_BYTES);
        store.read("key00000", start);
        assert_eq!(store.stored_bytes, (fits - 1) * (MAX_BODY_BYTES + 8));
        for i in (0..fits).filter(|&i| i != 1) {
            assert!(store.delete(&format!("key{i:05}")));
        }
        assert_eq!(store.stored_bytes, 0);

        for i in 0..MAX_KEYS {
            store.write(&i.to_string(), value(""), None, start).unwrap();
        }
        assert_eq!(store.write("new", value(""), None, start), Err(Refusal::TooManyKeys));
        store.write("7", value("an old key is still written"), None, start).unwrap();
    }
}
