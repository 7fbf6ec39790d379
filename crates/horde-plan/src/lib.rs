//! The horde Plan: the one versioned JSON document between every front end (the Python DSL, CLI
//! flags, a plan file) and the engine.
//!
//! ```
//! let plan = horde_plan::Plan::from_json(r#"{
//!     "version": 1,
//!     "protocol": {"base_url": "http://127.0.0.1:8080"},
//!     "scenarios": [{
//!         "name": "home",
//!         "steps": [{"type": "request", "name": "home", "method": "GET", "url": "/"}],
//!         "injection": [{"type": "at_once_users", "users": 1}]
//!     }]
//! }"#).unwrap();
//! assert!(plan.validate().is_empty());
//! ```
//!
//! This crate owns the types, their JSON form, and the validation that collects every problem
//! with its path. It knows nothing of how a plan is run; its only IO is reading the files a
//! plan comes from or names, bounded ([`input`]).

mod couchdb;
mod duration;
mod feeder;
pub mod input;
mod schema_check;
mod secrets;
mod segment;
mod sql;
mod template;
mod threshold;
mod validate;

pub use couchdb::{crud_rule_violations, CouchdbBulkInsert, CouchdbCrud, CrudCounts, CrudRule, CrudWeights};
pub use duration::parse_duration;
pub use feeder::{Feeder, FeederSource, FeederStrategy, OnFeederExhausted};
pub use secrets::{redacted_url, REDACTED, SECRET_HEADERS};
pub use segment::{
    ExecutionSegment, ExecutionSegmentOptions, ExecutionSegmentSequence, Fraction, Segmentation,
    MAX_SEGMENT_DENOMINATOR,
};
pub use sql::{
    sql_placeholders, sql_table_name_problem, Placeholder, SqlDatabase, SqlPhase, SqlStatement, SqlStatementKind,
    SqlStrategy, SqlTransaction, SqlTransactionAction, SqlWorkload, MAX_SQL_TEXT_LENGTH,
};
pub use template::{
    escape_template, is_variable_name, parse_condition, parse_template, template_variables, CompareOp, Condition, Expr,
    Function, Method, Segment,
};
pub use threshold::{
    Comparison, LatencySource, LatencyStat, MetricUnit, Phase, ThresholdMetric, ThresholdScope, ThresholdSpec,
};
pub use validate::{http_url_problem, MAX_DURATION_MS};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The version this build reads and writes. A plan with another version is refused.
pub const PLAN_VERSION: u32 = 1;

/// One problem in a plan, with the JSON path where it is (`scenarios[0].steps[3].url`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct PlanError {
    pub path: String,
    pub message: String,
}

impl PlanError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        PlanError { path: path.into(), message: message.into() }
    }
}

/// A whole simulation: scenarios with their injection, protocol defaults and run options.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// Must equal [`PLAN_VERSION`].
    pub version: u32,
    /// Shown in the summary and used to name the results directory.
    #[serde(default = "default_plan_name")]
    pub name: String,
    /// Directory that relative file paths (multipart file parts) are resolved against.
    /// Front ends set it to the directory of the simulation or plan file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_dir: Option<String>,
    #[serde(default)]
    pub protocol: HttpProtocol,
    /// Sources of records (`feed` steps take them): files or inline records, loaded once per
    /// run and shared by every virtual user.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub feeders: Vec<Feeder>,
    /// Databases that `sql` steps run statements on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub databases: Vec<SqlDatabase>,
    pub scenarios: Vec<Scenario>,
    #[serde(default)]
    pub options: RunOptions,
    /// Assertions on the results, judged at the end of the run (and after every interval for
    /// those with a window or `abort`): `p99<500ms`, `"login": p95<=300ms`, `each: errors<1%`,
    /// `p99<2s over 30s abort`. A failed threshold makes the run exit 99. See docs/thresholds.md.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<String>,
}

fn default_plan_name() -> String {
    "simulation".to_string()
}

impl Plan {
    /// Parses a plan: JSON first (a syntax error names its line and column), then the JSON
    /// against the plan's schema, every type error with its path. Semantic problems are found
    /// by [`Plan::validate`], all at once. A UTF-8 byte order mark is skipped.
    pub fn from_json(text: &str) -> Result<Plan, Vec<PlanError>> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let value: serde_json::Value = serde_json::from_str(text).map_err(|err| {
            let message = if err.to_string().starts_with("recursion limit exceeded") {
                format!(
                    "objects and arrays nest more than 128 deep (about 40 steps inside one another), the most \
                     horde reads: line {}, column {}",
                    err.line(),
                    err.column()
                )
            } else {
                format!("not valid JSON: {err}")
            };
            vec![PlanError::new("", message)]
        })?;
        static SCHEMA: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
        let check = schema_check::check_against_schema(&value, SCHEMA.get_or_init(Plan::json_schema));
        let mut errors = check.errors;
        if !errors.is_empty() {
            // Every problem, not the type errors alone: the plan with its wrong values mended
            // is validated too, and what that finds away from them is added (a bad method
            // beside a URL that is no string). At or around a mended value, validation would
            // judge the stand-in, not the plan.
            if let Ok(plan) = serde_json::from_value::<Plan>(check.mended) {
                let nested = |inner: &str, outer: &str| {
                    inner.strip_prefix(outer).is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
                };
                let near_mended = |path: &str| {
                    path.is_empty() || check.mended_paths.iter().any(|m| nested(path, m) || nested(m, path))
                };
                errors.extend(plan.validate().into_iter().filter(|e| !near_mended(&e.path)));
            }
            return Err(errors);
        }
        // The schema is generated from these types, so this rarely fails; when it does, serde
        // names the path.
        serde_path_to_error::deserialize(value).map_err(|err| {
            let path = err.path().to_string();
            let path = if path == "." { String::new() } else { path };
            vec![PlanError::new(path, err.inner().to_string())]
        })
    }

    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("a plan always serializes")
    }

    /// Every semantic problem in the plan, each with its path. Empty means valid.
    pub fn validate(&self) -> Vec<PlanError> {
        validate::validate(self)
    }

    /// The JSON Schema of the plan format, as committed in docs/plan.schema.json.
    pub fn json_schema() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(Plan)).expect("schema serializes")
    }
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

/// Run-wide options.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RunOptions {
    /// Hard stop for the whole run; running iterations are interrupted and counted as such.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration_ms: Option<u64>,
    /// Seeds every random choice (pauses, arrivals) so a run can be repeated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// What a virtual user does after a failed check.
    #[serde(default)]
    pub on_check_failure: OnCheckFailure,
    /// Percentiles shown in the summary.
    #[serde(default = "default_percentiles")]
    pub percentiles: Vec<f64>,
    /// Bounds of the response-time distribution (Gatling's 800 and 1200 ms).
    #[serde(default = "default_response_time_bounds_ms")]
    pub response_time_bounds_ms: [u64; 2],
    /// Stop after exactly this many requests have been sent (`horde http -n`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_requests: Option<u64>,
    /// Caps the request rate of the whole run; latency is then measured from each request's
    /// intended slot, as wrk2 does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub throttle: Vec<ThrottleStep>,
    /// Worker threads; default: the cores this process may run on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<u32>,
    /// How often workers hand their measurements to the collector (and results hit the disk).
    #[serde(default = "default_snapshot_interval_ms")]
    pub snapshot_interval_ms: u64,
    /// An arrival or throttled request that starts later than this after its intended time is
    /// counted as late.
    #[serde(default = "default_late_start_threshold_us")]
    pub late_start_threshold_us: u64,
    /// Once every injection profile has ended, users still running get this long to finish;
    /// then they are interrupted and counted as such. Without it they run to their end (as in
    /// Gatling), bounded only by `max_duration_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graceful_stop_ms: Option<u64>,
    /// Requests that start in the first `warmup_ms` of the run are not measured; rates are
    /// computed over the rest of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_ms: Option<u64>,
    /// This process's share of a run that several processes make together (k6's execution
    /// segments): it runs only its segment's users, arrivals, budget and feeder rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_segment: Option<ExecutionSegmentOptions>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            max_duration_ms: None,
            seed: None,
            on_check_failure: OnCheckFailure::default(),
            percentiles: default_percentiles(),
            response_time_bounds_ms: default_response_time_bounds_ms(),
            max_requests: None,
            throttle: Vec::new(),
            workers: None,
            snapshot_interval_ms: default_snapshot_interval_ms(),
            late_start_threshold_us: default_late_start_threshold_us(),
            graceful_stop_ms: None,
            warmup_ms: None,
            execution_segment: None,
        }
    }
}

fn default_percentiles() -> Vec<f64> {
    vec![50.0, 75.0, 95.0, 99.0]
}
fn default_response_time_bounds_ms() -> [u64; 2] {
    [800, 1200]
}
fn default_snapshot_interval_ms() -> u64 {
    1000
}
fn default_late_start_threshold_us() -> u64 {
    1000
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum OnCheckFailure {
    /// k6's `fail()`: the user abandons the rest of its scenario, loops included; in a closed
    /// model its slot then starts a new user (after a back-off when users keep failing fast).
    StopIteration,
    /// Gatling's behaviour: the request is KO and the user goes on with its next step. Blocks
    /// that leave on a failure say so themselves (`exit_block_on_fail`, `try_max`,
    /// `eventually`), as does `exit_here_if_failed`.
    #[default]
    Continue,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ThrottleStep {
    /// From now on, at most this many requests per second.
    JumpToRps { rps: f64 },
    /// Go linearly from the current rate (0 at the start) to `rps` over the duration.
    ReachRps { rps: f64, duration_ms: u64 },
    /// Keep the current rate this long.
    HoldFor { duration_ms: u64 },
}

/// A name and a value: a header, a query parameter or a form parameter. Values may hold
/// `${variable}` templates.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct NameValue {
    pub name: String,
    pub value: String,
}

impl NameValue {
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        NameValue { name: name.into(), value: value.into() }
    }
}

/// One kind of user journey and how users arrive to run it.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    pub steps: Vec<Step>,
    pub injection: Vec<Injection>,
    /// Gatling's `andThen`: this scenario starts once the named one has finished (its
    /// injection ended and all its users done, on every worker); its profile's times count
    /// from then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

/// One element of a scenario's chain.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    Request(Request),
    /// A fixed pause.
    Pause {
        duration_ms: u64,
    },
    /// A pause drawn uniformly from [min_ms, max_ms].
    PauseUniform {
        min_ms: u64,
        max_ms: u64,
    },
    /// A pause drawn from an exponential distribution (think times of independent users).
    PauseExponential {
        mean_ms: u64,
    },
    /// A pause drawn from a normal distribution of mean `mean_ms` and standard deviation
    /// `std_dev_ms` (Gatling's `normalPausesWithStdDevDuration`); a draw below 0 is a pause of 0,
    /// as in Gatling.
    PauseNormal {
        mean_ms: u64,
        std_dev_ms: u64,
    },
    /// A pause as long as a template says at each pass: a session value (`"${think_time}"`,
    /// `"#{t}"`), an expression (`"${__random_int(1, 5)}"`) or text with them
    /// (`"${t}ms"`). It renders to a number of seconds, or a number with its unit (`ms`, `s`,
    /// `m`, `h`); what renders to anything else fails the user, counted in the row
    /// `pause {duration}`.
    PauseTemplate {
        duration: String,
    },
    /// Wait so that successive passes through this step are at least `duration_ms` apart:
    /// pacing for closed-model loops.
    Pace {
        duration_ms: u64,
    },
    /// Run `steps` this many times; `counter` holds the 0-based iteration number.
    Repeat {
        times: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        counter: Option<String>,
        steps: Vec<Step>,
    },
    /// Run `steps` again and again until `duration_ms` has passed since the loop began;
    /// the condition is checked before each iteration.
    During {
        duration_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        counter: Option<String>,
        steps: Vec<Step>,
    },
    /// Run `steps` with statistics of their own: the group's duration and OK/KO; the requests
    /// inside are named `group / request`.
    Group {
        name: String,
        steps: Vec<Step>,
    },
    /// Send `requests` at once and wait for them all (k6's `http.batch`): streams on one
    /// HTTP/2 connection, or up to `max_connections_per_host` HTTP/1.1 connections per host.
    /// Each request keeps its own row and checks.
    Batch {
        requests: Vec<Request>,
    },
    /// Open a WebSocket (`ws://`, `wss://`) the virtual user holds until `ws_close` or its end
    /// (Gatling's `ws(name).connect(url)`); the row `name` times the opening handshake.
    WsConnect(SocketConnect),
    /// Send a message on a WebSocket: `text` (templated) or `binary_base64`.
    WsSend(WsSend),
    /// Wait for messages on a WebSocket, with checks.
    WsAwait(SocketAwait),
    /// Close a WebSocket (a Close frame, then the server's).
    WsClose(SocketClose),
    /// Open a server-sent event stream (`GET` with `Accept: text/event-stream`, Gatling's
    /// `sse(name).get(url)`); the row `name` times it until the response's headers.
    SseConnect(SocketConnect),
    /// Wait for events on a stream, with checks.
    SseAwait(SocketAwait),
    /// Close an event stream.
    SseClose(SocketClose),
    /// Take the next record of a feeder: its fields become session variables. With `count`
    /// above 1, each variable holds a list of that many records' values (Gatling's
    /// `feed(feeder, n)`).
    Feed {
        feeder: String,
        #[serde(default = "default_one", skip_serializing_if = "is_one")]
        count: u32,
    },
    /// Set session variables, each value a template.
    Set {
        values: Vec<NameValue>,
    },
    /// Remove session variables.
    Unset {
        names: Vec<String>,
    },
    /// Run `steps` when the condition holds, else `else_steps` (Gatling's `doIf`,
    /// `doIfOrElse`, `doIfEquals`).
    DoIf {
        condition: String,
        steps: Vec<Step>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        else_steps: Vec<Step>,
    },
    /// Run the steps of the first case whose `value` equals `value` (both templates), else
    /// `else_steps`.
    DoSwitch {
        value: String,
        cases: Vec<SwitchCase>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        else_steps: Vec<Step>,
    },
    /// Run one case, drawn with its weight (percent; the weights add up to at most 100),
    /// else `else_steps` for the rest of the draws.
    RandomSwitch {
        cases: Vec<WeightedCase>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        else_steps: Vec<Step>,
    },
    /// Run one case, each as likely as the others.
    UniformRandomSwitch {
        cases: Vec<Chain>,
    },
    /// Run the cases in turn: each pass through the step (by any user of the run) takes the
    /// next one.
    RoundRobinSwitch {
        cases: Vec<Chain>,
    },
    /// Run `steps` once for each element of a list (`list` is one `${...}` expression: a
    /// list saved by a check, a JSON array, a feeder's `count`); `element` holds the
    /// element, `counter` its 0-based index.
    Foreach {
        list: String,
        element: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        counter: Option<String>,
        steps: Vec<Step>,
    },
    /// Run `steps` while the condition holds, tested before each pass (Gatling's `asLongAs`).
    /// With `exit_on_fail`, a failed request ends the loop.
    AsLongAs {
        condition: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        counter: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        exit_on_fail: bool,
        steps: Vec<Step>,
    },
    /// Run `steps`, then again while the condition holds, tested after each pass.
    DoWhile {
        condition: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        counter: Option<String>,
        steps: Vec<Step>,
    },
    /// Run `steps` until a pass has no failed request, at most `times` passes (Gatling's
    /// `tryMax`). The block is one outcome in its own row `name`; failures of passes that
    /// were tried again are counted as `retried` in their rows, not as KOs.
    TryMax {
        #[serde(default = "default_try_max_name")]
        name: String,
        times: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        counter: Option<String>,
        steps: Vec<Step>,
    },
    /// Seed 002's RetriableCondition: run `steps` until every request and check in them
    /// passes, pausing `pause_ms` between attempts, at most `times` attempts and within
    /// `timeout_ms` of the first. One outcome in its own row `name`, whose duration is the
    /// time to consistency (the first attempt's start to the end of the first full pass).
    Eventually {
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        times: Option<u32>,
        #[serde(default = "default_eventually_pause_ms")]
        pause_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        counter: Option<String>,
        steps: Vec<Step>,
    },
    /// End the virtual user here when a request of its has failed (Gatling's
    /// `exitHereIfFailed`).
    ExitHereIfFailed,
    /// End the virtual user here, when the condition holds if there is one (`exitHere`,
    /// `exitHereIf`).
    ExitHere {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        condition: Option<String>,
    },
    /// Run `steps`; a failed request leaves the block at once and the chain goes on after it
    /// (Gatling's `exitBlockOnFail`).
    ExitBlockOnFail {
        steps: Vec<Step>,
    },
    /// Call a Python function with the user's session (Gatling's `exec(session => ...)`): it
    /// reads and sets variables. Only a simulation run from Python has its functions; a plan
    /// file naming one is refused. Python runs under its global lock: these calls are counted
    /// and timed in the summary.
    SessionFunction {
        /// Its row: errors the function raises are counted there.
        name: String,
        /// The function's key in the simulation that defined it.
        function: String,
    },
    /// Stop the whole run gracefully (when the condition holds if there is one): no new
    /// users, running ones interrupted, results kept; the summary says why.
    StopLoadGenerator {
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        condition: Option<String>,
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
    /// Iron Cushion's bulk insert step against a CouchDB database.
    CouchdbBulkInsert(CouchdbBulkInsert),
    /// Iron Cushion's CRUD step against a CouchDB database.
    CouchdbCrud(CouchdbCrud),
    /// One phase of seed 000's SQL experiment (`horde sql`): see docs/sql.md.
    SqlWorkload(SqlWorkload),
    /// A SQL statement on one of the plan's `databases`, with checks on its result
    /// (`row_count`, `column`): see docs/sql.md.
    Sql(SqlStatement),
    /// `begin`, `commit` or `rollback` on one of the plan's `databases`.
    SqlTransaction(SqlTransaction),
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

fn default_one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

fn default_try_max_name() -> String {
    "try_max".into()
}

fn default_eventually_pause_ms() -> u64 {
    100
}

/// A chain of steps, as one case of a switch.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Chain {
    pub steps: Vec<Step>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SwitchCase {
    /// Compared, as text, with the switch's value; a template.
    pub value: String,
    pub steps: Vec<Step>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WeightedCase {
    /// Percent of the draws.
    pub weight: f64,
    pub steps: Vec<Step>,
}

fn default_socket() -> String {
    "default".into()
}

/// Opening a WebSocket or an event stream.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SocketConnect {
    /// The row of the opening.
    pub name: String,
    /// Which of the user's sockets (a user may hold several, by name).
    #[serde(default = "default_socket")]
    pub socket: String,
    /// `ws://`, `wss://` (WebSocket) or `http://`, `https://` (event stream); or relative to
    /// the protocol's `base_url` (a WebSocket then swaps http for ws). May hold templates.
    pub url: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<NameValue>,
    /// Messages to wait for once open.
    #[serde(default, rename = "await", skip_serializing_if = "Option::is_none")]
    pub await_messages: Option<AwaitMessages>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WsSend {
    /// Names the step in errors (a socket that is not open).
    pub name: String,
    #[serde(default = "default_socket")]
    pub socket: String,
    /// A text message, templated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A binary message, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary_base64: Option<String>,
    /// Messages to wait for once sent; their latency counts from the end of sending.
    #[serde(default, rename = "await", skip_serializing_if = "Option::is_none")]
    pub await_messages: Option<AwaitMessages>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SocketAwait {
    pub name: String,
    #[serde(default = "default_socket")]
    pub socket: String,
    #[serde(rename = "await")]
    pub await_messages: AwaitMessages,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SocketClose {
    pub name: String,
    #[serde(default = "default_socket")]
    pub socket: String,
}

/// Messages expected, in order, within `timeout_ms` of the wait's start (Gatling's
/// `await(timeout)(checks...)`). Each gets a row: its latency from the wait's start.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AwaitMessages {
    pub timeout_ms: u64,
    pub messages: Vec<ExpectedMessage>,
}

/// One expected message: the first that passes `matching` (others are skipped), then checked by
/// `checks`. Checks read the message's text (a WebSocket message; an event as JSON
/// `{"event", "id", "data"}`): substring, regex, jsonpath, css.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ExpectedMessage {
    /// The row of this message.
    pub name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matching: Vec<Check>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Check>,
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
    /// A file sent as it is, resolved against the plan's `base_dir` when relative.
    RawFile {
        name: String,
        path: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        file_name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content_type: Option<String>,
    },
}

/// Extract something from the response, validate it, and optionally save it, in Gatling's
/// order: the source's values, the one(s) `select` picks, each `transform`ed, `default` when
/// nothing was found, then `validate`, then `save_as`.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Check {
    pub source: CheckSource,
    /// Which of the source's values (Gatling's `find`, `find(n)`, `findAll`, `count`); only
    /// regex, css, jsonpath, jmespath, xpath and header have more than one (substring: `count`).
    #[serde(default, skip_serializing_if = "Select::is_first")]
    pub select: Select,
    /// Applied in order to the value found (to each element of a `find_all` list).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transform: Vec<Transform>,
    /// When nothing is found, this value instead (a template; Gatling's `withDefault`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    #[serde(default)]
    pub validate: Validation,
    /// Finding nothing passes, and saves nothing: the variable keeps what it held
    /// (Gatling's `optional`). A value that is found must still pass `validate`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
    /// Session variable that receives the extracted value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub save_as: Option<String>,
}

impl Check {
    /// A check of `source` with every option at its default: the first value, which must exist.
    pub fn new(source: CheckSource) -> Check {
        Check {
            source,
            select: Select::First,
            transform: Vec::new(),
            default: None,
            validate: Validation::Exists,
            optional: false,
            save_as: None,
        }
    }
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum CheckSource {
    /// The status code, as a decimal string.
    Status,
    /// A response header's values (each line of a repeated header is one).
    Header { name: String },
    /// The substring itself, when the body contains it (`count`: how many times).
    Substring { value: String },
    /// The capture group (default 1, or the whole match when the pattern has no group) of
    /// each match in the body.
    Regex {
        pattern: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group: Option<u32>,
    },
    /// The elements matching the selector: each one's attribute, or its text when no attribute.
    Css {
        selector: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attribute: Option<String>,
    },
    /// The values the JSONPath query (RFC 9535) selects, JSON nulls left out; strings as they
    /// are, others as JSON.
    Jsonpath { path: String },
    /// The result of the JMESPath expression on the JSON body: an array's elements are its
    /// values (nulls left out), any other result is one value, null is none.
    Jmespath { expression: String },
    /// The XPath (3.1) expression on the body parsed as XML: each node's string value, or the
    /// atomic values it computes.
    Xpath { expression: String },
    /// The whole body as text (UTF-8, invalid bytes replaced).
    BodyString,
    /// The whole body's bytes, as base64 (standard alphabet, padded).
    BodyBytes,
    /// The body's length in bytes (after decoding a Content-Encoding), as text.
    BodyLength,
    /// The MD5 digest of the body's bytes, lowercase hex.
    Md5,
    /// The SHA-1 digest of the body's bytes, lowercase hex.
    Sha1,
    /// The SHA-256 digest of the body's bytes, lowercase hex.
    Sha256,
    /// The URL of the request that got this response: after redirects, the last one's.
    CurrentLocation,
    /// The exchange's response time, whole milliseconds, measured as the report's (from the
    /// intended start; for a redirect's target, from its own start).
    ResponseTimeInMillis,
    /// A SQL statement's rows: how many a query returned, or an `execute` changed.
    RowCount,
    /// A SQL query's values in the column of this name (case as the database gives it), one per
    /// row in order; SQL NULL is no value. Numbers, dates and the like as the database
    /// writes them as text.
    Column { name: String },
}

impl CheckSource {
    /// Whether the source can find more than one value, so `select` applies.
    pub fn is_multivalued(&self) -> bool {
        matches!(
            self,
            CheckSource::Header { .. }
                | CheckSource::Regex { .. }
                | CheckSource::Css { .. }
                | CheckSource::Jsonpath { .. }
                | CheckSource::Jmespath { .. }
                | CheckSource::Xpath { .. }
                | CheckSource::Column { .. }
        )
    }

    /// Whether the source reads a SQL statement's result (and nothing else does).
    pub fn is_sql(&self) -> bool {
        matches!(self, CheckSource::RowCount | CheckSource::Column { .. })
    }

    /// Whether the source reads something only a response has (not a socket's message).
    pub fn needs_response(&self) -> bool {
        matches!(
            self,
            CheckSource::Status
                | CheckSource::Header { .. }
                | CheckSource::CurrentLocation
                | CheckSource::ResponseTimeInMillis
        )
    }
}

/// Which of a source's values a check takes.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Select {
    /// The first (Gatling's `find`).
    #[default]
    First,
    /// The `index`-th, counting from 0 (`find(n)`).
    Nth { index: u32 },
    /// All of them, as a list (a JSON array) that `foreach` can walk; none found is nothing
    /// (`findAll`).
    All,
    /// How many there are, as text; always found, "0" included (`count`).
    Count,
}

impl Select {
    pub fn is_first(&self) -> bool {
        *self == Select::First
    }
}

/// A native transformation of an extracted value.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Transform {
    Lowercase,
    Uppercase,
    /// Without leading and trailing white space.
    Trim,
    /// An integer (64 bits, after trimming); anything else fails the check.
    ToInt,
    /// A number (after trimming); anything else fails the check.
    ToNumber,
    /// The number of characters of a text, of elements of a JSON array, of members of a
    /// JSON object.
    Length,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Validation {
    /// Something was extracted.
    #[default]
    Exists,
    /// Nothing was extracted.
    NotExists,
    /// The extracted value equals this one (a template), as text; a `find_all` list equals a
    /// JSON array.
    Is { value: String },
    /// The extracted value differs from this one (a template).
    Not { value: String },
    /// The extracted value is one of these (templates), as text.
    In { values: Vec<String> },
    /// Less than this (a template): as numbers when both read as numbers, else as text.
    Lt { value: String },
    /// Less than or equal.
    Lte { value: String },
    /// Greater than.
    Gt { value: String },
    /// Greater than or equal.
    Gte { value: String },
}

impl Validation {
    /// The expected values' templates, with the field each is in.
    pub fn expected(&self) -> Vec<(String, &str)> {
        match self {
            Validation::Exists | Validation::NotExists => Vec::new(),
            Validation::Is { value }
            | Validation::Not { value }
            | Validation::Lt { value }
            | Validation::Lte { value }
            | Validation::Gt { value }
            | Validation::Gte { value } => vec![("value".to_string(), value.as_str())],
            Validation::In { values } => {
                values.iter().enumerate().map(|(i, v)| (format!("values[{i}]"), v.as_str())).collect()
            }
        }
    }

    /// The validation's name as the DSL spells it.
    pub fn name(&self) -> &'static str {
        match self {
            Validation::Exists => "exists",
            Validation::NotExists => "not_exists",
            Validation::Is { .. } => "is",
            Validation::Not { .. } => "not",
            Validation::In { .. } => "in",
            Validation::Lt { .. } => "lt",
            Validation::Lte { .. } => "lte",
            Validation::Gt { .. } => "gt",
            Validation::Gte { .. } => "gte",
        }
    }
}

/// How users arrive. Open-model steps (arrivals) and closed-model steps (concurrency) cannot be
/// mixed in one scenario; steps run one after the other.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Injection {
    /// Open: wait.
    NothingFor { duration_ms: u64 },
    /// Open: this many users at once.
    AtOnceUsers { users: u64 },
    /// Open: this many users, evenly spread over the duration.
    RampUsers { users: u64, duration_ms: u64 },
    /// Open: users arrive at this rate; `randomized` gives Poisson arrivals.
    ConstantUsersPerSec {
        rate: f64,
        duration_ms: u64,
        #[serde(default)]
        randomized: bool,
    },
    /// Open: the arrival rate goes linearly from `from` to `to` users per second.
    RampUsersPerSec {
        from: f64,
        to: f64,
        duration_ms: u64,
        #[serde(default)]
        randomized: bool,
    },
    /// Open: this many users, arriving along a smooth step (the normal distribution's CDF)
    /// stretched over the duration: a peak of arrivals in the middle.
    StressPeakUsers { users: u64, duration_ms: u64 },
    /// Open: stairs of arrival rates: `times` levels of `level_duration_ms`, the first at
    /// `starting_from` users per second and each `increment` higher, joined by linear ramps of
    /// `ramp_duration_ms`.
    IncrementUsersPerSec {
        increment: f64,
        times: u32,
        level_duration_ms: u64,
        #[serde(default)]
        ramp_duration_ms: u64,
        #[serde(default)]
        starting_from: f64,
    },
    /// Closed: keep this many users running; a user that finishes is replaced by a new one.
    ConstantConcurrentUsers { users: u64, duration_ms: u64 },
    /// Closed: the number of concurrent users goes linearly from `from` to `to`.
    RampConcurrentUsers { from: u64, to: u64, duration_ms: u64 },
    /// Closed: stairs of concurrency: `times` levels, the first at `starting_from` users and
    /// each `increment` higher, joined by ramps of `ramp_duration_ms`.
    IncrementConcurrentUsers {
        increment: u64,
        times: u32,
        level_duration_ms: u64,
        #[serde(default)]
        ramp_duration_ms: u64,
        #[serde(default)]
        starting_from: u64,
    },
}

impl Injection {
    /// Closed-model steps keep a number of users; open-model steps start arrivals.
    pub fn is_closed(&self) -> bool {
        matches!(
            self,
            Injection::ConstantConcurrentUsers { .. }
                | Injection::RampConcurrentUsers { .. }
                | Injection::IncrementConcurrentUsers { .. }
        )
    }

    /// Users this step is sure to run at the same moment: all of an `at_once_users` step, the
    /// highest level of a closed-model step; 0 for arrivals spread in time.
    pub fn users_at_once(&self) -> u64 {
        match *self {
            Injection::AtOnceUsers { users } | Injection::ConstantConcurrentUsers { users, .. } => users,
            Injection::RampConcurrentUsers { from, to, .. } => from.max(to),
            Injection::IncrementConcurrentUsers { increment, times, starting_from, .. } => {
                starting_from.saturating_add(increment.saturating_mul(u64::from(times.saturating_sub(1))))
            }
            _ => 0,
        }
    }

    /// The highest arrival rate of an open-model step, users per second.
    pub fn peak_rate(&self) -> f64 {
        match *self {
            Injection::ConstantUsersPerSec { rate, .. } => rate,
            Injection::RampUsersPerSec { from, to, .. } => from.max(to),
            Injection::IncrementUsersPerSec { increment, times, starting_from, .. } => {
                starting_from + increment * f64::from(times.saturating_sub(1))
            }
            _ => 0.0,
        }
    }

    /// How long the step lasts (an `at_once_users` step takes no time).
    pub fn duration_ms(&self) -> u64 {
        match *self {
            Injection::AtOnceUsers { .. } => 0,
            Injection::NothingFor { duration_ms }
            | Injection::RampUsers { duration_ms, .. }
            | Injection::ConstantUsersPerSec { duration_ms, .. }
            | Injection::RampUsersPerSec { duration_ms, .. }
            | Injection::StressPeakUsers { duration_ms, .. }
            | Injection::ConstantConcurrentUsers { duration_ms, .. }
            | Injection::RampConcurrentUsers { duration_ms, .. } => duration_ms,
            Injection::IncrementUsersPerSec { times, level_duration_ms, ramp_duration_ms, .. }
            | Injection::IncrementConcurrentUsers { times, level_duration_ms, ramp_duration_ms, .. } => {
                u64::from(times)
                    .saturating_mul(level_duration_ms)
                    .saturating_add(u64::from(times.saturating_sub(1)).saturating_mul(ramp_duration_ms))
            }
        }
    }
}

#[cfg(test)]
mod tests;
