"""One simulation on several worker processes (Dask, docs/cluster.md): each worker runs an
equal share of the schedule, they start together, and this process merges their results into
one summary, as if one machine had sent it all. A queue feeder's rows are dealt out among the
workers: each row is used once in the whole run, never by two workers. A Python session
function runs in the worker process whose user calls it (each worker loads this file), and the
request log, one line per request of every worker, is written here.

    pip install 'horde[cluster]'
    horde target            # prints its URL
    horde run examples/cluster_run.py --cluster local:2 -D base_url=http://127.0.0.1:PORT \\
        --request-log requests.jsonl

With a Dask cluster of your own (``dask scheduler`` and ``dask worker`` on other machines),
give its scheduler instead: ``--cluster tcp://HOST:8786``; every worker then needs this file
at the same path (and what it imports) for its session function.
"""

import os

from horde import constant_users_per_sec, http, inline, jsonpath, param, scenario, setup, status

# Rows to use once each across every worker: a row number and the item it reads.
rows = inline([{"row": row, "item": 1 + row % 3} for row in range(1000)], name="rows").queue()


def tag_with_worker(session):
    """Runs in the worker process of the user: the request says which process sent it."""
    return session.set("sent_by", os.getpid())


browse = (
    scenario("read an item")
    .feed(rows)
    .exec(tag_with_worker)
    .exec(
        http("item")
        .get("/api/items/${item}?row=${row}&sent_by=${sent_by}")
        .check(status().is_(200), jsonpath("$.name").exists())
    )
)

setup(
    browse.inject(constant_users_per_sec(param("rate", 50)).during(param("seconds", 2))),
    protocol=http.base_url(param("base_url", "http://127.0.0.1:8080")),
    name="cluster_run",
)
