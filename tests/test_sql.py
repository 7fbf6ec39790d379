"""`horde sql`, seed 000's experiment, against SQLite (embedded), a real PostgreSQL and a real
MariaDB started for the tests: every strategy leaves what it should, counted by horde's own
check and again here through the database's own client (row counts, and every row's hash
recomputed); the seed's sentences; bad URLs, passwords and databases, a table that exists, and
a server killed in the middle of a phase, each a clear error naming the phase, with the
results measured until then on disk."""

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import time

import pytest

from conftest import assert_slow_statement_cancelled, sql_server, wait_until

ALL_POPULATE = "row,row-txn,batch,bulk"
ALL_UPDATE = "row,row-txn,temp-join,swap,server"


def phases(result):
    return [(p["phase"], p["strategy"]) for p in result.summary["sql"]]


def assert_every_phase_checked(result, rows):
    for phase in result.summary["sql"]:
        assert "error" not in phase, phase
        check = phase["verification"]
        assert check["passed"], phase
        if phase["phase"] in ("populate", "select", "update"):
            assert phase["rows"] == rows, phase
            assert check["found"] == rows, phase


def test_sqlite_default_runs_every_phase_and_the_rows_are_right(horde):
    rows = 20_000
    fast_populate, fast_update = "row-txn,batch,bulk", "row-txn,temp-join,swap,server"
    result = horde("sql", "--rows", rows, "--keep", "--seed", "5", "--populate", fast_populate, "--update", fast_update,
                   "--batch-size", "3000", timeout=300)
    assert result.code == 0, result.stderr
    assert phases(result) == [("create", "single")] + [("populate", s) for s in fast_populate.split(",")] + [
        ("select", "single"), ("alter", "in-place")] + [("update", s) for s in fast_update.split(",")]
    assert_every_phase_checked(result, rows)
    # The seed's own words come first.
    assert f"Inserted {rows} rows in 0 minutes and" in result.stdout
    assert f"Updated {rows} rows in" in result.stdout and "Selected" in result.stdout
    # ceil(rows / batch) statements for `batch`, a BEGIN and a COMMIT per 3,000 rows for `row-txn`.
    assert result.row("populate batch")["count"] == 7
    assert result.row("populate row-txn")["count"] == rows + 2 * 7
    # The database file is in the results directory; its rows, read here, carry their hashes.
    database = next(result.results_dir.glob("*/horde-sql.db"))
    with sqlite3.connect(database) as connection:
        pairs = connection.execute("SELECT text, hashval FROM bulktest").fetchall()
    assert len(pairs) == rows
    assert all(len(text) == 45 and hashlib.sha1(text.encode()).hexdigest() == digest for text, digest in pairs)
    # report.html has the phases' page: the seed's sentences, a row and a bar per strategy.
    report = next(result.results_dir.glob("*/report.html")).read_text()
    assert 'id="sql-phases"' in report and f"Inserted {rows} rows in 0 minutes and" in report
    assert report.count('<svg class="bar"') == len(result.summary["sql"])


def test_sqlite_autocommit_row_by_row(horde):
    """Autocommit waits for the disk at every row (about 1,000 a second here): a few hundred."""
    rows = 300
    result = horde("sql", "--rows", rows, "--threads", "2", "--populate", "row", "--update", "row", timeout=300)
    assert result.code == 0, result.stderr
    assert_every_phase_checked(result, rows)
    # One INSERT per row; one UPDATE per row, and two page reads per thread (its rows, then none).
    assert result.row("populate row")["count"] == rows
    assert result.row("update row")["count"] == rows + 2 * 2


def test_alter_takes_a_list_of_strategies_as_populate_and_update_do(horde):
    # Issue 23: --alter in-place,rebuild was refused as one strategy's name.
    rows = 1000
    result = horde("sql", "--rows", rows, "--phases", "create,populate,alter,update", "--populate", "batch",
                   "--alter", "in-place,rebuild", "--update", "server", timeout=120)
    assert result.code == 0, result.stderr
    assert phases(result) == [("create", "single"), ("populate", "batch"), ("alter", "in-place"),
                              ("alter", "rebuild"), ("update", "server"), ("drop", "single")]
    assert_every_phase_checked(result, rows)


@pytest.mark.parametrize("server_name", ["postgres", "mariadb"])
def test_every_strategy_against_a_real_server(horde, request, server_name):
    server = request.getfixturevalue(server_name)
    rows = 30_000
    populate = ALL_POPULATE + (",pipeline" if server_name == "postgres" else "")
    result = horde("sql", "--url", server.url, "--rows", rows, "--threads", "3", "--batch-size", "4000",
                   "--populate", populate, "--update", ALL_UPDATE, "--alter", "in-place,rebuild", "--keep", "--replace",
                   timeout=600)
    assert result.code == 0, result.stderr + result.stdout
    assert_every_phase_checked(result, rows)
    assert result.row("populate row")["count"] == rows
    # The server's own count, and its own hash of every row, through its own client.
    assert server.query("SELECT count(*) FROM bulktest") == str(rows)
    sha1 = "encode(digest(text, 'sha1'), 'hex')" if server_name == "postgres" else "SHA1(text)"
    assert server.query(f"SELECT count(*) FROM bulktest WHERE hashval = {sha1}") == str(rows)
    # The server's CPU is read from /proc (it runs here), the client's too.
    update = next(p for p in result.summary["sql"] if p["name"] == "update server")
    assert update["server_cpu_seconds"] > 0 and update["client_cpu_seconds"] >= 0
    # The password never reaches the output.
    assert "benchpw" not in result.stdout + result.stderr
    assert "bench:***@" in result.stderr


def test_bad_urls_passwords_and_databases_are_named(horde, postgres, mariadb, tmp_path):
    bad_scheme = horde("sql", "--url", "oracle://x@127.0.0.1/db", "--rows", "10")
    assert bad_scheme.code == 2 and "oracle" in bad_scheme.stderr, bad_scheme.stderr

    wrong_password = postgres.url.replace("benchpw", "nope")
    result = horde("sql", "--url", wrong_password, "--rows", "10")
    assert result.code == 3, result.stderr
    assert "password authentication failed" in result.stderr and "before the first phase" in result.stderr
    assert "nope" not in result.stderr

    missing = mariadb.url.rsplit("/", 1)[0] + "/missing_db"
    result = horde("sql", "--url", missing, "--rows", "10")
    assert result.code == 3 and "missing_db" in result.stderr, result.stderr

    refused = horde("sql", "--url", "postgres://bench:benchpw@127.0.0.1:1/bench", "--rows", "10")
    assert refused.code == 3 and "refused" in refused.stderr.lower(), refused.stderr

    pipeline = horde("sql", "--url", mariadb.url, "--populate", "pipeline", "--rows", "10")
    assert pipeline.code == 2 and "--populate pipeline" in pipeline.stderr, pipeline.stderr

    unknown = horde("sql", "--update", "teleport", "--phases", "create,update,select", "--rows", "10")
    assert unknown.code == 2, unknown.stderr
    assert '--update "teleport" is not a strategy of the update phase: server, row, row-txn, temp-join, swap' in unknown.stderr
    assert "must keep the experiment's order" in unknown.stderr


def test_a_table_that_exists_fails_the_create_phase(horde, postgres):
    postgres.query("DROP TABLE IF EXISTS taken")
    postgres.query("CREATE TABLE taken (x int)")
    result = horde("sql", "--url", postgres.url, "--table", "taken", "--rows", "100")
    assert result.code == 4, result.stderr
    assert "phase failed: create" in result.stderr and "already exists" in result.stderr
    summary = result.summary
    assert summary["run"]["status"] == "stopped"
    assert [p["name"] for p in summary["sql"]] == ["create"], "nothing ran after the failed phase"
    assert "42P07" in summary["sql"][0]["error"]
    # The user's table is left as it was.
    assert postgres.query("SELECT count(*) FROM taken") == "0"


def test_a_server_killed_mid_phase_leaves_the_results_so_far(tmp_path):
    server = sql_server("postgres")
    try:
        results = tmp_path / "killed"
        process = subprocess.Popen(
            ["horde", "sql", "--url", server.url, "--rows", "400000", "--threads", "2", "--populate", "row",
             "--results-dir", str(results)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Once rows go in, the server dies (SIGKILL: no goodbye to the clients).
        wait_until(lambda: (results / "summary.json").exists() and "populate row" in (results / "summary.json").read_text(),
                   timeout=60, what="the populate phase to start")
        time.sleep(0.5)
        subprocess.run(["pkill", "-KILL", "-P", str(server.pid)], check=False)
        os.kill(server.pid, signal.SIGKILL)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        server.stop()
    assert process.returncode == 4, stderr
    assert "phase failed: populate row" in stderr, stderr
    summary = json.loads((results / "summary.json").read_text())
    assert summary["run"]["status"] == "stopped"
    failed = summary["sql"][-1]
    assert failed["name"] == "populate row" and failed["error"].startswith("populate row:"), failed
    assert 0 < failed["rows"] < 400_000 or failed["rows"] == 0
    row = next(r for r in summary["requests"] if r["name"] == "populate row")
    assert row["ok"] > 0 and row["ko"] >= 1
    assert any(e["kind"] in ("sql_connection_lost", "sql_connection", "sql_operator_intervention", "connect_refused")
               for e in summary["errors"]), summary["errors"]


# SQL inside scenarios (sql(...) steps), against the real servers.

SCENARIO = '''
from horde import at_once_users, column, param, row_count, scenario, setup, sql

active = param("active")
journey = (
    scenario("accounts")
    .exec(sql("insert").query(
        "INSERT INTO accounts (email, balance, active, created) VALUES ($1, $2, $3, $4) RETURNING id",
        params=["user-${__user_id}@example.com", "12.50", "1", "2026-11-26 10:00:00"],
    ).check(row_count().is_(1), column("id").save_as("id")))
    .exec(sql("find").query(
        "SELECT id, email, balance, active, created, note FROM accounts WHERE id = $1", params=["${id}"],
    ).check(row_count().is_(1), column("email").is_("user-${__user_id}@example.com"), column("balance").is_("12.50"),
            column("active").is_(active), column("created").is_("2026-11-26 10:00:00"), column("note").not_exists()))
    .exec(sql("credit").execute("UPDATE accounts SET balance = balance + $1 WHERE id = $2", params=["1.25", "${id}"])
          .check(row_count().is_(1)))
    # Undone: the rollback leaves the balance as it was.
    .exec(sql.begin(), sql("zero").execute("UPDATE accounts SET balance = 0 WHERE id = $1", params=["${id}"]), sql.rollback())
    # The pool holds at most two connections (one per worker) however many users wait.
    .exec(sql("connections").query(param("connections_sql")).check(column("n").lte(2)))
)
setup(journey.inject(at_once_users(param("users", 8))), protocol=sql.url(param("url")).pool(param("pool", 2)), workers=2)
'''

CONNECTIONS_SQL = {
    "postgres": "SELECT count(*) AS n FROM pg_stat_activity WHERE usename = 'bench'",
    "mariadb": "SELECT count(*) AS n FROM information_schema.processlist WHERE user = 'bench'",
}

CREATE_ACCOUNTS = {
    "postgres": "CREATE TABLE accounts (id serial PRIMARY KEY, email varchar(64) UNIQUE NOT NULL, "
                "balance numeric(10,2), active boolean, created timestamp, note text)",
    "mariadb": "CREATE TABLE accounts (id int AUTO_INCREMENT PRIMARY KEY, email varchar(64) UNIQUE NOT NULL, "
               "balance decimal(10,2), active boolean, created datetime, note text)",
}


@pytest.mark.parametrize("server_name", ["postgres", "mariadb"])
def test_scenario_statements_save_check_and_roll_back_on_a_real_server(horde, request, server_name, tmp_path):
    server = request.getfixturevalue(server_name)
    server.query("DROP TABLE IF EXISTS accounts")
    server.query(CREATE_ACCOUNTS[server_name])
    sim = tmp_path / "accounts.py"
    sim.write_text(SCENARIO)
    users = 8
    active = "t" if server_name == "postgres" else "1"
    result = horde("run", sim, "-D", f"url={server.url}", "-D", f"users={users}", "-D", f"active={active}",
                   "-D", f"connections_sql={CONNECTIONS_SQL[server_name]}")
    assert result.code == 0, result.stderr
    summary = result.summary
    assert summary["global"]["ko"] == 0, summary["errors"]
    counts = {r["name"]: r["ok"] for r in summary["requests"]}
    assert counts == {name: users for name in ("insert", "find", "credit", "BEGIN", "zero", "ROLLBACK", "connections")}
    # The server's side: every row once, credited once, the rolled-back update undone.
    assert server.query("SELECT count(*) FROM accounts") == str(users)
    assert server.query("SELECT count(*) FROM accounts WHERE balance = 13.75") == str(users)

    # Without the pool's bound, the same check sees more connections: it can fail.
    server.query("DELETE FROM accounts")
    unbounded = horde("run", sim, "-D", f"url={server.url}", "-D", f"users={users}", "-D", f"active={active}",
                      "-D", f"connections_sql={CONNECTIONS_SQL[server_name]}", "-D", "pool=8")
    connections = next(r for r in unbounded.summary["requests"] if r["name"] == "connections")
    assert connections["ko"] > 0, connections


def test_scenario_errors_are_counted_by_sqlstate_kind(horde, postgres, tmp_path):
    postgres.query("DROP TABLE IF EXISTS uniq")
    postgres.query("CREATE TABLE uniq (name text PRIMARY KEY)")
    sim = tmp_path / "errors.py"
    sim.write_text('''
from horde import at_once_users, param, scenario, setup, sql
scn = (scenario("s")
       .exec(sql("same name").execute("INSERT INTO uniq VALUES ($1)", params=["taken"]))
       .exec(sql("bad type").query("SELECT 1 WHERE 1 = $1", params=["one"]))
       .exec(sql("syntax").query("SELEC 1")))
setup(scn.inject(at_once_users(3)), protocol=sql.url(param("url")), on_check_failure="continue")
''')
    result = horde("run", sim, "-D", f"url={postgres.url}")
    assert result.code == 0, result.stderr
    rows = {r["name"]: (r["ok"], r["ko"]) for r in result.summary["requests"]}
    assert rows == {"same name": (1, 2), "bad type": (0, 3), "syntax": (0, 3)}, rows
    errors = {(e["request"], e["kind"]): e for e in result.summary["errors"]}
    assert errors[("same name", "sql_constraint_violation")]["count"] == 2
    assert "23505" in errors[("same name", "sql_constraint_violation")]["message"]
    assert "22P02" in errors[("bad type", "sql_data_exception")]["message"]
    assert "42601" in errors[("syntax", "sql_syntax_or_access")]["message"]
    assert postgres.query("SELECT count(*) FROM uniq") == "1"


def test_a_statement_past_the_timeout_is_cancelled_on_the_server(horde, postgres, tmp_path):
    """A statement with no answer within the request timeout fails as request_timeout, and
    the server is asked to cancel it (as libpq's PQcancel): it stops at once rather than run
    its 30 seconds on a connection nobody reads."""
    assert_slow_statement_cancelled(horde, tmp_path, postgres.url, postgres)


def test_postgres_types_horde_does_not_convert_are_read_as_the_server_renders_them(horde, postgres, tmp_path):
    sim = tmp_path / "types.py"
    sim.write_text('''
from horde import at_once_users, column, param, scenario, setup, sql
scn = scenario("s").exec(
    sql("types").query("SELECT ARRAY[1, 2] AS a, interval '1 day 12 hours' AS i, int4range(1, 5) AS r, $1::numeric AS n",
                       params=["2.50"])
    .check(column("a").is_("{1,2}"), column("i").is_("1 day 12:00:00"), column("r").is_("[1,5)"), column("n").is_("2.50")))
setup(scn.inject(at_once_users(2)), protocol=sql.url(param("url")))
''')
    result = horde("run", sim, "-D", f"url={postgres.url}")
    assert result.code == 0, result.stderr
    assert result.summary["global"]["ok"] == 2 and result.summary["global"]["ko"] == 0, result.summary["errors"]


def test_scenario_databases_that_do_not_answer_or_do_not_exist(horde, postgres, tmp_path):
    sim = tmp_path / "db.py"
    sim.write_text('''
from horde import at_once_users, param, scenario, setup, sql
scn = scenario("s").exec(sql("one").query("SELECT 1").on(param("use", "default")))
setup(scn.inject(at_once_users(1)), protocol=sql.url(param("url")))
''')
    wrong_password = postgres.url.replace("benchpw", "nope")
    result = horde("run", sim, "-D", f"url={wrong_password}")
    assert result.code == 3, result.stderr
    assert 'cannot connect to the database "default"' in result.stderr
    assert "password authentication failed" in result.stderr and "nope" not in result.stderr
    unknown = horde("run", sim, "-D", f"url={postgres.url}", "-D", "use=reports")
    assert unknown.code == 2, unknown.stderr
    assert 'scenarios[0].steps[0].database: no database named "reports" (the plan\'s: default)' in unknown.stderr


@pytest.mark.parametrize("method", ["md5", "password"])
def test_md5_and_cleartext_logins_let_the_right_password_in(horde, postgres, method, tmp_path):
    """horde logs in to PostgreSQL itself: besides SCRAM-SHA-256 (the server's default, every
    other test), a server asking for an MD5 hash or the cleartext password (pg_hba.conf's
    `md5`, `password`) takes the right password and refuses a wrong one."""
    role = f"horde_{method}"
    hba = postgres.directory / "data" / "pg_hba.conf"
    rule = f"host bench {role} 127.0.0.1/32 {method}\n"
    if rule not in hba.read_text():
        hba.write_text(rule + hba.read_text())
    superuser = ["psql", "-q", "-h", str(postgres.directory), "-p", str(postgres.port), "-U", "postgres", "-d", "bench"]
    subprocess.run(superuser + ["-c", "SET password_encryption = 'md5'", "-c", f"DROP ROLE IF EXISTS {role}",
                                "-c", f"CREATE ROLE {role} LOGIN PASSWORD 'secret'", "-c", "SELECT pg_reload_conf()"],
                   check=True, capture_output=True)
    sim = tmp_path / "who.py"
    sim.write_text('''
from horde import at_once_users, column, param, scenario, setup, sql
scn = scenario("s").exec(sql("who").query("SELECT current_user AS who").check(column("who").is_(param("role"))))
setup(scn.inject(at_once_users(2)), protocol=sql.url(param("url")))
''')
    url = f"postgres://{role}:secret@127.0.0.1:{postgres.port}/bench"
    result = horde("run", sim, "-D", f"url={url}", "-D", f"role={role}")
    assert result.code == 0, result.stderr
    assert result.summary["global"]["ok"] == 2, result.summary["errors"]
    wrong = horde("run", sim, "-D", f"url={url.replace('secret', 'nope')}", "-D", f"role={role}")
    assert wrong.code == 3 and "password authentication failed" in wrong.stderr, wrong.stderr


def test_a_server_killed_under_a_scenario_ends_the_run_with_its_errors_counted(tmp_path):
    server = sql_server("postgres")
    sim = tmp_path / "loop.py"
    sim.write_text('''
from horde import constant_concurrent_users, param, scenario, setup, sql
scn = scenario("s").during(4, sql("tick").query("SELECT pg_sleep(0.005)"))
setup(scn.inject(constant_concurrent_users(4).during(4)), protocol=sql.url(param("url")).pool(2), max_duration=20)
''')
    try:
        results = tmp_path / "killed"
        process = subprocess.Popen(["horde", "run", str(sim), "-D", f"url={server.url}", "--results-dir", str(results)],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_until(lambda: (results / "summary.json").exists() and '"tick"' in (results / "summary.json").read_text(),
                   timeout=60, what="the first statements")
        time.sleep(0.5)
        subprocess.run(["pkill", "-KILL", "-P", str(server.pid)], check=False)
        os.kill(server.pid, signal.SIGKILL)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        server.stop()
    assert process.returncode == 0, stderr
    summary = json.loads((results / "summary.json").read_text())
    tick = next(r for r in summary["requests"] if r["name"] == "tick")
    assert tick["ok"] > 0 and tick["ko"] > 0, tick
    kinds = {e["kind"] for e in summary["errors"]}
    assert kinds <= {"sql_connection_lost", "connect_refused", "sql_operator_intervention", "sql_connection"}, kinds


def test_a_connection_the_server_ends_between_statements_is_replaced(postgres, tmp_path):
    """The server ends a user's idle connection (pg_terminate_backend, as an administrator or an
    idle timeout would): the next statement fails once, with the server's reason, and the user
    goes on with a new connection. Counted on the server: every other insert is there, made by
    exactly two backends."""
    postgres.query("DROP TABLE IF EXISTS ticks")
    postgres.query("CREATE TABLE ticks (n serial, backend int)")
    sim = tmp_path / "ticks.py"
    sim.write_text('''
from horde import at_once_users, param, pause, scenario, setup, sql
scn = scenario("s").repeat(30, sql("tick").execute("INSERT INTO ticks (backend) VALUES (pg_backend_pid())"), pause(0.05))
setup(scn.inject(at_once_users(1)), protocol=sql.url(param("url")), on_check_failure="continue", max_duration=60)
''')
    results = tmp_path / "ticks"
    process = subprocess.Popen(["horde", "run", str(sim), "-D", f"url={postgres.url}", "--results-dir", str(results), "-q"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(lambda: int(postgres.query("SELECT count(*) FROM ticks")) >= 5, timeout=60, what="the first inserts")
    ended = postgres.query("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'horde'")
    _, stderr = process.communicate(timeout=60)
    assert ended == "1" and process.returncode == 0, stderr
    summary = json.loads((results / "summary.json").read_text())
    tick = next(r for r in summary["requests"] if r["name"] == "tick")
    assert (tick["ok"], tick["ko"]) == (29, 1), tick
    [error] = summary["errors"]
    assert error["kind"] == "sql_connection_lost", error
    assert "terminating connection due to administrator command" in error["message"], error
    assert postgres.query("SELECT count(*) FROM ticks") == "29"
    assert postgres.query("SELECT count(DISTINCT backend) FROM ticks") == "2"


def test_swap_holds_writers_off_the_table_while_it_copies(horde, postgres, tmp_path):
    """The seed's LOCK TABLES: while `update swap` copies the table, PostgreSQL shows horde's
    EXCLUSIVE lock on it, and a writer waiting for it gives up (lock_timeout); the table that
    replaces it has every row with its hash, and nothing else."""
    postgres.query("DROP TABLE IF EXISTS swapped")
    results = tmp_path / "swap"
    process = subprocess.Popen(
        ["horde", "sql", "--url", postgres.url, "--table", "swapped", "--rows", "300000", "--threads", "2",
         "--phases", "create,populate,alter,update", "--populate", "bulk", "--update", "swap", "--keep",
         "--results-dir", str(results), "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lock = ("SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
            "WHERE c.relname = 'swapped' AND l.locktype = 'relation' AND l.mode = 'ExclusiveLock' AND l.granted")
    seen, refused = 0, None
    while process.poll() is None:
        if postgres.query(lock) != "0":
            seen += 1
            if refused is None:
                writer = subprocess.run(
                    ["psql", "-h", "127.0.0.1", "-p", str(postgres.port), "-U", "bench", "-d", "bench", "-c",
                     "SET lock_timeout = '100ms'; INSERT INTO swapped (text) VALUES ('sneaked in')"],
                    capture_output=True, text=True, env={**os.environ, "PGPASSWORD": "benchpw"})
                refused = writer.stderr
        time.sleep(0.02)
    stdout, stderr = process.communicate()
    assert process.returncode == 0, stderr
    assert seen > 0, "the lock was never seen"
    assert refused is not None and "lock timeout" in refused, refused
    assert postgres.query("SELECT count(*) FROM swapped") == "300000"
    assert postgres.query("SELECT count(*) FROM swapped WHERE hashval = encode(digest(text, 'sha1'), 'hex')") == "300000"
    postgres.query("DROP TABLE swapped")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_experiment_keeps_the_phases_so_far(tmp_path, summary_schema, sig):
    """Ctrl-C or SIGTERM in the middle of a phase: exit 130, the phases that ended are in
    summary.json (valid against its schema), and the statements of the one cut short too."""
    import jsonschema

    results = tmp_path / "interrupted"
    process = subprocess.Popen(
        ["horde", "sql", "--rows", "500000", "--phases", "create,populate", "--populate", "batch,row",
         "--results-dir", str(results), "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # SQLite's autocommit row by row waits on the disk: it runs long after batch has ended.
    def row_by_row_started():
        try:
            summary = json.loads((results / "summary.json").read_text())
        except (OSError, ValueError):
            return False
        return any(r["name"] == "populate row" and r["count"] > 0 for r in summary["requests"])

    wait_until(row_by_row_started, timeout=60, what="the row-by-row phase")
    time.sleep(0.5)
    process.send_signal(sig)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    summary = json.loads((results / "summary.json").read_text())
    jsonschema.validate(summary, summary_schema)
    assert summary["run"]["status"] == "interrupted"
    assert [(p["phase"], p["strategy"]) for p in summary["sql"]][:2] == [("create", "single"), ("populate", "batch")]
    assert summary["sql"][1]["verification"]["passed"]
    row = next(r for r in summary["requests"] if r["name"] == "populate row")
    assert row["ok"] > 0
