//! Documents generated from a schema, by the rules of Iron Cushion (seed 003), so a CouchDB
//! benchmark (or any request body) can send realistic, reproducible documents.
//!
//! ```
//! use horde_docgen::{Dictionary, Generator, Schema};
//! let schema = Schema::from_json(r#"{"_id": "x", "name": "", "tags": ["", ""], "score": 0.5, "n": 1}"#).unwrap();
//! let mut generator = Generator::new(schema, Dictionary::shared(), 42);
//! let document = generator.document();
//! assert!(document.get("_id").is_none());
//! assert_eq!(document["tags"].as_array().unwrap().len(), 2);
//! ```
//!
//! The rules: booleans are fair coins; integers are uniform over the 32-bit range; floats are
//! uniform in [0, 1); strings are 1 to 5 words from a dictionary of 32,768 words of 3 to 15
//! characters over `[A-Za-z0-9?!]`, every choice uniform. Names, array lengths, nulls and
//! nesting come from the schema. The same seed gives the same documents.

mod schema;

pub use schema::{Schema, SchemaError};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::{Map, Value};
use std::sync::{Arc, OnceLock};

/// Words in the dictionary, as in Iron Cushion.
pub const DICTIONARY_WORDS: usize = 32_768;
const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789?!";
/// The dictionary is the same for every run (it is not part of what `--seed` varies), so a
/// seed reproduces the same documents on every machine.
const DICTIONARY_SEED: u64 = 0x1c0_c0c4;

/// The words strings are made of.
pub struct Dictionary {
    words: Vec<Box<str>>,
}

impl Dictionary {
    pub fn new(seed: u64) -> Dictionary {
        let mut rng = SmallRng::seed_from_u64(seed);
        let words = (0..DICTIONARY_WORDS)
            .map(|_| {
                let length = rng.random_range(3..=15);
                (0..length).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect::<String>().into()
            })
            .collect();
        Dictionary { words }
    }

    /// The standard dictionary, built once per process.
    pub fn shared() -> Arc<Dictionary> {
        static SHARED: OnceLock<Arc<Dictionary>> = OnceLock::new();
        SHARED.get_or_init(|| Arc::new(Dictionary::new(DICTIONARY_SEED))).clone()
    }

    pub fn words(&self) -> &[Box<str>] {
        &self.words
    }
}

/// Generates documents from a schema with its own random stream.
pub struct Generator {
    schema: Arc<Schema>,
    dictionary: Arc<Dictionary>,
    rng: SmallRng,
}

impl Generator {
    /// `schema` may be an `Arc` shared by many generators (one per virtual user).
    pub fn new(schema: impl Into<Arc<Schema>>, dictionary: Arc<Dictionary>, seed: u64) -> Generator {
        Generator { schema: schema.into(), dictionary, rng: SmallRng::seed_from_u64(seed) }
    }

    /// A new document.
    pub fn document(&mut self) -> Value {
        let schema = self.schema.clone();
        self.value(&schema)
    }

    /// Iron Cushion's update: one randomly chosen value of the document's top-level object is
    /// generated anew. Returns the name of that value, if the document has any.
    pub fn update(&mut self, document: &mut Value) -> Option<String> {
        let schema = self.schema.clone();
        let Schema::Object(entries) = &*schema else { return None };
        if entries.is_empty() {
            return None;
        }
        let index = self.rng.random_range(0..entries.len());
        let (name, schema) = entries[index].clone();
        let value = self.value(&schema);
        if let Value::Object(map) = document {
            map.insert(name.clone(), value);
        }
        Some(name)
    }

    fn value(&mut self, schema: &Schema) -> Value {
        match schema {
            Schema::Null => Value::Null,
            Schema::Boolean => Value::Bool(self.rng.random()),
            Schema::Integer => Value::from(self.rng.random::<i32>()),
            Schema::Float => Value::from(self.rng.random::<f64>()),
            Schema::String => Value::String(self.string()),
            Schema::Array(elements) => Value::Array(elements.iter().map(|e| self.value(e)).collect()),
            Schema::Object(entries) => {
                let mut map = Map::with_capacity(entries.len());
                for (name, schema) in entries {
                    let value = self.value(schema);
                    map.insert(name.clone(), value);
                }
                Value::Object(map)
            }
        }
    }

    fn string(&mut self) -> String {
        let words = self.dictionary.words();
        let count = self.rng.random_range(1..=5);
        let mut text = String::new();
        for i in 0..count {
            if i > 0 {
                text.push(' ');
            }
            text.push_str(&words[self.rng.random_range(0..words.len())]);
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dictionary_follows_the_rules() {
        let dictionary = Dictionary::shared();
        assert_eq!(dictionary.words().len(), 32_768);
        assert!(dictionary
            .words()
            .iter()
            .all(|w| (3..=15).contains(&w.len()) && w.bytes().all(|b| ALPHABET.contains(&b))));
        let lengths: std::collections::BTreeSet<usize> = dictionary.words().iter().map(|w| w.len()).collect();
        assert_eq!(lengths.len(), 13, "every length from 3 to 15 occurs");
    }

    #[test]
    fn values_follow_their_distributions() {
        let schema = Schema::from_json(r#"{"b": true, "i": 0, "f": 0.0, "s": ""}"#).unwrap();
        let mut generator = Generator::new(schema, Dictionary::shared(), 7);
        let (mut trues, mut negatives, mut words) = (0, 0, [0usize; 6]);
        for _ in 0..4000 {
            let d = generator.document();
            trues += usize::from(d["b"].as_bool().unwrap());
            negatives += usize::from(d["i"].as_i64().unwrap() < 0);
            let f = d["f"].as_f64().unwrap();
            assert!((0.0..1.0).contains(&f));
            words[d["s"].as_str().unwrap().split(' ').count()] += 1;
        }
        assert!((1800..2200).contains(&trues), "{trues}");
        assert!((1800..2200).contains(&negatives), "{negatives}");
        assert_eq!(words[0], 0);
        assert!(words[1..].iter().all(|n| (650..950).contains(n)), "{words:?}");
    }

    #[test]
    fn the_same_seed_gives_the_same_documents() {
        let schema = || Schema::from_json(r#"{"a": ["", 0, 0.0, true, null], "o": {"x": ""}}"#).unwrap();
        let mut a = Generator::new(schema(), Dictionary::shared(), 3);
        let mut b = Generator::new(schema(), Dictionary::shared(), 3);
        let mut c = Generator::new(schema(), Dictionary::shared(), 4);
        let (first, second, third) = (a.document(), b.document(), c.document());
        assert_eq!(first, second);
        assert_ne!(first, third);
    }

    #[test]
    fn an_update_regenerates_one_top_level_value() {
        let schema = Schema::from_json(r#"{"a": "", "b": "", "c": ""}"#).unwrap();
        let mut generator = Generator::new(schema, Dictionary::shared(), 1);
        let original = generator.document();
        let mut updated = original.clone();
        let name = generator.update(&mut updated).unwrap();
        let changed: Vec<&String> =
            original.as_object().unwrap().keys().filter(|k| original[k.as_str()] != updated[k.as_str()]).collect();
        assert_eq!(changed, vec![&name]);
    }
}
