"""Thresholds gate CI: judged on real runs against the built-in target, whose /delay/{ms} and
/status/{code} endpoints give known latencies and error rates, so each verdict is known in
advance, at its boundary. A failed threshold exits 99; bad thresholds exit 2 before anything is
sent; an internal error exits 3."""

import json
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest
import xmlschema

from conftest import EXAMPLES

JUNIT_SCHEMA = Path(__file__).parent / "schemas" / "junit.xsd"


def verdicts(result):
    return {t["text"]: t["status"] for t in result.summary["thresholds"]}


def test_thresholds_pass_and_fail_at_their_boundaries(horde, target):
    # 40 requests to /delay/20: every latency is at least 20 ms; none fails.
    result = horde(
        "http", target.url + "/delay/20", "-c", "2", "-n", "40",
        "--threshold", "min>=20ms", "--threshold", "min<20ms",
        "--threshold", "count==40", "--threshold", "count>40",
        "--threshold", "errors<=0%", "--threshold", "errors>0%",
        "--threshold", "p99.9>=20ms", "--threshold", "uncorrected.p50>=20ms",
        "--threshold", "wait.p50>=20ms", "--threshold", "connect.max<1s",
    )  # fmt: skip
    assert result.code == 99, result.stderr
    assert verdicts(result) == {
        "min>=20ms": "pass", "min<20ms": "fail", "count==40": "pass", "count>40": "fail",
        "errors<=0%": "pass", "errors>0%": "fail", "p99.9>=20ms": "pass", "uncorrected.p50>=20ms": "pass",
        "wait.p50>=20ms": "pass", "connect.max<1s": "pass",
    }  # fmt: skip
    assert target.stats()["total"] == 40
    # What a threshold observed is what summary.json reports for the same statistic.
    by_text = {t["text"]: t for t in result.summary["thresholds"]}
    assert by_text["count==40"]["observed"] == result.summary["global"]["count"] == 40
    assert by_text["min>=20ms"]["observed"] == result.summary["global"]["latency"]["all"]["min_us"]
    # The console's table says the same, last.
    assert "---- Thresholds: 7 of 10 passed" in result.stdout
    assert "> FAIL    min<20ms" in result.stdout


def test_error_rates_are_judged_per_request_and_for_each(horde, target, tmp_path):
    plan = {
        "version": 1, "name": "mixed",
        "protocol": {"base_url": target.url},
        "scenarios": [{
            "name": "s", "injection": [{"type": "at_once_users", "users": 1}],
            "steps": [{"type": "repeat", "times": 10, "steps": [
                {"type": "request", "name": "ok", "method": "GET", "url": "/status/200"},
                {"type": "request", "name": "broken", "method": "GET", "url": "/status/500"},
            ]}],
        }],
        "options": {"on_check_failure": "continue"},
        "thresholds": ["\"ok\": errors==0%", "\"broken\": errors==100%", "errors<=50%", "errors<50%",
                       "each: errors<1%", "\"broken\": errors.count==10"],
    }  # fmt: skip
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    result = horde("run", path, "-q")
    assert result.code == 99, result.stderr
    assert verdicts(result) == {
        "\"ok\": errors==0%": "pass", "\"broken\": errors==100%": "pass", "errors<=50%": "pass",
        "errors<50%": "fail", "each: errors<1%": "fail", "\"broken\": errors.count==10": "pass",
    }  # fmt: skip
    each = next(t for t in result.summary["thresholds"] if t["scope"] == "each")
    assert {r["name"]: r["status"] for r in each["rows"]} == {"ok": "pass", "broken": "fail"}
    assert target.stats()["total"] == 20


def test_every_threshold_passing_exits_0(horde, target):
    result = horde("http", target.url + "/delay/5", "-c", "1", "-n", "5", "--threshold", "p99<5s", "--threshold", "errors<1%")
    assert result.code == 0, result.stderr
    assert set(verdicts(result).values()) == {"pass"}


def test_a_scope_that_saw_no_request_fails_with_no_data(horde, target, tmp_path):
    plan = {
        "version": 1, "name": "skipped",
        "protocol": {"base_url": target.url},
        "scenarios": [{
            "name": "s", "injection": [{"type": "at_once_users", "users": 1}],
            "steps": [
                {"type": "set", "values": [{"name": "premium", "value": "no"}]},
                {"type": "request", "name": "home", "method": "GET", "url": "/"},
                {"type": "do_if", "condition": "${premium} == 'yes'",
                 "steps": [{"type": "request", "name": "premium page", "method": "GET", "url": "/"}]},
            ],
        }],
        "thresholds": ["\"home\": p99<5s", "\"premium page\": p99<5s"],
    }  # fmt: skip
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    result = horde("run", path, "-q")
    assert result.code == 99, result.stderr
    assert verdicts(result) == {"\"home\": p99<5s": "pass", "\"premium page\": p99<5s": "no_data"}
    assert target.stats()["total"] == 1


@pytest.mark.parametrize(
    "threshold, expected",
    [
        ('"logn": p99<1s', ['no request or group named \\"logn\\"', 'did you mean \\"login\\"?']),
        ("q99<1s", ["unknown metric", "q99"]),
        ("p99<500", ["write its unit, such as 500ms"]),
        ("errors<1", ["errors is a percentage: write 1%"]),
        ("p99<1s over", ["`over` needs a window"]),
    ],
)
def test_bad_thresholds_exit_2_before_anything_is_sent(horde, target, tmp_path, threshold, expected):
    plan = {
        "version": 1, "name": "bad",
        "protocol": {"base_url": target.url},
        "scenarios": [{"name": "s", "injection": [{"type": "at_once_users", "users": 1}],
                       "steps": [{"type": "request", "name": "login", "method": "GET", "url": "/"}]}],
        "thresholds": [threshold],
    }  # fmt: skip
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    result = horde("run", path)
    assert result.code == 2, result.stderr
    assert "thresholds[0]" in result.stderr
    for text in expected:
        assert text.replace('\\"', '"') in result.stderr, result.stderr
    # The same from the command line, named by its flag.
    quick = horde("http", target.url + "/", "-n", "1", "--threshold", threshold)
    assert quick.code == 2 and "--threshold" in quick.stderr, quick.stderr
    assert target.stats()["total"] == 0
    assert not result.results_dir.exists() or not list(result.results_dir.iterdir())


def test_abort_stops_the_run_early_and_keeps_every_result(horde, target):
    result = horde("http", target.url + "/delay/50", "-c", "2", "-d", "20s", "--threshold", "p99<10ms abort", timeout=60)
    assert result.code == 99, result.stderr
    summary = result.summary
    assert summary["run"]["status"] == "aborted_by_threshold"
    assert summary["run"]["stop_reason"] == "threshold p99<10ms abort failed"
    assert summary["run"]["duration_ms"] < 5000, "aborted after the first interval, not at -d"
    assert verdicts(result) == {"p99<10ms abort": "fail"}
    # Every request measured reached the server; those in flight at the stop are the users'.
    count, served = summary["global"]["count"], target.stats()["total"]
    assert 0 < count <= served <= count + summary["users"]["interrupted"]
    lines = (next(result.results_dir.iterdir()) / "timeseries.jsonl").read_text().splitlines()
    assert lines, "the time series of an aborted run is kept"
    assert "stopped: threshold p99<10ms abort failed" in result.stdout


def test_abort_waits_for_its_delay(horde, target):
    result = horde("http", target.url + "/delay/20", "-c", "1", "-d", "1500ms", "--threshold", "p99<10ms abort after 5s")
    # Never judged for aborting within 5 s: the run goes to its end, then fails.
    assert result.code == 99
    assert result.summary["run"]["status"] == "limit_reached"
    assert verdicts(result) == {"p99<10ms abort after 5s": "fail"}


def test_a_window_catches_a_slowdown_the_whole_run_hides(horde, target, tmp_path):
    simulation = tmp_path / "slowdown.py"
    simulation.write_text(textwrap.dedent(f"""
        from horde import at_once_users, during, http, scenario, setup
        fast = during(2, http("fast").get("/delay/1"))
        slow = during(1.5, http("slow").get("/delay/300"))
        setup(scenario("s").exec(fast, slow).inject(at_once_users(2)),
              protocol=http.base_url("{target.url}")).assertions("p50<100ms", "p50<100ms over 1s")
    """))
    result = horde("run", simulation, "-q")
    assert result.code == 99, result.stderr
    assert verdicts(result) == {"p50<100ms": "pass", "p50<100ms over 1s": "fail"}
    window = next(t for t in result.summary["thresholds"] if t.get("window_ms"))
    assert window["windows"]["failed"] >= 1 and window["windows"]["judged"] > window["windows"]["failed"]
    assert window["windows"]["first_failure_ms"] >= 2000
    assert window["observed"] >= 300_000


def test_the_dsl_assertions_become_the_plans_thresholds(horde, target, tmp_path):
    result = horde("plan", EXAMPLES / "ci_gate.py", results=False)
    assert result.code == 0, result.stderr
    assert json.loads(result.stdout)["thresholds"] == [
        "p99<1000ms", "errors<=1%", "each: max<2000ms", '"checkout / pay": p95<=200ms', "p99<2s over 1s abort", "count>=100",
    ]  # fmt: skip


def test_junit_is_valid_and_unique_for_gitlab(horde, target, tmp_path):
    junit = tmp_path / "thresholds.xml"
    result = horde(
        "http", target.url + "/delay/5", "-c", "1", "-n", "10", "--junit", junit,
        "--threshold", "p99<1ms", "--threshold", "p99<1ms", "--threshold", "errors<1%",
        "--threshold", 'each: p50<5s',
    )  # fmt: skip
    assert result.code == 99
    schema = xmlschema.XMLSchema(str(JUNIT_SCHEMA))
    schema.validate(str(junit))
    document = schema.to_dict(str(junit))
    [suite] = document["testsuite"]
    cases = suite["testcase"]
    assert len(cases) == 4 and suite["@failures"] == 2 and suite["@tests"] == 4
    # GitLab keys a test case by classname and name.
    assert max(Counter((c["@classname"], c["@name"]) for c in cases).values()) == 1
    failed = [c for c in cases if "failure" in c]
    assert [c["@classname"] for c in failed] == ["global", "global"]
    # GitLab shows only the failure's text: the message is there too.
    assert "p99 was" in failed[0]["failure"]["$"] and "limit < 1 ms" in failed[0]["failure"]["$"]


def test_github_job_summary_is_appended(horde, target, tmp_path):
    page = tmp_path / "step_summary.md"
    page.write_text("earlier step\n")
    result = horde(
        "http", target.url + "/delay/5", "-c", "1", "-n", "5", "--threshold", "p99<1ms",
        env={"GITHUB_STEP_SUMMARY": str(page)},
    )  # fmt: skip
    assert result.code == 99
    text = page.read_text()
    assert text.startswith("earlier step\n")
    assert "❌ 1 of 1 thresholds failed" in text and "| ❌ | `p99<1ms` | global |" in text


def test_a_sweep_where_no_level_meets_the_slos_exits_99(horde, target):
    result = horde(
        "sweep", target.url + "/delay/20", "--users", "1,2", "--level-duration", "1s", "--warmup", "0s",
        "--threshold", "p99<5ms", "-q",
    )  # fmt: skip
    assert result.code == 99, result.stderr
    assert "no level met the SLOs (p99<5ms)" in result.stderr


def test_an_internal_error_exits_3_not_1_nor_99(tmp_path):
    # The console script's own guard: an exception escaping the engine is horde's failure.
    script = textwrap.dedent("""
        import sys
        import horde._engine as engine
        def broken(argv):
            raise RuntimeError("a bug")
        engine.cli_main = broken
        sys.argv = ["horde", "http", "http://127.0.0.1:1/"]
        from horde.cli import main
        main()
    """)
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert completed.returncode == 3, completed.stderr
    assert "internal error" in completed.stderr and "RuntimeError: a bug" in completed.stderr


def test_assertions_without_a_condition_are_refused_when_the_simulation_loads():
    from horde import DslError, at_once_users, global_, http, scenario, setup

    simulation = setup(scenario("s").exec(http("home").get("/")).inject(at_once_users(1)))
    with pytest.raises(DslError, match=r"has no condition yet: end it with lt\(\)"):
        simulation.assertions(global_().response_time().percentile(99))
    with pytest.raises(DslError, match="successful_requests\\(\\).count\\(\\) is not a threshold"):
        global_().successful_requests().count()
    between = simulation.assertions(global_().response_time().mean().between(5, 50))
    assert between.to_plan()["thresholds"] == ["mean>=5ms", "mean<=50ms"]


def test_a_latency_threshold_with_no_ok_response_to_judge_fails(horde, target, tmp_path):
    # TLS to a cleartext port: every request fails in a few milliseconds. A latency gate met by
    # refused handshakes says nothing of the server's latency.
    junit = tmp_path / "thresholds.xml"
    result = horde(
        "http", target.url.replace("http://", "https://") + "/", "-c", "1", "-n", "20", "--junit", junit,
        "--threshold", "p95<200ms", "--threshold", "ok.p95<200ms", "--threshold", "each: uncorrected.max<1s",
        "--threshold", "errors.count==20",
    )  # fmt: skip
    assert result.code == 99, result.stderr
    assert result.summary["global"]["ko"] == 20
    by_text = {t["text"]: t for t in result.summary["thresholds"]}
    for text in ("p95<200ms", "ok.p95<200ms", "each: uncorrected.max<1s"):
        assert by_text[text]["status"] == "fail", by_text[text]
        assert by_text[text]["observed"] is None
    assert by_text["p95<200ms"]["note"] == "no OK response to judge (20 KO)"
    assert by_text["errors.count==20"]["status"] == "pass"
    # Which responses each latency threshold judged, wherever a verdict is shown.
    assert by_text["p95<200ms"]["population"] == "OK and KO responses"
    assert by_text["ok.p95<200ms"]["population"] == "OK responses"
    assert "population" not in by_text["errors.count==20"]
    assert "> FAIL    p95<200ms" in result.stdout and "no OK response to judge (20 KO) (OK and KO responses)" in result.stdout
    assert "judged on OK and KO responses" in junit.read_text()


def test_ok_latency_thresholds_judge_ok_responses_only(horde, target, tmp_path):
    plan = {
        "version": 1, "name": "mixed",
        "protocol": {"base_url": target.url},
        "scenarios": [{
            "name": "s", "injection": [{"type": "at_once_users", "users": 1}],
            "steps": [{"type": "repeat", "times": 10, "steps": [
                {"type": "request", "name": "slow", "method": "GET", "url": "/delay/30"},
                {"type": "request", "name": "broken", "method": "GET", "url": "/status/500"},
            ]}],
        }],
        "thresholds": ["min<20ms", "ok.min>=30ms", "\"broken\": ok.p50<1s"],
    }  # fmt: skip
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    result = horde("run", path)
    assert result.code == 99, result.stderr
    verdicts = {t["text"]: (t["status"], t.get("note")) for t in result.summary["thresholds"]}
    # The fast 500s are in the default population and out of the OK one; a row with no OK
    # response fails its OK threshold.
    assert verdicts == {
        "min<20ms": ("pass", None), "ok.min>=30ms": ("pass", None),
        "\"broken\": ok.p50<1s": ("fail", "no OK response to judge (10 KO)"),
    }  # fmt: skip
