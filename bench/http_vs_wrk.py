#!/usr/bin/env python3
"""horde http against wrk on the same nginx, in the same run.

nginx (one worker) is pinned to one core and the load generator to the other; the tools take
turns, repetitions interleaved, so drift on a shared machine hits both alike. For each run:
requests per second, CPU time per 1,000 requests (user + system, from wait4), and peak RSS.
Prints the medians and the horde/wrk ratios as a Markdown table.

    python3 bench/http_vs_wrk.py                 # 50 connections, 10 s, 3 repetitions
    python3 bench/http_vs_wrk.py --duration 5 --repetitions 5 --connections 100
    python3 bench/http_vs_wrk.py --horde old=/tmp/horde-old --horde new=target/release/horde

Needs nginx and wrk (Debian packages; installed if missing and running as root) and horde on
PATH (or --horde PATH, e.g. target/release/horde). `--horde` may be given several times, as
LABEL=PATH: each build takes its turn with wrk in the same run, so builds compare through their
ratios to wrk measured side by side.
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
from datetime import datetime, timezone
from pathlib import Path

from local_nginx import pinned, start_nginx, stop_nginx


def ensure_tools():
    missing = [tool for tool in ("nginx", "wrk") if not shutil.which(tool) and not Path(f"/usr/sbin/{tool}").exists()]
    if missing and os.geteuid() == 0:
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=True, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    elif missing:
        sys.exit(f"missing: {', '.join(missing)} (apt-get install {' '.join(missing)})")




def measure(argv, env=None):
    """Runs argv; returns (stdout, cpu seconds, peak RSS in KiB) of that child alone. On failure
    the error carries the end of its stderr (kept in a file, so a chatty tool cannot block)."""
    with tempfile.TemporaryFile("w+") as stderr:
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
        stdout = process.stdout.read()
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            stderr.seek(0)
            tail = "".join(stderr.readlines()[-20:]).rstrip()
            raise RuntimeError(f"{' '.join(argv)} exited with {process.returncode}" + (f":\n{tail}" if tail else ""))
    return stdout, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def run_wrk(url, connections, duration, core):
    out, cpu, rss = measure(pinned(core, ["wrk", "-t1", f"-c{connections}", f"-d{duration}s", url]))
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    return rps, requests, cpu, rss


def run_horde(horde, url, connections, duration, core, results):
    before = set(results.glob("*/summary.json"))
    argv = [horde, "http", url, "-c", str(connections), "-d", f"{duration}s", "--workers", "1", "-q", "--results", str(results)]
    _, cpu, rss = measure(pinned(core, argv))
    [path] = set(results.glob("*/summary.json")) - before
    summary = json.loads(path.read_text())
    requests = summary["global"]["count"]
    rps = requests / (summary["run"]["duration_ms"] / 1000)
    return rps, requests, cpu, rss


def version(argv):
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "unknown"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--duration", type=int, default=10, help="seconds per run")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--horde", action="append", metavar="[LABEL=]PATH",
                        help="the horde to measure; repeat with LABEL=PATH to measure several builds")
    args = parser.parse_args()
    builds = {}
    for spec in args.horde or [shutil.which("horde") or "horde"]:
        label, _, path = spec.rpartition("=")
        builds[f"horde {label}" if label else "horde"] = path
    ensure_tools()

    work = Path(tempfile.mkdtemp(prefix="horde-bench-"))
    server_core, client_core = (1, 0) if os.cpu_count() > 1 else (0, 0)
    nginx, base = start_nginx(work, server_core)
    nginx_bin = shutil.which("nginx") or "/usr/sbin/nginx"
    url = base + "/"

    tools = ["wrk", *builds]
    runs = {tool: [] for tool in tools}
    try:
        for repetition in range(args.repetitions):
            # Rotate who goes first so no one always gets the warmer machine.
            shift = repetition % len(tools)
            for tool in tools[shift:] + tools[:shift]:
                if tool == "wrk":
                    result = run_wrk(url, args.connections, args.duration, client_core)
                else:
                    result = run_horde(builds[tool], url, args.connections, args.duration, client_core, work / "results")
                runs[tool].append(result)
                rps, requests, cpu, rss = result
                print(f"  {tool:5} #{repetition + 1}: {rps:10.0f} req/s, {cpu * 1e6 / requests:.2f} ms CPU/1k req, {rss / 1024:.1f} MiB", file=sys.stderr)
    finally:
        stop_nginx(nginx)

    def medians(tool):
        rps = statistics.median(r[0] for r in runs[tool])
        cpu = statistics.median(r[2] * 1e6 / r[1] for r in runs[tool])
        rss = statistics.median(r[3] / 1024 for r in runs[tool])
        return rps, cpu, rss

    wrk = medians("wrk")
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    several = "".join(f" --horde {spec}" for spec in args.horde) if len(builds) > 1 else ""
    print(f"### {date}: horde http vs wrk, {args.connections} connections, {args.duration} s, median of {args.repetitions} interleaved runs\n")
    print(f"Command: `python3 bench/http_vs_wrk.py --connections {args.connections} --duration {args.duration} --repetitions {args.repetitions}{several}`  ")
    print(f"Machine: {os.cpu_count()} cores, {version(['uname', '-sr'])}; nginx 1 worker on core {server_core}, clients on core {client_core}  ")
    horde_versions = ", ".join(f"{version([path, '--version'])} ({tool})" for tool, path in builds.items())
    print(f"Versions: {horde_versions}; {version(['wrk', '--version'])}; {version([nginx_bin, '-v'])}\n")
    print("| tool | req/s | CPU ms per 1,000 requests | peak RSS (MiB) |")
    print("|---|---|---|---|")
    print(f"| wrk | {wrk[0]:,.0f} | {wrk[1]:.2f} | {wrk[2]:.1f} |")
    for tool in builds:
        horde = medians(tool)
        print(f"| {tool} | {horde[0]:,.0f} | {horde[1]:.2f} | {horde[2]:.1f} |")
    for tool in builds:
        horde = medians(tool)
        print(f"| {tool} / wrk | {horde[0] / wrk[0]:.2f} | {horde[1] / wrk[1]:.2f} | {horde[2] / wrk[2]:.2f} |")
    # A shared machine drifts between phases of load: the ratio of two runs of one repetition
    # (taken within a minute of each other) is steadier than the ratio of two medians.
    print()
    for tool in builds:
        rps = statistics.median(h[0] / w[0] for h, w in zip(runs[tool], runs["wrk"]))
        cpu = statistics.median((h[2] / h[1]) / (w[2] / w[1]) for h, w in zip(runs[tool], runs["wrk"]))
        print(f"{tool} / wrk within each repetition, median: {rps:.2f} req/s, {cpu:.2f} CPU per request  ")


if __name__ == "__main__":
    main()
