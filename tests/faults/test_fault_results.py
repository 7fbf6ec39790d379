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


def test_results_that_stop_fitting_mid_run_are_said_at_once_and_the_summary_is_still_printed(misbehaving, tmp_path):
    # Many rows make summary.json outgrow a 16 KB file-size limit after the first second.
    sim = tmp_path / "rows.py"
    requests = ", ".join(f'http("row {i}").get("/ok")' for i in range(60))
    sim.write_text(
        "from horde import at_once_users, http, scenario, setup\n"
        f"setup(scenario('rows').exec({requests}).inject(at_once_users(2)),\n"
        f"      protocol=http.base_url('{misbehaving.base}'), name='rows')\n"
    )
    results = tmp_path / "results"
    completed = subprocess.run(
        ["prlimit", "--fsize=16384", "horde", "run", str(sim), "--results", str(results)],
        capture_output=True, text=True, timeout=60,
    )
    assert completed.returncode == RUN_FAILED, completed.stderr
    # Said when it happened, and again at the end; the console summary is on stdout anyway.
    assert "the run goes on" in completed.stderr
    assert "Global Information" in completed.stdout and "row 59" in completed.stdout
    assert "request count                                      120" in completed.stdout
    assert misbehaving.heads("/ok") == 120
    assert not list(results.glob("*/.summary.json.tmp"))
