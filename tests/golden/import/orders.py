"""orders: a journey recorded in orders.har (by horde record 0.1.0, 4 entries) and imported by
`horde import`.

Replay it:

    horde run orders.py -D base_url=http://127.0.0.1:42719 -D users=20

Parameters (-D NAME=VALUE): base_url; users (1); ramp (seconds to start them over, 0); duration
(seconds: users go through the journey again and again that long, 0: once); think_time (a factor
on the recorded pauses, 0 for none); inputs (the feeder's file, orders_inputs.csv).

What was correlated, generated and dropped, and why: orders_import.md.
"""

from horde import (
    at_once_users,
    constant_concurrent_users,
    csv,
    http,
    json_body,
    jsonpath,
    param,
    ramp_users,
    scenario,
    setup,
    status,
)

base_url = param("base_url", "http://127.0.0.1:42719")
users = param("users", 1)
ramp = param("ramp", 0.0)
duration = param("duration", 0.0)
think_time = param("think_time", 1.0)

# Typed and uploaded while recording (one row: add rows for more accounts and files; read in a circle).
inputs = csv(param("inputs", "orders_inputs.csv")).circular()

journey = (
    scenario("orders")
    .feed(inputs)
    # 1. POST /api/login -> 200 application/json (entry 0)
    .exec(
        http("POST /api/login")
            .post("/api/login")
            # JSON field user: typed input: the feeder's column user
            .body(json_body({"user": "${user}"}))
            .check(status().is_(200), jsonpath("$.token").save_as("token"))
    )
    # 2. GET /api/orders -> 200 application/json (entry 1)
    .exec(
        http("GET /api/orders")
            .get("/api/orders")
            # header Authorization: bearer token rule: from "POST /api/login" (request 1), JSON $.token
            .header("Authorization", "Bearer ${token}")
            .check(status().is_(200), jsonpath("$.orders[0].id").save_as("order_id"))
    )
    # 3. GET /api/orders/829361 -> 200 application/json (entry 2)
    .exec(
        http("GET /api/orders/{order_id}")
            .get("/api/orders/${order_id}")
            # path segment 829361: REST id rule: from "GET /api/orders" (request 2), JSON $.orders[0].id
            # header Authorization: bearer token rule: from "POST /api/login" (request 1), JSON $.token
            .header("Authorization", "Bearer ${token}")
            .check(status().is_(200))
    )
    # 4. POST /api/orders/829361/cancel -> 200 application/json (entry 3)
    .exec(
        http("POST /api/orders/{order_id}/cancel")
            .post("/api/orders/${order_id}/cancel")
            # path segment 829361: REST id rule: from "GET /api/orders" (request 2), JSON $.orders[0].id
            # header Authorization: bearer token rule: from "POST /api/login" (request 1), JSON $.token
            .header("Authorization", "Bearer ${token}")
            .check(status().is_(200))
    )
)

if duration:
    injection = constant_concurrent_users(users).during(duration)
elif ramp:
    injection = ramp_users(users).during(ramp)
else:
    injection = at_once_users(users)

protocol = http.base_url(base_url).headers({
    "User-Agent": "Python-urllib/3.11",
    "Accept": "application/json",
})
setup(journey.inject(injection), protocol=protocol, name="orders")
