//! The core's steps: control flow, pauses, session variables, feeders and exits. A protocol's
//! steps live in its module under `protocol/`; [`Step`] joins them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{NameValue, Step};

/// The core's steps, one family of [`Step`]: pauses, loops, switches, groups, session variables, feeders, exits.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum CoreStep {
    /// A fixed pause.
    Pause { duration_ms: u64 },
    /// A pause drawn uniformly from [min_ms, max_ms].
    PauseUniform { min_ms: u64, max_ms: u64 },
    /// A pause drawn from an exponential distribution (think times of independent users).
    PauseExponential { mean_ms: u64 },
    /// A pause drawn from a normal distribution of mean `mean_ms` and standard deviation
    /// `std_dev_ms` (Gatling's `normalPausesWithStdDevDuration`); a draw below 0 is a pause of 0,
    /// as in Gatling.
    PauseNormal { mean_ms: u64, std_dev_ms: u64 },
    /// A pause as long as a template says at each pass: a session value (`"${think_time}"`,
    /// `"#{t}"`), an expression (`"${__random_int(1, 5)}"`) or text with them
    /// (`"${t}ms"`). It renders to a number of seconds, or a number with its unit (`ms`, `s`,
    /// `m`, `h`); what renders to anything else fails the user, counted in the row
    /// `pause {duration}`.
    PauseTemplate { duration: String },
    /// Wait so that successive passes through this step are at least `duration_ms` apart:
    /// pacing for closed-model loops.
    Pace { duration_ms: u64 },
    /// Run `steps` this many times; `counter` holds the 0-based iteration number.
    Repeat {
        times: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        counter: Option<String>,
        steps: Vec<Step>,
    },
    /// Run `steps` again and again until `duration_ms` has passed since the loop began;
    /// the condition is checked before each iteration.
    During {
        duration_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        counter: Option<String>,
        steps: Vec<Step>,
    },
    /// Run `steps` with statistics of their own: the group's duration and OK/KO; the requests
    /// inside are named `group / request`.
    Group { name: String, steps: Vec<Step> },
    /// Take the next record of a feeder: its fields become session variables. With `count`
    /// above 1, each variable holds a list of that many records' values (Gatling's
    /// `feed(feeder, n)`).
    Feed {
        feeder: String,
        #[serde(default = "default_one", skip_serializing_if = "is_one")]
        count: u32,
    },
    /// Set session variables, each value a template.
    Set { values: Vec<NameValue> },
    /// Remove session variables.
    Unset { names: Vec<String> },
    /// Run `steps` when the condition holds, else `else_steps` (Gatling's `doIf`,
    /// `doIfOrElse`, `doIfEquals`).
    DoIf {
        condition: String,
        steps: Vec<Step>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        else_steps: Vec<Step>,
    },
    /// Run the steps of the first case whose `value` equals `value` (both templates), else
    /// `else_steps`.
    DoSwitch {
        value: String,
        cases: Vec<SwitchCase>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        else_steps: Vec<Step>,
    },
    /// Run one case, drawn with its weight (percent; the weights add up to at most 100),
    /// else `else_steps` for the rest of the draws.
    RandomSwitch {
        cases: Vec<WeightedCase>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        else_steps: Vec<Step>,
    },
    /// Run one case, each as likely as the others.
    UniformRandomSwitch { cases: Vec<Chain> },
    /// Run the cases in turn: each pass through the step (by any user of the run) takes the
    /// next one.
    RoundRobinSwitch { cases: Vec<Chain> },
    /// Run `steps` once for each element of a list (`list` is one `${...}` expression: a
    /// list saved by a check, a JSON array, a feeder's `count`); `element` holds the
    /// element, `counter` its 0-based index.
    Foreach {
        list: String,
        element: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        counter: Option<String>,
        steps: Vec<Step>,
    },
    /// Run `steps` while the condition holds, tested before each pass (Gatling's `asLongAs`).
    /// With `exit_on_fail`, a failed request ends the loop.
    AsLongAs {
        condition: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        counter: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        exit_on_fail: bool,
        steps: Vec<Step>,
    },
    /// Run `steps`, then again while the condition holds, tested after each pass.
    DoWhile {
        condition: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        counter: Option<String>,
        steps: Vec<Step>,
    },
    /// Run `steps` until a pass has no failed request, at most `times` passes (Gatling's
    /// `tryMax`). The block is one outcome in its own row `name`; failures of passes that
    /// were tried again are counted as `retried` in their rows, not as KOs.
    TryMax {
        #[serde(default = "default_try_max_name")]
        name: String,
        times: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        counter: Option<String>,
        steps: Vec<Step>,
    },
    /// Seed 002's RetriableCondition: run `steps` until every request and check in them
    /// passes, pausing `pause_ms` between attempts, at most `times` attempts and within
    /// `timeout_ms` of the first. One outcome in its own row `name`, whose duration is the
    /// time to consistency (the first attempt's start to the end of the first full pass).
    Eventually {
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        times: Option<u32>,
        #[serde(default = "default_eventually_pause_ms")]
        pause_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        counter: Option<String>,
        steps: Vec<Step>,
    },
    /// End the virtual user here when a request of its has failed (Gatling's
    /// `exitHereIfFailed`).
    ExitHereIfFailed,
    /// End the virtual user here, when the condition holds if there is one (`exitHere`,
    /// `exitHereIf`).
    ExitHere {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        condition: Option<String>,
    },
    /// Run `steps`; a failed request leaves the block at once and the chain goes on after it
    /// (Gatling's `exitBlockOnFail`).
    ExitBlockOnFail { steps: Vec<Step> },
    /// Call a Python function with the user's session (Gatling's `exec(session => ...)`): it
    /// reads and sets variables. Only a simulation run from Python has its functions; a plan
    /// file naming one is refused. Python runs under its global lock: these calls are counted
    /// and timed in the summary.
    SessionFunction {
        /// Its row: errors the function raises are counted there.
        name: String,
        /// The function's key in the simulation that defined it.
        function: String,
    },
    /// Stop the whole run gracefully (when the condition holds if there is one): no new
    /// users, running ones interrupted, results kept; the summary says why.
    StopLoadGenerator {
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        condition: Option<String>,
    },
}

fn default_one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

fn default_try_max_name() -> String {
    "try_max".into()
}

fn default_eventually_pause_ms() -> u64 {
    100
}

/// A chain of steps, as one case of a switch.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Chain {
    pub steps: Vec<Step>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SwitchCase {
    /// Compared, as text, with the switch's value; a template.
    pub value: String,
    pub steps: Vec<Step>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WeightedCase {
    /// Percent of the draws.
    pub weight: f64,
    pub steps: Vec<Step>,
}

/// Where steps nested in a step sit in it, as a plan path names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildPath {
    /// `steps`: a loop's, a group's or a block's body, or `do_if`'s branch.
    Steps,
    /// `else_steps`: a switch's or `do_if`'s other branch.
    ElseSteps,
    /// `cases[i].steps`.
    Case(usize),
}

impl std::fmt::Display for ChildPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChildPath::Steps => f.write_str("steps"),
            ChildPath::ElseSteps => f.write_str("else_steps"),
            ChildPath::Case(i) => write!(f, "cases[{i}].steps"),
        }
    }
}

/// Steps nested in a step.
#[derive(Debug, Clone, Copy)]
pub struct Child<'a> {
    pub at: ChildPath,
    pub steps: &'a [Step],
    /// A body that needs at least one step (a loop's, a group's, a block's, `do_if`'s `steps`);
    /// a switch's cases and `else_steps` may be empty.
    pub is_body: bool,
}

/// A switch's cases, whichever their kind.
#[derive(Clone, Copy)]
enum Cases<'a> {
    None,
    Valued(&'a [SwitchCase]),
    Weighted(&'a [WeightedCase]),
    Plain(&'a [Chain]),
}

impl<'a> Cases<'a> {
    fn len(self) -> usize {
        match self {
            Cases::None => 0,
            Cases::Valued(cases) => cases.len(),
            Cases::Weighted(cases) => cases.len(),
            Cases::Plain(cases) => cases.len(),
        }
    }

    fn steps(self, i: usize) -> &'a [Step] {
        match self {
            Cases::None => &[],
            Cases::Valued(cases) => &cases[i].steps,
            Cases::Weighted(cases) => &cases[i].steps,
            Cases::Plain(cases) => &cases[i].steps,
        }
    }
}

impl CoreStep {
    /// The steps nested in this one, in the plan's order: the body, then the cases, then
    /// `else_steps`. Every walker over steps goes through here, so a new nesting step is
    /// taught once.
    pub fn children(&self) -> impl Iterator<Item = Child<'_>> {
        let (body, cases, else_steps): (Option<&[Step]>, Cases<'_>, Option<&[Step]>) = match self {
            CoreStep::Repeat { steps, .. }
            | CoreStep::During { steps, .. }
            | CoreStep::Group { steps, .. }
            | CoreStep::Foreach { steps, .. }
            | CoreStep::AsLongAs { steps, .. }
            | CoreStep::DoWhile { steps, .. }
            | CoreStep::TryMax { steps, .. }
            | CoreStep::Eventually { steps, .. }
            | CoreStep::ExitBlockOnFail { steps } => (Some(steps), Cases::None, None),
            CoreStep::DoIf { steps, else_steps, .. } => (Some(steps), Cases::None, Some(else_steps)),
            CoreStep::DoSwitch { cases, else_steps, .. } => (None, Cases::Valued(cases), Some(else_steps)),
            CoreStep::RandomSwitch { cases, else_steps } => (None, Cases::Weighted(cases), Some(else_steps)),
            CoreStep::UniformRandomSwitch { cases } | CoreStep::RoundRobinSwitch { cases } => {
                (None, Cases::Plain(cases), None)
            }
            CoreStep::Pause { .. }
            | CoreStep::PauseUniform { .. }
            | CoreStep::PauseExponential { .. }
            | CoreStep::PauseNormal { .. }
            | CoreStep::PauseTemplate { .. }
            | CoreStep::Pace { .. }
            | CoreStep::Feed { .. }
            | CoreStep::Set { .. }
            | CoreStep::Unset { .. }
            | CoreStep::ExitHereIfFailed
            | CoreStep::ExitHere { .. }
            | CoreStep::SessionFunction { .. }
            | CoreStep::StopLoadGenerator { .. } => (None, Cases::None, None),
        };
        let body = body.map(|steps| Child { at: ChildPath::Steps, steps, is_body: true });
        let cases =
            (0..cases.len()).map(move |i| Child { at: ChildPath::Case(i), steps: cases.steps(i), is_body: false });
        let otherwise = else_steps.map(|steps| Child { at: ChildPath::ElseSteps, steps, is_body: false });
        body.into_iter().chain(cases).chain(otherwise)
    }
}
