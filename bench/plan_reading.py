#!/usr/bin/env python3
"""The CPU time and memory of reading, checking and validating a large plan: `horde plan` on a
generated 2.2 MB plan (200 groups of 10 POSTs, each with a form body, 2 checks and 10
resources: 22,000 requests, ten times a large recording's import).

CPU time (user + sys of the child) and peak RSS, not wall time: builds running beside it change
them little. Pass several `--horde` commands to compare builds in one run, interleaved.

    python3 bench/plan_reading.py
    python3 bench/plan_reading.py --horde before=/tmp/horde-before/bin/horde --horde after=horde --runs 5
"""

import argparse
import json
import resource
import subprocess
import tempfile
from datetime import datetime, timezone
from pathlib import Path


def request(i):
    return {
        "type": "request", "name": f"page {i}", "method": "POST", "url": f"/p/{i}?a=${{x}}",
        "headers": [{"name": "X-A", "value": "b"}],
        "body": {"type": "form", "params": [{"name": "k", "value": "${v}"}]},
        "checks": [{"source": {"type": "regex", "pattern": "id=(\\d+)"}, "save_as": "x"}, {"source": {"type": "status"}}],
        "resources": [{"name": f"r{i}-{j}", "method": "GET", "url": f"/s/{j}.css"} for j in range(10)],
    }


def big_plan():
    groups = [{"type": "group", "name": f"g{g}", "steps": [request(g * 10 + k) for k in range(10)] + [
        {"type": "pause", "duration_ms": 10},
        {"type": "do_if", "condition": "${x}", "steps": [{"type": "set", "values": [{"name": "v", "value": "1"}]}]},
    ]} for g in range(200)]
    first = {"type": "set", "values": [{"name": "x", "value": "1"}, {"name": "v", "value": "1"}]}
    return {"version": 1, "protocol": {"base_url": "http://127.0.0.1:1"},
            "scenarios": [{"name": "s", "steps": [first] + groups, "injection": [{"type": "at_once_users", "users": 1}]}]}


def measure(command, plan_path):
    """CPU seconds and peak RSS (MB) of one `horde plan`, from the child's own usage."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(["/usr/bin/time", "-f", "%M", *command.split(), "plan", str(plan_path)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{command} plan failed: {done.stderr[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, int(done.stderr.strip().splitlines()[-1]) / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--horde", action="append", default=[], help="label=command (default: horde=horde)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    builds = [h.split("=", 1) if "=" in h else (h, h) for h in args.horde] or [("horde", "horde")]
    with tempfile.TemporaryDirectory() as directory:
        plan_path = Path(directory) / "big.json"
        plan_path.write_text(json.dumps(big_plan()))
        print(f"# {datetime.now(timezone.utc):%Y-%m-%d}: horde plan on {plan_path.stat().st_size / 1e6:.1f} MB, "
              f"{args.runs} runs each, interleaved")
        results = {label: [] for label, _ in builds}
        for _ in range(args.runs):
            for label, command in builds:
                results[label].append(measure(command, plan_path))
        print("| build | CPU s (each run) | peak RSS MB (max) |\n|---|---|---|")
        for label, runs in results.items():
            print(f"| {label} | {', '.join(f'{cpu:.2f}' for cpu, _ in runs)} | {max(rss for _, rss in runs):.1f} |")


if __name__ == "__main__":
    main()
