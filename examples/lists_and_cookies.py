"""Lists and cookies, as a browser session and a JSON client use them, against the built-in
target (`horde target`):

- `find_all()` saves every id a JSON reply lists; `foreach` walks them, and a check compares
  each item's id with the one asked for (`is_("${id}")`: expected values are templates);
- `count()` and `gt()` check the list's size; `with_default` gives a value when nothing is found;
- cookies: one the server sets (persistent, with Max-Age) and one the scenario adds
  (`add_cookie`), both sent back and read by the server; `get_cookie_value(...).save_as(...)`
  reads one from the jar; `flush_session_cookies()` drops the one without an expiry, as a
  browser that closes.

    horde target &
    horde run examples/lists_and_cookies.py -D base_url=http://127.0.0.1:8080 -D users=5
"""

from horde import (
    add_cookie,
    at_once_users,
    flush_session_cookies,
    get_cookie_value,
    http,
    jsonpath,
    param,
    scenario,
    setup,
)

base_url = param("base_url", "http://127.0.0.1:8080")
users = param("users", 5)

scn = (scenario("lists and cookies")
       .exec(http("list").get("/api/items")
             .check(jsonpath("$.items[*].id").find_all().save_as("ids"),
                    jsonpath("$.items[*]").count().gt(1),
                    jsonpath("$.next_page").with_default("none").save_as("next_page")))
       .foreach("${ids}", "id",
                http("item").get("/api/items/${id}").check(jsonpath("$.id").is_("${id}")),
                counter="i")
       .exec(http("remember me").get("/cookies/set?remember=${__user_id}&max_age=3600"),
             add_cookie("theme", "dark"),
             get_cookie_value("remember").save_as("remembered"),
             http("both sent").get("/cookies/echo")
             .check(jsonpath("$.cookies.remember").is_("${remembered}"), jsonpath("$.cookies.theme").is_("dark")),
             flush_session_cookies(),
             http("persistent only").get("/cookies/echo")
             .check(jsonpath("$.cookies.remember").is_("${__user_id}"), jsonpath("$.cookies.theme").not_exists())))

setup(scn.inject(at_once_users(users)), protocol=http.base_url(base_url))
