//! Seed 000's experiment, one phase and strategy per step. Every user of the step's scenario
//! is one of the experiment's threads: it opens its own connection and works on its share of
//! the rows. The users coordinate through the step's [`PhaseShared`]: the first to arrive
//! prepares the table (untimed: emptying it, resetting the hashes) and starts the clock; the
//! last to finish ends the phase (a swap's rename), stops the clock, asks the database to
//! count what the phase left, and hands the phase's report to its worker.
//!
//! Each statement is recorded on the step's row like a request (its latency, OK or KO with a
//! SQLSTATE kind). A failed statement fails the phase: its report says so and the run stops,
//! since later phases would build on a table in an unknown state.

use super::connection::{Connection, Param, StatementTiming};
use super::database::{Database, DatabaseKind};
use super::error::SqlError;
use super::resources::{self, Readings};
use super::sqlite::hex_sha1;
use crate::failure::Failure;
use crate::user::{Flow, VirtualUser};
use bytes::{BufMut, Bytes, BytesMut};
use horde_metrics::{RequestTiming, SqlPhaseReport, SqlVerification};
use horde_plan::{SqlPhase, SqlStrategy};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use tokio::time::Instant;

/// A `sql_workload` step, lowered.
pub struct SqlWorkloadProgram {
    /// The phase's name and the row its statements are recorded on.
    pub name: Arc<str>,
    pub row_id: usize,
    pub database: Arc<Database>,
    pub table: String,
    pub phase: SqlPhase,
    pub strategy: SqlStrategy,
    pub rows: u64,
    pub threads: u32,
    pub batch_size: usize,
    pub text_length: usize,
    pub shared: Arc<PhaseShared>,
}

/// What the users of one phase share (across workers: atomics and a once-cell).
pub struct PhaseShared {
    /// The preparation, done by the first user to arrive; the others wait for it.
    ready: tokio::sync::OnceCell<Result<PhaseStart, String>>,
    /// Users that have not finished their share.
    remaining: AtomicU32,
    rows_done: AtomicU64,
    /// The report was handed in (by the last user, or by the first to fail).
    reported: AtomicBool,
    /// Rows handled so far, as they go (the progress line reads it).
    progress: Arc<AtomicU64>,
    /// The first user is preparing (emptying the table, resetting 10 million hashes can take
    /// a while): the phase shows on the progress line before its clock starts.
    preparing: AtomicBool,
    /// The swap's lock on the table (the seed's `LOCK TABLES`): a connection of its own, taken
    /// by the user that prepared, which also does the rename on it once the others are done.
    swap_guard: std::sync::Mutex<Option<Connection>>,
    /// A user finished its share: the swap's lock holder waits for the others.
    share_done: tokio::sync::Notify,
}

impl PhaseShared {
    pub(crate) fn new(threads: u32) -> PhaseShared {
        PhaseShared {
            ready: tokio::sync::OnceCell::new(),
            remaining: AtomicU32::new(threads),
            rows_done: AtomicU64::new(0),
            reported: AtomicBool::new(false),
            progress: Arc::new(AtomicU64::new(0)),
            preparing: AtomicBool::new(false),
            swap_guard: std::sync::Mutex::new(None),
            share_done: tokio::sync::Notify::new(),
        }
    }
}

/// A phase as the collector sees it: its name, the rows it expects, how far it is.
pub struct PhaseProgress {
    name: Arc<str>,
    rows: u64,
    shared: Arc<PhaseShared>,
}

impl PhaseProgress {
    pub fn new(name: Arc<str>, rows: u64, shared: Arc<PhaseShared>) -> PhaseProgress {
        PhaseProgress { name, rows, shared }
    }
}

/// The phase that has started and not ended, with its rows so far.
pub fn running_phase(phases: &[PhaseProgress]) -> Option<horde_metrics::SqlProgress> {
    let running = phases.iter().find(|p| {
        (p.shared.ready.initialized() || p.shared.preparing.load(Ordering::Relaxed))
            && !p.shared.reported.load(Ordering::Acquire)
    })?;
    Some(horde_metrics::SqlProgress {
        phase: running.name.clone(),
        rows: running.shared.progress.load(Ordering::Relaxed),
        expected: running.rows,
        preparing: !running.shared.ready.initialized(),
    })
}

/// The phase's clock and what the users divide.
#[derive(Clone, Copy)]
struct PhaseStart {
    started: Instant,
    readings: Readings,
    server_pid: Option<u32>,
    /// The ids present: the rows are divided by id.
    first_id: i64,
    last_id: i64,
}

/// A failed statement (or connection), with when it began.
struct Failed {
    error: SqlError,
    started: Instant,
}

impl From<(SqlError, Instant)> for Failed {
    fn from((error, started): (SqlError, Instant)) -> Failed {
        Failed { error, started }
    }
}

/// Rows a thread reads at a time where it reads and writes (the update strategies).
const PAGE_ROWS: usize = 10_000;

impl VirtualUser {
    pub(super) async fn sql_workload(&mut self, step: &SqlWorkloadProgram) -> Flow {
        let share = (self.number() % u64::from(step.threads)) as u32;
        let connecting = Instant::now();
        let mut connection = match Connection::connect(&step.database).await {
            Ok(connection) => connection,
            Err(error) => {
                let failed = Failed { error, started: connecting };
                self.sql_phase_failed(step, &failed, None);
                return self.after_failure();
            }
        };
        let mut preparing = false;
        let prepared = step
            .shared
            .ready
            .get_or_init(|| {
                preparing = true;
                step.shared.preparing.store(true, Ordering::Relaxed);
                prepare(&mut connection, step)
            })
            .await;
        let start = match prepared {
            Ok(start) => *start,
            Err(message) => {
                // The user that prepared reports; the others have nothing to add.
                if preparing {
                    let failed = Failed { error: SqlError::new("sql_error", message.clone()), started: connecting };
                    self.sql_phase_failed(step, &failed, None);
                }
                return self.after_failure();
            }
        };
        // The swap's lock: held by the user that prepared, on a connection of its own (its
        // driver runs on this user's worker, which is why this user, not the last, ends it).
        let mut swap_guard =
            if preparing { step.shared.swap_guard.lock().expect("never poisoned").take() } else { None };
        let mut rng = SmallRng::seed_from_u64(self.session.rng.random());
        let work = self.sql_share(&mut connection, step, share, &start, &mut rng).await;
        match work {
            Ok(rows) => {
                step.shared.rows_done.fetch_add(rows, Ordering::Relaxed);
            }
            Err(failed) => {
                self.sql_phase_failed(step, &failed, Some(&start));
                return self.after_failure();
            }
        }
        if swap_guard.is_some() {
            // The others' shares first; a failed one ends the phase (its report is in).
            while step.shared.remaining.load(Ordering::Acquire) > 1 && !step.shared.reported.load(Ordering::Acquire) {
                let _ = tokio::time::timeout(std::time::Duration::from_millis(100), step.shared.share_done.notified())
                    .await;
            }
            if step.shared.reported.load(Ordering::Acquire) {
                return self.after_failure();
            }
        }
        if step.shared.remaining.fetch_sub(1, Ordering::AcqRel) != 1 {
            step.shared.share_done.notify_one();
            return Flow::Next;
        }
        // The last user to finish (or the swap's lock holder) ends the phase.
        let finishing_on = swap_guard.as_mut().unwrap_or(&mut connection);
        if let Err(failed) = self.finish_phase(finishing_on, step).await {
            self.sql_phase_failed(step, &failed, Some(&start));
            return self.after_failure();
        }
        let ended = Instant::now();
        let readings = Readings::now(start.server_pid);
        let peak_memory = resources::peak_memory();
        let rows = step.shared.rows_done.load(Ordering::Relaxed);
        let verification = verify(&mut connection, step, rows).await;
        let mut report = self.phase_report(step, rows, start.started, ended);
        report.client_cpu_seconds = elapsed_secs(start.readings.client_cpu, readings.client_cpu);
        report.server_cpu_seconds = elapsed_secs(start.readings.server_cpu, readings.server_cpu);
        report.client_peak_memory_bytes = peak_memory;
        match verification {
            Ok(verification) => {
                if !verification.passed {
                    let failure = Failure::new(
                        "sql_verification_failed",
                        format!(
                            "{}: the database counts {} {} where {} were expected",
                            step.name, verification.found, verification.counted, verification.expected
                        ),
                    );
                    self.record_failure(
                        step.row_id,
                        ended,
                        &RequestTiming { without_phases: true, ..Default::default() },
                        &failure,
                        0,
                        None,
                    );
                    report.error = Some(failure.message.clone());
                }
                report.verification = Some(verification);
            }
            Err(error) => {
                report.error = Some(format!("{}: the check after the phase failed: {}", step.name, error.describe()))
            }
        }
        let failed = report.error.clone();
        self.hand_in(step, report);
        if let Some(reason) = failed {
            self.ctx.limits.request_stop(reason);
        }
        Flow::Next
    }

    /// One thread's part of the phase: the rows it inserted, read or updated.
    async fn sql_share(
        &self,
        connection: &mut Connection,
        step: &SqlWorkloadProgram,
        share: u32,
        start: &PhaseStart,
        rng: &mut SmallRng,
    ) -> Result<u64, Failed> {
        let kind = connection.kind();
        let table = step.table.as_str();
        let threads = u64::from(step.threads);
        let share_index = u64::from(share);
        // The populate phase divides a count, the others the ids present.
        let count = step.rows * (share_index + 1) / threads - step.rows * share_index / threads;
        let span = (start.last_id - start.first_id + 1).max(0) as u64;
        let ids = (
            start.first_id - 1 + (span * share_index / threads) as i64,
            start.first_id - 1 + (span * (share_index + 1) / threads) as i64,
        );
        match step.phase {
            SqlPhase::Create => {
                // One statement, by one of the users.
                if share != 0 {
                    return Ok(0);
                }
                self.sql_statement(connection, step, &kind.create_table(table, step.text_length as u32)).await?;
                Ok(0)
            }
            SqlPhase::Drop => {
                if share != 0 {
                    return Ok(0);
                }
                // With what an interrupted swap may have left.
                self.sql_statement(connection, step, &kind.drop_table_if_exists(&swap_table(table))).await?;
                self.sql_statement(connection, step, &kind.drop_table_if_exists(table)).await?;
                Ok(0)
            }
            SqlPhase::Alter => {
                if share != 0 {
                    return Ok(0);
                }
                for sql in kind.add_hash_column(table, step.strategy == SqlStrategy::Rebuild) {
                    self.sql_statement(connection, step, &sql).await?;
                }
                // Every row of the table gets the column.
                Ok(step.rows)
            }
            SqlPhase::Populate => self.populate(connection, step, count, rng).await,
            SqlPhase::Select => self.select_share(connection, step, ids).await,
            SqlPhase::Update => match step.strategy {
                SqlStrategy::Server => {
                    if share != 0 {
                        return Ok(0);
                    }
                    self.sql_statement(connection, step, &kind.update_in_server(table)).await
                }
                _ => self.update_share(connection, step, ids, share).await,
            },
        }
    }

    /// One statement without parameters, recorded on the step's row; the rows it changed.
    async fn sql_statement(
        &self,
        connection: &mut Connection,
        step: &SqlWorkloadProgram,
        sql: &str,
    ) -> Result<u64, Failed> {
        let started = Instant::now();
        let changed = connection.execute(sql).await.map_err(|e| Failed { error: e, started })?;
        self.statement_ok(step.row_id, started);
        Ok(changed)
    }

    fn statement_ok(&self, row_id: usize, started: Instant) {
        let us = started.elapsed().as_micros() as u64;
        self.record_ok(
            row_id,
            started,
            &RequestTiming { latency_us: us, uncorrected_us: us, without_phases: true, ..Default::default() },
            None,
        );
    }

    fn statement_timings(&self, row_id: usize, timings: &[StatementTiming]) {
        for timing in timings.iter().filter(|t| t.ok) {
            let us = timing.duration_us;
            let recorded =
                RequestTiming { latency_us: us, uncorrected_us: us, without_phases: true, ..Default::default() };
            self.record_ok(row_id, timing.started, &recorded, None);
        }
    }

    async fn populate(
        &self,
        connection: &mut Connection,
        step: &SqlWorkloadProgram,
        count: u64,
        rng: &mut SmallRng,
    ) -> Result<u64, Failed> {
        let kind = connection.kind();
        let table = step.table.as_str();
        let one_row = kind.insert_texts(table, 1);
        let mut texts: Vec<String> = Vec::new();
        let mut done = 0u64;
        match step.strategy {
            SqlStrategy::Bulk if kind != DatabaseKind::Sqlite => {
                let started = Instant::now();
                let data = Box::new(TextLines::new(
                    SmallRng::seed_from_u64(rng.random()),
                    count,
                    step.text_length,
                    step.shared.progress.clone(),
                ));
                let loaded =
                    connection.bulk_load(table, "text", data).await.map_err(|e| Failed { error: e, started })?;
                self.statement_ok(step.row_id, started);
                return Ok(loaded);
            }
            _ => {}
        }
        // SQLite's bulk path is one transaction for the whole share.
        let one_transaction = step.strategy == SqlStrategy::Bulk;
        if one_transaction {
            self.sql_statement(connection, step, kind.begin()).await?;
        }
        let mut timings = Vec::new();
        while done < count {
            let chunk = (count - done).min(step.batch_size as u64) as usize;
            fill_texts(&mut texts, chunk, step.text_length, rng);
            match step.strategy {
                SqlStrategy::Batch => {
                    let rows_per_statement = kind.max_rows_per_statement(1);
                    for part in texts[..chunk].chunks(rows_per_statement) {
                        let sql = kind.insert_texts(table, part.len());
                        let params: Vec<Param<'_>> = part.iter().map(|t| Param::Text(t)).collect();
                        let started = Instant::now();
                        connection.exec_prepared(&sql, &params).await.map_err(|e| Failed { error: e, started })?;
                        self.statement_ok(step.row_id, started);
                    }
                }
                SqlStrategy::Pipeline => {
                    let params: Vec<Param<'_>> = texts[..chunk].iter().map(|t| Param::Text(t)).collect();
                    timings.clear();
                    let started = Instant::now();
                    let result = connection.exec_pipelined(&one_row, &params, &mut timings).await;
                    self.statement_timings(step.row_id, &timings);
                    result.map_err(|e| Failed { error: e, started })?;
                }
                SqlStrategy::RowTxn => {
                    self.sql_statement(connection, step, kind.begin()).await?;
                    self.insert_each(connection, step, &one_row, &texts[..chunk]).await?;
                    self.sql_statement(connection, step, "COMMIT").await?;
                }
                _ => self.insert_each(connection, step, &one_row, &texts[..chunk]).await?,
            }
            done += chunk as u64;
            step.shared.progress.fetch_add(chunk as u64, Ordering::Relaxed);
            // Between chunks the worker's other tasks run: SQLite's calls never wait.
            tokio::task::yield_now().await;
        }
        if one_transaction {
            self.sql_statement(connection, step, "COMMIT").await?;
        }
        Ok(done)
    }

    async fn insert_each(
        &self,
        connection: &mut Connection,
        step: &SqlWorkloadProgram,
        sql: &str,
        texts: &[String],
    ) -> Result<(), Failed> {
        for text in texts {
            let started = Instant::now();
            connection.exec_prepared(sql, &[Param::Text(text)]).await.map_err(|e| Failed { error: e, started })?;
            self.statement_ok(step.row_id, started);
        }
        Ok(())
    }

    /// Reads the share's rows, streamed: one statement (SQLite: a page at a time, so the
    /// worker's thread is never held for the whole share).
    async fn select_share(
        &self,
        connection: &mut Connection,
        step: &SqlWorkloadProgram,
        (after, upto): (i64, i64),
    ) -> Result<u64, Failed> {
        let kind = connection.kind();
        let table = step.table.as_str();
        let page = if kind == DatabaseKind::Sqlite { step.batch_size.max(1) as i64 } else { (upto - after).max(1) };
        let sql = format!(
            "SELECT id, text FROM {table} WHERE id > {} AND id <= {}",
            kind.placeholder(1),
            kind.placeholder(2)
        );
        let mut rows = 0;
        let mut from = after;
        while from < upto {
            let to = (from + page).min(upto);
            let started = Instant::now();
            let (read, _bytes) = connection
                .stream_count(&sql, &[Param::Int(from), Param::Int(to)])
                .await
                .map_err(|e| Failed { error: e, started })?;
            self.statement_ok(step.row_id, started);
            rows += read;
            step.shared.progress.fetch_add(read, Ordering::Relaxed);
            from = to;
            tokio::task::yield_now().await;
        }
        Ok(rows)
    }

    /// Sets the share's hashes by the step's strategy, reading its rows a page at a time.
    async fn update_share(
        &self,
        connection: &mut Connection,
        step: &SqlWorkloadProgram,
        (after, upto): (i64, i64),
        share: u32,
    ) -> Result<u64, Failed> {
        let kind = connection.kind();
        let table = step.table.as_str();
        let read_page = kind.read_page(table, PAGE_ROWS);
        let update_one = kind.update_one(table);
        let temp = format!("{table}_hashes_{share}");
        let target = match step.strategy {
            SqlStrategy::TempJoin => {
                self.sql_statement(connection, step, &kind.create_temp_table(&temp)).await?;
                temp.clone()
            }
            SqlStrategy::Swap => swap_table(table),
            _ => String::new(),
        };
        let mut page: Vec<(i64, String)> = Vec::with_capacity(PAGE_ROWS);
        let mut hashes: Vec<String> = Vec::with_capacity(PAGE_ROWS);
        let mut in_transaction = 0usize;
        let mut updated = 0u64;
        let mut from = after;
        loop {
            page.clear();
            let started = Instant::now();
            connection
                .query_pairs(&read_page, &[Param::Int(from), Param::Int(upto)], &mut page)
                .await
                .map_err(|e| Failed { error: e, started })?;
            self.statement_ok(step.row_id, started);
            let Some(&(last, _)) = page.last() else { break };
            hashes.clear();
            hashes.extend(page.iter().map(|(_, text)| hex_sha1(text.as_bytes())));
            match step.strategy {
                SqlStrategy::Row | SqlStrategy::RowTxn => {
                    for ((id, _), hash) in page.iter().zip(&hashes) {
                        if step.strategy == SqlStrategy::RowTxn && in_transaction == 0 {
                            self.sql_statement(connection, step, kind.begin()).await?;
                        }
                        let started = Instant::now();
                        connection
                            .exec_prepared(&update_one, &[Param::Text(hash), Param::Int(*id)])
                            .await
                            .map_err(|e| Failed { error: e, started })?;
                        self.statement_ok(step.row_id, started);
                        if step.strategy == SqlStrategy::RowTxn {
                            in_transaction += 1;
                            if in_transaction == step.batch_size {
                                self.sql_statement(connection, step, "COMMIT").await?;
                                in_transaction = 0;
                            }
                        }
                    }
                }
                SqlStrategy::TempJoin => {
                    let lines = page.iter().zip(&hashes).map(|((id, _), hash)| format!("{id}\t{hash}\n"));
                    self.load_lines(connection, step, &target, "id, hashval", lines).await?;
                }
                _ => {
                    // Swap: the rows go into the new table with their hash.
                    let lines = page.iter().zip(&hashes).map(|((id, text), hash)| format!("{id}\t{text}\t{hash}\n"));
                    self.load_lines(connection, step, &target, "id, text, hashval", lines).await?;
                }
            }
            updated += page.len() as u64;
            step.shared.progress.fetch_add(page.len() as u64, Ordering::Relaxed);
            from = last;
            tokio::task::yield_now().await;
        }
        if in_transaction > 0 {
            self.sql_statement(connection, step, "COMMIT").await?;
        }
        if step.strategy == SqlStrategy::TempJoin {
            self.sql_statement(connection, step, &kind.update_join(table, &temp)).await?;
        }
        Ok(updated)
    }

    /// Loads tab-separated lines into a table by the database's bulk path, or (SQLite) by
    /// multi-row inserts in one transaction.
    async fn load_lines(
        &self,
        connection: &mut Connection,
        step: &SqlWorkloadProgram,
        table: &str,
        columns: &str,
        lines: impl Iterator<Item = String>,
    ) -> Result<(), Failed> {
        let kind = connection.kind();
        if kind != DatabaseKind::Sqlite {
            let mut data = BytesMut::new();
            for line in lines {
                data.put_slice(line.as_bytes());
            }
            let started = Instant::now();
            let chunks: Box<dyn Iterator<Item = Bytes> + Send> = Box::new(std::iter::once(data.freeze()));
            connection.bulk_load(table, columns, chunks).await.map_err(|e| Failed { error: e, started })?;
            self.statement_ok(step.row_id, started);
            return Ok(());
        }
        let lines: Vec<String> = lines.collect();
        let fields: Vec<Vec<&str>> = lines.iter().map(|l| l.trim_end_matches('\n').split('\t').collect()).collect();
        let width = columns.split(',').count();
        let rows_per_statement = kind.max_rows_per_statement(width).min(step.batch_size.max(1));
        self.sql_statement(connection, step, kind.begin()).await?;
        for part in fields.chunks(rows_per_statement) {
            let mut sql = format!("INSERT INTO {table} ({columns}) VALUES ");
            let row = format!("({})", vec!["?"; width].join(", "));
            for i in 0..part.len() {
                if i > 0 {
                    sql.push_str(", ");
                }
                sql.push_str(&row);
            }
            let params: Vec<Param<'_>> = part.iter().flat_map(|row| row.iter().map(|f| Param::Text(f))).collect();
            let started = Instant::now();
            connection.exec_prepared(&sql, &params).await.map_err(|e| Failed { error: e, started })?;
            self.statement_ok(step.row_id, started);
        }
        self.sql_statement(connection, step, "COMMIT").await?;
        Ok(())
    }

    /// What the last user does before the clock stops: the swap's rename, on the connection
    /// that holds the table's lock (PostgreSQL: inside its transaction, then committed;
    /// MariaDB: just after `UNLOCK TABLES`, by one atomic `RENAME TABLE`).
    async fn finish_phase(&self, connection: &mut Connection, step: &SqlWorkloadProgram) -> Result<(), Failed> {
        if step.phase == SqlPhase::Update && step.strategy == SqlStrategy::Swap {
            let kind = connection.kind();
            if kind == DatabaseKind::MySql {
                self.sql_statement(connection, step, "UNLOCK TABLES").await?;
            }
            for sql in kind.swap_tables(&step.table, &swap_table(&step.table)) {
                self.sql_statement(connection, step, &sql).await?;
            }
            if kind == DatabaseKind::Postgres {
                self.sql_statement(connection, step, "COMMIT").await?;
            }
        }
        Ok(())
    }

    /// A phase that failed: the KO on its row, its report with the error (once), and the run
    /// asked to stop.
    fn sql_phase_failed(&mut self, step: &SqlWorkloadProgram, failed: &Failed, start: Option<&PhaseStart>) {
        let us = failed.started.elapsed().as_micros() as u64;
        let timing = RequestTiming { latency_us: us, uncorrected_us: us, without_phases: true, ..Default::default() };
        let message = format!("{}: {}", step.name, failed.error.describe());
        let failure = Failure::new(failed.error.kind, message.clone());
        self.record_failure(step.row_id, failed.started, &timing, &failure, failed.error.detail(), None);
        let ended = Instant::now();
        let started = start.map_or(failed.started, |s| s.started);
        let mut report = self.phase_report(step, step.shared.rows_done.load(Ordering::Relaxed), started, ended);
        report.error = Some(message.clone());
        self.hand_in(step, report);
        self.ctx.limits.request_stop(format!("sql phase {message}"));
    }

    /// Gives the phase's report to the worker, once per phase.
    fn hand_in(&self, step: &SqlWorkloadProgram, report: SqlPhaseReport) {
        if !step.shared.reported.swap(true, Ordering::AcqRel) {
            self.ctx.metrics.borrow_mut().sql_phases.push(report);
        }
    }
}

/// The swap strategy's new table.
fn swap_table(table: &str) -> String {
    format!("{table}_swap")
}

fn elapsed_secs(before: Option<std::time::Duration>, after: Option<std::time::Duration>) -> Option<f64> {
    Some(after?.saturating_sub(before?).as_secs_f64())
}

impl VirtualUser {
    fn phase_report(&self, step: &SqlWorkloadProgram, rows: u64, started: Instant, ended: Instant) -> SqlPhaseReport {
        let seconds = ended.saturating_duration_since(started).as_secs_f64();
        SqlPhaseReport {
            started_ms: started.saturating_duration_since(self.ctx.start).as_millis() as u64,
            name: step.name.to_string(),
            phase: step.phase.as_str().to_string(),
            strategy: step.strategy.as_str().to_string(),
            database: step.database.kind().name().to_string(),
            threads: step.threads,
            rows,
            seconds,
            rows_per_second: if seconds > 0.0 { rows as f64 / seconds } else { 0.0 },
            client_cpu_seconds: None,
            client_peak_memory_bytes: None,
            server_cpu_seconds: None,
            verification: None,
            error: None,
        }
    }
}

/// The first user's preparation, before the clock starts: what every strategy of a phase
/// must start from, and the ids to divide.
async fn prepare(connection: &mut Connection, step: &SqlWorkloadProgram) -> Result<PhaseStart, String> {
    let kind = connection.kind();
    let table = step.table.as_str();
    let context = |what: &str, e: SqlError| format!("{what}: {}", e.describe());
    match step.phase {
        SqlPhase::Populate => {
            connection.execute(&kind.empty_table(table)).await.map_err(|e| context("emptying the table", e))?;
        }
        SqlPhase::Alter => {
            // Every strategy adds the column to a table without it: an earlier one's is dropped.
            let has_column = connection.execute(&format!("SELECT hashval FROM {table} WHERE 1 = 0")).await.is_ok();
            if has_column {
                let drop = format!("ALTER TABLE {table} DROP COLUMN hashval");
                connection.execute(&drop).await.map_err(|e| context("dropping an earlier strategy's column", e))?;
            }
        }
        SqlPhase::Update => {
            // Every strategy starts from no hash at all.
            let reset = format!("UPDATE {table} SET hashval = NULL WHERE hashval IS NOT NULL");
            connection.execute(&reset).await.map_err(|e| context("resetting the hashes", e))?;
            if kind == DatabaseKind::Postgres {
                // The reset left a dead version of every row: without a vacuum, each strategy
                // after the first would read a table twice the size.
                connection.execute(&format!("VACUUM {table}")).await.map_err(|e| context("vacuuming the table", e))?;
            }
            if step.strategy == SqlStrategy::Swap {
                let new_table = swap_table(table);
                connection
                    .execute(&kind.drop_table_if_exists(&new_table))
                    .await
                    .map_err(|e| context("dropping an earlier swap table", e))?;
                connection
                    .execute(&kind.create_swap_table(&new_table, step.text_length as u32))
                    .await
                    .map_err(|e| context("creating the swap table", e))?;
                // Nothing else writes to the table while it is copied (SQLite locks whole
                // files, not tables: its run's writers take turns already).
                if let Some(lock) = kind.lock_for_swap(table) {
                    let mut guard =
                        Connection::connect(&step.database).await.map_err(|e| context("locking the table", e))?;
                    guard.execute(&lock).await.map_err(|e| context("locking the table", e))?;
                    *step.shared.swap_guard.lock().expect("never poisoned") = Some(guard);
                }
            }
        }
        SqlPhase::Create if kind == DatabaseKind::Postgres => {
            // The check after the update phase hashes in SQL: pgcrypto's digest(). A trusted
            // extension since PostgreSQL 13, which a database's owner may create.
            let _ = connection.execute("CREATE EXTENSION IF NOT EXISTS pgcrypto").await;
        }
        _ => {}
    }
    let (first_id, last_id) = match step.phase {
        SqlPhase::Select | SqlPhase::Update | SqlPhase::Alter => {
            let first = connection
                .query_i64(&format!("SELECT min(id) FROM {table}"))
                .await
                .map_err(|e| context("reading the ids", e))?;
            let last = connection
                .query_i64(&format!("SELECT max(id) FROM {table}"))
                .await
                .map_err(|e| context("reading the ids", e))?;
            (first.unwrap_or(1), last.unwrap_or(0))
        }
        _ => (1, 0),
    };
    let server_pid = step.database.local_server().and_then(|server| resources::listening_process(&server));
    resources::reset_peak_memory();
    Ok(PhaseStart { started: Instant::now(), readings: Readings::now(server_pid), server_pid, first_id, last_id })
}

/// The database's own count of what the phase left.
async fn verify(
    connection: &mut Connection,
    step: &SqlWorkloadProgram,
    rows_done: u64,
) -> Result<SqlVerification, SqlError> {
    let kind = connection.kind();
    let table = step.table.as_str();
    let (counted, expected, sql) = match step.phase {
        SqlPhase::Create => ("rows", 0, format!("SELECT count(*) FROM {table}")),
        SqlPhase::Populate => ("rows", step.rows, format!("SELECT count(*) FROM {table}")),
        SqlPhase::Select => {
            let total = connection.query_i64(&format!("SELECT count(*) FROM {table}")).await?.unwrap_or(0) as u64;
            return Ok(SqlVerification {
                counted: "rows read".into(),
                expected: total,
                found: rows_done,
                passed: total == rows_done,
            });
        }
        SqlPhase::Alter => {
            ("rows whose hashval is NULL", step.rows, format!("SELECT count(*) FROM {table} WHERE hashval IS NULL"))
        }
        SqlPhase::Update => (
            "rows whose hashval = SHA-1(text)",
            step.rows,
            format!("SELECT count(*) FROM {table} WHERE hashval = {}", kind.sha1_of("text")),
        ),
        SqlPhase::Drop => {
            let gone = connection.query_i64(&format!("SELECT count(*) FROM {table}")).await.is_err();
            return Ok(SqlVerification {
                counted: "tables left".into(),
                expected: 0,
                found: u64::from(!gone),
                passed: gone,
            });
        }
    };
    let found = connection.query_i64(&sql).await?.unwrap_or(0) as u64;
    Ok(SqlVerification { counted: counted.into(), expected, found, passed: found == expected })
}

const ALPHANUMERIC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// Refills `texts` with `count` random strings of `length` characters, reusing their buffers.
fn fill_texts(texts: &mut Vec<String>, count: usize, length: usize, rng: &mut SmallRng) {
    texts.resize_with(count.max(texts.len()), String::new);
    for text in texts.iter_mut().take(count) {
        text.clear();
        text.extend((0..length).map(|_| ALPHANUMERIC[rng.random_range(0..ALPHANUMERIC.len())] as char));
    }
}

/// Random text rows as the bulk paths read them: one per line, in chunks of about 64 KiB,
/// counted into the phase's progress as the driver takes them.
struct TextLines {
    rng: SmallRng,
    remaining: u64,
    length: usize,
    progress: Arc<AtomicU64>,
}

impl TextLines {
    fn new(rng: SmallRng, rows: u64, length: usize, progress: Arc<AtomicU64>) -> TextLines {
        TextLines { rng, remaining: rows, length, progress }
    }
}

impl Iterator for TextLines {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        if self.remaining == 0 {
            return None;
        }
        let rows = (65_536 / (self.length + 1)).max(1) as u64;
        let rows = rows.min(self.remaining);
        let mut chunk = BytesMut::with_capacity(rows as usize * (self.length + 1));
        for _ in 0..rows {
            for _ in 0..self.length {
                chunk.put_u8(ALPHANUMERIC[self.rng.random_range(0..ALPHANUMERIC.len())]);
            }
            chunk.put_u8(b'\n');
        }
        self.remaining -= rows;
        self.progress.fetch_add(rows, Ordering::Relaxed);
        Some(chunk.freeze())
    }
}
