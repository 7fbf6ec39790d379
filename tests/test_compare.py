"""horde compare and horde run --trials against the built-in target, whose /delay/{ms} answers
after ms milliseconds: latency known by construction, so a change of it is known too.

Runs are short (about a second, a few users): the statistics work on one value per run, so
what matters is the number of runs, not their length."""

import json
import re
import shutil
import subprocess

import jsonschema
import pytest

from conftest import DOCS

USERS = 4


def write_plan(directory, name, base_url, delay_ms, duration_ms=1000, snapshot_interval_ms=None, group=None):
    """A closed workload of USERS users looping on /delay/{delay_ms} for duration_ms; the
    request inside a group of that name, when one is given."""
    steps = [{"type": "request", "name": "delay", "method": "GET", "url": f"/delay/{delay_ms}"}]
    if group:
        steps = [{"type": "group", "name": group, "steps": steps}]
    plan = {
        "version": 1,
        "name": name,
        "protocol": {"base_url": base_url},
        "scenarios": [{
            "name": "delay",
            "injection": [{"type": "constant_concurrent_users", "users": USERS, "duration_ms": duration_ms}],
            "steps": steps,
        }],
    }
    if snapshot_interval_ms:
        plan["options"] = {"snapshot_interval_ms": snapshot_interval_ms}
    path = directory / f"{name}.json"
    path.write_text(json.dumps(plan))
    return path


def compare(*args):
    return subprocess.run(["horde", "compare", *map(str, args)], capture_output=True, text=True, timeout=60)


def trials_dir(result):
    [directory] = [p for p in result.results_dir.iterdir() if p.is_dir()]
    return directory


def comparison(report, metric, scope="global"):
    [found] = [c for c in report["comparisons"] if c["metric"] == metric and c["scope"] == scope]
    return found


def one_run_a_side(horde, tmp_path, target, name_a, delay_a, name_b, delay_b):
    """One run of each plan (A then B), 1.5 s in 100 ms snapshot intervals, the request in a
    group: the within-run fallback compares 10 batches a side."""
    a = write_plan(tmp_path, name_a, target.url, delay_a, duration_ms=1500, snapshot_interval_ms=100, group="journey")
    b = write_plan(tmp_path, name_b, target.url, delay_b, duration_ms=1500, snapshot_interval_ms=100, group="journey")
    result = horde("run", "--trials", "1", a, b)
    return result, json.loads((trials_dir(result) / "compare.json").read_text())


@pytest.fixture(scope="module")
def compare_schema():
    return json.loads((DOCS / "compare.schema.json").read_text())


def test_the_same_plan_twice_shows_no_change(horde, target, tmp_path, compare_schema):
    # Two copies of one plan, interleaved A B B A A B B A by --trials.
    a = write_plan(tmp_path, "same_a", target.url, 10)
    b = write_plan(tmp_path, "same_b", target.url, 10)
    result = horde("run", "--trials", "4", a, b)
    assert result.code == 0, result.stdout + result.stderr
    assert "no regression beyond the tolerance" in result.stdout
    parent = trials_dir(result)
    report = json.loads((parent / "compare.json").read_text())
    jsonschema.validate(report, compare_schema)
    assert report["method"] == "runs" and len(report["a"]["runs"]) == len(report["b"]["runs"]) == 4
    assert report["plan_differences"] == []  # names aside, the plans are the same
    for c in report["comparisons"]:
        assert c["verdict"] == "~", c
    # Latency near the server's 10 ms, one value per run.
    p50 = comparison(report, "p50")
    assert len(p50["a"]["values"]) == 4 and all(10_000 <= v < 20_000 for v in p50["a"]["values"])
    # The runs interleave: A's first run started before B's first, B's second before A's second.
    starts = {side: sorted(json.loads((d / "summary.json").read_text())["run"]["started_at_unix_ms"]
                           for d in (parent / side).iterdir()) for side in "AB"}
    assert starts["A"][0] < starts["B"][0] < starts["B"][1] < starts["A"][1]
    # horde compare reads the same runs again: by quoted pattern, and by `vs` between lists.
    again = compare(f"{parent}/A/*", f"{parent}/B/*")
    assert again.returncode == 0, again.stderr
    listed_a = sorted(str(p) for p in (parent / "A").iterdir())
    listed_b = sorted(str(p) for p in (parent / "B").iterdir())
    again = compare(*listed_a, "vs", *listed_b, "--json", tmp_path / "again.json")
    assert again.returncode == 0, again.stderr
    assert json.loads((tmp_path / "again.json").read_text())["comparisons"] == report["comparisons"]
    # Fewer than 4 runs a side: said, with the smallest p those sizes can reach.
    few = compare(*listed_a[:3], "vs", *listed_b[:3])
    assert few.returncode == 0
    assert "fewer than 4 runs a side (3 + 3): the smallest p-value these can reach is 0.100" in few.stdout


def test_a_slower_server_is_slower_and_exits_99(horde, target, tmp_path, compare_schema):
    a = write_plan(tmp_path, "delay20", target.url, 20)
    b = write_plan(tmp_path, "delay24", target.url, 24)
    result = horde("run", "--trials", "5", a, b)
    assert result.code == 99, result.stdout + result.stderr
    assert "REGRESSION" in result.stdout
    parent = trials_dir(result)
    assert json.loads((parent / "trials.json").read_text())["order"] == ["A", "B", "B", "A"] * 2 + ["A", "B"]

    # The plans differ (the path): runs that are not the two sides of one --trials directory
    # are refused, the difference named...
    shutil.copytree(parent / "A", tmp_path / "copy-a")
    shutil.copytree(parent / "B", tmp_path / "copy-b")
    refused = compare(tmp_path / "copy-a", tmp_path / "copy-b")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert 'scenarios[0].steps[0].url: "/delay/20" -> "/delay/24"' in refused.stderr
    assert "--force" in refused.stderr

    # ... unless forced; the two sides --trials made differ by design, and are compared again
    # as they are (another tolerance, say), their differences listed, their names given.
    json_path = tmp_path / "compare.json"
    forced = compare(tmp_path / "copy-a", tmp_path / "copy-b", "--force")
    assert forced.returncode == 99, forced.stdout + forced.stderr
    page = tmp_path / "compare.html"
    again = compare(parent / "A", parent / "B", "--json", json_path, "--names", "before,after", "--html", page)
    assert again.returncode == 99, again.stdout + again.stderr
    report = json.loads(json_path.read_text())
    jsonschema.validate(report, compare_schema)
    assert report["regression"] is True
    for metric in ("p50", "mean"):
        for scope in ("global", "request"):
            c = comparison(report, metric, scope)
            assert c["verdict"] == "slower", c
            change = c["change"]
            # 24 / 20 = 1.2, plus the same overhead on both sides: a bit less.
            assert 1.1 < change["low"] <= change["estimate"] <= change["high"] < 1.25, change
            assert change["test"] == "mann_whitney_exact" and change["n_a"] == change["n_b"] == 5
            # Every B run slower than every A run: the smallest p 5 + 5 runs can give.
            assert change["p"] == pytest.approx(2 / 252)
    # Fewer requests fit in the same time: a closed workload's throughput falls with latency.
    assert comparison(report, "rps")["verdict"] == "worse"
    assert comparison(report, "errors")["verdict"] == "~"
    # The console line for the global p50: the change, its interval, p and n.
    line = next(l for l in again.stdout.splitlines() if l.startswith("all requests") and "slower" in l)
    assert "n=5+5" in line and "p=0.008" in line, line
    # The sides by their names, in the console, the JSON and the page.
    assert again.stdout.startswith("before (base): 5 runs in "), again.stdout
    assert "after:         5 runs in " in again.stdout
    assert re.search(r"^p50 latency +before +after +vs base$", again.stdout, re.MULTILINE), again.stdout
    assert 'scenarios[0].steps[0].url: "/delay/20" -> "/delay/24"' in again.stdout
    assert (report["a"]["label"], report["b"]["label"]) == ("before", "after")
    html = page.read_text()
    assert "<th>before</th><th>after</th>" in html and "after against the base before" in html

    # A wider tolerance than the change: no regression.
    tolerant = compare(parent / "A", parent / "B", "--tolerance", "latency=30%,throughput=30%")
    assert tolerant.returncode == 0, tolerant.stdout


def test_one_run_a_side_is_a_labelled_within_run_comparison(horde, target, tmp_path, compare_schema):
    a = write_plan(tmp_path, "one_a", target.url, 10, duration_ms=1500, snapshot_interval_ms=100)
    b = write_plan(tmp_path, "one_b", target.url, 10, duration_ms=1500, snapshot_interval_ms=100)
    result = horde("run", "--trials", "1", a, b)
    assert result.code in (0, 99), result.stdout + result.stderr
    assert "WITHIN-RUN FALLBACK (one run a side)" in result.stdout
    report = json.loads((trials_dir(result) / "compare.json").read_text())
    jsonschema.validate(report, compare_schema)
    assert report["method"] == "within_run"
    assert any("WITHIN-RUN comparison of batch means" in w for w in report["warnings"])
    assert any("batches of the" in w for w in report["warnings"])
    rps = comparison(report, "rps")
    assert rps["change"]["test"] == "welch" and rps["change"]["n_a"] >= 4


def test_one_run_a_side_of_a_slower_server_is_slower_by_batch_means(horde, target, tmp_path, compare_schema):
    result, report = one_run_a_side(horde, tmp_path, target, "fallback20", 20, "fallback24", 24)
    assert result.code == 99, result.stdout + result.stderr
    jsonschema.validate(report, compare_schema)
    # The fallback says what it is, in the console, the JSON and its warnings.
    assert "WITHIN-RUN FALLBACK (one run a side)" in result.stdout
    assert report["method"] == "within_run"
    assert any(w.startswith("one run a side: WITHIN-RUN comparison of batch means") for w in report["warnings"])
    windows = [w for w in report["warnings"] if "batches of the" in w]
    assert len(windows) == 2 and all("p50 and p99 not compared" not in w for w in windows), windows
    # Percentiles per batch, from histograms.hlog: 10 batches a side near each server's delay.
    for metric in ("p50", "p99"):
        for scope in ("global", "request"):
            c = comparison(report, metric, scope)
            assert len(c["a"]["values"]) == len(c["b"]["values"]) == 10, c
            assert all(20_000 <= v < 40_000 for v in c["a"]["values"]), c["a"]
            assert all(24_000 <= v < 44_000 for v in c["b"]["values"]), c["b"]
            assert c["change"]["test"] == "welch" and c["change"]["n_a"] == c["change"]["n_b"] == 10
    for scope in ("global", "request", "group"):
        p50 = comparison(report, "p50", scope)
        assert p50["verdict"] == "slower", p50
        assert 1.1 < p50["change"]["low"] <= p50["change"]["estimate"] <= p50["change"]["high"] < 1.3, p50["change"]
    # The group is compared like a row, from its histograms: its passes last the request.
    group = comparison(report, "p50", "group")
    assert group["name"] == "journey" and all(20_000 <= v < 40_000 for v in group["a"]["values"])
    assert {c["metric"] for c in report["comparisons"] if c["scope"] == "group"} == {"p50", "p99", "mean", "rps"}
    assert any(line.startswith("journey (group)") and "slower" in line for line in result.stdout.splitlines())


def test_one_run_a_side_of_the_same_plan_shows_no_change(horde, target, tmp_path):
    result, report = one_run_a_side(horde, tmp_path, target, "same20a", 20, "same20b", 20)
    assert result.code in (0, 99), result.stdout + result.stderr
    assert report["method"] == "within_run"
    for metric in ("p50", "p99", "mean"):
        for scope in ("global", "request", "group"):
            c = comparison(report, metric, scope)
            assert len(c["a"]["values"]) == 10
            assert c["verdict"] == "~", c


def test_bad_input_is_named(tmp_path):
    missing = compare(tmp_path / "nothing", tmp_path / "else")
    assert missing.returncode == 2
    assert "no such results directory" in missing.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "holds no summary.json" in compare(empty, empty).stderr
    assert "matches no results directory" in compare(f"{tmp_path}/none-*", empty).stderr
    assert "separate A's from B's with `vs`" in compare("a", "b", "c").stderr
    flags = compare(empty, empty, "--tolerance", "speed=1%", "--alpha", "2")
    assert flags.returncode == 2
    assert "not a tolerance" in flags.stderr and "--alpha" in flags.stderr
    two = subprocess.run(["horde", "run", "a.json", "b.json"], capture_output=True, text=True, timeout=30)
    assert two.returncode == 2 and "--trials" in two.stderr


@pytest.mark.parametrize("plans", [1, 2])
def test_quiet_trials_print_only_their_directory(horde, target, tmp_path, plans):
    files = [write_plan(tmp_path, f"quiet{i}", target.url, 5, duration_ms=500) for i in range(plans)]
    result = horde("run", "--trials", "2", *files, "-q")
    assert result.code in (0, 99), result.stdout + result.stderr
    assert result.stdout == f"{trials_dir(result)}\n"
