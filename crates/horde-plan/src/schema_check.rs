//! The first pass over a plan file: its JSON against the plan's own JSON Schema (the one
//! [`crate::Plan::json_schema`] generates and docs/plan.schema.json holds), reporting every
//! type error with its path at once. serde alone stops at the first.
//!
//! Why not a general JSON Schema validator: steps, injection steps, checks and bodies are
//! tagged unions, `oneOf` branches told apart by their `type`. A general validator can only
//! say that a step is "not valid under any of the schemas listed"; this one picks the branch
//! by the tag and reports what is wrong inside it (`scenarios[0].steps[2].url: expected a
//! string, found 5`). It understands the keywords schemars generates for the plan: `$ref`,
//! `type`, `properties`, `required`, `additionalProperties`, `oneOf`, `anyOf`, `const`,
//! `enum`, `items`, `minItems`, `maxItems`, `minimum` and the integer `format`s.

use crate::PlanError;
use serde_json::{Map, Value};

/// Every place where `value` does not fit `root` (a schema with its `$defs`), and `value` with
/// each of them mended: a wrong value replaced by a neutral one of the expected type (its
/// text, when text was expected), a missing field added, an unknown one removed. The mended
/// value deserializes, so what else is wrong with the plan can be found too.
pub(crate) fn check_against_schema(value: &Value, root: &Value) -> SchemaCheck {
    let mut mended = value.clone();
    let mut checker = Checker { root, errors: Vec::new(), mended_paths: Vec::new() };
    checker.check(&mut mended, root, "");
    SchemaCheck { errors: checker.errors, mended, mended_paths: checker.mended_paths }
}

/// What the schema check found, and the value it mended.
pub(crate) struct SchemaCheck {
    pub errors: Vec<PlanError>,
    pub mended: Value,
    /// Where the mended value differs from the plan: a whole step of unknown type, a field.
    pub mended_paths: Vec<String>,
}

struct Checker<'a> {
    root: &'a Value,
    errors: Vec<PlanError>,
    mended_paths: Vec<String>,
}

/// The schema that accepts anything: where a reference leads nowhere.
static ANY: Value = Value::Bool(true);

fn join(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

/// A value as an error message shows it: short, and never a whole document.
fn shown(value: &Value) -> String {
    match value {
        Value::Object(_) => "an object".into(),
        Value::Array(_) => "an array".into(),
        Value::Null => "null".into(),
        other => {
            let text = other.to_string();
            if text.chars().count() > 40 {
                format!("{}...", text.chars().take(37).collect::<String>())
            } else {
                text
            }
        }
    }
}

fn type_matches(value: &Value, kind: &str) -> bool {
    match kind {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => true,
    }
}

fn article(kind: &str) -> String {
    match kind {
        "object" | "array" | "integer" => format!("an {kind}"),
        "null" => "null".into(),
        other => format!("a {other}"),
    }
}

/// The tag a branch of a tagged union requires (`properties.type.const`).
fn tag_of(branch: &Value) -> Option<&str> {
    branch.get("properties")?.get("type")?.get("const")?.as_str()
}

/// The types a schema allows (`type`, one or a list).
fn kinds(schema: &Map<String, Value>) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(kind)) => vec![kind.as_str()],
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

impl<'a> Checker<'a> {
    fn error(&mut self, path: &str, message: impl Into<String>) {
        self.errors.push(PlanError::new(path, message));
    }

    /// `value`, at `path`, is replaced by `by`.
    fn mend(&mut self, value: &mut Value, path: &str, by: Value) {
        *value = by;
        self.mended_paths.push(path.to_string());
    }

    /// The schema a `$ref` points to (only local `#/$defs/...` references exist here).
    fn resolve(&self, schema: &'a Value) -> &'a Value {
        let root = self.root;
        match schema.get("$ref").and_then(Value::as_str) {
            Some(reference) => {
                reference.strip_prefix("#/$defs/").and_then(|name| root.get("$defs")?.get(name)).unwrap_or(&ANY)
            }
            None => schema,
        }
    }

    /// A value that fits `schema` and says as little as possible: its default, `null` when it
    /// may be null, the first of its choices, empty text, zero (or its minimum), an object of
    /// its required fields.
    fn neutral(&self, schema: &'a Value) -> Value {
        match self.resolve(schema) {
            Value::Object(schema) => self.neutral_of(schema),
            _ => Value::Null,
        }
    }

    fn neutral_of(&self, schema: &'a Map<String, Value>) -> Value {
        if let Some(default) = schema.get("default") {
            return default.clone();
        }
        if let Some(value) = schema.get("const") {
            return value.clone();
        }
        if let Some(first) = schema.get("enum").and_then(Value::as_array).and_then(|all| all.first()) {
            return first.clone();
        }
        if let Some(branches) = schema.get("oneOf").or_else(|| schema.get("anyOf")).and_then(Value::as_array) {
            let nullable = branches.iter().any(|b| self.resolve(b).get("type") == Some(&Value::String("null".into())));
            return match branches.first() {
                Some(_) if nullable => Value::Null,
                Some(first) => self.neutral(first),
                None => Value::Null,
            };
        }
        let kinds = kinds(schema);
        if kinds.contains(&"null") {
            return Value::Null;
        }
        match kinds.first().copied() {
            Some("string") => Value::String(String::new()),
            Some("boolean") => Value::Bool(false),
            Some("integer" | "number") => schema.get("minimum").cloned().unwrap_or(Value::from(0)),
            Some("array") => {
                let count = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
                let item = schema.get("items").map(|items| self.neutral(items)).unwrap_or(Value::Null);
                Value::Array(vec![item; count as usize])
            }
            Some("object") => {
                let properties = schema.get("properties").and_then(Value::as_object);
                let required = schema.get("required").and_then(Value::as_array).into_iter().flatten();
                let fields = required
                    .filter_map(Value::as_str)
                    .map(|name| {
                        let field =
                            properties.and_then(|p| p.get(name)).map(|p| self.neutral(p)).unwrap_or(Value::Null);
                        (name.to_string(), field)
                    })
                    .collect();
                Value::Object(fields)
            }
            _ => Value::Null,
        }
    }

    fn check(&mut self, value: &mut Value, schema: &'a Value, path: &str) {
        let schema = self.resolve(schema);
        let Value::Object(schema) = schema else {
            // `true` accepts anything, `false` nothing.
            if schema == &Value::Bool(false) {
                self.error(path, "no value is allowed here");
            }
            return;
        };
        if let Some(branches) = schema.get("oneOf").or_else(|| schema.get("anyOf")).and_then(Value::as_array) {
            self.branches(value, branches, path);
            return;
        }
        if !self.kind(value, schema, path) {
            return;
        }
        if let Some(expected) = schema.get("const") {
            if value != expected {
                self.error(path, format!("expected {}, found {}", shown(expected), shown(value)));
                self.mend(value, path, expected.clone());
            }
        }
        if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
            if !allowed.contains(value) {
                let names: Vec<String> = allowed.iter().map(shown).collect();
                self.error(path, format!("{} is not one of {}", shown(value), names.join(", ")));
                self.mend(value, path, allowed.first().cloned().unwrap_or(Value::Null));
            }
        }
        self.number(value, schema, path);
        match value {
            Value::Object(fields) => self.object(fields, schema, path),
            Value::Array(items) => self.array(items, schema, path),
            _ => {}
        }
    }

    /// The `type` keyword; false when the value is of another type (replaced: nothing more
    /// to check).
    fn kind(&mut self, value: &mut Value, schema: &'a Map<String, Value>, path: &str) -> bool {
        let kinds = kinds(schema);
        if kinds.is_empty() || kinds.iter().any(|kind| type_matches(value, kind)) {
            return true;
        }
        let expected: Vec<String> = kinds.iter().map(|k| article(k)).collect();
        self.error(path, format!("expected {}, found {}", expected.join(" or "), shown(value)));
        // Text where text was expected: `"url": 42` most likely meant "42".
        let text = match &*value {
            Value::Number(n) if kinds.contains(&"string") => Some(n.to_string()),
            Value::Bool(b) if kinds.contains(&"string") => Some(b.to_string()),
            _ => None,
        };
        let by = match text {
            Some(text) => Value::String(text),
            None => self.neutral_of(schema),
        };
        self.mend(value, path, by);
        false
    }

    fn number(&mut self, value: &mut Value, schema: &'a Map<String, Value>, path: &str) {
        let Some(number) = value.as_f64() else { return };
        if let Some(minimum) = schema.get("minimum").and_then(Value::as_f64) {
            if number < minimum {
                self.error(path, format!("{} is less than {minimum}", shown(value)));
                self.mend(value, path, schema.get("minimum").cloned().unwrap_or(Value::from(0)));
                return;
            }
        }
        let maximum = match schema.get("format").and_then(Value::as_str) {
            Some("uint8") => u64::from(u8::MAX),
            Some("uint16") => u64::from(u16::MAX),
            Some("uint32") => u64::from(u32::MAX),
            Some("uint64") => u64::MAX,
            _ => return,
        };
        if value.as_u64().is_none_or(|n| n > maximum) {
            self.error(path, format!("{} is not a whole number from 0 to {maximum}", shown(value)));
            self.mend(value, path, Value::from(0));
        }
    }

    fn object(&mut self, fields: &mut Map<String, Value>, schema: &'a Map<String, Value>, path: &str) {
        let properties = schema.get("properties").and_then(Value::as_object);
        if let Some(required) = schema.get("required").and_then(Value::as_array) {
            for name in required.iter().filter_map(Value::as_str) {
                if !fields.contains_key(name) {
                    self.error(&join(path, name), "missing");
                    self.mended_paths.push(join(path, name));
                    let neutral = properties.and_then(|p| p.get(name)).map(|p| self.neutral(p)).unwrap_or(Value::Null);
                    fields.insert(name.to_string(), neutral);
                }
            }
        }
        let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
        let mut unknown = Vec::new();
        for (name, field) in fields.iter_mut() {
            match properties.and_then(|p| p.get(name)) {
                Some(property) => self.check(field, property, &join(path, name)),
                None if closed => {
                    let mut known: Vec<&str> =
                        properties.into_iter().flat_map(|p| p.keys()).map(String::as_str).collect();
                    known.sort_unstable();
                    self.error(&join(path, name), format!("unknown field (known here: {})", known.join(", ")));
                    self.mended_paths.push(join(path, name));
                    unknown.push(name.clone());
                }
                None => {}
            }
        }
        for name in unknown {
            fields.remove(&name);
        }
    }

    fn array(&mut self, items: &mut Vec<Value>, schema: &'a Map<String, Value>, path: &str) {
        let count = items.len() as u64;
        let item_schema = schema.get("items");
        if let Some(min) = schema.get("minItems").and_then(Value::as_u64).filter(|min| count < *min) {
            self.error(path, format!("{count} items, at least {min} expected"));
            self.mended_paths.push(path.to_string());
            let neutral = item_schema.map(|items| self.neutral(items)).unwrap_or(Value::Null);
            items.resize(min as usize, neutral);
        }
        if let Some(max) = schema.get("maxItems").and_then(Value::as_u64).filter(|max| count > *max) {
            self.error(path, format!("{count} items, at most {max} expected"));
            self.mended_paths.push(path.to_string());
            items.truncate(max as usize);
        }
        if let Some(item_schema) = item_schema {
            for (i, item) in items.iter_mut().enumerate() {
                self.check(item, item_schema, &format!("{path}[{i}]"));
            }
        }
    }

    /// `oneOf` / `anyOf`: a tagged union picks its branch by `type`; otherwise the value must
    /// fit some branch, and the errors shown (and the mending kept) are those of the branch it
    /// came closest to.
    fn branches(&mut self, value: &mut Value, branches: &'a [Value], path: &str) {
        let branches: Vec<&Value> = branches.iter().map(|b| self.resolve(b)).collect();
        let tags: Vec<&str> = branches.iter().filter_map(|b| tag_of(b)).collect();
        if !tags.is_empty() && tags.len() == branches.len() {
            let tag = value.get("type");
            match tag.and_then(Value::as_str).and_then(|tag| branches.iter().find(|b| tag_of(b) == Some(tag))) {
                Some(branch) => self.check(value, branch, path),
                None if !value.is_object() => {
                    self.error(path, format!("expected an object, found {}", shown(value)));
                    let by = self.neutral(branches[0]);
                    self.mend(value, path, by);
                }
                None => {
                    let what = match tag {
                        None => "a \"type\" is missing".to_string(),
                        Some(tag) => format!("unknown type {}", shown(tag)),
                    };
                    self.error(&join(path, "type"), format!("{what} (one of: {})", tags.join(", ")));
                    let by = self.neutral(branches[0]);
                    self.mend(value, path, by);
                }
            }
            return;
        }
        let mut closest: Option<(Checker, Value)> = None;
        for branch in &branches {
            let mut trial = Checker { root: self.root, errors: Vec::new(), mended_paths: Vec::new() };
            let mut mended = value.clone();
            trial.check(&mut mended, branch, path);
            if trial.errors.is_empty() {
                return;
            }
            // `null` only fits the `null` branch of an optional value: the other branch's
            // errors say what was expected.
            let null_branch = branch.get("type") == Some(&Value::String("null".into()));
            if !null_branch && closest.as_ref().is_none_or(|(best, _)| trial.errors.len() < best.errors.len()) {
                closest = Some((trial, mended));
            }
        }
        let consts: Vec<String> = branches.iter().filter_map(|b| b.get("const")).map(shown).collect();
        if consts.len() == branches.len() {
            self.error(path, format!("{} is not one of {}", shown(value), consts.join(", ")));
            let by = branches.first().and_then(|b| b.get("const")).cloned().unwrap_or(Value::Null);
            self.mend(value, path, by);
            return;
        }
        match closest {
            Some((best, mended)) => {
                self.errors.extend(best.errors);
                self.mended_paths.extend(best.mended_paths);
                *value = mended;
            }
            None => {
                self.error(path, format!("{} does not fit here", shown(value)));
                self.mend(value, path, Value::Null);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::Plan;

    fn problems(text: &str) -> Vec<String> {
        Plan::from_json(text).err().unwrap_or_default().iter().map(|e| format!("{}: {}", e.path, e.message)).collect()
    }

    #[test]
    fn every_type_error_is_reported_with_its_path() {
        let found = problems(
            r#"{"version": "1", "scenarios": [{"name": 5, "injection": [{"type": "at_once_users", "users": -1}],
                "steps": [{"type": "request", "name": "a", "method": "GET", "url": 7, "retries": 2},
                          {"type": "pause", "duration_ms": "1s"},
                          {"type": "sleep"}]}],
                "options": {"on_check_failure": "explode"}}"#,
        );
        assert_eq!(
            found,
            vec![
                "options.on_check_failure: \"explode\" is not one of \"stop_iteration\", \"continue\"",
                "scenarios[0].injection[0].users: -1 is less than 0",
                "scenarios[0].name: expected a string, found 5",
                "scenarios[0].steps[0].retries: unknown field (known here: body, checks, follow_redirects, headers, method, name, query, resources, type, url)",
                "scenarios[0].steps[0].url: expected a string, found 7",
                "scenarios[0].steps[1].duration_ms: expected an integer, found \"1s\"",
                "scenarios[0].steps[2].type: unknown type \"sleep\" (one of: request, pause, pause_uniform, pause_exponential, pause_normal, pause_template, pace, repeat, during, group, batch, ws_connect, ws_send, ws_await, ws_close, sse_connect, sse_await, sse_close, feed, set, unset, do_if, do_switch, random_switch, uniform_random_switch, round_robin_switch, foreach, as_long_as, do_while, try_max, eventually, exit_here_if_failed, exit_here, exit_block_on_fail, session_function, stop_load_generator, add_cookie, get_cookie, flush_cookie_jar, flush_session_cookies, couchdb_bulk_insert, couchdb_crud, sql_workload, sql, sql_transaction, cql, cql_batch, cql_ycsb)",
                "version: expected an integer, found \"1\"",
            ]
        );
    }

    #[test]
    fn missing_fields_and_optional_values_are_named() {
        let found = problems(
            r#"{"version": 1, "scenarios": [{"name": "s", "steps": [{"type": "request", "name": "a"}]}], "protocol": {"base_url": 3}}"#,
        );
        assert_eq!(
            found,
            vec![
                "protocol.base_url: expected a string or null, found 3",
                "scenarios[0].injection: missing",
                "scenarios[0].steps[0].method: missing",
                "scenarios[0].steps[0].url: missing",
            ]
        );
    }
}
