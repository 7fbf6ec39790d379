//! Reading the files a plan is made from or names (the plan itself, multipart files,
//! document schemas, request bodies): bounded, so that a path to `/dev/zero` or an endless
//! pipe is an error that names it rather than a machine out of memory.

use std::io::Read;
use std::path::Path;

/// The largest plan file (or simulation output) horde reads.
pub const MAX_PLAN_BYTES: u64 = 64 * 1024 * 1024;
/// The largest file a plan names: a multipart part, a schema, a request body.
pub const MAX_INPUT_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// Reads at most `limit` bytes of `path`; a longer file (or stream) is an error that says so.
/// The error message names neither the path nor the purpose: callers add both.
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, String> {
    let file = std::fs::File::open(path).map_err(|err| err.to_string())?;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|err| err.to_string())?;
    if bytes.len() as u64 > limit {
        return Err(format!("larger than {} MiB, the most horde reads", limit / (1024 * 1024)));
    }
    Ok(bytes)
}

/// As [`read_bounded`], for text: a UTF-8 byte order mark is skipped, since editors on some
/// systems write one and JSON parsers refuse it.
pub fn read_text_bounded(path: &Path, limit: u64) -> Result<String, String> {
    let bytes = read_bounded(path, limit)?;
    let text =
        String::from_utf8(bytes).map_err(|err| format!("not UTF-8 text (byte {})", err.utf8_error().valid_up_to()))?;
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_string(),
        None => text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endless_input_is_refused_at_the_limit() {
        let error = read_bounded(Path::new("/dev/zero"), 1024).unwrap_err();
        assert!(error.contains("larger than"), "{error}");
    }

    #[test]
    fn a_byte_order_mark_is_skipped() {
        let path = std::env::temp_dir().join(format!("horde-bom-{}.json", std::process::id()));
        std::fs::write(&path, "\u{feff}{\"a\": 1}").unwrap();
        assert_eq!(read_text_bounded(&path, 100).unwrap(), "{\"a\": 1}");
        std::fs::remove_file(&path).unwrap();
        assert!(read_text_bounded(Path::new("/nonexistent/x"), 10).is_err());
    }
}
