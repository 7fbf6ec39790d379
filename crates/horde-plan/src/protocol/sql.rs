//! Seed 000's SQL experiment as plan steps: create a two-column table, populate it with random
//! text, select every row, add a hash column, and set it to the SHA-1 of the text, each phase
//! by one of several strategies. Every virtual user of the step's scenario is one of the
//! experiment's threads (one connection each) and works on its share of the rows; the step
//! itself reports the phase's rows, time and the database's own check of the result.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::rows::RowsSource;
use crate::validate::Validator;
use crate::{CheckSource, CoreSource, Plan};

/// SQL's steps: one family of [`crate::Step`].
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum SqlStep {
    /// One phase of seed 000's SQL experiment (`horde sql`): see docs/sql.md.
    SqlWorkload(SqlWorkload),
    /// A SQL statement on one of the plan's `databases`, with checks on its result
    /// (`row_count`, `column`): see docs/sql.md.
    Sql(SqlStatement),
    /// `begin`, `commit` or `rollback` on one of the plan's `databases`.
    SqlTransaction(SqlTransaction),
}

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

/// Words PostgreSQL, MariaDB/MySQL or SQLite reserve, which an unquoted table name cannot be
/// (the experiment's statements name the table unquoted, as the seed's do).
const RESERVED_WORDS: &[&str] = &[
    "ABORT",
    "ACCESSIBLE",
    "ADD",
    "ALL",
    "ALTER",
    "ANALYSE",
    "ANALYZE",
    "AND",
    "ANY",
    "ARRAY",
    "AS",
    "ASC",
    "ASYMMETRIC",
    "AUTHORIZATION",
    "AUTOINCREMENT",
    "BEFORE",
    "BETWEEN",
    "BIGINT",
    "BINARY",
    "BLOB",
    "BOTH",
    "BY",
    "CALL",
    "CASCADE",
    "CASE",
    "CAST",
    "CHANGE",
    "CHAR",
    "CHARACTER",
    "CHECK",
    "COLLATE",
    "COLLATION",
    "COLUMN",
    "COMMIT",
    "CONCURRENTLY",
    "CONDITION",
    "CONSTRAINT",
    "CONTINUE",
    "CONVERT",
    "CREATE",
    "CROSS",
    "CUBE",
    "CURRENT",
    "CURRENT_CATALOG",
    "CURRENT_DATE",
    "CURRENT_ROLE",
    "CURRENT_SCHEMA",
    "CURRENT_TIME",
    "CURRENT_TIMESTAMP",
    "CURRENT_USER",
    "CURSOR",
    "DATABASE",
    "DATABASES",
    "DECIMAL",
    "DECLARE",
    "DEFAULT",
    "DEFERRABLE",
    "DELAYED",
    "DELETE",
    "DENSE_RANK",
    "DESC",
    "DESCRIBE",
    "DETERMINISTIC",
    "DISTINCT",
    "DISTINCTROW",
    "DIV",
    "DO",
    "DOUBLE",
    "DROP",
    "DUAL",
    "EACH",
    "ELSE",
    "ELSEIF",
    "EMPTY",
    "ENCLOSED",
    "END",
    "ESCAPE",
    "ESCAPED",
    "EXCEPT",
    "EXISTS",
    "EXIT",
    "EXPLAIN",
    "FALSE",
    "FETCH",
    "FLOAT",
    "FOR",
    "FORCE",
    "FOREIGN",
    "FREEZE",
    "FROM",
    "FULL",
    "FULLTEXT",
    "FUNCTION",
    "GENERATED",
    "GET",
    "GLOB",
    "GRANT",
    "GROUP",
    "GROUPING",
    "GROUPS",
    "HAVING",
    "IF",
    "IGNORE",
    "ILIKE",
    "IN",
    "INDEX",
    "INFILE",
    "INITIALLY",
    "INNER",
    "INOUT",
    "INSERT",
    "INT",
    "INTEGER",
    "INTERSECT",
    "INTERVAL",
    "INTO",
    "IS",
    "ISNULL",
    "ITERATE",
    "JOIN",
    "KEY",
    "KEYS",
    "KILL",
    "LATERAL",
    "LEADING",
    "LEAVE",
    "LEFT",
    "LIKE",
    "LIMIT",
    "LINEAR",
    "LINES",
    "LOAD",
    "LOCALTIME",
    "LOCALTIMESTAMP",
    "LOCK",
    "LONG",
    "LOOP",
    "MATCH",
    "MOD",
    "NATURAL",
    "NOT",
    "NOTNULL",
    "NULL",
    "NUMERIC",
    "OF",
    "OFFSET",
    "ON",
    "ONLY",
    "OPTIMIZE",
    "OPTION",
    "OR",
    "ORDER",
    "OUT",
    "OUTER",
    "OUTFILE",
    "OVER",
    "OVERLAPS",
    "PARTITION",
    "PLACING",
    "PRECISION",
    "PRIMARY",
    "PROCEDURE",
    "PURGE",
    "RANGE",
    "RANK",
    "READ",
    "REAL",
    "RECURSIVE",
    "REFERENCES",
    "REGEXP",
    "RELEASE",
    "RENAME",
    "REPEAT",
    "REPLACE",
    "REQUIRE",
    "RESTRICT",
    "RETURN",
    "RETURNING",
    "REVOKE",
    "RIGHT",
    "RLIKE",
    "ROLLBACK",
    "ROW",
    "ROWS",
    "ROW_NUMBER",
    "SCHEMA",
    "SCHEMAS",
    "SELECT",
    "SESSION_USER",
    "SET",
    "SHOW",
    "SIGNAL",
    "SIMILAR",
    "SMALLINT",
    "SOME",
    "SQL",
    "SYMMETRIC",
    "SYSTEM",
    "SYSTEM_USER",
    "TABLE",
    "TABLESAMPLE",
    "THEN",
    "TO",
    "TRAILING",
    "TRANSACTION",
    "TRIGGER",
    "TRUE",
    "UNION",
    "UNIQUE",
    "UNLOCK",
    "UNSIGNED",
    "UPDATE",
    "USAGE",
    "USE",
    "USER",
    "USING",
    "VALUES",
    "VARCHAR",
    "VARIADIC",
    "VARYING",
    "VERBOSE",
    "VIEW",
    "VIRTUAL",
    "WHEN",
    "WHERE",
    "WHILE",
    "WINDOW",
    "WITH",
    "WRITE",
    "XOR",
    "ZEROFILL",
];

/// What is wrong with `name` as the experiment's table, if anything: it must be a plain
/// identifier (a letter or `_`, then letters, digits or `_`, at most 48, leaving room for the
/// names derived from it) that no supported database reserves.
///
/// ```
/// assert_eq!(horde_plan::sql_table_name_problem("bulktest"), None);
/// assert!(horde_plan::sql_table_name_problem("Select").unwrap().contains("reserved"));
/// ```
pub fn sql_table_name_problem(name: &str) -> Option<String> {
    let mut chars = name.chars();
    let identifier = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 48;
    if !identifier {
        return Some("not a table name horde uses: a letter or _, then letters, digits or _ (at most 48)".into());
    }
    let upper = name.to_ascii_uppercase();
    RESERVED_WORDS.contains(&upper.as_str()).then(|| {
        format!("{upper} is a reserved word of SQL (in PostgreSQL, MariaDB/MySQL or SQLite): name the table otherwise")
    })
}

/// The widest column the table gets: the seed's `varchar(45)` grows to fit longer text.
pub const MAX_SQL_TEXT_LENGTH: u32 = 4096;

/// A database that scenarios' `sql` steps run statements on (Gatling's JDBC protocol, k6's
/// `sql.open`). A plan may name several.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SqlDatabase {
    /// What steps call it by (`database`); a plan with one database need not name it.
    #[serde(default = "default_database_name")]
    pub name: String,
    /// `sqlite:///path/file.db`, `postgres://user:password@host:port/database` or
    /// `mysql://user:password@host:port/database`.
    pub url: String,
    /// Without it, each virtual user has a connection of its own, opened at its first statement
    /// and closed when it ends. With it, the users share this many connections (split between
    /// the workers), as an application's pool does: a statement waits for a free one, and
    /// that wait is part of its latency; a transaction holds its connection from `begin` to
    /// `commit` or `rollback`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_size: Option<u32>,
}

pub fn default_database_name() -> String {
    "default".to_string()
}

/// Whether a statement's rows are read (`query`) or only counted as changed (`execute`).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SqlStatementKind {
    /// The rows it returns: `row_count` is their number, `column` reads their values.
    Query,
    /// The rows it changed: `row_count` is their number.
    Execute,
}

/// One SQL statement a virtual user runs, timed on its row like a request: prepared once per
/// connection, its `$1`, `$2`... bound to the rendered `params` (as text: the database
/// converts them to the columns' types), its result checked (`row_count`, `column`).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SqlStatement {
    /// Its statistics row.
    pub name: String,
    /// The plan's database it runs on; may be left out when the plan has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<String>,
    pub kind: SqlStatementKind,
    /// One statement, its parameters written `$1`, `$2`... whatever the database (horde
    /// writes them as MySQL's `?` or SQLite's `?1` for those).
    pub sql: String,
    /// Templates, one per placeholder: `params[0]` is `$1`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub params: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<crate::Check>,
}

/// Transaction control on a database's connection.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SqlTransactionAction {
    Begin,
    Commit,
    Rollback,
}

impl SqlTransactionAction {
    /// The statement, and the name of its row.
    pub fn statement(self) -> &'static str {
        match self {
            SqlTransactionAction::Begin => "BEGIN",
            SqlTransactionAction::Commit => "COMMIT",
            SqlTransactionAction::Rollback => "ROLLBACK",
        }
    }
}

/// `begin`, `commit` or `rollback` on the user's connection to a database, timed on a row of
/// that name (`COMMIT`). Between begin and its end, the user's statements on that database
/// are one transaction on one connection, pooled or not.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SqlTransaction {
    pub action: SqlTransactionAction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<String>,
}

/// A `$n` placeholder in a statement: where it is (bytes) and its number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placeholder {
    pub range: std::ops::Range<usize>,
    pub number: u32,
}

/// The `$1`, `$2`... of a statement, in order, outside quoted text, quoted names and comments
/// (`'$1'`, `"$1"`, `` `$1` ``, `-- $1`, `/* $1 */` are not placeholders; neither is a
/// PostgreSQL dollar-quoted body such as `$$ ... $$` or `$tag$ ... $tag$`).
pub fn sql_placeholders(sql: &str) -> Vec<Placeholder> {
    let bytes = sql.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    let skip_until = |from: usize, end: &[u8]| -> usize {
        sql[from..].find(std::str::from_utf8(end).unwrap_or("")).map_or(bytes.len(), |at| from + at + end.len())
    };
    while i < bytes.len() {
        match bytes[i] {
            quote @ (b'\'' | b'"' | b'`') => {
                // A doubled quote inside is the quote itself: the scan resumes after it either way.
                i = skip_until(i + 1, &[quote]);
            }
            b'-' if bytes.get(i + 1) == Some(&b'-') => i = skip_until(i + 2, b"\n"),
            b'/' if bytes.get(i + 1) == Some(&b'*') => i = skip_until(i + 2, b"*/"),
            b'$' => {
                let digits = bytes[i + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
                let after_word = i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
                if digits > 0 && !after_word {
                    let end = i + 1 + digits;
                    if let Ok(number) = sql[i + 1..end].parse::<u32>() {
                        found.push(Placeholder { range: i..end, number });
                    }
                    i = end;
                } else {
                    // A dollar quote: `$$` or `$tag$`, closed by the same.
                    let tag_len =
                        bytes[i + 1..].iter().take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').count();
                    if !after_word && bytes.get(i + 1 + tag_len) == Some(&b'$') {
                        let tag = &sql[i..i + tag_len + 2];
                        i = skip_until(i + tag.len(), tag.as_bytes());
                    } else {
                        i += 1;
                    }
                }
            }
            _ => i += 1,
        }
    }
    found
}

// Validation: every problem with its plan path, in the order the plan reads.

pub(crate) fn validate_step(v: &mut Validator, path: &str, step: &SqlStep) {
    match step {
        SqlStep::SqlWorkload(step) => sql_workload(v, path, step),
        SqlStep::Sql(step) => sql_statement(v, path, step),
        SqlStep::SqlTransaction(step) => sql_database_reference(v, path, step.database.as_deref()),
    }
}

fn database_url(v: &mut Validator, path: &str, url: &str) {
    let scheme = url.split_once(':').map(|(scheme, _)| scheme).unwrap_or("");
    if !matches!(scheme, "sqlite" | "postgres" | "postgresql" | "mysql" | "mariadb") {
        v.error(
            path,
            format!(
                "{url:?} is not a database URL horde knows: sqlite:///path/file.db, \
                 postgres://user:password@host:port/database or mysql://user:password@host:port/database"
            ),
        );
    }
}

pub(crate) fn validate_databases(v: &mut Validator, plan: &Plan) {
    let mut names = std::collections::HashSet::new();
    for (i, database) in plan.databases.iter().enumerate() {
        let path = format!("databases[{i}]");
        if database.name.trim().is_empty() {
            v.error(format!("{path}.name"), "a database needs a name");
        } else if !names.insert(database.name.as_str()) {
            v.error(format!("{path}.name"), format!("duplicate database name {:?}", database.name));
        }
        database_url(v, &format!("{path}.url"), &database.url);
        if database.pool_size == Some(0) {
            v.error(format!("{path}.pool_size"), "must be at least 1 (leave it out for a connection per user)");
        }
    }
}

/// A step's `database`: one of the plan's, or none when the plan has exactly one.
fn sql_database_reference(v: &mut Validator, path: &str, database: Option<&str>) {
    let plan = v.plan;
    let databases: Vec<&str> = plan.databases.iter().map(|d| d.name.as_str()).collect();
    match database {
        None if databases.len() == 1 => {}
        None if databases.is_empty() => v.error(
            path,
            "the plan has no database: add one to `databases` (in Python, setup(..., protocol=[sql.url(\"postgres://...\")]))",
        ),
        None => v.error(
            format!("{path}.database"),
            format!("the plan has several databases: name one of {}", databases.join(", ")),
        ),
        Some(name) if !databases.contains(&name) => {
            let known = if databases.is_empty() { "none".to_string() } else { databases.join(", ") };
            v.error(format!("{path}.database"), format!("no database named {name:?} (the plan's: {known})"));
        }
        Some(_) => {}
    }
}

fn sql_statement(v: &mut Validator, path: &str, step: &crate::SqlStatement) {
    if step.name.trim().is_empty() {
        v.error(format!("{path}.name"), "a statement needs a name (its row)");
    }
    sql_database_reference(v, path, step.database.as_deref());
    if step.sql.trim().is_empty() {
        v.error(format!("{path}.sql"), "no statement");
    }
    let placeholders = crate::sql_placeholders(&step.sql);
    let highest = placeholders.iter().map(|p| p.number).max().unwrap_or(0) as usize;
    if placeholders.iter().any(|p| p.number == 0) {
        v.error(format!("{path}.sql"), "placeholders count from $1");
    }
    if highest > step.params.len() {
        v.error(
            format!("{path}.params"),
            format!("the statement uses ${highest} but has {} param(s)", step.params.len()),
        );
    }
    for (i, param) in step.params.iter().enumerate() {
        v.template(&format!("{path}.params[{i}]"), param);
        if !placeholders.iter().any(|p| p.number as usize == i + 1) {
            v.error(format!("{path}.params[{i}]"), format!("${} is not in the statement", i + 1));
        }
    }
    for (i, check) in step.checks.iter().enumerate() {
        let path = format!("{path}.checks[{i}]");
        match &check.source {
            CheckSource::Rows(RowsSource::RowCount) | CheckSource::Core(CoreSource::ResponseTimeInMillis) => {}
            CheckSource::Rows(RowsSource::Column { name }) if name.trim().is_empty() => {
                v.error(format!("{path}.source.name"), "a column check needs a column name");
            }
            CheckSource::Rows(RowsSource::Column { .. }) if step.kind == crate::SqlStatementKind::Execute => {
                v.error(
                    format!("{path}.source"),
                    "an execute returns no rows: make the statement a query to read its columns",
                );
            }
            CheckSource::Rows(RowsSource::Column { .. }) => {}
            _ => v.error(
                format!("{path}.source"),
                "a statement's result is checked with row_count, column or response_time_in_millis",
            ),
        }
        v.check(&path, check);
    }
}

fn sql_workload(v: &mut Validator, path: &str, step: &crate::SqlWorkload) {
    if step.name.trim().is_empty() {
        v.error(format!("{path}.name"), "must not be empty");
    }
    database_url(v, &format!("{path}.url"), &step.url);
    if let Some(problem) = crate::sql_table_name_problem(&step.table) {
        v.error(format!("{path}.table"), format!("{:?}: {problem}", step.table));
    }
    if !step.phase.strategies().contains(&step.strategy) {
        let names: Vec<&str> = step.phase.strategies().iter().map(|s| s.as_str()).collect();
        v.error(
            format!("{path}.strategy"),
            format!(
                "{} is not a strategy of the {} phase: {}",
                step.strategy.as_str(),
                step.phase.as_str(),
                names.join(", ")
            ),
        );
    }
    if step.rows == 0 {
        v.error(format!("{path}.rows"), "must be more than 0");
    }
    if step.threads == 0 {
        v.error(format!("{path}.threads"), "must be more than 0");
    }
    if step.batch_size == 0 {
        v.error(format!("{path}.batch_size"), "must be more than 0");
    }
    if step.text_length == 0 || step.text_length > crate::MAX_SQL_TEXT_LENGTH {
        v.error(format!("{path}.text_length"), format!("must be from 1 to {}", crate::MAX_SQL_TEXT_LENGTH));
    }
}

#[cfg(test)]
mod placeholder_tests {
    use super::*;

    fn numbers(sql: &str) -> Vec<u32> {
        sql_placeholders(sql).into_iter().map(|p| p.number).collect()
    }

    #[test]
    fn placeholders_outside_quotes_and_comments() {
        assert_eq!(numbers("SELECT * FROM t WHERE a = $1 AND b = $2"), vec![1, 2]);
        assert_eq!(numbers("SELECT '$1', \"$2\", `$3` -- $4\n, $5 /* $6 */ FROM t WHERE x=$2"), vec![5, 2]);
        assert_eq!(numbers("SELECT $$ $1 $$, $tag$ $2 $tag$, $3"), vec![3]);
        assert_eq!(numbers("SELECT 'it''s $1', $10"), vec![10]);
        assert_eq!(numbers("SELECT a$1 FROM t"), Vec::<u32>::new());
        let found = sql_placeholders("x = $12");
        assert_eq!(found[0].range, 4..7);
    }
}
