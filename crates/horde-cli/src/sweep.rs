//! `horde sweep`: the capacity search seed 004 does by hand. Each level is an ordinary run of
//! the same plan with its injection replaced (constant concurrent users, or a constant arrival
//! rate), a warm-up that is run but not measured, and its own results directory. The table,
//! its conclusions and the chart are written as the sweep goes.

use crate::args::SweepArgs;
use crate::quick::parse_duration_ms;
use crate::output::{print_text, status};
use crate::{exit, load_plan, prepare, run_into, signals, Failure, SimulationLoader};
use horde_metrics::{RunStatus, Threshold};
use horde_plan::{Injection, Plan, Request, Scenario, Step, PLAN_VERSION};
use horde_report::{create_results_dir, format_level, SweepLevel, SweepReport};
use std::path::{Path, PathBuf};

/// What is swept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Model {
    /// Concurrent users (closed model).
    Users,
    /// Arrivals per second (open model).
    Rate,
}

impl Model {
    fn name(self) -> &'static str {
        match self {
            Model::Users => "users",
            Model::Rate => "rate",
        }
    }
}

struct Sweep<'a> {
    plan: Plan,
    model: Model,
    slos: Vec<Threshold>,
    level_ms: u64,
    warmup_ms: u64,
    dir: PathBuf,
    progress: bool,
    front_end: &'a str,
    levels: Vec<SweepLevel>,
    interrupted: bool,
}

pub fn sweep(args: &SweepArgs, loader: &dyn SimulationLoader) -> Result<i32, Failure> {
    let slos = args
        .slos
        .iter()
        .map(|s| s.parse::<Threshold>().map_err(|e| Failure::Invalid(format!("--slo {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let level_ms = parse_duration_ms(&args.level_duration).map_err(|e| Failure::Invalid(format!("--level-duration: {e}")))?;
    let warmup_ms = match args.warmup.trim() {
        "0" | "0s" | "0ms" => 0,
        text => parse_duration_ms(text).map_err(|e| Failure::Invalid(format!("--warmup: {e}")))?,
    };
    let model = match (&args.users, &args.rate, args.model.as_str()) {
        (Some(_), _, _) => Model::Users,
        (_, Some(_), _) => Model::Rate,
        (_, _, "rate") => Model::Rate,
        _ => Model::Users,
    };
    if args.users.as_ref().is_some_and(|l| l.contains(&0)) {
        return Err(Failure::Invalid("--users: every level needs at least 1 user".into()));
    }
    if args.rate.as_ref().is_some_and(|l| l.iter().any(|r| !(*r > 0.0 && r.is_finite()))) {
        return Err(Failure::Invalid("--rate: every level needs a positive rate".into()));
    }
    if args.auto && !(args.factor > 1.0 && args.factor.is_finite()) {
        return Err(Failure::Invalid("--factor must be more than 1".into()));
    }
    let mut plan = if args.target.contains("://") {
        crate::quick::check_url(&args.target).map_err(|problem| Failure::Invalid(format!("TARGET {problem}")))?;
        url_plan(&args.target, model)
    } else {
        load_plan(Path::new(&args.target), &args.params, loader)?
    };
    // The percentiles the table and the SLOs need.
    for p in [50.0, 99.0].into_iter().chain(slos.iter().filter_map(Threshold::percentile)) {
        if !plan.options.percentiles.contains(&p) {
            plan.options.percentiles.push(p);
        }
    }
    let front_end = loader.front_end();
    let mut sweep = Sweep {
        plan,
        model,
        slos,
        level_ms,
        warmup_ms,
        dir: PathBuf::new(),
        progress: !args.output.quiet,
        front_end: &front_end,
        levels: Vec::new(),
        interrupted: false,
    };
    // The first level must be runnable before anything is created.
    let first = match (&args.users, &args.rate) {
        (Some(users), _) => users[0] as f64,
        (_, Some(rates)) => rates[0],
        _ => args.start.unwrap_or(if model == Model::Users { 1.0 } else { 10.0 }),
    };
    prepare(&sweep.level_plan(first), Path::new("of this sweep"))?;
    sweep.dir = create_results_dir(&args.output.results, &format!("sweep-{}", sweep.plan.name))?;
    status!("horde sweep: results in {}", sweep.dir.display());
    if args.auto {
        sweep.search(args)?;
    } else {
        let levels: Vec<f64> = match (&args.users, &args.rate) {
            (Some(users), _) => users.iter().map(|u| *u as f64).collect(),
            (_, Some(rates)) => rates.clone(),
            _ => unreachable!("clap requires one of --users, --rate, --auto"),
        };
        for level in levels {
            if sweep.run_level(level)?.is_none() {
                break;
            }
        }
    }
    let report = sweep.report();
    print_text(&report.render());
    status!("horde sweep: table in {0}/sweep.csv, chart in {0}/sweep.svg", sweep.dir.display());
    Ok(if sweep.interrupted { exit::INTERRUPTED } else { exit::OK })
}

impl Sweep<'_> {
    fn report(&self) -> SweepReport {
        SweepReport::analyse(&self.plan.name, self.model.name(), &self.slos, self.level_ms, self.warmup_ms, self.levels.clone())
    }

    /// Runs one level and records it; the report on disk is brought up to date. None when
    /// the sweep must stop here: it was interrupted, or this level cannot run on this machine.
    fn run_level(&mut self, level: f64) -> Result<Option<SweepLevel>, Failure> {
        if signals::interrupted() {
            self.interrupted = true;
            return Ok(None);
        }
        let program = match prepare(&self.level_plan(level), Path::new("of this sweep level")) {
            Ok(program) => program,
            Err(Failure::Invalid(problem)) => {
                status!("horde sweep: level {} cannot run here, the sweep stops: {problem}", format_level(level));
                return Ok(None);
            }
            Err(other) => return Err(other),
        };
        let label = format!("{}-{}", self.model.name(), format_level(level));
        let dir = self.dir.join(&label);
        std::fs::create_dir_all(&dir).map_err(|e| Failure::Runtime(anyhow::anyhow!("creating {}: {e}", dir.display())))?;
        status!(
            "horde sweep: level {} {} for {:.1} s (+{:.1} s warm-up)",
            format_level(level),
            if self.model == Model::Users { "users" } else { "users/s" },
            self.level_ms as f64 / 1000.0,
            self.warmup_ms as f64 / 1000.0
        );
        let finished = run_into(program, &dir, self.progress, self.front_end)?;
        finished.results_written()?;
        let result = SweepLevel::from_summary(level, &finished.summary, &self.slos, label);
        status!(
            "horde sweep:   {} requests, p50 {:.2} ms, p99 {:.2} ms, errors {:.1} %, {:.1} req/s{}",
            result.requests,
            result.p50_us as f64 / 1000.0,
            result.p99_us as f64 / 1000.0,
            result.error_rate * 100.0,
            result.throughput_rps,
            if result.broken_slos.is_empty() { String::new() } else { format!(", broke {}", result.broken_slos.join(", ")) }
        );
        self.interrupted = finished.status == RunStatus::Interrupted;
        self.levels.push(result.clone());
        self.report().write(&self.dir).map_err(|e| Failure::Runtime(anyhow::anyhow!("writing the sweep report: {e}")))?;
        Ok((!self.interrupted).then_some(result))
    }

    /// The plan with every scenario's injection replaced by this level, for warm-up + level.
    fn level_plan(&self, level: f64) -> Plan {
        let mut plan = self.plan.clone();
        let duration_ms = self.warmup_ms + self.level_ms;
        for scenario in &mut plan.scenarios {
            scenario.injection = vec![match self.model {
                Model::Users => Injection::ConstantConcurrentUsers { users: level as u64, duration_ms },
                Model::Rate => Injection::ConstantUsersPerSec { rate: level, duration_ms, randomized: false },
            }];
        }
        plan.options.warmup_ms = Some(self.warmup_ms);
        // Users still running at the end of the level are cut there: the next level starts
        // from an idle system.
        plan.options.max_duration_ms = Some(duration_ms);
        plan.options.graceful_stop_ms = None;
        plan
    }

    /// Geometric steps until a level is bad, then bisection between the last good level and
    /// the first bad one. Bad: an SLO broke, or throughput grew less than half as fast as load.
    fn search(&mut self, args: &SweepArgs) -> Result<(), Failure> {
        let integer = self.model == Model::Users;
        let start = args.start.unwrap_or(if integer { 1.0 } else { 10.0 });
        let max = args.max_level.unwrap_or(if integer { 10_000.0 } else { 100_000.0 });
        let mut last_good: Option<SweepLevel> = None;
        let mut first_bad: Option<SweepLevel> = None;
        let mut level = if integer { start.round().max(1.0) } else { start };
        loop {
            let Some(result) = self.run_level(level)? else { return Ok(()) };
            if !is_good(&result, last_good.as_ref()) {
                first_bad = Some(result);
                break;
            }
            last_good = Some(result);
            if level >= max {
                break;
            }
            let next = level * args.factor;
            level = if integer { next.round().max(level + 1.0) } else { next }.min(max);
        }
        let (Some(mut low), Some(mut high)) = (last_good, first_bad) else { return Ok(()) };
        for _ in 0..args.bisect {
            let middle = (low.level + high.level) / 2.0;
            let middle = if integer { middle.floor() } else { (middle * 100.0).round() / 100.0 };
            if middle <= low.level || middle >= high.level {
                break;
            }
            let Some(result) = self.run_level(middle)? else { return Ok(()) };
            if is_good(&result, Some(&low)) {
                low = result;
            } else {
                high = result;
            }
        }
        Ok(())
    }
}

/// A level is good when it meets the SLOs and its throughput still grows at least half as fast
/// as the load did since `previous`.
fn is_good(level: &SweepLevel, previous: Option<&SweepLevel>) -> bool {
    if !level.meets_slos() {
        return false;
    }
    let Some(previous) = previous else { return true };
    let load_growth = level.level / previous.level - 1.0;
    let throughput_growth = level.throughput_rps / previous.throughput_rps.max(1e-9) - 1.0;
    throughput_growth >= 0.5 * load_growth
}

/// A plan that GETs one URL: users loop on keep-alive connections (closed model), or each
/// arrival sends one request (open model).
fn url_plan(url: &str, model: Model) -> Plan {
    let request = Step::Request(Request {
        name: format!("GET {url}"),
        method: "GET".into(),
        url: url.replace("${", "$${"),
        headers: vec![],
        query: vec![],
        body: None,
        checks: vec![],
    });
    let steps = match model {
        Model::Users => vec![Step::During { duration_ms: 86_400_000, counter: None, steps: vec![request] }],
        Model::Rate => vec![request],
    };
    Plan {
        version: PLAN_VERSION,
        name: "url".into(),
        base_dir: None,
        protocol: Default::default(),
        scenarios: vec![Scenario { name: "url".into(), steps, injection: vec![Injection::AtOnceUsers { users: 1 }], after: None }],
        options: horde_plan::RunOptions {
            on_check_failure: horde_plan::OnCheckFailure::Continue,
            ..Default::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(level: f64, throughput: f64) -> SweepLevel {
        SweepLevel {
            level,
            requests: 10,
            ok: 10,
            ko: 0,
            p50_us: 1,
            p99_us: 1,
            mean_us: 1.0,
            error_rate: 0.0,
            throughput_rps: throughput,
            broken_slos: vec![],
            results: String::new(),
            interrupted: false,
        }
    }

    #[test]
    fn a_level_is_good_while_throughput_keeps_up_with_load() {
        assert!(is_good(&level(2.0, 100.0), Some(&level(1.0, 50.0))));
        assert!(is_good(&level(2.0, 80.0), Some(&level(1.0, 50.0))));
        assert!(!is_good(&level(2.0, 70.0), Some(&level(1.0, 50.0))), "40 % more for 100 % more load");
        let mut broken = level(1.0, 50.0);
        broken.broken_slos.push("p99<1ms".into());
        assert!(!is_good(&broken, None));
    }
}
