"""Seed 000's multipart upload, with a file of each user's own: every virtual user logs in to the
Django site as the next row of users.csv, reads the upload form for Django's CSRF token, and
posts it with a file named by a feeder (``raw_file_body_part("document", "uploads/${document}")``,
Gatling's ``RawFileBodyPart("document", "#{document}")``). A path with ``${...}`` is read when a
request first sends it, then kept by the worker; a fixed path is read before the run.

    DJANGO_LOGIN_USERS=examples/users.csv python3 tests/apps/django_login/app.py --port 8000
    horde run examples/upload_own_files.py -D base_url=http://127.0.0.1:8000 -D users=3

The site's ``/stats/`` lists each upload with its user, file name, size and SHA-256: each user's
own file, byte for byte.
"""

from horde import (css, csv, http, param, ramp_users, raw_file_body_part, scenario, setup, status,
                   string_body_part)

users_csv = csv(param("users_csv", "users.csv"))
# document: a file name under uploads/, one per user in turn.
documents = csv("uploads/documents.csv").circular()
csrf = css("input[name=csrfmiddlewaretoken]", "value").save_as("csrf")

upload = (
    scenario("upload own file")
    .feed(users_csv)
    .feed(documents)
    .exec(http("login page").get("/login/").check(status().is_(200), csrf))
    .exec(
        http("login")
        .post("/login/")
        .form_param("username", "${username}")
        .form_param("password", "${password}")
        .form_param("csrfmiddlewaretoken", "${csrf}")
        .check(status().is_(200), csrf)
    )
    .exit_here_if_failed()
    .exec(http("upload form").get("/upload/").check(status().is_(200), csrf))
    .exec(
        http("upload")
        .post("/upload/")
        .body_part(string_body_part("csrfmiddlewaretoken", "${csrf}"))
        .body_part(string_body_part("title", "invoice of ${username}"))
        .body_part(raw_file_body_part("document", "uploads/${document}", content_type="text/plain"))
        .check(status().is_(200), css("#received").save_as("received"))
    )
)

setup(
    upload.inject(ramp_users(param("users", 3)).during(1)),
    protocol=http.base_url(param("base_url", "http://127.0.0.1:8000")),
    name="upload_own_files",
)
