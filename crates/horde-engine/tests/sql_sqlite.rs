//! Seed 000's experiment against SQLite (embedded: no server to start): every phase and
//! strategy leaves what it should, checked by the database and again by this test's own
//! connection; a phase that fails stops the run and says why.

use horde_engine::{lower, run, RunControl};
use horde_metrics::{RunStatus, Sink, SqlPhaseReport, Totals};
use horde_plan::Plan;
use std::sync::Arc;

struct Quiet;
impl Sink for Quiet {
    fn interval(&mut self, _: &mut Totals) {}
    fn finish(&mut self, _: &mut Totals, _: RunStatus) {}
}

fn step(name: &str, url: &str, phase: &str, strategy: &str, threads: u32, rows: u64) -> String {
    format!(
        r#"{{"name": "{name}", "injection": [{{"type": "at_once_users", "users": {threads}}}], "steps": [
            {{"type": "sql_workload", "name": "{name}", "url": "{url}", "table": "bulktest", "phase": "{phase}",
              "strategy": "{strategy}", "rows": {rows}, "threads": {threads}, "batch_size": 700, "text_length": 45}}]}}"#
    )
}

fn run_phases(url: &str, phases: &[(&str, &str, u32)], rows: u64) -> (Totals, RunStatus) {
    let mut scenarios = Vec::new();
    for (i, (phase, strategy, threads)) in phases.iter().enumerate() {
        let mut scenario = step(&format!("{phase} {strategy} {i}"), url, phase, strategy, *threads, rows);
        if i > 0 {
            let previous = format!("{} {} {}", phases[i - 1].0, phases[i - 1].1, i - 1);
            scenario = scenario.replacen("\"steps\"", &format!("\"after\": \"{previous}\", \"steps\""), 1);
        }
        scenarios.push(scenario);
    }
    let json = format!(
        r#"{{"version": 1, "name": "sql", "options": {{"workers": 2, "seed": 7}}, "scenarios": [{}]}}"#,
        scenarios.join(",")
    );
    let plan = Plan::from_json(&json).unwrap_or_else(|e| panic!("{e:?}"));
    let program = Arc::new(lower(&plan).unwrap_or_else(|e| panic!("{e:?}")));
    let result = run(program, &RunControl::new(), &mut Quiet);
    (result.totals, result.status)
}

fn count(path: &std::path::Path, sql: &str) -> i64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row(sql, [], |row| row.get(0)).unwrap()
}

fn phase<'a>(totals: &'a Totals, prefix: &str) -> &'a SqlPhaseReport {
    totals.sql_phases.iter().find(|p| p.name.starts_with(prefix)).unwrap_or_else(|| panic!("no phase {prefix}"))
}

#[test]
fn every_strategy_leaves_every_row_with_its_hash() {
    let dir = tempdir();
    let db = dir.join("bench.db");
    let url = format!("sqlite://{}", db.display());
    let rows = 5_003;
    let phases = [
        ("create", "single", 1),
        ("populate", "row_txn", 3),
        ("populate", "batch", 2),
        ("populate", "bulk", 3),
        ("select", "single", 3),
        ("alter", "rebuild", 1),
        ("update", "row_txn", 3),
        ("update", "temp_join", 3),
        ("update", "swap", 2),
        ("update", "server", 1),
    ];
    let (totals, status) = run_phases(&url, &phases, rows);
    assert_eq!(status, RunStatus::Completed, "{:?}", totals.sql_phases);
    assert_eq!(totals.sql_phases.len(), phases.len());
    // In the order they ran.
    let order: Vec<&str> = totals.sql_phases.iter().map(|p| p.phase.as_str()).collect();
    assert_eq!(
        order,
        ["create", "populate", "populate", "populate", "select", "alter", "update", "update", "update", "update"]
    );
    for report in &totals.sql_phases {
        assert!(report.error.is_none(), "{report:?}");
        let verification = report.verification.as_ref().unwrap();
        assert!(verification.passed, "{report:?}");
        if report.phase != "create" {
            assert_eq!(report.rows, rows, "{report:?}");
        }
    }
    // Statements on each row: batch inserts of 700 rows per statement.
    let batch = totals.requests.iter().find(|(n, _)| n.starts_with("populate batch")).unwrap();
    assert_eq!(batch.1.ok.len(), 8, "two threads: 2502 and 2501 rows, 4 statements of at most 700 each");
    // This test's own connection agrees with the phases' checks.
    assert_eq!(count(&db, "SELECT count(*) FROM bulktest"), rows as i64);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mut statement = conn.prepare("SELECT text, hashval FROM bulktest").unwrap();
    let mut checked = 0;
    for pair in statement.query_map([], |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))).unwrap() {
        let (text, hash) = pair.unwrap();
        assert_eq!(text.len(), 45);
        assert_eq!(hash, sha1_hex(&text));
        checked += 1;
    }
    assert_eq!(checked, rows);
    assert!(phase(&totals, "update server").rows_per_second > 0.0);
    assert!(phase(&totals, "populate bulk").client_peak_memory_bytes.is_some());
}

/// Autocommit waits for the disk at every row: a few rows only.
#[test]
fn row_by_row_strategies_share_one_writer() {
    let dir = tempdir();
    let db = dir.join("rows.db");
    let url = format!("sqlite://{}", db.display());
    let phases = [("create", "single", 1), ("populate", "row", 3), ("alter", "in_place", 1), ("update", "row", 3)];
    let (totals, status) = run_phases(&url, &phases, 120);
    assert_eq!(status, RunStatus::Completed, "{:?}", totals.sql_phases);
    assert!(
        totals.sql_phases.iter().all(|p| p.verification.as_ref().is_some_and(|v| v.passed)),
        "{:?}",
        totals.sql_phases
    );
    let inserts = totals.requests.iter().find(|(n, _)| n.starts_with("populate row")).unwrap();
    assert_eq!(inserts.1.ok.len(), 120, "one statement per row");
    assert_eq!(count(&db, "SELECT count(*) FROM bulktest WHERE hashval IS NOT NULL"), 120);
}

#[test]
fn a_table_that_exists_fails_the_create_phase_and_stops_the_run() {
    let dir = tempdir();
    let db = dir.join("exists.db");
    rusqlite::Connection::open(&db).unwrap().execute_batch("CREATE TABLE bulktest (x INTEGER)").unwrap();
    let url = format!("sqlite://{}", db.display());
    let (totals, status) = run_phases(&url, &[("create", "single", 1), ("populate", "batch", 2)], 100);
    assert_eq!(status, RunStatus::Stopped);
    assert_eq!(totals.sql_phases.len(), 1, "populate never ran: {:?}", totals.sql_phases);
    let error = totals.sql_phases[0].error.as_deref().unwrap();
    assert!(error.contains("create") && error.contains("already exists"), "{error}");
    assert!(totals.stop_reason.as_deref().unwrap_or("").contains("already exists"), "{:?}", totals.stop_reason);
    assert_eq!(count(&db, "SELECT count(*) FROM bulktest"), 0);
}

fn sha1_hex(text: &str) -> String {
    use sha1::Digest;
    sha1::Sha1::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("horde-sql-test-{}-{}", std::process::id(), rand_suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
