//! A virtual user: one session (variables, cookie jar, keep-alive connection, random stream)
//! running a scenario's steps once.

mod control;

use crate::failure::Failure;
use crate::lower::{PauseKind, StepProgram};
use crate::precise_timer::PreciseTimer;
use crate::protocol::UserProtocols;
use crate::request_log::Logged;
use crate::session::expression::EvalError;
use crate::session::Session;
use crate::worker::{WorkerContext, WorkerMetrics};
use horde_metrics::RequestTiming;
use horde_plan::OnCheckFailure;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The timer's resolution: a wake-up this late is the clock's granularity, not a stall.
const TIMER_RESOLUTION: Duration = Duration::from_millis(1);

/// Where the latency of a request the server held back is measured from: the throttle slot it
/// was due at, plus the timer's resolution, which is the clock's granularity rather than a
/// stall (coordinated omission: the time the user could not send because it was still
/// waiting for earlier answers counts, as wrk2 counts it).
pub(crate) fn corrected_start(intended: Instant, started: Instant) -> Instant {
    (intended + TIMER_RESOLUTION).min(started)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UserOutcome {
    /// The user ran to its end; `failed` when any of its requests or steps was a KO.
    Finished { failed: bool },
    /// The run's request limit was reached; no new user should start.
    Exhausted,
}

/// What the chain does after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    Next,
    /// A request failed: abandon this iteration of the scenario (or, inside a block that
    /// exits on failure, that block).
    StopIteration,
    /// The user ends here (`exit_here`, a feeder used up, the run stopping): no block catches
    /// it.
    ExitUser,
    Exhausted,
}

/// A virtual user: the core of its session (variables, random stream, schedule), and a slot
/// for each protocol's own state, which the core holds but never reads.
pub(crate) struct VirtualUser {
    pub(crate) ctx: Rc<WorkerContext>,
    /// Variables, the random stream, who the user is: what templates and conditions read.
    pub(crate) session: Session,
    /// Each protocol's own state for this user (cookies, connections, sockets).
    pub(crate) protocols: UserProtocols,
    /// Inside a group (or `try_max`, `eventually`): when its duration is measured from. Its
    /// entry, or the earlier throttle slot a request inside was held back from, so a group
    /// is never shorter than its requests (one clock for both).
    group_origin: Option<Instant>,
    /// KO requests so far: a group is OK when this did not change inside it.
    failures: u64,
    /// Failed requests so far, retried ones included: an attempt of `try_max` or
    /// `eventually` passed when this did not change inside it.
    attempt_failures: u64,
    /// Inside an attempt that will be tried again: a failure is counted as `retried` in its
    /// row, not as a KO.
    retrying: bool,
    /// Blocks around the current step that a failed request leaves at once (`try_max`,
    /// `eventually`, `exit_block_on_fail`): a failure then ends the block, whatever
    /// `on_check_failure` says.
    exiting_on_failure: u32,
    /// The latest failure's kind and message: a retry block that gives up reports it.
    last_failure: Option<(&'static str, String)>,
    /// When this user last passed each pace step.
    paces: Vec<Option<Instant>>,
    /// Waits for throttle slots; made on first use, so unthrottled users hold no timer.
    slot_timer: Option<PreciseTimer>,
    /// One document generator per schema of the plan, made on first use.
    documents: Vec<Option<horde_docgen::Generator>>,
    seed: u64,
    /// Unique within the scenario (the arrival's index in the open model).
    number: u64,
    /// The scenario's index in the program.
    scenario: usize,
}

impl VirtualUser {
    pub fn new(ctx: Rc<WorkerContext>, scenario: usize, seed: u64, number: u64) -> VirtualUser {
        let slots = ctx.program.variables.len();
        VirtualUser {
            protocols: UserProtocols::new(&ctx.program.protocols),
            paces: vec![None; ctx.program.paces],
            slot_timer: None,
            documents: (0..ctx.program.schemas.len()).map(|_| None).collect(),
            seed,
            number,
            scenario,
            session: Session {
                variables: vec![None; slots],
                rng: SmallRng::seed_from_u64(seed),
                user_id: number,
                scenario: ctx.program.scenarios[scenario].name.clone(),
                extra: None,
            },
            ctx,
            group_origin: None,
            failures: 0,
            attempt_failures: 0,
            retrying: false,
            exiting_on_failure: 0,
            last_failure: None,
        }
    }

    /// Unique within the scenario (the arrival's index): what makes the keys of the user's
    /// documents and rows its own.
    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    /// The user's KO requests so far.
    pub(crate) fn failures(&self) -> u64 {
        self.failures
    }

    pub async fn run(&mut self, steps: &[StepProgram]) -> UserOutcome {
        let flow = self.chain(steps).await;
        UserProtocols::finish(self).await;
        match flow {
            Flow::Exhausted => UserOutcome::Exhausted,
            Flow::Next | Flow::StopIteration | Flow::ExitUser => UserOutcome::Finished { failed: self.failures > 0 },
        }
    }

    pub(crate) async fn chain(&mut self, steps: &[StepProgram]) -> Flow {
        for step in steps {
            let flow = match step {
                // A protocol's step: awaited here, not in a block, so that HTTP's request (the
                // hot path) needs no allocation.
                StepProgram::Protocol(step) => step.run(self).await,
                StepProgram::Pause(kind) => match self.pause_duration(kind) {
                    Ok(duration) => {
                        self.pause(duration).await;
                        Flow::Next
                    }
                    Err(flow) => flow,
                },
                StepProgram::Pace { id, duration } => {
                    self.pace(*id, *duration).await;
                    Flow::Next
                }
                // Boxed once per entry into a block (not per iteration), which is what lets
                // blocks nest.
                block => self.block(block).await,
            };
            if flow != Flow::Next {
                return flow;
            }
        }
        Flow::Next
    }

    fn block<'a>(&'a mut self, step: &'a StepProgram) -> Pin<Box<dyn Future<Output = Flow> + 'a>> {
        Box::pin(async move {
            match step {
                StepProgram::Repeat { times, counter, body } => {
                    for i in 0..*times {
                        self.set_counter(*counter, i);
                        let flow = self.chain(body).await;
                        if flow != Flow::Next {
                            return flow;
                        }
                        // A body that never waits (only `set` steps, say) must still let the
                        // worker's snapshots, `max_duration` and Ctrl-C through.
                        tokio::task::consume_budget().await;
                    }
                    Flow::Next
                }
                StepProgram::During { duration, counter, body } => {
                    let until = Instant::now() + *duration;
                    let mut i = 0u64;
                    while Instant::now() < until {
                        self.set_counter(*counter, i);
                        let flow = self.chain(body).await;
                        if flow != Flow::Next {
                            return flow;
                        }
                        i += 1;
                        tokio::task::consume_budget().await;
                    }
                    Flow::Next
                }
                StepProgram::Group { group, body } => {
                    let entered = self.enter_group();
                    let measured = self.ctx.measures(entered.at);
                    let failures = self.failures;
                    let flow = self.chain(body).await;
                    let origin = self.leave_group(entered);
                    let duration_us = origin.elapsed().as_micros() as u64;
                    let ok = self.failures == failures;
                    if measured {
                        self.ctx.metrics.borrow_mut().group(*group).record(duration_us, ok);
                    }
                    flow
                }
                StepProgram::Feed { feeder, slots, count } => self.feed(feeder, slots, *count).await,
                StepProgram::Set { values, row_id } => self.set(values, *row_id),
                StepProgram::Unset(slots) => {
                    for slot in slots {
                        self.session.variables[*slot] = None;
                    }
                    Flow::Next
                }
                StepProgram::Choose(choice) => self.choose(choice).await,
                StepProgram::Loop(program) => self.run_loop(program).await,
                StepProgram::Retry(retry) => Box::pin(self.retry(retry)).await,
                StepProgram::Exit { condition, if_failed } => self.exit(condition.as_deref(), *if_failed),
                StepProgram::ExitBlockOnFail(body) => {
                    self.exiting_on_failure += 1;
                    let flow = self.chain(body).await;
                    self.exiting_on_failure -= 1;
                    match flow {
                        Flow::StopIteration => Flow::Next,
                        other => other,
                    }
                }
                StepProgram::StopLoadGenerator { message, condition } => {
                    self.stop_load_generator(message, condition.as_deref())
                }
                StepProgram::SessionFunction { key, row_id } => self.session_function(key, *row_id),
                StepProgram::Protocol(_) | StepProgram::Pause(_) | StepProgram::Pace { .. } => {
                    unreachable!("handled by chain")
                }
            }
        })
    }

    /// A loop's counter, when it has one, holds the 0-based number of the pass.
    pub(crate) fn set_counter(&mut self, counter: Option<usize>, pass: u64) {
        if let Some(slot) = counter {
            self.session.variables[slot] = Some(pass.to_string().into());
        }
    }

    /// Waits for the run's next throttle slot, when there is a throttle. Returns the slot when
    /// it was already due as the user asked for it: the user was held back by the answers it
    /// waited for, and the request's latency counts from the slot (coordinated omission, as
    /// wrk2 measures it). A slot the user waited for returns None: the request is measured
    /// from when it went out, and a late wake-up, the generator's own lag, goes to the start
    /// lag instead, never into the server's figures.
    pub(crate) async fn throttle_slot(&mut self) -> Option<Instant> {
        let slot = self.ctx.limits.next_throttle_slot()?;
        if self.ctx.limits.past_run_end(slot) {
            // The run ends before this slot: wait for the collector's stop, which cuts this
            // user off like every other one still running.
            std::future::pending::<()>().await;
        }
        let asked = Instant::now();
        // Throttle slots are sub-millisecond apart at high rates: tokio's 1 ms timer would
        // start most of them late.
        self.slot_timer.get_or_insert_with(PreciseTimer::new).sleep_until(slot).await;
        self.ctx.record_start_lag(slot, Instant::now());
        (slot < asked).then_some(slot)
    }

    /// Where a request that went out at `started` is measured from: the slot it was held back
    /// from (see [`Self::throttle_slot`]), or `started`. A group around it then counts from
    /// the same instant.
    pub(crate) fn latency_origin(&mut self, held_since: Option<Instant>, started: Instant) -> Instant {
        let Some(slot) = held_since else { return started };
        let origin = corrected_start(slot, started);
        if let Some(group_origin) = &mut self.group_origin {
            *group_origin = (*group_origin).min(origin);
        }
        origin
    }

    /// Enters a group (or a retry block): its duration counts from now, or from an earlier
    /// slot a request inside was held back from.
    pub(crate) fn enter_group(&mut self) -> GroupEntry {
        let at = Instant::now();
        GroupEntry { at, outer: self.group_origin.replace(at) }
    }

    /// Leaves the group entered at `entry`: the instant its duration counts from. An
    /// enclosing group counts from it too when it is earlier.
    pub(crate) fn leave_group(&mut self, entry: GroupEntry) -> Instant {
        // Set at entry and only ever lowered since: never later than the entry.
        let origin = self.group_origin.take().unwrap_or(entry.at);
        self.group_origin = entry.outer.map(|outer| outer.min(origin));
        origin
    }

    /// How long this pause lasts: drawn, or rendered from the session. A template that
    /// renders to no duration fails the user, counted in the pause's row.
    fn pause_duration(&mut self, kind: &PauseKind) -> Result<Duration, Flow> {
        if let Some(duration) = kind.draw(&mut self.session.rng) {
            return Ok(duration);
        }
        let PauseKind::Template(pause) = kind else { unreachable!("only a template needs the session") };
        let text = pause.duration.render(&mut self.session).map_err(|error| self.step_failed(pause.row_id, error))?;
        horde_plan::parse_duration(&text).map_err(|problem| {
            let failure = Failure::unsent("invalid_pause", problem);
            self.step_error(pause.row_id, &failure, 0)
        })
    }

    async fn pause(&mut self, duration: Duration) {
        // From now: the pause follows the answer, as Gatling's does. A late wake-up is the
        // generator's and is not charged to the next request.
        tokio::time::sleep(duration).await;
    }

    /// Waits until `duration` after this user last passed this pace step, so the loop around
    /// it runs at most once per `duration`. A late pass is not caught up: the next one is
    /// measured from it.
    async fn pace(&mut self, id: usize, duration: std::time::Duration) {
        let now = Instant::now();
        let target = match self.paces[id] {
            Some(last) if last + duration > now => last + duration,
            _ => now,
        };
        tokio::time::sleep_until(target).await;
        self.paces[id] = Some(target);
    }

    /// An expression that has no value, as the failure of what needed it.
    pub(crate) fn expression_failure(&self, error: EvalError) -> (Failure, u32) {
        match error {
            EvalError::Undefined(slot) => {
                let name = &self.ctx.program.variables[slot];
                (Failure::unsent("undefined_variable", format!("undefined variable ${{{name}}}")), slot as u32)
            }
            EvalError::Invalid(message) => (Failure::unsent("expression_error", message), 0),
        }
    }

    /// The user's generator for a schema of the plan, seeded from the user's own seed, so a
    /// run's seed reproduces every document.
    pub(crate) fn generator(&mut self, id: usize, schema: &Arc<horde_docgen::Schema>) -> &mut horde_docgen::Generator {
        let seed = self.seed ^ (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.documents[id].get_or_insert_with(|| {
            horde_docgen::Generator::new(schema.clone(), horde_docgen::Dictionary::shared(), seed)
        })
    }

    /// What the chain does after a failed request.
    pub(crate) fn after_failure(&self) -> Flow {
        if self.exiting_on_failure > 0 {
            return Flow::StopIteration;
        }
        match self.ctx.program.plan.options.on_check_failure {
            OnCheckFailure::StopIteration => Flow::StopIteration,
            OnCheckFailure::Continue => Flow::Next,
        }
    }

    /// An exchange that succeeded. `url` is what it was sent to, for the request log: a
    /// borrow of what the request already holds, read only when the log is on.
    pub(crate) fn record_ok(&self, row_id: usize, started: Instant, timing: &RequestTiming, url: Option<&str>) {
        if let Some(mut metrics) = self.measured(row_id, started, timing) {
            metrics.row(row_id).record(timing, true);
            self.log(&metrics, row_id, started, timing, url, LogOutcome::Ok);
        }
    }

    /// Logs an outcome just recorded, when the run keeps a request log (`--request-log`):
    /// what is logged is exactly what the recorders count.
    fn log(
        &self,
        metrics: &WorkerMetrics,
        row_id: usize,
        started: Instant,
        timing: &RequestTiming,
        url: Option<&str>,
        outcome: LogOutcome<'_>,
    ) {
        if self.ctx.request_log.is_none() {
            return;
        }
        let (ok, unsent, retried, failure) = match outcome {
            LogOutcome::Ok => (true, false, false, None),
            LogOutcome::Failed(failure) => (false, failure.unsent, false, Some(failure)),
            LogOutcome::Retried(failure) => (false, failure.unsent, true, Some(failure)),
        };
        self.ctx.log_request(Logged {
            row_name: metrics.row_name(row_id),
            scenario: self.scenario,
            user: self.number,
            started,
            timing,
            url,
            ok,
            unsent,
            retried,
            error: failure.map(|f| (f.kind, f.message.as_str())),
        });
    }

    /// The worker's recorders if the exchange on `row_id` that began at `started` and ends
    /// now is measured. What completes after the warm-up counts, wherever it began: a
    /// level's throughput is what completes in its window (requests queued in the warm-up
    /// and answered after it count; those cut at the end do not).
    pub(crate) fn measured(
        &self,
        row_id: usize,
        started: Instant,
        timing: &RequestTiming,
    ) -> Option<std::cell::RefMut<'_, WorkerMetrics>> {
        let ended = started + Duration::from_micros(timing.uncorrected_us);
        if !self.ctx.measures(ended) {
            return None;
        }
        let mut metrics = self.ctx.metrics.borrow_mut();
        if !self.ctx.measures(started) {
            // Its start, in the warm-up, was not counted: it is now, with its outcome.
            metrics.row(row_id).started += 1;
        }
        Some(metrics)
    }

    /// A failed exchange: counted with its timing. An unsent request goes to
    /// [`Self::record_unsent`] instead, so that it stays out of the latency statistics.
    /// `url` as in [`Self::record_ok`].
    pub(crate) fn record_failure(
        &mut self,
        row_id: usize,
        started: Instant,
        timing: &RequestTiming,
        failure: &Failure,
        detail: u32,
        url: Option<&str>,
    ) {
        if failure.unsent {
            return self.record_unsent(row_id, failure, detail, url);
        }
        if self.count_failure(failure) {
            if let Some(mut metrics) = self.measured(row_id, started, timing) {
                metrics.row(row_id).record_retried();
                self.log(&metrics, row_id, started, timing, url, LogOutcome::Retried(failure));
            }
            return;
        }
        if let Some(mut metrics) = self.measured(row_id, started, timing) {
            metrics.row(row_id).record(timing, false);
            metrics.error(failure.kind, row_id, detail, || failure.message.clone());
            self.log(&metrics, row_id, started, timing, url, LogOutcome::Failed(failure));
        }
    }

    /// A request that failed before anything was sent: a KO, counted, with no latency; `url`
    /// when it had one.
    pub(crate) fn record_unsent(&mut self, row_id: usize, failure: &Failure, detail: u32, url: Option<&str>) {
        let retried = self.count_failure(failure);
        if !self.ctx.measures(Instant::now()) {
            return;
        }
        let mut metrics = self.ctx.metrics.borrow_mut();
        let unsent_timing = RequestTiming::default();
        if retried {
            metrics.row(row_id).record_retried();
            self.log(&metrics, row_id, Instant::now(), &unsent_timing, url, LogOutcome::Retried(failure));
            return;
        }
        metrics.row(row_id).record_unsent();
        metrics.error(failure.kind, row_id, detail, || failure.message.clone());
        self.log(&metrics, row_id, Instant::now(), &unsent_timing, url, LogOutcome::Failed(failure));
    }

    /// Counts a failure; true when it is in an attempt that will be tried again, and so is no
    /// KO.
    fn count_failure(&mut self, failure: &Failure) -> bool {
        self.attempt_failures += 1;
        if self.retrying || self.exiting_on_failure > 0 {
            self.last_failure = Some((failure.kind, failure.message.clone()));
        }
        if self.retrying {
            return true;
        }
        self.failures += 1;
        false
    }

    /// An error that is no request's (a condition, a switch's value, a foreach's list that
    /// has no value): counted in the errors under `row_id`, and a failure of the user.
    pub(crate) fn step_failed(&mut self, row_id: usize, error: EvalError) -> Flow {
        let (failure, detail) = self.expression_failure(error);
        self.step_error(row_id, &failure, detail)
    }

    /// A step that is no request failed (a cookie it needs is missing): counted in the
    /// errors under `row_id`, and a failure of the user.
    pub(crate) fn step_error(&mut self, row_id: usize, failure: &Failure, detail: u32) -> Flow {
        if !self.count_failure(failure) && self.ctx.measures(Instant::now()) {
            self.ctx.metrics.borrow_mut().error(failure.kind, row_id, detail, || failure.message.clone());
        }
        self.after_failure()
    }
}

/// Where a group was entered, and the origin of the group around it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GroupEntry {
    pub(crate) at: Instant,
    outer: Option<Instant>,
}

/// What happened to a request, for the request log.
#[derive(Clone, Copy)]
enum LogOutcome<'a> {
    Ok,
    /// A KO (sent or not).
    Failed(&'a Failure),
    /// A failed attempt that is tried again.
    Retried(&'a Failure),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lateness_within_the_timer_resolution_is_forgiven() {
        let t = Instant::now() + Duration::from_secs(10);
        let ms = Duration::from_millis;
        assert_eq!(corrected_start(t, t + Duration::from_micros(600)), t + Duration::from_micros(600));
        assert_eq!(corrected_start(t, t + ms(5)), t + ms(1));
        assert_eq!(corrected_start(t + ms(1), t), t);
    }
}
