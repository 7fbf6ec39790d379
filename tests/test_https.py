"""HTTPS against nginx with certificates the tests make (tests/tls_material.py): counts are
nginx's own, every certificate problem is a KO of its kind (and passes with verification off),
mutual TLS, redirects from http to https, IPv6 and host names, TLS sessions per user, the
`tls` phase in the results; a certificate made by `openssl req -x509` as users make it, trusted
with --cacert as curl trusts it; and run's and sweep's transport flags, read on the target's
side."""

import subprocess
import textwrap

import pytest

from conftest import free_port, start_nginx, stop_process

OK = 0


def ca(tls_nginx):
    return str(tls_nginx.files["ca"][0])


def kinds(summary):
    return {e["kind"]: e["count"] for e in summary["errors"]}


def test_https_counts_are_nginx_own_and_the_handshake_is_its_own_phase(horde, tls_nginx, summary_schema):
    import jsonschema

    before = tls_nginx.requests_served()
    result = horde("http", tls_nginx.url() + "/", "-c", "4", "-n", "400", "--cacert", ca(tls_nginx), "-q")
    assert result.code == OK, result.stderr
    summary = result.summary
    jsonschema.validate(summary, summary_schema)
    assert (summary["global"]["count"], summary["global"]["ok"]) == (400, 400), summary["errors"]
    assert tls_nginx.requests_served() - before == 400
    # One handshake per connection, each a phase of its own, beside connect.
    phases = summary["global"]["phases"]
    assert phases["tls"]["count"] == phases["connect"]["count"] == summary["connections"]["opened"] == 4
    assert phases["tls"]["mean_us"] > 0
    assert "tls handshake" in horde("report", next(result.results_dir.iterdir()), results=False).stdout


def test_each_certificate_problem_is_a_ko_of_its_kind_and_passes_with_verification_off(horde, tls_nginx):
    problems = {
        "expired": "it has expired",
        "other_host": "not valid for the name 127.0.0.1",
        "unknown_ca": "unknown certificate authority",
    }
    for server, reason in problems.items():
        result = horde("http", tls_nginx.url(server) + "/", "-c", "1", "-n", "3", "--cacert", ca(tls_nginx), "-q")
        assert result.code == OK, result.stderr
        summary = result.summary
        assert kinds(summary) == {"tls_certificate": 3}, (server, summary["errors"])
        assert reason in summary["errors"][0]["message"], summary["errors"][0]["message"]
        # The handshake failed: no connection was opened, but the attempt has its time.
        assert summary["connections"]["opened"] == 0
        insecure = horde("http", tls_nginx.url(server) + "/", "-c", "1", "-n", "3", "--insecure")
        assert (insecure.summary["global"]["ok"], insecure.summary["global"]["ko"]) == (3, 0), server
        assert insecure.summary["plan"]["protocol"]["tls"]["verify"] is False
        assert "TLS certificates were NOT verified" in insecure.stdout


def test_tls_to_a_server_that_does_not_speak_it_is_a_tls_handshake_ko(horde, tls_nginx):
    # The redirecting server speaks plain HTTP: it answers the ClientHello with an HTTP error,
    # which is no TLS record.
    url = tls_nginx.url("redirect").replace("http://", "https://") + "/"
    result = horde("http", url, "-c", "1", "-n", "2", "-q")
    assert result.code == OK
    assert kinds(result.summary) == {"tls_handshake": 2}, result.summary["errors"]
    assert "TLS handshake with 127.0.0.1 failed" in result.summary["errors"][0]["message"]


def test_mutual_tls_sends_the_client_certificate(horde, tls_nginx, tmp_path):
    cert, key = tls_nginx.files["client"]
    sim = tmp_path / "mtls.py"
    sim.write_text(textwrap.dedent(f"""
        from horde import at_once_users, http, scenario, setup, substring
        setup(scenario("mtls").exec(http("who").get("/").check(substring("CN=horde-client")))
              .inject(at_once_users(2)),
              protocol=http.base_url("{tls_nginx.url('mtls')}").ca_file("{ca(tls_nginx)}")
                           .client_certificate("{cert}", "{key}"))
    """))
    result = horde("run", sim, "-q")
    assert result.code == OK, result.stderr
    assert (result.summary["global"]["ok"], result.summary["global"]["ko"]) == (2, 0), result.summary["errors"]
    # Without it, nginx refuses the request (400).
    without = horde("http", tls_nginx.url("mtls") + "/", "-c", "1", "-n", "1", "--cacert", ca(tls_nginx), "-q")
    assert without.summary["global"]["ko"] == 1


def test_a_client_certificate_that_cannot_be_read_is_refused_naming_the_file(horde, tls_nginx, tmp_path):
    (tmp_path / "broken.pem").write_text("not a certificate\n")
    sim = tmp_path / "bad.py"
    sim.write_text(textwrap.dedent(f"""
        from horde import at_once_users, http, scenario, setup
        setup(scenario("s").exec(http("a").get("/")).inject(at_once_users(1)),
              protocol=http.base_url("{tls_nginx.url('mtls')}").client_certificate("broken.pem", "missing.key"))
    """))
    result = horde("run", sim, "-q", results=False)
    assert result.code == 2
    assert "protocol.tls.client_certificate.certificate" in result.stderr and "broken.pem" in result.stderr
    assert "protocol.tls.client_certificate.key" in result.stderr and "missing.key" in result.stderr


def test_a_redirect_from_http_to_https_is_followed(horde, tls_nginx):
    result = horde("http", tls_nginx.url("redirect") + "/hello", "-c", "1", "-n", "3", "--cacert", ca(tls_nginx), "-q")
    assert result.code == OK, result.stderr
    rows = {r["name"]: r for r in result.summary["requests"]}
    url = tls_nginx.url("redirect") + "/hello"
    assert rows[f"GET {url}"]["ok"] == 3 and rows[f"GET {url} Redirect 1"]["ok"] == 3


def test_an_https_base_url_a_host_name_and_an_ipv6_literal(horde, tls_nginx, tmp_path):
    port = tls_nginx.ports["tls"]
    sim = tmp_path / "names.py"
    sim.write_text(textwrap.dedent(f"""
        from horde import at_once_users, http, scenario, setup
        scn = (scenario("names").exec(http("by name").get("/"))
               .exec(http("ipv6").get("https://[::1]:{port}/"))
               .exec(http("mapped").get("https://horde.test:{port}/")))
        setup(scn.inject(at_once_users(1)),
              protocol=http.base_url("https://localhost:{port}").ca_file("{ca(tls_nginx)}")
                           .resolve("horde.test", {port}, "127.0.0.1"))
    """))
    result = horde("run", sim, "-q")
    assert result.code == OK, result.stderr
    rows = {r["name"]: r for r in result.summary["requests"]}
    assert rows["by name"]["ok"] == 1 and rows["ipv6"]["ok"] == 1
    # localhost was looked up (a dns phase); the address literal and the mapped name were not.
    assert rows["by name"]["phases"]["dns"]["count"] == 1
    assert rows["ipv6"]["phases"]["dns"]["count"] == 0
    # horde.test went to 127.0.0.1, whose certificate is not for that name.
    assert result.summary["errors"][0]["kind"] == "tls_certificate"
    assert rows["mapped"]["phases"]["dns"]["count"] == 0


def test_each_user_has_its_own_tls_sessions_unless_they_are_shared(horde, tls_nginx, tmp_path):
    # /session says whether the handshake resumed a session ("r") or was full ("."), and
    # closes the connection, so a user's next request shakes hands again. A first user makes
    # two requests; then a second user makes one.
    def run(share, second_user_resumes):
        protocol = f'http.base_url("{tls_nginx.url()}").ca_file("{ca(tls_nginx)}")'
        if share:
            protocol += ".share_tls_sessions()"
        flag = "r" if second_user_resumes else "."
        sim = tmp_path / f"sessions-{share}.py"
        sim.write_text(textwrap.dedent(f"""
            from horde import at_once_users, http, regex, scenario, setup
            full = http("full").get("/session").check(regex("(.)").is_("."))
            resumed = http("resumed").get("/session").check(regex("(.)").is_("r"))
            later = http("later user").get("/session").check(regex("(.)").is_("{flag}"))
            first = scenario("first user").exec(full, resumed).inject(at_once_users(1))
            second = scenario("second user").exec(later).inject(at_once_users(1))
            setup(first.and_then(second), protocol={protocol})
        """))
        result = horde("run", sim, "-q")
        assert result.code == OK, result.stderr
        assert (result.summary["global"]["ok"], result.summary["global"]["ko"]) == (3, 0), result.summary["errors"]

    # Own sessions: a new user pays a full handshake, as a new browser does; its own second
    # connection resumes.
    run(share=False, second_user_resumes=False)
    # Shared: the second user resumes the first user's session.
    run(share=True, second_user_resumes=True)


class OpensslNginx:
    """nginx (HTTP/1.1 and HTTP/2 over TLS) serving a certificate made exactly as users make
    one: `openssl req -x509 ...`, which by default says it is a CA's (basicConstraints
    CA:TRUE)."""

    def __init__(self, directory):
        directory.chmod(0o755)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "k.pem", "-out", "c.pem",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                       cwd=directory, check=True, capture_output=True)
        self.certificate = directory / "c.pem"
        self.port = free_port()
        self.status_requests = 0
        (directory / "nginx.conf").write_text(textwrap.dedent(f"""
            worker_processes 1;
            user root;
            daemon off;
            pid {directory}/nginx.pid;
            error_log {directory}/error.log warn;
            events {{ worker_connections 1024; }}
            http {{
              access_log off;
              client_body_temp_path {directory}/body;
              proxy_temp_path {directory}/proxy;
              fastcgi_temp_path {directory}/fastcgi;
              uwsgi_temp_path {directory}/uwsgi;
              scgi_temp_path {directory}/scgi;
              server {{
                listen 127.0.0.1:{self.port} ssl http2;
                ssl_certificate {directory}/c.pem;
                ssl_certificate_key {directory}/k.pem;
                location = /nginx_status {{ stub_status; }}
                location / {{ return 200 "hello\\n"; }}
              }}
            }}
        """))
        self.process = start_nginx(directory, [self.port])
        self.url = f"https://127.0.0.1:{self.port}"

    def requests_served(self):
        """nginx's own count, less the status requests made (curl, which takes the
        certificate as it is: the check that users' other tool agrees)."""
        self.status_requests += 1
        text = subprocess.run(["curl", "-sS", "--cacert", str(self.certificate), self.url + "/nginx_status"],
                              capture_output=True, text=True, check=True).stdout
        return int(text.splitlines()[2].split()[2]) - self.status_requests

    def stop(self):
        stop_process(self.process)


@pytest.fixture(scope="module")
def openssl_nginx(tmp_path_factory):
    server = OpensslNginx(tmp_path_factory.mktemp("openssl-nginx"))
    yield server
    server.stop()


def test_a_certificate_made_by_openssl_req_is_trusted_with_cacert_as_curl_trusts_it(horde, openssl_nginx, tmp_path):
    # Issue 23: refused, even with --cacert that very file, as Other(OtherError(CaUsedAsEndEntity)).
    certificate = str(openssl_nginx.certificate)
    text = subprocess.run(["openssl", "x509", "-in", certificate, "-noout", "-text"], capture_output=True, text=True,
                          check=True).stdout
    assert "CA:TRUE" in text, "openssl's default certificate is a CA's: the case under test"
    before = openssl_nginx.requests_served()
    result = horde("http", openssl_nginx.url + "/", "-c", "2", "-n", "20", "--cacert", certificate, "--http2", "-q")
    assert result.code == OK, result.stderr
    assert (result.summary["global"]["ok"], result.summary["global"]["ko"]) == (20, 0), result.summary["errors"]
    assert openssl_nginx.requests_served() - before == 20
    # A simulation's ca_file, the same way.
    sim = tmp_path / "pinned.py"
    sim.write_text(textwrap.dedent(f"""
        from horde import at_once_users, http, scenario, setup, substring
        setup(scenario("s").exec(http("hello").get("/").check(substring("hello"))).inject(at_once_users(3)),
              protocol=http.base_url("{openssl_nginx.url}").ca_file("{certificate}"))
    """))
    run = horde("run", sim, "-q")
    assert run.code == OK, run.stderr
    assert (run.summary["global"]["ok"], run.summary["global"]["ko"]) == (3, 0), run.summary["errors"]


def test_a_pinned_certificate_still_needs_the_name_and_is_explained_when_not_given(horde, openssl_nginx):
    certificate = str(openssl_nginx.certificate)
    # By a name the certificate does not hold: refused in words, as curl refuses it.
    by_name = f"https://localhost:{openssl_nginx.port}/"
    wrong_name = horde("http", by_name, "-c", "1", "-n", "2", "--cacert", certificate, "-q")
    assert kinds(wrong_name.summary) == {"tls_certificate": 2}, wrong_name.summary["errors"]
    message = wrong_name.summary["errors"][0]["message"]
    assert "not valid for the name localhost (it names 127.0.0.1)" in message and "--resolve" in message, message
    assert subprocess.run(["curl", "-sS", "--cacert", certificate, by_name], capture_output=True).returncode != 0
    insecure = horde("http", by_name, "-c", "1", "-n", "2", "-k", "-q")
    assert insecure.summary["global"]["ok"] == 2, insecure.summary["errors"]
    # Not given: what it is and how to trust it, not a library's words.
    untrusted = horde("http", openssl_nginx.url + "/", "-c", "1", "-n", "1", "-q")
    message = untrusted.summary["errors"][0]["message"]
    assert "CA:TRUE" in message and "openssl req -x509" in message and "--cacert FILE" in message, message
    assert "OtherError" not in message


def test_run_and_sweep_take_the_transport_flags_over_the_simulation(horde, tls_target, tmp_path):
    # Issue 23: trust and HTTP/2 had to be written into each simulation.
    sim = tmp_path / "plain.py"
    sim.write_text(textwrap.dedent(f"""
        from horde import at_once_users, http, jsonpath, scenario, setup
        setup(scenario("s").exec(http("item").get("/api/items/1").check(jsonpath("$.id").is_("1")))
              .inject(at_once_users(2)), protocol=http.base_url("{tls_target.url}"))
    """))
    untrusted = horde("run", sim, "-q")
    assert kinds(untrusted.summary) == {"tls_certificate": 2}, untrusted.summary["errors"]
    assert "--cacert FILE" in untrusted.summary["errors"][0]["message"]
    before = tls_target.stats()
    run = horde("run", sim, "--cacert", tls_target.cert_path, "--http2", "-q")
    assert run.code == OK, run.stderr
    assert (run.summary["global"]["ok"], run.summary["global"]["ko"]) == (2, 0), run.summary["errors"]
    protocol = run.summary["plan"]["protocol"]
    assert protocol["http2"] == "negotiate" and protocol["tls"]["ca_file"] == str(tls_target.cert_path)
    after = tls_target.stats()
    assert after["http2_connections"] - before["http2_connections"] == 2, after
    assert after["tls_connections"] - before["tls_connections"] >= 2, after
    insecure = horde("run", sim, "-k", "-q")
    assert insecure.summary["global"]["ok"] == 2 and insecure.summary["plan"]["protocol"]["tls"]["verify"] is False
    # A sweep's levels are runs of the same plan, flags included.
    before = tls_target.stats()
    sweep = horde("sweep", sim, "--users", "1", "--level-duration", "300ms", "--warmup", "0s",
                  "--cacert", tls_target.cert_path, "--http2", "-q")
    assert sweep.code == OK, sweep.stderr
    after = tls_target.stats()
    assert after["http2_connections"] > before["http2_connections"], after
    assert after["by_route"]["GET /api/items/{id}"] > before["by_route"]["GET /api/items/{id}"]
