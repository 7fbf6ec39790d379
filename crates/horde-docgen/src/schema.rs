//! Schemas: a JSON document used as a template (any CouchDB document is a valid schema), or
//! the XML format of seed 003 (`object`/`entry`/`name`/`value`, `array`/`element`, `boolean`,
//! `integer`, `float`, `string`, `null`).

use serde_json::Value;
use std::path::Path;

/// The shape of generated documents.
#[derive(Debug, Clone, PartialEq)]
pub enum Schema {
    Object(Vec<(String, Schema)>),
    Array(Vec<Schema>),
    Boolean,
    Integer,
    Float,
    String,
    Null,
}

/// How deep objects and arrays may nest in a schema. Real documents nest a few levels; the
/// bound keeps a hostile or broken schema from exhausting the stack of the recursive
/// reading and generation.
pub const MAX_SCHEMA_DEPTH: usize = 64;

/// A schema that cannot be read: what is wrong and where.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SchemaError {
    #[error("cannot read schema file {path}: {message}")]
    Read { path: String, message: String },
    #[error("invalid JSON schema at line {line}, column {column}: {message}")]
    Json { line: usize, column: usize, message: String },
    #[error("invalid XML schema at line {line}, column {column}: {message}")]
    Xml { line: u32, column: u32, message: String },
    #[error("a schema must describe an object (a CouchDB document), not {found}")]
    NotAnObject { found: String },
    #[error("the schema nests objects and arrays deeper than {MAX_SCHEMA_DEPTH} levels")]
    TooDeep,
}

impl Schema {
    /// A JSON document as a template: every boolean, integer, float and string is replaced by
    /// a generated one. `_id` and `_rev` at the top are dropped, as CouchDB sets them.
    pub fn from_json(text: &str) -> Result<Schema, SchemaError> {
        let value: Value = serde_json::from_str(text).map_err(|e| SchemaError::Json {
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        let Value::Object(mut map) = value else {
            return Err(SchemaError::NotAnObject { found: kind_of(&value).into() });
        };
        map.remove("_id");
        map.remove("_rev");
        let value = Value::Object(map);
        if depth_of(&value) > MAX_SCHEMA_DEPTH {
            return Err(SchemaError::TooDeep);
        }
        Ok(from_value(&value))
    }

    /// The XML schema format; the outermost element must be `<object>`.
    pub fn from_xml(text: &str) -> Result<Schema, SchemaError> {
        let document = roxmltree::Document::parse(text).map_err(|e| {
            let position = e.pos();
            // roxmltree ends its message with the position, which the error gives already.
            let message = e.to_string();
            let suffix = format!(" at {}:{}", position.row, position.col);
            let message = message.strip_suffix(&suffix).unwrap_or(&message).to_string();
            SchemaError::Xml { line: position.row, column: position.col, message }
        })?;
        let root = document.root_element();
        if root.tag_name().name() != "object" {
            return Err(xml_error(
                &document,
                root,
                format!("the outermost element must be <object>, not <{}>", root.tag_name().name()),
            ));
        }
        from_xml_type(&document, root, 0)
    }

    /// Reads a schema file: `.xml` is the XML format, anything else JSON.
    pub fn from_file(path: &Path) -> Result<Schema, SchemaError> {
        let text = horde_plan::input::read_text_bounded(path, horde_plan::input::MAX_INPUT_FILE_BYTES)
            .map_err(|message| SchemaError::Read { path: path.display().to_string(), message })?;
        if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("xml")) {
            Schema::from_xml(&text)
        } else {
            Schema::from_json(&text)
        }
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Levels of objects and arrays (serde_json's own recursion limit keeps this call shallow).
fn depth_of(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth_of).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth_of).max().unwrap_or(0),
        _ => 0,
    }
}

fn from_value(value: &Value) -> Schema {
    match value {
        Value::Null => Schema::Null,
        Value::Bool(_) => Schema::Boolean,
        Value::Number(n) if n.is_f64() => Schema::Float,
        Value::Number(_) => Schema::Integer,
        Value::String(_) => Schema::String,
        Value::Array(items) => Schema::Array(items.iter().map(from_value).collect()),
        Value::Object(map) => Schema::Object(map.iter().map(|(k, v)| (k.clone(), from_value(v))).collect()),
    }
}

fn xml_error(document: &roxmltree::Document<'_>, node: roxmltree::Node<'_, '_>, message: String) -> SchemaError {
    let position = document.text_pos_at(node.range().start);
    SchemaError::Xml { line: position.row, column: position.col, message }
}

fn elements<'a, 'input>(node: roxmltree::Node<'a, 'input>) -> impl Iterator<Item = roxmltree::Node<'a, 'input>> {
    node.children().filter(|n| n.is_element())
}

/// The one type element inside a `<value>` or `<element>`.
fn single_type(
    document: &roxmltree::Document<'_>,
    node: roxmltree::Node<'_, '_>,
    depth: usize,
) -> Result<Schema, SchemaError> {
    let mut children = elements(node);
    let (Some(child), None) = (children.next(), children.next()) else {
        return Err(xml_error(
            document,
            node,
            format!("<{}> must hold exactly one type element", node.tag_name().name()),
        ));
    };
    from_xml_type(document, child, depth)
}

/// The type element `node`, `depth` objects and arrays deep.
fn from_xml_type(
    document: &roxmltree::Document<'_>,
    node: roxmltree::Node<'_, '_>,
    depth: usize,
) -> Result<Schema, SchemaError> {
    if depth >= MAX_SCHEMA_DEPTH && matches!(node.tag_name().name(), "array" | "object") {
        return Err(xml_error(
            document,
            node,
            format!("objects and arrays nest deeper than {MAX_SCHEMA_DEPTH} levels here (the most a schema may nest)"),
        ));
    }
    let leaf = |schema: Schema| {
        if elements(node).next().is_some() {
            Err(xml_error(document, node, format!("<{}> takes no elements inside", node.tag_name().name())))
        } else {
            Ok(schema)
        }
    };
    match node.tag_name().name() {
        "boolean" => leaf(Schema::Boolean),
        "integer" => leaf(Schema::Integer),
        "float" => leaf(Schema::Float),
        "string" => leaf(Schema::String),
        "null" => leaf(Schema::Null),
        "array" => elements(node)
            .map(|element| {
                if element.tag_name().name() != "element" {
                    return Err(xml_error(
                        document,
                        element,
                        format!("<array> holds <element>s, not <{}>", element.tag_name().name()),
                    ));
                }
                single_type(document, element, depth + 1)
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Schema::Array),
        "object" => elements(node)
            .map(|entry| {
                if entry.tag_name().name() != "entry" {
                    return Err(xml_error(
                        document,
                        entry,
                        format!("<object> holds <entry>s, not <{}>", entry.tag_name().name()),
                    ));
                }
                let name = elements(entry).find(|n| n.tag_name().name() == "name");
                let value = elements(entry).find(|n| n.tag_name().name() == "value");
                let (Some(name), Some(value)) = (name, value) else {
                    return Err(xml_error(document, entry, "an <entry> needs a <name> and a <value>".into()));
                };
                let text = name.text().unwrap_or("").trim();
                if text.is_empty() {
                    return Err(xml_error(document, name, "a <name> must hold the value's name".into()));
                }
                Ok((text.to_string(), single_type(document, value, depth + 1)?))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Schema::Object),
        other => Err(xml_error(
            document,
            node,
            format!("unknown element <{other}> (object, array, boolean, integer, float, string, null)"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_numbers_keep_their_kind_and_couchdb_fields_go() {
        let schema = Schema::from_json(r#"{"_id": "a", "_rev": "1-x", "n": 3, "x": 0.0, "l": [null, "s"]}"#).unwrap();
        assert_eq!(
            schema,
            Schema::Object(vec![
                ("l".into(), Schema::Array(vec![Schema::Null, Schema::String])),
                ("n".into(), Schema::Integer),
                ("x".into(), Schema::Float),
            ])
        );
    }

    #[test]
    fn bad_schemas_say_what_and_where() {
        assert_eq!(Schema::from_json("[1, 2]").unwrap_err(), SchemaError::NotAnObject { found: "an array".into() });
        let err = Schema::from_json("{\n  \"a\": 1,\n  \"b\": [}\n}").unwrap_err();
        assert!(matches!(err, SchemaError::Json { line: 3, .. }), "{err}");
        let err = Schema::from_xml("<object>\n  <entry><name>a</name><value><decimal/></value></entry>\n</object>")
            .unwrap_err();
        assert_eq!(err.to_string(), "invalid XML schema at line 2, column 31: unknown element <decimal> (object, array, boolean, integer, float, string, null)");
        let err = Schema::from_xml("<array/>").unwrap_err();
        assert!(err.to_string().contains("outermost element must be <object>"), "{err}");
        let err = Schema::from_xml("<object><entry><name>a</name></entry></object>").unwrap_err();
        assert!(err.to_string().contains("needs a <name> and a <value>"), "{err}");
        let err = Schema::from_xml("<object><entry>").unwrap_err();
        assert!(matches!(err, SchemaError::Xml { line: 1, .. }), "{err}");
    }

    #[test]
    fn deep_nesting_is_refused_with_its_place() {
        let deep = 10_000;
        let xml = format!("{}<null/>{}", "<array><element>".repeat(deep), "</element></array>".repeat(deep)).replacen(
            "<array>",
            "<object><entry><name>a</name><value><array>",
            1,
        ) + "</value></entry></object>";
        let err = Schema::from_xml(&xml).unwrap_err();
        assert!(err.to_string().contains("deeper than 64 levels"), "{err}");
        assert!(matches!(err, SchemaError::Xml { line: 1, .. }), "{err}");
        let json = format!("{{\"a\": {}1{}}}", "[".repeat(100), "]".repeat(100));
        assert_eq!(Schema::from_json(&json).unwrap_err(), SchemaError::TooDeep);
    }
}
