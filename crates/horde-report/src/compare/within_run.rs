//! The one-run fallback: batch means over a run's steady window.
//!
//! A run's snapshot intervals are grouped into consecutive batches; each batch gives one value
//! per row and metric: latency percentiles from the batch's merged HDR histograms
//! (histograms.hlog: merging is exact, averaging percentiles is not), the mean latency, rps
//! and error rate from the time series' counts. Groups are in the histogram log alone (the
//! time series has request rows only): their percentiles, mean and passes per second come from
//! their histograms, and their failed passes are not known per interval. The warm-up, the first measured interval
//! (users arriving, connections opening) and a last partial interval are left out. Batches
//! of one run are closer to independent than requests, not independent: the comparison says so.

use super::samples::Series;
use super::{Metric, Scope};
use crate::Summary;
use base64::Engine;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use horde_metrics::IntervalSample;
use std::collections::HashMap;

/// Batches wanted from a run's steady window (fewer when it has fewer intervals).
pub const BATCHES: usize = 10;
/// Steady intervals needed for batch means at all.
pub const MIN_STEADY_INTERVALS: usize = 4;

/// One interval's histogram from histograms.hlog.
#[derive(Debug, Clone)]
pub struct HistogramInterval {
    /// `None` for all requests; else the request row's (`Scope::Request`) or group's
    /// (`Scope::Group`) name.
    pub row: Option<(Scope, String)>,
    /// From the start of the run.
    pub start_ms: f64,
    pub duration_ms: f64,
    pub histogram: Histogram<u64>,
}

/// Reads the histograms of all requests (untagged), of each request row (`r<i>`, named by
/// the `#[Tag r<i>: "name"]` comments, else by summary.json's `requests[i]`) and of each group
/// (`g<i>`, likewise); the uncorrected tags are not compared. Times become offsets from
/// `started_at_unix_ms`.
pub fn parse_interval_log(text: &str, summary: &Summary) -> Result<Vec<HistogramInterval>, String> {
    let names = tag_names(text);
    let started_s = summary.run.started_at_unix_ms as f64 / 1000.0;
    let mut base_s = None;
    let mut start_time_s = None;
    let mut deserializer = Deserializer::new();
    let mut intervals = Vec::new();
    for entry in IntervalLogIterator::new(text.as_bytes()) {
        match entry.map_err(|e| format!("not an interval log: {e:?}"))? {
            LogEntry::BaseTime(t) => base_s = Some(t.as_secs_f64()),
            LogEntry::StartTime(t) => start_time_s = Some(t.as_secs_f64()),
            LogEntry::Interval(interval) => {
                let row = match interval.tag().map(|t| t.as_str()) {
                    None => None,
                    Some(tag) => {
                        let indexed = |prefix: char| tag.strip_prefix(prefix).and_then(|i| i.parse::<usize>().ok());
                        let found = match (indexed('r'), indexed('g')) {
                            (Some(i), _) => summary.requests.get(i).map(|r| (Scope::Request, &r.name)),
                            (_, Some(i)) => summary.groups.get(i).map(|g| (Scope::Group, &g.name)),
                            _ => continue, // uncorrected
                        };
                        let scope = if indexed('g').is_some() { Scope::Group } else { Scope::Request };
                        match names.get(tag).map(|name| (scope, name)).or(found) {
                            Some((scope, name)) => Some((scope, name.clone())),
                            None => continue,
                        }
                    }
                };
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(interval.encoded_histogram())
                    .map_err(|e| format!("a histogram is not base64: {e}"))?;
                let histogram: Histogram<u64> = deserializer
                    .deserialize(&mut bytes.as_slice())
                    .map_err(|e| format!("a histogram does not decode: {e:?}"))?;
                // As HdrHistogram's readers do: a timestamp more than a year below the start
                // time is an offset (from BaseTime, else StartTime), otherwise a Unix time.
                let stamp = interval.start_timestamp().as_secs_f64();
                let reference = start_time_s.unwrap_or(started_s);
                let absolute = if stamp < reference - 365.0 * 86_400.0 {
                    stamp + base_s.filter(|b| *b > 0.0).or(start_time_s).unwrap_or(started_s)
                } else {
                    stamp
                };
                intervals.push(HistogramInterval {
                    row,
                    start_ms: (absolute - started_s) * 1000.0,
                    duration_ms: interval.duration().as_secs_f64() * 1000.0,
                    histogram,
                });
            }
        }
    }
    Ok(intervals)
}

/// `#[Tag r3: "checkout"]` comments: tag -> name.
fn tag_names(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter_map(|line| line.strip_prefix("#[Tag ")?.strip_suffix(']')?.split_once(": "))
        .filter_map(|(tag, name)| Some((tag.to_string(), serde_json::from_str::<String>(name).ok()?)))
        .collect()
}

/// The intervals a run's batches were made of.
#[derive(Debug, Clone, PartialEq)]
pub struct SteadyWindow {
    pub from_ms: u64,
    pub to_ms: u64,
    pub intervals: usize,
    pub batches: usize,
    /// Why latency percentiles are missing, if they are (no histograms.hlog).
    pub missing_histograms: Option<String>,
}

impl SteadyWindow {
    pub fn describe(&self) -> String {
        let mut text = format!(
            "{} batches of the {} intervals from {:.1} s to {:.1} s (warm-up, first and partial last interval left out)",
            self.batches,
            self.intervals,
            self.from_ms as f64 / 1000.0,
            self.to_ms as f64 / 1000.0
        );
        if let Some(reason) = &self.missing_histograms {
            text.push_str(&format!("; p50 and p99 not compared: {reason}"));
        }
        text
    }
}

/// One value per batch for every row and metric of a run. `timeseries` is timeseries.jsonl
/// (rows named as in the summary, `all` for all requests); `histograms` the parsed
/// histograms.hlog, or the reason it is missing.
pub fn batch_series(
    summary: &Summary,
    timeseries: &[IntervalSample],
    histograms: Result<&[HistogramInterval], &str>,
) -> Result<(Vec<Series>, SteadyWindow), String> {
    let nominal_ms = summary.plan.options.snapshot_interval_ms.max(1);
    let warmup_ms = summary.run.warmup_ms;
    let mut starts: Vec<(u64, u64)> = timeseries
        .iter()
        .filter(|s| s.name == "all")
        .map(|s| (s.start_ms, s.duration_ms))
        .filter(|(start, duration)| *start >= warmup_ms && *duration * 10 >= nominal_ms * 9)
        .collect();
    starts.sort_unstable();
    starts.dedup();
    // The first measured interval: users arriving, connections opening.
    if !starts.is_empty() {
        starts.remove(0);
    }
    if starts.len() < MIN_STEADY_INTERVALS {
        return Err(format!(
            "{} full snapshot intervals after the warm-up and the first one; batch means need at least {MIN_STEADY_INTERVALS} \
             (run longer, or set a shorter snapshot_interval_ms)",
            starts.len()
        ));
    }
    let batches = BATCHES.min(starts.len());
    // Batch b holds intervals [b·n/B, (b+1)·n/B): as even as they come.
    let bounds: Vec<(u64, u64)> = (0..batches)
        .map(|b| {
            let first = b * starts.len() / batches;
            let last = (b + 1) * starts.len() / batches - 1;
            (starts[first].0, starts[last].0 + starts[last].1)
        })
        .collect();
    let batch_of = |start_ms: f64, duration_ms: f64| {
        let middle = start_ms + duration_ms / 2.0;
        bounds.iter().position(|(from, to)| middle >= *from as f64 && middle < *to as f64)
    };

    let mut rows: Vec<(Scope, String)> = vec![(Scope::Global, summary.global.name.clone())];
    rows.extend(summary.requests.iter().map(|r| (Scope::Request, r.name.clone())));
    rows.extend(summary.groups.iter().map(|g| (Scope::Group, g.name.clone())));
    let mut series = Vec::new();
    for (scope, name) in &rows {
        let seconds = |b: usize| (bounds[b].1 - bounds[b].0) as f64 / 1000.0;
        let mut push = |metric: Metric, values: Vec<f64>| {
            if !values.is_empty() {
                series.push(Series { scope: *scope, name: name.clone(), metric, values });
            }
        };
        if *scope != Scope::Group {
            let series_name = if *scope == Scope::Global { "all" } else { name.as_str() };
            // Counts and latency sums per batch from the time series.
            let mut ok = vec![0u64; batches];
            let mut ko = vec![0u64; batches];
            let mut latency_sum = vec![0.0f64; batches];
            let mut latency_count = vec![0u64; batches];
            for sample in timeseries.iter().filter(|s| s.name == series_name) {
                if let Some(b) = batch_of(sample.start_ms as f64, sample.duration_ms as f64) {
                    ok[b] += sample.ok;
                    ko[b] += sample.ko;
                    latency_sum[b] += sample.latency.mean_us * sample.latency.count as f64;
                    latency_count[b] += sample.latency.count;
                }
            }
            let with_requests: Vec<usize> = (0..batches).filter(|&b| ok[b] + ko[b] > 0).collect();
            push(Metric::Rps, (0..batches).map(|b| (ok[b] + ko[b]) as f64 / seconds(b)).collect());
            push(
                Metric::Errors,
                with_requests.iter().map(|&b| 100.0 * ko[b] as f64 / (ok[b] + ko[b]) as f64).collect(),
            );
            push(
                Metric::Mean,
                (0..batches)
                    .filter(|&b| latency_count[b] > 0)
                    .map(|b| latency_sum[b] / latency_count[b] as f64)
                    .collect(),
            );
        }
        let Ok(histograms) = histograms else { continue };
        let wanted = (*scope != Scope::Global).then(|| (*scope, name.clone()));
        let mut merged: Vec<Option<Histogram<u64>>> = vec![None; batches];
        for interval in histograms.iter().filter(|h| h.row == wanted) {
            let Some(b) = batch_of(interval.start_ms, interval.duration_ms) else { continue };
            match &mut merged[b] {
                Some(histogram) => {
                    histogram.add(&interval.histogram).map_err(|e| format!("histograms do not merge: {e:?}"))?
                }
                slot => {
                    // A histogram read from the log has the range of its own values: it must
                    // grow to take a later interval's larger ones.
                    let mut histogram = interval.histogram.clone();
                    histogram.auto(true);
                    *slot = Some(histogram);
                }
            }
        }
        if *scope == Scope::Group {
            // A batch without a pass is a rate of 0, as a request row's is.
            push(
                Metric::Rps,
                (0..batches).map(|b| merged[b].as_ref().map_or(0, |h| h.len()) as f64 / seconds(b)).collect(),
            );
        }
        let merged: Vec<Histogram<u64>> = merged.into_iter().flatten().filter(|h| !h.is_empty()).collect();
        if *scope == Scope::Group {
            push(Metric::Mean, merged.iter().map(|h| h.mean()).collect());
        }
        push(Metric::P50, merged.iter().map(|h| h.value_at_quantile(0.5) as f64).collect());
        push(Metric::P99, merged.iter().map(|h| h.value_at_quantile(0.99) as f64).collect());
    }
    let window = SteadyWindow {
        from_ms: bounds[0].0,
        to_ms: bounds[batches - 1].1,
        intervals: starts.len(),
        batches,
        missing_histograms: histograms.err().map(str::to_string),
    };
    Ok((series, window))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{compare, CompareOptions, Method, SideSamples, Verdict};
    use crate::summary::Environment;
    use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
    use hdrhistogram::serialization::V2DeflateSerializer;
    use horde_metrics::{GroupRecorder, Recorder, RequestTiming, RunStatus, Snapshot, Totals};
    use std::time::{Duration, UNIX_EPOCH};

    const STARTED_MS: u64 = 1_795_238_461_000;
    const INTERVALS: u64 = 20;

    fn summary() -> Summary {
        let plan = horde_plan::Plan::from_json(
            r#"{"version": 1, "name": "delay", "scenarios": [{"name": "s",
                "steps": [{"type": "request", "name": "home", "method": "GET", "url": "http://127.0.0.1:1/"}],
                "injection": [{"type": "at_once_users", "users": 2}]}],
                "options": {"snapshot_interval_ms": 100}}"#,
        )
        .unwrap();
        let mut home = Recorder::default();
        home.record(&RequestTiming { latency_us: 20_000, uncorrected_us: 20_000, ..Default::default() }, true);
        let mut snapshot = Snapshot::default();
        snapshot.requests.push(("home".into(), home));
        let mut journey = GroupRecorder::default();
        journey.record(40_000, true);
        snapshot.groups.push(("journey".into(), journey));
        let mut totals = Totals::new(UNIX_EPOCH + Duration::from_millis(STARTED_MS), 1);
        totals.absorb(snapshot);
        totals.elapsed = Duration::from_millis(INTERVALS * 100);
        Summary::from_totals(&totals, RunStatus::Completed, &plan, &Environment::detect(1, "test"))
    }

    /// An interval log as the contract has it (absolute start times, base time 0, a comment
    /// naming each row's tag), latencies around `latency_us`, jittered per interval; the group's
    /// passes take twice as long, 25 of them per interval.
    fn interval_log(latency_us: u64) -> String {
        let mut buffer = Vec::new();
        let mut serializer = V2DeflateSerializer::new();
        let mut log = IntervalLogWriterBuilder::new()
            .with_start_time(UNIX_EPOCH + Duration::from_millis(STARTED_MS))
            .with_base_time(UNIX_EPOCH)
            .begin_log_with(&mut buffer, &mut serializer)
            .unwrap();
        log.write_comment("[Tag r0: \"home\"]").unwrap();
        for i in 0..INTERVALS {
            let mut histogram = Histogram::<u64>::new(3).unwrap();
            for k in 0..50 {
                histogram.record(latency_us + (i * 37 + k * 11) % 400).unwrap();
            }
            let start = Duration::from_millis(STARTED_MS + i * 100);
            let length = Duration::from_millis(100);
            log.write_histogram(&histogram, start, length, None).unwrap();
            log.write_histogram(&histogram, start, length, Tag::new("r0")).unwrap();
            log.write_histogram(&histogram, start, length, Tag::new("uncorrected")).unwrap();
            let mut passes = Histogram::<u64>::new(3).unwrap();
            for k in 0..25 {
                passes.record(2 * latency_us + (i * 41 + k * 13) % 500).unwrap();
            }
            if i == 0 {
                log.write_comment("[Tag g0: \"journey\"]").unwrap();
            }
            log.write_histogram(&passes, start, length, Tag::new("g0")).unwrap();
        }
        String::from_utf8(buffer).unwrap()
    }

    /// timeseries.jsonl: 50 requests per interval, `errors_every` of them KO every few intervals.
    fn timeseries(latency_us: u64, ko: u64) -> Vec<IntervalSample> {
        let mut lines = Vec::new();
        for i in 0..INTERVALS {
            for name in ["all", "home"] {
                lines.push(format!(
                    r#"{{"interval": {}, "start_ms": {}, "duration_ms": 100, "name": "{name}", "ok": {}, "ko": {}, "rps": 500.0,
                        "latency": {{"count": 50, "min_us": 1, "max_us": 1, "mean_us": {}, "stddev_us": 0.0, "percentiles": []}},
                        "users_active": 2}}"#,
                    i + 1,
                    i * 100,
                    50 - ko * (i % 2),
                    ko * (i % 2),
                    latency_us + (i * 53) % 300
                ));
            }
        }
        lines.iter().map(|line| serde_json::from_str(line).unwrap()).collect()
    }

    fn side(label: &str, latency_us: u64, ko: u64) -> (SideSamples, SteadyWindow) {
        let summary = summary();
        let histograms = parse_interval_log(&interval_log(latency_us), &summary).unwrap();
        let (series, window) = batch_series(&summary, &timeseries(latency_us, ko), Ok(&histograms)).unwrap();
        (SideSamples { label: label.into(), runs: vec![label.into()], series }, window)
    }

    #[test]
    fn the_interval_log_reads_back_by_row_with_offsets_from_the_start() {
        let summary = summary();
        let intervals = parse_interval_log(&interval_log(20_000), &summary).unwrap();
        // Untagged, r0 and g0 kept; uncorrected left out.
        assert_eq!(intervals.len(), 3 * INTERVALS as usize);
        assert_eq!(intervals[1].row, Some((Scope::Request, "home".to_string())));
        assert_eq!(intervals[2].row, Some((Scope::Group, "journey".to_string())));
        assert!((intervals[3].start_ms - 100.0).abs() < 1.0, "{}", intervals[3].start_ms);
        assert_eq!(intervals[0].histogram.len(), 50);
    }

    #[test]
    fn batches_cover_the_steady_window_and_find_a_slowdown() {
        let (a, window) = side("A", 20_000, 0);
        // 20 intervals, the first left out: 19 in 10 batches.
        assert_eq!((window.intervals, window.batches, window.from_ms, window.to_ms), (19, 10, 100, 2000));
        let p50 = a.series.iter().find(|s| s.metric == Metric::P50 && s.scope == Scope::Global).unwrap();
        assert_eq!(p50.values.len(), 10);
        assert!(p50.values.iter().all(|v| (20_000.0..20_400.0).contains(v)), "{:?}", p50.values);
        let (b, _) = side("B", 24_000, 5);
        let report = compare(&a, &b, Method::WithinRun, &CompareOptions::default());
        let verdict = |metric: Metric| {
            report.comparisons.iter().find(|c| c.metric == metric && c.name == "home").unwrap().verdict
        };
        assert_eq!(verdict(Metric::P50), Verdict::Slower);
        assert_eq!(verdict(Metric::P99), Verdict::Slower);
        assert_eq!(verdict(Metric::Mean), Verdict::Slower);
        assert_eq!(verdict(Metric::Errors), Verdict::Worse);
        // The group, from its histograms alone: slower passes at the same rate, no errors known.
        let group = |metric: Metric| report.comparisons.iter().find(|c| c.metric == metric && c.scope == Scope::Group);
        for metric in [Metric::P50, Metric::P99, Metric::Mean] {
            assert_eq!(group(metric).unwrap().verdict, Verdict::Slower, "{metric:?}");
        }
        let rps = group(Metric::Rps).unwrap();
        assert_eq!((rps.verdict, rps.a.values.len()), (Verdict::Same, 10));
        assert!(rps.a.values.iter().all(|v| (v - 250.0).abs() < 1e-9), "25 passes in 100 ms: {:?}", rps.a.values);
        assert!(group(Metric::Errors).is_none());
        assert!(report.warnings[0].contains("WITHIN-RUN"));
        // The same run against itself: no change anywhere.
        let report = compare(&a, &a.clone(), Method::WithinRun, &CompareOptions::default());
        assert!(report.comparisons.iter().all(|c| c.verdict == Verdict::Same));
    }

    #[test]
    fn too_short_a_run_has_no_batches() {
        let summary = summary();
        let short: Vec<IntervalSample> = timeseries(20_000, 0).into_iter().take(8).collect();
        let error = batch_series(&summary, &short, Err("no histograms.hlog")).unwrap_err();
        assert!(error.contains("3 full snapshot intervals"), "{error}");
    }
}
