"""A run whose report.html has something on every page: two groups, a request that
fails its check (the Errors page), and latencies that vary (the Distribution page).

Every run writes report.html into its results directory; `horde report DIR --html` writes it
again from the directory alone (for a run that was killed too) and prints its path.

    horde target            # prints its URL
    horde run examples/html_report.py -D base_url=http://127.0.0.1:PORT
    horde report results/html_report-YYYYMMDD-HHMMSS --html
"""

from horde import constant_users_per_sec, http, param, scenario, setup, status

shop = (
    scenario("shop")
    .group(
        "browse",
        http("home").get("/").check(status().is_(200)),
        http("items").get("/api/items").check(status().is_(200)),
    )
    .group(
        "slow pages",
        http("fast page").get("/delay/2").check(status().is_(200)),
        http("slow page").get("/delay/15").check(status().is_(200)),
    )
    # A check that fails on purpose: the report's Errors page lists it with its message.
    .exec(http("missing page").get("/status/404").check(status().is_(200)))
)

setup(
    shop.inject(constant_users_per_sec(param("rate", 20)).during(param("seconds", 3))),
    protocol=http.base_url(param("base_url", "http://127.0.0.1:8080")),
    name="html_report",
)
