"""Connection faults in quick mode: refused, killed, reset, closed and stalled connections,
and keep-alive connections the server closes. Each request is counted once, as OK or as a KO
of its kind, and horde's count agrees with the misbehaving server's own."""

import json
import socket
import subprocess
import time

from conftest import wait_until
from fault_fixtures import assert_every_request_failed, error_kinds, misbehaving  # noqa: F401 (fixture)

LIMIT_REACHED = "limit_reached"


def closed_port():
    """A port nothing listens on: the port of a socket bound, then closed."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_refused_connection_is_a_connect_refused_ko(horde):
    result = horde("http", f"http://127.0.0.1:{closed_port()}/", "-c", "2", "-n", "20", "-q")
    assert result.code == 0, result.stderr
    summary = result.summary
    assert summary["run"]["status"] == LIMIT_REACHED
    assert (summary["global"]["count"], summary["global"]["ko"]) == (20, 20)
    assert error_kinds(summary) == {"connect_refused": 20}
    # A refused connection was attempted: it has a time, it is not "unsent".
    assert summary["global"]["unsent"] == 0
    assert summary["global"]["latency"]["all"]["count"] == 20


def test_a_server_killed_mid_run_turns_into_connection_kos_and_the_run_ends_at_its_duration(misbehaving, tmp_path):
    results = tmp_path / "results"
    started = time.monotonic()
    process = subprocess.Popen(
        ["horde", "http", misbehaving.url("/ok"), "-c", "2", "-d", "2s", "--rate", "400", "-q", "--results", str(results)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    wait_until(lambda: misbehaving.answered("/ok") >= 100, what="100 answered requests")
    misbehaving.kill()
    answered = misbehaving.answered("/ok")
    out, err = process.communicate(timeout=30)
    wall = time.monotonic() - started
    assert process.returncode == 0, err
    [path] = results.glob("*/summary.json")
    summary = json.loads(path.read_text())
    assert summary["run"]["status"] == LIMIT_REACHED
    assert 1.9 <= summary["run"]["duration_ms"] / 1000 <= 2.2
    assert wall < 5
    g = summary["global"]
    assert g["count"] == g["ok"] + g["ko"]
    # Every answer the server wrote before dying was counted OK, except one per connection
    # that the kill may have cut before horde read it; and the server logs an answer after
    # writing it, so the kill may also fall between the two: one per connection the other way.
    assert g["ok"] - 2 <= answered <= g["ok"] + 2
    kinds = error_kinds(summary)
    assert set(kinds) <= {"connect_refused", "connection_closed", "connection_reset"}, summary["errors"]
    # After the kill, every request was refused until the end: about the rest of the rate.
    assert kinds.get("connect_refused", 0) >= 300
    assert g["count"] + g["interrupted"] >= 700


def test_a_reset_after_the_request_is_a_connection_reset_ko(horde, misbehaving):
    result = horde("http", misbehaving.url("/reset"), "-c", "2", "-n", "20", "-q")
    assert_every_request_failed(result, misbehaving, "/reset", 20, "connection_reset")
    # A reset connection is not reused: one connection per request, none retried (the
    # requests went out on fresh connections).
    assert result.summary["connections"]["opened"] == 20
    assert result.summary["connections"]["retried_on_fresh_connection"] == 0


def test_a_connection_closed_before_any_response_byte_is_a_connection_closed_ko(horde, misbehaving):
    result = horde("http", misbehaving.url("/close-before-response"), "-c", "2", "-n", "20", "-q")
    assert_every_request_failed(result, misbehaving, "/close-before-response", 20, "connection_closed")
    assert result.summary["connections"]["retried_on_fresh_connection"] == 0


def test_a_stalled_server_gives_request_timeout_kos_after_the_timeout(horde, misbehaving):
    result = horde("http", misbehaving.url("/stall"), "-c", "2", "-n", "4", "--timeout", "500ms", "-q")
    assert_every_request_failed(result, misbehaving, "/stall", 4, "request_timeout")
    latency = result.summary["global"]["latency"]["all"]
    assert latency["count"] == 4
    assert 500_000 <= latency["min_us"] <= latency["max_us"] < 800_000
    # Two rounds of 500 ms on two connections.
    assert 0.9 <= result.summary["run"]["duration_ms"] / 1000 < 2


def test_a_stalled_server_without_timeout_does_not_hold_the_run_past_its_duration(horde, misbehaving):
    started = time.monotonic()
    result = horde("http", misbehaving.url("/stall"), "-c", "4", "-d", "1s", "-q")
    wall = time.monotonic() - started
    assert result.code == 0, result.stderr
    summary = result.summary
    assert wall < 3
    assert summary["run"]["status"] == LIMIT_REACHED
    assert 1000 <= summary["run"]["duration_ms"] < 1500
    # Nothing was answered: nothing counted, the four requests in flight are interrupted.
    assert summary["global"]["count"] == 0
    assert summary["global"]["interrupted"] == 4
    assert summary["users"]["interrupted"] == 4
    assert misbehaving.settled(lambda: misbehaving.heads("/stall"), 4) == 4


def test_connections_of_requests_cut_by_the_end_of_the_run_are_counted_as_opened(horde, misbehaving):
    result = horde("http", misbehaving.url("/stall"), "-c", "4", "-d", "500ms", "-q")
    assert result.code == 0, result.stderr
    summary = result.summary
    assert summary["run"]["status"] == LIMIT_REACHED
    assert (summary["global"]["count"], summary["global"]["interrupted"]) == (0, 4)
    # Four connects succeeded (the server accepted four connections): "opened" counts
    # successful connects, whatever became of the requests sent on them.
    assert misbehaving.settled(misbehaving.accepted, 4) == 4
    assert summary["connections"]["opened"] == 4


def test_keep_alive_connections_closed_by_the_server_while_idle_are_replaced_without_ko(horde, misbehaving):
    # Paced at 2/s, each connection sits idle 500 ms: the server closes it after 300.
    result = horde("http", misbehaving.url("/keepalive-idle-close"), "--rate", "2", "-c", "1", "-d", "2s", "-q")
    assert result.code == 0, result.stderr
    summary = result.summary
    assert summary["run"]["status"] == LIMIT_REACHED
    g = summary["global"]
    assert g["ko"] == 0, summary["errors"]
    assert g["ok"] == g["count"] >= 4
    assert summary["connections"]["closed_by_server_while_idle"] >= 2
    served = misbehaving.settled(lambda: misbehaving.heads("/keepalive-idle-close"), g["count"])
    assert g["count"] <= served <= g["count"] + g["interrupted"]


def test_a_request_on_a_connection_the_server_drops_unanswered_is_retried_on_a_fresh_one(horde, misbehaving):
    # The server answers one request per connection and drops the connection on the next:
    # each request after the first is retried once on a fresh connection.
    result = horde("http", misbehaving.url("/one-per-connection"), "-c", "1", "-n", "10", "-q")
    assert result.code == 0, result.stderr
    summary = result.summary
    assert summary["run"]["status"] == LIMIT_REACHED
    assert (summary["global"]["count"], summary["global"]["ok"]) == (10, 10), summary["errors"]
    assert summary["connections"]["retried_on_fresh_connection"] == 9
    assert summary["connections"]["opened"] == 10
    # Each request answered once; the nine dropped attempts reached the server too.
    assert misbehaving.answered("/one-per-connection") == 10
    assert misbehaving.settled(lambda: misbehaving.heads("/one-per-connection"), 19) == 19
    assert misbehaving.accepted() == 10


def test_a_post_written_whole_on_a_connection_the_server_dropped_is_a_ko_not_sent_again(horde, misbehaving):
    # The server may have acted on a POST it received: horde does not send it twice.
    result = horde("http", misbehaving.url("/one-per-connection"), "-m", "POST", "--body", "x", "-c", "1", "-n", "10", "-q")
    assert result.code == 0, result.stderr
    summary = result.summary
    assert (summary["global"]["count"], summary["global"]["ok"], summary["global"]["ko"]) == (10, 5, 5)
    assert error_kinds(summary) == {"connection_closed": 5}, summary["errors"]
    assert summary["connections"]["retried_on_fresh_connection"] == 0
    # Every request reached the server exactly once.
    assert misbehaving.settled(lambda: misbehaving.heads("/one-per-connection"), 10) == 10
