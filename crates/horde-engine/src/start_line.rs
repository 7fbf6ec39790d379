//! The run's start: its clock starts once every worker is ready (its thread running, its
//! runtime built), not when the first thread is asked for. Otherwise the first arrivals of the
//! schedule would be due while the engine is still getting ready, and start late through no
//! fault of the server (issue 23: 3 of 20 users 93 ms late on a first run).

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Instant, SystemTime};

/// When the run started, on the monotonic clock the schedule runs on and as a wall-clock time
/// for the results.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunStart {
    pub instant: Instant,
    pub wall: SystemTime,
}

/// Where the workers line up before the run: the last to arrive starts the clock.
pub(crate) struct StartLine {
    workers: usize,
    state: Mutex<LineState>,
    started: Condvar,
}

struct LineState {
    arrived: usize,
    start: Option<RunStart>,
}

impl StartLine {
    pub fn new(workers: usize) -> Arc<StartLine> {
        Arc::new(StartLine {
            workers,
            state: Mutex::new(LineState { arrived: 0, start: None }),
            started: Condvar::new(),
        })
    }

    /// One more worker is ready; the last one starts the clock.
    fn arrive(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.arrived += 1;
        if state.arrived >= self.workers && state.start.is_none() {
            state.start = Some(RunStart { instant: Instant::now(), wall: SystemTime::now() });
            self.started.notify_all();
        }
    }

    /// Waits for the start (every worker ready).
    pub fn wait(&self) -> RunStart {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let state = self.started.wait_while(state, |s| s.start.is_none()).unwrap_or_else(PoisonError::into_inner);
        state.start.expect("waited for the start")
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

    /// This worker is ready: waits for the others, and returns the run's start.
    pub fn ready(mut self) -> RunStart {
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
        let start = late.ready();
        assert!(start.instant >= before_last + std::time::Duration::from_millis(20));
        assert_eq!(waiting.join().unwrap().instant, start.instant);
        assert_eq!(line.wait().instant, start.instant);
    }
}
