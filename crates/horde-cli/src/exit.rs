//! Exit codes: the one place they are defined. Documented in the README.

/// The run finished (KO requests are results, not a failure of horde), or the command did
/// its job.
pub const OK: i32 = 0;
/// Reserved for thresholds (assertions on the results) that failed.
pub const THRESHOLDS_FAILED: i32 = 1;
/// Bad input: unknown flags, an invalid plan or simulation, a missing file.
pub const INVALID_INPUT: i32 = 2;
/// horde could not do its job: results could not be written, a port could not be bound.
pub const RUN_FAILED: i32 = 3;
/// `horde compare` (and `horde run --trials` with two plans) found a regression beyond the
/// tolerance: something slower or worse. 99, as k6 users script around for failed thresholds.
pub const REGRESSION: i32 = 99;
/// Interrupted by Ctrl-C or SIGTERM; the results measured until then are on disk.
pub const INTERRUPTED: i32 = 130;
