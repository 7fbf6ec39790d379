#!/usr/bin/env python3
"""horde http --http2 against h2load (nghttp2, the tool HTTP/2 servers are benchmarked with) and
oha --http2, on the same nginx (HTTP/2 over TLS, negotiated by ALPN), in the same run.

Shapes: `C x S` is C connections with S streams in flight on each (h2load -c C -m S, oha -c C
-p S, horde -c C --streams S: C users, each sending S requests at once on its one connection
and waiting for them all before the next S).

nginx (one worker) is pinned to one core, the load generator to the other; tools take turns,
repetitions interleaved. Reported: req/s, CPU time per 1,000 requests (wait4), peak RSS.

    python3 bench/http2_vs_peers.py --oha /tmp/oha/bin/oha
"""

import argparse
import os
import re
import shutil
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from http_vs_wrk import measure, version
from https_vs_peers import make_certificate
from local_nginx import pinned, start_nginx, stop_nginx
from peer_table import print_table


def configuration(work):
    def configure(conf):
        return re.sub(r"listen 127\.0\.0\.1:(\d+);",
                      lambda m: f"listen 127.0.0.1:{m.group(1)} ssl http2;\n"
                                f"    ssl_certificate {work}/server.pem;\n"
                                f"    ssl_certificate_key {work}/server.key;\n"
                                "    http2_max_concurrent_streams 128;", conf)
    return configure


def run_h2load(url, connections, streams, duration, core):
    argv = ["h2load", "-c", str(connections), "-m", str(streams), "-D", str(duration), "-t", "1", url]
    out, cpu, rss = measure(pinned(core, argv))
    requests = int(re.search(r"requests: \d+ total, \d+ started, (\d+) done", out).group(1))
    rps = float(re.search(r"finished in [\d.]+m?s, ([\d.]+) req/s", out).group(1))
    return rps, requests, cpu, rss


def run_oha(oha, url, connections, streams, duration, core):
    import json
    argv = [oha, "--no-tui", "--output-format", "json", "--insecure", "--http2", "-c", str(connections),
            "-p", str(streams), "-z", f"{duration}s", url]
    out, cpu, rss = measure(pinned(core, argv))
    summary = json.loads(out)["summary"]
    rps = summary["requestsPerSec"]
    return rps, round(rps * summary["total"]), cpu, rss


def run_horde(horde, url, connections, streams, duration, core, results):
    import json
    before = set(results.glob("*/summary.json"))
    argv = [horde, "http", url, "--http2", "-k", "-c", str(connections), "--streams", str(streams),
            "-d", f"{duration}s", "--workers", "1", "-q", "--results", str(results)]
    _, cpu, rss = measure(pinned(core, argv))
    [path] = set(results.glob("*/summary.json")) - before
    summary = json.loads(path.read_text())
    if summary["global"]["ko"] or summary["connections"]["http2"] != summary["connections"]["opened"]:
        print(f"    horde: {summary['global']['ko']} KO, connections {summary['connections']}", file=sys.stderr)
    requests = summary["global"]["count"]
    return requests / (summary["run"]["duration_ms"] / 1000), requests, cpu, rss


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", default="10x1,10x10", help="CxS,...: connections x streams per connection")
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--horde", default=shutil.which("horde") or "horde")
    parser.add_argument("--oha", default=shutil.which("oha") or "/tmp/oha/bin/oha")
    args = parser.parse_args()
    for tool in ("nginx", "h2load", "openssl"):
        if not shutil.which(tool) and not Path(f"/usr/sbin/{tool}").exists():
            sys.exit(f"missing {tool} (apt-get install nginx nghttp2-client openssl)")
    shapes = [tuple(int(n) for n in shape.split("x")) for shape in args.shapes.split(",")]

    work = Path(tempfile.mkdtemp(prefix="horde-bench-h2-"))
    make_certificate(work)
    server_core, client_core = (1, 0) if os.cpu_count() > 1 else (0, 0)
    nginx, base = start_nginx(work, server_core, configure=configuration(work))
    url = base.replace("http://", "https://") + "/"
    tools = ["h2load", "oha", "horde"]
    runs = {(shape, tool): [] for shape in shapes for tool in tools}
    try:
        for shape in shapes:
            connections, streams = shape
            for repetition in range(args.repetitions):
                order = tools[repetition % 3:] + tools[:repetition % 3]
                for tool in order:
                    if tool == "h2load":
                        result = run_h2load(url, connections, streams, args.duration, client_core)
                    elif tool == "oha":
                        result = run_oha(args.oha, url, connections, streams, args.duration, client_core)
                    else:
                        result = run_horde(args.horde, url, connections, streams, args.duration, client_core,
                                           work / "results")
                    runs[(shape, tool)].append(result)
                    rps, requests, cpu, rss = result
                    print(f"  {connections}x{streams} {tool:6} #{repetition + 1}: {rps:10.0f} req/s, "
                          f"{cpu * 1e6 / requests:.2f} ms CPU/1k req, {rss / 1024:.1f} MiB", file=sys.stderr)
    finally:
        stop_nginx(nginx)

    date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    nginx_bin = shutil.which("nginx") or "/usr/sbin/nginx"
    print(f"### {date}: HTTP/2 over TLS, {args.duration} s, median of {args.repetitions} interleaved runs\n")
    print(f"Command: `python3 bench/http2_vs_peers.py --shapes {args.shapes} --duration {args.duration} "
          f"--repetitions {args.repetitions}`  ")
    print(f"Machine: {os.cpu_count()} cores, {version(['uname', '-sr'])}; nginx 1 worker on core {server_core}, "
          f"clients on core {client_core}  ")
    print(f"Versions: {version([args.horde, '--version'])}; {version(['h2load', '--version'])}; "
          f"{version([args.oha, '--version'])}; {version([nginx_bin, '-v'])}\n")
    for shape in shapes:
        connections, streams = shape
        print(f"**{connections} connections x {streams} streams**\n")
        print_table({tool: runs[(shape, tool)] for tool in tools}, ("h2load", "oha"))

if __name__ == "__main__":
    main()
