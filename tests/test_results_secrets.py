"""Credentials never reach the results: database passwords (in a URL's user-info or a
`password=` parameter) and the values of secret headers (Authorization, Cookie,
Proxy-Authorization, and those a plan marks with `secret_headers`) are replaced by `***` in
every file a run, `horde sql`, a sweep or trials write, exports included. The plan a user
prints with `horde plan` is their own and keeps them."""

import json
import subprocess

from conftest import free_port

PASSWORD = "benchpw"
TOKEN = "t0k3n-abc123"
API_KEY = "k3y-def456"
COOKIE = "c00kie-ghi789"
SECRETS = (PASSWORD, TOKEN, API_KEY, COOKIE)

SCENARIO = '''
from horde import at_once_users, http, param, scenario, setup, sql
scn = (scenario("secrets")
       .exec(http("home").get("/").header("Cookie", "session=c00kie-ghi789"))
       .exec(sql("one").query("SELECT 1").on("default"))
       .exec(sql("two").query("SELECT 2").on("reports")))
setup(scn.inject(at_once_users(2)),
      protocol=[http.base_url(param("base_url")).header("Authorization", "Bearer t0k3n-abc123")
                    .header("X-Api-Key", "k3y-def456").secret_headers("X-Api-Key"),
                sql.url(param("url")),
                sql.url(param("reports_url")).named("reports")])
'''


def files_holding_secrets(*roots):
    """Every file under `roots` (or the file itself) whose bytes hold a secret, with which."""
    found = []
    for root in roots:
        paths = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()]
        assert paths, f"nothing written under {root}"
        for path in paths:
            data = path.read_bytes()
            found.extend((str(path), secret) for secret in SECRETS if secret.encode() in data)
    return found


def write_simulation(tmp_path, postgres, target):
    sim = tmp_path / "secrets.py"
    sim.write_text(SCENARIO)
    with_parameter = postgres.url.replace(f"bench:{PASSWORD}@", "bench@") + f"?password={PASSWORD}"
    return sim, ["-D", f"base_url={target.url}", "-D", f"url={postgres.url}", "-D", f"reports_url={with_parameter}"]


def test_a_run_with_databases_and_secret_headers_writes_no_credential(horde, postgres, target, tmp_path):
    sim, params = write_simulation(tmp_path, postgres, target)
    exports = tmp_path / "exports"
    exports.mkdir()
    result = horde("run", sim, *params, "--threshold", "p99<10s", "--junit", exports / "junit.xml",
                   "--request-log", exports / "requests.jtl", "--export", f"locust:{exports / 'locust'}")
    assert result.code == 0, result.stderr
    summary = result.summary
    assert summary["global"]["ko"] == 0, summary["errors"]
    assert target.stats()["total"] == 2
    jsonl = horde("run", sim, *params, "--request-log", exports / "requests.jsonl")
    assert jsonl.code == 0, jsonl.stderr
    assert files_holding_secrets(result.results_dir, jsonl.results_dir, exports) == []
    assert not any(secret in result.stdout + result.stderr for secret in SECRETS)
    # What is shown instead, so that the plan still says what ran.
    plan = summary["plan"]
    assert [d["url"] for d in plan["databases"]] == [
        postgres.url.replace(PASSWORD, "***"),
        postgres.url.replace(f"bench:{PASSWORD}@", "bench@") + "?password=***",
    ]
    headers = {h["name"]: h["value"] for h in plan["protocol"]["headers"]}
    assert headers == {"Authorization": "***", "X-Api-Key": "***"}
    assert plan["protocol"]["secret_headers"] == ["X-Api-Key"]
    # The plan printed for the user keeps everything.
    printed = subprocess.run(["horde", "plan", sim, *params], capture_output=True, text=True, check=True).stdout
    assert all(secret in printed for secret in SECRETS)


def test_a_sweep_and_trials_write_no_credential(horde, postgres, target, tmp_path):
    sim, params = write_simulation(tmp_path, postgres, target)
    sweep = horde("sweep", sim, *params, "--users", "1,2", "--level-duration", "500ms", "--warmup", "0")
    assert sweep.code == 0, sweep.stderr
    trials = horde("run", "--trials", "2", sim, sim, *params)
    assert trials.code == 0, trials.stderr
    assert files_holding_secrets(sweep.results_dir, trials.results_dir) == []


def test_horde_sql_writes_no_password(horde, postgres):
    result = horde("sql", "--url", postgres.url, "--rows", "1000", "--phases", "create,populate,select",
                   "--populate", "row-txn,batch", "--replace")
    assert result.code == 0, result.stderr
    assert files_holding_secrets(result.results_dir) == []
    assert not any(PASSWORD in text for text in (result.stdout, result.stderr))
    assert all(step["steps"][0]["url"] == postgres.url.replace(PASSWORD, "***")
               for step in result.summary["plan"]["scenarios"])


def test_quick_mode_names_its_row_without_the_password(horde, target, tmp_path):
    url = target.url.replace("http://", f"http://scott:{PASSWORD}@") + "/"
    log = tmp_path / "requests.jsonl"
    result = horde("http", url, "-n", "3", "-c", "1", "-H", f"Authorization: Bearer {TOKEN}", "--request-log", log)
    assert result.code == 0, result.stderr
    assert [r["name"] for r in result.summary["requests"]] == [f"GET {url.replace(PASSWORD, '***')}"]
    assert files_holding_secrets(result.results_dir, log) == []
    assert [json.loads(line)["url"] for line in log.read_text().splitlines()] == [url.replace(PASSWORD, "***")] * 3
