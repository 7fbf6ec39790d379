"""One simulation on several worker processes (Dask, docs/cluster.md): each worker runs an
equal share of the schedule, they start together, and this process merges their results into
one summary, as if one machine had sent it all. A queue feeder's rows are dealt out among the
workers: each row is used once in the whole run, never by two workers.

    pip install 'horde[cluster]'
    horde target            # prints its URL
    horde run examples/cluster_run.py --cluster local:2 -D base_url=http://127.0.0.1:PORT

With a Dask cluster of your own (``dask scheduler`` and ``dask worker`` on other machines),
give its scheduler instead: ``--cluster tcp://HOST:8786``.
"""

from horde import constant_users_per_sec, http, inline, jsonpath, param, scenario, setup, status

# Rows to use once each across every worker: a row number and the item it reads.
rows = inline([{"row": row, "item": 1 + row % 3} for row in range(1000)], name="rows").queue()

browse = (
    scenario("read an item")
    .feed(rows)
    .exec(http("item").get("/api/items/${item}?row=${row}").check(status().is_(200), jsonpath("$.name").exists()))
)

setup(
    browse.inject(constant_users_per_sec(param("rate", 50)).during(param("seconds", 2))),
    protocol=http.base_url(param("base_url", "http://127.0.0.1:8080")),
    name="cluster_run",
)
