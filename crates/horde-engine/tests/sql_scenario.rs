//! SQL inside scenarios, against SQLite (embedded: no server to start): values saved from one
//! statement flow into the next, checks read rows and columns, transactions commit or roll
//! back, pools are shared and bounded, and what fails is counted by kind. The database is
//! read again by the test's own connection.

use horde_engine::{lower, run, RunControl};
use horde_metrics::{RunStatus, Sink, Totals};
use horde_plan::Plan;
use std::sync::Arc;

struct Quiet;
impl Sink for Quiet {
    fn interval(&mut self, _: &mut Totals) {}
    fn finish(&mut self, _: &mut Totals, _: RunStatus) {}
}

fn tempdir() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "horde-sql-scenario-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn database(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("app.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, price REAL, note TEXT);
         INSERT INTO items (name, price) VALUES ('seed', 1.5);",
    )
    .unwrap();
    path
}

fn run_plan(json: &str) -> Totals {
    let plan = Plan::from_json(json).unwrap_or_else(|e| panic!("{e:?}"));
    let program = Arc::new(lower(&plan).unwrap_or_else(|e| panic!("{e:?}")));
    let result = run(program, &RunControl::new(), &mut Quiet);
    assert_eq!(result.status, RunStatus::Completed);
    result.totals
}

fn row(totals: &Totals, name: &str) -> (u64, u64) {
    let (_, recorder) = totals.requests.iter().find(|(n, _)| &**n == name).unwrap_or_else(|| panic!("no row {name}"));
    (recorder.ok.len(), recorder.ko.len() + recorder.unsent)
}

fn count(path: &std::path::Path, sql: &str) -> i64 {
    rusqlite::Connection::open(path).unwrap().query_row(sql, [], |row| row.get(0)).unwrap()
}

/// Each user inserts rows, reads back the key the database gave each one, and finds the row
/// by it: a value from one statement's result flows into the next statement's parameter.
fn journey(url: &str, pool: &str, users: u32) -> String {
    let tag = if pool.is_empty() { "own" } else { "pooled" };
    format!(
        r#"{{"version": 1, "name": "sql scenario", "options": {{"workers": 2, "seed": 3}},
            "databases": [{{"url": "{url}"{pool}}}],
            "scenarios": [{{"name": "shop", "injection": [{{"type": "at_once_users", "users": {users}}}], "steps": [
              {{"type": "repeat", "times": 5, "counter": "i", "steps": [
                {{"type": "sql", "name": "insert", "kind": "query",
                  "sql": "INSERT INTO items (name, price) VALUES ($1, $2) RETURNING id",
                  "params": ["{tag}-${{__user_id}}-${{i}}", "2.25"],
                  "checks": [{{"source": {{"type": "row_count"}}, "validate": {{"type": "is", "value": "1"}}}},
                             {{"source": {{"type": "column", "name": "id"}}, "save_as": "id"}}]}},
                {{"type": "sql", "name": "find", "kind": "query",
                  "sql": "SELECT name, price, note FROM items WHERE id = $1",
                  "params": ["${{id}}"],
                  "checks": [{{"source": {{"type": "column", "name": "name"}}, "validate": {{"type": "is", "value": "{tag}-${{__user_id}}-${{i}}"}}}},
                             {{"source": {{"type": "column", "name": "price"}}, "validate": {{"type": "is", "value": "2.25"}}}},
                             {{"source": {{"type": "column", "name": "note"}}, "validate": {{"type": "not_exists"}}}}]}}
              ]}}]}}]}}"#
    )
}

#[test]
fn saved_values_flow_from_one_statement_into_the_next() {
    let dir = tempdir();
    let path = database(&dir);
    let url = format!("sqlite://{}", path.display());
    for (pool, users) in [("", 4), (r#", "pool_size": 2"#, 6)] {
        let before = count(&path, "SELECT count(*) FROM items");
        let totals = run_plan(&journey(&url, pool, users));
        assert_eq!(row(&totals, "insert"), (5 * users as u64, 0), "pool {pool:?}: {:?}", totals.errors);
        assert_eq!(row(&totals, "find"), (5 * users as u64, 0), "pool {pool:?}: {:?}", totals.errors);
        assert_eq!(count(&path, "SELECT count(*) FROM items") - before, 5 * i64::from(users));
    }
}

#[test]
fn a_failed_check_and_a_refused_statement_are_counted_by_kind() {
    let dir = tempdir();
    let path = database(&dir);
    let json = format!(
        r#"{{"version": 1, "options": {{"workers": 1, "on_check_failure": "continue"}},
            "databases": [{{"url": "sqlite://{}"}}],
            "scenarios": [{{"name": "s", "injection": [{{"type": "at_once_users", "users": 2}}], "steps": [
              {{"type": "sql", "name": "duplicate", "kind": "execute", "sql": "INSERT INTO items (name) VALUES ('seed')"}},
              {{"type": "sql", "name": "wrong count", "kind": "query", "sql": "SELECT * FROM items",
                "checks": [{{"source": {{"type": "row_count"}}, "validate": {{"type": "is", "value": "2"}}}}]}},
              {{"type": "sql", "name": "no such column", "kind": "query", "sql": "SELECT name FROM items",
                "checks": [{{"source": {{"type": "column", "name": "nope"}}}}]}},
              {{"type": "sql", "name": "no such table", "kind": "query", "sql": "SELECT * FROM nowhere"}}
            ]}}]}}"#,
        path.display()
    );
    let totals = run_plan(&json);
    for name in ["duplicate", "wrong count", "no such column", "no such table"] {
        assert_eq!(row(&totals, name), (0, 2), "{name}");
    }
    let kinds: std::collections::BTreeMap<(&str, &str), String> =
        totals.errors.iter().map(|(key, record)| ((&*key.request, &*key.kind), record.message.clone())).collect();
    assert!(kinds.contains_key(&("duplicate", "sql_constraint_violation")), "{kinds:?}");
    assert!(kinds[&("wrong count", "check_failed")].contains("expected \"2\", found \"1\""), "{kinds:?}");
    assert!(kinds[&("no such column", "check_failed")].contains("no column \"nope\" (it has name)"), "{kinds:?}");
    assert!(kinds[&("no such table", "sql_error")].contains("no such table"), "{kinds:?}");
}

#[test]
fn a_transaction_commits_or_rolls_back_on_one_connection_even_when_pooled() {
    let dir = tempdir();
    let path = database(&dir);
    let json = format!(
        r#"{{"version": 1, "options": {{"workers": 2}},
            "databases": [{{"name": "app", "url": "sqlite://{}", "pool_size": 1}}],
            "scenarios": [{{"name": "s", "injection": [{{"type": "at_once_users", "users": 4}}], "steps": [
              {{"type": "sql_transaction", "action": "begin"}},
              {{"type": "sql", "name": "insert", "kind": "execute", "sql": "INSERT INTO items (name) VALUES ($1)",
                "params": ["kept-${{__user_id}}"],
                "checks": [{{"source": {{"type": "row_count"}}, "validate": {{"type": "is", "value": "1"}}}}]}},
              {{"type": "sql_transaction", "action": "commit", "database": "app"}},
              {{"type": "sql_transaction", "action": "begin"}},
              {{"type": "sql", "name": "insert", "kind": "execute", "sql": "INSERT INTO items (name) VALUES ($1)",
                "params": ["undone-${{__user_id}}"]}},
              {{"type": "sql", "name": "seen inside", "kind": "query", "sql": "SELECT count(*) AS n FROM items WHERE name = $1",
                "params": ["undone-${{__user_id}}"],
                "checks": [{{"source": {{"type": "column", "name": "n"}}, "validate": {{"type": "is", "value": "1"}}}}]}},
              {{"type": "sql_transaction", "action": "rollback"}}
            ]}}]}}"#,
        path.display()
    );
    let totals = run_plan(&json);
    assert_eq!(row(&totals, "BEGIN"), (8, 0), "{:?}", totals.errors);
    assert_eq!(row(&totals, "COMMIT"), (4, 0));
    assert_eq!(row(&totals, "ROLLBACK"), (4, 0));
    assert_eq!(row(&totals, "seen inside"), (4, 0), "{:?}", totals.errors);
    assert_eq!(count(&path, "SELECT count(*) FROM items WHERE name LIKE 'kept-%'"), 4);
    assert_eq!(count(&path, "SELECT count(*) FROM items WHERE name LIKE 'undone-%'"), 0);
}

#[test]
fn a_plan_with_mistakes_names_each_one() {
    let json = r#"{"version": 1, "databases": [{"name": "a", "url": "sqlite:///tmp/x.db"}, {"name": "b", "url": "oracle://x"}],
        "scenarios": [{"name": "s", "injection": [{"type": "at_once_users", "users": 1}], "steps": [
          {"type": "sql", "name": "q", "kind": "query", "sql": "SELECT $2", "params": ["x"]},
          {"type": "sql", "name": "e", "kind": "execute", "database": "c", "sql": "DELETE FROM t",
           "checks": [{"source": {"type": "column", "name": "x"}}, {"source": {"type": "status"}}]},
          {"type": "request", "name": "r", "method": "GET", "url": "http://127.0.0.1:1/", "checks": [{"source": {"type": "row_count"}}]}
        ]}]}"#;
    let plan = Plan::from_json(json).unwrap();
    let errors: Vec<String> = lower(&plan).err().expect("refused").iter().map(|e| e.to_string()).collect();
    let expected = [
        "databases[1].url",
        "scenarios[0].steps[0].database: the plan has several databases",
        "scenarios[0].steps[0].params: the statement uses $2 but has 1 param(s)",
        "scenarios[0].steps[0].params[0]: $1 is not in the statement",
        "scenarios[0].steps[1].database: no database named \"c\"",
        "scenarios[0].steps[1].checks[0].source: an execute returns no rows",
        "scenarios[0].steps[1].checks[1].source: a statement's result is checked with row_count",
        "scenarios[0].steps[2].checks[0].source: row_count and column read a SQL or CQL statement's result",
    ];
    for fragment in expected {
        assert!(errors.iter().any(|e| e.contains(fragment)), "{fragment:?} not in {errors:#?}");
    }
}
