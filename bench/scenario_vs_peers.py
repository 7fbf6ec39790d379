#!/usr/bin/env python3
"""A full scenario in horde (a plan), wrk (Lua) and k6 (JavaScript) on the same nginx, in the
same run: issue 10's bar, horde's CPU per request <= 1.5 x wrk's, with k6 measured beside them.

The scenario, the same in the three tools. C virtual users (wrk: connections) each send one
`GET /api/login` and save the `token` of its JSON reply, then loop for the duration:

- take the next row of a feeder: a CSV file made here (10,000 rows `id,user,role`; role `user`
  for 90 % of the rows, `admin` for the rest, picked with a fixed seed), read circularly with
  one position for the whole run (each pass of any user takes the next row);
- if `role == 'user'`: `GET /api/items/${id}?user=${user}` with `X-User: ${user}`, otherwise
  `GET /api/admin/${id}`; both with `Authorization: Bearer ${token}`;
- a check: `$.token` of the JSON reply, saved as `token` for the user's next request.

nginx answers both with a fixed JSON body. The tools:

- horde: `horde run PLAN.json`; a `csv` feeder with the `circular` strategy, a `feed` step, a
  `do_if` with `else_steps` (condition `'${role}' == 'user'`), a `jsonpath` check with
  `save_as`, inside a `during` loop; `at_once_users` C; options `workers: 1`. Requests are
  read from the run's summary.json (logins included, as for the others).
- wrk: `wrk -t1 -cC -s scenario.lua`. `init()` reads the CSV into a Lua table, `request()`
  builds each request with `wrk.format` (the first C calls, each connection's first request,
  are the logins, after the one call wrk makes to verify the script and never sends),
  `response()` finds the token with `string.match` and keeps it. wrk has one Lua state per
  thread and no per-connection state, so the token is the thread's last one, not the
  connection's (on the wire the same, nginx's tokens being fixed). Check failures are counted
  and printed by `done()`.
- k6: `constant-vus`, C VUs, GOMAXPROCS=1. The CSV is read once with `open()` and split into a
  `SharedArray` (one copy for all VUs, as horde's feeder; k6/experimental/csv would parse it in
  Go but yields the same SharedArray, so the same cost per row read). The circular position is
  `exec.scenario.iterationInTest`, the scenario-wide iteration number. A VU logs in on its first
  iteration; the check is `JSON.parse(res.body).token` through `check()`. Requests carry a
  `name` tag (login, items, admin), k6's documented way to keep one series per request rather
  than one per URL; horde's rows are named the same way. `discardResponseBodies: false` (the
  body is read). Flags: `--quiet --no-color --no-usage-report --address ''` (no REST API
  server), `--no-thresholds` (none are defined anyway) and `--summary-export` (where the request
  count is read); the end-of-test summary itself stays on, as a user gets it.

nginx (one worker) is pinned to one core and every load generator to the other, one thread or
worker each; tools take turns, repetitions interleaved and rotated. For each run: requests per
second, CPU time per 1,000 requests (user + system, from wait4, start-up included) and peak RSS.
Prints the medians and horde's ratios to wrk and k6 as a Markdown table.

    python3 bench/scenario_vs_peers.py                          # 50 users, 10 s, 3 repetitions
    python3 bench/scenario_vs_peers.py --tools wrk,k6 --duration 2 --repetitions 1

Needs nginx and wrk (Debian packages), horde on PATH (or --horde PATH) and k6
(GOBIN=/tmp/k6/bin go install go.k6.io/k6@v1.8.1; --k6 PATH).
"""

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from http_vs_wrk import ensure_tools, measure, version
from local_nginx import pinned, start_nginx, stop_nginx
from peer_table import medians, print_table

TOOLS = ("horde", "wrk", "k6")
ONE_CORE = {"horde": "horde workers 1", "wrk": "wrk -t1", "k6": "k6 GOMAXPROCS=1"}
ROWS = 10_000
ADMIN_SHARE = 0.10
SEED = 10

LOCATIONS = """
    location = /api/login { default_type application/json; return 200 '{"user":"any","token":"t-000"}'; }
    location /api/items/ { default_type application/json; return 200 '{"id":"item","token":"t-123"}'; }
    location /api/admin/ { default_type application/json; return 200 '{"id":"admin","token":"t-456"}'; }
"""

WRK_SCRIPT = r"""
-- The scenario of bench/scenario_vs_peers.py. wrk ... -s scenario.lua URL -- CSV CONNECTIONS
local rows, count, position, logins = {}, 0, 0, 0
token, failures = "none", 0
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  -- One login per connection, each connection's first request; plus one: wrk calls request()
  -- once more, right after init(), to verify the script, and never sends that request.
  logins = tonumber(args[2]) + 1
  local header = true
  for line in io.lines(args[1]) do
    if header then
      header = false
    else
      local id, user, role = line:match("^([^,]*),([^,]*),([^,]*)$")
      count = count + 1
      rows[count] = {id, user, role}
    end
  end
end

function request()
  if logins > 0 then
    logins = logins - 1
    return wrk.format("GET", "/api/login")
  end
  position = position % count + 1
  local row = rows[position]
  if row[3] == "user" then
    return wrk.format("GET", "/api/items/" .. row[1] .. "?user=" .. row[2],
                      {["X-User"] = row[2], ["Authorization"] = "Bearer " .. token})
  end
  return wrk.format("GET", "/api/admin/" .. row[1], {["Authorization"] = "Bearer " .. token})
end

function response(status, headers, body)
  local found = body:match('"token"%s*:%s*"([^"]*)"')
  if found then
    token = found
  else
    failures = failures + 1
  end
end

function done(summary, latency, requests)
  local total = 0
  for _, thread in ipairs(threads) do
    total = total + thread:get("failures")
  end
  io.write(string.format("check failures: %d\n", total))
end
"""

K6_SCRIPT = r"""
// The scenario of bench/scenario_vs_peers.py.
import http from 'k6/http';
import { check } from 'k6';
import exec from 'k6/execution';
import { SharedArray } from 'k6/data';

const BASE = __ENV.BASE_URL;
const rows = new SharedArray('users', function () {
  const lines = open(__ENV.CSV).split('\n');
  const out = [];
  for (let i = 1; i < lines.length; i++) {
    if (lines[i] === '') continue;
    const [id, user, role] = lines[i].split(',');
    out.push({ id, user, role });
  }
  return out;
});

export const options = {
  discardResponseBodies: false,
  scenarios: {
    scenario: { executor: 'constant-vus', vus: Number(__ENV.VUS), duration: __ENV.DURATION, gracefulStop: '5s' },
  },
};

let token; // this VU's session

function get(url, headers, name) {
  const res = http.get(url, { headers, tags: { name } });
  let found;
  try { found = JSON.parse(res.body).token; } catch (e) { found = undefined; }
  if (check(found, { 'token exists': (t) => typeof t === 'string' })) token = found;
}

export default function () {
  if (token === undefined) get(`${BASE}/api/login`, {}, 'login');
  const row = rows[exec.scenario.iterationInTest % rows.length];
  const authorization = `Bearer ${token}`;
  if (row.role === 'user') {
    get(`${BASE}/api/items/${row.id}?user=${row.user}`, { 'X-User': row.user, Authorization: authorization }, 'items');
  } else {
    get(`${BASE}/api/admin/${row.id}`, { Authorization: authorization }, 'admin');
  }
}
"""


def write_feeder(path):
    """ROWS rows `id,user,role`; ADMIN_SHARE of them admin, chosen with a fixed seed."""
    admins = set(random.Random(SEED).sample(range(ROWS), int(ROWS * ADMIN_SHARE)))
    lines = ["id,user,role"]
    lines += [f"{i + 1},user{i + 1:05d},{'admin' if i in admins else 'user'}" for i in range(ROWS)]
    path.write_text("\n".join(lines) + "\n")


def token_check():
    return [{"source": {"type": "jsonpath", "path": "$.token"}, "save_as": "token"}]


def write_plan(path, base, csv, connections, duration):
    authorization = {"name": "Authorization", "value": "Bearer ${token}"}
    items = {"type": "request", "name": "items", "method": "GET", "url": "/api/items/${id}?user=${user}",
             "headers": [{"name": "X-User", "value": "${user}"}, authorization], "checks": token_check()}
    admin = {"type": "request", "name": "admin", "method": "GET", "url": "/api/admin/${id}",
             "headers": [authorization], "checks": token_check()}
    plan = {
        "version": 1,
        "name": "scenario_vs_peers",
        "protocol": {"base_url": base},
        "feeders": [{"name": "users", "source": {"type": "csv", "path": str(csv)}, "strategy": "circular"}],
        "scenarios": [{
            "name": "scenario",
            "injection": [{"type": "at_once_users", "users": connections}],
            "steps": [
                {"type": "request", "name": "login", "method": "GET", "url": "/api/login", "checks": token_check()},
                {"type": "during", "duration_ms": duration * 1000, "steps": [
                    {"type": "feed", "feeder": "users"},
                    {"type": "do_if", "condition": "'${role}' == 'user'", "steps": [items], "else_steps": [admin]},
                ]},
            ],
        }],
        # A safety bound a little above the loop's duration; one worker, as wrk -t1.
        "options": {"max_duration_ms": duration * 1000 + 2000, "workers": 1},
    }
    path.write_text(json.dumps(plan, indent=2) + "\n")


def run_horde(horde, plan, core, results):
    before = set(results.glob("*/summary.json"))
    _, cpu, rss = measure(pinned(core, [horde, "run", str(plan), "-q", "--results", str(results)]))
    [path] = set(results.glob("*/summary.json")) - before
    summary = json.loads(path.read_text())
    if summary["global"]["ko"]:
        print(f"    horde: {summary['global']['ko']} KO: {summary['errors']}", file=sys.stderr)
    requests = summary["global"]["count"]
    return requests / (summary["run"]["duration_ms"] / 1000), requests, cpu, rss


def run_wrk(url, script, csv, connections, duration, core):
    argv = ["wrk", "-t1", f"-c{connections}", f"-d{duration}s", "-s", str(script), url, "--", str(csv), str(connections)]
    out, cpu, rss = measure(pinned(core, argv))
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    for problem in (r"Socket errors: .*", r"Non-2xx or 3xx responses: .*", r"check failures: [1-9]\d*"):
        found = re.search(problem, out)
        if found:
            print(f"    wrk: {found.group(0)}", file=sys.stderr)
    return rps, requests, cpu, rss


def run_k6(k6, script, base, csv, connections, duration, core, work):
    export = work / "k6-summary.json"
    argv = [k6, "run", "--quiet", "--no-color", "--no-usage-report", "--address", "", "--no-thresholds",
            "--summary-export", str(export), "-e", f"BASE_URL={base}", "-e", f"CSV={csv}",
            "-e", f"VUS={connections}", "-e", f"DURATION={duration}s", str(script)]
    _, cpu, rss = measure(pinned(core, argv), env={**os.environ, "GOMAXPROCS": "1"})
    metrics = json.loads(export.read_text())["metrics"]
    if metrics["checks"]["fails"]:
        print(f"    k6: {metrics['checks']['fails']} failed checks", file=sys.stderr)
    if metrics["http_req_failed"]["passes"]:
        print(f"    k6: {metrics['http_req_failed']['passes']} failed requests", file=sys.stderr)
    return metrics["http_reqs"]["rate"], metrics["http_reqs"]["count"], cpu, rss


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=50, help="virtual users (wrk: connections)")
    parser.add_argument("--duration", type=int, default=10, help="seconds per run")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--tools", default=",".join(TOOLS), help="a comma-separated subset of horde,wrk,k6")
    parser.add_argument("--horde", default=shutil.which("horde") or "horde")
    parser.add_argument("--k6", default=shutil.which("k6") or "/tmp/k6/bin/k6")
    args = parser.parse_args()
    tools = [tool for tool in TOOLS if tool in args.tools.split(",")]
    if not tools or set(args.tools.split(",")) - set(TOOLS):
        sys.exit(f"--tools: a comma-separated subset of {','.join(TOOLS)}")
    ensure_tools()
    if "k6" in tools and not Path(args.k6).exists():
        sys.exit(f"k6 not found at {args.k6} (GOBIN=/tmp/k6/bin go install go.k6.io/k6@v1.8.1; --k6 PATH)")

    work = Path(tempfile.mkdtemp(prefix="horde-bench-scenario-"))
    csv, plan, lua, js = work / "users.csv", work / "plan.json", work / "scenario.lua", work / "scenario.js"
    write_feeder(csv)
    lua.write_text(WRK_SCRIPT)
    js.write_text(K6_SCRIPT)
    server_core, client_core = (1, 0) if os.cpu_count() > 1 else (0, 0)
    nginx, base = start_nginx(work, server_core, locations=LOCATIONS)
    write_plan(plan, base, csv, args.connections, args.duration)

    runs = {tool: [] for tool in tools}
    try:
        for repetition in range(args.repetitions):
            # Rotate who goes first so nobody always gets the warmer machine.
            order = tools[repetition % len(tools):] + tools[:repetition % len(tools)]
            for tool in order:
                try:
                    if tool == "horde":
                        result = run_horde(args.horde, plan, client_core, work / "results")
                    elif tool == "wrk":
                        result = run_wrk(base + "/", lua, csv, args.connections, args.duration, client_core)
                    else:
                        result = run_k6(args.k6, js, base, csv, args.connections, args.duration, client_core, work)
                except RuntimeError as error:
                    sys.exit(f"{tool} failed (files in {work}): {error}")
                runs[tool].append(result)
                rps, requests, cpu, rss = result
                print(f"  {tool:5} #{repetition + 1}: {rps:10.0f} req/s, {cpu * 1e6 / requests:.2f} ms CPU/1k req, "
                      f"{rss / 1024:.1f} MiB", file=sys.stderr)
    finally:
        stop_nginx(nginx)

    date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    nginx_bin = shutil.which("nginx") or "/usr/sbin/nginx"
    versions = {"horde": [args.horde, "--version"], "wrk": ["wrk", "--version"], "k6": [args.k6, "version"]}
    print(f"### {date}: a scenario (feeder, condition, check with save_as, templated URL and headers), "
          f"{args.connections} users, {args.duration} s, median of {args.repetitions} interleaved runs\n")
    print(f"Command: `python3 bench/scenario_vs_peers.py --tools {','.join(tools)} --connections {args.connections} "
          f"--duration {args.duration} --repetitions {args.repetitions}`  ")
    print(f"Machine: {os.cpu_count()} cores, {version(['uname', '-sr'])}; nginx 1 worker on core {server_core}, "
          f"clients on core {client_core} ({', '.join(ONE_CORE[tool] for tool in tools)})  ")
    print(f"Versions: {'; '.join(version(versions[tool]) for tool in tools)}; {version([nginx_bin, '-v'])}\n")
    print_table(runs, [peer for peer in ("wrk", "k6") if peer in runs])
    if "horde" in runs and "wrk" in runs:
        ratio = medians(runs["horde"])[1] / medians(runs["wrk"])[1]
        print(f"Bar (issue 10): horde's CPU per request <= 1.5 x wrk's: {ratio:.2f} x, "
              f"{'met' if ratio <= 1.5 else 'NOT met'}.")


if __name__ == "__main__":
    main()
