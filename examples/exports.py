"""Results other tools read: run this simulation with the export flags, e.g.

    horde target            # prints its URL
    horde run examples/exports.py -D base_url=http://127.0.0.1:PORT \\
        --results-dir out/run1 -q \\
        --export locust:out/locust \\
        --request-log out/requests.jtl

Every run writes, in its results directory, `histograms.hlog` (HdrHistogram's interval log:
one tag per request row and group, for HdrHistogram's tools) and `hgrm/*.hgrm` (percentile
distributions HdrHistogram's plotter reads). The flags above add:

- `--results-dir out/run1`: exactly this directory (created if missing, refused if not empty),
  and with `-q` its path is the last line on stdout, for CI scripts;
- `--export locust:out/locust`: Locust's `out/locust_stats.csv`, `_stats_history.csv`,
  `_failures.csv` and `_exceptions.csv` (the prefix is relative to the current directory, as
  Locust's `--csv`);
- `--request-log out/requests.jtl`: every request as JMeter's CSV results
  (`jmeter -g out/requests.jtl -o out/dashboard` builds JMeter's dashboard); `.jsonl` writes a
  JSON object per request instead.
"""

from horde import constant_users_per_sec, http, jsonpath, param, scenario, setup, status

shop = (
    scenario("shop")
    .group(
        "catalogue",
        http("list items").get("/api/items").check(status().is_(200), jsonpath("$.items[0].id").save_as("id")),
        http("one item").get("/api/items/${id}"),
    )
    .exec(http("missing item").get("/api/items/99").check(status().is_(404)))
)

setup(
    shop.inject(constant_users_per_sec(param("rate", 20)).during(param("seconds", 2))),
    protocol=http.base_url(param("base_url", "http://127.0.0.1:8080")),
    name="exports",
)
