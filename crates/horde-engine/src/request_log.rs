//! The worker's side of the per-request log (`--request-log`): each worker formats its
//! records into a buffer of its own, and hands the buffer to the log's writer thread when it
//! is full and at every snapshot interval. No lock and no shared write per request: a run
//! without the log pays one `Option` check per request.

use crate::worker::WorkerContext;
use horde_metrics::{RequestLogFormat, RequestLogOutput, RequestRecord, RequestTiming};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use tokio::time::Instant;

/// A buffer is handed over when it holds this much (a few hundred records), so a worker's
/// memory for the log stays bounded whatever the rate.
const HAND_OVER_BYTES: usize = 64 * 1024;

/// Users running, per worker and scenario, published by each worker when it logs: the JTL's
/// `grpThreads` and `allThreads`. Only written while the log is on.
pub(crate) struct ActiveUsers {
    /// Per worker, `lines_per_worker` cache lines of counters: each scenario's users, then the
    /// worker's total. Workers never write to a line another worker writes to.
    lines: Box<[Line]>,
    scenarios: usize,
    lines_per_worker: usize,
}

/// One cache line of counters.
#[repr(align(64))]
#[derive(Default)]
struct Line([AtomicU64; SLOTS_PER_LINE]);

const SLOTS_PER_LINE: usize = 8;

impl ActiveUsers {
    pub fn new(workers: usize, scenarios: usize) -> ActiveUsers {
        let lines_per_worker = (scenarios + 1).div_ceil(SLOTS_PER_LINE);
        let lines = (0..workers * lines_per_worker).map(|_| Line::default()).collect();
        ActiveUsers { lines, scenarios, lines_per_worker }
    }

    fn slot(&self, worker: usize, index: usize) -> &AtomicU64 {
        &self.lines[worker * self.lines_per_worker + index / SLOTS_PER_LINE].0[index % SLOTS_PER_LINE]
    }

    fn publish(&self, worker: usize, scenario: usize, in_scenario: u64, in_worker: u64) {
        self.slot(worker, scenario).store(in_scenario, Ordering::Relaxed);
        self.slot(worker, self.scenarios).store(in_worker, Ordering::Relaxed);
    }

    /// Users of `scenario` and of the run, summed over workers.
    fn read(&self, scenario: usize) -> (u64, u64) {
        let workers = self.lines.len() / self.lines_per_worker;
        (0..workers).fold((0, 0), |(in_scenario, all), worker| {
            (
                in_scenario + self.slot(worker, scenario).load(Ordering::Relaxed),
                all + self.slot(worker, self.scenarios).load(Ordering::Relaxed),
            )
        })
    }
}

/// What a worker needs to log: the format, its buffer, and where buffers go.
pub(crate) struct WorkerRequestLog {
    format: RequestLogFormat,
    buffer: Vec<u8>,
    chunks: Sender<Vec<u8>>,
    /// The run's start as a Unix time, to stamp records from the worker's monotonic clock.
    started_epoch_us: u64,
    active: Arc<ActiveUsers>,
}

impl WorkerRequestLog {
    pub fn new(output: RequestLogOutput, started_epoch_us: u64, active: Arc<ActiveUsers>) -> WorkerRequestLog {
        WorkerRequestLog {
            format: output.format,
            buffer: Vec::with_capacity(HAND_OVER_BYTES + 1024),
            chunks: output.chunks,
            started_epoch_us,
            active,
        }
    }

    /// Hands what is buffered to the writer thread (every interval, and at the end).
    pub fn hand_over(&mut self) {
        if !self.buffer.is_empty() {
            let full = std::mem::replace(&mut self.buffer, Vec::with_capacity(HAND_OVER_BYTES + 1024));
            // The writer is gone only when the log failed; its error is reported by its owner.
            let _ = self.chunks.send(full);
        }
    }
}

/// One outcome to log, as the user's recording functions know it.
pub(crate) struct Logged<'a> {
    pub row_name: &'a str,
    pub scenario: usize,
    pub user: u64,
    pub started: Instant,
    pub timing: &'a RequestTiming,
    pub url: Option<&'a str>,
    pub ok: bool,
    pub unsent: bool,
    pub retried: bool,
    pub error: Option<(&'static str, &'a str)>,
}

impl WorkerContext {
    /// Appends a record to this worker's log buffer, when the run keeps a request log.
    pub(crate) fn log_request(&self, logged: Logged<'_>) {
        let Some(log) = &self.request_log else { return };
        let mut log = log.borrow_mut();
        log.active.publish(
            self.worker,
            logged.scenario,
            self.scenario_users_now(logged.scenario),
            self.active_users_now(),
        );
        let (scenario_users, all_users) = log.active.read(logged.scenario);
        let since_start = logged.started.saturating_duration_since(self.start).as_micros() as u64;
        let record = RequestRecord {
            started_epoch_us: log.started_epoch_us + since_start,
            name: logged.row_name,
            scenario: &self.program.scenarios[logged.scenario].name,
            user: logged.user,
            status: logged.timing.status,
            url: logged.url,
            ok: logged.ok,
            unsent: logged.unsent,
            retried: logged.retried,
            timing: logged.timing,
            error: logged.error,
            scenario_users,
            all_users,
        };
        let format = log.format;
        format.append(&mut log.buffer, &record);
        if log.buffer.len() >= HAND_OVER_BYTES {
            log.hand_over();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn active_users_add_up_over_workers() {
        let active = ActiveUsers::new(2, 9);
        active.publish(0, 8, 1, 1);
        assert_eq!(active.read(8), (1, 1));
        let active = ActiveUsers::new(2, 2);
        active.publish(0, 1, 3, 5);
        active.publish(1, 1, 4, 4);
        active.publish(1, 0, 0, 4);
        assert_eq!(active.read(1), (7, 9));
        assert_eq!(active.read(0), (0, 9));
    }
}
