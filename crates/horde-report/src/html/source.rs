//! What a results directory holds, read for the report: summary.json (the thresholds'
//! verdicts among it), timeseries.jsonl gathered into the chart's points, and
//! histograms.hlog when it exists. A killed run's files end mid-way: what was written is used.

use super::histograms::{bucket_ms, HistogramLog};
use crate::results_dir::{read_summary, ResultsError};
use crate::summary::Summary;
use horde_metrics::{IntervalSample, LatencyStats};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

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

/// What one reading of a results directory leaves for the next reading of the same directory:
/// the live dashboard reads a growing directory every interval, and reading its files whole
/// each time (an hour of 20 requests: 75,000 lines of time series, 150,000 histograms) would
/// make each rendering slower than the last. With it, a reading takes only the lines the sink
/// appended since the last one. A report rendered once uses a new one.
#[derive(Default)]
pub struct ReadCache {
    dir: PathBuf,
    histograms: Option<HistogramLog>,
    /// How far histograms.hlog was read into `histograms`.
    histograms_read: LinesRead,
    timeseries: Option<TimeSeriesRead>,
}

/// How far a file that is only ever appended to has been read: whole lines only (a line still
/// being written waits for the next reading).
#[derive(Default)]
struct LinesRead {
    bytes: u64,
}

impl LinesRead {
    /// Whether the file still holds what was read: a shorter one was written again.
    fn still_holds(&self, path: &Path) -> bool {
        std::fs::metadata(path).map_or(0, |m| m.len()) >= self.bytes
    }

    /// The whole lines appended since the last call; none when the file cannot be read (not
    /// written yet).
    fn next_lines(&mut self, path: &Path) -> Vec<u8> {
        let read = || -> std::io::Result<Vec<u8>> {
            let mut file = std::fs::File::open(path)?;
            file.seek(SeekFrom::Start(self.bytes))?;
            let mut appended = Vec::new();
            file.read_to_end(&mut appended)?;
            Ok(appended)
        };
        let mut appended = read().unwrap_or_default();
        let whole = appended.iter().rposition(|b| *b == b'\n').map_or(0, |at| at + 1);
        appended.truncate(whole);
        self.bytes += whole as u64;
        appended
    }
}

/// timeseries.jsonl read so far, gathered into points of `bucket_ms` for the rows `kept`.
struct TimeSeriesRead {
    lines: LinesRead,
    bucket_ms: u64,
    kept: BTreeSet<String>,
    all: Vec<TimePoint>,
    rows: BTreeMap<String, Vec<TimePoint>>,
}

impl ReadCache {
    /// Takes back the log the results were read with, for the next reading.
    pub fn keep(&mut self, results: RunResults) {
        self.histograms = results.histograms;
    }

    /// Intervals of histograms.hlog kept, every tag's (for the tests).
    #[cfg(test)]
    pub fn kept_intervals(&self) -> usize {
        self.histograms.as_ref().map_or(0, HistogramLog::intervals)
    }

    /// What is kept of `dir`: all of it, or nothing when `dir` is another directory.
    fn of(&mut self, dir: &Path) -> &mut ReadCache {
        if self.dir != dir {
            *self = ReadCache { dir: dir.to_path_buf(), ..ReadCache::default() };
        }
        self
    }
}

impl RunResults {
    /// Reads `dir`, keeping the time series of the request rows `kept` names; what `cache`
    /// holds of `dir` is not read again.
    pub fn read(dir: &Path, kept: &BTreeSet<String>, cache: &mut ReadCache) -> Result<RunResults, ResultsError> {
        let cache = cache.of(dir);
        let summary = read_summary(dir)?;
        let interval_ms = summary.plan.options.snapshot_interval_ms.max(1);
        let run_start_unix_ms = summary.run.started_at_unix_ms;
        // What was read goes on only for the same run, rows and files (a file shorter than what
        // was read of it was written again).
        let log_path = dir.join("histograms.hlog");
        let mut log = match cache.histograms.take() {
            Some(log)
                if log.read_as(run_start_unix_ms, interval_ms, kept)
                    && cache.histograms_read.still_holds(&log_path) =>
            {
                log
            }
            _ => {
                cache.histograms_read = LinesRead::default();
                HistogramLog::new(run_start_unix_ms, interval_ms, Some(kept.clone()))
            }
        };
        log.append(&cache.histograms_read.next_lines(&log_path));
        let histograms = Some(log).filter(|log| !log.is_empty());
        // Without histograms, percentiles of several intervals cannot be made: every interval
        // is a point, as the time series has it.
        let bucket_ms = match &histograms {
            Some(_) => bucket_ms(summary.run.duration_ms, interval_ms, MAX_POINTS),
            None => interval_ms,
        };
        let series_path = dir.join("timeseries.jsonl");
        let series = match cache.timeseries.take() {
            Some(read) if read.bucket_ms == bucket_ms && &read.kept == kept && read.lines.still_holds(&series_path) => {
                read
            }
            _ => TimeSeriesRead {
                lines: LinesRead::default(),
                bucket_ms,
                kept: kept.clone(),
                all: Vec::new(),
                rows: BTreeMap::new(),
            },
        };
        let series = series.read_on(&series_path);
        let mut results =
            RunResults { summary, histograms, bucket_ms, all: series.all.clone(), rows: series.rows.clone() };
        cache.timeseries = Some(series);
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
}

impl TimeSeriesRead {
    /// Reads the lines appended since the last reading into the points. A missing or
    /// unreadable time series leaves the charts over time empty; a line that does not parse
    /// (the last one of a killed run) is skipped; a last line without its end waits.
    fn read_on(mut self, path: &Path) -> TimeSeriesRead {
        for line in self.lines.next_lines(path).split(|b| *b == b'\n') {
            let Ok(sample) = serde_json::from_slice::<IntervalSample>(line) else { continue };
            let points = if sample.name == horde_metrics::ALL_REQUESTS {
                &mut self.all
            } else if self.kept.contains(&sample.name) {
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
        self
    }
}
