#!/usr/bin/env python3
"""Memory per virtual user: many mostly idle users, each on its own keep-alive connection,
each making one request per second (paced), against nginx on loopback.

Peak RSS of horde with N users, minus that of the same run with a few users, divided by the
difference in users. Bar (issue 3): under 10 KB per user, where k6 spends megabytes.

    python3 bench/idle_users.py                       # 10,000 users for 10 s
    python3 bench/idle_users.py --users 2000 --duration 5
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from local_nginx import start_nginx, stop_nginx

SIMULATION = """
from horde import constant_concurrent_users, http, pace, param, scenario, setup

scn = scenario("idle").during(param("seconds", 10), pace(1), http("tick").get("/"))
setup(scn.inject(constant_concurrent_users(param("users", 10)).during(param("seconds", 10))),
      protocol=http.base_url(param("base_url")), name="idle_users", max_duration=param("seconds", 10) + 5)
"""




def run(horde, sim, url, users, seconds, results):
    """Runs horde; returns (peak RSS KiB, summary)."""
    argv = [horde, "run", str(sim), "-D", f"base_url={url}", "-D", f"users={users}", "-D", f"seconds={seconds}",
            "--results", str(results), "-q"]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"horde failed: {stderr}")
    path = max(results.glob("*/summary.json"), key=lambda p: p.stat().st_mtime)
    return usage.ru_maxrss, json.loads(path.read_text())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--baseline-users", type=int, default=10)
    parser.add_argument("--duration", type=int, default=10, help="seconds")
    parser.add_argument("--horde", default=shutil.which("horde") or "horde")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="horde-idle-"))
    sim = work / "idle.py"
    sim.write_text(SIMULATION)
    nginx, url = start_nginx(work)
    try:
        base_rss, _ = run(args.horde, sim, url, args.baseline_users, args.duration, work / "results")
        rss, summary = run(args.horde, sim, url, args.users, args.duration, work / "results")
    finally:
        stop_nginx(nginx)

    per_user = (rss - base_rss) * 1024 / (args.users - args.baseline_users)
    g = summary["global"]
    seconds = summary["run"]["duration_ms"] / 1000
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    print(f"### {date}: {args.users:,} paced users (one request per second each), {args.duration} s\n")
    print(f"Command: `python3 bench/idle_users.py --users {args.users} --duration {args.duration}`\n")
    print("| users | peak RSS (MiB) | requests | KO | req/s | p99 (ms) |")
    print("|---|---|---|---|---|---|")
    print(f"| {args.baseline_users} | {base_rss / 1024:.1f} | | | | |")
    p99 = next((p["value_us"] for p in g["latency"]["all"]["percentiles"] if p["percentile"] == 99.0), 0)
    print(f"| {args.users:,} | {rss / 1024:.1f} | {g['count']:,} | {g['ko']} | {g['count'] / seconds:,.0f} | {p99 / 1000:.2f} |")
    print(f"\n**{per_user / 1024:.2f} KiB per user** ((peak RSS at {args.users:,} − at {args.baseline_users}) / {args.users - args.baseline_users:,}).")


if __name__ == "__main__":
    main()
