//! Injection profiles turned into schedules: the intended arrival times of the open model and
//! the user slots of the closed model. Every worker computes the same schedule and takes its
//! own share, so workers never have to agree on anything at run time.

use horde_plan::Injection;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::time::Duration;

/// Intended arrival offsets from the start of the run, in order. Lazy: a long, fast profile
/// never sits in memory.
pub fn arrivals(steps: &[Injection], seed: u64) -> Arrivals<'_> {
    Arrivals { steps, step: 0, index: 0, step_start: Duration::ZERO, poisson_at: None, rng: SmallRng::seed_from_u64(seed) }
}

pub struct Arrivals<'a> {
    steps: &'a [Injection],
    step: usize,
    /// Arrivals already produced by the current step.
    index: u64,
    step_start: Duration,
    /// Offset within the current step of the last Poisson arrival.
    poisson_at: Option<f64>,
    rng: SmallRng,
}

impl Arrivals<'_> {
    fn next_step(&mut self, duration: Duration) {
        self.step += 1;
        self.index = 0;
        self.poisson_at = None;
        self.step_start += duration;
    }
}

impl Iterator for Arrivals<'_> {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        loop {
            let step = self.steps.get(self.step)?;
            match *step {
                Injection::NothingFor { duration_ms } => self.next_step(Duration::from_millis(duration_ms)),
                Injection::AtOnceUsers { users } => {
                    if self.index < users {
                        self.index += 1;
                        return Some(self.step_start);
                    }
                    self.next_step(Duration::ZERO);
                }
                Injection::RampUsers { users, duration_ms } => {
                    let duration = Duration::from_millis(duration_ms);
                    if self.index < users {
                        let at = duration.mul_f64(self.index as f64 / users as f64);
                        self.index += 1;
                        return Some(self.step_start + at);
                    }
                    self.next_step(duration);
                }
                Injection::ConstantUsersPerSec { rate, duration_ms, randomized } => {
                    let duration = Duration::from_millis(duration_ms);
                    if randomized {
                        // Poisson arrivals: exponential gaps with mean 1/rate.
                        let gap = -(1.0 - self.rng.random::<f64>()).ln() / rate;
                        let at = self.poisson_at.unwrap_or(0.0) + gap;
                        if at < duration.as_secs_f64() {
                            self.poisson_at = Some(at);
                            return Some(self.step_start + Duration::from_secs_f64(at));
                        }
                    } else {
                        let users = (rate * duration.as_secs_f64()).round() as u64;
                        if self.index < users {
                            let at = Duration::from_secs_f64(self.index as f64 / rate);
                            self.index += 1;
                            return Some(self.step_start + at);
                        }
                    }
                    self.next_step(duration);
                }
                // Closed-model steps are not arrivals; validation keeps them out of open profiles.
                Injection::ConstantConcurrentUsers { .. } => self.next_step(Duration::ZERO),
            }
        }
    }
}

/// One closed-model user slot: from `from` to `until`, a user runs the scenario, and when it
/// finishes a fresh one takes its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub from: Duration,
    pub until: Duration,
}

/// The slots of a closed profile that belong to `worker` of `workers`.
pub fn closed_slots(steps: &[Injection], worker: usize, workers: usize) -> Vec<Slot> {
    let mut slots = Vec::new();
    let mut offset = Duration::ZERO;
    for step in steps {
        if let Injection::ConstantConcurrentUsers { users, duration_ms } = *step {
            let until = offset + Duration::from_millis(duration_ms);
            slots.extend((0..users).filter(|u| *u as usize % workers == worker).map(|_| Slot { from: offset, until }));
            offset = until;
        }
    }
    slots
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(offsets: impl Iterator<Item = Duration>) -> Vec<u128> {
        offsets.map(|d| d.as_millis()).collect()
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
    fn closed_slots_are_shared_between_workers() {
        let steps = [
            Injection::ConstantConcurrentUsers { users: 3, duration_ms: 1000 },
            Injection::ConstantConcurrentUsers { users: 1, duration_ms: 500 },
        ];
        let all: usize = (0..2).map(|w| closed_slots(&steps, w, 2).len()).sum();
        assert_eq!(all, 4);
        assert_eq!(
            closed_slots(&steps, 0, 2),
            vec![
                Slot { from: Duration::ZERO, until: Duration::from_secs(1) },
                Slot { from: Duration::ZERO, until: Duration::from_secs(1) },
                Slot { from: Duration::from_secs(1), until: Duration::from_millis(1500) },
            ]
        );
    }
}
