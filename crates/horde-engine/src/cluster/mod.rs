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
mod share;
pub mod spool;

pub use coordinator::{run_coordinated, CoordinatorOptions, WorkerLossPolicy};
pub use share::run_share;
pub(crate) use share::ShareRole;

use crate::segment::Share;
use horde_plan::{ExecutionSegmentOptions, Plan};
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
    /// cluster, a share's task that failed), each reported once: its index and why.
    fn lost_shares(&self) -> Vec<(usize, String)> {
        Vec::new()
    }
    /// Asks one share to stop, whether or not it still runs: one given up while the others go
    /// on must not go on sending.
    fn stop_share(&self, _share: usize, _reason: &str) {}
    /// Share `share`'s machine clock against the coordinator's, as the link measured it to
    /// convert the start; None when it did not (one machine's clock, or unknown).
    fn clock(&self, _share: usize) -> Option<ShareClock> {
        None
    }
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
    /// Gives the machines back once the run is over: its shares are stopped if still running,
    /// and a cluster started for the run is shut down.
    fn close(&self);
}

/// The plans of a run split into equal shares over `machines`: the plan with each segment of
/// the sequence `0,1/N,...,1` as its execution segment, and `threads` worker threads if the
/// plan sets none; nothing else changes, and every share changes alike (so every share draws
/// the same seed, segment.rs's `shared_seed`). A share that would have no virtual user is
/// refused, naming its machine: it could not send its part of the budget.
pub fn share_plans(plan: &Plan, machines: &[String], threads: Option<u32>) -> Result<Vec<Plan>, ClusterError> {
    let count = machines.len() as u64;
    let point = |i: u64| match (i, gcd(i, count)) {
        (0, _) => "0".to_string(),
        (i, _) if i == count => "1".to_string(),
        (i, divisor) => format!("{}/{}", i / divisor, count / divisor),
    };
    let sequence = (0..=count).map(point).collect::<Vec<_>>().join(",");
    let total_users: u64 = plan.scenarios.iter().map(|s| crate::injection::user_indices(&s.injection)).sum();
    let mut plans = Vec::with_capacity(machines.len());
    for (index, machine) in machines.iter().enumerate() {
        let mut share = plan.clone();
        let segment = format!("{}:{}", point(index as u64), point(index as u64 + 1));
        share.options.execution_segment = Some(ExecutionSegmentOptions { segment, sequence: Some(sequence.clone()) });
        share.options.workers = share.options.workers.or(threads);
        let schedule = Share::of(&share).schedule;
        let users: u64 =
            share.scenarios.iter().map(|s| schedule.scale(crate::injection::user_indices(&s.injection))).sum();
        if users == 0 {
            return Err(ClusterError::NoUsers {
                share: index,
                machine: machine.clone(),
                users: total_users,
                machines: machines.len(),
            });
        }
        plans.push(share);
    }
    Ok(plans)
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
    /// A message that does not decode (another horde version, a bug).
    Wire(String),
    /// The link failed.
    Link(String),
    /// Interrupted (Ctrl-C, SIGTERM) before the start.
    Interrupted,
    /// A share would have no virtual user: more machines than users.
    NoUsers { share: usize, machine: String, users: u64, machines: usize },
}

impl std::fmt::Display for ClusterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClusterError::NoSegment => {
                write!(f, "a share runs an execution segment: the plan has none (options.execution_segment)")
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
            ClusterError::NoUsers { share, machine, users, machines } => write!(
                f,
                "share {share} ({machine}) would have no virtual user: the plan has {users} user{} for {machines} \
                 machines; run more users or fewer machines",
                if *users == 1 { "" } else { "s" }
            ),
        }
    }
}

impl std::error::Error for ClusterError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn machines(count: usize) -> Vec<String> {
        (0..count).map(|i| format!("tcp://127.0.0.1:{}", 9000 + i)).collect()
    }

    fn http_plan(users: u64) -> Plan {
        let json = format!(
            r#"{{"version": 1, "name": "p", "protocol": {{"base_url": "http://127.0.0.1:1"}},
               "scenarios": [{{"name": "s", "steps": [{{"type": "request", "name": "r", "method": "GET", "url": "/"}}],
                              "injection": [{{"type": "at_once_users", "users": {users}}}]}}]}}"#
        );
        Plan::from_json(&json).expect("a valid plan")
    }

    #[test]
    fn shares_cut_the_plan_by_one_sequence_of_equal_segments() {
        let plans = share_plans(&http_plan(6), &machines(3), None).unwrap();
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
        let four = share_plans(&http_plan(8), &machines(4), None).unwrap();
        assert_eq!(four[1].options.execution_segment.as_ref().unwrap().segment, "1/4:1/2");
        let one = share_plans(&http_plan(1), &machines(1), None).unwrap();
        assert_eq!(one[0].options.execution_segment.as_ref().unwrap().segment, "0:1");
    }

    #[test]
    fn shares_on_shared_cores_get_their_threads_unless_the_plan_says() {
        let threads = |plan: &Plan| -> Vec<Option<u32>> {
            share_plans(plan, &machines(2), Some(1)).unwrap().iter().map(|p| p.options.workers).collect()
        };
        assert_eq!(threads(&http_plan(4)), [Some(1), Some(1)]);
        let mut three_workers = http_plan(4);
        three_workers.options.workers = Some(3);
        assert_eq!(threads(&three_workers), [Some(3), Some(3)]);
    }

    #[test]
    fn a_share_without_a_user_is_refused_naming_its_machine() {
        let err = share_plans(&http_plan(1), &machines(2), None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "share 1 (tcp://127.0.0.1:9001) would have no virtual user: the plan has 1 user for 2 machines; run more \
             users or fewer machines"
        );
    }
}
