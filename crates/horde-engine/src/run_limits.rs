//! Run-wide limits that every worker draws from: the request budget (`max_requests`) and the
//! throttle's slots. Users are striped across workers (arrival k, closed slot k, go to worker
//! k mod W), but these two must not be: a worker's share of them is only right if the
//! worker's users use exactly that share, and they do not (one connection on a two-core
//! machine lives on one worker; closed users are uneven; scenarios differ in pace). Split
//! evenly, `-c 1 -n 5000` sent 2,500 and `-c 1 --rate 500` delivered 250/s.
//!
//! So the run keeps one ledger, and workers lease from it in small blocks: a block of the
//! request budget, or a block of consecutive throttle slot indices. The union of what all
//! workers use is exactly the single-worker schedule (every slot index taken once, in order
//! of leasing; every request of the budget sent once), whichever worker has the users. A
//! lease is one atomic operation per block, not per request, so the per-request path stays
//! local: blocks are sized to be a small part of what is left (requests) or about a
//! millisecond of the schedule where it is (slots), so no worker sits on much that another
//! could use.
//!
//! With an execution segment the ledger holds the share's part of the budget, and its slot
//! indices are the share's: its c-th slot is the run's slot `stripe.global(c)`, so the
//! processes of a sequence together take every slot of the run's schedule once.

use crate::cluster::ShareLease;
use crate::injection::RateSchedule;
use crate::segment::Stripe;
use horde_plan::ThrottleStep;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The largest block of the request budget a worker leases at once.
const MAX_REQUEST_LEASE: u64 = 64;
/// The longest stretch of the throttle schedule a worker leases at once.
const SLOT_LEASE_SPAN_S: f64 = 0.001;
const MAX_SLOT_LEASE: u64 = 256;

/// Shared by all workers of a run.
pub(crate) struct RunLedger {
    /// Requests no worker has leased yet; None without `max_requests`.
    requests_left: Option<AtomicU64>,
    workers: u64,
    throttle: Option<Throttle>,
    /// Why a scenario stopped the run (`stop_load_generator`, a feeder that ran out with
    /// `stop_run`); the first reason wins. The collector watches it.
    stop_reason: std::sync::OnceLock<String>,
    /// A share's lease from its coordinator: no request is sent once it lapsed.
    lease: Option<Arc<ShareLease>>,
}

struct Throttle {
    /// The whole run's schedule (not a worker's share).
    schedule: RateSchedule,
    /// The first of the share's slot indices no worker has leased.
    next_slot: AtomicU64,
    /// The share's slots of the schedule (all of them without a segment).
    share: Stripe,
}

impl Throttle {
    /// Slots in about a millisecond of the schedule from slot `at`, at the rate there: one at
    /// a time at low rates, so that no worker holds a slot another's idle user could take.
    fn lease_size(&self, at: u64) -> u64 {
        let time = self.schedule.time_of(self.share.global(at) as f64).unwrap_or(f64::MAX);
        (self.schedule.rate_at(time) * SLOT_LEASE_SPAN_S).floor().clamp(1.0, MAX_SLOT_LEASE as f64) as u64
    }
}

impl RunLedger {
    /// A ledger of `max_requests` (the share's part of the budget) and the share's slots of the
    /// throttle.
    pub fn new(max_requests: Option<u64>, throttle: &[ThrottleStep], workers: usize, share: Stripe) -> Arc<RunLedger> {
        RunLedger::leased(max_requests, throttle, workers, share, None)
    }

    /// The same, for a share that holds its coordinator's `lease`.
    pub fn leased(
        max_requests: Option<u64>,
        throttle: &[ThrottleStep],
        workers: usize,
        share: Stripe,
        lease: Option<Arc<ShareLease>>,
    ) -> Arc<RunLedger> {
        let throttle =
            RateSchedule::throttle(throttle).map(|schedule| Throttle { schedule, next_slot: AtomicU64::new(0), share });
        Arc::new(RunLedger {
            requests_left: max_requests.map(AtomicU64::new),
            workers: workers.max(1) as u64,
            throttle,
            stop_reason: std::sync::OnceLock::new(),
            lease,
        })
    }

    /// A replacement share takes over `after` the run's start: the share's throttle slots due
    /// before then are not used (the schedule is absolute; they are load the run did not
    /// deliver, not a burst). Called before any worker leases a slot.
    pub fn skip_throttle_slots_before(&self, after: std::time::Duration) {
        let Some(throttle) = &self.throttle else { return };
        let first_not_skipped = throttle.schedule.stripe_events_before(&throttle.share, after.as_secs_f64());
        throttle.next_slot.store(first_not_skipped, Ordering::Release);
    }

    /// How long a share has gone without its coordinator's beat beyond its lease, if it has.
    pub fn lease_lapsed(&self) -> Option<std::time::Duration> {
        self.lease.as_ref()?.lapsed()
    }

    /// Takes up to a block of the request budget: small enough, near the end, that the last
    /// requests go one at a time to whichever worker asks.
    fn lease_requests(&self, left: &AtomicU64) -> u64 {
        let mut current = left.load(Ordering::Acquire);
        loop {
            if current == 0 {
                return 0;
            }
            let lease = (current / (4 * self.workers)).clamp(1, MAX_REQUEST_LEASE);
            match left.compare_exchange_weak(current, current - lease, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return lease,
                Err(actual) => current = actual,
            }
        }
    }
}

/// One worker's view of the ledger: what it has leased and not used yet. Lives on the worker
/// thread only.
pub(crate) struct WorkerLimits {
    ledger: Arc<RunLedger>,
    start: Instant,
    /// Leased requests not yet sent.
    requests: Cell<u64>,
    /// Leased throttle slots not yet used: [next, end).
    slots: Cell<(u64, u64)>,
    /// Where the run's duration limit ends it, if it has one.
    run_end: Option<Instant>,
}

impl RunLedger {
    /// Why the run was asked to stop from inside, if it was.
    pub fn stop_reason(&self) -> Option<&str> {
        self.stop_reason.get().map(String::as_str)
    }

    /// Asks the whole run to stop, gracefully; the first reason wins. A coordinator asks it
    /// for a share whose scenario stopped the run, or which it lost.
    pub fn request_stop(&self, reason: String) {
        let _ = self.stop_reason.set(reason);
    }
}

impl WorkerLimits {
    /// Asks the whole run to stop, gracefully: the collector tells every worker.
    pub fn request_stop(&self, reason: String) {
        self.ledger.request_stop(reason);
    }

    /// The run was asked to stop from inside: no new user starts, even before the collector
    /// tells the workers (a scenario `after` the one that asked would start at once).
    pub fn stop_requested(&self) -> bool {
        self.ledger.stop_reason.get().is_some()
    }

    pub fn new(ledger: Arc<RunLedger>, start: Instant) -> WorkerLimits {
        WorkerLimits { ledger, start, requests: Cell::new(0), slots: Cell::new((0, 0)), run_end: None }
    }

    /// The same limits for a run that its duration limit ends at `run_end`.
    pub fn ending_at(self, run_end: Option<Instant>) -> WorkerLimits {
        WorkerLimits { run_end, ..self }
    }

    /// True when `at` is at or past the run's duration limit. The collector's stop arrives
    /// on another thread a little after the limit: a throttle slot at the limit itself must
    /// not win that race, or a run of 100/s for 6 s sends 601 requests now and then.
    pub fn past_run_end(&self, at: Instant) -> bool {
        self.run_end.is_some_and(|end| at >= end)
    }

    /// Takes one request from the run's budget; false once the budget is spent.
    pub fn take_request(&self) -> bool {
        if self.fenced() {
            return false;
        }
        let Some(left) = &self.ledger.requests_left else { return true };
        let mut leased = self.requests.get();
        if leased == 0 {
            leased = self.ledger.lease_requests(left);
            if leased == 0 {
                return false;
            }
        }
        self.requests.set(leased - 1);
        true
    }

    /// A share whose coordinator's lease lapsed: it sends nothing more (a local run never is).
    /// What sends outside the request budget (a socket's messages) asks this.
    pub fn fenced(&self) -> bool {
        self.ledger.lease_lapsed().is_some()
    }

    /// Requests this worker may still send, leased or not (other workers may take the
    /// unleased ones first); None without a request budget.
    pub fn requests_left(&self) -> Option<u64> {
        let left = self.ledger.requests_left.as_ref()?;
        Some(self.requests.get() + left.load(Ordering::Acquire))
    }

    /// True when no request is left for this worker to send: nothing leased, nothing to lease.
    pub fn requests_exhausted(&self) -> bool {
        match &self.ledger.requests_left {
            None => false,
            Some(left) => self.requests.get() == 0 && left.load(Ordering::Acquire) == 0,
        }
    }

    /// Gives back what this worker leased and will not use (its users are done), so that
    /// another worker's users can send it.
    pub fn return_unused(&self) {
        if let Some(left) = &self.ledger.requests_left {
            left.fetch_add(self.requests.replace(0), Ordering::AcqRel);
        }
    }

    /// The intended start of the next request under the run's throttle, if there is one.
    pub fn next_throttle_slot(&self) -> Option<Instant> {
        let throttle = self.ledger.throttle.as_ref()?;
        let (mut next, mut end) = self.slots.get();
        if next == end {
            // Sized where the schedule is now; another worker may lease first, which only
            // makes this lease a little later in the schedule than the size was read for.
            let lease = throttle.lease_size(throttle.next_slot.load(Ordering::Acquire));
            next = throttle.next_slot.fetch_add(lease, Ordering::AcqRel);
            end = next + lease;
        }
        self.slots.set((next + 1, end));
        let at = throttle.schedule.time_of(throttle.share.global(next) as f64).unwrap_or(f64::MAX / 4.0);
        Some(self.start + Duration::from_secs_f64(at.min(1e9)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn a_slot_at_the_duration_limit_is_past_the_run() {
        let start = Instant::now();
        let limits = WorkerLimits::new(RunLedger::new(None, &[], 1, Stripe::whole()), start);
        assert!(!limits.past_run_end(start + Duration::from_secs(3600)));
        let limits = limits.ending_at(Some(start + Duration::from_secs(6)));
        assert!(!limits.past_run_end(start + Duration::from_millis(5999)));
        assert!(limits.past_run_end(start + Duration::from_secs(6)));
    }

    #[test]
    fn the_budget_is_exact_whichever_worker_spends_it() {
        let ledger = RunLedger::new(Some(5000), &[], 4, Stripe::whole());
        let start = Instant::now();
        let workers: Vec<WorkerLimits> = (0..4).map(|_| WorkerLimits::new(ledger.clone(), start)).collect();
        // One worker has all the users, as with -c 1.
        let sent = (0..10_000).filter(|_| workers[2].take_request()).count();
        assert_eq!(sent, 5000);
        assert!(workers.iter().all(WorkerLimits::requests_exhausted));

        // Uneven users: worker 0 asks three times as often as worker 1.
        let ledger = RunLedger::new(Some(1001), &[], 2, Stripe::whole());
        let (a, b) = (WorkerLimits::new(ledger.clone(), start), WorkerLimits::new(ledger.clone(), start));
        let mut sent = 0;
        for i in 0..4000 {
            let worker = if i % 4 == 3 { &b } else { &a };
            sent += u64::from(worker.take_request());
        }
        assert_eq!(sent, 1001);
    }

    #[test]
    fn returned_leases_are_spent_by_another_worker() {
        let ledger = RunLedger::new(Some(1000), &[], 2, Stripe::whole());
        let start = Instant::now();
        let (a, b) = (WorkerLimits::new(ledger.clone(), start), WorkerLimits::new(ledger.clone(), start));
        assert!(a.take_request());
        assert!(a.requests.get() > 0, "a block was leased");
        a.return_unused();
        let sent_by_b = (0..2000).filter(|_| b.take_request()).count();
        assert_eq!(sent_by_b, 999);
    }

    #[tokio::test(start_paused = true)]
    async fn throttle_slots_of_all_workers_are_the_whole_schedule_once() {
        let steps = [ThrottleStep::JumpToRps { rps: 500.0 }, ThrottleStep::HoldFor { duration_ms: 10_000 }];
        let ledger = RunLedger::new(None, &steps, 2, Stripe::whole());
        let start = Instant::now();
        let (a, b) = (WorkerLimits::new(ledger.clone(), start), WorkerLimits::new(ledger.clone(), start));
        // One user on one worker gets the whole rate: a slot every 2 ms.
        let alone: Vec<u128> = (0..5).map(|_| (a.next_throttle_slot().unwrap() - start).as_millis()).collect();
        assert_eq!(alone, vec![0, 2, 4, 6, 8]);
        // Two workers interleaving take every slot exactly once.
        let mut seen = BTreeSet::new();
        for i in 0..100 {
            let worker = if i % 3 == 0 { &b } else { &a };
            assert!(seen.insert(worker.next_throttle_slot().unwrap() - start));
        }
        let expected: BTreeSet<Duration> = (5..105).map(|k| Duration::from_millis(2 * k)).collect();
        assert_eq!(seen, expected);
    }

    /// P3: the throttle slots that the workers of every share take are the whole run's,
    /// each once.
    /// A replacement share takes over its share's slots from its takeover on: the earlier
    /// ones are skipped, none is taken late, and the later ones are the lost share's.
    #[tokio::test(start_paused = true)]
    async fn a_replacement_takes_its_shares_slots_from_its_takeover_on() {
        let steps = [ThrottleStep::JumpToRps { rps: 1000.0 }, ThrottleStep::HoldFor { duration_ms: 10_000 }];
        let start = Instant::now();
        let share = Stripe::of(&[1, 2], 1);
        let slots_of = |ledger: Arc<RunLedger>, count| {
            let worker = WorkerLimits::new(ledger, start);
            (0..count).map(|_| worker.next_throttle_slot().unwrap() - start).collect::<Vec<_>>()
        };
        let whole = slots_of(RunLedger::new(None, &steps, 1, share.clone()), 2000);
        let resumed = RunLedger::new(None, &steps, 1, share);
        resumed.skip_throttle_slots_before(Duration::from_micros(1_500_500));
        let taken = slots_of(resumed, 100);
        let from = whole.iter().position(|&at| at >= Duration::from_micros(1_500_500)).unwrap();
        assert_eq!(taken, whole[from..from + 100]);
        assert!(taken[0] >= Duration::from_millis(1501) && whole[from - 1] < Duration::from_millis(1501));
    }

    #[tokio::test(start_paused = true)]
    async fn the_shares_take_every_throttle_slot_once() {
        let steps = [ThrottleStep::JumpToRps { rps: 1000.0 }, ThrottleStep::HoldFor { duration_ms: 10_000 }];
        let start = Instant::now();
        for weights in [vec![1, 1, 1], vec![1, 1, 2], vec![3, 2], vec![1, 0]] {
            let mut seen = BTreeSet::new();
            let mut taken = 0;
            for member in 0..weights.len() {
                let share = Stripe::of(&weights, member);
                let slots = share.scale(600);
                let ledger = RunLedger::new(None, &steps, 2, share);
                let workers = [WorkerLimits::new(ledger.clone(), start), WorkerLimits::new(ledger.clone(), start)];
                for i in 0..slots {
                    let at = workers[(i % 3 == 0) as usize].next_throttle_slot().unwrap() - start;
                    assert!(seen.insert(at), "{weights:?}: slot at {at:?} twice");
                    taken += 1;
                }
            }
            // The first 600 slots of the run, 1 ms apart, and no other.
            assert_eq!(taken, 600);
            assert_eq!(seen, (0..600).map(Duration::from_millis).collect::<BTreeSet<_>>(), "{weights:?}");
        }
    }

    #[test]
    fn slots_are_leased_about_a_millisecond_at_a_time_where_the_schedule_is() {
        let throttle = |steps: &[ThrottleStep]| {
            RunLedger::new(None, steps, 2, Stripe::whole()).throttle.as_ref().map(|t| t.schedule.clone())
        };
        let lease = |steps: &[ThrottleStep], at: u64| {
            let ledger = RunLedger::new(None, steps, 2, Stripe::whole());
            ledger.throttle.as_ref().unwrap().lease_size(at)
        };
        assert!(throttle(&[]).is_none());
        assert_eq!(lease(&[ThrottleStep::JumpToRps { rps: 100_000.0 }], 0), 100);
        assert_eq!(lease(&[ThrottleStep::JumpToRps { rps: 0.7 }], 0), 1);
        // 100/s for a minute, then 100,000/s: one slot at a time first, 100 after.
        let steps = [
            ThrottleStep::JumpToRps { rps: 100.0 },
            ThrottleStep::HoldFor { duration_ms: 60_000 },
            ThrottleStep::JumpToRps { rps: 100_000.0 },
        ];
        assert_eq!(lease(&steps, 10), 1);
        assert_eq!(lease(&steps, 6_000 + 5_000), 100);
    }
}
