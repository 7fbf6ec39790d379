//! A run of several processes: on the machines of a distributed engine (`--cluster`, Dask
//! through horde.cluster), or through a spool directory (the hidden `--share-spool` and
//! `--coordinate-spool` flags). The engine's shares and coordinator, with their failures as
//! exit codes.

use crate::loader::{ClusterOpenError, SimulationFile, SimulationLoader};
use crate::{args, Failure};
use horde_engine::cluster::spool::{SpoolCoordinatorLink, SpoolShareLink};
use horde_engine::cluster::{share_plans, ClusterError, CoordinatorOptions, ShareHosts, ShareLink};
use horde_engine::{Program, RunControl, RunResult};
use horde_metrics::{RequestLogOutput, Sink};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The machines of `--cluster`, given back to their engine (a cluster horde started is
/// stopped) when the command is done with them, and the weight of each.
pub(crate) struct OpenCluster {
    hosts: Arc<dyn ShareHosts>,
    loss: args::LossHandling,
    weights: Vec<u64>,
    /// `--cluster-weights` as given, to name it in an error.
    weights_flag: Option<args::ClusterWeights>,
}

impl OpenCluster {
    pub fn role(&self) -> args::ClusterRole {
        args::ClusterRole::Hosts { hosts: self.hosts.clone(), loss: self.loss, weights: self.weights.clone() }
    }
}

impl Drop for OpenCluster {
    fn drop(&mut self) {
        self.hosts.close();
    }
}

/// What a run asks of `--cluster` beyond its plan: the Python session functions its
/// simulation calls (each worker loads `simulation` to run them).
#[derive(Default)]
pub(crate) struct ClusterNeeds<'a> {
    pub session_function_keys: &'a [String],
    pub simulation: Option<SimulationFile>,
}

impl<'a> ClusterNeeds<'a> {
    pub fn of(program: &'a Program, simulation: Option<SimulationFile>) -> Self {
        ClusterNeeds { session_function_keys: &program.session_function_keys, simulation }
    }
}

/// With `--cluster`, checks that `plan` can run on it, then connects to its machines (or
/// starts them), and checks that `plan` splits over them (unless `split` is false: a sweep
/// chooses its first level once it knows the machines). The plan's `options.cluster` (the
/// flags applied over it) says how many spares to keep and what a lost worker does.
pub(crate) fn open(
    flags: &args::ClusterArgs,
    plan: &horde_plan::Plan,
    split: bool,
    needs: ClusterNeeds,
    loader: &dyn SimulationLoader,
) -> Result<Option<OpenCluster>, Failure> {
    let Some(spec) = &flags.cluster else { return Ok(None) };
    let mut problems = Vec::new();
    // The shares need the functions only if the plan calls them (hooks run here).
    let simulation = needs.simulation.filter(|_| !needs.session_function_keys.is_empty());
    if !needs.session_function_keys.is_empty() && simulation.is_none() {
        problems.push(format!(
            "--cluster {spec}: the plan calls Python session functions ({}), which live only in the simulation \
             that defined them: run that simulation (.py), whose file every worker loads",
            needs.session_function_keys.join(", ")
        ));
    }
    if !problems.is_empty() {
        return Err(crate::invalid_flags(problems));
    }
    let settings = plan.options.cluster.unwrap_or_default();
    let hosts = loader.open_cluster(spec, settings.spares, simulation.as_ref()).map_err(|err| match err {
        ClusterOpenError::Invalid(message) => Failure::Invalid(message),
        ClusterOpenError::Unavailable(message) => Failure::Runtime(anyhow::anyhow!("--cluster {spec}: {message}")),
        ClusterOpenError::Interrupted => Failure::Interrupted("while starting the cluster"),
    })?;
    // Closed when dropped, from here on: on an error below too.
    let mut cluster = OpenCluster {
        hosts,
        loss: args::LossHandling::of(&settings),
        weights: Vec::new(),
        weights_flag: flags.cluster_weights.clone(),
    };
    let machines = cluster.hosts.machines();
    cluster.weights = match &flags.cluster_weights {
        None => vec![1; machines.len()],
        Some(args::ClusterWeights::Given(weights)) => weights.clone(),
        Some(args::ClusterWeights::Cores) => cluster
            .hosts
            .cores()
            .map_err(|problem| Failure::Runtime(anyhow::anyhow!("--cluster-weights cores: {problem}")))?,
    };
    // Checked now, before a results directory is made: the weights, a share without users.
    if split {
        cluster.split(plan)?;
    }
    Ok(Some(cluster))
}

impl OpenCluster {
    /// Whether `plan` can be cut into a share per machine: the weights fit the machines, and
    /// no share would be without a virtual user.
    pub fn split(&self, plan: &horde_plan::Plan) -> Result<(), Failure> {
        let machines = self.hosts.machines();
        let split = share_plans(plan, &machines, &self.weights, self.hosts.threads_per_share());
        split.map(drop).map_err(|err| match &self.weights_flag {
            Some(weights) if err.concerns_weights() => Failure::Invalid(format!("--cluster-weights {weights}: {err}")),
            _ => failure(err),
        })
    }

    /// How many machines run a share.
    pub fn machine_count(&self) -> usize {
        self.weights.len()
    }

    /// Whether a lost worker leaves the command's exit code alone (`--allow-worker-loss`).
    pub fn worker_loss_allowed(&self) -> bool {
        self.loss.allowed
    }
}

/// Coordinates `program` over the machines of `hosts`: a share each, as `weights` cut them,
/// started together, their intervals merged into `sink`.
pub(crate) fn coordinate_hosts(
    program: Arc<Program>,
    control: &RunControl,
    sink: &mut (dyn Sink + Send),
    hosts: Arc<dyn ShareHosts>,
    weights: &[u64],
    on_loss: horde_engine::cluster::WorkerLossPolicy,
    request_log: Option<RequestLogOutput>,
) -> Result<RunResult, Failure> {
    let machines = hosts.machines();
    let mut plans = share_plans(&program.plan, &machines, weights, hosts.threads_per_share()).map_err(failure)?;
    if on_loss == horde_engine::cluster::WorkerLossPolicy::Replace {
        horde_engine::cluster::bound_rows_by_grants(&mut plans, program.counters.len());
    }
    // Each share sends its records here, in the file's format.
    for plan in &mut plans {
        if let (Some(segment), Some(log)) = (&mut plan.options.execution_segment, &request_log) {
            segment.request_log = Some(log.format.into());
        }
    }
    let plans_json: Vec<String> = plans.iter().map(|plan| plan.to_json_pretty()).collect();
    hosts.launch(&plans_json).map_err(|problem| Failure::Runtime(anyhow::anyhow!("starting the shares: {problem}")))?;
    let options = CoordinatorOptions {
        on_loss,
        share_plans: plans,
        request_log: request_log.map(|log| log.chunks),
        ..CoordinatorOptions::new(machines.len())
    };
    let result = horde_engine::cluster::run_coordinated(program, control, sink, hosts.clone(), &options);
    // Before the next run on the same machines (a sweep's next level) is launched.
    hosts.end_run();
    result.map_err(failure)
}

/// How a share that a distributed engine started ended: its run's status, or why it could not
/// run, with the exit code the command line would have given.
pub type ShareOutcome = Result<String, (i32, String)>;

/// Runs a share's plan (JSON, cut by the coordinator) as a share linked to its coordinator by
/// `link`, its own results in `dir`: what a Dask worker runs for horde.cluster, with the
/// simulation's session `functions` when the plan calls any (the worker loaded the
/// simulation for them). The plan is checked as any run's (this machine's open-file limit,
/// the protocols' preflight) before it reports ready.
pub fn run_linked_share(
    plan_json: &str,
    dir: &Path,
    link: Arc<dyn ShareLink>,
    functions: Option<Arc<dyn horde_engine::SessionFunctions>>,
) -> ShareOutcome {
    let run = || -> Result<String, Failure> {
        let source = Path::new("the coordinator's plan");
        let plan = horde_plan::Plan::from_json(plan_json)
            .map_err(|errors| Failure::Invalid(crate::invalid_plan_message(source, &errors)))?;
        let mut program = crate::prepare(&plan, source)?;
        match functions {
            Some(functions) => program.attach_functions(functions),
            None if !program.session_function_keys.is_empty() => {
                return Err(Failure::Invalid(format!(
                    "the plan calls session functions ({}), and this worker was given no simulation to load them from",
                    program.session_function_keys.join(", ")
                )));
            }
            None => {}
        }
        std::fs::create_dir_all(dir)
            .map_err(|err| Failure::Runtime(anyhow::anyhow!("creating {}: {err}", dir.display())))?;
        let role = args::ClusterRole::LinkedShare(link);
        let finished = crate::run_into_with(
            program,
            dir,
            false,
            "share",
            Default::default(),
            crate::exports::Opened::default(),
            &role,
        )?;
        finished.results_written()?;
        Ok(finished.status.as_str().to_string())
    };
    run().map_err(crate::exit_code_and_message)
}

/// Runs `program`'s execution segment as a share whose messages go through `spool`.
pub(crate) fn run_share(
    program: Arc<Program>,
    control: &RunControl,
    sink: &mut (dyn Sink + Send),
    request_log: Option<RequestLogOutput>,
    spool: &Path,
    ready_timeout: Duration,
) -> Result<RunResult, Failure> {
    let share = program
        .plan
        .options
        .execution_segment
        .as_ref()
        .and_then(|segment| segment.resolve().ok())
        .map(|segmentation| segmentation.index)
        .ok_or_else(|| failure(ClusterError::NoSegment))?;
    let link = SpoolShareLink::create(spool, share, ready_timeout)
        .map_err(|err| Failure::Runtime(anyhow::anyhow!("--share-spool {}: {err}", spool.display())))?;
    horde_engine::cluster::run_share(program, control, sink, request_log, Arc::new(link)).map_err(failure)
}

/// Coordinates the shares of `program` through `spool`.
pub(crate) fn coordinate(
    program: Arc<Program>,
    control: &RunControl,
    sink: &mut (dyn Sink + Send),
    spool: &Path,
    options: &CoordinatorOptions,
) -> Result<RunResult, Failure> {
    let link = SpoolCoordinatorLink::create(spool, options.shares)
        .map_err(|err| Failure::Runtime(anyhow::anyhow!("--coordinate-spool {}: {err}", spool.display())))?;
    horde_engine::cluster::run_coordinated(program, control, sink, Arc::new(link), options).map_err(failure)
}

/// A share's or coordinator's failure before the start: nothing was sent.
pub(crate) fn failure(err: ClusterError) -> Failure {
    match err {
        ClusterError::NoSegment
        | ClusterError::NoUsers { .. }
        | ClusterError::WeightCount { .. }
        | ClusterError::ZeroWeight { .. }
        | ClusterError::WeightsTooFine { .. } => Failure::Invalid(err.to_string()),
        ClusterError::Interrupted => Failure::Interrupted("waiting for the shares to be ready"),
        ClusterError::NotReady { .. }
        | ClusterError::NotStarted { .. }
        | ClusterError::Wire(_)
        | ClusterError::Link(_) => Failure::Runtime(anyhow::anyhow!("{err}")),
    }
}

/// What a coordinated run lost: shares lost for good, shares replaced on a spare,
/// shares whose intervals did not all reach the coordinator. Each says which and why.
#[derive(Default)]
pub(crate) struct WorkerLosses {
    /// Shares lost for good: a sweep stops at them.
    pub lost: Vec<String>,
    replaced: Vec<String>,
    unmerged: Vec<String>,
}

impl WorkerLosses {
    pub(crate) fn of(summary: &horde_report::Summary) -> WorkerLosses {
        let mut losses = WorkerLosses::default();
        for machine in &summary.machines {
            if let Some(why) = &machine.lost {
                losses.lost.push(format!("share {} on {}: {why}", machine.share, machine.host));
            }
            for replacement in &machine.replaced {
                losses.replaced.push(format!(
                    "share {} was lost and replaced, its load until {:.1} s missing",
                    machine.share, replacement.resume_after_s
                ));
            }
            if machine.verified == Some(false) {
                losses.unmerged.push(format!("share {}'s intervals did not all reach the coordinator", machine.share));
            }
        }
        losses
    }

    /// Why the run's load was not wholly delivered (or measured), if it was not: a sweep's
    /// level or a benchmark's trial that says nothing of the server.
    pub(crate) fn not_delivered(&self) -> Option<String> {
        let reasons: Vec<&str> =
            self.lost.iter().chain(&self.replaced).chain(&self.unmerged).map(String::as_str).collect();
        (!reasons.is_empty()).then(|| reasons.join("; "))
    }
}
