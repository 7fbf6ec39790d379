"""Signals against a run with one worker, with several, and with a worker that has no user:
SIGINT and SIGTERM end it as interrupted (exit 130) with a valid summary whose count nginx
confirms, even when every request is stalled; after SIGKILL the summary last written is valid and agrees with its own duration."""

import signal
import subprocess
import time

import jsonschema
import pytest

from conftest import wait_until
from fault_fixtures import misbehaving, read_summary  # noqa: F401 (fixture)

INTERRUPTED = 130
RATE = 200

LAYOUTS = {
    "one-worker": ["--workers", "1", "-c", "4"],
    "two-workers": ["--workers", "2", "-c", "4"],
    "a-worker-without-users": ["--workers", "2", "-c", "1"],
}


def connections(layout):
    return int(LAYOUTS[layout][LAYOUTS[layout].index("-c") + 1])


def start_run(nginx, results, layout, *extra):
    return subprocess.Popen(
        ["horde", "http", nginx.url + "/", *LAYOUTS[layout], "-d", "60s", *extra, "-q", "--results", str(results)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def interrupt(process, results, sig, summary_schema):
    """Sends `sig`; the run must end quickly as interrupted (exit 130) with a valid summary."""
    process.send_signal(sig)
    signalled = time.monotonic()
    out, err = process.communicate(timeout=30)
    assert time.monotonic() - signalled < 5
    assert process.returncode == INTERRUPTED, err
    summary = read_summary(results)
    jsonschema.validate(summary, summary_schema)
    assert summary["run"]["status"] == "interrupted"
    return summary


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_sigint_and_sigterm_end_the_run_as_interrupted_with_what_nginx_served(nginx, tmp_path, summary_schema, sig, layout):
    results = tmp_path / "results"
    before = nginx.requests_served()
    process = start_run(nginx, results, layout)
    # summary.json is rewritten every second: wait until it shows requests.
    wait_until(lambda: (read_summary(results) or {}).get("global", {}).get("count", 0) > 0, what="a first summary")
    summary = interrupt(process, results, sig, summary_schema)
    users = connections(layout)
    assert summary["users"]["interrupted"] == users
    g = summary["global"]
    assert g["count"] == g["ok"] > 0, summary["errors"]
    assert g["interrupted"] <= users
    served = nginx.requests_served() - before
    # Everything nginx answered was counted, but the requests in flight at the signal.
    assert g["count"] <= served <= g["count"] + g["interrupted"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_sigkill_leaves_a_valid_summary_that_agrees_with_its_duration(nginx, tmp_path, summary_schema, layout):
    results = tmp_path / "results"
    before = nginx.requests_served()
    started = time.monotonic()
    process = start_run(nginx, results, layout, "--rate", str(RATE))
    wait_until(
        lambda: (read_summary(results) or {}).get("run", {}).get("duration_ms", 0) >= 2000, what="the 2 s summary"
    )
    # Killed halfway through an interval, long after the last summary was written.
    wait_until(lambda: time.monotonic() - started >= 2.5, what="2.5 s of run")
    process.kill()
    process.communicate(timeout=30)
    summary = read_summary(results)
    jsonschema.validate(summary, summary_schema)
    assert summary["run"]["status"] == "running"
    count, seconds = summary["global"]["count"], summary["run"]["duration_ms"] / 1000
    assert count > 0
    assert abs(count / seconds - RATE) <= RATE * 0.10, (count, seconds)
    assert nginx.requests_served() - before >= count


def test_sigint_ends_a_run_whose_requests_all_stall(misbehaving, tmp_path, summary_schema):
    results = tmp_path / "results"
    process = subprocess.Popen(
        ["horde", "http", misbehaving.url("/stall"), "--workers", "2", "-c", "4", "-d", "60s", "-q",
         "--results", str(results)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    wait_until(lambda: misbehaving.heads("/stall") == 4, what="four stalled requests")
    summary = interrupt(process, results, signal.SIGINT, summary_schema)
    # Nothing was answered: no outcome, four requests in flight, four users cut off.
    assert summary["global"]["count"] == 0
    assert summary["global"]["interrupted"] == 4
    assert summary["users"]["interrupted"] == 4
