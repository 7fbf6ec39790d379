//! The registry of protocols in the plan: [`Step`] joins the core's steps and each protocol's.
//!
//! A protocol's steps, settings and validation live in its own module here. Adding one adds a
//! module, a `mod` line, an arm of [`Step`] and its `From`, and an arm in each `match` of this
//! file; nothing else in the crate names it.
//!
//! Plan format 1 is one flat list of steps tagged by `type`, and stays so: [`Step`] is untagged
//! over the families, each of which is internally tagged on `type` with unknown fields denied.
//! A tag belongs to exactly one family (a test checks it), so the first family that accepts a
//! step is the only one that can. The JSON Schema is written by hand to keep the flat `oneOf`
//! in plan format 1's order: the schema check names errors by the step's `type` from it.

pub mod couchdb;
pub mod cql;
pub mod http;
pub mod rows;
pub mod socket;
pub mod sql;
pub mod ycsb;

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

use crate::step::{Child, CoreStep};
use crate::validate::Validator;
use crate::CoreSource;
use crate::Plan;
use couchdb::CouchdbStep;
use cql::CqlStep;
use http::{HttpSource, HttpStep};
use rows::RowsSource;
use socket::SocketStep;
use sql::SqlStep;

/// One element of a scenario's chain.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(untagged)]
pub enum Step {
    Core(CoreStep),
    Http(HttpStep),
    Socket(SocketStep),
    Couchdb(CouchdbStep),
    Sql(SqlStep),
    Cql(CqlStep),
}

impl Step {
    /// The steps nested in this one (a loop's body, a switch's cases): a protocol's steps have
    /// none.
    pub fn children(&self) -> impl Iterator<Item = Child<'_>> {
        let core = match self {
            Step::Core(step) => Some(step),
            Step::Http(_) | Step::Socket(_) | Step::Couchdb(_) | Step::Sql(_) | Step::Cql(_) => None,
        };
        core.into_iter().flat_map(CoreStep::children)
    }

    /// Every step of `steps`, depth first, each before the steps nested in it.
    pub fn walk<'a>(steps: &'a [Step], visit: &mut impl FnMut(&'a Step)) {
        for step in steps {
            visit(step);
            for child in step.children() {
                Step::walk(child.steps, visit);
            }
        }
    }
}

/// A protocol step's own fields: the protocol's validation, with paths.
pub(crate) fn validate_step(v: &mut Validator<'_>, path: &str, step: &Step) {
    match step {
        Step::Core(_) => {}
        Step::Http(step) => http::validate_step(v, path, step),
        Step::Socket(step) => socket::validate_step(v, path, step),
        Step::Couchdb(step) => couchdb::validate_step(v, path, step),
        Step::Sql(step) => sql::validate_step(v, path, step),
        Step::Cql(step) => cql::validate_step(v, path, step),
    }
}

/// Each protocol's plan-wide settings (`protocol.*`, `databases`, `cql`).
pub(crate) fn validate_settings(v: &mut Validator<'_>, plan: &Plan) {
    http::validate_settings(v, plan);
    sql::validate_databases(v, plan);
    cql::validate_settings(v, plan);
}

impl From<CoreStep> for Step {
    fn from(step: CoreStep) -> Step {
        Step::Core(step)
    }
}
impl From<HttpStep> for Step {
    fn from(step: HttpStep) -> Step {
        Step::Http(step)
    }
}
impl From<SocketStep> for Step {
    fn from(step: SocketStep) -> Step {
        Step::Socket(step)
    }
}
impl From<CouchdbStep> for Step {
    fn from(step: CouchdbStep) -> Step {
        Step::Couchdb(step)
    }
}
impl From<SqlStep> for Step {
    fn from(step: SqlStep) -> Step {
        Step::Sql(step)
    }
}
impl From<CqlStep> for Step {
    fn from(step: CqlStep) -> Step {
        Step::Cql(step)
    }
}

/// The steps' `type`s in plan format 1's order, the order of the schema's `oneOf` (and so of
/// the schema check's "one of: ..." list). A new protocol's steps follow them, in the order of
/// [`Step`]'s arms.
pub(crate) const PLAN_V1_STEP_ORDER: [&str; 45] = [
    "request",
    "pause",
    "pause_uniform",
    "pause_exponential",
    "pause_normal",
    "pause_template",
    "pace",
    "repeat",
    "during",
    "group",
    "batch",
    "ws_connect",
    "ws_send",
    "ws_await",
    "ws_close",
    "sse_connect",
    "sse_await",
    "sse_close",
    "feed",
    "set",
    "unset",
    "do_if",
    "do_switch",
    "random_switch",
    "uniform_random_switch",
    "round_robin_switch",
    "foreach",
    "as_long_as",
    "do_while",
    "try_max",
    "eventually",
    "exit_here_if_failed",
    "exit_here",
    "exit_block_on_fail",
    "session_function",
    "stop_load_generator",
    "add_cookie",
    "get_cookie",
    "flush_cookie_jar",
    "flush_session_cookies",
    "couchdb_bulk_insert",
    "couchdb_crud",
    "sql_workload",
    "sql",
    "sql_transaction",
];

impl JsonSchema for Step {
    fn schema_name() -> Cow<'static, str> {
        "Step".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        // Each family's schema is built in place, not referenced: its branches join one list,
        // and the types nested in them (Request, Check...) are defined as usual.
        let families = [
            CoreStep::json_schema(generator),
            HttpStep::json_schema(generator),
            SocketStep::json_schema(generator),
            CouchdbStep::json_schema(generator),
            SqlStep::json_schema(generator),
            CqlStep::json_schema(generator),
        ];
        let branches = tagged_branches(families, &PLAN_V1_STEP_ORDER);
        schemars::json_schema!({
            "description": "One element of a scenario's chain.",
            "oneOf": branches,
        })
    }
}

/// The `oneOf` branches of internally tagged families, as one list in `order` of their tags;
/// a tag not in `order` follows, in the families' order.
pub(crate) fn tagged_branches<const N: usize>(families: [Schema; N], order: &[&str]) -> Vec<serde_json::Value> {
    let mut branches: Vec<serde_json::Value> = Vec::new();
    for family in families {
        let mut family = family.to_value();
        match family.get_mut("oneOf").map(serde_json::Value::take) {
            Some(serde_json::Value::Array(family_branches)) => branches.extend(family_branches),
            _ => panic!("a family of tagged variants has a oneOf: {family}"),
        }
    }
    let rank = |branch: &serde_json::Value| {
        let tag = tag_of(branch);
        order.iter().position(|known| *known == tag).unwrap_or(order.len())
    };
    branches.sort_by_key(rank);
    branches
}

/// The `type` constant of one branch of an internally tagged enum's schema.
pub(crate) fn tag_of(branch: &serde_json::Value) -> &str {
    branch.pointer("/properties/type/const").and_then(serde_json::Value::as_str).unwrap_or_default()
}

/// Where a check reads its values: the core's sources (the body, the response time), or a
/// protocol's own (an HTTP status), or a result's rows (SQL's and CQL's). Untagged over families, as [`Step`].
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(untagged)]
pub enum CheckSource {
    Core(CoreSource),
    Http(HttpSource),
    Rows(RowsSource),
}

impl CheckSource {
    /// Whether the source can find more than one value, so `select` applies.
    pub fn is_multivalued(&self) -> bool {
        match self {
            CheckSource::Core(source) => source.is_multivalued(),
            CheckSource::Http(source) => matches!(source, HttpSource::Header { .. } | HttpSource::HeaderRegex { .. }),
            CheckSource::Rows(source) => matches!(source, RowsSource::Column { .. }),
        }
    }

    /// Whether the source reads the body alone (a socket's message has nothing else): no
    /// status, header, location, response time or rows.
    pub fn reads_body_only(&self) -> bool {
        matches!(self, CheckSource::Core(source) if *source != CoreSource::ResponseTimeInMillis)
    }
}

impl From<CoreSource> for CheckSource {
    fn from(source: CoreSource) -> CheckSource {
        CheckSource::Core(source)
    }
}
impl From<HttpSource> for CheckSource {
    fn from(source: HttpSource) -> CheckSource {
        CheckSource::Http(source)
    }
}
impl From<RowsSource> for CheckSource {
    fn from(source: RowsSource) -> CheckSource {
        CheckSource::Rows(source)
    }
}

/// The check sources' `type`s in plan format 1's order (see [`PLAN_V1_STEP_ORDER`]).
pub(crate) const PLAN_V1_CHECK_SOURCE_ORDER: [&str; 18] = [
    "status",
    "header",
    "substring",
    "regex",
    "css",
    "jsonpath",
    "jmespath",
    "xpath",
    "body_string",
    "body_bytes",
    "body_length",
    "md5",
    "sha1",
    "sha256",
    "current_location",
    "response_time_in_millis",
    "row_count",
    "column",
];

impl JsonSchema for CheckSource {
    fn schema_name() -> Cow<'static, str> {
        "CheckSource".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let families = [
            CoreSource::json_schema(generator),
            HttpSource::json_schema(generator),
            RowsSource::json_schema(generator),
        ];
        let branches = tagged_branches(families, &PLAN_V1_CHECK_SOURCE_ORDER);
        schemars::json_schema!({ "oneOf": branches })
    }
}
