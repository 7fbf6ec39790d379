//! `horde sweep`: the capacity search seed 004 does by hand. Each level is an ordinary run of
//! the same plan with its injection replaced (constant concurrent users, or a constant arrival
//! rate), a warm-up that is run but not measured, and its own results directory. The table,
//! its conclusions and the chart are written as the sweep goes.
//!
//! A search must know its own limits: a level whose load the generator did not deliver (late
//! or bunched starts, a saturated CPU; judged in horde-report's sweep module) runs once more,
//! and if it is still not delivered the sweep stops and says so, rather than blaming the
//! server. The boundary an automatic search reports is confirmed by a second run of the last
//! good and the first bad level.
//!
//! With `--cluster`, every level runs on the same machines, opened once: each level is a
//! coordinated run of its own (its own run id, start and merged results). A level that lost a
//! worker did not deliver its load: with `--on-worker-loss replace` it runs again on the
//! machines as they now are; otherwise the sweep stops there (the levels after it would run on
//! fewer machines, and so would not compare), exit 6 unless `--allow-worker-loss`.

use crate::args::SweepArgs;
use crate::cluster::{ClusterNeeds, OpenCluster, WorkerLosses};
use crate::output::{print_text, status};
use crate::quick::parse_duration_ms;
use crate::{exit, invalid_flags, load_program, prepare, signals, Failure, SimulationLoader};
use horde_metrics::RunStatus;
use horde_plan::ThresholdSpec;
use horde_plan::{CoreStep, HttpStep, Injection, Plan, Request, Scenario, Step, MAX_DURATION_MS};
use horde_report::{format_level, Boundary, LiveMetrics, SweepLevel, SweepReport};
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

    fn unit(self) -> &'static str {
        match self {
            Model::Users => "users",
            Model::Rate => "users/s",
        }
    }
}

/// The flags of a sweep once every one is valid.
struct Settings {
    model: Model,
    /// `--slo` and `--threshold`, in the thresholds' grammar.
    slos: Vec<String>,
    level_ms: u64,
    warmup_ms: u64,
    /// The levels to run, or None for an automatic search.
    levels: Option<Vec<f64>>,
    /// `--late-start-threshold`: when a start counts as late (the plan's otherwise).
    late_start_threshold_us: Option<u64>,
}

impl Settings {
    /// Every problem with the flags, each named by its flag, at once.
    fn from_args(args: &SweepArgs) -> Result<Settings, Vec<String>> {
        let mut problems = Vec::new();
        let mut slos = Vec::new();
        for text in &args.slos {
            match text.parse::<ThresholdSpec>() {
                Ok(_) => slos.push(text.trim().to_string()),
                Err(problem) => problems.push(format!("--slo {problem}")),
            }
        }
        let level_ms = parse_duration_ms(&args.level_duration).unwrap_or_else(|problem| {
            problems.push(format!("--level-duration: {problem}"));
            1
        });
        let warmup_ms = match args.warmup.trim() {
            "0" | "0s" | "0ms" => 0,
            text => parse_duration_ms(text).unwrap_or_else(|problem| {
                problems.push(format!("--warmup: {problem}"));
                0
            }),
        };
        let late_start_threshold_us = args.late_start_threshold.as_deref().and_then(|text| {
            parse_threshold_us(text).map_err(|problem| problems.push(format!("--late-start-threshold: {problem}"))).ok()
        });
        if level_ms.saturating_add(warmup_ms) > MAX_DURATION_MS {
            problems.push("--level-duration and --warmup: a level longer than 365 days".into());
        }
        let model = match (&args.users, &args.rate, args.model.as_str()) {
            (Some(_), _, _) => Model::Users,
            (_, Some(_), _) | (_, _, "rate") => Model::Rate,
            _ => Model::Users,
        };
        if let Some(rates) = &args.rate {
            for rate in rates.iter().filter(|r| !(**r > 0.0 && r.is_finite())) {
                problems.push(format!("--rate: level {rate} is not a positive rate"));
            }
        }
        if args.auto {
            if !(args.factor > 1.0 && args.factor.is_finite()) {
                problems.push(format!("--factor {}: must be more than 1", args.factor));
            }
            for (flag, value) in [("--start", args.start), ("--max-level", args.max_level)] {
                if let Some(value) = value.filter(|v| !(*v > 0.0 && v.is_finite())) {
                    problems.push(format!("{flag} {value}: must be more than 0"));
                }
            }
        }
        if args.target.contains("://") {
            if let Err(problem) = crate::quick::check_url(&args.target) {
                problems.push(format!("TARGET {problem}"));
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let levels = match (&args.users, &args.rate) {
            (Some(users), _) => Some(users.iter().map(|u| *u as f64).collect()),
            (_, Some(rates)) => Some(rates.clone()),
            _ => None,
        };
        Ok(Settings { model, slos, level_ms, warmup_ms, levels, late_start_threshold_us })
    }
}

struct Sweep<'a> {
    plan: Plan,
    /// The simulation's session functions, given to every level's program.
    functions: Option<std::sync::Arc<dyn horde_engine::SessionFunctions>>,
    model: Model,
    /// The SLOs every level is judged by: the plan's thresholds and the sweep's `--slo`s.
    slos: Vec<String>,
    level_ms: u64,
    warmup_ms: u64,
    dir: PathBuf,
    progress: bool,
    front_end: &'a str,
    /// Every run, in the order run.
    levels: Vec<SweepLevel>,
    interrupted: bool,
    boundary: Option<Boundary>,
    /// Why the sweep stopped before its end.
    stopped: Option<String>,
    /// `--metrics`: what the endpoint serves, published by each level with its labels.
    live: Option<LiveMetrics>,
    /// `--dashboard`: each level's results as they are written, then the sweep's report.
    results: Option<horde_report::ResultsWatch>,
    /// `--cluster`: the machines every level runs on.
    cluster: Option<OpenCluster>,
    /// A level lost a worker and the sweep stopped there.
    worker_lost: bool,
}

pub fn sweep(args: &SweepArgs, loader: &dyn SimulationLoader) -> Result<i32, Failure> {
    let settings = Settings::from_args(args).map_err(invalid_flags)?;
    let model = settings.model;
    // A simulation's session functions run at every level.
    let mut function_keys = Vec::new();
    let mut simulation = None;
    let (mut plan, functions, name) = if args.target.contains("://") {
        let mut plan = url_plan(&args.target, model);
        args.transport.apply(&mut plan.protocol, Some(&args.target)).map_err(invalid_flags)?;
        let name = plan.name.clone();
        (plan, None, name)
    } else {
        let file = Path::new(&args.target);
        let program = load_program(
            file,
            &args.params,
            &[],
            &crate::PlanFlags { transport: args.transport.clone(), ..Default::default() },
            loader,
        )?;
        function_keys = program.session_function_keys;
        simulation = crate::simulation_file(file, &args.params)?;
        (program.plan, program.session_functions, crate::results_name(file))
    };
    if args.workers.is_some() {
        plan.options.workers = args.workers;
    }
    args.cluster.apply(&mut plan.options);
    if let Some(threshold_us) = settings.late_start_threshold_us {
        plan.options.late_start_threshold_us = threshold_us;
    }
    // Each level's run judges the SLOs as thresholds (any percentile, any metric).
    for slo in &settings.slos {
        if !plan.thresholds.contains(slo) {
            plan.thresholds.push(slo.clone());
        }
    }
    // The percentiles the table needs.
    for p in [50.0, 99.0] {
        if !plan.options.percentiles.contains(&p) {
            plan.options.percentiles.push(p);
        }
    }
    let front_end = loader.front_end();
    let slos = plan.thresholds.clone();
    // Bound before anything runs: a port in use is found before any load is sent. Up for the
    // whole sweep, so that a scraper sees every level.
    let live = args.metrics.map(|address| (address, LiveMetrics::new()));
    let endpoint = match &live {
        Some((address, live)) => Some(crate::metrics_endpoint::MetricsEndpoint::start(*address, live.clone())?),
        None => None,
    };
    let results = args.dashboard.dashboard.is_some().then(horde_report::ResultsWatch::new);
    let dashboard = match &results {
        Some(watch) => Some(crate::dashboard::Dashboard::start(&args.dashboard, watch.clone())?),
        None => None,
    };
    let mut sweep = Sweep {
        plan,
        functions,
        model,
        slos,
        level_ms: settings.level_ms,
        warmup_ms: settings.warmup_ms,
        dir: PathBuf::new(),
        progress: !args.output.quiet,
        front_end: &front_end,
        levels: Vec::new(),
        interrupted: false,
        boundary: None,
        stopped: None,
        live: live.map(|(_, live)| live),
        results,
        cluster: None,
        worker_lost: false,
    };
    // The machines first (the fewest users an automatic search starts with depends on them),
    // then the first level, which must be runnable before anything is created: on this
    // machine, or split over the cluster's.
    let needs = ClusterNeeds { session_function_keys: &function_keys, simulation };
    sweep.cluster = crate::cluster::open(&args.cluster, &sweep.plan, false, needs, loader)?;
    let first = match &settings.levels {
        Some(levels) => levels[0],
        None => sweep.first_auto_level(args),
    };
    sweep.prepare_level(&sweep.level_plan(first), Path::new("of this sweep"))?;
    sweep.dir = crate::results_directory(&args.output, &format!("sweep-{name}"))?;
    status!("horde sweep: results in {}", sweep.dir.display());
    if let Some(endpoint) = &endpoint {
        status!("horde sweep: live metrics at http://{}/metrics, labelled by level", endpoint.address);
    }
    match settings.levels {
        None => sweep.search(args)?,
        Some(levels) => {
            for level in levels {
                if sweep.measure(level)?.is_none() {
                    break;
                }
            }
        }
    }
    drop(endpoint);
    let report = sweep.report();
    if let (Some(dashboard), Some(watch)) = (dashboard, &sweep.results) {
        // The last page is the sweep's own report (written with each level).
        watch.written(&sweep.dir);
        dashboard.close();
    }
    if !args.output.quiet {
        print_text(&report.render());
    }
    status!("horde sweep: table in {0}/sweep.csv, chart in {0}/sweep.svg", sweep.dir.display());
    let worker_loss_allowed = sweep.cluster.as_ref().is_some_and(OpenCluster::worker_loss_allowed);
    // The machines are given back before the verdict is printed.
    drop(sweep.cluster.take());
    let code = if sweep.interrupted {
        exit::INTERRUPTED
    } else if sweep.worker_lost && !worker_loss_allowed {
        exit::WORKER_LOST
    } else if report.levels_judged() == 0 {
        status!("horde sweep: no level was measured: horde could not deliver the load of any on this machine");
        exit::NOTHING_MEASURED
    } else if !report.slos.is_empty()
        && report.highest_meeting_slos.is_none()
        // Levels horde could not deliver say nothing of the server: only a judged level fails.
        && report.levels.iter().any(|l| l.not_delivered.is_none() && !l.interrupted)
    {
        status!("horde sweep: no level met the SLOs ({})", report.slos.join(" and "));
        exit::THRESHOLDS_FAILED
    } else {
        exit::OK
    };
    if args.output.quiet {
        // Scripts read the last line of stdout to find the results.
        print_text(&format!("{}\n", sweep.dir.display()));
    }
    Ok(code)
}

impl Sweep<'_> {
    fn report(&self) -> SweepReport {
        let mut report = SweepReport::analyse(
            &self.plan.name,
            self.model.name(),
            &self.slos,
            self.level_ms,
            self.warmup_ms,
            self.levels.clone(),
        );
        report.boundary = self.boundary.clone();
        report.stopped = self.stopped.clone();
        report
    }

    fn integer_levels(&self) -> bool {
        self.model == Model::Users
    }

    fn first_auto_level(&self, args: &SweepArgs) -> f64 {
        let start = args.start.unwrap_or(if self.integer_levels() { self.fewest_users() } else { 10.0 });
        if self.integer_levels() {
            start.round().max(1.0)
        } else {
            start
        }
    }

    /// The fewest users a closed level can have: 1, or on a cluster, the fewest that give every
    /// machine's share a user (as many as there are machines with equal weights; more when
    /// the weights are unequal).
    fn fewest_users(&self) -> f64 {
        let Some(cluster) = &self.cluster else { return 1.0 };
        let machines = cluster.machine_count() as u64;
        // Bounded: with weights of at most a few thousand in total, a split is found well
        // before; past the bound, the first level says why it cannot run.
        (machines..machines.saturating_mul(1000))
            .find(|&users| cluster.split(&self.level_plan(users as f64)).is_ok())
            .unwrap_or(machines) as f64
    }

    /// A level's verdict: it runs, and runs again if its load was not delivered. None when the
    /// sweep must stop: it was interrupted, the level cannot run here, or the generator could
    /// not deliver it twice (what the sweep would measure beyond is the generator's limit).
    fn measure(&mut self, level: f64) -> Result<Option<SweepLevel>, Failure> {
        let Some(first) = self.run_level(level)? else { return Ok(None) };
        let Some(why) = first.not_delivered.clone() else { return Ok(Some(first)) };
        status!("horde sweep: the load of level {} was not delivered ({why}); running it again", format_level(level));
        let Some(second) = self.run_level(level)? else { return Ok(None) };
        match &second.not_delivered {
            None => Ok(Some(second)),
            Some(why) => {
                let stopped = format!(
                    "horde could not deliver {} {} on this machine, twice ({why}): beyond it, the limit found would be \
                     the load generator's, not the server's (more cores, or fewer other processes, may help)",
                    format_level(level),
                    self.model.unit()
                );
                status!("horde sweep: {stopped}");
                self.stopped = Some(stopped);
                horde_report::write_sweep(&self.report(), &self.dir)
                    .map_err(|e| Failure::Runtime(anyhow::anyhow!("writing the sweep report: {e}")))?;
                Ok(None)
            }
        }
    }

    /// Runs one level once and records it; the report on disk is brought up to date. None
    /// when the sweep must stop here: it was interrupted, or this level cannot run here.
    fn run_level(&mut self, level: f64) -> Result<Option<SweepLevel>, Failure> {
        if signals::interrupted() {
            self.interrupted = true;
            return Ok(None);
        }
        let program = match self.prepare_level(&self.level_plan(level), Path::new("of this sweep level")) {
            Ok(mut program) => {
                if let Some(functions) = &self.functions {
                    program.attach_functions(functions.clone());
                }
                program
            }
            Err(Failure::Invalid(problem)) => {
                let here = if self.cluster.is_some() { "this cluster" } else { "this machine" };
                let stopped = format!("level {} cannot run on {here}: {problem}", format_level(level));
                status!("horde sweep: {stopped}");
                self.stopped = Some(stopped);
                return Ok(None);
            }
            Err(other) => return Err(other),
        };
        let run = 1 + self.levels.iter().filter(|l| l.level == level).count() as u32;
        let label = match run {
            1 => format!("{}-{}", self.model.name(), format_level(level)),
            run => format!("{}-{}-run{run}", self.model.name(), format_level(level)),
        };
        let dir = self.dir.join(&label);
        std::fs::create_dir_all(&dir)
            .map_err(|e| Failure::Runtime(anyhow::anyhow!("creating {}: {e}", dir.display())))?;
        status!(
            "horde sweep: level {} {} for {:.1} s (+{:.1} s warm-up){}",
            format_level(level),
            self.model.unit(),
            self.level_ms as f64 / 1000.0,
            self.warmup_ms as f64 / 1000.0,
            if run > 1 { format!(", run {run}") } else { String::new() }
        );
        let live = self.live.as_ref().map(|live| {
            live.with_labels(vec![("level".into(), format_level(level)), ("level_run".into(), run.to_string())])
        });
        let live = crate::LiveOutputs { metrics: live, results: self.results.clone() };
        let role = self.cluster.as_ref().map(OpenCluster::role).unwrap_or_default();
        let extras = crate::exports::Opened::default();
        let finished = crate::run_into_with(program, &dir, self.progress, self.front_end, live, extras, &role)?;
        finished.results_written()?;
        let arrival_rate = (self.model == Model::Rate).then_some(level);
        let mut result = SweepLevel::from_summary(level, &finished.summary, label, arrival_rate, run);
        let losses = WorkerLosses::of(&finished.summary);
        if let Some(why) = losses.not_delivered() {
            result.not_delivered = Some(why);
        }
        status!(
            "horde sweep:   {} requests, p50 {:.2} ms, p99 {:.2} ms, errors {:.1} %, {:.1} req/s{}{}",
            result.requests,
            result.p50_us as f64 / 1000.0,
            result.p99_us as f64 / 1000.0,
            result.error_rate * 100.0,
            result.throughput_rps,
            if result.broken_slos.is_empty() {
                String::new()
            } else {
                format!(", broke {}", result.broken_slos.join(", "))
            },
            match &result.not_delivered {
                Some(why) => format!(", load not delivered: {why}"),
                None => String::new(),
            }
        );
        self.interrupted = finished.status == RunStatus::Interrupted;
        if !losses.lost.is_empty() && !self.interrupted {
            let stopped = format!(
                "level {} lost a worker ({}): the sweep stops, since the levels after it would run on fewer machines \
                 (--on-worker-loss replace runs a level again on a spare)",
                format_level(level),
                losses.lost.join("; ")
            );
            status!("horde sweep: {stopped}");
            self.stopped = Some(stopped);
            self.worker_lost = true;
        }
        self.levels.push(result.clone());
        horde_report::write_sweep(&self.report(), &self.dir)
            .map_err(|e| Failure::Runtime(anyhow::anyhow!("writing the sweep report: {e}")))?;
        Ok((!self.interrupted && !self.worker_lost).then_some(result))
    }

    /// A level's program, ready to run here, or to be coordinated over the cluster's machines
    /// (each checks its own limits; here, that the level splits into a share per machine).
    fn prepare_level(&self, plan: &Plan, source: &Path) -> Result<horde_engine::Program, Failure> {
        match &self.cluster {
            None => prepare(plan, source),
            Some(cluster) => {
                cluster.split(plan)?;
                crate::prepare_to_coordinate(plan, source)
            }
        }
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
    /// the first bad one, then a second run of both to confirm the boundary. Bad: an SLO
    /// broke, or throughput grew less than half as fast as load.
    fn search(&mut self, args: &SweepArgs) -> Result<(), Failure> {
        let integer = self.integer_levels();
        let max = args.max_level.unwrap_or(if integer { 10_000.0 } else { 100_000.0 });
        let mut last_good: Option<SweepLevel> = None;
        let mut first_bad: Option<SweepLevel> = None;
        let mut level = self.first_auto_level(args).min(max);
        loop {
            let Some(result) = self.measure(level)? else { return Ok(()) };
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
            let Some(result) = self.measure(middle)? else { return Ok(()) };
            if is_good(&result, Some(&low)) {
                low = result;
            } else {
                high = result;
            }
        }
        self.confirm(low, high)
    }

    /// Runs the last good and the first bad level again: the boundary holds when they keep
    /// their verdicts. A noisy machine or server shows as an unconfirmed boundary.
    fn confirm(&mut self, low: SweepLevel, high: SweepLevel) -> Result<(), Failure> {
        status!(
            "horde sweep: confirming the boundary between {} and {} {}",
            format_level(low.level),
            format_level(high.level),
            self.model.unit()
        );
        let Some(low_again) = self.measure(low.level)? else { return Ok(()) };
        let Some(high_again) = self.measure(high.level)? else { return Ok(()) };
        let confirmed = low_again.meets_slos() && !is_good(&high_again, Some(&low_again));
        self.boundary = Some(Boundary { last_good: low.level, first_bad: high.level, confirmed });
        horde_report::write_sweep(&self.report(), &self.dir)
            .map_err(|e| Failure::Runtime(anyhow::anyhow!("writing the sweep report: {e}")))?;
        Ok(())
    }
}

/// A level is good when it meets the SLOs and its throughput still grows at least half as fast
/// as the load did since `previous`.
fn is_good(level: &SweepLevel, previous: Option<&SweepLevel>) -> bool {
    level.meets_slos() && previous.is_none_or(|previous| level.still_scaling_from(previous))
}

/// `--late-start-threshold`: a duration (`2ms`, `1s`), or microseconds (`500us`) below a
/// millisecond.
fn parse_threshold_us(text: &str) -> Result<u64, String> {
    match text.trim().strip_suffix("us") {
        Some(micros) => match micros.trim().parse::<u64>() {
            Ok(us) if us >= 1 => Ok(us),
            _ => Err(format!("{text:?} is not a whole number of microseconds of at least 1 (try 500us, 2ms)")),
        },
        None => parse_duration_ms(text).map(|ms| ms * 1000),
    }
}

/// A plan that GETs one URL: users loop on keep-alive connections (closed model), or each
/// arrival sends one request (open model).
fn url_plan(url: &str, model: Model) -> Plan {
    let request: Step = HttpStep::Request(Request {
        // The row's name is in every result: never a password.
        name: format!("GET {}", horde_plan::redacted_url(url)),
        method: "GET".into(),
        url: horde_plan::escape_template(url),
        headers: vec![],
        query: vec![],
        body: None,
        checks: vec![],
        resources: vec![],
        follow_redirects: None,
    })
    .into();
    let steps = match model {
        // The level's maximum duration ends the loop.
        Model::Users => {
            vec![CoreStep::During { duration_ms: MAX_DURATION_MS, counter: None, steps: vec![request] }.into()]
        }
        Model::Rate => vec![request],
    };
    let scenario =
        Scenario { name: "url".into(), steps, injection: vec![Injection::AtOnceUsers { users: 1 }], after: None };
    Plan {
        options: horde_plan::RunOptions {
            on_check_failure: horde_plan::OnCheckFailure::Continue,
            ..Default::default()
        },
        ..Plan::new("url", vec![scenario])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(level: f64, throughput: f64) -> SweepLevel {
        SweepLevel { level, requests: 10, ok: 10, throughput_rps: throughput, run: 1, ..SweepLevel::default() }
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
