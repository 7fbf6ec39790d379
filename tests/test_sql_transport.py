"""How horde reaches a database: the transport the URL names, and nothing else. PostgreSQL over
TCP, TLS negotiated as libpq does (sslmode, sslrootcert, a client certificate) and a Unix
socket; MariaDB over TCP unless the URL asks for its socket. Each transport is read on the
server's side (pg_stat_ssl, inet_client_addr(), USER()), never taken from horde's word."""

import shutil
import subprocess

import pytest

import tls_material
from conftest import assert_slow_statement_cancelled, sql_server

TRANSPORT_SQL = (
    "SELECT CASE WHEN inet_client_addr() IS NULL THEN 'unix' "
    "WHEN (SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()) THEN 'tls' ELSE 'tcp' END AS transport"
)

TRANSPORT_SIM = f'''
from horde import at_once_users, column, param, scenario, setup, sql
scn = scenario("s").exec(sql("transport").query("{TRANSPORT_SQL}").check(column("transport").is_(param("expect"))))
setup(scn.inject(at_once_users(2)), protocol=sql.url(param("url")))
'''


def assert_transport(horde, url, expect):
    result = horde("run", "transport.py", "-D", f"url={url}", "-D", f"expect={expect}")
    assert result.code == 0, result.stderr
    assert (result.summary["global"]["ok"], result.summary["global"]["ko"]) == (2, 0), (url, result.summary["errors"])


@pytest.fixture
def transport_sim(tmp_path, monkeypatch):
    (tmp_path / "transport.py").write_text(TRANSPORT_SIM)
    monkeypatch.chdir(tmp_path)


def test_each_postgres_url_reaches_the_server_by_the_transport_it_names(horde, postgres_tls, transport_sim):
    ca = postgres_tls.files["ca"][0]
    cases = [
        # libpq's default, prefer: TLS when the server offers it.
        (postgres_tls.url(), "tls"),
        (postgres_tls.url("sslmode=disable"), "tcp"),
        (postgres_tls.url("sslmode=require"), "tls"),
        (postgres_tls.url(f"sslmode=verify-ca&sslrootcert={ca}"), "tls"),
        (postgres_tls.url(f"sslmode=verify-full&sslrootcert={ca}"), "tls"),
        (postgres_tls.url(f"sslmode=verify-full&sslrootcert={ca}", host="localhost"), "tls"),
        # A Unix-socket directory, as a parameter (with the URL naming no host) or percent-encoded
        # as the host; TLS is never spoken on a socket, as libpq.
        (f"postgres://bench@/bench?host={postgres_tls.socket_dir}&port={postgres_tls.port}&sslmode=require", "unix"),
        (postgres_tls.url(host=str(postgres_tls.socket_dir).replace("/", "%2F")), "unix"),
    ]
    log = postgres_tls.server.directory / "server.log"
    logged_before = len(log.read_text())
    for url, expect in cases:
        assert_transport(horde, url, expect)
    # Each connection said goodbye (Terminate, and over TLS close_notify): the server logged no
    # connection reset or unexpected EOF.
    logged = log.read_text()[logged_before:]
    assert "could not receive data" not in logged and "unexpected EOF" not in logged, logged


def test_certificates_the_url_does_not_trust_and_servers_without_tls_are_refused(horde, postgres_tls, postgres,
                                                                                 transport_sim, tmp_path):
    # The system's roots do not include the tests' CA; with them, verify-full is the default.
    untrusted = horde("run", "transport.py", "-D", f"url={postgres_tls.url('sslrootcert=system')}", "-D", "expect=tls")
    assert untrusted.code == 3, untrusted.stderr
    assert "the certificate of 127.0.0.1 was refused: it is signed by an unknown certificate authority" in untrusted.stderr
    weak = horde("run", "transport.py", "-D", f"url={postgres_tls.url('sslmode=require&sslrootcert=system')}",
                 "-D", "expect=tls")
    assert weak.code == 2 and "sslrootcert=system needs sslmode=verify-full" in weak.stderr, weak.stderr
    # Roots make the chain checked under verify-ca, and under require too (libpq's rule).
    stranger = postgres_tls.files["unknown_ca"][0]
    for mode in ("verify-ca", "require"):
        other_root = horde("run", "transport.py", "-D",
                           f"url={postgres_tls.url(f'sslmode={mode}&sslrootcert={stranger}')}", "-D", "expect=tls")
        assert other_root.code == 3 and "unknown certificate authority" in other_root.stderr, (mode, other_root.stderr)
    # A server without TLS: prefer goes on in cleartext, require does not.
    assert_transport(horde, postgres.url, "tcp")
    required = horde("run", "transport.py", "-D", f"url={postgres.url}?sslmode=require", "-D", "expect=tls")
    assert required.code == 3, required.stderr
    assert "does not accept TLS, and the URL's sslmode requires it" in required.stderr
    # verify-full with no roots to check against (no ~/.postgresql/root.crt): a plan error
    # naming the parameter, before anything connects.
    no_roots = horde("run", "transport.py", "-D", f"url={postgres_tls.url('sslmode=verify-full')}", "-D", "expect=tls",
                     env={"HOME": str(tmp_path)})
    assert no_roots.code == 2, no_roots.stderr
    assert "databases[0].url" in no_roots.stderr and "sslmode=verify-ca and verify-full need trusted roots" in no_roots.stderr
    bad_mode = horde("run", "transport.py", "-D", f"url={postgres_tls.url('sslmode=sometimes')}", "-D", "expect=tls")
    assert bad_mode.code == 2 and "sslmode=sometimes: not a mode" in bad_mode.stderr, bad_mode.stderr


def test_verify_ca_checks_the_chain_and_verify_full_the_name_too(horde, postgres_tls, transport_sim):
    """A certificate the tests' CA signed for another host: verify-ca takes it, verify-full
    refuses it for its name."""
    ca = postgres_tls.files["ca"][0]
    postgres_tls.serve_certificate("other_host")
    try:
        assert_transport(horde, postgres_tls.url(f"sslmode=verify-ca&sslrootcert={ca}"), "tls")
        full = horde("run", "transport.py", "-D", f"url={postgres_tls.url(f'sslmode=verify-full&sslrootcert={ca}')}",
                     "-D", "expect=tls")
        assert full.code == 3, full.stderr
        assert "the certificate of 127.0.0.1 was refused: it is not valid for the name 127.0.0.1" in full.stderr
    finally:
        postgres_tls.serve_certificate("server")


def test_prefer_goes_on_in_cleartext_when_the_server_refuses_the_login_over_tls(horde, postgres_tls, transport_sim):
    """A role pg_hba.conf lets in only without TLS (`hostnossl`): under prefer, libpq's
    default, the login refused over TLS is tried again in cleartext; under require, refused."""
    plain_user = "horde_plain:secret"
    assert_transport(horde, postgres_tls.url(user=plain_user), "tcp")
    required = horde("run", "transport.py", "-D", f"url={postgres_tls.url('sslmode=require', user=plain_user)}",
                     "-D", "expect=tcp")
    assert required.code == 3 and "pg_hba.conf rejects connection" in required.stderr, required.stderr


def test_a_client_certificate_is_shown_when_the_server_asks_for_one(horde, postgres_tls, transport_sim):
    client_cert, client_key = postgres_tls.files["client"]
    without = horde("run", "transport.py", "-D", f"url={postgres_tls.url('sslmode=require', user='horde_cert:secret')}",
                    "-D", "expect=tls")
    assert without.code == 3 and "certificate" in without.stderr, without.stderr
    shown = postgres_tls.url(f"sslmode=require&sslcert={client_cert}&sslkey={client_key}", user="horde_cert:secret")
    assert_transport(horde, shown, "tls")


@pytest.mark.parametrize("transport", ["tls", "unix"])
def test_the_experiment_runs_every_strategy_over_tls_and_a_socket(horde, postgres_tls, transport):
    """Pipelining writes and reads one connection at once: over TLS and a socket it goes through
    split halves other than TCP's; every row arrives, counted by the server."""
    url = postgres_tls.url("sslmode=require") if transport == "tls" else (
        f"postgres://bench@/bench?host={postgres_tls.socket_dir}&port={postgres_tls.port}")
    rows = 12_000
    result = horde("sql", "--url", url, "--rows", rows, "--threads", "2", "--batch-size", "3000",
                   "--populate", "row-txn,pipeline,batch,bulk", "--update", "row-txn,temp-join", "--keep", "--replace",
                   timeout=300)
    assert result.code == 0, result.stderr + result.stdout
    for phase in result.summary["sql"]:
        assert "error" not in phase and phase["verification"]["passed"], phase
    assert postgres_tls.server.query("SELECT count(*) FROM bulktest") == str(rows)
    # The server is found by its TCP port or its socket: its CPU time is read.
    update = next(p for p in result.summary["sql"] if p["name"] == "update temp-join")
    assert update["server_cpu_seconds"] > 0, update


def test_a_statement_past_the_timeout_on_a_tls_connection_is_cancelled(horde, postgres_tls, tmp_path):
    """The cancel request goes in cleartext on a connection of its own, as libpq's: it stops a
    statement running on a TLS connection."""
    assert_slow_statement_cancelled(horde, tmp_path, postgres_tls.url("sslmode=require"), postgres_tls.server)


def test_mariadb_is_reached_over_tcp_unless_the_url_names_its_socket(horde, mariadb, transport_sim, tmp_path):
    """The MariaDB driver would move a connection made to 127.0.0.1 onto the server's Unix
    socket by itself; horde keeps the TCP connection the URL names. The server tells which:
    USER() is bench@127.0.0.1 over TCP, bench@localhost over the socket."""
    sim = tmp_path / "who.py"
    sim.write_text('''
from horde import at_once_users, column, param, scenario, setup, sql
scn = scenario("s").exec(sql("who").query("SELECT USER() AS who").check(column("who").is_(param("expect"))))
setup(scn.inject(at_once_users(2)), protocol=sql.url(param("url")))
''')
    socket = mariadb.directory / "mysqld.sock"
    for url, expect in [(mariadb.url, "bench@127.0.0.1"), (f"{mariadb.url}?socket={socket}", "bench@localhost"),
                        (f"{mariadb.url}?prefer_socket=true", "bench@localhost")]:
        result = horde("run", sim, "-D", f"url={url}", "-D", f"expect={expect}")
        assert result.code == 0, result.stderr
        assert (result.summary["global"]["ok"], result.summary["global"]["ko"]) == (2, 0), (url, result.summary["errors"])


def test_mariadb_over_tls_checks_the_certificate_the_url_trusts(horde, tmp_path):
    """A MariaDB speaking TLS with the tests' certificate. `ssl_ca` trusts that CA only and
    turns TLS on (Ssl_cipher, the server's own status, is set); `require_ssl` alone trusts the
    public roots, which refuse it, as does another CA's file; a user created REQUIRE X509 gets
    in with `ssl_cert` and `ssl_key` only; a missing file and `verify_identity=false` (which the
    driver cannot honour) are named."""
    files = tls_material.make(tmp_path)
    served = tmp_path / "served"
    served.mkdir()
    shutil.copy(files["ca"][0], served / "ca.pem")
    shutil.copy(files["server"][0], served / "server.pem")
    shutil.copy(files["server"][1], served / "server.key")
    server = sql_server("mariadb", served)
    try:
        sim = tmp_path / "cipher.py"
        sim.write_text('''
from horde import at_once_users, column, param, scenario, setup, sql
scn = scenario("s").exec(sql("cipher").query(
    "SELECT IF(variable_value <> '', 'tls', 'plain') AS transport FROM information_schema.session_status "
    "WHERE variable_name = 'Ssl_cipher'").check(column("transport").is_(param("expect"))))
setup(scn.inject(at_once_users(2)), protocol=sql.url(param("url")))
''')

        def run(query, expect="tls"):
            return horde("run", sim, "-D", f"url={server.url}{query}", "-D", f"expect={expect}")

        ca, stranger = files["ca"][0], files["unknown_ca"][0]
        for query, expect in [("", "plain"), (f"?ssl_ca={ca}", "tls"),
                              ("?require_ssl=true&verify_ca=false", "tls")]:
            result = run(query, expect)
            assert result.code == 0, result.stderr
            assert (result.summary["global"]["ok"], result.summary["global"]["ko"]) == (2, 0), (query, result.summary)
        for query, why in [("?require_ssl=true", "UnknownIssuer"), (f"?ssl_ca={stranger}", "UnknownIssuer")]:
            refused = run(query)
            assert refused.code == 3 and why in refused.stderr, (query, refused.stderr)
        # A user the server lets in only with a client certificate (REQUIRE X509).
        subprocess.run(["mariadb", "--no-defaults", f"--socket={server.directory}/mysqld.sock", "-uroot", "-e",
                        "CREATE USER 'horde_cert'@'127.0.0.1' IDENTIFIED BY 'secret' REQUIRE X509; "
                        "GRANT ALL ON bench.* TO 'horde_cert'@'127.0.0.1'"], check=True, capture_output=True)
        cert_user = server.url.replace("bench:benchpw@", "horde_cert:secret@")
        client_cert, client_key = files["client"]
        refused = horde("run", sim, "-D", f"url={cert_user}?ssl_ca={ca}", "-D", "expect=tls")
        assert refused.code == 3 and "Access denied" in refused.stderr, refused.stderr
        shown = horde("run", sim, "-D", f"url={cert_user}?ssl_ca={ca}&ssl_cert={client_cert}"
                      f"&ssl_key={client_key}", "-D", "expect=tls")
        assert shown.code == 0 and shown.summary["global"]["ok"] == 2, shown.stderr
        missing = run(f"?ssl_ca={tmp_path}/nope.pem")
        assert missing.code == 2 and f"ssl_ca: {tmp_path}/nope.pem is not a file" in missing.stderr, missing.stderr
        names = run(f"?ssl_ca={ca}&verify_identity=false")
        assert names.code == 2 and "verify_identity=false: the MariaDB driver cannot" in names.stderr, names.stderr
    finally:
        server.stop()
        shutil.rmtree(server.directory, ignore_errors=True)


def test_a_certificate_made_by_openssl_req_is_trusted_as_sslrootcert(horde, postgres_tls, transport_sim, tmp_path):
    """`openssl req -x509`'s certificate (basicConstraints CA:TRUE) as the server's own and as
    sslrootcert, as libpq takes it (psql says so): the same verifier as HTTPS."""
    certs = postgres_tls.server.directory / "certs"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "openssl.key",
                    "-out", "openssl.pem", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   cwd=certs, check=True, capture_output=True)
    for name, mode in (("openssl.pem", 0o644), ("openssl.key", 0o600)):
        shutil.chown(certs / name, "postgres")
        (certs / name).chmod(mode)
    # The client's copy, where the test's user reads it.
    root = tmp_path / "root.pem"
    shutil.copy(certs / "openssl.pem", root)
    postgres_tls.files["openssl"] = (certs / "openssl.pem", certs / "openssl.key")
    postgres_tls.serve_certificate("openssl")
    try:
        url = postgres_tls.url(f"sslmode=verify-full&sslrootcert={root}")
        libpq = subprocess.run(["psql", url, "-tA", "-c", "SELECT 1"], capture_output=True, text=True)
        assert libpq.stdout.strip() == "1", libpq.stderr
        assert_transport(horde, url, "tls")
        assert_transport(horde, postgres_tls.url(f"sslmode=verify-ca&sslrootcert={root}"), "tls")
        # The name is still checked under verify-full.
        wrong_name = horde("run", "transport.py", "-D",
                           f"url={postgres_tls.url(f'sslmode=verify-full&sslrootcert={root}', host='localhost')}",
                           "-D", "expect=tls")
        assert wrong_name.code == 3, wrong_name.stderr
        assert "not valid for the name localhost (it names 127.0.0.1)" in wrong_name.stderr
    finally:
        postgres_tls.serve_certificate("server")
