"""File descriptors: ten thousand connections at once against nginx are all counted, and
when the open-file limit is too low horde says so before the run (closed model) or counts
the requests it could not send as unsent KOs and still writes its results (open model)."""

import resource
import textwrap

import jsonschema

from fault_fixtures import error_kinds, misbehaving, run_measured  # noqa: F401 (fixtures)

PRLIMIT_300 = ("prlimit", "--nofile=300:300")


def test_ten_thousand_connections_send_exactly_n_requests_and_nginx_serves_them(horde, nginx):
    before = nginx.requests_served()
    result = horde("http", nginx.url + "/", "-c", "10000", "-n", "20000", "-q", timeout=120)
    if result.code == 2:
        # Only when this machine cannot hold 10,000 connections may horde refuse, naming why.
        assert "open-file limit" in result.stderr
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[1] < 10_200
        return
    assert result.code == 0, result.stderr
    summary = result.summary
    assert summary["run"]["status"] == "limit_reached"
    assert (summary["global"]["count"], summary["global"]["ok"]) == (20000, 20000), summary["errors"]
    # As wrk's -c: every connection is opened (-n allows it), each used, each user finished.
    assert summary["users"]["started"] == summary["users"]["finished"] == 10000
    assert summary["connections"]["opened"] == 10000
    assert nginx.requests_served() - before == 20000


def test_more_connections_than_the_open_file_limit_allows_is_refused_before_the_run(run_measured, misbehaving):
    result = run_measured("http", misbehaving.url("/ok"), "-c", "1000", "-d", "1s", "-q", prefix=PRLIMIT_300)
    assert result.code == 2, result.stderr
    assert "open-file limit" in result.stderr
    assert "1000" in result.stderr
    # Refused before anything ran: no results, no request.
    assert not list(result.results_dir.glob("*/summary.json"))
    assert misbehaving.accepted() == 0


def test_an_open_model_past_the_open_file_limit_counts_unsent_kos_and_writes_its_results(
    run_measured, misbehaving, tmp_path, summary_schema
):
    sim = tmp_path / "descriptors.py"
    sim.write_text(textwrap.dedent(f"""
        from horde import constant_users_per_sec, http, scenario, setup

        stall = http("stall").get("/stall")
        setup(scenario("arrivals").exec(stall).inject(constant_users_per_sec(2000).during(2)),
              protocol=http.base_url("{misbehaving.base}").request_timeout(5), name="descriptors")
    """))
    result = run_measured("run", sim, "-q", prefix=PRLIMIT_300, timeout=60)
    assert result.code == 0, result.stderr
    summary = result.summary
    jsonschema.validate(summary, summary_schema)
    assert summary["run"]["status"] == "completed"
    assert summary["users"]["started"] == 4000
    g = summary["global"]
    assert (g["count"], g["ok"], g["ko"]) == (4000, 0, 4000), summary["errors"]
    kinds = error_kinds(summary)
    assert set(kinds) == {"too_many_open_files", "request_timeout"}, summary["errors"]
    # The requests without a descriptor were never sent: KOs, without a latency, and not in
    # flight either.
    assert kinds["too_many_open_files"] == g["unsent"] > 0
    assert g["interrupted"] == 0
    sent = g["count"] - g["unsent"]
    assert kinds["request_timeout"] == sent == g["latency"]["all"]["count"]
    # At most the limit's worth of connections were open at once.
    assert 0 < sent < 300
    assert misbehaving.settled(lambda: misbehaving.heads("/stall"), sent) == sent
    # Stalled for the 5 s timeout, then done.
    assert 5 <= result.wall_seconds < 12


def test_throttle_timers_leave_the_descriptors_connections_need(run_measured, misbehaving):
    # About 220 descriptors for connections and timers: 150 throttled users need 150 for
    # connections; their precise timers only take what is left (tokio's timer stands in).
    result = run_measured("http", misbehaving.url("/ok"), "-c", "150", "--rate", "1000", "-n", "1500", "-q",
                          prefix=PRLIMIT_300)
    assert result.code == 0, result.stderr
    g = result.summary["global"]
    assert (g["count"], g["ok"]) == (1500, 1500), result.summary["errors"]
    assert result.summary["connections"]["opened"] == 150
