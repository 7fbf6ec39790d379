"""Recorded journeys replayed against the real servers they were recorded on, with 20 users: each
imported simulation runs with 0 KO, and the servers' own counters show 20 logins, 20 uploads
whose SHA-256 is the file's, no CSRF or ViewState failure and no token shared. The control: the
same recording imported with --no-correlate fails against the same server, which shows that
every recording needs correlation to replay."""

import csv
import hashlib
import os

import pytest

from conftest import EXAMPLES, DjangoLogin
from recordings import (
    CHROMIUM,
    FIXTURE_UPLOAD,
    Recorder,
    browser_recording,
    confirm_journey,
    django_journey,
    import_har,
    proxied_client,
    record_target_journeys,
)

needs_chromium = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed")

USERS = 20


def accounts(count):
    with open(EXAMPLES / "users.csv", newline="") as handle:
        return list(csv.DictReader(handle))[:count]


def write_feeder(path, columns, rows):
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        writer.writerows(rows)


@pytest.fixture(scope="module")
def django_site(tmp_path_factory):
    server = DjangoLogin(tmp_path_factory.mktemp("django-site"), EXAMPLES / "users.csv")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def django_browser_recording(django_site, tmp_path_factory):
    """The journey clicked through in Chromium (Playwright writes the HAR), with a binary file
    to upload: Chromium leaves its bytes out of the recording."""
    pytest.importorskip("playwright.sync_api")
    directory = tmp_path_factory.mktemp("django-recording")
    (directory / "files").mkdir()
    upload = directory / "files" / "planer.bin"
    upload.write_bytes(bytes(range(256)) * 8)
    recording = directory / "django.har"
    user = accounts(1)[0]
    with browser_recording(recording) as page:
        django_journey(page, django_site.url, user["username"], user["password"], upload)
    return recording, upload


@needs_chromium
def test_django_browser_recording_replays_with_20_users(django_site, django_browser_recording, tmp_path, horde):
    recording, upload = django_browser_recording
    completed = import_har(recording, "-o", tmp_path / "django.py", "--files", upload.parent)
    assert completed.returncode == 0, completed.stderr
    assert "rebuilt from the form" in completed.stdout and "taken from" in completed.stdout
    # N users log in as N accounts and upload N files of their own: rows added to the feeder
    # the import wrote (its file column names the recorded upload).
    assert (tmp_path / "django_inputs.csv").read_text().splitlines()[0] == "username,password,document_path"
    (tmp_path / "uploads").mkdir()
    files = {}
    for i, account in enumerate(accounts(USERS)):
        files[account["username"]] = upload.read_bytes() + f"user {i}".encode()
        (tmp_path / "uploads" / f"{account['username']}.bin").write_bytes(files[account["username"]])
    rows = [(a["username"], a["password"], f"uploads/{a['username']}.bin") for a in accounts(USERS)]
    write_feeder(tmp_path / "django_inputs.csv", ["username", "password", "document_path"], rows)
    before = django_site.stats()
    result = horde("run", tmp_path / "django.py", "-D", f"base_url={django_site.url}", "-D", f"users={USERS}",
                   "-D", "think_time=0")
    assert result.code == 0, result.stderr
    assert result.summary["global"]["ko"] == 0, result.summary["errors"]
    after = django_site.stats()
    logins = {name: count - before["logins"].get(name, 0) for name, count in after["logins"].items()}
    assert {name: count for name, count in logins.items() if count} == {name: 1 for name, _, _ in rows}
    uploads = after["uploads"][len(before["uploads"]):]
    assert len(uploads) == USERS
    # Each user's own file, byte for byte, under its own name.
    assert {(u["user"], u["name"], u["sha256"]) for u in uploads} == {
        (name, f"{name}.bin", hashlib.sha256(data).hexdigest()) for name, data in files.items()}
    assert after["csrf_failures"] == before["csrf_failures"]
    assert sum(after["notes_read"].values()) - sum(before["notes_read"].values()) == USERS


@needs_chromium
def test_django_recording_without_correlation_fails(django_site, django_browser_recording, tmp_path, horde):
    recording, upload = django_browser_recording
    completed = import_har(recording, "-o", tmp_path / "django.py", "--files", upload.parent, "--no-correlate")
    assert completed.returncode == 0, completed.stderr
    before = django_site.stats()
    result = horde("run", tmp_path / "django.py", "-D", f"base_url={django_site.url}", "-D", f"users={USERS}",
                   "-D", "think_time=0")
    assert result.code == 0, result.stderr
    assert result.summary["global"]["ko"] > 0
    after = django_site.stats()
    assert after["csrf_failures"] - before["csrf_failures"] >= USERS
    assert len(after["uploads"]) == len(before["uploads"])


UPLOAD = FIXTURE_UPLOAD


@pytest.fixture(scope="module")
def target_recordings(tmp_path_factory):
    """The JSF journey, the orders API and the OAuth sign-in on the built-in target, scripted through
    `horde record`."""
    from conftest import Target

    directory = tmp_path_factory.mktemp("target-recordings")
    server = Target()
    try:
        return record_target_journeys(directory, server.url, directory / "ca")
    finally:
        server.stop()


def run_on_target(target, horde, simulation, *params):
    return horde("run", simulation, "-D", f"base_url={target.url}", "-D", f"users={USERS}", "-D", "think_time=0",
                 *params)


def test_jsf_recording_replays_with_20_users(target, target_recordings, tmp_path, horde):
    completed = import_har(target_recordings[0], "-o", tmp_path / "jsf.py")
    assert completed.returncode == 0, completed.stderr
    # The recorder kept the upload byte for byte: it is written beside the simulation.
    assert (tmp_path / "jsf_files" / "planer.bin").read_bytes() == UPLOAD
    result = run_on_target(target, horde, tmp_path / "jsf.py")
    assert result.code == 0, result.stderr
    assert result.summary["global"]["ko"] == 0, result.summary["errors"]
    stats = target.stats()
    assert stats["logins"] == USERS and stats["uploads"] == USERS and stats["sessions"] == USERS
    assert stats["upload_bytes"] == USERS * len(UPLOAD)
    assert stats["view_state_rejections"] == 0


def test_jsf_recording_without_correlation_fails(target, target_recordings, tmp_path, horde):
    assert import_har(target_recordings[0], "-o", tmp_path / "jsf.py", "--no-correlate").returncode == 0
    result = run_on_target(target, horde, tmp_path / "jsf.py")
    assert result.code == 0, result.stderr
    assert result.summary["global"]["ko"] > 0
    stats = target.stats()
    assert stats["view_state_rejections"] >= USERS and stats["uploads"] == 0


def test_orders_recording_replays_with_20_users_as_20_buyers(target, target_recordings, tmp_path, horde):
    completed = import_har(target_recordings[1], "-o", tmp_path / "orders.py")
    assert completed.returncode == 0, completed.stderr
    # Each buyer has orders of its own (their ids drawn from the name): the ids in the URLs
    # must come from the list each user gets.
    write_feeder(tmp_path / "orders_inputs.csv", ["user"], [(f"buyer-{i}",) for i in range(USERS)])
    result = run_on_target(target, horde, tmp_path / "orders.py")
    assert result.code == 0, result.stderr
    assert result.summary["global"]["ko"] == 0, result.summary["errors"]
    stats = target.stats()
    # A shared token would read another login's order (404) or cancel one twice (409): none.
    assert stats["api_logins"] == USERS and stats["orders_listed"] == USERS
    assert stats["orders_read"] == USERS and stats["orders_cancelled"] == USERS
    assert stats["unauthorized"] == 0


def test_orders_recording_without_correlation_fails(target, target_recordings, tmp_path, horde):
    assert import_har(target_recordings[1], "-o", tmp_path / "orders.py", "--no-correlate").returncode == 0
    result = run_on_target(target, horde, tmp_path / "orders.py")
    assert result.code == 0, result.stderr
    assert result.summary["global"]["ko"] > 0
    assert target.stats()["unauthorized"] >= USERS


def test_oauth_recording_replays_with_20_users_each_with_its_own_code(target, target_recordings, tmp_path, horde):
    completed = import_har(target_recordings[2], "-o", tmp_path / "oauth.py")
    assert completed.returncode == 0, completed.stderr
    # The code is read from the authorization's redirect, which the replay does not follow.
    source = (tmp_path / "oauth.py").read_text()
    assert ".disable_follow_redirect()" in source and 'header_regex("Location"' in source
    assert "code_verifier.pkce_challenge()" in source
    before = target.stats()
    result = run_on_target(target, horde, tmp_path / "oauth.py")
    assert result.code == 0, result.stderr
    assert result.summary["global"]["ko"] == 0, result.summary["errors"]
    after = target.stats()
    # Each code is good once: 20 exchanged means 20 users each read its own.
    assert after["oauth_codes_given"] - before["oauth_codes_given"] == USERS
    assert after["oauth_tokens_given"] - before["oauth_tokens_given"] == USERS
    assert after["oauth_invalid_grants"] == before["oauth_invalid_grants"]
    # PKCE: every user made a verifier of its own, and the server verified each one.
    assert after["oauth_pkce_verified"] - before["oauth_pkce_verified"] == USERS
    assert after["oauth_pkce_challenges_reused"] == before["oauth_pkce_challenges_reused"]
    assert after["orders_listed"] - before["orders_listed"] == USERS and after["unauthorized"] == before["unauthorized"]


def test_a_code_from_the_middle_of_a_redirect_chain_replays_with_20_users(target, target_recordings, tmp_path, horde):
    # Sign-in link -> authorization -> callback: the code is in the second redirect's Location.
    completed = import_har(target_recordings[3], "-o", tmp_path / "sso.py")
    assert completed.returncode == 0, completed.stderr
    source = (tmp_path / "sso.py").read_text()
    assert source.count(".disable_follow_redirect()") == 2 and 'header_regex("Location"' in source
    before = target.stats()
    result = run_on_target(target, horde, tmp_path / "sso.py")
    assert result.code == 0, result.stderr
    assert result.summary["global"]["ko"] == 0, result.summary["errors"]
    after = target.stats()
    routes = lambda stats, route: stats["by_route"].get(route, 0)  # noqa: E731
    assert routes(after, "GET /oauth/login") - routes(before, "GET /oauth/login") == USERS
    assert after["oauth_codes_given"] - before["oauth_codes_given"] == USERS
    assert after["oauth_tokens_given"] - before["oauth_tokens_given"] == USERS
    assert after["oauth_invalid_grants"] == before["oauth_invalid_grants"]
    assert after["oauth_pkce_verified"] - before["oauth_pkce_verified"] == USERS
    assert after["oauth_pkce_challenges_reused"] == before["oauth_pkce_challenges_reused"]
    assert after["orders_listed"] - before["orders_listed"] == USERS


def test_oauth_recording_without_correlation_fails(target, target_recordings, tmp_path, horde):
    assert import_har(target_recordings[2], "-o", tmp_path / "oauth.py", "--no-correlate").returncode == 0
    before = target.stats()
    result = run_on_target(target, horde, tmp_path / "oauth.py")
    assert result.code == 0, result.stderr
    assert result.summary["global"]["ko"] > 0
    # The recorded code was used when recording: every replay of it is refused. And the one
    # recorded PKCE challenge is sent by every user: the server has seen it before from all
    # of them but the first (the recording may have been made on another server).
    after = target.stats()
    assert after["oauth_invalid_grants"] - before["oauth_invalid_grants"] == USERS
    assert after["oauth_pkce_challenges_reused"] - before["oauth_pkce_challenges_reused"] in (USERS - 1, USERS)


@pytest.fixture(scope="module")
def confirm_recordings(django_site, tmp_path_factory):
    """Two recordings of the confirmation form through `horde record`: each visit gets another
    challenge word."""
    directory = tmp_path_factory.mktemp("confirm-recordings")
    paths = []
    for name in ("first.har", "second.har"):
        with Recorder(directory / name, directory / "ca") as recorder:
            confirm_journey(proxied_client(recorder), django_site.url)
        paths.append(directory / name)
    return paths


def challenge_sent(simulation):
    from recordings import load_plan, requests_of

    confirm = requests_of(load_plan(simulation))[1]
    return {p["name"]: p["value"] for p in confirm["body"]["params"]}["challenge"]


def test_validate_replays_and_correlates_what_matching_could_not_see(django_site, confirm_recordings, tmp_path, horde):
    first, _ = confirm_recordings
    # A word is no token to generic matching: imported alone, the recorded word is sent again,
    # and the site refuses it.
    assert import_har(first, "-o", tmp_path / "alone.py").returncode == 0
    assert not challenge_sent(tmp_path / "alone.py").startswith("${")
    result = horde("run", tmp_path / "alone.py", "-D", f"base_url={django_site.url}", "-D", "think_time=0")
    assert result.summary["global"]["ko"] == 1
    # The replay shows the word changes: correlated, and the second replay matches the recording.
    completed = import_har(first, "-o", tmp_path / "confirm.py", "--validate", django_site.url)
    assert completed.returncode == 0, completed.stderr
    assert "replay 1 against" in completed.stdout and "1 of 2 statuses as recorded" in completed.stdout
    assert "replay 2 against" in completed.stdout and "2 of 2 statuses as recorded" in completed.stdout
    assert challenge_sent(tmp_path / "confirm.py") == "${challenge}"
    assert "horde_observe" not in (tmp_path / "confirm.py").read_text()
    before = django_site.stats()["confirmations"]
    result = horde("run", tmp_path / "confirm.py", "-D", f"base_url={django_site.url}", "-D", f"users={USERS}",
                   "-D", "think_time=0")
    assert result.summary["global"]["ko"] == 0, result.summary["errors"]
    assert django_site.stats()["confirmations"] - before == USERS


def test_a_second_recording_marks_what_differs_as_dynamic(confirm_recordings, tmp_path):
    first, second = confirm_recordings
    completed = import_har(first, "-o", tmp_path / "confirm.py", "--second", second)
    assert completed.returncode == 0, completed.stderr
    assert challenge_sent(tmp_path / "confirm.py") == "${challenge}"


def test_validate_says_which_requests_still_differ_and_why(target, target_recordings, tmp_path):
    completed = import_har(target_recordings[1], "-o", tmp_path / "orders.py", "--no-correlate",
                           "--validate", target.url)
    assert completed.returncode == 0, completed.stderr
    assert "1 of 4 statuses as recorded" in completed.stdout
    assert "request 2. GET /api/orders answered 401, recorded 200: the replay answered:" in completed.stdout
    assert "unauthorized" in completed.stdout
