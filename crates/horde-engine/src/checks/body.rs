//! The sources every protocol with a body shares (an HTTP response's, a socket's message): its
//! text searched, matched, parsed as HTML, JSON or XML, measured and hashed. The body is parsed
//! at most once per subject, and only when a check asks for it.

use super::xpath::XPath;
use crate::session::expression::hex;
use crate::session::Value;
use base64::Engine as _;
use sha1::Digest as _;
use std::borrow::Cow;

/// A source read from a body.
pub enum BodyExtractor {
    Substring(String),
    Regex { regex: regex::Regex, group: usize },
    Css { selector: scraper::Selector, attribute: Option<String> },
    JsonPath(serde_json_path::JsonPath),
    JmesPath(jmespath::Expression<'static>),
    XPath(XPath),
    BodyString,
    BodyBytes,
    BodyLength,
    Md5,
    Sha1,
    Sha256,
}

/// A body as checks see it, with what was parsed of it so far.
pub struct BodyView<'a> {
    body: &'a [u8],
    html: Option<scraper::Html>,
    json: Option<Option<serde_json::Value>>,
    jmespath: Option<Option<jmespath::Rcvar>>,
}

impl<'a> BodyView<'a> {
    pub fn new(body: &'a [u8]) -> BodyView<'a> {
        BodyView { body, html: None, json: None, jmespath: None }
    }

    /// The body parsed as HTML, once for the checks and the page's resources.
    pub fn html(&mut self) -> &scraper::Html {
        let body = self.body;
        self.html.get_or_insert_with(|| scraper::Html::parse_document(&String::from_utf8_lossy(body)))
    }

    /// The parsed HTML, parsed now if no check needed it.
    pub fn into_html(mut self) -> scraper::Html {
        self.html();
        self.html.expect("parsed just above")
    }

    fn text(&self) -> Cow<'a, str> {
        String::from_utf8_lossy(self.body)
    }

    /// The body parsed as JSON, once; a body that is not JSON has no values.
    fn json(&mut self) -> Option<&serde_json::Value> {
        let body = self.body;
        self.json.get_or_insert_with(|| serde_json::from_slice(body).ok()).as_ref()
    }

    /// The JSON body as JMESPath reads it, converted once.
    fn jmespath_data(&mut self) -> Option<jmespath::Rcvar> {
        if self.jmespath.is_none() {
            let data = self.json().and_then(|json| jmespath::Variable::try_from(json).ok()).map(jmespath::Rcvar::new);
            self.jmespath = Some(data);
        }
        self.jmespath.clone().flatten()
    }

    /// The source's values, at most `limit` of them, in the body's order. JSON null is no
    /// value. An error is an expression that failed on this body.
    pub fn values(&mut self, extractor: &BodyExtractor, limit: usize) -> Result<Vec<Value>, String> {
        let one = |value: Value| vec![value];
        Ok(match extractor {
            BodyExtractor::Substring(needle) => {
                let found = self.text().matches(needle.as_str()).take(limit).count();
                vec![Value::from(needle.as_str()); found]
            }
            BodyExtractor::Regex { regex, group } => {
                let text = self.text();
                regex
                    .captures_iter(&text)
                    .filter_map(|c| c.get(*group))
                    .take(limit)
                    .map(|m| Value::from(m.as_str()))
                    .collect()
            }
            BodyExtractor::Css { selector, attribute } => {
                let html = self.html();
                let found = html.select(selector).filter_map(|element| match attribute {
                    Some(attribute) => element.value().attr(attribute).map(Value::from),
                    None => Some(Value::from(element.text().collect::<String>().trim())),
                });
                found.take(limit).collect()
            }
            BodyExtractor::JsonPath(path) => match self.json() {
                None => Vec::new(),
                Some(json) => path
                    .query(json)
                    .all()
                    .into_iter()
                    .filter(|v| !v.is_null())
                    .take(limit)
                    .map(|v| Value::from_json(v.clone()))
                    .collect(),
            },
            BodyExtractor::JmesPath(expression) => {
                let Some(data) = self.jmespath_data() else { return Ok(Vec::new()) };
                let result = expression.search(data).map_err(|err| err.to_string())?;
                let json = |var: &jmespath::Variable| serde_json::to_value(var).unwrap_or(serde_json::Value::Null);
                match result.as_array() {
                    Some(items) => {
                        items.iter().filter(|v| !v.is_null()).take(limit).map(|v| Value::from_json(json(v))).collect()
                    }
                    None if result.is_null() => Vec::new(),
                    None => one(Value::from_json(json(&result))),
                }
            }
            BodyExtractor::XPath(xpath) => xpath.evaluate(&self.text(), limit)?.into_iter().map(Value::from).collect(),
            BodyExtractor::BodyString => one(Value::from(self.text().into_owned())),
            BodyExtractor::BodyBytes => one(Value::from(base64::engine::general_purpose::STANDARD.encode(self.body))),
            BodyExtractor::BodyLength => one(Value::from(self.body.len().to_string())),
            BodyExtractor::Md5 => one(Value::from(hex(&md5::Md5::digest(self.body)))),
            BodyExtractor::Sha1 => one(Value::from(hex(&sha1::Sha1::digest(self.body)))),
            BodyExtractor::Sha256 => one(Value::from(hex(&sha2::Sha256::digest(self.body)))),
        })
    }
}
