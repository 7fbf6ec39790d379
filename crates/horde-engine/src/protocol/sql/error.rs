//! SQL failures as stable kinds: by the SQLSTATE class where the database gives one (the
//! SQLSTATE itself is the error's detail, so two codes of one class are counted apart), by
//! what went wrong otherwise (the connection, SQLite's own codes).

/// A failed statement or connection.
#[derive(Debug, Clone)]
pub struct SqlError {
    pub kind: &'static str,
    /// The five-character SQLSTATE, when the database sent one.
    pub sqlstate: Option<String>,
    pub message: String,
}

impl SqlError {
    pub fn new(kind: &'static str, message: impl Into<String>) -> SqlError {
        SqlError { kind, sqlstate: None, message: message.into() }
    }

    /// The error's detail for the error table: the SQLSTATE packed in base 36 (0 without one).
    pub fn detail(&self) -> u32 {
        self.sqlstate
            .as_deref()
            .map(|code| code.chars().fold(0u32, |n, c| n.wrapping_mul(36).wrapping_add(c.to_digit(36).unwrap_or(0))))
            .unwrap_or(0)
    }

    /// `message (SQLSTATE 42P07)`.
    pub fn describe(&self) -> String {
        match &self.sqlstate {
            Some(code) => format!("{} (SQLSTATE {code})", self.message),
            None => self.message.clone(),
        }
    }

    pub(crate) fn with_state(sqlstate: &str, message: String) -> SqlError {
        SqlError { kind: kind_of_sqlstate(sqlstate), sqlstate: Some(sqlstate.to_string()), message }
    }
}

/// The stable kind of a SQLSTATE, by its class (its first two characters).
pub fn kind_of_sqlstate(sqlstate: &str) -> &'static str {
    match sqlstate.get(..2).unwrap_or("") {
        "08" => "sql_connection",
        "22" => "sql_data_exception",
        "23" => "sql_constraint_violation",
        "28" => "sql_authentication_failed",
        "3D" => "sql_unknown_database",
        "40" => "sql_transaction_rollback",
        "42" => "sql_syntax_or_access",
        "53" => "sql_insufficient_resources",
        "57" => "sql_operator_intervention",
        _ => "sql_error",
    }
}

impl From<mysql_async::Error> for SqlError {
    fn from(err: mysql_async::Error) -> SqlError {
        match err {
            mysql_async::Error::Server(server) => {
                SqlError::with_state(&server.state, format!("{} (error {})", server.message, server.code))
            }
            other => {
                let message = other.to_string();
                let refused = message.contains("Connection refused");
                SqlError::new(if refused { "connect_refused" } else { "sql_connection_lost" }, message)
            }
        }
    }
}

impl From<rusqlite::Error> for SqlError {
    fn from(err: rusqlite::Error) -> SqlError {
        use rusqlite::ErrorCode;
        let kind = match err.sqlite_error_code() {
            Some(ErrorCode::ConstraintViolation) => "sql_constraint_violation",
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => "sql_database_locked",
            Some(
                ErrorCode::CannotOpen | ErrorCode::NotADatabase | ErrorCode::PermissionDenied | ErrorCode::ReadOnly,
            ) => "sql_connection",
            Some(ErrorCode::DiskFull) => "sql_insufficient_resources",
            _ => "sql_error",
        };
        SqlError::new(kind, err.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlstates_make_kinds_and_distinct_details() {
        let exists = SqlError::with_state("42P07", "relation exists".into());
        let missing = SqlError::with_state("42P01", "relation missing".into());
        assert_eq!(exists.kind, "sql_syntax_or_access");
        assert_ne!(exists.detail(), missing.detail());
        assert_eq!(kind_of_sqlstate("28P01"), "sql_authentication_failed");
        assert_eq!(kind_of_sqlstate("3D000"), "sql_unknown_database");
        assert_eq!(exists.describe(), "relation exists (SQLSTATE 42P07)");
    }
}
