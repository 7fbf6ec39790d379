//! Injection profiles turned into schedules: the intended arrival times of the open model, the
//! user slots of the closed model, and the slots of the run-wide throttle. Every worker
//! computes the same arrivals and slots and takes its own stripe of them, so workers never
//! have to agree on users at run time; throttle slots are leased from the run's ledger
//! (`run_limits`).

use horde_plan::{Injection, ThrottleStep};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::time::Duration;

/// A rate (per second) that changes linearly within each segment: constant-rate and
/// ramp-rate injection steps, and the throttle.
#[derive(Debug, Clone, PartialEq)]
pub struct RateSchedule {
    /// (start offset in seconds, length in seconds, rate at the start, rate at the end);
    /// contiguous and in order. The last rate holds after the last segment when `holds`.
    segments: Vec<(f64, f64, f64, f64)>,
    holds: bool,
}

impl RateSchedule {
    /// The time at which `count` events have happened, if they happen at all: the inverse of
    /// the cumulative count ∫rate.
    pub fn time_of(&self, count: f64) -> Option<f64> {
        let mut before = 0.0;
        for &(start, length, from, to) in &self.segments {
            let within = (from + to) / 2.0 * length;
            if count <= before + within {
                return Some(start + time_within(count - before, length, from, to));
            }
            before += within;
        }
        let &(start, length, _, last) = self.segments.last()?;
        (self.holds && last > 0.0).then(|| start + length + (count - before) / last)
    }

    /// How many of `stripe`'s events (its c-th is the schedule's `stripe.global(c)`-th) come
    /// before `t` seconds: a share's throttle slots due by then. Event times grow with their
    /// index, so by doubling, then bisecting.
    pub(crate) fn stripe_events_before(&self, stripe: &crate::segment::Stripe, t: f64) -> u64 {
        let due = |c: u64| self.time_of(stripe.global(c) as f64).is_some_and(|time| time < t);
        let mut high = 1u64;
        while due(high) && high < 1 << 48 {
            high *= 2;
        }
        let mut low = 0;
        while low < high {
            let middle = low + (high - low) / 2;
            if due(middle) {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        low
    }

    /// Events in the whole schedule (without the hold).
    pub fn total(&self) -> f64 {
        self.segments.iter().map(|(_, length, from, to)| (from + to) / 2.0 * length).sum()
    }

    /// The rate (per second) `t` seconds into the schedule.
    pub fn rate_at(&self, t: f64) -> f64 {
        for &(start, length, from, to) in &self.segments {
            if t < start + length {
                let within = if length > 0.0 { ((t - start) / length).clamp(0.0, 1.0) } else { 0.0 };
                return from + (to - from) * within;
            }
        }
        match self.segments.last() {
            Some(&(_, _, _, last)) if self.holds => last,
            _ => 0.0,
        }
    }

    /// The throttle's schedule for the whole run.
    pub fn throttle(steps: &[ThrottleStep]) -> Option<RateSchedule> {
        let mut segments = Vec::new();
        let mut at = 0.0;
        let mut rate = 0.0;
        for step in steps {
            match *step {
                ThrottleStep::JumpToRps { rps } => rate = rps,
                ThrottleStep::ReachRps { rps, duration_ms } => {
                    let length = duration_ms as f64 / 1000.0;
                    segments.push((at, length, rate, rps));
                    at += length;
                    rate = rps;
                }
                ThrottleStep::HoldFor { duration_ms } => {
                    let length = duration_ms as f64 / 1000.0;
                    segments.push((at, length, rate, rate));
                    at += length;
                }
            }
        }
        if steps.is_empty() {
            return None;
        }
        // A final jump (or a plan of jumps only) holds from where it is.
        segments.push((at, 0.0, rate, rate));
        Some(RateSchedule { segments, holds: true })
    }
}

/// Time into a segment of `length` s, whose rate goes from `from` to `to`, at which `count`
/// events have happened: solves from·t + (to − from)·t²/(2·length) = count.
fn time_within(count: f64, length: f64, from: f64, to: f64) -> f64 {
    if length <= 0.0 {
        return 0.0;
    }
    let slope = (to - from) / length;
    let t = if slope.abs() < 1e-12 {
        if from > 0.0 {
            count / from
        } else {
            0.0
        }
    } else {
        (-from + (from * from + 2.0 * slope * count).max(0.0).sqrt()) / slope
    };
    t.clamp(0.0, length)
}

/// Intended arrival offsets from the start of the run, in order. Lazy: a long, fast profile
/// never sits in memory.
pub fn arrivals(steps: &[Injection], seed: u64) -> Arrivals {
    Arrivals {
        steps: expand_open(steps),
        step: 0,
        index: 0,
        step_start: Duration::ZERO,
        poisson_count: 0.0,
        rng: SmallRng::seed_from_u64(seed),
    }
}

/// Open-model steps reduced to the few shapes the arrival iterator knows.
#[derive(Debug, Clone, PartialEq)]
enum OpenStep {
    Wait(Duration),
    AtOnce(u64),
    Ramp { users: u64, duration: Duration },
    Rate { schedule: RateSchedule, duration: Duration, randomized: bool },
    Peak { users: u64, duration: Duration },
}

fn rate_step(from: f64, to: f64, duration_ms: u64, randomized: bool) -> OpenStep {
    let seconds = duration_ms as f64 / 1000.0;
    OpenStep::Rate {
        schedule: RateSchedule { segments: vec![(0.0, seconds, from, to)], holds: false },
        duration: Duration::from_millis(duration_ms),
        randomized,
    }
}

fn expand_open(steps: &[Injection]) -> Vec<OpenStep> {
    let mut open = Vec::new();
    for step in steps {
        match *step {
            Injection::NothingFor { duration_ms } => open.push(OpenStep::Wait(Duration::from_millis(duration_ms))),
            Injection::AtOnceUsers { users } => open.push(OpenStep::AtOnce(users)),
            Injection::RampUsers { users, duration_ms } => {
                open.push(OpenStep::Ramp { users, duration: Duration::from_millis(duration_ms) })
            }
            Injection::ConstantUsersPerSec { rate, duration_ms, randomized } => {
                open.push(rate_step(rate, rate, duration_ms, randomized))
            }
            Injection::RampUsersPerSec { from, to, duration_ms, randomized } => {
                open.push(rate_step(from, to, duration_ms, randomized))
            }
            Injection::StressPeakUsers { users, duration_ms } => {
                open.push(OpenStep::Peak { users, duration: Duration::from_millis(duration_ms) })
            }
            Injection::IncrementUsersPerSec {
                increment,
                times,
                level_duration_ms,
                ramp_duration_ms,
                starting_from,
            } => {
                for level in 0..times {
                    let rate = starting_from + f64::from(level) * increment;
                    open.push(rate_step(rate, rate, level_duration_ms, false));
                    if level + 1 < times && ramp_duration_ms > 0 {
                        open.push(rate_step(rate, rate + increment, ramp_duration_ms, false));
                    }
                }
            }
            // Closed-model steps are not arrivals; validation keeps them out of open profiles.
            Injection::ConstantConcurrentUsers { .. }
            | Injection::RampConcurrentUsers { .. }
            | Injection::IncrementConcurrentUsers { .. } => {}
        }
    }
    open
}

pub struct Arrivals {
    steps: Vec<OpenStep>,
    step: usize,
    /// Arrivals already produced by the current step.
    index: u64,
    step_start: Duration,
    /// Cumulative count (in the rate schedule's terms) of the last Poisson arrival.
    poisson_count: f64,
    rng: SmallRng,
}

impl Arrivals {
    /// Whether the arrival just produced belongs to an `at_once_users` step: a population
    /// (`-c N` of quick mode), not a flow of arrivals spread in time.
    pub fn last_was_at_once(&self) -> bool {
        matches!(self.steps.get(self.step), Some(OpenStep::AtOnce(_)))
    }

    fn next_step(&mut self, duration: Duration) {
        self.step += 1;
        self.index = 0;
        self.poisson_count = 0.0;
        self.step_start += duration;
    }
}

impl Iterator for Arrivals {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        loop {
            let step = self.steps.get(self.step)?.clone();
            match step {
                OpenStep::Wait(duration) => self.next_step(duration),
                OpenStep::AtOnce(users) => {
                    if self.index < users {
                        self.index += 1;
                        return Some(self.step_start);
                    }
                    self.next_step(Duration::ZERO);
                }
                OpenStep::Ramp { users, duration } => {
                    if self.index < users {
                        let at = duration.mul_f64(self.index as f64 / users as f64);
                        self.index += 1;
                        return Some(self.step_start + at);
                    }
                    self.next_step(duration);
                }
                OpenStep::Rate { schedule, duration, randomized } => {
                    let total = schedule.total();
                    let count = if randomized {
                        // Poisson arrivals: exponential gaps in the cumulative count, mapped
                        // back to time, so the rate follows the schedule.
                        self.poisson_count += -(1.0 - self.rng.random::<f64>()).ln();
                        self.poisson_count
                    } else {
                        self.index as f64
                    };
                    let within = if randomized { count < total } else { self.index < total.round() as u64 };
                    if within {
                        if let Some(at) = schedule.time_of(count) {
                            self.index += 1;
                            return Some(self.step_start + Duration::from_secs_f64(at).min(duration));
                        }
                    }
                    self.next_step(duration);
                }
                OpenStep::Peak { users, duration } => {
                    if self.index < users {
                        let quantile = (self.index as f64 + 0.5) / users as f64;
                        self.index += 1;
                        return Some(self.step_start + duration.mul_f64(smooth_step_inverse(quantile)));
                    }
                    self.next_step(duration);
                }
            }
        }
    }
}

/// Where in [0, 1] a smooth step (the normal CDF over ±3 standard deviations, rescaled to go
/// from exactly 0 to exactly 1) reaches `quantile`: most arrivals in the middle.
fn smooth_step_inverse(quantile: f64) -> f64 {
    let cdf = |x: f64| 0.5 * (1.0 + erf((6.0 * x - 3.0) / std::f64::consts::SQRT_2));
    let (low, high) = (cdf(0.0), cdf(1.0));
    let target = low + quantile * (high - low);
    let (mut a, mut b) = (0.0, 1.0);
    for _ in 0..50 {
        let mid = (a + b) / 2.0;
        if cdf(mid) < target {
            a = mid;
        } else {
            b = mid;
        }
    }
    (a + b) / 2.0
}

/// The error function, to 1.5e-7 (Abramowitz and Stegun 7.1.26).
fn erf(x: f64) -> f64 {
    let sign = x.signum();
    let x = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly =
        t * (0.254_829_592 + t * (-0.284_496_736 + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    sign * (1.0 - poly * (-x * x).exp())
}

/// When a closed-model user slot is active: while active, a user runs the scenario, and when it
/// finishes a fresh one takes its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub from: Duration,
    pub until: Duration,
}

/// The users a profile deals out, each with its index: its arrivals in the open model (a
/// randomized rate counts its expected arrivals), its user slots (the highest concurrency) in
/// the closed one. What segments are weighed by (`segment::Share`).
pub fn user_indices(steps: &[Injection]) -> u64 {
    if steps.iter().any(Injection::is_closed) {
        return closed_levels(steps).iter().map(|&(from, to, _)| from.max(to)).max().unwrap_or(0);
    }
    expand_open(steps)
        .iter()
        .map(|step| match step {
            OpenStep::Wait(_) => 0,
            OpenStep::AtOnce(users) | OpenStep::Ramp { users, .. } | OpenStep::Peak { users, .. } => *users,
            OpenStep::Rate { schedule, .. } => schedule.total().round() as u64,
        })
        .fold(0, u64::saturating_add)
}

/// The slots of a closed profile whose user index `owned` (by this worker): for each such
/// user, the periods it is active, adjoining periods merged so a user is not cut between
/// steps.
pub fn closed_slots(steps: &[Injection], owned: impl Fn(u64) -> bool) -> Vec<Vec<Slot>> {
    let mut by_user: Vec<Vec<Slot>> = Vec::new();
    let mut add = |user: u64, from: Duration, until: Duration| {
        if until <= from {
            return;
        }
        let user = user as usize;
        if by_user.len() <= user {
            by_user.resize(user + 1, Vec::new());
        }
        match by_user[user].last_mut() {
            Some(last) if last.until == from => last.until = until,
            _ => by_user[user].push(Slot { from, until }),
        }
    };
    let mut offset = Duration::ZERO;
    for (level_from, level_to, duration) in closed_levels(steps) {
        let end = offset + duration;
        let (low, high) = (level_from.min(level_to), level_from.max(level_to));
        for user in 0..high {
            if user < low {
                add(user, offset, end);
                continue;
            }
            // User `user` is active while the target concurrency is at least user + 1.
            let span = (high - low) as f64;
            if level_to > level_from {
                add(user, offset + duration.mul_f64((user + 1 - low) as f64 / span), end);
            } else {
                add(user, offset, offset + duration.mul_f64((high - user - 1) as f64 / span));
            }
        }
        offset = end;
    }
    by_user
        .into_iter()
        .enumerate()
        .filter(|(user, slots)| owned(*user as u64) && !slots.is_empty())
        .map(|(_, slots)| slots)
        .collect()
}

/// Closed steps as (concurrency at the start, at the end, duration).
fn closed_levels(steps: &[Injection]) -> Vec<(u64, u64, Duration)> {
    let mut levels = Vec::new();
    for step in steps {
        match *step {
            Injection::ConstantConcurrentUsers { users, duration_ms } => {
                levels.push((users, users, Duration::from_millis(duration_ms)))
            }
            Injection::RampConcurrentUsers { from, to, duration_ms } => {
                levels.push((from, to, Duration::from_millis(duration_ms)))
            }
            Injection::IncrementConcurrentUsers {
                increment,
                times,
                level_duration_ms,
                ramp_duration_ms,
                starting_from,
            } => {
                for level in 0..u64::from(times) {
                    let users = starting_from + level * increment;
                    levels.push((users, users, Duration::from_millis(level_duration_ms)));
                    if level + 1 < u64::from(times) && ramp_duration_ms > 0 {
                        levels.push((users, users + increment, Duration::from_millis(ramp_duration_ms)));
                    }
                }
            }
            _ => {}
        }
    }
    levels
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(offsets: impl Iterator<Item = Duration>) -> Vec<u128> {
        offsets.map(|d| d.as_millis()).collect()
    }

    #[test]
    fn arrivals_say_which_were_made_at_once() {
        let steps = [
            Injection::AtOnceUsers { users: 2 },
            Injection::RampUsers { users: 2, duration_ms: 1000 },
            Injection::AtOnceUsers { users: 1 },
        ];
        let mut arrivals = arrivals(&steps, 0);
        let kinds: Vec<bool> = std::iter::from_fn(|| arrivals.next().map(|_| arrivals.last_was_at_once())).collect();
        assert_eq!(kinds, [true, true, false, false, true]);
    }

    #[test]
    fn open_steps_run_one_after_the_other() {
        let steps = [
            Injection::AtOnceUsers { users: 2 },
            Injection::NothingFor { duration_ms: 100 },
            Injection::RampUsers { users: 4, duration_ms: 400 },
            Injection::ConstantUsersPerSec { rate: 10.0, duration_ms: 300, randomized: false },
        ];
        assert_eq!(ms(arrivals(&steps, 1)), vec![0, 0, 100, 200, 300, 400, 500, 600, 700]);
    }

    #[test]
    fn poisson_arrivals_keep_the_rate_and_repeat_with_the_seed() {
        let steps = [Injection::ConstantUsersPerSec { rate: 1000.0, duration_ms: 10_000, randomized: true }];
        let count = arrivals(&steps, 7).count();
        assert!((9_500..10_500).contains(&count), "{count}");
        assert_eq!(ms(arrivals(&steps, 7).take(50)), ms(arrivals(&steps, 7).take(50)));
        assert_ne!(ms(arrivals(&steps, 7).take(50)), ms(arrivals(&steps, 8).take(50)));
        let offsets: Vec<Duration> = arrivals(&steps, 7).collect();
        assert!(offsets.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn a_rate_ramp_starts_the_area_under_the_rate() {
        // 10 to 30 users/s over 2 s: 40 users, more of them late than early.
        let steps = [Injection::RampUsersPerSec { from: 10.0, to: 30.0, duration_ms: 2000, randomized: false }];
        let offsets: Vec<f64> = arrivals(&steps, 1).map(|d| d.as_secs_f64()).collect();
        assert_eq!(offsets.len(), 40);
        let first_second = offsets.iter().filter(|t| **t < 1.0).count();
        assert_eq!(first_second, 15, "∫ from 0 to 1 s of (10 + 10t) = 15");
        let randomized = [Injection::RampUsersPerSec { from: 100.0, to: 300.0, duration_ms: 10_000, randomized: true }];
        let count = arrivals(&randomized, 3).count();
        assert!((1_900..2_100).contains(&count), "{count}");
    }

    #[test]
    fn stairs_expand_to_levels_and_ramps() {
        let steps = [Injection::IncrementUsersPerSec {
            increment: 10.0,
            times: 3,
            level_duration_ms: 1000,
            ramp_duration_ms: 500,
            starting_from: 5.0,
        }];
        // Levels 5, 15, 25 users/s for 1 s each; ramps 5->15 and 15->25 for 0.5 s each.
        let expected = 5.0 + 15.0 + 25.0 + (5.0 + 15.0) / 2.0 * 0.5 + (15.0 + 25.0) / 2.0 * 0.5;
        assert_eq!(arrivals(&steps, 1).count(), expected as usize);
        assert_eq!(steps[0].duration_ms(), 4000);
        let last = arrivals(&steps, 1).last().unwrap();
        assert!(last >= Duration::from_millis(3900) && last < Duration::from_millis(4000), "{last:?}");
    }

    #[test]
    fn a_stress_peak_puts_most_arrivals_in_the_middle() {
        let steps = [Injection::StressPeakUsers { users: 1000, duration_ms: 10_000 }];
        let offsets: Vec<f64> = arrivals(&steps, 1).map(|d| d.as_secs_f64()).collect();
        assert_eq!(offsets.len(), 1000);
        let middle = offsets.iter().filter(|t| (3.0..7.0).contains(*t)).count();
        // The middle 40 % of the time is ±1.2 standard deviations: 77 % of the users.
        assert!((750..800).contains(&middle), "{middle}");
        assert!(offsets.windows(2).all(|w| w[0] <= w[1]));
        assert!(offsets[0] >= 0.0 && offsets[999] <= 10.0);
    }

    #[test]
    fn closed_slots_are_shared_between_workers_and_merged_across_steps() {
        let steps = [
            Injection::ConstantConcurrentUsers { users: 3, duration_ms: 1000 },
            Injection::ConstantConcurrentUsers { users: 1, duration_ms: 500 },
        ];
        let all: usize = (0..2).map(|w| closed_slots(&steps, |user| user % 2 == w).len()).sum();
        assert_eq!(all, 3);
        assert_eq!(
            closed_slots(&steps, |user| user % 2 == 0),
            vec![
                vec![Slot { from: Duration::ZERO, until: Duration::from_millis(1500) }],
                vec![Slot { from: Duration::ZERO, until: Duration::from_secs(1) }],
            ]
        );
    }

    #[test]
    fn a_concurrency_ramp_adds_users_evenly() {
        let steps = [Injection::RampConcurrentUsers { from: 0, to: 4, duration_ms: 4000 }];
        let slots = closed_slots(&steps, |_| true);
        let starts: Vec<u128> = slots.iter().map(|s| s[0].from.as_millis()).collect();
        assert_eq!(starts, vec![1000, 2000, 3000]);
        let down = [Injection::RampConcurrentUsers { from: 4, to: 0, duration_ms: 4000 }];
        let ends: Vec<u128> = closed_slots(&down, |_| true).iter().map(|s| s[0].until.as_millis()).collect();
        assert_eq!(ends, vec![3000, 2000, 1000]);
    }

    #[test]
    fn throttle_slots_follow_jumps_and_ramps() {
        let steps = [
            ThrottleStep::ReachRps { rps: 20.0, duration_ms: 1000 },
            ThrottleStep::HoldFor { duration_ms: 1000 },
            ThrottleStep::JumpToRps { rps: 100.0 },
        ];
        let schedule = RateSchedule::throttle(&steps).unwrap();
        // The ramp holds 10 requests, the hold 20; then 100/s.
        assert!((schedule.time_of(10.0).unwrap() - 1.0).abs() < 1e-9);
        assert!((schedule.time_of(30.0).unwrap() - 2.0).abs() < 1e-9);
        assert!((schedule.time_of(130.0).unwrap() - 3.0).abs() < 1e-9);
        assert_eq!((schedule.rate_at(0.5), schedule.rate_at(1.5), schedule.rate_at(9.0)), (10.0, 20.0, 100.0));
    }
}
