"""shop: a journey recorded in shop.har (by tests 1, 10 entries) and imported by
`horde import`.

Replay it:

    horde run shop.py -D base_url=https://shop.test -D users=20

Parameters (-D NAME=VALUE): base_url; users (1); ramp (seconds to start them over, 0); duration
(seconds: users go through the journey again and again that long, 0: once); think_time (a factor
on the recorded pauses, 0 for none); inputs (the feeder's file, shop_inputs.csv).

What was correlated, generated and dropped, and why: shop_import.md.
"""

from horde import (
    add_cookie,
    at_once_users,
    constant_concurrent_users,
    csv,
    http,
    json_body,
    param,
    ramp_users,
    raw_file_body_part,
    scenario,
    setup,
    status,
    string_body_part,
)

base_url = param("base_url", "https://shop.test")
api_shop_test_url = param("api_shop_test_url", "https://api.shop.test")
users = param("users", 1)
ramp = param("ramp", 0.0)
duration = param("duration", 0.0)
think_time = param("think_time", 1.0)

# Typed and uploaded while recording (one row: add rows for more accounts and files; read in a circle).
inputs = csv(param("inputs", "shop_inputs.csv")).circular()

headers_1 = {
    "Origin": base_url,
    "Referer": base_url + "/",
}

headers_2 = {
    "Origin": base_url,
    "X-Client": "web",
}

headers_3 = {
    "Accept": "application/json",
}

journey = (
    scenario("shop")
    .feed(inputs)
    .exec(add_cookie("theme", "dark"))  # set by JavaScript in the recording
    # 1. GET / -> 200 text/html (entry 1)
    .exec(
        http("Shop home")
            .get("/")
            .check(status().is_(200))
            .resources(
                http("GET /static/app.css")
                    .get("/static/app.css")
                    .check(status().is_(200)),
            )
    )
    .pause(1.9 * think_time)
    # 2. POST /login -> 302 -> 200 text/html (entry 5)
    .exec(
        http("POST /login")
            .post("/login")
            .headers(headers_1)
            .form_param("user", "${user}")  # typed input: the feeder's column user
            .form_param("note", "a b&c")
            .form_param("empty", "")
            .check(status().is_(200))
    )
    .pause(0.9 * think_time)
    # 3. POST https://api.shop.test/cart -> 201 application/json (entry 6)
    .exec(
        http("POST api.shop.test/cart")
            .post(api_shop_test_url + "/cart")
            .headers(headers_2)
            .body(json_body({"sku": "A-1", "qty": 2, "gift": False, "note": "$${not a template}"}))
            .check(status().is_(201))
    )
    .pause(1.0 * think_time)
    # 4. POST /upload -> 200 text/html (entry 7)
    .exec(
        http("POST /upload")
            .post("/upload")
            .body_part(string_body_part("title", "Q3 report"))
            .body_part(raw_file_body_part("document", "${document_path}", content_type="application/octet-stream"))
            .check(status().is_(200))
    )
    .pause(1.7 * think_time)
    # 5. GET /api/items -> 200 application/json (entry 9)
    .exec(
        http("GET /api/items")
            .get("/api/items?page=2&sort=name")
            .headers(headers_3)
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
    "User-Agent": "Mozilla/5.0 (X11) Chrome/156",
    "Accept-Language": "en-US",
})
setup(journey.inject(injection), protocol=protocol, name="shop")
