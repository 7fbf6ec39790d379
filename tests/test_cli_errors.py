"""Bad input gets a clear message naming the problem and where it is, and exit code 2."""

import json
import textwrap

INVALID_INPUT = 2


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_an_invalid_plan_lists_every_problem_with_its_path(horde, tmp_path):
    plan = {
        "version": 1,
        "scenarios": [{
            "name": "s",
            "injection": [{"type": "at_once_users", "users": 0}],
            "steps": [
                {"type": "request", "name": "a", "method": "GET", "url": "/relative"},
                {"type": "pause_uniform", "min_ms": 5, "max_ms": 1},
                {"type": "request", "name": "b", "method": "GET", "url": "http://127.0.0.1:1/",
                 "checks": [{"source": {"type": "regex", "pattern": "("}}]},
            ],
        }],
    }
    path = write(tmp_path, "plan.json", json.dumps(plan))
    result = horde("run", path, results=False)
    assert result.code == INVALID_INPUT
    # Problems found while lowering (the regex) come in the same message as the others.
    assert "4 problems" in result.stderr, result.stderr
    assert "scenarios[0].steps[2].checks[0].source.pattern: invalid regex" in result.stderr
    assert "scenarios[0].steps[0].url" in result.stderr
    assert "scenarios[0].steps[1]: min_ms 5 is more than max_ms 1" in result.stderr
    assert "scenarios[0].injection[0].users: must be more than 0" in result.stderr


def test_a_plan_that_does_not_parse_names_the_path(horde, tmp_path):
    path = write(tmp_path, "plan.json", '{"version": 1, "scenarios": [{"name": 5}]}')
    result = horde("plan", path, results=False)
    assert result.code == INVALID_INPUT
    assert "scenarios[0].name" in result.stderr, result.stderr


def test_a_simulation_that_raises_names_its_file_and_line(horde, tmp_path):
    path = write(tmp_path, "sim.py", """\
        from horde import scenario, http, ramp_users, setup

        scn = scenario("s").exec(http("a").get("/"))
        setup(scn.inject(ramp_users(5)))
    """)
    result = horde("run", path, results=False)
    assert result.code == INVALID_INPUT
    assert f"{path}:4: DslError" in result.stderr, result.stderr
    assert "ramp_users(...) needs .during(seconds)" in result.stderr


def test_a_simulation_without_setup_is_refused(horde, tmp_path):
    path = write(tmp_path, "sim.py", "x = 1\n")
    result = horde("plan", path, results=False)
    assert result.code == INVALID_INPUT
    assert "never called setup" in result.stderr


def test_a_missing_upload_file_is_named_before_the_run(horde, tmp_path):
    path = write(tmp_path, "sim.py", """\
        from horde import scenario, http, at_once_users, setup, raw_file_body_part

        scn = scenario("s").exec(http("up").post("http://127.0.0.1:9/up").body_part(raw_file_body_part("f", "missing.txt")))
        setup(scn.inject(at_once_users(1)))
    """)
    result = horde("run", path, results=False)
    assert result.code == INVALID_INPUT
    assert "scenarios[0].steps[0].body.parts[0].path" in result.stderr
    assert str(tmp_path / "missing.txt") in result.stderr


def test_wrong_flags_are_refused(horde):
    result = horde("http", "http://127.0.0.1:1/", "-c", "many", results=False)
    assert result.code == INVALID_INPUT
    assert "-c/--connections" in result.stderr and '"many"' in result.stderr, result.stderr
    result = horde("http", "http://127.0.0.1:1/", "-d", "10 parsecs", results=False)
    assert result.code == INVALID_INPUT
    assert "-d/--duration" in result.stderr
    result = horde("frobnicate", results=False)
    assert result.code == INVALID_INPUT


def test_a_missing_parameter_is_named(horde, tmp_path):
    path = write(tmp_path, "sim.py", """\
        from horde import scenario, http, at_once_users, setup, param

        scn = scenario("s").exec(http("a").get(param("url")))
        setup(scn.inject(at_once_users(1)))
    """)
    result = horde("plan", path, results=False)
    assert result.code == INVALID_INPUT
    assert "parameter 'url' is not set" in result.stderr
    result = horde("plan", path, "-D", "url=http://127.0.0.1:9/x", results=False)
    assert result.code == 0, result.stderr
    assert json.loads(result.stdout)["scenarios"][0]["steps"][0]["url"] == "http://127.0.0.1:9/x"


def test_help_exits_zero(horde):
    result = horde("--help", results=False)
    assert result.code == 0
    assert "Exit codes" in result.stdout


def test_a_bad_schema_file_is_named_with_its_problem(horde, tmp_path):
    (tmp_path / "schema.xml").write_text("<object>\n  <entry><name>a</name><value><decimal/></value></entry>\n</object>\n")
    path = write(tmp_path, "sim.py", """\
        from horde import scenario, http, at_once_users, setup, document_from_schema

        scn = scenario("s").exec(http("p").post("http://127.0.0.1:9/").body(document_from_schema("schema.xml")))
        setup(scn.inject(at_once_users(1)))
    """)
    result = horde("run", path, results=False)
    assert result.code == INVALID_INPUT
    assert "scenarios[0].steps[0].body.path" in result.stderr
    assert "schema.xml: invalid XML schema at line 2, column 31: unknown element <decimal>" in result.stderr


def test_results_that_cannot_be_written_exit_3(horde, tmp_path):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the results directory should go")
    result = horde("http", "http://127.0.0.1:9/", "-n", "1", "--results", blocker / "results", results=False)
    assert result.code == 3, result.stderr
    assert "cannot create results directory" in result.stderr
    assert str(blocker) in result.stderr
