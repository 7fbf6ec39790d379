"""Where the shares run: ``local:N`` starts a Dask LocalCluster of N single-threaded worker
processes on 127.0.0.1, ``ssh:HOST,HOST,...`` starts a scheduler and workers over SSH
(horde.cluster.ssh), ``tcp://HOST:PORT`` connects to an existing scheduler."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from horde.cluster import ClusterInputError

# What a cluster horde starts is configured with. The scheduler keeps every topic's events in a
# deque of this length (dask#5509): the shares' interval messages are read as they come, so a
# short one is enough, and keeps the scheduler's memory flat over a long run. Named
# distributed.scheduler.events-log-length before 2025, an alias of it since.
STARTED_CLUSTER_CONFIG = {
    "distributed.admin.low-level-log-length": 64,
    # Dask's own deadline for a worker that stopped answering (5 minutes by default).
    "distributed.scheduler.worker-ttl": "10s",
    # What Dask does on its own that a load test does not need, and which costs CPU on the
    # machines that send the load: each worker's profiler sampling its threads every 10 ms,
    # every server's event-loop tick every 20 ms (it only warns of a blocked loop), work
    # stealing (each share is pinned to its worker), and the system monitor's psutil reads
    # every 0.5 s. Measured idle, local:2, the coordinator and its workers together: 56 ms of
    # CPU a second with Dask's defaults, 15 with these (bench/RESULTS.md, 2026-11-29).
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.scheduler.work-stealing": False,
    "distributed.admin.system-monitor.interval": "2s",
}
# How long to wait for a scheduler to answer, and for an existing cluster to have a worker.
CONNECT_TIMEOUT_S = 10


@dataclass
class Deployment:
    """A connected client, and the cluster horde started for this run, if it did."""

    spec: str
    client: Any
    cluster: Any = None
    # Whether every worker runs on this machine (local:N), sharing its cores.
    on_this_machine: bool = False

    def close(self) -> None:
        self.client.close(timeout=CONNECT_TIMEOUT_S)
        if self.cluster is not None:
            self.cluster.close(timeout=CONNECT_TIMEOUT_S)


def connect(spec: str, spares: int = 0) -> Deployment:
    """Connects to the cluster of ``spec``, or starts it; ``local:N`` starts ``spares`` worker
    processes more than its N, to replace lost ones."""
    import dask
    from distributed import Client, LocalCluster

    if spec.startswith("local:"):
        workers = int(spec.removeprefix("local:")) + spares
        with dask.config.set(STARTED_CLUSTER_CONFIG):
            # One thread per process: a share occupies it, the engine's threads are its own.
            # No memory limit: the nanny must not pause or kill a process holding many users.
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                                   dashboard_address=None, memory_limit=0)
        deployment = started(spec, cluster, workers, on_this_machine=True)
        deployment.client.run(ignore_interrupts)
        return deployment
    if spec.startswith("ssh:"):
        from horde.cluster import ssh

        hosts = ssh.parse_hosts(spec)
        with dask.config.set(STARTED_CLUSTER_CONFIG):
            cluster = ssh.start_cluster(hosts)
        return started(spec, cluster, len(hosts) - 1)
    try:
        client = Client(spec, timeout=CONNECT_TIMEOUT_S)
    except OSError as err:
        raise OSError(f"no Dask scheduler answers at {spec} ({err})") from None
    try:
        client.wait_for_workers(1, timeout=CONNECT_TIMEOUT_S)
    except TimeoutError:
        client.close()
        raise ClusterInputError(
            f"--cluster {spec}: the scheduler has no worker (start some: dask worker {spec})") from None
    try:
        check_workers(spec, client)
    except BaseException:
        client.close()
        raise
    return Deployment(spec, client)


def check_workers(spec: str, client) -> None:
    """Every worker of an existing cluster has this horde: a worker without it, or with another
    version, would fail its share only once the others are ready (or decode nothing the
    coordinator could read). Raises, naming each such worker, before anything is launched."""
    from horde._engine import __version__ as version

    answers = client.run(horde_version_probe(), on_error="return")
    problems = []
    for address, theirs in sorted(answers.items()):
        if isinstance(theirs, BaseException):
            problems.append(f"{address}: the check failed ({theirs})")
        elif theirs.startswith("!"):
            problems.append(f"{address}: its Python has no horde ({theirs[1:]}): pip install 'horde[cluster]=={version}'")
        elif theirs != version:
            problems.append(f"{address}: has horde {theirs}, this machine horde {version}: install the same version "
                            "everywhere")
    if problems:
        raise RuntimeError(f"--cluster {spec}: {len(problems)} of {len(answers)} workers cannot run a share, nothing "
                           "was sent:\n  " + "\n  ".join(problems))


def horde_version_probe():
    """A function that returns the horde version its worker imports, or ``!why`` when it
    imports none. Made here so that Dask pickles it by value: a worker without horde could not
    load a function of horde's modules by reference."""

    def probe():
        try:
            import horde._engine as engine
        except ImportError as err:
            return f"!{err}"
        return engine.__version__

    return probe


def started(spec: str, cluster, workers: int, on_this_machine: bool = False) -> Deployment:
    """A cluster horde started, once a client has it and its ``workers`` are there; closed if
    that fails."""
    from distributed import Client

    try:
        client = Client(cluster, timeout=CONNECT_TIMEOUT_S)
        client.wait_for_workers(workers, timeout=CONNECT_TIMEOUT_S * 3)
    except BaseException:
        cluster.close()
        raise
    return Deployment(spec, client, cluster, on_this_machine)


def ignore_interrupts() -> None:
    """Run on each worker process of a cluster horde started (on its event loop, the process's
    main thread): Ctrl-C at the terminal reaches these processes too, and must not kill them
    mid-share. The coordinator, which Ctrl-C interrupts, stops their shares and then the
    cluster."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
