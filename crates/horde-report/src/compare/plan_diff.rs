//! Whether two runs ran the same workload: their plans, less what may change between two
//! versions of a system under the same load.
//!
//! Ignored: the plan's `name` and `base_dir` (where the file was), the protocol's `base_url`,
//! and the origin (`scheme://host:port`) of every absolute URL: the same test against a new
//! deployment runs elsewhere, or on another port. Everything else (steps, paths, injection,
//! durations, options) is the experiment: a difference there compares two workloads.

use horde_plan::Plan;
use serde_json::Value;

/// At most this many differences are listed; the count says how many there were.
const LISTED: usize = 10;

/// Where two plans differ, as `path: A's value -> B's value`; empty when they are the same.
pub fn plan_differences(a: &Plan, b: &Plan) -> Vec<String> {
    let (a, b) = (comparable(a), comparable(b));
    let mut differences = Vec::new();
    diff("", &a, &b, &mut differences);
    if differences.len() > LISTED {
        let more = differences.len() - LISTED;
        differences.truncate(LISTED);
        differences.push(format!("... and {more} more"));
    }
    differences
}

fn comparable(plan: &Plan) -> Value {
    let mut value = serde_json::to_value(plan).expect("a plan serializes");
    if let Some(object) = value.as_object_mut() {
        object.remove("name");
        object.remove("base_dir");
        if let Some(protocol) = object.get_mut("protocol").and_then(Value::as_object_mut) {
            protocol.remove("base_url");
        }
    }
    without_origins(&mut value);
    value
}

fn without_origins(value: &mut Value) {
    match value {
        Value::String(text) => {
            if let Some(path) = strip_origin(text) {
                *text = path;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(without_origins),
        Value::Object(map) => map.values_mut().for_each(without_origins),
        _ => {}
    }
}

/// `http://host:8080/delay/20?x=1` -> `/delay/20?x=1`; `None` for text that is no absolute URL.
fn strip_origin(text: &str) -> Option<String> {
    let scheme_end = text.find("://")?;
    let scheme = &text[..scheme_end];
    if !matches!(scheme, "http" | "https" | "ws" | "wss") {
        return None;
    }
    let rest = &text[scheme_end + 3..];
    let path_start = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let path = &rest[path_start..];
    Some(if path.is_empty() { "/".to_string() } else { path.to_string() })
}

fn diff(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(a_map), Value::Object(b_map)) => {
            for (key, a_value) in a_map {
                let child = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                match b_map.get(key) {
                    Some(b_value) => diff(&child, a_value, b_value, out),
                    None => out.push(format!("{child}: {} -> (absent)", short(a_value))),
                }
            }
            for (key, b_value) in b_map.iter().filter(|(key, _)| !a_map.contains_key(*key)) {
                let child = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                out.push(format!("{child}: (absent) -> {}", short(b_value)));
            }
        }
        (Value::Array(a_items), Value::Array(b_items)) if a_items.len() == b_items.len() => {
            for (index, (a_item, b_item)) in a_items.iter().zip(b_items).enumerate() {
                diff(&format!("{path}[{index}]"), a_item, b_item, out);
            }
        }
        (Value::Array(a_items), Value::Array(b_items)) => {
            out.push(format!("{path}: {} items -> {} items", a_items.len(), b_items.len()));
        }
        _ if a != b => out.push(format!("{path}: {} -> {}", short(a), short(b))),
        _ => {}
    }
}

/// A value as JSON, cut to a readable length.
fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(60) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(json: &str) -> Plan {
        Plan::from_json(json).unwrap()
    }

    const BASE: &str = r#"{"version": 1, "name": "NAME", "protocol": {"base_url": "BASE"},
        "scenarios": [{"name": "s", "injection": [{"type": "at_once_users", "users": 2}],
                       "steps": [{"type": "request", "name": "r", "method": "GET", "url": "URL"}]}]}"#;

    fn variant(name: &str, base: &str, url: &str) -> Plan {
        plan(&BASE.replace("NAME", name).replace("BASE", base).replace("URL", url))
    }

    #[test]
    fn names_and_origins_may_differ() {
        let a = variant("old", "http://127.0.0.1:8080", "http://127.0.0.1:8080/delay/20");
        let b = variant("new", "https://staging.example:443", "http://10.0.0.2:9999/delay/20");
        assert_eq!(plan_differences(&a, &b), Vec::<String>::new());
    }

    #[test]
    fn paths_and_load_may_not() {
        let a = variant("p", "http://127.0.0.1:1", "/delay/20");
        let b = variant("p", "http://127.0.0.1:1", "/delay/24");
        assert_eq!(plan_differences(&a, &b), ["scenarios[0].steps[0].url: \"/delay/20\" -> \"/delay/24\""]);
        let c = plan(
            &BASE
                .replace("NAME", "p")
                .replace("BASE", "http://x")
                .replace("URL", "/delay/20")
                .replace("\"users\": 2", "\"users\": 3"),
        );
        let differences = plan_differences(&a, &c);
        assert_eq!(differences, ["scenarios[0].injection[0].users: 2 -> 3"]);
    }

    #[test]
    fn origins_are_stripped_only_from_urls() {
        assert_eq!(strip_origin("http://h:1/a?b#c").as_deref(), Some("/a?b#c"));
        assert_eq!(strip_origin("wss://h").as_deref(), Some("/"));
        assert_eq!(strip_origin("ftp://h/a"), None);
        assert_eq!(strip_origin("/relative"), None);
    }
}
