//! What a session variable holds.

use std::borrow::Cow;
use std::sync::Arc;

/// A session variable's value: text (what most checks extract and feeders hold), or a JSON
/// value (what a JSONPath check finds when it is not a string, a list a check or a feed made).
/// Cloning is cheap: feeders hand the same record to many users.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Text(Arc<str>),
    Json(Arc<serde_json::Value>),
}

impl Value {
    pub fn text(text: impl Into<Arc<str>>) -> Value {
        Value::Text(text.into())
    }

    /// A JSON value as a session holds it: a string becomes text.
    pub fn from_json(value: serde_json::Value) -> Value {
        match value {
            serde_json::Value::String(text) => Value::Text(text.into()),
            other => Value::Json(Arc::new(other)),
        }
    }

    /// A list of values, held as a JSON array.
    pub fn list(items: impl IntoIterator<Item = Value>) -> Value {
        Value::Json(Arc::new(serde_json::Value::Array(items.into_iter().map(Value::into_json).collect())))
    }

    pub fn into_json(self) -> serde_json::Value {
        match self {
            Value::Text(text) => serde_json::Value::String(text.to_string()),
            Value::Json(json) => Arc::unwrap_or_clone(json),
        }
    }

    /// As a template writes it: text as it is, a JSON string without its quotes, other JSON
    /// values as JSON.
    pub fn render_into(&self, out: &mut String) {
        match self {
            Value::Text(text) => out.push_str(text),
            Value::Json(json) => match &**json {
                serde_json::Value::String(text) => out.push_str(text),
                other => {
                    use std::fmt::Write;
                    let _ = write!(out, "{other}");
                }
            },
        }
    }

    pub fn as_text(&self) -> Cow<'_, str> {
        match self {
            Value::Text(text) => Cow::Borrowed(text),
            other => {
                let mut out = String::new();
                other.render_into(&mut out);
                Cow::Owned(out)
            }
        }
    }

    /// The value as JSON, to look into: text that is a JSON document is parsed (a feeder's
    /// column or a regex's capture holding JSON).
    pub fn to_json(&self) -> Option<Cow<'_, serde_json::Value>> {
        match self {
            Value::Json(json) => Some(Cow::Borrowed(json)),
            Value::Text(text) => serde_json::from_str(text).ok().map(Cow::Owned),
        }
    }
}

impl From<String> for Value {
    fn from(text: String) -> Value {
        Value::Text(text.into())
    }
}

impl From<&str> for Value {
    fn from(text: &str) -> Value {
        Value::Text(text.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_strings_render_without_quotes_and_others_as_json() {
        let mut out = String::new();
        Value::from_json(serde_json::json!("a")).render_into(&mut out);
        Value::from_json(serde_json::json!([1, "b"])).render_into(&mut out);
        Value::from("c").render_into(&mut out);
        assert_eq!(out, r#"a[1,"b"]c"#);
        assert_eq!(Value::list([Value::from("x"), Value::from("y")]).as_text(), r#"["x","y"]"#);
    }
}
