"""Page resources and batches against nginx: fetched concurrently (the server's log shows the
requests overlapping, over several HTTP/1.1 connections or as streams of one HTTP/2
connection), each in its own row, counted by the server, with the page's row timing the page
alone and a group timing the whole. Each slow/ resource takes about a second to send (nginx
limit_rate), so four fetched one after another would take four seconds."""

import json
import textwrap

import tls_material

OK = 0
RESOURCES = tls_material.SITE_RESOURCES
ONE_RESOURCE_S = 0.9  # at least, at 20 KB/s for 25,000 bytes


def max_overlap(entries):
    """The most requests of ``entries`` in flight at one moment."""
    events = sorted([(e["start"], 1) for e in entries] + [(e["end"], -1) for e in entries],
                    key=lambda event: (event[0], event[1]))
    in_flight = most = 0
    for _, change in events:
        in_flight += change
        most = max(most, in_flight)
    return most


def new_entries(tls_nginx, server, before):
    return tls_nginx.site_log(server)[before:]


def simulation(tmp_path, protocol, chain, users=1):
    sim = tmp_path / "sim.py"
    sim.write_text(textwrap.dedent(f"""
        from horde import *
        protocol = {protocol}
        scn = scenario("site").exec({chain})
        setup(scn.inject(at_once_users({users})), protocol=protocol)
    """))
    return sim


def declared_page():
    resources = ", ".join(f'http("{name}").get("/site/{name}").check(status().is_(200))' for name in RESOURCES)
    return f'group("page with resources", http("page").get("/site/index.html").resources({resources}))'


def rows(summary):
    return {r["name"]: r for r in summary["requests"]}


def max_ms(row):
    return row["latency"]["all"]["max_us"] / 1000


def min_ms(row):
    return row["latency"]["all"]["min_us"] / 1000


def test_http1_resources_go_over_several_connections_at_once(horde, tls_nginx, tmp_path):
    before = len(tls_nginx.site_log("site"))
    served = tls_nginx.requests_served()
    sim = simulation(tmp_path, f'http.base_url("{tls_nginx.url("site")}")', declared_page())
    result = horde("run", sim)
    assert result.code == OK, result.stderr
    summary = result.summary
    assert (summary["global"]["ok"], summary["global"]["ko"]) == (5, 0), summary["errors"]
    assert tls_nginx.requests_served() - served == 5
    entries = new_entries(tls_nginx, "site", before)
    resources = [e for e in entries if "/slow/" in e["uri"]]
    assert sorted(e["uri"] for e in resources) == sorted(f"/site/{name}" for name in RESOURCES)
    # All four in flight together, each on its own HTTP/1.1 connection (the page's is reused).
    assert max_overlap(resources) == 4, resources
    assert len({e["connection"] for e in resources}) == 4
    assert {e["protocol"] for e in entries} == {"HTTP/1.1"}
    assert summary["connections"]["opened"] == 4
    by_name = rows(summary)
    # The page's row is the page alone; the group holds the page and its resources, which took
    # about one resource's time, not four.
    assert max_ms(by_name["page with resources / page"]) < ONE_RESOURCE_S * 1000
    for name in RESOURCES:
        assert min_ms(by_name[f"page with resources / {name}"]) >= ONE_RESOURCE_S * 1000
    group = summary["groups"][0]
    assert group["name"] == "page with resources" and group["ok"] == 1
    assert ONE_RESOURCE_S * 1000 <= group["duration"]["max_us"] / 1000 < 2 * ONE_RESOURCE_S * 1000


def test_http2_resources_are_streams_of_one_connection(horde, tls_nginx, tmp_path):
    before = len(tls_nginx.site_log("tls"))
    served = tls_nginx.requests_served()
    ca = tls_nginx.files["ca"][0]
    protocol = f'http.base_url("{tls_nginx.url("tls")}").ca_file("{ca}").enable_http2()'
    result = horde("run", simulation(tmp_path, protocol, declared_page(), users=2))
    assert result.code == OK, result.stderr
    summary = result.summary
    assert (summary["global"]["ok"], summary["global"]["ko"]) == (10, 0), summary["errors"]
    assert tls_nginx.requests_served() - served == 10
    entries = new_entries(tls_nginx, "tls", before)
    assert {e["protocol"] for e in entries} == {"HTTP/2.0"}
    # Each user's page and resources on its one connection, the resources at once.
    assert summary["connections"]["opened"] == summary["connections"]["http2"] == 2
    for connection in {e["connection"] for e in entries}:
        mine = [e for e in entries if e["connection"] == connection]
        assert len(mine) == 5
        assert max_overlap([e for e in mine if "/slow/" in e["uri"]]) == 4
    group = summary["groups"][0]
    assert group["ok"] == 2 and group["duration"]["max_us"] / 1000 < 2 * ONE_RESOURCE_S * 1000


def test_inferred_resources_are_fetched_once_each_in_rows_named_by_url(horde, tls_nginx, tmp_path):
    before = len(tls_nginx.site_log("site"))
    base = tls_nginx.url("site")
    protocol = f'http.base_url("{base}").infer_html_resources()'
    chain = 'http("home").get("/site/index.html").check(css("h1").is_("horde site")), http("other").get("/site/other.html")'
    result = horde("run", simulation(tmp_path, protocol, chain))
    assert result.code == OK, result.stderr
    summary = result.summary
    assert (summary["global"]["ok"], summary["global"]["ko"]) == (6, 0), summary["errors"]
    by_name = rows(summary)
    expected = {f"{base}/site/{name}" for name in RESOURCES}
    assert expected <= set(by_name), sorted(by_name)
    assert all(by_name[url]["count"] == 1 for url in expected)
    # The link to other.html is not a resource: only the chain's own request fetched it.
    assert by_name["other"]["count"] == 1 and len(by_name) == 2 + len(RESOURCES)
    resources = [e for e in new_entries(tls_nginx, "site", before) if "/slow/" in e["uri"]]
    assert len(resources) == 4 and max_overlap(resources) == 4


def test_a_batch_is_sent_at_once_and_its_saved_values_flow(horde, tls_nginx, tmp_path):
    before = len(tls_nginx.site_log("site"))
    served = tls_nginx.requests_served()
    chain = (
        'batch(http("css").get("/site/slow/site.css"), http("js").get("/site/slow/app.js"),'
        ' http("page").get("/site/index.html").check(regex("<title>([^<]+)</title>").save_as("title"))),'
        ' http("after").get("/site/other.html?title=${title}")'
    )
    result = horde("run", simulation(tmp_path, f'http.base_url("{tls_nginx.url("site")}")', chain))
    assert result.code == OK, result.stderr
    summary = result.summary
    assert (summary["global"]["ok"], summary["global"]["ko"]) == (4, 0), summary["errors"]
    assert tls_nginx.requests_served() - served == 4
    entries = new_entries(tls_nginx, "site", before)
    assert max_overlap([e for e in entries if "/slow/" in e["uri"]]) == 2
    assert entries[-1]["uri"] == "/site/other.html?title=horde%20site"


def test_a_failing_resource_is_a_ko_on_its_row_and_the_rest_still_arrive(horde, tls_nginx, tmp_path):
    from conftest import free_port

    dead = f"http://127.0.0.1:{free_port()}/gone.js"
    chain = (
        'http("page").get("/site/index.html").resources(http("missing").get("/site/nothing.css").check(status().is_(200)),'
        f' http("dead").get("{dead}"), http("css").get("/site/slow/site.css"))'
    )
    result = horde("run", simulation(tmp_path, f'http.base_url("{tls_nginx.url("site")}")', chain))
    assert result.code == OK, result.stderr
    summary = result.summary
    by_name = rows(summary)
    assert (by_name["page"]["ok"], by_name["css"]["ok"]) == (1, 1)
    assert (by_name["missing"]["ko"], by_name["dead"]["ko"]) == (1, 1)
    assert {e["kind"] for e in summary["errors"]} == {"check_failed", "connect_refused"}


def test_batches_through_goaway_are_resent_and_the_server_counts_each_once(horde, tls_nginx, tmp_path):
    # The server ends each connection after 5 streams: streams of a batch above its last are
    # refused by the GOAWAY, and go again on a new connection.
    served = tls_nginx.requests_served()
    chain = "repeat(5, batch(" + ", ".join(f'http("r{i}").get("/")' for i in range(4)) + "))"
    protocol = f'http.base_url("{tls_nginx.url("h2c_goaway")}").http2_prior_knowledge()'
    result = horde("run", simulation(tmp_path, protocol, chain))
    assert result.code == OK, result.stderr
    summary = result.summary
    assert (summary["global"]["ok"], summary["global"]["ko"]) == (20, 0), summary["errors"]
    assert tls_nginx.requests_served() - served == 20
    assert summary["connections"]["opened"] == 4


def test_quick_mode_streams_on_h2c(horde, tls_nginx):
    served = tls_nginx.requests_served()
    result = horde("http", tls_nginx.url("h2c") + "/", "--http2", "--streams", "8", "-c", "2", "-n", "400", "-q")
    assert result.code == OK, result.stderr
    summary = result.summary
    assert (summary["global"]["ok"], summary["global"]["ko"]) == (400, 0), summary["errors"]
    assert tls_nginx.requests_served() - served == 400
    assert summary["connections"]["opened"] == summary["connections"]["http2"] == 2


def test_quick_mode_streams_need_http2(horde, tls_nginx):
    result = horde("http", tls_nginx.url("site") + "/", "--streams", "4", "-n", "8")
    assert result.code == 2
    assert "--streams: needs --http2" in result.stderr


def test_plan_errors_name_resources_of_resources_and_empty_batches(horde, tmp_path):
    request = {"name": "r", "method": "GET", "url": "http://127.0.0.1:1/"}
    plan = {
        "version": 1, "name": "bad",
        "protocol": {"max_connections_per_host": 0},
        "scenarios": [{"name": "s", "injection": [{"type": "at_once_users", "users": 1}], "steps": [
            {"type": "request", **request, "resources": [{**request, "resources": [request]}]},
            {"type": "batch", "requests": []},
        ]}],
    }
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(plan))
    result = horde("run", path)
    assert result.code == 2
    for expected in ("scenarios[0].steps[0].resources[0].resources: a resource has no resources of its own",
                     "scenarios[0].steps[1].requests: a batch needs at least one request",
                     "protocol.max_connections_per_host: must be from 1 to 64"):
        assert expected in result.stderr, result.stderr
