"""--metrics serves the run's live metrics in the OpenMetrics text format while it runs, read
here by Prometheus' own Python client parser (which refuses malformed exposition)."""

import json
import re
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from prometheus_client.openmetrics.parser import text_string_to_metric_families

from conftest import free_port, stop_process


def scrape(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
            return response.headers["Content-Type"], response.read().decode()
    except (urllib.error.URLError, ConnectionError):
        return None, None


def samples(text):
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def http_run_with_metrics(url, duration, port, tmp_path):
    """`horde http URL` with 2 users for `duration`, serving --metrics on `port`."""
    return subprocess.Popen(
        ["horde", "http", url, "-c", "2", "-d", duration, "--metrics", f"127.0.0.1:{port}",
         "--results", str(tmp_path / "results"), "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_live_metrics_are_served_while_the_run_goes(target, tmp_path):
    port = free_port()
    run = http_run_with_metrics(target.url + "/delay/10", "3s", port, tmp_path)
    try:
        scrapes = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(scrapes) < 2:
            content_type, text = scrape(port)
            if text and "horde_requests_total" in text:
                assert content_type.startswith("application/openmetrics-text; version=1.0.0")
                scrapes.append(samples(text))
                time.sleep(1.1)
            else:
                time.sleep(0.05)
        assert len(scrapes) == 2, "two scrapes during the run"
        stdout, stderr = run.communicate(timeout=30)
    finally:
        stop_process(run)
    assert run.returncode == 0, stderr
    assert f"live metrics at http://127.0.0.1:{port}/metrics" in stderr
    request = (("outcome", "ok"), ("request", "GET " + target.url + "/delay/10"))
    first, second = (s[("horde_requests_total", request)] for s in scrapes)
    assert 0 < first < second, "counters grow between scrapes"
    latest = scrapes[-1]
    assert latest[("horde_users_active", ())] == 2
    label = (("request", "GET " + target.url + "/delay/10"),)
    buckets = sorted(
        (float(dict(labels)["le"]), value)
        for (name, labels), value in latest.items()
        if name == "horde_latency_seconds_bucket"
    )
    counts = [value for _, value in buckets]
    assert counts == sorted(counts), "cumulative buckets"
    assert buckets[-1] == (float("inf"), latest[("horde_latency_seconds_count", label)])
    # /delay/10: nothing under 5 ms, everything under a second.
    assert dict(buckets)[0.005] == 0 and dict(buckets)[1.0] == buckets[-1][1]
    # The endpoint ends with the run.
    assert scrape(port) == (None, None)


def test_a_metrics_port_in_use_fails_before_anything_is_sent(target, tmp_path):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        completed = subprocess.run(
            ["horde", "http", target.url + "/", "-n", "5", "--metrics", f"127.0.0.1:{port}", "--results", str(tmp_path)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert completed.returncode == 3, completed.stderr
    assert f"--metrics: cannot listen on 127.0.0.1:{port}" in completed.stderr
    assert target.stats()["total"] == 0
    bad = subprocess.run(["horde", "http", target.url + "/", "--metrics", "localhost"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--metrics" in bad.stderr


def scrape_until_done(process, port, seen):
    """Scrapes every 50 ms until the command ends; `seen(samples)` is called on each scrape."""
    scrapes = 0
    while process.poll() is None:
        _, text = scrape(port)
        if text and "horde_requests_total" in text:
            seen(samples(text))
            scrapes += 1
        time.sleep(0.05)
    return scrapes


def test_a_sweep_serves_every_level_on_one_endpoint_labelled_by_level(target, tmp_path):
    port = free_port()
    sweep = subprocess.Popen(
        ["horde", "sweep", target.url + "/delay/5", "--users", "1,3", "--level-duration", "2s", "--warmup", "0",
         "--metrics", f"127.0.0.1:{port}", "--results", str(tmp_path / "results"), "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    levels = {}

    def seen(found):
        for (metric, labels), value in found.items():
            labels = dict(labels)
            # Every sample says which level (and which run of it: a level not delivered runs again).
            assert "level" in labels and labels.get("level_run") in ("1", "2"), (metric, labels)
            if metric == "horde_users_active":
                levels.setdefault(labels["level"], set()).add(value)

    try:
        assert scrape_until_done(sweep, port, seen) > 4
        stdout, stderr = sweep.communicate(timeout=30)
    finally:
        stop_process(sweep)
    assert sweep.returncode == 0, stderr
    assert f"live metrics at http://127.0.0.1:{port}/metrics, labelled by level" in stderr
    # Both levels were scraped, each with its own users; one endpoint for the whole sweep.
    assert set(levels) == {"1", "3"}, levels
    assert 1 in levels["1"] and 3 in levels["3"], levels
    assert scrape(port) == (None, None), "the endpoint ends with the sweep"


def test_trials_serve_every_run_on_one_endpoint_labelled_by_trial(target, tmp_path):
    port = free_port()
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({
        "version": 1, "name": "trials", "protocol": {"base_url": target.url},
        # Published every 250 ms: the last trial shows before the endpoint ends with it.
        "options": {"snapshot_interval_ms": 250},
        "scenarios": [{"name": "s", "injection": [{"type": "constant_concurrent_users", "users": 2, "duration_ms": 1000}],
                       "steps": [{"type": "request", "name": "delay", "method": "GET", "url": "/delay/5"}]}],
    }))  # fmt: skip
    trials = subprocess.Popen(
        ["horde", "run", "--trials", "2", str(plan), str(plan), "--metrics", f"127.0.0.1:{port}",
         "--results", str(tmp_path / "results"), "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    runs = set()

    def seen(found):
        for (metric, labels), value in found.items():
            if metric == "horde_requests_total":
                labels = dict(labels)
                runs.add((labels["trial"], labels["arm"]))

    try:
        assert scrape_until_done(trials, port, seen) > 4
        stdout, stderr = trials.communicate(timeout=30)
    finally:
        stop_process(trials)
    assert trials.returncode == 0, stderr
    # A B B A: each trial its own series, named by its number and its arm.
    assert runs == {("1", "A"), ("2", "B"), ("3", "B"), ("4", "A")}, runs


DASHBOARD = Path(__file__).parent.parent / "docs" / "grafana" / "horde-dashboard.json"


def dashboard_queries(dashboard):
    """Every PromQL expression of the dashboard: its panels' and its variables' queries."""
    queries = [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]
    for variable in dashboard["templating"]["list"]:
        query = variable.get("query")
        if isinstance(query, dict):
            queries.append(query["query"])
    return queries


def test_the_grafana_dashboard_queries_only_what_horde_exports(target, tmp_path):
    """docs/grafana/horde-dashboard.json: each metric and label its queries name is in a real
    --metrics scrape (job and instance are the labels Prometheus adds to every target)."""
    dashboard = json.loads(DASHBOARD.read_text())
    queries = dashboard_queries(dashboard)
    assert len(queries) >= 10 and all(panel["datasource"]["uid"] == "${datasource}" for panel in dashboard["panels"])
    port = free_port()
    run = http_run_with_metrics(target.url + "/status/503", "2s", port, tmp_path)
    try:
        text = None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (text and "horde_errors_total{" in text):
            text = scrape(port)[1]
            time.sleep(0.05)
        run.communicate(timeout=30)
    finally:
        stop_process(run)
    exported = samples(text)
    names = {name for name, _ in exported}
    labels = {label for _, pairs in exported for label, _ in pairs} | {"job", "instance"}
    used_names = {name for query in queries for name in re.findall(r"\bhorde_[a-z_]+\b", query)}
    assert used_names and used_names <= names, f"not exported: {used_names - names}"
    used_labels = set()
    for query in queries:
        for selector in re.findall(r"\{([^}]*)\}", query):
            used_labels |= set(re.findall(r"([a-z_]+)\s*(?:=~|!=|!~|=)", selector))
        for grouping in re.findall(r"\bby\s*\(([^)]*)\)", query):
            used_labels |= {label.strip() for label in grouping.split(",")}
        used_labels |= set(re.findall(r"label_values\([^,]+,\s*([a-z_]+)\)", query))
    assert used_labels <= labels, f"labels not exported: {used_labels - labels}"
    assert {"request", "outcome", "kind", "le"} <= used_labels
