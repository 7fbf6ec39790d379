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
    assert_eq!(plan.options.on_check_failure, OnCheckFailure::StopIteration);
}

#[test]
fn plan_survives_a_json_round_trip() {
    let mut plan = minimal();
    plan.scenarios[0].steps.push(Step::Repeat {
        times: 3,
        counter: Some("i".into()),
        steps: vec![Step::PauseUniform { min_ms: 1, max_ms: 2 }],
    });
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
    // The schema check goes inside the tagged step, where serde's own path would stop.
    assert_eq!(err.len(), 1);
    assert_eq!(err[0].path, "scenarios[0].steps[0].url");
    assert!(err[0].message.contains("expected a string"), "{}", err[0].message);
}

#[test]
fn validation_collects_every_problem_with_its_path() {
    let mut plan = minimal();
    plan.version = 9;
    plan.protocol.base_url = None;
    plan.scenarios[0].steps.push(Step::Request(Request {
        name: "".into(),
        method: "FETCH".into(),
        url: "/x/${unclosed".into(),
        headers: vec![],
        query: vec![],
        body: None,
        resources: vec![],
        checks: vec![Check {
            source: CheckSource::Regex { pattern: "".into(), group: None },
            validate: Validation::Exists,
            save_as: Some("bad name".into()),
        }],
    }));
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
    let Step::Request(request) = &mut plan.scenarios[0].steps[0] else { panic!("a request") };
    request.body = Some(crate::Body::Json { value: serde_json::json!({"created_at_ms": 1_718_000_000_000u64}) });
    assert!(plan.validate().is_empty(), "{:?}", plan.validate());
    plan.options.warmup_ms = Some(400 * 24 * 3600 * 1000);
    let errors = plan.validate();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].path, "options.warmup_ms");
}
