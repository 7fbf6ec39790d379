//! A share: a local run of the plan's execution segment whose start comes from its coordinator
//! and whose intervals go to it, merged across the share's threads.

use super::lease::GrantedTakes;
use super::{ClusterError, ShareLink};
use crate::lower::Program;
use crate::process_usage::{peak_memory, process_cpu_time, reset_peak_memory};
use crate::run::{run_program, CollectorTap, Role, RunControl, RunResult};
use crate::run_limits::RunLedger;
use crate::start_line::RunStart;
use horde_metrics::wire::{ShareInterval, ShareLog, ShareMessage, ShareReady, ShareRequests, ShareRowsWanted};
use horde_metrics::{RequestLogOutput, Sink, Snapshot};
use std::collections::BTreeMap;
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

/// Runs the plan's execution segment as a share of a distributed run: it builds its workers,
/// tells `link` it is ready, starts at the instant the coordinator gives, and sends it every
/// interval. `sink` gets the share's own results, as in a local run, without thresholds (the
/// coordinator judges them on every share's data).
pub fn run_share(
    program: Arc<Program>,
    control: &RunControl,
    sink: &mut (dyn Sink + Send),
    request_log: Option<RequestLogOutput>,
    link: Arc<dyn ShareLink>,
) -> Result<RunResult, ClusterError> {
    let segment = program.plan.options.execution_segment.clone().ok_or(ClusterError::NoSegment)?;
    let share = segment.resolve().map_err(|_| ClusterError::NoSegment)?.index;
    let (attempt, resume_after) = match &segment.resume {
        Some(resume) => (resume.attempt, Some(Duration::from_millis(resume.after_ms))),
        None => (0, None),
    };
    // Under row grants (a share that may be replaced), each queue and shuffle feeder, and each
    // run-wide counter the grants name, may take what the plan grants at first, then what the
    // coordinator's beats grant.
    let granted = match (&segment.row_grants, link.lease()) {
        (Some(grants), Some(lease)) => {
            for (feeder, &from) in program.feeders.iter().zip(&grants.from) {
                feeder.limit_takes(from.saturating_add(grants.initial));
            }
            let counters = if grants.counters_from.is_empty() { Vec::new() } else { program.counters.clone() };
            for (counter, &from) in counters.iter().zip(&grants.counters_from) {
                counter.limit_takes(from.saturating_add(grants.initial));
            }
            let granted = GrantedTakes { feeders: program.feeders.clone(), counters };
            lease.attach(granted.clone());
            granted
        }
        _ => GrantedTakes::default(),
    };
    // A run-wide request log is the coordinator's file: the records go to it with the intervals.
    let (request_log, log_records) = match (request_log, segment.request_log) {
        (None, Some(format)) => {
            let (chunks, records) = mpsc::channel();
            (Some(RequestLogOutput { format: format.into(), chunks }), Some(records))
        }
        (request_log, _) => (request_log, None),
    };
    let role = ShareRole {
        link,
        share,
        attempt,
        resume_after,
        segment: segment.segment,
        granted,
        log_records: Mutex::new(log_records),
    };
    // The process (a distributed engine's worker) may have run other shares: its peak memory
    // is measured from here, for this one's.
    reset_peak_memory();
    run_program(program, control, sink, request_log, Role::Share(&role))
}

/// What a share's run needs to know of its place in the distributed run.
pub(crate) struct ShareRole {
    link: Arc<dyn ShareLink>,
    share: usize,
    attempt: u32,
    /// A replacement's takeover, after the run's start.
    resume_after: Option<Duration>,
    segment: String,
    /// The plan's feeders and counters when their takes are granted (else none): their takes
    /// are reported with every interval, for the coordinator's next grants.
    granted: GrantedTakes,
    /// The request log's records, when they go to the coordinator: the relay's to send.
    log_records: Mutex<Option<Receiver<Vec<u8>>>>,
}

impl ShareRole {
    /// Every worker is ready: tells the coordinator, and waits for the start it gives. The
    /// run's clock is the monotonic one from here on; the workers are let go at the start.
    pub fn wait_for_start(&self, threads: usize) -> Result<RunStart, ClusterError> {
        let ready = ShareReady {
            share: self.share,
            attempt: self.attempt,
            segment: self.segment.clone(),
            pid: std::process::id(),
            host: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_string())
                .unwrap_or_default(),
            threads,
        };
        let at = self.link.ready(&ShareMessage::Ready(ready).encode()).map_err(ClusterError::Link)?;
        let (now, wall) = (Instant::now(), SystemTime::now());
        let instant = match at.duration_since(wall) {
            Ok(ahead) => now + ahead,
            // Late (a slow link): the schedule stays absolute, its first arrivals are late.
            Err(behind) => now.checked_sub(behind.duration()).unwrap_or(now),
        };
        // A replacement takes over where it was told to, or now if it is ready only later:
        // its schedule is the run's, and what was due before is skipped rather than sent late.
        let resume_from = self.resume_after.map(|after| (instant + after).max(Instant::now()));
        sleep_until(resume_from.unwrap_or(instant));
        Ok(RunStart { instant, wall: at, resume_from })
    }

    /// The coordinator's lease on this share, when its link has one.
    pub fn lease(&self) -> Option<Arc<super::ShareLease>> {
        self.link.lease()
    }

    /// The collector's tap that relays the share's intervals; `started_late` is how long after
    /// the given start the share let its users go, `resumed_after` when a replacement took
    /// over, after the run's start.
    pub fn relay(&self, ledger: Arc<RunLedger>, started_late: Duration, resumed_after: Option<Duration>) -> ShareRelay {
        ShareRelay {
            link: self.link.clone(),
            share: self.share,
            attempt: self.attempt,
            started_late,
            resumed_after,
            granted: self.granted.clone(),
            log_records: self.log_records.lock().unwrap_or_else(PoisonError::into_inner).take(),
            waits_told: 0,
            ledger,
            pending: BTreeMap::new(),
            last_sent: 0,
            log: ShareLog::default(),
            cpu_at_start: process_cpu_time(),
            send_failed: None,
        }
    }
}

/// The records of the request log one message carries, at most (about a quarter of this once
/// deflated): a busy share's second of records goes in a few messages rather than one large one.
const LOG_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// Sleeps until `instant`, then spins its last moments: a sleep alone wakes up to a few
/// hundred microseconds late on a busy machine, and every share's lateness is start skew.
/// Once a run, so the spin costs nothing that matters.
fn sleep_until(instant: Instant) {
    const SPIN: Duration = Duration::from_millis(2);
    if let Some(wait) = instant.checked_duration_since(Instant::now() + SPIN) {
        std::thread::sleep(wait);
    }
    while Instant::now() < instant {
        std::hint::spin_loop();
    }
}

/// Merges the workers' snapshots of each interval into one, and sends it once every running
/// worker has handed that interval in.
pub(crate) struct ShareRelay {
    link: Arc<dyn ShareLink>,
    share: usize,
    attempt: u32,
    /// Sent with every interval: the coordinator reports it as the share's start skew.
    started_late: Duration,
    /// Sent with every interval of a replacement: when it took over.
    resumed_after: Option<Duration>,
    /// Feeders and counters whose takes are reported with every interval (row grants).
    granted: GrantedTakes,
    /// The request log's records as the workers hand them over, when they go to the
    /// coordinator.
    log_records: Option<Receiver<Vec<u8>>>,
    /// The feeds that had waited for a grant when the coordinator was last told.
    waits_told: u64,
    /// Where a scenario of this share stops the run: the coordinator stops every share.
    ledger: Arc<RunLedger>,
    /// Intervals some workers have handed in, not sent yet.
    pending: BTreeMap<u64, Snapshot>,
    last_sent: u64,
    /// What the intervals sent so far counted: sent with the last one, for the coordinator to
    /// check its merge against.
    log: ShareLog,
    cpu_at_start: Option<Duration>,
    /// Why the coordinator could not be sent an interval: the share stops.
    send_failed: Option<String>,
}

impl ShareRelay {
    fn send(&mut self, mut snapshot: Snapshot, finished: bool) {
        // A worker hands its records over before the snapshot that counts them: sent first,
        // the coordinator's file holds every request of the intervals it merged.
        self.send_log_records();
        snapshot.worker = self.share;
        snapshot.finished = finished;
        self.last_sent = self.last_sent.max(snapshot.interval);
        self.log.intervals += 1;
        self.log.requests += snapshot.requests.iter().map(|(_, recorder)| recorder.count()).sum::<u64>();
        let cpu = process_cpu_time().zip(self.cpu_at_start).map(|(now, then)| now.saturating_sub(then));
        let message = ShareMessage::Interval(Box::new(ShareInterval {
            share: self.share,
            attempt: self.attempt,
            snapshot,
            cpu_ns: cpu.map(|cpu| cpu.as_nanos() as u64),
            stop_reason: self.ledger.stop_reason().map(str::to_string),
            started_late_ns: Some(self.started_late.as_nanos() as u64),
            peak_memory_bytes: peak_memory(),
            fenced: self.ledger.lease_lapsed().map(fenced_reason),
            log: finished.then_some(self.log),
            resumed_after_ms: self.resumed_after.map(|after| after.as_millis() as u64),
            rows_taken: self.rows_taken(),
            row_waits: self.row_waits(),
        }));
        if let Err(problem) = self.link.send(&message.encode()) {
            self.send_failed.get_or_insert(format!("the coordinator could not be sent an interval: {problem}"));
        }
    }
}

impl ShareRelay {
    /// Sends the request log's records handed over so far, in messages of at most
    /// [`LOG_MESSAGE_BYTES`] of records each.
    fn send_log_records(&mut self) {
        let Some(records) = &self.log_records else { return };
        let mut batch: Vec<u8> = Vec::new();
        let mut batches = Vec::new();
        while let Ok(chunk) = records.try_recv() {
            if batch.is_empty() {
                batch = chunk;
            } else {
                batch.extend_from_slice(&chunk);
            }
            if batch.len() >= LOG_MESSAGE_BYTES {
                batches.push(std::mem::take(&mut batch));
            }
        }
        batches.push(batch);
        for records in batches.into_iter().filter(|records| !records.is_empty()) {
            let message = ShareMessage::Requests(ShareRequests { share: self.share, attempt: self.attempt, records });
            if let Err(problem) = self.link.send(&message.encode()) {
                self.send_failed.get_or_insert(format!("the coordinator could not be sent request records: {problem}"));
            }
        }
    }

    fn rows_taken(&self) -> Vec<u64> {
        self.granted.taken()
    }

    fn row_waits(&self) -> u64 {
        self.granted.waits()
    }
}

impl CollectorTap for ShareRelay {
    /// A feed waits for a row grant: the coordinator is told the takes now, not with the next
    /// interval (a share whose first grant lasts a fraction of a second would stall for the
    /// rest of it, and up to a beat more).
    fn poll(&mut self) {
        if self.granted.is_empty() {
            return;
        }
        let waits = self.row_waits();
        if waits == self.waits_told {
            return;
        }
        self.waits_told = waits;
        let wanted = ShareRowsWanted {
            share: self.share,
            attempt: self.attempt,
            rows_taken: self.rows_taken(),
            row_waits: waits,
        };
        if let Err(problem) = self.link.send(&ShareMessage::RowsWanted(wanted).encode()) {
            self.send_failed.get_or_insert(format!("the coordinator could not be sent a message: {problem}"));
        }
    }

    fn snapshot(&mut self, snapshot: &Snapshot) {
        match self.pending.entry(snapshot.interval) {
            std::collections::btree_map::Entry::Vacant(entry) => {
                entry.insert(snapshot.clone());
            }
            std::collections::btree_map::Entry::Occupied(mut entry) => entry.get_mut().merge(snapshot.clone()),
        }
    }

    fn complete(&mut self, complete: Option<u64>) {
        let Some(complete) = complete else {
            // The run's end: everything left, the last one marked finished.
            let mut left = std::mem::take(&mut self.pending);
            let last = left.pop_last().map(|(_, snapshot)| snapshot);
            for (_, snapshot) in left {
                self.send(snapshot, false);
            }
            let last = last.unwrap_or_else(|| Snapshot { interval: self.last_sent + 1, ..Default::default() });
            self.send(last, true);
            return;
        };
        let later = self.pending.split_off(&(complete + 1));
        for (_, snapshot) in std::mem::replace(&mut self.pending, later) {
            self.send(snapshot, false);
        }
    }

    fn stop_requested(&mut self) -> Option<String> {
        if let Some(problem) = &self.send_failed {
            return Some(problem.clone());
        }
        if let Some(silence) = self.ledger.lease_lapsed() {
            return Some(fenced_reason(silence));
        }
        self.link.stop_requested().map(|reason| format!("stopped by the coordinator ({reason})"))
    }
}

/// Why a share whose lease lapsed stopped itself.
fn fenced_reason(silence: Duration) -> String {
    format!(
        "stopped itself: no beat from the coordinator for {:.1} s (its process was stopped or cut off)",
        silence.as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::Stripe;
    use horde_metrics::{Recorder, RequestTiming};

    /// Keeps what a share sends: its intervals, and the request log records sent before each.
    #[derive(Default)]
    struct Recording(Mutex<Vec<ShareInterval>>, Mutex<Vec<(usize, Vec<u8>)>>);

    impl ShareLink for Recording {
        fn ready(&self, _: &[u8]) -> Result<SystemTime, String> {
            Ok(SystemTime::now())
        }
        fn send(&self, message: &[u8]) -> Result<(), String> {
            match ShareMessage::decode(message) {
                Ok(ShareMessage::Interval(interval)) => self.0.lock().unwrap().push(*interval),
                Ok(ShareMessage::Requests(requests)) => {
                    let intervals_before = self.0.lock().unwrap().len();
                    self.1.lock().unwrap().push((intervals_before, requests.records));
                }
                other => panic!("not an interval: {other:?}"),
            }
            Ok(())
        }
        fn stop_requested(&self) -> Option<String> {
            None
        }
    }

    fn snapshot(worker: usize, interval: u64, requests: u64, finished: bool) -> Snapshot {
        let mut recorder = Recorder::default();
        for i in 0..requests {
            recorder.record(&RequestTiming { latency_us: 100 + i, uncorrected_us: 100, ..Default::default() }, true);
        }
        Snapshot { worker, requests: vec![("r".into(), recorder)], interval, finished, ..Default::default() }
    }

    fn relay(link: Arc<Recording>) -> (ShareRelay, Arc<RunLedger>) {
        relay_logging(link, None)
    }

    fn relay_logging(link: Arc<Recording>, records: Option<Receiver<Vec<u8>>>) -> (ShareRelay, Arc<RunLedger>) {
        let role = ShareRole {
            link,
            share: 1,
            attempt: 0,
            resume_after: None,
            segment: "1/2:1".into(),
            granted: GrantedTakes::default(),
            log_records: Mutex::new(records),
        };
        let ledger = RunLedger::new(None, &[], 2, Stripe::whole());
        (role.relay(ledger.clone(), Duration::from_micros(42), None), ledger)
    }

    #[test]
    fn a_share_sends_each_complete_interval_once_merged_across_its_workers() {
        let link = Arc::new(Recording::default());
        let (mut relay, ledger) = relay(link.clone());
        relay.snapshot(&snapshot(0, 1, 3, false));
        relay.snapshot(&snapshot(1, 1, 4, false));
        relay.snapshot(&snapshot(0, 2, 5, false));
        relay.complete(Some(1));
        // Worker 1's interval 2 comes in last, with its end; the run ends.
        relay.snapshot(&snapshot(1, 2, 6, true));
        ledger.request_stop("stop_load_generator".into());
        relay.complete(None);
        let sent = link.0.lock().unwrap();
        let seen: Vec<_> = sent
            .iter()
            .map(|m| {
                (m.share, m.snapshot.worker, m.snapshot.interval, m.snapshot.requests[0].1.count(), m.snapshot.finished)
            })
            .collect();
        assert_eq!(seen, [(1, 1, 1, 7, false), (1, 1, 2, 11, true)]);
        assert_eq!(sent[1].stop_reason.as_deref(), Some("stop_load_generator"));
        assert!(sent
            .iter()
            .all(|m| m.cpu_ns.is_some() && m.started_late_ns == Some(42_000) && m.peak_memory_bytes > Some(0)));
    }

    /// Records handed over before an interval's snapshot go out before that interval, in one
    /// message; an interval without records sends none.
    #[test]
    fn request_log_records_precede_the_interval_that_counts_them() {
        let link = Arc::new(Recording::default());
        let (chunks, records) = mpsc::channel();
        let (mut relay, _) = relay_logging(link.clone(), Some(records));
        chunks.send(b"a\n".to_vec()).unwrap();
        chunks.send(b"b\n".to_vec()).unwrap();
        relay.snapshot(&snapshot(0, 1, 2, false));
        relay.snapshot(&snapshot(1, 1, 0, false));
        relay.complete(Some(1));
        relay.snapshot(&snapshot(0, 2, 0, true));
        relay.snapshot(&snapshot(1, 2, 0, true));
        relay.complete(Some(2));
        chunks.send(b"c\n".to_vec()).unwrap();
        relay.complete(None);
        assert_eq!(link.0.lock().unwrap().len(), 3);
        assert_eq!(*link.1.lock().unwrap(), [(0, b"a\nb\n".to_vec()), (2, b"c\n".to_vec())]);
    }

    #[test]
    fn a_share_with_nothing_left_at_the_end_still_says_it_finished() {
        let link = Arc::new(Recording::default());
        let (mut relay, _) = relay(link.clone());
        relay.snapshot(&snapshot(0, 1, 2, true));
        relay.complete(Some(1));
        relay.complete(None);
        let sent = link.0.lock().unwrap();
        let seen: Vec<_> =
            sent.iter().map(|m| (m.snapshot.interval, m.snapshot.requests.len(), m.snapshot.finished)).collect();
        assert_eq!(seen, [(1, 1, false), (2, 0, true)]);
    }
}
