//! A run of several processes through a spool directory (the hidden `--share-spool` and
//! `--coordinate-spool` flags): the engine's shares and coordinator, with their failures as
//! exit codes.

use crate::Failure;
use horde_engine::cluster::spool::{SpoolCoordinatorLink, SpoolShareLink};
use horde_engine::cluster::{ClusterError, CoordinatorOptions};
use horde_engine::{Program, RunControl, RunResult};
use horde_metrics::{RequestLogOutput, Sink};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Runs `program`'s execution segment as a share whose messages go through `spool`.
pub(crate) fn run_share(
    program: Arc<Program>,
    control: &RunControl,
    sink: &mut (dyn Sink + Send),
    request_log: Option<RequestLogOutput>,
    spool: &Path,
    ready_timeout: Duration,
) -> Result<RunResult, Failure> {
    let share = program
        .plan
        .options
        .execution_segment
        .as_ref()
        .and_then(|segment| segment.resolve().ok())
        .map(|segmentation| segmentation.index)
        .ok_or_else(|| failure(ClusterError::NoSegment))?;
    let link = SpoolShareLink::create(spool, share, ready_timeout)
        .map_err(|err| Failure::Runtime(anyhow::anyhow!("--share-spool {}: {err}", spool.display())))?;
    horde_engine::cluster::run_share(program, control, sink, request_log, Arc::new(link)).map_err(failure)
}

/// Coordinates the shares of `program` through `spool`.
pub(crate) fn coordinate(
    program: Arc<Program>,
    control: &RunControl,
    sink: &mut (dyn Sink + Send),
    spool: &Path,
    options: &CoordinatorOptions,
) -> Result<RunResult, Failure> {
    let link = SpoolCoordinatorLink::create(spool, options.shares)
        .map_err(|err| Failure::Runtime(anyhow::anyhow!("--coordinate-spool {}: {err}", spool.display())))?;
    horde_engine::cluster::run_coordinated(program, control, sink, Arc::new(link), options).map_err(failure)
}

/// A share's or coordinator's failure before the start: nothing was sent.
fn failure(err: ClusterError) -> Failure {
    match err {
        ClusterError::NoSegment => Failure::Invalid(err.to_string()),
        ClusterError::Interrupted => Failure::Interrupted("waiting for the shares to be ready"),
        ClusterError::NotReady { .. } | ClusterError::Wire(_) | ClusterError::Link(_) => {
            Failure::Runtime(anyhow::anyhow!("{err}"))
        }
    }
}
