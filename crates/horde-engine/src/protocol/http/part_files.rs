//! Files that multipart parts name by a template (`${file}` from a feeder: each user uploads
//! its own, as Gatling's `RawFileBodyPart(name, "#{file}")`): read the first time a request of
//! the worker sends one, then kept, so a run reads each file once per worker and the request
//! path does no I/O after that. A file with a fixed name is read when the plan is lowered.

use bytes::Bytes;
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// What a worker keeps of such files, at most: beyond, a file is read for each request that
/// sends it (a run uploading thousands of large files still runs, more slowly).
const KEPT_BYTES: u64 = 512 * 1024 * 1024;

#[derive(Default)]
pub(crate) struct PartFiles {
    kept: RefCell<HashMap<PathBuf, Bytes>>,
    kept_bytes: std::cell::Cell<u64>,
}

impl PartFiles {
    /// The file's bytes, or why it cannot be read.
    pub(crate) fn read(&self, path: &Path) -> Result<Bytes, String> {
        if let Some(bytes) = self.kept.borrow().get(path) {
            return Ok(bytes.clone());
        }
        let bytes = Bytes::from(horde_plan::input::read_bounded(path, horde_plan::input::MAX_INPUT_FILE_BYTES)?);
        let total = self.kept_bytes.get() + bytes.len() as u64;
        if total <= KEPT_BYTES {
            self.kept_bytes.set(total);
            self.kept.borrow_mut().insert(path.to_path_buf(), bytes.clone());
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_once_and_a_missing_one_says_why() {
        let dir = std::env::temp_dir().join(format!("horde-part-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("a.bin");
        std::fs::write(&file, b"first").unwrap();
        let files = PartFiles::default();
        assert_eq!(&files.read(&file).unwrap()[..], b"first");
        std::fs::write(&file, b"changed").unwrap();
        assert_eq!(&files.read(&file).unwrap()[..], b"first", "kept from the first read");
        assert!(files.read(&dir.join("missing.bin")).unwrap_err().contains("No such file"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
