"""Recordings for the import tests, made by the project's own code.

- :func:`har` and :func:`entry` write small HAR files by hand, one case each, for the unit tests
  (the fields every recorder writes, in HAR 1.2's shapes);
- :func:`browser_recording` drives Debian's Chromium with Playwright and lets it write the HAR
  (``record_har_path``), as a user's browser would: pages, resources, fetches, and uploads
  without their bytes;
- :func:`import_har` runs ``horde import`` and :func:`load_plan` reads back the plan the
  simulation makes.
"""

import base64
import contextlib
import json
import os
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

CHROMIUM = os.environ.get("HORDE_CHROMIUM", "/usr/bin/chromium")
# What Chromium needs on a machine without a display or a network of its own.
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]

START = datetime(2026, 11, 27, 9, 30, 0, tzinfo=timezone.utc)


def when(seconds):
    """The ISO time ``seconds`` after the recordings' start."""
    return (START + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def entry(method, url, status=200, *, at=0.0, time_ms=10.0, request_headers=(), response_headers=(), post=None,
          body=None, mime=None, body_size=None, encoding=None, resource_type=None, pageref=None, redirect=""):
    """One HAR entry. ``post`` is a (mimeType, text) pair; ``body`` the response's text."""
    request = {"method": method, "url": url, "httpVersion": "HTTP/1.1", "cookies": [],
               "headers": [{"name": n, "value": v} for n, v in request_headers], "queryString": [],
               "headersSize": -1, "bodySize": body_size if body_size is not None else (
                   len(post[1].encode("utf-8")) if post else 0)}
    if post is not None:
        request["postData"] = {"mimeType": post[0], "text": post[1]}
    response_mime = mime or ("text/html; charset=utf-8" if body is not None else "")
    headers = list(response_headers)
    if response_mime and not any(n.lower() == "content-type" for n, _ in headers):
        headers.append(("Content-Type", response_mime))
    content = {"size": len(body or ""), "mimeType": response_mime}
    if body is not None:
        content["text"] = body
    if encoding:
        content["encoding"] = encoding
    result = {"startedDateTime": when(at), "time": time_ms, "request": request,
              "response": {"status": status, "statusText": "", "httpVersion": "HTTP/1.1", "cookies": [],
                           "headers": [{"name": n, "value": v} for n, v in headers], "content": content,
                           "redirectURL": redirect, "headersSize": -1, "bodySize": len(body or "")},
              "cache": {}, "timings": {"send": 0, "wait": time_ms, "receive": 0}}
    if resource_type:
        result["_resourceType"] = resource_type
    if pageref:
        result["pageref"] = pageref
    return result


def har(path, entries, creator="tests", pages=()):
    document = {"log": {"version": "1.2", "creator": {"name": creator, "version": "1"}, "pages": list(pages),
                        "entries": list(entries)}}
    Path(path).write_text(json.dumps(document, indent=1))
    return path


def import_har(har_path, *args, cwd=None, timeout=120):
    """``horde import HAR ARGS...``: the completed process."""
    return subprocess.run(["horde", "import", str(har_path), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)


def load_plan(simulation, **params):
    """The plan the simulation makes (its steps, protocol, feeders), read in this process."""
    from horde.loader import load_simulation

    return json.loads(load_simulation(str(simulation), {k: str(v) for k, v in params.items()}))


def requests_of(plan):
    """The request steps of the plan's first scenario, in order."""
    return [step for step in plan["scenarios"][0]["steps"] if step["type"] == "request"]


def b64(data):
    return base64.b64encode(data).decode("ascii")


@contextlib.contextmanager
def browser_recording(har_path, proxy=None):
    """A Playwright page in Debian's Chromium whose traffic is written to ``har_path`` when the
    block ends. With ``proxy`` (http://host:port), through that proxy, loopback included."""
    from playwright.sync_api import sync_playwright

    flags = list(CHROMIUM_FLAGS)
    if proxy:
        # Chromium sends loopback traffic straight to the server unless told otherwise.
        flags += [f"--proxy-server={proxy}", "--proxy-bypass-list=<-loopback>"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=flags)
        try:
            options = {"ignore_https_errors": True}
            if har_path is not None:
                options.update(record_har_path=str(har_path), record_har_content="embed", record_har_mode="full")
            context = browser.new_context(**options)
            page = context.new_page()
            yield page
            context.close()
        finally:
            browser.close()


def django_journey(page, url, username, password, upload, note="remember the planer"):
    """Seed 000's journey on the Django site, clicked through: log in, open the upload page,
    upload a file, add a note (the page's AJAX POST with X-CSRFToken), log out."""
    page.goto(url + "/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url("**/account/")
    page.click("#upload")
    page.wait_for_url("**/upload/")
    page.fill("#id_title", "Q3")
    page.set_input_files("#id_document", str(upload))
    page.click("#send")
    page.wait_for_selector("#received")
    page.fill("#note", note)
    page.click("#add-note")
    page.wait_for_selector("#note-saved:has-text('Saved')")
    page.click("#logout")
    page.wait_for_url("**/login/")
