//! Judging thresholds (their grammar is horde_plan's [`ThresholdSpec`]) on what a run measured:
//! at the end on the whole run, and while it runs for those with a window (`over 30s`: the last
//! 30 s after every interval) or `abort` (a failure stops the run).
//!
//! A scope that saw no request has no data, and a threshold with no data fails (`no_data`): a
//! gate that passes because its request was never sent is a gate that lets anything through.
//! Likewise a latency threshold whose scope had requests but not one OK response fails: a
//! `p95<200ms` met by TLS handshakes refused in 3 ms says nothing of the server's latency.

use crate::recorder::{GroupRecorder, Recorder};
use crate::totals::Totals;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use horde_plan::{LatencySource, LatencyStat, Phase, ThresholdMetric, ThresholdScope, ThresholdSpec};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::Arc;

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ThresholdStatus {
    Pass,
    Fail,
    /// The scope saw no request (or no scheduled start): counts as a failure.
    NoData,
}

impl ThresholdStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ThresholdStatus::Pass => "pass",
            ThresholdStatus::Fail => "fail",
            ThresholdStatus::NoData => "no_data",
        }
    }

    /// Of several verdicts on one threshold (rows of `each`, windows): any failure fails it;
    /// it passes if something passed; otherwise there was no data.
    fn combine(self, other: ThresholdStatus) -> ThresholdStatus {
        use ThresholdStatus::*;
        match (self, other) {
            (Fail, _) | (_, Fail) => Fail,
            (Pass, _) | (_, Pass) => Pass,
            _ => NoData,
        }
    }
}

/// One threshold's verdict, as summary.json carries it.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct ThresholdResult {
    /// As written.
    pub text: String,
    /// `global`, `each`, or a request or group name.
    pub scope: String,
    /// `p99`, `errors`, `connect.p99`, ...
    pub metric: String,
    /// `<`, `<=`, `>`, `>=`, `==`, `!=`.
    pub comparison: String,
    /// The bound in the metric's unit: microseconds, a fraction, per second, a count.
    pub bound: f64,
    pub bound_text: String,
    /// What was measured, in the bound's unit: for `each` and windows, the worst value seen.
    pub observed: Option<f64>,
    pub observed_text: Option<String>,
    pub status: ThresholdStatus,
    /// `abort`: a failure stops the run.
    pub abort: bool,
    /// Why a failed threshold had nothing to judge though its scope had requests: `no OK
    /// response to judge (12 KO)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Which responses a latency threshold judged: `OK and KO responses` (the default),
    /// `OK responses` (`ok.p95`), `every exchange with the phase` (`connect.p99`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub population: Option<String>,
    /// `over W`: judged on the last W after every interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_ms: Option<u64>,
    /// With a window: how many windows were judged, and how many failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windows: Option<WindowCounts>,
    /// With `each`: the verdict of every request row.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rows: Vec<RowVerdict>,
}

impl ThresholdResult {
    pub fn passed(&self) -> bool {
        self.status == ThresholdStatus::Pass
    }
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Default)]
pub struct WindowCounts {
    pub judged: u64,
    pub failed: u64,
    /// When the first failing window ended, from the start of the run.
    pub first_failure_ms: Option<u64>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct RowVerdict {
    pub name: String,
    pub observed: Option<f64>,
    pub observed_text: Option<String>,
    pub status: ThresholdStatus,
}

/// What a threshold needs of a scope over some time: its counts, and the one latency
/// histogram its metric reads (none for counts and rates). Kept this small because windows
/// hold one per row per interval.
#[derive(Clone, Default)]
struct Measure {
    count: u64,
    failed: u64,
    /// OK responses: a latency threshold needs one to judge.
    ok: u64,
    latency: Option<Histogram<u64>>,
}

impl Measure {
    fn of_requests(recorder: &Recorder, metric: ThresholdMetric) -> Measure {
        let latency = match metric {
            ThresholdMetric::Latency(LatencySource::Corrected, _) => Some(recorder.corrected()),
            ThresholdMetric::Latency(LatencySource::Uncorrected, _) => {
                Some(recorder.uncorrected.histogram().into_owned())
            }
            ThresholdMetric::Latency(LatencySource::Phase(phase), _) => {
                Some(phase_distribution(recorder, phase).histogram().into_owned())
            }
            ThresholdMetric::Latency(LatencySource::Ok, _) => Some(recorder.ok.histogram().into_owned()),
            _ => None,
        };
        Measure { count: recorder.count(), failed: recorder.ko.len() + recorder.unsent, ok: recorder.ok.len(), latency }
    }

    /// A group's passes: their duration is its latency (lowering refuses phases on groups).
    fn of_group(group: &GroupRecorder, metric: ThresholdMetric) -> Measure {
        let latency = match metric {
            ThresholdMetric::Latency(LatencySource::Ok, _) => Some(group.ok.clone()),
            ThresholdMetric::Latency(..) => {
                let mut all = group.ok.clone();
                all.add(&group.ko).expect("auto-resizing histograms always merge");
                Some(all)
            }
            _ => None,
        };
        Measure { count: group.ok.len() + group.ko.len(), failed: group.ko.len(), ok: group.ok.len(), latency }
    }

    fn add(&mut self, other: &Measure) {
        self.count += other.count;
        self.failed += other.failed;
        self.ok += other.ok;
        match (&mut self.latency, &other.latency) {
            (Some(mine), Some(theirs)) => mine.add(theirs).expect("auto-resizing histograms always merge"),
            (mine @ None, Some(theirs)) => *mine = Some(theirs.clone()),
            _ => {}
        }
    }

    /// Takes out an interval added before: exact, as every count it holds is in `self`.
    fn subtract(&mut self, other: &Measure) {
        self.count -= other.count;
        self.failed -= other.failed;
        self.ok -= other.ok;
        if let (Some(mine), Some(theirs)) = (&mut self.latency, &other.latency) {
            mine.subtract(theirs).expect("an interval added to a window is in it");
        }
    }
}

/// A [`Measure`] as a window keeps it for later subtraction: its histogram serialized
/// (HdrHistogram's V2 encoding, a few hundred bytes for an interval's latencies instead of the
/// tens of kilobytes of a live histogram).
struct StoredMeasure {
    count: u64,
    failed: u64,
    ok: u64,
    latency: Option<Vec<u8>>,
}

impl StoredMeasure {
    fn store(measure: &Measure) -> StoredMeasure {
        let latency = measure.latency.as_ref().map(|h| {
            let mut bytes = Vec::new();
            V2Serializer::new().serialize(h, &mut bytes).expect("serializing a histogram into memory");
            bytes
        });
        StoredMeasure { count: measure.count, failed: measure.failed, ok: measure.ok, latency }
    }

    fn load(&self) -> Measure {
        let latency = self.latency.as_ref().map(|bytes| {
            Deserializer::new().deserialize(&mut bytes.as_slice()).expect("a histogram this window serialized")
        });
        Measure { count: self.count, failed: self.failed, ok: self.ok, latency }
    }
}

/// Over how long, and the run's scheduling (for `late_starts`).
#[derive(Clone, Copy)]
struct Span {
    seconds: f64,
    scheduled_starts: u64,
    late_starts: u64,
}

/// A metric's value; None when the scope has no data for it.
fn observe(metric: ThresholdMetric, measure: &Measure, span: Span) -> Option<f64> {
    if metric == ThresholdMetric::LateStarts {
        return (span.scheduled_starts > 0).then(|| span.late_starts as f64 / span.scheduled_starts as f64);
    }
    if measure.count == 0 {
        return None;
    }
    let count = measure.count as f64;
    match metric {
        ThresholdMetric::ErrorRate => Some(measure.failed as f64 / count),
        ThresholdMetric::ErrorCount => Some(measure.failed as f64),
        ThresholdMetric::Count => Some(count),
        ThresholdMetric::Throughput => (span.seconds > 0.0).then(|| count / span.seconds),
        ThresholdMetric::LateStarts => unreachable!("handled above"),
        ThresholdMetric::Latency(_, stat) => latency_stat(measure.latency.as_ref()?, stat),
    }
}

fn phase_distribution(recorder: &Recorder, phase: Phase) -> &crate::Distribution {
    match phase {
        Phase::Dns => &recorder.dns,
        Phase::Connect => &recorder.connect,
        Phase::Tls => &recorder.tls,
        Phase::Send => &recorder.send,
        Phase::Wait => &recorder.wait,
        Phase::Receive => &recorder.receive,
    }
}

/// The statistic, computed as summary.json computes it (the same quantile function).
fn latency_stat(histogram: &Histogram<u64>, stat: LatencyStat) -> Option<f64> {
    if histogram.is_empty() {
        return None;
    }
    Some(match stat {
        LatencyStat::Percentile(p) => histogram.value_at_quantile(p / 100.0) as f64,
        LatencyStat::Mean => histogram.mean(),
        LatencyStat::Min => histogram.min() as f64,
        LatencyStat::Max => histogram.max() as f64,
        LatencyStat::Stddev => histogram.stdev(),
    })
}

/// One judgement of a threshold: on the whole run, or on one window.
struct Judgement {
    observed: Option<f64>,
    status: ThresholdStatus,
    /// Why there was nothing to judge, when the scope had requests (none of them OK).
    note: Option<String>,
    rows: Vec<RowVerdict>,
}

/// The verdict on one measure: what was observed (or why nothing could be) and the status.
struct Verdict {
    observed: Option<f64>,
    status: ThresholdStatus,
    note: Option<String>,
}

impl Verdict {
    /// What a report shows as observed: the value, or why there was none.
    fn observed_text(&self, spec: &ThresholdSpec) -> Option<String> {
        self.note.clone().or_else(|| self.observed.map(|v| spec.metric.format_value(v)))
    }
}

fn judge_one(spec: &ThresholdSpec, measure: Option<&Measure>, span: Span) -> Verdict {
    if let Some(measure) = measure.filter(|m| spec.metric.needs_an_ok_response() && m.count > 0 && m.ok == 0) {
        return Verdict {
            observed: None,
            status: ThresholdStatus::Fail,
            note: Some(format!("no OK response to judge ({} KO)", measure.failed)),
        };
    }
    let observed = match measure {
        Some(measure) => observe(spec.metric, measure, span),
        // `late_starts` is the run's; it reads no measure.
        None if spec.metric == ThresholdMetric::LateStarts => observe(spec.metric, &Measure::default(), span),
        None => None,
    };
    let status = match observed {
        None => ThresholdStatus::NoData,
        Some(value) if spec.comparison.holds(value, spec.bound) => ThresholdStatus::Pass,
        Some(_) => ThresholdStatus::Fail,
    };
    Verdict { observed, status, note: None }
}

/// Judges `spec` on the measures of its scope: one (global, a name) or one per row (each).
fn judge(spec: &ThresholdSpec, measures: &[(Arc<str>, Measure)], span: Span) -> Judgement {
    if spec.scope != ThresholdScope::Each {
        let verdict = judge_one(spec, measures.first().map(|(_, m)| m), span);
        return Judgement { observed: verdict.observed, status: verdict.status, note: verdict.note, rows: Vec::new() };
    }
    let mut judgement = Judgement { observed: None, status: ThresholdStatus::NoData, note: None, rows: Vec::new() };
    for (name, measure) in measures {
        let verdict = judge_one(spec, Some(measure), span);
        // A row that saw nothing in this span has nothing to say (it may belong to a later
        // part of the scenario); no row at all is no data.
        if verdict.status == ThresholdStatus::NoData {
            continue;
        }
        judgement.status = judgement.status.combine(verdict.status);
        judgement.observed = worse(spec, judgement.observed, verdict.observed);
        if judgement.note.is_none() && verdict.note.is_some() {
            judgement.note = Some(format!("{}: {}", name, verdict.note.clone().unwrap_or_default()));
        }
        judgement.rows.push(RowVerdict {
            name: name.to_string(),
            observed: verdict.observed,
            observed_text: verdict.observed_text(spec),
            status: verdict.status,
        });
    }
    judgement
}

/// The measures of a threshold's scope in `rows` (request rows) and `groups`: all rows
/// merged (global), the named row or group, or every row (each).
fn scope_measures(
    spec: &ThresholdSpec,
    rows: &[(Arc<str>, Recorder)],
    groups: &[(Arc<str>, GroupRecorder)],
) -> Vec<(Arc<str>, Measure)> {
    match &spec.scope {
        ThresholdScope::Global => {
            let mut all = Measure::default();
            for (_, recorder) in rows {
                all.add(&Measure::of_requests(recorder, spec.metric));
            }
            vec![(Arc::from("all"), all)]
        }
        ThresholdScope::Named(name) => match rows.iter().find(|(n, _)| **n == **name) {
            Some((n, recorder)) => vec![(n.clone(), Measure::of_requests(recorder, spec.metric))],
            None => groups
                .iter()
                .filter(|(n, _)| **n == **name)
                .map(|(n, group)| (n.clone(), Measure::of_group(group, spec.metric)))
                .collect(),
        },
        ThresholdScope::Each => rows.iter().map(|(n, r)| (n.clone(), Measure::of_requests(r, spec.metric))).collect(),
    }
}

fn worse(spec: &ThresholdSpec, a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(spec.comparison.worse(a, b)),
        (a, b) => a.or(b),
    }
}

/// What a windowed threshold keeps: the sum of its last intervals per row (added to as
/// intervals come, the oldest subtracted as it leaves), those intervals stored compactly, and
/// its verdict so far.
struct Window {
    /// How many intervals make the window.
    intervals: usize,
    sums: Vec<(Arc<str>, Measure)>,
    /// The window's intervals, oldest first, row by row.
    recent: VecDeque<Vec<(Arc<str>, StoredMeasure)>>,
    counts: WindowCounts,
    status: ThresholdStatus,
    observed: Option<f64>,
    /// Why a failing window had nothing to judge, when none of its requests was OK.
    note: Option<String>,
    rows: Vec<RowVerdict>,
}

impl Window {
    /// An empty window of `intervals` intervals, with nothing judged yet.
    fn new(intervals: usize) -> Window {
        Window {
            intervals,
            sums: Vec::new(),
            recent: VecDeque::new(),
            counts: WindowCounts::default(),
            status: ThresholdStatus::NoData,
            observed: None,
            note: None,
            rows: Vec::new(),
        }
    }

    /// Adds an interval; returns whether the window is full (and so to be judged).
    fn push(&mut self, interval: Vec<(Arc<str>, Measure)>) -> bool {
        let mut stored = Vec::with_capacity(interval.len());
        for (name, measure) in interval {
            stored.push((name.clone(), StoredMeasure::store(&measure)));
            match self.sums.iter_mut().find(|(n, _)| *n == name) {
                Some((_, sum)) => sum.add(&measure),
                None => self.sums.push((name, measure)),
            }
        }
        self.recent.push_back(stored);
        if self.recent.len() > self.intervals {
            let oldest = self.recent.pop_front().expect("longer than the window");
            for (name, measure) in oldest {
                if let Some((_, sum)) = self.sums.iter_mut().find(|(n, _)| *n == name) {
                    sum.subtract(&measure.load());
                }
            }
        }
        self.recent.len() == self.intervals
    }
}

/// Judges a run's thresholds as it goes and at its end. It lives on the collector's thread.
pub struct ThresholdMonitor {
    specs: Vec<ThresholdSpec>,
    interval_ms: u64,
    windows: Vec<Option<Window>>,
    /// The last interval taken into the windows.
    seen_interval: u64,
    /// Some threshold with `abort` failed: why.
    abort: Option<String>,
}

impl ThresholdMonitor {
    pub fn new(specs: Vec<ThresholdSpec>, interval_ms: u64) -> ThresholdMonitor {
        let interval_ms = interval_ms.max(1);
        let windows = specs
            .iter()
            .map(|spec| spec.window_ms.map(|w| Window::new(w.div_ceil(interval_ms).max(1) as usize)))
            .collect();
        ThresholdMonitor { specs, interval_ms, windows, seen_interval: 0, abort: None }
    }

    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// Judges what needs judging while the run goes, after the collector merged intervals up to
    /// `complete` (still pending in `totals.intervals`, not yet taken by the sink). Returns why
    /// the run must stop when a threshold with `abort` failed (once).
    pub fn interval(&mut self, totals: &Totals, complete: u64) -> Option<String> {
        if self.specs.is_empty() || self.abort.is_some() {
            return None;
        }
        self.take_intervals(totals, complete);
        let elapsed_ms = totals.elapsed.as_millis() as u64;
        for (spec, window) in self.specs.iter().zip(&self.windows) {
            let Some(after_ms) = spec.abort_after_ms else { continue };
            if elapsed_ms < after_ms {
                continue;
            }
            let failed = match window {
                // A window is judged as it fills: any failed window aborts.
                Some(window) => window.counts.failed > 0,
                None => {
                    let measures = scope_measures(spec, &totals.requests, &totals.groups);
                    judge(spec, &measures, whole_run_span(totals)).status == ThresholdStatus::Fail
                }
            };
            if failed {
                self.abort = Some(format!("threshold {} failed", spec.text));
                return self.abort.clone();
            }
        }
        None
    }

    /// The verdicts at the end of the run: every pending interval is taken first.
    pub fn finish(&mut self, totals: &Totals) -> Vec<ThresholdResult> {
        if let Some(last) = totals.intervals.last_interval() {
            self.take_intervals(totals, last);
        }
        let span = whole_run_span(totals);
        let mut results = Vec::with_capacity(self.specs.len());
        for (spec, window) in self.specs.iter().zip(&self.windows) {
            let (observed, status, note, rows, windows) = match window {
                Some(window) if window.counts.judged > 0 => {
                    (window.observed, window.status, window.note.clone(), window.rows.clone(), Some(window.counts))
                }
                // A run shorter than the window: judged once, on all of it.
                _ => {
                    let judgement = judge(spec, &scope_measures(spec, &totals.requests, &totals.groups), span);
                    let windows = window.as_ref().map(|_| WindowCounts {
                        judged: 1,
                        failed: u64::from(judgement.status == ThresholdStatus::Fail),
                        first_failure_ms: None,
                    });
                    (judgement.observed, judgement.status, judgement.note, judgement.rows, windows)
                }
            };
            results.push(ThresholdResult {
                text: spec.text.clone(),
                scope: spec.scope_name().to_string(),
                metric: spec.metric.name(),
                comparison: spec.comparison.symbol().to_string(),
                bound: spec.bound,
                bound_text: spec.bound_text(),
                observed,
                observed_text: observed.map(|v| spec.metric.format_value(v)),
                note,
                status,
                abort: spec.abort_after_ms.is_some(),
                population: spec.metric.population().map(str::to_string),
                window_ms: spec.window_ms,
                windows,
                rows,
            });
        }
        results
    }

    /// Adds the intervals after the last one seen, up to `last`, to the windows, judging each
    /// full window.
    fn take_intervals(&mut self, totals: &Totals, last: u64) {
        if self.windows.iter().all(Option::is_none) {
            self.seen_interval = last;
            return;
        }
        while self.seen_interval < last {
            self.seen_interval += 1;
            let interval = self.seen_interval;
            let rows = totals.intervals.rows(interval);
            let end_ms = interval * self.interval_ms;
            for (spec, window) in self.specs.iter().zip(self.windows.iter_mut()) {
                let Some(window) = window else { continue };
                // Groups are not kept per interval: a window judges requests.
                if !window.push(scope_measures(spec, rows, &[])) {
                    continue;
                }
                let span = Span {
                    seconds: (window.intervals as u64 * self.interval_ms) as f64 / 1000.0,
                    scheduled_starts: 0,
                    late_starts: 0,
                };
                let judgement = judge(spec, &window.sums, span);
                window.counts.judged += 1;
                if judgement.status == ThresholdStatus::Fail {
                    window.counts.failed += 1;
                    window.counts.first_failure_ms.get_or_insert(end_ms);
                    if window.note.is_none() {
                        window.note = judgement.note;
                    }
                }
                // The worst window is the one shown.
                window.status = window.status.combine(judgement.status);
                if judgement.status != ThresholdStatus::NoData {
                    window.observed = worse(spec, window.observed, judgement.observed);
                }
                if judgement.status == ThresholdStatus::Fail || window.rows.is_empty() {
                    window.rows = judgement.rows;
                }
            }
        }
    }
}

fn whole_run_span(totals: &Totals) -> Span {
    Span {
        seconds: totals.measured().as_secs_f64(),
        scheduled_starts: totals.start_lag_us.len(),
        late_starts: totals.late_starts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::{RequestTiming, Snapshot};
    use std::time::{Duration, SystemTime};

    fn recorder(latencies_ms: &[u64], failures: u64) -> Recorder {
        let mut r = Recorder::default();
        for &ms in latencies_ms {
            r.record(&RequestTiming { latency_us: ms * 1000, uncorrected_us: ms * 1000, ..Default::default() }, true);
        }
        for _ in 0..failures {
            r.record(&RequestTiming { latency_us: 1000, uncorrected_us: 1000, ..Default::default() }, false);
        }
        r
    }

    fn totals_with(rows: Vec<(&str, Recorder)>, seconds: u64) -> Totals {
        let mut totals = Totals::new(SystemTime::now(), 1);
        let snapshot = Snapshot {
            worker: 0,
            interval: 1,
            requests: rows.into_iter().map(|(n, r)| (Arc::from(n), r)).collect(),
            ..Default::default()
        };
        totals.absorb(snapshot);
        totals.elapsed = Duration::from_secs(seconds);
        totals
    }

    fn verdicts(thresholds: &[&str], totals: &Totals) -> Vec<ThresholdResult> {
        let specs = thresholds.iter().map(|t| t.parse().unwrap()).collect();
        ThresholdMonitor::new(specs, 1000).finish(totals)
    }

    #[test]
    fn thresholds_pass_and_fail_at_their_bounds() {
        let latencies: Vec<u64> = (1..=100).collect();
        let totals = totals_with(vec![("home", recorder(&latencies, 0)), ("login", recorder(&[500], 1))], 10);
        let results = verdicts(
            &[
                "\"home\": p99<=100ms",
                "\"home\": p99<98ms",
                "errors<1%",
                "errors<=1%",
                "\"login\": errors<50%",
                "rps>=10.2",
                "rps>10.2",
                "count==102",
            ],
            &totals,
        );
        let statuses: Vec<_> = results.iter().map(|r| r.status.as_str()).collect();
        // 102 requests, 1 failed: 0.98 % errors, 10.2/s.
        assert_eq!(statuses, ["pass", "fail", "pass", "pass", "fail", "pass", "fail", "pass"]);
        // The 99th of 1..=100 ms, as HDR keeps it (3 significant digits): what summary.json says.
        assert_eq!(results[0].observed_text.as_deref(), Some("99.01 ms"));
        assert_eq!(results[2].observed_text.as_deref(), Some("0.98 %"));
    }

    #[test]
    fn a_scope_without_requests_fails_with_no_data() {
        let totals = totals_with(vec![("home", recorder(&[5], 0))], 1);
        let results =
            verdicts(&["\"home\": p99<1s", "\"later\": p99<1s", "late_starts<1%", "connect.p99<1ms"], &totals);
        let statuses: Vec<_> = results.iter().map(|r| r.status.as_str()).collect();
        assert_eq!(statuses, ["pass", "no_data", "no_data", "no_data"]);
        assert!(!results[1].passed());
    }

    #[test]
    fn each_judges_every_row_and_shows_the_worst() {
        let totals = totals_with(vec![("fast", recorder(&[5, 5], 0)), ("slow", recorder(&[900], 0))], 1);
        let result = &verdicts(&["each: p99<100ms"], &totals)[0];
        assert_eq!(result.status, ThresholdStatus::Fail);
        assert_eq!(result.rows.iter().map(|r| r.status.as_str()).collect::<Vec<_>>(), ["pass", "fail"]);
        // HDR keeps 3 significant digits.
        assert!((result.observed.unwrap() - 900_000.0).abs() < 1000.0, "{:?}", result.observed);
    }

    #[test]
    fn a_window_judges_the_last_intervals_and_abort_stops_once() {
        let spec: ThresholdSpec = "p50<100ms over 2s abort".parse().unwrap();
        let mut monitor = ThresholdMonitor::new(vec![spec], 1000);
        let mut totals = Totals::new(SystemTime::now(), 1);
        // Intervals 1-3 fast, 4-5 slow: the window of 4 and 5 fails (2 s).
        for (interval, ms) in [(1, 10), (2, 10), (3, 10), (4, 500), (5, 500)] {
            totals.absorb(Snapshot {
                worker: 0,
                interval,
                requests: vec![(Arc::from("home"), recorder(&[ms, ms], 0))],
                ..Default::default()
            });
            totals.elapsed = Duration::from_secs(interval);
            let abort = monitor.interval(&totals, interval);
            if interval < 5 {
                // The window (3, 4) has two fast and two slow requests: p50 is a fast one.
                assert_eq!(abort, None, "interval {interval}");
            } else {
                assert_eq!(abort.as_deref(), Some("threshold p50<100ms over 2s abort failed"));
            }
        }
        let result = &monitor.finish(&totals)[0];
        assert_eq!(result.status, ThresholdStatus::Fail);
        assert_eq!(result.windows, Some(WindowCounts { judged: 4, failed: 1, first_failure_ms: Some(5000) }));
        assert!(result.observed.unwrap() >= 499_000.0);
        // On the whole run, the median is fast: only the window saw the slowdown.
        let whole = &verdicts(&["p50<100ms"], &totals)[0];
        assert_eq!(whole.status, ThresholdStatus::Pass);
    }

    #[test]
    fn a_window_keeps_its_intervals_small_and_its_sums_exact() {
        let latencies: Vec<u64> = (1..=1000).collect();
        let interval =
            Measure::of_requests(&recorder(&latencies, 0), "p99<1s".parse::<ThresholdSpec>().unwrap().metric);
        let stored = StoredMeasure::store(&interval);
        // A live histogram of these is tens of kilobytes; stored, a window of 5 minutes of
        // 1 s intervals holds 300 of these.
        assert!(stored.latency.as_ref().unwrap().len() < 4096, "{} bytes", stored.latency.unwrap().len());
        let mut window = Window::new(3);
        for n in 1..=10u64 {
            let measure = Measure::of_requests(&recorder(&vec![n; n as usize], 0), interval_metric());
            window.push(vec![(Arc::from("all"), measure)]);
        }
        // Intervals 8, 9 and 10 remain.
        let sum = &window.sums[0].1;
        assert_eq!(sum.count, 8 + 9 + 10);
        assert_eq!(sum.latency.as_ref().unwrap().len(), 27);
        assert_eq!(sum.latency.as_ref().unwrap().min(), 8000);
    }

    fn interval_metric() -> ThresholdMetric {
        "p50<1s".parse::<ThresholdSpec>().unwrap().metric
    }
}
