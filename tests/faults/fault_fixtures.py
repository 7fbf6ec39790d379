"""Fixtures and helpers of the fault tests: the misbehaving server, and horde runs that need
more than the ``horde`` fixture of tests/conftest.py (a prlimit prefix, the peak memory).

Test modules import the fixtures from here. There is no tests/faults/conftest.py on purpose:
without packages, pytest imports every conftest.py as the module ``conftest``, and a second
one would shadow tests/conftest.py for the ``from conftest import ...`` of the other tests.
"""

import collections
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Result, stop_process, wait_until

SERVER = Path(__file__).resolve().parent / "misbehaving_server.py"


class MisbehavingServer:
    """tests/faults/misbehaving_server.py in its own process; its event log is its count."""

    def __init__(self, directory):
        self.log = directory / "events.log"
        self.process = subprocess.Popen(
            [sys.executable, str(SERVER), "--log", str(self.log)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        # The raw listeners' lines come first; the last line is printed once the HTTP socket
        # listens: reading it is the readiness check.
        self.raw = {}
        while True:
            line = self.process.stdout.readline()
            raw = re.match(r"raw (\S+) (http://127\.0\.0\.1:\d+)", line)
            if not raw:
                break
            self.raw[raw.group(1)] = raw.group(2)
        match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if not match:
            self.process.kill()
            raise RuntimeError(f"the misbehaving server did not start: {line!r} {self.process.stderr.read()}")
        self.port = int(match.group(1))
        self.base = f"http://127.0.0.1:{self.port}"

    def url(self, path):
        return self.base + path

    def events(self):
        if not self.log.exists():
            return collections.Counter()
        return collections.Counter(self.log.read_text().splitlines())

    def heads(self, path):
        """Requests for ``path`` whose head the server read completely."""
        return self.events()[f"head {path}"]

    def answered(self, path):
        """Requests for ``path`` the server wrote a whole response to."""
        return self.events()[f"answered {path}"]

    def accepted(self):
        """Connections the server accepted."""
        return self.events()["accept"]

    def settled(self, count, expected, timeout=3.0):
        """``count()`` once it equals ``expected`` (events of requests still in a socket
        buffer when horde exited are read a moment later), or its value after ``timeout``."""
        try:
            wait_until(lambda: count() == expected, timeout=timeout, what=f"the server to count {expected}")
        except TimeoutError:
            pass
        return count()

    def kill(self):
        self.process.kill()
        self.process.wait()

    def stop(self):
        stop_process(self.process)
        self.process.stdout.close()
        self.process.stderr.close()


@pytest.fixture
def misbehaving(tmp_path):
    server = MisbehavingServer(tmp_path)
    yield server
    server.stop()


class Measured(Result):
    """A finished horde run with its peak resident memory (ru_maxrss of the process) and the
    CPU time it used (user and system)."""

    def __init__(self, returncode, stdout, stderr, results_dir, max_rss_kib, wall_seconds, cpu_seconds):
        completed = subprocess.CompletedProcess([], returncode, stdout, stderr)
        super().__init__(completed, results_dir)
        self.max_rss_kib = max_rss_kib
        self.wall_seconds = wall_seconds
        self.cpu_seconds = cpu_seconds


@pytest.fixture
def run_measured(tmp_path):
    """Runs ``[prefix...] horde ARGS... --results DIR`` and measures its wall time and peak RSS.

    The process is reaped with ``os.wait4``, whose resource usage is the child's own.
    """
    import time

    counter = [0]

    def run(*args, prefix=(), timeout=120):
        counter[0] += 1
        results_dir = tmp_path / f"measured-{counter[0]}"
        out, err = tmp_path / f"measured-{counter[0]}.out", tmp_path / f"measured-{counter[0]}.err"
        argv = [*prefix, "horde", *map(str, args), "--results", str(results_dir)]
        started = time.monotonic()
        with open(out, "w") as stdout, open(err, "w") as stderr:
            process = subprocess.Popen(argv, stdout=stdout, stderr=stderr)
        deadline = started + timeout
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                process.send_signal(signal.SIGKILL)
                os.wait4(process.pid, 0)
                raise TimeoutError(f"{argv} ran longer than {timeout} s")
            time.sleep(0.01)
        wall = time.monotonic() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        return Measured(process.returncode, out.read_text(), err.read_text(), results_dir, usage.ru_maxrss, wall,
                        usage.ru_utime + usage.ru_stime)

    return run


def read_summary(results):
    """The summary.json of the one run under `results` as it is now (None before the first, or
    while it is being replaced)."""
    for path in results.glob("*/summary.json"):
        try:
            return json.loads(path.read_text())
        except ValueError:
            return None
    return None


def error_kinds(summary):
    """{kind: count} over the summary's errors."""
    kinds = collections.Counter()
    for error in summary["errors"]:
        kinds[error["kind"]] += error["count"]
    return dict(kinds)


def assert_every_request_failed(result, server, path, n, kind):
    """A quick-mode run of n requests to `path` that all failed as `kind`: counted once each,
    timed like any exchange, seen by the server, on connections it accepted."""
    assert result.code == 0, result.stderr
    summary = result.summary
    assert summary["run"]["status"] == "limit_reached"
    assert (summary["global"]["count"], summary["global"]["ok"], summary["global"]["ko"]) == (n, 0, n)
    assert error_kinds(summary) == {kind: n}, summary["errors"]
    row = result.row(f"GET {server.url(path)}")
    assert (row["count"], row["ko"]) == (n, n)
    # A KO of an exchange that happened has a time; only requests never sent have none.
    assert summary["global"]["latency"]["all"]["count"] == n
    assert server.settled(lambda: server.heads(path), n) == n
    # Every connection the server accepted was counted as opened.
    assert summary["connections"]["opened"] == server.accepted()
