//! HTTP's part of the Program: its steps as lowered (requests, batches, cookie steps), what a
//! request is made of, and the protocol's settings for the run. Lowering them is `lower.rs`'s.

use super::check::HttpCheck;
use super::cookies::CookieStep;
use super::resolve::Resolver;
use super::tls::TlsSetup;
use crate::session::expression::Template;
use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::Method;
use std::sync::Arc;
use std::time::Duration;
use url::Url;

/// An HTTP step as a user runs it.
pub enum HttpStepProgram {
    Request(Box<RequestProgram>),
    /// Requests sent at once.
    Batch(Vec<RequestProgram>),
    /// A step on the user's cookie jar.
    Cookie(Box<CookieStep>),
}

/// HTTP's settings for the whole run, lowered from the plan's `protocol`.
pub struct HttpProgram {
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
    pub max_redirects: u32,
    pub max_body_bytes: u64,
    pub(crate) tls: TlsSetup,
    /// The run's host names, cached.
    pub(crate) resolver: Resolver,
    /// Whether connections speak HTTP/2.
    pub http2: horde_plan::Http2Mode,
    /// HTTP/1.1 connections a user opens to one host for resources and batches.
    pub max_connections_per_host: usize,
    /// The headers of resources found in pages (`infer_html_resources`): the protocol's.
    pub inferred_resource_headers: Vec<HeaderProgram>,
    /// Some check reads a response header: the client then keeps every header.
    pub reads_response_headers: bool,
}

pub struct RequestProgram {
    /// The statistics row; requests inside groups are named `group / request`.
    pub row: Arc<str>,
    /// Index of `row` in [`crate::lower::Program::rows`]: workers keep their recorders in that order.
    pub row_id: usize,
    pub method: Method,
    pub url: UrlProgram,
    pub query: Vec<(Template, Template)>,
    pub headers: Vec<HeaderProgram>,
    pub body: BodyProgram,
    pub checks: Vec<HttpCheck>,
    /// Some check reads the body, so it must be kept rather than drained.
    pub needs_body: bool,
    /// A Host header is among the request's (or the protocol's): it replaces the URL's.
    pub sets_host: bool,
    /// Fetched concurrently after this page.
    pub resources: Vec<RequestProgram>,
    /// This page's HTML is parsed for more resources (`infer_html_resources`).
    pub infers_resources: bool,
    /// Redirects followed in a row before the chain fails; 0: not followed, the redirect is
    /// the response.
    pub max_redirects: u32,
}

#[derive(Clone)]
pub struct HeaderProgram {
    pub name: HeaderName,
    pub value: Template,
    /// The value, already validated, when the template has no variables.
    pub fixed: Option<HeaderValue>,
}

pub enum UrlProgram {
    /// Known before the run: parsed once.
    Static(Arc<Target>),
    /// Holds templates (or is relative to a templated base): rendered, then parsed, per request.
    Dynamic { template: Template, base: Option<Url> },
}

/// A parsed absolute URL with everything the client needs precomputed.
pub struct Target {
    pub url: Url,
    /// `host:port`: with `tls`, the key of the connection a virtual user keeps.
    pub authority: Arc<str>,
    /// The host alone, without brackets: the name TLS presents and verifies.
    pub host: String,
    /// https.
    pub tls: bool,
    /// The Host header: the authority as the URL spells it (no default port).
    pub host_header: String,
    /// The request target in origin form (`/path?query`).
    pub origin_form: String,
}

impl Target {
    pub fn from_url(url: Url) -> Result<Target, String> {
        let tls = match url.scheme() {
            "http" => false,
            "https" => true,
            _ => return Err(format!("{url}: only http:// and https:// URLs are supported")),
        };
        // An IPv6 literal keeps its brackets here: `[::1]:8080` is an authority.
        let host = url.host_str().ok_or_else(|| format!("{url}: no host"))?;
        let port = url.port_or_known_default().unwrap_or(if tls { 443 } else { 80 });
        let authority: Arc<str> = format!("{host}:{port}").into();
        let host_header = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        };
        let origin_form = match url.query() {
            Some(query) => format!("{}?{}", url.path(), query),
            None => url.path().to_string(),
        };
        let name = host.trim_start_matches('[').trim_end_matches(']').to_string();
        Ok(Target { authority, host: name, tls, host_header, origin_form, url })
    }
}

pub enum BodyProgram {
    None,
    Static {
        bytes: Bytes,
        content_type: Option<HeaderValue>,
    },
    Raw {
        text: Template,
        content_type: Option<HeaderValue>,
    },
    Form(Vec<(Template, Template)>),
    Multipart {
        boundary: String,
        parts: Vec<PartProgram>,
    },
    /// Fresh documents per request; `id` indexes the user's generators. With `bulk`, that many
    /// documents in a `{"docs": [...]}` wrapper.
    Generated {
        id: usize,
        schema: Arc<horde_docgen::Schema>,
        bulk: Option<u32>,
    },
}

pub enum PartProgram {
    Text {
        name: String,
        value: Template,
    },
    /// A file named in the plan: read when the plan was lowered.
    File {
        name: String,
        file_name: Template,
        content_type: String,
        data: Bytes,
    },
    /// A file named by a template: read when a request first sends it (see `part_files`).
    FileNamedBySession {
        name: String,
        path: Template,
        /// What a relative path is resolved against: the plan's `base_dir`.
        base_dir: Option<std::path::PathBuf>,
        /// By default the rendered path's last component.
        file_name: Option<Template>,
        content_type: String,
    },
}

/// The request a lowered step is, in tests that look inside one.
#[cfg(test)]
pub(crate) fn request_of(step: &crate::lower::StepProgram) -> Option<&RequestProgram> {
    match step {
        crate::lower::StepProgram::Protocol(crate::protocol::ProtocolStepProgram::Http(HttpStepProgram::Request(
            request,
        ))) => Some(request),
        _ => None,
    }
}

/// The request a lowered step is, taken out, in tests that run its checks.
#[cfg(test)]
pub(crate) fn into_request(step: crate::lower::StepProgram) -> Option<Box<RequestProgram>> {
    match step {
        crate::lower::StepProgram::Protocol(crate::protocol::ProtocolStepProgram::Http(HttpStepProgram::Request(
            request,
        ))) => Some(request),
        _ => None,
    }
}
