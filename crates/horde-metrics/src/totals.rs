//! The collector's running totals, merged from worker snapshots, and the Sink interface that
//! outputs (progress line, results files) implement.

use crate::couchdb::{ConnectionPhases, CouchdbStepKind, CouchdbStepReport};
use crate::recorder::{new_histogram, ConnectionEvents, ErrorKey, ErrorRecord, GroupRecorder, Recorder, Snapshot};
use crate::timeseries::PendingIntervals;
use hdrhistogram::Histogram;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Request rows past which a run is warned about (once, on the console and in summary.json),
/// as k6 warns past 100,000 time series: each row costs memory in every worker and the
/// collector (tens of KiB once it has had a few hundred requests) and a line of the summary
/// and the time series every interval. Thousands of rows are most often request names made
/// from URLs with ids in them.
pub const ROWS_WARNING_LIMIT: usize = 1000;

/// The warning of a run with `rows` request rows, when there are too many.
pub fn many_rows_warning(rows: usize) -> Option<String> {
    (rows > ROWS_WARNING_LIMIT).then(|| {
        format!(
            "{rows} request names (rows), more than the {ROWS_WARNING_LIMIT} a run is meant to have: each costs memory \
             (tens of KiB once it has had a few hundred requests) and a line of summary.json and the time series every \
             interval. Name requests by what they do, not by their URL: http(\"order\").get(\"/orders/${{id}}\"), not a \
             name with the id in it"
        )
    })
}

/// How a run ended, or that it is still going.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    Running,
    /// Every injection step ran to its end.
    Completed,
    /// `max_duration` or `max_requests` was reached.
    LimitReached,
    /// Stopped from outside (Ctrl-C, SIGTERM).
    Interrupted,
    /// A scenario stopped the run (`stop_load_generator`, a feeder that ran out with
    /// `stop_run`); `Totals::stop_reason` says why.
    Stopped,
    /// A threshold with `abort` failed; `Totals::stop_reason` names it.
    AbortedByThreshold,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Completed => "completed",
            RunStatus::LimitReached => "limit_reached",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Stopped => "stopped",
            RunStatus::AbortedByThreshold => "aborted_by_threshold",
        }
    }
}

/// Everything measured so far. Rows keep the order in which they first appeared.
#[derive(Debug, Clone)]
pub struct Totals {
    pub started_at: SystemTime,
    /// Time since the run started, as of the last merged snapshot.
    pub elapsed: Duration,
    /// The unmeasured start of the run: rates are computed over `elapsed - warmup`.
    pub warmup: Duration,
    pub requests: Vec<(Arc<str>, Recorder)>,
    row_index: HashMap<Arc<str>, usize>,
    pub groups: Vec<(Arc<str>, GroupRecorder)>,
    pub errors: HashMap<ErrorKey, ErrorRecord>,
    pub users_started: u64,
    pub users_finished: u64,
    pub users_interrupted: u64,
    /// Sum of the workers' latest active-user levels.
    pub users_active: u64,
    active_by_worker: Vec<u64>,
    pub start_lag_us: Histogram<u64>,
    pub late_starts: u64,
    pub replacements_held_back: u64,
    pub connections: ConnectionEvents,
    /// CPU time the load generator (this process) used since the run began, when known.
    pub generator_cpu: Option<Duration>,
    /// Per-interval measurements not yet taken by a sink.
    pub intervals: PendingIntervals,
    /// Snapshot intervals every running worker has handed in: the ones that are complete.
    pub complete_intervals: u64,
    /// Per CouchDB step, in order of first appearance: every connection's phase totals.
    pub couchdb_steps: Vec<(Arc<str>, CouchdbStepKind, Vec<ConnectionPhases>)>,
    /// `horde sql` phases, in the order they ran.
    pub sql_phases: Vec<crate::SqlPhaseReport>,
    /// The SQL phase running now, read by the collector at every interval.
    pub sql_progress: Option<crate::SqlProgress>,
    /// Why a scenario stopped the run, when one did.
    pub stop_reason: Option<String>,
    /// Session functions (Python code the plan calls): calls and seconds spent in them, when
    /// the plan has any.
    pub session_functions: Option<(u64, f64)>,
    /// The thresholds' verdicts, once the run has ended (the plan's order).
    pub thresholds: Vec<crate::ThresholdResult>,
    /// A distributed run's shares, as its coordinator saw them; empty in any other run.
    pub machines: Vec<crate::MachineStats>,
}

impl Totals {
    pub fn new(started_at: SystemTime, workers: usize) -> Totals {
        Totals {
            started_at,
            elapsed: Duration::ZERO,
            warmup: Duration::ZERO,
            requests: Vec::new(),
            row_index: HashMap::new(),
            groups: Vec::new(),
            errors: HashMap::new(),
            users_started: 0,
            users_finished: 0,
            users_interrupted: 0,
            users_active: 0,
            active_by_worker: vec![0; workers],
            start_lag_us: new_histogram(),
            late_starts: 0,
            replacements_held_back: 0,
            connections: ConnectionEvents::default(),
            generator_cpu: None,
            intervals: PendingIntervals::starting_at(started_at),
            complete_intervals: 0,
            couchdb_steps: Vec::new(),
            sql_phases: Vec::new(),
            sql_progress: None,
            stop_reason: None,
            session_functions: None,
            thresholds: Vec::new(),
            machines: Vec::new(),
        }
    }

    /// Merges a worker's snapshot, and returns its request recorders emptied, for the worker
    /// to record into again: emptying them here keeps that work off the worker's thread, where
    /// allocating and zeroing fresh histograms for every row held the worker up at every
    /// snapshot (30 ms at 400 rows).
    pub fn absorb(&mut self, snapshot: Snapshot) -> Vec<Recorder> {
        self.intervals.add(&snapshot);
        let mut emptied = Vec::with_capacity(snapshot.requests.len());
        for (name, mut recorder) in snapshot.requests {
            match self.row_index.get(&name) {
                Some(&i) => {
                    self.requests[i].1.merge(&recorder);
                    recorder.reset();
                    emptied.push(recorder);
                }
                None => {
                    // A copy stays: the recorder itself goes back, like the others.
                    self.row_index.insert(name.clone(), self.requests.len());
                    self.requests.push((name, recorder.clone()));
                    recorder.reset();
                    emptied.push(recorder);
                }
            }
        }
        for (name, recorder) in snapshot.groups {
            match self.groups.iter_mut().find(|(n, _)| *n == name) {
                Some((_, existing)) => existing.merge(&recorder),
                None => self.groups.push((name, recorder)),
            }
        }
        let interval = snapshot.interval;
        for (key, record) in snapshot.errors {
            self.errors
                .entry(key)
                .and_modify(|e| {
                    e.count += record.count;
                    // A late worker's snapshot may be of an earlier interval than one merged.
                    e.first_interval = e.first_interval.min(interval);
                    e.last_interval = e.last_interval.max(interval);
                })
                .or_insert(ErrorRecord { first_interval: interval, last_interval: interval, ..record });
        }
        self.users_started += snapshot.users_started;
        self.users_finished += snapshot.users_finished;
        self.users_interrupted += snapshot.users_interrupted;
        if let Some(level) = self.active_by_worker.get_mut(snapshot.worker) {
            *level = snapshot.users_active;
        }
        self.users_active = self.active_by_worker.iter().sum();
        if let Some(lag) = &snapshot.start_lag_us {
            self.start_lag_us.add(lag).expect("auto-resizing histograms always merge");
        }
        self.late_starts += snapshot.late_starts;
        self.replacements_held_back += snapshot.replacements_held_back;
        self.connections.add(&snapshot.connections);
        // Workers hand phases in at their own intervals: kept in the order they ran.
        for phase in snapshot.sql_phases {
            let at = self.sql_phases.partition_point(|p| p.started_ms <= phase.started_ms);
            self.sql_phases.insert(at, phase);
        }
        for connection in snapshot.couchdb_connections {
            match self.couchdb_steps.iter_mut().find(|(name, _, _)| *name == connection.step) {
                Some((_, _, records)) => records.push(connection),
                None => self.couchdb_steps.push((connection.step.clone(), connection.kind, vec![connection])),
            }
        }
        emptied
    }

    /// Iron Cushion's report of every CouchDB step so far.
    pub fn couchdb_reports(&self) -> Vec<CouchdbStepReport> {
        self.couchdb_steps
            .iter()
            .map(|(name, kind, records)| CouchdbStepReport::from_connections(name, *kind, records))
            .collect()
    }

    /// A request row's index in `requests` (the order of summary.json's `requests[]`).
    pub fn row_position(&self, name: &str) -> Option<usize> {
        self.row_index.get(name).copied()
    }

    /// Worker threads of the run.
    pub fn workers(&self) -> usize {
        self.active_by_worker.len()
    }

    /// The measured part of the run so far.
    pub fn measured(&self) -> Duration {
        self.elapsed.saturating_sub(self.warmup)
    }

    pub fn request_counts(&self) -> (u64, u64) {
        self.requests.iter().fold((0, 0), |(ok, ko), (_, r)| (ok + r.ok.len(), ko + r.ko.len() + r.unsent))
    }

    /// All request rows merged: the "Global Information" block.
    pub fn global(&self) -> Recorder {
        let mut global = Recorder::default();
        for (_, recorder) in &self.requests {
            global.merge(recorder);
        }
        global
    }
}

/// Where the collector sends what it has merged. Implemented by outputs (progress line,
/// results directory); the engine knows nothing of formats.
pub trait Sink {
    /// Called after each snapshot interval with everything measured so far.
    fn interval(&mut self, totals: &mut Totals);
    /// Called once at the end; a sink must leave valid results behind whatever the status.
    fn finish(&mut self, totals: &mut Totals, status: RunStatus);
}
