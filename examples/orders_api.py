"""A JSON API journey behind a bearer token: each user logs in, keeps the token the login
returns, lists its orders, then loops over the list the server returned: it reads every order
and cancels the ones that are still open. The loop and the condition run in the engine, on the
values the checks saved: the list is a JSON array (``jsonpath("$.orders").save_as("orders")``),
each element a JSON object whose fields templates read (``${order.id}``).

Run it against the built-in target (its orders API is described in docs/cli.md)::

    horde target            # prints its URL
    horde run examples/orders_api.py -D base_url=http://127.0.0.1:PORT -D users=10

Every user logs in under its own name (``buyer-`` and its user number, ``${__user_id}``) and has
four orders, two of them open: the target's ``/stats`` then counts 4 reads and 2 cancellations
per user, and no request refused for want of a token (``unauthorized``).
"""

from horde import exec_, http, json_body, jsonpath, param, ramp_users, scenario, setup, status


def with_token(request):
    """Every request after the login carries the token the login saved."""
    return request.header("Authorization", "Bearer ${token}").header("Accept", "application/json")


read_order = with_token(http("read order").get("/api/orders/${order.id}")).check(
    status().is_(200), jsonpath("$.status").exists()
)
cancel_order = with_token(http("cancel order").post("/api/orders/${order.id}/cancel")).check(
    status().is_(200), jsonpath("$.status").is_("cancelled")
)

journey = (
    scenario("orders")
    .exec(
        http("login")
        .post("/api/login")
        .body(json_body({"user": "buyer-${__user_id}"}))
        .check(status().is_(200), jsonpath("$.token").save_as("token"))
    )
    # Without a token the rest would only collect 401s: this user stops here instead.
    .exit_here_if_failed()
    .exec(
        with_token(http("list orders").get("/api/orders")).check(
            status().is_(200), jsonpath("$.orders").save_as("orders")
        )
    )
    # Once per element of the list the server returned; the condition reads the status the
    # list gave (shipped orders cannot be cancelled: the target answers 409).
    .foreach("${orders}", "order", exec_(read_order).do_if("${order.status} == 'open'", cancel_order))
)

setup(
    journey.inject(ramp_users(param("users", 10)).during(1)),
    protocol=http.base_url(param("base_url", "http://127.0.0.1:8080")),
    name="orders_api",
)
