"""`horde cql`: YCSB's core workloads against a real Apache Cassandra 5.0 (the session's
`cassandra` fixture). Records counted by the server, each workload's operation mix within
binomial tolerance of its definition, reads of records never loaded failing by kind, the
target rate held, bad input refused before any load."""

import json
import math
from pathlib import Path

import pytest

# YCSB's workload files: each operation's share.
MIXES = {
    "a": {"READ": 0.5, "UPDATE": 0.5},
    "b": {"READ": 0.95, "UPDATE": 0.05},
    "c": {"READ": 1.0},
    "d": {"READ": 0.95, "INSERT": 0.05},
    "e": {"SCAN": 0.95, "INSERT": 0.05},
    "f": {"READ": 0.5, "READ-MODIFY-WRITE": 0.5},
}
RECORDS = 500


def phase(directory):
    summary = json.loads((directory / "summary.json").read_text())
    return summary, {row["name"]: row for row in summary["requests"]}


def ycsb(horde, tmp_path, cassandra, name, *flags, timeout=180):
    directory = tmp_path / name
    result = horde("cql", cassandra.contact_point, "--results-dir", directory, *flags, results=False, timeout=timeout)
    return result, directory


@pytest.fixture(scope="module")
def loaded(cassandra, tmp_path_factory):
    """The keyspace `ycsb_core` loaded once by `horde cql --phase load` (checked by the test below)."""
    import subprocess

    directory = tmp_path_factory.mktemp("ycsb-load")
    completed = subprocess.run(
        ["horde", "cql", cassandra.contact_point, "--phase", "load", "--keyspace", "ycsb_core", "--records",
         str(RECORDS), "--threads", "4", "--results-dir", str(directory / "load"), "-q"],
        capture_output=True, text=True, timeout=180)
    assert completed.returncode == 0, completed.stderr
    return directory / "load"


def test_the_load_phase_writes_every_record_once(loaded, cassandra):
    summary, rows = phase(loaded)
    assert (rows["INSERT"]["count"], rows["INSERT"]["ko"]) == (RECORDS, 0)
    assert cassandra.execute("SELECT count(*) FROM ycsb_core.usertable")[0][0] == RECORDS
    record = cassandra.execute("SELECT * FROM ycsb_core.usertable LIMIT 1")[0]
    assert record.y_id.startswith("user")
    assert [len(getattr(record, f"field{i}")) for i in range(10)] == [100] * 10
    report = (loaded / "ycsb.txt").read_text()
    assert f"[INSERT], Operations, {RECORDS}" in report and "[OVERALL], Throughput(ops/sec)" in report


@pytest.mark.parametrize("workload", sorted(MIXES))
def test_each_workload_runs_its_mix(horde, tmp_path, cassandra, loaded, workload):
    operations = 2000
    before = cassandra.execute("SELECT count(*) FROM ycsb_core.usertable")[0][0]
    result, directory = ycsb(horde, tmp_path, cassandra, workload, "--workload", workload, "--phase", "run",
                             "--keyspace", "ycsb_core", "--records", RECORDS, "--operations", operations,
                             "--threads", "4", "--consistency", "quorum", "-q")
    assert result.code == 0, result.stderr
    summary, rows = phase(directory)
    assert sum(row["count"] for row in rows.values()) == operations
    assert set(rows) == set(MIXES[workload])
    for name, share in MIXES[workload].items():
        assert rows[name]["ko"] == 0, (name, summary["errors"])
        # Within four standard deviations of the binomial count.
        sigma = math.sqrt(operations * share * (1 - share))
        assert abs(rows[name]["count"] - operations * share) <= 4 * sigma + 1e-9, (name, rows[name]["count"])
    # Inserts number new records from RECORDS on (each run phase anew, as YCSB's): the server
    # holds exactly the loaded ones and the most any run inserted.
    after = cassandra.execute("SELECT count(*) FROM ycsb_core.usertable")[0][0]
    inserted = rows.get("INSERT", {}).get("count", 0)
    assert after == max(before, RECORDS + inserted)
    report = (directory / "ycsb.txt").read_text()
    for name in MIXES[workload]:
        assert f"[{name}], Operations, {rows[name]['count']}" in report
        assert f"[{name}], 99thPercentileLatency(us)," in report


def test_reads_of_records_never_loaded_fail_by_kind(horde, tmp_path, cassandra, loaded):
    # Twice the loaded records: about half the uniform reads find nothing.
    result, directory = ycsb(horde, tmp_path, cassandra, "missing", "--workload", "c", "--phase", "run",
                             "--keyspace", "ycsb_core", "--records", RECORDS * 2, "--distribution", "uniform",
                             "--operations", 400, "-q")
    assert result.code == 0, result.stderr
    summary, rows = phase(directory)
    assert rows["READ"]["count"] == 400
    assert 100 < rows["READ"]["ko"] < 300, rows["READ"]
    kinds = {error["kind"]: error["count"] for error in summary["errors"]}
    assert kinds == {"ycsb_not_found": rows["READ"]["ko"]}


def test_the_target_rate_holds_and_the_duration_ends_the_run(horde, tmp_path, cassandra, loaded):
    result, directory = ycsb(horde, tmp_path, cassandra, "target", "--workload", "b", "--phase", "run",
                             "--keyspace", "ycsb_core", "--records", RECORDS, "-d", "2s", "--target", "100",
                             "--threads", "2", "-q")
    assert result.code == 0, result.stderr
    summary, rows = phase(directory)
    done = sum(row["count"] for row in rows.values())
    # A cap of 100 per second for 2 s: never above it, and not far below on an idle server.
    assert 100 <= done <= 202, done
    assert summary["run"]["duration_ms"] < 4000


def test_bad_input_is_refused_before_any_load(horde, tmp_path, cassandra, loaded):
    result, directory = ycsb(horde, tmp_path, cassandra, "no-table", "--phase", "run", "--keyspace", "ycsb_core",
                             "--table", "missing")
    assert result.code == 3
    assert "ycsb_core.missing" in result.stderr and "--phase load" in result.stderr
    assert not directory.exists()
    result = horde("cql", "127.0.0.1:1", "--results-dir", tmp_path / "unreachable", results=False)
    assert result.code == 3 and "cannot connect to the CQL cluster at 127.0.0.1:1" in result.stderr
    result = horde("cql", cassandra.contact_point, "--workload", "z", "--consistency", "most", results=False)
    assert result.code == 2
    assert "--workload \"z\"" in result.stderr and "--consistency \"most\"" in result.stderr
    result = horde("cql", "--print-plan", results=False)
    assert result.code == 2 and "--phase load or --phase run" in result.stderr
    result = horde("cql", "--print-plan", "--phase", "run", "--workload", "e", results=False)
    assert result.code == 0
    plan = json.loads(result.stdout)
    step = plan["scenarios"][0]["steps"][0]["steps"][0]
    assert step["type"] == "cql_ycsb" and step["proportions"] == {"insert": 0.05, "scan": 0.95}


def test_a_scenario_of_ones_own_runs_a_workloads_operations(horde, tmp_path, cassandra, loaded):
    """examples/ycsb_in_a_scenario.py: `cql.ycsb("b", ...)` in a simulation, workload B's mix on
    the records `horde cql` loaded."""
    users, each = 4, 250
    example = Path(__file__).resolve().parent.parent / "examples" / "ycsb_in_a_scenario.py"
    result = horde("run", example, "-D", f"cluster={cassandra.contact_point}", "-D", "keyspace=ycsb_core",
                   "-D", f"records={RECORDS}", "-D", f"users={users}", "-D", f"operations_per_user={each}")
    assert result.code == 0, result.stderr
    rows = {row["name"]: row for row in result.summary["requests"]}
    operations = users * each
    assert set(rows) == {"READ", "UPDATE"} and sum(row["count"] for row in rows.values()) == operations
    for name, share in MIXES["b"].items():
        assert rows[name]["ko"] == 0, (name, result.summary["errors"])
        sigma = math.sqrt(operations * share * (1 - share))
        assert abs(rows[name]["count"] - operations * share) <= 4 * sigma, (name, rows[name]["count"])
    plan = result.summary["plan"]
    [step] = plan["scenarios"][0]["steps"][0]["steps"]
    assert {key: step.get(key) for key in ("type", "workload", "record_count", "consistency", "proportions")} == \
        {"type": "cql_ycsb", "workload": "b", "record_count": RECORDS, "consistency": "quorum", "proportions": None}


def test_a_workload_with_proportions_too_is_refused_with_its_path(horde, tmp_path, cassandra):
    sim = tmp_path / "both.py"
    sim.write_text('''
from horde import at_once_users, cql, param, scenario, setup
cluster = cql.cluster(param("cluster"), keyspace="ycsb_core")
scn = scenario("s").exec(cql.ycsb("a", record_count=10, proportions={"read": 1}))
setup(scn.inject(at_once_users(1)), protocol=[cluster])
''')
    result = horde("run", sim, "-D", f"cluster={cassandra.contact_point}", results=False)
    assert result.code == 2, result.stderr
    assert "scenarios[0].steps[0].proportions" in result.stderr and "not both" in result.stderr
