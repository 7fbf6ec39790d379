//! A process's share of a run (`options.execution_segment`, k6's execution segments), striped
//! so that the processes of a sequence together run exactly what one process would: every
//! index the run hands out (an arrival, a closed-model user slot, a request of the budget, a
//! throttle slot, a queue feeder's row, a counter's value) goes to exactly one of them.
//!
//! The striping is k6's (lib/execution_segment.go): indices are dealt in blocks of the lowest
//! common denominator L of the segments' lengths, each segment taking its length × L of every
//! block, spread evenly through it ([`deal`]). Every process computes the same table from the
//! same sequence, so none has to ask another which indices are its own.
//!
//! Within the process, the share's indices are then dealt to the workers as a whole run's
//! are: its k-th index to worker k mod W. A run without a segment is the share 0:1, whose
//! stripe owns every index with rank k = k, so each worker takes exactly what it took before
//! segments existed; that path costs a flag test per arrival.

use horde_plan::{Plan, ShareResume, MAX_SEGMENT_DENOMINATOR};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

/// Which member (segment) owns each position of a block of indices, for members of the given
/// integer weights; the block is as long as the weights' sum over their common divisor.
///
/// Each member gets its weight's worth of every block, dealt earliest deadline first: a
/// member may take position i while it has fewer than its due (i + 1)·w/L positions, and of
/// those that may, the one whose next position falls due soonest (at (c + 1)·L/w) takes it,
/// the bigger member on a tie. Every prefix of the indices then holds each member's share to
/// within one index (k6's biggest-first dealing can lag by nearly three), and equal members
/// take turns: member i mod n.
fn deal(weights: &[u64]) -> Vec<u32> {
    let divisor = weights.iter().fold(0, |g, &w| gcd(g, w)).max(1);
    let weights: Vec<u64> = weights.iter().map(|w| w / divisor).collect();
    let block: u64 = weights.iter().sum();
    // Members waiting for their next position to be allowed, by the first position i where
    // it is (c·L < (i + 1)·w, so i = ⌊c·L / w⌋), and members allowed, by their deadline.
    let mut waiting: BinaryHeap<Reverse<(u64, u32)>> =
        (0..weights.len()).filter(|&m| weights[m] > 0).map(|m| Reverse((0, m as u32))).collect();
    let mut allowed: BinaryHeap<Reverse<Due>> = BinaryHeap::new();
    let mut chosen = vec![0u64; weights.len()];
    let mut owners = Vec::with_capacity(block as usize);
    for i in 0..block {
        while let Some(&Reverse((from, member))) = waiting.peek() {
            if from > i {
                break;
            }
            waiting.pop();
            let weight = weights[member as usize];
            let next = chosen[member as usize] + 1;
            allowed.push(Reverse(Due { at: u128::from(next) * u128::from(block), weight, member }));
        }
        // One is always allowed: were none, the members would have more than i positions
        // among the first i.
        let Reverse(due) = allowed.pop().expect("a member is always allowed");
        let member = due.member as usize;
        chosen[member] += 1;
        owners.push(due.member);
        if chosen[member] < weights[member] {
            waiting.push(Reverse((chosen[member] * block / weights[member], due.member)));
        }
    }
    owners
}

/// When a member's next position falls due: at `at / weight` (a fraction, compared exactly).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Due {
    at: u128,
    weight: u64,
    member: u32,
}

impl Ord for Due {
    fn cmp(&self, other: &Due) -> std::cmp::Ordering {
        (self.at * u128::from(other.weight))
            .cmp(&(other.at * u128::from(self.weight)))
            .then(other.weight.cmp(&self.weight))
            .then(self.member.cmp(&other.member))
    }
}

impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Due) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// A position of the block that the stripe's member does not own.
const NOT_OWNED: u32 = u32::MAX;

/// One member's indices of a striping: which it owns, and the rank of each among them.
/// Cheap to clone.
#[derive(Debug, Clone)]
pub struct Stripe {
    /// The whole run (0:1): every index, each its own rank. Tested first on every path.
    whole: bool,
    block: u64,
    /// The positions of a block this member owns, in order.
    positions: Arc<[u64]>,
    /// For each position of a block, its rank among `positions`, or NOT_OWNED.
    ranks: Arc<[u32]>,
}

impl Default for Stripe {
    fn default() -> Stripe {
        Stripe::whole()
    }
}

impl Stripe {
    /// Every index: a run without a segment.
    pub fn whole() -> Stripe {
        Stripe { whole: true, block: 1, positions: Arc::new([0]), ranks: Arc::new([0]) }
    }

    /// Member `member`'s stripe of a striping by `weights` (a member of weight 0 owns nothing).
    pub fn of(weights: &[u64], member: usize) -> Stripe {
        Stripe::from_owners(&deal(weights), member)
    }

    fn from_owners(owners: &[u32], member: usize) -> Stripe {
        let mut positions = Vec::new();
        let ranks = owners
            .iter()
            .enumerate()
            .map(|(position, &owner)| {
                if owner as usize != member {
                    return NOT_OWNED;
                }
                positions.push(position as u64);
                (positions.len() - 1) as u32
            })
            .collect();
        let whole = owners.len() == 1 && positions.len() == 1;
        Stripe { whole, block: owners.len() as u64, positions: positions.into(), ranks }
    }

    pub fn is_whole(&self) -> bool {
        self.whole
    }

    /// Whether index `i` is this member's.
    pub fn owns(&self, i: u64) -> bool {
        self.whole || self.ranks[(i % self.block) as usize] != NOT_OWNED
    }

    /// Whether index `i` is this member's and, of its indices, dealt to `worker` of `workers`
    /// (its k-th index to worker k mod W). Without a segment: i mod W == worker, as always.
    #[inline]
    pub fn owns_local(&self, i: u64, worker: usize, workers: usize) -> bool {
        if self.whole {
            return i % workers as u64 == worker as u64;
        }
        let rank = self.ranks[(i % self.block) as usize];
        rank != NOT_OWNED
            && ((i / self.block) * self.positions.len() as u64 + u64::from(rank)) % workers as u64 == worker as u64
    }

    /// The run-wide index of this member's `c`-th index (from 0): its values are distinct
    /// from every other member's. u64::MAX for a member that owns nothing.
    #[inline]
    pub fn global(&self, c: u64) -> u64 {
        if self.whole {
            return c;
        }
        let per_block = self.positions.len() as u64;
        if per_block == 0 {
            return u64::MAX;
        }
        (c / per_block).saturating_mul(self.block).saturating_add(self.positions[(c % per_block) as usize])
    }

    /// How many of the indices below `count` are this member's (k6's ScaleInt64).
    pub fn scale(&self, count: u64) -> u64 {
        if self.whole {
            return count;
        }
        let in_last_block = self.positions.partition_point(|&p| p < count % self.block) as u64;
        (count / self.block) * self.positions.len() as u64 + in_last_block
    }
}

/// What this process runs of the plan.
#[derive(Debug, Clone, Default)]
pub struct Share {
    /// The schedule's indices: open-model arrivals and closed-model user slots (and so the
    /// users' numbers), striped by the segments' lengths.
    pub schedule: Stripe,
    /// What the users consume: the request budget, throttle slots, queue feeder rows and
    /// counter values, striped by the users each segment has (so that `-c 3 -n 3000` on two
    /// machines gives 2,000 requests to the one with 2 users, and none to a segment without
    /// users, which could not send them). Back to the lengths when users are too many to
    /// stripe exactly (a block longer than the cap): the difference is then below one user
    /// in 100,000.
    pub work: Stripe,
    /// Where a replacement share takes over (`options.execution_segment.resume`).
    pub resume: Option<ShareResume>,
}

impl Share {
    /// The plan's share: the whole run without a segment (or with an invalid one, which
    /// validation reports).
    pub fn of(plan: &Plan) -> Share {
        let Some((Ok(segmentation), resume)) =
            plan.options.execution_segment.as_ref().map(|s| (s.resolve(), s.resume.clone()))
        else {
            return Share::default();
        };
        let weights = segmentation.weights();
        let owners = deal(&weights);
        let stripes: Vec<Stripe> = (0..weights.len()).map(|member| Stripe::from_owners(&owners, member)).collect();
        let schedule = stripes[segmentation.index].clone();
        let user_indices: Vec<u64> =
            plan.scenarios.iter().map(|s| crate::injection::user_indices(&s.injection)).collect();
        let users: Vec<u64> =
            stripes.iter().map(|stripe| user_indices.iter().map(|&count| stripe.scale(count)).sum()).collect();
        let divisor = users.iter().fold(0, |g, &u| gcd(g, u));
        let work = match divisor {
            // No users at all: nothing will be consumed, whatever the stripe.
            0 => schedule.clone(),
            d if users.iter().sum::<u64>() / d > MAX_SEGMENT_DENOMINATOR => schedule.clone(),
            _ => Stripe::of(&users, segmentation.index),
        };
        Share { schedule, work, resume }
    }

    /// This share's part of a run-wide request budget (`max_requests`): the parts of a
    /// sequence add up to it exactly. A replacement has what its earlier attempts did not
    /// report sent.
    pub fn budget(&self, max_requests: Option<u64>) -> Option<u64> {
        let sent = self.resume.as_ref().map_or(0, |resume| resume.requests_sent);
        max_requests.map(|n| self.work.scale(n).saturating_sub(sent))
    }
}

/// A run-wide counter (`__counter`, a round-robin switch): each value taken once by any user
/// of any worker, and with a segment, of any process of the sequence (with gaps at the ends,
/// as k6's iterationInTest). A share that may be replaced takes its values within the grants
/// of its coordinator, as queue rows are (`options.execution_segment.row_grants`), so that a
/// replacement starts after every value the lost share could have used.
#[derive(Debug)]
pub struct RunCounter {
    next: AtomicU64,
    stripe: Stripe,
    /// Takes granted so far by the coordinator; `u64::MAX`: unbounded, as in a local run.
    grant: AtomicU64,
    /// Takes that found the grant used up, and waited for the next.
    grant_waits: AtomicU64,
    /// Where a take waits for a grant (a template is rendered synchronously: the take blocks
    /// its worker thread, which headroom of several intervals' takes makes rare).
    granted: (Mutex<()>, Condvar),
    /// A take waited [`GRANT_WAIT_LIMIT`] for a grant in vain: the coordinator cannot be
    /// reached, and takes past the grant fail at once until a grant comes.
    cut_off: AtomicBool,
    wait_limit: Duration,
}

/// How long a take waits for a grant at most: a share's lease term (the coordinator's beats
/// bring grants every second, and at once when a take waits). None by then means the
/// coordinator cannot be reached; the share's lease lapses, and it sends nothing more.
const GRANT_WAIT_LIMIT: Duration = Duration::from_secs(5);

/// A counter's take past its grant, when no grant came: using a value anyway could repeat one
/// that a replacement share uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterCutOff;

impl std::fmt::Display for CounterCutOff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "no value of the run-wide counter: its coordinator granted none within {} s (it cannot be reached), \
             and a value taken without a grant could be another machine's",
            GRANT_WAIT_LIMIT.as_secs()
        )
    }
}

impl RunCounter {
    pub fn new(stripe: Stripe) -> RunCounter {
        RunCounter {
            next: AtomicU64::new(0),
            stripe,
            grant: AtomicU64::new(u64::MAX),
            grant_waits: AtomicU64::new(0),
            granted: (Mutex::new(()), Condvar::new()),
            cut_off: AtomicBool::new(false),
            wait_limit: GRANT_WAIT_LIMIT,
        }
    }

    /// The next value, from 0; without a grant for it (a share cut off from its coordinator),
    /// none.
    #[inline]
    pub fn take(&self) -> Result<u64, CounterCutOff> {
        let taken = self.next.fetch_add(1, Ordering::Relaxed);
        if taken >= self.grant.load(Ordering::Acquire) && !self.wait_for_grant(taken) {
            return Err(CounterCutOff);
        }
        Ok(self.stripe.global(taken))
    }

    /// Whether a grant covering `taken` came.
    #[cold]
    fn wait_for_grant(&self, taken: u64) -> bool {
        self.grant_waits.fetch_add(1, Ordering::Relaxed);
        if self.cut_off.load(Ordering::Relaxed) {
            return taken < self.grant.load(Ordering::Acquire);
        }
        let deadline = std::time::Instant::now() + self.wait_limit;
        let mut guard = self.granted.0.lock().unwrap_or_else(PoisonError::into_inner);
        while taken >= self.grant.load(Ordering::Acquire) {
            let now = std::time::Instant::now();
            if now >= deadline {
                self.cut_off.store(true, Ordering::Relaxed);
                return false;
            }
            let wait = (deadline - now).min(Duration::from_millis(50));
            guard = self.granted.1.wait_timeout(guard, wait).unwrap_or_else(PoisonError::into_inner).0;
        }
        true
    }

    /// A replacement share starts its takes after every one its lost attempt may have made.
    /// Before the run.
    pub(crate) fn skip_takes(&self, from: u64) {
        self.next.store(from, Ordering::Relaxed);
    }

    /// Bounds the share's takes to `bound` until a grant raises it. Before the run.
    pub(crate) fn limit_takes(&self, bound: u64) {
        self.grant.store(bound, Ordering::Release);
    }

    /// The coordinator granted takes up to `bound` (never lowered): waiting takes go on.
    pub(crate) fn grant_takes(&self, bound: u64) {
        self.grant.fetch_max(bound, Ordering::Release);
        self.cut_off.store(false, Ordering::Relaxed);
        let _guard = self.granted.0.lock().unwrap_or_else(PoisonError::into_inner);
        self.granted.1.notify_all();
    }

    /// The takes made so far (those waiting for a grant not counted).
    pub(crate) fn taken(&self) -> u64 {
        self.next.load(Ordering::Relaxed).min(self.grant.load(Ordering::Relaxed))
    }

    /// How many takes found the grant used up.
    pub(crate) fn grant_waits(&self) -> u64 {
        self.grant_waits.load(Ordering::Relaxed)
    }
}

/// The seed of a run's random choices when every process of a segmented run must make the
/// same ones (Poisson arrivals, a shuffle's order): the plan's, or, without one, one drawn
/// from the plan itself (its segment and directory aside), the same in every process.
/// None for an unsegmented run without a seed: it draws its own.
pub(crate) fn shared_seed(plan: &Plan) -> Option<u64> {
    if let Some(seed) = plan.options.seed {
        return Some(seed);
    }
    plan.options.execution_segment.as_ref()?;
    let mut common = plan.clone();
    common.options.execution_segment = None;
    common.base_dir = None;
    // FNV-1a: stable across processes, builds and platforms, unlike std's hasher.
    let text = serde_json::to_string(&common).expect("a plan always serializes");
    Some(text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use horde_plan::{ExecutionSegmentOptions, Injection};
    use proptest::prelude::*;

    fn stripes(weights: &[u64]) -> Vec<Stripe> {
        (0..weights.len()).map(|m| Stripe::of(weights, m)).collect()
    }

    /// A take past the grant blocks until the coordinator's next grant, and is counted as a
    /// wait; the takes reported stop at the grant meanwhile.
    #[test]
    fn a_take_past_the_grant_waits_for_the_next() {
        let counter = Arc::new(RunCounter::new(Stripe::whole()));
        counter.limit_takes(2);
        assert_eq!((counter.take(), counter.take()), (Ok(0), Ok(1)));
        let waiting = std::thread::spawn({
            let counter = counter.clone();
            move || (counter.take(), std::time::Instant::now())
        });
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!((counter.grant_waits(), counter.taken()), (1, 2));
        let granted_at = std::time::Instant::now();
        counter.grant_takes(10);
        let (value, taken_at) = waiting.join().unwrap();
        assert_eq!(value, Ok(2));
        assert!(taken_at >= granted_at);
        assert_eq!(counter.taken(), 3);
    }

    /// A take that no grant covers within the wait limit fails (its value could be a
    /// replacement's), and so do the takes after it at once, until a grant comes.
    #[test]
    fn a_take_no_grant_covers_fails_and_the_next_ones_fail_at_once() {
        let mut counter = RunCounter::new(Stripe::whole());
        counter.wait_limit = Duration::from_millis(100);
        counter.limit_takes(1);
        assert_eq!(counter.take(), Ok(0));
        let began = std::time::Instant::now();
        assert_eq!(counter.take(), Err(CounterCutOff));
        assert!(began.elapsed() >= Duration::from_millis(100));
        let began = std::time::Instant::now();
        assert_eq!(counter.take(), Err(CounterCutOff));
        assert!(began.elapsed() < Duration::from_millis(50), "{:?}", began.elapsed());
        // A grant, late: takes go on past the values given up.
        counter.grant_takes(10);
        assert_eq!(counter.take(), Ok(3));
    }

    /// P0: without a segment, worker w of W takes arrival k exactly when k mod W == w, as
    /// before segments.
    #[test]
    fn the_whole_run_deals_to_workers_as_before() {
        let whole = Stripe::whole();
        for workers in 1..=9 {
            for k in 0..500u64 {
                for worker in 0..workers {
                    assert_eq!(whole.owns_local(k, worker, workers), k % workers as u64 == worker as u64);
                }
            }
        }
        assert_eq!((whole.global(12), whole.scale(12)), (12, 12));
        // 0:1 through the plan is the same stripe.
        let whole = Stripe::of(&[1], 0);
        assert!(whole.is_whole());
    }

    #[test]
    fn thirds_take_turns_and_big_segments_go_first() {
        let owners = |weights: &[u64]| deal(weights);
        assert_eq!(owners(&[1, 1, 1]), [0, 1, 2]);
        assert_eq!(owners(&[1; 7]), [0, 1, 2, 3, 4, 5, 6]);
        // 0,1/4,1/2,1: the half first, then the quarters, each spread out.
        assert_eq!(owners(&[1, 1, 2]), [2, 0, 2, 1]);
        assert_eq!(owners(&[3, 2]), [0, 1, 0, 0, 1]);
        assert_eq!(owners(&[2, 0, 1]), [0, 0, 2]);
        assert_eq!(owners(&[6, 0, 3]), [0, 0, 2]);
        let quarter = Stripe::of(&[1, 1, 2], 1);
        assert_eq!((0..12).filter(|&i| quarter.owns(i)).collect::<Vec<_>>(), [3, 7, 11]);
        assert_eq!((quarter.global(0), quarter.global(2), quarter.scale(8), quarter.scale(7)), (3, 11, 2, 1));
        let nothing = Stripe::of(&[1, 0], 1);
        assert_eq!((nothing.scale(100), nothing.global(0), nothing.owns_local(0, 0, 1)), (0, u64::MAX, false));
    }

    /// Every kind of injection step, open and closed.
    fn profiles() -> Vec<Vec<Injection>> {
        vec![
            vec![
                Injection::AtOnceUsers { users: 7 },
                Injection::NothingFor { duration_ms: 100 },
                Injection::RampUsers { users: 11, duration_ms: 400 },
            ],
            vec![Injection::ConstantUsersPerSec { rate: 37.0, duration_ms: 1000, randomized: false }],
            vec![Injection::ConstantUsersPerSec { rate: 50.0, duration_ms: 1000, randomized: true }],
            vec![Injection::RampUsersPerSec { from: 10.0, to: 40.0, duration_ms: 1500, randomized: true }],
            vec![Injection::StressPeakUsers { users: 23, duration_ms: 1000 }],
            vec![Injection::IncrementUsersPerSec {
                increment: 5.0,
                times: 3,
                level_duration_ms: 500,
                ramp_duration_ms: 200,
                starting_from: 3.0,
            }],
            vec![
                Injection::RampConcurrentUsers { from: 0, to: 9, duration_ms: 900 },
                Injection::ConstantConcurrentUsers { users: 4, duration_ms: 500 },
            ],
            vec![Injection::IncrementConcurrentUsers {
                increment: 3,
                times: 3,
                level_duration_ms: 300,
                ramp_duration_ms: 100,
                starting_from: 2,
            }],
        ]
    }

    /// P2: for every kind of profile, the arrivals (offset and number) and user slots that the
    /// workers of every share make are exactly the unsegmented run's.
    #[test]
    fn the_shares_of_every_profile_add_up_to_the_whole_run() {
        for profile in profiles() {
            for weights in [vec![1, 1, 1], vec![1, 1, 2], vec![3, 2], vec![5]] {
                for workers in 1..=3 {
                    let stripes = stripes(&weights);
                    let dealt = || stripes.iter().flat_map(|s| (0..workers).map(move |w| (s, w)));
                    if profile.iter().any(Injection::is_closed) {
                        let mut union: Vec<Vec<crate::injection::Slot>> = dealt()
                            .flat_map(|(s, w)| {
                                crate::injection::closed_slots(&profile, |u| s.owns_local(u, w, workers))
                            })
                            .collect();
                        let mut whole = crate::injection::closed_slots(&profile, |_| true);
                        union.sort_by_key(|slots| slots.iter().map(|s| (s.from, s.until)).collect::<Vec<_>>());
                        whole.sort_by_key(|slots| slots.iter().map(|s| (s.from, s.until)).collect::<Vec<_>>());
                        assert_eq!(union, whole, "{profile:?} {weights:?} {workers}");
                        continue;
                    }
                    let mut union: Vec<(u64, std::time::Duration)> = dealt()
                        .flat_map(|(s, w)| {
                            crate::injection::arrivals(&profile, 7)
                                .enumerate()
                                .filter(move |&(k, _)| s.owns_local(k as u64, w, workers))
                                .map(|(k, at)| (k as u64, at))
                        })
                        .collect();
                    union.sort();
                    let whole: Vec<(u64, std::time::Duration)> =
                        crate::injection::arrivals(&profile, 7).enumerate().map(|(k, at)| (k as u64, at)).collect();
                    assert_eq!(union, whole, "{profile:?} {weights:?} {workers}");
                }
            }
        }
    }

    fn plan_with(injection: Vec<Injection>, segment: &str, sequence: &str) -> Plan {
        let mut plan = Plan::from_json(
            r#"{"version": 1, "scenarios": [{"name": "s", "steps": [], "injection": [{"type": "at_once_users", "users": 1}]}]}"#,
        )
        .unwrap();
        plan.scenarios[0].injection = injection;
        plan.options.execution_segment = Some(ExecutionSegmentOptions {
            segment: segment.into(),
            sequence: Some(sequence.into()),
            resume: None,
            row_grants: None,
            request_log: None,
        });
        plan
    }

    /// P3: the shares' budgets add up to max_requests exactly, each in proportion to its
    /// users: -c 3 on two halves is 2 users and 2/3 of the budget against 1 and 1/3; a share
    /// without users gets none.
    #[test]
    fn budgets_add_up_and_follow_the_users() {
        let budgets = |users: u64, sequence: &str, segments: &[&str], n: u64| -> Vec<u64> {
            segments
                .iter()
                .map(|segment| {
                    let plan = plan_with(vec![Injection::AtOnceUsers { users }], segment, sequence);
                    Share::of(&plan).budget(Some(n)).unwrap()
                })
                .collect()
        };
        assert_eq!(budgets(3, "0,1/2,1", &["0:1/2", "1/2:1"], 3000), [2000, 1000]);
        assert_eq!(budgets(1, "0,1/2,1", &["0:1/2", "1/2:1"], 100), [100, 0]);
        assert_eq!(budgets(50, "0,1/3,2/3,1", &["0:1/3", "1/3:2/3", "2/3:1"], 1001), [341, 340, 320]);
        for (users, n) in [(7, 1000), (10, 999), (1_000_000, 12_345), (0, 10)] {
            let total: u64 = budgets(users, "0,1/4,1/2,1", &["0:1/4", "1/4:1/2", "1/2:1"], n).iter().sum();
            assert_eq!(total, n, "{users} users");
        }
        assert_eq!(Share::default().budget(Some(42)), Some(42));
    }

    #[test]
    fn a_segmented_run_without_a_seed_gets_the_same_one_in_every_process() {
        let first = plan_with(vec![Injection::AtOnceUsers { users: 3 }], "0:1/2", "0,1/2,1");
        let mut second = plan_with(vec![Injection::AtOnceUsers { users: 3 }], "1/2:1", "0,1/2,1");
        second.base_dir = Some("/elsewhere".into());
        assert_eq!(shared_seed(&first), shared_seed(&second));
        assert!(shared_seed(&first).is_some());
        let other = plan_with(vec![Injection::AtOnceUsers { users: 4 }], "0:1/2", "0,1/2,1");
        assert_ne!(shared_seed(&first), shared_seed(&other));
        let mut seeded = first.clone();
        seeded.options.seed = Some(5);
        assert_eq!(shared_seed(&seeded), Some(5));
        let mut alone = first;
        alone.options.execution_segment = None;
        assert_eq!(shared_seed(&alone), None);
    }

    fn weights() -> impl Strategy<Value = Vec<u64>> {
        prop_oneof![
            // Equal shares (thirds, quarters...).
            (1usize..=8).prop_map(|n| vec![1; n]),
            // Weighted machines.
            proptest::collection::vec(1u64..=10, 1..=8),
            // Segments that own nothing (a machine without users).
            proptest::collection::vec(0u64..=3, 1..=6).prop_filter("some weight", |w| w.iter().any(|&x| x > 0)),
        ]
    }

    proptest! {
        /// P1: the stripes partition the indices, each share's count of any prefix is within
        /// one of its proportion, and global is the inverse of the rank.
        #[test]
        fn stripes_partition_every_prefix(weights in weights(), workers in 1usize..=4) {
            let stripes = stripes(&weights);
            let total: u64 = weights.iter().sum();
            for i in 0..300u64 {
                let owners: Vec<usize> = (0..stripes.len()).filter(|&m| stripes[m].owns(i)).collect();
                prop_assert_eq!(owners.len(), 1, "index {} owned by {:?}", i, owners);
                let local: usize = stripes
                    .iter()
                    .map(|s| (0..workers).filter(|&w| s.owns_local(i, w, workers)).count())
                    .sum();
                prop_assert_eq!(local, 1, "index {} dealt to {} workers", i, local);
            }
            for n in 0..300u64 {
                let scaled: Vec<u64> = stripes.iter().map(|s| s.scale(n)).collect();
                prop_assert_eq!(scaled.iter().sum::<u64>(), n);
                for (m, &count) in scaled.iter().enumerate() {
                    let exact = n as f64 * weights[m] as f64 / total as f64;
                    prop_assert!((count as f64 - exact).abs() < 1.0, "prefix {} member {}: {} vs {}", n, m, count, exact);
                    prop_assert_eq!(count, (0..n).filter(|&i| stripes[m].owns(i)).count() as u64);
                }
            }
            for stripe in stripes.iter().filter(|s| s.scale(1000) > 0) {
                let owned: Vec<u64> = (0..300).filter(|&i| stripe.owns(i)).collect();
                let via_global: Vec<u64> = (0..owned.len() as u64).map(|c| stripe.global(c)).collect();
                prop_assert_eq!(via_global, owned);
            }
        }

        /// A granted counter (a share that may be replaced) stops at its grant until the next
        /// one; a replacement that skips what was granted never repeats a value of the lost
        /// attempt, whatever it took of its grant.
        #[test]
        fn a_granted_counter_waits_at_its_grant_and_a_replacement_skips_it(weights in weights(), used in 0u64..50) {
            let stripe = Stripe::of(&weights, 0);
            prop_assume!(stripe.scale(1000) > 0);
            let lost = RunCounter::new(stripe.clone());
            lost.limit_takes(50);
            let before: std::collections::HashSet<u64> = (0..used).map(|_| lost.take().unwrap()).collect();
            prop_assert_eq!(lost.taken(), used);
            let replacement = RunCounter::new(stripe);
            replacement.skip_takes(50);
            for _ in 0..100 {
                prop_assert!(!before.contains(&replacement.take().unwrap()));
            }
        }

        /// P4: counters of every share together give each value once.
        #[test]
        fn counters_never_repeat_across_shares(weights in weights(), takes in 1u64..200) {
            let counters: Vec<RunCounter> = stripes(&weights).into_iter().map(RunCounter::new).collect();
            let mut seen = std::collections::HashSet::new();
            for counter in counters.iter().filter(|c| c.stripe.scale(1000) > 0) {
                for _ in 0..takes {
                    prop_assert!(seen.insert(counter.take().unwrap()));
                }
            }
        }
    }
}
