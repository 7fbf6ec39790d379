//! `horde run --trials N A [B]`: the same plan N times, each run in its own results directory,
//! so that `horde compare` has one value per run; with two plans, their runs interleaved and
//! compared at the end.
//!
//! The order is A B B A A B B A ...: each pair of rounds is balanced, so a drift that grows
//! steadily over the trials (a server warming its caches, a disk filling, a neighbour's load
//! ramping up) weighs on A and B alike, and each goes first equally often. A random order per
//! round would guard against a periodic disturbance in step with the pattern, but with the few
//! rounds people run it can leave A first in most rounds, and it makes runs irreproducible.

use crate::args::RunArgs;
use crate::output::{print_text, status};
use crate::{compare, exit, load_program, prepare, run_into, Failure, FinishedRun, SimulationLoader};
use anyhow::Context;
use horde_engine::SessionFunctions;
use horde_metrics::RunStatus;
use horde_plan::Plan;
use horde_report::compare::{compare_sides, load_side, render, CompareOptions};
use horde_report::{create_results_dir, LiveMetrics};
use std::path::Path;
use std::sync::Arc;

/// Written beside the runs: each arm's file and the order they ran in. `horde compare` reads
/// its presence to know that the A and B of this directory differ by design.
pub(crate) const TRIALS_FILE: &str = "trials.json";

/// One of the plans being tried.
struct Arm<'a> {
    label: &'static str,
    file: &'a Path,
    /// What its results directories are named after: the file's stem.
    name: String,
    plan: Plan,
    functions: Option<Arc<dyn SessionFunctions>>,
}

pub(crate) fn trials(args: &RunArgs, count: u64, loader: &dyn SimulationLoader) -> Result<i32, Failure> {
    if args.thresholds.junit.is_some() {
        return Err(Failure::Invalid(
            "--junit writes one run's threshold verdicts; with --trials each run's summary.json holds its own".into(),
        ));
    }
    let front_end = loader.front_end();
    let mut arms = Vec::new();
    let flags = crate::PlanFlags { transport: args.transport.clone(), segment: args.segment.clone() };
    for (file, label) in args.files.iter().zip(["A", "B"]) {
        let program = load_program(file, &args.params, &args.thresholds.thresholds, &flags, loader)?;
        // Runnable on this machine, before any directory is made.
        prepare(&program.plan, file)?;
        arms.push(Arm {
            label,
            file,
            name: crate::results_name(file),
            plan: program.plan,
            functions: program.session_functions,
        });
    }
    let parent_name = match arms.as_slice() {
        [a] => format!("{}-trials", a.name),
        [a, b] => format!("{}-vs-{}", a.name, b.name),
        _ => unreachable!("clap allows one or two files"),
    };
    // Bound before anything is created or sent, and up for every trial.
    let live = args.thresholds.metrics.map(|address| (address, LiveMetrics::new()));
    let endpoint = match &live {
        Some((address, live)) => Some(crate::metrics_endpoint::MetricsEndpoint::start(*address, live.clone())?),
        None => None,
    };
    let results = args.thresholds.dashboard.dashboard.is_some().then(horde_report::ResultsWatch::new);
    let dashboard = match &results {
        Some(watch) => Some(crate::dashboard::Dashboard::start(&args.thresholds.dashboard, watch.clone())?),
        None => None,
    };
    let parent = create_results_dir(crate::results_parent(&args.output)?, &parent_name)?;
    status!("horde: {count} trials of {}; results in {}", describe(&arms), parent.display());
    if let Some(endpoint) = &endpoint {
        status!("horde: live metrics at http://{}/metrics, labelled by trial", endpoint.address);
    }
    let order = interleaved(arms.len(), count);
    write_trials_file(&parent, &arms, &order)?;
    let mut thresholds_failed = 0;
    for (index, &arm_index) in order.iter().enumerate() {
        if crate::signals::interrupted() {
            return Err(Failure::Interrupted("between trials"));
        }
        let arm = &arms[arm_index];
        let base = if arms.len() == 1 { parent.clone() } else { parent.join(arm.label) };
        let dir = create_results_dir(&base, &arm.name)?;
        let live = live.as_ref().map(|(_, live)| {
            let mut labels = vec![("trial".to_string(), (index + 1).to_string())];
            if arms.len() > 1 {
                labels.push(("arm".to_string(), arm.label.to_string()));
            }
            live.with_labels(labels)
        });
        let live = crate::LiveOutputs { metrics: live, results: results.clone() };
        let finished = run_trial(arm, &dir, !args.output.quiet, &front_end, live)?;
        status!("horde: trial {}/{} ({}): {}", index + 1, order.len(), arm.label, one_line(&finished));
        if finished.status == RunStatus::Interrupted {
            return Ok(exit::INTERRUPTED);
        }
        if finished.status == RunStatus::AbortedByThreshold || finished.summary.thresholds.iter().any(|t| !t.passed()) {
            thresholds_failed += 1;
        }
    }
    drop(endpoint);
    // The dashboard ends on the last trial's report.
    if let Some(dashboard) = dashboard {
        dashboard.close();
    }
    if thresholds_failed > 0 {
        status!("horde: thresholds failed in {thresholds_failed} of {} trials", order.len());
    }
    // Either verdict fails the command; both are 99.
    let thresholds_code = if thresholds_failed > 0 { exit::THRESHOLDS_FAILED } else { exit::OK };
    if arms.len() == 1 {
        status!("horde: compare these runs with another set: horde compare {} OTHER", parent.display());
        // The last line on stdout is the directory, for scripts.
        print_text(&format!("{}\n", parent.display()));
        return Ok(thresholds_code);
    }
    let side = |label: &str| load_side(label, &[parent.join(label).display().to_string()]);
    let (a, b) = (side("A"), side("B"));
    let (a, b) = (a.map_err(|e| Failure::Invalid(e.to_string()))?, b.map_err(|e| Failure::Invalid(e.to_string()))?);
    // The two plans differ by design: their differences are listed, not refused.
    let report = compare_sides(&a, &b, &CompareOptions::default()).map_err(|e| Failure::Invalid(e.to_string()))?;
    let json = parent.join("compare.json");
    compare::write_json(&report, &json)?;
    status!("horde: comparison written to {}", json.display());
    if args.output.quiet {
        status!("horde: compare.html beside it; horde compare {0}/A {0}/B prints the table", parent.display());
    } else {
        print_text(&render(&report));
    }
    let code = compare::finish(&report, None, Some(&parent.join("compare.html")))?;
    if args.output.quiet {
        // The last line on stdout is the directory, for scripts.
        print_text(&format!("{}\n", parent.display()));
    }
    Ok(if code == exit::OK { thresholds_code } else { code })
}

fn write_trials_file(parent: &Path, arms: &[Arm], order: &[usize]) -> Result<(), Failure> {
    let record = serde_json::json!({
        "arms": arms.iter().map(|arm| serde_json::json!({
            "label": arm.label,
            "file": std::fs::canonicalize(arm.file).unwrap_or_else(|_| arm.file.to_path_buf()),
            "plan": arm.plan.name,
        })).collect::<Vec<_>>(),
        "order": order.iter().map(|&arm| arms[arm].label).collect::<Vec<_>>(),
    });
    let path = parent.join(TRIALS_FILE);
    let text = serde_json::to_string_pretty(&record).expect("a record serializes") + "\n";
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Which arm runs at each trial: A B B A A B ... (one arm: A A A ...).
fn interleaved(arms: usize, rounds: u64) -> Vec<usize> {
    (0..rounds)
        .flat_map(|round| {
            let pair: &[usize] = match (arms, round % 2) {
                (1, _) => &[0],
                (_, 0) => &[0, 1],
                _ => &[1, 0],
            };
            pair.to_vec()
        })
        .collect()
}

fn describe(arms: &[Arm]) -> String {
    arms.iter().map(|arm| format!("{} = {}", arm.label, arm.file.display())).collect::<Vec<_>>().join(", ")
}

/// A trial runs as `horde run` does: the simulation's hooks around it, results on disk.
fn run_trial(
    arm: &Arm,
    dir: &Path,
    progress: bool,
    front_end: &str,
    live: crate::LiveOutputs,
) -> Result<FinishedRun, Failure> {
    let mut program = prepare(&arm.plan, arm.file)?;
    if let Some(functions) = &arm.functions {
        program.attach_functions(functions.clone());
        functions.before_run().map_err(|message| Failure::Runtime(anyhow::anyhow!("{message}")))?;
    }
    let finished = run_into(program, dir, progress, front_end, live)?;
    finished.results_written()?;
    if let Some(functions) = &arm.functions {
        let summary = serde_json::to_string(&finished.summary).expect("a summary serializes");
        functions.after_run(&summary).map_err(|message| Failure::Runtime(anyhow::anyhow!("{message}")))?;
    }
    Ok(finished)
}

fn one_line(finished: &FinishedRun) -> String {
    let global = &finished.summary.global;
    let percentile =
        |p: f64| global.latency.all.percentile(p).map_or("-".to_string(), |us| format!("{:.2} ms", us as f64 / 1000.0));
    format!(
        "{} requests, {} KO, p50 {}, p99 {}; {}",
        global.count,
        global.ko,
        percentile(50.0),
        percentile(99.0),
        finished.dir.display()
    )
}

#[cfg(test)]
mod tests {
    use super::interleaved;

    #[test]
    fn two_plans_alternate_in_balanced_pairs() {
        assert_eq!(interleaved(2, 4), [0, 1, 1, 0, 0, 1, 1, 0]);
        assert_eq!(interleaved(2, 1), [0, 1]);
        assert_eq!(interleaved(1, 3), [0, 0, 0]);
    }
}
