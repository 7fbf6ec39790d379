//! Seed 003's example schema, in JSON and in its XML twin: both read to the same schema and
//! generate identically shaped documents, and the example's shape is kept.

use horde_docgen::{Dictionary, Generator, Schema};
use serde_json::Value;
use std::path::Path;

fn fixture(name: &str) -> Schema {
    Schema::from_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)).unwrap()
}

/// The shape of a value: its kind, with names, lengths and nesting, but not its content.
fn shape(value: &Value) -> Value {
    match value {
        Value::Null => Value::from("null"),
        Value::Bool(_) => Value::from("boolean"),
        Value::Number(n) if n.is_f64() => Value::from("float"),
        Value::Number(_) => Value::from("integer"),
        Value::String(_) => Value::from("string"),
        Value::Array(items) => Value::Array(items.iter().map(shape).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), shape(v))).collect()),
    }
}

#[test]
fn the_json_schema_and_its_xml_twin_are_the_same_schema() {
    assert_eq!(fixture("example_schema.json"), fixture("example_schema.xml"));
}

#[test]
fn documents_keep_the_examples_shape() {
    let mut from_json = Generator::new(fixture("example_schema.json"), Dictionary::shared(), 11);
    let mut from_xml = Generator::new(fixture("example_schema.xml"), Dictionary::shared(), 11);
    let document = from_json.document();
    assert_eq!(
        shape(&document),
        serde_json::json!({
            "array1": [["float", "float"], {}, "boolean", "null"],
            "boolean1": "boolean",
            "integer1": "integer",
            "obj1": {"array2": [], "obj2": {"boolean2": "boolean"}},
            "string1": "string"
        })
    );
    // Same schema and seed: the very same documents, whichever file they came from.
    assert_eq!(document, from_xml.document());
    for _ in 0..100 {
        assert_eq!(shape(&from_json.document()), shape(&from_xml.document()));
    }
}
