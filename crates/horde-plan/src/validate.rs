//! Semantic validation: every problem, each with its JSON path, in one pass.

use crate::template::{is_variable_name, parse_condition, parse_template, Segment};
use crate::{Check, CheckSource, CoreSource, CoreStep, FeederSource, Injection, Plan, PlanError, Step};
use crate::{Select, ThrottleStep, Validation, PLAN_VERSION};

/// The longest duration anywhere in a plan: 365 days.
pub const MAX_DURATION_MS: u64 = 365 * 24 * 3600 * 1000;
/// More users at once, or arrivals per second, than any one machine can hold: a typo, and a
/// source of overflows.
const MAX_USERS: u64 = 10_000_000;
const MAX_RATE: f64 = 10_000_000.0;

pub(crate) fn validate(plan: &Plan) -> Vec<PlanError> {
    let feeders = plan.feeders.iter().map(|f| f.name.clone()).collect();
    let mut v = Validator { errors: Vec::new(), feeders, plan };
    v.plan(plan);
    let value = serde_json::to_value(plan).expect("a plan always serializes");
    v.durations("", &value);
    v.errors
}

/// What validation has found so far, and what the checks of one part need from the rest of
/// the plan. A protocol's validation (in `protocol/`) reports through it.
pub(crate) struct Validator<'p> {
    errors: Vec<PlanError>,
    /// The plan's feeder names, which `feed` steps refer to.
    feeders: Vec<String>,
    /// The whole plan: a protocol reads its settings (`protocol.base_url`, `databases`).
    pub(crate) plan: &'p Plan,
}

impl Validator<'_> {
    pub(crate) fn error(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.errors.push(PlanError::new(path, message));
    }

    pub(crate) fn template(&mut self, path: &str, text: &str) {
        if let Err(message) = parse_template(text) {
            self.error(path, message);
        }
    }

    /// A pause's template parses; without expressions, its text is a duration already.
    fn pause_template(&mut self, path: &str, text: &str) {
        match parse_template(text) {
            Err(message) => self.error(path, message),
            Ok(segments) => match segments.as_slice() {
                [] => self.error(path, "a pause needs a duration: \"${think_time}\", \"#{t}ms\", \"1.5\" (seconds)"),
                [Segment::Literal(fixed)] => {
                    if let Err(message) = crate::parse_duration(fixed) {
                        self.error(path, message);
                    }
                }
                _ => {}
            },
        }
    }

    pub(crate) fn condition(&mut self, path: &str, text: &str) {
        if let Err(message) = parse_condition(text) {
            self.error(path, message);
        }
    }

    pub(crate) fn variable_name(&mut self, path: &str, name: &str) {
        if !is_variable_name(name) {
            self.error(path, format!("{name:?} is not a variable name (letters, digits, _ - .)"));
        }
    }

    /// Every duration of the plan (a field ending in `_ms` or `_us`) within a year: far
    /// beyond any load test, and far from the overflows of clocks and timers. Request bodies
    /// are the user's data, not the plan's: a `created_at_ms` in a JSON body is no duration.
    fn durations(&mut self, path: &str, value: &serde_json::Value) {
        use serde_json::Value;
        match value {
            Value::Object(map) => {
                for (key, item) in map.iter().filter(|(key, _)| key.as_str() != "body") {
                    let item_path = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                    let limit = if key.ends_with("_ms") {
                        Some(MAX_DURATION_MS)
                    } else if key.ends_with("_us") {
                        Some(MAX_DURATION_MS.saturating_mul(1000))
                    } else {
                        None
                    };
                    let too_long = |v: &Value| v.as_u64().is_some_and(|n| limit.is_some_and(|limit| n > limit));
                    match item {
                        Value::Array(items) if items.iter().any(too_long) => {
                            self.error(item_path, "a duration longer than 365 days");
                        }
                        item if too_long(item) => {
                            self.error(item_path, "longer than 365 days, the longest duration horde accepts")
                        }
                        item => self.durations(&item_path, item),
                    }
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.durations(&format!("{path}[{i}]"), item);
                }
            }
            _ => {}
        }
    }

    fn plan(&mut self, plan: &Plan) {
        if plan.version != PLAN_VERSION {
            self.error("version", format!("this horde reads plan version {PLAN_VERSION}, not {}", plan.version));
        }
        for (i, text) in plan.thresholds.iter().enumerate() {
            if let Err(message) = text.parse::<crate::ThresholdSpec>() {
                self.error(format!("thresholds[{i}]"), message);
            }
        }
        crate::protocol::validate_settings(self, plan);
        self.options(plan);
        self.feeders(plan);
        if plan.scenarios.is_empty() {
            self.error("scenarios", "a plan needs at least one scenario");
        }
        let mut names = std::collections::HashSet::new();
        for (i, scenario) in plan.scenarios.iter().enumerate() {
            let path = format!("scenarios[{i}]");
            if scenario.name.trim().is_empty() {
                self.error(format!("{path}.name"), "a scenario needs a name");
            } else if !names.insert(scenario.name.as_str()) {
                self.error(format!("{path}.name"), format!("duplicate scenario name {:?}", scenario.name));
            }
            if scenario.steps.is_empty() {
                self.error(format!("{path}.steps"), "a scenario needs at least one step");
            }
            self.steps(&format!("{path}.steps"), &scenario.steps);
            self.injection(&format!("{path}.injection"), &scenario.injection);
            self.after(plan, i);
        }
        if plan.options.graceful_stop_ms.is_some() && plan.scenarios.iter().any(|s| s.after.is_some()) {
            self.error(
                "options.graceful_stop_ms",
                "a graceful stop cannot be combined with scenarios that start after others yet",
            );
        }
    }

    /// Names unique, and what cannot be known without reading files; the files themselves are
    /// read when the plan is lowered.
    fn feeders(&mut self, plan: &Plan) {
        let mut names = std::collections::HashSet::new();
        for (i, feeder) in plan.feeders.iter().enumerate() {
            let path = format!("feeders[{i}]");
            if feeder.name.trim().is_empty() {
                self.error(format!("{path}.name"), "a feeder needs a name");
            } else if !names.insert(feeder.name.as_str()) {
                self.error(format!("{path}.name"), format!("duplicate feeder name {:?}", feeder.name));
            }
            match &feeder.source {
                FeederSource::Inline { records } => {
                    if records.is_empty() {
                        self.error(format!("{path}.source.records"), "needs at least one record");
                    }
                    if feeder.batch.is_some() {
                        self.error(format!("{path}.batch"), "only files are read in batches");
                    }
                }
                source => {
                    if source.path().is_some_and(|p| p.trim().is_empty()) {
                        self.error(format!("{path}.source.path"), "a file is needed");
                    }
                }
            }
            if feeder.batch == Some(0) {
                self.error(format!("{path}.batch"), "must be at least 1 record");
            }
        }
    }

    /// `after` names another scenario, and following the chain never comes back.
    fn after(&mut self, plan: &Plan, index: usize) {
        let Some(first) = &plan.scenarios[index].after else {
            return;
        };
        let path = format!("scenarios[{index}].after");
        let mut seen = vec![index];
        let mut next = Some(first);
        while let Some(name) = next {
            match plan.scenarios.iter().position(|s| &s.name == name) {
                None => {
                    self.error(&path, format!("no scenario is named {name:?}"));
                    return;
                }
                Some(parent) if seen.contains(&parent) => {
                    self.error(&path, format!("scenario {:?} would wait for itself", plan.scenarios[index].name));
                    return;
                }
                Some(parent) => {
                    seen.push(parent);
                    next = plan.scenarios[parent].after.as_ref();
                }
            }
        }
    }

    fn options(&mut self, plan: &Plan) {
        let options = &plan.options;
        if options.max_duration_ms == Some(0) {
            self.error("options.max_duration_ms", "must be more than 0");
        }
        if options.max_requests == Some(0) {
            self.error("options.max_requests", "must be more than 0");
        }
        if options.workers == Some(0) {
            self.error("options.workers", "must be more than 0");
        }
        if options.snapshot_interval_ms < 10 {
            self.error("options.snapshot_interval_ms", "must be at least 10");
        }
        for (i, p) in options.percentiles.iter().enumerate() {
            if !(*p > 0.0 && *p <= 100.0) {
                self.error(format!("options.percentiles[{i}]"), format!("{p} is not in (0, 100]"));
            }
        }
        let [low, high] = options.response_time_bounds_ms;
        if low >= high {
            self.error("options.response_time_bounds_ms", format!("[{low}, {high}] must be ascending"));
        }
        for (i, step) in options.throttle.iter().enumerate() {
            let path = format!("options.throttle[{i}]");
            match step {
                ThrottleStep::JumpToRps { rps } if !(*rps > 0.0 && rps.is_finite()) => {
                    self.error(format!("{path}.rps"), "must be more than 0");
                }
                ThrottleStep::HoldFor { duration_ms: 0 } | ThrottleStep::ReachRps { duration_ms: 0, .. } => {
                    self.error(format!("{path}.duration_ms"), "must be more than 0");
                }
                ThrottleStep::ReachRps { rps, .. } if !(*rps > 0.0 && rps.is_finite()) => {
                    self.error(format!("{path}.rps"), "must be more than 0");
                }
                _ => {}
            }
        }
        if let Some(ThrottleStep::HoldFor { .. }) = options.throttle.first() {
            self.error("options.throttle[0]", "a throttle starts with jump_to_rps or reach_rps");
        }
        if let Some(Err(errors)) = options.execution_segment.as_ref().map(crate::ExecutionSegmentOptions::resolve) {
            self.errors.extend(errors);
        }
    }

    pub(crate) fn steps(&mut self, path: &str, steps: &[Step]) {
        for (i, step) in steps.iter().enumerate() {
            let path = format!("{path}[{i}]");
            match step {
                Step::Core(step) => self.core_step(&path, step),
                protocol_step => crate::protocol::validate_step(self, &path, protocol_step),
            }
            // The step's own fields first, then the steps nested in it.
            for child in step.children() {
                let at = format!("{path}.{}", child.at);
                if child.is_body && child.steps.is_empty() {
                    self.error(&at, "needs at least one step");
                }
                self.steps(&at, child.steps);
            }
        }
    }

    /// A core step's own fields; the steps nested in it are validated by [`Validator::steps`].
    fn core_step(&mut self, path: &str, step: &CoreStep) {
        match step {
            CoreStep::Pause { .. } => {}
            CoreStep::PauseUniform { min_ms, max_ms } => {
                if min_ms > max_ms {
                    self.error(path, format!("min_ms {min_ms} is more than max_ms {max_ms}"));
                }
            }
            CoreStep::PauseExponential { mean_ms } => {
                if *mean_ms == 0 {
                    self.error(format!("{path}.mean_ms"), "must be more than 0");
                }
            }
            CoreStep::PauseNormal { .. } => {}
            CoreStep::PauseTemplate { duration } => self.pause_template(&format!("{path}.duration"), duration),
            CoreStep::Pace { duration_ms } => {
                if *duration_ms == 0 {
                    self.error(format!("{path}.duration_ms"), "must be more than 0");
                }
            }
            CoreStep::Repeat { counter, .. } => {
                if let Some(counter) = counter {
                    self.variable_name(&format!("{path}.counter"), counter);
                }
            }
            CoreStep::During { duration_ms, counter, .. } => {
                if *duration_ms == 0 {
                    self.error(format!("{path}.duration_ms"), "must be more than 0");
                }
                if let Some(counter) = counter {
                    self.variable_name(&format!("{path}.counter"), counter);
                }
            }
            CoreStep::Group { name, .. } => {
                if name.trim().is_empty() {
                    self.error(format!("{path}.name"), "a group needs a name");
                }
            }
            CoreStep::Feed { feeder, count } => {
                if !self.feeders.iter().any(|f| f == feeder) {
                    let known =
                        if self.feeders.is_empty() { "the plan has none".to_string() } else { self.feeders.join(", ") };
                    self.error(format!("{path}.feeder"), format!("no feeder is named {feeder:?} ({known})"));
                }
                if *count == 0 {
                    self.error(format!("{path}.count"), "must be at least 1");
                }
            }
            CoreStep::Set { values } => {
                for (i, value) in values.iter().enumerate() {
                    self.variable_name(&format!("{path}.values[{i}].name"), &value.name);
                    self.template(&format!("{path}.values[{i}].value"), &value.value);
                }
            }
            CoreStep::Unset { names } => {
                for (i, name) in names.iter().enumerate() {
                    self.variable_name(&format!("{path}.names[{i}]"), name);
                }
            }
            CoreStep::DoIf { condition, .. } => {
                self.condition(&format!("{path}.condition"), condition);
            }
            CoreStep::DoSwitch { value, cases, .. } => {
                self.template(&format!("{path}.value"), value);
                if cases.is_empty() {
                    self.error(format!("{path}.cases"), "a switch needs at least one case");
                }
                for (i, case) in cases.iter().enumerate() {
                    self.template(&format!("{path}.cases[{i}].value"), &case.value);
                }
            }
            CoreStep::RandomSwitch { cases, .. } => {
                if cases.is_empty() {
                    self.error(format!("{path}.cases"), "a switch needs at least one case");
                }
                let mut total = 0.0;
                for (i, case) in cases.iter().enumerate() {
                    if !(case.weight >= 0.0 && case.weight.is_finite()) {
                        self.error(format!("{path}.cases[{i}].weight"), "must be a percentage, 0 or more");
                    }
                    total += case.weight;
                }
                if total > 100.0 + 1e-9 {
                    self.error(format!("{path}.cases"), format!("the weights add up to {total}%, more than 100%"));
                }
            }
            CoreStep::UniformRandomSwitch { cases } | CoreStep::RoundRobinSwitch { cases } => {
                if cases.is_empty() {
                    self.error(format!("{path}.cases"), "a switch needs at least one case");
                }
            }
            CoreStep::Foreach { list, element, counter, .. } => {
                match crate::template::parse_template(list) {
                    Ok(segments) if matches!(segments.as_slice(), [Segment::Expression(_)]) => {}
                    Ok(_) => self.error(
                        format!("{path}.list"),
                        format!("{list:?} is not one ${{...}} expression, such as \"${{items}}\""),
                    ),
                    Err(message) => self.error(format!("{path}.list"), message),
                }
                self.variable_name(&format!("{path}.element"), element);
                if let Some(counter) = counter {
                    self.variable_name(&format!("{path}.counter"), counter);
                }
            }
            CoreStep::AsLongAs { condition, counter, .. } | CoreStep::DoWhile { condition, counter, .. } => {
                self.condition(&format!("{path}.condition"), condition);
                if let Some(counter) = counter {
                    self.variable_name(&format!("{path}.counter"), counter);
                }
            }
            CoreStep::TryMax { name, times, counter, .. } => {
                if name.trim().is_empty() {
                    self.error(format!("{path}.name"), "needs a name (its row)");
                }
                if *times == 0 {
                    self.error(format!("{path}.times"), "must be at least 1");
                }
                if let Some(counter) = counter {
                    self.variable_name(&format!("{path}.counter"), counter);
                }
            }
            CoreStep::Eventually { name, times, timeout_ms, counter, .. } => {
                if name.trim().is_empty() {
                    self.error(format!("{path}.name"), "needs a name (its row)");
                }
                match (times, timeout_ms) {
                    (None, None) => self.error(path, "needs times, timeout_ms or both: it must end"),
                    (Some(0), _) => self.error(format!("{path}.times"), "must be at least 1"),
                    (_, Some(0)) => self.error(format!("{path}.timeout_ms"), "must be more than 0"),
                    _ => {}
                }
                if let Some(counter) = counter {
                    self.variable_name(&format!("{path}.counter"), counter);
                }
            }
            CoreStep::SessionFunction { name, function } => {
                if name.trim().is_empty() {
                    self.error(format!("{path}.name"), "a session function needs a name (its row)");
                }
                if function.trim().is_empty() {
                    self.error(format!("{path}.function"), "names no function");
                }
            }
            CoreStep::ExitHereIfFailed => {}
            CoreStep::ExitHere { condition } => {
                if let Some(condition) = condition {
                    self.condition(&format!("{path}.condition"), condition);
                }
            }
            CoreStep::ExitBlockOnFail { .. } => {}
            CoreStep::StopLoadGenerator { message, condition } => {
                if message.trim().is_empty() {
                    self.error(format!("{path}.message"), "say why the run stops");
                }
                if let Some(condition) = condition {
                    self.condition(&format!("{path}.condition"), condition);
                }
            }
        }
    }

    pub(crate) fn check(&mut self, path: &str, check: &Check) {
        let empty = |what: &str| format!("a {what} check needs one");
        // The body's sources; a protocol checks its own (a header's name) where it validates its steps.
        if let CheckSource::Core(source) = &check.source {
            match source {
                CoreSource::Substring { value } if value.is_empty() => {
                    self.error(format!("{path}.source.value"), "a substring check needs a substring");
                }
                CoreSource::Regex { pattern, .. } if pattern.is_empty() => {
                    self.error(format!("{path}.source.pattern"), "a regex check needs a pattern");
                }
                CoreSource::Css { selector, .. } if selector.trim().is_empty() => {
                    self.error(format!("{path}.source.selector"), "a css check needs a selector");
                }
                CoreSource::Jsonpath { path: query } if query.trim().is_empty() => {
                    self.error(format!("{path}.source.path"), "a jsonpath check needs a path");
                }
                CoreSource::Jmespath { expression } if expression.trim().is_empty() => {
                    self.error(format!("{path}.source.expression"), empty("jmespath"));
                }
                CoreSource::Xpath { expression } if expression.trim().is_empty() => {
                    self.error(format!("{path}.source.expression"), empty("xpath"));
                }
                _ => {}
            }
        }
        let counts_substrings =
            matches!(check.source, CheckSource::Core(CoreSource::Substring { .. })) && check.select == Select::Count;
        if !check.select.is_first() && !check.source.is_multivalued() && !counts_substrings {
            self.error(
                format!("{path}.select"),
                "find(n), find_all and count apply to regex, css, jsonpath, jmespath, xpath, header, header_regex and \
                 column (and count to substring): this source has one value",
            );
        }
        let validation = &check.validate;
        if check.select == Select::All
            && !matches!(
                validation,
                Validation::Exists | Validation::NotExists | Validation::Is { .. } | Validation::Not { .. }
            )
        {
            self.error(
                format!("{path}.validate"),
                format!(
                    "a find_all list is checked with exists, not_exists, is or not (equal to a JSON array), not {}",
                    validation.name()
                ),
            );
        }
        if let Validation::In { values } = validation {
            if values.is_empty() {
                self.error(format!("{path}.validate.values"), "`in` needs at least one value");
            }
        }
        for (field, text) in validation.expected() {
            self.template(&format!("{path}.validate.{field}"), text);
        }
        if let Some(default) = &check.default {
            self.template(&format!("{path}.default"), default);
            if *validation == Validation::NotExists {
                self.error(
                    format!("{path}.default"),
                    "a not_exists check has no use for a default: with one, something is always found",
                );
            }
            if check.optional {
                self.error(
                    format!("{path}.optional"),
                    "a check with a default always finds something: optional has no effect",
                );
            }
        }
        if check.optional && *validation == Validation::NotExists {
            self.error(format!("{path}.optional"), "a not_exists check passes when nothing is found already");
        }
        if let Some(name) = &check.save_as {
            self.variable_name(&format!("{path}.save_as"), name);
            if *validation == Validation::NotExists {
                self.error(format!("{path}.save_as"), "nothing to save from a not_exists check");
            }
        }
    }

    fn injection(&mut self, path: &str, steps: &[Injection]) {
        if steps.is_empty() {
            self.error(path, "a scenario needs at least one injection step");
        }
        let closed = steps.iter().filter(|s| s.is_closed()).count();
        if closed > 0 && closed < steps.len() {
            self.error(
                path,
                "open-model steps (users arriving) and closed-model steps (concurrent users) \
                 cannot be mixed in one scenario",
            );
        }
        for (i, step) in steps.iter().enumerate() {
            let path = format!("{path}[{i}]");
            let users = match *step {
                Injection::RampUsers { users, .. } | Injection::StressPeakUsers { users, .. } => users,
                _ => step.users_at_once(),
            };
            if users > MAX_USERS {
                self.error(&path, format!("{users} users is more than one machine can run (at most {MAX_USERS})"));
            }
            if step.peak_rate() > MAX_RATE {
                self.error(
                    &path,
                    format!("{} users per second is more than horde can start (at most {MAX_RATE})", step.peak_rate()),
                );
            }
            match step {
                Injection::NothingFor { .. } => {}
                Injection::AtOnceUsers { users } => self.positive(&path, "users", *users),
                // A ramp over 0 ms starts everyone at once, as in Gatling.
                Injection::RampUsers { users, .. } => self.positive(&path, "users", *users),
                Injection::ConstantUsersPerSec { rate, duration_ms, .. } => {
                    if !(*rate > 0.0 && rate.is_finite()) {
                        self.error(format!("{path}.rate"), "must be more than 0");
                    }
                    self.positive(&path, "duration_ms", *duration_ms);
                }
                Injection::ConstantConcurrentUsers { users, duration_ms } => {
                    self.positive(&path, "users", *users);
                    self.positive(&path, "duration_ms", *duration_ms);
                }
                Injection::RampUsersPerSec { from, to, duration_ms, .. } => {
                    for (field, rate) in [("from", from), ("to", to)] {
                        if !(*rate >= 0.0 && rate.is_finite()) {
                            self.error(format!("{path}.{field}"), "must be 0 or more");
                        }
                    }
                    if *from == 0.0 && *to == 0.0 {
                        self.error(&path, "a ramp from 0 to 0 users per second starts nobody");
                    }
                    self.positive(&path, "duration_ms", *duration_ms);
                }
                Injection::StressPeakUsers { users, duration_ms } => {
                    self.positive(&path, "users", *users);
                    self.positive(&path, "duration_ms", *duration_ms);
                }
                Injection::IncrementUsersPerSec { increment, times, level_duration_ms, starting_from, .. } => {
                    if !(*increment > 0.0 && increment.is_finite()) {
                        self.error(format!("{path}.increment"), "must be more than 0");
                    }
                    if !(*starting_from >= 0.0 && starting_from.is_finite()) {
                        self.error(format!("{path}.starting_from"), "must be 0 or more");
                    }
                    self.positive(&path, "times", u64::from(*times));
                    self.positive(&path, "level_duration_ms", *level_duration_ms);
                }
                Injection::RampConcurrentUsers { from, to, duration_ms } => {
                    if *from == 0 && *to == 0 {
                        self.error(&path, "a ramp from 0 to 0 users runs nobody");
                    }
                    self.positive(&path, "duration_ms", *duration_ms);
                }
                Injection::IncrementConcurrentUsers { increment, times, level_duration_ms, .. } => {
                    self.positive(&path, "increment", *increment);
                    self.positive(&path, "times", u64::from(*times));
                    self.positive(&path, "level_duration_ms", *level_duration_ms);
                }
            }
        }
    }

    pub(crate) fn positive(&mut self, path: &str, field: &str, value: u64) {
        if value == 0 {
            self.error(format!("{path}.{field}"), "must be more than 0");
        }
    }
}
