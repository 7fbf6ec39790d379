//! Running a program: workers on their own threads, and the collector on a thread of its own
//! merging their snapshots and feeding the sink, while the caller's thread waits.

use crate::lower::Program;
use crate::process_usage::process_cpu_time;
use crate::request_log::ActiveUsers;
use crate::run_limits::RunLedger;
use crate::session::functions::FunctionCost;
use crate::start_line::{Arrival, RunStart, StartLine};
use crate::worker::{run_worker, ScenarioGate, StopSignal, WorkerSetup};
use horde_metrics::{Recorder, RequestLogOutput, RunStatus, Sink, Snapshot, ThresholdMonitor, Totals};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::watch;

/// A handle to stop a run from outside (a signal handler, a test).
pub struct RunControl {
    stop: watch::Sender<StopSignal>,
    interrupted: AtomicBool,
}

impl Default for RunControl {
    fn default() -> Self {
        RunControl { stop: watch::Sender::new(StopSignal::Run), interrupted: AtomicBool::new(false) }
    }
}

impl RunControl {
    pub fn new() -> Arc<RunControl> {
        Arc::new(RunControl::default())
    }

    /// Stops the run: running users are interrupted, what was measured is kept, and the run
    /// ends with status `interrupted`.
    pub fn interrupt(&self) {
        self.interrupted.store(true, Ordering::SeqCst);
        self.stop.send_replace(StopSignal::Stop);
    }

    pub fn is_interrupted(&self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }
}

/// The end of a run: everything measured and how it ended.
pub struct RunResult {
    pub totals: Totals,
    pub status: RunStatus,
}

/// How many workers a run gets: the plan's choice, or one per core this process may use.
pub fn worker_count(program: &Program) -> usize {
    match program.plan.options.workers {
        Some(n) => n as usize,
        None => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
    }
}

/// Runs the program to its end (or its limits, or an interruption), calling `sink` at every
/// snapshot interval and once at the end.
pub fn run(program: Arc<Program>, control: &RunControl, sink: &mut (dyn Sink + Send)) -> RunResult {
    crate::tls_trust::use_ring_by_default();
    run_with_request_log(program, control, sink, None)
}

/// [`run`], with every measured request also logged to `request_log` (`--request-log`): its
/// channel is closed when this returns, once every worker has handed in its last records.
pub fn run_with_request_log(
    program: Arc<Program>,
    control: &RunControl,
    sink: &mut (dyn Sink + Send),
    request_log: Option<RequestLogOutput>,
) -> RunResult {
    match run_program(program, control, sink, request_log, Role::Local) {
        Ok(result) => result,
        Err(err) => unreachable!("a local run has no start to wait for: {err}"),
    }
}

/// What this process is in the run: all of it, or a share of a distributed run whose start
/// comes from its coordinator and whose intervals go to it (cluster.rs).
#[derive(Clone, Copy)]
pub(crate) enum Role<'a> {
    Local,
    Share(&'a crate::cluster::ShareRole),
}

/// Runs the program as `role` says. Only a share can fail, before it starts: its coordinator
/// gave no start, and nothing was sent.
pub(crate) fn run_program(
    program: Arc<Program>,
    control: &RunControl,
    sink: &mut (dyn Sink + Send),
    request_log: Option<RequestLogOutput>,
    role: Role<'_>,
) -> Result<RunResult, crate::cluster::ClusterError> {
    let options = program.plan.options.clone();
    let workers = worker_count(&program).max(1);
    let seed = crate::segment::shared_seed(&program.plan).unwrap_or_else(|| {
        SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
    });
    let (snapshots, received) = mpsc::channel();
    let run_token = run_token(SystemTime::now());
    let start_line = match role {
        Role::Local => StartLine::new(workers),
        Role::Share(_) => StartLine::external(workers),
    };
    let gates: Arc<[ScenarioGate]> = program.scenarios.iter().map(|_| ScenarioGate::new(workers)).collect();
    let share = &program.share;
    let lease = match role {
        Role::Local => None,
        Role::Share(share) => share.lease(),
    };
    let ledger =
        RunLedger::leased(share.budget(options.max_requests), &options.throttle, workers, share.work.clone(), lease);
    crate::descriptors::expect_connections(crate::descriptors::connections_needed_at_once(&program));
    let active_users = Arc::new(ActiveUsers::new(workers, program.scenarios.len()));
    let mut give_back = Vec::with_capacity(workers);
    let threads: Vec<_> = (0..workers)
        .map(|worker| {
            let (emptied_sender, emptied) = mpsc::channel();
            give_back.push(emptied_sender);
            let setup = WorkerSetup {
                program: program.clone(),
                worker,
                workers,
                seed,
                snapshots: snapshots.clone(),
                emptied,
                stop: control.stop.subscribe(),
                gates: gates.clone(),
                ledger: ledger.clone(),
                run_token: run_token.clone(),
                request_log: request_log.clone().map(|output| (output, active_users.clone())),
            };
            let arrival = Arrival::new(start_line.clone());
            let functions = program.session_functions.clone();
            std::thread::Builder::new()
                .name(format!("horde-worker-{worker}"))
                .spawn(move || match functions {
                    // The front end may prepare the thread for its calls (Python registers it
                    // once, rather than at every call).
                    Some(functions) => {
                        let mut setup = Some((setup, arrival));
                        functions.on_worker_thread(&mut || {
                            if let Some((setup, arrival)) = setup.take() {
                                run_worker(setup, arrival);
                            }
                        })
                    }
                    None => run_worker(setup, arrival),
                })
                .expect("spawning a worker thread")
        })
        .collect();
    drop(snapshots);
    // The workers hold the only senders now: the log's writer sees its end when they do.
    drop(request_log);
    // The run's clock starts once every worker is ready (see `StartLine`); a share's, at the
    // instant its coordinator gives once every share is.
    // A share also measures how late after its given start it let its users go: its part of
    // the skew between the shares' starts.
    let (RunStart { instant: start, wall: started_at, resume_from }, started_late) = match role {
        Role::Local => (start_line.wait().expect("a local run is never cancelled"), Duration::ZERO),
        Role::Share(share) => {
            start_line.wait_for_every_worker();
            match share.wait_for_start(workers) {
                Ok(start) => {
                    // Read before the workers are let go: a worker woken on this core would
                    // otherwise delay the reading, not the start.
                    let late = start.resume_from.unwrap_or(start.instant).elapsed();
                    if let Some(resume_from) = start.resume_from {
                        ledger.skip_throttle_slots_before(resume_from - start.instant);
                    }
                    start_line.set_start(start);
                    (start, late)
                }
                Err(err) => {
                    start_line.cancel();
                    for thread in threads {
                        let _ = thread.join();
                    }
                    return Err(err);
                }
            }
        }
    };

    // The collector runs on a thread of its own, below the workers' priority: its work once
    // an interval (merging snapshots, every row's percentiles, summary.json) takes tens of
    // milliseconds with hundreds of rows, and must never be why a worker sharing its core
    // starts a request late. It also polls rather than being woken by the workers' sends,
    // which would tend to pull it onto the sender's core.
    let (totals, status) = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("horde-collector".into())
            .spawn_scoped(scope, move || {
                give_way_to_workers();
                let function_cost = (!program.session_function_keys.is_empty()).then_some(&*program.function_cost);
                // A share's thresholds are judged by its coordinator, on every share's data.
                let thresholds = match role {
                    Role::Local => program.thresholds.clone(),
                    Role::Share(_) => Vec::new(),
                };
                let thresholds = ThresholdMonitor::new(thresholds, options.snapshot_interval_ms);
                let protocols = &program.protocols;
                let mut tap: Box<dyn CollectorTap> = match role {
                    Role::Local => Box::new(LocalRun),
                    Role::Share(share) => {
                        Box::new(share.relay(ledger.clone(), started_late, resume_from.map(|from| from - start)))
                    }
                };
                let run = CollectorRun {
                    workers,
                    started_at,
                    start,
                    first_interval: resume_from.map_or(0, |from| interval_index(from - start, &options)),
                    ledger: &ledger,
                    function_cost,
                    protocols,
                    tap: &mut *tap,
                };
                collect(&options, run, control, received, &give_back, thresholds, sink)
            })
            .expect("spawning the collector thread")
            .join()
            .expect("the collector does not panic")
    });
    for thread in threads {
        // A worker that panicked has already lost its measurements; the rest are kept.
        let _ = thread.join();
    }
    Ok(RunResult { totals, status })
}

/// How much less the collector thread weighs than a worker (a nice value: about 1/10 of a
/// worker's share of a contended core, and a worker waking preempts it).
const COLLECTOR_NICE: i32 = 10;

fn give_way_to_workers() {
    // Lowering one's own priority is always allowed; if it fails, the run goes on as before.
    let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), COLLECTOR_NICE);
}

/// What the collector knows of the run besides its options.
pub(crate) struct CollectorRun<'a> {
    /// Workers, or a coordinator's shares: the senders of the snapshots.
    pub workers: usize,
    pub started_at: SystemTime,
    pub start: Instant,
    /// The first snapshot interval the workers hand in, less one: 0, but a replacement share
    /// takes over later in the run.
    pub first_interval: u64,
    /// Where a scenario asks the run to stop.
    pub ledger: &'a RunLedger,
    /// The session functions' cost, when the plan calls any.
    pub function_cost: Option<&'a FunctionCost>,
    /// What the protocols report as the run goes (the rows of a SQL phase).
    pub protocols: &'a crate::protocol::ProtocolPrograms,
    /// What else the collector does: nothing in a local run.
    pub tap: &'a mut dyn CollectorTap,
}

/// What a collector does besides merging snapshots and feeding its sink: nothing in a local
/// run; a share relays its intervals to its coordinator, and a coordinator reports its shares
/// and passes stops on to them (cluster.rs).
pub(crate) trait CollectorTap: Send {
    /// A worker's snapshot, before the totals take it.
    fn snapshot(&mut self, _snapshot: &Snapshot) {}
    /// Every running worker has handed in the intervals up to `complete`; None once the run
    /// has ended and every worker has handed in its last.
    fn complete(&mut self, _complete: Option<u64>) {}
    /// Polled at every turn of the collector: a stop asked from outside the process, and why.
    fn stop_requested(&mut self) -> Option<String> {
        None
    }
    /// Called at every turn of the collector (every 20 ms at most), for what cannot wait for
    /// the next interval.
    fn poll(&mut self) {}
    /// The collector has told the workers to stop (once, with the run's status then).
    fn stopping(&mut self, _status: RunStatus) {}
    /// Just before the sink is called.
    fn before_sink(&mut self, _totals: &mut Totals) {}
}

/// The tap of a local run, which does nothing.
pub(crate) struct LocalRun;

impl CollectorTap for LocalRun {}

/// The collector: merges the workers' snapshots, feeds the sink once per interval and at the
/// end, and stops the run at its deadline or interruption.
pub(crate) fn collect(
    options: &horde_plan::RunOptions,
    run: CollectorRun<'_>,
    control: &RunControl,
    received: mpsc::Receiver<Snapshot>,
    give_back: &[mpsc::Sender<Vec<Recorder>>],
    mut thresholds: ThresholdMonitor,
    sink: &mut (dyn Sink + Send),
) -> (Totals, RunStatus) {
    let CollectorRun { workers, started_at, start, first_interval, ledger, function_cost, protocols, tap } = run;
    let cpu_at_start = process_cpu_time();
    let cpu_since_start = || process_cpu_time().zip(cpu_at_start).map(|(now, then)| now.saturating_sub(then));
    let mut totals = Totals::new(started_at, workers);
    totals.warmup = Duration::from_millis(options.warmup_ms.unwrap_or(0));
    let deadline = options.max_duration_ms.and_then(|ms| start.checked_add(Duration::from_millis(ms)));
    let interval = Duration::from_millis(options.snapshot_interval_ms.max(1));
    let mut intervals = IntervalProgress::new(workers, first_interval);
    let mut status = RunStatus::Completed;
    let mut stop_sent = false;
    let mut tap_told_of_stop = false;
    while !intervals.all_finished() {
        let now = Instant::now();
        tap.poll();
        if !stop_sent {
            if control.is_interrupted() {
                status = RunStatus::Interrupted;
                stop_sent = true;
            } else if deadline.is_some_and(|d| now >= d) {
                status = RunStatus::LimitReached;
                control.stop.send_replace(StopSignal::Stop);
                stop_sent = true;
            } else if let Some(reason) = ledger.stop_reason().map(str::to_string).or_else(|| tap.stop_requested()) {
                status = RunStatus::Stopped;
                totals.stop_reason = Some(reason);
                control.stop.send_replace(StopSignal::Stop);
                stop_sent = true;
            }
        }
        if stop_sent && !tap_told_of_stop {
            tap.stopping(status);
            tap_told_of_stop = true;
        }
        // Short enough to notice an interruption and the end quickly; the deadline is met
        // on time.
        let mut wait = Duration::from_millis(20);
        if let Some(deadline) = deadline.filter(|_| !stop_sent) {
            wait = wait.min(deadline.saturating_duration_since(now));
        }
        // On its own clock: see `run`.
        std::thread::sleep(wait);
        let mut disconnected = false;
        loop {
            match received.try_recv() {
                Ok(snapshot) => {
                    tap.snapshot(&snapshot);
                    intervals.received(snapshot.worker, snapshot.interval, snapshot.finished);
                    let worker = snapshot.worker;
                    let emptied = totals.absorb(snapshot);
                    // A worker that has ended no longer listens; its recorders are dropped.
                    let _ = give_back[worker].send(emptied);
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    disconnected = true;
                    break;
                }
            }
        }
        // The results are written once every running worker has handed in an interval, and
        // cover exactly the intervals they describe: a killed run's summary.json agrees with
        // its own duration. A worker that falls a whole interval behind does not hold them up.
        if let Some(complete) = intervals.newly_complete() {
            tap.complete(Some(complete));
            totals.complete_intervals = complete;
            // Never backwards, even after a write for a worker that fell behind.
            totals.elapsed = totals.elapsed.max(interval * complete as u32);
            totals.generator_cpu = cpu_since_start();
            totals.session_functions = function_cost.map(FunctionCost::read);
            protocols.report_progress(&mut totals);
            // Judged before the sink takes the intervals; an abort stops the users as the
            // deadline does, and everything measured is kept.
            if let Some(reason) = thresholds.interval(&totals, complete) {
                if !stop_sent {
                    status = RunStatus::AbortedByThreshold;
                    totals.stop_reason = Some(reason);
                    control.stop.send_replace(StopSignal::Stop);
                    stop_sent = true;
                }
            }
            tap.before_sink(&mut totals);
            sink.interval(&mut totals);
        } else if start.elapsed() > interval * (intervals.written as u32 + 2) {
            totals.elapsed = start.elapsed();
            totals.generator_cpu = cpu_since_start();
            intervals.written += 1;
            totals.session_functions = function_cost.map(FunctionCost::read);
            protocols.report_progress(&mut totals);
            tap.before_sink(&mut totals);
            sink.interval(&mut totals);
        }
        if disconnected {
            break;
        }
    }
    // Workers stop by themselves when told to; one that was already done when Ctrl-C came
    // must not turn an interrupted run into a completed one.
    if control.is_interrupted() {
        status = RunStatus::Interrupted;
    }
    // The users that asked for the stop may have been the last ones, ending the run before the
    // collector looked.
    if let (RunStatus::Completed, Some(reason)) = (status, ledger.stop_reason()) {
        status = RunStatus::Stopped;
        totals.stop_reason = Some(reason.to_string());
    }
    // Users whose loops end with the run's duration can finish before a busy collector
    // looked at the clock: the run still ended at its limit.
    if status == RunStatus::Completed && deadline.is_some_and(|d| Instant::now() >= d) {
        status = RunStatus::LimitReached;
    }
    if status == RunStatus::Completed {
        let (ok, ko) = totals.request_counts();
        if options.max_requests.is_some_and(|max| ok + ko >= max) {
            status = RunStatus::LimitReached;
        }
    }
    totals.elapsed = start.elapsed();
    totals.generator_cpu = cpu_since_start();
    totals.session_functions = function_cost.map(FunctionCost::read);
    totals.thresholds = thresholds.finish(&totals);
    tap.complete(None);
    tap.before_sink(&mut totals);
    sink.finish(&mut totals, status);
    (totals, status)
}

/// Which snapshot intervals every worker has handed in.
pub(crate) struct IntervalProgress {
    /// Per worker: the last interval received, and whether it was the worker's last.
    workers: Vec<(u64, bool)>,
    /// The last interval the results were written for.
    written: u64,
}

impl IntervalProgress {
    fn new(workers: usize, first_interval: u64) -> IntervalProgress {
        IntervalProgress { workers: vec![(first_interval, false); workers], written: first_interval }
    }

    fn received(&mut self, worker: usize, interval: u64, finished: bool) {
        if let Some(state) = self.workers.get_mut(worker) {
            *state = (state.0.max(interval), state.1 || finished);
        }
    }

    fn all_finished(&self) -> bool {
        self.workers.iter().all(|(_, finished)| *finished)
    }

    /// The newest interval that every running worker has handed in, if it was not written yet.
    fn newly_complete(&mut self) -> Option<u64> {
        let complete = self.workers.iter().filter(|(_, finished)| !finished).map(|(interval, _)| *interval).min()?;
        (complete > self.written).then(|| {
            self.written = complete;
            complete
        })
    }
}

/// A short token unique to a run (its start in milliseconds, base 36): CouchDB steps put it in
/// document ids so that runs against the same database never collide.
fn run_token(started_at: SystemTime) -> Arc<str> {
    let mut ms = started_at.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
    let mut digits = Vec::new();
    loop {
        digits.push(b"0123456789abcdefghijklmnopqrstuvwxyz"[(ms % 36) as usize]);
        ms /= 36;
        if ms == 0 {
            break;
        }
    }
    digits.reverse();
    String::from_utf8(digits).expect("ASCII digits").into()
}

/// The snapshot interval an instant `elapsed` after the run's start falls in, counted from 0:
/// a replacement share's first interval is the one it takes over in.
pub(crate) fn interval_index(elapsed: Duration, options: &horde_plan::RunOptions) -> u64 {
    (elapsed.as_millis() / u128::from(options.snapshot_interval_ms.max(1))) as u64
}
