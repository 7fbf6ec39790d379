//! `options.cluster`: what a run split over several machines does when one of them is lost.
//! Where the machines are (`--cluster local:N`, a scheduler's address) is the command line's;
//! what a lost worker means for the run's results is the plan's, so that a plan file or a
//! simulation says it once and every front runs it the same way.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `options.cluster`: the worker-loss policy of a run on several machines (`--cluster`).
/// The command line's `--on-worker-loss`, `--spares` and `--allow-worker-loss` override it; a
/// run on one machine ignores it.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct ClusterOptions {
    /// What a lost worker (dead, gone from the cluster, silent for 10 s) does to the run.
    #[serde(default)]
    pub on_worker_loss: WorkerLoss,
    /// Workers kept idle to replace lost ones (`on_worker_loss: replace`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub spares: u32,
    /// A lost worker does not fail the command (exit 6): the run's status and thresholds
    /// decide, and the results still name the worker lost.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_worker_loss: bool,
}

fn is_zero(value: &u32) -> bool {
    *value == 0
}

/// `options.cluster.on_worker_loss`.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum WorkerLoss {
    /// The other workers go on to the run's end; the lost share's load is missing (and said).
    #[default]
    Continue,
    /// The lost share starts again on a spare worker a moment later, its schedule the run's.
    Replace,
    /// Every worker stops: the run ends `stopped`.
    Abort,
}
