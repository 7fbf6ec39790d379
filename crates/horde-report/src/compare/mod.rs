//! `horde compare`: did B change the system's latency, throughput or errors against A?
//!
//! The sample unit is the run: each run gives one value per request row and metric, because
//! the requests of one run are autocorrelated (a slow second slows every request in it), and a
//! test that treated millions of them as independent would call noise significant. Two sets
//! of runs are compared with the Mann-Whitney U test on log values, the change is the
//! Hodges-Lehmann ratio B/A with Moses' interval, p-values are adjusted by Benjamini-Hochberg
//! over every row and metric, and a change is reported only when it is significant and its
//! whole interval lies beyond the tolerance (criterion.rs's rule). With one run a side, batch
//! means within each run stand in, clearly labelled ([`Method::WithinRun`]). docs/compare.md
//! explains the choices; [`stats`] holds the arithmetic.
//!
//! ```no_run
//! use horde_report::compare::{self, CompareOptions};
//! let a = compare::load_side("A", &["results/base-*".to_string()]).unwrap();
//! let b = compare::load_side("B", &["results/new-*".to_string()]).unwrap();
//! let report = compare::compare_sides(&a, &b, &CompareOptions::default()).unwrap();
//! print!("{}", compare::render(&report));
//! ```

mod load;
mod plan_diff;
pub(crate) mod render;
mod samples;
pub mod stats;
mod within_run;

pub use load::{load_side, CompareInputError, LoadedRun, LoadedSide};
pub use plan_diff::plan_differences;
pub use render::render;
pub use samples::{run_series, Series};
pub use within_run::{batch_series, parse_interval_log, HistogramInterval, SteadyWindow};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use stats::{benjamini_hochberg, classify, hodges_lehmann, mann_whitney, median, smallest_p, welch, RankMethod, Shift};

/// Bumped when a field of compare.json changes meaning or disappears.
pub const COMPARE_VERSION: u32 = 1;

/// Below this many runs a side, say that the U test cannot reach significance (benchstat says
/// the same: 4 + 4 runs are the fewest whose smallest p, 0.029, is under 0.05).
pub const FEW_RUNS: usize = 4;

/// What is compared, for every request row and all requests together.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Median latency (corrected, OK and KO requests), microseconds.
    P50,
    /// 99th percentile latency, microseconds.
    P99,
    /// Mean latency, microseconds.
    Mean,
    /// Requests (with an outcome) per second of measured time.
    Rps,
    /// KO requests as a percentage of requests.
    Errors,
}

impl Metric {
    pub const ALL: [Metric; 5] = [Metric::P50, Metric::P99, Metric::Mean, Metric::Rps, Metric::Errors];

    pub fn label(self) -> &'static str {
        match self {
            Metric::P50 => "p50",
            Metric::P99 => "p99",
            Metric::Mean => "mean",
            Metric::Rps => "rps",
            Metric::Errors => "errors",
        }
    }

    /// Errors are compared as a difference of percentages (a rate going from 0 has no ratio);
    /// every other metric as a ratio, on log values.
    fn change_kind(self) -> ChangeKind {
        match self {
            Metric::Errors => ChangeKind::Difference,
            _ => ChangeKind::Ratio,
        }
    }

    fn verdict(self, shift: Shift) -> Verdict {
        match (self, shift) {
            (_, Shift::Within) => Verdict::Same,
            (Metric::Rps, Shift::Up) | (Metric::Errors, Shift::Down) => Verdict::Better,
            (Metric::Rps, Shift::Down) | (Metric::Errors, Shift::Up) => Verdict::Worse,
            (_, Shift::Up) => Verdict::Slower,
            (_, Shift::Down) => Verdict::Faster,
        }
    }
}

/// How the samples were made.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// One value per run: Mann-Whitney U, Hodges-Lehmann and Moses.
    Runs,
    /// One run a side: batch means over each run's steady window, Welch's t-test. Batches of
    /// one run share its conditions (the machine, the server's state), so this says less than
    /// a comparison of runs.
    WithinRun,
}

/// How large a change must be (its whole confidence interval beyond it) to count.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// p50, p99 and mean: relative change, percent.
    pub latency_percent: f64,
    /// rps: relative change, percent.
    pub throughput_percent: f64,
    /// errors: difference of error rates, percentage points.
    pub errors_points: f64,
}

impl Default for Tolerance {
    fn default() -> Self {
        Tolerance { latency_percent: 5.0, throughput_percent: 2.0, errors_points: 0.0 }
    }
}

impl Tolerance {
    /// Reads `latency=5%,throughput=2%,errors=0.5%` (any subset; the rest keep their
    /// defaults). The errors' value is in percentage points.
    pub fn parse(text: &str) -> Result<Tolerance, String> {
        let mut tolerance = Tolerance::default();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((name, value)) = part.split_once('=') else {
                return Err(format!("{part:?}: expected NAME=PERCENT, e.g. latency=5%"));
            };
            let number = value.trim().strip_suffix('%').unwrap_or(value.trim());
            let percent: f64 = match number.parse() {
                Ok(v) if f64::is_finite(v) && v >= 0.0 => v,
                _ => return Err(format!("{part:?}: {value:?} is not a percentage (e.g. 5%)")),
            };
            match name.trim() {
                "latency" => tolerance.latency_percent = percent,
                "throughput" | "rps" => tolerance.throughput_percent = percent,
                "errors" => tolerance.errors_points = percent,
                other => {
                    return Err(format!("{other:?} is not a tolerance: latency, throughput or errors"));
                }
            }
        }
        Ok(tolerance)
    }

    /// The tolerance of a metric on its change's scale: a relative change for ratios,
    /// percentage points for errors.
    fn of(&self, metric: Metric) -> f64 {
        match metric {
            Metric::P50 | Metric::P99 | Metric::Mean => self.latency_percent / 100.0,
            Metric::Rps => self.throughput_percent / 100.0,
            Metric::Errors => self.errors_points,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompareOptions {
    /// Significance level of each comparison after Benjamini-Hochberg, and 1 - the
    /// confidence of the intervals.
    pub alpha: f64,
    pub tolerance: Tolerance,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions { alpha: 0.05, tolerance: Tolerance::default() }
    }
}

/// The values of one side, ready to compare: a series per row and metric.
#[derive(Debug, Clone, PartialEq)]
pub struct SideSamples {
    /// `A` or `B` (or the names `--names` gave), and what it was made from (results
    /// directories).
    pub label: String,
    pub runs: Vec<String>,
    pub series: Vec<Series>,
}

/// `horde compare`'s result: what compare.json holds and the console and HTML pages render.
/// Its JSON Schema is docs/compare.schema.json.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct CompareReport {
    pub compare_version: u32,
    pub method: Method,
    pub alpha: f64,
    pub tolerance: Tolerance,
    /// The base.
    pub a: SideInfo,
    /// What is compared against the base.
    pub b: SideInfo,
    /// Where the plans differ (origins of URLs, names and base directories aside); empty when
    /// they are the same. Compared anyway only when asked (`--force`) or when two plans were
    /// given to `horde run --trials`.
    pub plan_differences: Vec<String>,
    /// What the reader must know: too few runs to reach significance, the within-run
    /// fallback, runs that did not complete.
    pub warnings: Vec<String>,
    /// All requests first (`scope` global), then each request row, then each group; for
    /// each, every metric.
    pub comparisons: Vec<Comparison>,
    /// Some comparison is `slower` or `worse`: `horde compare` exits 99.
    pub regression: bool,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct SideInfo {
    /// `A` and `B`, or the names `--names` gave them.
    pub label: String,
    /// The results directories of this side, in the order given.
    pub runs: Vec<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// All requests together (the summary's `global`).
    Global,
    /// One request row (the summary's `requests[]`), by name.
    Request,
    /// One group (the summary's `groups[]`), by name: the duration of each pass through it
    /// stands for latency, passes per second for rps, failed passes for errors.
    Group,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct Comparison {
    pub scope: Scope,
    /// The request row's or group's name; `Global` for all requests.
    pub name: String,
    pub metric: Metric,
    /// `us` (latency), `rps`, or `percent` (errors).
    pub unit: String,
    pub a: SampleStats,
    pub b: SampleStats,
    /// Absent when a side has no value (the row is missing from its runs).
    pub change: Option<Change>,
    pub verdict: Verdict,
    /// Facts about this comparison: `only in B`, `errors appeared (none in A)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One side's values of a metric: one per run (or per batch within the run).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct SampleStats {
    pub values: Vec<f64>,
    pub median: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

impl SampleStats {
    fn of(values: &[f64]) -> SampleStats {
        let min = values.iter().copied().reduce(f64::min);
        let max = values.iter().copied().reduce(f64::max);
        SampleStats { values: values.to_vec(), median: median(values), min, max }
    }
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// `estimate`, `low` and `high` are ratios B/A (1.2 = 20 % more).
    Ratio,
    /// `estimate`, `low` and `high` are differences B - A, in percentage points.
    Difference,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Test {
    /// Mann-Whitney U, exact permutation distribution (ties included).
    MannWhitneyExact,
    /// Mann-Whitney U, normal approximation with tie and continuity corrections.
    MannWhitneyNormal,
    /// Welch's t-test on batch means (one run a side).
    Welch,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct Change {
    pub kind: ChangeKind,
    /// Hodges-Lehmann (runs) or the difference of means (within a run).
    pub estimate: f64,
    /// The confidence interval; absent when the samples are too small to bound it.
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// The interval's coverage (at least 1 - alpha; the exact one is discrete).
    pub confidence: f64,
    pub test: Test,
    /// The test's two-sided p-value.
    pub p: f64,
    /// p adjusted by Benjamini-Hochberg over every comparison of the report: significant
    /// when at most alpha.
    pub q: f64,
    /// Values compared on each side (runs, or batches).
    pub n_a: usize,
    pub n_b: usize,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Latency went down beyond the tolerance.
    #[serde(rename = "faster")]
    Faster,
    /// Latency went up beyond the tolerance: a regression.
    #[serde(rename = "slower")]
    Slower,
    /// More throughput, or fewer errors, beyond the tolerance.
    #[serde(rename = "better")]
    Better,
    /// Less throughput, or more errors, beyond the tolerance: a regression.
    #[serde(rename = "worse")]
    Worse,
    /// No change shown: not significant, or not beyond the tolerance.
    #[serde(rename = "~")]
    Same,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::Same => "~",
        }
    }

    pub fn is_regression(self) -> bool {
        matches!(self, Verdict::Slower | Verdict::Worse)
    }
}

impl CompareReport {
    pub fn json_schema() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(CompareReport)).expect("schema serializes")
    }
}

/// Compares two sides' samples. Pure: the caller loaded them ([`load_side`], [`run_series`],
/// [`batch_series`]) and decided the method.
pub fn compare(a: &SideSamples, b: &SideSamples, method: Method, options: &CompareOptions) -> CompareReport {
    let mut comparisons = Vec::new();
    let mut p_values = Vec::new();
    for row in pair_series(a, b) {
        let comparison = compare_one(row, [&a.label, &b.label], method, options.alpha);
        if let Some(change) = &comparison.change {
            p_values.push((comparisons.len(), change.p));
        }
        comparisons.push(comparison);
    }
    let q_values = benjamini_hochberg(&p_values.iter().map(|(_, p)| *p).collect::<Vec<_>>());
    for ((index, _), q) in p_values.iter().zip(q_values) {
        let comparison = &mut comparisons[*index];
        let metric = comparison.metric;
        let change = comparison.change.as_mut().expect("compared");
        change.q = q;
        let relative = |v: f64| match change.kind {
            ChangeKind::Ratio => v - 1.0,
            ChangeKind::Difference => v,
        };
        let shift = classify(
            q <= options.alpha,
            change.low.map(relative),
            change.high.map(relative),
            options.tolerance.of(metric),
        );
        comparison.verdict = metric.verdict(shift);
    }
    let mut warnings = Vec::new();
    match method {
        Method::Runs => {
            let (runs_a, runs_b) = (a.runs.len(), b.runs.len());
            if runs_a.min(runs_b) < FEW_RUNS {
                let p = smallest_p(runs_a, runs_b);
                warnings.push(format!(
                    "fewer than {FEW_RUNS} runs a side ({runs_a} + {runs_b}): the smallest p-value these can reach \
                     is {p:.3}{}; run more (horde run --trials N)",
                    if p > options.alpha {
                        format!(", above alpha {}: no change can be called significant", options.alpha)
                    } else {
                        String::new()
                    }
                ));
            }
        }
        Method::WithinRun => warnings.push(
            "one run a side: WITHIN-RUN comparison of batch means over each run's steady window (Welch's t-test); \
             batches of one run share its conditions, so a verdict here is weaker than one over runs: \
             compare several runs a side for a sound one (horde run --trials N)"
                .to_string(),
        ),
    }
    let regression = comparisons.iter().any(|c| c.verdict.is_regression());
    CompareReport {
        compare_version: COMPARE_VERSION,
        method,
        alpha: options.alpha,
        tolerance: options.tolerance,
        a: SideInfo { label: a.label.clone(), runs: a.runs.clone() },
        b: SideInfo { label: b.label.clone(), runs: b.runs.clone() },
        plan_differences: Vec::new(),
        warnings,
        comparisons,
        regression,
    }
}

/// The series of both sides paired by row and metric: all requests first, then request rows
/// in A's order and those only B has, then groups in the same way.
type Paired<'a> = (Scope, &'a str, Metric, Vec<f64>, Vec<f64>);

fn pair_series<'a>(a: &'a SideSamples, b: &'a SideSamples) -> Vec<Paired<'a>> {
    let mut keys: Vec<(Scope, &str, Metric)> = Vec::new();
    for series in a.series.iter().chain(&b.series) {
        let key = (series.scope, series.name.as_str(), series.metric);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    // All requests first, then request rows, then groups, each in order of first
    // appearance; metrics in their order.
    let mut rows: Vec<(Scope, &str)> = Vec::new();
    for (scope, name, _) in &keys {
        if !rows.contains(&(*scope, *name)) {
            rows.push((*scope, *name));
        }
    }
    let scope_order = |scope: Scope| match scope {
        Scope::Global => 0,
        Scope::Request => 1,
        Scope::Group => 2,
    };
    keys.sort_by_key(|(scope, name, metric)| {
        let row = rows.iter().position(|r| *r == (*scope, *name));
        (scope_order(*scope), row, Metric::ALL.iter().position(|m| m == metric))
    });
    let values = |side: &SideSamples, key: &(Scope, &str, Metric)| {
        side.series
            .iter()
            .find(|s| (s.scope, s.name.as_str(), s.metric) == *key)
            .map(|s| s.values.clone())
            .unwrap_or_default()
    };
    keys.iter().map(|key| (key.0, key.1, key.2, values(a, key), values(b, key))).collect()
}

/// One row's metric compared; `labels` name the sides in its notes.
fn compare_one(row: Paired<'_>, labels: [&str; 2], method: Method, alpha: f64) -> Comparison {
    let (scope, name, metric, values_a, values_b) = row;
    let [label_a, label_b] = labels;
    let kind = metric.change_kind();
    // Ratios are taken on logs: keep positive values (a row with no requests has no latency).
    let usable = |values: &[f64]| -> Vec<f64> {
        values.iter().copied().filter(|v| v.is_finite() && (kind == ChangeKind::Difference || *v > 0.0)).collect()
    };
    let (usable_a, usable_b) = (usable(&values_a), usable(&values_b));
    let mut notes = Vec::new();
    match (usable_a.is_empty(), usable_b.is_empty()) {
        (true, false) => notes.push(format!("only in {label_b}")),
        (false, true) => notes.push(format!("only in {label_a}")),
        _ => {}
    }
    if metric == Metric::Errors && usable_a.iter().all(|v| *v == 0.0) && usable_b.iter().any(|v| *v > 0.0) {
        notes.push(format!("errors appeared (none in {label_a})"));
    }
    let transform = |values: &[f64]| -> Vec<f64> {
        match kind {
            ChangeKind::Ratio => values.iter().map(|v| v.ln()).collect(),
            ChangeKind::Difference => values.to_vec(),
        }
    };
    let back = |v: f64| match kind {
        ChangeKind::Ratio => v.exp(),
        ChangeKind::Difference => v,
    };
    let (log_a, log_b) = (transform(&usable_a), transform(&usable_b));
    let change = match method {
        Method::Runs => {
            mann_whitney(&log_a, &log_b).zip(hodges_lehmann(&log_a, &log_b, alpha)).map(|(test, shift)| Change {
                kind,
                estimate: back(shift.estimate),
                low: shift.low.map(back),
                high: shift.high.map(back),
                confidence: shift.confidence,
                test: match test.method {
                    RankMethod::Exact => Test::MannWhitneyExact,
                    RankMethod::Normal => Test::MannWhitneyNormal,
                },
                p: test.p,
                q: test.p,
                n_a: log_a.len(),
                n_b: log_b.len(),
            })
        }
        Method::WithinRun => welch(&log_a, &log_b, alpha).map(|test| Change {
            kind,
            estimate: back(test.difference),
            low: Some(back(test.low)),
            high: Some(back(test.high)),
            confidence: 1.0 - alpha,
            test: Test::Welch,
            p: test.p,
            q: test.p,
            n_a: log_a.len(),
            n_b: log_b.len(),
        }),
    };
    if change.is_none() && notes.is_empty() {
        notes.push("too few values to compare".to_string());
    }
    Comparison {
        scope,
        name: name.to_string(),
        metric,
        unit: match metric {
            Metric::Rps => "rps",
            Metric::Errors => "percent",
            _ => "us",
        }
        .to_string(),
        a: SampleStats::of(&values_a),
        b: SampleStats::of(&values_b),
        change,
        verdict: Verdict::Same,
        notes,
    }
}

/// Compares two loaded sides the way `horde compare` does: one value per run, or batch means
/// within the run when each side has exactly one. Plan differences are filled in; whether they
/// are allowed is the caller's decision.
pub fn compare_sides(
    a: &LoadedSide,
    b: &LoadedSide,
    options: &CompareOptions,
) -> Result<CompareReport, CompareInputError> {
    let plan_differences = plan_differences(&a.runs[0].summary.plan, &b.runs[0].summary.plan);
    let mut warnings = Vec::new();
    for run in a.runs.iter().chain(&b.runs) {
        if !matches!(run.summary.run.status.as_str(), "completed" | "limit_reached") {
            warnings.push(format!("{} ended with status {}", run.dir.display(), run.summary.run.status));
        }
    }
    let mut report = if a.runs.len() == 1 && b.runs.len() == 1 {
        let (side_a, window_a) = load::within_run_samples(a)?;
        let (side_b, window_b) = load::within_run_samples(b)?;
        let mut report = compare(&side_a, &side_b, Method::WithinRun, options);
        for (label, window) in [(&a.label, window_a), (&b.label, window_b)] {
            report.warnings.push(format!("{label}: {}", window.describe()));
        }
        report
    } else {
        compare(&a.samples(), &b.samples(), Method::Runs, options)
    };
    report.plan_differences = plan_differences;
    report.warnings.extend(warnings);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(label: &str, series: Vec<Series>, runs: usize) -> SideSamples {
        SideSamples { label: label.into(), runs: (0..runs).map(|i| format!("{label}{i}")).collect(), series }
    }

    fn series(name: &str, metric: Metric, values: &[f64]) -> Series {
        let scope = if name == "Global" { Scope::Global } else { Scope::Request };
        Series { scope, name: name.into(), metric, values: values.to_vec() }
    }

    #[test]
    fn a_clear_slowdown_beyond_tolerance_is_slower_and_a_regression() {
        let a = side("A", vec![series("Global", Metric::P50, &[20.1, 20.3, 20.2, 20.6, 20.4])], 5);
        let b = side("B", vec![series("Global", Metric::P50, &[24.2, 24.5, 24.1, 24.9, 24.3])], 5);
        let report = compare(&a, &b, Method::Runs, &CompareOptions::default());
        let c = &report.comparisons[0];
        assert_eq!(c.verdict, Verdict::Slower);
        let change = c.change.as_ref().unwrap();
        assert!((change.estimate - 1.2).abs() < 0.01, "{change:?}");
        assert!(change.low.unwrap() > 1.05);
        assert!(report.regression);
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    }

    #[test]
    fn a_significant_change_inside_the_tolerance_is_not_reported() {
        // +2 % on every run: significant, but within 5 %.
        let base = [20.0, 20.1, 20.2, 20.3, 20.4];
        let a = side("A", vec![series("Global", Metric::Mean, &base)], 5);
        let b = side("B", vec![series("Global", Metric::Mean, &base.map(|v| v * 1.02 + 0.5))], 5);
        let report = compare(&a, &b, Method::Runs, &CompareOptions::default());
        let c = &report.comparisons[0];
        assert!(c.change.as_ref().unwrap().q <= 0.05);
        assert_eq!(c.verdict, Verdict::Same);
        assert!(!report.regression);
    }

    #[test]
    fn throughput_and_errors_read_the_right_way() {
        let a = side(
            "A",
            vec![
                series("Global", Metric::Rps, &[100.0, 101.0, 99.0, 100.5, 100.2]),
                series("Global", Metric::Errors, &[0.0; 5]),
            ],
            5,
        );
        let b = side(
            "B",
            vec![
                series("Global", Metric::Rps, &[80.0, 81.0, 79.0, 80.5, 80.2]),
                series("Global", Metric::Errors, &[1.0, 2.0, 1.5, 1.2, 0.8]),
            ],
            5,
        );
        let report = compare(&a, &b, Method::Runs, &CompareOptions::default());
        assert_eq!(report.comparisons[0].verdict, Verdict::Worse);
        let errors = &report.comparisons[1];
        assert_eq!(errors.verdict, Verdict::Worse);
        assert_eq!(errors.change.as_ref().unwrap().kind, ChangeKind::Difference);
        assert!(errors.notes.contains(&"errors appeared (none in A)".to_string()));
        // The other way round: better on both.
        let report = compare(&b, &a, Method::Runs, &CompareOptions::default());
        assert!(report.comparisons.iter().all(|c| c.verdict == Verdict::Better));
        assert!(!report.regression);
    }

    #[test]
    fn few_runs_warn_with_the_smallest_reachable_p() {
        let a = side("A", vec![series("Global", Metric::P99, &[1.0, 2.0, 3.0])], 3);
        let b = side("B", vec![series("Global", Metric::P99, &[10.0, 20.0, 30.0])], 3);
        let report = compare(&a, &b, Method::Runs, &CompareOptions::default());
        assert_eq!(report.comparisons[0].verdict, Verdict::Same);
        assert!(report.warnings[0].contains("0.100"), "{:?}", report.warnings);
        assert!(report.warnings[0].contains("no change can be called significant"));
    }

    #[test]
    fn rows_are_paired_by_name_global_first_groups_last() {
        // A group may share a request's name: it is paired with the group of the other side.
        let group = |values: &[f64]| Series {
            scope: Scope::Group,
            name: "login".into(),
            metric: Metric::P50,
            values: values.to_vec(),
        };
        let a = side(
            "A",
            vec![group(&[5.0]), series("login", Metric::P50, &[1.0]), series("Global", Metric::P50, &[1.0])],
            1,
        );
        let b = side(
            "B",
            vec![series("Global", Metric::P50, &[1.0]), series("logout", Metric::P50, &[2.0]), group(&[6.0])],
            1,
        );
        let report = compare(&a, &b, Method::Runs, &CompareOptions::default());
        let rows: Vec<(Scope, &str)> = report.comparisons.iter().map(|c| (c.scope, c.name.as_str())).collect();
        assert_eq!(
            rows,
            [(Scope::Global, "Global"), (Scope::Request, "login"), (Scope::Request, "logout"), (Scope::Group, "login")]
        );
        assert_eq!(report.comparisons[1].notes, ["only in A"]);
        assert_eq!(report.comparisons[2].notes, ["only in B"]);
        assert!(report.comparisons[1].change.is_none());
        assert_eq!(
            (report.comparisons[3].a.values.as_slice(), report.comparisons[3].b.values.as_slice()),
            (&[5.0][..], &[6.0][..])
        );
    }

    #[test]
    fn benjamini_hochberg_spans_every_comparison() {
        // Ten rows where only one differs, p = 2/252 each at best: q = p * 10 / 1 > 0.05.
        let mut a_series = Vec::new();
        let mut b_series = Vec::new();
        for i in 0..10 {
            let name = format!("row{i}");
            a_series.push(series(&name, Metric::P50, &[10.0, 10.1, 10.2, 10.3, 10.4]));
            let b_values = if i == 0 { [20.0, 20.1, 20.2, 20.3, 20.4] } else { [10.05, 10.15, 10.25, 10.35, 10.45] };
            b_series.push(series(&name, Metric::P50, &b_values));
        }
        let report =
            compare(&side("A", a_series, 5), &side("B", b_series, 5), Method::Runs, &CompareOptions::default());
        let first = report.comparisons[0].change.as_ref().unwrap();
        assert!((first.p - 2.0 / 252.0).abs() < 1e-12);
        assert!((first.q - 10.0 * 2.0 / 252.0).abs() < 1e-12, "{}", first.q);
        assert_eq!(report.comparisons[0].verdict, Verdict::Same);
    }

    #[test]
    fn tolerances_parse_and_name_their_problems() {
        let t = Tolerance::parse("latency=10%, throughput=1%").unwrap();
        assert_eq!((t.latency_percent, t.throughput_percent, t.errors_points), (10.0, 1.0, 0.0));
        assert_eq!(Tolerance::parse("errors=0.5").unwrap().errors_points, 0.5);
        assert!(Tolerance::parse("latency").unwrap_err().contains("NAME=PERCENT"));
        assert!(Tolerance::parse("latency=-1%").unwrap_err().contains("not a percentage"));
        assert!(Tolerance::parse("speed=1%").unwrap_err().contains("not a tolerance"));
    }

    /// The committed schema must describe the types. HORDE_UPDATE_SCHEMAS=1 rewrites it.
    #[test]
    fn committed_json_schema_matches_the_types() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/compare.schema.json");
        let generated = serde_json::to_string_pretty(&CompareReport::json_schema()).unwrap() + "\n";
        if std::env::var_os("HORDE_UPDATE_SCHEMAS").is_some() {
            std::fs::write(path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            committed == generated,
            "docs/compare.schema.json is stale: run HORDE_UPDATE_SCHEMAS=1 cargo test -p horde-report"
        );
    }
}
