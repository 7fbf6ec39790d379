//! `--export locust:PREFIX`: the CSV files Locust's `--csv PREFIX` writes, with its exact
//! headers and column order (locust/stats.py, `StatsCSV` and `StatsCSVFileWriter`, Locust 2.44
//! and later), so that dashboards and scripts built for Locust read horde's runs:
//! `PREFIX_stats.csv` (one row per request, sorted by name and method as Locust sorts, then
//! `Aggregated`), `PREFIX_stats_history.csv` (the `Aggregated` row appended every interval, as
//! Locust does without `--csv-full-history`), `PREFIX_failures.csv` (its `First Seen` and
//! `Last Seen` to the snapshot interval) and `PREFIX_exceptions.csv` (horde runs no user code
//! that raises: its header only).
//!
//! Times are milliseconds, as Locust's: averages, minimums and maximums as decimals, the
//! median and percentiles as whole milliseconds. Latency is horde's corrected latency.

use crate::summary::rfc3339;
use crate::timeseries::csv_field;
use horde_metrics::{CompletedInterval, Recorder, Totals};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Locust's PERCENTILES_TO_REPORT.
const PERCENTILES: [f64; 11] = [0.50, 0.66, 0.75, 0.80, 0.90, 0.95, 0.98, 0.99, 0.999, 0.9999, 1.0];
const PERCENTILE_LABELS: [&str; 11] =
    ["50%", "66%", "75%", "80%", "90%", "95%", "98%", "99%", "99.9%", "99.99%", "100%"];
const STATS_COLUMNS: [&str; 11] = [
    "Type",
    "Name",
    "Request Count",
    "Failure Count",
    "Median Response Time",
    "Average Response Time",
    "Min Response Time",
    "Max Response Time",
    "Average Content Size",
    "Requests/s",
    "Failures/s",
];
const HISTORY_LEADING_COLUMNS: [&str; 6] = ["Timestamp", "User Count", "Type", "Name", "Requests/s", "Failures/s"];
const HISTORY_TRAILING_COLUMNS: [&str; 7] = [
    "Total Request Count",
    "Total Failure Count",
    "Total Median Response Time",
    "Total Average Response Time",
    "Total Min Response Time",
    "Total Max Response Time",
    "Total Average Content Size",
];
const FAILURES_COLUMNS: [&str; 6] = ["Method", "Name", "Error", "Occurrences", "First Seen", "Last Seen"];
const EXCEPTIONS_COLUMNS: [&str; 4] = ["Count", "Message", "Traceback", "Nodes"];
/// Locust's name of the row of all requests.
const AGGREGATED: &str = "Aggregated";

/// Writes the Locust files of one run.
pub struct LocustExport {
    prefix: PathBuf,
    history: BufWriter<File>,
    /// All requests so far, merged from completed intervals: the history's totals.
    cumulative: Recorder,
    /// The Type column (Locust's method) of each request row that has one.
    methods: HashMap<String, String>,
}

impl LocustExport {
    /// Creates the four files with their headers, as Locust does when it starts, so that an
    /// unwritable prefix is found before the run. `methods` maps request rows to their HTTP
    /// method (Locust's Type column).
    pub fn create(prefix: &Path, methods: HashMap<String, String>) -> std::io::Result<LocustExport> {
        let mut exporter = LocustExport {
            history: BufWriter::new(File::create(file_path(prefix, "_stats_history.csv"))?),
            prefix: prefix.to_path_buf(),
            cumulative: Recorder::default(),
            methods,
        };
        let mut history_columns: Vec<&str> = HISTORY_LEADING_COLUMNS.to_vec();
        history_columns.extend(PERCENTILE_LABELS);
        history_columns.extend(HISTORY_TRAILING_COLUMNS);
        write_line(&mut exporter.history, &history_columns)?;
        exporter.history.flush()?;
        // No errors yet: the interval's length is not read.
        exporter.write_stats(&Totals::new(std::time::SystemTime::now(), 1), 1000)?;
        Ok(exporter)
    }

    /// Where the files go, for messages.
    pub fn prefix(&self) -> &Path {
        &self.prefix
    }

    /// Appends an `Aggregated` history row per completed interval, stamped with its end.
    pub fn write_intervals(&mut self, intervals: &[CompletedInterval]) -> std::io::Result<()> {
        for interval in intervals {
            self.cumulative.merge(&interval.all);
            let seconds = interval.duration_ms.max(1) as f64 / 1000.0;
            let end_s = (interval.epoch_ms + interval.duration_ms) / 1000;
            let mut fields = vec![
                end_s.to_string(),
                interval.users_active.to_string(),
                String::new(),
                AGGREGATED.to_string(),
                format!("{:.6}", interval.all.count() as f64 / seconds),
                format!("{:.6}", failures(&interval.all) as f64 / seconds),
            ];
            fields.extend(percentile_fields(&self.cumulative));
            let figures = Figures::of(&self.cumulative);
            fields.extend([
                self.cumulative.count().to_string(),
                failures(&self.cumulative).to_string(),
                figures.median,
                figures.average,
                figures.min,
                figures.max,
                figures.content_size,
            ]);
            write_line(&mut self.history, &fields)?;
        }
        self.history.flush()
    }

    /// Rewrites the stats, failures and exceptions files from the run's totals, whose
    /// snapshot intervals last `interval_ms`.
    pub fn write_stats(&mut self, totals: &Totals, interval_ms: u64) -> std::io::Result<()> {
        let measured = totals.measured().as_secs_f64();
        let mut rows: Vec<(&str, &str, &Recorder)> = totals
            .requests
            .iter()
            .map(|(name, recorder)| (self.methods.get(&**name).map_or("", String::as_str), &**name, recorder))
            .collect();
        // Locust sorts its entries by (name, method).
        rows.sort_by(|a, b| (a.1, a.0).cmp(&(b.1, b.0)));
        let global = totals.global();
        let mut stats = BufWriter::new(File::create(file_path(&self.prefix, "_stats.csv"))?);
        let mut columns: Vec<&str> = STATS_COLUMNS.to_vec();
        columns.extend(PERCENTILE_LABELS);
        write_line(&mut stats, &columns)?;
        for (method, name, recorder) in rows.into_iter().chain([("", AGGREGATED, &global)]) {
            let figures = Figures::of(recorder);
            let per_second = |n: u64| if measured > 0.0 { python_float(n as f64 / measured) } else { "0.0".into() };
            let mut fields = vec![
                method.to_string(),
                name.to_string(),
                recorder.count().to_string(),
                failures(recorder).to_string(),
                figures.median,
                figures.average,
                figures.min,
                figures.max,
                figures.content_size,
                per_second(recorder.count()),
                per_second(failures(recorder)),
            ];
            fields.extend(percentile_fields(recorder));
            write_line(&mut stats, &fields)?;
        }
        stats.flush()?;

        let mut errors: Vec<_> = totals.errors.iter().collect();
        errors.sort_by(|a, b| (&*a.0.request, &*a.0.kind, a.0.detail).cmp(&(&*b.0.request, &*b.0.kind, b.0.detail)));
        let mut failures_file = BufWriter::new(File::create(file_path(&self.prefix, "_failures.csv"))?);
        write_line(&mut failures_file, &FAILURES_COLUMNS)?;
        // horde knows the snapshot intervals an error was counted in, not its instants: First
        // Seen is the start of the first, Last Seen the end of the last (or of the run), so
        // the two bracket every occurrence. Locust writes whole seconds, rounded down.
        let started_ms = totals.intervals.run_started_epoch_ms;
        let ended_ms = started_ms + totals.elapsed.as_millis() as u64;
        for (key, record) in errors {
            let method = self.methods.get(&*key.request).map_or("", String::as_str);
            let error = format!("{}: {}", key.kind, record.message);
            let first_ms = started_ms + record.first_interval.saturating_sub(1) * interval_ms;
            let last_ms = (started_ms + record.last_interval * interval_ms).min(ended_ms).max(first_ms);
            let (first, last) = (utc_seconds(first_ms), utc_seconds(last_ms));
            let fields = [method, &*key.request, &error, &record.count.to_string(), &first, &last];
            write_line(&mut failures_file, &fields)?;
        }
        failures_file.flush()?;

        let mut exceptions = BufWriter::new(File::create(file_path(&self.prefix, "_exceptions.csv"))?);
        write_line(&mut exceptions, &EXCEPTIONS_COLUMNS)?;
        exceptions.flush()
    }
}

/// `PREFIX` + suffix, as Locust builds its file names (a prefix `out/run` gives
/// `out/run_stats.csv`).
pub fn file_path(prefix: &Path, suffix: &str) -> PathBuf {
    let mut name = prefix.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Locust's failures: KO requests, sent or not.
fn failures(recorder: &Recorder) -> u64 {
    recorder.ko.len() + recorder.unsent
}

/// The figures Locust computes per entry, formatted as it writes them.
struct Figures {
    median: String,
    average: String,
    min: String,
    max: String,
    content_size: String,
}

impl Figures {
    fn of(recorder: &Recorder) -> Figures {
        let latency = recorder.corrected();
        let ms = |us: f64| us / 1000.0;
        if latency.is_empty() {
            return Figures {
                median: "0".into(),
                average: "0.0".into(),
                min: "0".into(),
                max: "0".into(),
                content_size: "0.0".into(),
            };
        }
        let count = recorder.count().max(1) as f64;
        Figures {
            median: whole_ms(latency.value_at_quantile(0.5)),
            average: python_float(ms(latency.mean())),
            min: python_float(ms(latency.min() as f64)),
            max: python_float(ms(latency.max() as f64)),
            content_size: python_float(recorder.bytes_received as f64 / count),
        }
    }
}

/// Locust's percentile columns: whole milliseconds, or `N/A` for an entry without requests.
fn percentile_fields(recorder: &Recorder) -> Vec<String> {
    let latency = recorder.corrected();
    PERCENTILES
        .iter()
        .map(|q| if latency.is_empty() { "N/A".to_string() } else { whole_ms(latency.value_at_quantile(*q)) })
        .collect()
}

/// Locust's `format_utc_timestamp`: `2026-11-21T05:21:01Z`.
fn utc_seconds(unix_ms: u64) -> String {
    let text = rfc3339(unix_ms / 1000 * 1000);
    format!("{}Z", &text[..19])
}

fn whole_ms(us: u64) -> String {
    ((us as f64 / 1000.0).round() as u64).to_string()
}

/// A float as Python's `repr` writes it (what Locust's csv module writes): always with a
/// decimal point, shortest digits otherwise.
fn python_float(value: f64) -> String {
    let text = format!("{value}");
    if text.contains(['.', 'e', 'E']) || !value.is_finite() {
        text
    } else {
        text + ".0"
    }
}

fn write_line<W: Write, S: AsRef<str>>(out: &mut W, fields: &[S]) -> std::io::Result<()> {
    let line: Vec<String> = fields.iter().map(|f| csv_field(f.as_ref())).collect();
    // Python's csv module ends lines with \r\n.
    out.write_all(line.join(",").as_bytes())?;
    out.write_all(b"\r\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use horde_metrics::{RequestTiming, Snapshot};

    #[test]
    fn floats_read_as_python_writes_them() {
        assert_eq!(python_float(1024.0), "1024.0");
        assert_eq!(python_float(12.5), "12.5");
        assert_eq!(file_path(Path::new("out/run"), "_stats.csv"), PathBuf::from("out/run_stats.csv"));
    }

    #[test]
    fn stats_have_locusts_header_rows_and_aggregate() {
        let dir = std::env::temp_dir().join(format!("horde-locust-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let prefix = dir.join("run");
        let methods = HashMap::from([("home".to_string(), "GET".to_string())]);
        let mut export = LocustExport::create(&prefix, methods).unwrap();
        let mut totals = Totals::new(std::time::SystemTime::now(), 1);
        let mut recorder = Recorder::default();
        for i in 0..10u64 {
            let timing =
                RequestTiming { latency_us: 2000 + i, uncorrected_us: 2000, bytes_received: 100, ..Default::default() };
            recorder.record(&timing, i != 0);
        }
        totals.absorb(Snapshot { interval: 1, requests: vec![("home".into(), recorder)], ..Default::default() });
        totals.elapsed = std::time::Duration::from_secs(2);
        export.write_intervals(&totals.intervals.take_completed(None, 1000)).unwrap();
        export.write_stats(&totals, 1000).unwrap();
        let stats = std::fs::read_to_string(file_path(&prefix, "_stats.csv")).unwrap();
        let lines: Vec<&str> = stats.lines().collect();
        assert_eq!(
            lines[0],
            "Type,Name,Request Count,Failure Count,Median Response Time,Average Response Time,Min Response Time,\
             Max Response Time,Average Content Size,Requests/s,Failures/s,50%,66%,75%,80%,90%,95%,98%,99%,99.9%,99.99%,100%"
        );
        assert!(lines[1].starts_with("GET,home,10,1,2,2.0045,2.0,2.009,100.0,5.0,0.5,2,"), "{}", lines[1]);
        assert!(lines[2].starts_with(",Aggregated,10,1,"), "{}", lines[2]);
        let history = std::fs::read_to_string(file_path(&prefix, "_stats_history.csv")).unwrap();
        let row: Vec<&str> = history.lines().nth(1).unwrap().split(',').collect();
        assert_eq!((row[3], row[4], row[17], row[18]), ("Aggregated", "10.000000", "10", "1"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// An error counted in the 2nd and the 4th one-second interval of a run that lasted 3.5 s:
    /// first seen at the 2nd's start, last seen at the run's end (before the 4th's).
    #[test]
    fn failures_are_seen_from_their_first_to_their_last_interval() {
        let dir = std::env::temp_dir().join(format!("horde-locust-seen-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let prefix = dir.join("run");
        let mut export = LocustExport::create(&prefix, HashMap::new()).unwrap();
        let started = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_795_238_461_000);
        let mut totals = Totals::new(started, 1);
        for interval in [4, 2] {
            let key = horde_metrics::ErrorKey { kind: "check_failed".into(), request: "pay, now".into(), detail: 0 };
            let record = horde_metrics::ErrorRecord { message: "status 500".into(), count: 1, ..Default::default() };
            let snapshot = Snapshot { interval, errors: HashMap::from([(key, record)]), ..Default::default() };
            totals.absorb(snapshot);
        }
        totals.elapsed = std::time::Duration::from_millis(3500);
        export.write_stats(&totals, 1000).unwrap();
        let failures = std::fs::read_to_string(file_path(&prefix, "_failures.csv")).unwrap();
        let lines: Vec<&str> = failures.lines().collect();
        assert_eq!(lines[0], "Method,Name,Error,Occurrences,First Seen,Last Seen");
        assert_eq!(lines[1], ",\"pay, now\",check_failed: status 500,2,2026-11-21T05:21:02Z,2026-11-21T05:21:04Z");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
