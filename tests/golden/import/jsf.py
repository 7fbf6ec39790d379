"""jsf: a journey recorded in jsf.har (by horde record 0.1.0, 7 entries) and imported by
`horde import`.

Replay it:

    horde run jsf.py -D base_url=http://127.0.0.1:42719 -D users=20

Parameters (-D NAME=VALUE): base_url; users (1); ramp (seconds to start them over, 0); duration
(seconds: users go through the journey again and again that long, 0: once); think_time (a factor
on the recorded pauses, 0 for none); inputs (the feeder's file, jsf_inputs.csv).

What was correlated, generated and dropped, and why: jsf_import.md.
"""

from horde import (
    at_once_users,
    constant_concurrent_users,
    css,
    csv,
    http,
    param,
    ramp_users,
    raw_file_body_part,
    scenario,
    setup,
    status,
    string_body_part,
)

base_url = param("base_url", "http://127.0.0.1:42719")
users = param("users", 1)
ramp = param("ramp", 0.0)
duration = param("duration", 0.0)
think_time = param("think_time", 1.0)

# Typed and uploaded while recording (one row: add rows for more accounts and files; read in a circle).
inputs = csv(param("inputs", "jsf_inputs.csv")).circular()

journey = (
    scenario("jsf")
    .feed(inputs)
    # 1. GET / -> 200 text/html (entry 0)
    .exec(
        http("Saw mill")
            .get("/")
            .check(status().is_(200))
    )
    # 2. GET /login -> 200 text/html (entry 1)
    .exec(
        http("Log in")
            .get("/login")
            .check(
                status().is_(200),
                css('input[name="javax.faces.ViewState"]', "value").save_as("view_state"),
            )
    )
    # 3. POST /login -> 302 -> 200 text/html (entry 2)
    .exec(
        http("POST /login")
            .post("/login")
            .form_param("username", "${username}")  # typed input: the feeder's column username
            .form_param("password", "${password}")  # typed input: the feeder's column password
            .form_param("javax.faces.ViewState", "${view_state}")  # JSF rule: from "Log in" (request 2), HTML input[name="javax.faces.ViewState"] value
            .check(
                status().is_(200),
                css('input[name="javax.faces.ViewState"]', "value").optional().save_as("view_state"),
            )
    )
    # 4. POST /account -> 200 text/html (entry 4)
    .exec(
        http("POST /account")
            .post("/account")
            .form_param("comment", "oak planks")
            .form_param("javax.faces.ViewState", "${view_state}")  # JSF rule: from "Account" (request 3), HTML input[name="javax.faces.ViewState"] value
            .check(
                status().is_(200),
                css('input[name="javax.faces.ViewState"]', "value").optional().save_as("view_state"),
            )
    )
    # 5. POST /upload -> 200 text/html (entry 5)
    .exec(
        http("POST /upload")
            .post("/upload")
            .body_part(string_body_part("form_field_1", "payload"))
            .body_part(string_body_part("javax.faces.ViewState", "${view_state}"))  # JSF rule: from "Account" (request 4), HTML input[name="javax.faces.ViewState"] value
            .body_part(raw_file_body_part("file_upload_file", "${file_upload_file_path}", content_type="application/octet-stream"))
            .check(status().is_(200))
    )
    # 6. GET /api/items -> 200 application/json (entry 6)
    .exec(
        http("GET /api/items")
            .get("/api/items")
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
    "Accept": "text/html,application/xhtml+xml",
})
setup(journey.inject(injection), protocol=protocol, name="jsf")
