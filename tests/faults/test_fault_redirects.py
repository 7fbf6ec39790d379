"""Redirects that cannot end well: a loop stops at the redirect limit with a
too_many_redirects KO; a Location that cannot be followed is one invalid_redirect KO for
the exchange that brought it (never an OK and a KO for the same exchange)."""

from fault_fixtures import error_kinds, misbehaving  # noqa: F401 (fixture)

MAX_REDIRECTS = 20  # the protocol's default


def test_a_redirect_loop_ends_with_too_many_redirects_on_the_last_hop(horde, misbehaving):
    url = misbehaving.url("/redirect-loop")
    result = horde("http", url, "-c", "1", "-n", "3", "-q")
    assert result.code == 0, result.stderr
    summary = result.summary
    assert summary["run"]["status"] == "limit_reached"
    rows = {r["name"]: r for r in summary["requests"]}
    hops = [f"GET {url}"] + [f"GET {url} Redirect {i}" for i in range(1, MAX_REDIRECTS + 1)]
    assert list(rows) == hops
    # -n counts the requests a user makes; each one is followed hop by hop: 20 redirects
    # followed (OK), the 21st refused (KO), one row per hop.
    for name in hops[:-1]:
        assert (rows[name]["count"], rows[name]["ok"], rows[name]["ko"]) == (3, 3, 0), name
    assert (rows[hops[-1]]["count"], rows[hops[-1]]["ko"]) == (3, 3)
    assert error_kinds(summary) == {"too_many_redirects": 3}
    assert [e["request"] for e in summary["errors"]] == [hops[-1]]
    exchanges = 3 * (MAX_REDIRECTS + 1)
    assert (summary["global"]["count"], summary["global"]["ok"], summary["global"]["ko"]) == (exchanges, exchanges - 3, 3)
    assert misbehaving.settled(lambda: misbehaving.heads("/redirect-loop"), exchanges) == exchanges


def assert_one_ko_per_unfollowable_redirect(result, server, path):
    url = server.url(path)
    assert result.code == 0, result.stderr
    summary = result.summary
    assert summary["run"]["status"] == "limit_reached"
    # One exchange each, one row, one outcome: 10 counted, 10 KO, no hop row.
    assert [r["name"] for r in summary["requests"]] == [f"GET {url}"]
    row = result.row(f"GET {url}")
    assert (row["count"], row["ok"], row["ko"]) == (10, 0, 10)
    assert (summary["global"]["count"], summary["global"]["ok"], summary["global"]["ko"]) == (10, 0, 10)
    assert summary["global"]["latency"]["all"]["count"] == 10
    assert error_kinds(summary) == {"invalid_redirect": 10}, summary["errors"]
    assert server.settled(lambda: server.heads(path), 10) == 10
    assert summary["connections"]["opened"] == server.accepted()


def test_a_location_that_does_not_parse_is_one_invalid_redirect_ko_per_exchange(horde, misbehaving):
    result = horde("http", misbehaving.url("/redirect-bad"), "-c", "2", "-n", "10", "-q")
    assert_one_ko_per_unfollowable_redirect(result, misbehaving, "/redirect-bad")


def test_a_redirect_to_ftp_is_one_invalid_redirect_ko_per_exchange(horde, misbehaving):
    result = horde("http", misbehaving.url("/redirect-ftp"), "-c", "2", "-n", "10", "-q")
    assert_one_ko_per_unfollowable_redirect(result, misbehaving, "/redirect-ftp")
