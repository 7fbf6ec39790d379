//! Finding and reading the runs of each side: results directories, directories of them, and
//! patterns (`results/base-*`) that horde expands itself, so a quoted pattern works anywhere.

use super::samples::{append, run_series};
use super::within_run::{batch_series, parse_interval_log, SteadyWindow};
use super::SideSamples;
use crate::{read_summary, Summary};
use horde_metrics::IntervalSample;
use horde_plan::input::read_text_bounded;
use std::path::{Path, PathBuf};

/// The time series and histogram log of a long run are larger than a plan: read up to this.
const MAX_RESULTS_FILE_BYTES: u64 = 1 << 30;

/// Input `horde compare` cannot use: a path with no runs, a file that is not a summary. The
/// message names the path and the problem.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CompareInputError(pub String);

/// One results directory and its summary.
#[derive(Debug, Clone)]
pub struct LoadedRun {
    pub dir: PathBuf,
    pub summary: Summary,
}

/// The runs of one side, in the order given (each pattern's matches sorted).
#[derive(Debug, Clone)]
pub struct LoadedSide {
    pub label: String,
    pub runs: Vec<LoadedRun>,
}

impl LoadedSide {
    /// One value per run for every row and metric.
    pub fn samples(&self) -> SideSamples {
        let mut series = Vec::new();
        for run in &self.runs {
            append(&mut series, run_series(&run.summary));
        }
        SideSamples { label: self.label.clone(), runs: self.run_names(), series }
    }

    fn run_names(&self) -> Vec<String> {
        self.runs.iter().map(|r| r.dir.display().to_string()).collect()
    }
}

/// Reads the runs that `specs` name: each is a results directory (or its summary.json), a
/// directory whose subdirectories are results directories (what `horde run --trials` and
/// `--results` make), or a glob pattern of either.
pub fn load_side(label: &str, specs: &[String]) -> Result<LoadedSide, CompareInputError> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for spec in specs {
        for dir in expand(spec)? {
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
    }
    let runs = dirs
        .into_iter()
        .map(|dir| {
            let summary = read_summary(&dir).map_err(|e| CompareInputError(e.to_string()))?;
            Ok(LoadedRun { dir, summary })
        })
        .collect::<Result<Vec<_>, CompareInputError>>()?;
    if runs.is_empty() {
        return Err(CompareInputError(format!("{label}: no results directories given")));
    }
    Ok(LoadedSide { label: label.to_string(), runs })
}

fn expand(spec: &str) -> Result<Vec<PathBuf>, CompareInputError> {
    if spec.contains(['*', '?', '[']) {
        let paths = glob::glob(spec).map_err(|e| CompareInputError(format!("{spec:?} is not a valid pattern: {e}")))?;
        let mut dirs = Vec::new();
        for path in paths.flatten() {
            // A pattern may also match unrelated files (a compare.json): only runs count.
            if let Ok(found) = runs_in(&path) {
                dirs.extend(found);
            }
        }
        if dirs.is_empty() {
            return Err(CompareInputError(format!("{spec:?} matches no results directory (none with a summary.json)")));
        }
        return Ok(dirs);
    }
    runs_in(Path::new(spec))
}

/// The results directories `path` stands for.
fn runs_in(path: &Path) -> Result<Vec<PathBuf>, CompareInputError> {
    if path.is_file() {
        if path.file_name().is_some_and(|n| n == "summary.json") {
            return Ok(vec![path.parent().map(Path::to_path_buf).unwrap_or_default()]);
        }
        return Err(CompareInputError(format!(
            "{}: expected a results directory (or its summary.json), not this file",
            path.display()
        )));
    }
    if !path.is_dir() {
        return Err(CompareInputError(format!("{}: no such results directory", path.display())));
    }
    if path.join("summary.json").is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let entries =
        std::fs::read_dir(path).map_err(|e| CompareInputError(format!("cannot read {}: {e}", path.display())))?;
    let mut runs: Vec<PathBuf> =
        entries.flatten().map(|e| e.path()).filter(|p| p.join("summary.json").is_file()).collect();
    runs.sort();
    if runs.is_empty() {
        return Err(CompareInputError(format!(
            "{}: holds no summary.json, nor results directories that do",
            path.display()
        )));
    }
    Ok(runs)
}

/// Batch means of a side's single run: timeseries.jsonl and, for percentiles, histograms.hlog.
pub(super) fn within_run_samples(side: &LoadedSide) -> Result<(SideSamples, SteadyWindow), CompareInputError> {
    let run = &side.runs[0];
    let problem = |message: String| CompareInputError(format!("{}: {message}", run.dir.display()));
    let timeseries_path = run.dir.join("timeseries.jsonl");
    let text = read_text_bounded(&timeseries_path, MAX_RESULTS_FILE_BYTES)
        .map_err(|e| problem(format!("one run a side needs its time series for batch means: {e}")))?;
    let timeseries = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .enumerate()
        .map(|(number, line)| {
            serde_json::from_str::<IntervalSample>(line)
                .map_err(|e| problem(format!("timeseries.jsonl line {}: {e}", number + 1)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let hlog_path = run.dir.join("histograms.hlog");
    let histograms = match read_text_bounded(&hlog_path, MAX_RESULTS_FILE_BYTES) {
        Ok(text) => Ok(parse_interval_log(&text, &run.summary).map_err(|e| problem(format!("histograms.hlog: {e}")))?),
        Err(_) if !hlog_path.exists() => Err("no histograms.hlog in the results directory".to_string()),
        Err(e) => return Err(problem(format!("histograms.hlog: {e}"))),
    };
    let (series, window) = batch_series(&run.summary, &timeseries, histograms.as_deref().map_err(String::as_str))
        .map_err(|e| problem(format!("one run a side, but no batch means: {e}")))?;
    Ok((SideSamples { label: side.label.clone(), runs: side.run_names(), series }, window))
}
