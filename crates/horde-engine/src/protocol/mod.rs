//! Protocols, each in its own module around the protocol-agnostic core (schedules, workers,
//! virtual users, control flow, recorders): its client, its steps as a user runs them, its
//! checks, its error kinds and its timing phases. The core knows a step only as something a
//! user runs against its session, reporting outcomes to rows; it never parses a wire format.

pub(crate) mod couchdb;
pub(crate) mod http;
pub(crate) mod messages;
pub(crate) mod sql;

use crate::lower::Program;

/// What each protocol checks before a run, so that a wrong address or password is its own
/// message (exit 3) and not a run of failures: each SQL database answers `SELECT 1`. HTTP
/// needs none (a refused connection is counted as what it is, per request).
pub fn preflight(program: &Program) -> Result<(), String> {
    sql::preflight(program)
}
