//! File descriptors as a budget. Every connection and every precise timer holds one, and a
//! run that used them all could not write its results: with the open-file limit reached,
//! summary.json cannot be opened, and the run's measurements would be lost. So connections
//! and timers take a permit first, and permits stop short of the limit by a reserve kept for
//! the results, the time series, the loader and the runtime.
//!
//! Connections come first: a timer is a nicety (tokio's own timer stands in, a little less
//! precise), a connection is the load. Timers only take what the connections the run expects
//! at once leave free, so a throttled user's timer never takes the descriptor its connection
//! needs.
//!
//! Process-wide counts, touched when a connection or timer is made or dropped, never per
//! request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Descriptors never handed out: results files, stdio, the runtimes' own.
const RESERVE: u64 = 64;

static CONNECTIONS: AtomicU64 = AtomicU64::new(0);
static TIMERS: AtomicU64 = AtomicU64::new(0);
/// Connections the current run is sure to hold at once (its users that start together).
static EXPECTED_CONNECTIONS: AtomicU64 = AtomicU64::new(0);

/// How many descriptors connections and timers may hold at once in this process: the
/// open-file limit, less what was already open when first asked, less the reserve. Read once.
pub fn connection_capacity() -> u64 {
    static CAPACITY: OnceLock<u64> = OnceLock::new();
    *CAPACITY.get_or_init(|| {
        let limit = rlimit::getrlimit(rlimit::Resource::NOFILE).map(|(soft, _)| soft).unwrap_or(1024);
        let open_now = std::fs::read_dir("/proc/self/fd").map(|dir| dir.count() as u64).unwrap_or(16);
        limit.saturating_sub(open_now).saturating_sub(RESERVE)
    })
}

/// Connections a program is sure to hold at one moment in this process: its users that arrive
/// together (`at_once_users`) or run concurrently (closed model), one connection each, of its
/// share's users when it runs an execution segment. Scenarios that start `after` another do
/// not overlap with it, the others may all run at once.
pub fn connections_needed_at_once(program: &crate::Program) -> u64 {
    let plan = &program.plan;
    let schedule = &program.share.schedule;
    let peak = |scenario: &horde_plan::Scenario| {
        scenario.injection.iter().map(|i| schedule.scale(i.users_at_once())).max().unwrap_or(0)
    };
    let together: u64 = plan.scenarios.iter().filter(|s| s.after.is_none()).map(peak).fold(0, u64::saturating_add);
    let chained = plan.scenarios.iter().filter(|s| s.after.is_some()).map(peak).max().unwrap_or(0);
    together.max(chained)
}

/// Keeps descriptors for this many connections out of the timers' reach (set by each run).
pub(crate) fn expect_connections(connections: u64) {
    EXPECTED_CONNECTIONS.store(connections, Ordering::Release);
}

/// One descriptor of the budget; given back when dropped.
#[derive(Debug)]
pub(crate) struct DescriptorPermit {
    counter: &'static AtomicU64,
}

impl DescriptorPermit {
    /// A permit for a connection, or None when the budget is spent.
    pub fn connection() -> Option<DescriptorPermit> {
        Self::take(&CONNECTIONS, |connections, timers| connections + timers <= connection_capacity())
    }

    /// A permit for a timer, or None when it would take a descriptor that the run's expected
    /// connections, or the budget, need.
    pub fn timer() -> Option<DescriptorPermit> {
        Self::take(&TIMERS, |connections, timers| {
            let still_expected = EXPECTED_CONNECTIONS.load(Ordering::Acquire).saturating_sub(connections);
            connections + timers + still_expected <= connection_capacity()
        })
    }

    /// Counts one more on `counter`, and keeps it if `fits(connections, timers)` still holds;
    /// two threads at once may both fit by a hair, which the reserve absorbs.
    fn take(counter: &'static AtomicU64, fits: impl Fn(u64, u64) -> bool) -> Option<DescriptorPermit> {
        counter.fetch_add(1, Ordering::AcqRel);
        if fits(CONNECTIONS.load(Ordering::Acquire), TIMERS.load(Ordering::Acquire)) {
            Some(DescriptorPermit { counter })
        } else {
            counter.fetch_sub(1, Ordering::AcqRel);
            None
        }
    }
}

impl Drop for DescriptorPermit {
    fn drop(&mut self) {
        self.counter.fetch_sub(1, Ordering::AcqRel);
    }
}
