#!/usr/bin/env python3
"""Holding a request rate: horde at 5,000 requests per second for 10 s against nginx, and how
faithfully it kept its schedule.

Three runs, interleaved over repetitions:
- `horde http --rate`: 50 keep-alive connections paced to the rate, latency from each request's
  intended slot (the wrk2 / `oha -q` model);
- an open-model simulation: `constant_users_per_sec(rate)`, each arrival a new user with its own
  connection (Gatling's open model);
- `oha -q` (latency correction on) as the peer, when `oha` is on PATH or given with --oha.

For horde: the rate reached (bar: within 1 %) and the scheduling lag of starts after their
intended time, p50 and p99 (bar: p99 under 1 ms on an idle machine). nginx (one worker) runs on
one core and the clients on the other.

    python3 bench/open_rate.py
    python3 bench/open_rate.py --rate 5000 --duration 10 --repetitions 3 --oha /path/to/oha
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from local_nginx import pinned, start_nginx, stop_nginx

OPEN_SIMULATION = """
from horde import constant_users_per_sec, http, param, scenario, setup

scn = scenario("arrivals").exec(http("get").get("/"))
setup(scn.inject(constant_users_per_sec(param("rate", 5000)).during(param("seconds", 10))),
      protocol=http.base_url(param("base_url")), name="open_rate")
"""




def percentile(stats, p):
    return next((x["value_us"] for x in stats["percentiles"] if x["percentile"] == p), None)


def horde_result(results, before):
    [path] = set(results.glob("*/summary.json")) - before
    summary = json.loads(path.read_text())
    measured = summary["run"]["duration_ms"] / 1000
    lag = summary["scheduling"]["start_lag"]
    return {
        "rps": summary["global"]["count"] / measured,
        "count": summary["global"]["count"],
        "ko": summary["global"]["ko"],
        "lag_p50_us": percentile(lag, 50.0),
        "lag_p99_us": percentile(lag, 99.0),
        "late": summary["scheduling"]["late_starts"],
        "scheduled": summary["scheduling"]["scheduled_starts"],
        "p99_us": percentile(summary["global"]["latency"]["all"], 99.0),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=int, default=5000)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--horde", default=shutil.which("horde") or "horde")
    parser.add_argument("--oha", default=shutil.which("oha"))
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="horde-rate-"))
    server_core, client_core = (1, 0) if os.cpu_count() > 1 else (0, 0)
    nginx, base = start_nginx(work, server_core)
    url = base + "/"
    sim = work / "open.py"
    sim.write_text(OPEN_SIMULATION)
    results = work / "results"
    runs = {"paced": [], "open": [], "oha": []}
    try:
        for repetition in range(args.repetitions):
            before = set(results.glob("*/summary.json"))
            subprocess.run(pinned(client_core, [args.horde, "http", url, "-c", str(args.connections), "-d", f"{args.duration}s",
                                                "--rate", str(args.rate), "-q", "--results", str(results)]),
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            runs["paced"].append(horde_result(results, before))
            before = set(results.glob("*/summary.json"))
            subprocess.run(pinned(client_core, [args.horde, "run", str(sim), "-D", f"base_url={url.rstrip('/')}",
                                                "-D", f"rate={args.rate}", "-D", f"seconds={args.duration}", "-q",
                                                "--results", str(results)]),
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            runs["open"].append(horde_result(results, before))
            if args.oha:
                out = subprocess.run(pinned(client_core, [args.oha, url, "-z", f"{args.duration}s", "-q", str(args.rate),
                                                          "-c", str(args.connections), "--no-tui", "--output-format", "json",
                                                          "--latency-correction"]),
                                     check=True, capture_output=True, text=True).stdout
                data = json.loads(out)
                runs["oha"].append({
                    "rps": data["summary"]["requestsPerSec"],
                    "p99_us": data["latencyPercentiles"]["p99"] * 1e6 if data["latencyPercentiles"].get("p99") else None,
                })
            for name, rows in runs.items():
                if rows:
                    print(f"  {name} #{repetition + 1}: {rows[-1]}", file=sys.stderr)
    finally:
        stop_nginx(nginx)

    def median(name, key):
        values = [r[key] for r in runs[name] if r.get(key) is not None]
        return statistics.median(values) if values else None

    date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    print(f"### {date}: {args.rate:,} req/s for {args.duration} s against nginx, median of {args.repetitions} interleaved runs\n")
    print(f"Command: `python3 bench/open_rate.py --rate {args.rate} --duration {args.duration} --repetitions {args.repetitions}`\n")
    print("| run | req/s reached | of target | start lag p50 (ms) | start lag p99 (ms) | late starts (> 1 ms) | latency p99 (ms) |")
    print("|---|---|---|---|---|---|---|")
    for name, label in (("paced", f"horde http --rate, {args.connections} connections"), ("open", "horde open model, a connection per arrival")):
        rps = median(name, "rps")
        late = median(name, "late")
        scheduled = median(name, "scheduled")
        print(f"| {label} | {rps:,.0f} | {100 * rps / args.rate:.2f} % | {median(name, 'lag_p50_us') / 1000:.3f} | "
              f"{median(name, 'lag_p99_us') / 1000:.3f} | {late:.0f} of {scheduled:.0f} | {median(name, 'p99_us') / 1000:.2f} |")
    if runs["oha"]:
        rps = median("oha", "rps")
        p99 = median("oha", "p99_us")
        print(f"| oha -q {args.rate} -c {args.connections} --latency-correction | {rps:,.0f} | {100 * rps / args.rate:.2f} % | | | | "
              f"{p99 / 1000:.2f} |" if p99 else "|")


if __name__ == "__main__":
    main()
