"""`--cluster ssh:...` (issue 26): horde starts a Dask cluster over SSH for the run, against an
sshd the test starts on 127.0.0.1 (the ``sshd`` fixture) and nginx, counted on the server's
side. SSH settings come from ~/.ssh/config and ~/.ssh/known_hosts, as users set them: the runs
get a HOME of the test's own with both. Every run has a timeout, and the Dask processes started
over SSH are checked to be gone at the end."""

import getpass
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import wait_for_first_merged_interval, free_port, stop_process, wait_until

RUN_TIMEOUT_S = 180


@pytest.fixture
def ssh_home(sshd, tmp_path):
    """A HOME whose ~/.ssh/config reaches the test's sshd as ``127.0.0.1`` (its port, user and
    key there), ``closed`` (a port nothing listens on) and ``stranger`` (a key the sshd does
    not accept); its known_hosts has the sshd's key."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    stranger_key = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger_key)], check=True)
    known_hosts = home / ".ssh" / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{sshd.port} {sshd.host_key}\n")
    user = getpass.getuser()
    (home / ".ssh" / "config").write_text(
        f"Host 127.0.0.1\n  Port {sshd.port}\n  User {user}\n  IdentityFile {sshd.client_key}\n\n"
        f"Host closed\n  HostName 127.0.0.1\n  Port {free_port()}\n\n"
        f"Host stranger\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {user}\n  IdentityFile {stranger_key}\n"
    )
    return home


def dask_spec_processes():
    """The PIDs of processes that Dask's SSH deployment starts (python -m distributed.cli.dask_spec)."""
    pids = set()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and b"distributed.cli.dask_spec" in (entry / "cmdline").read_bytes():
                pids.add(int(entry.name))
        except OSError:
            pass
    return pids


def test_a_cluster_started_over_ssh_runs_the_weighted_shares_and_is_gone_at_the_end(horde, nginx, ssh_home):
    started_before = dask_spec_processes()
    before = nginx.requests_served()
    # The scheduler on the first host, a worker on each of the other two (the same sshd here),
    # the first worker with twice the second's part.
    result = horde("http", nginx.url + "/ssh", "-n", "600", "-c", "3", "-q", "--cluster",
                   "ssh:127.0.0.1,127.0.0.1,127.0.0.1", "--cluster-weights", "2,1", timeout=RUN_TIMEOUT_S,
                   env={"HOME": str(ssh_home), "HORDE_CLUSTER_PYTHON": sys.executable})
    assert result.code == 0, result.stderr
    summary = result.summary
    assert nginx.requests_served() - before == summary["global"]["count"] == 600
    machines = summary["machines"]
    assert [(m["segment"], m["requests"], m["delivered"]) for m in machines] == [
        ("0:2/3", 400, True), ("2/3:1", 200, True)]
    # Two worker processes, started over SSH: neither is this one's.
    assert len({m["pid"] for m in machines} - {os.getpid()}) == 2
    # The cluster was closed with the run: every Dask process it started over SSH has ended.
    wait_until(lambda: not dask_spec_processes() - started_before, timeout=30,
               what="the scheduler and workers started over SSH to end")


def start_a_long_run_over_ssh(nginx, ssh_home, results):
    """`horde http` at 50 arrivals a second for up to 60 s on a cluster it starts over SSH,
    returned with the Dask processes it started once its first interval is merged."""
    started_before = dask_spec_processes()
    process = subprocess.Popen(["horde", "http", nginx.url + "/ssh-long", "-d", "60s", "--rate", "50", "-q",
                                "--cluster", "ssh:127.0.0.1,127.0.0.1", "--results-dir", str(results)],
                               env={**os.environ, "HOME": str(ssh_home), "HORDE_CLUSTER_PYTHON": sys.executable},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_for_first_merged_interval(process, results, RUN_TIMEOUT_S)
    started = dask_spec_processes() - started_before
    assert len(started) == 2, "the scheduler and a worker, started over SSH"
    return process, started


def test_an_interrupted_run_over_ssh_stops_and_closes_its_cluster(nginx, ssh_home, tmp_path):
    results = tmp_path / "interrupted"
    process, started = start_a_long_run_over_ssh(nginx, ssh_home, results)
    try:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    finally:
        stop_process(process)
    assert process.returncode == 130, stderr
    assert json.loads((results / "summary.json").read_text())["run"]["status"] == "interrupted", stderr
    wait_until(lambda: not dask_spec_processes() & started, timeout=30,
               what="the scheduler and worker started over SSH to be closed")


def test_a_killed_coordinator_leaves_no_dask_process_on_the_hosts(nginx, ssh_home, tmp_path):
    """SIGKILL: the coordinator cannot close the cluster it started. Its shares stop by
    themselves, and the scheduler, its client gone, stops itself and its workers."""
    process, started = start_a_long_run_over_ssh(nginx, ssh_home, tmp_path / "killed")
    process.kill()
    process.communicate()
    # The scheduler waits 10 s for a client (as Dask's worker-ttl), then closes.
    wait_until(lambda: not dask_spec_processes() & started, timeout=60,
               what="the scheduler and worker started over SSH to stop by themselves")


def test_hosts_that_cannot_run_a_share_are_named_before_anything_starts(horde, nginx, ssh_home, tmp_path):
    before = nginx.requests_served()
    env = {"HOME": str(ssh_home), "HORDE_CLUSTER_PYTHON": sys.executable}

    def refused(spec, **extra_env):
        result = horde("http", nginx.url + "/ssh-refused", "-n", "10", "--cluster", spec, timeout=RUN_TIMEOUT_S,
                       env={**env, **extra_env})
        assert result.code == 3, result.stderr
        assert not result.results_dir.exists() or not any(result.results_dir.iterdir())
        return result.stderr

    # The scheduler's host alone: no worker to run a share.
    alone = horde("http", nginx.url, "--cluster", "ssh:127.0.0.1", timeout=RUN_TIMEOUT_S, env=env)
    assert alone.code == 2 and "ssh:127.0.0.1 names only the scheduler's host" in alone.stderr, alone.stderr
    # Every host that fails is named, with why; the one that works is not.
    stderr = refused("ssh:127.0.0.1,closed,stranger")
    assert "closed: cannot be reached over SSH" in stderr, stderr
    assert "stranger: SSH refused the login" in stderr and "~/.ssh/config" in stderr, stderr
    assert "127.0.0.1:" not in stderr.replace("--cluster ssh:127.0.0.1", ""), stderr
    # A host whose key is not in known_hosts.
    (ssh_home / ".ssh" / "known_hosts").rename(tmp_path / "known_hosts")
    stderr = refused("ssh:127.0.0.1,127.0.0.1")
    assert "127.0.0.1: " in stderr and "~/.ssh/known_hosts" in stderr, stderr
    (tmp_path / "known_hosts").rename(ssh_home / ".ssh" / "known_hosts")
    # A host whose Python has no horde: a virtualenv of its own, without this one's packages.
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    python = str(bare / "bin" / "python")
    stderr = refused("ssh:127.0.0.1,127.0.0.1", HORDE_CLUSTER_PYTHON=python)
    assert f"127.0.0.1: {python} cannot run horde's workers" in stderr, stderr
    assert "No module named 'horde'" in stderr and "HORDE_CLUSTER_PYTHON" in stderr, stderr
    assert nginx.requests_served() - before == 0
