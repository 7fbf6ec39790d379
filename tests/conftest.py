"""Fixtures: real servers on 127.0.0.1, started by the tests and stopped by PID.

- ``target``: the built-in target (``horde target``), which counts what it serves (/stats);
  ``tls_target`` the same over HTTPS (``horde target --tls``), with the certificate it made.
- ``nginx``: nginx with one worker; ``stub_status`` gives the server-side request count.
- ``django_login``: a real Django site (tests/apps/django_login) whose users come from
  examples/users.csv; its /stats/ counts logins per username.
- ``horde``: runs the installed ``horde`` command and reads the summary it wrote.

Servers are polled for readiness, never waited for with sleeps.
"""

import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

# The console script is installed beside the interpreter running the tests; make sure the
# servers and runs started below find that one, whatever PATH the caller had.
os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
DOCS = ROOT / "docs"


def wait_until(predicate, timeout=15.0, what="condition"):
    """Polls ``predicate`` until it is true (readiness polling, not a fixed sleep)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise TimeoutError(f"timed out waiting for {what}")


def can_connect(port, host="127.0.0.1"):
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_first_merged_interval(process, results, timeout):
    """Waits until a run writing into `results` has merged a request into its summary.json; stops
    `process` if it does not."""

    def merged_some():
        try:
            return json.loads((results / "summary.json").read_text())["global"]["count"] > 0
        except (OSError, ValueError, KeyError):
            return False

    try:
        wait_until(merged_some, timeout=timeout, what="the coordinator's first merged interval")
    except BaseException:
        stop_process(process)
        raise


def stop_process(process):
    """Stops a server the tests started, by its PID: SIGTERM, then SIGKILL if it lingers."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Sshd:
    """An sshd of the test's own on 127.0.0.1 (the ``sshd`` fixture): its ``port``, its host
    key (``host_key``, a public key line) and the client key it accepts (``client_key``)."""

    def __init__(self, keys, port):
        self.port = port
        self.client_key = keys / "client"
        self.host_key = (keys / "host.pub").read_text().strip()

    @property
    def command(self):
        """An ssh command line that logs in to it, not asking about its key."""
        return (f"ssh -i {self.client_key} -p {self.port} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
                "-o BatchMode=yes -o LogLevel=ERROR")


@pytest.fixture
def sshd(tmp_path):
    """An sshd of our own on 127.0.0.1, with a host key and a client key made for the test."""
    daemon = shutil.which("sshd") or "/usr/sbin/sshd"
    if not os.path.exists(daemon):
        pytest.skip("sshd is not installed (scripts/test.sh installs openssh-server)")
    keys = tmp_path / "keys"
    keys.mkdir()
    for name in ("host", "client"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / name)], check=True)
    (keys / "authorized_keys").write_text((keys / "client.pub").read_text())
    (keys / "authorized_keys").chmod(0o600)
    port = free_port()
    config = keys / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {keys / 'host'}\nAuthorizedKeysFile {keys / 'authorized_keys'}\n"
        f"PidFile {keys / 'sshd.pid'}\nStrictModes no\nUsePAM no\nPermitRootLogin yes\nPasswordAuthentication no\n"
    )
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", exist_ok=True)
    process = subprocess.Popen([daemon, "-D", "-e", "-f", str(config)], stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: can_connect(port), what="sshd")
        yield Sshd(keys, port)
    finally:
        stop_process(process)


def get_json(url, context=None):
    with urllib.request.urlopen(url, timeout=5, context=context) as response:
        return json.loads(response.read())


class Target:
    """The built-in target in its own process; with ``tls=True``, HTTPS (``horde target --tls``):
    ``cert_path`` is the certificate it wrote, ``fingerprint`` the SHA-256 it printed and
    ``ssl_context`` a client context trusting that certificate. ``args`` are more flags for
    ``horde target`` (``["--eventual-delay-ms", "300"]``)."""

    def __init__(self, tls=False, args=()):
        argv = ["horde", "target", "--port", "0"] + (["--tls"] if tls else []) + list(args)
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        match = re.search(r"(https?)://127\.0\.0\.1:(\d+)", line)
        if not match:
            self.process.kill()
            raise RuntimeError(f"horde target did not announce its port: {line!r} {self.process.stderr.read()}")
        self.port = int(match.group(2))
        self.url = f"{match.group(1)}://127.0.0.1:{self.port}"
        self.cert_path = self.fingerprint = self.ssl_context = None
        if tls:
            # Then the certificate's fingerprint and the file it is in, one line each.
            fingerprint = re.search(r"SHA-256 fingerprint: ([0-9A-F:]+)$", self.process.stdout.readline().strip())
            cert = re.search(r"\(for --cacert\): (.+)$", self.process.stdout.readline().strip())
            if not (fingerprint and cert):
                self.process.kill()
                raise RuntimeError(f"horde target --tls did not print its certificate: {self.process.stderr.read()}")
            self.fingerprint = fingerprint.group(1)
            self.cert_path = Path(cert.group(1))
            self.ssl_context = ssl.create_default_context(cafile=str(self.cert_path))

    def stats(self):
        return get_json(self.url + "/stats", context=self.ssl_context)

    def stop(self):
        stop_process(self.process)


CHROMIUM = os.environ.get("HORDE_CHROMIUM", "/usr/bin/chromium")


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium driven by Playwright; the test is skipped when either is missing."""
    playwright_api = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def target():
    server = Target()
    yield server
    server.stop()


@pytest.fixture
def tls_target():
    server = Target(tls=True)
    yield server
    server.stop()


NGINX_TEMPLATE = ROOT / "scripts" / "nginx.conf.template"


def nginx_conf(directory, port):
    return NGINX_TEMPLATE.read_text().replace("{dir}", str(directory)).replace("{port}", str(port))


def start_nginx(directory, ports):
    """nginx with `directory`/nginx.conf, once every one of `ports` accepts connections."""
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    process = subprocess.Popen([binary, "-c", str(directory / "nginx.conf"), "-p", str(directory)],
                               stderr=subprocess.PIPE)
    wait_until(lambda: all(can_connect(p) for p in ports) or process.poll() is not None, what="nginx")
    if process.poll() is not None:
        raise RuntimeError(f"nginx did not start: {process.stderr.read().decode()}")
    return process


class Nginx:
    """nginx with scripts/nginx.conf.template; ``configure`` may rewrite the configuration's
    text first."""

    def __init__(self, directory, configure=None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.status_requests = 0
        text = nginx_conf(directory, self.port)
        (directory / "nginx.conf").write_text(configure(text) if configure else text)
        self.process = start_nginx(directory, [self.port])

    def requests_served(self):
        """nginx's own count of requests, less the status requests the tests made."""
        self.status_requests += 1
        with urllib.request.urlopen(self.url + "/nginx_status", timeout=5) as response:
            text = response.read().decode()
        # "Active connections: 1\nserver accepts handled requests\n 1 1 5 \n..."
        return int(text.splitlines()[2].split()[2]) - self.status_requests

    def stop(self):
        stop_process(self.process)


@pytest.fixture(scope="session")
def nginx(tmp_path_factory):
    server = Nginx(tmp_path_factory.mktemp("nginx"))
    yield server
    server.stop()


def limit_req(rate, directory):
    """A ``configure`` for Nginx: every page but the status is limited to ``rate`` requests a
    second, with no burst (nginx's limit_req; a request over the rate gets a 503 at once)."""
    directory.chmod(0o755)
    (directory / "www").mkdir(exist_ok=True)
    (directory / "www" / "index.html").write_text("hello\n")

    def configure(conf):
        conf = conf.replace(
            "  keepalive_requests 100000000;",
            f"  keepalive_requests 100000000;\n  limit_req_zone $binary_remote_addr zone=one:1m rate={rate}r/s;\n"
            "  limit_req_status 503;",
        )
        # limit_req acts in a phase that `return` skips: the limited location serves a file.
        return conf.replace('    location / { return 200 "hello\\n"; }',
                            f"    location / {{ limit_req zone=one; root {directory}/www; }}")

    return configure


@pytest.fixture
def limited_nginx(tmp_path_factory):
    """nginx limiting its pages to 300 requests a second (``limited_nginx.url + "/index.html"``)."""
    directory = tmp_path_factory.mktemp("nginx-limited")
    server = Nginx(directory, configure=limit_req(300, directory))
    yield server
    server.stop()


NGINX_TLS_TEMPLATE = ROOT / "scripts" / "nginx-tls.conf.template"
TLS_SERVERS = ("tls", "expired", "other_host", "unknown_ca", "mtls", "redirect", "h2c", "h2c_goaway", "http1_only",
               "site")
# The servers of TLS_SERVERS that speak cleartext.
CLEARTEXT_SERVERS = ("redirect", "h2c", "h2c_goaway", "site")


class TlsNginx:
    """nginx over TLS (HTTP/1.1 and HTTP/2) with certificates the tests make, one server per
    certificate problem, a server demanding a client certificate, an http server that
    redirects to https, HTTP/2 in cleartext (h2c; one ending connections after 5 requests),
    TLS without HTTP/2, and a small site under /site/ (cleartext HTTP/1.1 on ``site``, HTTP/2
    on ``tls``) whose slow/ resources take about half a second each and whose requests are
    logged with their times (``site_log(server)``). ``url(server)`` is a server's base URL;
    ``files`` the certificates."""

    def __init__(self, directory):
        import tls_material

        # nginx's worker (nobody, when started as root) reads the certificates.
        directory.chmod(0o755)
        self.files = tls_material.make(directory)
        tls_material.make_site(directory / "site")
        self.directory = directory
        self.ports = {server: free_port() for server in TLS_SERVERS}
        self.status_requests = 0
        conf = NGINX_TLS_TEMPLATE.read_text().replace("{dir}", str(directory))
        for server, port in self.ports.items():
            conf = conf.replace("{" + server + "_port}", str(port))
        (directory / "nginx.conf").write_text(conf)
        self.process = start_nginx(directory, self.ports.values())

    def url(self, server="tls", host="127.0.0.1"):
        scheme = "http" if server in CLEARTEXT_SERVERS else "https"
        return f"{scheme}://{host}:{self.ports[server]}"

    def site_log(self, server):
        """The site's requests on ``server`` so far: dicts of connection, start, end (seconds),
        protocol and uri."""
        log = self.directory / ("tls-site.log" if server == "tls" else "site.log")
        entries = []
        for line in log.read_text().splitlines() if log.exists() else []:
            connection, end, duration, protocol, uri = line.split()
            entries.append({"connection": connection, "start": float(end) - float(duration), "end": float(end),
                            "protocol": protocol, "uri": uri})
        return entries

    def requests_served(self):
        """nginx's own count of requests over every server, less the status requests made."""
        import ssl

        self.status_requests += 1
        context = ssl.create_default_context(cafile=str(self.files["ca"][0]))
        with urllib.request.urlopen(self.url() + "/nginx_status", timeout=5, context=context) as response:
            text = response.read().decode()
        return int(text.splitlines()[2].split()[2]) - self.status_requests

    def stop(self):
        stop_process(self.process)


@pytest.fixture(scope="session")
def tls_nginx(tmp_path_factory):
    server = TlsNginx(tmp_path_factory.mktemp("nginx-tls"))
    yield server
    server.stop()


class CouchDb:
    """pouchdb-server (a CouchDB-API server) in memory, installed by scripts/test.sh."""

    def __init__(self, directory):
        server = ROOT / "scripts" / "couchdb" / "node_modules" / "pouchdb-server" / "bin" / "pouchdb-server"
        if not server.exists():
            raise RuntimeError(f"{server} is missing: run scripts/test.sh, which installs it with npm")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = directory / "config.json"
        config.write_text(json.dumps({"log": {"file": str(directory / "pouchdb.log"), "level": "warning"}}))
        self.process = subprocess.Popen(
            ["node", str(server), "--host", "127.0.0.1", "--port", str(self.port), "--in-memory",
             "--config", str(config), "--no-stdout-logs"],
            cwd=directory, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )

        def ready():
            if self.process.poll() is not None:
                return True
            try:
                return bool(get_json(self.url + "/"))
            except OSError:
                return False

        wait_until(ready, timeout=30, what="pouchdb-server")
        if self.process.poll() is not None:
            raise RuntimeError(f"pouchdb-server did not start: {self.process.stderr.read().decode()}")

    def stop(self):
        stop_process(self.process)


@pytest.fixture(scope="session")
def couchdb(tmp_path_factory):
    server = CouchDb(tmp_path_factory.mktemp("couchdb"))
    yield server
    server.stop()


DJANGO_LOGIN_APP = ROOT / "tests" / "apps" / "django_login" / "app.py"


class DjangoLogin:
    """The Django login site of examples/csv_login.py in its own process (Django's threaded
    ``runserver``), with the users of ``users_csv`` in a fresh SQLite database under
    ``directory``; its log is ``directory / "server.log"``."""

    def __init__(self, directory, users_csv):
        if importlib.util.find_spec("django") is None:
            raise RuntimeError("Django is missing: run scripts/test.sh, which installs it")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = directory / "server.log"
        # The site's own database: tests read it, and scenarios' SQL steps too.
        self.database = directory / "db.sqlite3"
        env = {**os.environ, "DJANGO_LOGIN_DATA_DIR": str(directory), "DJANGO_LOGIN_USERS": str(users_csv)}
        with open(self.log, "w") as log:
            self.process = subprocess.Popen([sys.executable, str(DJANGO_LOGIN_APP), "--port", str(self.port)],
                                            env=env, stdout=log, stderr=subprocess.STDOUT)

        def ready():
            if self.process.poll() is not None:
                return True
            try:
                return "logins" in self.stats()
            except OSError:
                return False

        wait_until(ready, timeout=30, what="the Django login site")
        if self.process.poll() is not None:
            raise RuntimeError(f"the Django login site did not start: {self.log.read_text()}")

    def stats(self):
        return get_json(self.url + "/stats/")

    def stop(self):
        stop_process(self.process)


@pytest.fixture
def django_login(tmp_path_factory):
    server = DjangoLogin(tmp_path_factory.mktemp("django-login"), EXAMPLES / "users.csv")
    yield server
    server.stop()


class Result:
    def __init__(self, completed, results_dir):
        self.code = completed.returncode
        self.stdout = completed.stdout
        self.stderr = completed.stderr
        self.results_dir = results_dir

    @property
    def summary(self):
        paths = sorted(self.results_dir.glob("*/summary.json"))
        assert len(paths) == 1, f"expected one summary in {self.results_dir}: {paths}\n{self.stderr}"
        return json.loads(paths[0].read_text())

    def row(self, name):
        rows = [r for r in self.summary["requests"] if r["name"] == name]
        assert rows, f"no row {name!r} in {[r['name'] for r in self.summary['requests']]}"
        return rows[0]


@pytest.fixture
def horde(tmp_path):
    """Runs ``horde ARGS... --results TMP`` (for commands that write results)."""
    counter = [0]

    def run(*args, results=True, timeout=120, env=None):
        counter[0] += 1
        results_dir = tmp_path / f"results-{counter[0]}"
        argv = ["horde", *map(str, args)]
        if results:
            argv += ["--results", str(results_dir)]
        completed = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
        )
        return Result(completed, results_dir)

    return run


@pytest.fixture(scope="session")
def summary_schema():
    return json.loads((DOCS / "summary.schema.json").read_text())


@pytest.fixture(scope="session")
def plan_schema():
    return json.loads((DOCS / "plan.schema.json").read_text())


SQL_SCRIPTS = ROOT / "scripts" / "sql"


class SqlServer:
    """A throwaway PostgreSQL or MariaDB on 127.0.0.1 (scripts/sql/start_*.sh, installed by
    scripts/test.sh), stopped by its PID; ``url`` reaches database ``bench`` as bench/benchpw."""

    def __init__(self, kind, directory, *script_args):
        self.kind = kind
        self.directory = directory
        self.port = free_port()
        script = SQL_SCRIPTS / f"start_{kind}.sh"
        started = subprocess.run(["bash", str(script), str(directory), str(self.port), *map(str, script_args)],
                                 capture_output=True, text=True, timeout=120)
        if started.returncode != 0:
            raise RuntimeError(f"{script} failed: {started.stderr}{started.stdout}")
        self.pid = int(started.stdout.strip().splitlines()[-1])
        scheme = "postgres" if kind == "postgres" else "mysql"
        self.url = f"{scheme}://bench:benchpw@127.0.0.1:{self.port}/bench"

    def query(self, sql):
        """The server's own answer, through its own command-line client: one value."""
        if self.kind == "postgres":
            argv = ["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "bench", "-d", "bench", "-tA", "-c", sql]
            env = {**os.environ, "PGPASSWORD": "benchpw"}
        else:
            argv = ["mariadb", "--no-defaults", "-h", "127.0.0.1", "-P", str(self.port), "-ubench", "-pbenchpw",
                    "-N", "-B", "bench", "-e", sql]
            env = dict(os.environ)
        completed = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
        if completed.returncode != 0:
            raise RuntimeError(f"{sql}: {completed.stderr}")
        return completed.stdout.strip()

    def stop(self):
        try:
            os.kill(self.pid, signal.SIGINT if self.kind == "postgres" else signal.SIGTERM)
        except ProcessLookupError:
            return
        wait_until(lambda: not os.path.exists(f"/proc/{self.pid}"), timeout=30, what=f"{self.kind} to stop")


def sql_server(kind, *script_args):
    """A server in a directory of its own under /tmp: PostgreSQL runs as the postgres user, who
    cannot enter pytest's private temporary directories. ``script_args`` go to its start script
    after DIR and PORT."""
    directory = Path(tempfile.mkdtemp(prefix=f"horde-{kind}-"))
    server = SqlServer(kind, directory, *script_args)
    return server


def serve_sql(kind):
    server = sql_server(kind)
    yield server
    server.stop()
    shutil.rmtree(server.directory, ignore_errors=True)


def assert_slow_statement_cancelled(horde, tmp_path, url, server):
    """Runs `SELECT pg_sleep(30)` for 2 users at `url` with a 0.5 s request timeout: both fail as
    request_timeout within 20 s, and `server` (a SqlServer) soon runs no such statement: horde
    asked it to cancel them (as libpq's PQcancel)."""
    marker = f"horde_slow_{tmp_path.name}".replace("-", "_").lower()
    sim = tmp_path / "slow.py"
    sim.write_text(f'''
from horde import at_once_users, http, param, scenario, setup, sql
scn = scenario("s").exec(sql("slow").query("SELECT pg_sleep(30) AS {marker}"))
setup(scn.inject(at_once_users(2)), protocol=[http.request_timeout(0.5), sql.url(param("url"))], max_duration=60)
''')
    started = time.monotonic()
    result = horde("run", sim, "-D", f"url={url}")
    assert result.code == 0, result.stderr
    assert time.monotonic() - started < 20
    [error] = result.summary["errors"]
    assert (error["kind"], error["count"]) == ("request_timeout", 2), error
    running = f"SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%AS {marker}' AND pid <> pg_backend_pid()"
    wait_until(lambda: server.query(running) == "0", timeout=5, what="the server to cancel the statements")


@pytest.fixture(scope="session")
def postgres():
    yield from serve_sql("postgres")


@pytest.fixture(scope="session")
def mariadb():
    yield from serve_sql("mariadb")


class PostgresWithTls:
    """A throwaway PostgreSQL with TLS on (a certificate for 127.0.0.1 and localhost signed by
    the tests' CA), trusting that CA for client certificates, and a role `horde_cert` that
    must show one (pg_hba: clientcert=verify-ca) besides its password."""

    def __init__(self):
        import tls_material

        self.server = sql_server("postgres")
        self.port = self.server.port
        self.socket_dir = self.server.directory
        certs = self.server.directory / "certs"
        certs.mkdir()
        self.files = tls_material.make(certs)
        shutil.chown(certs, "postgres")
        for path in certs.iterdir():
            shutil.chown(path, "postgres")
            path.chmod(0o600 if path.suffix == ".key" else 0o644)
        hba = self.server.directory / "data" / "pg_hba.conf"
        hba.write_text("hostssl bench horde_cert 127.0.0.1/32 scram-sha-256 clientcert=verify-ca\n"
                       "hostnossl bench horde_plain 127.0.0.1/32 scram-sha-256\n"
                       "host bench horde_plain 127.0.0.1/32 reject\n" + hba.read_text())
        server_cert, server_key = self.files["server"]
        self.superuser([
            "ALTER SYSTEM SET ssl = on", f"ALTER SYSTEM SET ssl_cert_file = '{server_cert}'",
            f"ALTER SYSTEM SET ssl_key_file = '{server_key}'", f"ALTER SYSTEM SET ssl_ca_file = '{self.files['ca'][0]}'",
            "CREATE ROLE horde_cert LOGIN PASSWORD 'secret'", "CREATE ROLE horde_plain LOGIN PASSWORD 'secret'",
            "SELECT pg_reload_conf()",
        ])
        wait_until(lambda: self.server.query("SHOW ssl") == "on", timeout=10, what="PostgreSQL to turn TLS on")

    def serve_certificate(self, name):
        """Reloads the server with the tests' certificate `name` (tls_material's)."""
        certificate, key = self.files[name]
        self.superuser([f"ALTER SYSTEM SET ssl_cert_file = '{certificate}'", f"ALTER SYSTEM SET ssl_key_file = '{key}'",
                        "SELECT pg_reload_conf()"])
        wait_until(lambda: self.server.query("SHOW ssl_cert_file") == str(certificate), timeout=10,
                   what=f"PostgreSQL to serve {name}")

    def superuser(self, statements):
        argv = ["psql", "-q", "-h", str(self.socket_dir), "-p", str(self.port), "-U", "postgres", "-d", "bench"]
        for statement in statements:
            argv += ["-c", statement]
        subprocess.run(argv, check=True, capture_output=True)

    def url(self, query="", user="bench:benchpw", host="127.0.0.1"):
        return f"postgres://{user}@{host}:{self.port}/bench" + (f"?{query}" if query else "")

    def stop(self):
        self.server.stop()
        shutil.rmtree(self.server.directory, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_tls():
    server = PostgresWithTls()
    yield server
    server.stop()


CASSANDRA_SCRIPT = ROOT / "scripts" / "cassandra" / "start_cassandra.sh"


class CassandraNode:
    """One Apache Cassandra 5.0 process (scripts/cassandra, its jars fetched from Maven Central
    by scripts/test.sh) on its own loopback address, stopped by its PID."""

    def __init__(self, directory, port, storage_port, address="127.0.0.1", seed=None, tls_pem=None):
        self.directory, self.port, self.address = directory, port, address
        env = {**os.environ, "ADDRESS": address, "SEED": seed or address, "TLS_PEM": str(tls_pem or "")}
        started = subprocess.run(["bash", str(CASSANDRA_SCRIPT), str(directory), str(port), str(storage_port)],
                                 capture_output=True, text=True, timeout=60, env=env)
        if started.returncode != 0:
            raise RuntimeError(f"{CASSANDRA_SCRIPT} failed: {started.stderr}{started.stdout}")
        self.pid = int(started.stdout.strip().splitlines()[-1])

    def wait_ready(self):
        def ready():
            if not self.alive():
                log = (Path(self.directory) / "server.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"Cassandra at {self.address} exited while starting:\n{log}")
            return can_connect(self.port, self.address)

        wait_until(ready, timeout=120, what=f"Cassandra's CQL port at {self.address}")

    def alive(self):
        return Path(f"/proc/{self.pid}").exists()

    def stop(self, sig=signal.SIGTERM):
        try:
            os.kill(self.pid, sig)
            wait_until(lambda: not self.alive(), timeout=30, what="Cassandra to stop")
        except ProcessLookupError:
            pass
        except TimeoutError:
            os.kill(self.pid, signal.SIGKILL)


class Cassandra:
    """A throwaway single-node Apache Cassandra 5.0 on 127.0.0.1, or a cluster of `nodes` on
    127.0.0.1, 127.0.0.2... (the same ports, the first the seed). ``execute`` is a client of the
    tests' own (the DataStax Python driver), which counts on the server's side."""

    def __init__(self, nodes=1):
        self.directory = Path(tempfile.mkdtemp(prefix="horde-cassandra-"))
        self.port = free_port()
        storage_port = free_port()
        # Clients may speak TLS to the first node, or not: ``tls`` are the certificates
        # (tests/tls_material.py; the node's is "server", its CA "ca").
        import tls_material

        (self.directory / "tls").mkdir(parents=True)
        self.tls = tls_material.make(self.directory / "tls")
        server_certificate, server_key = self.tls["server"]
        tls_pem = self.directory / "tls" / "node.pem"
        tls_pem.write_bytes(server_key.read_bytes() + server_certificate.read_bytes())
        self.nodes = [CassandraNode(self.directory / "n1", self.port, storage_port, tls_pem=tls_pem)]
        try:
            self.nodes[0].wait_ready()
            # The others join through the seed, all at once (they start empty: no streaming).
            self.nodes += [CassandraNode(self.directory / f"n{i}", self.port, storage_port, f"127.0.0.{i}", "127.0.0.1")
                           for i in range(2, nodes + 1)]
            for node in self.nodes[1:]:
                node.wait_ready()
        except BaseException:
            self.stop()
            raise
        from cassandra.cluster import Cluster, ExecutionProfile, EXEC_PROFILE_DEFAULT
        from cassandra.policies import WhiteListRoundRobinPolicy

        profile = ExecutionProfile(load_balancing_policy=WhiteListRoundRobinPolicy(["127.0.0.1"]))
        self.cluster = Cluster(["127.0.0.1"], port=self.port, protocol_version=5,
                               execution_profiles={EXEC_PROFILE_DEFAULT: profile})
        self.client = self.cluster.connect()

    @property
    def pid(self):
        return self.nodes[0].pid

    @property
    def contact_point(self):
        return f"127.0.0.1:{self.port}"

    def execute(self, cql, params=(), consistency=None):
        """The server's own answer: every row."""
        from cassandra.query import SimpleStatement

        if consistency is None:
            return list(self.client.execute(cql, params))
        return list(self.client.execute(SimpleStatement(cql, consistency_level=consistency), params))

    def keyspace(self, name, replication=1):
        """A fresh keyspace."""
        self.execute(f"DROP KEYSPACE IF EXISTS {name}")
        self.execute(f"CREATE KEYSPACE {name} WITH replication = "
                     f"{{'class': 'SimpleStrategy', 'replication_factor': {replication}}}")
        return name

    def stop(self):
        if hasattr(self, "cluster"):
            self.cluster.shutdown()
        for node in self.nodes:
            node.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


@pytest.fixture(scope="session")
def cassandra():
    server = Cassandra()
    yield server
    server.stop()
