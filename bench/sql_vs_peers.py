"""`horde sql` against each database's own tools, on the same server in the same run (issue 12's
bars): the populate phase's best strategy against the database's bulk load driven by its C
client (psql's \\copy, `mariadb --local-infile` LOAD DATA, `sqlite3 .import`); row-by-row
autocommit inserts against pgbench -M prepared and mariadb-slap at the same thread count; and
the streamed select against psql (FETCH_COUNT) and `mariadb --quick`, with horde's peak memory.
Repetitions are interleaved; medians and ratios are printed as a Markdown table.

    python3 bench/sql_vs_peers.py --rows 2000000 --row-rows 100000 --threads 4 --repetitions 3
"""

import argparse
import json
import math
import os
import random
import re
import shutil
import statistics
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts" / "sql"
TEXT = "".join(random.Random(1).choice(string.ascii_letters + string.digits) for _ in range(45))


def run(argv, env=None, stdout=subprocess.PIPE):
    completed = subprocess.run(argv, stdout=stdout, stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})
    if completed.returncode != 0:
        sys.exit(f"{' '.join(map(str, argv))} failed ({completed.returncode}): {completed.stderr[-2000:]}")
    return completed


def timed(argv, env=None):
    started = time.perf_counter()
    run(argv, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


class Database:
    """A throwaway server, reached by horde and by its peers over the same `transport`: tcp
    (127.0.0.1), unix (the server's socket) or tls (PostgreSQL over TCP with sslmode=require)."""

    def __init__(self, kind, work, transport="tcp"):
        self.kind = kind
        self.work = work
        self.env = {"PGPASSWORD": "benchpw"}
        if kind == "sqlite":
            self.path = work / "bench.db"
            self.url = f"sqlite://{self.path}"
            return
        if transport == "tls" and kind != "postgres":
            sys.exit("--transport tls: PostgreSQL only")
        port = 20000 + random.randrange(20000)
        directory = Path(tempfile.mkdtemp(prefix=f"horde-bench-{kind}-"))
        started = run(["bash", str(SCRIPTS / f"start_{kind}.sh"), str(directory), str(port)])
        self.pid = int(started.stdout.strip().splitlines()[-1])
        self.directory = directory
        self.port = port
        if kind == "postgres":
            host = str(directory) if transport == "unix" else "127.0.0.1"
            # pgbench, psql: libpq's flags and environment.
            self.connect_args = ["-h", host, "-p", str(port), "-U", "bench"]
            if transport == "unix":
                self.url = f"postgres://bench@/bench?host={directory}&port={port}"
            else:
                self.url = f"postgres://bench:benchpw@127.0.0.1:{port}/bench"
            if transport == "tls":
                self.serve_tls()
                self.url += "?sslmode=require"
                self.env["PGSSLMODE"] = "require"
        else:
            socket = directory / "mysqld.sock"
            self.connect_args = ([f"--socket={socket}"] if transport == "unix" else ["-h", "127.0.0.1", "-P", str(port)])
            self.url = f"mysql://bench:benchpw@127.0.0.1:{port}/bench" + (f"?socket={socket}" if transport == "unix" else "")

    def serve_tls(self):
        """TLS on, with a self-signed certificate (P-256, as the tests' certificates)."""
        cert, key = self.directory / "server.crt", self.directory / "server.key"
        run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1"])
        if os.geteuid() == 0:
            shutil.chown(cert, "postgres")
            shutil.chown(key, "postgres")
        key.chmod(0o600)
        superuser = ["psql", "-q", "-h", str(self.directory), "-p", str(self.port), "-U", "postgres", "-d", "bench"]
        run(superuser + ["-c", "ALTER SYSTEM SET ssl = on", "-c", f"ALTER SYSTEM SET ssl_cert_file = '{cert}'",
                         "-c", f"ALTER SYSTEM SET ssl_key_file = '{key}'", "-c", "SELECT pg_reload_conf()"])
        time.sleep(0.5)

    def client(self, sql, extra=()):
        """The database's own command-line client running `sql`."""
        if self.kind == "postgres":
            return ["psql", "-q", *self.connect_args, "-d", "bench", *extra, "-c", sql]
        if self.kind == "mariadb":
            return ["mariadb", "--no-defaults", *self.connect_args, "-ubench", "-pbenchpw", *extra, "bench", "-e", sql]
        return ["sqlite3", *extra, str(self.path), sql]

    def sql(self, sql):
        return run(self.client(sql), env=self.env).stdout

    def stop(self):
        if self.kind == "sqlite":
            return
        os.kill(self.pid, 2 if self.kind == "postgres" else 15)
        for _ in range(300):
            if not os.path.exists(f"/proc/{self.pid}"):
                break
            time.sleep(0.1)
        shutil.rmtree(self.directory, ignore_errors=True)


def horde_sql(database, work, *flags):
    """Runs `horde sql`; its phases from summary.json."""
    results = Path(tempfile.mkdtemp(dir=work))
    shutil.rmtree(results)
    run(["horde", "sql", "--url", database.url, "--results-dir", str(results), "-q", *map(str, flags)])
    return json.loads((results / "summary.json").read_text())["sql"]


def peer_bulk_load(database, data):
    """The database's own bulk load of `data` (one text per line) by its C client: rows/s."""
    database.sql("DROP TABLE IF EXISTS peer_bulk")
    if database.kind == "sqlite":
        database.sql("CREATE TABLE peer_bulk (text VARCHAR(45))")
        return timed(["sqlite3", str(database.path), ".mode tabs", f".import {data} peer_bulk"])
    if database.kind == "postgres":
        database.sql("CREATE TABLE peer_bulk (id INTEGER GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, text VARCHAR(45))")
        return timed(database.client(f"\\copy peer_bulk (text) FROM '{data}'"), env=database.env)
    database.sql("CREATE TABLE peer_bulk (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, text VARCHAR(45)) "
                 "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4")
    return timed(database.client(f"LOAD DATA LOCAL INFILE '{data}' INTO TABLE peer_bulk (text)", ["--local-infile=1"]))


def peer_rows(database, rows, threads, bound=False):
    """Row-by-row autocommit inserts by the database's own load tool: rows/s (None: no tool).
    `bound` (pgbench): each row's value a parameter drawn per row, as horde binds one, rather
    than one literal in the prepared statement."""
    if database.kind == "sqlite":
        return None
    database.sql("DROP TABLE IF EXISTS peer_rows")
    if database.kind == "postgres":
        database.sql("CREATE TABLE peer_rows (id INTEGER GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, text VARCHAR(45))")
        script = Path(tempfile.mkstemp(suffix=".sql")[1])
        if bound:
            script.write_text("\\set r random(100000000000000000, 999999999999999999)\n"
                              "INSERT INTO peer_rows (text) VALUES (:r);\n")
        else:
            script.write_text(f"INSERT INTO peer_rows (text) VALUES ('{TEXT}');\n")
        out = run(["pgbench", "-n", "-M", "prepared", *database.connect_args,
                   "-c", str(threads), "-j", str(threads), "-t", str(rows // threads), "-f", str(script), "bench"],
                  env=database.env).stdout
        return float(re.search(r"tps = ([\d.]+)", out).group(1))
    database.sql("CREATE TABLE peer_rows (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, text VARCHAR(45)) "
                 "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4")
    out = run(["mariadb-slap", "--no-defaults", *database.connect_args, "-ubench", "-pbenchpw",
               f"--concurrency={threads}", "--iterations=1", f"--number-of-queries={rows}", "--create-schema=bench",
               f"--query=INSERT INTO peer_rows (text) VALUES ('{TEXT}')"]).stdout
    seconds = float(re.search(r"Average number of seconds to run all queries: ([\d.]+)", out).group(1))
    return rows / seconds


def peer_select(database):
    """Every row of bulktest through the database's own client, streamed: seconds."""
    if database.kind == "postgres":
        return timed(database.client("SELECT id, text FROM bulktest", ["-v", "FETCH_COUNT=10000", "-o", "/dev/null"]),
                     env=database.env)
    if database.kind == "mariadb":
        return timed(database.client("SELECT id, text FROM bulktest", ["--quick"]))
    return timed(["sqlite3", str(database.path), "SELECT id, text FROM bulktest"])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--databases", default="sqlite,postgres,mariadb")
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--row-rows", type=int, default=100_000, help="rows of the row-by-row comparison")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--parts", default="populate,select,row", help="which comparisons to run")
    parser.add_argument("--transport", default="tcp", choices=("tcp", "unix", "tls"),
                        help="how every tool reaches the server: 127.0.0.1, its Unix socket, or TLS (PostgreSQL)")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    work = Path(tempfile.mkdtemp(prefix="horde-sql-bench-"))
    data = work / "rows.tsv"
    generator = random.Random(2)
    alphabet = string.ascii_letters + string.digits
    with open(data, "w") as out:
        for _ in range(args.rows):
            out.write("".join(generator.choices(alphabet, k=45)) + "\n")
    results = {}
    for kind in args.databases.split(","):
        database = Database(kind, work, args.transport)
        threads = 1 if kind == "sqlite" else args.threads
        samples = {k: [] for k in ("horde_populate", "horde_strategy", "peer_bulk", "horde_row", "peer_row", "peer_row_bound",
                                   "horde_select", "peer_select", "horde_select_mb")}
        try:
            for repetition in range(args.repetitions):
                if "row" in parts and kind != "sqlite":
                    # Which tool goes first alternates: the server's own drift (checkpoints,
                    # autovacuum) lands on both alike.
                    tools = ["horde", "peer", "bound"] if repetition % 2 == 0 else ["bound", "peer", "horde"]
                    if kind != "postgres":
                        tools.remove("bound")
                    for tool in tools:
                        if tool == "horde":
                            rows = horde_sql(database, work, "--rows", args.row_rows, "--threads", threads, "--phases",
                                             "create,populate", "--populate", "row", "--table", "horde_rows",
                                             "--replace")
                            samples["horde_row"].append(
                                next(p for p in rows if p["name"] == "populate row")["rows_per_second"])
                        elif tool == "peer":
                            samples["peer_row"].append(peer_rows(database, args.row_rows, threads))
                        else:
                            samples["peer_row_bound"].append(peer_rows(database, args.row_rows, threads, bound=True))
                if "populate" not in parts and "select" not in parts:
                    bound = f", bound {samples['peer_row_bound'][-1]:.0f}" if samples["peer_row_bound"] else ""
                    print(f"{kind} #{repetition + 1}: horde row {samples['horde_row'][-1]:.0f}, "
                          f"peer row {samples['peer_row'][-1]:.0f}{bound}", file=sys.stderr)
                    continue
                phases = horde_sql(database, work, "--rows", args.rows, "--threads", threads, "--phases", "create,populate",
                                   "--populate", "batch,bulk" + (",pipeline" if kind == "postgres" else ""),
                                   "--replace", "--keep")
                best = max(phases[1:], key=lambda p: p["rows_per_second"])
                samples["horde_populate"].append(best["rows_per_second"])
                samples["horde_strategy"].append(best["strategy"])
                samples["peer_bulk"].append(args.rows / peer_bulk_load(database, data))
                select = horde_sql(database, work, "--rows", args.rows, "--threads", 1, "--phases", "select", "--keep")[0]
                samples["horde_select"].append(select["rows_per_second"])
                samples["horde_select_mb"].append(select["client_peak_memory_bytes"] / 2**20)
                samples["peer_select"].append(args.rows / peer_select(database))
                print(f"{kind} #{repetition + 1}: " + ", ".join(f"{k} {v[-1]:.0f}" if isinstance(v[-1], float) else
                                                             f"{k} {v[-1]}" for k, v in samples.items() if v),
                      file=sys.stderr)
        finally:
            database.stop()
        results[kind] = samples
    print(f"\n{args.rows:,} rows of 45 characters; {args.threads} threads (SQLite 1); over {args.transport}; "
          f"medians of {args.repetitions}\n")
    print("| database | horde populate (best) | bulk load by its client | ratio | horde row | pgbench / mariadb-slap | ratio "
          "| horde select | client select | ratio | horde select peak MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for kind, s in results.items():
        m = {k: statistics.median(v) for k, v in s.items() if v and not isinstance(v[0], str)}
        if "horde_populate" not in m:
            print(f"| {kind} | - | - | - | {m['horde_row']:,.0f} | {m['peer_row']:,.0f} | "
                  f"{m['horde_row'] / m['peer_row']:.2f} | - | - | - | - |")
            continue
        strategy = max(set(s["horde_strategy"]), key=s["horde_strategy"].count)
        row = (f"{m['horde_row']:,.0f} | {m['peer_row']:,.0f} | {m['horde_row'] / m['peer_row']:.2f}"
               if "horde_row" in m else "- | - | -")
        print(f"| {kind} | {m['horde_populate']:,.0f} ({strategy}) | {m['peer_bulk']:,.0f} | "
              f"{m['horde_populate'] / m['peer_bulk']:.2f} | {row} | {m['horde_select']:,.0f} | {m['peer_select']:,.0f} | "
              f"{m['horde_select'] / m['peer_select']:.2f} | {m['horde_select_mb']:.1f} |")
    for kind, s in results.items():
        # Each repetition runs the tools back to back: the ratio within a repetition cancels the
        # server's drift between repetitions (its checkpoints, the machine's steal), which the
        # medians of each tool's own figures do not.
        for peer, label in (("peer_row", "its load tool"), ("peer_row_bound", "pgbench binding a value")):
            pairs = [h / p for h, p in zip(s["horde_row"], s[peer])]
            if pairs:
                geometric = math.exp(statistics.mean(math.log(r) for r in pairs))
                print(f"\n{kind}: horde row by row / {label}, within each repetition: "
                      f"{', '.join(f'{r:.2f}' for r in pairs)}; median {statistics.median(pairs):.2f}, "
                      f"geometric mean {geometric:.2f}, horde ahead in {sum(r > 1 for r in pairs)} of {len(pairs)}")
    for kind, s in results.items():
        if s["peer_row_bound"]:
            horde_row, bound = statistics.median(s["horde_row"]), statistics.median(s["peer_row_bound"])
            print(f"\n{kind}: pgbench binding a value per row (`\\set r random(...)`, `VALUES (:r)`): "
                  f"{bound:,.0f} rows/s; horde {horde_row:,.0f}: ratio {horde_row / bound:.2f}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
