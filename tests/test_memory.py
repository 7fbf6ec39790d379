"""Memory per request name: a plan of a thousand differently named requests (an imported
recording, a many-endpoint API) against nginx. Each row costs tens of KiB once its histograms
exist (it cost 1.3 MB: ten histograms of 16 KiB or more in every worker, the collector and
each pending interval, and every interval's histograms again when report.html was made), and
past 1,000 rows the run says so, once, on stderr and in summary.json. Peak RSS is not
disturbed by other work on the machine, so the bound holds on a busy one."""

import json
import os
import subprocess

ROWS = 1001
# Past the values a recorder keeps as they are (256): every row's totals hold histograms.
REQUESTS_PER_ROW = 300


def run_rows(tmp_path, nginx, rows):
    """Runs a plan of `rows` request names; returns (peak RSS in KiB, stderr, summary)."""
    steps = [{"type": "request", "name": f"row {i:05d}", "method": "GET", "url": "/"} for i in range(rows)]
    plan = {
        "version": 1,
        "name": f"rows_{rows}",
        "protocol": {"base_url": nginx.url},
        "scenarios": [{
            "name": "many rows",
            "steps": [{"type": "during", "duration_ms": 600_000, "steps": steps}],
            "injection": [{"type": "at_once_users", "users": 10}],
        }],
        "options": {"workers": 2, "max_requests": rows * REQUESTS_PER_ROW, "max_duration_ms": 300_000},
    }
    path = tmp_path / f"rows_{rows}.json"
    path.write_text(json.dumps(plan))
    process = subprocess.Popen(["horde", "run", path, "--results", tmp_path / f"results-{rows}", "-q"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    stdout, stderr = process.stdout.read().decode(), process.stderr.read().decode()
    assert os.waitstatus_to_exitcode(status) == 0, stderr
    summary = json.loads((tmp_path / stdout.strip().splitlines()[-1] / "summary.json").read_text())
    return usage.ru_maxrss, stderr, summary


def test_a_thousand_request_names_cost_tens_of_kib_each_and_are_warned_about(nginx, tmp_path):
    base_rss, quiet, one = run_rows(tmp_path, nginx, 1)
    assert "request names (rows)" not in quiet and "warnings" not in one
    rss, stderr, summary = run_rows(tmp_path, nginx, ROWS)
    assert summary["global"]["count"] == ROWS * REQUESTS_PER_ROW and summary["global"]["ko"] == 0
    assert len(summary["requests"]) == ROWS
    per_row_kib = (rss - base_rss) / (ROWS - 1)
    assert per_row_kib < 150, f"{per_row_kib:.0f} KiB per row (peak RSS {rss} KiB, one row {base_rss} KiB)"
    # Said once, with the limit and what to do.
    assert stderr.count("request names (rows)") == 1, stderr
    [warning] = summary["warnings"]
    assert warning.startswith(f"{ROWS} request names (rows), more than the 1000 a run is meant to have")
    assert 'http("order").get("/orders/${id}")' in warning
