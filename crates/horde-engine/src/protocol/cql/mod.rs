//! CQL: statements on an Apache Cassandra (or ScyllaDB) cluster through ScyllaDB's driver (the
//! maintained async Rust one; it speaks to Cassandra as to ScyllaDB). Each worker thread holds
//! one driver session, which keeps its own connections to every node and routes a statement to
//! a replica of its partition (token-aware), and prepares each statement once (`run.rs`). A
//! parameter is converted from its text to its marker's column type (`values.rs`); the
//! database's errors become stable kinds (`error.rs`).

mod error;
pub(crate) mod lower;
mod run;
mod tls;
mod values;
pub(crate) mod ycsb;

use crate::checks::CheckProgram;
use crate::protocol::rows::RowsExtractor;
use crate::session::expression::Template;
use horde_plan::{Consistency, CqlBatchKind, SerialConsistency};
use std::time::Duration;

pub(crate) use run::{run_step, UserCql, WorkerCql};

/// A CQL step as a user runs it.
pub enum CqlStepProgram {
    Statement(Box<CqlStatementProgram>),
    Batch(Box<CqlBatchProgram>),
    /// One operation of a YCSB workload.
    Ycsb(Box<ycsb::YcsbProgram>),
}

/// A statement the workers prepare.
pub struct Prepared {
    /// Its index among the plan's statements: each worker prepares it once, in this slot.
    pub id: usize,
    pub cql: String,
    pub params: Vec<Template>,
    /// Rows per page, when the result is fetched in pages.
    pub page_size: Option<u32>,
}

/// A CQL statement as a user runs it.
pub struct CqlStatementProgram {
    pub row_id: usize,
    pub statement: Prepared,
    pub consistency: Option<Consistency>,
    pub serial_consistency: Option<SerialConsistency>,
    pub asynchronous: bool,
    pub checks: Vec<CheckProgram<RowsExtractor>>,
}

/// A batch of writes as a user runs it.
pub struct CqlBatchProgram {
    pub row_id: usize,
    pub kind: CqlBatchKind,
    pub statements: Vec<Prepared>,
    pub consistency: Option<Consistency>,
    pub serial_consistency: Option<SerialConsistency>,
    pub checks: Vec<CheckProgram<RowsExtractor>>,
}

/// What CQL needs for the whole run: the cluster, and how many statements each worker prepares.
pub struct CqlProgram {
    pub cluster: Option<horde_plan::CqlCluster>,
    pub statements: usize,
    pub request_timeout: Duration,
}

/// The variables a CQL step saves: its checks'.
pub(crate) fn saved_variables(step: &horde_plan::CqlStep, save: &mut dyn FnMut(&str)) {
    let checks = match step {
        horde_plan::CqlStep::Cql(statement) => &statement.checks,
        horde_plan::CqlStep::CqlBatch(batch) => &batch.checks,
        horde_plan::CqlStep::CqlYcsb(_) => return,
    };
    checks.iter().filter_map(|c| c.save_as.as_deref()).for_each(save);
}

/// Whether the plan's cluster answers, before anything is measured: a wrong address, keyspace
/// or password is its own message (exit 3), not a run of failures.
pub(crate) fn preflight(program: &crate::lower::Program) -> Result<(), String> {
    let Some(cluster) = &program.protocols.cql.cluster else { return Ok(()) };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime
        .block_on(async {
            let session = run::connect(cluster, program.protocols.cql.request_timeout).await?;
            session
                .query_unpaged("SELECT release_version FROM system.local", ())
                .await
                .map_err(|e| error::describe_execution(&e))?;
            Ok::<(), String>(())
        })
        .map_err(|message| {
            format!(
                "cannot connect to the CQL cluster at {} (before the run): {message}",
                cluster.contact_points.join(", ")
            )
        })
}
