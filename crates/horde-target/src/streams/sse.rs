//! `/sse/events`: server-sent events, one every interval, then the end of the stream.

use super::{tick, Cadence};
use crate::server::{Body, Shared};
use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::Response;
use std::convert::Infallible;

/// A response whose body is `cadence.count` events, the first at once, each later one
/// `cadence.interval` after the previous. The body ends after the last: the stream is bounded.
pub(crate) fn events(cadence: Cadence, state: Shared) -> Response<Body> {
    state.count(|stats| stats.sse_streams += 1);
    let frames = futures_util::stream::unfold((1, state), move |(n, state)| async move {
        if n > cadence.count {
            return None;
        }
        if n > 1 {
            tokio::time::sleep(cadence.interval).await;
        }
        // Counted as it is handed to the connection, before the client can have read it.
        state.count(|stats| stats.sse_events += 1);
        let event = format!("id: {n}\nevent: tick\ndata: {}\n\n", tick(n));
        Some((Ok::<_, Infallible>(Frame::data(Bytes::from(event))), (n + 1, state)))
    });
    let mut response = Response::new(StreamBody::new(frames).boxed_unsync());
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    // Each event is news: nothing along the way may keep a copy.
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
