//! What a results directory holds, read for the report: summary.json (the thresholds'
//! verdicts among it), timeseries.jsonl gathered into the chart's points, and
//! histograms.hlog when it exists. A killed run's files end mid-way: what was written is used.

use super::histograms::{bucket_ms, HistogramLog};
use crate::results_dir::{read_summary, ResultsError};
use crate::summary::Summary;
use horde_metrics::{IntervalSample, LatencyStats};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

/// At most this many points on a chart over time: a longer run's intervals are merged.
pub const MAX_POINTS: usize = 1000;

/// One point of a chart over time: one interval, or adjacent intervals merged.
#[derive(Debug, Clone, Default)]
pub struct TimePoint {
    pub start_ms: u64,
    pub duration_ms: u64,
    pub ok: u64,
    pub ko: u64,
    /// The most users active at the end of any interval of the point.
    pub users_active: u64,
    /// Phase means (dns, connect, tls, send, wait, receive) weighted by the intervals' requests.
    phase_sums: [f64; 6],
    phase_weight: u64,
    /// The interval's latency statistics as the time series has them: only for a point of one
    /// interval, as percentiles of several intervals cannot be made from theirs.
    pub latency: Option<LatencyStats>,
}

impl TimePoint {
    pub fn phase_means(&self) -> [f64; 6] {
        let weight = self.phase_weight.max(1) as f64;
        self.phase_sums.map(|sum| sum / weight)
    }

    fn add(&mut self, sample: &IntervalSample) {
        let first = self.duration_ms == 0;
        self.duration_ms = (sample.start_ms + sample.duration_ms).saturating_sub(self.start_ms).max(self.duration_ms);
        self.ok += sample.ok;
        self.ko += sample.ko;
        self.users_active = self.users_active.max(sample.users_active);
        let weight = sample.ok + sample.ko;
        let p = &sample.phases_mean_us;
        for (sum, mean) in self.phase_sums.iter_mut().zip([p.dns, p.connect, p.tls, p.send, p.wait, p.receive]) {
            *sum += mean * weight as f64;
        }
        self.phase_weight += weight;
        self.latency = if first { Some(sample.latency.clone()) } else { None };
    }
}

pub struct RunResults {
    pub summary: Summary,
    pub histograms: Option<HistogramLog>,
    /// The width of a chart's point: the snapshot interval, or several when the run is long
    /// and histograms.hlog lets intervals merge exactly.
    pub bucket_ms: u64,
    /// Points of all requests together.
    pub all: Vec<TimePoint>,
    /// Points of the request rows asked for.
    pub rows: BTreeMap<String, Vec<TimePoint>>,
}

impl RunResults {
    /// Reads `dir`, keeping the time series of the request rows `keep_row` accepts.
    pub fn read(dir: &Path, keep_row: &dyn Fn(&str) -> bool) -> Result<RunResults, ResultsError> {
        let summary = read_summary(dir)?;
        let interval_ms = summary.plan.options.snapshot_interval_ms.max(1);
        let histograms = std::fs::read(dir.join("histograms.hlog"))
            .ok()
            .map(|text| HistogramLog::parse(&text, summary.run.started_at_unix_ms, interval_ms))
            .filter(|log| !log.is_empty());
        // Without histograms, percentiles of several intervals cannot be made: every interval
        // is a point, as the time series has it.
        let bucket_ms = match &histograms {
            Some(_) => bucket_ms(summary.run.duration_ms, interval_ms, MAX_POINTS),
            None => interval_ms,
        };
        let mut results = RunResults { summary, histograms, bucket_ms, all: Vec::new(), rows: BTreeMap::new() };
        results.read_timeseries(&dir.join("timeseries.jsonl"), keep_row);
        results.end_points_at_the_run_end();
        Ok(results)
    }

    /// The run ends part-way through its last interval, but the time series gives that
    /// interval its full length: its rates would plunge as if the server had collapsed. A
    /// point that runs past the end of a finished run is cut to the time it measured, so its
    /// rate is over that time (the chart marks it partial). A run still `running` (or killed)
    /// has no end to trust, and keeps its points whole.
    fn end_points_at_the_run_end(&mut self) {
        if self.summary.run.status == "running" {
            return;
        }
        let end_ms = self.summary.run.duration_ms;
        for point in self.all.iter_mut().chain(self.rows.values_mut().flatten()) {
            if point.start_ms < end_ms && point.start_ms + point.duration_ms > end_ms {
                point.duration_ms = end_ms - point.start_ms;
            }
        }
    }

    /// The last point of all requests when the run ended in it, measuring less than 90 % of a
    /// point's width (a shade less is not worth a mark): its start and its length, in ms.
    pub fn partial_last_point(&self) -> Option<(u64, u64)> {
        let last = self.all.last()?;
        (last.duration_ms * 10 < self.bucket_ms * 9).then_some((last.start_ms, last.duration_ms))
    }

    /// A missing or unreadable time series leaves the charts over time empty; a line that
    /// does not parse (the last one of a killed run) is skipped.
    fn read_timeseries(&mut self, path: &Path, keep_row: &dyn Fn(&str) -> bool) {
        let Ok(file) = std::fs::File::open(path) else { return };
        for line in std::io::BufReader::new(file).lines() {
            let Ok(line) = line else { break };
            let Ok(sample) = serde_json::from_str::<IntervalSample>(&line) else { continue };
            let points = if sample.name == horde_metrics::ALL_REQUESTS {
                &mut self.all
            } else if keep_row(&sample.name) {
                self.rows.entry(sample.name.clone()).or_default()
            } else {
                continue;
            };
            let start_ms = sample.start_ms / self.bucket_ms * self.bucket_ms;
            match points.last_mut() {
                Some(last) if last.start_ms == start_ms => last.add(&sample),
                _ => {
                    let mut point = TimePoint { start_ms, ..TimePoint::default() };
                    point.add(&sample);
                    points.push(point);
                }
            }
        }
    }
}
