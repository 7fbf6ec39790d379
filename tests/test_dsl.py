"""The DSL produces plain data: the Plan. It validates against the committed schema and the
engine's own validation, builders are immutable, and misuse is refused early."""

import json

import jsonschema
import pytest

import horde
from horde import (
    at_once_users,
    constant_concurrent_users,
    constant_users_per_sec,
    css,
    during,
    exec_,
    group,
    header,
    http,
    json_body,
    jsonpath,
    nothing_for,
    param,
    pause,
    ramp_users,
    raw_file_body_part,
    regex,
    repeat,
    scenario,
    setup,
    status,
    string_body_part,
    substring,
)
from horde.errors import DslError, ParameterError, PlanError


def full_simulation():
    view_state = regex(r'value="([^"]*)"').save_as("viewState")

    def jsf_post(name, url):
        return http(name).post(url).form_param("javax.faces.ViewState", "${viewState}").check(view_state)

    scn = (
        scenario("everything")
        .exec(http("home").get("/").header("Accept", "text/html").query_param("q", "1").check(status().in_(200, 304), view_state))
        .pause(1)
        .pause(0.5, 2)
        .pause(1, exponential=True)
        .exec(jsf_post("post", "/form").headers({"X-A": "1"}))
        .repeat(2, http("json").put("/api").body(json_body({"a": "${viewState}"})).check(jsonpath("$.a").is_("x")), counter="i")
        .during(3, pause(0.1), http("raw").patch("/raw").body("text ${i}"))
        .group("g", exec_(http("del").delete("/d").check(header("X").exists(), substring("ok"), css("p", "id").not_exists())))
        .exec(http("upload").post("/up").body_part(string_body_part("a", "b")).body_part(raw_file_body_part("f", "file.txt")))
        .exec([http("head").head("/h"), repeat(1, http("opt").options("/o"))])
    )
    closed = scenario("closed").exec(http("c").get("/c")).inject(constant_concurrent_users(5).during(2))
    return setup(
        scn.inject(nothing_for(1), at_once_users(1), ramp_users(2).during(1), constant_users_per_sec(2).randomized().during(1)),
        closed,
        protocol=http.base_url("http://127.0.0.1:9").header("User-Agent", "horde").request_timeout(5),
        max_duration=30,
        seed=7,
    )


def test_a_simulation_produces_a_plan_that_matches_the_schema(plan_schema):
    plan = full_simulation().to_plan()
    jsonschema.validate(plan, plan_schema)
    steps = plan["scenarios"][0]["steps"]
    assert [s["type"] for s in steps] == [
        "request", "pause", "pause_uniform", "pause_exponential", "request", "repeat", "during", "group",
        "request", "request", "repeat",
    ]
    assert steps[4]["body"] == {"type": "form", "params": [{"name": "javax.faces.ViewState", "value": "${viewState}"}]}
    assert plan["scenarios"][0]["injection"][-1] == {"type": "constant_users_per_sec", "rate": 2.0, "duration_ms": 1000, "randomized": True}
    assert plan["options"] == {"max_duration_ms": 30000, "seed": 7}
    assert plan["protocol"]["request_timeout_ms"] == 5000


def test_the_engine_accepts_the_plan():
    horde.validate(full_simulation())


def test_the_engine_lists_every_problem_with_its_path():
    sim = setup(
        scenario("s").exec(http("a").get("relative"), http("b").get("/${unclosed")).inject(at_once_users(1)),
        percentiles=[50, 150],
    )
    with pytest.raises(PlanError) as error:
        horde.validate(sim)
    paths = [path for path, _ in error.value.problems]
    assert "scenarios[0].steps[0].url" in paths
    assert "scenarios[0].steps[1].url" in paths
    assert "options.percentiles[1]" in paths


def test_builders_are_immutable():
    base = http("r").get("/")
    with_header = base.header("A", "1")
    assert base.header_pairs == ()
    assert with_header.header_pairs == (("A", "1"),)
    scn = scenario("s")
    longer = scn.exec(base)
    assert scn.steps == () and len(longer.steps) == 1
    check = status()
    assert check.is_(200) is not check and check.validation is None


def test_misuse_is_refused_with_a_clear_message():
    with pytest.raises(DslError, match=r"ramp_users\(\.\.\.\) needs \.during\(seconds\)"):
        scenario("s").exec(http("a").get("/")).inject(ramp_users(10))
    with pytest.raises(DslError, match="expected a request"):
        scenario("s").exec("GET /")
    with pytest.raises(DslError, match="unknown option 'max_duraton'"):
        setup(scenario("s").exec(http("a").get("/")).inject(at_once_users(1)), max_duraton=5)
    with pytest.raises(DslError, match="negative"):
        pause(-1)
    with pytest.raises(DslError, match="pick one kind of body"):
        http("a").post("/").form_param("a", "b").body("x").to_step()


def test_plain_functions_compose_chains():
    def login(user):
        return exec_(http("login page").get("/login"), http("login").post("/login").form_param("u", user))

    steps = scenario("s").exec(login("a")).group("g", login("b")).to_steps()
    assert [s["name"] for s in steps[:2]] == ["login page", "login"]
    assert steps[2]["type"] == "group" and len(steps[2]["steps"]) == 2
    assert during(1, login("c")).to_steps()[0]["steps"][1]["body"]["params"][0]["value"] == "c"
    assert group("x", login("d")).to_steps()[0]["name"] == "x"


def test_params_come_from_d_flags_then_environment_then_default(monkeypatch):
    from horde import simulation

    assert param("users", 10) == 10
    monkeypatch.setenv("users", "25")
    assert param("users", 10) == 25
    monkeypatch.setattr(simulation._loading, "params", {"users": "40"})
    assert param("users", 10) == 40
    with pytest.raises(ParameterError, match="not a valid int"):
        monkeypatch.setattr(simulation._loading, "params", {"users": "many"})
        param("users", 10)
    with pytest.raises(ParameterError, match="-D url=VALUE"):
        param("url")


def test_plan_json_round_trips():
    plan = full_simulation().to_plan()
    assert json.loads(json.dumps(plan)) == plan


def test_workload_models_produce_plan_steps(plan_schema):
    from horde import (
        hold_for, increment_concurrent_users, increment_users_per_sec, jump_to_rps, pace, ramp_concurrent_users,
        ramp_users_per_sec, reach_rps, stress_peak_users, throttle,
    )

    open_scn = scenario("open").exec(http("a").get("/")).inject(
        ramp_users_per_sec(1).to(5).randomized().during(2),
        stress_peak_users(10).during(3),
        increment_users_per_sec(2).times(3).each_level_lasting(1).separated_by_ramps_lasting(0.5).starting_from(1),
    )
    closed_scn = scenario("closed").during(60, pace(1), http("b").get("/")).inject(
        ramp_concurrent_users(1).to(3).during(2),
        increment_concurrent_users(1).times(2).each_level_lasting(1),
    )
    sim = setup(open_scn, closed_scn, protocol=http.base_url("http://127.0.0.1:9"),
                throttle=throttle(reach_rps(10).in_(1), hold_for(2), jump_to_rps(5)), graceful_stop=5)
    plan = sim.to_plan()
    jsonschema.validate(plan, plan_schema)
    horde.validate(sim)
    assert [i["type"] for i in plan["scenarios"][0]["injection"]] == ["ramp_users_per_sec", "stress_peak_users", "increment_users_per_sec"]
    assert plan["scenarios"][0]["injection"][2] == {
        "type": "increment_users_per_sec", "increment": 2.0, "times": 3, "level_duration_ms": 1000,
        "ramp_duration_ms": 500, "starting_from": 1,
    }
    assert plan["scenarios"][1]["steps"][0]["steps"][0] == {"type": "pace", "duration_ms": 1000}
    assert plan["options"]["throttle"] == [
        {"type": "reach_rps", "rps": 10.0, "duration_ms": 1000}, {"type": "hold_for", "duration_ms": 2000},
        {"type": "jump_to_rps", "rps": 5.0},
    ]
    assert plan["options"]["graceful_stop_ms"] == 5000
    assert sim.throttle(jump_to_rps(3)).to_plan()["options"]["throttle"] == [{"type": "jump_to_rps", "rps": 3.0}]
    with pytest.raises(DslError, match=r"needs \.to\(b\)"):
        ramp_users_per_sec(1).during(2)
    with pytest.raises(DslError, match="each_level_lasting"):
        scenario("s").exec(http("a").get("/")).inject(increment_users_per_sec(1).times(2)).to_plan()


def test_and_then_chains_scenarios():
    first = scenario("first").exec(http("a").get("/")).inject(at_once_users(1))
    second = scenario("second").exec(http("b").get("/")).inject(at_once_users(2))
    third = scenario("third").exec(http("c").get("/")).inject(at_once_users(3))
    sim = setup(first.and_then(second.and_then(third)), protocol=http.base_url("http://127.0.0.1:9"))
    scenarios = sim.to_plan()["scenarios"]
    assert [(s["name"], s.get("after")) for s in scenarios] == [("first", None), ("second", "first"), ("third", "second")]
    horde.validate(sim)
    with pytest.raises(DslError, match="and_then"):
        first.and_then(scenario("x"))


def checks_and_cookies_simulation():
    from horde import (add_cookie, body_bytes, current_location, flush_cookie_jar, flush_session_cookies,
                       get_cookie_value, jmespath, md5, response_time_in_millis, sha256, xpath)

    scn = (
        scenario("checks")
        .exec(add_cookie("lang", "${lang}", path="/app", secure=True), add_cookie("t", "1", domain="example.com"))
        .exec(http("items").get("/api/items").check(
            jsonpath("$.items[*].id").find_all().save_as("ids"),
            jsonpath("$.items[*]").count().is_(3),
            regex(r"id=(\d+)").find(2).transform("trim", "to_int").gt(100).optional(),
            css("h1").with_default("${fallback}").not_("oops"),
            jmespath("items[?price < `20`].name").in_("oak plank", "${me}"),
            xpath("count(//item)").lte("${limit}"),
            header("Set-Cookie").find_all().is_(["a=1", "b=2"]),
            body_bytes().is_(b"\x00\xff"),
            md5().exists(), sha256().not_exists(),
            current_location().is_("${base}/api/items"),
            response_time_in_millis().lt(500),
        ))
        .exec(get_cookie_value("JSESSIONID").save_as("sid"), get_cookie_value("lang", domain="example.com"))
        .exec(flush_session_cookies(), flush_cookie_jar())
    )
    return setup(scn.inject(at_once_users(1)), protocol=http.base_url("http://127.0.0.1:9"))


def test_checks_and_cookie_steps_make_plan_data_the_schema_accepts(plan_schema):
    plan = checks_and_cookies_simulation().to_plan()
    jsonschema.validate(plan, plan_schema)
    steps = plan["scenarios"][0]["steps"]
    assert [s["type"] for s in steps] == [
        "add_cookie", "add_cookie", "request", "get_cookie", "get_cookie", "flush_session_cookies", "flush_cookie_jar",
    ]
    assert steps[0] == {"type": "add_cookie", "name": "lang", "value": "${lang}", "path": "/app", "secure": True}
    assert steps[3] == {"type": "get_cookie", "name": "JSESSIONID", "save_as": "sid"}
    assert steps[4] == {"type": "get_cookie", "name": "lang", "domain": "example.com", "save_as": "lang"}
    checks = steps[2]["checks"]
    assert checks[0]["select"] == {"type": "all"}
    assert checks[1]["select"] == {"type": "count"} and checks[1]["validate"] == {"type": "is", "value": "3"}
    assert checks[2] == {"source": {"type": "regex", "pattern": r"id=(\d+)"}, "select": {"type": "nth", "index": 2},
                         "transform": ["trim", "to_int"], "validate": {"type": "gt", "value": "100"}, "optional": True}
    assert checks[3]["default"] == "${fallback}" and checks[3]["validate"] == {"type": "not", "value": "oops"}
    assert checks[6]["validate"] == {"type": "is", "value": '["a=1", "b=2"]'}
    assert checks[7]["validate"] == {"type": "is", "value": "AP8="}


def test_the_engine_accepts_checks_and_cookie_steps():
    horde.validate(checks_and_cookies_simulation())


def test_check_and_cookie_misuse_is_refused_early():
    from horde import add_cookie, get_cookie_value, jmespath

    for build, message in [
        (lambda: regex("a").find(-1), "find() counts from 0"),
        (lambda: status().find(1), "a status check has one value"),
        (lambda: status().find_all(), "a status check has one value"),
        (lambda: substring("x").find_all(), "a substring check has one value"),
        (lambda: css("p").transform("reverse"), "transform() takes"),
        (lambda: jmespath(""), "jmespath() needs a non-empty string"),
        (lambda: add_cookie("", "v"), "add_cookie() needs a cookie name"),
        (lambda: get_cookie_value("a").save_as(""), "save_as() needs a variable name"),
    ]:
        with pytest.raises(DslError, match=message.replace("(", r"\(").replace(")", r"\)")):
            build()
    assert substring("x").count().to_plan()["select"] == {"type": "count"}
    # find(0) is the first: the default, left out of the plan.
    assert "select" not in regex("a").find(2).find(0).to_plan()
