"""How a share's messages reach its coordinator: Dask scheduler events, Worker.log_event on the
share's side and Client.subscribe_topic on the coordinator's (measured at 4-7 ms,
../shared/design/distributed.md). Messages are bytes (horde-metrics' wire.rs): log_event
would add a "worker" key to a dict. Everything Dask of the transport is in this class, so that
another (Pub/Sub) can replace it."""

from __future__ import annotations

from typing import Any, Callable


class RunTopic:
    """One run's messages from its shares, on the topic ``horde-<run id>``."""

    def __init__(self, run_id: str):
        self.name = f"horde-{run_id}"

    def send(self, worker: Any, message: bytes) -> None:
        """From a share, on ``worker`` (thread-safe: Dask hands it to the worker's loop)."""
        worker.log_event(self.name, message)

    def subscribe(self, client: Any, deliver: Callable[[bytes], None]) -> None:
        """On the coordinator: ``deliver`` gets each message, on the client's event loop."""
        client.subscribe_topic(self.name, lambda event: deliver(event[1]))

    def unsubscribe(self, client: Any) -> None:
        client.unsubscribe_topic(self.name)
