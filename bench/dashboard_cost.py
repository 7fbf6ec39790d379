#!/usr/bin/env python3
"""What `--dashboard` costs the run: horde http against the same nginx without a dashboard,
with one nobody watches, and with one a page watches (an EventSource-like reader of /events,
so the report is rendered again every interval and sent), in the same run.

nginx (one worker) is pinned to one core and horde (one worker) to the other, so the
dashboard's threads (rendering, serving) share horde's core with its worker: the worst case,
where every cycle they take is one the engine loses. The variants take turns, repetitions
interleaved with the order rotated. For each run: requests per second, and CPU time per 1,000
requests (user + system of the whole process, from wait4). Prints the medians and the ratios
to no dashboard as a Markdown table.

    python3 bench/dashboard_cost.py                 # 50 connections, 10 s, 3 repetitions
    python3 bench/dashboard_cost.py --horde target/release/horde --repetitions 5

Run it alone on the machine: `flock /tmp/horde-bench.lock python3 bench/dashboard_cost.py`.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

from http_vs_wrk import ensure_tools, version
from local_nginx import pinned, start_nginx, stop_nginx

VARIANTS = ["no dashboard", "dashboard, unwatched", "dashboard, watched"]


def watch(address, updates):
    """Reads the dashboard's updates as a page would, counting them, until the final one."""
    with urllib.request.urlopen(address + "/events", timeout=120) as stream:
        for raw in stream:
            if raw.startswith(b"data: "):
                updates.append(len(raw))
                if b'"final":true' in raw:
                    return


def run_horde(horde, url, connections, duration, core, work, variant):
    results = work / "results"
    before = set(results.glob("*/summary.json"))
    argv = [horde, "http", url, "-c", str(connections), "-d", f"{duration}s", "--workers", "1", "-q",
            "--results", str(results)]  # fmt: skip
    if variant != "no dashboard":
        argv += ["--dashboard"]
    process = subprocess.Popen(pinned(core, argv), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    updates = []
    watcher = None
    if variant != "no dashboard":
        for line in process.stderr:
            match = re.search(r"dashboard at (http://[^/]+)/", line)
            if match:
                break
        else:
            sys.exit("horde printed no dashboard address")
        if variant == "dashboard, watched":
            watcher = threading.Thread(target=watch, args=(match.group(1), updates), daemon=True)
            watcher.start()
    threading.Thread(target=process.stderr.read, daemon=True).start()
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(argv)} exited with {os.waitstatus_to_exitcode(status)}")
    if watcher:
        watcher.join(timeout=10)
        if len(updates) < duration // 2:
            sys.exit(f"the watching page got {len(updates)} updates in {duration} s")
    [path] = set(results.glob("*/summary.json")) - before
    summary = json.loads(path.read_text())
    requests = summary["global"]["count"]
    shutil.rmtree(path.parent)
    cpu = usage.ru_utime + usage.ru_stime
    return requests / (summary["run"]["duration_ms"] / 1000), requests, cpu, len(updates)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--duration", type=int, default=10, help="seconds per run")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--horde", default=shutil.which("horde") or "horde")
    args = parser.parse_args()
    ensure_tools()

    work = Path(tempfile.mkdtemp(prefix="horde-bench-dashboard-"))
    server_core, client_core = (1, 0) if os.cpu_count() > 1 else (0, 0)
    nginx, base = start_nginx(work, server_core)
    nginx_bin = shutil.which("nginx") or "/usr/sbin/nginx"
    runs = {name: [] for name in VARIANTS}
    try:
        for repetition in range(args.repetitions):
            order = VARIANTS[repetition % len(VARIANTS):] + VARIANTS[:repetition % len(VARIANTS)]
            for name in order:
                result = run_horde(args.horde, base + "/", args.connections, args.duration, client_core, work, name)
                runs[name].append(result)
                rps, requests, cpu, updates = result
                print(f"  {name:21} #{repetition + 1}: {rps:10.0f} req/s, {cpu * 1e6 / requests:.2f} ms CPU/1k req, "
                      f"{updates} updates received", file=sys.stderr)  # fmt: skip
    finally:
        stop_nginx(nginx)
        shutil.rmtree(work, ignore_errors=True)

    def medians(name):
        return (statistics.median(r[0] for r in runs[name]), statistics.median(r[2] * 1e6 / r[1] for r in runs[name]))

    figures = {name: medians(name) for name in VARIANTS}
    off = figures["no dashboard"]
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    print(f"### {date}: the dashboard's cost, horde http, {args.connections} connections, {args.duration} s, "
          f"median of {args.repetitions} interleaved runs\n")  # fmt: skip
    print(f"Command: `python3 bench/dashboard_cost.py --connections {args.connections} --duration {args.duration} "
          f"--repetitions {args.repetitions}`  ")  # fmt: skip
    print(f"Machine: {os.cpu_count()} cores, {version(['uname', '-sr'])}; nginx 1 worker on core {server_core}, "
          f"horde (1 worker, and the dashboard's threads) on core {client_core}  ")  # fmt: skip
    print(f"Versions: {version([args.horde, '--version'])}; {version([nginx_bin, '-v'])}\n")
    print("| variant | req/s | CPU ms per 1,000 requests | req/s vs none | CPU per request vs none | updates sent |")
    print("|---|---|---|---|---|---|")
    for name, (rps, cpu) in figures.items():
        sent = statistics.median(r[3] for r in runs[name])
        print(f"| {name} | {rps:,.0f} | {cpu:.2f} | {rps / off[0]:.3f} | {cpu / off[1]:.3f} | {sent:.0f} |")
    print()
    for name in VARIANTS[1:]:
        pairs = list(zip(runs[name], runs["no dashboard"]))
        rps = statistics.median(r[0] / o[0] for r, o in pairs)
        cpu = statistics.median((r[2] / r[1]) / (o[2] / o[1]) for r, o in pairs)
        print(f"{name} / none within each repetition, median: {rps:.3f} req/s, {cpu:.3f} CPU per request  ")


if __name__ == "__main__":
    main()
