//! A run across processes (issue 26): each share runs its execution segment of the plan as a
//! local run would, with its start given by a coordinator and its intervals relayed to it; the
//! coordinator merges them with the very collector a local run uses (run.rs), so thresholds,
//! summary.json, the time series and histograms.hlog are the same code.
//!
//! How messages travel is a link's business, behind two traits: [`ShareLink`] on a share's
//! side, [`CoordinatorLink`] on the coordinator's. [`spool`] implements them over a directory
//! (processes on one machine or on a shared file system, no other software: what the tests
//! use); a Dask transport implements them in Python, through horde-py. A distributed engine
//! that also places the shares on its machines implements [`ShareHosts`]; [`share_plans`] cuts
//! the plan into their shares.

mod coordinator;
mod lease;
mod missed;
mod share;
pub mod spool;

pub use coordinator::{run_coordinated, CoordinatorOptions, WorkerLossPolicy};
pub use lease::ShareLease;
pub use share::run_share;
pub(crate) use share::ShareRole;

use crate::segment::Share;
use horde_plan::{ExecutionSegmentOptions, Plan, MAX_SEGMENT_DENOMINATOR};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// A share's side of the link to its coordinator. Called from the share's main thread
/// (`ready`) and its collector thread (the rest).
pub trait ShareLink: Send + Sync {
    /// Sends the share's ready message (encoded [`horde_metrics::wire::ShareMessage`]) and waits
    /// for the instant the run starts, on this machine's wall clock. An error ends the share
    /// before it sends anything.
    fn ready(&self, message: &[u8]) -> Result<SystemTime, String>;
    /// Sends one interval's message.
    fn send(&self, message: &[u8]) -> Result<(), String>;
    /// Whether the coordinator asked every share to stop, and why. Polled every 20 ms: it must
    /// be cheap.
    fn stop_requested(&self) -> Option<String>;
    /// The coordinator's lease on the share, extended by its beats: checked before every
    /// request. None: the link has no beat (a share over a spool directory).
    fn lease(&self) -> Option<Arc<ShareLease>> {
        None
    }
}

/// A coordinator's side of the links to its shares.
pub trait CoordinatorLink: Send + Sync {
    /// The next message of any share, waiting up to `timeout` for one: Ok(None) when none
    /// came. An error means no message can come any more.
    fn receive(&self, timeout: Duration) -> Result<Option<Vec<u8>>, String>;
    /// Gives every share the instant the run starts, on the coordinator's wall clock (a link
    /// between machines converts it to each share's clock).
    fn start(&self, at: SystemTime) -> Result<(), String>;
    /// Asks every share to stop (the run was interrupted, stopped, or hit its limit).
    fn stop(&self, reason: &str);
    /// The shares the distributed engine knows are gone (a worker that died or left the
    /// cluster, a share's task that failed), each reported once.
    fn lost_shares(&self) -> Vec<LostShare> {
        Vec::new()
    }
    /// Asks one share to stop, whether or not it still runs: one given up while the others go
    /// on must not go on sending.
    fn stop_share(&self, _share: usize, _reason: &str) {}
    /// Starts share `share` again on a spare machine with `plan` (JSON: the share's plan with
    /// its segment's `resume`), its start the run's: the machine it now runs on, named as
    /// [`ShareHosts::machines`] names them, or why no machine could take it. A link without
    /// spare machines has none.
    fn replace_share(&self, _share: usize, _plan: &str) -> Result<String, String> {
        Err("no spare machine to replace it with".into())
    }
    /// Grants share `share` takes of each of the plan's feeders up to `bounds` (row grants),
    /// with the beats from now on. A link without beats has no grants: its shares' plans must
    /// have none.
    fn grant_rows(&self, _share: usize, _bounds: &[u64]) {}
    /// Share `share`'s machine clock against the coordinator's, as the link measured it to
    /// convert the start; None when it did not (one machine's clock, or unknown).
    fn clock(&self, _share: usize) -> Option<ShareClock> {
        None
    }
}

/// A share the distributed engine reports gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostShare {
    pub share: usize,
    /// Which of its attempts (0, then one more each time it was replaced): a report about an
    /// attempt already replaced is old news, and must not count its replacement lost.
    pub attempt: u32,
    pub reason: String,
}

/// A machine's wall clock against the coordinator's, measured by round trips: the one with the
/// shortest round trip is kept, and the offset is wrong by at most half of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareClock {
    /// Added to an instant on the coordinator's clock, the same instant on the machine's.
    pub offset_ns: i64,
    /// The round trip the offset was measured with.
    pub round_trip_ns: u64,
}

/// Machines that a distributed engine (Dask, through horde.cluster) gives a coordinator, one
/// share each, with the link to them. The engine places and starts the shares and carries
/// their messages; what a share runs is its plan, cut by [`share_plans`].
pub trait ShareHosts: CoordinatorLink {
    /// The machines, by the names their engine knows them by (Dask: the workers' addresses),
    /// in the order of the shares.
    fn machines(&self) -> Vec<String>;
    /// Starts share `i` of the run on machine `i` with `plans[i]` (a plan as JSON). The shares
    /// then report ready through the link.
    fn launch(&self, plans: &[String]) -> Result<(), String>;
    /// The worker threads each share runs when the plan does not say: None for as many as its
    /// machine has cores; a cluster of processes on one machine shares its cores out.
    fn threads_per_share(&self) -> Option<u32>;
    /// How many cores each machine has for its share (those its worker process may run on),
    /// in the order of [`ShareHosts::machines`]: the weights of `--cluster-weights cores`.
    fn cores(&self) -> Result<Vec<u64>, String>;
    /// The run launched last is over: its shares are stopped if still running and its links
    /// end; the machines stay for another run (a sweep runs one per level).
    fn end_run(&self);
    /// Gives the machines back once the command is done with them: the last run ends, and a
    /// cluster started for the command is shut down.
    fn close(&self);
}

/// The plans of a run split over `machines` in proportion to `weights`, one per machine in
/// the same order (all alike for equal shares): machine i runs the segment from the sum of the
/// weights before it to the sum up to it, over their total, of the one sequence that every
/// share is given (weights 3,1: `0:3/4` and `3/4:1` of `0,3/4,1`). It gets `threads` worker
/// threads if the plan sets none; nothing else changes, and every share changes alike (so
/// every share draws the same seed, segment.rs's `shared_seed`). Weights that are not one per
/// machine, a weight of 0, and a share that would have no virtual user (it could not send its
/// part of the budget) are refused, naming the machine.
pub fn share_plans(
    plan: &Plan,
    machines: &[String],
    weights: &[u64],
    threads: Option<u32>,
) -> Result<Vec<Plan>, ClusterError> {
    let bounds = segment_bounds(machines, weights)?;
    let total = *bounds.last().expect("one bound more than machines");
    let point = |bound: u64| match (bound, gcd(bound, total)) {
        (0, _) => "0".to_string(),
        (bound, _) if bound == total => "1".to_string(),
        (bound, divisor) => format!("{}/{}", bound / divisor, total / divisor),
    };
    let sequence = bounds.iter().map(|&bound| point(bound)).collect::<Vec<_>>().join(",");
    let total_users: u64 = plan.scenarios.iter().map(|s| crate::injection::user_indices(&s.injection)).sum();
    let mut plans = Vec::with_capacity(machines.len());
    for (index, machine) in machines.iter().enumerate() {
        let mut share = plan.clone();
        let segment = format!("{}:{}", point(bounds[index]), point(bounds[index + 1]));
        share.options.execution_segment = Some(ExecutionSegmentOptions {
            segment,
            sequence: Some(sequence.clone()),
            resume: None,
            row_grants: None,
            request_log: None,
        });
        share.options.workers = share.options.workers.or(threads);
        let schedule = Share::of(&share).schedule;
        let users: u64 =
            share.scenarios.iter().map(|s| schedule.scale(crate::injection::user_indices(&s.injection))).sum();
        if users == 0 {
            return Err(ClusterError::NoUsers {
                share: index,
                machine: machine.clone(),
                users: total_users,
                weights: weights.to_vec(),
            });
        }
        plans.push(share);
    }
    Ok(plans)
}

/// The sums of the weights before each machine and of them all: `0, w0, w0 + w1, ..., total`,
/// once the weights are checked (one per machine, none 0, a sequence horde can stripe).
fn segment_bounds(machines: &[String], weights: &[u64]) -> Result<Vec<u64>, ClusterError> {
    if weights.len() != machines.len() {
        return Err(ClusterError::WeightCount { weights: weights.len(), machines: machines.to_vec() });
    }
    if let Some(share) = weights.iter().position(|&weight| weight == 0) {
        return Err(ClusterError::ZeroWeight { share, machine: machines[share].clone() });
    }
    let mut bounds = Vec::with_capacity(weights.len() + 1);
    bounds.push(0u64);
    for &weight in weights {
        let sum = bounds.last().and_then(|sum: &u64| sum.checked_add(weight));
        bounds.push(sum.ok_or_else(|| ClusterError::WeightsTooFine { weights: weights.to_vec() })?);
    }
    // The segments' common denominator is the total over the weights' common divisor.
    let divisor = weights.iter().fold(0, |g, &w| gcd(g, w));
    if bounds[weights.len()] / divisor > MAX_SEGMENT_DENOMINATOR {
        return Err(ClusterError::WeightsTooFine { weights: weights.to_vec() });
    }
    Ok(bounds)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Why a share or a coordinator could not run. Nothing was sent when it happens before the
/// start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterError {
    /// The plan has no execution segment for a share to run.
    NoSegment,
    /// Shares that were not ready in time.
    NotReady { missing: Vec<usize>, waited: Duration },
    /// A share was lost before the start (its task failed, its worker left), and why.
    NotStarted { share: usize, reason: String },
    /// A message that does not decode (another horde version, a bug).
    Wire(String),
    /// The link failed.
    Link(String),
    /// Interrupted (Ctrl-C, SIGTERM) before the start.
    Interrupted,
    /// A share would have no virtual user: more machines than users, or a weight too small
    /// for the users there are.
    NoUsers { share: usize, machine: String, users: u64, weights: Vec<u64> },
    /// Not one weight per machine.
    WeightCount { weights: usize, machines: Vec<String> },
    /// A machine weighed 0: it would have no part of the run.
    ZeroWeight { share: usize, machine: String },
    /// Weights whose total (over their common divisor) is more than a sequence can have.
    WeightsTooFine { weights: Vec<u64> },
}

impl std::fmt::Display for ClusterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClusterError::NoSegment => {
                write!(f, "a share runs an execution segment: the plan has none (options.execution_segment)")
            }
            ClusterError::NotStarted { share, reason } => {
                write!(f, "share {share} could not start ({reason}): no load was sent")
            }
            ClusterError::NotReady { missing, waited } => {
                let missing: Vec<String> = missing.iter().map(usize::to_string).collect();
                write!(
                    f,
                    "share(s) {} not ready within {:.1} s: no load was sent",
                    missing.join(", "),
                    waited.as_secs_f64()
                )
            }
            ClusterError::Wire(problem) => write!(f, "{problem}"),
            ClusterError::Link(problem) => {
                write!(f, "the link between the shares and the coordinator failed: {problem}")
            }
            ClusterError::Interrupted => write!(f, "interrupted before the start: no load was sent"),
            ClusterError::NoUsers { share, machine, users, weights } => {
                write!(
                    f,
                    "share {share} ({machine}) would have no virtual user: the plan has {users} user{} for {} machines",
                    if *users == 1 { "" } else { "s" },
                    weights.len()
                )?;
                if weights.windows(2).all(|pair| pair[0] == pair[1]) {
                    write!(f, "; run more users or fewer machines")
                } else {
                    write!(f, " of weights {}; run more users, fewer machines or closer weights", list(weights))
                }
            }
            ClusterError::WeightCount { weights, machines } => write!(
                f,
                "{weights} weight{} for {} machine{} ({}): give one per machine, in this order",
                if *weights == 1 { "" } else { "s" },
                machines.len(),
                if machines.len() == 1 { "" } else { "s" },
                machines.join(", ")
            ),
            ClusterError::ZeroWeight { share, machine } => write!(
                f,
                "share {share} ({machine}) has a weight of 0, which is no part of the run: every weight is at least 1 \
                 (leave a machine out of the cluster to give it nothing)"
            ),
            ClusterError::WeightsTooFine { weights } => write!(
                f,
                "the weights {} add up to more than {MAX_SEGMENT_DENOMINATOR} parts, the most horde stripes a run in: \
                 use smaller weights (only their ratios count)",
                list(weights)
            ),
        }
    }
}

impl std::error::Error for ClusterError {}

impl ClusterError {
    /// Whether the weights given for the machines are what is wrong.
    pub fn concerns_weights(&self) -> bool {
        matches!(
            self,
            ClusterError::WeightCount { .. } | ClusterError::ZeroWeight { .. } | ClusterError::WeightsTooFine { .. }
        )
    }
}

/// The takes of each queue and shuffle feeder a share may make before its coordinator's
/// first grant, and the least headroom of later grants: rows a replacement may skip per feeder
/// (a few thousand of a file of millions); a share faster than that waits a beat at the start.
pub const FIRST_ROW_GRANT: u64 = 4096;

/// Bounds each share's takes of the plan's queue and shuffle feeders, and of its `counters`
/// run-wide counters (the program's, `${__counter}` and round-robin switches), by row grants
/// (`options.execution_segment.row_grants`), raised by its coordinator's beats: what a run
/// whose lost shares are replaced needs, so that a replacement starts after every row and value
/// the lost share could have used. A plan with neither is left as it is.
pub fn bound_rows_by_grants(plans: &mut [Plan], counters: usize) {
    for plan in plans {
        if counters == 0 && !plan.feeders.iter().any(|feeder| feeder.strategy.runs_out()) {
            continue;
        }
        let feeders = plan.feeders.len();
        if let Some(segment) = plan.options.execution_segment.as_mut() {
            segment.row_grants = Some(horde_plan::RowGrants {
                from: vec![0; feeders],
                initial: FIRST_ROW_GRANT,
                counters_from: vec![0; counters],
            });
        }
    }
}

/// Weights as they are written on the command line: `3,1,1`.
fn list(weights: &[u64]) -> String {
    weights.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn machines(count: usize) -> Vec<String> {
        (0..count).map(|i| format!("tcp://127.0.0.1:{}", 9000 + i)).collect()
    }

    pub(super) fn http_plan(users: u64) -> Plan {
        let json = format!(
            r#"{{"version": 1, "name": "p", "protocol": {{"base_url": "http://127.0.0.1:1"}},
               "scenarios": [{{"name": "s", "steps": [{{"type": "request", "name": "r", "method": "GET", "url": "/"}}],
                              "injection": [{{"type": "at_once_users", "users": {users}}}]}}]}}"#
        );
        Plan::from_json(&json).expect("a valid plan")
    }

    #[test]
    fn shares_cut_the_plan_by_one_sequence_of_equal_segments() {
        let plans = share_plans(&http_plan(6), &machines(3), &[1; 3], None).unwrap();
        let segments: Vec<_> = plans.iter().map(|p| p.options.execution_segment.clone().unwrap()).collect();
        assert_eq!(
            segments.iter().map(|s| (s.segment.as_str(), s.sequence.as_deref().unwrap())).collect::<Vec<_>>(),
            [("0:1/3", "0,1/3,2/3,1"), ("1/3:2/3", "0,1/3,2/3,1"), ("2/3:1", "0,1/3,2/3,1")]
        );
        // Each is a valid plan, and only the segment differs from the whole.
        for share in &plans {
            assert!(share.validate().is_empty(), "{:?}", share.validate());
            let mut whole = share.clone();
            whole.options.execution_segment = None;
            assert_eq!(whole, http_plan(6));
        }
        let four = share_plans(&http_plan(8), &machines(4), &[1; 4], None).unwrap();
        assert_eq!(four[1].options.execution_segment.as_ref().unwrap().segment, "1/4:1/2");
        let one = share_plans(&http_plan(1), &machines(1), &[1], None).unwrap();
        assert_eq!(one[0].options.execution_segment.as_ref().unwrap().segment, "0:1");
    }

    #[test]
    fn shares_on_shared_cores_get_their_threads_unless_the_plan_says() {
        let threads = |plan: &Plan| -> Vec<Option<u32>> {
            share_plans(plan, &machines(2), &[1, 1], Some(1)).unwrap().iter().map(|p| p.options.workers).collect()
        };
        assert_eq!(threads(&http_plan(4)), [Some(1), Some(1)]);
        let mut three_workers = http_plan(4);
        three_workers.options.workers = Some(3);
        assert_eq!(threads(&three_workers), [Some(3), Some(3)]);
    }

    #[test]
    fn a_share_without_a_user_is_refused_naming_its_machine() {
        let err = share_plans(&http_plan(1), &machines(2), &[1, 1], None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "share 1 (tcp://127.0.0.1:9001) would have no virtual user: the plan has 1 user for 2 machines; run more \
             users or fewer machines"
        );
    }

    fn segments(plans: &[Plan]) -> Vec<(String, String)> {
        plans
            .iter()
            .map(|plan| {
                let segment = plan.options.execution_segment.clone().unwrap();
                (segment.segment, segment.sequence.unwrap())
            })
            .collect()
    }

    #[test]
    fn weights_cut_the_plan_at_their_running_sums_over_their_total() {
        let plans = share_plans(&http_plan(4), &machines(2), &[3, 1], None).unwrap();
        assert_eq!(segments(&plans), [("0:3/4".into(), "0,3/4,1".into()), ("3/4:1".into(), "0,3/4,1".into())]);
        // Fractions reduced: 2,2,4 is 1,1,2.
        let plans = share_plans(&http_plan(8), &machines(3), &[2, 2, 4], None).unwrap();
        assert_eq!(
            segments(&plans).into_iter().map(|(segment, _)| segment).collect::<Vec<_>>(),
            ["0:1/4", "1/4:1/2", "1/2:1"]
        );
        assert_eq!(segments(&plans)[0].1, "0,1/4,1/2,1");
        // Equal weights, whatever they are, are equal shares.
        let equal = share_plans(&http_plan(6), &machines(3), &[8, 8, 8], None).unwrap();
        assert_eq!(segments(&equal), segments(&share_plans(&http_plan(6), &machines(3), &[1; 3], None).unwrap()));
        for share in &plans {
            assert!(share.validate().is_empty(), "{:?}", share.validate());
        }
    }

    #[test]
    fn weights_that_are_not_one_positive_weight_per_machine_are_refused_naming_the_problem() {
        let refused = |users: u64, weights: &[u64]| share_plans(&http_plan(users), &machines(2), weights, None);
        assert_eq!(
            refused(4, &[3, 1, 1]).unwrap_err().to_string(),
            "3 weights for 2 machines (tcp://127.0.0.1:9000, tcp://127.0.0.1:9001): give one per machine, in this order"
        );
        assert!(matches!(refused(4, &[3]), Err(ClusterError::WeightCount { weights: 1, .. })));
        assert_eq!(
            refused(4, &[2, 0]).unwrap_err().to_string(),
            "share 1 (tcp://127.0.0.1:9001) has a weight of 0, which is no part of the run: every weight is at least 1 \
             (leave a machine out of the cluster to give it nothing)"
        );
        assert_eq!(
            refused(4, &[100_000, 1]).unwrap_err().to_string(),
            "the weights 100000,1 add up to more than 100000 parts, the most horde stripes a run in: use smaller \
             weights (only their ratios count)"
        );
        assert!(matches!(refused(4, &[u64::MAX, 1]), Err(ClusterError::WeightsTooFine { .. })));
        // Big weights with a common divisor are small ratios.
        assert!(refused(4, &[300_000, 100_000]).is_ok());
        // A share whose weight gets no user, as without weights.
        assert_eq!(
            refused(3, &[9, 1]).unwrap_err().to_string(),
            "share 1 (tcp://127.0.0.1:9001) would have no virtual user: the plan has 3 users for 2 machines of weights \
             9,1; run more users, fewer machines or closer weights"
        );
        assert!(refused(3, &[2, 1]).is_ok());
    }

    proptest! {
        /// The shares cut by weights run the whole schedule between them, each index once, in
        /// proportion to the weights; their budgets add up to the run's.
        #[test]
        fn weighted_shares_add_up_to_the_whole_run(
            weights in proptest::collection::vec(1u64..=12, 1..=6),
            extra_users in 0u64..50,
            budget in 0u64..5000,
        ) {
            let total: u64 = weights.iter().sum();
            let users = total + extra_users;
            let mut plan = http_plan(users);
            plan.options.max_requests = Some(budget);
            let plans = share_plans(&plan, &machines(weights.len()), &weights, None).unwrap();
            let shares: Vec<Share> = plans.iter().map(Share::of).collect();
            for i in 0..(3 * total) {
                prop_assert_eq!(shares.iter().filter(|s| s.schedule.owns(i)).count(), 1, "index {}", i);
            }
            for (share, &weight) in shares.iter().zip(&weights) {
                prop_assert_eq!(share.schedule.scale(5 * total), 5 * weight);
            }
            prop_assert_eq!(shares.iter().map(|s| s.schedule.scale(users)).sum::<u64>(), users);
            prop_assert_eq!(shares.iter().map(|s| s.budget(Some(budget)).unwrap()).sum::<u64>(), budget);
        }
    }
}
