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

mod cluster;
mod duration;
mod feeder;
pub mod input;
mod protocol;
mod schema_check;
mod secrets;
mod segment;
mod step;
mod template;
mod threshold;
mod validate;

pub use cluster::{ClusterOptions, WorkerLoss};
pub use duration::parse_duration;
pub use feeder::{Feeder, FeederSource, FeederStrategy, OnFeederExhausted};
pub use protocol::couchdb::CouchdbStep;
pub use protocol::couchdb::{crud_rule_violations, CouchdbBulkInsert, CouchdbCrud, CrudCounts, CrudRule, CrudWeights};
pub use protocol::cql::{
    bind_markers, Consistency, CqlBatch, CqlBatchKind, CqlBatchStatement, CqlCluster, CqlStatement, CqlStep, CqlTls,
    SerialConsistency,
};
pub use protocol::http::http_url_problem;
pub use protocol::http::{
    AddCookie, Body, BodyPart, ClientCertificate, GetCookie, HostMapping, Http2Mode, HttpProtocol, HttpSource,
    HttpStep, Request, TlsOptions, TlsVersion, BROWSER_ACCEPT_ENCODING,
};
pub use protocol::rows::RowsSource;
pub use protocol::socket::{
    AwaitMessages, ExpectedMessage, SocketAwait, SocketClose, SocketConnect, SocketStep, WsSend,
};
pub use protocol::sql::SqlStep;
pub use protocol::sql::{
    sql_placeholders, sql_table_name_problem, Placeholder, SqlDatabase, SqlPhase, SqlStatement, SqlStatementKind,
    SqlStrategy, SqlTransaction, SqlTransactionAction, SqlWorkload, MAX_SQL_TEXT_LENGTH,
};
pub use protocol::ycsb::{
    cql_table_name_problem, YcsbDistribution, YcsbPhase, YcsbProportions, YcsbStep, YcsbWorkload,
};
pub use protocol::{CheckSource, Step};
pub use secrets::{redacted_url, REDACTED, SECRET_HEADERS};
pub use segment::{
    ExecutionSegment, ExecutionSegmentOptions, ExecutionSegmentSequence, Fraction, RowGrants, Segmentation,
    ShareRequestLog, ShareResume, MAX_SEGMENT_DENOMINATOR,
};
pub use step::{Chain, Child, ChildPath, CoreStep, SwitchCase, WeightedCase};
pub use template::{
    escape_template, is_variable_name, parse_condition, parse_template, template_variables, CompareOp, Condition, Expr,
    Function, Method, Segment,
};
pub use threshold::{
    Comparison, LatencySource, LatencyStat, MetricUnit, Phase, ThresholdMetric, ThresholdScope, ThresholdSpec,
};
pub use validate::MAX_DURATION_MS;

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
    /// The Cassandra cluster that `cql` steps run statements on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cql: Option<CqlCluster>,
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
    /// A plan of `scenarios` with every other part at its default (no feeders, databases or
    /// thresholds, the HTTP protocol's and the run's defaults): what a front end that builds a
    /// plan in code starts from, changing what it sets with `Plan { .., ..Plan::new(..) }`. A
    /// new part of the plan gets its default here, once.
    pub fn new(name: impl Into<String>, scenarios: Vec<Scenario>) -> Plan {
        Plan {
            version: PLAN_VERSION,
            name: name.into(),
            base_dir: None,
            protocol: HttpProtocol::default(),
            feeders: Vec::new(),
            databases: Vec::new(),
            cql: None,
            scenarios,
            options: RunOptions::default(),
            thresholds: Vec::new(),
        }
    }

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
    /// What a run split over several machines (`--cluster`) does when one is lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterOptions>,
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
            cluster: None,
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
    pub fn new(source: impl Into<CheckSource>) -> Check {
        Check {
            source: source.into(),
            select: Select::First,
            transform: Vec::new(),
            default: None,
            validate: Validation::Exists,
            optional: false,
            save_as: None,
        }
    }
}

/// What every protocol's checks can read: the body (a message's text) and the response time.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum CoreSource {
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
    /// The exchange's response time, whole milliseconds, measured as the report's (from the
    /// intended start; for a redirect's target, from its own start).
    ResponseTimeInMillis,
}

impl CoreSource {
    /// Whether the source can find more than one value, so `select` applies.
    pub fn is_multivalued(&self) -> bool {
        matches!(
            self,
            CoreSource::Regex { .. }
                | CoreSource::Css { .. }
                | CoreSource::Jsonpath { .. }
                | CoreSource::Jmespath { .. }
                | CoreSource::Xpath { .. }
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
