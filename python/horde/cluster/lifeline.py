"""A Dask preload for the scheduler of a cluster horde starts over SSH (``--cluster ssh:``):
the scheduler closes itself, and with it every worker and nanny, once its coordinator's client
has been gone for ORPHAN_TIMEOUT_S. The coordinator closes the cluster at the end of a run; if
it is killed or loses its network, nothing else would, and the Dask processes would stay on the
hosts (their shares stop by themselves: share.BEAT_TIMEOUT_S). local:N needs none of this: its
processes are the coordinator's children."""

from __future__ import annotations

import asyncio
import time

from distributed.diagnostics.plugin import SchedulerPlugin

# As long as Dask's worker-ttl in the clusters horde starts (deploy.STARTED_CLUSTER_CONFIG).
ORPHAN_TIMEOUT_S = 10.0
# How long the scheduler waits for the coordinator's client to come at all: the workers start
# over SSH before it does.
FIRST_CLIENT_TIMEOUT_S = 300.0
CHECK_EVERY_S = 1.0
# Dask's own client of every scheduler, always there: not a coordinator.
DASK_PSEUDO_CLIENT = "fire-and-forget"


def dask_setup(scheduler) -> None:
    """Called by Dask on the scheduler's event loop as it starts."""
    lifeline = Lifeline(scheduler)
    scheduler.add_plugin(lifeline)
    lifeline.watch = asyncio.ensure_future(lifeline.close_when_orphaned())


class Lifeline(SchedulerPlugin):
    name = "horde-lifeline"

    def __init__(self, scheduler):
        self.scheduler = scheduler
        self.watch: asyncio.Future | None = None
        # When the scheduler closes if no client is there by then.
        self.deadline = time.monotonic() + FIRST_CLIENT_TIMEOUT_S

    def add_client(self, scheduler, client: str) -> None:
        if client != DASK_PSEUDO_CLIENT:
            self.deadline = float("inf")

    def remove_client(self, scheduler, client: str) -> None:
        if not self._has_client():
            self.deadline = time.monotonic() + ORPHAN_TIMEOUT_S

    def _has_client(self) -> bool:
        return any(client != DASK_PSEUDO_CLIENT for client in self.scheduler.clients)

    async def close_when_orphaned(self) -> None:
        from distributed.core import Status

        while self.scheduler.status not in (Status.closing, Status.closed):
            await asyncio.sleep(CHECK_EVERY_S)
            if time.monotonic() > self.deadline and not self._has_client():
                await self.scheduler.close(reason="horde's coordinator is gone: the cluster it started over SSH stops")
                return
