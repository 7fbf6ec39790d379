//! The orders API over HTTP: a login gives a bearer token, the orders need it (401 and
//! `WWW-Authenticate: Bearer` without it), a user's orders are the same at each login, only
//! open ones are cancelled (409 for the others), each login has its own copy, and `/stats`
//! counts logins, lists, reads, cancellations and refusals.

use bytes::Bytes;
use horde_target::{TargetServer, ORDERS_PER_USER};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{ALLOW, WWW_AUTHENTICATE};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpStream;

struct Answer {
    status: StatusCode,
    headers: hyper::HeaderMap,
    json: Value,
}

async fn client(server: &TargetServer) -> SendRequest<Full<Bytes>> {
    let tcp = TcpStream::connect(server.addr()).await.unwrap();
    let (client, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await.unwrap();
    tokio::spawn(connection);
    client
}

async fn send(
    client: &mut SendRequest<Full<Bytes>>,
    method: Method,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> Answer {
    let mut request = Request::builder().method(method).uri(path).header("host", "127.0.0.1");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let response = client.send_request(request.body(Full::new(Bytes::from(body.to_string()))).unwrap()).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    Answer { status, headers, json: serde_json::from_slice(&body).unwrap() }
}

async fn login(client: &mut SendRequest<Full<Bytes>>, user: &str) -> String {
    let answer = send(client, Method::POST, "/api/login", None, &json!({"user": user}).to_string()).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.json);
    assert_eq!(answer.json["user"], user);
    answer.json["token"].as_str().unwrap().to_string()
}

async fn orders(client: &mut SendRequest<Full<Bytes>>, token: &str) -> Vec<Value> {
    let answer = send(client, Method::GET, "/api/orders", Some(token), "").await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.json["count"], ORDERS_PER_USER);
    answer.json["orders"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_login_lists_reads_and_cancels_its_open_orders() {
    let server = TargetServer::start("127.0.0.1:0".parse().unwrap()).unwrap();
    let mut client = client(&server).await;
    let token = login(&mut client, "ann").await;
    assert_eq!(token.len(), 32);

    let listed = orders(&mut client, &token).await;
    let statuses: Vec<_> = listed.iter().map(|o| o["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["open", "shipped", "open", "shipped"]);
    let mut cancelled = 0;
    for order in &listed {
        let id = order["id"].as_u64().unwrap();
        let read = send(&mut client, Method::GET, &format!("/api/orders/{id}"), Some(&token), "").await;
        assert_eq!((read.status, &read.json), (StatusCode::OK, order));
        let cancel = send(&mut client, Method::POST, &format!("/api/orders/{id}/cancel"), Some(&token), "").await;
        if order["status"] == "open" {
            assert_eq!(cancel.status, StatusCode::OK);
            assert_eq!(cancel.json["status"], "cancelled");
            cancelled += 1;
        } else {
            assert_eq!(cancel.status, StatusCode::CONFLICT);
            assert_eq!(
                (cancel.json["error"].as_str(), cancel.json["status"].as_str()),
                (Some("not_open"), Some("shipped"))
            );
        }
    }
    // Cancelled ones stay cancelled, and cannot be cancelled again.
    let first = listed[0]["id"].as_u64().unwrap();
    assert_eq!(orders(&mut client, &token).await[0]["status"], "cancelled");
    let again = send(&mut client, Method::POST, &format!("/api/orders/{first}/cancel"), Some(&token), "").await;
    assert_eq!((again.status, again.json["status"].as_str()), (StatusCode::CONFLICT, Some("cancelled")));

    // Another login of the same user has the same orders, all as they were.
    let second = login(&mut client, "ann").await;
    assert_ne!(second, token);
    let fresh = orders(&mut client, &second).await;
    assert_eq!(fresh.iter().map(|o| &o["id"]).collect::<Vec<_>>(), listed.iter().map(|o| &o["id"]).collect::<Vec<_>>());
    assert_eq!(fresh[0]["status"], "open");
    // Another user has other ids; one login cannot reach another's orders.
    let bob = login(&mut client, "bob").await;
    assert_ne!(orders(&mut client, &bob).await[0]["id"], listed[0]["id"]);
    let foreign = send(&mut client, Method::GET, &format!("/api/orders/{first}"), Some(&bob), "").await;
    assert_eq!((foreign.status, foreign.json["error"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")));

    let stats = server.stats();
    assert_eq!(cancelled, 2);
    assert_eq!(
        (stats.api_logins, stats.orders_listed, stats.orders_read, stats.orders_cancelled, stats.unauthorized),
        (3, 4, 4, 2, 0)
    );
    assert_eq!(stats.by_route["POST /api/orders/{id}/cancel"], 5);
    assert_eq!(stats.by_route["GET /api/orders/{id}"], 5);
}

#[tokio::test]
async fn orders_need_a_known_bearer_token() {
    let server = TargetServer::start("127.0.0.1:0".parse().unwrap()).unwrap();
    let mut client = client(&server).await;
    let token = login(&mut client, "ann").await;
    let id = orders(&mut client, &token).await[0]["id"].as_u64().unwrap();

    for (method, path) in [
        (Method::GET, "/api/orders".to_string()),
        (Method::GET, format!("/api/orders/{id}")),
        (Method::POST, format!("/api/orders/{id}/cancel")),
    ] {
        for token in [None, Some("not-a-token"), Some("")] {
            let answer = send(&mut client, method.clone(), &path, token, "").await;
            assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{method} {path} with {token:?}");
            assert_eq!(answer.json["error"], "unauthorized");
            assert_eq!(answer.headers[WWW_AUTHENTICATE], "Bearer");
        }
    }
    // The refused cancel changed nothing.
    assert_eq!(orders(&mut client, &token).await[0]["status"], "open");
    let stats = server.stats();
    assert_eq!((stats.unauthorized, stats.orders_cancelled, stats.orders_read), (9, 0, 0));
}

#[tokio::test]
async fn bad_logins_methods_and_paths_are_refused_with_a_reason() {
    let server = TargetServer::start("127.0.0.1:0".parse().unwrap()).unwrap();
    let mut client = client(&server).await;
    for body in ["", "not json", r#"{"user": ""}"#, r#"{"user": 7}"#, r#"{"name": "ann"}"#] {
        let answer = send(&mut client, Method::POST, "/api/login", None, body).await;
        assert_eq!(
            (answer.status, answer.json["error"].as_str()),
            (StatusCode::BAD_REQUEST, Some("bad_login")),
            "{body}"
        );
    }
    let large = json!({"user": "x".repeat(20_000)}).to_string();
    let answer = send(&mut client, Method::POST, "/api/login", None, &large).await;
    assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE);

    let answer = send(&mut client, Method::GET, "/api/login", None, "").await;
    assert_eq!((answer.status, &answer.headers[ALLOW]), (StatusCode::METHOD_NOT_ALLOWED, &"POST".parse().unwrap()));
    let token = login(&mut client, "ann").await;
    let answer = send(&mut client, Method::DELETE, "/api/orders", Some(&token), "").await;
    assert_eq!(answer.status, StatusCode::METHOD_NOT_ALLOWED);
    let answer = send(&mut client, Method::GET, "/api/orders/1/cancel", Some(&token), "").await;
    assert_eq!((answer.status, &answer.headers[ALLOW]), (StatusCode::METHOD_NOT_ALLOWED, &"POST".parse().unwrap()));
    for path in ["/api/orders/abc", "/api/orders/1/ship"] {
        let answer = send(&mut client, Method::GET, path, Some(&token), "").await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{path}");
    }
    let stats = server.stats();
    assert_eq!((stats.api_logins, stats.unauthorized), (1, 0));
    assert_eq!(stats.total, 12);
}
