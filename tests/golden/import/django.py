"""django: a journey recorded in django.har (by horde record 0.1.0, 10 entries) and imported by
`horde import`.

Replay it:

    horde run django.py -D base_url=http://127.0.0.1:34807 -D users=20

Parameters (-D NAME=VALUE): base_url; users (1); ramp (seconds to start them over, 0); duration
(seconds: users go through the journey again and again that long, 0: once); think_time (a factor
on the recorded pauses, 0 for none); inputs (the feeder's file, django_inputs.csv).

What was correlated, generated and dropped, and why: django_import.md.
"""

from horde import (
    at_once_users,
    constant_concurrent_users,
    css,
    csv,
    get_cookie_value,
    http,
    json_body,
    jsonpath,
    param,
    ramp_users,
    raw_file_body_part,
    scenario,
    setup,
    status,
    string_body_part,
)

base_url = param("base_url", "http://127.0.0.1:34807")
users = param("users", 1)
ramp = param("ramp", 0.0)
duration = param("duration", 0.0)
think_time = param("think_time", 1.0)

# Typed and uploaded while recording (one row: add rows for more accounts and files; read in a circle).
inputs = csv(param("inputs", "django_inputs.csv")).circular()

headers_1 = {
    "Upgrade-Insecure-Requests": "1",
}

headers_2 = {
    "Accept": "image/jxl,image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8",
    "Referer": base_url + "/login/",
}

headers_3 = {
    "Upgrade-Insecure-Requests": "1",
    "Origin": base_url,
    "Referer": base_url + "/login/",
}

headers_4 = {
    "Upgrade-Insecure-Requests": "1",
    "Referer": base_url + "/account/",
}

headers_5 = {
    "Upgrade-Insecure-Requests": "1",
    "Origin": base_url,
    "Referer": base_url + "/upload/",
}

headers_6 = {
    "Accept": "*/*",
    "Origin": base_url,
    "Referer": base_url + "/upload/",
}

headers_7 = {
    "Accept": "*/*",
    "Referer": base_url + "/upload/",
}

journey = (
    scenario("django")
    .feed(inputs)
    # 1. GET /login/ -> 200 text/html (entry 0)
    .exec(
        http("Log in")
            .get("/login/")
            .headers(headers_1)
            .check(status().is_(200), css('input[name="csrfmiddlewaretoken"]', "value").save_as("csrf_token"))
            .resources(
                http("GET /favicon.ico")
                    .get("/favicon.ico")
                    .headers(headers_2)
                    .check(status().is_(404)),
            )
    )
    .pause(0.1 * think_time)
    # 2. POST /login/ -> 302 -> 200 text/html (entry 2)
    .exec(
        http("POST /login/")
            .post("/login/")
            .headers(headers_3)
            .form_param("csrfmiddlewaretoken", "${csrf_token}")  # Django rule: from "Log in" (request 1), HTML input[name="csrfmiddlewaretoken"] value
            .form_param("username", "${username}")  # typed input: the feeder's column username
            .form_param("password", "${password}")  # typed input: the feeder's column password
            .check(status().is_(200))
    )
    .pause(0.1 * think_time)
    # 3. GET /upload/ -> 200 text/html (entry 4)
    .exec(
        http("Upload")
            .get("/upload/")
            .headers(headers_4)
            .check(
                status().is_(200),
                css('input[name="csrfmiddlewaretoken"]', "value").optional().save_as("csrf_token"),
            )
    )
    .pause(0.1 * think_time)
    # 4. POST /upload/ -> 200 text/html (entry 5)
    .exec(
        http("POST /upload/")
            .post("/upload/")
            .headers(headers_5)
            .body_part(string_body_part("csrfmiddlewaretoken", "${csrf_token}"))  # Django rule: from "Upload" (request 3), HTML input[name="csrfmiddlewaretoken"] value
            .body_part(string_body_part("title", "Q3"))
            .body_part(raw_file_body_part("document", "${document_path}", content_type="application/octet-stream"))
            .check(
                status().is_(200),
                css('input[name="csrfmiddlewaretoken"]', "value").optional().save_as("csrf_token"),
            )
    )
    .pause(0.1 * think_time)
    .set({"client_id": "${__uuid()}"})
    .exec(get_cookie_value("csrftoken").save_as("csrftoken"))
    # 5. POST /api/notes/ -> 201 application/json (entry 6)
    .exec(
        http("POST /api/notes/")
            .post("/api/notes/")
            .query_param("_", "${__now_ms()}")
            # query parameter _: generated: the client's clock, in epoch milliseconds
            # header X-CSRFToken: Django rule: the cookie csrftoken from the cookie jar
            .headers(headers_6)
            .header("X-CSRFToken", "${csrftoken}")
            # JSON field client_id: generated: made by the client (__uuid() once, then reused)
            .body(json_body({"text": "remember the planer", "client_id": "${client_id}"}))
            .check(status().is_(201), jsonpath("$.id").save_as("note_id"))
    )
    # 6. GET /api/notes/1/ -> 200 application/json (entry 7)
    .exec(
        http("GET /api/notes/{note_id}/")
            .get("/api/notes/${note_id}/")
            # path segment 1: REST id rule: from "POST /api/notes/" (request 5), JSON $.id
            .headers(headers_7)
            .check(status().is_(200))
    )
    # 7. POST /logout/ -> 302 -> 200 text/html (entry 8)
    .exec(
        http("POST /logout/")
            .post("/logout/")
            .headers(headers_5)
            .form_param("csrfmiddlewaretoken", "${csrf_token}")  # Django rule: from "Upload" (request 4), HTML input[name="csrfmiddlewaretoken"] value
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
    "User-Agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/156.0.0.0 Safari/537.36",
    "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,image/jxl,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7",
    "Accept-Language": "en-US,en;q=0.9",
})
setup(journey.inject(injection), protocol=protocol, name="django")
