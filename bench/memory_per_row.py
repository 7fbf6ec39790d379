#!/usr/bin/env python3
"""Memory per request name (statistics row): a plan of N differently named requests, every
user looping over all of them, against nginx on loopback, until each row has had
`--requests-per-row` requests (more than a recorder keeps as plain values, so every row's
totals hold their histograms, as in any long run).

Peak RSS of horde with N rows, minus that of the same run with one row, divided by N - 1.
Memory is not disturbed by other processes on the machine, so this can run beside builds.

    python3 bench/memory_per_row.py                          # 1,000 and 3,000 rows
    python3 bench/memory_per_row.py --rows 1000 --horde target/release/horde
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from local_nginx import start_nginx, stop_nginx

USERS = 20
WORKERS = 2


def plan(rows, base_url, requests_per_row):
    """USERS users, each looping over `rows` requests named apart, until the run has sent
    `requests_per_row` requests a row."""
    steps = [{"type": "request", "name": f"row {i:05d}", "method": "GET", "url": "/"} for i in range(rows)]
    return {
        "version": 1,
        "name": f"rows_{rows}",
        "protocol": {"base_url": base_url},
        "scenarios": [{
            "name": "many rows",
            "steps": [{"type": "during", "duration_ms": 3_600_000, "steps": steps}],
            "injection": [{"type": "at_once_users", "users": USERS}],
        }],
        "options": {"workers": WORKERS, "max_requests": rows * requests_per_row, "max_duration_ms": 600_000},
    }


def peak_rss_kib(horde, work, rows, base_url, requests_per_row):
    """Runs horde on the plan; returns (its peak RSS in KiB, seconds, summary)."""
    path = work / f"rows_{rows}.json"
    path.write_text(json.dumps(plan(rows, base_url, requests_per_row)))
    results = work / f"results-{rows}"
    started = time.monotonic()
    process = subprocess.Popen([horde, "run", str(path), "--results", str(results), "-q"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.monotonic() - started
    stdout, stderr = process.stdout.read().decode(), process.stderr.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"horde failed (exit status {os.waitstatus_to_exitcode(status)}): {stderr}")
    summary = json.loads((Path(stdout.strip().splitlines()[-1]) / "summary.json").read_text())
    return usage.ru_maxrss, seconds, summary


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[1000, 3000])
    parser.add_argument("--requests-per-row", type=int, default=300)
    parser.add_argument("--horde", default=shutil.which("horde") or "horde")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="horde-rows-"))
    nginx, url = start_nginx(work)
    measured = []
    try:
        for rows in [1, *args.rows]:
            rss, seconds, summary = peak_rss_kib(args.horde, work, rows, url, args.requests_per_row)
            measured.append((rows, rss, seconds, summary))
    finally:
        stop_nginx(nginx)
        shutil.rmtree(work, ignore_errors=True)

    date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    print(f"### {date}: {', '.join(f'{r:,}' for r in args.rows)} request names, {args.requests_per_row} requests each\n")
    print(f"Command: `python3 bench/memory_per_row.py --rows {' '.join(map(str, args.rows))} "
          f"--requests-per-row {args.requests_per_row} --horde {args.horde}`\n")
    print("| rows | requests | KO | seconds | peak RSS (MiB) | per row beyond the first (KiB) |")
    print("|---|---|---|---|---|---|")
    base_rss = measured[0][1]
    for rows, rss, seconds, summary in measured:
        g = summary["global"]
        per_row = f"{(rss - base_rss) / (rows - 1):,.1f}" if rows > 1 else ""
        print(f"| {rows:,} | {g['count']:,} | {g['ko']} | {seconds:.1f} | {rss / 1024:,.1f} | {per_row} |")


if __name__ == "__main__":
    main()
