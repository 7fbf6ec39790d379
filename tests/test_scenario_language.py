"""The scenario language against the built-in target, with the server's own evidence: a queue
feeder's records each written once across both workers (the target's /eventual/ store holds a
key per record), random_switch weights within binomial tolerance over 10,000 passes (the
target's route counts), foreach over a list the server returned, try_max and eventually as one
outcome each with their retried attempts apart, conditions, switches and exits, and the plan
errors a mistyped feeder or column gets before anything is sent."""

import json
import math
import textwrap
import urllib.request

OK = 0
INVALID_INPUT = 2


def run_simulation(horde, tmp_path, body, base_url, users=1, options=""):
    sim = tmp_path / "sim.py"
    sim.write_text(textwrap.dedent("""
        from horde import *
        {body}
        setup(scn.inject(at_once_users({users})), protocol=http.base_url("{base_url}"){options})
    """).format(body=textwrap.dedent(body).strip(), users=users, base_url=base_url, options=options))
    return horde("run", sim)


def rows(summary):
    return {r["name"]: r for r in summary["requests"]}


def groups(summary):
    return {g["name"]: g for g in summary["groups"]}


def kinds(summary):
    return {(e["request"], e["kind"]): e["count"] for e in summary["errors"]}


def eventual_get(target, key):
    try:
        with urllib.request.urlopen(f"{target.url}/eventual/{key}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_a_queue_feeder_hands_each_record_to_exactly_one_user_across_workers(horde, target, tmp_path):
    records = 300
    (tmp_path / "accounts.csv").write_text("id,name\n" + "".join(f"{i},user-{i}\n" for i in range(records)))
    body = f"""
        accounts = csv("accounts.csv")
        scn = (scenario("writers")
               .feed(accounts)
               .exec(http("write").put("/eventual/account-${{id}}?delay_ms=0").body(string_body("${{name}}"))
                     .check(status().is_(202))))
    """
    # More users than records: the queue runs out, and the last users fail their feed.
    result = run_simulation(horde, tmp_path, body, target.url, users=records + 20, options=", workers=2")
    assert result.code == OK, result.stderr
    by_name = rows(result.summary)
    assert by_name["write"]["ok"] == records
    assert by_name["feed accounts"]["ko"] == 20
    assert kinds(result.summary)[("feed accounts", "feeder_exhausted")] == 20
    assert target.stats()["eventual_writes"] == records
    # Each record reached the server once: every key is there with its own record's name.
    for i in range(0, records, 7):
        assert eventual_get(target, f"account-{i}") == (200, f"user-{i}")


def test_a_feeder_that_runs_out_can_stop_the_run(horde, target, tmp_path):
    body = """
        few = inline([{"n": 1}, {"n": 2}], name="few").stop_run_when_empty()
        scn = scenario("s").during(30, feed(few), http("item").get("/api/items/${n}"), pause(0.05))
    """
    result = run_simulation(horde, tmp_path, body, target.url, users=1)
    assert result.code == OK, result.stderr
    run = result.summary["run"]
    assert run["status"] == "stopped"
    assert run["stop_reason"] == 'feeder "few" ran out of records'
    assert rows(result.summary)["item"]["ok"] == 2
    assert run["duration_ms"] < 10_000


def test_random_switch_weights_hold_over_ten_thousand_passes(horde, target, tmp_path):
    passes = 10_000
    body = f"""
        scn = scenario("mix").repeat({passes}, random_switch(
            (30, http("delay").get("/delay/0")),
            (50, http("work").get("/work/0")),
            otherwise=http("other").get("/api/items/1")))
    """
    result = run_simulation(horde, tmp_path, body, target.url, users=1, options=", seed=7")
    assert result.code == OK, result.stderr
    by_route = target.stats()["by_route"]
    counts = [by_route.get("GET /delay/{ms}", 0), by_route.get("GET /work/{ms}", 0), by_route.get("GET /api/items/{id}", 0)]
    assert sum(counts) == passes
    for count, share in zip(counts, (0.3, 0.5, 0.2)):
        sigma = math.sqrt(passes * share * (1 - share))
        assert abs(count - passes * share) < 4 * sigma, (counts, share)
    assert [rows(result.summary)[n]["ok"] for n in ("delay", "work", "other")] == counts


def test_foreach_loops_over_a_list_the_server_returned(horde, target, tmp_path):
    body = """
        scn = (scenario("browse")
               .exec(http("list").get("/api/items").check(jsonpath("$.items").save_as("items"),
                                                          jsonpath("$.count").save_as("count")))
               .foreach("${items}", "item",
                        http("item").get("/api/items/${item.id}").check(jsonpath("$.name").is_("${item.name}").save_as("name")),
                        counter="i")
               .do_if("${items.size()} == ${count} and ${i} >= 1 and '${name}' == '${items[-1].name}'",
                      http("all seen").get("/api/items/${items[-1].id}")))
    """
    result = run_simulation(horde, tmp_path, body, target.url, users=2)
    assert result.code == OK, result.stderr
    by_name = rows(result.summary)
    listed = json.loads(urllib.request.urlopen(f"{target.url}/api/items").read())
    assert result.summary["global"]["ko"] == 0, result.summary["errors"]
    assert by_name["item"]["ok"] == 2 * listed["count"]
    assert by_name["all seen"]["ok"] == 2
    # The list, each item, and the last one again: the server saw exactly those.
    assert target.stats()["by_route"]["GET /api/items/{id}"] == 2 * (listed["count"] + 1)


def test_try_max_is_one_outcome_and_its_failed_tries_are_retried_not_ko(horde, target, tmp_path):
    body = """
        scn = (scenario("s")
               .exec(http("write").put("/eventual/k-${__user_id}?delay_ms=400").body(string_body("v")))
               .try_max(100, pause(0.05), http("read").get("/eventual/k-${__user_id}"), name="read back")
               .try_max(3, http("never").get("/status/503"), name="hopeless"))
    """
    result = run_simulation(horde, tmp_path, body, target.url, users=2, options=", on_check_failure='continue'")
    assert result.code == OK, result.stderr
    by_group = groups(result.summary)
    by_name = rows(result.summary)
    assert (by_group["read back"]["ok"], by_group["read back"]["ko"]) == (2, 0)
    assert by_group["read back"]["attempts"]["max"] > 1
    assert by_name["read"]["ko"] == 0 and by_name["read"]["ok"] == 2
    assert by_name["read"]["retried"] == by_group["read back"]["attempts"]["total"] - 2
    # All tries failed: one KO outcome per user, one KO request (the last try) per user.
    assert (by_group["hopeless"]["ok"], by_group["hopeless"]["ko"]) == (0, 2)
    assert (by_name["never"]["ko"], by_name["never"]["retried"]) == (2, 4)
    assert target.stats()["by_route"]["GET /status/{code}"] == 6
    assert "still failing after 3 attempts" in next(
        e["message"] for e in result.summary["errors"] if e["request"] == "hopeless")


def test_eventually_measures_the_time_to_consistency(horde, target, tmp_path):
    body = """
        read = http("read").get("/eventual/doc-${__user_id}").check(substring("ready"))
        scn = (scenario("s")
               .exec(http("write").put("/eventual/doc-${__user_id}?delay_ms=500").body(string_body("ready")))
               .eventually(read, pause=0.05, timeout=5, name="visible")
               .exec(http("slow write").put("/eventual/late-${__user_id}?delay_ms=60000").body(string_body("x")))
               .eventually(http("late read").get("/eventual/late-${__user_id}"), pause=0.1, timeout=0.6, name="too late"))
    """
    result = run_simulation(horde, tmp_path, body, target.url, users=3, options=", on_check_failure='continue'")
    assert result.code == OK, result.stderr
    visible = groups(result.summary)["visible"]
    assert (visible["ok"], visible["ko"]) == (3, 0)
    assert visible["attempts"]["retried_passes"] == 3
    # The write became visible 500 ms after it was accepted: that is the time to consistency.
    assert 400_000 <= visible["duration"]["min_us"] and visible["duration"]["max_us"] < 2_000_000
    too_late = groups(result.summary)["too late"]
    assert (too_late["ok"], too_late["ko"]) == (0, 3)
    message = next(e["message"] for e in result.summary["errors"] if e["request"] == "too late")
    assert message.startswith("eventually: still failing after "), message
    assert "status: expected 2xx or 304, found 404" in message
    stats = target.stats()
    assert stats["eventual_reads_found"] == 3
    assert rows(result.summary)["read"]["ok"] == 3


def test_retried_attempts_are_counted_as_sent_and_error_shares_add_up(horde, target, tmp_path):
    # Every attempt fails: per user, the block gives up (not_consistent) after 4 attempts, the
    # last one a KO, the three before it retried.
    body = """
        scn = scenario("s").eventually(http("read").get("/status/404"), times=4, pause=0.01, name="never")
    """
    result = run_simulation(horde, tmp_path, body, target.url, users=5)
    assert result.code == OK, result.stderr
    read = rows(result.summary)["read"]
    assert (read["count"], read["ko"], read["retried"]) == (5, 5, 15)
    # The server answered every attempt: the console says so beside the request count.
    assert target.stats()["by_route"]["GET /status/{code}"] == 20
    sent = next(line for line in result.stdout.splitlines() if line.startswith("> requests sent"))
    assert sent.split()[3] == "20" and "retried attempts 15" in sent, sent
    # Errors: 5 KO requests (check_failed) and 5 blocks that gave up (not_consistent); each is
    # half of the errors, and the shares add up to 100 %, in summary.json and on the console.
    errors = result.summary["errors"]
    assert {(e["kind"], e["count"]) for e in errors} == {("check_failed", 5), ("not_consistent", 5)}
    assert sum(e["percent"] for e in errors) == 100.0
    assert result.stdout.count("50.00% of errors") == 2, result.stdout


def test_loops_whose_body_never_waits_still_end_at_max_duration(horde, target, tmp_path):
    # No request, no pause: only `set` steps. The run must still end at its max_duration, and
    # its results still be written, for every kind of loop.
    for loop in ('.during(60, set_(x="1"))', '.repeat(10**12, set_(x="1"))', '.as_long_as("${go}", set_(x="1"))'):
        body = f"""
            scn = scenario("s").set(go="true"){loop}
        """
        result = run_simulation(horde, tmp_path, body, target.url, options=", max_duration=1")
        assert result.code == OK, (loop, result.stderr)
        run = result.summary["run"]
        assert run["status"] == "limit_reached", (loop, run)
        assert run["duration_ms"] < 10_000, (loop, run)


def test_switches_conditions_sets_and_exits(horde, target, tmp_path):
    body = """
        scn = (scenario("s")
               .set(kind="film", n="4")
               .do_switch("${kind}", ("book", http("book").get("/status/201")), ("film", http("film").get("/status/202")),
                          otherwise=http("other").get("/status/203"))
               .do_if_or_else("${n} > 3 and not exists(missing)", http("big").get("/delay/0"), http("small").get("/work/0"))
               .round_robin_switch(http("rr a").get("/api/items/1"), http("rr b").get("/api/items/2"))
               .exit_block_on_fail(http("fails").get("/status/500"), http("skipped").get("/api/items/3"))
               .exec(http("after block").get("/api/items/1"))
               .exit_here_if("${__user_id} == 0")
               .exec(http("not user 0").get("/api/items/2"))
               .exit_here_if_failed()
               .exec(http("never").get("/api/items/3")))
    """
    result = run_simulation(horde, tmp_path, body, target.url, users=4, options=", on_check_failure='continue'")
    assert result.code == OK, result.stderr
    by_name = rows(result.summary)
    assert by_name["film"]["ok"] == 4 and "book" not in by_name and "other" not in by_name
    assert by_name["big"]["ok"] == 4 and "small" not in by_name
    assert (by_name["rr a"]["ok"], by_name["rr b"]["ok"]) == (2, 2)
    assert by_name["fails"]["ko"] == 4 and "skipped" not in by_name
    assert by_name["after block"]["ok"] == 4
    assert by_name["not user 0"]["ok"] == 3
    assert "never" not in by_name


def test_expressions_render_natively(horde, target, tmp_path):
    body = """
        scn = (scenario("s")
               .exec(http("echo").post("/api/echo")
                     .body(string_body('{"id": "${__uuid()}", "n": ${__random_int(5, 5)}, "s": "${__random_string(8)}", '
                                       '"b": "${word.base64()}", "h": "${word.sha256()}", "u": "${__user_id}", '
                                       '"c": "${__counter(calls)}", "j": "${quote.json_escape()}"}'))
                     .header("Content-Type", "application/json")
                     .check(jsonpath("$.n").is_("5"), jsonpath("$.b").is_("aGk="), jsonpath("$.j").is_('say "hi"'),
                            jsonpath("$.h").is_("8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4"),
                            regex('"id":"([0-9a-f-]{36})"').exists(), regex('"s":"([A-Za-z0-9]{8})"').exists())))
    """
    body = body.replace('scn = (scenario("s")', 'scn = (scenario("s").set(word="hi", quote=\'say "hi"\')', 1)
    result = run_simulation(horde, tmp_path, body, target.url, users=2)
    assert result.code == OK, result.stderr
    assert result.summary["global"]["ko"] == 0, result.summary["errors"]
    assert target.stats()["json_documents"] == 2


def test_plan_errors_name_the_feeder_file_line_and_column(horde, tmp_path):
    (tmp_path / "ragged.csv").write_text("user,password\nann,secret\nbob\n")
    (tmp_path / "users.csv").write_text("user,password\nann,secret\n")
    cases = [
        ('csv("missing.csv")', "${user}", ["feeders[0].source.path", "missing.csv"]),
        ('csv("ragged.csv")', "${user}", ["feeders[0].source.path", "ragged.csv:3", "1 fields", "2 columns"]),
        ('csv("users.csv")', "${usr}", ["${usr} is never set", 'feeder "users"', "user, password"]),
        ('csv("users.csv")', "${__nope()}", ["unknown function __nope"]),
    ]
    for feeder, url_var, expected in cases:
        body = f"""
            scn = scenario("s").feed({feeder}).exec(http("r").get("/x/{url_var}"))
        """
        result = run_simulation(horde, tmp_path, body, "http://127.0.0.1:9")
        assert result.code == INVALID_INPUT, (feeder, result.stderr)
        for text in expected:
            assert text in result.stderr, (text, result.stderr)


def test_conditions_and_switches_refuse_bad_input_with_paths(horde, tmp_path):
    body = """
        scn = (scenario("s")
               .do_if("${a} ==", http("r").get("/"))
               .random_switch((70, http("a").get("/")), (40, http("b").get("/")))
               .feed(inline([{"a": 1}], name="x")))
    """
    result = run_simulation(horde, tmp_path, body, "http://127.0.0.1:9")
    assert result.code == INVALID_INPUT, result.stderr
    assert "scenarios[0].steps[0].condition" in result.stderr
    assert "the weights add up to 110%" in result.stderr


def test_session_functions_read_and_set_variables_and_their_cost_is_in_the_summary(horde, target, tmp_path):
    marker = tmp_path / "hooks.txt"
    body = f"""
        @before
        def started():
            open({str(marker)!r}, "w").write("before\\n")

        @after
        def ended(summary):
            open({str(marker)!r}, "a").write(f"after {{summary['global']['ok']}}\\n")

        def next_item(session):
            ids = [item["id"] for item in session["items"]]
            return session.set("pick", ids[session.user_id % len(ids)]).set("seen", len(ids))

        def explode(session):
            raise ValueError("no " + session.get("missing", "thing"))

        scn = (scenario("s")
               .exec(http("list").get("/api/items").check(jsonpath("$.items").save_as("items")))
               .exec(next_item)
               .exec(http("item").get("/api/items/${{pick}}").check(jsonpath("$.id").save_as("got")))
               .do_if("${{got}} == ${{pick}} and ${{seen}} > 1", exec_(explode)))
    """
    result = run_simulation(horde, tmp_path, body, target.url, users=3)
    assert result.code == OK, result.stderr
    by_name = rows(result.summary)
    assert by_name["item"]["ok"] == 3
    functions = result.summary["generator"]["session_functions"]
    assert functions["calls"] == 6 and functions["total_ms"] > 0
    [failure] = [e for e in result.summary["errors"] if e["kind"] == "session_function_error"]
    assert failure["count"] == 3
    assert failure["message"].startswith("ValueError: no thing (sim.py:"), failure["message"]
    assert failure["request"].startswith("explode (sim.py:")
    assert marker.read_text() == "before\nafter 6\n"
    # A plan file cannot carry the functions: running it is refused before anything is sent.
    plan = horde("plan", tmp_path / "sim.py", results=False)
    assert plan.code == OK
    (tmp_path / "plan.json").write_text(plan.stdout)
    refused = horde("run", tmp_path / "plan.json")
    assert refused.code == INVALID_INPUT
    assert "session functions" in refused.stderr and "next_item#" in refused.stderr


def test_gatling_hash_brace_templates_carry_the_view_state(horde, target, tmp_path):
    # Gatling 3.7 and later write #{viewState}: every POST must carry the page's latest
    # ViewState, which the target checks (a stale or literal one is refused with a 500).
    body = """
        view_state = regex(r'name="javax.faces.ViewState"[^>]*value="([^"]*)"').save_as("viewState")
        scn = (scenario("jsf")
               .exec(http("login page").get("/login").check(view_state))
               .exec(http("login").post("/login").form_param("javax.faces.ViewState", "#{viewState}")
                     .form_param("username", "#{who}").form_param("password", "ash")
                     .check(css("p#user").is_("#{who}"), view_state))
               .exec(http("comment").post("/account").form_param("javax.faces.ViewState", "#{viewState}")
                     .form_param("comment", "##{literal} and ${who}")
                     .check(css("#message").is_("Saved: ##{literal} and #{who}"))))
    """.replace('scn = (scenario("jsf")', 'scn = (scenario("jsf").set(who="sawyer")', 1)
    result = run_simulation(horde, tmp_path, body, target.url, users=3)
    assert result.code == OK, result.stderr
    assert result.summary["global"]["ko"] == 0, result.summary["errors"]
    stats = target.stats()
    assert (stats["logins"], stats["view_state_rejections"]) == (3, 0), stats


def test_a_template_pause_waits_as_long_as_the_session_says(horde, target, tmp_path):
    # Each user's pause comes from a feeder (seconds, or with a unit) and from a function of
    # the session. A pause ends at its intended time, counted from the user's intended start,
    # so a user that started a few milliseconds late pauses that much less: the bounds allow it.
    body = """
        waits = inline([{"t": "0.3"}, {"t": "1200ms"}])
        scn = (scenario("s")
               .feed(waits)
               .group("by template", pause("#{t}"))
               .group("by function", pause(lambda session: 0.5 if session.user_id == 0 else timedelta(milliseconds=700)))
               .exec(http("after").get("/api/items/1")))
    """
    result = run_simulation(horde, tmp_path, "from datetime import timedelta\n" + textwrap.dedent(body), target.url,
                            users=2)
    assert result.code == OK, result.stderr
    assert result.summary["global"]["ko"] == 0, result.summary["errors"]
    by_group = groups(result.summary)
    template = by_group["by template"]["duration"]
    assert template["count"] == 2
    assert 280_000 <= template["min_us"] < 1_000_000 and template["max_us"] >= 1_180_000, template
    function = by_group["by function"]["duration"]
    assert 480_000 <= function["min_us"] < 650_000 and function["max_us"] >= 680_000, function
    assert rows(result.summary)["after"]["ok"] == 2
    assert result.summary["generator"]["session_functions"]["calls"] == 2


def test_a_pause_that_is_no_duration_fails_the_user_in_words(horde, target, tmp_path):
    body = """
        scn = scenario("s").set(t="soon").pause("${t}").exec(http("after").get("/api/items/1"))
    """
    result = run_simulation(horde, tmp_path, body, target.url, users=2)
    assert result.code == OK, result.stderr
    assert kinds(result.summary) == {("pause ${t}", "invalid_pause"): 2}, result.summary["errors"]
    assert '"soon" is not a duration' in result.summary["errors"][0]["message"]
    # As a failed check, a failed pause is counted and the user goes on, as in Gatling.
    assert rows(result.summary)["after"]["ok"] == 2


def test_normal_pauses_have_the_mean_and_spread_asked_for(horde, target, tmp_path):
    # 400 pauses of N(300 ms, 50 ms): the mean's standard error is 2.5 ms. The bounds above
    # are loose, as a busy machine can only add to the durations.
    body = """
        scn = scenario("s").group("think", pause(0.3, std_dev=0.05))
    """
    result = run_simulation(horde, tmp_path, body, target.url, users=400)
    assert result.code == OK, result.stderr
    duration = groups(result.summary)["think"]["duration"]
    assert duration["count"] == 400
    assert 290_000 <= duration["mean_us"] <= 340_000, duration
    assert 40_000 <= duration["stddev_us"] <= 75_000, duration
    assert result.summary["plan"]["scenarios"][0]["steps"][0]["steps"][0] == {
        "type": "pause_normal", "mean_ms": 300, "std_dev_ms": 50}


def test_an_unreadable_feeder_file_is_the_one_problem_named(horde, tmp_path):
    # Issue 23: the file's columns are unknown, and "${user} is never set" was said too.
    body = """
        scn = scenario("s").feed(csv("missing.csv")).exec(http("r").get("/x/${user}"))
    """
    result = run_simulation(horde, tmp_path, body, "http://127.0.0.1:9")
    assert result.code == INVALID_INPUT
    assert "(1 problem)" in result.stderr and "missing.csv" in result.stderr, result.stderr
    assert "never set" not in result.stderr, result.stderr
