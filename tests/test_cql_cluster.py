"""CQL on a real three-node Apache Cassandra cluster (127.0.0.1, .2 and .3, replication 3):
consistency levels counted by the replicas that answer, and a node killed in the middle of a
run. The server's own count checks horde's."""

import json
import signal
import subprocess
import time

import pytest

from conftest import Cassandra, wait_until

TABLE = "rf3.items"


@pytest.fixture(scope="module")
def cluster():
    nodes = Cassandra(nodes=3)
    # Every node in the seed's view of the ring before the keyspace counts its replicas.
    wait_until(lambda: len(nodes.execute("SELECT peer FROM system.peers")) == 2, timeout=60, what="the ring")
    nodes.keyspace("rf3", replication=3)
    nodes.execute(f"CREATE TABLE {TABLE} (run text, id int, PRIMARY KEY (run, id))")
    yield nodes
    nodes.stop()


def simulation(tmp_path, body, users=1, timeout="3s"):
    sim = tmp_path / "sim.py"
    sim.write_text(f'''
from horde import at_once_users, cql, param, scenario, setup
cluster = cql.cluster(param("cluster")).timeout({timeout[:-1]})
insert = "INSERT INTO {TABLE} (run, id) VALUES (?, ?)"
{body}
setup(scn.inject(at_once_users({users})), protocol=[cluster], max_duration=120, on_check_failure="continue")
''')
    return sim


def written(cluster, run):
    from cassandra import ConsistencyLevel

    return cluster.execute(f"SELECT count(*) FROM {TABLE} WHERE run = %s", (run,), consistency=ConsistencyLevel.ONE)[0][0]


def take_down(cluster, node):
    """Stops the node and waits until the coordinator counts it out (a write at ALL is refused)."""
    from cassandra import ConsistencyLevel, Unavailable

    node.stop()

    seen = []

    def refused():
        try:
            cluster.execute(f"INSERT INTO {TABLE} (run, id) VALUES ('probe', 0)", consistency=ConsistencyLevel.ALL)
            return False
        except Exception as error:
            # Refused as unavailable (the driver may wrap it as the last host's error), or a
            # write timeout while the node is still counted in.
            seen[:] = [repr(error)]
            return isinstance(error, Unavailable) or "Unavailable exception" in repr(error)

    try:
        wait_until(refused, timeout=60, what="the coordinator to count the stopped node out")
    except TimeoutError as error:
        raise TimeoutError(f"{error} (last answer: {seen})") from None


def rows(summary):
    return {row["name"]: row for row in summary["requests"]}


def test_consistency_levels_are_counted_by_the_replicas(horde, tmp_path, cluster):
    sim = simulation(tmp_path, '''
scn = scenario("levels").repeat(10,
    cql("one").execute(insert, params=[param("run") + "-one", "${i}"]).consistency("one"),
    cql("quorum").execute(insert, params=[param("run") + "-quorum", "${i}"]).consistency("quorum"),
    cql("all").execute(insert, params=[param("run") + "-all", "${i}"]).consistency("all"),
    counter="i",
)
''')
    # Three replicas up: every level is met.
    result = horde("run", sim, "-D", f"cluster={cluster.contact_point}", "-D", "run=up")
    assert result.code == 0, result.stderr
    assert {name: (row["ok"], row["ko"]) for name, row in rows(result.summary).items()} == {
        "one": (10, 0), "quorum": (10, 0), "all": (10, 0)}
    # One replica down: ONE and QUORUM are still met, ALL is refused by the coordinator
    # (unavailable: nothing is written), each refusal a KO of its kind.
    take_down(cluster, cluster.nodes[2])
    result = horde("run", sim, "-D", f"cluster={cluster.contact_point}", "-D", "run=down")
    assert result.code == 0, result.stderr
    by_row = rows(result.summary)
    assert {name: (row["ok"], row["ko"]) for name, row in by_row.items()} == {
        "one": (10, 0), "quorum": (10, 0), "all": (0, 10)}
    assert {(e["request"], e["kind"]): e["count"] for e in result.summary["errors"]} == {("all", "cql_unavailable"): 10}
    assert (written(cluster, "down-one"), written(cluster, "down-quorum"), written(cluster, "down-all")) == (10, 10, 0)


def test_a_node_killed_mid_run_turns_its_writes_into_kos_and_the_run_goes_on(horde, tmp_path, cluster):
    # With one replica already down, QUORUM needs both others: killing one of them (SIGKILL,
    # no goodbye to the cluster) leaves every later write short of its quorum.
    if cluster.nodes[2].alive():
        take_down(cluster, cluster.nodes[2])
    sim = simulation(tmp_path, '''
from horde import pause
scn = scenario("writes").during(6,
    cql("write").execute(insert, params=["killed", "${__counter(killed)}"]).consistency("quorum"),
    pause(0.01),
)
''', users=2, timeout="1s")
    results = tmp_path / "results"
    process = subprocess.Popen(["horde", "run", str(sim), "-D", f"cluster={cluster.contact_point}",
                                "--results", str(results), "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    try:
        def first_writes():
            assert process.poll() is None, process.communicate()[1]
            return written(cluster, "killed") >= 50

        wait_until(first_writes, timeout=60, what="the first writes")
        cluster.nodes[1].stop(signal.SIGKILL)
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 0, err
    summary = json.loads(next(results.glob("*/summary.json")).read_text())
    row = rows(summary)["write"]
    assert row["ok"] >= 50 and row["ko"] >= 1, row
    assert row["count"] == row["ok"] + row["ko"]
    kinds = {e["kind"] for e in summary["errors"]}
    assert kinds and kinds <= {"cql_write_timeout", "cql_unavailable", "cql_connection_lost", "cql_connection",
                               "request_timeout"}, summary["errors"]
    # Every OK write is on the surviving replica; a write that timed out may be there too.
    on_server = written(cluster, "killed")
    assert row["ok"] <= on_server <= row["count"] + row["interrupted"], (row, on_server)
    assert summary["run"]["status"] == "completed"
