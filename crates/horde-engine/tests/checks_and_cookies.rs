//! Checks' selection, templated validations and the cookie jar's steps against the built-in
//! target, with the server's own counts.

use horde_engine::{lower, run, RunControl};
use horde_metrics::{RunStatus, Sink, Totals};
use horde_plan::Plan;
use horde_target::TargetServer;
use std::sync::Arc;

struct Quiet;
impl Sink for Quiet {
    fn interval(&mut self, _: &mut Totals) {}
    fn finish(&mut self, _: &mut Totals, _: RunStatus) {}
}

fn run_plan(json: &str) -> Totals {
    let plan = Plan::from_json(json).unwrap_or_else(|e| panic!("{e:?}"));
    let program = Arc::new(lower(&plan).unwrap_or_else(|e| panic!("{e:?}")));
    let result = run(program, &RunControl::new(), &mut Quiet);
    assert_eq!(result.status, RunStatus::Completed);
    result.totals
}

fn row<'a>(totals: &'a Totals, name: &str) -> &'a horde_metrics::Recorder {
    &totals.requests.iter().find(|(n, _)| &**n == name).unwrap_or_else(|| panic!("no row {name}")).1
}

fn errors(totals: &Totals) -> Vec<String> {
    totals
        .errors
        .iter()
        .map(|(key, record)| format!("{} {} x{}: {}", key.request, key.kind, record.count, record.message))
        .collect()
}

#[test]
fn a_find_all_list_is_walked_by_foreach_and_expected_values_are_templates() {
    let server = TargetServer::start("127.0.0.1:0".parse().unwrap()).unwrap();
    let users = 3;
    let plan = format!(
        r#"{{"version": 1, "protocol": {{"base_url": "{}"}}, "options": {{"workers": 2}},
            "scenarios": [{{"name": "s", "injection": [{{"type": "at_once_users", "users": {users}}}],
              "steps": [
                {{"type": "set", "values": [{{"name": "cheapest", "value": "oak plank"}}]}},
                {{"type": "request", "name": "items", "method": "GET", "url": "/api/items", "checks": [
                  {{"source": {{"type": "jsonpath", "path": "$.items[*].id"}}, "select": {{"type": "all"}}, "save_as": "ids"}},
                  {{"source": {{"type": "jsonpath", "path": "$.items[*]"}}, "select": {{"type": "count"}}, "validate": {{"type": "is", "value": "3"}}}},
                  {{"source": {{"type": "jmespath", "expression": "items[?price < `20`].name"}}, "validate": {{"type": "is", "value": "${{cheapest}}"}}}},
                  {{"source": {{"type": "jsonpath", "path": "$.count"}}, "save_as": "count"}}]}},
                {{"type": "foreach", "list": "${{ids}}", "element": "id", "steps": [
                  {{"type": "request", "name": "item", "method": "GET", "url": "/api/items/${{id}}", "checks": [
                    {{"source": {{"type": "jsonpath", "path": "$.id"}}, "validate": {{"type": "is", "value": "${{id}}"}}}},
                    {{"source": {{"type": "jsonpath", "path": "$.price"}}, "validate": {{"type": "gt", "value": "10"}}}},
                    {{"source": {{"type": "current_location"}}, "validate": {{"type": "is", "value": "{}/api/items/${{id}}"}}}},
                    {{"source": {{"type": "response_time_in_millis"}}, "validate": {{"type": "lt", "value": "10000"}}}}]}}]}}
              ]}}]}}"#,
        server.base_url(),
        server.base_url(),
    );
    let totals = run_plan(&plan);
    assert_eq!(totals.request_counts(), (users * 4, 0), "{:?}", errors(&totals));
    assert_eq!(row(&totals, "item").ok.len(), users * 3);
    let stats = server.stats();
    assert_eq!(stats.by_route.get("GET /api/items/{id}"), Some(&(users * 3)), "{stats:?}");
    assert_eq!(stats.total, users * 4);

    // The same plan with another expected value fails on it, naming the template.
    let failing = plan.replace(r#""value": "oak plank""#, r#""value": "ash frame""#);
    let totals = run_plan(&failing);
    assert_eq!(row(&totals, "items").ko.len(), users);
    let (key, record) = totals.errors.iter().next().expect("an error");
    assert_eq!((&*key.kind, &*key.request, record.count), ("check_failed", "items", users));
    assert_eq!(
        record.message,
        r#"jmespath("items[?price < `20`].name"): expected "ash frame" (from "${cheapest}"), found "oak plank""#
    );
}

#[test]
fn cookie_steps_add_read_and_flush_the_users_jar() {
    let server = TargetServer::start("127.0.0.1:0".parse().unwrap()).unwrap();
    let users = 4;
    let echo = |name: &str, checks: &str| {
        format!(
            r#"{{"type": "request", "name": "{name}", "method": "GET", "url": "/cookies/echo", "checks": [{checks}]}}"#
        )
    };
    let is = |cookie: &str, value: &str| {
        format!(
            r#"{{"source": {{"type": "jsonpath", "path": "$.cookies.{cookie}"}}, "validate": {{"type": "is", "value": "{value}"}}}}"#
        )
    };
    let absent = |path: &str| {
        format!(r#"{{"source": {{"type": "jsonpath", "path": "{path}"}}, "validate": {{"type": "not_exists"}}}}"#)
    };
    let plan = format!(
        r#"{{"version": 1, "protocol": {{"base_url": "{base}"}}, "options": {{"workers": 2}},
            "scenarios": [{{"name": "s", "injection": [{{"type": "at_once_users", "users": {users}}}],
              "steps": [
                {{"type": "add_cookie", "name": "token", "value": "u${{__user_id}}"}},
                {{"type": "add_cookie", "name": "secret", "value": "s", "secure": true}},
                {{"type": "add_cookie", "name": "elsewhere", "value": "e", "domain": "example.com"}},
                {{"type": "add_cookie", "name": "deep", "value": "d", "path": "/cookies/echo"}},
                {{"type": "request", "name": "set", "method": "GET", "url": "/cookies/set?persistent=p1&max_age=600"}},
                {{"type": "request", "name": "set session", "method": "GET", "url": "/cookies/set?session=s1"}},
                {{"type": "get_cookie", "name": "token", "save_as": "token"}},
                {{"type": "get_cookie", "name": "session", "domain": "127.0.0.1", "save_as": "session"}},
                {echo_all},
                {{"type": "flush_session_cookies"}},
                {echo_persistent},
                {{"type": "flush_cookie_jar"}},
                {echo_none},
                {{"type": "get_cookie", "name": "persistent", "save_as": "gone"}},
                {{"type": "request", "name": "never", "method": "GET", "url": "/cookies/echo"}}
              ]}}]}}"#,
        base = server.base_url(),
        echo_all = echo(
            "all",
            &[
                is("token", "${token}"),
                is("session", "${session}"),
                is("persistent", "p1"),
                is("deep", "d"),
                // Secure: only over https, but a loopback address counts as secure, as in browsers.
                is("secret", "s"),
                absent("$.cookies.elsewhere"),
            ]
            .join(","),
        ),
        echo_persistent = echo(
            "after flush_session_cookies",
            &[is("persistent", "p1"), absent("$.cookies.session"), absent("$.cookies.token"), absent("$.cookies.deep")]
                .join(","),
        ),
        echo_none = echo("after flush_cookie_jar", &absent("$.header")),
    );
    let totals = run_plan(&plan);
    // Every request passes; the last get_cookie fails each user once, in its own row, and
    // the user carries on to the next request, as a Gatling user does after a failed step.
    let (ok, ko) = totals.request_counts();
    assert_eq!((ok, ko), (users * 6, 0), "{:?}", errors(&totals));
    assert_eq!(row(&totals, "never").ok.len(), users, "the user goes on after the missing cookie");
    let found = errors(&totals);
    assert_eq!(
        found,
        [format!(
            r#"get_cookie persistent check_failed x{users}: get_cookie("persistent"): no such cookie for 127.0.0.1"#
        )]
    );
    let stats = server.stats();
    assert_eq!(stats.by_route.get("GET /cookies/echo"), Some(&(users * 4)), "{stats:?}");
    assert_eq!(stats.by_route.get("GET /cookies/set"), Some(&(users * 2)), "{stats:?}");

    // With on_check_failure = stop_iteration the user stops at the missing cookie instead.
    let stopping = plan
        .replace(r#""options": {"workers": 2}"#, r#""options": {"workers": 2, "on_check_failure": "stop_iteration"}"#);
    assert_ne!(stopping, plan);
    let totals = run_plan(&stopping);
    assert_eq!(totals.request_counts(), (users * 5, 0), "{:?}", errors(&totals));
    assert!(totals.requests.iter().all(|(n, _)| &**n != "never"), "the user must stop at the missing cookie");
}
