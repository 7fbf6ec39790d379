#!/usr/bin/env python3
"""Capacity search against nginx limit_req: does `horde sweep` blame the server for load it did
not deliver?

nginx limits one location to RATE requests a second (`limit_req`, no burst: a request closer to
the previous one than 1/RATE s is refused with 503), and `horde sweep --auto --model rate
--slo 'errors<1%'` looks for the highest arrival rate without errors. Run once on a quiet
machine and once with --hogs N busy processes competing for the CPU: on the busy machine,
arrivals start late and bunch up, nginx refuses the bunches, and a search that does not
check its own delivery reads that as the server's limit. Prints each sweep's table.

    python3 bench/sweep_limit_req.py                 # quiet, then with 4 CPU hogs
    python3 bench/sweep_limit_req.py --rate 300 --hogs 4 --level-duration 3s

Needs nginx (Debian package) and horde on PATH.
"""

import argparse
import subprocess
import tempfile
from pathlib import Path

from local_nginx import start_nginx, stop_nginx


def start_limited_nginx(work, rate):
    """nginx whose pages are limited to `rate` requests a second; returns (process, URL)."""
    # nginx's worker (nobody, when started as root) must reach the file.
    work.chmod(0o755)
    (work / "www").mkdir()
    (work / "www" / "index.html").write_text("hello\n")

    def limit(conf):
        conf = conf.replace(
            "  keepalive_requests 100000000;",
            f"  keepalive_requests 100000000;\n  limit_req_zone $binary_remote_addr zone=one:1m rate={rate}r/s;\n"
            "  limit_req_status 503;",
        )
        # limit_req acts in a phase that `return` skips: the limited location serves a file.
        return conf.replace('    location / { return 200 "hello\\n"; }', f"    location / {{ limit_req zone=one; root {work}/www; }}")

    process, base = start_nginx(work, configure=limit)
    return process, base + "/index.html"


def sweep(url, args, results):
    argv = ["horde", "sweep", url, "--auto", "--model", "rate", "--start", "50", "--level-duration", args.level_duration,
            "--warmup", "1s", "--slo", "errors<1%", "-q", "--results", str(results)]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=300, help="nginx's limit, requests per second")
    parser.add_argument("--hogs", type=int, default=4, help="busy processes for the second sweep")
    parser.add_argument("--level-duration", default="3s")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="horde-limit-req-"))
    nginx, url = start_limited_nginx(work, args.rate)
    try:
        print(f"#### quiet machine, nginx limit_req {args.rate} r/s\n\n```")
        print(sweep(url, args, work / "quiet").strip())
        print("```\n")
        hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(args.hogs)]
        try:
            print(f"#### {args.hogs} busy processes competing for the CPU\n\n```")
            print(sweep(url, args, work / "busy").strip())
            print("```")
        finally:
            for hog in hogs:
                hog.kill()
    finally:
        stop_nginx(nginx)


if __name__ == "__main__":
    main()
