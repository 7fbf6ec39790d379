"""Seed 000's data-driven login against a real Django site: every virtual user takes the next
row of users.csv (a queue feeder: each row once across the whole run), reads the login form to
get Django's CSRF token, logs in with the row's username and password, checks that the page it
lands on welcomes that user, and logs out with the fresh token that page carries (Django
rotates the token at login).

Run it against the Django site of the tests, which creates the users of the same file::

    DJANGO_LOGIN_USERS=examples/users.csv python3 tests/apps/django_login/app.py --port 8000
    horde run examples/csv_login.py -D base_url=http://127.0.0.1:8000 -D users=50

With as many users as rows, the site's ``/stats/`` shows each username logged in once and no
failed login. More users than rows run out of rows: their ``feed`` fails (``feeder_exhausted``).
``-D users_csv=FILE`` takes the rows from another file (the site must know those users).
"""

from horde import css, csv, http, param, ramp_users, regex, scenario, setup, status, substring

# username,password; a path relative to this file. A queue by default.
users_csv = csv(param("users_csv", "users.csv"))
csrf = css("input[name=csrfmiddlewaretoken]", "value").save_as("csrf")

login = (
    scenario("csv login")
    .feed(users_csv)
    .exec(http("login page").get("/login/").check(status().is_(200), csrf))
    # The login answers with a redirect to /account/; the hop is its own row, "login Redirect 1".
    .exec(
        http("login")
        .post("/login/")
        .form_param("username", "${username}")
        .form_param("password", "${password}")
        .form_param("csrfmiddlewaretoken", "${csrf}")
        .check(status().is_(200), regex(r'<p id="welcome">Welcome, ([^<]+)</p>').save_as("welcomed"), csrf)
    )
    # A failed login shows the form again, with no welcome: nothing more to do for this row.
    .exit_here_if_failed()
    # Checks compare with literal text, so whether the page welcomed this row's user is a
    # condition on the name it saved. A wrong welcome gets a KO of its own row: the page does
    # not hold this row's welcome (whether or not the substring's template is rendered).
    .do_if(
        "'${welcomed}' != '${username}'",
        http("welcomed someone else").get("/account/").check(substring('Welcome, ${username}</p>')),
    )
    .exec(http("logout").post("/logout/").form_param("csrfmiddlewaretoken", "${csrf}").check(status().is_(200)))
)

setup(
    login.inject(ramp_users(param("users", 50)).during(param("ramp_seconds", 2))),
    protocol=http.base_url(param("base_url", "http://127.0.0.1:8000")),
    name="csv_login",
)
