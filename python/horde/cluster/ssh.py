"""``--cluster ssh:HOST,HOST,...``: a Dask cluster started over SSH for the run, as Dask's
SSHCluster starts one: the first host runs the scheduler, each other host one worker (a host
named twice runs two, or the scheduler and a worker). SSH is asyncssh's, which reads
``~/.ssh/config`` (user, port, key, ProxyJump) and ``~/.ssh/known_hosts``.

Every host is checked first, all at once: reached over SSH, and its Python (this machine's
path, or ``$HORDE_CLUSTER_PYTHON``) imports horde, of this version, and Dask. A host that fails
is named before any Dask process is started."""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import shlex
import sys
from dataclasses import dataclass

from horde.cluster import ClusterInputError

# The Python that runs the scheduler and the workers on every host: by default this one's path
# (Dask's default), so machines set up alike (the same virtualenv path) need nothing more.
REMOTE_PYTHON_ENV = "HORDE_CLUSTER_PYTHON"
# How long a host's check may take: an SSH connection and an import of horde and Dask.
CHECK_TIMEOUT_S = 30
# What the check runs on a host: the version of the horde that its Python imports.
CHECK_SCRIPT = "import horde._engine as engine, distributed; print(engine.__version__)"
# A worker holds a share: one thread (the engine runs its own), and no memory limit, so that
# Dask never pauses or restarts a process holding many connections (as local:N).
WORKER_OPTIONS = {"nthreads": 1, "memory_limit": 0}
# Any free port: two runs may share a scheduler's host. No dashboard. The scheduler stops the
# cluster by itself if the coordinator goes without closing it (horde.cluster.lifeline).
SCHEDULER_OPTIONS = {"port": 0, "dashboard": False, "dashboard_address": ":0",
                     "preload": ["horde.cluster.lifeline"]}


class SshStartFailed(Exception):
    """Hosts that cannot run a share (exit 3): the message names each and why."""


@dataclass(frozen=True)
class SshHost:
    """A host of ``ssh:``, as written: ``[USER@]HOST``; the rest comes from ~/.ssh/config."""

    text: str

    @property
    def address(self) -> str:
        return self.text.rpartition("@")[2]

    def connect_options(self) -> dict:
        """asyncssh.connect's options: the user, if given here (else ~/.ssh/config's, else this
        one's)."""
        user = self.text.rpartition("@")[0]
        return {"username": user} if user else {}


def parse_hosts(spec: str) -> list[SshHost]:
    """The hosts of ``ssh:SCHEDULER,WORKER,...`` (the command line checked the form)."""
    return [SshHost(text) for text in spec.removeprefix("ssh:").split(",")]


def remote_python() -> str:
    return os.environ.get(REMOTE_PYTHON_ENV) or sys.executable


def start_cluster(hosts: list[SshHost]):
    """Checks every host, then starts the scheduler on the first and a worker on each other,
    named 0..N-1 in their order (the machines' order, which --cluster-weights follows); Dask
    passes them this process's Dask configuration. The cluster is closed if it fails to start."""
    try:
        import asyncssh  # noqa: F401 - Dask's SSH deployment needs it
    except ImportError as err:
        raise ClusterInputError(
            f"--cluster ssh: starts Dask over SSH with asyncssh, which is not installed here ({err}): "
            "pip install 'horde[cluster]'") from None
    from distributed.deploy.spec import SpecCluster
    from distributed.deploy.ssh import Scheduler, Worker

    python = remote_python()
    # A loop of its own, not asyncio.run: on the main thread, asyncio.run takes Ctrl-C over
    # (signal.signal), and the handler it leaves is Python's, not the command line's, which
    # stops the run on Ctrl-C.
    loop = asyncio.new_event_loop()
    try:
        problems = loop.run_until_complete(check_hosts(hosts, python))
    finally:
        loop.close()
    if problems:
        raise SshStartFailed("; ".join(problems))
    # SSHCluster's own spec, but for each worker's name: SSHCluster gives every worker the same
    # options, and its workers are then named by their addresses, in no order a user can name.
    scheduler = {"cls": Scheduler, "options": {"address": hosts[0].address, "remote_python": python,
                                               "connect_options": hosts[0].connect_options(),
                                               "kwargs": SCHEDULER_OPTIONS}}
    workers = {
        index: {"cls": Worker, "options": {"address": host.address, "remote_python": python,
                                           "connect_options": host.connect_options(),
                                           "kwargs": {**WORKER_OPTIONS, "name": index}}}
        for index, host in enumerate(hosts[1:])
    }
    with RemoteOutput() as remote:
        try:
            return SpecCluster(workers, scheduler, name="horde-ssh")
        except Exception as err:  # noqa: BLE001 - Dask says "Cluster failed to start" and why
            said = f" (last said on the hosts: {' | '.join(remote.lines)})" if remote.lines else ""
            raise SshStartFailed(f"starting Dask over SSH with {python}: {err}{said}") from None


class RemoteOutput(logging.Handler):
    """What the scheduler and workers print as they start over SSH, which Dask logs line by
    line: kept (the last few lines) rather than shown, for the error if they fail to start."""

    KEPT = 5
    LOGGER = "distributed.deploy.ssh"

    def __init__(self):
        super().__init__()
        self.lines: collections.deque[str] = collections.deque(maxlen=self.KEPT)

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def __enter__(self) -> RemoteOutput:
        logger = logging.getLogger(self.LOGGER)
        self._propagated = logger.propagate
        logger.addHandler(self)
        logger.propagate = False
        return self

    def __exit__(self, *_) -> None:
        logger = logging.getLogger(self.LOGGER)
        logger.removeHandler(self)
        logger.propagate = self._propagated


async def check_hosts(hosts: list[SshHost], python: str) -> list[str]:
    """Why each host that cannot run a share cannot, checked all at once; [] if all can."""
    from horde._engine import __version__ as version

    distinct = list(dict.fromkeys(hosts))
    problems = await asyncio.gather(*(check_host(host, python, version) for host in distinct))
    return [problem for problem in problems if problem is not None]


async def check_host(host: SshHost, python: str, version: str) -> str | None:
    import asyncssh

    async def run_check():
        async with asyncssh.connect(host.address, **host.connect_options()) as connection:
            return await connection.run(f"{shlex.quote(python)} -c {shlex.quote(CHECK_SCRIPT)}")

    try:
        result = await asyncio.wait_for(run_check(), CHECK_TIMEOUT_S)
    except asyncio.TimeoutError:
        return f"{host.text}: no answer over SSH within {CHECK_TIMEOUT_S} s"
    except asyncssh.HostKeyNotVerifiable as err:
        return (f"{host.text}: {err.reason}: its key must be in ~/.ssh/known_hosts (connect once with ssh, or "
                "ssh-keyscan it)")
    except asyncssh.PermissionDenied as err:
        return f"{host.text}: SSH refused the login ({err.reason}): set its user and key in ~/.ssh/config"
    except (OSError, asyncssh.Error) as err:
        return f"{host.text}: cannot be reached over SSH ({getattr(err, 'reason', None) or err})"
    if result.exit_status != 0:
        error = (result.stderr or "").strip().splitlines()
        return (f"{host.text}: {python} cannot run horde's workers ({error[-1] if error else result.exit_status}): "
                f"install horde there ({python} -m pip install 'horde[cluster]'), or set {REMOTE_PYTHON_ENV} to "
                "a Python that has it")
    theirs = (result.stdout or "").strip()
    if theirs != version:
        return f"{host.text}: has horde {theirs}, this machine horde {version}: install the same version everywhere"
    return None
