"""CQL steps against a real Apache Cassandra 5.0 (the session's `cassandra` fixture): statements
counted by horde and by the server, values that flow from a query into the next statement,
seed 002's asynchronous writes read back with `eventually`, errors by kind, bad input."""

import json
import time

import pytest


def simulation(tmp_path, body, users=4, cluster=None):
    sim = tmp_path / "sim.py"
    sim.write_text(f'''
from horde import at_once_users, column, cql, param, response_time_in_millis, row_count, scenario, setup
cluster = cql.cluster(param("cluster"))
{body}
setup(scn.inject(at_once_users({users})), protocol=[cluster], max_duration=60)
''')
    return sim


def rows(result):
    return {row["name"]: row for row in result.summary["requests"]}


def test_statements_are_counted_by_horde_and_by_the_server_and_values_flow(horde, tmp_path, cassandra):
    keyspace = cassandra.keyspace("flow")
    cassandra.execute(f"CREATE TABLE {keyspace}.orders (customer text, id int, total bigint, note text, "
                      "PRIMARY KEY (customer, id))")
    sim = simulation(tmp_path, f'''
scn = scenario("orders").repeat(3,
    cql("insert").execute("INSERT INTO {keyspace}.orders (customer, id, total, note) VALUES (?, ?, ?, ?)",
                          params=["c${{__user_id}}", "${{i}}", "${{__user_id}}00", "user ${{__user_id}}"]),
    cql("read back").query("SELECT total, note FROM {keyspace}.orders WHERE customer = ? AND id = ?",
                           params=["c${{__user_id}}", "${{i}}"])
        .consistency("one")
        .check(row_count().is_(1), column("note").find(0).save_as("note"), response_time_in_millis().lt(5000)),
    cql("copy").execute("INSERT INTO {keyspace}.orders (customer, id, total, note) VALUES (?, ?, ?, ?)",
                        params=["copy-${{__user_id}}", "${{i}}", "1", "${{note}}"]),
    counter="i",
)
''')
    result = horde("run", sim, "-D", f"cluster={cassandra.contact_point}")
    assert result.code == 0, result.stderr
    by_row = rows(result)
    for name in ("insert", "read back", "copy"):
        assert (by_row[name]["count"], by_row[name]["ko"]) == (12, 0), by_row[name]
    # The server holds what horde says it wrote, and the saved note went into the copies.
    assert cassandra.execute(f"SELECT count(*) FROM {keyspace}.orders")[0][0] == 24
    copies = cassandra.execute(f"SELECT customer, note FROM {keyspace}.orders WHERE customer = 'copy-2' AND id = 1")
    assert [(r.customer, r.note) for r in copies] == [("copy-2", "user 2")]


def test_asynchronous_deletes_are_read_back_with_eventually_and_counted(horde, tmp_path, cassandra):
    # Seed 002: delete asynchronously (executeAsync), then retry the read until the rows are gone.
    keyspace = cassandra.keyspace("async")
    cassandra.execute(f"CREATE TABLE {keyspace}.subscriptions (source text, id int, PRIMARY KEY (source, id))")
    sim = simulation(tmp_path, f'''
by_source = "SELECT id FROM {keyspace}.subscriptions WHERE source = ?"
scn = (scenario("subscriptions")
    .repeat(5, cql("subscribe").execute("INSERT INTO {keyspace}.subscriptions (source, id) VALUES (?, ?)",
                                        params=["s${{__user_id}}", "${{i}}"]), counter="i")
    .exec(cql("five").query(by_source, params=["s${{__user_id}}"]).check(row_count().is_(5)),
          cql("unsubscribe").execute_async("DELETE FROM {keyspace}.subscriptions WHERE source = ?",
                                           params=["s${{__user_id}}"]))
    .eventually(cql("gone?").query(by_source, params=["s${{__user_id}}"]).check(row_count().is_(0)),
                timeout=10, pause=0.05, name="gone"))
''', users=6)
    result = horde("run", sim, "-D", f"cluster={cassandra.contact_point}")
    assert result.code == 0, result.stderr
    by_row = rows(result)
    assert (by_row["subscribe"]["count"], by_row["five"]["ko"]) == (30, 0)
    # Every asynchronous delete was timed and counted when its answer came.
    assert (by_row["unsubscribe"]["count"], by_row["unsubscribe"]["ko"]) == (6, 0)
    groups = {group["name"]: group for group in result.summary["groups"]}
    assert (groups["gone"]["count"], groups["gone"]["ko"]) == (6, 0), groups
    assert cassandra.execute(f"SELECT count(*) FROM {keyspace}.subscriptions")[0][0] == 0


def test_errors_are_counted_by_kind(horde, tmp_path, cassandra):
    keyspace = cassandra.keyspace("errors")
    cassandra.execute(f"CREATE TABLE {keyspace}.items (id int PRIMARY KEY, name text)")
    sim = simulation(tmp_path, f'''
scn = scenario("errors").exec(
    cql("typo").execute("INSRT INTO {keyspace}.items (id) VALUES (1)"),
).exec(
    cql("not an int").execute("INSERT INTO {keyspace}.items (id, name) VALUES (?, ?)", params=["one", "x"]),
).exec(
    cql("missing column").query("SELECT name FROM {keyspace}.items WHERE id = 1").check(column("nope").find(0)),
)
''', users=2)
    (tmp_path / "sim.py").write_text((tmp_path / "sim.py").read_text().replace(
        "max_duration=60)", "max_duration=60, on_check_failure='continue')"))
    result = horde("run", sim, "-D", f"cluster={cassandra.contact_point}")
    assert result.code == 0, result.stderr
    kinds = {(e["request"], e["kind"]): e["count"] for e in result.summary["errors"]}
    assert kinds[("typo", "cql_syntax")] == 2, kinds
    assert kinds[("not an int", "cql_bad_value")] == 2, kinds
    assert kinds[("missing column", "check_failed")] == 2, kinds
    assert cassandra.execute(f"SELECT count(*) FROM {keyspace}.items")[0][0] == 0


def test_an_unreachable_cluster_is_named_before_the_run(horde, tmp_path):
    from conftest import free_port

    sim = simulation(tmp_path, 'scn = scenario("s").exec(cql("q").query("SELECT now() FROM system.local"))')
    result = horde("run", sim, "-D", f"cluster=127.0.0.1:{free_port()}")
    assert result.code == 3, result.stderr
    assert "cannot connect to the CQL cluster at 127.0.0.1:" in result.stderr


@pytest.mark.parametrize("body, path, words", [
    ('scn = scenario("s").exec(cql("q").query("SELECT * FROM t WHERE a = ? AND b = ?", params=["1"]))',
     "scenarios[0].steps[0].params", "2 ? marker(s) but 1 param(s)"),
    ('scn = scenario("s").exec(cql("q").query("SELECT 1 FROM t").check(__import__("horde").status().is_(200)))',
     "scenarios[0].steps[0].checks[0].source", "row_count, column or response_time_in_millis"),
])
def test_bad_statements_are_named_with_their_path(horde, tmp_path, body, path, words):
    sim = simulation(tmp_path, body)
    result = horde("plan", sim, "-D", "cluster=127.0.0.1:9042", results=False)
    assert result.code == 2, result.stderr
    assert path in result.stderr and words in result.stderr, result.stderr


def test_a_plan_without_a_cluster_is_refused(horde, tmp_path):
    plan = {"version": 1, "scenarios": [{"name": "s", "injection": [{"type": "at_once_users", "users": 1}],
             "steps": [{"type": "cql", "name": "q", "cql": "SELECT now() FROM system.local"}]}]}
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    result = horde("plan", path, results=False)
    assert result.code == 2
    assert "scenarios[0].steps[0]: the plan has no CQL cluster" in result.stderr, result.stderr


def test_a_lightweight_transaction_is_applied_once(horde, tmp_path, cassandra):
    # Every user claims the same seat with INSERT ... IF NOT EXISTS: exactly one is applied, and
    # the others' applied() check fails, counted by the server's side too.
    keyspace = cassandra.keyspace("seats")
    cassandra.execute(f"CREATE TABLE {keyspace}.seats (id int PRIMARY KEY, owner int)")
    sim = simulation(tmp_path, f'''
from horde import applied
scn = scenario("claim").exec(
    cql("claim").query("INSERT INTO {keyspace}.seats (id, owner) VALUES (1, ?) IF NOT EXISTS USING TTL ?",
                       params=["${{__user_id}}", "600"])
        .serial_consistency("serial").check(applied().is_("true")))
''', users=5)
    result = horde("run", sim, "-D", f"cluster={cassandra.contact_point}")
    assert result.code == 0, result.stderr
    claim = rows(result)["claim"]
    assert (claim["ok"], claim["ko"]) == (1, 4), claim
    [failed] = result.summary["errors"]
    assert (failed["kind"], failed["count"]) == ("check_failed", 4), failed
    assert '[applied]' in failed["message"] and 'expected "true", found "false"' in failed["message"], failed
    [seat] = cassandra.execute(f"SELECT owner, TTL(owner) AS ttl FROM {keyspace}.seats WHERE id = 1")
    assert 0 <= seat.owner < 5 and 0 < seat.ttl <= 600


def test_a_logged_batch_writes_all_its_statements_and_a_counter_batch_counts(horde, tmp_path, cassandra):
    keyspace = cassandra.keyspace("batches")
    cassandra.execute(f"CREATE TABLE {keyspace}.orders (id int PRIMARY KEY, total int)")
    cassandra.execute(f"CREATE TABLE {keyspace}.by_customer (customer int, id int, PRIMARY KEY (customer, id))")
    cassandra.execute(f"CREATE TABLE {keyspace}.daily (day text PRIMARY KEY, orders counter)")
    sim = simulation(tmp_path, f'''
scn = scenario("orders").repeat(2,
    cql("order").batch(
        cql.write("INSERT INTO {keyspace}.orders (id, total) VALUES (?, ?)", params=["${{__user_id}}${{i}}", "${{i}}"]),
        cql.write("INSERT INTO {keyspace}.by_customer (customer, id) VALUES (?, ?)",
                  params=["${{__user_id}}", "${{__user_id}}${{i}}"])).consistency("quorum"),
    cql("count").batch(cql.write("UPDATE {keyspace}.daily SET orders = orders + 1 WHERE day = ?", params=["mon"]),
                       kind="counter"),
    counter="i")
''', users=3)
    result = horde("run", sim, "-D", f"cluster={cassandra.contact_point}")
    assert result.code == 0, result.stderr
    by_row = rows(result)
    assert (by_row["order"]["ok"], by_row["count"]["ok"]) == (6, 6), by_row
    assert cassandra.execute(f"SELECT count(*) FROM {keyspace}.orders")[0][0] == 6
    assert cassandra.execute(f"SELECT count(*) FROM {keyspace}.by_customer")[0][0] == 6
    assert cassandra.execute(f"SELECT orders FROM {keyspace}.daily WHERE day = 'mon'")[0][0] == 6


def test_eventually_gives_up_with_the_last_checks_message_when_the_store_never_agrees(horde, tmp_path, cassandra):
    # Seed 002's retry, when the write never becomes visible: every attempt is made, then the
    # block fails with what its last check saw, not a bare timeout.
    keyspace = cassandra.keyspace("never")
    cassandra.execute(f"CREATE TABLE {keyspace}.items (id int PRIMARY KEY)")
    sim = simulation(tmp_path, f'''
scn = scenario("never").eventually(
    cql("there?").query("SELECT id FROM {keyspace}.items WHERE id = 1").check(row_count().is_(1)),
    timeout=1, pause=0.1, name="appears")
''', users=2)
    result = horde("run", sim, "-D", f"cluster={cassandra.contact_point}")
    assert result.code == 0, result.stderr
    group = {g["name"]: g for g in result.summary["groups"]}["appears"]
    assert (group["count"], group["ok"], group["ko"]) == (2, 0, 2), group
    assert group["attempts"]["retried_passes"] == 2 and group["attempts"]["total"] > 4, group
    [error] = [e for e in result.summary["errors"] if e["request"] == "appears"]
    assert error["kind"] == "not_consistent" and error["count"] == 2
    assert "row_count" in error["message"] and "0" in error["message"], error


def test_a_paged_query_reads_every_page(horde, tmp_path, cassandra):
    keyspace = cassandra.keyspace("paged")
    cassandra.execute(f"CREATE TABLE {keyspace}.events (user text, n int, PRIMARY KEY (user, n))")
    for n in range(25):
        cassandra.execute(f"INSERT INTO {keyspace}.events (user, n) VALUES ('u', %s)", (n,))
    sim = simulation(tmp_path, f'''
scn = scenario("pages").exec(
    cql("paged").query("SELECT n FROM {keyspace}.events WHERE user = 'u'").page_size(10)
        .check(row_count().is_(25), column("n").find_all().save_as("all")),
    cql("one page").query("SELECT n FROM {keyspace}.events WHERE user = 'u'").check(row_count().is_(25)),
)
''', users=2)
    result = horde("run", sim, "-D", f"cluster={cassandra.contact_point}")
    assert result.code == 0, result.stderr
    by_row = rows(result)
    assert (by_row["paged"]["ok"], by_row["paged"]["ko"]) == (2, 0), result.summary["errors"]
    assert (by_row["one page"]["ok"], by_row["one page"]["ko"]) == (2, 0)
    plan = json.loads(horde("plan", tmp_path / "sim.py", "-D", "cluster=127.0.0.1:9042", results=False).stdout)
    assert plan["scenarios"][0]["steps"][0]["page_size"] == 10


def horde_connections(cassandra):
    """The connections of horde's driver to the node, as the node lists them."""
    return [row for row in cassandra.execute("SELECT driver_name, ssl_enabled FROM system_views.clients")
            if "rust" in (row.driver_name or "").lower()]


def watched_run(tmp_path, cassandra, cluster_settings, sim_name):
    """A run of one user holding its connections for 4 s, and what the node listed meanwhile."""
    import subprocess

    from conftest import wait_until

    sim = tmp_path / f"{sim_name}.py"
    sim.write_text(f'''
from horde import at_once_users, cql, param, scenario, setup
cluster = cql.cluster(param("cluster")){cluster_settings}
scn = scenario("held").exec(cql("version").query("SELECT release_version FROM system.local")).pause(4) \\
    .exec(cql("again").query("SELECT release_version FROM system.local"))
setup(scn.inject(at_once_users(1)), protocol=[cluster], max_duration=60, workers=1)
''')
    process = subprocess.Popen(["horde", "run", str(sim), "-D", f"cluster={cassandra.contact_point}", "-q",
                                "--results", str(tmp_path / "results")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        wait_until(lambda: horde_connections(cassandra), timeout=30, what="horde's connections on the node")
        time.sleep(0.5)
        seen = horde_connections(cassandra)
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, stderr
    return seen


def test_tls_with_a_ca_file_and_a_pool_of_connections_as_the_node_sees_them(tmp_path, cassandra):
    ca_file, _ = cassandra.tls["ca"]
    plain = watched_run(tmp_path, cassandra, "", "plain")
    assert plain and not any(row.ssl_enabled for row in plain), plain
    pooled = watched_run(tmp_path, cassandra, f".tls(ca_file={str(ca_file)!r}).pool_size(3)", "tls")
    assert all(row.ssl_enabled for row in pooled), pooled
    # The pool's extra connections, on the one node: 2 more than the default pool of one.
    assert len(pooled) == len(plain) + 2, (len(plain), len(pooled))


def test_a_node_certificate_the_ca_file_does_not_vouch_for_stops_the_run_before_it_starts(horde, tmp_path, cassandra):
    stranger, _ = cassandra.tls["unknown_ca"]
    sim = simulation(tmp_path, 'scn = scenario("s").exec(cql("v").query("SELECT release_version FROM system.local"))', users=1)
    sim.write_text(sim.read_text().replace('cql.cluster(param("cluster"))',
                                           f'cql.cluster(param("cluster")).tls(ca_file={str(stranger)!r})'))
    result = horde("run", sim, "-D", f"cluster={cassandra.contact_point}")
    assert result.code == 3, result.stderr
    assert "cannot connect to the CQL cluster" in result.stderr and "certificate" in result.stderr.lower(), result.stderr


def test_a_missing_ca_file_is_named_with_its_plan_path(horde, tmp_path, cassandra):
    sim = simulation(tmp_path, 'scn = scenario("s").exec(cql("v").query("SELECT release_version FROM system.local"))', users=1)
    sim.write_text(sim.read_text().replace('cql.cluster(param("cluster"))',
                                           'cql.cluster(param("cluster")).tls(ca_file="no-such-ca.pem").pool_size(2)'))
    result = horde("run", sim, "-D", f"cluster={cassandra.contact_point}")
    assert result.code == 2, result.stderr
    assert "cql.tls.ca_file" in result.stderr and "no-such-ca.pem" in result.stderr, result.stderr
