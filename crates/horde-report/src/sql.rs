//! `horde sql`'s report: first in seed 000's own words ("Inserted 10000000 rows in 0 minutes
//! and 29 seconds (344827.6 rows/second)"), then a table of every phase and strategy with its
//! statements, their latency, what the phase cost and the database's check of it.

use crate::summary::Summary;
use crate::terminal::printable;
use horde_metrics::SqlPhaseReport;
use std::fmt::Write;

/// The phases of the summary, or nothing when it has none.
pub fn render_sql(summary: &Summary) -> String {
    let phases = &summary.sql;
    if phases.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    for phase in phases {
        let _ = writeln!(out, "{}", seed_sentence(phase));
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<9} {:<9} {:>3} {:>10} {:>8} {:>11} {:>10} {:>9} {:>9} {:>8} {:>8} {:>8} {:>7}  check",
        "phase",
        "strategy",
        "thr",
        "rows",
        "seconds",
        "rows/s",
        "statements",
        "p50",
        "p99",
        "cpu s",
        "peak MB",
        "server s",
        "ratio"
    );
    for phase in phases {
        let cells = PhaseCells::new(summary, phase);
        let check = match (&phase.error, &phase.verification) {
            (Some(error), _) => format!("FAILED: {}", printable(error)),
            (None, Some(v)) => format!("{} {} of {}", if v.passed { "ok" } else { "WRONG" }, v.found, v.expected),
            (None, None) => "-".into(),
        };
        let _ = writeln!(
            out,
            "{:<9} {:<9} {:>3} {:>10} {:>8.2} {:>11.1} {:>10} {:>9} {:>9} {:>8} {:>8} {:>8} {:>7}  {}",
            phase.phase,
            phase.strategy,
            phase.threads,
            phase.rows,
            phase.seconds,
            phase.rows_per_second,
            cells.statements,
            cells.p50,
            cells.p99,
            cells.client_cpu,
            cells.peak_mb,
            cells.server_cpu,
            cells.ratio,
            check
        );
    }
    let _ = writeln!(
        out,
        "ratio: rows/s against the database's own bulk load (populate) or the single server-side statement (update)"
    );
    out
}

/// A phase's figures as the console table and report.html show them ("-" for what is unknown).
pub(crate) struct PhaseCells {
    pub statements: u64,
    pub p50: String,
    pub p99: String,
    pub client_cpu: String,
    pub peak_mb: String,
    pub server_cpu: String,
    /// Against the phase's reference strategy (`ratio`).
    pub ratio: String,
}

impl PhaseCells {
    pub fn new(summary: &Summary, phase: &SqlPhaseReport) -> PhaseCells {
        let statements = summary.requests.iter().find(|r| r.name == phase.name);
        let percentile = |p: f64| {
            statements
                .and_then(|r| r.latency.all.percentiles.iter().find(|q| (q.percentile - p).abs() < 1e-9))
                .map(|q| millis(q.value_us))
                .unwrap_or_else(|| "-".into())
        };
        let optional = |v: Option<f64>| v.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into());
        PhaseCells {
            statements: statements.map_or(0, |r| r.count),
            p50: percentile(50.0),
            p99: percentile(99.0),
            client_cpu: optional(phase.client_cpu_seconds),
            peak_mb: phase
                .client_peak_memory_bytes
                .map(|b| format!("{:.1}", b as f64 / 1_048_576.0))
                .unwrap_or_else(|| "-".into()),
            server_cpu: optional(phase.server_cpu_seconds),
            ratio: ratio(phase, &summary.sql).map(|r| format!("{r:.2}x")).unwrap_or_else(|| "-".into()),
        }
    }
}

/// The phase in the seed's words.
pub(crate) fn seed_sentence(phase: &SqlPhaseReport) -> String {
    let whole = phase.seconds.floor() as u64;
    let time = format!("{} minutes and {} seconds", whole / 60, whole % 60);
    let how = format!(
        "[{} {}, {} thread{}]",
        phase.phase,
        phase.strategy,
        phase.threads,
        if phase.threads == 1 { "" } else { "s" }
    );
    let failed = phase.error.as_ref().map(|e| format!(" FAILED: {}", printable(e))).unwrap_or_default();
    match phase.phase.as_str() {
        "populate" => {
            format!("Inserted {} rows in {time} ({:.1} rows/second) {how}{failed}", phase.rows, phase.rows_per_second)
        }
        "select" => format!(
            "Selected {} rows in {time} Avg speed: {:.0} rows/sec {how}{failed}",
            phase.rows, phase.rows_per_second
        ),
        "update" => format!(
            "Updated {} rows in {time} Avg speed: {:.1} rows/sec {how}{failed}",
            phase.rows, phase.rows_per_second
        ),
        "alter" => format!("Altered the table (ADD COLUMN hashval) in {:.3} seconds {how}{failed}", phase.seconds),
        "create" => format!("Created the table in {:.3} seconds {how}{failed}", phase.seconds),
        _ => format!("Dropped the table in {:.3} seconds {how}{failed}", phase.seconds),
    }
}

/// rows/s against the phase's reference: the bulk load for populate, the server's single
/// statement for update.
fn ratio(phase: &SqlPhaseReport, phases: &[SqlPhaseReport]) -> Option<f64> {
    let reference = match phase.phase.as_str() {
        "populate" => "bulk",
        "update" => "server",
        _ => return None,
    };
    let base = phases.iter().find(|p| p.phase == phase.phase && p.strategy == reference && p.error.is_none())?;
    (base.rows_per_second > 0.0).then(|| phase.rows_per_second / base.rows_per_second)
}

fn millis(us: u64) -> String {
    // Times are whole microseconds: a SQLite statement served from its cache takes less.
    if us == 0 {
        "<1us".to_string()
    } else if us < 1_000 {
        format!("{us}us")
    } else if us >= 10_000 {
        format!("{:.0}ms", us as f64 / 1000.0)
    } else {
        format!("{:.2}ms", us as f64 / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(phase: &str, strategy: &str, rows: u64, seconds: f64) -> SqlPhaseReport {
        SqlPhaseReport {
            name: format!("{phase} {strategy}"),
            phase: phase.into(),
            strategy: strategy.into(),
            database: "SQLite".into(),
            threads: 15,
            started_ms: 0,
            rows,
            seconds,
            rows_per_second: rows as f64 / seconds,
            client_cpu_seconds: None,
            client_peak_memory_bytes: None,
            server_cpu_seconds: None,
            verification: None,
            error: None,
        }
    }

    #[test]
    fn the_seed_reads_its_own_sentence() {
        let sentence = seed_sentence(&phase("populate", "batch", 10_000_000, 29.0));
        assert!(
            sentence.starts_with("Inserted 10000000 rows in 0 minutes and 29 seconds (344827.6 rows/second)"),
            "{sentence}"
        );
        let sentence = seed_sentence(&phase("update", "row", 10_000_000, 1834.2));
        assert!(
            sentence.starts_with("Updated 10000000 rows in 30 minutes and 34 seconds Avg speed: 5452.0 rows/sec"),
            "{sentence}"
        );
    }

    #[test]
    fn ratios_are_against_the_bulk_path_and_the_server() {
        let phases = vec![
            phase("populate", "batch", 100, 2.0),
            phase("populate", "bulk", 100, 1.0),
            phase("update", "row", 100, 10.0),
        ];
        assert_eq!(ratio(&phases[0], &phases), Some(0.5));
        assert_eq!(ratio(&phases[2], &phases), None);
    }
}
