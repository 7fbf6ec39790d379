//! The driver's errors as stable kinds, named as CQL names them: what a user reads in the
//! errors table and what thresholds and `eventually` see.

use scylla::errors::{DbError, ExecutionError, PrepareError, RequestAttemptError};

/// A failed statement: its kind and the words that explain it.
pub(crate) struct CqlFailure {
    pub kind: &'static str,
    pub message: String,
}

impl CqlFailure {
    pub(crate) fn of_execution(error: &ExecutionError) -> CqlFailure {
        let kind = match error {
            ExecutionError::LastAttemptError(attempt) => attempt_kind(attempt),
            ExecutionError::RequestTimeout(_) => "request_timeout",
            ExecutionError::ConnectionPoolError(_) | ExecutionError::EmptyPlan => "cql_connection",
            ExecutionError::PrepareError(error) => return CqlFailure::of_prepare(error),
            ExecutionError::BadQuery(_) => "cql_bad_value",
            _ => "cql_error",
        };
        CqlFailure { kind, message: describe_execution(error) }
    }

    pub(crate) fn of_prepare(error: &PrepareError) -> CqlFailure {
        let kind = match error {
            PrepareError::AllAttemptsFailed { first_attempt } => attempt_kind(first_attempt),
            PrepareError::ConnectionPoolError(_) => "cql_connection",
            _ => "cql_error",
        };
        CqlFailure { kind, message: error.to_string() }
    }
}

fn attempt_kind(error: &RequestAttemptError) -> &'static str {
    match error {
        RequestAttemptError::DbError(db, _) => match db {
            DbError::Unavailable { .. } => "cql_unavailable",
            DbError::WriteTimeout { .. } => "cql_write_timeout",
            DbError::ReadTimeout { .. } => "cql_read_timeout",
            DbError::WriteFailure { .. } => "cql_write_failure",
            DbError::ReadFailure { .. } => "cql_read_failure",
            DbError::Overloaded | DbError::RateLimitReached { .. } => "cql_overloaded",
            DbError::SyntaxError => "cql_syntax",
            DbError::Invalid | DbError::AlreadyExists { .. } | DbError::ConfigError => "cql_invalid",
            DbError::Unauthorized | DbError::AuthenticationError => "cql_unauthorized",
            DbError::IsBootstrapping => "cql_unavailable",
            _ => "cql_error",
        },
        RequestAttemptError::BrokenConnectionError(_) => "cql_connection_lost",
        RequestAttemptError::SerializationError(_) => "cql_bad_value",
        _ => "cql_error",
    }
}

/// An execution error in words: the database's own message when it gave one.
pub(crate) fn describe_execution(error: &ExecutionError) -> String {
    match error {
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(db, message)) => format!("{db}: {message}"),
        other => other.to_string(),
    }
}
