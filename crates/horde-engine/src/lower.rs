//! Lowering: the Plan (stable, readable) becomes the Program (fast to run). Everything that can
//! be decided once is decided here: templates are parsed, variable names become slots,
//! regexes, selectors and JSONPath queries are compiled, static URLs and bodies are built, and
//! files are read. Whatever fails is reported with its plan path.

use horde_plan::{
    parse_condition, parse_template, CheckSource, CompareOp, Injection, Plan, PlanError, Select, Step, Validation,
};
use horde_plan::{CoreSource, CoreStep};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::checks::{BodyExtractor, OwnSource};
pub use crate::checks::{CheckProgram, Expected, Extractor, ValidationProgram};
use crate::protocol::{Lowerings, ProtocolPrograms, ProtocolStepProgram};
use crate::segment::{RunCounter, Share};
pub use crate::session::expression::Template;
use crate::session::expression::{CompiledCondition, Names};
use crate::session::feeder::FeederRuntime;
use crate::session::functions::{FunctionCost, SessionFunctions};

/// A plan ready to run.
pub struct Program {
    pub plan: Plan,
    pub scenarios: Vec<ScenarioProgram>,
    /// Slot index -> variable name.
    pub variables: Vec<String>,
    /// Row index -> statistics row name, for every request in the plan.
    pub rows: Vec<Arc<str>>,
    /// Row index -> the HTTP method of the requests on that row, for rows of HTTP requests
    /// (Locust's `Type` column).
    pub row_methods: Vec<Option<&'static str>>,
    pub groups: Vec<Arc<str>>,
    /// What each protocol needs for the whole run: its settings, and what its steps share.
    pub protocols: ProtocolPrograms,
    /// Pace steps in the plan; each user remembers when it last passed each one.
    pub paces: usize,
    /// Schemas of generated bodies, by id: each user gets a generator for each.
    pub schemas: Vec<Arc<horde_docgen::Schema>>,
    /// The plan's feeders, loaded, in the plan's order.
    pub feeders: Vec<Arc<FeederRuntime>>,
    /// The run-wide counters (`${__counter(name)}`, round-robin switches), in the order the
    /// plan first uses them (the same in every process of a run): what row grants bound after
    /// the feeders.
    pub counters: Vec<Arc<RunCounter>>,
    /// Variable name -> slot: what a session function's changes are applied by.
    pub variable_slots: HashMap<String, usize>,
    /// The keys of the session functions the plan calls; empty when it calls none.
    pub session_function_keys: Vec<String>,
    /// What runs them: given by the front end that defined them ([`Program::attach_functions`]).
    pub session_functions: Option<Arc<dyn SessionFunctions>>,
    /// Their calls and time, across every worker.
    pub function_cost: Arc<FunctionCost>,
    /// The plan's thresholds, parsed, their named scopes checked against `rows` and `groups`.
    pub thresholds: Vec<horde_plan::ThresholdSpec>,
    /// What this process runs of the plan: all of it, or its execution segment's share.
    pub share: Share,
}

impl Program {
    /// Gives the program the functions its `session_function` steps call.
    pub fn attach_functions(&mut self, functions: Arc<dyn SessionFunctions>) {
        self.session_functions = Some(functions);
    }
}

pub struct ScenarioProgram {
    pub name: Arc<str>,
    pub steps: Vec<StepProgram>,
    pub injection: Vec<Injection>,
    /// The scenario that must finish before this one starts.
    pub after: Option<usize>,
}

/// A step as a user runs it: the core's own (pauses, control flow, the session), or a
/// protocol's, which the core runs without looking inside.
pub enum StepProgram {
    Protocol(ProtocolStepProgram),
    Pause(PauseKind),
    /// `id` indexes the user's record of when it last passed this step.
    Pace {
        id: usize,
        duration: Duration,
    },
    Repeat {
        times: u64,
        counter: Option<usize>,
        body: Vec<StepProgram>,
    },
    During {
        duration: Duration,
        counter: Option<usize>,
        body: Vec<StepProgram>,
    },
    Group {
        group: usize,
        body: Vec<StepProgram>,
    },
    /// Take a feeder's next record(s): `slots[i]` receives column `i`.
    Feed {
        feeder: Arc<FeederRuntime>,
        slots: Vec<usize>,
        count: u32,
    },
    /// `row_id`: where a value that cannot be computed is counted.
    Set {
        values: Vec<(usize, Template)>,
        row_id: usize,
    },
    Unset(Vec<usize>),
    /// `do_if`, `do_if_or_else`, `do_switch`, the random and round-robin switches: a choice of
    /// one branch.
    Choose(Box<ChoiceProgram>),
    Loop(Box<LoopProgram>),
    /// `try_max` and `eventually`.
    Retry(Box<RetryProgram>),
    /// End the user: always, when `condition` holds, or (`if_failed`) when a request of its failed.
    Exit {
        condition: Option<Box<ConditionProgram>>,
        if_failed: bool,
    },
    /// A failed request leaves `body` at once; the chain goes on after it.
    ExitBlockOnFail(Vec<StepProgram>),
    StopLoadGenerator {
        message: Arc<str>,
        condition: Option<Box<ConditionProgram>>,
    },
    /// A front end's function with the session; `row_id` counts what it raises.
    SessionFunction {
        key: Arc<str>,
        row_id: usize,
    },
}

/// A condition, with the row its evaluation errors are counted under (a condition is no
/// request: an undefined variable in it is an error in that row, not a KO request).
pub struct ConditionProgram {
    pub condition: CompiledCondition,
    pub row_id: usize,
}

pub enum ChoiceProgram {
    If {
        condition: ConditionProgram,
        then: Vec<StepProgram>,
        otherwise: Vec<StepProgram>,
    },
    Switch {
        value: Template,
        row_id: usize,
        cases: Vec<(Template, Vec<StepProgram>)>,
        otherwise: Vec<StepProgram>,
    },
    /// `bounds[i]` is the upper end of case i's share of [0, 100); above the last, `otherwise`.
    Random {
        bounds: Vec<f64>,
        cases: Vec<Vec<StepProgram>>,
        otherwise: Vec<StepProgram>,
    },
    Uniform(Vec<Vec<StepProgram>>),
    /// Each pass, by any user of the run, takes the next case.
    RoundRobin {
        next: Arc<RunCounter>,
        cases: Vec<Vec<StepProgram>>,
    },
}

pub enum LoopProgram {
    Foreach {
        list: Template,
        row_id: usize,
        element: usize,
        counter: Option<usize>,
        body: Vec<StepProgram>,
    },
    /// `as_long_as` tests before each pass, `do_while` after.
    While {
        condition: ConditionProgram,
        test_first: bool,
        exit_on_fail: bool,
        counter: Option<usize>,
        body: Vec<StepProgram>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryKind {
    TryMax,
    Eventually,
}

pub struct RetryProgram {
    pub kind: RetryKind,
    /// The block's own row, a group: one outcome per pass through the block.
    pub group: usize,
    /// Where the block's failure (its last attempt's, with the count) is counted.
    pub row_id: usize,
    pub times: Option<u32>,
    pub pause: Duration,
    pub timeout: Option<Duration>,
    pub counter: Option<usize>,
    pub body: Vec<StepProgram>,
}

pub use crate::pause::{PauseKind, TemplatePause};

/// Validates the plan and lowers it. Every problem found, in either pass, is returned at
/// once: a bad regex or a missing file is named along with a bad duration, not after it is
/// fixed. Lowering therefore copes with an invalid plan, and what it finds again at a place
/// validation already named is left out.
pub fn lower(plan: &Plan) -> Result<Program, Vec<PlanError>> {
    let mut errors = plan.validate();
    let mut cx = LoweringContext {
        variables: HashMap::new(),
        variable_names: Vec::new(),
        rows: Vec::new(),
        row_methods: Vec::new(),
        groups: Vec::new(),
        errors: Vec::new(),
        base_dir: plan.base_dir.as_ref().map(PathBuf::from),
        paces: 0,
        schemas: Vec::new(),
        defined: HashSet::new(),
        first_reads: HashMap::new(),
        current_path: String::new(),
        counters: HashMap::new(),
        counter_order: Vec::new(),
        share: Share::of(plan),
        feeders: Vec::new(),
        feeder_sources: Vec::new(),
        session_function_keys: Vec::new(),
    };
    cx.load_feeders(plan);
    for scenario in &plan.scenarios {
        cx.collect_defined(&scenario.steps);
    }
    let mut protocols = Lowerings::new(plan, &mut cx);
    let scenarios = plan
        .scenarios
        .iter()
        .enumerate()
        .map(|(i, scenario)| ScenarioProgram {
            name: scenario.name.as_str().into(),
            steps: cx.steps(
                &mut protocols,
                StepAt { path: &format!("scenarios[{i}].steps"), group_prefix: "" },
                &scenario.steps,
            ),
            injection: scenario.injection.clone(),
            after: scenario.after.as_ref().and_then(|name| plan.scenarios.iter().position(|s| &s.name == name)),
        })
        .collect();
    // A session function may set any variable, and a feeder that could not be read any of
    // its columns: then what the plan sets cannot be known here (the unreadable file is
    // named already).
    if cx.session_function_keys.is_empty() && cx.feeders.len() == plan.feeders.len() {
        cx.never_set_variables();
    }
    let protocols = protocols.finish(plan, &mut cx);
    cx.skip_granted_counters(plan);
    let thresholds = crate::thresholds::resolve(plan, &cx.rows, &cx.groups, &mut cx.errors);
    for error in std::mem::take(&mut cx.errors) {
        let named_already = errors.iter().any(|known| {
            error
                .path
                .strip_prefix(known.path.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
        });
        if !named_already {
            errors.push(error);
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Program {
        plan: plan.clone(),
        scenarios,
        variables: cx.variable_names,
        row_methods: {
            let mut methods = cx.row_methods;
            methods.resize(cx.rows.len(), None);
            methods
        },
        rows: cx.rows,
        groups: cx.groups,
        paces: cx.paces,
        schemas: cx.schemas,
        feeders: cx.feeders,
        counters: cx.counter_order,
        variable_slots: cx.variables,
        session_function_keys: cx.session_function_keys,
        session_functions: None,
        function_cost: Arc::default(),
        thresholds,
        share: cx.share,
        protocols,
    })
}

/// Where a step is in the plan: its path, for errors, and the groups around it, which prefix
/// the names of its rows.
#[derive(Clone, Copy)]
pub(crate) struct StepAt<'a> {
    pub(crate) path: &'a str,
    pub(crate) group_prefix: &'a str,
}

impl<'a> StepAt<'a> {
    /// The same groups, another path (a nested request, a case's steps).
    pub(crate) fn at<'b>(&self, path: &'b str) -> StepAt<'b>
    where
        'a: 'b,
    {
        StepAt { path, group_prefix: self.group_prefix }
    }

    /// A row's name as its groups prefix it: `group / request`.
    pub(crate) fn row_name(&self, name: &str) -> Arc<str> {
        format!("{}{name}", self.group_prefix).into()
    }
}

/// What lowering any step needs and the core keeps: variable slots, rows, groups, files,
/// checks, errors. Each protocol's lowering gets it beside its own state
/// ([`crate::protocol::Lowerings`]).
pub(crate) struct LoweringContext {
    variables: HashMap<String, usize>,
    variable_names: Vec<String>,
    rows: Vec<Arc<str>>,
    row_methods: Vec<Option<&'static str>>,
    groups: Vec<Arc<str>>,
    /// Every problem found while lowering, with its path.
    pub(crate) errors: Vec<PlanError>,
    /// Where the plan's relative file names are read from.
    pub(crate) base_dir: Option<PathBuf>,
    paces: usize,
    schemas: Vec<Arc<horde_docgen::Schema>>,
    /// Every variable name the plan sets anywhere: by a check, a counter, a feeder's column,
    /// a `set` or a `foreach`. A dotted name in a template names one of these when it can.
    defined: HashSet<String>,
    /// Where each variable slot is first read: a name read but never set is an error there.
    first_reads: HashMap<usize, String>,
    /// The plan path of the step being lowered, for errors of its templates.
    current_path: String,
    counters: HashMap<String, Arc<RunCounter>>,
    /// Every counter, named or a round-robin switch's, as first made.
    counter_order: Vec<Arc<RunCounter>>,
    /// This process's share of the run: counters and feeder rows are striped by it.
    share: Share,
    feeders: Vec<Arc<FeederRuntime>>,
    /// Each feeder's source, as errors name it (the file, or the plan's inline records).
    feeder_sources: Vec<String>,
    session_function_keys: Vec<String>,
}

impl Names for LoweringContext {
    fn variable(&mut self, path: &[String]) -> (usize, usize) {
        let (slot, used) = self.probe(path);
        self.first_reads.entry(slot).or_insert_with(|| self.current_path.clone());
        (slot, used)
    }

    fn probe(&mut self, path: &[String]) -> (usize, usize) {
        let used = (1..=path.len()).rev().find(|&used| self.defined.contains(&path[..used].join("."))).unwrap_or(1);
        (self.slot(&path[..used].join(".")), used)
    }

    fn counter(&mut self, name: &str) -> Arc<RunCounter> {
        if let Some(counter) = self.counters.get(name) {
            return counter.clone();
        }
        let counter = self.new_counter();
        self.counters.insert(name.to_string(), counter.clone());
        counter
    }
}

impl LoweringContext {
    /// A run-wide counter, striped by this process's share.
    fn new_counter(&mut self) -> Arc<RunCounter> {
        let counter = Arc::new(RunCounter::new(self.share.work.clone()));
        self.counter_order.push(counter.clone());
        counter
    }

    /// A replacement share starts each counter after the values its lost attempt may have
    /// taken (`row_grants.counters_from`, one per counter).
    fn skip_granted_counters(&mut self, plan: &Plan) {
        let grants = plan.options.execution_segment.as_ref().and_then(|segment| segment.row_grants.as_ref());
        let Some(grants) = grants.filter(|grants| !grants.counters_from.is_empty()) else { return };
        if grants.counters_from.len() != self.counter_order.len() {
            self.errors.push(PlanError::new(
                "options.execution_segment.row_grants.counters_from",
                format!(
                    "{} counts for {} run-wide counters: one per counter of the plan",
                    grants.counters_from.len(),
                    self.counter_order.len()
                ),
            ));
            return;
        }
        for (counter, &from) in self.counter_order.iter().zip(&grants.counters_from) {
            counter.skip_takes(from);
        }
    }

    pub(crate) fn slot(&mut self, name: &str) -> usize {
        if let Some(&slot) = self.variables.get(name) {
            return slot;
        }
        let slot = self.variable_names.len();
        self.variables.insert(name.to_string(), slot);
        self.variable_names.push(name.to_string());
        slot
    }

    /// A template validation checked; one it refused is taken literally, to go on lowering.
    pub(crate) fn template(&mut self, text: &str) -> Template {
        let Ok(segments) = parse_template(text) else {
            return Template::literal(text);
        };
        match Template::compile(segments, self) {
            Ok(template) => template,
            Err(message) => {
                self.errors.push(PlanError::new(self.current_path.clone(), format!("{text:?}: {message}")));
                Template::literal(text)
            }
        }
    }

    /// A condition validation checked; one it refused never holds, to go on lowering.
    fn condition(&mut self, path: &str, text: &str, row_name: &str) -> ConditionProgram {
        let row_id = self.row(row_name.into());
        let never = || CompiledCondition::Or(Vec::new());
        let Ok(parsed) = parse_condition(text) else {
            return ConditionProgram { condition: never(), row_id };
        };
        match CompiledCondition::compile(parsed, self) {
            Ok(condition) => ConditionProgram { condition, row_id },
            Err(message) => {
                self.errors.push(PlanError::new(path, message));
                ConditionProgram { condition: never(), row_id }
            }
        }
    }

    /// Reads every feeder's source now: a missing file, a ragged line or bad JSON is a plan
    /// error with the file and line, before anything is sent.
    fn load_feeders(&mut self, plan: &Plan) {
        let seed = crate::segment::shared_seed(plan).unwrap_or_else(rand::random);
        let row_grants = plan.options.execution_segment.as_ref().and_then(|segment| segment.row_grants.as_ref());
        if let Some(grants) = row_grants.filter(|grants| grants.from.len() != plan.feeders.len()) {
            self.errors.push(PlanError::new(
                "options.execution_segment.row_grants.from",
                format!("{} counts for {} feeders: one per feeder of the plan", grants.from.len(), plan.feeders.len()),
            ));
        }
        for (i, feeder) in plan.feeders.iter().enumerate() {
            let row_id = self.row(format!("feed {}", feeder.name).into());
            let file = feeder.source.path().map(|p| self.resolve_file(p));
            match FeederRuntime::load(feeder, file, row_id, seed ^ i as u64, self.share.work.clone()) {
                Ok(runtime) => {
                    // A replacement share starts after every row its lost attempt may have used.
                    if let Some(&from) = row_grants.and_then(|grants| grants.from.get(i)) {
                        runtime.skip_takes(from);
                    }
                    self.feeder_sources.push(runtime.origin.clone());
                    self.feeders.push(Arc::new(runtime));
                }
                Err(message) => {
                    let field = if feeder.source.path().is_some() { ".source.path" } else { "" };
                    self.errors.push(PlanError::new(format!("feeders[{i}]{field}"), message));
                    self.feeder_sources.push(String::new());
                }
            }
        }
    }

    fn feeder(&self, name: &str) -> Option<Arc<FeederRuntime>> {
        self.feeders.iter().find(|f| &*f.name == name).cloned()
    }

    /// Every name the steps set, so that `${a.b}` can tell the variable `a.b` from field `b`
    /// of `a`, and a name never set can be named before the run.
    fn collect_defined(&mut self, steps: &[Step]) {
        Step::walk(steps, &mut |step| self.collect_defined_by(step));
    }

    /// The variables one step sets (its nested steps are walked apart).
    fn collect_defined_by(&mut self, step: &Step) {
        let Step::Core(step) = step else {
            return crate::protocol::saved_variables(step, &mut |name| {
                self.defined.insert(name.to_string());
            });
        };
        match step {
            CoreStep::Repeat { counter, .. }
            | CoreStep::During { counter, .. }
            | CoreStep::AsLongAs { counter, .. }
            | CoreStep::DoWhile { counter, .. }
            | CoreStep::TryMax { counter, .. }
            | CoreStep::Eventually { counter, .. } => self.defined.extend(counter.iter().cloned()),
            CoreStep::Foreach { element, counter, .. } => {
                self.defined.insert(element.clone());
                self.defined.extend(counter.iter().cloned());
            }
            CoreStep::Feed { feeder, .. } => {
                if let Some(feeder) = self.feeder(feeder) {
                    self.defined.extend(feeder.columns.iter().cloned());
                }
            }
            CoreStep::Set { values } => self.defined.extend(values.iter().map(|v| v.name.clone())),
            _ => {}
        }
    }

    /// A variable read but set nowhere in the plan is a mistyped name (a feeder's column, a
    /// saved value): an error where it is first read, naming what the plan does set.
    fn never_set_variables(&mut self) {
        let mut unset: Vec<(usize, String)> = self
            .first_reads
            .iter()
            .filter(|(slot, _)| !self.defined.contains(&self.variable_names[**slot]))
            .map(|(slot, path)| (*slot, path.clone()))
            .collect();
        unset.sort();
        for (slot, path) in unset {
            let name = &self.variable_names[slot];
            let mut known: Vec<&str> = self.defined.iter().map(String::as_str).collect();
            known.sort_unstable();
            let feeders: Vec<String> = self
                .feeders
                .iter()
                .map(|f| format!("feeder {:?} ({}) has {}", f.name, f.origin, f.columns.join(", ")))
                .collect();
            let mut message = format!(
                "${{{name}}} is never set: no check saves it, no feeder has it as a column, no set or loop names it"
            );
            if !feeders.is_empty() {
                message.push_str(&format!("; {}", feeders.join("; ")));
            } else if !known.is_empty() {
                message.push_str(&format!("; the plan sets {}", known.join(", ")));
            }
            self.errors.push(PlanError::new(path, message));
        }
    }

    fn steps(&mut self, protocols: &mut Lowerings, at: StepAt, steps: &[Step]) -> Vec<StepProgram> {
        steps
            .iter()
            .enumerate()
            .map(|(i, step)| {
                let path = format!("{}[{i}]", at.path);
                self.current_path = path.clone();
                let at = at.at(&path);
                match step {
                    Step::Core(step) => self.core_step(protocols, at, step),
                    step => StepProgram::Protocol(protocols.lower_step(self, at, step)),
                }
            })
            .collect()
    }

    fn core_step(&mut self, protocols: &mut Lowerings, at: StepAt, step: &CoreStep) -> StepProgram {
        let (path, group_prefix) = (at.path, at.group_prefix);
        let step_ref = step;
        match step {
            CoreStep::Pause { duration_ms } => {
                StepProgram::Pause(PauseKind::Fixed(Duration::from_millis(*duration_ms)))
            }
            CoreStep::PauseUniform { min_ms, max_ms } => {
                StepProgram::Pause(PauseKind::Uniform(Duration::from_millis(*min_ms), Duration::from_millis(*max_ms)))
            }
            CoreStep::PauseExponential { mean_ms } => {
                StepProgram::Pause(PauseKind::Exponential(Duration::from_millis(*mean_ms)))
            }
            CoreStep::PauseNormal { mean_ms, std_dev_ms } => StepProgram::Pause(PauseKind::Normal {
                mean: Duration::from_millis(*mean_ms),
                std_dev: Duration::from_millis(*std_dev_ms),
            }),
            CoreStep::PauseTemplate { duration } => {
                let row_id = self.row(format!("{group_prefix}pause {duration}").into());
                let duration = self.template(duration);
                StepProgram::Pause(PauseKind::Template(Box::new(TemplatePause { duration, row_id })))
            }
            CoreStep::Pace { duration_ms } => {
                self.paces += 1;
                StepProgram::Pace { id: self.paces - 1, duration: Duration::from_millis(*duration_ms) }
            }
            CoreStep::Repeat { times, counter, steps } => StepProgram::Repeat {
                times: *times,
                counter: counter.as_deref().map(|c| self.slot(c)),
                body: self.steps(protocols, at.at(&format!("{path}.steps")), steps),
            },
            CoreStep::During { duration_ms, counter, steps } => StepProgram::During {
                duration: Duration::from_millis(*duration_ms),
                counter: counter.as_deref().map(|c| self.slot(c)),
                body: self.steps(protocols, at.at(&format!("{path}.steps")), steps),
            },
            CoreStep::Group { name, steps } => {
                let full_name = format!("{group_prefix}{name}");
                let group = self.group(&full_name);
                let prefix = format!("{full_name} / ");
                StepProgram::Group {
                    group,
                    body: self.steps(
                        protocols,
                        StepAt { path: &format!("{path}.steps"), group_prefix: &prefix },
                        steps,
                    ),
                }
            }
            CoreStep::Feed { feeder, count } => match self.feeder(feeder) {
                Some(feeder) => {
                    let slots = feeder.columns.iter().map(|c| self.slot(c)).collect();
                    StepProgram::Feed { feeder, slots, count: *count }
                }
                // Named already: by validation, or as an unreadable source.
                None => StepProgram::Unset(Vec::new()),
            },
            CoreStep::Set { values } => {
                let names: Vec<&str> = values.iter().map(|v| v.name.as_str()).collect();
                let row_id = self.row(format!("{group_prefix}set {}", names.join(", ")).into());
                let values = values.iter().map(|v| (self.slot(&v.name), self.template(&v.value))).collect();
                StepProgram::Set { values, row_id }
            }
            CoreStep::Unset { names } => StepProgram::Unset(names.iter().map(|n| self.slot(n)).collect()),
            CoreStep::DoIf { condition, steps, else_steps } => {
                let condition = self.condition(
                    &format!("{path}.condition"),
                    condition,
                    &format!("{group_prefix}do_if {condition}"),
                );
                let then = self.steps(protocols, at.at(&format!("{path}.steps")), steps);
                let otherwise = self.steps(protocols, at.at(&format!("{path}.else_steps")), else_steps);
                StepProgram::Choose(Box::new(ChoiceProgram::If { condition, then, otherwise }))
            }
            CoreStep::DoSwitch { value, cases, else_steps } => {
                let row_id = self.row(format!("{group_prefix}do_switch {value}").into());
                let value = self.template(value);
                let cases = cases
                    .iter()
                    .enumerate()
                    .map(|(i, case)| {
                        self.current_path = format!("{path}.cases[{i}].value");
                        let expected = self.template(&case.value);
                        (expected, self.steps(protocols, at.at(&format!("{path}.cases[{i}].steps")), &case.steps))
                    })
                    .collect();
                let otherwise = self.steps(protocols, at.at(&format!("{path}.else_steps")), else_steps);
                StepProgram::Choose(Box::new(ChoiceProgram::Switch { value, row_id, cases, otherwise }))
            }
            CoreStep::RandomSwitch { cases, else_steps } => {
                let mut total = 0.0;
                let bounds = cases
                    .iter()
                    .map(|c| {
                        total += c.weight;
                        total
                    })
                    .collect();
                let cases = cases
                    .iter()
                    .enumerate()
                    .map(|(i, c)| self.steps(protocols, at.at(&format!("{path}.cases[{i}].steps")), &c.steps))
                    .collect();
                let otherwise = self.steps(protocols, at.at(&format!("{path}.else_steps")), else_steps);
                StepProgram::Choose(Box::new(ChoiceProgram::Random { bounds, cases, otherwise }))
            }
            CoreStep::UniformRandomSwitch { cases } | CoreStep::RoundRobinSwitch { cases } => {
                let cases = cases
                    .iter()
                    .enumerate()
                    .map(|(i, c)| self.steps(protocols, at.at(&format!("{path}.cases[{i}].steps")), &c.steps))
                    .collect();
                let choice = if matches!(step_ref, CoreStep::RoundRobinSwitch { .. }) {
                    ChoiceProgram::RoundRobin { next: self.new_counter(), cases }
                } else {
                    ChoiceProgram::Uniform(cases)
                };
                StepProgram::Choose(Box::new(choice))
            }
            CoreStep::Foreach { list, element, counter, steps } => {
                let row_id = self.row(format!("{group_prefix}foreach {list}").into());
                let list = self.template(list);
                StepProgram::Loop(Box::new(LoopProgram::Foreach {
                    list,
                    row_id,
                    element: self.slot(element),
                    counter: counter.as_deref().map(|c| self.slot(c)),
                    body: self.steps(protocols, at.at(&format!("{path}.steps")), steps),
                }))
            }
            CoreStep::AsLongAs { condition, counter, steps, .. } | CoreStep::DoWhile { condition, counter, steps } => {
                let (test_first, exit_on_fail, kind) = match step_ref {
                    CoreStep::AsLongAs { exit_on_fail, .. } => (true, *exit_on_fail, "as_long_as"),
                    _ => (false, false, "do_while"),
                };
                let condition = self.condition(
                    &format!("{path}.condition"),
                    condition,
                    &format!("{group_prefix}{kind} {condition}"),
                );
                StepProgram::Loop(Box::new(LoopProgram::While {
                    condition,
                    test_first,
                    exit_on_fail,
                    counter: counter.as_deref().map(|c| self.slot(c)),
                    body: self.steps(protocols, at.at(&format!("{path}.steps")), steps),
                }))
            }
            CoreStep::TryMax { name, times, counter, steps } => {
                let retry = RetryProgram {
                    kind: RetryKind::TryMax,
                    group: self.group(&format!("{group_prefix}{name}")),
                    row_id: self.row(format!("{group_prefix}{name}").into()),
                    times: Some(*times),
                    pause: Duration::ZERO,
                    timeout: None,
                    counter: counter.as_deref().map(|c| self.slot(c)),
                    body: self.steps(protocols, at.at(&format!("{path}.steps")), steps),
                };
                StepProgram::Retry(Box::new(retry))
            }
            CoreStep::Eventually { name, times, pause_ms, timeout_ms, counter, steps } => {
                let retry = RetryProgram {
                    kind: RetryKind::Eventually,
                    group: self.group(&format!("{group_prefix}{name}")),
                    row_id: self.row(format!("{group_prefix}{name}").into()),
                    times: *times,
                    pause: Duration::from_millis(*pause_ms),
                    timeout: timeout_ms.map(Duration::from_millis),
                    counter: counter.as_deref().map(|c| self.slot(c)),
                    body: self.steps(protocols, at.at(&format!("{path}.steps")), steps),
                };
                StepProgram::Retry(Box::new(retry))
            }
            CoreStep::ExitHereIfFailed => StepProgram::Exit { condition: None, if_failed: true },
            CoreStep::ExitHere { condition } => {
                let condition = condition.as_ref().map(|c| {
                    Box::new(self.condition(
                        &format!("{path}.condition"),
                        c,
                        &format!("{group_prefix}exit_here_if {c}"),
                    ))
                });
                StepProgram::Exit { condition, if_failed: false }
            }
            CoreStep::ExitBlockOnFail { steps } => {
                StepProgram::ExitBlockOnFail(self.steps(protocols, at.at(&format!("{path}.steps")), steps))
            }
            CoreStep::SessionFunction { name, function } => {
                if !self.session_function_keys.contains(function) {
                    self.session_function_keys.push(function.clone());
                }
                let row_id = self.row(format!("{group_prefix}{name}").into());
                StepProgram::SessionFunction { key: function.as_str().into(), row_id }
            }
            CoreStep::StopLoadGenerator { message, condition } => {
                let condition = condition.as_ref().map(|c| {
                    Box::new(self.condition(
                        &format!("{path}.condition"),
                        c,
                        &format!("{group_prefix}stop_load_generator_if {c}"),
                    ))
                });
                StepProgram::StopLoadGenerator { message: message.as_str().into(), condition }
            }
        }
    }

    fn group(&mut self, full_name: &str) -> usize {
        match self.groups.iter().position(|g| **g == *full_name) {
            Some(group) => group,
            None => {
                self.groups.push(full_name.into());
                self.groups.len() - 1
            }
        }
    }

    /// The index of a statistics row; requests with the same name share a row, as in Gatling.
    pub(crate) fn row(&mut self, row: Arc<str>) -> usize {
        match self.rows.iter().position(|r| *r == row) {
            Some(id) => id,
            None => {
                self.rows.push(row);
                self.rows.len() - 1
            }
        }
    }

    /// Marks a row as HTTP requests' of this method (Locust's `Type` column).
    pub(crate) fn set_row_method(&mut self, row_id: usize, method: &'static str) {
        if self.row_methods.len() <= row_id {
            self.row_methods.resize(row_id + 1, None);
        }
        self.row_methods[row_id] = Some(method);
    }

    /// A problem at `path`, found while lowering.
    pub(crate) fn error(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.errors.push(PlanError::new(path, message));
    }

    /// A schema file of generated documents, read (`path` is the plan path of the field naming
    /// it): its id, which indexes each user's generators, and the schema. None when it cannot
    /// be read (the error is recorded).
    pub(crate) fn schema(&mut self, path: &str, file: &str) -> Option<(usize, Arc<horde_docgen::Schema>)> {
        let resolved = self.resolve_file(file);
        match horde_docgen::Schema::from_file(&resolved) {
            Ok(schema) => {
                let schema = Arc::new(schema);
                self.schemas.push(schema.clone());
                Some((self.schemas.len() - 1, schema))
            }
            Err(err) => {
                self.error(path, format!("{}: {err}", resolved.display()));
                None
            }
        }
    }

    pub(crate) fn resolve_file(&self, file: &str) -> PathBuf {
        resolve_against(self.base_dir.as_deref(), Path::new(file))
    }

    /// A regex source's pattern and capture group (the one given, else 1, or the whole match
    /// when the pattern has none); a bad one is an error at the source's path.
    pub(crate) fn regex_group(
        &mut self,
        path: &str,
        pattern: &str,
        group: Option<u32>,
    ) -> Option<(regex::Regex, usize)> {
        let regex = match regex::Regex::new(pattern) {
            Ok(regex) => regex,
            Err(err) => {
                self.errors.push(PlanError::new(format!("{path}.source.pattern"), format!("invalid regex: {err}")));
                return None;
            }
        };
        let groups = regex.captures_len() - 1;
        let group = group.map(|g| g as usize).unwrap_or(if groups > 0 { 1 } else { 0 });
        if group > groups {
            self.errors.push(PlanError::new(
                format!("{path}.source.group"),
                format!("the pattern has {groups} capture groups, not {group}"),
            ));
            return None;
        }
        Some((regex, group))
    }

    /// A check, lowered: its source (the core's, or the protocol's own `S`), selection,
    /// transforms and validation. None when it cannot run (the error is recorded).
    pub(crate) fn check<S: OwnSource>(&mut self, path: &str, check: &horde_plan::Check) -> Option<CheckProgram<S>> {
        let body = |extractor: BodyExtractor, description: String| (Extractor::Body(extractor), description);
        let (extractor, description) = match &check.source {
            CheckSource::Core(CoreSource::Substring { value }) => {
                body(BodyExtractor::Substring(value.clone()), format!("substring({value:?})"))
            }
            CheckSource::Core(CoreSource::Regex { pattern, group }) => {
                let (regex, group) = self.regex_group(path, pattern, *group)?;
                body(BodyExtractor::Regex { regex, group }, format!("regex({pattern:?})"))
            }
            CheckSource::Core(CoreSource::Css { selector, attribute }) => match scraper::Selector::parse(selector) {
                Ok(parsed) => {
                    let description = match attribute {
                        Some(a) => format!("css({selector:?}, {a:?})"),
                        None => format!("css({selector:?})"),
                    };
                    body(BodyExtractor::Css { selector: parsed, attribute: attribute.clone() }, description)
                }
                Err(err) => {
                    self.error(
                        format!("{path}.source.selector"),
                        format!("invalid CSS selector {selector:?}: {}", css_error(&err)),
                    );
                    return None;
                }
            },
            CheckSource::Core(CoreSource::Jsonpath { path: query }) => match serde_json_path::JsonPath::parse(query) {
                Ok(parsed) => body(BodyExtractor::JsonPath(parsed), format!("jsonpath({query:?})")),
                Err(err) => {
                    self.error(format!("{path}.source.path"), format!("invalid JSONPath: {err}"));
                    return None;
                }
            },
            CheckSource::Core(CoreSource::Jmespath { expression }) => match jmespath::compile(expression) {
                Ok(compiled) => body(BodyExtractor::JmesPath(compiled), format!("jmespath({expression:?})")),
                Err(err) => {
                    self.error(format!("{path}.source.expression"), format!("invalid JMESPath: {err}"));
                    return None;
                }
            },
            CheckSource::Core(CoreSource::Xpath { expression }) => {
                match crate::checks::xpath::XPath::compile(expression) {
                    Ok(compiled) => body(BodyExtractor::XPath(compiled), format!("xpath({expression:?})")),
                    Err(err) => {
                        self.error(format!("{path}.source.expression"), format!("invalid XPath: {err}"));
                        return None;
                    }
                }
            }
            CheckSource::Core(CoreSource::BodyString) => body(BodyExtractor::BodyString, "body_string".to_string()),
            CheckSource::Core(CoreSource::BodyBytes) => body(BodyExtractor::BodyBytes, "body_bytes".to_string()),
            CheckSource::Core(CoreSource::BodyLength) => body(BodyExtractor::BodyLength, "body_length".to_string()),
            CheckSource::Core(CoreSource::Md5) => body(BodyExtractor::Md5, "md5".to_string()),
            CheckSource::Core(CoreSource::Sha1) => body(BodyExtractor::Sha1, "sha1".to_string()),
            CheckSource::Core(CoreSource::Sha256) => body(BodyExtractor::Sha256, "sha256".to_string()),
            CheckSource::Core(CoreSource::ResponseTimeInMillis) => {
                (Extractor::ResponseTimeInMillis, "response_time_in_millis".to_string())
            }
            source => {
                let (own, description) = S::lower(source, path, self)?;
                (Extractor::Own(own), description)
            }
        };
        let description = match check.select {
            Select::First => description,
            Select::Nth { index } => format!("{description}.find({index})"),
            Select::All => format!("{description}.find_all"),
            Select::Count => format!("{description}.count"),
        };
        // Expected values and the default are templates: errors in them are the check's.
        let step_path = std::mem::replace(&mut self.current_path, path.to_string());
        let expected = |lowering: &mut LoweringContext, text: &str| Expected {
            template: lowering.template(text),
            source: text.to_string(),
        };
        let validation = match &check.validate {
            Validation::Exists => ValidationProgram::Exists,
            Validation::NotExists => ValidationProgram::NotExists,
            Validation::Is { value } => ValidationProgram::Is(expected(self, value)),
            Validation::Not { value } => ValidationProgram::Not(expected(self, value)),
            Validation::In { values } => ValidationProgram::In(values.iter().map(|v| expected(self, v)).collect()),
            Validation::Lt { value } => ValidationProgram::Compare(CompareOp::Lt, expected(self, value)),
            Validation::Lte { value } => ValidationProgram::Compare(CompareOp::Le, expected(self, value)),
            Validation::Gt { value } => ValidationProgram::Compare(CompareOp::Gt, expected(self, value)),
            Validation::Gte { value } => ValidationProgram::Compare(CompareOp::Ge, expected(self, value)),
        };
        let default = check.default.as_deref().map(|text| expected(self, text));
        self.current_path = step_path;
        Some(CheckProgram {
            extractor,
            select: check.select,
            transforms: check.transform.clone(),
            default,
            validation,
            optional: check.optional,
            save_as: check.save_as.as_deref().map(|name| self.slot(name)),
            description,
        })
    }
}

/// A CSS selector error in words. scraper's own text for the rarer errors is "Unexpected error
/// occurred. Please report this to the developer" with a debug dump; its variant names say it
/// better (`EmptySelector` -> "empty selector").
fn css_error(error: &scraper::error::SelectorErrorKind) -> String {
    use scraper::error::SelectorErrorKind;
    match error {
        SelectorErrorKind::UnexpectedSelectorParseError(kind) => {
            let debug = format!("{kind:?}");
            let (name, detail) =
                debug.split_once('(').map_or((debug.as_str(), ""), |(n, d)| (n, d.trim_end_matches(')')));
            let mut words = String::new();
            for (i, c) in name.chars().enumerate() {
                if c.is_uppercase() && i > 0 {
                    words.push(' ');
                }
                words.push(c.to_ascii_lowercase());
            }
            if detail.is_empty() {
                words
            } else {
                format!("{words} ({detail})")
            }
        }
        other => other.to_string().to_lowercase(),
    }
}

/// A plan's file: a relative path is resolved against the plan's `base_dir` (the
/// simulation's folder), at lowering or, for a path a session names, when it is used.
pub(crate) fn resolve_against(base_dir: Option<&Path>, file: &Path) -> PathBuf {
    match base_dir {
        Some(dir) if file.is_relative() => dir.join(file),
        _ => file.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::http::program::{request_of, UrlProgram};

    fn plan_with(steps: &str) -> Plan {
        Plan::from_json(&format!(
            r#"{{"version": 1, "protocol": {{"base_url": "http://127.0.0.1:9/app/"}},
                "scenarios": [{{"name": "s", "steps": {steps},
                "injection": [{{"type": "at_once_users", "users": 1}}]}}]}}"#
        ))
        .unwrap()
    }

    /// Counters are listed in the order the plan first uses them, a name once, a round-robin
    /// switch each; a replacement's grants start each after its lost attempt's values, and a
    /// count per counter that does not match is an error at its field.
    #[test]
    fn run_wide_counters_are_listed_once_and_a_replacement_skips_their_granted_values() {
        let steps = r#"[{"type": "request", "name": "a", "method": "GET", "url": "/${__counter(b)}/${__counter(a)}"},
                        {"type": "round_robin_switch", "cases": [{"steps": []}, {"steps": []}]},
                        {"type": "request", "name": "b", "method": "GET", "url": "/${__counter(b)}"}]"#;
        let mut plan = plan_with(steps);
        assert_eq!(lower(&plan).unwrap().counters.len(), 3);
        plan.options.execution_segment = Some(horde_plan::ExecutionSegmentOptions {
            segment: "0:1".into(),
            sequence: None,
            resume: None,
            row_grants: Some(horde_plan::RowGrants { from: Vec::new(), initial: 10, counters_from: vec![100, 7, 3] }),
            request_log: None,
        });
        let program = lower(&plan).unwrap();
        let firsts: Vec<u64> = program.counters.iter().map(|counter| counter.take().unwrap()).collect();
        // b (first used), a, then the switch.
        assert_eq!(firsts, [100, 7, 3]);
        if let Some(grants) = plan.options.execution_segment.as_mut().and_then(|s| s.row_grants.as_mut()) {
            grants.counters_from = vec![1, 2];
        }
        let errors = lower(&plan).err().unwrap();
        assert_eq!(errors[0].path, "options.execution_segment.row_grants.counters_from");
        assert!(errors[0].message.contains("2 counts for 3 run-wide counters"), "{}", errors[0].message);
    }

    #[test]
    fn static_urls_are_resolved_against_the_base_url_once() {
        let program =
            lower(&plan_with(r#"[{"type": "request", "name": "r", "method": "GET", "url": "items?x=1"}]"#)).unwrap();
        let request = request_of(&program.scenarios[0].steps[0]).unwrap();
        let UrlProgram::Static(target) = &request.url else { panic!("static") };
        assert_eq!(target.origin_form, "/app/items?x=1");
        assert_eq!(&*target.authority, "127.0.0.1:9");
        assert_eq!(target.host_header, "127.0.0.1:9");
    }

    #[test]
    fn protocol_header_values_are_checked_once_under_their_own_path() {
        let mut plan = plan_with(
            r#"[{"type": "request", "name": "a", "method": "GET", "url": "/"},
                {"type": "request", "name": "b", "method": "GET", "url": "/", "headers": [{"name": "X", "value": "bad\u0001"}]}]"#,
        );
        plan.protocol.headers = vec![horde_plan::NameValue { name: "Y".into(), value: "bad\u{1}".into() }];
        plan.protocol.accept_encoding = "gzip\u{1}".into();
        let errors = lower(&plan).err().unwrap();
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            ["protocol.headers[0].value", "protocol.accept_encoding", "scenarios[0].steps[1].headers[0].value"]
        );
    }

    #[test]
    fn compile_errors_are_reported_with_paths() {
        let errors = lower(&plan_with(
            r#"[{"type": "request", "name": "r", "method": "GET", "url": "/",
                 "checks": [{"source": {"type": "regex", "pattern": "("}},
                            {"source": {"type": "css", "selector": "[[["}},
                            {"source": {"type": "jsonpath", "path": "$$$"}},
                            {"source": {"type": "regex", "pattern": "a", "group": 2}}],
                 "body": {"type": "multipart", "parts": [{"type": "raw_file", "name": "f", "path": "/nonexistent/file.txt"}]}}]"#,
        ))
        .err()
        .unwrap();
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            vec![
                "scenarios[0].steps[0].body.parts[0].path",
                "scenarios[0].steps[0].checks[0].source.pattern",
                "scenarios[0].steps[0].checks[1].source.selector",
                "scenarios[0].steps[0].checks[2].source.path",
                "scenarios[0].steps[0].checks[3].source.group",
            ]
        );
        assert!(errors[0].message.contains("/nonexistent/file.txt"));
    }

    #[test]
    fn templates_share_slots_by_name() {
        let program = lower(&plan_with(
            r#"[{"type": "request", "name": "r", "method": "GET", "url": "/${a}/${b}",
                 "checks": [{"source": {"type": "status"}, "save_as": "a"}, {"source": {"type": "status"}, "save_as": "b"}]}]"#,
        ))
        .unwrap();
        assert_eq!(program.variables, vec!["a".to_string(), "b".to_string()]);
        let request = request_of(&program.scenarios[0].steps[0]).unwrap();
        let UrlProgram::Dynamic { template, .. } = &request.url else { panic!("dynamic") };
        let mut session = crate::session::Session {
            variables: vec![Some("x".into()), None],
            rng: rand::SeedableRng::seed_from_u64(1),
            user_id: 0,
            scenario: "s".into(),
            extra: None,
        };
        assert_eq!(template.render(&mut session), Err(crate::session::expression::EvalError::Undefined(1)));
        session.variables[1] = Some("y".into());
        assert_eq!(template.render(&mut session).unwrap(), "/x/y");
    }

    #[test]
    fn a_variable_never_set_is_named_where_it_is_read() {
        let errors = lower(&plan_with(
            r#"[{"type": "request", "name": "r", "method": "GET", "url": "/${usr}",
                 "checks": [{"source": {"type": "status"}, "save_as": "user"}]}]"#,
        ))
        .err()
        .unwrap();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].path, "scenarios[0].steps[0]");
        assert!(errors[0].message.starts_with("${usr} is never set"), "{}", errors[0].message);
        assert!(errors[0].message.contains("the plan sets user"), "{}", errors[0].message);
    }

    #[test]
    fn groups_prefix_request_rows() {
        let program = lower(&plan_with(
            r#"[{"type": "group", "name": "g", "steps": [
                 {"type": "group", "name": "h", "steps": [
                   {"type": "request", "name": "r", "method": "GET", "url": "/"}]}]}]"#,
        ))
        .unwrap();
        assert_eq!(program.groups, vec![Arc::<str>::from("g"), Arc::<str>::from("g / h")]);
        let StepProgram::Group { body, .. } = &program.scenarios[0].steps[0] else { panic!() };
        let StepProgram::Group { body, .. } = &body[0] else { panic!() };
        let request = request_of(&body[0]).unwrap();
        assert_eq!(&*request.row, "g / h / r");
    }
}
