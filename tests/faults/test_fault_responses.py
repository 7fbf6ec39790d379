"""Response faults: malformed heads and framings are KOs of their kind, counted once each;
unusual but valid responses (1xx first, HTTP/1.0 ended by a close, a body dribbled byte by
byte, 100 MB) are OK; a body a check must keep is bounded in memory."""

import textwrap

from fault_fixtures import assert_every_request_failed, error_kinds, misbehaving, run_measured  # noqa: F401 (fixtures)
from misbehaving_server import BIG_SIZE, CONTINUE, DRIBBLE, DRIBBLE_INTERVAL, HTTP10, OK

LIMIT_REACHED = "limit_reached"
# Peak resident memory allowed for a run that reads 100 MB bodies.
MAX_RSS_KIB = 200 * 1024


def assert_every_request_ok(result, server, path, n):
    assert result.code == 0, result.stderr
    summary = result.summary
    assert summary["run"]["status"] == LIMIT_REACHED
    assert (summary["global"]["count"], summary["global"]["ok"]) == (n, n), summary["errors"]
    assert server.answered(path) == server.settled(lambda: server.heads(path), n) == n
    assert summary["connections"]["opened"] == server.accepted()


def test_a_status_line_without_a_numeric_code_is_an_invalid_response(horde, misbehaving):
    result = horde("http", misbehaving.url("/bad-status"), "-c", "2", "-n", "10", "-q")
    assert_every_request_failed(result, misbehaving, "/bad-status", 10, "invalid_response")


def test_a_header_line_without_a_colon_is_an_invalid_response(horde, misbehaving):
    result = horde("http", misbehaving.url("/bad-header"), "-c", "2", "-n", "10", "-q")
    assert_every_request_failed(result, misbehaving, "/bad-header", 10, "invalid_response")


def test_two_different_content_lengths_are_an_invalid_response(horde, misbehaving):
    result = horde("http", misbehaving.url("/conflicting-length"), "-c", "2", "-n", "10", "-q")
    assert_every_request_failed(result, misbehaving, "/conflicting-length", 10, "invalid_response")


def test_a_body_shorter_than_its_content_length_is_a_connection_closed_ko(horde, misbehaving):
    result = horde("http", misbehaving.url("/short-body"), "-c", "2", "-n", "10", "-q")
    assert_every_request_failed(result, misbehaving, "/short-body", 10, "connection_closed")
    # Bytes of the response had arrived: not the shape of a stale keep-alive connection.
    assert result.summary["connections"]["retried_on_fresh_connection"] == 0


def test_a_chunk_size_that_is_not_hexadecimal_is_an_invalid_response(horde, misbehaving):
    result = horde("http", misbehaving.url("/chunked-bad"), "-c", "2", "-n", "10", "-q")
    assert_every_request_failed(result, misbehaving, "/chunked-bad", 10, "invalid_response")


def test_an_unrequested_101_is_an_invalid_response(horde, misbehaving):
    result = horde("http", misbehaving.url("/unrequested-101"), "-c", "2", "-n", "10", "--timeout", "2s", "-q")
    assert_every_request_failed(result, misbehaving, "/unrequested-101", 10, "invalid_response")


def test_a_100_continue_before_the_response_is_skipped(horde, misbehaving):
    result = horde("http", misbehaving.url("/100-continue"), "-c", "2", "-n", "10", "-q")
    assert_every_request_ok(result, misbehaving, "/100-continue", 10)
    summary = result.summary
    # Both responses were read whole, and the connection stayed usable.
    assert summary["global"]["bytes_received"] == 10 * (len(CONTINUE) + len(OK))
    assert summary["connections"]["opened"] == 2


def test_an_http10_response_without_length_ends_at_the_close(horde, misbehaving):
    result = horde("http", misbehaving.url("/http10"), "-c", "2", "-n", "10", "-q")
    assert_every_request_ok(result, misbehaving, "/http10", 10)
    summary = result.summary
    assert summary["global"]["bytes_received"] == 10 * len(HTTP10)
    # The close ends each response: one connection per request.
    assert summary["connections"]["opened"] == 10
    assert misbehaving.accepted() == 10


def test_a_response_dribbled_byte_by_byte_is_slow_but_ok(horde, misbehaving):
    result = horde("http", misbehaving.url("/dribble"), "-c", "2", "-n", "2", "-q")
    assert_every_request_ok(result, misbehaving, "/dribble", 2)
    summary = result.summary
    dribbling_us = (len(DRIBBLE) - 1) * DRIBBLE_INTERVAL * 1e6
    latency = summary["global"]["latency"]["ok"]
    assert dribbling_us * 0.95 <= latency["min_us"] <= latency["max_us"] < dribbling_us * 1.5
    # The time went into receiving, after a quick first byte.
    phases = summary["global"]["phases"]
    assert phases["receive"]["mean_us"] >= dribbling_us * 0.95
    assert phases["wait"]["mean_us"] < 200_000
    assert summary["global"]["bytes_received"] == 2 * len(DRIBBLE)


def test_a_100_mb_body_nobody_checks_is_read_in_bounded_memory(run_measured, misbehaving):
    result = run_measured("http", misbehaving.url("/big"), "-c", "1", "-n", "2", "-q")
    assert_every_request_ok(result, misbehaving, "/big", 2)
    assert result.summary["global"]["bytes_received"] >= 2 * BIG_SIZE
    assert result.max_rss_kib < MAX_RSS_KIB, f"peak RSS {result.max_rss_kib} KiB"


def test_a_100_mb_body_a_check_needs_is_a_body_too_large_ko_in_bounded_memory(run_measured, misbehaving, tmp_path):
    sim = tmp_path / "big_body.py"
    sim.write_text(textwrap.dedent(f"""
        from horde import at_once_users, http, scenario, setup, substring

        big = http("big").get("/big").check(substring("x"))
        setup(scenario("big body").exec(big).inject(at_once_users(1)),
              protocol=http.base_url("{misbehaving.base}"), name="big_body")
    """))
    result = run_measured("run", sim, "-q")
    assert result.code == 0, result.stderr
    summary = result.summary
    assert summary["run"]["status"] == "completed"
    row = result.row("big")
    assert (row["count"], row["ko"]) == (1, 1)
    assert error_kinds(summary) == {"body_too_large": 1}, summary["errors"]
    assert misbehaving.settled(lambda: misbehaving.heads("/big"), 1) == 1
    assert result.max_rss_kib < MAX_RSS_KIB, f"peak RSS {result.max_rss_kib} KiB"
