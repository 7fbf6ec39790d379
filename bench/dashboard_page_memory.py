#!/usr/bin/env python3
"""Does the live dashboard's page stay bounded over a long run? A run of an hour (by default)
with 20 named requests against nginx, its `--dashboard` page open in Chromium the whole time;
every few minutes the page's garbage is collected and its JavaScript heap, DOM nodes and event
listeners are read (Chrome DevTools Protocol, `Performance.getMetrics`). The peer: the run's
own report.html, opened fresh in the same browser at the end. The live page after an hour of
updates should hold what the finished report holds, not an hour of history.

    python3 bench/dashboard_page_memory.py                   # an hour, a sample every 5 minutes
    python3 bench/dashboard_page_memory.py --duration 300 --sample-every 30   # a quick look

Needs Playwright (`pip install playwright`) and Chromium (/usr/bin/chromium, or
HORDE_CHROMIUM). It costs little CPU (100 requests per second, one rendering every few
seconds), but run it alone: a report rendered late only means fewer updates.
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from http_vs_wrk import version
from local_nginx import start_nginx, stop_nginx

CHROMIUM = os.environ.get("HORDE_CHROMIUM", "/usr/bin/chromium")
REQUEST_NAMES = 20
USERS_PER_SECOND = 5  # each user sends every request once: 100 requests per second

SIMULATION = """
from horde import constant_users_per_sec, http, param, scenario, setup, status

journey = scenario("twenty pages")
for k in range({names}):
    journey = journey.exec(http(f"page {{k:02d}}").get(f"/?page={{k}}").check(status().is_(200)))

setup(
    journey.inject(constant_users_per_sec({rate}).during(param("seconds", 60))),
    protocol=http.base_url(param("base_url", "http://127.0.0.1:8080")),
    name="dashboard_page_memory",
)
"""

METRICS = ("JSHeapUsedSize", "Nodes", "JSEventListeners", "Documents")


def page_metrics(cdp):
    """The page's figures after a full garbage collection: what it holds, not what it has not
    freed yet."""
    cdp.send("HeapProfiler.collectGarbage")
    figures = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    return {name: figures[name] for name in METRICS}


def count_updates(base, counter):
    """A second viewer: reads /events as a page does and counts the updates, to the final one:
    what the dashboard sent every open page (the measured page gets each too, unless it fell
    behind, when it gets the newest)."""
    import urllib.request

    with urllib.request.urlopen(base + "/events", timeout=600) as stream:
        for raw in stream:
            if raw.startswith(b"data: "):
                counter.append(time.monotonic())
                if b'"final":true' in raw:
                    return


def threads_cpu_s(pid):
    """CPU seconds (user + system) of a process's threads, summed by name: the dashboard's
    threads (rendering, serving) are `horde-dashboard`, the engine's `horde-worker-N`."""
    ticks = os.sysconf("SC_CLK_TCK")
    by_name = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended meanwhile
            continue
        name = "horde-worker" if name.startswith("horde-worker") else name
        by_name[name] = by_name.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / ticks
    return by_name


def row(label, figures, updates):
    return (f"| {label} | {updates} | {figures['JSHeapUsedSize'] / 1e6:.2f} | {figures['Nodes']:,.0f} | "
            f"{figures['JSEventListeners']:,.0f} | {figures['Documents']:.0f} |")  # fmt: skip


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=3600, help="seconds of load")
    parser.add_argument("--sample-every", type=int, default=300, help="seconds between samples of the page")
    parser.add_argument("--horde", default=shutil.which("horde") or "horde")
    args = parser.parse_args()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sys.exit("needs Playwright: python3 -m pip install playwright")
    if not os.path.exists(CHROMIUM):
        sys.exit(f"{CHROMIUM} is not installed (apt-get install chromium, or set HORDE_CHROMIUM)")

    work = Path(tempfile.mkdtemp(prefix="horde-bench-page-memory-"))
    nginx, base_url = start_nginx(work)
    simulation = work / "sim.py"
    simulation.write_text(SIMULATION.format(names=REQUEST_NAMES, rate=USERS_PER_SECOND))
    argv = [args.horde, "run", str(simulation), "-D", f"base_url={base_url}", "-D", f"seconds={args.duration}",
            "--dashboard", "-q", "--results", str(work / "results")]  # fmt: skip
    horde = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    samples = []
    updates = []
    try:
        for line in horde.stderr:
            match = re.search(r"dashboard at (http://\S+)", line)
            if match:
                break
        else:
            sys.exit("horde printed no dashboard address")
        url = match.group(1)
        dashboard = re.match(r"http://[^/]+", url).group(0)
        threading.Thread(target=horde.stderr.read, daemon=True).start()
        threading.Thread(target=count_updates, args=(dashboard, updates), daemon=True).start()
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors = []
            page.on("pageerror", lambda err: errors.append(str(err)))
            page.on("console", lambda msg: msg.type == "error" and errors.append(msg.text))
            cdp = page.context.new_cdp_session(page)
            cdp.send("Performance.enable")
            page.goto(url)
            page.wait_for_function("() => document.getElementById('live-state').textContent.startsWith('live · updated')",
                                   timeout=60_000)  # fmt: skip
            started = time.monotonic()
            samples.append(("start", page_metrics(cdp), len(updates)))
            print(row("start", *samples[-1][1:]), file=sys.stderr)
            while horde.poll() is None:
                next_sample = started + len(samples) * args.sample_every
                while horde.poll() is None and time.monotonic() < next_sample:
                    page.wait_for_timeout(1000)  # the page keeps getting its events meanwhile
                if horde.poll() is None:
                    cpu, cpu_elapsed = threads_cpu_s(horde.pid), time.monotonic() - started
                    elapsed = round(time.monotonic() - started)
                    label = f"{elapsed // 60}:{elapsed % 60:02d}"
                    samples.append((label, page_metrics(cdp), len(updates)))
                    print(row(label, *samples[-1][1:]), file=sys.stderr)
            if horde.returncode != 0:
                sys.exit(f"{' '.join(argv)} exited with {horde.returncode}")
            page.wait_for_function("() => document.getElementById('live-state').textContent.startsWith('final report')",
                                   timeout=30_000)  # fmt: skip
            samples.append(("end: the final report, live", page_metrics(cdp), len(updates)))
            [report] = (work / "results").glob("*/report.html")
            fresh = browser.new_page(viewport={"width": 1280, "height": 900})
            fresh_cdp = fresh.context.new_cdp_session(fresh)
            fresh_cdp.send("Performance.enable")
            fresh.goto(report.as_uri())
            fresh.wait_for_load_state("load")
            peer = page_metrics(fresh_cdp)
            browser.close()
    finally:
        if horde.poll() is None:
            horde.kill()
        stop_nginx(nginx)

    live_end = samples[-1][1]
    heaps = [s[1]["JSHeapUsedSize"] for s in samples[1:-1]]
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    print(f"### {date}: the dashboard's page over a run of {args.duration} s, {REQUEST_NAMES} request names, "
          f"{REQUEST_NAMES * USERS_PER_SECOND} requests per second\n")  # fmt: skip
    print(f"Command: `python3 bench/dashboard_page_memory.py --duration {args.duration} --sample-every {args.sample_every}`  ")
    print(f"Machine: {os.cpu_count()} cores, {version(['uname', '-sr'])}  ")
    print(f"Versions: {version([args.horde, '--version'])}; {version([CHROMIUM, '--version'])}\n")
    print("Each figure after a full garbage collection of the page.\n")
    print("| when (m:ss) | updates sent | JS heap MB | DOM nodes | event listeners | documents |")
    print("|---|---|---|---|---|---|")
    for label, figures, received in samples:
        print(row(label, figures, received))
    print(row("peer: report.html opened fresh", peer, "-"))
    print()
    print(f"Live page at the end / report.html fresh: {live_end['JSHeapUsedSize'] / peer['JSHeapUsedSize']:.2f}x the JS heap, "
          f"{live_end['Nodes'] / peer['Nodes']:.2f}x the DOM nodes  ")  # fmt: skip
    if len(heaps) >= 2:
        print(f"JS heap during the run: median {statistics.median(heaps) / 1e6:.2f} MB, "
              f"min {min(heaps) / 1e6:.2f}, max {max(heaps) / 1e6:.2f}  ")  # fmt: skip
    print(f"Page errors: {len(errors)}" + (f" (first: {errors[0]})" if errors else ""))
    if len(samples) > 2:
        dashboard, workers = cpu.get("horde-dashboard", 0.0), cpu.get("horde-worker", 0.0)
        print(f"\nCPU of horde's threads at the last sample ({cpu_elapsed:.0f} s): the dashboard's (rendering, serving) "
              f"{dashboard:.1f} s, {100 * dashboard / cpu_elapsed:.1f} % of a core; the engine's workers {workers:.1f} s; "
              f"the collector {cpu.get('horde-collector', 0.0):.1f} s")  # fmt: skip
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
