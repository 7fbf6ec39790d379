//! The result file of `horde bench`: versioned JSON (docs/bench.schema.json) holding the
//! machine, the configuration and every trial's iterations, so tables, exports and comparisons
//! are rendered from saved results alone.

use super::machine::Machine;
use super::stats::CellStats;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const FORMAT: &str = "horde-bench";
pub const VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct BenchResult {
    /// Always "horde-bench".
    pub format: String,
    pub version: u32,
    /// RFC 3339 UTC.
    pub started_at: String,
    /// `completed`, `interrupted` (Ctrl-C) or `failed` (a command or worker failed): in the last
    /// two, the trials measured until then are kept.
    pub status: String,
    pub machine: Machine,
    pub config: Config,
    pub cells: Vec<Cell>,
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Config {
    /// The benchmark file, command or URL.
    pub source: String,
    pub trials: usize,
    pub warmup_iterations: usize,
    pub measure_iterations: usize,
    /// The target length of one iteration of a Python function (its loops are calibrated to it).
    pub iteration_time_ms: f64,
    pub confidence: f64,
    /// The seed of the rounds' shuffles.
    pub seed: u64,
    /// The resolution of the timers, in nanoseconds: Rust's monotonic clock (and Python's
    /// perf_counter when a function ran).
    pub timer_floor_ns: f64,
    /// The median wall time of `sh -c true` on this machine, in ms: what starting a command
    /// costs, included in (not subtracted from) a command's Score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_floor_ms: Option<f64>,
}

/// One benchmark at one combination of parameter values.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Cell {
    pub benchmark: String,
    /// `function`, `command` or `http`.
    pub kind: String,
    /// Parameter names in their declared order, and their values in this cell.
    pub param_names: Vec<String>,
    pub params: serde_json::Map<String, serde_json::Value>,
    /// JMH's modes: `avgt` (time per operation, lower is better) or `thrpt` (higher is better).
    pub mode: String,
    /// `ms/op`, `us/op`, `ops/s`...
    pub unit: String,
    /// What the figure is (`wall time per call`, `mean latency`, `p99 latency`, `throughput`).
    pub metric: String,
    /// Calls per timed iteration of a Python function (calibrated once per cell).
    pub loops: Option<u64>,
    pub trials: Vec<Trial>,
    /// The statistics over the trials (absent when none finished).
    pub stats: Option<CellStats>,
}

impl Cell {
    /// `log_rounds=10, cost=2`, in declared order.
    pub fn params_text(&self) -> String {
        self.param_names.iter().map(|n| format!("{n}={}", value_text(&self.params[n]))).collect::<Vec<_>>().join(", ")
    }

    /// The key of a cell across files: benchmark and parameters.
    pub fn key(&self) -> String {
        format!("{} ({})", self.benchmark, self.params_text())
    }

    pub fn trial_means(&self) -> Vec<f64> {
        self.trials.iter().filter(|t| !t.iterations.is_empty()).map(|t| t.mean).collect()
    }

    pub fn higher_is_better(&self) -> bool {
        self.mode == "thrpt"
    }
}

pub fn value_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One fresh process (or engine run) of one cell.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Trial {
    /// The round it ran in (cells are shuffled anew each round).
    pub round: usize,
    /// Warm-up iterations, in the cell's unit: measured, then discarded.
    pub warmup: Vec<f64>,
    /// Measured iterations, in the cell's unit.
    pub iterations: Vec<f64>,
    pub mean: f64,
    /// A command's user and system CPU time per run, and the peak resident memory of its
    /// process (sampled every few milliseconds), averaged over the measured runs.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cpu_user_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cpu_system_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub peak_rss_kib: Option<u64>,
}

impl BenchResult {
    pub fn read(path: &std::path::Path) -> Result<BenchResult, String> {
        let text = horde_plan::input::read_text_bounded(path, 256 * 1024 * 1024)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
        if value.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
            return Err(format!("{}: not a horde bench result (no \"format\": \"{FORMAT}\")", path.display()));
        }
        let version = value.get("version").and_then(|v| v.as_u64()).unwrap_or(0);
        if version != u64::from(VERSION) {
            return Err(format!("{}: result version {version}; this horde reads version {VERSION}", path.display()));
        }
        serde_json::from_value(value).map_err(|e| format!("{}: {e}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed schema must describe the types. HORDE_UPDATE_SCHEMAS=1 rewrites it.
    #[test]
    fn committed_json_schema_matches_the_types() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/bench.schema.json");
        let schema = serde_json::to_value(schemars::schema_for!(BenchResult)).expect("schema serializes");
        let generated = serde_json::to_string_pretty(&schema).unwrap() + "\n";
        if std::env::var_os("HORDE_UPDATE_SCHEMAS").is_some() {
            std::fs::write(path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            committed == generated,
            "docs/bench.schema.json is stale: run HORDE_UPDATE_SCHEMAS=1 cargo test -p horde-cli"
        );
    }
}
