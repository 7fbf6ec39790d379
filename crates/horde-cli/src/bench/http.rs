//! `horde bench http URL -L c=1,8,32`: each trial is an ordinary engine run of quick mode's
//! plan (warm-up excluded by the plan's `warmup_ms`), the metric read from its totals.

use super::matrix;
use super::result::Trial;
use super::{PlannedCell, RunOptions, Runner};
use crate::cluster::{ClusterNeeds, OpenCluster};
use crate::{invalid_flags, Failure, SimulationLoader};
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Args, Debug)]
pub struct HttpBenchArgs {
    /// The URL; {NAME} is replaced by a -L parameter's value.
    pub url: String,
    /// A parameter and its values; `c` is the concurrent connections (users), any other name
    /// is replaced in the URL. Repeatable, every combination runs.
    #[arg(short = 'L', long = "parameter-list", value_name = "NAME=V1,V2")]
    pub lists: Vec<String>,
    /// Concurrent connections when no -L c=... is given.
    #[arg(short = 'c', long, default_value_t = 1)]
    pub connections: u64,
    /// What the Score is.
    #[arg(long, value_enum, default_value_t = Metric::Mean)]
    pub metric: Metric,
    /// The benchmark's name in the table.
    #[arg(long, short = 'n', default_value = "http")]
    pub name: String,
    #[command(flatten)]
    pub run: RunOptions,
    /// Each trial split over the workers of a Dask cluster (`--cluster local:N`, ...).
    #[command(flatten)]
    pub cluster: crate::args::ClusterArgs,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Mean latency of OK requests (ms/op).
    Mean,
    P50,
    P75,
    P95,
    P99,
    /// Requests per second (ops/s; higher is better).
    Throughput,
}

impl Metric {
    /// `(mode, unit)` of its cells.
    pub fn mode_unit(self) -> (&'static str, &'static str) {
        match self {
            Metric::Throughput => ("thrpt", "ops/s"),
            _ => ("avgt", "ms"),
        }
    }

    fn percentile(self) -> Option<f64> {
        match self {
            Metric::P50 => Some(50.0),
            Metric::P75 => Some(75.0),
            Metric::P95 => Some(95.0),
            Metric::P99 => Some(99.0),
            _ => None,
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Metric::Mean => "mean latency",
            Metric::P50 => "p50 latency",
            Metric::P75 => "p75 latency",
            Metric::P95 => "p95 latency",
            Metric::P99 => "p99 latency",
            Metric::Throughput => "throughput",
        }
    }
}

pub struct HttpCell {
    url: String,
    connections: u64,
    metric: Metric,
    /// Warm-up and measured time of one trial.
    iteration_ms: f64,
    /// `--cluster`: the machines every trial is split over.
    cluster: Option<Arc<OpenCluster>>,
}

pub fn cells(args: &HttpBenchArgs, iteration_ms: f64) -> Result<Vec<PlannedCell>, Failure> {
    let params = matrix::parse_params("-L", &args.lists).map_err(invalid_flags)?;
    crate::quick::check_url(&args.url.replace(['{', '}'], "")).map_err(|e| invalid_flags(vec![e]))?;
    let mut problems = Vec::new();
    for p in &params {
        if p.name == "c" {
            if p.values.iter().any(|v| v.as_u64().is_none_or(|n| n == 0)) {
                problems.push("-L c=...: connections are whole numbers of at least 1".to_string());
            }
        } else if !args.url.contains(&format!("{{{}}}", p.name)) {
            problems.push(format!("-L {}: the URL has no {{{}}} to replace (c is the connections)", p.name, p.name));
        }
    }
    if !problems.is_empty() {
        return Err(invalid_flags(problems));
    }
    let (mode, unit) = args.metric.mode_unit();
    let mut cells = Vec::new();
    for values in matrix::combinations(&params) {
        let url = matrix::substitute(&args.url, &values).map_err(Failure::Invalid)?;
        crate::quick::check_url(&url).map_err(|e| invalid_flags(vec![e]))?;
        let connections = values.get("c").and_then(|v| v.as_u64()).unwrap_or(args.connections);
        let cell = super::empty_cell(&args.name, "http", &params, values, mode, unit, args.metric.describe());
        cells.push(PlannedCell {
            cell,
            runner: Runner::Http(Box::new(HttpCell {
                url,
                connections,
                metric: args.metric,
                iteration_ms,
                cluster: None,
            })),
        });
    }
    Ok(cells)
}

/// With `--cluster`, opens the machines every trial of `cells` is split over, once every
/// cell's plan is known to split (each share needs a connection): a cell that cannot is
/// refused before anything runs, named by its parameters.
pub fn open_cluster(
    args: &HttpBenchArgs,
    cells: &mut [PlannedCell],
    warmup: usize,
    measure: usize,
    loader: &dyn SimulationLoader,
) -> Result<(), Failure> {
    let plans: Vec<(String, horde_plan::Plan)> = cells
        .iter()
        .filter_map(|planned| match &planned.runner {
            Runner::Http(cell) => Some(trial_plan(cell, warmup, measure).map(|plan| (planned.cell.key(), plan))),
            _ => None,
        })
        .collect::<Result<_, _>>()?;
    let Some((_, first)) = plans.first() else { return Ok(()) };
    // The worker-loss flags, as a run's plan carries them.
    let mut first = first.clone();
    args.cluster.apply(&mut first.options);
    let Some(cluster) = crate::cluster::open(&args.cluster, &first, false, ClusterNeeds::default(), loader)? else {
        return Ok(());
    };
    for (label, plan) in &plans {
        cluster.split(plan).map_err(|failure| match failure {
            Failure::Invalid(problem) => Failure::Invalid(format!("{label}: {problem}")),
            other => other,
        })?;
    }
    let cluster = Arc::new(cluster);
    for planned in cells.iter_mut() {
        if let Runner::Http(cell) = &mut planned.runner {
            cell.cluster = Some(cluster.clone());
        }
    }
    Ok(())
}

/// One trial: `warmup` iterations' time of warm-up (not recorded), then `measure` iterations'
/// time measured, in one fresh engine run; one figure per trial.
pub fn trial(cell: &HttpCell, round: usize, warmup: usize, measure: usize) -> Result<Trial, Failure> {
    let plan = trial_plan(cell, warmup, measure)?;
    plan_trial(&plan, cell.metric, cell.iteration_ms, round, &cell.url, cell.cluster.as_deref())
}

/// The plan of one trial of `cell`: quick mode's, run for the warm-up and measured time.
fn trial_plan(cell: &HttpCell, warmup: usize, measure: usize) -> Result<horde_plan::Plan, Failure> {
    let warmup_ms = (cell.iteration_ms * warmup as f64) as u64;
    let measure_ms = ((cell.iteration_ms * measure as f64) as u64).max(1);
    let argv = [
        "horde".to_string(),
        "http".into(),
        cell.url.clone(),
        "-c".into(),
        cell.connections.to_string(),
        "-d".into(),
        format!("{}ms", warmup_ms + measure_ms),
    ];
    let cli = <crate::args::Cli as clap::Parser>::try_parse_from(argv).map_err(|e| Failure::Invalid(e.to_string()))?;
    let crate::args::Command::Http(http_args) = cli.command else { unreachable!("parsed as horde http") };
    let program = crate::quick::program(&http_args).map_err(invalid_flags)?;
    let mut plan = program.plan.clone();
    plan.options.warmup_ms = Some(warmup_ms);
    plan.options.max_duration_ms = Some(warmup_ms + measure_ms);
    plan.options.graceful_stop_ms = None;
    Ok(plan)
}

/// Runs one trial's plan (its warm-up set in `warmup_ms`) in a fresh engine run and reads the
/// metric from its totals; `what` names the target in messages.
///
/// The run's snapshot interval is the iteration: each whole measured interval's figure is an
/// iteration of the trial (read from its time series), so the variance within a trial and
/// between trials can be told apart as for functions. A trial whose intervals cannot be read
/// has one iteration, the run's own figure. With `cluster`, the trial is split over its
/// machines; one that lost a worker measured part of its load only, and fails.
pub fn plan_trial(
    plan: &horde_plan::Plan,
    metric: Metric,
    iteration_ms: f64,
    round: usize,
    what: &str,
    cluster: Option<&OpenCluster>,
) -> Result<Trial, Failure> {
    let mut plan = plan.clone();
    let warmup_ms = plan.options.warmup_ms.unwrap_or(0);
    let measure_ms = plan.options.max_duration_ms.unwrap_or(0).saturating_sub(warmup_ms).max(1);
    plan.options.snapshot_interval_ms = (iteration_ms as u64).max(10);
    let source = Path::new("of horde bench");
    let program = match cluster {
        None => crate::prepare(&plan, source)?,
        Some(_) => crate::prepare_to_coordinate(&plan, source)?,
    };
    let role = cluster.map(OpenCluster::role).unwrap_or_default();
    let dir = trial_dir()?;
    let finished = crate::run_into_with(program, &dir, false, "cli", Default::default(), Default::default(), &role);
    let intervals = std::fs::read_to_string(dir.join("timeseries.jsonl")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    let finished = finished?;
    if finished.status == horde_metrics::RunStatus::Interrupted {
        return Err(Failure::Interrupted("during an HTTP trial"));
    }
    if let Some(lost) = crate::cluster::WorkerLosses::of(&finished.summary).not_delivered() {
        return Err(Failure::Runtime(anyhow::anyhow!(
            "{what}: a trial lost a worker and measured only part of its load ({lost}): the benchmark stops"
        )));
    }
    let global = &finished.summary.global;
    if global.ok == 0 {
        return Err(Failure::Runtime(anyhow::anyhow!(
            "{what}: no request succeeded in the trial ({} failed)",
            global.ko
        )));
    }
    if global.ko > 0 {
        crate::output::status!(
            "horde bench: warning: {what}: {} of {} requests failed in this trial",
            global.ko,
            global.count
        );
    }
    let latency = &global.latency.ok;
    let value = match metric {
        Metric::Mean => latency.mean_us / 1000.0,
        Metric::Throughput => global.ok as f64 / (measure_ms as f64 / 1000.0),
        metric => {
            let wanted = metric.percentile().expect("a percentile metric");
            let found = latency.percentiles.iter().find(|p| (p.percentile - wanted).abs() < 1e-9);
            found
                .map(|p| p.value_us as f64 / 1000.0)
                .ok_or_else(|| Failure::Runtime(anyhow::anyhow!("the run's summary has no p{wanted} latency")))?
        }
    };
    let iterations = interval_figures(&intervals, metric, warmup_ms, plan.options.snapshot_interval_ms);
    let iterations = if iterations.is_empty() { vec![value] } else { iterations };
    Ok(Trial {
        round,
        warmup: Vec::new(),
        // The trial's figure is the run's over every measured request (a percentile of the
        // merged histogram, a mean weighted by requests), not the mean of its intervals'.
        mean: value,
        iterations,
        cpu_user_ms: None,
        cpu_system_ms: None,
        peak_rss_kib: None,
    })
}

/// The metric of each whole measured interval of the `all` row of a run's timeseries.jsonl.
fn interval_figures(jsonl: &str, metric: Metric, warmup_ms: u64, interval_ms: u64) -> Vec<f64> {
    let mut figures = Vec::new();
    for line in jsonl.lines() {
        let Ok(sample) = serde_json::from_str::<horde_metrics::IntervalSample>(line) else { continue };
        // The warm-up's intervals, and a last interval cut short by the end of the run, are no
        // iterations.
        if sample.name != horde_metrics::ALL_REQUESTS
            || sample.start_ms < warmup_ms
            || sample.duration_ms < interval_ms
            || sample.ok == 0
        {
            continue;
        }
        let figure = match metric {
            Metric::Mean => Some(sample.latency.mean_us / 1000.0),
            Metric::Throughput => Some(sample.ok as f64 / (sample.duration_ms as f64 / 1000.0)),
            metric => {
                let wanted = metric.percentile().expect("a percentile metric");
                sample.latency.percentile(wanted).map(|us| us as f64 / 1000.0)
            }
        };
        figures.extend(figure);
    }
    figures
}

fn trial_dir() -> Result<PathBuf, Failure> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("horde-bench-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| Failure::Runtime(anyhow::anyhow!("creating {}: {e}", dir.display())))?;
    Ok(dir)
}
