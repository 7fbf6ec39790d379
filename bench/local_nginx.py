"""nginx on loopback for the benchmarks: one worker, the shared config template, a free port,
optionally pinned to a core; polled until it accepts connections."""

import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parent.parent / "scripts" / "nginx.conf.template"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pinned(core, argv):
    """argv run on one core, when there is more than one and taskset is there."""
    if core is None or not shutil.which("taskset") or os.cpu_count() < 2:
        return argv
    return ["taskset", "-c", str(core), *argv]


def start_nginx(work, core=None, configure=None, locations=""):
    """Starts nginx with its files in `work`; returns (process, base URL without a slash).
    `locations`, nginx `location` blocks, are added to the template's server (its catch-all
    `location /` still serves the rest); `configure`, if given, then rewrites the text."""
    port = free_port()
    listen = f"listen 127.0.0.1:{port};"
    conf = TEMPLATE.read_text().replace("{dir}", str(work)).replace("{port}", str(port))
    if locations:
        if listen not in conf:
            sys.exit(f"{TEMPLATE}: no `{listen}` line to add the locations after")
        conf = conf.replace(listen, listen + "\n" + textwrap.indent(textwrap.dedent(locations).strip(), "    "), 1)
    (work / "nginx.conf").write_text(configure(conf) if configure else conf)
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    process = subprocess.Popen(pinned(core, [binary, "-c", str(work / "nginx.conf"), "-p", str(work)]))
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process, f"http://127.0.0.1:{port}"
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                sys.exit("nginx did not start")
            time.sleep(0.02)


def stop_nginx(process):
    process.terminate()
    process.wait()
