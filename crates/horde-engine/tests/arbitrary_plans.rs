//! Arbitrary input to the plan loader, validation, lowering and the template parser: an error,
//! never a panic. Plans are fuzzed two ways: any JSON at all, and a valid plan with one part
//! replaced by any JSON, which reaches deep into the schema check, validation and lowering.

use horde_plan::{parse_template, Plan, Segment};
use proptest::prelude::*;
use serde_json::{json, Value};

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>().prop_filter("JSON has no NaN", |f| f.is_finite()).prop_map(|f| json!(f)),
        "[a-z_${}]{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("request"),
            Just("pause"),
            Just("repeat"),
            Just("during"),
            Just("group"),
            Just("at_once_users")
        ]
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z_]{1,10}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn valid_plan() -> Value {
    json!({
        "version": 1,
        "protocol": {"base_url": "http://127.0.0.1:9"},
        "scenarios": [{
            "name": "s",
            "injection": [{"type": "at_once_users", "users": 2}],
            "steps": [
                {"type": "request", "name": "a", "method": "GET", "url": "/x/${id}",
                 "checks": [{"source": {"type": "regex", "pattern": "id=(\\d+)"}, "save_as": "id"}]},
                {"type": "repeat", "times": 2, "steps": [{"type": "pause", "duration_ms": 10}]}
            ]
        }],
        "options": {"max_requests": 10}
    })
}

/// Every place of a JSON tree, as a list of steps to it.
fn places(value: &Value, at: Vec<Value>, out: &mut Vec<Vec<Value>>) {
    out.push(at.clone());
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                let mut next = at.clone();
                next.push(Value::String(key.clone()));
                places(item, next, out);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let mut next = at.clone();
                next.push(json!(i));
                places(item, next, out);
            }
        }
        _ => {}
    }
}

fn replace_at(value: &mut Value, path: &[Value], with: Value) {
    match path.split_first() {
        None => *value = with,
        Some((Value::String(key), rest)) => replace_at(&mut value[key.as_str()], rest, with),
        Some((index, rest)) => replace_at(&mut value[index.as_u64().unwrap() as usize], rest, with),
    }
}

proptest! {
    #[test]
    fn any_text_is_refused_or_accepted_without_panic(text in "\\PC{0,200}") {
        if let Ok(plan) = Plan::from_json(&text) {
            let _ = horde_engine::lower(&plan);
        }
    }

    #[test]
    fn any_json_is_refused_with_paths_or_accepted(value in any_json()) {
        match Plan::from_json(&value.to_string()) {
            Ok(plan) => { let _ = horde_engine::lower(&plan); }
            Err(errors) => prop_assert!(!errors.is_empty()),
        }
    }

    #[test]
    fn a_valid_plan_with_any_part_replaced_never_panics(choice in any::<prop::sample::Index>(), with in any_json()) {
        let mut plan = valid_plan();
        let mut all = Vec::new();
        places(&plan, Vec::new(), &mut all);
        let path = choice.get(&all).clone();
        replace_at(&mut plan, &path, with);
        match Plan::from_json(&plan.to_string()) {
            Ok(plan) => {
                let _ = horde_engine::lower(&plan);
                // What parses again serializes and parses to the same plan.
                prop_assert_eq!(Plan::from_json(&plan.to_json_pretty()).unwrap(), plan);
            }
            Err(errors) => prop_assert!(errors.iter().all(|e| !e.message.is_empty())),
        }
    }

    #[test]
    fn templates_parse_or_say_why(text in "[a-z${}._\\- ]{0,40}") {
        if let Ok(segments) = parse_template(&text) {
            // Literal text comes back; `$${` stands for `${`.
            let literal: String = segments.iter().filter_map(|s| match s {
                Segment::Literal(text) => Some(text.as_str()),
                Segment::Expression(_) => None,
            }).collect();
            prop_assert!(literal.len() <= text.len());
        }
    }
}
