"""The coordinator's side of a Dask run, as the engine drives it (horde-py's ShareHosts,
horde-engine's cluster/coordinator.rs): the machines, one share each; the shares launched as
pinned tasks; their messages; each machine's clock offset, so that one start instant is given
to each in its own clock; the stop; and, at the end, everything given back."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import queue
import threading
import time
import uuid

from horde.cluster import ClusterInputError, share
from horde.cluster.deploy import Deployment
from horde.cluster.transport import RunTopic

# Samples of each worker's clock; the one with the shortest round trip is kept (its error is at
# most half that round trip).
CLOCK_SAMPLES = 8
# How long one clock probe may take: a worker that does not answer is hung, not far away.
CLOCK_PROBE_TIMEOUT_S = 5.0
# How long a share waits for its start after it reported ready: twice the coordinator's wait
# for every share (horde-engine's CoordinatorOptions, 30 s).
SHARE_READY_TIMEOUT_S = 60.0
# How long close() waits for a stop to reach the workers.
STOP_WAIT_S = 5.0
# The beat that keeps the shares going (share.BEAT_TIMEOUT_S without one stops them).
BEAT_EVERY_S = 1.0
# How long a replacement waits for a spare worker to be there (one a nanny restarts after a
# crash takes about 2 s to join).
SPARE_WAIT_S = 5.0
# A worker that does not answer a stop within this is hung (a healthy one answers in
# milliseconds), and the nanny of a hung worker is given this long to restart it.
STOP_ANSWER_S = 2.0
RESTART_TIMEOUT_S = 20.0


class ClockOffset:
    """A worker's clock against this one's: ``offset_ns`` to add to an instant here to get the
    same instant there, measured with a round trip of ``rtt_ns``."""

    def __init__(self, offset_ns: int, rtt_ns: int):
        self.offset_ns, self.rtt_ns = offset_ns, rtt_ns


def machine_order(address: str, name) -> tuple:
    """Where a worker comes among the machines (summary.json's machines[], the order of
    --cluster-weights): by number, for the workers named 0..N-1 (LocalCluster's, the hosts'
    order of ``ssh:``, ``dask worker --name 3``); other names, then addresses, after them."""
    number = int(name) if isinstance(name, int) or (isinstance(name, str) and name.isdecimal()) else None
    return (number is None, number or 0, str(name), address)


class Coordinator:
    def __init__(self, deployment: Deployment, spares: int = 0, simulation=None):
        self._deployment = deployment
        # The simulation (path, parameters) each share loads for its session functions, if
        # the plan calls any.
        self._simulation = simulation
        self._client = deployment.client
        self._scheduler_address = getattr(self._client.scheduler, "address", deployment.spec)
        workers = self._client.scheduler_info(n_workers=-1)["workers"]
        ordered = sorted(workers, key=lambda address: machine_order(address, workers[address].get("name")))
        if spares >= len(ordered):
            raise ClusterInputError(f"--spares {spares}: the cluster has {len(ordered)} workers, and at least one "
                                    "must run a share")
        # The machines running a share, in share order; the last ``spares`` workers wait.
        self._machines = ordered[:len(ordered) - spares]
        # Workers a share ran on and lost: never a spare, in this run or the next ones.
        self._retired: set[str] = set()
        self._begin_run()

    def _begin_run(self) -> None:
        """What belongs to one run (a sweep runs one per level on the same machines): its id and
        topic, its messages, its tasks, its shares' attempts and grants, its clocks, its beat."""
        self._launches = 0
        self._start_ns: int | None = None
        self._run_id = uuid.uuid4().hex[:16]
        self._topic = RunTopic(self._run_id)
        self._inbox: queue.Queue = queue.Queue()
        # Shares lost (their task failed, their worker left) not yet reported to the engine:
        # (index, attempt, why).
        self._lost: list[tuple[int, int, str]] = []
        # Each share's attempt: 0, then one more each time it is replaced (as the engine counts).
        self._attempts: list[int] = []
        # The attempt each worker ran: a loss reported for it names that attempt.
        self._attempt_on: dict[str, int] = {}
        # Each share's row grants, as the engine last gave them: sent with every beat (a beat
        # lost on the way is made up by the next).
        self._row_grants: dict[int, list[int]] = {}
        self._lost_lock = threading.Lock()
        self._futures: list = []
        self._offsets: dict[str, ClockOffset] = {}
        self._stopping: threading.Thread | None = None
        self._subscribed = False
        self._run_over = threading.Event()
        self._beating: threading.Thread | None = None
        self._launched = False

    # -- what the engine calls ---------------------------------------------------------------

    def machines(self) -> list[str]:
        return list(self._machines)

    def threads_per_share(self) -> int | None:
        """The worker processes of ``local:N`` share this machine's cores: each share's engine
        gets its part of them (at least one) rather than one thread per core each. On other
        clusters each share uses its machine's cores."""
        if not self._deployment.on_this_machine:
            return None
        return max(1, share.cores() // len(self._machines))

    def cores(self) -> list[int]:
        """Each machine's cores, as its worker process counts them (``--cluster-weights cores``)."""
        cores = self._client.run(share.cores, workers=self._machines)
        return [cores[address] for address in self._machines]

    def launch(self, plans: list[str]) -> None:
        if self._launched:
            # The machines' next run (a sweep's next level): the last one's tasks, topic and
            # beat are given up first.
            self.end_run()
            self._begin_run()
        self._launched = True
        self._check_machines_present()
        self._offsets = {address: self._measure_clock(address) for address in self._machines}
        # Subscribed before any share is submitted: no ready message is missed.
        self._topic.subscribe(self._client, self._inbox.put)
        self._client.subscribe_topic("all", self._cluster_event)
        self._subscribed = True
        self._beating = threading.Thread(target=self._beat, args=(self._run_over,), name="horde-beat", daemon=True)
        self._beating.start()
        for index, (address, plan) in enumerate(zip(self._machines, plans)):
            future = self._client.submit(share.run_share, self._run_id, index, plan, SHARE_READY_TIMEOUT_S,
                                         simulation=self._simulation,
                                         key=f"horde-{self._run_id}-{index}", workers=[address],
                                         allow_other_workers=False, pure=False, retries=0)
            self._attempts.append(0)
            self._attempt_on[address] = 0
            future.add_done_callback(lambda done, index=index, address=address, run=self._run_id:
                                     self._share_done(done, index, address, run))
            self._futures.append(future)

    def receive(self, timeout: float) -> bytes | None:
        """The next message of a share, or None after ``timeout``. Raises once the scheduler,
        which carries every message, is gone: the engine then counts every share lost at once,
        rather than after its silence deadline."""
        try:
            return self._inbox.get(timeout=timeout)
        except queue.Empty:
            self._check_scheduler()
            return None

    def _check_scheduler(self) -> None:
        if self._client.status in ("running", "closing", "closed"):
            return
        # Dask's client retries, and logs each failure with a traceback: horde says it once.
        for name in ("distributed.client", "distributed.utils"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
        raise RuntimeError(f"the Dask scheduler {self._scheduler_address} is unreachable (it died, or the "
                           "network to it failed): no share's message can arrive; the shares stop by themselves "
                           f"within {share.BEAT_TIMEOUT_S:.0f} s, when no beat reaches them, and what they sent "
                           "meanwhile reached the server uncounted")

    def start(self, at_ns: int) -> None:
        self._start_ns = at_ns
        starts = {address: at_ns + offset.offset_ns for address, offset in self._offsets.items()}
        self._client.run(share.start, self._run_id, starts, workers=self._machines)

    def clock(self, index: int) -> tuple[int, int] | None:
        """Share ``index``'s machine clock against this one's: (offset, round trip) in ns, as
        measured for the start (summary.json's machines[].clock_offset_us, clock_error_us)."""
        offset = self._offsets.get(self._machines[index]) if index < len(self._machines) else None
        return None if offset is None else (offset.offset_ns, offset.rtt_ns)

    def lost_shares(self) -> list[tuple[int, int, str]]:
        """The shares lost since the last call: (index, attempt, why); the engine's policy
        decides, and ignores a report about an attempt it already replaced."""
        with self._lost_lock:
            lost, self._lost = self._lost, []
        return lost

    def replace_share(self, index: int, plan: str) -> str:
        """Starts share ``index`` again on a spare worker, with ``plan`` (its own, resumed by the
        engine) and the run's start in that worker's clock: the worker's address, or raises
        when there is none (the engine then counts the share lost)."""
        spare = self._spare()
        if spare is None:
            raise RuntimeError(f"no spare worker within {SPARE_WAIT_S:.0f} s (--spares N keeps some)")
        offset = self._measure_clock(spare)
        self._offsets[spare] = offset
        self._retired.add(self._machines[index])
        self._machines[index] = spare
        self._attempts[index] += 1
        self._attempt_on[spare] = self._attempts[index]
        self._launches += 1
        start_ns = None if self._start_ns is None else self._start_ns + offset.offset_ns
        future = self._client.submit(share.run_share, self._run_id, index, plan, SHARE_READY_TIMEOUT_S, start_ns,
                                     simulation=self._simulation,
                                     key=f"horde-{self._run_id}-{index}-r{self._launches}", workers=[spare],
                                     allow_other_workers=False, pure=False, retries=0)
        # Stored before the callback is added: a task that fails at once is then the current one.
        self._futures[index] = future
        future.add_done_callback(lambda done, index=index, address=spare, run=self._run_id:
                                 self._share_done(done, index, address, run))
        return spare

    def _spare(self) -> str | None:
        """A worker running no share of this run and never lost by it, waiting a little for one
        (a nanny restarting a crashed worker)."""
        deadline = time.monotonic() + SPARE_WAIT_S
        while True:
            workers = self._client.scheduler_info(n_workers=-1)["workers"]
            idle = [address for address in workers if address not in self._machines and address not in self._retired]
            if idle:
                return min(idle, key=lambda address: machine_order(address, workers[address].get("name")))
            if time.monotonic() > deadline:
                return None
            time.sleep(0.1)

    def grant_rows(self, index: int, bounds: list[int]) -> None:
        """The engine grants share ``index`` takes of each feeder, then of each run-wide counter,
        up to ``bounds``: sent to it at once, in a beat of its own (its feeds may be waiting),
        and with every beat after."""
        self._row_grants[index] = list(bounds)
        if index < len(self._machines):
            self._send_beat(index, self._machines[index])

    def stop_share(self, index: int, reason: str) -> None:
        """Stops one share the engine gave up, and forgets its task (a task pinned to a worker
        that left would otherwise run again if a worker came back at that address, dask#7346).
        A worker that does not answer the stop (hung, stopped) is restarted by its nanny: it
        comes back as a fresh worker, a spare for this run and a machine for the next, rather
        than holding its place until Dask's worker-ttl."""
        if index < len(self._futures):
            self._futures[index].cancel()
        address = self._machines[index]
        threading.Thread(target=self._stop_on, args=(address, reason, self._run_over), name="horde-stop-share",
                         daemon=True).start()

    def _stop_on(self, address: str, reason: str, run_over: threading.Event) -> None:
        """Stops this run's share on one worker, which may be dead: a stop that cannot reach
        it has nothing to stop. One that does not answer within STOP_ANSWER_S is hung, and
        restarted."""
        stop = self._client.run(share.stop, self._run_id, reason, workers=[address], on_error="ignore",
                                asynchronous=True)
        try:
            asyncio.run_coroutine_threadsafe(stop, self._client.loop.asyncio_loop).result(STOP_ANSWER_S)
        except concurrent.futures.TimeoutError:  # the builtin TimeoutError only from Python 3.11
            self._restart_if_present(address, run_over)
        except Exception:  # noqa: BLE001 - distributed's CommClosedError: the worker is gone
            pass

    def _restart_if_present(self, address: str, run_over: threading.Event) -> None:
        """Restarts a hung worker the run gave up, if it is still in the cluster, through its
        nanny (which kills the process if it does not end when asked, then starts a fresh
        one). A worker without a nanny cannot be restarted: it stays until it answers again or
        Dask removes it."""
        try:
            if run_over.is_set() or address not in self._client.scheduler_info(n_workers=-1)["workers"]:
                return
            self._client.restart_workers([address], timeout=RESTART_TIMEOUT_S, raise_for_error=False)
        except Exception:  # noqa: BLE001 - the cluster closing, a worker without a nanny
            pass

    def stop(self, reason: str) -> None:
        # On a thread of its own: the engine's collector calls this, and must not wait on a
        # worker that does not answer.
        if self._stopping is None:
            self._stopping = threading.Thread(target=self._broadcast_stop, args=(reason,), name="horde-stop",
                                              daemon=True)
            self._stopping.start()

    def end_run(self) -> None:
        """The run is over: its shares are stopped if they still run (and waited for a little,
        so that the next run's tasks do not queue behind them), its beat and its topic end. The
        machines stay for the next run."""
        self._run_over.set()
        if any(not future.done() for future in self._futures):
            self.stop("the coordinator is done")
        if self._stopping is not None:
            self._stopping.join(STOP_WAIT_S)
        deadline = time.monotonic() + STOP_WAIT_S
        for future in self._futures:
            while not future.done() and time.monotonic() < deadline:
                time.sleep(0.02)
            future.cancel()
        if self._subscribed:
            self._topic.unsubscribe(self._client)
            self._client.unsubscribe_topic("all")
            self._subscribed = False
            if self._client.status == "running":
                self._topic.forget(self._client)

    def close(self) -> None:
        self.end_run()
        self._deployment.close()

    def _check_machines_present(self) -> None:
        """Every machine of the run is still in the cluster: a task pinned to a worker that
        left would wait for it for ever. Raised before anything is sent (the engine's launch
        failure: exit 3, naming the worker)."""
        workers = self._client.scheduler_info(n_workers=-1)["workers"]
        gone = [address for address in self._machines if address not in workers]
        if gone:
            raise RuntimeError(f"the worker{'s' if len(gone) > 1 else ''} {', '.join(gone)} left the Dask cluster "
                               "(during an earlier run on it): no share can run there")

    # -- Dask's side ---------------------------------------------------------------------------

    def _measure_clock(self, address: str) -> ClockOffset:
        best = None
        loop = self._client.loop.asyncio_loop
        for _ in range(CLOCK_SAMPLES):
            sent = time.time_ns()
            probe = self._client.run(share.clock_ns, workers=[address], asynchronous=True)
            try:
                there = asyncio.run_coroutine_threadsafe(probe, loop).result(CLOCK_PROBE_TIMEOUT_S)[address]
            except concurrent.futures.TimeoutError:  # the builtin TimeoutError only from Python 3.11
                raise RuntimeError(f"the worker {address} did not answer a clock probe within "
                                   f"{CLOCK_PROBE_TIMEOUT_S:.0f} s") from None
            back = time.time_ns()
            sample = ClockOffset(there - (sent + back) // 2, back - sent)
            if best is None or sample.rtt_ns < best.rtt_ns:
                best = sample
        return best

    def _beat(self, run_over: threading.Event) -> None:
        """Tells every share, each BEAT_EVERY_S, that the coordinator lives, until its run is
        over; without it a share stops by itself (share.BEAT_TIMEOUT_S)."""
        while not run_over.wait(BEAT_EVERY_S):
            for index, address in enumerate(list(self._machines)):
                self._send_beat(index, address)

    def _send_beat(self, index: int, address: str) -> None:
        """One beat to one worker, with its share's row grants, not waited for: a worker that
        hangs delays no other's beat."""
        try:
            beat = self._client.run(share.beat, self._run_id, self._row_grants.get(index), workers=[address],
                                    wait=False, on_error="ignore", asynchronous=True)
            asyncio.run_coroutine_threadsafe(beat, self._client.loop.asyncio_loop)
        except Exception:  # noqa: BLE001 - a beat that cannot be sent is a missed beat, no more
            pass

    def _broadcast_stop(self, reason: str) -> None:
        self._client.run(share.stop, self._run_id, reason, workers=self._machines, on_error="ignore")

    def _share_done(self, future, index: int, address: str, run_id: str) -> None:
        """A share's task ended (on the client's event loop): an error loses the share, unless
        it was an attempt already replaced, or of a run before this one (a sweep's last level)."""
        if run_id != self._run_id or (index < len(self._futures) and self._futures[index] is not future):
            return
        if future.status == "error":
            self._lose(index, address, str(future.exception()) or f"share {index} on {address} failed")

    def _cluster_event(self, event) -> None:
        """The scheduler's events for every topic: a worker of ours removed is a lost share."""
        message = event[1]
        if not isinstance(message, dict) or message.get("action") != "remove-worker":
            return
        address = message.get("worker")
        # A copy: a replacement (on the engine's thread) may change the list meanwhile.
        machines = list(self._machines)
        if address not in machines:
            return
        index = machines.index(address)
        if index < len(self._futures) and not self._futures[index].done():
            self._lose(index, address, f"share {index}'s worker {address} left the Dask cluster (it died or was stopped)")

    def _lose(self, index: int, address: str, why: str) -> None:
        """Reports share ``index`` lost, as the attempt that ran on ``address`` (one replaced
        since is then not counted lost by it)."""
        with self._lost_lock:
            self._lost.append((index, self._attempt_on.get(address, 0), why))
