//! `horde sql`: seed 000's ten-million-row experiment as one command. The flags become a Plan
//! of one scenario per phase and strategy, each `after` the one before, whose users are the
//! experiment's threads (`sql_workload` steps); this module checks the flags, makes sure the
//! database answers before anything is measured, and turns the phases' outcome into the exit
//! code.

use crate::args::SqlArgs;
use crate::output::{print_text, status};
use crate::{exit, invalid_flags, prepare, results_directory, run_into, Failure};
use horde_metrics::RunStatus;
use horde_plan::{Injection, Plan, RunOptions, Scenario, SqlPhase, SqlStep, SqlStrategy, SqlWorkload};
use horde_report::render_console;
use horde_report::terminal::printable;

/// The experiment once every flag holds.
struct Experiment {
    url: String,
    /// Each phase with its strategies, in order.
    phases: Vec<(SqlPhase, Vec<SqlStrategy>)>,
    threads: u32,
}

/// The database default threads: SQLite has one writer at a time.
fn default_threads(url: &str) -> u32 {
    if url.starts_with("sqlite:") {
        1
    } else {
        4
    }
}

impl Experiment {
    fn from_args(args: &SqlArgs, url: String) -> Result<Experiment, Vec<String>> {
        let mut problems = Vec::new();
        let database = horde_engine::redacted_url(&url);
        let is = |scheme: &[&str]| scheme.iter().any(|s| url.starts_with(&format!("{s}:")));
        if url == "sqlite::memory:" {
            problems.push(
                "--url sqlite::memory:: every connection gets an in-memory database of its own, so no phase would see \
                 the last one's table: give a file (sqlite:///path/file.db)"
                    .to_string(),
            );
        }
        let strategies =
            |flag: &str, phase: SqlPhase, names: &[String], problems: &mut Vec<String>| -> Vec<SqlStrategy> {
                let mut chosen = Vec::new();
                let names: Vec<&str> = names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()).collect();
                if names.is_empty() {
                    problems.push(format!("{flag} names no strategy"));
                }
                for name in names {
                    match SqlStrategy::parse(name).filter(|s| phase.strategies().contains(s)) {
                        Some(strategy) if chosen.contains(&strategy) => {
                            problems.push(format!("{flag} names {name} twice"))
                        }
                        Some(strategy) => chosen.push(strategy),
                        None => {
                            let known: Vec<&str> = phase.strategies().iter().map(|s| s.as_str()).collect();
                            problems.push(format!(
                                "{flag} {name:?} is not a strategy of the {} phase: {}",
                                phase.as_str(),
                                known.join(", ")
                            ))
                        }
                    }
                }
                chosen
            };
        if let Some(problem) = horde_plan::sql_table_name_problem(&args.table) {
            problems.push(format!("--table {:?}: {problem}", args.table));
        }
        let mut phases = Vec::new();
        for name in args.phases.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
            let phase = match name {
                "create" => (SqlPhase::Create, vec![SqlStrategy::Single]),
                "populate" => {
                    (SqlPhase::Populate, strategies("--populate", SqlPhase::Populate, &args.populate, &mut problems))
                }
                "select" => (SqlPhase::Select, vec![SqlStrategy::Single]),
                "alter" => (SqlPhase::Alter, strategies("--alter", SqlPhase::Alter, &args.alter, &mut problems)),
                "update" => (SqlPhase::Update, strategies("--update", SqlPhase::Update, &args.update, &mut problems)),
                other => {
                    problems
                        .push(format!("--phases {other:?} is not a phase: create, populate, select, alter, update"));
                    continue;
                }
            };
            if phases.iter().any(|(p, _)| *p == phase.0) {
                problems.push(format!("--phases names {name} twice"));
                continue;
            }
            phases.push(phase);
        }
        if phases.is_empty() {
            problems.push("--phases names no phase".to_string());
        }
        let canonical = [SqlPhase::Create, SqlPhase::Populate, SqlPhase::Select, SqlPhase::Alter, SqlPhase::Update];
        let ranks: Vec<usize> = phases.iter().filter_map(|(p, _)| canonical.iter().position(|c| c == p)).collect();
        if ranks.windows(2).any(|pair| pair[0] > pair[1]) {
            problems
                .push("--phases must keep the experiment's order: create, populate, select, alter, update".to_string());
        }
        let pipelined = phases.iter().any(|(_, s)| s.contains(&SqlStrategy::Pipeline));
        if pipelined && !is(&["postgres", "postgresql"]) {
            problems.push(format!(
                "--populate pipeline: only PostgreSQL's protocol lets a connection send statements before the answers \
                 come ({database} is not PostgreSQL)"
            ));
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let threads = args.threads.unwrap_or_else(|| default_threads(&url));
        Ok(Experiment { url, phases, threads })
    }

    fn plan(&self, args: &SqlArgs) -> Plan {
        let mut scenarios: Vec<Scenario> = Vec::new();
        let mut add = |name: String, phase: SqlPhase, strategy: SqlStrategy, threads: u32| {
            let after = scenarios.last().map(|s| s.name.clone());
            scenarios.push(Scenario {
                name: name.clone(),
                steps: vec![SqlStep::SqlWorkload(SqlWorkload {
                    name,
                    url: self.url.clone(),
                    table: args.table.clone(),
                    phase,
                    strategy,
                    rows: args.rows,
                    threads,
                    batch_size: args.batch_size,
                    text_length: args.text_length,
                })
                .into()],
                injection: vec![Injection::AtOnceUsers { users: u64::from(threads) }],
                after,
            });
        };
        if args.replace {
            add("drop before".into(), SqlPhase::Drop, SqlStrategy::Single, 1);
        }
        for (phase, strategies) in &self.phases {
            for strategy in strategies {
                let name = match strategy {
                    SqlStrategy::Single => phase.as_str().to_string(),
                    _ => format!("{} {}", phase.as_str(), strategy.as_str()),
                };
                // One statement does these: one connection.
                let single = matches!(phase, SqlPhase::Create | SqlPhase::Alter) || *strategy == SqlStrategy::Server;
                add(name, *phase, *strategy, if single { 1 } else { self.threads });
            }
        }
        if !args.keep {
            add("drop".into(), SqlPhase::Drop, SqlStrategy::Single, 1);
        }
        Plan {
            options: RunOptions { seed: args.seed, workers: args.workers, ..RunOptions::default() },
            ..Plan::new("sql", scenarios)
        }
    }
}

pub(crate) fn sql(args: &SqlArgs) -> Result<i32, Failure> {
    if args.print_plan {
        let url = args.url.clone().unwrap_or_else(|| "sqlite://horde-sql.db".to_string());
        let experiment = Experiment::from_args(args, url).map_err(invalid_flags)?;
        print_text(&(experiment.plan(args).to_json_pretty() + "\n"));
        return Ok(exit::OK);
    }
    // Every flag is checked before the results directory is made (the default database lives
    // in it).
    let checked_url = args.url.clone().unwrap_or_else(|| "sqlite://horde-sql.db".to_string());
    Experiment::from_args(args, checked_url).map_err(invalid_flags)?;
    let dir = results_directory(&args.output, "sql")?;
    let url = match &args.url {
        Some(url) => url.clone(),
        None => {
            format!("sqlite://{}", std::fs::canonicalize(&dir).unwrap_or(dir.clone()).join("horde-sql.db").display())
        }
    };
    let experiment = Experiment::from_args(args, url).map_err(invalid_flags)?;
    let plan = experiment.plan(args);
    let program = prepare(&plan, std::path::Path::new("of horde sql"))?;
    let shown = horde_engine::redacted_url(&experiment.url);
    // The database must answer before anything is measured: a wrong password or database is
    // the database's own message, not a run of failed phases.
    let database = horde_engine::sql_check_connection(&experiment.url, None).map_err(|message| {
        Failure::Runtime(anyhow::anyhow!("cannot connect to {shown} (before the first phase): {}", printable(&message)))
    })?;
    status!(
        "horde sql: {} rows, {} thread{} against {database} at {shown}; results in {}",
        args.rows,
        experiment.threads,
        if experiment.threads == 1 { "" } else { "s" },
        dir.display()
    );
    let finished = run_into(program, &dir, !args.output.quiet, "cli", Default::default())?;
    let summary = &finished.summary;
    if !args.output.quiet {
        print_text(&render_console(summary));
    }
    finished.results_written()?;
    status!("horde: results written to {}", dir.join("summary.json").display());
    if args.output.quiet {
        print_text(&format!("{}\n", dir.display()));
    }
    let failed: Vec<&str> = summary.sql.iter().filter_map(|p| p.error.as_deref()).collect();
    for error in &failed {
        status!("horde sql: phase failed: {}", printable(error));
    }
    Ok(match finished.status {
        RunStatus::Interrupted => exit::INTERRUPTED,
        _ if !failed.is_empty() => exit::WORKLOAD_FAILED,
        _ => exit::OK,
    })
}
