//! Running a program: workers on their own threads, and the collector on the caller's thread
//! merging their snapshots and feeding the sink.

use crate::lower::Program;
use crate::worker::{run_worker, ScenarioGate, StopSignal, WorkerSetup};
use horde_metrics::{RunStatus, Sink, Totals};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
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
pub fn run(program: Arc<Program>, control: &RunControl, sink: &mut dyn Sink) -> RunResult {
    let options = program.plan.options.clone();
    let workers = worker_count(&program).max(1);
    let seed = options.seed.unwrap_or_else(|| {
        SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
    });
    let started_at = SystemTime::now();
    let start = Instant::now();
    let (snapshots, received) = mpsc::channel();
    let run_token = run_token(started_at);
    let gates: Arc<[ScenarioGate]> = program.scenarios.iter().map(|_| ScenarioGate::new(workers)).collect();
    let threads: Vec<_> = (0..workers)
        .map(|worker| {
            let setup = WorkerSetup {
                program: program.clone(),
                worker,
                workers,
                start,
                seed,
                snapshots: snapshots.clone(),
                stop: control.stop.subscribe(),
                gates: gates.clone(),
                run_token: run_token.clone(),
            };
            std::thread::Builder::new()
                .name(format!("horde-worker-{worker}"))
                .spawn(move || run_worker(setup))
                .expect("spawning a worker thread")
        })
        .collect();
    drop(snapshots);

    let mut totals = Totals::new(started_at, workers);
    totals.warmup = Duration::from_millis(options.warmup_ms.unwrap_or(0));
    let deadline = options.max_duration_ms.map(|ms| start + Duration::from_millis(ms));
    let interval = Duration::from_millis(options.snapshot_interval_ms);
    let mut next_report = start + interval;
    let mut finished = 0;
    let mut status = RunStatus::Completed;
    let mut stop_sent = false;
    while finished < workers {
        let now = Instant::now();
        if !stop_sent {
            if control.is_interrupted() {
                status = RunStatus::Interrupted;
                stop_sent = true;
            } else if deadline.is_some_and(|d| now >= d) {
                status = RunStatus::LimitReached;
                control.stop.send_replace(StopSignal::Stop);
                stop_sent = true;
            }
        }
        let mut wake = next_report;
        if let Some(deadline) = deadline {
            wake = wake.min(deadline);
        }
        // Short enough to notice an interruption quickly.
        let wait = wake.saturating_duration_since(now).min(Duration::from_millis(50));
        match received.recv_timeout(wait) {
            Ok(snapshot) => {
                finished += usize::from(snapshot.finished);
                totals.absorb(snapshot);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if Instant::now() >= next_report {
            totals.elapsed = start.elapsed();
            sink.interval(&mut totals);
            next_report += interval;
        }
    }
    for thread in threads {
        // A worker that panicked has already lost its measurements; the rest are kept.
        let _ = thread.join();
    }
    if status == RunStatus::Completed {
        let (ok, ko) = totals.request_counts();
        if options.max_requests.is_some_and(|max| ok + ko >= max) {
            status = RunStatus::LimitReached;
        }
    }
    totals.elapsed = start.elapsed();
    sink.finish(&mut totals, status);
    RunResult { totals, status }
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
