"""Simulations against the built-in target: the ViewState really flows, cookies stay per
user, checks fail when they should, and horde's counts match the server's own."""

import json
import subprocess
import textwrap

import jsonschema

from conftest import EXAMPLES, wait_until


def test_the_jsf_journey_ends_with_no_ko_and_the_server_agrees(horde, target, summary_schema):
    users = 15
    result = horde("run", EXAMPLES / "jsf_journey.py", "-D", f"base_url={target.url}", "-D", f"users={users}")
    assert result.code == 0, result.stderr
    summary = result.summary
    jsonschema.validate(summary, summary_schema)
    assert summary["run"]["status"] == "completed"
    assert summary["global"]["ko"] == 0, summary["errors"]
    # home, login page, login, its redirect, 3 comments, upload, items
    assert summary["global"]["count"] == users * 9
    stats = target.stats()
    assert stats["total"] == summary["global"]["count"]
    # The server refuses stale ViewStates; none were stale, so the token flowed.
    assert stats["view_state_rejections"] == 0
    assert stats["logins"] == users
    assert stats["uploads"] == users
    assert stats["upload_bytes"] == users * (EXAMPLES / "some_file.txt").stat().st_size
    # One session each: every user keeps its own cookie jar.
    assert stats["sessions"] == users
    assert result.row("login Redirect 1")["ok"] == users
    assert [r["name"] for r in summary["requests"]][:4] == ["home", "login page", "login", "login Redirect 1"]


def write_sim(tmp_path, body):
    path = tmp_path / "sim.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_a_stale_view_state_fails_the_check_and_stops_the_iteration(horde, target, tmp_path):
    sim = write_sim(tmp_path, """\
        from horde import *

        pattern = r'id="j_id1:javax.faces.ViewState:1" value="([^"]*)"'
        view_state = regex(pattern).save_as("viewState")
        scn = (scenario("stale")
            .exec(http("login page").get("/login").check(regex(pattern).save_as("old")))
            .exec(http("home").get("/").check(view_state))   # a new page load: the token changes
            .exec(http("login").post("/login").form_param("username", "u").form_param("password", "p")
                  .form_param("javax.faces.ViewState", "${viewState}").check(view_state))
            .exec(http("stale comment").post("/account").form_param("comment", "c")
                  .form_param("javax.faces.ViewState", "${old}").check(view_state))
            # As in Gatling, a failed check leaves the user going on; this is where it stops.
            .exit_here_if_failed()
            .exec(http("never").get("/")))
        setup(scn.inject(at_once_users(4)), protocol=http.base_url(param("base_url")))
    """)
    result = horde("run", sim, "-D", f"base_url={target.url}")
    assert result.code == 0, result.stderr
    summary = result.summary
    # The fresh token works; an old one is refused.
    assert result.row("login")["ok"] == 4
    assert result.row("stale comment")["ko"] == 4
    assert "never" not in [r["name"] for r in summary["requests"]]
    assert target.stats()["view_state_rejections"] == 4
    errors = summary["errors"]
    assert len(errors) == 1
    assert errors[0]["kind"] == "check_failed"
    assert errors[0]["count"] == 4
    assert errors[0]["message"] == "status: expected 2xx or 304, found 500"


def test_failed_checks_report_what_they_saw(horde, target, tmp_path):
    sim = write_sim(tmp_path, """\
        from horde import *

        scn = (scenario("checks")
            .exec(http("wrong name").get("/api/items/1").check(jsonpath("$.name").is_("walnut")))
            .exec(http("missing css").get("/").check(css("#nope")))
            .exec(http("teapot").get("/status/418").check(status().is_(200))))
        setup(scn.inject(at_once_users(3)), protocol=http.base_url(param("base_url")), on_check_failure="continue")
    """)
    result = horde("run", sim, "-D", f"base_url={target.url}")
    summary = result.summary
    assert summary["global"]["ko"] == 9
    messages = {e["request"]: e["message"] for e in summary["errors"]}
    assert messages["wrong name"] == 'jsonpath("$.name"): expected "walnut", found "oak plank"'
    assert messages["missing css"] == 'css("#nope"): expected to exist, found nothing'
    assert messages["teapot"] == 'status: expected "200", found "418"'
    assert all(e["count"] == 3 for e in summary["errors"])
    assert target.stats()["total"] == 9


def test_extracted_values_flow_into_later_requests(horde, target, tmp_path):
    sim = write_sim(tmp_path, """\
        from horde import *

        scn = (scenario("flow")
            .exec(http("list").get("/api/items").check(jsonpath("$.items[2].id").save_as("id")))
            .exec(http("one").get("/api/items/${id}").check(jsonpath("$.name").is_("planer stand"))))
        setup(scn.inject(at_once_users(2)), protocol=http.base_url(param("base_url")))
    """)
    result = horde("run", sim, "-D", f"base_url={target.url}")
    assert result.summary["global"]["ko"] == 0, result.summary["errors"]
    assert target.stats()["by_route"]["GET /api/items/{id}"] == 2


def test_a_dying_server_is_counted_by_kind_and_the_run_finishes(horde, target, tmp_path):
    sim = write_sim(tmp_path, """\
        from horde import *

        scn = scenario("dies").during(3, http("items").get("/api/items"))
        setup(scn.inject(at_once_users(4)), protocol=http.base_url(param("base_url")), on_check_failure="continue")
    """)
    process = subprocess.Popen(
        ["horde", "run", str(sim), "-D", f"base_url={target.url}", "--results", str(tmp_path / "r"), "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    # Let it get going, then kill the server under it.
    wait_until(lambda: target.stats()["total"] > 200, what="load on the target")
    target.process.kill()
    target.process.wait()
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    summary = json.loads(next((tmp_path / "r").glob("*/summary.json")).read_text())
    kinds = {e["kind"] for e in summary["errors"]}
    assert "connect_refused" in kinds, summary["errors"]
    assert summary["global"]["ok"] > 200
    assert summary["global"]["ko"] > 0


def test_any_method_token_reaches_the_server_and_is_counted_there(horde, target, tmp_path):
    # Issue 23: methods other than the seven standard ones were refused (Gatling's
    # httpRequest(method, url), k6's http.request(method, ...), curl's -X).
    quick = horde("http", target.url + "/api/items/1", "-X", "PURGE", "-n", "5", "-c", "1", "-q")
    assert quick.code == 0, quick.stderr
    assert quick.summary["global"]["ok"] == 5, quick.summary["errors"]
    sim = write_sim(tmp_path, """\
        from horde import *

        scn = scenario("s").exec(http("report").request("REPORT", "/api/items/2").check(jsonpath("$.id").is_("2")))
        setup(scn.inject(at_once_users(3)), protocol=http.base_url(param("base_url")))
    """)
    result = horde("run", sim, "-D", f"base_url={target.url}")
    assert result.code == 0, result.stderr
    assert result.row("report")["ok"] == 3, result.summary["errors"]
    assert result.summary["plan"]["scenarios"][0]["steps"][0]["method"] == "REPORT"
    by_route = target.stats()["by_route"]
    assert (by_route["PURGE /api/items/{id}"], by_route["REPORT /api/items/{id}"]) == (5, 3), by_route
    # A standard method in another case is a typo, named with the one meant.
    lower = write_sim(tmp_path, """\
        from horde import *

        setup(scenario("s").exec(http("x").request("get", "/")).inject(at_once_users(1)),
              protocol=http.base_url("http://127.0.0.1:9"))
    """)
    refused = horde("run", lower)
    assert refused.code == 2
    assert 'scenarios[0].steps[0].method: "get": methods are case-sensitive, and the standard one is GET' in refused.stderr


def test_what_a_browser_asks_for_beside_a_page_leaves_its_view_state_alone(horde, target, tmp_path):
    # A browser asks for /favicon.ico after each page: that request neither made a session of
    # its own (the browser then held another session's cookie) nor a new view (the page's
    # ViewState became stale), so a real browser's first POST got a 500.
    sim = write_sim(tmp_path, """\
        from horde import *

        view_state = regex(r'id="j_id1:javax.faces.ViewState:1" value="([^"]*)"').save_as("viewState")
        scn = (scenario("browser")
            .exec(http("login page").get("/login").check(view_state))
            .exec(http("favicon").get("/favicon.ico").check(status().is_(404)))
            .exec(http("login").post("/login").form_param("username", "u").form_param("password", "p")
                  .form_param("javax.faces.ViewState", "#{viewState}").check(css("p#user").is_("u"))))
        setup(scn.inject(at_once_users(3)), protocol=http.base_url(param("base_url")))
    """)
    result = horde("run", sim, "-D", f"base_url={target.url}")
    assert result.code == 0, result.stderr
    assert result.summary["global"]["ko"] == 0, result.summary["errors"]
    stats = target.stats()
    assert (stats["view_state_rejections"], stats["logins"], stats["sessions"]) == (0, 3, 3), stats
