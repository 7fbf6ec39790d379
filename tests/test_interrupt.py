"""An interrupted run still leaves a valid summary of what was measured."""

import json
import signal
import subprocess

import jsonschema
import pytest

from conftest import wait_until

INTERRUPTED = 130


def start_long_run(nginx, tmp_path):
    results = tmp_path / "results"
    process = subprocess.Popen(
        ["horde", "http", nginx.url + "/", "-c", "4", "-d", "60s", "--results", str(results), "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    # summary.json is rewritten every second as the run goes; wait until it shows requests.
    def measured():
        for path in results.glob("*/summary.json"):
            try:
                return json.loads(path.read_text())["global"]["count"] > 0
            except (ValueError, KeyError):
                return False
        return False

    wait_until(measured, timeout=30, what="a first summary")
    return process, results


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_run_and_keeps_its_results(nginx, tmp_path, summary_schema, sig):
    before = nginx.requests_served()
    process, results = start_long_run(nginx, tmp_path)
    process.send_signal(sig)
    out, err = process.communicate(timeout=30)
    assert process.returncode == INTERRUPTED, err
    [path] = results.glob("*/summary.json")
    summary = json.loads(path.read_text())
    jsonschema.validate(summary, summary_schema)
    assert summary["run"]["status"] == "interrupted"
    assert summary["users"]["interrupted"] == 4
    served = nginx.requests_served() - before
    # Every request nginx answered was counted, but the few in flight at the interruption.
    assert served - 4 <= summary["global"]["count"] <= served


def test_a_killed_run_leaves_the_last_interval_on_disk(nginx, tmp_path, summary_schema):
    process, results = start_long_run(nginx, tmp_path)
    process.kill()
    process.wait()
    [path] = results.glob("*/summary.json")
    summary = json.loads(path.read_text())
    jsonschema.validate(summary, summary_schema)
    assert summary["run"]["status"] == "running"
    assert summary["global"]["count"] > 0
