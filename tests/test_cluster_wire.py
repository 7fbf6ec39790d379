"""A run split across processes without Dask (issue 26, S4): two shares, each a separate
`horde` process running its execution segment, and a coordinator, a third, that gives them one
start and merges their intervals through a spool directory (the hidden --share-spool and
--coordinate-spool flags). The coordinator's results are made by the code of a local run: the
server's count, the merged count and the budget agree; its latency histograms are, bucket for
bucket, the shares' added up; its thresholds are judged on the merged data only."""

import subprocess

import jsonschema
from conftest import stop_process
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

SEQUENCE = "0,1/2,1"
HALVES = ["0:1/2", "1/2:1"]


class Cluster:
    """The exit codes and results of a coordinator and its two shares."""

    def __init__(self, tmp_path, command, coordinator_flags=()):
        spool = tmp_path / "spool"
        spool.mkdir(parents=True)
        self.dirs = [tmp_path / "coordinator", tmp_path / "share-0", tmp_path / "share-1"]
        argvs = [["horde", *command, "-q", "--coordinate-spool", f"2:{spool}", *coordinator_flags]]
        for segment in HALVES:
            argvs.append(["horde", *command, "-q", "--execution-segment", segment,
                          "--execution-segment-sequence", SEQUENCE, "--share-spool", str(spool)])
        processes = [subprocess.Popen([*argv, "--results-dir", str(directory)], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
                     for argv, directory in zip(argvs, self.dirs)]
        try:
            outputs = [process.communicate(timeout=60) for process in processes]
        finally:
            for process in processes:
                stop_process(process)
        self.codes = [process.returncode for process in processes]
        self.stderr = [err for _, err in outputs]

    def summary(self, index):
        import json

        return json.loads((self.dirs[index] / "summary.json").read_text())

    def histogram(self, index):
        """The run's untagged histogram (every request, corrected) added up over its intervals, as
        PyPI's hdrhistogram decodes histograms.hlog."""
        reader = HistogramLogReader(str(self.dirs[index] / "histograms.hlog"), HdrHistogram(1, 10**9, 3))
        total = HdrHistogram(1, 3_600_000_000, 3)
        while (interval := reader.get_next_interval_histogram()) is not None:
            if not interval.get_tag():
                total.add(interval)
        reader.close()
        return total


def buckets(histogram):
    return [(value.value_iterated_to, value.count_at_value_iterated_to)
            for value in histogram.get_recorded_iterator()]


def test_two_shares_send_the_budget_once_and_the_coordinator_merges_it_exactly(nginx, tmp_path, summary_schema):
    before = nginx.requests_served()
    cluster = Cluster(tmp_path, ["http", nginx.url + "/wire", "-n", "3000", "-c", "4"])
    assert cluster.codes == [0, 0, 0], cluster.stderr
    served = nginx.requests_served() - before
    merged = cluster.summary(0)
    shares = [cluster.summary(1), cluster.summary(2)]

    # The server's count, the merged count and the budget agree; each share sent its half.
    assert served == merged["global"]["count"] == 3000
    assert [s["global"]["count"] for s in shares] == [1500, 1500]
    assert merged["global"]["ok"] == 3000 and merged["run"]["status"] == "limit_reached"
    assert merged["users"]["started"] == sum(s["users"]["started"] for s in shares) == 4

    # One entry per share, as the coordinator saw it.
    machines = merged["machines"]
    assert [(m["share"], m["segment"], m["requests"], m["delivered"]) for m in machines] == [
        (0, "0:1/2", 1500, True), (1, "1/2:1", 1500, True)]
    assert all(m["intervals"] >= 1 and m["threads"] >= 1 and "lost" not in m for m in machines)
    # Each share's own log of what it sent agrees with the coordinator's merge.
    assert [(m["verified"], m["log_requests"]) for m in machines] == [(True, 1500), (True, 1500)]
    assert "machines" not in shares[0]
    jsonschema.validate(merged, summary_schema)

    # Bucket for bucket, the merged histogram is one built from both shares' intervals.
    from_shares = cluster.histogram(1)
    from_shares.add(cluster.histogram(2))
    coordinator = cluster.histogram(0)
    assert coordinator.get_total_count() == from_shares.get_total_count() == 3000
    assert buckets(coordinator) == buckets(from_shares)
    for percentile in (50, 90, 99, 99.9, 100):
        assert coordinator.get_value_at_percentile(percentile) == from_shares.get_value_at_percentile(percentile)
    assert merged["global"]["latency"]["all"]["max_us"] == max(
        s["global"]["latency"]["all"]["max_us"] for s in shares)


def test_thresholds_are_judged_on_the_merged_data_only(nginx, tmp_path):
    # Each share sends 1,500 requests: count>=3000 passes only merged, count<2000 fails only
    # merged. The shares judge nothing (their summaries have no thresholds).
    passing = Cluster(tmp_path / "passing", ["http", nginx.url + "/t", "-n", "3000", "-c", "2"],
                      coordinator_flags=["--threshold", "count>=3000"])
    assert passing.codes == [0, 0, 0], passing.stderr
    assert [t["status"] for t in passing.summary(0)["thresholds"]] == ["pass"]
    assert [passing.summary(i)["global"]["count"] for i in (1, 2)] == [1500, 1500]
    assert "thresholds" not in passing.summary(1)

    failing = Cluster(tmp_path / "failing", ["http", nginx.url + "/t", "-n", "3000", "-c", "2"],
                      coordinator_flags=["--threshold", "count<2000"])
    assert failing.codes == [99, 0, 0], failing.stderr
    assert [t["status"] for t in failing.summary(0)["thresholds"]] == ["fail"]


def test_a_coordinator_without_its_shares_fails_before_any_load(nginx, tmp_path):
    # Only one of the two shares comes: the coordinator waits, then says which is missing.
    spool = tmp_path / "spool"
    spool.mkdir()
    before = nginx.requests_served()
    share = subprocess.Popen(["horde", "http", nginx.url + "/lonely", "-n", "100", "-q",
                              "--execution-segment", "0:1/2", "--execution-segment-sequence", SEQUENCE,
                              "--share-spool", str(spool), "--results-dir", str(tmp_path / "share")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        coordinator = subprocess.run(["horde", "http", nginx.url + "/lonely", "-n", "100", "-q",
                                      "--coordinate-spool", f"2:{spool}", "--spool-ready-timeout-ms", "1500",
                                      "--results-dir", str(tmp_path / "c")],
                                     capture_output=True, text=True, timeout=60)
        _, share_err = share.communicate(timeout=30)
    finally:
        stop_process(share)
    assert coordinator.returncode == 3, coordinator.stderr
    assert "share(s) 1 not ready" in coordinator.stderr and "no load was sent" in coordinator.stderr
    # The share that came was told, and sent nothing either.
    assert share.returncode == 3, share_err
    assert "stopped the run before it started" in share_err
    assert nginx.requests_served() - before == 0


def test_an_interrupted_coordinator_stops_its_shares_and_keeps_what_they_sent(nginx, tmp_path):
    import json
    import signal
    import time

    from conftest import wait_until

    spool = tmp_path / "spool"
    spool.mkdir()
    command = ["horde", "http", nginx.url + "/interrupted", "-d", "60s", "--rate", "200", "-c", "2", "-q"]
    dirs = [tmp_path / name for name in ("coordinator", "share-0", "share-1")]
    argvs = [[*command, "--coordinate-spool", f"2:{spool}"]]
    argvs += [[*command, "--execution-segment", segment, "--execution-segment-sequence", SEQUENCE,
               "--share-spool", str(spool)] for segment in HALVES]
    before = nginx.requests_served()
    processes = [subprocess.Popen([*argv, "--results-dir", str(d)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for argv, d in zip(argvs, dirs)]
    try:
        def merged_some():
            try:
                return json.loads((dirs[0] / "summary.json").read_text())["global"]["count"] > 0
            except (OSError, ValueError, KeyError):
                return False

        wait_until(merged_some, timeout=30, what="the coordinator's first merged interval")
        interrupted_at = time.monotonic()
        processes[0].send_signal(signal.SIGINT)
        outputs = [process.communicate(timeout=30) for process in processes]
        stopped_within = time.monotonic() - interrupted_at
    finally:
        for process in processes:
            stop_process(process)
    codes = [process.returncode for process in processes]
    assert codes == [130, 0, 0], [err for _, err in outputs]
    assert stopped_within < 10, stopped_within
    merged = json.loads((dirs[0] / "summary.json").read_text())
    shares = [json.loads((d / "summary.json").read_text()) for d in dirs[1:]]
    assert merged["run"]["status"] == "interrupted"
    assert [s["run"]["status"] for s in shares] == ["stopped", "stopped"]
    assert all("stopped by the coordinator" in s["run"]["stop_reason"] for s in shares)
    # Every request the shares counted reached the coordinator; the server saw those and, as in
    # a local Ctrl-C, at most one more per user the stop cut off in flight (nginx counts a
    # request once read, whether or not its answer was awaited).
    served, merged_count = nginx.requests_served() - before, merged["global"]["count"]
    assert merged_count == sum(s["global"]["count"] for s in shares)
    assert merged["users"]["interrupted"] == sum(s["users"]["interrupted"] for s in shares)
    assert 0 < merged_count <= served <= merged_count + merged["users"]["interrupted"]
    assert all(m["delivered"] for m in merged["machines"])
