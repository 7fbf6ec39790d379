#!/usr/bin/env python3
"""horde http over TLS against wrk (OpenSSL) and oha (rustls) on the same nginx, in the same run.

Two shapes, as issue 9 asks:

- keep-alive: N connections kept open, requests back to back. Reported: req/s, CPU time per
  1,000 requests (user + system of the load generator, from wait4), peak RSS.
- handshakes: a new connection, and so a full TLS handshake, for every request. nginx closes
  each connection after its response (`keepalive_timeout 0`) and keeps no session cache and
  issues no tickets, so nobody can resume. Reported: handshakes (= requests) per second and CPU
  per 1,000 handshakes. oha runs with --disable-keepalive; wrk reconnects when nginx closes.

nginx (one worker) is pinned to one core, the load generator to the other; tools take turns,
repetitions interleaved. The certificate is ECDSA P-256 from a CA made for the run (openssl);
every tool skips verification (wrk cannot verify), so all pay the same.

    python3 bench/https_vs_peers.py                        # both shapes, 50 connections, 10 s, 3 reps
    python3 bench/https_vs_peers.py --shape handshakes --oha /tmp/oha/bin/oha

Needs nginx, wrk, openssl (Debian packages) and oha (cargo install oha --locked; --oha PATH).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from http_vs_wrk import ensure_tools, measure, version
from local_nginx import pinned, start_nginx, stop_nginx
from peer_table import print_table


def make_certificate(work):
    """A CA and a server certificate for 127.0.0.1 and localhost, ECDSA P-256."""
    def openssl(*argv):
        subprocess.run(["openssl", *argv], check=True, capture_output=True, cwd=work)
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
            "-subj", "/CN=horde bench CA", "-keyout", "ca.key", "-out", "ca.pem")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=localhost",
            "-keyout", "server.key", "-out", "server.csr")
    (work / "san.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "2", "-extfile", "san.ext", "-out", "server.pem")


def tls_configuration(work):
    """Rewrites the shared nginx template's server to TLS, with a /close location."""
    def configure(conf):
        conf = re.sub(r"listen 127\.0\.0\.1:(\d+);",
                      lambda m: f"listen 127.0.0.1:{m.group(1)} ssl;\n"
                                f"    ssl_certificate {work}/server.pem;\n"
                                f"    ssl_certificate_key {work}/server.key;\n"
                                "    ssl_protocols TLSv1.2 TLSv1.3;\n"
                                "    ssl_session_cache off;\n"
                                "    ssl_session_tickets off;\n"
                                '    location = /close { keepalive_timeout 0; return 200 "hello\\n"; }', conf)
        return conf
    return configure


def run_wrk(url, connections, duration, core, close):
    # wrk has no flag for a connection per request; nginx's /close makes it reconnect.
    out, cpu, rss = measure(pinned(core, ["wrk", "-t1", f"-c{connections}", f"-d{duration}s", url]))
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    errors = re.search(r"Socket errors: .*", out)
    if errors:
        print(f"    wrk: {errors.group(0)}", file=sys.stderr)
    return rps, requests, cpu, rss


def run_oha(oha, url, connections, duration, core, close):
    argv = [oha, "--no-tui", "--output-format", "json", "--insecure", "-c", str(connections), "-z", f"{duration}s", url]
    if close:
        argv.insert(1, "--disable-keepalive")
    out, cpu, rss = measure(pinned(core, argv))
    result = json.loads(out)
    rps = result["summary"]["requestsPerSec"]
    requests = round(rps * result["summary"]["total"])
    return rps, requests, cpu, rss


def run_horde(horde, url, connections, duration, core, results):
    before = set(results.glob("*/summary.json"))
    argv = [horde, "http", url, "-k", "-c", str(connections), "-d", f"{duration}s", "--workers", "1", "-q",
            "--results", str(results)]
    _, cpu, rss = measure(pinned(core, argv))
    [path] = set(results.glob("*/summary.json")) - before
    summary = json.loads(path.read_text())
    if summary["global"]["ko"]:
        print(f"    horde: {summary['global']['ko']} KO: {summary['errors']}", file=sys.stderr)
    requests = summary["global"]["count"]
    return requests / (summary["run"]["duration_ms"] / 1000), requests, cpu, rss


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", choices=["keepalive", "handshakes", "both"], default="both")
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--duration", type=int, default=10, help="seconds per run")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--horde", default=shutil.which("horde") or "horde")
    parser.add_argument("--oha", default=shutil.which("oha") or "/tmp/oha/bin/oha")
    args = parser.parse_args()
    ensure_tools()
    if not Path(args.oha).exists():
        sys.exit(f"oha not found at {args.oha} (cargo install oha --locked --root /tmp/oha)")

    work = Path(tempfile.mkdtemp(prefix="horde-bench-tls-"))
    make_certificate(work)
    server_core, client_core = (1, 0) if os.cpu_count() > 1 else (0, 0)
    nginx, base = start_nginx(work, server_core, configure=tls_configuration(work))
    base = base.replace("http://", "https://")
    shapes = ["keepalive", "handshakes"] if args.shape == "both" else [args.shape]
    tools = ["wrk", "oha", "horde"]
    runs = {(shape, tool): [] for shape in shapes for tool in tools}
    try:
        for shape in shapes:
            close = shape == "handshakes"
            url = base + ("/close" if close else "/")
            for repetition in range(args.repetitions):
                # Rotate who goes first so nobody always gets the warmer machine.
                order = tools[repetition % 3:] + tools[:repetition % 3]
                for tool in order:
                    if tool == "wrk":
                        result = run_wrk(url, args.connections, args.duration, client_core, close)
                    elif tool == "oha":
                        result = run_oha(args.oha, url, args.connections, args.duration, client_core, close)
                    else:
                        result = run_horde(args.horde, url, args.connections, args.duration, client_core, work / "results")
                    runs[(shape, tool)].append(result)
                    rps, requests, cpu, rss = result
                    print(f"  {shape:10} {tool:5} #{repetition + 1}: {rps:10.0f} req/s, "
                          f"{cpu * 1e6 / requests:.2f} ms CPU/1k req, {rss / 1024:.1f} MiB", file=sys.stderr)
    finally:
        stop_nginx(nginx)

    date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    nginx_bin = shutil.which("nginx") or "/usr/sbin/nginx"
    print(f"### {date}: HTTPS, {args.connections} connections, {args.duration} s, median of {args.repetitions} interleaved runs\n")
    print(f"Command: `python3 bench/https_vs_peers.py --shape {args.shape} --connections {args.connections} "
          f"--duration {args.duration} --repetitions {args.repetitions}`  ")
    print(f"Machine: {os.cpu_count()} cores, {version(['uname', '-sr'])}; nginx 1 worker on core {server_core}, "
          f"clients on core {client_core}; ECDSA P-256 certificate, TLS 1.3, verification off in every tool  ")
    print(f"Versions: {version([args.horde, '--version'])}; {version(['wrk', '--version'])}; "
          f"{version([args.oha, '--version'])}; {version([nginx_bin, '-v'])}\n")
    for shape in shapes:
        unit = "req/s" if shape == "keepalive" else "handshakes/s"
        print(f"**{shape}**\n")
        print_table({tool: runs[(shape, tool)] for tool in tools}, ("wrk", "oha"), unit)


if __name__ == "__main__":
    main()
