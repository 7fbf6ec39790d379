//! Lowering HTTP's steps and settings: requests (URL, headers, body, checks), batches and
//! cookie steps become [`HttpStepProgram`]s; the plan's `protocol` becomes [`HttpProgram`].
//! What any protocol needs (templates, rows, files, checks) comes from the core's
//! [`LoweringContext`].

use super::check::HttpCheck;
use super::cookies::{self, CookieStep};
use super::program::{
    BodyProgram, HeaderProgram, HttpProgram, HttpStepProgram, PartProgram, RequestProgram, Target, UrlProgram,
};
use super::resolve::Resolver;
use super::tls::TlsSetup;
use crate::checks::Extractor;
use crate::lower::{LoweringContext, StepAt};
use crate::session::expression::Template;
use bytes::Bytes;
use horde_plan::{Body, BodyPart, HttpStep, Plan, Request};
use http::header::{HeaderName, HeaderValue};
use http::Method;
use std::sync::Arc;
use std::time::Duration;
use url::Url;

/// What lowering HTTP's steps carries from one step to the next.
pub(crate) struct HttpLowering {
    /// What relative URLs resolve against (CouchDB's databases too).
    pub(crate) base_url: Option<Url>,
    /// The protocol's headers (and its Accept-Encoding), checked once.
    default_headers: Vec<HeaderProgram>,
    /// Numbers each multipart body's boundary.
    boundary_counter: u32,
    /// Pages (requests outside batches and resources) are parsed for their resources.
    infer_html_resources: bool,
    /// The protocol's redirect settings, which a request may override (`follow_redirects`).
    follow_redirects: bool,
    max_redirects: u32,
    /// Some check lowered so far reads a response header.
    reads_headers: bool,
}

impl HttpLowering {
    /// The protocol's headers are checked here, once, each under its own path, not per request.
    pub(crate) fn new(plan: &Plan, cx: &mut LoweringContext) -> HttpLowering {
        let protocol = &plan.protocol;
        let mut default_headers = Vec::new();
        for (i, header) in protocol.headers.iter().enumerate() {
            let path = format!("protocol.headers[{i}]");
            if let Some((name, value)) = header_program(cx, &path, &header.name, &header.value) {
                default_headers.push(HeaderProgram { name, value: value.0, fixed: value.1 });
            }
        }
        let accept_encoding = http::header::ACCEPT_ENCODING;
        if !protocol.accept_encoding.is_empty() && !default_headers.iter().any(|h| h.name == accept_encoding) {
            let value = cx.template(&protocol.accept_encoding);
            let fixed = fixed_header_value(cx, "protocol.accept_encoding", &value);
            default_headers.push(HeaderProgram { name: accept_encoding, value, fixed });
        }
        HttpLowering {
            base_url: protocol.base_url.as_deref().and_then(|u| Url::parse(u).ok()),
            default_headers,
            boundary_counter: 0,
            infer_html_resources: protocol.infer_html_resources,
            follow_redirects: protocol.follow_redirects,
            max_redirects: protocol.max_redirects,
            // Inferring resources reads each page's Content-Type.
            reads_headers: protocol.infer_html_resources,
        }
    }

    pub(crate) fn lower_step(&mut self, cx: &mut LoweringContext, at: StepAt, step: &HttpStep) -> HttpStepProgram {
        let path = at.path;
        match step {
            HttpStep::Request(request) => {
                let mut page = self.request(cx, at, request);
                page.resources = request
                    .resources
                    .iter()
                    .enumerate()
                    .map(|(i, resource)| self.request(cx, at.at(&format!("{path}.resources[{i}]")), resource))
                    .collect();
                page.infers_resources = self.infer_html_resources;
                page.needs_body |= page.infers_resources;
                HttpStepProgram::Request(Box::new(page))
            }
            HttpStep::Batch { requests } => HttpStepProgram::Batch(
                requests
                    .iter()
                    .enumerate()
                    .map(|(i, request)| self.request(cx, at.at(&format!("{path}.requests[{i}]")), request))
                    .collect(),
            ),
            HttpStep::AddCookie(_)
            | HttpStep::GetCookie(_)
            | HttpStep::FlushCookieJar
            | HttpStep::FlushSessionCookies => HttpStepProgram::Cookie(Box::new(self.cookie_step(cx, at, step))),
        }
    }

    /// The run's HTTP settings, once every step is lowered (TLS files are read here).
    pub(crate) fn finish(self, plan: &Plan, cx: &mut LoweringContext) -> HttpProgram {
        let protocol = &plan.protocol;
        // ALPN: what HTTP versions https connections offer, most wanted first.
        let alpn: &[&[u8]] = match protocol.http2 {
            horde_plan::Http2Mode::Off => &[b"http/1.1"],
            horde_plan::Http2Mode::Negotiate => &[b"h2", b"http/1.1"],
            horde_plan::Http2Mode::PriorKnowledge => &[b"h2"],
        };
        let tls = TlsSetup::new(&protocol.tls, cx.base_dir.as_deref(), alpn, &mut cx.errors);
        HttpProgram {
            connect_timeout: Duration::from_millis(protocol.connect_timeout_ms),
            request_timeout: Duration::from_millis(protocol.request_timeout_ms),
            max_redirects: if protocol.follow_redirects { protocol.max_redirects } else { 0 },
            max_body_bytes: protocol.max_body_bytes,
            tls,
            http2: protocol.http2,
            max_connections_per_host: protocol.max_connections_per_host as usize,
            inferred_resource_headers: self.default_headers,
            resolver: Resolver::with_mappings(protocol.resolve.iter().filter_map(|m| {
                let address = m.address.parse::<std::net::IpAddr>().ok()?;
                Some((format!("{}:{}", bracketed(&m.host), m.port), std::net::SocketAddr::new(address, m.port)))
            })),
            reads_response_headers: self.reads_headers,
        }
    }

    fn request(&mut self, cx: &mut LoweringContext, at: StepAt, request: &Request) -> RequestProgram {
        let path = at.path;
        // Validation names a bad method; GET stands in, to go on lowering.
        let method = Method::from_bytes(request.method.as_bytes()).unwrap_or(Method::GET);
        let url = self.url(cx, &format!("{path}.url"), &request.url);
        let query = request.query.iter().map(|p| (cx.template(&p.name), cx.template(&p.value))).collect();
        let mut headers = request_headers(cx, path, &request.headers);
        // Protocol defaults apply unless the request sets the same header itself; repeated
        // ones all go, as a request's do (one Host among them is sent: the later).
        let own = headers.len();
        for default in &self.default_headers {
            if !headers[..own].iter().any(|h| h.name == default.name) {
                headers.push(default.clone());
            }
        }
        let body = match &request.body {
            None => BodyProgram::None,
            Some(body) => self.body(cx, &format!("{path}.body"), body),
        };
        let checks: Vec<HttpCheck> = request
            .checks
            .iter()
            .enumerate()
            .filter_map(|(i, check)| cx.check(&format!("{path}.checks[{i}]"), check))
            .collect();
        self.reads_headers |=
            checks.iter().any(|c| matches!(&c.extractor, Extractor::Own(source) if source.reads_headers()));
        let needs_body = checks.iter().any(|c| c.extractor.reads_body());
        let row = at.row_name(&request.name);
        let row_id = cx.row(row.clone());
        // Method's standard names are static; an extension method is named by the plan only.
        cx.set_row_method(row_id, standard_method_name(&method));
        let sets_host = headers.iter().any(|h| h.name == http::header::HOST);
        RequestProgram {
            row,
            row_id,
            method,
            url,
            query,
            headers,
            body,
            checks,
            needs_body,
            sets_host,
            resources: Vec::new(),
            infers_resources: false,
            max_redirects: if request.follow_redirects.unwrap_or(self.follow_redirects) {
                self.max_redirects
            } else {
                0
            },
        }
    }

    fn cookie_step(&mut self, cx: &mut LoweringContext, at: StepAt, step: &HttpStep) -> CookieStep {
        let path = at.path;
        let base_host = self.base_url.as_ref().and_then(|u| u.host_str().map(str::to_string));
        match step {
            HttpStep::AddCookie(add) => {
                let row_id = cx.row(at.row_name(&format!("add_cookie {}", add.name)));
                let cookie_path = add.path.clone().unwrap_or_else(|| "/".to_string());
                // Validation named a missing domain; a stand-in goes on lowering.
                let host = add.domain.clone().or(base_host).unwrap_or_else(|| "invalid.invalid".to_string());
                let origin = cookies::origin(&host, &cookie_path, add.secure).unwrap_or_else(|message| {
                    cx.error(format!("{path}.domain"), message);
                    Url::parse("http://invalid.invalid/").expect("a valid URL")
                });
                CookieStep::Add(cookies::AddCookie {
                    name: add.name.clone(),
                    value: cx.template(&add.value),
                    domain: add.domain.clone(),
                    path: cookie_path,
                    secure: add.secure,
                    origin,
                    row_id,
                })
            }
            HttpStep::GetCookie(get) => {
                let row_id = cx.row(at.row_name(&format!("get_cookie {}", get.name)));
                let domain = get.domain.clone().or(base_host).and_then(|host| {
                    cookies::origin(&host, "/", false)
                        .map_err(|message| cx.error(format!("{path}.domain"), message))
                        .ok()
                });
                CookieStep::Get(cookies::GetCookie {
                    name: get.name.clone(),
                    domain,
                    slot: cx.slot(&get.save_as),
                    row_id,
                })
            }
            HttpStep::FlushCookieJar => CookieStep::FlushJar,
            _ => CookieStep::FlushSession,
        }
    }

    fn url(&self, cx: &mut LoweringContext, path: &str, text: &str) -> UrlProgram {
        let template = cx.template(text);
        let Some(literal) = template.as_static() else {
            return UrlProgram::Dynamic { template, base: self.base_url.clone() };
        };
        match self.target(literal) {
            Ok(target) => UrlProgram::Static(Arc::new(target)),
            Err(message) => {
                cx.error(path, message);
                UrlProgram::Dynamic { template, base: None }
            }
        }
    }

    /// A URL known before the run, resolved against the base URL and parsed once.
    pub(crate) fn target(&self, text: &str) -> Result<Target, String> {
        let parsed = match &self.base_url {
            Some(base) => base.join(text),
            None => Url::parse(text),
        };
        parsed.map_err(|e| format!("{text:?}: {e}")).and_then(Target::from_url)
    }

    fn body(&mut self, cx: &mut LoweringContext, path: &str, body: &Body) -> BodyProgram {
        match body {
            Body::Raw { text } => {
                let text = cx.template(text);
                text_body(text, None)
            }
            Body::Json { value } => {
                let text = serde_json::to_string(value).expect("JSON values serialize");
                let text = cx.template(&text);
                text_body(text, Some(HeaderValue::from_static("application/json")))
            }
            Body::DocumentFromSchema { path: file } => generated(cx, &format!("{path}.path"), file, None),
            Body::BulkDocumentsFromSchema { path: file, count } => {
                generated(cx, &format!("{path}.path"), file, Some(*count))
            }
            Body::Form { params } => {
                BodyProgram::Form(params.iter().map(|p| (cx.template(&p.name), cx.template(&p.value))).collect())
            }
            Body::Multipart { parts } => {
                self.boundary_counter += 1;
                // Fixed per request so runs are reproducible; long and odd enough never to
                // appear in a part by chance.
                let boundary = format!("horde-boundary-{:08x}-7d3c91a4e5b2", self.boundary_counter);
                let parts = parts
                    .iter()
                    .enumerate()
                    .filter_map(|(i, part)| self::part(cx, &format!("{path}.parts[{i}]"), part))
                    .collect();
                BodyProgram::Multipart { boundary, parts }
            }
        }
    }
}

/// Generated documents from a schema file; `path` is the plan path of the field naming it.
fn generated(cx: &mut LoweringContext, path: &str, file: &str, bulk: Option<u32>) -> BodyProgram {
    match cx.schema(path, file) {
        Some((id, schema)) => BodyProgram::Generated { id, schema, bulk },
        None => BodyProgram::None,
    }
}

fn part(cx: &mut LoweringContext, path: &str, part: &BodyPart) -> Option<PartProgram> {
    match part {
        BodyPart::String { name, value } => Some(PartProgram::Text { name: name.clone(), value: cx.template(value) }),
        BodyPart::RawFile { name, path: file, file_name, content_type } => {
            let content_type = content_type.clone().unwrap_or_else(|| "application/octet-stream".into());
            let file_name = file_name.as_deref().map(|text| cx.template(text));
            let named_by = cx.template(file);
            if named_by.as_static().is_none() {
                // Each user's own file: read at run time, once per worker.
                return Some(PartProgram::FileNamedBySession {
                    name: name.clone(),
                    path: named_by,
                    base_dir: cx.base_dir.clone(),
                    file_name,
                    content_type,
                });
            }
            let resolved = cx.resolve_file(file);
            match horde_plan::input::read_bounded(&resolved, horde_plan::input::MAX_INPUT_FILE_BYTES) {
                Ok(data) => Some(PartProgram::File {
                    name: name.clone(),
                    file_name: file_name.unwrap_or_else(|| {
                        Template::literal(&resolved.file_name().map(|f| f.to_string_lossy()).unwrap_or_default())
                    }),
                    content_type,
                    data: Bytes::from(data),
                }),
                Err(err) => {
                    cx.error(format!("{path}.path"), format!("cannot read file {}: {err}", resolved.display()));
                    None
                }
            }
        }
    }
}

/// A request's (or a socket opening's) own headers, each checked under its path.
pub(crate) fn request_headers(
    cx: &mut LoweringContext,
    path: &str,
    headers: &[horde_plan::NameValue],
) -> Vec<HeaderProgram> {
    let mut programs = Vec::with_capacity(headers.len());
    for (i, header) in headers.iter().enumerate() {
        let path = format!("{path}.headers[{i}]");
        if let Some((name, (value, fixed))) = header_program(cx, &path, &header.name, &header.value) {
            programs.push(HeaderProgram { name, value, fixed });
        }
    }
    programs
}

/// A header's name, checked, and its value as a template (and as a checked value when it has
/// no variables).
fn header_program(
    cx: &mut LoweringContext,
    path: &str,
    name: &str,
    value: &str,
) -> Option<(HeaderName, (Template, Option<HeaderValue>))> {
    match HeaderName::from_bytes(name.as_bytes()) {
        Ok(header) => {
            let value = cx.template(value);
            let fixed = fixed_header_value(cx, &format!("{path}.value"), &value);
            Some((header, (value, fixed)))
        }
        Err(_) => {
            cx.error(format!("{path}.name"), format!("{name:?} is not a header name"));
            None
        }
    }
}

/// The header value, checked, when it has no variables; a bad one is an error at `path`.
fn fixed_header_value(cx: &mut LoweringContext, path: &str, value: &Template) -> Option<HeaderValue> {
    let text = value.as_static()?;
    match HeaderValue::from_str(text) {
        Ok(value) => Some(value),
        Err(_) => {
            cx.error(path, format!("{text:?} is not a valid header value"));
            None
        }
    }
}

fn text_body(text: Template, content_type: Option<HeaderValue>) -> BodyProgram {
    match text.as_static() {
        Some(literal) => BodyProgram::Static { bytes: Bytes::from(literal.to_string()), content_type },
        None => BodyProgram::Raw { text, content_type },
    }
}

/// A host as an authority spells it: an IPv6 address in brackets.
fn bracketed(host: &str) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

/// A method's name as a static string: the standard ones by name, any other as `OTHER`.
fn standard_method_name(method: &Method) -> &'static str {
    const STANDARD: [Method; 9] = [
        Method::GET,
        Method::POST,
        Method::PUT,
        Method::DELETE,
        Method::HEAD,
        Method::OPTIONS,
        Method::PATCH,
        Method::TRACE,
        Method::CONNECT,
    ];
    const NAMES: [&str; 9] = ["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "TRACE", "CONNECT"];
    STANDARD.iter().position(|m| m == method).map_or("OTHER", |i| NAMES[i])
}
