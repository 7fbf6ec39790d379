//! The run's start: its clock starts once every worker is ready (its thread running, its
//! runtime built), not when the first thread is asked for. Otherwise the first arrivals of the
//! schedule would be due while the engine is still getting ready, and start late through no
//! fault of the server (issue 23: 3 of 20 users 93 ms late on a first run).
//!
//! A share of a distributed run (cluster.rs) lines its workers up the same way, but its clock
//! starts at an instant its coordinator gives once every share is ready: its start line is
//! external, and the share's main thread sets the start (or cancels the run).

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Instant, SystemTime};

/// When the run started, on the monotonic clock the schedule runs on and as a wall-clock time
/// for the results.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunStart {
    pub instant: Instant,
    pub wall: SystemTime,
    /// A replacement share's takeover (`execution_segment.resume`): what the schedule had due
    /// before it is skipped, not sent late.
    pub resume_from: Option<Instant>,
}

/// Where the workers line up before the run: the last to arrive starts the clock.
pub(crate) struct StartLine {
    workers: usize,
    /// The start is set from outside ([`StartLine::set_start`]), not by the last arrival.
    external: bool,
    state: Mutex<LineState>,
    /// Notified at every arrival, at the start and at a cancellation.
    changed: Condvar,
}

struct LineState {
    arrived: usize,
    start: Option<RunStart>,
    /// The run will not start: the workers end without sending anything.
    cancelled: bool,
}

impl StartLine {
    pub fn new(workers: usize) -> Arc<StartLine> {
        Self::with_start(workers, false)
    }

    /// A start line whose start is given from outside once every worker has arrived.
    pub fn external(workers: usize) -> Arc<StartLine> {
        Self::with_start(workers, true)
    }

    fn with_start(workers: usize, external: bool) -> Arc<StartLine> {
        Arc::new(StartLine {
            workers,
            external,
            state: Mutex::new(LineState { arrived: 0, start: None, cancelled: false }),
            changed: Condvar::new(),
        })
    }

    /// One more worker is ready; the last one starts the clock, unless the start is external.
    fn arrive(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.arrived += 1;
        if state.arrived >= self.workers && state.start.is_none() && !self.external {
            state.start = Some(RunStart { instant: Instant::now(), wall: SystemTime::now(), resume_from: None });
        }
        self.changed.notify_all();
    }

    /// Waits for the start (every worker ready); None when the run was cancelled instead.
    pub fn wait(&self) -> Option<RunStart> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let state = self
            .changed
            .wait_while(state, |s| s.start.is_none() && !s.cancelled)
            .unwrap_or_else(PoisonError::into_inner);
        state.start
    }

    /// Waits until every worker is ready (external start only).
    pub fn wait_for_every_worker(&self) {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        drop(self.changed.wait_while(state, |s| s.arrived < self.workers).unwrap_or_else(PoisonError::into_inner));
    }

    /// Starts the run at `start` (external start only).
    pub fn set_start(&self, start: RunStart) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.start.get_or_insert(start);
        self.changed.notify_all();
    }

    /// The run will not start: every worker waiting on the line ends without running.
    pub fn cancel(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.cancelled = true;
        self.changed.notify_all();
    }
}

/// A worker's place on the start line. A worker whose thread ends before it is ready (a
/// panic) still counts as arrived when this is dropped, so the others never wait for it.
pub(crate) struct Arrival {
    line: Arc<StartLine>,
    arrived: bool,
}

impl Arrival {
    pub fn new(line: Arc<StartLine>) -> Arrival {
        Arrival { line, arrived: false }
    }

    /// This worker is ready: waits for the others, and returns the run's start (None: the
    /// run was cancelled before it started).
    pub fn ready(mut self) -> Option<RunStart> {
        self.arrived = true;
        self.line.arrive();
        self.line.wait()
    }
}

impl Drop for Arrival {
    fn drop(&mut self) {
        if !self.arrived {
            self.arrived = true;
            self.line.arrive();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_starts_when_the_last_worker_is_ready() {
        let line = StartLine::new(3);
        let first = Arrival::new(line.clone());
        let late = Arrival::new(line.clone());
        let lost = Arrival::new(line.clone());
        let waiting = std::thread::spawn(move || first.ready());
        let before_last = Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(20));
        // A worker lost before it was ready does not hold the others up.
        drop(lost);
        let start = late.ready().unwrap();
        assert!(start.instant >= before_last + std::time::Duration::from_millis(20));
        assert_eq!(waiting.join().unwrap().unwrap().instant, start.instant);
        assert_eq!(line.wait().unwrap().instant, start.instant);
    }

    #[test]
    fn an_external_start_waits_for_every_worker_then_for_the_start_given() {
        let line = StartLine::external(2);
        let workers: Vec<_> =
            (0..2).map(|_| Arrival::new(line.clone())).map(|a| std::thread::spawn(move || a.ready())).collect();
        line.wait_for_every_worker();
        // Every worker has arrived and none has started: the start is the one given.
        let given = RunStart {
            instant: Instant::now() + std::time::Duration::from_secs(3600),
            wall: SystemTime::now(),
            resume_from: None,
        };
        line.set_start(given);
        for worker in workers {
            assert_eq!(worker.join().unwrap().unwrap().instant, given.instant);
        }
    }

    #[test]
    fn a_cancelled_line_lets_its_workers_go_without_a_start() {
        let line = StartLine::external(2);
        let waiting = {
            let arrival = Arrival::new(line.clone());
            std::thread::spawn(move || arrival.ready())
        };
        drop(Arrival::new(line.clone()));
        line.wait_for_every_worker();
        line.cancel();
        assert!(waiting.join().unwrap().is_none());
    }
}
