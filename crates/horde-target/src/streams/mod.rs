//! Responses that go on after their head: WebSockets (`/ws/echo`, `/ws/ticker`) and
//! server-sent events (`/sse/events`).

pub(crate) mod sse;
pub(crate) mod websocket;

use std::time::Duration;

/// At most this many messages per stream, so that no request keeps the server busy for ever.
pub(crate) const MAX_COUNT: u64 = 10_000;
/// At most this long between two messages.
pub(crate) const MAX_INTERVAL: Duration = Duration::from_secs(60);

/// How many messages a stream sends and how far apart: `?count=N&interval_ms=M`, each bounded
/// (larger values are taken as the bound, as `/delay/{ms}` does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cadence {
    pub count: u64,
    pub interval: Duration,
}

impl Default for Cadence {
    fn default() -> Self {
        Cadence { count: 10, interval: Duration::from_secs(1) }
    }
}

impl Cadence {
    /// Reads the query; a value that is not a whole number is refused with a message saying so.
    pub(crate) fn from_query(query: Option<&str>) -> Result<Cadence, String> {
        let mut cadence = Cadence::default();
        for (name, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
            let number = || value.parse::<u64>().map_err(|_| format!("{name} must be a whole number, not {value:?}"));
            match &*name {
                "count" => cadence.count = number()?.min(MAX_COUNT),
                "interval_ms" => cadence.interval = Duration::from_millis(number()?).min(MAX_INTERVAL),
                _ => {}
            }
        }
        Ok(cadence)
    }
}

/// The payload of the `n`th message of a ticker or event stream (from 1).
pub(crate) fn tick(n: u64) -> String {
    format!("{{\"n\": {n}}}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cadence_comes_from_the_query_bounded() {
        assert_eq!(Cadence::from_query(None), Ok(Cadence::default()));
        assert_eq!(
            Cadence::from_query(Some("count=3&interval_ms=25&other=x")),
            Ok(Cadence { count: 3, interval: Duration::from_millis(25) })
        );
        assert_eq!(
            Cadence::from_query(Some("count=99999999&interval_ms=99999999")),
            Ok(Cadence { count: MAX_COUNT, interval: MAX_INTERVAL })
        );
        assert_eq!(Cadence::from_query(Some("count=-1")), Err("count must be a whole number, not \"-1\"".into()));
        assert!(Cadence::from_query(Some("interval_ms=1.5")).is_err());
    }

    #[test]
    fn a_tick_is_json() {
        let value: serde_json::Value = serde_json::from_str(&tick(7)).unwrap();
        assert_eq!(value, serde_json::json!({"n": 7}));
    }
}
