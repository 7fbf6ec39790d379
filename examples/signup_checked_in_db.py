"""A scenario that mixes HTTP and SQL: each virtual user signs up on a real Django site, finds
its new row in the site's own database (the id Django gave it, saved from the result), logs
in over HTTP, and checks in the database that Django recorded the login for that id.

Run it against the Django site of the tests, whose database is a SQLite file::

    DJANGO_LOGIN_USERS=examples/users.csv DJANGO_LOGIN_DATA_DIR=/tmp/site \\
        python3 tests/apps/django_login/app.py --port 8000
    horde run examples/signup_checked_in_db.py -D base_url=http://127.0.0.1:8000 \\
        -D database=sqlite:///tmp/site/db.sqlite3 -D users=20

``database`` may be any URL horde reads (``postgres://...``, ``mysql://...``) for a site that
keeps its users there. ``run`` makes the names unique to one run, so the example can be run
again against the same site.
"""

import time

from horde import at_once_users, column, css, http, param, regex, row_count, scenario, setup, sql, status, substring

run = param("run", str(int(time.time())))
csrf = css("input[name=csrfmiddlewaretoken]", "value").save_as("csrf")

journey = (
    scenario("sign up")
    .set(username=f"user-{run}-${{__user_id}}")
    .exec(http("signup page").get("/signup/").check(status().is_(200), csrf))
    # A new user is redirected to the login page (the hop is the row "signup Redirect 1");
    # a refused one gets the sign-up form again. The login form's token is saved for later.
    .exec(
        http("signup")
        .post("/signup/")
        .form_param("username", "${username}")
        .form_param("password", "s3cret-${__user_id}")
        .form_param("csrfmiddlewaretoken", "${csrf}")
        .check(substring("<h1>Log in</h1>"), csrf)
    )
    .exit_here_if_failed()
    # The row Django wrote: exactly one, active, and its id for later.
    .exec(
        sql("user row")
        .query("SELECT id, is_active, last_login FROM auth_user WHERE username = $1", params=["${username}"])
        .check(row_count().is_(1), column("id").save_as("user_id"), column("is_active").is_(1),
               column("last_login").not_exists())
    )
    .exec(
        http("login")
        .post("/login/")
        .form_param("username", "${username}")
        .form_param("password", "s3cret-${__user_id}")
        .form_param("csrfmiddlewaretoken", "${csrf}")
        .check(regex(r'<p id="welcome">Welcome, ([^<]+)</p>').is_("${username}"))
    )
    # Django's login wrote last_login on the row with the id saved above.
    .exec(
        sql("login recorded")
        .query("SELECT username FROM auth_user WHERE id = $1 AND last_login IS NOT NULL", params=["${user_id}"])
        .check(row_count().is_(1), column("username").is_("${username}"))
    )
)

setup(
    journey.inject(at_once_users(param("users", 20))),
    protocol=[http.base_url(param("base_url", "http://127.0.0.1:8000")),
              sql.url(param("database", "sqlite:///tmp/site/db.sqlite3"))],
    name="signup_checked_in_db",
)
