"""--dashboard: the run's report served live while it goes (server-sent events), against the
built-in target. Read here two ways: as raw event streams (several at once, one closed and
reopened mid-run) and in Debian's chromium through Playwright (the numbers change during the
run and end equal to summary.json's, nothing a name holds runs, Stop works only when allowed)."""

import json
import re
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

from conftest import free_port, stop_process, wait_until

ATTACK = "</script><img src=x onerror=window.pwned=1>"


class DashboardRun:
    """horde with --dashboard in its own process; `url` is the page it printed."""

    def __init__(self, args, tmp_path):
        self.results = tmp_path / "results"
        self.process = subprocess.Popen(
            ["horde", *map(str, args), "--results", str(self.results)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        )  # fmt: skip
        self.stderr = []
        self.url = None
        for line in self.process.stderr:
            self.stderr.append(line)
            match = re.search(r"dashboard at (http://\S+)", line)
            if match:
                self.url = match.group(1)
                break
        if self.url is None:
            self.process.kill()
            raise AssertionError("no dashboard address printed: " + "".join(self.stderr))
        self.base = re.match(r"http://[^/]+", self.url).group(0)
        # The rest of stderr is read as it comes, so that horde never blocks on a full pipe.
        self.reader = threading.Thread(target=lambda: self.stderr.extend(self.process.stderr), daemon=True)
        self.reader.start()

    def wait(self, timeout=60):
        stdout = self.process.stdout.read()
        code = self.process.wait(timeout=timeout)
        self.reader.join(timeout=5)
        return code, stdout, "".join(self.stderr)

    def results_dir(self):
        [directory] = [p for p in self.results.iterdir() if p.is_dir()]
        return directory

    def stop(self):
        stop_process(self.process)


class EventStream:
    """One page's stream of updates, read in a thread: each event's id and parsed data."""

    def __init__(self, base, token_query=""):
        self.events = []
        self.error = None
        self.response = urllib.request.urlopen(f"{base}/events{token_query}", timeout=60)
        assert self.response.headers["Content-Type"] == "text/event-stream"
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        fields = {}
        try:
            for raw in self.response:
                line = raw.decode().rstrip("\n")
                if line == "":
                    if fields.get("event") == "report":
                        self.events.append((int(fields["id"]), json.loads(fields["data"])))
                        if self.events[-1][1]["final"]:
                            return
                    fields = {}
                elif not line.startswith(":"):
                    name, _, value = line.partition(": ")
                    fields[name] = value
        except Exception as err:  # noqa: BLE001 - kept for the assertion that reads it
            self.error = err

    def close(self):
        self.response.close()


def figure(main_html, figure_id):
    match = re.search(rf'id="{figure_id}"><div class="value">([^<]*)<', main_html)
    assert match, f"{figure_id} not in the page"
    return match.group(1)


def inside(tag, document):
    # In the body: the styles may name the elements in their comments.
    body = document[document.index("</head>"):]
    return re.search(rf"<{tag}[^>]*>(.*?)</{tag}>", body, re.S).group(1)


def test_every_open_page_gets_each_update_and_the_last_is_report_html(target, tmp_path):
    run = DashboardRun(["http", target.url + "/delay/5", "-c", "2", "-d", "4s", "-q", "--dashboard"], tmp_path)
    try:
        first, second = EventStream(run.base), EventStream(run.base)
        # A third page is closed after its first update and opened again: it gets the newest at once.
        third = EventStream(run.base)
        wait_until(lambda: third.events, what="the third page's first update")
        third.close()
        time.sleep(1.5)
        reopened = EventStream(run.base)
        wait_until(lambda: reopened.events, what="the reopened page's first update")
        assert reopened.events[0][0] > third.events[0][0], "the reopened page starts from the newest update"
        code, stdout, stderr = run.wait()
    finally:
        run.stop()
    assert code == 0, stderr
    for stream in (first, second, reopened):
        stream.thread.join(timeout=10)
        assert stream.error is None, stream.error
        ids = [event_id for event_id, _ in stream.events]
        assert ids == sorted(set(ids)), f"each update once, in order: {ids}"
        assert stream.events[-1][1]["final"], "the stream ends with the final report"
    assert len(first.events) >= 3, f"updates during a 4 s run: {[i for i, _ in first.events]}"
    counts = [int(figure(update["main"], "figure-count")) for _, update in first.events]
    assert counts[0] < counts[-1] and counts == sorted(counts), f"the request count grows: {counts}"
    directory = run.results_dir()
    summary = json.loads((directory / "summary.json").read_text())
    final = first.events[-1][1]
    assert int(figure(final["main"], "figure-count")) == summary["global"]["count"] > 0
    assert "limit_reached" in final["header"], "a run of -d ends as its duration says"
    # The final update is report.html's own content.
    report = (directory / "report.html").read_text()
    assert final["main"] == inside("main", report)
    assert final["nav"] == inside("nav", report)
    assert final["header"] == inside("header", report)
    charts = re.search(r'<script type="application/json" id="report-charts">(.*?)</script>', report, re.S).group(1)
    assert final["charts"] == json.loads(charts)
    assert second.events[-1][1] == final


def test_the_page_updates_in_a_browser_and_runs_nothing_a_name_holds(target, tmp_path, browser):
    plan = {
        "version": 1,
        "name": "dashboard",
        "protocol": {"base_url": target.url},
        "scenarios": [{
            "name": f"scenario {ATTACK}",
            "injection": [{"type": "constant_concurrent_users", "users": 2, "duration_ms": 5000}],
            "steps": [
                {"type": "request", "name": ATTACK, "method": "GET", "url": "/delay/5"},
                {"type": "pause", "duration_ms": 5},
            ],
        }],
    }  # fmt: skip
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    run = DashboardRun(["run", "plan.json", "-q", "--dashboard"], tmp_path)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems, requests = [], []
    page.on("console", lambda m: m.type in ("error", "warning") and problems.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("dialog", lambda d: (problems.append(f"dialog {d.message}"), d.dismiss()))
    page.on("request", lambda r: requests.append(r.url))
    try:
        page.goto(run.url)
        page.wait_for_function("() => document.getElementById('live-state').textContent.startsWith('live · updated')")
        seen = page.locator("#figure-count .value").inner_text()
        page.wait_for_function("seen => document.querySelector('#figure-count .value').textContent !== seen", arg=seen, timeout=10_000)
        # A zoom on the charts over time stays across updates (the chart is drawn again each time).
        page.evaluate("location.hash = 'over-time'")
        page.wait_for_function("() => window.hordeReport.xRange('time-users') !== null")
        box = page.locator('[data-chart="time-users"] .u-over').bounding_box()
        y = box["y"] + box["height"] / 2
        page.mouse.move(box["x"] + box["width"] * 0.2, y)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] * 0.6, y, steps=5)
        page.mouse.up()
        zoomed = page.evaluate("() => window.hordeReport.xRange('time-users')")
        assert zoomed[0] > 0, f"the drag zoomed in: {zoomed}"
        updated = page.locator("#live-state").inner_text()
        page.wait_for_function("seen => document.getElementById('live-state').textContent !== seen", arg=updated)
        assert page.evaluate("() => window.hordeReport.xRange('time-users')") == zoomed, "the zoom outlived the update"
        # Another page: the reader's choice of page stays across updates.
        page.evaluate("location.hash = 'requests'")
        updated = page.locator("#live-state").inner_text()
        page.wait_for_function("seen => document.getElementById('live-state').textContent !== seen", arg=updated)
        page.wait_for_function("() => document.getElementById('live-state').textContent.startsWith('final report')", timeout=30_000)
        assert page.evaluate("document.getElementById('requests').classList.contains('current')")
        code, _, stderr = run.wait()
        assert code == 0, stderr
        summary = json.loads((run.results_dir() / "summary.json").read_text())
        page.evaluate("location.hash = 'overview'")
        assert page.locator("#figure-count .value").inner_text() == str(summary["global"]["count"])
        assert page.locator("#figure-ok .value").inner_text() == str(summary["global"]["ok"])
        assert page.locator("#run-status").inner_text() == summary["run"]["status"] == "completed"
        assert page.locator("#requests-table td.name", has_text=ATTACK).count() == 1, "the name shown as text"
        assert page.evaluate("window.pwned === undefined") and page.locator("img").count() == 0
        assert problems == [], problems
        assert all(url.startswith(run.base) for url in requests), requests
    finally:
        page.close()
        run.stop()


def test_the_stop_button_stops_the_run_only_with_dashboard_control(target, tmp_path, browser):
    run = DashboardRun(["http", target.url + "/delay/5", "-c", "2", "-d", "60s", "-q", "--dashboard", "--dashboard-control"], tmp_path)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.on("dialog", lambda d: d.accept())
    try:
        page.goto(run.url)
        page.wait_for_function("() => document.getElementById('live-state').textContent.startsWith('live · updated')")
        started = time.monotonic()
        page.locator("#live-stop").click()
        try:
            page.wait_for_function("() => document.getElementById('live-state').textContent.startsWith('final report')", timeout=30_000)
        except Exception as timed_out:  # playwright's TimeoutError: say what the page and horde showed
            state = page.locator("#live-state").inner_text()
            stopped = page.locator("#live-stop").count() and page.locator("#live-stop").is_disabled()
            run.stop()
            raise AssertionError(f"no final report 30 s after Stop was clicked: the page says {state!r} (button "
                                 f"disabled: {stopped}); horde said: {''.join(run.stderr)}") from timed_out
        code, _, stderr = run.wait()
        assert time.monotonic() - started < 20, "stopped long before the 60 s the run would take"
        assert page.locator("#run-status").inner_text() == "interrupted"
    finally:
        page.close()
        run.stop()
    assert code == 130, stderr
    assert "stop asked from the dashboard" in stderr
    summary = json.loads((run.results_dir() / "summary.json").read_text())
    assert summary["run"]["status"] == "interrupted" and summary["global"]["count"] > 0


def test_a_stop_answer_slower_than_the_final_report_leaves_the_final_report_shown(target, tmp_path, browser):
    # Under load the final report can come on the event stream before the answer to the POST
    # that asked for the stop: the answer must not put "stopping" back over the final report.
    # Here the answer is held until horde has exited, so the final report always comes first.
    run = DashboardRun(["http", target.url + "/delay/5", "-c", "2", "-d", "60s", "-q", "--dashboard", "--dashboard-control"], tmp_path)
    answered = threading.Event()

    def answer_after_horde_exits(route):
        response = route.fetch()  # the stop reaches horde now
        wait_until(lambda: run.process.poll() is not None, what="horde's exit after the stop", timeout=30)
        route.fulfill(response=response)
        answered.set()

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.on("dialog", lambda d: d.accept())
    page.route("**/stop?*", answer_after_horde_exits)
    try:
        page.goto(run.url)
        page.wait_for_function("() => document.getElementById('live-state').textContent.startsWith('live · updated')")
        page.locator("#live-stop").click()
        page.wait_for_function("() => document.getElementById('live-state').textContent.startsWith('final report')", timeout=30_000)
        # The route handler runs on Playwright's dispatcher, which only turns while this thread is
        # inside a Playwright call: wait in one (a plain sleep would hold the answer back forever).
        deadline = time.monotonic() + 15
        while not answered.is_set():
            assert time.monotonic() < deadline, "the held answer to the stop was never sent"
            page.wait_for_timeout(50)
        page.wait_for_timeout(300)  # the page's handler of the answer has run
        assert page.locator("#live-state").inner_text().startswith("final report")
        assert page.locator("#run-status").inner_text() == "interrupted"
        code, _, stderr = run.wait()
    finally:
        page.close()
        run.stop()
    assert code == 130, stderr


def test_without_control_no_stop_is_taken_and_a_foreign_host_is_refused(target, tmp_path):
    run = DashboardRun(["http", target.url + "/delay/5", "-c", "1", "-d", "3s", "-q", "--dashboard"], tmp_path)
    try:
        with urllib.request.urlopen(run.url, timeout=30) as response:
            page = response.read().decode()
        assert 'id="live-stop"' not in page
        settings = json.loads(re.search(r'<meta name="horde-dashboard" content="([^"]*)"', page).group(1).replace("&quot;", '"'))
        assert settings["control"] is False
        stop = urllib.request.Request(run.base + "/stop", method="POST", headers={"X-Horde-Token": settings["token"]})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(stop, timeout=10)
        assert refused.value.code == 403 and b"--dashboard-control" in refused.value.read()
        # A page of another site that made its name resolve to 127.0.0.1 sends its own Host.
        port = run.base.rsplit(":", 1)[1]
        rebinding = urllib.request.Request(run.base + "/", headers={"Host": f"evil.example:{port}"})
        with pytest.raises(urllib.error.HTTPError) as foreign:
            urllib.request.urlopen(rebinding, timeout=10)
        assert foreign.value.code == 403
        code, _, stderr = run.wait()
    finally:
        run.stop()
    assert code == 0, stderr
    assert json.loads((run.results_dir() / "summary.json").read_text())["run"]["status"] == "limit_reached"


def test_a_sweep_shows_each_level_then_its_own_report(target, tmp_path):
    run = DashboardRun(
        ["sweep", target.url + "/delay/2", "--users", "1,2", "--level-duration", "1s", "--warmup", "0s", "-q", "--dashboard"],
        tmp_path,
    )  # fmt: skip
    try:
        stream = EventStream(run.base)
        code, _, stderr = run.wait()
        stream.thread.join(timeout=10)
    finally:
        run.stop()
    assert code == 0, stderr
    assert len(stream.events) >= 3, "the levels' pages, then the sweep's"
    final = stream.events[-1][1]
    assert final["final"] and 'id="capacity"' in final["main"], "the last page is the sweep's report"


@pytest.mark.parametrize(
    "flag, words",
    [
        (["--dashboard", "nonsense"], "--dashboard \"nonsense\": not an address"),
        (["--dashboard-control"], "--dashboard"),
    ],
)
def test_bad_dashboard_flags_exit_2_naming_the_flag(target, tmp_path, flag, words):
    completed = subprocess.run(["horde", "http", target.url, "-n", "1", *flag], capture_output=True, text=True, timeout=60)
    assert completed.returncode == 2, completed.stderr
    assert words in completed.stderr


def test_a_port_in_use_is_found_before_the_run(target, tmp_path):
    port = free_port()
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        completed = subprocess.run(["horde", "http", target.url, "-n", "1", "--dashboard", str(port)], capture_output=True, text=True, timeout=60)
    assert completed.returncode != 0
    assert f"--dashboard: cannot listen on 127.0.0.1:{port}" in completed.stderr
    assert target.stats()["total"] == 0, "nothing was sent"
