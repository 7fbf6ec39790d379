//! Summary statistics: what the console summary and summary.json show.
//! All durations are integer microseconds; field names carry the unit.

use crate::recorder::{GroupRecorder, Recorder};
use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which percentiles and distribution bounds to compute (from the plan's options).
#[derive(Debug, Clone)]
pub struct SummaryOptions {
    pub percentiles: Vec<f64>,
    pub response_time_bounds_ms: [u64; 2],
}

impl Default for SummaryOptions {
    fn default() -> Self {
        SummaryOptions { percentiles: vec![50.0, 75.0, 95.0, 99.0], response_time_bounds_ms: [800, 1200] }
    }
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct Percentile {
    pub percentile: f64,
    pub value_us: u64,
}

/// Statistics of one latency distribution.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct LatencyStats {
    pub count: u64,
    pub min_us: u64,
    pub max_us: u64,
    pub mean_us: f64,
    pub stddev_us: f64,
    pub percentiles: Vec<Percentile>,
}

impl LatencyStats {
    pub fn from_histogram(histogram: &Histogram<u64>, percentiles: &[f64]) -> LatencyStats {
        if histogram.is_empty() {
            return LatencyStats::default();
        }
        LatencyStats {
            count: histogram.len(),
            min_us: histogram.min(),
            max_us: histogram.max(),
            mean_us: histogram.mean(),
            stddev_us: histogram.stdev(),
            percentiles: percentiles
                .iter()
                .map(|&p| Percentile { percentile: p, value_us: histogram.value_at_quantile(p / 100.0) })
                .collect(),
        }
    }

    /// The value at percentile `p`, if it was computed.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        self.percentiles.iter().find(|x| x.percentile == p).map(|x| x.value_us)
    }
}

/// Latency of a request row: corrected (from the intended start) for OK, KO and all requests,
/// and the uncorrected figure (from the actual send) for all.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct RequestLatency {
    pub all: LatencyStats,
    pub ok: LatencyStats,
    pub ko: LatencyStats,
    pub uncorrected: LatencyStats,
}

/// Where the time of a request went.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct PhaseStats {
    /// Only requests whose connection looked its host name up (once per host and run).
    #[serde(default)]
    pub dns: LatencyStats,
    /// Only requests that opened a connection: TCP's connect.
    pub connect: LatencyStats,
    /// Only requests that opened an https connection: the TLS handshake.
    #[serde(default)]
    pub tls: LatencyStats,
    pub send: LatencyStats,
    /// Time to first byte after sending.
    pub wait: LatencyStats,
    pub receive: LatencyStats,
}

/// Gatling's response-time distribution: OK requests by bounds, then failed ones.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct DistributionBucket {
    pub label: String,
    pub count: u64,
    pub percent: f64,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct RequestStats {
    pub name: String,
    /// Requests with an outcome: ok + ko.
    pub count: u64,
    pub ok: u64,
    pub ko: u64,
    /// KO requests that were never sent (an undefined variable, a header that cannot be
    /// built, no file descriptor left): counted in `ko`, kept out of the latency statistics.
    #[serde(default)]
    pub unsent: u64,
    /// Failures in attempts of `try_max` or `eventually` that were tried again: not in `count`
    /// nor `ko` (the block's row has the outcome), nor in the latency figures.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retried: u64,
    /// Requests sent but without an outcome when the run ended (in flight at its end; while
    /// the run goes, in flight now). Not in `count`.
    #[serde(default)]
    pub interrupted: u64,
    /// count / run duration.
    pub mean_rps: f64,
    pub latency: RequestLatency,
    pub phases: PhaseStats,
    /// Bytes on the wire, headers (and HTTP/2 frames) included.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Compressed response bodies that were decoded because a check read them, and their
    /// size once decoded (unread bodies are never decompressed: their size is only on the wire).
    #[serde(default)]
    pub bodies_decoded: u64,
    #[serde(default)]
    pub bytes_decoded: u64,
    pub distribution: Vec<DistributionBucket>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct GroupStats {
    pub name: String,
    pub count: u64,
    pub ok: u64,
    pub ko: u64,
    /// Duration of each pass through the group. For `eventually`, the OK passes' durations
    /// are the time to consistency: from the first attempt's start to the end of the first
    /// attempt that passed.
    pub duration: LatencyStats,
    /// A retry block's (`try_max`, `eventually`) attempts per pass; absent for plain groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<AttemptStats>,
}

/// Attempts per pass through a retry block.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct AttemptStats {
    pub total: u64,
    pub mean: f64,
    pub max: u64,
    /// Passes that needed more than one attempt.
    pub retried_passes: u64,
}

/// For `skip_serializing_if`: counts that say nothing when 0.
pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct ErrorSummary {
    /// Stable kind: connect_refused, connection_reset, request_timeout, check_failed, ...
    pub kind: String,
    pub request: String,
    /// The message of the first occurrence.
    pub message: String,
    pub count: u64,
    /// Share of all errors counted (the counts of every entry add up to 100 %). Not a share of
    /// KO requests: a step that is no request (`eventually` giving up: `not_consistent`) has
    /// errors of its own, on top of its requests' KOs.
    pub percent: f64,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct UserStats {
    pub started: u64,
    pub finished: u64,
    /// Cut off mid-iteration by the end of the run.
    pub interrupted: u64,
    pub active: u64,
    /// Closed-model users whose start waited because the users before them in their slot
    /// kept failing fast (docs/scenario-language.md, "After a failed request or check").
    #[serde(default, skip_serializing_if = "is_zero")]
    pub replacements_held_back: u64,
}

/// Connections: how many were opened, and what the client did about servers closing them.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct ConnectionStats {
    /// Connections opened (successful connects).
    pub opened: u64,
    /// Keep-alive connections found closed by the server while idle, before a request was
    /// written on them (a fresh one was opened instead).
    pub closed_by_server_while_idle: u64,
    /// Requests sent again on a fresh connection after the reused one failed before any
    /// byte of a response (the server had closed it); each counts once in the results.
    pub retried_on_fresh_connection: u64,
    /// Of the connections opened, those speaking HTTP/2.
    #[serde(default)]
    pub http2: u64,
    /// https connections where HTTP/2 was offered by ALPN and the server chose HTTP/1.1
    /// (they spoke HTTP/1.1).
    #[serde(default)]
    pub http2_declined_by_server: u64,
    /// WebSockets opened (handshakes that succeeded).
    #[serde(default)]
    pub websockets: u64,
    /// Server-sent event streams opened.
    #[serde(default)]
    pub event_streams: u64,
    /// Messages sent on WebSockets.
    #[serde(default)]
    pub messages_sent: u64,
    /// WebSocket messages and events received, awaited by a step or not.
    #[serde(default)]
    pub messages_received: u64,
}

/// How busy the load generator itself was: a generator short of CPU delivers less load than
/// asked, and its late starts are not the server's doing.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct GeneratorStats {
    /// CPU time horde used during the run (all threads).
    pub cpu_ms: u64,
    /// That CPU time over the run's duration times its worker threads (at most the cores):
    /// near 1, the workers had no time to spare.
    pub busy: f64,
    /// Session functions (Python code the plan calls), when it calls any: they run under
    /// Python's global lock, blocking the worker that calls them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_functions: Option<SessionFunctionStats>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct SessionFunctionStats {
    pub calls: u64,
    /// Time in the calls, waiting for Python's lock included.
    pub total_ms: f64,
    pub mean_us: f64,
}

/// One share of a distributed run (a process running its execution segment), as its
/// coordinator saw it.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct MachineStats {
    /// The share's index in the execution segment sequence.
    pub share: usize,
    /// Its execution segment (`FROM:TO`).
    pub segment: String,
    pub host: String,
    pub pid: u32,
    /// Its worker threads.
    pub threads: usize,
    /// Requests with an outcome (OK, KO, unsent) it measured.
    pub requests: u64,
    /// CPU time its process used during the run (all threads), as it last reported; for a
    /// replaced share, every attempt's summed.
    pub cpu_ms: u64,
    /// Starts later than `late_start_threshold_us` after their intended time.
    pub late_starts: u64,
    /// Snapshot intervals received from it.
    pub intervals: u64,
    /// Its process's peak resident memory while it ran (on a Dask worker, the worker
    /// process's: Python and Dask included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_memory_bytes: Option<u64>,
    /// Its machine's clock minus the coordinator's, as measured before the start (a cluster's
    /// machines; absent when the shares share the coordinator's clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_offset_us: Option<i64>,
    /// How wrong that offset can be: half the shortest round trip it was measured with. The
    /// start reached this machine within this much of the others'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_error_us: Option<f64>,
    /// Its start skew: how long after the run's start instant (converted to its clock) it let
    /// its users go, on its own clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_late_us: Option<f64>,
    /// How long after an interval's end its snapshot reached the coordinator: the mean and the
    /// longest, over its intervals but the last (which ends with the run, not on the interval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_delay_ms: Option<SnapshotDelay>,
    /// While the run goes: how long since the coordinator last heard from it, once that is
    /// 3 s or more (suspect; lost at 10 s). Absent once it is lost or finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub silent_s: Option<f64>,
    /// It handed in its last interval: everything it measured is in these results.
    pub delivered: bool,
    /// Why the coordinator stopped waiting for it, when it did (nothing heard from it for too
    /// long, the link to it failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<String>,
    /// The load it did not deliver: one window per loss (to its replacement's takeover, or to
    /// the run's planned end), from its own schedule. Absent with `--on-worker-loss abort`
    /// (the whole run stops) and while it is being computed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missed: Vec<MissedLoad>,
    /// Each time the share was given up and started again on another machine
    /// (`--on-worker-loss replace`), in order. What its schedule had due between the lost
    /// attempt's last interval and the replacement's takeover was not delivered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replaced: Vec<ShareReplacement>,
    /// The requests its own interval log counted (its last attempt's), sent with its last
    /// interval: absent when that never came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_requests: Option<u64>,
    /// Whether the coordinator merged every interval and request of that log: false means
    /// some of its intervals were lost on the way, and the results lack them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified: Option<bool>,
    /// Under row grants (`--on-worker-loss replace` with queue or shuffle feeders): how many
    /// feeds found the rows granted so far used up and waited for the coordinator's next
    /// grant (every attempt's). Many mean the share was held back by them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_waits: Option<u64>,
}

/// The load a share's schedule had due while no machine ran it: from the end of its last
/// interval counted to its replacement's takeover, or to the run's planned end.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct MissedLoad {
    /// The window, in seconds after the run's start.
    pub from_s: f64,
    pub to_s: f64,
    /// Open-model arrivals (users that would have started) in it.
    pub arrivals: u64,
    /// Closed-model users' time in it: users that would have been running, times seconds.
    pub user_seconds: f64,
    /// The throttle's slots in it: requests it would have let the share send (`--rate`).
    #[serde(default)]
    pub throttle_slots: u64,
}

/// A share given up on one machine and started again on another.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct ShareReplacement {
    /// Why the earlier attempt was given up.
    pub reason: String,
    /// The machine (host) and process it ran on.
    pub host: String,
    pub pid: u32,
    /// When it was given up, in seconds after the run's start.
    pub lost_at_s: f64,
    /// The last snapshot interval it handed in: what it sent after that is in no count.
    pub last_interval: u64,
    /// From when the replacement ran the share's schedule, in seconds after the run's start,
    /// as it reported (later than planned if it was ready only then); the planned takeover
    /// if it never reported.
    pub resume_after_s: f64,
    /// The machine the replacement was started on, as the distributed engine names it.
    pub machine: String,
    /// Queue and shuffle rows granted to the lost attempt that it had not reported taking:
    /// the replacement starts after them, so none is used twice (nor ever, in this run).
    #[serde(default)]
    pub rows_skipped: u64,
}

/// How long a share's interval snapshots took to reach the coordinator after their interval
/// ended, on the coordinator's clock.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Default)]
pub struct SnapshotDelay {
    pub mean: f64,
    pub max: f64,
    /// The intervals measured.
    pub intervals: u64,
}

/// How faithfully the intended schedule (arrivals, throttle slots) was kept.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct SchedulingStats {
    /// Starts that had an intended time.
    pub scheduled_starts: u64,
    /// Starts later than `late_start_threshold_us` after their intended time.
    pub late_starts: u64,
    pub late_start_threshold_us: u64,
    pub start_lag: LatencyStats,
}

impl Recorder {
    /// The statistics of this recorder, named `name`, over a run of `duration_s` seconds.
    pub fn stats(&self, name: &str, duration_s: f64, options: &SummaryOptions) -> RequestStats {
        let p = &options.percentiles;
        let all = self.corrected();
        let ok = self.ok.histogram();
        let stats = |distribution: &crate::Distribution| LatencyStats::from_histogram(&distribution.histogram(), p);
        let count = self.count();
        let [dns, connect, tls, send, wait, receive] = self.phases().map(stats);
        RequestStats {
            name: name.to_string(),
            count,
            ok: self.ok.len(),
            ko: self.ko.len() + self.unsent,
            unsent: self.unsent,
            retried: self.retried,
            interrupted: self.in_flight(),
            mean_rps: if duration_s > 0.0 { count as f64 / duration_s } else { 0.0 },
            latency: RequestLatency {
                all: LatencyStats::from_histogram(&all, p),
                ok: LatencyStats::from_histogram(&ok, p),
                ko: stats(&self.ko),
                uncorrected: stats(&self.uncorrected),
            },
            phases: PhaseStats { dns, connect, tls, send, wait, receive },
            bytes_sent: self.bytes_sent,
            bytes_received: self.bytes_received,
            bodies_decoded: self.bodies_decoded,
            bytes_decoded: self.bytes_decoded,
            distribution: distribution(&ok, self.ko.len() + self.unsent, options.response_time_bounds_ms),
        }
    }
}

impl GroupRecorder {
    pub fn stats(&self, name: &str, options: &SummaryOptions) -> GroupStats {
        let mut all = self.ok.clone();
        all.add(&self.ko).expect("auto-resizing histograms always merge");
        GroupStats {
            name: name.to_string(),
            count: all.len(),
            ok: self.ok.len(),
            ko: self.ko.len(),
            duration: LatencyStats::from_histogram(&all, &options.percentiles),
            attempts: (!self.attempts.is_empty()).then(|| {
                let passes = self.attempts.len();
                let total: u64 =
                    self.attempts.iter_recorded().map(|v| v.value_iterated_to() * v.count_at_value()).sum();
                AttemptStats {
                    total,
                    mean: total as f64 / passes as f64,
                    max: self.attempts.max(),
                    retried_passes: passes - self.attempts.count_between(0, 1),
                }
            }),
        }
    }
}

fn distribution(ok: &Histogram<u64>, failed: u64, [low_ms, high_ms]: [u64; 2]) -> Vec<DistributionBucket> {
    let (low_us, high_us) = (low_ms * 1000, high_ms * 1000);
    let mut below = 0;
    let mut between = 0;
    let mut above = 0;
    for v in ok.iter_recorded() {
        // Values are known to the histogram's 0.1 % resolution; one within it of a bound may
        // land on either side.
        let value = ok.median_equivalent(v.value_iterated_to());
        let n = v.count_at_value();
        if value < low_us {
            below += n;
        } else if value < high_us {
            between += n;
        } else {
            above += n;
        }
    }
    let total = (below + between + above + failed).max(1) as f64;
    let bucket = |label: String, count: u64| DistributionBucket { label, count, percent: 100.0 * count as f64 / total };
    vec![
        bucket(format!("t < {low_ms} ms"), below),
        bucket(format!("{low_ms} ms <= t < {high_ms} ms"), between),
        bucket(format!("t >= {high_ms} ms"), above),
        bucket("failed".to_string(), failed),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RequestTiming;
    use proptest::prelude::*;

    fn timing(us: u64) -> RequestTiming {
        RequestTiming { latency_us: us, uncorrected_us: us, ..Default::default() }
    }

    #[test]
    fn distribution_sorts_ok_requests_by_bounds_and_counts_failures() {
        let mut r = Recorder::default();
        for us in [1_000, 790_000, 810_000, 1_190_000, 1_210_000, 5_000_000] {
            r.record(&timing(us), true);
        }
        r.record(&timing(10), false);
        let stats = r.stats("x", 1.0, &SummaryOptions::default());
        let counts: Vec<u64> = stats.distribution.iter().map(|b| b.count).collect();
        assert_eq!(counts, vec![2, 2, 2, 1]);
        assert_eq!(stats.count, 7);
        assert_eq!(stats.ko, 1);
        assert!((stats.mean_rps - 7.0).abs() < 1e-9);
    }

    #[test]
    fn empty_recorder_has_zero_stats() {
        let stats = Recorder::default().stats("x", 0.0, &SummaryOptions::default());
        assert_eq!(stats.count, 0);
        assert_eq!(stats.latency.all, LatencyStats::default());
    }

    proptest! {
        #[test]
        fn percentiles_are_monotone(values in proptest::collection::vec(1u64..100_000_000, 1..500)) {
            let mut r = Recorder::default();
            for v in &values { r.record(&timing(*v), true); }
            let options = SummaryOptions { percentiles: vec![1.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 100.0], ..Default::default() };
            let stats = r.stats("x", 1.0, &options).latency.all;
            let ps: Vec<u64> = stats.percentiles.iter().map(|p| p.value_us).collect();
            prop_assert!(ps.windows(2).all(|w| w[0] <= w[1]));
            prop_assert!(stats.min_us <= ps[0] && *ps.last().unwrap() <= stats.max_us.max(*ps.last().unwrap()));
            let max = *values.iter().max().unwrap();
            // 3 significant figures: within 0.1 % of the true maximum.
            prop_assert!((stats.max_us as f64 - max as f64).abs() <= max as f64 * 0.001 + 1.0);
        }
    }
}
