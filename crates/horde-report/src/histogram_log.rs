//! histograms.hlog: HdrHistogram's interval log (V2 compressed histograms, base64), one line
//! per tag per snapshot interval, appended and flushed as intervals complete, so that a killed
//! run keeps what was written. Readers: HdrHistogram's own tools (HistogramLogProcessor,
//! HdrHistogramVisualizer), the hdrhistogram crate's `IntervalLogIterator`, PyPI's `hdrhistogram`.
//!
//! Latencies are in microseconds. Tags (the contract other parts of horde rely on):
//! untagged = all requests, corrected (from the intended start, OK and KO together);
//! `r<i>` = request row i of summary.json's `requests[]`; `g<i>` = group i of `groups[]` (the
//! durations of its passes); `uncorrected` and `uncorrected.r<i>` = from the actual start. Before
//! the first entry of a tag, a comment names it: `#[Tag r0: "home"]` (the name as a JSON string).

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;
use horde_metrics::{CompletedInterval, GroupRecorder, Recorder, Totals};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

pub const HISTOGRAM_LOG: &str = "histograms.hlog";

pub struct HistogramLogWriter {
    file: BufWriter<File>,
    serializer: V2DeflateSerializer,
    /// The headers name the run's start, known from the first intervals' totals.
    headers_written: bool,
    /// Rows and groups (by their index in the totals) whose tag comment was written.
    named_rows: Vec<bool>,
    named_groups: Vec<bool>,
}

impl HistogramLogWriter {
    /// Creates the log (so that a directory that cannot hold it is found before the run); the
    /// headers are written with the first intervals.
    pub fn create(dir: &Path) -> std::io::Result<HistogramLogWriter> {
        let file = BufWriter::new(File::create(dir.join(HISTOGRAM_LOG))?);
        Ok(HistogramLogWriter {
            file,
            serializer: V2DeflateSerializer::new(),
            headers_written: false,
            named_rows: Vec::new(),
            named_groups: Vec::new(),
        })
    }

    /// The run's start, a base time of 0 (the entries' start timestamps are absolute Unix
    /// times), and the legend.
    fn write_headers(&mut self, run_started: std::time::SystemTime) -> std::io::Result<()> {
        IntervalLogWriterBuilder::new()
            .add_comment("[Logged with horde, latency in microseconds; tags: see docs/results.md]")
            .with_start_time(run_started)
            .with_base_time(UNIX_EPOCH)
            .begin_log_with(&mut self.file, &mut self.serializer)?;
        writeln!(
            self.file,
            "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
        )?;
        self.headers_written = true;
        Ok(())
    }

    /// Appends the intervals' histograms and flushes. `totals` gives each row and group its
    /// index (the order of summary.json).
    pub fn write(&mut self, intervals: &[CompletedInterval], totals: &Totals) -> std::io::Result<()> {
        if !self.headers_written {
            // In whole milliseconds, as the entries' timestamps: a StartTime a fraction later
            // than the first entry would make readers that take offsets from it (PyPI's
            // hdrhistogram) skip that entry as before the start.
            let started = UNIX_EPOCH + Duration::from_millis(totals.intervals.run_started_epoch_ms);
            self.write_headers(started)?;
        }
        for interval in intervals {
            let start = Duration::from_millis(interval.epoch_ms);
            let length = Duration::from_millis(interval.duration_ms);
            // Rows and groups with requests in this interval, with their index; named first, as
            // a tag's comment comes before its first entry.
            let rows: Vec<(usize, &Recorder)> = interval
                .rows
                .iter()
                .filter(|(_, recorder)| !recorder.ok.is_empty() || !recorder.ko.is_empty())
                .filter_map(|(name, recorder)| Some((totals.row_position(name)?, name, recorder)))
                .map(|(row, name, recorder)| self.name_tag(Kind::Row, row, name).map(|()| (row, recorder)))
                .collect::<std::io::Result<_>>()?;
            let groups: Vec<(usize, &GroupRecorder)> = interval
                .groups
                .iter()
                .filter(|(_, group)| !group.ok.is_empty() || !group.ko.is_empty())
                .filter_map(|(name, group)| Some((totals.groups.iter().position(|(n, _)| n == name)?, name, group)))
                .map(|(index, name, group)| self.name_tag(Kind::Group, index, name).map(|()| (index, group)))
                .collect::<std::io::Result<_>>()?;
            // Each histogram is made when it is written: a run of thousands of rows never holds
            // them all at once.
            let mut log = IntervalLogWriterBuilder::new().begin_log_with(&mut self.file, &mut self.serializer)?;
            let mut write = |tag: Option<&str>, histogram: &Histogram<u64>| {
                log.write_histogram(histogram, start, length, tag.and_then(Tag::new)).map_err(std::io::Error::other)
            };
            write(None, &interval.all.corrected())?;
            write(Some("uncorrected"), &interval.all.uncorrected.histogram())?;
            for (row, recorder) in rows {
                write(Some(&format!("r{row}")), &recorder.corrected())?;
                write(Some(&format!("uncorrected.r{row}")), &recorder.uncorrected.histogram())?;
            }
            for (index, group) in groups {
                write(Some(&format!("g{index}")), &group.durations())?;
            }
        }
        self.file.flush()
    }

    fn name_tag(&mut self, kind: Kind, index: usize, name: &str) -> std::io::Result<()> {
        let (named, prefix) = match kind {
            Kind::Row => (&mut self.named_rows, "r"),
            Kind::Group => (&mut self.named_groups, "g"),
        };
        if named.len() <= index {
            named.resize(index + 1, false);
        }
        if !named[index] {
            named[index] = true;
            let quoted = serde_json::to_string(name).expect("a string serializes");
            writeln!(self.file, "#[Tag {prefix}{index}: {quoted}]")?;
        }
        Ok(())
    }
}

enum Kind {
    Row,
    Group,
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;
    use horde_metrics::Recorder;
    use horde_metrics::{RequestTiming, Snapshot};

    fn snapshot(interval: u64, rows: &[(&str, u64)]) -> Snapshot {
        let requests = rows
            .iter()
            .map(|(name, count)| {
                let mut recorder = Recorder::default();
                for i in 0..*count {
                    let timing = RequestTiming { latency_us: 1000 + i, uncorrected_us: 900 + i, ..Default::default() };
                    recorder.record(&timing, i % 3 != 0);
                }
                (std::sync::Arc::from(*name), recorder)
            })
            .collect();
        Snapshot { worker: 0, interval, requests, ..Default::default() }
    }

    #[test]
    fn every_interval_and_row_reads_back_with_its_counts() {
        let dir = std::env::temp_dir().join(format!("horde-hlog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let started = UNIX_EPOCH + Duration::from_millis(1_700_000_000_250);
        let mut totals = Totals::new(started, 1);
        let mut log = HistogramLogWriter::create(&dir).unwrap();
        for (interval, rows) in [(1, vec![("home", 5), ("a, \"b\"", 2)]), (2, vec![("a, \"b\"", 4)])] {
            totals.absorb(snapshot(interval, &rows));
            let completed = totals.intervals.take_completed(None, 1000);
            log.write(&completed, &totals).unwrap();
        }
        let text = std::fs::read_to_string(dir.join(HISTOGRAM_LOG)).unwrap();
        assert!(text.contains("#[Tag r1: \"a, \\\"b\\\"\"]\n"), "{text}");
        assert!(text.contains("#[StartTime: 1700000000.250 "), "{text}");
        let mut counts = std::collections::BTreeMap::<String, u64>::new();
        let mut starts = Vec::new();
        let mut deserializer = Deserializer::new();
        for entry in IntervalLogIterator::new(text.as_bytes()) {
            if let LogEntry::Interval(entry) = entry.unwrap() {
                let bytes = base64_decode(entry.encoded_histogram());
                let histogram: Histogram<u64> = deserializer.deserialize(&mut bytes.as_slice()).unwrap();
                let tag = entry.tag().map(|t| t.as_str().to_string()).unwrap_or_default();
                *counts.entry(tag).or_default() += histogram.len();
                starts.push(entry.start_timestamp().as_millis());
            }
        }
        assert_eq!(counts[""], 11);
        assert_eq!(counts["uncorrected"], 11);
        assert_eq!((counts["r0"], counts["r1"], counts["uncorrected.r1"]), (5, 6, 6));
        assert_eq!((starts[0], *starts.last().unwrap()), (1_700_000_000_250, 1_700_000_001_250));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Standard base64 (the log's encoding), decoded here to keep the test free of another
    /// dependency.
    fn base64_decode(text: &str) -> Vec<u8> {
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut bits = 0u32;
        let mut held = 0;
        let mut out = Vec::new();
        for c in text.bytes().filter(|c| *c != b'=') {
            bits = (bits << 6) | alphabet.iter().position(|a| *a == c).unwrap() as u32;
            held += 6;
            if held >= 8 {
                held -= 8;
                out.push((bits >> held) as u8);
            }
        }
        out
    }
}
