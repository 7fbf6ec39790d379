//! `horde bench`: seed 002's JMH job in one tool. Benchmarks (Python functions, shell commands,
//! HTTP URLs) with parameter matrices run as trials, a fresh process or engine run each,
//! interleaved in a new random order every round; the statistics treat the trial as the unit
//! (stats.rs); every result file records the machine (machine.rs); `horde bench compare` puts
//! machines side by side (compare.rs).
//!
//! ```text
//! horde bench benchmarks.py -p log_rounds=6,8 --trials 5 --machine laptop --out laptop.json
//! horde bench cmd -L level=1,6,9 -- 'gzip -{level} -c big.bin'
//! horde bench http http://127.0.0.1:8080/delay/20 -L c=1,8
//! horde bench compare laptop.json m5.large.json --budget 100ms
//! ```

mod command;
mod compare;
mod http;
mod machine;
mod matrix;
mod python;
mod remote;
mod render;
mod result;
mod stats;

use crate::output::{print_text, status};
use crate::{exit, invalid_flags, signals, Failure};
use clap::{Args, Subcommand, ValueEnum};
use machine::Machine;
use matrix::Param;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use result::{BenchResult, Cell, Config, Trial};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub form: Option<BenchForm>,
    /// A Python file declaring benchmarks (bench.function, bench.command, bench.scenario).
    pub file: Option<PathBuf>,
    /// Replaces a parameter's declared values (JMH's -p); repeatable.
    #[arg(short = 'p', long = "param", value_name = "NAME=V1,V2")]
    pub params: Vec<String>,
    /// Run the file on this host over SSH instead (user@host; repeatable, all at once), each
    /// result written to --out DIR, then compared.
    #[arg(long = "host", value_name = "USER@HOST")]
    pub hosts: Vec<String>,
    /// The ssh command for --host, with its options ("ssh -i key -p 2222").
    #[arg(long, default_value = "ssh", value_name = "COMMAND")]
    pub ssh: String,
    /// The horde command on the hosts.
    #[arg(long, default_value = "horde", value_name = "PATH")]
    pub remote_horde: String,
    #[command(flatten)]
    pub run: RunOptions,
}

#[derive(Subcommand, Debug)]
pub enum BenchForm {
    /// Benchmark a shell command over a parameter matrix: horde bench cmd -L level=1,6,9 -- 'gzip -{level} -c f'.
    Cmd(CmdArgs),
    /// Benchmark one URL, each trial a fresh engine run: horde bench http URL -L c=1,8,32.
    Http(http::HttpBenchArgs),
    /// One table across machines from result files: ratios to a reference, verdicts, budgets.
    Compare(compare::CompareBenchArgs),
    /// Render a saved result file again (table, jmh-json, csv, markdown).
    Show {
        /// A result file of horde bench.
        file: PathBuf,
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
}

#[derive(Args, Debug)]
pub struct CmdArgs {
    /// The command, run with sh -c; {NAME} is replaced by a parameter's value.
    #[arg(required = true, num_args = 1.., value_name = "COMMAND")]
    pub command: Vec<String>,
    /// A parameter and its values (hyperfine's -L); repeatable, every combination runs.
    #[arg(short = 'L', long = "parameter-list", value_name = "NAME=V1,V2")]
    pub lists: Vec<String>,
    /// A command run before each run, untimed ({NAME} replaced too).
    #[arg(long)]
    pub prepare: Option<String>,
    /// The benchmark's name in the table (default: the command's first word).
    #[arg(long, short = 'n')]
    pub name: Option<String>,
    #[command(flatten)]
    pub run: RunOptions,
}

#[derive(Args, Debug, Clone)]
pub struct RunOptions {
    /// Trials per cell: fresh processes (or engine runs), the unit of the statistics.
    #[arg(long, value_parser = crate::args::at_least_one)]
    pub trials: Option<u64>,
    /// Warm-up iterations per trial, measured then discarded.
    #[arg(long, value_name = "N")]
    pub warmup: Option<usize>,
    /// Measured iterations per trial.
    #[arg(long, value_parser = crate::args::at_least_one, value_name = "N")]
    pub measure: Option<u64>,
    /// How long one iteration of a Python function lasts (its calls per iteration are
    /// calibrated to it); for HTTP, the unit of a trial's warm-up and measured time.
    #[arg(long, value_name = "DURATION")]
    pub iteration_time: Option<String>,
    /// Quick figures: 3 trials, 1 warm-up and 3 measured iterations of 100 ms.
    #[arg(long, conflicts_with = "rigorous")]
    pub fast: bool,
    /// Careful figures: 10 trials, 3 warm-up and 10 measured iterations of 1 s.
    #[arg(long)]
    pub rigorous: bool,
    /// The confidence of the Error (0.999 for JMH's habit).
    #[arg(long, default_value_t = 0.95)]
    pub confidence: f64,
    /// The machine's label in results and comparisons (default: the cloud instance type, else
    /// the host name).
    #[arg(long, value_name = "NAME")]
    pub machine: Option<String>,
    /// The result file (JSON; default: BENCH-MACHINE-TIME.bench.json here).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// What stdout shows: JMH's table, or an export of the results.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// The seed of the rounds' shuffles (default: from the clock; recorded in the results).
    #[arg(long)]
    pub seed: Option<u64>,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JMH's console table, with the diagnostics.
    Table,
    /// JMH's JSON (what jmh-visualizer reads).
    JmhJson,
    /// JMH's CSV.
    Csv,
    /// A Markdown table.
    Markdown,
    /// horde's own result file.
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunPreset {
    Default,
    Fast,
    Rigorous,
}

impl RunOptions {
    pub fn preset(&self) -> RunPreset {
        if self.fast {
            RunPreset::Fast
        } else if self.rigorous {
            RunPreset::Rigorous
        } else {
            RunPreset::Default
        }
    }
}

/// The resolved configuration of a run.
#[derive(Debug, Clone, Copy)]
struct Settings {
    trials: usize,
    warmup: usize,
    measure: usize,
    iteration_ms: f64,
    confidence: f64,
}

fn settings(options: &RunOptions) -> Result<Settings, Vec<String>> {
    let (trials, warmup, measure, iteration_ms) = if options.fast {
        (3, 1, 3, 100.0)
    } else if options.rigorous {
        (10, 3, 10, 1000.0)
    } else {
        (5, 1, 5, 1000.0)
    };
    let mut problems = Vec::new();
    let iteration_ms = match &options.iteration_time {
        Some(text) => match crate::quick::parse_duration_ms(text) {
            Ok(ms) => ms as f64,
            Err(e) => {
                problems.push(format!("--iteration-time: {e}"));
                iteration_ms
            }
        },
        None => iteration_ms,
    };
    if !(options.confidence > 0.5 && options.confidence < 1.0) {
        problems.push(format!("--confidence {}: a level between 0.5 and 1 (0.95, 0.99, 0.999)", options.confidence));
    }
    if let Some(m) = &options.machine {
        if m.trim().is_empty() {
            problems.push("--machine: the label is empty".into());
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Settings {
        trials: options.trials.map_or(trials, |t| t as usize),
        warmup: options.warmup.unwrap_or(warmup),
        measure: options.measure.map_or(measure, |m| m as usize),
        iteration_ms,
        confidence: options.confidence,
    })
}

/// How one cell's trials are run.
enum Runner {
    Function { file: PathBuf, name: String, params_json: String, loops: u64 },
    Command { command: String, prepare: Option<String>, dir: Option<PathBuf> },
    Http(Box<http::HttpCell>),
    Scenario { file: PathBuf, name: String, params_json: String, metric: http::Metric },
}

struct PlannedCell {
    cell: Cell,
    runner: Runner,
}

/// Python benchmark files are loaded by worker processes, never in this one: each trial must be a
/// fresh interpreter, so the command line's simulation loader is not used for them; it opens
/// `horde bench http --cluster`'s machines.
pub fn bench(args: &BenchArgs, loader: &dyn crate::SimulationLoader) -> Result<i32, Failure> {
    match &args.form {
        Some(BenchForm::Cmd(cmd)) => {
            let settings = settings(&cmd.run).map_err(invalid_flags)?;
            let cells = command_cells(cmd)?;
            let source = cmd.command.join(" ");
            execute(cells, &source, "cmd", &cmd.run, settings, None)
        }
        Some(BenchForm::Http(http_args)) => {
            let settings = settings(&http_args.run).map_err(invalid_flags)?;
            let mut cells = http::cells(http_args, settings.iteration_ms)?;
            // Open for the whole benchmark (every trial runs on it) and closed when the cells go.
            http::open_cluster(http_args, &mut cells, settings.warmup, settings.measure, loader)?;
            execute(cells, &http_args.url, "http", &http_args.run, settings, None)
        }
        Some(BenchForm::Compare(compare_args)) => compare::compare(compare_args),
        Some(BenchForm::Show { file, format }) => {
            let result = BenchResult::read(file).map_err(Failure::Invalid)?;
            print_text(&render::render(&result, *format));
            Ok(exit::OK)
        }
        None => {
            let Some(file) = &args.file else {
                return Err(Failure::Invalid(
                    "horde bench needs a benchmark file (horde bench FILE.py) or a form: cmd, http, compare, show"
                        .into(),
                ));
            };
            let settings = settings(&args.run).map_err(invalid_flags)?;
            if !args.hosts.is_empty() {
                return remote::run(&args.hosts, &args.ssh, &args.remote_horde, file, &args.params, &args.run);
            }
            let overrides = matrix::parse_params("-p", &args.params).map_err(invalid_flags)?;
            let (cells, python_version) = file_cells(file, &overrides)?;
            let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "bench".into());
            execute(cells, &file.display().to_string(), &stem, &args.run, settings, Some(python_version))
        }
    }
}

fn command_cells(cmd: &CmdArgs) -> Result<Vec<PlannedCell>, Failure> {
    let params = matrix::parse_params("-L", &cmd.lists).map_err(invalid_flags)?;
    let command = cmd.command.join(" ");
    let name = cmd.name.clone().unwrap_or_else(|| command.split_whitespace().next().unwrap_or("command").to_string());
    planned_commands(&name, &command, cmd.prepare.as_deref(), &params, "ms", None)
}

fn planned_commands(
    name: &str,
    command: &str,
    prepare: Option<&str>,
    params: &[Param],
    unit: &str,
    dir: Option<&Path>,
) -> Result<Vec<PlannedCell>, Failure> {
    let mut cells = Vec::new();
    for values in matrix::combinations(params) {
        let concrete = matrix::substitute(command, &values).map_err(Failure::Invalid)?;
        let prepare = prepare.map(|p| matrix::substitute(p, &values)).transpose().map_err(Failure::Invalid)?;
        cells.push(PlannedCell {
            cell: empty_cell(name, "command", params, values, "avgt", unit, "wall time per run"),
            runner: Runner::Command { command: concrete, prepare, dir: dir.map(Path::to_path_buf) },
        });
    }
    Ok(cells)
}

fn empty_cell(
    name: &str,
    kind: &str,
    params: &[Param],
    values: serde_json::Map<String, serde_json::Value>,
    mode: &str,
    unit: &str,
    metric: &str,
) -> Cell {
    Cell {
        benchmark: name.to_string(),
        kind: kind.into(),
        param_names: params.iter().map(|p| p.name.clone()).collect(),
        params: values,
        mode: mode.into(),
        unit: if mode == "avgt" { format!("{unit}/op") } else { unit.to_string() },
        metric: metric.into(),
        loops: None,
        trials: Vec::new(),
        stats: None,
    }
}

fn file_cells(file: &Path, overrides: &[Param]) -> Result<(Vec<PlannedCell>, String), Failure> {
    if file.extension().is_none_or(|e| !e.eq_ignore_ascii_case("py")) {
        return Err(Failure::Invalid(format!(
            "{}: horde bench runs Python files (.py) declaring benchmarks",
            file.display()
        )));
    }
    if !file.is_file() {
        return Err(Failure::Invalid(format!("benchmark file not found: {}", file.display())));
    }
    let listing = python::list(file).map_err(worker_failure)?;
    let dir = file.parent().map(Path::to_path_buf).filter(|d| !d.as_os_str().is_empty());
    // A -p naming a parameter no benchmark has is a typo; one that only some have applies to those.
    for o in overrides {
        if !listing.benchmarks.iter().any(|b| b.params.iter().any(|p| p.name == o.name)) {
            let known: Vec<String> = listing
                .benchmarks
                .iter()
                .flat_map(|b| b.params.iter().map(|p| p.name.clone()))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            return Err(Failure::Invalid(format!(
                "-p {}: no benchmark of {} has a parameter {:?} (parameters: {})",
                o.name,
                file.display(),
                o.name,
                if known.is_empty() { "none".into() } else { known.join(", ") }
            )));
        }
    }
    let mut cells = Vec::new();
    for declared in &listing.benchmarks {
        let declared_params: Vec<Param> =
            declared.params.iter().map(|p| Param { name: p.name.clone(), values: p.values.clone() }).collect();
        let applicable: Vec<Param> =
            overrides.iter().filter(|o| declared_params.iter().any(|p| p.name == o.name)).cloned().collect();
        let params =
            matrix::override_params(&declared_params, &applicable, &declared.name).map_err(Failure::Invalid)?;
        match declared.kind.as_str() {
            "command" => {
                let command = declared.command.clone().unwrap_or_default();
                cells.extend(planned_commands(
                    &declared.name,
                    &command,
                    declared.prepare.as_deref(),
                    &params,
                    &declared.unit,
                    dir.as_deref(),
                )?);
            }
            "function" => {
                for values in matrix::combinations(&params) {
                    let params_json = serde_json::Value::Object(values.clone()).to_string();
                    cells.push(PlannedCell {
                        cell: empty_cell(
                            &declared.name,
                            "function",
                            &params,
                            values,
                            "avgt",
                            &declared.unit,
                            "wall time per call",
                        ),
                        runner: Runner::Function {
                            file: file.to_path_buf(),
                            name: declared.name.clone(),
                            params_json,
                            loops: 0,
                        },
                    });
                }
            }
            "scenario" => {
                let text = declared.metric.as_deref().unwrap_or("mean");
                let metric = <http::Metric as ValueEnum>::from_str(text, true)
                    .map_err(|_| Failure::Invalid(format!("{}: unknown metric {text:?}", declared.name)))?;
                let (mode, unit) = metric.mode_unit();
                for values in matrix::combinations(&params) {
                    let params_json = serde_json::Value::Object(values.clone()).to_string();
                    cells.push(PlannedCell {
                        cell: empty_cell(&declared.name, "scenario", &params, values, mode, unit, metric.describe()),
                        runner: Runner::Scenario {
                            file: file.to_path_buf(),
                            name: declared.name.clone(),
                            params_json,
                            metric,
                        },
                    });
                }
            }
            other => return Err(Failure::Invalid(format!("{}: unknown benchmark kind {other:?}", file.display()))),
        }
    }
    Ok((cells, listing.python))
}

fn worker_failure(error: python::WorkerError) -> Failure {
    match error {
        python::WorkerError::Invalid(message) => Failure::Invalid(message),
        python::WorkerError::Interrupted => Failure::Interrupted("while loading the benchmarks"),
        python::WorkerError::Failed(message) => Failure::Runtime(anyhow::anyhow!(message)),
    }
}

/// Seconds to the cell's unit (`ms/op` -> 1000).
fn unit_factor(unit: &str) -> f64 {
    match unit.split('/').next().unwrap_or("") {
        "s" => 1.0,
        "us" => 1e6,
        "ns" => 1e9,
        _ => 1e3,
    }
}

/// The finest step of the monotonic clock, in nanoseconds (the smallest non-zero difference
/// of consecutive readings).
fn timer_floor_ns() -> f64 {
    let mut smallest = f64::INFINITY;
    for _ in 0..2000 {
        let a = Instant::now();
        let mut b = Instant::now();
        while b == a {
            b = Instant::now();
        }
        smallest = smallest.min((b - a).as_nanos() as f64);
    }
    smallest
}

/// The median of 11 runs of `sh -c true`, in ms.
fn command_floor_ms() -> Option<f64> {
    let mut times: Vec<f64> =
        (0..11).filter_map(|_| command::run("true", None).ok()).map(|m| m.wall.as_secs_f64() * 1000.0).collect();
    if times.is_empty() {
        return None;
    }
    times.sort_by(f64::total_cmp);
    Some(times[times.len() / 2])
}

fn execute(
    mut cells: Vec<PlannedCell>,
    source: &str,
    stem: &str,
    options: &RunOptions,
    settings: Settings,
    python_version: Option<String>,
) -> Result<i32, Failure> {
    if cells.is_empty() {
        return Err(Failure::Invalid(format!("{source}: no benchmark to run")));
    }
    let started_at = horde_report::rfc3339(unix_ms());
    let mut machine = Machine::detect(options.machine.as_deref());
    if let Some(version) = python_version {
        machine.runtimes.insert("python".into(), version);
        machine.refresh_fingerprint();
    }
    let out = match &options.out {
        Some(path) => path.clone(),
        None => PathBuf::from(format!(
            "{}-{}-{}.bench.json",
            sanitize(stem),
            sanitize(&machine.label),
            started_at.replace([':', '-'], "").trim_end_matches('Z')
        )),
    };
    // The result file's directory must exist before minutes of measuring.
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !parent.is_dir() {
            return Err(Failure::Invalid(format!(
                "--out {}: the directory {} does not exist",
                out.display(),
                parent.display()
            )));
        }
    }
    let seed = options.seed.unwrap_or_else(|| unix_ms() ^ u64::from(std::process::id()));
    let mut config = Config {
        source: source.to_string(),
        trials: settings.trials,
        warmup_iterations: settings.warmup,
        measure_iterations: settings.measure,
        iteration_time_ms: settings.iteration_ms,
        confidence: settings.confidence,
        seed,
        timer_floor_ns: timer_floor_ns(),
        command_floor_ms: None,
    };
    if cells.iter().any(|c| matches!(c.runner, Runner::Command { .. })) {
        config.command_floor_ms = command_floor_ms();
    }
    status!("horde bench: machine {}", machine.describe());
    status!(
        "horde bench: {} cells x {} trials, {} warm-up + {} measured iterations each, {:.0} % confidence; results to {}",
        cells.len(),
        settings.trials,
        settings.warmup,
        settings.measure,
        settings.confidence * 100.0,
        out.display()
    );
    let mut warnings = machine.warnings();
    for w in &warnings {
        status!("horde bench: warning: {w}");
    }
    let mut interrupted = false;
    let mut failure: Option<Failure> = None;
    // Calibration: a function's calls per iteration, found once per cell in a process of its
    // own, so every trial times the same amount of work.
    for planned in cells.iter_mut() {
        if signals::interrupted() {
            interrupted = true;
            break;
        }
        if let Runner::Function { file, name, params_json, loops } = &mut planned.runner {
            match python::calibrate(file, name, params_json, settings.iteration_ms / 1000.0) {
                Ok(found) => {
                    *loops = found;
                    planned.cell.loops = Some(found);
                    status!(
                        "horde bench: calibrated {}: {found} call{} per iteration",
                        label(&planned.cell),
                        if found == 1 { "" } else { "s" }
                    );
                }
                Err(python::WorkerError::Interrupted) => {
                    interrupted = true;
                    break;
                }
                Err(e) => {
                    failure = Some(worker_failure(e));
                    break;
                }
            }
        }
    }
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let total = cells.len();
    'rounds: for round in 0..settings.trials {
        if interrupted || failure.is_some() {
            break;
        }
        let mut order: Vec<usize> = (0..total).collect();
        order.shuffle(&mut rng);
        for (position, &index) in order.iter().enumerate() {
            if signals::interrupted() {
                interrupted = true;
                break 'rounds;
            }
            let planned = &mut cells[index];
            match run_trial(planned, round, &settings, &mut config) {
                Ok(trial) => {
                    status!(
                        "horde bench: round {}/{}, cell {}/{}: {}: {} {}",
                        round + 1,
                        settings.trials,
                        position + 1,
                        total,
                        label(&planned.cell),
                        render::number(trial.mean),
                        planned.cell.unit
                    );
                    planned.cell.trials.push(trial);
                }
                Err(TrialError::Interrupted) => {
                    interrupted = true;
                    break 'rounds;
                }
                Err(TrialError::Failed(f)) => {
                    failure = Some(f);
                    break 'rounds;
                }
            }
        }
    }
    let interrupted = interrupted || signals::interrupted();
    let mut finished: Vec<Cell> = cells.into_iter().map(|p| p.cell).collect();
    for cell in &mut finished {
        let iterations: Vec<Vec<f64>> = cell.trials.iter().map(|t| t.iterations.clone()).collect();
        let means: Vec<f64> = cell.trials.iter().map(|t| t.mean).collect();
        cell.stats = stats::cell_stats_of(&iterations, &means, settings.confidence);
        if cell.stats.as_ref().is_some_and(|s| s.first_iteration_outlier) {
            warnings.push(format!(
                "{}: the first measured iteration of most trials is an outlier: warm-up is too short (--warmup)",
                label(cell)
            ));
        }
    }
    let result = BenchResult {
        format: result::FORMAT.into(),
        version: result::VERSION,
        started_at,
        status: if interrupted {
            "interrupted".into()
        } else if failure.is_some() {
            "failed".into()
        } else {
            "completed".into()
        },
        machine,
        config,
        cells: finished,
        warnings,
    };
    let json = serde_json::to_string_pretty(&result).expect("a result serializes") + "\n";
    let written = std::fs::write(&out, json);
    if failure.is_none() || result.cells.iter().any(|c| !c.trials.is_empty()) {
        print_text(&render::render(&result, options.format));
    }
    match written {
        Ok(()) => status!("horde bench: results written to {}", out.display()),
        Err(e) => return Err(Failure::Runtime(anyhow::anyhow!("writing the results to {}: {e}", out.display()))),
    }
    if let Some(failure) = failure {
        return Err(failure);
    }
    if interrupted {
        status!("horde bench: interrupted; the trials measured until then are in {}", out.display());
        return Ok(exit::INTERRUPTED);
    }
    Ok(exit::OK)
}

enum TrialError {
    Interrupted,
    Failed(Failure),
}

fn run_trial(
    planned: &mut PlannedCell,
    round: usize,
    settings: &Settings,
    config: &mut Config,
) -> Result<Trial, TrialError> {
    let factor = unit_factor(&planned.cell.unit);
    match &planned.runner {
        Runner::Function { file, name, params_json, loops } => {
            let output = python::trial(file, name, params_json, *loops, settings.warmup, settings.measure).map_err(
                |e| match e {
                    python::WorkerError::Interrupted => TrialError::Interrupted,
                    other => TrialError::Failed(worker_failure(other)),
                },
            )?;
            config.timer_floor_ns = config.timer_floor_ns.max(output.timer_resolution_ns);
            let iterations: Vec<f64> = output.iterations.iter().map(|s| s * factor).collect();
            Ok(Trial {
                round,
                warmup: output.warmup.iter().map(|s| s * factor).collect(),
                mean: stats::mean(&iterations),
                iterations,
                cpu_user_ms: None,
                cpu_system_ms: None,
                peak_rss_kib: None,
            })
        }
        Runner::Command { command, prepare, dir } => {
            let mut warmup = Vec::new();
            let mut iterations = Vec::new();
            let (mut user, mut system, mut peak) = (0.0, 0.0, 0u64);
            for i in 0..settings.warmup + settings.measure {
                if signals::interrupted() {
                    return Err(TrialError::Interrupted);
                }
                if let Some(prepare) = prepare {
                    command::run(prepare, dir.as_deref()).map_err(|e| {
                        if signals::interrupted() {
                            TrialError::Interrupted
                        } else {
                            TrialError::Failed(Failure::Runtime(anyhow::anyhow!("prepare: {e}")))
                        }
                    })?;
                }
                let measure = command::run(command, dir.as_deref()).map_err(|e| {
                    if signals::interrupted() {
                        TrialError::Interrupted
                    } else {
                        TrialError::Failed(Failure::Runtime(anyhow::anyhow!(e)))
                    }
                })?;
                let value = measure.wall.as_secs_f64() * factor;
                if i < settings.warmup {
                    warmup.push(value);
                } else {
                    iterations.push(value);
                    user += measure.cpu_user_ms;
                    system += measure.cpu_system_ms;
                    peak = peak.max(measure.peak_rss_kib);
                }
            }
            let n = iterations.len() as f64;
            Ok(Trial {
                round,
                warmup,
                mean: stats::mean(&iterations),
                iterations,
                cpu_user_ms: Some(user / n),
                cpu_system_ms: Some(system / n),
                peak_rss_kib: Some(peak),
            })
        }
        Runner::Scenario { file, name, params_json, metric } => {
            let warmup_ms = (settings.iteration_ms * settings.warmup as f64) as u64;
            let measure_ms = ((settings.iteration_ms * settings.measure as f64) as u64).max(1);
            let text = python::plan(file, name, params_json, warmup_ms, measure_ms).map_err(|e| match e {
                python::WorkerError::Interrupted => TrialError::Interrupted,
                other => TrialError::Failed(worker_failure(other)),
            })?;
            let plan = horde_plan::Plan::from_json(&text).map_err(|errors| {
                TrialError::Failed(Failure::Invalid(format!(
                    "{}: the plan of {name} is invalid: {}",
                    file.display(),
                    errors.iter().map(|e| format!("{}: {}", e.path, e.message)).collect::<Vec<_>>().join("; ")
                )))
            })?;
            http::plan_trial(&plan, *metric, settings.iteration_ms, round, name, None).map_err(|e| match e {
                Failure::Interrupted(_) => TrialError::Interrupted,
                other => TrialError::Failed(other),
            })
        }
        Runner::Http(cell) => http::trial(cell, round, settings.warmup, settings.measure).map_err(|e| match e {
            Failure::Interrupted(_) => TrialError::Interrupted,
            other => TrialError::Failed(other),
        }),
    }
}

/// `busy (n=1000)`: a cell as progress lines and warnings name it.
fn label(cell: &Cell) -> String {
    if cell.param_names.is_empty() {
        cell.benchmark.clone()
    } else {
        format!("{} ({})", cell.benchmark, cell.params_text())
    }
}

fn sanitize(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '_' { c } else { '-' }).collect()
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}
