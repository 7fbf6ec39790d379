"""Feeders: records for virtual users, from a file or from Python, loaded once per run and
shared by every user of every worker (never a copy per user).

Gatling's names::

    >>> from horde import csv, feed, inline
    >>> users = csv("users.csv").circular()
    >>> users.to_plan()["strategy"]
    'circular'
    >>> [(s["type"], s["feeder"]) for s in feed(users).to_steps()]
    [('feed', 'users')]
    >>> inline([{"user": "ann"}, {"user": "bob"}], name="people").shuffle().to_plan()["source"]["type"]
    'inline'

A queue (the default) hands each record out once across the whole run; when it runs out, a
``feed`` fails (a KO ``feeder_exhausted``) and the user stops, or with ``.stop_run_when_empty()``
the whole run stops.
"""

import json
import os
from dataclasses import dataclass, replace
from typing import Optional

from .errors import DslError


@dataclass(frozen=True)
class Feeder:
    """An immutable feeder; every method returns a new one."""

    name: str
    source: dict
    strategy: str = "queue"
    on_exhausted: str = "ko"
    batch_size: Optional[int] = None

    def queue(self):
        """In order, each record once across the run (the default)."""
        return replace(self, strategy="queue")

    def circular(self):
        """In order, starting over at the end."""
        return replace(self, strategy="circular")

    def random(self):
        """A record drawn at random each time; records repeat."""
        return replace(self, strategy="random")

    def shuffle(self):
        """In a random order (the run's seed decides it), each record once."""
        return replace(self, strategy="shuffle")

    def batch(self, size=10_000):
        """Read the file ``size`` records at a time instead of all at once: for files larger
        than memory. ``random`` and ``shuffle`` then draw within each batch."""
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise DslError(f"batch() needs a whole number of records, 1 or more, got {size!r}")
        if self.source["type"] == "inline":
            raise DslError("batch(): inline records are already in memory")
        return replace(self, batch_size=size)

    def stop_run_when_empty(self):
        """When a queue or shuffle runs out, stop the whole run (gracefully) instead of failing
        the feed."""
        return replace(self, on_exhausted="stop_run")

    def named(self, name):
        """The name the plan gives it (by default the file's name without its extension)."""
        return replace(self, name=_name(name))

    def to_plan(self):
        plan = {"name": self.name, "source": dict(self.source)}
        if self.strategy != "queue":
            plan["strategy"] = self.strategy
        if self.on_exhausted != "ko":
            plan["on_exhausted"] = self.on_exhausted
        if self.batch_size is not None:
            plan["batch"] = self.batch_size
        return plan


def _name(name):
    if not isinstance(name, str) or not name:
        raise DslError(f"a feeder needs a name, got {name!r}")
    return name


def _file_feeder(kind, path, name):
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise DslError(f"{kind}() needs a file path, got {path!r}")
    path = os.fspath(path)
    if name is None:
        name = os.path.splitext(os.path.basename(path))[0] or kind
    return Feeder(_name(name), {"type": kind, "path": path})


def csv(path, name=None):
    """Comma-separated values; the first line names the columns."""
    return _file_feeder("csv", path, name)


def tsv(path, name=None):
    """Tab-separated values; the first line names the columns."""
    return _file_feeder("tsv", path, name)


def ssv(path, name=None):
    """Semicolon-separated values; the first line names the columns."""
    return _file_feeder("ssv", path, name)


def json_file(path, name=None):
    """A JSON array of objects."""
    return _file_feeder("json_file", path, name)


def jsonl(path, name=None):
    """One JSON object per line."""
    return _file_feeder("jsonl", path, name)


def inline(records, name="records"):
    """Records written in Python: a list of dicts (Gatling's array feeder)."""
    if isinstance(records, (str, bytes)) or not hasattr(records, "__iter__"):
        raise DslError(f"inline() takes a list of dicts, got {records!r}")
    records = list(records)
    if not records:
        raise DslError("inline() needs at least one record")
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise DslError(f"inline(): record {i} is not a dict: {record!r}")
        try:
            json.dumps(record)
        except (TypeError, ValueError) as err:
            raise DslError(f"inline(): record {i} cannot be written as JSON: {err}") from None
    return Feeder(_name(name), {"type": "inline", "records": records})


def collect_feeders(steps):
    """The feeders `feed` steps use, each once, and the steps with only their names: a plan
    lists feeders apart from the steps that take from them. Two different feeders may not
    share a name."""
    found = {}

    def walk(value):
        if isinstance(value, dict):
            feeder = value.pop("_feeder", None)
            if feeder is not None:
                known = found.get(feeder.name)
                if known is not None and known != feeder:
                    raise DslError(f"two different feeders are named {feeder.name!r}: name one with .named(...)")
                found[feeder.name] = feeder
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(steps)
    return [feeder.to_plan() for feeder in found.values()]
