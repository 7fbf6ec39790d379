"""WebSockets and server-sent events against the built-in target (its /ws/echo, /ws/ticker and
/sse/events, and its counts in /stats): round trips whose checks read the echoed text and whose
saved values flow into the next message, events counted on both sides, wss and https with the
target's own certificate, and each way a socket fails: no message in time, a server that closes,
a handshake refused, a socket used before it was opened."""

import json
import textwrap

OK = 0


def run_simulation(horde, tmp_path, body, base_url, users=1, protocol_extra=""):
    sim = tmp_path / "sim.py"
    sim.write_text(textwrap.dedent("""
        from horde import *
        {body}
        setup(scn.inject(at_once_users({users})), protocol=http.base_url("{base_url}"){protocol_extra})
    """).format(body=textwrap.dedent(body).strip().replace("\n", "\n"), users=users, base_url=base_url,
                protocol_extra=protocol_extra))
    return horde("run", sim)


def rows(summary):
    return {r["name"]: r for r in summary["requests"]}


def kinds(summary):
    return {(e["request"], e["kind"]): e["count"] for e in summary["errors"]}


ECHO = """
    say = ws("say").send_text("message ${i} of ${who}").await_(5).on(
        ws.check_text_message("echo").check(regex("message (\\\\d+ of \\\\w+)").save_as("echoed")))
    again = ws("again").send_text("${echoed}").await_(5).on(
        ws.check_text_message("echo of the echo").check(substring("of user")))
    scn = (scenario("echo")
           .exec(http("home").get("/").check(regex("<title>([^<]+)</title>").exists()))
           .exec(ws("open").connect("/ws/echo"))
           .repeat(3, exec_(say, again), counter="i")
           .exec(ws("bytes").send_bytes(bytes(range(256))).await_(5).on(ws.check_binary_message("bytes back")))
           .exec(ws("close").close()))
"""


def test_websocket_echo_round_trips_with_checks_and_saved_values(horde, target, tmp_path):
    body = ECHO.replace("${who}", "user")
    result = run_simulation(horde, tmp_path, body, target.url, users=3)
    assert result.code == OK, result.stderr
    summary = result.summary
    assert summary["global"]["ko"] == 0, summary["errors"]
    by_name = rows(summary)
    assert (by_name["open"]["ok"], by_name["echo"]["ok"], by_name["echo of the echo"]["ok"]) == (3, 9, 9)
    assert by_name["bytes back"]["ok"] == 3 and by_name["bytes back"]["bytes_received"] == 3 * 256
    stats = target.stats()
    assert stats["ws_connections"] == 3
    # Each user sent 3 + 3 + 1 messages: the server echoed exactly those.
    assert stats["ws_messages_echoed"] == 21
    connections = summary["connections"]
    assert (connections["websockets"], connections["messages_sent"], connections["messages_received"]) == (3, 21, 21)
    assert "WebSockets opened" in result.stdout


def test_event_stream_events_are_counted_on_both_sides(horde, target, tmp_path):
    body = """
        scn = (scenario("events")
               .exec(sse("ticks").get("/sse/events?count=5&interval_ms=20").await_(5).on(
                   sse.check_message("first").check(jsonpath("$.data").is_('{"n": 1}'), jsonpath("$.event").is_("tick")),
                   sse.check_message("fifth").matching(jsonpath("$.id").is_("5")).check(jsonpath("$.data").save_as("last"))))
               .exec(http("after").get("/status/200?last=${last}"))
               .exec(sse("close").close()))
    """
    result = run_simulation(horde, tmp_path, body, target.url, users=2)
    assert result.code == OK, result.stderr
    summary = result.summary
    assert summary["global"]["ko"] == 0, summary["errors"]
    by_name = rows(summary)
    assert (by_name["ticks"]["ok"], by_name["first"]["ok"], by_name["fifth"]["ok"], by_name["after"]["ok"]) == (2, 2, 2, 2)
    # The fifth event comes about 4 intervals after the first.
    assert by_name["fifth"]["latency"]["ok"]["min_us"] >= 4 * 20_000
    stats = target.stats()
    assert (stats["sse_streams"], stats["sse_events"]) == (2, 10)
    assert summary["connections"]["event_streams"] == 2
    assert summary["connections"]["messages_received"] == 10


def test_wss_and_https_event_streams_with_the_targets_certificate(horde, tls_target, tmp_path):
    body = """
        scn = (scenario("secure")
               .exec(ws("open").connect("/ws/echo"))
               .exec(ws("say").send_text("over tls").await_(5).on(ws.check_text_message("echo").check(substring("over tls"))))
               .exec(sse("ticks").get("/sse/events?count=2&interval_ms=10").await_(5).on(
                   sse.check_message("one"), sse.check_message("two"))))
    """
    result = run_simulation(horde, tmp_path, body, tls_target.url, users=2,
                            protocol_extra=f'.ca_file("{tls_target.cert_path}").enable_http2()')
    assert result.code == OK, result.stderr
    summary = result.summary
    assert (summary["global"]["ok"], summary["global"]["ko"]) == (10, 0), summary["errors"]
    stats = tls_target.stats()
    assert (stats["ws_connections"], stats["ws_messages_echoed"], stats["sse_events"]) == (2, 2, 4)
    assert stats["tls_connections"] >= 4


def test_each_way_a_socket_fails_is_a_ko_of_its_kind(horde, target, tmp_path):
    cases = [
        ('ws("unopened").send_text("x")', ("unopened", "socket_not_open")),
        ('ws("not a websocket").connect("/")', ("not a websocket", "ws_handshake")),
        ('sse("not a stream").get("/")', ("not a stream", "sse_refused")),
        ('exec_(ws("open").connect("/ws/echo"), ws("silence").await_(0.3).on(ws.check_text_message("never")))',
         ("never", "message_timeout")),
        ('exec_(ws("open").connect("/ws/echo"), ws("say").send_text("abc").await_(5).on('
         'ws.check_text_message("wrong").check(substring("xyz"))))', ("wrong", "check_failed")),
        ('ws("ticker").connect("/ws/ticker?count=1&interval_ms=10").await_(5).on('
         'ws.check_text_message("tick"), ws.check_text_message("after the close"))', ("after the close", "socket_closed")),
        ('sse("short").get("/sse/events?count=1&interval_ms=10").await_(5).on('
         'sse.check_message("event"), sse.check_message("after the end"))', ("after the end", "socket_closed")),
    ]
    for i, (chain, expected) in enumerate(cases):
        directory = tmp_path / str(i)
        directory.mkdir()
        result = run_simulation(horde, directory, f"scn = scenario('s').exec({chain})", target.url)
        assert result.code == OK, result.stderr
        found = kinds(result.summary)
        assert found == {expected: 1}, (chain, result.summary["errors"])


def test_timeout_is_short_and_the_message_row_says_so(horde, target, tmp_path):
    body = """
        scn = scenario("s").exec(ws("open").connect("/ws/echo"), ws("silence").await_(0.3).on(ws.check_text_message("never")))
    """
    result = run_simulation(horde, tmp_path, body, target.url)
    summary = result.summary
    never = rows(summary)["never"]
    assert never["ko"] == 1
    assert 300_000 <= never["latency"]["ko"]["min_us"] < 1_000_000


def test_plan_errors_for_sockets_name_their_path(horde, tmp_path):
    plan = {
        "version": 1, "name": "bad",
        "scenarios": [{"name": "s", "injection": [{"type": "at_once_users", "users": 1}], "steps": [
            {"type": "ws_connect", "name": "open", "url": "http://127.0.0.1:1/"},
            {"type": "sse_connect", "name": "events", "url": "ws://127.0.0.1:1/"},
            {"type": "ws_send", "name": "say", "text": "a", "binary_base64": "AA=="},
            {"type": "ws_await", "name": "wait", "await": {"timeout_ms": 0, "messages": [
                {"name": "m", "checks": [{"source": {"type": "status"}}],
                 "matching": [{"source": {"type": "substring", "value": "x"}, "save_as": "x"}]}]}},
        ]}],
    }
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(plan))
    result = horde("run", path)
    assert result.code == 2
    for expected in (
        'scenarios[0].steps[0].url: "http://127.0.0.1:1/": only ws:// and wss:// URLs are supported here',
        'scenarios[0].steps[1].url: "ws://127.0.0.1:1/": only http:// and https:// URLs are supported here',
        "scenarios[0].steps[2]: a message is text or binary_base64, one of the two",
        "scenarios[0].steps[3].await.timeout_ms: must be more than 0",
        "scenarios[0].steps[3].await.messages[0].checks[0].source: a message has no status, headers, location, response time or rows",
        "scenarios[0].steps[3].await.messages[0].matching[0].save_as: matching checks only choose the message",
    ):
        assert expected in result.stderr, result.stderr
