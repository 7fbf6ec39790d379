"""horde sweep against a server whose capacity is known by construction: the built-in target's
/work/20 serves 4 requests at a time for 20 ms each, so throughput cannot pass 4 / 20 ms =
200 requests per second, reached at 4 concurrent users."""

import csv
import json
import re
import signal
import subprocess

import pytest

from conftest import EXAMPLES, stop_process, wait_until

NOTHING_MEASURED = 5
INTERRUPTED = 130

KNEE_USERS = 4


class WorkTarget:
    def __init__(self):
        self.process = subprocess.Popen(
            ["horde", "target", "--port", "0", "--work-slots", "4"], stdout=subprocess.PIPE, text=True
        )
        self.url = re.search(r"http://[0-9.:]+", self.process.stdout.readline()).group(0)

    def stop(self):
        stop_process(self.process)


@pytest.fixture
def work_target():
    target = WorkTarget()
    yield target
    target.stop()


def sweep_dir(result):
    [directory] = [p for p in result.results_dir.iterdir() if p.name.startswith("sweep-")]
    return directory


def test_a_closed_sweep_finds_the_knee_and_writes_table_and_chart(horde, work_target):
    result = horde(
        "sweep", EXAMPLES / "capacity_sweep.py", "-D", f"base_url={work_target.url}",
        "--users", "1,2,4,8,16", "--level-duration", "1s", "--warmup", "500ms", "--slo", "p99<60ms",
        timeout=180,
    )
    assert result.code == 0, result.stderr
    directory = sweep_dir(result)
    report = json.loads((directory / "sweep.json").read_text())
    levels = {level["level"]: level for level in report["levels"]}
    assert sorted(levels) == [1, 2, 4, 8, 16]
    # Within one step of the capacity by construction.
    assert report["knee"] in (2, 4, 8), report
    assert 150 <= report["best_throughput_rps"] <= 205
    # One user makes about 1 / 20 ms = 50 requests a second; the warm-up is not counted.
    assert 40 <= levels[1]["requests"] <= 52
    # Past capacity, requests queue: at 16 users each waits for 3 others, p99 near 80 ms.
    assert levels[16]["p99_us"] > 60_000 and levels[16]["broken_slos"] == ["p99<60ms"]
    assert report["highest_meeting_slos"] in (4, 8)
    assert report["errors_begin"] is None
    # The table, the chart, and each level's own results.
    assert (directory / "sweep.csv").read_text().count("\n") == 6
    svg = (directory / "sweep.svg").read_text()
    # Throughput, p50, p99, and the error rate the SLOs judge.
    assert svg.startswith("<svg") and svg.count("<polyline") == 4 and "errors %" in svg
    for level in report["levels"]:
        summary = json.loads((directory / level["results"] / "summary.json").read_text())
        assert summary["global"]["count"] == level["requests"]
    assert "> knee (throughput stops growing):" in result.stdout


def test_auto_search_steps_up_then_bisects(horde, work_target):
    result = horde(
        "sweep", f"{work_target.url}/work/20", "--auto", "--level-duration", "1s", "--warmup", "500ms",
        timeout=180,
    )
    assert result.code == 0, result.stderr
    report = json.loads((sweep_dir(result) / "sweep.json").read_text())
    levels = [level["level"] for level in report["levels"]]
    # Geometric up to the first level that stops scaling, then bisection below it.
    assert levels[:3] == [1, 2, 4], levels
    assert any(level not in (1, 2, 4, 8, 16, 32) for level in levels), levels
    assert report["knee"] in (2, 4, 8), report
    # The boundary is confirmed by a second run of the last good and the first bad level.
    boundary = report["boundary"]
    assert boundary["confirmed"], report["levels"]
    assert boundary["last_good"] < boundary["first_bad"] and boundary["last_good"] in (3, 4, 5), boundary
    second_runs = sorted(level["level"] for level in report["levels"] if level["run"] == 2)
    assert second_runs == [boundary["last_good"], boundary["first_bad"]], report["levels"]
    assert "confirmed by a second run" in result.stdout


def test_an_open_level_past_capacity_counts_what_completes_in_its_window(horde, work_target, tmp_path):
    # 300 arrivals a second against a capacity of 200: requests queue, many begun in the
    # warm-up complete in the window. The throughput read is the server's, not less.
    sim = tmp_path / "open.py"
    sim.write_text(
        "from horde import *\n"
        "scn = scenario('one').exec(http('work').get('/work/20'))\n"
        "setup(scn.inject(at_once_users(1)), protocol=http.base_url(param('base_url')).request_timeout(30))\n"
    )
    result = horde(
        "sweep", sim, "-D", f"base_url={work_target.url}", "--rate", "300", "--level-duration", "2s",
        "--warmup", "1s", "-q", timeout=180,
    )
    levels = json.loads((sweep_dir(result) / "sweep.json").read_text())["levels"]
    # A busy machine can start a few arrivals late; the sweep then runs the level a second time
    # (as designed), and when that one is late too, it says no level was measured (exit 5).
    # Either run is bound by the server, so each reads its capacity.
    assert [level["run"] for level in levels] in ([1], [1, 2]), levels
    delivered = any(level["not_delivered"] is None for level in levels)
    assert result.code == (0 if delivered else NOTHING_MEASURED), result.stderr
    for level in levels:
        assert 180 <= level["throughput_rps"] <= 205, level


def test_a_level_the_generator_cannot_deliver_runs_again_then_stops_the_sweep(horde, work_target):
    # 100,000 arrivals a second on one worker thread: far beyond what this generator can
    # start on time. That is not the server's failure; the sweep says so and stops.
    result = horde(
        "sweep", f"{work_target.url}/", "--rate", "20,100000,200000", "--level-duration", "1s", "--warmup", "0s",
        "--workers", "1", timeout=180,
    )
    assert result.code == 0, result.stderr
    report = json.loads((sweep_dir(result) / "sweep.json").read_text())
    runs = [(level["level"], level["run"], level["not_delivered"] is None) for level in report["levels"]]
    assert runs == [(20, 1, True), (100000, 1, False), (100000, 2, False)], runs
    assert "could not deliver 100000 users/s" in report["stopped"]
    # Only the level whose load was delivered is judged; one level shows no knee.
    assert report["knee"] is None and report["errors_begin"] is None
    assert "no knee found up to 20 users/s" in (sweep_dir(result) / "report.html").read_text()
    assert "load not delivered" in result.stdout and "load not delivered" in (sweep_dir(result) / "sweep.svg").read_text()


def test_an_open_sweep_finds_where_errors_begin(horde, work_target, tmp_path):
    # Each arrival sends one request; with a 100 ms timeout, arrivals beyond capacity queue
    # until they time out.
    sim = tmp_path / "open.py"
    sim.write_text(
        "from horde import *\n"
        "scn = scenario('one').exec(http('work').get('/work/20'))\n"
        "setup(scn.inject(at_once_users(1)), protocol=http.base_url(param('base_url')).request_timeout(0.1))\n"
    )
    result = horde(
        "sweep", sim, "-D", f"base_url={work_target.url}",
        "--rate", "50,100,400", "--level-duration", "1s", "--warmup", "500ms", "--slo", "errors<1%",
        "--late-start-threshold", "20ms", "-q", timeout=180,
    )
    assert result.code == 0, result.stderr
    report = json.loads((sweep_dir(result) / "sweep.json").read_text())
    assert report["errors_begin"] == 400, report["levels"]
    assert report["highest_meeting_slos"] == 100
    kinds = json.loads((sweep_dir(result) / "rate-400" / "summary.json").read_text())["errors"][0]["kind"]
    assert kinds == "request_timeout"


def test_bad_sweep_input_is_refused(horde, work_target):
    result = horde("sweep", EXAMPLES / "capacity_sweep.py", "--users", "1,2", "--slo", "p99 under 5", results=False)
    assert result.code == 2
    assert "--slo" in result.stderr and "p99 under 5" in result.stderr
    result = horde("sweep", EXAMPLES / "capacity_sweep.py", results=False)
    assert result.code == 2
    assert "--users" in result.stderr


def test_a_sweep_that_measures_no_level_says_so_and_exits_5(horde, work_target):
    # No level's load can be delivered: the sweep knows nothing of the server, and says so
    # rather than name a knee of 0 req/s and exit 0.
    result = horde(
        "sweep", f"{work_target.url}/", "--rate", "100000,200000", "--level-duration", "1s", "--warmup", "0s",
        "--workers", "1", timeout=180,
    )
    assert result.code == NOTHING_MEASURED, result.stderr
    report = json.loads((sweep_dir(result) / "sweep.json").read_text())
    assert [level["not_delivered"] is not None for level in report["levels"]] == [True, True], report["levels"]
    assert report["knee"] is None and report["highest_meeting_slos"] is None
    assert "> knee (throughput stops growing): unknown: no level was measured" in result.stdout
    assert "no level was measured" in result.stderr


def test_throughput_still_growing_is_no_knee_and_the_error_rate_is_drawn(horde, work_target, tmp_path):
    # 1 and 2 users each make about 50 requests a second: throughput doubles with the load, far
    # below the target's 200.
    result = horde(
        "sweep", f"{work_target.url}/work/20", "--users", "1,2", "--level-duration", "1s", "--warmup", "0s",
        "--slo", "errors<5%", "--late-start-threshold", "5ms", timeout=180,
    )
    assert result.code == 0, result.stderr
    directory = sweep_dir(result)
    report = json.loads((directory / "sweep.json").read_text())
    assert report["knee"] is None, report["levels"]
    assert "> knee (throughput stops growing): no knee found up to 2 users" in result.stdout
    svg = (directory / "sweep.svg").read_text()
    assert "errors %" in svg and "SLO errors&lt;5%" in svg and svg.count("<polyline") == 4
    assert svg in (directory / "report.html").read_text()
    # The late-start threshold reached every level's run.
    for level in report["levels"]:
        summary = json.loads((directory / level["results"] / "summary.json").read_text())
        assert summary["scheduling"]["late_start_threshold_us"] == 5000


def test_the_late_start_threshold_is_a_setup_option(tmp_path):
    sim = tmp_path / "late.py"
    sim.write_text(
        "from horde import *\n"
        "setup(scenario('s').exec(http('a').get('/')).inject(at_once_users(1)),\n"
        "      protocol=http.base_url('http://127.0.0.1:1'), late_start_threshold=0.0005)\n"
    )
    printed = subprocess.run(["horde", "plan", sim], capture_output=True, text=True)
    assert printed.returncode == 0, printed.stderr
    assert json.loads(printed.stdout)["options"]["late_start_threshold_us"] == 500


def test_an_interrupted_level_is_measured_over_the_time_it_ran_and_never_judged(work_target, tmp_path):
    results = tmp_path / "results"
    process = subprocess.Popen(
        ["horde", "sweep", f"{work_target.url}/work/20", "--users", "2,4", "--level-duration", "30s", "--warmup",
         "0s", "--slo", "p99<1s", "--results", str(results)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )

    def level_measured():
        for path in results.glob("sweep-*/users-2/summary.json"):
            try:
                return json.loads(path.read_text())["global"]["count"] >= 100
            except (ValueError, KeyError):
                return False
        return False

    wait_until(level_measured, timeout=60, what="the first level to measure 100 requests")
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == INTERRUPTED, err
    [directory] = results.glob("sweep-*")
    report = json.loads((directory / "sweep.json").read_text())
    [level] = report["levels"]
    summary = json.loads((directory / level["results"] / "summary.json").read_text())
    assert summary["run"]["status"] == "interrupted"
    measured_ms = summary["run"]["duration_ms"] - summary["run"]["warmup_ms"]
    # Two users at 20 ms a request: about 100 a second, over the seconds it ran (not 30).
    assert 80 <= level["throughput_rps"] <= 105, level
    assert level["throughput_rps"] == pytest.approx(summary["global"]["ok"] * 1000 / measured_ms, rel=1e-9)
    assert level["interrupted"] and level["measured_ms"] == measured_ms
    assert report["knee"] is None and report["highest_meeting_slos"] is None, report
    [row] = list(csv.DictReader((directory / "sweep.csv").read_text().splitlines()))
    assert (row["interrupted"], row["slos_met"]) == ("true", "false")
    assert "interrupted after" in out and "not judged" in out


@pytest.mark.parametrize("shape", ["list", "auto"])
def test_quiet_prints_only_the_sweep_directory(horde, work_target, shape):
    levels = ["--users", "1"] if shape == "list" else ["--auto", "--max-level", "1"]
    result = horde("sweep", f"{work_target.url}/work/20", *levels, "--level-duration", "500ms", "--warmup", "0s",
                   "-q", timeout=180)
    assert result.code == 0, result.stderr
    assert result.stdout == f"{sweep_dir(result)}\n"
