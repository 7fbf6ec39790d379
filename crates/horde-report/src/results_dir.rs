//! The results directory itself: making a new one, and its summary.json written and read back.
//! A leaf: the sink that fills the directory and the pages that render it both use it.

use crate::summary::Summary;
use std::path::{Path, PathBuf};

/// The OS error is part of each message and deliberately not a `source`: error reports that
/// print the chain would say it twice.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("cannot create results directory {path}: {cause}")]
    Create { path: PathBuf, cause: std::io::Error },
    #[error("cannot write {path}: {cause}")]
    Write { path: PathBuf, cause: std::io::Error },
    #[error("cannot read {path}: {cause}")]
    Read { path: PathBuf, cause: String },
    #[error("{path} is not a horde summary: {cause}")]
    Parse { path: PathBuf, cause: serde_json::Error },
}

/// A new, unused directory under `base` named after the plan and the time:
/// `results/journey-20261121-062100`.
pub fn create_results_dir(base: &Path, plan_name: &str) -> Result<PathBuf, ResultsError> {
    let name: String =
        plan_name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let stamp: String = crate::summary::rfc3339(now.as_millis() as u64)
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .take(15)
        .collect::<String>()
        .replace('T', "-");
    for attempt in 0..1000 {
        let suffix = if attempt == 0 { String::new() } else { format!("-{attempt}") };
        let dir = base.join(format!("{name}-{stamp}{suffix}"));
        match std::fs::create_dir_all(base).and_then(|_| std::fs::create_dir(&dir)) {
            Ok(()) => return Ok(dir),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(cause) => return Err(ResultsError::Create { path: dir, cause }),
        }
    }
    Err(ResultsError::Create { path: base.to_path_buf(), cause: std::io::Error::other("no free name") })
}

/// Writes `summary.json` so that a reader never sees a half-written file: to a temporary file
/// first, then renamed over the old one. A failed write leaves no temporary file behind.
pub fn write_summary(dir: &Path, summary: &Summary) -> Result<PathBuf, ResultsError> {
    let path = dir.join("summary.json");
    let temporary = dir.join(".summary.json.tmp");
    let text = serde_json::to_string_pretty(summary).expect("summaries serialize");
    let written = std::fs::write(&temporary, text + "\n").and_then(|_| std::fs::rename(&temporary, &path));
    if let Err(cause) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(ResultsError::Write { path, cause });
    }
    Ok(path)
}

/// Reads a saved summary from a results directory or a summary.json path.
pub fn read_summary(path: &Path) -> Result<Summary, ResultsError> {
    let file = if path.is_dir() { path.join("summary.json") } else { path.to_path_buf() };
    let text = horde_plan::input::read_text_bounded(&file, horde_plan::input::MAX_PLAN_BYTES)
        .map_err(|cause| ResultsError::Read { path: file.clone(), cause })?;
    serde_json::from_str(&text).map_err(|cause| ResultsError::Parse { path: file, cause })
}
