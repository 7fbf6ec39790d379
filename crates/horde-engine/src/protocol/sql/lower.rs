//! Lowering SQL's steps and the plan's databases: URLs are parsed once (steps naming one URL
//! share it), placeholders are translated to each database's dialect, and each `horde sql`
//! phase gets the progress the collector reads.

use super::database::{Database, DatabaseKind};
use super::statement::{ScenarioDatabase, SqlStatementProgram, SqlTransactionProgram};
use super::workload::{PhaseProgress, PhaseShared, SqlWorkloadProgram};
use super::{translate_placeholders, SqlProgram, SqlStepProgram};
use crate::checks::{CheckProgram, Extractor};
use crate::lower::{LoweringContext, StepAt};
use crate::protocol::rows::RowsExtractor;
use horde_plan::{Plan, SqlStep};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub(crate) struct SqlLowering {
    /// The plan's databases (`sql` steps name them), their URLs parsed.
    databases: Vec<ScenarioDatabase>,
    /// Database URLs of `sql_workload` steps, parsed once each.
    workload_databases: HashMap<String, Arc<Database>>,
    phases: Vec<PhaseProgress>,
}

impl SqlLowering {
    /// The plan's databases, their URLs parsed once (a bad one is an error at its path).
    pub(crate) fn new(plan: &Plan, cx: &mut LoweringContext) -> SqlLowering {
        let mut databases = Vec::with_capacity(plan.databases.len());
        for (i, database) in plan.databases.iter().enumerate() {
            let parsed = match Database::parse(&database.url, cx.base_dir.as_deref()) {
                Ok(parsed) => parsed,
                Err(message) => {
                    cx.error(format!("databases[{i}].url"), message);
                    Database::sqlite(PathBuf::from(":memory:"))
                }
            };
            databases.push(ScenarioDatabase {
                name: database.name.clone(),
                database: Arc::new(parsed),
                pool_size: database.pool_size,
            });
        }
        SqlLowering { databases, workload_databases: HashMap::new(), phases: Vec::new() }
    }

    pub(crate) fn lower_step(&mut self, cx: &mut LoweringContext, at: StepAt, step: &SqlStep) -> SqlStepProgram {
        match step {
            SqlStep::SqlWorkload(step) => SqlStepProgram::Workload(Box::new(self.workload(cx, at, step))),
            SqlStep::Sql(step) => SqlStepProgram::Statement(Box::new(self.statement(cx, at, step))),
            SqlStep::SqlTransaction(step) => SqlStepProgram::Transaction(Box::new(SqlTransactionProgram {
                row_id: cx.row(at.row_name(step.action.statement())),
                database: self.database_index(step.database.as_deref()),
                action: step.action,
            })),
        }
    }

    /// `timeout`: how long a statement may take. Plan format 1 has one request timeout, the
    /// HTTP protocol's, and statements have always obeyed it.
    pub(crate) fn finish(self, plan: &Plan) -> SqlProgram {
        SqlProgram {
            databases: self.databases,
            phases: self.phases,
            statement_timeout: Duration::from_millis(plan.protocol.request_timeout_ms),
        }
    }

    /// A phase of `horde sql`. Steps naming one database URL share its parsed form: SQLite's
    /// connections to one file then take turns writing (see `Database::Sqlite`).
    fn workload(&mut self, cx: &mut LoweringContext, at: StepAt, step: &horde_plan::SqlWorkload) -> SqlWorkloadProgram {
        let database = match self.workload_databases.get(&step.url) {
            Some(database) => database.clone(),
            None => match Database::parse(&step.url, cx.base_dir.as_deref()) {
                Ok(database) => {
                    let database = Arc::new(database);
                    self.workload_databases.insert(step.url.clone(), database.clone());
                    database
                }
                Err(message) => {
                    cx.error(format!("{}.url", at.path), message);
                    Arc::new(Database::sqlite(PathBuf::from(":memory:")))
                }
            },
        };
        let name = at.row_name(&step.name);
        let shared = Arc::new(PhaseShared::new(step.threads.max(1)));
        self.phases.push(PhaseProgress::new(name.clone(), step.rows, shared.clone()));
        SqlWorkloadProgram {
            row_id: cx.row(name.clone()),
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

    /// A step's database: the one it names, or the plan's only one. Validation names a bad
    /// reference; the first database stands in for it.
    fn database_index(&self, name: Option<&str>) -> usize {
        name.and_then(|name| self.databases.iter().position(|known| known.name == name)).unwrap_or(0)
    }

    fn statement(
        &mut self,
        cx: &mut LoweringContext,
        at: StepAt,
        step: &horde_plan::SqlStatement,
    ) -> SqlStatementProgram {
        let path = at.path;
        let database = self.database_index(step.database.as_deref());
        let kind = self.databases.get(database).map_or(DatabaseKind::Sqlite, |d| d.database.kind());
        let (sql, bind_order) = translate_placeholders(&step.sql, kind, step.params.len());
        let params = step.params.iter().map(|p| cx.template(p)).collect();
        let checks: Vec<CheckProgram<RowsExtractor>> = step
            .checks
            .iter()
            .enumerate()
            .filter_map(|(i, check)| cx.check(&format!("{path}.checks[{i}]"), check))
            .collect();
        let mut columns: Vec<String> = Vec::new();
        for check in &checks {
            if let Extractor::Own(RowsExtractor::Column(name)) = &check.extractor {
                if !columns.contains(name) {
                    columns.push(name.clone());
                }
            }
        }
        SqlStatementProgram {
            row_id: cx.row(at.row_name(&step.name)),
            database,
            kind: step.kind,
            sql,
            params,
            bind_order,
            checks,
            columns,
        }
    }
}
