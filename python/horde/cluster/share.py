"""What runs on a Dask worker: one share of the plan (``run_share``, a task), and the small
functions the coordinator calls on the worker's event loop with ``Client.run``: its clock
(``clock_ns``), the start (``start``) and the stop (``stop``). They are pickled by reference
to this module, so a worker needs horde installed, and nothing of horde runs on the
scheduler."""

from __future__ import annotations

import collections
import os
import threading
import time
from pathlib import Path

from horde.cluster.transport import RunTopic


# The coordinator beats every BEAT_EVERY_S (coordinator.py); a share that has heard none for
# BEAT_TIMEOUT_S takes it as gone (killed, its machine lost) and stops itself: no share goes on
# sending load that nobody counts. Locust's workers stop the same way when their master goes.
BEAT_TIMEOUT_S = 5.0


class ShareFailed(Exception):
    """A share that could not run (its plan, this machine's limits): the message says why."""


class _ShareState:
    """A share on this worker process: its engine runner, and its start once given."""

    def __init__(self):
        from horde._engine import ShareRunner

        # The coordinator's lease: each beat extends it; the engine checks it before every
        # request, so a share that was stopped and resumes sends nothing once it lapsed.
        self.runner = ShareRunner(BEAT_TIMEOUT_S)
        self.started = threading.Event()
        self.start_ns = 0
        self.done = threading.Event()

    def watch_the_coordinator(self) -> None:
        """Stops the share once its lease has lapsed, also before the run starts (while it
        waits for the coordinator's start, no request asks)."""
        while not self.done.wait(0.25):
            silent = self.runner.lease_lapsed_s()
            if silent is not None:
                self.runner.stop(f"no beat from the coordinator for {silent:.1f} s: it is gone, so this share stops")
                return


# The shares of this process by run id, for the coordinator's start and stop.
_shares: dict[str, _ShareState] = {}
# Stops that came before their share was registered (the coordinator gave up waiting for it):
# the share stops as it registers. The last few only: most stops come after a share ended.
_early_stops: collections.OrderedDict[str, str] = collections.OrderedDict()
_EARLY_STOPS_KEPT = 16
_lock = threading.Lock()


def _register(run_id: str) -> _ShareState:
    state = _ShareState()
    with _lock:
        _shares[run_id] = state
        reason = _early_stops.pop(run_id, None)
    if reason is not None:
        state.runner.stop(reason)
    return state


class _Link:
    """The share's link as the engine calls it (horde-py's ShareLink): ``ready`` reports and
    waits for the start, ``send`` relays an interval."""

    def __init__(self, topic: RunTopic, worker, state: _ShareState, ready_timeout_s: float):
        self.topic, self.worker, self.state, self.ready_timeout_s = topic, worker, state, ready_timeout_s

    def ready(self, message: bytes) -> int:
        self.topic.send(self.worker, message)
        deadline = time.monotonic() + self.ready_timeout_s
        while not self.state.started.wait(0.05):
            reason = self.state.runner.stop_reason()
            if reason is not None:
                raise RuntimeError(f"the coordinator stopped the run before it started: {reason}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"no start from the coordinator within {self.ready_timeout_s:.0f} s")
        return self.state.start_ns

    def send(self, message: bytes) -> None:
        self.topic.send(self.worker, message)


def run_share(run_id: str, share: int, plan_json: str, ready_timeout_s: float, start_ns: int | None = None,
              simulation=None) -> dict:
    """The task: runs share ``share`` of run ``run_id``, its own results in the worker's local
    directory. Returns the run's status and that directory; raises ShareFailed if it could not
    run. A replacement share is given the run's start (``start_ns``, in this machine's clock)
    with its task: it goes as soon as it is ready. ``simulation`` (path, parameters): the file
    to load for the session functions the plan calls."""
    from distributed import get_worker

    worker = get_worker()
    if simulation is not None:
        _load_session_functions(simulation, share, worker.address)
    state = _register(run_id)
    if start_ns is not None:
        state.start_ns = start_ns
        state.started.set()
    results = Path(worker.local_directory) / "horde" / run_id / f"share-{share}"
    link = _Link(RunTopic(run_id), worker, state, ready_timeout_s)
    watchdog = threading.Thread(target=state.watch_the_coordinator, name=f"horde-{run_id}-watchdog", daemon=True)
    watchdog.start()
    try:
        code, text = state.runner.run(plan_json, str(results), link, simulation is not None)
    finally:
        state.done.set()
        with _lock:
            _shares.pop(run_id, None)
    if code != 0:
        raise ShareFailed(f"share {share} on {worker.address} (exit {code}): {text}")
    return {"status": text, "results": str(results)}


# The simulation whose session functions this process holds: (path, parameters, its file's
# modification time). Loaded once for the runs that follow (a sweep's levels, a benchmark's
# trials), so that a share still running keeps its functions, and every run has the keys the
# first load gave.
_loaded_simulation: tuple | None = None
# Held while a simulation loads (not _lock, which the beat takes on the worker's event loop).
_loading = threading.Lock()
# What is never imported again: horde and the cluster's own packages.
_KEPT_PACKAGES = {"horde", "distributed", "dask"}


def _load_session_functions(simulation, share: int, address: str) -> None:
    """Loads the simulation file (at the coordinator's path) in this worker process, so that
    its session functions are registered under the keys the plan names: the same file with
    the same parameters registers them in the same order. Its hooks (before, after) are the
    coordinator's to run, not a share's. Another simulation (or this one changed) is loaded
    afresh: the modules it imports from its own folder are imported again, so that the
    functions they define are registered again, in the coordinator's order."""
    global _loaded_simulation
    import sys

    from horde import session
    from horde.errors import SimulationError
    from horde.loader import load_simulation

    path, params = simulation
    try:
        identity = (path, tuple(sorted(dict(params).items())), os.stat(path).st_mtime_ns)
    except OSError as error:
        raise ShareFailed(f"share {share} on {address} cannot read the simulation {path} for its session "
                          f"functions: {error}") from None
    with _loading:
        if identity == _loaded_simulation:
            return
        session.forget_loaded()
        folder = os.path.dirname(os.path.abspath(path)) + os.sep
        for name, module in list(sys.modules.items()):
            if name.split(".")[0] not in _KEPT_PACKAGES and (getattr(module, "__file__", None) or "").startswith(folder):
                del sys.modules[name]
        _loaded_simulation = None
        try:
            load_simulation(path, dict(params))
        except SimulationError as error:
            raise ShareFailed(f"share {share} on {address} could not load the simulation for its session "
                              f"functions: {error}") from None
        _loaded_simulation = identity


def cores() -> int:
    """The cores this process may run on (its affinity where the system has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def clock_ns() -> int:
    """This machine's wall clock, for the coordinator's offset probe."""
    return time.time_ns()


def start(run_id: str, starts: dict, dask_worker=None) -> None:
    """Gives this worker's share its start: ``starts`` maps worker addresses to instants in
    each one's own clock (nanoseconds since the Unix epoch)."""
    at = starts.get(dask_worker.address)
    if at is None:
        return
    with _lock:
        state = _shares.get(run_id)
    if state is not None:
        state.start_ns = at
        state.started.set()


async def beat(run_id: str, rows: list[int] | None = None) -> None:
    """The coordinator is alive (run every BEAT_EVERY_S on the worker's event loop; a coroutine,
    so that the coordinator need not wait for it); ``rows``: the share's row grants, if any."""
    with _lock:
        state = _shares.get(run_id)
    if state is not None:
        state.runner.beat(rows)


def stop(run_id: str, reason: str) -> None:
    """Asks this worker's share of run ``run_id`` to stop, whether or not it runs yet."""
    with _lock:
        state = _shares.get(run_id)
        if state is None:
            _early_stops[run_id] = reason
            while len(_early_stops) > _EARLY_STOPS_KEPT:
                _early_stops.popitem(last=False)
    if state is not None:
        state.runner.stop(reason)
