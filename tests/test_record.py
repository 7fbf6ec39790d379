"""`horde record`: the recording proxy writes what passed through it, whole, as HAR 1.2 when it
is stopped with Ctrl-C; HTTPS through its own certificate authority; WebSocket upgrades noted;
Chromium started through it. Then `horde import` of what it wrote replays."""

import base64
import json
import os
import socket
import stat
import subprocess
import urllib.error
import urllib.request

import pytest

from conftest import Target
from recordings import CHROMIUM, Recorder, browser_recording, django_journey, import_har, proxied_client


def entries(har_path):
    document = json.loads(har_path.read_text())
    assert document["log"]["version"] == "1.2" and document["log"]["creator"]["name"] == "horde record"
    return document["log"]["entries"]


def test_records_http_and_https_with_whole_bodies_until_ctrl_c(tmp_path):
    plain, secure = Target(), Target(tls=True)
    try:
        body = bytes(range(256)) + "ünïcode".encode("utf-8")
        with Recorder(tmp_path / "journey.har", tmp_path / "ca") as recorder:
            client = proxied_client(recorder)
            client.open(urllib.request.Request(plain.url + "/api/echo", data=b'{"text": "caf\\u00e9 \\u2603"}')).read()
            with pytest.raises(urllib.error.HTTPError) as refused:  # not JSON: the target says 400
                client.open(urllib.request.Request(plain.url + "/api/echo", data=body))
            assert refused.value.code == 400
            with client.open(secure.url.replace("127.0.0.1", "localhost") + "/api/items") as response:
                assert json.loads(response.read())["count"] == 3
            recorder.wait_for_line("/api/items -> 200")
        text_post, binary_post, items = entries(tmp_path / "journey.har")
        assert text_post["request"]["postData"]["text"] == '{"text": "caf\\u00e9 \\u2603"}'
        # Bytes that are not UTF-8 are written as latin-1, which gives them back exactly.
        assert binary_post["request"]["postData"]["text"].encode("latin-1") == body
        assert binary_post["request"]["bodySize"] == len(body)
        assert binary_post["response"]["status"] == 400
        assert items["request"]["url"].startswith("https://localhost:")
        assert json.loads(items["response"]["content"]["text"])["count"] == 3
        assert plain.stats()["by_route"]["POST /api/echo"] == 2
    finally:
        plain.stop()
        secure.stop()


def test_the_certificate_authority_is_made_once_and_kept_private(tmp_path):
    with Recorder(tmp_path / "a.har", tmp_path / "ca") as first:
        first.wait_for_line("certificate authority")
    assert "made now" in first.text() and "update-ca-certificates" in first.text()
    for name in ("horde-recorder-ca.key", "horde-recorder-hosts.key"):
        assert stat.S_IMODE(os.stat(tmp_path / "ca" / name).st_mode) == 0o600
    made = (tmp_path / "ca" / "horde-recorder-ca.pem").read_bytes()
    with Recorder(tmp_path / "b.har", tmp_path / "ca") as second:
        second.wait_for_line("certificate authority")
    assert "made earlier" in second.text()
    assert (tmp_path / "ca" / "horde-recorder-ca.pem").read_bytes() == made
    assert entries(tmp_path / "b.har") == []


def test_websocket_upgrades_are_noted_and_relayed(tmp_path):
    server = Target()
    try:
        with Recorder(tmp_path / "ws.har", tmp_path / "ca") as recorder:
            host, port = recorder.proxy.removeprefix("http://").split(":")
            with socket.create_connection((host, int(port)), timeout=10) as connection:
                key = base64.b64encode(os.urandom(16)).decode()
                connection.sendall((f"GET {server.url}/ws/echo HTTP/1.1\r\nHost: {server.url[7:]}\r\n"
                                    f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                                    "Sec-WebSocket-Version: 13\r\n\r\n").encode())
                answer = connection.recv(4096)
                assert answer.startswith(b"HTTP/1.1 101"), answer
                # A masked text frame "hi" goes through the tunnel and comes back.
                mask = os.urandom(4)
                connection.sendall(bytes([0x81, 0x82]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(b"hi")))
                assert connection.recv(4096)[-2:] == b"hi"
            recorder.wait_for_line("(WebSocket upgrade)")
        [upgrade] = entries(tmp_path / "ws.har")
        assert upgrade["response"]["status"] == 101 and "_webSocketMessages" in upgrade
        assert server.stats()["ws_messages_echoed"] == 1
        completed = import_har(tmp_path / "ws.har", "-o", tmp_path / "ws.py")
        assert completed.returncode == 2 and "no request left to replay" in completed.stderr
    finally:
        server.stop()


def test_bad_flags(tmp_path):
    completed = subprocess.run(["horde", "record", "-o", str(tmp_path / "missing" / "x.har")], capture_output=True,
                               text=True, timeout=30)
    assert completed.returncode == 2 and "does not exist" in completed.stderr
    completed = subprocess.run(["horde", "record", "--headless"], capture_output=True, text=True, timeout=30)
    assert completed.returncode == 2 and "--browser" in completed.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        completed = subprocess.run(["horde", "record", "--port", str(taken.getsockname()[1]), "-o",
                                    str(tmp_path / "x.har"), "--ca-dir", str(tmp_path / "ca")],
                                   capture_output=True, text=True, timeout=30)
    assert completed.returncode == 3 and "cannot listen" in completed.stderr
    assert not (tmp_path / "x.har").exists()


needs_chromium = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed")


@needs_chromium
def test_browser_starts_chromium_through_the_proxy(tmp_path):
    server = Target(tls=True)
    try:
        url = server.url.replace("127.0.0.1", "localhost") + "/login"
        with Recorder(tmp_path / "browser.har", tmp_path / "ca", "--browser", url, "--headless",
                      "--chromium", CHROMIUM) as recorder:
            recorder.wait_for_line(f"GET {url} -> 200", timeout=60)
        recorded = [e["request"]["url"] for e in entries(tmp_path / "browser.har")]
        assert url in recorded
    finally:
        server.stop()


@needs_chromium
def test_chromium_through_the_recorder_keeps_uploads_byte_exact(django_login, tmp_path, horde):
    """A real browser's journey with a binary upload: the proxy keeps the bytes the browser's
    own HAR would lose, so the import needs no --files, and the replay uploads the same file."""
    pytest.importorskip("playwright.sync_api")
    import hashlib

    upload = tmp_path / "planer.bin"
    upload.write_bytes(os.urandom(4096))
    with Recorder(tmp_path / "django.har", tmp_path / "ca") as recorder:
        with browser_recording(None, proxy=recorder.proxy) as page:
            django_journey(page, django_login.url, "user0", "larch-beech-141", upload)
        recorder.wait_for_line("/logout/ -> 302")
    completed = import_har(tmp_path / "django.har", "-o", tmp_path / "django.py")
    assert completed.returncode == 0, completed.stderr
    assert (tmp_path / "django_files" / "planer.bin").read_bytes() == upload.read_bytes()
    before = django_login.stats()
    result = horde("run", tmp_path / "django.py", "-D", f"base_url={django_login.url}", "-D", "users=20",
                   "-D", "think_time=0")
    assert result.code == 0, result.stderr
    assert result.summary["global"]["ko"] == 0, result.summary["errors"]
    uploads = django_login.stats()["uploads"][len(before["uploads"]):]
    assert len(uploads) == 20 and {u["sha256"] for u in uploads} == {hashlib.sha256(upload.read_bytes()).hexdigest()}
    assert django_login.stats()["csrf_failures"] == 0
