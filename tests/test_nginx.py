"""Quick mode and simulations against a real nginx: horde's count is nginx's count."""

import json

import jsonschema


def test_quick_mode_sends_exactly_n_requests(horde, nginx, summary_schema):
    before = nginx.requests_served()
    result = horde("http", nginx.url + "/", "-c", "8", "-n", "2500", "-q")
    assert result.code == 0, result.stderr
    summary = result.summary
    jsonschema.validate(summary, summary_schema)
    assert summary["run"]["status"] == "limit_reached"
    assert summary["global"]["count"] == 2500
    assert summary["global"]["ok"] == 2500
    assert nginx.requests_served() - before == 2500
    # Each connection is kept alive: 8 connections opened in all.
    assert summary["global"]["phases"]["connect"]["count"] == 8
    assert summary["global"]["bytes_received"] > 2500 * 100


def test_quick_mode_for_a_duration_counts_what_nginx_served(horde, nginx):
    before = nginx.requests_served()
    result = horde("http", nginx.url + "/", "-c", "4", "-d", "1s", "-q")
    assert result.code == 0, result.stderr
    summary = result.summary
    count = summary["global"]["count"]
    assert count > 1000
    # The run ends at -d: requests in flight then are counted as interrupted (nginx may have
    # answered them), never lost.
    assert summary["run"]["status"] == "limit_reached"
    assert 1 <= summary["global"]["interrupted"] <= 4
    served = nginx.requests_served() - before
    assert count <= served <= count + summary["global"]["interrupted"]


def test_quick_mode_with_a_rate_paces_requests(horde, nginx):
    result = horde("http", nginx.url + "/", "-c", "4", "-d", "2s", "--rate", "200", "-q")
    assert result.code == 0, result.stderr
    summary = result.summary
    assert 390 <= summary["global"]["count"] <= 410
    assert summary["scheduling"]["scheduled_starts"] >= summary["global"]["count"]


def test_redirects_are_followed_and_counted_per_hop(horde, nginx):
    before = nginx.requests_served()
    result = horde("http", nginx.url + "/redirect", "-c", "2", "-n", "10", "-q")
    assert result.code == 0, result.stderr
    rows = {r["name"]: r for r in result.summary["requests"]}
    assert rows[f"GET {nginx.url}/redirect"]["ok"] == 10
    assert rows[f"GET {nginx.url}/redirect Redirect 1"]["ok"] == 10
    assert nginx.requests_served() - before == 20


def test_a_refused_connection_is_a_ko_with_its_reason(horde):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = horde("http", f"http://127.0.0.1:{port}/", "-c", "2", "-n", "20", "-q")
    assert result.code == 0, result.stderr
    summary = result.summary
    assert summary["global"]["ko"] == 20
    assert summary["errors"][0]["kind"] == "connect_refused"
    assert summary["errors"][0]["count"] == 20


def test_the_time_series_adds_up_to_the_summary(horde, nginx):
    import csv
    import json

    result = horde("http", nginx.url + "/", "-c", "4", "-d", "2500ms", "--rate", "400", "-q")
    assert result.code == 0, result.stderr
    directory = next(result.results_dir.iterdir())
    with open(directory / "timeseries.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    all_rows = [r for r in rows if r["name"] == "all"]
    # 2.5 s in 1 s intervals: 3 intervals (the last one partial), each with an "all" row.
    assert [int(r["start_ms"]) for r in all_rows] == [0, 1000, 2000]
    assert sum(int(r["ok"]) + int(r["ko"]) for r in all_rows) == result.summary["global"]["count"]
    # Paced at 400 req/s, a full interval holds 400 requests.
    assert 390 <= int(all_rows[1]["ok"]) <= 410
    assert set(rows[0]) >= {"p50_us", "p99_us", "rps", "users_active"}
    samples = [json.loads(line) for line in (directory / "timeseries.jsonl").read_text().splitlines()]
    assert len(samples) == len(rows)
    assert samples[1]["latency"]["count"] == int(rows[1]["ok"]) + int(rows[1]["ko"])
    # The last interval is rated over the half second it measured, not its whole second: still
    # about 400 req/s, not 200 (the run's clock ends a little after 2.5 s).
    last = [s for s in samples if s["name"] == "all"][-1]
    assert 500 <= last["duration_ms"] <= 600, last
    assert last["duration_ms"] <= result.summary["run"]["duration_ms"] - 2000
    assert 340 <= float(all_rows[2]["rps"]) <= 410, all_rows[2]


def test_one_connection_on_two_workers_sends_all_of_n(horde, nginx):
    # One worker has no user: -n is the run's, not split between workers (it sent half).
    before = nginx.requests_served()
    result = horde("http", nginx.url + "/", "-c", "1", "-n", "5000", "--workers", "2", "-q")
    assert result.code == 0, result.stderr
    assert result.summary["global"]["count"] == 5000
    assert nginx.requests_served() - before == 5000


def test_one_connection_on_two_workers_keeps_the_whole_rate(horde, nginx):
    result = horde("http", nginx.url + "/", "-c", "1", "--rate", "500", "-d", "2s", "--workers", "2", "-q")
    assert result.code == 0, result.stderr
    # 500 a second for 2 s, give or take the one in flight at the end (it was 250 a second).
    assert 990 <= result.summary["global"]["count"] <= 1001


def test_more_connections_than_requests_makes_no_more_users_than_it_can_use(horde, nginx):
    before = nginx.requests_served()
    result = horde("http", nginx.url + "/", "-c", "1000000", "-n", "1", "-q")
    assert result.code == 0, result.stderr
    summary = result.summary
    assert summary["global"]["count"] == 1 and summary["users"]["started"] == 1
    assert "using 1 connections" in result.stderr
    assert nginx.requests_served() - before == 1


def test_a_host_header_of_ones_own_replaces_the_urls(horde, nginx):
    # Two Host headers would be a 400 from nginx for every request.
    result = horde("http", nginx.url + "/", "-H", "Host: example.org", "-c", "1", "-n", "3", "-q")
    assert result.code == 0, result.stderr
    assert (result.summary["global"]["ok"], result.summary["global"]["ko"]) == (3, 0), result.summary["errors"]


def test_a_request_that_does_not_follow_its_redirect_reads_it(horde, nginx, tmp_path):
    # Gatling's per-request disableFollowRedirect: the 302 is the response; a value taken out of
    # its Location (header_regex) is the next request's path. Without a status check, a 3xx
    # fails the implicit 2xx check, as in Gatling.
    sim = tmp_path / "sim.py"
    sim.write_text(f'''
from horde import *
scn = scenario("s").exec(
    http("start").get("/redirect").disable_follow_redirect()
    .check(status().is_(302), header_regex("Location", "(/[a-z]+)$").save_as("next")),
    http("next").get("${{next}}").check(status().is_(200)),
    http("unchecked").get("/redirect").disable_follow_redirect(),
)
setup(scn.inject(at_once_users(3)), protocol=http.base_url("{nginx.url}"))
''')
    before = nginx.requests_served()
    result = horde("run", sim)
    assert result.code == 0, result.stderr
    rows = {r["name"]: r for r in result.summary["requests"]}
    # No hop rows: nothing was followed.
    assert set(rows) == {"start", "next", "unchecked"}
    assert (rows["start"]["ok"], rows["next"]["ok"]) == (3, 3)
    assert (rows["unchecked"]["ok"], rows["unchecked"]["ko"]) == (0, 3)
    assert "expected 2xx or 304, found 302" in json.dumps(result.summary["errors"])
    assert nginx.requests_served() - before == 9
