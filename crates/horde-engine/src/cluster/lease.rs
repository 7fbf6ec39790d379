//! The coordinator's lease on a share. The coordinator beats every second; each beat the
//! share hears extends the lease. A share whose lease has lapsed sends nothing more: it cannot
//! tell a coordinator that is gone from one that counted it lost and gave its segment to
//! another machine, and either way its load would be counted by nobody.
//!
//! Checked before every request (one atomic load and a clock read, shares only), not by a
//! timer: a share that was stopped (SIGSTOP, a frozen VM, a long pause) finds every timer due
//! at once when it resumes, and would send its missed arrivals in a burst before any watchdog
//! woke.

//!
//! A beat may also carry row grants (`options.execution_segment.row_grants`): how many rows
//! of each queue and shuffle feeder, and how many values of each run-wide counter, the share
//! may take by now. The coordinator knows every grant it gave, so it knows the rows and values
//! a lost share could have used, whatever of its last messages were lost: its replacement
//! starts after them.

use crate::segment::RunCounter;
use crate::session::feeder::FeederRuntime;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

pub struct ShareLease {
    /// What `until_ns` counts from.
    origin: Instant,
    /// Nanoseconds after `origin` up to which the share may send.
    until_ns: AtomicU64,
    /// How long a beat holds the lease.
    term: Duration,
    /// What row grants bound, once the share's run has loaded its plan.
    granted: OnceLock<GrantedTakes>,
}

/// What row grants bound on a share: the plan's feeders (queue and shuffle ones; the others
/// ignore theirs), then its run-wide counters, in the order of the grants' bounds.
#[derive(Clone, Default)]
pub(crate) struct GrantedTakes {
    pub feeders: Vec<Arc<FeederRuntime>>,
    pub counters: Vec<Arc<RunCounter>>,
}

impl GrantedTakes {
    pub fn is_empty(&self) -> bool {
        self.feeders.is_empty() && self.counters.is_empty()
    }

    /// Takes up to `bounds[i]`: the feeders' first, then the counters'.
    pub fn grant(&self, bounds: &[u64]) {
        for (feeder, &bound) in self.feeders.iter().zip(bounds) {
            feeder.grant_takes(bound);
        }
        for (counter, &bound) in self.counters.iter().zip(bounds.iter().skip(self.feeders.len())) {
            counter.grant_takes(bound);
        }
    }

    /// The takes so far, in the bounds' order.
    pub fn taken(&self) -> Vec<u64> {
        let feeders = self.feeders.iter().map(|feeder| feeder.taken());
        feeders.chain(self.counters.iter().map(|counter| counter.taken())).collect()
    }

    /// How many takes found their grant used up.
    pub fn waits(&self) -> u64 {
        let feeders: u64 = self.feeders.iter().map(|feeder| feeder.grant_waits()).sum();
        feeders + self.counters.iter().map(|counter| counter.grant_waits()).sum::<u64>()
    }
}

impl ShareLease {
    /// A lease held for `term` from now: the first beat must come within it.
    pub fn new(term: Duration) -> ShareLease {
        ShareLease {
            origin: Instant::now(),
            until_ns: AtomicU64::new(term.as_nanos() as u64),
            term,
            granted: OnceLock::new(),
        }
    }

    /// The share's feeders and counters, whose takes the grants of later beats raise.
    pub(crate) fn attach(&self, granted: GrantedTakes) {
        let _ = self.granted.set(granted);
    }

    /// A beat's row grants: up to `bounds[i]` takes of the plan's feeder i, then of its
    /// counters (grants are never lowered; feeders without a bound ignore theirs).
    pub fn grant_rows(&self, bounds: &[u64]) {
        if let Some(granted) = self.granted.get() {
            granted.grant(bounds);
        }
    }

    /// A beat was heard: the lease holds for its term from now. (A lapsed lease stays
    /// lapsed: the share has stopped sending and is stopping.)
    pub fn extend(&self) {
        let now = self.origin.elapsed().as_nanos() as u64;
        if now <= self.until_ns.load(Ordering::Relaxed) {
            self.until_ns.fetch_max(now + self.term.as_nanos() as u64, Ordering::Relaxed);
        }
    }

    /// How long the share has gone without a beat beyond its lease, if it has.
    pub fn lapsed(&self) -> Option<Duration> {
        let until = Duration::from_nanos(self.until_ns.load(Ordering::Relaxed));
        let now = self.origin.elapsed();
        (now > until).then(|| now - until + self.term)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beats_hold_the_lease_and_none_after_it_lapsed() {
        let lease = ShareLease::new(Duration::from_millis(40));
        assert!(lease.lapsed().is_none());
        std::thread::sleep(Duration::from_millis(25));
        lease.extend();
        std::thread::sleep(Duration::from_millis(25));
        // 50 ms after the start, 25 ms after the beat: held.
        assert!(lease.lapsed().is_none());
        std::thread::sleep(Duration::from_millis(30));
        let silence = lease.lapsed().expect("55 ms after the last beat, over a 40 ms term");
        assert!(silence >= Duration::from_millis(40), "{silence:?}");
        // A beat heard after the lapse does not revive the share.
        lease.extend();
        assert!(lease.lapsed().is_some());
    }
}
