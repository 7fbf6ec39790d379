"""`horde import`: HAR files in, simulations out (reading, normalising, writing), and bad input.

Correlation has its own tests (test_import_correlation.py); here every case is about what the
importer keeps, drops and writes, checked on the plan the simulation makes, on a golden file of
the generated Python, and by replaying a browser recording against the built-in target.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from recordings import (
    CHROMIUM,
    b64,
    browser_recording,
    entry,
    har,
    import_har,
    load_plan,
    requests_of,
)

GOLDEN = Path(__file__).resolve().parent / "golden" / "import"


def valid_entries():
    return [entry("GET", "http://127.0.0.1:8080/", body="<title>Home</title>"),
            entry("GET", "http://127.0.0.1:8080/about", at=1.0, body="<title>About</title>")]


def bad_input_cases(tmp_path):
    whole = json.dumps({"log": {"version": "1.2", "creator": {"name": "t"}, "entries": valid_entries()}})
    no_url = valid_entries()
    del no_url[1]["request"]["url"]
    no_status = valid_entries()
    del no_status[0]["response"]["status"]
    bad_time = valid_entries()
    bad_time[1]["startedDateTime"] = "yesterday"
    bad_headers = valid_entries()
    bad_headers[1]["request"]["headers"] = {"Accept": "*/*"}
    preflights_only = [entry("OPTIONS", "http://127.0.0.1:8080/api", request_headers=[("Access-Control-Request-Method", "POST")])]

    def log(entries, version="1.2"):
        return json.dumps({"log": {"version": version, "creator": {"name": "t"}, "entries": entries}})

    return {
        "empty file": ("", "the file is empty"),
        "not JSON": ("GET / HTTP/1.1\r\n", "not JSON"),
        "not UTF-8": (b"\xff\xfe\x00{", "not UTF-8"),
        "an array": ("[]", "not a HAR file: the top level is an array"),
        "no log": ('{"entries": []}', "not a HAR file: no 'log' object"),
        "HAR 2.0": (log(valid_entries(), "2.0"), "log.version: HAR '2.0' is not HAR 1.2"),
        "no entries": ('{"log": {"version": "1.2", "creator": {"name": "t"}}}', "log.entries: missing"),
        "empty entries": (log([]), "log.entries: empty: nothing was recorded"),
        "no url": (log(no_url), "entries[1].request.url: missing"),
        "no status": (log(no_status), "entries[0].response.status: missing"),
        "bad time": (log(bad_time), "entries[1].startedDateTime: not an ISO 8601 time: 'yesterday'"),
        "headers not a list": (log(bad_headers), "entries[1].request.headers: not a list"),
        "truncated": (whole[:len(whole) * 2 // 3], "truncated: the file ends inside it"),
        "broken inside": (whole.replace('"GET"', 'GET', 1), "entries[0]: not JSON"),
        "only preflights": (log(preflights_only), "no request left to replay: all 1 entries were dropped (a CORS preflight"),
    }


@pytest.mark.parametrize("case", ["empty file", "not JSON", "not UTF-8", "an array", "no log", "HAR 2.0", "no entries",
                                  "empty entries", "no url", "no status", "bad time", "headers not a list", "truncated",
                                  "broken inside", "only preflights"])
def test_bad_input_exits_2_naming_the_entry_and_field_and_writes_nothing(tmp_path, case):
    content, expected = bad_input_cases(tmp_path)[case]
    path = tmp_path / "journey.har"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    completed = import_har(path, "-o", tmp_path / "journey.py")
    assert completed.returncode == 2, completed.stderr
    assert f"{path}: " in completed.stderr and expected in completed.stderr, completed.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["journey.har"]


def test_bad_flags_exit_2(tmp_path):
    path = har(tmp_path / "journey.har", valid_entries())
    for flags, expected in [(["--base-url", "ftp://x"], "--base-url ftp://x: not an http:// or https:// URL"),
                            (["--files", tmp_path / "nowhere"], "not a directory"),
                            (["--resources", "some"], "invalid value 'some'"),
                            (["-o", tmp_path / "journey.txt"], "name it *.py")]:
        completed = import_har(path, *flags)
        assert completed.returncode == 2 and expected in completed.stderr, (flags, completed.stderr)
    (tmp_path / "journey.py").write_text("# mine\n")
    completed = import_har(path, "-o", tmp_path / "journey.py")
    assert completed.returncode == 2 and "journey.py exists: pass --force" in completed.stderr
    assert (tmp_path / "journey.py").read_text() == "# mine\n"
    assert import_har(path, "-o", tmp_path / "journey.py", "--force").returncode == 0
    assert "scenario(" in (tmp_path / "journey.py").read_text()


def peak_memory_of_import(har_path, output):
    """The peak RSS (KiB) of `horde import`, in a fresh process whose only child it is."""
    script = ("import resource, subprocess, sys\n"
              "done = subprocess.run(['horde', 'import', sys.argv[1], '-o', sys.argv[2], '--force'], capture_output=True)\n"
              "assert done.returncode == 0, done.stderr\n"
              "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    completed = subprocess.run([sys.executable, "-c", script, str(har_path), str(output)], capture_output=True,
                               text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    return int(completed.stdout.strip())


def test_a_huge_recording_is_read_entry_by_entry_in_bounded_memory(tmp_path):
    image = b64(os.urandom(3 << 18))  # 1 MiB of base64 per image
    small = har(tmp_path / "small.har", [entry("GET", "http://127.0.0.1:8080/", body="<title>Home</title>")])
    # 160 images of 1 MiB: a 160 MiB file, written entry by entry.
    huge = tmp_path / "huge.har"
    with open(huge, "w") as out:
        out.write('{"log": {"version": "1.2", "creator": {"name": "t"}, "entries": [')
        out.write(json.dumps(entry("GET", "http://127.0.0.1:8080/", body="<title>Home</title>")))
        for i in range(160):
            out.write(",\n" + json.dumps(entry("GET", f"http://127.0.0.1:8080/img/{i}.png", at=0.01 * i, mime="image/png",
                                               body=image, encoding="base64", resource_type="image")))
        out.write("]}}")
    assert huge.stat().st_size > 160 << 20
    baseline = peak_memory_of_import(small, tmp_path / "small.py")
    peak = peak_memory_of_import(huge, tmp_path / "huge.py")
    # Reading the whole file at once would take well over 160 MiB (the text, then its JSON).
    assert peak - baseline < 48 * 1024, (baseline, peak)
    plan = load_plan(tmp_path / "huge.py")
    [home] = requests_of(plan)
    assert len(home["resources"]) == 160


def shop_recording(path):
    """A recording of every case the normalisation handles, out of order as browsers write."""
    browser = [("User-Agent", "Mozilla/5.0 (X11) Chrome/156"), ("Accept-Language", "en-US"),
               ("Accept-Encoding", "gzip, deflate, br, zstd"), ("sec-ch-ua", '"Chromium";v="156"'),
               ("Host", "shop.test"), ("Connection", "keep-alive")]
    upload = (b"--XyZ\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nQ3 report\r\n"
              b"--XyZ\r\nContent-Disposition: form-data; name=\"document\"; filename=\"report.bin\"\r\n"
              b"Content-Type: application/octet-stream\r\n\r\n" + bytes(range(256)) + b"\r\n--XyZ--\r\n")
    entries = [
        # The redirect's follow-up, written before the POST that caused it.
        entry("GET", "https://shop.test/account", at=2.05, body="<title>Account</title>", pageref="p2",
              resource_type="document", request_headers=browser + [("Cookie", "sid=1")]),
        entry("GET", "https://shop.test/", at=0.0, time_ms=50, pageref="p1", resource_type="document",
              body="<html><title>Shop  home</title><link rel=stylesheet href=/static/app.css></html>",
              request_headers=browser + [("Cookie", "theme=dark")]),
        entry("GET", "https://shop.test/static/app.css", at=0.06, mime="text/css", body="body{}", pageref="p1",
              resource_type="stylesheet", request_headers=browser),
        entry("GET", "https://www.google-analytics.com/g/collect?v=2", at=0.07, pageref="p1", resource_type="xhr",
              request_headers=browser),
        entry("OPTIONS", "https://api.shop.test/cart", at=2.9, request_headers=browser + [
            ("Access-Control-Request-Method", "POST"), ("Origin", "https://shop.test")]),
        entry("POST", "https://shop.test/login", 302, at=2.0, pageref="p1", resource_type="document",
              post=("application/x-www-form-urlencoded", "user=ann&note=a%20b%26c&empty="),
              response_headers=[("Location", "/account"), ("Set-Cookie", "sid=1; Path=/")],
              request_headers=browser + [("Origin", "https://shop.test"), ("Referer", "https://shop.test/"),
                                         ("Content-Type", "application/x-www-form-urlencoded"),
                                         ("Content-Length", "29")]),
        entry("POST", "https://api.shop.test/cart", 201, at=3.0, mime="application/json", body='{"ok": true}',
              post=("application/json", '{"sku": "A-1", "qty": 2, "gift": false, "note": "${not a template}"}'),
              resource_type="fetch", request_headers=browser + [("Origin", "https://shop.test"),
                                                                ("Content-Type", "application/json"),
                                                                ("X-Client", "web")]),
        # mitmproxy's way with binary bodies: the bytes as latin-1 text, bodySize their number.
        entry("POST", "https://shop.test/upload", 200, at=4.0, body="<title>Received</title>",
              post=("multipart/form-data; boundary=XyZ", upload.decode("latin-1")), body_size=len(upload),
              resource_type="document", request_headers=browser + [("Content-Type", "multipart/form-data; boundary=XyZ")]),
        entry("GET", "https://shop.test/favicon.ico", 0, at=4.5, request_headers=browser),
        entry("GET", "https://shop.test/api/items?page=2&sort=name", at=5.7, mime="application/json", body='{"items": []}',
              resource_type="xhr", request_headers=browser + [("Accept", "application/json")]),
    ]
    return har(path, entries, creator="tests", pages=[{"id": "p1", "title": "Shop home"}])


def test_normalisation_keeps_the_journey_and_drops_the_noise(tmp_path):
    recording = shop_recording(tmp_path / "shop.har")
    completed = import_har(recording, "-o", tmp_path / "shop.py")
    assert completed.returncode == 0, completed.stderr
    plan = load_plan(tmp_path / "shop.py")
    requests = requests_of(plan)
    # Sorted by start; analytics, the preflight, the cancelled request and the redirect's
    # follow-up are gone; the style sheet is the home page's resource.
    assert [(r["method"], r["url"]) for r in requests] == [
        ("GET", "/"), ("POST", "/login"), ("POST", "https://api.shop.test/cart"), ("POST", "/upload"),
        ("GET", "/api/items?page=2&sort=name")]
    assert [r["name"] for r in requests] == ["Shop home", "POST /login", "POST api.shop.test/cart", "POST /upload",
                                             "GET /api/items"]
    assert [r["url"] for r in requests[0]["resources"]] == ["/static/app.css"]
    # The login's redirect is followed by the engine: the check is on where the chain ended.
    assert requests[1]["checks"] == [{"source": {"type": "status"}, "validate": {"type": "is", "value": "200"}}]
    # Pauses as recorded, to the tenth of a second, not truncated to whole seconds.
    pauses = [s["duration_ms"] for s in plan["scenarios"][0]["steps"] if s["type"] == "pause"]
    assert pauses == [1900, 900, 1000, 1700]
    no_pauses = load_plan(tmp_path / "shop.py", think_time=0)["scenarios"][0]["steps"]
    assert {s["duration_ms"] for s in no_pauses if s["type"] == "pause"} == {0}
    # Headers every request sends go to the protocol; the jar's, the engine's and the
    # browser's own never appear.
    protocol = {h["name"]: h["value"] for h in plan["protocol"]["headers"]}
    assert protocol == {"User-Agent": "Mozilla/5.0 (X11) Chrome/156", "Accept-Language": "en-US"}
    everywhere = [h["name"].lower() for r in requests for h in r.get("headers", [])]
    for name in ("cookie", "host", "content-length", "accept-encoding", "sec-ch-ua", "connection", "content-type"):
        assert name not in everywhere
    assert {h["name"]: h["value"] for h in requests[2]["headers"]} == {"Origin": "https://shop.test",
                                                                        "X-Client": "web"}
    # Bodies: form fields decoded (what was typed goes to the feeder), JSON as JSON (recorded
    # text that looks like a template stays text), multipart split into a text part and the
    # file, written beside the simulation and named by the feeder (add rows, upload other files).
    assert (tmp_path / "shop_inputs.csv").read_text().splitlines() == ["user,document_path", "ann,shop_files/report.bin"]
    assert requests[1]["body"] == {"type": "form", "params": [{"name": "user", "value": "${user}"},
                                                              {"name": "note", "value": "a b&c"},
                                                              {"name": "empty", "value": ""}]}
    assert requests[2]["body"] == {"type": "json", "value": {"sku": "A-1", "qty": 2, "gift": False,
                                                             "note": "$${not a template}"}}
    [title, document] = requests[3]["body"]["parts"]
    assert title == {"type": "string", "name": "title", "value": "Q3 report"}
    assert document["name"] == "document" and document["path"] == "${document_path}" and "file_name" not in document
    assert document["content_type"] == "application/octet-stream"
    assert (tmp_path / "shop_files" / "report.bin").read_bytes() == bytes(range(256))
    # The most used origin is the base URL; the other one is named.
    assert plan["protocol"]["base_url"] == "https://shop.test"
    source = (tmp_path / "shop.py").read_text()
    assert 'api_shop_test_url = param("api_shop_test_url", "https://api.shop.test")' in source
    # One user by default; the injection comes from parameters.
    assert plan["scenarios"][0]["injection"] == [{"type": "at_once_users", "users": 1}]
    ramped = load_plan(tmp_path / "shop.py", users=20, ramp=5)["scenarios"][0]["injection"]
    assert ramped == [{"type": "ramp_users", "users": 20, "duration_ms": 5000}]
    looping = load_plan(tmp_path / "shop.py", users=3, duration=60)["scenarios"][0]["injection"]
    assert looping == [{"type": "constant_concurrent_users", "users": 3, "duration_ms": 60000}]


def test_generated_simulation_matches_the_golden_file(tmp_path):
    recording = shop_recording(tmp_path / "shop.har")
    assert import_har(recording, "-o", tmp_path / "shop.py").returncode == 0
    source = (tmp_path / "shop.py").read_text()
    golden = GOLDEN / "shop.py"
    if os.environ.get("HORDE_UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(source)
    assert source == golden.read_text()


FIXTURES = Path(__file__).resolve().parent / "fixtures" / "recordings"


@pytest.mark.parametrize("name", ["jsf", "orders", "django"])
def test_recordings_of_the_test_servers_match_their_golden_simulations(tmp_path, name):
    """The fixtures scripts/record_fixtures.py recorded through `horde record`: the JSF journey,
    the orders API, and Chromium on the Django site. Their replays are in
    test_import_replay.py; here, the Python they give, correlations and report included."""
    completed = import_har(FIXTURES / f"{name}.har", "-o", tmp_path / f"{name}.py")
    assert completed.returncode == 0, completed.stderr
    for produced in (f"{name}.py", f"{name}_import.md"):
        golden = GOLDEN / produced
        text = (tmp_path / produced).read_text()
        if os.environ.get("HORDE_UPDATE_GOLDEN"):
            golden.write_text(text)
        assert text == golden.read_text(), produced


def test_resources_can_be_inferred_or_dropped(tmp_path):
    recording = shop_recording(tmp_path / "shop.har")
    assert import_har(recording, "-o", tmp_path / "inferred.py", "--resources", "infer").returncode == 0
    inferred = load_plan(tmp_path / "inferred.py")
    assert inferred["protocol"]["infer_html_resources"] is True
    assert "resources" not in requests_of(inferred)[0]
    assert import_har(recording, "-o", tmp_path / "dropped.py", "--resources", "drop").returncode == 0
    dropped = load_plan(tmp_path / "dropped.py")
    assert "resources" not in requests_of(dropped)[0] and "infer_html_resources" not in dropped["protocol"]


def test_base_url_rebases_the_recording_and_origin_and_referer_follow(tmp_path):
    recording = shop_recording(tmp_path / "shop.har")
    assert import_har(recording, "-o", tmp_path / "shop.py", "--base-url", "http://127.0.0.1:9000").returncode == 0
    login = requests_of(load_plan(tmp_path / "shop.py"))[1]
    assert plan_base(tmp_path / "shop.py") == "http://127.0.0.1:9000" and login["url"] == "/login"
    headers = {h["name"]: h["value"] for h in login["headers"]}
    assert headers == {"Origin": "http://127.0.0.1:9000", "Referer": "http://127.0.0.1:9000/"}
    # And again at run time.
    login = requests_of(load_plan(tmp_path / "shop.py", base_url="https://staging.test"))[1]
    assert {h["name"]: h["value"] for h in login["headers"]}["Origin"] == "https://staging.test"


def plan_base(simulation):
    return load_plan(simulation)["protocol"]["base_url"]


needs_chromium = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed")


@needs_chromium
def test_a_browser_recording_replays_with_20_users_against_the_target(target, tmp_path, horde):
    pytest.importorskip("playwright.sync_api")
    recording = tmp_path / "target.har"
    with browser_recording(recording) as page:
        page.goto(target.url + "/")
        page.click("#login")
        page.wait_for_url("**/login")
        page.evaluate("""async () => {
            await (await fetch('/api/items')).json();
            await (await fetch('/api/echo', {method: 'POST', headers: {'Content-Type': 'application/json'},
                                             body: JSON.stringify({order: 'oak plank', count: 2})})).json();
        }""")
    before = target.stats()
    completed = import_har(recording, "-o", tmp_path / "target.py")
    assert completed.returncode == 0, completed.stderr
    result = horde("run", tmp_path / "target.py", "-D", f"base_url={target.url}", "-D", "users=20",
                   "-D", "think_time=0")
    assert result.code == 0, result.stderr
    assert result.summary["global"]["ko"] == 0, result.summary["errors"]
    served = target.stats()["by_route"]
    for route in ("GET /", "GET /login", "GET /api/items", "POST /api/echo"):
        assert served[route] - before["by_route"].get(route, 0) == 20, (route, served)
    assert target.stats()["json_documents"] - before["json_documents"] == 20


def test_the_report_is_printed_and_written_beside_the_simulation(tmp_path):
    recording = shop_recording(tmp_path / "shop.har")
    completed = import_har(recording, "-o", tmp_path / "shop.py")
    report = (tmp_path / "shop_import.md").read_text()
    assert report in completed.stdout
    assert "Recorded by tests 1: 10 entries; 5 requests to replay (1 redirects the engine follows, 1 resources" in report
    assert "| user | `ann` | typed into form field user |" in report
    for reason in ("browser noise or analytics", "a CORS preflight (horde is no browser)", "cancelled (no response)"):
        assert reason in report
    assert "the cookie theme was set by JavaScript, not by a response: it is added as recorded (`dark`)" in report


def test_the_report_warns_of_what_the_recording_could_not_tell(tmp_path):
    # Chrome's sanitized export: no cookies, no Authorization; and a response without its body.
    entries = [entry("GET", "http://127.0.0.1:8080/login", body="<title>Log in</title>"),
               entry("POST", "http://127.0.0.1:8080/login", 200, at=1, post=("application/x-www-form-urlencoded",
                                                                             "user=ann&form_key=f00dfeed1234abcd")),
               entry("GET", "http://127.0.0.1:8080/api/me", at=2, mime="application/json",
                     request_headers=[("X-Session-Token", "9b8a7c6d5e4f3a2b1c0d")])]
    entries[1]["response"]["content"] = {"size": 512, "mimeType": "text/html", "comment": "not included"}
    completed = import_har(har(tmp_path / "sanitized.har", entries), "-o", tmp_path / "sanitized.py")
    assert completed.returncode == 0, completed.stderr
    report = (tmp_path / "sanitized_import.md").read_text()
    assert "the recording holds no cookie at all: if the site has sessions, this is a sanitized export" in report
    assert "1 responses have no body in the recording (entries 1)" in report
    assert "request 2: form field form_key `f00dfeed1234abcd` looks made by the server but no earlier response" in report
    assert "request 3: header X-Session-Token" in report


def test_what_each_recorder_writes_is_read_the_same(tmp_path):
    """Charles's form as params alone, Chrome's Set-Cookie lines joined by newlines and its
    multipart text with the file's bytes left out, Firefox's missing body with a comment."""
    chrome_multipart = ("------WebKitFormBoundaryQ\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nQ3\r\n"
                        "------WebKitFormBoundaryQ\r\nContent-Disposition: form-data; name=\"document\"; "
                        "filename=\"report.pdf\"\r\nContent-Type: application/pdf\r\n\r\n\r\n"
                        "------WebKitFormBoundaryQ--\r\n")
    charles = entry("POST", "http://127.0.0.1:8080/login", 200, at=1, body="<title>in</title>")
    charles["request"]["postData"] = {"mimeType": "application/x-www-form-urlencoded",
                                      "params": [{"name": "user", "value": "ann"}, {"name": "remember", "value": "on"}]}
    chrome = entry("POST", "http://127.0.0.1:8080/upload", 200, at=2, body="<title>up</title>", body_size=2048,
                   post=("multipart/form-data; boundary=----WebKitFormBoundaryQ", chrome_multipart),
                   response_headers=[("Set-Cookie", "a=1; Path=/\nb=2; Path=/")])
    firefox = entry("GET", "http://127.0.0.1:8080/after", at=3, request_headers=[("Cookie", "a=1; b=2")])
    firefox["response"]["content"] = {"size": 90, "mimeType": "text/html", "comment": "Response bodies are not included."}
    recording = har(tmp_path / "mixed.har", [entry("GET", "http://127.0.0.1:8080/", body="<title>Home</title>"),
                                             charles, chrome, firefox])
    completed = import_har(recording, "-o", tmp_path / "mixed.py")
    assert completed.returncode == 0, completed.stderr
    assert "the recording lacks the bytes of the file 'report.pdf' of part 'document'" in completed.stdout
    plan = load_plan(tmp_path / "mixed.py")
    login, upload, after = requests_of(plan)[1:]
    assert login["body"]["params"] == [{"name": "user", "value": "${user}"}, {"name": "remember", "value": "on"}]
    [title, document] = upload["body"]["parts"]
    assert title["value"] == "Q3" and document["path"] == "mixed_files/report.pdf"
    assert not (tmp_path / "mixed_files" / "report.pdf").exists()  # never an empty file in its place
    # Both cookies of Chrome's joined Set-Cookie are in the jar: none is added by hand.
    assert not [s for s in plan["scenarios"][0]["steps"] if s["type"] == "add_cookie"]
    assert "1 responses have no body in the recording (entries 3)" in completed.stdout
    # With the file at hand, matched by its name.
    (tmp_path / "uploads").mkdir()
    (tmp_path / "uploads" / "report.pdf").write_bytes(b"%PDF-1.7 fake")
    assert import_har(recording, "-o", tmp_path / "mixed.py", "--force", "--files", tmp_path / "uploads").returncode == 0
    assert (tmp_path / "mixed_files" / "report.pdf").read_bytes() == b"%PDF-1.7 fake"
