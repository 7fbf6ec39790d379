"""Results that cannot be written are found before the load: with a file-size limit too small
for summary.json (as a full disk), horde exits 3 naming the file, sends nothing, and leaves no
temporary file behind."""

import subprocess

from fault_fixtures import misbehaving  # noqa: F401 (fixture)

RUN_FAILED = 3


def test_a_summary_that_cannot_be_written_stops_horde_before_the_run(misbehaving, tmp_path):
    results = tmp_path / "results"
    # RLIMIT_FSIZE: writes past 1 KB fail (EFBIG) as on a full disk; Python ignores SIGXFSZ.
    completed = subprocess.run(
        ["prlimit", "--fsize=1024", "horde", "http", misbehaving.url("/ok"), "-c", "1", "-n", "100", "-q",
         "--results", str(results)],
        capture_output=True, text=True, timeout=60,
    )
    assert completed.returncode == RUN_FAILED, completed.stderr
    assert "summary.json" in completed.stderr
    # The OS's reason once, not twice.
    assert completed.stderr.count("(os error") == 1, completed.stderr
    assert misbehaving.heads("/ok") == 0
    assert not list(results.glob("*/.summary.json.tmp"))
