//! What a worker records, and the snapshot it hands over at each interval.

use hdrhistogram::Histogram;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

/// Significant figures of the latency histograms (a row's corrected and uncorrected latency,
/// groups, start lag): 0.1 % resolution, that of the percentiles users read and gate on.
const SIGNIFICANT_FIGURES: u8 = 3;
/// Significant figures of the phases' histograms (DNS, connect, TLS, send, wait, receive): 1 %
/// resolution, plenty to say where the time went, at an eighth of the memory (a 3-figure
/// histogram is 16 KiB before it holds anything, a 2-figure one 2 KiB).
const PHASE_SIGNIFICANT_FIGURES: u8 = 2;
/// How many values a [`Distribution`] keeps as they are before it makes its histogram: a row
/// hit a few times an interval costs a few bytes, not a histogram. A plan of thousands of
/// request names (an imported recording) holds one recorder per row in every worker, in the
/// collector's totals and in each pending interval.
const FEW_VALUES: usize = 256;

pub fn new_histogram() -> Histogram<u64> {
    Histogram::new(SIGNIFICANT_FIGURES).expect("3 significant figures are valid")
}

/// The values of one measure of a row (its OK latency, its wait phase...): kept as they are
/// while they are few, in an HDR histogram from [`FEW_VALUES`] on, which the values recorded so
/// far are poured into. Its statistics are always a histogram's ([`Distribution::histogram`]):
/// the few values recorded into one, so every percentile is exactly what a histogram from the
/// start would give.
#[derive(Debug, Clone, PartialEq)]
pub struct Distribution {
    pub(crate) significant_figures: u8,
    pub(crate) few: Vec<u64>,
    pub(crate) many: Option<Box<Histogram<u64>>>,
}

impl Distribution {
    /// At 0.1 % resolution: latencies.
    pub fn latency() -> Distribution {
        Distribution { significant_figures: SIGNIFICANT_FIGURES, few: Vec::new(), many: None }
    }

    /// At 1 % resolution: the phases of a request.
    pub fn phase() -> Distribution {
        Distribution { significant_figures: PHASE_SIGNIFICANT_FIGURES, few: Vec::new(), many: None }
    }

    fn empty_histogram(&self) -> Histogram<u64> {
        Histogram::new(self.significant_figures).expect("2 or 3 significant figures are valid")
    }

    pub fn record(&mut self, value: u64) {
        match &mut self.many {
            Some(histogram) => record_value(histogram, value),
            None if self.few.len() < FEW_VALUES => self.few.push(value),
            None => {
                self.pour();
                self.record(value);
            }
        }
    }

    /// From values to a histogram: they are recorded into it, and their buffer let go.
    fn pour(&mut self) {
        let mut histogram = self.empty_histogram();
        for value in &self.few {
            record_value(&mut histogram, *value);
        }
        self.few = Vec::new();
        self.many = Some(Box::new(histogram));
    }

    pub fn len(&self) -> u64 {
        match &self.many {
            Some(histogram) => histogram.len(),
            None => self.few.len() as u64,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The histogram of every value recorded: borrowed once there is one, else made from the
    /// values (the same counts, bucket for bucket).
    pub fn histogram(&self) -> Cow<'_, Histogram<u64>> {
        match &self.many {
            Some(histogram) => Cow::Borrowed(histogram),
            None => {
                let mut histogram = self.empty_histogram();
                self.add_to(&mut histogram);
                Cow::Owned(histogram)
            }
        }
    }

    /// The histogram's mean (values stand for their bucket, as HdrHistogram computes it).
    pub fn mean(&self) -> f64 {
        if self.is_empty() {
            0.0
        } else {
            self.histogram().mean()
        }
    }

    /// Adds every value recorded to `into` (a histogram of the same resolution).
    pub fn add_to(&self, into: &mut Histogram<u64>) {
        match &self.many {
            Some(histogram) => into.add(histogram.as_ref()).expect("auto-resizing histograms always merge"),
            None => self.few.iter().for_each(|value| record_value(into, *value)),
        }
    }

    pub fn merge(&mut self, other: &Distribution) {
        match (&mut self.many, &other.many) {
            (Some(mine), _) => other.add_to(mine),
            (None, Some(theirs)) => {
                let mut histogram = theirs.clone();
                self.few.iter().for_each(|value| record_value(&mut histogram, *value));
                self.few = Vec::new();
                self.many = Some(histogram);
            }
            (None, None) if self.few.len() + other.few.len() <= FEW_VALUES => self.few.extend_from_slice(&other.few),
            (None, None) => {
                self.pour();
                self.merge(other);
            }
        }
    }

    /// Forgets every value. A histogram is let go too: the recorder may next serve a row hit
    /// a few times an interval, which needs none; a busy row makes one again within the interval.
    pub fn reset(&mut self) {
        self.few.clear();
        self.many = None;
    }
}

/// Records into an auto-resizing histogram. `saturating_record` would clamp to the current
/// range instead of growing it, so it is only the fallback for values beyond any range.
pub fn record_value(histogram: &mut Histogram<u64>, value: u64) {
    if histogram.record(value).is_err() {
        histogram.saturating_record(value);
    }
}

/// How long one request took, in microseconds, split into its phases.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestTiming {
    /// From the intended start (coordinated-omission corrected) to the last byte.
    pub latency_us: u64,
    /// From the actual start to the last byte.
    pub uncorrected_us: u64,
    /// Time to resolve the host name, when this request's connection had to look it up.
    pub dns_us: Option<u64>,
    /// Time to open the connection (TCP), when this request had to open one.
    pub connect_us: Option<u64>,
    /// Time of the TLS handshake, when this request opened an https connection.
    pub tls_us: Option<u64>,
    pub send_us: u64,
    /// From the end of sending to the first byte of the response.
    pub wait_us: u64,
    pub receive_us: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// The size of the response body after decoding, when it was compressed and read.
    pub bytes_decoded: Option<u64>,
    /// Not a request and its response but a socket's opening or an awaited message: timed as
    /// a whole, it has no send, wait and receive phases.
    pub without_phases: bool,
    /// The response's status code, when there was one: only the request log reads it.
    pub status: Option<u16>,
}

/// Histograms and counters of one request name.
///
/// Latency covers exchanges that happened: a request that never went out (an undefined
/// variable, a header that cannot be built, no file descriptor left) is a KO counted in
/// `unsent`, outside the histograms, so failures cannot make the percentiles look better.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorder {
    pub ok: Distribution,
    /// KO exchanges: sent (or a connection attempted), then failed.
    pub ko: Distribution,
    /// KO requests that were never sent.
    pub unsent: u64,
    /// Failed in an attempt of `try_max` or `eventually` that was tried again: not a KO (the
    /// block's row has the outcome), and not in the latency figures.
    pub retried: u64,
    /// Exchanges begun: those without an outcome yet (ok + ko short of it) are in flight,
    /// and at the end of a run, interrupted.
    pub started: u64,
    pub uncorrected: Distribution,
    pub dns: Distribution,
    pub connect: Distribution,
    pub tls: Distribution,
    pub send: Distribution,
    pub wait: Distribution,
    pub receive: Distribution,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Compressed bodies decoded (read by a check), and their size decoded.
    pub bodies_decoded: u64,
    pub bytes_decoded: u64,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            ok: Distribution::latency(),
            ko: Distribution::latency(),
            unsent: 0,
            retried: 0,
            started: 0,
            uncorrected: Distribution::latency(),
            dns: Distribution::phase(),
            connect: Distribution::phase(),
            tls: Distribution::phase(),
            send: Distribution::phase(),
            wait: Distribution::phase(),
            receive: Distribution::phase(),
            bytes_sent: 0,
            bytes_received: 0,
            bodies_decoded: 0,
            bytes_decoded: 0,
        }
    }
}

impl Recorder {
    pub fn record(&mut self, timing: &RequestTiming, ok: bool) {
        let latency = if ok { &mut self.ok } else { &mut self.ko };
        latency.record(timing.latency_us);
        self.uncorrected.record(timing.uncorrected_us);
        for (phase, value) in
            [(&mut self.dns, timing.dns_us), (&mut self.connect, timing.connect_us), (&mut self.tls, timing.tls_us)]
        {
            if let Some(value) = value {
                phase.record(value);
            }
        }
        if !timing.without_phases {
            self.send.record(timing.send_us);
            self.wait.record(timing.wait_us);
            self.receive.record(timing.receive_us);
        }
        self.bytes_sent += timing.bytes_sent;
        self.bytes_received += timing.bytes_received;
        if let Some(decoded) = timing.bytes_decoded {
            self.bodies_decoded += 1;
            self.bytes_decoded += decoded;
        }
    }

    /// Counts a request that failed before anything was sent.
    pub fn record_unsent(&mut self) {
        self.unsent += 1;
    }

    /// Counts a failure in an attempt that is tried again.
    pub fn record_retried(&mut self) {
        self.retried += 1;
    }

    /// The phases, in the order of an exchange: DNS, connect, TLS, send, wait, receive.
    pub fn phases(&self) -> [&Distribution; 6] {
        [&self.dns, &self.connect, &self.tls, &self.send, &self.wait, &self.receive]
    }

    /// Latency from the intended start of every exchange, OK and KO together.
    pub fn corrected(&self) -> Histogram<u64> {
        let mut all = self.ok.histogram().into_owned();
        self.ko.add_to(&mut all);
        all
    }

    /// Requests with an outcome: OK, KO and unsent.
    pub fn count(&self) -> u64 {
        self.ok.len() + self.ko.len() + self.unsent
    }

    /// Whether nothing at all happened on this row.
    pub fn is_empty(&self) -> bool {
        self.count() == 0 && self.started == 0 && self.retried == 0
    }

    /// Exchanges begun but without an outcome (in flight; interrupted once the run is over).
    pub fn in_flight(&self) -> u64 {
        self.started.saturating_sub(self.ok.len() + self.ko.len() + self.retried)
    }

    /// Empties the recorder for a worker to record into again, keeping the buffers of its few
    /// values (see [`Distribution::reset`]).
    pub fn reset(&mut self) {
        for distribution in [
            &mut self.ok,
            &mut self.ko,
            &mut self.uncorrected,
            &mut self.dns,
            &mut self.connect,
            &mut self.tls,
            &mut self.send,
            &mut self.wait,
            &mut self.receive,
        ] {
            distribution.reset();
        }
        self.unsent = 0;
        self.retried = 0;
        self.started = 0;
        self.bytes_sent = 0;
        self.bytes_received = 0;
        self.bodies_decoded = 0;
        self.bytes_decoded = 0;
    }

    pub fn merge(&mut self, other: &Recorder) {
        self.ok.merge(&other.ok);
        self.ko.merge(&other.ko);
        self.unsent += other.unsent;
        self.retried += other.retried;
        self.started += other.started;
        self.uncorrected.merge(&other.uncorrected);
        self.dns.merge(&other.dns);
        self.connect.merge(&other.connect);
        self.tls.merge(&other.tls);
        self.send.merge(&other.send);
        self.wait.merge(&other.wait);
        self.receive.merge(&other.receive);
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
        self.bodies_decoded += other.bodies_decoded;
        self.bytes_decoded += other.bytes_decoded;
    }
}

/// A group's statistics: how long each pass through the group took, OK when no request in it
/// failed. A retry block (`try_max`, `eventually`) is a group with attempts.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupRecorder {
    pub ok: Histogram<u64>,
    pub ko: Histogram<u64>,
    /// Attempts of each pass through a retry block; empty for plain groups.
    pub attempts: Histogram<u64>,
}

impl Default for GroupRecorder {
    fn default() -> Self {
        GroupRecorder { ok: new_histogram(), ko: new_histogram(), attempts: new_histogram() }
    }
}

impl GroupRecorder {
    /// Every pass's duration, OK and KO together.
    pub fn durations(&self) -> Histogram<u64> {
        let mut all = self.ok.clone();
        all.add(&self.ko).expect("auto-resizing histograms always merge");
        all
    }

    pub fn record(&mut self, duration_us: u64, ok: bool) {
        let histogram = if ok { &mut self.ok } else { &mut self.ko };
        record_value(histogram, duration_us);
    }

    /// A pass through a retry block: its duration, outcome and attempts.
    pub fn record_attempts(&mut self, duration_us: u64, ok: bool, attempts: u64) {
        self.record(duration_us, ok);
        record_value(&mut self.attempts, attempts);
    }

    pub fn merge(&mut self, other: &GroupRecorder) {
        self.ok.add(&other.ok).expect("auto-resizing histograms always merge");
        self.ko.add(&other.ko).expect("auto-resizing histograms always merge");
        self.attempts.add(&other.attempts).expect("auto-resizing histograms always merge");
    }
}

/// What an error is counted under: a stable kind, the request (row) it happened on, and a
/// small detail (the status code for status checks, the check's index otherwise). Never a
/// formatted message, so the number of distinct keys stays bounded.
///
/// The kind is borrowed where it is counted (the engine's kinds are string constants, so
/// counting an error allocates nothing for it) and owned where it was decoded from another
/// process's snapshot ([`crate::wire`]); both compare and hash by their text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ErrorKey {
    pub kind: Cow<'static, str>,
    pub request: Arc<str>,
    pub detail: u32,
}

/// The count of one error key, with the message of its first occurrence.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ErrorRecord {
    pub message: String,
    pub count: u64,
    /// The snapshot intervals in which it was first and last counted: when it happened, to
    /// an interval, at no cost per error. Set when the collector merges a snapshot
    /// ([`crate::Totals::absorb`]); 0 in a worker's own records.
    pub first_interval: u64,
    pub last_interval: u64,
}

/// What happened to keep-alive connections beyond opening them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ConnectionEvents {
    /// Connections opened (successful connects), whether or not a request on them completed.
    pub opened: u64,
    /// Connections found closed by the server while idle, before a request was written.
    pub closed_while_idle: u64,
    /// Requests sent again on a fresh connection after the reused one failed before any
    /// byte of a response.
    pub retried: u64,
    /// Of the connections opened, those speaking HTTP/2.
    pub http2: u64,
    /// https connections where HTTP/2 was offered and the server chose HTTP/1.1.
    pub http2_declined: u64,
    /// WebSockets and event streams opened.
    pub websockets: u64,
    pub event_streams: u64,
    /// Messages sent on WebSockets; messages and events received on sockets, whether or not
    /// a step awaited them.
    pub messages_sent: u64,
    pub messages_received: u64,
}

impl ConnectionEvents {
    pub fn add(&mut self, other: &ConnectionEvents) {
        self.opened += other.opened;
        self.closed_while_idle += other.closed_while_idle;
        self.retried += other.retried;
        self.http2 += other.http2;
        self.http2_declined += other.http2_declined;
        self.websockets += other.websockets;
        self.event_streams += other.event_streams;
        self.messages_sent += other.messages_sent;
        self.messages_received += other.messages_received;
    }
}

/// What one worker measured during one interval. Workers build these without sharing
/// anything and hand them to the collector, which merges them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    pub worker: usize,
    /// Per request name (a row of the report).
    pub requests: Vec<(Arc<str>, Recorder)>,
    pub groups: Vec<(Arc<str>, GroupRecorder)>,
    pub errors: HashMap<ErrorKey, ErrorRecord>,
    pub users_started: u64,
    pub users_finished: u64,
    /// Users cut off by the end of the run (max duration, interruption) mid-iteration.
    pub users_interrupted: u64,
    /// Users running at the end of the interval (a level, not a delta).
    pub users_active: u64,
    /// How late arrivals and throttled requests started after their intended time.
    pub start_lag_us: Option<Histogram<u64>>,
    /// Starts later than the plan's threshold.
    pub late_starts: u64,
    /// Closed-model users whose start was held back because those before them in their slot
    /// kept failing fast.
    pub replacements_held_back: u64,
    pub connections: ConnectionEvents,
    /// Virtual users that finished a CouchDB step in this interval, with where their time went.
    pub couchdb_connections: Vec<crate::ConnectionPhases>,
    /// `horde sql` phases that ended in this interval.
    pub sql_phases: Vec<crate::SqlPhaseReport>,
    /// True in the worker's last snapshot.
    pub finished: bool,
    /// Which snapshot interval this covers: interval i is ((i-1)·T, i·T] from the start of
    /// the run; a worker's last snapshot covers the part of an interval it lived through.
    pub interval: u64,
}

impl Snapshot {
    /// Adds another worker's snapshot of the same interval into this one: how a process hands
    /// all its threads' measurements on as one (a share of a distributed run, [`crate::wire`]).
    /// Rows and groups keep the order in which they first appeared, every count adds up, an
    /// error keeps the message of its first occurrence here, active users add up (each is a
    /// level at the interval's end), and the result is finished once both are.
    pub fn merge(&mut self, other: Snapshot) {
        let rows: HashMap<Arc<str>, usize> =
            self.requests.iter().enumerate().map(|(i, (name, _))| (name.clone(), i)).collect();
        for (name, recorder) in other.requests {
            match rows.get(&name) {
                Some(&i) => self.requests[i].1.merge(&recorder),
                None => self.requests.push((name, recorder)),
            }
        }
        for (name, group) in other.groups {
            match self.groups.iter_mut().find(|(n, _)| *n == name) {
                Some((_, mine)) => mine.merge(&group),
                None => self.groups.push((name, group)),
            }
        }
        for (key, record) in other.errors {
            self.errors
                .entry(key)
                .and_modify(|mine| {
                    mine.count += record.count;
                    mine.first_interval = mine.first_interval.min(record.first_interval);
                    mine.last_interval = mine.last_interval.max(record.last_interval);
                })
                .or_insert(record);
        }
        self.users_started += other.users_started;
        self.users_finished += other.users_finished;
        self.users_interrupted += other.users_interrupted;
        self.users_active += other.users_active;
        match (&mut self.start_lag_us, other.start_lag_us) {
            (Some(mine), Some(theirs)) => mine.add(&theirs).expect("auto-resizing histograms always merge"),
            (mine @ None, theirs) => *mine = theirs,
            (Some(_), None) => {}
        }
        self.late_starts += other.late_starts;
        self.replacements_held_back += other.replacements_held_back;
        self.connections.add(&other.connections);
        self.couchdb_connections.extend(other.couchdb_connections);
        self.sql_phases.extend(other.sql_phases);
        self.finished &= other.finished;
        self.interval = self.interval.max(other.interval);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn merging_keeps_every_count(a in proptest::collection::vec((1u64..10_000_000, any::<bool>()), 0..200),
                                     b in proptest::collection::vec((1u64..10_000_000, any::<bool>()), 0..200)) {
            let mut left = Recorder::default();
            let mut right = Recorder::default();
            for (v, ok) in &a { left.record(&RequestTiming { latency_us: *v, uncorrected_us: *v, bytes_sent: 1, ..Default::default() }, *ok); }
            for (v, ok) in &b { right.record(&RequestTiming { latency_us: *v, uncorrected_us: *v, bytes_sent: 1, ..Default::default() }, *ok); }
            let ok_total = left.ok.len() + right.ok.len();
            left.merge(&right);
            prop_assert_eq!(left.count(), (a.len() + b.len()) as u64);
            prop_assert_eq!(left.ok.len(), ok_total);
            prop_assert_eq!(left.bytes_sent, (a.len() + b.len()) as u64);
        }

        /// A recorder keeps few values as they are and many in a histogram, and merges every
        /// mix of them: its latency statistics are exactly those of one histogram that
        /// recorded every value (what every recorder was before), whatever the chunks.
        #[test]
        fn latency_statistics_are_a_histograms_whatever_the_chunks(
            values in proptest::collection::vec((1u64..100_000_000, any::<bool>()), 0..2_000),
            cuts in proptest::collection::vec(0usize..2_000, 0..12),
        ) {
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(values.len())).collect();
            cuts.extend([0, values.len()]);
            cuts.sort_unstable();
            let mut merged = Recorder::default();
            for chunk in cuts.windows(2) {
                let mut part = Recorder::default();
                for (value, ok) in &values[chunk[0]..chunk[1]] {
                    part.record(&RequestTiming { latency_us: *value, uncorrected_us: value / 2 + 1, ..Default::default() }, *ok);
                }
                merged.merge(&part);
            }
            let (mut corrected, mut uncorrected) = (new_histogram(), new_histogram());
            for (value, _) in &values {
                record_value(&mut corrected, *value);
                record_value(&mut uncorrected, value / 2 + 1);
            }
            let percentiles = [0.0, 1.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 100.0];
            let stats = crate::LatencyStats::from_histogram;
            prop_assert_eq!(stats(&merged.corrected(), &percentiles), stats(&corrected, &percentiles));
            prop_assert_eq!(stats(&merged.uncorrected.histogram(), &percentiles), stats(&uncorrected, &percentiles));
            prop_assert_eq!(merged.count(), values.len() as u64);
        }
    }

    #[test]
    fn a_row_hit_a_few_times_holds_no_histogram_and_a_busy_one_lets_it_go_on_reset() {
        let mut recorder = Recorder::default();
        let timing = RequestTiming {
            latency_us: 1_500,
            uncorrected_us: 1_200,
            send_us: 10,
            wait_us: 1_000,
            receive_us: 20,
            ..Default::default()
        };
        for _ in 0..FEW_VALUES {
            recorder.record(&timing, true);
        }
        assert!(recorder.ok.many.is_none() && recorder.wait.many.is_none(), "few values, no histogram");
        recorder.record(&timing, true);
        assert!(recorder.ok.many.is_some() && recorder.ok.few.capacity() == 0, "poured into a histogram");
        assert_eq!((recorder.ok.len(), recorder.ko.len(), recorder.dns.len()), (FEW_VALUES as u64 + 1, 0, 0));
        recorder.reset();
        assert!(recorder.ok.many.is_none() && recorder.is_empty());
    }
}
