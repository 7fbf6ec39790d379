"""--metrics serves the run's live metrics in the OpenMetrics text format while it runs, read
here by Prometheus' own Python client parser (which refuses malformed exposition)."""

import subprocess
import time
import urllib.error
import urllib.request

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


def test_live_metrics_are_served_while_the_run_goes(target, tmp_path):
    port = free_port()
    run = subprocess.Popen(
        ["horde", "http", target.url + "/delay/10", "-c", "2", "-d", "3s", "--metrics", f"127.0.0.1:{port}",
         "--results", str(tmp_path / "results"), "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
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
