"""``horde record``: a recording proxy that writes a HAR file at Ctrl-C (or when the browser it
started is closed), for ``horde import``.

Ctrl-C and SIGTERM are taken here, with asyncio's signal handlers: they replace the ones the
horde command line installed, for the little that is left of this process's life.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from typing import Optional

from .authority import MissingCryptography, default_directory, load_or_make
from .proxy import RecordingProxy

OK, INVALID_INPUT, FAILED, INTERRUPTED = 0, 2, 3, 130


def run_record(flags) -> int:
    output = flags["output"]
    directory = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(directory):
        print(f"error: -o {output}: the directory {directory} does not exist", file=sys.stderr)
        return INVALID_INPUT
    chromium = None
    if flags.get("browser"):
        chromium = flags.get("chromium") or shutil.which("chromium") or shutil.which("chromium-browser")
        if not chromium or not os.path.exists(chromium):
            print("error: --browser: Chromium is not installed (apt-get install chromium, or --chromium PATH)",
                  file=sys.stderr)
            return INVALID_INPUT
    try:
        authority = load_or_make(flags.get("ca_dir") or default_directory())
    except MissingCryptography as missing:
        print(f"error: {missing}", file=sys.stderr)
        return FAILED
    try:
        return asyncio.run(_record(flags, authority, chromium))
    except OSError as error:
        print(f"error: {error}", file=sys.stderr)
        return FAILED


async def _record(flags, authority, chromium: Optional[str]) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signal_number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signal_number, stop.set)
    count = [0]

    def noted(exchange):
        count[0] += 1
        kind = " (WebSocket upgrade)" if exchange.websocket else ""
        print(f"  {count[0]:>4} {exchange.method} {exchange.url} -> {exchange.status}{kind}", flush=True)

    proxy = RecordingProxy(authority, noted)
    try:
        server = await asyncio.start_server(proxy.handle, flags["host"], flags["port"], limit=64 * 1024)
    except OSError as error:
        print(f"error: cannot listen on {flags['host']}:{flags['port']}: {error.strerror or error}", file=sys.stderr)
        return FAILED
    port = server.sockets[0].getsockname()[1]
    proxy_url = f"http://{flags['host']}:{port}"
    print(f"horde record: proxy listening on {proxy_url} (HTTP and HTTPS); Ctrl-C writes {flags['output']}", flush=True)
    made = "made now" if authority.made_now else "made earlier"
    print(f"horde record: certificate authority for HTTPS ({made}): {authority.cert_path}", flush=True)
    if authority.made_now:
        print("  trust it in the browser you record with (Chromium: Settings > Privacy and security > Security >\n"
              "  Manage certificates > Authorities > Import; Firefox: Settings > Certificates > Import), or\n"
              "  system-wide (Debian: copy it to /usr/local/share/ca-certificates/horde-recorder.crt and run\n"
              f"  update-ca-certificates); curl: --cacert {authority.cert_path}", flush=True)
    browser = None
    profile = None
    if chromium:
        profile = tempfile.mkdtemp(prefix="horde-record-chromium-")
        arguments = [chromium, f"--proxy-server={proxy_url}", "--proxy-bypass-list=<-loopback>",
                     f"--ignore-certificate-errors-spki-list={authority.spki_sha256}", f"--user-data-dir={profile}",
                     "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", "--disable-quic"]
        if flags.get("headless"):
            arguments += ["--headless", "--no-sandbox", "--disable-gpu"]
        elif os.geteuid() == 0:
            arguments.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
        browser = await asyncio.create_subprocess_exec(*arguments, flags["browser"], stdout=subprocess.DEVNULL,
                                                       stderr=subprocess.DEVNULL)
        print(f"horde record: Chromium started on {flags['browser']}; close it or press Ctrl-C to finish", flush=True)
        loop.create_task(_when_done(browser, stop))
    try:
        await stop.wait()
    finally:
        server.close()
        for task in list(proxy.connections):
            task.cancel()
        if browser is not None and browser.returncode is None:
            browser.terminate()
            await browser.wait()
        if profile:
            shutil.rmtree(profile, ignore_errors=True)
    write_har(flags["output"], proxy.exchanges)
    websockets = sum(1 for e in proxy.exchanges if e.websocket)
    noted_ws = f" ({websockets} WebSocket upgrades noted)" if websockets else ""
    print(f"horde record: {len(proxy.exchanges)} exchanges written to {flags['output']}{noted_ws}; now "
          f"horde import {flags['output']}", flush=True)
    return OK


async def _when_done(browser, stop):
    await browser.wait()
    stop.set()


def write_har(path, exchanges) -> None:
    try:
        from ..._engine import __version__ as version
    except ImportError:
        version = "unknown"
    entries = [e.har_entry() for e in sorted(exchanges, key=lambda e: e.started)]
    document = {"log": {"version": "1.2", "creator": {"name": "horde record", "version": version}, "pages": [],
                        "entries": entries}}
    directory = os.path.dirname(os.path.abspath(path))
    descriptor, temporary = tempfile.mkstemp(prefix=".horde-record-", suffix=".har", dir=directory)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=1, ensure_ascii=False)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
