//! The `horde` command line. Flags are defined here, once; the Python console script forwards
//! its argv to [`cli_main`].
//!
//! ```no_run
//! let code = horde_cli::cli_main(
//!     ["horde", "http", "http://127.0.0.1:8080/", "-c", "10", "-d", "2s"].map(Into::into).to_vec(),
//!     &horde_cli::PythonSubprocessLoader::default(),
//! );
//! std::process::exit(code);
//! ```

mod args;
mod couchdb;
pub mod exit;
mod loader;
mod quick;
mod signals;
mod sweep;

pub use loader::{LoadError, PythonSubprocessLoader, SimulationLoader};

use anyhow::Context;
use args::{Cli, Command};
use clap::Parser;
use horde_engine::{lower, run, worker_count, RunControl};
use horde_metrics::RunStatus;
use horde_plan::Plan;
use horde_report::{create_results_dir, render_console, Environment, ResultsSink};
use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;

/// Runs the command line and returns the process exit code (see [`exit`]).
pub fn cli_main(argv: Vec<OsString>, loader: &dyn SimulationLoader) -> i32 {
    // Every virtual user holds a connection: allow as many open files as the system lets us.
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(err) => {
            let code = if err.use_stderr() { exit::INVALID_INPUT } else { exit::OK };
            let _ = err.print();
            return code;
        }
    };
    match dispatch(cli, loader) {
        Ok(code) => code,
        Err(Failure::Invalid(message)) => {
            eprintln!("error: {message}");
            exit::INVALID_INPUT
        }
        Err(Failure::Runtime(err)) => {
            eprintln!("error: {err:#}");
            exit::RUN_FAILED
        }
    }
}

/// Why a command could not do its job, which decides the exit code.
pub(crate) enum Failure {
    /// The user's input is wrong (exit 2).
    Invalid(String),
    /// Something failed while running (exit 3).
    Runtime(anyhow::Error),
}

impl From<anyhow::Error> for Failure {
    fn from(err: anyhow::Error) -> Self {
        Failure::Runtime(err)
    }
}

fn dispatch(cli: Cli, loader: &dyn SimulationLoader) -> Result<i32, Failure> {
    match cli.command {
        Command::Run(args) => {
            let plan = load_plan(&args.file, &args.params, loader)?;
            execute(plan, &args.output, &loader.front_end())
        }
        Command::Plan { file, params } => {
            let plan = load_plan(&file, &params, loader)?;
            println!("{}", plan.to_json_pretty());
            Ok(exit::OK)
        }
        Command::Http(args) => {
            let plan = quick::plan(&args).map_err(Failure::Invalid)?;
            execute(plan, &args.output, "cli")
        }
        Command::Demo { users, output } => {
            let server = horde_target::TargetServer::start("127.0.0.1:0".parse().expect("a socket address"))
                .context("starting the built-in target")?;
            eprintln!("horde demo: built-in target on {}", server.base_url());
            let simulation = loader.demo_simulation().map_err(|e| Failure::Invalid(e.message))?;
            let params = vec![format!("base_url={}", server.base_url()), format!("users={users}")];
            let plan = load_plan(&simulation, &params, loader)?;
            let code = execute(plan, &output, &loader.front_end())?;
            let stats = server.stats();
            eprintln!(
                "horde demo: the target served {} requests and refused {} stale ViewStates",
                stats.total, stats.view_state_rejections
            );
            Ok(code)
        }
        Command::Target { host, port, work_slots } => {
            let addr = format!("{host}:{port}");
            let addr = addr.parse().map_err(|_| Failure::Invalid(format!("{addr} is not a socket address")))?;
            let options = horde_target::TargetOptions { work_slots };
            let server =
                horde_target::TargetServer::start_with(addr, options).with_context(|| format!("binding {addr}"))?;
            // Tests and scripts read this line to learn the port.
            println!("horde target listening on {}", server.base_url());
            signals::wait_for_termination();
            drop(server);
            Ok(exit::OK)
        }
        Command::Sweep(args) => sweep::sweep(&args, loader),
        Command::Couchdb(args) => couchdb::couchdb(&args),
        Command::Report { results } => {
            let summary = horde_report::read_summary(&results).map_err(|e| Failure::Invalid(e.to_string()))?;
            print!("{}", render_console(&summary));
            Ok(exit::OK)
        }
    }
}

/// Reads a plan file or runs a simulation, then validates and lowers it; every problem is
/// listed with its path.
pub(crate) fn load_plan(file: &Path, params: &[String], loader: &dyn SimulationLoader) -> Result<Plan, Failure> {
    let is_python = file.extension().is_some_and(|e| e == "py");
    let text = if is_python {
        let pairs = parse_params(params)?;
        loader.load(file, &pairs).map_err(|e| Failure::Invalid(e.message))?
    } else {
        if !params.is_empty() {
            return Err(Failure::Invalid(format!(
                "-D parameters apply to Python simulations; {} is a plan file",
                file.display()
            )));
        }
        std::fs::read_to_string(file).map_err(|e| Failure::Invalid(format!("cannot read {}: {e}", file.display())))?
    };
    let mut plan = Plan::from_json(&text).map_err(|e| {
        let at = if e.path.is_empty() { String::new() } else { format!(" at {}", e.path) };
        Failure::Invalid(format!("invalid plan {}{at}: {}", file.display(), e.message))
    })?;
    if plan.base_dir.is_none() {
        let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
        plan.base_dir = Some(dir.to_string_lossy().into_owned());
    }
    if let Err(errors) = lower(&plan) {
        return Err(Failure::Invalid(invalid_plan_message(file, &errors)));
    }
    Ok(plan)
}

fn invalid_plan_message(file: &Path, errors: &[horde_plan::PlanError]) -> String {
    let mut message = format!(
        "invalid plan {} ({} problem{}):",
        file.display(),
        errors.len(),
        if errors.len() == 1 { "" } else { "s" }
    );
    for error in errors {
        message.push_str(&format!(
            "\n  {}: {}",
            if error.path.is_empty() { "(plan)" } else { &error.path },
            error.message
        ));
    }
    message
}

fn parse_params(params: &[String]) -> Result<Vec<(String, String)>, Failure> {
    params
        .iter()
        .map(|p| match p.split_once('=') {
            Some((name, value)) if !name.is_empty() => Ok((name.to_string(), value.to_string())),
            _ => Err(Failure::Invalid(format!("-D {p:?}: expected NAME=VALUE"))),
        })
        .collect()
}

/// Runs a plan with results on disk, progress on stderr and the summary on stdout.
fn execute(plan: Plan, output: &args::OutputArgs, front_end: &str) -> Result<i32, Failure> {
    let dir = create_results_dir(&output.results, &plan.name).map_err(|e| Failure::Runtime(e.into()))?;
    eprintln!("horde: running; results in {}", dir.display());
    let (status, summary) = run_into(plan, &dir, !output.quiet, front_end)?;
    if !output.quiet {
        print!("{}", render_console(&summary));
    }
    eprintln!("horde: results written to {}", dir.join("summary.json").display());
    Ok(match status {
        RunStatus::Interrupted => exit::INTERRUPTED,
        _ => exit::OK,
    })
}

/// Runs a plan into an existing results directory; Ctrl-C and SIGTERM interrupt it.
pub(crate) fn run_into(
    plan: Plan,
    dir: &Path,
    progress: bool,
    front_end: &str,
) -> Result<(RunStatus, horde_report::Summary), Failure> {
    let program =
        Arc::new(lower(&plan).map_err(|errors| Failure::Invalid(invalid_plan_message(Path::new("plan"), &errors)))?);
    let environment = Environment::detect(worker_count(&program), front_end);
    let mut sink = ResultsSink::new(dir.to_path_buf(), plan, environment, progress);
    let control = RunControl::new();
    signals::route_interruptions_to(&control);
    let result = run(program, &control, &mut sink);
    signals::stop_routing();
    if let Some(err) = sink.write_error.take() {
        return Err(Failure::Runtime(anyhow::Error::new(err)));
    }
    let summary = sink.final_summary.take().expect("a finished run has a final summary");
    Ok((result.status, summary))
}
