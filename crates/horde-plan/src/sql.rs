//! Seed 000's SQL experiment as plan steps: create a two-column table, populate it with random
//! text, select every row, add a hash column, and set it to the SHA-1 of the text, each phase
//! by one of several strategies. Every virtual user of the step's scenario is one of the
//! experiment's threads (one connection each) and works on its share of the rows; the step
//! itself reports the phase's rows, time and the database's own check of the result.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The phases, in the order the experiment runs them.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SqlPhase {
    /// `CREATE TABLE` of the two columns (id, text); a table of that name already there is an
    /// error.
    Create,
    /// Insert `rows` rows of random text.
    Populate,
    /// Read every row, streamed: the client's memory stays flat.
    Select,
    /// Add the hash column (`hashval`).
    Alter,
    /// Set every row's hash to the SHA-1 of its text.
    Update,
    /// Drop the table (and what a strategy left behind).
    Drop,
}

impl SqlPhase {
    pub fn as_str(self) -> &'static str {
        match self {
            SqlPhase::Create => "create",
            SqlPhase::Populate => "populate",
            SqlPhase::Select => "select",
            SqlPhase::Alter => "alter",
            SqlPhase::Update => "update",
            SqlPhase::Drop => "drop",
        }
    }

    /// The strategies this phase has, the first its default.
    pub fn strategies(self) -> &'static [SqlStrategy] {
        use SqlStrategy::*;
        match self {
            SqlPhase::Create | SqlPhase::Select | SqlPhase::Drop => &[Single],
            SqlPhase::Populate => &[Batch, Row, RowTxn, Pipeline, Bulk],
            SqlPhase::Alter => &[InPlace, Rebuild],
            SqlPhase::Update => &[Server, Row, RowTxn, TempJoin, Swap],
        }
    }
}

/// How a phase does its work.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SqlStrategy {
    /// The phase has one way (create, select, drop).
    Single,
    /// One statement per row, each its own transaction (autocommit): the seed's first try.
    Row,
    /// One statement per row, in transactions of `batch_size` rows.
    RowTxn,
    /// One statement per row, `batch_size` of them in flight on the connection at once
    /// (PostgreSQL's extended protocol; MySQL's has no pipelining).
    Pipeline,
    /// Multi-row statements of `batch_size` rows (`INSERT ... VALUES (...), (...)`): the
    /// seed's bulk inserter.
    Batch,
    /// The database's own bulk path: `COPY FROM STDIN` (PostgreSQL), `LOAD DATA LOCAL INFILE`
    /// (MariaDB, MySQL), one transaction of prepared inserts (SQLite).
    Bulk,
    /// `ALTER TABLE ... ADD COLUMN`, as the database does it (metadata only, today).
    InPlace,
    /// `ALTER TABLE ... ADD COLUMN` forcing a rewrite of every row, as MySQL 5.6 did.
    Rebuild,
    /// Hashes computed by the client, loaded in bulk into a temporary table, then one
    /// `UPDATE ... JOIN` per thread.
    TempJoin,
    /// Hashes computed by the client, the rows copied with them into a new table in bulk, which
    /// then replaces the old one (drop and rename).
    Swap,
    /// One statement computing every hash in the server: the ceiling.
    Server,
}

impl SqlStrategy {
    pub fn as_str(self) -> &'static str {
        match self {
            SqlStrategy::Single => "single",
            SqlStrategy::Row => "row",
            SqlStrategy::RowTxn => "row-txn",
            SqlStrategy::Pipeline => "pipeline",
            SqlStrategy::Batch => "batch",
            SqlStrategy::Bulk => "bulk",
            SqlStrategy::InPlace => "in-place",
            SqlStrategy::Rebuild => "rebuild",
            SqlStrategy::TempJoin => "temp-join",
            SqlStrategy::Swap => "swap",
            SqlStrategy::Server => "server",
        }
    }

    /// The name as the command line spells it (`row-txn`), or the plan does (`row_txn`).
    pub fn parse(name: &str) -> Option<SqlStrategy> {
        use SqlStrategy::*;
        [Single, Row, RowTxn, Pipeline, Batch, Bulk, InPlace, Rebuild, TempJoin, Swap, Server]
            .into_iter()
            .find(|s| s.as_str() == name || s.as_str().replace('-', "_") == name)
    }
}

/// One phase of the experiment by one strategy. Every user of the scenario (they start at
/// once: `at_once_users(threads)`) takes its share of the rows on a connection of its own; the
/// phase is timed from the first user's start to the last one's end, and then checked by the
/// database (row count, hashes that equal SHA-1 of the text).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SqlWorkload {
    /// The statistics row of the phase's statements and the name of its report
    /// (`populate batch`).
    pub name: String,
    /// `sqlite:///path/file.db` (or `sqlite::memory:`), `postgres://user:password@host:port/database`,
    /// `mysql://user:password@host:port/database` (MariaDB and MySQL).
    pub url: String,
    pub table: String,
    pub phase: SqlPhase,
    #[serde(default = "default_strategy")]
    pub strategy: SqlStrategy,
    /// Rows of the table: what populate inserts, and what the later phases expect.
    pub rows: u64,
    /// The users of the step's scenario, which share the rows between them.
    pub threads: u32,
    /// Rows per multi-row statement, per transaction, in flight, or per page read.
    #[serde(default = "default_batch_size")]
    pub batch_size: u32,
    /// Characters of random text per row (the seed's 45).
    #[serde(default = "default_text_length")]
    pub text_length: u32,
}

fn default_strategy() -> SqlStrategy {
    SqlStrategy::Single
}

fn default_batch_size() -> u32 {
    10_000
}

fn default_text_length() -> u32 {
    45
}

/// The widest column the table gets: the seed's `varchar(45)` grows to fit longer text.
pub const MAX_SQL_TEXT_LENGTH: u32 = 4096;
