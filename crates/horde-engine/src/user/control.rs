//! Logic at run time, in the core: feeds, session variables, branches, loops, retries and
//! exits. Conditions and templates are compiled; nothing here parses or looks a name up.

use super::{Flow, VirtualUser};
use crate::failure::Failure;
use crate::lower::{ChoiceProgram, ConditionProgram, LoopProgram, RetryKind, RetryProgram, StepProgram, Template};
use crate::session::expression::{abridged, EvalError};
use crate::session::feeder::{FeedError, FeederRuntime, Record};
use crate::session::Value;
use horde_plan::OnFeederExhausted;
use rand::Rng;
use std::sync::Arc;
use tokio::time::Instant;

/// How often a user waiting for its share's next row grant looks again.
const GRANT_POLL: std::time::Duration = std::time::Duration::from_millis(20);

impl VirtualUser {
    /// Takes the feeder's next record (or `count` of them, each variable then a list).
    pub(crate) async fn feed(&mut self, feeder: &Arc<FeederRuntime>, slots: &[usize], count: u32) -> Flow {
        if count == 1 {
            match self.take_record(feeder).await {
                Ok(record) => {
                    for (slot, value) in slots.iter().zip(record.iter()) {
                        self.session.variables[*slot] = value.clone();
                    }
                    return Flow::Next;
                }
                Err(error) => return self.feed_failed(feeder, error),
            }
        }
        let mut columns: Vec<Vec<Value>> = vec![Vec::with_capacity(count as usize); slots.len()];
        for _ in 0..count {
            let record = match self.take_record(feeder).await {
                Ok(record) => record,
                Err(error) => return self.feed_failed(feeder, error),
            };
            for (column, value) in columns.iter_mut().zip(record.iter()) {
                column.push(value.clone().unwrap_or(Value::Json(Arc::new(serde_json::Value::Null))));
            }
        }
        for (slot, values) in slots.iter().zip(columns) {
            self.session.variables[*slot] = Some(Value::list(values));
        }
        Flow::Next
    }

    /// The feeder's next record. A share that has taken every row its coordinator granted
    /// (a replaceable share of a distributed run) waits for the next grant, which comes with
    /// the coordinator's beat: no row is used that the coordinator does not know may be.
    async fn take_record(&mut self, feeder: &FeederRuntime) -> Result<Record, FeedError> {
        loop {
            match feeder.take(&mut self.session.rng) {
                Err(FeedError::AwaitingGrant) if !self.ctx.limits.stop_requested() => {
                    feeder.waited_for_grant();
                    // Boxed: only a user that waits holds the timer.
                    Box::pin(tokio::time::sleep(GRANT_POLL)).await;
                }
                taken => return taken,
            }
        }
    }

    /// A feeder used up: a KO `feeder_exhausted` in its row, and this user ends; with
    /// `stop_run`, the whole run stops.
    fn feed_failed(&mut self, feeder: &FeederRuntime, error: FeedError) -> Flow {
        let failure = match error {
            // The run stops while the user waits for a grant: nothing failed.
            FeedError::AwaitingGrant => return Flow::ExitUser,
            FeedError::Exhausted => Failure::unsent(
                "feeder_exhausted",
                format!("feeder {:?} ({}) has no records left: each was taken once", feeder.name, feeder.origin),
            ),
            FeedError::Read(message) => Failure::unsent("feeder_error", message),
        };
        self.record_unsent(feeder.row_id, &failure, 0, None);
        if feeder.on_exhausted == OnFeederExhausted::StopRun {
            self.ctx.limits.request_stop(format!("feeder {:?} ran out of records", feeder.name));
        }
        Flow::ExitUser
    }

    pub(crate) fn set(&mut self, values: &[(usize, Template)], row_id: usize) -> Flow {
        for (slot, template) in values {
            match template.value(&mut self.session) {
                Ok(value) => self.session.variables[*slot] = Some(value),
                Err(error) => return self.step_failed(row_id, error),
            }
        }
        Flow::Next
    }

    fn holds(&mut self, condition: &ConditionProgram) -> Result<bool, Flow> {
        condition.condition.holds(&mut self.session).map_err(|error| self.step_failed(condition.row_id, error))
    }

    pub(crate) async fn choose(&mut self, choice: &ChoiceProgram) -> Flow {
        let branch: &[StepProgram] = match choice {
            ChoiceProgram::If { condition, then, otherwise } => match self.holds(condition) {
                Ok(true) => then,
                Ok(false) => otherwise,
                Err(flow) => return flow,
            },
            ChoiceProgram::Switch { value, row_id, cases, otherwise } => {
                let value = match value.render(&mut self.session) {
                    Ok(value) => value,
                    Err(error) => return self.step_failed(*row_id, error),
                };
                let mut chosen: &[StepProgram] = otherwise;
                for (expected, steps) in cases {
                    match expected.render(&mut self.session) {
                        Ok(expected) if expected == value => {
                            chosen = steps;
                            break;
                        }
                        Ok(_) => {}
                        Err(error) => return self.step_failed(*row_id, error),
                    }
                }
                chosen
            }
            ChoiceProgram::Random { bounds, cases, otherwise } => {
                let draw = self.session.rng.random::<f64>() * 100.0;
                match bounds.iter().position(|bound| draw < *bound) {
                    Some(case) => &cases[case],
                    None => otherwise,
                }
            }
            ChoiceProgram::Uniform(cases) => &cases[self.session.rng.random_range(0..cases.len())],
            // Cut off from its coordinator (no grant), the share's lease lapses and its
            // requests are not sent: any case will do.
            ChoiceProgram::RoundRobin { next, cases } => {
                &cases[(next.take().unwrap_or(0) % cases.len() as u64) as usize]
            }
        };
        self.chain(branch).await
    }

    pub(crate) async fn run_loop(&mut self, program: &LoopProgram) -> Flow {
        match program {
            LoopProgram::Foreach { list, row_id, element, counter, body } => {
                let list = match list.value(&mut self.session) {
                    Ok(list) => list,
                    Err(error) => return self.step_failed(*row_id, error),
                };
                let items = match list.to_json().map(|json| json.into_owned()) {
                    Some(serde_json::Value::Array(items)) => items,
                    _ => {
                        let message = format!("foreach needs a list, and {} is not one", abridged(&list.as_text()));
                        return self.step_failed(*row_id, EvalError::Invalid(message));
                    }
                };
                for (i, item) in items.into_iter().enumerate() {
                    self.session.variables[*element] = (!item.is_null()).then(|| Value::from_json(item));
                    self.set_counter(*counter, i as u64);
                    let flow = self.chain(body).await;
                    if flow != Flow::Next {
                        return flow;
                    }
                }
                Flow::Next
            }
            LoopProgram::While { condition, test_first, exit_on_fail, counter, body } => {
                let mut i = 0u64;
                loop {
                    if *test_first || i > 0 {
                        match self.holds(condition) {
                            Ok(true) => {}
                            Ok(false) => return Flow::Next,
                            Err(flow) => return flow,
                        }
                    }
                    self.set_counter(*counter, i);
                    if *exit_on_fail {
                        self.exiting_on_failure += 1;
                    }
                    let flow = self.chain(body).await;
                    if *exit_on_fail {
                        self.exiting_on_failure -= 1;
                    }
                    match flow {
                        Flow::Next => {}
                        Flow::StopIteration if *exit_on_fail => return Flow::Next,
                        other => return other,
                    }
                    i += 1;
                    // A loop whose body never waits (only `set` steps, say) must still let the
                    // worker's other tasks, its snapshots and its stop signal run.
                    tokio::task::consume_budget().await;
                }
            }
        }
    }

    /// `try_max` and `eventually`: the body again until a pass has no failure. The block is
    /// one outcome in its group row, its duration from the first attempt's start to the end
    /// of the passing one (for `eventually`, the time to consistency).
    pub(crate) async fn retry(&mut self, retry: &RetryProgram) -> Flow {
        let entered = self.enter_group();
        let started = entered.at;
        let deadline = retry.timeout.map(|timeout| started + timeout);
        let outer_retrying = self.retrying;
        self.exiting_on_failure += 1;
        let mut attempts = 0u32;
        let outcome = loop {
            self.set_counter(retry.counter, u64::from(attempts));
            attempts += 1;
            // The last attempt's failures are real; those of an attempt that will be tried
            // again are `retried` (unless an enclosing retry forgives them anyway).
            let out_of_attempts = retry.times.is_some_and(|times| attempts >= times);
            let out_of_time = deadline.is_some_and(|deadline| Instant::now() + retry.pause >= deadline);
            let last = out_of_attempts || out_of_time;
            self.retrying = outer_retrying || !last;
            let failures = self.attempt_failures;
            let flow = self.chain(&retry.body).await;
            let passed = self.attempt_failures == failures;
            match flow {
                Flow::Exhausted | Flow::ExitUser => break (flow, false),
                _ if passed => break (Flow::Next, true),
                _ if last => break (Flow::StopIteration, false),
                _ => {}
            }
            tokio::time::sleep(retry.pause).await;
        };
        let origin = self.leave_group(entered);
        self.retrying = outer_retrying;
        self.exiting_on_failure -= 1;
        let (flow, ok) = outcome;
        if self.ctx.measures(started) {
            let duration_us = origin.elapsed().as_micros() as u64;
            self.ctx.metrics.borrow_mut().group(retry.group).record_attempts(duration_us, ok, u64::from(attempts));
        }
        if ok || flow != Flow::StopIteration {
            return flow;
        }
        let what = match retry.kind {
            RetryKind::TryMax => "try_max",
            RetryKind::Eventually => "eventually",
        };
        let (kind, message) = self.last_failure.clone().unwrap_or(("failed", "a request failed".into()));
        let elapsed = started.elapsed().as_secs_f64();
        let failure = Failure::unsent(
            if retry.kind == RetryKind::Eventually { "not_consistent" } else { "tries_exhausted" },
            format!("{what}: still failing after {attempts} attempts over {elapsed:.2} s; the last: {kind}: {message}"),
        );
        if !self.retrying && self.ctx.measures(Instant::now()) {
            self.ctx.metrics.borrow_mut().error(failure.kind, retry.row_id, 0, || failure.message.clone());
        }
        self.after_failure()
    }

    pub(crate) fn exit(&mut self, condition: Option<&ConditionProgram>, if_failed: bool) -> Flow {
        if if_failed {
            return if self.failures > 0 { Flow::ExitUser } else { Flow::Next };
        }
        match condition.map(|c| self.holds(c)) {
            None | Some(Ok(true)) => Flow::ExitUser,
            Some(Ok(false)) => Flow::Next,
            Some(Err(flow)) => flow,
        }
    }

    /// Calls a front end's function with the session. It blocks this worker while it runs
    /// (and while it waits for Python's lock): its cost is in the summary.
    pub(crate) fn session_function(&mut self, key: &str, row_id: usize) -> Flow {
        let ctx = self.ctx.clone();
        let program = &ctx.program;
        let Some(functions) = program.session_functions.as_deref() else {
            let failure =
                Failure::unsent("session_function_missing", format!("no front end supplied the function {key:?}"));
            self.record_unsent(row_id, &failure, 0, None);
            return self.after_failure();
        };
        let result = crate::session::functions::call(
            functions,
            &program.function_cost,
            key,
            &mut self.session,
            &program.variables,
            &program.variable_slots,
        );
        match result {
            Ok(()) => Flow::Next,
            Err(message) => {
                self.record_unsent(row_id, &Failure::unsent("session_function_error", message), 0, None);
                self.after_failure()
            }
        }
    }

    pub(crate) fn stop_load_generator(&mut self, message: &Arc<str>, condition: Option<&ConditionProgram>) -> Flow {
        if let Some(condition) = condition {
            match self.holds(condition) {
                Ok(true) => {}
                Ok(false) => return Flow::Next,
                Err(flow) => return flow,
            }
        }
        self.ctx.limits.request_stop(message.to_string());
        Flow::ExitUser
    }
}
