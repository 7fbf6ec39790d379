//! What one phase of `horde sql` (seed 000's experiment) did: rows, time, cost and the
//! database's own check of the result. The last of the phase's users to finish hands it to its
//! worker; the summary keeps one per phase and strategy, in the order they ran.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One phase by one strategy.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct SqlPhaseReport {
    /// The step's name, which is also the statistics row of its statements (`populate batch`).
    pub name: String,
    /// create, populate, select, alter, update, drop.
    pub phase: String,
    /// How: row, row-txn, pipeline, batch, bulk, in-place, rebuild, temp-join, swap, server,
    /// single.
    pub strategy: String,
    /// PostgreSQL, MariaDB/MySQL or SQLite.
    pub database: String,
    /// Connections that shared the rows.
    pub threads: u32,
    /// When the phase's clock started, in milliseconds since the run's start: the summary
    /// keeps the phases in this order.
    pub started_ms: u64,
    /// Rows inserted, read or updated.
    pub rows: u64,
    /// From the first connection's start to the last one's end, preparation (emptying the
    /// table, resetting hashes) and the check excluded.
    pub seconds: f64,
    pub rows_per_second: f64,
    /// CPU time of horde's process during the phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cpu_seconds: Option<f64>,
    /// horde's peak resident memory during the phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_peak_memory_bytes: Option<u64>,
    /// CPU time of the database server (its processes on this machine) during the phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_seconds: Option<f64>,
    /// The database's own count after the phase; absent when the phase failed first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<SqlVerification>,
    /// The first failure, when the phase failed: the run stops after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A count the database made after a phase, against what the phase should have left.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct SqlVerification {
    /// What was counted: `rows`, `rows read`, `rows whose hashval is NULL`,
    /// `rows whose hashval = SHA-1(text)`.
    pub counted: String,
    pub expected: u64,
    pub found: u64,
    pub passed: bool,
}

/// The SQL phase running now, for the progress line: rows handled so far of those expected.
#[derive(Debug, Clone, PartialEq)]
pub struct SqlProgress {
    pub phase: std::sync::Arc<str>,
    pub rows: u64,
    pub expected: u64,
    /// Still preparing (untimed): emptying the table, resetting the hashes.
    pub preparing: bool,
}
