//! The file side of the per-request log (`--request-log FILE.jsonl|.jtl`): a thread that
//! appends the buffers workers hand over, and flushes after each, so that a killed run keeps
//! every record handed over and an interrupted one keeps them all.

use horde_metrics::{RequestLogFormat, RequestLogOutput};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;

pub struct RequestLogWriter {
    path: PathBuf,
    thread: JoinHandle<std::io::Result<u64>>,
}

impl RequestLogWriter {
    /// Creates the file (its format from its extension, checked by the caller), writes the
    /// header, and starts the writer thread; the returned output goes to the run.
    pub fn start(path: &Path, format: RequestLogFormat) -> std::io::Result<(RequestLogWriter, RequestLogOutput)> {
        let mut file = BufWriter::with_capacity(256 * 1024, File::create(path)?);
        if !format.header().is_empty() {
            writeln!(file, "{}", format.header())?;
        }
        file.flush()?;
        let (chunks, received) = mpsc::channel::<Vec<u8>>();
        let thread = std::thread::Builder::new().name("horde-request-log".into()).spawn(move || {
            let mut bytes = 0u64;
            // Ends when every worker has dropped its sender: the run is over.
            for chunk in received {
                file.write_all(&chunk)?;
                file.flush()?;
                bytes += chunk.len() as u64;
            }
            file.flush()?;
            Ok(bytes)
        })?;
        Ok((RequestLogWriter { path: path.to_path_buf(), thread }, RequestLogOutput { format, chunks }))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Waits for the last records (once the run, which holds the senders, has returned).
    pub fn finish(self) -> std::io::Result<u64> {
        self.thread.join().unwrap_or_else(|_| Err(std::io::Error::other("the request log's writer panicked")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_appended_after_the_header() {
        let path = std::env::temp_dir().join(format!("horde-request-log-{}.jtl", std::process::id()));
        let (writer, output) = RequestLogWriter::start(&path, RequestLogFormat::Jtl).unwrap();
        let second = output.clone();
        output.chunks.send(b"a\n".to_vec()).unwrap();
        second.chunks.send(b"b\n".to_vec()).unwrap();
        drop((output, second));
        assert_eq!(writer.finish().unwrap(), 4);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, format!("{}\na\nb\n", horde_metrics::JTL_HEADER));
        std::fs::remove_file(&path).unwrap();
    }
}
