"""Results you can share: an API key and a bearer token that never appear in them.

Every request carries a partner API key (``X-Api-Key``) set once on the protocol, and after the
login the bearer token the login returned. ``Authorization`` (and ``Proxy-Authorization``,
``Cookie``) are always shown as ``***`` in summary.json, report.html and the request log;
``.secret_headers("X-Api-Key")`` adds the key. The requests themselves send the real values:
the orders API answers 401 to a request without a token it knows.

Run it against the built-in target::

    horde target            # prints its URL
    horde run examples/secret_headers.py -D base_url=http://127.0.0.1:PORT -D api_key=k-123 -D users=3
    grep -c k-123 results/*/summary.json      # 0: the plan in the results shows ***
"""

from horde import at_once_users, http, json_body, jsonpath, param, scenario, setup, status

journey = (
    scenario("orders")
    .exec(
        http("login")
        .post("/api/login")
        .body(json_body({"user": "partner-${__user_id}"}))
        .check(status().is_(200), jsonpath("$.token").save_as("token"))
    )
    .exit_here_if_failed()
    .exec(http("list orders").get("/api/orders").header("Authorization", "Bearer ${token}").check(status().is_(200)))
)

protocol = (
    http.base_url(param("base_url", "http://127.0.0.1:8080"))
    .header("X-Api-Key", param("api_key", "k-123"))
    .secret_headers("X-Api-Key")
)

setup(journey.inject(at_once_users(param("users", 3))), protocol=protocol, max_duration=30)
