"""HTTP/2 against nginx: negotiated by ALPN on https, h2c with prior knowledge on http://, the
fallback to HTTP/1.1 when the server has no HTTP/2, and the ways an HTTP/2 exchange fails
(a server that does not speak it, a stream reset, a GOAWAY). Counts are nginx's own."""

import json
import textwrap

OK = 0


def ca(tls_nginx):
    return str(tls_nginx.files["ca"][0])


def kinds(summary):
    return {e["kind"]: e["count"] for e in summary["errors"]}


def test_http2_negotiated_over_tls_counts_match_nginx(horde, tls_nginx, summary_schema):
    import jsonschema

    before = tls_nginx.requests_served()
    result = horde("http", tls_nginx.url() + "/", "--http2", "-c", "3", "-n", "600", "--cacert", ca(tls_nginx))
    assert result.code == OK, result.stderr
    summary = result.summary
    jsonschema.validate(summary, summary_schema)
    assert (summary["global"]["ok"], summary["global"]["ko"]) == (600, 0), summary["errors"]
    assert tls_nginx.requests_served() - before == 600
    assert summary["connections"]["opened"] == summary["connections"]["http2"] == 3
    assert summary["plan"]["protocol"]["http2"] == "negotiate"
    assert "connections speaking HTTP/2" in result.stdout
    # Bytes are counted on the wire: frames of a request and its response, not zero.
    assert summary["global"]["bytes_sent"] > 0 and summary["global"]["bytes_received"] > 0


def test_h2c_with_prior_knowledge_one_connection(horde, tls_nginx):
    before = tls_nginx.requests_served()
    result = horde("http", tls_nginx.url("h2c") + "/", "--http2", "-c", "1", "-n", "500", "-q")
    assert result.code == OK, result.stderr
    summary = result.summary
    assert (summary["global"]["ok"], summary["global"]["ko"]) == (500, 0), summary["errors"]
    assert tls_nginx.requests_served() - before == 500
    assert summary["connections"]["http2"] == 1
    assert summary["plan"]["protocol"]["http2"] == "prior_knowledge"


def test_a_tls_server_without_http2_gets_http1_and_the_summary_says_so(horde, tls_nginx):
    result = horde("http", tls_nginx.url("http1_only") + "/", "--http2", "-c", "2", "-n", "20", "--cacert", ca(tls_nginx))
    assert result.code == OK, result.stderr
    summary = result.summary
    assert (summary["global"]["ok"], summary["global"]["ko"]) == (20, 0), summary["errors"]
    connections = summary["connections"]
    assert connections["http2"] == 0
    # Every connection opened is one offer declined. Both users usually connect, but on a busy
    # machine one may have spent the 20 requests before the other's worker starts.
    assert connections["http2_declined_by_server"] == connections["opened"] >= 1, connections
    declined = connections["opened"]
    assert f"HTTP/2 was offered but the server chose HTTP/1.1 on {declined} connections" in result.stdout


def test_prior_knowledge_against_http1_servers_is_a_ko_naming_why(horde, tls_nginx, tmp_path):
    # Cleartext: the HTTP/1.1 server answers the preface with a 400 in HTTP/1.
    result = horde("http", tls_nginx.url("redirect") + "/", "--http2", "-c", "1", "-n", "3", "-q")
    assert result.code == OK, result.stderr
    assert kinds(result.summary) == {"http2_not_supported": 3}, result.summary["errors"]
    assert "does not speak HTTP/2 with prior knowledge" in result.summary["errors"][0]["message"]
    # Over TLS, prior knowledge offers h2 alone, and the server picks nothing.
    plan = {
        "version": 1, "name": "h2 only",
        "protocol": {"http2": "prior_knowledge", "tls": {"ca_file": ca(tls_nginx)}},
        "scenarios": [{"name": "s", "injection": [{"type": "at_once_users", "users": 1}],
                       "steps": [{"type": "request", "name": "home", "method": "GET",
                                  "url": tls_nginx.url("http1_only") + "/"}]}],
    }
    plan_file = tmp_path / "h2_only.json"
    plan_file.write_text(json.dumps(plan))
    result = horde("run", plan_file)
    assert result.code == OK, result.stderr
    assert kinds(result.summary) == {"http2_not_supported": 1}, result.summary["errors"]
    assert "did not pick h2 by ALPN" in result.summary["errors"][0]["message"]


def test_a_stream_reset_is_a_ko_of_its_kind_and_the_connection_carries_on(horde, tls_nginx):
    result = horde("http", tls_nginx.url("h2c") + "/reset", "--http2", "-c", "1", "-n", "4", "-q")
    assert result.code == OK, result.stderr
    assert kinds(result.summary) == {"stream_reset": 4}, result.summary["errors"]
    assert "RST_STREAM" in result.summary["errors"][0]["message"]


def test_goaway_after_five_requests_moves_on_to_a_new_connection_without_a_ko(horde, tls_nginx):
    before = tls_nginx.requests_served()
    result = horde("http", tls_nginx.url("h2c_goaway") + "/", "--http2", "-c", "1", "-n", "100", "-q")
    assert result.code == OK, result.stderr
    summary = result.summary
    assert (summary["global"]["ok"], summary["global"]["ko"]) == (100, 0), summary["errors"]
    assert tls_nginx.requests_served() - before == 100
    # nginx ends each connection after 5 requests: 20 connections, none of its requests lost.
    assert summary["connections"]["opened"] == 20


def test_dsl_enable_http2_with_checks_on_the_body(horde, tls_nginx, tmp_path):
    simulation = tmp_path / "h2.py"
    simulation.write_text(textwrap.dedent(f"""
        from horde import at_once_users, http, regex, scenario, setup, status
        home = http("home").get("/").check(status().is_("200"), regex("(h.llo)").save_as("word"))
        echo = http("echo").get("/?w=${{word}}").check(status().is_("200"))
        protocol = http.base_url("{tls_nginx.url()}").ca_file("{ca(tls_nginx)}").enable_http2()
        setup(scenario("h2").exec(home, echo).inject(at_once_users(2)), protocol=protocol)
    """))
    result = horde("run", simulation)
    assert result.code == OK, result.stderr
    summary = result.summary
    assert (summary["global"]["ok"], summary["global"]["ko"]) == (4, 0), summary["errors"]
    assert summary["connections"]["http2"] == 2
