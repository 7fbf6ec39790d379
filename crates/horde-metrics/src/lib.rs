//! Measurements for horde: what a worker records per request, how interval snapshots merge,
//! and the summary statistics computed from them.
//!
//! ```
//! use horde_metrics::{Recorder, RequestTiming, SummaryOptions};
//! let mut recorder = Recorder::default();
//! recorder.record(&RequestTiming { latency_us: 1200, uncorrected_us: 1100, ..Default::default() }, true);
//! let stats = recorder.stats("home", 1.0, &SummaryOptions::default());
//! assert_eq!(stats.ok, 1);
//! assert_eq!(stats.latency.all.max_us, 1200);
//! ```
//!
//! Invariant: recording never allocates once a histogram has grown to cover the values it sees,
//! and merging keeps every count.

mod couchdb;
mod recorder;
mod request_log;
mod sql;
mod summary;
mod threshold;
mod timeseries;
mod totals;
pub mod wire;

pub use couchdb::{ConnectionPhases, CouchdbStepKind, CouchdbStepReport, SpreadSecs, CRUD_OPERATIONS};
pub use hdrhistogram::Histogram;
pub use recorder::{
    new_histogram, record_value, ConnectionEvents, Distribution, ErrorKey, ErrorRecord, GroupRecorder, Recorder,
    RequestTiming, Snapshot,
};
pub use request_log::{RequestLogFormat, RequestLogOutput, RequestRecord, JTL_HEADER};
pub use sql::{SqlPhaseReport, SqlProgress, SqlVerification};
pub use summary::{
    AttemptStats, ConnectionStats, DistributionBucket, ErrorSummary, GeneratorStats, GroupStats, LatencyStats,
    MachineStats, MissedLoad, Percentile, PhaseStats, RequestLatency, RequestStats, SchedulingStats,
    SessionFunctionStats, ShareReplacement, SnapshotDelay, SummaryOptions, UserStats,
};
pub use threshold::{RowVerdict, ThresholdMonitor, ThresholdResult, ThresholdStatus, WindowCounts};
pub use timeseries::{CompletedInterval, IntervalSample, PendingIntervals, PhaseMeans, ALL_REQUESTS};
pub use totals::{many_rows_warning, RunStatus, Sink, Totals, ROWS_WARNING_LIMIT};
