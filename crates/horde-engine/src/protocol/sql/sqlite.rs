//! SQLite, bundled (rusqlite): an embedded library, so a statement is work on the user's own
//! worker thread, like computing a hash. Callers keep each call short (a page, a batch, one
//! transaction) and yield between calls, so the worker's other tasks (snapshots, a stop) run.

use super::connection::{Param, StatementResult};
use super::error::SqlError;
use horde_plan::SqlStatementKind;
use rusqlite::{params_from_iter, Connection, ToSql};
use sha1::Digest;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

pub struct LiteConnection {
    conn: Connection,
    /// The run's turn to write to this file (see `Database::Sqlite`).
    writer: Arc<tokio::sync::Mutex<()>>,
    /// Held from BEGIN to COMMIT or ROLLBACK.
    transaction: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(match *self {
            // An untyped text compared with a number column takes the column's affinity.
            Param::Text(text) | Param::Untyped(text) => {
                rusqlite::types::ToSqlOutput::Borrowed(rusqlite::types::ValueRef::Text(text.as_bytes()))
            }
            Param::Int(n) => rusqlite::types::ToSqlOutput::Owned(rusqlite::types::Value::Integer(n)),
        })
    }
}

impl LiteConnection {
    pub fn open(path: &Path, writer: Arc<tokio::sync::Mutex<()>>) -> Result<LiteConnection, SqlError> {
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE
            | rusqlite::OpenFlags::SQLITE_OPEN_CREATE
            | rusqlite::OpenFlags::SQLITE_OPEN_URI
            | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)
            .map_err(|e| SqlError::new("sql_connection", format!("cannot open {}: {e}", path.display())))?;
        // Another thread's connection may hold the write lock for a transaction's time.
        conn.busy_timeout(Duration::from_secs(30))?;
        // SQLite has no SHA-1 of its own: the experiment's check needs one in SQL.
        conn.create_scalar_function(
            "sha1",
            1,
            rusqlite::functions::FunctionFlags::SQLITE_UTF8 | rusqlite::functions::FunctionFlags::SQLITE_DETERMINISTIC,
            |ctx| {
                let text = ctx.get_raw(0);
                Ok(match text {
                    rusqlite::types::ValueRef::Null => None,
                    rusqlite::types::ValueRef::Text(bytes) | rusqlite::types::ValueRef::Blob(bytes) => {
                        Some(hex_sha1(bytes))
                    }
                    other => Some(hex_sha1(format!("{other:?}").as_bytes())),
                })
            },
        )?;
        Ok(LiteConnection { conn, writer, transaction: None })
    }

    /// Statements that may write take the run's turn on the file: for the statement, or from
    /// BEGIN to the transaction's end.
    pub async fn execute(&mut self, sql: &str) -> Result<u64, SqlError> {
        let first_word = sql.split_whitespace().next().unwrap_or("").to_ascii_uppercase();
        let begins = first_word == "BEGIN";
        if begins && self.transaction.is_none() {
            self.transaction = Some(self.writer.clone().lock_owned().await);
        }
        let _turn = match self.transaction {
            Some(_) => None,
            None => Some(self.writer.lock().await),
        };
        let result = self.conn.execute_batch(sql);
        // Out of a transaction (committed, rolled back, or never begun): the turn is over.
        if self.conn.is_autocommit() {
            self.transaction = None;
        }
        result?;
        Ok(self.conn.changes())
    }

    /// A scenario's statement. One that writes takes the run's turn on the file (unless the
    /// connection's transaction holds it already); a read does not need it.
    pub async fn run_statement(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        kind: SqlStatementKind,
        wanted: &[String],
    ) -> Result<StatementResult, SqlError> {
        let mut statement = self.conn.prepare_cached(sql)?;
        let _turn = match (statement.readonly(), &self.transaction) {
            (false, None) => Some(self.writer.lock().await),
            _ => None,
        };
        if kind == SqlStatementKind::Execute {
            let row_count = statement.execute(params_from_iter(params.iter()))? as u64;
            return Ok(StatementResult { row_count, ..StatementResult::default() });
        }
        let indices: Vec<Option<usize>> =
            wanted.iter().map(|name| statement.column_names().position(|c| c == name)).collect();
        let mut result =
            StatementResult::for_columns(&indices, || statement.column_names().map(|name| name.to_string()).collect());
        let mut rows = statement.query(params_from_iter(params.iter()))?;
        while let Some(row) = rows.next()? {
            result.add_row(&indices, |index| Ok::<_, SqlError>(text_of(row.get_ref(index)?)))?;
        }
        Ok(result)
    }

    pub fn query_i64(&mut self, sql: &str) -> Result<Option<i64>, SqlError> {
        let mut statement = self.conn.prepare_cached(sql)?;
        let mut rows = statement.query([])?;
        match rows.next()? {
            Some(row) => Ok(row.get::<_, Option<i64>>(0)?),
            None => Ok(None),
        }
    }

    pub async fn exec_prepared(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, SqlError> {
        let _turn = match self.transaction {
            Some(_) => None,
            None => Some(self.writer.lock().await),
        };
        let mut statement = self.conn.prepare_cached(sql)?;
        Ok(statement.execute(params_from_iter(params.iter()))? as u64)
    }

    pub fn stream_count(&mut self, sql: &str, params: &[Param<'_>]) -> Result<(u64, u64), SqlError> {
        let mut statement = self.conn.prepare_cached(sql)?;
        let mut rows = statement.query(params_from_iter(params.iter()))?;
        let (mut count, mut bytes) = (0u64, 0u64);
        while let Some(row) = rows.next()? {
            count += 1;
            if let rusqlite::types::ValueRef::Text(text) = row.get_ref(1)? {
                bytes += text.len() as u64;
            }
        }
        Ok((count, bytes))
    }

    pub fn query_pairs(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        out: &mut Vec<(i64, String)>,
    ) -> Result<(), SqlError> {
        let mut statement = self.conn.prepare_cached(sql)?;
        let mut rows = statement.query(params_from_iter(params.iter()))?;
        while let Some(row) = rows.next()? {
            let text: Option<String> = row.get(1)?;
            out.push((row.get(0)?, text.unwrap_or_default()));
        }
        Ok(())
    }
}

/// A value as the `sqlite3` shell shows it; `None` for NULL.
fn text_of(value: rusqlite::types::ValueRef<'_>) -> Option<String> {
    use rusqlite::types::ValueRef;
    Some(match value {
        ValueRef::Null => return None,
        ValueRef::Integer(n) => n.to_string(),
        ValueRef::Real(x) => x.to_string(),
        ValueRef::Text(bytes) | ValueRef::Blob(bytes) => String::from_utf8_lossy(bytes).into_owned(),
    })
}

/// Lowercase hex SHA-1, as MySQL's `SHA1()` and pgcrypto's `encode(digest(...), 'hex')` give it.
pub fn hex_sha1(bytes: &[u8]) -> String {
    let digest = sha1::Sha1::digest(bytes);
    let mut hex = String::with_capacity(40);
    for byte in digest {
        use std::fmt::Write;
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}
