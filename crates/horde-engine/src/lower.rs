//! Lowering: the Plan (stable, readable) becomes the Program (fast to run). Everything that can
//! be decided once is decided here: templates are parsed, variable names become slots,
//! regexes, selectors and JSONPath queries are compiled, static URLs and bodies are built, and
//! files are read. Whatever fails is reported with its plan path.

use bytes::Bytes;
use horde_plan::{
    parse_condition, parse_template, Body, BodyPart, CheckSource, CompareOp, Injection, Plan, PlanError, Request,
    Select, Step, Transform, Validation,
};
use horde_plan::{CoreSource, CoreStep, CouchdbStep, HttpSource, HttpStep, SocketStep, SqlSource, SqlStep};
use http::header::{HeaderName, HeaderValue};
use http::Method;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use url::Url;

use crate::protocol::http::cookies::{self, CookieStep};
use crate::protocol::http::resolve::Resolver;
use crate::protocol::http::tls::TlsSetup;
use crate::protocol::sql::{Database, PhaseShared, SqlWorkloadProgram};
use crate::segment::{RunCounter, Share};
pub use crate::session::expression::Template;
use crate::session::expression::{CompiledCondition, Names};
use crate::session::feeder::FeederRuntime;
use crate::session::functions::{FunctionCost, SessionFunctions};

/// A host as an authority spells it: an IPv6 address in brackets.
fn bracketed(host: &str) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

/// A plan ready to run.
pub struct Program {
    pub plan: Plan,
    pub scenarios: Vec<ScenarioProgram>,
    /// Slot index -> variable name.
    pub variables: Vec<String>,
    /// Row index -> statistics row name, for every request in the plan.
    pub rows: Vec<Arc<str>>,
    /// Row index -> the HTTP method of the requests on that row, for rows of HTTP requests
    /// (Locust's `Type` column).
    pub row_methods: Vec<Option<&'static str>>,
    pub groups: Vec<Arc<str>>,
    pub protocol: ProtocolProgram,
    /// Some check reads a response header: the client then keeps every header.
    pub reads_response_headers: bool,
    /// Pace steps in the plan; each user remembers when it last passed each one.
    pub paces: usize,
    /// Schemas of generated bodies, by id: each user gets a generator for each.
    pub schemas: Vec<Arc<horde_docgen::Schema>>,
    /// Names of the sockets (WebSockets, event streams) steps use; each user has a slot for each.
    pub sockets: Vec<String>,
    /// The plan's feeders, loaded, in the plan's order.
    pub feeders: Vec<Arc<FeederRuntime>>,
    /// Variable name -> slot: what a session function's changes are applied by.
    pub variable_slots: HashMap<String, usize>,
    /// The keys of the session functions the plan calls; empty when it calls none.
    pub session_function_keys: Vec<String>,
    /// What runs them: given by the front end that defined them ([`Program::attach_functions`]).
    pub session_functions: Option<Arc<dyn SessionFunctions>>,
    /// Their calls and time, across every worker.
    pub function_cost: Arc<FunctionCost>,
    /// The plan's thresholds, parsed, their named scopes checked against `rows` and `groups`.
    pub thresholds: Vec<horde_plan::ThresholdSpec>,
    /// The plan's SQL phases (`sql_workload` steps): the collector reads their progress.
    pub sql_phases: Vec<crate::protocol::sql::PhaseProgress>,
    /// The plan's databases, which `sql` steps run on, in the plan's order.
    pub databases: Vec<crate::protocol::sql::ScenarioDatabase>,
    /// What this process runs of the plan: all of it, or its execution segment's share.
    pub share: Share,
}

impl Program {
    /// Gives the program the functions its `session_function` steps call.
    pub fn attach_functions(&mut self, functions: Arc<dyn SessionFunctions>) {
        self.session_functions = Some(functions);
    }
}

/// What both CouchDB steps need.
pub struct CouchdbTarget {
    /// The step's name: its report and the prefix of its rows.
    pub name: Arc<str>,
    /// The database; documents are `{database}/{id}`.
    pub database: Arc<Target>,
    /// Index into the user's generators (shared with generated bodies).
    pub schema_id: usize,
    pub schema: Arc<horde_docgen::Schema>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketKind {
    WebSocket,
    EventStream,
}

impl SocketKind {
    pub fn describe(self) -> &'static str {
        match self {
            SocketKind::WebSocket => "WebSocket",
            SocketKind::EventStream => "event stream",
        }
    }
}

/// A step on a socket a virtual user holds, by name.
pub struct SocketStepProgram {
    pub kind: SocketKind,
    /// Index of the socket's name in [`Program::sockets`]: the user's slot for it.
    pub socket: usize,
    /// The step's row: the opening's timing, and errors of the step itself.
    pub row_id: usize,
    pub action: SocketAction,
    pub await_messages: Option<AwaitProgram>,
}

pub enum SocketAction {
    Connect {
        url: Template,
        base: Option<Url>,
        headers: Vec<HeaderProgram>,
    },
    SendText(Template),
    SendBinary(Bytes),
    /// Wait only.
    Await,
    Close,
}

pub struct AwaitProgram {
    pub timeout: Duration,
    pub messages: Vec<MessageProgram>,
}

pub struct MessageProgram {
    pub row_id: usize,
    pub matching: Vec<CheckProgram>,
    pub checks: Vec<CheckProgram>,
}

pub struct BulkInsertProgram {
    pub target: CouchdbTarget,
    /// `{database}/_bulk_docs`.
    pub bulk_docs: Arc<Target>,
    pub row_id: usize,
    pub documents_per_insert: u32,
    pub inserts: u32,
}

pub struct CrudProgram {
    pub target: CouchdbTarget,
    /// Rows of create, read, update and delete, in that order.
    pub rows: [usize; 4],
    pub counts: horde_plan::CrudCounts,
    pub bulk_documents_per_user: u64,
}

pub struct ProtocolProgram {
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
}

pub struct ScenarioProgram {
    pub name: Arc<str>,
    pub steps: Vec<StepProgram>,
    pub injection: Vec<Injection>,
    /// The scenario that must finish before this one starts.
    pub after: Option<usize>,
}

pub enum StepProgram {
    Request(Box<RequestProgram>),
    Pause(PauseKind),
    /// `id` indexes the user's record of when it last passed this step.
    Pace {
        id: usize,
        duration: Duration,
    },
    Repeat {
        times: u64,
        counter: Option<usize>,
        body: Vec<StepProgram>,
    },
    During {
        duration: Duration,
        counter: Option<usize>,
        body: Vec<StepProgram>,
    },
    Group {
        group: usize,
        body: Vec<StepProgram>,
    },
    /// Requests sent at once.
    Batch(Vec<RequestProgram>),
    /// Take a feeder's next record(s): `slots[i]` receives column `i`.
    Feed {
        feeder: Arc<FeederRuntime>,
        slots: Vec<usize>,
        count: u32,
    },
    /// `row_id`: where a value that cannot be computed is counted.
    Set {
        values: Vec<(usize, Template)>,
        row_id: usize,
    },
    Unset(Vec<usize>),
    /// `do_if`, `do_if_or_else`, `do_switch`, the random and round-robin switches: a choice of
    /// one branch.
    Choose(Box<ChoiceProgram>),
    Loop(Box<LoopProgram>),
    /// `try_max` and `eventually`.
    Retry(Box<RetryProgram>),
    /// End the user: always, when `condition` holds, or (`if_failed`) when a request of its failed.
    Exit {
        condition: Option<Box<ConditionProgram>>,
        if_failed: bool,
    },
    /// A failed request leaves `body` at once; the chain goes on after it.
    ExitBlockOnFail(Vec<StepProgram>),
    StopLoadGenerator {
        message: Arc<str>,
        condition: Option<Box<ConditionProgram>>,
    },
    /// A front end's function with the session; `row_id` counts what it raises.
    SessionFunction {
        key: Arc<str>,
        row_id: usize,
    },
    /// A step on one of the user's WebSockets or event streams.
    Socket(Box<SocketStepProgram>),
    /// A step on the user's cookie jar.
    Cookie(Box<CookieStep>),
    CouchdbBulkInsert(Box<BulkInsertProgram>),
    CouchdbCrud(Box<CrudProgram>),
    SqlWorkload(Box<crate::protocol::sql::SqlWorkloadProgram>),
    SqlStatement(Box<crate::protocol::sql::SqlStatementProgram>),
    SqlTransaction(Box<crate::protocol::sql::SqlTransactionProgram>),
}

/// A condition, with the row its evaluation errors are counted under (a condition is no
/// request: an undefined variable in it is an error in that row, not a KO request).
pub struct ConditionProgram {
    pub condition: CompiledCondition,
    pub row_id: usize,
}

pub enum ChoiceProgram {
    If {
        condition: ConditionProgram,
        then: Vec<StepProgram>,
        otherwise: Vec<StepProgram>,
    },
    Switch {
        value: Template,
        row_id: usize,
        cases: Vec<(Template, Vec<StepProgram>)>,
        otherwise: Vec<StepProgram>,
    },
    /// `bounds[i]` is the upper end of case i's share of [0, 100); above the last, `otherwise`.
    Random {
        bounds: Vec<f64>,
        cases: Vec<Vec<StepProgram>>,
        otherwise: Vec<StepProgram>,
    },
    Uniform(Vec<Vec<StepProgram>>),
    /// Each pass, by any user of the run, takes the next case.
    RoundRobin {
        next: Arc<RunCounter>,
        cases: Vec<Vec<StepProgram>>,
    },
}

pub enum LoopProgram {
    Foreach {
        list: Template,
        row_id: usize,
        element: usize,
        counter: Option<usize>,
        body: Vec<StepProgram>,
    },
    /// `as_long_as` tests before each pass, `do_while` after.
    While {
        condition: ConditionProgram,
        test_first: bool,
        exit_on_fail: bool,
        counter: Option<usize>,
        body: Vec<StepProgram>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryKind {
    TryMax,
    Eventually,
}

pub struct RetryProgram {
    pub kind: RetryKind,
    /// The block's own row, a group: one outcome per pass through the block.
    pub group: usize,
    /// Where the block's failure (its last attempt's, with the count) is counted.
    pub row_id: usize,
    pub times: Option<u32>,
    pub pause: Duration,
    pub timeout: Option<Duration>,
    pub counter: Option<usize>,
    pub body: Vec<StepProgram>,
}

pub use crate::pause::{PauseKind, TemplatePause};

pub struct RequestProgram {
    /// The statistics row; requests inside groups are named `group / request`.
    pub row: Arc<str>,
    /// Index of `row` in [`Program::rows`]: workers keep their recorders in that order.
    pub row_id: usize,
    pub method: Method,
    pub url: UrlProgram,
    pub query: Vec<(Template, Template)>,
    pub headers: Vec<HeaderProgram>,
    pub body: BodyProgram,
    pub checks: Vec<CheckProgram>,
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
    Text { name: String, value: Template },
    File { name: String, file_name: String, content_type: String, data: Bytes },
}

pub struct CheckProgram {
    pub extractor: Extractor,
    pub select: Select,
    pub transforms: Vec<Transform>,
    /// When nothing is found (`with_default`).
    pub default: Option<Expected>,
    pub validation: ValidationProgram,
    pub optional: bool,
    pub save_as: Option<usize>,
    /// How the check reads in an error message: `regex("value=\"([^\"]*)\"")`.
    pub description: String,
}

/// A check's validation, its expected values compiled: they are templates, rendered from the
/// session when the check runs.
pub enum ValidationProgram {
    Exists,
    NotExists,
    Is(Expected),
    Not(Expected),
    In(Vec<Expected>),
    /// `lt`, `lte`, `gt`, `gte`.
    Compare(CompareOp, Expected),
}

/// An expected value (or a default): its template, and its text in the plan for messages.
pub struct Expected {
    pub template: Template,
    pub source: String,
}

pub enum Extractor {
    Status,
    Header(HeaderName),
    /// A capture group of each match in a header's values.
    HeaderRegex {
        name: HeaderName,
        regex: regex::Regex,
        group: usize,
    },
    Substring(String),
    Regex {
        regex: regex::Regex,
        group: usize,
    },
    Css {
        selector: scraper::Selector,
        attribute: Option<String>,
    },
    JsonPath(serde_json_path::JsonPath),
    JmesPath(jmespath::Expression<'static>),
    XPath(crate::protocol::http::xpath::XPath),
    BodyString,
    BodyBytes,
    BodyLength,
    Md5,
    Sha1,
    Sha256,
    CurrentLocation,
    ResponseTimeInMillis,
    /// A SQL statement's rows returned or changed.
    RowCount,
    /// A SQL query's values in the column of this name.
    Column(String),
}

impl Extractor {
    pub fn reads_body(&self) -> bool {
        !matches!(
            self,
            Extractor::Status
                | Extractor::Header(_)
                | Extractor::HeaderRegex { .. }
                | Extractor::CurrentLocation
                | Extractor::ResponseTimeInMillis
        )
    }
}

/// Validates the plan and lowers it. Every problem found, in either pass, is returned at
/// once: a bad regex or a missing file is named along with a bad duration, not after it is
/// fixed. Lowering therefore copes with an invalid plan, and what it finds again at a place
/// validation already named is left out.
pub fn lower(plan: &Plan) -> Result<Program, Vec<PlanError>> {
    let mut errors = plan.validate();
    let mut lowering = Lowering {
        variables: HashMap::new(),
        variable_names: Vec::new(),
        rows: Vec::new(),
        row_methods: Vec::new(),
        groups: Vec::new(),
        errors: Vec::new(),
        base_url: plan.protocol.base_url.as_deref().and_then(|u| Url::parse(u).ok()),
        base_dir: plan.base_dir.as_ref().map(PathBuf::from),
        default_headers: Vec::new(),
        boundary_counter: 0,
        paces: 0,
        schemas: Vec::new(),
        infer_html_resources: plan.protocol.infer_html_resources,
        follow_redirects: plan.protocol.follow_redirects,
        max_redirects: plan.protocol.max_redirects,
        sockets: Vec::new(),
        defined: HashSet::new(),
        first_reads: HashMap::new(),
        current_path: String::new(),
        counters: HashMap::new(),
        share: Share::of(plan),
        feeders: Vec::new(),
        feeder_sources: Vec::new(),
        session_function_keys: Vec::new(),
        sql_databases: HashMap::new(),
        sql_phases: Vec::new(),
        database_names: plan.databases.iter().map(|d| d.name.clone()).collect(),
        database_kinds: Vec::new(),
    };
    let databases = lowering.databases(plan);
    lowering.database_kinds = databases.iter().map(|d| d.database.kind()).collect();
    lowering.load_feeders(plan);
    for scenario in &plan.scenarios {
        lowering.collect_defined(&scenario.steps);
    }
    // The protocol's headers are checked once here, each under its own path, not per request.
    for (i, header) in plan.protocol.headers.iter().enumerate() {
        let path = format!("protocol.headers[{i}]");
        if let Some((name, value)) = lowering.header(&path, &header.name, &header.value) {
            let fixed = lowering.fixed_header_value(&format!("{path}.value"), &value);
            lowering.default_headers.push(HeaderProgram { name, value, fixed });
        }
    }
    let accept_encoding = http::header::ACCEPT_ENCODING;
    if !plan.protocol.accept_encoding.is_empty() && !lowering.default_headers.iter().any(|h| h.name == accept_encoding)
    {
        let value = lowering.template(&plan.protocol.accept_encoding);
        let fixed = lowering.fixed_header_value("protocol.accept_encoding", &value);
        lowering.default_headers.push(HeaderProgram { name: accept_encoding, value, fixed });
    }
    let scenarios = plan
        .scenarios
        .iter()
        .enumerate()
        .map(|(i, scenario)| ScenarioProgram {
            name: scenario.name.as_str().into(),
            steps: lowering.steps(&format!("scenarios[{i}].steps"), &scenario.steps, ""),
            injection: scenario.injection.clone(),
            after: scenario.after.as_ref().and_then(|name| plan.scenarios.iter().position(|s| &s.name == name)),
        })
        .collect();
    // A session function may set any variable, and a feeder that could not be read any of
    // its columns: then what the plan sets cannot be known here (the unreadable file is
    // named already).
    if lowering.session_function_keys.is_empty() && lowering.feeders.len() == plan.feeders.len() {
        lowering.never_set_variables();
    }
    // ALPN: what HTTP versions https connections offer, most wanted first.
    let alpn: &[&[u8]] = match plan.protocol.http2 {
        horde_plan::Http2Mode::Off => &[b"http/1.1"],
        horde_plan::Http2Mode::Negotiate => &[b"h2", b"http/1.1"],
        horde_plan::Http2Mode::PriorKnowledge => &[b"h2"],
    };
    let tls = TlsSetup::new(&plan.protocol.tls, lowering.base_dir.as_deref(), alpn, &mut lowering.errors);
    let thresholds = crate::thresholds::resolve(plan, &lowering.rows, &lowering.groups, &mut lowering.errors);
    for error in std::mem::take(&mut lowering.errors) {
        let named_already = errors.iter().any(|known| {
            error
                .path
                .strip_prefix(known.path.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
        });
        if !named_already {
            errors.push(error);
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    // Inferring resources reads each page's Content-Type.
    let reads_response_headers =
        plan.protocol.infer_html_resources || plan.scenarios.iter().any(|s| steps_read_headers(&s.steps));
    Ok(Program {
        plan: plan.clone(),
        scenarios,
        variables: lowering.variable_names,
        row_methods: {
            let mut methods = lowering.row_methods;
            methods.resize(lowering.rows.len(), None);
            methods
        },
        rows: lowering.rows,
        groups: lowering.groups,
        reads_response_headers,
        paces: lowering.paces,
        schemas: lowering.schemas,
        sockets: lowering.sockets,
        feeders: lowering.feeders,
        variable_slots: lowering.variables,
        session_function_keys: lowering.session_function_keys,
        session_functions: None,
        function_cost: Arc::default(),
        thresholds,
        sql_phases: lowering.sql_phases,
        databases,
        share: lowering.share,
        protocol: ProtocolProgram {
            connect_timeout: Duration::from_millis(plan.protocol.connect_timeout_ms),
            request_timeout: Duration::from_millis(plan.protocol.request_timeout_ms),
            max_redirects: if plan.protocol.follow_redirects { plan.protocol.max_redirects } else { 0 },
            max_body_bytes: plan.protocol.max_body_bytes,
            tls,
            http2: plan.protocol.http2,
            max_connections_per_host: plan.protocol.max_connections_per_host as usize,
            inferred_resource_headers: lowering.default_headers.clone(),
            resolver: Resolver::with_mappings(plan.protocol.resolve.iter().filter_map(|m| {
                let address = m.address.parse::<std::net::IpAddr>().ok()?;
                Some((format!("{}:{}", bracketed(&m.host), m.port), std::net::SocketAddr::new(address, m.port)))
            })),
        },
    })
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

struct Lowering {
    variables: HashMap<String, usize>,
    variable_names: Vec<String>,
    rows: Vec<Arc<str>>,
    row_methods: Vec<Option<&'static str>>,
    groups: Vec<Arc<str>>,
    errors: Vec<PlanError>,
    base_url: Option<Url>,
    base_dir: Option<PathBuf>,
    default_headers: Vec<HeaderProgram>,
    boundary_counter: u32,
    paces: usize,
    schemas: Vec<Arc<horde_docgen::Schema>>,
    /// Pages (requests outside batches and resources) are parsed for their resources.
    infer_html_resources: bool,
    /// The protocol's redirect settings, which a request may override (`follow_redirects`).
    follow_redirects: bool,
    max_redirects: u32,
    sockets: Vec<String>,
    /// Every variable name the plan sets anywhere: by a check, a counter, a feeder's column,
    /// a `set` or a `foreach`. A dotted name in a template names one of these when it can.
    defined: HashSet<String>,
    /// Where each variable slot is first read: a name read but never set is an error there.
    first_reads: HashMap<usize, String>,
    /// The plan path of the step being lowered, for errors of its templates.
    current_path: String,
    counters: HashMap<String, Arc<RunCounter>>,
    /// This process's share of the run: counters and feeder rows are striped by it.
    share: Share,
    feeders: Vec<Arc<FeederRuntime>>,
    /// Each feeder's source, as errors name it (the file, or the plan's inline records).
    feeder_sources: Vec<String>,
    session_function_keys: Vec<String>,
    /// Database URLs of SQL steps, parsed once each.
    sql_databases: HashMap<String, Arc<Database>>,
    /// The plan's databases (`sql` steps name them) and what each one is.
    database_names: Vec<String>,
    database_kinds: Vec<crate::protocol::sql::database::DatabaseKind>,
    sql_phases: Vec<crate::protocol::sql::PhaseProgress>,
}

impl Names for Lowering {
    fn variable(&mut self, path: &[String]) -> (usize, usize) {
        let (slot, used) = self.probe(path);
        self.first_reads.entry(slot).or_insert_with(|| self.current_path.clone());
        (slot, used)
    }

    fn probe(&mut self, path: &[String]) -> (usize, usize) {
        let used = (1..=path.len()).rev().find(|&used| self.defined.contains(&path[..used].join("."))).unwrap_or(1);
        (self.slot(&path[..used].join(".")), used)
    }

    fn counter(&mut self, name: &str) -> Arc<RunCounter> {
        let stripe = &self.share.work;
        self.counters.entry(name.to_string()).or_insert_with(|| Arc::new(RunCounter::new(stripe.clone()))).clone()
    }
}

impl Lowering {
    fn slot(&mut self, name: &str) -> usize {
        if let Some(&slot) = self.variables.get(name) {
            return slot;
        }
        let slot = self.variable_names.len();
        self.variables.insert(name.to_string(), slot);
        self.variable_names.push(name.to_string());
        slot
    }

    /// A template validation checked; one it refused is taken literally, to go on lowering.
    fn template(&mut self, text: &str) -> Template {
        let Ok(segments) = parse_template(text) else {
            return Template::literal(text);
        };
        match Template::compile(segments, self) {
            Ok(template) => template,
            Err(message) => {
                self.errors.push(PlanError::new(self.current_path.clone(), format!("{text:?}: {message}")));
                Template::literal(text)
            }
        }
    }

    /// A condition validation checked; one it refused never holds, to go on lowering.
    fn condition(&mut self, path: &str, text: &str, row_name: &str) -> ConditionProgram {
        let row_id = self.row(row_name.into());
        let never = || CompiledCondition::Or(Vec::new());
        let Ok(parsed) = parse_condition(text) else {
            return ConditionProgram { condition: never(), row_id };
        };
        match CompiledCondition::compile(parsed, self) {
            Ok(condition) => ConditionProgram { condition, row_id },
            Err(message) => {
                self.errors.push(PlanError::new(path, message));
                ConditionProgram { condition: never(), row_id }
            }
        }
    }

    /// Reads every feeder's source now: a missing file, a ragged line or bad JSON is a plan
    /// error with the file and line, before anything is sent.
    fn load_feeders(&mut self, plan: &Plan) {
        let seed = crate::segment::shared_seed(plan).unwrap_or_else(rand::random);
        for (i, feeder) in plan.feeders.iter().enumerate() {
            let row_id = self.row(format!("feed {}", feeder.name).into());
            let file = feeder.source.path().map(|p| self.resolve_file(p));
            match FeederRuntime::load(feeder, file, row_id, seed ^ i as u64, self.share.work.clone()) {
                Ok(runtime) => {
                    self.feeder_sources.push(runtime.origin.clone());
                    self.feeders.push(Arc::new(runtime));
                }
                Err(message) => {
                    let field = if feeder.source.path().is_some() { ".source.path" } else { "" };
                    self.errors.push(PlanError::new(format!("feeders[{i}]{field}"), message));
                    self.feeder_sources.push(String::new());
                }
            }
        }
    }

    fn feeder(&self, name: &str) -> Option<Arc<FeederRuntime>> {
        self.feeders.iter().find(|f| &*f.name == name).cloned()
    }

    /// Every name the steps set, so that `${a.b}` can tell the variable `a.b` from field `b`
    /// of `a`, and a name never set can be named before the run.
    fn collect_defined(&mut self, steps: &[Step]) {
        Step::walk(steps, &mut |step| self.collect_defined_by(step));
    }

    /// The variables one step sets (its nested steps are walked apart).
    fn collect_defined_by(&mut self, step: &Step) {
        match step {
            Step::Core(
                CoreStep::Repeat { counter, .. }
                | CoreStep::During { counter, .. }
                | CoreStep::AsLongAs { counter, .. }
                | CoreStep::DoWhile { counter, .. }
                | CoreStep::TryMax { counter, .. }
                | CoreStep::Eventually { counter, .. },
            ) => self.defined.extend(counter.iter().cloned()),
            Step::Core(CoreStep::Foreach { element, counter, .. }) => {
                self.defined.insert(element.clone());
                self.defined.extend(counter.iter().cloned());
            }
            Step::Core(CoreStep::Feed { feeder, .. }) => {
                if let Some(feeder) = self.feeder(feeder) {
                    self.defined.extend(feeder.columns.iter().cloned());
                }
            }
            Step::Core(CoreStep::Set { values }) => self.defined.extend(values.iter().map(|v| v.name.clone())),
            Step::Core(_) => {}
            Step::Http(HttpStep::Request(request)) => self.collect_request(request),
            Step::Http(HttpStep::Batch { requests }) => requests.iter().for_each(|r| self.collect_request(r)),
            Step::Http(HttpStep::GetCookie(get)) => {
                self.defined.insert(get.save_as.clone());
            }
            Step::Http(_) => {}
            Step::Sql(SqlStep::Sql(statement)) => {
                self.defined.extend(statement.checks.iter().filter_map(|c| c.save_as.clone()))
            }
            Step::Sql(_) => {}
            Step::Socket(
                SocketStep::WsConnect(horde_plan::SocketConnect { await_messages: Some(messages), .. })
                | SocketStep::SseConnect(horde_plan::SocketConnect { await_messages: Some(messages), .. })
                | SocketStep::WsSend(horde_plan::WsSend { await_messages: Some(messages), .. })
                | SocketStep::WsAwait(horde_plan::SocketAwait { await_messages: messages, .. })
                | SocketStep::SseAwait(horde_plan::SocketAwait { await_messages: messages, .. }),
            ) => {
                for message in &messages.messages {
                    self.defined.extend(message.checks.iter().filter_map(|c| c.save_as.clone()));
                }
            }
            Step::Socket(_) | Step::Couchdb(_) => {}
        }
    }

    fn collect_request(&mut self, request: &Request) {
        self.defined.extend(request.checks.iter().filter_map(|c| c.save_as.clone()));
        request.resources.iter().for_each(|r| self.collect_request(r));
    }

    /// A variable read but set nowhere in the plan is a mistyped name (a feeder's column, a
    /// saved value): an error where it is first read, naming what the plan does set.
    fn never_set_variables(&mut self) {
        let mut unset: Vec<(usize, String)> = self
            .first_reads
            .iter()
            .filter(|(slot, _)| !self.defined.contains(&self.variable_names[**slot]))
            .map(|(slot, path)| (*slot, path.clone()))
            .collect();
        unset.sort();
        for (slot, path) in unset {
            let name = &self.variable_names[slot];
            let mut known: Vec<&str> = self.defined.iter().map(String::as_str).collect();
            known.sort_unstable();
            let feeders: Vec<String> = self
                .feeders
                .iter()
                .map(|f| format!("feeder {:?} ({}) has {}", f.name, f.origin, f.columns.join(", ")))
                .collect();
            let mut message = format!(
                "${{{name}}} is never set: no check saves it, no feeder has it as a column, no set or loop names it"
            );
            if !feeders.is_empty() {
                message.push_str(&format!("; {}", feeders.join("; ")));
            } else if !known.is_empty() {
                message.push_str(&format!("; the plan sets {}", known.join(", ")));
            }
            self.errors.push(PlanError::new(path, message));
        }
    }

    fn header(&mut self, path: &str, name: &str, value: &str) -> Option<(HeaderName, Template)> {
        match HeaderName::from_bytes(name.as_bytes()) {
            Ok(header) => Some((header, self.template(value))),
            Err(_) => {
                self.errors.push(PlanError::new(format!("{path}.name"), format!("{name:?} is not a header name")));
                None
            }
        }
    }

    /// The header value, checked, when it has no variables; a bad one is an error at `path`.
    fn fixed_header_value(&mut self, path: &str, value: &Template) -> Option<HeaderValue> {
        let text = value.as_static()?;
        match HeaderValue::from_str(text) {
            Ok(value) => Some(value),
            Err(_) => {
                self.errors.push(PlanError::new(path, format!("{text:?} is not a valid header value")));
                None
            }
        }
    }

    fn steps(&mut self, path: &str, steps: &[Step], group_prefix: &str) -> Vec<StepProgram> {
        steps
            .iter()
            .enumerate()
            .map(|(i, step)| {
                let path = format!("{path}[{i}]");
                self.current_path = path.clone();
                match step {
                    Step::Core(step) => self.core_step(&path, step, group_prefix),
                    Step::Http(step) => self.http_step(&path, step, group_prefix),
                    Step::Socket(step) => self.socket_step_of(&path, step, group_prefix),
                    Step::Couchdb(step) => self.couchdb_step(&path, step, group_prefix),
                    Step::Sql(step) => self.sql_step(&path, step, group_prefix),
                }
            })
            .collect()
    }

    fn core_step(&mut self, path: &str, step: &CoreStep, group_prefix: &str) -> StepProgram {
        let step_ref = step;
        match step {
            CoreStep::Pause { duration_ms } => {
                StepProgram::Pause(PauseKind::Fixed(Duration::from_millis(*duration_ms)))
            }
            CoreStep::PauseUniform { min_ms, max_ms } => {
                StepProgram::Pause(PauseKind::Uniform(Duration::from_millis(*min_ms), Duration::from_millis(*max_ms)))
            }
            CoreStep::PauseExponential { mean_ms } => {
                StepProgram::Pause(PauseKind::Exponential(Duration::from_millis(*mean_ms)))
            }
            CoreStep::PauseNormal { mean_ms, std_dev_ms } => StepProgram::Pause(PauseKind::Normal {
                mean: Duration::from_millis(*mean_ms),
                std_dev: Duration::from_millis(*std_dev_ms),
            }),
            CoreStep::PauseTemplate { duration } => {
                let row_id = self.row(format!("{group_prefix}pause {duration}").into());
                let duration = self.template(duration);
                StepProgram::Pause(PauseKind::Template(Box::new(TemplatePause { duration, row_id })))
            }
            CoreStep::Pace { duration_ms } => {
                self.paces += 1;
                StepProgram::Pace { id: self.paces - 1, duration: Duration::from_millis(*duration_ms) }
            }
            CoreStep::Repeat { times, counter, steps } => StepProgram::Repeat {
                times: *times,
                counter: counter.as_deref().map(|c| self.slot(c)),
                body: self.steps(&format!("{path}.steps"), steps, group_prefix),
            },
            CoreStep::During { duration_ms, counter, steps } => StepProgram::During {
                duration: Duration::from_millis(*duration_ms),
                counter: counter.as_deref().map(|c| self.slot(c)),
                body: self.steps(&format!("{path}.steps"), steps, group_prefix),
            },
            CoreStep::Group { name, steps } => {
                let full_name = format!("{group_prefix}{name}");
                let group = self.group(&full_name);
                let prefix = format!("{full_name} / ");
                StepProgram::Group { group, body: self.steps(&format!("{path}.steps"), steps, &prefix) }
            }
            CoreStep::Feed { feeder, count } => match self.feeder(feeder) {
                Some(feeder) => {
                    let slots = feeder.columns.iter().map(|c| self.slot(c)).collect();
                    StepProgram::Feed { feeder, slots, count: *count }
                }
                // Named already: by validation, or as an unreadable source.
                None => StepProgram::Unset(Vec::new()),
            },
            CoreStep::Set { values } => {
                let names: Vec<&str> = values.iter().map(|v| v.name.as_str()).collect();
                let row_id = self.row(format!("{group_prefix}set {}", names.join(", ")).into());
                let values = values.iter().map(|v| (self.slot(&v.name), self.template(&v.value))).collect();
                StepProgram::Set { values, row_id }
            }
            CoreStep::Unset { names } => StepProgram::Unset(names.iter().map(|n| self.slot(n)).collect()),
            CoreStep::DoIf { condition, steps, else_steps } => {
                let condition = self.condition(
                    &format!("{path}.condition"),
                    condition,
                    &format!("{group_prefix}do_if {condition}"),
                );
                let then = self.steps(&format!("{path}.steps"), steps, group_prefix);
                let otherwise = self.steps(&format!("{path}.else_steps"), else_steps, group_prefix);
                StepProgram::Choose(Box::new(ChoiceProgram::If { condition, then, otherwise }))
            }
            CoreStep::DoSwitch { value, cases, else_steps } => {
                let row_id = self.row(format!("{group_prefix}do_switch {value}").into());
                let value = self.template(value);
                let cases = cases
                    .iter()
                    .enumerate()
                    .map(|(i, case)| {
                        self.current_path = format!("{path}.cases[{i}].value");
                        let expected = self.template(&case.value);
                        (expected, self.steps(&format!("{path}.cases[{i}].steps"), &case.steps, group_prefix))
                    })
                    .collect();
                let otherwise = self.steps(&format!("{path}.else_steps"), else_steps, group_prefix);
                StepProgram::Choose(Box::new(ChoiceProgram::Switch { value, row_id, cases, otherwise }))
            }
            CoreStep::RandomSwitch { cases, else_steps } => {
                let mut total = 0.0;
                let bounds = cases
                    .iter()
                    .map(|c| {
                        total += c.weight;
                        total
                    })
                    .collect();
                let cases = cases
                    .iter()
                    .enumerate()
                    .map(|(i, c)| self.steps(&format!("{path}.cases[{i}].steps"), &c.steps, group_prefix))
                    .collect();
                let otherwise = self.steps(&format!("{path}.else_steps"), else_steps, group_prefix);
                StepProgram::Choose(Box::new(ChoiceProgram::Random { bounds, cases, otherwise }))
            }
            CoreStep::UniformRandomSwitch { cases } | CoreStep::RoundRobinSwitch { cases } => {
                let cases = cases
                    .iter()
                    .enumerate()
                    .map(|(i, c)| self.steps(&format!("{path}.cases[{i}].steps"), &c.steps, group_prefix))
                    .collect();
                let choice = if matches!(step_ref, CoreStep::RoundRobinSwitch { .. }) {
                    ChoiceProgram::RoundRobin { next: Arc::new(RunCounter::new(self.share.work.clone())), cases }
                } else {
                    ChoiceProgram::Uniform(cases)
                };
                StepProgram::Choose(Box::new(choice))
            }
            CoreStep::Foreach { list, element, counter, steps } => {
                let row_id = self.row(format!("{group_prefix}foreach {list}").into());
                let list = self.template(list);
                StepProgram::Loop(Box::new(LoopProgram::Foreach {
                    list,
                    row_id,
                    element: self.slot(element),
                    counter: counter.as_deref().map(|c| self.slot(c)),
                    body: self.steps(&format!("{path}.steps"), steps, group_prefix),
                }))
            }
            CoreStep::AsLongAs { condition, counter, steps, .. } | CoreStep::DoWhile { condition, counter, steps } => {
                let (test_first, exit_on_fail, kind) = match step_ref {
                    CoreStep::AsLongAs { exit_on_fail, .. } => (true, *exit_on_fail, "as_long_as"),
                    _ => (false, false, "do_while"),
                };
                let condition = self.condition(
                    &format!("{path}.condition"),
                    condition,
                    &format!("{group_prefix}{kind} {condition}"),
                );
                StepProgram::Loop(Box::new(LoopProgram::While {
                    condition,
                    test_first,
                    exit_on_fail,
                    counter: counter.as_deref().map(|c| self.slot(c)),
                    body: self.steps(&format!("{path}.steps"), steps, group_prefix),
                }))
            }
            CoreStep::TryMax { name, times, counter, steps } => {
                let retry = RetryProgram {
                    kind: RetryKind::TryMax,
                    group: self.group(&format!("{group_prefix}{name}")),
                    row_id: self.row(format!("{group_prefix}{name}").into()),
                    times: Some(*times),
                    pause: Duration::ZERO,
                    timeout: None,
                    counter: counter.as_deref().map(|c| self.slot(c)),
                    body: self.steps(&format!("{path}.steps"), steps, group_prefix),
                };
                StepProgram::Retry(Box::new(retry))
            }
            CoreStep::Eventually { name, times, pause_ms, timeout_ms, counter, steps } => {
                let retry = RetryProgram {
                    kind: RetryKind::Eventually,
                    group: self.group(&format!("{group_prefix}{name}")),
                    row_id: self.row(format!("{group_prefix}{name}").into()),
                    times: *times,
                    pause: Duration::from_millis(*pause_ms),
                    timeout: timeout_ms.map(Duration::from_millis),
                    counter: counter.as_deref().map(|c| self.slot(c)),
                    body: self.steps(&format!("{path}.steps"), steps, group_prefix),
                };
                StepProgram::Retry(Box::new(retry))
            }
            CoreStep::ExitHereIfFailed => StepProgram::Exit { condition: None, if_failed: true },
            CoreStep::ExitHere { condition } => {
                let condition = condition.as_ref().map(|c| {
                    Box::new(self.condition(
                        &format!("{path}.condition"),
                        c,
                        &format!("{group_prefix}exit_here_if {c}"),
                    ))
                });
                StepProgram::Exit { condition, if_failed: false }
            }
            CoreStep::ExitBlockOnFail { steps } => {
                StepProgram::ExitBlockOnFail(self.steps(&format!("{path}.steps"), steps, group_prefix))
            }
            CoreStep::SessionFunction { name, function } => {
                if !self.session_function_keys.contains(function) {
                    self.session_function_keys.push(function.clone());
                }
                let row_id = self.row(format!("{group_prefix}{name}").into());
                StepProgram::SessionFunction { key: function.as_str().into(), row_id }
            }
            CoreStep::StopLoadGenerator { message, condition } => {
                let condition = condition.as_ref().map(|c| {
                    Box::new(self.condition(
                        &format!("{path}.condition"),
                        c,
                        &format!("{group_prefix}stop_load_generator_if {c}"),
                    ))
                });
                StepProgram::StopLoadGenerator { message: message.as_str().into(), condition }
            }
        }
    }

    fn http_step(&mut self, path: &str, step: &HttpStep, group_prefix: &str) -> StepProgram {
        match step {
            HttpStep::Request(request) => {
                let mut page = self.request(path, request, group_prefix);
                page.resources = request
                    .resources
                    .iter()
                    .enumerate()
                    .map(|(i, resource)| self.request(&format!("{path}.resources[{i}]"), resource, group_prefix))
                    .collect();
                page.infers_resources = self.infer_html_resources;
                page.needs_body |= page.infers_resources;
                StepProgram::Request(Box::new(page))
            }
            HttpStep::Batch { requests } => StepProgram::Batch(
                requests
                    .iter()
                    .enumerate()
                    .map(|(i, request)| self.request(&format!("{path}.requests[{i}]"), request, group_prefix))
                    .collect(),
            ),
            HttpStep::AddCookie(_)
            | HttpStep::GetCookie(_)
            | HttpStep::FlushCookieJar
            | HttpStep::FlushSessionCookies => self.cookie_step(path, step, group_prefix),
        }
    }

    fn socket_step_of(&mut self, path: &str, step: &SocketStep, group_prefix: &str) -> StepProgram {
        let step_ref = step;
        match step {
            SocketStep::WsConnect(step) => self.socket_connect(path, step, SocketKind::WebSocket, group_prefix),
            SocketStep::SseConnect(step) => self.socket_connect(path, step, SocketKind::EventStream, group_prefix),
            SocketStep::WsSend(step) => {
                let action = match (&step.text, &step.binary_base64) {
                    (Some(text), _) => SocketAction::SendText(self.template(text)),
                    (None, Some(data)) => {
                        use base64::Engine;
                        let bytes = base64::engine::general_purpose::STANDARD.decode(data).unwrap_or_else(|err| {
                            self.errors.push(PlanError::new(format!("{path}.binary_base64"), err.to_string()));
                            Vec::new()
                        });
                        SocketAction::SendBinary(Bytes::from(bytes))
                    }
                    (None, None) => SocketAction::SendText(self.template("")),
                };
                let messages = step.await_messages.as_ref();
                self.socket_step(path, SocketKind::WebSocket, &step.name, &step.socket, action, messages, group_prefix)
            }
            SocketStep::WsAwait(step) | SocketStep::SseAwait(step) => {
                let kind = if matches!(step_ref, SocketStep::WsAwait(_)) {
                    SocketKind::WebSocket
                } else {
                    SocketKind::EventStream
                };
                let messages = Some(&step.await_messages);
                self.socket_step(path, kind, &step.name, &step.socket, SocketAction::Await, messages, group_prefix)
            }
            SocketStep::WsClose(step) | SocketStep::SseClose(step) => {
                let kind = if matches!(step_ref, SocketStep::WsClose(_)) {
                    SocketKind::WebSocket
                } else {
                    SocketKind::EventStream
                };
                self.socket_step(path, kind, &step.name, &step.socket, SocketAction::Close, None, group_prefix)
            }
        }
    }

    fn couchdb_step(&mut self, path: &str, step: &CouchdbStep, group_prefix: &str) -> StepProgram {
        match step {
            CouchdbStep::CouchdbBulkInsert(step) => {
                let target = self.couchdb_target(path, &step.name, &step.database, &step.schema, group_prefix);
                let bulk_docs = self.database_url(&format!("{path}.database"), &step.database, "_bulk_docs");
                StepProgram::CouchdbBulkInsert(Box::new(BulkInsertProgram {
                    row_id: self.row(target.name.clone()),
                    target,
                    bulk_docs,
                    documents_per_insert: step.documents_per_insert,
                    inserts: step.inserts,
                }))
            }
            CouchdbStep::CouchdbCrud(step) => {
                let target = self.couchdb_target(path, &step.name, &step.database, &step.schema, group_prefix);
                let rows = horde_metrics::CRUD_OPERATIONS.map(|op| self.row(format!("{} {op}", target.name).into()));
                StepProgram::CouchdbCrud(Box::new(CrudProgram {
                    target,
                    rows,
                    counts: step.weights.counts(step.operations),
                    bulk_documents_per_user: step.bulk_documents_per_user,
                }))
            }
        }
    }

    fn sql_step(&mut self, path: &str, step: &SqlStep, group_prefix: &str) -> StepProgram {
        match step {
            SqlStep::SqlWorkload(step) => {
                StepProgram::SqlWorkload(Box::new(self.sql_workload(path, step, group_prefix)))
            }
            SqlStep::Sql(step) => StepProgram::SqlStatement(Box::new(self.sql_statement(path, step, group_prefix))),
            SqlStep::SqlTransaction(step) => {
                let row = format!("{group_prefix}{}", step.action.statement()).into();
                StepProgram::SqlTransaction(Box::new(crate::protocol::sql::SqlTransactionProgram {
                    row_id: self.row(row),
                    database: self.database_index(step.database.as_deref()),
                    action: step.action,
                }))
            }
        }
    }

    fn request(&mut self, path: &str, request: &Request, group_prefix: &str) -> RequestProgram {
        // Validation names a bad method; GET stands in, to go on lowering.
        let method = Method::from_bytes(request.method.as_bytes()).unwrap_or(Method::GET);
        let url = self.url(&format!("{path}.url"), &request.url);
        let query = request.query.iter().map(|p| (self.template(&p.name), self.template(&p.value))).collect();
        let mut headers: Vec<HeaderProgram> = Vec::new();
        for (i, header) in request.headers.iter().enumerate() {
            let path = format!("{path}.headers[{i}]");
            if let Some((name, value)) = self.header(&path, &header.name, &header.value) {
                let fixed = self.fixed_header_value(&format!("{path}.value"), &value);
                headers.push(HeaderProgram { name, value, fixed });
            }
        }
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
            Some(body) => self.body(&format!("{path}.body"), body),
        };
        let checks: Vec<CheckProgram> = request
            .checks
            .iter()
            .enumerate()
            .filter_map(|(i, check)| self.check(&format!("{path}.checks[{i}]"), check))
            .collect();
        let needs_body = checks.iter().any(|c| c.extractor.reads_body());
        let row: Arc<str> = format!("{group_prefix}{}", request.name).into();
        let row_id = self.row(row.clone());
        if self.row_methods.len() <= row_id {
            self.row_methods.resize(row_id + 1, None);
        }
        // Method's standard names are static; an extension method is named by the plan only.
        self.row_methods[row_id] = Some(standard_method_name(&method));
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

    fn socket_connect(
        &mut self,
        path: &str,
        step: &horde_plan::SocketConnect,
        kind: SocketKind,
        group_prefix: &str,
    ) -> StepProgram {
        let mut headers = Vec::new();
        for (i, header) in step.headers.iter().enumerate() {
            let path = format!("{path}.headers[{i}]");
            if let Some((name, value)) = self.header(&path, &header.name, &header.value) {
                let fixed = self.fixed_header_value(&format!("{path}.value"), &value);
                headers.push(HeaderProgram { name, value, fixed });
            }
        }
        let action = SocketAction::Connect { url: self.template(&step.url), base: self.base_url.clone(), headers };
        let messages = step.await_messages.as_ref();
        self.socket_step(path, kind, &step.name, &step.socket, action, messages, group_prefix)
    }

    #[allow(clippy::too_many_arguments)]
    fn socket_step(
        &mut self,
        path: &str,
        kind: SocketKind,
        name: &str,
        socket: &str,
        action: SocketAction,
        messages: Option<&horde_plan::AwaitMessages>,
        group_prefix: &str,
    ) -> StepProgram {
        let socket = match self.sockets.iter().position(|s| s == socket) {
            Some(slot) => slot,
            None => {
                self.sockets.push(socket.to_string());
                self.sockets.len() - 1
            }
        };
        let row_id = self.row(format!("{group_prefix}{name}").into());
        let await_messages = messages.map(|messages| AwaitProgram {
            timeout: Duration::from_millis(messages.timeout_ms),
            messages: messages
                .messages
                .iter()
                .enumerate()
                .map(|(i, message)| {
                    let path = format!("{path}.await.messages[{i}]");
                    let checks =
                        |lowering: &mut Lowering, kind: &str, checks: &[horde_plan::Check]| -> Vec<CheckProgram> {
                            checks
                                .iter()
                                .enumerate()
                                .filter_map(|(j, check)| lowering.check(&format!("{path}.{kind}[{j}]"), check))
                                .collect()
                        };
                    MessageProgram {
                        row_id: self.row(format!("{group_prefix}{}", message.name).into()),
                        matching: checks(self, "matching", &message.matching),
                        checks: checks(self, "checks", &message.checks),
                    }
                })
                .collect(),
        });
        StepProgram::Socket(Box::new(SocketStepProgram { kind, socket, row_id, action, await_messages }))
    }

    fn cookie_step(&mut self, path: &str, step: &HttpStep, group_prefix: &str) -> StepProgram {
        let base_host = self.base_url.as_ref().and_then(|u| u.host_str().map(str::to_string));
        let cookie = match step {
            HttpStep::AddCookie(add) => {
                let row_id = self.row(format!("{group_prefix}add_cookie {}", add.name).into());
                let cookie_path = add.path.clone().unwrap_or_else(|| "/".to_string());
                // Validation named a missing domain; a stand-in goes on lowering.
                let host = add.domain.clone().or(base_host).unwrap_or_else(|| "invalid.invalid".to_string());
                let origin = cookies::origin(&host, &cookie_path, add.secure).unwrap_or_else(|message| {
                    self.errors.push(PlanError::new(format!("{path}.domain"), message));
                    Url::parse("http://invalid.invalid/").expect("a valid URL")
                });
                CookieStep::Add(cookies::AddCookie {
                    name: add.name.clone(),
                    value: self.template(&add.value),
                    domain: add.domain.clone(),
                    path: cookie_path,
                    secure: add.secure,
                    origin,
                    row_id,
                })
            }
            HttpStep::GetCookie(get) => {
                let row_id = self.row(format!("{group_prefix}get_cookie {}", get.name).into());
                let domain = get.domain.clone().or(base_host).and_then(|host| {
                    cookies::origin(&host, "/", false)
                        .map_err(|message| self.errors.push(PlanError::new(format!("{path}.domain"), message)))
                        .ok()
                });
                CookieStep::Get(cookies::GetCookie {
                    name: get.name.clone(),
                    domain,
                    slot: self.slot(&get.save_as),
                    row_id,
                })
            }
            HttpStep::FlushCookieJar => CookieStep::FlushJar,
            _ => CookieStep::FlushSession,
        };
        StepProgram::Cookie(Box::new(cookie))
    }

    /// The index of a group's statistics; groups with the same name share them.
    fn group(&mut self, full_name: &str) -> usize {
        match self.groups.iter().position(|g| **g == *full_name) {
            Some(group) => group,
            None => {
                self.groups.push(full_name.into());
                self.groups.len() - 1
            }
        }
    }

    /// The index of a statistics row; requests with the same name share a row, as in Gatling.
    /// A phase of `horde sql`. Steps naming one database URL share its parsed form: SQLite's
    /// connections to one file then take turns writing (see `Database::Sqlite`).
    fn sql_workload(&mut self, path: &str, step: &horde_plan::SqlWorkload, group_prefix: &str) -> SqlWorkloadProgram {
        let database = match self.sql_databases.get(&step.url) {
            Some(database) => database.clone(),
            None => match Database::parse(&step.url, self.base_dir.as_deref()) {
                Ok(database) => {
                    let database = Arc::new(database);
                    self.sql_databases.insert(step.url.clone(), database.clone());
                    database
                }
                Err(message) => {
                    self.errors.push(PlanError::new(format!("{path}.url"), message));
                    Arc::new(Database::sqlite(PathBuf::from(":memory:")))
                }
            },
        };
        let name: Arc<str> = format!("{group_prefix}{}", step.name).into();
        let shared = Arc::new(PhaseShared::new(step.threads.max(1)));
        self.sql_phases.push(crate::protocol::sql::PhaseProgress::new(name.clone(), step.rows, shared.clone()));
        SqlWorkloadProgram {
            row_id: self.row(name.clone()),
            name,
            database,
            table: step.table.clone(),
            phase: step.phase,
            strategy: step.strategy,
            rows: step.rows,
            threads: step.threads.max(1),
            batch_size: step.batch_size.max(1) as usize,
            text_length: step.text_length.max(1) as usize,
            shared,
        }
    }

    /// The plan's databases, their URLs parsed once (a bad one is an error at its path).
    fn databases(&mut self, plan: &Plan) -> Vec<crate::protocol::sql::ScenarioDatabase> {
        let mut databases = Vec::with_capacity(plan.databases.len());
        for (i, database) in plan.databases.iter().enumerate() {
            let parsed = match Database::parse(&database.url, self.base_dir.as_deref()) {
                Ok(parsed) => parsed,
                Err(message) => {
                    self.errors.push(PlanError::new(format!("databases[{i}].url"), message));
                    Database::sqlite(PathBuf::from(":memory:"))
                }
            };
            databases.push(crate::protocol::sql::ScenarioDatabase {
                name: database.name.clone(),
                database: Arc::new(parsed),
                pool_size: database.pool_size,
            });
        }
        databases
    }

    /// A step's database: the one it names, or the plan's only one. Validation names a bad
    /// reference; the first database stands in for it.
    fn database_index(&self, name: Option<&str>) -> usize {
        name.and_then(|name| self.database_names.iter().position(|known| known == name)).unwrap_or(0)
    }

    fn sql_statement(
        &mut self,
        path: &str,
        step: &horde_plan::SqlStatement,
        group_prefix: &str,
    ) -> crate::protocol::sql::SqlStatementProgram {
        let database = self.database_index(step.database.as_deref());
        let kind =
            self.database_kinds.get(database).copied().unwrap_or(crate::protocol::sql::database::DatabaseKind::Sqlite);
        let (sql, bind_order) = crate::protocol::sql::translate_placeholders(&step.sql, kind, step.params.len());
        let params = step.params.iter().map(|p| self.template(p)).collect();
        let checks: Vec<CheckProgram> = step
            .checks
            .iter()
            .enumerate()
            .filter_map(|(i, check)| self.check(&format!("{path}.checks[{i}]"), check))
            .collect();
        let mut columns: Vec<String> = Vec::new();
        for check in &checks {
            if let Extractor::Column(name) = &check.extractor {
                if !columns.contains(name) {
                    columns.push(name.clone());
                }
            }
        }
        let row = format!("{group_prefix}{}", step.name).into();
        crate::protocol::sql::SqlStatementProgram {
            row_id: self.row(row),
            database,
            kind: step.kind,
            sql,
            params,
            bind_order,
            checks,
            columns,
        }
    }

    fn row(&mut self, row: Arc<str>) -> usize {
        match self.rows.iter().position(|r| *r == row) {
            Some(id) => id,
            None => {
                self.rows.push(row);
                self.rows.len() - 1
            }
        }
    }

    fn couchdb_target(
        &mut self,
        path: &str,
        name: &str,
        database: &str,
        schema: &str,
        group_prefix: &str,
    ) -> CouchdbTarget {
        let database = self.database_url(&format!("{path}.database"), database, "");
        let generated = self.generated(&format!("{path}.schema"), schema, None);
        let (schema_id, schema) = match generated {
            BodyProgram::Generated { id, schema, .. } => (id, schema),
            // The error is recorded; an empty schema keeps lowering going to find the rest.
            _ => (0, Arc::new(horde_docgen::Schema::Object(Vec::new()))),
        };
        CouchdbTarget { name: format!("{group_prefix}{name}").into(), database, schema_id, schema }
    }

    /// The database URL, or a resource under it (`_bulk_docs`), resolved against the base URL.
    fn database_url(&mut self, path: &str, database: &str, resource: &str) -> Arc<Target> {
        let mut text = database.trim_end_matches('/').to_string();
        if !resource.is_empty() {
            text.push('/');
            text.push_str(resource);
        }
        let parsed = match &self.base_url {
            Some(base) => base.join(&text),
            None => Url::parse(&text),
        };
        match parsed.map_err(|e| format!("{database:?}: {e}")).and_then(Target::from_url) {
            Ok(target) => Arc::new(target),
            Err(message) => {
                if resource.is_empty() {
                    self.errors.push(PlanError::new(path, message));
                }
                Arc::new(Target::from_url(Url::parse("http://invalid.invalid/").expect("a valid URL")).expect("http"))
            }
        }
    }

    fn url(&mut self, path: &str, text: &str) -> UrlProgram {
        let template = self.template(text);
        let Some(literal) = template.as_static() else {
            return UrlProgram::Dynamic { template, base: self.base_url.clone() };
        };
        let parsed = match &self.base_url {
            Some(base) => base.join(literal),
            None => Url::parse(literal),
        };
        match parsed.map_err(|e| format!("{text:?}: {e}")).and_then(Target::from_url) {
            Ok(target) => UrlProgram::Static(Arc::new(target)),
            Err(message) => {
                self.errors.push(PlanError::new(path, message));
                UrlProgram::Dynamic { template, base: None }
            }
        }
    }

    fn body(&mut self, path: &str, body: &Body) -> BodyProgram {
        match body {
            Body::Raw { text } => {
                let text = self.template(text);
                text_body(text, None)
            }
            Body::Json { value } => {
                let text = serde_json::to_string(value).expect("JSON values serialize");
                let text = self.template(&text);
                text_body(text, Some(HeaderValue::from_static("application/json")))
            }
            Body::DocumentFromSchema { path: file } => self.generated(&format!("{path}.path"), file, None),
            Body::BulkDocumentsFromSchema { path: file, count } => {
                self.generated(&format!("{path}.path"), file, Some(*count))
            }
            Body::Form { params } => {
                BodyProgram::Form(params.iter().map(|p| (self.template(&p.name), self.template(&p.value))).collect())
            }
            Body::Multipart { parts } => {
                self.boundary_counter += 1;
                // Fixed per request so runs are reproducible; long and odd enough never to
                // appear in a part by chance.
                let boundary = format!("horde-boundary-{:08x}-7d3c91a4e5b2", self.boundary_counter);
                let parts = parts
                    .iter()
                    .enumerate()
                    .filter_map(|(i, part)| self.part(&format!("{path}.parts[{i}]"), part))
                    .collect();
                BodyProgram::Multipart { boundary, parts }
            }
        }
    }

    /// Reads a schema file; `path` is the plan path of the field naming it.
    fn generated(&mut self, path: &str, file: &str, bulk: Option<u32>) -> BodyProgram {
        let resolved = self.resolve_file(file);
        match horde_docgen::Schema::from_file(&resolved) {
            Ok(schema) => {
                let schema = Arc::new(schema);
                self.schemas.push(schema.clone());
                BodyProgram::Generated { id: self.schemas.len() - 1, schema, bulk }
            }
            Err(err) => {
                self.errors.push(PlanError::new(path, format!("{}: {err}", resolved.display())));
                BodyProgram::None
            }
        }
    }

    fn part(&mut self, path: &str, part: &BodyPart) -> Option<PartProgram> {
        match part {
            BodyPart::String { name, value } => {
                Some(PartProgram::Text { name: name.clone(), value: self.template(value) })
            }
            BodyPart::RawFile { name, path: file, file_name, content_type } => {
                let resolved = self.resolve_file(file);
                match horde_plan::input::read_bounded(&resolved, horde_plan::input::MAX_INPUT_FILE_BYTES) {
                    Ok(data) => Some(PartProgram::File {
                        name: name.clone(),
                        file_name: file_name.clone().unwrap_or_else(|| {
                            resolved.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default()
                        }),
                        content_type: content_type.clone().unwrap_or_else(|| "application/octet-stream".into()),
                        data: Bytes::from(data),
                    }),
                    Err(err) => {
                        self.errors.push(PlanError::new(
                            format!("{path}.path"),
                            format!("cannot read file {}: {err}", resolved.display()),
                        ));
                        None
                    }
                }
            }
        }
    }

    fn resolve_file(&self, file: &str) -> PathBuf {
        let path = Path::new(file);
        match &self.base_dir {
            Some(dir) if path.is_relative() => dir.join(path),
            _ => path.to_path_buf(),
        }
    }

    /// A regex source's pattern and capture group (the one given, else 1, or the whole match
    /// when the pattern has none); a bad one is an error at the source's path.
    fn regex_group(&mut self, path: &str, pattern: &str, group: Option<u32>) -> Option<(regex::Regex, usize)> {
        let regex = match regex::Regex::new(pattern) {
            Ok(regex) => regex,
            Err(err) => {
                self.errors.push(PlanError::new(format!("{path}.source.pattern"), format!("invalid regex: {err}")));
                return None;
            }
        };
        let groups = regex.captures_len() - 1;
        let group = group.map(|g| g as usize).unwrap_or(if groups > 0 { 1 } else { 0 });
        if group > groups {
            self.errors.push(PlanError::new(
                format!("{path}.source.group"),
                format!("the pattern has {groups} capture groups, not {group}"),
            ));
            return None;
        }
        Some((regex, group))
    }

    fn check(&mut self, path: &str, check: &horde_plan::Check) -> Option<CheckProgram> {
        let (extractor, description) = match &check.source {
            CheckSource::Http(HttpSource::Status) => (Extractor::Status, "status".to_string()),
            CheckSource::Http(HttpSource::Header { name }) => match HeaderName::from_bytes(name.as_bytes()) {
                Ok(header) => (Extractor::Header(header), format!("header({name:?})")),
                Err(_) => {
                    self.errors
                        .push(PlanError::new(format!("{path}.source.name"), format!("{name:?} is not a header name")));
                    return None;
                }
            },
            CheckSource::Http(HttpSource::HeaderRegex { name, pattern, group }) => {
                let Ok(header) = HeaderName::from_bytes(name.as_bytes()) else {
                    self.errors
                        .push(PlanError::new(format!("{path}.source.name"), format!("{name:?} is not a header name")));
                    return None;
                };
                let (regex, group) = self.regex_group(path, pattern, *group)?;
                (Extractor::HeaderRegex { name: header, regex, group }, format!("header_regex({name:?}, {pattern:?})"))
            }
            CheckSource::Core(CoreSource::Substring { value }) => {
                (Extractor::Substring(value.clone()), format!("substring({value:?})"))
            }
            CheckSource::Core(CoreSource::Regex { pattern, group }) => {
                let (regex, group) = self.regex_group(path, pattern, *group)?;
                (Extractor::Regex { regex, group }, format!("regex({pattern:?})"))
            }
            CheckSource::Core(CoreSource::Css { selector, attribute }) => match scraper::Selector::parse(selector) {
                Ok(parsed) => {
                    let description = match attribute {
                        Some(a) => format!("css({selector:?}, {a:?})"),
                        None => format!("css({selector:?})"),
                    };
                    (Extractor::Css { selector: parsed, attribute: attribute.clone() }, description)
                }
                Err(err) => {
                    self.errors.push(PlanError::new(
                        format!("{path}.source.selector"),
                        format!("invalid CSS selector {selector:?}: {}", css_error(&err)),
                    ));
                    return None;
                }
            },
            CheckSource::Core(CoreSource::Jsonpath { path: query }) => match serde_json_path::JsonPath::parse(query) {
                Ok(parsed) => (Extractor::JsonPath(parsed), format!("jsonpath({query:?})")),
                Err(err) => {
                    self.errors.push(PlanError::new(format!("{path}.source.path"), format!("invalid JSONPath: {err}")));
                    return None;
                }
            },
            CheckSource::Core(CoreSource::Jmespath { expression }) => match jmespath::compile(expression) {
                Ok(compiled) => (Extractor::JmesPath(compiled), format!("jmespath({expression:?})")),
                Err(err) => {
                    self.errors
                        .push(PlanError::new(format!("{path}.source.expression"), format!("invalid JMESPath: {err}")));
                    return None;
                }
            },
            CheckSource::Core(CoreSource::Xpath { expression }) => {
                match crate::protocol::http::xpath::XPath::compile(expression) {
                    Ok(compiled) => (Extractor::XPath(compiled), format!("xpath({expression:?})")),
                    Err(err) => {
                        self.errors
                            .push(PlanError::new(format!("{path}.source.expression"), format!("invalid XPath: {err}")));
                        return None;
                    }
                }
            }
            CheckSource::Core(CoreSource::BodyString) => (Extractor::BodyString, "body_string".to_string()),
            CheckSource::Core(CoreSource::BodyBytes) => (Extractor::BodyBytes, "body_bytes".to_string()),
            CheckSource::Core(CoreSource::BodyLength) => (Extractor::BodyLength, "body_length".to_string()),
            CheckSource::Core(CoreSource::Md5) => (Extractor::Md5, "md5".to_string()),
            CheckSource::Core(CoreSource::Sha1) => (Extractor::Sha1, "sha1".to_string()),
            CheckSource::Core(CoreSource::Sha256) => (Extractor::Sha256, "sha256".to_string()),
            CheckSource::Http(HttpSource::CurrentLocation) => {
                (Extractor::CurrentLocation, "current_location".to_string())
            }
            CheckSource::Core(CoreSource::ResponseTimeInMillis) => {
                (Extractor::ResponseTimeInMillis, "response_time_in_millis".to_string())
            }
            CheckSource::Sql(SqlSource::RowCount) => (Extractor::RowCount, "row_count".to_string()),
            CheckSource::Sql(SqlSource::Column { name }) => {
                (Extractor::Column(name.clone()), format!("column({name:?})"))
            }
        };
        let description = match check.select {
            Select::First => description,
            Select::Nth { index } => format!("{description}.find({index})"),
            Select::All => format!("{description}.find_all"),
            Select::Count => format!("{description}.count"),
        };
        // Expected values and the default are templates: errors in them are the check's.
        let step_path = std::mem::replace(&mut self.current_path, path.to_string());
        let expected = |lowering: &mut Lowering, text: &str| Expected {
            template: lowering.template(text),
            source: text.to_string(),
        };
        let validation = match &check.validate {
            Validation::Exists => ValidationProgram::Exists,
            Validation::NotExists => ValidationProgram::NotExists,
            Validation::Is { value } => ValidationProgram::Is(expected(self, value)),
            Validation::Not { value } => ValidationProgram::Not(expected(self, value)),
            Validation::In { values } => ValidationProgram::In(values.iter().map(|v| expected(self, v)).collect()),
            Validation::Lt { value } => ValidationProgram::Compare(CompareOp::Lt, expected(self, value)),
            Validation::Lte { value } => ValidationProgram::Compare(CompareOp::Le, expected(self, value)),
            Validation::Gt { value } => ValidationProgram::Compare(CompareOp::Gt, expected(self, value)),
            Validation::Gte { value } => ValidationProgram::Compare(CompareOp::Ge, expected(self, value)),
        };
        let default = check.default.as_deref().map(|text| expected(self, text));
        self.current_path = step_path;
        Some(CheckProgram {
            extractor,
            select: check.select,
            transforms: check.transform.clone(),
            default,
            validation,
            optional: check.optional,
            save_as: check.save_as.as_deref().map(|name| self.slot(name)),
            description,
        })
    }
}

fn request_reads_headers(request: &horde_plan::Request) -> bool {
    request
        .checks
        .iter()
        .any(|c| matches!(c.source, CheckSource::Http(HttpSource::Header { .. } | HttpSource::HeaderRegex { .. })))
        || request.resources.iter().any(request_reads_headers)
}

fn steps_read_headers(steps: &[Step]) -> bool {
    let mut reads = false;
    Step::walk(steps, &mut |step| {
        reads |= match step {
            Step::Http(HttpStep::Request(request)) => request_reads_headers(request),
            Step::Http(HttpStep::Batch { requests }) => requests.iter().any(request_reads_headers),
            _ => false,
        }
    });
    reads
}

fn text_body(text: Template, content_type: Option<HeaderValue>) -> BodyProgram {
    match text.as_static() {
        Some(literal) => BodyProgram::Static { bytes: Bytes::from(literal.to_string()), content_type },
        None => BodyProgram::Raw { text, content_type },
    }
}

/// A CSS selector error in words. scraper's own text for the rarer errors is "Unexpected error
/// occurred. Please report this to the developer" with a debug dump; its variant names say it
/// better (`EmptySelector` -> "empty selector").
fn css_error(error: &scraper::error::SelectorErrorKind) -> String {
    use scraper::error::SelectorErrorKind;
    match error {
        SelectorErrorKind::UnexpectedSelectorParseError(kind) => {
            let debug = format!("{kind:?}");
            let (name, detail) =
                debug.split_once('(').map_or((debug.as_str(), ""), |(n, d)| (n, d.trim_end_matches(')')));
            let mut words = String::new();
            for (i, c) in name.chars().enumerate() {
                if c.is_uppercase() && i > 0 {
                    words.push(' ');
                }
                words.push(c.to_ascii_lowercase());
            }
            if detail.is_empty() {
                words
            } else {
                format!("{words} ({detail})")
            }
        }
        other => other.to_string().to_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_with(steps: &str) -> Plan {
        Plan::from_json(&format!(
            r#"{{"version": 1, "protocol": {{"base_url": "http://127.0.0.1:9/app/"}},
                "scenarios": [{{"name": "s", "steps": {steps},
                "injection": [{{"type": "at_once_users", "users": 1}}]}}]}}"#
        ))
        .unwrap()
    }

    #[test]
    fn static_urls_are_resolved_against_the_base_url_once() {
        let program =
            lower(&plan_with(r#"[{"type": "request", "name": "r", "method": "GET", "url": "items?x=1"}]"#)).unwrap();
        let StepProgram::Request(request) = &program.scenarios[0].steps[0] else { panic!() };
        let UrlProgram::Static(target) = &request.url else { panic!("static") };
        assert_eq!(target.origin_form, "/app/items?x=1");
        assert_eq!(&*target.authority, "127.0.0.1:9");
        assert_eq!(target.host_header, "127.0.0.1:9");
    }

    #[test]
    fn protocol_header_values_are_checked_once_under_their_own_path() {
        let mut plan = plan_with(
            r#"[{"type": "request", "name": "a", "method": "GET", "url": "/"},
                {"type": "request", "name": "b", "method": "GET", "url": "/", "headers": [{"name": "X", "value": "bad\u0001"}]}]"#,
        );
        plan.protocol.headers = vec![horde_plan::NameValue { name: "Y".into(), value: "bad\u{1}".into() }];
        plan.protocol.accept_encoding = "gzip\u{1}".into();
        let errors = lower(&plan).err().unwrap();
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            ["protocol.headers[0].value", "protocol.accept_encoding", "scenarios[0].steps[1].headers[0].value"]
        );
    }

    #[test]
    fn compile_errors_are_reported_with_paths() {
        let errors = lower(&plan_with(
            r#"[{"type": "request", "name": "r", "method": "GET", "url": "/",
                 "checks": [{"source": {"type": "regex", "pattern": "("}},
                            {"source": {"type": "css", "selector": "[[["}},
                            {"source": {"type": "jsonpath", "path": "$$$"}},
                            {"source": {"type": "regex", "pattern": "a", "group": 2}}],
                 "body": {"type": "multipart", "parts": [{"type": "raw_file", "name": "f", "path": "/nonexistent/file.txt"}]}}]"#,
        ))
        .err()
        .unwrap();
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            vec![
                "scenarios[0].steps[0].body.parts[0].path",
                "scenarios[0].steps[0].checks[0].source.pattern",
                "scenarios[0].steps[0].checks[1].source.selector",
                "scenarios[0].steps[0].checks[2].source.path",
                "scenarios[0].steps[0].checks[3].source.group",
            ]
        );
        assert!(errors[0].message.contains("/nonexistent/file.txt"));
    }

    #[test]
    fn templates_share_slots_by_name() {
        let program = lower(&plan_with(
            r#"[{"type": "request", "name": "r", "method": "GET", "url": "/${a}/${b}",
                 "checks": [{"source": {"type": "status"}, "save_as": "a"}, {"source": {"type": "status"}, "save_as": "b"}]}]"#,
        ))
        .unwrap();
        assert_eq!(program.variables, vec!["a".to_string(), "b".to_string()]);
        let StepProgram::Request(request) = &program.scenarios[0].steps[0] else { panic!() };
        let UrlProgram::Dynamic { template, .. } = &request.url else { panic!("dynamic") };
        let mut session = crate::session::Session {
            variables: vec![Some("x".into()), None],
            rng: rand::SeedableRng::seed_from_u64(1),
            user_id: 0,
            scenario: "s".into(),
            extra: None,
        };
        assert_eq!(template.render(&mut session), Err(crate::session::expression::EvalError::Undefined(1)));
        session.variables[1] = Some("y".into());
        assert_eq!(template.render(&mut session).unwrap(), "/x/y");
    }

    #[test]
    fn a_variable_never_set_is_named_where_it_is_read() {
        let errors = lower(&plan_with(
            r#"[{"type": "request", "name": "r", "method": "GET", "url": "/${usr}",
                 "checks": [{"source": {"type": "status"}, "save_as": "user"}]}]"#,
        ))
        .err()
        .unwrap();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].path, "scenarios[0].steps[0]");
        assert!(errors[0].message.starts_with("${usr} is never set"), "{}", errors[0].message);
        assert!(errors[0].message.contains("the plan sets user"), "{}", errors[0].message);
    }

    #[test]
    fn groups_prefix_request_rows() {
        let program = lower(&plan_with(
            r#"[{"type": "group", "name": "g", "steps": [
                 {"type": "group", "name": "h", "steps": [
                   {"type": "request", "name": "r", "method": "GET", "url": "/"}]}]}]"#,
        ))
        .unwrap();
        assert_eq!(program.groups, vec![Arc::<str>::from("g"), Arc::<str>::from("g / h")]);
        let StepProgram::Group { body, .. } = &program.scenarios[0].steps[0] else { panic!() };
        let StepProgram::Group { body, .. } = &body[0] else { panic!() };
        let StepProgram::Request(request) = &body[0] else { panic!() };
        assert_eq!(&*request.row, "g / h / r");
    }
}
