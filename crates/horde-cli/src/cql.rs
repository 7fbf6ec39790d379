//! `horde cql`: YCSB's core workloads on Apache Cassandra (or ScyllaDB) as one command. Each
//! phase is a Plan of its own, as YCSB's `load` and `run` are commands of their own: `threads`
//! users loop over one `cql_ycsb` step, the run's budget (`max_requests`) counts the records
//! or operations, `--duration` and `--target` are the run's deadline and throttle. This
//! module checks the flags, makes (or checks) the table before anything is measured, runs the
//! phases and prints YCSB's report of each.

use crate::args::CqlArgs;
use crate::output::{print_text, status};
use crate::quick::parse_duration_ms;
use crate::{exit, invalid_flags, ready_to_run, results_directory, run_into, Failure};
use horde_metrics::{LatencyStats, RequestStats, RunStatus};
use horde_plan::{
    cql_table_name_problem, Consistency, CoreStep, CqlCluster, CqlStep, CqlTls, Injection, OnCheckFailure, Plan,
    RunOptions, Scenario, ThrottleStep, YcsbDistribution, YcsbPhase, YcsbStep, YcsbWorkload, MAX_DURATION_MS,
};
use horde_report::render_console;
use horde_report::terminal::printable;
use std::path::Path;

/// Operations of the run phase when neither --operations nor --duration says (YCSB's
/// workload files' `operationcount`).
const DEFAULT_OPERATIONS: u64 = 1000;

/// The workload once every flag holds.
struct Workload {
    cluster: CqlCluster,
    workload: YcsbWorkload,
    phases: Vec<YcsbPhase>,
    /// The step of both phases (its `phase` set per plan).
    step: YcsbStep,
    operations: Option<u64>,
    duration_ms: Option<u64>,
    target: Option<f64>,
    keyspace: String,
}

impl Workload {
    fn from_args(args: &CqlArgs) -> Result<Workload, Vec<String>> {
        let mut problems = Vec::new();
        let workload = YcsbWorkload::parse(&args.workload).unwrap_or_else(|| {
            problems.push(format!("--workload {:?} is not a core workload: a, b, c, d, e or f", args.workload));
            YcsbWorkload::A
        });
        let phases = match args.phase.trim() {
            "load" => vec![YcsbPhase::Load],
            "run" => vec![YcsbPhase::Run],
            "both" => vec![YcsbPhase::Load, YcsbPhase::Run],
            other => {
                problems.push(format!("--phase {other:?} is not a phase: load, run or both"));
                vec![]
            }
        };
        let distribution = match args.distribution.as_deref().map(str::trim) {
            None => workload.distribution(),
            Some("zipfian") => YcsbDistribution::Zipfian,
            Some("uniform") => YcsbDistribution::Uniform,
            Some("latest") => YcsbDistribution::Latest,
            Some(other) => {
                problems.push(format!("--distribution {other:?} is not a key chooser: zipfian, uniform or latest"));
                workload.distribution()
            }
        };
        let consistency = match &args.consistency {
            None => Consistency::LocalOne,
            Some(name) => {
                let name = name.trim().to_ascii_lowercase().replace('-', "_");
                serde_json::from_value(serde_json::Value::String(name.clone())).unwrap_or_else(|_| {
                    problems.push(format!(
                        "--consistency {name:?} is not a consistency level: any, one, two, three, quorum, all, \
                         local_quorum, each_quorum, local_one"
                    ));
                    Consistency::LocalOne
                })
            }
        };
        if matches!(consistency, Consistency::Serial | Consistency::LocalSerial) {
            problems
                .push("--consistency serial is for lightweight transactions, which YCSB's operations are not".into());
        }
        for (flag, name) in [("--keyspace", &args.keyspace), ("--table", &args.table)] {
            if let Some(problem) = cql_table_name_problem(name) {
                problems.push(format!("{flag} {name:?}: {problem}"));
            }
        }
        let duration_ms = match &args.duration {
            Some(text) => match parse_duration_ms(text) {
                Ok(ms) if ms > 0 => Some(ms),
                Ok(_) => {
                    problems.push("--duration must be more than 0".into());
                    None
                }
                Err(problem) => {
                    problems.push(format!("--duration {text:?}: {problem}"));
                    None
                }
            },
            None => None,
        };
        if let Some(target) = args.target {
            if !(target > 0.0 && target.is_finite()) {
                problems.push(format!("--target {target}: must be more than 0 operations per second"));
            }
        }
        let contact_points = match args.contact_points.is_empty() {
            true => vec!["127.0.0.1:9042".to_string()],
            false => args.contact_points.iter().map(|p| p.trim().to_string()).collect(),
        };
        if args.user.is_some() != args.password.is_some() {
            problems.push("--user and --password go together (or HORDE_CQL_PASSWORD)".into());
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let operations = args.operations.or(if duration_ms.is_none() { Some(DEFAULT_OPERATIONS) } else { None });
        Ok(Workload {
            cluster: CqlCluster {
                contact_points,
                keyspace: Some(args.keyspace.clone()),
                local_datacenter: args.local_datacenter.clone(),
                user: args.user.clone(),
                password: args.password.clone(),
                consistency,
                request_timeout_ms: 10_000,
                tls: match (&args.cacert, args.tls) {
                    (Some(file), _) => Some(CqlTls { verify: true, ca_file: Some(file.display().to_string()) }),
                    (None, true) => Some(CqlTls { verify: true, ca_file: None }),
                    (None, false) => None,
                },
                pool_size_per_host: args.pool_size,
            },
            workload,
            phases,
            step: YcsbStep {
                phase: YcsbPhase::Load,
                table: args.table.clone(),
                record_count: args.records,
                insert_start: args.insert_start,
                operation_count: operations,
                workload: None,
                proportions: workload.proportions(),
                request_distribution: Some(distribution),
                field_count: args.field_count,
                field_length: args.field_length,
                read_all_fields: !args.read_one_field,
                write_all_fields: args.write_all_fields,
                max_scan_length: args.max_scan_length,
                consistency: None,
            },
            operations,
            duration_ms,
            target: args.target,
            keyspace: args.keyspace.clone(),
        })
    }

    /// One phase's plan: `threads` users looping over the step until the budget (records or
    /// operations) or the deadline ends the run.
    fn plan(&self, phase: YcsbPhase, args: &CqlArgs) -> Plan {
        let (name, budget, duration_ms, throttle) = match phase {
            YcsbPhase::Load => ("load", Some(args.records), None, vec![]),
            YcsbPhase::Run => (
                "run",
                self.operations,
                self.duration_ms,
                self.target.map(|rps| vec![ThrottleStep::JumpToRps { rps }]).unwrap_or_default(),
            ),
        };
        let step = YcsbStep { phase, ..self.step.clone() };
        // The loop outlasts the deadline (the run's end cuts it), as `horde http`'s does.
        let loop_ms = duration_ms.map_or(MAX_DURATION_MS, |ms: u64| ms.saturating_add(1000).min(MAX_DURATION_MS));
        let steps =
            vec![CoreStep::During { duration_ms: loop_ms, counter: None, steps: vec![CqlStep::CqlYcsb(step).into()] }
                .into()];
        // More threads than operations would leave some idle.
        let users = u64::from(args.threads).min(budget.unwrap_or(u64::MAX));
        Plan {
            cql: Some(self.cluster.clone()),
            options: RunOptions {
                // A failed operation is a result: the thread goes on, as YCSB's do.
                on_check_failure: OnCheckFailure::Continue,
                max_requests: budget,
                max_duration_ms: duration_ms,
                throttle,
                seed: args.seed,
                workers: args.workers,
                ..RunOptions::default()
            },
            ..Plan::new(
                format!("ycsb workload {} {name}", self.workload.letter()),
                vec![Scenario {
                    name: name.to_string(),
                    steps,
                    injection: vec![Injection::AtOnceUsers { users }],
                    after: None,
                }],
            )
        }
    }

    fn table(&self) -> horde_engine::YcsbTable<'_> {
        horde_engine::YcsbTable {
            cluster: &self.cluster,
            keyspace: &self.keyspace,
            table: &self.step.table,
            field_count: self.step.field_count,
        }
    }
}

pub(crate) fn cql(args: &CqlArgs) -> Result<i32, Failure> {
    let workload = Workload::from_args(args).map_err(invalid_flags)?;
    if args.print_plan {
        let [phase] = workload.phases[..] else {
            return Err(Failure::Invalid(
                "--print-plan writes one phase's plan: add --phase load or --phase run".into(),
            ));
        };
        print_text(&(workload.plan(phase, args).to_json_pretty() + "\n"));
        return Ok(exit::OK);
    }
    // Bad input is named before the table is touched: every phase's plan is lowered first
    // (once: the programs run below).
    let programs = workload
        .phases
        .iter()
        .map(|&phase| {
            horde_engine::lower(&workload.plan(phase, args))
                .map_err(|errors| Failure::Invalid(crate::invalid_plan_message(Path::new("of horde cql"), &errors)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    // The table must be there before anything is measured: the load phase makes it when
    // missing; the run phase alone needs it loaded.
    let table = workload.table();
    let ready = match workload.phases[0] {
        YcsbPhase::Load => table.create(args.replication),
        YcsbPhase::Run => table.check(),
    };
    ready.map_err(|message| Failure::Runtime(anyhow::anyhow!("{}", printable(&message))))?;
    let dir = results_directory(&args.output, "cql")?;
    let nodes = workload.cluster.contact_points.join(", ");
    let mut status_code = exit::OK;
    for (&phase, program) in workload.phases.iter().zip(programs) {
        // Checked now, each phase after the one before: the run phase needs the loaded table.
        ready_to_run(&program)?;
        let phase_dir = match workload.phases.len() {
            1 => dir.clone(),
            _ => {
                let sub = dir.join(phase_name(phase));
                std::fs::create_dir_all(&sub).map_err(|e| {
                    Failure::Runtime(anyhow::anyhow!("cannot create the results directory {}: {e}", sub.display()))
                })?;
                sub
            }
        };
        status!("{}", describe(&workload, phase, args, &nodes, &phase_dir));
        let finished = run_into(program, &phase_dir, !args.output.quiet, "cli", Default::default())?;
        let report = ycsb_report(&finished.summary);
        if !args.output.quiet {
            print_text(&render_console(&finished.summary));
            print_text(&report);
        }
        if let Err(err) = std::fs::write(phase_dir.join("ycsb.txt"), &report) {
            status!("horde cql: cannot write {}: {err}", phase_dir.join("ycsb.txt").display());
        }
        finished.results_written()?;
        status!("horde: results written to {}", phase_dir.join("summary.json").display());
        if finished.status == RunStatus::Interrupted {
            status_code = exit::INTERRUPTED;
            break;
        }
    }
    if args.output.quiet {
        print_text(&format!("{}\n", dir.display()));
    }
    Ok(status_code)
}

fn phase_name(phase: YcsbPhase) -> &'static str {
    match phase {
        YcsbPhase::Load => "load",
        YcsbPhase::Run => "run",
    }
}

/// The status line of a phase as it starts.
fn describe(workload: &Workload, phase: YcsbPhase, args: &CqlArgs, nodes: &str, dir: &Path) -> String {
    let what = match phase {
        YcsbPhase::Load => format!("loading {} records", args.records),
        YcsbPhase::Run => {
            let mut what =
                format!("workload {} ({} keys)", workload.workload.letter(), workload.step.key_distribution().as_str());
            if let Some(operations) = workload.operations {
                what.push_str(&format!(", {operations} operations"));
            }
            if let Some(ms) = workload.duration_ms {
                what.push_str(&format!(", at most {} s", ms as f64 / 1000.0));
            }
            if let Some(target) = workload.target {
                what.push_str(&format!(", target {target} ops/s"));
            }
            what
        }
    };
    format!(
        "horde cql: {what}, {} thread{} on {nodes} ({}.{}); results in {}",
        args.threads,
        if args.threads == 1 { "" } else { "s" },
        workload.keyspace,
        workload.step.table,
        dir.display()
    )
}

/// YCSB's own report of a phase, from its summary: what YCSB's users read and their scripts
/// parse (`[OP], Metric, value`). Latencies in microseconds, counted from when each operation
/// was due when the phase had a target.
fn ycsb_report(summary: &horde_report::Summary) -> String {
    let runtime_ms = summary.run.duration_ms;
    let operations: u64 = summary.requests.iter().map(|r| r.count).sum();
    let mut out = String::new();
    out.push_str(&format!("[OVERALL], RunTime(ms), {runtime_ms}\n"));
    let throughput = if runtime_ms == 0 { 0.0 } else { operations as f64 * 1000.0 / runtime_ms as f64 };
    out.push_str(&format!("[OVERALL], Throughput(ops/sec), {throughput:.1}\n"));
    for row in &summary.requests {
        operation_lines(&mut out, row);
    }
    for error in &summary.errors {
        out.push_str(&format!("[{}], Error={}, {}\n", error.request, error.kind, error.count));
    }
    out
}

fn operation_lines(out: &mut String, row: &RequestStats) {
    let name = &row.name;
    let latency: &LatencyStats = &row.latency.all;
    out.push_str(&format!("[{name}], Operations, {}\n", row.count));
    out.push_str(&format!("[{name}], AverageLatency(us), {:.1}\n", latency.mean_us));
    out.push_str(&format!("[{name}], MinLatency(us), {}\n", latency.min_us));
    out.push_str(&format!("[{name}], MaxLatency(us), {}\n", latency.max_us));
    for (label, percentile) in [("50th", 50.0), ("95th", 95.0), ("99th", 99.0)] {
        if let Some(p) = latency.percentiles.iter().find(|p| p.percentile == percentile) {
            out.push_str(&format!("[{name}], {label}PercentileLatency(us), {}\n", p.value_us));
        }
    }
    out.push_str(&format!("[{name}], Return=OK, {}\n", row.ok));
    if row.ko > 0 {
        out.push_str(&format!("[{name}], Return=ERROR, {}\n", row.ko));
    }
}
