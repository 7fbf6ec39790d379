//! SQL inside scenarios: a virtual user's statements (`sql` steps) and transactions
//! (`sql_transaction` steps) on the plan's databases, each timed on its row like a request,
//! its result checked by the core's checks through [`StatementResult`].
//!
//! Connections: without a pool, each user opens its own at its first statement on a database
//! and keeps it until it ends. With `pool_size`, the users of a worker share a pool of
//! connections (the plan's size split between the workers, at least one each): a statement
//! takes one, waiting when all are busy (that wait is in its latency, as in an application),
//! and gives it back; a transaction keeps it from `begin` to `commit` or `rollback`.

use super::connection::{Connection, Param, StatementResult};
use super::database::{Database, DatabaseKind};
use super::error::SqlError;
use crate::checks::{run_checks_on, CheckProgram, CheckSubject};
use crate::failure::Failure;
use crate::protocol::rows::RowsExtractor;
use crate::session::expression::Template;
use crate::session::Value;
use crate::user::{Flow, VirtualUser};
use horde_metrics::RequestTiming;
use horde_plan::{SqlStatementKind, SqlTransactionAction};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use tokio::time::Instant;

/// One of the plan's databases, as scenarios use it.
pub struct ScenarioDatabase {
    pub name: String,
    pub database: Arc<Database>,
    /// Connections shared by the users, across the run; `None`: one per user.
    pub pool_size: Option<u32>,
}

/// A statement as a user runs it: its text in the database's placeholder style, and which
/// rendered parameter goes to each placeholder.
pub struct SqlStatementProgram {
    pub row_id: usize,
    /// Index into the program's databases.
    pub database: usize,
    pub kind: SqlStatementKind,
    pub sql: String,
    pub params: Vec<Template>,
    /// For each placeholder the driver binds, in its order, the index of its parameter
    /// (MySQL's `?` are positional: `$2 ... $1 ... $2` binds params 1, 0, 1).
    pub bind_order: Vec<usize>,
    pub checks: Vec<CheckProgram<RowsExtractor>>,
    /// The columns the checks read: only these are converted to text.
    pub columns: Vec<String>,
}

pub struct SqlTransactionProgram {
    pub row_id: usize,
    pub database: usize,
    pub action: SqlTransactionAction,
}

/// The statement in the database's own placeholder style, and the parameter each of its
/// placeholders takes. PostgreSQL reads `$n` itself; SQLite gets `?n`; MySQL gets `?`, bound
/// in the order they appear.
pub fn translate_placeholders(sql: &str, kind: DatabaseKind, params: usize) -> (String, Vec<usize>) {
    let placeholders = horde_plan::sql_placeholders(sql);
    let in_order = || (0..params).collect();
    match kind {
        DatabaseKind::Postgres => (sql.to_string(), in_order()),
        DatabaseKind::Sqlite | DatabaseKind::MySql => {
            let mut translated = String::with_capacity(sql.len());
            let mut order = Vec::with_capacity(placeholders.len());
            let mut copied = 0;
            for placeholder in &placeholders {
                translated.push_str(&sql[copied..placeholder.range.start]);
                translated.push('?');
                if kind == DatabaseKind::Sqlite {
                    translated.push_str(&placeholder.number.to_string());
                }
                order.push(placeholder.number.saturating_sub(1) as usize);
                copied = placeholder.range.end;
            }
            translated.push_str(&sql[copied..]);
            match kind {
                DatabaseKind::MySql => (translated, order),
                _ => (translated, in_order()),
            }
        }
    }
}

/// A worker's share of a database's pool.
pub struct SqlPool {
    database: Arc<Database>,
    idle: RefCell<Vec<Connection>>,
    free: tokio::sync::Semaphore,
}

impl SqlPool {
    fn new(database: Arc<Database>, size: usize) -> SqlPool {
        SqlPool { database, idle: RefCell::new(Vec::new()), free: tokio::sync::Semaphore::new(size) }
    }

    /// A connection: an idle one, or a new one while the pool is not full; otherwise the first
    /// one given back.
    async fn take(&self) -> Result<Connection, SqlError> {
        self.free.acquire().await.expect("the pool's semaphore is never closed").forget();
        if let Some(connection) = self.idle.borrow_mut().pop() {
            return Ok(connection);
        }
        Connection::connect(&self.database).await.inspect_err(|_| self.free.add_permits(1))
    }

    /// Gives a connection back: kept for the next statement, or dropped (`None`: it broke, or
    /// its user ended inside a transaction) so that a fresh one takes its place.
    fn give_back(&self, connection: Option<Connection>) {
        if let Some(connection) = connection {
            self.idle.borrow_mut().push(connection);
        }
        self.free.add_permits(1);
    }
}

/// A worker's pools, one per pooled database, made at first use.
#[derive(Default)]
pub struct WorkerPools {
    pools: RefCell<Vec<Option<Rc<SqlPool>>>>,
}

/// A user's link to one database: the connection it holds (its own, or a pooled one during a
/// transaction), and whether a transaction is open.
#[derive(Default)]
pub struct SqlLink {
    connection: Option<Connection>,
    pool: Option<Rc<SqlPool>>,
    in_transaction: bool,
}

impl Drop for SqlLink {
    fn drop(&mut self) {
        // A user that ends inside a transaction: its pooled connection is closed (the server
        // rolls the transaction back), and the pool may open another.
        if let (Some(_), Some(pool)) = (self.connection.take(), &self.pool) {
            pool.give_back(None);
        }
    }
}

/// What a statement's checks read: its row count and the wanted columns' values.
struct ResultView<'a> {
    result: &'a StatementResult,
    wanted: &'a [String],
    response_time_ms: u64,
}

impl CheckSubject for ResultView<'_> {
    type Own = RowsExtractor;

    fn response_time_ms(&self) -> Option<u64> {
        Some(self.response_time_ms)
    }

    fn own_values(&mut self, source: &RowsExtractor, limit: usize) -> Result<Vec<Value>, String> {
        match source {
            RowsExtractor::RowCount => Ok(vec![Value::from(self.result.row_count.to_string())]),
            RowsExtractor::Column(name) => {
                let index =
                    self.wanted.iter().position(|wanted| wanted == name).expect("lowering lists every column read");
                match &self.result.columns[index] {
                    Some(values) => Ok(values.iter().flatten().take(limit).map(|v| Value::from(v.as_str())).collect()),
                    None => Err(format!(
                        "the result has no column {name:?} (it has {})",
                        self.result.column_names.join(", ")
                    )),
                }
            }
        }
    }
}

/// Whether a connection that returned this error can take another statement.
fn connection_survives(error: &SqlError) -> bool {
    !matches!(error.kind, "sql_connection_lost" | "connect_refused" | "sql_connection" | "request_timeout")
}

impl VirtualUser {
    /// The user's link to a database; the links are made at the user's first SQL step.
    fn sql_link(&mut self, database: usize) -> &mut SqlLink {
        if self.protocols.sql.is_empty() {
            self.protocols.sql.resize_with(self.ctx.program.protocols.sql.databases.len(), SqlLink::default);
        }
        &mut self.protocols.sql[database]
    }

    /// The user's connection to a database for one statement: the one it holds, or a pooled
    /// one, or a new one of its own.
    async fn sql_connection(&mut self, database: usize) -> Result<Connection, SqlError> {
        if let Some(connection) = self.sql_link(database).connection.take() {
            return Ok(connection);
        }
        let scenario_database = &self.ctx.program.protocols.sql.databases[database];
        match scenario_database.pool_size {
            None => Connection::connect(&scenario_database.database).await,
            Some(size) => {
                let pool = self.ctx.protocols.sql.pool(database, || {
                    // The plan's size across the run: each worker gets its share, at least one.
                    let share = (size as usize).div_ceil(self.ctx.workers).max(1);
                    SqlPool::new(scenario_database.database.clone(), share)
                });
                self.protocols.sql[database].pool = Some(pool.clone());
                pool.take().await
            }
        }
    }

    /// After a statement: the connection stays with the user (its own, or inside a
    /// transaction), or goes back to the pool; a broken one is dropped.
    fn sql_release(&mut self, database: usize, connection: Connection, survives: bool) {
        let link = &mut self.protocols.sql[database];
        if !survives {
            link.in_transaction = false;
        }
        match (&link.pool, link.in_transaction) {
            (Some(pool), false) => pool.give_back(survives.then_some(connection)),
            _ if survives => link.connection = Some(connection),
            _ => {}
        }
    }

    /// Runs `work` on the user's connection to `database`, within the protocol's request
    /// timeout; the connection is released after it.
    async fn on_connection<T>(
        &mut self,
        database: usize,
        work: impl AsyncFnOnce(&mut Connection) -> Result<T, SqlError>,
    ) -> Result<T, SqlError> {
        let timeout = self.ctx.program.protocols.sql.statement_timeout;
        // Whether the statement holds a pooled connection, for when the timeout drops it.
        let holds_pooled = std::cell::Cell::new(false);
        let done = tokio::time::timeout(timeout, async {
            let mut connection = self.sql_connection(database).await?;
            holds_pooled.set(self.protocols.sql[database].pool.is_some());
            let result = work(&mut connection).await;
            Ok::<_, SqlError>((connection, result))
        })
        .await;
        match done {
            Ok(Ok((connection, result))) => {
                let survives = result.as_ref().err().is_none_or(connection_survives);
                self.sql_release(database, connection, survives);
                result
            }
            Ok(Err(error)) => Err(error),
            Err(_) => {
                // The connection was dropped mid-statement (or never came from a full pool): a
                // pooled one's place is freed, and a transaction it held is over.
                if let Some(link) = self.protocols.sql.get_mut(database) {
                    link.in_transaction = false;
                    if let (true, Some(pool)) = (holds_pooled.get(), &link.pool) {
                        pool.give_back(None);
                    }
                }
                Err(SqlError::new("request_timeout", format!("no answer within {} ms", timeout.as_millis())))
            }
        }
    }

    /// Takes the statement's share of the run's budget and throttle; the slot it was held back
    /// from, if it was (see [`VirtualUser::throttle_slot`]).
    async fn sql_turn(&mut self) -> Result<Option<Instant>, Flow> {
        if !self.ctx.limits.take_request() {
            return Err(Flow::Exhausted);
        }
        Ok(self.throttle_slot().await)
    }

    fn sql_timing(&mut self, held_since: Option<Instant>, started: Instant) -> RequestTiming {
        let end = Instant::now();
        let from = self.latency_origin(held_since, started);
        RequestTiming {
            latency_us: end.saturating_duration_since(from).as_micros() as u64,
            uncorrected_us: end.saturating_duration_since(started).as_micros() as u64,
            without_phases: true,
            ..Default::default()
        }
    }

    fn record_sql_error(&mut self, row_id: usize, started: Instant, timing: &RequestTiming, error: &SqlError) -> Flow {
        let failure = Failure::new(error.kind, error.describe());
        self.record_failure(row_id, started, timing, &failure, error.detail(), None);
        self.after_failure()
    }

    pub(super) async fn scenario_statement(&mut self, step: &SqlStatementProgram) -> Flow {
        let held_since = match self.sql_turn().await {
            Ok(held_since) => held_since,
            Err(flow) => return flow,
        };
        let mut rendered = Vec::with_capacity(step.params.len());
        for template in &step.params {
            match template.render(&mut self.session) {
                Ok(text) => rendered.push(text),
                Err(error) => {
                    let (failure, detail) = self.expression_failure(error);
                    self.record_unsent(step.row_id, &failure, detail, None);
                    return self.after_failure();
                }
            }
        }
        let started = Instant::now();
        if self.ctx.measures(started) {
            self.ctx.metrics.borrow_mut().row(step.row_id).started += 1;
        }
        let params: Vec<Param<'_>> = step.bind_order.iter().map(|&i| Param::Untyped(&rendered[i])).collect();
        let result = self
            .on_connection(step.database, async |connection| {
                connection.run_statement(&step.sql, &params, step.kind, &step.columns).await
            })
            .await;
        let timing = self.sql_timing(held_since, started);
        let result = match result {
            Ok(result) => result,
            Err(error) => return self.record_sql_error(step.row_id, started, &timing, &error),
        };
        let mut view =
            ResultView { result: &result, wanted: &step.columns, response_time_ms: timing.latency_us / 1000 };
        match run_checks_on(&step.checks, &mut view, &mut self.session) {
            Ok(()) => {
                self.record_ok(step.row_id, started, &timing, None);
                Flow::Next
            }
            Err(failure) => {
                let detail = failure.detail;
                self.record_failure(
                    step.row_id,
                    started,
                    &timing,
                    &Failure::new("check_failed", failure.message),
                    detail,
                    None,
                );
                self.after_failure()
            }
        }
    }

    pub(super) async fn sql_transaction(&mut self, step: &SqlTransactionProgram) -> Flow {
        let held_since = match self.sql_turn().await {
            Ok(held_since) => held_since,
            Err(flow) => return flow,
        };
        let started = Instant::now();
        if self.ctx.measures(started) {
            self.ctx.metrics.borrow_mut().row(step.row_id).started += 1;
        }
        // The link's state changes before the statement, so that the connection is kept
        // (begin) or given back (commit, rollback) as it is released.
        self.sql_link(step.database).in_transaction = step.action == SqlTransactionAction::Begin;
        let statement = step.action.statement();
        let result = self.on_connection(step.database, async |connection| connection.execute(statement).await).await;
        let timing = self.sql_timing(held_since, started);
        match result {
            Ok(_) => {
                self.record_ok(step.row_id, started, &timing, None);
                Flow::Next
            }
            Err(error) => self.record_sql_error(step.row_id, started, &timing, &error),
        }
    }
}

impl WorkerPools {
    fn pool(&self, database: usize, make: impl FnOnce() -> SqlPool) -> Rc<SqlPool> {
        let mut pools = self.pools.borrow_mut();
        if pools.len() <= database {
            pools.resize(database + 1, None);
        }
        pools[database].get_or_insert_with(|| Rc::new(make())).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_take_each_database_style() {
        let sql = "UPDATE t SET a = $2, b = '$1' WHERE id = $1 AND c = $2";
        assert_eq!(translate_placeholders(sql, DatabaseKind::Postgres, 2), (sql.to_string(), vec![0, 1]));
        assert_eq!(
            translate_placeholders(sql, DatabaseKind::Sqlite, 2),
            ("UPDATE t SET a = ?2, b = '$1' WHERE id = ?1 AND c = ?2".to_string(), vec![0, 1])
        );
        assert_eq!(
            translate_placeholders(sql, DatabaseKind::MySql, 2),
            ("UPDATE t SET a = ?, b = '$1' WHERE id = ? AND c = ?".to_string(), vec![1, 0, 1])
        );
    }
}
