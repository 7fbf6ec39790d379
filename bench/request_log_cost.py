#!/usr/bin/env python3
"""What the per-request log costs: horde http against the same nginx without a log, with
`--request-log FILE.jsonl` and with `--request-log FILE.jtl`, in the same run.

nginx (one worker) is pinned to one core and horde (one worker) to the other; the three
variants take turns, repetitions interleaved with the order rotated, so drift on a shared
machine hits all alike. For each run: requests per second, and CPU time per 1,000 requests
(user + system of the whole process, from wait4: the workers formatting records and the
writer thread appending them). Prints the medians and each log's ratios to no log as a
Markdown table. The log files are removed after each run (a 10 s run writes hundreds of MB).

    python3 bench/request_log_cost.py                 # 50 connections, 10 s, 3 repetitions
    python3 bench/request_log_cost.py --horde target/release/horde --repetitions 5

Run it alone on the machine: `flock /tmp/horde-bench.lock python3 bench/request_log_cost.py`.
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from http_vs_wrk import ensure_tools, measure, version
from local_nginx import pinned, start_nginx, stop_nginx

VARIANTS = {"no log": None, "jsonl": "requests.jsonl", "jtl": "requests.jtl"}


def run_horde(horde, url, connections, duration, core, work, log_name):
    results = work / "results"
    before = set(results.glob("*/summary.json"))
    argv = [horde, "http", url, "-c", str(connections), "-d", f"{duration}s", "--workers", "1", "-q",
            "--results", str(results)]
    log = work / log_name if log_name else None
    if log:
        argv += ["--request-log", str(log)]
    _, cpu, _ = measure(pinned(core, argv))
    [path] = set(results.glob("*/summary.json")) - before
    summary = json.loads(path.read_text())
    requests = summary["global"]["count"]
    if log:
        # The log holds every request the summary counts: the cost measured is of all of them.
        lines = sum(1 for _ in log.open("rb")) - (1 if log.suffix == ".jtl" else 0)
        if lines != requests:
            sys.exit(f"{log}: {lines} records for {requests} requests")
        log.unlink()
    shutil.rmtree(path.parent)
    return requests / (summary["run"]["duration_ms"] / 1000), requests, cpu


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--duration", type=int, default=10, help="seconds per run")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--horde", default=shutil.which("horde") or "horde")
    args = parser.parse_args()
    ensure_tools()

    work = Path(tempfile.mkdtemp(prefix="horde-bench-log-"))
    server_core, client_core = (1, 0) if os.cpu_count() > 1 else (0, 0)
    nginx, base = start_nginx(work, server_core)
    nginx_bin = shutil.which("nginx") or "/usr/sbin/nginx"
    names = list(VARIANTS)
    runs = {name: [] for name in names}
    try:
        for repetition in range(args.repetitions):
            # Each variant goes first, second and third in turn.
            order = names[repetition % len(names):] + names[:repetition % len(names)]
            for name in order:
                result = run_horde(args.horde, base + "/", args.connections, args.duration, client_core, work,
                                   VARIANTS[name])
                runs[name].append(result)
                rps, requests, cpu = result
                print(f"  {name:6} #{repetition + 1}: {rps:10.0f} req/s, {cpu * 1e6 / requests:.2f} ms CPU/1k req",
                      file=sys.stderr)
    finally:
        stop_nginx(nginx)
        shutil.rmtree(work, ignore_errors=True)

    def medians(name):
        return (statistics.median(r[0] for r in runs[name]),
                statistics.median(r[2] * 1e6 / r[1] for r in runs[name]))

    figures = {name: medians(name) for name in names}
    off = figures["no log"]
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    print(f"### {date}: the request log's cost, horde http, {args.connections} connections, {args.duration} s, "
          f"median of {args.repetitions} interleaved runs\n")
    print(f"Command: `python3 bench/request_log_cost.py --connections {args.connections} --duration {args.duration} "
          f"--repetitions {args.repetitions}`  ")
    print(f"Machine: {os.cpu_count()} cores, {version(['uname', '-sr'])}; nginx 1 worker on core {server_core}, "
          f"horde (1 worker) on core {client_core}  ")
    print(f"Versions: {version([args.horde, '--version'])}; {version([nginx_bin, '-v'])}\n")
    print("| log | req/s | CPU ms per 1,000 requests | req/s vs no log | CPU per request vs no log |")
    print("|---|---|---|---|---|")
    for name, (rps, cpu) in figures.items():
        print(f"| {name} | {rps:,.0f} | {cpu:.2f} | {rps / off[0]:.2f} | {cpu / off[1]:.2f} |")
    print()
    for name in names:
        per_run = ", ".join(f"{r[0] / 1000:.1f}k" for r in runs[name])
        print(f"{name}: {per_run} req/s", end="; " if name != names[-1] else "\n")


if __name__ == "__main__":
    main()
