//! The coordinator: waits for every share to be ready, gives them one start, and merges their
//! intervals with the collector of a local run, the shares standing for its workers.

use super::{ClusterError, CoordinatorLink, LostShare, ShareClock};
use crate::lower::Program;
use crate::run::{collect, CollectorRun, CollectorTap, RunControl, RunResult};
use crate::run_limits::RunLedger;
use crate::segment::Stripe;
use horde_metrics::wire::{ShareInterval, ShareLog, ShareMessage, ShareReady, ShareRequests, ShareRowsWanted};
use horde_metrics::{
    MachineStats, MissedLoad, RunStatus, ShareReplacement, Sink, Snapshot, SnapshotDelay, ThresholdMonitor, Totals,
};
use horde_plan::{Plan, ShareResume};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

/// How a coordinator waits for its shares.
#[derive(Debug, Clone)]
pub struct CoordinatorOptions {
    /// The shares of the run: the segments of its execution segment sequence.
    pub shares: usize,
    /// How long every share has to be ready, from the coordinator's start.
    pub ready_timeout: Duration,
    /// How far ahead of "every share is ready" the start is set, for it to reach every share
    /// in time.
    pub start_margin: Duration,
    /// A share not heard from for this long is suspect: shown live (`machines[].silent_s`, the
    /// progress line), nothing else changes.
    pub suspect_after: Duration,
    /// A share not heard from for this long is lost, and its results say so.
    pub silence_limit: Duration,
    /// What a lost share does to the run.
    pub on_loss: WorkerLossPolicy,
    /// Each share's plan, as launched: a replacement runs its lost share's, resumed
    /// (`WorkerLossPolicy::Replace`; without them a lost share cannot be replaced).
    pub share_plans: Vec<Plan>,
    /// Where the request log records the shares send go (the file's writer), when the run
    /// keeps one: the current attempt's records of a share not lost, as its intervals are.
    pub request_log: Option<mpsc::Sender<Vec<u8>>>,
}

/// What a lost share (its worker dead, gone from the cluster, or silent) does to the run.
/// Either way the results say which share was lost, when and why (`machines[].lost`), and the
/// load it did not deliver is not in them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WorkerLossPolicy {
    /// The other shares go on to the run's end.
    #[default]
    Continue,
    /// Every share stops: the run ends `stopped`.
    Abort,
    /// The share starts again on a spare machine, from a little after the loss on: its
    /// schedule stays the run's, so what was due in between is not delivered, and nothing is
    /// sent late. Without a spare, as `Continue`.
    Replace,
}

impl CoordinatorOptions {
    /// The defaults of issue 26's plan: 30 s to be ready, a start 0.5 s ahead, suspect after
    /// 3 s of silence, lost after 10 s.
    pub fn new(shares: usize) -> CoordinatorOptions {
        CoordinatorOptions {
            shares,
            ready_timeout: Duration::from_secs(30),
            start_margin: Duration::from_millis(500),
            suspect_after: Duration::from_secs(3),
            silence_limit: Duration::from_secs(10),
            on_loss: WorkerLossPolicy::Continue,
            share_plans: Vec::new(),
            request_log: None,
        }
    }
}

/// Coordinates a run of `program` (the whole plan, without a segment) over the shares behind
/// `link`: `sink` gets the merged results, judged by the plan's thresholds, with a `machines`
/// entry per share.
pub fn run_coordinated(
    program: Arc<Program>,
    control: &RunControl,
    sink: &mut (dyn Sink + Send),
    link: Arc<dyn CoordinatorLink>,
    options: &CoordinatorOptions,
) -> Result<RunResult, ClusterError> {
    let shares = options.shares;
    let ready = match wait_until_ready(&*link, control, options) {
        Ok(ready) => ready,
        Err(err) => {
            link.stop(&err.to_string());
            return Err(err);
        }
    };
    let (start, started_at) = (Instant::now() + options.start_margin, SystemTime::now() + options.start_margin);
    link.start(started_at).map_err(ClusterError::Link)?;
    std::thread::sleep(start.saturating_duration_since(Instant::now()));

    let machines = ready
        .into_iter()
        .map(|ready| {
            let grants = options.share_plans.get(ready.share).and_then(RowLedger::of);
            Machine { rows: grants, ..Machine::new(link.clock(ready.share), ready) }
        })
        .collect();
    let machines: Arc<Mutex<Vec<Machine>>> = Arc::new(Mutex::new(machines));
    let ledger = RunLedger::new(None, &[], shares, Stripe::whole());
    let (snapshots, received) = mpsc::channel();
    let done = Arc::new(AtomicBool::new(false));
    let inlet = Inlet {
        link: link.clone(),
        machines: machines.clone(),
        ledger: ledger.clone(),
        snapshots,
        done: done.clone(),
        silence_limit: options.silence_limit,
        ready_timeout: options.ready_timeout,
        launched: mpsc::channel(),
        on_loss: options.on_loss,
        share_plans: options.share_plans.clone(),
        request_log: options.request_log.clone(),
        start,
        interval: Duration::from_millis(program.plan.options.snapshot_interval_ms),
    };
    let inlet = std::thread::Builder::new()
        .name("horde-inlet".into())
        .spawn(move || inlet.run())
        .expect("spawning the coordinator's inlet thread");
    // Emptied recorders go back to workers; shares are processes, so they are dropped.
    let give_back: Vec<_> = (0..shares).map(|_| mpsc::channel().0).collect();
    let options_run = &program.plan.options;
    let thresholds = ThresholdMonitor::new(program.thresholds.clone(), options_run.snapshot_interval_ms);
    let mut tap = CoordinatorTap { link, machines, suspect_after: options.suspect_after };
    let run = CollectorRun {
        workers: shares,
        started_at,
        start,
        first_interval: 0,
        ledger: &ledger,
        function_cost: None,
        protocols: &program.protocols,
        tap: &mut tap,
    };
    let (totals, status) = collect(options_run, run, control, received, &give_back, thresholds, sink);
    done.store(true, Ordering::Relaxed);
    let _ = inlet.join();
    Ok(RunResult { totals, status })
}

/// Waits for every share's ready message. A share lost meanwhile (its task failed: a plan it
/// cannot run, a file it cannot read; its worker died) fails the run at once, saying why:
/// nothing has been sent.
fn wait_until_ready(
    link: &dyn CoordinatorLink,
    control: &RunControl,
    options: &CoordinatorOptions,
) -> Result<Vec<ShareReady>, ClusterError> {
    let began = Instant::now();
    let mut ready: Vec<Option<ShareReady>> = vec![None; options.shares];
    while ready.iter().any(Option::is_none) {
        if control.is_interrupted() {
            return Err(ClusterError::Interrupted);
        }
        if let Some(LostShare { share, reason, .. }) = link.lost_shares().into_iter().next() {
            return Err(ClusterError::NotStarted { share, reason });
        }
        let left = options.ready_timeout.saturating_sub(began.elapsed());
        if left.is_zero() {
            let missing = (0..options.shares).filter(|&i| ready[i].is_none()).collect();
            return Err(ClusterError::NotReady { missing, waited: options.ready_timeout });
        }
        let Some(bytes) = link.receive(left.min(Duration::from_millis(50))).map_err(ClusterError::Link)? else {
            continue;
        };
        match ShareMessage::decode(&bytes).map_err(|err| ClusterError::Wire(err.to_string()))? {
            ShareMessage::Ready(share) if share.share < options.shares => {
                let at = share.share;
                ready[at] = Some(share);
            }
            ShareMessage::Ready(share) => {
                return Err(ClusterError::Wire(format!(
                    "share {} ({}, pid {}) is ready, but the run has {} shares: the shares and the coordinator \
                     were given different execution segment sequences",
                    share.share, share.host, share.pid, options.shares
                )))
            }
            // No feed runs before the start, no request is logged: another run's, or a late
            // one of this one's.
            ShareMessage::RowsWanted(_) | ShareMessage::Requests(_) => {}
            ShareMessage::Interval(interval) => {
                return Err(ClusterError::Wire(format!(
                    "share {} sent an interval before the start: it belongs to another run",
                    interval.share
                )))
            }
        }
    }
    Ok(ready.into_iter().flatten().collect())
}

/// A share as the coordinator sees it.
struct Machine {
    ready: ShareReady,
    clock: Option<ShareClock>,
    started_late_ns: Option<u64>,
    peak_memory_bytes: Option<u64>,
    snapshot_delays: DelaySum,
    requests: u64,
    cpu_ns: Option<u64>,
    late_starts: u64,
    intervals: u64,
    last_interval: u64,
    last_heard: Instant,
    finished: bool,
    lost: Option<String>,
    replaced: Vec<ShareReplacement>,
    /// The load it did not deliver, one window per loss, as computed (on a thread of its own).
    missed: Vec<MissedLoad>,
    /// A replacement launched and not ready yet: given the ready timeout, not the silence limit.
    awaiting_ready: bool,
    /// A replacement runs, and the load missed until its takeover is counted once it says when
    /// that was (with its first interval).
    missed_to_count: bool,
    /// The CPU time of its attempts already replaced (`cpu_ns` is the current one's).
    cpu_ns_before: u64,
    /// Its row grants, when its plan has them.
    rows: Option<RowLedger>,
    /// What the coordinator merged of the current attempt, to check against its log.
    merged: ShareLog,
    /// The current attempt's own count of what it sent, with its last interval.
    log: Option<ShareLog>,
}

impl Machine {
    fn new(clock: Option<ShareClock>, ready: ShareReady) -> Machine {
        Machine {
            ready,
            clock,
            started_late_ns: None,
            peak_memory_bytes: None,
            snapshot_delays: DelaySum::default(),
            requests: 0,
            cpu_ns: None,
            late_starts: 0,
            intervals: 0,
            last_interval: 0,
            last_heard: Instant::now(),
            finished: false,
            lost: None,
            replaced: Vec::new(),
            missed: Vec::new(),
            awaiting_ready: false,
            missed_to_count: false,
            cpu_ns_before: 0,
            rows: None,
            merged: ShareLog::default(),
            log: None,
        }
    }

    fn took(&mut self, interval: &ShareInterval) {
        let snapshot = &interval.snapshot;
        self.requests += snapshot.requests.iter().map(|(_, recorder)| recorder.count()).sum::<u64>();
        self.cpu_ns = interval.cpu_ns.or(self.cpu_ns);
        self.started_late_ns = interval.started_late_ns.or(self.started_late_ns);
        self.peak_memory_bytes = self.peak_memory_bytes.max(interval.peak_memory_bytes);
        self.late_starts += snapshot.late_starts;
        self.intervals += 1;
        self.merged.intervals += 1;
        self.merged.requests += snapshot.requests.iter().map(|(_, recorder)| recorder.count()).sum::<u64>();
        self.log = interval.log.or(self.log);
        if let (Some(after_ms), Some(replacement)) = (interval.resumed_after_ms, self.replaced.last_mut()) {
            replacement.resume_after_s = after_ms as f64 / 1_000.0;
        }
        self.last_interval = self.last_interval.max(snapshot.interval);
        self.last_heard = Instant::now();
        self.finished |= snapshot.finished;
    }

    /// What the results say of it; `suspect_after`: silence shown while the run goes.
    fn stats(&self, suspect_after: Duration) -> MachineStats {
        let silent = self.last_heard.elapsed();
        let suspect = !self.finished && silent >= suspect_after;
        MachineStats {
            share: self.ready.share,
            segment: self.ready.segment.clone(),
            host: self.ready.host.clone(),
            pid: self.ready.pid,
            threads: self.ready.threads,
            requests: self.requests,
            cpu_ms: (self.cpu_ns_before + self.cpu_ns.unwrap_or(0)) / 1_000_000,
            late_starts: self.late_starts,
            intervals: self.intervals,
            peak_memory_bytes: self.peak_memory_bytes,
            clock_offset_us: self.clock.map(|clock| clock.offset_ns / 1_000),
            clock_error_us: self.clock.map(|clock| clock.round_trip_ns as f64 / 2_000.0),
            start_late_us: self.started_late_ns.map(|late| late as f64 / 1_000.0),
            snapshot_delay_ms: self.snapshot_delays.stats(),
            silent_s: suspect.then_some(silent.as_secs_f64()),
            delivered: self.finished && self.lost.is_none() && self.replaced.is_empty(),
            lost: self.lost.clone(),
            missed: self.missed.clone(),
            replaced: self.replaced.clone(),
            log_requests: self.log.map(|log| log.requests),
            verified: self.log.map(|log| log == self.merged),
            row_waits: self.rows.as_ref().map(|rows| rows.waits_before + rows.waits),
        }
    }
}

/// The coordinator's account of one share's row grants: how far each feeder's takes may go,
/// then each run-wide counter's (the order of the grants' bounds).
/// The largest bound ever granted is where a replacement starts: no attempt can have used a
/// row past it, whichever of its messages were lost.
struct RowLedger {
    /// Each feeder's takes, as last reported.
    taken: Vec<u64>,
    /// The most takes of each feeder in one interval: the headroom grows with them.
    most_per_interval: Vec<u64>,
    /// The largest bound granted each feeder, the plan's first one included.
    granted: Vec<u64>,
    /// The takes granted at first, and the least headroom later.
    initial: u64,
    /// Which cursors grants bound: queue and shuffle feeders' and the counters'. A circular or
    /// random feeder's takes are reported too, but it reuses rows: its replacement starts as
    /// the plan says, and nothing of it is skipped.
    bounded: Vec<bool>,
    /// Where each cursor started in the share's plan.
    plan_from: Vec<u64>,
    /// How many of the cursors are feeders' (the counters' follow): the rows skipped are theirs.
    feeders: usize,
    /// Takes that waited for a grant: the current attempt's, and the earlier ones'.
    waits: u64,
    waits_before: u64,
}

impl RowLedger {
    fn of(plan: &Plan) -> Option<RowLedger> {
        let grants = plan.options.execution_segment.as_ref()?.row_grants.as_ref()?;
        let from: Vec<u64> = grants.from.iter().chain(&grants.counters_from).copied().collect();
        Some(RowLedger {
            most_per_interval: vec![0; from.len()],
            granted: from.iter().map(|from| from.saturating_add(grants.initial)).collect(),
            bounded: (0..grants.from.len())
                .map(|i| plan.feeders.get(i).is_none_or(|feeder| feeder.strategy.runs_out()))
                .chain(grants.counters_from.iter().map(|_| true))
                .collect(),
            plan_from: from.clone(),
            feeders: grants.from.len(),
            taken: from,
            initial: grants.initial,
            waits: 0,
            waits_before: 0,
        })
    }

    /// A share's interval reported its takes: each feeder is granted its takes plus four
    /// intervals' worth at the most it has taken in one (at least the first grant), which
    /// lasts until a grant made a beat or two later arrives. Whether any bound rose.
    fn took(&mut self, taken: &[u64], waits: u64) -> bool {
        self.waits = waits;
        let mut raised = false;
        for (i, &now) in taken.iter().enumerate().take(self.taken.len()) {
            let in_interval = now.saturating_sub(self.taken[i]);
            self.most_per_interval[i] = self.most_per_interval[i].max(in_interval);
            self.taken[i] = self.taken[i].max(now);
            let bound = self.taken[i].saturating_add(self.initial.max(4 * self.most_per_interval[i]));
            if bound > self.granted[i] {
                self.granted[i] = bound;
                raised = true;
            }
        }
        raised
    }

    /// A replacement starts after every row and counter value granted so far: the feeder rows
    /// it skips (granted, never reported taken), and where its takes start.
    fn replace(&mut self) -> (u64, Vec<u64>) {
        let skipped = (self.granted.iter().zip(&self.taken).zip(&self.bounded))
            .take(self.feeders)
            .filter(|(_, bounded)| **bounded)
            .map(|((granted, taken), _)| granted.saturating_sub(*taken))
            .sum();
        let from: Vec<u64> = (self.granted.iter().zip(&self.plan_from).zip(&self.bounded))
            .map(|((&granted, &plan_from), &bounded)| if bounded { granted } else { plan_from })
            .collect();
        self.taken.clone_from(&from);
        self.granted = from.iter().map(|from| from.saturating_add(self.initial)).collect();
        self.waits_before += std::mem::take(&mut self.waits);
        (skipped, from)
    }
}

/// The sum and the longest of a share's snapshot delays.
#[derive(Default)]
struct DelaySum {
    total: Duration,
    max: Duration,
    count: u64,
}

impl DelaySum {
    fn add(&mut self, delay: Duration) {
        self.total += delay;
        self.max = self.max.max(delay);
        self.count += 1;
    }

    fn stats(&self) -> Option<SnapshotDelay> {
        (self.count > 0).then(|| SnapshotDelay {
            mean: self.total.as_secs_f64() * 1_000.0 / self.count as f64,
            max: self.max.as_secs_f64() * 1_000.0,
            intervals: self.count,
        })
    }
}

/// Receives the shares' messages on a thread of its own and hands their snapshots to the
/// collector, as workers do in a local run.
struct Inlet {
    link: Arc<dyn CoordinatorLink>,
    machines: Arc<Mutex<Vec<Machine>>>,
    ledger: Arc<RunLedger>,
    snapshots: mpsc::Sender<Snapshot>,
    done: Arc<AtomicBool>,
    silence_limit: Duration,
    /// How long a replacement has to be ready, from its launch.
    ready_timeout: Duration,
    /// Replacements' launches, each on a thread of its own, report here.
    launched: (mpsc::Sender<Launched>, mpsc::Receiver<Launched>),
    on_loss: WorkerLossPolicy,
    share_plans: Vec<Plan>,
    /// Where the shares' request log records go (the run's file), if it keeps one.
    request_log: Option<mpsc::Sender<Vec<u8>>>,
    /// The run's start and snapshot interval: interval i ends at `start + i * interval`.
    start: Instant,
    interval: Duration,
}

impl Inlet {
    fn run(self) {
        while !self.done.load(Ordering::Relaxed) {
            match self.link.receive(Duration::from_millis(20)) {
                Ok(Some(bytes)) => match ShareMessage::decode(&bytes) {
                    Ok(ShareMessage::Interval(interval)) => self.took(*interval),
                    Ok(ShareMessage::Ready(ready)) => self.replacement_ready(ready),
                    Ok(ShareMessage::RowsWanted(wanted)) => self.rows_wanted(&wanted),
                    Ok(ShareMessage::Requests(requests)) => self.log_requests(requests),
                    Err(err) => self.ledger.request_stop(err.to_string()),
                },
                Ok(None) => {}
                Err(problem) => {
                    self.lose_every_share(&format!("the link to the shares failed: {problem}"));
                    return;
                }
            }
            self.take_launches();
            self.lose_silent_shares();
            self.lose_shares_the_engine_lost();
            let machines = self.machines.lock().unwrap_or_else(PoisonError::into_inner);
            if machines.iter().all(|m| m.finished) {
                // Dropping the sender tells the collector that nothing more comes.
                return;
            }
        }
    }

    fn took(&self, interval: ShareInterval) {
        let mut machines = self.machines.lock().unwrap_or_else(PoisonError::into_inner);
        // Another run's share, an older attempt, or a share already given up: not counted.
        let Some(machine) = machines.get_mut(interval.share) else { return };
        if interval.attempt != machine.ready.attempt || machine.lost.is_some() {
            return;
        }
        if !interval.snapshot.finished {
            let ended = self.start + self.interval * interval.snapshot.interval as u32;
            machine.snapshot_delays.add(Instant::now().saturating_duration_since(ended));
        }
        machine.took(&interval);
        if let Some(resumed_after_ms) = interval.resumed_after_ms.filter(|_| machine.missed_to_count) {
            machine.missed_to_count = false;
            if let Some(lost) = machine.replaced.last() {
                self.count_missed(machine.ready.share, lost.last_interval, Duration::from_millis(resumed_after_ms));
            }
        }
        if !interval.rows_taken.is_empty() {
            self.grant_rows(machine, &interval.rows_taken, interval.row_waits);
        }
        if let Some(reason) = &interval.stop_reason {
            self.ledger.request_stop(reason.clone());
        }
        // A share that stopped itself, its lease lapsed, did not deliver its load: once its
        // last interval is in (every request it sent is counted), it is lost as a silent one
        // is, and replaced under that policy.
        let fenced = interval.fenced.filter(|_| interval.snapshot.finished);
        let mut snapshot = interval.snapshot;
        let Some(fenced) = fenced else {
            drop(machines);
            let _ = self.snapshots.send(snapshot);
            return;
        };
        machine.finished = false;
        snapshot.finished = false;
        let _ = self.snapshots.send(snapshot);
        let reason =
            format!("share {} ({}, pid {}) {fenced}", machine.ready.share, machine.ready.host, machine.ready.pid);
        self.give_up(machine, reason);
    }

    /// Request log records of a share: written if its intervals are counted.
    fn log_requests(&self, requests: ShareRequests) {
        let Some(log) = &self.request_log else { return };
        let machines = self.machines.lock().unwrap_or_else(PoisonError::into_inner);
        let counted =
            machines.get(requests.share).is_some_and(|m| m.ready.attempt == requests.attempt && m.lost.is_none());
        drop(machines);
        if counted {
            // The writer is gone only when the file failed; its owner reports that.
            let _ = log.send(requests.records);
        }
    }

    /// A share's feeds wait for rows: granted at once from its takes so far.
    fn rows_wanted(&self, wanted: &ShareRowsWanted) {
        let mut machines = self.machines.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(machine) = machines.get_mut(wanted.share).filter(|m| m.ready.attempt == wanted.attempt) {
            self.grant_rows(machine, &wanted.rows_taken, wanted.row_waits);
        }
    }

    /// A share reported its takes (with an interval, or asking): its grants are raised from
    /// them, and sent to it when they rose.
    fn grant_rows(&self, machine: &mut Machine, taken: &[u64], waits: u64) {
        if let Some(rows) = machine.rows.as_mut() {
            if rows.took(taken, waits) {
                self.link.grant_rows(machine.ready.share, &rows.granted);
            }
        }
    }

    /// A replacement share is ready: the machine is its from now on. (Any other ready message
    /// is one sent again, or an older attempt's: nothing new.)
    fn replacement_ready(&self, ready: ShareReady) {
        let mut machines = self.machines.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(machine) = machines.get_mut(ready.share).filter(|m| m.ready.attempt == ready.attempt) {
            machine.ready = ready;
            machine.awaiting_ready = false;
            machine.last_heard = Instant::now();
            // Its machine's clock, measured when it was launched.
            machine.clock = self.link.clock(machine.ready.share).or(machine.clock);
        }
    }

    /// Replacements whose launch ended: the machine each runs on, or, when none could take
    /// it, the share is lost after all.
    fn take_launches(&self) {
        while let Ok(launched) = self.launched.1.try_recv() {
            let mut machines = self.machines.lock().unwrap_or_else(PoisonError::into_inner);
            let Some(machine) =
                machines.get_mut(launched.share).filter(|m| m.ready.attempt == launched.attempt && !m.finished)
            else {
                continue;
            };
            match launched.machine {
                Ok(name) => {
                    if let Some(replacement) = machine.replaced.last_mut() {
                        replacement.machine = name;
                    }
                    machine.missed_to_count = true;
                }
                Err(why) => {
                    let reason = machine.replaced.pop().map_or_else(String::new, |r| r.reason);
                    self.count_out(machine, format!("{reason}; not replaced: {why}"));
                }
            }
        }
    }

    /// Shares not heard from for too long are given up: the run stops, and the collector is
    /// told they are finished so that it writes the results of the others.
    fn lose_silent_shares(&self) {
        let mut machines = self.machines.lock().unwrap_or_else(PoisonError::into_inner);
        for machine in machines.iter_mut().filter(|m| !m.finished) {
            let limit = if machine.awaiting_ready { self.ready_timeout } else { self.silence_limit };
            if machine.last_heard.elapsed() <= limit {
                continue;
            }
            let reason = if machine.awaiting_ready {
                let on = machine.replaced.last().map_or("", |r| r.machine.as_str());
                format!(
                    "share {}'s replacement (on {on}) was not ready {:.1} s after its launch",
                    machine.ready.share,
                    limit.as_secs_f64()
                )
            } else {
                format!(
                    "share {} ({}, pid {}) sent nothing for {:.1} s",
                    machine.ready.share,
                    machine.ready.host,
                    machine.ready.pid,
                    limit.as_secs_f64()
                )
            };
            self.give_up(machine, reason);
        }
    }

    /// Shares the distributed engine reports gone (a worker that died or left).
    fn lose_shares_the_engine_lost(&self) {
        let lost = self.link.lost_shares();
        if lost.is_empty() {
            return;
        }
        let mut machines = self.machines.lock().unwrap_or_else(PoisonError::into_inner);
        for LostShare { share, attempt, reason } in lost {
            if let Some(machine) = machines.get_mut(share).filter(|m| !m.finished && m.ready.attempt == attempt) {
                self.give_up(machine, reason);
            }
        }
    }

    /// The link itself failed: nothing can come from any share, whatever the policy.
    fn lose_every_share(&self, reason: &str) {
        self.ledger.request_stop(reason.to_string());
        let mut machines = self.machines.lock().unwrap_or_else(PoisonError::into_inner);
        for machine in machines.iter_mut().filter(|m| !m.finished) {
            self.give_up(machine, reason.to_string());
        }
    }

    /// Counts a share out: the collector is told it has finished (so that it does not wait for
    /// it), the share is told to stop (it may still be running, only silent), and with
    /// `abort` so is the run.
    fn give_up(&self, machine: &mut Machine, reason: String) {
        if self.on_loss == WorkerLossPolicy::Abort {
            self.ledger.request_stop(format!("{reason} (--on-worker-loss abort)"));
        }
        self.link.stop_share(machine.ready.share, &reason);
        let reason = match self.on_loss {
            WorkerLossPolicy::Replace if self.ledger.stop_reason().is_none() => match self.replace(machine, &reason) {
                Ok(()) => return,
                Err(why) => format!("{reason}; not replaced: {why}"),
            },
            _ => reason,
        };
        self.count_out(machine, reason);
    }

    /// The share is lost for good: the collector is told it has finished. Unless the run
    /// stops with it, what its schedule had due up to the run's planned end is not delivered.
    fn count_out(&self, machine: &mut Machine, reason: String) {
        if self.on_loss != WorkerLossPolicy::Abort {
            let planned_end = self.share_plans.first().and_then(|plan| plan.options.max_duration_ms);
            let to = planned_end.map_or(Duration::MAX, Duration::from_millis);
            self.count_missed(machine.ready.share, machine.last_interval, to);
        }
        machine.lost = Some(reason);
        machine.finished = true;
        let last = Snapshot {
            worker: machine.ready.share,
            finished: true,
            interval: machine.last_interval + 1,
            ..Default::default()
        };
        let _ = self.snapshots.send(last);
    }
}

impl Inlet {
    /// Starts `machine`'s share again on a spare machine, from [`REPLACEMENT_LEAD`] after now
    /// on. Its earlier attempt's intervals are no longer counted (it may still be sending:
    /// silent is not dead), the budget it reported spent is not given again. The launch
    /// (finding a spare, measuring its clock) runs on a thread of its own: it may take
    /// seconds, in which the other shares' messages must still be taken.
    fn replace(&self, machine: &mut Machine, reason: &str) -> Result<(), String> {
        let share = machine.ready.share;
        let mut plan = self.share_plans.get(share).cloned().ok_or("the coordinator has no plan to resume")?;
        if plan.scenarios.iter().any(|scenario| scenario.after.is_some()) {
            // A scenario that starts after another ends counts its schedule from that end,
            // which a replacement does not know: it would send that scenario's load again.
            return Err("the plan chains scenarios with `after`, which a replacement cannot resume".into());
        }
        let lost_at = self.start.elapsed();
        let resume_after = lost_at + REPLACEMENT_LEAD;
        let attempt = machine.ready.attempt + 1;
        let segment = plan.options.execution_segment.as_mut().ok_or("the share's plan has no execution segment")?;
        segment.resume =
            Some(ShareResume { attempt, after_ms: resume_after.as_millis() as u64, requests_sent: machine.requests });
        let rows_skipped = match (machine.rows.as_mut(), segment.row_grants.as_mut()) {
            (Some(rows), Some(grants)) => {
                let (skipped, mut from) = rows.replace();
                grants.counters_from = from.split_off(grants.from.len());
                grants.from = from;
                skipped
            }
            _ => 0,
        };
        let (link, launched, plan) = (self.link.clone(), self.launched.0.clone(), plan.to_json_pretty());
        std::thread::Builder::new()
            .name("horde-replace".into())
            .spawn(move || {
                let machine = link.replace_share(share, &plan);
                let _ = launched.send(Launched { share, attempt, machine });
            })
            .map_err(|err| format!("no thread to launch it on: {err}"))?;
        machine.missed_to_count = false;
        machine.replaced.push(ShareReplacement {
            reason: reason.to_string(),
            host: machine.ready.host.clone(),
            pid: machine.ready.pid,
            lost_at_s: lost_at.as_secs_f64(),
            last_interval: machine.last_interval,
            // Planned; the replacement's intervals say when it took over.
            resume_after_s: resume_after.as_secs_f64(),
            // Named once launched.
            machine: String::new(),
            rows_skipped,
        });
        machine.ready.attempt = attempt;
        machine.awaiting_ready = true;
        machine.cpu_ns_before += machine.cpu_ns.take().unwrap_or(0);
        machine.merged = ShareLog::default();
        machine.log = None;
        // Its wait counts from its launch: a replacement not ready in time is lost in turn
        // (and replaced again while spares last).
        machine.last_heard = Instant::now();
        Ok(())
    }
}

impl Inlet {
    /// Counts what share `share`'s schedule had due from the end of interval `last_interval`
    /// (the last one counted of the attempt lost) to `to`, into its `missed`: on a thread of
    /// its own, as a long schedule takes a while to walk.
    fn count_missed(&self, share: usize, last_interval: u64, to: Duration) {
        let Some(plan) = self.share_plans.get(share).cloned() else { return };
        let from = self.interval * last_interval as u32;
        let machines = self.machines.clone();
        let _ = std::thread::Builder::new().name("horde-missed-load".into()).spawn(move || {
            let missed = super::missed::load_due(&plan, from, to);
            let mut machines = machines.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(machine) = machines.get_mut(share) {
                machine.missed.push(missed);
                machine.missed.sort_by(|a, b| a.from_s.total_cmp(&b.from_s));
            }
        });
    }
}

/// What a replacement's launch came to: the machine it runs on, or why none could take it.
struct Launched {
    share: usize,
    attempt: u32,
    machine: Result<String, String>,
}

/// How far after its loss a replacement share takes over: about the time a warm worker needs
/// to build a share's users. One ready later takes over when it is ready.
const REPLACEMENT_LEAD: Duration = Duration::from_millis(500);

/// Passes the collector's stops on to the shares and puts them in the results.
struct CoordinatorTap {
    link: Arc<dyn CoordinatorLink>,
    machines: Arc<Mutex<Vec<Machine>>>,
    suspect_after: Duration,
}

impl CollectorTap for CoordinatorTap {
    fn stopping(&mut self, status: RunStatus) {
        // Each share has the plan's duration and ends at the same instant by itself, its
        // requests in flight then completed and counted as a local run's are. Told to stop
        // by the coordinator's own deadline instead, a share whose clock runs a little behind
        // would cut them: sent, but counted nowhere.
        if status != RunStatus::LimitReached {
            self.link.stop(status.as_str());
        }
    }

    fn before_sink(&mut self, totals: &mut Totals) {
        let machines = self.machines.lock().unwrap_or_else(PoisonError::into_inner);
        totals.machines = machines.iter().map(|machine| machine.stats(self.suspect_after)).collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use horde_metrics::{Recorder, RequestTiming};

    fn ready() -> ShareReady {
        ShareReady { share: 0, attempt: 0, segment: "0:1".into(), pid: 1, host: "h".into(), threads: 1 }
    }

    fn interval(number: u64, requests: u64, log: Option<ShareLog>) -> ShareInterval {
        let mut recorder = Recorder::default();
        for _ in 0..requests {
            recorder.record(&RequestTiming { latency_us: 100, uncorrected_us: 100, ..Default::default() }, true);
        }
        let snapshot = Snapshot {
            requests: vec![("r".into(), recorder)],
            interval: number,
            finished: log.is_some(),
            ..Default::default()
        };
        ShareInterval {
            share: 0,
            attempt: 0,
            snapshot,
            cpu_ns: None,
            stop_reason: None,
            started_late_ns: None,
            peak_memory_bytes: None,
            fenced: None,
            log,
            resumed_after_ms: None,
            rows_taken: Vec::new(),
            row_waits: 0,
        }
    }

    /// A link whose spare takes `launch` to find, and whose engine reports `lost` once.
    struct SlowSpares {
        launch: Duration,
        lost: Mutex<Vec<LostShare>>,
        launches: Mutex<Vec<String>>,
    }

    impl CoordinatorLink for SlowSpares {
        fn receive(&self, timeout: Duration) -> Result<Option<Vec<u8>>, String> {
            std::thread::sleep(timeout);
            Ok(None)
        }
        fn start(&self, _at: SystemTime) -> Result<(), String> {
            Ok(())
        }
        fn stop(&self, _reason: &str) {}
        fn lost_shares(&self) -> Vec<LostShare> {
            std::mem::take(&mut *self.lost.lock().unwrap())
        }
        fn replace_share(&self, _share: usize, plan: &str) -> Result<String, String> {
            std::thread::sleep(self.launch);
            self.launches.lock().unwrap().push(plan.to_string());
            Ok("spare".into())
        }
    }

    fn inlet(link: Arc<SlowSpares>, shares: usize) -> (Inlet, mpsc::Receiver<Snapshot>) {
        let plan = crate::cluster::tests::http_plan(2);
        let plans = crate::cluster::share_plans(&plan, &["a".into(), "b".into()], &[1, 1], None).unwrap();
        let machines = (0..shares).map(|share| Machine::new(None, ShareReady { share, ..ready() })).collect::<Vec<_>>();
        let (snapshots, received) = mpsc::channel();
        let inlet = Inlet {
            link,
            machines: Arc::new(Mutex::new(machines)),
            ledger: RunLedger::new(None, &[], shares, Stripe::whole()),
            snapshots,
            done: Arc::new(AtomicBool::new(false)),
            silence_limit: Duration::from_secs(10),
            ready_timeout: Duration::from_secs(30),
            launched: mpsc::channel(),
            on_loss: WorkerLossPolicy::Replace,
            share_plans: plans,
            request_log: None,
            start: Instant::now(),
            interval: Duration::from_secs(1),
        };
        (inlet, received)
    }

    /// A loss reported twice (the task failed, and its worker left) replaces the share once; a
    /// report about the lost attempt arriving after the replacement does not lose it; and the
    /// seconds a spare takes to find do not hold the inlet (the other shares' silence would
    /// run on meanwhile).
    #[test]
    fn a_lost_share_is_replaced_once_without_holding_the_inlet() {
        let lost = |attempt| LostShare { share: 0, attempt, reason: "gone".into() };
        let link = Arc::new(SlowSpares {
            launch: Duration::from_millis(300),
            lost: Mutex::new(vec![lost(0), lost(0)]),
            launches: Mutex::new(Vec::new()),
        });
        let (inlet, _received) = inlet(link.clone(), 2);
        let began = Instant::now();
        inlet.lose_shares_the_engine_lost();
        assert!(began.elapsed() < Duration::from_millis(100), "the inlet waited {:?}", began.elapsed());
        {
            let machines = inlet.machines.lock().unwrap();
            assert_eq!((machines[0].ready.attempt, machines[0].replaced.len()), (1, 1));
            assert!(machines[0].awaiting_ready && !machines[0].finished && machines[0].lost.is_none());
            assert_eq!(machines[0].replaced[0].machine, "", "named once launched");
        }
        std::thread::sleep(Duration::from_millis(500));
        inlet.take_launches();
        *link.lost.lock().unwrap() = vec![lost(0)];
        inlet.lose_shares_the_engine_lost();
        let machines = inlet.machines.lock().unwrap();
        assert_eq!(machines[0].replaced[0].machine, "spare");
        assert!(machines[0].lost.is_none() && machines[1].lost.is_none());
        let launches = link.launches.lock().unwrap();
        assert_eq!(launches.len(), 1);
        assert!(launches[0].contains("\"attempt\": 1"), "{}", launches[0]);
    }

    /// Request log records are written as the intervals are counted: the current attempt's of
    /// a share not lost; an older attempt's (it may still be sending) and a lost share's not.
    #[test]
    fn request_log_records_are_written_as_intervals_are_counted() {
        let link = Arc::new(SlowSpares {
            launch: Duration::ZERO,
            lost: Mutex::new(Vec::new()),
            launches: Mutex::new(Vec::new()),
        });
        let (mut inlet, _received) = inlet(link, 3);
        let (log, written) = mpsc::channel();
        inlet.request_log = Some(log);
        {
            let mut machines = inlet.machines.lock().unwrap();
            machines[1].ready.attempt = 1;
            machines[2].lost = Some("gone".into());
        }
        let records = |share, attempt, text: &str| ShareRequests { share, attempt, records: text.as_bytes().to_vec() };
        inlet.log_requests(records(0, 0, "share 0\n"));
        inlet.log_requests(records(1, 0, "share 1, its lost attempt\n"));
        inlet.log_requests(records(1, 1, "share 1\n"));
        inlet.log_requests(records(2, 0, "share 2, lost\n"));
        inlet.log_requests(records(7, 0, "another run's share\n"));
        drop(inlet);
        let lines: Vec<String> = written.iter().map(|bytes| String::from_utf8(bytes).unwrap()).collect();
        assert_eq!(lines, ["share 0\n", "share 1\n"]);
    }

    /// A share whose task failed before it was ready fails the run at once, saying why, rather
    /// than after the ready timeout.
    #[test]
    fn a_share_lost_before_the_start_fails_the_run_at_once() {
        let link = SlowSpares {
            launch: Duration::ZERO,
            lost: Mutex::new(vec![LostShare { share: 1, attempt: 0, reason: "no database driver".into() }]),
            launches: Mutex::new(Vec::new()),
        };
        let began = Instant::now();
        let result = wait_until_ready(&link, &RunControl::new(), &CoordinatorOptions::new(2));
        assert!(began.elapsed() < Duration::from_secs(1));
        let err = result.expect_err("not ready");
        assert_eq!(err.to_string(), "share 1 could not start (no database driver): no load was sent");
    }

    /// A launch that finds no spare loses the share after all, saying why.
    #[test]
    fn a_share_without_a_spare_is_lost_saying_why() {
        struct NoSpares;
        impl CoordinatorLink for NoSpares {
            fn receive(&self, _timeout: Duration) -> Result<Option<Vec<u8>>, String> {
                Ok(None)
            }
            fn start(&self, _at: SystemTime) -> Result<(), String> {
                Ok(())
            }
            fn stop(&self, _reason: &str) {}
        }
        let (mut inlet, received) = inlet(
            Arc::new(SlowSpares {
                launch: Duration::ZERO,
                lost: Mutex::new(Vec::new()),
                launches: Mutex::new(Vec::new()),
            }),
            2,
        );
        inlet.link = Arc::new(NoSpares);
        {
            let mut machines = inlet.machines.lock().unwrap();
            inlet.give_up(&mut machines[1], "share 1 went quiet".into());
        }
        std::thread::sleep(Duration::from_millis(100));
        inlet.take_launches();
        let machines = inlet.machines.lock().unwrap();
        assert_eq!(
            machines[1].lost.as_deref(),
            Some("share 1 went quiet; not replaced: no spare machine to replace it with")
        );
        assert!(machines[1].finished && machines[1].replaced.is_empty());
        assert!(received.try_recv().unwrap().finished, "the collector is told it is done");
    }

    /// Grants follow the takes with headroom, never go down, and a replacement starts where
    /// the largest grant ended, whatever was reported.
    #[test]
    fn row_grants_bound_what_a_lost_share_could_have_used() {
        let mut plan = crate::cluster::tests::http_plan(2);
        plan.options.execution_segment = Some(horde_plan::ExecutionSegmentOptions {
            segment: "0:1".into(),
            sequence: None,
            resume: None,
            // A feeder, then a run-wide counter: one ledger over both.
            row_grants: Some(horde_plan::RowGrants { from: vec![0], initial: 100, counters_from: vec![0] }),
            request_log: None,
        });
        let mut rows = RowLedger::of(&plan).unwrap();
        assert_eq!(rows.granted, [100, 100]);
        // 20 takes of feeder 0: the least headroom.
        assert!(rows.took(&[20, 0], 0) && rows.granted == [120, 100]);
        // 60 in the next interval: four intervals' worth of it.
        assert!(rows.took(&[80, 0], 2));
        assert_eq!(rows.granted, [80 + 240, 100]);
        // None in the next: the bound does not go down.
        assert!(!rows.took(&[80, 0], 2) && rows.granted == [320, 100]);
        let (skipped, from) = rows.replace();
        // The rows skipped are the feeder's; the counter starts after its grant too.
        assert_eq!((skipped, from.as_slice()), (320 - 80, &[320, 100][..]));
        assert_eq!((rows.taken.as_slice(), rows.granted.as_slice()), (&[320, 100][..], &[420, 200][..]));
        assert_eq!(rows.waits_before, 2);
    }

    /// A circular feeder's takes are reported with the others', but it reuses rows: nothing
    /// of it is skipped, and its replacement starts where the plan said.
    #[test]
    fn a_circular_feeder_is_neither_skipped_nor_moved_on_a_replacement() {
        let mut plan = crate::cluster::tests::http_plan(2);
        let feeder = |strategy: &str| {
            serde_json::from_value::<horde_plan::Feeder>(serde_json::json!({
                "name": strategy, "strategy": strategy, "source": {"type": "inline", "records": [{"a": 1}]}
            }))
            .unwrap()
        };
        plan.feeders = vec![feeder("circular"), feeder("queue")];
        plan.options.execution_segment = Some(horde_plan::ExecutionSegmentOptions {
            segment: "0:1".into(),
            sequence: None,
            resume: None,
            row_grants: Some(horde_plan::RowGrants { from: vec![0, 0], initial: 100, counters_from: vec![0] }),
            request_log: None,
        });
        let mut rows = RowLedger::of(&plan).unwrap();
        rows.took(&[30, 10, 5], 0);
        let (skipped, from) = rows.replace();
        assert_eq!((skipped, from), (110 - 10, vec![0, 110, 105]));
    }

    /// The share's own count of what it sent, against what reached the coordinator.
    #[test]
    fn a_share_is_verified_when_its_log_matches_the_merge() {
        let log = Some(ShareLog { intervals: 2, requests: 7 });
        let mut whole = Machine::new(None, ready());
        whole.took(&interval(1, 3, None));
        assert_eq!(whole.stats(Duration::from_secs(3)).verified, None);
        whole.took(&interval(2, 4, log));
        let stats = whole.stats(Duration::from_secs(3));
        assert_eq!((stats.verified, stats.log_requests), (Some(true), Some(7)));

        // Interval 1 never arrived.
        let mut short = Machine::new(None, ready());
        short.took(&interval(2, 4, log));
        assert_eq!(short.stats(Duration::from_secs(3)).verified, Some(false));
    }
}
