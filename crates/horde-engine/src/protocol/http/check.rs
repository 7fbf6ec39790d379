//! What checks read in an HTTP response: its status, headers and the URL that answered (the
//! protocol's own sources), and its body (the core's, `crate::checks::body`). Selecting,
//! validating and saving are the core's (`crate::checks`).

pub use crate::checks::CheckFailure;
use crate::checks::{run_checks_on, BodyExtractor, BodyView, CheckProgram, CheckSubject, Extractor, OwnSource};
use crate::lower::LoweringContext;
use crate::session::{Session, Value};
use horde_plan::{CheckSource, HttpSource};
use http::header::HeaderName;
use http::{HeaderMap, StatusCode};
use url::Url;

/// HTTP's own check sources.
pub enum HttpExtractor {
    Status,
    Header(HeaderName),
    /// A capture group of each match in a header's values.
    HeaderRegex {
        name: HeaderName,
        regex: regex::Regex,
        group: usize,
    },
    CurrentLocation,
}

/// An HTTP request's checks.
pub type HttpCheck = CheckProgram<HttpExtractor>;

impl OwnSource for HttpExtractor {
    fn lower(source: &CheckSource, path: &str, cx: &mut LoweringContext) -> Option<(Self, String)> {
        let CheckSource::Http(source) = source else { return None };
        let header_name = |cx: &mut LoweringContext, name: &str| match HeaderName::from_bytes(name.as_bytes()) {
            Ok(header) => Some(header),
            Err(_) => {
                cx.error(format!("{path}.source.name"), format!("{name:?} is not a header name"));
                None
            }
        };
        Some(match source {
            HttpSource::Status => (HttpExtractor::Status, "status".to_string()),
            HttpSource::Header { name } => (HttpExtractor::Header(header_name(cx, name)?), format!("header({name:?})")),
            HttpSource::HeaderRegex { name, pattern, group } => {
                let header = header_name(cx, name)?;
                let (regex, group) = cx.regex_group(path, pattern, *group)?;
                (
                    HttpExtractor::HeaderRegex { name: header, regex, group },
                    format!("header_regex({name:?}, {pattern:?})"),
                )
            }
            HttpSource::CurrentLocation => (HttpExtractor::CurrentLocation, "current_location".to_string()),
        })
    }
}

impl HttpExtractor {
    /// Whether the client must keep every response header for this source.
    pub fn reads_headers(&self) -> bool {
        matches!(self, HttpExtractor::Header(_) | HttpExtractor::HeaderRegex { .. })
    }
}

/// The response as checks see it. The body is parsed as HTML or JSON at most once, and only
/// when a check asks for it.
pub struct ResponseView<'a> {
    pub status: StatusCode,
    pub headers: &'a HeaderMap,
    pub body: BodyView<'a>,
    /// The URL that answered, after redirects.
    url: Option<&'a Url>,
    /// The exchange's response time in whole milliseconds.
    response_time_ms: Option<u64>,
}

impl<'a> ResponseView<'a> {
    pub fn new(status: StatusCode, headers: &'a HeaderMap, body: &'a [u8]) -> Self {
        ResponseView { status, headers, body: BodyView::new(body), url: None, response_time_ms: None }
    }

    /// What an HTTP exchange knows beside the response: the URL that answered and how long
    /// it took.
    pub fn with_exchange(mut self, url: &'a Url, response_time_ms: u64) -> Self {
        self.url = Some(url);
        self.response_time_ms = Some(response_time_ms);
        self
    }

    /// The parsed HTML, parsed now if no check needed it.
    pub fn into_html(self) -> scraper::Html {
        self.body.into_html()
    }
}

impl CheckSubject for ResponseView<'_> {
    type Own = HttpExtractor;

    fn body_values(&mut self, source: &BodyExtractor, limit: usize) -> Result<Vec<Value>, String> {
        self.body.values(source, limit)
    }

    fn response_time_ms(&self) -> Option<u64> {
        self.response_time_ms
    }

    fn own_values(&mut self, source: &HttpExtractor, limit: usize) -> Result<Vec<Value>, String> {
        Ok(match source {
            HttpExtractor::Status => vec![Value::from(self.status.as_u16().to_string())],
            HttpExtractor::Header(name) => self
                .headers
                .get_all(name)
                .iter()
                .take(limit)
                .map(|v| Value::from(String::from_utf8_lossy(v.as_bytes()).into_owned()))
                .collect(),
            HttpExtractor::HeaderRegex { name, regex, group } => self
                .headers
                .get_all(name)
                .iter()
                .flat_map(|value| {
                    let text = String::from_utf8_lossy(value.as_bytes());
                    regex
                        .captures_iter(&text)
                        .filter_map(|c| c.get(*group))
                        .map(|m| Value::from(m.as_str()))
                        .collect::<Vec<_>>()
                })
                .take(limit)
                .collect(),
            HttpExtractor::CurrentLocation => self.url.map(|url| Value::from(url.as_str())).into_iter().collect(),
        })
    }

    fn failure_detail(&self, source: &HttpExtractor) -> Option<u32> {
        matches!(source, HttpExtractor::Status).then(|| self.status.as_u16() as u32)
    }
}

/// Runs the checks in order; the first failure stops them. Values are saved only from
/// checks that pass. Without an explicit status check, the status must be 2xx or 304, as in
/// Gatling.
pub fn run_checks(
    checks: &[HttpCheck],
    response: &mut ResponseView<'_>,
    session: &mut Session,
) -> Result<(), CheckFailure> {
    if !checks.iter().any(|c| matches!(c.extractor, Extractor::Own(HttpExtractor::Status))) {
        let status = response.status.as_u16();
        if !(200..300).contains(&status) && status != 304 {
            return Err(CheckFailure {
                message: format!("status: expected 2xx or 304, found {status}"),
                detail: status as u32,
            });
        }
    }
    run_checks_on(checks, response, session)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
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

    fn lowered_checks(json: &str) -> (Vec<HttpCheck>, usize) {
        let plan = Plan::from_json(&format!(
            r#"{{"version": 1, "scenarios": [{{"name": "s", "injection": [{{"type": "at_once_users", "users": 1}}],
                "steps": [{{"type": "request", "name": "r", "method": "GET", "url": "http://127.0.0.1:1/", "checks": {json}}}]}}]}}"#
        ))
        .unwrap();
        let program = crate::lower::lower(&plan).unwrap();
        let slots = program.variables.len();
        let mut steps = program.scenarios.into_iter().next().unwrap().steps;
        let request = crate::protocol::http::program::into_request(steps.remove(0)).unwrap();
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

    fn checks_json() -> (Vec<HttpCheck>, usize) {
        lowered_checks(
            r#"[{"source": {"type": "jsonpath", "path": "$.items[0].id"}, "save_as": "id"},
                {"source": {"type": "jsonpath", "path": "$.items[0].name"}, "save_as": "name"}]"#,
        )
    }

    #[test]
    fn failures_name_the_check_and_what_it_found() {
        let (checks, slots) =
            lowered_checks(r#"[{"source": {"type": "status"}, "validate": {"type": "in", "values": ["200", "304"]}}]"#);
        let headers = HeaderMap::new();
        let body = Bytes::new();
        let mut vars = session(slots);
        let failure = run_checks(&checks, &mut view(500, &headers, &body), &mut vars).unwrap_err();
        assert_eq!(failure.message, r#"status: expected one of ["200", "304"], found "500""#);
        assert_eq!(failure.detail, 500);

        let (checks, slots) =
            lowered_checks(r#"[{"source": {"type": "regex", "pattern": "value=\"([^\"]*)\""}, "save_as": "v"}]"#);
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

    /// Runs `checks` (JSON) on a response after a `set` step that defines `presets`; the
    /// outcome and the variables by name.
    fn checked(
        checks: &str,
        headers: &HeaderMap,
        body: &str,
        presets: &[(&str, &str)],
    ) -> (Result<(), CheckFailure>, std::collections::HashMap<String, String>) {
        let values: Vec<String> = presets
            .iter()
            .map(|(name, value)| format!(r#"{{"name": "{name}", "value": {}}}"#, serde_json::json!(value)))
            .collect();
        let set = if presets.is_empty() {
            String::new()
        } else {
            format!(r#"{{"type": "set", "values": [{}]}},"#, values.join(","))
        };
        let plan = Plan::from_json(&format!(
            r#"{{"version": 1, "scenarios": [{{"name": "s", "injection": [{{"type": "at_once_users", "users": 1}}],
                "steps": [{set} {{"type": "request", "name": "r", "method": "GET", "url": "http://127.0.0.1:1/", "checks": {checks}}}]}}]}}"#
        ))
        .unwrap();
        let program = crate::lower::lower(&plan).unwrap_or_else(|errors| panic!("{errors:?}"));
        let names = program.variables.clone();
        let steps = program.scenarios.into_iter().next().unwrap().steps;
        let request = steps.into_iter().find_map(crate::protocol::http::program::into_request).unwrap();
        let mut vars = session(names.len());
        for (name, value) in presets {
            vars.variables[names.iter().position(|n| n == name).unwrap()] = Some(Value::from(*value));
        }
        let body = Bytes::from(body.to_string());
        let url = Url::parse("http://127.0.0.1:1/final?x=1").unwrap();
        let mut view = view(200, headers, &body).with_exchange(&url, 42);
        let result = run_checks(&request.checks, &mut view, &mut vars);
        let saved = names
            .into_iter()
            .zip(vars.variables)
            .filter_map(|(name, value)| Some((name, value?.as_text().into_owned())))
            .collect();
        (result, saved)
    }

    fn saved(checks: &str, body: &str) -> std::collections::HashMap<String, String> {
        let (result, saved) = checked(checks, &HeaderMap::new(), body, &[]);
        result.unwrap_or_else(|f| panic!("{}", f.message));
        saved
    }

    fn failure(checks: &str, body: &str, presets: &[(&str, &str)]) -> String {
        checked(checks, &HeaderMap::new(), body, presets).0.expect_err("the check should fail").message
    }

    const LINKS: &str =
        r#"<ul><li><a href="/a">A</a></li><li><a>no link</a></li><li><a href="/b">B</a></li></ul> id=1 id=22 id=333"#;

    #[test]
    fn find_picks_the_nth_find_all_a_list_and_count_how_many() {
        let found = saved(
            r#"[{"source": {"type": "regex", "pattern": "id=(\\d+)"}, "select": {"type": "nth", "index": 1}, "save_as": "second"},
                {"source": {"type": "regex", "pattern": "id=(\\d+)"}, "select": {"type": "all"}, "save_as": "ids"},
                {"source": {"type": "regex", "pattern": "id=(\\d+)"}, "select": {"type": "count"}, "save_as": "n"},
                {"source": {"type": "regex", "pattern": "nope"}, "select": {"type": "count"}, "validate": {"type": "is", "value": "0"}},
                {"source": {"type": "css", "selector": "a", "attribute": "href"}, "select": {"type": "all"}, "save_as": "hrefs"},
                {"source": {"type": "css", "selector": "a"}, "select": {"type": "nth", "index": 2}, "save_as": "third"},
                {"source": {"type": "substring", "value": "id="}, "select": {"type": "count"}, "save_as": "ids_shown"}]"#,
            LINKS,
        );
        assert_eq!(found["second"], "22");
        assert_eq!(found["ids"], r#"["1","22","333"]"#);
        assert_eq!(found["n"], "3");
        assert_eq!(found["hrefs"], r#"["/a","/b"]"#);
        assert_eq!(found["third"], "B");
        assert_eq!(found["ids_shown"], "3");
        // Past the last match is nothing, as is a find_all of no match.
        let message = failure(
            r#"[{"source": {"type": "regex", "pattern": "id=(\\d+)"}, "select": {"type": "nth", "index": 3}}]"#,
            LINKS,
            &[],
        );
        assert_eq!(message, r#"regex("id=(\\d+)").find(3): expected to exist, found nothing"#);
        let message =
            failure(r#"[{"source": {"type": "regex", "pattern": "x(y)z"}, "select": {"type": "all"}}]"#, LINKS, &[]);
        assert!(message.ends_with("find_all: expected to exist, found nothing"), "{message}");
    }

    #[test]
    fn a_repeated_header_has_one_value_per_line() {
        let mut headers = HeaderMap::new();
        headers.append("set-cookie", "a=1".parse().unwrap());
        headers.append("set-cookie", "b=2".parse().unwrap());
        let (result, saved) = checked(
            r#"[{"source": {"type": "header", "name": "Set-Cookie"}, "select": {"type": "all"}, "save_as": "all"},
                {"source": {"type": "header", "name": "Set-Cookie"}, "select": {"type": "count"}, "save_as": "n"},
                {"source": {"type": "header", "name": "Set-Cookie"}, "save_as": "first"}]"#,
            &headers,
            "",
            &[],
        );
        result.unwrap();
        assert_eq!(
            (saved["all"].as_str(), saved["n"].as_str(), saved["first"].as_str()),
            (r#"["a=1","b=2"]"#, "2", "a=1")
        );
    }

    #[test]
    fn json_null_is_no_value_for_jsonpath_jmespath_and_lists() {
        let body = r#"{"items": [{"id": 7, "tag": null}, {"id": null, "tag": "x"}, {"id": 9, "tag": "y"}], "none": null, "n": 3}"#;
        let found = saved(
            r#"[{"source": {"type": "jsonpath", "path": "$.items[*].id"}, "select": {"type": "all"}, "save_as": "ids"},
                {"source": {"type": "jsonpath", "path": "$.items[*].id"}, "select": {"type": "count"}, "save_as": "id_count"},
                {"source": {"type": "jmespath", "expression": "items[*].tag"}, "select": {"type": "all"}, "save_as": "tags"},
                {"source": {"type": "jmespath", "expression": "items[].id"}, "select": {"type": "nth", "index": 1}, "save_as": "second_id"},
                {"source": {"type": "jmespath", "expression": "length(items)"}, "save_as": "length"},
                {"source": {"type": "jmespath", "expression": "items[0]"}, "save_as": "first"},
                {"source": {"type": "jmespath", "expression": "none"}, "validate": {"type": "not_exists"}},
                {"source": {"type": "jsonpath", "path": "$.none"}, "validate": {"type": "not_exists"}}]"#,
            body,
        );
        assert_eq!(found["ids"], "[7,9]");
        assert_eq!(found["id_count"], "2");
        assert_eq!(found["tags"], r#"["x","y"]"#);
        assert_eq!(found["second_id"], "9");
        assert_eq!(found["length"], "3");
        assert_eq!(found["first"], r#"{"id":7,"tag":null}"#);
        let message = failure(r#"[{"source": {"type": "jmespath", "expression": "none"}}]"#, body, &[]);
        assert!(message.ends_with("expected to exist, found nothing"), "{message}");
        // A function applied to the wrong type fails the check with JMESPath's reason.
        let message = failure(r#"[{"source": {"type": "jmespath", "expression": "length(n)"}}]"#, body, &[]);
        assert!(message.starts_with(r#"jmespath("length(n)"): "#), "{message}");
    }

    #[test]
    fn xpath_reads_the_body_as_xml() {
        let body =
            r#"<catalog><book id="b1"><price>12.50</price></book><book id="b2"><price>7</price></book></catalog>"#;
        let found = saved(
            r#"[{"source": {"type": "xpath", "expression": "//book/@id"}, "select": {"type": "all"}, "save_as": "ids"},
                {"source": {"type": "xpath", "expression": "//book[2]/price"}, "validate": {"type": "lt", "value": "10"}},
                {"source": {"type": "xpath", "expression": "sum(//price)"}, "save_as": "total"}]"#,
            body,
        );
        assert_eq!(found["ids"], r#"["b1","b2"]"#);
        assert_eq!(found["total"], "19.5");
        let message = failure(r#"[{"source": {"type": "xpath", "expression": "//book"}}]"#, "<p>not xml", &[]);
        assert!(message.ends_with("expected to exist, found nothing"), "{message}");
    }

    #[test]
    fn optional_passes_on_nothing_and_keeps_the_variable_and_default_stands_in() {
        let (result, saved) = checked(
            r#"[{"source": {"type": "regex", "pattern": "token=(\\w+)"}, "optional": true, "save_as": "me"},
                {"source": {"type": "regex", "pattern": "token=(\\w+)"}, "default": "${me}-guest", "save_as": "who"},
                {"source": {"type": "regex", "pattern": "id=(\\d+)"}, "optional": true, "validate": {"type": "is", "value": "1"}}]"#,
            &HeaderMap::new(),
            LINKS,
            &[("me", "alice")],
        );
        result.unwrap();
        assert_eq!((saved["me"].as_str(), saved["who"].as_str()), ("alice", "alice-guest"));
        // Optional is about finding nothing: what is found must still pass.
        let message = failure(
            r#"[{"source": {"type": "regex", "pattern": "id=(\\d+)"}, "optional": true, "validate": {"type": "is", "value": "2"}}]"#,
            LINKS,
            &[],
        );
        assert!(message.ends_with(r#"expected "2", found "1""#), "{message}");
    }

    #[test]
    fn transforms_apply_in_order_to_each_value() {
        let page = saved(
            r#"[{"source": {"type": "css", "selector": "h1"}, "transform": ["uppercase"], "save_as": "upper"},
                {"source": {"type": "regex", "pattern": "<h1 class=\"title\">([^<]*)<"}, "transform": ["trim", "lowercase"], "save_as": "lower"},
                {"source": {"type": "regex", "pattern": "<h1 class=\"title\">([^<]*)<"}, "transform": ["length"], "save_as": "length"},
                {"source": {"type": "regex", "pattern": "value=\"(\\w+)\""}, "select": {"type": "all"}, "transform": ["uppercase"], "save_as": "values"},
                {"source": {"type": "substring", "value": "Welcome"}, "select": {"type": "count"}, "transform": ["to_int"], "validate": {"type": "gte", "value": "1"}}]"#,
            PAGE,
        );
        assert_eq!(page["upper"], "WELCOME");
        assert_eq!(page["lower"], "welcome");
        assert_eq!(page["length"], "9");
        assert_eq!(page["values"], r#"["ABC123"]"#);
        let json = saved(
            r#"[{"source": {"type": "jsonpath", "path": "$.n"}, "transform": ["to_int"], "save_as": "n"},
                {"source": {"type": "jsonpath", "path": "$.x"}, "transform": ["to_number"], "save_as": "x"},
                {"source": {"type": "jsonpath", "path": "$.list"}, "transform": ["length"], "save_as": "items"}]"#,
            r#"{"n": " 0042", "x": "2.5", "list": [1, 2, 3]}"#,
        );
        assert_eq!((json["n"].as_str(), json["x"].as_str(), json["items"].as_str()), ("42", "2.5", "3"));
        let message = failure(
            r#"[{"source": {"type": "jsonpath", "path": "$.x"}, "transform": ["to_int"]}]"#,
            r#"{"x": "2.5"}"#,
            &[],
        );
        assert_eq!(message, r#"jsonpath("$.x"): expected an integer, found "2.5""#);
    }

    #[test]
    fn expected_values_are_templates_rendered_from_the_session() {
        let body = r#"{"user": "alice", "age": 9, "tags": ["a", "b"]}"#;
        let presets = [("me", "alice"), ("adult", "18"), ("tags", r#"["a","b"]"#)];
        let (result, _) = checked(
            r#"[{"source": {"type": "jsonpath", "path": "$.user"}, "validate": {"type": "is", "value": "${me}"}},
                {"source": {"type": "jsonpath", "path": "$.user"}, "validate": {"type": "not", "value": "${me}x"}},
                {"source": {"type": "jsonpath", "path": "$.user"}, "validate": {"type": "in", "values": ["bob", "${me}"]}},
                {"source": {"type": "jsonpath", "path": "$.age"}, "validate": {"type": "lt", "value": "${adult}"}},
                {"source": {"type": "jsonpath", "path": "$.age"}, "validate": {"type": "lte", "value": "9"}},
                {"source": {"type": "jsonpath", "path": "$.age"}, "validate": {"type": "gt", "value": "8.5"}},
                {"source": {"type": "jsonpath", "path": "$.user"}, "validate": {"type": "gte", "value": "alice"}},
                {"source": {"type": "jsonpath", "path": "$.tags[*]"}, "select": {"type": "all"}, "validate": {"type": "is", "value": "[\"a\", \"b\"]"}},
                {"source": {"type": "jsonpath", "path": "$.tags[*]"}, "select": {"type": "all"}, "validate": {"type": "is", "value": "${tags}"}}]"#,
            &HeaderMap::new(),
            body,
            &presets,
        );
        result.unwrap_or_else(|f| panic!("{}", f.message));
        let message = failure(
            r#"[{"source": {"type": "jsonpath", "path": "$.user"}, "validate": {"type": "is", "value": "${me}"}}]"#,
            body,
            &[("me", "bob")],
        );
        assert_eq!(message, r#"jsonpath("$.user"): expected "bob" (from "${me}"), found "alice""#);
        // 9 < 18 as numbers; as text "9" > "18".
        let message = failure(
            r#"[{"source": {"type": "jsonpath", "path": "$.age"}, "validate": {"type": "gt", "value": "${adult}"}}]"#,
            body,
            &[("adult", "18")],
        );
        assert_eq!(message, r#"jsonpath("$.age"): expected more than "18" (from "${adult}"), found "9""#);
        let message = failure(
            r#"[{"source": {"type": "jsonpath", "path": "$.user"}, "validate": {"type": "lt", "value": "alex"}}]"#,
            body,
            &[],
        );
        assert_eq!(message, r#"jsonpath("$.user"): expected less than "alex", found "alice""#);
    }

    #[test]
    fn body_digests_location_and_response_time() {
        let found = saved(
            r#"[{"source": {"type": "body_string"}, "save_as": "text"},
                {"source": {"type": "body_bytes"}, "save_as": "bytes"},
                {"source": {"type": "body_length"}, "save_as": "length"},
                {"source": {"type": "md5"}, "save_as": "md5"},
                {"source": {"type": "sha1"}, "save_as": "sha1"},
                {"source": {"type": "sha256"}, "save_as": "sha256"},
                {"source": {"type": "current_location"}, "save_as": "url"},
                {"source": {"type": "response_time_in_millis"}, "validate": {"type": "lt", "value": "100"}, "save_as": "ms"}]"#,
            "abc",
        );
        assert_eq!(found["text"], "abc");
        assert_eq!(found["bytes"], "YWJj");
        assert_eq!(found["length"], "3");
        assert_eq!(found["md5"], "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(found["sha1"], "a9993e364706816aba3e25717850c26c9cd0d89d");
        assert_eq!(found["sha256"], "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(found["url"], "http://127.0.0.1:1/final?x=1");
        assert_eq!(found["ms"], "42");
        // A socket's message has no location nor response time.
        let (checks, slots) = lowered_checks(r#"[{"source": {"type": "current_location"}}]"#);
        let (headers, body) = (HeaderMap::new(), Bytes::new());
        assert!(run_checks(&checks, &mut view(200, &headers, &body), &mut session(slots)).is_err());
    }
}
