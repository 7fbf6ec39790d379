//! XPath checks, with xee (XPath 3.1, pure Rust) on the body parsed as XML, as Gatling's
//! `xpath` reads XML.
//!
//! xee's compiled queries are reference counted without atomics, so they cannot live in the
//! Program that every worker shares. The Program keeps the expression, checked when the plan
//! is lowered; each worker thread compiles it once, on first use, and keeps it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use xee_xpath::query::SequenceQuery;
use xee_xpath::{Documents, Queries, Query};

/// An XPath expression that compiles.
#[derive(Debug, Clone)]
pub struct XPath {
    expression: Arc<str>,
}

impl XPath {
    /// The expression, or xee's word on why it does not compile.
    pub fn compile(expression: &str) -> Result<XPath, String> {
        Queries::default().sequence(expression).map_err(|err| err.to_string())?;
        Ok(XPath { expression: expression.into() })
    }

    /// What the expression selects in `body` parsed as XML: each node's string value, or
    /// each atomic value as text. A body that is not XML has nothing in it (as a body that is
    /// not JSON has nothing for a JSONPath); an expression that fails on it says why.
    pub fn evaluate(&self, body: &str, limit: usize) -> Result<Vec<String>, String> {
        let query = compiled(&self.expression)?;
        let mut documents = Documents::new();
        let Ok(document) = documents.add_string_without_uri(body) else {
            return Ok(Vec::new());
        };
        let sequence = query.execute(&mut documents, document).map_err(|err| err.to_string())?;
        let xot = documents.xot();
        sequence
            .iter()
            .take(limit)
            .map(|item| {
                item.string_value(xot).map_err(|err| format!("{err}: a map, an array or a function has no text"))
            })
            .collect()
    }
}

thread_local! {
    static QUERIES: RefCell<HashMap<Arc<str>, Rc<SequenceQuery>>> = RefCell::new(HashMap::new());
}

fn compiled(expression: &Arc<str>) -> Result<Rc<SequenceQuery>, String> {
    QUERIES.with(|queries| {
        if let Some(query) = queries.borrow().get(expression) {
            return Ok(query.clone());
        }
        let query = Rc::new(Queries::default().sequence(expression).map_err(|err| err.to_string())?);
        queries.borrow_mut().insert(expression.clone(), query.clone());
        Ok(query)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FEED: &str = r#"<?xml version="1.0"?><feed><entry id="a1"><title>First</title></entry><entry id="b2"><title> Second </title></entry></feed>"#;

    #[test]
    fn nodes_give_their_string_values_and_expressions_their_values() {
        let ids = XPath::compile("//entry/@id").unwrap();
        assert_eq!(ids.evaluate(FEED, usize::MAX).unwrap(), ["a1", "b2"]);
        assert_eq!(ids.evaluate(FEED, 1).unwrap(), ["a1"]);
        let titles = XPath::compile("/feed/entry/title").unwrap();
        assert_eq!(titles.evaluate(FEED, usize::MAX).unwrap(), ["First", " Second "]);
        assert_eq!(XPath::compile("count(//entry)").unwrap().evaluate(FEED, usize::MAX).unwrap(), ["2"]);
        assert!(XPath::compile("//missing").unwrap().evaluate(FEED, usize::MAX).unwrap().is_empty());
    }

    #[test]
    fn a_body_that_is_not_xml_has_nothing_and_a_bad_expression_is_refused() {
        let ids = XPath::compile("//entry/@id").unwrap();
        assert!(ids.evaluate("<html><p>unclosed</html>", usize::MAX).unwrap().is_empty());
        assert!(XPath::compile("//entry[").is_err());
    }
}
