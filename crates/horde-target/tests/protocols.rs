//! The target's protocols, each checked with a client of its own: HTTP/2 over TLS (ALPN,
//! verified against the certificate the server made), h2c with prior knowledge, HTTP/1.1,
//! gzip only when asked, WebSockets and server-sent events; and the server's counts of each.

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use horde_target::{Stats, TargetOptions, TargetServer, COMPRESSED_PAGE_PHRASE};
use http_body_util::{BodyExt, Empty};
use hyper::header::{CACHE_CONTROL, CONTENT_ENCODING, CONTENT_TYPE, VARY};
use hyper::{Request, Response, StatusCode, Version};
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, ServerName};
use std::io::Read;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;

fn start(tls: bool) -> TargetServer {
    TargetServer::start_with("127.0.0.1:0".parse().unwrap(), TargetOptions { tls, ..Default::default() }).unwrap()
}

/// A TLS connection to the server, verified against its certificate for `name`, offering `alpn`.
async fn tls_connect(server: &TargetServer, name: &str, alpn: &[&[u8]]) -> std::io::Result<TlsStream<TcpStream>> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from(server.cert_der().unwrap().to_vec())).unwrap();
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = TcpStream::connect(server.addr()).await?;
    connector.connect(ServerName::try_from(name.to_string()).unwrap(), tcp).await
}

/// An HTTP/2 client on `io`: its connection is driven by a task of its own.
async fn h2_client<T>(io: T) -> h2::client::SendRequest<Bytes>
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (client, connection) = h2::client::handshake(io).await.unwrap();
    tokio::spawn(connection);
    client
}

async fn h2_get(client: &mut h2::client::SendRequest<Bytes>, url: &str) -> (StatusCode, Vec<u8>) {
    let request = Request::get(url).body(()).unwrap();
    let (response, _) = client.clone().ready().await.unwrap().send_request(request, true).unwrap();
    let response = response.await.unwrap();
    assert_eq!(response.version(), Version::HTTP_2);
    let status = response.status();
    let mut body = response.into_body();
    let mut bytes = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
        bytes.extend_from_slice(&chunk);
    }
    (status, bytes)
}

/// An HTTP/1.1 client on `io`.
async fn http1_client<T>(io: T) -> hyper::client::conn::http1::SendRequest<Empty<Bytes>>
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (client, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await.unwrap();
    tokio::spawn(connection.with_upgrades());
    client
}

async fn http1_get(
    client: &mut hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
    path: &str,
    headers: &[(&str, &str)],
) -> (Response<()>, Bytes) {
    let mut request = Request::get(path).header("host", "127.0.0.1");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = client.send_request(request.body(Empty::new()).unwrap()).await.unwrap();
    assert_eq!(response.version(), Version::HTTP_11);
    let (parts, body) = response.into_parts();
    (Response::from_parts(parts, ()), body.collect().await.unwrap().to_bytes())
}

fn route(stats: &Stats, key: &str) -> u64 {
    stats.by_route.get(key).copied().unwrap_or(0)
}

#[tokio::test]
async fn https_speaks_http2_by_alpn_and_http1_when_offered_alone_verified_for_every_name() {
    let server = start(true);
    assert!(server.base_url().starts_with("https://127.0.0.1:"), "{}", server.base_url());
    let base = server.base_url();

    // HTTP/2 chosen by ALPN, for the IPv4 loopback name: two requests on one connection.
    let tls = tls_connect(&server, "127.0.0.1", &[b"h2", b"http/1.1"]).await.unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let mut client = h2_client(tls).await;
    let (status, body) = h2_get(&mut client, &format!("{base}/api/items")).await;
    assert_eq!(status, StatusCode::OK);
    let items: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(items["count"], 3);
    let (status, body) = h2_get(&mut client, &format!("{base}/")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(String::from_utf8(body).unwrap().contains("javax.faces.ViewState"));

    // The same certificate is valid for the IPv6 loopback name, by HTTP/2 alone ...
    let tls = tls_connect(&server, "::1", &[b"h2"]).await.unwrap();
    let mut client = h2_client(tls).await;
    assert_eq!(h2_get(&mut client, &format!("{base}/api/items/2")).await.0, StatusCode::OK);

    // ... and for localhost, by HTTP/1.1 when that is all the client offers.
    let tls = tls_connect(&server, "localhost", &[b"http/1.1"]).await.unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let mut client = http1_client(tls).await;
    let (response, _) = http1_get(&mut client, "/api/items/1", &[]).await;
    assert_eq!(response.status(), StatusCode::OK);

    // Any other name is refused: the client really verifies.
    let err = tls_connect(&server, "example.com", &[b"h2"]).await.unwrap_err();
    assert!(err.to_string().contains("not valid for name \"example.com\""), "{err}");

    let stats = server.stats();
    assert_eq!(stats.tls_connections, 3, "{stats:?}");
    assert_eq!(stats.http2_connections, 2, "{stats:?}");
    assert_eq!(stats.total, 4);
    assert_eq!(route(&stats, "GET /api/items/{id}"), 2);
}

#[tokio::test]
async fn cleartext_serves_h2c_with_prior_knowledge_beside_http1() {
    let server = start(false);
    assert!(server.base_url().starts_with("http://127.0.0.1:"));
    assert_eq!((server.cert_pem(), server.cert_der(), server.fingerprint()), (None, None, None));

    let mut h2 = h2_client(TcpStream::connect(server.addr()).await.unwrap()).await;
    let (status, body) = h2_get(&mut h2, &format!("{}/api/items/2", server.base_url())).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&body).unwrap()["name"], "ash frame");
    assert_eq!(h2_get(&mut h2, &format!("{}/status/503", server.base_url())).await.0, StatusCode::SERVICE_UNAVAILABLE);

    let mut http1 = http1_client(TcpStream::connect(server.addr()).await.unwrap()).await;
    let (response, body) = http1_get(&mut http1, "/api/items/2", &[]).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&body).unwrap()["name"], "ash frame");

    let stats = server.stats();
    assert_eq!((stats.http2_connections, stats.tls_connections), (1, 0), "{stats:?}");
    assert_eq!(route(&stats, "GET /api/items/{id}"), 2);
    assert_eq!(route(&stats, "GET /status/{code}"), 1);
}

#[tokio::test]
async fn the_compressed_page_is_gzipped_only_when_the_request_allows_it() {
    let server = start(false);
    let mut client = http1_client(TcpStream::connect(server.addr()).await.unwrap()).await;

    let (plain_response, plain) = http1_get(&mut client, "/compressed", &[]).await;
    assert_eq!(plain_response.status(), StatusCode::OK);
    assert_eq!(plain_response.headers().get(CONTENT_ENCODING), None);
    assert_eq!(plain_response.headers()[VARY], "accept-encoding");
    assert!(plain_response.headers()[CONTENT_TYPE].to_str().unwrap().starts_with("text/html"));
    assert!(std::str::from_utf8(&plain).unwrap().contains(COMPRESSED_PAGE_PHRASE));
    assert!(plain.len() > 4096);

    let (refused, body) = http1_get(&mut client, "/compressed", &[("accept-encoding", "br, gzip;q=0")]).await;
    assert_eq!(refused.headers().get(CONTENT_ENCODING), None);
    assert_eq!(body, plain);

    let (gzipped_response, gzipped) =
        http1_get(&mut client, "/compressed", &[("accept-encoding", "gzip, deflate, br")]).await;
    assert_eq!(gzipped_response.headers()[CONTENT_ENCODING], "gzip");
    assert_eq!(gzipped_response.headers()[VARY], "accept-encoding");
    assert!(gzipped.len() < plain.len() / 5, "{} of {}", gzipped.len(), plain.len());
    let mut decoded = Vec::new();
    flate2::read::GzDecoder::new(&gzipped[..]).read_to_end(&mut decoded).unwrap();
    assert_eq!(decoded, plain);

    assert_eq!(route(&server.stats(), "GET /compressed"), 3);
    // Other methods are refused, and do not start a session.
    let mut post = Request::post("/compressed").header("host", "127.0.0.1");
    post = post.header("content-length", "0");
    let response = client.send_request(post.body(Empty::new()).unwrap()).await.unwrap();
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(server.stats().sessions, 0);
}

async fn websocket(server: &TargetServer, path: &str) -> tokio_tungstenite::WebSocketStream<TcpStream> {
    let tcp = TcpStream::connect(server.addr()).await.unwrap();
    let url = format!("ws://{}{path}", server.addr());
    let (socket, response) = tokio_tungstenite::client_async(url, tcp).await.unwrap();
    assert_eq!(response.status(), StatusCode::SWITCHING_PROTOCOLS);
    socket
}

#[tokio::test]
async fn the_websocket_echo_sends_messages_back_answers_pings_and_closes() {
    let server = start(false);
    let mut socket = websocket(&server, "/ws/echo").await;
    let text = Message::text("héllo, horde");
    let binary = Message::binary(vec![0u8, 1, 2, 255, 254]);
    for message in [text.clone(), binary.clone(), text.clone()] {
        socket.send(message.clone()).await.unwrap();
        assert_eq!(socket.next().await.unwrap().unwrap(), message);
    }
    socket.send(Message::Ping(Bytes::from_static(b"are you there"))).await.unwrap();
    assert_eq!(socket.next().await.unwrap().unwrap(), Message::Pong(Bytes::from_static(b"are you there")));

    socket.close(None).await.unwrap();
    match socket.next().await {
        Some(Ok(Message::Close(_))) => {}
        other => panic!("expected the server's Close, got {other:?}"),
    }
    assert!(socket.next().await.is_none());

    // The server counted each echo before its Close answered ours.
    let stats = server.stats();
    assert_eq!((stats.ws_connections, stats.ws_messages_echoed), (1, 3), "{stats:?}");
    assert_eq!(route(&stats, "GET /ws/echo"), 1);
}

#[tokio::test]
async fn a_websocket_route_refuses_a_request_that_is_no_upgrade() {
    let server = start(false);
    let mut client = http1_client(TcpStream::connect(server.addr()).await.unwrap()).await;
    let (response, body) = http1_get(&mut client, "/ws/echo", &[]).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(std::str::from_utf8(&body).unwrap().contains("not a WebSocket handshake"));
    // Nor over HTTP/2, which would need extended CONNECT.
    let mut h2 = h2_client(TcpStream::connect(server.addr()).await.unwrap()).await;
    let (status, body) = h2_get(&mut h2, &format!("{}/ws/echo", server.base_url())).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(String::from_utf8(body).unwrap().contains("needs an HTTP/1.1 upgrade"));
    assert_eq!(server.stats().ws_connections, 0);
}

#[tokio::test]
async fn the_ticker_pushes_its_count_of_messages_then_closes_normally() {
    let server = start(false);
    let started = std::time::Instant::now();
    let mut socket = websocket(&server, "/ws/ticker?count=5&interval_ms=20").await;
    // A ping in the middle is answered too.
    socket.send(Message::Ping(Bytes::from_static(b"tick?"))).await.unwrap();
    let mut ticks = Vec::new();
    let mut pongs = 0;
    let close = loop {
        match socket.next().await.expect("a Close before the end").unwrap() {
            Message::Text(text) => ticks.push(serde_json::from_str::<serde_json::Value>(&text).unwrap()),
            Message::Pong(_) => pongs += 1,
            Message::Close(frame) => break frame,
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(ticks, (1..=5).map(|n| serde_json::json!({"n": n})).collect::<Vec<_>>());
    assert_eq!(pongs, 1);
    assert_eq!(close.map(|frame| frame.code), Some(CloseCode::Normal));
    assert!(started.elapsed() >= Duration::from_millis(4 * 20));
    // tokio-tungstenite answers the Close as it is read; the stream then ends.
    assert!(socket.next().await.is_none());
    let stats = server.stats();
    assert_eq!((stats.ws_connections, stats.ws_messages_pushed), (1, 5), "{stats:?}");
}

#[tokio::test]
async fn server_sent_events_come_in_their_count_then_the_stream_ends() {
    let server = start(false);
    let mut client = http1_client(TcpStream::connect(server.addr()).await.unwrap()).await;
    let started = std::time::Instant::now();
    let (response, body) = http1_get(&mut client, "/sse/events?count=4&interval_ms=25", &[]).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()[CONTENT_TYPE], "text/event-stream");
    assert_eq!(response.headers()[CACHE_CONTROL], "no-cache");
    let expected: String = (1..=4).map(|n| format!("id: {n}\nevent: tick\ndata: {{\"n\": {n}}}\n\n")).collect();
    assert_eq!(std::str::from_utf8(&body).unwrap(), expected);
    assert!(started.elapsed() >= Duration::from_millis(3 * 25));

    // Over HTTP/2 as well.
    let mut h2 = h2_client(TcpStream::connect(server.addr()).await.unwrap()).await;
    let (status, body) = h2_get(&mut h2, &format!("{}/sse/events?count=2&interval_ms=0", server.base_url())).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body.windows(11).filter(|w| w == b"event: tick").count(), 2);

    let (bad, body) = http1_get(&mut client, "/sse/events?count=many", &[]).await;
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    assert!(std::str::from_utf8(&body).unwrap().contains("count must be a whole number"));

    let stats = server.stats();
    assert_eq!((stats.sse_streams, stats.sse_events), (2, 6), "{stats:?}");
    assert_eq!(route(&stats, "GET /sse/events"), 3);
    let json = stats.to_json();
    for key in
        ["ws_connections", "ws_messages_echoed", "sse_streams", "sse_events", "tls_connections", "http2_connections"]
    {
        assert!(json.get(key).is_some(), "{key} missing from {json}");
    }
}
