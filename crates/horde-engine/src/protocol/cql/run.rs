//! CQL statements as a user runs them: the worker's driver session (connected at the first
//! statement of any of its users), each statement prepared once per worker, parameters bound by
//! their markers' types, the result shown to checks. An asynchronous statement is sent in a task
//! of its own and counted when its answer comes; its user waits for it only at its end.

use super::error::CqlFailure;
use super::values;
use super::{CqlBatchProgram, CqlProgram, CqlStatementProgram, CqlStepProgram, Prepared};
use crate::checks::{run_checks_on, CheckProgram, CheckSubject};
use crate::failure::Failure;
use crate::protocol::rows::RowsExtractor;
use crate::session::Value;
use crate::user::{Flow, VirtualUser};
use crate::worker::WorkerContext;
use horde_metrics::RequestTiming;
use horde_plan::{Consistency, CqlBatchKind, CqlCluster, SerialConsistency};
use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::errors::ExecutionError;
use scylla::policies::load_balancing::DefaultPolicy;
use scylla::response::query_result::QueryResult;
use scylla::response::{PagingState, PagingStateResponse};
use scylla::statement::batch::{Batch, BatchType};
use scylla::statement::prepared::PreparedStatement;
use scylla::value::{CqlValue, Row};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::OnceCell;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// A worker's connection to the cluster, shared by its users, and its prepared statements.
pub(crate) struct WorkerCql {
    session: OnceCell<Result<Arc<Session>, String>>,
    /// By statement id.
    prepared: Vec<OnceCell<Result<PreparedStatement, (&'static str, String)>>>,
}

impl WorkerCql {
    pub(crate) fn new(program: &CqlProgram) -> WorkerCql {
        WorkerCql { session: OnceCell::new(), prepared: (0..program.statements).map(|_| OnceCell::new()).collect() }
    }
}

/// A user's asynchronous statements still out: it waits for them before it ends.
#[derive(Default)]
pub(crate) struct UserCql {
    pending: Vec<JoinHandle<()>>,
    pub(super) ycsb: super::ycsb::UserYcsb,
}

impl UserCql {
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Waits for every statement the user sent asynchronously.
    pub(crate) async fn finish(&mut self) {
        for task in self.pending.drain(..) {
            let _ = task.await;
        }
    }
}

/// A driver session to the cluster: token-aware, preferring the local datacenter when one is
/// named, with the cluster's consistency and timeout as its defaults, its TLS and its pool.
pub(crate) async fn connect(cluster: &CqlCluster, timeout: Duration) -> Result<Session, String> {
    let mut policy = DefaultPolicy::builder().token_aware(true);
    if let Some(datacenter) = &cluster.local_datacenter {
        policy = policy.prefer_datacenter(datacenter.clone());
    }
    let profile = ExecutionProfile::builder()
        .consistency(consistency(cluster.consistency))
        .request_timeout(Some(timeout))
        .load_balancing_policy(policy.build())
        .build();
    let mut builder = SessionBuilder::new()
        .known_nodes(&cluster.contact_points)
        .connection_timeout(timeout)
        .default_execution_profile_handle(profile.into_handle());
    if let (Some(user), Some(password)) = (&cluster.user, &cluster.password) {
        builder = builder.user(user, password);
    }
    if let Some(keyspace) = &cluster.keyspace {
        builder = builder.use_keyspace(keyspace, false);
    }
    if let Some(tls) = &cluster.tls {
        builder = builder.tls_context(Some(super::tls::client_config(tls)?));
    }
    if let Some(connections) = cluster.pool_size_per_host.and_then(|n| std::num::NonZeroUsize::new(n as usize)) {
        builder = builder.pool_size(scylla::client::PoolSize::PerHost(connections));
    }
    builder.build().await.map_err(|e| e.to_string())
}

fn consistency(level: Consistency) -> scylla::statement::Consistency {
    use scylla::statement::Consistency as Driver;
    match level {
        Consistency::Any => Driver::Any,
        Consistency::One => Driver::One,
        Consistency::Two => Driver::Two,
        Consistency::Three => Driver::Three,
        Consistency::Quorum => Driver::Quorum,
        Consistency::All => Driver::All,
        Consistency::LocalQuorum => Driver::LocalQuorum,
        Consistency::EachQuorum => Driver::EachQuorum,
        Consistency::LocalOne => Driver::LocalOne,
        Consistency::Serial => Driver::Serial,
        Consistency::LocalSerial => Driver::LocalSerial,
    }
}

fn serial_consistency(level: SerialConsistency) -> scylla::statement::SerialConsistency {
    match level {
        SerialConsistency::Serial => scylla::statement::SerialConsistency::Serial,
        SerialConsistency::LocalSerial => scylla::statement::SerialConsistency::LocalSerial,
    }
}

/// The worker's session to the cluster, connected by its first statement.
pub(super) async fn session(ctx: &WorkerContext) -> Result<Arc<Session>, Failure> {
    let program = &ctx.program.protocols.cql;
    ctx.protocols
        .cql
        .session
        .get_or_init(|| async {
            let cluster = program.cluster.as_ref().expect("validation asks for a cluster with cql steps");
            connect(cluster, program.request_timeout).await.map(Arc::new)
        })
        .await
        .clone()
        .map_err(|message| Failure::unsent("cql_connection", message))
}

/// The statement as this worker prepared it (once, on its session), with its levels.
pub(super) async fn prepared(
    ctx: &WorkerContext,
    session: &Session,
    statement: &Prepared,
    levels: (Option<Consistency>, Option<SerialConsistency>),
) -> Result<PreparedStatement, Failure> {
    ctx.protocols.cql.prepared[statement.id]
        .get_or_init(|| async {
            let mut prepared = session.prepare(statement.cql.as_str()).await.map_err(|e| {
                let failure = CqlFailure::of_prepare(&e);
                (failure.kind, failure.message)
            })?;
            if let Some(level) = levels.0 {
                prepared.set_consistency(consistency(level));
            }
            if let Some(rows) = statement.page_size {
                // Validation keeps it within i32.
                prepared.set_page_size(rows as i32);
            }
            prepared.set_serial_consistency(levels.1.map(serial_consistency));
            Ok(prepared)
        })
        .await
        .clone()
        .map_err(|(kind, message)| Failure::unsent(kind, message))
}

/// A statement's parameters rendered from the session; one that cannot be is counted unsent.
fn rendered(user: &mut VirtualUser, row_id: usize, statement: &Prepared) -> Result<Vec<String>, Flow> {
    let mut rendered = Vec::with_capacity(statement.params.len());
    for template in &statement.params {
        match template.render(&mut user.session) {
            Ok(text) => rendered.push(text),
            Err(error) => {
                let (failure, detail) = user.expression_failure(error);
                user.record_unsent(row_id, &failure, detail, None);
                return Err(user.after_failure());
            }
        }
    }
    Ok(rendered)
}

/// Takes a request from the run's budget and waits for a throttle slot, as any request does.
pub(super) async fn take_turn(user: &mut VirtualUser) -> Result<Option<Instant>, Flow> {
    if !user.ctx.limits.take_request() {
        return Err(Flow::Exhausted);
    }
    Ok(user.throttle_slot().await)
}

/// Now, counted as the start of an exchange on `row_id`.
pub(super) fn count_started(user: &VirtualUser, row_id: usize) -> Instant {
    let started = Instant::now();
    if user.ctx.measures(started) {
        user.ctx.metrics.borrow_mut().row(row_id).started += 1;
    }
    started
}

/// The statement's parameters, each converted to its marker's type.
fn bound_values(prepared: &PreparedStatement, rendered: &[String]) -> Result<Vec<CqlValue>, Failure> {
    let specs = prepared.get_variable_col_specs();
    rendered
        .iter()
        .zip(specs.iter())
        .enumerate()
        .map(|(i, (text, spec))| {
            values::parameter(text, spec.typ()).map_err(|problem| {
                Failure::unsent("cql_bad_value", format!("params[{i}] (for {}): {problem}", spec.name()))
            })
        })
        .collect()
}

/// Runs a CQL step.
pub(crate) async fn run_step(step: &CqlStepProgram, user: &mut VirtualUser) -> Flow {
    match step {
        CqlStepProgram::Statement(statement) => run_statement(statement, user).await,
        CqlStepProgram::Batch(batch) => run_batch(batch, user).await,
        CqlStepProgram::Ycsb(step) => super::ycsb::run_step(step, user).await,
    }
}

async fn run_statement(step: &CqlStatementProgram, user: &mut VirtualUser) -> Flow {
    let held_since = match take_turn(user).await {
        Ok(held_since) => held_since,
        Err(flow) => return flow,
    };
    let rendered = match rendered(user, step.row_id, &step.statement) {
        Ok(rendered) => rendered,
        Err(flow) => return flow,
    };
    let started = count_started(user, step.row_id);
    let levels = (step.consistency, step.serial_consistency);
    let sent = match session(&user.ctx).await {
        Ok(session) => match prepared(&user.ctx, &session, &step.statement, levels).await {
            Ok(prepared) => bound_values(&prepared, &rendered).map(|values| (session, prepared, values)),
            Err(failure) => Err(failure),
        },
        Err(failure) => Err(failure),
    };
    let (session, prepared, values) = match sent {
        Ok(sent) => sent,
        Err(failure) => {
            user.record_unsent(step.row_id, &failure, 0, None);
            return user.after_failure();
        }
    };
    if step.asynchronous {
        let origin = user.latency_origin(held_since, started);
        let ctx = user.ctx.clone();
        let row_id = step.row_id;
        let cql = user.protocols.cql.get_or_insert_default();
        cql.pending.retain(|task| !task.is_finished());
        let task = tokio::task::spawn_local(async move {
            let result = session.execute_unpaged(&prepared, values).await;
            let outcome = result.map(|_| ()).map_err(|e| CqlFailure::of_execution(&e));
            record_asynchronous(&ctx, row_id, origin, started, outcome);
        });
        cql.pending.push(task);
        return Flow::Next;
    }
    let result = match step.statement.page_size {
        None => session.execute_unpaged(&prepared, values).await.map(|result| vec![result]),
        Some(_) => every_page(&session, &prepared, &values).await,
    };
    answered(user, Exchange { row_id: step.row_id, held_since, started }, &step.checks, result)
}

/// A paged query's every page, in order: one round trip each.
async fn every_page(
    session: &Session,
    prepared: &PreparedStatement,
    values: &[CqlValue],
) -> Result<Vec<QueryResult>, ExecutionError> {
    let mut pages = Vec::new();
    let mut paging = PagingState::start();
    loop {
        let (page, next) = session.execute_single_page(prepared, values, paging).await?;
        pages.push(page);
        match next {
            PagingStateResponse::HasMorePages { state } => paging = state,
            PagingStateResponse::NoMorePages => return Ok(pages),
        }
    }
}

async fn run_batch(step: &CqlBatchProgram, user: &mut VirtualUser) -> Flow {
    let held_since = match take_turn(user).await {
        Ok(held_since) => held_since,
        Err(flow) => return flow,
    };
    let mut texts = Vec::with_capacity(step.statements.len());
    for statement in &step.statements {
        match rendered(user, step.row_id, statement) {
            Ok(rendered) => texts.push(rendered),
            Err(flow) => return flow,
        }
    }
    let started = count_started(user, step.row_id);
    let mut batch = Batch::new(match step.kind {
        CqlBatchKind::Logged => BatchType::Logged,
        CqlBatchKind::Unlogged => BatchType::Unlogged,
        CqlBatchKind::Counter => BatchType::Counter,
    });
    if let Some(level) = step.consistency {
        batch.set_consistency(consistency(level));
    }
    batch.set_serial_consistency(step.serial_consistency.map(serial_consistency));
    let session = match session(&user.ctx).await {
        Ok(session) => session,
        Err(failure) => {
            user.record_unsent(step.row_id, &failure, 0, None);
            return user.after_failure();
        }
    };
    let mut values = Vec::with_capacity(step.statements.len());
    for (statement, rendered) in step.statements.iter().zip(&texts) {
        // A batch's own levels apply to all of it: its statements are prepared without any.
        let bound = match prepared(&user.ctx, &session, statement, (None, None)).await {
            Ok(prepared) => bound_values(&prepared, rendered).map(|values| (prepared, values)),
            Err(failure) => Err(failure),
        };
        match bound {
            Ok((prepared, bound)) => {
                batch.append_statement(prepared);
                values.push(bound);
            }
            Err(failure) => {
                user.record_unsent(step.row_id, &failure, 0, None);
                return user.after_failure();
            }
        }
    }
    let result = session.batch(&batch, values).await.map(|result| vec![result]);
    answered(user, Exchange { row_id: step.row_id, held_since, started }, &step.checks, result)
}

/// An exchange with the cluster: its row, and the instants its latency counts from.
struct Exchange {
    row_id: usize,
    /// The throttle slot it was held back from, if any.
    held_since: Option<Instant>,
    started: Instant,
}

/// A statement's or a batch's answer: timed, checked, counted.
fn answered(
    user: &mut VirtualUser,
    exchange: Exchange,
    checks: &[CheckProgram<RowsExtractor>],
    result: Result<Vec<QueryResult>, ExecutionError>,
) -> Flow {
    let Exchange { row_id, held_since, started } = exchange;
    let end = Instant::now();
    let origin = user.latency_origin(held_since, started);
    let timing = timing(origin, started, end);
    let result = match result {
        Ok(result) => result,
        Err(error) => {
            let failure = CqlFailure::of_execution(&error);
            user.record_failure(row_id, started, &timing, &Failure::new(failure.kind, failure.message), 0, None);
            return user.after_failure();
        }
    };
    let mut view = match ResultView::of(result, timing.latency_us / 1000) {
        Ok(view) => view,
        Err(message) => {
            user.record_failure(row_id, started, &timing, &Failure::new("cql_bad_result", message), 0, None);
            return user.after_failure();
        }
    };
    match run_checks_on(checks, &mut view, &mut user.session) {
        Ok(()) => {
            user.record_ok(row_id, started, &timing, None);
            Flow::Next
        }
        Err(failure) => {
            let detail = failure.detail;
            let failure = Failure::new("check_failed", failure.message);
            user.record_failure(row_id, started, &timing, &failure, detail, None);
            user.after_failure()
        }
    }
}

pub(super) fn timing(origin: Instant, started: Instant, end: Instant) -> RequestTiming {
    RequestTiming {
        latency_us: end.saturating_duration_since(origin).as_micros() as u64,
        uncorrected_us: end.saturating_duration_since(started).as_micros() as u64,
        without_phases: true,
        ..Default::default()
    }
}

/// An asynchronous statement's outcome, counted in its row when its answer comes. It is no
/// failure of the user, which went on long ago (as with a driver's `executeAsync` whose
/// future nobody reads), but a KO of its row, by kind.
fn record_asynchronous(
    ctx: &Rc<WorkerContext>,
    row_id: usize,
    origin: Instant,
    started: Instant,
    outcome: Result<(), CqlFailure>,
) {
    let end = Instant::now();
    if !ctx.measures(end) {
        return;
    }
    let timing = timing(origin, started, end);
    let mut metrics = ctx.metrics.borrow_mut();
    if !ctx.measures(started) {
        metrics.row(row_id).started += 1;
    }
    match outcome {
        Ok(()) => metrics.row(row_id).record(&timing, true),
        Err(failure) => {
            metrics.row(row_id).record(&timing, false);
            metrics.error(failure.kind, row_id, 0, || failure.message);
        }
    }
}

/// A statement's result as checks see it: its rows, their values as text.
struct ResultView {
    names: Vec<String>,
    rows: Vec<Row>,
    response_time_ms: u64,
}

impl ResultView {
    /// The rows of every page, in order.
    fn of(pages: Vec<QueryResult>, response_time_ms: u64) -> Result<ResultView, String> {
        let mut view = ResultView { names: Vec::new(), rows: Vec::new(), response_time_ms };
        for page in pages {
            // A write answers with no rows at all.
            let Ok(rows) = page.into_rows_result() else { continue };
            if view.names.is_empty() {
                view.names = rows.column_specs().iter().map(|spec| spec.name().to_string()).collect();
            }
            for row in rows.rows::<Row>().map_err(|e| e.to_string())? {
                view.rows.push(row.map_err(|e| e.to_string())?);
            }
        }
        Ok(view)
    }
}

impl CheckSubject for ResultView {
    type Own = RowsExtractor;

    fn response_time_ms(&self) -> Option<u64> {
        Some(self.response_time_ms)
    }

    fn own_values(&mut self, source: &RowsExtractor, limit: usize) -> Result<Vec<Value>, String> {
        match source {
            RowsExtractor::RowCount => Ok(vec![Value::from(self.rows.len().to_string())]),
            RowsExtractor::Column(name) => {
                let Some(index) = self.names.iter().position(|known| known == name) else {
                    return Err(format!("the result has no column {name:?} (it has {})", self.names.join(", ")));
                };
                Ok(self
                    .rows
                    .iter()
                    .filter_map(|row| row.columns.get(index).and_then(Option::as_ref))
                    .take(limit)
                    .map(|value| Value::from(values::text(value)))
                    .collect())
            }
        }
    }
}
