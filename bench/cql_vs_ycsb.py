"""`horde cql` against YCSB's own CQL binding (YCSB 0.17.0, DataStax Java driver 3.11.5), on the
same Apache Cassandra 5.0 node in the same run: the same core workload, records, operations,
client threads and consistency (ONE). Each tool loads its own keyspace first (untimed here),
then the run phases alternate which tool goes first. Reported: operations per second, the
client's CPU time per 1,000 operations (its process and children, from rusage: the JVM's JIT and
GC included, as a user pays them), each tool's mean, p50 and p99 per operation beside the
server's own for the same phase: Cassandra's ClientRequest metrics over JMX (what `nodetool
proxyhistograms` shows), read before and after each run phase (bench/cassandra/
ClientRequestLatency.java); their difference is what the coordinator measured of exactly that
phase: an exact mean (TotalLatency / count) and percentiles to the histogram's bucket (buckets
grow by 1.2x, so a server percentile is a range up to 20 % wide).

Why YCSB and not cassandra-stress: cassandra-stress is not published to Maven Central (it ships
only inside Cassandra's binary tarball, which this machine cannot download), and YCSB is the
workload `horde cql` reproduces. YCSB's binding is not on Maven Central either: give a YCSB
checkout (tag 0.17.0) with --ycsb-source; its core and the driver come from Maven
(bench/ycsb/pom.xml).

    python3 bench/cql_vs_ycsb.py --ycsb-source ~/YCSB --workload a --records 100000 \\
        --operations 200000 --threads 16 --repetitions 3
"""

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEER = ROOT / "bench" / "ycsb"
CASSANDRA = ROOT / "scripts" / "cassandra" / "start_cassandra.sh"
SERVER_LATENCY = ROOT / "bench" / "cassandra" / "ClientRequestLatency.java"
# Which of the server's ClientRequest kinds serves each YCSB operation.
SERVER_KIND = {"READ": "Read", "UPDATE": "Write", "INSERT": "Write", "SCAN": "RangeSlice"}


def child_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(argv, **kwargs):
    completed = subprocess.run(list(map(str, argv)), capture_output=True, text=True, **kwargs)
    if completed.returncode != 0:
        sys.exit(f"{' '.join(map(str, argv))} failed ({completed.returncode}):\n{completed.stderr[-3000:]}")
    return completed


def build_peer(source, work):
    """YCSB's CQL binding compiled from `source` against the jars of bench/ycsb/pom.xml."""
    lib = PEER / "lib"
    if not lib.is_dir():
        run(["mvn", "-B", "-q", "dependency:copy-dependencies", "-DoutputDirectory=lib"], cwd=PEER)
    binding = Path(source) / "cassandra" / "src" / "main" / "java" / "site" / "ycsb" / "db" / "CassandraCQLClient.java"
    classes = work / "ycsb-classes"
    classes.mkdir()
    run(["javac", "-nowarn", "-d", classes, "-cp", f"{lib}/*", binding])
    return f"{classes}:{lib}/*"


class Node:
    """A throwaway Cassandra node, or the one at --contact-point."""

    def __init__(self, work, contact_point, jmx_port):
        self.pid = None
        self.jmx_port = jmx_port
        if contact_point:
            self.host, self.port = contact_point.split(":")
        else:
            self.host, self.port = "127.0.0.1", free_port()
            self.jmx_port = free_port()
            started = run(["bash", CASSANDRA, work / "cassandra", self.port, free_port(), "1G"],
                          env={**os.environ, "JMX_PORT": self.jmx_port})
            self.pid = int(started.stdout.split()[-1])
            deadline = time.monotonic() + 120
            while not can_connect(int(self.port)):
                if time.monotonic() > deadline:
                    sys.exit("Cassandra did not open its CQL port in 120 s")
                time.sleep(0.5)
        from cassandra.cluster import Cluster

        self.session = Cluster([self.host], port=int(self.port)).connect()

    @property
    def contact_point(self):
        return f"{self.host}:{self.port}"

    def stop(self):
        if self.pid:
            subprocess.run(["kill", str(self.pid)])

    def client_requests(self):
        """The server's ClientRequest latency record now (see ClientRequestLatency.java), or None
        for a node without JMX."""
        if not self.jmx_port:
            return None
        completed = run(["java", "-cp", CASSANDRA.parent / "lib" / "*", SERVER_LATENCY, self.jmx_port])
        return json.loads(completed.stdout)


def server_view(before, after, kind):
    """What the coordinator measured of `kind` between two readings: (count, mean us, p50 and p99
    as their histogram buckets (low, high] in us)."""
    if before is None or after is None:
        return None
    then, now = before[kind], after[kind]
    count = now["count"] - then["count"]
    if count <= 0:
        return None
    buckets = [b - a for a, b in zip(then["buckets"], now["buckets"])]
    # One bucket more than offsets: the last holds what overflowed them.
    offsets = after["offsets"] + [float("inf")]
    # Whether the buckets hold microseconds or nanoseconds is not in the record (the timer's
    # DurationUnit converts its summary figures only): the unit whose bucket mean is nearer the
    # exact mean is the buckets' unit.
    total = sum(buckets)
    midpoints_mean = sum(n * ((offsets[i - 1] if i else 0) + offsets[i]) / 2 for i, n in enumerate(buckets)) / total
    if "total_us" in now:
        exact_mean = (now["total_us"] - then["total_us"]) / count
        scale = 1000.0 if abs(midpoints_mean / 1000 - exact_mean) < abs(midpoints_mean - exact_mean) else 1.0
    else:
        # No total (the transport's queue): the same unit as the ClientRequest timers, the
        # mean to the bucket.
        scale = 1000.0 if now["unit"] == "microseconds" else 1.0
        exact_mean = midpoints_mean / scale

    def percentile(q):
        wanted, seen = q * total, 0
        for index, in_bucket in enumerate(buckets):
            seen += in_bucket
            if seen >= wanted:
                low = offsets[index - 1] if index else 0
                return low / scale, offsets[index] / scale
        return offsets[-2] / scale, float("inf")

    return count, exact_mean, percentile(0.50), percentile(0.99)


def agreement(operations, before, after):
    """Per operation: the client's mean, p50, p99 beside the server's for the same phase."""
    rows = []
    for name, figures in operations.items():
        kind = SERVER_KIND.get(name)
        server = server_view(before, after, kind) if kind else None
        if server is None or "AverageLatency(us)" not in figures:
            continue
        count, mean, p50, p99 = server
        rows.append((name, kind, figures["Operations"], count, figures["AverageLatency(us)"], mean,
                     figures["50thPercentileLatency(us)"], p50, figures["99thPercentileLatency(us)"], p99))
    return rows


def describe_agreement(rows):
    text = []
    for name, kind, client_ops, server_ops, client_mean, server_mean, c50, s50, c99, s99 in rows:
        text.append(f"{name} vs server {kind} ({client_ops:.0f} / {server_ops} ops): mean {client_mean:.0f} / "
                    f"{server_mean:.0f} us = {client_mean / server_mean:.2f}, p50 {c50:.0f} in ({s50[0]:.0f}, "
                    f"{s50[1]:.0f}], p99 {c99:.0f} in ({s99[0]:.0f}, {s99[1]:.0f}]")
    return "; ".join(text)


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def can_connect(port):
    import socket

    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def ycsb_figures(text):
    """Throughput and per-operation (count, p50 us, p99 us) from YCSB's report lines."""
    throughput = float(re.search(r"\[OVERALL\], Throughput\(ops/sec\), ([\d.]+)", text).group(1))
    operations = {}
    for name, metric, value in re.findall(r"^\[([A-Z-]+)\], ([^,]+), ([\d.]+)$", text, re.M):
        operations.setdefault(name, {})[metric] = float(value)
    return throughput, operations


def horde_phase(node, args, keyspace, phase, work):
    directory = Path(tempfile.mkdtemp(dir=work))
    before = child_cpu()
    flags = ["--workload", args.workload, "--phase", phase, "--keyspace", keyspace, "--records", args.records,
             "--threads", args.threads, "--consistency", "one", "--results-dir", directory / "r", "-q"]
    if phase == "run":
        flags += ["--operations", args.operations]
        if args.target:
            flags += ["--target", args.target]
    run(["horde", "cql", node.contact_point, *flags], timeout=3600)
    cpu = child_cpu() - before
    text = (directory / "r" / "ycsb.txt").read_text()
    throughput, operations = ycsb_figures(text)
    done = sum(o.get("Operations", 0) for o in operations.values())
    errors = sum(o.get("Return=ERROR", 0) for o in operations.values())
    return throughput, done, cpu, operations, errors


def ycsb_phase(node, args, keyspace, phase, classpath, work):
    workload = work / f"workload{args.workload}"
    before = child_cpu()
    argv = ["java", "-cp", classpath, "site.ycsb.Client", "-load" if phase == "load" else "-t", "-db",
            "site.ycsb.db.CassandraCQLClient", "-P", workload, "-p", f"hosts={node.host}", "-p", f"port={node.port}",
            "-p", f"cassandra.keyspace={keyspace}", "-p", f"recordcount={args.records}",
            "-p", f"operationcount={args.operations}", "-p", "cassandra.readconsistencylevel=ONE",
            "-p", "cassandra.writeconsistencylevel=ONE", "-p", "hdrhistogram.percentiles=50,95,99",
            "-threads", args.threads]
    if phase == "run" and args.target:
        argv += ["-target", args.target]
    completed = run(argv, timeout=3600)
    cpu = child_cpu() - before
    throughput, operations = ycsb_figures(completed.stdout)
    measured = {name: o for name, o in operations.items() if name not in ("OVERALL", "CLEANUP") and
                not name.startswith("TOTAL_") and "Operations" in o}
    done = sum(o["Operations"] for name, o in measured.items() if not name.endswith("-FAILED"))
    errors = sum(o.get("Return=ERROR", 0) + o.get("Return=NOT_FOUND", 0) for o in measured.values())
    return throughput, done, cpu, measured, errors


def workload_file(source, letter, work):
    (work / f"workload{letter}").write_text((Path(source) / "workloads" / f"workload{letter}").read_text())


def create_keyspace(node, keyspace):
    node.session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
    node.session.execute(f"CREATE KEYSPACE {keyspace} WITH replication = "
                         "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    fields = ", ".join(f"field{i} varchar" for i in range(10))
    node.session.execute(f"CREATE TABLE {keyspace}.usertable (y_id varchar PRIMARY KEY, {fields})")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ycsb-source", required=True, help="a YCSB checkout at tag 0.17.0")
    parser.add_argument("--contact-point", help="an existing node host:port (default: start one)")
    parser.add_argument("--jmx-port", help="the existing node's JMX port, for the server's latencies")
    parser.add_argument("--workload", default="a")
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--operations", type=int, default=200_000)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--target", type=int, help="operations per second of the run phases (default: as fast as they go)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="horde-cql-bench-"))
    classpath = build_peer(args.ycsb_source, work)
    workload_file(args.ycsb_source, args.workload, work)
    node = Node(work, args.contact_point, args.jmx_port)
    try:
        for keyspace in ("bench_horde", "bench_ycsb"):
            create_keyspace(node, keyspace)
        horde_phase(node, args, "bench_horde", "load", work)
        ycsb_phase(node, args, "bench_ycsb", "load", classpath, work)
        samples = {"horde": [], "ycsb": []}
        for repetition in range(args.repetitions):
            order = ["horde", "ycsb"] if repetition % 2 == 0 else ["ycsb", "horde"]
            for tool in order:
                before = node.client_requests()
                if tool == "horde":
                    figures = horde_phase(node, args, "bench_horde", "run", work)
                else:
                    figures = ycsb_phase(node, args, "bench_ycsb", "run", classpath, work)
                throughput, done, cpu, operations, errors = figures
                after = node.client_requests()
                server = agreement(operations, before, after)
                samples[tool].append((*figures, server))
                queued = server_view(before, after, "Queued")
                print(f"{tool}: {throughput:,.0f} ops/s, {done:.0f} operations, {errors:.0f} errors, "
                      f"CPU {cpu * 1e6 / done:.1f} ms per 1,000; client / server: {describe_agreement(server)}"
                      + (f"; queued in the server's transport: mean ~{queued[1]:.0f} us, p50 in ({queued[2][0]:.0f}, "
                         f"{queued[2][1]:.0f}], p99 in ({queued[3][0]:.0f}, {queued[3][1]:.0f}]" if queued else ""),
                      flush=True)
        print()
        print(f"workload {args.workload}, {args.records:,} records, {args.operations:,} operations, "
              f"{args.threads} threads, consistency ONE, medians of {args.repetitions}:")
        print("| tool | ops/s | CPU ms per 1,000 ops |")
        print("|---|---|---|")
        medians = {}
        for tool, runs in samples.items():
            medians[tool] = (statistics.median(r[0] for r in runs), statistics.median(r[2] * 1e6 / r[1] for r in runs))
            print(f"| {tool} | {medians[tool][0]:,.0f} | {medians[tool][1]:.1f} |")
        h, y = medians["horde"], medians["ycsb"]
        print(f"| horde / ycsb | {h[0] / y[0]:.2f} | {h[1] / y[1]:.2f} |")
        print()
        print("client latency / the server's (ClientRequest over JMX, same phase), medians of the repetitions:")
        print("| tool | operation | mean client / server | p50 client (server bucket) | p99 client (server bucket) |")
        print("|---|---|---|---|---|")
        for tool, runs in samples.items():
            for index, row in enumerate(runs[0][5]):
                name, kind = row[0], row[1]
                rows = [r[5][index] for r in runs if len(r[5]) > index]
                ratio = statistics.median(r[4] / r[5] for r in rows)
                c50 = statistics.median(r[6] for r in rows)
                c99 = statistics.median(r[8] for r in rows)
                s50, s99 = rows[len(rows) // 2][7], rows[len(rows) // 2][9]
                print(f"| {tool} | {name} ({kind}) | {ratio:.2f} | {c50:.0f} us ({s50[0]:.0f}-{s50[1]:.0f}) | "
                      f"{c99:.0f} us ({s99[0]:.0f}-{s99[1]:.0f}) |")
    finally:
        node.stop()


if __name__ == "__main__":
    main()
