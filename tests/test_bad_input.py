"""A corpus of bad input: every case exits 2 (3 for results that cannot be written), names the
problem and where it is (the flag, the file and line, the plan path, the line and column of a
schema), creates no results directory and sends nothing.

"Nothing sent" is checked against one built-in target shared by the module: every URL below
points at it, and its request count must not move during a refused command.
"""

import json
import os
import re
import signal
import subprocess
import textwrap

import pytest

from conftest import Target

INVALID_INPUT = 2
CANNOT_WORK = 3


@pytest.fixture(scope="module")
def quiet_target():
    """A target that no refused command may reach."""
    server = Target()
    yield server
    server.stop()


def quoted(value):
    """The offending value, as a token of its own (quoted, or between spaces and colons)."""
    return re.compile(rf"(^|[\s'\"]){re.escape(value)}($|[\s'\":,])", re.IGNORECASE | re.MULTILINE)


def assert_names(result, *needles):
    """Each needle (a substring or a compiled regex) must be on stderr."""
    for needle in needles:
        found = needle.search(result.stderr) if isinstance(needle, re.Pattern) else needle in result.stderr
        shown = needle.pattern if isinstance(needle, re.Pattern) else needle
        assert found, f"stderr does not name {shown!r}:\n{result.stderr}"


def assert_no_crash(result):
    assert "panicked" not in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert result.code != 101, result.stderr


@pytest.fixture
def refuse(horde, quiet_target, tmp_path):
    """Runs ``horde ARGS`` (adding ``--results TMP/results`` when ``results``) and checks the
    refusal: the exit code, no results directory, no request sent, no crash."""

    def run(*args, results=True, code=INVALID_INPUT, timeout=20):
        results_dir = tmp_path / "results"
        argv = [*args, "--results", results_dir] if results else list(args)
        before = quiet_target.stats()["total"]
        result = horde(*argv, results=False, timeout=timeout)
        shown = " ".join(map(str, ["horde", *argv]))
        assert result.code == code, f"{shown}: exit {result.code}, expected {code}\n{result.stderr}"
        assert_no_crash(result)
        assert not results_dir.exists(), f"{shown} created {results_dir}: {list(results_dir.iterdir())}"
        assert quiet_target.stats()["total"] == before, f"{shown} sent requests"
        return result

    return run


def write(tmp_path, name, text, url=""):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).replace("URL", url))
    return path


def write_plan(tmp_path, plan, name="plan.json"):
    path = tmp_path / name
    path.write_text(json.dumps(plan, indent=1))
    return path


def plan_with(steps, injection=None):
    return {
        "version": 1,
        "scenarios": [{
            "name": "s",
            "injection": injection or [{"type": "at_once_users", "users": 1}],
            "steps": steps,
        }],
    }


def get(url, **more):
    return {"type": "request", "name": "a", "method": "GET", "url": url, **more}


FOUR_HUNDRED_DAYS_MS = 400 * 24 * 3600 * 1000


# ---------------------------------------------------------------------------------------------
# horde http flags

HTTP_FLAGS = [
    ("c-zero", ["-c", "0"], ["--connections", quoted("0")]),
    ("c-negative", ["-c", "-1"], ["--connections", quoted("-1")]),
    ("c-word", ["-c", "many"], ["--connections", quoted("many")]),
    ("n-zero", ["-n", "0"], ["--requests", quoted("0")]),
    ("n-negative", ["-n", "-5"], ["--requests", quoted("-5")]),
    ("d-zero", ["-d", "0s"], ["--duration", quoted("0s")]),
    ("d-negative", ["-d", "-1s"], ["--duration", quoted("-1s")]),
    ("d-unknown-unit", ["-d", "10parsecs"], ["--duration", quoted("10parsecs"), "parsecs"]),
    ("d-too-long", ["-d", "99999999999h"], ["--duration", quoted("99999999999h"), "365 days"]),
    ("timeout-zero", ["--timeout", "0"], ["--timeout", quoted("0")]),
    ("rate-zero", ["--rate", "0"], ["--rate", quoted("0")]),
    ("rate-negative", ["--rate", "-3"], ["--rate", quoted("-3")]),
    ("rate-nan", ["--rate", "nan"], ["--rate", quoted("nan")]),
    ("workers-zero", ["--workers", "0"], ["--workers", quoted("0")]),
    ("method-with-space", ["-m", "G T"], ["--method", quoted("G T")]),
    ("header-without-colon", ["-H", "no colon"], ["-H", quoted("no colon")]),
    ("header-bad-name", ["-H", "Bad Name: x"], ["-H", quoted("Bad Name")]),
    ("body-missing-file", ["--body", "@/nonexistent"], ["--body", quoted("@/nonexistent")]),
]


@pytest.mark.parametrize("args, needles", [c[1:] for c in HTTP_FLAGS], ids=[c[0] for c in HTTP_FLAGS])
def test_a_bad_http_flag_is_named(refuse, quiet_target, args, needles):
    result = refuse("http", quiet_target.url + "/", *args)
    assert_names(result, *needles)


def test_a_body_file_without_end_is_refused_quickly_by_its_size(refuse, quiet_target):
    result = refuse("http", quiet_target.url + "/", "--body", "@/dev/zero", timeout=20)
    assert_names(result, "--body", "/dev/zero", re.compile(r"MiB|larger|too (large|big)", re.IGNORECASE))


BAD_URLS = [
    ("ftp", "ftp://x/", ["http://"]),
    ("no-host", "http://", []),
    # Issue 23: the URL parser read the path as the host; an upper-case scheme had "empty
    # host"; port 0 was tried.
    ("three-slashes", "http:///path", ["has no host", "http://HOST"]),
    ("upper-case-no-host", "HTTP://", ["has no host"]),
    ("port-zero", "http://127.0.0.1:0/", ["port 0"]),
    ("not-a-url", "not a url", []),
    ("unclosed-ipv6", "http://[::1", []),
]


@pytest.mark.parametrize("url, needles", [c[1:] for c in BAD_URLS], ids=[c[0] for c in BAD_URLS])
def test_a_bad_url_is_named(refuse, url, needles):
    result = refuse("http", url)
    assert_names(result, quoted(url), *needles)


MANY_HTTP_PROBLEMS = [
    ("header-rate-url", ["-H", "bad", "--rate", "-3", "ftp://x/"],
     ["-H", quoted("bad"), "--rate", quoted("-3"), quoted("ftp://x/")]),
    ("five-at-once", ["-d", "0s", "--timeout", "0", "-m", "G T", "--body", "@/nonexistent", "http://[::1"],
     ["--duration", quoted("0s"), "--timeout", "--method", quoted("G T"), "@/nonexistent", quoted("http://[::1")]),
    # A count refused by the argument parser must not hide the problems found after it.
    ("count-header-rate-url", ["-c", "0", "-H", "bad", "--rate", "-3", "ftp://x/"],
     ["--connections", "-H", quoted("bad"), "--rate", quoted("-3"), quoted("ftp://x/")]),
    ("three-counts", ["-c", "0", "-n", "0", "--workers", "0", "http://127.0.0.1:9/"],
     ["--connections", "--requests", "--workers"]),
]


@pytest.mark.parametrize("args, needles", [c[1:] for c in MANY_HTTP_PROBLEMS],
                         ids=[c[0] for c in MANY_HTTP_PROBLEMS])
def test_every_problem_of_a_command_line_is_listed_at_once(refuse, args, needles):
    result = refuse("http", *args)
    assert_names(result, *needles)


# ---------------------------------------------------------------------------------------------
# horde sweep

SWEEP_FLAGS = [
    ("users-zero", ["--users", "0"], ["--users", quoted("0")]),
    ("rate-negative", ["--rate", "-1"], ["--rate", re.compile(r"positive|above 0|more than 0|-1")]),
    ("factor-one", ["--auto", "--factor", "1"], ["--factor", re.compile(r"\b1\b")]),
    ("level-duration-zero", ["--users", "1", "--level-duration", "0s"], ["--level-duration", quoted("0s")]),
    ("slo-garbled", ["--users", "1", "--slo", "p99<<5"], ["--slo", "p99<<5"]),
]


@pytest.mark.parametrize("args, needles", [c[1:] for c in SWEEP_FLAGS], ids=[c[0] for c in SWEEP_FLAGS])
def test_a_bad_sweep_flag_is_named(refuse, quiet_target, args, needles):
    result = refuse("sweep", quiet_target.url + "/", *args)
    assert_names(result, *needles)


def test_a_sweep_of_an_ftp_url_is_refused(refuse):
    result = refuse("sweep", "ftp://x/", "--users", "1")
    assert_names(result, quoted("ftp://x/"), "http://")


def test_every_problem_of_a_sweep_is_listed_at_once(refuse):
    result = refuse("sweep", "ftp://x/", "--users", "1", "--level-duration", "0s", "--slo", "p99<<5")
    assert_names(result, quoted("ftp://x/"), "--level-duration", "--slo")


# ---------------------------------------------------------------------------------------------
# simulations

HEAD = """\
    from horde import scenario, http, at_once_users, setup, param, pause
    scn = scenario("s").exec(http("a").get("URL/"))
"""

# (id, source, line named or None, needles); the source's first two lines are HEAD.
SIMULATIONS = [
    ("syntax-error", HEAD + "    setup(scn.inject(at_once_users(1))\n", 3, ["SyntaxError"]),
    ("name-error", HEAD + "    setup(scn.inject(at_once_users(undefined_name)))\n", 3,
     ["NameError", "undefined_name"]),
    ("base-exception", HEAD + """\
    class Boom(BaseException):
        pass

    raise Boom("custom trouble")
    """, 6, ["Boom", "custom trouble"]),
    ("exception-in-a-function", HEAD + """\
    def users():
        return {}["users"]

    setup(scn.inject(at_once_users(users())))
    """, 4, ["KeyError", "users"]),
    ("setup-never-called", HEAD, None, ["setup", "never"]),
    ("setup-called-twice", HEAD + """\
    setup(scn.inject(at_once_users(1)))
    setup(scn.inject(at_once_users(1)))
    """, 4, ["setup", re.compile(r"already called|twice|more than once")]),
    ("dsl-users-word", HEAD + "    setup(scn.inject(at_once_users('many')))\n", 3, ["at_once_users", "'many'"]),
    ("dsl-pause-word", HEAD + "    setup(scenario('t').exec(pause('soon')).inject(at_once_users(1)))\n", 3,
     ["pause", "'soon'"]),
    ("dsl-unknown-option", HEAD + "    setup(scn.inject(at_once_users(1)), max_duraton=5)\n", 3, ["max_duraton"]),
    ("missing-parameter", HEAD + "    setup(scn.inject(at_once_users(param('users'))))\n", 3,
     ["'users'", "-D users="]),
    ("sys-exit", HEAD + "    import sys\n    sys.exit(3)\n    setup(scn.inject(at_once_users(1)))\n", None,
     ["exit(3)"]),
]


@pytest.mark.parametrize("command", ["plan", "run"])
def test_a_parameter_no_param_call_reads_is_refused_naming_those_read(refuse, quiet_target, tmp_path, command):
    # Issue 23: -D USER=1 for a simulation that reads USERS was silently ignored.
    path = write(tmp_path, "sim.py", HEAD + "    setup(scn.inject(at_once_users(param('USERS', 1))))\n",
                 quiet_target.url)
    result = refuse(command, path, "-D", "USER=1", "-D", "ramp=3", results=command == "run")
    assert_names(result, str(path), "-D USER: the simulation does not read this parameter (did you mean USERS?)",
                 "-D ramp", "It reads: USERS")


def test_a_parameter_read_under_a_condition_counts_when_the_condition_held(horde, tmp_path):
    path = write(tmp_path, "sim.py", HEAD + """\
    users = at_once_users(param("rate", 1)) if param("mode", "closed") == "open" else at_once_users(1)
    setup(scn.inject(users))
    """, "http://127.0.0.1:9")
    refused = horde("plan", path, "-D", "rate=5", results=False)
    assert refused.code == INVALID_INPUT
    assert_names(refused, "-D rate", "It reads: mode", "under some condition")
    read = horde("plan", path, "-D", "mode=open", "-D", "rate=5", results=False)
    assert read.code == 0, read.stderr
    assert json.loads(read.stdout)["scenarios"][0]["injection"] == [{"type": "at_once_users", "users": 5}]


def test_helpers_imported_from_another_simulation_do_not_run_its_setup(horde, tmp_path):
    # Issue 23: importing a helper from another simulation ran that file's setup() too, and
    # the loaded simulation's own setup() was then refused as a second one.
    write(tmp_path, "checkout.py", """\
        from horde import at_once_users, http, scenario, setup

        def pay(amount):
            return http("pay").post(f"/pay/{amount}")

        setup(scenario("checkout").exec(pay(10)).inject(at_once_users(1)), protocol=http.base_url("http://127.0.0.1:9"))
    """)
    path = write(tmp_path, "browse.py", """\
        from horde import at_once_users, http, scenario, setup
        from checkout import pay

        setup(scenario("browse").exec(http("home").get("/"), pay(3)).inject(at_once_users(2)),
              protocol=http.base_url("http://127.0.0.1:9"))
    """)
    result = horde("plan", path, results=False)
    assert result.code == 0, result.stderr
    plan = json.loads(result.stdout)
    assert [s["name"] for s in plan["scenarios"]] == ["browse"]
    assert [step["url"] for step in plan["scenarios"][0]["steps"]] == ["/", "/pay/3"]
    # The other file still runs as a simulation of its own.
    assert [s["name"] for s in json.loads(horde("plan", tmp_path / "checkout.py", results=False).stdout)["scenarios"]] \
        == ["checkout"]


@pytest.mark.parametrize("source, line, needles", [c[1:] for c in SIMULATIONS], ids=[c[0] for c in SIMULATIONS])
@pytest.mark.parametrize("command", ["plan", "run"])
def test_a_bad_simulation_names_its_file_and_line(refuse, quiet_target, tmp_path, command, source, line, needles):
    path = write(tmp_path, "sim.py", source, quiet_target.url)
    result = refuse(command, path, results=command == "run")
    assert_names(result, str(path), *needles)
    if line is not None:
        # `sim.py:3: ...`, or Python's own `(sim.py, line 3)` for a syntax error.
        assert_names(result, re.compile(rf"{re.escape(str(path))}:{line}\b|{re.escape(path.name)}, line {line}\b"))


def test_what_a_simulation_prints_does_not_spoil_the_plan(horde, quiet_target, tmp_path):
    path = write(tmp_path, "sim.py", HEAD + """\
    import sys
    print("hello from the simulation")
    sys.stdout.write("and more\\n")
    setup(scn.inject(at_once_users(1)))
    """, quiet_target.url)
    result = horde("plan", path, results=False)
    assert result.code == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["scenarios"][0]["name"] == "s"
    assert "hello from the simulation" in result.stderr
    assert "and more" in result.stderr


def test_an_upper_case_py_file_is_a_simulation(horde, quiet_target, tmp_path):
    path = write(tmp_path, "sim.PY", HEAD + "    setup(scn.inject(at_once_users(1)))\n", quiet_target.url)
    result = horde("plan", path, results=False)
    assert result.code == 0, result.stderr
    assert json.loads(result.stdout)["scenarios"][0]["name"] == "s"


@pytest.mark.parametrize("command", ["plan", "run"])
def test_a_file_that_is_neither_kind_names_both(refuse, tmp_path, command):
    path = write(tmp_path, "sim.txt", "this is not JSON\n")
    result = refuse(command, path, results=command == "run")
    assert_names(result, str(path), ".py", ".json")


def test_a_malformed_parameter_is_named(refuse, quiet_target, tmp_path):
    path = write(tmp_path, "sim.py", HEAD + "    setup(scn.inject(at_once_users(1)))\n", quiet_target.url)
    result = refuse("run", path, "-D", "noequals")
    assert_names(result, "-D", quoted("noequals"))


MISSING_FILES = [
    ("missing-simulation", "/nonexistent/sim.py", ["/nonexistent/sim.py"]),
    ("missing-plan", "/nonexistent/plan.json", ["/nonexistent/plan.json"]),
    ("a-directory", "DIR", ["DIR"]),
]


@pytest.mark.parametrize("name, needles", [c[1:] for c in MISSING_FILES], ids=[c[0] for c in MISSING_FILES])
def test_a_file_that_cannot_be_read_is_named(refuse, tmp_path, name, needles):
    name = name.replace("DIR", str(tmp_path))
    result = refuse("run", name)
    assert_names(result, *[n.replace("DIR", str(tmp_path)) for n in needles])


# ---------------------------------------------------------------------------------------------
# plans

@pytest.mark.parametrize("command", ["plan", "run"])
def test_a_plan_that_is_not_json_names_line_and_column(refuse, tmp_path, command):
    path = tmp_path / "plan.json"
    path.write_text('{\n  "version": 1,\n  "scenarios": [\n    {"name": "s",, }\n  ]\n}\n')
    result = refuse(command, path, results=command == "run")
    assert_names(result, path.name, "line 4", "column 18")


def test_a_byte_order_mark_before_a_plan_is_accepted(horde, quiet_target, tmp_path):
    path = tmp_path / "plan.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(plan_with([get(quiet_target.url + "/")])).encode())
    result = horde("plan", path, results=False)
    assert result.code == 0, result.stderr
    assert json.loads(result.stdout)["version"] == 1


@pytest.mark.parametrize("command", ["plan", "run"])
def test_wrong_types_everywhere_are_all_listed_with_their_paths(refuse, quiet_target, tmp_path, command):
    plan = plan_with([
        get(7),
        {"type": "pause", "duration_ms": "1s"},
        {"type": "teleport"},
        get(quiet_target.url + "/"),
    ])
    plan["version"] = "1"
    plan["scenarios"][0]["bogus"] = True
    result = refuse(command, write_plan(tmp_path, plan), results=command == "run")
    assert_names(
        result,
        re.compile(r"(^|\s)version: "),
        "scenarios[0].steps[0].url",
        "scenarios[0].steps[1].duration_ms",
        "scenarios[0].steps[2].type", "teleport",
        "scenarios[0].bogus",
    )


BAD_PLANS = [
    ("400-days", lambda url: plan_with([{"type": "pause", "duration_ms": FOUR_HUNDRED_DAYS_MS}, get(url)]),
     ["scenarios[0].steps[0].duration_ms", "365 days"]),
    ("4294967296-users", lambda url: plan_with([get(url)], [{"type": "at_once_users", "users": 4294967296}]),
     ["scenarios[0].injection[0]", "4294967296"]),
    ("regex-duration-multipart", lambda url: plan_with([
        get(url, checks=[{"source": {"type": "regex", "pattern": "(["}}]),
        {"type": "pause", "duration_ms": FOUR_HUNDRED_DAYS_MS},
        {"type": "request", "name": "b", "method": "POST", "url": url,
         "body": {"type": "multipart", "parts": [{"type": "raw_file", "name": "f", "path": "missing.bin"}]}},
     ]), ["scenarios[0].steps[0].checks[0].source.pattern", "regex",
          "scenarios[0].steps[1].duration_ms", "365 days",
          "scenarios[0].steps[2].body.parts[0].path", "missing.bin"]),
]


@pytest.mark.parametrize("make, needles", [c[1:] for c in BAD_PLANS], ids=[c[0] for c in BAD_PLANS])
def test_a_bad_plan_names_each_problem_with_its_path(refuse, quiet_target, tmp_path, make, needles):
    result = refuse("run", write_plan(tmp_path, make(quiet_target.url + "/")))
    assert_names(result, *needles)


CSS_SELECTORS = ["div[[>>", "#", "a..b", "::", "a >", "div:foo", "a:nth-child(x)", "ns|a",
                 ":not(" * 100 + "a" + ")" * 100]


def test_a_type_error_does_not_hide_a_bad_method_in_the_same_step(refuse, quiet_target, tmp_path):
    # Issue 23: only the type error was reported, though every problem is the promise.
    plan = plan_with([{"type": "request", "name": "a", "method": "GE T", "url": 42}])
    plan["protocol"] = {"base_url": quiet_target.url}
    result = refuse("run", write_plan(tmp_path, plan))
    assert_names(result, "(2 problems)", "scenarios[0].steps[0].url: expected a string, found 42",
                 "scenarios[0].steps[0].method: \"GE T\" is not an HTTP method")


def test_a_reserved_word_as_the_sql_table_is_named_by_its_flag(refuse):
    # Issue 23: --table Select failed in the create phase, exit 4.
    result = refuse("sql", "--table", "Select", "--rows", "10")
    assert_names(result, '--table "Select": SELECT is a reserved word of SQL')


@pytest.mark.parametrize("selector", CSS_SELECTORS, ids=lambda s: s[:12])
def test_a_css_selector_that_does_not_parse_is_named_in_words(refuse, quiet_target, tmp_path, selector):
    plan = plan_with([get(quiet_target.url + "/", checks=[{"source": {"type": "css", "selector": selector}}])])
    result = refuse("run", write_plan(tmp_path, plan))
    assert_names(result, "scenarios[0].steps[0].checks[0].source.selector", selector[:20])
    assert "report this to the developer" not in result.stderr.lower(), result.stderr


@pytest.mark.parametrize("command", ["plan", "run"])
def test_an_endless_plan_file_is_refused_quickly(refuse, command):
    result = refuse(command, "/dev/zero", results=command == "run", timeout=20)
    assert_names(result, "/dev/zero")


# ---------------------------------------------------------------------------------------------
# schemas (document_from_schema in a plan, horde couchdb)

def deep_xml(levels):
    return ("<object>" + "<entry><name>a</name><value><object>" * levels
            + "</object></value></entry>" * levels + "</object>\n")


SCHEMAS = [
    ("xml-10000-deep", "schema.xml", deep_xml(10_000), [re.compile(r"\b64\b"), re.compile(r"nest|deep"), "line 1"]),
    ("xml-broken", "schema.xml", "<object>\n  <entry><name>a</name>\n  <value><integer/></value>\n</object>\n",
     ["line 4"]),
    ("json-array", "schema.json", '[{"a": 1}]\n', ["array"]),
    ("json-broken", "schema.json", '{\n  "a": 1,\n  "b": \n}\n', ["line 4"]),
]


@pytest.mark.parametrize("name, text, needles", [c[1:] for c in SCHEMAS], ids=[c[0] for c in SCHEMAS])
def test_a_bad_schema_in_a_plan_is_named(refuse, quiet_target, tmp_path, name, text, needles):
    (tmp_path / name).write_text(text)
    plan = plan_with([{"type": "request", "name": "p", "method": "POST", "url": quiet_target.url + "/",
                       "body": {"type": "document_from_schema", "path": name}}])
    result = refuse("run", write_plan(tmp_path, plan))
    assert_names(result, "scenarios[0].steps[0].body.path", name, *needles)


@pytest.mark.parametrize("name, text, needles", [c[1:] for c in SCHEMAS], ids=[c[0] for c in SCHEMAS])
def test_a_bad_schema_for_couchdb_is_named_with_its_flag(refuse, quiet_target, tmp_path, name, text, needles):
    path = tmp_path / name
    path.write_text(text)
    flag = "--xml_document_schema_filename" if name.endswith(".xml") else "--json_document_schema_filename"
    result = refuse("couchdb", f"--database_address={quiet_target.url}", "--database_name=bench",
                    f"{flag}={path}", "--num_documents_per_bulk_insert=1", "--num_bulk_insert_operations=1")
    assert_names(result, flag, name, *needles)


# ---------------------------------------------------------------------------------------------
# results directories

def results_command(command, quiet_target, tmp_path):
    """A command that writes results, before its --results."""
    sim = write(tmp_path, "sim.py", HEAD + "    setup(scn.inject(at_once_users(1)))\n", quiet_target.url)
    return {
        "http": ["http", quiet_target.url + "/", "-n", "1"],
        "run": ["run", sim],
        "trials": ["run", "--trials", "2", sim],
        "sweep": ["sweep", quiet_target.url + "/", "--users", "1", "--level-duration", "100ms", "--warmup", "0s"],
    }[command]


@pytest.mark.parametrize("command", ["http", "run", "sweep"])
def test_results_under_a_regular_file_exit_3_naming_the_path(refuse, quiet_target, tmp_path, command):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where a directory should be")
    args = results_command(command, quiet_target, tmp_path)
    result = refuse(*args, "--results", blocker / "results", results=False, code=CANNOT_WORK)
    assert_names(result, str(blocker))
    assert blocker.is_file()


@pytest.mark.parametrize("command", ["http", "run", "trials", "sweep"])
def test_results_that_names_a_file_is_refused_naming_the_flag(refuse, quiet_target, tmp_path, command):
    # Issue 23: this exited 3 with "cannot create results directory FILE: no free name".
    taken = tmp_path / "results.txt"
    taken.write_text("notes")
    result = refuse(*results_command(command, quiet_target, tmp_path), "--results", taken, results=False)
    assert_names(result, f"--results {taken}: this is a file, not a directory")
    assert taken.read_text() == "notes"


def test_results_in_a_read_only_directory_exit_3(refuse, quiet_target, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only directories")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        result = refuse("http", quiet_target.url + "/", "-n", "1", "--results", locked / "results",
                        results=False, code=CANNOT_WORK)
        assert_names(result, str(locked))
        assert not (locked / "results").exists()
    finally:
        locked.chmod(0o755)


# ---------------------------------------------------------------------------------------------
# horde report

def test_report_of_a_missing_directory_names_it(refuse, tmp_path):
    missing = tmp_path / "no-such-run"
    result = refuse("report", missing, results=False)
    assert_names(result, str(missing))


NOT_SUMMARIES = [
    ("garbage", "summary.json", "garbage\n"),
    ("other-json", "summary.json", '{"not": "a summary"}\n'),
    ("empty", "summary.json", ""),
]


@pytest.mark.parametrize("file, text", [c[1:] for c in NOT_SUMMARIES], ids=[c[0] for c in NOT_SUMMARIES])
def test_report_of_something_that_is_not_a_summary_names_the_file(refuse, tmp_path, file, text):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / file).write_text(text)
    result = refuse("report", run_dir, results=False)
    assert_names(result, str(run_dir / file))


def test_report_of_a_regular_file_names_it(refuse, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("not a run\n")
    result = refuse("report", path, results=False)
    assert_names(result, str(path))


EVIL = "evil\u001b]0;pwned\u0007\u001b[2J"


@pytest.mark.parametrize("field", ["request name", "run name"])
def test_report_does_not_pass_terminal_escapes_through(horde, target, field):
    run = horde("http", target.url + "/", "-n", "1", "-q")
    assert run.code == 0, run.stderr
    (summary_path,) = run.results_dir.glob("*/summary.json")
    summary = json.loads(summary_path.read_text())
    if field == "request name":
        summary["requests"][0]["name"] = EVIL
    else:
        summary["run"]["name"] = EVIL
    summary_path.write_text(json.dumps(summary))
    result = horde("report", summary_path.parent, results=False)
    assert result.code == 0, result.stderr
    assert "evil" in result.stdout
    assert "\x1b" not in result.stdout, repr(result.stdout)
    assert "\x07" not in result.stdout, repr(result.stdout)
    assert target.stats()["total"] == 1


# ---------------------------------------------------------------------------------------------
# a closed pipe

def test_a_closed_stdout_is_not_a_crash(quiet_target, tmp_path):
    # A plan far larger than a pipe's buffer, so that writing really meets the closed pipe.
    path = write(tmp_path, "sim.py", """\
        from horde import scenario, http, at_once_users, setup
        scn = scenario("s").exec(*[http(f"r{i}").get(f"URL/{i}") for i in range(5000)])
        setup(scn.inject(at_once_users(1)))
    """, quiet_target.url)
    process = subprocess.Popen(["horde", "plan", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert process.stdout.read(10) == b'{\n  "versi'
        process.stdout.close()
        stderr = process.stderr.read().decode(errors="replace")
        code = process.wait(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert code != 101, stderr
    assert code >= 0 or code == -signal.SIGPIPE, f"killed by signal {-code}: {stderr}"
    assert "panicked" not in stderr, stderr
    assert "Traceback" not in stderr, stderr
