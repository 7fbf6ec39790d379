"""A JSON API journey: a value extracted with JSONPath flows into the next URL, requests are
grouped with their own statistics, and think times are random.

    horde target            # prints its URL
    horde run examples/json_api.py -D base_url=http://127.0.0.1:PORT
"""

from horde import (
    constant_users_per_sec,
    header,
    http,
    jsonpath,
    param,
    scenario,
    setup,
    status,
)

browse = (
    scenario("browse the catalogue")
    .group(
        "catalogue",
        http("list items")
        .get("/api/items")
        .header("Accept", "application/json")
        .check(status().is_(200), header("Content-Type").is_("application/json"), jsonpath("$.items[1].id").save_as("id")),
        http("one item").get("/api/items/${id}").check(jsonpath("$.name").is_("ash frame")),
    )
    .pause(0.01, 0.05)
    .exec(http("missing item").get("/api/items/99").check(status().is_(404), jsonpath("$.error").is_("not_found")))
)

setup(
    browse.inject(constant_users_per_sec(param("rate", 20)).during(param("seconds", 2))),
    protocol=http.base_url(param("base_url", "http://127.0.0.1:8080")),
    name="json_api",
    percentiles=[50, 90, 99, 99.9],
)
