"""Every example under examples/ runs, against the server it is written for."""

import csv
import json
import os
import sqlite3
import subprocess

import pytest


from conftest import EXAMPLES, get_json


def run_example(command, tmp_path, env=None):
    completed = subprocess.run(
        command, capture_output=True, text=True, timeout=120, cwd=tmp_path, env={**os.environ, **(env or {})}
    )
    assert completed.returncode == 0, completed.stderr
    return completed


def summaries(tmp_path):
    return summaries_under(tmp_path, "results/*")


def summaries_under(tmp_path, pattern):
    return [json.loads(p.read_text()) for p in sorted(tmp_path.glob(f"{pattern}/summary.json"))]


def test_jsf_journey(target, tmp_path):
    run_example(["horde", "run", EXAMPLES / "jsf_journey.py", "-D", f"base_url={target.url}", "-D", "users=5"], tmp_path)
    [summary] = summaries(tmp_path)
    assert summary["global"]["ko"] == 0 and summary["global"]["count"] == 45


def test_seed004_load_simulation(nginx, tmp_path):
    before = nginx.requests_served()
    env = {"GATLING_URL": nginx.url + "/", "GATLING_USERS": "10", "GATLING_REQUESTS": "500", "GATLING_RAMP_TIME": "0"}
    run_example(["horde", "run", EXAMPLES / "seed004_load_simulation.py"], tmp_path, env)
    [summary] = summaries(tmp_path)
    assert summary["global"]["count"] == 500 and summary["global"]["ko"] == 0
    assert nginx.requests_served() - before == 500


def test_json_api(target, tmp_path):
    run_example(["horde", "run", EXAMPLES / "json_api.py", "-D", f"base_url={target.url}", "-D", "rate=10", "-D", "seconds=1"], tmp_path)
    [summary] = summaries(tmp_path)
    assert summary["global"]["ko"] == 0, summary["errors"]
    assert summary["users"]["started"] == 10
    assert [g["name"] for g in summary["groups"]] == ["catalogue"]
    assert target.stats()["total"] == 30


def test_plan_file(target, tmp_path):
    plan = json.loads((EXAMPLES / "plan.json").read_text())
    plan["protocol"]["base_url"] = target.url
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    run_example(["horde", "run", path], tmp_path)
    [summary] = summaries(tmp_path)
    assert summary["global"]["ko"] == 0, summary["errors"]
    assert summary["global"]["count"] == target.stats()["total"] > 0


def test_quick_mode(nginx, tmp_path):
    before = nginx.requests_served()
    run_example(["bash", EXAMPLES / "quick_mode.sh", nginx.url + "/", "--results", tmp_path / "results", "-q"], tmp_path)
    runs = summaries(tmp_path)
    assert len(runs) == 3
    assert runs[1]["global"]["count"] == 1000
    counted = sum(r["global"]["count"] for r in runs)
    in_flight_at_the_end = sum(r["global"]["interrupted"] for r in runs)
    assert counted <= nginx.requests_served() - before <= counted + in_flight_at_the_end


def test_exports(target, tmp_path):
    completed = run_example(["horde", "run", EXAMPLES / "exports.py", "-D", f"base_url={target.url}", "-D", "seconds=1",
                             "--results-dir", "out/run1", "-q", "--export", "locust:out/locust",
                             "--request-log", "out/requests.jtl"], tmp_path)
    run = tmp_path / "out" / "run1"
    assert completed.stdout.splitlines()[-1] == "out/run1"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["global"]["count"] == target.stats()["total"] == 60 and summary["global"]["ko"] == 0
    assert (run / "histograms.hlog").exists() and (run / "hgrm" / "all.hgrm").exists()
    with open(tmp_path / "out" / "locust_stats.csv", newline="") as f:
        assert list(csv.DictReader(f))[-1]["Request Count"] == "60"
    assert len((tmp_path / "out" / "requests.jtl").read_text().splitlines()) == 1 + 60


def test_workload_models(target, tmp_path):
    run_example(["horde", "run", EXAMPLES / "workload_models.py", "-D", f"base_url={target.url}"], tmp_path)
    [summary] = summaries(tmp_path)
    assert summary["global"]["ko"] == 0, summary["errors"]
    rows = {r["name"]: r for r in summary["requests"]}
    # Arrivals: 12.5 in the ramp, then 10 + 6.25 + 15 in the stairs; each runs once.
    assert rows["item"]["count"] == 44
    # The loopers ramp up to 4 users, then the maximum duration cuts them.
    assert summary["users"]["interrupted"] >= 3
    assert summary["run"]["status"] == "limit_reached"
    assert rows["after the arrivals"]["count"] == 1
    # Every request the server saw was counted, but at most one in flight per cut-off user.
    served = target.stats()["total"]
    assert summary["global"]["count"] <= served <= summary["global"]["count"] + summary["users"]["interrupted"]


def test_capacity_sweep_runs_as_a_plain_simulation_too(target, tmp_path):
    # The sweep itself is tested in test_sweep.py; here the file also runs on its own.
    run_example(["horde", "run", EXAMPLES / "capacity_sweep.py", "-D", f"base_url={target.url}"], tmp_path)
    [summary] = summaries(tmp_path)
    assert summary["global"]["ko"] == 0 and summary["global"]["count"] > 50


def test_capacity_sweep_on_a_cluster(target, tmp_path):
    # Every level split over two Dask worker processes (pip install 'horde[cluster]').
    run_example(["horde", "sweep", EXAMPLES / "capacity_sweep.py", "-D", f"base_url={target.url}", "-D", "loop=false",
                 "--rate", "20,40", "--level-duration", "1s", "--warmup", "0s", "--late-start-threshold", "50ms",
                 "--cluster", "local:2"], tmp_path)
    levels = summaries_under(tmp_path, "results/sweep-*/rate-*")
    assert [len(summary["machines"]) for summary in levels] == [2] * len(levels) and len(levels) >= 2
    # Every request the server saw was counted, but one in flight when its level was cut.
    counted = sum(summary["global"]["count"] for summary in levels)
    assert counted <= target.stats()["total"] <= counted + sum(summary["users"]["interrupted"] for summary in levels)


@pytest.mark.parametrize("schema", ["document_schema.json", "document_schema.xml"])
def test_generated_documents(target, tmp_path, schema):
    run_example(["horde", "run", EXAMPLES / "generated_documents.py", "-D", f"base_url={target.url}",
                 "-D", f"schema={schema}"], tmp_path)
    [summary] = summaries(tmp_path)
    assert summary["global"]["ko"] == 0, summary["errors"]
    assert summary["global"]["count"] == 100
    # The server parsed 100 JSON documents of the schema's shape.
    assert target.stats()["json_documents"] == 100


def test_couchdb_bulk_insert(couchdb, tmp_path):
    run_example(["horde", "run", EXAMPLES / "couchdb_bulk_insert.py", "-D", f"database_address={couchdb.url}",
                 "-D", "database_name=bulk_example", "-D", "num_connections=3", "-D", "num_bulk_insert_operations=4", "-D", "num_documents_per_bulk_insert=50"],
                tmp_path)
    [summary] = summaries(tmp_path)
    assert summary["global"]["ko"] == 0, summary["errors"]
    rows = {r["name"]: r for r in summary["requests"]}
    assert rows["bulk insert"]["ok"] == 12
    # The database's own count, read by horde's last scenario and again here.
    assert rows["count documents"]["ok"] == 1
    assert get_json(f"{couchdb.url}/bulk_example")["doc_count"] == 600


def test_couchdb_benchmark(couchdb, tmp_path):
    completed = run_example(["bash", EXAMPLES / "couchdb_benchmark.sh", couchdb.url, "--results", tmp_path / "results"],
                            tmp_path)
    [summary] = summaries(tmp_path)
    assert summary["global"]["ko"] == 0, summary["errors"]
    bulk, crud = summary["couchdb"]
    assert bulk["documents"] == {"inserted": 2000}
    # 400 operations per connection at 2:3:2:1, 4 connections.
    assert crud["documents"] == {"create": 400, "read": 600, "update": 400, "delete": 200}
    assert "database horde_benchmark: 2200 documents (as expected" in completed.stdout
    assert get_json(f"{couchdb.url}/horde_benchmark")["doc_count"] == 2200


def test_couchdb_mixed_traffic(couchdb, tmp_path):
    run_example(["horde", "run", EXAMPLES / "couchdb_mixed_traffic.py", "-D", f"database_address={couchdb.url}",
                 "-D", "database_name=mixed_example"], tmp_path)
    [summary] = summaries(tmp_path)
    assert summary["global"]["ko"] == 0, summary["errors"]
    rows = {r["name"]: r["ok"] for r in summary["requests"]}
    assert rows == {"create database": 1, "bulk insert": 6, "crud create": 60, "crud read": 90, "crud update": 60,
                    "crud delete": 30, "database info": 10}
    assert [s["name"] for s in summary["couchdb"]] == ["bulk insert", "crud"]
    assert get_json(f"{couchdb.url}/mixed_example")["doc_count"] == 300 + 60 - 30


def test_sql_experiment_on_sqlite(tmp_path):
    completed = run_example(["bash", EXAMPLES / "sql_experiment.sh", "", "--results", tmp_path / "results"], tmp_path)
    [summary] = summaries(tmp_path)
    assert all(p["verification"]["passed"] for p in summary["sql"]), summary["sql"]
    assert "Inserted 100000 rows in 0 minutes and" in completed.stdout


def test_sql_experiment_on_postgres(postgres, tmp_path):
    completed = run_example(["bash", EXAMPLES / "sql_experiment.sh", postgres.url, "--results", tmp_path / "results"],
                            tmp_path)
    [summary] = summaries(tmp_path)
    assert [p["name"] for p in summary["sql"]] == [
        "drop before", "create", "populate row-txn", "populate batch", "populate bulk", "select", "alter in-place",
        "update row-txn", "update temp-join", "update swap", "update server", "drop"]
    assert all(p["verification"]["passed"] for p in summary["sql"]), summary["sql"]
    assert "Updated 100000 rows in" in completed.stdout
    assert postgres.query("SELECT count(*) FROM pg_tables WHERE tablename = 'bulktest'") == "0", "dropped at the end"


def test_sql_over_tls(postgres_tls, tmp_path):
    ca = postgres_tls.files["ca"][0]
    for url, expect in [(postgres_tls.url(f"sslmode=verify-full&sslrootcert={ca}"), "tls"),
                        (f"postgres://bench@/bench?host={postgres_tls.socket_dir}&port={postgres_tls.port}", "unix")]:
        run_example(["horde", "run", EXAMPLES / "sql_over_tls.py", "-D", f"url={url}", "-D", f"expect={expect}"], tmp_path)
    summary = summaries(tmp_path)
    assert [(s["global"]["ok"], s["global"]["ko"]) for s in summary] == [(42, 0), (42, 0)], [s["errors"] for s in summary]


def test_compare(target, tmp_path):
    completed = run_example(["bash", EXAMPLES / "compare.sh", target.url, tmp_path / "results"], tmp_path)
    assert "horde compare exited 99" in completed.stdout, completed.stdout
    report = json.loads((tmp_path / "results" / "compare.json").read_text())
    [p50] = [c for c in report["comparisons"] if c["scope"] == "global" and c["metric"] == "p50"]
    assert p50["verdict"] == "slower" and p50["change"]["n_a"] == p50["change"]["n_b"] == 5
    assert report["plan_differences"], "the example compares two paths, with --force"
    assert (report["a"]["label"], report["b"]["label"]) == ("before", "after")
    # The page (drawn in a browser by tests/test_report_html.py): the same verdicts.
    page = (tmp_path / "results" / "compare.html").read_text()
    assert '<span class="badge bad" id="run-status">regression</span>' in page
    assert '<td class="name">all requests</td>' in page and '<td class="verdict worse">slower</td>' in page


def test_live_dashboard(target, tmp_path):
    """The example's page, read as a browser's EventSource would: updates during the run, the
    last one final, its count the server's."""
    import re
    import urllib.request

    process = subprocess.Popen(
        ["bash", EXAMPLES / "live_dashboard.sh", target.url + "/delay/5", "--results", tmp_path / "results", "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env={**os.environ, "DURATION": "3s"},
    )  # fmt: skip
    try:
        address = next(m.group(1) for line in process.stderr if (m := re.search(r"dashboard at (http://[^/]+)/", line)))
        updates = []
        with urllib.request.urlopen(address + "/events", timeout=60) as stream:
            data = None
            for raw in stream:
                line = raw.decode().rstrip("\n")
                if line.startswith("data: "):
                    data = json.loads(line[len("data: "):])
                elif line == "" and data is not None:
                    updates.append(data)
                    if data["final"]:
                        break
                    data = None
        process.stderr.read()
        assert process.wait(timeout=60) == 0
    finally:
        process.kill()
    assert len(updates) >= 2 and updates[-1]["final"]
    count = int(re.search(r'id="figure-count"><div class="value">(\d+)<', updates[-1]["main"]).group(1))
    [summary] = summaries(tmp_path)
    assert count == summary["global"]["count"] > 0
    # Requests still out at the deadline are cut, not counted: at most one a connection.
    assert count <= target.stats()["total"] <= count + 10


def test_every_example_is_covered():
    covered = {"jsf_journey.py", "some_file.txt", "seed004_load_simulation.py", "json_api.py", "plan.json",
               "quick_mode.sh", "workload_models.py", "capacity_sweep.py", "generated_documents.py",
               "document_schema.json", "document_schema.xml", "couchdb_bulk_insert.py", "couchdb_benchmark.sh",
               "couchdb_mixed_traffic.py", "https_site.py", "http2_site.py", "compressed_page.py",
               "page_resources.py", "live_updates.py", "csv_login.py", "users.csv", "orders_api.py",
               "read_your_writes.py", "lists_and_cookies.py", "ci_gate.py", "html_report.py", "compare.sh", "exports.py",
               "sql_experiment.sh", "signup_checked_in_db.py", "bcrypt_log_rounds.py", "bench_on_machines.sh",
               "sql_over_tls.py", "record_and_import.sh", "secret_headers.py", "think_times.py", "oauth_login.py",
               "cassandra_eventually.py", "ycsb_cassandra.sh", "cluster_run.py", "live_dashboard.sh",
               "upload_own_files.py", "uploads", "ycsb_in_a_scenario.py", "bench_connections.sh"}
    assert {p.name for p in EXAMPLES.iterdir()} == covered


def test_https_site(tls_nginx, tmp_path):
    before = tls_nginx.requests_served()
    run_example(["horde", "run", EXAMPLES / "https_site.py", "-D", f"base_url={tls_nginx.url(host='localhost')}",
                 "-D", f"ca_file={tls_nginx.files['ca'][0]}", "-D", "users=3"], tmp_path)
    [summary] = summaries(tmp_path)
    assert (summary["global"]["ok"], summary["global"]["ko"]) == (6, 0), summary["errors"]
    assert tls_nginx.requests_served() - before == 6
    assert summary["global"]["phases"]["tls"]["count"] == 3


def test_http2_site(tls_nginx, tmp_path):
    before = tls_nginx.requests_served()
    run_example(["horde", "run", EXAMPLES / "http2_site.py", "-D", f"base_url={tls_nginx.url()}",
                 "-D", f"ca_file={tls_nginx.files['ca'][0]}", "-D", "users=3"], tmp_path)
    [summary] = summaries(tmp_path)
    assert (summary["global"]["ok"], summary["global"]["ko"]) == (18, 0), summary["errors"]
    assert tls_nginx.requests_served() - before == 18
    assert summary["connections"]["http2"] == 3
    # Cleartext h2c, with prior knowledge.
    (tmp_path / "h2c").mkdir()
    run_example(["horde", "run", EXAMPLES / "http2_site.py", "-D", f"base_url={tls_nginx.url('h2c')}",
                 "-D", "prior_knowledge=1", "-D", "users=2", "-D", "repeat=1"], (tmp_path / "h2c"))
    [summary] = summaries(tmp_path / "h2c")
    assert (summary["global"]["ok"], summary["global"]["ko"], summary["connections"]["http2"]) == (4, 0, 2)


def test_compressed_page(tls_nginx, tmp_path):
    run_example(["horde", "run", EXAMPLES / "compressed_page.py", "-D", f"base_url={tls_nginx.url()}",
                 "-D", f"ca_file={tls_nginx.files['ca'][0]}", "-D", "path=/page", "-D", "text=compressed page"], tmp_path)
    [summary] = summaries(tmp_path)
    assert (summary["global"]["ok"], summary["global"]["ko"]) == (4, 0), summary["errors"]
    rows = {r["name"]: r for r in summary["requests"]}
    read, unread = rows["page, read"], rows["page, status only"]
    assert read["bodies_decoded"] == 2 and read["bytes_decoded"] > 4 * read["bytes_received"]
    assert unread["bodies_decoded"] == 0 and unread["bytes_received"] < read["bytes_decoded"] / 4


def test_page_resources(tls_nginx, tmp_path):
    ca = f"ca_file={tls_nginx.files['ca'][0]}"
    resources = ",".join(f"/site/{name}" for name in ("slow/site.css", "slow/app.js"))
    before = tls_nginx.requests_served()
    run_example(["horde", "run", EXAMPLES / "page_resources.py", "-D", f"base_url={tls_nginx.url()}", "-D", ca,
                 "-D", f"resources={resources}"], tmp_path)
    [summary] = summaries(tmp_path)
    # Two users: a page, two resources, a batch of two, a search.
    assert (summary["global"]["ok"], summary["global"]["ko"]) == (12, 0), summary["errors"]
    assert tls_nginx.requests_served() - before == 12
    rows = {r["name"]: r for r in summary["requests"]}
    assert rows["home page / site.css"]["count"] == 2 and rows["search"]["count"] == 2
    # The page's resources inferred from its HTML, over HTTP/1.1 this time.
    (tmp_path / "inferred").mkdir()
    run_example(["horde", "run", EXAMPLES / "page_resources.py", "-D", f"base_url={tls_nginx.url('site')}",
                 "-D", "infer=1", "-D", "users=1"], tmp_path / "inferred")
    [summary] = summaries(tmp_path / "inferred")
    assert (summary["global"]["ok"], summary["global"]["ko"]) == (1 + 4 + 2 + 1, 0), summary["errors"]


def test_live_updates(target, tmp_path):
    run_example(["horde", "run", EXAMPLES / "live_updates.py", "-D", f"base_url={target.url}", "-D", "users=3"], tmp_path)
    [summary] = summaries(tmp_path)
    assert summary["global"]["ko"] == 0, summary["errors"]
    rows = {r["name"]: r for r in summary["requests"]}
    assert (rows["echo"]["ok"], rows["first tick"]["ok"], rows["last tick"]["ok"]) == (9, 3, 3)
    stats = target.stats()
    assert (stats["ws_messages_echoed"], stats["sse_events"]) == (9, 15)


def csv_rows(path):
    with open(path, newline="") as file:
        return list(csv.DictReader(file))


def test_csv_login(django_login, tmp_path):
    rows = csv_rows(EXAMPLES / "users.csv")
    run_example(["horde", "run", EXAMPLES / "csv_login.py", "-D", f"base_url={django_login.url}",
                 "-D", f"users={len(rows)}"], tmp_path)
    [summary] = summaries(tmp_path)
    assert summary["global"]["ko"] == 0, summary["errors"]
    counts = {r["name"]: r["ok"] for r in summary["requests"]}
    assert counts == {name: len(rows) for name in ("login page", "login", "login Redirect 1", "logout", "logout Redirect 1")}
    # Django's own signals: every row of the file logged in once and out once, none failed,
    # no CSRF token was refused.
    stats = django_login.stats()
    everyone_once = {row["username"]: 1 for row in rows}
    assert (stats["logins"], stats["logouts"]) == (everyone_once, everyone_once)
    assert (stats["failed_logins"], stats["csrf_failures"]) == (0, 0)


def test_upload_own_files(django_login, tmp_path):
    import hashlib

    users = 3
    run_example(["horde", "run", EXAMPLES / "upload_own_files.py", "-D", f"base_url={django_login.url}",
                 "-D", f"users={users}"], tmp_path)
    [summary] = summaries(tmp_path)
    assert summary["global"]["ko"] == 0, summary["errors"]
    # Django's own record: each user posted its own file of the feeder, byte for byte.
    files = {name: (EXAMPLES / "uploads" / name).read_bytes() for name in
             ("invoice-1.txt", "invoice-2.txt", "invoice-3.txt")}
    received = {(u["name"], u["size"], u["sha256"]) for u in django_login.stats()["uploads"]}
    assert received == {(name, len(data), hashlib.sha256(data).hexdigest()) for name, data in files.items()}
    assert len({u["user"] for u in django_login.stats()["uploads"]}) == users


def test_a_missing_file_of_a_users_own_is_a_ko_naming_it(django_login, tmp_path):
    documents = tmp_path / "documents.csv"
    documents.write_text("document\ninvoice-1.txt\nno-such-invoice.txt\n")
    simulation = tmp_path / "upload.py"
    simulation.write_text((EXAMPLES / "upload_own_files.py").read_text()
                          .replace('csv("uploads/documents.csv")', f'csv({str(documents)!r})')
                          .replace('"uploads/${document}"', f'"{EXAMPLES}/uploads/${{document}}"'))
    (tmp_path / "users.csv").write_text((EXAMPLES / "users.csv").read_text())
    before = len(django_login.stats()["uploads"])
    run_example(["horde", "run", simulation, "-D", f"base_url={django_login.url}", "-D", "users=2"], tmp_path)
    [summary] = summaries(tmp_path)
    [error] = summary["errors"]
    assert error["kind"] == "unreadable_file" and error["count"] == 1, error
    assert "no-such-invoice.txt" in error["message"] and '"document"' in error["message"], error
    # Never sent: the site received the one good file only.
    assert len(django_login.stats()["uploads"]) - before == 1


def test_signup_checked_in_db(django_login, tmp_path):
    """HTTP and SQL in one scenario: users sign up on the Django site, find their row in its
    database, log in, and find the login recorded; the ids saved from SQL flow into SQL again."""
    users = 6
    before = django_login.stats()
    run_example(["horde", "run", EXAMPLES / "signup_checked_in_db.py", "-D", f"base_url={django_login.url}",
                 "-D", f"database=sqlite://{django_login.database}", "-D", f"users={users}", "-D", "run=t1"], tmp_path)
    [summary] = summaries(tmp_path)
    assert summary["global"]["ko"] == 0, summary["errors"]
    counts = {r["name"]: r["ok"] for r in summary["requests"]}
    assert counts == {name: users for name in ("signup page", "signup", "signup Redirect 1", "user row", "login",
                                                "login Redirect 1", "login recorded")}, counts
    # The site's side: six sign-ups and six logins of exactly those names, and the rows are in
    # its database with the login time set.
    stats = django_login.stats()
    names = {f"user-t1-{n}" for n in range(users)}
    assert stats["signups"] - before["signups"] == users
    assert names <= set(stats["logins"]), stats["logins"]
    with sqlite3.connect(django_login.database) as db:
        rows = db.execute("SELECT username FROM auth_user WHERE username LIKE 'user-t1-%' AND last_login IS NOT NULL")
        assert {name for (name,) in rows} == names

    # Run again with the same names: every sign-up is refused, so the user stops there; the
    # check names what the page said instead.
    (tmp_path / "again").mkdir()
    run_example(["horde", "run", EXAMPLES / "signup_checked_in_db.py", "-D", f"base_url={django_login.url}",
                 "-D", f"database=sqlite://{django_login.database}", "-D", f"users={users}", "-D", "run=t1"],
                tmp_path / "again")
    [summary] = summaries(tmp_path / "again")
    signup = next(r for r in summary["requests"] if r["name"] == "signup")
    assert (signup["ok"], signup["ko"]) == (0, users)
    assert not any(r["name"] == "user row" for r in summary["requests"])


def test_csv_login_with_a_wrong_password_and_too_few_rows(django_login, tmp_path):
    # The checks can fail: a wrong password is a KO (no welcome) and ends that user; a user
    # beyond the rows finds the queue empty.
    first, second = csv_rows(EXAMPLES / "users.csv")[:2]
    users_csv = tmp_path / "some_users.csv"
    users_csv.write_text(f"username,password\n{first['username']},wrong\n{second['username']},{second['password']}\n")
    run_example(["horde", "run", EXAMPLES / "csv_login.py", "-D", f"base_url={django_login.url}", "-D", "users=3",
                 "-D", f"users_csv={users_csv}"], tmp_path)
    [summary] = summaries(tmp_path)
    rows = {r["name"]: (r["ok"], r["ko"]) for r in summary["requests"]}
    assert rows["login"] == (1, 1) and rows["logout"] == (1, 0)
    assert "welcomed someone else" not in rows
    kinds = {e["kind"]: e["count"] for e in summary["errors"]}
    assert kinds == {"check_failed": 1, "feeder_exhausted": 1}, summary["errors"]
    stats = django_login.stats()
    assert stats["logins"] == {second["username"]: 1} and stats["failed_logins"] == 1


# The target's orders API: four orders per user, the first and third open.
ORDERS_PER_USER, OPEN_ORDERS_PER_USER = 4, 2


def test_orders_api(target, tmp_path):
    users = 6
    run_example(["horde", "run", EXAMPLES / "orders_api.py", "-D", f"base_url={target.url}", "-D", f"users={users}"],
                tmp_path)
    [summary] = summaries(tmp_path)
    assert summary["global"]["ko"] == 0, summary["errors"]
    counts = {r["name"]: r["ok"] for r in summary["requests"]}
    assert counts == {"login": users, "list orders": users, "read order": users * ORDERS_PER_USER,
                      "cancel order": users * OPEN_ORDERS_PER_USER}
    # The server's side: each order of the list it returned read once, only the open ones
    # cancelled, and every request after the login carried a token it knew.
    stats = target.stats()
    assert stats["api_logins"] == stats["orders_listed"] == users
    assert stats["orders_read"] == users * ORDERS_PER_USER
    assert stats["orders_cancelled"] == users * OPEN_ORDERS_PER_USER
    assert stats["unauthorized"] == 0
    assert stats["total"] == summary["global"]["count"]


def test_read_your_writes(tmp_path):
    from conftest import Target

    target = Target(args=["--eventual-delay-ms", "300"])
    try:
        completed = run_example(["horde", "run", EXAMPLES / "read_your_writes.py", "-D", f"base_url={target.url}",
                                 "-D", "users=8"], tmp_path)
        [summary] = summaries(tmp_path)
        stats = target.stats()
    finally:
        target.stop()
    assert summary["global"]["ko"] == 0, summary["errors"]
    [visible] = [g for g in summary["groups"] if g["name"] == "visible"]
    assert (visible["ok"], visible["ko"]) == (8, 0)
    # Each record became visible 300 ms after its write was accepted: more than one read each.
    assert visible["attempts"]["retried_passes"] == 8 and visible["duration"]["min_us"] >= 250_000
    read = next(r for r in summary["requests"] if r["name"] == "read")
    assert read["ok"] == 8 and read["retried"] == visible["attempts"]["total"] - 8
    assert (stats["eventual_writes"], stats["eventual_reads_found"]) == (8, 8)
    assert stats["eventual_reads_not_found"] == read["retried"]
    assert summary["generator"]["session_functions"]["calls"] == 8
    assert "time to consistency p99:" in completed.stdout


def test_lists_and_cookies(target, tmp_path):
    run_example(["horde", "run", EXAMPLES / "lists_and_cookies.py", "-D", f"base_url={target.url}", "-D", "users=4"],
                tmp_path)
    [summary] = summaries(tmp_path)
    assert summary["global"]["ko"] == 0, summary["errors"]
    items = get_json(f"{target.url}/api/items")["count"]
    by_route = target.stats()["by_route"]
    # Every id the list named was fetched once per user, and each cookie check read what the
    # server saw (both cookies, then only the persistent one after the session's were flushed).
    assert by_route["GET /api/items/{id}"] == 4 * items
    assert by_route["GET /cookies/echo"] == 8 and by_route["GET /cookies/set"] == 4
    assert {r["name"]: r["ok"] for r in summary["requests"]}["persistent only"] == 4


def test_html_report(target, tmp_path):
    run_example(["horde", "run", EXAMPLES / "html_report.py", "-D", f"base_url={target.url}", "-D", "rate=10", "-D", "seconds=1"], tmp_path)
    [summary] = summaries(tmp_path)
    assert summary["global"]["count"] == 50 and summary["global"]["ko"] == 10, summary["errors"]
    [directory] = list((tmp_path / "results").iterdir())
    html = (directory / "report.html").read_text()
    assert "missing page" in html and "slow pages" in html
    rewritten = run_example(["horde", "report", directory, "--html"], tmp_path)
    assert rewritten.stdout.strip() == str(directory / "report.html")


def test_ci_gate(target, tmp_path):
    # Every assertion passes at the default pay time...
    junit = tmp_path / "thresholds.xml"
    run_example(["horde", "run", EXAMPLES / "ci_gate.py", "-D", f"base_url={target.url}", "--junit", junit], tmp_path)
    [summary] = summaries(tmp_path)
    assert [t["status"] for t in summary["thresholds"]] == ["pass"] * 6
    assert summary["global"]["count"] == target.stats()["total"] == 120
    assert junit.read_text().count("<testcase") == 6
    # ...and a slow payment breaks the gate, with the thresholds' exit code.
    slow = subprocess.run(
        ["horde", "run", EXAMPLES / "ci_gate.py", "-D", f"base_url={target.url}", "-D", "pay_ms=300", "-q"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert slow.returncode == 99, slow.stderr
    failed = [t["text"] for t in summaries(tmp_path)[-1]["thresholds"] if t["status"] != "pass"]
    assert failed == ['"checkout / pay": p95<=200ms']


def test_bcrypt_log_rounds(tmp_path):
    # Seed 002's benchmark, quickly: two more log rounds are four times the work.
    out = tmp_path / "bcrypt.json"
    run_example(["horde", "bench", EXAMPLES / "bcrypt_log_rounds.py", "-p", "log_rounds=4,6", "--fast",
                 "--iteration-time", "50ms", "--out", out], tmp_path)
    small, large = (c["stats"]["score"] for c in json.loads(out.read_text())["cells"])
    assert 3.0 < large / small < 5.0


def test_bench_on_machines(tmp_path):
    completed = run_example(["bash", EXAMPLES / "bench_on_machines.sh", EXAMPLES / "bcrypt_log_rounds.py",
                             tmp_path / "results", "local", "--", "-p", "log_rounds=4", "--fast", "--iteration-time",
                             "20ms", "--machine", "here"], tmp_path)
    assert "here (reference)" in completed.stdout and "Budget 100ms for hashpw" in completed.stdout
    assert "here: log_rounds=4" in completed.stdout
    page = (tmp_path / "results" / "compare.html").read_text()
    assert 'id="bench-table"' in page and "hashpw: Score" in page


def test_record_and_import(target, tmp_path):
    run_example(["bash", EXAMPLES / "record_and_import.sh", target.url, tmp_path], tmp_path)
    [summary] = summaries(tmp_path)
    assert summary["global"]["ko"] == 0, summary["errors"]
    stats = target.stats()
    # The recorded journey once, then 20 buyers: each logs in, reads and cancels its own order.
    assert stats["api_logins"] == 21 and stats["orders_read"] == 21 and stats["orders_cancelled"] == 21
    assert stats["unauthorized"] == 0
    assert "bearer token rule" in (tmp_path / "orders_import.md").read_text()


def test_secret_headers_reach_the_server_and_never_the_results(target, tmp_path):
    users, key = 3, "k-7f3a9e"
    before = target.stats()
    run_example(["horde", "run", EXAMPLES / "secret_headers.py", "-D", f"base_url={target.url}", "-D", f"api_key={key}",
                 "-D", f"users={users}", "--request-log", tmp_path / "requests.jsonl"], tmp_path)
    [summary] = summaries(tmp_path)
    assert (summary["global"]["ok"], summary["global"]["ko"]) == (2 * users, 0), summary["errors"]
    # The server got every token: each list was authorized.
    after = target.stats()
    assert after["api_logins"] - before["api_logins"] == users
    assert after["orders_listed"] - before["orders_listed"] == users
    assert after["unauthorized"] == before["unauthorized"]
    # Nothing the run wrote holds the key; the plan in the results shows *** in its place.
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "report.html" for p in written) and any(p.name == "requests.jsonl" for p in written)
    for path in written:
        assert key not in path.read_text(errors="replace"), path
    headers = summary["plan"]["protocol"]["headers"]
    assert headers == [{"name": "X-Api-Key", "value": "***"}]


def test_think_times(target, tmp_path):
    before = target.stats()["total"]
    run_example(["horde", "run", EXAMPLES / "think_times.py", "-D", f"base_url={target.url}"], tmp_path)
    [summary] = summaries(tmp_path)
    # 20 users a second for 2 s, six requests each, every pause kind passed through.
    users = 40
    assert (summary["global"]["ok"], summary["global"]["ko"]) == (6 * users, 0), summary["errors"]
    assert target.stats()["total"] - before == 6 * users
    assert summary["plan"]["options"]["late_start_threshold_us"] == 5000
    assert summary["scheduling"]["scheduled_starts"] == users
    kinds = [step["type"] for step in summary["plan"]["scenarios"][0]["steps"] if step["type"].startswith("pause")]
    assert kinds == ["pause", "pause_uniform", "pause_exponential", "pause_normal", "pause_template"]


def test_oauth_login(target, tmp_path):
    users = 5
    before = target.stats()
    run_example(["horde", "run", EXAMPLES / "oauth_login.py", "-D", f"base_url={target.url}", "-D", f"users={users}"],
                tmp_path)
    [summary] = summaries(tmp_path)
    assert (summary["global"]["ok"], summary["global"]["ko"]) == (4 * users, 0), summary["errors"]
    after = target.stats()
    # One code per user, each exchanged once, and every token opened the orders API.
    assert after["oauth_codes_given"] - before["oauth_codes_given"] == users
    assert after["oauth_tokens_given"] - before["oauth_tokens_given"] == users
    assert after["oauth_invalid_grants"] == before["oauth_invalid_grants"]
    assert after["orders_listed"] - before["orders_listed"] == users
    # PKCE: each user's own verifier, verified by the server; no challenge sent twice.
    assert after["oauth_pkce_verified"] - before["oauth_pkce_verified"] == users
    assert after["oauth_pkce_challenges_reused"] == before["oauth_pkce_challenges_reused"]


def test_cassandra_eventually(cassandra, tmp_path):
    run_example(["horde", "run", EXAMPLES / "cassandra_eventually.py", "-D", f"cluster={cassandra.contact_point}",
                 "-D", "users=8"], tmp_path)
    [summary] = summaries(tmp_path)
    assert summary["global"]["ko"] == 0, summary["errors"]
    groups = {g["name"]: g for g in summary["groups"]}
    assert (groups["view agrees"]["ok"], groups["gone"]["ok"]) == (8, 8), groups
    counts = {r["name"]: r["ok"] for r in summary["requests"]}
    assert (counts["subscribe"], counts["unsubscribe"]) == (8, 8), counts
    # The server's side: every subscription written, every one deleted, the view empty again.
    assert cassandra.execute("SELECT count(*) FROM seed002.subscriptions")[0][0] == 0
    assert cassandra.execute("SELECT count(*) FROM seed002.subscriptions_by_source")[0][0] == 0


def test_ycsb_cassandra(cassandra, tmp_path):
    completed = run_example(["bash", EXAMPLES / "ycsb_cassandra.sh", cassandra.contact_point, "--keyspace",
                             "example_ycsb", "--results", tmp_path / "results"], tmp_path)
    [run] = [json.loads(p.read_text()) for p in tmp_path.glob("results/*/run/summary.json")]
    rows = {row["name"]: row for row in run["requests"]}
    assert set(rows) == {"READ", "UPDATE"} and sum(row["count"] for row in rows.values()) == 5000
    assert run["global"]["ko"] == 0, run["errors"]
    assert "[OVERALL], Throughput(ops/sec)" in completed.stdout and "[UPDATE], Return=OK" in completed.stdout
    assert cassandra.execute("SELECT count(*) FROM example_ycsb.usertable")[0][0] == 1000


def test_bench_connections(nginx, tmp_path):
    # Short trials: the example's shape, not a measurement.
    before = nginx.requests_served()
    completed = run_example(["bash", EXAMPLES / "bench_connections.sh", nginx.url + "/", tmp_path / "bench",
                             "--trials", "2", "--warmup", "1", "--measure", "2", "--iteration-time", "200ms"],
                            tmp_path)
    for name in ("one-process", "local-2"):
        result = json.loads((tmp_path / "bench" / f"{name}.json").read_text())
        assert [c["params"]["c"] for c in result["cells"]] == [2, 8]
        assert all(len(c["trials"]) == 2 and c["stats"]["score"] > 100 for c in result["cells"]), result["cells"]
    assert "one-process" in completed.stdout and "local-2" in completed.stdout
    assert (tmp_path / "bench" / "compare.html").stat().st_size > 1000
    assert nginx.requests_served() - before > 1000


def test_cluster_run(target, tmp_path):
    # Two Dask worker processes (pip install 'horde[cluster]'), started for the run.
    run_example(["horde", "run", EXAMPLES / "cluster_run.py", "--cluster", "local:2", "-D", f"base_url={target.url}",
                 "-D", "rate=50", "-D", "seconds=2", "--request-log", tmp_path / "requests.jsonl"], tmp_path)
    [summary] = summaries(tmp_path)
    assert summary["global"]["ko"] == 0, summary["errors"]
    assert summary["global"]["count"] == target.stats()["total"] == 100
    assert [m["requests"] for m in summary["machines"]] == [50, 50]
    # The request log: every request of both workers, each row once, each URL stamped by the
    # worker process whose user ran the session function.
    urls = [json.loads(line)["url"] for line in (tmp_path / "requests.jsonl").read_text().splitlines()]
    assert len(urls) == len({url.split("row=")[1].split("&")[0] for url in urls}) == 100
    assert {int(url.split("sent_by=")[1]) for url in urls} == {m["pid"] for m in summary["machines"]}
