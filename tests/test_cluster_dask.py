"""Runs on Dask (issue 26, S5): `--cluster` against nginx, counted on the server's side. Most
tests share one LocalCluster of three single-threaded worker processes started by this module
(`--cluster tcp://...`, an existing cluster as users have one); `local:N`, which starts a
cluster of its own for the run, is exercised by the rest. Every run has a timeout, and the
shared cluster is closed with the module."""

import contextlib
import csv
import json
import os
import signal
import subprocess
import time

import jsonschema
import pytest
from conftest import wait_for_first_merged_interval, Nginx, stop_process, wait_until

RUN_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def dask_cluster():
    """A LocalCluster of three worker processes on 127.0.0.1, as `--cluster local:3` makes."""
    import dask
    from distributed import LocalCluster

    with dask.config.set({"distributed.admin.low-level-log-length": 64}):
        cluster = LocalCluster(n_workers=3, threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address=None, memory_limit=0)
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close(timeout=30)


@pytest.fixture(scope="module")
def logging_nginx(tmp_path_factory):
    """nginx writing each request's URI to ``uris.log``, one a line."""
    directory = tmp_path_factory.mktemp("nginx-dask")

    def configure(conf):
        return conf.replace("  access_log off;",
                            f"  log_format uris '$request_uri';\n  access_log {directory}/uris.log uris;")

    server = Nginx(directory, configure=configure)
    server.log = directory / "uris.log"
    yield server
    server.stop()


def test_a_budget_split_over_three_workers_reaches_the_server_once(horde, nginx, dask_cluster, summary_schema):
    before = nginx.requests_served()
    result = horde("http", nginx.url + "/t1", "-n", "3000", "-c", "6", "--cluster", dask_cluster, "-q",
                   timeout=RUN_TIMEOUT_S)
    assert result.code == 0, result.stderr
    summary = result.summary
    assert nginx.requests_served() - before == summary["global"]["count"] == 3000
    assert summary["run"]["status"] == "limit_reached" and summary["users"]["started"] == 6
    machines = summary["machines"]
    assert [(m["share"], m["segment"], m["requests"], m["delivered"]) for m in machines] == [
        (0, "0:1/3", 1000, True), (1, "1/3:2/3", 1000, True), (2, "2/3:1", 1000, True)]
    # Three worker processes, none of them this one.
    assert len({m["pid"] for m in machines}) == 3
    # Each worker's own log of what it sent agrees with what the coordinator merged.
    assert [(m["verified"], m["log_requests"]) for m in machines] == [(True, 1000)] * 3
    jsonschema.validate(summary, summary_schema)


def test_an_open_rate_on_local_2_sends_the_schedule_exactly(horde, nginx, tmp_path):
    # 300 arrivals a second for 5 s, one request each: 1,500, half on each worker process.
    plan = {
        "version": 1,
        "protocol": {"base_url": nginx.url},
        "scenarios": [{
            "name": "open",
            "steps": [{"type": "request", "name": "t2", "method": "GET", "url": "/t2"}],
            "injection": [{"type": "constant_users_per_sec", "rate": 300, "duration_ms": 5000}],
        }],
    }
    path = tmp_path / "rate.json"
    path.write_text(json.dumps(plan))
    before = nginx.requests_served()
    result = horde("run", path, "-q", "--cluster", "local:2", timeout=RUN_TIMEOUT_S)
    assert result.code == 0, result.stderr
    summary = result.summary
    assert nginx.requests_served() - before == summary["global"]["count"] == summary["users"]["started"] == 1500
    assert [m["requests"] for m in summary["machines"]] == [750, 750]
    # Two processes on this machine's cores: each engine gets its half of them.
    assert [m["threads"] for m in summary["machines"]] == [max(1, len(os.sched_getaffinity(0)) // 2)] * 2
    for machine in summary["machines"]:
        # The clock measured for the start, the share's own start skew, and how soon each full
        # interval (4 of the 5 s; the last ends with the run) reached the coordinator.
        assert isinstance(machine["clock_offset_us"], int) and machine["clock_error_us"] >= 0
        assert machine["start_late_us"] >= 0 and machine["peak_memory_bytes"] > 0
        delay = machine["snapshot_delay_ms"]
        assert delay["intervals"] >= 4 and 0 <= delay["mean"] <= delay["max"]


def test_more_workers_than_users_is_refused_before_any_load(horde, nginx):
    before = nginx.requests_served()
    result = horde("http", nginx.url + "/t7", "-n", "100", "-c", "1", "--cluster", "local:2", timeout=RUN_TIMEOUT_S)
    assert result.code == 2, result.stderr
    assert "share 1 (tcp://127.0.0.1:" in result.stderr
    assert "would have no virtual user: the plan has 1 user for 2 machines" in result.stderr
    assert nginx.requests_served() - before == 0
    assert not result.results_dir.exists() or not any(result.results_dir.iterdir())


def test_weights_split_the_run_in_their_proportion(horde, nginx):
    before = nginx.requests_served()
    result = horde("http", nginx.url + "/weights", "-n", "400", "-c", "4", "-q", "--cluster", "local:2",
                   "--cluster-weights", "3,1", timeout=RUN_TIMEOUT_S)
    assert result.code == 0, result.stderr
    summary = result.summary
    assert nginx.requests_served() - before == summary["global"]["count"] == 400
    assert [(m["segment"], m["requests"]) for m in summary["machines"]] == [("0:3/4", 300), ("3/4:1", 100)]
    assert summary["users"]["started"] == 4


def test_weights_by_cores_and_weights_that_do_not_fit_the_cluster(horde, nginx, dask_cluster):
    before = nginx.requests_served()
    # Three workers on this machine: as many cores each, so equal shares.
    result = horde("http", nginx.url + "/cores", "-n", "300", "-c", "3", "-q", "--cluster", dask_cluster,
                   "--cluster-weights", "cores", timeout=RUN_TIMEOUT_S)
    assert result.code == 0, result.stderr
    assert [m["requests"] for m in result.summary["machines"]] == [100, 100, 100]
    assert nginx.requests_served() - before == 300
    # One weight per worker, each at least 1: refused before any load, naming the problem.
    count = horde("http", nginx.url + "/cores", "-n", "300", "--cluster", dask_cluster, "--cluster-weights", "3,1",
                  timeout=RUN_TIMEOUT_S)
    assert count.code == 2, count.stderr
    assert "--cluster-weights 3,1: 2 weights for 3 machines (tcp://" in count.stderr, count.stderr
    zero = horde("http", nginx.url + "/cores", "--cluster", "local:2", "--cluster-weights", "1,0",
                 timeout=RUN_TIMEOUT_S)
    assert zero.code == 2 and '"0" is not a weight' in zero.stderr, zero.stderr
    few = horde("http", nginx.url + "/cores", "-n", "30", "-c", "3", "--cluster", dask_cluster,
                "--cluster-weights", "8,1,1", timeout=RUN_TIMEOUT_S)
    assert few.code == 2, few.stderr
    assert "would have no virtual user: the plan has 3 users for 3 machines of weights 8,1,1" in few.stderr
    assert nginx.requests_served() - before == 300


def test_one_worker_sends_what_a_local_run_sends(horde, nginx):
    counts = {}
    for flags in ([], ["--cluster", "local:1"]):
        before = nginx.requests_served()
        result = horde("http", nginx.url + "/t8", "-n", "1000", "-c", "3", "-q", *flags, timeout=RUN_TIMEOUT_S)
        assert result.code == 0, result.stderr
        summary = result.summary
        counts[bool(flags)] = (nginx.requests_served() - before, summary["global"]["count"],
                               summary["global"]["ok"], summary["users"]["started"])
        assert len(summary.get("machines", [])) == (1 if flags else 0)
    assert counts[True] == counts[False] == (1000, 1000, 1000, 3)


def start_a_long_coordinated_run(nginx, dask_cluster, results, path):
    """`horde http` at 200 arrivals a second for up to 60 s over the shared cluster, returned once
    the coordinator has merged its first interval into `results`."""
    process = subprocess.Popen(["horde", "http", nginx.url + path, "-d", "60s", "--rate", "200", "-c", "3", "-q",
                                "--cluster", dask_cluster, "--results-dir", str(results)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_first_merged_interval(process, results, 60)
    return process


def nginx_settles(nginx, quiet_s):
    """Whether nginx's count stays the same for `quiet_s`."""
    first = nginx.requests_served()
    time.sleep(quiet_s)
    return nginx.requests_served() == first


def test_an_interrupted_coordinator_stops_every_worker_and_keeps_what_they_sent(nginx, dask_cluster, tmp_path):
    results = tmp_path / "interrupted"
    before = nginx.requests_served()
    process = start_a_long_coordinated_run(nginx, dask_cluster, results, "/t9")
    try:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    finally:
        stop_process(process)
    assert process.returncode == 130, stderr
    summary = json.loads((results / "summary.json").read_text())
    assert summary["run"]["status"] == "interrupted"

    # The workers stopped: the server's count stops growing (polled), and it is the merged one.
    wait_until(lambda: nginx_settles(nginx, 0.5), timeout=10, what="nginx's count to stop growing")
    # Every request was counted, but, as in a local run, one in flight per user the stop cut off.
    served, merged = nginx.requests_served() - before, summary["global"]["count"]
    assert 0 < merged <= served <= merged + summary["users"]["interrupted"]
    assert all(m["delivered"] for m in summary["machines"])


def test_a_killed_coordinator_leaves_no_worker_sending(nginx, dask_cluster, tmp_path):
    """SIGKILL: nothing of the coordinator runs any more, not even its stop. Its beat stops,
    and each share stops itself (share.BEAT_TIMEOUT_S) instead of going on with a load nobody
    counts; the results on disk are what was merged before the kill."""
    from distributed import Client

    results = tmp_path / "killed"
    process = start_a_long_coordinated_run(nginx, dask_cluster, results, "/t15")
    try:
        process.kill()
        process.communicate(timeout=30)
        killed_at = time.monotonic()
    finally:
        stop_process(process)

    wait_until(lambda: nginx_settles(nginx, 1.0), timeout=30, what="nginx's count to stop growing")
    assert time.monotonic() - killed_at < 12, "the shares stopped within the beat's timeout (5 s) and a margin"
    summary = json.loads((results / "summary.json").read_text())
    assert summary["run"]["status"] == "running", "a killed coordinator's last summary says so"
    # The workers are free again: nothing of the run is still processing.
    with Client(dask_cluster, timeout=30) as client:
        wait_until(lambda: not any(client.processing().values()), timeout=30, what="the workers to be idle")


def _queue_plan(tmp_path, base_url, rows, url, injection):
    """A plan whose users each take a row of a queue of ``rows`` ids (a CSV file) and send it in
    one request to ``url`` (a template); its path."""
    rows_file = tmp_path / "rows.csv"
    rows_file.write_text("id\n" + "".join(f"{i}\n" for i in range(rows)))
    plan = {
        "version": 1,
        "protocol": {"base_url": base_url},
        "feeders": [{"name": "rows", "source": {"type": "csv", "path": str(rows_file)}}],
        "scenarios": [{
            "name": "rows",
            "steps": [{"type": "feed", "feeder": "rows"},
                      {"type": "request", "name": "row", "method": "GET", "url": url}],
            "injection": injection,
        }],
    }
    path = tmp_path / "rows.json"
    path.write_text(json.dumps(plan))
    return path


def test_queue_rows_go_to_one_worker_each(horde, logging_nginx, dask_cluster, tmp_path):
    path = _queue_plan(tmp_path, logging_nginx.url, 500, "/row?id=${id}",
                       [{"type": "constant_users_per_sec", "rate": 100, "duration_ms": 3000}])
    logged_before = logging_nginx.log.read_text().count("\n") if logging_nginx.log.exists() else 0
    result = horde("run", path, "-q", "--cluster", dask_cluster, timeout=RUN_TIMEOUT_S)
    assert result.code == 0, result.stderr
    ids = [uri.split("id=")[1] for uri in logging_nginx.log.read_text().splitlines()[logged_before:]
           if uri.startswith("/row?")]
    summary = result.summary
    assert len(ids) == len(set(ids)) == summary["global"]["count"] == 300
    assert [m["requests"] for m in summary["machines"]] == [100, 100, 100]
    # Every id of the file at most once, and the ones used are rows of the file.
    assert set(ids) <= {str(i) for i in range(500)}


def test_the_request_log_of_a_cluster_run_has_each_request_the_server_saw_once(horde, logging_nginx,
                                                                              dask_cluster, tmp_path):
    # Each row's id in its URL: the log's URLs are compared with nginx's, request for request.
    path = _queue_plan(tmp_path, logging_nginx.url, 600, "/logged?id=${id}",
                       [{"type": "constant_users_per_sec", "rate": 150, "duration_ms": 3000}])
    logged_before = logging_nginx.log.read_text().count("\n") if logging_nginx.log.exists() else 0
    log = tmp_path / "requests.jsonl"
    result = horde("run", path, "-q", "--cluster", dask_cluster, "--request-log", log, timeout=RUN_TIMEOUT_S)
    assert result.code == 0, result.stderr
    served = sorted(uri for uri in logging_nginx.log.read_text().splitlines()[logged_before:]
                    if uri.startswith("/logged?"))
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(records) == len(served) == result.summary["global"]["count"] == 450
    assert sorted(r["url"].removeprefix(logging_nginx.url) for r in records) == served
    # Users are numbered run-wide: 450 arrivals, 450 users, whichever worker ran them.
    assert len({r["user"] for r in records}) == 450
    assert all(r["ok"] and r["status"] == 200 and r["scenario"] == "rows" for r in records)


def test_a_jtl_request_log_of_a_cluster_run_has_one_header(horde, nginx, dask_cluster, tmp_path):
    log = tmp_path / "requests.jtl"
    before = nginx.requests_served()
    result = horde("http", nginx.url + "/jtl", "-n", "600", "-c", "6", "-q", "--cluster", dask_cluster,
                   "--request-log", log, timeout=RUN_TIMEOUT_S)
    assert result.code == 0, result.stderr
    header, *lines = log.read_text().splitlines()
    assert header.startswith("timeStamp,elapsed,label,responseCode")
    assert not any(line.startswith("timeStamp") for line in lines)
    with open(log, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == nginx.requests_served() - before == result.summary["global"]["count"] == 600
    assert all(row["success"] == "true" and row["responseCode"] == "200" for row in rows)
    # threadName: each of the 6 users, over the three workers.
    assert {row["threadName"].rsplit(" ", 1)[1] for row in rows} == {f"1-{user}" for user in range(1, 7)}


def test_a_lost_workers_requests_are_logged_as_far_as_they_were_counted(nginx, tmp_path):
    log = tmp_path / "lost.jsonl"
    code, stderr, summary, _, served = run_and_kill_a_worker(nginx, tmp_path, "-d", "6s", "--request-log", str(log))
    assert code == 6, stderr
    kept, lost = summary["machines"]
    records = log.read_text().splitlines()
    # The log and the results agree: the lost worker's records up to its last counted interval.
    assert len(records) == summary["global"]["count"] == kept["requests"] + lost["requests"] <= served
    assert lost["requests"] > 0


def test_trials_and_a_bad_address_refuse_a_cluster(horde, nginx, tmp_path):
    trials = horde("run", "--trials", "2", tmp_path / "x.json", "--cluster", "local:2", timeout=RUN_TIMEOUT_S)
    assert trials.code == 2 and "--trials runs on one machine for now: not with --cluster" in trials.stderr
    bad = horde("http", nginx.url, "--cluster", "local:0", timeout=RUN_TIMEOUT_S)
    assert bad.code == 2 and "not a number of worker processes" in bad.stderr


def test_without_dask_the_flag_says_how_to_install_it(horde, nginx, tmp_path):
    # A `distributed` that cannot be imported, first on the path: as if Dask were missing.
    fake = tmp_path / "no-dask" / "distributed"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named distributed')\n")
    before = nginx.requests_served()
    result = horde("http", nginx.url + "/none", "-n", "10", "--cluster", "local:2", timeout=RUN_TIMEOUT_S,
                   env={"PYTHONPATH": str(fake.parent)})
    assert result.code == 2, result.stderr
    assert "pip install 'horde[cluster]'" in result.stderr
    assert nginx.requests_served() - before == 0


def test_a_run_ended_by_its_duration_counts_what_a_local_run_counts(horde, nginx, dask_cluster):
    # Each worker ends at the plan's duration by itself, as a local run does (the coordinator's
    # own deadline does not stop them early, which left part of the schedule unsent): what the
    # server saw was counted, but for a request in flight when a user was cut off at the end.
    # 7 s: longer than a share waits for the coordinator's beat (5 s), which keeps it going.
    before = nginx.requests_served()
    result = horde("http", nginx.url + "/duration", "--rate", "300", "-d", "7s", "-c", "3", "-q",
                   "--cluster", dask_cluster, timeout=RUN_TIMEOUT_S)
    assert result.code == 0, result.stderr
    summary = result.summary
    assert summary["run"]["status"] == "limit_reached"
    served, merged = nginx.requests_served() - before, summary["global"]["count"]
    assert 2100 <= merged <= served <= merged + summary["users"]["interrupted"]


def run_and_kill_a_worker(nginx, tmp_path, *flags, command=None):
    """A local:2 run of 100 arrivals a second (`horde http`, or `command`) with worker 1
    SIGKILLed after the first merged interval: (exit code, stderr, summary, seconds from the
    kill to the end, nginx's count)."""
    results = tmp_path / "lost"
    before = nginx.requests_served()
    command = command or ["horde", "http", nginx.url + "/lost", "--rate", "100", "-c", "2"]
    process = subprocess.Popen([*command, "-q", "--cluster", "local:2", "--results-dir", str(results), *flags],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def machines():
            try:
                return json.loads((results / "summary.json").read_text())["machines"]
            except (OSError, ValueError, KeyError):
                return None

        wait_until(lambda: machines(), timeout=60, what="the coordinator's first merged interval")
        os.kill(machines()[1]["pid"], signal.SIGKILL)
        killed_at = time.monotonic()
        _, stderr = process.communicate(timeout=90)
        ended_within = time.monotonic() - killed_at
    finally:
        stop_process(process)
    summary = json.loads((results / "summary.json").read_text())
    return process.returncode, stderr, summary, ended_within, nginx.requests_served() - before


def test_a_lost_worker_leaves_the_others_to_deliver_their_share_and_fails_the_command(nginx, tmp_path):
    # --on-worker-loss continue (the default): worker 0 sends its whole half of 6 s x 100/s.
    code, stderr, summary, _, served = run_and_kill_a_worker(nginx, tmp_path, "-d", "6s")
    assert code == 6, stderr
    assert "a share was lost, its load not delivered" in stderr and "left the Dask cluster" in stderr, stderr
    assert summary["run"]["status"] == "limit_reached"
    kept, lost = summary["machines"]
    assert kept["delivered"] and kept["requests"] == 300 and "lost" not in kept
    assert not lost["delivered"] and "left the Dask cluster" in lost["lost"]
    assert summary["global"]["count"] == kept["requests"] + lost["requests"] <= served
    # What it did not deliver, from its own schedule: its half of the throttle's 100 a second
    # (`--rate`) from its last counted interval's end to the run's end.
    [missed] = lost["missed"]
    assert missed["from_s"] == pytest.approx(lost["requests"] / 50, abs=0.1), missed
    assert missed["to_s"] == 6, missed
    assert missed["throttle_slots"] == 50 * (6 - missed["from_s"]) and missed["arrivals"] == 0, missed
    assert f"its load not delivered ({missed['throttle_slots']} requests of the throttle from" in stderr, stderr


def test_abort_stops_every_worker_and_allow_worker_loss_leaves_the_exit_code_alone(nginx, tmp_path):
    code, stderr, summary, ended_within, _ = run_and_kill_a_worker(
        nginx, tmp_path, "-d", "60s", "--on-worker-loss", "abort", "--allow-worker-loss")
    assert code == 0, stderr
    assert ended_within < 15, ended_within
    assert summary["run"]["status"] == "stopped"
    assert "--on-worker-loss abort" in summary["run"]["stop_reason"]
    assert any("left the Dask cluster" in (m.get("lost") or "") for m in summary["machines"])


def test_the_simulation_sets_the_worker_loss_policy_and_a_flag_overrides_it(nginx, tmp_path):
    # The policy is the plan's (options.cluster), here from setup(); --on-worker-loss wins.
    simulation = tmp_path / "lost.py"
    simulation.write_text(f"""
from horde import constant_users_per_sec, http, param, scenario, setup
setup(scenario("lost").exec(http("lost").get("/lost")).inject(constant_users_per_sec(100).during(param("seconds", 60))),
      protocol=http.base_url("{nginx.url}"), on_worker_loss="abort", allow_worker_loss=True)
""")
    plan = json.loads(subprocess.run(["horde", "plan", simulation], capture_output=True, text=True,
                                     check=True).stdout)
    assert plan["options"]["cluster"] == {"on_worker_loss": "abort", "allow_worker_loss": True}
    code, stderr, summary, ended_within, _ = run_and_kill_a_worker(
        nginx, tmp_path, command=["horde", "run", str(simulation)])
    assert code == 0, stderr
    assert ended_within < 15 and summary["run"]["status"] == "stopped", (ended_within, summary["run"])
    assert "--on-worker-loss abort" in summary["run"]["stop_reason"]
    # The flag over the plan: the other worker goes on to the end of a 4 s run (the plan's
    # allow_worker_loss still holds).
    (tmp_path / "lost").rename(tmp_path / "aborted")
    code, stderr, summary, _, _ = run_and_kill_a_worker(
        nginx, tmp_path, "--on-worker-loss", "continue", command=["horde", "run", str(simulation), "-D", "seconds=4"])
    assert code == 0, stderr
    assert summary["run"]["status"] == "completed", summary["run"]
    kept, lost = summary["machines"]
    assert kept["requests"] == 200 and lost["lost"], summary["machines"]


def test_replace_starts_a_killed_workers_share_on_a_spare_from_a_moment_later(nginx, tmp_path):
    # 8 s at 100/s over local:2 and a spare; share 1's worker is killed after the first interval.
    code, stderr, summary, _, served = run_and_kill_a_worker(
        nginx, tmp_path, "-d", "8s", "--on-worker-loss", "replace", "--spares", "1")
    # What share 1 had due between its last interval and the takeover was not delivered.
    assert code == 6, stderr
    assert summary["run"]["status"] == "limit_reached"
    kept, replaced = summary["machines"]
    assert kept["delivered"] and kept["requests"] == 400 and "replaced" not in kept
    assert "lost" not in replaced and not replaced["delivered"]
    [loss] = replaced["replaced"]
    assert "left the Dask cluster" in loss["reason"] or "failed" in loss["reason"], loss
    # Another process took over, a moment after the loss, and ran the share to the end.
    assert replaced["pid"] != loss["pid"]
    assert loss["resume_after_s"] - loss["lost_at_s"] == pytest.approx(0.5, abs=0.01)
    resumed_for = 8 - loss["resume_after_s"]
    after_loss = replaced["requests"] - 50 * loss["last_interval"]
    # The schedule stays absolute: no burst of what was due in the gap, the share's 50/s after.
    assert 50 * resumed_for - 10 <= after_loss <= 50 * resumed_for + 10, (after_loss, loss)
    assert summary["global"]["count"] == kept["requests"] + replaced["requests"] < 400 + 50 * 8
    # The killed worker's requests after its last interval reached nginx but no count.
    assert 0 <= served - summary["global"]["count"] <= 60
    assert "a share was lost and replaced, its load from interval 1 to" in stderr, stderr
    # What was due between its last counted interval and the takeover: 50 a second.
    [missed] = replaced["missed"]
    assert missed["from_s"] == loss["last_interval"] and missed["to_s"] <= loss["resume_after_s"] + 0.01, missed
    assert abs(missed["throttle_slots"] - 50 * (loss["resume_after_s"] - loss["last_interval"])) <= 2, missed
    # The stop sent to the dead worker fails quietly.
    assert "Traceback" not in stderr, stderr


def test_a_replacement_uses_no_queue_row_or_counter_value_its_lost_worker_could_have_used(logging_nginx, tmp_path):
    # Row grants: each share takes queue rows and run-wide counter values only up to what the
    # coordinator granted with its beats, so the replacement starts past every row and value
    # the killed worker could have taken (reported or not), and none reaches the server twice.
    # Two users at once, then 100 a second: a replacement makes its at-once user again.
    path = _queue_plan(tmp_path, logging_nginx.url, 20_000, "/granted?id=${id}&user=${__user_id}&n=${__counter(n)}",
                       [{"type": "at_once_users", "users": 2},
                        {"type": "constant_users_per_sec", "rate": 100, "duration_ms": 8000}])
    results = tmp_path / "granted"
    logged_before = logging_nginx.log.read_text().count("\n") if logging_nginx.log.exists() else 0
    process = subprocess.Popen(["horde", "run", str(path), "--cluster", "local:2", "--spares", "1",
                                "--on-worker-loss", "replace", "--results-dir", str(results)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: (_live_summary(results) or {}).get("machines"), timeout=60,
                   what="the coordinator's first merged interval")
        os.kill(_live_summary(results)["machines"][1]["pid"], signal.SIGKILL)
        stdout, stderr = process.communicate(timeout=90)
    finally:
        stop_process(process)
    assert process.returncode == 6, stderr
    queries = [dict(pair.split("=") for pair in uri.split("?")[1].split("&"))
               for uri in logging_nginx.log.read_text().splitlines()[logged_before:] if uri.startswith("/granted?")]
    ids = [int(query["id"]) for query in queries]
    # Every row at most once at the server, the killed worker's unreported ones included.
    assert len(ids) == len(set(ids)), sorted(i for i in set(ids) if ids.count(i) > 1)[:10]
    # Every user number once too: the replacement numbers its users after the whole run's 802.
    users = [int(query["user"]) for query in queries]
    assert len(users) == len(set(users)) and max(users) >= 802, sorted(users)[-5:]
    # Every counter value once, the replacement's after every value granted to the lost attempt.
    values = [int(query["n"]) for query in queries]
    assert len(values) == len(set(values)), sorted(n for n in set(values) if values.count(n) > 1)[:10]
    assert max(values) > 2 * 4_096, max(values)
    summary = json.loads((results / "summary.json").read_text())
    kept, replaced = summary["machines"]
    assert kept["requests"] == 401
    [loss] = replaced["replaced"]
    # The lost attempt had been granted 4,096 takes at first and had used about 50 a second.
    assert 4_096 - 150 <= loss["rows_skipped"] <= 4_096, loss
    assert "feeder rows granted to the lost attempt skipped (none used twice)" in stdout + stderr, stdout
    # The replacement's rows come after the skipped ones: its takes started past them.
    assert max(ids) > 2 * 4_096, max(ids)


def _paced_run_on_two_workers(nginx, results, path, duration, *flags):
    """`horde http` at 100 requests a second over `local:2`, started in the background."""
    return subprocess.Popen(["horde", "http", nginx.url + path, "--rate", "100", "-c", "2", "-d", duration,
                             "--cluster", "local:2", "--results-dir", str(results), *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _live_summary(results):
    """summary.json as the coordinator last wrote it, None before its first."""
    try:
        return json.loads((results / "summary.json").read_text())
    except (OSError, ValueError):
        return None


def _process_exists(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _stop_share_1(results):
    """SIGSTOPs the second share's process once the first merged interval is written; its pid."""
    wait_until(lambda: (_live_summary(results) or {}).get("machines"), timeout=60,
               what="the coordinator's first merged interval")
    pid = _live_summary(results)["machines"][1]["pid"]
    os.kill(pid, signal.SIGSTOP)
    return pid


def test_a_stopped_worker_is_suspect_at_3_s_and_lost_at_10_s_while_the_others_go_on(nginx, tmp_path):
    # SIGSTOP: the process lives but says nothing (a hung machine, a long GC pause). The
    # coordinator's own deadlines, not Dask's: suspect at 3 s, shown live; lost at 10 s.
    results = tmp_path / "stopped"
    process = _paced_run_on_two_workers(nginx, results, "/stopped", "25s")
    stopped_pid = None

    def live():
        return _live_summary(results)

    try:
        stopped_pid = _stop_share_1(results)
        stopped_at = time.monotonic()
        wait_until(lambda: "silent_s" in live()["machines"][1], timeout=20, what="share 1 suspect")
        suspect_after = time.monotonic() - stopped_at
        count_when_suspect = live()["global"]["count"]
        wait_until(lambda: "lost" in live()["machines"][1], timeout=30, what="share 1 lost")
        lost_after = time.monotonic() - stopped_at
        # The live results kept moving with the other share's requests meanwhile.
        assert live()["global"]["count"] > count_when_suspect
        # The hung worker is restarted by its nanny while the run goes on (a fresh process
        # joins in its place): it does not hold its place until Dask's worker-ttl.
        wait_until(lambda: not _process_exists(stopped_pid), timeout=12, what="the stopped worker restarted")
        assert process.poll() is None, "the run should still be going"
        _, stderr = process.communicate(timeout=90)
    finally:
        if stopped_pid is not None:
            # Dask's nanny has usually killed it with the cluster already.
            with contextlib.suppress(ProcessLookupError):
                os.kill(stopped_pid, signal.SIGKILL)
        stop_process(process)
    # Silence counts from the share's last interval, up to 1 s before the stop.
    assert 2 <= suspect_after < lost_after, (suspect_after, lost_after)
    assert lost_after >= 9, lost_after
    assert process.returncode == 6, stderr
    assert "| share 1 silent" in stderr and "| share 1 LOST" in stderr, stderr
    summary = json.loads((results / "summary.json").read_text())
    kept, lost = summary["machines"]
    assert kept["delivered"] and kept["requests"] == 1250 and "silent_s" not in kept
    assert not lost["delivered"] and "silent_s" not in lost
    assert "sent nothing for 10.0 s" in lost["lost"] or "left the Dask cluster" in lost["lost"], lost["lost"]


def test_a_share_resumed_after_its_lease_lapsed_sends_nothing_more(nginx, tmp_path):
    # SIGSTOP for longer than the lease (5 s) but shorter than the coordinator's 10 s: on
    # SIGCONT every timer of the share is due at once. Its lease, checked before each request,
    # has lapsed: none of the ~300 arrivals it missed goes out in a burst before its watchdog
    # thread wakes; the share stops itself, and the other goes on.
    results = tmp_path / "fenced"
    process = _paced_run_on_two_workers(nginx, results, "/fenced", "20s")
    stopped_pid = None
    try:
        stopped_pid = _stop_share_1(results)
        time.sleep(6.5)
        before = nginx.requests_served()
        os.kill(stopped_pid, signal.SIGCONT)
        time.sleep(1.0)
        after_resume = nginx.requests_served() - before
        _, stderr = process.communicate(timeout=90)
    finally:
        if stopped_pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(stopped_pid, signal.SIGCONT)
        stop_process(process)
    # The other share's 50 a second, not the resumed share's backlog of about 325 on top.
    assert after_resume < 100, after_resume
    summary = json.loads((results / "summary.json").read_text())
    kept, fenced = summary["machines"]
    assert kept["requests"] == 1000, kept
    assert fenced["requests"] < 500, fenced
    # It did not deliver its load: lost, saying why, and the run exits 6 as for any lost share.
    assert not fenced["delivered"] and "stopped itself: no beat from the coordinator" in fenced["lost"], fenced
    assert process.returncode == 6, stderr


def test_a_share_that_stopped_itself_is_replaced_on_a_spare(nginx, tmp_path):
    # The same lapse under `replace`: once the share's last interval is in, a spare takes its
    # schedule over, and says when it did.
    results = tmp_path / "fenced-replaced"
    process = _paced_run_on_two_workers(nginx, results, "/fenced-replaced", "16s", "--on-worker-loss", "replace",
                                        "--spares", "1")
    stopped_pid = None
    try:
        stopped_pid = _stop_share_1(results)
        time.sleep(6.5)
        os.kill(stopped_pid, signal.SIGCONT)
        _, stderr = process.communicate(timeout=90)
    finally:
        if stopped_pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(stopped_pid, signal.SIGCONT)
        stop_process(process)
    assert process.returncode == 6, stderr
    summary = json.loads((results / "summary.json").read_text())
    kept, share = summary["machines"]
    assert kept["requests"] == 800 and kept["delivered"], kept
    assert "lost" not in share and share["pid"] != stopped_pid, share
    [loss] = share["replaced"]
    assert "stopped itself: no beat from the coordinator" in loss["reason"] and loss["pid"] == stopped_pid, loss
    assert loss["machine"].startswith("tcp://127.0.0.1:"), loss
    # Taken over the lead after the loss (in whole ms), or later, as the replacement reported.
    assert loss["lost_at_s"] + 0.499 <= loss["resume_after_s"] < 16, loss
    # It sent its first interval or two before it was stopped, then nothing until the takeover;
    # the replacement its 50 a second from then on, no burst.
    resumed_for = 16 - loss["resume_after_s"]
    assert 50 * resumed_for + 40 <= share["requests"] <= 50 * resumed_for + 110, (share["requests"], loss)


@contextlib.contextmanager
def cli_cluster(tmp_path, python_paths):
    """A cluster of CLI-started processes, as users run one: a `dask scheduler`, and a `dask
    worker` per entry of ``python_paths`` (None: this environment; else a PYTHONPATH for that
    worker). Yields (the scheduler's address, the scheduler's process)."""
    import sys

    from distributed import Client

    scheduler_file = tmp_path / "scheduler.json"
    cli = [sys.executable, "-m"]
    processes = [subprocess.Popen([*cli, "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                                   "--no-dashboard", "--scheduler-file", str(scheduler_file)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        wait_until(scheduler_file.exists, timeout=30, what="the scheduler's file")
        for path in python_paths:
            env = dict(os.environ, **({"PYTHONPATH": path} if path else {}))
            processes.append(subprocess.Popen([*cli, "distributed.cli.dask_worker", "--scheduler-file",
                                               str(scheduler_file), "--nthreads", "1", "--no-dashboard"],
                                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        address = json.loads(scheduler_file.read_text())["address"]
        with Client(address, timeout=30) as client:
            client.wait_for_workers(len(python_paths), timeout=60)
        yield address, processes[0]
    finally:
        for process in reversed(processes):
            stop_process(process)


def test_the_scheduler_keeps_none_of_a_runs_messages_after_it(horde, nginx, tmp_path):
    # A scheduler of its own: on the module's shared one, an earlier run's late messages may
    # make that run's topic again after it was dropped.
    from distributed import Client

    def horde_topics(dask_scheduler=None):
        broker = getattr(dask_scheduler, "_broker", None)
        topics = broker._topics if broker is not None else dask_scheduler.events
        return {name: len(getattr(topic, "events", topic)) for name, topic in topics.items() if name.startswith("horde-")}

    log = tmp_path / "requests.jsonl"
    with cli_cluster(tmp_path, [None, None]) as (address, _):
        result = horde("http", nginx.url + "/forget", "-n", "300", "-c", "4", "-q", "--cluster", address,
                       "--request-log", log, timeout=RUN_TIMEOUT_S)  # fmt: skip
        assert result.code == 0, result.stderr
        with Client(address, timeout=30) as client:
            # The topic is dropped at the run's end and again a second later (for messages
            # still on their way then).
            kept = client.run_on_scheduler(horde_topics)
            deadline = time.monotonic() + 5
            while kept and time.monotonic() < deadline:
                time.sleep(0.2)
                kept = client.run_on_scheduler(horde_topics)
    assert len(log.read_text().splitlines()) == result.summary["global"]["count"] == 300
    assert kept == {}, f"the scheduler kept the run's messages 5 s after it (topic: events): {kept}"


def test_workers_without_this_horde_are_named_before_any_load(horde, nginx, tmp_path):
    # An existing cluster of CLI-started processes: one worker with this horde, one whose
    # Python imports another horde version, one whose Python has none.
    def fake_horde(directory, engine_source):
        package = directory / "horde"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "_engine.py").write_text(engine_source)
        return str(directory)

    other_version = fake_horde(tmp_path / "other", "__version__ = '0.0.0-other'\n")
    no_horde = fake_horde(tmp_path / "none", "raise ImportError('no horde on this worker')\n")
    with cli_cluster(tmp_path, [None, other_version, no_horde]) as (address, _):
        before = nginx.requests_served()
        result = horde("http", nginx.url + "/probe", "-n", "30", "-c", "3", "--cluster", address,
                       timeout=RUN_TIMEOUT_S)
    assert result.code == 3, result.stderr
    assert "2 of 3 workers cannot run a share, nothing was sent" in result.stderr, result.stderr
    assert "has horde 0.0.0-other, this machine horde" in result.stderr
    assert "its Python has no horde (no horde on this worker)" in result.stderr
    assert nginx.requests_served() - before == 0


def test_a_killed_scheduler_ends_the_run_at_once_and_the_workers_stop_sending(nginx, tmp_path):
    # The scheduler carries every message: without it the coordinator hears nothing, and the
    # workers get no beat. The run ends now, naming the scheduler; the workers stop by
    # themselves when their lease lapses (5 s), and the results keep what was merged.
    results = tmp_path / "no-scheduler"
    with cli_cluster(tmp_path, [None, None]) as (address, scheduler):
        before = nginx.requests_served()
        process = subprocess.Popen(["horde", "http", nginx.url + "/scheduler", "--rate", "100", "-c", "2", "-d", "60s",
                                    "-q", "--cluster", address, "--results-dir", str(results)],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for_first_merged_interval(process, results, timeout=60)
            scheduler.kill()
            killed_at = time.monotonic()
            _, stderr = process.communicate(timeout=60)
            ended_within = time.monotonic() - killed_at
        finally:
            stop_process(process)
        # The workers still run (their processes outlive the scheduler) but send nothing once
        # their lease lapsed: nginx's count stops growing.
        wait_until(lambda: nginx_settles(nginx, 1.0), timeout=30, what="nginx's count to stop growing")
        served = nginx.requests_served() - before
        settled_within = time.monotonic() - killed_at
    assert process.returncode == 6, stderr
    assert ended_within < 5, ended_within
    assert f"the Dask scheduler {address} is unreachable" in stderr, stderr
    assert "Traceback" not in stderr, stderr
    summary = json.loads((results / "summary.json").read_text())
    assert all("is unreachable" in m["lost"] for m in summary["machines"]), summary["machines"]
    counted = summary["global"]["count"]
    assert counted == sum(m["requests"] for m in summary["machines"]) > 0
    # Uncounted: what the two workers sent (100 a second) until their lease lapsed, 5 s after
    # the last beat that reached them.
    assert 0 <= served - counted <= 100 * 7, (served, counted)
    assert settled_within < 15, settled_within


def _sweep_dir(results):
    [directory] = [p for p in results.iterdir() if p.name.startswith("sweep-")]
    return directory


def _level_summaries(directory):
    """Each run of the sweep in `directory`: (its sweep.json row, its level's summary.json)."""
    report = json.loads((directory / "sweep.json").read_text())
    return report, [(level, json.loads((directory / level["results"] / "summary.json").read_text()))
                    for level in report["levels"]]


def test_a_sweep_runs_each_level_on_the_cluster_counted_exactly_by_the_server(horde, nginx, dask_cluster):
    # Open levels of 60 and 120 arrivals a second for 2 s, one request each: every level is a
    # coordinated run of its own on the same three workers, merged exactly.
    before = nginx.requests_served()
    # Late starts are judged leniently: the generator's limits on this busy machine are not
    # what this test is about.
    result = horde("sweep", nginx.url + "/sweep", "--rate", "60,120", "--level-duration", "2s", "--warmup", "0s",
                   "--late-start-threshold", "50ms", "--cluster", dask_cluster, timeout=RUN_TIMEOUT_S)
    assert result.code == 0, result.stderr
    report, runs = _level_summaries(_sweep_dir(result.results_dir))
    # A busy machine may start a few arrivals late: that level then runs again.
    assert [level["level"] for level, _ in runs if level["not_delivered"] is None] == [60, 120], report
    for level, summary in runs:
        assert level["requests"] == summary["global"]["count"] == 2 * level["level"], level
        machines = summary["machines"]
        assert [m["share"] for m in machines] == [0, 1, 2]
        assert sum(m["requests"] for m in machines) == level["requests"]
        assert all(m["verified"] for m in machines), machines
    # The same three worker processes ran every level.
    assert len({m["pid"] for _, summary in runs for m in summary["machines"]}) == 3
    assert nginx.requests_served() - before == sum(level["requests"] for level, _ in runs)


def test_an_automatic_sweep_starts_with_a_user_on_every_machine(horde, nginx, dask_cluster):
    # Weights 3,1,1 over the three workers: the first level gives each share a user.
    result = horde("sweep", nginx.url + "/auto", "--auto", "--max-level", "8", "--bisect", "0", "--level-duration",
                   "1s", "--warmup", "0s", "--late-start-threshold", "50ms", "--cluster", dask_cluster,
                   "--cluster-weights", "3,1,1", timeout=RUN_TIMEOUT_S)
    assert result.code == 0, result.stderr
    report, runs = _level_summaries(_sweep_dir(result.results_dir))
    assert runs[0][0]["level"] >= 3, report
    for level, summary in runs:
        assert [m["share"] for m in summary["machines"]] == [0, 1, 2]
        assert all(m["requests"] > 0 for m in summary["machines"]), (level, summary["machines"])


def test_a_sweep_level_a_cluster_cannot_split_is_refused_before_any_load(horde, nginx, dask_cluster):
    before = nginx.requests_served()
    result = horde("sweep", nginx.url + "/sweep", "--users", "1,3", "--level-duration", "1s",
                   "--cluster", dask_cluster, timeout=RUN_TIMEOUT_S)
    assert result.code == 2, result.stderr
    assert "share 1" in result.stderr and "no virtual user" in result.stderr, result.stderr
    assert nginx.requests_served() - before == 0


def _sweep_killing_a_worker(nginx, tmp_path, *flags):
    """A sweep of 60 then 120 arrivals a second for 4 s on local:2, share 1's worker SIGKILLed
    once the first level merged an interval: (exit code, stderr, sweep directory)."""
    results = tmp_path / "sweep-lost"
    process = subprocess.Popen(["horde", "sweep", nginx.url + "/sweep-lost", "--rate", "60,120", "--level-duration",
                                "4s", "--warmup", "0s", "--late-start-threshold", "50ms", "--cluster", "local:2",
                                "--results", str(results), *flags],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def first_level_machines():
            try:
                summary = json.loads(next(results.glob("sweep-*/rate-60/summary.json")).read_text())
                return summary["machines"] if summary["global"]["count"] > 0 else None
            except (OSError, ValueError, KeyError, StopIteration):
                return None

        wait_until(first_level_machines, timeout=60, what="the first level's first merged interval")
        os.kill(first_level_machines()[1]["pid"], signal.SIGKILL)
        _, stderr = process.communicate(timeout=120)
    finally:
        stop_process(process)
    return process.returncode, stderr, _sweep_dir(results)


def test_a_sweep_that_loses_a_worker_stops_and_fails(nginx, tmp_path):
    code, stderr, directory = _sweep_killing_a_worker(nginx, tmp_path)
    assert code == 6, stderr
    report, runs = _level_summaries(directory)
    # The level that lost it is shown, not delivered; none runs after it on fewer machines.
    [(level, summary)] = runs
    assert level["level"] == 60 and "left the Dask cluster" in level["not_delivered"], level
    assert "level 60 lost a worker" in report["stopped"] and "lost a worker" in stderr, stderr
    assert any(m.get("lost") for m in summary["machines"])


def test_a_sweep_replaces_a_lost_worker_and_runs_its_level_again(nginx, tmp_path):
    before = nginx.requests_served()
    code, stderr, directory = _sweep_killing_a_worker(nginx, tmp_path, "--on-worker-loss", "replace", "--spares", "1")
    assert code == 0, stderr
    report, runs = _level_summaries(directory)
    first, *others = runs
    # The level whose share was replaced did not deliver its load: it ran again, on the worker
    # kept and the spare, and the next level ran there too.
    assert first[0]["level"] == 60 and "replaced" in first[0]["not_delivered"], first[0]
    assert [level["level"] for level, _ in others if level["not_delivered"] is None] == [60, 120], report
    killed = first[1]["machines"][1]["replaced"][0]["pid"]
    for level, summary in others:
        assert level["requests"] == summary["global"]["count"] == 4 * level["level"], level
        assert killed not in {m["pid"] for m in summary["machines"]}
    # The killed worker's requests after its last counted interval reached nginx but no count.
    counted = sum(level["requests"] for level, _ in runs)
    assert 0 <= nginx.requests_served() - before - counted <= 40


def test_session_functions_run_in_the_workers_that_loaded_the_simulation(horde, logging_nginx, dask_cluster,
                                                                        tmp_path):
    # A Python function of the session sets a variable the request's URL carries: each worker
    # loads the simulation file (at the same path) and runs the functions of its own users.
    # The hooks are the coordinator's: `after` runs once, here.
    marker = tmp_path / "after-ran"
    simulation = tmp_path / "functions.py"
    simulation.write_text(f"""
import os
from horde import after, at_once_users, http, param, scenario, setup

def stamp(session):
    return session.set("who", f"{{session.user_id}}-{{os.getpid()}}")

@after
def done(summary):
    with open({str(marker)!r}, "a") as out:
        out.write(f"{{os.getpid()}} {{summary['global']['count']}}\\n")

setup(scenario("stamped").exec(stamp, http("stamped").get("/functions?who=${{who}}"))
      .inject(at_once_users(param("users", 6))),
      protocol=http.base_url("{logging_nginx.url}"))
""")
    logging_nginx.log.write_text("")
    result = horde("run", simulation, "-D", "users=6", "--cluster", dask_cluster, "-q", timeout=RUN_TIMEOUT_S)
    assert result.code == 0, result.stderr
    summary = result.summary
    assert summary["global"]["ok"] == summary["global"]["count"] == 6, summary["errors"]
    stamps = [line.split("who=", 1)[1] for line in logging_nginx.log.read_text().split() if "/functions" in line]
    # Every user once, each stamped by a worker process (three of them, none of them this one).
    assert len({s.split("-")[0] for s in stamps}) == len(stamps) == 6, stamps
    worker_pids = {int(s.split("-")[1]) for s in stamps}
    assert worker_pids == {m["pid"] for m in summary["machines"]}, (worker_pids, summary["machines"])
    [after_line] = marker.read_text().splitlines()
    assert after_line.split() == [str(after_line.split()[0]), "6"] and int(after_line.split()[0]) not in worker_pids


def test_a_worker_that_cannot_load_the_simulation_fails_the_run_before_any_load(horde, nginx, dask_cluster,
                                                                                tmp_path):
    # As when a module the simulation imports is missing on the workers' machines.
    simulation = tmp_path / "no_driver.py"
    simulation.write_text(f"""
from horde import at_once_users, http, scenario, setup

try:
    from distributed import get_worker
    get_worker()
except (ImportError, ValueError):
    pass
else:
    raise ImportError("No module named 'database_driver'")

setup(scenario("s").exec(lambda session: session, http("x").get("/no-driver")).inject(at_once_users(3)),
      protocol=http.base_url("{nginx.url}"))
""")
    before = nginx.requests_served()
    result = horde("run", simulation, "--cluster", dask_cluster, "-q", timeout=RUN_TIMEOUT_S)
    assert result.code == 3, result.stderr
    assert "could not load the simulation for its session functions" in result.stderr, result.stderr
    assert "database_driver" in result.stderr and "tcp://127.0.0.1:" in result.stderr, result.stderr
    assert nginx.requests_served() - before == 0


def test_bench_http_splits_each_trial_over_the_cluster(tmp_path, nginx, dask_cluster):
    # Every trial is a coordinated run over the three workers: a cell that cannot give each a
    # connection is refused by its parameters before anything runs.
    def bench(*flags):
        return subprocess.run(["horde", "bench", "http", nginx.url + "/bench", "--trials", "2", "--warmup", "1",
                               "--measure", "2", "--iteration-time", "300ms", "--metric", "throughput",
                               "--cluster", dask_cluster, *flags], capture_output=True, text=True,
                              timeout=RUN_TIMEOUT_S, cwd=tmp_path)

    before = nginx.requests_served()
    refused = bench("-L", "c=3,1", "--out", tmp_path / "refused.json")
    assert refused.returncode == 2, refused.stderr
    assert "c=1" in refused.stderr and "no virtual user" in refused.stderr, refused.stderr
    assert nginx.requests_served() == before
    out = tmp_path / "bench.json"
    result = bench("-L", "c=3,6", "--out", out)
    assert result.returncode == 0, result.stderr
    cells = json.loads(out.read_text())["cells"]
    assert [c["params"]["c"] for c in cells] == [3, 6]
    assert all(len(c["trials"]) == 2 and c["stats"]["score"] > 100 for c in cells), cells
    assert nginx.requests_served() - before >= sum(c["stats"]["score"] * 0.6 * 2 for c in cells) * 0.5


def test_workers_load_a_simulation_again_with_its_helpers_when_its_parameters_change(horde, logging_nginx,
                                                                                     dask_cluster, tmp_path):
    # A chain built at the top of a helper module beside the simulation registers its function
    # when imported: a worker loading the simulation again (other -D values) imports the helper
    # again, so the keys follow the coordinator's order and each step calls its own function.
    (tmp_path / "login_steps.py").write_text("""
from horde import exec_

def helper_stamp(session):
    return session.set("h", "helper")

stamped = exec_(helper_stamp)
""")
    simulation = tmp_path / "with_helper.py"
    simulation.write_text(f"""
from horde import at_once_users, http, param, scenario, setup
from login_steps import stamped

tag = param("tag", "one")

def own_stamp(session):
    return session.set("s", "own-" + tag)

setup(scenario("helped").exec(stamped, own_stamp, http("helped").get("/helped?h=${{h}}&s=${{s}}"))
      .inject(at_once_users(3)),
      protocol=http.base_url("{logging_nginx.url}"))
""")
    for tag in ("one", "two"):
        logging_nginx.log.write_text("")
        result = horde("run", simulation, "-D", f"tag={tag}", "--cluster", dask_cluster, "-q", timeout=RUN_TIMEOUT_S)
        assert result.code == 0, result.stderr
        assert result.summary["global"]["ok"] == 3, result.summary["errors"]
        lines = [line for line in logging_nginx.log.read_text().split() if "/helped" in line]
        assert lines == [f"/helped?h=helper&s=own-{tag}"] * 3, lines
