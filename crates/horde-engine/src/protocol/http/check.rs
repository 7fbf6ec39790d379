//! Checks: extract a value from a response, validate it, save it into the session.

use crate::lower::{CheckProgram, Extractor};
use crate::session::{Session, Value};
use bytes::Bytes;
use horde_plan::Validation;
use http::{HeaderMap, StatusCode};
use std::borrow::Cow;

/// The response as checks see it. The body is parsed as HTML or JSON at most once, and only
/// when a check asks for it.
pub struct ResponseView<'a> {
    pub status: StatusCode,
    pub headers: &'a HeaderMap,
    pub body: &'a Bytes,
    html: Option<scraper::Html>,
    json: Option<Option<serde_json::Value>>,
}

impl<'a> ResponseView<'a> {
    pub fn new(status: StatusCode, headers: &'a HeaderMap, body: &'a Bytes) -> Self {
        ResponseView { status, headers, body, html: None, json: None }
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

    fn extract(&mut self, extractor: &Extractor) -> Option<Value> {
        match extractor {
            Extractor::Status => Some(Value::from(self.status.as_u16().to_string())),
            Extractor::Header(name) => {
                self.headers.get(name).map(|v| Value::from(String::from_utf8_lossy(v.as_bytes()).into_owned()))
            }
            Extractor::Substring(needle) => self.text().contains(needle.as_str()).then(|| Value::from(needle.as_str())),
            Extractor::Regex { regex, group } => {
                let text = self.text();
                regex.captures(&text).and_then(|c| c.get(*group)).map(|m| Value::from(m.as_str()))
            }
            Extractor::Css { selector, attribute } => {
                let html = self.html();
                let element = html.select(selector).next()?;
                match attribute {
                    Some(attribute) => element.value().attr(attribute).map(Value::from),
                    None => Some(Value::from(element.text().collect::<String>().trim())),
                }
            }
            Extractor::JsonPath(path) => {
                let body = self.body;
                let json = self.json.get_or_insert_with(|| serde_json::from_slice(body).ok()).as_ref()?;
                // JSON null is no value: `exists()` fails on it and nothing is saved.
                let node = path.query(json).all().into_iter().find(|v| !v.is_null())?;
                Some(Value::from_json(node.clone()))
            }
        }
    }
}

/// A failed check: which one, what it saw, and a small detail to count it under.
#[derive(Debug)]
pub struct CheckFailure {
    pub message: String,
    pub detail: u32,
}

/// Runs the checks in order; the first failure stops them. Values are saved only from
/// checks that pass. Without an explicit status check, the status must be 2xx or 304, as in
/// Gatling.
pub fn run_checks(
    checks: &[CheckProgram],
    response: &mut ResponseView<'_>,
    session: &mut Session,
) -> Result<(), CheckFailure> {
    if !checks.iter().any(|c| matches!(c.extractor, Extractor::Status)) {
        let status = response.status.as_u16();
        if !(200..300).contains(&status) && status != 304 {
            return Err(CheckFailure {
                message: format!("status: expected 2xx or 304, found {status}"),
                detail: status as u32,
            });
        }
    }
    for (index, check) in checks.iter().enumerate() {
        let found = response.extract(&check.extractor);
        let found_text = found.as_ref().map(Value::as_text);
        let passed = match (&check.validation, &found_text) {
            (Validation::Exists, found) => found.is_some(),
            (Validation::NotExists, found) => found.is_none(),
            (Validation::Is { value }, Some(found)) => found == value,
            (Validation::In { values }, Some(found)) => values.iter().any(|v| v == found),
            (_, None) => false,
        };
        if !passed {
            let detail = match check.extractor {
                Extractor::Status => response.status.as_u16() as u32,
                _ => 1000 + index as u32,
            };
            return Err(CheckFailure { message: failure_message(check, found_text.as_deref()), detail });
        }
        drop(found_text);
        if let (Some(slot), Some(value)) = (check.save_as, found) {
            session.variables[slot] = Some(value);
        }
    }
    Ok(())
}

fn failure_message(check: &CheckProgram, found: Option<&str>) -> String {
    let expected = match &check.validation {
        Validation::Exists => "to exist".to_string(),
        Validation::NotExists => "not to exist".to_string(),
        Validation::Is { value } => format!("{value:?}"),
        Validation::In { values } => format!("one of {values:?}"),
    };
    let found = match found {
        None => "nothing".to_string(),
        Some(value) if value.chars().count() > 100 => {
            format!("{:?}...", value.chars().take(100).collect::<String>())
        }
        Some(value) => format!("{value:?}"),
    };
    format!("{}: expected {expected}, found {found}", check.description)
}

#[cfg(test)]
mod tests {
    use super::*;
    use horde_plan::Plan;

    fn session(slots: usize) -> Session {
        Session {
            variables: vec![None; slots],
            rng: rand::SeedableRng::seed_from_u64(1),
            user_id: 0,
            scenario: "s".into(),
            extra: None,
        }
    }

    fn texts(session: &Session) -> Vec<Option<String>> {
        session.variables.iter().map(|v| v.as_ref().map(|v| v.as_text().into_owned())).collect()
    }

    fn lowered_checks(json: &str) -> (Vec<CheckProgram>, usize) {
        let plan = Plan::from_json(&format!(
            r#"{{"version": 1, "scenarios": [{{"name": "s", "injection": [{{"type": "at_once_users", "users": 1}}],
                "steps": [{{"type": "request", "name": "r", "method": "GET", "url": "http://127.0.0.1:1/", "checks": {json}}}]}}]}}"#
        ))
        .unwrap();
        let program = crate::lower::lower(&plan).unwrap();
        let slots = program.variables.len();
        let mut steps = program.scenarios.into_iter().next().unwrap().steps;
        let crate::lower::StepProgram::Request(request) = steps.remove(0) else { panic!() };
        (request.checks, slots)
    }

    const PAGE: &str = r#"<html><body><form><input type="hidden" name="javax.faces.ViewState" id="j_id1:javax.faces.ViewState:1" value="abc123" /></form><h1 class="title"> Welcome </h1></body></html>"#;

    fn view<'a>(status: u16, headers: &'a HeaderMap, body: &'a Bytes) -> ResponseView<'a> {
        ResponseView::new(StatusCode::from_u16(status).unwrap(), headers, body)
    }

    #[test]
    fn regex_css_and_jsonpath_extract_and_save() {
        let (checks, slots) = lowered_checks(
            r#"[{"source": {"type": "regex", "pattern": "id=\"j_id1:javax.faces.ViewState:1\" value=\"([^\"]*)\""}, "save_as": "vs"},
                {"source": {"type": "css", "selector": "input[name='javax.faces.ViewState']", "attribute": "value"}, "validate": {"type": "is", "value": "abc123"}},
                {"source": {"type": "css", "selector": "h1.title"}, "save_as": "title"}]"#,
        );
        let headers = HeaderMap::new();
        let body = Bytes::from(PAGE);
        let mut vars = session(slots);
        run_checks(&checks, &mut view(200, &headers, &body), &mut vars).unwrap();
        assert_eq!(texts(&vars), vec![Some("abc123".to_string()), Some("Welcome".to_string())]);

        let (checks, slots) = checks_json();
        let body = Bytes::from(r#"{"items": [{"id": 7, "name": "seven"}]}"#);
        let mut vars = session(slots);
        run_checks(&checks, &mut view(200, &headers, &body), &mut vars).unwrap();
        assert_eq!(texts(&vars), vec![Some("7".to_string()), Some("seven".to_string())]);
    }

    fn checks_json() -> (Vec<CheckProgram>, usize) {
        lowered_checks(
            r#"[{"source": {"type": "jsonpath", "path": "$.items[0].id"}, "save_as": "id"},
                {"source": {"type": "jsonpath", "path": "$.items[0].name"}, "save_as": "name"}]"#,
        )
    }

    #[test]
    fn failures_name_the_check_and_what_it_found() {
        let (checks, slots) = lowered_checks(r#"[{"source": {"type": "status"}, "validate": {"type": "in", "values": ["200", "304"]}}]"#);
        let headers = HeaderMap::new();
        let body = Bytes::new();
        let mut vars = session(slots);
        let failure = run_checks(&checks, &mut view(500, &headers, &body), &mut vars).unwrap_err();
        assert_eq!(failure.message, r#"status: expected one of ["200", "304"], found "500""#);
        assert_eq!(failure.detail, 500);

        let (checks, slots) = lowered_checks(r#"[{"source": {"type": "regex", "pattern": "value=\"([^\"]*)\""}, "save_as": "v"}]"#);
        let body = Bytes::from("<html>expired</html>");
        let mut vars = session(slots);
        let failure = run_checks(&checks, &mut view(200, &headers, &body), &mut vars).unwrap_err();
        assert!(failure.message.ends_with("expected to exist, found nothing"), "{}", failure.message);
        assert_eq!(texts(&vars), vec![None]);
    }

    #[test]
    fn implicit_status_check_applies_without_an_explicit_one() {
        let (checks, slots) = lowered_checks(r#"[{"source": {"type": "substring", "value": "ok"}}]"#);
        let headers = HeaderMap::new();
        let body = Bytes::from("ok");
        let mut vars = session(slots);
        assert!(run_checks(&checks, &mut view(404, &headers, &body), &mut vars).is_err());
        assert!(run_checks(&checks, &mut view(304, &headers, &body), &mut vars).is_ok());
    }
}
