//! Arbitrary schema text, JSON or XML: an error with a place, or a schema whose documents
//! generate; never a panic, however deep or odd.

use horde_docgen::{Dictionary, Generator, Schema};
use proptest::prelude::*;

fn xml_fragment() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("<null/>".to_string()),
        Just("<string/>".to_string()),
        Just("<integer/>".to_string()),
        Just("<float/>".to_string()),
        Just("<boolean/>".to_string()),
        "[<>/a-z \"=&;]{0,12}",
    ];
    leaf.prop_recursive(6, 64, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(|items| format!(
                "<array>{}</array>",
                items.iter().map(|i| format!("<element>{i}</element>")).collect::<String>()
            )),
            proptest::collection::vec(("[a-z]{0,5}", inner), 0..4).prop_map(|entries| {
                let body: String = entries
                    .iter()
                    .map(|(name, value)| format!("<entry><name>{name}</name><value>{value}</value></entry>"))
                    .collect();
                format!("<object>{body}</object>")
            }),
        ]
    })
}

proptest! {
    #[test]
    fn any_xml_schema_is_refused_or_generates(text in xml_fragment()) {
        if let Ok(schema) = Schema::from_xml(&text) {
            let mut generator = Generator::new(schema, Dictionary::shared(), 1);
            let _ = generator.document();
        }
    }

    #[test]
    fn any_text_is_refused_or_generates(text in "\\PC{0,120}") {
        for schema in [Schema::from_json(&text), Schema::from_xml(&text)].into_iter().flatten() {
            let mut generator = Generator::new(schema, Dictionary::shared(), 1);
            let _ = generator.document();
        }
    }
}
