use super::*;

fn minimal() -> Plan {
    Plan::from_json(
        r#"{"version": 1, "protocol": {"base_url": "http://127.0.0.1:1"},
            "scenarios": [{"name": "s",
                "steps": [{"type": "request", "name": "r", "method": "GET", "url": "/"}],
                "injection": [{"type": "at_once_users", "users": 1}]}]}"#,
    )
    .unwrap()
}

#[test]
fn minimal_plan_is_valid_and_gets_defaults() {
    let plan = minimal();
    assert_eq!(plan.validate(), vec![]);
    assert_eq!(plan.protocol.request_timeout_ms, 60_000);
    assert!(plan.protocol.follow_redirects);
    assert_eq!(plan.options.percentiles, vec![50.0, 75.0, 95.0, 99.0]);
    assert_eq!(plan.options.on_check_failure, OnCheckFailure::Continue);
}

#[test]
fn plan_survives_a_json_round_trip() {
    let mut plan = minimal();
    plan.scenarios[0].steps.push(
        CoreStep::Repeat {
            times: 3,
            counter: Some("i".into()),
            steps: vec![CoreStep::PauseUniform { min_ms: 1, max_ms: 2 }.into()],
        }
        .into(),
    );
    let again = Plan::from_json(&plan.to_json_pretty()).unwrap();
    assert_eq!(plan, again);
}

#[test]
fn structural_errors_name_their_path() {
    let err = Plan::from_json(
        r#"{"version": 1, "scenarios": [{"name": "s", "steps": [{"type": "request", "name": "r",
            "method": "GET", "url": 5}], "injection": []}]}"#,
    )
    .unwrap_err();
    // The schema check goes inside the tagged step, where serde's own path would stop; the
    // empty injection, which only validation finds, is named beside it.
    assert_eq!(err.len(), 2, "{err:?}");
    assert_eq!(err[0].path, "scenarios[0].steps[0].url");
    assert!(err[0].message.contains("expected a string"), "{}", err[0].message);
    assert_eq!(err[1].path, "scenarios[0].injection");
}

#[test]
fn type_errors_do_not_hide_the_other_problems_of_the_plan() {
    let problems = |text: &str| -> Vec<String> {
        Plan::from_json(text).unwrap_err().iter().map(|e| format!("{}: {}", e.path, e.message)).collect()
    };
    // Issue 23: a URL that is no string and a method that is no token, in one step.
    let found = problems(
        r#"{"version": 1, "protocol": {"base_url": "http://127.0.0.1:1"}, "scenarios": [{"name": "s",
            "steps": [{"type": "request", "name": "r", "method": "GE T", "url": 42},
                      {"type": "pause_uniform", "min_ms": 5, "max_ms": 1},
                      {"type": "pause_uniform", "min_ms": "5", "max_ms": 1}],
            "injection": [{"type": "at_once_users", "users": 1}]}]}"#,
    );
    assert_eq!(
        found,
        vec![
            "scenarios[0].steps[0].url: expected a string, found 42",
            "scenarios[0].steps[2].min_ms: expected an integer, found \"5\"",
            "scenarios[0].steps[0].method: \"GE T\" is not an HTTP method: a method is a token (letters, digits and \
             !#$%&'*+-.^_`|~), such as GET or PURGE",
            "scenarios[0].steps[1]: min_ms 5 is more than max_ms 1",
        ]
    );
    // What is judged near a stand-in is left out: the mended step of unknown type, the
    // scenario whose name was mended.
    let found = problems(
        r#"{"version": 1, "scenarios": [{"name": 5, "steps": [{"type": "sleep", "ms": 5}],
            "injection": [{"type": "at_once_users", "users": 1}]}]}"#,
    );
    assert_eq!(found.len(), 2, "{found:?}");
}

#[test]
fn validation_collects_every_problem_with_its_path() {
    let mut plan = minimal();
    plan.version = 9;
    plan.protocol.base_url = None;
    plan.scenarios[0].steps.push(Step::Http(HttpStep::Request(Request {
        name: "".into(),
        method: "FE TCH".into(),
        url: "/x/${unclosed".into(),
        headers: vec![],
        query: vec![],
        body: None,
        resources: vec![],
        follow_redirects: None,
        checks: vec![Check {
            save_as: Some("bad name".into()),
            ..Check::new(CoreSource::Regex { pattern: "".into(), group: None })
        }],
    })));
    plan.scenarios[0].injection.push(Injection::ConstantConcurrentUsers { users: 0, duration_ms: 5 });
    let paths: Vec<String> = plan.validate().into_iter().map(|e| e.path).collect();
    for expected in [
        "version",
        "scenarios[0].steps[0].url",
        "scenarios[0].steps[1].name",
        "scenarios[0].steps[1].method",
        "scenarios[0].steps[1].checks[0].source.pattern",
        "scenarios[0].steps[1].checks[0].save_as",
        "scenarios[0].injection",
        "scenarios[0].injection[1].users",
    ] {
        assert!(paths.iter().any(|p| p == expected), "missing {expected} in {paths:?}");
    }
}

/// The committed schema must describe the Rust types exactly. Set HORDE_UPDATE_SCHEMAS=1 to
/// rewrite it after changing the types.
#[test]
fn committed_json_schema_matches_the_types() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/plan.schema.json");
    let generated = serde_json::to_string_pretty(&Plan::json_schema()).unwrap() + "\n";
    if std::env::var_os("HORDE_UPDATE_SCHEMAS").is_some() {
        std::fs::write(path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/plan.schema.json is stale: run HORDE_UPDATE_SCHEMAS=1 cargo test -p horde-plan"
    );
}

#[test]
fn durations_are_bounded_but_request_bodies_are_data() {
    let mut plan = minimal();
    let Step::Http(HttpStep::Request(request)) = &mut plan.scenarios[0].steps[0] else { panic!("a request") };
    request.body = Some(crate::Body::Json { value: serde_json::json!({"created_at_ms": 1_718_000_000_000u64}) });
    assert!(plan.validate().is_empty(), "{:?}", plan.validate());
    plan.options.warmup_ms = Some(400 * 24 * 3600 * 1000);
    let errors = plan.validate();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].path, "options.warmup_ms");
}

/// The problems of a plan whose first scenario has these steps (JSON), as `path: message`.
fn step_problems(steps: &str, base_url: bool) -> Vec<String> {
    let protocol = if base_url { r#""protocol": {"base_url": "http://127.0.0.1:1"},"# } else { "" };
    let plan = Plan::from_json(&format!(
        r#"{{"version": 1, {protocol} "scenarios": [{{"name": "s", "steps": {steps},
            "injection": [{{"type": "at_once_users", "users": 1}}]}}]}}"#
    ));
    let errors = match plan {
        Ok(plan) => plan.validate(),
        Err(errors) => errors,
    };
    errors.into_iter().map(|e| format!("{}: {}", e.path, e.message)).collect()
}

#[test]
fn check_options_are_validated_with_their_paths() {
    let found = step_problems(
        r#"[{"type": "request", "name": "r", "method": "GET", "url": "/", "checks": [
            {"source": {"type": "status"}, "select": {"type": "nth", "index": 2}},
            {"source": {"type": "regex", "pattern": "a"}, "select": {"type": "all"}, "validate": {"type": "lt", "value": "3"}},
            {"source": {"type": "regex", "pattern": "a"}, "default": "x", "validate": {"type": "not_exists"}},
            {"source": {"type": "regex", "pattern": "a"}, "optional": true, "validate": {"type": "not_exists"}},
            {"source": {"type": "regex", "pattern": "a"}, "validate": {"type": "is", "value": "${unclosed"}},
            {"source": {"type": "jmespath", "expression": " "}},
            {"source": {"type": "substring", "value": "a"}, "select": {"type": "count"}},
            {"source": {"type": "regex", "pattern": "a"}, "select": {"type": "all"}, "validate": {"type": "is", "value": "[\"a\"]"}},
            {"source": {"type": "regex", "pattern": "a"}, "default": "x", "optional": true}]}]"#,
        true,
    );
    let paths: Vec<&str> = found.iter().map(|p| p.split_once(": ").unwrap().0).collect();
    assert_eq!(
        paths,
        [
            "scenarios[0].steps[0].checks[0].select",
            "scenarios[0].steps[0].checks[1].validate",
            "scenarios[0].steps[0].checks[2].default",
            "scenarios[0].steps[0].checks[3].optional",
            "scenarios[0].steps[0].checks[4].validate.value",
            "scenarios[0].steps[0].checks[5].source.expression",
            "scenarios[0].steps[0].checks[8].optional",
        ],
        "{found:#?}"
    );
    assert!(found[1].ends_with("not lt"), "{}", found[1]);
    // find(-1): the index is a count from 0, refused by the schema with its path.
    let found = step_problems(
        r#"[{"type": "request", "name": "r", "method": "GET", "url": "/",
             "checks": [{"source": {"type": "regex", "pattern": "a"}, "select": {"type": "nth", "index": -1}}]}]"#,
        true,
    );
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("scenarios[0].steps[0].checks[0].select.index: "), "{found:?}");
    // A socket's message has no location nor response time.
    let found = step_problems(
        r#"[{"type": "ws_await", "name": "w", "await": {"timeout_ms": 10, "messages": [{"name": "m",
             "checks": [{"source": {"type": "response_time_in_millis"}, "validate": {"type": "lt", "value": "5"}}]}]}}]"#,
        true,
    );
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("scenarios[0].steps[0].await.messages[0].checks[0].source: "), "{found:?}");
}

#[test]
fn cookie_steps_are_validated_with_their_paths() {
    let steps = r#"[{"type": "add_cookie", "name": "bad name", "value": "${x"},
                    {"type": "add_cookie", "name": "ok", "value": "v", "domain": "not a domain", "path": "relative"},
                    {"type": "get_cookie", "name": "ok", "save_as": "bad name"},
                    {"type": "get_cookie", "name": "ok", "save_as": "v"},
                    {"type": "flush_cookie_jar"}, {"type": "flush_session_cookies"}]"#;
    let found = step_problems(steps, false);
    let paths: Vec<&str> = found.iter().map(|p| p.split_once(": ").unwrap().0).collect();
    assert_eq!(
        paths,
        [
            "scenarios[0].steps[0].name",
            "scenarios[0].steps[0].value",
            "scenarios[0].steps[0].domain",
            "scenarios[0].steps[1].domain",
            "scenarios[0].steps[1].path",
            "scenarios[0].steps[2].save_as",
        ],
        "{found:#?}"
    );
    // With a base URL, the domain defaults to its host.
    let found = step_problems(r#"[{"type": "add_cookie", "name": "a", "value": "1", "secure": true}]"#, true);
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn checks_and_cookie_steps_survive_a_json_round_trip() {
    let mut plan = minimal();
    let Step::Http(HttpStep::Request(request)) = &mut plan.scenarios[0].steps[0] else { panic!() };
    request.checks.push(Check {
        select: Select::Nth { index: 2 },
        transform: vec![Transform::Trim, Transform::ToInt],
        default: Some("${x}".into()),
        validate: Validation::Gte { value: "3".into() },
        save_as: Some("n".into()),
        ..Check::new(CoreSource::Jmespath { expression: "items[*].n".into() })
    });
    plan.scenarios[0].steps.push(
        HttpStep::AddCookie(AddCookie {
            name: "a".into(),
            value: "${x}".into(),
            domain: Some("example.com".into()),
            path: None,
            secure: true,
        })
        .into(),
    );
    plan.scenarios[0]
        .steps
        .push(HttpStep::GetCookie(GetCookie { name: "a".into(), domain: None, save_as: "x".into() }).into());
    plan.scenarios[0].steps.push(HttpStep::FlushSessionCookies.into());
    let json = plan.to_json_pretty();
    assert_eq!(Plan::from_json(&json).unwrap(), plan);
    // Defaults are left out: a plain check reads as before.
    assert!(!serde_json::to_string(&Check::new(HttpSource::Status)).unwrap().contains("select"));
}

/// Each `type` of a family of internally tagged enums, with the family it belongs to. A tag two
/// families shared would silently go to the first ([`Step`] and [`CheckSource`] are untagged
/// over families), so it fails here.
fn family_of_each_tag(
    families: Vec<(&'static str, schemars::Schema)>,
) -> std::collections::BTreeMap<String, &'static str> {
    let mut owner = std::collections::BTreeMap::new();
    for (family, schema) in families {
        for branch in schema.to_value()["oneOf"].as_array().unwrap() {
            let tag = protocol::tag_of(branch).to_string();
            assert!(!tag.is_empty(), "{family}: a branch without a type");
            if let Some(other) = owner.insert(tag.clone(), family) {
                panic!("{tag:?} is in both {other} and {family}");
            }
        }
    }
    owner
}

/// Plan format 1's order lists each tag once, and each is still some family's; types added
/// since follow them.
fn v1_order_is_complete(order: &[&str], owner: &std::collections::BTreeMap<String, &'static str>) {
    let mut sorted = order.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), order.len(), "a tag listed twice");
    for tag in sorted {
        assert!(owner.contains_key(tag), "{tag:?} of plan format 1 is no family's");
    }
}

#[test]
fn every_step_type_is_in_exactly_one_family_and_in_the_v1_order() {
    use schemars::JsonSchema;
    let mut generator = schemars::SchemaGenerator::default();
    let owner = family_of_each_tag(vec![
        ("core", CoreStep::json_schema(&mut generator)),
        ("http", HttpStep::json_schema(&mut generator)),
        ("socket", SocketStep::json_schema(&mut generator)),
        ("couchdb", CouchdbStep::json_schema(&mut generator)),
        ("sql", SqlStep::json_schema(&mut generator)),
        ("cql", CqlStep::json_schema(&mut generator)),
    ]);
    v1_order_is_complete(&protocol::PLAN_V1_STEP_ORDER, &owner);
}

/// The walker sees every nested chain, in the plan's order, with the path a plan names it by.
#[test]
fn children_are_every_nested_chain_with_its_path() {
    let pause = || -> Step { CoreStep::Pause { duration_ms: 1 }.into() };
    let switch: Step = CoreStep::DoSwitch {
        value: "${x}".into(),
        cases: vec![
            SwitchCase { value: "a".into(), steps: vec![pause()] },
            SwitchCase { value: "b".into(), steps: vec![] },
        ],
        else_steps: vec![pause(), pause()],
    }
    .into();
    let seen: Vec<(String, usize, bool)> =
        switch.children().map(|c| (c.at.to_string(), c.steps.len(), c.is_body)).collect();
    assert_eq!(
        seen,
        [("cases[0].steps".into(), 1, false), ("cases[1].steps".into(), 0, false), ("else_steps".into(), 2, false)]
    );
    let do_if: Step = CoreStep::DoIf { condition: "${x}".into(), steps: vec![switch], else_steps: vec![] }.into();
    let at: Vec<String> = do_if.children().map(|c| c.at.to_string()).collect();
    assert_eq!(at, ["steps", "else_steps"]);
    let mut visited = 0;
    Step::walk(std::slice::from_ref(&do_if), &mut |_| visited += 1);
    // do_if, the switch, and its three pauses.
    assert_eq!(visited, 5);
    assert_eq!(pause().children().count(), 0);
    assert_eq!(Step::from(HttpStep::FlushCookieJar).children().count(), 0);
}

/// [`Step`] is untagged over families: each nesting level buffers the step once more. The
/// deepest plan the JSON reader accepts (128 levels: about 40 steps inside one another) still
/// loads.
#[test]
fn the_deepest_plan_the_reader_accepts_loads() {
    let mut steps: Vec<Step> = vec![CoreStep::Pause { duration_ms: 1 }.into()];
    let mut depth = 0;
    loop {
        let deeper: Step = CoreStep::Repeat { times: 1, counter: None, steps: steps.clone() }.into();
        let mut plan = minimal();
        plan.scenarios[0].steps = vec![deeper.clone()];
        if Plan::from_json(&plan.to_json_pretty()).is_err() {
            break;
        }
        steps = vec![deeper];
        depth += 1;
    }
    assert!(depth >= 40, "only {depth} nested steps load");
    let mut plan = minimal();
    plan.scenarios[0].steps = steps;
    assert_eq!(Plan::from_json(&plan.to_json_pretty()).unwrap(), plan);
}

/// The same for check sources.
#[test]
fn every_check_source_is_in_exactly_one_family_and_in_the_v1_order() {
    use schemars::JsonSchema;
    let mut generator = schemars::SchemaGenerator::default();
    let owner = family_of_each_tag(vec![
        ("core", CoreSource::json_schema(&mut generator)),
        ("http", HttpSource::json_schema(&mut generator)),
        ("rows", RowsSource::json_schema(&mut generator)),
    ]);
    v1_order_is_complete(&protocol::PLAN_V1_CHECK_SOURCE_ORDER, &owner);
    assert_eq!(owner.get("header_regex"), Some(&"http"), "added since plan format 1's first sources");
}

/// The core's validation and steps name no protocol: a protocol's types and validation are in
/// `protocol/`, reached through the registry (`protocol/mod.rs`). A new protocol that had to
/// edit these files would fail here.
#[test]
fn the_core_of_the_plan_names_no_protocol() {
    let protocol_types = [
        "HttpStep",
        "HttpSource",
        "HttpProtocol",
        "Request",
        "Body",
        "BodyPart",
        "SocketStep",
        "SocketConnect",
        "AwaitMessages",
        "CouchdbStep",
        "CouchdbCrud",
        "SqlStep",
        "RowsSource",
        "CqlStep",
        "CqlStatement",
        "CqlCluster",
        "SqlStatement",
        "SqlDatabase",
    ];
    for file in ["validate.rs", "step.rs"] {
        let path = format!("{}/src/{file}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap();
        let code: String =
            text.lines().filter(|line| !line.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
        for word in code.split(|c: char| !c.is_alphanumeric() && c != '_') {
            assert!(!protocol_types.contains(&word), "{file} names the protocol type {word}");
        }
    }
}
