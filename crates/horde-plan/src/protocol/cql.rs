//! CQL: statements on an Apache Cassandra (or ScyllaDB) cluster, with checks on their rows. The
//! plan's `cql` says where the cluster is and how statements run by default; `cql` steps run
//! one statement each, prepared once per connection, synchronously or sent asynchronously (as a
//! driver's `executeAsync`: the user goes on, the statement is still timed and counted).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::rows::RowsSource;
use crate::validate::Validator;
use crate::{CheckSource, CoreSource, Plan};

/// CQL's steps: one family of [`crate::Step`].
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum CqlStep {
    /// A CQL statement on the plan's cluster (`cql`), with checks on its rows (`row_count`,
    /// `column`): see docs/cql.md.
    Cql(CqlStatement),
    /// Writes sent together as one batch: logged (all or none), unlogged or of counters.
    CqlBatch(CqlBatch),
    /// One operation of a YCSB core workload (`horde cql`): see docs/cql.md.
    CqlYcsb(super::ycsb::YcsbStep),
}

/// A CQL statement: a query or a write, its parameters bound to its `?` markers in order.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CqlStatement {
    /// Its statistics row.
    pub name: String,
    /// One statement, its parameters written `?` (bound in order) as in every CQL driver.
    pub cql: String,
    /// Templates, one per `?`, converted to each marker's column type (an int, a uuid, a
    /// timestamp in milliseconds or ISO 8601...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub params: Vec<String>,
    /// This statement's consistency; without it, the cluster's (`cql.consistency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<Consistency>,
    /// The consistency of a lightweight transaction's Paxos phase (`IF ...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial_consistency: Option<SerialConsistency>,
    /// Sent without waiting for the answer, as `executeAsync`: the user goes on at once, and
    /// the statement is timed and counted when its answer comes (a user waits for its
    /// statements still out before it ends).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub asynchronous: bool,
    /// Rows per page: the query's result comes in pages of this many rows, each a round trip,
    /// all of them fetched and timed as one (without it, in one page, however large).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<crate::Check>,
}

/// Writes sent together, timed as one on the batch's row.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CqlBatch {
    /// Its statistics row.
    pub name: String,
    #[serde(default)]
    pub kind: CqlBatchKind,
    pub statements: Vec<CqlBatchStatement>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<Consistency>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial_consistency: Option<SerialConsistency>,
    /// Checks on the batch's answer: a conditional batch's `[applied]` row.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<crate::Check>,
}

/// One write of a batch, its parameters bound to its `?` markers in order.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CqlBatchStatement {
    pub cql: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub params: Vec<String>,
}

/// CQL's kinds of batch.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum CqlBatchKind {
    /// Written to the batch log first: all of it is applied, or none.
    #[default]
    Logged,
    /// Sent as is: no atomicity across partitions, less work for the coordinator.
    Unlogged,
    /// Counter updates only.
    Counter,
}

/// How many replicas must answer, as CQL names the levels.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Consistency {
    Any,
    One,
    Two,
    Three,
    Quorum,
    All,
    LocalQuorum,
    EachQuorum,
    LocalOne,
    Serial,
    LocalSerial,
}

/// The consistency of a lightweight transaction's Paxos phase.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SerialConsistency {
    Serial,
    LocalSerial,
}

/// The Cassandra cluster that `cql` steps run on.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CqlCluster {
    /// Nodes to reach first, `host:port` (port 9042 when left out); the driver learns the rest
    /// of the cluster from them.
    pub contact_points: Vec<String>,
    /// The keyspace statements use when they name none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keyspace: Option<String>,
    /// The datacenter whose nodes are preferred (`LOCAL_*` consistencies are counted in it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_datacenter: Option<String>,
    /// Password authentication (Cassandra's PasswordAuthenticator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// Statements' consistency unless a statement sets its own: LOCAL_ONE, the drivers' default.
    #[serde(default = "default_consistency")]
    pub consistency: Consistency,
    /// How long a statement may take before it fails with `request_timeout`.
    #[serde(default = "default_cql_timeout_ms")]
    pub request_timeout_ms: u64,
    /// TLS to every node (Cassandra's `client_encryption_options`); cleartext when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<CqlTls>,
    /// Connections each worker thread keeps to each node (the driver's pool); 1 when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_size_per_host: Option<u32>,
}

/// How connections to the nodes are encrypted and verified. A node is verified by its IP
/// address (the driver connects to the addresses the cluster gives), which its certificate
/// must list.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CqlTls {
    /// Verify each node's certificate against the system's trusted roots (and `ca_file`). Off,
    /// any certificate is accepted.
    #[serde(default = "default_verify")]
    pub verify: bool,
    /// A PEM file of certificate authorities to trust besides the system's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
}

fn default_verify() -> bool {
    true
}

fn default_consistency() -> Consistency {
    Consistency::LocalOne
}

fn default_cql_timeout_ms() -> u64 {
    10_000
}

// Validation: every problem with its plan path, in the order the plan reads.

pub(crate) fn validate_step(v: &mut Validator, path: &str, step: &CqlStep) {
    let step = match step {
        CqlStep::Cql(step) => step,
        CqlStep::CqlBatch(batch) => return validate_batch(v, path, batch),
        CqlStep::CqlYcsb(step) => {
            cluster_named(v, path);
            return super::ycsb::validate_step(v, path, step);
        }
    };
    if step.name.trim().is_empty() {
        v.error(format!("{path}.name"), "a statement needs a name (its row)");
    }
    cluster_named(v, path);
    if step.cql.trim().is_empty() {
        v.error(format!("{path}.cql"), "no statement");
    }
    statement_params(v, path, &step.cql, &step.params);
    if step.asynchronous && !step.checks.is_empty() {
        v.error(
            format!("{path}.checks"),
            "an asynchronous statement is not checked (the user has gone on): read the rows back with a query inside eventually(...)",
        );
    }
    match step.page_size {
        Some(0) => v.error(format!("{path}.page_size"), "must be at least 1 row"),
        Some(size) if size > i32::MAX as u32 => v.error(format!("{path}.page_size"), "at most 2147483647 rows"),
        Some(_) if step.asynchronous => {
            v.error(format!("{path}.page_size"), "an asynchronous statement's rows are not read: no pages to fetch")
        }
        _ => {}
    }
    rows_checks(v, path, &step.checks);
}

fn validate_batch(v: &mut Validator, path: &str, batch: &CqlBatch) {
    if batch.name.trim().is_empty() {
        v.error(format!("{path}.name"), "a batch needs a name (its row)");
    }
    cluster_named(v, path);
    if batch.statements.is_empty() {
        v.error(format!("{path}.statements"), "a batch needs at least one statement");
    }
    for (i, statement) in batch.statements.iter().enumerate() {
        let path = format!("{path}.statements[{i}]");
        if statement.cql.trim().is_empty() {
            v.error(format!("{path}.cql"), "no statement");
        }
        statement_params(v, &path, &statement.cql, &statement.params);
    }
    rows_checks(v, path, &batch.checks);
}

fn cluster_named(v: &mut Validator, path: &str) {
    if v.plan.cql.is_none() {
        v.error(
            path,
            "the plan has no CQL cluster: add `cql` (in Python, setup(..., protocol=[cql.cluster(\"127.0.0.1:9042\")]))",
        );
    }
}

/// As many params as `?` markers, each a template.
fn statement_params(v: &mut Validator, path: &str, cql: &str, params: &[String]) {
    let markers = bind_markers(cql);
    if markers != params.len() {
        v.error(
            format!("{path}.params"),
            format!("the statement has {markers} ? marker(s) but {} param(s)", params.len()),
        );
    }
    for (i, param) in params.iter().enumerate() {
        v.template(&format!("{path}.params[{i}]"), param);
    }
}

/// Checks of a result of rows.
fn rows_checks(v: &mut Validator, path: &str, checks: &[crate::Check]) {
    for (i, check) in checks.iter().enumerate() {
        let path = format!("{path}.checks[{i}]");
        match &check.source {
            CheckSource::Rows(RowsSource::Column { name }) if name.trim().is_empty() => {
                v.error(format!("{path}.source.name"), "a column check needs a column name");
            }
            CheckSource::Rows(_) | CheckSource::Core(CoreSource::ResponseTimeInMillis) => {}
            _ => v.error(
                format!("{path}.source"),
                "a statement's result is checked with row_count, column or response_time_in_millis",
            ),
        }
        v.check(&path, check);
    }
}

pub(crate) fn validate_settings(v: &mut Validator, plan: &Plan) {
    let Some(cluster) = &plan.cql else { return };
    if cluster.contact_points.is_empty() {
        v.error("cql.contact_points", "name at least one node: \"127.0.0.1:9042\"");
    }
    for (i, point) in cluster.contact_points.iter().enumerate() {
        if let Some(problem) = contact_point_problem(point) {
            v.error(format!("cql.contact_points[{i}]"), format!("{point:?}: {problem}"));
        }
    }
    if cluster.user.is_some() != cluster.password.is_some() {
        v.error("cql.password", "give both a user and a password, or neither");
    }
    if cluster.request_timeout_ms == 0 {
        v.error("cql.request_timeout_ms", "must be more than 0");
    }
    if cluster.pool_size_per_host == Some(0) {
        v.error("cql.pool_size_per_host", "must be at least 1 (connections to each node per worker thread)");
    }
    if let Some(CqlTls { verify: false, ca_file: Some(_) }) = &cluster.tls {
        v.error("cql.tls.ca_file", "a CA file is for verifying certificates: not with verify false");
    }
}

/// What is wrong with a contact point, if anything: it is `host` or `host:port`.
fn contact_point_problem(point: &str) -> Option<&'static str> {
    let point = point.trim();
    if point.is_empty() {
        return Some("empty");
    }
    if point.contains("://") {
        return Some("a node is host:port, not a URL");
    }
    match point.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(':') && !host.is_empty() => {
            port.parse::<u16>().is_err().then_some("the port is not a number from 1 to 65535")
        }
        _ => None,
    }
}

/// The `?` bind markers of a statement, outside its string literals ('...'), quoted names
/// ("...") and comments.
pub fn bind_markers(cql: &str) -> usize {
    let mut count = 0;
    let mut chars = cql.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                // A doubled quote inside stays inside.
                while let Some(inner) = chars.next() {
                    if inner == c {
                        if chars.peek() == Some(&c) {
                            chars.next();
                        } else {
                            break;
                        }
                    }
                }
            }
            '-' if chars.peek() == Some(&'-') => {
                chars.by_ref().find(|&c| c == '\n');
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for inner in chars.by_ref() {
                    if last == '*' && inner == '/' {
                        break;
                    }
                    last = inner;
                }
            }
            '?' => count += 1,
            _ => {}
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_in_literals_and_comments_are_not_counted() {
        assert_eq!(bind_markers("SELECT * FROM t WHERE a = ? AND b = ?"), 2);
        assert_eq!(bind_markers("INSERT INTO t (a, b) VALUES ('?', ?) -- ?"), 1);
        assert_eq!(bind_markers("SELECT \"q?\" FROM t /* ? */ WHERE a = 'it''s ?' AND b = ?"), 1);
    }

    #[test]
    fn contact_points_are_host_and_port() {
        assert_eq!(contact_point_problem("127.0.0.1:9042"), None);
        assert_eq!(contact_point_problem("cassandra-1"), None);
        assert!(contact_point_problem("127.0.0.1:90420").is_some());
        assert!(contact_point_problem("cql://127.0.0.1").is_some());
    }
}
