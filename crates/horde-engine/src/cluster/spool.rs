//! Links over a spool directory: each share appends its messages to `share-<i>.messages`
//! (each a 4-byte little-endian length, then the message), and waits for the coordinator's
//! `start` file (the start instant, in nanoseconds since the Unix epoch); the coordinator
//! writes `stop` (a reason) to stop every share. Files are written whole and renamed into
//! place, or appended one message per write, so a reader never sees half of one.
//!
//! Processes on one machine (or on a file system they share) need nothing else to run
//! together: this is how the tests run shares as separate `horde` processes without Dask.
//! Polling a directory every few milliseconds is not a transport for many machines: Dask is.

use super::{CoordinatorLink, ShareLink};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const START: &str = "start";
const STOP: &str = "stop";
/// How often a waiting end looks at the directory again.
const POLL: Duration = Duration::from_millis(2);

fn messages_file(dir: &Path, share: usize) -> PathBuf {
    dir.join(format!("share-{share}.messages"))
}

/// Writes `text` to `dir/name` whole: a reader sees the file complete or not at all.
fn publish(dir: &Path, name: &str, text: &str) -> std::io::Result<()> {
    let partial = dir.join(format!(".{name}.{}", std::process::id()));
    std::fs::write(&partial, text)?;
    std::fs::rename(&partial, dir.join(name))
}

/// A share's end of a spool directory.
pub struct SpoolShareLink {
    dir: PathBuf,
    messages: Mutex<File>,
    /// How long `ready` waits for the start.
    ready_timeout: Duration,
}

impl SpoolShareLink {
    /// Share `share`'s end of `dir`, which must exist; its messages file is started afresh.
    pub fn create(dir: &Path, share: usize, ready_timeout: Duration) -> std::io::Result<SpoolShareLink> {
        let path = messages_file(dir, share);
        let file = OpenOptions::new().create(true).write(true).truncate(true).open(&path)?;
        Ok(SpoolShareLink { dir: dir.to_path_buf(), messages: Mutex::new(file), ready_timeout })
    }

    fn append(&self, message: &[u8]) -> std::io::Result<()> {
        let length = u32::try_from(message.len()).map_err(std::io::Error::other)?;
        let mut frame = Vec::with_capacity(4 + message.len());
        frame.extend_from_slice(&length.to_le_bytes());
        frame.extend_from_slice(message);
        self.messages.lock().unwrap_or_else(PoisonError::into_inner).write_all(&frame)
    }
}

impl ShareLink for SpoolShareLink {
    fn ready(&self, message: &[u8]) -> Result<SystemTime, String> {
        self.append(message).map_err(|e| format!("{}: {e}", self.dir.display()))?;
        let began = Instant::now();
        loop {
            if let Some(reason) = self.stop_requested() {
                return Err(format!("the coordinator stopped the run before it started: {reason}"));
            }
            match std::fs::read_to_string(self.dir.join(START)) {
                Ok(text) => {
                    let ns: u64 = text.trim().parse().map_err(|_| format!("{}: not a start instant", START))?;
                    return Ok(UNIX_EPOCH + Duration::from_nanos(ns));
                }
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => return Err(format!("{}: {err}", self.dir.join(START).display())),
            }
            if began.elapsed() > self.ready_timeout {
                return Err(format!(
                    "no start from the coordinator within {:.0} s ({} never appeared)",
                    self.ready_timeout.as_secs_f64(),
                    self.dir.join(START).display()
                ));
            }
            std::thread::sleep(POLL);
        }
    }

    fn send(&self, message: &[u8]) -> Result<(), String> {
        self.append(message).map_err(|e| format!("{}: {e}", self.dir.display()))
    }

    fn stop_requested(&self) -> Option<String> {
        std::fs::read_to_string(self.dir.join(STOP)).ok()
    }
}

/// The coordinator's end of a spool directory.
pub struct SpoolCoordinatorLink {
    dir: PathBuf,
    readers: Mutex<Vec<ShareReader>>,
}

/// Where the coordinator has read a share's messages file to.
#[derive(Default)]
struct ShareReader {
    file: Option<File>,
    /// Bytes read and not yet a whole message.
    unread: Vec<u8>,
}

impl ShareReader {
    /// The next whole message of the file, if one was written.
    fn next(&mut self, path: &Path) -> std::io::Result<Option<Vec<u8>>> {
        if self.file.is_none() {
            match File::open(path) {
                Ok(file) => self.file = Some(file),
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(err) => return Err(err),
            }
        }
        if let Some(file) = &mut self.file {
            file.read_to_end(&mut self.unread)?;
        }
        let Some(length) = self.unread.get(..4) else { return Ok(None) };
        let length = u32::from_le_bytes(length.try_into().expect("4 bytes")) as usize;
        if self.unread.len() < 4 + length {
            return Ok(None);
        }
        let message = self.unread[4..4 + length].to_vec();
        self.unread.drain(..4 + length);
        Ok(Some(message))
    }
}

impl SpoolCoordinatorLink {
    /// The coordinator's end of `dir` for `shares` shares. A start or stop left from an earlier
    /// run is removed.
    pub fn create(dir: &Path, shares: usize) -> std::io::Result<SpoolCoordinatorLink> {
        std::fs::create_dir_all(dir)?;
        for stale in [START, STOP] {
            match std::fs::remove_file(dir.join(stale)) {
                Err(err) if err.kind() != std::io::ErrorKind::NotFound => return Err(err),
                _ => {}
            }
        }
        let readers = (0..shares).map(|_| ShareReader::default()).collect();
        Ok(SpoolCoordinatorLink { dir: dir.to_path_buf(), readers: Mutex::new(readers) })
    }
}

impl CoordinatorLink for SpoolCoordinatorLink {
    fn receive(&self, timeout: Duration) -> Result<Option<Vec<u8>>, String> {
        let began = Instant::now();
        let mut readers = self.readers.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            for (share, reader) in readers.iter_mut().enumerate() {
                let path = messages_file(&self.dir, share);
                if let Some(message) = reader.next(&path).map_err(|e| format!("{}: {e}", path.display()))? {
                    return Ok(Some(message));
                }
            }
            if began.elapsed() >= timeout {
                return Ok(None);
            }
            std::thread::sleep(POLL.min(timeout));
        }
    }

    fn start(&self, at: SystemTime) -> Result<(), String> {
        let ns = at.duration_since(UNIX_EPOCH).map_err(|e| e.to_string())?.as_nanos();
        publish(&self.dir, START, &ns.to_string()).map_err(|e| format!("{}: {e}", self.dir.display()))
    }

    fn stop(&self, reason: &str) {
        // A share that cannot read it stops when its coordinator's silence ends the run.
        let _ = publish(&self.dir, STOP, reason);
    }
}
