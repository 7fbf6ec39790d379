//! The eventually consistent store over HTTP: a write is refused to readers (404) until its
//! delay has passed, then read back with its content type; deletes are immediate; bodies and
//! delays are checked; and `/stats` counts writes and reads of each kind.

use bytes::Bytes;
use horde_target::{TargetOptions, TargetServer};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::client::conn::http1::SendRequest;
use hyper::header::CONTENT_TYPE;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::time::Instant;

type Body = UnsyncBoxBody<Bytes, Infallible>;

struct Answer {
    status: StatusCode,
    content_type: Option<String>,
    body: Bytes,
}

impl Answer {
    fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

async fn client(server: &TargetServer) -> SendRequest<Body> {
    let tcp = TcpStream::connect(server.addr()).await.unwrap();
    let (client, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await.unwrap();
    tokio::spawn(connection);
    client
}

async fn send(
    client: &mut SendRequest<Body>,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Body,
) -> Answer {
    let mut request = Request::builder().method(method).uri(path).header("host", "127.0.0.1");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = client.send_request(request.body(body).unwrap()).await.unwrap();
    let status = response.status();
    let content_type = response.headers().get(CONTENT_TYPE).map(|v| v.to_str().unwrap().to_string());
    Answer { status, content_type, body: response.into_body().collect().await.unwrap().to_bytes() }
}

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed_unsync()
}

async fn get(client: &mut SendRequest<Body>, path: &str) -> Answer {
    send(client, Method::GET, path, &[], full(Bytes::new())).await
}

#[tokio::test]
async fn a_write_is_not_found_before_its_delay_and_read_back_after() {
    let options = TargetOptions { eventual_delay: Duration::from_millis(1000), ..Default::default() };
    let server = TargetServer::start_with("127.0.0.1:0".parse().unwrap(), options).unwrap();
    let mut client = client(&server).await;

    let written = Instant::now();
    let document = r#"{"order": 7, "state": "paid"}"#;
    let answer = send(&mut client, Method::PUT, "/eventual/order-7", &[], full(document)).await;
    // The server took the write between `written` and `acknowledged`.
    let acknowledged = Instant::now();
    assert_eq!(answer.status, StatusCode::ACCEPTED);
    assert_eq!(answer.json(), serde_json::json!({"key": "order-7", "visible_after_ms": 1000}));

    // Read at once (well within the second): nothing is visible yet.
    let answer = get(&mut client, "/eventual/order-7").await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
    assert_eq!(answer.json()["error"], "not_found");
    assert!(written.elapsed() < Duration::from_millis(1000), "the first read came too late to show anything");

    // Once the delay has passed, the body comes back as it was sent, as JSON by default.
    tokio::time::sleep_until(acknowledged + Duration::from_millis(1000)).await;
    let answer = get(&mut client, "/eventual/order-7").await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.body, document);
    assert_eq!(answer.content_type.as_deref(), Some("application/json"));

    // The write's own delay wins over the server's, and its content type is kept.
    let answer =
        send(&mut client, Method::POST, "/eventual/note?delay_ms=0", &[("content-type", "text/plain")], full("hi"))
            .await;
    assert_eq!(answer.status, StatusCode::ACCEPTED);
    assert_eq!(answer.json()["visible_after_ms"], 0);
    let answer = get(&mut client, "/eventual/note").await;
    assert_eq!(
        (answer.status, answer.content_type.as_deref(), &answer.body[..]),
        (StatusCode::OK, Some("text/plain"), &b"hi"[..])
    );

    // A delete is immediate.
    let answer = send(&mut client, Method::DELETE, "/eventual/note", &[], full(Bytes::new())).await;
    assert_eq!(answer.status, StatusCode::NO_CONTENT);
    assert_eq!(get(&mut client, "/eventual/note").await.status, StatusCode::NOT_FOUND);
    let answer = send(&mut client, Method::DELETE, "/eventual/note", &[], full(Bytes::new())).await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);

    let stats = server.stats();
    assert_eq!(
        (stats.eventual_writes, stats.eventual_reads_found, stats.eventual_reads_not_found),
        (2, 2, 2),
        "{stats:?}"
    );
    assert_eq!(stats.by_route.get("GET /eventual/{key}"), Some(&4));
    assert_eq!(stats.by_route.get("DELETE /eventual/{key}"), Some(&2));
    let served = serde_json::to_string(&stats.to_json()).unwrap();
    assert!(served.contains(r#""eventual_writes":2"#), "{served}");
}

#[tokio::test]
async fn bodies_beyond_a_mebibyte_bad_delays_and_other_methods_are_refused_with_a_reason() {
    let server = TargetServer::start("127.0.0.1:0".parse().unwrap()).unwrap();
    let limit = 1 << 20;

    // Exactly the bound is accepted.
    let mut client = client(&server).await;
    let answer = send(&mut client, Method::PUT, "/eventual/big", &[], full(vec![b'x'; limit])).await;
    assert_eq!(answer.status, StatusCode::ACCEPTED);

    // One byte more is refused, whether the length is declared ...
    let answer = send(&mut client, Method::PUT, "/eventual/big", &[], full(vec![b'x'; limit + 1])).await;
    assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(answer.json()["error"], "body_too_large");

    // ... or only found out while reading a chunked body; the connection goes on.
    let chunks = futures_util::stream::iter(
        [limit / 2, limit / 2, 1].map(|n| Ok::<_, Infallible>(Frame::data(Bytes::from(vec![b'y'; n])))),
    );
    let answer = send(&mut client, Method::PUT, "/eventual/big", &[], StreamBody::new(chunks).boxed_unsync()).await;
    assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE);

    let answer = send(&mut client, Method::PUT, "/eventual/k?delay_ms=soon", &[], full("1")).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(answer.json()["error"], "bad_delay");
    assert!(answer.json()["message"].as_str().unwrap().contains("\"soon\""));

    let answer = send(&mut client, Method::PATCH, "/eventual/k", &[], full("1")).await;
    assert_eq!(answer.status, StatusCode::METHOD_NOT_ALLOWED);
    let answer = get(&mut client, "/eventual/").await;
    assert_eq!((answer.status, answer.json()["error"].as_str()), (StatusCode::BAD_REQUEST, Some("missing_key")));

    assert_eq!(server.stats().eventual_writes, 1);
}
