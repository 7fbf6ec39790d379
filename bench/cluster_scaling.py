#!/usr/bin/env python3
"""What `--cluster` costs, against nginx on this machine (issue 26's performance bars).

`cpu`: the same users and requests (`horde http -c 20 -n N`) run locally with 2 worker
threads and on `--cluster local:2` (two Dask worker processes of one thread each), interleaved
ABBA. CPU per request two ways: during the run (the local process's `generator.cpu_ms`; on the
cluster every share's `machines[].cpu_ms` plus the coordinator's, which holds the Dask
scheduler of local:N) and for the whole command (user + sys of the process tree, Python,
Dask's start and stop included). The split runs also give each share's start skew, clock
error and snapshot delays (summary.json `machines[]`). Bars: cluster CPU per request at most
1.05x local; snapshots at the coordinator within 50 ms of their interval's end; start skew
under 1 ms.

`users`: 100,000 virtual users on keep-alive connections through `--cluster local:6` (each
process under this machine's 20,000 open files), paced at one request per 10 s, against one
nginx of 6 workers listening on 5 ports (a loopback address and port pair has ~28,000
ephemeral source ports). nginx's own count must equal horde's. Memory per user: the shares'
peak memory at 100,000 users minus at 1,000 per share, over the difference; beside a local
run's (15,000 users minus 1,000).

`grants`: what row grants cost (`--on-worker-loss replace` bounds each share's queue rows by
the coordinator's grants): 4 closed-model users taking a queue row per request as fast as
nginx answers, for 5 s on `--cluster local:2`, with `replace` (and a spare) against the default
`continue` (no grants), interleaved ABBA. Requests sent and the feeds that waited for a grant.

`functions`: a scenario that calls a Python session function per request (the simulation's
own function, read and set one variable) with 20 closed-model users for 5 s, locally (2
worker threads, one per core, one interpreter) against `--cluster local:2` (each worker process loads the
simulation and runs its users' functions in its own interpreter), interleaved ABBA. Requests
per second and CPU per request during the run.

`log`: what `--request-log` costs on a cluster against what it costs locally: `horde http -c 20
-n N` locally (2 threads) and on `--cluster local:2`, each with and without a JSONL request log,
interleaved. Requests per second and CPU per request of the whole command (the shares format
their records, deflate them and send them through the Dask scheduler to the coordinator,
which writes them); the log must hold exactly N lines.

    python3 bench/cluster_scaling.py cpu [--requests 400000] [--reps 3]
    python3 bench/cluster_scaling.py users [--users 100000]
    python3 bench/cluster_scaling.py grants [--reps 4]
    python3 bench/cluster_scaling.py functions [--reps 3]
    python3 bench/cluster_scaling.py log [--requests 200000] [--reps 3]
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

from local_nginx import TEMPLATE, free_port, start_nginx, stop_nginx

HORDE = shutil.which("horde") or "horde"


def run_horde(argv, results):
    """Runs horde to completion; returns (summary, user+sys CPU seconds of its process tree,
    wall seconds, its largest resident set in bytes)."""
    began = time.monotonic()
    process = subprocess.Popen([HORDE, *argv, "-q", "--results-dir", str(results)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - began
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"horde {' '.join(map(str, argv))} failed ({os.waitstatus_to_exitcode(status)}): {stderr}")
    summary = json.loads((results / "summary.json").read_text())
    # wait4 counts the process and the children it waited for: Dask's worker processes of
    # local:N are the horde process's own.
    return summary, usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss * 1024


def nginx_requests(url):
    """nginx's own count of the requests it served (stub_status; this one included)."""
    with urllib.request.urlopen(url + "/nginx_status", timeout=10) as answer:
        return int(answer.read().decode().splitlines()[2].split()[2])


def medians(rows, keys):
    """{run kind: {key: the median over its repetitions}} of {run kind: [row, ...]}."""
    return {which: {key: statistics.median(r[key] for r in runs) for key in keys} for which, runs in rows.items()}


def machine_timing(summary):
    """(start skew across the shares in us, the largest clock error in us, mean and max snapshot
    delay in ms) of a split run."""
    machines = summary["machines"]
    late = [m["start_late_us"] for m in machines]
    delays = [m["snapshot_delay_ms"] for m in machines if "snapshot_delay_ms" in m]
    mean = sum(d["mean"] * d["intervals"] for d in delays) / max(1, sum(d["intervals"] for d in delays))
    return (max(late) - min(late) if len(late) > 1 else late[0], max(m.get("clock_error_us", 0) for m in machines),
            mean, max((d["max"] for d in delays), default=0))


def cpu(args):
    work = Path(tempfile.mkdtemp(prefix="horde-cluster-cpu-"))
    nginx, url = start_nginx(work)
    rows = {"local": [], "cluster": []}
    try:
        for rep in range(args.reps):
            order = ["local", "cluster"] if rep % 2 == 0 else ["cluster", "local"]
            for which in order:
                flags = ["--workers", "2"] if which == "local" else ["--cluster", "local:2"]
                before = nginx_requests(url)
                summary, tree_cpu, wall, _ = run_horde(["http", url + "/", "-c", "20", "-n", str(args.requests), *flags],
                                                    work / f"{which}-{rep}")
                served = nginx_requests(url) - before - 1
                count = summary["global"]["count"]
                if served != count or count != args.requests:
                    sys.exit(f"{which}: nginx served {served}, horde counted {count}, of {args.requests}")
                in_run_ms = summary["generator"]["cpu_ms"] + sum(m["cpu_ms"] for m in summary.get("machines", []))
                row = {"in_run_us": in_run_ms * 1000 / count, "tree_us": tree_cpu * 1e6 / count, "wall": wall,
                       "rps": count * 1000 / summary["run"]["duration_ms"]}
                if which == "cluster":
                    row["timing"] = machine_timing(summary)
                rows[which].append(row)
                print(f"# {which} {rep}: {row}", file=sys.stderr)
    finally:
        stop_nginx(nginx)
    median = medians(rows, ("in_run_us", "tree_us", "wall", "rps"))
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    print(f"### {date}: `horde http -c 20 -n {args.requests:,}`, local (2 threads) vs `--cluster local:2`, "
          f"median of {args.reps}, interleaved\n")
    print(f"Command: `python3 bench/cluster_scaling.py cpu --requests {args.requests} --reps {args.reps}`\n")
    print("| run | req/s | CPU/request during the run (us) | CPU/request, whole command (us) | wall (s) |")
    print("|---|---|---|---|---|")
    for which in ("local", "cluster"):
        m = median[which]
        print(f"| {which} | {m['rps']:,.0f} | {m['in_run_us']:.2f} | {m['tree_us']:.2f} | {m['wall']:.1f} |")
    ratio_run = median["cluster"]["in_run_us"] / median["local"]["in_run_us"]
    ratio_tree = median["cluster"]["tree_us"] / median["local"]["tree_us"]
    print(f"\n**cluster / local CPU per request: {ratio_run:.3f}x during the run, {ratio_tree:.3f}x for the whole "
          f"command** (bar: 1.05x).\n")
    print("| split run | start skew across shares (us) | clock error, largest (+/- us) | snapshot delay mean (ms) "
          "| snapshot delay max (ms) |")
    print("|---|---|---|---|---|")
    for i, row in enumerate(rows["cluster"]):
        skew, error, mean, longest = row["timing"]
        print(f"| {i} | {skew:.1f} | {error:.1f} | {mean:.2f} | {longest:.2f} |")


USERS_PORTS = 5
NGINX_WORKERS = 6


def many_ports_nginx(work):
    """nginx of NGINX_WORKERS workers listening on USERS_PORTS ports (reuseport: each worker
    its own queue); returns (process, [base URLs])."""
    ports = [free_port() for _ in range(USERS_PORTS)]
    conf = TEMPLATE.read_text().replace("{dir}", str(work))
    conf = conf.replace("worker_processes 1;", f"worker_processes {NGINX_WORKERS};")
    conf = conf.replace("worker_rlimit_nofile 30000;", "worker_rlimit_nofile 20000;")
    # Each worker takes every pending connection when woken: arrivals of thousands a second
    # otherwise overflow the accept queues (SYN-ACKs resent after 1, 3, 7 s).
    conf = conf.replace("worker_connections 30000;", "worker_connections 19000; multi_accept on;")
    conf = conf.replace("listen 127.0.0.1:{port};", "\n".join(f"listen 127.0.0.1:{p} reuseport backlog=4096;"
                                                              for p in ports))
    (work / "nginx.conf").write_text(conf)
    process = subprocess.Popen([shutil.which("nginx") or "/usr/sbin/nginx", "-c", str(work / "nginx.conf"), "-p",
                                str(work)])
    deadline = time.monotonic() + 10
    for port in ports:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    sys.exit("nginx did not start")
                time.sleep(0.02)
    return process, [f"http://127.0.0.1:{p}" for p in ports]


def users_plan(urls, users, ramp_s, hold_s):
    """`users` users arriving over `ramp_s`, each on its own connection for `hold_s`, one
    request every 10 s; spread over the ports, a scenario each."""
    scenarios = []
    for k, url in enumerate(urls):
        share = users // len(urls) + (1 if k < users % len(urls) else 0)
        scenarios.append({
            "name": f"port{k}",
            "steps": [{"type": "during", "duration_ms": hold_s * 1000, "steps": [
                {"type": "request", "name": "tick", "method": "GET", "url": url + "/"},
                {"type": "pace", "duration_ms": 10_000}]}],
            "injection": [{"type": "ramp_users", "users": share, "duration_ms": ramp_s * 1000}],
        })
    return {"version": 1, "name": f"users_{users}", "scenarios": scenarios,
            "options": {"max_duration_ms": (ramp_s + hold_s + 20) * 1000}}


def users(args):
    work = Path(tempfile.mkdtemp(prefix="horde-cluster-users-"))
    nginx, urls = many_ports_nginx(work)
    results = {}
    try:
        runs = [("local", 1_000, []), ("local", args.local_users, []),
                ("cluster", 1_000 * args.shares, ["--cluster", f"local:{args.shares}"]),
                ("cluster", args.users, ["--cluster", f"local:{args.shares}"])]
        for which, count, flags in runs:
            path = work / f"{which}-{count}.json"
            path.write_text(json.dumps(users_plan(urls, count, args.ramp, args.hold)))
            before = nginx_requests(urls[0])
            summary, tree_cpu, wall, maxrss = run_horde(["run", str(path), *flags], work / f"{which}-{count}")
            served = nginx_requests(urls[0]) - before - 1
            g = summary["global"]
            if served != g["count"] or g["ko"] or summary["users"]["started"] != count:
                sys.exit(f"{which} {count}: nginx served {served}, horde counted {g['count']} ({g['ko']} KO), "
                         f"{summary['users']['started']} users started")
            # A local run's peak is its process's; a split run's, the sum of its shares' (each a
            # Dask worker process, Python and Dask included), as they measured it.
            machines = summary.get("machines", [])
            peak = sum(m["peak_memory_bytes"] for m in machines) if machines else maxrss
            results[(which, count)] = {"summary": summary, "wall": wall, "peak": peak, "tree_cpu": tree_cpu}
            print(f"# {which} {count}: served {served}, wall {wall:.1f} s", file=sys.stderr)
    finally:
        stop_nginx(nginx)
    print_users(args, results)


def print_users(args, results):
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    print(f"### {date}: {args.users:,} keep-alive users on `--cluster local:{args.shares}`, one request per 10 s, "
          f"{args.ramp} s ramp, {args.hold} s each\n")
    print(f"Command: `python3 bench/cluster_scaling.py users --users {args.users} --local-users {args.local_users} "
          f"--shares {args.shares} --ramp {args.ramp} --hold {args.hold}`\n")
    print("| run | users | requests (horde = nginx) | p99 (ms) | peak memory (MiB) | machines |")
    print("|---|---|---|---|---|---|")
    for (which, count), r in results.items():
        g = r["summary"]["global"]
        p99 = next(p["value_us"] for p in g["latency"]["all"]["percentiles"] if p["percentile"] == 99.0)
        print(f"| {which} | {count:,} | {g['count']:,} | {p99 / 1000:.2f} | {r['peak'] / 2**20:.0f} | "
              f"{len(r['summary'].get('machines', [])) or 1} |")
    for which in ("local", "cluster"):
        (small, small_run), (big, big_run) = sorted((k[1], r) for k, r in results.items() if k[0] == which)
        per_user = (big_run["peak"] - small_run["peak"]) / (big - small)
        print(f"\n**{which}: {per_user / 1024:.2f} KiB per user** ((peak at {big:,} - at {small:,}) / "
              f"{big - small:,}).", end="")
    print()


def grants(args):
    work = Path(tempfile.mkdtemp(prefix="horde-cluster-grants-"))
    nginx, url = start_nginx(work)
    rows = work / "rows.csv"
    rows.write_text("id\n" + "".join(f"{i}\n" for i in range(400_000)))
    plan = {"version": 1, "protocol": {"base_url": url},
            "feeders": [{"name": "rows", "source": {"type": "csv", "path": str(rows)}}],
            "scenarios": [{"name": "rows",
                           "steps": [{"type": "feed", "feeder": "rows"},
                                     {"type": "request", "name": "row", "method": "GET", "url": "/?id=${id}"}],
                           "injection": [{"type": "constant_concurrent_users", "users": 4, "duration_ms": 5000}]}]}
    (work / "plan.json").write_text(json.dumps(plan))
    counts = {"replace": [], "continue": []}
    try:
        for rep in range(args.reps):
            order = ["replace", "continue"] if rep % 2 == 0 else ["continue", "replace"]
            for which in order:
                flags = ["--spares", "1", "--on-worker-loss", "replace"] if which == "replace" else []
                summary, _, _, _ = run_horde(["run", str(work / "plan.json"), "--cluster", "local:2", *flags],
                                             work / f"{which}-{rep}")
                waits = [m.get("row_waits", 0) for m in summary["machines"]]
                counts[which].append(summary["global"]["count"])
                print(f"# {which} {rep}: {summary['global']['count']} requests, feeds that waited {waits}",
                      file=sys.stderr)
    finally:
        stop_nginx(nginx)
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    print(f"### {date}: row grants, 4 users feeding a queue row per request for 5 s on `--cluster local:2`, "
          f"{args.reps} runs each, interleaved\n")
    print(f"Command: `python3 bench/cluster_scaling.py grants --reps {args.reps}`\n")
    print("| policy | requests (each run) | median |")
    print("|---|---|---|")
    for which, runs in counts.items():
        print(f"| {which} | {', '.join(f'{c:,}' for c in runs)} | {statistics.median(runs):,.0f} |")
    ratio = statistics.median(counts["replace"]) / statistics.median(counts["continue"])
    print(f"\n**with grants / without: {ratio:.3f}x the requests.**")


FUNCTIONS_SIMULATION = """
from horde import at_once_users, exec_, http, scenario, setup

def next_number(session):
    return session.set("n", int(session.get("n", "0")) + 1)

loop = [http("item").get("/?n=${{n}}"), exec_(next_number)]
setup(scenario("s").set(n="0").during(5, loop).inject(at_once_users(20)), protocol=http.base_url("{base}"),
      max_duration=7)
"""


def functions(args):
    work = Path(tempfile.mkdtemp(prefix="horde-cluster-functions-"))
    nginx, url = start_nginx(work)
    simulation = work / "functions.py"
    simulation.write_text(FUNCTIONS_SIMULATION.format(base=url))
    rows = {"local": [], "cluster": []}
    try:
        for rep in range(args.reps):
            order = ["local", "cluster"] if rep % 2 == 0 else ["cluster", "local"]
            for which in order:
                # Locally, one thread per core (2 here).
                flags = [] if which == "local" else ["--cluster", "local:2"]
                summary, _, _, _ = run_horde(["run", str(simulation), *flags], work / f"{which}-{rep}")
                count = summary["global"]["count"]
                if summary["global"]["ko"]:
                    sys.exit(f"{which}: {summary['global']['ko']} KO: {summary['errors']}")
                in_run_ms = summary["generator"]["cpu_ms"] + sum(m["cpu_ms"] for m in summary.get("machines", []))
                row = {"rps": count * 1000 / summary["run"]["duration_ms"], "cpu_us": in_run_ms * 1000 / count}
                rows[which].append(row)
                print(f"# {which} {rep}: {count} requests, {row}", file=sys.stderr)
    finally:
        stop_nginx(nginx)
    median = medians(rows, ("rps", "cpu_us"))
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    print(f"### {date}: a Python session function per request, 20 users for 5 s, local (2 threads) vs "
          f"`--cluster local:2`, median of {args.reps}, interleaved\n")
    print(f"Command: `python3 bench/cluster_scaling.py functions --reps {args.reps}`\n")
    print("| run | req/s (each run) | median req/s | CPU/request during the run (us) |")
    print("|---|---|---|---|")
    for which in ("local", "cluster"):
        runs = ", ".join(f"{r['rps']:,.0f}" for r in rows[which])
        print(f"| {which} | {runs} | {median[which]['rps']:,.0f} | {median[which]['cpu_us']:.1f} |")
    print(f"\n**cluster / local: {median['cluster']['rps'] / median['local']['rps']:.3f}x the requests per second, "
          f"{median['cluster']['cpu_us'] / median['local']['cpu_us']:.3f}x the CPU per request.**")


LOG_KINDS = ("local", "local + log", "cluster", "cluster + log")


def request_log(args):
    work = Path(tempfile.mkdtemp(prefix="horde-cluster-log-"))
    nginx, url = start_nginx(work)
    rows = {kind: [] for kind in LOG_KINDS}
    try:
        for rep in range(args.reps):
            for kind in (LOG_KINDS if rep % 2 == 0 else tuple(reversed(LOG_KINDS))):
                results = work / f"{kind.replace(' + ', '-')}-{rep}"
                log = work / f"requests-{rep}.jsonl"
                flags = ["--workers", "2"] if kind.startswith("local") else ["--cluster", "local:2"]
                if kind.endswith("log"):
                    flags += ["--request-log", str(log)]
                summary, tree_cpu, wall, _ = run_horde(["http", url + "/", "-c", "20", "-n", str(args.requests), *flags],
                                                    results)
                count = summary["global"]["count"]
                if count != args.requests:
                    sys.exit(f"{kind}: horde counted {count} of {args.requests}")
                row = {"rps": count * 1000 / summary["run"]["duration_ms"], "tree_us": tree_cpu * 1e6 / count,
                       "wall": wall}
                if kind.endswith("log"):
                    with open(log, "rb") as lines:
                        logged = sum(1 for _ in lines)
                    if logged != count:
                        sys.exit(f"{kind}: the log holds {logged} lines for {count} requests")
                    row["log_mb"] = log.stat().st_size / 1e6
                    log.unlink()
                rows[kind].append(row)
                print(f"# {kind} {rep}: {row}", file=sys.stderr)
    finally:
        stop_nginx(nginx)
    median = medians(rows, ("rps", "tree_us", "wall"))
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    print(f"### {date}: `--request-log` on `--cluster local:2` and locally, `horde http -c 20 -n "
          f"{args.requests:,}`, median of {args.reps}, interleaved\n")
    print(f"Command: `python3 bench/cluster_scaling.py log --requests {args.requests} --reps {args.reps}`\n")
    print("| run | req/s | CPU/request, whole command (us) | wall (s) |")
    print("|---|---|---|---|")
    for kind in LOG_KINDS:
        m = median[kind]
        print(f"| {kind} | {m['rps']:,.0f} | {m['tree_us']:.2f} | {m['wall']:.1f} |")
    local = median["local + log"]["tree_us"] / median["local"]["tree_us"]
    cluster = median["cluster + log"]["tree_us"] / median["cluster"]["tree_us"]
    print(f"\n**The log's CPU per request: {local:.3f}x locally, {cluster:.3f}x on the cluster; requests per "
          f"second with the log on the cluster {median['cluster + log']['rps'] / median['cluster']['rps']:.3f}x "
          f"without.** Every log held exactly {args.requests:,} lines.")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="part", required=True)
    p = sub.add_parser("cpu")
    p.add_argument("--requests", type=int, default=400_000)
    p.add_argument("--reps", type=int, default=3)
    p = sub.add_parser("users")
    p.add_argument("--users", type=int, default=100_000)
    p.add_argument("--local-users", type=int, default=15_000)
    p.add_argument("--shares", type=int, default=6)
    p.add_argument("--ramp", type=int, default=60, help="seconds")
    p.add_argument("--hold", type=int, default=40, help="seconds")
    p = sub.add_parser("grants")
    p.add_argument("--reps", type=int, default=4)
    p = sub.add_parser("functions")
    p.add_argument("--reps", type=int, default=3)
    p = sub.add_parser("log")
    p.add_argument("--requests", type=int, default=200_000)
    p.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    {"cpu": cpu, "users": users, "grants": grants, "functions": functions, "log": request_log}[args.part](args)


if __name__ == "__main__":
    main()
