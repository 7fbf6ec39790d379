"""SQL inside scenarios against pgbench, on the same PostgreSQL in the same run: pgbench's
select-only script (`-S -M prepared`: one prepared `SELECT abalance FROM pgbench_accounts WHERE
aid = :aid` per transaction, aid random) against a horde scenario doing the same statement with
`params=["${__random_int(1, N)}"]`, closed model, the same number of connections. Statements per
second and the client's CPU time per statement (its process and children, from rusage), as
ratios; repetitions alternate which tool goes first. With `--pool`, horde's users share that many
connections instead of one each.

    python3 bench/sql_scenario_vs_pgbench.py --scale 10 --clients 4 --seconds 10 --repetitions 3
"""

import argparse
import json
import re
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from sql_vs_peers import Database, run

SIMULATION = """
from horde import at_once_users, param, scenario, setup, sql
accounts = param("accounts", 1000000)
scn = scenario("select only").during(param("seconds", 10), sql("select").query(
    "SELECT abalance FROM pgbench_accounts WHERE aid = $1", params=[f"${{__random_int(1, {accounts})}}"]))
database = sql.url(param("url"))
pool = param("pool", 0)
setup(scn.inject(at_once_users(param("users", 4))), protocol=database.pool(pool) if pool else database,
      max_duration=param("seconds", 10) + 30)
"""


def child_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def horde_select(database, work, clients, seconds, accounts, pool):
    sim = work / "select_only.py"
    sim.write_text(SIMULATION)
    results = Path(tempfile.mkdtemp(dir=work))
    before = child_cpu()
    run(["horde", "run", str(sim), "-D", f"url={database.url}", "-D", f"users={clients}", "-D", f"seconds={seconds}",
         "-D", f"accounts={accounts}", "-D", f"pool={pool}", "--results", str(results), "-q"])
    cpu = child_cpu() - before
    summary = json.loads(next(results.glob("*/summary.json")).read_text())
    statements = summary["global"]["ok"]
    assert summary["global"]["ko"] == 0, summary["errors"]
    return statements / (summary["run"]["duration_ms"] / 1000), cpu / statements


def pgbench_select(database, clients, seconds):
    before = child_cpu()
    out = run(["pgbench", "-n", "-S", "-M", "prepared", "-h", "127.0.0.1", "-p", str(database.port), "-U", "bench",
               "-c", str(clients), "-j", str(min(clients, 2)), "-T", str(seconds), "bench"], env=database.env).stdout
    cpu = child_cpu() - before
    transactions = int(re.search(r"number of transactions actually processed: (\d+)", out).group(1))
    return transactions / seconds, cpu / transactions


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=int, default=10, help="pgbench's scale: 100,000 accounts each")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--pool", type=int, default=0, help="horde's pool size (0: a connection per user)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="horde-sql-scenario-bench-"))
    database = Database("postgres", work)
    samples = {"horde": [], "pgbench": []}
    try:
        run(["pgbench", "-i", "-q", "-s", str(args.scale), "-h", "127.0.0.1", "-p", str(database.port), "-U", "bench",
             "bench"], env=database.env)
        accounts = args.scale * 100_000
        for repetition in range(args.repetitions):
            order = ["horde", "pgbench"] if repetition % 2 == 0 else ["pgbench", "horde"]
            for tool in order:
                if tool == "horde":
                    sample = horde_select(database, work, args.clients, args.seconds, accounts, args.pool)
                else:
                    sample = pgbench_select(database, args.clients, args.seconds)
                samples[tool].append(sample)
                print(f"#{repetition + 1} {tool}: {sample[0]:,.0f} statements/s, {sample[1] * 1e6:.1f} us CPU each",
                      file=sys.stderr)
    finally:
        database.stop()
    rate = {tool: statistics.median(s[0] for s in v) for tool, v in samples.items()}
    cpu = {tool: statistics.median(s[1] for s in v) for tool, v in samples.items()}
    pool = f"a pool of {args.pool}" if args.pool else "a connection per user"
    print(f"\nselect-only, {args.scale * 100_000:,} accounts, {args.clients} clients ({pool}), {args.seconds} s; "
          f"medians of {args.repetitions}\n")
    print("| horde statements/s | pgbench tps | ratio | horde CPU us/statement | pgbench CPU us/transaction | ratio |")
    print("|---|---|---|---|---|---|")
    print(f"| {rate['horde']:,.0f} | {rate['pgbench']:,.0f} | {rate['horde'] / rate['pgbench']:.2f} | "
          f"{cpu['horde'] * 1e6:.1f} | {cpu['pgbench'] * 1e6:.1f} | {cpu['horde'] / cpu['pgbench']:.2f} |")


if __name__ == "__main__":
    main()
