//! Time series: what happened in each snapshot interval, per request row and for all rows
//! together, for the report's charts and for users' own tools.

use crate::recorder::{GroupRecorder, Recorder, Snapshot};
use crate::summary::{LatencyStats, SummaryOptions};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The name of the row that merges all requests of an interval.
pub const ALL_REQUESTS: &str = "all";

/// One row of the time series: one request row (or all of them) in one interval.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct IntervalSample {
    /// Interval i covers ((i-1)·T, i·T] from the start of the run.
    pub interval: u64,
    /// Offset of the interval's start from the start of the run.
    pub start_ms: u64,
    /// The interval's start as a Unix time in milliseconds (the run's start plus `start_ms`),
    /// to line the series up with other tools' clocks.
    #[serde(default)]
    pub epoch_ms: u64,
    pub duration_ms: u64,
    /// A request row, or `all`.
    pub name: String,
    pub ok: u64,
    pub ko: u64,
    /// (ok + ko) / interval length.
    pub rps: f64,
    /// Latency from the intended start, all requests.
    pub latency: LatencyStats,
    /// Users running at the end of the interval (summed over workers).
    pub users_active: u64,
    /// Mean time of each phase in the interval, over the requests that had it (DNS, connect
    /// and TLS only when a connection was made): microseconds.
    #[serde(default)]
    pub phases_mean_us: PhaseMeans,
}

/// The mean of each phase of a request, in microseconds.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct PhaseMeans {
    pub dns: f64,
    pub connect: f64,
    pub tls: f64,
    pub send: f64,
    pub wait: f64,
    pub receive: f64,
}

impl PhaseMeans {
    fn of(recorder: &Recorder) -> PhaseMeans {
        let [dns, connect, tls, send, wait, receive] = recorder.phases().map(crate::Distribution::mean);
        PhaseMeans { dns, connect, tls, send, wait, receive }
    }
}

#[derive(Default, Debug, Clone)]
struct PendingInterval {
    rows: Vec<(Arc<str>, Recorder)>,
    groups: Vec<(Arc<str>, GroupRecorder)>,
    users_by_worker: BTreeMap<usize, u64>,
}

/// Intervals still receiving snapshots from some worker.
#[derive(Default, Debug, Clone)]
pub struct PendingIntervals {
    by_interval: BTreeMap<u64, PendingInterval>,
    /// When the run started, Unix time in milliseconds: intervals are stamped from it.
    pub run_started_epoch_ms: u64,
}

/// One snapshot interval every worker has handed in: its recorders merged across workers,
/// per request row (in order of first appearance within the interval) and per group.
#[derive(Debug, Clone)]
pub struct CompletedInterval {
    pub interval: u64,
    pub start_ms: u64,
    pub epoch_ms: u64,
    pub duration_ms: u64,
    pub users_active: u64,
    pub rows: Vec<(Arc<str>, Recorder)>,
    /// All the rows merged.
    pub all: Recorder,
    pub groups: Vec<(Arc<str>, GroupRecorder)>,
}

impl CompletedInterval {
    /// Cuts an interval the run ended in to the time it measured (the run's end `run_end_ms`
    /// after its start), so that its rates are over that time: a last interval of 0.5 s that
    /// claimed its full second halved its requests per second, as if the server had slowed.
    pub fn end_at(&mut self, run_end_ms: u64) {
        if self.start_ms < run_end_ms {
            self.duration_ms = self.duration_ms.min(run_end_ms - self.start_ms);
        }
    }

    /// The time series lines of this interval: `all` first, then each row.
    pub fn samples(&self, options: &SummaryOptions) -> Vec<IntervalSample> {
        let sample = |name: &str, recorder: &Recorder| IntervalSample {
            interval: self.interval,
            start_ms: self.start_ms,
            epoch_ms: self.epoch_ms,
            duration_ms: self.duration_ms,
            name: name.to_string(),
            ok: recorder.ok.len(),
            ko: recorder.ko.len() + recorder.unsent,
            rps: recorder.count() as f64 * 1000.0 / self.duration_ms.max(1) as f64,
            latency: LatencyStats::from_histogram(&recorder.corrected(), &options.percentiles),
            users_active: self.users_active,
            phases_mean_us: PhaseMeans::of(recorder),
        };
        let mut samples = Vec::with_capacity(self.rows.len() + 1);
        samples.push(sample(ALL_REQUESTS, &self.all));
        for (name, recorder) in &self.rows {
            samples.push(sample(name, recorder));
        }
        samples
    }
}

impl PendingIntervals {
    /// No intervals yet, of a run that started at `started_at`.
    pub fn starting_at(started_at: std::time::SystemTime) -> PendingIntervals {
        let run_started_epoch_ms =
            started_at.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
        PendingIntervals { by_interval: BTreeMap::new(), run_started_epoch_ms }
    }

    /// Adds what a snapshot measured to its interval (the snapshot itself goes on to the totals).
    pub fn add(&mut self, snapshot: &Snapshot) {
        let pending = self.by_interval.entry(snapshot.interval).or_default();
        for (name, recorder) in &snapshot.requests {
            match pending.rows.iter_mut().find(|(n, _)| n == name) {
                Some((_, existing)) => existing.merge(recorder),
                None => pending.rows.push((name.clone(), recorder.clone())),
            }
        }
        for (name, recorder) in &snapshot.groups {
            match pending.groups.iter_mut().find(|(n, _)| n == name) {
                Some((_, existing)) => existing.merge(recorder),
                None => pending.groups.push((name.clone(), recorder.clone())),
            }
        }
        if !snapshot.finished {
            pending.users_by_worker.insert(snapshot.worker, snapshot.users_active);
        }
    }

    /// The rows measured in `interval` so far (empty when it is unknown or already taken).
    pub fn rows(&self, interval: u64) -> &[(Arc<str>, Recorder)] {
        self.by_interval.get(&interval).map(|p| p.rows.as_slice()).unwrap_or(&[])
    }

    /// The latest interval not yet taken.
    pub fn last_interval(&self) -> Option<u64> {
        self.by_interval.keys().next_back().copied()
    }

    /// The intervals up to `last` (all of them when None), oldest first, merged across
    /// workers; those intervals are forgotten.
    pub fn take_completed(&mut self, last: Option<u64>, interval_ms: u64) -> Vec<CompletedInterval> {
        let keep = match last {
            Some(last) => self.by_interval.split_off(&(last + 1)),
            None => BTreeMap::new(),
        };
        let done = std::mem::replace(&mut self.by_interval, keep);
        done.into_iter()
            .map(|(interval, pending)| {
                let start_ms = interval.saturating_sub(1) * interval_ms;
                let mut all = Recorder::default();
                for (_, recorder) in &pending.rows {
                    all.merge(recorder);
                }
                CompletedInterval {
                    interval,
                    start_ms,
                    epoch_ms: self.run_started_epoch_ms + start_ms,
                    duration_ms: interval_ms,
                    users_active: pending.users_by_worker.values().sum(),
                    rows: pending.rows,
                    all,
                    groups: pending.groups,
                }
            })
            .collect()
    }

    /// Samples of the intervals up to `last` (all of them when None), oldest first; those
    /// intervals are forgotten.
    pub fn take(&mut self, last: Option<u64>, interval_ms: u64, options: &SummaryOptions) -> Vec<IntervalSample> {
        self.take_completed(last, interval_ms).iter().flat_map(|interval| interval.samples(options)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RequestTiming;

    fn snapshot(worker: usize, interval: u64, requests: u64, users: u64) -> Snapshot {
        let mut recorder = Recorder::default();
        for _ in 0..requests {
            recorder.record(&RequestTiming { latency_us: 1000, uncorrected_us: 1000, ..Default::default() }, true);
        }
        Snapshot {
            worker,
            interval,
            users_active: users,
            requests: vec![("home".into(), recorder)],
            ..Default::default()
        }
    }

    #[test]
    fn the_interval_the_run_ended_in_is_rated_over_the_time_it_measured() {
        let mut pending = PendingIntervals::starting_at(std::time::UNIX_EPOCH);
        pending.add(&snapshot(0, 1, 400, 4));
        pending.add(&snapshot(0, 2, 200, 4));
        let mut completed = pending.take_completed(None, 1000);
        for interval in &mut completed {
            interval.end_at(1500);
        }
        assert_eq!(completed.iter().map(|i| i.duration_ms).collect::<Vec<_>>(), [1000, 500]);
        let rates: Vec<f64> = completed.iter().map(|i| i.samples(&SummaryOptions::default())[0].rps).collect();
        assert_eq!(rates, [400.0, 400.0]);
    }

    #[test]
    fn intervals_merge_workers_and_come_out_in_order() {
        let mut pending = PendingIntervals::default();
        pending.add(&snapshot(0, 2, 5, 3));
        pending.add(&snapshot(0, 1, 10, 2));
        pending.add(&snapshot(1, 1, 20, 4));
        let options = SummaryOptions::default();
        let first = pending.take(Some(1), 1000, &options);
        assert_eq!(first.len(), 2, "the all row and the home row of interval 1");
        assert_eq!((first[0].name.as_str(), first[0].ok, first[0].users_active), ("all", 30, 6));
        assert_eq!((first[1].name.as_str(), first[1].rps), ("home", 30.0));
        let rest = pending.take(None, 1000, &options);
        assert_eq!((rest[0].interval, rest[0].start_ms, rest[0].ok), (2, 1000, 5));
        assert!(pending.take(None, 1000, &options).is_empty());
    }

    #[test]
    fn intervals_are_stamped_from_the_run_start() {
        let mut pending = PendingIntervals { run_started_epoch_ms: 1_700_000_000_000, ..Default::default() };
        pending.add(&snapshot(0, 3, 1, 1));
        let completed = pending.take_completed(None, 500);
        assert_eq!((completed[0].start_ms, completed[0].epoch_ms), (1000, 1_700_000_001_000));
        assert_eq!(completed[0].all.count(), 1);
        let samples = completed[0].samples(&SummaryOptions::default());
        assert!(samples.iter().all(|s| s.epoch_ms == 1_700_000_001_000));
    }
}
