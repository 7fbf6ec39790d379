#!/usr/bin/env python3
"""What a Python session function costs per call: the same horde scenario on the same nginx
with and without `exec(function)` in its loop, runs interleaved.

Each virtual user loops: a request `GET /item?n=${n}` whose reply is checked, then (in the
"with" run) a session function that reads a variable and sets one (`n`, the next number),
the kind of small logic a user writes in Python. Without it, `n` is set natively (`set`), so
both runs render the same templated request. Reported: requests per second, CPU time per 1,000
iterations (user + system, from wait4, start-up included), the difference per call, and the
summary's own `generator.session_functions` (calls, mean time per call, the wait for Python's
lock included). One worker, pinned to one core; nginx on the other.

    python3 bench/session_function_cost.py               # 20 users, 10 s, 3 repetitions
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import textwrap
from datetime import datetime, timezone
from pathlib import Path

from http_vs_wrk import ensure_tools, measure
from local_nginx import pinned, start_nginx, stop_nginx

LOCATIONS = """
    location = /item { default_type application/json; return 200 '{"ok":true}'; }
"""

SIMULATION = """
from horde import *

def next_number(session):
    return session.set("n", int(session.get("n", "0")) + 1)

loop = [http("item").get("/item?n=${{n}}").check(jsonpath("$.ok").is_("true"))]
loop.append(exec_(next_number) if {with_function} else set_(n="${{__counter(n)}}"))
scn = scenario("s").set(n="0").during({duration}, loop)
setup(scn.inject(at_once_users({users})), protocol=http.base_url("{base}"), workers=1,
      max_duration={duration} + 2)
"""


def run(horde, simulation, core, results):
    before = set(results.glob("*/summary.json"))
    _, cpu, rss = measure(pinned(core, [horde, "run", str(simulation), "-q", "--results", str(results)]))
    [path] = set(results.glob("*/summary.json")) - before
    summary = json.loads(path.read_text())
    if summary["global"]["ko"]:
        print(f"    {summary['global']['ko']} KO: {summary['errors']}", file=sys.stderr)
    requests = summary["global"]["count"]
    return {
        "rps": requests / (summary["run"]["duration_ms"] / 1000),
        "requests": requests,
        "cpu": cpu,
        "rss": rss,
        "functions": summary["generator"].get("session_functions"),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--horde", default=shutil.which("horde") or "horde")
    args = parser.parse_args()
    ensure_tools()
    work = Path(tempfile.mkdtemp(prefix="horde-bench-functions-"))
    server_core, client_core = (1, 0) if os.cpu_count() > 1 else (0, 0)
    nginx, base = start_nginx(work, server_core, locations=LOCATIONS)
    variants = {}
    for name, with_function in (("native", False), ("python", True)):
        path = work / f"{name}.py"
        path.write_text(textwrap.dedent(SIMULATION.format(with_function=with_function, duration=args.duration,
                                                          users=args.users, base=base)))
        variants[name] = path
    runs = {name: [] for name in variants}
    try:
        for repetition in range(args.repetitions):
            order = list(variants) if repetition % 2 == 0 else list(reversed(variants))
            for name in order:
                result = run(args.horde, variants[name], client_core, work / "results")
                runs[name].append(result)
                print(f"{name} #{repetition + 1}: {result['rps']:.0f} req/s, "
                      f"{result['cpu'] / result['requests'] * 1e6:.1f} ms CPU/1k iterations", file=sys.stderr)
    finally:
        stop_nginx(nginx)
        shutil.rmtree(work, ignore_errors=True)

    def median(name, key):
        return statistics.median(r[key] for r in runs[name])

    cpu_per = {name: statistics.median(r["cpu"] / r["requests"] for r in runs[name]) for name in runs}
    calls = [r["functions"] for r in runs["python"] if r["functions"]]
    mean_us = statistics.median(f["mean_us"] for f in calls) if calls else float("nan")
    print(f"\n{datetime.now(timezone.utc):%Y-%m-%d}, {args.users} users, {args.duration} s, "
          f"{args.repetitions} repetitions, one worker on one core\n")
    print("| variant | req/s | CPU ms / 1k iterations | peak RSS MiB |")
    print("|---|---|---|---|")
    for name in runs:
        print(f"| {name} | {median(name, 'rps'):,.0f} | {cpu_per[name] * 1e6:.1f} | {median(name, 'rss') / 1024:.1f} |")
    print(f"\nA session function costs {(cpu_per['python'] - cpu_per['native']) * 1e6:.1f} µs of CPU per call more "
          f"than the native `set` ({cpu_per['python'] / cpu_per['native']:.2f}x the CPU per iteration); "
          f"the summary's mean time per call, lock wait included: {mean_us:.1f} µs.")


if __name__ == "__main__":
    main()
