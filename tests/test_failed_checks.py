"""What a user does after a failed check, against a real rate limiter (nginx's limit_req):
Gatling's rule by default (the request is KO and the user goes on), `stop_iteration` as an
option, and a closed model that never turns fast failures into a storm of new users. Counts are
nginx's own."""

import textwrap

OK = 0

# Seed 004's simulation, in a closed model: 40 users at all times, each a loop of 12 checked
# GETs, against a page nginx limits to 300 requests a second.
SEED_004_CLOSED = """
from horde import constant_concurrent_users, http, param, scenario, setup, status

scn = scenario("Test scenario").repeat(12, http("Web Server").get(param("url")).check(status().in_(200, 304)))
setup(scn.inject(constant_concurrent_users(40).during(3)), name="limited", max_duration=10{options})
"""


def run_limited(horde, tmp_path, url, options=""):
    sim = tmp_path / "seed004_closed.py"
    sim.write_text(textwrap.dedent(SEED_004_CLOSED).format(options=options))
    return horde("run", sim, "-D", f"url={url}")


def test_a_failed_check_leaves_the_request_ko_and_the_user_goes_on_as_in_gatling(horde, limited_nginx, tmp_path):
    result = run_limited(horde, tmp_path, limited_nginx.url + "/index.html")
    assert result.code == OK, result.stderr
    summary = result.summary
    g = summary["global"]
    assert g["ko"] > 0, "the limiter refused nothing: the test proves nothing"
    # Every user ran its whole loop: twelve requests each, failed or not (a user that left at
    # its first 503, the old default, sent fewer).
    users = summary["users"]
    assert users["interrupted"] == 0, users
    assert g["count"] == 12 * users["finished"], (g, users)
    assert summary["plan"]["options"]["on_check_failure"] == "continue"
    # nginx saw exactly what horde counted.
    assert limited_nginx.requests_served() == g["count"]
    # Users failing fast were held back before their slot started the next one, so the run is
    # no storm of new users: without that, 40 slots made about 44,000 users in 4 s here.
    assert users["started"] <= 40 * 12, users
    assert users.get("replacements_held_back", 0) > 0
    assert "replacement users held back" in result.stdout


def test_stop_iteration_ends_the_user_at_its_first_failure_and_its_slot_is_held_back(horde, limited_nginx, tmp_path):
    result = run_limited(horde, tmp_path, limited_nginx.url + "/index.html", options=', on_check_failure="stop_iteration"')
    assert result.code == OK, result.stderr
    summary = result.summary
    g, users = summary["global"], summary["users"]
    # A user ends at its first KO: each KO is the last request of a user.
    assert g["ko"] <= users["started"], (g, users)
    assert g["count"] < 12 * users["finished"]
    # Bounded all the same: a slot whose users keep failing fast waits 10 ms, 20 ms, ... up to
    # 1 s before the next one (the old behaviour replaced them at once: 11,000 requests/s).
    assert users["started"] <= 40 * 20, users
    assert users["replacements_held_back"] > 0
    assert limited_nginx.requests_served() == g["count"]
