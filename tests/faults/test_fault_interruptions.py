"""Interruptions outside a single run: Ctrl-C between or during the levels of a sweep ends the
sweep, and Ctrl-C or SIGTERM while a simulation is still loading exits 130 without running it."""

import json
import signal
import subprocess
import textwrap
import time

import pytest

from conftest import wait_until

INTERRUPTED = 130


def test_ctrl_c_during_a_sweep_runs_no_further_level(nginx, tmp_path):
    results = tmp_path / "results"
    process = subprocess.Popen(
        ["horde", "sweep", nginx.url + "/", "--users", "1,2,4", "--level-duration", "5s", "--warmup", "0s",
         "--workers", "1", "-q", "--results", str(results)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    wait_until(lambda: list(results.glob("sweep-*/users-1/summary.json")), what="the first level")
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == INTERRUPTED, err
    [sweep] = results.glob("sweep-*")
    report = json.loads((sweep / "sweep.json").read_text())
    assert [level["level"] for level in report["levels"]] == [1]
    assert report["interrupted"]
    assert not (sweep / "users-2").exists()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_the_simulation_loads_exits_130_and_runs_nothing(tmp_path, sig):
    started = tmp_path / "loading"
    sim = tmp_path / "slow.py"
    sim.write_text(textwrap.dedent(f"""
        import pathlib, time
        from horde import at_once_users, http, scenario, setup

        pathlib.Path({str(started)!r}).write_text("loading")
        time.sleep(30)
        setup(scenario("s").exec(http("a").get("http://127.0.0.1:9/")).inject(at_once_users(1)))
    """))
    results = tmp_path / "results"
    process = subprocess.Popen(["horde", "run", str(sim), "-q", "--results", str(results)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(started.exists, what="the simulation to start loading")
    signalled = time.monotonic()
    process.send_signal(sig)
    out, err = process.communicate(timeout=30)
    assert time.monotonic() - signalled < 5, "the load was not stopped"
    assert process.returncode == INTERRUPTED, err
    assert "interrupted while loading" in err
    assert "Traceback" not in err
    assert not results.exists()
