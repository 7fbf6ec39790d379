//! The engine against the real built-in target server: counts agree with what the server saw,
//! the ViewState flows, cookies stay per user, failures are counted by kind.

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

fn run_plan(json: &str) -> (Totals, RunStatus) {
    let plan = Plan::from_json(json).unwrap_or_else(|e| panic!("{e:?}"));
    let program = Arc::new(lower(&plan).unwrap_or_else(|e| panic!("{e:?}")));
    let result = run(program, &RunControl::new(), &mut Quiet);
    (result.totals, result.status)
}

fn row<'a>(totals: &'a Totals, name: &str) -> &'a horde_metrics::Recorder {
    &totals.requests.iter().find(|(n, _)| &**n == name).unwrap_or_else(|| panic!("no row {name}")).1
}

const VIEW_STATE: &str = r#"{"source": {"type": "regex", "pattern": "id=\"j_id1:javax.faces.ViewState:1\" value=\"([^\"]*)\""}, "save_as": "viewState"}"#;

fn journey(base: &str, users: u64, extra_options: &str) -> String {
    format!(
        r##"{{"version": 1, "name": "journey", "protocol": {{"base_url": "{base}"}},
            "options": {{"workers": 2 {extra_options}}},
            "scenarios": [{{"name": "jsf", "injection": [{{"type": "at_once_users", "users": {users}}}],
              "steps": [
                {{"type": "request", "name": "home", "method": "GET", "url": "/", "checks": [{VIEW_STATE}]}},
                {{"type": "request", "name": "login page", "method": "GET", "url": "/login", "checks": [{VIEW_STATE}]}},
                {{"type": "request", "name": "login", "method": "POST", "url": "/login",
                  "body": {{"type": "form", "params": [{{"name": "username", "value": "user"}}, {{"name": "password", "value": "pw"}},
                                                       {{"name": "javax.faces.ViewState", "value": "${{viewState}}"}}]}},
                  "checks": [{VIEW_STATE}, {{"source": {{"type": "css", "selector": "p#user"}}, "validate": {{"type": "is", "value": "user"}}}}]}},
                {{"type": "repeat", "times": 3, "counter": "i", "steps": [
                  {{"type": "request", "name": "comment", "method": "POST", "url": "/account",
                    "body": {{"type": "form", "params": [{{"name": "comment", "value": "n${{i}}"}},
                                                         {{"name": "javax.faces.ViewState", "value": "${{viewState}}"}}]}},
                    "checks": [{VIEW_STATE}, {{"source": {{"type": "css", "selector": "#message"}}, "save_as": "message"}}]}}]}},
                {{"type": "request", "name": "items", "method": "GET", "url": "/api/items",
                  "checks": [{{"source": {{"type": "jsonpath", "path": "$.items[1].name"}}, "validate": {{"type": "is", "value": "ash frame"}}}}]}}
              ]}}]}}"##
    )
}

#[test]
fn the_jsf_journey_carries_the_view_state_and_counts_match_the_server() {
    let server = TargetServer::start("127.0.0.1:0".parse().unwrap()).unwrap();
    let users = 20;
    let (totals, status) = run_plan(&journey(&server.base_url(), users, ""));
    assert_eq!(status, RunStatus::Completed);
    let (ok, ko) = totals.request_counts();
    let errors: Vec<_> = totals.errors.values().map(|e| e.message.clone()).collect();
    assert_eq!(ko, 0, "errors: {errors:?}");
    // home, login page, login + its redirect, 3 comments, items.
    assert_eq!(ok, users * 8);
    assert_eq!(row(&totals, "login").ok.len(), users);
    assert_eq!(row(&totals, "login Redirect 1").ok.len(), users);
    assert_eq!(row(&totals, "comment").ok.len(), users * 3);
    let stats = server.stats();
    assert_eq!(stats.total, users * 8, "{stats:?}");
    assert_eq!(stats.view_state_rejections, 0);
    assert_eq!(stats.logins, users);
    // One session per user: the cookie jar is per user and kept across requests.
    assert_eq!(stats.sessions, users);
    assert_eq!(totals.users_started, users);
    assert_eq!(totals.users_finished, users);
    // Bytes are counted on the wire.
    assert!(row(&totals, "home").bytes_received > 400 * users);
}

#[test]
fn a_stale_view_state_is_rejected_and_counted_as_a_failed_check() {
    let server = TargetServer::start("127.0.0.1:0".parse().unwrap()).unwrap();
    // Post with a made-up ViewState: the server refuses it; the user stops its iteration
    // (`stop_iteration`: by default, as in Gatling, it would go on).
    let plan = format!(
        r#"{{"version": 1, "protocol": {{"base_url": "{}"}}, "options": {{"on_check_failure": "stop_iteration"}},
            "scenarios": [{{"name": "s", "injection": [{{"type": "at_once_users", "users": 3}}],
              "steps": [
                {{"type": "request", "name": "login page", "method": "GET", "url": "/login"}},
                {{"type": "request", "name": "login", "method": "POST", "url": "/login",
                  "body": {{"type": "form", "params": [{{"name": "username", "value": "u"}}, {{"name": "password", "value": "p"}},
                                                       {{"name": "javax.faces.ViewState", "value": "stale"}}]}},
                  "checks": [{VIEW_STATE}]}},
                {{"type": "request", "name": "never", "method": "GET", "url": "/"}}
              ]}}]}}"#,
        server.base_url()
    );
    let (totals, _) = run_plan(&plan);
    assert_eq!(row(&totals, "login").ko.len(), 3);
    assert!(totals.requests.iter().all(|(n, _)| &**n != "never"), "the iteration must stop after a KO");
    assert_eq!(server.stats().view_state_rejections, 3);
    assert_eq!(server.stats().total, 6);
    let error = totals.errors.iter().find(|(k, _)| k.kind == "check_failed").expect("a check failure");
    assert_eq!(error.1.count, 3);
    assert_eq!(error.1.message, "status: expected 2xx or 304, found 500");
}

#[test]
fn continue_on_failure_goes_on_and_undefined_variables_fail_the_request() {
    let server = TargetServer::start("127.0.0.1:0".parse().unwrap()).unwrap();
    let plan = format!(
        r#"{{"version": 1, "protocol": {{"base_url": "{}"}}, "options": {{"on_check_failure": "continue"}},
            "scenarios": [{{"name": "s", "injection": [{{"type": "at_once_users", "users": 2}}],
              "steps": [
                {{"type": "do_if", "condition": "false", "steps": [{{"type": "set", "values": [{{"name": "nope", "value": "1"}}]}}]}},
                {{"type": "request", "name": "missing", "method": "GET", "url": "/api/items/${{nope}}"}},
                {{"type": "request", "name": "teapot", "method": "GET", "url": "/status/418"}},
                {{"type": "request", "name": "after", "method": "GET", "url": "/api/items/1",
                  "checks": [{{"source": {{"type": "jsonpath", "path": "$.name"}}, "validate": {{"type": "is", "value": "oak plank"}}}}]}}
              ]}}]}}"#,
        server.base_url()
    );
    let (totals, _) = run_plan(&plan);
    // Never sent: a KO counted apart, kept out of the latency histograms (a 0 ms KO there
    // would make the percentiles look better).
    assert_eq!((row(&totals, "missing").unsent, row(&totals, "missing").ko.len()), (2, 0));
    assert_eq!(row(&totals, "teapot").ko.len(), 2);
    assert_eq!(row(&totals, "after").ok.len(), 2);
    let undefined = totals.errors.iter().find(|(k, _)| k.kind == "undefined_variable").unwrap();
    assert_eq!(undefined.1.message, "undefined variable ${nope}");
    // The request with the undefined variable was never sent.
    assert_eq!(server.stats().total, 4);
}

#[test]
fn a_refused_connection_is_a_ko_and_the_run_finishes() {
    // Bind then drop a listener: nothing listens on that port any more.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let plan = format!(
        r#"{{"version": 1, "protocol": {{"base_url": "http://127.0.0.1:{port}"}},
            "scenarios": [{{"name": "s", "injection": [{{"type": "at_once_users", "users": 5}}],
              "steps": [{{"type": "request", "name": "dead", "method": "GET", "url": "/"}}]}}]}}"#
    );
    let (totals, status) = run_plan(&plan);
    assert_eq!(status, RunStatus::Completed);
    assert_eq!(row(&totals, "dead").ko.len(), 5);
    let refused = totals.errors.iter().find(|(k, _)| k.kind == "connect_refused").unwrap();
    assert_eq!(refused.1.count, 5);
}

#[test]
fn max_requests_sends_exactly_that_many() {
    let server = TargetServer::start("127.0.0.1:0".parse().unwrap()).unwrap();
    let plan = format!(
        r#"{{"version": 1, "protocol": {{"base_url": "{}"}}, "options": {{"max_requests": 1001, "workers": 2}},
            "scenarios": [{{"name": "s", "injection": [{{"type": "at_once_users", "users": 7}}],
              "steps": [{{"type": "during", "duration_ms": 60000, "steps": [
                {{"type": "request", "name": "items", "method": "GET", "url": "/api/items"}}]}}]}}]}}"#,
        server.base_url()
    );
    let (totals, status) = run_plan(&plan);
    assert_eq!(status, RunStatus::LimitReached);
    assert_eq!(totals.request_counts(), (1001, 0));
    assert_eq!(server.stats().total, 1001);
}

#[test]
fn max_duration_interrupts_running_users_and_keeps_what_was_measured() {
    let server = TargetServer::start("127.0.0.1:0".parse().unwrap()).unwrap();
    let plan = format!(
        r#"{{"version": 1, "protocol": {{"base_url": "{}"}}, "options": {{"max_duration_ms": 300}},
            "scenarios": [{{"name": "s", "injection": [{{"type": "at_once_users", "users": 3}}],
              "steps": [{{"type": "during", "duration_ms": 60000, "steps": [
                {{"type": "request", "name": "items", "method": "GET", "url": "/api/items"}},
                {{"type": "pause", "duration_ms": 10}}]}}]}}]}}"#,
        server.base_url()
    );
    let (totals, status) = run_plan(&plan);
    assert_eq!(status, RunStatus::LimitReached);
    assert_eq!(totals.users_interrupted, 3);
    let (ok, _) = totals.request_counts();
    assert!(ok > 10, "{ok}");
    // Nothing was sent that was not counted, except at most one in-flight request per user.
    let served = server.stats().total;
    assert!(served >= ok && served <= ok + 3, "served {served}, counted {ok}");
}

#[test]
fn groups_have_their_own_statistics() {
    let server = TargetServer::start("127.0.0.1:0".parse().unwrap()).unwrap();
    let plan = format!(
        r#"{{"version": 1, "protocol": {{"base_url": "{}"}}, "options": {{"on_check_failure": "continue"}},
            "scenarios": [{{"name": "s", "injection": [{{"type": "at_once_users", "users": 4}}],
              "steps": [{{"type": "group", "name": "browse", "steps": [
                {{"type": "request", "name": "list", "method": "GET", "url": "/api/items"}},
                {{"type": "request", "name": "one", "method": "GET", "url": "/api/items/9"}}]}}]}}]}}"#,
        server.base_url()
    );
    let (totals, _) = run_plan(&plan);
    assert_eq!(row(&totals, "browse / list").ok.len(), 4);
    assert_eq!(row(&totals, "browse / one").ko.len(), 4);
    let (name, group) = &totals.groups[0];
    assert_eq!(&**name, "browse");
    assert_eq!((group.ok.len(), group.ko.len()), (0, 4));
}

#[test]
fn a_slow_response_times_out_as_a_ko_and_the_run_goes_on() {
    let server = TargetServer::start("127.0.0.1:0".parse().unwrap()).unwrap();
    let plan = format!(
        r#"{{"version": 1, "protocol": {{"base_url": "{}", "request_timeout_ms": 100}},
            "options": {{"on_check_failure": "continue"}},
            "scenarios": [{{"name": "s", "injection": [{{"type": "at_once_users", "users": 3}}],
              "steps": [
                {{"type": "request", "name": "slow", "method": "GET", "url": "/delay/2000"}},
                {{"type": "request", "name": "fast", "method": "GET", "url": "/api/items"}}]}}]}}"#,
        server.base_url()
    );
    let started = std::time::Instant::now();
    let (totals, status) = run_plan(&plan);
    assert_eq!(status, RunStatus::Completed);
    assert!(started.elapsed() < std::time::Duration::from_millis(1500), "the timeout must cut the wait");
    assert_eq!(row(&totals, "slow").ko.len(), 3);
    assert_eq!(row(&totals, "fast").ok.len(), 3);
    let timeout = totals.errors.iter().find(|(k, _)| k.kind == "request_timeout").unwrap();
    assert_eq!(timeout.1.count, 3);
    assert_eq!(timeout.1.message, "no complete response within 100 ms");
}

#[test]
fn pacing_holds_a_closed_loop_to_its_rate_and_graceful_stop_interrupts_stragglers() {
    let server = TargetServer::start("127.0.0.1:0".parse().unwrap()).unwrap();
    // 4 users for 1 s, each looping at most once per 100 ms: about 40 requests, not thousands.
    let plan = format!(
        r#"{{"version": 1, "protocol": {{"base_url": "{}"}}, "options": {{"graceful_stop_ms": 200}},
            "scenarios": [{{"name": "s", "injection": [{{"type": "constant_concurrent_users", "users": 4, "duration_ms": 1000}}],
              "steps": [{{"type": "during", "duration_ms": 60000, "steps": [
                {{"type": "pace", "duration_ms": 100}},
                {{"type": "request", "name": "items", "method": "GET", "url": "/api/items"}}]}}]}}]}}"#,
        server.base_url()
    );
    let started = std::time::Instant::now();
    let (totals, status) = run_plan(&plan);
    let elapsed = started.elapsed();
    assert_eq!(status, RunStatus::Completed);
    // The profile ends at 1 s; the users' 60 s loops are cut 200 ms later.
    assert!(
        elapsed >= std::time::Duration::from_millis(1200) && elapsed < std::time::Duration::from_millis(2000),
        "{elapsed:?}"
    );
    assert_eq!(totals.users_interrupted, 4);
    let (ok, ko) = totals.request_counts();
    assert_eq!(ko, 0);
    // 1.2 s at 10 per second per user, for 4 users, give or take one pass each.
    assert!((44..=52).contains(&ok), "{ok}");
}

#[test]
fn a_reach_rps_throttle_ramps_the_request_rate() {
    let server = TargetServer::start("127.0.0.1:0".parse().unwrap()).unwrap();
    // Ramp to 200 rps over 1 s (100 requests), then hold 200 rps for 0.5 s (100 more).
    let plan = format!(
        r#"{{"version": 1, "protocol": {{"base_url": "{}"}},
            "options": {{"max_duration_ms": 1500, "throttle": [
                {{"type": "reach_rps", "rps": 200, "duration_ms": 1000}}, {{"type": "hold_for", "duration_ms": 500}}]}},
            "scenarios": [{{"name": "s", "injection": [{{"type": "at_once_users", "users": 8}}],
              "steps": [{{"type": "during", "duration_ms": 60000, "steps": [
                {{"type": "request", "name": "items", "method": "GET", "url": "/api/items"}}]}}]}}]}}"#,
        server.base_url()
    );
    let (totals, _) = run_plan(&plan);
    let (ok, _) = totals.request_counts();
    assert!((190..=210).contains(&ok), "{ok}");
    assert!(totals.start_lag_us.len() >= ok);
}

#[test]
fn a_scenario_after_another_starts_when_the_first_has_finished_everywhere() {
    let server = TargetServer::start("127.0.0.1:0".parse().unwrap()).unwrap();
    // Both take 300 ms a user; one after the other they take at least 600 ms, side by side 300.
    let plan = format!(
        r#"{{"version": 1, "protocol": {{"base_url": "{}"}}, "options": {{"workers": 2}},
            "scenarios": [
              {{"name": "second", "after": "first", "injection": [{{"type": "at_once_users", "users": 3}}],
                "steps": [{{"type": "request", "name": "b", "method": "GET", "url": "/delay/300"}}]}},
              {{"name": "first", "injection": [{{"type": "ramp_users", "users": 4, "duration_ms": 100}}],
                "steps": [{{"type": "request", "name": "a", "method": "GET", "url": "/delay/300"}}]}}]}}"#,
        server.base_url()
    );
    let started = std::time::Instant::now();
    let (totals, status) = run_plan(&plan);
    let elapsed = started.elapsed();
    assert_eq!(status, RunStatus::Completed);
    // The last of the first arrives at 75 ms and ends at 375 ms; side by side all would end by then.
    assert!(elapsed >= std::time::Duration::from_millis(650), "{elapsed:?}");
    assert_eq!(row(&totals, "a").ok.len(), 4);
    assert_eq!(row(&totals, "b").ok.len(), 3);
    assert_eq!(totals.users_started, 7);
}

#[test]
fn after_must_name_a_scenario_and_must_not_loop() {
    let plan = Plan::from_json(
        r#"{"version": 1, "scenarios": [
            {"name": "a", "after": "b", "injection": [{"type": "at_once_users", "users": 1}],
             "steps": [{"type": "pause", "duration_ms": 1}]},
            {"name": "b", "after": "a", "injection": [{"type": "at_once_users", "users": 1}],
             "steps": [{"type": "pause", "duration_ms": 1}]},
            {"name": "c", "after": "nobody", "injection": [{"type": "at_once_users", "users": 1}],
             "steps": [{"type": "pause", "duration_ms": 1}]}]}"#,
    )
    .unwrap();
    let errors = plan.validate();
    let messages: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    assert!(
        messages.contains(&r#"scenarios[0].after: scenario "a" would wait for itself"#.to_string()),
        "{messages:?}"
    );
    assert!(messages.contains(&r#"scenarios[2].after: no scenario is named "nobody""#.to_string()), "{messages:?}");
}

#[test]
fn a_scenario_waits_for_users_that_were_spawned_but_had_not_started() {
    let server = TargetServer::start("127.0.0.1:0".parse().unwrap()).unwrap();
    // One user at once: the injector finishes before the user's task has run at all.
    let plan = format!(
        r#"{{"version": 1, "protocol": {{"base_url": "{}"}}, "options": {{"workers": 2}},
            "scenarios": [
              {{"name": "first", "injection": [{{"type": "at_once_users", "users": 1}}],
                "steps": [{{"type": "request", "name": "a", "method": "GET", "url": "/delay/200"}}]}},
              {{"name": "second", "after": "first", "injection": [{{"type": "at_once_users", "users": 2}}],
                "steps": [{{"type": "request", "name": "b", "method": "GET", "url": "/delay/200"}}]}}]}}"#,
        server.base_url()
    );
    let started = std::time::Instant::now();
    let (totals, _) = run_plan(&plan);
    assert!(started.elapsed() >= std::time::Duration::from_millis(400), "{:?}", started.elapsed());
    assert_eq!(row(&totals, "b").ok.len(), 2);
}

/// A sink that keeps how many times it was called, to see that results kept coming.
#[derive(Default)]
struct Counting {
    intervals: u32,
}

impl Sink for Counting {
    fn interval(&mut self, _: &mut Totals) {
        self.intervals += 1;
    }
    fn finish(&mut self, _: &mut Totals, _: RunStatus) {}
}

#[test]
fn users_that_only_fail_without_waiting_share_the_worker_and_keep_their_duration() {
    // An undefined variable fails each request before anything is sent, without any wait.
    // Five such users in a 1 s loop used to run one after the other (5 s), starving the
    // worker's ticker; they must share the worker and end together at about 1 s.
    let plan = Plan::from_json(
        r#"{"version": 1, "options": {"on_check_failure": "continue", "workers": 1, "snapshot_interval_ms": 100},
            "scenarios": [{"name": "s", "injection": [{"type": "at_once_users", "users": 5}],
              "steps": [{"type": "during", "duration_ms": 1000, "steps": [
                {"type": "do_if", "condition": "false", "steps": [{"type": "set", "values": [{"name": "nope", "value": "1"}]}]},
                {"type": "request", "name": "undefined", "method": "GET", "url": "http://127.0.0.1:9/${nope}"}]}]}]}"#,
    )
    .unwrap();
    let program = Arc::new(lower(&plan).unwrap());
    let mut sink = Counting::default();
    let started = std::time::Instant::now();
    let result = run(program, &RunControl::new(), &mut sink);
    let took = started.elapsed();
    assert_eq!(result.status, RunStatus::Completed);
    assert!(took < std::time::Duration::from_millis(2500), "took {took:?}");
    // The ticker kept going: about one snapshot every 100 ms.
    assert!(sink.intervals >= 7, "{} intervals", sink.intervals);
    assert!(row(&result.totals, "undefined").unsent > 1000);
}

#[test]
fn one_user_on_two_workers_sends_the_whole_budget_at_the_whole_rate() {
    // With one user, one worker has nothing to do: the run's request budget and its throttle
    // are the run's, not split between workers (it used to send half, at half the rate).
    let server = TargetServer::start("127.0.0.1:0".parse().unwrap()).unwrap();
    let plan = format!(
        r#"{{"version": 1, "protocol": {{"base_url": "{}"}},
            "options": {{"max_requests": 300, "workers": 2, "throttle": [{{"type": "jump_to_rps", "rps": 400}}]}},
            "scenarios": [{{"name": "s", "injection": [{{"type": "at_once_users", "users": 1}}],
              "steps": [{{"type": "during", "duration_ms": 60000, "steps": [
                {{"type": "request", "name": "items", "method": "GET", "url": "/api/items"}}]}}]}}]}}"#,
        server.base_url()
    );
    let started = std::time::Instant::now();
    let (totals, status) = run_plan(&plan);
    let took = started.elapsed().as_secs_f64();
    assert_eq!(status, RunStatus::LimitReached);
    assert_eq!(totals.request_counts(), (300, 0));
    assert_eq!(server.stats().total, 300);
    // 300 requests at 400 a second: 0.75 s (at half the rate it would be 1.5 s).
    assert!((0.7..1.1).contains(&took), "took {took} s");
}

/// The request log names each exchange's URL: a redirect's hop the URL it was sent to (the
/// form's), the hop after it the redirect's location.
#[test]
fn the_request_log_names_each_hops_url() {
    let server = TargetServer::start("127.0.0.1:0".parse().unwrap()).unwrap();
    let base = server.base_url();
    let plan = Plan::from_json(&journey(&base, 2, "")).unwrap();
    let program = Arc::new(lower(&plan).unwrap_or_else(|e| panic!("{e:?}")));
    let (chunks, received) = std::sync::mpsc::channel();
    let output = horde_metrics::RequestLogOutput { format: horde_metrics::RequestLogFormat::Jsonl, chunks };
    let result = horde_engine::run_with_request_log(program, &RunControl::new(), &mut Quiet, Some(output));
    assert_eq!(result.status, RunStatus::Completed);
    let text: Vec<u8> = received.try_iter().flatten().collect();
    let records: Vec<serde_json::Value> =
        String::from_utf8(text).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    assert_eq!(records.len(), 2 * 8);
    let urls = |name: &str| -> Vec<String> {
        records.iter().filter(|r| r["name"] == name).map(|r| r["url"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(urls("login"), [format!("{base}/login"), format!("{base}/login")]);
    assert_eq!(urls("login Redirect 1"), [format!("{base}/account"), format!("{base}/account")]);
    assert_eq!(urls("items"), [format!("{base}/api/items"), format!("{base}/api/items")]);
}
