//! A worker: one OS thread with its own single-threaded runtime, its own users, connections and
//! recorders. Nothing on the per-request path is shared with other workers; only snapshots
//! leave the thread, once per interval.

use crate::injection::{arrivals, closed_slots};
use crate::lower::Program;
use crate::precise_timer::PreciseTimer;
use crate::request_log::{ActiveUsers, WorkerRequestLog};
use crate::run_limits::{RunLedger, WorkerLimits};
use crate::start_line::{Arrival, RunStart};
use crate::user::{UserOutcome, VirtualUser};
use horde_metrics::{
    new_histogram, record_value, ErrorKey, ErrorRecord, GroupRecorder, Histogram, Recorder, RequestLogOutput, Snapshot,
};
use horde_plan::Injection;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{watch, Notify};
use tokio::time::Instant;

/// What the collector tells workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopSignal {
    Run,
    /// Stop now: running users are interrupted.
    Stop,
}

/// Shared by all workers: a scenario counts as finished once every worker has finished its
/// share. Scenarios that start `after` it wait here.
pub(crate) struct ScenarioGate {
    workers_left: AtomicUsize,
    finished: AtomicBool,
    notify: Notify,
}

impl ScenarioGate {
    pub fn new(workers: usize) -> ScenarioGate {
        ScenarioGate {
            workers_left: AtomicUsize::new(workers),
            finished: AtomicBool::new(false),
            notify: Notify::new(),
        }
    }

    fn worker_finished(&self) {
        if self.workers_left.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.finished.store(true, Ordering::Release);
            self.notify.notify_waiters();
        }
    }

    async fn wait(&self) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            // Registered before the check, so a finish in between is not missed.
            notified.as_mut().enable();
            if self.finished.load(Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }
}

/// Everything one worker's users share. Lives on the worker thread only.
pub(crate) struct WorkerContext {
    pub program: Arc<Program>,
    pub worker: usize,
    pub workers: usize,
    pub start: Instant,
    pub metrics: RefCell<WorkerMetrics>,
    /// This worker's leases on the run's request budget and throttle slots.
    pub limits: WorkerLimits,
    late_threshold: Duration,
    /// Requests that start before this are the warm-up: run, but not measured.
    measure_from: Instant,
    /// A replacement share's takeover: arrivals and user slots due before it are skipped.
    resume_from: Option<Instant>,
    /// Where each scenario's user numbers start: 0, or for a replacement share its attempt
    /// times the scenario's users (it makes its users again, and `${__user_id}`, document ids
    /// and the users' random streams must not repeat the lost attempt's).
    user_numbers_from: Vec<u64>,
    seed: u64,
    /// Unique to the run, shared by every worker: CouchDB document ids start with it.
    pub run_token: Arc<str>,
    active_users: Cell<u64>,
    /// Scenarios of this worker not yet finished (injection ended, users done).
    injectors_running: Cell<usize>,
    idle: Notify,
    /// Users running per scenario, and a wake-up for when a scenario's count drops to 0.
    scenario_users: Vec<Cell<u64>>,
    scenario_idle: Vec<Notify>,
    /// Run-wide: when each scenario has finished on every worker (`after`).
    gates: Arc<[ScenarioGate]>,
    /// The per-request log, when the run keeps one.
    pub request_log: Option<RefCell<WorkerRequestLog>>,
    /// Each protocol's state in this worker, shared by its users (SQL's pools).
    pub(crate) protocols: crate::protocol::WorkerProtocols,
}

impl WorkerContext {
    /// Whether something that started at `started` is measured (it is not in the warm-up).
    pub fn measures(&self, started: Instant) -> bool {
        started >= self.measure_from
    }

    /// Records how late something started after its intended time.
    pub fn record_start_lag(&self, intended: Instant, actual: Instant) {
        let lag = actual.saturating_duration_since(intended);
        let mut metrics = self.metrics.borrow_mut();
        record_value(&mut metrics.start_lag_us, lag.as_micros() as u64);
        if lag > self.late_threshold {
            metrics.late_starts += 1;
        }
    }

    /// A user's random stream depends on the run's seed, its scenario and its number only, so
    /// a seeded run generates the same documents whatever the number of workers.
    fn user_seed(&self, scenario: usize, number: u64) -> u64 {
        splitmix64(self.seed ^ ((scenario as u64) << 48) ^ number)
    }

    /// Users running on this worker.
    pub(crate) fn active_users_now(&self) -> u64 {
        self.active_users.get()
    }

    /// Users of `scenario` running on this worker.
    pub(crate) fn scenario_users_now(&self, scenario: usize) -> u64 {
        self.scenario_users[scenario].get()
    }

    fn user_started(&self, scenario: usize) {
        self.active_users.set(self.active_users.get() + 1);
        self.scenario_users[scenario].set(self.scenario_users[scenario].get() + 1);
        self.metrics.borrow_mut().users_started += 1;
    }

    fn user_finished(&self, scenario: usize) {
        self.active_users.set(self.active_users.get() - 1);
        let left = self.scenario_users[scenario].get() - 1;
        self.scenario_users[scenario].set(left);
        if left == 0 {
            self.scenario_idle[scenario].notify_one();
        }
        self.metrics.borrow_mut().users_finished += 1;
        self.wake_if_idle();
    }

    fn wake_if_idle(&self) {
        if self.active_users.get() == 0 {
            // No user here can use what this worker leased; another worker's users may.
            self.limits.return_unused();
            if self.injectors_running.get() == 0 {
                self.idle.notify_one();
            }
        }
    }
}

/// Distinct resource URLs that get a row of their own.
const MAX_RESOURCE_ROWS: usize = 200;
const OTHER_RESOURCES: &str = "(other resources)";

/// The worker's recorders for the current interval.
pub(crate) struct WorkerMetrics {
    /// Same order as `Program::rows`, then redirect-hop rows as they appear. A row's recorder
    /// is made (or taken from `spare`) when something is first recorded on it in an interval,
    /// so a snapshot never makes hundreds of them at once on the worker's thread.
    rows: Vec<(Arc<str>, Option<Recorder>)>,
    /// Empty recorders the collector gave back.
    spare: Vec<Recorder>,
    redirect_rows: HashMap<(usize, u32), usize>,
    /// Rows of resources found in pages, by URL.
    resource_rows: HashMap<Arc<str>, usize>,
    groups: Vec<(Arc<str>, GroupRecorder)>,
    errors: HashMap<ErrorKey, ErrorRecord>,
    users_started: u64,
    users_finished: u64,
    users_interrupted: u64,
    start_lag_us: Histogram<u64>,
    late_starts: u64,
    /// Closed-model users whose start was held back because the users before them in their
    /// slot kept failing fast.
    replacements_held_back: u64,
    pub connections: horde_metrics::ConnectionEvents,
    /// Users that finished a CouchDB step this interval.
    pub couchdb_connections: Vec<horde_metrics::ConnectionPhases>,
    /// `horde sql` phases that ended this interval.
    pub sql_phases: Vec<horde_metrics::SqlPhaseReport>,
}

impl WorkerMetrics {
    fn new(program: &Program) -> WorkerMetrics {
        WorkerMetrics {
            rows: program.rows.iter().map(|r| (r.clone(), None)).collect(),
            spare: Vec::new(),
            redirect_rows: HashMap::new(),
            resource_rows: HashMap::new(),
            groups: program.groups.iter().map(|g| (g.clone(), GroupRecorder::default())).collect(),
            errors: HashMap::new(),
            users_started: 0,
            users_finished: 0,
            users_interrupted: 0,
            start_lag_us: new_histogram(),
            late_starts: 0,
            replacements_held_back: 0,
            connections: Default::default(),
            couchdb_connections: Vec::new(),
            sql_phases: Vec::new(),
        }
    }

    pub fn row(&mut self, row_id: usize) -> &mut Recorder {
        let spare = &mut self.spare;
        self.rows[row_id].1.get_or_insert_with(|| spare.pop().unwrap_or_default())
    }

    /// The row of redirect hop `hop` of a request, named as Gatling does: `login Redirect 1`.
    pub fn redirect_row(&mut self, row_id: usize, hop: u32) -> usize {
        if let Some(&id) = self.redirect_rows.get(&(row_id, hop)) {
            return id;
        }
        let name: Arc<str> = format!("{} Redirect {hop}", self.rows[row_id].0).into();
        self.rows.push((name, None));
        let id = self.rows.len() - 1;
        self.redirect_rows.insert((row_id, hop), id);
        id
    }

    /// The row of a resource found in a page, named by its URL as in Gatling. Past
    /// `MAX_RESOURCE_ROWS` URLs (a site that versions its assets by query string), the rest
    /// share one row, so the summary stays readable and memory bounded.
    pub fn resource_row(&mut self, url: &str) -> usize {
        if let Some(&id) = self.resource_rows.get(url) {
            return id;
        }
        let name: Arc<str> =
            if self.resource_rows.len() < MAX_RESOURCE_ROWS { url.into() } else { OTHER_RESOURCES.into() };
        if let Some(&id) = self.resource_rows.get(&name) {
            return id;
        }
        self.rows.push((name.clone(), None));
        let id = self.rows.len() - 1;
        self.resource_rows.insert(name, id);
        id
    }

    pub fn row_name(&self, row_id: usize) -> &str {
        &self.rows[row_id].0
    }

    pub fn group(&mut self, group: usize) -> &mut GroupRecorder {
        &mut self.groups[group].1
    }

    /// Counts an error; the message is only built the first time its key is seen.
    pub fn error(&mut self, kind: &'static str, row_id: usize, detail: u32, message: impl FnOnce() -> String) {
        let key = ErrorKey { kind: kind.into(), request: self.rows[row_id].0.clone(), detail };
        self.errors.entry(key).and_modify(|e| e.count += 1).or_insert_with(|| ErrorRecord {
            message: message(),
            count: 1,
            ..Default::default()
        });
    }

    /// Everything measured since the last snapshot; the rows start the next interval empty.
    fn take_snapshot(&mut self, worker: usize, users_active: u64, finished: bool, interval: u64) -> Snapshot {
        let requests = self
            .rows
            .iter_mut()
            .filter_map(|(name, r)| r.take().map(|r| (name.clone(), r)))
            .filter(|(_, r)| !r.is_empty())
            .collect();
        let groups = self
            .groups
            .iter_mut()
            .filter(|(_, g)| !g.ok.is_empty() || !g.ko.is_empty())
            .map(|(name, g)| (name.clone(), std::mem::take(g)))
            .collect();
        let lag = std::mem::replace(&mut self.start_lag_us, new_histogram());
        Snapshot {
            worker,
            requests,
            groups,
            errors: std::mem::take(&mut self.errors),
            users_started: std::mem::take(&mut self.users_started),
            users_finished: std::mem::take(&mut self.users_finished),
            users_interrupted: std::mem::take(&mut self.users_interrupted),
            users_active,
            start_lag_us: (!lag.is_empty()).then_some(lag),
            late_starts: std::mem::take(&mut self.late_starts),
            replacements_held_back: std::mem::take(&mut self.replacements_held_back),
            connections: std::mem::take(&mut self.connections),
            couchdb_connections: std::mem::take(&mut self.couchdb_connections),
            sql_phases: std::mem::take(&mut self.sql_phases),
            finished,
            interval,
        }
    }
}

pub(crate) struct WorkerSetup {
    pub program: Arc<Program>,
    pub worker: usize,
    pub workers: usize,
    pub seed: u64,
    pub snapshots: Sender<Snapshot>,
    /// Recorders the collector emptied after merging them, to be recorded into again.
    pub emptied: Receiver<Vec<Recorder>>,
    pub stop: watch::Receiver<StopSignal>,
    pub gates: Arc<[ScenarioGate]>,
    pub ledger: Arc<RunLedger>,
    pub run_token: Arc<str>,
    /// The per-request log's output and the users running.
    pub request_log: Option<(RequestLogOutput, Arc<ActiveUsers>)>,
}

/// Runs one worker to the end of its share of the plan, or until told to stop. It tells
/// `arrival` when it is ready, and its schedule starts with the run's start that comes back.
pub(crate) fn run_worker(setup: WorkerSetup, arrival: Arrival) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime can always be built");
    let local = tokio::task::LocalSet::new();
    // A share's run can be cancelled before it starts (its coordinator gave no start).
    let Some(start) = arrival.ready() else { return };
    local.block_on(&runtime, worker_main(setup, start));
    // Dropping the LocalSet here cancels every user still running; they were counted as
    // interrupted in the final snapshot.
}

async fn worker_main(setup: WorkerSetup, run_start: RunStart) {
    let WorkerSetup {
        program,
        worker,
        workers,
        seed,
        snapshots,
        emptied,
        mut stop,
        gates,
        ledger,
        run_token,
        request_log,
    } = setup;
    let start = Instant::from_std(run_start.instant);
    let started_epoch_us =
        run_start.wall.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0);
    let options = &program.plan.options;
    let ctx = Rc::new(WorkerContext {
        program: program.clone(),
        worker,
        workers,
        start,
        metrics: RefCell::new(WorkerMetrics::new(&program)),
        limits: WorkerLimits::new(ledger, start)
            .ending_at(options.max_duration_ms.and_then(|ms| start.checked_add(Duration::from_millis(ms)))),
        late_threshold: Duration::from_micros(options.late_start_threshold_us),
        measure_from: start + Duration::from_millis(options.warmup_ms.unwrap_or(0)),
        resume_from: run_start.resume_from.map(Instant::from_std),
        user_numbers_from: {
            let attempt = program.share.resume.as_ref().map_or(0, |resume| u64::from(resume.attempt));
            let users = |s: &crate::lower::ScenarioProgram| crate::injection::user_indices(&s.injection);
            program.scenarios.iter().map(|scenario| attempt.saturating_mul(users(scenario))).collect()
        },
        seed,
        run_token,
        active_users: Cell::new(0),
        injectors_running: Cell::new(0),
        idle: Notify::new(),
        scenario_users: program.scenarios.iter().map(|_| Cell::new(0)).collect(),
        scenario_idle: program.scenarios.iter().map(|_| Notify::new()).collect(),
        gates,
        request_log: request_log
            .map(|(output, active)| RefCell::new(WorkerRequestLog::new(output, started_epoch_us, active))),
        protocols: crate::protocol::WorkerProtocols::new(&program.protocols),
    });

    for scenario in 0..program.scenarios.len() {
        ctx.injectors_running.set(ctx.injectors_running.get() + 1);
        tokio::task::spawn_local(run_scenario(ctx.clone(), scenario, seed ^ scenario as u64));
    }
    ctx.wake_if_idle();

    let interval = Duration::from_millis(options.snapshot_interval_ms);
    // A replacement share hands in the intervals from the one it takes over in: their numbers
    // are the run's, so its coordinator merges them with the other shares' of the same time.
    let mut intervals_done =
        run_start.resume_from.map_or(0, |from| crate::run::interval_index(from - run_start.instant, options));
    let mut ticker = tokio::time::interval_at(start + interval * (intervals_done as u32 + 1), interval);
    // With a graceful stop, users still running this long after the last profile ended are
    // interrupted.
    let profiles_end = program
        .scenarios
        .iter()
        .map(|s| s.injection.iter().map(|i| Duration::from_millis(i.duration_ms())).sum::<Duration>())
        .max()
        .unwrap_or_default();
    let graceful_deadline = options.graceful_stop_ms.map(|grace| start + profiles_end + Duration::from_millis(grace));
    let graceful_stop = async {
        match graceful_deadline {
            Some(deadline) => tokio::time::sleep_until(deadline).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(graceful_stop);
    loop {
        tokio::select! {
            _ = &mut graceful_stop => break,
            _ = ticker.tick() => {
                intervals_done += 1;
                let mut metrics = ctx.metrics.borrow_mut();
                while let Ok(recorders) = emptied.try_recv() {
                    metrics.spare.extend(recorders);
                }
                let snapshot = metrics.take_snapshot(worker, ctx.active_users.get(), false, intervals_done);
                drop(metrics);
                if let Some(log) = &ctx.request_log {
                    log.borrow_mut().hand_over();
                }
                if snapshots.send(snapshot).is_err() {
                    return;
                }
            }
            _ = stop.wait_for(|s| *s == StopSignal::Stop) => break,
            _ = ctx.idle.notified() => {
                if ctx.active_users.get() == 0 && ctx.injectors_running.get() == 0 {
                    break;
                }
            }
        }
    }
    ctx.limits.return_unused();
    let interrupted = ctx.active_users.get();
    let mut metrics = ctx.metrics.borrow_mut();
    metrics.users_interrupted += interrupted;
    let snapshot = metrics.take_snapshot(worker, 0, true, intervals_done + 1);
    // Users cut off now record nothing more (the LocalSet is dropped next): the log ends with
    // exactly what the last snapshot counted, also when the run was interrupted.
    if let Some(log) = &ctx.request_log {
        log.borrow_mut().hand_over();
    }
    let _ = snapshots.send(snapshot);
}

/// Arrivals made in a row, at most, before the injector lets the worker's other tasks run.
const SPAWN_BATCH: u64 = 1024;

/// This worker's share of one scenario: wait for the scenario it starts after, inject its
/// users, wait for them, then tell the other workers.
async fn run_scenario(ctx: Rc<WorkerContext>, scenario: usize, seed: u64) {
    let program = &ctx.program.scenarios[scenario];
    // Profile times count from the run's start, or from when the scenario waited for ended.
    let begin = match program.after {
        Some(parent) => {
            ctx.gates[parent].wait().await;
            Instant::now()
        }
        None => ctx.start,
    };
    let injection = &program.injection;
    if injection.iter().any(Injection::is_closed) {
        // Closed-model users are numbered on each worker and interleaved across workers (and
        // across the processes of a segmented run, through the share's stripe).
        let users_made = Rc::new(Cell::new(0u64));
        let schedule = &ctx.program.share.schedule;
        let slots: Vec<_> = closed_slots(injection, |user| schedule.owns_local(user, ctx.worker, ctx.workers))
            .into_iter()
            .map(|periods| {
                let ctx = ctx.clone();
                let users_made = users_made.clone();
                tokio::task::spawn_local(async move {
                    let mut hold_back = ReplacementHoldBack::default();
                    for period in periods {
                        let until = begin + period.until;
                        // A replacement share's slots start where it takes over.
                        let from = (begin + period.from).max(ctx.resume_from.unwrap_or(begin));
                        if from >= until {
                            continue;
                        }
                        tokio::time::sleep_until(from).await;
                        while Instant::now() < until && !ctx.limits.requests_exhausted() && !ctx.limits.stop_requested()
                        {
                            let number = ctx
                                .program
                                .share
                                .schedule
                                .global(users_made.get() * ctx.workers as u64 + ctx.worker as u64);
                            users_made.set(users_made.get() + 1);
                            let began = Instant::now();
                            // Not through a wrapper `async fn`: its future would hold a second
                            // copy of the arguments in every slot's task (32 bytes a user).
                            ctx.user_started(scenario);
                            let failed = match run_started_user(&ctx, scenario, number).await {
                                UserOutcome::Exhausted => return,
                                UserOutcome::Finished { failed } => failed,
                            };
                            if let Some(wait) = hold_back.after_user(failed, began.elapsed()) {
                                ctx.metrics.borrow_mut().replacements_held_back += 1;
                                tokio::time::sleep_until((Instant::now() + wait).min(until)).await;
                            }
                        }
                    }
                })
            })
            .collect();
        for slot in slots {
            let _ = slot.await;
        }
    } else {
        let mut timer = PreciseTimer::new();
        let mut made_since_yield = 0u64;
        let mut previous_offset = None;
        let schedule = &ctx.program.share.schedule;
        let mut arrivals = arrivals(injection, seed);
        for k in 0u64.. {
            let Some(offset) = arrivals.next() else { break };
            if !schedule.owns_local(k, ctx.worker, ctx.workers) {
                continue;
            }
            // Users are made as they are due. In a burst (`at_once_users(N)`), every user is
            // made before any runs, as `-c N` of wrk opens N connections, unless the users made
            // since the last pause could spend all the requests the run has left (this
            // worker's share of them, 1/W): those run first, and once the budget is spent no
            // more are made (`-c 1000000 -n 1` makes one). Arrivals spread in time that come
            // late, in a row, pause now and then for the worker's other tasks.
            let in_burst = previous_offset == Some(offset);
            previous_offset = Some(offset);
            let budget_covered =
                ctx.limits.requests_left().is_some_and(|left| made_since_yield * ctx.workers as u64 >= left);
            if budget_covered || (!in_burst && made_since_yield >= SPAWN_BATCH) {
                tokio::task::yield_now().await;
                made_since_yield = 0;
            }
            if ctx.limits.requests_exhausted() || ctx.limits.stop_requested() {
                break;
            }
            let mut intended = begin + offset;
            if let Some(from) = ctx.resume_from.filter(|&from| intended < from) {
                // Due before a replacement share took over. Users made at once are a
                // population, as closed-model users are: made again at the takeover. Arrivals
                // spread in time are a flow: what was due is load the run did not deliver,
                // never made late in a burst.
                if !arrivals.last_was_at_once() {
                    // Counted as made: hours of skipped arrivals still let the worker's other
                    // tasks (its ticker, the users made again) run every SPAWN_BATCH.
                    made_since_yield += 1;
                    continue;
                }
                intended = from;
            }
            timer.sleep_until(intended).await;
            made_since_yield += 1;
            // How late the arrival came is the generator's own lag, shown apart as the start
            // lag; the user's requests are measured from when they go out. An arrival does not
            // wait for the server, so none of its lateness is the server's.
            ctx.record_start_lag(intended, Instant::now());
            // Counted before the task first runs, so the wait below cannot see zero users
            // while this one is still to start.
            ctx.user_started(scenario);
            let user_ctx = ctx.clone();
            // The arrival's index is the user's number, the same whatever the number of workers.
            let number = k;
            tokio::task::spawn_local(async move {
                run_started_user(&user_ctx, scenario, number).await;
            });
        }
    }
    while ctx.scenario_users[scenario].get() > 0 {
        ctx.scenario_idle[scenario].notified().await;
    }
    ctx.gates[scenario].worker_finished();
    ctx.injectors_running.set(ctx.injectors_running.get() - 1);
    ctx.wake_if_idle();
}

/// Runs a user already counted by [`WorkerContext::user_started`]. `number` is unique within
/// the scenario: CouchDB steps derive document ids from it.
async fn run_started_user(ctx: &Rc<WorkerContext>, scenario: usize, number: u64) -> UserOutcome {
    let number = ctx.user_numbers_from[scenario] + number;
    let mut user = VirtualUser::new(ctx.clone(), scenario, ctx.user_seed(scenario, number), number);
    let outcome = user.run(&ctx.program.scenarios[scenario].steps).await;
    ctx.user_finished(scenario);
    outcome
}

/// How long a closed-model slot waits before it starts the next user when the users before it
/// failed fast. Without it, a user that ends at its first failure (`stop_iteration`, a refused
/// connection in every step) is replaced at once, and a failing server gets a storm of new
/// users that no real user would send (issue 23: 12,800 requests/s of 503s from 40 users).
#[derive(Debug, Default)]
struct ReplacementHoldBack {
    /// Users in a row, in this slot, that ended with a KO.
    failed_in_a_row: u32,
}

/// The hold-back after the first failed user; it doubles with each one after it.
const FIRST_HOLD_BACK: Duration = Duration::from_millis(10);
const MAX_HOLD_BACK: Duration = Duration::from_secs(1);

impl ReplacementHoldBack {
    /// After a user of the slot that ran for `ran`: how long to wait before the next one, if
    /// at all. A user without a KO resets the count; one that failed after running at least
    /// as long as the hold-back is replaced at once (it did not fail fast).
    fn after_user(&mut self, failed: bool, ran: Duration) -> Option<Duration> {
        if !failed {
            self.failed_in_a_row = 0;
            return None;
        }
        self.failed_in_a_row = self.failed_in_a_row.saturating_add(1);
        let doublings = (self.failed_in_a_row - 1).min(16);
        let hold_back = (FIRST_HOLD_BACK * 2u32.pow(doublings)).min(MAX_HOLD_BACK);
        hold_back.checked_sub(ran).filter(|wait| !wait.is_zero())
    }
}

/// A good 64-bit mixer, so that neighbouring user numbers get unrelated random streams.
fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_holds_back_users_that_keep_failing_fast() {
        let mut slot = ReplacementHoldBack::default();
        let ms = Duration::from_millis;
        assert_eq!(slot.after_user(false, ms(0)), None);
        assert_eq!(slot.after_user(true, ms(1)), Some(ms(9)));
        assert_eq!(slot.after_user(true, ms(0)), Some(ms(20)));
        assert_eq!(slot.after_user(true, ms(0)), Some(ms(40)));
        // A user that failed after running longer than the hold-back did not fail fast.
        assert_eq!(slot.after_user(true, ms(500)), None);
        for _ in 0..40 {
            slot.after_user(true, ms(0));
        }
        assert_eq!(slot.after_user(true, ms(0)), Some(MAX_HOLD_BACK));
        // A user without a KO starts the count again.
        assert_eq!(slot.after_user(false, ms(0)), None);
        assert_eq!(slot.after_user(true, ms(0)), Some(FIRST_HOLD_BACK));
    }
}
