"""Execution segments without any cluster (issue 26, T0): one plan run as one process, and as
the three processes of the sequence 0,1/3,2/3,1 one after the other, against the same nginx.
The server's counts and every share's users, arrivals, budget and feeder rows must add up to
the unsegmented run's exactly; nginx logs every request's URI, so rows and counter values are
checked on the server's side too."""

import json
from collections import Counter

import pytest
from conftest import Nginx

THIRDS = ["0:1/3", "1/3:2/3", "2/3:1"]
SEQUENCE = "0,1/3,2/3,1"
ROWS = 60


def log_uris(directory):
    def configure(conf):
        return conf.replace(
            "  access_log off;",
            f"  log_format uris '$request_uri';\n  access_log {directory}/uris.log uris;",
        )

    return configure


@pytest.fixture(scope="module")
def logging_nginx(tmp_path_factory):
    """nginx writing each request's URI to ``uris.log``, one a line."""
    directory = tmp_path_factory.mktemp("nginx-segments")
    server = Nginx(directory, configure=log_uris(directory))
    server.log = directory / "uris.log"
    yield server
    server.stop()


class ServerWindow:
    """What nginx saw while a block ran: its request count and the URIs it logged."""

    def __init__(self, nginx):
        self.nginx = nginx

    def __enter__(self):
        self.count_before = self.nginx.requests_served()
        self.log_before = self.nginx.log.read_text().count("\n") if self.nginx.log.exists() else 0
        return self

    def __exit__(self, *exc):
        self.requests = self.nginx.requests_served() - self.count_before
        lines = self.nginx.log.read_text().splitlines()[self.log_before:]
        self.uris = [u for u in lines if not u.startswith("/nginx_status")]


def plan_file(tmp_path, nginx, *, segment=None, seed=7):
    """A plan of both models: an open scenario (a burst, then Poisson arrivals) whose users
    take a queue row and a counter value each, then a closed ramp whose users loop until the
    request budget is spent (after the open one, so that the budget never cuts it)."""
    rows = tmp_path / "rows.csv"
    rows.write_text("id\n" + "".join(f"{i}\n" for i in range(ROWS)))
    options = {"max_requests": 400, "workers": 2}
    if seed is not None:
        options["seed"] = seed
    if segment:
        options["execution_segment"] = {"segment": segment, "sequence": SEQUENCE}
    plan = {
        "version": 1,
        "protocol": {"base_url": nginx.url},
        "feeders": [{"name": "rows", "source": {"type": "csv", "path": str(rows)}}],
        "scenarios": [
            {
                "name": "open",
                "steps": [
                    {"type": "feed", "feeder": "rows"},
                    {"type": "request", "name": "row", "method": "GET",
                     "url": "/row?id=${id}&n=${__counter(n)}"},
                ],
                "injection": [
                    {"type": "at_once_users", "users": 7},
                    {"type": "constant_users_per_sec", "rate": 40, "duration_ms": 1000, "randomized": True},
                ],
            },
            {
                "name": "closed",
                "after": "open",
                "steps": [{"type": "request", "name": "loop", "method": "GET", "url": "/closed"}],
                "injection": [
                    {"type": "ramp_concurrent_users", "from": 0, "to": 6, "duration_ms": 300},
                    {"type": "constant_concurrent_users", "users": 6, "duration_ms": 20000},
                ],
            },
        ],
        "options": options,
    }
    path = tmp_path / f"plan-{(segment or 'whole').replace('/', '_').replace(':', '-')}-{seed}.json"
    path.write_text(json.dumps(plan))
    return path


def run_plan(horde, path, *flags):
    result = horde("run", path, "-q", *flags)
    assert result.code == 0, result.stderr
    return result.summary


def count(summary, name):
    rows = [r for r in summary["requests"] if r["name"] == name]
    return rows[0]["count"] if rows else 0


def rows_and_counters(uris):
    rows = [u.split("id=")[1].split("&")[0] for u in uris if u.startswith("/row?")]
    counters = [u.split("n=")[1] for u in uris if u.startswith("/row?")]
    return rows, counters


def test_three_segments_add_up_to_the_unsegmented_run(horde, tmp_path, logging_nginx):
    with ServerWindow(logging_nginx) as whole_window:
        whole = run_plan(horde, plan_file(tmp_path, logging_nginx))
    shares = []
    windows = []
    for segment in THIRDS:
        with ServerWindow(logging_nginx) as window:
            shares.append(run_plan(horde, plan_file(tmp_path, logging_nginx, segment=segment)))
        windows.append(window)
        # Each share says which it was.
        assert shares[-1]["plan"]["options"]["execution_segment"]["segment"] == segment

    # The unsegmented run: the budget exactly, every arrival a user.
    assert whole_window.requests == 400
    assert count(whole, "row") + count(whole, "loop") == 400
    assert whole["errors"] == [] or all(e["kind"] != "feeder_exhausted" for e in whole["errors"])

    # Together the shares sent exactly as much, and the server saw exactly that.
    assert sum(w.requests for w in windows) == whole_window.requests == 400
    for name in ("row", "loop"):
        per_share = [count(s, name) for s in shares]
        assert sum(per_share) == count(whole, name), (name, per_share)
    # The open scenario's arrivals: the same users, split, none twice, none lost.
    arrivals = [count(s, "row") for s in shares]
    assert sum(arrivals) == count(whole, "row") > 7
    assert all(a > 0 for a in arrivals), arrivals

    # Feeder rows and counter values: each share's distinct from the others', as many as the
    # unsegmented run used (which rows: each share's first ones of its stripe, so with gaps
    # between the shares where the file is not read to its end, as k6's iterationInTest).
    whole_rows, whole_counters = rows_and_counters(whole_window.uris)
    assert sorted(whole_rows, key=int) == [str(i) for i in range(len(whole_rows))]
    share_rows = [rows_and_counters(w.uris)[0] for w in windows]
    share_counters = [rows_and_counters(w.uris)[1] for w in windows]
    union_rows = [r for rows in share_rows for r in rows]
    assert len(union_rows) == len(whole_rows) == count(whole, "row")
    assert max(Counter(union_rows).values()) == 1, "a row went to two users"
    assert all(len(rows) > 0 for rows in share_rows)
    union_counters = [c for counters in share_counters for c in counters]
    assert len(set(union_counters)) == len(union_counters), "a counter value was taken twice"


def test_an_unseeded_sequence_draws_the_same_schedule_in_every_process(horde, tmp_path, logging_nginx):
    # Without options.seed, every share derives the same seed from the plan: the Poisson
    # arrivals agree, so no share makes an arrival another also makes, and the rows they
    # take are distinct.
    totals = []
    rows = []
    for segment in THIRDS:
        with ServerWindow(logging_nginx) as window:
            summary = run_plan(horde, plan_file(tmp_path, logging_nginx, segment=segment, seed=None))
        totals.append(count(summary, "row"))
        rows.extend(rows_and_counters(window.uris)[0])
    again = []
    for segment in THIRDS:
        again.append(count(run_plan(horde, plan_file(tmp_path, logging_nginx, segment=segment, seed=None)), "row"))
    assert totals == again
    assert len(set(rows)) == len(rows)


def test_http_n_splits_by_users_and_adds_up(horde, logging_nginx):
    # -c 5 over thirds: users 2, 2 and 1, and the budget split as they are.
    results = []
    for segment in THIRDS:
        with ServerWindow(logging_nginx) as window:
            result = horde("http", logging_nginx.url + "/n", "-n", "1000", "-c", "5", "-q",
                           "--execution-segment", segment, "--execution-segment-sequence", SEQUENCE)
            assert result.code == 0, result.stderr
        results.append((result.summary["users"]["started"], result.summary["global"]["count"], window.requests))
    assert results == [(2, 400, 400), (2, 400, 400), (1, 200, 200)]


def test_without_a_segment_a_run_is_the_whole_run(horde, logging_nginx):
    # P0 end to end: the flags absent, nothing changes; 0:1 is the same run.
    for flags in ([], ["--execution-segment", "0:1"]):
        with ServerWindow(logging_nginx) as window:
            result = horde("http", logging_nginx.url + "/w", "-n", "300", "-c", "3", "-q", *flags)
        assert result.code == 0, result.stderr
        assert (result.summary["users"]["started"], result.summary["global"]["count"], window.requests) == (3, 300, 300)


@pytest.mark.parametrize(
    "flags, expected",
    [
        (["--execution-segment", "1/3:x"], "\"x\" is not a fraction, decimal or percentage"),
        (["--execution-segment", "2/3:1/3"], "a segment's start (2/3) must be below its end (1/3)"),
        (["--execution-segment", "0:1/2", "--execution-segment-sequence", "0,1/2,1/3,1"],
         "1/3 after 1/2: the points must increase, or segments overlap"),
        (["--execution-segment", "1/4:3/4", "--execution-segment-sequence", SEQUENCE],
         "--execution-segment: 1/4:3/4 is not one of the sequence's segments (0:1/3, 1/3:2/3, 2/3:1)"),
        (["--execution-segment", "0:0.123457"],
         "--execution-segment: the segments' lengths have no common denominator up to 100000"),
        (["--execution-segment-sequence", SEQUENCE], "--execution-segment"),
    ],
)
def test_bad_segments_are_named_before_any_load(horde, logging_nginx, flags, expected):
    before = logging_nginx.requests_served()
    result = horde("http", logging_nginx.url + "/bad", "-n", "10", *flags)
    assert result.code == 2, result.stderr
    assert expected in result.stderr, result.stderr
    assert logging_nginx.requests_served() == before


def test_a_plan_with_a_segment_not_in_its_sequence_is_refused_with_its_path(horde, tmp_path, logging_nginx):
    path = plan_file(tmp_path, logging_nginx, segment="1/4:1/2")
    result = horde("run", path)
    assert result.code == 2, result.stderr
    assert "options.execution_segment.segment: 1/4:1/2 is not one of the sequence's segments" in result.stderr
