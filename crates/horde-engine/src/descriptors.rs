//! File descriptors as a budget. Every connection and every precise timer holds one, and a
//! run that used them all could not write its results: with the open-file limit reached,
//! summary.json cannot be opened, and the run's measurements would be lost. So connections
//! take a permit first, and permits stop short of the limit by a reserve kept for the
//! results, the time series, the loader and the runtime.
//!
//! One process-wide count, touched when a connection opens or closes, never per request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Descriptors never handed to connections: results files, stdio, the runtimes' own.
const RESERVE: u64 = 64;

static OPEN: AtomicU64 = AtomicU64::new(0);

/// How many descriptors connections may hold at once in this process: the open-file limit,
/// less what was already open when first asked, less the reserve. Read once.
pub fn connection_capacity() -> u64 {
    static CAPACITY: OnceLock<u64> = OnceLock::new();
    *CAPACITY.get_or_init(|| {
        let limit = rlimit::getrlimit(rlimit::Resource::NOFILE).map(|(soft, _)| soft).unwrap_or(1024);
        let open_now = std::fs::read_dir("/proc/self/fd").map(|dir| dir.count() as u64).unwrap_or(16);
        limit.saturating_sub(open_now).saturating_sub(RESERVE)
    })
}

/// One descriptor of the budget; given back when dropped.
#[derive(Debug)]
pub(crate) struct DescriptorPermit(());

impl DescriptorPermit {
    /// A permit, or None when connections already hold every descriptor they may.
    pub fn acquire() -> Option<DescriptorPermit> {
        let capacity = connection_capacity();
        let mut open = OPEN.load(Ordering::Relaxed);
        loop {
            if open >= capacity {
                return None;
            }
            match OPEN.compare_exchange_weak(open, open + 1, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return Some(DescriptorPermit(())),
                Err(actual) => open = actual,
            }
        }
    }
}

impl Drop for DescriptorPermit {
    fn drop(&mut self) {
        OPEN.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Connections a plan is sure to hold at one moment: its users that arrive together
/// (`at_once_users`) or run concurrently (closed model), one connection each. Scenarios that
/// start `after` another do not overlap with it, the others may all run at once.
pub fn connections_needed_at_once(plan: &horde_plan::Plan) -> u64 {
    let peak = |scenario: &horde_plan::Scenario| scenario.injection.iter().map(|i| i.users_at_once()).max().unwrap_or(0);
    let together: u64 = plan.scenarios.iter().filter(|s| s.after.is_none()).map(peak).fold(0, u64::saturating_add);
    let chained = plan.scenarios.iter().filter(|s| s.after.is_some()).map(peak).max().unwrap_or(0);
    together.max(chained)
}
