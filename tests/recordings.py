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


class Recorder:
    """``horde record`` on a free port until the block ends (then Ctrl-C, and the HAR is
    written): ``proxy`` is its URL, ``ca`` its certificate authority's file, ``lines`` what it
    printed (read by a thread as it comes)."""

    def __init__(self, har_path, ca_dir, *extra):
        import re
        import threading

        self.har_path = Path(har_path)
        self.process = subprocess.Popen(["horde", "record", "--port", "0", "-o", str(har_path), "--ca-dir", str(ca_dir),
                                         *map(str, extra)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = []
        self.printed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        first = self.wait_for_line("listening on")
        self.proxy = re.search(r"listening on (http://127\.0\.0\.1:\d+)", first).group(1)
        self.ca = Path(ca_dir) / "horde-recorder-ca.pem"

    def _read(self):
        for line in self.process.stdout:
            with self.printed:
                self.lines.append(line)
                self.printed.notify_all()
        with self.printed:
            self.lines.append(None)  # the end
            self.printed.notify_all()

    def wait_for_line(self, text, timeout=30):
        """Waits until the recorder prints a line holding ``text``."""
        with self.printed:
            found = self.printed.wait_for(
                lambda: any(line is None or text in line for line in self.lines), timeout=timeout)
            match = next((line for line in self.lines if line is not None and text in line), None)
        if not found or match is None:
            raise TimeoutError(f"horde record printed no line with {text!r}: {self.lines}")
        return match

    def stop(self):
        """Ctrl-C: the recorder writes the HAR and exits 0."""
        import signal

        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=30)
        assert self.process.returncode == 0, (self.process.returncode, self.process.stderr.read())
        return self.har_path

    def text(self):
        with self.printed:
            return "".join(line for line in self.lines if line)

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        if kind is None:
            self.stop()
        else:
            self.process.kill()
            self.process.wait()


def proxied_client(recorder):
    """A scripted client going through the recorder: urllib with a cookie jar, trusting the
    recorder's authority for HTTPS."""
    import http.cookiejar
    import ssl
    import urllib.request

    context = ssl.create_default_context(cafile=str(recorder.ca))
    return urllib.request.build_opener(
        urllib.request.ProxyHandler({"http": recorder.proxy, "https": recorder.proxy}),
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()),
        urllib.request.HTTPSHandler(context=context))


def _view_state(html):
    import re

    return re.search(r'name="javax\.faces\.ViewState" id="[^"]+" value="([^"]*)"', html).group(1)


def jsf_journey(client, url, upload_name, upload_bytes):
    """Seed 000's JSF journey on the built-in target, as a scripted browser does it: every POST
    carries the ViewState of the page before it; the upload is multipart with a binary file."""
    import urllib.request
    from urllib.parse import urlencode

    def page(path, data=None, content_type=None):
        request = urllib.request.Request(url + path, data=data)
        if content_type:
            request.add_header("Content-Type", content_type)
        request.add_header("Accept", "text/html,application/xhtml+xml")
        with client.open(request) as response:
            return response.read().decode()

    html = page("/")
    html = page("/login")
    html = page("/login", urlencode({"username": "sawyer", "password": "ash-frame",
                                     "javax.faces.ViewState": _view_state(html)}).encode())
    html = page("/account", urlencode({"comment": "oak planks", "javax.faces.ViewState": _view_state(html)}).encode())
    boundary = "----recordedBoundary7MA4YWxk"
    body = b"".join([
        f"--{boundary}\r\nContent-Disposition: form-data; name=\"form_field_1\"\r\n\r\npayload\r\n".encode(),
        f"--{boundary}\r\nContent-Disposition: form-data; name=\"javax.faces.ViewState\"\r\n\r\n{_view_state(html)}\r\n".encode(),
        f"--{boundary}\r\nContent-Disposition: form-data; name=\"file_upload_file\"; filename=\"{upload_name}\"\r\n"
        "Content-Type: application/octet-stream\r\n\r\n".encode(), upload_bytes, f"\r\n--{boundary}--\r\n".encode()])
    html = page("/upload", body, f"multipart/form-data; boundary={boundary}")
    assert f"Received {upload_name} ({len(upload_bytes)} bytes)" in html, html
    page("/api/items")


def orders_journey(client, url, user="ann"):
    """The orders API: log in for a token, list the orders, read the first, cancel the first
    open one; the token goes in Authorization, the ids in the URLs."""
    import urllib.request

    def call(path, payload=None, token=None, method=None):
        data = json.dumps(payload).encode() if payload is not None else None
        request = urllib.request.Request(url + path, data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        with client.open(request) as response:
            return json.loads(response.read())

    token = call("/api/login", {"user": user})["token"]
    orders = call("/api/orders", token=token)["orders"]
    call(f"/api/orders/{orders[0]['id']}", token=token)
    open_order = next(o for o in orders if o["status"] == "open")
    call(f"/api/orders/{open_order['id']}/cancel", token=token, method="POST")


def confirm_journey(client, url):
    """The Django site's confirmation form: its hidden challenge is a word, new at each visit."""
    import re
    import urllib.request
    from urllib.parse import urlencode

    with client.open(url + "/confirm/") as response:
        html = response.read().decode()
    fields = dict(re.findall(r'name="(csrfmiddlewaretoken|challenge)" value="([^"]*)"', html))
    request = urllib.request.Request(url + "/confirm/", data=urlencode(fields).encode())
    request.add_header("Referer", url + "/confirm/")
    with client.open(request) as response:
        assert response.status == 200 and response.url.endswith("/account/") or "/login/" in response.url


# The binary file the fixture recordings upload: every byte value, and a line that looks like a
# multipart delimiter.
FIXTURE_UPLOAD = bytes(range(256)) * 3 + b"\x00\xff\r\n--not-a-boundary\r\n"


def oauth_journey(client, url, start="/oauth/authorize"):
    """OAuth's authorization code grant with PKCE on the built-in target, as a single-page app
    signs in: a code verifier of its own, its S256 challenge on the authorization, which
    redirects to the callback page (the client follows it), whose script posts the code of its
    URL and the verifier for a token, which then opens the orders API. `start="/oauth/login"`
    goes through the sign-in link first: the code is then in the middle of a redirect chain."""
    import base64
    import hashlib
    import secrets
    import urllib.request
    from urllib.parse import parse_qs, urlencode, urlsplit

    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = urlencode({"client_id": "web", "redirect_uri": "/oauth/callback", "state": "st4te",
                       "code_challenge": challenge, "code_challenge_method": "S256"})
    with client.open(url + start + "?" + query) as response:
        landed = response.geturl()
        response.read()
    code = parse_qs(urlsplit(landed).query)["code"][0]
    form = urlencode({"grant_type": "authorization_code", "code": code, "code_verifier": verifier}).encode()
    with client.open(urllib.request.Request(url + "/oauth/token", data=form)) as response:
        token = json.loads(response.read())["access_token"]
    request = urllib.request.Request(url + "/api/orders")
    request.add_header("Authorization", f"Bearer {token}")
    with client.open(request) as response:
        response.read()


def record_target_journeys(directory, url, ca_dir):
    """The built-in target's JSF journey, orders API and OAuth sign-in (straight to the
    authorization, and through the sign-in link), scripted through `horde record`:
    directory/jsf.har, orders.har, oauth.har and oauth_login.har."""
    directory = Path(directory)
    with Recorder(directory / "jsf.har", ca_dir) as recorder:
        jsf_journey(proxied_client(recorder), url, "planer.bin", FIXTURE_UPLOAD)
    with Recorder(directory / "orders.har", ca_dir) as recorder:
        orders_journey(proxied_client(recorder), url, user="ann")
    with Recorder(directory / "oauth.har", ca_dir) as recorder:
        oauth_journey(proxied_client(recorder), url)
    with Recorder(directory / "oauth_login.har", ca_dir) as recorder:
        oauth_journey(proxied_client(recorder), url, start="/oauth/login")
    return directory / "jsf.har", directory / "orders.har", directory / "oauth.har", directory / "oauth_login.har"
