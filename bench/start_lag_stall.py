#!/usr/bin/env python3
"""Start-lag stalls from the collector: two horde builds, the same throttled plan, interleaved.

A plan with many statistics rows makes the collector's once-a-second work (merging snapshots,
computing every row's percentiles, rewriting summary.json) long. If that work runs on a
worker's core, the worker's throttle slots start late, and the lag shows in the summary's
`scheduling.start_lag`. The plan: ROWS differently named requests to nginx, looped by 20 users
under a throttle of RATE requests a second, one worker thread (so a core is free for the
collector, where the scheduler will put it). Prints start lag p99, p99.9 and max, and late
starts, for each build, as a Markdown table.

    python3 bench/start_lag_stall.py --before /tmp/old-target/release/horde --after target/release/horde
    python3 bench/start_lag_stall.py --rows 400 --rate 4000 --duration 20 --repetitions 3

Needs nginx (Debian package) and two horde binaries.
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from local_nginx import start_nginx, stop_nginx


def plan(url, rows, rate, duration_s):
    steps = [{"type": "request", "name": f"row {i:04d}", "method": "GET", "url": f"{url}/r{i}"} for i in range(rows)]
    return {
        "version": 1,
        "name": "stall",
        "scenarios": [{
            "name": "loop",
            "injection": [{"type": "at_once_users", "users": 20}],
            "steps": [{"type": "during", "duration_ms": duration_s * 1000, "steps": steps}],
        }],
        "options": {
            "workers": 1,
            "percentiles": [50, 99, 99.9],
            "throttle": [{"type": "jump_to_rps", "rps": rate}],
            "max_duration_ms": duration_s * 1000 + 2000,
        },
    }


def run(binary, plan_path, results):
    subprocess.run([binary, "run", str(plan_path), "-q", "--results", str(results)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    [summary] = sorted(results.glob("*/summary.json"))[-1:]
    s = json.loads(summary.read_text())["scheduling"]
    lag = {p["percentile"]: p["value_us"] for p in s["start_lag"]["percentiles"]}
    return {"p99": lag[99.0], "p99.9": lag[99.9], "max": s["start_lag"]["max_us"],
            "late": s["late_starts"], "starts": s["scheduled_starts"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the horde binary to compare against")
    parser.add_argument("--after", required=True, help="the horde binary under test")
    parser.add_argument("--rows", type=int, default=400)
    parser.add_argument("--rate", type=int, default=4000)
    parser.add_argument("--duration", type=int, default=20)
    parser.add_argument("--repetitions", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="horde-stall-"))
    nginx, url = start_nginx(work)
    try:
        plan_path = work / "plan.json"
        plan_path.write_text(json.dumps(plan(url, args.rows, args.rate, args.duration)))
        runs = {"before": [], "after": []}
        for repetition in range(args.repetitions):
            for build in ("before", "after"):
                binary = args.before if build == "before" else args.after
                result = run(binary, plan_path, work / f"{build}-{repetition}")
                runs[build].append(result)
                print(f"  {build} #{repetition + 1}: {result}", file=sys.stderr)
    finally:
        stop_nginx(nginx)
    median = lambda build, key: statistics.median(r[key] for r in runs[build])
    print(f"### {datetime.now(timezone.utc):%Y-%m-%d}: start lag with {args.rows} rows, {args.rate} req/s throttle, "
          f"1 worker, {args.duration} s, median of {args.repetitions} interleaved runs\n")
    print("| build | start lag p99 (ms) | p99.9 (ms) | max (ms) | late starts (> 1 ms) |")
    print("|---|---|---|---|---|")
    for build in ("before", "after"):
        print(f"| {build} | {median(build, 'p99') / 1000:.3f} | {median(build, 'p99.9') / 1000:.3f} | "
              f"{median(build, 'max') / 1000:.2f} | {median(build, 'late'):.0f} of {median(build, 'starts'):.0f} |")
    print("\nEach run:", json.dumps(runs))


if __name__ == "__main__":
    main()
