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
mod bench;
mod cluster;
mod compare;
mod couchdb;
mod cql;
mod dashboard;
pub mod exit;
mod exports;
mod loader;
mod local_server;
mod metrics_endpoint;
mod output;
mod quick;
mod signals;
mod sql;
mod sweep;
mod target_certificate;
mod transport;
mod trials;

pub use cluster::{run_linked_share, ShareOutcome};
pub use loader::{ClusterOpenError, LoadError, PythonSubprocessLoader, SimulationFile, SimulationLoader};

use anyhow::Context;
use args::{Cli, Command, TargetArgs};
use clap::Parser;
use horde_engine::{lower, run_with_request_log, worker_count, Program, RunControl};
use horde_metrics::RunStatus;
use horde_plan::input::{read_text_bounded, MAX_PLAN_BYTES};
use horde_plan::{Plan, PlanError};
use horde_report::terminal::printable_lines;
use horde_report::{create_results_dir, render_console, Environment, ResultsError, ResultsSink};
use output::{print_text, status};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Runs the command line and returns the process exit code (see [`exit`]).
pub fn cli_main(argv: Vec<OsString>, loader: &dyn SimulationLoader) -> i32 {
    // Every virtual user holds a connection: allow as many open files as the system lets us.
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    signals::listen();
    // An earlier command in this process (the Python binding) may have been interrupted.
    signals::forget_interruption();
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(err) => {
            let code = if err.use_stderr() { exit::INVALID_INPUT } else { exit::OK };
            let _ = err.print();
            return code;
        }
    };
    // A panic is a bug in horde: exit 3 (never 1, never the thresholds' 99) with the panic's
    // message, which the default hook has already printed.
    let dispatched = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| dispatch(cli, loader)));
    let Ok(dispatched) = dispatched else {
        status!("error: internal error in horde (a bug: please report it with the message above)");
        return exit::RUN_FAILED;
    };
    match dispatched {
        Ok(code) => code,
        Err(failure) => {
            let (code, message) = exit_code_and_message(failure);
            status!("{message}");
            code
        }
    }
}

/// A command's failure as its exit code and the line that says why.
pub(crate) fn exit_code_and_message(failure: Failure) -> (i32, String) {
    match failure {
        Failure::Invalid(message) => (exit::INVALID_INPUT, format!("error: {}", printable_lines(&message))),
        Failure::Runtime(err) => (exit::RUN_FAILED, format!("error: {}", printable_lines(&format!("{err:#}")))),
        Failure::Interrupted(what) => (exit::INTERRUPTED, format!("horde: interrupted {what}")),
    }
}

/// Why a command could not do its job, which decides the exit code.
pub(crate) enum Failure {
    /// The user's input is wrong (exit 2).
    Invalid(String),
    /// Something failed while running (exit 3).
    Runtime(anyhow::Error),
    /// Ctrl-C or SIGTERM before a run began (exit 130); says what was going on.
    Interrupted(&'static str),
}

impl From<anyhow::Error> for Failure {
    fn from(err: anyhow::Error) -> Self {
        Failure::Runtime(err)
    }
}

impl From<ResultsError> for Failure {
    fn from(err: ResultsError) -> Self {
        Failure::Runtime(anyhow::Error::new(err))
    }
}

/// Problems with a command's flags, all of them, in one message.
pub(crate) fn invalid_flags(problems: Vec<String>) -> Failure {
    let mut message =
        format!("invalid flags ({} problem{}):", problems.len(), if problems.len() == 1 { "" } else { "s" });
    for problem in problems {
        message.push_str("\n  ");
        message.push_str(&problem);
    }
    Failure::Invalid(message)
}

fn dispatch(cli: Cli, loader: &dyn SimulationLoader) -> Result<i32, Failure> {
    match cli.command {
        Command::Run(args) => match (args.trials, args.files.as_slice()) {
            (Some(_), _) if args.segment.cluster.cluster.is_some() => Err(Failure::Invalid(
                "--trials runs on one machine for now: not with --cluster (run each trial with --cluster instead)"
                    .into(),
            )),
            (Some(_), _) if !matches!(args.segment.role(), args::ClusterRole::Local) => {
                Err(Failure::Invalid("--trials runs on one machine: not with a share or a coordinator".into()))
            }
            (Some(count), _) => trials::trials(&args, count, loader),
            (None, [file]) => {
                let flags = PlanFlags { transport: args.transport.clone(), segment: args.segment.clone() };
                let program = load_program(file, &args.params, &args.thresholds.thresholds, &flags, loader)?;
                let simulation = simulation_file(file, &args.params)?;
                let needs = cluster::ClusterNeeds::of(&program, simulation);
                let cluster = cluster::open(&args.segment.cluster, &program.plan, true, needs, loader)?;
                let run = RunOutputs {
                    name: &results_name(file),
                    output: &args.output,
                    exports: Some(&args.exports),
                    role: cluster.as_ref().map_or_else(|| args.segment.role(), cluster::OpenCluster::role),
                };
                execute(program, &run, &args.thresholds, &loader.front_end())
            }
            (None, _) => Err(Failure::Invalid(
                "two plans are run with --trials N (interleaved, then compared): horde run --trials 5 A.py B.py".into(),
            )),
        },
        Command::Compare(args) => compare::compare(&args),
        Command::Bench(args) => bench::bench(&args, loader),
        Command::Plan { file, params } => {
            let program = load_program(&file, &params, &[], &PlanFlags::default(), loader)?;
            print_text(&(program.plan.to_json_pretty() + "\n"));
            Ok(exit::OK)
        }
        Command::Http(args) => {
            let program = quick::program(&args).map_err(invalid_flags)?;
            let needs = cluster::ClusterNeeds::of(&program, None);
            let cluster = cluster::open(&args.segment.cluster, &program.plan, true, needs, loader)?;
            let run = RunOutputs {
                name: &program.plan.name.clone(),
                output: &args.output,
                exports: Some(&args.exports),
                role: cluster.as_ref().map_or_else(|| args.segment.role(), cluster::OpenCluster::role),
            };
            execute(program, &run, &args.thresholds, "cli")
        }
        Command::Demo { users, output } => {
            // The target serves HTTPS and HTTP/2, as most real sites do: the demo verifies its
            // certificate (written for the run, removed after) and negotiates h2 by ALPN.
            let options = horde_target::TargetOptions { tls: true, ..horde_target::TargetOptions::default() };
            let server =
                horde_target::TargetServer::start_with("127.0.0.1:0".parse().expect("a socket address"), options)
                    .context("starting the built-in target")?;
            let pem = server.cert_pem().expect("a TLS target has a certificate");
            let certificate = target_certificate::write(pem, None, server.addr().port())?;
            status!("horde demo: built-in target on {} (HTTPS, HTTP/2)", server.base_url());
            let simulation = loader.demo_simulation().map_err(load_failure)?;
            let params = vec![
                format!("base_url={}", server.base_url()),
                format!("users={users}"),
                format!("ca_file={}", certificate.path().display()),
                "http2=1".to_string(),
            ];
            let program = load_program(&simulation, &params, &[], &PlanFlags::default(), loader)?;
            let run = RunOutputs {
                name: &results_name(&simulation),
                output: &output,
                exports: None,
                role: Default::default(),
            };
            let code = execute(program, &run, &args::GateArgs::default(), &loader.front_end())?;
            let stats = server.stats();
            status!(
                "horde demo: the target served {} requests and refused {} stale ViewStates",
                stats.total,
                stats.view_state_rejections
            );
            Ok(code)
        }
        Command::Target(args) => serve_target(args),
        Command::Import(args) => python_command("import", &import_flags(&args), loader),
        Command::Record(args) => python_command("record", &record_flags(&args), loader),
        Command::Sweep(args) => sweep::sweep(&args, loader),
        Command::Couchdb(args) => couchdb::couchdb(&args),
        Command::Sql(args) => sql::sql(&args),
        Command::Cql(args) => cql::cql(&args),
        Command::Report { results, html: true } => {
            let dir =
                if results.is_file() { results.parent().map(Path::to_path_buf).unwrap_or_default() } else { results };
            if !dir.join("summary.json").is_file() && !dir.join("sweep.json").is_file() {
                return Err(Failure::Invalid(format!(
                    "{} is not a results directory: it has neither summary.json nor sweep.json",
                    dir.display()
                )));
            }
            let path = horde_report::write_html(&dir).map_err(|e| match e {
                ResultsError::Write { .. } => Failure::Runtime(anyhow::Error::new(e)),
                _ => Failure::Invalid(e.to_string()),
            })?;
            print_text(&format!("{}\n", path.display()));
            Ok(exit::OK)
        }
        Command::Report { results, html: false } => {
            let summary = horde_report::read_summary(&results).map_err(|e| Failure::Invalid(e.to_string()))?;
            print_text(&render_console(&summary));
            Ok(exit::OK)
        }
    }
}

/// `horde import` and `horde record` live in Python (horde.recording): the flags parsed here
/// go to it as JSON, and it answers with the exit code. It handles Ctrl-C itself (the recorder
/// writes its file then).
fn python_command(command: &str, flags: &serde_json::Value, loader: &dyn SimulationLoader) -> Result<i32, Failure> {
    let _quiet = signals::while_python_command();
    loader.run_python_command(command, &flags.to_string()).map_err(|error| {
        if error.interrupted {
            Failure::Interrupted(if command == "record" { "while recording" } else { "while importing" })
        } else {
            Failure::Runtime(anyhow::anyhow!(error.message))
        }
    })
}

fn path_text(path: &Option<PathBuf>) -> serde_json::Value {
    path.as_ref().map(|p| p.to_string_lossy().into_owned()).into()
}

fn import_flags(args: &args::ImportArgs) -> serde_json::Value {
    serde_json::json!({
        "har": args.har.to_string_lossy(),
        "output": path_text(&args.output),
        "base_url": args.base_url,
        "files": path_text(&args.files),
        "resources": args.resources,
        "correlate": !args.no_correlate,
        "validate": args.validate,
        "second": path_text(&args.second),
        "rounds": args.rounds,
        "name": args.name,
        "force": args.force,
    })
}

fn record_flags(args: &args::RecordArgs) -> serde_json::Value {
    serde_json::json!({
        "host": args.host,
        "port": args.port,
        "output": args.output.to_string_lossy(),
        "browser": args.browser,
        "headless": args.headless,
        "chromium": path_text(&args.chromium),
        "ca_dir": path_text(&args.ca_dir),
    })
}

/// `horde target`: serves the built-in target until Ctrl-C or SIGTERM.
fn serve_target(args: TargetArgs) -> Result<i32, Failure> {
    let TargetArgs { host, port, work_slots, tls, cert_out, eventual_delay_ms } = args;
    let addr = format!("{host}:{port}");
    let addr = addr.parse().map_err(|_| Failure::Invalid(format!("{addr} is not a socket address")))?;
    let eventual_delay = std::time::Duration::from_millis(eventual_delay_ms);
    let options = horde_target::TargetOptions { work_slots, tls, eventual_delay };
    let server = horde_target::TargetServer::start_with(addr, options).with_context(|| format!("binding {addr}"))?;
    // Written before anything is printed: whoever reads the lines can use the file.
    let certificate = match server.cert_pem() {
        Some(pem) => Some(target_certificate::write(pem, cert_out, server.addr().port())?),
        None => None,
    };
    // Tests and scripts read the first line to learn the port (and the scheme).
    let mut text = format!("horde target listening on {}\n", server.base_url());
    if let (Some(fingerprint), Some(certificate)) = (server.fingerprint(), &certificate) {
        text.push_str(&format!("horde target certificate SHA-256 fingerprint: {fingerprint}\n"));
        text.push_str(&format!("horde target certificate (for --cacert): {}\n", certificate.path().display()));
    }
    print_text(&text);
    signals::wait_for_termination();
    drop(server);
    drop(certificate);
    Ok(exit::OK)
}

/// What a file given to `run`, `plan` or `sweep` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InputKind {
    Simulation,
    PlanFile,
}

/// `.py` (in any case) is a simulation, `.json` a plan; anything else is a plan if it reads
/// like JSON, and refused by name otherwise.
fn input_kind(file: &Path) -> Result<InputKind, Failure> {
    let extension = file.extension().map(|e| e.to_string_lossy().to_ascii_lowercase());
    match extension.as_deref() {
        Some("py") => return Ok(InputKind::Simulation),
        Some("json") => return Ok(InputKind::PlanFile),
        _ => {}
    }
    let looks_like_json = read_text_bounded(file, MAX_PLAN_BYTES)
        .map_err(|e| Failure::Invalid(format!("cannot read {}: {e}", file.display())))?
        .trim_start()
        .starts_with('{');
    if looks_like_json {
        Ok(InputKind::PlanFile)
    } else {
        Err(Failure::Invalid(format!(
            "{}: horde runs Python simulations (.py) and plans (.json); this is neither",
            file.display()
        )))
    }
}

/// What a run's results directory is named after: the simulation's or the plan file's stem
/// (`checkout` for checkout.py), which the user chose, rather than its first scenario.
pub(crate) fn results_name(file: &Path) -> String {
    file.file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .filter(|stem| !stem.is_empty())
        .unwrap_or_else(|| "run".into())
}

fn load_failure(error: LoadError) -> Failure {
    if error.interrupted {
        Failure::Interrupted("while loading the simulation")
    } else {
        Failure::Invalid(error.message)
    }
}

/// The flags a command puts over the plan it loads.
#[derive(Default)]
pub(crate) struct PlanFlags {
    pub transport: args::TransportArgs,
    pub segment: args::SegmentArgs,
}

/// Reads a plan file or runs a simulation, adds the command line's thresholds and puts its
/// transport and segment flags over the plan's, then validates and lowers it; every problem
/// is listed with its path.
pub(crate) fn load_program(
    file: &Path,
    params: &[String],
    thresholds: &[String],
    flags: &PlanFlags,
    loader: &dyn SimulationLoader,
) -> Result<Program, Failure> {
    let text = match input_kind(file)? {
        InputKind::Simulation => {
            let pairs = parse_params(params)?;
            let _loading = signals::while_loading();
            loader.load(file, &pairs).map_err(load_failure)?
        }
        InputKind::PlanFile => {
            if !params.is_empty() {
                return Err(Failure::Invalid(format!(
                    "-D parameters apply to Python simulations; {} is a plan file",
                    file.display()
                )));
            }
            read_text_bounded(file, MAX_PLAN_BYTES)
                .map_err(|e| Failure::Invalid(format!("cannot read {}: {e}", file.display())))?
        }
    };
    if signals::interrupted() {
        return Err(Failure::Interrupted("while loading the simulation"));
    }
    let mut plan = Plan::from_json(&text).map_err(|errors| Failure::Invalid(invalid_plan_message(file, &errors)))?;
    plan.thresholds.extend(thresholds.iter().cloned());
    flags.transport.apply(&mut plan.protocol, None).map_err(invalid_flags)?;
    flags.segment.apply(&mut plan.options);
    if plan.base_dir.is_none() {
        let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
        plan.base_dir = Some(dir.to_string_lossy().into_owned());
    }
    let is_simulation = matches!(input_kind(file)?, InputKind::Simulation);
    let mut program = lower(&plan).map_err(|errors| Failure::Invalid(invalid_plan_message(file, &errors)))?;
    if let Some(functions) = loader.session_functions().filter(|_| is_simulation) {
        program.attach_functions(functions);
    }
    if !program.session_function_keys.is_empty() && program.session_functions.is_none() {
        return Err(Failure::Invalid(format!(
            "{}: the plan calls session functions ({}), which live only in the Python simulation that defined \
             them: run that simulation (.py) with the horde Python package",
            file.display(),
            program.session_function_keys.join(", ")
        )));
    }
    Ok(program)
}

pub(crate) fn invalid_plan_message(file: &Path, errors: &[PlanError]) -> String {
    let mut message = format!(
        "invalid plan {} ({} problem{}):",
        file.display(),
        errors.len(),
        if errors.len() == 1 { "" } else { "s" }
    );
    for error in errors {
        // A message of several lines (a regex error with its caret) stays under its path.
        message.push_str(&format!(
            "\n  {}: {}",
            if error.path.is_empty() { "(plan)" } else { &error.path },
            error.message.replace('\n', "\n      ")
        ));
    }
    message
}

/// `file` with its `-D` parameters when it is a Python simulation (whose session functions a
/// cluster's shares load), None for a plan file.
pub(crate) fn simulation_file(file: &Path, params: &[String]) -> Result<Option<SimulationFile>, Failure> {
    if input_kind(file)? != InputKind::Simulation {
        return Ok(None);
    }
    let path = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    Ok(Some(SimulationFile { path, params: parse_params(params)? }))
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

/// Lowers a plan that is about to run, and checks that this machine can run it (below).
/// `source` names the plan in messages (the command that made it).
pub(crate) fn prepare(plan: &Plan, source: &Path) -> Result<Program, Failure> {
    let program = lower(plan).map_err(|errors| Failure::Invalid(invalid_plan_message(source, &errors)))?;
    ready_to_run(&program)?;
    Ok(program)
}

/// [`prepare`] for a coordinator of shares: they hold the connections, and each checks its
/// own machine's open-file limit before it reports ready.
pub(crate) fn prepare_to_coordinate(plan: &Plan, source: &Path) -> Result<Program, Failure> {
    let program = lower(plan).map_err(|errors| Failure::Invalid(invalid_plan_message(source, &errors)))?;
    preflight(&program)?;
    Ok(program)
}

/// What a lowered program needs of this machine and of its servers before it runs.
pub(crate) fn ready_to_run(program: &Program) -> Result<(), Failure> {
    check_capacity(program)?;
    preflight(program)
}

/// What the plan's protocols check before a run (a database that does not answer): the
/// protocol's own message, exit 3.
fn preflight(program: &Program) -> Result<(), Failure> {
    horde_engine::preflight(program).map_err(|message| Failure::Runtime(anyhow::anyhow!(message)))
}

/// Whether this machine can run the program: its users that must hold connections at once
/// fit in the open-file limit. Nothing is created yet.
fn check_capacity(program: &Program) -> Result<(), Failure> {
    let needed = horde_engine::connections_needed_at_once(program);
    let capacity = horde_engine::connection_capacity();
    if needed > capacity {
        return Err(Failure::Invalid(format!(
            "{needed} users at once need {needed} connections, but the open-file limit lets this process hold {capacity} \
             (the limit, less what is open and a reserve for the results): raise it (ulimit -n) or run fewer users"
        )));
    }
    Ok(())
}

/// Where a run's results go: its directory, named after `name`, and the exports asked for;
/// and, in a run of several processes, where its intervals go or come from.
struct RunOutputs<'a> {
    name: &'a str,
    output: &'a args::OutputArgs,
    exports: Option<&'a args::ExportArgs>,
    role: args::ClusterRole,
}

/// Runs a plan with results on disk, progress on stderr and the summary on stdout (with
/// `-q`, only the results directory's path, as the last line); the thresholds' verdicts decide
/// the exit code and go where CI reads them.
fn execute(program: Program, run: &RunOutputs, gate: &args::GateArgs, front_end: &str) -> Result<i32, Failure> {
    let RunOutputs { name, output, exports, ref role } = *run;
    // A coordinator sends nothing: its shares hold the connections.
    if !role.coordinates() {
        check_capacity(&program)?;
    }
    preflight(&program)?;
    // Every flag is checked before anything is created.
    let requested = match exports {
        Some(exports) => exports::Requested::parse(exports)?,
        None => exports::Requested::default(),
    };
    // Bound first: a port in use is found before anything is created or sent.
    let live = gate.metrics.map(|address| (address, horde_report::LiveMetrics::new()));
    let endpoint = match &live {
        Some((address, live)) => Some(metrics_endpoint::MetricsEndpoint::start(*address, live.clone())?),
        None => None,
    };
    let watch = gate.dashboard.dashboard.is_some().then(horde_report::ResultsWatch::new);
    let dashboard = match &watch {
        Some(watch) => Some(dashboard::Dashboard::start(&gate.dashboard, watch.clone())?),
        None => None,
    };
    let dir = results_directory(output, name)?;
    let extras = requested.open(&program)?;
    let hooks = program.session_functions.clone();
    if let Some(endpoint) = &endpoint {
        status!("horde: live metrics at http://{}/metrics", endpoint.address);
    }
    if let Some(hooks) = &hooks {
        hooks.before_run().map_err(|message| Failure::Runtime(anyhow::anyhow!("{message}")))?;
    }
    status!("horde: running; results in {}", dir.display());
    let live = LiveOutputs { metrics: live.map(|(_, live)| live), results: watch };
    let finished = run_into_with(program, &dir, !output.quiet, front_end, live, extras, role)?;
    drop(endpoint);
    if let Some(dashboard) = dashboard {
        dashboard.close();
    }
    if !output.quiet {
        print_text(&render_console(&finished.summary));
    }
    finished.results_written()?;
    status!("horde: results written to {}", dir.join("summary.json").display());
    status!("horde: report in {}", dir.join("report.html").display());
    ci_reports(&finished.summary, gate)?;
    if let Some(hooks) = &hooks {
        let summary = serde_json::to_string(&finished.summary).expect("a summary serializes");
        hooks.after_run(&summary).map_err(|message| Failure::Runtime(anyhow::anyhow!("{message}")))?;
    }
    let thresholds_failed = finished.summary.thresholds.iter().any(|t| !t.passed());
    if thresholds_failed && finished.status != RunStatus::Interrupted {
        let failed = finished.summary.thresholds.iter().filter(|t| !t.passed()).count();
        status!("horde: {failed} of {} thresholds failed", finished.summary.thresholds.len());
    }
    let lost: Vec<&horde_metrics::MachineStats> =
        finished.summary.machines.iter().filter(|m| m.lost.is_some()).collect();
    for m in &lost {
        // Its last window: the one to the run's end (earlier ones were replacements').
        let missed = m.missed.last().map(missed_load).unwrap_or_default();
        status!(
            "error: a share was lost, its load not delivered{missed}: {}",
            printable_lines(m.lost.as_deref().unwrap_or_default())
        );
    }
    // A share replaced on another machine (--on-worker-loss replace) still missed what was
    // due until the takeover: horde did not deliver the whole load either.
    let replaced: Vec<&horde_metrics::ShareReplacement> =
        finished.summary.machines.iter().flat_map(|m| &m.replaced).collect();
    for m in &finished.summary.machines {
        for (i, r) in m.replaced.iter().enumerate() {
            let missed = m.missed.get(i).map(missed_load).unwrap_or_default();
            status!(
                "error: a share was lost and replaced, its load from interval {} to {:.1} s not delivered{missed}: {}",
                r.last_interval,
                r.resume_after_s,
                printable_lines(&r.reason)
            );
        }
    }
    if output.quiet {
        // Scripts and CI read the last line of stdout to find the results.
        print_text(&format!("{}\n", dir.display()));
    }
    // A share whose own log counted more than the coordinator merged: intervals lost on the
    // way, so the results lack part of what was sent.
    let unmerged: Vec<&horde_metrics::MachineStats> =
        finished.summary.machines.iter().filter(|m| m.verified == Some(false)).collect();
    for m in &unmerged {
        status!(
            "error: share {} counted {} requests in its own log, not all of which reached the coordinator: some \
             of its intervals were lost on the way, and the results lack them",
            m.share,
            m.log_requests.unwrap_or(0)
        );
    }
    let share_lost = (!lost.is_empty() || !replaced.is_empty() || !unmerged.is_empty()) && !role.worker_loss_allowed();
    Ok(run_exit_code(finished.status, share_lost, thresholds_failed))
}

/// An interruption wins (the verdicts judged part of a run); then a lost worker (horde did
/// not deliver the load); then the thresholds.
fn run_exit_code(status: RunStatus, share_lost: bool, thresholds_failed: bool) -> i32 {
    match status {
        RunStatus::Interrupted => exit::INTERRUPTED,
        _ if share_lost => exit::WORKER_LOST,
        RunStatus::AbortedByThreshold => exit::THRESHOLDS_FAILED,
        _ if thresholds_failed => exit::THRESHOLDS_FAILED,
        _ => exit::OK,
    }
}

/// The thresholds' JUnit XML (`--junit`), and the job summary GitHub Actions shows when it
/// names a file in `GITHUB_STEP_SUMMARY` (appended to, as GitHub expects).
fn ci_reports(summary: &horde_report::Summary, gate: &args::GateArgs) -> Result<(), Failure> {
    if let Some(path) = &gate.junit {
        std::fs::write(path, horde_report::render_junit(summary))
            .with_context(|| format!("writing the JUnit report {}", path.display()))?;
        status!("horde: thresholds' JUnit report written to {}", path.display());
    }
    if let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        use std::io::Write;
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut file| file.write_all(horde_report::render_job_summary(summary).as_bytes()));
        if let Err(err) = written {
            // The run's verdict must not be lost for want of a job page.
            status!("horde: cannot write the job summary {}: {err}", Path::new(&path).display());
        }
    }
    Ok(())
}

/// The run's results directory: exactly `--results-dir`, or a new one under `--results` named
/// after `name` and the time.
pub(crate) fn results_directory(output: &args::OutputArgs, name: &str) -> Result<PathBuf, Failure> {
    match &output.results_dir {
        Some(dir) => exact_results_dir(dir),
        None => Ok(create_results_dir(results_parent(output)?, name)?),
    }
}

/// `--results DIR`, where runs' directories are made: a file there is the user's mistake,
/// named as such (exit 2), not a directory that cannot be made.
pub(crate) fn results_parent(output: &args::OutputArgs) -> Result<&Path, Failure> {
    let parent = output.results.as_path();
    if parent.exists() && !parent.is_dir() {
        return Err(Failure::Invalid(format!(
            "--results {}: this is a file, not a directory (--results names the directory in which each run gets a \
             directory of its own; it is made when missing)",
            parent.display()
        )));
    }
    Ok(parent)
}

/// `--results-dir DIR`: used as it is, created if missing. One that holds anything but hidden
/// files (a `.gitkeep`) is refused: results are never mixed with, or written over, others.
fn exact_results_dir(dir: &Path) -> Result<PathBuf, Failure> {
    match std::fs::read_dir(dir) {
        Ok(entries) => {
            let visible: Vec<String> = entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| !name.starts_with('.'))
                .collect();
            if let Some(first) = visible.first() {
                return Err(Failure::Invalid(format!(
                    "--results-dir {}: the directory is not empty (it holds {first:?}{}); give a new or empty \
                     directory, or remove this one first",
                    dir.display(),
                    if visible.len() > 1 { format!(" and {} more", visible.len() - 1) } else { String::new() }
                )));
            }
            Ok(dir.to_path_buf())
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(|cause| ResultsError::Create { path: dir.to_path_buf(), cause })?;
            Ok(dir.to_path_buf())
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotADirectory => {
            Err(Failure::Invalid(format!("--results-dir {}: this is a file, not a directory", dir.display())))
        }
        Err(cause) => Err(ResultsError::Create { path: dir.to_path_buf(), cause }.into()),
    }
}

/// A run that ended: how, what it measured, and whether its results reached the disk.
pub(crate) struct FinishedRun {
    pub status: RunStatus,
    pub summary: horde_report::Summary,
    pub dir: PathBuf,
    write_error: Option<ResultsError>,
}

impl FinishedRun {
    /// The error of the results that could not be written (exit 3), after the summary was
    /// shown: measurements are never thrown away for want of a disk.
    pub fn results_written(&self) -> Result<(), Failure> {
        match &self.write_error {
            None => Ok(()),
            Some(err) => Err(Failure::Runtime(anyhow::anyhow!(
                "{err}; the summary above is all that is left of this run in {}",
                self.dir.display()
            ))),
        }
    }
}

/// What a run publishes while it goes: the OpenMetrics text (`--metrics`), and each new state
/// of its results directory (`--dashboard`).
#[derive(Default, Clone)]
pub(crate) struct LiveOutputs {
    pub metrics: Option<horde_report::LiveMetrics>,
    pub results: Option<horde_report::ResultsWatch>,
}

/// Runs a lowered plan into an existing results directory; Ctrl-C and SIGTERM interrupt it.
/// A directory where summary.json cannot be written is found before the run starts.
pub(crate) fn run_into(
    program: Program,
    dir: &Path,
    progress: bool,
    front_end: &str,
    live: LiveOutputs,
) -> Result<FinishedRun, Failure> {
    run_into_with(program, dir, progress, front_end, live, exports::Opened::default(), &args::ClusterRole::Local)
}

/// [`run_into`], also writing the exports asked for (Locust's files, the request log), as
/// `role` says: alone, as a share, or as the coordinator of shares.
pub(crate) fn run_into_with(
    program: Program,
    dir: &Path,
    progress: bool,
    front_end: &str,
    live: LiveOutputs,
    extras: exports::Opened,
    role: &args::ClusterRole,
) -> Result<FinishedRun, Failure> {
    let program = Arc::new(program);
    let workers = worker_count(&program);
    let environment = Environment::detect(workers, front_end);
    let mut sink = ResultsSink::new(dir.to_path_buf(), program.plan.clone(), environment, progress);
    if let Some(metrics) = live.metrics {
        sink.publish_live_metrics(metrics);
    }
    if let Some(watch) = live.results {
        sink.announce_to(watch);
    }
    if let Some(locust) = extras.locust {
        sink = sink.with_locust(locust);
    }
    sink.write_initial(workers)?;
    if let Some(err) = sink.write_error.take() {
        return Err(err.into());
    }
    let (log_writer, log_output) = match extras.request_log {
        Some((writer, output)) => (Some(writer), Some(output)),
        None => (None, None),
    };
    let control = RunControl::new();
    signals::route_interruptions_to(&control);
    let result = match role {
        args::ClusterRole::Local => Ok(run_with_request_log(program, &control, &mut sink, log_output)),
        args::ClusterRole::Share { spool, ready_timeout } => {
            cluster::run_share(program, &control, &mut sink, log_output, spool, *ready_timeout)
        }
        args::ClusterRole::Coordinator { shares, spool, ready_timeout } => {
            let options = horde_engine::cluster::CoordinatorOptions {
                ready_timeout: *ready_timeout,
                ..horde_engine::cluster::CoordinatorOptions::new(*shares)
            };
            cluster::coordinate(program, &control, &mut sink, spool, &options)
        }
        args::ClusterRole::LinkedShare(link) => {
            horde_engine::cluster::run_share(program, &control, &mut sink, log_output, link.clone())
                .map_err(cluster::failure)
        }
        args::ClusterRole::Hosts { hosts, loss, weights } => {
            cluster::coordinate_hosts(program, &control, &mut sink, hosts.clone(), weights, loss.policy, log_output)
        }
    };
    signals::stop_routing();
    let result = result?;
    let summary = sink.final_summary.take().expect("a finished run has a final summary");
    let mut write_error = sink.write_error.take();
    if let Some(writer) = log_writer {
        let path = writer.path().to_path_buf();
        if let Err(cause) = writer.finish() {
            write_error.get_or_insert(ResultsError::Write { path, cause });
        }
    }
    Ok(FinishedRun { status: result.status, summary, dir: dir.to_path_buf(), write_error })
}

/// A lost share's missed load, as the error line gives it: ` (120 arrivals, 8.0 user-seconds
/// from 2.0 s to 8.0 s)`, the parts its schedule has (throttle slots, arrivals, user time).
fn missed_load(missed: &horde_metrics::MissedLoad) -> String {
    let mut parts = Vec::new();
    if missed.throttle_slots > 0 {
        parts.push(format!("{} requests of the throttle", missed.throttle_slots));
    }
    if missed.arrivals > 0 || (missed.user_seconds == 0.0 && missed.throttle_slots == 0) {
        parts.push(format!("{} arrivals", missed.arrivals));
    }
    if missed.user_seconds > 0.0 {
        parts.push(format!("{:.1} user-seconds", missed.user_seconds));
    }
    format!(" ({} from {:.1} s to {:.1} s)", parts.join(", "), missed.from_s, missed.to_s)
}
