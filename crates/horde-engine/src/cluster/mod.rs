//! A run across processes (issue 26): each share runs its execution segment of the plan as a
//! local run would, with its start given by a coordinator and its intervals relayed to it; the
//! coordinator merges them with the very collector a local run uses (run.rs), so thresholds,
//! summary.json, the time series and histograms.hlog are the same code.
//!
//! How messages travel is a link's business, behind two traits: [`ShareLink`] on a share's
//! side, [`CoordinatorLink`] on the coordinator's. [`spool`] implements them over a directory
//! (processes on one machine or on a shared file system, no other software: what the tests
//! use); a Dask transport implements them in Python, through horde-py.

mod coordinator;
mod share;
pub mod spool;

pub use coordinator::{run_coordinated, CoordinatorOptions};
pub use share::run_share;
pub(crate) use share::ShareRole;

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
        }
    }
}

impl std::error::Error for ClusterError {}
