//! Semantic validation: every problem, each with its JSON path, in one pass.

use crate::template::{is_variable_name, parse_condition, parse_template, Segment};
use crate::{crud_rule_violations, Select, ThrottleStep, Validation, PLAN_VERSION};
use crate::{
    AwaitMessages, Body, BodyPart, Check, CheckSource, FeederSource, Injection, Plan, PlanError, Request,
    SocketConnect, Step,
};

/// Methods RFC 9110 and RFC 5789 define; any other token is a method too (PURGE, PROPFIND,
/// REPORT), but one of these in another case is a typo: methods are case-sensitive.
const STANDARD_METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE", "CONNECT"];

/// The longest duration anywhere in a plan: 365 days.
pub const MAX_DURATION_MS: u64 = 365 * 24 * 3600 * 1000;
/// More users at once, or arrivals per second, than any one machine can hold: a typo, and a
/// source of overflows.
const MAX_USERS: u64 = 10_000_000;
const MAX_RATE: f64 = 10_000_000.0;

/// Browsers open 6; more than this is a connection flood, not a page.
const MAX_CONNECTIONS_PER_HOST: u32 = 64;

pub(crate) fn validate(plan: &Plan) -> Vec<PlanError> {
    let feeders = plan.feeders.iter().map(|f| f.name.clone()).collect();
    let databases = plan.databases.iter().map(|d| d.name.clone()).collect();
    let mut v = Validator { errors: Vec::new(), feeders, databases };
    v.plan(plan);
    let value = serde_json::to_value(plan).expect("a plan always serializes");
    v.durations("", &value);
    v.errors
}

struct Validator {
    errors: Vec<PlanError>,
    /// The plan's feeder names, which `feed` steps refer to.
    feeders: Vec<String>,
    /// The plan's database names, which `sql` steps refer to.
    databases: Vec<String>,
}

impl Validator {
    fn error(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.errors.push(PlanError::new(path, message));
    }

    fn template(&mut self, path: &str, text: &str) {
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

    fn condition(&mut self, path: &str, text: &str) {
        if let Err(message) = parse_condition(text) {
            self.error(path, message);
        }
    }

    fn variable_name(&mut self, path: &str, name: &str) {
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
        let has_base_url = match &plan.protocol.base_url {
            Some(base) => {
                if let Some(problem) = http_url_problem(base) {
                    self.error("protocol.base_url", problem);
                }
                true
            }
            None => false,
        };
        for (i, header) in plan.protocol.headers.iter().enumerate() {
            let path = format!("protocol.headers[{i}]");
            self.header(&path, &header.name, &header.value);
        }
        if plan.protocol.request_timeout_ms == 0 {
            self.error("protocol.request_timeout_ms", "must be more than 0");
        }
        if plan.protocol.connect_timeout_ms == 0 {
            self.error("protocol.connect_timeout_ms", "must be more than 0");
        }
        if !(1..=MAX_CONNECTIONS_PER_HOST).contains(&plan.protocol.max_connections_per_host) {
            self.error(
                "protocol.max_connections_per_host",
                format!("must be from 1 to {MAX_CONNECTIONS_PER_HOST} (browsers use 6)"),
            );
        }
        for (i, mapping) in plan.protocol.resolve.iter().enumerate() {
            if mapping.address.parse::<std::net::IpAddr>().is_err() {
                self.error(
                    format!("protocol.resolve[{i}].address"),
                    format!("{:?} is not an IP address", mapping.address),
                );
            }
            if mapping.host.trim().is_empty() {
                self.error(format!("protocol.resolve[{i}].host"), "a mapping needs a host name");
            }
        }
        let tls = &plan.protocol.tls;
        if let (Some(min), Some(max)) = (tls.min_version, tls.max_version) {
            if min > max {
                self.error("protocol.tls", "min_version is newer than max_version: no TLS version is left");
            }
        }
        self.options(plan);
        self.feeders(plan);
        self.databases(plan);
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
            self.steps(&format!("{path}.steps"), &scenario.steps, has_base_url);
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

    fn header(&mut self, path: &str, name: &str, value: &str) {
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
            self.error(format!("{path}.name"), format!("{name:?} is not a header name"));
        }
        if value.contains(['\r', '\n']) {
            self.error(format!("{path}.value"), "a header value cannot hold a line break");
        }
        self.template(&format!("{path}.value"), value);
    }

    fn steps(&mut self, path: &str, steps: &[Step], has_base_url: bool) {
        for (i, step) in steps.iter().enumerate() {
            let path = format!("{path}[{i}]");
            match step {
                Step::Request(request) => self.request(&path, request, has_base_url),
                Step::Pause { .. } => {}
                Step::PauseUniform { min_ms, max_ms } => {
                    if min_ms > max_ms {
                        self.error(&path, format!("min_ms {min_ms} is more than max_ms {max_ms}"));
                    }
                }
                Step::PauseExponential { mean_ms } => {
                    if *mean_ms == 0 {
                        self.error(format!("{path}.mean_ms"), "must be more than 0");
                    }
                }
                Step::PauseNormal { .. } => {}
                Step::PauseTemplate { duration } => self.pause_template(&format!("{path}.duration"), duration),
                Step::Pace { duration_ms } => {
                    if *duration_ms == 0 {
                        self.error(format!("{path}.duration_ms"), "must be more than 0");
                    }
                }
                Step::Repeat { counter, steps, .. } => {
                    if let Some(counter) = counter {
                        self.variable_name(&format!("{path}.counter"), counter);
                    }
                    self.loop_body(&path, steps, has_base_url);
                }
                Step::During { duration_ms, counter, steps } => {
                    if *duration_ms == 0 {
                        self.error(format!("{path}.duration_ms"), "must be more than 0");
                    }
                    if let Some(counter) = counter {
                        self.variable_name(&format!("{path}.counter"), counter);
                    }
                    self.loop_body(&path, steps, has_base_url);
                }
                Step::Group { name, steps } => {
                    if name.trim().is_empty() {
                        self.error(format!("{path}.name"), "a group needs a name");
                    }
                    self.loop_body(&path, steps, has_base_url);
                }
                Step::Batch { requests } => {
                    if requests.is_empty() {
                        self.error(format!("{path}.requests"), "a batch needs at least one request");
                    }
                    for (i, request) in requests.iter().enumerate() {
                        let path = format!("{path}.requests[{i}]");
                        self.request(&path, request, has_base_url);
                        if !request.resources.is_empty() {
                            self.error(format!("{path}.resources"), "a request in a batch has no resources");
                        }
                    }
                }
                Step::WsConnect(step) => self.socket_connect(&path, step, true, has_base_url),
                Step::SseConnect(step) => self.socket_connect(&path, step, false, has_base_url),
                Step::WsSend(step) => {
                    self.socket_name(&path, &step.name, &step.socket);
                    match (&step.text, &step.binary_base64) {
                        (Some(text), None) => self.template(&format!("{path}.text"), text),
                        (None, Some(data)) => {
                            if !is_base64(data) {
                                self.error(format!("{path}.binary_base64"), "is not base64");
                            }
                        }
                        _ => self.error(&path, "a message is text or binary_base64, one of the two"),
                    }
                    if let Some(messages) = &step.await_messages {
                        self.await_messages(&format!("{path}.await"), messages);
                    }
                }
                Step::WsAwait(step) | Step::SseAwait(step) => {
                    self.socket_name(&path, &step.name, &step.socket);
                    self.await_messages(&format!("{path}.await"), &step.await_messages);
                }
                Step::WsClose(step) | Step::SseClose(step) => self.socket_name(&path, &step.name, &step.socket),
                Step::Feed { feeder, count } => {
                    if !self.feeders.iter().any(|f| f == feeder) {
                        let known = if self.feeders.is_empty() {
                            "the plan has none".to_string()
                        } else {
                            self.feeders.join(", ")
                        };
                        self.error(format!("{path}.feeder"), format!("no feeder is named {feeder:?} ({known})"));
                    }
                    if *count == 0 {
                        self.error(format!("{path}.count"), "must be at least 1");
                    }
                }
                Step::Set { values } => {
                    for (i, value) in values.iter().enumerate() {
                        self.variable_name(&format!("{path}.values[{i}].name"), &value.name);
                        self.template(&format!("{path}.values[{i}].value"), &value.value);
                    }
                }
                Step::Unset { names } => {
                    for (i, name) in names.iter().enumerate() {
                        self.variable_name(&format!("{path}.names[{i}]"), name);
                    }
                }
                Step::DoIf { condition, steps, else_steps } => {
                    self.condition(&format!("{path}.condition"), condition);
                    self.loop_body(&path, steps, has_base_url);
                    self.steps(&format!("{path}.else_steps"), else_steps, has_base_url);
                }
                Step::DoSwitch { value, cases, else_steps } => {
                    self.template(&format!("{path}.value"), value);
                    if cases.is_empty() {
                        self.error(format!("{path}.cases"), "a switch needs at least one case");
                    }
                    for (i, case) in cases.iter().enumerate() {
                        self.template(&format!("{path}.cases[{i}].value"), &case.value);
                        self.steps(&format!("{path}.cases[{i}].steps"), &case.steps, has_base_url);
                    }
                    self.steps(&format!("{path}.else_steps"), else_steps, has_base_url);
                }
                Step::RandomSwitch { cases, else_steps } => {
                    if cases.is_empty() {
                        self.error(format!("{path}.cases"), "a switch needs at least one case");
                    }
                    let mut total = 0.0;
                    for (i, case) in cases.iter().enumerate() {
                        if !(case.weight >= 0.0 && case.weight.is_finite()) {
                            self.error(format!("{path}.cases[{i}].weight"), "must be a percentage, 0 or more");
                        }
                        total += case.weight;
                        self.steps(&format!("{path}.cases[{i}].steps"), &case.steps, has_base_url);
                    }
                    if total > 100.0 + 1e-9 {
                        self.error(format!("{path}.cases"), format!("the weights add up to {total}%, more than 100%"));
                    }
                    self.steps(&format!("{path}.else_steps"), else_steps, has_base_url);
                }
                Step::UniformRandomSwitch { cases } | Step::RoundRobinSwitch { cases } => {
                    if cases.is_empty() {
                        self.error(format!("{path}.cases"), "a switch needs at least one case");
                    }
                    for (i, case) in cases.iter().enumerate() {
                        self.steps(&format!("{path}.cases[{i}].steps"), &case.steps, has_base_url);
                    }
                }
                Step::Foreach { list, element, counter, steps } => {
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
                    self.loop_body(&path, steps, has_base_url);
                }
                Step::AsLongAs { condition, counter, steps, .. } | Step::DoWhile { condition, counter, steps } => {
                    self.condition(&format!("{path}.condition"), condition);
                    if let Some(counter) = counter {
                        self.variable_name(&format!("{path}.counter"), counter);
                    }
                    self.loop_body(&path, steps, has_base_url);
                }
                Step::TryMax { name, times, counter, steps } => {
                    if name.trim().is_empty() {
                        self.error(format!("{path}.name"), "needs a name (its row)");
                    }
                    if *times == 0 {
                        self.error(format!("{path}.times"), "must be at least 1");
                    }
                    if let Some(counter) = counter {
                        self.variable_name(&format!("{path}.counter"), counter);
                    }
                    self.loop_body(&path, steps, has_base_url);
                }
                Step::Eventually { name, times, timeout_ms, counter, steps, .. } => {
                    if name.trim().is_empty() {
                        self.error(format!("{path}.name"), "needs a name (its row)");
                    }
                    match (times, timeout_ms) {
                        (None, None) => self.error(&path, "needs times, timeout_ms or both: it must end"),
                        (Some(0), _) => self.error(format!("{path}.times"), "must be at least 1"),
                        (_, Some(0)) => self.error(format!("{path}.timeout_ms"), "must be more than 0"),
                        _ => {}
                    }
                    if let Some(counter) = counter {
                        self.variable_name(&format!("{path}.counter"), counter);
                    }
                    self.loop_body(&path, steps, has_base_url);
                }
                Step::SessionFunction { name, function } => {
                    if name.trim().is_empty() {
                        self.error(format!("{path}.name"), "a session function needs a name (its row)");
                    }
                    if function.trim().is_empty() {
                        self.error(format!("{path}.function"), "names no function");
                    }
                }
                Step::ExitHereIfFailed => {}
                Step::ExitHere { condition } => {
                    if let Some(condition) = condition {
                        self.condition(&format!("{path}.condition"), condition);
                    }
                }
                Step::ExitBlockOnFail { steps } => self.loop_body(&path, steps, has_base_url),
                Step::StopLoadGenerator { message, condition } => {
                    if message.trim().is_empty() {
                        self.error(format!("{path}.message"), "say why the run stops");
                    }
                    if let Some(condition) = condition {
                        self.condition(&format!("{path}.condition"), condition);
                    }
                }
                Step::AddCookie(step) => {
                    self.cookie_name(&path, &step.name);
                    self.template(&format!("{path}.value"), &step.value);
                    if step.value.contains(';') {
                        self.error(format!("{path}.value"), "a cookie value cannot hold a semicolon");
                    }
                    self.cookie_domain(&path, step.domain.as_deref(), has_base_url);
                    if let Some(cookie_path) = &step.path {
                        if !cookie_path.starts_with('/') || cookie_path.contains(';') {
                            self.error(
                                format!("{path}.path"),
                                format!("{cookie_path:?} is not a path (it starts with /)"),
                            );
                        }
                    }
                }
                Step::GetCookie(step) => {
                    self.cookie_name(&path, &step.name);
                    if step.domain.is_some() {
                        self.cookie_domain(&path, step.domain.as_deref(), has_base_url);
                    }
                    self.variable_name(&format!("{path}.save_as"), &step.save_as);
                }
                Step::FlushCookieJar | Step::FlushSessionCookies => {}
                Step::CouchdbBulkInsert(step) => {
                    self.couchdb_common(&path, &step.name, &step.database, &step.schema, has_base_url);
                    if step.documents_per_insert == 0 {
                        self.error(format!("{path}.documents_per_insert"), "must be more than 0");
                    }
                }
                Step::CouchdbCrud(step) => {
                    self.couchdb_common(&path, &step.name, &step.database, &step.schema, has_base_url);
                    let counts = step.weights.counts(step.operations);
                    for rule in crud_rule_violations(&step.weights, step.operations, step.bulk_documents_per_user) {
                        self.error(format!("{path}.weights"), rule.explain(&counts, step.bulk_documents_per_user));
                    }
                }
                Step::SqlWorkload(step) => self.sql_workload(&path, step),
                Step::Sql(step) => self.sql_statement(&path, step),
                Step::SqlTransaction(step) => self.sql_database_reference(&path, step.database.as_deref()),
            }
        }
    }

    fn database_url(&mut self, path: &str, url: &str) {
        let scheme = url.split_once(':').map(|(scheme, _)| scheme).unwrap_or("");
        if !matches!(scheme, "sqlite" | "postgres" | "postgresql" | "mysql" | "mariadb") {
            self.error(
                path,
                format!(
                    "{url:?} is not a database URL horde knows: sqlite:///path/file.db, \
                     postgres://user:password@host:port/database or mysql://user:password@host:port/database"
                ),
            );
        }
    }

    fn databases(&mut self, plan: &Plan) {
        let mut names = std::collections::HashSet::new();
        for (i, database) in plan.databases.iter().enumerate() {
            let path = format!("databases[{i}]");
            if database.name.trim().is_empty() {
                self.error(format!("{path}.name"), "a database needs a name");
            } else if !names.insert(database.name.as_str()) {
                self.error(format!("{path}.name"), format!("duplicate database name {:?}", database.name));
            }
            self.database_url(&format!("{path}.url"), &database.url);
            if database.pool_size == Some(0) {
                self.error(format!("{path}.pool_size"), "must be at least 1 (leave it out for a connection per user)");
            }
        }
    }

    /// A step's `database`: one of the plan's, or none when the plan has exactly one.
    fn sql_database_reference(&mut self, path: &str, database: Option<&str>) {
        match database {
            None if self.databases.len() == 1 => {}
            None if self.databases.is_empty() => self.error(
                path,
                "the plan has no database: add one to `databases` (in Python, setup(..., protocol=[sql.url(\"postgres://...\")]))",
            ),
            None => self.error(
                format!("{path}.database"),
                format!("the plan has several databases: name one of {}", self.databases.join(", ")),
            ),
            Some(name) if !self.databases.iter().any(|known| known == name) => {
                let known = if self.databases.is_empty() { "none".to_string() } else { self.databases.join(", ") };
                self.error(format!("{path}.database"), format!("no database named {name:?} (the plan's: {known})"));
            }
            Some(_) => {}
        }
    }

    fn sql_statement(&mut self, path: &str, step: &crate::SqlStatement) {
        if step.name.trim().is_empty() {
            self.error(format!("{path}.name"), "a statement needs a name (its row)");
        }
        self.sql_database_reference(path, step.database.as_deref());
        if step.sql.trim().is_empty() {
            self.error(format!("{path}.sql"), "no statement");
        }
        let placeholders = crate::sql_placeholders(&step.sql);
        let highest = placeholders.iter().map(|p| p.number).max().unwrap_or(0) as usize;
        if placeholders.iter().any(|p| p.number == 0) {
            self.error(format!("{path}.sql"), "placeholders count from $1");
        }
        if highest > step.params.len() {
            self.error(
                format!("{path}.params"),
                format!("the statement uses ${highest} but has {} param(s)", step.params.len()),
            );
        }
        for (i, param) in step.params.iter().enumerate() {
            self.template(&format!("{path}.params[{i}]"), param);
            if !placeholders.iter().any(|p| p.number as usize == i + 1) {
                self.error(format!("{path}.params[{i}]"), format!("${} is not in the statement", i + 1));
            }
        }
        for (i, check) in step.checks.iter().enumerate() {
            let path = format!("{path}.checks[{i}]");
            match &check.source {
                CheckSource::RowCount | CheckSource::ResponseTimeInMillis => {}
                CheckSource::Column { name } if name.trim().is_empty() => {
                    self.error(format!("{path}.source.name"), "a column check needs a column name");
                }
                CheckSource::Column { .. } if step.kind == crate::SqlStatementKind::Execute => {
                    self.error(
                        format!("{path}.source"),
                        "an execute returns no rows: make the statement a query to read its columns",
                    );
                }
                CheckSource::Column { .. } => {}
                _ => self.error(
                    format!("{path}.source"),
                    "a statement's result is checked with row_count, column or response_time_in_millis",
                ),
            }
            self.check(&path, check);
        }
    }

    fn sql_workload(&mut self, path: &str, step: &crate::SqlWorkload) {
        if step.name.trim().is_empty() {
            self.error(format!("{path}.name"), "must not be empty");
        }
        self.database_url(&format!("{path}.url"), &step.url);
        if let Some(problem) = crate::sql_table_name_problem(&step.table) {
            self.error(format!("{path}.table"), format!("{:?}: {problem}", step.table));
        }
        if !step.phase.strategies().contains(&step.strategy) {
            let names: Vec<&str> = step.phase.strategies().iter().map(|s| s.as_str()).collect();
            self.error(
                format!("{path}.strategy"),
                format!(
                    "{} is not a strategy of the {} phase: {}",
                    step.strategy.as_str(),
                    step.phase.as_str(),
                    names.join(", ")
                ),
            );
        }
        if step.rows == 0 {
            self.error(format!("{path}.rows"), "must be more than 0");
        }
        if step.threads == 0 {
            self.error(format!("{path}.threads"), "must be more than 0");
        }
        if step.batch_size == 0 {
            self.error(format!("{path}.batch_size"), "must be more than 0");
        }
        if step.text_length == 0 || step.text_length > crate::MAX_SQL_TEXT_LENGTH {
            self.error(format!("{path}.text_length"), format!("must be from 1 to {}", crate::MAX_SQL_TEXT_LENGTH));
        }
    }

    fn cookie_name(&mut self, path: &str, name: &str) {
        // RFC 6265's cookie-name: a token, no separators.
        let separator = |c: char| "()<>@,;:\\\"/[]?={} \t".contains(c) || c.is_control() || !c.is_ascii();
        if name.is_empty() || name.contains(separator) {
            self.error(format!("{path}.name"), format!("{name:?} is not a cookie name"));
        }
    }

    fn cookie_domain(&mut self, path: &str, domain: Option<&str>, has_base_url: bool) {
        match domain {
            None if !has_base_url => {
                self.error(format!("{path}.domain"), "needs a domain: the protocol has no base_url to take it from");
            }
            None => {}
            Some(domain) => {
                let bare = domain.strip_prefix('.').unwrap_or(domain);
                let is_name = bare.split('.').all(|label| {
                    !label.is_empty() && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                });
                if !is_name && bare.parse::<std::net::IpAddr>().is_err() {
                    self.error(format!("{path}.domain"), format!("{domain:?} is not a domain name"));
                }
            }
        }
    }

    fn socket_name(&mut self, path: &str, name: &str, socket: &str) {
        if name.trim().is_empty() {
            self.error(format!("{path}.name"), "a step needs a name");
        }
        if socket.trim().is_empty() {
            self.error(format!("{path}.socket"), "a socket needs a name");
        }
    }

    fn socket_connect(&mut self, path: &str, step: &SocketConnect, websocket: bool, has_base_url: bool) {
        self.socket_name(path, &step.name, &step.socket);
        self.socket_url(&format!("{path}.url"), &step.url, websocket, has_base_url);
        for (i, header) in step.headers.iter().enumerate() {
            self.header(&format!("{path}.headers[{i}]"), &header.name, &header.value);
        }
        if let Some(messages) = &step.await_messages {
            self.await_messages(&format!("{path}.await"), messages);
        }
    }

    fn socket_url(&mut self, path: &str, url: &str, websocket: bool, has_base_url: bool) {
        let schemes: &[&str] = if websocket { &["ws://", "wss://"] } else { &["http://", "https://"] };
        let lower = url.to_ascii_lowercase();
        if url.is_empty() {
            self.error(path, "a URL is needed");
        } else if url.contains("://") {
            if !schemes.iter().any(|s| lower.starts_with(s)) {
                self.error(path, format!("{url:?}: only {} URLs are supported here", schemes.join(" and ")));
            }
        } else if !has_base_url && !starts_with_template(url) {
            self.error(path, format!("{url:?} is relative but the protocol has no base_url"));
        }
        self.template(path, url);
    }

    fn await_messages(&mut self, path: &str, messages: &AwaitMessages) {
        if messages.timeout_ms == 0 {
            self.error(format!("{path}.timeout_ms"), "must be more than 0");
        }
        if messages.messages.is_empty() {
            self.error(format!("{path}.messages"), "wait for at least one message");
        }
        for (i, message) in messages.messages.iter().enumerate() {
            let path = format!("{path}.messages[{i}]");
            if message.name.trim().is_empty() {
                self.error(format!("{path}.name"), "a message needs a name (its row)");
            }
            for (kind, checks) in [("matching", &message.matching), ("checks", &message.checks)] {
                for (j, check) in checks.iter().enumerate() {
                    let path = format!("{path}.{kind}[{j}]");
                    if check.source.needs_response() || check.source.is_sql() {
                        self.error(
                            format!("{path}.source"),
                            "a message has no status, headers, location, response time or rows: check its text",
                        );
                    }
                    if kind == "matching" && check.save_as.is_some() {
                        // Skipped messages would save values too.
                        self.error(
                            format!("{path}.save_as"),
                            "matching checks only choose the message: save from checks",
                        );
                    }
                    self.check(&path, check);
                }
            }
        }
    }

    fn couchdb_common(&mut self, path: &str, name: &str, database: &str, schema: &str, has_base_url: bool) {
        if name.trim().is_empty() {
            self.error(format!("{path}.name"), "a CouchDB step needs a name");
        }
        let database_path = format!("{path}.database");
        if database.contains("://") {
            if !is_http_url(database) {
                self.error(&database_path, format!("{database:?}: only http:// URLs are supported"));
            }
        } else if !has_base_url {
            self.error(&database_path, format!("{database:?} is relative but the protocol has no base_url"));
        }
        if database.contains('$') {
            self.error(&database_path, "the database URL cannot hold templates");
        }
        if schema.trim().is_empty() {
            self.error(format!("{path}.schema"), "a CouchDB step needs a schema file");
        }
    }

    fn loop_body(&mut self, path: &str, steps: &[Step], has_base_url: bool) {
        if steps.is_empty() {
            self.error(format!("{path}.steps"), "needs at least one step");
        }
        self.steps(&format!("{path}.steps"), steps, has_base_url);
    }

    fn request(&mut self, path: &str, request: &Request, has_base_url: bool) {
        if request.name.trim().is_empty() {
            self.error(format!("{path}.name"), "a request needs a name");
        }
        self.method(&format!("{path}.method"), &request.method);
        let url_path = format!("{path}.url");
        if request.url.is_empty() {
            self.error(&url_path, "a request needs a URL");
        } else if request.url.contains("://") || request.url.starts_with("//") {
            let absolute =
                if request.url.starts_with("//") { format!("http:{}", request.url) } else { request.url.clone() };
            if let Some(problem) = http_url_problem(&absolute) {
                self.error(&url_path, problem);
            }
        } else if !has_base_url && !starts_with_template(&request.url) {
            self.error(&url_path, format!("{:?} is relative but the protocol has no base_url", request.url));
        }
        self.template(&url_path, &request.url);
        for (i, header) in request.headers.iter().enumerate() {
            self.header(&format!("{path}.headers[{i}]"), &header.name, &header.value);
        }
        for (i, param) in request.query.iter().enumerate() {
            self.template(&format!("{path}.query[{i}].name"), &param.name);
            self.template(&format!("{path}.query[{i}].value"), &param.value);
        }
        if let Some(body) = &request.body {
            self.body(&format!("{path}.body"), body);
        }
        for (i, check) in request.checks.iter().enumerate() {
            let path = format!("{path}.checks[{i}]");
            if check.source.is_sql() {
                self.error(
                    format!("{path}.source"),
                    "row_count and column read a SQL statement's result, not an HTTP response",
                );
            }
            self.check(&path, check);
        }
        for (i, resource) in request.resources.iter().enumerate() {
            let path = format!("{path}.resources[{i}]");
            self.request(&path, resource, has_base_url);
            if !resource.resources.is_empty() {
                self.error(format!("{path}.resources"), "a resource has no resources of its own");
            }
        }
    }

    /// Any token is a method (RFC 9110, section 9.1), as Gatling's `httpRequest(method, url)`
    /// and k6's `http.request(method, ...)` take it.
    fn method(&mut self, path: &str, method: &str) {
        if !is_token(method) {
            self.error(
                path,
                format!("{method:?} is not an HTTP method: a method is a token (letters, digits and !#$%&'*+-.^_`|~), such as GET or PURGE"),
            );
        } else if method == "CONNECT" {
            self.error(path, "CONNECT opens a tunnel through a proxy, which horde does not do");
        } else if let Some(standard) = STANDARD_METHODS.iter().find(|m| m.eq_ignore_ascii_case(method) && **m != method)
        {
            self.error(path, format!("{method:?}: methods are case-sensitive, and the standard one is {standard}"));
        }
    }

    fn body(&mut self, path: &str, body: &Body) {
        match body {
            Body::Raw { text } => self.template(&format!("{path}.text"), text),
            Body::Json { .. } => {}
            Body::Form { params } => {
                for (i, param) in params.iter().enumerate() {
                    self.template(&format!("{path}.params[{i}].name"), &param.name);
                    self.template(&format!("{path}.params[{i}].value"), &param.value);
                }
            }
            Body::DocumentFromSchema { path: file } => {
                if file.is_empty() {
                    self.error(format!("{path}.path"), "a schema file path is needed");
                }
            }
            Body::BulkDocumentsFromSchema { path: file, count } => {
                if file.is_empty() {
                    self.error(format!("{path}.path"), "a schema file path is needed");
                }
                if *count == 0 {
                    self.error(format!("{path}.count"), "must be more than 0");
                }
            }
            Body::Multipart { parts } => {
                if parts.is_empty() {
                    self.error(format!("{path}.parts"), "a multipart body needs at least one part");
                }
                for (i, part) in parts.iter().enumerate() {
                    let path = format!("{path}.parts[{i}]");
                    match part {
                        BodyPart::String { name, value } => {
                            self.part_name(&path, name);
                            self.template(&format!("{path}.value"), value);
                        }
                        BodyPart::RawFile { name, path: file, .. } => {
                            self.part_name(&path, name);
                            if file.is_empty() {
                                self.error(format!("{path}.path"), "a file part needs a path");
                            }
                        }
                    }
                }
            }
        }
    }

    fn part_name(&mut self, path: &str, name: &str) {
        if name.is_empty() || name.contains(['"', '\r', '\n']) {
            self.error(format!("{path}.name"), format!("{name:?} is not a part name"));
        }
    }

    fn check(&mut self, path: &str, check: &Check) {
        let empty = |what: &str| format!("a {what} check needs one");
        match &check.source {
            CheckSource::Header { name } if name.is_empty() => {
                self.error(format!("{path}.source.name"), "a header check needs a header name");
            }
            CheckSource::Substring { value } if value.is_empty() => {
                self.error(format!("{path}.source.value"), "a substring check needs a substring");
            }
            CheckSource::Regex { pattern, .. } if pattern.is_empty() => {
                self.error(format!("{path}.source.pattern"), "a regex check needs a pattern");
            }
            CheckSource::Css { selector, .. } if selector.trim().is_empty() => {
                self.error(format!("{path}.source.selector"), "a css check needs a selector");
            }
            CheckSource::Jsonpath { path: query } if query.trim().is_empty() => {
                self.error(format!("{path}.source.path"), "a jsonpath check needs a path");
            }
            CheckSource::Jmespath { expression } if expression.trim().is_empty() => {
                self.error(format!("{path}.source.expression"), empty("jmespath"));
            }
            CheckSource::Xpath { expression } if expression.trim().is_empty() => {
                self.error(format!("{path}.source.expression"), empty("xpath"));
            }
            _ => {}
        }
        let counts_substrings = matches!(check.source, CheckSource::Substring { .. }) && check.select == Select::Count;
        if !check.select.is_first() && !check.source.is_multivalued() && !counts_substrings {
            self.error(
                format!("{path}.select"),
                "find(n), find_all and count apply to regex, css, jsonpath, jmespath, xpath, header and column \
                 (and count to substring): this source has one value",
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

    fn positive(&mut self, path: &str, field: &str, value: u64) {
        if value == 0 {
            self.error(format!("{path}.{field}"), "must be more than 0");
        }
    }
}

/// A URL that begins with an expression may be absolute once rendered.
fn starts_with_template(url: &str) -> bool {
    url.starts_with("${") || url.starts_with("#{")
}

/// RFC 9110's token: what a method or a header name is made of.
fn is_token(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn is_base64(text: &str) -> bool {
    let text = text.trim_end_matches('=');
    text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

fn is_http_url(url: &str) -> bool {
    http_url_problem(url).is_none()
}

/// What keeps `url` from being an absolute http:// or https:// URL to request, in words that
/// name it, if anything: another scheme, no host (`http:///path`, `HTTP://`), a port that is
/// no port or is 0. The scheme's case does not matter (`HTTP://` is `http://`). What lies in a
/// template is judged once rendered.
///
/// ```
/// assert_eq!(horde_plan::http_url_problem("HTTPS://shop.test:8443/cart"), None);
/// assert!(horde_plan::http_url_problem("http:///path").unwrap().contains("no host"));
/// assert!(horde_plan::http_url_problem("http://127.0.0.1:0/").unwrap().contains("port 0"));
/// ```
pub fn http_url_problem(url: &str) -> Option<String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Some(format!("{url:?} is not an absolute URL (http://HOST[:PORT]/PATH or https://...)"));
    };
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return Some(format!("{url:?}: only http:// and https:// URLs are supported"));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, host_port)| host_port);
    if host_port.contains("${") || host_port.contains("#{") {
        return None;
    }
    let (host, port) = match host_port.strip_prefix('[') {
        Some(bracketed) => match bracketed.split_once(']') {
            Some((host, after)) => (host, after.strip_prefix(':')),
            None => return Some(format!("{url:?}: the IPv6 address has no closing ']'")),
        },
        None => match host_port.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        },
    };
    if host.is_empty() {
        let lower = scheme.to_ascii_lowercase();
        return Some(format!("{url:?} has no host: write {lower}://HOST[:PORT]/PATH (a host between // and the path)"));
    }
    match port {
        None | Some("") => None,
        Some(port) => match port.parse::<u32>() {
            Ok(0) => Some(format!("{url:?}: port 0 is no port a server listens on")),
            Ok(n) if n <= u32::from(u16::MAX) => None,
            _ => Some(format!("{url:?}: {port:?} is not a port (1 to 65535)")),
        },
    }
}
