//! Exit codes: the one place they are defined. Documented in the README.

/// The run finished (KO requests are results, not a failure of horde), or the command did
/// its job.
pub const OK: i32 = 0;
/// Bad input: unknown flags, an invalid plan or simulation, a missing file, a threshold that
/// names no request of the plan.
pub const INVALID_INPUT: i32 = 2;
/// horde could not do its job: results could not be written, a port could not be bound, an
/// internal error. Never 1, which a Python interpreter returns for any uncaught exception.
pub const RUN_FAILED: i32 = 3;
/// The system under test failed the workload: a phase of `horde sql` failed (a statement, a
/// lost connection) or the database's count after it was not what the phase should have left.
/// The results measured until then are on disk.
pub const WORKLOAD_FAILED: i32 = 4;
/// `horde sweep` measured no level: horde could not deliver the load of any of them on this
/// machine (late starts, a saturated CPU), so nothing is known of the server. Not 0 (nothing
/// was found), not 99 (no SLO was judged).
pub const NOTHING_MEASURED: i32 = 5;
/// Thresholds failed (or had no data), a run was aborted by one, or no level of a sweep met
/// its SLOs: 99, as k6, so CI scripts can tell "the system is too slow" from "horde failed".
pub const THRESHOLDS_FAILED: i32 = 99;
/// `horde compare` (and `horde run --trials` with two plans) found a regression beyond the
/// tolerance: something slower or worse. 99, as k6 users script around for failed thresholds.
pub const REGRESSION: i32 = 99;
/// With `--cluster`: a worker was lost during the run (it died, left the cluster or went
/// silent), so part of the load was not delivered; the results name it (`machines[].lost`).
/// `--allow-worker-loss` leaves the exit code to the run's status and thresholds.
pub const WORKER_LOST: i32 = 6;
/// Interrupted by Ctrl-C or SIGTERM; the results measured until then are on disk.
pub const INTERRUPTED: i32 = 130;
