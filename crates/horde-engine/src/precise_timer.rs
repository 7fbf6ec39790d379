//! A sleep with microsecond precision for the open-model injector. tokio's timer wheel has a
//! resolution of one millisecond and rounds deadlines up, so arrivals it schedules start 1 to
//! 2 ms late as a rule (measured in bench/RESULTS.md). A Linux timerfd, armed for each
//! deadline and read through the worker's own reactor, wakes within microseconds. One fd per
//! injector: a few syscalls per arrival, no thread, no spinning.

use crate::descriptors::DescriptorPermit;
use rustix::time::{Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec};
use std::os::fd::OwnedFd;
use std::time::Duration;
use tokio::io::unix::AsyncFd;
use tokio::time::Instant;

pub(crate) struct PreciseTimer {
    fd: Option<AsyncFd<OwnedFd>>,
    /// The timerfd's place in the process's descriptor budget.
    _descriptor: Option<DescriptorPermit>,
}

impl PreciseTimer {
    /// Falls back to tokio's timer when a timerfd cannot be had (none left in the descriptor
    /// budget once the run's connections are provided for).
    pub fn new() -> PreciseTimer {
        let Some(descriptor) = DescriptorPermit::timer() else {
            return PreciseTimer { fd: None, _descriptor: None };
        };
        let fd =
            rustix::time::timerfd_create(TimerfdClockId::Monotonic, TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC)
                .ok()
                .and_then(|fd| {
                    // `AsyncFd::new` is deprecated for types that may not own their descriptor
                    // (its replacement is `unsafe`); an OwnedFd owns it and moves into the AsyncFd,
                    // which keeps it open until deregistration. The safe constructor keeps the
                    // workspace free of `unsafe`.
                    #[allow(deprecated)]
                    AsyncFd::new(fd).ok()
                });
        PreciseTimer { _descriptor: fd.is_some().then_some(descriptor), fd }
    }

    pub async fn sleep_until(&mut self, deadline: Instant) {
        let Some(fd) = &mut self.fd else {
            return tokio::time::sleep_until(deadline).await;
        };
        loop {
            let now = Instant::now();
            if deadline <= now {
                return;
            }
            // The fd is armed relative to now; a zero duration would disarm it.
            let wait = (deadline - now).max(Duration::from_nanos(1));
            if rustix::time::timerfd_settime(fd.get_ref(), TimerfdTimerFlags::empty(), &one_shot(wait)).is_err() {
                return tokio::time::sleep_until(deadline).await;
            }
            match fd.readable().await {
                Ok(mut guard) => {
                    // Reading the expiration count resets readiness; a spurious wake loops.
                    let mut expirations = [0u8; 8];
                    let _ = rustix::io::read(guard.get_inner(), &mut expirations);
                    guard.clear_ready();
                }
                Err(_) => return tokio::time::sleep_until(deadline).await,
            }
        }
    }
}

/// A timer that fires once, `wait` from now.
fn one_shot(wait: Duration) -> Itimerspec {
    let zero = Timespec { tv_sec: 0, tv_nsec: 0 };
    let value = Timespec { tv_sec: wait.as_secs() as _, tv_nsec: wait.subsec_nanos() as _ };
    Itimerspec { it_interval: zero, it_value: value }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn wakes_within_a_fraction_of_a_millisecond() {
        let mut timer = PreciseTimer::new();
        let mut worst = Duration::ZERO;
        for _ in 0..50 {
            let deadline = Instant::now() + Duration::from_micros(300);
            timer.sleep_until(deadline).await;
            let late = Instant::now().saturating_duration_since(deadline);
            assert!(Instant::now() >= deadline);
            worst = worst.max(late);
        }
        // tokio's own timer would be 0.7 to 2 ms late here.
        assert!(worst < Duration::from_millis(5), "{worst:?}");
    }
}
