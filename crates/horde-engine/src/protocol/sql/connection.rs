//! A user's connection to one of the databases, and the few operations the SQL steps are made
//! of. Each database's driver is a file of its own; this enum only dispatches, statically.

use super::database::{Database, DatabaseKind};
use super::error::SqlError;
use super::mysql::MyConnection;
use super::postgres::PgConnection;
use super::sqlite::LiteConnection;
use bytes::Bytes;
use tokio::time::Instant;

/// A statement parameter: text for a text column, an integer (a key), or text the database
/// converts to whatever type the placeholder has (a scenario's rendered templates).
#[derive(Debug, Clone, Copy)]
pub enum Param<'a> {
    Text(&'a str),
    Int(i64),
    Untyped(&'a str),
}

/// What a scenario's statement returned: how many rows (returned by a query, changed by an
/// execute), and the values of the columns its checks read, one per row (`None`: SQL NULL).
/// Other columns are never converted.
#[derive(Debug, Default)]
pub struct StatementResult {
    pub row_count: u64,
    /// In the order of the statement's wanted columns; `None` when the result has no column of
    /// that name.
    pub columns: Vec<Option<Vec<Option<String>>>>,
    /// The result's column names, kept only when a wanted one is missing (for the message).
    pub column_names: Vec<String>,
}

impl StatementResult {
    /// A result ready to take the values of `wanted` columns, found at `indices` of the
    /// result's (`None`: not in it).
    pub fn for_columns(indices: &[Option<usize>], names: impl FnOnce() -> Vec<String>) -> StatementResult {
        let columns = indices.iter().map(|index| index.map(|_| Vec::new())).collect();
        let column_names = if indices.iter().any(Option::is_none) { names() } else { Vec::new() };
        StatementResult { row_count: 0, columns, column_names }
    }

    /// Counts a row and keeps its values of the wanted columns, each read by `value` from the
    /// driver's row at the column's index there.
    pub fn add_row<E>(
        &mut self,
        indices: &[Option<usize>],
        mut value: impl FnMut(usize) -> Result<Option<String>, E>,
    ) -> Result<(), E> {
        self.row_count += 1;
        for (values, index) in self.columns.iter_mut().zip(indices) {
            if let (Some(values), Some(index)) = (values, *index) {
                values.push(value(index)?);
            }
        }
        Ok(())
    }
}

/// One statement's time, for statements a driver runs several of at once (pipelining).
#[derive(Debug, Clone, Copy)]
pub struct StatementTiming {
    pub started: Instant,
    pub duration_us: u64,
    pub ok: bool,
}

impl StatementTiming {
    pub fn since(started: Instant, ok: bool) -> StatementTiming {
        StatementTiming { started, duration_us: started.elapsed().as_micros() as u64, ok }
    }
}

pub enum Connection {
    Postgres(PgConnection),
    MySql(MyConnection),
    Sqlite(LiteConnection),
}

impl Connection {
    pub async fn connect(database: &Database) -> Result<Connection, SqlError> {
        Ok(match database {
            Database::Postgres { config, tls } => Connection::Postgres(PgConnection::connect(config, tls).await?),
            Database::MySql { opts, .. } => Connection::MySql(MyConnection::connect(opts).await?),
            Database::Sqlite { path, writer } => Connection::Sqlite(LiteConnection::open(path, writer.clone())?),
        })
    }

    pub fn kind(&self) -> DatabaseKind {
        match self {
            Connection::Postgres(_) => DatabaseKind::Postgres,
            Connection::MySql(_) => DatabaseKind::MySql,
            Connection::Sqlite(_) => DatabaseKind::Sqlite,
        }
    }

    /// Runs a statement without parameters; the rows it changed.
    pub async fn execute(&mut self, sql: &str) -> Result<u64, SqlError> {
        match self {
            Connection::Postgres(c) => c.execute(sql).await,
            Connection::MySql(c) => c.execute(sql).await,
            Connection::Sqlite(c) => c.execute(sql).await,
        }
    }

    /// The first column of the first row, as an integer (a count, a key).
    pub async fn query_i64(&mut self, sql: &str) -> Result<Option<i64>, SqlError> {
        match self {
            Connection::Postgres(c) => c.query_i64(sql).await,
            Connection::MySql(c) => c.query_i64(sql).await,
            Connection::Sqlite(c) => c.query_i64(sql),
        }
    }

    /// Runs a statement prepared once per connection; the rows it changed.
    pub async fn exec_prepared(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, SqlError> {
        match self {
            Connection::Postgres(c) => c.exec_prepared(sql, params).await,
            Connection::MySql(c) => c.exec_prepared(sql, params).await,
            Connection::Sqlite(c) => c.exec_prepared(sql, params).await,
        }
    }

    /// A scenario's statement: prepared once per connection, its rows counted and the wanted
    /// columns' values read (a query), or the rows it changed counted (an execute).
    pub async fn run_statement(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        kind: horde_plan::SqlStatementKind,
        wanted: &[String],
    ) -> Result<StatementResult, SqlError> {
        match self {
            Connection::Postgres(c) => c.run_statement(sql, params, kind, wanted).await,
            Connection::MySql(c) => c.run_statement(sql, params, kind, wanted).await,
            Connection::Sqlite(c) => c.run_statement(sql, params, kind, wanted).await,
        }
    }

    /// Runs a one-parameter statement once per value, all in flight at once (PostgreSQL only:
    /// the others' protocols answer one statement before taking the next).
    pub async fn exec_pipelined(
        &mut self,
        sql: &str,
        rows: &[Param<'_>],
        timings: &mut Vec<StatementTiming>,
    ) -> Result<u64, SqlError> {
        match self {
            Connection::Postgres(c) => c.exec_pipelined(sql, rows, timings).await,
            _ => Err(unsupported(self.kind(), "pipelining")),
        }
    }

    /// Counts the rows of a query, and the bytes of their second column, streamed.
    pub async fn stream_count(&mut self, sql: &str, params: &[Param<'_>]) -> Result<(u64, u64), SqlError> {
        match self {
            Connection::Postgres(c) => c.stream_count(sql, params).await,
            Connection::MySql(c) => c.stream_count(sql, params).await,
            Connection::Sqlite(c) => c.stream_count(sql, params),
        }
    }

    /// The (id, text) rows of a query, appended to `out`.
    pub async fn query_pairs(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        out: &mut Vec<(i64, String)>,
    ) -> Result<(), SqlError> {
        match self {
            Connection::Postgres(c) => c.query_pairs(sql, params, out).await,
            Connection::MySql(c) => c.query_pairs(sql, params, out).await,
            Connection::Sqlite(c) => c.query_pairs(sql, params, out),
        }
    }

    /// The database's own bulk path for tab-separated lines: COPY (PostgreSQL), LOAD DATA
    /// LOCAL INFILE (MariaDB, MySQL). SQLite has none: its fastest path is one transaction.
    pub async fn bulk_load(
        &mut self,
        table: &str,
        columns: &str,
        data: Box<dyn Iterator<Item = Bytes> + Send>,
    ) -> Result<u64, SqlError> {
        match self {
            Connection::Postgres(c) => c.copy_in(table, columns, data).await,
            Connection::MySql(c) => c.load_data(table, columns, data).await,
            Connection::Sqlite(_) => Err(unsupported(DatabaseKind::Sqlite, "a bulk load statement")),
        }
    }
}

fn unsupported(kind: DatabaseKind, what: &str) -> SqlError {
    SqlError::new("sql_unsupported", format!("{} has no {what}", kind.name()))
}
