//! HTTP: the plan-wide protocol settings, requests and their bodies, batches and the cookie jar's steps.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::validate::Validator;
use crate::{Check, CheckSource, NameValue, Plan};

/// HTTP's steps: one family of [`crate::Step`].
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum HttpStep {
    Request(Request),
    /// Send `requests` at once and wait for them all (k6's `http.batch`): streams on one
    /// HTTP/2 connection, or up to `max_connections_per_host` HTTP/1.1 connections per host.
    /// Each request keeps its own row and checks.
    Batch {
        requests: Vec<Request>,
    },
    /// Put a cookie in the user's jar (Gatling's `addCookie`).
    AddCookie(AddCookie),
    /// Save the value of a cookie in the user's jar (Gatling's `getCookieValue`); no such
    /// cookie fails the user as a failed check does, counted in the row `get_cookie {name}`.
    GetCookie(GetCookie),
    /// Empty the user's cookie jar (Gatling's `flushCookieJar`).
    FlushCookieJar,
    /// Drop the user's cookies that have no expiry, as a browser does when it closes
    /// (Gatling's `flushSessionCookies`).
    FlushSessionCookies,
}

/// HTTP defaults shared by every request of the plan.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HttpProtocol {
    /// Relative request URLs are resolved against it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Sent with every request unless the request sets the same header.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<NameValue>,
    /// Headers whose values the results never show (summary.json, report.html), wherever they
    /// are set, besides Authorization, Proxy-Authorization and Cookie, which never are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secret_headers: Vec<String>,
    #[serde(default = "default_connect_timeout_ms")]
    pub connect_timeout_ms: u64,
    /// From sending the request to the end of the response body.
    #[serde(default = "default_request_timeout_ms")]
    pub request_timeout_ms: u64,
    /// Follow 301, 302, 303, 307 and 308 as browsers do; each hop is its own statistics row.
    #[serde(default = "default_true")]
    pub follow_redirects: bool,
    #[serde(default = "default_max_redirects")]
    pub max_redirects: u32,
    /// The largest response body a check, a save_as or a redirect may read; a larger one is
    /// a KO `body_too_large`. Bodies no check reads are never kept, whatever their size.
    #[serde(default = "default_max_body_bytes")]
    pub max_body_bytes: u64,
    /// TLS for `https://` URLs.
    #[serde(default, skip_serializing_if = "TlsOptions::is_default")]
    pub tls: TlsOptions,
    /// Host names answered without asking the system's resolver, as curl's
    /// `--resolve host:port:address`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resolve: Vec<HostMapping>,
    /// Which HTTP version connections speak: HTTP/1.1 (`off`), HTTP/2 when the server picks it
    /// by ALPN on https (`negotiate`, as browsers), or HTTP/2 on every connection without asking,
    /// cleartext h2c included (`prior_knowledge`).
    #[serde(default, skip_serializing_if = "Http2Mode::is_off")]
    pub http2: Http2Mode,
    /// The Accept-Encoding header sent with every request that does not set its own; by default
    /// what a browser sends. Empty sends none. Compressed bodies are decoded only when a check
    /// reads them.
    #[serde(default = "default_accept_encoding")]
    pub accept_encoding: String,
    /// Parse each HTML page for its scripts, style sheets, images and icons and fetch them
    /// after the page, concurrently, as its resources (Gatling's `inferHtmlResources`). Pages'
    /// bodies are then read (up to `max_body_bytes`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub infer_html_resources: bool,
    /// The most HTTP/1.1 connections a virtual user opens to one host to fetch resources and
    /// batches concurrently, as browsers (6). HTTP/2 sends them as streams on one connection.
    #[serde(default = "default_max_connections_per_host")]
    pub max_connections_per_host: u32,
}

/// What browsers send, and what horde decodes.
pub const BROWSER_ACCEPT_ENCODING: &str = "gzip, deflate, br, zstd";

fn default_accept_encoding() -> String {
    BROWSER_ACCEPT_ENCODING.to_string()
}

/// Whether and how connections speak HTTP/2.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Http2Mode {
    /// HTTP/1.1 only.
    #[default]
    Off,
    /// https offers `h2` and `http/1.1` by ALPN and speaks what the server picks (a server
    /// without HTTP/2 gets HTTP/1.1, counted in the summary); http:// stays HTTP/1.1.
    Negotiate,
    /// HTTP/2 on every connection: h2c with prior knowledge on http://, ALPN `h2` alone on
    /// https. A server that does not speak it fails the request (`http2_not_supported`).
    PriorKnowledge,
}

impl Http2Mode {
    pub fn is_off(&self) -> bool {
        *self == Http2Mode::Off
    }
}

/// `host` on `port` is at `address` (an IPv4 or IPv6 address).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HostMapping {
    pub host: String,
    pub port: u16,
    pub address: String,
}

/// How https:// connections are made and verified.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TlsOptions {
    /// Verify the server's certificate against the system's trusted roots (and `ca_file`).
    /// Off, any certificate is accepted, and the summary says so.
    #[serde(default = "default_true")]
    pub verify: bool,
    /// A PEM file of certificate authorities to trust besides the system's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// A client certificate for mutual TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_certificate: Option<ClientCertificate>,
    /// The oldest TLS version offered (`1.2` or `1.3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_version: Option<TlsVersion>,
    /// The newest TLS version offered (`1.2` or `1.3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_version: Option<TlsVersion>,
    /// Send the host name in the handshake (SNI), as browsers do.
    #[serde(default = "default_true")]
    pub sni: bool,
    /// Share TLS session resumption among all users. By default each user has its own
    /// sessions, so a new user pays a full handshake, as a new browser does.
    #[serde(default)]
    pub share_sessions: bool,
}

impl Default for TlsOptions {
    fn default() -> Self {
        TlsOptions {
            verify: true,
            ca_file: None,
            client_certificate: None,
            min_version: None,
            max_version: None,
            sni: true,
            share_sessions: false,
        }
    }
}

impl TlsOptions {
    pub fn is_default(&self) -> bool {
        *self == TlsOptions::default()
    }
}

/// A client certificate chain and its private key, PEM files.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClientCertificate {
    pub certificate: String,
    pub key: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TlsVersion {
    #[serde(rename = "1.2")]
    Tls12,
    #[serde(rename = "1.3")]
    Tls13,
}

impl Default for HttpProtocol {
    fn default() -> Self {
        HttpProtocol {
            base_url: None,
            headers: Vec::new(),
            secret_headers: Vec::new(),
            connect_timeout_ms: default_connect_timeout_ms(),
            request_timeout_ms: default_request_timeout_ms(),
            follow_redirects: true,
            max_redirects: default_max_redirects(),
            max_body_bytes: default_max_body_bytes(),
            tls: TlsOptions::default(),
            resolve: Vec::new(),
            http2: Http2Mode::Off,
            accept_encoding: default_accept_encoding(),
            infer_html_resources: false,
            max_connections_per_host: default_max_connections_per_host(),
        }
    }
}

fn default_max_connections_per_host() -> u32 {
    6
}

fn default_connect_timeout_ms() -> u64 {
    10_000
}
fn default_request_timeout_ms() -> u64 {
    60_000
}
fn default_max_redirects() -> u32 {
    20
}
fn default_max_body_bytes() -> u64 {
    16 * 1024 * 1024
}
fn default_true() -> bool {
    true
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The statistics row of this request.
    pub name: String,
    pub method: String,
    /// Absolute, or relative to the protocol's base URL. May hold templates.
    pub url: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<NameValue>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub query: Vec<NameValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Body>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Check>,
    /// Fetched after this page, concurrently, as a browser fetches a page's scripts, styles
    /// and images (Gatling's `resources`). The page's row times the page alone; a group
    /// around it times the page with its resources. Resources have no resources of their own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<Request>,
    /// Whether this request follows redirects; by default as the protocol says
    /// (`follow_redirects`). Not followed (Gatling's per-request `disableFollowRedirect`), a
    /// redirect is the response its checks read: its status (add `status` is 302: a 3xx fails
    /// the implicit 2xx check) and its `Location` (`header_regex` takes a value out of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follow_redirects: Option<bool>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Body {
    /// Sent as it is, after templating.
    Raw { text: String },
    /// Serialized, then templated; Content-Type application/json unless a header says otherwise.
    Json { value: serde_json::Value },
    /// application/x-www-form-urlencoded.
    Form { params: Vec<NameValue> },
    /// multipart/form-data.
    Multipart { parts: Vec<BodyPart> },
    /// A new JSON document for every request, generated from a schema file (a JSON document
    /// as template, or the XML schema format; see docs/plan.md) by Iron Cushion's rules.
    /// Resolved against `base_dir` when relative.
    DocumentFromSchema { path: String },
    /// `{"docs": [...]}` with `count` new documents from the schema: a CouchDB `_bulk_docs`
    /// body.
    BulkDocumentsFromSchema { path: String, count: u32 },
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum BodyPart {
    String {
        name: String,
        value: String,
    },
    /// A file sent as it is, resolved against the plan's `base_dir` when relative. `path` and
    /// `file_name` are templates: a path with `${...}` names each user's own file, read when
    /// a request first sends it (a fixed path is read before the run).
    RawFile {
        name: String,
        path: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        file_name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content_type: Option<String>,
    },
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AddCookie {
    pub name: String,
    /// A template.
    pub value: String,
    /// The cookie is sent to this domain and its subdomains; by default, to the protocol's
    /// `base_url` host alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Sent for URLs under this path; by default `/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Sent only over https (and to loopback addresses, which browsers trust as well).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub secure: bool,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GetCookie {
    pub name: String,
    /// The cookie a request to this domain would carry; by default the protocol's `base_url`
    /// host, or any domain when there is no `base_url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// The session variable that receives the value.
    pub save_as: String,
}

/// What only an HTTP response has: one family of [`crate::CheckSource`].
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum HttpSource {
    /// The status code, as a decimal string.
    Status,
    /// A response header's values (each line of a repeated header is one).
    Header { name: String },
    /// The URL of the request that got this response: after redirects, the last one's.
    CurrentLocation,
    /// The capture group (default 1, or the whole match when the pattern has no group) of each
    /// match in a response header's values (Gatling's `headerRegex`): an authorization code in
    /// a redirect's `Location`.
    HeaderRegex {
        name: String,
        pattern: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group: Option<u32>,
    },
}

// Validation: every problem with its plan path, in the order the plan reads.

/// Methods RFC 9110 and RFC 5789 define; any other token is a method too (PURGE, PROPFIND,
/// REPORT), but one of these in another case is a typo: methods are case-sensitive.
const STANDARD_METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE", "CONNECT"];

/// Browsers open 6; more than this is a connection flood, not a page.
const MAX_CONNECTIONS_PER_HOST: u32 = 64;

/// The plan-wide settings: `protocol.*`.
pub(crate) fn validate_settings(v: &mut Validator, plan: &Plan) {
    if let Some(base) = &plan.protocol.base_url {
        if let Some(problem) = http_url_problem(base) {
            v.error("protocol.base_url", problem);
        }
    }
    for (i, header) in plan.protocol.headers.iter().enumerate() {
        let path = format!("protocol.headers[{i}]");
        validate_header(v, &path, &header.name, &header.value);
    }
    if plan.protocol.request_timeout_ms == 0 {
        v.error("protocol.request_timeout_ms", "must be more than 0");
    }
    if plan.protocol.connect_timeout_ms == 0 {
        v.error("protocol.connect_timeout_ms", "must be more than 0");
    }
    if !(1..=MAX_CONNECTIONS_PER_HOST).contains(&plan.protocol.max_connections_per_host) {
        v.error(
            "protocol.max_connections_per_host",
            format!("must be from 1 to {MAX_CONNECTIONS_PER_HOST} (browsers use 6)"),
        );
    }
    for (i, mapping) in plan.protocol.resolve.iter().enumerate() {
        if mapping.address.parse::<std::net::IpAddr>().is_err() {
            v.error(format!("protocol.resolve[{i}].address"), format!("{:?} is not an IP address", mapping.address));
        }
        if mapping.host.trim().is_empty() {
            v.error(format!("protocol.resolve[{i}].host"), "a mapping needs a host name");
        }
    }
    let tls = &plan.protocol.tls;
    if let (Some(min), Some(max)) = (tls.min_version, tls.max_version) {
        if min > max {
            v.error("protocol.tls", "min_version is newer than max_version: no TLS version is left");
        }
    }
}

pub(crate) fn validate_step(v: &mut Validator, path: &str, step: &HttpStep) {
    let has_base_url = v.plan.protocol.base_url.is_some();
    match step {
        HttpStep::Request(request) => validate_request(v, path, request, has_base_url),
        HttpStep::Batch { requests } => {
            if requests.is_empty() {
                v.error(format!("{path}.requests"), "a batch needs at least one request");
            }
            for (i, request) in requests.iter().enumerate() {
                let path = format!("{path}.requests[{i}]");
                validate_request(v, &path, request, has_base_url);
                if !request.resources.is_empty() {
                    v.error(format!("{path}.resources"), "a request in a batch has no resources");
                }
            }
        }
        HttpStep::AddCookie(step) => {
            cookie_name(v, path, &step.name);
            v.template(&format!("{path}.value"), &step.value);
            if step.value.contains(';') {
                v.error(format!("{path}.value"), "a cookie value cannot hold a semicolon");
            }
            cookie_domain(v, path, step.domain.as_deref(), has_base_url);
            if let Some(cookie_path) = &step.path {
                if !cookie_path.starts_with('/') || cookie_path.contains(';') {
                    v.error(format!("{path}.path"), format!("{cookie_path:?} is not a path (it starts with /)"));
                }
            }
        }
        HttpStep::GetCookie(step) => {
            cookie_name(v, path, &step.name);
            if step.domain.is_some() {
                cookie_domain(v, path, step.domain.as_deref(), has_base_url);
            }
            v.variable_name(&format!("{path}.save_as"), &step.save_as);
        }
        HttpStep::FlushCookieJar | HttpStep::FlushSessionCookies => {}
    }
}

pub(crate) fn validate_header(v: &mut Validator, path: &str, name: &str, value: &str) {
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
        v.error(format!("{path}.name"), format!("{name:?} is not a header name"));
    }
    if value.contains(['\r', '\n']) {
        v.error(format!("{path}.value"), "a header value cannot hold a line break");
    }
    v.template(&format!("{path}.value"), value);
}

fn cookie_name(v: &mut Validator, path: &str, name: &str) {
    // RFC 6265's cookie-name: a token, no separators.
    let separator = |c: char| "()<>@,;:\\\"/[]?={} \t".contains(c) || c.is_control() || !c.is_ascii();
    if name.is_empty() || name.contains(separator) {
        v.error(format!("{path}.name"), format!("{name:?} is not a cookie name"));
    }
}

fn cookie_domain(v: &mut Validator, path: &str, domain: Option<&str>, has_base_url: bool) {
    match domain {
        None if !has_base_url => {
            v.error(format!("{path}.domain"), "needs a domain: the protocol has no base_url to take it from");
        }
        None => {}
        Some(domain) => {
            let bare = domain.strip_prefix('.').unwrap_or(domain);
            let is_name = bare.split('.').all(|label| {
                !label.is_empty() && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            });
            if !is_name && bare.parse::<std::net::IpAddr>().is_err() {
                v.error(format!("{path}.domain"), format!("{domain:?} is not a domain name"));
            }
        }
    }
}

fn validate_request(v: &mut Validator, path: &str, request: &Request, has_base_url: bool) {
    if request.name.trim().is_empty() {
        v.error(format!("{path}.name"), "a request needs a name");
    }
    validate_method(v, &format!("{path}.method"), &request.method);
    let url_path = format!("{path}.url");
    if request.url.is_empty() {
        v.error(&url_path, "a request needs a URL");
    } else if request.url.contains("://") || request.url.starts_with("//") {
        let absolute =
            if request.url.starts_with("//") { format!("http:{}", request.url) } else { request.url.clone() };
        if let Some(problem) = http_url_problem(&absolute) {
            v.error(&url_path, problem);
        }
    } else if !has_base_url && !starts_with_template(&request.url) {
        v.error(&url_path, format!("{:?} is relative but the protocol has no base_url", request.url));
    }
    v.template(&url_path, &request.url);
    for (i, header) in request.headers.iter().enumerate() {
        validate_header(v, &format!("{path}.headers[{i}]"), &header.name, &header.value);
    }
    for (i, param) in request.query.iter().enumerate() {
        v.template(&format!("{path}.query[{i}].name"), &param.name);
        v.template(&format!("{path}.query[{i}].value"), &param.value);
    }
    if let Some(body) = &request.body {
        validate_body(v, &format!("{path}.body"), body);
    }
    for (i, check) in request.checks.iter().enumerate() {
        let path = format!("{path}.checks[{i}]");
        match &check.source {
            CheckSource::Rows(_) => v.error(
                format!("{path}.source"),
                "row_count and column read a SQL or CQL statement's result, not an HTTP response",
            ),
            CheckSource::Http(HttpSource::Header { name } | HttpSource::HeaderRegex { name, .. })
                if name.is_empty() =>
            {
                v.error(format!("{path}.source.name"), "a header check needs a header name");
            }
            CheckSource::Http(HttpSource::HeaderRegex { pattern, .. }) if pattern.is_empty() => {
                v.error(format!("{path}.source.pattern"), "a header_regex check needs a pattern");
            }
            _ => {}
        }
        v.check(&path, check);
    }
    for (i, resource) in request.resources.iter().enumerate() {
        let path = format!("{path}.resources[{i}]");
        validate_request(v, &path, resource, has_base_url);
        if !resource.resources.is_empty() {
            v.error(format!("{path}.resources"), "a resource has no resources of its own");
        }
    }
}

/// Any token is a method (RFC 9110, section 9.1), as Gatling's `httpRequest(method, url)`
/// and k6's `http.request(method, ...)` take it.
fn validate_method(v: &mut Validator, path: &str, method: &str) {
    if !is_token(method) {
        v.error(
            path,
            format!("{method:?} is not an HTTP method: a method is a token (letters, digits and !#$%&'*+-.^_`|~), such as GET or PURGE"),
        );
    } else if method == "CONNECT" {
        v.error(path, "CONNECT opens a tunnel through a proxy, which horde does not do");
    } else if let Some(standard) = STANDARD_METHODS.iter().find(|m| m.eq_ignore_ascii_case(method) && **m != method) {
        v.error(path, format!("{method:?}: methods are case-sensitive, and the standard one is {standard}"));
    }
}

fn validate_body(v: &mut Validator, path: &str, body: &Body) {
    match body {
        Body::Raw { text } => v.template(&format!("{path}.text"), text),
        Body::Json { .. } => {}
        Body::Form { params } => {
            for (i, param) in params.iter().enumerate() {
                v.template(&format!("{path}.params[{i}].name"), &param.name);
                v.template(&format!("{path}.params[{i}].value"), &param.value);
            }
        }
        Body::DocumentFromSchema { path: file } => {
            if file.is_empty() {
                v.error(format!("{path}.path"), "a schema file path is needed");
            }
        }
        Body::BulkDocumentsFromSchema { path: file, count } => {
            if file.is_empty() {
                v.error(format!("{path}.path"), "a schema file path is needed");
            }
            if *count == 0 {
                v.error(format!("{path}.count"), "must be more than 0");
            }
        }
        Body::Multipart { parts } => {
            if parts.is_empty() {
                v.error(format!("{path}.parts"), "a multipart body needs at least one part");
            }
            for (i, part) in parts.iter().enumerate() {
                let path = format!("{path}.parts[{i}]");
                match part {
                    BodyPart::String { name, value } => {
                        part_name(v, &path, name);
                        v.template(&format!("{path}.value"), value);
                    }
                    BodyPart::RawFile { name, path: file, file_name, .. } => {
                        part_name(v, &path, name);
                        if file.is_empty() {
                            v.error(format!("{path}.path"), "a file part needs a path");
                        }
                        // Either may name each user's own (`${file}` from a feeder).
                        v.template(&format!("{path}.path"), file);
                        if let Some(file_name) = file_name {
                            v.template(&format!("{path}.file_name"), file_name);
                        }
                    }
                }
            }
        }
    }
}

fn part_name(v: &mut Validator, path: &str, name: &str) {
    if name.is_empty() || name.contains(['"', '\r', '\n']) {
        v.error(format!("{path}.name"), format!("{name:?} is not a part name"));
    }
}

/// A URL that begins with an expression may be absolute once rendered.
pub(crate) fn starts_with_template(url: &str) -> bool {
    url.starts_with("${") || url.starts_with("#{")
}

/// RFC 9110's token: what a method or a header name is made of.
fn is_token(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

pub(crate) fn is_http_url(url: &str) -> bool {
    http_url_problem(url).is_none()
}

/// What keeps `url` from being an absolute http:// or https:// URL to request, in words that
/// name it, if anything: another scheme, no host (`http:///path`, `HTTP://`), a port that is
/// no port or is 0. The scheme's case does not matter (`HTTP://` is `http://`). What lies in a
/// template is judged once rendered.
///
/// ```
/// assert_eq!(horde_plan::http_url_problem("HTTPS://shop.test:8443/cart"), None);
/// assert!(horde_plan::http_url_problem("http:///path").unwrap().contains("no host"));
/// assert!(horde_plan::http_url_problem("http://127.0.0.1:0/").unwrap().contains("port 0"));
/// ```
pub fn http_url_problem(url: &str) -> Option<String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Some(format!("{url:?} is not an absolute URL (http://HOST[:PORT]/PATH or https://...)"));
    };
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return Some(format!("{url:?}: only http:// and https:// URLs are supported"));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, host_port)| host_port);
    if host_port.contains("${") || host_port.contains("#{") {
        return None;
    }
    let (host, port) = match host_port.strip_prefix('[') {
        Some(bracketed) => match bracketed.split_once(']') {
            Some((host, after)) => (host, after.strip_prefix(':')),
            None => return Some(format!("{url:?}: the IPv6 address has no closing ']'")),
        },
        None => match host_port.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        },
    };
    if host.is_empty() {
        let lower = scheme.to_ascii_lowercase();
        return Some(format!("{url:?} has no host: write {lower}://HOST[:PORT]/PATH (a host between // and the path)"));
    }
    match port {
        None | Some("") => None,
        Some(port) => match port.parse::<u32>() {
            Ok(0) => Some(format!("{url:?}: port 0 is no port a server listens on")),
            Ok(n) if n <= u32::from(u16::MAX) => None,
            _ => Some(format!("{url:?}: {port:?} is not a port (1 to 65535)")),
        },
    }
}
