"""Records the HAR files the import tests read as fixtures (tests/fixtures/recordings/), with
the project's own servers and recorder, as a user would:

- jsf.har: seed 000's JSF journey on the built-in target (log in, comment, upload a binary
  file), scripted through `horde record`;
- orders.har: the target's orders API (log in for a bearer token, list, read, cancel);
- django.har: the Django site's journey clicked through in Chromium (Playwright) proxied by
  `horde record`: CSRF login, a multipart upload, the AJAX note with X-CSRFToken, log out.

Run it after changing what the recorder writes, then regenerate the golden simulations:

    python3 scripts/record_fixtures.py
    HORDE_UPDATE_GOLDEN=1 python3 -m pytest tests/test_import.py -k golden
"""

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from conftest import EXAMPLES, DjangoLogin, Target  # noqa: E402
from recordings import (  # noqa: E402
    FIXTURE_UPLOAD,
    Recorder,
    browser_recording,
    django_journey,
    record_target_journeys,
)

FIXTURES = ROOT / "tests" / "fixtures" / "recordings"


def main():
    FIXTURES.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="horde-fixtures-"))
    target = Target()
    try:
        record_target_journeys(FIXTURES, target.url, scratch / "ca")
    finally:
        target.stop()
    site = DjangoLogin(scratch, EXAMPLES / "users.csv")
    try:
        upload = scratch / "planer.bin"
        upload.write_bytes(FIXTURE_UPLOAD)
        with Recorder(FIXTURES / "django.har", scratch / "ca") as recorder:
            with browser_recording(None, proxy=recorder.proxy) as page:
                django_journey(page, site.url, "user0", "larch-beech-141", upload)
            recorder.wait_for_line("/logout/ -> 302")
    finally:
        site.stop()
    for path in sorted(FIXTURES.glob("*.har")):
        print(f"{path.relative_to(ROOT)}: {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
