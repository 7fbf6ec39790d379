//! How a results directory's writer tells a reader that there is more to read: the sink
//! announces each interval it has written (and the end), the dashboard waits for the next
//! announcement and renders the report from the files. Nothing is copied: the files are the
//! one record, and a reader that falls behind simply reads the newest state.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// What has been written so far, as the last announcement said.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Written {
    /// Counts announcements; a reader remembers the last one it read.
    pub generation: u64,
    /// The results directory written to last (a sweep moves from level to level).
    pub dir: Option<PathBuf>,
}

/// Shared by the writer (the sink) and its readers; cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct ResultsWatch {
    state: Arc<(Mutex<Written>, Condvar)>,
}

impl ResultsWatch {
    pub fn new() -> ResultsWatch {
        ResultsWatch::default()
    }

    /// Announces that `dir` holds more than before.
    pub fn written(&self, dir: &Path) {
        let (lock, changed) = &*self.state;
        let mut written = lock.lock().expect("results watch lock");
        written.generation += 1;
        if written.dir.as_deref() != Some(dir) {
            written.dir = Some(dir.to_path_buf());
        }
        changed.notify_all();
    }

    /// The latest state once its generation is past `seen`, or whatever it is after `timeout`.
    pub fn wait_past(&self, seen: u64, timeout: Duration) -> Written {
        let (lock, changed) = &*self.state;
        let written = lock.lock().expect("results watch lock");
        let (written, _) = changed
            .wait_timeout_while(written, timeout, |written| written.generation <= seen)
            .expect("results watch lock");
        written.clone()
    }

    /// The latest state, without waiting.
    pub fn current(&self) -> Written {
        self.state.0.lock().expect("results watch lock").clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_wakes_for_each_announcement_and_sees_the_latest_directory() {
        let watch = ResultsWatch::new();
        assert_eq!(watch.wait_past(0, Duration::from_millis(1)).generation, 0);
        let writer = watch.clone();
        let thread = std::thread::spawn(move || {
            writer.written(Path::new("a"));
            writer.written(Path::new("b"));
        });
        thread.join().unwrap();
        let written = watch.wait_past(0, Duration::from_secs(5));
        assert_eq!(written.generation, 2);
        assert_eq!(written.dir.as_deref(), Some(Path::new("b")));
        // Nothing new: the wait ends at its timeout with the same state.
        assert_eq!(watch.wait_past(2, Duration::from_millis(5)), written);
    }
}
