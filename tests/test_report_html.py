"""report.html in a real browser (Debian's chromium, driven by Playwright): it renders offline
with no console error, every chart is drawn, its numbers are the summary's, nothing a server
or a user named can run in it, and it stays usable with 5,000 request names. Runs are real,
against the built-in target."""

import copy
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import CHROMIUM, EXAMPLES, wait_until

playwright_api = pytest.importorskip("playwright.sync_api")

ATTACK = "</script><img src=x onerror=alert(1)>"

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed (apt-get install chromium)")


class Report:
    """An open report.html, with what went wrong while it was open."""

    def __init__(self, browser, path):
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.problems = []
        self.dialogs = []
        self.requests = []
        self.page.on("console", lambda m: m.type in ("error", "warning") and self.problems.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("request", lambda r: r.url.startswith("file:") or self.requests.append(r.url))
        self.url = path.resolve().as_uri()
        self.page.goto(self.url)

    def show(self, page_id):
        self.page.evaluate("id => { location.hash = id; }", page_id)
        self.page.wait_for_function("id => document.getElementById(id).classList.contains('current')", arg=page_id)

    def charts_drawn(self, page_id):
        """Each chart of a page: its canvas's size and how many of its pixels are not blank."""
        self.show(page_id)
        return self.page.evaluate(
            """id => Array.from(document.getElementById(id).querySelectorAll('.chart')).map(chart => {
                const canvas = chart.querySelector('canvas');
                if (!canvas) return {id: chart.dataset.chart, text: chart.textContent};
                const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
                let inked = 0;
                for (let i = 3; i < data.length; i += 4) if (data[i] > 0) inked++;
                return {id: chart.dataset.chart, width: canvas.width, height: canvas.height, inked};
            })""",
            page_id,
        )

    def text(self, selector):
        return self.page.locator(selector).first.inner_text().strip()

    def close(self):
        self.page.close()


def ms(us):
    return f"{us / 1000:.2f}"


def percentile(stats, p):
    return next(x["value_us"] for x in stats["percentiles"] if x["percentile"] == p)


def only_results_dir(tmp_path):
    [directory] = [p for p in (tmp_path / "results").iterdir() if p.is_dir()]
    return directory


def run(args, cwd, check=True):
    completed = subprocess.run(["horde", *map(str, args)], capture_output=True, text=True, timeout=180, cwd=cwd)
    if check:
        assert completed.returncode == 0, completed.stderr
    return completed


def test_the_report_of_a_run_draws_every_chart_and_shows_the_summarys_numbers(target, tmp_path, browser):
    run(["run", EXAMPLES / "html_report.py", "-D", f"base_url={target.url}", "-D", "rate=30", "-D", "seconds=3", "-q",
         "--threshold", "p99<10s", "--threshold", "each: errors<=100%"], tmp_path)
    directory = only_results_dir(tmp_path)
    summary = json.loads((directory / "summary.json").read_text())
    assert (directory / "report.html").exists(), "every run writes its report"
    report = Report(browser, directory / "report.html")
    try:
        assert report.text("#figure-count .value") == str(summary["global"]["count"])
        assert report.text("#run-status") == summary["run"]["status"]
        verdicts = report.page.locator("#thresholds tbody tr").all_inner_texts()
        assert verdicts[0].split("\t")[0] == "p99<10s" and verdicts[0].endswith("pass")
        assert len(verdicts) == 2 + len(summary["requests"]), "each: one line per request row"
        pages = report.page.eval_on_selector_all("#nav a", "links => links.map(a => a.dataset.page)")
        assert pages == ["overview", "requests", "over-time", "distribution", "errors", "environment"]
        detail_pages = report.page.eval_on_selector_all(".page[id^=request-], .page[id^=group-]", "s => s.map(p => p.id)")
        assert len(detail_pages) == len(summary["requests"]) + len(summary["groups"])
        drawn = []
        for page_id in pages + detail_pages:
            for chart in report.charts_drawn(page_id):
                assert chart.get("width", 0) > 0 and chart["height"] > 0, f"{page_id}: {chart}"
                assert chart["inked"] > 1000, f"{page_id}: chart {chart['id']} is blank"
                drawn.append(chart["id"])
        assert {"overview", "time-users", "time-rps", "time-latency", "time-errors", "dist-spectrum"} <= set(drawn)
        assert any(c.endswith("-phases") for c in drawn)

        # The statistics table: one row per request, its p99 the summary's.
        report.show("requests")
        headers = report.page.eval_on_selector_all("#requests-table thead th", "ths => ths.map(t => t.textContent)")
        p99_column = headers.index("p99 (ms)")
        for request in summary["requests"]:
            row = report.page.locator("#requests-table tbody.rows tr", has_text=request["name"]).first
            cells = row.locator("td").all_inner_texts()
            assert cells[0] == request["name"]
            assert cells[1] == str(request["count"])
            assert cells[p99_column] == ms(percentile(request["latency"]["all"], 99.0))
        # Sorting by count puts the busiest first.
        report.page.click("#requests-table thead th:nth-child(2)")
        first = report.page.locator("#requests-table tbody.rows tr").first.locator("td").first.inner_text()
        assert first == max(summary["requests"], key=lambda r: r["count"])["name"]

        report.show("errors")
        assert "missing page" in report.text("#errors-table")
        assert report.text("#error-kinds tbody td") == summary["errors"][0]["kind"]
        assert report.problems == [] and report.dialogs == [] and report.requests == []
    finally:
        report.close()


def test_the_overview_reads_at_a_glance_and_every_legend_shows_numbers_without_hovering(target, tmp_path, browser):
    """The front page at 1280 px: the headline numbers on one row, the response-time ranges
    with summary.json's counts, the thresholds' verdicts; legends that read without a cursor
    (a screenshot shows numbers, not dashes); the last interval, which the run's end cut short,
    rated over the time it measured and marked partial; a deep link that keeps the run's name
    and the page's heading in view."""
    run(["http", f"{target.url}/delay/5", "-c", "4", "-d", "2.5s", "-q", "--threshold", "p99<10s"], tmp_path)
    directory = only_results_dir(tmp_path)
    summary = json.loads((directory / "summary.json").read_text())
    report = Report(browser, directory / "report.html")
    try:
        report.page.set_viewport_size({"width": 1280, "height": 800})
        tops = report.page.eval_on_selector_all(".figures.kpis .figure", "cards => cards.map(c => c.getBoundingClientRect().top)")
        assert len(tops) == 7 and len(set(tops)) == 1, f"the cards wrapped: {tops}"
        ranges = report.page.eval_on_selector_all("#ranges tr[data-range]", "rows => rows.map(r => Array.from(r.cells).map(c => c.textContent))")
        assert ranges == [[b["label"], str(b["count"]), f"{b['percent']:.1f} %"] for b in summary["global"]["distribution"]]
        assert ranges[0][0] == "t < 800 ms", "the plan's default bounds"
        assert report.page.locator("#overview #thresholds").count() == 1, "the verdicts on the front page"

        # The legends: the last point's values, before any hover.
        charts = report.page.evaluate("JSON.parse(document.getElementById('report-charts').textContent)")
        legend = report.page.eval_on_selector_all(
            ".chart[data-chart=overview] .u-legend .u-series", "items => items.map(i => i.textContent)")
        assert legend[0].startswith("time from the start") and "last" in legend[0] and "partial" in legend[0], legend
        assert all(not item.endswith("-") for item in legend), legend
        ok_per_s = charts["overview"]["series"][0]["values"][-1]
        assert ok_per_s >= 100 and legend[1] == f"OK/s{ok_per_s:.0f} req/s", legend
        # That last point: its OK requests over the time it measured, not over a whole interval.
        points = [json.loads(line) for line in (directory / "timeseries.jsonl").open()]
        last = [p for p in points if p["name"] == "all"][-1]
        measured_s = (summary["run"]["duration_ms"] - last["start_ms"]) / 1000
        assert measured_s < 0.9 * summary["plan"]["options"]["snapshot_interval_ms"] / 1000, "the run ends part-way through its last interval"
        assert last["duration_ms"] == summary["run"]["duration_ms"] - last["start_ms"], "the time series says so too"
        assert ok_per_s == pytest.approx(last["ok"] / measured_s, rel=1e-3)
        assert charts["overview"]["partial"]["seconds"] == pytest.approx(measured_s)
        for page_id in ("over-time", "distribution"):
            report.show(page_id)
            values = report.page.eval_on_selector_all(f"#{page_id} .u-legend .u-value", "vs => vs.map(v => v.textContent)")
            assert values and "-" not in values, (page_id, values)
        assert report.problems == [] and report.dialogs == []
    finally:
        report.close()

    # A deep link shows the run's name and the page's heading, not the page scrolled under the tabs.
    report = Report(browser, directory / "report.html")
    try:
        report.page.set_viewport_size({"width": 1280, "height": 800})
        report.page.goto(report.url + "#environment")
        report.page.wait_for_function("document.getElementById('environment').classList.contains('current')")
        report.page.wait_for_load_state("load")
        nav_bottom = report.page.evaluate("document.getElementById('nav').getBoundingClientRect().bottom")
        assert report.page.evaluate("document.querySelector('header h1').getBoundingClientRect().top") >= 0
        assert report.page.evaluate("document.querySelector('#environment h2').getBoundingClientRect().top") >= nav_bottom
        assert report.problems == []
    finally:
        report.close()


def screenshot_colours(browser, png):
    """Distinct colours of a PNG, counted by the browser itself (a blank page has one)."""
    import base64

    page = browser.new_page()
    try:
        return page.evaluate(
            """async data => {
                const image = new Image();
                image.src = 'data:image/png;base64,' + data;
                await image.decode();
                const canvas = document.createElement('canvas');
                canvas.width = image.width; canvas.height = image.height;
                const context = canvas.getContext('2d');
                context.drawImage(image, 0, 0);
                const pixels = context.getImageData(0, 0, image.width, image.height).data;
                const colours = new Set();
                for (let i = 0; i < pixels.length; i += 16) colours.add((pixels[i] << 16) | (pixels[i + 1] << 8) | pixels[i + 2]);
                return colours.size;
            }""",
            base64.b64encode(png).decode(),
        )
    finally:
        page.close()


def test_a_request_named_like_markup_runs_nothing_and_the_overview_is_not_blank(target, tmp_path, browser):
    plan = {
        "version": 1,
        "name": "escaping",
        "protocol": {"base_url": target.url},
        "scenarios": [{
            "name": f"scenario {ATTACK}",
            "injection": [{"type": "constant_concurrent_users", "users": 2, "duration_ms": 1500}],
            "steps": [
                {"type": "request", "name": ATTACK, "method": "GET", "url": "/"},
                {"type": "request", "name": "<!-- a comment", "method": "GET", "url": "/status/500",
                 "checks": [{"source": {"type": "status"}, "validate": {"type": "is", "value": "200"}}]},
                {"type": "pause", "duration_ms": 10},
            ],
        }],
    }
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    run(["run", tmp_path / "plan.json", "-q"], tmp_path)
    directory = only_results_dir(tmp_path)
    html = (directory / "report.html").read_text()
    assert ATTACK not in html, "the name appears only escaped"
    report = Report(browser, directory / "report.html")
    try:
        for page_id in report.page.eval_on_selector_all(".page", "s => s.map(p => p.id)"):
            report.show(page_id)
        assert report.page.locator("img").count() == 0
        assert report.page.evaluate("Array.from(document.querySelectorAll('*')).filter(e => e.hasAttribute('onerror')).length") == 0
        assert report.page.locator("#requests-table td.name", has_text=ATTACK).count() == 1, "shown as text"
        assert report.dialogs == [] and report.problems == [], (report.dialogs, report.problems)

        report.show("overview")
        png = report.page.screenshot(full_page=False)
        (tmp_path / "overview.png").write_bytes(png)
        assert screenshot_colours(browser, png) > 50, "the overview's screenshot looks blank"
    finally:
        report.close()


def test_the_reports_of_an_interrupted_and_a_killed_run_render(target, tmp_path, browser):
    # Interrupted (SIGINT): the run writes its own report.
    process = subprocess.Popen(["horde", "http", f"{target.url}/delay/5", "-c", "4", "-d", "60s", "-q"],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(lambda: any((tmp_path / "results").glob("*/timeseries.jsonl")) and
               sum(1 for _ in next((tmp_path / "results").glob("*/timeseries.jsonl")).open()) >= 4, what="two intervals")
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=30) == 130
    directory = only_results_dir(tmp_path)
    report = Report(browser, directory / "report.html")
    try:
        assert report.text("#run-status") == "interrupted"
        assert "interrupted" in report.text(".warnings")
        assert all(c.get("inked", 0) > 0 for c in report.charts_drawn("over-time"))
        assert report.problems == []
    finally:
        report.close()

    # Killed (SIGKILL): summary.json still says running; `horde report --html` renders it.
    killed = tmp_path / "killed"
    killed.mkdir()
    process = subprocess.Popen(["horde", "http", f"{target.url}/delay/5", "-c", "4", "-d", "60s", "-q", "--results", "r"],
                               cwd=killed, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until(lambda: any((killed / "r").glob("*/timeseries.jsonl")) and
               sum(1 for _ in next((killed / "r").glob("*/timeseries.jsonl")).open()) >= 4, what="two intervals")
    process.kill()
    process.wait(timeout=10)
    [directory] = list((killed / "r").iterdir())
    assert not (directory / "report.html").exists()
    completed = run(["report", directory, "--html"], killed)
    assert completed.stdout.strip() == str(directory / "report.html")
    report = Report(browser, directory / "report.html")
    try:
        assert report.text("#run-status") == "running"
        assert "killed" in report.text(".warnings")
        assert report.problems == []
    finally:
        report.close()

    missing = run(["report", tmp_path, "--html"], tmp_path, check=False)
    assert missing.returncode == 2 and "not a results directory" in missing.stderr


def test_five_thousand_request_names_render_and_search(target, tmp_path, browser):
    run(["http", f"{target.url}/", "-c", "2", "-n", "200", "-q"], tmp_path)
    directory = only_results_dir(tmp_path)
    summary = json.loads((directory / "summary.json").read_text())
    template = summary["requests"][0]
    summary["requests"] = []
    for i in range(5000):
        row = copy.deepcopy(template)
        row["name"] = f"GET /api/item/{i:04d}"
        row["count"] = row["ok"] = 5000 - i
        summary["requests"].append(row)
    (directory / "summary.json").write_text(json.dumps(summary))
    started = time.monotonic()
    run(["report", directory, "--html"], tmp_path)
    rendered_s = time.monotonic() - started
    size = (directory / "report.html").stat().st_size
    assert size < 8_000_000, f"{size} bytes for 5,000 names"
    report = Report(browser, directory / "report.html")
    try:
        report.show("requests")
        rows = report.page.locator("#requests-table tbody.rows tr")
        assert rows.count() == 100, "one page of rows in the document at a time"
        assert "5000 requests" in report.text("#requests-shown")
        report.page.fill("#request-search", "item/4321")
        assert rows.count() == 1 and rows.first.locator("td").first.inner_text() == "GET /api/item/4321"
        report.page.fill("#request-search", "item/012")
        assert rows.count() == 10 and "10 of 5000 requests match" in report.text("#requests-shown")
        report.page.fill("#request-search", "")
        assert rows.count() == 100
    finally:
        report.close()
    assert rendered_s < 30


def test_a_sweeps_report_has_the_capacity_chart_and_links_to_each_level(target, tmp_path, browser):
    plan = json.loads((EXAMPLES / "plan.json").read_text())
    plan["protocol"]["base_url"] = target.url
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    run(["sweep", tmp_path / "plan.json", "--users", "1,2,4", "--level-duration", "500ms", "--warmup", "0",
         "--slo", "p99<50ms", "-q"], tmp_path)
    directory = only_results_dir(tmp_path)
    sweep = json.loads((directory / "sweep.json").read_text())
    report = Report(browser, directory / "report.html")
    try:
        report.show("capacity")
        svg = report.page.locator(".svg-chart svg")
        assert svg.count() == 1 and "SLO p99<50ms" in svg.text_content()
        links = report.page.eval_on_selector_all("#levels-table a", "links => links.map(a => a.getAttribute('href'))")
        assert links == [f"{level['results']}/report.html" for level in sweep["levels"]]
        for link in links:
            assert (directory / link).exists()
        assert report.problems == []
    finally:
        report.close()


def compare_plan(directory, name, base_url, delay_ms):
    """Two users looping for a second on /delay/{delay_ms}, the request named like markup and
    inside a group."""
    plan = {
        "version": 1,
        "name": name,
        "protocol": {"base_url": base_url},
        "scenarios": [{
            "name": "delay",
            "injection": [{"type": "constant_concurrent_users", "users": 2, "duration_ms": 1000}],
            "steps": [{"type": "group", "name": "<b>journey</b>", "steps": [
                {"type": "request", "name": ATTACK, "method": "GET", "url": f"/delay/{delay_ms}"},
            ]}],
        }],
    }
    path = directory / f"{name}.json"
    path.write_text(json.dumps(plan))
    return path


def change_text(change, value):
    return f"{100 * (value - 1):+.1f}%" if change["kind"] == "ratio" else f"{value:+.2f}pp"


def test_the_compare_page_draws_every_metric_and_shows_the_jsons_numbers(target, tmp_path, browser):
    a = compare_plan(tmp_path, "before", target.url, 10)
    b = compare_plan(tmp_path, "after", target.url, 14)
    trials = run(["run", "--trials", "2", a, b, "-q"], tmp_path, check=False)
    assert trials.returncode in (0, 99), trials.stderr
    [parent] = [p for p in (tmp_path / "results").iterdir() if p.is_dir()]
    assert (parent / "compare.html").exists(), "--trials with two plans writes its page beside compare.json"
    # horde compare --html, forced over the plans' difference (the path).
    completed = run(["compare", parent / "A", parent / "B", "--force", "--json", tmp_path / "c.json",
                     "--html", tmp_path / "c.html"], tmp_path, check=False)
    assert completed.returncode in (0, 99), completed.stderr
    assert f"comparison page written to {tmp_path / 'c.html'}" in completed.stderr
    compare = json.loads((tmp_path / "c.json").read_text())
    html = (tmp_path / "c.html").read_text()
    assert ATTACK not in html, "the name appears only escaped"
    report = Report(browser, tmp_path / "c.html")
    try:
        assert report.text("#run-status") == ("regression" if compare["regression"] else "no regression")
        # What the reader must know first: 2 runs a side, and the plans' difference.
        warnings = report.text("#compare-warnings")
        assert "fewer than 4 runs a side (2 + 2)" in warnings
        assert "The plans differ" in warnings and "/delay/10" in warnings and "/delay/14" in warnings
        metrics = [m for m in ("p50", "p99", "mean", "rps", "errors") if any(c["metric"] == m for c in compare["comparisons"])]
        drawn = {c["id"]: c for c in report.charts_drawn("comparison")}
        for metric in metrics:
            for kind in ("change", "runs"):
                chart = drawn[f"{kind}-{metric}"]
                assert chart.get("width", 0) > 0 and chart["inked"] > 1000, chart
            # The table: a row per comparison, in the JSON's order, with its numbers.
            rows = report.page.locator(f"#compare-{metric} tbody tr")
            expected = [c for c in compare["comparisons"] if c["metric"] == metric]
            assert rows.count() == len(expected)
            for i, c in enumerate(expected):
                cells = rows.nth(i).locator("td").all_inner_texts()
                name = {"global": "all requests", "request": c["name"], "group": c["name"] + " (group)"}[c["scope"]]
                assert cells[0] == name
                assert cells[3] == c["verdict"]
                change = c["change"]
                if change is None:
                    assert cells[4:9] == ["-"] * 5
                    continue
                assert cells[4] == change_text(change, change["estimate"])
                if change["low"] is None:
                    assert cells[5] == "[unbounded]"
                else:
                    assert cells[5] == f"[{change_text(change, change['low'])}, {change_text(change, change['high'])}]"
                assert cells[6:9] == [f"{change['p']:.3f}", f"{change['q']:.3f}", f"{change['n_a']}+{change['n_b']}"]
        # The name that looks like markup is text, in the tables and the charts' data.
        assert report.page.locator("#compare-p50 td.name", has_text=ATTACK).count() == 1
        assert report.page.locator("#compare-p50 td.name", has_text="<b>journey</b> (group)").count() == 1
        assert report.page.locator("img").count() == 0 and report.page.locator("b", has_text="journey").count() == 0
        # The runs page lists each side's runs, linked to their own reports.
        report.show("runs")
        links = report.page.eval_on_selector_all("#runs-a a", "links => links.map(a => a.href)")
        assert len(links) == 2 and all(link.endswith("/report.html") for link in links)
        assert report.problems == [] and report.dialogs == [] and report.requests == []
    finally:
        report.close()
    # The page --trials wrote renders too.
    report = Report(browser, parent / "compare.html")
    try:
        assert all(c.get("inked", 0) > 1000 for c in report.charts_drawn("comparison"))
        assert report.problems == [] and report.dialogs == []
    finally:
        report.close()


BUSY_BENCH = """
import os
from horde import bench

@bench.function(params={"n": [20000, 40000]}, unit="ms")
def busy(n):
    for _ in range(n * int(os.environ["SLOWDOWN"])):
        pass
"""


def test_the_bench_comparison_page_draws_scores_and_changes(tmp_path, browser):
    """`horde bench compare --html`: each benchmark's Scores with their Errors and each
    machine's change against the reference, drawn, with no console error; a machine label
    that is markup stays text."""
    (tmp_path / "busy.py").write_text(BUSY_BENCH)
    files = []
    for label, slowdown in (("laptop", "1"), (ATTACK, "2")):
        out = tmp_path / f"{slowdown}.json"
        completed = subprocess.run(
            ["horde", "bench", "busy.py", "--trials", "3", "--warmup", "1", "--measure", "3", "--iteration-time", "50ms",
             "--machine", label, "--out", out], capture_output=True, text=True, timeout=180, cwd=tmp_path,
            env={**os.environ, "SLOWDOWN": slowdown})
        assert completed.returncode == 0, completed.stderr
        files.append(out)
    page = tmp_path / "bench.html"
    run(["bench", "compare", *files, "--html", page], tmp_path)
    assert ATTACK not in page.read_text(), "the label appears only escaped"
    report = Report(browser, page)
    try:
        assert report.problems == [] and report.dialogs == [] and report.requests == []
        assert report.text("#run-status") == "regression"
        drawn = report.charts_drawn("comparison")
        assert [c["id"] for c in drawn] == ["bench-0", "bench-1"]
        for chart in drawn:
            assert chart.get("width", 0) > 0 and chart["inked"] > 1000, chart
        rows = report.page.locator("#bench-table tbody tr")
        assert rows.count() == 3 and "slower" in rows.nth(0).inner_text()
        assert ATTACK in report.text("#bench-table thead"), "the label is shown as the text it is"
        assert report.problems == [] and report.dialogs == []
    finally:
        report.close()
