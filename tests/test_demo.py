"""`horde demo`, the README's first command: the seed-000 JSF journey against the built-in
target, which serves it over HTTPS (a certificate made at start, verified) and HTTP/2."""

OK = 0


def test_demo_runs_the_journey_over_https_and_http2(horde):
    result = horde("demo", "--users", "3")
    assert result.code == OK, result.stderr
    summary = result.summary
    # Nine requests per user, as in examples/jsf_journey.py, and not one KO.
    assert (summary["global"]["count"], summary["global"]["ko"]) == (27, 0), summary["errors"]
    assert summary["connections"]["opened"] == summary["connections"]["http2"] == 3
    assert summary["plan"]["protocol"]["tls"]["verify"] is not False
    assert "(HTTPS, HTTP/2)" in result.stderr
    assert "connections speaking HTTP/2" in result.stdout
    assert "tls" in result.stdout
