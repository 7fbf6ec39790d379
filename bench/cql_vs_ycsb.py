"""`horde cql` against YCSB's own CQL binding (YCSB 0.17.0, DataStax Java driver 3.11.5), on the
same Apache Cassandra 5.0 node in the same run: the same core workload, records, operations,
client threads and consistency (ONE). Each tool loads its own keyspace first (untimed here),
then the run phases alternate which tool goes first. Reported: operations per second, the
client's CPU time per 1,000 operations (its process and children, from rusage: the JVM's JIT and
GC included, as a user pays them), each tool's p50/p99, and the server's own coordinator
latencies for each tool's keyspace (Cassandra's `system_views.coordinator_{read,write}_latency`).

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

    def __init__(self, work, contact_point):
        self.pid = None
        if contact_point:
            self.host, self.port = contact_point.split(":")
        else:
            self.host, self.port = "127.0.0.1", free_port()
            started = run(["bash", CASSANDRA, work / "cassandra", self.port, free_port(), "1G"])
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

    def coordinator_latencies(self, keyspace):
        """The server's recent coordinator p99 of the keyspace's table, in ms, per kind. Cassandra
        5.0.9's virtual tables name these columns `_ms` but hold seconds with three decimals
        (their p99 of 0.003 sits beside clients' 3-4 ms): converted here, to 1 ms resolution,
        too coarse for a within-10 % comparison (JMX's ClientRequest metrics would do; this
        node runs without JMX)."""
        found = {}
        for kind in ("read", "write"):
            for row in self.session.execute(
                    f"SELECT * FROM system_views.coordinator_{kind}_latency WHERE keyspace_name = %s ALLOW FILTERING",
                    (keyspace,)):
                found[kind] = f"p99 {row.p99th_ms * 1000:.0f} ms"
        return found


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
            "-p", "cassandra.writeconsistencylevel=ONE", "-threads", args.threads]
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
    parser.add_argument("--workload", default="a")
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--operations", type=int, default=200_000)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--repetitions", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="horde-cql-bench-"))
    classpath = build_peer(args.ycsb_source, work)
    workload_file(args.ycsb_source, args.workload, work)
    node = Node(work, args.contact_point)
    try:
        for keyspace in ("bench_horde", "bench_ycsb"):
            create_keyspace(node, keyspace)
        horde_phase(node, args, "bench_horde", "load", work)
        ycsb_phase(node, args, "bench_ycsb", "load", classpath, work)
        samples = {"horde": [], "ycsb": []}
        for repetition in range(args.repetitions):
            order = ["horde", "ycsb"] if repetition % 2 == 0 else ["ycsb", "horde"]
            for tool in order:
                if tool == "horde":
                    figures = horde_phase(node, args, "bench_horde", "run", work)
                else:
                    figures = ycsb_phase(node, args, "bench_ycsb", "run", classpath, work)
                server = node.coordinator_latencies(f"bench_{tool}")
                samples[tool].append((*figures, server))
                throughput, done, cpu, operations, errors = figures
                print(f"{tool}: {throughput:,.0f} ops/s, {done:.0f} operations, {errors:.0f} errors, "
                      f"CPU {cpu * 1e6 / done:.1f} ms per 1,000; "
                      + "; ".join(f"{name} p50 {o.get('50thPercentileLatency(us)', float('nan')):.0f} us "
                                  f"p99 {o.get('99thPercentileLatency(us)', float('nan')):.0f} us"
                                  for name, o in operations.items())
                      + f"; server {server}", flush=True)
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
    finally:
        node.stop()


if __name__ == "__main__":
    main()
