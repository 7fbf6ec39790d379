//! The results directory, written as the run goes, and the live progress line.

use crate::histogram_log::{HistogramLogWriter, HISTOGRAM_LOG};
use crate::locust::LocustExport;
use crate::percentile_distribution::{write_percentile_distributions, HGRM_DIR};
use crate::results_dir::{write_summary, ResultsError};
use crate::summary::{Environment, Summary};
use crate::timeseries::TimeSeriesWriter;
use horde_metrics::{RunStatus, Sink, SummaryOptions, Totals};
use horde_plan::Plan;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The sink the CLI uses: keeps summary.json current and prints progress to stderr.
pub struct ResultsSink {
    dir: PathBuf,
    /// The plan as the results show it: credentials redacted ([`Plan::redacted`]).
    plan: Plan,
    environment: Environment,
    progress_every: Duration,
    last_progress: Instant,
    last_progress_counts: (u64, u64),
    show_progress: bool,
    timeseries: Option<TimeSeriesWriter>,
    histogram_log: Option<HistogramLogWriter>,
    locust: Option<LocustExport>,
    /// `--metrics`: the live OpenMetrics text, brought up to date every interval.
    live: Option<crate::openmetrics::LiveMetrics>,
    /// `--dashboard`: told each time the directory holds more (an interval, the end).
    watch: Option<crate::results_watch::ResultsWatch>,
    /// Whether the run was warned of its many rows (once).
    warned_of_rows: bool,
    /// The first write error, reported at the end; the run itself goes on.
    pub write_error: Option<ResultsError>,
    pub final_summary: Option<Summary>,
}

impl ResultsSink {
    pub fn new(dir: PathBuf, plan: Plan, environment: Environment, show_progress: bool) -> ResultsSink {
        let mut write_error = None;
        let timeseries = match TimeSeriesWriter::create(&dir, &plan.options.percentiles) {
            Ok(writer) => Some(writer),
            Err(cause) => {
                write_error = Some(ResultsError::Write { path: dir.join("timeseries.csv"), cause });
                None
            }
        };
        let histogram_log = match HistogramLogWriter::create(&dir) {
            Ok(writer) => Some(writer),
            Err(cause) => {
                write_error.get_or_insert(ResultsError::Write { path: dir.join(HISTOGRAM_LOG), cause });
                None
            }
        };
        ResultsSink {
            dir,
            // Credentials never reach the results (summary.json, then report.html).
            plan: plan.redacted(),
            environment,
            progress_every: Duration::from_secs(5),
            last_progress: Instant::now(),
            last_progress_counts: (0, 0),
            show_progress,
            timeseries,
            histogram_log,
            locust: None,
            live: None,
            watch: None,
            warned_of_rows: false,
            write_error,
            final_summary: None,
        }
    }

    /// Publishes the run's metrics to `live` every interval (`--metrics`).
    pub fn publish_live_metrics(&mut self, live: crate::openmetrics::LiveMetrics) {
        self.live = Some(live);
    }

    /// Tells `watch` each time the directory holds more: every interval, and at the end once
    /// report.html is written (`--dashboard`).
    pub fn announce_to(&mut self, watch: crate::results_watch::ResultsWatch) {
        self.watch = Some(watch);
    }

    fn announce(&self) {
        if let Some(watch) = &self.watch {
            watch.written(&self.dir);
        }
    }

    /// Also writes Locust's CSV files (`--export locust:PREFIX`).
    pub fn with_locust(mut self, export: LocustExport) -> ResultsSink {
        self.locust = Some(export);
        self
    }

    /// Appends the intervals no worker will add to any more (all of them at the end).
    fn write_intervals(&mut self, totals: &mut Totals, finished: bool) {
        let interval_ms = self.plan.options.snapshot_interval_ms.max(1);
        let options = SummaryOptions {
            percentiles: self.plan.options.percentiles.clone(),
            response_time_bounds_ms: self.plan.options.response_time_bounds_ms,
        };
        // Only intervals every worker has handed in: a late worker's snapshot still belongs
        // to an interval not yet written.
        let last = if finished { None } else { Some(totals.complete_intervals) };
        let mut completed = totals.intervals.take_completed(last, interval_ms);
        if completed.is_empty() {
            return;
        }
        if finished {
            let run_end_ms = totals.elapsed.as_millis() as u64;
            for interval in &mut completed {
                interval.end_at(run_end_ms);
            }
        }
        let samples: Vec<_> = completed.iter().flat_map(|interval| interval.samples(&options)).collect();
        if let Some(writer) = &mut self.timeseries {
            if let Err(cause) = writer.write(&samples) {
                self.write_failed(ResultsError::Write { path: self.dir.join("timeseries.csv"), cause });
            }
        }
        if let Some(writer) = &mut self.histogram_log {
            if let Err(cause) = writer.write(&completed, totals) {
                self.write_failed(ResultsError::Write { path: self.dir.join(HISTOGRAM_LOG), cause });
            }
        }
        if let Some(locust) = &mut self.locust {
            if let Err(cause) = locust.write_intervals(&completed) {
                let path = crate::locust::file_path(locust.prefix(), "_stats_history.csv");
                self.write_failed(ResultsError::Write { path, cause });
            }
        }
    }

    /// The exports made once, from the run's totals: the .hgrm files and Locust's stats.
    fn write_final_exports(&mut self, totals: &Totals) {
        if let Err(cause) = write_percentile_distributions(&self.dir, totals) {
            self.write_failed(ResultsError::Write { path: self.dir.join(HGRM_DIR), cause });
        }
        if let Some(locust) = &mut self.locust {
            if let Err(cause) = locust.write_stats(totals, self.plan.options.snapshot_interval_ms.max(1)) {
                let path = crate::locust::file_path(locust.prefix(), "_stats.csv");
                self.write_failed(ResultsError::Write { path, cause });
            }
        }
    }

    fn write(&mut self, totals: &Totals, status: RunStatus) -> Summary {
        let summary = Summary::from_totals(totals, status, &self.plan, &self.environment);
        if let Err(err) = write_summary(&self.dir, &summary) {
            self.write_failed(err);
        }
        summary
    }

    /// Says so at once, the first time: the run goes on and its summary is still printed at
    /// the end, but the user should know now that the results directory is not keeping up.
    fn write_failed(&mut self, err: ResultsError) {
        if self.write_error.is_none() {
            let mut stderr = std::io::stderr().lock();
            let _ = writeln!(stderr, "horde: {err}; the run goes on, and its summary will be printed at the end");
            self.write_error = Some(err);
        }
    }

    /// Writes summary.json before anything runs, so that a results directory that cannot be
    /// written is found before the load, not after it.
    pub fn write_initial(&mut self, workers: usize) -> Result<(), ResultsError> {
        let totals = Totals::new(std::time::SystemTime::now(), workers);
        let summary = Summary::from_totals(&totals, RunStatus::Running, &self.plan, &self.environment);
        write_summary(&self.dir, &summary)?;
        self.announce();
        Ok(())
    }

    fn progress(&mut self, totals: &Totals) {
        let (ok, ko) = totals.request_counts();
        let seconds = self.last_progress.elapsed().as_secs_f64().max(1e-3);
        let (last_ok, last_ko) = self.last_progress_counts;
        let rate = (ok + ko - last_ok - last_ko) as f64 / seconds;
        self.last_progress = Instant::now();
        self.last_progress_counts = (ok, ko);
        // A SQL phase's statements can be few and long (one COPY per thread): its rows say more.
        let sql = match &totals.sql_progress {
            Some(p) if p.preparing => format!(" | {}: preparing (untimed)", crate::terminal::printable(&p.phase)),
            Some(p) => format!(" | {}: {} of {} rows", crate::terminal::printable(&p.phase), p.rows, p.expected),
            None => String::new(),
        };
        // A split run's shares that have gone quiet, or been given up, as it happens.
        let mut machines = String::new();
        for machine in &totals.machines {
            if machine.lost.is_some() {
                machines.push_str(&format!(" | share {} LOST", machine.share));
            } else if let Some(silent) = machine.silent_s {
                machines.push_str(&format!(" | share {} silent {silent:.0} s", machine.share));
            } else if !machine.replaced.is_empty() {
                machines.push_str(&format!(" | share {} replaced", machine.share));
            }
        }
        let mut stderr = std::io::stderr().lock();
        let _ = writeln!(
            stderr,
            "[{:>6.1}s] users {:>6} active | {:>10.1} req/s | OK {:>10} | KO {:>8}{sql}{machines}",
            totals.elapsed.as_secs_f64(),
            totals.users_active,
            rate,
            ok,
            ko
        );
    }

    /// Says once, as soon as the run has too many request rows, what they cost and what to do.
    fn warn_of_many_rows(&mut self, totals: &Totals) {
        if self.warned_of_rows {
            return;
        }
        if let Some(warning) = horde_metrics::many_rows_warning(totals.requests.len()) {
            self.warned_of_rows = true;
            let mut stderr = std::io::stderr().lock();
            let _ = writeln!(stderr, "horde: warning: {warning}");
        }
    }
}

impl Sink for ResultsSink {
    fn interval(&mut self, totals: &mut Totals) {
        if let Some(live) = &self.live {
            live.publish(totals);
        }
        self.warn_of_many_rows(totals);
        self.write_intervals(totals, false);
        self.write(totals, RunStatus::Running);
        self.announce();
        if self.show_progress && self.last_progress.elapsed() >= self.progress_every {
            self.progress(totals);
        }
    }

    fn finish(&mut self, totals: &mut Totals, status: RunStatus) {
        if let Some(live) = &self.live {
            live.publish(totals);
        }
        self.warn_of_many_rows(totals);
        self.write_intervals(totals, true);
        self.write_final_exports(totals);
        let summary = self.write(totals, status);
        self.final_summary = Some(summary);
        // Rendered from the files just written, as `horde report DIR --html` would.
        if let Err(err) = crate::html::write_html(&self.dir) {
            self.write_failed(err);
        }
        self.announce();
    }
}
