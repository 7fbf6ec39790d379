"""Exports other tools read, checked with independent readers against the summary and the
server's own count: histograms.hlog (PyPI's hdrhistogram decodes it), hgrm/*.hgrm, Locust's
CSV files, the per-request log (JSONL and JMeter's JTL, also after Ctrl-C), --results-dir and
-q's last line, epoch_ms in the time series."""

import csv
import json
import signal
from datetime import datetime, timezone
import subprocess

import pytest
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

from conftest import EXAMPLES, wait_until

INVALID_INPUT = 2
INTERRUPTED = 130

LOCUST_STATS_HEADER = [
    "Type", "Name", "Request Count", "Failure Count", "Median Response Time", "Average Response Time",
    "Min Response Time", "Max Response Time", "Average Content Size", "Requests/s", "Failures/s",
    "50%", "66%", "75%", "80%", "90%", "95%", "98%", "99%", "99.9%", "99.99%", "100%",
]
LOCUST_HISTORY_HEADER = [
    "Timestamp", "User Count", "Type", "Name", "Requests/s", "Failures/s",
    "50%", "66%", "75%", "80%", "90%", "95%", "98%", "99%", "99.9%", "99.99%", "100%",
    "Total Request Count", "Total Failure Count", "Total Median Response Time", "Total Average Response Time",
    "Total Min Response Time", "Total Max Response Time", "Total Average Content Size",
]
JTL_HEADER = ("timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,failureMessage,"
              "bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect")


def horde(*args, cwd, check=True):
    completed = subprocess.run(["horde", *map(str, args)], capture_output=True, text=True, timeout=120, cwd=cwd)
    if check:
        assert completed.returncode == 0, completed.stderr
    return completed


def hlog_counts(path):
    """Counts per tag, summed over intervals, by PyPI's hdrhistogram (an independent decoder),
    and the tags' names from the log's comments."""
    reader = HistogramLogReader(str(path), HdrHistogram(1, 10**9, 3))
    counts = {}
    starts = []
    while (histogram := reader.get_next_interval_histogram()) is not None:
        tag = histogram.get_tag() or ""
        counts[tag] = counts.get(tag, 0) + histogram.get_total_count()
        starts.append(histogram.get_start_time_stamp())
    reader.close()
    names = {}
    for line in path.read_text().splitlines():
        if line.startswith("#[Tag "):
            tag, name = line[len("#[Tag "):-1].split(": ", 1)
            names[tag] = json.loads(name)
    return counts, names, starts


def exchanged(row):
    """Requests of a row that reached the histograms: those sent (unsent ones have no latency)."""
    return row["count"] - row["unsent"]


def test_the_example_writes_every_export_and_they_agree(target, tmp_path):
    run = tmp_path / "out" / "run1"
    completed = horde("run", EXAMPLES / "exports.py", "-D", f"base_url={target.url}", "-D", "rate=20", "-D", "seconds=2",
                      "--results-dir", run, "-q", "--export", "locust:out/locust", "--request-log", "out/requests.jtl",
                      cwd=tmp_path)
    # -q: the results directory is the last line on stdout, and nothing else is there.
    assert completed.stdout.splitlines() == [str(run)]
    summary = json.loads((run / "summary.json").read_text())
    served = target.stats()["total"]
    total = summary["global"]["count"]
    assert total == served == 120 and summary["global"]["ko"] == 0, summary["errors"]

    # histograms.hlog: per tag, the intervals add up to the summary's counts.
    counts, names, starts = hlog_counts(run / "histograms.hlog")
    assert counts[""] == counts["uncorrected"] == exchanged(summary["global"])
    for i, row in enumerate(summary["requests"]):
        assert names[f"r{i}"] == row["name"]
        assert counts[f"r{i}"] == counts[f"uncorrected.r{i}"] == exchanged(row)
    [group] = summary["groups"]
    assert names["g0"] == group["name"] and counts["g0"] == group["count"]
    started = summary["run"]["started_at_unix_ms"]
    assert started - 1000 <= min(starts) and max(starts) <= started + summary["run"]["duration_ms"]

    # hgrm/: one file per row and one for all, indexed; the last TotalCount is the count.
    index = json.loads((run / "hgrm" / "index.json").read_text())
    assert [e["name"] for e in index] == ["all requests"] + [r["name"] for r in summary["requests"]]
    for entry in index:
        lines = (run / "hgrm" / entry["file"]).read_text().splitlines()
        assert lines[0].split() == ["Value", "Percentile", "TotalCount", "1/(1-Percentile)"]
        last = [line for line in lines if line and not line.startswith("#")][-1].split()
        assert float(last[1]) == 1.0 and int(last[2]) == entry["count"]
        assert any(line.startswith("#[Mean    =") for line in lines)
    assert index[0]["count"] == exchanged(summary["global"])

    # Locust's files: its headers, and the counts of the summary and of the server.
    with open(tmp_path / "out" / "locust_stats.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == LOCUST_STATS_HEADER
    by_name = {row[1]: row for row in rows[1:]}
    assert int(by_name["Aggregated"][2]) == total == served
    assert by_name["Aggregated"][0] == ""
    for row in summary["requests"]:
        assert by_name[row["name"]][0] == "GET"
        assert int(by_name[row["name"]][2]) == row["count"]
    with open(tmp_path / "out" / "locust_stats_history.csv", newline="") as f:
        history = list(csv.reader(f))
    assert history[0] == LOCUST_HISTORY_HEADER
    assert history[-1][3] == "Aggregated" and int(history[-1][17]) == total
    for name, header in [("failures", ["Method", "Name", "Error", "Occurrences", "First Seen", "Last Seen"]),
                         ("exceptions", ["Count", "Message", "Traceback", "Nodes"])]:
        with open(tmp_path / "out" / f"locust_{name}.csv", newline="") as f:
            assert next(csv.reader(f)) == header

    # The request log: JMeter's header, one line per request the server saw.
    lines = (tmp_path / "out" / "requests.jtl").read_text().splitlines()
    assert lines[0] == JTL_HEADER
    with open(tmp_path / "out" / "requests.jtl", newline="") as f:
        records = list(csv.DictReader(f))
    assert len(records) == served
    assert {r["label"] for r in records} == {r["name"] for r in summary["requests"]}
    assert all(r["success"] == "true" and r["threadName"].startswith("shop 1-") for r in records)
    assert {r["responseCode"] for r in records} == {"200", "404"}
    # JMeter's URL column: where each request went, at the target the run was given.
    assert all(r["URL"].startswith(target.url + "/") for r in records)
    assert {r["URL"] for r in records if r["responseCode"] == "404"} == {target.url + "/api/items/99"}
    assert all(started - 1000 <= int(r["timeStamp"]) <= started + summary["run"]["duration_ms"] for r in records)

    # The time series carries each interval's absolute start.
    with open(run / "timeseries.csv", newline="") as f:
        series = list(csv.DictReader(f))
    assert all(int(s["epoch_ms"]) == started + int(s["start_ms"]) for s in series)
    jsonl = [json.loads(line) for line in (run / "timeseries.jsonl").read_text().splitlines()]
    assert all(s["epoch_ms"] == started + s["start_ms"] for s in jsonl)


def test_the_jsonl_request_log_has_a_line_per_request(target, tmp_path):
    horde("http", target.url + "/status/503", "-c", "3", "-n", "150", "--request-log", "requests.jsonl",
          "--results-dir", "run", "-q", cwd=tmp_path)
    records = [json.loads(line) for line in (tmp_path / "requests.jsonl").read_text().splitlines()]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert len(records) == summary["global"]["count"] == target.stats()["total"] == 150
    assert all(r["status"] == 503 and r["ok"] is False and r["error"] == "check_failed" for r in records)
    assert all(r["url"] == target.url + "/status/503" for r in records)
    assert all(r["latency_ms"] >= r["uncorrected_ms"] > 0 for r in records)
    assert {r["user"] for r in records} == {0, 1, 2}


@pytest.mark.parametrize("log_name", ["requests.jsonl", "requests.jtl"])
def test_an_interrupted_run_keeps_a_complete_request_log(target, tmp_path, log_name):
    run = tmp_path / "run"
    process = subprocess.Popen(
        ["horde", "http", target.url + "/", "-c", "4", "-d", "60s", "--results-dir", str(run), "-q",
         "--request-log", log_name],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
    )

    def measured():
        try:
            return json.loads((run / "summary.json").read_text())["global"]["count"] > 0
        except (OSError, ValueError, KeyError):
            return False

    wait_until(measured, timeout=30, what="a first summary")
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == INTERRUPTED, err
    assert out.splitlines()[-1] == str(run)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["run"]["status"] == "interrupted"
    text = (tmp_path / log_name).read_text()
    assert text.endswith("\n")
    lines = text.splitlines()
    if log_name.endswith(".jtl"):
        assert lines.pop(0) == JTL_HEADER
        assert all(len(row) == 17 for row in csv.reader(lines))
    else:
        assert all(json.loads(line)["name"] for line in lines)
    served = target.stats()["total"]
    assert len(lines) == summary["global"]["count"]
    # Every request the target answered was logged, but the few in flight at the interruption.
    assert served - 4 <= len(lines) <= served
    counts, _, _ = hlog_counts(run / "histograms.hlog")
    assert counts[""] == summary["global"]["count"]


def utc_seconds(text):
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()


def test_locust_failures_say_when_they_were_first_and_last_seen(target, tmp_path):
    # Every request fails its status check, from the first interval to the last.
    horde("http", target.url + "/status/503", "-c", "2", "-d", "2500ms", "--results-dir", "run", "-q",
          "--export", "locust:out/locust", "--request-log", "out/requests.jtl", cwd=tmp_path)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    with open(tmp_path / "out" / "locust_failures.csv", newline="") as f:
        [failure] = list(csv.DictReader(f))
    assert int(failure["Occurrences"]) == summary["global"]["ko"] == summary["global"]["count"] > 0
    # Seen from the start of the first interval (whole seconds, rounded down as Locust does)
    # to the end of the last one, which is the end of the run.
    started_s = summary["run"]["started_at_unix_ms"] / 1000
    ended_s = started_s + summary["run"]["duration_ms"] / 1000
    first, last = utc_seconds(failure["First Seen"]), utc_seconds(failure["Last Seen"])
    assert int(started_s) == first, (failure, started_s)
    assert int(ended_s) == last, (failure, ended_s)
    # The request log's URL column names the failing URL on every line.
    with open(tmp_path / "out" / "requests.jtl", newline="") as f:
        records = list(csv.DictReader(f))
    assert len(records) == summary["global"]["count"]
    assert {(r["URL"], r["responseCode"], r["success"]) for r in records} == {(target.url + "/status/503", "503", "false")}


def test_results_dir_is_exact_and_refuses_a_used_one(target, tmp_path):
    kept = tmp_path / "ci"
    kept.mkdir()
    (kept / ".gitkeep").write_text("")
    completed = horde("http", target.url + "/", "-n", "5", "-c", "1", "--results-dir", kept, "-q", cwd=tmp_path)
    assert completed.stdout.splitlines()[-1] == str(kept)
    assert (kept / "summary.json").exists() and (kept / "histograms.hlog").exists()
    again = horde("http", target.url + "/", "-n", "5", "-c", "1", "--results-dir", kept, cwd=tmp_path, check=False)
    assert again.returncode == INVALID_INPUT
    assert "--results-dir" in again.stderr and "not empty" in again.stderr
    both = horde("http", target.url + "/", "-n", "5", "--results-dir", "a", "--results", "b", cwd=tmp_path, check=False)
    assert both.returncode == INVALID_INPUT and "cannot be used with" in both.stderr
    assert target.stats()["total"] == 5


def test_results_directories_are_named_after_the_file_that_ran(target, tmp_path):
    """The file's stem, which the user chose, not the first scenario's name; quick mode keeps its own."""
    sim = tmp_path / "checkout_flow.py"
    sim.write_text(
        "from horde import *\n"
        "setup(scenario('Browse the shop').exec(http('home').get('/')).inject(at_once_users(1)),\n"
        "      protocol=http.base_url(param('base_url')))\n"
    )
    plan = tmp_path / "nightly.json"
    plan.write_text(horde("plan", sim, "-D", f"base_url={target.url}", cwd=tmp_path).stdout)
    made = {}
    for what, argv in [("sim", ["run", sim, "-D", f"base_url={target.url}"]), ("plan", ["run", plan]),
                       ("quick", ["http", target.url + "/", "-n", "1", "-c", "1"]),
                       ("sweep", ["sweep", sim, "-D", f"base_url={target.url}", "--users", "1",
                                  "--level-duration", "200ms", "--warmup", "0s"]),
                       ("trials", ["run", "--trials", "1", sim, "-D", f"base_url={target.url}"])]:
        results = tmp_path / f"results-{what}"
        dir_line = horde(*argv, "--results", results, "-q", cwd=tmp_path).stdout.splitlines()[-1]
        made[what] = dir_line.split("/")[-1].rsplit("-", 2)[0]
    assert made == {"sim": "checkout_flow", "plan": "nightly", "quick": "http", "sweep": "sweep-checkout_flow",
                    "trials": "checkout_flow-trials"}, made


@pytest.mark.parametrize("flags, message", [
    (["--request-log", "requests.csv"], "must end in .jsonl"),
    (["--export", "gatling:out"], "FORMAT is one of: locust"),
    (["--export", "locust:"], "the prefix is missing"),
])
def test_bad_export_flags_exit_2_before_anything_is_sent(target, tmp_path, flags, message):
    completed = horde("http", target.url + "/", "-n", "5", *flags, cwd=tmp_path, check=False)
    assert completed.returncode == INVALID_INPUT
    assert message in completed.stderr
    assert target.stats()["total"] == 0
    assert not (tmp_path / "results").exists()
