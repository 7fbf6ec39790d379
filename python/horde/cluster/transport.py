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

    def forget(self, client: Any) -> None:
        """Drops the run's messages that the scheduler keeps (the last N of every topic, N its
        low-level-log-length, 1,000 by default): a run's request log records alone can weigh
        megabytes each. Defined inline, so that it reaches a scheduler without horde by value.
        Best effort: a scheduler that cannot be reached keeps them.

        Dropped twice: now, and again a second later on the scheduler's own loop. What was
        still on its way when this call arrived (the unsubscribe just sent, a worker's last
        events: they travel on other connections than this call) would make the topic again."""
        name = self.name
        late_messages_s = 1.0

        def drop_topic(dask_scheduler=None):
            import asyncio

            def drop():
                broker = getattr(dask_scheduler, "_broker", None)  # distributed 2024.2 on
                topics = broker._topics if broker is not None else getattr(dask_scheduler, "events", {})
                topics.pop(name, None)

            drop()
            asyncio.get_running_loop().call_later(late_messages_s, drop)

        try:
            client.run_on_scheduler(drop_topic)
        except Exception:  # noqa: BLE001 - the scheduler gone, or an older layout: nothing kept to free
            pass
